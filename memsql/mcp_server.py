"""memsql as an MCP server (stdio), for Claude Code, Cursor and any MCP client: `memsql mcp`.

Tools carry the names of the README's name table. Results are compact for a model's context:
ids, score, per-arm ranks, a snippet capped at ``snippet_chars`` characters, source and date;
``full_text`` returns whole memories. The model is loaded once at start-up and calls share a
connection pool, so a burst of parallel tool calls queues and completes. Argument errors come
back as tool errors with a message (never a crash of the server).
"""

from __future__ import annotations

import logging
import os
from typing import Annotated, Any

from pydantic import Field

log = logging.getLogger("memsql.mcp")

SNIPPET_CHARS = 300
Ns = Annotated[str | None, Field(description="Memory namespace; default the server's.")]
_memory = None


def memory():
    """The server's one Memory (pool of 4 connections, one embedder)."""
    global _memory
    if _memory is None:
        from memsql.api import Memory

        _memory = Memory(namespace=os.environ.get("MEMSQL_NAMESPACE", "default"), pool_size=4)
    return _memory


def _tool_error(exc: Exception):
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(str(exc))


def _guard(fn):
    """Run fn, turning memsql and argument errors into MCP tool errors."""
    from memsql.errors import MemsqlError

    try:
        return fn()
    except (MemsqlError, ValueError, TypeError) as exc:
        raise _tool_error(exc) from exc


