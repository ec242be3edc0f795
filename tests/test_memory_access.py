"""Use, time and documents in memory_search and forgetting, in SQL with exact values: the reference time the memory
axis ages from, access counted on use (memory_touch) and not on appearing in a list, forgetting that keeps
conversation history and a just-restored memory, and the best memory per document (group_by, document_rank).
"""

from __future__ import annotations

import math

import pytest

from test_memory_axis import add, add_document, forget, set_access, sqlstate_of


def search(conn, query, **kw):
    opts = "".join(f", {k} => %({k})s" for k in kw)
    return conn.execute("SELECT memory_id, decay_factor, frequency_factor, document_id, document_rank"
                        f" FROM memory_search(%(q)s, NULL{opts}, priority_limit => 0)", {"q": query, **kw}).fetchall()


def accesses(conn) -> dict[int, int]:
    return dict(conn.execute("SELECT memory_id, access_count FROM memsql.memory_access").fetchall())


# ---------------------------------------------------------------------------------------------
# reference time


def test_the_memory_axis_ages_memories_from_the_reference_time(conn):
    # news: half-life 21 days; decay factor (1 - 0.4) + 0.4 * 0.5 ^ (age / 21) (time_weight 0.4)
    older = add(conn, "kiwi price update one", knowledge_type="news", source_date="2024-01-01 00:00+00")
    newer = add(conn, "kiwi price update two", knowledge_type="news", source_date="2024-01-22 00:00+00")
    rows = {r[0]: r[1] for r in search(conn, "kiwi", reference_time="2024-01-22 00:00+00")}
    assert rows == {older: pytest.approx(0.8), newer: pytest.approx(1.0)}
    rows = {r[0]: r[1] for r in search(conn, "kiwi", reference_time="2024-02-12 00:00+00")}
    assert rows == {older: pytest.approx(0.6 + 0.4 * 0.25), newer: pytest.approx(0.8)}
    # the newer fact wins at the time it is asked; without a reference time the ages run to now()
    assert [r[0] for r in search(conn, "kiwi", reference_time="2024-02-12 00:00+00")] == [newer, older]
    now_rows = {r[0]: r[1] for r in search(conn, "kiwi")}
    age_now = conn.execute("SELECT extract(epoch FROM now() - '2024-01-22 00:00+00'::timestamptz) / 86400").fetchone()[0]
    assert now_rows[newer] == pytest.approx(0.6 + 0.4 * 0.5 ** (float(age_now) / 21), abs=1e-9)


def test_a_reference_time_before_a_memory_counts_its_age_as_zero(conn):
    future = add(conn, "lemon stated later", knowledge_type="news", source_date="2024-03-01 00:00+00")
    assert search(conn, "lemon", reference_time="2024-01-01 00:00+00")[0][:2] == (future, pytest.approx(1.0))


@pytest.mark.parametrize("value", ["infinity", "-infinity"])
def test_an_infinite_reference_time_is_refused(conn, value):
    err = sqlstate_of(conn, "SELECT * FROM memory_search('x', NULL, reference_time => %s)", (value,))
    assert err.sqlstate == "MS002" and "reference_time must be a finite time" in err.diag.message_primary


# ---------------------------------------------------------------------------------------------
# access is counted on use


def test_searching_counts_no_access_and_repeats_the_same_order(conn):
    ids = [add(conn, f"mango note {w}", commit=True) for w in ("one", "two", "three")]
    set_access(conn, ids[2], 4)
    conn.commit()
    first = search(conn, "mango")
    for _ in range(5):
        assert search(conn, "mango") == first
    assert accesses(conn) == {ids[2]: 4}
    assert first[0][0] == ids[2]  # the memory used before is ahead: 1 + 0.1 ln 5
    assert first[0][2] == pytest.approx(1 + 0.1 * math.log(5))
    # touch => true still counts a search when asked
    search(conn, "mango", touch=True)
    assert accesses(conn) == {ids[0]: 1, ids[1]: 1, ids[2]: 5}


