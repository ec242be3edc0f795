"""One definition per verb: the SQL function it calls, its arguments (SQL type, default, meaning), what it returns,
and which surfaces take each argument.

Every surface reads this table: :class:`memsql.client.Memory` and :class:`memsql.aio.AsyncMemory` build their
SQL from it (:meth:`Verb.call`), the CLI makes its options and ``--sql`` text from it, the MCP server its tool
parameters; tests/test_surfaces.py checks the table against the SQL functions in a migrated database (names,
types, defaults) and every surface against the table.

Defaults: an argument the caller leaves out (None) is left out of the SQL call, so the SQL function's own
DEFAULT applies; ``Arg.default`` records that default for help texts and documentation (checked equal to the
SQL one). A few memory_search arguments also have a configuration key (``Arg.config``): a value set in
memsql.toml, a MEMSQL_ variable or ``--set`` is sent; a key left at its default sends nothing (the test checks
that the configuration's default is the SQL default).

This module imports nothing heavy: ``memsql --help`` reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Callable, Iterable, Mapping

from memsql import errors, results
from memsql.errors import InvalidArgument

NUMERIC_TYPES = frozenset({"integer", "bigint", "real", "double precision"})
"""SQL types of the arguments that take a number (a Python bool is refused there)."""

REQUIRED = type("Required", (), {"__repr__": lambda self: "REQUIRED", "__bool__": lambda self: False})()
"""Default of an argument the caller must give."""

ALL = ("python", "cli", "mcp")
PYTHON = ("python",)
INTERNAL = ()
"""Surfaces: the Python clients (Memory, AsyncMemory), the CLI, the MCP server. INTERNAL: filled by the
client itself (embeddings, topics), never by a caller."""

PYTHON_TYPES: dict[str, Any] = {
    "text": str, "integer": int, "bigint": int, "real": float, "double precision": float, "boolean": bool,
    "timestamptz": datetime, "jsonb": dict, "vector": "numpy.ndarray (384,)", "text[]": list[str],
    "bigint[]": list[int], "vector[]": "list of numpy.ndarray (384,)",
    # arguments of Python-side verbs (sql=False), not SQL types
    "path": "pathlib.Path", "path[]": "list of pathlib.Path", "callable": "callable",
}
TIME_FORMS = ("ISO 8601, e.g. 2026-03-01 or 2026-03-01T12:00:00+02:00, or any other time PostgreSQL reads (now, "
              "yesterday, epoch); without a zone, UTC")
"""What a time argument takes, on every surface (Python also takes a datetime or a date): the text goes to
PostgreSQL, which reads it as a timestamptz in the session's time zone, UTC. docs/search.md "Times" says the same."""
TIME_HINT = errors.TIME_HINT
"""The hint of a time that cannot be used, on every surface (memsql.errors.from_psycopg gives it for a time
PostgreSQL cannot read)."""
NAMESPACE_ARGS = frozenset({"namespace", "new_name"})
"""Arguments that name a namespace: never empty or blank on the client surfaces (:func:`check_namespace`)."""
_CAST = ("[]", "vector", "jsonb", "real")  # SQL types a parameter is cast to (psycopg sends lists, floats untyped)
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class Arg:
    """One argument of a verb.

    Attributes:
        name: the SQL function's argument name; the Python keyword, MCP parameter and CLI option use it too.
        type: the SQL type as written in the function's signature ("text", "bigint[]", "double precision", ...),
            or for a Python-side argument (sql=False) one of "path", "path[]", "callable".
        help: what it means, with units.
        default: the SQL function's DEFAULT (None = NULL), or REQUIRED; for sql=False the client's default.
        on: the surfaces that take it (ALL, PYTHON or INTERNAL).
        sql: False for an argument the client handles itself (enrich, paths, ...), not sent to SQL.
        low, high: the accepted range of a number (checked by the CLI and the MCP schema; SQL checks it too).
        config: the configuration key that supplies it when the caller does not (memory_search).
        unset: the configuration value that means "use the SQL default" (0 candidates, "auto" dense_weight).
    """

    name: str
    type: str
    help: str
    default: Any = REQUIRED
    on: tuple[str, ...] = ALL
    sql: bool = True
    low: float | None = None
    high: float | None = None
    config: str | None = None
    unset: Any = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def python_type(self) -> Any:
        return PYTHON_TYPES[self.type]

    def placeholder(self) -> str:
        cast = f"::{self.type}" if self.type.endswith(_CAST) else ""
        return f"%({self.name})s{cast}"


@dataclass(frozen=True)
class Call:
    """One SQL statement: text with pyformat placeholders, parameters, and how its rows become the result."""

    sql: str
    params: Mapping[str, Any] | None
    result: Callable[[list[dict]], Any]

    def render(self) -> str:
        """The statement with its parameters written as SQL literals, for display and psql (never executed
        by memsql); a vector is shown as a placeholder."""
        params = self.params or {}
        return re.sub(r"%\((\w+)\)s", lambda m: literal(params[m.group(1)]), self.sql) + ";"


