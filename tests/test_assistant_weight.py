"""memory_search's assistant_weight: the fused score of a memory holding an assistant's words (metadata speaker
"assistant", memsql.said_by_assistant) is multiplied by it, under either fusion; 1 ranks it as anyone's."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from test_search_sql import add, unit

DENSE_WEIGHT = 2.75  # memory_search's convex default


def said(conn, metadata) -> bool:
    return conn.execute("SELECT memsql.said_by_assistant(%s)", (Jsonb(metadata) if metadata is not None else None,)
                        ).fetchone()[0]


def test_whose_words_a_memory_holds(conn):
    assert said(conn, {"speaker": "assistant"}) is True
    assert said(conn, {"speaker": "human"}) is False
    assert said(conn, {"speaker": "Caroline"}) is False
    assert said(conn, {}) is False
    assert said(conn, None) is False
    # a chunk packing several messages is the assistant's only when every part is
    assert said(conn, {"speaker": "assistant", "parts": [{"speaker": "assistant"}, {"speaker": "assistant"}]}) is True
    assert said(conn, {"speaker": "assistant", "parts": [{"speaker": "assistant"}, {"speaker": "human"}]}) is False
    assert said(conn, {"speaker": "assistant", "parts": [{"speaker": "assistant"}, {"role": "x"}]}) is False
    assert said(conn, {"speaker": "assistant", "parts": [{"speaker": "assistant"}, {"speaker": 3}]}) is False
    assert said(conn, {"speaker": "assistant", "parts": [{"speaker": "assistant"}, 1]}) is False
    assert said(conn, {"speaker": "assistant", "parts": []}) is True
    assert said(conn, {"speaker": "human", "parts": [{"speaker": "assistant"}]}) is False
    assert said(conn, {"speaker": "assistant", "parts": "not a list"}) is True


@pytest.fixture
def turns(conn):
    """The same words (two texts: a note is stored once), the same embedding, said once by the person and once by
    the assistant."""
    e = unit((0, 1.0))
    person = add(conn, "the ferry to Hvar leaves at nine", e, metadata=Jsonb({"speaker": "human"}))
    assistant = add(conn, "The ferry to Hvar leaves at nine.", e, metadata=Jsonb({"speaker": "assistant"}))
    other = add(conn, "a train to Split", unit((1, 1.0)), metadata=Jsonb({"speaker": "assistant"}))
    return conn, person, assistant, other, e


def rows(conn, e, **kw):
    opts = "".join(f", {k} => %({k})s" for k in kw)
    return conn.execute(
        "SELECT memory_id, score, fusion_score, dense_similarity, lexical_score FROM memory_search("
        "'ferry Hvar', ARRAY[%(e)s]::vector[], memory_rerank => false" + opts + ")", {"e": e, **kw}).fetchall()


def test_convex_fused_score_times_the_weight(turns):
    conn, person, assistant, other, e = turns
    got = {r[0]: r for r in rows(conn, e)}
    # the person's turn: cosine 1, BM25 the pool's best; the assistant's: the same, times 0.8 (the default)
    assert got[person][2] == pytest.approx(DENSE_WEIGHT * 1.0 + 1.0, rel=1e-12)
    assert got[assistant][2] == pytest.approx(0.8 * (DENSE_WEIGHT * 1.0 + 1.0), rel=1e-12)
    assert got[assistant][3] == pytest.approx(1.0) and got[assistant][4] == pytest.approx(got[person][4])
    assert [r[0] for r in rows(conn, e)][:2] == [person, assistant]
    # the other assistant turn: cosine 0 with the query, no lexeme in common
    assert got[other][2] == pytest.approx(0.0, abs=1e-12)
    # 1 = as anyone's: equal scores, the tie broken by memory id
    same = rows(conn, e, assistant_weight=1.0)
    assert same[0][2] == pytest.approx(same[1][2], rel=1e-12)
    assert [r[0] for r in same][:2] == sorted([person, assistant])
    # above 1 the assistant's words come first
    assert [r[0] for r in rows(conn, e, assistant_weight=1.5)][:2] == [assistant, person]


def test_rrf_sum_times_the_weight(turns):
    conn, person, assistant, other, e = turns
    got = {r[0]: r for r in rows(conn, e, fusion="rrf")}
    # person first in both arms (ties by id: the person's memory was added first), assistant second
    assert got[person][2] == pytest.approx(1 / 61 + 1 / 61, rel=1e-12)
    assert got[assistant][2] == pytest.approx(0.8 * (1 / 62 + 1 / 62), rel=1e-12)


@pytest.mark.parametrize("value, shown", [(-0.1, "-0.1"), ("NaN", "NaN"), ("Infinity", "Infinity"), (None, "NULL")])
def test_the_weight_is_checked(conn, value, shown):
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT * FROM memory_search('x', '{}', assistant_weight => %s::double precision)", (value,))
    conn.rollback()
    assert info.value.sqlstate == "MS002"
    assert info.value.diag.message_primary == \
        f"memory_search: assistant_weight must be between 0 and 1000000, got {shown}"
    assert info.value.diag.message_hint


def test_python_takes_the_weight_and_refuses_a_bool(dsn):
    from memsql.client import Memory
    from memsql.errors import InvalidArgument

    with Memory(dsn=dsn, embedder=None) as mem:
        mem.conn.execute("SELECT memsql.memory_add('the ferry to Hvar leaves at nine', metadata => %s)",
                         (Jsonb({"speaker": "assistant"}),))
        mem.conn.commit()
        weighted = mem.search("ferry Hvar", query_embeddings=[])
        plain = mem.search("ferry Hvar", query_embeddings=[], assistant_weight=1)
        assert weighted[0].fusion_score == pytest.approx(0.8 * plain[0].fusion_score, rel=1e-12)
        # True is an int in Python; without the check PostgreSQL would look for memory_search(..., boolean)
        with pytest.raises(InvalidArgument, match="assistant_weight must be a number, got True"):
            mem.search("ferry Hvar", query_embeddings=[], assistant_weight=True)
