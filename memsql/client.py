"""Python API: :class:`Memory`, the synchronous client, and :class:`Verbs`, the steps of every verb written once.

``Memory()`` uses the embedded server (or $MEMSQL_DSN); ``Memory(dsn=...)`` any PostgreSQL with pgvector >= 0.8
and memsql's schema (``Memory.init()`` or ``memsql init`` creates it). Ranking happens in SQL: ``search`` embeds
the query and makes one ``memory_search`` call.

One source for both clients: each verb of :class:`Verbs` is a generator that yields what it needs done, a
:class:`memsql.calls.Call` (one SQL statement) or a :class:`Work` (blocking Python: the model, the autosave
filter, an ingest), and gets the answer back. :class:`Memory` runs those steps in the caller's thread;
:class:`memsql.aio.AsyncMemory` awaits the statements on its pool and runs the blocking work in a worker thread.
Both get every verb of :data:`VERB_METHODS` from the same generator (:func:`derive`), so their names, arguments
and behaviour cannot drift apart. Each verb's SQL is built from its definition in :mod:`memsql.calls`.
"""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Generator, Iterable, Sequence

import numpy as np
import psycopg
from psycopg.rows import dict_row

from memsql import db
from memsql.adapters.base import json_for_postgres, text_for_postgres
from memsql.calls import VERBS, Call, given
from memsql.config import Config
from memsql.config import load as load_config
from memsql.embedding import Embedder, default_embedder
from memsql.errors import InvalidArgument, from_psycopg
from memsql.results import (DuplicatePair, ForgetCandidate, HealthCheck, MemoryVersion, Neighbor, RestoreResult,
                            SearchResult, StatsRow, TaggedMemory)

log = logging.getLogger("memsql")

_BLANK_CATEGORIES = {"Cc", "Cf"}


def query_text(query: str) -> str:
    """A query as searched, as SQL's memsql.query_text reads it: :func:`text_for_postgres`, then every white
    space (``str.isspace``: Unicode White_Space and the information separators), control (Cc) and format (Cf:
    zero-width and bidi marks, byte order marks) character turned into a space; a query made only of them is
    blank (no rows, nothing touched). A NUL (which PostgreSQL text cannot hold, so SQL never sees one) is a control
    character like the others: a space, not removed as :func:`text_for_postgres` removes it from stored text.
    tests/test_search_door.py checks every other code point against SQL."""
    import unicodedata

    query = text_for_postgres(query.replace("\x00", " ") if "\x00" in query else query)
    if query.isprintable():
        return query
    return "".join(" " if ch.isspace() or unicodedata.category(ch) in _BLANK_CATEGORIES else ch for ch in query)


def _redacted(text: str) -> str:
    """``text`` with secrets and <private> spans replaced by markers (memsql.redact), logged when any was."""
    from memsql.redact import redact

    text, found = redact(text)
    if found:
        log.warning("memsql: removed before storing: %s", ", ".join(f"{n} {k}" for k, n in sorted(found.items())))
    return text


def empty_reason(query: str | None, namespace: str, held: dict[str, int],
                 found: str = "nothing matched in namespace {namespace!r} ({memories} memories)",
                 archived: dict[str, int] | None = None) -> str:
    """Why a search or a list came back empty, in the same words on every surface (CLI, MCP, web API): a blank
    query (``query`` None: not a search), a namespace whose memories are all archived (they can come back), a
    namespace that holds no memories (a mistyped name: those that hold some are named, with their counts), else
    ``found`` formatted with namespace and memories.

    Args: held: namespace -> memories, of the namespaces with memories the caller may read (namespace_list);
        archived: namespace -> archived memories (namespace_list), None = not known."""
    if query is not None and not query_text(query).strip():
        return "the query is empty: pass the words to search for"
    if namespace not in held and (archived or {}).get(namespace):
        return (f"namespace {namespace!r} holds no live memories: its {archived[namespace]} memories are archived "
                "(memory_restore / memsql restore ID brings one back; memsql.archive lists them)")
    if namespace not in held:
        names = ", ".join(f"{n} ({m})" for n, m in list(held.items())[:20]) or "none yet"
        return f"namespace {namespace!r} holds no memories; namespaces with memories: {names}"
    return found.format(namespace=namespace, memories=held[namespace])


def hidden_note(conn: psycopg.Connection, namespace: str, importance_threshold: float | None,
                as_of: Any = None, filters: dict[str, Any] | None = None) -> str:
    """What a search's filters left out of a namespace, for an empty result: that no current memory carries the
    given knowledge types, tags or topics (``filters``), else the current memories among those they keep that are
    below the importance cutoff (``importance_threshold``; None = the memory axis is off) and, with ``as_of``, that
    only the memories memsql had stored by then are searched (as-of reads when a memory was written, not its
    source's date). Returns "" when none applies. At most three counts (memsql.memories, one namespace)."""
    notes = []
    given = {k: v for k, v in (filters or {}).items() if k in ("knowledge_types", "tags", "topics") and v}
    if given:
        kept = conn.execute(
            "SELECT count(*) FROM memsql.memories m WHERE m.namespace = %(ns)s AND m.valid_to IS NULL"
            " AND (%(knowledge_types)s::text[] IS NULL OR m.knowledge_type = ANY (%(knowledge_types)s::text[]))"
            " AND (%(tags)s::text[] IS NULL OR m.tags && %(tags)s::text[])"
            " AND (%(topics)s::text[] IS NULL OR m.topics && %(topics)s::text[])",
            {"ns": namespace, "knowledge_types": given.get("knowledge_types"), "tags": given.get("tags"),
             "topics": given.get("topics")}).fetchone()[0]
        if not kept:
            conn.commit()
            # the filters hold together (a search keeps a memory that passes every one); within one, any value does
            return "no current memory of the namespace has " + " together with ".join(
                f"{name.replace('_', ' ')[:-1]} {' or '.join(map(repr, v))}" for name, v in given.items())
    if importance_threshold is not None:
        n = conn.execute("SELECT memsql.memories_below_cutoff(%s, %s, %s, %s, %s)",
                         (namespace, importance_threshold, given.get("knowledge_types"), given.get("tags"),
                          given.get("topics"))).fetchone()[0]
        if n:
            notes.append(f"{n} memories with importance below {importance_threshold:g} are left out by the importance "
                         "cutoff of the memory axis (memory_rerank => false, memsql search --no-memory-rerank, "
                         "includes them)")
    if as_of is not None:
        n = conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = %s AND created_at <= %s::timestamptz",
                         (namespace, as_of)).fetchone()[0]
        notes.append(f"as of {as_of}: only what memsql had stored by then is searched ({n} memories; as-of reads when "
                     "memsql wrote a memory, not the date in its source)")
    conn.commit()
    return "; ".join(notes)