def literal(value: Any) -> str:
    """A Python value as a SQL literal, for display."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if hasattr(value, "shape"):  # a numpy embedding
        return "'<embedding, vector(384)>'"
    if isinstance(value, (list, tuple)):
        return "ARRAY[" + ", ".join(literal(x) for x in value) + "]"
    return "'" + str(value).replace("'", "''") + "'"


def _rows(cls):
    return lambda rows: [cls(**r) for r in rows]


def _value(rows):
    return rows[0]["value"]


def _dicts(rows):
    return rows


@dataclass(frozen=True)
class Verb:
    """One verb: a Python method of Memory and AsyncMemory, and (when named) a CLI command and an MCP tool.

    Attributes:
        name: the method name.
        function: the SQL function (or view) in schema memsql; None for a pipeline run in Python (ingest,
            evaluate, judge).
        args: every argument of the SQL function in signature order, then the client's own (sql=False).
        result: rows -> the verb's value.
        returns: what a caller gets, for documentation: a memsql.results dataclass (a list of them), or a type.
        set_returning: SELECT * FROM fn(...) (rows) instead of SELECT fn(...) AS value.
        positional: leading arguments always written, by position (None is NULL); the others are written by
            name, and only when given.
        query: for a view: the SELECT text (placeholders named as the args); function is then the view.
        cli: the CLI command ("find-by-tag"); None = no command.
        mcp: the MCP tool name; None = no tool.
        scoped: a namespace left out is the client's namespace; False: left out means every namespace.
    """

    name: str
    function: str | None
    args: tuple[Arg, ...]
    result: Callable[[list[dict]], Any] = _dicts
    returns: Any = None
    set_returning: bool = True
    positional: int = 0
    query: str | None = None
    cli: str | None = None
    mcp: str | None = None
    scoped: bool = True
    _by_name: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bad = [n for n in (self.function or "x", *(a.name for a in self.args)) if not _IDENTIFIER.fullmatch(n)]
        if bad:  # names come from this table, never from input; values always go as parameters
            raise ValueError(f"not a plain SQL identifier: {bad[0]!r}")
        object.__setattr__(self, "_by_name", {a.name: a for a in self.args})

    def arg(self, name: str) -> Arg:
        return self._by_name[name]

    def has(self, name: str) -> bool:
        return name in self._by_name

    def default(self, name: str) -> Any:
        """The default of an argument (the SQL function's, or the client's for sql=False)."""
        return self._by_name[name].default

    def on(self, surface: str) -> list[Arg]:
        """The arguments a surface ("python", "cli", "mcp") takes, in order."""
        return [a for a in self.args if surface in a.on]

    @property
    def sql_args(self) -> list[Arg]:
        return [a for a in self.args if a.sql]

    @property
    def label(self) -> str:
        """The SQL column of the README's name table."""
        if self.function is None:
            return "(evaluation)" if self.name == "evaluate" else f"({self.name} pipeline)"
        return f"{self.function} (view)" if self.query else f"{self.function}(...)"

    def call(self, values: Mapping[str, Any]) -> Call:
        """The SQL call with these argument values: the first ``positional`` arguments by position (None is
        NULL), the others by name in signature order, those that are None left out (the SQL default applies).

        Raises:
            TypeError: a name that is not an SQL argument of this verb.
            InvalidArgument: true or false given for a numeric argument (Python's bool is an int, and PostgreSQL
                would look for a function taking a boolean there).
        """
        sql_args = self.sql_args
        unknown = set(values) - {a.name for a in sql_args}
        if unknown:
            raise TypeError(f"unknown {self.function} argument(s): {', '.join(sorted(unknown))}")
        for a in sql_args:
            if isinstance(values.get(a.name), bool) and a.type in NUMERIC_TYPES:
                raise InvalidArgument(f"{self.function}: {a.name} must be a number, got {values[a.name]}",
                                      f"{a.name} is {a.type}, e.g. {a.name}={a.default!r}.")
        if self.query is not None:
            return Call(self.query, {a.name: values.get(a.name) for a in sql_args} or None, self.result)
        params = {a.name: values.get(a.name) for a in sql_args[: self.positional]}
        text = [a.placeholder() for a in sql_args[: self.positional]]
        for a in sql_args[self.positional:]:
            if values.get(a.name) is not None:
                params[a.name] = values[a.name]
                text.append(f"{a.name} => {a.placeholder()}")
        inner = ", ".join(text)  # names from this table (checked identifiers), values only as parameters
        sql = (f"SELECT * FROM memsql.{self.function}({inner})" if self.set_returning
               else f"SELECT memsql.{self.function}({inner}) AS value")
        return Call(sql, params, self.result)


def function_sql(fn: str, args: dict[str, Any], select: str = "*") -> tuple[str, dict[str, Any]]:
    """SQL text calling memsql.<fn> with every argument by name (None left to its default), for a function
    outside the table.

    Raises:
        ValueError: fn or an argument name is not a plain lower-case SQL identifier.
    """
    verb = Verb(fn, fn, tuple(Arg(n, "text", "", None) for n in args), set_returning=select == "*")
    call = verb.call(args)
    return call.sql, dict(call.params)


NAMESPACE = Arg("namespace", "text", "Namespace (one user's or project's memory); default [database] namespace",
                "default")
