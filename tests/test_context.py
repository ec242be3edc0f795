"""memory_context (the budgeted pack a session starts with) and memory_get (full text by id), in SQL and Python."""

from __future__ import annotations

import json
import re

import psycopg

import pytest

from memsql.errors import InvalidArgument
from test_memory_axis import add


def _add_session(conn, namespace, session_id, turns, day):
    """A conversation document of a captured session (metadata session_id), one memory per turn."""
    doc = conn.execute(
        "SELECT document_id FROM memsql.document_upsert(%s, %s, %s, 'claude_code', %s, %s, 'conversation', %s, "
        "'{}', %s::jsonb)",
        (namespace, f"claude_code:{session_id}", f"h-{session_id}", f"/t/{session_id}.jsonl", f"session {session_id}",
         f"2026-11-{day:02d}T12:00:00Z", json.dumps({"session_id": session_id}))).fetchone()[0]
    ids = []
    for i, text in enumerate(turns):
        ids.append(conn.execute(
            "INSERT INTO memsql.memories (namespace, document_id, chunk_index, content, content_hash, knowledge_type,"
            " source_date, ts_config) VALUES (%s, %s, %s, %s, md5(%s), 'conversation', %s, 'english') RETURNING id",
            (namespace, doc, i, text, text, f"2026-11-{day:02d}T12:{i:02d}:00Z")).fetchone()[0])
    conn.commit()
    return ids


def _ids(text):
    return [int(x) for x in re.findall(r"\[#(\d+)\]", text)]


def test_context_sections_budget_and_ids(conn):
    p1 = conn.execute("SELECT memsql.memory_add('Every SQL function pins its search_path.', namespace => 'p', "
                      "knowledge_type => 'principle', importance => 0.9)").fetchone()[0]
    d1 = conn.execute("SELECT memsql.memory_add('We chose PostgreSQL over SQLite for the vector index.', "
                      "namespace => 'p', knowledge_type => 'decision')").fetchone()[0]
    n1 = conn.execute("SELECT memsql.memory_add('The kettle descaler lives under the sink.', namespace => 'p')"
                      ).fetchone()[0]
    n2 = conn.execute("SELECT memsql.memory_add('The HNSW index uses m 16 and ef_construction 64.', "
                      "namespace => 'p')").fetchone()[0]
    conn.commit()
    old = _add_session(conn, "p", "s-old", ["User: first old turn", "Assistant: old answer"], 1)
    last = _add_session(conn, "p", "s-last", ["User: how do we rotate the logs", "Assistant: with logrotate daily"],
                        2)
    current = _add_session(conn, "p", "s-now", ["User: current session turn"], 3)

    text = conn.execute("SELECT memsql.memory_context('p', query => 'HNSW index', query_embeddings => '{}', "
                        "session_id => 's-now')").fetchone()[0]
    assert len(text) <= 8000
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections == ["Principles and decisions", "Relevant to: HNSW index", "Last session: session s-last"]
    principles = text.split("## Principles and decisions\n")[1].split("\n## ")[0]
    assert _ids(principles) == [p1, d1]            # importance first, then newest
    relevant = text.split("## Relevant to: HNSW index\n")[1].split("\n## ")[0]
    assert _ids(relevant)[0] == n2 and n1 not in _ids(relevant)
    tail = text.split("## Last session: session s-last\n")[1]
    assert _ids(tail) == last                        # in order; the current session left out
    assert not set(_ids(text)) & set(current + old)
    assert len(_ids(text)) == len(set(_ids(text)))   # each memory once

    # the budget holds, whatever it is, and the smallest one still holds a line (the last one that fits, cut)
    for budget in (400, 450, 1000, 10000):
        small = conn.execute("SELECT memsql.memory_context('p', query => 'HNSW index', query_embeddings => '{}', "
                             "budget => %s)", (budget,)).fetchone()[0]
        assert len(small) <= budget
        assert _ids(small), (budget, small)
    cut = conn.execute("SELECT memsql.memory_context('p', query => 'HNSW index', query_embeddings => '{}', "
                       "knowledge_types => '{}', last_session => false, budget => 400)").fetchone()[0]
    assert _ids(cut)[0] == n2 and len(cut) <= 400
    # a budget that cannot hold the header and one line is refused, not an empty pack
    conn.rollback()
    with pytest.raises(psycopg.Error) as bad:
        conn.execute("SELECT memsql.memory_context('p', budget => 200)")
    assert bad.value.sqlstate == "MS002" and "400" in (bad.value.diag.message_hint or ""), bad.value.diag.message_hint
    conn.rollback()
    assert conn.execute("SELECT memsql.memory_context('empty-ns')").fetchone()[0] == ""


def test_context_budget_many_memories(conn):
    for i in range(120):
        conn.execute("SELECT memsql.memory_add(%s, namespace => 'big', knowledge_type => 'principle')",
                     (f"Rule {i}: " + "always measure before changing the planner settings " * 6,))
    conn.commit()
    text = conn.execute("SELECT memsql.memory_context('big', budget => 10000)").fetchone()[0]
    assert 3000 < len(text) <= 10000
    line = [ln for ln in text.splitlines() if ln.startswith("- [#")][0]
    assert line.endswith("...") and len(line.split(": ", 1)[1]) <= 300


@pytest.mark.parametrize("args, message", [
    ("budget => 10001", "budget must be between 400 and 10000"),
    ("budget => 10", "budget must be between 400 and 10000"),
    ("line_chars => 5", "line_chars must be between 40 and 2000"),
    ("importance_threshold => 1.5", "importance_threshold must be between 0 and 1"),
    ("importance_threshold => 'NaN'", "importance_threshold"),
    ("memory_rerank => NULL", "memory_rerank is NULL"),
])
def test_context_bad_arguments(conn, args, message):
    import psycopg

    with pytest.raises(psycopg.Error) as err:
        conn.execute(f"SELECT memsql.memory_context('p', {args})")
    assert err.value.sqlstate == "MS002" and message in str(err.value)
    conn.rollback()


