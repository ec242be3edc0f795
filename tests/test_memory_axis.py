"""The memory axis tools (sql/functions/50_tags.sql, 52_forget.sql, 54_inspect.sql, the backlog in 60_worker.sql)
tested directly in SQL with exact values.

Most tests build their rows and call the function in ONE transaction: now() is then the same
instant for both, so ages are whole days and decay factors exact powers of one half.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest

DIM = 384
NS = "default"


def unit(*pairs: tuple[int, float]) -> np.ndarray:
    """A 384-d unit vector from (axis, weight) pairs."""
    v = np.zeros(DIM, dtype=np.float32)
    for axis, w in pairs:
        v[axis] = w
    return v / np.linalg.norm(v)


def add(conn, content, vec=None, namespace=NS, age_days=None, commit=False, **kw) -> int:
    """memory_add; age_days sets source_date = now() - age_days * 86400 s (no calendar arithmetic)."""
    # importance: memory_add takes real, and a Python float is double precision (no implicit cast down)
    args = ["%(content)s", "%(vec)s", "%(ns)s"] + [f"{k} => %({k})s" + ("::real" if k == "importance" else "")
                                                   for k in kw]
    if age_days is not None:
        args.append("source_date => now() - make_interval(secs => %(age)s * 86400)")
    mid = conn.execute(f"SELECT memory_add({', '.join(args)})",
                       {"content": content, "vec": vec, "ns": namespace, "age": age_days, **kw}).fetchone()[0]
    if commit:
        conn.commit()
    return mid


def add_document(conn, key, chunks, namespace=NS, knowledge_type="note") -> tuple[int, list[int]]:
    """A document of several chunks, written the way ingest writes them (document_upsert, then the rows)."""
    doc = conn.execute("SELECT document_id FROM document_upsert(%s, %s, %s, 'text', knowledge_type => %s)",
                       (namespace, key, "hash-" + key, knowledge_type)).fetchone()[0]
    ids = []
    for i, text in enumerate(chunks):
        ids.append(conn.execute(
            "INSERT INTO memsql.memories (namespace, document_id, chunk_index, content, content_hash, knowledge_type)"
            " VALUES (%s, %s, %s, %s, md5(%s), %s) RETURNING id",
            (namespace, doc, i, text, text, knowledge_type)).fetchone()[0])
    return doc, ids


def set_access(conn, memory_id, count, namespace=NS, days_ago=365):
    """count accesses, the last days_ago days ago (the default is past memory_forget's recent_days: not kept for it)."""
    conn.execute("INSERT INTO memsql.memory_access (namespace, memory_id, access_count, last_accessed_at)"
                 " VALUES (%s, %s, %s, now() - make_interval(days => %s))", (namespace, memory_id, count, days_ago))


def count(conn, table, namespace=NS) -> int:
    return conn.execute(f"SELECT count(*) FROM memsql.{table} WHERE namespace = %s", (namespace,)).fetchone()[0]


def term_stats(conn, namespace=NS) -> dict[str, int]:
    return dict(conn.execute("SELECT lexeme, df FROM memsql.term_stats WHERE namespace = %s", (namespace,)).fetchall())


def lexemes(conn, memory_id) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT u.lexeme FROM memsql.memories m, unnest(m.tsv) u WHERE m.id = %s", (memory_id,))]


def forget(conn, **kw):
    opts = ", ".join(f"{k} => %({k})s" for k in kw)
    return conn.execute(
        "SELECT memory_id, document_id, knowledge_type, importance, age_days, access_count, decay_factor,"
        " frequency_factor, score, reason, archived FROM memory_forget(" + opts + ")", kw).fetchall()


def sqlstate_of(conn, sql, params=()) -> psycopg.Error:
    with pytest.raises(psycopg.Error) as info:
        conn.execute(sql, params)
    conn.rollback()
    return info.value


# ---------------------------------------------------------------------------------------------
# decay and dates


def test_decay_is_exact(conn):
    row = conn.execute(
        "SELECT memsql.decay(21, 21), memsql.decay(42, 21), memsql.decay(0, 21), memsql.decay(-5, 21),"
        " memsql.decay(1000, NULL), memsql.decay(NULL, 21)").fetchone()
    assert row == (0.5, 0.25, 1.0, 1.0, 1.0, 1.0)


def test_a_memory_older_than_a_thousand_half_lives_fades_without_breaking_its_namespace(conn):
    """0.5 ^ 1075 is below the smallest double: power() raised "underflow" and every search, forget and context of
    the namespace failed on one such memory (a news item dated 1906, or a type with a half-life of hours)."""
    assert conn.execute("SELECT memsql.decay(1e6, 1), memsql.decay(200, 1)").fetchone() == (0.5 ** 200, 0.5 ** 200)
    conn.execute("SELECT memsql.knowledge_type_set('scratchpad', 0.01)")
    old = add(conn, "The San Francisco earthquake struck in 1906.", namespace="old", knowledge_type="news",
              source_date="1906-04-18")
    pad = add(conn, "scratchpad: the earthquake drill button is blue", namespace="old", knowledge_type="scratchpad",
              age_days=11)
    new = add(conn, "Earthquake kits are in the hall cupboard.", namespace="old", knowledge_type="note", commit=True)
    rows = conn.execute("SELECT memory_id, decay_factor FROM memory_search('earthquake', '{}'::vector[], "
                        "namespace => 'old', touch => false)").fetchall()
    assert rows[0][0] == new and {r[0] for r in rows} == {old, pad, new}, rows
    assert all(r[1] == pytest.approx(0.6) for r in rows if r[0] != new), rows   # (1 - 0.4) + 0.4 * ~0
    far = conn.execute("SELECT count(*) FROM memory_search('earthquake', '{}'::vector[], namespace => 'old', "
                       "reference_time => '200000-01-01', touch => false)").fetchone()[0]
    assert far == 3
    faded = {r[0] for r in conn.execute("SELECT memory_id FROM memory_forget('old', keep_types => '{}')")}
    assert {old, pad} <= faded and new not in faded
    assert str(new) in conn.execute("SELECT memsql.memory_context('old', 'earthquake', '{}'::vector[])").fetchone()[0]


def test_naive_timestamps_are_read_in_the_session_time_zone(conn):
    """What memsql does with a naive time: PostgreSQL's rule, the session TimeZone -- NOT UTC.

    A naive literal or a naive Python datetime (psycopg sends it as `timestamp`) is converted to
    timestamptz with the session TimeZone. So the Python layer must make naive datetimes aware as UTC
    before calling SQL (the adapters do: markdown._to_utc, claude_ai); an aware value is stored exactly.
    """
    conn.execute("SET TimeZone = 'America/New_York'")
    literal = add(conn, "naive literal", source_date="2024-01-15 12:00:00")
    naive = add(conn, "naive datetime", source_date=datetime(2024, 1, 15, 12, 0))
    aware = add(conn, "aware datetime", source_date=datetime(2024, 1, 15, 12, 0, tzinfo=UTC))
    made_utc = add(conn, "naive made utc", source_date=datetime(2024, 1, 15, 12, 0).replace(tzinfo=UTC))
    rows = dict(conn.execute(
        "SELECT id, to_char(source_date AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') FROM memsql.memories").fetchall())
    assert rows == {literal: "2024-01-15 17:00", naive: "2024-01-15 17:00",
                    aware: "2024-01-15 12:00", made_utc: "2024-01-15 12:00"}
    # ages are instants apart, whatever the session zone: the same row ages identically in UTC and New York
    age_ny = forget(conn, score_threshold=1.0, time_weight=1.0)
    conn.execute("SET TimeZone = 'UTC'")
    age_utc = forget(conn, score_threshold=1.0, time_weight=1.0)
    assert [r[4] for r in age_ny] == [r[4] for r in age_utc]


# ---------------------------------------------------------------------------------------------
# memory_forget


@pytest.fixture
def forgettable(conn):
    """Rows with known scores, all in the open transaction (now() fixed)."""
    ids = {
        "fresh_news": add(conn, "alpha launch news", knowledge_type="news", age_days=63),       # decay 0.125
        "old_news": add(conn, "bravo election news", knowledge_type="news", age_days=105),      # 0.03125: faded
        "new_note": add(conn, "charlie garden note", age_days=0),                               # 1.0
        "principle": add(conn, "delta coding principle", knowledge_type="principle", importance=0.1),
        "important_old": add(conn, "echo vital news", knowledge_type="news", age_days=105, importance=1.0),
        "old_paper": add(conn, "foxtrot paper summary", knowledge_type="paper", age_days=900),  # 0.03125
        "future_note": add(conn, "golf future note", age_days=-10),                             # clamps to 0
        "old_minor": add(conn, "hotel minor news", knowledge_type="news", age_days=105, importance=0.2),
    }
    set_access(conn, ids["old_paper"], 3)
    set_access(conn, ids["fresh_news"], 1)
    return conn, ids


EXPECTED_FADED_PAPER = 0.03125 * (1 + 0.1 * math.log(4))


def test_forget_dry_run_lists_exact_candidates_and_changes_nothing(forgettable):
    conn, ids = forgettable
    before = (count(conn, "memories"), count(conn, "memory_access"), term_stats(conn))
    rows = forget(conn)
    assert [r[0] for r in rows] == [ids["old_minor"], ids["old_news"], ids["old_paper"], ids["principle"]]
    by_id = {r[0]: r for r in rows}
    # (importance, age_days, access_count, decay_factor, frequency_factor, score)
    assert by_id[ids["old_minor"]][3:9] == pytest.approx((0.2, 105.0, 0, 0.03125, 1.0, 0.4 * 0.03125), rel=1e-6)
    assert by_id[ids["old_news"]][4:9] == (105.0, 0, 0.03125, 1.0, 0.03125)
    assert by_id[ids["old_paper"]][4:9] == pytest.approx(
        (900.0, 3, 0.03125, 1 + 0.1 * math.log(4), EXPECTED_FADED_PAPER), rel=1e-12)
    assert by_id[ids["principle"]][4:9] == pytest.approx((0.0, 0, 1.0, 1.0, 0.2), rel=1e-6, abs=1e-6)
    assert [r[9] for r in rows] == [
        "faded: score 0.0125 < 0.05 (age 105 d, half-life 21 d, 0 accesses); unimportant: importance 0.2 < 0.3",
        "faded: score 0.0313 < 0.05 (age 105 d, half-life 21 d, 0 accesses)",
        "faded: score 0.0356 < 0.05 (age 900 d, half-life 180 d, 3 accesses)",
        "unimportant: importance 0.1 < 0.3",
    ]
    assert [r[10] for r in rows] == [False] * 4
    assert (count(conn, "memories"), count(conn, "memory_access"), term_stats(conn)) == before
    assert count(conn, "archive") == 0


def test_forget_scores_every_memory_with_the_documented_formula(forgettable):
    conn, ids = forgettable
    rows = {r[0]: r for r in forget(conn, score_threshold=1.0, importance_threshold=0.0)}
    # everything below score 1 is listed; fresh note (1.0), future note (clamped: 1.0) and important news (2 * ...) too
    assert rows[ids["fresh_news"]][5:9] == pytest.approx((1, 0.125, 1 + 0.1 * math.log(2), 0.125 * (1 + 0.1 * math.log(2))))
    assert rows[ids["important_old"]][8] == pytest.approx(2 * 0.03125)
    assert ids["new_note"] not in rows and ids["future_note"] not in rows  # score exactly 1.0, not < 1.0
    future = forget(conn, score_threshold=1.0, importance_threshold=0.0, time_weight=0.5)
    assert {r[0]: r[6] for r in future}[ids["old_news"]] == pytest.approx(0.5 + 0.5 * 0.03125)
    # time_weight 0.5: the decay factor never falls under 0.5, so the default threshold finds no faded memory
    assert [r[0] for r in forget(conn, time_weight=0.5, importance_threshold=0.0)] == []


def test_forget_max_rows_takes_the_lowest_scores(forgettable):
    conn, ids = forgettable
    assert [r[0] for r in forget(conn, max_rows=2)] == [ids["old_minor"], ids["old_news"]]


def test_forget_real_run_moves_exactly_the_candidates(forgettable):
    conn, ids = forgettable
    conn.commit()
    gone = [ids["old_minor"], ids["old_news"], ids["old_paper"], ids["principle"]]
    stats_before = term_stats(conn)
    removed_lexemes = Counter(lx for mid in gone for lx in lexemes(conn, mid))
    n_before, len_before = conn.execute("SELECT doc_count, total_len FROM memsql.namespace_stats").fetchone()
    removed_len = conn.execute("SELECT sum(tsv_len) FROM memsql.memories WHERE id = ANY(%s)", (gone,)).fetchone()[0]
    vec_rows = conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0]

    rows = forget(conn, dry_run=False)
    conn.commit()
    assert [r[0] for r in rows] == gone and all(r[10] for r in rows)
    assert count(conn, "memories") == vec_rows - 4
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE id = ANY(%s)", (gone,)).fetchone()[0] == 0
    assert count(conn, "archive") == 4
    # term statistics decremented exactly by the removed memories' lexemes
    stats_after = term_stats(conn)
    # (a lexeme whose last memory went has no row any more: it counts as 0)
    assert {lx: stats_before[lx] - stats_after.get(lx, 0) for lx in stats_before
            if stats_before[lx] != stats_after.get(lx, 0)} == dict(removed_lexemes)
    assert all(df > 0 for df in stats_after.values())
    assert conn.execute("SELECT doc_count, total_len FROM memsql.namespace_stats").fetchone() \
        == (n_before - 4, len_before - removed_len)
    # access rows of archived memories are gone; the others stay
    assert dict(conn.execute("SELECT memory_id, access_count FROM memsql.memory_access").fetchall()) \
        == {ids["fresh_news"]: 1}
    arc = {r[0]: r[1:] for r in conn.execute(
        "SELECT id, access_count, last_accessed_at IS NOT NULL, score, reason, knowledge_type, importance,"
        " document_hash IS NOT NULL FROM memsql.archive")}
    assert arc[ids["old_paper"]][:2] == (3, True)
    assert arc[ids["old_paper"]][2] == pytest.approx(EXPECTED_FADED_PAPER)
    assert arc[ids["principle"]][3:6] == ("unimportant: importance 0.1 < 0.3", "principle", pytest.approx(0.1))
    assert all(a[6] for a in arc.values())
    # documents stay (restore needs them); a second run finds nothing
    assert count(conn, "documents") == 8
    assert forget(conn, dry_run=False) == []
    assert conn.execute("SELECT namespace, archived FROM memory_archive_stats").fetchall() == [(NS, 4)]


