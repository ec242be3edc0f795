"""Conversation exports through the whole pipeline: summaries add up, attachments are searchable,
re-exports replace in one transaction, chunks keep speaker, conversation id and message time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from memsql.adapters.claude_ai import parse_claude_ai
from memsql.adapters.claude_code import parse_claude_code


def claude_export(messages, updated="2025-03-02T10:00:00Z", extra_conversations=()):
    conv = {
        "uuid": "conv-1", "name": "Warehouse planning", "created_at": "2025-03-01T09:00:00Z",
        "updated_at": updated, "chat_messages": messages,
    }
    return [conv, *extra_conversations]


def msg(uuid, sender, text, when, attachments=()):
    return {"uuid": uuid, "sender": sender, "text": text, "created_at": when,
            "attachments": list(attachments), "files": []}


BASE = [
    msg("m1", "human", "Can you summarise the attached site notes?", "2025-03-01T09:00:00Z",
        [{"file_name": "site-notes.txt", "extracted_content": "Loading dock B is closed on Fridays. "
                                                             "The warehouse door code is 4417."}]),
    msg("m2", "assistant", "The notes say dock B closes on Fridays.", "2025-03-01T09:01:00Z"),
]


@pytest.mark.parametrize("sample, adapter", [
    ("claude_ai/simonw_example.json", parse_claude_ai),
    ("claude_ai/simonw_artifacts.json", parse_claude_ai),
    ("claude_code/daaain_representative_messages.jsonl", parse_claude_code),
])
def test_real_exports_ingest_with_summaries_that_add_up(memory, shared_data, conn, sample, adapter):
    path = shared_data / "chat_exports" / sample
    report = adapter(path)
    summary = memory.ingest([path])
    assert summary.inserted == len(report.documents)
    assert summary.inserted + summary.empty + len(summary.failed) == \
        len(report.documents) + report.empty + len(report.failed)
    assert summary.skipped_blocks == report.skipped_blocks
    stored = conn.execute("SELECT count(*), count(DISTINCT document_id) FROM memsql.memories").fetchone()
    assert stored[0] == summary.chunks and stored[1] == summary.inserted
    kinds = {r[0] for r in conn.execute("SELECT knowledge_type FROM memsql.memories")}
    assert kinds == {"conversation"}


def test_fact_only_in_an_attachment_is_found(memory, tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(claude_export(BASE, extra_conversations=[
        {"uuid": "empty", "name": "nothing", "created_at": "2025-01-01T00:00:00Z",
         "updated_at": "2025-01-01T00:00:00Z", "chat_messages": []}])))
    summary = memory.ingest([path])
    assert (summary.inserted, summary.empty, len(summary.failed)) == (1, 1, 0)
    res = memory.search("what is the code for the warehouse door", touch=False)
    assert "4417" in res[0].content


def test_chunks_keep_speaker_conversation_and_message_time(memory, tmp_path, conn):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(claude_export(BASE)))
    memory.ingest([path])
    rows = conn.execute(
        "SELECT metadata, source_date FROM memsql.memories ORDER BY chunk_index").fetchall()
    meta, when = rows[0]
    parts = meta.get("parts", [meta])
    assert {p.get("speaker") for p in parts if p.get("kind") != "attachment"} == {"human", "assistant"}
    assert {p["conversation_id"] for p in parts} == {"conv-1"}
    assert when == datetime(2025, 3, 1, 9, 1, tzinfo=timezone.utc)  # latest message time in the chunk


def test_reexport_with_more_messages_replaces_without_duplicates(memory, tmp_path, conn):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(claude_export(BASE)))
    assert memory.ingest([path]).inserted == 1
    assert memory.ingest([path]).unchanged == 1
    more = BASE + [msg("m3", "human", "Also note the forklift battery is charged overnight.", "2025-03-02T09:59:00Z")]
    path.write_text(json.dumps(claude_export(more, updated="2025-03-02T11:00:00Z")))
    summary = memory.ingest([path])
    assert (summary.inserted, summary.replaced, summary.unchanged) == (0, 1, 0)
    assert conn.execute("SELECT count(*) FROM memsql.documents").fetchone()[0] == 1
    contents = " ".join(r[0] for r in conn.execute("SELECT content FROM memsql.memories WHERE valid_to IS NULL"))
    assert contents.count("door code is 4417") == 1 and "forklift" in contents
    # a chunk whose text grew is closed as history; a conversation links no successor (a later message supersedes
    # nothing by itself), and unchanged chunks keep their memories
    closed = conn.execute("SELECT content, superseded_by FROM memsql.memories WHERE valid_to IS NOT NULL").fetchall()
    assert all(sup is None and "forklift" not in c for c, sup in closed)
    assert summary.chunks + summary.kept == conn.execute(
        "SELECT count(*) FROM memsql.memories WHERE valid_to IS NULL").fetchone()[0]
    assert memory.search("forklift battery charging", touch=False)[0].content.count("forklift") == 1


def test_a_conversation_deleted_from_the_export_is_named_and_pruned_on_request(memory, tmp_path, conn, dsn):
    path = tmp_path / "conversations.json"
    other = {"uuid": "conv-2", "name": "Falcon database", "created_at": "2025-03-01T09:00:00Z",
             "updated_at": "2025-03-01T10:00:00Z",
             "chat_messages": [msg("f1", "human", "We picked PostgreSQL for the Falcon database.", "2025-03-01T09:00:00Z")]}
    path.write_text(json.dumps(claude_export(BASE, extra_conversations=[other])))
    assert memory.ingest([path]).inserted == 2
    path.write_text(json.dumps(claude_export(BASE)))   # the Falcon conversation deleted in the app
    named = f"{path.resolve()} (conversation 'Falcon database')"
    summary = memory.ingest([path])
    assert (summary.unchanged, summary.dropped, summary.missing) == (1, [(named, 1, False)], []), summary
    assert "Falcon" in memory.search("Falcon database", k=1, touch=False)[0].content   # listed, still searchable
    assert memory.ingest([path], prune=True, dry_run=True).dropped == [(named, 1, False)]
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    said = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", str(path), "--no-json"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert f"no longer in its export: {named} (1 memories)" in said.stdout and "--prune" in said.stdout, said
    assert memory.ingest([path], prune=True).dropped == [(named, 1, True)]
    assert not any("Falcon" in r.content for r in memory.search("Falcon database", k=3, touch=False))
    assert conn.execute("SELECT reason FROM memsql.archive").fetchall() == [("conversation no longer in its export",)]
    assert memory.ingest([path]).dropped == []   # said once
    newer = tmp_path / "newer"   # another export of the same run still holds the conversation: not dropped
    newer.mkdir()
    (newer / "conversations.json").write_text(json.dumps(claude_export(BASE, extra_conversations=[
        {**other, "uuid": "conv-4", "name": "Kept elsewhere"}])))
    memory.ingest([newer])
    (newer / "older.json").write_text(json.dumps(claude_export(BASE, extra_conversations=[
        {**other, "uuid": "conv-4", "name": "Kept elsewhere"}])))
    (newer / "conversations.json").write_text(json.dumps(claude_export(BASE)))
    assert memory.ingest([newer], prune=True).dropped == []
    broken = tmp_path / "broken.json"   # an export that breaks off is no evidence of what it no longer holds
    broken.write_text(json.dumps(claude_export(BASE, extra_conversations=[{**other, "uuid": "conv-3"}]))[:-40])
    memory.ingest([broken])
    assert memory.ingest([broken]).dropped == []


def test_a_hand_correction_stays_when_the_conversation_grows_and_yields_when_its_message_changes(memory, tmp_path,
                                                                                                   conn):
    """memory_update of a conversation turn, then the next export (or capture) of a grown conversation: the
    correction was closed and the export's old text written again as the current memory."""
    path = tmp_path / "conversations.json"
    story = " ".join(f"Morning routine step {i}: grind, tamp, pull and taste the shot." for i in range(12))
    turns = [msg("m1", "human", "My espresso machine is a Gaggia Classic. " + story, "2025-03-01T09:00:00Z"),
             msg("m2", "assistant", "Noted: a Gaggia Classic. " + story, "2025-03-01T09:01:00Z")]   # a chunk each
    path.write_text(json.dumps(claude_export(turns)))
    assert memory.ingest([path]).inserted == 1
    old = conn.execute("SELECT id FROM memsql.memories WHERE content LIKE '%Gaggia Classic%' AND valid_to IS NULL "
                       "AND content NOT LIKE '%Noted%'").fetchone()[0]
    fixed = memory.update(old, "User: My espresso machine is a Lelit Bianca V3. " + story)
    current = "SELECT id, content FROM memsql.memories WHERE valid_to IS NULL ORDER BY chunk_index"

    grown = turns + [msg("m3", "human", "I descale it every month.", "2025-03-02T09:59:00Z")]
    path.write_text(json.dumps(claude_export(grown, updated="2025-03-02T11:00:00Z")))
    summary = memory.ingest([path])
    assert (summary.replaced, summary.failed) == (1, [])
    rows = conn.execute(current).fetchall()
    assert fixed in [r[0] for r in rows] and not any("Gaggia" in c and "Noted" not in c for _, c in rows), rows
    assert any("descale" in c for _, c in rows)
    assert "Lelit" in memory.search("which espresso machine do I have", k=1, touch=False)[0].content
    assert conn.execute("SELECT metadata->'revision_of' FROM memsql.memories WHERE id = %s", (fixed,)).fetchone()[0] \
        == old

    # the version the source wrote forgotten (archived: a closed chain past its half-life), the conversation grows
    archived = conn.execute("SELECT memory_id FROM memory_forget('default', dry_run => false, "
                            "reference_time => now() + interval '400 days') WHERE reason LIKE 'superseded%%'").fetchall()
    conn.commit()
    assert (old,) in archived
    grown = grown + [msg("m4", "human", "The grinder is a Niche Zero.", "2025-03-02T10:30:00Z")]
    path.write_text(json.dumps(claude_export(grown, updated="2025-03-02T12:00:00Z")))
    assert memory.ingest([path]).replaced == 1
    assert fixed in [r[0] for r in conn.execute(current).fetchall()]
    # the source comes to say what the correction says, word for word: the same memory stays
    adopted = [msg("m1", "human", "My espresso machine is a Lelit Bianca V3. " + story, "2025-03-01T09:00:00Z"),
               *grown[1:]]
    path.write_text(json.dumps(claude_export(adopted, updated="2025-03-02T13:00:00Z")))
    adopting = memory.ingest([path])
    assert (adopting.replaced, adopting.unchanged, adopting.chunks) == (0, 1, 0)   # every memory kept as it is
    assert fixed in [r[0] for r in conn.execute(current).fetchall()]

    edited = [msg("m1", "human", "My espresso machine is a Rancilio Silvia. " + story, "2025-03-01T09:00:00Z"),
              *grown[1:]]
    path.write_text(json.dumps(claude_export(edited, updated="2025-03-03T11:00:00Z")))   # the source changed it
    assert memory.ingest([path]).replaced == 1
    rows = conn.execute(current).fetchall()
    assert fixed not in [r[0] for r in rows] and any("Rancilio" in c for _, c in rows), rows


