"""Secrets never stored: fake credentials of the common kinds through every write path (ingest of notes and
transcripts, Memory.add / update, the CLI), then nothing of them in the database."""

from __future__ import annotations

import json

import pytest

from fake_secrets import fake_secrets, secret_values
from memsql.redact import redact


def _stored_text(conn) -> str:
    rows = conn.execute("SELECT content FROM memsql.memories UNION ALL SELECT coalesce(title, '') || metadata::text "
                        "FROM memsql.documents UNION ALL SELECT metadata::text FROM memsql.memories").fetchall()
    return "\n".join(r[0] for r in rows)


def test_every_kind_is_found_and_marked():
    texts = fake_secrets()
    for (kind, text), value in zip(texts.items(), secret_values(texts)):
        assert value in text
        out, counts = redact(text)
        assert value not in out, kind
        assert sum(counts.values()) >= 1 and "[secret removed: " in out, kind


def test_private_spans_and_plain_text():
    out, counts = redact("keep this <private>my home address is 1 Main St</private> and this <PRIVATE>x")
    assert out == "keep this [private] and this [private]" and counts == {"private": 2}
    plain = "password = os.environ['DB_PASSWORD']; commit 3f786850e387550fdab836ed7e6dc881de23001b; " \
            "postgresql://localhost:5432/app"
    assert redact(plain) == (plain, {})
    again, counts = redact(redact(fake_secrets()["dsn_url"])[0])
    assert not counts  # markers are never taken for secrets


def test_no_secret_reaches_the_database(memory, conn, tmp_path):
    texts = fake_secrets(seed=11)
    values = secret_values(texts)
    note = tmp_path / "notes.md"
    note.write_text("# Setup\n\n" + "\n\n".join(texts.values()) + "\n\n<private>the door code is 4711</private>\n")
    lines = []
    for i, text in enumerate(texts.values()):
        lines.append({"type": "user", "uuid": f"u{i}", "sessionId": "s1", "timestamp": f"2026-11-01T10:{i:02d}:00Z",
                      "message": {"role": "user", "content": f"here is my config: {text}"}})
        lines.append({"type": "assistant", "uuid": f"a{i}", "sessionId": "s1",
                      "timestamp": f"2026-11-01T10:{i:02d}:30Z",
                      "message": {"id": f"m{i}", "role": "assistant", "content": [
                          {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"echo '{text}'"}}]}})
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n")

    summary = memory.ingest([note, transcript])
    assert not summary.failed and summary.chunks > 0
    assert summary.secrets.get("private") == 1
    assert sum(summary.secrets.values()) >= 2 * len(texts) + 1
    mid = memory.add("deploy with " + texts["github_classic"], title="token " + texts["slack_bot"])
    memory.update(mid, "deploy with " + texts["anthropic"])
    stored = _stored_text(conn)
    assert "[secret removed: " in stored and "door code" not in stored
    leaked = [v for v in values if v in stored]
    assert leaked == []


def test_a_secret_is_counted_once_though_its_turn_is_also_a_neighbours_context():
    from memsql.adapters.base import Document, Section, with_neighbour_context
    from memsql.redact import redact_document

    key = secret_values({"aws": fake_secrets()["aws_access_key"]})[0]
    turns = [Section(text="user: what is wrong with my setup?"), Section(text=f"user: my key is {key}, is it ok?"),
             Section(text="assistant: please rotate that key now.")]
    doc = Document("chat#1", "claude_code", with_neighbour_context(turns), title="Setup help")
    assert sum(key in (s.context or "") for s in doc.sections) == 2   # the key sits in both neighbours' context
    out, counts = redact_document(doc)
    assert counts == {"AWS Access Key": 1}
    assert not any(key in s.text or key in (s.context or "") for s in out.sections)
