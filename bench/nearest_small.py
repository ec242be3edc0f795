"""memory_nearest (the autosave filter's novelty) in small namespaces beside large ones, at two revisions of
sql/functions: server time and rows against the exact scan.

    MEMSQL_HOME=... .venv/bin/python bench/nearest_small.py [--database memsql_genres] [--base REV] [--rounds 4]
        [--namespaces 6] [--queries 30] [--out nearest_small]

Needs a database bench/quality.py filled (--keep-server --database NAME): its LongMemEval namespaces (about 800
memories each, every one beside about 250,000 others in one HNSW graph). Queries: memories of the namespace itself
(own: the novelty check of a chunk like those stored) and SciFact chunks (other: a chunk on a topic the namespace
does not hold, as a new project's first notes beside a large namespace), k = 1 and 5. The variants (sql/functions as
of --base and as in the working tree) are applied in turn on one connection (bench/search_ab.py's helpers), rounds
alternating; per variant: SQL p50 / p99 (planning + execution, EXPLAIN (ANALYZE, TIMING OFF)) and the share of calls whose rows
equal the exact scan's (the similarities, in order: a tie between equal vectors may name another memory).
Writes bench/results/<out>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO / "tests"))

import psycopg  # noqa: E402

from filtered import explain_ms, loadavg, pct  # noqa: E402
from memsql import db, server  # noqa: E402
from search_ab import apply, variant_files  # noqa: E402

OUT = BENCH / "results"
CALL = "SELECT memory_id, similarity FROM memsql.memory_nearest(ARRAY[%(q)s::vector], %(ns)s, %(k)s)"
EXACT = ("SELECT id, 1 - (embedding <=> %(q)s::vector) FROM memsql.memories WHERE namespace = %(ns)s "
         "AND embedding IS NOT NULL ORDER BY embedding <=> %(q)s::vector, id LIMIT %(k)s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", default="memsql_genres")
    ap.add_argument("--base", default="HEAD")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--namespaces", type=int, default=6)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--out", default="nearest_small")
    args = ap.parse_args()
    home = Path(os.environ.get("MEMSQL_HOME") or BENCH / ".cache" / "home")
    dsn = psycopg.conninfo.make_conninfo(server.embedded_start(home), dbname=args.database)
    base_rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=REPO, check=True, capture_output=True,
                              text=True).stdout.strip()
    res = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores", "database": args.database,
           "variants": {"base": base_rev, "new": "working tree"}, "load_start": loadavg(), "rounds": []}
    times: dict[tuple, list[float]] = {}
    same: dict[tuple, list[bool]] = {}
    with tempfile.TemporaryDirectory() as tmp, psycopg.connect(dsn, autocommit=True) as conn:
        db.configure(conn)
        files = {"base": variant_files(args.base, Path(tmp) / "base"), "new": variant_files(None, Path(tmp))}
        spaces = [r[0] for r in conn.execute(
            "SELECT namespace FROM memsql.namespace_stats WHERE namespace LIKE 'lme-%%' AND doc_count BETWEEN 500 "
            "AND 1000 ORDER BY namespace LIMIT %s", (args.namespaces,))]
        res["others"] = conn.execute("SELECT count(*) FROM memsql.memories WHERE embedding IS NOT NULL").fetchone()[0]
        todo = []
        other = [r[0] for r in conn.execute(
            "SELECT embedding::text FROM memsql.memories WHERE namespace = 'beir-scifact' AND embedding IS NOT NULL "
            "ORDER BY id LIMIT %s", (args.queries,))]
        for ns in spaces:
            own = [r[0] for r in conn.execute("SELECT embedding::text FROM memsql.memories WHERE namespace = %s AND "
                                              "embedding IS NOT NULL ORDER BY id LIMIT %s", (ns, args.queries))]
            for kind, qs in (("own", own), ("other", other)):
                for q in qs:
                    for k in (1, 5):
                        p = {"q": q, "ns": ns, "k": k}
                        todo.append(((kind, k), p, [round(r[1], 9) for r in conn.execute(EXACT, p)]))
        for r in range(args.rounds):
            for v in ("base", "new") if r % 2 == 0 else ("new", "base"):
                apply(conn, files[v])
                for k, p, exact in todo:
                    got = [round(x[1], 9) for x in conn.execute(CALL, p)]
                    times.setdefault((v, *k), []).append(explain_ms(conn, CALL, p))
                    same.setdefault((v, *k), []).append(got == exact)
                res["rounds"].append({"round": r, "variant": v, "load": loadavg()})
                print(f"[round {r} {v}] load {res['rounds'][-1]['load']}", flush=True)
        apply(conn, files["new"])
    res["load_end"] = loadavg()
    res["namespaces"] = spaces
    res["cases"] = [{"queries": kind, "k": k, "variant": v, "calls": len(times[(v, kind, k)]),
                     "p50_ms": pct(times[(v, kind, k)], 50), "p99_ms": pct(times[(v, kind, k)], 99),
                     "exact_rows": round(sum(same[(v, kind, k)]) / len(same[(v, kind, k)]), 4)}
                    for kind in ("own", "other") for k in (1, 5) for v in ("base", "new")]
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.out}.json").write_text(json.dumps(res, indent=1) + "\n")
    L = ["# memory_nearest in small namespaces beside large ones (bench/nearest_small.py)", "",
         f"{res['when']}, {res['machine']}; database {args.database} ({res['others']:,} embedded memories in one HNSW "
         f"graph); {len(spaces)} LongMemEval namespaces of 500 to 1,000 memories; queries: {args.queries} of each "
         f"one's own memories (own: a chunk like those stored) and {args.queries} SciFact chunks (other: a new "
         f"topic); base = sql/functions at {base_rev}, new = the working tree; {args.rounds} rounds "
         f"alternating the variants; load {res['load_start']} at start, {res['load_end']} at end. SQL time = "
         "planning + execution (EXPLAIN (ANALYZE, TIMING OFF)); exact rows = share of calls returning the exact "
         "scan's similarities in its order (equal vectors tie, so ids may differ).", "",
         "| queries | k | variant | calls | p50 ms | p99 ms | exact rows |", "|---|---:|---|---:|---:|---:|---:|"]
    for x in res["cases"]:
        L.append(f"| {x['queries']} | {x['k']} | {x['variant']} | {x['calls']} | {x['p50_ms']} | {x['p99_ms']} | "
                 f"{x['exact_rows']} |")
    (OUT / f"{args.out}.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
