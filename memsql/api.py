"""Python API: :class:`Memory`, one method per SQL function (see the name table in README.md).

``Memory()`` uses the embedded server (or $MEMSQL_DSN); ``Memory(dsn=...)`` any PostgreSQL with
pgvector >= 0.8 and memsql's schema (``Memory.init()`` or ``memsql init`` creates it). Ranking
happens in SQL: :meth:`Memory.search` embeds the query and makes one ``memory_search`` call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import psycopg
from psycopg.rows import dict_row

from memsql import db
from memsql.config import Config
from memsql.config import load as load_config
from memsql.embedding import Embedder, default_embedder
from memsql.errors import from_psycopg


@dataclass(frozen=True)
class SearchResult:
    """One memory returned by memory_search (columns of the SQL function, same names).

    score = rrf_score * decay_factor * frequency_factor; dense_rank / lexical_rank are 1-based arm
    ranks or None when the memory was not in that arm.
    """

    memory_id: int
    document_id: int
    chunk_index: int
    content: str
    score: float
    rrf_score: float
    dense_rank: int | None
    lexical_rank: int | None
    decay_factor: float
    frequency_factor: float
    source_uri: str | None
    title: str | None
    knowledge_type: str
    importance: float | None
    source_date: datetime | None
    created_at: datetime
    metadata: dict[str, Any]


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


SEARCH_OPTIONS = (
    "candidates", "rrf_k", "dense_weight", "lexical_weight", "bm25_k1", "bm25_b", "memory_rerank",
    "importance_threshold", "time_weight", "freq_weight", "freq_cap", "touch",
)


def search_sql(options: Iterable[str] = ()) -> str:
    """SQL text of a memory_search call passing the given named options (pyformat placeholders).

    Raises:
        TypeError: an option memory_search does not have.
    """
    options = list(options)
    unknown = set(options) - set(SEARCH_OPTIONS)
    if unknown:
        raise TypeError(f"unknown memory_search option(s): {', '.join(sorted(unknown))}")
    named = "".join(f", {name} => %({name})s" for name in options)
    return (
        "SELECT * FROM memsql.memory_search(%(query)s, %(query_embeddings)s::vector[], %(k)s, %(namespace)s, "
        "%(knowledge_types)s::text[], %(tags)s::text[]" + named + ")"
    )


class Memory:
    """Synchronous memsql client.

    Args:
        dsn: libpq DSN/URI; default $MEMSQL_DSN, else the embedded server (started on demand).
        namespace: default namespace of every call ('default').
        embedder: an Embedder; default all-MiniLM-L6-v2 on CPU (loaded on first use).
        pool_size: 0 (default) keeps one connection; n > 0 uses a psycopg_pool.ConnectionPool of up to n
            connections so one Memory serves calls from several threads (the MCP server does).
        config: a memsql.config.Config; default loaded from memsql.toml and MEMSQL_* variables. Its values
            are the defaults of every call (search options, chunker, knowledge_type rules).

    Raises:
        ConfigError: the configuration names an unknown key or a bad value.
    """

    def __init__(self, dsn: str | None = None, namespace: str | None = None, embedder: Embedder | None = None,
                 pool_size: int = 0, config: Config | None = None) -> None:
        self.config = config or load_config()
        home = self.config.get("database.home")
        self.dsn = db.resolve_dsn(dsn or self.config.get("database.dsn") or None, home=Path(home) if home else None)
        self.namespace = namespace or self.config.get("database.namespace")
        self._embedder = embedder
        self._conn: psycopg.Connection | None = None
        self._pool = None
        if pool_size > 0:
            from psycopg_pool import ConnectionPool

            # check= re-validates a connection before lending it, so the first call after a long idle
            # period (server restart, dropped socket) gets a working connection.
            self._pool = ConnectionPool(self.dsn, min_size=1, max_size=pool_size, configure=db.configure,
                                        check=ConnectionPool.check_connection, open=True)

    # -- plumbing -----------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
        return self._embedder

    @property
    def conn(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = db.connect(self.dsn)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, query: str, params: Any, row_factory=dict_row) -> list:
        """Run one statement in its own transaction; psycopg errors become memsql errors."""
        if self._pool is not None:
            try:
                with self._pool.connection() as conn, conn.cursor(row_factory=row_factory) as cur:
                    cur.execute(query, params)
                    return cur.fetchall() if cur.description else []
            except psycopg.Error as exc:
                raise from_psycopg(exc) from exc
        try:
            with self.conn.cursor(row_factory=row_factory) as cur:
                cur.execute(query, params)
                rows = cur.fetchall() if cur.description else []
            self.conn.commit()
            return rows
        except psycopg.Error as exc:
            self.conn.rollback()
            raise from_psycopg(exc) from exc

    # -- verbs ----------------------------------------------------------------------------------
    def init(self) -> list[str]:
        """Create or upgrade the schema (memsql.db.migrate). Returns the steps done."""
        return db.migrate(self.dsn, self.embedder.model_name, self.embedder.dimension)

    def embed_query(self, query: str) -> list[np.ndarray]:
        """Query embeddings passed to memory_search (1 now; up to 3 with enrichment)."""
        if not query.strip():
            return []
        return list(self.embedder.embed([query]))

    def search(self, query: str, k: int | None = None, namespace: str | None = None,
               knowledge_types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
               query_embeddings: Sequence[np.ndarray] | None = None, **options: Any) -> list[SearchResult]:
        """Hybrid search; calls ``memsql.memory_search`` once.

        Args:
            query: the question.
            k: results wanted (1..1000); default [memory.vector] top_k.
            namespace: default this client's namespace.
            knowledge_types, tags: filters applied to every arm.
            query_embeddings: precomputed (n<=3, 384) unit vectors; default embed the query.
            **options: memory_search named options (candidates, rrf_k, dense_weight, ..., touch); the
                configuration supplies the ones not given.

        Returns:
            Results best first.

        Raises:
            InvalidArgument: k, weights or options out of range (SQLSTATE MS002).
        """
        embs = self.embed_query(query) if query_embeddings is None else list(query_embeddings)
        options = {**self.config.search_options(), **options}
        params = {
            "query": query, "query_embeddings": embs or None, "k": k or self.config.get("memory.vector.top_k"),
            "namespace": namespace or self.namespace,
            "knowledge_types": list(knowledge_types) if knowledge_types else None,
            "tags": list(tags) if tags else None, **options,
        }
        rows = self._call(search_sql(options), params)
        return [SearchResult(**r) for r in rows]

    def add(self, content: str, namespace: str | None = None, knowledge_type: str = "note",
            importance: float | None = None, tags: Sequence[str] = (), metadata: dict | None = None,
            source_date: datetime | None = None, title: str | None = None) -> int:
        """Remember a short text; calls ``memsql.memory_add``. Idempotent by content.

        Returns:
            The memory id.

        Raises:
            InvalidArgument: empty content or importance outside [0, 1].
            UnknownKnowledgeType: knowledge_type is not a row of memsql.knowledge_types.
        """
        vec = self.embedder.embed([content])[0] if content.strip() else None
        rows = self._call(
            "SELECT memsql.memory_add(%s, %s, %s, %s, %s, %s::text[], %s::jsonb, %s, %s) AS id",
            (content, vec, namespace or self.namespace, knowledge_type, importance, list(tags),
             json.dumps(metadata or {}), source_date, title),
        )
        return rows[0]["id"]

    def ingest(self, paths: Iterable[str | Path], namespace: str | None = None,
               knowledge_type: str | None = None, adapter: str | None = None, progress=None):
        """Ingest files or directories (markdown, text, conversation exports).

        Args:
            paths: files or directories.
            namespace: default this client's namespace.
            knowledge_type: force a type; default from the source (front matter, adapter).
            adapter: force an adapter; default detect per file.
            progress: optional callable(path, summary) after each file.

        Returns:
            memsql.ingest.IngestSummary; unparseable files are counted in ``failed``, never raised.
        """
        if self._pool is not None:
            with self._pool.connection() as conn:
                return self._ingest_with(conn, paths, namespace or self.namespace, knowledge_type, adapter, progress)
        return self._ingest_with(self.conn, paths, namespace or self.namespace, knowledge_type, adapter, progress)

    def _ingest_with(self, conn, paths, namespace, knowledge_type, adapter, progress):
        from memsql.adapters.base import AdapterError
        from memsql.ingest import IngestSummary, Ingestor, iter_files, parse_path

        cfg = self.config
        ing = Ingestor(conn, self.embedder, namespace, knowledge_type,
                       max_tokens=cfg.get("memory.chunker.max_tokens"),
                       overlap_tokens=cfg.get("memory.chunker.overlap_tokens"), rules=cfg.rules)
        summary = IngestSummary()
        for path in iter_files(paths):
            try:
                report = parse_path(path, adapter)
            except AdapterError as exc:
                summary.failed.append((str(path), str(exc)))
            else:
                summary.empty += report.empty
                summary.failed.extend(report.failed)
                for kind, n in report.skipped_blocks.items():
                    summary.skipped_blocks[kind] = summary.skipped_blocks.get(kind, 0) + n
                ing.ingest(report.documents, summary)
            if progress:
                progress(path, summary)
        return summary

    def stats(self, namespace: str | None = None) -> list[StatsRow]:
        """Rows of the ``memsql.memory_stats`` view (all namespaces unless one is given)."""
        rows = self._call(
            "SELECT * FROM memsql.memory_stats WHERE %(ns)s::text IS NULL OR namespace = %(ns)s "
            "ORDER BY namespace, knowledge_type, adapter",
            {"ns": namespace},
        )
        return [StatsRow(**r) for r in rows]


SEARCH_RESULT_FIELDS = tuple(f.name for f in fields(SearchResult))
