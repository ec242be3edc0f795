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
        # a file name that is not valid UTF-8 (surrogate-escaped by the OS layer) keeps a distinct, readable key
        object.__setattr__(self, "source_key", path_text(self.source_key))
        if self.source_uri is not None:
            object.__setattr__(self, "source_uri", path_text(self.source_uri))
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


def path_text(value: str | Path) -> str:
    """A path (or any text) as valid UTF-8 text: bytes of a file name that are not UTF-8 (which Python holds as
    lone surrogates) become ``\\udcXX`` escapes, so the name stays distinct, readable and printable."""
    text = str(value)
    if _SURROGATE.search(text):
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_ESCAPED_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")


def disk_path(text: str) -> str:
    """The file-system name of a stored path (:func:`path_text`'s inverse): its ``\\udcXX`` escapes become the
    surrogates Python uses for those bytes again, so ``os.path.exists`` finds a file whose name is not UTF-8."""
    return _ESCAPED_BYTE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text) if "\\udc" in text else text


@dataclass(frozen=True)
class AdapterReport:
    """What an adapter made of one input: documents plus what it could not use.

    Attributes:
        documents: the documents produced.
        empty: number of sources that held no content (e.g. conversations with no messages).
        failed: list of (source, reason) pairs that could not be parsed; never raised.
        skipped_blocks: counts of content pieces skipped by kind (e.g. unknown block types,
            malformed JSONL lines), for the ingest summary.
        warnings: (source, message) pairs about what was repaired while reading (NUL bytes removed, a legacy
            encoding detected), for the ingest summary.
    """

    documents: tuple[Document, ...] = ()
    empty: int = 0
    failed: tuple[tuple[str, str], ...] = ()
    skipped_blocks: dict[str, int] = field(default_factory=dict)
    warnings: tuple[tuple[str, str], ...] = ()


class StreamReport:
    """An :class:`AdapterReport` whose documents come one at a time (large exports): ``documents`` is an iterator,
    and ``empty``, ``failed``, ``skipped_blocks`` and ``warnings`` are complete once it is exhausted.

    Args:
        produce: a generator function taking this report (it adds to the counts) and yielding documents.
    """

    def __init__(self, produce) -> None:
        self.empty = 0
        self.failed: list[tuple[str, str]] = []
        self.skipped_blocks: dict[str, int] = {}
        self.warnings: list[tuple[str, str]] = []
        self.documents = produce(self)

    def collect(self) -> AdapterReport:
        """Every document read into an :class:`AdapterReport` (small inputs, tests)."""
        documents = tuple(self.documents)
        return AdapterReport(documents, self.empty, tuple(self.failed), dict(self.skipped_blocks),
                             tuple(self.warnings))


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


@dataclass(frozen=True)
class Decoded:
    """A text file's bytes decoded by :func:`decode_bytes`.

    Attributes:
        text: the decoded, cleaned text (:func:`clean_text`).
        encoding: the codec that decoded it ("utf-8", "utf-16", "cp1252", ...).
        nul_removed: NUL bytes dropped before decoding (PostgreSQL text cannot hold them).
    """

    text: str
    encoding: str
    nul_removed: int = 0

    def warnings(self) -> list[str]:
        """What was repaired, one line each (empty when the file was clean UTF-8)."""
        out = []
        if self.nul_removed:
            out.append(f"{self.nul_removed} NUL byte{'s' * (self.nul_removed != 1)} removed")
        if self.encoding not in ("utf-8", "ascii"):
            out.append(f"decoded as {self.encoding}")
        return out


BINARY_NUL_SHARE = 0.01   # more NUL bytes than this share of the file (and than BINARY_NUL_MIN): a binary file
BINARY_NUL_MIN = 16
_PREFERRED = ("cp1252", "latin_1")
BINARY_CONTROL_SHARE = 0.01  # more control characters (other than tab, line ends, form feed) than this: binary
_CONTROL = re.compile("[\x01-\x08\x0b\x0e-\x1f\x7f]")