def test_forget_is_per_namespace(conn):
    a = add(conn, "old news one", knowledge_type="news", age_days=200, namespace="a")
    add(conn, "old news one", knowledge_type="news", age_days=200, namespace="b")
    assert [r[0] for r in forget(conn, namespace="a", dry_run=False)] == [a]
    assert (count(conn, "memories", "a"), count(conn, "memories", "b")) == (0, 1)


@pytest.mark.parametrize("kw, fragment", [
    ({"score_threshold": 1.5}, "score_threshold must be between 0 and 1, got 1.5"),
    ({"freq_cap": float("inf")}, "freq_cap must be between 1 and 1000000, got Infinity"),
    ({"score_threshold": float("nan")}, "score_threshold"),
    ({"time_weight": -0.1}, "time_weight"),
    ({"freq_cap": 0.5}, "freq_cap"),
    ({"freq_weight": float("inf")}, "freq_weight"),
    ({"importance_threshold": None}, "importance_threshold"),
    ({"dry_run": None}, "dry_run is NULL"),
    ({"max_rows": 0}, "max_rows"),
    ({"namespace": None}, "namespace is NULL"),
])
def test_forget_bad_arguments_raise_ms002(conn, kw, fragment):
    opts = ", ".join(f"{k} => %({k})s" for k in kw)
    err = sqlstate_of(conn, f"SELECT * FROM memory_forget({opts})", kw)
    assert err.sqlstate == "MS002" and fragment in err.diag.message_primary and err.diag.message_hint


