"""memory_search tested directly in SQL with hand-built vectors: exact RRF arithmetic, arms, ties, isolation."""

from __future__ import annotations

import math

import numpy as np
import psycopg
import pytest

DIM = 384


def unit(*pairs: tuple[int, float]) -> np.ndarray:
    """A 384-d unit vector from (axis, weight) pairs."""
    v = np.zeros(DIM, dtype=np.float32)
    for axis, w in pairs:
        v[axis] = w
    return v / np.linalg.norm(v)


def add(conn, content, vec=None, namespace="default", **kw) -> int:
    cols = ", ".join(f"{k} => %({k})s" for k in kw)
    sql = "SELECT memory_add(%(content)s, %(vec)s, %(ns)s" + (", " + cols if cols else "") + ")"
    mid = conn.execute(sql, {"content": content, "vec": vec, "ns": namespace, **kw}).fetchone()[0]
    conn.commit()
    return mid


def search(conn, query, embs=None, **kw):
    kw.setdefault("fusion", "rrf")  # these tests pin the RRF arithmetic; convex fusion has its own tests
    opts = "".join(f", {k} => %({k})s" for k in kw)
    rows = conn.execute(
        "SELECT memory_id, score, fusion_score, dense_rank, lexical_rank FROM memory_search("
        "%(q)s, %(e)s::vector[]" + opts + ")",
        {"q": query, "e": embs, **kw},
    ).fetchall()
    conn.commit()
    return rows


@pytest.fixture
def hand_built(conn):
    e0, e1 = unit((0, 1.0)), unit((1, 1.0))
    m1 = add(conn, "alpha bravo", e0)
    m2 = add(conn, "alpha", unit((0, 0.8), (1, 0.6)))
    m3 = add(conn, "charlie", e1)
    return conn, (m1, m2, m3), e0


def test_rrf_arithmetic_exact(hand_built):
    conn, (m1, m2, m3), e0 = hand_built
    rows = search(conn, "bravo", [e0], memory_rerank=False, touch=False)
    assert [r[0] for r in rows] == [m1, m2, m3]
    assert [(r[3], r[4]) for r in rows] == [(1, 1), (2, None), (3, None)]
    expected = [2 / 61, 1 / 62, 1 / 63]
    for row, exp in zip(rows, expected):
        assert row[1] == pytest.approx(exp, rel=1e-12)
        assert row[2] == pytest.approx(exp, rel=1e-12)


def test_rrf_k_and_weights_are_parameters(hand_built):
    conn, (m1, m2, m3), e0 = hand_built
    rows = search(conn, "bravo", [e0], memory_rerank=False, touch=False, rrf_k=10,
                  dense_weight=0.5, lexical_weight=2.0)
    assert [r[0] for r in rows] == [m1, m2, m3]
    assert rows[0][1] == pytest.approx(0.5 / 11 + 2.0 / 11)
    assert rows[1][1] == pytest.approx(0.5 / 12)


def test_memory_in_both_arms_appears_once_with_summed_score(hand_built):
    conn, (m1, m2, m3), e0 = hand_built
    rows = search(conn, "alpha", [e0], memory_rerank=False, touch=False)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == 3
    # lexical: alpha in m1 ("alpha bravo", longer) and m2 ("alpha", shorter -> higher BM25): m2 first.
    by_id = {r[0]: r for r in rows}
    assert by_id[m2][4] == 1 and by_id[m1][4] == 2
    assert by_id[m1][1] == pytest.approx(1 / 61 + 1 / 62)
    assert by_id[m2][1] == pytest.approx(1 / 62 + 1 / 61)
    # equal scores: the tie is broken by memory id, so m1 (smaller id) comes first
    assert ids[:2] == [m1, m2]


def test_multiple_query_embeddings_share_the_dense_weight(hand_built):
    conn, (m1, m2, m3), e0 = hand_built
    e1 = unit((1, 1.0))
    rows = search(conn, "zzz", [e0, e1], memory_rerank=False, touch=False)
    by_id = {r[0]: r for r in rows}
    # m1: rank 1 for e0, rank 3 for e1; each dense arm weighs 1/2
    assert by_id[m1][1] == pytest.approx(0.5 / 61 + 0.5 / 63)
    assert by_id[m1][3] == 1 and by_id[m3][3] == 1  # best rank over the variants