def _snippet(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "\u2026"


def build_server():
    """Create the MCPServer with memsql's tools registered."""
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

    @server.tool(annotations=read_only)
    def memory_search(
        query: Annotated[str, Field(description="What to look for: a question, a name, an exact term.")],
        k: Annotated[int, Field(ge=1, le=50, description="Results to return (1-50).")] = 8,
        namespace: Annotated[str | None, Field(description="Memory namespace; default the server's.")] = None,
        knowledge_types: Annotated[list[str] | None, Field(description="Only these knowledge types.")] = None,
        topics: Annotated[list[str] | None, Field(description="Only memories with one of these topics.")] = None,
        full_text: Annotated[bool, Field(description="Return whole memories instead of snippets.")] = False,
        snippet_chars: Annotated[int, Field(ge=40, le=2000, description="Snippet length in characters.")] = SNIPPET_CHARS,
        as_of: Annotated[str | None, Field(description="Answer as memory stood at this time (ISO 8601, e.g. 2026-03-01 or 2026-03-01T12:00:00+02:00); default now.")] = None,
        include_superseded: Annotated[bool, Field(description="Also search superseded versions (marked with superseded_at).")] = False,
    ) -> list[dict[str, Any]]:
        """Hybrid search of long-term memory (dense HNSW + BM25, fused by score or RRF, then recency/importance/usage).
        Current versions of facts only, unless as_of or include_superseded asks for history.

        Returns the best memories first: memory_id, document_id, score, dense_rank, lexical_rank,
        snippet (or content with full_text), title, source, knowledge_type and date; a superseded version
        also has superseded_at and superseded_by.
        """
        def go():
            options = {"topics": topics} if topics else {}
            if as_of is not None:
                options["as_of"] = as_of
            if include_superseded:
                options["include_superseded"] = True
            results = memory().search(query, k=k, namespace=namespace, knowledge_types=knowledge_types, **options)
            out = []
            for r in results:
                item = {
                    "memory_id": r.memory_id, "document_id": r.document_id, "score": round(r.score, 6),
                    "dense_rank": r.dense_rank, "lexical_rank": r.lexical_rank,
                    ("content" if full_text else "snippet"): r.content if full_text else _snippet(r.content, snippet_chars),
                    "title": r.title, "source": r.source_uri, "knowledge_type": r.knowledge_type,
                    "date": (r.source_date or r.created_at).isoformat(),
                }
                if r.valid_to is not None:
                    item["superseded_at"] = r.valid_to.isoformat()
                    item["superseded_by"] = r.superseded_by
                out.append(item)
            return out
        return _guard(go)

    @server.tool(annotations=additive)
    def memory_add(
        content: Annotated[str, Field(min_length=1, max_length=100_000, description="The fact, decision or note.")],
        knowledge_type: Annotated[str, Field(description="principle, paper, news, experiment, note, conversation, or a user-defined type.")] = "note",
        importance: Annotated[float | None, Field(ge=0.0, le=1.0, description="0..1; omit when unknown.")] = None,
        tags: Annotated[list[str] | None, Field(description="Tags for find_by_tag.")] = None,
        namespace: Annotated[str | None, Field(description="Memory namespace; default the server's.")] = None,
        language: Annotated[str | None, Field(description="ISO 639-1 code (de, fr, zh, ...) or text search configuration; default english.")] = None,
    ) -> dict[str, Any]:
        """Remember a short text durably. Adding the same text again returns the same memory_id.
        When the server's autosave filter is on, a text it does not save comes back with saved false and the
        filter's reason and scores."""
        def go():
            mem = memory()
            mid = mem.add(content, namespace=namespace, knowledge_type=knowledge_type, importance=importance,
                          tags=tags or (), language=language)
            if mid is not None:
                return {"memory_id": mid, "saved": True}
            decision = mem.judge(content, namespace=namespace, knowledge_type=knowledge_type)
            return {"memory_id": None, "saved": False, "reason": decision.reason, "filter": decision.as_dict()}
        return _guard(go)

    @server.tool(annotations=additive)
    def memory_update(
        memory_id: Annotated[int, Field(description="The memory whose fact changed (its current version).")],
        content: Annotated[str, Field(min_length=1, max_length=100_000, description="The new text of the fact.")],
        importance: Annotated[float | None, Field(ge=0.0, le=1.0, description="0..1; default the old version's.")] = None,
        namespace: Ns = None,
    ) -> dict[str, Any]:
        """A fact changed (the budget was 30k, now 45k): write the new version; the old one is kept as history
        and no longer found by memory_search. Returns the new memory_id (the same id when the text is unchanged)."""
        def go():
            new_id = memory().update(memory_id, content, namespace=namespace, importance=importance)
            return {"memory_id": new_id, "supersedes": memory_id if new_id != memory_id else None}
        return _guard(go)

    @server.tool(annotations=read_only)
    def memory_history(
        memory_id: Annotated[int, Field(description="Any version's memory id.")],
        namespace: Ns = None,
    ) -> list[dict[str, Any]]:
        """The versions of a memory, oldest first: content and the time each was valid (valid_from, valid_to;
        valid_to null = current), superseded_by, archived."""
        def go():
            from dataclasses import asdict

            return [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in asdict(r).items()}
                    for r in memory().history(memory_id, namespace)]
        return _guard(go)

    @server.tool(annotations=additive)
    def memory_ingest(
        paths: Annotated[list[str], Field(min_length=1, description="Files or directories on this machine.")],
        namespace: Annotated[str | None, Field(description="Memory namespace; default the server's.")] = None,
        knowledge_type: Annotated[str | None, Field(description="Force a knowledge type for every document.")] = None,
    ) -> dict[str, Any]:
        """Ingest markdown, text, or Claude.ai / Claude Code / ChatGPT exports; unchanged files are skipped."""
        def go():
            missing = [p for p in paths if not os.path.exists(p)]
            if missing:
                raise ValueError(f"no such file or directory: {', '.join(missing)}")
            return memory().ingest(paths, namespace=namespace, knowledge_type=knowledge_type).as_dict()
        return _guard(go)

    @server.tool(annotations=read_only)
    def memory_stats(
        namespace: Annotated[str | None, Field(description="One namespace; default all.")] = None,
    ) -> list[dict[str, Any]]:
        """Counts of documents and memories per namespace, knowledge type and adapter."""
        from dataclasses import asdict

        return _guard(lambda: [{k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in asdict(r).items()}
                               for r in memory().stats(namespace)])

    destructive = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                  open_world_hint=False)

    def rows(items):
        from dataclasses import asdict, is_dataclass

        out = []
        for r in items:
            d = asdict(r) if is_dataclass(r) else dict(r)
            out.append({k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in d.items()})
        return out

    @server.tool(annotations=additive)
    def memory_tag(
        memory_id: Annotated[int | None, Field(description="The memory to change (or document_id).")] = None,
        document_id: Annotated[int | None, Field(description="Change every memory of this document.")] = None,
        importance: Annotated[float | None, Field(ge=0.0, le=1.0, description="0..1.")] = None,
        knowledge_type: Annotated[str | None, Field(description="New knowledge type.")] = None,
        add_tags: Annotated[list[str] | None, Field(description="Tags to add.")] = None,
        remove_tags: Annotated[list[str] | None, Field(description="Tags to remove.")] = None,
        namespace: Ns = None,
    ) -> dict[str, Any]:
        """Set importance, knowledge type or tags of a memory or a whole document; returns memories changed."""
        if (memory_id is None) == (document_id is None):
            raise _tool_error(ValueError("give exactly one of memory_id and document_id"))
        return _guard(lambda: {"changed": memory().tag(memory_id, document_id, namespace, importance, knowledge_type,
                                                       None, add_tags, remove_tags)})

    @server.tool(annotations=destructive)
    def memory_forget(
        dry_run: Annotated[bool, Field(description="List candidates only (default). False archives them.")] = True,
        score_threshold: Annotated[float | None, Field(ge=0.0, description="Retention score cut (0.05).")] = None,
        max_rows: Annotated[int, Field(ge=1, le=1000, description="At most this many rows.")] = 100,
        namespace: Ns = None,
    ) -> list[dict[str, Any]]:
        """Find memories that have faded (age by half-life, low importance, unused); archive them when dry_run is
        false (restorable with memory_restore)."""
        return _guard(lambda: rows(memory().forget(namespace, score_threshold, dry_run=dry_run, max_rows=max_rows)))

    @server.tool(annotations=additive)
    def memory_restore(
        memory_ids: Annotated[list[int], Field(min_length=1, max_length=1000, description="Archived memory ids.")],
        namespace: Ns = None,
    ) -> list[dict[str, Any]]:
        """Bring archived memories back (embedded again); each row says restored or why not."""
        return _guard(lambda: rows(memory().restore(memory_ids, namespace)))

    @server.tool(annotations=read_only)
    def memory_health(namespace: Ns = None) -> list[dict[str, Any]]:
        """Health checks: embedding backlog, orphan documents, model/dimension, invalid indexes, BM25 statistics."""
        return _guard(lambda: rows(memory().health(namespace)))

    @server.tool(annotations=read_only)
    def find_by_tag(
        tags: Annotated[list[str], Field(min_length=1, description="Tags to look for.")],
        match_all: Annotated[bool, Field(description="Require all tags (default any).")] = False,
        k: Annotated[int, Field(ge=1, le=100)] = 20,
        namespace: Ns = None,
    ) -> list[dict[str, Any]]:
        """Memories carrying the tags, newest first, with snippets."""
        def go():
            out = rows(memory().find_by_tag(tags, namespace, match_all, k))
            for r in out:
                r["content"] = _snippet(r["content"], SNIPPET_CHARS)
            return out
        return _guard(go)

    @server.tool(annotations=destructive)
    def delete_document(
        document_id: Annotated[int, Field(description="Document id (from memory_search results).")],
        namespace: Ns = None,
    ) -> dict[str, Any]:
        """Delete a document and all its memories (not restorable)."""
        return _guard(lambda: {"deleted_memories": memory().delete_document(document_id, namespace)})

    @server.tool(annotations=read_only)
    def memory_neighbors(
        memory_id: Annotated[int, Field(description="A memory id from memory_search.")],
        before: Annotated[int, Field(ge=0, le=10)] = 1,
        after: Annotated[int, Field(ge=0, le=10)] = 1,
        namespace: Ns = None,
    ) -> list[dict[str, Any]]:
        """Full text of a memory and the chunks around it in its document, in order."""
        return _guard(lambda: rows(memory().neighbors(memory_id, namespace, before, after)))

    @server.tool(annotations=read_only)
    def memory_duplicates(
        similarity: Annotated[float, Field(ge=0.5, le=1.0, description="Cosine similarity for near duplicates.")] = 0.95,
        max_pairs: Annotated[int, Field(ge=1, le=500)] = 100,
        namespace: Ns = None,
    ) -> list[dict[str, Any]]:
        """Exact and near-duplicate memory pairs; a report, nothing is deleted."""
        return _guard(lambda: rows(memory().duplicates(namespace, similarity, max_pairs)))

    @server.tool(annotations=read_only)
    def memory_eval(
        golden_path: Annotated[str, Field(description="Golden query YAML file on this machine.")],
        out_dir: Annotated[str, Field(description="Directory for report.md and report.json.")] = "eval-report",
        k: Annotated[int, Field(ge=1, le=100)] = 10,
        namespace: Ns = None,
    ) -> dict[str, Any]:
        """Measure retrieval quality on golden queries (Precision, Recall, MRR, nDCG, Hit Rate at 1/3/5/10);
        returns the overall metrics and the report files written."""
        def go():
            from memsql.evaluate import eval_command

            if not os.path.exists(golden_path):
                raise ValueError(f"no such golden file: {golden_path}")
            report = eval_command(golden_path, out_dir, namespace=namespace or memory().namespace, k=k,
                                  dsn=memory().dsn)
            return {"overall": report["overall"], "files": report["files"]}
        return _guard(go)

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
