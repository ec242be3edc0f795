"""Conversation adapters (Claude.ai, Claude Code, ChatGPT) and format detection.

Two kinds of tests: the real exports under ../shared/data/chat_exports (skipped when the folder
is absent), with counts checked by reading the files; and small fixtures written here, one per
format rule.
"""

from __future__ import annotations

import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memsql.adapters.base import AdapterError
from memsql.adapters.chatgpt import current_branch, parse_chatgpt
from memsql.adapters.claude_ai import TOOL_RESULT_CAP, parse_claude_ai, parse_timestamp
from memsql.adapters.claude_code import parse_claude_code
from memsql.adapters.detect import detect_adapter

EXPORTS = Path(__file__).parents[2] / "shared" / "data" / "chat_exports"


@pytest.fixture
def exports() -> Path:
    if not EXPORTS.is_dir():
        pytest.skip(f"shared data folder absent: {EXPORTS}")
    return EXPORTS


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def write_jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n",
        encoding="utf-8",
    )
    return path


def texts(document) -> list[str]:
    return [s.text for s in document.sections]


# --------------------------------------------------------------------------- real samples


def test_real_claude_ai_example(exports: Path) -> None:
    report = parse_claude_ai(exports / "claude_ai" / "simonw_example.json")
    assert (len(report.documents), report.empty, report.failed, report.skipped_blocks) == (
        1,
        0,
        (),
        {},
    )
    doc = report.documents[0]
    assert doc.source_key == "claude_ai:1db4c66e-b369-4e3a-96a9-6c16f8301ee8"
    assert doc.adapter == "claude_ai"
    assert doc.title == "Bash Command for OpenAI API"
    assert doc.source_date == datetime(2024, 10, 18, 5, 30, 22, 223181, tzinfo=UTC)
    assert doc.metadata == {
        "conversation_id": "1db4c66e-b369-4e3a-96a9-6c16f8301ee8",
        "created_at": "2024-10-18T05:30:10.325754+00:00",
        "updated_at": "2024-10-18T05:30:22.223181+00:00",
        "message_count": 2,
    }
    assert texts(doc) == [
        "User: Turn this into a bash command",
        "Assistant: To turn this into a bash command, we need to modify the JSON structure "
        "slightly to make it compatible with bash syntax...",
    ]
    assert doc.sections[0].metadata == {
        "speaker": "human",
        "message_id": "22b34c9c-69c1-46ad-87da-71570a70f107",
        "conversation_id": "1db4c66e-b369-4e3a-96a9-6c16f8301ee8",
        "created_at": "2024-10-18T05:30:20.458713+00:00",
    }
    assert doc.sections[0].source_date == datetime(2024, 10, 18, 5, 30, 20, 458713, tzinfo=UTC)
    assert [s.atomic for s in doc.sections] == [False, False]


def test_real_claude_ai_artifacts(exports: Path) -> None:
    report = parse_claude_ai(exports / "claude_ai" / "simonw_artifacts.json")
    # 20 messages; each of the 10 assistant replies holds one <antThinking> and one <antArtifact>.
    assert (len(report.documents), report.empty, report.failed) == (1, 0, ())
    assert report.skipped_blocks == {"thinking": 10}
    doc = report.documents[0]
    assert doc.source_key == "claude_ai:91098bc8-f2c4-427b-b71b-1e25efa2e871"
    assert doc.title == "LLM Pricing Calculator"
    assert doc.metadata["message_count"] == 20
    assert len(doc.sections) == 20
    # The file lists the 03:37 user message first; created_at order puts it before its reply.
    assert [s.metadata["speaker"] for s in doc.sections] == ["human", "assistant"] * 10
    assert doc.sections[0].text.startswith("User: Built me an artifact with no react")
    assert doc.sections[6].text.startswith("User: Add a onkeyup event too")
    assert doc.sections[7].metadata["message_id"] == "abcb904f-d092-418f-96f8-cd1c76601376"
    assert all("<ant" not in s.text and "</ant" not in s.text for s in doc.sections)
    assert sum(s.text.count("[artifact: ") for s in doc.sections) == 10
    assert "\n\n[artifact: LLM Pricing Calculator]\n<!DOCTYPE html>" in doc.sections[1].text
    assert "[artifact: LLM Pricing Calculator with Presets]\n" in doc.sections[7].text
    assert "This request is suitable for an artifact" not in doc.sections[1].text


