"""Ingestion: adapter -> chunk -> embed -> autosave filter -> topics -> COPY; no document is ever half-written.

The filter needs the chunks' embeddings (novelty is a nearest-neighbour query), so it runs after the
embedder; it applies to conversation adapters (and to documents when [memory.filter] apply_to_documents).
A document whose chunks are all filtered out is not written at all.

Documents whose content hash is already stored are skipped before embedding; a changed
document is revised atomically (memsql.document_upsert + memsql.document_revise + COPY in one
transaction, so a failure never leaves a half-written document): its unchanged chunks keep their
memories (ids, access counts, importance), changed chunks become new versions that supersede the
old ones (still answerable with memory_search as_of / include_superseded). Chunks of several documents are
embedded together in groups for throughput, and a group is written while the next one is being encoded (the
encoder runs in a worker thread; all database work stays on the caller's thread and connection). The new
documents of a group are written in one transaction (their document_upsert calls pipelined, one COPY of their
memories); if that transaction fails, it is rolled back and they are written one transaction each, so one bad
document fails alone. Changed documents are always revised one transaction each.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import stat
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import psycopg

from memsql import db, maintenance
from memsql.adapters.base import AdapterError, AdapterReport, Document, StreamReport, disk_path, path_text
from memsql.chunking import Chunk, chunk, share_message_embeddings, split_messages
from memsql.embedding import Embedder
from memsql.errors import DatabaseUnavailable, from_psycopg
from memsql.redact import redact_document

log = logging.getLogger("memsql.ingest")

SUPPORTED_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".json", ".jsonl", ".zip"}
CONVERSATION_ADAPTERS = {"claude_ai", "claude_code", "chatgpt"}
EXPORT_ADAPTERS = {"claude_ai", "chatgpt"}   # one file holds a person's every conversation (Claude Code: one session)
ADAPTERS = ("markdown", "text", "claude_ai", "claude_code", "chatgpt")  # the names parse_path takes


@dataclass
class IngestSummary:
    """What an ingest did. ``documents`` = inserted + replaced + unchanged.

    Attributes:
        inserted, replaced, unchanged: documents by outcome (replaced = changed and revised; a change of white space
            only keeps every memory and counts as unchanged).
        older: conversation exports not revised because the stored version has a later source date (an older export;
            a file of another adapter is revised whatever its date); older_sources: their sources.
        duplicates: (source, the source already holding the same content) for new documents not written because
            their content is stored under another key whose source is still there (a copy of a file at a second path).
        moved: (old source, new source), each pair once, of the stored documents now read from another file: a file
            moved or renamed (its content stored under a path gone from disk) or an export read from a new place; the
            stored document follows it (key, source, title), its memories, versions and access counts kept; counted
            in ``unchanged`` (in a dry run: would be moved).
        chunks: memories written.
        windowed: memories of this run's documents whose windows were computed after the writes
            (memsql.memory_windows; one that fits one window gets none).
        kept: chunks of replaced documents that were unchanged and kept their memory.
        empty: sources with no content (an empty or blank file, a conversation without messages).
        emptied: (source, memories ended) of the stored documents whose source now holds nothing (a file emptied):
            the document is revised to no memory (memsql.document_revise), its memories' versions end (still found
            with include_superseded or as_of); counted in ``replaced`` and ``empty`` (in a dry run: would be
            emptied, counted in would_replace).
        updated: the stored documents whose text is unchanged and whose front matter or title changed: applied to
            the document and its current memories without embedding anything again (counted in ``unchanged``; in a
            dry run: would be updated).
        failed: (source, reason) for each file or document that could not be ingested.
        warnings: (source, message) for what was repaired while reading (NUL bytes removed, a legacy encoding).
        skipped_blocks: content pieces skipped by the adapters, by kind.
        filtered: chunks the autosave filter did not save, by reason (too_short, excluded, near_duplicate,
            low_score); filter_kept: chunks it saved (or would save, in a dry run).
        decisions: (source, chunk index, text, memsql.filter.Decision) of every chunk the filter judged, kept
            only when the Ingestor was asked to (dry runs and --explain).
        missing: (source, memories, archived) of the documents read from files at or below the ingested paths whose
            files are gone: still searchable (archived False) unless the run pruned them (archived True: their
            memories moved to the archive, memory_restore brings them back).
        dropped: (source, memories, archived) of the conversations stored from an export read whole by this run
            that it no longer holds (deleted in the app since): still searchable unless the run pruned them, as
            ``missing``.
        seconds: wall time.
        secrets: secrets and <private> spans replaced by markers before chunking (memsql.redact), by kind.
        filter_enabled: the autosave filter was on for this run ([memory.filter] enabled).
        dry_run: the run wrote nothing; would_insert, would_replace: the new and changed documents it would have
            written, would_chunks: their chunks it would have saved (after the autosave filter, where it applies).
    """

    inserted: int = 0
    replaced: int = 0
    unchanged: int = 0
    older: int = 0
    older_sources: list[str] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    windowed: int = 0
    kept: int = 0
    empty: int = 0
    emptied: list[tuple[str, int]] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[tuple[str, str]] = field(default_factory=list)
    skipped_blocks: dict[str, int] = field(default_factory=dict)
    filtered: dict[str, int] = field(default_factory=dict)
    filter_kept: int = 0
    decisions: list = field(default_factory=list)
    missing: list[tuple[str, int, bool]] = field(default_factory=list)
    dropped: list[tuple[str, int, bool]] = field(default_factory=list)
    seconds: float = 0.0
    secrets: dict[str, int] = field(default_factory=dict)
    filter_enabled: bool = False
    dry_run: bool = False
    would_insert: int = 0
    would_replace: int = 0
    would_chunks: int = 0

    @property
    def documents(self) -> int:
        return self.inserted + self.replaced + self.unchanged

    def as_dict(self) -> dict:
        return {
            "documents": self.documents, "inserted": self.inserted, "replaced": self.replaced,
            "unchanged": self.unchanged, "older": self.older, "older_sources": list(self.older_sources),
            "duplicates": [{"source": s, "same_as": t} for s, t in self.duplicates],
            "moved": [{"from": s, "to": t} for s, t in self.moved], "chunks": self.chunks,
            "windowed": self.windowed, "kept": self.kept, "empty": self.empty,
            "emptied": [{"source": s, "memories": n} for s, n in self.emptied], "updated": list(self.updated),
            "failed": [{"source": s, "reason": r} for s, r in self.failed],
            "warnings": [{"source": s, "warning": w} for s, w in self.warnings],
            "skipped_blocks": dict(self.skipped_blocks), "filtered": dict(sorted(self.filtered.items())),
            "filter_kept": self.filter_kept,
            "missing": [{"source": s, "memories": n, "archived": a} for s, n, a in self.missing],
            "dropped": [{"source": s, "memories": n, "archived": a} for s, n, a in self.dropped],
            "seconds": round(self.seconds, 3),
            "secrets": dict(sorted(self.secrets.items())),
            **({"would_write": {"documents": self.would_insert + self.would_replace, "new": self.would_insert,
                                "changed": self.would_replace, "chunks": self.would_chunks}} if self.dry_run else {}),
            **({"decisions": [{"source": src, "chunk_index": i, "text": text[:200], **d.as_dict()}
                              for src, i, text, d in self.decisions]} if self.decisions else {}),
        }


def iter_files(paths: Iterable[str | Path], unreadable: list[Path] | None = None) -> Iterator[Path]:
    """Files to ingest: each path itself, or the supported files under a directory (sorted, hidden skipped); a symlink
    loop there with a supported name is listed too (:func:`parse_path` reports it as failed, never skipped unsaid).
    A folder below that cannot be listed (no read or search permission) is appended to ``unreadable`` when given:
    its files are not seen, which the caller must say."""
    def cannot_read(folder: Path) -> None:
        if unreadable is not None and folder not in unreadable:
            unreadable.append(folder)

    for p in paths:
        p = Path(p)
        try:
            folder = p.is_dir()
        except OSError:   # a path that cannot be looked at: parse_path says why
            folder = False
        if not folder:
            yield p
            continue
        if not os.access(p, os.R_OK | os.X_OK):
            cannot_read(p)
            continue
        for f in sorted(p.rglob("*")):
            if any(part.startswith(".") for part in f.relative_to(p).parts):
                continue
            try:
                if f.suffix.lower() in SUPPORTED_SUFFIXES and (f.is_file() or _symlink_loop(f)):
                    yield f
                elif f.is_dir() and not f.is_symlink() and not os.access(f, os.R_OK | os.X_OK):
                    cannot_read(f)
            except PermissionError:   # listed, but its folder may not be entered (read without search permission)
                cannot_read(f.parent)


def _symlink_loop(path: Path) -> bool:
    try:
        path.stat()
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


_FILE_KINDS = ((stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _unreadable(path: Path) -> str | None:
    """Why no adapter can read ``path``, or None (a regular file, or a directory: Claude Code sessions). Checked
    before anything opens it: reading a named pipe waits for a writer, a device such as /dev/zero never ends."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop (symbolic links that lead back to themselves); nothing to read"
        if path.is_symlink():
            try:
                target = path_text(os.readlink(path))
            except OSError:
                target = "?"
            return f"a symbolic link to a missing file: {target}"
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return f"no such file: {path_text(path)}"
        return f"cannot read {path_text(path)}: {exc.strerror or exc}"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = next((name for test, name in _FILE_KINDS if test(mode)), "not a file")
    return f"not a regular file ({kind}); nothing to read"