@dataclass(frozen=True)
class Work:
    """A blocking step of a verb: ``fn(*args)``; with needs="run", ``fn(run, *args)`` where run(call) runs a
    Call from the thread fn runs in; with needs="conn", ``fn(conn, *args)`` on a connection of its own for the
    whole step (ingest's transactions and COPY)."""

    fn: Callable[..., Any]
    args: tuple = ()
    needs: str | None = None


Steps = Generator[Any, Any, Any]
"""A verb's steps: yields Call and Work, receives each one's result, returns the verb's value."""

VERB_METHODS: list[str] = []
"""The verbs both clients derive from :class:`Verbs`, in definition order."""


def verb(steps: Callable[..., Steps]) -> Callable[..., Steps]:
    """Mark a generator method of :class:`Verbs` as a verb of both clients."""
    VERB_METHODS.append(steps.__name__)
    return steps


def derive(cls: type, wrap: Callable[[Callable[..., Steps]], Callable]) -> type:
    """Give ``cls`` every verb of :data:`VERB_METHODS`, each its generator wrapped by ``wrap`` (which runs it);
    the method's signature is the generator's, returning what the verb returns (memsql.calls)."""
    import inspect

    for name in VERB_METHODS:
        steps = getattr(Verbs, name)
        method = wrap(_coerced(name, steps))
        returns = VERBS[name].returns if name in VERBS else list[str]
        method.__signature__ = inspect.signature(steps).replace(return_annotation=returns)
        setattr(cls, name, method)
    return cls


def _coerced(name: str, steps: Callable[..., Steps]) -> Callable[..., Steps]:
    """``steps`` with every argument first put in the form its declared type needs (memsql.calls.coerce_argument:
    one tag or path where a list is declared, a numpy integer for k, bytes for text refused, a number for a time
    refused, an empty or blank namespace refused), those given as ``**options`` too."""
    import inspect

    from memsql.calls import coerce_argument

    signature = inspect.signature(steps)
    rest = next((p.name for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD), None)

    @functools.wraps(steps)
    def checked(self, *args: Any, **kwargs: Any) -> Steps:
        bound = signature.bind(self, *args, **kwargs)
        for key, value in list(bound.arguments.items())[1:]:
            if key == rest:   # **options (search's as_of, reference_time, ...): each checked as a named argument
                bound.arguments[key] = {k: coerce_argument(name, k, v) for k, v in value.items()}
            else:
                bound.arguments[key] = coerce_argument(name, key, value)
        return steps(*bound.args, **bound.kwargs)

    return checked