NAMESPACE_ALL = Arg("namespace", "text", "One namespace; default every namespace", None)
KNOWLEDGE_TYPE = Arg("knowledge_type", "text", "principle, decision, paper, news, experiment, note, conversation, or "
                     "a type added with knowledge_type_set", "note")
LANGUAGE = Arg("language", "text", "ISO 639-1 code (de, fr, zh, ...) or text search configuration of the text; "
               "default english", None)
IMPORTANCE = Arg("importance", "real", "0..1; NULL = unknown", None, low=0.0, high=1.0)


def _idf(rows):
    return {r["word"]: r["idf"] for r in rows if r["idf"] is not None}


_SEARCH = Verb("search", "memory_search", (
    Arg("query", "text", "What to look for: a question, a name, an exact term"),
    Arg("query_embeddings", "vector[]", "Up to 3 unit vectors of the query and its variants; NULL = the embedding "
        "worker embeds the query, {} = lexical only", None, on=PYTHON),
    Arg("k", "integer", "Results to return", 10, low=1, high=1000, config="memory.vector.top_k"),
    NAMESPACE,
    Arg("knowledge_types", "text[]", "Only these knowledge types", None),
    Arg("tags", "text[]", "Only memories carrying one of these tags", None),
    Arg("candidates", "integer", "Depth of each arm before fusion; NULL = greatest(50, k)", None, on=PYTHON,
        config="memory.vector.candidates", unset=0),
    Arg("rrf_k", "integer", "RRF constant k in weight / (k + rank)", 60, on=PYTHON, config="memory.vector.rrf_k"),
    Arg("dense_weight", "double precision", "Weight of the dense arms; NULL = 2.75 under convex fusion, 1.0 under "
        "rrf", None, on=PYTHON, config="memory.vector.dense_weight", unset="auto"),
    Arg("lexical_weight", "double precision", "Weight of the BM25 arm", 1.0, on=PYTHON,
        config="memory.vector.lexical_weight"),
    Arg("bm25_k1", "double precision", "BM25 term-frequency saturation", 0.9, on=PYTHON,
        config="memory.lexical.bm25_k1"),
    Arg("bm25_b", "double precision", "BM25 length normalisation", 0.4, on=PYTHON, config="memory.lexical.bm25_b"),
    Arg("memory_rerank", "boolean", "Apply the memory axis (importance cutoff, decay, frequency boost)", True,
        on=ALL, config="memory.scoring.enabled"),
    Arg("importance_threshold", "double precision", "Memories with importance below this are cut", 0.3, on=PYTHON,
        config="memory.scoring.importance_threshold"),
    Arg("time_weight", "double precision", "Weight of time decay: (1 - w) + w * 0.5^(age / half-life)", 0.4,
        on=PYTHON, config="memory.scoring.time_weight"),
    Arg("freq_weight", "double precision", "Frequency boost 1 + w * ln(1 + access_count)", 0.1, on=PYTHON,
        config="memory.scoring.freq_weight"),
    Arg("freq_cap", "double precision", "Upper bound of the frequency boost", 1.5, on=PYTHON,
        config="memory.scoring.freq_cap"),
    Arg("touch", "boolean", "Count this search as an access of the memories returned (a result list alone is not "
        "a use: default false)", False, on=("python", "cli")),
    Arg("dense_min_similarity", "double precision", "Dense candidates below this cosine similarity do not enter "
        "fusion", 0.0, on=PYTHON, config="memory.vector.similarity_threshold"),
    Arg("priority_weight", "double precision", "Weight of the priority arm (memories marked important)", 1.0,
        on=PYTHON),
    Arg("priority_min_similarity", "double precision", "Cosine similarity a priority memory needs to enter", 0.35,
        on=PYTHON),
    Arg("priority_limit", "integer", "Priority candidates at most", 50, on=PYTHON),
    Arg("fusion", "text", "convex (normalised scores) or rrf (ranks)", "convex", on=PYTHON,
        config="memory.vector.fusion"),
    Arg("topics", "text[]", "Only memories with one of these topics", None),
    Arg("ef_search", "integer", "hnsw.ef_search of the dense arms; NULL = greatest(candidates, 40)", None,
        on=PYTHON, config="memory.vector.ef_search", unset=0),
    Arg("enable_mmr", "boolean", "Maximal marginal relevance over the final candidates (diversity)", False,
        on=("python", "cli"), config="memory.vector.enable_mmr"),
    Arg("mmr_lambda", "double precision", "MMR trade-off: lambda * relevance - (1 - lambda) * max similarity", 0.6,
        on=PYTHON, config="memory.vector.mmr_lambda"),
    Arg("include_superseded", "boolean", "Also search superseded versions (marked with valid_to, superseded_by)",
        False),
    Arg("as_of", "timestamptz", f"Answer as memory stood at this time ({TIME_FORMS}); default now", None),
    Arg("posting_budget", "integer", "Exact BM25 ranking while the query's lexemes have at most twice this many "
        "postings; 0 = always exact", 2000, on=PYTHON, config="memory.lexical.posting_budget"),
    Arg("reference_time", "timestamptz", f"The time decay is computed from ({TIME_FORMS}); default now", None),
    Arg("group_by", "text", "document = the best memory of each of the k best documents (session, file)", None),
    Arg("assistant_weight", "double precision", "Times the fused score of an assistant's words (a chat or agent "
        "turn with speaker assistant); 1 = as anyone's", 0.8, on=PYTHON, config="memory.vector.assistant_weight"),
    Arg("enrich", "boolean", "Embed up to 2 variants built from key terms (memsql.enrich); default [memory.vector] "
        "enrich", None, on=PYTHON, sql=False, config="memory.vector.enrich"),
    Arg("rerank", "boolean", "Re-order the fused top [memory.vector] rerank_candidates with the cross-encoder; "
        "default [memory.vector] rerank", None, on=PYTHON, sql=False, config="memory.vector.rerank"),
), _rows(results.SearchResult), list[results.SearchResult], positional=6,
    cli="search", mcp="memory_search")