def test_dense_search_after_forgetting_most_rows_still_returns_k(conn):
    """Dead tuples of archived rows (no VACUUM) must not starve the HNSW scan."""
    rng = np.random.default_rng(7)
    q = unit((0, 1.0))
    with conn.cursor() as cur:
        for i in range(300):
            if i < 250:  # the nearest to the query: these are forgotten, so the first HNSW hits are all dead
                v = q + rng.normal(0, 0.02, DIM).astype(np.float32)
                imp = 0.1
            else:
                v = rng.normal(0, 1, DIM).astype(np.float32)
                imp = None
            cur.execute("SELECT memory_add(%s, %s, importance => %s::real)", (f"row {i}", v / np.linalg.norm(v), imp))
    conn.commit()
    assert len(forget(conn, dry_run=False)) == 250
    conn.commit()
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_bitmapscan = off")
    conn.execute("SET enable_sort = off")
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN SELECT id FROM memsql.memories WHERE namespace = 'default' ORDER BY embedding::halfvec(384) <=> %s::halfvec(384) LIMIT 100", (q,)))
    assert "memories_embedding_hnsw" in plan
    for candidates in (100, 10):
        rows = conn.execute(
            "SELECT memory_id, dense_rank FROM memory_search('', ARRAY[%s]::vector[], k => 10,"
            " candidates => %s, touch => false)", (q, candidates)).fetchall()
        assert [r[1] for r in rows] == list(range(1, 11))
        assert conn.execute("SELECT count(*) FROM memsql.archive WHERE id = ANY(%s)",
                            ([r[0] for r in rows],)).fetchone()[0] == 0


