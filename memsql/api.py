"""Python API: :class:`Memory` (sync) and :class:`AsyncMemory` (async, psycopg 3 pool), one method
per SQL function (see the name table in README.md), same names and arguments on both.

``Memory()`` uses the embedded server (or $MEMSQL_DSN); ``Memory(dsn=...)`` any PostgreSQL with
pgvector >= 0.8 and memsql's schema (``Memory.init()`` or ``memsql init`` creates it). Ranking
happens in SQL: ``search`` embeds the query and makes one ``memory_search`` call. Each verb is
defined once (:class:`_Verbs`: SQL text, parameters, result mapping); the two clients differ only in
how they run it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import psycopg
from psycopg.rows import dict_row

from memsql import db
from memsql.config import Config
from memsql.config import load as load_config
from memsql.embedding import Embedder, default_embedder
from memsql.adapters.base import json_for_postgres, text_for_postgres

_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn"}


def query_text(query: str) -> str:
    """A query as searched: :func:`text_for_postgres`, then control and format characters (terminal escapes,
    zero-width and bidi marks, byte order marks) turned into spaces; a query made only of them is blank
    (no rows; memory_search says there is nothing to search)."""
    import unicodedata

    query = text_for_postgres(query)
    if query.isprintable():
        return query
    return "".join(" " if unicodedata.category(ch) in _INVISIBLE else ch for ch in query)
from memsql.errors import DimensionMismatch, InvalidArgument, from_psycopg
from memsql.results import (DuplicatePair, ForgetCandidate, HealthCheck, MemoryVersion, Neighbor, RestoreResult,
                             SearchResult, StatsRow, TaggedMemory)

log = logging.getLogger("memsql")


_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_CASTS = {"words": "text[]", "tags": "text[]", "add_tags": "text[]", "remove_tags": "text[]", "memory_ids": "bigint[]",
          "embeddings": "vector[]", "importance": "double precision"}


def function_sql(fn: str, args: dict[str, Any], select: str = "*") -> tuple[str, dict[str, Any]]:
    """SQL text calling memsql.<fn> with named arguments; arguments that are None are left to their defaults.

    Args:
        fn: function name in schema memsql.
        args: argument name -> value.
        select: "*" for a set-returning function (rows), anything else for a scalar one (its value as column n).

    Returns:
        (sql, params) with pyformat placeholders.

    Raises:
        ValueError: fn or an argument name is not a plain lower-case SQL identifier.
    """
    bad = [n for n in (fn, *args) if not _IDENTIFIER.fullmatch(n)]
    if bad:  # names come from this module's code, never from input; values always go as parameters
        raise ValueError(f"not a plain SQL identifier: {bad[0]!r}")
    given = {k: v for k, v in args.items() if v is not None}
    named = ", ".join(f"{k} => %({k})s" + (f"::{_CASTS[k]}" if k in _CASTS else "") for k in given)
    if select == "*":
        return f"SELECT * FROM memsql.{fn}({named})", given
    return f"SELECT memsql.{fn}({named}) AS n", given


SEARCH_OPTIONS = (
    "candidates", "rrf_k", "dense_weight", "lexical_weight", "bm25_k1", "bm25_b", "memory_rerank",
    "importance_threshold", "time_weight", "freq_weight", "freq_cap", "touch", "dense_min_similarity",
    "priority_weight", "priority_min_similarity", "priority_limit", "fusion",
    "topics", "ef_search", "enable_mmr", "mmr_lambda",
    "include_superseded", "as_of", "posting_budget",
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
    named = "".join(f", {name} => %({name})s" + ("::text[]" if name == "topics" else "") for name in options)
    return (
        "SELECT * FROM memsql.memory_search(%(query)s, %(query_embeddings)s::vector[], %(k)s, %(namespace)s, "
        "%(knowledge_types)s::text[], %(tags)s::text[]" + named + ")"
    )


@dataclass(frozen=True)
class _Call:
    """One SQL statement of a verb: text, parameters, and how rows become the verb's result."""

    sql: str
    params: Any
    result: Callable[[list[dict]], Any]