_ADD = Verb("add", "memory_add", (
    Arg("content", "text", "The fact, decision or note"),
    Arg("embedding", "vector", "Its unit vector; NULL = the embedding worker embeds it", None, on=INTERNAL),
    NAMESPACE, KNOWLEDGE_TYPE, IMPORTANCE,
    Arg("tags", "text[]", "Tags (find_by_tag, search filters)", "{}"),
    Arg("metadata", "jsonb", "Any JSON object kept with the memory", "{}", on=PYTHON),
    Arg("source_date", "timestamptz", f"When the fact was stated ({TIME_FORMS}); default now", None, on=PYTHON),
    Arg("title", "text", "A title shown with results", None, on=PYTHON),
    LANGUAGE,
    Arg("topics", "text[]", "Topics ([memory.topics], assigned by the client)", "{}", on=INTERNAL),
    Arg("autosave", "boolean", "Run the autosave filter first; default [memory.filter] enabled", None, on=PYTHON,
        sql=False),
), _value, int, set_returning=False, positional=3, cli="add", mcp="memory_add")

_UPDATE = Verb("update", "memory_update", (
    Arg("memory_id", "bigint", "The current version's memory id"),
    Arg("content", "text", "The new text of the fact"),
    Arg("embedding", "vector", "Its unit vector; NULL = the embedding worker embeds it", None, on=INTERNAL),
    NAMESPACE,
    Arg("importance", "real", "0..1; default the old version's", None, low=0.0, high=1.0),
    Arg("source_date", "timestamptz", f"When the new fact was stated ({TIME_FORMS}); default now", None,
        on=PYTHON),
    Arg("language", "text", "Language of the text; default the old version's", None),
), _value, int, set_returning=False, positional=4, cli="update", mcp="memory_update")

_HISTORY = Verb("history", "memory_history", (
    Arg("memory_id", "bigint", "Any version's memory id"), NAMESPACE,
), _rows(results.MemoryVersion), list[results.MemoryVersion], cli="history", mcp="memory_history")

_INGEST = Verb("ingest", None, (
    Arg("paths", "path[]", "Files or directories (markdown, text, Claude.ai / Claude Code / ChatGPT exports)",
        sql=False),
    Arg("namespace", "text", NAMESPACE.help, None, sql=False),
    Arg("knowledge_type", "text", "Force a knowledge type for every document; default from the source (front "
        "matter, [ingest] rules, adapter)", None, sql=False),
    Arg("adapter", "text", "Force an adapter: markdown, text, claude_ai, claude_code, chatgpt; default detect",
        None, on=("python", "cli"), sql=False),
    Arg("progress", "callable", "Called (path, summary) after each file", None, on=PYTHON, sql=False),
    Arg("language", "text", "Language of documents that declare none (front matter language or lang); default "
        "english", None, on=("python", "cli"), sql=False),
    Arg("tags", "text[]", "Tags given to every memory of the run, beside the front matter's own", None,
        on=("python", "cli"), sql=False),
    Arg("dry_run", "boolean", "Read, chunk, embed, check and judge as a real run, write nothing", False,
        on=("python", "cli"), sql=False),
    Arg("prune", "boolean", "Archive the memories of documents under the given paths whose files are gone "
        "(restorable); without it they are listed", False, on=("python", "cli"), sql=False),
), returns="memsql.ingest.IngestSummary", cli="ingest", mcp="memory_ingest")

_TAG = Verb("tag", "memory_tag", (
    Arg("memory_id", "bigint", "The memory to change (or document_id)", None),
    Arg("document_id", "bigint", "Change every memory of this document (or memory_id)", None),
    NAMESPACE,
    Arg("importance", "double precision", "0..1", None, low=0.0, high=1.0),
    Arg("knowledge_type", "text", "New knowledge type", None),
    Arg("tags", "text[]", "Replace the tags", None, on=PYTHON),
    Arg("add_tags", "text[]", "Tags to add", None),
    Arg("remove_tags", "text[]", "Tags to remove", None),
    Arg("clear_importance", "boolean", "Unset importance", False),
), _value, int, set_returning=False, cli="tag", mcp="memory_tag")

