"""What memory_search and the functions that take embeddings refuse at the door, the same in SQL and Python: vectors
the exact scan and the half-precision HNSW index would not see alike (MS005 + HINT), numeric arguments out of range
or not finite (MS002 + HINT), and query text made only of blanks (nothing returned, nothing touched)."""

from __future__ import annotations

import math
import re
import unicodedata
from pathlib import Path

import numpy as np
import psycopg
import pytest

from memsql import db
from memsql.client import query_text
from memsql.errors import DimensionMismatch
from memsql.vectors import vector_problem

DIM = 384
REPO = Path(__file__).resolve().parents[1]


def unit(axis=0):
    v = np.zeros(DIM, dtype=np.float32)
    v[axis] = 1.0
    return v


def spread(scale):
    """Every component equal: length sqrt(384) * scale."""
    return np.full(DIM, scale, dtype=np.float32)


BAD_VECTORS = {
    "zero": (np.zeros(DIM, dtype=np.float32), "is the zero vector"),
    "zero as halfvec": (spread(1e-9), "is zero in half precision"),
    "subnormal as halfvec": ((np.random.default_rng(1).normal(size=DIM) * 3e-8).astype(np.float32),
                             "loses its direction"),
    "past halfvec range": (np.concatenate([[1e5], spread(1.0)[1:]]).astype(np.float32), "half-precision range"),
    "383 dimensions": (np.ones(383, dtype=np.float32), "384"),
}


@pytest.mark.parametrize("kind", list(BAD_VECTORS))
def test_bad_vectors_are_refused_with_ms005_on_every_sql_path(conn, kind):
    v, message = BAD_VECTORS[kind]
    mid = conn.execute("SELECT memory_add('a note')").fetchone()[0]
    conn.commit()
    calls = [
        ("SELECT * FROM memory_search('note', ARRAY[%s::vector], touch => false)", (v,)),
        ("SELECT memory_add('another note', %s::vector)", (v,)),
        ("SELECT memory_set_embeddings('default', ARRAY[%s::bigint], ARRAY[%s::vector])", (mid, v)),
        ("SELECT * FROM memory_nearest(ARRAY[%s::vector])", (v,)),
        ("SELECT memsql.query_embedding_store(ARRAY['h'], ARRAY[%s::vector])", (v,)),
        ("UPDATE memsql.memories SET embedding = %s::vector WHERE id = %s", (v, mid)),
    ]
    for stmt, params in calls:
        with pytest.raises(psycopg.Error) as info:
            conn.execute(stmt, params)
        conn.rollback()
        if kind == "383 dimensions" and stmt.startswith("UPDATE"):   # the column's type, vector(384), refuses it
            assert info.value.sqlstate == "22000" and "expected 384 dimensions" in info.value.diag.message_primary
            continue
        assert info.value.sqlstate == "MS005", stmt
        assert message in info.value.diag.message_primary, stmt
        assert info.value.diag.message_hint, stmt
    with pytest.raises(psycopg.Error) as info:   # the bulk path of ingest: COPY
        db.copy_memories(conn, [("default", conn.execute("SELECT document_id FROM memsql.memories").fetchone()[0],
                                 7, "copied", "h", v, "note", None, [], [], "{}", None, "memsql.english", None)])
    conn.rollback()
    if kind == "383 dimensions":
        assert info.value.sqlstate == "22000" and "expected 384 dimensions" in info.value.diag.message_primary
    else:
        assert info.value.sqlstate == "MS005" and message in info.value.diag.message_primary
    if v.shape[0] == DIM:
        assert vector_problem(v) and message.split(" (")[0] in vector_problem(v)


def test_pgvector_itself_refuses_non_finite_components(conn):
    for text in ("[NaN" + ",0" * (DIM - 1) + "]", "[Infinity" + ",0" * (DIM - 1) + "]"):
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT * FROM memory_search('x', ARRAY[%s::vector])", (text,))
        conn.rollback()
        assert "not allowed in vector" in info.value.diag.message_primary


@pytest.mark.parametrize("kind", ["nan", "inf", *BAD_VECTORS])
def test_the_python_client_refuses_the_same_vectors(memory, kind):
    v = {"nan": np.full(DIM, math.nan, dtype=np.float32), "inf": spread(math.inf)}.get(kind)
    v = BAD_VECTORS[kind][0] if v is None else v
    with pytest.raises(DimensionMismatch) as info:
        memory.search("a note", query_embeddings=[unit(), v], touch=False)
    assert info.value.sqlstate == "MS005" and info.value.hint
    assert info.value.message.startswith("query embedding 2 ")