def test_real_claude_code(exports: Path) -> None:
    report = parse_claude_code(exports / "claude_code" / "daaain_representative_messages.jsonl")
    # 12 lines: 4 user text, 2 user tool_result only, 5 assistant (2 tool_use only), 1 summary.
    assert (len(report.documents), report.empty, report.failed) == (1, 0, ())
    assert report.skipped_blocks == {"tool_result": 2}
    doc = report.documents[0]
    assert doc.source_key == "claude_code:test_session"
    assert doc.adapter == "claude_code"
    assert doc.title.startswith("User learned about Python decorators")
    assert doc.source_date == datetime(2025, 6, 14, 10, 4, tzinfo=UTC)
    assert doc.metadata == {
        "session_id": "test_session",
        "cwd": "/tmp",
        "git_branch": None,
        "version": "1.0.0",
        "created_at": "2025-06-14T10:00:00+00:00",
        "updated_at": "2025-06-14T10:04:00+00:00",
        "message_count": 9,
    }
    assert [s.metadata["message_id"] for s in doc.sections] == [
        "msg_001",
        "msg_002",
        "msg_003",
        "msg_004",
        "msg_006",
        "msg_007",
        "msg_008",
        "msg_010",
        "msg_011",
    ]
    assert doc.sections[3].text == ("Assistant: [tool_use: Edit /tmp/decorator_example.py]\nwrites: def repeat(times): "
                                    "def decorator(func): def wrapper(*args, **kwargs): for _ in range(times): result "
                                    "= func(*args, **kwargs) return result return wrapper return decorator @repeat(3) "
                                    "def greet(name): print(f\"Hello, {name}!\") greet(\"Alice\")")
    assert doc.sections[6].text.startswith("Assistant: [tool_use: Bash]\ncommand: ")
    assert (
        doc.sections[0].text
        == "User: Hello Claude! Can you help me understand how Python decorators work?"
    )
    assert doc.sections[0].metadata == {
        "speaker": "human",
        "message_id": "msg_001",
        "conversation_id": "test_session",
        "created_at": "2025-06-14T10:00:00+00:00",
        "cwd": "/tmp",
    }
    assert all("File created successfully" not in t for t in texts(doc))


def test_real_chatgpt(exports: Path) -> None:
    report = parse_chatgpt(exports / "chatgpt" / "polylogue_native_conversation_v1.json")
    assert (len(report.documents), report.empty, report.failed) == (1, 0, ())
    assert report.skipped_blocks == {
        "context": 1,
        "thoughts": 1,
        "tool_call": 1,
        "reasoning_recap": 1,
        "non_text_part": 2,
    }
    doc = report.documents[0]
    assert doc.source_key == "chatgpt:chatgpt-fixture-conversation"
    assert doc.title == "Privacy-safe ChatGPT native fixture"
    assert doc.source_date == datetime.fromtimestamp(1784169740, tz=UTC)
    assert doc.metadata["message_count"] == 3
    assert doc.metadata["model"] == "gpt-5-6-pro"
    assert texts(doc) == [
        "User: Analyze the attached fixture and create an artifact.",
        "Tool (browser.search): Privacy-safe tool result.",
        "Assistant: Final answer. [Download artifact](sandbox:/mnt/data/fixture-result.zip)",
    ]
    assert [s.metadata["speaker"] for s in doc.sections] == ["human", "tool", "assistant"]
    assert doc.sections[2].source_date == datetime.fromtimestamp(1784169733, tz=UTC)


def test_real_detection(exports: Path) -> None:
    assert detect_adapter(exports / "claude_ai" / "simonw_example.json") == "claude_ai"
    assert detect_adapter(exports / "claude_ai" / "simonw_artifacts.json") == "claude_ai"
    assert (
        detect_adapter(exports / "claude_code" / "daaain_representative_messages.jsonl")
        == "claude_code"
    )
    assert detect_adapter(exports / "claude_code") == "claude_code"
    assert (
        detect_adapter(exports / "chatgpt" / "polylogue_native_conversation_v1.json") == "chatgpt"
    )
    assert detect_adapter(exports / "schemas" / "agent-schemas_claude-code_README.md") == "markdown"


# --------------------------------------------------------------------------- timestamps


def test_parse_timestamp_forms() -> None:
    expected = datetime(2024, 1, 1, 10, 0, tzinfo=UTC)
    assert parse_timestamp("2024-01-01T10:00:00") == expected  # naive -> UTC
    assert parse_timestamp("2024-01-01T10:00:00Z") == expected
    assert parse_timestamp("2024-01-01T12:00:00+02:00") == expected
    assert parse_timestamp(1704103200) == expected  # epoch seconds
    assert parse_timestamp(1704103200.0) == expected
    assert parse_timestamp(1704103200000) == expected  # epoch milliseconds (> 1e11)
    assert parse_timestamp("1704103200000") == expected
    assert parse_timestamp("2024-01-01T12:00:00+02:00").tzinfo == UTC
    assert [parse_timestamp(v) for v in (None, "", "yesterday", True, [], 1e30)] == [None] * 6


def test_claude_ai_timestamps_naive_aware_epoch_ms(tmp_path: Path) -> None:
    conversation = {
        "uuid": "c-time",
        "name": "times",
        "created_at": "2024-01-01T10:00:00",
        "updated_at": 1704110400000,
        "chat_messages": [
            {"uuid": "m1", "sender": "human", "text": "one", "created_at": "2024-01-01T10:00:00"},
            {
                "uuid": "m2",
                "sender": "assistant",
                "text": "two",
                "created_at": "2024-01-01T12:30:00+02:00",
            },
            {"uuid": "m3", "sender": "human", "text": "three", "created_at": 1704106800000},
        ],
    }
    doc = parse_claude_ai(write_json(tmp_path / "c.json", [conversation])).documents[0]
    assert doc.source_date == datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert doc.metadata["created_at"] == "2024-01-01T10:00:00+00:00"
    assert doc.metadata["updated_at"] == "2024-01-01T12:00:00+00:00"
    assert [s.source_date for s in doc.sections] == [
        datetime(2024, 1, 1, 10, 0, tzinfo=UTC),
        datetime(2024, 1, 1, 10, 30, tzinfo=UTC),
        datetime(2024, 1, 1, 11, 0, tzinfo=UTC),
    ]
    assert all(s.source_date.utcoffset().total_seconds() == 0 for s in doc.sections)


