"""Guaranteed candidates: a principle that matches the query reaches the top 10 even when hundreds of similar
news notes outrank it in both arms."""

from __future__ import annotations

import numpy as np
import pytest

DIM = 384


def vec(rng, closeness):
    """A unit vector whose cosine with axis 0 is about `closeness`."""
    noise = rng.normal(size=DIM).astype(np.float32)
    noise[0] = 0
    noise /= np.linalg.norm(noise)
    v = closeness * np.eye(DIM, dtype=np.float32)[0] + np.sqrt(1 - closeness**2) * noise
    return v / np.linalg.norm(v)


@pytest.fixture
def buried(conn):
    rng = np.random.default_rng(7)
    for i in range(500):
        conn.execute(
            "SELECT memory_add(%s, %s, knowledge_type => 'news', source_date => now() - interval '30 days')",
            (f"Deploy freeze update {i}: the deploy freeze continues this week.", vec(rng, 0.9)))
    principle = conn.execute(
        "SELECT memory_add('Rule: never deploy during a freeze without a rollback plan.', %s, "
        "knowledge_type => 'principle')", (vec(rng, 0.5),)).fetchone()[0]
    conn.commit()
    conn.execute("ANALYZE memsql.memories")
    return conn, principle


def ranks(conn, principle, **kw):
    opts = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(
        "SELECT memory_id, dense_rank, lexical_rank, priority_rank FROM memory_search("
        "'deploy freeze', ARRAY[%(q)s]::vector[], k => 10, touch => false" + opts + ")",
        {"q": np.eye(DIM, dtype=np.float32)[0], **kw}).fetchall()
    return [r[0] for r in rows], next((r for r in rows if r[0] == principle), None)


def test_principle_is_buried_without_the_guarantee(buried):
    conn, principle = buried
    ids, row = ranks(conn, principle, priority_limit=0)
    assert principle not in ids and len(ids) == 10


def test_principle_reaches_the_top_10_with_the_guarantee(buried):
    conn, principle = buried
    ids, row = ranks(conn, principle)
    assert principle in ids
    # it was outside both arms' top 100: no dense rank, an exact lexical rank beyond 100, priority rank 1
    _, dense_rank, lexical_rank, priority_rank = row
    assert dense_rank is None and lexical_rank > 100 and priority_rank == 1


def test_a_principle_that_does_not_match_is_not_forced_in(buried):
    conn, principle = buried
    assert conn.execute("SELECT count(*) FROM memory_search('gardening tomatoes', NULL, touch => false)"
                        ).fetchone()[0] == 0
    rows = conn.execute("SELECT memory_id, priority_rank FROM memory_search('rollback plan', NULL, touch => false)"
                        ).fetchall()
    assert rows[0] == (principle, 1)  # it matches lexically: a priority candidate