_FORGET = Verb("forget", "memory_forget", (
    NAMESPACE,
    Arg("score_threshold", "double precision", "Archive memories whose retention score is below this", 0.05,
        low=0.0),
    Arg("time_weight", "double precision", "Weight of time decay in the retention score", 1.0, on=PYTHON),
    Arg("freq_weight", "double precision", "Frequency boost 1 + w * ln(1 + access_count)", 0.1, on=PYTHON),
    Arg("freq_cap", "double precision", "Upper bound of the frequency boost", 1.5, on=PYTHON),
    Arg("importance_threshold", "double precision", "Archive memories with importance below this", 0.3,
        on=("python", "cli")),
    Arg("dry_run", "boolean", "List the candidates only; false archives them (restorable)", True),
    Arg("max_rows", "integer", "At most this many rows", 10000, low=1),
    Arg("keep_types", "text[]", "Knowledge types never forgotten by age ({} = none)", "{conversation}"),
    Arg("recent_days", "double precision", "Keep memories used (touched, restored) within this many days", 30,
        low=0.0),
    Arg("reference_time", "timestamptz", f"The time ages are computed from ({TIME_FORMS}); default now", None,
        on=PYTHON),
), _rows(results.ForgetCandidate), list[results.ForgetCandidate], cli="forget", mcp="memory_forget")

_RESTORE = Verb("restore", "memory_restore", (
    Arg("memory_ids", "bigint[]", "Archived memory ids"), NAMESPACE,
), _rows(results.RestoreResult), list[results.RestoreResult], cli="restore", mcp="memory_restore")

_TOUCH = Verb("touch", "memory_touch", (
    Arg("memory_ids", "bigint[]", "Ids of the memories used (opened, fetched in full, cited)"), NAMESPACE,
), _rows(results.TouchResult), list[results.TouchResult], cli="touch", mcp="memory_touch")

_STATS = Verb("stats", "memory_stats", (NAMESPACE_ALL,), _rows(results.StatsRow), list[results.StatsRow],
              query="SELECT * FROM memsql.memory_stats WHERE %(namespace)s::text IS NULL OR namespace = "
                    "%(namespace)s ORDER BY namespace, knowledge_type, adapter",
              cli="stats", mcp="memory_stats", scoped=False)

_HEALTH = Verb("health", "memory_health", (NAMESPACE_ALL,), _rows(results.HealthCheck), list[results.HealthCheck],
               cli="health", mcp="memory_health", scoped=False)

_FIND_BY_TAG = Verb("find_by_tag", "find_by_tag", (
    Arg("tags", "text[]", "Tags to look for"), NAMESPACE,
    Arg("match_all", "boolean", "Require all the tags (default any)", False),
    Arg("k", "integer", "Memories at most", 100, low=1),
), _rows(results.TaggedMemory), list[results.TaggedMemory], cli="find-by-tag", mcp="find_by_tag")

_DELETE_DOCUMENT = Verb("delete_document", "delete_document", (
    Arg("document_id", "bigint", "Document id (from search results)"), NAMESPACE,
), _value, int, set_returning=False, cli="delete-document", mcp="delete_document")

_NEIGHBORS = Verb("neighbors", "memory_neighbors", (
    Arg("memory_id", "bigint", "A memory id from search"), NAMESPACE,
    Arg("before", "integer", "Chunks before it", 1, low=0),
    Arg("after", "integer", "Chunks after it", 1, low=0),
), _rows(results.Neighbor), list[results.Neighbor], cli="neighbors", mcp="memory_neighbors")

_DUPLICATES = Verb("duplicates", "memory_duplicates", (
    NAMESPACE,
    Arg("similarity", "double precision", "Cosine similarity of a near duplicate", 0.95, low=0.0, high=1.0),
    Arg("max_pairs", "integer", "Pairs at most", 1000, low=1),
), _rows(results.DuplicatePair), list[results.DuplicatePair], cli="duplicates", mcp="memory_duplicates")

_EVALUATE = Verb("evaluate", None, (
    Arg("golden_path", "path", "Golden query file (YAML): query, relevant, optional namespace and id", sql=False),
    Arg("out_dir", "path", "Directory for report.md and report.json", None, sql=False),
    Arg("k", "integer", "Deepest cutoff", 10, low=1, high=100, sql=False),
    Arg("namespace", "text", "Namespace of queries that name none; default the client's", None, sql=False),
), returns=dict, cli="eval", mcp="memory_eval")

# verbs of the Python clients only (and the CLI's own commands: init, archive export, role ...)
_JUDGE = Verb("judge", None, (
    Arg("content", "text", "The text the autosave filter judges", sql=False),
    Arg("namespace", "text", NAMESPACE.help, None, on=PYTHON, sql=False),
    Arg("knowledge_type", "text", KNOWLEDGE_TYPE.help, "note", on=PYTHON, sql=False),
    Arg("source_date", "timestamptz", f"When it was stated ({TIME_FORMS}); default now", None, on=PYTHON,
        sql=False),
), returns="memsql.filter.Decision")

_TERM_IDF = Verb("term_idf", "term_idf", (
    Arg("words", "text[]", "Words", on=INTERNAL), Arg("namespace", "text", NAMESPACE.help, "default", on=INTERNAL),
), _idf, dict)