class Verbs:
    """What Memory and AsyncMemory share: configuration, DSN, embedder, and the steps of every verb.

    Args:
        dsn, namespace, embedder, config: see :class:`Memory`.
    """

    def __init__(self, dsn: str | None, namespace: str | None, embedder: Embedder | None,
                 config: Config | None) -> None:
        self.config = config or load_config()
        self._dsn_arg = dsn or self.config.get("database.dsn") or None
        self._dsn: str | None = None
        from memsql.calls import check_namespace

        check_namespace(type(self).__name__, "namespace", namespace)   # "" is not "the configured one"
        self.namespace = namespace or self.config.get("database.namespace")
        self._embedder = embedder
        self._autosave_filter = None

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
            self._embedder = default_embedder(self.config.get("memory.embeddings.backend"),
                                              self.config.get("memory.embeddings.stall_seconds"))
        return self._embedder

    # -- SQL of a verb ------------------------------------------------------------------------------
    def statement(self, name: str, /, **values: Any) -> Call:
        """The SQL call verb ``name`` makes with these arguments, without running it (``memsql <verb> --sql``).

        A namespace left out is this client's (for verbs scoped to one); memory_search also gets k and the
        options set in the configuration. An embedding left out is NULL: run from psql, the embedding worker
        fills it in.

        Raises:
            TypeError: an argument the verb's SQL function does not have.
        """
        spec = VERBS[name]
        if spec.scoped and spec.has("namespace") and values.get("namespace") is None:
            values["namespace"] = self.namespace
        if name in ("search", "context"):
            values = {**self.config.search_options(given_only=True, verb=name), **values}
        if name == "search":
            if values.get("k") is None:
                values["k"] = self.config.get("memory.vector.top_k")
        return spec.call(values)

    def shown_statement(self, name: str, /, **values: Any) -> Call:
        """:meth:`statement` with the text add and update would store (the verbs prepare it before their call:
        memsql.adapters.base.text_for_postgres, secrets removed by memsql.redact), for showing the call
        (``memsql add --sql``) without running the verb."""
        if name in ("add", "update"):
            from memsql.redact import redact

            for key in ("content", "title"):
                if isinstance(values.get(key), str):
                    values[key] = redact(text_for_postgres(values[key]))[0]
        return self.statement(name, **values)

    def _call(self, name: str, scope: dict[str, Any], /, **values: Any) -> Call:
        """:meth:`statement` with the verb's SQL arguments taken from ``scope`` (a method's locals()), then
        ``values``."""
        sql_names = {a.name for a in VERBS[name].sql_args}
        return self.statement(name, **{**given(name, scope, sql_names), **values})

    # -- the text pipeline: embeddings, autosave filter, topics, cross-encoder rerank ---------------------
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

    def _embed_one(self, content: str):
        return self.embedder.embed([content])[0] if content.strip() else None

    def _check_query_embeddings(self, embs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Query embeddings given by the caller, refused at the door as SQL refuses them (memsql.vectors: not
        finite, zero, or zero / off its direction in half precision): DimensionMismatch, SQLSTATE MS005."""
        from memsql.vectors import check_vectors

        return check_vectors("query embedding", embs, self.embedder.dimension)

    def _setting(self, key: str, value: Any) -> Any:
        return self.config.get(key) if value is None else value

    def _filter_settings(self):
        from memsql.filter import FilterSettings

        return FilterSettings.from_config(self.config.section("memory.filter"))

    def _topic_settings(self):
        from memsql.topics import TopicSettings

        return TopicSettings.from_config(self.config.section("memory.topics"))

    def _autosave(self):
        from memsql.filter import AutosaveFilter

        if self._autosave_filter is None:
            self._autosave_filter = AutosaveFilter(self._filter_settings(), embed=lambda t: self.embedder.embed(t),
                                                   custom_topics=self._topic_settings().labels)
        return self._autosave_filter

    def _idf(self, run: Callable[[Call], Any], namespace: str) -> Callable[[list[str]], dict[str, float]]:
        return lambda words: run(self.statement("term_idf", words=list(words), namespace=namespace))

    def _topic_assigner(self, idf):
        from memsql.topics import TopicAssigner

        return TopicAssigner(self._topic_settings(), embed=lambda t: self.embedder.embed(t), idf=idf)

    def _judge(self, run, content: str, namespace: str, knowledge_type: str, source_date, vectors):
        """The autosave filter's decision on one text (its SQL, nearest neighbours and topics, through run)."""
        fetch = lambda query, params: run(Call(query, params, lambda rows: rows))  # noqa: E731
        return self._autosave().evaluate(fetch, namespace, [content], vectors, knowledge_type, [source_date])[0]

    def _topics(self, run, content: str, namespace: str, vector) -> list[str]:
        assigner = self._topic_assigner(self._idf(run, namespace))
        return [t.label for t in assigner.assign([content], vector[None, :])[0]]

    def _rerank(self, query: str, results: list, k: int) -> list:
        from memsql.rerank import rerank

        return rerank(query, results, self.config.get("memory.vector.rerank_model"))[:k]

    def _ingestor(self, conn, namespace, knowledge_type, language=None, dry_run: bool = False,
                  tags: Sequence[str] | None = None):
        """An Ingestor on ``conn`` with this client's configuration, embedder, autosave filter and topics."""
        from memsql.ingest import IngestSettings, Ingestor

        ns = namespace or self.namespace
        topics = None
        if self.config.get("memory.topics.enabled"):
            def run(call: Call):
                with conn.cursor(row_factory=dict_row) as cur:
                    cur.execute(call.sql, call.params)
                    rows = cur.fetchall()
                conn.commit()
                return call.result(rows)

            topics = self._topic_assigner(self._idf(run, ns))
        settings = IngestSettings.from_config(self.config, knowledge_type=knowledge_type, language=language,
                                              dry_run=dry_run, keep_decisions=dry_run,
                                              **({"tags": tuple(tags)} if tags else {}))
        autosave = self._autosave() if self._filter_settings().enabled else None   # a dry run judges as a real run
        return Ingestor(conn, self.embedder, ns, settings, autosave=autosave, topics=topics)

    # -- verbs ------------------------------------------------------------------------------------
    @verb
    def init(self) -> Steps:
        """Create or upgrade the schema (memsql.db.migrate), then write [memory.scoring] half_life_days overrides
        into memsql.knowledge_types (memsql.knowledge_type_set). Returns the steps done."""
        steps = yield Work(db.migrate, (self.dsn, self.embedder.model_name, self.embedder.dimension))
        for name, days in self.config.half_lives().items():
            action = yield self.statement("knowledge_type_set", name=name, half_life_days=days)
            steps.append(f"knowledge_type {name}: half-life {'never' if days is None else f'{days:g} days'} "
                         f"({action})")
        return steps

    @verb
    def search(self, query: str, k: int | None = None, namespace: str | None = None,
               knowledge_types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
               query_embeddings: Sequence[np.ndarray] | None = None, enrich: bool | None = None,
               rerank: bool | None = None, **options: Any) -> Steps:
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
                enable_mmr, mmr_lambda, include_superseded, as_of; memsql.calls lists them with their defaults);
                an option not given takes its configured value, else the SQL default. By default only current
                versions are searched; ``as_of=datetime`` answers as the memory stood then,
                ``include_superseded=True`` searches every version (SearchResult.valid_to / superseded_by mark
                the superseded ones).

        Returns:
            list[SearchResult], best first (by rerank_score when reranked).

        Raises:
            InvalidArgument: k, weights or options out of range (SQLSTATE MS002).
            TypeError: an option memory_search does not have.
        """
        query = query_text(query)
        namespace = namespace or self.namespace
        if query_embeddings is None:
            variants: Sequence[str] = ()
            if self._setting("memory.vector.enrich", enrich) and query.strip():
                from memsql.enrich import enrich as make_variants
                from memsql.enrich import wordpiece_candidates

                words = list(wordpiece_candidates(query))
                idf = (yield self.statement("term_idf", words=words, namespace=namespace)) if words else {}
                variants = make_variants(query, idf=lambda _: idf).variants
            embs = yield Work(self.embed_query, (query, variants))
        else:
            embs = self._check_query_embeddings(query_embeddings)
        knowledge_types = list(knowledge_types) if knowledge_types else None
        tags = list(tags) if tags else None
        if not self._setting("memory.vector.rerank", rerank):
            return (yield self._call("search", locals(), query_embeddings=list(embs), **options))
        want = k or self.config.get("memory.vector.top_k")
        depth = max(want, self.config.get("memory.vector.rerank_candidates"))
        rows = yield self._call("search", locals(), query_embeddings=list(embs), k=depth, **options)
        return (yield Work(self._rerank, (query, rows, want)))

    @verb
    def judge(self, content: str, namespace: str | None = None, knowledge_type: str | None = None,
              source_date: datetime | None = None) -> Steps:
        """What the autosave filter would decide for ``content`` (nothing is written), with every criterion.

        Returns:
            memsql.filter.Decision.
        """
        vectors = yield Work(self.embedder.embed, ([content],))
        return (yield Work(self._judge, (content, namespace or self.namespace,
                                         knowledge_type or VERBS["judge"].default("knowledge_type"), source_date,
                                         vectors), needs="run"))

    @verb
    def add(self, content: str, namespace: str | None = None, knowledge_type: str | None = None,
            importance: float | None = None, tags: Sequence[str] | None = None, metadata: dict | None = None,
            source_date: datetime | None = None, title: str | None = None, language: str | None = None,
            autosave: bool | None = None) -> Steps:
        """Remember a short text; calls ``memsql.memory_add``. Idempotent by content.

        With [memory.filter] enabled (or autosave=True) the text first goes through the autosave filter
        (:meth:`judge`); with [memory.topics] enabled it gets topics.

        Args:
            knowledge_type: default 'note'.
            importance: 0..1; default unknown.
            language: ISO 639-1 code or text search configuration name (default [memory.lexical] language, else
                english): the stemmer of the lexical arm for this memory.
            autosave: run the autosave filter; default [memory.filter] enabled.

        Returns:
            The memory id; None when the autosave filter did not save it (see :meth:`judge` for why). A text longer
            than the model window (256 word pieces) is chunked as ingest chunks a file: one document of several
            memories (written in one transaction), and the id returned is its first memory's.

        Raises:
            InvalidArgument: empty content, importance outside [0, 1], an unknown language, or longer than
                [memory.filter] max_length while the filter is on.
            UnknownKnowledgeType: knowledge_type is not a row of memsql.knowledge_types.
        """
        content = _redacted(text_for_postgres(content))
        namespace = namespace or self.namespace
        language = language or self.config.get("memory.lexical.language") or None
        settings = self._filter_settings()
        use_filter = settings.enabled if autosave is None else autosave
        if use_filter and settings.enabled and len(content) > settings.max_length:
            raise InvalidArgument(
                f"memory_add: {len(content)} characters exceed [memory.filter] max_length {settings.max_length}",
                "ingest long text as a file (memsql ingest chunks it), or raise max_length")
        from memsql.embedding import MAX_TOKENS, count_tokens

        if count_tokens(content) > MAX_TOKENS:  # over the model window: chunked like ingest, never truncated
            return (yield Work(self._add_long, (content, namespace, knowledge_type, importance, tags, metadata,
                                                source_date, title, language, use_filter), needs="conn"))
        embedding = yield Work(self._embed_one, (content,))
        if use_filter and embedding is not None:
            decision = yield Work(self._judge, (content, namespace, knowledge_type or VERBS["add"].default(
                "knowledge_type"), source_date, embedding[None, :]), needs="run")
            if not decision.keep:
                return None
        topics = None
        if embedding is not None and self.config.get("memory.topics.enabled"):
            topics = (yield Work(self._topics, (content, namespace, embedding), needs="run")) or None
        tags = [text_for_postgres(t) for t in tags] if tags else None
        metadata = json.dumps(json_for_postgres(metadata)) if metadata else None
        title = _redacted(text_for_postgres(title)) if title is not None else None
        memory_id = yield self._call("add", locals())
        yield from self._set_windows(namespace, memory_id, content)
        return memory_id

    def _add_long(self, conn, content: str, namespace: str, knowledge_type: str | None, importance: float | None,
                  tags, metadata, source_date, title, language, use_filter: bool) -> int | None:
        """A long text of add, written by the ingest write path as one document (adapter "note", keyed by the
        text's hash like memory_add's notes, so adding it again returns the same memory)."""
        import hashlib

        from memsql.adapters.base import Document, Section
        from memsql.adapters.text import split_paragraphs
        from memsql.ingest import IngestSettings, Ingestor

        text = content.strip()
        if not text:
            raise InvalidArgument("memory_add: content is empty", "Pass the text to remember.")
        if importance is not None and not 0 <= importance <= 1:
            raise InvalidArgument(f"memory_add: importance must be in [0, 1], got {importance}",
                                  "Use NULL (unset) or a value such as 0.8.")
        try:  # the errors memory_add raises (MS003 unknown knowledge_type, MS002 unknown language), as it raises them
            conn.execute("SELECT memsql.check_knowledge_type(%s), memsql.text_search_config(%s)",
                         (knowledge_type or VERBS["add"].default("knowledge_type"), language))
            conn.commit()
        except psycopg.Error as exc:
            conn.rollback()
            raise from_psycopg(exc) from exc
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        doc = Document(source_key=f"note:{digest}", adapter="note",
                       sections=tuple(Section(p) for p in split_paragraphs(text.replace("\r\n", "\n"))),
                       title=title, source_date=source_date, metadata=dict(metadata or {}))
        settings = IngestSettings.from_config(
            self.config, knowledge_type=knowledge_type or VERBS["add"].default("knowledge_type"), language=language,
            tags=tuple(tags or ()), importance=importance, filter_documents=use_filter)
        autosave = self._autosave() if use_filter else None
        summary = Ingestor(conn, self.embedder, namespace, settings, autosave=autosave).ingest([doc])
        if summary.failed:
            raise InvalidArgument(f"memory_add: {summary.failed[0][1]}", "Check the knowledge_type and language.")
        return db.document_first_memory(conn, namespace, doc.source_key)

    @verb
    def update(self, memory_id: int, content: str, namespace: str | None = None, importance: float | None = None,
               source_date: datetime | None = None, language: str | None = None) -> Steps:
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
            InvalidArgument: empty content, a text over the model window (256 word pieces), importance outside
                [0, 1], or memory_id is not the current version.
            NotFound: no such memory in the namespace.
        """
        content = _redacted(text_for_postgres(content))
        from memsql.embedding import MAX_TOKENS, count_tokens

        pieces = count_tokens(content)
        if pieces > MAX_TOKENS:  # a version is one memory: refused rather than embedded from its first part
            raise InvalidArgument(
                f"memory_update: the new text is {pieces} word pieces, over the model window of {MAX_TOKENS}",
                "shorten it, or add it as a new memory (memory_add chunks a long text into several)")
        embedding = yield Work(self._embed_one, (content,))
        new_id = yield self._call("update", locals())
        yield from self._set_windows(namespace or self.namespace, new_id, content)
        return new_id

    @verb
    def history(self, memory_id: int, namespace: str | None = None) -> Steps:
        """The chain of versions of a memory, oldest first (``memsql.memory_history``); any version's id works.

        Returns:
            list[MemoryVersion].

        Raises:
            NotFound: no such memory (live or archived) in the namespace.
        """
        return (yield self._call("history", locals()))

    @verb
    def ingest(self, paths: Iterable[str | Path], namespace: str | None = None, knowledge_type: str | None = None,
               adapter: str | None = None, progress: Callable | None = None, language: str | None = None,
               dry_run: bool | None = None, prune: bool | None = None, tags: Sequence[str] | None = None) -> Steps:
        """Ingest files or directories (markdown, text, conversation exports), on a connection of its own.

        Args:
            paths: files or directories.
            namespace: default this client's namespace.
            knowledge_type: force a type; default from the source (front matter, [ingest] rules, adapter).
            adapter: force an adapter; default detect per file.
            progress: optional callable(path, summary) after each file.
            language: language of documents that declare none (front matter ``language``/``lang``); default
                [memory.lexical] language, else english.
            dry_run: read, chunk, embed, check and judge as a real run (the autosave filter where it applies),
                write nothing; the summary says what a real run would write and holds every filter decision.
            tags: tags given to every memory of the run, beside each document's own (markdown front matter
                ``tags``).
            prune: archive the memories of the documents at or below ``paths`` whose files are gone (restorable
                with :meth:`restore`; ``memsql.document_prune``); without it they stay and are listed in
                ``summary.missing``.

        Returns:
            memsql.ingest.IngestSummary; unparseable files are counted in ``failed``, never raised.

        Raises:
            InvalidArgument, UnknownKnowledgeType: an unknown adapter, language or knowledge_type, before any file
                is read (once, not once per file).
        """
        from memsql.ingest import ADAPTERS, ingest_paths

        language = language or self.config.get("memory.lexical.language") or None
        if adapter is not None and adapter not in ADAPTERS:
            raise InvalidArgument(f"unknown adapter {adapter!r}", f"one of {', '.join(ADAPTERS)}, or none to detect")

        run_tags = [t.strip() for t in tags] if tags else tags

        def work(conn):
            # the values given for every file are checked once, before the first file, not reported per file
            try:
                if knowledge_type is not None:
                    conn.execute("SELECT memsql.check_knowledge_type(%s)", (knowledge_type,))
                if language is not None:
                    conn.execute("SELECT memsql.text_search_config(%s)", (language,))
                if run_tags:   # blanks around a tag dropped as front matter's are; an empty one refused (MS002)
                    conn.execute("SELECT memsql.check_tag_list('ingest', 'tags', %s)", (run_tags,))
                conn.commit()
            except psycopg.Error as exc:
                conn.rollback()
                raise from_psycopg(exc) from exc
            ingestor = self._ingestor(conn, namespace, knowledge_type, language, bool(dry_run), run_tags)
            return ingest_paths(ingestor, paths, adapter, progress, prune=bool(prune))

        return (yield Work(work, needs="conn"))

    @verb
    def stats(self, namespace: str | None = None) -> Steps:
        """Rows of the ``memsql.memory_stats`` view (all namespaces unless one is given): list[StatsRow]."""
        return (yield self._call("stats", locals()))

    @verb
    def tag(self, memory_id: int | None = None, document_id: int | None = None, namespace: str | None = None,
            importance: float | None = None, knowledge_type: str | None = None, tags: Sequence[str] | None = None,
            add_tags: Sequence[str] | None = None, remove_tags: Sequence[str] | None = None,
            clear_importance: bool | None = None) -> Steps:
        """Set importance, knowledge_type and tags of one memory or a whole document (memory_tag); no re-embedding.

        Args:
            memory_id, document_id: exactly one of them.
            importance: 0..1; clear_importance=True unsets it. tags replace, add_tags / remove_tags edit.

        Returns:
            Memories changed.

        Raises:
            InvalidArgument, UnknownKnowledgeType, NotFound.
        """
        tags = list(tags) if tags is not None else None
        add_tags = list(add_tags) if add_tags else None
        remove_tags = list(remove_tags) if remove_tags else None
        return (yield self._call("tag", locals()))

    @verb
    def forget(self, namespace: str | None = None, score_threshold: float | None = None,
               time_weight: float | None = None, freq_weight: float | None = None, freq_cap: float | None = None,
               importance_threshold: float | None = None, dry_run: bool | None = None,
               max_rows: int | None = None, keep_types: Sequence[str] | None = None,
               recent_days: float | None = None, reference_time: datetime | str | None = None) -> Steps:
        """Score every memory without a query and list (dry run, default) or archive the faded ones (memory_forget).

        keep_types (default conversation) are never forgotten by age; a memory used within recent_days (30) is kept.

        Returns:
            list[ForgetCandidate] with score and reason; archived=True for rows moved to the archive.
        """
        keep_types = list(keep_types) if keep_types is not None else None
        return (yield self._call("forget", locals()))

    @verb
    def touch(self, memory_ids: Sequence[int], namespace: str | None = None) -> Steps:
        """Count one access of each memory used (opened, fetched in full, cited back): memory_touch.

        A search counts nothing by default (touch=False): a memory in a result list is not a memory used.

        Returns:
            list[TouchResult]: one row per live memory counted, with its access count after the call.
        """
        memory_ids = list(memory_ids)
        return (yield self._call("touch", locals()))

    @verb
    def restore(self, memory_ids: Sequence[int], namespace: str | None = None) -> Steps:
        """Bring archived memories back (memory_restore), then embed them again (:meth:`embed_pending`).

        Returns:
            list[RestoreResult]: one row per id, restored or the reason it was not.
        """
        memory_ids = list(memory_ids)
        results = yield self._call("restore", locals())
        yield from Verbs.embed_pending(self, namespace or self.namespace)
        return results

    @verb
    def embed_pending(self, namespace: str | None = None, batch: int | None = None) -> Steps:
        """Embed memories stored without an embedding (restored, or added from SQL), then the window backlog (long
        memories' window embeddings, memsql.memory_pending_windows); returns how many memories were embedded."""
        done = 0
        while True:
            rows = yield self.statement("pending_embeddings", namespace=namespace,
                                        max_rows=batch or VERBS["embed_pending"].default("batch"))
            if not rows:
                yield Work(self._windows, (namespace, batch or VERBS["embed_pending"].default("batch")), needs="conn")
                return done
            for ns in sorted({r["namespace"] for r in rows}):
                part = [r for r in rows if r["namespace"] == ns]
                vectors = yield Work(self.embedder.embed, ([r["content"] for r in part],))
                done += yield self.statement("set_embeddings", namespace=ns,
                                             memory_ids=[r["memory_id"] for r in part], embeddings=list(vectors))

    def _windows(self, conn, namespace: str | None, batch: int) -> int:
        """The window backlog of a namespace (every namespace: None) worked off on ``conn`` (db.compute_windows)."""
        try:
            return db.compute_windows(conn, self.embedder, namespace, batch)
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc

    def _set_windows(self, namespace: str, memory_id: int | None, content: str) -> Steps:
        """Store the window embeddings of one memory just written (a conversation message has none to store; one
        that fits one window gets an empty row). The memory is written whatever happens here: a failure is logged
        and the memory stays in the window backlog for the worker or :meth:`embed_pending`."""
        if memory_id is None:
            return
        from memsql.embedding import embed_windows, window_texts

        try:
            if not window_texts(content):   # fits one window: no title needed, nothing to embed
                yield self.statement("set_windows", namespace=namespace, memory_ids=[memory_id], window_counts=[0],
                                     embeddings=[])
                return
            rows = yield self.statement("pending_windows", namespace=namespace, max_rows=1, memory_ids=[memory_id])
            if not rows:
                return
            counts, vectors = yield Work(embed_windows, (self.embedder, [(rows[0]["content"], rows[0]["title"])]))
            yield self.statement("set_windows", namespace=namespace, memory_ids=[memory_id], window_counts=counts,
                                 embeddings=list(vectors))
        except Exception as exc:  # the write is committed; the windows can wait for the backlog
            log.warning("memsql: the window embeddings of memory %s in %r were not stored (%s); the worker or "
                        "embed_pending computes them later", memory_id, namespace, exc)

    @verb
    def find_by_tag(self, tags: Sequence[str], namespace: str | None = None, match_all: bool | None = None,
                    k: int | None = None) -> Steps:
        """Memories carrying any (or all, match_all=True) of the tags, newest first (find_by_tag):
        list[TaggedMemory]."""
        tags = list(tags)
        return (yield self._call("find_by_tag", locals()))

    @verb
    def delete_document(self, document_id: int, namespace: str | None = None) -> Steps:
        """Delete a document and its memories (delete_document). Returns memories deleted. Raises NotFound."""
        return (yield self._call("delete_document", locals()))

    @verb
    def neighbors(self, memory_id: int, namespace: str | None = None, before: int | None = None,
                  after: int | None = None) -> Steps:
        """The chunks around a memory in its document, in order (memory_neighbors): list[Neighbor].
        Raises NotFound."""
        return (yield self._call("neighbors", locals()))

    @verb
    def duplicates(self, namespace: str | None = None, similarity: float | None = None,
                   max_pairs: int | None = None) -> Steps:
        """Exact (normalised hash) and near (cosine >= similarity) duplicate pairs; report only (memory_duplicates):
        list[DuplicatePair]."""
        return (yield self._call("duplicates", locals()))

    @verb
    def health(self, namespace: str | None = None) -> Steps:
        """Checks: memories without embedding, orphan documents, model/dimension, invalid indexes, BM25 stats
        (memory_health), then ``sources_missing_on_disk``: documents read from files that no longer exist on this
        machine (their memories stay searchable until ``memsql ingest FOLDER --prune`` archives them):
        list[HealthCheck]."""
        rows = yield self._call("health", locals())
        return [*rows, (yield Work(self._missing_sources, (namespace,), needs="conn"))]

    @staticmethod
    def _missing_sources(conn, namespace: str | None):
        import os

        from memsql.adapters.base import disk_path
        from memsql.results import HealthCheck

        try:
            rows = db.document_sources(conn, namespace)
        except psycopg.Error as exc:
            conn.rollback()
            raise from_psycopg(exc) from exc
        gone = [(ns, source, n) for ns, _, source, _, n in rows if not os.path.lexists(disk_path(source))]
        shown = "; ".join(f"{source} ({n} memories{'' if namespace else f', {ns!r}'})" for ns, source, n in gone[:20])
        more = f"; and {len(gone) - 20} more" if len(gone) > 20 else ""
        return HealthCheck(
            "sources_missing_on_disk", not gone, f"{len(gone)} of {len(rows)} file documents" + (
                f": {shown}{more}" if gone else ""),
            "Files deleted or moved since they were ingested: their memories are still searchable. Run "
            "`memsql ingest FOLDER --prune` on the folder they were in to archive them (memsql restore brings them "
            "back), or ingest the files at their new place.")

    @verb
    def archive(self, namespace: str | None = None) -> Steps:
        """Archived memories (content, metadata, score, reason, archived_at), oldest first: list[dict]."""
        return (yield self._call("archive", locals()))

    @verb
    def role_create(self, role_name: str, namespace: str | None = None, login: bool | None = None) -> Steps:
        """Make a role that reads and writes only ``namespace`` (memsql.role_create, Row Level Security).

        Args:
            role_name: 1..63 characters; created when missing (LOGIN, no password), else given the namespace too.
            namespace: default this client's namespace.
            login: whether the role may log in (default true).

        Returns:
            The role's namespaces.

        Raises:
            InvalidArgument: bad name, or an existing role that bypasses RLS (superuser, BYPASSRLS, table owner).
            PermissionDenied: this connection may not create roles.
        """
        return (yield self._call("role_create", locals()))

    @verb
    def role_drop(self, role_name: str, namespace: str | None = None) -> Steps:
        """Take a namespace from a role (all when None); the role is dropped with its last one. Raises NotFound."""
        return (yield self._call("role_drop", locals()))

    @verb
    def roles(self) -> Steps:
        """Roles made by role_create with their namespaces: [{"role_name", "namespaces"}], by name."""
        return (yield self.statement("roles"))

    # -- namespaces as a whole (sql/functions/56_namespaces.sql) -----------------------------------------
    @verb
    def namespace_list(self, namespace: str | None = None) -> Steps:
        """The namespaces that hold something, with documents, memories, superseded, archived counts
        (memsql.namespace_list): list[NamespaceInfo], by name; only ``namespace`` when given."""
        return (yield self._call("namespace_list", locals()))

    @verb
    def namespace_rename(self, namespace: str, new_name: str) -> Steps:
        """Move a namespace's documents, memories (ids and versions kept), archive and role grants to ``new_name``
        (memsql.namespace_rename): list[NamespaceChange].

        Raises:
            InvalidArgument: same name, bad name, or new_name already holds memories. NotFound: nothing to rename.
        """
        return (yield self._call("namespace_rename", locals()))

    @verb
    def namespace_drop(self, namespace: str, dry_run: bool | None = None, confirm: str | None = None) -> Steps:
        """Delete a namespace (memsql.namespace_drop): by default a dry run that counts what would go; with
        dry_run=False, ``confirm`` must be the namespace's name. Returns list[NamespaceChange].

        Raises:
            InvalidArgument: dry_run=False without confirm equal to the name. NotFound: the namespace holds nothing.
        """
        return (yield self._call("namespace_drop", locals()))

    @verb
    def namespace_export(self, namespace: str, vectors: bool | None = None, path: str | Path | None = None) -> Steps:
        """Write a namespace as JSON lines (memsql.namespace_export), streamed from a server-side cursor.

        Args:
            namespace: the namespace to export.
            vectors: include each memory's embedding (default false: the importing side embeds again).
            path: the file to write: written beside it and renamed into place when complete, so it is never
                half-written; None or "-" writes to standard output.

        Returns:
            {"namespace", "path", "lines", "bytes", "documents", "memories", "archive"} (the end line's counts).

        Raises:
            NotFound: the namespace holds nothing. InvalidArgument: bad name.
        """
        from memsql import portability

        call = self._call("namespace_export", locals())
        return (yield Work(portability.export_namespace, (call, path), needs="conn"))

    @verb
    def namespace_import(self, path: str | Path, namespace: str | None = None, embed: bool | None = None) -> Steps:
        """Import a namespace export (memsql.namespace_import) into a namespace that holds nothing yet, on this
        client's database: the file is read line by line and sent in batches, all in one transaction (a file cut
        short, or any bad line, writes nothing). Ids, versions, access statistics and the archive are kept.

        Args:
            path: a file written by :meth:`namespace_export` ("-" = standard input).
            namespace: the target; default the namespace named in the export.
            embed: embed memories exported without vectors, and the long memories' windows (not exported), before
                returning (default true); false leaves them to the embedding worker.

        Returns:
            {"namespace", "path", "lines", "vectors", "knowledge_types", "documents", "memories", "archive",
            "embedded"}.

        Raises:
            InvalidArgument: not an export, a bad line (its number named), a namespace that holds memories.
            DimensionMismatch: vectors of another embedding model.
        """
        from memsql import portability

        statement = functools.partial(self.statement, "namespace_import")
        result = yield Work(portability.import_namespace, (statement, path, namespace), needs="conn")
        result["embedded"] = 0
        if not result["vectors"] and embed is not False and result["memories"]:
            result["embedded"] = yield from Verbs.embed_pending(self, result["namespace"])
        elif embed is not False and result["memories"]:   # windows are not exported: computed here, or later
            try:
                yield Work(self._windows, (result["namespace"], VERBS["embed_pending"].default("batch")), needs="conn")
            except Exception as exc:  # the import is committed; the worker finishes the backlog
                log.warning("memsql: window embeddings after the import failed (%s); the import is complete", exc)
        return result
    # -- the web page's reads (memsql serve) -------------------------------------------------------
    @verb
    def timeline(self, namespace: str | None = None, bucket: str | None = None) -> Steps:
        """Current and archived memories per day, week, month (default) or year, by date stated
        (memory_timeline); every readable namespace unless one is given: list[TimelineBucket]."""
        return (yield self._call("timeline", locals()))

    @verb
    def knowledge_types(self) -> Steps:
        """The knowledge types with their half-lives (memsql.knowledge_types), by name: list[KnowledgeType]."""
        return (yield self.statement("knowledge_types"))

    @verb
    def evaluate(self, golden_path: str | Path, out_dir: str | Path | None = None, k: int | None = None,
                 namespace: str | None = None, **search_options: Any) -> Steps:
        """Retrieval quality on golden queries (memsql.evaluate): metrics at 1, 3, 5, 10, per query and overall.

        Each query is one :meth:`search` of depth max(100, k) with touch=False (access statistics untouched).

        Args:
            golden_path: YAML file of {query, relevant, namespace?, id?}.
            out_dir: when given, report.md and report.json are written there (report["files"]).
            k: deepest cutoff; default 10.
            namespace: for queries that name none; default this client's.
            **search_options: memory_search options for every query.

        Returns:
            The report (memsql.evaluate.score_golden) with ``golden`` (the file) and ``warnings`` (namespaces
            without memories, whose queries score 0).

        Raises:
            GoldenFileError: the golden file is unreadable or malformed.
        """
        from memsql import evaluate as ev

        k = k or VERBS["evaluate"].default("k")
        golden = ev.load_golden(golden_path)
        options = {**search_options, "touch": False}
        namespaces = [g.namespace or namespace or self.namespace for g in golden]
        ranked = []
        for g, ns in zip(golden, namespaces):
            ranked.append((yield from Verbs.search(self, g.query, k=ev.search_depth(k), namespace=ns, **options)))
        report = yield Work(ev.score_golden, (golden, ranked, namespaces, k, options))
        report["golden"] = str(golden_path)
        report["warnings"] = []
        for ns in sorted(set(namespaces)):
            if sum(r.memories for r in (yield self.statement("stats", namespace=ns))) == 0:
                report["warnings"].append(f"namespace {ns!r} holds no memories, so its queries score 0: ingest it "
                                          "first")
        if out_dir is not None:
            report["files"] = [str(p) for p in ev.write_report(report, out_dir)]
        return report

    # -- the start of a session: context pack, full text by id --------------------------------------------
    @verb
    def context(self, namespace: str | None = None, query: str | None = None,
                query_embeddings: Sequence[np.ndarray] | None = None, budget: int | None = None,
                session_id: str | None = None, knowledge_types: Sequence[str] | None = None,
                line_chars: int | None = None, last_session: bool | None = None,
                memory_rerank: bool | None = None, importance_threshold: float | None = None) -> Steps:
        """A budgeted context pack (memsql.memory_context): principles and decisions, the memories relevant to
        ``query``, the tail of the last session, one line per memory with its id.

        Args:
            namespace: default this client's namespace.
            query: what the session is about; None = no relevance section. It is embedded here (like search)
                unless query_embeddings is given ([] = lexical only).
            budget: characters, 400..10000 (default 8000).
            session_id: the current session, left out of the last-session section.
            knowledge_types: of the principles-and-decisions section (default principle, decision).
            line_chars: longest text of one line, 40..2000 (default 300).
            last_session: include the tail of the last session (default true).
            memory_rerank, importance_threshold: as search's (default [memory.scoring] enabled and
                importance_threshold): memories below the cutoff are in neither section.

        Returns:
            The pack (str, at most budget characters; '' for an empty namespace).

        Raises:
            InvalidArgument: budget, line_chars or importance_threshold out of range (MS002).
        """
        if query is not None:
            query = query_text(query)
            if query_embeddings is None:
                query_embeddings = yield Work(self.embed_query, (query,))
            else:
                query_embeddings = self._check_query_embeddings(query_embeddings)
        knowledge_types = list(knowledge_types) if knowledge_types is not None else None
        scope = dict(locals())
        for name in ("memory_rerank", "importance_threshold"):   # None: the configured value
            if scope[name] is None:
                del scope[name]
        return (yield self._call("context", scope))

    @verb
    def get(self, memory_ids: int | Sequence[int], namespace: str | None = None,
            max_chars: int | None = None) -> Steps:
        """Memories by id (one id or a list), live, superseded or archived, with their document and access statistics, in the order
        asked (memsql.memory_get): list[MemoryRecord]; an id found nowhere gives no row; content is cut at max_chars
        (default 4000; chars is the whole length, truncated says it was cut).

        Raises:
            InvalidArgument: no id or more than 100, max_chars out of 100..100000 (MS002).
            NotFound: none of the ids is in the namespace, nor in its archive (MS004).
        """
        memory_ids = [memory_ids] if isinstance(memory_ids, int) else list(memory_ids)
        return (yield self._call("get", locals()))

    @verb
    def capture_progress(self, namespace: str, source_uri: str) -> Steps:
        """How far a growing transcript is stored: a byte offset (memsql.capture_progress), 0 = nothing yet."""
        return (yield self._call("capture_progress", locals()))


