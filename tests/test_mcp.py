"""The MCP server end to end: the SDK's client over a real stdio subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

import memsql

REPO = Path(__file__).resolve().parents[1]


def run_session(dsn: str, script):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items()}
    env["MEMSQL_DSN"] = dsn
    params = StdioServerParameters(command=sys.executable, args=["-m", "memsql.cli", "mcp"], env=env, cwd=str(REPO))

    async def main():
        async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await script(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=180))


def terminate_other_backends(dsn: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid()")


def payload(result):
    """The answer of a tool: one compact JSON text (a list tool's rows under "results")."""
    assert not result.is_error, result.content
    assert len(result.content) == 1 and result.structured_content is None
    data = json.loads(result.content[0].text)
    return data["results"] if isinstance(data, dict) and set(data) == {"results"} else data


def test_list_add_search_over_stdio(dsn):
    info = None

    async def script(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        added = payload(await session.call_tool("memory_add", {
            "content": "The on-call rotation switches every Monday at 09:00 UTC.", "knowledge_type": "principle"}))
        # a burst of parallel calls queues on the pool and completes
        burst = await asyncio.gather(*[
            session.call_tool("memory_search", {"query": "when does on-call rotation change", "k": 3})
            for _ in range(6)])
        bad = await session.call_tool("memory_search", {"query": "x", "k": 0})
        bad_type = await session.call_tool("memory_add", {"content": "hello", "knowledge_type": "gossip"})
        forget = payload(await session.call_tool("memory_forget", {}))
        # the server's pooled connections die (server restart, idle timeout): the next call still works
        await asyncio.to_thread(terminate_other_backends, dsn)
        after = payload(await session.call_tool("memory_search", {"query": "on-call rotation", "k": 1}))
        nonlocal info
        info = session.server_info
        return tools, added, [payload(r) for r in burst], bad, bad_type, forget, after

    tools, added, bursts, bad, bad_type, forget, after = run_session(dsn, script)
    assert info.name == "memsql" and info.version == memsql.__version__ != ""
    assert forget == {"results": [], "note": "nothing has faded in 'default'"}  # dry run by default
    assert after[0]["memory_id"] == added["memory_id"]
    assert {"memory_search", "memory_add", "memory_ingest", "memory_stats", "memory_tag", "memory_forget",
            "memory_restore", "memory_health", "find_by_tag", "delete_document", "memory_neighbors",
            "memory_duplicates", "memory_eval"} <= set(tools)
    assert tools["memory_forget"].annotations.destructive_hint is True
    assert tools["memory_search"].annotations.read_only_hint is True
    assert "k" in tools["memory_search"].input_schema["properties"]
    for hits in bursts:
        assert hits[0]["memory_id"] == added["memory_id"]
        assert len(hits[0]["snippet"]) <= 300
    assert bad.is_error
    assert bad_type.is_error and "unknown knowledge_type" in bad_type.content[0].text


def test_update_and_history_over_stdio(dsn):
    async def script(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        old = payload(await session.call_tool("memory_add", {"content": "The launch date is May 4."}))["memory_id"]
        upd = payload(await session.call_tool("memory_update", {"memory_id": old,
                                                                "content": "The launch date moved to June 1."}))
        hist = payload(await session.call_tool("memory_history", {"memory_id": old}))
        now = payload(await session.call_tool("memory_search", {"query": "launch date", "k": 3}))
        every = payload(await session.call_tool("memory_search", {"query": "launch date", "k": 3,
                                                                  "include_superseded": True}))
        stale = await session.call_tool("memory_update", {"memory_id": old, "content": "again"})
        return tools, old, upd, hist, now, every, stale

    tools, old, upd, hist, now, every, stale = run_session(dsn, script)
    new = upd["memory_id"]
    assert upd == {"memory_id": new, "supersedes": old}
    assert [(h["version"], h["memory_id"], h["is_current"]) for h in hist] == [(1, old, False), (2, new, True)]
    assert [r["memory_id"] for r in now] == [new] and "superseded_by" not in now[0]
    marked = {r["memory_id"]: r.get("superseded_by") for r in every}
    assert marked == {old: new, new: None}
    assert stale.is_error and "not the current version" in stale.content[0].text
    assert tools["memory_history"].annotations.read_only_hint is True
    assert tools["memory_update"].annotations.destructive_hint is False


def test_an_empty_search_names_what_the_importance_cutoff_left_out(dsn):
    async def script(session):
        await session.call_tool("memory_add", {"content": "Gerald the office plant needs water on Mondays",
                                               "importance": 0.2, "namespace": "mcp-low", "create": True})
        return payload(await session.call_tool("memory_search", {"query": "Gerald plant water",
                                                                 "namespace": "mcp-low"}))

    empty = run_session(dsn, script)
    assert empty["results"] == [] and "1 memories with importance below 0.3 are left out" in empty["note"], empty


def test_a_note_that_names_memory_rerank_is_followed_by_the_tool(dsn):
    """An empty search names the importance cutoff and memory_rerank => false; the tool takes that argument."""
    async def script(session):
        payload(await session.call_tool("memory_add", {"content": "The hallway lightbulb flickers at night",
                                                       "importance": 0.1}))
        hidden = json.loads((await session.call_tool("memory_search", {"query": "hallway lightbulb"})).content[0].text)
        shown = payload(await session.call_tool("memory_search", {"query": "hallway lightbulb",
                                                                  "memory_rerank": False}))
        return hidden, shown

    hidden, shown = run_session(dsn, script)
    assert hidden["results"] == [] and "memory_rerank => false" in hidden["note"], hidden
    assert [r["snippet"] for r in shown] == ["The hallway lightbulb flickers at night"], shown
