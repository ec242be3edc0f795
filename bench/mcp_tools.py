"""Size of the MCP server's tools/list answer: what every agent carries in its context for memsql's tools.

    .venv/bin/python bench/mcp_tools.py [--label after] [--read-only]

Starts ``memsql mcp`` over stdio with the MCP SDK's client (no database is needed for tools/list: the server
connects on the first tool call), asks for tools/list, and measures the JSON of the tools as the client got them
(``model_dump(by_alias=True, exclude_none=True, mode="json")``, compact separators): characters in all and per
tool, and the share of descriptions (tool and parameter descriptions). Rows merge into bench/results/mcp_tools.json
by label; mcp_tools.md is rewritten from the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "results" / "mcp_tools.json"


async def tools_list(read_only: bool) -> list[dict]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = dict(os.environ)
    env.setdefault("MEMSQL_DSN", "host=/nonexistent dbname=none")   # never reached: tools/list needs no database
    args = ["-m", "memsql.cli", "mcp"] + (["--read-only"] if read_only else [])
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(REPO))
    async with stdio_client(params, errlog=open(os.devnull, "w")) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in result.tools]


def _descriptions(tool: dict) -> int:
    props = tool.get("inputSchema", {}).get("properties", {})
    return len(tool.get("description", "")) + sum(len(p.get("description", "")) for p in props.values())


def measure(read_only: bool) -> dict:
    tools = asyncio.run(tools_list(read_only))
    sizes = {t["name"]: len(json.dumps(t, separators=(",", ":"), ensure_ascii=False)) for t in tools}
    return {
        "tools": len(tools),
        "chars": len(json.dumps({"tools": tools}, separators=(",", ":"), ensure_ascii=False)),
        "description_chars": sum(_descriptions(t) for t in tools),
        "per_tool": dict(sorted(sizes.items(), key=lambda kv: -kv[1])),
        "read_only": read_only,
    }


def write_md(rows: dict) -> None:
    lines = ["# MCP tools/list size", "", "Written by bench/mcp_tools.py: the JSON of tools/list as an MCP client "
             "receives it (compact), in characters.", "",
             "| label | tools | tools/list chars | of which descriptions | largest tool |", "|---|---|---|---|---|"]
    for label, r in rows.items():
        top = next(iter(r["per_tool"].items()))
        lines.append(f"| {label} | {r['tools']} | {r['chars']:,} | {r['description_chars']:,} | "
                     f"{top[0]} ({top[1]:,}) |")
    OUT.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current")
    parser.add_argument("--read-only", action="store_true")
    opts = parser.parse_args()
    row = measure(opts.read_only)
    rows = json.loads(OUT.read_text()) if OUT.exists() else {}
    rows[opts.label] = row
    OUT.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    write_md(rows)
    print(json.dumps({k: v for k, v in row.items() if k != "per_tool"}))


if __name__ == "__main__":
    main()
