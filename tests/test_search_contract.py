"""memory_search's contract at any size: every filter applies inside every arm before its LIMIT, so a search returns
min(k, eligible) rows, and the rows of the exact computation (index scans off), ties by memory id.

Synthetic corpus of tests/filtered_corpus.py (random unit vectors in clusters, no model): namespaces of 2,000, 1,500
(beside it), 300 (small) and 500 (forgetting). bench/filtered.py runs the same checks at 30,000 and 100,000.
"""

from __future__ import annotations

import contextlib
import uuid

import numpy as np
import psycopg
import pytest

from filtered_corpus import (CLUSTER, CURRENT, FILTERS, IMPORTANCE, VERSIONS, eligible, exact, exact_lexical,
                             lexical_search, load, near, search,
                             walks)
from memsql import db, maintenance


@contextlib.contextmanager
def scratch_database(server, prefix):
    """A fresh memsql database (from the suite's template) for a module's corpus, dropped afterwards; yields its DSN."""
    name = f"memsql_{prefix}_{uuid.uuid4().hex[:8]}"
    admin = psycopg.conninfo.make_conninfo(host=server.host, port=server.port, user=server.user, dbname="postgres",
                                           password=server.password or None)
    with psycopg.connect(admin, autocommit=True) as a:
        a.execute(f"CREATE DATABASE {name} TEMPLATE {server.template_dbname}")
    try:
        yield psycopg.conninfo.make_conninfo(admin, dbname=name)
    finally:
        with psycopg.connect(admin, autocommit=True) as a:
            a.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


SIZES = (("mid", 2000, 2), ("beside", 1500, 3), ("small", 300, 4), ("forgotten", 500, 5))


@pytest.fixture(scope="module")
def corpus(memsql_server):
    """One database for the module, the HNSW index built after the load."""
    with scratch_database(memsql_server, "contract") as dsn:
        with psycopg.connect(dsn) as conn:
            db.configure(conn)
            maintenance.drop_hnsw(conn)
            centres = {ns: load(conn, ns, n, seed) for ns, n, seed in SIZES}
            conn.commit()
            maintenance.rebuild_hnsw(conn)
            conn.execute("ANALYZE memsql.memories")
            conn.commit()
        conn = psycopg.connect(dsn, autocommit=True)
        db.configure(conn)
        rng = np.random.default_rng(9)
        queries = {ns: [near(c[i], rng) for i in range(min(4, len(c)))] for ns, c in centres.items()}
        yield conn, queries
        conn.close()


def check(conn, ns, q, k, args, where, versions=CURRENT, near_rows=CLUSTER):
    """min(k, eligible) rows; the exact rows, all of them when the dense arm scans exactly, else the first ones (the
    query's cluster: beyond it every memory is at cosine ~0 +- 0.05, where the HNSW walk is approximate by design)."""
    got = search(conn, ns, q, k, **args)
    want = exact(conn, ns, q, k, where, versions)
    assert len(got) == min(k, eligible(conn, ns, where, versions)), (args, k)
    if walks(conn, ns, args):
        n = min(k, near_rows)
        assert got[:n] == want[:n], (args, k)
    else:
        assert got == want, (args, k)
    return got


@pytest.mark.parametrize("name", list(FILTERS))
def test_every_filter_returns_min_k_eligible_rows_and_the_exact_ones(corpus, name):
    conn, queries = corpus
    args, where, _ = FILTERS[name]
    for q in queries["mid"]:
        for k in (10, 100, 200):
            check(conn, "mid", q, k, args, where, near_rows=10)


def test_importance_cutoff_applies_inside_the_arms(corpus):
    """95% of the memories near the query are under the cutoff: the 4 current ones above it (j = 0, 1, 3, 4) come
    first, then the next eligible ones, k rows in all (the cutoff is part of each arm's predicate, not a filter after
    the arms took their nearest)."""
    conn, queries = corpus
    for q in queries["mid"][::2]:   # even clusters: the ones with importance 0.1 on j >= 5
        for k in (4, 50, 200):
            check(conn, "mid", q, k, {"memory_rerank": True, "importance_threshold": 0.3}, IMPORTANCE, near_rows=4)
        got = search(conn, "mid", q, 50, tags=["t10"], memory_rerank=True, importance_threshold=0.3)
        assert got == exact(conn, "mid", q, 50, f"{FILTERS['tags 10%'][1]} AND {IMPORTANCE}")


