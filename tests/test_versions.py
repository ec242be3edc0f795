"""Versions: memory_update, memory_history, memory_search include_superseded / as_of,
document_revise (re-ingest keeps unchanged chunks) and forgetting of superseded chains. SQL, exact rows.

Each step that must be a distinct instant commits: created_at and valid_to are the writing transaction's now().
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest

from test_memory_axis import NS, add, count, forget, set_access, unit

OLD = "The project budget is 30k euros."
NEW = "The project budget is 45k euros."


def search(conn, query, embs=None, **kw):
    """(memory_id, superseded_by, valid_to is set) of memory_search, best first; ties by id (no memory axis)."""
    opts = "".join(f", {k} => %({k})s" for k in kw)
    return [(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT memory_id, superseded_by, valid_to IS NOT NULL FROM memory_search(%(q)s, %(e)s::vector[], "
        "memory_rerank => false, touch => false" + opts + ")", {"q": query, "e": embs, **kw}).fetchall()]


def now(conn):
    t = conn.execute("SELECT clock_timestamp()").fetchone()[0]
    conn.commit()
    return t


def created(conn, memory_id):
    return conn.execute("SELECT created_at FROM memsql.memories WHERE id = %s", (memory_id,)).fetchone()[0]


def history(conn, memory_id, namespace=NS):
    return conn.execute("SELECT * FROM memory_history(%s, %s)", (memory_id, namespace)).fetchall()


@pytest.fixture
def updated(conn):
    """OLD written, then updated to NEW: (old id, new id, an instant between, an instant after)."""
    old = add(conn, OLD, unit((0, 1.0)), commit=True)
    between = now(conn)
    new = conn.execute("SELECT memory_update(%s, %s, %s)", (old, NEW, unit((0, 1.0), (1, 0.2)))).fetchone()[0]
    conn.commit()
    after = now(conn)
    return old, new, between, after


def test_update_writes_a_version_and_closes_the_old_one(conn, updated):
    old, new, _, _ = updated
    assert new != old
    rows = conn.execute("SELECT id, chunk_index, content, valid_to IS NULL, superseded_by, document_id"
                        " FROM memsql.memories ORDER BY id").fetchall()
    doc = rows[0][5]
    assert rows == [(old, 0, OLD, False, new, doc), (new, 0, NEW, True, None, doc)]
    # the old version ends exactly where the new one starts
    assert conn.execute("SELECT valid_to FROM memsql.memories WHERE id = %s", (old,)).fetchone()[0] \
        == created(conn, new)
    # memory_add of the new text finds the new version; of the superseded text too (it says so): no new memory that
    # would outrank the correction
    assert add(conn, NEW) == new
    notices = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    assert add(conn, OLD) == new
    assert notices == [
        f"memory_add: this text is memory {old} superseded by memory {new}; returning the current version {new}"]
    assert conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0] == 2


def test_search_current_as_of_and_include_superseded(conn, updated):
    old, new, between, after = updated
    q = [unit((0, 1.0))]
    # default: current versions only, in every arm (lexical only, dense only, hybrid)
    assert search(conn, "project budget") == [(new, None, False)]
    assert search(conn, "", q) == [(new, None, False)]
    assert search(conn, "project budget", q) == [(new, None, False)]
    # as of an instant before the update: the old version, marked as superseded since
    assert search(conn, "project budget", q, as_of=between) == [(old, new, True)]
    assert search(conn, "", q, as_of=between) == [(old, new, True)]
    assert search(conn, "project budget", as_of=between) == [(old, new, True)]
    # as of an instant after: the new one
    assert search(conn, "project budget", q, as_of=after) == [(new, None, False)]
    # before anything was written: nothing
    assert search(conn, "project budget", q, as_of=created(conn, old) - timedelta(seconds=1)) == []
    # every version, with its marker: equal BM25 (tie by id); dense: the old version is nearer to q
    assert search(conn, "project budget", include_superseded=True) == [(old, new, True), (new, None, False)]
    assert search(conn, "", q, include_superseded=True) == [(old, new, True), (new, None, False)]
    # include_superseded with as_of: every version written by then
    assert search(conn, "project budget", include_superseded=True, as_of=between) == [(old, new, True)]
    assert search(conn, "project budget", include_superseded=True, as_of=after) == [(old, new, True), (new, None, False)]


def test_priority_arm_does_not_bring_back_a_superseded_principle(conn):
    old = add(conn, "Deploys freeze on Fridays.", unit((2, 1.0)), knowledge_type="principle", commit=True)
    new = conn.execute("SELECT memory_update(%s, 'Deploys freeze on Thursdays and Fridays.')", (old,)).fetchone()[0]
    conn.commit()
    rows = conn.execute("SELECT memory_id, priority_rank FROM memory_search('deploys freeze', "
                        "ARRAY[%s]::vector[], memory_rerank => false, touch => false)", (unit((2, 1.0)),)).fetchall()
    assert rows == [(new, 1)]
    # the new version has no embedding yet: the lexical arm finds it, the dense arm cannot
    assert conn.execute("SELECT embedding IS NULL FROM memsql.memories WHERE id = %s", (new,)).fetchone() == (True,)


def test_history_order_from_any_version(conn, updated):
    old, new, _, _ = updated
    newest = conn.execute("SELECT memory_update(%s, 'The project budget is 50k euros.')", (new,)).fetchone()[0]
    conn.commit()
    t = {i: created(conn, i) for i in (old, new, newest)}
    doc = conn.execute("SELECT document_id FROM memsql.memories WHERE id = %s", (old,)).fetchone()[0]
    expected = [
        (1, old, doc, 0, OLD, t[old], t[new], new, False, False),
        (2, new, doc, 0, NEW, t[new], t[newest], newest, False, False),
        (3, newest, doc, 0, "The project budget is 50k euros.", t[newest], None, None, True, False),
    ]
    assert history(conn, old) == expected
    assert history(conn, new) == expected
    assert history(conn, newest) == expected
    lone = add(conn, "a memory never updated")
    assert [r[:2] + r[8:] for r in history(conn, lone)] == [(1, lone, True, False)]


def test_update_errors(conn, updated):
    old, new, _, _ = updated
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT memory_update(%s, 'again')", (old,))
    assert e.value.sqlstate == "MS002" and f"superseded by {new}" in str(e.value)
    conn.rollback()
    for args, state in [((999999, "x"), "MS004"), ((new, "  "), "MS002"), ((None, "x"), "MS002")]:
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT memory_update(%s, %s)", args)
        assert e.value.sqlstate == state
        conn.rollback()
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT memory_update(%s, 'x', importance => 2)", (new,))
    assert e.value.sqlstate == "MS002"
    conn.rollback()
    # same text: no new version
    assert conn.execute("SELECT memory_update(%s, %s)", (new, "  " + NEW + "\n")).fetchone()[0] == new
    assert count(conn, "memories") == 2
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT * FROM memory_history(999999)")
    assert e.value.sqlstate == "MS004"
    conn.rollback()
    with pytest.raises(psycopg.Error) as e:
        conn.execute("SELECT * FROM memory_search('x', include_superseded => NULL)")
    assert e.value.sqlstate == "MS002"
    conn.rollback()


def revise(conn, doc, texts, link=True):
    return conn.execute(
        "SELECT chunk_index, memory_id, kept FROM document_revise(%s, %s, "
        "ARRAY(SELECT encode(sha256(convert_to(t, 'UTF8')), 'hex') FROM unnest(%s::text[]) t), %s)",
        (NS, doc, texts, link)).fetchall()


def write_document(conn, key, texts, doc_hash):
    """The ingest protocol in SQL: document_upsert, document_revise when replaced, then the new chunks."""
    doc, action = conn.execute("SELECT document_id, action FROM document_upsert(%s, %s, %s, 'markdown')",
                               (NS, key, doc_hash)).fetchone()
    if action == "inserted":
        plan = [(i, None, False) for i in range(len(texts))]
    else:
        plan = revise(conn, doc, texts)
    for i, mid, kept in plan:
        if kept:
            continue
        conn.execute(
            "INSERT INTO memsql.memories (namespace, id, document_id, chunk_index, content, content_hash, knowledge_type)"
            " VALUES (%s, coalesce(%s, nextval(pg_get_serial_sequence('memsql.memories', 'id'))), %s, %s, %s,"
            " encode(sha256(convert_to(%s, 'UTF8')), 'hex'), 'note')",
            (NS, mid, doc, i, texts[i], texts[i]))
    conn.commit()
    return doc, plan


def current(conn, doc):
    return conn.execute("SELECT chunk_index, id, content FROM memsql.memories WHERE document_id = %s"
                        " AND valid_to IS NULL ORDER BY chunk_index", (doc,)).fetchall()


def test_revise_keeps_unchanged_chunks_and_supersedes_changed_ones(conn):
    v1 = ["alpha intro", "bravo budget 30k", "charlie outro"]
    doc, _ = write_document(conn, "plan.md", v1, "h1")
    (_, a, _), (_, b, _), (_, c, _) = current(conn, doc)
    set_access(conn, a, 7)
    conn.execute("SELECT memory_tag(memory_id => %s, importance => 0.9)", (c,))
    conn.commit()
    # a new paragraph in front, the budget changed: alpha and charlie move, keep ids; bravo is superseded
    v2 = ["zulu new first", "alpha intro", "bravo budget 45k", "charlie outro"]
    doc2, plan = write_document(conn, "plan.md", v2, "h2")
    assert doc2 == doc
    new_ids = {i: mid for i, mid, kept in plan if not kept}
    assert plan == [(0, new_ids[0], False), (1, a, True), (2, new_ids[2], False), (3, c, True)]
    assert current(conn, doc) == [(0, new_ids[0], "zulu new first"), (1, a, "alpha intro"),
                                  (2, new_ids[2], "bravo budget 45k"), (3, c, "charlie outro")]
    # bravo (old position 1) has no new chunk at position 1 (alpha is kept there): closed without a successor
    assert conn.execute("SELECT chunk_index, valid_to IS NOT NULL, superseded_by FROM memsql.memories WHERE id = %s",
                        (b,)).fetchone() == (1, True, None)
    # unchanged chunks keep access counts and importance
    assert conn.execute("SELECT access_count FROM memsql.memory_access WHERE memory_id = %s", (a,)).fetchone() == (7,)
    assert conn.execute("SELECT importance FROM memsql.memories WHERE id = %s", (c,)).fetchone() == (pytest.approx(0.9),)
    # a change in place is linked: position 2 changes again
    v3 = ["zulu new first", "alpha intro", "bravo budget 50k", "charlie outro"]
    _, plan3 = write_document(conn, "plan.md", v3, "h3")
    b3 = plan3[2][1]
    assert plan3 == [(0, new_ids[0], True), (1, a, True), (2, b3, False), (3, c, True)]
    assert [r[1] for r in history(conn, b3)] == [new_ids[2], b3]
    # "what did the plan say before v3": as_of the instant between v2 and v3
    assert search(conn, "bravo budget") == [(b3, None, False)]
    # the old texts stay searchable with history and keep their lexical statistics
    assert sorted(r[0] for r in search(conn, "bravo budget", include_superseded=True)) == sorted([b, new_ids[2], b3])
    assert conn.execute("SELECT df FROM memsql.term_stats WHERE lexeme = 'bravo'").fetchone() == (3,)


def test_revise_without_position_links_supersedes_nothing(conn):
    doc, _ = write_document(conn, "chat", ["turn one", "turn two"], "h1")
    (_, t1, _), (_, t2, _) = current(conn, doc)
    conn.execute("SELECT document_upsert(%s, 'chat', 'h2', 'claude_ai')", (NS,))
    plan = revise(conn, doc, ["turn one", "turn two, edited", "turn three"], link=False)
    assert [(i, kept) for i, _, kept in plan] == [(0, True), (1, False), (2, False)] and plan[0][1] == t1
    assert conn.execute("SELECT valid_to IS NOT NULL, superseded_by FROM memsql.memories WHERE id = %s",
                        (t2,)).fetchone() == (True, None)
    conn.rollback()


def age_version(conn, memory_id, created_days, ended_days):
    conn.execute("UPDATE memsql.memories SET created_at = now() - make_interval(days => %s),"
                 " valid_to = now() - make_interval(days => %s) WHERE id = %s", (created_days, ended_days, memory_id))


def test_forget_archives_whole_superseded_chains_first(conn):
    a = add(conn, "news: the launch is in May", knowledge_type="news", commit=True)
    b = conn.execute("SELECT memory_update(%s, 'news: the launch is in June')", (a,)).fetchone()[0]
    conn.commit()
    c = conn.execute("SELECT memory_update(%s, 'news: the launch is in July')", (b,)).fetchone()[0]
    conn.commit()
    x = add(conn, "news: the office moves", knowledge_type="news", commit=True)
    y = conn.execute("SELECT memory_update(%s, 'news: the office moves in autumn')", (x,)).fetchone()[0]
    conn.commit()
    # chain a -> b ended 30 and 25 days ago (half-life of news: 21 d): ripe; x ended 10 days ago: not yet
    age_version(conn, a, 60, 30)
    age_version(conn, b, 30, 25)
    conn.execute("UPDATE memsql.memories SET created_at = now() - interval '25 days' WHERE id = %s", (c,))
    age_version(conn, x, 20, 10)
    # an old current version (news, 200 days) fades by score: it comes after the superseded chain
    old_current = add(conn, "news: a faded current item", knowledge_type="news", age_days=200)
    conn.commit()
    rows = forget(conn)
    assert [(r[0], r[9].split(":")[0]) for r in rows] == [(a, "superseded"), (b, "superseded"),
                                                           (old_current, "faded")]
    assert rows[0][9] == "superseded: its chain of versions ended 25 d ago, past the half-life (21 d)"
    assert [r[0] for r in forget(conn, dry_run=False, max_rows=2)] == [a, b]
    # the archived versions stay in the history, marked archived
    assert [(r[1], r[8], r[9]) for r in history(conn, c)] == [(a, False, True), (b, False, True), (c, True, False)]
    assert {r[0] for r in search(conn, "launch", include_superseded=True)} == {c}
    # restored, a version comes back superseded, in its place in the chain
    assert conn.execute("SELECT restored FROM memory_restore(ARRAY[%s]::bigint[])", (b,)).fetchone() == (True,)
    conn.commit()
    assert conn.execute("SELECT valid_to IS NOT NULL, superseded_by FROM memsql.memories WHERE id = %s",
                        (b,)).fetchone() == (True, c)
    assert search(conn, "launch") == [(c, None, False)]
    assert y not in [r[0] for r in forget(conn)]


def section(word: str, n: int = 120) -> str:
    """A paragraph of about n words that no other section shares (its own chunk at 256 word pieces)."""
    return " ".join(f"{word}{i % 7} sentence about {word}" for i in range(n // 4)) + "."


def test_reingest_keeps_unchanged_chunk_ids(memory, conn, tmp_path):
    path = tmp_path / "plan.md"
    parts = {"intro": section("alpha"), "budget": section("bravo"), "outro": section("charlie")}
    write = lambda p: path.write_text("\n\n".join(f"# {h}\n\n{t}" for h, t in p.items()) + "\n")  # noqa: E731
    write(parts)
    assert memory.ingest([path]).inserted == 1
    before = conn.execute("SELECT chunk_index, id, content FROM memsql.memories ORDER BY chunk_index").fetchall()
    assert len(before) == 3  # one chunk per section
    ids = [r[1] for r in before]
    set_access(conn, ids[0], 4)
    conn.execute("SELECT memory_tag(memory_id => %s, importance => 0.8)", (ids[2],))
    conn.commit()
    parts["budget"] = section("delta")
    write(parts)
    summary = memory.ingest([path])
    assert (summary.replaced, summary.chunks, summary.kept) == (1, 1, 2), str(summary.as_dict())
    after = conn.execute("SELECT chunk_index, id, valid_to IS NULL, superseded_by FROM memsql.memories"
                         " ORDER BY id").fetchall()
    new_id = after[-1][1]
    assert after == [(0, ids[0], True, None), (1, ids[1], False, new_id), (2, ids[2], True, None),
                     (1, new_id, True, None)]
    assert conn.execute("SELECT access_count FROM memsql.memory_access WHERE memory_id = %s", (ids[0],)).fetchone() \
        == (4,)
    assert conn.execute("SELECT importance FROM memsql.memories WHERE id = %s", (ids[2],)).fetchone() \
        == (pytest.approx(0.8),)
    assert [r.memory_id for r in memory.history(ids[1])] == [ids[1], new_id]
    assert memory.search("bravo sentence", k=3, touch=False)[0].memory_id != ids[1]


def test_python_update_history_and_search(memory):
    old = memory.add("The team offsite is in Lisbon.")
    new = memory.update(old, "The team offsite moved to Porto.")
    assert [(v.version, v.memory_id, v.is_current) for v in memory.history(new)] == [(1, old, False), (2, new, True)]
    hits = memory.search("where is the team offsite", k=5, touch=False)
    assert [h.memory_id for h in hits] == [new] and hits[0].valid_to is None
    every = memory.search("where is the team offsite", k=5, touch=False, include_superseded=True)
    assert {(h.memory_id, h.superseded_by) for h in every} == {(old, new), (new, None)}
    then = memory.search("where is the team offsite", k=5, touch=False, as_of=memory.history(old)[0].valid_from)
    assert [(h.memory_id, h.superseded_by) for h in then] == [(old, new)]
