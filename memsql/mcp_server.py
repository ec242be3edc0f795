"""memsql as an MCP server (stdio), for Claude Code, Cursor and any MCP client: `memsql mcp`.

Tools carry the names of the README's name table. Results are compact for a model's context:
ids, score, per-arm ranks, a snippet capped at ``snippet_chars`` characters, source and date;
``full_text`` returns whole memories. The model is loaded once at start-up and calls share a
connection pool, so a burst of parallel tool calls queues and completes. Argument errors come
back as tool errors with a message (never a crash of the server).
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field

from memsql import calls

log = logging.getLogger("memsql.mcp")

SNIPPET_CHARS = 300
SEARCH_CHARS = 16_000
"""Snippet characters of one memory_search answer at most: past it, later snippets are shorter (memory_get has the
full text)."""
_memory = None


def memory():
    """The server's one Memory (pool of 4 connections, one embedder)."""
    global _memory
    if _memory is None:
        from memsql.client import Memory

        namespace = os.environ.get("MEMSQL_NAMESPACE", "default")
        if namespace == "@project":  # the Claude Code plugin: the hooks' namespace (git root of the directory)
            from memsql.claude.hooks import namespace_for

            namespace = namespace_for(os.getcwd(), os.environ.get("MEMSQL_CLAUDE_NAMESPACE", ""))
        _memory = Memory(namespace=namespace, pool_size=4)
    return _memory


def _guard(fn):
    """Run fn, turning memsql and argument errors into MCP tool errors."""
    from mcp.server.mcpserver.exceptions import ToolError

    from memsql.errors import MemsqlError

    try:
        return fn()
    except (MemsqlError, ValueError, TypeError) as exc:
        raise ToolError(str(exc)) from exc


def _snippet(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def _breakdown(r) -> dict[str, Any]:
    """A search result's score parts, rounded: score = fusion * decay * frequency."""
    parts = {"fusion": r.fusion_score, "dense_similarity": r.dense_similarity, "bm25": r.lexical_score,
             "decay": r.decay_factor, "frequency": r.frequency_factor, "priority_rank": r.priority_rank}
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in parts.items() if v is not None}


