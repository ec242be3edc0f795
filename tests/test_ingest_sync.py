"""Keeping the store in step with its sources, against the real server: files deleted on disk (reported, pruned with
--prune, restorable, listed by health), re-ingest through the autosave filter, versions (older exports, white space,
copies, superseded text on add) and texts longer than the model window on add."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from memsql.embedding import MAX_TOKENS, count_tokens

REPO = Path(__file__).resolve().parents[1]

NOTES = {
    "boiler.md": "# Boiler\n\nThe boiler in the cellar is serviced every October by Hansen Heating.\n",
    "bikes.md": "# Bikes\n\nThe cargo bike lock combination is 5309; the spare key hangs by the door.\n",
    "garden.md": "# Garden\n\nThe apple trees are pruned in February, before the sap rises.\n",
}


def cli(args, dsn, timeout=300):
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


def live(conn, like: str) -> int:
    return conn.execute("SELECT count(*) FROM memsql.memories WHERE valid_to IS NULL AND content LIKE %s",
                        (f"%{like}%",)).fetchone()[0]


@pytest.fixture
def notes(tmp_path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, "utf-8")
    return folder


def test_a_deleted_file_is_reported_pruned_restorable_and_listed_by_health(memory, conn, notes, dsn):
    assert memory.ingest([notes]).inserted == 3
    gone = notes / "bikes.md"
    gone.unlink()

    again = memory.ingest([notes])   # without --prune: reported, nothing changes
    assert again.unchanged == 2 and again.missing == [(str(gone.resolve()), 1, False)]
    assert again.as_dict()["missing"] == [{"source": str(gone.resolve()), "memories": 1, "archived": False}]
    assert live(conn, "5309") == 1
    check = {c.check: c for c in memory.health()}["sources_missing_on_disk"]
    assert not check.ok and "1 of 3 file documents" in check.value and str(gone.resolve()) in check.value
    assert "--prune" in check.hint

    shown = cli(["ingest", str(notes), "--no-json"], dsn)
    assert shown.returncode == 0 and f"missing on disk: {gone.resolve()} (1 memories)" in shown.stdout
    assert "--prune" in shown.stdout
    health = cli(["health", "--json"], dsn)
    assert health.returncode == 1 and str(gone.resolve()) in health.stdout

    dry = memory.ingest([notes], prune=True, dry_run=True)   # a dry run prunes nothing
    assert dry.missing == [(str(gone.resolve()), 1, False)] and live(conn, "5309") == 1

    pruned = cli(["ingest", str(notes), "--prune", "--no-json"], dsn)
    assert pruned.returncode == 0, pruned.stderr
    assert f"pruned: {gone.resolve()} (1 memories archived)" in pruned.stdout
    assert live(conn, "5309") == 0 and not [r for r in memory.search("cargo bike lock", touch=False)
                                             if "5309" in r.content]
    archived = conn.execute("SELECT id, reason FROM memsql.archive").fetchall()
    assert [r[1] for r in archived] == [f"source missing on disk: {gone.resolve()}"]
    assert {c.check: c for c in memory.health()}["sources_missing_on_disk"].ok
    assert memory.ingest([notes]).missing == []   # pruned once: not reported again
    assert live(conn, "boiler") == 1 and live(conn, "apple trees") == 1   # the other files untouched

    restored = memory.restore([archived[0][0]])
    assert [r.restored for r in restored] == [True]
    assert live(conn, "5309") == 1
    assert "5309" in memory.search("cargo bike lock combination", k=1, touch=False)[0].content


def test_a_pruned_file_that_comes_back_is_ingested_again(memory, conn, notes):
    memory.ingest([notes])
    text = (notes / "garden.md").read_text("utf-8")
    (notes / "garden.md").unlink()
    summary = memory.ingest([notes], prune=True)
    assert [a for *_, a in summary.missing] == [True] and live(conn, "apple trees") == 0
    (notes / "garden.md").write_text(text, "utf-8")
    back = memory.ingest([notes])
    assert (back.replaced, back.chunks, back.missing) == (1, 1, [])
    assert live(conn, "apple trees") == 1
    assert conn.execute("SELECT count(*) FROM memsql.documents").fetchone()[0] == 3


def test_prune_touches_only_the_ingested_paths(memory, conn, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "one.md").write_text("# One\n\nThe first folder holds the tram timetable.\n", "utf-8")
    (b / "two.md").write_text("# Two\n\nThe second folder holds the ferry timetable.\n", "utf-8")
    memory.ingest([a, b])
    (b / "two.md").unlink()
    assert memory.ingest([a], prune=True).missing == []   # b is not part of this run
    assert live(conn, "ferry") == 1
    assert [a_ for *_, a_ in memory.ingest([b], prune=True).missing] == [True]
    assert live(conn, "ferry") == 0 and live(conn, "tram") == 1


def test_document_prune_sql_dry_run_first(conn, memory, notes):
    memory.ingest([notes])
    doc = conn.execute("SELECT id FROM memsql.documents WHERE source_uri LIKE '%%boiler.md'").fetchone()[0]
    dry = conn.execute("SELECT document_id, memories, archived FROM memsql.document_prune('default', %s)",
                       ([doc],)).fetchall()
    assert dry == [(doc, 1, False)] and live(conn, "boiler") == 1
    with pytest.raises(Exception, match="must not be NULL"):
        conn.execute("SELECT * FROM memsql.document_prune('default', ARRAY[NULL]::bigint[], false)")
    conn.rollback()
    rows = conn.execute("SELECT source, memories FROM memsql.document_sources('default', %s)",
                        ([str(notes.resolve())],)).fetchall()
    assert sorted(Path(s).name for s, _ in rows) == sorted(NOTES) and {n for _, n in rows} == {1}


def _sections(*texts: str) -> str:
    """A markdown file whose sections each fill most of a chunk (so each is a chunk of its own)."""
    parts = []
    for i, t in enumerate(texts):
        filler = " ".join(f"{t.split()[0].lower()}{j}" for j in range(60))
        parts.append(f"# Part {i}\n\n{t} {filler}.")
    return "\n\n".join(parts) + "\n"


def test_reingest_of_a_changed_document_runs_the_autosave_filter(dsn, embedder, tmp_path, conn):
    from memsql.client import Memory
    from memsql.config import load

    (tmp_path / "memsql.toml").write_text("")
    cfg = load(tmp_path / "memsql.toml", env={}, flags={
        "memory.filter.enabled": True, "memory.filter.apply_to_documents": True, "memory.filter.autosave_threshold": 0.0,
        "memory.filter.exclude_patterns": [r"(?i)password\s*[:=]"]})
    path = tmp_path / "ops.md"
    path.write_text(_sections("Deploys go out on Tuesdays after the standup meeting.",
                              "The admin password: hunter2 opens the old router console.",
                              "Backups are copied to the offsite bucket every night."), "utf-8")
    with Memory(dsn=dsn, embedder=embedder, config=cfg) as m:
        first = m.ingest([path])
        assert first.inserted == 1 and first.filtered.get("excluded") == 1 and live(conn, "hunter2") == 0
        path.write_text(_sections("Deploys go out on Thursdays after the standup meeting.",
                                  "The admin password: hunter2 opens the old router console.",
                                  "Backups are copied to the offsite bucket every night."), "utf-8")
        second = m.ingest([path])
    assert second.replaced == 1 and second.filtered.get("excluded") == 1, second.as_dict()
    assert live(conn, "hunter2") == 0   # excluded again, not stored by the revision
    assert live(conn, "Thursdays") == 1 and live(conn, "Tuesdays") == 0 and live(conn, "offsite bucket") == 1, (
        second.filtered, second.chunks, second.kept, conn.execute("SELECT left(content, 60), valid_to FROM memsql.memories").fetchall())


def _export(text: str, updated: str) -> list:
    return [{"uuid": "conv-7", "name": "Release planning", "created_at": "2025-01-01T09:00:00Z",
             "updated_at": updated, "chat_messages": [
                 {"uuid": "m1", "sender": "human", "text": text, "created_at": "2025-01-01T09:00:00Z",
                  "attachments": [], "files": []}]}]


def test_an_older_export_never_supersedes_a_newer_one(memory, conn, tmp_path):
    new, old = tmp_path / "new" / "conversations.json", tmp_path / "old" / "conversations.json"
    new.parent.mkdir(), old.parent.mkdir()
    new.write_text(json.dumps(_export("The release freeze starts on the 14th of March.", "2025-03-01T10:00:00Z")))
    old.write_text(json.dumps(_export("The release freeze starts on the 7th of March.", "2025-02-01T10:00:00Z")))
    assert memory.ingest([new]).inserted == 1
    summary = memory.ingest([old])
    assert (summary.older, summary.replaced, summary.chunks) == (1, 0, 0)
    assert live(conn, "14th of March") == 1 and live(conn, "7th of March") == 0
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE valid_to IS NOT NULL").fetchone()[0] == 0


def test_a_change_of_white_space_only_keeps_every_memory_and_its_access_count(memory, conn, notes):
    memory.ingest([notes])
    before = conn.execute("SELECT id, content FROM memsql.memories ORDER BY id").fetchall()
    hit = memory.search("cargo bike lock combination", k=1)[0]
    memory.touch([hit.memory_id])   # access_count 1
    path = notes / "bikes.md"
    path.write_text("# Bikes\n\n\nThe cargo bike   lock combination is 5309;\nthe spare key hangs by the door.  \n",
                    "utf-8")
    summary = memory.ingest([notes])
    assert (summary.replaced, summary.unchanged, summary.chunks) == (0, 3, 0)
    assert conn.execute("SELECT id, content FROM memsql.memories ORDER BY id").fetchall() == before
    assert conn.execute("SELECT access_count FROM memsql.memory_access WHERE memory_id = %s",
                        (hit.memory_id,)).fetchone()[0] == 1
    assert memory.ingest([notes]).unchanged == 3   # the new hash is stored: no revision next time either


def test_the_same_file_at_a_second_path_is_reported_not_doubled(memory, conn, notes, tmp_path):
    memory.ingest([notes])
    copy = tmp_path / "backup" / "boiler.md"
    copy.parent.mkdir()
    copy.write_bytes((notes / "boiler.md").read_bytes())
    summary = memory.ingest([copy.parent])
    assert summary.inserted == 0 and summary.duplicates == [(str(copy.resolve()), str((notes / "boiler.md").resolve()))]
    assert live(conn, "Hansen Heating") == 1
    shown = summary.as_dict()["duplicates"]
    assert shown == [{"source": str(copy.resolve()), "same_as": str((notes / "boiler.md").resolve())}]


WIFI = "# Lake house\n\nThe wifi password of the lake house is heron-42.\n"


def _stored(conn) -> list[tuple]:
    return conn.execute("SELECT d.id, d.source_key, d.source_uri, d.title, m.id, m.valid_to IS NULL, "
                        "coalesce(a.access_count, 0) FROM memsql.documents d JOIN memsql.memories m "
                        "ON m.namespace = d.namespace AND m.document_id = d.id LEFT JOIN memsql.memory_access a "
                        "ON a.namespace = m.namespace AND a.memory_id = m.id WHERE d.namespace = 'rn' "
                        "ORDER BY m.id").fetchall()


def test_a_renamed_or_moved_file_keeps_its_document_and_prune_archives_nothing(memory, conn, tmp_path, dsn):
    folder = tmp_path / "rn"
    folder.mkdir()
    a, b, c = folder / "a.md", folder / "b.md", folder / "new" / "c.md"
    a.write_text(WIFI, "utf-8")
    assert memory.ingest([folder], namespace="rn").inserted == 1
    memory.touch([_stored(conn)[0][4]], namespace="rn")
    [(doc, _, _, _, mem, _, _)] = _stored(conn)

    a.rename(b)
    out = cli(["ingest", str(folder), "-n", "rn", "--prune", "--no-json"], dsn)
    assert out.returncode == 0, out.stderr
    assert f"moved: {a.resolve()} -> {b.resolve()}" in out.stdout, out.stdout
    assert "not written" not in out.stdout and "pruned" not in out.stdout and "missing on disk" not in out.stdout
    assert "(new 0, replaced 0, unchanged 1)" in out.stdout
    # the same document and memory under the new path, with its access count; nothing archived
    assert _stored(conn) == [(doc, str(b.resolve()), str(b.resolve()), "Lake house", mem, True, 1)]
    assert conn.execute("SELECT count(*) FROM memsql.archive").fetchone()[0] == 0
    hit = memory.search("wifi password", namespace="rn", k=1, touch=False)[0]
    assert "heron-42" in hit.content and hit.source_uri == str(b.resolve())

    c.parent.mkdir()
    b.rename(c)   # into a subfolder, ingested alone (what `memsql health` says to do)
    summary = memory.ingest([c], namespace="rn")
    assert summary.moved == [(str(b.resolve()), str(c.resolve()))] and summary.duplicates == []
    assert (summary.inserted, summary.unchanged, summary.chunks) == (0, 1, 0)
    assert summary.as_dict()["moved"] == [{"from": str(b.resolve()), "to": str(c.resolve())}]
    assert _stored(conn) == [(doc, str(c.resolve()), str(c.resolve()), "Lake house", mem, True, 1)]
    assert {h.check: h for h in memory.health()}["sources_missing_on_disk"].ok
    assert memory.ingest([folder], namespace="rn", prune=True).missing == []
    assert memory.search("wifi password", namespace="rn", k=1, touch=False)[0].source_uri == str(c.resolve())


def test_a_dry_run_reports_a_move_and_prunes_nothing(memory, conn, tmp_path):
    folder = tmp_path / "rn"
    folder.mkdir()
    (folder / "a.md").write_text(WIFI, "utf-8")
    memory.ingest([folder], namespace="rn")
    (folder / "a.md").rename(folder / "b.md")
    dry = memory.ingest([folder], namespace="rn", prune=True, dry_run=True)
    assert dry.moved == [(str((folder / "a.md").resolve()), str((folder / "b.md").resolve()))]
    assert (dry.missing, dry.duplicates, dry.would_insert) == ([], [], 0)
    assert [r[1] for r in _stored(conn)] == [str((folder / "a.md").resolve())]   # nothing changed


def test_a_new_file_where_a_moved_one_was_is_no_original_of_it(memory, conn, tmp_path):
    """A file moved away and another written at its old path: the moved content is read first (a.md sorts before
    b.md) while b.md still exists, yet b.md no longer holds it: written, not skipped as a copy."""
    folder = tmp_path / "rn"
    folder.mkdir()
    (folder / "b.md").write_text(WIFI, "utf-8")
    memory.ingest([folder], namespace="rn")
    (folder / "b.md").rename(folder / "a.md")
    (folder / "b.md").write_text("# Boat\n\nThe rowing boat is moored at the north jetty.\n", "utf-8")
    summary = memory.ingest([folder], namespace="rn", prune=True)
    assert (summary.inserted, summary.replaced, summary.duplicates, summary.moved, summary.missing) == \
        (1, 1, [], [], []), str(summary.as_dict())
    current = {Path(r[1]).name for r in _stored(conn) if r[5]}
    assert current == {"a.md", "b.md"}
    assert Path(memory.search("wifi password", namespace="rn", k=1, touch=False)[0].source_uri).name == "a.md"
    assert Path(memory.search("rowing boat jetty", namespace="rn", k=1, touch=False)[0].source_uri).name == "b.md"


def test_an_export_read_from_a_new_place_is_not_pruned(memory, conn, tmp_path):
    old, new = tmp_path / "exports" / "old" / "conversations.json", tmp_path / "exports" / "new" / "conversations.json"
    old.parent.mkdir(parents=True), new.parent.mkdir()
    old.write_text(json.dumps(_export("The release freeze starts on the 14th of March.", "2025-03-01T10:00:00Z")))
    assert memory.ingest([old]).inserted == 1
    old.rename(new)
    summary = memory.ingest([tmp_path / "exports"], prune=True)
    assert summary.moved == [(str(old.resolve()), str(new.resolve()))] and summary.missing == [], summary.as_dict()
    assert summary.unchanged == 1 and live(conn, "14th of March") == 1
    assert conn.execute("SELECT source_uri FROM memsql.documents").fetchall() == [(str(new.resolve()),)]


def test_adding_the_text_of_a_superseded_fact_returns_the_current_version(memory, conn, caplog):
    first = memory.add("The team standup is at 09:30 in room Fjord.")
    current = memory.update(first, "The team standup is at 10:00 in room Fjord.")
    with caplog.at_level(logging.INFO, logger="memsql"):
        again = memory.add("The team standup is at 09:30 in room Fjord.")
    assert again == current != first
    assert any(f"superseded by memory {current}" in r.getMessage() for r in caplog.records)
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE valid_to IS NULL").fetchone()[0] == 1
    assert "10:00" in memory.search("when is the team standup", k=1, touch=False)[0].content


def test_add_of_a_text_longer_than_the_window_is_one_document_of_several_memories(memory, conn):
    paragraphs = [f"Paragraph {i}: the warehouse in Aarhus stores {i * 7} pallets of oat flour, checked by "
                  f"inspector number {1000 + i} on the morning shift, logged in ledger {i % 5}." for i in range(40)]
    text = "\n\n".join(paragraphs)
    assert count_tokens(text) > 4 * MAX_TOKENS
    first = memory.add(text, importance=0.7, tags=["inventory"])
    rows = conn.execute("SELECT id, content, importance, tags, document_id FROM memsql.memories ORDER BY chunk_index"
                        ).fetchall()
    assert len(rows) > 4 and rows[0][0] == first
    assert len({r[4] for r in rows}) == 1   # one document
    assert all(count_tokens(r[1]) <= MAX_TOKENS for r in rows)
    assert all(r[2] == pytest.approx(0.7) and r[3] == ["inventory"] for r in rows)
    stored = "\n\n".join(r[1] for r in rows)
    for p in paragraphs:   # nothing truncated
        assert p in stored
    assert memory.add(text) == first   # the same text again: the same memory
    hit = memory.search("inspector number 1037", k=1, touch=False)[0]
    assert "inspector number 1037" in hit.content


def test_add_of_an_unbroken_run_is_split_within_the_window(memory, conn):
    run = base64.b64encode(random.Random(4).randbytes(30_000)).decode("ascii")   # 40,000 characters, no space
    first = memory.add(run)
    rows = conn.execute("SELECT id, content, embedding IS NOT NULL FROM memsql.memories ORDER BY chunk_index"
                        ).fetchall()
    assert rows[0][0] == first and len(rows) > 20
    assert all(count_tokens(r[1]) <= MAX_TOKENS and r[2] for r in rows)
    end = 0   # the chunks cover the run in order (consecutive ones overlap by a few pieces): nothing dropped
    for _, piece, _ in rows:
        at = run.find(piece, max(0, end - len(piece)))
        assert 0 <= at <= end
        end = at + len(piece)
    assert end == len(run)


def test_mcp_memory_add_of_a_long_text_is_chunked(dsn):
    from test_mcp import payload, run_session

    text = "\n\n".join(f"Shelf {i} of the archive room holds the tax records of {1990 + i}, boxed by the clerk."
                       for i in range(60))

    async def script(session):
        return payload(await session.call_tool("memory_add", {"content": text}))

    added = run_session(dsn, script)
    import psycopg

    with psycopg.connect(dsn) as c:
        rows = c.execute("SELECT id, content FROM memsql.memories ORDER BY chunk_index").fetchall()
    assert rows[0][0] == added["memory_id"] and len(rows) > 2
    assert all(f"tax records of {1990 + i}" in "\n".join(r[1] for r in rows) for i in range(60))


def test_async_memory_reports_missing_sources_and_prunes(dsn, embedder, notes):
    from memsql import AsyncMemory

    async def main():
        async with AsyncMemory(dsn=dsn, embedder=embedder) as mem:
            await mem.ingest([notes])
            (notes / "boiler.md").unlink()
            check = {c.check: c for c in await mem.health()}["sources_missing_on_disk"]
            pruned = await mem.ingest([notes], prune=True)
            after = {c.check: c for c in await mem.health()}["sources_missing_on_disk"]
            return check, pruned, after

    check, pruned, after = asyncio.run(main())
    assert not check.ok and "boiler.md" in check.value
    assert [(Path(s).name, a) for s, _, a in pruned.missing] == [("boiler.md", True)] and after.ok


def test_a_dry_run_reports_what_the_real_run_would_and_exits_alike(conn, dsn, notes, tmp_path):
    """--dry-run on a terminal names failed files, files gone from disk (would be pruned) and knowledge types the
    write would refuse, with the real run's exit code; a conversation export is counted as the real run writes it
    when the autosave filter is off."""
    (notes / "retro.md").write_text("---\nknowledge_type: episodic\n---\n# Retro\n\nThe deploy froze twice.\n", "utf-8")
    missing = tmp_path / "nothere.md"
    dry = cli(["ingest", str(notes), str(missing), "-n", "dry", "--dry-run", "--no-json"], dsn)
    assert dry.returncode == 1, (dry.stdout, dry.stderr)
    assert "3 documents would be written (new 3, changed 0, unchanged 0), 3 chunks, failed: 2" in dry.stdout
    assert f"failed: {missing}: no such file" in dry.stderr, dry.stderr
    assert "retro.md: unknown knowledge_type 'episodic'" in dry.stderr
    real = cli(["ingest", str(notes), str(missing), "-n", "dry", "--json"], dsn)
    body = json.loads(real.stdout)
    assert real.returncode == 1 and (body["inserted"], body["chunks"], len(body["failed"])) == (3, 3, 2)
    assert {f["reason"].split(" (")[0] for f in body["failed"]} >= {"unknown knowledge_type 'episodic'"}

    (notes / "retro.md").unlink()
    (notes / "garden.md").unlink()
    pruning = cli(["ingest", str(notes), "-n", "dry", "--prune", "--dry-run", "--no-json"], dsn)
    assert pruning.returncode == 0, pruning.stderr
    assert f"would be pruned: {(notes / 'garden.md').resolve()} (1 memories" in pruning.stdout, pruning.stdout
    assert live(conn, "apple trees") == 1   # still there: a dry run prunes nothing

    chat = tmp_path / "conversations.json"
    chat.write_text(json.dumps(_export("ok", "2025-03-01T10:00:00Z")), "utf-8")   # too short for the filter
    dry = json.loads(cli(["ingest", str(chat), "-n", "chat", "--dry-run", "--json"], dsn).stdout)
    real = json.loads(cli(["ingest", str(chat), "-n", "chat", "--json"], dsn).stdout)
    assert dry["would_write"]["chunks"] == real["chunks"] == 1 and dry["filtered"] == real["filtered"] == {}


def test_an_edited_file_whose_date_moved_earlier_is_revised_and_older_exports_are_named(memory, conn, tmp_path, dsn):
    note = tmp_path / "sync.md"
    note.write_text("---\ndate: 2026-02-10\n---\n# Platform sync\n\nThe cache hit rate is at 91%.\n", "utf-8")
    assert memory.ingest([note]).inserted == 1
    note.write_text("---\ndate: 2026-02-09\n---\n# Platform sync\n\nThe cache hit rate is at 93%.\n", "utf-8")
    again = memory.ingest([note])   # a file is what it holds now, whatever date it carries
    assert (again.replaced, again.older, again.older_sources) == (1, 0, [])
    assert live(conn, "at 93%") == 1 and live(conn, "at 91%") == 0

    new, old = tmp_path / "new" / "conversations.json", tmp_path / "old" / "conversations.json"
    new.parent.mkdir(), old.parent.mkdir()
    new.write_text(json.dumps(_export("The release freeze starts on the 14th of March.", "2025-03-01T10:00:00Z")))
    old.write_text(json.dumps(_export("The release freeze starts on the 7th of March.", "2025-02-01T10:00:00Z")))
    assert memory.ingest([new]).inserted == 1
    out = cli(["ingest", str(old), "--no-json"], dsn)
    assert out.returncode == 0, out.stderr
    assert "not revised: " in out.stdout and "an export older than the stored version" in out.stdout, out.stdout
    assert live(conn, "14th of March") == 1 and live(conn, "7th of March") == 0


def test_ingest_tags_every_memory_of_the_run(memory, conn, notes, dsn):
    (notes / "boiler.md").write_text("---\ntags: [house]\n---\n# Boiler\n\nServiced every October.\n", "utf-8")
    out = cli(["ingest", str(notes), "--tag", "q1", "--tag", "home", "--json"], dsn)
    assert out.returncode == 0, out.stderr
    tags = dict(conn.execute("SELECT split_part(content, E'\\n', 1), tags FROM memsql.memories").fetchall())
    assert sorted(map(sorted, tags.values())) == [["home", "house", "q1"], ["home", "q1"], ["home", "q1"]], tags
    found = memory.search("October", tags=["q1"], k=3)
    assert [r.content for r in found if "October" in r.content]


def test_document_upsert_keeps_a_newer_export_but_replaces_a_file_whatever_its_date(conn):
    def upsert(key, adapter, content_hash, date):
        row = conn.execute("SELECT action FROM memsql.document_upsert('ups', %s, %s, %s, NULL, NULL, 'note', %s, "
                           "'{}', '{}')", (key, content_hash, adapter, date)).fetchone()
        conn.commit()
        return row[0]

    for adapter, second in (("chatgpt", "older"), ("claude_ai", "older"), ("claude_code", "older"),
                            ("markdown", "replaced"), ("text", "replaced")):
        assert upsert(f"k-{adapter}", adapter, "h1", "2026-03-02") == "inserted"
        assert upsert(f"k-{adapter}", adapter, "h2", "2026-03-01") == second, adapter


def test_two_exports_in_one_folder_name_the_conversation_not_the_file(memory, tmp_path):
    folder = tmp_path / "exports"
    folder.mkdir()
    first = _export("The release freeze starts on the 14th of March.", "2025-03-01T10:00:00Z")
    second = first + [{**_export("Standups move to 09:30 from April.", "2025-03-08T10:00:00Z")[0],
                       "uuid": "conv-8", "name": "Standups"}]
    (folder / "2025-03-a.json").write_text(json.dumps(first), "utf-8")
    (folder / "2025-03-b.json").write_text(json.dumps(second), "utf-8")
    summary = memory.ingest([folder])
    a, b = (folder / "2025-03-a.json").resolve(), (folder / "2025-03-b.json").resolve()
    assert summary.inserted == 2, summary.as_dict()
    assert summary.duplicates == [(f"{b} (conversation 'Release planning')", f"{a} (conversation 'Release planning')")]
    rel = os.path.relpath(b, REPO)
    again = cli(["ingest", rel, "-n", "rel", "--json"], os.environ.get("MEMSQL_DSN") or memory.dsn)
    assert again.returncode == 0, again.stderr
    uris = {r[0] for r in memory.conn.execute("SELECT source_uri FROM memsql.documents WHERE namespace = 'rel'")}
    memory.conn.commit()
    assert uris == {str(b)}   # a relative path given: the stored source is absolute
