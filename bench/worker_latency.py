"""Latency of the embedding worker as SQL clients see it: how long a memory written from SQL waits for its
embedding, how long memsql.query_embedding takes on a cache miss (request through dblink, worker, answer) and on a
hit, and memory_search called from SQL without query embeddings (the worker embeds the query) against one that
brings its own.

Runs against the embedded server of $MEMSQL_HOME (use a private one: MEMSQL_HOME=/tmp/memsql-home-<n>) in a scratch
database, with the worker started as a background process (`memsql worker start`). Writes bench/results/worker.json
and worker.md.

    MEMSQL_HOME=/tmp/memsql-home-10 .venv/bin/python bench/worker_latency.py [--n 50]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchdb import fresh_database  # noqa: E402
from memsql import db, server, worker  # noqa: E402

WORDS = ("cache deploy invoice backup staging canary release schedule budget report meeting database index query "
         "latency outage incident review roadmap hiring contract vendor license audit policy retention").split()


def sentence(i: int, prefix: str) -> str:
    w = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(5)]
    return f"{prefix} {i}: the {w[0]} of the {w[1]} depends on the {w[2]}, {w[3]} and {w[4]}."


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def summary(ms: list[float]) -> dict:
    return {"n": len(ms), "p50_ms": round(statistics.median(ms), 2), "p90_ms": round(pct(ms, 90), 2),
            "p99_ms": round(pct(ms, 99), 2), "max_ms": round(max(ms), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50, help="measurements per case")
    args = ap.parse_args()
    if not os.environ.get("MEMSQL_HOME"):
        sys.exit("set MEMSQL_HOME to a private home, e.g. /tmp/memsql-home-10")
    home = server.home_dir()
    admin_uri = server.embedded_start(home)
    scratch = "memsql_bench_worker"
    dsn = fresh_database(admin_uri, scratch)
    worker.stop(home)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    worker.start_background(home, dsn=dsn, wait_seconds=10)
    conn = db.configure(psycopg.connect(dsn, autocommit=True))
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    while conn.execute("SELECT workers_connected FROM memsql.worker_status").fetchone()[0] == 0:
        time.sleep(0.05)
    startup_s = time.perf_counter() - t0
    watcher = psycopg.connect(dsn, autocommit=True)
    results: dict = {"worker_startup_s": round(startup_s, 2)}
    try:
        # 1. memory written from SQL -> embedding stored (seen by another session)
        waits = []
        for i in range(args.n):
            t = time.perf_counter()
            mid = conn.execute("SELECT memsql.memory_add(%s)", (sentence(i, "note"),)).fetchone()[0]
            while watcher.execute("SELECT embedding IS NULL FROM memsql.memories WHERE id = %s", (mid,)).fetchone()[0]:
                time.sleep(0.002)
            waits.append((time.perf_counter() - t) * 1000)
        results["memory_add_to_embedding"] = summary(waits)

        # 2. query_embedding: first call of a session (opens the dblink connection), misses, hits
        fresh = psycopg.connect(dsn, autocommit=True)
        t = time.perf_counter()
        assert fresh.execute("SELECT memsql.query_embedding('first question of a session') IS NOT NULL").fetchone()[0]
        results["query_embedding_first_call_of_session_ms"] = round((time.perf_counter() - t) * 1000, 2)
        fresh.close()
        miss, hit = [], []
        for i in range(args.n):
            q = sentence(i, "question")
            t = time.perf_counter()
            # a generous wait, to see the whole distribution (memory_search waits 1000 ms by default)
            assert conn.execute("SELECT memsql.query_embedding(%s, 30000) IS NOT NULL", (q,)).fetchone()[0], notices
            miss.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            assert conn.execute("SELECT memsql.query_embedding(%s) IS NOT NULL", (q,)).fetchone()[0]
            hit.append((time.perf_counter() - t) * 1000)
        results["query_embedding_miss"] = summary(miss)
        results["query_embedding_miss_over_1000ms"] = sum(1 for x in miss if x > 1000)
        results["query_embedding_hit"] = summary(hit)

        # 3. memory_search from SQL without embeddings (new query / repeated) vs with a Python-side embedding
        from memsql.embedding import default_embedder

        import torch

        torch.set_num_threads(1)  # as the worker ([worker] threads = 1): two threads wait for each other on a busy machine
        emb = default_embedder()
        emb.embed(["warm up"])  # load the model outside the timed loop
        plain, repeat, own = [], [], []
        lexical_only = 0
        for i in range(args.n):
            q = sentence(i, "search")
            t = time.perf_counter()
            rows = conn.execute("SELECT count(*) FILTER (WHERE dense_rank IS NOT NULL) FROM "
                                "memsql.memory_search(%s, touch => false)", (q,)).fetchone()[0]
            plain.append((time.perf_counter() - t) * 1000)
            lexical_only += rows == 0  # the worker did not answer within the default 1000 ms
            t = time.perf_counter()
            conn.execute("SELECT count(*) FROM memsql.memory_search(%s, touch => false)", (q,)).fetchone()
            repeat.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            vec = emb.embed([q])[0]
            conn.execute("SELECT count(*) FROM memsql.memory_search(%s, ARRAY[%s], touch => false)", (q, vec)).fetchone()
            own.append((time.perf_counter() - t) * 1000)
        results["memory_search_sql_new_query"] = summary(plain)
        results["memory_search_sql_new_query_lexical_only"] = lexical_only
        results["memory_search_sql_repeated_query"] = summary(repeat)
        results["memory_search_embedded_in_python_1_thread"] = summary(own)
    finally:
        watcher.close()
        conn.close()
        worker.stop(home)
        with psycopg.connect(admin_uri, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {scratch} WITH (FORCE)")
    results["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "loadavg_before": [round(x, 2) for x in load_before],
                          "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    out = REPO / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "worker.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = ["# Embedding worker latency (bench/worker_latency.py)", "",
             f"{results['machine']['cpus']} CPUs, load average before {results['machine']['loadavg_before']}, after "
             f"{results['machine']['loadavg_after']} (shared machine). Worker start to connected: "
             f"{results['worker_startup_s']} s (model load). First query_embedding of a session (opens the dblink "
             f"connection, worker round trip): {results['query_embedding_first_call_of_session_ms']} ms. "
             f"Misses over 1000 ms: {results['query_embedding_miss_over_1000ms']} of {args.n}; new-query searches that "
             f"fell back to lexical only: {results['memory_search_sql_new_query_lexical_only']} of {args.n}.", "",
             "| case | n | p50 ms | p90 ms | p99 ms | max ms |", "|---|---|---|---|---|---|"]
    for key, value in results.items():
        if isinstance(value, dict) and "p50_ms" in value:
            lines.append(f"| {key} | {value['n']} | {value['p50_ms']} | {value['p90_ms']} | {value['p99_ms']} | "
                         f"{value['max_ms']} |")
    (out / "worker.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