# --------------------------------------------------------------------------- Claude.ai rules


NEW_FORMAT_MESSAGE = {
    "uuid": "m-new",
    "sender": "assistant",
    "text": "",
    "created_at": "2025-03-01T09:00:00Z",
    "content": [
        {"type": "thinking", "thinking": "private reasoning"},
        {"type": "text", "text": "Let me search."},
        {
            "type": "tool_use",
            "id": None,
            "name": "web_search",
            "input": {"query": "secret query json"},
        },
        {
            "type": "tool_result",
            "tool_use_id": None,
            "name": "web_search",
            "content": [
                {"type": "text", "text": "Result: Oslo is the capital of Norway."},
                {
                    "type": "knowledge",
                    "title": "Oslo",
                    "url": "https://example.org",
                    "text": "card",
                },
            ],
        },
        {"type": "voice_note", "title": "note"},
        {"type": "text", "text": "Oslo is the capital."},
    ],
    "attachments": [],
    "files": [],
}


def test_claude_ai_new_format_blocks(tmp_path: Path) -> None:
    conversation = {
        "uuid": "c-new",
        "name": "new",
        "updated_at": "2025-03-01T09:01:00Z",
        "chat_messages": [NEW_FORMAT_MESSAGE],
    }
    report = parse_claude_ai(write_json(tmp_path / "conversations.json", [conversation]))
    assert report.skipped_blocks == {
        "thinking": 1,
        "tool_result_non_text": 1,
        "unknown_block:voice_note": 1,
    }
    assert texts(report.documents[0]) == [
        "Assistant: Let me search.\n\n[tool_use: web_search]\n\n"
        "[tool_result: web_search]\nResult: Oslo is the capital of Norway.\n\nOslo is the capital."
    ]
    assert "secret query json" not in report.documents[0].sections[0].text
    assert "private reasoning" not in report.documents[0].sections[0].text


def test_claude_ai_text_fallback_and_tool_result_cap(tmp_path: Path) -> None:
    long_text = "x" * (TOOL_RESULT_CAP + 500)
    messages = [
        {
            "uuid": "m1",
            "sender": "human",
            "text": "from the text field",
            "content": [],
            "created_at": "2025-01-01T00:00:00Z",
        },
        {
            "uuid": "m2",
            "sender": "assistant",
            "text": "ignored when content has text",
            "created_at": "2025-01-01T00:00:01Z",
            "content": [{"type": "tool_result", "name": "repl", "content": long_text}],
        },
        {
            "uuid": "m3",
            "sender": "assistant",
            "text": "fallback after thinking only",
            "created_at": "2025-01-01T00:00:02Z",
            "content": [{"type": "thinking", "thinking": "hm"}],
        },
    ]
    report = parse_claude_ai(
        write_json(tmp_path / "c.json", [{"uuid": "c", "chat_messages": messages}])
    )
    doc = report.documents[0]
    assert texts(doc)[0] == "User: from the text field"
    assert texts(doc)[1] == "Assistant: [tool_result: repl]\n" + "x" * TOOL_RESULT_CAP + " [...]"
    assert texts(doc)[2] == "Assistant: fallback after thinking only"
    assert doc.title is None
    assert report.skipped_blocks == {"thinking": 1}


def test_claude_ai_inline_artifact_markup_and_artifacts_tool(tmp_path: Path) -> None:
    inline = (
        "Here it is.\n\n<antThinking>Should I make an artifact? Yes.</antThinking>\n\n"
        '<antArtifact identifier="todo" type="text/markdown" title="Todo list">\n'
        "- buy milk\n</antArtifact>\n\nDone."
    )
    tool = {
        "type": "tool_use",
        "id": "t1",
        "name": "artifacts",
        "input": {
            "command": "create",
            "id": "plan",
            "title": "Trip plan",
            "content": "Day 1: Bergen",
        },
    }
    update = {
        "type": "tool_use",
        "id": "t2",
        "name": "artifacts",
        "input": {"command": "update", "id": "plan", "old_str": "1", "new_str": "2"},
    }
    messages = [
        {"uuid": "m1", "sender": "assistant", "text": inline, "created_at": "2024-05-01T00:00:00Z"},
        {
            "uuid": "m2",
            "sender": "assistant",
            "text": "",
            "created_at": "2024-05-01T00:00:01Z",
            "content": [tool, update],
        },
        {
            "uuid": "m3",
            "sender": "assistant",
            "created_at": "2024-05-01T00:00:02Z",
            "text": 'Cut off <antArtifact identifier="x" title="Half">partial code',
        },
    ]
    report = parse_claude_ai(
        write_json(tmp_path / "c.json", [{"uuid": "c", "chat_messages": messages}])
    )
    assert texts(report.documents[0]) == [
        "Assistant: Here it is.\n\n[artifact: Todo list]\n- buy milk\n\nDone.",
        "Assistant: [artifact: Trip plan]\nDay 1: Bergen\n\n[tool_use: artifacts]",
        "Assistant: Cut off [artifact: Half]\npartial code",
    ]
    assert report.skipped_blocks == {"thinking": 1}


