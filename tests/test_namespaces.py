"""Namespaces as a whole: list, rename, drop (dry run first), export to JSON lines and import into another namespace
or database, on SQL, Python and the CLI. The round trip keeps search results, versions, access counts and archive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from memsql.errors import InvalidArgument, NotFound

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["when does the on-call rotation change", "which database hosts staging", "deploy freeze dates",
           "kubernetes ingress controller", "budget of the launch"]


def _fill(mem, namespace: str, tmp_path: Path) -> dict:
    """A namespace with what an export must carry: several knowledge types, tags, importance, metadata, a custom
    knowledge type, an ingested multi-chunk document, a superseded version, an archived memory, access counts."""
    with psycopg.connect(mem.dsn, autocommit=True) as conn:
        conn.execute("SELECT memsql.knowledge_type_set('runbook', 30, 'Operational runbooks')")
    ids = {
        "rotation": mem.add("The on-call rotation switches every Monday at 09:00 UTC.", namespace=namespace,
                            knowledge_type="principle", tags=["ops", "oncall"], importance=0.9),
        "staging": mem.add("The staging database lives on host pg-staging-3.", namespace=namespace,
                           knowledge_type="runbook", tags=["db"], metadata={"owner": "infra", "ticket": 42}),
        "freeze": mem.add("Deploy freeze from December 20 to January 3.", namespace=namespace, knowledge_type="news"),
        "faded": mem.add("Lunch is at noon on Fridays.", namespace=namespace, importance=0.05),
        "budget": mem.add("The launch budget is 30k.", namespace=namespace),
    }
    ids["budget_v2"] = mem.update(ids["budget"], "The launch budget moved to 45k.", namespace=namespace)
    doc = tmp_path / "ingress.md"
    doc.write_text("# Ingress\n\n" + "\n\n".join(
        f"Section {i}: the kubernetes ingress controller routes host {i}.example.com to service {i}. " * 12
        for i in range(6)), encoding="utf-8")
    summary = mem.ingest([doc], namespace=namespace)
    assert summary.chunks >= 3
    archived = mem.forget(namespace=namespace, importance_threshold=0.1, dry_run=False)
    assert [r.memory_id for r in archived] == [ids["faded"]]
    for q in QUERIES[:3]:
        mem.search(q, namespace=namespace)   # access counts
    return ids


def _ranking(mem, namespace: str) -> list[list[tuple[int, float]]]:
    return [[(r.memory_id, round(r.score, 5)) for r in mem.search(q, namespace=namespace, k=8, touch=False)]
            for q in QUERIES]


def _same(got, want) -> None:
    """The same memories in the same order for every query, the same scores (time decay moves while the test runs:
    scores agree to 1e-4)."""
    assert [[i for i, _ in q] for q in got] == [[i for i, _ in q] for q in want]
    for a, b in zip(got, want):
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-4, abs=1e-5)


def _state(conn_dsn: str, namespace: str) -> dict:
    with psycopg.connect(conn_dsn) as conn:
        q = lambda sql: conn.execute(sql, {"ns": namespace}).fetchall()  # noqa: E731
        return {
            "memories": q("SELECT id, document_id, chunk_index, content, knowledge_type, importance, tags, topics, "
                          "metadata, source_date, created_at, valid_to, superseded_by, ts_config::text, "
                          "embedding IS NULL FROM memsql.memories WHERE namespace = %(ns)s ORDER BY id"),
            "documents": q("SELECT id, source_key, source_uri, adapter, title, content_hash, knowledge_type, tags, "
                           "metadata, created_at FROM memsql.documents WHERE namespace = %(ns)s ORDER BY id"),
            "access": q("SELECT memory_id, access_count, last_accessed_at FROM memsql.memory_access "
                        "WHERE namespace = %(ns)s ORDER BY memory_id"),
            "archive": q("SELECT id, content, reason, score FROM memsql.archive WHERE namespace = %(ns)s ORDER BY id"),
            "stats": q("SELECT doc_count, total_len FROM memsql.namespace_stats WHERE namespace = %(ns)s"),
            "postings": q("SELECT count(*), sum(tf) FROM memsql.postings WHERE namespace = %(ns)s"),
        }


@pytest.fixture
def other_dsn(memsql_server, dsn):
    """A second fresh memsql database on the same server (another home or server, as far as memsql can tell)."""
    name = "memsql_ns_other"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {memsql_server.template_dbname}")
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    info["dbname"] = name
    yield psycopg.conninfo.make_conninfo(**info)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_round_trip_into_another_database_keeps_search_results(memory, embedder, other_dsn, tmp_path):
    from memsql.client import Memory

    ids = _fill(memory, "src", tmp_path)
    before = _ranking(memory, "src")
    state = _state(memory.dsn, "src")
    out = tmp_path / "src.jsonl"
    exported = memory.namespace_export("src", vectors=True, path=out)
    lines = out.read_text(encoding="utf-8").splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds[0] == "header" and kinds[-1] == "end" and len(lines) == exported["lines"]
    assert exported["memories"] == len(state["memories"]) and exported["archive"] == 1
    assert kinds.count("memory") == len(state["memories"]) and kinds.count("document") == len(state["documents"])
    assert "runbook" in {json.loads(line).get("name") for line in lines if '"knowledge_type"' in line[:40]}

    with Memory(dsn=other_dsn, embedder=embedder) as other:
        got = other.namespace_import(out, namespace="dst")
        assert (got["documents"], got["memories"], got["archive"], got["embedded"]) == (
            len(state["documents"]), len(state["memories"]), 1, 0)
        assert _state(other_dsn, "dst") == state        # every row, id, version, access count and BM25 statistic
        _same(_ranking(other, "dst"), before)
        assert [v.memory_id for v in other.history(ids["budget"], namespace="dst")] == [ids["budget"], ids["budget_v2"]]
        assert other.restore([ids["faded"]], namespace="dst")[0].restored
        # the id sequences moved past the imported ids: a new memory cannot take one
        assert other.add("A new fact after the import.", namespace="dst") > max(ids.values())
        with psycopg.connect(other_dsn) as conn:
            assert conn.execute("SELECT half_life_days FROM memsql.knowledge_types WHERE name = 'runbook'"
                                ).fetchone() == (30.0,)


def test_import_without_vectors_embeds_again_and_same_results(memory, tmp_path):
    _fill(memory, "src", tmp_path)
    before = _ranking(memory, "src")
    out = tmp_path / "plain.jsonl"
    memory.namespace_export("src", path=out)
    assert '"embedding"' not in out.read_text(encoding="utf-8")
    got = memory.namespace_import(out, namespace="copy")
    assert got["embedded"] == got["memories"] - 0 and got["vectors"] is False
    _same(_ranking(memory, "copy"), before)


def test_list_rename_drop(memory, tmp_path):
    ids = _fill(memory, "src", tmp_path)
    memory.add("Another namespace's fact.", namespace="other")
    listed = {r.namespace: r for r in memory.namespace_list()}
    assert set(listed) == {"src", "other"}
    src = listed["src"]
    assert (src.superseded, src.archived) == (1, 1)
    assert src.memories == len(_state(memory.dsn, "src")["memories"]) - 1
    assert memory.namespace_list(namespace="nope") == []
    before = _ranking(memory, "src")
    state = _state(memory.dsn, "src")

    moved = {r.item: r.count for r in memory.namespace_rename("src", "renamed")}
    assert moved == {"documents": src.documents, "memories": src.memories + 1, "archive": 1, "role_grants": 0}
    assert _state(memory.dsn, "renamed") == state and memory.namespace_list(namespace="src") == []
    _same(_ranking(memory, "renamed"), before)
    with pytest.raises(InvalidArgument, match="already holds"):
        memory.namespace_rename("renamed", "other")
    with pytest.raises(NotFound):
        memory.namespace_rename("src", "x")

    dry = memory.namespace_drop("renamed")
    assert [(r.item, r.count, r.applied) for r in dry] == [
        ("documents", src.documents, False), ("memories", src.memories + 1, False), ("archive", 1, False)]
    with pytest.raises(InvalidArgument, match="confirm"):
        memory.namespace_drop("renamed", dry_run=False)
    with pytest.raises(InvalidArgument, match="confirm"):
        memory.namespace_drop("renamed", dry_run=False, confirm="other")
    assert memory.namespace_list(namespace="renamed")[0].memories == src.memories
    done = memory.namespace_drop("renamed", dry_run=False, confirm="renamed")
    assert [(r.count, r.applied) for r in done] == [(src.documents, True), (src.memories + 1, True), (1, True)]
    assert [r.namespace for r in memory.namespace_list()] == ["other"]
    gone = _state(memory.dsn, "renamed")
    assert all(not v for v in gone.values() if v != [(0, None)]) and gone["postings"] == [(0, None)]
    assert memory.search("on-call rotation", namespace="renamed") == []
    assert ids


def test_bad_imports_write_nothing(memory, tmp_path):
    _fill(memory, "src", tmp_path)
    out = tmp_path / "src.jsonl"
    memory.namespace_export("src", path=out)
    lines = out.read_text(encoding="utf-8").splitlines()

    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidArgument, match="before its end line"):
        memory.namespace_import(cut, namespace="a")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join(lines[:3] + ["{not json"] + lines[3:]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidArgument, match="line 4 is not a JSON object"):
        memory.namespace_import(broken, namespace="a")
    unknown = tmp_path / "unknown.jsonl"
    row = json.loads(lines[-2])
    row["colour"] = "blue"
    unknown.write_text("\n".join(lines[:-2] + [json.dumps(row), lines[-1]]) + "\n", encoding="utf-8")
    with pytest.raises(InvalidArgument, match=f"line {len(lines) - 1}: .* key 'colour'"):
        memory.namespace_import(unknown, namespace="a")
    with pytest.raises(InvalidArgument, match="already holds"):
        memory.namespace_import(out)          # into its own namespace, named in the header
    with pytest.raises(InvalidArgument, match="no memsql namespace export header"):
        memory.namespace_import(tmp_path / "ingress.md", namespace="a")
    assert [r.namespace for r in memory.namespace_list()] == ["src"]


def test_sql_surface(conn):
    """The functions from psql: list, export lines, drop's confirm."""
    conn.execute("SELECT memsql.memory_add('A fact for SQL.', NULL, 'sqlns')")
    conn.commit()
    assert conn.execute("SELECT namespace, documents, memories FROM memsql.namespace_list()").fetchall() == [
        ("sqlns", 1, 1)]
    lines = [r[0] for r in conn.execute("SELECT memsql.namespace_export('sqlns')").fetchall()]
    assert [line["kind"] for line in lines] == ["header", "knowledge_type", "document", "memory", "end"]
    assert lines[-1] == {"kind": "end", "documents": 1, "memories": 1, "archive": 0}
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT * FROM memsql.namespace_drop('sqlns', dry_run => false)")
    assert err.value.sqlstate == "MS002"
    conn.rollback()
    rows = conn.execute("SELECT item, count FROM memsql.namespace_import(%s, 'copy')",
                        ([json.dumps(x) for x in lines],)).fetchall()
    assert dict(rows) == {"knowledge_types": 0, "documents": 1, "memories": 1, "archive": 0, "end": 1}


