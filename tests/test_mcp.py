"""The MCP server end to end: the SDK's client over a real stdio subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

import memsql

REPO = Path(__file__).resolve().parents[1]


def run_session(dsn: str, script, env: dict | None = None, cwd: Path = REPO):
    """Run ``script(session)`` against `memsql mcp` on this test's database. The file tools' root ([mcp] root) is
    the temporary directory, where the tests write their files, unless ``env`` says otherwise (a value None removes
    the variable; MEMSQL_MCP_ROOT None: the default, the server's working directory ``cwd``)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    full = {k: v for k, v in os.environ.items()}
    full["MEMSQL_DSN"] = dsn
    full["MEMSQL_MCP_ROOT"] = tempfile.gettempdir()
    for key, value in (env or {}).items():
        if value is None:
            full.pop(key, None)
        else:
            full[key] = value
    params = StdioServerParameters(command=sys.executable, args=["-m", "memsql.cli", "mcp"], env=full, cwd=str(cwd))

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


def test_the_file_tools_read_and_write_only_under_the_root(dsn, conn, tmp_path):
    """memory_ingest, memory_export, memory_import and memory_eval stay under [mcp] root (by default the directory
    the server starts in), after resolving `..` and symlinks, a symlink inside an ingested folder included;
    memory_export's default folder under the data home is allowed too, and memory_import reads from it."""
    root, outside, home = tmp_path / "project", tmp_path / "outside", tmp_path / "home"
    (root / "notes").mkdir(parents=True)
    outside.mkdir()
    (root / "notes" / "plan.md").write_text("# Plan\n\nThe kiln fires on Thursdays.\n", "utf-8")
    (outside / "secret.md").write_text("# Secret\n\nThe vault code is 4471.\n", "utf-8")
    (outside / "golden.yaml").write_text("- query: vault code\n  relevant: [1]\n", "utf-8")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "notes" / "link.md").symlink_to(outside / "secret.md")

    async def script(session):
        async def call(tool, args):
            r = await session.call_tool(tool, args)
            return r.is_error, r.content[0].text

        out = {
            "absolute": await call("memory_ingest", {"paths": [str(outside / "secret.md")]}),
            "dotdot": await call("memory_ingest", {"paths": ["../outside/secret.md"]}),
            "symlinked": await call("memory_ingest", {"paths": ["escape/secret.md"]}),
            "folder": await call("memory_ingest", {"paths": ["notes"]}),   # holds link.md -> outside
        }
        (root / "notes" / "link.md").unlink()
        out["ingest"] = await call("memory_ingest", {"paths": ["notes"]})
        out["export_outside"] = await call("memory_export", {"namespace": "default", "path": str(outside / "a.jsonl")})
        out["export_symlinked"] = await call("memory_export", {"namespace": "default", "path": "escape/b.jsonl"})
        out["export"] = await call("memory_export", {"namespace": "default", "path": "dump.jsonl"})
        out["export_default"] = await call("memory_export", {"namespace": "default"})
        out["import_outside"] = await call("memory_import", {"path": str(outside / "secret.md"), "namespace": "c"})
        out["import"] = await call("memory_import", {"path": json.loads(out["export_default"][1])["path"],
                                                     "namespace": "copy"})
        out["eval_outside"] = await call("memory_eval", {"golden_path": str(outside / "golden.yaml")})
        return out

    out = run_session(dsn, script, env={"MEMSQL_MCP_ROOT": None, "MEMSQL_HOME": str(home)}, cwd=root)
    for case in ("absolute", "dotdot", "symlinked", "folder", "export_outside", "export_symlinked", "import_outside",
                 "eval_outside"):
        failed, text = out[case]
        assert failed, (case, text)
        assert f"[mcp] root ({root})" in text and "memsql mcp --root" in text and "MEMSQL_MCP_ROOT" in text, text
        assert "Traceback" not in text and "\n" not in text
    assert "resolves to" in out["symlinked"][1] and "link.md" in out["folder"][1]
    assert not (outside / "a.jsonl").exists() and not (outside / "b.jsonl").exists()
    for case in ("ingest", "export", "export_default", "import"):
        assert not out[case][0], (case, out[case][1])
    assert json.loads(out["ingest"][1])["inserted"] == 1
    assert (root / "dump.jsonl").is_file()
    assert Path(json.loads(out["export_default"][1])["path"]).parent == home / "exports"
    assert json.loads(out["import"][1])["memories"] == 1
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE content LIKE '%%4471%%'").fetchone()[0] == 0