def test_claude_ai_attachment_only_fact(tmp_path: Path) -> None:
    message = {
        "uuid": "m-att",
        "sender": "human",
        "text": "",
        "created_at": "2024-02-02T08:00:00Z",
        "attachments": [
            {
                "file_name": "notes.txt",
                "file_size": 30,
                "extracted_content": "The wifi password is hunter2.",
            },
            {"file_name": "empty.txt", "extracted_content": "   "},
        ],
        "files": [{"file_name": "photo.png"}],
    }
    doc = parse_claude_ai(
        write_json(tmp_path / "c.json", [{"uuid": "c-att", "chat_messages": [message]}])
    ).documents[0]
    assert texts(doc) == ["Attachment notes.txt:\nThe wifi password is hunter2."]
    assert doc.sections[0].metadata == {
        "speaker": "human",
        "message_id": "m-att",
        "conversation_id": "c-att",
        "created_at": "2024-02-02T08:00:00+00:00",
        "kind": "attachment",
        "file_name": "notes.txt",
    }
    assert doc.metadata["message_count"] == 1


def test_claude_ai_attachment_follows_its_message(tmp_path: Path) -> None:
    message = {
        "uuid": "m",
        "sender": "human",
        "text": "See the file.",
        "created_at": "2024-02-02T08:00:00Z",
        "attachments": [{"file_name": "a.md", "extracted_content": "Alpha"}],
    }
    doc = parse_claude_ai(
        write_json(tmp_path / "c.json", [{"uuid": "c", "chat_messages": [message]}])
    ).documents[0]
    assert texts(doc) == ["User: See the file.", "Attachment a.md:\nAlpha"]


def test_claude_ai_empty_failed_and_totals(tmp_path: Path) -> None:
    good = {
        "uuid": "c-good",
        "name": "ok",
        "chat_messages": [{"uuid": "m", "sender": "human", "text": "hi"}],
    }
    no_messages = {"uuid": "c-empty", "name": "empty", "chat_messages": []}
    only_empty = {
        "uuid": "c-blank",
        "chat_messages": [
            {"uuid": "m1", "sender": "human", "text": "", "content": []},
            {
                "uuid": "m2",
                "sender": "assistant",
                "text": "  ",
                "content": [{"type": "text", "text": ""}],
            },
        ],
    }
    no_uuid = {"name": "broken", "chat_messages": []}
    bad_messages = {"uuid": "c-bad", "chat_messages": "not a list"}
    not_object = "just a string"
    path = write_json(
        tmp_path / "c.json", [good, no_messages, only_empty, no_uuid, bad_messages, not_object]
    )
    report = parse_claude_ai(path)
    assert [d.source_key for d in report.documents] == ["claude_ai:c-good"]
    assert report.empty == 2
    assert report.failed == (
        ("conversation[3]", "ValueError: conversation has no uuid"),
        ("claude_ai:c-bad", "ValueError: chat_messages is not a list"),
        ("conversation[5]", "ValueError: conversation is a str, not an object"),
    )
    assert len(report.documents) + report.empty + len(report.failed) == 6


def test_claude_ai_messages_sorted_by_created_at(tmp_path: Path) -> None:
    messages = [
        {
            "uuid": "late",
            "sender": "human",
            "text": "second question",
            "created_at": "2024-01-01T00:05:00Z",
        },
        {
            "uuid": "early",
            "sender": "human",
            "text": "first question",
            "created_at": "2024-01-01T00:00:00Z",
        },
        {
            "uuid": "reply",
            "sender": "assistant",
            "text": "first answer",
            "created_at": "2024-01-01T00:00:00Z",
        },
    ]
    doc = parse_claude_ai(
        write_json(tmp_path / "c.json", [{"uuid": "c", "chat_messages": messages}])
    ).documents[0]
    assert texts(doc) == [
        "User: first question",
        "Assistant: first answer",
        "User: second question",
    ]
    # one message without a readable time: file order is kept
    messages[1]["created_at"] = None
    doc = parse_claude_ai(
        write_json(tmp_path / "c.json", [{"uuid": "c", "chat_messages": messages}])
    ).documents[0]
    assert texts(doc) == [
        "User: second question",
        "User: first question",
        "Assistant: first answer",
    ]