# ---------------------------------------------------------------------------------------------
# memory_restore and the embedding backlog


def search_ids(conn, query, embs=None):
    return [r[0] for r in conn.execute(
        "SELECT memory_id FROM memory_search(%s, %s::vector[], memory_rerank => false, touch => false)",
        (query, embs)).fetchall()]


def test_restore_brings_memories_back_lexically_then_densely(conn):
    v = unit((3, 1.0))
    keep = add(conn, "india kept note", unit((4, 1.0)))
    old = add(conn, "juliet archived news", v, knowledge_type="news", age_days=400)
    set_access(conn, old, 5)
    conn.commit()
    assert [r[0] for r in forget(conn, dry_run=False)] == [old]
    conn.commit()
    assert search_ids(conn, "juliet") == []

    rows = conn.execute("SELECT * FROM memory_restore(ARRAY[%s, %s, 999999, %s]::bigint[])", (old, keep, old)).fetchall()
    conn.commit()
    doc = conn.execute("SELECT document_id FROM memsql.memories WHERE id = %s", (old,)).fetchone()[0]
    assert rows == [(keep, None, False, "not archived"), (old, doc, True, "restored; embedding pending"),
                    (999999, None, False, "no memory 999999 in namespace 'default'")]   # neither live nor archived
    assert count(conn, "archive") == 0
    got = conn.execute("SELECT embedding IS NULL, knowledge_type, created_at < now() FROM memsql.memories"
                       " WHERE id = %s", (old,)).fetchone()
    assert got == (True, "news", True)
    # the restore counts as one more access
    assert conn.execute("SELECT access_count FROM memsql.memory_access WHERE memory_id = %s", (old,)).fetchone() == (6,)
    # the lexical arm finds it at once; the dense arm once the embedding is back
    assert search_ids(conn, "juliet") == [old]
    assert search_ids(conn, "", [v]) == [keep]
    assert conn.execute("SELECT * FROM memory_pending_embeddings()").fetchall() == [(NS, old, "juliet archived news")]
    assert conn.execute("SELECT memory_set_embeddings('default', ARRAY[%s]::bigint[], ARRAY[%s]::vector[])",
                        (old, v)).fetchone() == (1,)
    conn.commit()
    assert search_ids(conn, "", [v]) == [old, keep]
    assert conn.execute("SELECT * FROM memory_pending_embeddings()").fetchall() == []


def test_restore_skips_when_the_document_is_gone_or_changed(conn):
    doc, (c0, c1) = add_document(conn, "file.md", ["kilo first chunk", "lima second chunk"])
    other = add(conn, "mike lone note", importance=0.1)
    conn.commit()
    conn.execute("SELECT memory_tag(document_id => %s, importance => 0.1)", (doc,))
    assert {r[0] for r in forget(conn, dry_run=False)} == {c0, c1, other}
    other_doc = conn.execute("SELECT document_id FROM memsql.archive WHERE id = %s", (other,)).fetchone()[0]
    conn.execute("SELECT delete_document(%s)", (other_doc,))
    # re-ingest file.md with new content: its archived chunks must not come back next to the new ones
    assert conn.execute("SELECT action FROM document_upsert('default', 'file.md', 'hash-2', 'text')").fetchone() \
        == ("replaced",)
    conn.commit()
    rows = conn.execute("SELECT * FROM memory_restore(ARRAY[%s, %s, %s]::bigint[])", (c0, c1, other)).fetchall()
    assert rows == [
        (c0, doc, False, f"document {doc} changed since archiving (re-ingested); its current chunks are live"),
        (c1, doc, False, f"document {doc} changed since archiving (re-ingested); its current chunks are live"),
        (other, other_doc, False, f"document {other_doc} no longer exists"),
    ]
    assert count(conn, "archive") == 3 and count(conn, "memories") == 0


def test_restore_reports_a_taken_chunk_slot(conn):
    doc, (c0,) = add_document(conn, "a.md", ["november chunk"])
    conn.execute("SELECT memory_tag(memory_id => %s, importance => 0)", (c0,))
    forget(conn, dry_run=False)
    conn.execute("INSERT INTO memsql.memories (namespace, document_id, chunk_index, content, content_hash, knowledge_type)"
                 " VALUES ('default', %s, 0, 'oscar', 'h', 'note')", (doc,))
    rows = conn.execute("SELECT restored, reason FROM memory_restore(ARRAY[%s]::bigint[])", (c0,)).fetchall()
    assert rows == [(False, f"chunk 0 of document {doc} is taken")]