def test_lexical_only_mode_notices_and_ranks(conn):
    a = add(conn, "delta one")
    b = add(conn, "delta two")
    c = add(conn, "delta delta epsilon")
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    rows = search(conn, "delta", None, memory_rerank=False, touch=False)
    assert any("lexical arm only" in n for n in notices)
    # c has tf 2 -> highest BM25; a and b tie exactly and are ordered by id
    assert [r[0] for r in rows] == [c, a, b]
    assert [r[4] for r in rows] == [1, 2, 3]
    assert all(r[3] is None for r in rows)


def test_bm25_value_matches_formula(conn):
    add(conn, "apple banana")
    add(conn, "banana cherry cherry")
    add(conn, "durian")
    target = add(conn, "apple apple apple fig")
    rows = conn.execute(
        "SELECT memory_id, fusion_score FROM memory_search('apple', NULL, memory_rerank => false, touch => false, rrf_k => 0, fusion => 'rrf')"
    ).fetchall()
    # with rrf_k 0 the top document scores 1/1
    assert rows[0][0] == target and rows[0][1] == pytest.approx(1.0)
    n, df = 4, 2
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    avgdl = (2 + 3 + 1 + 4) / 4
    k1, b = 0.9, 0.4

    def bm25(tf, dl):
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

    assert bm25(3, 4) > bm25(1, 2)  # the ranking the SQL produced is the formula's


def test_posting_budget_ranks_on_rare_lexemes_and_scores_exactly(conn):
    # 'zephyr' is in 3 memories, 'common' in 43: 46 postings, over twice a budget of 10. The arm ranks on 'zephyr'
    # (3 postings fit the budget), then scores those memories and the dense candidate on both lexemes by index probes.
    za = add(conn, "zephyr common common common")
    zb = add(conn, "zephyr")
    zc = add(conn, "zephyr common filler words here")
    plain = [add(conn, "common " + "common " * (i % 4) + f"note{i}") for i in range(40)]
    near = add(conn, "common common common common", unit((0, 1.0)))   # only the common lexeme; the dense arm finds it

    def run(budget):
        rows = conn.execute(
            "SELECT memory_id, lexical_rank, lexical_score FROM memory_search('zephyr common', %s::vector[], k => 100, "
            "posting_budget => %s, memory_rerank => false, touch => false)", ([unit((0, 1.0))], budget)).fetchall()
        conn.commit()
        return {r[0]: (r[1], r[2]) for r in rows}

    exact, budgeted = run(0), run(10)
    assert {m for m, (rank, _) in exact.items() if rank} == {za, zb, zc, near, *plain}
    assert {m for m, (rank, _) in budgeted.items() if rank} == {za, zb, zc, near}   # 'common' alone: not scored
    for m in (za, zb, zc, near):   # exact BM25 (both lexemes) for every memory it scores
        assert budgeted[m][1] == pytest.approx(exact[m][1], rel=1e-12)
        assert budgeted[m][1] > 0
    order = sorted((za, zb, zc, near), key=lambda m: exact[m][0])
    assert sorted((za, zb, zc, near), key=lambda m: budgeted[m][0]) == order
    zephyr_only = conn.execute("SELECT lexical_score FROM memory_search('zephyr', '{}', touch => false) "
                               "WHERE memory_id = %s", (za,)).fetchone()[0]
    conn.commit()
    assert budgeted[za][1] > zephyr_only   # the common lexeme's postings were read for the memories it ranks
    assert run(23) == exact                     # 46 postings, not over twice 23: one pass over every posting
    assert {m for m, (rank, _) in run(22).items() if rank} == {za, zb, zc, near}   # over twice 22: two passes