def _resolved(path: Path) -> str:
    """A path as documents name their sources: absolute, symbolic links resolved. A link that leads nowhere (a
    dangling link, a symlink loop) is named itself, in its resolved folder, never by where it points."""
    try:
        return path_text(path.resolve(strict=True))
    except (OSError, RuntimeError):   # RuntimeError: a symlink loop, before Python 3.13
        try:
            return path_text(path.parent.resolve() / path.name)
        except (OSError, RuntimeError):
            return path_text(Path(os.path.abspath(path)))


def _gone(source: str | None) -> bool:
    """A document's source is a file (an absolute path) that no longer exists on disk. A path that cannot be
    looked at (a folder on the way without search permission) is not taken for gone."""
    if not source or not source.startswith("/"):
        return False
    try:
        os.lstat(disk_path(source))
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False
    return False


def _holds(key: str, source: str | None, adapter: str, content_hash: str) -> bool:
    """Whether a stored document's source still holds the content of this hash: a file named by its path (markdown,
    text) is read again (it may have been edited since, e.g. a new file where a moved one was); any other source (a
    conversation of an export) is taken to."""
    if source != key or adapter not in ("markdown", "text"):
        return True
    try:
        docs = parse_path(Path(disk_path(source)), adapter).documents
        return any(redact_document(d)[0].content_hash == content_hash for d in docs)
    except Exception:   # unreadable now: no original to leave the new file out for (it is written: nothing lost)
        return False


def _named(source: str, adapter: str, title: str | None) -> str:
    """A document as the summary names it: its source, and for a conversation of an export its title (a file holds
    many conversations)."""
    return f"{source} (conversation {title!r})" if adapter in CONVERSATION_ADAPTERS and title else source


def _doc_named(doc: Document) -> str:
    return _named(doc.source_uri or doc.source_key, doc.adapter, doc.title)


def parse_path(path: Path, adapter: str | None = None) -> AdapterReport | StreamReport:
    """Run the right adapter on one file.

    Args:
        path: a file.
        adapter: force an adapter ("markdown", "text", "claude_ai", "claude_code", "chatgpt"); default detect.

    Returns:
        The adapter's report; for chat exports a StreamReport (documents parsed while they are consumed).

    Raises:
        AdapterError: unreadable or unparseable file (the caller counts it as failed).
    """
    problem = _unreadable(path)
    if problem:
        raise AdapterError(problem)
    path = path.resolve()   # every adapter's source_uri is absolute: a relative one means nothing elsewhere
    from memsql.adapters.detect import detect_adapter

    name = adapter or detect_adapter(path)
    try:
        if name in ("markdown", "text"):
            from memsql.adapters.base import read_file

            decoded = read_file(path)  # by content: encoding detected, NUL bytes counted, binary refused
            if name == "markdown":
                from memsql.adapters.markdown import parse_markdown as parse
            else:
                from memsql.adapters.text import parse_text as parse
            doc = parse(path, decoded.text)
            # a front matter value memsql could not use is said, not only kept in the metadata (a block that is no
            # front matter at all, e.g. prose between two rules, stays text without a word: it is no mistake)
            ignored = [f"front matter {key} ignored: {why}"
                       for key, why in (doc.metadata.get("front_matter_ignored") or {}).items()]
            return AdapterReport(documents=(doc,), warnings=tuple((doc.source_uri, w)
                                                                  for w in [*decoded.warnings(), *ignored]))
        if name == "claude_ai":
            from memsql.adapters.claude_ai import stream_claude_ai

            return stream_claude_ai(path)
        if name == "claude_code":
            from memsql.adapters.claude_code import parse_claude_code

            return parse_claude_code(path)
        if name == "chatgpt":
            from memsql.adapters.chatgpt import stream_chatgpt

            return stream_chatgpt(path)
    except OSError as exc:
        raise AdapterError(f"cannot read {path}: {exc.strerror or exc}") from exc
    raise AdapterError(f"unknown adapter {name!r}")


def document_language(doc: Document) -> str | None:
    """The language a document declares in its metadata (front matter ``language`` or ``lang``), or None."""
    meta = doc.metadata if isinstance(doc.metadata, dict) else {}
    for key in ("language", "lang"):
        value = meta.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def default_knowledge_type(doc: Document, rules: Sequence = ()) -> str:
    """knowledge_type from the source, never from content: front matter, else the first matching
    [ingest] rule (path glob / adapter), else conversation for conversation adapters and note otherwise."""
    kt = doc.metadata.get("knowledge_type") if isinstance(doc.metadata, dict) else None
    if isinstance(kt, str) and kt:
        return kt
    for rule in rules:
        if rule.matches(doc.source_uri, doc.adapter):
            return rule.knowledge_type
    return "conversation" if doc.adapter in CONVERSATION_ADAPTERS else "note"


@dataclass(frozen=True)
class _Prepared:
    doc: Document
    chunks: list[Chunk]
    knowledge_type: str
    new: bool = False  # no document under its key when it was checked (written with its group's new documents)
    before: tuple | None = None  # a changed document's stored (metadata, source_date, knowledge_type) when checked