def test_set_embeddings_validates(conn):
    m = add(conn, "papa")
    conn.commit()
    cases = [
        ("ARRAY[%s]::bigint[]", "ARRAY[]::vector[]", (m,), "MS002"),
        ("ARRAY[%s]::bigint[]", "ARRAY['[1,2,3]']::vector[]", (m,), "MS005"),
        ("ARRAY[%s]::bigint[]", "ARRAY[%s]::vector[]", (m, np.zeros(DIM, dtype=np.float32)), "MS005"),   # zero: no direction
        ("ARRAY[%s, %s]::bigint[]", "ARRAY[%s, %s]::vector[]", (m, m, unit((0, 1.0)), unit((1, 1.0))), "MS002"),
    ]
    for ids_sql, embs_sql, params, state in cases:
        err = sqlstate_of(conn, f"SELECT memory_set_embeddings('default', {ids_sql}, {embs_sql})", params)
        assert err.sqlstate == state and err.diag.message_hint
    # an id that does not exist (or lives in another namespace) is not counted
    assert conn.execute("SELECT memory_set_embeddings('other', ARRAY[%s]::bigint[], ARRAY[%s]::vector[])",
                        (m, unit((0, 1.0)))).fetchone() == (0,)


def test_pending_embeddings_filters_by_namespace_in_id_order(conn):
    a = add(conn, "quebec", namespace="x")
    b = add(conn, "romeo", namespace="y")
    add(conn, "sierra", unit((0, 1.0)), namespace="x")
    c = add(conn, "tango", namespace="x")
    assert conn.execute("SELECT memory_id FROM memory_pending_embeddings()").fetchall() == [(a,), (b,), (c,)]
    assert conn.execute("SELECT memory_id FROM memory_pending_embeddings('x', 1)").fetchall() == [(a,)]
    assert conn.execute("SELECT memory_id FROM memory_pending_embeddings(namespace => 'x')").fetchall() == [(a,), (c,)]


# ---------------------------------------------------------------------------------------------
# memory_tag


def test_tag_changes_exactly_the_target_and_keeps_embeddings(conn):
    m1 = add(conn, "uniform one", unit((0, 1.0)), tags=["a"])
    m2 = add(conn, "uniform two", unit((1, 1.0)), tags=["a"])
    before = dict(conn.execute("SELECT id, embedding::text FROM memsql.memories").fetchall())
    assert conn.execute("SELECT memory_tag(%s, importance => 0.9, add_tags => ARRAY['b', 'a', 'b'],"
                        " knowledge_type => 'paper')", (m1,)).fetchone() == (1,)
    rows = {r[0]: r[1:] for r in conn.execute(
        "SELECT id, importance, knowledge_type, tags, embedding::text FROM memsql.memories")}
    assert rows[m1] == (pytest.approx(0.9), "paper", ["a", "b"], before[m1])
    assert rows[m2] == (None, "note", ["a"], before[m2])
    # the same change again changes nothing
    assert conn.execute("SELECT memory_tag(%s, importance => 0.9, add_tags => ARRAY['b'])", (m1,)).fetchone() == (0,)
    assert conn.execute("SELECT memory_tag(%s, remove_tags => ARRAY['a'], clear_importance => true)",
                        (m1,)).fetchone() == (1,)
    assert conn.execute("SELECT importance, tags FROM memsql.memories WHERE id = %s", (m1,)).fetchone() == (None, ["b"])
    assert conn.execute("SELECT memory_tag(%s, tags => ARRAY['x', 'y'], remove_tags => ARRAY['y'])",
                        (m2,)).fetchone() == (1,)
    assert conn.execute("SELECT tags FROM memsql.memories WHERE id = %s", (m2,)).fetchone() == (["x"],)


def test_tag_a_document_changes_its_row_and_all_its_memories(conn):
    doc, ids = add_document(conn, "d.md", ["victor one", "victor two", "victor three"])
    other = add(conn, "whiskey")
    assert conn.execute("SELECT memory_tag(document_id => %s, knowledge_type => 'paper', tags => ARRAY['t'])",
                        (doc,)).fetchone() == (3,)
    assert conn.execute("SELECT knowledge_type, tags FROM memsql.documents WHERE id = %s", (doc,)).fetchone() \
        == ("paper", ["t"])
    assert conn.execute("SELECT id FROM memsql.memories WHERE knowledge_type = 'paper' ORDER BY id").fetchall() \
        == [(i,) for i in ids]
    assert conn.execute("SELECT knowledge_type, tags FROM memsql.memories WHERE id = %s", (other,)).fetchone() \
        == ("note", [])


@pytest.mark.parametrize("args, state", [
    ("memory_id => 1, document_id => 1", "MS002"),
    ("importance => 0.5", "MS002"),
    ("memory_id => {m}, importance => 1.5", "MS002"),
    ("memory_id => {m}, importance => 'NaN'", "MS002"),
    ("memory_id => {m}, importance => 0.5, clear_importance => true", "MS002"),
    ("memory_id => {m}, add_tags => ARRAY['']", "MS002"),
    ("memory_id => {m}, knowledge_type => 'bogus'", "MS003"),
    ("memory_id => 999999", "MS004"),
    ("memory_id => {m}, namespace => 'elsewhere'", "MS004"),
    ("document_id => 999999, tags => ARRAY['x']", "MS004"),
])
def test_tag_errors(conn, args, state):
    m = add(conn, "xray", commit=True)
    err = sqlstate_of(conn, "SELECT memory_tag(" + args.format(m=m) + ")")
    assert err.sqlstate == state and err.diag.message_hint


