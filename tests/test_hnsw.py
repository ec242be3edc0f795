"""HNSW index rebuilds after a bulk load: parameters applied, memory sized from the row count, bad input refused;
memory_nearest in a small namespace beside a large one."""

from __future__ import annotations

import numpy as np
import pytest

from memsql import maintenance
from memsql.errors import InvalidArgument

DIM = 384


def _vectors(rng, centre, n, spread):
    """n unit vectors scattered around a unit centre."""
    v = centre + spread * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _load(conn, namespace, vectors):
    """One document per memory, written through memory_add (SQL, with the embedding): returns the ids in order."""
    return [conn.execute("SELECT memory_add(%s, %s, %s)", (f"{namespace} memory {i}", v, namespace)).fetchone()[0]
            for i, v in enumerate(vectors)]


def test_a_small_namespace_beside_a_large_one_gets_its_exact_neighbours(conn):
    """memory_nearest (the novelty of the autosave filter) for a chunk on a new topic in a namespace of 40 memories
    beside one of 2,000 that lie around the chunk: the small namespace's exact nearest memories, whatever the walk's
    budget (a namespace of at most 1,000 memories is scanned exactly; the walk visited the large one's rows, up to
    hnsw.max_scan_tuples, and came back with none)."""
    rng = np.random.default_rng(7)
    here, there = np.zeros(DIM, dtype=np.float32), np.zeros(DIM, dtype=np.float32)
    here[0], there[1] = 1.0, 1.0
    _load(conn, "large", _vectors(rng, here, 2000, 0.03))
    small = _load(conn, "small", _vectors(rng, there, 40, 0.05))
    conn.execute("ANALYZE memsql.memories")
    q = _vectors(rng, here, 1, 0.01)[0]
    exact = conn.execute("SELECT id, 1 - (embedding <=> %s) FROM memsql.memories WHERE namespace = 'small' "
                         "ORDER BY embedding <=> %s, id LIMIT 5", (q, q)).fetchall()
    for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
        conn.execute(f"SET LOCAL {setting} = off")
    conn.execute("SET LOCAL hnsw.max_scan_tuples = 200")
    rows = conn.execute("SELECT memory_id, similarity FROM memsql.memory_nearest(ARRAY[%s]::vector[], 'small', 5)",
                        (q,)).fetchall()
    assert len(exact) == 5 and [r[0] for r in rows] == [r[0] for r in exact] and {r[0] for r in rows} <= set(small)
    assert [r[1] for r in rows] == pytest.approx([r[1] for r in exact], abs=1e-12)


def test_build_memory_grows_with_rows_and_m():
    assert maintenance.hnsw_build_memory(0) == 64 * 2**20  # the floor
    small, large = maintenance.hnsw_build_memory(100_000), maintenance.hnsw_build_memory(1_000_000)
    assert 200 * 2**20 < small < 500 * 2**20 and 9 * small < large < 11 * small
    assert maintenance.hnsw_build_memory(100_000, m=32) > small


def test_rebuild_with_parameters_then_search_uses_it(memory, conn):
    ids = [memory.add(text) for text in ("Redis caches the orders API for five minutes.",
                                         "Tomatoes need full sun.", "Blue-green deploys flip the load balancer.")]
    maintenance.drop_hnsw(conn)
    assert conn.execute("SELECT to_regclass('memsql.memories_embedding_hnsw')").fetchone()[0] is None
    out = maintenance.rebuild_hnsw(conn, m=8, ef_construction=32, maintenance_work_mem=128 * 2**20)
    assert (out["rows"], out["m"], out["ef_construction"], out["maintenance_work_mem"]) == (3, 8, 32, "128MB")
    assert out["notices"] == []
    options = conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'memsql.memories_embedding_hnsw'::regclass"
                           ).fetchone()[0]
    assert options == ["m=8", "ef_construction=32"]
    assert conn.execute("SHOW maintenance_work_mem").fetchone()[0] != "128MB"  # reset after the build
    assert memory.search("which cache do the orders use?", k=1, touch=False)[0].memory_id == ids[0]


@pytest.mark.parametrize("m, efc", [(1, 64), (16, 16), (101, 400)])
def test_rebuild_refuses_bad_parameters(conn, m, efc):
    with pytest.raises(InvalidArgument) as info:
        maintenance.rebuild_hnsw(conn, m=m, ef_construction=efc)
    assert "m = 16, ef_construction = 64" in str(info.value)
    assert conn.execute("SELECT to_regclass('memsql.memories_embedding_hnsw')").fetchone()[0] is not None


# --- the BM25 postings index after bulk inserts ---------------------------------------------------------------


def test_compact_postings_rebuilds_after_growth_and_gives_way_to_a_busy_table(memory, conn, dsn):
    import time

    import psycopg

    for i in range(40):
        memory.add(f"note {i}: the deploy freeze starts on friday, cache ttl {i} minutes, owner team-{i % 7}")
    conn.execute("ANALYZE memsql.postings")
    conn.commit()
    assert maintenance.compact_postings(conn) is None  # a small table: below min_postings (20,000)
    out = maintenance.compact_postings(conn, force=True)
    assert out is not None and out["bytes_after"] <= out["bytes_before"]
    assert conn.execute("SELECT value::bigint >= 0 FROM memsql.settings WHERE key = 'postings_compacted_at'"
                        ).fetchone()[0] is True
    conn.commit()
    assert maintenance.compact_postings(conn, min_postings=1, growth=10.0) is None  # grown by less than 10x since
    hits = memory.search("deploy freeze friday", k=3, query_embeddings=[], touch=False)
    assert len(hits) == 3 and all("friday" in h.content for h in hits)  # the lexical arm reads the new index
    # another session inside a transaction that read the postings: the rebuild gives up after 2 s, no error
    with psycopg.connect(dsn) as other:
        other.execute("SELECT count(*) FROM memsql.postings").fetchone()
        t0 = time.monotonic()
        assert maintenance.compact_postings(conn, force=True) is None
        assert time.monotonic() - t0 < 10
    assert maintenance.compact_postings(conn, force=True) is not None