_PENDING = Verb("pending_embeddings", "memory_pending_embeddings", (
    Arg("namespace", "text", "One namespace; default every namespace", None, on=INTERNAL),
    Arg("max_rows", "integer", "Rows at most", 1000, on=INTERNAL),
), scoped=False)

_SET_EMBEDDINGS = Verb("set_embeddings", "memory_set_embeddings", (
    Arg("namespace", "text", "The namespace", on=INTERNAL),
    Arg("memory_ids", "bigint[]", "Memory ids", on=INTERNAL),
    Arg("embeddings", "vector[]", "Their unit vectors, in the same order", on=INTERNAL),
), _value, int, set_returning=False, scoped=False)

_PENDING_WINDOWS = Verb("pending_windows", "memory_pending_windows", (
    Arg("namespace", "text", "One namespace; default every namespace", None, on=INTERNAL),
    Arg("max_rows", "integer", "Rows at most", 1000, on=INTERNAL),
    Arg("memory_ids", "bigint[]", "Only these memories; default any", None, on=INTERNAL),
), scoped=False)

_SET_WINDOWS = Verb("set_windows", "memory_set_windows", (
    Arg("namespace", "text", "The namespace", on=INTERNAL),
    Arg("memory_ids", "bigint[]", "Memory ids", on=INTERNAL),
    Arg("window_counts", "integer[]", "Each memory's number of windows (0 = fits one window)", on=INTERNAL),
    Arg("embeddings", "vector[]", "The windows' unit vectors, memory after memory", on=INTERNAL),
), _value, int, set_returning=False, scoped=False)

_EMBED_PENDING = Verb("embed_pending", None, (
    Arg("namespace", "text", "One namespace; default every namespace", None, on=PYTHON, sql=False),
    Arg("batch", "integer", "Memories embedded per batch", 256, on=PYTHON, sql=False, low=1),
), returns=int, scoped=False)

_KNOWLEDGE_TYPE_SET = Verb("knowledge_type_set", "knowledge_type_set", (
    Arg("name", "text", "Knowledge type", on=INTERNAL),
    Arg("half_life_days", "double precision", "Half-life in days; NULL = no decay", on=INTERNAL),
    Arg("description", "text", "What the type holds", None, on=INTERNAL),
), _value, str, set_returning=False, positional=2)

_ARCHIVE = Verb("archive", "archive", (NAMESPACE_ALL,), returns=list[dict], scoped=False,
                query="SELECT namespace, id AS memory_id, document_id, chunk_index, content, knowledge_type, "
                      "importance, topics, tags, metadata, source_date, created_at, last_accessed_at, access_count, "
                      "score, reason, archived_at FROM memsql.archive WHERE %(namespace)s::text IS NULL OR "
                      "namespace = %(namespace)s ORDER BY namespace, archived_at, id")

_ROLE_CREATE = Verb("role_create", "role_create", (
    Arg("role_name", "text", "Role name, 1..63 characters (created when missing: LOGIN, no password)", on=PYTHON),
    Arg("namespace", "text", "A namespace the role may use", on=PYTHON),
    Arg("login", "boolean", "Whether the role may log in", True, on=PYTHON),
), _value, list[str], set_returning=False)

_ROLE_DROP = Verb("role_drop", "role_drop", (
    Arg("role_name", "text", "Role name", on=PYTHON),
    Arg("namespace", "text", "Take only this namespace; default all, and drop the role", None, on=PYTHON),
), _value, int, set_returning=False, scoped=False)

_ROLES = Verb("roles", "role_namespaces", (), returns=list[dict],
              query="SELECT role_name, array_agg(namespace ORDER BY namespace) AS namespaces "
                    "FROM memsql.role_namespaces GROUP BY role_name ORDER BY role_name")

# namespaces as a whole: list, rename, drop (dry run first), export to JSON lines, import (sql/functions/56_namespaces.sql)
_NAMESPACE_LIST = Verb("namespace_list", "namespace_list", (
    Arg("namespace", "text", "Only this namespace; default every namespace", None),
), _rows(results.NamespaceInfo), list[results.NamespaceInfo], cli="namespace list", mcp="memory_namespaces",
    scoped=False)

_NAMESPACE_RENAME = Verb("namespace_rename", "namespace_rename", (
    Arg("namespace", "text", "The namespace to rename", on=("python", "cli")),
    Arg("new_name", "text", "Its new name (a namespace that holds nothing yet)", on=("python", "cli")),
), _rows(results.NamespaceChange), list[results.NamespaceChange], cli="namespace rename", scoped=False)

_NAMESPACE_DROP = Verb("namespace_drop", "namespace_drop", (
    Arg("namespace", "text", "The namespace to delete, with all its memories and archive", on=("python", "cli")),
    Arg("dry_run", "boolean", "Count only; false deletes (not restorable: export first)", True, on=("python", "cli")),
    Arg("confirm", "text", "The namespace's name again, needed to delete", None, on=("python", "cli")),
), _rows(results.NamespaceChange), list[results.NamespaceChange], cli="namespace drop", scoped=False)

_NAMESPACE_EXPORT = Verb("namespace_export", "namespace_export", (
    Arg("namespace", "text", "The namespace to export"),
    Arg("vectors", "boolean", "Include each memory's embedding (else the importing side embeds again)", False),
    Arg("path", "path", "JSON lines file to write (replaced whole, never half-written); default standard output",
        None, sql=False),
), returns=dict, cli="namespace export", mcp="memory_export", scoped=False)

