"""The rows memsql's verbs return: frozen dataclasses whose fields are the SQL functions' columns, same names.

Memory and AsyncMemory return these (memsql.calls names the one each verb returns); the CLI and the MCP server
turn them into JSON with dataclasses.asdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class SearchResult:
    """One memory returned by memory_search (columns of the SQL function, same names).

    score = fusion_score * decay_factor * frequency_factor (fusion_score includes memory_search's assistant_weight
    for an assistant's words); dense_rank / lexical_rank / priority_rank are
    1-based arm ranks or None when the memory was not in that arm; dense_similarity (cosine) and
    lexical_score (BM25) are the raw arm scores. valid_to and superseded_by mark a superseded version (both None
    for a current one; memory_search returns superseded versions only with include_superseded or as_of).
    """

    memory_id: int
    document_id: int
    chunk_index: int
    content: str
    score: float
    fusion_score: float
    dense_rank: int | None
    lexical_rank: int | None
    priority_rank: int | None
    dense_similarity: float | None
    lexical_score: float
    decay_factor: float
    frequency_factor: float
    source_uri: str | None
    title: str | None
    knowledge_type: str
    importance: float | None
    source_date: datetime | None
    created_at: datetime
    metadata: dict[str, Any]
    rerank_score: float | None = None  # cross-encoder score when [memory.vector] rerank is on (memsql.rerank)
    valid_to: datetime | None = None
    superseded_by: int | None = None
    document_rank: int | None = None  # rank of the memory's document (by its best memory) among the scored ones


@dataclass(frozen=True)
class MemoryVersion:
    """One row of memory_history: version (1 = first) valid over [valid_from, valid_to); valid_to None = current;
    superseded_by the id that replaced it; archived = it sits in memsql.archive (forgotten, restorable)."""

    version: int
    memory_id: int
    document_id: int
    chunk_index: int
    content: str
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: int | None
    is_current: bool
    archived: bool


@dataclass(frozen=True)
class StatsRow:
    """One row of the memory_stats view."""

    namespace: str
    knowledge_type: str
    adapter: str
    documents: int
    memories: int
    without_embedding: int
    accesses: int
    oldest: datetime | None
    newest: datetime | None
    archived: int
    superseded: int = 0


@dataclass(frozen=True)
class ForgetCandidate:
    """One row of memory_forget: a memory whose retention score fell below the threshold, and why.

    score = (coalesce(importance, 0.5) / 0.5) * decay_factor * frequency_factor; age_days in days.
    archived is True when the batch was not a dry run and the memory moved to memsql.archive.
    """

    memory_id: int
    document_id: int
    knowledge_type: str
    importance: float | None
    age_days: float
    access_count: int
    decay_factor: float
    frequency_factor: float
    score: float
    reason: str
    archived: bool


@dataclass(frozen=True)
class RestoreResult:
    """One row of memory_restore: restored, or the reason it was not."""

    memory_id: int
    document_id: int | None
    restored: bool
    reason: str | None


@dataclass(frozen=True)
class TouchResult:
    """One row of memory_touch: a memory counted as used, its access count after the call."""

    memory_id: int
    access_count: int
    last_accessed_at: datetime


@dataclass(frozen=True)
class TaggedMemory:
    """One row of find_by_tag."""

    memory_id: int
    document_id: int
    chunk_index: int
    content: str
    tags: list[str]
    knowledge_type: str
    importance: float | None
    source_date: datetime | None
    created_at: datetime


@dataclass(frozen=True)
class Neighbor:
    """One row of memory_neighbors: a chunk around a memory in its document (is_target marks the memory)."""

    memory_id: int
    document_id: int
    chunk_index: int
    content: str
    is_target: bool


@dataclass(frozen=True)
class DuplicatePair:
    """One row of memory_duplicates: memory_id duplicates duplicate_of (cosine similarity, kind exact|near)."""

    memory_id: int
    duplicate_of: int
    similarity: float
    kind: str


@dataclass(frozen=True)
class HealthCheck:
    """One row of memory_health."""

    check: str
    ok: bool
    value: str | None
    hint: str | None


@dataclass(frozen=True)
class NamespaceInfo:
    """A namespace that holds something (namespace_list): documents, current memories, superseded versions,
    archived memories, and when a document or archive row of it was last written."""

    namespace: str
    documents: int
    memories: int
    superseded: int
    archived: int
    last_write: datetime | None


@dataclass(frozen=True)
class NamespaceChange:
    """Rows of one kind (documents, memories, archive, ...) that namespace_rename / namespace_drop /
    namespace_import move, delete or write in a namespace; applied False in a dry run."""

    namespace: str
    item: str
    count: int
    applied: bool


# -- the web page's reads and the agents' full text (memory_get, memory_timeline, knowledge_types) -------------
@dataclass(frozen=True)
class MemoryRecord:
    """A row of memory_get: one memory (live, superseded or archived) with its document and access statistics.

    content is cut at max_chars when truncated (chars = the whole text's length); language is the memory's text
    search configuration; archived, archive_reason and archived_at describe a forgotten memory; document_chunks
    counts the document's current chunks.
    """

    memory_id: int
    document_id: int
    chunk_index: int
    content: str
    knowledge_type: str
    importance: float | None
    tags: list[str]
    topics: list[str]
    metadata: dict[str, Any]
    language: str
    source_date: datetime | None
    created_at: datetime
    valid_to: datetime | None
    superseded_by: int | None
    has_embedding: bool
    access_count: int
    last_accessed_at: datetime | None
    archived: bool
    archive_reason: str | None
    archived_at: datetime | None
    source_uri: str | None
    title: str | None
    adapter: str | None
    document_tags: list[str] | None
    document_chunks: int
    chars: int
    truncated: bool


@dataclass(frozen=True)
class TimelineBucket:
    """One row of memory_timeline: current and archived memories stated in the period starting at bucket_start."""

    namespace: str
    bucket_start: datetime
    memories: int
    archived: int


@dataclass(frozen=True)
class KnowledgeType:
    """One row of memsql.knowledge_types: half_life_days None = never decays."""

    name: str
    half_life_days: float | None
    description: str