def test_the_pieces_of_a_long_answer_are_stored_with_the_whole_answers_embedding(conn, embedder):
    import numpy as np

    from memsql.adapters.base import Document, Section, with_neighbour_context
    from memsql.chunking import chunk
    from memsql.ingest import Ingestor

    answer = " ".join(f"Week {i}: the crew moves racks {i} and {i + 1} to the new warehouse, then checks the "
                      f"forklift schedule and the loading dock rota." for i in range(40))
    turns = [Section(text="user: how should we plan the warehouse move?", metadata={"speaker": "human"}, atomic=True),
             Section(text=f"assistant: {answer}", metadata={"speaker": "assistant"}, atomic=True),
             Section(text="user: thanks, that helps", metadata={"speaker": "human"}, atomic=True)]
    chat = Document(source_key="chat-1", adapter="text", sections=with_neighbour_context(turns), title="move")
    note = Document(source_key="note-1", adapter="text", sections=(Section(text=answer),), title="plan")
    Ingestor(conn, embedder, "default").ingest([chat, note])

    def stored(key):
        return np.array([json.loads(v) for (v,) in conn.execute(
            "SELECT m.embedding::text FROM memsql.memories m JOIN memsql.documents d "
            "ON d.namespace = m.namespace AND d.id = m.document_id WHERE d.source_key = %s ORDER BY m.chunk_index",
            (key,))], dtype=np.float32)

    def cos(a, b):
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    # vectors embedded in other batches differ in the last digits (padding): compared by cosine
    chunks = chunk(chat)
    own = np.asarray(embedder.embed([c.embed_text for c in chunks]), dtype=np.float32)
    pieces = [i for i, c in enumerate(chunks) if c.section == 1]
    assert len(pieces) >= 3
    whole = own[pieces].mean(axis=0)
    got = stored("chat-1")
    assert got.shape == own.shape
    for i in range(len(chunks)):
        if i in pieces:
            assert np.array_equal(got[i], got[pieces[0]]) and cos(got[i], whole) > 0.99999
            assert cos(got[i], own[i]) < 0.9999   # not the piece's own embedding (batch noise: > 0.99999)
        else:
            assert cos(got[i], own[i]) > 0.99999
    # the same text as a note section: its pieces keep their own embeddings
    note_own = embedder.embed([c.embed_text for c in chunk(note)])
    note_got = stored("note-1")
    assert len(note_got) == len(note_own) >= 3
    assert all(cos(g, o) > 0.99999 for g, o in zip(note_got, note_own))
    assert cos(note_got[0], note_got[-1]) < 0.9999