def test_a_unit_vector_passes_and_no_score_is_nan(conn):
    rng = np.random.default_rng(3)
    vs = rng.normal(size=(20, DIM)).astype(np.float32)
    vs /= np.linalg.norm(vs, axis=1, keepdims=True)
    for i, v in enumerate(vs):
        assert vector_problem(v) is None
        conn.execute("SELECT memory_add(%s, %s)", (f"note {i} about kiwis", v))
    conn.execute("SELECT memory_add('a note without a vector about kiwis')")
    conn.commit()
    rows = conn.execute("SELECT score, fusion_score, dense_similarity, lexical_score FROM memory_search("
                        "'kiwis', ARRAY[%s::vector], k => 50, touch => false)", (vs[0],)).fetchall()
    assert len(rows) == 21
    assert all(x is not None and math.isfinite(x) for r in rows for x in (r[0], r[1], r[3]))
    assert sum(r[2] is None for r in rows) == 1   # the memory without an embedding: no cosine, not NaN


@pytest.mark.parametrize("arg, value, fragment", [
    ("dense_weight", "Infinity", "dense_weight must be between 0 and 1000000, got Infinity"),
    ("lexical_weight", "-Infinity", "lexical_weight must be between 0 and 1000000, got -Infinity"),
    ("priority_weight", "NaN", "priority_weight must be between 0 and 1000000, got NaN"),
    ("rrf_k", 2_000_000_000, "rrf_k must be between 0 and 1000000, got 2000000000"),
    ("importance_threshold", 1.5, "importance_threshold must be between 0 and 1, got 1.5"),
    ("importance_threshold", "NaN", "importance_threshold must be between 0 and 1, got NaN"),
    ("time_weight", -0.1, "time_weight must be between 0 and 1, got -0.1"),
    ("freq_weight", "Infinity", "freq_weight must be between 0 and 1000, got Infinity"),
    ("freq_cap", 0.5, "freq_cap must be between 1 and 1000000, got 0.5"),
    ("dense_min_similarity", 2, "dense_min_similarity must be between -1 and 1, got 2"),
    ("priority_min_similarity", "NaN", "priority_min_similarity must be between -1 and 1, got NaN"),
    ("priority_limit", -1, "priority_limit must be between 0 and 1000, got -1"),
    ("bm25_k1", "Infinity", "bm25_k1 must be between 0 and 1000, got Infinity"),
    ("bm25_b", -0.5, "bm25_b must be between 0 and 1, got -0.5"),
    ("mmr_lambda", "NaN", "mmr_lambda must be between 0 and 1, got NaN"),
    ("ef_search", 0, "ef_search must be between 1 and 1000, got 0"),
    ("candidates", 5000, "candidates must be between 1 and 1000, got 5000"),
    ("k", None, "k must be between 1 and 1000, got NULL"),
])
def test_numeric_arguments_are_range_checked(conn, arg, value, fragment):
    typed = "double precision" if isinstance(value, (str, float)) else "integer"
    with pytest.raises(psycopg.Error) as info:
        conn.execute(f"SELECT * FROM memory_search('x', '{{}}', {arg} => %s::{typed})", (value,))
    conn.rollback()
    assert info.value.sqlstate == "MS002"
    assert info.value.diag.message_primary == f"memory_search: {fragment}"
    assert info.value.diag.message_hint


