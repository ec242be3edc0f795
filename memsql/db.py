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


def _run_pgmigrate(dsn: str) -> None:
    import argparse

    import pgmigrate

    logging.getLogger("pgmigrate").setLevel(logging.WARNING)
    args = argparse.Namespace(target="latest", conn=dsn, base_dir=str(SQL_DIR))
    config = pgmigrate.get_config(str(SQL_DIR), args)
    try:
        pgmigrate.migrate(config)
    finally:
        config.conn_instance.close()


def function_files() -> list[Path]:
    """sql/functions/*.sql in apply order (by file name)."""
    return sorted((SQL_DIR / "functions").glob("*.sql"))


def migrate(dsn: str | None = None, model_name: str = "all-MiniLM-L6-v2", dimension: int = 384) -> list[str]:
    """Create or upgrade memsql's schema; idempotent.

    Creates the extensions (vector, pg_trgm, unaccent), runs the pgmigrate migrations in
    sql/migrations, applies every sql/functions file (CREATE OR REPLACE), and puts schema memsql
    on the database's search_path. One migrate at a time per database (advisory lock).

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
            _run_pgmigrate(target)
            version = lock_conn.execute("SELECT max(version) FROM memsql.schema_version").fetchone()[0]
            steps.append(f"migrations: schema version {version}")
            with lock_conn.transaction():
                for path in function_files():
                    lock_conn.execute(path.read_text(encoding="ascii"))
            steps.append(f"functions: {len(function_files())} files applied")
            dbname = lock_conn.info.dbname
            lock_conn.execute(
                sql.SQL('ALTER DATABASE {} SET search_path = "$user", public, memsql').format(sql.Identifier(dbname))
            )
            steps.append(f"search_path of database {dbname}: \"$user\", public, memsql")
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