def test_the_pieces_of_a_long_answer_are_normalised_by_the_whole_answer_in_bm25(conn, embedder):
    from memsql.adapters.base import Document, Section, with_neighbour_context
    from memsql.ingest import Ingestor

    def chat(last_week):
        answer = " ".join(f"Week {i}: the crew moves racks {i} and {i + 1} to the new warehouse, then checks the "
                          f"forklift schedule and the loading dock rota." for i in range(last_week))
        turns = [Section(text="user: how should we plan the warehouse move?", metadata={"speaker": "human"},
                         atomic=True),
                 Section(text=f"assistant: {answer}", metadata={"speaker": "assistant"}, atomic=True),
                 Section(text="user: thanks, that helps", metadata={"speaker": "human"}, atomic=True)]
        return Document(source_key="chat-1", adapter="text", sections=with_neighbour_context(turns), title="move")

    def stored():
        """(id, tsv_len, bm25_len, {doc_len of its postings}) of the current memories, by chunk_index."""
        return [(m, own, given, {d for (d,) in conn.execute(
                    "SELECT doc_len FROM memsql.postings WHERE memory_id = %s", (m,))})
                for m, own, given in conn.execute(
                    "SELECT id, tsv_len, bm25_len FROM memsql.memories WHERE namespace = 'default' "
                    "AND valid_to IS NULL ORDER BY chunk_index")]

    note = Document(source_key="note-1", adapter="text", title="plan",
                    sections=(Section(text=chat(40).sections[1].text),))
    Ingestor(conn, embedder, "note").ingest([note])
    Ingestor(conn, embedder, "default").ingest([chat(40)])
    rows = stored()
    pieces, others = rows[1:-1], [rows[0], rows[-1]]
    assert len(pieces) >= 3
    message = sum(own for _, own, _, _ in pieces)
    assert all(given == message and lens == {message} for _, _, given, lens in pieces)
    assert all(given is None and lens == {own} for _, own, given, lens in others)
    # the same text as a note section: its pieces keep their own lengths
    note_rows = conn.execute("SELECT bm25_len FROM memsql.memories WHERE namespace = 'note'").fetchall()
    assert len(note_rows) >= 3 and set(note_rows) == {(None,)}

    # the answer grows by a week: its last piece changes, the pieces before it are kept, and every piece is
    # normalised by the answer as it is now
    summary = Ingestor(conn, embedder, "default").ingest([chat(41)])
    assert summary.replaced == 1 and summary.kept >= 2
    after = stored()
    kept = {m for m, *_ in after} & {m for m, *_ in rows}
    assert len(kept) >= 3   # the question, the first pieces of the answer
    pieces = after[1:-1]
    message = sum(own for _, own, _, _ in pieces)
    assert message > sum(own for _, own, _, _ in rows[1:-1])
    assert all(given == message and lens == {message} for _, _, given, lens in pieces)
    assert [m for m, *_ in pieces if m in kept]   # a kept piece was moved to the new length