_NAMESPACE_IMPORT = Verb("namespace_import", "namespace_import", (
    Arg("lines", "text[]", "A batch of lines of the export", on=INTERNAL),
    Arg("namespace", "text", "Target namespace (must hold nothing yet); default the one named in the export", None),
    Arg("first_line", "bigint", "Line number of the batch's first line", 1, on=INTERNAL),
    Arg("path", "path", "JSON lines file written by namespace export ('-' = standard input)", sql=False),
    Arg("embed", "boolean", "Embed memories exported without vectors right away (else the embedding worker does)",
        True, sql=False),
), returns=dict, cli="namespace import", mcp="memory_import", scoped=False)

# the start of a session (Claude Code hooks, agents): a budgeted context pack, full text by id (also the memory page
# of memsql serve: sql/functions/72_web.sql), capture progress
_CONTEXT = Verb("context", "memory_context", (
    NAMESPACE,
    Arg("query", "text", "What the session is about (the project, a prompt); NULL = no relevance section", None),
    Arg("query_embeddings", "vector[]", "Unit vectors of the query, as for memory_search; NULL = the embedding "
        "worker embeds the query when it runs, {} = lexical only", None, on=PYTHON),
    Arg("budget", "integer", "Size of the pack in characters (Claude Code takes 10000 from one hook; 400 at least: "
        "the header and one line)", 8000, low=400, high=10000),
    Arg("session_id", "text", "The current session, left out of the last-session section", None),
    Arg("knowledge_types", "text[]", "Knowledge types of the principles-and-decisions section; NULL = principle "
        "and decision", None),
    Arg("line_chars", "integer", "Longest text of one line; memory_get returns the full text", 300,
        low=40, high=2000),
    Arg("last_session", "boolean", "Include the tail of the last session", True),
    Arg("memory_rerank", "boolean", "Apply the memory axis as memory_search does (its importance cutoff included)",
        True, on=PYTHON, config="memory.scoring.enabled"),
    Arg("importance_threshold", "double precision", "Memories with importance below this are left out", 0.3,
        on=PYTHON, config="memory.scoring.importance_threshold"),
), _value, str, set_returning=False, cli="context", mcp="memory_context")

_GET = Verb("get", "memory_get", (
    Arg("memory_ids", "bigint[]", "Memory ids (from memory_search or memory_context; live, superseded or archived), "
        "at most 100"), NAMESPACE,
    Arg("max_chars", "integer", "Longest text returned per memory (truncated says it was cut)", 4000,
        low=100, high=100000),
), _rows(results.MemoryRecord), list[results.MemoryRecord], cli="get", mcp="memory_get")

_CAPTURE_PROGRESS = Verb("capture_progress", "capture_progress", (
    Arg("namespace", "text", "The namespace", on=INTERNAL),
    Arg("source_uri", "text", "The transcript's absolute path", on=INTERNAL),
), _value, int, set_returning=False, positional=2)

VERBS: dict[str, Verb] = {v.name: v for v in (
    _SEARCH, _ADD, _UPDATE, _HISTORY, _INGEST, _TAG, _FORGET, _RESTORE, _TOUCH, _STATS, _HEALTH, _FIND_BY_TAG,
    _DELETE_DOCUMENT, _NEIGHBORS, _DUPLICATES, _EVALUATE, _JUDGE, _TERM_IDF, _PENDING, _SET_EMBEDDINGS,
    _PENDING_WINDOWS, _SET_WINDOWS, _EMBED_PENDING, _KNOWLEDGE_TYPE_SET, _ARCHIVE, _ROLE_CREATE, _ROLE_DROP, _ROLES,
    _NAMESPACE_LIST, _NAMESPACE_RENAME, _NAMESPACE_DROP, _NAMESPACE_EXPORT, _NAMESPACE_IMPORT,
    _CONTEXT, _GET, _CAPTURE_PROGRESS,
)}
"""Every verb by method name, in the order of the README's name table."""

# -- the web page's reads (memsql serve; sql/functions/72_web.sql), also verbs of the Python clients ---------------
_TIMELINE = Verb("timeline", "memory_timeline", (
    NAMESPACE_ALL,
    Arg("bucket", "text", "Period of each count: day, week, month or year", "month"),
), _rows(results.TimelineBucket), list[results.TimelineBucket], scoped=False)

_KNOWLEDGE_TYPES = Verb("knowledge_types", "knowledge_types", (), _rows(results.KnowledgeType),
                        list[results.KnowledgeType],
                        query="SELECT name, half_life_days, description FROM memsql.knowledge_types ORDER BY name")

VERBS.update({v.name: v for v in (_TIMELINE, _KNOWLEDGE_TYPES)})


def surfaces() -> list[Verb]:
    """The verbs every surface has (a CLI command and an MCP tool): the README's name table."""
    return [v for v in VERBS.values() if v.cli and v.mcp]