def test_memory_touch_counts_a_use_of_exactly_the_memories_given(conn):
    a = add(conn, "nectarine used", commit=True)
    b = add(conn, "nectarine not used", commit=True)
    other_ns = add(conn, "nectarine elsewhere", namespace="other", commit=True)
    rows = conn.execute("SELECT memory_id, access_count, last_accessed_at = now()"
                        " FROM memory_touch(ARRAY[%s, %s, %s, 999999]::bigint[])", (a, a, other_ns)).fetchall()
    assert rows == [(a, 1, True)]   # duplicates count once; another namespace's id and an unknown id: no row
    conn.commit()
    assert conn.execute("SELECT access_count FROM memory_touch(ARRAY[%s]::bigint[])", (a,)).fetchall() == [(2,)]
    assert accesses(conn) == {a: 2}
    assert [r[0] for r in search(conn, "nectarine")] == [a, b]


@pytest.mark.parametrize("sql", ["SELECT * FROM memory_touch(NULL)", "SELECT * FROM memory_touch(ARRAY[1, NULL]::bigint[])",
                                 "SELECT * FROM memory_touch(ARRAY[1]::bigint[], NULL)"])
def test_memory_touch_refuses_nulls(conn, sql):
    err = sqlstate_of(conn, sql)
    assert err.sqlstate == "MS002" and "memory_touch" in err.diag.message_primary and err.diag.message_hint


def test_the_python_client_searches_without_counting_and_touches_on_use(memory):
    ids = [memory.add(f"olive fact {w}") for w in ("one", "two", "three")]
    first = [r.memory_id for r in memory.search("olive fact")]
    assert sorted(first) == ids and [r.memory_id for r in memory.search("olive fact")] == first
    assert [(r.memory_id, r.access_count) for r in memory.touch([ids[1]])] == [(ids[1], 1)]
    assert memory.get(ids[1])[0].access_count == 1 and memory.get(ids[0])[0].access_count == 0


# ---------------------------------------------------------------------------------------------
# forgetting keeps history and what was just used


def test_forgetting_keeps_conversation_history_unless_asked(conn):
    talk = add(conn, "papaya we talked about", knowledge_type="conversation", age_days=800)
    news = add(conn, "papaya old news", knowledge_type="news", age_days=800)
    assert [r[0] for r in forget(conn)] == [news]
    rows = forget(conn, keep_types=[])
    assert {r[0] for r in rows} == {talk, news}
    assert {r[0]: r[9] for r in rows}[talk].startswith("faded: score ")
    # an unimportant conversation turn is still forgotten (importance set below the threshold)
    minor = add(conn, "papaya small talk", knowledge_type="conversation", importance=0.1)
    assert [r[0] for r in forget(conn)] == [news, minor]   # lowest score first


def test_forgetting_ages_from_the_reference_time(conn):
    news = add(conn, "quince news", knowledge_type="news", source_date="2024-01-01 00:00+00")
    # 21 days later: score 0.5, kept; 105 days later: 0.03125 < 0.05, faded
    assert forget(conn, reference_time="2024-01-22 00:00+00") == []
    rows = forget(conn, reference_time="2024-04-15 00:00+00")
    assert [(r[0], r[4], r[8]) for r in rows] == [(news, pytest.approx(105.0), pytest.approx(0.03125))]


def test_a_memory_used_recently_is_not_forgotten(conn):
    used = add(conn, "raspberry old but used", knowledge_type="news", age_days=400)
    unused = add(conn, "raspberry old unused", knowledge_type="news", age_days=400)
    conn.execute("SELECT * FROM memory_touch(ARRAY[%s]::bigint[])", (used,))
    assert [r[0] for r in forget(conn)] == [unused]
    assert {r[0] for r in forget(conn, recent_days=0)} == {used, unused}
    # used 40 days ago: past the 30 days of grace
    conn.execute("UPDATE memsql.memory_access SET last_accessed_at = now() - interval '40 days'")
    assert {r[0] for r in forget(conn)} == {used, unused}
    err = sqlstate_of(conn, "SELECT * FROM memory_forget(recent_days => -1)")
    assert err.sqlstate == "MS002" and "recent_days" in err.diag.message_primary
    err = sqlstate_of(conn, "SELECT * FROM memory_forget(keep_types => NULL)")
    assert err.sqlstate == "MS002" and "keep_types" in err.diag.message_primary