def _cli(args, dsn, cwd=REPO, stdin=None):
    env = {**os.environ, "MEMSQL_DSN": dsn}
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=180, input=stdin)


def test_cli_verbs(dsn, memory, tmp_path):
    memory.add("The staging database lives on host pg-staging-3.", namespace="team")
    listed = _cli(["namespace", "list"], dsn)
    assert listed.returncode == 0, listed.stderr
    assert [(r["namespace"], r["memories"]) for r in json.loads(listed.stdout)] == [("team", 1)]
    exported = _cli(["namespace", "export", "team"], dsn)                 # to stdout
    assert exported.returncode == 0 and json.loads(exported.stdout.splitlines()[-1])["kind"] == "end"
    imported = _cli(["namespace", "import", "-", "-n", "team2"], dsn, stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["memories"] == 1
    renamed = _cli(["namespace", "rename", "team2", "team3", "--no-json"], dsn)
    assert renamed.returncode == 0 and "renamed team2 to team3" in renamed.stdout
    dry = _cli(["namespace", "drop", "team3", "--no-json"], dsn)
    assert dry.returncode == 0 and "dry run" in dry.stdout and "--apply --confirm team3" in dry.stdout
    refused = _cli(["namespace", "drop", "team3", "--apply"], dsn)
    assert refused.returncode == 1 and "confirm" in refused.stderr and "Traceback" not in refused.stderr
    dropped = _cli(["namespace", "drop", "team3", "--apply", "--confirm", "team3"], dsn)
    assert dropped.returncode == 0 and [r["applied"] for r in json.loads(dropped.stdout)] == [True] * 3
    sql = _cli(["namespace", "export", "team", "--vectors", "--sql"], dsn)
    assert sql.stdout.strip() == "SELECT * FROM memsql.namespace_export(namespace => 'team', vectors => true);"
    with psycopg.connect(dsn) as conn:   # what --sql prints runs in psql as printed
        assert conn.execute(sql.stdout.strip().rstrip(";")).fetchall()[-1][0]["kind"] == "end"
    export = tmp_path / "team.jsonl"
    export.write_text(exported.stdout, encoding="utf-8")
    sql = _cli(["namespace", "import", str(export), "-n", "team4", "--sql"], dsn)
    assert sql.returncode == 0 and sql.stdout.startswith("BEGIN;\nSELECT * FROM memsql.namespace_import(lines => ")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.stdout)
    assert [r.memories for r in memory.namespace_list(namespace="team4")] == [1]
    missing = _cli(["namespace", "import", str(tmp_path / "none.jsonl")], dsn)
    assert missing.returncode == 1 and "no such file" in missing.stderr