def test_two_pass_lexical_arm_returns_the_same_rows_whichever_pass_runs(conn):
    # Unfiltered, the two passes are one statement each; a filter that must be checked (a tag every memory carries)
    # or a priority memory (its exact lexical rank wanted) takes the general pass. Same memories, ranks and BM25.
    za = add(conn, "zephyr common common common", tags=["all"])
    zb = add(conn, "zephyr", tags=["all"])
    zc = add(conn, "zephyr common filler words here", tags=["all"])
    for i in range(40):
        add(conn, "common " + "common " * (i % 4) + f"note{i}", tags=["all"])
    near = add(conn, "common common common common", unit((0, 1.0)), tags=["all"])
    other = add(conn, "common other " * 3, unit((0, 0.9), (1, 0.44)), tags=["all"])   # a dense candidate, BM25 only

    def run(**kw):
        rows = conn.execute(
            "SELECT memory_id, lexical_rank, lexical_score FROM memory_search('zephyr common', %(e)s::vector[], "
            "k => 100, candidates => 3, posting_budget => 10, memory_rerank => false, touch => false"
            + "".join(f", {k} => %({k})s" for k in kw) + ")", {"e": [unit((0, 1.0))], **kw}).fetchall()
        conn.commit()
        return sorted(rows)

    lean = run()
    assert sorted((r, m) for m, r, _ in lean if r)[-1][0] == 3                # the top 3 of the two passes ...
    assert {m for m, r, _ in lean if r} == {za, zb, zc}                        # ... the memories with 'zephyr'
    assert {m for m, r, s in lean if r is None and s} == {near, other}  # the dense arm's memories: BM25, no rank
    assert run(tags=["all"]) == lean
    conn.execute("UPDATE memsql.memories SET importance = 0.9 WHERE id = %s", (other,))   # a priority memory
    conn.commit()
    assert conn.execute("SELECT memsql.is_priority(knowledge_type, importance) FROM memsql.memories WHERE id = %s",
                        (other,)).fetchone()[0]
    with_priority = {m: (r, s) for m, r, s in run()}
    assert {m: (r, s) for m, r, s in lean if m != other} == {m: rs for m, rs in with_priority.items() if m != other}
    assert with_priority[other][0] > 3   # its exact rank among the lexical hits, past the top


def test_question_words_are_or_ed_not_and_ed(conn):
    m = add(conn, "The cache uses Redis with a five minute TTL.")
    add(conn, "Unrelated note about gardening.")
    rows = search(conn, "what did we decide about the cache eviction policy", None, touch=False)
    assert rows[0][0] == m


def test_namespace_isolation_in_every_arm(conn):
    e0 = unit((0, 1.0))
    mine = add(conn, "secret plan alpha", e0, namespace="alice")
    add(conn, "secret plan alpha", e0, namespace="bob")
    rows = search(conn, "secret plan", [e0], namespace="alice", touch=False)
    assert [r[0] for r in rows] == [mine]
    assert (rows[0][3], rows[0][4]) == (1, 1)
    assert search(conn, "secret", [e0], namespace="carol", touch=False) == []


def test_filters_apply_to_every_arm(conn):
    e0 = unit((0, 1.0))
    news = add(conn, "launch news", e0, knowledge_type="news")
    add(conn, "launch principle", e0, knowledge_type="principle")
    rows = search(conn, "launch", [e0], knowledge_types=["news"], touch=False)
    assert [r[0] for r in rows] == [news]


def test_dense_arm_reaches_candidates_beyond_default_ef_search(conn):
    """hnsw.ef_search defaults to 40: the function must raise it so an arm returns 100 candidates."""
    conn.execute(
        "SELECT memory_add('row ' || i, (SELECT array_agg(random()::real) FROM generate_series(1, 384 + i * 0))::vector)"
        " FROM generate_series(1, 1500) AS i"
    )
    conn.commit()
    # at this size the planner rightly prefers an exact scan; force the HNSW path that large tables take
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    conn.execute("SET enable_sort = off")
    q = unit((5, 1.0))
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN SELECT id FROM memsql.memories WHERE namespace = 'default' ORDER BY embedding::halfvec(384) <=> %s::halfvec(384) LIMIT 100", (q,)))
    assert "memories_embedding_hnsw" in plan
    rows = search(conn, "", [q], k=100, candidates=100, memory_rerank=False, touch=False)
    assert len(rows) == 100
    assert [r[3] for r in rows] == list(range(1, 101))


def test_candidates_default_is_50_or_k(conn):
    """candidates NULL (the default) = greatest(50, k): each arm is 50 deep, deeper when k asks for more rows."""
    q = unit((0, 1.0))
    near = [add(conn, f"note {i}", unit((0, 1.0), (10 + i, 0.05 + 0.001 * i))) for i in range(100)]
    # a principle beyond every arm's depth (dense rank 101, cosine 0.5 >= priority_min_similarity): under rrf it
    # enters at the lower bound of its dense rank, rrf_k + candidates + 1, plus the priority arm's 1 / (rrf_k + 1)
    principle = add(conn, "a principle", unit((0, 0.5), (1, 0.866)), knowledge_type="principle")
    for cand, depth in ((None, 50), (100, 100), (70, 70)):
        opts = {} if cand is None else {"candidates": cand}
        rows = search(conn, "", [q], k=10, memory_rerank=False, touch=False, **opts)
        assert rows[0][0] == principle
        assert rows[0][2] == pytest.approx(1 / (60 + depth + 1) + 1 / 61, rel=1e-12)
    rows = search(conn, "", [q], k=60, memory_rerank=False, touch=False)   # depth follows k past 50
    assert len(rows) == 60 and sorted(r[0] for r in rows[1:]) == sorted(near[:59])
    rows = search(conn, "", [q], k=60, candidates=50, memory_rerank=False, touch=False)   # an explicit depth binds
    assert len(rows) == 51   # the dense arm's 50 and the principle
    with pytest.raises(psycopg.Error, match="candidates must be between 1 and 1000, got 0"):
        search(conn, "", [q], k=10, candidates=0, touch=False)
    conn.rollback()


