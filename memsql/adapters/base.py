"""Shared types of the ingestion adapters.

An adapter turns one source (a file, an export) into :class:`Document` objects made of
:class:`Section` objects. Adapters are pure functions: no database, no model.
The chunker (:mod:`memsql.chunking`) turns sections into chunks of at most the model window.
"""

from __future__ import annotations

import codecs
import hashlib
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence


@dataclass(frozen=True)
class Section:
    """A contiguous piece of a document that keeps its own metadata.

    Attributes:
        text: the text, already cleaned (no raw JSON of tool calls, no markup noise).
        metadata: JSON-serialisable facts about the piece, e.g. ``heading_path`` (list of
            headings) for markdown, ``speaker``/``message_id``/``conversation_id`` for chats.
        source_date: when the piece was written (timezone-aware UTC), else None.
        atomic: True when the chunker must not merge this section with its neighbours
            (it may still split it when it exceeds the model window).
        context: text embedded together with the section but not stored as its content (e.g. the
            previous message of a conversation, or the session date), so a short turn is embedded
            with what it answers. The chunk's own text always comes first in the embedded input.
    """

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    source_date: datetime | None = None
    atomic: bool = False
    context: str | None = None

    def __post_init__(self) -> None:
        # every adapter's text reaches PostgreSQL and the tokenizer in one form (see text_for_postgres)
        object.__setattr__(self, "text", text_for_postgres(self.text))
        if self.context is not None:
            object.__setattr__(self, "context", text_for_postgres(self.context))
        object.__setattr__(self, "metadata", json_for_postgres(self.metadata))


@dataclass(frozen=True)
class Document:
    """One ingested source: a file, a conversation, a note.

    Attributes:
        source_key: stable identity inside a namespace (file path, conversation uuid, session id);
            re-ingesting the same key replaces the document when its content changed.
        adapter: name of the adapter that produced it ("markdown", "text", "claude_ai", ...).
        sections: the content, in order.
        source_uri: where it came from (file path or URI), for display.
        title: a human title (first heading, conversation name), or None.
        source_date: when the source was written or last updated (timezone-aware), or None.
        metadata: JSON-serialisable document metadata (front matter, export fields).
    """

    source_key: str
    adapter: str
    sections: tuple[Section, ...]
    source_uri: str | None = None
    title: str | None = None
    source_date: datetime | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.title is not None:
            object.__setattr__(self, "title", text_for_postgres(self.title))
        object.__setattr__(self, "metadata", json_for_postgres(self.metadata))

    @property
    def content_hash(self) -> str:
        """sha256 hex of the sections' text and metadata: equal hashes mean nothing to re-ingest."""
        h = hashlib.sha256()
        for s in self.sections:
            h.update(s.text.encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
            h.update(repr(sorted(s.metadata.items())).encode("utf-8", "surrogatepass"))
            if s.context:
                h.update(b"\x02" + s.context.encode("utf-8", "surrogatepass"))
            h.update(b"\x01")
        return h.hexdigest()


@dataclass(frozen=True)
class AdapterReport:
    """What an adapter made of one input: documents plus what it could not use.

    Attributes:
        documents: the documents produced.
        empty: number of sources that held no content (e.g. conversations with no messages).
        failed: list of (source, reason) pairs that could not be parsed; never raised.
        skipped_blocks: counts of content pieces skipped by kind (e.g. unknown block types,
            malformed JSONL lines), for the ingest summary.
    """

    documents: tuple[Document, ...] = ()
    empty: int = 0
    failed: tuple[tuple[str, str], ...] = ()
    skipped_blocks: dict[str, int] = field(default_factory=dict)


class AdapterError(ValueError):
    """A source that an adapter cannot read or parse (message says which and why)."""


# Checked in this order: the UTF-32 LE mark starts with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def text_for_postgres(text: str) -> str:
    """Text PostgreSQL, the JSON encoder and the tokenizer all accept, meaning kept.

    NUL characters are removed (PostgreSQL text cannot hold them); lone UTF-16 surrogates (from a JSON
    escape such as ``"\\ud800"`` or a ``surrogateescape`` decode) become U+FFFD; the text is put in Unicode
    normal form NFC, so "caf\u00e9" typed precomposed and "cafe\u0301" typed decomposed are the same text for
    storage, hashing and search.

    Args:
        text: any str.

    Returns:
        The cleaned text (the same object when nothing had to change).
    """
    if "\x00" in text:
        text = text.replace("\x00", "")
    if _SURROGATE.search(text):
        text = _SURROGATE.sub("\ufffd", text)
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    return text


def json_for_postgres(obj: Any) -> Any:
    """A JSON-serialisable value with every string (keys too) passed through :func:`text_for_postgres`:
    jsonb rejects ``\\u0000`` and lone surrogate escapes."""
    if isinstance(obj, str):
        return text_for_postgres(obj)
    if isinstance(obj, dict):
        return {(text_for_postgres(k) if isinstance(k, str) else k): json_for_postgres(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [json_for_postgres(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(json_for_postgres(v) for v in obj)
    return obj


def clean_text(text: str) -> str:
    """Normalise decoded text the same way for every adapter.

    Drops a leading byte order mark, turns CRLF and CR line ends into LF, then
    :func:`text_for_postgres` (no NUL, no lone surrogate, NFC).

    Args:
        text: decoded text.

    Returns:
        The cleaned text.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text_for_postgres(text)


def read_text_file(path: Path | str) -> str:
    """Read a text file whatever its encoding, never failing on bad bytes.

    A byte order mark selects UTF-8, UTF-16 or UTF-32; without one the bytes are read as
    UTF-8, invalid sequences becoming U+FFFD. The result goes through :func:`clean_text`.

    Args:
        path: the file to read.

    Returns:
        The decoded, cleaned text ("" for an empty file).

    Raises:
        AdapterError: the file cannot be read (missing, a directory, no permission).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise AdapterError(f"cannot read {path}: {exc.strerror or exc}") from exc
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            encoding = name
            break
    return clean_text(data.decode(encoding, errors="replace"))


def with_neighbour_context(sections: Sequence[Section], before: int = 1, after: int = 1,
                           max_chars: int = 600) -> tuple[Section, ...]:
    """Sections of a conversation with their neighbouring turns as embedding context.

    A short turn ("yes, on Friday") means little alone; embedded with the turns around it, the dense
    arm can find it. Measured on LoCoMo dev (1,451 turns, 383 questions): dense nDCG@10 0.338 -> 0.387
    with the previous and next turn, hybrid 0.553 -> 0.561 (bench/results/quality.md).

    Args:
        sections: the conversation's sections in order.
        before, after: neighbouring turns on each side.
        max_chars: characters kept of each neighbour.

    Returns:
        The same sections with ``context`` set (stored content is unchanged).
    """
    out = []
    for i, s in enumerate(sections):
        near = [t.text[:max_chars] for t in sections[max(0, i - before):i]]
        near += [t.text[:max_chars] for t in sections[i + 1:i + 1 + after]]
        out.append(replace(s, context="\n".join(near) or None))
    return tuple(out)
