"""Claude.ai export adapter: ``conversations.json`` or the export ``.zip`` -> one Document per chat.

Input: the ``conversations.json`` of a Claude.ai data export, the export ``.zip`` as downloaded
(``conversations.json`` is read from inside it, at any folder depth; ``users.json`` and
``projects.json`` are ignored), or a single conversation object.

What is kept, per message (one :class:`Section` per message, ``atomic=False``, text prefixed
with ``User: `` or ``Assistant: ``):

- ``content`` blocks, in order, when the message has any; the ``text`` field otherwise (older
  exports have ``text`` only; newer ones may leave it empty).
- ``text`` blocks: kept.
- ``tool_use`` blocks: a short ``[tool_use: NAME]`` line, never the JSON input. Exception: the
  ``artifacts`` tool with a string ``input.content`` becomes ``[artifact: TITLE]`` plus that
  content, the same as an inline artifact of an older export.
- ``tool_result`` blocks: ``[tool_result: NAME]`` plus their plain text (a string, or the
  ``text`` items of a list), capped at :data:`TOOL_RESULT_CAP` characters (2,000) and marked
  ``[...]`` when cut. Non-text items (search ``knowledge`` cards, images) are dropped and counted
  as ``tool_result_non_text``.
- ``thinking`` and ``redacted_thinking`` blocks: skipped, counted as ``thinking``.
- any other block type: skipped, counted as ``unknown_block:<type>``.
- inline ``<antArtifact title="...">...</antArtifact>`` markup (older exports): the tag is
  replaced by ``[artifact: TITLE]`` and the artifact content is kept as text.
- inline ``<antThinking>...</antThinking>`` (older exports): hidden reasoning, removed and
  counted as ``thinking``.
- ``attachments`` with a non-empty ``extracted_content``: one extra Section right after the
  message, text ``Attachment <file_name>:\\n<extracted_content>``, metadata ``kind: attachment``.
  ``files`` (names of uploaded images and files without text) are ignored.

Messages are put in ``created_at`` order (stable, so equal times keep file order) when every
message has a readable ``created_at``; older exports list some messages out of order.
Otherwise file order is kept.

A conversation with no messages, or only empty ones, is counted in ``AdapterReport.empty``; a
conversation that raises while parsing goes to ``AdapterReport.failed``. So
``len(documents) + empty + len(failed)`` equals the number of conversations in the file. A
``memories.json`` in the zip (or beside ``conversations.json``) becomes one extra Document with
adapter ``claude_ai_memories``, outside that count.
"""

from __future__ import annotations

import contextlib
import json
import re
import zipfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

from memsql.adapters.base import (AdapterError, AdapterReport, Document, Section, StreamReport, path_text,
                                  with_neighbour_context)

ADAPTER = "claude_ai"
MEMORIES_ADAPTER = "claude_ai_memories"
TOOL_RESULT_CAP = 2000
"""Characters kept of one tool result's text."""

_SPEAKERS = {"human": "human", "user": "human", "assistant": "assistant"}
_PREFIXES = {"human": "User", "assistant": "Assistant"}
_ARTIFACT = re.compile(r"<antArtifact\b([^>]*)>(.*?)</antArtifact>", re.DOTALL)
_ARTIFACT_TAG = re.compile(r"</?antArtifact\b[^>]*>")
_ANT_THINKING = re.compile(r"<antThinking>.*?</antThinking>\s*", re.DOTALL)
_TITLE_ATTR = re.compile(r'\btitle="([^"]*)"')


def parse_timestamp(value: Any) -> datetime | None:
    """Reads a timestamp of any export into an aware UTC datetime.

    Args:
        value: an ISO 8601 string (with or without zone; a naive time is taken as UTC), or
            epoch seconds / milliseconds as a number or numeric string (milliseconds when the
            value is above 1e11).

    Returns:
        The time in UTC, or None when the value is missing or unreadable.
    """
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            try:
                parsed = datetime.fromisoformat(text)
            except ValueError:
                return None
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=UTC)
            return parsed.astimezone(UTC)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if abs(value) > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


def iso(value: datetime | None) -> str | None:
    """ISO 8601 text of a datetime, or None (for JSON metadata)."""
    return value.isoformat() if value else None