def decode_bytes(data: bytes, name: str = "the file") -> Decoded:
    """Decode a text file by its content, never by its name.

    A byte order mark selects UTF-8, UTF-16 or UTF-32; otherwise NUL bytes are removed (counted) and the bytes are
    read as UTF-8 when they are valid UTF-8, else charset-normalizer picks the encoding (Latin-1, cp1252, ...).
    Content that is no text (many NUL or control bytes, no encoding that reads it: an executable, an image,
    random bytes) is refused.

    Args:
        data: the file's bytes.
        name: how to name the file in an error.

    Returns:
        :class:`Decoded`.

    Raises:
        AdapterError: the bytes are not text.
    """
    if not data:
        return Decoded("", "utf-8")
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                raise AdapterError(f"{name}: a binary file (it starts with a {codec} byte order mark but does not "
                                   f"decode as {codec}: {exc.reason}); no adapter reads it") from exc
            return _checked(Decoded(clean_text(text), codec.replace("-sig", "")), name)
    nul = data.count(0)
    if nul > max(BINARY_NUL_MIN, BINARY_NUL_SHARE * len(data)):
        raise AdapterError(f"{name}: a binary file ({nul} NUL bytes in {len(data)}); no adapter reads it")
    if nul:
        data = data.replace(b"\x00", b"")
    try:
        return _checked(Decoded(clean_text(data.decode("utf-8")), "utf-8", nul), name)
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    # without a byte order mark, UTF-16/32 guesses are binary data read two bytes at a time (an image header)
    matches = [m for m in from_bytes(data) if not m.encoding.startswith(("utf_16", "utf_32"))]
    best = matches[0] if matches else None
    if best is None:
        raise AdapterError(f"{name}: a binary file (no text encoding reads it); no adapter reads it")
    # encodings that read the bytes with as little mess (cp1250 often ranks first on Western text, by a language
    # coherence that short texts make noisy: Spanish "¿" and "ñ" became "ż" and "ń"): the Windows Western code page,
    # then Latin-1, the most common legacy encodings of such files. Central European text read as cp1252 is messier
    # ("Za¿ó³æ"), so cp1250 still wins there.
    tied = {m.encoding: m for m in matches if m.chaos <= best.chaos}
    best = next((tied[e] for e in _PREFERRED if e in tied), best)
    return _checked(Decoded(clean_text(str(best)), best.encoding.replace("_", "-"), nul), name)


def _checked(decoded: Decoded, name: str) -> Decoded:
    controls = len(_CONTROL.findall(decoded.text))
    if controls > BINARY_CONTROL_SHARE * max(len(decoded.text), 1):
        raise AdapterError(f"{name}: a binary file ({controls} control characters in {len(decoded.text)}); "
                           "no adapter reads it")
    return decoded


def read_file(path: Path | str) -> Decoded:
    """Read and decode a text file (:func:`decode_bytes`).

    Raises:
        AdapterError: the file cannot be read (missing, a directory, no permission) or is not text.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise AdapterError(f"cannot read {path_text(path)}: {exc.strerror or exc}") from exc
    return decode_bytes(data, path_text(path))


def read_text_file(path: Path | str) -> str:
    """The decoded text of a text file (:func:`read_file`), for callers that need no warnings.

    Raises:
        AdapterError: the file cannot be read or is not text.
    """
    return read_file(path).text


def with_neighbour_context(sections: Sequence[Section], before: int = 1, after: int = 1,
                           max_chars: int = 600, assistant_chars: int = 200) -> tuple[Section, ...]:
    """Sections of a conversation with their neighbouring turns as embedding context.

    A short turn ("yes, on Friday") means little alone; embedded with the turns around it, the dense
    arm can find it. Measured on LoCoMo dev (1,451 turns, 383 questions): dense nDCG@10 0.338 -> 0.387
    with the previous and next turn, hybrid 0.553 -> 0.561 (bench/results/quality.md).

    An assistant's turn is cut shorter as a neighbour: its answers run to thousands of characters
    (LongMemEval: median 2,116 against 209 for the user's turns), and 600 of them outweigh the short
    user turn they surround. Measured (bench/results/neighbour_context.md): LongMemEval turn
    nDCG@10 of the default 0.642 -> 0.673 (oracle_dev) and 0.558 -> 0.614 (s_dev); LoCoMo, whose
    speakers are people, is unchanged. Cutting every neighbour at 200 instead cost LoCoMo 0.003 nDCG@10.

    Args:
        sections: the conversation's sections in order; a section whose ``metadata["speaker"]`` is
            ``"assistant"`` is an assistant's turn.
        before, after: neighbouring turns on each side.
        max_chars: characters kept of each neighbour.
        assistant_chars: characters kept of a neighbour that is an assistant's turn.

    Returns:
        The same sections with ``context`` set (stored content is unchanged).
    """
    def cut(t: Section) -> str:
        return t.text[:assistant_chars if t.metadata.get("speaker") == "assistant" else max_chars]

    out = []
    for i, s in enumerate(sections):
        near = [cut(t) for t in sections[max(0, i - before):i]]
        near += [cut(t) for t in sections[i + 1:i + 1 + after]]
        out.append(replace(s, context="\n".join(near) or None))
    return tuple(out)
