"""Files as users have them, through the whole ingest into the real server: legacy encodings, UTF-16 with a byte
order mark, NUL bytes, binaries named .md, a file name that is not UTF-8 (Python, CLI and MCP), front matter that
is not YAML, that YAML aliases would expand past bounds or into itself, and front matter importance and dates."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

REPO = Path(__file__).resolve().parents[1]

LATIN1 = "# Desserts\n\nLe garçon a mangé une crème brûlée à Noël, près de la forêt.\n"
CP1252 = "# Precios\n\nSeñor Muñoz pagó 5 € por el café; ¿qué tal? ¡Olé! — “cash only”.\n"
UTF16 = "# Überblick\n\nDie Größe der Straße beträgt zwölf Kilometer.\n"


def contents(conn, namespace="default") -> str:
    return "\n".join(r[0] for r in conn.execute(
        "SELECT content FROM memsql.memories WHERE namespace = %s AND valid_to IS NULL ORDER BY id", (namespace,)))


def test_legacy_encodings_nul_bytes_and_binaries(memory, conn, tmp_path):
    (tmp_path / "latin1.md").write_bytes(LATIN1.encode("latin-1"))
    (tmp_path / "cp1252.txt").write_bytes(CP1252.encode("cp1252"))
    (tmp_path / "utf16.md").write_bytes(UTF16.encode("utf-16"))   # with its byte order mark
    (tmp_path / "nul.txt").write_bytes(b"The backup\x00 runs at 02:00 every night.\x00\n")
    (tmp_path / "random.md").write_bytes(random.Random(3).randbytes(8192))
    (tmp_path / "program.md").write_bytes(Path(sys.executable).resolve().read_bytes()[:65536])   # an ELF binary

    summary = memory.ingest([tmp_path])

    assert summary.inserted == 4 and summary.chunks == 4
    failed = {Path(src).name: reason for src, reason in summary.failed}
    assert set(failed) == {"random.md", "program.md"}
    assert all("binary file" in reason for reason in failed.values())
    warnings = {Path(src).name: w for src, w in summary.warnings}
    assert warnings["nul.txt"] == "2 NUL bytes removed"
    assert warnings["utf16.md"] == "decoded as utf-16"
    assert warnings["cp1252.txt"] == "decoded as cp1252"
    assert warnings["latin1.md"] == "decoded as cp1252"   # the same bytes as Latin-1 for this text
    stored = contents(conn)
    for text in (LATIN1, CP1252, UTF16):
        assert text.strip().split("\n\n")[1] in stored
    assert "The backup runs at 02:00 every night." in stored
    # nothing of the binaries was stored: every memory is one of the four texts
    assert conn.execute("SELECT count(*) FROM memsql.documents").fetchone()[0] == 4
    assert "\ufffd" not in stored and "\x00" not in stored
    assert Path(memory.search("crème brûlée", k=1, touch=False)[0].source_uri).name == "latin1.md"
    assert Path(memory.search("Größe der Straße", k=1, touch=False)[0].source_uri).name == "utf16.md"
    again = memory.ingest([tmp_path])
    assert (again.unchanged, again.inserted, len(again.failed)) == (4, 0, 2)


def _folder_with_a_bad_name(root: Path) -> Path:
    folder = root / "notes"
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\n\nThe alpha launch is on the third of May.\n", "utf-8")
    (folder / "omega.md").write_text("# Omega\n\nThe omega review happens every quarter.\n", "utf-8")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9-menu.md"), "wb") as f:   # a Latin-1 name: not UTF-8
        f.write(b"# Menu\n\nThe cafe menu changes every Monday.\n")
    return folder


def test_a_file_name_that_is_not_utf8_is_ingested_with_the_others_through_python(memory, conn, tmp_path):
    folder = _folder_with_a_bad_name(tmp_path)
    summary = memory.ingest([folder])
    assert (summary.inserted, summary.failed) == (3, [])
    keys = [r[0] for r in conn.execute("SELECT source_key FROM memsql.documents ORDER BY source_key")]
    assert [Path(k).name for k in keys] == ["alpha.md", "caf\\udce9-menu.md", "omega.md"]   # escaped, readable
    hit = memory.search("cafe menu Monday", k=1, touch=False)[0]
    assert hit.source_uri.endswith("caf\\udce9-menu.md")
    again = memory.ingest([folder])
    assert (again.unchanged, again.missing) == (3, [])   # the same key again; the file is not taken for missing


def test_a_file_name_that_is_not_utf8_through_the_cli(dsn, tmp_path):
    folder = _folder_with_a_bad_name(tmp_path)
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    out = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", str(folder), "--json"], capture_output=True,
                         text=True, env=env, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    summary = json.loads(out.stdout)
    assert (summary["inserted"], summary["failed"]) == (3, [])
    text = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", str(folder), "--no-json"], capture_output=True,
                          text=True, env=env, timeout=300, cwd=REPO)
    assert text.returncode == 0 and "unchanged 3" in text.stdout and "Traceback" not in text.stderr


def test_a_file_name_that_is_not_utf8_through_mcp(dsn, tmp_path):
    from test_mcp import payload, run_session

    folder = _folder_with_a_bad_name(tmp_path)

    async def script(session):
        first = payload(await session.call_tool("memory_ingest", {"paths": [str(folder)], "namespace": "kitchen",
                                                                  "create": True}))
        hits = payload(await session.call_tool("memory_search", {"query": "cafe menu Monday", "k": 1,
                                                                 "namespace": "kitchen"}))
        return first, hits

    first, hits = run_session(dsn, script)
    assert (first["inserted"], first["failed"]) == (3, [])
    assert "cafe menu" in hits[0]["snippet"]
    assert any(isinstance(v, str) and v.endswith("caf\\udce9-menu.md") for v in hits[0].values())


def test_front_matter_that_is_not_yaml_stays_searchable_and_importance_is_stored(memory, conn, tmp_path):
    (tmp_path / "rules.md").write_text(
        "---\nDo not deploy on Fridays: the on-call team is thin at: weekends.\n---\n\n# Deploys\n\nAsk first.\n",
        "utf-8")
    (tmp_path / "vital.md").write_text("---\nimportance: 0.9\ntags: [ops]\n---\n# Pager\n\nThe pager PIN is 7731.\n",
                                       "utf-8")
    (tmp_path / "loud.md").write_text("---\nimportance: 7\n---\n# Loud\n\nThe siren test is on Wednesdays.\n", "utf-8")
    summary = memory.ingest([tmp_path])
    assert summary.inserted == 3
    hit = memory.search("deploy on Fridays on-call team", k=1, touch=False)[0]
    assert "Do not deploy on Fridays" in hit.content and Path(hit.source_uri).name == "rules.md"
    rows = dict(conn.execute(
        "SELECT d.title, m.importance FROM memsql.memories m JOIN memsql.documents d ON d.id = m.document_id"))
    assert rows["Pager"] == pytest.approx(0.9) and rows["Loud"] is None and rows["Deploys"] is None
    meta = conn.execute("SELECT metadata FROM memsql.documents WHERE title = 'Loud'").fetchone()[0]
    assert "not a number in [0, 1]" in meta["front_matter_ignored"]["importance"]
    meta = conn.execute("SELECT metadata FROM memsql.documents WHERE title = 'Deploys'").fetchone()[0]
    assert "front_matter_error" in meta


def test_front_matter_alias_bombs_self_references_and_bad_dates_are_stored_with_a_note(memory, conn, tmp_path):
    levels = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]
    (tmp_path / "bomb.md").write_text("---\n" + "\n".join(levels) + "\n---\n# Laughs\n\nThe bomb note.\n", "utf-8")
    (tmp_path / "loop.md").write_text("---\nx: &x {y: *x}\n---\n# Loop\n\nThe loop note.\n", "utf-8")
    (tmp_path / "date.md").write_text("---\ntitle: Bad date\ndate: 2026-13-45\nimportance: high\n"
                                      "tags: [alpha, beta]\n---\n# Heading\n\nThe date note.\n", "utf-8")
    summary = memory.ingest([tmp_path])
    assert (summary.inserted, summary.failed) == (3, [])
    rows = {title: (meta, size) for title, meta, size in conn.execute(
        "SELECT title, metadata, pg_column_size(metadata) FROM memsql.documents")}
    assert rows["Laughs"][0] == {"front_matter_error":
                                 "front matter expands past 10000 values (YAML aliases); kept as text"}
    assert rows["Laughs"][1] < 200
    assert "refers to itself" in rows["Loop"][0]["front_matter_error"]
    meta = rows["Bad date"][0]
    assert meta["tags"] == ["alpha", "beta"] and set(meta["front_matter_ignored"]) == {"date", "importance"}
    said = sorted(w for s, w in summary.warnings if Path(s).name == "date.md")   # said in the summary too
    assert [w.split(":")[0] for w in said] == ["front matter date ignored", "front matter importance ignored"], said
    assert "2026-13-45" in said[0] and "not a number in [0, 1]" in said[1]
    stored = contents(conn)
    assert "a7: &a7 [*a6" in stored and "The bomb note." in stored and "x: &x {y: *x}" in stored
    assert conn.execute("SELECT m.tags FROM memsql.memories m JOIN memsql.documents d ON d.id = m.document_id "
                        "WHERE d.title = 'Bad date'").fetchone()[0] == ["alpha", "beta"]


def test_a_lone_surrogate_escape_after_some_conversations_keeps_each_conversation_once(tmp_path):
    from memsql.adapters.chatgpt import stream_chatgpt

    def conversation(i, text):
        return {"id": f"g-{i}", "title": f"T{i}", "create_time": 1700000000.0 + i, "current_node": "u", "mapping": {
            "root": {"id": "root", "parent": None, "children": ["u"], "message": None},
            "u": {"id": "u", "parent": "root", "children": [], "message": {
                "id": f"u{i}", "author": {"role": "user", "name": None}, "create_time": 1700000000.0 + i,
                "content": {"content_type": "text", "parts": [text]}, "recipient": "all"}}}}

    convs = [conversation(i, f"Plain message number {i}.") for i in range(5)]
    convs.insert(3, conversation(99, "A cut emoji \\ud83d here."))
    # the C parser stops at the escape after three conversations; the rest is read by the pure Python one
    (tmp_path / "conversations.json").write_text(json.dumps(convs).replace("\\\\u", "\\u"), "utf-8")
    report = stream_chatgpt(tmp_path / "conversations.json")
    docs = list(report.documents)
    assert [d.source_key.rsplit(":", 1)[-1] for d in docs] == ["g-0", "g-1", "g-2", "g-99", "g-3", "g-4"]
    assert docs[3].sections[0].text in ("User: A cut emoji \ufffd here.", "User: A cut emoji ? here.")
    assert report.failed == []


def test_paths_that_are_no_file_to_read_fail_alone_and_never_hang(memory, conn, tmp_path, dsn):
    """A symlink loop, a named pipe, a device and a dangling link given by name: each is named in failed with what
    it is, the good file is written, no traceback, no read that waits forever."""
    (tmp_path / "good.md").write_text("# Good\n\nThe greenhouse key is under the blue pot.\n", "utf-8")
    os.symlink("loopb", tmp_path / "loopa")
    os.symlink("loopa", tmp_path / "loopb")
    os.symlink("self.md", tmp_path / "self.md")
    os.mkfifo(tmp_path / "fifo.md")
    os.symlink("/nonexistent-memsql-target", tmp_path / "dangling.md")
    names = ["good.md", "loopa", "self.md", "fifo.md", "dangling.md"]
    where = tmp_path.resolve()

    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    out = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", *names, "/dev/zero", "-n", "t", "--no-json"],
                         capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "(new 1, replaced 0, unchanged 0)" in out.stdout and "failed: 5" in out.stdout, out.stdout
    assert f"failed: {where / 'loopa'}: a symlink loop" in out.stderr
    assert f"failed: {where / 'self.md'}: a symlink loop" in out.stderr
    assert f"failed: {where / 'fifo.md'}: not a regular file (a named pipe)" in out.stderr
    assert "failed: /dev/zero: not a regular file (a character device)" in out.stderr
    assert f"failed: {where / 'dangling.md'}: a symbolic link to a missing file: /nonexistent-memsql-target" \
        in out.stderr
    assert contents(conn, "t") == "# Good\n\nThe greenhouse key is under the blue pot."

    # the adapter forced: still never opened (a text read of the pipe would wait for a writer)
    forced = memory.ingest([tmp_path / "fifo.md", Path("/dev/zero")], adapter="text")
    assert [(Path(s).name, r) for s, r in forced.failed] == [
        ("fifo.md", "not a regular file (a named pipe); nothing to read"),
        ("zero", "not a regular file (a character device); nothing to read")]
    # a folder walk lists a loop with a supported name as failed too (loopa has none: not a file it would read)
    walked = memory.ingest([tmp_path])
    assert [(Path(s).name, r.split(" (")[0]) for s, r in walked.failed] == [("self.md", "a symlink loop")]
    assert walked.inserted == 1


def test_empty_and_blank_files_are_counted_empty_and_none_is_a_copy(memory, conn, tmp_path, dsn):
    (tmp_path / "a.md").write_bytes(b"")
    (tmp_path / "b.txt").write_bytes(b"")
    (tmp_path / "c.md").write_text("\n\n  \n", "utf-8")
    (tmp_path / "d.md").write_text("# D\n\nThe only note with content is about the attic ladder.\n", "utf-8")
    summary = memory.ingest([tmp_path])
    assert (summary.empty, summary.duplicates, summary.inserted, summary.failed) == (3, [], 1, [])
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    out = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", str(tmp_path), "-n", "e1", "--no-json"],
                         capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "(new 1, replaced 0, unchanged 0), chunks: 1, empty: 3, failed: 0" in out.stdout, out.stdout
    assert "not written" not in out.stdout
    assert conn.execute("SELECT count(*) FROM memsql.documents WHERE namespace = 'e1'").fetchone()[0] == 1


def test_an_emptied_file_ends_its_memories_and_a_refilled_one_comes_back(memory, conn, tmp_path, dsn):
    ladder = tmp_path / "ladder.md"
    ladder.write_text("# Ladder\n\nThe attic ladder folds into the ceiling hatch above the landing.\n", "utf-8")
    (tmp_path / "boiler.md").write_text("# Boiler\n\nThe boiler is serviced every October by the plumber.\n", "utf-8")
    assert memory.ingest([tmp_path]).inserted == 2

    def found(query, **kw):
        return [Path(r.source_uri).name for r in memory.search(query, k=5, touch=False, **kw)]

    assert found("attic ladder ceiling hatch")[0] == "ladder.md"
    ladder.write_bytes(b"")
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    dry = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", str(tmp_path), "--dry-run", "--no-json"],
                         capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert dry.returncode == 0, dry.stderr
    assert f"would be emptied: {ladder.resolve()}" in dry.stdout and "its 1 memory would end" in dry.stdout, dry.stdout
    assert "ladder.md" in found("attic ladder ceiling hatch")   # the dry run changed nothing

    summary = memory.ingest([tmp_path])
    assert summary.emptied == [(str(ladder.resolve()), 1)], summary.emptied
    assert (summary.replaced, summary.unchanged, summary.empty, summary.failed) == (1, 1, 1, [])
    assert "ladder.md" not in found("attic ladder ceiling hatch")
    assert "ladder.md" in found("attic ladder ceiling hatch", include_superseded=True)
    ended = conn.execute("SELECT m.valid_to IS NOT NULL, m.superseded_by FROM memsql.memories m "
                         "JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id "
                         "WHERE d.source_uri = %s", (str(ladder.resolve()),)).fetchall()
    assert ended == [(True, None)]
    again = memory.ingest([tmp_path])   # still empty: nothing more to end
    assert (again.emptied, again.replaced, again.unchanged) == ([], 0, 2)

    ladder.write_text("# Ladder\n\nThe attic ladder was replaced by a folding aluminium one.\n", "utf-8")
    refilled = memory.ingest([tmp_path])
    assert (refilled.replaced, refilled.chunks, refilled.emptied) == (1, 1, [])
    top = memory.search("attic ladder folding aluminium", k=1, touch=False)[0]
    assert Path(top.source_uri).name == "ladder.md" and "aluminium" in top.content
    out = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", str(tmp_path), "--no-json"],
                         capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert out.returncode == 0 and "emptied" not in out.stdout, out.stdout


def test_changed_front_matter_reaches_the_memories_without_a_new_embedding(memory, conn, tmp_path, dsn):
    note = tmp_path / "decision.md"
    body = ("# Queue choice\n\nWe keep the job queue in PostgreSQL with SKIP LOCKED instead of running Redis.\n\n"
            "## Why\n\nOne database to back up; the queue peaks at 40 jobs a second.\n")
    note.write_text("---\ndate: 2024-03-01\ntags: [infra, queue]\nimportance: 0.4\n---\n" + body, "utf-8")
    assert memory.ingest([tmp_path], tags=["work"]).inserted == 1
    rows = "SELECT id, tags, importance, knowledge_type, source_date::date::text, embedding::text FROM memsql.memories " \
           "WHERE namespace = 'default' AND valid_to IS NULL ORDER BY chunk_index"
    before = conn.execute(rows).fetchall()
    assert before and all(r[1] == ["work", "infra", "queue"] and r[2] == pytest.approx(0.4) and r[4] == "2024-03-01"
                          and r[3] == "note" for r in before), before
    first = before[0][0]
    conn.execute("SELECT memsql.memory_tag(%s::bigint, add_tags => '{by-hand}')", (first,))   # a tag set by hand stays
    conn.commit()
    before = conn.execute(rows).fetchall()

    note.write_text("---\ndate: 2025-06-30\ntags: [infra, postgres]\nimportance: 0.9\nknowledge_type: decision\n---\n"
                    + body, "utf-8")
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    dry = subprocess.run([sys.executable, "-m", "memsql.cli", "ingest", str(tmp_path), "--dry-run", "--no-json"],
                         capture_output=True, text=True, env=env, timeout=300, cwd=REPO)
    assert dry.returncode == 0 and f"would be updated: {note.resolve()}" in dry.stdout, (dry.stdout, dry.stderr)
    assert conn.execute(rows).fetchall() == before   # the dry run changed nothing

    summary = memory.ingest([tmp_path])
    assert (summary.updated, summary.unchanged, summary.replaced, summary.chunks) == ([str(note.resolve())], 1, 0, 0), \
        summary.failed
    after = conn.execute(rows).fetchall()
    assert [r[0] for r in after] == [r[0] for r in before]              # the same memories ...
    assert [r[5] for r in after] == [r[5] for r in before]              # ... and embeddings: nothing embedded again
    assert after[0][1] == ["work", "by-hand", "infra", "postgres"], after[0][1]   # queue gone, postgres added
    assert all(r[2] == pytest.approx(0.9) and r[3] == "decision" and r[4] == "2025-06-30" for r in after), after
    doc = conn.execute("SELECT knowledge_type, source_date::date::text, tags, metadata->'tags' FROM memsql.documents "
                       "WHERE namespace = 'default'").fetchone()
    assert doc == ("decision", "2025-06-30", ["work", "infra", "postgres"], ["infra", "postgres"]), doc
    assert [r.memory_id for r in memory.search("job queue SKIP LOCKED", k=3, tags=["postgres"], touch=False)]
    assert not memory.search("job queue SKIP LOCKED", k=3, tags=["queue"], touch=False)
    again = memory.ingest([tmp_path])
    assert (again.updated, again.unchanged) == ([], 1)

    note.write_text("---\ndate: 2025-06-30\nknowledge_type: no-such-type\n---\n" + body, "utf-8")
    bad = memory.ingest([tmp_path])
    assert [(Path(s).name, "no-such-type" in r) for s, r in bad.failed] == [("decision.md", True)], bad.failed
    assert conn.execute(rows).fetchall()[0][3] == "decision"   # nothing half-applied


def test_a_type_forced_by_a_run_stays_until_the_front_matter_declares_another(memory, conn, tmp_path):
    note = tmp_path / "canary.md"
    body = "Deploys go to the blue pipeline first and wait for the canary alarms before the rest.\n"
    note.write_text(body, "utf-8")
    assert memory.ingest([tmp_path], knowledge_type="principle").inserted == 1
    types = ("SELECT (SELECT knowledge_type FROM memsql.documents), array_agg(knowledge_type ORDER BY chunk_index) "
             "FROM memsql.memories WHERE valid_to IS NULL")
    assert conn.execute(types).fetchone() == ("principle", ["principle"])

    note.write_text("---\ntags: [deploy]\n---\n" + body, "utf-8")   # a tag only: the forced type stays
    assert memory.ingest([tmp_path]).updated == [str(note.resolve())]
    assert conn.execute(types).fetchone() == ("principle", ["principle"])
    note.write_text("---\ntags: [deploy]\n---\n" + body + "\nRollbacks take one command.\n", "utf-8")   # text too
    assert memory.ingest([tmp_path]).replaced == 1
    assert conn.execute(types).fetchone() == ("principle", ["principle"])

    note.write_text("---\ntags: [deploy]\nknowledge_type: experiment\n---\n" + body + "\nRollbacks take one command.\n",
                    "utf-8")   # the front matter now declares a type: the memories take it
    assert memory.ingest([tmp_path]).updated == [str(note.resolve())]
    assert conn.execute(types).fetchone() == ("experiment", ["experiment"])
    assert [r.knowledge_type for r in memory.search("blue pipeline canary", k=1, touch=False)] == ["experiment"]

    note.write_text(body, "utf-8")
    assert memory.ingest([tmp_path], knowledge_type="principle").replaced == 1
    assert conn.execute(types).fetchone() == ("principle", ["principle"])
    note.write_text("---\nknowledge_type: note\n---\n" + body, "utf-8")   # declared: the default type, said
    assert memory.ingest([tmp_path]).updated == [str(note.resolve())]
    assert conn.execute(types).fetchone() == ("note", ["note"])


def test_a_long_paragraph_over_a_rule_is_no_heading_copied_into_every_chunk(memory, conn, tmp_path):
    """In markdown a paragraph directly over a `---` line is a (setext) heading: its whole text was copied into the
    heading_path of every chunk of its section, storage growing with the square of its length."""
    words = "team agreed migrate billing cluster latency cost".split()
    para = " ".join(words[i % len(words)] + str(i) for i in range(8000))
    (tmp_path / "journal.md").write_text(f"# Journal\n\n{para}.\n---\n\nThe next entry is short.\n", "utf-8")
    summary = memory.ingest([tmp_path])
    assert (summary.inserted, summary.failed) == (1, []) and summary.chunks > 20
    meta, content, longest = conn.execute(
        "SELECT sum(octet_length(metadata::text)), sum(octet_length(content)), "
        "max((SELECT max(length(h)) FROM jsonb_array_elements_text(metadata->'heading_path') AS h)) "
        "FROM memsql.memories").fetchone()
    assert longest == 200 and meta < content / 2, (meta, content, longest)
    stored = "".join(r[0] for r in conn.execute("SELECT content FROM memsql.memories ORDER BY chunk_index"))
    assert "cost6" in stored and words[7999 % len(words)] + "7999" in stored   # the paragraph's text is all stored


def test_front_matter_and_run_tags_reach_the_kept_chunks_of_a_changed_note(memory, conn, tmp_path):
    topics = ["billing", "search", "backups", "deploys"]
    paras = [" ".join(f"The {t} service note {i} says the {t} runbook step {i} is checked weekly." for i in range(18))
             for t in topics]
    note = tmp_path / "long.md"
    note.write_text("# Services\n\n" + "\n\n".join(paras) + "\n", "utf-8")
    first = memory.ingest([tmp_path])
    assert first.inserted == 1 and first.chunks >= 4, first.chunks
    paras[1] = paras[1].replace("weekly", "daily")
    note.write_text("---\ntags: [offsite, q3]\nimportance: 0.9\ndate: 2026-06-01\nknowledge_type: decision\n---\n"
                    "# Services\n\n" + "\n\n".join(paras) + "\n", "utf-8")
    dry = memory.ingest([tmp_path], dry_run=True)
    second = memory.ingest([tmp_path])
    assert (second.replaced, second.failed) == (1, []) and 0 < second.chunks < first.chunks, second.chunks
    assert dry.would_chunks == second.chunks   # the dry run counts what the run writes, not the kept chunks
    rows = conn.execute("SELECT tags, importance, knowledge_type, source_date::date::text FROM memsql.memories "
                        "WHERE valid_to IS NULL ORDER BY chunk_index").fetchall()
    assert len(rows) == first.chunks
    assert all(r[0] == ["offsite", "q3"] and r[1] == pytest.approx(0.9) and r[2:] == ("decision", "2026-06-01")
               for r in rows), rows
    assert len(memory.search("runbook step checked", k=20, tags=["q3"], touch=False)) == len(rows)

    third = memory.ingest([tmp_path], tags=["run2"])   # the same file, a run tag: every memory gets it
    assert (third.updated, third.chunks) == ([str(note.resolve())], 0)
    assert [r[0] for r in conn.execute("SELECT tags FROM memsql.memories WHERE valid_to IS NULL")] == \
        [["run2", "offsite", "q3"]] * len(rows)   # as a first ingest with --tag run2 orders them


def test_a_note_renamed_with_new_front_matter_takes_it_in_the_same_run(memory, conn, tmp_path):
    (tmp_path / "frontend.md").write_text("---\ntags: [frontend, ui]\ndate: 2026-02-01\n---\n# UI framework\n\n"
                                          "We build the dashboard with React and server-side rendering.\n", "utf-8")
    assert memory.ingest([tmp_path]).inserted == 1
    (tmp_path / "frontend.md").unlink()
    (tmp_path / "ui-framework.md").write_text("---\ntags: [frontend, svelte]\ndate: 2026-05-05\n---\n# UI framework\n\n"
                                              "We build the dashboard with React and server-side rendering.\n", "utf-8")
    new = str((tmp_path / "ui-framework.md").resolve())
    dry = memory.ingest([tmp_path], dry_run=True)   # the dry run says both, and changes nothing
    assert [Path(b).name for _, b in dry.moved] == ["ui-framework.md"] and dry.updated == [new], dry
    assert conn.execute("SELECT tags FROM memsql.memories WHERE valid_to IS NULL").fetchall() == [(["frontend", "ui"],)]
    summary = memory.ingest([tmp_path])
    assert [Path(b).name for _, b in summary.moved] == ["ui-framework.md"] and summary.updated == [new], summary
    assert conn.execute("SELECT tags, source_date::date::text FROM memsql.memories WHERE valid_to IS NULL"
                        ).fetchall() == [(["frontend", "svelte"], "2026-05-05")]
    (tmp_path / "ui-framework.md").rename(tmp_path / "ui.md")   # renamed alone: moved, nothing updated
    renamed = memory.ingest([tmp_path], dry_run=True)
    assert (len(renamed.moved), renamed.updated) == (1, []), renamed


def test_a_folder_that_cannot_be_read_is_named_and_its_files_are_not_taken_for_gone(tmp_path):
    """Path.rglob skips a folder it may not list without a word: its files were reported missing on disk and --prune
    archived them. Run as an unprivileged user (root reads every folder)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="memsql-perm-", dir="/tmp"))
    try:
        (base / "open").mkdir()
        (base / "open" / "a.md").write_text("# A\n\nreadable\n")
        (base / "locked").mkdir()
        (base / "locked" / "in.md").write_text("# In\n\nstill here\n")
        (base / "listed").mkdir()   # its names can be read, its files not reached (no search permission)
        (base / "listed" / "g.md").write_text("# G\n\nbehind a folder without x\n")
        for d in (base, base / "open"):
            d.chmod(0o755)
        (base / "open" / "a.md").chmod(0o644)
        (base / "locked").chmod(0o000)
        (base / "listed").chmod(0o644)
        script = ("import json, sys; from pathlib import Path; from memsql.ingest import iter_files, _gone\n"
                  "bad = []; files = [str(p) for p in iter_files([sys.argv[1]], bad)]\n"
                  "top = []; direct = [str(p) for p in iter_files([sys.argv[1] + '/locked'], top)]\n"
                  "print(json.dumps({'files': files, 'bad': sorted(str(b) for b in bad), 'direct': direct, "
                  "'top': [str(b) for b in top], "
                  "'gone': _gone(sys.argv[1] + '/locked/in.md'), 'deleted': _gone(sys.argv[1] + '/open/b.md')}))")
        as_nobody = (lambda: os.setuid(65534)) if os.geteuid() == 0 else None
        out = subprocess.run([sys.executable, "-c", script, str(base)], capture_output=True, text=True, timeout=60,
                             cwd=REPO, preexec_fn=as_nobody, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert out.returncode == 0, out.stderr
        seen = json.loads(out.stdout)
        assert seen == {"files": [str(base / "open" / "a.md")], "bad": [str(base / "listed"), str(base / "locked")],
                        "direct": [], "top": [str(base / "locked")], "gone": False, "deleted": True}, seen
    finally:
        (base / "locked").chmod(0o755)
        (base / "listed").chmod(0o755)
        shutil.rmtree(base)


def test_a_huge_front_matter_tag_is_dropped_with_a_warning_and_refused_from_sql(memory, conn, tmp_path):
    (tmp_path / "tagged.md").write_text("---\ntags: [ok, " + "y" * 300000 + "]\n---\n# Tagged\n\nA short note.\n",
                                        "utf-8")
    summary = memory.ingest([tmp_path])
    assert (summary.inserted, summary.failed) == (1, []), summary.failed
    assert [w for _, w in summary.warnings] == ["front matter tags ignored: 1 tag(s) over 500 characters dropped"]
    assert conn.execute("SELECT tags FROM memsql.memories").fetchone()[0] == ["ok"]
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT memsql.memory_add('x', tags => ARRAY[repeat('z', 501)])")
    assert err.value.sqlstate == "MS002" and "a tag holds at most 500" in err.value.diag.message_primary
    conn.rollback()


def test_a_growing_conversation_keeps_its_earlier_messages_dates(memory, conn, tmp_path):
    """A conversation's document date is its newest message's: a refresh of the kept memories must not move the
    earlier messages to it (the Claude Code capture re-ingests a growing transcript the same way)."""
    def line(i, role, text, when):
        content = text if role == "user" else [{"type": "text", "text": text}]
        return json.dumps({"type": role, "message": {"role": role, "content": content, **(
            {"id": f"m{i}"} if role == "assistant" else {})}, "uuid": f"u{i}", "sessionId": "s1",
            "timestamp": when, "cwd": "/proj"})

    def long(text):   # about 150 word pieces: one message a memory
        return text + " " + " ".join(f"detail{i} of the cookie setup" for i in range(30))

    session = tmp_path / "s1.jsonl"
    first = [line(0, "user", long("Where does the session cookie domain come from?"), "2025-06-01T10:00:00Z"),
             line(1, "assistant", long("The session cookie domain is read from SESSION_DOMAIN at start-up."),
                  "2025-06-01T10:05:00Z")]
    session.write_text("\n".join(first) + "\n", "utf-8")
    assert memory.ingest([session], namespace="cc").inserted == 1
    dates = "SELECT id, source_date::text FROM memsql.memories WHERE namespace = 'cc' AND valid_to IS NULL ORDER BY id"
    before = dict(conn.execute(dates).fetchall())
    later = [line(2, "user", long("And which service sets SESSION_DOMAIN in production?"), "2025-06-02T09:00:00Z"),
             line(3, "assistant", long("The deploy manifest of the gateway service sets it."), "2025-06-03T12:00:00Z")]
    session.write_text("\n".join(first + later) + "\n", "utf-8")
    grown = memory.ingest([session], namespace="cc")
    assert (grown.replaced, grown.failed) == (1, []), grown.failed
    after = dict(conn.execute(dates).fetchall())
    kept = set(before) & set(after)
    assert kept and all(after[i] == before[i] for i in kept), (before, after)   # not re-dated to 06-03
    assert max(after.values()).startswith("2025-06-03")