@pytest.mark.parametrize("stmt, value, message", [
    ("SELECT memory_add('x', importance => %s::real)", "Infinity",
     "memory_add: importance must be between 0 and 1, got Infinity"),
    ("SELECT memory_add('x', importance => %s::real)", 1.5, "memory_add: importance must be between 0 and 1, got 1.5"),
    ("SELECT memory_tag(memory_id => memory_add('x'), importance => %s)", "NaN",
     "memory_tag: importance must be between 0 and 1, got NaN"),
    ("SELECT * FROM memory_forget(freq_weight => %s)", "Infinity",
     "memory_forget: freq_weight must be between 0 and 1000, got Infinity"),
    ("SELECT * FROM memory_forget(score_threshold => %s)", -0.5,
     "memory_forget: score_threshold must be between 0 and 1, got -0.5"),
    ("SELECT * FROM memsql.mmr_select('{1}', '{1}', '{NULL}', 1, mmr_lambda => %s)", "-Infinity",
     "mmr_select: mmr_lambda must be between 0 and 1, got -Infinity"),
    ("SELECT memsql.knowledge_type_set('t', %s)", 0,
     "knowledge_type_set: half_life_days must be a finite number >= 0.001, got 0"),
    ("SELECT memsql.knowledge_type_set('t', %s)", -1,
     "knowledge_type_set: half_life_days must be a finite number >= 0.001, got -1"),
    ("SELECT memsql.knowledge_type_set('t', %s)", "Infinity",
     "knowledge_type_set: half_life_days must be a finite number >= 0.001, got Infinity"),
    ("SELECT * FROM find_by_tag('{a}', k => %s)", 0, "find_by_tag: k must be between 1 and 10000, got 0"),
    ("SELECT * FROM memsql.memory_nearest('{}', k => %s)", 101, "memory_nearest: k must be between 1 and 100, got 101"),
    ("SELECT * FROM memory_duplicates(similarity => %s)", "NaN",
     "memory_duplicates: similarity must be between 0.01 and 1, got NaN"),
    ("SELECT * FROM memory_duplicates(similarity => %s)", 0, "memory_duplicates: similarity must be between 0.01 and 1, got 0"),
    ("SELECT * FROM memory_duplicates(max_pairs => %s)", 0, "memory_duplicates: max_pairs must be between 1 and 100000, got 0"),
    ("SELECT * FROM memory_neighbors(1, after => %s)", -1, "memory_neighbors: after must be between 0 and 1000, got -1"),
    ("SELECT * FROM memory_get('{1}', max_chars => %s)", 99, "memory_get: max_chars must be between 100 and 100000, got 99"),
    ("SELECT memory_context('x', budget => %s)", 10, "memory_context: budget must be between 400 and 10000, got 10"),
    ("SELECT memsql.query_embedding('x', timeout_ms => %s)", -1,
     "query_embedding: timeout_ms must be between 0 and 60000, got -1"),
    ("SELECT * FROM memsql.memory_pending_embeddings(max_rows => %s)", 0,
     "memory_pending_embeddings: max_rows must be between 1 and 100000, got 0"),
    ("SELECT * FROM memsql.query_embedding_requests(max_rows => %s)", 10001,
     "query_embedding_requests: max_rows must be between 1 and 10000, got 10001"),
    ("SELECT * FROM memsql.namespace_topics(max_topics => %s)", -1,
     "namespace_topics: max_topics must be between 0 and 10000, got -1"),
])
def test_numeric_arguments_of_the_other_functions_are_range_checked(conn, stmt, value, message):
    with pytest.raises(psycopg.Error) as info:
        conn.execute(stmt.replace("%s)", "%s::double precision)") if isinstance(value, str) and "::real" not in stmt
                     else stmt, (value,))
    conn.rollback()
    assert info.value.sqlstate == "MS002" and info.value.diag.message_primary == message
    assert info.value.diag.message_hint


BLANKS = "\u200b\u00a0\u3000\ufeff\u2028\u2029\u200e\u202f\u2060\t\n\x0b\u180e\u00ad"


def test_a_blank_query_returns_nothing_and_touches_nothing(conn, memory):
    conn.execute("SELECT memory_add('kiwi'), memory_add('lime')")
    conn.commit()
    assert conn.execute("SELECT count(*) FROM memory_search(%s, touch => true)", (BLANKS,)).fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM memory_search(%s, '{}', touch => true)", (BLANKS,)).fetchone() == (0,)
    assert memory.search(BLANKS, touch=True) == []
    assert conn.execute("SELECT count(*) FROM memsql.memory_access").fetchone() == (0,)
    # a blank inside a word separates it, in SQL as in Python
    conn.execute("SELECT memory_add('kiwi lime tart')")
    conn.commit()
    q = "kiwi\u200blime"
    assert conn.execute("SELECT memsql.query_text(%s)", (q,)).fetchone()[0] == query_text(q) == "kiwi lime"


