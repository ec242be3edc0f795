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