def test_claude_ai_zip_export_with_memories(tmp_path: Path) -> None:
    conversation = {
        "uuid": "c-zip",
        "name": "zipped",
        "updated_at": "2025-04-01T00:00:00Z",
        "chat_messages": [{"uuid": "m", "sender": "human", "text": "I live in Lisbon."}],
    }
    memories = [
        {
            "conversations_memory": "Lives in Lisbon.",
            "project_memories": {"p1": "Writes a novel."},
            "account_uuid": "acct-1",
        }
    ]
    path = tmp_path / "data-2025-04-01.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data-2025-04-01/users.json", json.dumps([{"uuid": "acct-1"}]))
        archive.writestr(
            "data-2025-04-01/projects.json", json.dumps([{"uuid": "p1", "name": "Novel"}])
        )
        archive.writestr("data-2025-04-01/conversations.json", json.dumps([conversation]))
        archive.writestr("data-2025-04-01/memories.json", json.dumps(memories))
    assert detect_adapter(path) == "claude_ai"
    report = parse_claude_ai(path)
    assert [d.source_key for d in report.documents] == [
        "claude_ai:c-zip",
        "claude_ai_memories:acct-1",
    ]
    assert (report.empty, report.failed, report.skipped_blocks) == (0, (), {})
    assert texts(report.documents[0]) == ["User: I live in Lisbon."]
    memory = report.documents[1]
    assert memory.adapter == "claude_ai_memories"
    assert texts(memory) == ["Lives in Lisbon.", "Writes a novel."]
    assert [s.metadata for s in memory.sections] == [
        {"kind": "memory", "scope": "account"},
        {"kind": "memory", "scope": "project", "project_id": "p1"},
    ]


def test_claude_ai_invalid_top_level(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(AdapterError, match="not valid JSON"):
        parse_claude_ai(bad)
    with pytest.raises(AdapterError, match="expected a list"):
        parse_claude_ai(write_json(tmp_path / "obj.json", {"hello": 1}))
    with pytest.raises(AdapterError, match=r"not a Claude.ai export"):
        parse_claude_ai(write_json(tmp_path / "gpt.json", [{"id": "x", "mapping": {}}]))
    empty_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(empty_zip, "w") as archive:
        archive.writestr("users.json", "[]")
    with pytest.raises(AdapterError, match=r"no conversations.json"):
        parse_claude_ai(empty_zip)
    assert parse_claude_ai(write_json(tmp_path / "none.json", [])).documents == ()


# --------------------------------------------------------------------------- Claude Code rules


def cc_line(kind: str, uuid: str, content: object, **extra: object) -> dict:
    line = {
        "type": kind,
        "uuid": uuid,
        "sessionId": extra.pop("session", "s1"),
        "isSidechain": False,
        "timestamp": extra.pop("timestamp", "2025-06-01T10:00:00Z"),
        "cwd": "/work/app",
        "message": {"role": kind, "content": content, **extra.pop("message", {})},
    }
    line.update(extra)
    return line


def test_claude_code_streamed_lines_merged_and_noise(tmp_path: Path) -> None:
    lines = [
        {"type": "summary", "summary": "Fixing the login bug", "leafUuid": "u9"},
        cc_line("user", "u1", "Why does login fail?", gitBranch="main"),
        cc_line(
            "assistant",
            "a1",
            [{"type": "thinking", "thinking": "hmm", "signature": "s"}],
            message={"id": "msg_A"},
            timestamp="2025-06-01T10:00:05Z",
        ),
        cc_line(
            "assistant", "a2", [{"type": "text", "text": "Let me look."}], message={"id": "msg_A"}
        ),
        "{this line is broken",
        cc_line(
            "assistant",
            "a3",
            [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Read",
                    "input": {"file_path": "/secret/path.py"},
                }
            ],
            message={"id": "msg_A"},
        ),
        cc_line(
            "user",
            "u2",
            [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "file body"}],
        ),
        "[1, 2, 3]",
        cc_line(
            "assistant",
            "a4",
            [{"type": "text", "text": "The token expires early."}, {"type": "mystery", "x": 1}],
            message={"id": "msg_B"},
        ),
        cc_line("user", "u3", [{"type": "text", "text": "[Request interrupted by user]"}]),
        cc_line("user", "u4", "<command-name>/clear</command-name>"),
        cc_line("user", "u5", "Caveat: local commands below", isMeta=True),
        {
            "type": "system",
            "uuid": "sys1",
            "sessionId": "s1",
            "subtype": "informational",
            "content": "x",
        },
        cc_line(
            "assistant", "side1", [{"type": "text", "text": "subagent work"}], isSidechain=True
        ),
        cc_line("user", "u1", "Why does login fail?"),  # the same line again
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        cc_line(
            "user",
            "u9",
            [{"type": "text", "text": "Thanks, fixed."}, {"type": "image", "source": {}}],
        ),
    ]
    report = parse_claude_code(write_jsonl(tmp_path / "s1.jsonl", lines))
    assert (len(report.documents), report.empty, report.failed) == (1, 0, ())
    assert report.skipped_blocks == {
        "malformed_line": 2,
        "thinking": 1,
        "tool_result": 1,
        "unknown_block:mystery": 1,
        "interrupted": 1,
        "command": 1,
        "meta": 1,
        "system": 1,
        "sidechain": 1,
        "duplicate_line": 1,
        "image": 1,
    }
    doc = report.documents[0]
    assert doc.source_key == "claude_code:s1"
    assert doc.title == "Fixing the login bug"
    assert texts(doc) == [
        "User: Why does login fail?",
        "Assistant: Let me look.\n\n[tool_use: Read /secret/path.py]",
        "Assistant: The token expires early.",
        "User: Thanks, fixed.",
    ]
    assert [s.metadata["message_id"] for s in doc.sections] == ["u1", "a1", "a4", "u9"]
    assert doc.sections[0].metadata == {
        "speaker": "human",
        "message_id": "u1",
        "conversation_id": "s1",
        "created_at": "2025-06-01T10:00:00+00:00",
        "cwd": "/work/app",
        "git_branch": "main",
    }
    assert doc.sections[1].source_date == datetime(2025, 6, 1, 10, 0, 5, tzinfo=UTC)
    assert doc.metadata["message_count"] == 4
    assert doc.metadata["git_branch"] == "main"


