"""memsql as an MCP server (stdio), for Claude Code, Cursor and any MCP client: `memsql mcp`.

Tools carry the names of the README's name table; their parameters come from memsql.calls. Answers are fit for a
model's context:

- every answer is one compact JSON text of at most [mcp] max_chars characters: a text longer than [mcp] item_chars
  ends in a marker naming the characters left out, and results past the cap are dropped with ``truncated`` saying
  how many (never a silent cut);
- a list tool answers {"results": [...]}; an empty one carries a ``note`` saying why (the namespace holds nothing,
  and the namespaces that exist; or nothing matched);
- arguments are checked before anything runs: unknown ones are refused, bad values get one line per argument (no
  validation library links);
- the file tools (memory_ingest, memory_export, memory_import, memory_eval) read and write only under [mcp] root
  (default: the directory the server was started in), checked after resolving ``..`` and symlinks, every file of
  an ingested folder included; relative paths resolve against it. Exports and eval reports go under the data home
  (memory_export's default file, and memory_import reads from there too), never the client's working directory;
- each call first pings the database (libpq PQping, 2 s): with the server down the answer comes at once and says
  how to start it, instead of a pool timeout;
- memory_add and memory_ingest write into a namespace that holds nothing only with create=true (a typo would
  otherwise start a new namespace);
- read-only mode ([mcp] read_only, ``memsql mcp --read-only``) offers only the tools that read.

The model is loaded once at start-up and calls share a connection pool, so a burst of parallel calls queues and
completes.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from memsql import calls

log = logging.getLogger("memsql.mcp")

SNIPPET_CHARS = 300
_memory = None
_config = None


def config():
    """The server's configuration (memsql.toml, MEMSQL_* variables, the `memsql mcp` flags)."""
    global _config
    if _config is None:
        from memsql.config import load

        _config = load()
    return _config


def memory():
    """The server's one Memory (pool of 4 connections, one embedder)."""
    global _memory
    if _memory is None:
        from memsql.client import Memory

        namespace = os.environ.get("MEMSQL_NAMESPACE") or None
        if namespace == "@project":  # the Claude Code plugin: the hooks' namespace (git root of the directory)
            from memsql.claude.hooks import namespace_for

            namespace = namespace_for(os.getcwd(), config().get("claude.namespace"))   # memsql.toml or its variable
        _memory = Memory(namespace=namespace, pool_size=4, config=config())
    return _memory


def root() -> Path:
    """The directory the file tools may read and write, relative paths resolving against it: [mcp] root, else the
    server's working directory (symlinks resolved)."""
    return Path(config().get("mcp.root") or os.getcwd()).expanduser().resolve()


def data_home() -> Path:
    """memsql's data home ([database] home, $MEMSQL_HOME, else the user data dir): reports and exports go here."""
    from memsql import server

    home = config().get("database.home")
    return Path(home).expanduser().resolve() if home else server.home_dir()


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _outside(value: str, shown: Path, real: Path, bases: list[Path]) -> ValueError:
    where = " or ".join(str(b) for b in bases)
    via = f" (it resolves to {real})" if real != shown else ""
    return ValueError(f"{value} is outside {where}{via}: the file tools read and write only under [mcp] root "
                      f"({root()}); start the server in the directory to use, or set [mcp] root (`memsql mcp --root "
                      "DIR`, MEMSQL_MCP_ROOT)")


def _path(value: str, must_exist: bool = True, also: Path | None = None) -> str:
    """A path argument, absolute and confined: a relative one resolves against :func:`root`; resolved (``..`` and
    symlinks), it must lie under root, or under ``also`` (the exports folder), else ValueError naming the root and
    how to change it.

    Returns the absolute path as given (not resolved: a file's source URI stays what the caller named)."""
    p = Path(value).expanduser()
    p = p if p.is_absolute() else root() / p
    bases = [root(), *([also.resolve()] if also is not None else [])]
    try:
        real = p.resolve()
    except (OSError, RuntimeError) as exc:   # a symlink loop: nothing under it can be read
        raise ValueError(f"{value}: {exc}") from None
    if not any(_under(real, b) for b in bases):
        raise _outside(value, p, real, bases)
    if must_exist and not p.exists():
        raise ValueError(f"no such file or directory: {p} (relative paths resolve against {root()}, [mcp] root)")
    return str(p)


