"""The issue's acceptance test, as a user runs it: `memsql worker start`, then psql alone (`memsql psql`): a note
added with memory_add is found by memory_search for a paraphrase that shares no word with it (dense arm only);
after `memsql worker stop` search degrades to lexical results with a NOTICE, not an error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg

from test_worker import wait_for, workers_connected

REPO = Path(__file__).resolve().parents[1]

TARGET = "Deploys are frozen every Friday afternoon."
OTHERS = [
    "The office coffee machine is descaled once a month.",
    "Invoices are paid within thirty days of receipt.",
    "Staging database backups are kept for two weeks.",
]
PARAPHRASE = "When are releases to production blocked?"


def cli(args: list[str], env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


def psql(env: dict, *statements: str) -> subprocess.CompletedProcess:
    args = ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"]
    for s in statements:
        args += ["-c", s]
    return cli(args, env)


def test_from_psql_alone_with_and_without_the_worker(dsn, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
    env.update(MEMSQL_HOME=str(tmp_path / "home"), MEMSQL_DSN=dsn)
    init = cli(["init"], env)  # as a user would: sets the database's search_path (memsql functions need no prefix)
    assert init.returncode == 0, init.stderr
    started = cli(["worker", "start"], env)
    assert started.returncode == 0, started.stderr
    try:
        wait_for(lambda: workers_connected(dsn) == 1, timeout=180)  # loads the model first
        status = json.loads(cli(["worker", "status", "--json"], env).stdout)
        assert status["running"] is True and status["workers_connected"] == 1

        added = psql(env, *[f"SELECT memory_add('{t}')" for t in [TARGET, *OTHERS]])
        assert added.returncode == 0, added.stderr
        target_id = int(added.stdout.split()[0])
        wait_for(lambda: psql(env, "SELECT memories_pending FROM worker_status").stdout.strip() == "0")
        # the paraphrase shares no lexeme with the note: only the dense arm can find it
        assert psql(env, f"SELECT memsql.query_lexemes('{PARAPHRASE}') && memsql.query_lexemes('{TARGET}')"
                    ).stdout.strip() == "f"

        found = psql(env, f"SELECT memory_id, dense_rank, lexical_rank FROM memory_search('{PARAPHRASE}', k => 4, "
                          "touch => false)")
        assert found.returncode == 0, found.stderr
        rows = [line.split("|") for line in found.stdout.split()]
        assert rows[0] == [str(target_id), "1", ""]
        assert all(r[2] == "" for r in rows) and len(rows) == 4
        assert "NOTICE" not in found.stderr
    finally:
        stopped = cli(["worker", "stop"], env)
    assert stopped.stdout.strip() == "worker stopped"
    wait_for(lambda: workers_connected(dsn) == 0)

    degraded = psql(env, "SELECT memory_id, dense_rank, lexical_rank FROM memory_search('friday releases', "
                         "touch => false)")
    assert degraded.returncode == 0, degraded.stderr
    assert [line.split("|") for line in degraded.stdout.split()] == [[str(target_id), "", "1"]]
    assert "no memsql worker is connected" in degraded.stderr and "lexical arm only" in degraded.stderr
    with psycopg.connect(dsn) as conn:  # the paraphrase's embedding stayed cached: found densely without a worker
        assert conn.execute("SELECT count(*) FROM memsql.query_embedding_cache WHERE query = %s AND embedding IS NOT NULL",
                            (PARAPHRASE,)).fetchone() == (1,)


def test_sql_guide_shows_every_public_function_and_view(conn):
    section = (REPO / "docs" / "sql-guide.md").read_text(encoding="utf-8")
    functions = [r[0] for r in conn.execute(
        "SELECT DISTINCT p.proname FROM pg_proc p WHERE p.pronamespace = 'memsql'::regnamespace "
        "AND p.prorettype <> 'trigger'::regtype ORDER BY 1")]
    views = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind = 'v' ORDER BY 1")]
    assert len(functions) >= 20 and len(views) >= 3
    assert [f for f in functions if f"{f}(" not in section] == []
    assert [v for v in views if f"FROM {v}" not in section] == []


def test_psql_df_plus_shows_the_comments(dsn):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
    env["MEMSQL_DSN"] = dsn
    out = psql(env, "SET search_path = \"$user\", public, memsql", "\\df+ memory_search", "\\df+ query_embedding",
               "\\dv+ worker_status")
    assert out.returncode == 0, out.stderr
    with psycopg.connect(dsn) as conn:
        for obj in ("'memsql.memory_search'::regproc", "'memsql.query_embedding'::regproc"):
            first = conn.execute(f"SELECT split_part(obj_description({obj}, 'pg_proc'), E'\\n', 1)").fetchone()[0]
            assert first and first in out.stdout
        view = conn.execute("SELECT split_part(obj_description('memsql.worker_status'::regclass, 'pg_class'), "
                            "E'\\n', 1)").fetchone()[0]
        assert view in out.stdout
