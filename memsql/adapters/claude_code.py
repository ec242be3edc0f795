"""Claude Code session adapter: session JSONL files -> one Document per ``sessionId``.

Input: one ``.jsonl`` session file, or a directory whose ``*.jsonl`` files are read in name
order (not recursively, so ``<session>/subagents/`` files are left out).

What is kept (one :class:`Section` per message, ``atomic=False``, text prefixed with
``User: `` or ``Assistant: ``, in file order):

- ``user`` and ``assistant`` lines. ``message.content`` may be a string or a list of blocks.
  Lines streamed with the same ``message.id`` are merged into one message, their blocks
  concatenated in order; the first line gives the message uuid and timestamp.
- ``text`` blocks: kept.
- ``tool_use`` / ``server_tool_use`` blocks: ``[tool_use: NAME path]`` then what makes the call findable, each
  bounded (:func:`tool_use_text`): the command, pattern, URL or query, and an excerpt of the text an edit writes;
  never the whole input.
- ``tool_result`` blocks of a failed call (``is_error``): ``[tool_error] <excerpt>``.

What is skipped, counted in ``AdapterReport.skipped_blocks`` under the key shown:

- other ``tool_result`` blocks (tool output: file contents, command output): ``tool_result``. A user
  line holding only tool results therefore produces no section.
- ``thinking`` / ``redacted_thinking`` blocks: ``thinking``; ``image`` / ``document`` blocks:
  ``image`` / ``document``; any other block type: ``unknown_block:<type>``.
- ``system`` lines: ``system``; ``isMeta`` lines: ``meta``; sidechain lines
  (``isSidechain: true``, subagent work): ``sidechain``; compaction summaries
  (``isCompactSummary``): ``compact_summary``; synthetic API error messages
  (``isApiErrorMessage``): ``api_error``; ``[Request interrupted by user...]`` lines:
  ``interrupted``; slash-command echo lines (``<command-name>``, ``<local-command-stdout>``...):
  ``command``; a line whose ``uuid`` was already seen: ``duplicate_line``.
- lines that are not a JSON object: ``malformed_line`` (never fatal).

Bookkeeping records without conversation text (``file-history-snapshot``, ``progress``,
``queue-operation``, ``attachment``, ...) are ignored without a count. ``summary`` lines give
the title of the session holding their ``leafUuid``; ``custom-title`` and ``ai-title`` lines
take precedence over it (custom first).

Every ``sessionId`` seen on a line is one source: it becomes a Document, or counts as empty
when nothing was kept, or as failed when building it raised. A file without a single JSON
object line is an :class:`AdapterError` when given alone, a failed source in a directory.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsql.adapters.base import AdapterError, AdapterReport, Document, Section, with_neighbour_context
from memsql.adapters.claude_ai import iso, parse_timestamp

ADAPTER = "claude_code"

_PREFIXES = {"human": "User", "assistant": "Assistant"}
_COMMAND_MARKERS = ("<command-name>", "<command-message>", "<command-args>", "<local-command-")
_SKIPPED_BLOCKS = {
    "thinking": "thinking",
    "redacted_thinking": "thinking",
    "tool_result": "tool_result",
    "image": "image",
    "document": "document",
}


@dataclass
class _Message:
    speaker: str
    uuid: str | None
    timestamp: Any
    pieces: list[str]
    cwd: str | None
    git_branch: str | None


@dataclass
class _Session:
    session_id: str
    source_uri: str
    messages: list[_Message] = field(default_factory=list)
    by_api_id: dict[str, _Message] = field(default_factory=dict)
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None
    custom_title: str | None = None
    ai_title: str | None = None
    summary: str | None = None


def parse_claude_code(path: str | Path) -> AdapterReport:
    """Parses Claude Code session JSONL into one Document per session.

    Args:
        path: a session ``.jsonl`` file, or a directory of them.

    Returns:
        The documents (``source_key`` ``claude_code:<sessionId>``), the number of empty
        sessions, the sources that failed with their reason, and counts of skipped lines and
        blocks by kind (see the module docstring).

    Raises:
        AdapterError: the path does not exist, or a single file holds no JSON object line.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
    elif path.is_file():
        files = [path]
    else:
        raise AdapterError(f"{path}: no such file or directory")

    sessions: dict[str, _Session] = {}
    uuid_session: dict[str, str] = {}
    summaries: list[tuple[Any, str]] = []
    failed: list[tuple[str, str]] = []
    skipped: Counter[str] = Counter()
    for file in files:
        try:
            records = _read_records(file, skipped)
        except (OSError, ValueError) as exc:
            if not path.is_dir():
                raise AdapterError(f"{file}: {exc}") from exc
            failed.append((str(file), str(exc)))
            continue
        for record in records:
            _add_record(record, file, sessions, uuid_session, summaries, skipped)

    return _report(sessions, uuid_session, summaries, failed, skipped)