def test_text_blank_in_unicode_is_no_memory_and_other_calls_that_cannot_rank_are_refused(conn, memory):
    for stmt in ("SELECT memory_add(%s, namespace => 'door')",):
        err = _error(conn, stmt, (BLANKS,))
        assert (err.sqlstate, err.diag.message_primary) == ("MS002", "memory_add: content is empty")
    mid = conn.execute("SELECT memory_add('The shed key hangs by the back door.', namespace => 'door')").fetchone()[0]
    conn.commit()
    err = _error(conn, "SELECT memory_update(%s, %s, namespace => 'door')", (mid, "\u00a0\u200b"))
    assert (err.sqlstate, err.diag.message_primary) == ("MS002", "memory_update: content is empty")
    with pytest.raises(Exception, match="content is empty"):
        memory.add("\xa0\u3000", namespace="door")
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = 'door'").fetchone() == (1,)

    err = _error(conn, "SELECT * FROM memory_search('shed key', %s::vector[], namespace => 'door', "
                       "dense_weight => 0, lexical_weight => 0)", ([unit()],))
    assert err.sqlstate == "MS002" and "both 0" in err.diag.message_primary, err.diag.message_primary
    err = _error(conn, "SELECT * FROM memory_search('shed key', namespace => '')")
    assert (err.sqlstate, err.diag.message_primary) == ("MS002", "memory_search: namespace is empty")
    vec = "[" + ",".join(map(str, unit())) + "]"
    for extra in ("", ", tags => '{x}'"):   # a 2-D array: query_embeddings[1] was NULL, a filtered search empty
        err = _error(conn, f"SELECT * FROM memory_search('shed key', ARRAY[ARRAY[%s::vector]], "
                           f"namespace => 'door'{extra})", (vec,))
        assert err.sqlstate == "MS005" and "2-dimensional array" in err.diag.message_primary, err.diag.message_primary


def _error(conn, stmt, params=None):
    with pytest.raises(psycopg.Error) as err:
        conn.execute(stmt, params)
    conn.rollback()
    return err.value


def test_sql_and_python_blank_the_same_code_points(conn):
    """Every assigned code point (Python's Unicode database), each after a separator so that none composes with its
    neighbour: memsql.query_text in SQL and memsql.client.query_text give the same text."""
    cps = [c for c in range(1, 0x110000)
           if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) != "Cn"]
    text = "".join("|" + chr(c) for c in cps)
    assert conn.execute("SELECT memsql.query_text(%s)", (text,)).fetchone()[0] == query_text(text)
    blanked = {c for c in cps if query_text(chr(c)) == " "}
    assert {0x200B, 0x00A0, 0x3000, 0xFEFF, 0x2028, 0x180E, 0x00AD, 0xE0001} <= blanked
    assert len(blanked) > 200


def test_the_priority_index_and_the_function_that_defines_it_agree(conn):
    """memories_priority is defined by memsql.is_priority (V0012, rebuilt by V0032); sql/functions repeats the body of
    the latest migration that rebuilt the index, and must not change without another."""
    def body(text):
        m = re.search(r"CREATE OR REPLACE FUNCTION memsql\.is_priority\(.*?;\n", text, re.S)
        return m.group(0)
    assert body((REPO / "sql/migrations/V0032__importance_as_stored.sql").read_text()) == \
        body((REPO / "sql/functions/10_util.sql").read_text())
    assert "is_priority(knowledge_type, importance)" in conn.execute(
        "SELECT pg_get_indexdef('memsql.memories_priority'::regclass)").fetchone()[0]
    conn.execute("SELECT memory_add('a principle', knowledge_type => 'principle')")
    conn.execute("SELECT memory_add('note ' || i) FROM generate_series(1, 1000) AS i")   # the index is selective
    conn.execute("ANALYZE memsql.memories")
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN SELECT * FROM memsql.search_priority(ROW('default', NULL, NULL, NULL, 0.3, false, NULL)"
        "::memsql.search_filter, '{}', 50, 0.35)"))
    conn.rollback()
    assert "memories_priority" in plan


def test_a_blank_query_is_blank_on_the_cli_and_over_mcp(dsn, conn):
    """The same query of Unicode blanks through `memsql search` and the MCP tool: no rows, no access recorded."""
    import json

    from test_cli import run
    from test_mcp import run_session

    conn.execute("SELECT memory_add('kiwi'), memory_add('lime')")
    conn.commit()
    out = run(["search", BLANKS, "--json", "--touch"], dsn)   # touching: an access would be recorded
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert (answer["results"] if isinstance(answer, dict) else answer) == []

    async def script(session):
        result = await session.call_tool("memory_search", {"query": BLANKS, "k": 5})   # MCP never touches
        assert not result.is_error, result.content
        return json.loads(result.content[0].text)

    answer = run_session(dsn, script)
    assert answer == {"results": [], "note": "the query is empty: pass the words to search for"}
    assert conn.execute("SELECT count(*) FROM memsql.memory_access").fetchone() == (0,)