def test_get_full_text_bounded(conn):
    long = "word " * 3000
    a = conn.execute("SELECT memsql.memory_add(%s, namespace => 'g')", (long,)).fetchone()[0]
    b = conn.execute("SELECT memsql.memory_add('short one', namespace => 'g')").fetchone()[0]
    conn.commit()
    rows = conn.execute("SELECT memory_id, chars, truncated, length(content) FROM memsql.memory_get(%s, 'g', 1000)",
                        ([b, a, 999999, b],)).fetchall()
    assert rows == [(b, 9, False, 9), (a, len(long.strip()), True, 1000)]
    import psycopg

    with pytest.raises(psycopg.Error) as err:   # none of the ids in that namespace: not found, not an empty answer
        conn.execute("SELECT count(*) FROM memsql.memory_get(%s, 'other')", ([a],))
    assert err.value.sqlstate == "MS004" and f"no memory {a} in namespace 'other'" in str(err.value)
    conn.rollback()
    for ids in (list(range(101)), [], [a, None]):
        with pytest.raises(psycopg.Error) as err:
            conn.execute("SELECT * FROM memsql.memory_get(%s::bigint[], 'g')", (ids,))
        assert err.value.sqlstate == "MS002"
        conn.rollback()
    # a superseded version and an archived memory come back too, marked
    c = conn.execute("SELECT memsql.memory_update(%s, 'short one, corrected', namespace => 'g')", (b,)).fetchone()[0]
    conn.commit()
    rows = conn.execute("SELECT memory_id, valid_to IS NOT NULL, superseded_by, archived FROM memsql.memory_get(%s, 'g')",
                        ([b, c],)).fetchall()
    assert rows == [(b, True, c, False), (c, False, None, False)]


def test_python_context_and_get(memory):
    pid = memory.add("Releases are cut from main on Tuesdays.", knowledge_type="decision")
    memory.add("The staging database is refreshed nightly from a masked dump.")
    text = memory.context(query="staging database refresh", budget=2000)
    assert pid in _ids(text) and len(text) <= 2000
    assert "## Relevant to: staging database refresh" in text
    got = memory.get([pid])
    assert [g.memory_id for g in got] == [pid] and got[0].content == "Releases are cut from main on Tuesdays."
    with pytest.raises(InvalidArgument):
        memory.context(budget=20000)
    assert "memory_context" in memory.statement("context", budget=500).render()


def test_async_context_and_get(dsn, embedder):
    import asyncio

    from memsql.aio import AsyncMemory

    async def main():
        async with AsyncMemory(dsn=dsn, embedder=embedder) as m:
            mid = await m.add("Deploys need two approvals.", knowledge_type="principle")
            return mid, await m.context(query_embeddings=[]), await m.get([mid])

    mid, text, got = asyncio.run(main())
    assert _ids(text) == [mid] and got[0].memory_id == mid


def test_principles_rank_by_importance_with_unset_in_the_middle_and_none_below_the_cutoff(conn):
    low = add(conn, "Decision: the archive bucket stays in eu-west.", namespace="imp", knowledge_type="decision",
              importance=0.1)
    unset = add(conn, "Principle: every migration is reversible.", namespace="imp", knowledge_type="principle")
    mid = add(conn, "Decision: staging refreshes nightly.", namespace="imp", knowledge_type="decision", importance=0.4)
    top = add(conn, "Principle: no deploy on Fridays.", namespace="imp", knowledge_type="principle", importance=0.9,
              commit=True)
    text = conn.execute("SELECT memsql.memory_context('imp', last_session => false)").fetchone()[0]
    assert _ids(text) == [top, unset, mid] and low not in _ids(text), text


def test_the_context_pack_leaves_out_what_the_configured_search_cutoff_leaves_out(dsn, embedder, conn):
    from memsql.client import Memory
    from memsql.config import load

    half = add(conn, "Decision: the billing cron runs at 02:00 UTC.", namespace="cut", knowledge_type="decision",
               importance=0.45)
    high = add(conn, "Principle: billing changes need a second reviewer.", namespace="cut",
               knowledge_type="principle", importance=0.9)
    note = add(conn, "The billing cron once ran twice after a daylight saving change.", namespace="cut",
               knowledge_type="note", importance=0.4, commit=True)
    sql = "SELECT memsql.memory_context('cut', 'billing cron', '{{}}'::vector[], last_session => false{})"
    assert set(_ids(conn.execute(sql.format("")).fetchone()[0])) == {half, high, note}   # cutoff 0.3
    assert _ids(conn.execute(sql.format(", importance_threshold => 0.5")).fetchone()[0]) == [high]
    assert set(_ids(conn.execute(sql.format(", memory_rerank => false, importance_threshold => 0.95")
                                 ).fetchone()[0])) == {half, high, note}   # no memory axis: no cutoff

    cfg = load(flags={"memory.scoring.importance_threshold": 0.5})
    with Memory(dsn=dsn, embedder=embedder, namespace="cut", config=cfg) as mem:   # what the hooks and CLI use
        assert _ids(mem.context(query="billing cron", query_embeddings=[], last_session=False)) == [high]
        assert set(_ids(mem.context(query="billing cron", query_embeddings=[], last_session=False,
                                    importance_threshold=0.3))) == {half, high, note}   # an argument wins
        assert "importance_threshold" in mem.statement("context").render()