def test_memory_search_rows_and_errors_are_those_of_the_other_surfaces(dsn, memory):
    """document_rank and valid_to as Python, SQL, the CLI and the web API return them (superseded_at kept as its
    former name), an error named once, a NUL in a query a blank, an empty namespace refused and the times
    PostgreSQL reads taken, with the hint and the message of the Python client."""
    from memsql import calls
    from memsql.errors import InvalidArgument

    lens = memory.add("The camera lens is cleaned every Friday.")
    memory.add("The camera strap was replaced in May.")
    old = memory.add("The lens cap of the projector is blue.")
    new = memory.update(old, "The lens cap of the projector is red.")
    python = memory.search("camera lens", k=2, group_by="document")
    superseded = next(r for r in memory.search("projector lens cap", k=5, include_superseded=True)
                      if r.memory_id == old)
    with pytest.raises(InvalidArgument) as empty:
        memory.search("camera", namespace="")

    async def script(session):
        tools = {t.name: t for t in (await session.list_tools()).tools}
        out = {
            "grouped": payload(await session.call_tool("memory_search", {"query": "camera lens", "k": 2,
                                                                         "group_by": "document"})),
            "every": payload(await session.call_tool("memory_search", {"query": "projector lens cap", "k": 5,
                                                                       "include_superseded": True})),
            "nul": payload(await session.call_tool("memory_search", {"query": "camera\x00lens", "k": 1})),
            "times": [json.loads((await session.call_tool("memory_search", {"query": "camera lens", "as_of": t}))
                                 .content[0].text) for t in ("yesterday", "now", "epoch")],
        }
        for case, tool, args in [
                ("group_by", "memory_search", {"query": "camera", "group_by": "chapter"}),
                ("empty", "memory_search", {"query": "camera", "namespace": ""}),
                ("blank", "memory_add", {"content": "A note for nowhere.", "namespace": "  "}),
                ("bad_time", "memory_search", {"query": "camera", "as_of": "not a date"})]:
            r = await session.call_tool(tool, args)
            out[case] = (r.is_error, r.content[0].text)
        return tools, out

    tools, out = run_session(dsn, script)
    assert [(r["memory_id"], r["document_rank"]) for r in out["grouped"]] == \
        [(r.memory_id, r.document_rank) for r in python] and [r.document_rank for r in python] == [1, 2]
    row = next(r for r in out["every"] if r["memory_id"] == old)
    assert (row["valid_to"], row["superseded_by"]) == (superseded.valid_to.isoformat(), new)
    assert row["superseded_at"] == row["valid_to"]
    assert [r["memory_id"] for r in out["nul"]] == [lens]
    assert out["times"][0]["results"] == [] and out["times"][2]["results"] == []   # yesterday, 1970: not stored yet
    assert [r["memory_id"] for r in out["times"][1]["results"]][:1] == [lens]
    failed, text = out["group_by"]
    assert failed and text.startswith("memory_search: group_by must be") and text.count("memory_search") == 1, text
    assert out["empty"] == (True, "memory_search: " + str(empty.value).removeprefix("search: "))
    assert out["blank"][0] and out["blank"][1].startswith("memory_add: namespace must not be blank, got '  '")
    assert out["bad_time"][0] and "(argument as_of)" in out["bad_time"][1] and calls.TIME_HINT in out["bad_time"][1]
    k = tools["memory_search"].input_schema["properties"]["k"]
    assert (k["default"], k["maximum"]) == (8, 50) and "sized for a model's context" in k["description"]