LIMITS: dict[str, dict[str, Any]] = {
    "search.k": {"default": 8, "le": 50},
    "add.content": {"min_length": 1, "max_length": 100_000}, "update.content": {"min_length": 1, "max_length": 100_000},
    "ingest.paths": {"min_length": 1},
    "forget.max_rows": {"default": 100, "le": 1000},
    "restore.memory_ids": {"min_length": 1, "max_length": 1000},
    "find_by_tag.tags": {"min_length": 1}, "find_by_tag.k": {"default": 20, "le": 100},
    "neighbors.before": {"le": 10}, "neighbors.after": {"le": 10},
    "duplicates.similarity": {"ge": 0.5}, "duplicates.max_pairs": {"default": 100, "le": 500},
    "evaluate.out_dir": {"default": "eval-report"},
    "get.memory_ids": {"min_length": 1, "max_length": 20}, "get.max_chars": {"le": 20_000},
}
"""The tools' own defaults and ranges ("verb.argument"), where they differ from the verb's (memsql.calls): answers
stay compact for a model's context."""

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
    bounds = {"ge": arg.low, "le": arg.high} if arg.python_type in (int, float) else {}
    field = Field(description=arg.help + ".", **{**{k: v for k, v in bounds.items() if v is not None}, **limits})
    py = _MCP_TYPES[arg.python_type]
    annotation = Annotated[py if default is not None else py | None, field]
    return inspect.Parameter(arg.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _rows(items) -> list[dict[str, Any]]:
    """Dataclass rows (or dicts) as JSON-ready dicts, times in ISO 8601."""
    from dataclasses import asdict, is_dataclass

    out = []
    for r in items:
        d = asdict(r) if is_dataclass(r) else dict(r)
        out.append({k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in d.items()})
    return out


def build_server():
    """Create the MCPServer with memsql's tools registered: one per verb of memsql.calls that names a tool, its
    parameters the verb's MCP arguments (then the tool's own)."""
    import typing

    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    server = MCPServer(
        "memsql",
        instructions=(
            "Long-term memory in PostgreSQL. Use memory_search before answering questions about past work, "
            "decisions or the user's notes; use memory_add to remember a durable fact or decision."
        ),
    )
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    additive = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
    destructive = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                  open_world_hint=False)

    def tool(name: str, annotations: ToolAnnotations):
        """Register the decorated function as verb ``name``'s tool; it is called with ``args`` (the arguments
        given, None left out) and its own parameters; memsql and argument errors become tool errors."""
        verb = calls.VERBS[name]

        def register(body):
            hints = typing.get_type_hints(body, include_extras=True)
            own = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name])
                   for p in list(inspect.signature(body).parameters.values())[1:]]

            @functools.wraps(body)
            def run_tool(**given):
                args = {a.name: given.pop(a.name) for a in verb.on("mcp")}
                args = {k: v for k, v in args.items() if v is not None}
                return _guard(lambda: body(args, **given))

            run_tool.__signature__ = inspect.Signature([_tool_param(verb, a) for a in verb.on("mcp")] + own,
                                                       return_annotation=hints.get("return", Any))
            run_tool.__name__ = verb.mcp
            server.tool(name=verb.mcp, annotations=annotations)(run_tool)
            return body

        return register

    @tool("search", read_only)
    def memory_search(
        args: dict,
        full_text: Annotated[bool, Field(description="Return whole memories instead of snippets.")] = False,
        snippet_chars: Annotated[int, Field(ge=40, le=2000, description="Snippet length in characters.")] = SNIPPET_CHARS,
    ) -> list[dict[str, Any]]:
        """Hybrid search of long-term memory (dense HNSW + BM25, fused by score or RRF, then recency/importance/usage).
        Current versions of facts only, unless as_of or include_superseded asks for history.

        Returns the best memories first: memory_id, document_id, score, dense_rank, lexical_rank,
        scores (the breakdown: fusion, dense cosine, BM25, decay, frequency factors; score = fusion * decay *
        frequency), snippet (or content with full_text; snippets share a cap, memory_get has the full text), title, source, knowledge_type and date; a superseded version
        also has superseded_at and superseded_by.
        """
        out = []
        rows = memory().search(**args)
        room = SEARCH_CHARS
        for i, r in enumerate(rows):
            share = max(40, min(snippet_chars, room // max(1, len(rows) - i)))
            text = r.content if full_text else _snippet(r.content, share)
            room -= len(text)
            item = {
                "memory_id": r.memory_id, "document_id": r.document_id, "score": round(r.score, 6),
                "dense_rank": r.dense_rank, "lexical_rank": r.lexical_rank,
                "scores": _breakdown(r),
                ("content" if full_text else "snippet"): text,
                "title": r.title, "source": r.source_uri, "knowledge_type": r.knowledge_type,
                "date": (r.source_date or r.created_at).isoformat(),
            }
            if r.valid_to is not None:
                item["superseded_at"] = r.valid_to.isoformat()
                item["superseded_by"] = r.superseded_by
            out.append(item)
        return out

    @tool("add", additive)
    def memory_add(args: dict) -> dict[str, Any]:
        """Remember a short text durably. Adding the same text again returns the same memory_id.
        When the server's autosave filter is on, a text it does not save comes back with saved false and the
        filter's reason and scores."""
        mem = memory()
        mid = mem.add(**args)
        if mid is not None:
            return {"memory_id": mid, "saved": True}
        decision = mem.judge(args["content"], namespace=args.get("namespace"),
                             knowledge_type=args.get("knowledge_type"))
        return {"memory_id": None, "saved": False, "reason": decision.reason, "filter": decision.as_dict()}

    @tool("update", additive)
    def memory_update(args: dict) -> dict[str, Any]:
        """A fact changed (the budget was 30k, now 45k): write the new version; the old one is kept as history
        and no longer found by memory_search. Returns the new memory_id (the same id when the text is unchanged)."""
        new_id = memory().update(**args)
        return {"memory_id": new_id, "supersedes": args["memory_id"] if new_id != args["memory_id"] else None}

    @tool("history", read_only)
    def memory_history(args: dict) -> list[dict[str, Any]]:
        """The versions of a memory, oldest first: content and the time each was valid (valid_from, valid_to;
        valid_to null = current), superseded_by, archived."""
        return _rows(memory().history(**args))

    @tool("ingest", additive)
    def memory_ingest(args: dict) -> dict[str, Any]:
        """Ingest markdown, text, or Claude.ai / Claude Code / ChatGPT exports; unchanged files are skipped."""
        missing = [p for p in args["paths"] if not os.path.exists(p)]
        if missing:
            raise ValueError(f"no such file or directory: {', '.join(missing)}")
        return memory().ingest(**args).as_dict()

    @tool("stats", read_only)
    def memory_stats(args: dict) -> list[dict[str, Any]]:
        """Counts of documents and memories per namespace, knowledge type and adapter."""
        return _rows(memory().stats(**args))

    @tool("tag", additive)
    def memory_tag(args: dict) -> dict[str, Any]:
        """Set importance, knowledge type or tags of a memory or a whole document; returns memories changed."""
        if ("memory_id" in args) == ("document_id" in args):
            raise ValueError("give exactly one of memory_id and document_id")
        return {"changed": memory().tag(**args)}

    @tool("forget", destructive)
    def memory_forget(args: dict) -> list[dict[str, Any]]:
        """Find memories that have faded (age by half-life, low importance, unused); archive them when dry_run is
        false (restorable with memory_restore)."""
        return _rows(memory().forget(**args))

    @tool("restore", additive)
    def memory_restore(args: dict) -> list[dict[str, Any]]:
        """Bring archived memories back (embedded again); each row says restored or why not."""
        return _rows(memory().restore(**args))

    @tool("health", read_only)
    def memory_health(args: dict) -> list[dict[str, Any]]:
        """Health checks: embedding backlog, orphan documents, model/dimension, invalid indexes, BM25 statistics."""
        return _rows(memory().health(**args))

    @tool("find_by_tag", read_only)
    def find_by_tag(args: dict) -> list[dict[str, Any]]:
        """Memories carrying the tags, newest first, with snippets."""
        out = _rows(memory().find_by_tag(**args))
        for r in out:
            r["content"] = _snippet(r["content"], SNIPPET_CHARS)
        return out

    @tool("delete_document", destructive)
    def delete_document(args: dict) -> dict[str, Any]:
        """Delete a document and all its memories (not restorable)."""
        return {"deleted_memories": memory().delete_document(**args)}

    @tool("neighbors", read_only)
    def memory_neighbors(args: dict) -> list[dict[str, Any]]:
        """Full text of a memory and the chunks around it in its document, in order."""
        return _rows(memory().neighbors(**args))

    @tool("duplicates", read_only)
    def memory_duplicates(args: dict) -> list[dict[str, Any]]:
        """Exact and near-duplicate memory pairs; a report, nothing is deleted."""
        return _rows(memory().duplicates(**args))

    @tool("evaluate", read_only)
    def memory_eval(args: dict) -> dict[str, Any]:
        """Measure retrieval quality on golden queries (Precision, Recall, MRR, nDCG, Hit Rate at 1/3/5/10);
        returns the overall metrics and the report files written."""
        if not os.path.exists(args["golden_path"]):
            raise ValueError(f"no such golden file: {args['golden_path']}")
        report = memory().evaluate(**args)
        return {"overall": report["overall"], "files": report["files"]}

    @tool("context", read_only)
    def memory_context(args: dict) -> dict[str, Any]:
        """A budgeted context pack for this project: principles and decisions, the memories relevant to query,
        the tail of the last session; one line per memory "- [#id] type date: text". memory_get(ids) returns
        the full text of any line."""
        text = memory().context(**args)
        return {"context": text, "chars": len(text)}

    @tool("get", read_only)
    def memory_get(args: dict) -> list[dict[str, Any]]:
        """The full text of memories by id (from memory_search or memory_context), in the order asked; truncated
        says a text was cut at max_chars (chars is its whole length)."""
        return _rows(memory().get(**args))

    return server


def main() -> None:
    """Run the server on stdio (model loaded and database reached before the first request)."""
    logging.basicConfig(level=logging.WARNING)
    server = build_server()
    mem = memory()
    mem.embedder.embed(["warm-up"])  # load the model once, before the client's first call
    server.run("stdio")


if __name__ == "__main__":
    main()