def _dense_plan_and_rows(conn, q):
    """The plans of memory_search's statements (auto_explain, nested statements) and its top 5 rows."""
    conn.execute("LOAD 'auto_explain'")
    for name, value in (("log_min_duration", "0"), ("log_nested_statements", "on"), ("log_level", "notice"),
                        ("log_analyze", "on"), ("log_timing", "off")):
        conn.execute(f"SET auto_explain.{name} = {value}")
    plans: list[str] = []
    conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
    rows = conn.execute(
        "SELECT memory_id, dense_similarity, dense_rank FROM memory_search('', ARRAY[%s::vector], k => 5,"
        " memory_rerank => false, touch => false)", (q,)).fetchall()
    conn.rollback()
    return rows, plans


@pytest.mark.parametrize("size, walks_hnsw", [(300, False), (1100, True)])
def test_dense_arm_scans_small_namespaces_exactly_and_walks_the_halfvec_index_past_1000(conn, size, walks_hnsw):
    """Up to 1,000 memories the dense arm scans the namespace exactly (memsql.search_kept); past that it walks memories_embedding_hnsw
    (half precision, V0009). Either way the similarity it reports is the cosine of the stored float vectors."""
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(size, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    with conn.cursor() as cur:
        cur.executemany("SELECT memory_add(%s, %s)", [(f"row {i}", v) for i, v in enumerate(vecs)])
    conn.commit()
    conn.execute("ANALYZE memsql.memories, memsql.documents")  # as autovacuum would (memsql ingest does it too)
    q = vecs[17] + 0.3 * vecs[42]
    q /= np.linalg.norm(q)
    rows, plans = _dense_plan_and_rows(conn, q)
    walks = [p for p in plans if "Index Scan using memories_embedding_hnsw" in p]
    exact = [p for p in plans if "search_kept(vis, dq, candidates)" in p and "CTE k" in p
             and "Sort Key: (CASE q.i WHEN 1 THEN k_1.d1" in p]
    assert (len(walks), len(exact)) == ((1, 0) if walks_hnsw else (0, 1))
    # the fusion statement reaches memories and documents by primary key only, never by scanning the namespace
    # (its plan is made once per session, from estimates that can be far off)
    fusion = [p for p in plans if "AS MATERIALIZED" in p and "final_score" in p]
    assert len(fusion) == 1
    assert "memories_pkey" in fusion[0] and "documents_pkey" in fusion[0]
    assert not any(f"{scan} on {table}" in fusion[0] for scan in ("Seq Scan", "Bitmap Heap Scan")
                   for table in ("memories", "documents"))
    exact = conn.execute("SELECT id, 1 - (embedding <=> %s) FROM memsql.memories ORDER BY embedding <=> %s LIMIT 5",
                         (q, q)).fetchall()
    assert [r[0] for r in rows] == [r[0] for r in exact] and [r[2] for r in rows] == [1, 2, 3, 4, 5]
    assert [r[1] for r in rows] == pytest.approx([r[1] for r in exact], abs=1e-12)
    half = conn.execute("SELECT 1 - (embedding::halfvec(384) <=> %s::halfvec(384)) FROM memsql.memories WHERE id = %s",
                        (q, rows[0][0])).fetchone()[0]
    assert half != rows[0][1]  # the half-precision cosine differs: the reported one is not it


def test_touch_counts_accesses(hand_built):
    conn, (m1, m2, m3), e0 = hand_built
    search(conn, "bravo", [e0], k=1, touch=True)
    search(conn, "bravo", [e0], k=1, touch=True)
    search(conn, "bravo", [e0], k=1, touch=False)
    search(conn, "bravo", [e0], k=1)   # the default counts nothing: a result list is not a use
    counts = dict(conn.execute("SELECT memory_id, access_count FROM memsql.memory_access").fetchall())
    assert counts == {m1: 2}


@pytest.mark.parametrize("kw, fragment", [
    ({"k": 0}, "k must be between 1 and 1000"),
    ({"k": 5000}, "k must be between 1 and 1000"),
    ({"dense_weight": float("nan")}, "dense_weight must be between 0 and 1000000, got NaN"),
    ({"lexical_weight": -1.0}, "lexical_weight must be between 0 and 1000000, got -1"),
    ({"bm25_b": 2.0}, "bm25_b"),
    ({"posting_budget": -1}, "posting_budget must be a finite number >= 0, got -1"),
    ({"posting_budget": None}, "posting_budget must be a finite number >= 0, got NULL"),
])
def test_bad_arguments_raise_ms002_with_hint(conn, kw, fragment):
    with pytest.raises(psycopg.Error) as info:
        search(conn, "x", None, **kw)
    conn.rollback()
    assert info.value.sqlstate == "MS002"
    assert fragment in info.value.diag.message_primary
    assert info.value.diag.message_hint


def test_wrong_dimension_rejected(conn):
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT * FROM memory_search('x', ARRAY['[1,2,3]'::vector])")
    conn.rollback()
    assert info.value.sqlstate == "MS005"


def test_term_statistics_stay_exact_after_delete(conn):
    add(conn, "kiwi lime")
    add(conn, "kiwi mango")
    doc = conn.execute("SELECT document_id FROM memsql.memories WHERE content = 'kiwi mango'").fetchone()[0]
    assert conn.execute("SELECT delete_document(%s)", (doc,)).fetchone()[0] == 1
    conn.commit()
    stats = dict(conn.execute("SELECT lexeme, df FROM memsql.term_stats WHERE namespace = 'default'").fetchall())
    assert stats == {"kiwi": 1, "lime": 1}  # mango left with its memory
    assert conn.execute("SELECT doc_count, total_len FROM memsql.namespace_stats").fetchone() == (1, 2)


def test_convex_fusion_exact_values(hand_built):
    conn, (m1, m2, m3), e0 = hand_built
    rows = search(conn, "bravo", [e0], fusion="convex", memory_rerank=False, touch=False)
    # default weights 2.75 (dense) and 1.0 (lexical): cosines 1.0, 0.8, 0.0; BM25 / max BM25 only m1 -> 1.0, 0, 0
    assert [r[0] for r in rows] == [m1, m2, m3]
    assert [round(r[2], 6) for r in rows] == [3.75, 2.2, 0.0]  # vectors are float32
    weighted = search(conn, "bravo", [e0], fusion="convex", dense_weight=0.25, lexical_weight=0.75,
                      memory_rerank=False, touch=False)
    assert [round(r[2], 6) for r in weighted] == [1.0, 0.2, 0.0]
    raw = conn.execute("SELECT memory_id, dense_similarity, lexical_score FROM memory_search('bravo', %s::vector[], "
                       "touch => false) ORDER BY memory_id", ([e0],)).fetchall()
    assert [(r[0], round(r[1], 6), r[2] > 0) for r in raw] == [(m1, 1.0, True), (m2, 0.8, False), (m3, 0.0, False)]


def test_fusion_must_be_known(conn):
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT * FROM memory_search('x', NULL, fusion => 'borda')")
    conn.rollback()
    assert info.value.sqlstate == "MS002"


def test_an_empty_result_under_the_importance_cutoff_says_so(conn):
    low = add(conn, "Gerald the office plant needs water on Mondays")
    conn.execute("SELECT memory_tag(memory_id => %s, importance => 0.2)", (low,))
    add(conn, "The kettle is descaled every month")
    notices = []
    conn.add_notice_handler(lambda d: notices.append((d.message_primary, d.message_hint)))
    assert search(conn, "Gerald plant water", None, touch=False) == []
    said = [n for n in notices if n[0].startswith("memory_search: no rows;")]
    assert said == [("memory_search: no rows; 1 memories of namespace 'default' have importance below the cutoff 0.3",
                     "memory_rerank => false (or a lower importance_threshold) includes them.")], notices
    notices.clear()
    assert [r[0] for r in search(conn, "Gerald plant water", None, touch=False, memory_rerank=False)] == [low]
    mine = lambda: [n for n in notices if n[0].startswith("memory_search: no rows;")]   # noqa: E731
    assert search(conn, "kettle descaled", None, touch=False) and not mine()   # rows: nothing to say
    assert search(conn, "zebra", None, touch=False, importance_threshold=0.1) == [] and not mine()
