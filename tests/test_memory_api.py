"""The memory-axis verbs through Python, the CLI and MCP: the same SQL functions, exact outcomes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOW = datetime.now(timezone.utc)


def test_tag_forget_restore_round_trip(memory, conn):
    old = memory.add("Quarterly sales dipped in the northern region.", knowledge_type="news",
                     source_date=NOW - timedelta(days=200))
    keep = memory.add("Always encrypt backups at rest.", knowledge_type="principle")
    assert memory.tag(memory_id=keep, importance=0.9, add_tags=["security"]) == 1
    assert [t.memory_id for t in memory.find_by_tag(["security"])] == [keep]

    dry = memory.forget()
    assert [c.memory_id for c in dry] == [old] and not dry[0].archived
    assert "faded" in dry[0].reason
    assert conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0] == 2  # dry run: nothing moved
    done = memory.forget(dry_run=False)
    assert [(c.memory_id, c.archived) for c in done] == [(old, True)]
    assert [r["memory_id"] for r in memory.archive()] == [old]
    assert all(r.memory_id != old for r in memory.search("sales in the north", touch=False))

    restored = memory.restore([old])
    assert [(r.memory_id, r.restored) for r in restored] == [(old, True)]
    # re-embedded: the dense arm finds it again with a paraphrase
    hit = memory.search("revenue went down up north", touch=False, lexical_weight=0.0, memory_rerank=False)
    assert hit[0].memory_id == old and hit[0].dense_rank == 1
    assert all(h.ok for h in memory.health() if h.check == "memories_without_embedding")


def test_neighbors_duplicates_delete(memory, tmp_path):
    long = "\n\n".join(f"Section {i}. " + "filler words " * 120 for i in range(4))
    (tmp_path / "long.md").write_text("# Long\n\n" + long)
    memory.ingest([tmp_path / "long.md"])
    first = memory.search("Section 2.", touch=False, query_embeddings=[])[0]
    window = memory.neighbors(first.memory_id)
    assert [n.is_target for n in window].count(True) == 1
    assert [n.chunk_index for n in window] == sorted(n.chunk_index for n in window)
    a = memory.add("The build server is called hydra.")
    b = memory.add("the build   server is called HYDRA.")
    pairs = memory.duplicates()
    assert any((p.memory_id, p.duplicate_of, p.kind) == (max(a, b), min(a, b), "exact") for p in pairs)
    n = memory.delete_document(first.document_id)
    assert n >= 2 and memory.neighbors.__name__ == "neighbors"


def run_cli(args, dsn):
    env = {**os.environ, "MEMSQL_DSN": dsn}
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=REPO)


def test_cli_forget_is_a_dry_run_unless_applied(memory, dsn):
    old = memory.add("Stale status update from last year.", knowledge_type="news",
                     source_date=NOW - timedelta(days=365))
    dry = json.loads(run_cli(["forget"], dsn).stdout)
    assert [(r["memory_id"], r["archived"]) for r in dry] == [(old, False)]
    applied = json.loads(run_cli(["forget", "--apply"], dsn).stdout)
    assert [(r["memory_id"], r["archived"]) for r in applied] == [(old, True)]
    lines = run_cli(["archive", "export", "--jsonl"], dsn).stdout.strip().splitlines()
    assert [json.loads(line)["memory_id"] for line in lines] == [old]
    back = json.loads(run_cli(["restore", str(old)], dsn).stdout)
    assert back[0]["restored"] is True
    bad = run_cli(["tag", "--memory", "999999", "--importance", "0.5"], dsn)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr


def test_python_arguments_are_taken_in_the_form_their_type_needs(memory, tmp_path, monkeypatch):
    import numpy as np
    import pytest

    from memsql.errors import InvalidArgument

    mid = memory.add("The staging cluster runs on three nodes", tags="infra")   # one tag, not five letters
    assert memory.get(mid)[0].tags == ["infra"]
    memory.tag(memory_id=mid, add_tags="prod")
    assert memory.get(str(mid))[0].tags == ["infra", "prod"]
    assert [r.memory_id for r in memory.search("staging cluster", tags="infra", k=np.int64(3))] == [mid]
    assert [r.memory_id for r in memory.search("staging cluster", k=5.0)] == [mid]
    for bad, said in ((dict(query="staging", k=5.5), "k must be a whole number, got 5.5"),
                      (dict(query="staging", k=float("inf")), "k must be a whole number, got inf"),
                      (dict(query=None), "query must be text (str), got None"),
                      (dict(query=b"staging"), "query must be text (str), got bytes")):
        with pytest.raises(InvalidArgument, match=said.replace("(", r"\(").replace(")", r"\)")):
            memory.search(**bad)
    with pytest.raises(InvalidArgument, match="content must be text"):
        memory.add(123)

    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "note.md").write_text("# Boiler\n\nServiced every October.\n", "utf-8")
    (folder / "other.md").write_text("# Other\n\nNot named by the caller.\n", "utf-8")
    monkeypatch.chdir(folder)
    summary = memory.ingest("note.md", namespace="one-path")   # one path as a string: that file alone
    assert (summary.inserted, summary.failed) == (1, [])
    summary = memory.ingest(Path("note.md"), namespace="one-path-2")
    assert (summary.inserted, summary.failed) == (1, [])


def test_async_client_opens_on_first_use_and_says_when_closed(dsn, embedder):
    import asyncio

    from memsql.aio import AsyncMemory
    from memsql.errors import MemsqlError

    async def main():
        m = AsyncMemory(dsn=dsn, embedder=embedder, pool_size=2)
        added = await m.add("The kettle is descaled every month")
        found = await asyncio.gather(*[m.search("kettle descaled", k=1) for _ in range(4)])
        await m.close()
        try:
            await m.search("kettle")
        except MemsqlError as exc:
            return added, found, str(exc)
        return added, found, None

    added, found, closed = asyncio.run(main())
    assert all(r[0].memory_id == added for r in found)
    assert closed == "this AsyncMemory is closed (make a new one: async with AsyncMemory() as m: ...)"
