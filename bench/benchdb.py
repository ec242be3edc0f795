"""The scratch database every benchmark starts from: dropped, created again and migrated on a running server."""

from __future__ import annotations

import psycopg
from psycopg import sql

from memsql import db


def fresh_database(server: str, name: str) -> str:
    """Drop database ``name`` on ``server`` (a libpq URI/DSN of any database there, e.g. from
    memsql.db.embedded_start), create it again empty, migrate it (memsql.db.migrate) and return its DSN."""
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
