"""One table of calls (memsql.calls) behind every surface: the table matches the SQL functions of a migrated
database (names, types, defaults), the configuration's defaults are the SQL defaults, and every verb of the
README's name table exists on every surface (Python sync and async, CLI, MCP) with the table's arguments."""

from __future__ import annotations

import asyncio
import inspect
import re
from pathlib import Path

import pytest

from memsql import calls

REPO = Path(__file__).resolve().parents[1]
VERBS = calls.surfaces()

# each surface's own parameters: how a result is shown, never an argument of the verb
CLI_OWN = {"json_out", "sql", "explain", "rerank_model", "strategy",
           "target", "tag_names"}  # memsql tag MEMORY_ID TAG...: positional spellings of the table's arguments
MCP_OWN = {"full_text", "snippet_chars", "create"}

_TYPES = {"timestamp with time zone": "timestamptz", "timestamp with time zone[]": "timestamptz[]"}


def _sql_default(value, sql_type: str) -> str:
    """The text pg_get_function_arguments shows for a table default."""
    sql_type = {"timestamptz": "timestamp with time zone"}.get(sql_type, sql_type)
    if value is None:
        return f"NULL::{sql_type}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return f"'{value}'::{sql_type}"


def _signature(conn, function: str) -> list[tuple[str, str, str | None]]:
    """(name, type, default text) of each input argument of memsql.<function> (one overload)."""
    rows = conn.execute(
        "SELECT pg_get_function_arguments(p.oid) FROM pg_proc p WHERE p.pronamespace = 'memsql'::regnamespace "
        "AND p.proname = %s", (function,)).fetchall()
    assert len(rows) == 1, f"memsql.{function}: {len(rows)} functions of that name"
    out = []
    for part in re.split(r",\s*(?![^()]*\))", rows[0][0]):
        m = re.fullmatch(r"(\w+) (.+?)(?: DEFAULT (.+))?", part.strip())
        name, sql_type, default = m.group(1), m.group(2), m.group(3)
        out.append((name, _TYPES.get(sql_type, sql_type), default))
    return out


@pytest.mark.parametrize("verb", [v for v in calls.VERBS.values() if v.function and not v.query],
                         ids=lambda v: v.name)
def test_table_matches_the_sql_function(conn, verb):
    got = _signature(conn, verb.function)
    want = [(a.name, a.type, None if a.required else _sql_default(a.default, a.type)) for a in verb.sql_args]
    assert got == want


@pytest.mark.parametrize("verb", [v for v in calls.VERBS.values() if v.query], ids=lambda v: v.name)
def test_view_verbs_read_existing_relations(conn, verb):
    found = conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = 'memsql'::regnamespace "
                         "AND relname = %s", (verb.function,)).fetchone()[0]
    assert found == 1
    call = verb.call({})
    conn.execute(call.sql, call.params).fetchall()  # runs as written (no rows needed)


def test_config_defaults_are_the_sql_defaults():
    from memsql.config import SCHEMA

    linked = [a for v in calls.VERBS.values() for a in v.sql_args if a.config]
    assert {a.name for a in linked} >= {"k", "rrf_k", "fusion", "bm25_k1", "posting_budget", "memory_rerank"}
    for a in linked:
        section, key = a.config.rsplit(".", 1)
        default = SCHEMA[section][key][0]
        assert (None if default == a.unset else default) == a.default, a.config


def test_table_is_not_empty():
    assert len(VERBS) >= 10 and {"search", "add", "tag", "forget", "restore", "stats"} <= {v.name for v in VERBS}


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_python_clients_take_the_verbs_arguments(verb):
    from memsql import AsyncMemory, Memory

    sync, coro = getattr(Memory, verb.name), getattr(AsyncMemory, verb.name)
    assert callable(sync) and asyncio.iscoroutinefunction(coro)
    assert inspect.signature(sync) == inspect.signature(coro)
    params = {n: p for n, p in inspect.signature(sync).parameters.items() if n != "self"}
    explicit = {n for n, p in params.items() if p.kind is not p.VAR_KEYWORD}
    rest = any(p.kind is p.VAR_KEYWORD for p in params.values())
    wanted = {a.name for a in verb.on("python")}
    assert explicit <= wanted, f"Memory.{verb.name} has arguments outside memsql.calls: {explicit - wanted}"
    missing = wanted - explicit
    assert not missing or (rest and all(verb.arg(n).sql for n in missing)), missing
    for name in explicit:
        arg, p = verb.arg(name), params[name]
        assert (p.default is p.empty) == arg.required, f"{verb.name}({name}): required in one place only"
        if not arg.required:
            assert p.default is None, f"{verb.name}({name}): the default lives in memsql.calls, not the signature"


def _scalar(arg) -> tuple[object, bool]:
    """(Python type of one value, whether the argument takes a list) of a table argument."""
    from datetime import datetime

    py = arg.python_type
    if getattr(py, "__origin__", None) is list:
        return py.__args__[0], True
    if py == "list of pathlib.Path":
        return Path, True
    return {datetime: str, "pathlib.Path": Path}.get(py, py), False


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_cli_command_takes_the_verbs_arguments(verb):
    import typing

    from typer.main import get_command

    from memsql.cli import app

    command = get_command(app)
    for word in verb.cli.split():   # "namespace list": the command list of group namespace
        command = command.commands[word]
    params = {p.name: p for p in command.params}
    wanted = {a.name: a for a in verb.on("cli")}
    assert set(params) - CLI_OWN == set(wanted), f"memsql {verb.cli}: arguments differ from memsql.calls"
    assert ("sql" in params) == (verb.function is not None)
    for name, arg in wanted.items():
        p = params[name]
        scalar, many = _scalar(arg)
        annotation = p.type_descriptor.annotation
        got = typing.get_args(annotation)[0] if typing.get_origin(annotation) is list else annotation
        assert (got, typing.get_origin(annotation) is list) == (scalar, many), f"memsql {verb.cli} {name}"
        assert p.required == arg.required, f"memsql {verb.cli} {name}: required in one place only"


