"""ChatGPT export adapter: ``conversations.json`` -> one Document per conversation.

Input: the ``conversations.json`` of a ChatGPT data export (a list of conversations), the export
``.zip`` holding it, or a JSON file with a single conversation object.

A conversation is a tree (``mapping``: node id -> ``{message, parent, children}``) where edits
and regenerations make branches. Only the branch the user last saw is kept: from
``current_node`` up through ``parent`` links to the root, then reversed. When ``current_node``
is missing, the leaf with the latest message ``create_time`` is used.

What is kept (one :class:`Section` per message, ``atomic=False``):

- ``user`` and ``assistant`` messages with ``content_type`` ``text`` or ``multimodal_text``:
  their string ``parts`` (and the text of ``audio_transcription`` parts of voice chats), text
  prefixed with ``User: `` or ``Assistant: ``. Citation markers (``【4†source】`` and the
  private-use ``\\ue200cite...\\ue201`` spans) are removed.
- ``tool`` messages whose content is plain text (``text`` parts or ``execution_output``) of at
  most :data:`TOOL_OUTPUT_MAX` characters (2,000), prefixed with ``Tool (<name>): ``.

What is skipped, counted in ``AdapterReport.skipped_blocks`` under the key shown:

- ``system`` messages: ``system``; custom-instruction context
  (``user_editable_context``/``model_editable_context``): ``context``; messages hidden from the
  conversation view (``is_visually_hidden_from_conversation``): ``hidden``.
- reasoning: ``thoughts`` and ``reasoning_recap`` content, under those names.
- assistant messages addressed to a tool (``recipient`` other than ``all``, e.g. a search query
  or code to run): ``tool_call``.
- tool output that is not plain text (browsing displays, images): ``tool_output``; plain text
  over the cap: ``tool_output_long``.
- non-text parts of a message (image and file pointers): ``non_text_part``.
- any other content type: ``unknown_content:<type>``; any other author role:
  ``unknown_role:<role>``.

Messages of other branches are neither kept nor counted. A conversation with nothing kept is
counted in ``AdapterReport.empty``; one that raises goes to ``AdapterReport.failed``, so
``len(documents) + empty + len(failed)`` equals the number of conversations.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from memsql.adapters.base import AdapterReport, Document, Section, StreamReport, with_neighbour_context
from memsql.adapters.claude_ai import iso, parse_timestamp, stream_conversations

ADAPTER = "chatgpt"
TOOL_OUTPUT_MAX = 2000
"""Longest tool output (characters) kept as text; longer output is skipped."""

_TEXT_TYPES = ("text", "multimodal_text")
_REASONING_TYPES = ("thoughts", "reasoning_recap")
_CONTEXT_TYPES = ("user_editable_context", "model_editable_context")
_PREFIXES = {"user": "User", "assistant": "Assistant"}
_CITATIONS = re.compile(r"\ue200[^\ue201]*\ue201|【\d+(?::\d+)?†[^】]*】")


def parse_chatgpt(path: str | Path) -> AdapterReport:
    """Parses a ChatGPT export into one Document per conversation (current branch only; all in memory, see
    :func:`stream_chatgpt` for large exports).

    Args:
        path: ``conversations.json``, the export ``.zip``, or a JSON file holding one
            conversation object.

    Returns:
        The documents (``source_key`` ``chatgpt:<conversation id>``), the number of empty
        conversations, the conversations that failed with their reason, and counts of skipped
        content by kind (see the module docstring).

    Raises:
        AdapterError: the file is not JSON, or not a list of ChatGPT conversations.
    """
    return stream_chatgpt(path).collect()


def stream_chatgpt(path: str | Path) -> StreamReport:
    """:func:`parse_chatgpt` as a stream: conversations parsed one at a time while ``documents`` is consumed."""
    return stream_conversations(path, "mapping", "ChatGPT", _conversation_document, _label)


def _label(conversation: Any, index: int) -> str:
    if isinstance(conversation, dict):
        conversation_id = conversation.get("conversation_id") or conversation.get("id")
        if conversation_id:
            return f"{ADAPTER}:{conversation_id}"
    return f"conversation[{index}]"


def _conversation_document(conv: Any, source_uri: str, skipped: Counter[str]) -> Document | None:
    if not isinstance(conv, dict):
        raise ValueError(f"conversation is a {type(conv).__name__}, not an object")
    conversation_id = conv.get("conversation_id") or conv.get("id")
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ValueError("conversation has no id")
    mapping = conv.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("mapping is not an object")

    sections = []
    for node_id in current_branch(mapping, conv.get("current_node")):
        message = mapping[node_id].get("message")
        if isinstance(message, dict):
            section = _message_section(message, conversation_id, skipped)
            if section is not None:
                sections.append(section)
    if not sections:
        return None

    created = parse_timestamp(conv.get("create_time"))
    updated = parse_timestamp(conv.get("update_time"))
    metadata = {
        "conversation_id": conversation_id,
        "created_at": iso(created),
        "updated_at": iso(updated),
        "message_count": len(sections),
    }
    if conv.get("default_model_slug"):
        metadata["model"] = conv["default_model_slug"]
    return Document(
        source_key=f"{ADAPTER}:{conversation_id}",
        adapter=ADAPTER,
        sections=with_neighbour_context(sections),
        source_uri=source_uri,
        title=conv.get("title") or None,
        source_date=updated or created,
        metadata=metadata,
    )


def current_branch(mapping: dict[str, Any], current_node: Any) -> list[str]:
    """Node ids from the root down to the current node of a ChatGPT conversation tree.

    Args:
        mapping: the conversation's ``mapping`` (node id -> node with ``parent``).
        current_node: the id of the node the user last saw; when it is not in ``mapping``, the
            leaf with the latest message ``create_time`` is used instead.

    Returns:
        The ids on the branch, root first; empty when the mapping is empty.
    """
    if current_node not in mapping:
        leaves = [
            k for k, node in mapping.items() if isinstance(node, dict) and not node.get("children")
        ]
        if not leaves:
            return []
        current_node = max(leaves, key=lambda k: _create_time(mapping[k]))
    branch: list[str] = []
    node_id = current_node
    while node_id in mapping and node_id not in branch:
        branch.append(node_id)
        node_id = mapping[node_id].get("parent")
    return branch[::-1]


def _create_time(node: dict[str, Any]) -> float:
    message = node.get("message")
    value = message.get("create_time") if isinstance(message, dict) else None
    return float(value) if isinstance(value, (int, float)) else float("-inf")


def _message_section(
    message: dict[str, Any], conversation_id: str, skipped: Counter[str]
) -> Section | None:
    role = (message.get("author") or {}).get("role")
    content = message.get("content") or {}
    content_type = content.get("content_type")
    metadata = message.get("metadata") or {}

    if metadata.get("is_visually_hidden_from_conversation"):
        skipped["hidden"] += 1
        return None
    if content_type in _CONTEXT_TYPES:
        skipped["context"] += 1
        return None
    if role == "system":
        skipped["system"] += 1
        return None
    if content_type in _REASONING_TYPES:
        skipped[content_type] += 1
        return None
    if role == "assistant" and message.get("recipient") not in (None, "all"):
        skipped["tool_call"] += 1
        return None

    if role == "tool":
        text = _tool_text(content, skipped)
        prefix = f"Tool ({(message.get('author') or {}).get('name') or 'unknown'})"
    elif role not in _PREFIXES:
        skipped[f"unknown_role:{role}"] += 1
        return None
    elif content_type in _TEXT_TYPES:
        text = _parts_text(content.get("parts"), skipped)
        prefix = _PREFIXES[role]
    else:
        skipped[f"unknown_content:{content_type}"] += 1
        return None
    if not text:
        return None

    created = parse_timestamp(message.get("create_time"))
    section_metadata = {
        "speaker": "human" if role == "user" else role,
        "message_id": message.get("id"),
        "conversation_id": conversation_id,
        "created_at": iso(created),
    }
    return Section(f"{prefix}: {text}", section_metadata, created)


def _parts_text(parts: Any, skipped: Counter[str]) -> str:
    texts = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("content_type") == "audio_transcription":
            texts.append(part.get("text") or "")
        else:
            skipped["non_text_part"] += 1
    return _CITATIONS.sub("", "\n\n".join(t.strip() for t in texts if t.strip())).strip()


def _tool_text(content: dict[str, Any], skipped: Counter[str]) -> str:
    content_type = content.get("content_type")
    if content_type == "execution_output" and isinstance(content.get("text"), str):
        text = content["text"].strip()
    elif content_type == "text" and isinstance(content.get("parts"), list):
        text = "\n\n".join(p.strip() for p in content["parts"] if isinstance(p, str) and p.strip())
    else:
        skipped["tool_output"] += 1
        return ""
    if len(text) > TOOL_OUTPUT_MAX:
        skipped["tool_output_long"] += 1
        return ""
    return text