# ---------------------------------------------------------------------------------------------
# find_by_tag, memory_neighbors, memory_duplicates


def test_find_by_tag_any_and_all_newest_first(conn):
    a = add(conn, "yankee a", tags=["x"], commit=True)
    b = add(conn, "yankee b", tags=["x", "y"], commit=True)
    c = add(conn, "yankee c", tags=["y"], commit=True)
    add(conn, "yankee d", tags=["x"], namespace="other", commit=True)
    rows = conn.execute("SELECT memory_id, tags FROM find_by_tag(ARRAY['x', 'y'])").fetchall()
    assert rows == [(c, ["y"]), (b, ["x", "y"]), (a, ["x"])]
    assert conn.execute("SELECT memory_id FROM find_by_tag(ARRAY['x', 'y'], match_all => true)").fetchall() == [(b,)]
    assert conn.execute("SELECT memory_id FROM find_by_tag(ARRAY['x'], k => 1)").fetchall() == [(b,)]
    assert sqlstate_of(conn, "SELECT * FROM find_by_tag(ARRAY[]::text[])").sqlstate == "MS002"


def test_neighbors_window(conn):
    doc, ids = add_document(conn, "long.md", [f"zulu chunk {i}" for i in range(5)])

    def window(mid, before=1, after=1):
        return conn.execute("SELECT memory_id, chunk_index, is_target FROM memory_neighbors(%s, before => %s,"
                            " after => %s)", (mid, before, after)).fetchall()

    assert window(ids[2]) == [(ids[1], 1, False), (ids[2], 2, True), (ids[3], 3, False)]
    assert window(ids[2], 2, 0) == [(ids[0], 0, False), (ids[1], 1, False), (ids[2], 2, True)]
    assert window(ids[0], 3, 1) == [(ids[0], 0, True), (ids[1], 1, False)]
    assert window(ids[4], 0, 5) == [(ids[4], 4, True)]
    # an archived chunk is skipped: the window counts live chunks
    conn.execute("SELECT memory_tag(%s, importance => 0)", (ids[1],))
    forget(conn, dry_run=False)
    assert window(ids[2]) == [(ids[0], 0, False), (ids[2], 2, True), (ids[3], 3, False)]
    assert sqlstate_of(conn, "SELECT * FROM memory_neighbors(999999)").sqlstate == "MS004"
    assert sqlstate_of(conn, "SELECT * FROM memory_neighbors(1, before => -1)").sqlstate == "MS002"


def test_duplicates_exact_and_near(conn):
    e = unit((7, 1.0))
    x1 = add(conn, "Hello   World", e)
    x2 = add(conn, "hello world", e)
    x3 = add(conn, " HELLO\tworld\n", None)
    n1 = add(conn, "cache uses redis", unit((0, 1.0)))
    n2 = add(conn, "the cache is redis", unit((0, 0.98), (1, math.sqrt(1 - 0.98 ** 2))))
    add(conn, "unrelated", unit((2, 1.0)))
    rows = conn.execute("SELECT * FROM memory_duplicates()").fetchall()
    assert [(r[0], r[1], r[3]) for r in rows] == [(x2, x1, "exact"), (x3, x1, "exact"), (n2, n1, "near")]
    assert rows[0][2] == 1.0 and rows[1][2] == 1.0
    assert rows[2][2] == pytest.approx(0.98, abs=1e-6)
    assert [r[0] for r in conn.execute("SELECT * FROM memory_duplicates(similarity => 0.99)")] == [x2, x3]
    assert count(conn, "memories") == 6  # a report only
    assert sqlstate_of(conn, "SELECT * FROM memory_duplicates(similarity => 0)").sqlstate == "MS002"


# ---------------------------------------------------------------------------------------------
# memory_health, memory_archive_stats, comments


def health(conn, namespace=None):
    return {r[0]: r[1:] for r in conn.execute('SELECT "check", ok, value, hint FROM memory_health(%s)', (namespace,))}


def test_health_reports_backlog_and_orphans(conn):
    alpha = add(conn, "alpha with vector", unit((0, 1.0)))
    h = health(conn)
    assert list(h) == ["memories_without_embedding", "memories_without_windows", "orphan_documents",
                       "embedding_model", "embedding_dimension", "invalid_indexes", "bm25_statistics"]
    # an embedded memory waits for its window embeddings (a worker computes them)
    assert h["memories_without_windows"][:2] == (False, "1")
    assert health(conn, "n")["memories_without_windows"][:2] == (True, "0")
    conn.execute("SELECT memory_set_windows(%s, ARRAY[%s]::bigint[], ARRAY[0], '{}'::vector[])", (NS, alpha))
    h = health(conn)
    assert all(v[0] for v in h.values()), h
    assert h["embedding_dimension"][1] == "settings 384, column 384"
    assert h["embedding_model"][1] == "all-MiniLM-L6-v2"
    assert h["invalid_indexes"][1] == "none" and h["bm25_statistics"][1] == "exact"

    add(conn, "bravo without vector", namespace="n")
    conn.execute("SELECT * FROM document_upsert('n', 'empty.md', 'h', 'text')")
    archived = add(conn, "charlie archived", importance=0.0, namespace="n")
    forget(conn, namespace="n", dry_run=False)
    h = health(conn)
    assert h["memories_without_embedding"][:2] == (False, "1")
    assert h["orphan_documents"][:2] == (False, "1")  # empty.md; the archived memory's document is no orphan
    assert all(v[2] for v in h.values())
    assert health(conn, "default")["memories_without_embedding"][:2] == (True, "0")
    assert conn.execute("SELECT archived FROM memory_archive_stats WHERE namespace = 'n'").fetchone() == (1,)
    assert archived