def parse_claude_code_lines(lines: list[str], source_uri: str, session_id: str | None = None) -> AdapterReport:
    """Parses part of a session JSONL (the lines appended since the last capture) like :func:`parse_claude_code`.

    Args:
        lines: complete JSONL lines.
        source_uri: the transcript's path (each Document's source_uri).
        session_id: the session of lines that carry no sessionId; default the file name's stem.

    Returns:
        As parse_claude_code; malformed lines are counted, never raised.
    """
    sessions: dict[str, _Session] = {}
    uuid_session: dict[str, str] = {}
    summaries: list[tuple[Any, str]] = []
    skipped: Counter[str] = Counter()
    file = Path(source_uri)
    if session_id:
        file = file.with_name(f"{session_id}.jsonl")
    for record in _records(lines, skipped):
        _add_record(record, file, sessions, uuid_session, summaries, skipped)
    for session in sessions.values():
        session.source_uri = source_uri
    return _report(sessions, uuid_session, summaries, [], skipped)


def _report(sessions, uuid_session, summaries, failed, skipped) -> AdapterReport:
    for leaf, summary in summaries:
        session_id = uuid_session.get(leaf) if isinstance(leaf, str) else None
        if session_id is not None:
            sessions[session_id].summary = summary

    documents: list[Document] = []
    empty = 0
    for session in sessions.values():
        try:
            document = _session_document(session)
        except Exception as exc:  # one bad session must not stop the import
            failed.append((f"{ADAPTER}:{session.session_id}", f"{type(exc).__name__}: {exc}"))
            continue
        if document is None:
            empty += 1
        else:
            documents.append(document)
    return AdapterReport(tuple(documents), empty, tuple(failed), dict(skipped))


RECORD_TYPES = frozenset({"user", "assistant", "summary", "system", "custom-title", "ai-title"})
"""The record types _add_record reads: a file with none of them (and no sessionId) is not a session JSONL."""


def _is_session_record(record: dict[str, Any]) -> bool:
    session_id = record.get("sessionId")
    return (isinstance(session_id, str) and bool(session_id)) or record.get("type") in RECORD_TYPES


def _read_records(file: Path, skipped: Counter[str]) -> list[dict[str, Any]]:
    """JSON objects of a JSONL file; malformed lines are counted. Raises when none is valid, or when no object is
    a Claude Code record (a ``sessionId``, or a ``type`` Claude Code writes): JSON lines of something else."""
    with file.open(encoding="utf-8", errors="replace") as handle:
        records, malformed = _parse_lines(handle)
    if malformed and not records:
        raise ValueError(f"no JSON object on any of its {malformed} lines; not a session JSONL")
    if records and not any(_is_session_record(r) for r in records):
        raise ValueError(f"none of its {len(records)} JSON objects has a sessionId or a Claude Code record type "
                         f"({', '.join(sorted(RECORD_TYPES))}); not a session JSONL")
    if malformed:
        skipped["malformed_line"] += malformed
    return records


def _records(lines, skipped: Counter[str]) -> list[dict[str, Any]]:
    records, malformed = _parse_lines(lines)
    if malformed:
        skipped["malformed_line"] += malformed
    return records


def _parse_lines(lines) -> tuple[list[dict[str, Any]], int]:
    records, malformed = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            malformed += 1
    return records, malformed


def _add_record(
    record: dict[str, Any],
    file: Path,
    sessions: dict[str, _Session],
    uuid_session: dict[str, str],
    summaries: list[tuple[Any, str]],
    skipped: Counter[str],
) -> None:
    kind = record.get("type")
    if kind == "summary":
        if isinstance(record.get("summary"), str) and record["summary"].strip():
            summaries.append((record.get("leafUuid"), record["summary"].strip()))
        return
    session_id = record.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        session_id = file.stem
    session = sessions.setdefault(session_id, _Session(session_id, str(file)))
    if kind == "custom-title" and isinstance(record.get("customTitle"), str):
        session.custom_title = record["customTitle"].strip() or None
    elif kind == "ai-title" and isinstance(record.get("aiTitle"), str):
        session.ai_title = record["aiTitle"].strip() or None
    elif kind == "system":
        skipped["system"] += 1
    elif kind in ("user", "assistant"):
        _add_message(record, session, uuid_session, skipped)


def _add_message(
    record: dict[str, Any], session: _Session, uuid_session: dict[str, str], skipped: Counter[str]
) -> None:
    noise = _noise_kind(record)
    if noise:
        skipped[noise] += 1
        return
    uuid = record.get("uuid")
    if isinstance(uuid, str):
        if uuid in uuid_session:
            skipped["duplicate_line"] += 1
            return
        uuid_session[uuid] = session.session_id

    session.cwd = session.cwd or record.get("cwd")
    session.git_branch = session.git_branch or record.get("gitBranch")
    session.version = session.version or record.get("version")
    message = record.get("message") if isinstance(record.get("message"), dict) else {}
    pieces = _content_pieces(message.get("content"), skipped)
    text = "\n\n".join(pieces)
    if record["type"] == "user" and text.startswith("[Request interrupted by user"):
        skipped["interrupted"] += 1
        return
    if record["type"] == "user" and text.startswith(_COMMAND_MARKERS):
        skipped["command"] += 1
        return

    api_id = message.get("id") if record["type"] == "assistant" else None
    if isinstance(api_id, str) and api_id in session.by_api_id:
        session.by_api_id[api_id].pieces.extend(pieces)
        return
    speaker = "human" if record["type"] == "user" else "assistant"
    entry = _Message(
        speaker, uuid, record.get("timestamp"), pieces, record.get("cwd"), record.get("gitBranch")
    )
    session.messages.append(entry)
    if isinstance(api_id, str):
        session.by_api_id[api_id] = entry