@contextlib.contextmanager
def _open_export(path: Path, member: str):
    """A binary stream of the JSON file, or of ``member`` inside an export zip (never read whole)."""
    try:
        with contextlib.ExitStack() as stack:
            if zipfile.is_zipfile(path):
                archive = stack.enter_context(zipfile.ZipFile(path))
                name = _zip_member(archive, member)
                if name is None:
                    raise AdapterError(f"{path_text(path)}: the zip holds no {member}")
                handle = stack.enter_context(archive.open(name))
            else:
                handle = stack.enter_context(path.open("rb"))
            yield handle
    except (OSError, zipfile.BadZipFile) as exc:
        raise AdapterError(f"{path_text(path)}: cannot read: {exc}") from exc


def iter_export_json(path: str | Path, member: str = "conversations.json", key: str | None = None) -> Iterator[Any]:
    """The conversations of a JSON export one at a time, parsed as a stream (ijson), so memory stays bounded
    whatever the file's size: the items of a top-level list, or a single top-level object.

    Args:
        path: a JSON file or a zip archive.
        member: file name looked up in a zip, at any folder depth (shallowest first).
        key: a top-level object must have this field to count as a single conversation.

    Yields:
        Each conversation's decoded JSON value (numbers as int / float).

    Raises:
        AdapterError: the file cannot be read, the zip has no ``member``, the text is not JSON (also when that is
            found after the first conversations), or its top level is neither a list nor an object.
    """
    import ijson

    path = Path(path)
    with _open_export(path, member) as handle:
        head = handle.peek(4096)[:4096].lstrip(b" \t\r\n")
        if head.startswith(b"\xef\xbb\xbf"):
            handle.read(3)
            head = head[3:].lstrip(b" \t\r\n")
        if head.startswith(b"{"):
            value = _loads(path, handle.read())
            if key is not None and key not in value:
                raise AdapterError(f"{path_text(path)}: expected a list of conversations, got an object without {key}")
            yield value
            return
        if not head.startswith(b"["):
            value = _loads(path, handle.read())
            raise AdapterError(f"{path_text(path)}: expected a list of conversations, got {type(value).__name__}")
        done = 0
        try:
            for item in ijson.items(handle, "item", use_float=True):
                yield item
                done += 1
            return
        except ijson.JSONError as exc:
            raise AdapterError(f"{path_text(path)}: not valid JSON: {exc}") from exc
        except UnicodeDecodeError:
            pass
    # The C parser turns a lone surrogate escape ("\ud800", valid JSON, written by exports that cut an emoji in
    # half) into bytes that are not UTF-8 and stops. The file is read again by ijson's pure Python parser, which
    # keeps such escapes (text_for_postgres makes them U+FFFD), skipping the conversations already given: slower,
    # memory still bounded. A file that really is not UTF-8 fails here too.
    from ijson.backends import python as slow

    with _open_export(path, member) as handle:
        if handle.peek(3)[:3] == b"\xef\xbb\xbf":
            handle.read(3)
        try:
            for i, item in enumerate(slow.items(handle, "item", use_float=True)):
                if i >= done:
                    yield item
        except (ijson.JSONError, UnicodeDecodeError) as exc:
            raise AdapterError(f"{path_text(path)}: not valid JSON: {exc}") from exc