@pytest.mark.parametrize("version", list(VERSIONS))
def test_versions_filter_inside_the_arms(corpus, version):
    """Closed versions (j % 10 == 2) are left out by default, in by as_of (valid then) and include_superseded."""
    conn, queries = corpus
    q = queries["mid"][1]
    closed = {r[0] for r in conn.execute("SELECT id FROM memsql.memories WHERE namespace = 'mid' "
                                         "AND valid_to IS NOT NULL")}
    assert not closed & set(check(conn, "mid", q, 200, {"tags": ["all"]}, FILTERS["tags 100%"][1]))
    opts, versions = VERSIONS[version]
    for name in ("tags 100%", "tags 1%", "knowledge_types 1%"):
        args, where, _ = FILTERS[name]
        got = check(conn, "mid", q, 200, {**args, **opts}, where, versions, near_rows=20)
        assert name != "tags 100%" or closed & set(got[:20])


@pytest.mark.parametrize("ns", ["small", "beside"])
def test_a_small_namespace_beside_a_large_one(corpus, ns):
    """small (300: scanned exactly) and beside (1,500: the walk over a graph most of which is other namespaces)."""
    conn, queries = corpus
    for q in queries[ns]:
        for k in (10, 100, 200):
            for name in ("none", "tags 10%"):
                args, where, _ = FILTERS[name]
                check(conn, ns, q, k, args, where, near_rows=10)


def test_archived_memories_are_not_searched(corpus):
    """memory_forget moves memories to memsql.archive: no arm returns them, and k rows still come back."""
    conn, queries = corpus
    archived = {r[0] for r in conn.execute(
        "SELECT memory_id FROM memsql.memory_forget('forgotten', score_threshold => 1, importance_threshold => 0.3, "
        "dry_run => false, max_rows => 200) WHERE archived")}
    assert len(archived) >= 100
    left = eligible(conn, "forgotten", "true")
    assert left <= 500 - len(archived)
    for q in queries["forgotten"]:
        for k in (10, 200, 1000):
            got = check(conn, "forgotten", q, k, {}, "true")
            assert len(got) == min(k, left) and not archived & set(got)
        hybrid = [r[0] for r in conn.execute(
            "SELECT memory_id FROM memsql.memory_search('memory', ARRAY[%s::vector], k => 1000, namespace => 'forgotten', "
            "touch => false)", (q,))]
        assert not archived & set(hybrid)


def test_hybrid_search_with_a_filter_matches_its_exact_self(corpus):
    """The lexical arm applies the filter before its LIMIT too: with tags keeping 10% of the namespace, a word every
    memory holds returns every tagged memory above the importance cutoff, and only those."""
    conn, queries = corpus
    q = queries["mid"][0]
    tagged = {r[0] for r in conn.execute("SELECT id FROM memsql.memories m WHERE namespace = 'mid' AND 't10' = ANY (tags)"
                                         f" AND valid_to IS NULL AND {IMPORTANCE}")}   # the default cutoff 0.3
    rows = conn.execute("SELECT memory_id FROM memsql.memory_search('memory', ARRAY[%s::vector], k => 200, "
                        "namespace => 'mid', tags => ARRAY['t10'], touch => false)", (q,)).fetchall()
    assert len(rows) == min(200, len(tagged)) and {r[0] for r in rows} <= tagged
    lexical_only = conn.execute("SELECT memory_id, lexical_rank FROM memsql.memory_search('memory', '{}', k => 100, "
                                "namespace => 'mid', tags => ARRAY['t10'], time_weight => 0, touch => false)").fetchall()
    assert len(lexical_only) == 100 and [r[1] for r in lexical_only] == list(range(1, 101))
    assert {r[0] for r in lexical_only} <= tagged
    # equal BM25 everywhere ('memory' once in every memory of equal length), no decay: ties by id
    assert [r[0] for r in lexical_only] == sorted(r[0] for r in lexical_only)