def _noise_kind(record: dict[str, Any]) -> str | None:
    if record.get("isSidechain"):
        return "sidechain"
    if record.get("isMeta"):
        return "meta"
    if record.get("isCompactSummary"):
        return "compact_summary"
    if record.get("isApiErrorMessage"):
        return "api_error"
    return None


def _content_pieces(content: Any, skipped: Counter[str]) -> list[str]:
    if isinstance(content, str):
        return [content.strip()] if content.strip() else []
    pieces = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            text = (block.get("text") or "").strip()
            if text:
                pieces.append(text)
        elif kind in ("tool_use", "server_tool_use"):
            pieces.append(tool_use_text(block.get("name") or "unknown", block.get("input")))
        elif kind == "tool_result" and block.get("is_error"):
            excerpt = _excerpt(_result_text(block.get("content")), RESULT_EXCERPT)
            pieces.append(f"[tool_error] {excerpt}" if excerpt else "[tool_error]")
        elif kind in _SKIPPED_BLOCKS:
            skipped[_SKIPPED_BLOCKS[kind]] += 1
        else:
            skipped[f"unknown_block:{kind}"] += 1
    return pieces


COMMAND_EXCERPT = 300
"""Characters of a command (Bash), a search pattern or a URL kept with its tool call."""
EDIT_EXCERPT = 240
"""Characters of the new text of an Edit / Write / MultiEdit / NotebookEdit kept with its tool call."""
RESULT_EXCERPT = 240
"""Characters of a failed tool call's result (is_error) kept; other results are skipped (counted)."""
_PATH_KEYS = ("file_path", "notebook_path", "path")
_TEXT_KEYS = {"command": COMMAND_EXCERPT, "pattern": COMMAND_EXCERPT, "url": COMMAND_EXCERPT,
              "query": COMMAND_EXCERPT, "description": COMMAND_EXCERPT, "prompt": COMMAND_EXCERPT}
_EDIT_KEYS = ("new_string", "content", "new_source")


def _excerpt(text: str, limit: int) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 5] + " [...]"


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def tool_use_text(name: str, tool_input: Any) -> str:
    """A tool call as stored: ``[tool_use: NAME path]`` with what makes it findable later (the file path, the
    command or pattern, a bounded excerpt of the text an edit writes), never the whole input."""
    head = f"[tool_use: {name}"
    if not isinstance(tool_input, dict):
        return head + "]"
    path = next((tool_input[k] for k in _PATH_KEYS if isinstance(tool_input.get(k), str) and tool_input[k]), None)
    if path:
        head += f" {_excerpt(path, COMMAND_EXCERPT)}"
    lines = [head + "]"]
    for key, limit in _TEXT_KEYS.items():
        if isinstance(tool_input.get(key), str) and tool_input[key].strip():
            lines.append(f"{key}: {_excerpt(tool_input[key], limit)}")
    edits = [tool_input[k] for k in _EDIT_KEYS if isinstance(tool_input.get(k), str)]
    if isinstance(tool_input.get("edits"), list):  # MultiEdit
        edits += [e.get("new_string", "") for e in tool_input["edits"] if isinstance(e, dict)]
    edit = " | ".join(e for e in edits if e.strip())
    if edit:
        lines.append(f"writes: {_excerpt(edit, EDIT_EXCERPT)}")
    return "\n".join(lines)


def _session_document(session: _Session) -> Document | None:
    sections = []
    for message in session.messages:
        text = "\n\n".join(message.pieces).strip()
        if not text:
            continue
        created = parse_timestamp(message.timestamp)
        metadata = {
            "speaker": message.speaker,
            "message_id": message.uuid,
            "conversation_id": session.session_id,
            "created_at": iso(created),
        }
        if message.cwd:
            metadata["cwd"] = message.cwd
        if message.git_branch:
            metadata["git_branch"] = message.git_branch
        sections.append(Section(f"{_PREFIXES[message.speaker]}: {text}", metadata, created))
    if not sections:
        return None
    dates = [s.source_date for s in sections if s.source_date]
    return Document(
        source_key=f"{ADAPTER}:{session.session_id}",
        adapter=ADAPTER,
        sections=with_neighbour_context(sections),
        source_uri=session.source_uri,
        title=session.custom_title or session.ai_title or session.summary,
        source_date=max(dates) if dates else None,
        metadata={
            "session_id": session.session_id,
            "cwd": session.cwd,
            "git_branch": session.git_branch,
            "version": session.version,
            "created_at": iso(min(dates)) if dates else None,
            "updated_at": iso(max(dates)) if dates else None,
            "message_count": len(sections),
        },
    )