def name_table() -> str:
    """The README's name table (Markdown), from the table above."""
    lines = ["| SQL (schema memsql, on the search_path) | Python | CLI | MCP tool |", "|---|---|---|---|"]
    lines += [f"| {v.label} | Memory.{v.name}() | memsql {v.cli} | {v.mcp} |" for v in surfaces()]
    return "\n".join(lines)


def coerce_argument(verb: str, name: str, value: Any) -> Any:
    """A Python client's argument in the form its declared type needs (memsql.client.derive calls this for every
    argument of every verb), or InvalidArgument saying what was expected:

    - a whole number (int, a numpy integer, a float such as 5.0) for an integer argument; a number for a real one
      (numpy scalars become Python numbers); a string is left for PostgreSQL to read ("5");
    - one value where a list is declared (a tag, a path, an id) becomes a list of that one value, never a list of
      its characters; a numpy array becomes a list;
    - text must be str: bytes are refused with the hint to decode them, None where the text is required;
    - a time (timestamptz) must be a datetime, a date or text (PostgreSQL reads it: :data:`TIME_FORMS`), never a
      number;
    - a namespace must not be empty or blank (:func:`check_namespace`).

    Args: verb: the verb's name (memsql.calls.VERBS); name: the argument; value: as given. Returns the value to use.
    """
    import numbers
    import os

    arg = next((a for a in VERBS[verb].args if a.name == name), None) if verb in VERBS else None
    if arg is not None and value is None and arg.required and arg.type == "text":
        raise InvalidArgument(f"{verb}: {name} must be text (str), got None", f"pass {name} as a string.")
    if arg is not None and value is not None and arg.type == "timestamptz" and not isinstance(value, (str, date)):
        raise InvalidArgument(f"{verb}: {name} must be a time: a datetime or ISO 8601 text, got "
                              f"{type(value).__name__} {value!r}", TIME_HINT, "MS002")
    if arg is not None and name in NAMESPACE_ARGS:
        check_namespace(verb, name, value)
    if arg is None or value is None or isinstance(value, bool):
        return value   # bool for a number: Verb.call says so in the function's terms
    kind = arg.type
    if kind in ("integer", "bigint"):
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real) and float(value).is_integer():
            return int(value)
        if isinstance(value, (numbers.Real, list, tuple, dict)):
            raise InvalidArgument(f"{verb}: {name} must be a whole number, got {value!r}",
                                  f"{name} is {kind}, e.g. {name}={arg.default!r}.")
    elif kind in ("real", "double precision"):
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, (list, tuple, dict)):
            raise InvalidArgument(f"{verb}: {name} must be a number, got {value!r}",
                                  f"{name} is {kind}, e.g. {name}={arg.default!r}.")
    elif kind.endswith("[]") and kind != "vector[]":
        if isinstance(value, (str, bytes, os.PathLike, numbers.Number)):
            return [value]
        if hasattr(value, "tolist"):
            return value.tolist()
    elif kind == "text":
        if isinstance(value, (bytes, bytearray)):
            raise InvalidArgument(f"{verb}: {name} must be text (str), got bytes",
                                  "decode it first, e.g. value.decode('utf-8').")
        if not isinstance(value, str):
            raise InvalidArgument(f"{verb}: {name} must be text (str), got {type(value).__name__} {value!r}",
                                  f"pass {name} as a string.")
    return value


def _blank(text: str) -> bool:
    """Nothing but white space, control and format characters (as memsql.client.query_text blanks them), or ""."""
    import unicodedata

    return all(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)


def check_namespace(verb: str, name: str, value: Any, default: str | None = None) -> None:
    """Refuse an empty or blank namespace given to a client surface (Python, CLI, MCP, web API), the same way on
    each: InvalidArgument (MS002) naming the verb and argument, with a hint saying what leaving it out means. A
    namespace left out (None) is the verb's default (the client's namespace, or every namespace); "" is not a
    way to say that.

    Args: verb: the verb's name (memsql.calls.VERBS), or the caller's name (e.g. "Memory"); name: the argument;
        value: as given (anything but text is left to the type checks); default: what leaving it out means, for
        a caller outside the table (else read from the argument's help)."""
    if not isinstance(value, str) or not _blank(value):
        return
    spec = VERBS.get(verb)
    arg = spec.arg(name) if spec is not None and spec.has(name) else None
    if default is None and arg is None:   # a client's own namespace (Memory(namespace=...), memsql serve -n)
        default = NAMESPACE.help.rpartition("default ")[2] if name == "namespace" else None
    elif default is None and not arg.required:
        found = re.search(r"default (.+)$", arg.help)
        default = found.group(1) if found else None
    what = "empty" if value == "" else f"blank, got {value!r}"
    raise InvalidArgument(f"{verb}: {name} must not be {what}",
                          "Name a namespace, e.g. 'work'" + (f", or leave it out for the default: {default}" if default
                                                             else "") + ".", "MS002")


def given(verb: str, scope: Mapping[str, Any], names: Iterable[str] | None = None) -> dict[str, Any]:
    """The verb's arguments found in ``scope`` (e.g. a method's locals()), in the table's order."""
    wanted = set(names) if names is not None else None
    return {a.name: scope[a.name] for a in VERBS[verb].args
            if a.name in scope and (wanted is None or a.name in wanted)}