def test_every_memory_axis_object_has_a_comment(conn):
    names = ["memory_tag", "memory_forget", "memory_restore", "memory_pending_embeddings", "memory_set_embeddings",
             "find_by_tag", "memory_neighbors", "memory_duplicates", "memory_health", "tags_edit", "check_tag_list",
             "normalized_content_hash"]
    rows = conn.execute(
        "SELECT p.proname, obj_description(p.oid, 'pg_proc') FROM pg_proc p"
        " WHERE p.pronamespace = 'memsql'::regnamespace AND p.proname = ANY(%s)", (names,)).fetchall()
    assert sorted(r[0] for r in rows) == sorted(names)
    for name, comment in rows:
        assert comment and "Source: sql/functions/" in comment, name
        assert comment.isascii()
    assert conn.execute("SELECT obj_description('memsql.memory_archive_stats'::regclass, 'pg_class')").fetchone()[0]
    for t in ("pending_embedding", "tagged_memory", "memory_neighbor", "duplicate_pair"):
        assert conn.execute("SELECT obj_description(%s::regtype, 'pg_type')", (f"memsql.{t}",)).fetchone()[0]


def test_memory_axis_reorders_equally_relevant_memories_in_a_predicted_order(conn):
    """Four memories equally relevant to 'apple' (same BM25): the axis alone orders them."""
    ids = {}
    ids["old_news"] = conn.execute("SELECT memory_add('apple pie recipe one', knowledge_type => 'news', "
                                   "source_date => now() - interval '42 days')").fetchone()[0]
    ids["principle"] = conn.execute("SELECT memory_add('apple pie recipe two', knowledge_type => 'principle', "
                                    "source_date => now() - interval '900 days')").fetchone()[0]
    ids["used_note"] = conn.execute("SELECT memory_add('apple pie recipe six')").fetchone()[0]
    ids["unimportant"] = conn.execute("SELECT memory_add('apple pie recipe ten', importance => 0.1)").fetchone()[0]
    conn.execute("INSERT INTO memsql.memory_access (namespace, memory_id, access_count) VALUES ('default', %s, 10)",
                 (ids["used_note"],))
    conn.commit()
    rows = conn.execute("SELECT memory_id, fusion_score, decay_factor, frequency_factor, score FROM memory_search("
                        "'apple', NULL, touch => false, priority_limit => 0)").fetchall()
    # news at two half-lives: (1 - 0.4) + 0.4 * 0.25 = 0.7 (time_weight 0.4); principle: no decay;
    # used note: 1 + 0.1 ln 11
    assert [r[0] for r in rows] == [ids["used_note"], ids["principle"], ids["old_news"]]  # unimportant is cut
    by_id = {r[0]: r for r in rows}
    assert all(r[1] == pytest.approx(1.0) for r in rows)
    assert by_id[ids["old_news"]][2] == pytest.approx(0.7, abs=1e-4)
    assert by_id[ids["principle"]][2] == pytest.approx(1.0)
    assert by_id[ids["used_note"]][3] == pytest.approx(1 + 0.1 * math.log(11))
    plain = conn.execute("SELECT memory_id FROM memory_search('apple', NULL, touch => false, priority_limit => 0, "
                         "memory_rerank => false)").fetchall()
    assert len(plain) == 4  # without the axis nothing is cut and the tie breaks by id
    assert [r[0] for r in plain] == sorted(ids.values())


def test_stats_count_archived_memories_and_index_sizes(conn):
    conn.execute("SELECT memory_add('old status', knowledge_type => 'news', source_date => now() - interval '400 days')")
    conn.execute("SELECT memory_add('fresh status', knowledge_type => 'news')")
    conn.execute("SELECT * FROM memory_forget(dry_run => false)")
    conn.commit()
    rows = conn.execute("SELECT knowledge_type, memories, archived FROM memory_stats").fetchall()
    assert rows == [("news", 1, 1)]
    idx = dict(conn.execute("SELECT index_name, method FROM memsql.memory_index_stats").fetchall())
    assert idx["memories_embedding_hnsw"] == "hnsw" and idx["memories_tsv_gin"] == "gin"


@pytest.mark.parametrize("given", [0.7, 0.9, 0.3])
def test_importance_is_compared_as_stored(conn, given):
    """importance is real: 0.7 stored is 0.699999988 as a double. A memory given the threshold itself is at the
    threshold: a priority memory at 0.7 (and the partial index agrees), kept by a cutoff equal to it, not forgotten
    as 'unimportant' by it."""
    mid = conn.execute("SELECT memory_add('The boiler service is due every October', namespace => 'prec', "
                       "importance => %s::real)", (given,)).fetchone()[0]
    conn.execute("SELECT memory_add('The boiler warranty ends in 2028', namespace => 'prec', importance => 1.0)")
    conn.commit()
    assert conn.execute("SELECT memsql.is_priority('note', %s::real)", (given,)).fetchone()[0] is (given >= 0.7)
    found = [r[0] for r in conn.execute("SELECT memory_id FROM memory_search('boiler', '{}', namespace => 'prec', "
                                        "importance_threshold => %s, touch => false)", (given,))]
    assert mid in found
    assert not conn.execute("SELECT memory_id FROM memory_forget('prec', importance_threshold => %s) "
                            "WHERE memory_id = %s", (given, mid)).fetchall()
    assert conn.execute("SELECT memsql.memories_below_cutoff('prec', %s)", (given,)).fetchone()[0] == 0
    conn.execute("SET enable_seqscan = off")   # the partial index memories_priority holds it too
    in_index = conn.execute("SELECT count(*) FROM memsql.memories m WHERE m.namespace = 'prec' "
                            "AND memsql.is_priority(m.knowledge_type, m.importance) AND m.id = %s", (mid,)).fetchone()[0]
    conn.rollback()
    assert in_index == (1 if given >= 0.7 else 0)