def test_same_call_same_rows_in_the_same_order(corpus):
    """touch => false: the same call returns the same rows in the same order, and an unrelated metadata update does
    not change which tied rows return."""
    conn, queries = corpus
    q = queries["mid"][2]
    first = search(conn, "mid", q, 100, tags=["all"])
    assert [search(conn, "mid", q, 100, tags=["all"]) for _ in range(2)] == [first, first]
    lexical = "SELECT memory_id FROM memsql.memory_search('memory', '{}', k => 50, namespace => 'mid', touch => false)"
    before = [r[0] for r in conn.execute(lexical)]
    conn.execute("UPDATE memsql.memories SET metadata = '{\"seen\": 1}' WHERE namespace = 'mid' AND id = %s",
                 (before[-1],))
    assert [r[0] for r in conn.execute(lexical)] == before


@pytest.fixture(scope="module")
def stale_statistics(memsql_server):
    """A namespace of 6,000 whose statistics say the opposite of its tags: 'x' on every memory when ANALYZE ran, then
    kept on 3 only; 'y' on none then, then on every memory. Autovacuum off, so the statistics stay wrong."""
    with scratch_database(memsql_server, "stale") as dsn:
        with psycopg.connect(dsn) as conn:
            db.configure(conn)
            conn.execute("ALTER TABLE memsql.memories SET (autovacuum_enabled = false)")
            maintenance.drop_hnsw(conn)
            centres = load(conn, "big", 6000, 7)
            conn.execute("UPDATE memsql.memories SET tags = tags || '{x}' WHERE namespace = 'big'")
            conn.commit()
            conn.execute("ANALYZE memsql.memories")
            conn.execute("UPDATE memsql.memories SET tags = array_remove(tags, 'x') || '{y}' "
                         "WHERE namespace = 'big' AND chunk_index NOT IN (0, 100, 200)")
            conn.commit()
            maintenance.rebuild_hnsw(conn)
        conn = psycopg.connect(dsn, autocommit=True)
        db.configure(conn)
        yield conn, near(centres[0], np.random.default_rng(5))
        conn.close()


def test_a_wrong_estimate_costs_time_not_rows(stale_statistics):
    """The dense arm decides exact scan or walk from the planner's estimate of what the filter keeps. Wrong both
    ways here: 'x' looks kept by 6,000 (a walk, which finds 3 and stops short: then the exact scan), 'y' by none
    (the exact scan of 5,397 current ones). Both return min(k, eligible) rows, the exact ones."""
    conn, q = stale_statistics
    assert walks(conn, "big", {"tags": ["x"]}) and not walks(conn, "big", {"tags": ["y"]})
    for tag, where, n in (("x", "m.tags && ARRAY['x']", 3), ("y", "m.tags && ARRAY['y']", 5397)):
        assert eligible(conn, "big", where) == n
        for k in (10, 200):
            got = search(conn, "big", q, k, tags=[tag])
            assert got == exact(conn, "big", q, k, where), (tag, k)
            assert len(got) == min(k, n)


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize("budget", [10, 2000, 0])
def test_the_lexical_arm_alone_returns_the_exact_rows_under_every_filter(corpus, name, budget):
    """Without a query embedding, memory_search is its lexical arm: under every filter it returns min(k, matching
    memories kept) rows, whatever posting_budget (10: two passes on the rarest lexemes, where a filter keeping 1%
    once left 7 of 10 rows at 100k and none at 1M; 0: every posting read). They are the exact BM25 ranking when
    every posting is read, and under a filter keeping few memories (the dense arm's exact scan) at any budget;
    otherwise the budget's two passes approximate it as they do without a filter (all filters here keep few but
    'none', whose closed versions are checked like a filter)."""
    conn, _ = corpus
    args, where, _ = FILTERS[name]
    for query in ("memory 7 3 12", "memory 40", "12 5"):
        matching = exact_lexical(conn, "mid", query, 10_000, where)
        for k in (10, 100):
            got = lexical_search(conn, "mid", query, k, posting_budget=budget, **args)
            assert len(got) == min(k, len(matching)) and set(got) <= set(matching), (query, k)
            if budget != 10 or not walks(conn, "mid", args):
                assert got == matching[:k], (query, k)


