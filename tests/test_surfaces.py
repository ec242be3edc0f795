"""The README's name table: every row exists on every surface (SQL, Python, CLI, MCP)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def name_table() -> list[tuple[str, str, str, str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## One name, four surfaces", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and not cells[0].startswith(("SQL", "---")):
            rows.append(tuple(cells))
    return rows


ROWS = name_table()


def test_table_is_not_empty():
    assert len(ROWS) >= 4


@pytest.mark.parametrize("sql, python, cli, mcp", ROWS)
def test_row_exists_on_every_surface(conn, sql, python, cli, mcp):
    from typer.main import get_command

    from memsql.api import AsyncMemory, Memory
    from memsql.cli import app
    from memsql.mcp_server import build_server

    m = re.match(r"(\w+)(\(|\s*\(view\))", sql)
    if m:  # "(ingest pipeline)" has no SQL object of its own
        name = m.group(1)
        found = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE pronamespace = 'memsql'::regnamespace AND proname = %s "
            "UNION ALL SELECT count(*) FROM pg_class WHERE relnamespace = 'memsql'::regnamespace AND relname = %s",
            (name, name)).fetchall()
        assert sum(r[0] for r in found) >= 1, f"SQL {name} missing"
    else:
        assert sql in ("(ingest pipeline)", "(evaluation)")
    method = re.match(r"Memory\.(\w+)\(\)", python).group(1)
    assert callable(getattr(Memory, method)) and asyncio.iscoroutinefunction(getattr(AsyncMemory, method))
    words = cli.split()
    assert words[0] == "memsql"
    command = get_command(app)
    for word in words[1:]:
        command = command.commands[word]  # KeyError when the CLI lacks the verb
    tools = {t.name for t in asyncio.run(build_server().list_tools())}
    assert mcp in tools
