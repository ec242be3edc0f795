"""examples/dbt: `dbt build` against this test's database over the unix socket; the models read memory_search (with
the dense arm, through the worker) and memory_stats."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from test_worker import arr, start_worker, stop_worker, wait_for

REPO = Path(__file__).resolve().parents[1]
PROJECT = REPO / "examples" / "dbt"
DBT = Path(sys.executable).parent / "dbt"

pytestmark = pytest.mark.skipif(not DBT.exists(), reason="dbt-postgres is not installed (pip install -e '.[dbt]')")

NOTES = [
    ("We chose Redis for the cache, with a five minute TTL.", "principle"),
    ("The nightly backup of the orders database runs at 02:00 UTC.", "note"),
    ("Invoices are sent on the first working day of each month.", "note"),
    ("Frontend deploys go through the canary pool first.", "note"),
]
QUESTION = "what did we decide about the cache?"


def run_dbt(args: list[str], dsn: str, tmp: Path) -> subprocess.CompletedProcess:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    env = dict(os.environ, MEMSQL_DBT_HOST=info["host"], MEMSQL_DBT_PORT=str(info.get("port") or 5432),
               MEMSQL_DBT_USER=info.get("user") or "postgres", MEMSQL_DBT_PASSWORD=info.get("password") or "",
               MEMSQL_DBT_DBNAME=info["dbname"], DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    project = tmp / "project"  # a copy: dbt writes target/ and logs/ next to the project
    if not project.exists():
        shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("target", "logs"))
    return subprocess.run([str(DBT), *args, "--project-dir", str(project), "--profiles-dir", str(project)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp)


def backlog(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT memories_pending FROM memsql.worker_status").fetchone()[0]


def test_dbt_build_reads_memory_search_and_memory_stats(memory, dsn, embedder, tmp_path):
    assert psycopg.conninfo.conninfo_to_dict(dsn)["host"].startswith("/")  # the test server is socket-only
    ids = {text: memory.add(text, knowledge_type=kt) for text, kt in NOTES}
    with psycopg.connect(dsn, autocommit=True) as conn:  # one more note written from SQL, not yet embedded
        conn.execute("SELECT memsql.memory_add('Cache invalidation happens on every deploy.')")

    w, t = start_worker(dsn, embedder)  # embeds the SQL note, then the question of the model
    try:
        wait_for(lambda: backlog(dsn) == 0)
        out = run_dbt(["build"], dsn, tmp_path)
    finally:
        stop_worker(w, t)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "PASS=7 WARN=0 ERROR=0" in out.stdout  # 2 models, 5 data tests
    with psycopg.connect(dsn, autocommit=True) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        got = conn.execute("SELECT memory_id, dense_rank, lexical_rank FROM analytics_memsql_reports.cache_decisions "
                           "ORDER BY score DESC, memory_id").fetchall()
        qvec = embedder.embed([QUESTION])[0]
        want = conn.execute("SELECT memory_id, dense_rank, lexical_rank FROM memsql.memory_search(%s, ARRAY[%s], "
                            "k => 5, touch => false) ORDER BY score DESC, memory_id", (QUESTION, qvec)).fetchall()
        assert got == want  # the same ranking as a caller that brings its own embedding: the dense arm ran
        assert got[0][0] == ids[NOTES[0][0]] and got[0][1] == 1
        assert all(r[1] is not None for r in got)
        cached = conn.execute("SELECT embedding FROM memsql.query_embedding_cache WHERE query = %s",
                              (QUESTION,)).fetchone()[0]
        assert float(arr(cached) @ qvec) > 0.9999
        overview = conn.execute("SELECT namespace, documents, memories, without_embedding "
                                "FROM analytics_memsql_reports.memory_overview").fetchall()
        assert overview == [("default", 5, 5, 0)]