def _confined_files(paths: list[str]) -> None:
    """Every file an ingest of ``paths`` would read lies under :func:`root` once resolved: a symlink in an ingested
    folder that leads out of it is refused (ValueError), as a path given outside it is."""
    from memsql.ingest import iter_files

    base = root()
    for f in iter_files([p for p in paths if Path(p).is_dir()]):
        try:
            real = f.resolve()
        except (OSError, RuntimeError):   # a symlink loop: the ingest reports it as failed, reading nothing
            continue
        if not _under(real, base):
            raise _outside(str(f), f, real, [base])


def _stamp() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _snippet(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def _breakdown(r) -> dict[str, Any]:
    """A search result's score parts, rounded: score = fusion * decay * frequency."""
    parts = {"fusion": r.fusion_score, "dense_similarity": r.dense_similarity, "bm25": r.lexical_score,
             "decay": r.decay_factor, "frequency": r.frequency_factor, "priority_rank": r.priority_rank}
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in parts.items() if v is not None}


# -- answers: one compact JSON text, capped -------------------------------------------------------------------

def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\u2026[{len(text) - limit} more characters]"


def _bound(obj: Any, limit: int) -> tuple[Any, int]:
    """obj with every string longer than limit cut (marked); and how many were cut."""
    if isinstance(obj, str):
        return (_cut(obj, limit), 1) if len(obj) > limit else (obj, 0)
    if isinstance(obj, dict):
        out, n = {}, 0
        for k, v in obj.items():
            out[k], m = _bound(v, limit)
            n += m
        return out, n
    if isinstance(obj, list):
        items = [_bound(v, limit) for v in obj]
        return [v for v, _ in items], sum(m for _, m in items)
    return obj, 0


