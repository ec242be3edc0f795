"""MMR diversity: memsql.mmr_select in SQL, exact picks on hand-made vectors."""

from __future__ import annotations

import math

import numpy as np
import pytest


def unit(*coords):
    v = np.zeros(384, dtype=np.float32)
    for i, c in enumerate(coords):
        v[i] = c
    return v / np.linalg.norm(v)


A = unit(1, 0)
A2 = unit(1, 0.1425)            # cosine with A = 1 / sqrt(1 + 0.1425^2) = 0.99
B = unit(0, 1)
SIM = 1 / math.sqrt(1 + 0.1425 ** 2)


def mmr(conn, relevance, embeddings, k, lam):
    return conn.execute(
        "SELECT memory_id, mmr_rank, mmr_score FROM memsql.mmr_select(%s::bigint[], %s::float8[], %s::vector[], %s, %s)",
        (list(range(1, len(relevance) + 1)), relevance, embeddings, k, lam)).fetchall()


def test_lambda_one_is_relevance_order(conn):
    assert [r[0] for r in mmr(conn, [1.0, 0.9, 0.5], [A, A2, B], 3, 1.0)] == [1, 2, 3]


def test_diversity_pushes_the_near_duplicate_down(conn):
    rows = mmr(conn, [1.0, 0.9, 0.5], [A, A2, B], 3, 0.5)
    assert [(r[0], r[1]) for r in rows] == [(1, 1), (3, 2), (2, 3)]
    # pick 2: B scores 0.5 * 0 - 0.5 * 0 = 0; A2 scores 0.5 * 0.8 - 0.5 * 0.99 < 0
    assert rows[1][2] == pytest.approx(0.0, abs=1e-6)
    assert rows[2][2] == pytest.approx(0.5 * 0.8 - 0.5 * SIM, abs=1e-5)
    # at lambda 0.6 relevance still wins: 0.6 * 0.8 - 0.4 * 0.99 = 0.084 > 0
    assert [r[0] for r in mmr(conn, [1.0, 0.9, 0.5], [A, A2, B], 2, 0.6)] == [1, 2]


def test_edge_cases(conn):
    assert mmr(conn, [], [], 3, 0.6) == []
    assert [r[0] for r in mmr(conn, [0.3, 0.3], [A, None], 5, 0.6)] == [1, 2]  # equal relevance: input order
    with pytest.raises(Exception, match="must have one length"):
        mmr(conn, [1.0], [A, B], 1, 0.6)
    conn.rollback()
    with pytest.raises(Exception, match="mmr_lambda must be between 0 and 1"):
        mmr(conn, [1.0], [A], 1, 1.5)


def add(conn, content, emb, **kw):
    cols = "".join(f", {k} => %({k})s" for k in kw)
    return conn.execute(f"SELECT memsql.memory_add(%(c)s, %(e)s{cols})", {"c": content, "e": emb, **kw}).fetchone()[0]


def search(conn, q, **kw):
    cols = "".join(f", {k} => %({k})s" for k in kw)
    return [r[0] for r in conn.execute(
        f"SELECT memory_id FROM memsql.memory_search('', ARRAY[%(q)s]::vector[], memory_rerank => false, "
        f"touch => false{cols})", {"q": q, **kw}).fetchall()]


def test_memory_search_mmr_picks_the_diverse_memory(conn):
    m1 = add(conn, "first memory", A)
    m2 = add(conn, "near copy of the first", A2)
    m3 = add(conn, "something else", B)
    assert search(conn, A, k=2) == [m1, m2]
    assert search(conn, A, k=2, enable_mmr=True, mmr_lambda=1.0) == [m1, m2]
    # convex score over the pool: cosine min-max normalised -> [1, 0.99, 0]; pick 2 at lambda 0.4:
    # the near copy 0.4 * 0.99 - 0.6 * 0.99 < 0, the other memory 0.4 * 0 - 0.6 * 0 = 0
    assert search(conn, A, k=2, enable_mmr=True, mmr_lambda=0.4) == [m1, m3]
    assert search(conn, A, k=3, enable_mmr=True, mmr_lambda=0.4) == [m1, m3, m2]  # pick order, not score order
    assert search(conn, A, k=3, ef_search=5) == [m1, m2, m3]
    with pytest.raises(Exception, match=r"mmr_lambda must be between 0 and 1, got 2\n"):
        search(conn, A, enable_mmr=True, mmr_lambda=2.0)
    conn.rollback()
    with pytest.raises(Exception, match="ef_search must be between 1 and 1000, got 0"):
        search(conn, A, ef_search=0)
    conn.rollback()


def test_memory_api_passes_mmr_and_topics_from_the_config(dsn, embedder, tmp_path):
    from memsql.client import Memory
    from memsql.config import load

    p = tmp_path / "memsql.toml"
    p.write_text("[memory.vector]\nenable_mmr = true\nmmr_lambda = 0.4\nef_search = 64\n")
    with Memory(dsn=dsn, embedder=embedder, config=load(p, env={})) as m:
        ids = [m._run(m.statement("add", content=c, embedding=e, topics=t))
               for c, e, t in (("first memory", A, ["x"]), ("near copy of the first", A2, ["x"]),
                               ("something else", B, ["y"]))]
        got = m.search("", k=2, query_embeddings=[A], memory_rerank=False, touch=False)
        assert [r.memory_id for r in got] == [ids[0], ids[2]]
        got = m.search("", k=2, query_embeddings=[A], memory_rerank=False, touch=False, enable_mmr=False)
        assert [r.memory_id for r in got] == [ids[0], ids[1]]
        got = m.search("", k=3, query_embeddings=[A], memory_rerank=False, touch=False, topics=["x"])
        assert [r.memory_id for r in got] == [ids[0], ids[1]]