def test_claude_code_string_vs_block_content_and_titles(tmp_path: Path) -> None:
    lines = [
        cc_line("user", "u1", "plain string content"),
        cc_line("user", "u2", [{"type": "text", "text": "block content"}]),
        cc_line("assistant", "a1", "assistant string", message={"id": "m1"}),
        {"type": "summary", "summary": "older summary", "leafUuid": "u2"},
        {"type": "ai-title", "aiTitle": "AI title", "sessionId": "s1"},
        {"type": "custom-title", "customTitle": "My title", "sessionId": "s1"},
    ]
    doc = parse_claude_code(write_jsonl(tmp_path / "s.jsonl", lines)).documents[0]
    assert texts(doc) == [
        "User: plain string content",
        "User: block content",
        "Assistant: assistant string",
    ]
    assert doc.title == "My title"


def test_claude_code_directory_sessions_empty_and_failed(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "a.jsonl", [cc_line("user", "u1", "hello from a", session="sa")])
    write_jsonl(
        tmp_path / "b.jsonl",
        [
            cc_line(
                "user",
                "u2",
                [{"type": "tool_result", "tool_use_id": "t", "content": "out"}],
                session="sb",
            ),
            cc_line("user", "u3", "meta", session="sb", isMeta=True),
        ],
    )
    (tmp_path / "c.jsonl").write_text("not json at all\nstill not\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("ignored", encoding="utf-8")
    report = parse_claude_code(tmp_path)
    assert [d.source_key for d in report.documents] == ["claude_code:sa"]
    assert report.empty == 1
    assert report.failed == (
        (str(tmp_path / "c.jsonl"), "no JSON object on any of its 2 lines; not a session JSONL"),
    )
    assert report.skipped_blocks == {"tool_result": 1, "meta": 1}
    with pytest.raises(AdapterError, match="not a session JSONL"):
        parse_claude_code(tmp_path / "c.jsonl")
    with pytest.raises(AdapterError, match="no such file"):
        parse_claude_code(tmp_path / "missing.jsonl")


def test_claude_code_refuses_json_lines_of_something_else(tmp_path: Path) -> None:
    other = tmp_path / "events.jsonl"
    write_jsonl(other, [{"a": 1}, {"b": 2, "type": "click"}])
    with pytest.raises(AdapterError, match="none of its 2 JSON objects has a sessionId or a Claude Code record type"):
        parse_claude_code(other)
    write_jsonl(tmp_path / "a.jsonl", [cc_line("user", "u1", "hello from a", session="sa")])
    report = parse_claude_code(tmp_path)   # in a directory: that file fails, the session beside it is read
    assert [d.source_key for d in report.documents] == ["claude_code:sa"]
    assert [(Path(f).name, r.split(";")[1].strip()) for f, r in report.failed] == \
        [("events.jsonl", "not a session JSONL")]
    assert report.empty == 0


def test_claude_code_session_id_falls_back_to_file_name(tmp_path: Path) -> None:
    line = cc_line("user", "u1", "no session id here")
    del line["sessionId"]
    doc = parse_claude_code(write_jsonl(tmp_path / "abc-123.jsonl", [line])).documents[0]
    assert doc.source_key == "claude_code:abc-123"


# --------------------------------------------------------------------------- ChatGPT rules


def gpt_node(
    node_id: str,
    parent: str | None,
    children: list[str],
    role: str | None,
    content: dict | None,
    create_time: float = 1700000000.0,
    **message_extra: object,
) -> dict:
    message = None
    if role is not None:
        message = {
            "id": f"{node_id}-msg",
            "author": {"role": role, "name": message_extra.pop("name", None)},
            "create_time": create_time,
            "content": content,
            "recipient": "all",
            **message_extra,
        }
    return {"id": node_id, "parent": parent, "children": children, "message": message}


def text(*parts: object) -> dict:
    return {"content_type": "text", "parts": list(parts)}


def branching_conversation(current_node: str | None = "a2") -> dict:
    mapping = {
        "root": gpt_node("root", None, ["u"], None, None),
        "u": gpt_node("u", "root", ["a1", "a2"], "user", text("Which city?"), 1700000000.0),
        "a1": gpt_node("a1", "u", [], "assistant", text("Old answer: Paris."), 1700000010.0),
        "a2": gpt_node("a2", "u", [], "assistant", text("New answer: Rome."), 1700000005.0),
    }
    conversation = {
        "id": "g-branch",
        "title": "Branches",
        "create_time": 1700000000.0,
        "update_time": 1700000020.5,
        "mapping": mapping,
    }
    if current_node is not None:
        conversation["current_node"] = current_node
    return conversation


def test_chatgpt_only_current_branch(tmp_path: Path) -> None:
    report = parse_chatgpt(write_json(tmp_path / "conversations.json", [branching_conversation()]))
    doc = report.documents[0]
    assert texts(doc) == ["User: Which city?", "Assistant: New answer: Rome."]
    assert doc.source_key == "chatgpt:g-branch"
    assert doc.source_date == datetime(2023, 11, 14, 22, 13, 40, 500000, tzinfo=UTC)
    assert report.skipped_blocks == {}
    # without current_node: the leaf with the latest create_time
    doc = parse_chatgpt(write_json(tmp_path / "c2.json", [branching_conversation(None)])).documents[
        0
    ]
    assert texts(doc) == ["User: Which city?", "Assistant: Old answer: Paris."]
    assert current_branch({}, None) == []


def test_chatgpt_skips_and_keeps(tmp_path: Path) -> None:
    long_output = "y" * 2001
    chain = [
        ("sys", "system", text("You are ChatGPT."), {}),
        (
            "hidden",
            "user",
            text("hidden context"),
            {"metadata": {"is_visually_hidden_from_conversation": True}},
        ),
        (
            "q",
            "user",
            {
                "content_type": "multimodal_text",
                "parts": [
                    {"content_type": "audio_transcription", "text": "Spoken question about tides."},
                    {"content_type": "image_asset_pointer", "asset_pointer": "file-service://x"},
                ],
            },
            {},
        ),
        ("think", "assistant", {"content_type": "thoughts", "thoughts": []}, {}),
        (
            "code",
            "assistant",
            {"content_type": "code", "language": "python", "text": "print(1)"},
            {"recipient": "python"},
        ),
        ("out", "tool", {"content_type": "execution_output", "text": "1"}, {"name": "python"}),
        ("long", "tool", text(long_output), {"name": "python"}),
        (
            "browse",
            "tool",
            {"content_type": "tether_browsing_display", "result": "..."},
            {"name": "browser"},
        ),
        ("weird", "assistant", {"content_type": "hologram"}, {}),
        ("critic", "critic", text("odd role"), {}),
        (
            "a",
            "assistant",
            text("Tides follow the moon \ue200cite\ue202turn0search0\ue201 closely【4†source】."),
            {},
        ),
    ]
    mapping = {"root": gpt_node("root", None, [chain[0][0]], None, None)}
    parent = "root"
    for i, (node_id, role, content, extra) in enumerate(chain):
        child = [chain[i + 1][0]] if i + 1 < len(chain) else []
        mapping[node_id] = gpt_node(
            node_id, parent, child, role, content, 1700000000.0 + i, **extra
        )
        parent = node_id
    conversation = {
        "conversation_id": "g-rules",
        "id": "ignored",
        "title": "Rules",
        "current_node": "a",
        "mapping": mapping,
    }
    report = parse_chatgpt(write_json(tmp_path / "c.json", conversation))
    assert report.skipped_blocks == {
        "system": 1,
        "hidden": 1,
        "non_text_part": 1,
        "thoughts": 1,
        "tool_call": 1,
        "tool_output_long": 1,
        "tool_output": 1,
        "unknown_content:hologram": 1,
        "unknown_role:critic": 1,
    }
    doc = report.documents[0]
    assert doc.source_key == "chatgpt:g-rules"
    assert texts(doc) == [
        "User: Spoken question about tides.",
        "Tool (python): 1",
        "Assistant: Tides follow the moon  closely.",
    ]
    assert doc.sections[0].metadata == {
        "speaker": "human",
        "message_id": "q-msg",
        "conversation_id": "g-rules",
        "created_at": "2023-11-14T22:13:22+00:00",
    }


def test_chatgpt_empty_failed_zip_and_invalid(tmp_path: Path) -> None:
    only_system = {
        "id": "g-empty",
        "current_node": "s",
        "mapping": {"s": gpt_node("s", None, [], "system", text("sys"))},
    }
    no_id = {"title": "x", "mapping": {}}
    bad_mapping = {"id": "g-bad", "mapping": ["not", "a", "dict"]}
    conversations = [branching_conversation(), only_system, no_id, bad_mapping]
    path = tmp_path / "chatgpt-export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("conversations.json", json.dumps(conversations))
        archive.writestr("chat.html", "<html></html>")
    assert detect_adapter(path) == "chatgpt"
    report = parse_chatgpt(path)
    assert [d.source_key for d in report.documents] == ["chatgpt:g-branch"]
    assert report.empty == 1
    assert report.failed == (
        ("conversation[2]", "ValueError: conversation has no id"),
        ("chatgpt:g-bad", "ValueError: mapping is not an object"),
    )
    assert report.skipped_blocks == {"system": 1}
    assert len(report.documents) + report.empty + len(report.failed) == 4
    with pytest.raises(AdapterError, match="not a ChatGPT export"):
        parse_chatgpt(write_json(tmp_path / "claude.json", [{"uuid": "c", "chat_messages": []}]))
    with pytest.raises(AdapterError, match="expected a list"):
        parse_chatgpt(write_json(tmp_path / "n.json", 42))


# --------------------------------------------------------------------------- detection


def test_detect_adapter(tmp_path: Path) -> None:
    def put(name: str, data: str | bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
        return path

    assert detect_adapter(put("a.md", "# Title")) == "markdown"
    assert detect_adapter(put("b.MARKDOWN", "# Title")) == "markdown"
    assert detect_adapter(put("c.txt", "plain")) == "text"
    assert detect_adapter(put("d.log", "unknown extension, still text é")) == "text"
    assert detect_adapter(put("README", "no extension")) == "text"
    assert detect_adapter(put("e.jsonl", '{"type": "user"}\n')) == "claude_code"
    assert (
        detect_adapter(put("f.json", json.dumps([{"uuid": "u", "name": "n", "chat_messages": []}])))
        == "claude_ai"
    )
    assert detect_adapter(put("g.json", json.dumps([{"title": "t", "mapping": {}}]))) == "chatgpt"
    assert detect_adapter(put("h.json", json.dumps({"title": "t", "mapping": {}}))) == "chatgpt"
    # a quoted key inside message text is escaped, so it does not fool the sniff
    tricky = [{"uuid": "u", "text": 'says "mapping": here', "chat_messages": []}]
    assert detect_adapter(put("i.json", json.dumps(tricky))) == "claude_ai"
    # key beyond the sniffed head: the whole file is parsed
    big = [{"uuid": "u", "padding": "z" * 70000, "chat_messages": []}]
    assert detect_adapter(put("j.json", json.dumps(big))) == "claude_ai"
    with pytest.raises(AdapterError, match=r"not a Claude.ai or ChatGPT export"):
        detect_adapter(put("k.json", json.dumps({"some": "config"})))
    with pytest.raises(AdapterError, match="not valid JSON"):
        detect_adapter(put("l.json", "{broken"))
    with pytest.raises(AdapterError, match="binary"):
        detect_adapter(put("m.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00"))
    with pytest.raises(AdapterError, match="binary"):
        detect_adapter(put("n.dat", b"\xff\xfe\xfa not utf-8"))
    zipped = tmp_path / "o.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("word/document.xml", "<xml/>")
    with pytest.raises(AdapterError, match=r"without conversations.json"):
        detect_adapter(zipped)
    with pytest.raises(AdapterError, match="no such file"):
        detect_adapter(tmp_path / "missing.md")
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    with pytest.raises(AdapterError, match="without"):
        detect_adapter(sessions)
    (sessions / "x.jsonl").write_text("{}\n", encoding="utf-8")
    assert detect_adapter(sessions) == "claude_code"


def test_an_assistant_neighbour_is_cut_shorter_than_a_person_neighbour() -> None:
    """A turn's embedding context holds its neighbours cut at 600 characters, an assistant's at 200."""
    from memsql.adapters.base import Section, with_neighbour_context

    long_user, long_assistant = "u" * 900, "a" * 900
    sections = with_neighbour_context([
        Section(long_user, {"speaker": "human"}),
        Section("short question", {"speaker": "human"}),
        Section(long_assistant, {"speaker": "assistant"}),
    ])
    assert sections[1].context == "u" * 600 + "\n" + "a" * 200
    assert sections[0].context == "short question"
    assert sections[2].context == "short question"
    assert [s.text for s in sections] == [long_user, "short question", long_assistant]


@pytest.mark.parametrize("create_time", [None, 1e20, "soon"])
def test_a_conversation_without_any_date_is_named_in_the_warnings(tmp_path: Path, create_time) -> None:
    """Undated, it ages from when it is stored: as new, above every dated conversation. Said, not guessed."""
    def export(message_time):
        node = {"author": {"role": "user"}, "content": {"content_type": "text", "parts": ["My bike is a Surly."]},
                "create_time": message_time}
        return [{"id": "c1", "title": "Bike talk", "create_time": create_time, "update_time": None,
                 "current_node": "n2", "mapping": {"n1": {"message": None, "parent": None, "children": ["n2"]},
                                                   "n2": {"message": node, "parent": "n1", "children": []}}}]

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export(None)))
    report = parse_chatgpt(path)
    assert len(report.documents) == 1 and report.documents[0].source_date is None
    assert report.warnings == ((f"{path} (conversation 'Bike talk')",
                                "no date in the export: it ages from when it is stored (as new)"),)
    path.write_text(json.dumps(export(1_700_000_000)))   # a dated message dates its memory: nothing to say
    assert parse_chatgpt(path).warnings == ()