def cap(payload: dict[str, Any], max_chars: int, item_chars: int) -> str:
    """The answer's JSON text, at most ``max_chars`` characters.

    Texts longer than ``item_chars`` (or than an even share of max_chars among the results) end in a marker with
    the characters left out; if the answer is still too long, results are dropped from the end. Either way
    ``truncated`` says what was cut and how to get the rest.
    """
    results = payload.get("results")
    n = len(results) if isinstance(results, list) else 1
    limit = max(200, min(item_chars, (max_chars - 500) // max(n, 1)))
    bounded, shortened = _bound(payload, limit)
    text = _dumps(bounded)
    omitted = 0
    while len(text) > max_chars:
        if isinstance(bounded.get("results"), list) and len(bounded["results"]) > 1:
            bounded["results"].pop()
            omitted += 1
        elif limit > 200:
            limit //= 2
            bounded, shortened = _bound(payload, limit)
            if omitted:
                bounded["results"] = bounded["results"][: len(bounded["results"]) - omitted]
        else:   # a payload of many small fields (a summary): keep its head
            return _dumps({"truncated": {"max_chars": max_chars, "text": _cut(text, max_chars - 200)}})
        bounded["truncated"] = {"texts_shortened": shortened, "results_omitted": omitted, "max_chars": max_chars,
                                "hint": "ask for fewer results (k), or read one memory with memory_neighbors"}
        text = _dumps(bounded)
    if shortened and "truncated" not in bounded:
        bounded["truncated"] = {"texts_shortened": shortened, "results_omitted": 0, "item_chars": limit,
                                "hint": "read a whole memory in pieces with memory_neighbors"}
        text = _dumps(bounded)
    return text


def _rows(items) -> list[dict[str, Any]]:
    """Dataclass rows (or dicts) as JSON-ready dicts, times in ISO 8601."""
    from dataclasses import asdict, is_dataclass

    out = []
    for r in items:
        d = asdict(r) if is_dataclass(r) else dict(r)
        out.append({k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in d.items()})
    return out


# -- checks before a call --------------------------------------------------------------------------------

def _ping() -> None:
    """Raise ToolError at once when the database does not answer (instead of a pool timeout)."""
    from psycopg import pq
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from memsql.db import redact
    from memsql.errors import DatabaseUnavailable

    mem = memory()
    info = conninfo_to_dict(mem.dsn)
    info["connect_timeout"] = "2"
    status = pq.PGconn.ping(make_conninfo(**info).encode())
    if status in (pq.Ping.NO_RESPONSE, pq.Ping.NO_ATTEMPT):
        external = bool(os.environ.get("MEMSQL_DSN") or config().get("database.dsn"))
        fix = ("check that server, or [database] dsn / MEMSQL_DSN" if external
               else "start the embedded server with `memsql db start`")
        raise DatabaseUnavailable(f"the database at {redact(mem.dsn)} does not answer", fix)


def namespace_note(namespace: str | None, found: str, query: str | None = None) -> str:
    """Why a list came back empty (memsql.client.empty_reason): a blank query, a namespace that holds no memories
    (and which do), else ``found``."""
    from memsql.client import empty_reason

    rows = memory().namespace_list()
    held = {r.namespace: r.memories for r in rows if r.memories}
    return empty_reason(query, namespace or memory().namespace, held, found,
                        {r.namespace: r.archived for r in rows if r.archived})


def _writable_namespace(namespace: str | None, create: bool) -> None:
    """Refuse a write into a namespace that holds nothing (unless create, or it is the server's own)."""
    ns = namespace or memory().namespace
    if create or ns == memory().namespace or memory().namespace_list(namespace=ns):
        return
    names = ", ".join(r.namespace for r in memory().namespace_list()[:20]) or "none yet"
    raise ValueError(f"namespace {ns!r} holds nothing (namespaces: {names}); pass create=true to start it")


def _clean_validation(name: str, exc) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(x) for x in err["loc"]) or "arguments"
        got = "" if err["type"] == "missing" else f" (got {_cut(repr(err.get('input')), 60)})"
        parts.append(f"{where}: {err['msg']}{got}")
    return f"{name}: " + "; ".join(parts)


# -- the tools -------------------------------------------------------------------------------------------

LIMITS: dict[str, dict[str, Any]] = {
    "search.k": {"default": 8, "le": 50, "why": "Default 8, at most 50 here (10 and 1000 on the other surfaces): "
                 "answers are sized for a model's context, and 50 results with snippets and scores are about 32,000 "
                 "characters, near the cap of one answer ([mcp] max_chars, 40,000)."},
    "add.content": {"min_length": 1, "max_length": 100_000}, "update.content": {"min_length": 1, "max_length": 100_000},
    "ingest.paths": {"min_length": 1},
    "forget.max_rows": {"default": 100, "le": 1000},
    "restore.memory_ids": {"min_length": 1, "max_length": 1000},
    "find_by_tag.tags": {"min_length": 1}, "find_by_tag.k": {"default": 20, "le": 100},
    "neighbors.before": {"le": 10}, "neighbors.after": {"le": 10},
    "duplicates.similarity": {"ge": 0.5}, "duplicates.max_pairs": {"default": 100, "le": 500},
    "get.memory_ids": {"min_length": 1, "max_length": 20}, "get.max_chars": {"le": 20_000},
}
"""The tools' own defaults and ranges ("verb.argument"), where they differ from the verb's (memsql.calls): answers
stay compact for a model's context. "why" is added to the parameter's description, for the model to read."""

_MCP_TYPES = {str: str, int: int, float: float, bool: bool, datetime: str, list[str]: list[str],
              list[int]: list[int], "pathlib.Path": str, "list of pathlib.Path": list[str]}

def _tool_param(verb, arg) -> inspect.Parameter:
    """The tool parameter of a verb's argument: type, description, default and range from memsql.calls."""
    limits = dict(LIMITS.get(f"{verb.name}.{arg.name}", {}))
    if arg.required:
        default = inspect.Parameter.empty
    elif "default" in limits:
        default = limits["default"]
    else:  # numbers and flags show their default to the model; anything else is the verb's own
        default = arg.default if isinstance(arg.default, (bool, int, float)) else None
    limits.pop("default", None)
    why = limits.pop("why", None)
    bounds = {"ge": arg.low, "le": arg.high} if arg.python_type in (int, float) else {}
    field = Field(description=arg.help + "." + (f" {why}" if why else ""),
                  **{**{k: v for k, v in bounds.items() if v is not None}, **limits})
    py = _MCP_TYPES[arg.python_type]
    annotation = Annotated[py if default is not None else py | None, field]
    return inspect.Parameter(arg.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema without what a model does not need: titles, ``anyOf [X, null]`` for an optional
    argument (it is simply not required), ``default: null``; unknown arguments refused (additionalProperties)."""
    props = {}
    for name, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k != "title"}
        options = prop.pop("anyOf", None)
        if options is not None:
            kinds = [o for o in options if o.get("type") != "null"]
            prop = {**(kinds[0] if len(kinds) == 1 else {"anyOf": kinds}), **prop}
        if prop.get("default", 0) is None:
            prop.pop("default")
        props[name] = prop
    out = {"type": "object", "properties": props, "additionalProperties": False}
    if schema.get("required"):
        out["required"] = schema["required"]
    return out


def build_server(read_only: bool | None = None):
    """Create the MCPServer with memsql's tools registered: one per verb of memsql.calls that names a tool, its
    parameters the verb's MCP arguments (then the tool's own).

    Args:
        read_only: offer only the tools that read; default [mcp] read_only.
    """
    import typing

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
    from pydantic import ValidationError

    from memsql import __version__
    from memsql.errors import MemsqlError

    if read_only is None:
        read_only = config().get("mcp.read_only")

    class Server(MCPServer):
        async def call_tool(self, name, arguments, context=None):
            """Arguments checked first (unknown ones refused, one clean line per bad value); a tool's own error
            comes back as '<tool>: <message>'."""
            def error(text: str) -> CallToolResult:
                return CallToolResult(content=[TextContent(type="text", text=_cut(text, 4000))], is_error=True)

            tool = self._tool_manager.get_tool(name)
            if tool is None:
                return error(f"unknown tool {name!r}; tools: {', '.join(sorted(t.name for t in self._tool_manager.list_tools()))}")
            given = tool.fn_metadata.pre_parse_json(dict(arguments or {}))
            unknown = sorted(set(given) - set(tool.parameters["properties"]))
            if unknown:
                return error(f"{name}: unknown argument(s) {', '.join(unknown)}; it takes "
                             f"{', '.join(tool.parameters['properties']) or 'none'}")
            try:
                tool.fn_metadata.arg_model.model_validate(given)
            except ValidationError as exc:
                return error(_clean_validation(name, exc))
            try:
                return await super().call_tool(name, given, context)
            except ToolError as exc:
                inner = str(exc.__cause__ if isinstance(exc.__cause__, ToolError) else exc)
                for prefix in prefixes.get(name, ()):   # the SQL function's or the verb's name, said once
                    if inner.startswith(f"{prefix}: "):
                        inner = inner[len(prefix) + 2:]
                        break
                return error(f"{name}: {inner}")

    server = Server(
        "memsql",
        version=__version__,
        instructions=("Long-term memory. memory_search before answering about past work, decisions or the user's "
                      "notes; memory_add to keep a durable fact or decision."),
    )
    prefixes: dict[str, tuple[str, ...]] = {}
    """tool -> the names its errors may start with (the tool, its SQL function, its verb): cut before the tool's
    own name is put in front."""
    # hints left out take the protocol's defaults (readOnly false; destructive true unless said; not idempotent)
    reads = ToolAnnotations(read_only_hint=True)
    adds = ToolAnnotations(destructive_hint=False)
    destroys = ToolAnnotations(destructive_hint=True)

    def tool(name: str, annotations: ToolAnnotations, doc: str | None = None):
        """Register the decorated function as verb ``name``'s tool (unless read-only mode leaves it out); it is
        called with ``args`` (the arguments given, None left out) and its own parameters, and returns a dict;
        the answer is its capped JSON. memsql and argument errors become tool errors."""
        verb = calls.VERBS[name]

        def register(body):
            if read_only and not annotations.read_only_hint:
                return body
            hints = typing.get_type_hints(body, include_extras=True)
            own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name])
                   for p in list(inspect.signature(body).parameters.values())[1:]]

            @functools.wraps(body)
            def run_tool(**given):
                args = {a.name: given.pop(a.name) for a in verb.on("mcp")}
                args = {k: v for k, v in args.items() if v is not None}
                try:
                    for key in calls.NAMESPACE_ARGS & set(args):   # before a tool's own checks read the namespace
                        calls.check_namespace(verb.name, key, args[key])
                    _ping()
                    payload = body(args, **given)
                except (MemsqlError, ValueError, TypeError) as exc:
                    raise ToolError(str(exc)) from exc
                text = cap(payload, config().get("mcp.max_chars"), config().get("mcp.item_chars"))
                return CallToolResult(content=[TextContent(type="text", text=text)])

            run_tool.__signature__ = inspect.Signature([_tool_param(verb, a) for a in verb.on("mcp")] + own,
                                                       return_annotation=CallToolResult)
            run_tool.__name__ = verb.mcp
            prefixes[verb.mcp] = tuple(dict.fromkeys(n for n in (verb.mcp, verb.function, verb.name) if n))
            server.tool(name=verb.mcp, annotations=annotations, structured_output=False,
                        description=" ".join((doc or body.__doc__ or "").split()))(run_tool)
            registered = server._tool_manager.get_tool(verb.mcp)
            registered.parameters = compact_schema(registered.parameters)
            return body

        return register

    where = f"Paths must lie under {root()} ([mcp] root); relative ones resolve against it."

    @tool("search", reads)
    def memory_search(
        args: dict,
        full_text: Annotated[bool, Field(description="Whole memories instead of snippets.")] = False,
        snippet_chars: Annotated[int, Field(ge=40, le=2000, description="Snippet length.")] = SNIPPET_CHARS,
    ) -> dict[str, Any]:
        """Hybrid search of long-term memory (dense + BM25, then recency, importance, use); current versions unless
        as_of or include_superseded. Results best first: ids, score, ranks (dense, lexical, document_rank: the
        document's rank; group_by document gives one row per document), scores (the breakdown: fusion, dense
        cosine, BM25, decay, frequency; score = fusion * decay * frequency), snippet (content with full_text;
        memory_get has the full text), title, source, knowledge_type, date; a superseded version also valid_to
        (when it was superseded) and superseded_by."""
        out = []
        for r in memory().search(**args):
            text = r.content if full_text else _snippet(r.content, snippet_chars)
            item = {
                "memory_id": r.memory_id, "document_id": r.document_id, "score": round(r.score, 6),
                "dense_rank": r.dense_rank, "lexical_rank": r.lexical_rank, "document_rank": r.document_rank,
                "scores": _breakdown(r),
                ("content" if full_text else "snippet"): text,
                "title": r.title, "source": r.source_uri, "knowledge_type": r.knowledge_type,
                "date": (r.source_date or r.created_at).isoformat(),
            }
            if r.valid_to is not None:   # the names of every surface (memory_history, memory_get, SQL, Python, web)
                item["valid_to"] = r.valid_to.isoformat()
                item["superseded_by"] = r.superseded_by
                item["superseded_at"] = item["valid_to"]   # its former name here, kept for clients that read it
            out.append(item)
        if out:
            return {"results": out}
        note = namespace_note(args.get("namespace"), "nothing matched in namespace {namespace!r} ({memories} "
                              "memories): try other words", query=str(args.get("query") or ""))
        if note.startswith("nothing matched"):   # what the filters left out (the importance cutoff, as_of)
            hidden = memory().hidden(args.get("namespace"), args.get("memory_rerank"), args.get("as_of"), args)
            note = f"{note}; {hidden}" if hidden else note
        return {"results": [], "note": note}

    @tool("add", adds)
    def memory_add(
        args: dict,
        create: Annotated[bool, Field(description="Allow a namespace that holds nothing yet.")] = False,
    ) -> dict[str, Any]:
        """Remember a short text durably; the same text again returns the same memory_id. With the autosave filter
        on, an unsaved text returns saved false and the filter's reason."""
        _writable_namespace(args.get("namespace"), create)
        mem = memory()
        mid = mem.add(**args)
        if mid is not None:
            return {"memory_id": mid, "saved": True}
        decision = mem.judge(args["content"], namespace=args.get("namespace"),
                             knowledge_type=args.get("knowledge_type"))
        return {"memory_id": None, "saved": False, "reason": decision.reason, "filter": decision.as_dict()}

    @tool("update", adds)
    def memory_update(args: dict) -> dict[str, Any]:
        """A fact changed: write its new version (the old one stays as history, no longer searched). Returns the
        new memory_id (the same id when the text is unchanged)."""
        new_id = memory().update(**args)
        return {"memory_id": new_id, "supersedes": args["memory_id"] if new_id != args["memory_id"] else None}

    @tool("history", reads)
    def memory_history(args: dict) -> dict[str, Any]:
        """Versions of a memory, oldest first: content, valid_from, valid_to (null = current), superseded_by."""
        return {"results": _rows(memory().history(**args))}

    @tool("ingest", adds, doc="Ingest markdown, text, or Claude.ai / Claude Code / ChatGPT exports; unchanged files "
                              f"are skipped. {where}")
    def memory_ingest(
        args: dict,
        create: Annotated[bool, Field(description="Allow a namespace that holds nothing yet.")] = False,
    ) -> dict[str, Any]:
        args["paths"] = [_path(p) for p in args["paths"]]
        _confined_files(args["paths"])
        _writable_namespace(args.get("namespace"), create)
        return memory().ingest(**args).as_dict()

    @tool("stats", reads)
    def memory_stats(args: dict) -> dict[str, Any]:
        """Documents and memories per namespace, knowledge type and adapter."""
        rows = _rows(memory().stats(**args))
        return {"results": rows} if rows else {"results": [], "note": namespace_note(args.get("namespace"), "")}

    @tool("tag", adds)
    def memory_tag(args: dict) -> dict[str, Any]:
        """Set importance, knowledge type or tags of a memory or a document; returns memories changed."""
        if ("memory_id" in args) == ("document_id" in args):
            raise ValueError("give exactly one of memory_id and document_id")
        return {"changed": memory().tag(**args)}

    @tool("forget", destroys)
    def memory_forget(args: dict) -> dict[str, Any]:
        """Memories that have faded (age, low importance, unused); dry_run false archives them (memory_restore
        brings them back)."""
        rows = _rows(memory().forget(**args))
        return {"results": rows} if rows else {
            "results": [], "note": namespace_note(args.get("namespace"), "nothing has faded in {namespace!r}")}

    @tool("restore", adds)
    def memory_restore(args: dict) -> dict[str, Any]:
        """Bring archived memories back (embedded again); each row says restored or why not."""
        return {"results": _rows(memory().restore(**args))}

    @tool("touch", adds)
    def memory_touch(args: dict) -> dict[str, Any]:
        """Count a use of memories you relied on (read in full, cited in an answer): their access count + 1, which
        the frequency boost of search and forgetting read. Searching alone counts nothing."""
        return {"results": _rows(memory().touch(**args))}

    @tool("health", reads)
    def memory_health(args: dict) -> dict[str, Any]:
        """Checks: embedding backlog, orphan documents, model and dimension, invalid indexes, BM25 statistics."""
        return {"results": _rows(memory().health(**args))}

    @tool("find_by_tag", reads)
    def find_by_tag(args: dict) -> dict[str, Any]:
        """Memories carrying the tags, newest first, with snippets."""
        out = _rows(memory().find_by_tag(**args))
        for r in out:
            r["content"] = _snippet(r["content"], SNIPPET_CHARS)
        return {"results": out} if out else {
            "results": [], "note": namespace_note(args.get("namespace"), "no memory in {namespace!r} carries them")}

    @tool("delete_document", destroys)
    def delete_document(args: dict) -> dict[str, Any]:
        """Delete a document and its memories (not restorable)."""
        return {"deleted_memories": memory().delete_document(**args)}

    @tool("neighbors", reads)
    def memory_neighbors(args: dict) -> dict[str, Any]:
        """Full text of a memory and the chunks around it, in document order."""
        return {"results": _rows(memory().neighbors(**args))}

    @tool("duplicates", reads)
    def memory_duplicates(args: dict) -> dict[str, Any]:
        """Exact and near-duplicate memory pairs; a report, nothing is deleted."""
        rows = _rows(memory().duplicates(**args))
        return {"results": rows} if rows else {
            "results": [], "note": namespace_note(args.get("namespace"), "no duplicates in {namespace!r}")}

    reports = data_home() / "reports"

    @tool("evaluate", reads, doc="Retrieval quality on golden queries (precision, recall, MRR, nDCG, hit rate at "
                                 f"1/3/5/10); returns the metrics and the report files, written under {reports}. "
                                 f"{where}")
    def memory_eval(args: dict) -> dict[str, Any]:
        args["golden_path"] = _path(args["golden_path"])
        name = args.get("out_dir") or f"eval-{_stamp()}"
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise ValueError(f"out_dir is a folder name under {reports}, got {name!r}")
        args["out_dir"] = str(reports / name)
        report = memory().evaluate(**args)
        return {"overall": report["overall"], "files": report["files"], "warnings": report.get("warnings", [])}

    @tool("namespace_list", reads)
    def memory_namespaces(args: dict) -> dict[str, Any]:
        """Namespaces that hold memories, with documents, memories, superseded, archived counts."""
        rows = _rows(memory().namespace_list(**args))
        return {"results": rows} if rows else {
            "results": [], "note": "no namespace holds anything yet" if "namespace" not in args
            else namespace_note(args["namespace"], "")}

    exports = data_home() / "exports"

    @tool("namespace_export", adds, doc=f"Write a namespace to a JSON lines file (default under {exports}, also "
                                        f"allowed as path); memory_import reads it. {where}")
    def memory_export(args: dict) -> dict[str, Any]:
        target = Path(_path(args["path"], must_exist=False, also=exports)) if args.get("path") else \
            exports / f"{args['namespace']}-{_stamp()}.jsonl"
        if os.path.lexists(target):
            raise ValueError(f"{target} exists; name a new file")
        target.parent.mkdir(parents=True, exist_ok=True)
        args["path"] = str(target)
        return memory().namespace_export(**args)

    @tool("namespace_import", adds, doc="Import a namespace export into a namespace that holds nothing yet (all or "
                                        f"nothing); a file under {exports} (memory_export's) is allowed too. {where}")
    def memory_import(args: dict) -> dict[str, Any]:
        args["path"] = _path(args["path"], also=exports)
        return memory().namespace_import(**args)

    @tool("context", reads)
    def memory_context(args: dict) -> dict[str, Any]:
        """A budgeted context pack for this project: principles and decisions, the memories relevant to query,
        the tail of the last session; one line per memory "- [#id] type date: text". memory_get(ids) returns
        the full text of any line."""
        text = memory().context(**args)
        return {"context": text, "chars": len(text)} if text else {
            "context": "", "chars": 0, "note": namespace_note(args.get("namespace"), "nothing in {namespace!r} fits")}

    @tool("get", reads)
    def memory_get(args: dict) -> dict[str, Any]:
        """Full text of memories by id (from memory_search or memory_context), in the order asked; archived and
        superseded ones too. chars is a text's whole length, truncated says it was cut at max_chars."""
        keep = ("memory_id", "document_id", "chunk_index", "content", "chars", "truncated", "knowledge_type",
                "importance", "tags", "title", "source_uri", "source_date", "created_at", "valid_to", "superseded_by",
                "archived")
        return {"results": [{k: r[k] for k in keep} for r in _rows(memory().get(**args))]}

    return server


def main(read_only: bool | None = None, root_dir: str | None = None, flags: dict | None = None) -> None:
    """Run the server on stdio (model loaded before the first request).

    Args:
        read_only: offer only the tools that read; default [mcp] read_only.
        root_dir: the directory relative paths resolve against; default [mcp] root.
        flags: other configuration overrides ("section.key" -> value, as `memsql --set`).

    Raises:
        ConfigError: a bad configuration (before the server starts).
    """
    global _config
    from memsql.config import load

    logging.basicConfig(level=logging.WARNING)
    own = {k: v for k, v in {"mcp.read_only": read_only, "mcp.root": root_dir}.items() if v is not None}
    _config = load(flags={**(flags or {}), **own})
    server = build_server()
    memory().embedder.embed(["warm-up"])  # load the model once, before the client's first call
    server.run("stdio")


if __name__ == "__main__":
    main()
