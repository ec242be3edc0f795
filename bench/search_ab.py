"""memory_search's SQL functions at two revisions, timed in the same process on the same database: A/B.

    MEMSQL_HOME=/tmp/<you>-home .venv/bin/python bench/search_ab.py [--base REV | --base-database DB] [--rounds 6]
        [--out search_ab]

Needs the database bench/filtered.py builds (memsql_bench_filtered on the home's server, namespace n100k: the contract
tests' synthetic clusters). The variants are sql/functions as of --base (git show) and as in the working tree; each
round applies one variant (memsql.db.apply_functions over that variant's files, committed), runs every query once
untimed (plans made for the session), then times every case; the variants alternate round by round (A B A B ...),
so the load of the shared machine falls on both alike. Per case and variant: SQL p50 / p99 over every round
(planning + execution, EXPLAIN (ANALYZE, TIMING OFF)), and whether both variants returned the same rows.

With --base-database DB the base variant is that database as it stands (its own schema, indexes and functions: a
copy of memsql_bench_filtered made before a migration, CREATE DATABASE DB TEMPLATE memsql_bench_filtered) and the new
one memsql_bench_filtered migrated to the working tree; each has its own connection, the rounds alternate as above.

Cases: memory_search dense-only (the contract's call) and hybrid (a query word and the embedding, the defaults),
k 10, unfiltered and under the filters of bench/filtered.py at n100k. The load average is written with each round.
Writes bench/results/<out>.{json,md}.

With --speed-size N the database is instead bench/speed.py's search corpus of N memories (speed_N, namespace speed,
built by ``bench/speed.py --parts search --sizes N``): the calls are Memory.search's statement at the defaults
(touch off) for the first --queries SciFact train claims with their embeddings, unfiltered, and for the first 20 of
them under bench/speed.py's filters (tags keeping 10% and 1%, the importance cutoff); same rows = the same memories
in the same order with the same dense rank, lexical rank and BM25 (the final score moves with now(): the decay).
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
sys.path.insert(0, str(REPO / "tests"))

import numpy as np  # noqa: E402
import psycopg  # noqa: E402

from filtered import cases, explain_ms, loadavg, pct  # noqa: E402
from filtered_corpus import CLUSTER, near, search_sql  # noqa: E402
from memsql import db, server  # noqa: E402

OUT = BENCH / "results"
NS = "n100k"
CASES = ("none", "tags 100%", "tags 10%", "tags 1%", "importance 95% of near cut")


def variant_files(rev: str | None, into: Path, only: list[str] | None = None) -> list[Path]:
    """sql/functions/*.sql at git revision rev (None = the working tree), written under into; with ``only``, the
    working tree's files with just those (file names) taken from rev (a base older than a helper a trigger needs)."""
    if rev is None:
        return db.function_files()
    names = subprocess.run(["git", "ls-tree", "--name-only", f"{rev}:sql/functions"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    into.mkdir(parents=True, exist_ok=True)
    paths = []
    if only:
        for f in db.function_files():
            if f.name not in only:
                (into / f.name).write_text(f.read_text(encoding="ascii"), encoding="ascii")
                paths.append(into / f.name)
        names = [n for n in names if n in only]
    for name in sorted(n for n in names if n.endswith(".sql")):
        text = subprocess.run(["git", "show", f"{rev}:sql/functions/{name}"], cwd=REPO, check=True,
                              capture_output=True, text=True).stdout
        (into / name).write_text(text, encoding="ascii")
        paths.append(into / name)
    return paths


def apply(conn, files: list[Path]) -> None:
    real = db.function_files
    db.function_files = lambda: files
    try:
        with conn.transaction():
            db.apply_functions(conn)
    finally:
        db.function_files = real


def calls(centres) -> list[tuple[str, str, str, dict]]:
    """(case, mode, statement, parameters) for every timed call."""
    rng = np.random.default_rng(13)
    picks = list(range(0, min(40, len(centres)), 2))
    qs = [near(centres[i], rng) for i in picks]
    out = []
    for name, args, _where, _versions, _share in cases():
        if name not in CASES:
            continue
        for c, q in zip(picks, qs):
            opts = {"memory_rerank": False, **args}
            out.append((name, "dense", search_sql(opts), {"q": q, "k": 10, "ns": NS, **opts}))
            named = "".join(f", {key} => %({key})s" for key in args)
            out.append((name, "hybrid", "SELECT memory_id FROM memsql.memory_search(%(text)s, ARRAY[%(q)s::vector], "
                        "k => 10, namespace => %(ns)s, touch => false" + named + ")",
                        {"text": f"{c}", "q": q, "ns": NS, **args}))
    return out


def speed_calls(speed, dsn: str, n_queries: int) -> list[tuple[str, str, str, dict]]:
    """(case, mode, statement, parameters) on bench/speed.py's corpus (module speed): Memory.search's call for
    SciFact claims."""
    from memsql.client import Memory

    qs = speed.queries(n_queries)
    qv = speed.query_vectors(qs)
    mem = Memory(dsn=dsn)   # statement() only formats the call
    out = []
    for name, (args, _where) in speed.FILTERS.items():
        for q, v in list(zip(qs, qv))[: n_queries if name == "none" else speed.FILTER_QUERIES]:
            call = mem.statement("search", query=q, query_embeddings=[v], namespace="speed", touch=False, **args)
            stmt = call.sql.replace("SELECT * FROM", "SELECT memory_id, dense_rank, lexical_rank, lexical_score FROM", 1)
            out.append((name, "hybrid", stmt, call.params))
    return out


def centres_of(conn) -> np.ndarray:
    """The cluster centres of n100k, as the mean of each cluster's members (chunk_index // CLUSTER)."""
    rows = conn.execute("SELECT chunk_index / %s, avg(embedding) FROM memsql.memories WHERE namespace = %s "
                        "GROUP BY 1 ORDER BY 1 LIMIT 40", (CLUSTER, NS)).fetchall()
    vs = np.stack([np.asarray(getattr(r[1], "to_numpy", lambda: r[1])(), dtype=np.float32) for r in rows])
    return vs / np.linalg.norm(vs, axis=1, keepdims=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main")
    ap.add_argument("--base-only", action="append", default=[], metavar="FILE",
                    help="take only this file of sql/functions from --base, the others from the working tree "
                         "(repeatable; e.g. 20_search.sql against a base whose other files the schema has outgrown)")
    ap.add_argument("--base-database", default=None,
                    help="a database on the same server to run as the base variant (its own schema and functions)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--out", default="search_ab")
    ap.add_argument("--speed-size", type=int, default=None,
                    help="run on bench/speed.py's corpus of this many memories (database speed_N) instead")
    ap.add_argument("--queries", type=int, default=200, help="with --speed-size: SciFact claims, unfiltered")
    args = ap.parse_args()
    if args.speed_size:   # bench/speed.py's corpus, queries and filters
        import speed
        from benchdb import prewarm
    home = Path(os.environ.get("MEMSQL_HOME") or BENCH / ".cache" / "home")
    uri = server.embedded_start(home)
    ns = f"speed ({args.speed_size} memories)" if args.speed_size else NS
    dsn = psycopg.conninfo.make_conninfo(
        uri, dbname=f"speed_{args.speed_size}" if args.speed_size else "memsql_bench_filtered")
    base_rev = f"database {args.base_database}" if args.base_database else subprocess.run(
        ["git", "rev-parse", "--short", args.base], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()
    head_rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, check=True, capture_output=True,
                              text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "sql/functions"], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout.strip())
    res = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores", "namespace": ns,
           "variants": {"base": base_rev + (f" ({', '.join(args.base_only)} only)" if args.base_only else ""),
                        "new": head_rev + (" + working tree" if dirty else "")},
           "rounds": [], "load_start": loadavg()}
    times: dict[tuple[str, str, str], list[float]] = {}
    rows: dict[tuple[str, str, str], list] = {}
    with tempfile.TemporaryDirectory() as tmp, psycopg.connect(dsn, autocommit=True) as conn:
        if args.base_database:   # two databases: each variant keeps its own schema and functions
            db.migrate(dsn)
            db.configure(conn)
            conns = {"new": conn, "base": psycopg.connect(psycopg.conninfo.make_conninfo(
                uri, dbname=args.base_database), autocommit=True)}
            db.configure(conns["base"])
            files = None
        else:
            db.configure(conn)
            conns = {"new": conn, "base": conn}
            files = {"base": variant_files(args.base, Path(tmp) / "base", args.base_only),
                     "new": variant_files(None, Path(tmp))}
        if args.speed_size:
            if args.base_database:
                raise SystemExit("--base-database and --speed-size cannot be combined")
            prewarm(conn)
        todo = speed_calls(speed, dsn, args.queries) if args.speed_size else calls(centres_of(conn))
        for r in range(args.rounds):
            for v in ("base", "new") if r % 2 == 0 else ("new", "base"):
                c_ = conns[v]
                if files:
                    apply(conn, files[v])
                got = [c_.execute(stmt, params).fetchall() for _c, _m, stmt, params in todo]   # warm
                for (c, m, stmt, params), ids in zip(todo, got):
                    times.setdefault((v, c, m), []).append(explain_ms(c_, stmt, params))
                    if r < 2:
                        rows.setdefault((v, c, m), []).append(ids)
                res["rounds"].append({"round": r, "variant": v, "load": loadavg()})
                print(f"[round {r} {v}] load {res['rounds'][-1]['load']}", flush=True)
        if files:
            apply(conn, files["new"])
        else:
            conns["base"].close()
        conn.execute("SELECT 1")
    res["load_end"] = loadavg()
    res["cases"] = []
    for c in (list(speed.FILTERS) if args.speed_size else CASES):
        for m in ("hybrid",) if args.speed_size else ("dense", "hybrid"):
            b, n = times[("base", c, m)], times[("new", c, m)]
            res["cases"].append({"filter": c, "mode": m, "base_p50_ms": pct(b, 50), "new_p50_ms": pct(n, 50),
                                 "base_p99_ms": pct(b, 99), "new_p99_ms": pct(n, 99), "calls": len(b),
                                 "same_rows": rows[("base", c, m)] == rows[("new", c, m)]})
            print(res["cases"][-1], flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.out}.json").write_text(json.dumps(res, indent=1) + "\n")
    per_case = (f"{args.queries} SciFact train claims unfiltered and the first 20 under each filter (bench/speed.py's), "
                "per round; same rows = both variants returned the same memories in the same order with the same dense "
                "rank, lexical rank and BM25 for every query" if args.speed_size else
                "20 queries per case and round; same rows = both variants returned the same rows in the same order "
                "for every query")
    L = [f"# memory_search A/B at {ns} (bench/search_ab.py)", "",
         f"{res['when']}, {res['machine']}. base = "
         + (f"{args.base_database} (a copy of bench/filtered.py's database before the migration: its schema, "
            f"indexes and functions), new = memsql_bench_filtered migrated to {res['variants']['new']}; "
            f"{args.rounds} rounds alternating the variants in one process, one connection each, "
            if args.base_database else
            (f"sql/functions/{', '.join(args.base_only)} at {base_rev} (the other files as in new)"
               if args.base_only else f"sql/functions at {base_rev}")
            + f", new = {res['variants']['new']}; {args.rounds} rounds alternating the "
            f"variants in one process on one database ("
            + (f"bench/speed.py's speed_{args.speed_size}, prewarmed" if args.speed_size else "bench/filtered.py's")
            + "), ") +
         f"load (1-minute average) {res['load_start']} at start, {res['load_end']} at end, per round "
         + ", ".join(f"{x['variant']} {x['load']}" for x in res["rounds"]) + ". SQL time = planning + execution "
         "(EXPLAIN (ANALYZE, TIMING OFF)), k 10, " + per_case + ".", "",
         "| filter | call | base p50 ms | new p50 ms | base p99 ms | new p99 ms | calls | same rows |",
         "|---|---|---:|---:|---:|---:|---:|---|"]
    for x in res["cases"]:
        L.append(f"| {x['filter']} | {x['mode']} | {x['base_p50_ms']} | {x['new_p50_ms']} | {x['base_p99_ms']} | "
                 f"{x['new_p99_ms']} | {x['calls']} | {'yes' if x['same_rows'] else 'no'} |")
    (OUT / f"{args.out}.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
