"""The scratch database every benchmark starts from: dropped, created again and migrated on a running server."""

from __future__ import annotations

import psycopg
from psycopg import sql

from memsql import db


def fresh_database(server: str, name: str) -> str:
    """Drop database ``name`` on ``server`` (a libpq URI/DSN of any database there, e.g. from
    memsql.server.embedded_start), create it again empty, migrate it (memsql.db.migrate) and return its DSN."""
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = psycopg.conninfo.make_conninfo(server, dbname=name)
    db.migrate(dsn)
    return dsn


def settle(conn: psycopg.Connection) -> None:
    """VACUUM (ANALYZE) memsql's tables before timed searches: the steady state autovacuum reaches a minute after a
    bulk write (visibility map set, so index-only scans of the postings skip the heap; hint bits written; statistics
    fresh), and no autovacuum worker shares the cores with the timed searches. ``conn``'s autocommit is restored."""
    conn.commit()
    autocommit = conn.autocommit
    conn.autocommit = True
    try:
        for table in ("memories", "postings", "documents", "term_stats", "namespace_stats", "memory_access"):
            conn.execute(sql.SQL("VACUUM (ANALYZE) memsql.{}").format(sql.Identifier(table)))
    finally:
        conn.autocommit = autocommit


def prewarm(conn: psycopg.Connection) -> dict:
    """Load what memory_search reads into shared buffers (contrib pg_prewarm), as a server that has been answering
    searches for a while holds it: memsql's tables and their B-tree and HNSW indexes, but neither the postings heap
    (memory_search reads only its index) nor the GIN index of tsv (ad-hoc @@ queries only). Returns
    {"shared_buffers": the setting, "prewarmed_mb": MB loaded, or None when pg_prewarm is not installed}."""
    shown = conn.execute("SHOW shared_buffers").fetchone()[0]
    if not conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_prewarm'").fetchone():
        return {"shared_buffers": shown, "prewarmed_mb": None}
    conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    blocks = conn.execute(
        "SELECT sum(pg_prewarm(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "LEFT JOIN pg_am a ON a.oid = c.relam "
        "WHERE n.nspname = 'memsql' AND c.relkind IN ('r', 'i') AND c.relname <> 'postings' "
        "AND coalesce(a.amname, '') <> 'gin'").fetchone()[0]
    conn.commit()
    return {"shared_buffers": shown, "prewarmed_mb": round(int(blocks or 0) * 8192 / 2**20)}
