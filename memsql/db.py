"""Database access: which server (DSN), connections, migrations, and the COPY write path of ingest.

The DSN is the argument, else $MEMSQL_DSN, else the embedded server (:mod:`memsql.server`, started on
demand). Any PostgreSQL >= 16 with pgvector >= 0.8 works through MEMSQL_DSN.

This module, :mod:`memsql.maintenance` and the files in sql/ are the only places that hold SQL DDL/DML text.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Iterable, Sequence

import psycopg
from psycopg import sql

from memsql import server
from memsql.errors import DatabaseUnavailable, SetupError, from_psycopg

log = logging.getLogger("memsql")

SQL_DIR = Path(os.environ.get("MEMSQL_SQL_DIR", Path(__file__).resolve().parents[1] / "sql"))


def _newest_migration(folder: Path) -> int:
    found = [int(m.group(1)) for p in folder.glob("V*__*.sql") if (m := re.match(r"V(\d+)__", p.name))]
    return max(found, default=0)


SCHEMA_VERSION: int = _newest_migration(SQL_DIR / "migrations")
"""The schema version this installation's code works with: its newest migration (sql/migrations/V<n>__*.sql), read
once at import, so a process keeps the version of the code it runs even when the files on disk are upgraded."""
MIN_PGVECTOR = (0, 8, 0)
EXTENSIONS = ("vector", "pg_trgm", "unaccent")
_MIGRATE_LOCK = 727_001  # advisory lock key: one migrate at a time per database


def redact(dsn: str) -> str:
    """A DSN with any password replaced by ``***`` (for messages and logs).

    URIs keep their shape (``postgresql://me:***@host/db``); key=value strings are parsed by libpq's rules, so a
    quoted password with spaces or an escaped quote is hidden whole. A string libpq cannot parse is masked from
    the first ``password`` keyword or URI password on.
    """
    out = re.sub(r"(postgres(?:ql)?://[^:/@?]*:)[^@/?]*@", r"\1***@", dsn)
    if "://" not in dsn:
        try:
            info = psycopg.conninfo.conninfo_to_dict(dsn)
        except psycopg.ProgrammingError:
            return re.sub(r"(password\s*=).*$", r"\1***", out, flags=re.S)
        if "password" in info:
            info["password"] = "***"
            return psycopg.conninfo.make_conninfo(**info)
        return dsn
    return re.sub(r"([?&]password=)[^&]*", r"\1***", out)


def without_password(dsn: str) -> str:
    """The DSN with its password removed (key=value form when there was one), for printing a usable DSN."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return redact(dsn)
    if "password" not in info:
        return dsn
    del info["password"]
    return psycopg.conninfo.make_conninfo(**info)


def with_user(dsn: str, user: str) -> str:
    """The DSN connecting as ``user`` instead (password removed), key=value form."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info.pop("password", None)
    info["user"] = user
    return psycopg.conninfo.make_conninfo(**info)


# ---------------------------------------------------------------------------------------------
# Connections


def resolve_dsn(dsn: str | None = None, start: bool = True, home: Path | None = None) -> str:
    """The DSN to use: the argument, else $MEMSQL_DSN, else the embedded server (started if needed).

    Args:
        dsn: explicit libpq DSN or URI.
        start: start the embedded server when it is needed and not running.
        home: embedded server home; default :func:`memsql.server.home_dir`.

    Raises:
        DatabaseUnavailable: embedded server stopped and start=False, or it failed to start.
    """
    dsn = dsn or os.environ.get("MEMSQL_DSN")
    if dsn:
        return dsn
    if start:
        return server.embedded_start(home)
    url = server.embedded_url(home)
    if url is None:
        raise DatabaseUnavailable("the embedded PostgreSQL is not running", "run `memsql db start`")
    return url


server_log = logging.getLogger("memsql.server")
_NOTICE_LEVELS = {"DEBUG": logging.DEBUG, "LOG": logging.INFO, "INFO": logging.INFO, "NOTICE": logging.INFO,
                  "WARNING": logging.WARNING}


def log_notice(diag: psycopg.errors.Diagnostic) -> None:
    """Notice handler: a server NOTICE / WARNING (stop words, lexical-only search, HNSW memory) goes to the
    ``memsql.server`` logger (NOTICE and INFO at INFO, WARNING at WARNING) with its hint, instead of vanishing.
    The CLI prints that logger on stderr."""
    severity = diag.severity_nonlocalized or diag.severity or "NOTICE"
    message = (diag.message_primary or "").strip()
    if diag.message_hint:
        message += f" ({diag.message_hint.strip()})"
    server_log.log(_NOTICE_LEVELS.get(severity, logging.WARNING), "server %s: %s", severity, message)


def configure(conn: psycopg.Connection) -> psycopg.Connection:
    """Prepare a connection: pgvector type registered (numpy arrays <-> vector), TimeZone UTC, so a
    naive datetime or timestamp literal is read as UTC (aware values keep their own zone), and server
    notices and warnings logged (:func:`log_notice`)."""
    from pgvector.psycopg import register_vector

    if log_notice not in conn._notice_handlers:
        conn.add_notice_handler(log_notice)

    try:
        register_vector(conn)
    except psycopg.ProgrammingError as exc:
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
            conn.rollback()
        where = conn.execute("SELECT x.extnamespace::regnamespace::text FROM pg_catalog.pg_extension x "
                             "WHERE x.extname = 'vector'").fetchone()
        if where:
            raise SetupError(f"the vector extension is installed in schema {where[0]}, which is not on this "
                             "connection's search_path", "run `memsql init` (it adds that schema to the database's "
                             "search_path), or add it to the search_path of this role") from exc
        raise SetupError("the vector extension is not installed in this database", "run `memsql init`") from exc
    status = conn.info.transaction_status
    conn.execute("SELECT set_config('TimeZone', 'UTC', false)")
    if status == psycopg.pq.TransactionStatus.IDLE and not conn.autocommit:
        conn.commit()
    return conn


def connect(dsn: str | None = None, autocommit: bool = False) -> psycopg.Connection:
    """Open a configured connection to memsql's database.

    Raises:
        DatabaseUnavailable: the server cannot be reached (message names the redacted DSN).
        SetupError: pgvector is missing (run ``memsql init``).
    """
    target = resolve_dsn(dsn)
    try:
        conn = psycopg.connect(target, autocommit=autocommit)
    except psycopg.OperationalError as exc:
        raise DatabaseUnavailable(
            f"cannot connect to {redact(target)}: {str(exc).strip().splitlines()[0]}",
            "check MEMSQL_DSN, or run `memsql db start` for the embedded server",
        ) from exc
    return configure(conn)


def check_ready(dsn: str) -> None:
    """Fail fast when ``dsn``'s database cannot serve memsql: one connection, configured as a pool's would be
    (:func:`configure`), and the memsql schema looked up. A connection pool opened on such a database would
    otherwise retry in the background and its first caller would wait for the pool's timeout (30 s).

    Raises:
        DatabaseUnavailable: the server cannot be reached.
        SetupError: pgvector or the memsql schema is missing, or the schema is older or newer than this code
            (:func:`check_schema`).
    """
    with connect(dsn, autocommit=True) as conn:
        check_schema(conn)


def database_schema_version(conn: psycopg.Connection) -> int | None:
    """The memsql schema version of ``conn``'s database (max of memsql.schema_version, written by the migrations);
    None when it has no memsql schema yet."""
    if conn.execute("SELECT to_regclass('memsql.schema_version') IS NULL").fetchone()[0]:
        return None
    return conn.execute("SELECT max(version) FROM memsql.schema_version").fetchone()[0]


def check_schema(conn: psycopg.Connection) -> None:
    """Refuse a database whose memsql schema is not the one this code works with (:data:`SCHEMA_VERSION`): none yet,
    an older one (the code was upgraded and ``memsql init`` not run: statements would fail or silently miss what
    the newer code writes), a newer one (an older memsql on an upgraded database), or functions older than the
    code (memsql.functions_version(): an older memsql's init ran after this one's and put its own back). Four
    catalog queries; a connection is checked once, when it is opened. The transaction state of ``conn`` is left as
    it was.

    Raises:
        SetupError: the message names both versions, the hint the command that fixes it.
    """
    status = conn.info.transaction_status
    try:
        have = database_schema_version(conn)
        functions = _functions_version(conn) if have == SCHEMA_VERSION else None
    finally:
        if status == psycopg.pq.TransactionStatus.IDLE and not conn.autocommit:
            conn.rollback()
    name = conn.info.dbname
    if have is None:
        raise SetupError(f"the database {name} has no memsql schema", "run `memsql init`")
    if have < SCHEMA_VERSION:
        raise SetupError(f"the database {name} has memsql schema version {have}; this memsql needs version "
                         f"{SCHEMA_VERSION}", "run `memsql init`: it upgrades the schema in place, keeps every "
                         "memory and restarts a worker started before the upgrade")
    if have > SCHEMA_VERSION:
        raise _newer_schema(name, have)
    if functions is None or functions < SCHEMA_VERSION:   # an older memsql's init ran after this one's
        raise SetupError(f"the functions of database {name} are those of an older memsql (version "
                         f"{functions or 'unknown'}; this memsql's are version {SCHEMA_VERSION}): an older "
                         "memsql's `memsql init` put them back", "run `memsql init` with this memsql")


def _newer_schema(name: str, have: int, done: str = "") -> SetupError:
    return SetupError(f"the database {name} has memsql schema version {have}, newer than this memsql knows "
                      f"({SCHEMA_VERSION}){done}", "use the memsql release that upgraded it, or a newer one: a "
                      "schema is never migrated down")


def _functions_version(conn: psycopg.Connection) -> int | None:
    """memsql.functions_version() of ``conn``'s database: the release whose sql/functions it holds; None when it has
    none (functions written by a release before it had one)."""
    if conn.execute("SELECT to_regprocedure('memsql.functions_version()') IS NULL").fetchone()[0]:
        return None
    return conn.execute("SELECT memsql.functions_version()").fetchone()[0]


# ---------------------------------------------------------------------------------------------
# Migrations


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _ensure_extensions(conn: psycopg.Connection) -> list[str]:
    """Create the extensions memsql needs, each where it belongs; returns the steps to report.

    pgvector first: where it is installed already (a managed service's ``extensions`` schema, or wherever a
    superuser put it), else in the role's default creation schema (``public``). pg_trgm and unaccent go to pgvector's
    schema, not to the default one: a server that keeps its extensions apart keeps memsql's together there (the
    functions' search_path then names one schema for them, and ``public``, where a role's own objects land, gets
    none of them). dblink, optional, goes there too when this role may create it: it is untrusted, so only a
    superuser may, and without it memsql works except that SQL callers of memory_search that pass no query
    embedding get no embedding from the worker (lexical arm only, with a NOTICE); the step says what a superuser
    runs to enable it.

    Raises:
        SetupError: pgvector missing, too old, or not creatable by this role; pg_trgm or unaccent refused.
    """
    row = conn.execute(
        "SELECT default_version, installed_version FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if row is None:
        raise SetupError(
            "pgvector is not available on this PostgreSQL server",
            "install pgvector >= 0.8 on the server (or unset MEMSQL_DSN to use the embedded server)",
        )
    installed = row[1] or row[0]
    if _version_tuple(installed) < MIN_PGVECTOR:
        raise SetupError(
            f"pgvector {installed} is too old: memsql needs >= 0.8 (iterative HNSW scans)",
            "upgrade pgvector, then run ALTER EXTENSION vector UPDATE and `memsql init`",
        )
    dbname = conn.info.dbname
    if row[1] is None:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege as exc:
            raise SetupError(f"this role may not create the vector extension in database {dbname} (pgvector is "
                             "not a trusted extension)",
                             f"a superuser runs, in database {dbname}: CREATE EXTENSION vector (SCHEMA of your "
                             "choice, e.g. CREATE SCHEMA extensions first); then run `memsql init` again") from exc
    home = _extension_schema(conn, "vector")
    if home in ("pg_catalog", "memsql"):   # not a schema to add extensions to: the role's default one then
        home = conn.execute("SELECT current_schema()").fetchone()[0] or "public"
    for ext in EXTENSIONS[1:]:
        if _extension_schema(conn, ext) is not None:   # installed already, wherever it is: used there
            continue
        try:
            conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {} SCHEMA {}").format(sql.Identifier(ext),
                                                                                   sql.Identifier(home)))
        except psycopg.errors.InsufficientPrivilege as exc:
            raise SetupError(f"this role may not create the {ext} extension in database {dbname}",
                             f"run `memsql init` as the database's owner, or a superuser runs, in database "
                             f"{dbname}: CREATE EXTENSION {ext} SCHEMA {_quoted(conn, home)}") from exc
    # dblink lets memsql.query_embedding ask the worker from inside a transaction; without it SQL callers that
    # pass no query embedding get the lexical arm only (NOTICE), everything else works
    without = ("SQL callers of memory_search that pass no query embedding get the lexical arm only (with a "
               "NOTICE); Python, the CLI and MCP embed their queries themselves and are not affected")
    missing = None
    if _extension_schema(conn, "dblink") is None:
        if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'dblink'").fetchone():
            missing = f"dblink: not available on this server (a contrib module): {without}"
        else:
            try:
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS dblink SCHEMA {}").format(sql.Identifier(home)))
            except psycopg.errors.InsufficientPrivilege:
                missing = (f"dblink: not installed, only a superuser may create it: {without}. To enable it, a "
                           f"superuser runs in database {dbname}: CREATE EXTENSION dblink SCHEMA "
                           f"{_quoted(conn, home)}; then `memsql init` again (a role that is not a superuser also "
                           "needs memsql.dblink_connstr: docs/security.md)")
    where = {ext: _extension_schema(conn, ext) for ext in (*EXTENSIONS, "dblink")}
    return ["extensions: " + _placed({e: s for e, s in where.items() if s is not None})] + ([missing] if missing
                                                                                           else [])


def _extension_schema(conn: psycopg.Connection, name: str) -> str | None:
    """The schema an extension is installed in; None when it is not installed in this database."""
    row = conn.execute("SELECT n.nspname FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n "
                       "ON n.oid = x.extnamespace WHERE x.extname = %s", (name,)).fetchone()
    return None if row is None else row[0]


def _placed(where: dict[str, str]) -> str:
    """``vector, pg_trgm in schema extensions; unaccent in schema public``: extensions by schema, in order."""
    schemas: dict[str, list[str]] = {}
    for ext, schema in where.items():
        schemas.setdefault(schema, []).append(ext)
    return "; ".join(f"{', '.join(exts)} in schema {schema}" for schema, exts in schemas.items())


def _quoted(conn: psycopg.Connection, name: str) -> str:
    """An identifier as SQL text, quoted only where it must be (quote_ident)."""
    return conn.execute("SELECT quote_ident(%s)", (name,)).fetchone()[0]


def _run_pgmigrate(dsn: str, search_path: str) -> None:
    """The pgmigrate migrations, each session with the settings of sql/migrations.yml and ``search_path`` (memsql and
    the extensions' schemas: a migration names pgvector's types unqualified)."""
    import argparse

    import pgmigrate
    import yaml

    logging.getLogger("pgmigrate").setLevel(logging.WARNING)
    session = yaml.safe_load((SQL_DIR / "migrations.yml").read_text(encoding="utf-8")).get("session") or []
    args = argparse.Namespace(target="latest", conn=dsn, base_dir=str(SQL_DIR),
                              session=[*session, f"SET search_path = {search_path}"])
    config = pgmigrate.get_config(str(SQL_DIR), args)
    try:
        pgmigrate.migrate(config)
    finally:
        config.conn_instance.close()


def function_files() -> list[Path]:
    """sql/functions/*.sql in apply order (by file name)."""
    return sorted((SQL_DIR / "functions").glob("*.sql"))


def extension_schemas(conn: psycopg.Connection) -> list[str]:
    """Schemas that hold the extensions memsql uses (pgvector's first), pg_catalog and memsql left out: ``public``
    by default, ``extensions`` (or any other) where a server keeps its extensions apart."""
    names = [*EXTENSIONS, "dblink"]
    return [r[0] for r in conn.execute(
        "SELECT n.nspname FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace "
        "WHERE x.extname = ANY (%s) AND n.nspname NOT IN ('pg_catalog', 'memsql') "
        "GROUP BY n.nspname ORDER BY min(array_position(%s, x.extname::text)), n.nspname", (names, names))]


def _path_text(conn: psycopg.Connection, schemas: Sequence[str]) -> str:
    """A search_path value: the schemas in order, each quoted only where it must be (quote_ident)."""
    return conn.execute("SELECT string_agg(quote_ident(s), ', ' ORDER BY i) FROM unnest(%s::text[]) "
                        "WITH ORDINALITY AS u(s, i)", (list(schemas),)).fetchone()[0]


def function_search_path(conn: psycopg.Connection) -> str:
    """The search_path every memsql function pins (``SET search_path FROM CURRENT`` in sql/functions): pg_catalog
    first (nothing shadows a built-in), memsql, then the extensions' schemas (:func:`extension_schemas`)."""
    return _path_text(conn, ["pg_catalog", "memsql", *extension_schemas(conn)])


# A statement that CREATE OR REPLACE may refuse: a function whose result type, parameter names or defaults changed,
# a view whose columns changed. Leading comments allowed.
_REPLACEABLE = re.compile(r"\A\s*(?:--[^\n]*\n\s*)*CREATE\s+OR\s+REPLACE\s+(FUNCTION|VIEW)\s+memsql\.(\w+)",
                          re.IGNORECASE)
_REFUSED = (psycopg.errors.InvalidFunctionDefinition, psycopg.errors.InvalidTableDefinition)


def _routine_versions(conn: psycopg.Connection) -> dict[int, str]:
    """oid -> xmin of every memsql function, procedure and aggregate that no extension owns."""
    return dict(conn.execute(
        "SELECT p.oid::bigint, p.xmin::text FROM pg_catalog.pg_proc p "
        "WHERE p.pronamespace = 'memsql'::regnamespace AND NOT EXISTS ("
        "  SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_proc'::regclass "
        "  AND d.objid = p.oid AND d.deptype = 'e')").fetchall())


def _drop_routines(conn: psycopg.Connection, oids: Iterable[int], why: str) -> list[str]:
    """Drop these routines; one that another of them depends on (a SQL-body wrapper of an old overload) is dropped
    after it. Raises SetupError when something else depends on one."""
    pending, dropped = list(oids), []
    while pending:
        blocked = []
        for oid in pending:
            name, stmt = conn.execute(
                "SELECT p.oid::regprocedure::text, format('DROP ROUTINE memsql.%%I(%%s)', p.proname, "
                "pg_catalog.pg_get_function_identity_arguments(p.oid)) FROM pg_catalog.pg_proc p WHERE p.oid = %s",
                (oid,)).fetchone()
            try:
                with conn.transaction():
                    conn.execute(stmt)
            except psycopg.errors.DependentObjectsStillExist as exc:
                blocked.append((oid, name, exc))
                continue
            dropped.append(name)
        if len(blocked) == len(pending):   # no progress: what depends on them is not being dropped
            _, name, exc = blocked[0]
            raise SetupError(f"memsql.{name} {why}, but other objects depend on it: "
                             f"{(exc.diag.message_detail or '').strip()}",
                             "drop or change those objects, or keep the function in sql/functions") from exc
        pending = [oid for oid, _, _ in blocked]
    return dropped


def _apply_statement(conn: psycopg.Connection, stmt: str, before: dict[int, str]) -> list[str]:
    """One statement of a functions file; a CREATE OR REPLACE that PostgreSQL refuses (see _REPLACEABLE) drops the
    old object first, in the same transaction. Returns the routines dropped."""
    m = _REPLACEABLE.match(stmt)
    if not m:
        conn.execute(stmt)
        return []
    try:
        with conn.transaction():
            conn.execute(stmt)
        return []
    except _REFUSED:
        kind, name = m.group(1).upper(), m.group(2)
    dropped = []
    if kind == "VIEW":
        conn.execute(sql.SQL("DROP VIEW memsql.{}").format(sql.Identifier(name)))
        dropped.append(f"view {name}")
    else:   # the overloads of that name this run has not written yet: the refused one among them
        now = _routine_versions(conn)
        same = {r[0] for r in conn.execute(
            "SELECT p.oid::bigint FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'memsql'::regnamespace "
            "AND p.proname = %s", (name,))}
        dropped += _drop_routines(conn, [o for o in same if o in before and before[o] == now.get(o)],
                                  "changed its result type, parameter names or defaults")
    conn.execute(stmt)
    return dropped


def apply_functions(conn: psycopg.Connection) -> dict[str, list[str]]:
    """Apply every sql/functions file inside the caller's transaction (nothing is committed here).

    The functions are created with ``SET search_path FROM CURRENT`` under :func:`function_search_path`. A file that
    PostgreSQL refuses to CREATE OR REPLACE (a changed result type, parameter names or defaults; a view's changed
    columns) is applied statement by statement, the old object dropped just before its new definition. Then every
    memsql routine that no file defines any more (an old overload after a signature change) is dropped. All of it
    in the caller's transaction: other sessions see the old functions until it commits, then the new ones, never
    a moment without either.

    Returns:
        {"files": applied, "dropped": routines and views dropped}.

    Raises:
        SetupError: a routine to drop has dependent objects (a view, an index, a trigger).
    """
    import sqlparse

    conn.execute(sql.SQL("SET LOCAL search_path = {}").format(sql.SQL(function_search_path(conn))))
    # pgvector's library loaded in this session before any CREATE FUNCTION ... SET hnsw.iterative_scan: until it is,
    # hnsw.* are placeholders PostgreSQL lets only superusers put in a function's SET clause ("permission denied to
    # set parameter"); a vector value read is what loads it (LOAD itself needs a superuser)
    conn.execute("SELECT '[1]'::vector")
    before = _routine_versions(conn)
    files, dropped = [], []
    for path in function_files():
        text = path.read_text(encoding="ascii")
        try:
            with conn.transaction():
                conn.execute(text)
        except _REFUSED:
            for stmt in sqlparse.split(text):
                dropped += _apply_statement(conn, stmt, before)
        files.append(path.name)
    after = _routine_versions(conn)
    stale = [oid for oid, xmin in after.items() if before.get(oid) == xmin]   # written by no file in this run
    dropped += _drop_routines(conn, stale, "is no longer defined in sql/functions")
    return {"files": files, "dropped": dropped}


def _listed(names: list[str], shown: int = 3) -> str:
    """Names for a one-line step: up to ``shown`` of them, then how many more (an upgrade can drop dozens)."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def migrate(dsn: str | None = None, model_name: str = "all-MiniLM-L6-v2", dimension: int = 384) -> list[str]:
    """Create or upgrade memsql's schema; idempotent.

    Creates the extensions (vector, pg_trgm, unaccent, and dblink when the role may: :func:`_ensure_extensions`; an
    extension already installed, such as in a schema ``extensions``, is used there, and the others join pgvector's
    schema), runs the pgmigrate migrations in sql/migrations, applies every sql/functions
    file in one transaction (:func:`apply_functions`), and puts schema memsql and the extensions' schemas on the
    database's search_path. One migrate at a time per database (advisory lock).

    Args:
        dsn: target database; default :func:`resolve_dsn`.
        model_name: the configured embedding model.
        dimension: its vector dimension.

    Returns:
        Steps done, as short human lines.

    Raises:
        SetupError: pgvector missing or < 0.8, the stored model/dimension differs from the configured one, or the
            database's schema is newer than this code (:data:`SCHEMA_VERSION`; checked before anything changes).
    """
    target = resolve_dsn(dsn)
    steps: list[str] = []
    with psycopg.connect(target, autocommit=True) as lock_conn:
        lock_conn.execute("SELECT pg_advisory_lock(%s)", (_MIGRATE_LOCK,))
        try:
            steps += _ensure_extensions(lock_conn)
            ext = extension_schemas(lock_conn)
            before = database_schema_version(lock_conn)
            if before is not None and before > SCHEMA_VERSION:   # an older memsql on an upgraded database
                raise _newer_schema(lock_conn.info.dbname, before, "; nothing was changed")
            _run_pgmigrate(target, _path_text(lock_conn, ["memsql", *ext]))
            version = lock_conn.execute("SELECT max(version) FROM memsql.schema_version").fetchone()[0]
            steps.append(f"migrations: schema version {version}" + (f" (upgraded from {before})"
                                                                     if before is not None and before != version
                                                                     else ""))
            with lock_conn.transaction():
                applied = apply_functions(lock_conn)
            steps.append(f"functions: {len(applied['files'])} files applied"
                         + (f", dropped {_listed(applied['dropped'])}" if applied["dropped"] else ""))
            dbname = lock_conn.info.dbname
            path = _path_text(lock_conn, ["$user", "public", "memsql", *[s for s in ext if s != "public"]])
            lock_conn.execute(sql.SQL("ALTER DATABASE {} SET search_path = {}").format(sql.Identifier(dbname),
                                                                                      sql.SQL(path)))
            steps.append(f"search_path of database {dbname}: {path}")
            stored = dict(lock_conn.execute("SELECT key, value FROM memsql.settings").fetchall())
            if stored.get("embedding_dimension") != str(dimension) or stored.get("embedding_model") != model_name:
                raise SetupError(
                    f"this database holds {stored.get('embedding_model')} vectors "
                    f"({stored.get('embedding_dimension')}-d) but memsql is configured for {model_name} ({dimension}-d)",
                    "use the stored model, or point MEMSQL_DSN / MEMSQL_HOME at a new database",
                )
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc
        finally:
            lock_conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATE_LOCK,))
    return steps


# ---------------------------------------------------------------------------------------------
# Writes that are not a single function call: bulk COPY of memories.

MEMORY_COPY_COLUMNS: tuple[str, ...] = (
    "namespace", "document_id", "chunk_index", "content", "content_hash", "embedding",
    "knowledge_type", "importance", "topics", "tags", "metadata", "source_date", "ts_config", "bm25_len",
)


def copy_memories(conn: psycopg.Connection, rows: Iterable[Sequence],
                  columns: Sequence[str] = MEMORY_COPY_COLUMNS) -> int:
    """Write memory rows with COPY (fast path of ingest), inside the caller's transaction.

    Args:
        conn: open connection (a transaction in progress).
        rows: tuples in the order of ``columns``; embedding a float32 numpy array (384,) or None,
            metadata a JSON string.
        columns: memsql.memories columns; default :data:`MEMORY_COPY_COLUMNS` (a revised document adds the
            pre-allocated ``id`` and ``created_at`` from memsql.document_revise).

    Returns:
        Number of rows written. Term statistics are updated by the statement trigger.

    PostgreSQL refuses COPY FROM into a table whose Row Level Security applies to the session (a role made by
    ``memsql role create``); for such a role the rows go in one multi-row INSERT per call instead, through the
    same policies.
    """
    names = tuple(columns)
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in names)
    if conn.execute("SELECT row_security_active('memsql.memories')").fetchone()[0]:
        rows = list(rows)
        one = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() * len(names)))
        for i in range(0, len(rows), 1000):  # up to 15 parameters a row, libpq allows 65535 a statement
            part = rows[i: i + 1000]
            conn.execute(sql.SQL("INSERT INTO memsql.memories ({}) VALUES {}").format(
                columns, sql.SQL(", ").join([one] * len(part))), [v for row in part for v in row])
        return len(rows)
    stmt = sql.SQL("COPY memsql.memories ({}) FROM STDIN").format(columns)
    n = 0
    with conn.cursor() as cur, cur.copy(stmt) as copy:
        for row in rows:
            copy.write_row(row)
            n += 1
    return n


def document_state(conn: psycopg.Connection, namespace: str, source_key: str
                   ) -> tuple[str, object, int, str | None, str | None, dict, list[str], str] | None:
    """(content hash, source_date, id, source_uri, title, metadata, tags, knowledge_type) of a stored document, or
    None when it is not there (a cheap pre-check before embedding)."""
    row = conn.execute(
        "SELECT content_hash, source_date, id, source_uri, title, metadata, tags, knowledge_type FROM memsql.documents"
        " WHERE namespace = %s AND source_key = %s",
        (namespace, source_key),
    ).fetchone()
    return tuple(row) if row else None


def documents_with_hash(conn: psycopg.Connection, namespace: str, content_hash: str,
                        source_key: str) -> list[tuple[int, str, str | None, str, str | None]]:
    """(id, source_key, source_uri, adapter, title) of the other documents of the namespace with this content hash,
    oldest first (memory_add's notes excepted)."""
    return [tuple(r) for r in conn.execute(
        "SELECT id, source_key, source_uri, adapter, title FROM memsql.documents WHERE namespace = %s"
        " AND content_hash = %s AND source_key <> %s AND adapter <> 'note' ORDER BY id",
        (namespace, content_hash, source_key),
    ).fetchall()]


def document_chunks(conn: psycopg.Connection, namespace: str, source_key: str) -> list[tuple[str, str, str | None]]:
    """(content_hash, content, source text) of a document's current memories, in chunk order (empty when it is not
    stored): a re-ingest keeps these chunks as they are, the autosave filter judges only the others. The source text
    is None, or for a memory revised by hand (memory_update: metadata revision_of) the text the source wrote (that
    version's content, from the archive when memory_forget moved it there): while the source still says that, the
    revision stays."""
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT m.content_hash, m.content, coalesce(o.content, a.content) FROM memsql.memories m"
        " JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id"
        " CROSS JOIN LATERAL (SELECT CASE WHEN jsonb_typeof(m.metadata->'revision_of') = 'number'"
        "                            THEN (m.metadata->>'revision_of')::numeric::bigint END AS id) r"
        " LEFT JOIN memsql.memories o ON o.namespace = m.namespace AND o.document_id = m.document_id AND o.id = r.id"
        " LEFT JOIN memsql.archive a ON o.id IS NULL AND a.namespace = m.namespace AND a.document_id = m.document_id"
        "  AND a.id = r.id"
        " WHERE d.namespace = %s AND d.source_key = %s AND m.valid_to IS NULL ORDER BY m.chunk_index",
        (namespace, source_key),
    ).fetchall()]


def document_sources(conn: psycopg.Connection, namespace: str | None, under: list[str] | None = None
                     ) -> list[tuple[str, int, str, str, int]]:
    """(namespace, document id, source path, adapter, current memories) of the documents read from files
    (``memsql.document_sources``), at or below the paths ``under`` (None: all); committed."""
    rows = conn.execute("SELECT namespace, document_id, source, adapter, memories FROM memsql.document_sources(%s, %s)",
                        (namespace, under)).fetchall()
    conn.commit()
    return [tuple(r) for r in rows]


def document_first_memory(conn: psycopg.Connection, namespace: str, source_key: str) -> int | None:
    """The id of a document's first current memory (lowest chunk_index), or None (no such document, or every chunk
    filtered out)."""
    row = conn.execute(
        "SELECT m.id FROM memsql.memories m JOIN memsql.documents d ON d.namespace = m.namespace"
        " AND d.id = m.document_id WHERE d.namespace = %s AND d.source_key = %s AND m.valid_to IS NULL"
        " ORDER BY m.chunk_index, m.id LIMIT 1", (namespace, source_key)).fetchone()
    conn.commit()
    return row[0] if row else None


def pending_window_ids(conn: psycopg.Connection, namespace: str, document_ids: Sequence[int]) -> list[int]:
    """The memories of these documents still in the window backlog (memsql.memory_windows.embeddings NULL)."""
    try:
        rows = conn.execute(
            "SELECT w.memory_id FROM memsql.memory_windows w JOIN memsql.memories m "
            "ON m.namespace = w.namespace AND m.id = w.memory_id "
            "WHERE w.namespace = %s AND w.embeddings IS NULL AND m.document_id = ANY (%s::bigint[]) ORDER BY 1",
            (namespace, list(document_ids))).fetchall()
        conn.commit()
    except psycopg.Error:
        conn.rollback()
        raise
    return [r[0] for r in rows]


def compute_windows(conn: psycopg.Connection, embedder, namespace: str | None = None, batch: int = 256,
                    batches: int | None = None, memory_ids: Sequence[int] | None = None) -> int:
    """Work off the window backlog (memsql.memory_pending_windows): cut each memory into windows
    (:func:`memsql.embedding.window_texts`), embed them, store them (memsql.memory_set_windows), one committed batch
    at a time. A memory that fits one window gets an empty row and costs no embedding.

    Args:
        conn: an open connection (no transaction in progress; each batch is committed).
        embedder: the :class:`memsql.embedding.Embedder` that embedded the memories.
        namespace: one namespace; None = every namespace.
        batch: memories per batch.
        batches: at most this many batches (None = until the backlog is empty).
        memory_ids: only these memories (None = the whole backlog), fetched ``batch`` ids at a time.

    Returns:
        Memories whose windows were stored.

    Raises:
        psycopg.Error: as the server raised it (the batch rolled back; the callers report it their way).
    """
    from memsql.embedding import embed_windows

    done = runs = 0
    ids = None if memory_ids is None else list(memory_ids)
    while batches is None or runs < batches:
        if ids is not None and runs * batch >= len(ids):
            return done
        part = None if ids is None else ids[runs * batch:(runs + 1) * batch]
        runs += 1
        try:
            rows = conn.execute("SELECT namespace, memory_id, content, title "
                                "FROM memsql.memory_pending_windows(%s, %s, %s)", (namespace, batch, part)).fetchall()
            conn.commit()
        except psycopg.Error:
            conn.rollback()
            raise
        if not rows:
            if ids is None:
                return done
            continue
        counts, vecs = embed_windows(embedder, [(r[2], r[3]) for r in rows])
        starts = [0]
        for c in counts:
            starts.append(starts[-1] + c)
        by_ns: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            by_ns.setdefault(r[0], []).append(i)
        stored = 0
        try:
            for ns, idx in by_ns.items():
                stored += conn.execute(
                    "SELECT memsql.memory_set_windows(%s, %s::bigint[], %s::integer[], %s::vector[])",
                    (ns, [rows[i][1] for i in idx], [counts[i] for i in idx],
                     [v for i in idx for v in vecs[starts[i]:starts[i + 1]]])).fetchone()[0]
            conn.commit()
        except psycopg.Error:
            conn.rollback()
            raise
        done += stored
        if stored == 0 and ids is None:   # every row gone meanwhile: what is still pending comes in the next call
            return done
    return done