class _Verbs:
    """What Memory and AsyncMemory share: configuration, embedder, and each verb's SQL call."""

    def __init__(self, dsn: str | None, namespace: str | None, embedder: Embedder | None,
                 config: Config | None) -> None:
        self.config = config or load_config()
        self._dsn_arg = dsn or self.config.get("database.dsn") or None
        self._dsn: str | None = None
        self.namespace = namespace or self.config.get("database.namespace")
        self._embedder = embedder

    @property
    def dsn(self) -> str:
        """The server's DSN, resolved on first use (the embedded server starts only when a call needs it)."""
        if self._dsn is None:
            home = self.config.get("database.home")
            self._dsn = db.resolve_dsn(self._dsn_arg, home=Path(home) if home else None)
        return self._dsn

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder(self.config.get("memory.embeddings.backend"))
        return self._embedder

    def embed_query(self, query: str, variants: Sequence[str] = ()) -> list[np.ndarray]:
        """Query embeddings passed to memory_search: (n, 384) unit vectors for the query and its variants
        (n = 0 for a blank query), encoded in one batch."""
        if not query.strip():
            return []
        from memsql.embedding import MAX_TOKENS, truncate_to_window

        texts = []
        for text in [query, *[v for v in variants if v != query]]:
            kept, pieces = truncate_to_window(text)
            if pieces > MAX_TOKENS and text is query:
                log.warning("the query is %d word pieces, over the model window of %d: its embedding reads the "
                            "first %d characters; the lexical arm uses every word", pieces, MAX_TOKENS, len(kept))
            texts.append(kept)
        return list(self.embedder.embed(texts))

    def _check_query_embeddings(self, embs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Query embeddings given by the caller, refused at the door unless each is a finite, non-zero vector of
        the model's dimension (a zero or NaN vector has no cosine: it would rank nothing, silently)."""
        out = []
        for i, e in enumerate(embs):
            v = np.asarray(e, dtype=np.float32)
            if v.ndim != 1 or v.shape[0] != self.embedder.dimension:
                raise DimensionMismatch(f"query embedding {i} has shape {v.shape}, expected ({self.embedder.dimension},)",
                                        "embed the query with the configured model, or pass no embeddings")
            if not np.all(np.isfinite(v)) or not np.any(v):
                raise InvalidArgument(f"query embedding {i} is {'zero' if np.all(np.isfinite(v)) else 'not finite'}",
                                      "pass unit vectors from the model (NaN, infinite and zero vectors have no cosine)")
            out.append(v)
        return out

    def _idf_call(self, words, namespace) -> _Call:
        return self._fn("term_idf", {"words": list(words), "namespace": namespace or self.namespace},
                        lambda rows: {r["word"]: r["idf"] for r in rows if r["idf"] is not None})

    def _enrich_wanted(self, enrich: bool | None) -> bool:
        return self.config.get("memory.vector.enrich") if enrich is None else enrich

    def _search_call(self, query, embs, k, namespace, knowledge_types, tags, options) -> _Call:
        options = {**self.config.search_options(), **options}
        params = {
            "query": query, "query_embeddings": list(embs),  # [] = lexical only; NULL would ask the worker
            "k": k if k is not None else self.config.get("memory.vector.top_k"),
            "namespace": namespace or self.namespace,
            "knowledge_types": list(knowledge_types) if knowledge_types else None,
            "tags": list(tags) if tags else None, **options,
        }
        return _Call(search_sql(options), params, lambda rows: [SearchResult(**r) for r in rows])

    def _add_call(self, content, vec, namespace, knowledge_type, importance, tags, metadata, source_date,
                  title, language=None, topics=()) -> _Call:
        content = text_for_postgres(content)
        tags = [text_for_postgres(t) for t in tags or ()]
        metadata = json_for_postgres(metadata)
        title = text_for_postgres(title) if title is not None else None
        return _Call(
            "SELECT memsql.memory_add(%s, %s, %s, %s, %s::real, %s::text[], %s::jsonb, %s, %s, %s, %s::text[]) AS id",
            (content, vec, namespace or self.namespace, knowledge_type, importance, list(tags),
             json.dumps(metadata or {}), source_date, title, language, list(topics)),
            lambda rows: rows[0]["id"],
        )

    # -- the text pipeline: autosave filter, topics, cross-encoder rerank ([memory.filter], [memory.topics]) --
    def _filter_settings(self):
        from memsql.filter import FilterSettings

        return FilterSettings.from_config(self.config.section("memory.filter"))

    def _topic_settings(self):
        from memsql.topics import TopicSettings

        return TopicSettings.from_config(self.config.section("memory.topics"))

    def _autosave(self):
        from memsql.filter import AutosaveFilter

        if getattr(self, "_autosave_filter", None) is None:
            self._autosave_filter = AutosaveFilter(self._filter_settings(), embed=lambda t: self.embedder.embed(t),
                                                   custom_topics=self._topic_settings().labels)
        return self._autosave_filter

    def _topic_assigner(self, idf):
        from memsql.topics import TopicAssigner

        return TopicAssigner(self._topic_settings(), embed=lambda t: self.embedder.embed(t), idf=idf)

    def _check_add_length(self, content: str) -> None:
        settings = self._filter_settings()
        if settings.enabled and len(content) > settings.max_length:
            from memsql.errors import InvalidArgument

            raise InvalidArgument(
                f"memory_add: {len(content)} characters exceed [memory.filter] max_length {settings.max_length}",
                "ingest long text as a file (memsql ingest chunks it), or raise max_length")

    def _rerank(self, query: str, results: list, k: int) -> list:
        from memsql.rerank import rerank

        return rerank(query, results, self.config.get("memory.vector.rerank_model"))[:k]

    def _rerank_wanted(self, rerank: bool | None) -> bool:
        return self.config.get("memory.vector.rerank") if rerank is None else rerank

    def _half_life_calls(self) -> list[_Call]:
        return [_Call("SELECT memsql.knowledge_type_set(%s, %s) AS action", (name, days),
                      lambda rows, name=name, days=days: f"knowledge_type {name}: half-life "
                      f"{'never' if days is None else f'{days:g} days'} ({rows[0]['action']})")
                for name, days in self.config.half_lives().items()]
    def _update_call(self, memory_id, content, vec, namespace, importance, source_date, language) -> _Call:
        return _Call(
            "SELECT memsql.memory_update(%s, %s, %s, %s, %s::real, %s, %s) AS id",
            (memory_id, content, vec, namespace or self.namespace, importance, source_date, language),
            lambda rows: rows[0]["id"],
        )

    def _history_call(self, memory_id, namespace) -> _Call:
        return self._fn("memory_history", {"memory_id": memory_id, "namespace": namespace or self.namespace},
                        self._rows(MemoryVersion))

    def _stats_call(self, namespace) -> _Call:
        return _Call(
            "SELECT * FROM memsql.memory_stats WHERE %(ns)s::text IS NULL OR namespace = %(ns)s "
            "ORDER BY namespace, knowledge_type, adapter",
            {"ns": namespace}, lambda rows: [StatsRow(**r) for r in rows],
        )

    def _fn(self, fn: str, args: dict[str, Any], result, select: str = "*") -> _Call:
        sql, params = function_sql(fn, args, select)
        return _Call(sql, params, result)

    def _rows(self, cls):
        return lambda rows: [cls(**r) for r in rows]

    def _tag_call(self, memory_id, document_id, namespace, importance, knowledge_type, tags, add_tags,
                  remove_tags, clear_importance) -> _Call:
        return self._fn("memory_tag", {
            "memory_id": memory_id, "document_id": document_id, "namespace": namespace or self.namespace,
            "importance": importance, "knowledge_type": knowledge_type,
            "tags": list(tags) if tags is not None else None,
            "add_tags": list(add_tags) if add_tags else None, "remove_tags": list(remove_tags) if remove_tags else None,
            "clear_importance": clear_importance or None}, lambda rows: rows[0]["n"], select="memsql.memory_tag")

    def _forget_call(self, namespace, score_threshold, time_weight, freq_weight, freq_cap, importance_threshold,
                     dry_run, max_rows) -> _Call:
        return self._fn("memory_forget", {
            "namespace": namespace or self.namespace, "score_threshold": score_threshold,
            "time_weight": time_weight, "freq_weight": freq_weight, "freq_cap": freq_cap,
            "importance_threshold": importance_threshold, "dry_run": dry_run, "max_rows": max_rows},
            self._rows(ForgetCandidate))

    def _restore_call(self, memory_ids, namespace) -> _Call:
        return self._fn("memory_restore", {"memory_ids": list(memory_ids), "namespace": namespace or self.namespace},
                        self._rows(RestoreResult))

    def _pending_call(self, namespace, max_rows) -> _Call:
        return self._fn("memory_pending_embeddings", {"namespace": namespace, "max_rows": max_rows},
                        lambda rows: rows)

    def _set_embeddings_call(self, namespace, ids, vectors) -> _Call:
        return self._fn("memory_set_embeddings", {"namespace": namespace, "memory_ids": list(ids),
                                                  "embeddings": list(vectors)},
                        lambda rows: rows[0]["n"], select="memsql.memory_set_embeddings")

    def _find_by_tag_call(self, tags, namespace, match_all, k) -> _Call:
        return self._fn("find_by_tag", {"tags": list(tags), "namespace": namespace or self.namespace,
                                        "match_all": match_all, "k": k}, self._rows(TaggedMemory))

    def _delete_document_call(self, document_id, namespace) -> _Call:
        return self._fn("delete_document", {"document_id": document_id, "namespace": namespace or self.namespace},
                        lambda rows: rows[0]["n"], select="memsql.delete_document")

    def _neighbors_call(self, memory_id, namespace, before, after) -> _Call:
        return self._fn("memory_neighbors", {"memory_id": memory_id, "namespace": namespace or self.namespace,
                                             "before": before, "after": after}, self._rows(Neighbor))

    def _duplicates_call(self, namespace, similarity, max_pairs) -> _Call:
        return self._fn("memory_duplicates", {"namespace": namespace or self.namespace, "similarity": similarity,
                                              "max_pairs": max_pairs}, self._rows(DuplicatePair))

    def _health_call(self, namespace) -> _Call:
        return self._fn("memory_health", {"namespace": namespace}, self._rows(HealthCheck))

    def _archive_call(self, namespace) -> _Call:
        return _Call("SELECT namespace, id AS memory_id, document_id, chunk_index, content, knowledge_type, importance,"
                     " topics, tags, metadata, source_date, created_at, last_accessed_at, access_count, score, reason,"
                     " archived_at FROM memsql.archive WHERE %(ns)s::text IS NULL OR namespace = %(ns)s"
                     " ORDER BY namespace, archived_at, id", {"ns": namespace}, lambda rows: rows)

    def _role_create_call(self, role_name, namespace, login) -> _Call:
        return self._fn("role_create", {"role_name": role_name, "namespace": namespace or self.namespace,
                                        "login": login}, lambda rows: rows[0]["n"], select="memsql.role_create")

    def _role_drop_call(self, role_name, namespace) -> _Call:
        return self._fn("role_drop", {"role_name": role_name, "namespace": namespace},
                        lambda rows: rows[0]["n"], select="memsql.role_drop")

    def _roles_call(self) -> _Call:
        return _Call("SELECT role_name, array_agg(namespace ORDER BY namespace) AS namespaces "
                     "FROM memsql.role_namespaces GROUP BY role_name ORDER BY role_name", None, lambda rows: rows)

    def _ingestor(self, conn, namespace, knowledge_type, language=None, dry_run: bool = False):
        from memsql.ingest import Ingestor

        cfg = self.config
        ch = cfg.section("memory.chunker")
        filt = self._filter_settings()
        ns = namespace or self.namespace
        topics = None
        if cfg.get("memory.topics.enabled"):
            def idf(words):
                from psycopg.rows import dict_row

                with conn.cursor(row_factory=dict_row) as cur:
                    call = self._idf_call(words, ns)
                    cur.execute(call.sql, call.params)
                    rows = cur.fetchall()
                conn.commit()
                return call.result(rows)

            topics = self._topic_assigner(idf)
        return Ingestor(conn, self.embedder, ns, knowledge_type,
                        max_tokens=ch["max_tokens"], overlap_tokens=ch["overlap_tokens"], rules=cfg.rules,
                        chunker={k: ch[k] for k in ("strategy", "breakpoint_threshold", "min_tokens", "tokenizer")},
                        autosave=self._autosave() if (filt.enabled or dry_run) else None,
                        filter_documents=filt.apply_to_documents, topics=topics, dry_run=dry_run,
                        keep_decisions=dry_run, language=language,
                        embed_group=cfg.get("memory.embeddings.ingest_group"))


class Memory(_Verbs):
    """Synchronous memsql client.

    Args:
        dsn: libpq DSN/URI; default [database] dsn / $MEMSQL_DSN, else the embedded server (started on demand).
        namespace: default namespace of every call; default [database] namespace ('default').
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
        super().__init__(dsn, namespace, embedder, config)
        self._conn: psycopg.Connection | None = None
        self._pool = None
        if pool_size > 0:
            from psycopg_pool import ConnectionPool

            # check= re-validates a connection before lending it, so the first call after a long idle
            # period (server restart, dropped socket) gets a working connection.
            self._pool = ConnectionPool(self.dsn, min_size=1, max_size=pool_size, configure=db.configure,
                                        check=ConnectionPool.check_connection, open=True)

    @property
    def conn(self) -> psycopg.Connection:
        """The client's own connection (without a pool)."""
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

    def _run(self, call: _Call):
        """Run one verb's statement in its own transaction; psycopg errors become memsql errors."""
        if self._pool is not None:
            try:
                with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                    cur.execute(call.sql, call.params)
                    return call.result(cur.fetchall() if cur.description else [])
            except psycopg.Error as exc:
                raise from_psycopg(exc) from exc
        try:
            with self.conn.cursor(row_factory=dict_row) as cur:
                cur.execute(call.sql, call.params)
                rows = cur.fetchall() if cur.description else []
            self.conn.commit()
        except psycopg.Error as exc:
            self.conn.rollback()
            raise from_psycopg(exc) from exc
        return call.result(rows)

    # -- verbs ----------------------------------------------------------------------------------
    def init(self) -> list[str]:
        """Create or upgrade the schema (memsql.db.migrate), then write [memory.scoring] half_life_days overrides
        into memsql.knowledge_types (memsql.knowledge_type_set). Returns the steps done."""
        steps = db.migrate(self.dsn, self.embedder.model_name, self.embedder.dimension)
        return steps + [self._run(c) for c in self._half_life_calls()]

    def search(self, query: str, k: int | None = None, namespace: str | None = None,
               knowledge_types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
               query_embeddings: Sequence[np.ndarray] | None = None, enrich: bool | None = None,
               rerank: bool | None = None, **options: Any) -> list[SearchResult]:
        """Hybrid search; calls ``memsql.memory_search`` once (plus ``memsql.term_idf`` when enriching).

        Args:
            query: the question.
            k: results wanted (1..1000); default [memory.vector] top_k.
            namespace: default this client's namespace.
            knowledge_types, tags: filters applied to every arm (tags: any of). ``topics=[...]`` (an option) keeps
                memories sharing a topic, in every arm too.
            query_embeddings: precomputed (n <= 3, 384) unit vectors; default embed the query.
            enrich: embed up to 2 variants built from key terms (memsql.enrich); default [memory.vector] enrich.
            rerank: re-order the fused top [memory.vector] rerank_candidates with the cross-encoder at
                rerank_model (memsql.rerank), then keep k; default [memory.vector] rerank.
            **options: memory_search named options (candidates, rrf_k, dense_weight, ..., touch, topics, ef_search,
                enable_mmr, mmr_lambda, include_superseded, as_of); the configuration supplies the ones not given.
                By default only current versions are searched; ``as_of=datetime`` answers as the memory stood then,
                ``include_superseded=True`` searches every version (SearchResult.valid_to / superseded_by mark the
                superseded ones).

        Returns:
            Results best first (by rerank_score when reranked).

        Raises:
            InvalidArgument: k, weights or options out of range (SQLSTATE MS002).
            TypeError: an option memory_search does not have.
        """
        query = query_text(query)
        if query_embeddings is None:
            variants = ()
            if self._enrich_wanted(enrich) and query.strip():
                from memsql.enrich import enrich as make_variants

                variants = make_variants(query, idf=lambda words: self._run(self._idf_call(words, namespace))).variants
            embs = self.embed_query(query, variants)
        else:
            embs = self._check_query_embeddings(query_embeddings)
        if self._rerank_wanted(rerank):
            want = k or self.config.get("memory.vector.top_k")
            depth = max(want, self.config.get("memory.vector.rerank_candidates"))
            rows = self._run(self._search_call(query, embs, depth, namespace, knowledge_types, tags, options))
            return self._rerank(query, rows, want)
        return self._run(self._search_call(query, embs, k, namespace, knowledge_types, tags, options))

    def judge(self, content: str, namespace: str | None = None, knowledge_type: str = "note",
              source_date: datetime | None = None):
        """What the autosave filter would decide for ``content`` (nothing is written), with every criterion.

        Returns:
            memsql.filter.Decision.
        """
        vec = self.embedder.embed([content])
        return self._autosave().evaluate(self._fetch, namespace or self.namespace, [content], vec, knowledge_type,
                                         [source_date])[0]

    def _fetch(self, query: str, params) -> list[dict]:
        return self._run(_Call(query, params, lambda rows: rows))

    def add(self, content: str, namespace: str | None = None, knowledge_type: str = "note",
            importance: float | None = None, tags: Sequence[str] = (), metadata: dict | None = None,
            source_date: datetime | None = None, title: str | None = None, language: str | None = None,
            autosave: bool | None = None) -> int | None:
        """Remember a short text; calls ``memsql.memory_add``. Idempotent by content.

        With [memory.filter] enabled (or autosave=True) the text first goes through the autosave filter
        (:meth:`judge`); with [memory.topics] enabled it gets topics.

        Args:
            language: ISO 639-1 code or text search configuration name (default english): the stemmer of the
                lexical arm for this memory.
            autosave: run the autosave filter; default [memory.filter] enabled.

        Returns:
            The memory id; None when the autosave filter did not save it (see :meth:`judge` for why).

        Raises:
            InvalidArgument: empty content, importance outside [0, 1], an unknown language, or longer than
                [memory.filter] max_length while the filter is on.
            UnknownKnowledgeType: knowledge_type is not a row of memsql.knowledge_types.
        """
        content = text_for_postgres(content)
        use_filter = self._filter_settings().enabled if autosave is None else autosave
        if use_filter:
            self._check_add_length(content)
        vec = self.embedder.embed([content])[0] if content.strip() else None
        if use_filter and vec is not None:
            decision = self._autosave().evaluate(self._fetch, namespace or self.namespace, [content], vec[None, :],
                                                 knowledge_type, [source_date])[0]
            if not decision.keep:
                return None
        topics: list[str] = []
        if vec is not None and self.config.get("memory.topics.enabled"):
            ns = namespace or self.namespace
            assigner = self._topic_assigner(lambda words: self._run(self._idf_call(words, ns)))
            topics = [t.label for t in assigner.assign([content], vec[None, :])[0]]
        return self._run(self._add_call(content, vec, namespace, knowledge_type, importance, tags, metadata,
                                        source_date, title, language, topics))

    def update(self, memory_id: int, content: str, namespace: str | None = None, importance: float | None = None,
               source_date: datetime | None = None, language: str | None = None) -> int:
        """A fact changed: write a new version of a memory and mark the old one superseded (``memsql.memory_update``).

        Args:
            memory_id: the current version's id.
            content: the new text (embedded here).
            importance: 0..1; default the old version's.
            source_date: when the new fact was stated; default now.
            language: default the old version's.

        Returns:
            The new version's id (the same id when the text did not change).

        Raises:
            InvalidArgument: empty content, importance outside [0, 1], or memory_id is not the current version.
            NotFound: no such memory in the namespace.
        """
        vec = self.embedder.embed([content])[0] if content.strip() else None
        return self._run(self._update_call(memory_id, content, vec, namespace, importance, source_date, language))

    def history(self, memory_id: int, namespace: str | None = None) -> list[MemoryVersion]:
        """The chain of versions of a memory, oldest first (``memsql.memory_history``); any version's id works.

        Raises:
            NotFound: no such memory (live or archived) in the namespace.
        """
        return self._run(self._history_call(memory_id, namespace))

    def ingest(self, paths: Iterable[str | Path], namespace: str | None = None,
               knowledge_type: str | None = None, adapter: str | None = None, progress=None,
               language: str | None = None, dry_run: bool = False):
        """Ingest files or directories (markdown, text, conversation exports).

        Args:
            paths: files or directories.
            namespace: default this client's namespace.
            knowledge_type: force a type; default from the source (front matter, [ingest] rules, adapter).
            adapter: force an adapter; default detect per file.
            progress: optional callable(path, summary) after each file.
            language: language of documents that declare none (front matter ``language``/``lang``); default english.
            dry_run: chunk, embed and run the autosave filter (even when [memory.filter] is disabled), write
                nothing; the summary holds every decision.

        Returns:
            memsql.ingest.IngestSummary; unparseable files are counted in ``failed``, never raised.
        """
        from memsql.ingest import ingest_paths

        if self._pool is not None:
            with self._pool.connection() as conn:
                return ingest_paths(self._ingestor(conn, namespace, knowledge_type, language, dry_run), paths,
                                    adapter, progress)
        return ingest_paths(self._ingestor(self.conn, namespace, knowledge_type, language, dry_run), paths, adapter,
                            progress)

    def stats(self, namespace: str | None = None) -> list[StatsRow]:
        """Rows of the ``memsql.memory_stats`` view (all namespaces unless one is given)."""
        return self._run(self._stats_call(namespace))

    def tag(self, memory_id: int | None = None, document_id: int | None = None, namespace: str | None = None,
            importance: float | None = None, knowledge_type: str | None = None, tags: Sequence[str] | None = None,
            add_tags: Sequence[str] | None = None, remove_tags: Sequence[str] | None = None,
            clear_importance: bool = False) -> int:
        """Set importance, knowledge_type and tags of one memory or a whole document (memory_tag); no re-embedding.

        Args:
            memory_id, document_id: exactly one of them.
            importance: 0..1; clear_importance=True unsets it. tags replace, add_tags / remove_tags edit.

        Returns:
            Memories changed.

        Raises:
            InvalidArgument, UnknownKnowledgeType, NotFound.
        """
        return self._run(self._tag_call(memory_id, document_id, namespace, importance, knowledge_type, tags,
                                        add_tags, remove_tags, clear_importance))

    def forget(self, namespace: str | None = None, score_threshold: float | None = None,
               time_weight: float | None = None, freq_weight: float | None = None, freq_cap: float | None = None,
               importance_threshold: float | None = None, dry_run: bool = True,
               max_rows: int | None = None) -> list[ForgetCandidate]:
        """Score every memory without a query and list (dry run, default) or archive the faded ones (memory_forget).

        Returns:
            The candidates with score and reason; archived=True for rows moved to the archive.
        """
        return self._run(self._forget_call(namespace, score_threshold, time_weight, freq_weight, freq_cap,
                                           importance_threshold, dry_run, max_rows))

    def restore(self, memory_ids: Sequence[int], namespace: str | None = None) -> list[RestoreResult]:
        """Bring archived memories back (memory_restore), then embed them again (:meth:`embed_pending`).

        Returns:
            One row per id: restored, or the reason it was not.
        """
        results = self._run(self._restore_call(memory_ids, namespace))
        self.embed_pending(namespace or self.namespace)
        return results

    def embed_pending(self, namespace: str | None = None, batch: int = 256) -> int:
        """Embed memories stored without an embedding (restored, or added from SQL); returns how many."""
        done = 0
        while True:
            rows = self._run(self._pending_call(namespace, batch))
            if not rows:
                return done
            for ns in sorted({r["namespace"] for r in rows}):
                part = [r for r in rows if r["namespace"] == ns]
                vecs = self.embedder.embed([r["content"] for r in part])
                done += self._run(self._set_embeddings_call(ns, [r["memory_id"] for r in part], vecs))

    def find_by_tag(self, tags: Sequence[str], namespace: str | None = None, match_all: bool = False,
                    k: int | None = None) -> list[TaggedMemory]:
        """Memories carrying any (or all, match_all=True) of the tags, newest first (find_by_tag)."""
        return self._run(self._find_by_tag_call(tags, namespace, match_all, k))

    def delete_document(self, document_id: int, namespace: str | None = None) -> int:
        """Delete a document and its memories (delete_document). Returns memories deleted. Raises NotFound."""
        return self._run(self._delete_document_call(document_id, namespace))

    def neighbors(self, memory_id: int, namespace: str | None = None, before: int | None = None,
                  after: int | None = None) -> list[Neighbor]:
        """The chunks around a memory in its document, in order (memory_neighbors). Raises NotFound."""
        return self._run(self._neighbors_call(memory_id, namespace, before, after))

    def duplicates(self, namespace: str | None = None, similarity: float | None = None,
                   max_pairs: int | None = None) -> list[DuplicatePair]:
        """Exact (normalised hash) and near (cosine >= similarity) duplicate pairs; report only (memory_duplicates)."""
        return self._run(self._duplicates_call(namespace, similarity, max_pairs))

    def health(self, namespace: str | None = None) -> list[HealthCheck]:
        """Checks: memories without embedding, orphan documents, model/dimension, invalid indexes, BM25 stats."""
        return self._run(self._health_call(namespace))

    def archive(self, namespace: str | None = None) -> list[dict]:
        """Archived memories (content, metadata, score, reason, archived_at), oldest first."""
        return self._run(self._archive_call(namespace))

    def role_create(self, role_name: str, namespace: str | None = None, login: bool = True) -> list[str]:
        """Make a role that reads and writes only ``namespace`` (memsql.role_create, Row Level Security).

        Args:
            role_name: 1..63 characters; created when missing (LOGIN, no password), else given the namespace too.
            namespace: default this client's namespace.
            login: whether the role may log in.

        Returns:
            The role's namespaces.

        Raises:
            InvalidArgument: bad name, or an existing role that bypasses RLS (superuser, BYPASSRLS, table owner).
            PermissionDenied: this connection may not create roles.
        """
        return self._run(self._role_create_call(role_name, namespace, login))

    def role_drop(self, role_name: str, namespace: str | None = None) -> int:
        """Take a namespace from a role (all when None); the role is dropped with its last one. Raises NotFound."""
        return self._run(self._role_drop_call(role_name, namespace))

    def roles(self) -> list[dict]:
        """Roles made by role_create with their namespaces: [{"role_name", "namespaces"}], by name."""
        return self._run(self._roles_call())

    def evaluate(self, golden_path: str | Path, out_dir: str | Path | None = None, k: int = 10,
                 namespace: str | None = None) -> dict:
        """Retrieval quality on golden queries (memsql.evaluate): metrics at 1, 3, 5, 10, per query and overall.

        Args:
            golden_path: YAML file of {query, relevant, namespace?, id?}.
            out_dir: when given, report.md and report.json are written there.
            k: deepest cutoff.
            namespace: for queries that name none; default this client's.

        Raises:
            GoldenFileError: the golden file is unreadable or malformed.
        """
        from memsql.evaluate import load_golden, run_golden, write_report

        report = run_golden(self, load_golden(golden_path), k=k, namespace=namespace or self.namespace)
        if out_dir is not None:
            report["files"] = [str(p) for p in write_report(report, out_dir)]
        return report


class AsyncMemory(_Verbs):
    """Asynchronous memsql client on a psycopg 3 AsyncConnectionPool; same verbs and arguments as Memory.

    Embedding runs in a worker thread so the event loop stays free. Use ``async with AsyncMemory() as m``
    (or ``await m.open()`` / ``await m.close()``).

    Args:
        dsn, namespace, embedder, config: as for :class:`Memory`.
        pool_size: maximum connections of the pool (default 4).
    """

    def __init__(self, dsn: str | None = None, namespace: str | None = None, embedder: Embedder | None = None,
                 pool_size: int = 4, config: Config | None = None) -> None:
        super().__init__(dsn, namespace, embedder, config)
        from psycopg_pool import AsyncConnectionPool

        async def configure(conn):
            from pgvector.psycopg import register_vector_async

            await register_vector_async(conn)
            conn.add_notice_handler(db.log_notice)
            await conn.execute("SELECT set_config('TimeZone', 'UTC', false)")
            await conn.commit()

        self._pool = AsyncConnectionPool(self.dsn, min_size=1, max_size=pool_size, configure=configure,
                                         check=AsyncConnectionPool.check_connection, open=False)

    async def open(self) -> "AsyncMemory":
        await self._pool.open()
        return self

    async def close(self) -> None:
        await self._pool.close()

    async def __aenter__(self) -> "AsyncMemory":
        return await self.open()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def _run(self, call: _Call):
        try:
            async with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                await cur.execute(call.sql, call.params)
                return call.result(await cur.fetchall() if cur.description else [])
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc

    async def init(self) -> list[str]:
        """Create or upgrade the schema (runs memsql.db.migrate in a thread); see :meth:`Memory.init`."""
        steps = await asyncio.to_thread(db.migrate, self.dsn, self.embedder.model_name, self.embedder.dimension)
        return steps + [await self._run(c) for c in self._half_life_calls()]

    async def search(self, query: str, k: int | None = None, namespace: str | None = None,
                     knowledge_types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
                     query_embeddings: Sequence[np.ndarray] | None = None, enrich: bool | None = None,
                     rerank: bool | None = None, **options: Any) -> list[SearchResult]:
        """Hybrid search; see :meth:`Memory.search`."""
        query = query_text(query)
        if query_embeddings is None:
            variants = ()
            if self._enrich_wanted(enrich) and query.strip():
                from memsql.enrich import enrich as make_variants
                from memsql.enrich import wordpiece_candidates

                idf = await self._run(self._idf_call(list(wordpiece_candidates(query)), namespace))
                variants = make_variants(query, idf=lambda words: idf).variants
            embs = await asyncio.to_thread(self.embed_query, query, variants)
        else:
            embs = self._check_query_embeddings(query_embeddings)
        if self._rerank_wanted(rerank):
            want = k or self.config.get("memory.vector.top_k")
            depth = max(want, self.config.get("memory.vector.rerank_candidates"))
            rows = await self._run(self._search_call(query, embs, depth, namespace, knowledge_types, tags, options))
            return await asyncio.to_thread(self._rerank, query, rows, want)
        return await self._run(self._search_call(query, embs, k, namespace, knowledge_types, tags, options))

    def _sync(self) -> "Memory":
        return Memory(dsn=self.dsn, namespace=self.namespace, embedder=self.embedder, config=self.config)

    async def judge(self, content: str, namespace: str | None = None, knowledge_type: str = "note",
                    source_date: datetime | None = None):
        """See :meth:`Memory.judge` (runs a synchronous client in a worker thread)."""
        def work():
            with self._sync() as mem:
                return mem.judge(content, namespace, knowledge_type, source_date)

        return await asyncio.to_thread(work)

    async def add(self, content: str, namespace: str | None = None, knowledge_type: str = "note",
                  importance: float | None = None, tags: Sequence[str] = (), metadata: dict | None = None,
                  source_date: datetime | None = None, title: str | None = None, language: str | None = None,
                  autosave: bool | None = None) -> int | None:
        """Remember a short text; see :meth:`Memory.add`."""
        content = text_for_postgres(content)
        use_filter = self._filter_settings().enabled if autosave is None else autosave
        if use_filter or self.config.get("memory.topics.enabled"):  # filter and topics: the synchronous path
            def work():
                with self._sync() as mem:
                    return mem.add(content, namespace, knowledge_type, importance, tags, metadata, source_date,
                                   title, language, autosave)

            return await asyncio.to_thread(work)
        vec = (await asyncio.to_thread(self.embedder.embed, [content]))[0] if content.strip() else None
        return await self._run(self._add_call(content, vec, namespace, knowledge_type, importance, tags, metadata,
                                              source_date, title, language))

    async def update(self, memory_id: int, content: str, namespace: str | None = None,
                     importance: float | None = None, source_date: datetime | None = None,
                     language: str | None = None) -> int:
        """A new version of a memory; see :meth:`Memory.update`."""
        vec = (await asyncio.to_thread(self.embedder.embed, [content]))[0] if content.strip() else None
        return await self._run(self._update_call(memory_id, content, vec, namespace, importance, source_date,
                                                 language))

    async def history(self, memory_id: int, namespace: str | None = None) -> list[MemoryVersion]:
        """The chain of versions of a memory; see :meth:`Memory.history`."""
        return await self._run(self._history_call(memory_id, namespace))

    async def ingest(self, paths: Iterable[str | Path], namespace: str | None = None,
                     knowledge_type: str | None = None, adapter: str | None = None, progress=None,
                     language: str | None = None, dry_run: bool = False):
        """Ingest files; see :meth:`Memory.ingest`. Runs the (CPU-bound) pipeline in a worker thread
        on its own synchronous connection."""
        from memsql.ingest import ingest_paths

        def work():
            with db.connect(self.dsn) as conn:
                return ingest_paths(self._ingestor(conn, namespace, knowledge_type, language, dry_run), paths, adapter,
                                    progress)

        return await asyncio.to_thread(work)

    async def stats(self, namespace: str | None = None) -> list[StatsRow]:
        """Rows of the ``memsql.memory_stats`` view; see :meth:`Memory.stats`."""
        return await self._run(self._stats_call(namespace))

    async def tag(self, memory_id: int | None = None, document_id: int | None = None, namespace: str | None = None,
                  importance: float | None = None, knowledge_type: str | None = None,
                  tags: Sequence[str] | None = None, add_tags: Sequence[str] | None = None,
                  remove_tags: Sequence[str] | None = None, clear_importance: bool = False) -> int:
        """See :meth:`Memory.tag`."""
        return await self._run(self._tag_call(memory_id, document_id, namespace, importance, knowledge_type, tags,
                                              add_tags, remove_tags, clear_importance))

    async def forget(self, namespace: str | None = None, score_threshold: float | None = None,
                     time_weight: float | None = None, freq_weight: float | None = None,
                     freq_cap: float | None = None, importance_threshold: float | None = None, dry_run: bool = True,
                     max_rows: int | None = None) -> list[ForgetCandidate]:
        """See :meth:`Memory.forget`."""
        return await self._run(self._forget_call(namespace, score_threshold, time_weight, freq_weight, freq_cap,
                                                 importance_threshold, dry_run, max_rows))

    async def restore(self, memory_ids: Sequence[int], namespace: str | None = None) -> list[RestoreResult]:
        """See :meth:`Memory.restore`."""
        results = await self._run(self._restore_call(memory_ids, namespace))
        await self.embed_pending(namespace or self.namespace)
        return results

    async def embed_pending(self, namespace: str | None = None, batch: int = 256) -> int:
        """See :meth:`Memory.embed_pending`."""
        done = 0
        while True:
            rows = await self._run(self._pending_call(namespace, batch))
            if not rows:
                return done
            for ns in sorted({r["namespace"] for r in rows}):
                part = [r for r in rows if r["namespace"] == ns]
                vecs = await asyncio.to_thread(self.embedder.embed, [r["content"] for r in part])
                done += await self._run(self._set_embeddings_call(ns, [r["memory_id"] for r in part], vecs))

    async def find_by_tag(self, tags: Sequence[str], namespace: str | None = None, match_all: bool = False,
                          k: int | None = None) -> list[TaggedMemory]:
        """See :meth:`Memory.find_by_tag`."""
        return await self._run(self._find_by_tag_call(tags, namespace, match_all, k))

    async def delete_document(self, document_id: int, namespace: str | None = None) -> int:
        """See :meth:`Memory.delete_document`."""
        return await self._run(self._delete_document_call(document_id, namespace))

    async def neighbors(self, memory_id: int, namespace: str | None = None, before: int | None = None,
                        after: int | None = None) -> list[Neighbor]:
        """See :meth:`Memory.neighbors`."""
        return await self._run(self._neighbors_call(memory_id, namespace, before, after))

    async def duplicates(self, namespace: str | None = None, similarity: float | None = None,
                         max_pairs: int | None = None) -> list[DuplicatePair]:
        """See :meth:`Memory.duplicates`."""
        return await self._run(self._duplicates_call(namespace, similarity, max_pairs))

    async def health(self, namespace: str | None = None) -> list[HealthCheck]:
        """See :meth:`Memory.health`."""
        return await self._run(self._health_call(namespace))

    async def archive(self, namespace: str | None = None) -> list[dict]:
        """See :meth:`Memory.archive`."""
        return await self._run(self._archive_call(namespace))

    async def role_create(self, role_name: str, namespace: str | None = None, login: bool = True) -> list[str]:
        """See :meth:`Memory.role_create`."""
        return await self._run(self._role_create_call(role_name, namespace, login))

    async def role_drop(self, role_name: str, namespace: str | None = None) -> int:
        """See :meth:`Memory.role_drop`."""
        return await self._run(self._role_drop_call(role_name, namespace))

    async def roles(self) -> list[dict]:
        """See :meth:`Memory.roles`."""
        return await self._run(self._roles_call())

    async def evaluate(self, golden_path: str | Path, out_dir: str | Path | None = None, k: int = 10,
                       namespace: str | None = None) -> dict:
        """See :meth:`Memory.evaluate` (runs a synchronous client in a worker thread)."""
        def work():
            with Memory(dsn=self.dsn, namespace=self.namespace, embedder=self.embedder, config=self.config) as mem:
                return mem.evaluate(golden_path, out_dir, k, namespace)

        return await asyncio.to_thread(work)

