"""Maintenance after bulk writes: statistics, the BM25 postings index, HNSW index builds.

These run SQL that is not a memsql function (ANALYZE, VACUUM, REINDEX, CREATE INDEX); with :mod:`memsql.db`
and the files in sql/ they are the only places that hold SQL DDL/DML text.
"""

from __future__ import annotations

import logging
import math
import time

import psycopg
from psycopg import sql

log = logging.getLogger("memsql")


def analyze_if_stale(conn: psycopg.Connection, fraction: float = 0.2) -> bool:
    """After a bulk write: ANALYZE memsql.memories (and its window backlog, memsql.memory_windows) and VACUUM
    (ANALYZE) memsql.postings when the rows changed since the last analyze exceed ``fraction`` of the table.

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
        conn.execute("ANALYZE memsql.memories, memsql.memory_windows")
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