def _json(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


def _default(key: str):
    from memsql.config import SCHEMA

    section, name = key.rsplit(".", 1)
    return SCHEMA[section][name][0]


@dataclass(frozen=True)
class IngestSettings:
    """How an Ingestor chunks, embeds and labels documents; the defaults are the configuration's
    (:meth:`from_config` reads a memsql.config.Config).

    Attributes:
        knowledge_type: force a knowledge_type for every document (else :func:`default_knowledge_type`).
        language: language of documents that do not declare one (front matter ``language`` or ``lang``): an
            ISO 639-1 code or a text search configuration name (memsql.text_search_config); None = english.
        max_tokens, overlap_tokens: chunker window and overlap in word pieces.
        chunker: [memory.chunker] options beyond the window: strategy ("token" | "semantic"),
            breakpoint_threshold, min_tokens, tokenizer ("model" | "cl100k_base").
        batch_size: chunks per forward pass of the model.
        embed_group: chunks gathered (across documents) before one embedding call; the model sorts a call's
            texts by length, so larger groups pad less (about 25% less work on SciFact than groups of 64).
        tags: tags given to every memory.
        rules: memsql.config.IngestRule objects mapping path globs / adapters to knowledge types.
        filter_documents: the autosave filter also judges documents (markdown, text), not only conversations.
        dry_run: judge and count, write nothing (the summary keeps every decision).
        keep_decisions: record every filter decision in the summary (dry runs always do).
        importance: importance (0..1) of every memory written; None = the document's own (front matter
            ``importance``), else unset.
    """

    knowledge_type: str | None = None
    language: str | None = None
    max_tokens: int = _default("memory.chunker.max_tokens")
    overlap_tokens: int = _default("memory.chunker.overlap_tokens")
    chunker: dict = field(default_factory=dict)
    batch_size: int = 64
    embed_group: int = _default("memory.embeddings.ingest_group")
    tags: tuple[str, ...] = ()
    rules: tuple = ()
    filter_documents: bool = _default("memory.filter.apply_to_documents")
    dry_run: bool = False
    keep_decisions: bool = False
    importance: float | None = None

    @classmethod
    def from_config(cls, config, **given) -> "IngestSettings":
        """Settings from a memsql.config.Config ([memory.chunker], [memory.embeddings] ingest_group, [ingest]
        rules, [memory.filter] apply_to_documents, [memory.lexical] language); ``given`` (knowledge_type, language,
        dry_run, ...) on top (a language given as None or "" takes the configured one)."""
        ch = config.section("memory.chunker")
        return cls(**{
            "max_tokens": ch["max_tokens"], "overlap_tokens": ch["overlap_tokens"],
            "chunker": {k: ch[k] for k in ("strategy", "breakpoint_threshold", "min_tokens", "tokenizer")},
            "embed_group": config.get("memory.embeddings.ingest_group"), "rules": tuple(config.rules),
            "filter_documents": config.get("memory.filter.apply_to_documents"),
            **given, "language": given.get("language") or config.get("memory.lexical.language") or None})


class Ingestor:
    """Writes documents into one namespace.

    Args:
        conn: an open connection (memsql.db.connect); transactions are managed here.
        embedder: the Embedder used for chunks.
        namespace: target namespace.
        settings: chunking, grouping and labelling (:class:`IngestSettings`); default the configuration's defaults.
        autosave: a memsql.filter.AutosaveFilter, or None for no filtering.
        topics: a memsql.topics.TopicAssigner, or None for no topics.
    """

    def __init__(self, conn: psycopg.Connection, embedder: Embedder, namespace: str = "default",
                 settings: IngestSettings | None = None, autosave=None, topics=None) -> None:
        s = self.settings = settings or IngestSettings()
        self.conn = conn
        self.embedder = embedder
        self.namespace = namespace
        self.knowledge_type = s.knowledge_type
        self.max_tokens = s.max_tokens
        self.overlap_tokens = s.overlap_tokens
        self.batch_size = s.batch_size
        self.embed_group = max(s.embed_group, s.batch_size)
        self.tags = list(s.tags)
        self.rules = tuple(s.rules)
        self.chunker = dict(s.chunker)
        self.autosave = autosave
        self.filter_documents = s.filter_documents
        self.topics = topics
        self.dry_run = s.dry_run
        self.keep_decisions = s.keep_decisions or s.dry_run
        self._dry_kept: list = []  # a dry run writes nothing: entries it would keep count as stored
        self.language = s.language
        self._configs: dict[str | None, str] = {}
        self._kt_problems: dict[str, str | None] = {}
        self._warm = False
        self._seen: dict[str, str] = {}   # content hash -> source of the new (or moved) documents of this run
        self.moved_ids: set[int] = set()   # stored documents this run found at a new path (see _move)
        self._stored: dict[str, tuple[int, dict[int, str]]] = {}  # source_key -> (current memories, _matched())
        self._written: list[int] = []   # documents written by this run (their memories' windows follow)

    def ingest(self, docs: Iterable[Document], summary: IngestSummary | None = None,
               on_document: Callable[[Document, str], None] | None = None) -> IngestSummary:
        """Ingest documents; unchanged ones are skipped before embedding.

        Args:
            docs: documents from any adapter.
            summary: a summary to add to (for multi-file runs).
            on_document: called with (document, action) after each one ("inserted", "replaced",
                "unchanged", "failed"; "emptied" for a stored document whose source now holds nothing).

        Returns:
            The summary.
        """
        summary = summary or IngestSummary()
        summary.dry_run = summary.dry_run or self.dry_run
        summary.filter_enabled = summary.filter_enabled or self.autosave is not None
        t0 = time.perf_counter()
        pending: list[_Prepared] = []
        pending_chunks = 0
        # Encoding runs in one worker thread (the runtimes release the GIL); this thread keeps the connection
        # and writes group n while group n + 1 is being encoded, then chunks the documents of the next group.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsql-embed") as pool:
            inflight: tuple[list[_Prepared], Future] | None = None
            for doc in docs:
                doc, found = redact_document(doc)  # nothing secret is chunked, embedded or stored
                for kind, n in found.items():
                    summary.secrets[kind] = summary.secrets.get(kind, 0) + n
                try:
                    state = db.document_state(self.conn, self.namespace, doc.source_key)
                    twin = moved = None
                    if state is None and doc.adapter != "note":
                        twin = self._seen.get(doc.content_hash)
                        if twin is None:
                            twin, moved = self._original(doc)
                    self.conn.commit()
                except psycopg.Error as exc:
                    _roll_back(summary, self.conn, exc)
                    raise from_psycopg(exc) from exc
                stored, stored_date, stored_id, stored_uri, stored_title, stored_meta, stored_tags, stored_kt = state or (None,) * 8
                skip = None
                if stored == doc.content_hash:
                    skip = "unchanged"
                    if doc.source_uri and stored_uri != doc.source_uri and _gone(stored_uri):
                        self._move(doc, stored_id, stored_uri, summary)   # an export read from a new place
                    older = (doc.adapter in CONVERSATION_ADAPTERS and doc.source_date and stored_date
                             and doc.source_date < stored_date)   # an older export's fields never win either
                    if not older and self._declares_otherwise(doc, state):
                        skip = self._refresh(doc, stored_id, stored_meta or {}, stored_date, stored_kt, summary)
                elif (stored is not None and doc.adapter in CONVERSATION_ADAPTERS and doc.source_date and stored_date
                      and doc.source_date < stored_date):
                    skip = "older"   # an older export never supersedes what a newer one wrote (a file is what it
                                     # holds now, whatever its date)
                    summary.older_sources.append(_doc_named(doc))
                elif twin is not None:
                    skip = "duplicate"   # the same content under another key (a copy of a file): reported, not doubled
                    summary.duplicates.append((_doc_named(doc), twin))
                elif moved is not None and self._move(doc, *moved, summary):
                    skip = "moved"   # the file moved: its stored document follows it, nothing is written anew
                    self._seen[doc.content_hash] = _doc_named(doc)
                    # ... and takes the front matter it has now, edited with the move (a dry run moved nothing:
                    # the stored document under its old key, given its new name)
                    try:
                        now = db.document_state(self.conn, self.namespace,
                                                moved[1] if self.dry_run else doc.source_key)
                        self.conn.commit()
                    except psycopg.Error as exc:
                        _roll_back(summary, self.conn, exc)
                        raise from_psycopg(exc) from exc
                    if now and self.dry_run:
                        now = now[:4] + (doc.title,) + now[5:]
                    if now and self._declares_otherwise(doc, now) and \
                            self._refresh(doc, now[2], now[5] or {}, now[1], now[7], summary) == "failed":
                        skip = "failed"
                if skip:
                    summary.unchanged += skip in ("unchanged", "moved", "updated", "dry_run")
                    summary.older += skip == "older"
                    if on_document:
                        on_document(doc, skip)
                    continue
                try:
                    chunks = chunk(doc, max_tokens=self.max_tokens, overlap_tokens=self.overlap_tokens,
                                   embedder=self.embedder, **self.chunker)
                except Exception as exc:  # a chunker failure is this document's, never the run's
                    summary.failed.append((doc.source_uri or doc.source_key, f"chunking failed: {exc}"))
                    if on_document:
                        on_document(doc, "failed")
                    continue
                if not chunks:
                    summary.empty += 1   # nothing is written: no later document is a copy of this one
                    if stored is not None:   # a stored file now holds nothing: its memories end with it
                        action = self._empty_out(doc, summary)
                        if on_document:
                            on_document(doc, action)
                    continue
                if stored is None and doc.adapter != "note":
                    self._seen[doc.content_hash] = _doc_named(doc)
                kt = (self.knowledge_type or default_knowledge_type(doc, self.rules) if stored is None
                      else self.knowledge_type or self._refreshed_type(doc, stored_meta or {}, stored_kt))
                pending.append(_Prepared(doc, chunks, kt, new=stored is None,
                                         before=None if stored is None else (stored_meta or {}, stored_date, stored_kt)))
                pending_chunks += len(chunks)
                if pending_chunks >= self.embed_group:
                    inflight = self._submit(pool, pending, inflight, summary, on_document)
                    pending, pending_chunks = [], 0
            if pending:
                inflight = self._submit(pool, pending, inflight, summary, on_document)
            if inflight is not None:
                self._write_group(*inflight, summary, on_document)
        if self._written:
            try:  # window embeddings of this run's long memories (memsql.memory_windows): until stored,
                #   memory_search scores those by their own embedding. Statistics first: planned on a table's
                #   statistics from before this run's rows, the backlog's lookup ran for minutes after 95,000 chunks
                maintenance.analyze_if_stale(self.conn)
                ids = db.pending_window_ids(self.conn, self.namespace, self._written)
                summary.windowed += db.compute_windows(self.conn, self.embedder, self.namespace, self.batch_size * 4,
                                                       memory_ids=ids)
            except Exception as exc:  # the documents are written; the worker or embed_pending finishes the backlog
                log.warning("memsql: window embeddings after the ingest failed (%s); the documents are written", exc)
            self._written = []
        if summary.chunks:
            try:  # statistics and the postings index: the documents are written whatever happens here
                maintenance.analyze_if_stale(self.conn)
                maintenance.compact_postings(self.conn)
            except psycopg.Error as exc:
                _roll_back(summary, self.conn, exc)
                log.warning("memsql: maintenance after the ingest failed (%s); the documents are written", exc)
        summary.seconds += time.perf_counter() - t0
        return summary

    def _original(self, doc: Document) -> tuple[str | None, tuple[int, str] | None]:
        """What the stored documents with ``doc``'s content under other keys make of a new document: (the source it
        copies, None) when one of them still holds that content (:func:`_holds`); (None, (document id, its source))
        when ``doc`` is a file and such a document is a file gone from disk: the file was moved or renamed
        (:meth:`_move`); (None, None) otherwise, written anew (a file that holds other content now is revised when
        it is read, a path gone from disk is archived by --prune: neither is the content's original)."""
        others = db.documents_with_hash(self.conn, self.namespace, doc.content_hash, doc.source_key)
        for _, key, uri, adapter, title in others:
            if not _gone(uri) and _holds(key, uri, adapter, doc.content_hash):
                return _named(uri or key, adapter, title), None
        if doc.source_uri == doc.source_key:   # a file, named by its path (markdown, text)
            for doc_id, key, uri, *_ in others:
                if uri == key and _gone(uri):
                    return None, (doc_id, uri)
        return None, None

    def _move(self, doc: Document, doc_id: int, old: str, summary: IngestSummary) -> bool:
        """Point a stored document with ``doc``'s content at the file ``doc`` was read from (its source key, source,
        title and adapter): a moved file keeps its memories, versions and access counts, and --prune never archives
        content that is still on disk. A dry run changes nothing and reports it alike. False when the document
        changed meanwhile (another ingest revised or pruned it, or stored the new key): ``doc`` is then written
        anew."""
        if not self.dry_run:
            try:
                with self.conn.transaction():
                    done = self.conn.execute(
                        "UPDATE memsql.documents SET source_key = %s, source_uri = %s, title = %s, adapter = %s,"
                        " updated_at = now() WHERE namespace = %s AND id = %s AND content_hash = %s",
                        (doc.source_key, doc.source_uri, doc.title, doc.adapter, self.namespace, doc_id,
                         doc.content_hash)).rowcount
                self.conn.commit()
            except psycopg.Error as exc:
                _roll_back(summary, self.conn, exc)
                log.debug("memsql: moving document %s to %s failed (%s); writing it anew", doc_id, doc.source_key, exc)
                return False
            if not done:
                return False
        self.moved_ids.add(doc_id)
        if (old, doc.source_uri or doc.source_key) not in summary.moved:
            summary.moved.append((old, doc.source_uri or doc.source_key))
        return True

    def _submit(self, pool: ThreadPoolExecutor, group: list[_Prepared],
                inflight: tuple[list[_Prepared], Future] | None, summary: IngestSummary,
                on_document: Callable[[Document, str], None] | None) -> tuple[list[_Prepared], Future]:
        """Start encoding ``group``, then write the group encoded before it (if any) while this one encodes."""
        if not self._warm:  # the model (and OpenVINO's bulk requests) loaded in this thread first, before the encoder
            warm_up = getattr(self.embedder, "warm_up", None)
            if warm_up is not None:
                warm_up()
            self._warm = True
        texts = [c.embed_text for p in group for c in p.chunks]
        future = pool.submit(self.embedder.embed, texts, self.batch_size)
        if inflight is not None:
            self._write_group(*inflight, summary, on_document)
        return group, future

    def _declares_otherwise(self, doc: Document, state: tuple) -> bool:
        """Whether ``doc`` declares other than its stored document (``state``: db.document_state): its front matter
        (metadata), date or title, or this run's --tag missing from the stored document's tags."""
        _, date, _, _, title, metadata, tags, _ = state
        return (metadata != doc.metadata or date != doc.source_date or title != doc.title
                or not set(self._tags(doc)) <= set(tags or ()))

    def _refresh(self, doc: Document, doc_id: int, old_meta: dict, old_date, old_kt: str,
                 summary: IngestSummary) -> str:
        """A stored document whose text is unchanged but whose front matter (tags, importance, knowledge_type,
        date) or title changed: in one transaction the document row takes them and its current memories follow,
        nothing embedded again. A memory's tags lose the document's former own tags and gain its new ones (the
        run's --tag and tags set by hand stay); its importance, knowledge type and source date change where they
        still hold what the document declared before (a memory revised by hand keeps its own); the knowledge type
        changes only when what the source declares changed (a type a run forced with --knowledge-type stays until
        the front matter says otherwise). The language is
        stored for chunks written later; stored chunks keep their lexemes. Returns "updated", "dry_run",
        "unchanged" (the document changed meanwhile: the next run sees it) or "failed" (in summary.failed)."""
        source = _doc_named(doc)
        new_kt = self._refreshed_type(doc, old_meta, old_kt)
        if self.dry_run and new_kt != old_kt and (problem := self._knowledge_type_problem(new_kt)):
            summary.failed.append((source, problem))   # as the real run would
            return "failed"
        if self.dry_run:
            summary.updated.append(source)
            return "dry_run"
        try:
            with self.conn.transaction():
                done = self._apply_declared(doc, doc_id, old_meta, old_date, old_kt, new_kt)
            self.conn.commit()
        except psycopg.Error as exc:
            _roll_back(summary, self.conn, exc)
            summary.failed.append((source, "its changed front matter was not applied: "
                                   + (exc.diag.message_primary or str(exc))
                                   + (f" ({exc.diag.message_hint})" if exc.diag.message_hint else "")))
            return "failed"
        if not done:
            return "unchanged"
        summary.updated.append(source)
        return "updated"

    def _refreshed_type(self, doc: Document, old_meta: dict, old_kt: str) -> str:
        """The knowledge type an unchanged text takes on a refresh: what its source declares now (front matter, else
        the rules) when that differs from what it declared before (``old_meta``), else the stored one (``old_kt``,
        which a former run's --knowledge-type may have set); a run's own --knowledge-type never retypes it."""
        if self.knowledge_type:
            return old_kt
        now = default_knowledge_type(doc, self.rules)
        declared = doc.metadata.get("knowledge_type") if isinstance(doc.metadata, dict) else None
        if declared != (old_meta.get("knowledge_type") if isinstance(old_meta, dict) else None):
            return now   # the front matter says another type (or none now): it applies, even the default one
        before = default_knowledge_type(Document(doc.source_key, doc.adapter, (), doc.source_uri, metadata=old_meta),
                                        self.rules)
        return now if now != before else old_kt

    def _apply_declared(self, doc: Document, doc_id: int, old_meta: dict, old_date, old_kt: str, new_kt: str) -> bool:
        """In the caller's transaction: memsql.document_refresh with what ``doc`` declares (its front matter's tags
        and importance, its date and title, and this run's --tag) against what the stored document declared
        (``old_meta``, ``old_date``); its memories of knowledge type ``old_kt`` (the stored document's) take
        ``new_kt``. False when the document's stored hash is not ``doc``'s (changed meanwhile)."""
        old_doc = Document(doc.source_key, doc.adapter, (), doc.source_uri, metadata=old_meta)
        old_imp = _importance(old_doc)
        new_imp = old_imp if self.settings.importance is not None else _importance(doc)   # a run's importance wins
        return self.conn.execute(
            "SELECT memsql.document_refresh(%s, %s::bigint, %s, %s, %s::timestamptz, %s::jsonb, %s::text[], "
            "%s::text[], %s::real, %s::real, %s, %s, %s::timestamptz, %s)",
            (self.namespace, doc_id, doc.content_hash, doc.title, doc.source_date, _json(doc.metadata),
             self._own_tags(old_doc), self._tags(doc), old_imp, new_imp, old_kt, new_kt, old_date,
             # a conversation's memories carry their messages' dates: the newest one is the document's date too
             doc.adapter not in CONVERSATION_ADAPTERS)).fetchone()[0] is not None

    def _empty_out(self, doc: Document, summary: IngestSummary) -> str:
        """A stored document whose source now holds nothing (a file emptied): in one transaction its document row
        takes the new content hash (memsql.document_upsert) and memsql.document_revise with no chunk ends every
        current memory (valid_to; no successor); a dry run counts them and writes nothing. Returns the action: "emptied", "dry_run", "unchanged" (another
        ingest stored this content meanwhile) or "failed" (reported in summary.failed, nothing changed)."""
        source = _doc_named(doc)
        kt = self.knowledge_type or default_knowledge_type(doc, self.rules)
        if self.dry_run:   # what would end, read only
            try:
                ended = len(db.document_chunks(self.conn, self.namespace, doc.source_key))
                self.conn.commit()
            except psycopg.Error as exc:
                _roll_back(summary, self.conn, exc)
                raise from_psycopg(exc) from exc
            summary.would_replace += 1
            summary.emptied.append((source, ended))
            return "dry_run"
        try:
            with self.conn.transaction():
                doc_id, action = self.conn.execute(
                    "SELECT document_id, action FROM memsql.document_upsert(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
                    (self.namespace, doc.source_key, doc.content_hash, doc.adapter, doc.source_uri, doc.title, kt,
                     doc.source_date, self._tags(doc), _json(doc.metadata))).fetchone()
                if action == "replaced":
                    ended = self.conn.execute(
                        "SELECT count(*) FROM memsql.memories WHERE namespace = %s AND document_id = %s "
                        "AND valid_to IS NULL", (self.namespace, doc_id)).fetchone()[0]
                    self.conn.execute("SELECT count(*) FROM memsql.document_revise(%s, %s, '{}'::text[], %s)",
                                      (self.namespace, doc_id, doc.adapter not in CONVERSATION_ADAPTERS))
            self.conn.commit()
        except psycopg.Error as exc:
            _roll_back(summary, self.conn, exc)
            summary.failed.append((source, f"emptying its stored document failed: {exc}"))
            return "failed"
        if action != "replaced":
            summary.unchanged += action == "unchanged"
            return action
        summary.replaced += 1
        summary.emptied.append((source, ended))
        return "emptied"

    def _write_group(self, group: list[_Prepared], future: Future, summary: IngestSummary,
                     on_document: Callable[[Document, str], None] | None) -> None:
        """Wait for a group's vectors, then write its documents: the new ones in one transaction (one at a time
        if that fails), the changed ones one transaction each."""
        vectors = future.result()  # an embedding failure stops the run here; earlier documents are complete
        offset = 0
        actions: list[str | None] = []
        new: list[tuple[int, _Prepared, object, list[int], dict]] = []
        for p in group:
            vecs = share_message_embeddings(p.chunks, vectors[offset: offset + len(p.chunks)])
            offset += len(p.chunks)
            if not p.new:
                self._matched(p)
            keep = self._judge(p, vecs, summary)
            if not keep:
                action = "filtered"
            elif self.dry_run and (problem := self._knowledge_type_problem(p.knowledge_type)):   # as the write would
                summary.failed.append((p.doc.source_uri or p.doc.source_key, problem))
                action = "failed"
            elif self.dry_run:
                action = "dry_run"
                summary.would_insert += p.new
                summary.would_replace += not p.new
                # a changed document's chunks stored unchanged keep their memories: not written again
                summary.would_chunks += len(keep) if p.new else sum(1 for i in keep if i not in self._matched(p))
            else:
                topics = self._topics(p, vecs, keep)
                if p.new:
                    new.append((len(actions), p, vecs, keep, topics))
                    action = None
                else:
                    action = self._write(p, vecs, summary, keep, topics)
            actions.append(action)
        if len(new) > 1 and self._write_new(new, summary):
            for i, *_ in new:
                actions[i] = "inserted"
        for i, p, vecs, keep, topics in new:
            if actions[i] is None:
                actions[i] = self._write(p, vecs, summary, keep, topics)
        self._stored.clear()
        if on_document:
            for p, action in zip(group, actions):
                on_document(p.doc, action)

    def _write_new(self, new: list, summary: IngestSummary) -> bool:
        """New documents in one transaction: document_upsert for each (pipelined), one COPY of their memories.
        False when that did not happen (a document turned out to exist, or a write failed): rolled back, the
        caller writes them one transaction each. Per-document round trips and statement triggers (term
        statistics, postings) were most of the ingest's work outside the model."""
        doc_ids = []
        try:
            with self.conn.transaction():
                with self.conn.cursor() as cur:
                    cur.executemany(
                        "SELECT document_id, action FROM memsql.document_upsert("
                        "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
                        [(self.namespace, p.doc.source_key, p.doc.content_hash, p.doc.adapter, p.doc.source_uri,
                          p.doc.title, p.knowledge_type, p.doc.source_date, self._tags(p.doc), _json(p.doc.metadata))
                         for _, p, *_ in new], returning=True)
                    while True:
                        doc_ids.append(cur.fetchone())
                        if not cur.nextset():
                            break
                if len(doc_ids) != len(new) or any(r is None or r[1] != "inserted" for r in doc_ids):
                    raise _NotNew  # written meanwhile by another ingest: rolled back, written one by one
                # each document's rows built first: _rows may query (text search configuration), not during COPY
                parts = [self._rows(p, doc_id, vecs, keep, topics)
                         for (_, p, vecs, keep, topics), (doc_id, _) in zip(new, doc_ids)]
                chunks = db.copy_memories(self.conn, (row for part in parts for row in part))
            self.conn.commit()
        except _NotNew:
            return False
        except psycopg.Error as exc:
            _roll_back(summary, self.conn, exc)
            log.debug("memsql: %d new documents in one transaction failed (%s); writing them one by one", len(new), exc)
            return False
        summary.chunks += chunks
        summary.inserted += len(new)
        self._written.extend(doc_id for doc_id, _ in doc_ids)
        return True

    def _tags(self, doc: Document) -> list[str]:
        """The run's tags (--tag), then the document's own (markdown front matter ``tags``), each once."""
        return list(dict.fromkeys([*self.tags, *self._own_tags(doc)]))

    @staticmethod
    def _own_tags(doc: Document) -> list[str]:
        """The tags a document declares itself (markdown front matter ``tags``), each once, in order."""
        own = doc.metadata.get("tags") if isinstance(doc.metadata, dict) else None
        return list(dict.fromkeys(t.strip() for t in own if isinstance(t, str) and t.strip())) if isinstance(own, list) else []

    def _rows(self, p: _Prepared, doc_id: int, vecs, keep: Sequence[int], topics: dict[int, list[str]],
              ids: dict[int, tuple[int, object]] | None = None, lengths: dict[int, int] | None = None):
        """COPY rows of a document's kept chunks, for new and revised documents alike: the kept chunks are
        numbered 0, 1, ... in order (chunk_index), each with its topics, tags and text search configuration
        (looked up now, the rows are made as they are read). ``ids`` (revised documents): chunk position ->
        (pre-allocated memory id, valid_from) from memsql.document_revise; only those positions are written, with
        the columns db.MEMORY_COPY_COLUMNS + ("id", "created_at")."""
        doc = p.doc
        # looked up before the rows are read: no query may run while the COPY is in progress
        cfg, tags = self._text_search_config(document_language(doc) or self.language), self._tags(doc)
        importance = self._importance(doc)
        lengths = self._message_lengths(p.chunks, cfg) if lengths is None else lengths

        def rows():
            for pos, i in enumerate(keep):
                if ids is not None and pos not in ids:
                    continue
                c = p.chunks[i]
                row = (self.namespace, doc_id, pos, c.text, _chunk_hash(c.text), vecs[i], p.knowledge_type,
                       importance, topics.get(i, []), tags, _json(c.metadata), c.source_date or doc.source_date, cfg,
                       lengths.get(i))
                yield row if ids is None else row + ids[pos]

        return rows()

    def _message_lengths(self, chunks: list[Chunk], cfg: str) -> dict[int, int]:
        """Chunk index -> the BM25 length of the split conversation message the chunk is a piece of
        (memories.bm25_len): the sum of its pieces' indexed tokens, counted by the database as the memories' own
        (memsql.tsvector_token_count of memsql.memory_tsvector under ``cfg``). Chunks that are no such piece are
        absent (their own length counts). One query for a document with split messages, none otherwise."""
        split = split_messages(chunks)
        if not split:
            return {}
        pieces = [i for rows in split for i in rows]
        counts = self.conn.execute(
            "SELECT memsql.tsvector_token_count(memsql.memory_tsvector(u.t, %s::regconfig)) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) ORDER BY u.n",
            (cfg, [chunks[i].text for i in pieces])).fetchall()
        own = dict(zip(pieces, (n for (n,) in counts)))
        lengths = {}
        for rows in split:
            total = sum(own[i] for i in rows)
            if total > 0:  # pieces with no indexed token at all have no postings either
                lengths.update((i, total) for i in rows)
        return lengths

    def _importance(self, doc: Document) -> float | None:
        return self.settings.importance if self.settings.importance is not None else _importance(doc)

    def _filtered(self, p: _Prepared) -> bool:
        return self.autosave is not None and (p.doc.adapter in CONVERSATION_ADAPTERS or self.filter_documents)

    def _judge(self, p: _Prepared, vecs, summary: IngestSummary) -> list[int]:
        """Indexes of the chunks to write: all of them unless the autosave filter applies. New and revised
        documents are judged alike; a revised document's chunks that are stored unchanged are kept without a
        judgement (they would look like near-duplicates of themselves)."""
        if not self._filtered(p):
            return list(range(len(p.chunks)))
        stored = {} if p.new else self._matched(p)
        judged = [i for i in range(len(p.chunks)) if i not in stored]
        texts = [p.chunks[i].text for i in judged]
        import numpy as np

        vecs = np.array(vecs, dtype=np.float32)[judged]
        # novelty and relevance judge the entry itself: a chunk embedded with its context (a conversation turn
        # with the turn it answers) is embedded again without it, or consecutive turns would look alike
        own = [j for j, i in enumerate(judged) if p.chunks[i].context]
        if own:
            vecs[own] = self.embedder.embed([texts[j] for j in own], batch_size=self.batch_size)
        # a revised document's changed chunks are not judged against the versions they replace (each would be a
        # near-duplicate of itself: the old version closed, the new one not saved, the fact lost)
        own_doc = None if p.new else next((r["id"] for r in self._fetch(
            "SELECT id FROM memsql.documents WHERE namespace = %s AND source_key = %s",
            (self.namespace, p.doc.source_key))), None)
        decisions = self.autosave.evaluate(self._fetch, self.namespace, texts, vecs, p.knowledge_type,
                                           [p.chunks[i].source_date or p.doc.source_date for i in judged],
                                           batch_kept=self._dry_kept if self.dry_run else None,
                                           exclude_document=own_doc)
        verdict = dict(zip(judged, decisions))
        keep = []
        for i, c in enumerate(p.chunks):
            d = verdict.get(i)
            if d is None or d.keep:
                keep.append(i)
                summary.filter_kept += d is not None
            else:
                summary.filtered[d.reason] = summary.filtered.get(d.reason, 0) + 1
            if self.keep_decisions and d is not None:
                summary.decisions.append((p.doc.source_uri or p.doc.source_key, c.index, c.text, d))
        return keep

    def _matched(self, p: _Prepared, commit: bool = True) -> dict[int, str]:
        """Chunks of a revised document already stored: chunk position -> the stored memory's content hash, for a
        chunk whose text equals a current memory's up to white space (the k-th copy matches the k-th). Those
        chunks keep their memories (ids, access counts); a change of white space only is no new version. Looked up
        once per document, before its write transaction (cached until the group is written)."""
        if p.doc.source_key in self._stored:
            return self._stored[p.doc.source_key][1]
        if not commit:   # inside the caller's transaction
            current = db.document_chunks(self.conn, self.namespace, p.doc.source_key)
        else:
            try:
                current = db.document_chunks(self.conn, self.namespace, p.doc.source_key)
                self.conn.commit()
            except psycopg.Error as exc:
                self.conn.rollback()
                raise from_psycopg(exc) from exc
        free: dict[str, list[int]] = {}   # a text (up to white space) -> the memories holding it (positions)
        for j, (_, content, source) in enumerate(current):   # a revision by hand: under its source's text too
            for text in {_normal(content), *([_normal(source)] if source is not None else [])}:
                free.setdefault(text, []).append(j)
        matched: dict[int, str] = {}
        taken: set[int] = set()
        for i, c in enumerate(p.chunks):
            same = [j for j in free.get(_normal(c.text), ()) if j not in taken]
            if same:
                exact = _chunk_hash(c.text)
                j = next((j for j in same if current[j][0] == exact), same[0])
                matched[i] = current[j][0]
                taken.add(j)
        self._stored[p.doc.source_key] = (len(current), matched)
        return matched

    def _fetch(self, query: str, params) -> list[dict]:
        from psycopg.rows import dict_row

        try:
            with self.conn.cursor(row_factory=dict_row) as cur:
                cur.execute(query, params)
                rows = cur.fetchall()
            self.conn.commit()
        except psycopg.Error as exc:
            self.conn.rollback()
            raise from_psycopg(exc) from exc
        return rows

    def _topics(self, p: _Prepared, vecs, keep: list[int]) -> dict[int, list[str]]:
        if self.topics is None or not self.topics.settings.enabled:
            return {}
        import numpy as np

        assigned = self.topics.assign([p.chunks[i].text for i in keep], np.asarray(vecs)[keep])
        return {i: [t.label for t in ts] for i, ts in zip(keep, assigned)}

    def _knowledge_type_problem(self, knowledge_type: str) -> str | None:
        """Why a real run's document_upsert would refuse this knowledge type (memsql.check_knowledge_type: MS003
        unknown), or None; cached. A dry run reports it as the real run would, as a failed document."""
        if knowledge_type not in self._kt_problems:
            try:
                with self.conn.transaction():
                    self.conn.execute("SELECT memsql.check_knowledge_type(%s)", (knowledge_type,))
                self._kt_problems[knowledge_type] = None
            except psycopg.Error as exc:
                self._kt_problems[knowledge_type] = str(from_psycopg(exc))
        return self._kt_problems[knowledge_type]

    def _text_search_config(self, language: str | None) -> str:
        """The text search configuration of a language (memsql.text_search_config; MS002 when unknown), cached."""
        if language not in self._configs:
            self._configs[language] = self.conn.execute(
                "SELECT memsql.text_search_config(%s)::text", (language,)).fetchone()[0]
        return self._configs[language]

    def _write(self, p: _Prepared, vecs, summary: IngestSummary, keep: list[int] | None = None,
               topics: dict[int, list[str]] | None = None) -> str:
        doc = p.doc
        try:
            with self.conn.transaction():
                row = self.conn.execute(
                    "SELECT document_id, action FROM memsql.document_upsert("
                    "%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb)",
                    (self.namespace, doc.source_key, doc.content_hash, doc.adapter, doc.source_uri, doc.title,
                     p.knowledge_type, doc.source_date, self._tags(doc), _json(doc.metadata)),
                ).fetchone()
                doc_id, action = row
                if action in ("inserted", "replaced"):
                    self._written.append(doc_id)
                if action == "inserted":
                    keep = range(len(p.chunks)) if keep is None else keep
                    summary.chunks += db.copy_memories(self.conn, self._rows(p, doc_id, vecs, keep, topics or {}))
                elif action == "replaced":
                    keep = range(len(p.chunks)) if keep is None else keep
                    written, same = self._revise(p, doc_id, vecs, summary, keep, topics or {})
                    summary.chunks += written
                    action = "unchanged" if same else action
            self.conn.commit()
        except psycopg.Error as exc:
            _roll_back(summary, self.conn, exc)
            err = from_psycopg(exc)
            summary.failed.append((doc.source_uri or doc.source_key, str(err)))
            return "failed"
        if action == "inserted":
            summary.inserted += 1
        elif action == "replaced":
            summary.replaced += 1
        elif action == "older":
            summary.older += 1
            summary.older_sources.append(_doc_named(doc))
        else:
            summary.unchanged += 1
        return action


    def _revise(self, p: _Prepared, doc_id: int, vecs, summary: IngestSummary, keep: Sequence[int],
                topics: dict[int, list[str]]) -> tuple[int, bool]:
        """A changed document (inside _write's transaction): memsql.document_revise keeps the unchanged chunks and
        closes the others; the new chunks (those the filter kept, as for a new document) are written by
        :meth:`_rows` under the ids it pre-allocated. Chunk positions are linked old -> new (superseded_by) except
        for conversations, where a later message supersedes nothing.

        Returns:
            (memories written, True when every current memory was kept and none written: white space changed only).
        """
        keep = sorted(keep, key=lambda i: p.chunks[i].index)
        if p.doc.source_key not in self._stored:   # written meanwhile by another ingest: looked up now
            self._matched(p, commit=False)
        current, matched = self._stored[p.doc.source_key]
        revised = self.conn.execute(
            "SELECT chunk_index, memory_id, kept, valid_from FROM memsql.document_revise(%s, %s, %s::text[], %s)",
            (self.namespace, doc_id, [matched.get(i) or _chunk_hash(p.chunks[i].text) for i in keep],
             p.doc.adapter not in CONVERSATION_ADAPTERS),
        ).fetchall()
        kept = sum(1 for r in revised if r[2])
        summary.kept += kept
        ids = {index: (memory_id, valid_from) for index, memory_id, kept, valid_from in revised if not kept}
        lengths = self._message_lengths(p.chunks, self._text_search_config(document_language(p.doc) or self.language))
        written = db.copy_memories(self.conn, self._rows(p, doc_id, vecs, keep, topics, ids, lengths),
                                   db.MEMORY_COPY_COLUMNS + ("id", "created_at"))
        # a kept piece of a message whose other pieces changed is normalised by the message as it is now (and a kept
        # chunk that is no longer such a piece by its own length); the postings follow (trigger memories_bm25_len)
        if p.before is not None:   # the kept chunks take what the document declares now (front matter, --tag)
            self._apply_declared(p.doc, doc_id, *p.before, p.knowledge_type)
        stay = [(memory_id, lengths.get(keep[index])) for index, memory_id, was_kept, _ in revised if was_kept]
        if stay:
            self.conn.execute(
                "UPDATE memsql.memories m SET bm25_len = v.len "
                "FROM unnest(%s::bigint[], %s::integer[]) AS v(id, len) "
                "WHERE m.namespace = %s AND m.id = v.id AND m.bm25_len IS DISTINCT FROM v.len",
                ([i for i, _ in stay], [n for _, n in stay], self.namespace))
        return written, kept == current and not ids


class _NotNew(Exception):
    """A document of a group's batch existed after all (another ingest wrote it meanwhile)."""


def _roll_back(summary: IngestSummary, conn: psycopg.Connection, exc: psycopg.Error) -> None:
    """After a failed statement: raise the lost-connection error when the connection is gone, else roll back (the
    caller goes on: the failed document or step is reported, the rest of the ingest continues)."""
    if conn.closed or conn.broken:
        raise _connection_lost(summary, exc) from exc
    conn.rollback()


def _connection_lost(summary: IngestSummary, exc: Exception) -> DatabaseUnavailable:
    """The error for a connection lost mid-ingest (server stopped or restarted): the documents written so far are
    complete (each in a committed transaction), those in flight were rolled back, so running the same ingest again
    finishes."""
    first = (str(exc).strip().splitlines() or ["connection lost"])[0]
    return DatabaseUnavailable(
        f"lost the connection to the server during ingest ({first}); {summary.inserted + summary.replaced} documents "
        "were written completely, none partially",
        "start the server (`memsql db start`) and run the same ingest again: it skips what is stored and finishes")


def _without_path(reason: str, path: Path) -> str:
    """An adapter's message without the file name it starts with (the summary shows the file once)."""
    for shown in (f"{path_text(path)}: ", f"{_resolved(Path(path))}: "):
        reason = reason[len(shown):] if reason.startswith(shown) else reason
    return reason


def _importance(doc: Document) -> float | None:
    """The importance a document declares (markdown front matter ``importance``, a number in [0, 1]), or None."""
    value = doc.metadata.get("importance") if isinstance(doc.metadata, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return None


def _normal(text: str) -> str:
    """Text with every run of white space as one space: what a change of white space only leaves equal."""
    return " ".join(text.split())


def _chunk_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def ingest_paths(ingestor: Ingestor, paths: Iterable[str | Path], adapter: str | None = None,
                 progress: Callable[[Path, IngestSummary], None] | None = None, prune: bool = False) -> IngestSummary:
    """Parse and ingest files or directories; a file that cannot be parsed is counted in ``failed``.

    The files' documents stream through one :meth:`Ingestor.ingest` call: chunks of many small files are
    embedded together, their new documents written in one transaction per group, the post-ingest maintenance
    run once. (One call per file ran as fast on 500 notes, 55 chunks/s either way: the model dominates; what
    this changes is one pipeline and one transaction per group instead of per file.)

    Args:
        ingestor: where and how to write.
        paths: files or directories (see :func:`iter_files`).
        adapter: force an adapter; default detect per file.
        progress: called with (path, summary so far) after each file is parsed and handed to the ingest (its
            documents are written with their group, up to ``embed_group`` chunks later).
        prune: archive the memories of the documents at or below ``paths`` whose files are gone
            (:func:`sync_missing`); without it they are only listed in ``summary.missing``.

    Returns:
        The summary of the whole run.
    """
    summary = IngestSummary()
    paths = list(paths)
    seen: set[str] = set()

    unreadable: list[Path] = []
    whole: dict[str, set[str]] = {}   # a file read to its end without a failure: the conversations of it seen

    def documents() -> Iterator[Document]:
        for path in iter_files(paths, unreadable):
            seen.add(_resolved(Path(path).expanduser()))
            try:
                report = parse_path(path, adapter)
            except Exception as exc:  # AdapterError, or any other failure of an adapter: this file's, not the run's
                reason = path_text(exc) if isinstance(exc, AdapterError) else f"{type(exc).__name__}: {path_text(exc)}"
                summary.failed.append((_resolved(Path(path)), _without_path(reason, path)))
            else:
                keys: set[str] = set()
                try:  # an export streams its documents: a file that breaks off fails after the ones before it
                    for doc in report.documents:
                        keys.add(doc.source_key)
                        yield doc
                except Exception as exc:  # AdapterError (JSON broken off), or any other failure: this file's only
                    reason = path_text(exc) if isinstance(exc, AdapterError) else f"{type(exc).__name__}: {path_text(exc)}"
                    summary.failed.append((_resolved(Path(path)), _without_path(reason, path)))
                else:
                    if not report.failed:
                        whole[_resolved(Path(path).expanduser())] = keys
                summary.empty += report.empty
                summary.failed.extend(report.failed)
                summary.warnings.extend(report.warnings)
                for kind, n in report.skipped_blocks.items():
                    summary.skipped_blocks[kind] = summary.skipped_blocks.get(kind, 0) + n
            if progress:
                progress(path, summary)

    ingestor.ingest(documents(), summary)
    for folder in unreadable:   # never a folder left out unsaid (its files are not taken for gone either: _gone)
        summary.failed.append((_resolved(folder), "a folder memsql may not read (permission denied): its files were "
                                                  "not ingested; --prune leaves their memories"))
    sync_missing(ingestor, paths, seen, summary, prune)
    sync_dropped(ingestor, whole, summary, prune)
    return summary


def sync_dropped(ingestor: Ingestor, whole: dict[str, set[str]], summary: IngestSummary, prune: bool = False) -> None:
    """The conversations stored from an export (claude_ai, chatgpt) that this run read whole (``whole``: its path ->
    the source keys it holds now) and that no export of the run holds any more, into ``summary.dropped``; with ``prune``
    (and not a dry run) their memories are archived as those of a file gone (``memsql.document_prune``)."""
    if not whole:
        return
    try:
        rows = ingestor.conn.execute(
            "SELECT d.id, d.source_uri, d.source_key, d.adapter, d.title,"
            " (SELECT count(*) FROM memsql.memories m"
            "  WHERE m.namespace = d.namespace AND m.document_id = d.id AND m.valid_to IS NULL)"
            " FROM memsql.documents d WHERE d.namespace = %s AND d.source_uri = ANY (%s)"
            " AND d.adapter = ANY (%s) ORDER BY d.source_uri, d.id",
            (ingestor.namespace, list(whole), sorted(EXPORT_ADAPTERS))).fetchall()
        ingestor.conn.commit()
    except psycopg.Error as exc:
        ingestor.conn.rollback()
        raise from_psycopg(exc) from exc
    held = set().union(*whole.values())   # a conversation another export of the run holds is not gone
    gone = [(doc_id, _named(uri, adapter, title), n) for doc_id, uri, key, adapter, title, n in rows
            if n and key not in held and doc_id not in ingestor.moved_ids]
    _listed_or_pruned(ingestor, gone, summary, summary.dropped, prune, "conversation no longer in its export")


def _listed_or_pruned(ingestor: Ingestor, gone: list[tuple[int, str, int]], summary: IngestSummary, into: list,
                      prune: bool, reason: str | None = None) -> None:
    """``gone`` (document id, name, current memories) into ``into`` as (name, memories, archived): listed, or with
    ``prune`` (and not a dry run) their memories archived by ``memsql.document_prune`` (restorable; ``reason`` in
    the archive, NULL = its default, the source missing on disk)."""
    if not gone:
        return
    if not prune or ingestor.dry_run:
        into.extend((name, n, False) for _, name, n in gone)
        return
    names = {doc_id: name for doc_id, name, _ in gone}
    try:
        with ingestor.conn.transaction():
            pruned = ingestor.conn.execute(
                "SELECT document_id, memories FROM memsql.document_prune(%s, %s, false, %s)",
                (ingestor.namespace, list(names), reason)).fetchall()
        ingestor.conn.commit()
    except psycopg.Error as exc:
        _roll_back(summary, ingestor.conn, exc)
        raise from_psycopg(exc) from exc
    into.extend((names[doc_id], n, True) for doc_id, n in pruned)


def sync_missing(ingestor: Ingestor, paths: Sequence[str | Path], seen: set[str], summary: IngestSummary,
                 prune: bool = False) -> None:
    """The documents at or below ``paths`` whose files are gone, into ``summary.missing``; with ``prune`` (and not a
    dry run) their memories are archived (``memsql.document_prune``: restorable, the document row stays).

    A document counts as gone when its source path was not read by this run and does not exist on disk (the file
    was deleted or moved away) and the run did not find it at a new path (``Ingestor.moved_ids``: a moved file's
    document follows it); documents of other paths are never touched.
    """
    under = [_resolved(Path(p).expanduser()) for p in paths]
    if not under:
        return
    try:
        rows = db.document_sources(ingestor.conn, ingestor.namespace, under)
    except psycopg.Error as exc:
        ingestor.conn.rollback()
        raise from_psycopg(exc) from exc
    gone = [(doc_id, source, n) for _, doc_id, source, _, n in rows
            if source not in seen and doc_id not in ingestor.moved_ids and _gone(source)]
    _listed_or_pruned(ingestor, gone, summary, summary.missing, prune)
