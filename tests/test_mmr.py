"""MMR diversity (issue 8): memsql.mmr_select in SQL, exact picks on hand-made vectors."""

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
    with pytest.raises(Exception, match="0 <= mmr_lambda <= 1"):
        mmr(conn, [1.0], [A], 1, 1.5)