@pytest.mark.parametrize("name", ["tags 10%", "tags 1%", "knowledge_types 1%", "topics 1%"])
@pytest.mark.parametrize("budget", [10, 2000])
def test_the_lexical_arm_checks_a_filter_alike_every_way(corpus, name, budget):
    """The lexical arm keeps the same hits, ranks and BM25 whichever way it meets a filter: ranking the postings of
    the memories it keeps (given when the dense arm read them), or checking hits best first, with the budget over
    the share kept (kept given) or not (no estimate); the other arms' memories and a priority memory's exact rank
    too."""
    conn, _ = corpus
    args = FILTERS[name][0]
    f = ("mid", args.get("knowledge_types"), args.get("tags"), args.get("topics"), 0.3, False, None)
    visible = [r[0] for r in conn.execute(
        f"SELECT m.id FROM memsql.memories m WHERE m.namespace = 'mid' AND {FILTERS[name][1]} AND {CURRENT} "
        f"AND {IMPORTANCE} ORDER BY m.id")]
    scored, ranked = visible[-6:], visible[-3:]   # as the dense and priority arms would pass them
    call = ("SELECT h.memory_id, h.rank, round(h.score::numeric, 9) FROM unnest(memsql.search_lexical("
            "ROW(%s, %s, %s, %s, %s, %s, %s)::memsql.search_filter, memsql.search_lexemes('memory 7 3 12', 'mid'), "
            "10, 0.9, 0.4, %s, %s, %s, 2, eligible => %s, kept => %s)) h ORDER BY h.rank NULLS LAST, h.memory_id")
    ways = {way: conn.execute(call, (*f, budget, scored, ranked, kept_ids, kept)).fetchall()
            for way, kept_ids, kept in (("eligible", visible, None), ("share", None, float(len(visible))),
                                        ("lazy", None, None))}
    assert ways["eligible"] == ways["share"] == ways["lazy"], name
    top = [r for r in ways["lazy"] if r[1] is not None and r[1] <= 10]
    assert len(top) == min(10, len(visible)) and {r[0] for r in ways["lazy"]} <= set(visible)


def test_windowed_memories_rank_as_the_exact_computation_by_their_windows(corpus):
    """A long memory with windows (memsql.memory_windows) is scored by its best window: the rows are the exact
    computation's (the arm's nearest by each memory's own embedding, then ordered by the window similarity), a
    memory whose window lies on the query climbs above nearer ones, and one without computed windows keeps its own
    cosine. Unfiltered (the walk) and under a tag filter (the exact scan)."""
    conn, _ = corpus
    rng = np.random.default_rng(11)
    centres = load(conn, "windowed", 500, 6)
    q = near(centres[0], rng)
    ids = [r[0] for r in conn.execute("SELECT id FROM memsql.memories WHERE namespace = 'windowed' "
                                      "AND chunk_index < %s ORDER BY chunk_index", (CLUSTER,))]
    # members 40..49 of the query's cluster: one window nearer the query than any member, one off topic;
    # members 60..69: an empty row (they fit one window); the others stay pending (their own embedding counts)
    win_ids, counts, vecs = [], [], []
    for j in range(40, 50):
        close = q + 0.005 * (j - 39) * rng.normal(size=q.shape).astype(np.float32)
        far = rng.normal(size=q.shape).astype(np.float32)
        win_ids.append(ids[j]), counts.append(2), vecs.extend([far / np.linalg.norm(far), close / np.linalg.norm(close)])
    for j in range(60, 70):
        win_ids.append(ids[j]), counts.append(0)
    assert conn.execute("SELECT memsql.memory_set_windows('windowed', %s, %s, %s::vector[])",
                        (win_ids, counts, vecs)).fetchone()[0] == 20
    for k in (10, 30):
        for args, where in (({}, "true"), ({"tags": ["t10"]}, "m.tags && ARRAY['t10']")):
            got = search(conn, "windowed", q, k, **args)
            want = exact(conn, "windowed", q, k, where)
            assert got == want, (args, k)
    top = search(conn, "windowed", q, 10)
    cos = dict(conn.execute("SELECT id, 1 - (embedding <=> %s::vector) FROM memsql.memories WHERE id = ANY (%s)",
                            (q, [ids[1], ids[40]])).fetchall())
    assert top[0] == ids[40] and cos[ids[40]] < cos[ids[1]]   # its window (noise 0.005) beats a nearer memory
    own = conn.execute("SELECT 1 - (embedding <=> %s::vector) FROM memsql.memories WHERE id = %s",
                       (q, ids[0])).fetchone()[0]
    row = conn.execute("SELECT dense_similarity FROM memsql.memory_search('', ARRAY[%s::vector], k => 11, "
                       "namespace => 'windowed', memory_rerank => false) WHERE memory_id = %s", (q, ids[0])).fetchone()
    assert row is not None and row[0] == pytest.approx(own, abs=1e-6)