_JSON = {str: "string", int: "integer", float: "number", bool: "boolean", Path: "string"}


def _schema_type(prop: dict) -> tuple[str, str | None]:
    options = prop.get("anyOf", [prop])
    kinds = [o for o in options if o.get("type") != "null"]
    kind = kinds[0]
    return kind["type"], kind.get("items", {}).get("type")


@pytest.mark.parametrize("verb", VERBS, ids=lambda v: v.name)
def test_mcp_tool_takes_the_verbs_arguments(verb):
    from memsql.mcp_server import build_server

    tools = {t.name: t for t in asyncio.run(build_server().list_tools())}
    schema = tools[verb.mcp].input_schema
    props = schema["properties"]
    wanted = {a.name: a for a in verb.on("mcp")}
    assert set(props) - MCP_OWN == set(wanted), f"MCP {verb.mcp}: arguments differ from memsql.calls"
    assert set(schema.get("required", [])) == {n for n, a in wanted.items() if a.required}
    for name, arg in wanted.items():
        kind, items = _schema_type(props[name])
        scalar, many = _scalar(arg)
        assert (kind, items) == (("array", _JSON[scalar]) if many else (_JSON[scalar], None)), f"MCP {verb.mcp} {name}"
        assert props[name]["description"].startswith(arg.help), name


def test_search_tags_reach_every_surface():
    """The filter that went missing unnoticed (tags on the CLI search and MCP memory_search)."""
    search = calls.VERBS["search"]
    assert search.arg("tags").on == calls.ALL
    from memsql.cli import app
    from typer.main import get_command

    assert "--tag" in {o for p in get_command(app).commands["search"].params for o in p.opts}


def test_every_time_argument_says_the_same_forms_on_every_surface():
    """One rule for times (memsql.calls.TIME_FORMS: text PostgreSQL reads, ISO 8601 first; without a zone, UTC) in
    every argument's help, hence the CLI's, the MCP tools' and the web API's descriptions."""
    pytest.importorskip("starlette")
    from memsql.mcp_server import build_server
    from memsql.web.api import openapi

    times = [(v, a) for v in calls.VERBS.values() for a in v.args if a.type == "timestamptz"]
    assert {a.name for _, a in times} == {"as_of", "reference_time", "source_date"}
    assert all(calls.TIME_FORMS in a.help for _, a in times)
    tools = {t.name: t for t in asyncio.run(build_server().list_tools())}
    doc = openapi()
    for verb, arg in times:
        if verb.mcp and "mcp" in arg.on:
            assert calls.TIME_FORMS in tools[verb.mcp].input_schema["properties"][arg.name]["description"]
        path = doc["paths"].get(f"/api/{verb.name}")
        if path:
            op = next(iter(path.values()))
            params = {p["name"]: p for p in op.get("parameters", [])} or \
                op["requestBody"]["content"]["application/json"]["schema"]["properties"]
            assert calls.TIME_FORMS in params[arg.name]["description"], (verb.name, arg.name)


def test_an_empty_namespace_and_a_bad_time_are_refused_alike_on_every_surface(dsn, embedder):
    """Python (sync and async), the CLI and the web API give the same message and hint (MCP: tests/test_mcp.py)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from memsql import AsyncMemory, Memory
    from memsql.errors import InvalidArgument, MemsqlError
    from memsql.web import create_app

    cases = [({"namespace": ""}, InvalidArgument), ({"namespace": " "}, InvalidArgument),
             ({"as_of": "not a date"}, MemsqlError)]
    with Memory(dsn=dsn, embedder=embedder) as mem:
        mem.add("The porch light is on a timer.")
        python = []
        for kw, err in cases:
            with pytest.raises(err) as e:
                mem.search("porch light", **kw)
            python.append((e.value.message, e.value.hint))

    async def run_async():
        out = []
        async with AsyncMemory(dsn=dsn, embedder=embedder) as amem:
            for kw, err in cases:
                with pytest.raises(err) as e:
                    await amem.search("porch light", **kw)
                out.append((e.value.message, e.value.hint))
        return out

    assert asyncio.run(run_async()) == python
    with TestClient(create_app(dsn=dsn, embedder=embedder, warm=False), base_url="http://127.0.0.1:8765") as client:
        web = []
        for kw, _ in cases:
            r = client.get("/api/search", params={"query": "porch light", **kw})
            assert r.status_code == 400, r.text
            web.append((r.json()["error"]["message"], r.json()["error"]["hint"]))
    assert web == python
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_WORKER_AUTOSTART": "false"}
    for (kw, _), (message, hint) in zip(cases[:2], python):
        out = subprocess.run([sys.executable, "-m", "memsql.cli", "search", "porch light", "-n", kw["namespace"]],
                             capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
        assert out.returncode == 1 and out.stderr == f"memsql: error: {message} ({hint})\n", out.stderr
    assert calls.TIME_HINT == python[2][1]