def test_forget_refuses_unknown_keep_types_and_unfinite_dates_are_refused_at_the_door(conn):
    conn.execute("SELECT memory_add('User: my grandmother''s birthday is on 3 May', namespace => 'chat', "
                 "knowledge_type => 'conversation', source_date => '2020-01-01')")
    conn.commit()
    assert conn.execute("SELECT count(*) FROM memory_forget('chat')").fetchone()[0] == 0   # kept by default
    for typo in ("{conversations}", "{Conversation}"):
        err = sqlstate_of(conn, "SELECT * FROM memory_forget('chat', keep_types => %s)", (typo,))
        assert err.sqlstate == "MS003" and "Known types:" in err.diag.message_hint, err.diag.message_primary
    assert conn.execute("SELECT count(*) FROM memory_forget('chat', keep_types => '{}')").fetchone()[0] == 1
    conn.rollback()
    for value in ("infinity", "-infinity"):
        err = sqlstate_of(conn, "SELECT memory_add('zebras', namespace => 'inf', source_date => %s)", (value,))
        assert err.sqlstate == "MS002" and "source_date must be a finite time" in err.diag.message_primary
        mid = conn.execute("SELECT memory_add('zebras again', namespace => 'inf')").fetchone()[0]
        conn.commit()
        err = sqlstate_of(conn, "SELECT memory_update(%s, 'zebras, later', namespace => 'inf', source_date => %s)",
                          (mid, value))
        assert err.sqlstate == "MS002" and "source_date must be a finite time" in err.diag.message_primary
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = 'inf' AND "
                        "NOT isfinite(source_date)").fetchone()[0] == 0


def test_the_cutoff_count_of_an_empty_result_counts_only_what_the_other_filters_keep(conn):
    conn.execute("SELECT memory_add('low and tagged', namespace => 'cut', importance => 0.1::real, tags => '{a}')")
    conn.execute("SELECT memory_add('low untagged', namespace => 'cut', importance => 0.1::real, topics => '{t}')")
    conn.execute("SELECT memory_add('kept and tagged', namespace => 'cut', tags => '{b}')")
    conn.commit()
    count = "SELECT memsql.memories_below_cutoff('cut', 0.3, %s, %s, %s)"
    assert conn.execute(count, (None, None, None)).fetchone()[0] == 2
    assert conn.execute(count, (None, ["a"], None)).fetchone()[0] == 1
    assert conn.execute(count, (None, ["b"], None)).fetchone()[0] == 0
    assert conn.execute(count, (None, None, ["t"])).fetchone()[0] == 1
    assert conn.execute(count, (["note"], ["a"], None)).fetchone()[0] == 1
    assert conn.execute(count, (["news"], None, None)).fetchone()[0] == 0


def test_an_empty_result_under_filters_no_memory_passes_says_so_and_a_faded_score_never_reads_equal(conn):
    notices = []
    conn.add_notice_handler(lambda d: notices.append((d.message_primary, d.message_hint)))
    conn.execute("SELECT memory_add('The pantry shelf holds rice and lentils.', namespace => 'fil', tags => '{food}')")
    conn.commit()
    rows = conn.execute("SELECT * FROM memory_search('rice', '{}'::vector[], namespace => 'fil', "
                        "tags => '{nosuchtag}', knowledge_types => '{note}')").fetchall()
    assert rows == [] and ("memory_search: no rows; no memory of namespace 'fil' has knowledge type note together "
                           "with tag nosuchtag", "Drop or change a filter (tags and topics: any of those given).") \
        in notices, notices
    notices.clear()
    assert conn.execute("SELECT count(*) FROM memory_search('rice', '{}'::vector[], namespace => 'fil', "
                        "tags => '{food}')").fetchone()[0] == 1 and not any("no rows" in n for n, _ in notices)
    # a tag some memory has and a query none matches: no rows, and no word about the filter
    assert conn.execute("SELECT count(*) FROM memory_search('zebra', '{}'::vector[], namespace => 'fil', "
                        "tags => '{food}')").fetchone()[0] == 0 and not any("has tag" in n for n, _ in notices)
    # memories with topics: the filter's own values are what is checked (not each memory's tags and topics)
    conn.execute("SELECT memory_add('The freezer holds peas.', namespace => 'fil', tags => '{cold}', "
                 "topics => '{kitchen}')")
    conn.commit()
    notices.clear()
    conn.execute("SELECT * FROM memory_search('peas', '{}'::vector[], namespace => 'fil', tags => '{nosuchtag}')")
    assert ("memory_search: no rows; no memory of namespace 'fil' has tag nosuchtag",
            "Drop or change a filter (tags and topics: any of those given).") in notices, notices
    # a score just under the threshold is cut, not rounded up to it
    conn.execute("SELECT memory_add('Old news about the pantry.', namespace => 'fil', knowledge_type => 'news', "
                 "source_date => now() - interval '1 minute')")
    conn.commit()
    (reason,) = conn.execute("SELECT reason FROM memory_forget('fil', score_threshold => 1, keep_types => '{}') "
                             "WHERE reason LIKE 'faded%'").fetchone()
    shown = re.match(r"faded: score ([0-9.]+) < 1 ", reason)
    assert shown and float(shown.group(1)) < 1, reason
