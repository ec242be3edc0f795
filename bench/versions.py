"""Speed of versioned search: memory_search by default, with include_superseded and with as_of, on a
synthetic namespace with and without history, and which plan the dense arm gets for as_of under each candidate
index on the validity range (GiST on tstzrange(created_at, valid_to) vs btree on created_at / valid_to vs none).

Synthetic data (seeded): random unit vectors and texts of 12 words from a 3000-word vocabulary; created_at spread
over 365 days. Latency only: no quality is measured here. Writes bench/results/versions.{json,md}.

    MEMSQL_HOME=/tmp/memsql-home-11 .venv/bin/python bench/versions.py --memories 20000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import psycopg

from memsql import db

OUT = Path(__file__).resolve().parent / "results"


def build(conn, ns: str, n: int, closed_fraction: float, seed: int) -> None:
    conn.execute("DELETE FROM memsql.documents WHERE namespace = %s", (ns,))
    doc = conn.execute("INSERT INTO memsql.documents (namespace, source_key, adapter, content_hash, knowledge_type)"
                       " VALUES (%s, 'bench', 'text', 'h', 'note') RETURNING id", (ns,)).fetchone()[0]
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(3000)]
    rows = []
    for i in range(n):
        v = rng.standard_normal(384).astype(np.float32)
        v /= np.linalg.norm(v)
        words = " ".join(vocab[j] for j in rng.zipf(1.3, 12) % len(vocab))
        rows.append((ns, doc, i, f"{words} item{i}", f"h{i}", v, "note", None, [], [], "{}", None,
                     "memsql.english", None))
    with conn.transaction():
        db.copy_memories(conn, rows)
        # spread creation over a year; close a fraction of the versions (their successors are not needed to time
        # the filters: a closed version is what every arm must skip)
        conn.execute("ALTER TABLE memsql.memories DISABLE TRIGGER memories_content_immutable")
        conn.execute("SELECT setseed(%s)", (seed / 1000.0,))
        conn.execute("UPDATE memsql.memories SET created_at = now() - random() * interval '365 days'"
                     " WHERE namespace = %s", (ns,))
        conn.execute("UPDATE memsql.memories SET valid_to = created_at + random() * (now() - created_at)"
                     " WHERE namespace = %s AND random() < %s", (ns, closed_fraction))
        conn.execute("ALTER TABLE memsql.memories ENABLE TRIGGER memories_content_immutable")
    conn.commit()
    conn.autocommit = True
    conn.execute("VACUUM ANALYZE memsql.memories")
    conn.execute("VACUUM ANALYZE memsql.postings")
    conn.autocommit = False


def timed_searches(conn, ns: str, queries, **opts) -> dict:
    named = "".join(f", {k} => %({k})s" for k in opts)
    sql = ("SELECT count(*) FROM memsql.memory_search(%(q)s, ARRAY[%(e)s]::vector[], 10, %(ns)s, touch => false"
           + named + ")")
    for text, emb in queries[:5]:  # warm-up: plans, cache
        conn.execute(sql, {"q": text, "e": emb, "ns": ns, **opts})
    times = []
    for text, emb in queries:
        t0 = time.perf_counter()
        conn.execute(sql, {"q": text, "e": emb, "ns": ns, **opts}).fetchone()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"p50_ms": round(statistics.median(times), 2), "p90_ms": round(times[int(0.9 * len(times)) - 1], 2),
            "queries": len(times)}


def dense_plan(conn, ns: str, emb, as_of_days: int) -> dict:
    """Plan and time of the dense arm's statement for an as_of (the statement memory_search runs, custom plan)."""
    sql = ("SELECT m.id FROM memsql.memories m WHERE m.namespace = %(ns)s AND m.embedding IS NOT NULL"
           " AND tstzrange(m.created_at, m.valid_to) @> (now() - make_interval(days => %(d)s))"
           " ORDER BY m.embedding <=> %(e)s::vector LIMIT 100")
    with conn.transaction():
        conn.execute("SET LOCAL hnsw.ef_search = 100")
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        plan = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, {"ns": ns, "d": as_of_days, "e": emb}).fetchone()[0]
    top = plan[0]

    def nodes(p):
        yield p
        for c in p.get("Plans", []):
            yield from nodes(c)

    used = sorted({n.get("Index Name") for n in nodes(top["Plan"]) if n.get("Index Name")})
    rows = conn.execute(sql, {"ns": ns, "d": as_of_days, "e": emb}).fetchall()
    return {"indexes": used, "ms": round(top["Execution Time"], 2), "rows": len(rows)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--memories", type=int, default=20000)
    ap.add_argument("--queries", type=int, default=40)
    args = ap.parse_args()
    dsn = db.resolve_dsn(os.environ.get("MEMSQL_DSN"))
    rng = np.random.default_rng(7)
    queries = []
    for _ in range(args.queries):
        v = rng.standard_normal(384).astype(np.float32)
        queries.append((" ".join(f"w{int(x)}" for x in rng.zipf(1.3, 3) % 3000), v / np.linalg.norm(v)))
    load = os.getloadavg()
    with db.connect(dsn) as conn:
        build(conn, "bench-flat", args.memories, 0.0, 1)
        build(conn, "bench-hist", args.memories, 0.25, 2)
        closed = conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = 'bench-hist'"
                              " AND valid_to IS NOT NULL").fetchone()[0]
        latency = {
            "flat: default (no history: no version filter in the lexical arm)": timed_searches(conn, "bench-flat", queries),
            "hist: default (current versions)": timed_searches(conn, "bench-hist", queries),
            "hist: include_superseded": timed_searches(conn, "bench-hist", queries, include_superseded=True),
        }
        latency["hist: as_of 30 days ago"] = timed_searches(
            conn, "bench-hist", queries,
            as_of=conn.execute("SELECT now() - interval '30 days'").fetchone()[0])
        latency["hist: as_of 360 days ago (few valid)"] = timed_searches(
            conn, "bench-hist", queries,
            as_of=conn.execute("SELECT now() - interval '360 days'").fetchone()[0])
        plans = {}
        variants = {
            "gist tstzrange (shipped)": [],
            "btree (namespace, created_at) + btree (namespace, valid_to), no gist": [
                "DROP INDEX memsql.memories_validity",
                "CREATE INDEX bench_created ON memsql.memories (namespace, created_at)",
                "CREATE INDEX bench_valid_to ON memsql.memories (namespace, valid_to)"],
            "no validity index": ["DROP INDEX memsql.memories_validity"],
        }
        emb = queries[0][1]
        for name, ddl in variants.items():
            conn.execute("BEGIN")
            for stmt in ddl:
                conn.execute(stmt)
            conn.execute("ANALYZE memsql.memories")
            plans[name] = {f"as_of {d} days ago": dense_plan(conn, "bench-hist", emb, d) for d in (30, 360)}
            conn.execute("ROLLBACK")
        conn.execute("DELETE FROM memsql.documents WHERE namespace IN ('bench-flat', 'bench-hist')")
        conn.commit()
    result = {"memories_per_namespace": args.memories, "closed_versions_in_hist": closed,
              "load_average_at_start": [round(x, 2) for x in load], "latency": latency, "dense_arm_as_of_plans": plans}
    OUT.mkdir(exist_ok=True)
    (OUT / "versions.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Versioned search speed (bench/versions.py)", "",
             f"Synthetic: {args.memories} memories per namespace, {closed} closed versions in bench-hist; "
             f"load average at start {result['load_average_at_start']} on 2 shared cores.", "",
             "| search | p50 ms | p90 ms |", "|---|---|---|"]
    lines += [f"| {k} | {v['p50_ms']} | {v['p90_ms']} |" for k, v in latency.items()]
    lines += ["", "Dense arm statement with as_of (EXPLAIN ANALYZE), per validity index:", "",
              "| index variant | as_of | indexes used | ms | rows |", "|---|---|---|---|---|"]
    for name, per in plans.items():
        for q, p in per.items():
            lines.append(f"| {name} | {q} | {', '.join(p['indexes']) or '-'} | {p['ms']} | {p['rows']} |")
    (OUT / "versions.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