def _loads(path: Path, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AdapterError(f"{path_text(path)}: not valid JSON: {exc}") from exc


def stream_conversations(path: str | Path, key: str, export: str,
                         build: Callable[[Any, str, Counter], Document | None],
                         label: Callable[[Any, int], str]) -> StreamReport:
    """One Document per conversation of an export, read as a stream (:func:`iter_export_json`).

    Args:
        path: the export (JSON or zip).
        key: the field every conversation of this format has ("chat_messages", "mapping").
        export: the format's name for errors ("Claude.ai", "ChatGPT").
        build: (conversation, source_uri, skipped counter) -> Document, or None when it holds nothing.
        label: (conversation, index) -> how a failed conversation is named.

    Returns:
        A :class:`StreamReport`: a conversation that raises is counted in ``failed``, an empty one in ``empty``.
        Its documents raise AdapterError when the file is no such export (the first conversation lacks ``key``) or
        the JSON breaks off.
    """
    source = path_text(path)

    def produce(report: StreamReport) -> Iterator[Document]:
        skipped: Counter[str] = Counter()
        try:
            for index, conversation in enumerate(iter_export_json(path, key=key)):
                if index == 0 and not (isinstance(conversation, dict) and key in conversation):
                    raise AdapterError(f"{source}: the first conversation has no {key}; not a {export} export")
                local: Counter[str] = Counter()
                try:
                    document = build(conversation, str(path), local)
                except Exception as exc:  # one bad conversation must not stop the import
                    report.failed.append((label(conversation, index), f"{type(exc).__name__}: {exc}"))
                    continue
                skipped.update(local)
                if document is None:
                    report.empty += 1
                    continue
                if document.source_date is None and not any(s.source_date for s in document.sections):
                    # neither the conversation nor a message has a usable time
                    report.warnings.append((f"{source} (conversation {document.title or document.source_key!r})",
                                            "no date in the export: it ages from when it is stored (as new)"))
                yield document
        finally:
            report.skipped_blocks.update(skipped)

    return StreamReport(produce)


def _zip_member(archive: zipfile.ZipFile, member: str) -> str | None:
    names = [n for n in archive.namelist() if PurePosixPath(n).name == member]
    return min(names, key=lambda n: (n.count("/"), n)) if names else None


def parse_claude_ai(path: str | Path) -> AdapterReport:
    """Parses a Claude.ai export into one Document per conversation (all of them in memory: see
    :func:`stream_claude_ai` for large exports).

    Args:
        path: ``conversations.json``, the export ``.zip``, or a JSON file holding one
            conversation object.

    Returns:
        The documents (``source_key`` ``claude_ai:<uuid>``), the number of empty conversations,
        the conversations that failed with their reason, and counts of skipped content by kind
        (see the module docstring).

    Raises:
        AdapterError: the file is not JSON, or not a list of Claude.ai conversations.
    """
    return stream_claude_ai(path).collect()


def stream_claude_ai(path: str | Path) -> StreamReport:
    """:func:`parse_claude_ai` as a stream: the conversations are parsed one at a time while ``documents`` is
    consumed (peak memory independent of the export's size); the memories.json document comes last."""
    stream = stream_conversations(path, "chat_messages", "Claude.ai", _conversation_document, _conversation_label)
    conversations = stream.documents

    def documents() -> Iterator[Document]:
        yield from conversations
        skipped: Counter[str] = Counter()
        memories = _memories_document(path, skipped)
        for kind, n in skipped.items():
            stream.skipped_blocks[kind] = stream.skipped_blocks.get(kind, 0) + n
        if memories is not None:
            yield memories

    stream.documents = documents()
    return stream


def _conversation_label(conversation: Any, index: int) -> str:
    uuid = conversation.get("uuid") if isinstance(conversation, dict) else None
    return f"claude_ai:{uuid}" if uuid else f"conversation[{index}]"


def _conversation_document(conv: Any, source_uri: str, skipped: Counter[str]) -> Document | None:
    if not isinstance(conv, dict):
        raise ValueError(f"conversation is a {type(conv).__name__}, not an object")
    uuid = conv.get("uuid")
    if not isinstance(uuid, str) or not uuid:
        raise ValueError("conversation has no uuid")
    messages = conv.get("chat_messages")
    if not isinstance(messages, list):
        raise ValueError("chat_messages is not a list")
    if not all(isinstance(m, dict) for m in messages):
        raise ValueError("a chat message is not an object")

    times = [parse_timestamp(m.get("created_at")) for m in messages]
    order = list(range(len(messages)))
    if all(times):
        order.sort(key=lambda i: times[i])

    sections: list[Section] = []
    message_count = 0
    for i in order:
        message_sections = _message_sections(messages[i], times[i], uuid, skipped)
        if message_sections:
            message_count += 1
            sections.extend(message_sections)
    if not sections:
        return None

    created = parse_timestamp(conv.get("created_at"))
    updated = parse_timestamp(conv.get("updated_at"))
    return Document(
        source_key=f"{ADAPTER}:{uuid}",
        adapter=ADAPTER,
        sections=with_neighbour_context(sections),
        source_uri=source_uri,
        title=conv.get("name") or None,
        source_date=updated or created,
        metadata={
            "conversation_id": uuid,
            "created_at": iso(created),
            "updated_at": iso(updated),
            "message_count": message_count,
        },
    )


def _message_sections(
    message: dict[str, Any], created: datetime | None, conversation_id: str, skipped: Counter[str]
) -> list[Section]:
    sender = str(message.get("sender") or "unknown")
    speaker = _SPEAKERS.get(sender, sender)
    metadata = {
        "speaker": speaker,
        "message_id": message.get("uuid"),
        "conversation_id": conversation_id,
        "created_at": iso(created),
    }
    sections = []
    text = _message_text(message, skipped)
    if text:
        prefix = _PREFIXES.get(speaker, sender.capitalize())
        sections.append(Section(f"{prefix}: {text}", metadata, created))
    for attachment in message.get("attachments") or []:
        content = (attachment.get("extracted_content") or "").strip()
        if content:
            name = attachment.get("file_name") or "(unnamed)"
            sections.append(
                Section(
                    f"Attachment {name}:\n{content}",
                    {**metadata, "kind": "attachment", "file_name": name},
                    created,
                )
            )
    return sections


def _message_text(message: dict[str, Any], skipped: Counter[str]) -> str:
    pieces: list[str] = []
    content = message.get("content")
    if isinstance(content, list):
        for block in content:
            piece = _block_text(block, skipped)
            if piece:
                pieces.append(piece)
    text = "\n\n".join(pieces) if pieces else _clean_markup(message.get("text") or "", skipped)
    return text.strip()


def _block_text(block: Any, skipped: Counter[str]) -> str:
    kind = block.get("type") if isinstance(block, dict) else None
    if kind == "text":
        return _clean_markup(block.get("text") or "", skipped).strip()
    if kind in ("thinking", "redacted_thinking"):
        skipped["thinking"] += 1
        return ""
    if kind == "tool_use":
        return _tool_use_text(block)
    if kind == "tool_result":
        return _tool_result_text(block, skipped)
    skipped[f"unknown_block:{kind}"] += 1
    return ""


def _tool_use_text(block: dict[str, Any]) -> str:
    name = block.get("name") or "unknown"
    tool_input = block.get("input")
    if name == "artifacts" and isinstance(tool_input, dict):
        content = tool_input.get("content")
        if isinstance(content, str) and content.strip():
            title = tool_input.get("title") or tool_input.get("id") or "untitled"
            return f"[artifact: {title}]\n{content.strip()}"
    return f"[tool_use: {name}]"


def _tool_result_text(block: dict[str, Any], skipped: Counter[str]) -> str:
    content = block.get("content")
    items = [content] if isinstance(content, str) else content if isinstance(content, list) else []
    texts = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif (
            isinstance(item, dict)
            and item.get("type") == "text"
            and isinstance(item.get("text"), str)
        ):
            texts.append(item["text"])
        else:
            skipped["tool_result_non_text"] += 1
    text = "\n".join(t.strip() for t in texts if t.strip())
    if not text:
        return ""
    if len(text) > TOOL_RESULT_CAP:
        text = text[:TOOL_RESULT_CAP].rstrip() + " [...]"
    return f"[tool_result: {block.get('name') or 'unknown'}]\n{text}"


def _clean_markup(text: str, skipped: Counter[str]) -> str:
    """Drops <antThinking> and turns <antArtifact> tags into ``[artifact: TITLE]`` lines."""
    text, thinking = _ANT_THINKING.subn("", text)
    if thinking:
        skipped["thinking"] += thinking
    text = _ARTIFACT.sub(lambda m: f"{_artifact_header(m.group(1))}\n{m.group(2).strip()}", text)
    # A cut-off message may hold an opening tag without its end.
    return _ARTIFACT_TAG.sub(
        lambda m: "" if m.group(0).startswith("</") else _artifact_header(m.group(0)) + "\n", text
    )


def _artifact_header(attributes: str) -> str:
    title = _TITLE_ATTR.search(attributes)
    return f"[artifact: {title.group(1) if title else 'untitled'}]"


def _memories_document(path: str | Path, skipped: Counter[str]) -> Document | None:
    """The export's memories.json (zip member or sibling file) as one Document, if present."""
    path = Path(path)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                name = _zip_member(archive, "memories.json")
                raw = archive.read(name) if name else None
        else:
            sibling = path.with_name("memories.json")
            raw = sibling.read_bytes() if sibling.is_file() else None
        data = json.loads(raw) if raw is not None else None
    except (OSError, ValueError, zipfile.BadZipFile):
        skipped["memories_unreadable"] += 1
        return None
    if data is None:
        return None

    sections: list[Section] = []
    account = None
    for item in data if isinstance(data, list) else [data]:
        if not isinstance(item, dict):
            continue
        account = account or item.get("account_uuid")
        text = item.get("conversations_memory")
        if isinstance(text, str) and text.strip():
            sections.append(Section(text.strip(), {"kind": "memory", "scope": "account"}))
        projects = item.get("project_memories")
        for project_id, text in projects.items() if isinstance(projects, dict) else []:
            if isinstance(text, str) and text.strip():
                sections.append(
                    Section(
                        text.strip(),
                        {"kind": "memory", "scope": "project", "project_id": project_id},
                    )
                )
    if not sections:
        return None
    return Document(
        source_key=f"{MEMORIES_ADAPTER}:{account or 'account'}",
        adapter=MEMORIES_ADAPTER,
        sections=tuple(sections),  # independent facts: no neighbour context
        source_uri=str(path),
        title="Claude.ai memories",
        metadata={"account_uuid": account},
    )