def test_a_restored_memory_is_not_a_candidate_again_at_once(conn):
    old = add(conn, "strawberry archived news", knowledge_type="news", age_days=400, commit=True)
    set_access(conn, old, 2)
    conn.commit()
    assert [r[0] for r in forget(conn, dry_run=False)] == [old]
    conn.commit()
    assert [r[2] for r in conn.execute("SELECT * FROM memory_restore(ARRAY[%s]::bigint[])", (old,))] == [True]
    conn.commit()
    assert conn.execute("SELECT access_count, last_accessed_at = now() FROM memsql.memory_access"
                        " WHERE memory_id = %s", (old,)).fetchone() == (3, False)  # committed: now() moved on
    assert forget(conn) == []
    # once the grace has passed, the same thresholds select it again
    later = conn.execute("SELECT now() + interval '31 days'").fetchone()[0]
    assert [r[0] for r in forget(conn, reference_time=later)] == [old]


# ---------------------------------------------------------------------------------------------
# the best memory per document


@pytest.fixture
def sessions(conn):
    d1, a = add_document(conn, "session-1", ["tangerine trip plan", "tangerine tangerine tickets booked", "weather"],
                         knowledge_type="conversation")
    d2, b = add_document(conn, "session-2", ["tangerine recipe for a cake with cream", "dessert"], knowledge_type="conversation")
    d3, c = add_document(conn, "session-3", ["nothing related"], knowledge_type="conversation")
    conn.commit()
    return {d1: a, d2: b, d3: c}


def test_every_row_carries_its_documents_rank(conn, sessions):
    (d1, a), (d2, b) = list(sessions.items())[:2]
    rows = search(conn, "tangerine", memory_rerank=False)
    assert [r[0] for r in rows] == [a[1], a[0], b[0]]
    assert [(r[3], r[4]) for r in rows] == [(d1, 1), (d1, 1), (d2, 2)]


def test_group_by_document_returns_each_documents_best_memory(conn, sessions):
    (d1, a), (d2, b) = list(sessions.items())[:2]
    rows = search(conn, "tangerine", memory_rerank=False, group_by="document")
    assert [(r[0], r[3], r[4]) for r in rows] == [(a[1], d1, 1), (b[0], d2, 2)]
    assert [r[0] for r in search(conn, "tangerine", memory_rerank=False, group_by="document", k=1)] == [a[1]]


def test_group_by_document_returns_k_documents_when_one_document_fills_the_arms(conn):
    """The arms' usual depth (50) held memories of one long session only: group_by returned 1 row where 11
    documents match. The rows must be each document's best memory, documents in the order of a deep ungrouped
    search."""
    big, _ = add_document(conn, "long-session", [f"tangerine tangerine tangerine note {i}" for i in range(120)],
                          knowledge_type="conversation")
    small = [add_document(conn, f"short-{i}", [f"a tangerine once, and filler words number {i} here"],
                          knowledge_type="conversation")[0] for i in range(10)]
    conn.commit()
    rows = search(conn, "tangerine", memory_rerank=False, group_by="document", k=8)
    deep = search(conn, "tangerine", memory_rerank=False, k=1000)
    best = {}
    for memory_id, _, _, doc, _ in deep:   # best first: a document's first row is its best memory
        best.setdefault(doc, memory_id)
    assert len(deep) == 130 and len(best) == 11
    assert [(r[0], r[3]) for r in rows] == [(m, d) for d, m in list(best.items())[:8]]
    assert rows[0][3] == big and {r[3] for r in rows[1:]} <= set(small)
    assert len(search(conn, "tangerine", memory_rerank=False, group_by="document", k=50)) == 11   # min(k, documents)


@pytest.mark.parametrize("extra, fragment", [
    ("group_by => 'session'", "group_by must be NULL or 'document'"),
    ("group_by => 'document', enable_mmr => true", "group_by and enable_mmr cannot be combined"),
])
def test_group_by_bad_arguments_raise_ms002(conn, extra, fragment):
    err = sqlstate_of(conn, f"SELECT * FROM memory_search('x', NULL, {extra})")
    assert err.sqlstate == "MS002" and fragment in err.diag.message_primary and err.diag.message_hint


def test_group_by_document_from_python(memory):
    ids = [memory.add(f"ugli fruit {w}") for w in ("one", "two")]
    rows = memory.search("ugli fruit", group_by="document", memory_rerank=False)
    assert sorted(r.memory_id for r in rows) == ids and [r.document_rank for r in rows] == [1, 2]