def _sync(steps: Callable[..., Steps]) -> Callable[..., Any]:
    @functools.wraps(steps)
    def method(self: "Memory", *args: Any, **kwargs: Any) -> Any:
        return self._drive(steps(self, *args, **kwargs))

    return method


class Memory(Verbs):
    """Synchronous memsql client: every verb of :class:`Verbs`, run in the caller's thread.

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
        DatabaseUnavailable, SetupError: with pool_size > 0, the server is down or the database has no memsql
            schema yet, or one older or newer than this code (memsql.db.check_schema; checked when the pool opens,
            not at the first call). Without a pool the same check runs when the connection opens (the first call
            but ``init``).
    """

    def __init__(self, dsn: str | None = None, namespace: str | None = None, embedder: Embedder | None = None,
                 pool_size: int = 0, config: Config | None = None) -> None:
        super().__init__(dsn, namespace, embedder, config)
        self._conn: psycopg.Connection | None = None
        self._pool = None
        if pool_size > 0:
            from psycopg_pool import ConnectionPool

            db.check_ready(self.dsn)  # a database without memsql fails here, not after the pool's 30 s timeout

            # check= re-validates a connection before lending it, so the first call after a long idle
            # period (server restart, dropped socket) gets a working connection.
            self._pool = ConnectionPool(self.dsn, min_size=1, max_size=pool_size, configure=db.configure,
                                        check=ConnectionPool.check_connection, open=True)

    @property
    def conn(self) -> psycopg.Connection:
        """The client's own connection (without a pool)."""
        if self._conn is None or self._conn.closed:
            conn = db.connect(self.dsn)
            try:
                db.check_schema(conn)   # once per connection: an upgraded memsql on a schema not yet upgraded
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def hidden(self, namespace: str | None, memory_rerank: bool | None = None, as_of: Any = None,
               filters: dict[str, Any] | None = None) -> str:
        """What a search's filters left out of ``namespace`` (:func:`hidden_note`: knowledge types, tags or topics no
        memory has, the importance cutoff of this client's configuration while the memory axis is on, ``as_of``),
        for an empty result; "" when nothing. ``filters``: the search's arguments (knowledge_types, tags, topics)."""
        rerank = self.config.get("memory.scoring.enabled") if memory_rerank is None else memory_rerank
        threshold = self.config.get("memory.scoring.importance_threshold") if rerank else None
        return self._work(Work(hidden_note, (namespace or self.namespace, threshold, as_of, filters), needs="conn"))

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

    def _run(self, call: Call):
        """Run one statement in its own transaction; psycopg errors become memsql errors."""
        if self._pool is not None:
            try:
                with self._pool.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                    cur.execute(call.sql, call.params)
                    return call.result(cur.fetchall() if cur.description else [])
            except psycopg.Error as exc:
                raise from_psycopg(exc, call.params) from exc
        try:
            with self.conn.cursor(row_factory=dict_row) as cur:
                cur.execute(call.sql, call.params)
                rows = cur.fetchall() if cur.description else []
            self.conn.commit()
        except psycopg.Error as exc:
            self.conn.rollback()
            raise from_psycopg(exc, call.params) from exc
        return call.result(rows)

    def _work(self, work: Work):
        if work.needs == "run":
            return work.fn(self._run, *work.args)
        if work.needs == "conn":
            if self._pool is not None:
                with self._pool.connection() as conn:
                    return work.fn(conn, *work.args)
            return work.fn(self.conn, *work.args)
        return work.fn(*work.args)

    def _drive(self, steps: Steps):
        value, error = None, None
        while True:
            try:
                step = steps.throw(error) if error is not None else steps.send(value)
            except StopIteration as done:
                return done.value
            value, error = None, None
            try:
                value = self._run(step) if isinstance(step, Call) else self._work(step)
            except Exception as exc:  # raised inside the verb, where it may be handled
                error = exc


derive(Memory, _sync)

__all__ = ["Memory", "Verbs", "Work", "query_text", "SearchResult", "MemoryVersion", "StatsRow", "ForgetCandidate",
           "RestoreResult", "TaggedMemory", "Neighbor", "DuplicatePair", "HealthCheck"]
