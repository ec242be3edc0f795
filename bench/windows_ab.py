"""What scoring long memories by their windows (memsql.memory_windows) costs memory_search: A/B in one process.

    .venv/bin/python bench/windows_ab.py [--database memsql_genres] [--rounds 6] [--queries 200] [--out windows_ab]

Needs the database bench/quality.py builds with ``--database DB --keep-server`` on the bench home's server (its
SciFact, LongMemEval s_dev and dated-notes namespaces, windows computed by the ingest or Memory.embed_pending).
The variants are sql/functions of the working tree (new) and the same files with the pool's window lookup taken out
of memory_search (base: every memory scored by its own embedding, as before migration V0030); each round applies one
variant (memsql.db.apply_functions, committed), runs every query once untimed (plans made for the session), then
times every query; the variants alternate round by round (A B A B ...), so the load of the shared machine falls on
both alike. Calls: memory_search at its defaults (k 10, the query's text and embedding), the SciFact train claims in
beir-scifact (9,916 memories, 8,723 windowed), the dated-notes questions (32 memories) and the first LongMemEval
s_dev questions each in its own haystack (~500 memories, all conversation messages: no windows, the lookup is
skipped). SQL time = planning + execution (EXPLAIN (ANALYZE, TIMING OFF)). Same rows = both variants returned the
same rows in the same order (for the windowed namespace they differ by design). Writes
bench/results/<out>.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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

from corpora import beir, dated_notes, longmemeval  # noqa: E402
from embed_cache import CachingEmbedder  # noqa: E402
from filtered import explain_ms, loadavg, pct  # noqa: E402
from search_ab import apply  # noqa: E402

from memsql import db, server  # noqa: E402
from memsql.embedding import default_embedder  # noqa: E402

OUT = BENCH / "results"
DATA = REPO.parent / "shared" / "data"
CALL = ("SELECT memory_id FROM memsql.memory_search(%(t)s, ARRAY[%(q)s::vector], k => 10, namespace => %(ns)s, "
        "touch => false)")
WINDOW_START = "               -- a memory longer than one window"
WINDOW_END = "                        END) AS sim"
OWN = """               CASE WHEN u.sim IS NOT NULL AND nvar = 1 THEN u.sim
                    WHEN nvar = 1 THEN 1 - (m.embedding <=> query_embeddings[1])
                    ELSE (SELECT max(1 - (m.embedding <=> q.vec)) FROM unnest(query_embeddings) AS q(vec)) END AS sim"""


def base_files(into: Path) -> list[Path]:
    """The working tree's sql/functions with memory_search's pool reading the memory's own embedding only."""
    into.mkdir(parents=True, exist_ok=True)
    out = []
    for f in db.function_files():
        text = f.read_text(encoding="utf-8")
        if f.name == "20_search.sql":
            a, b = text.index(WINDOW_START), text.index(WINDOW_END) + len(WINDOW_END)
            text = text[:a] + OWN + text[b:]
        (into / f.name).write_text(text, encoding="utf-8")
        out.append(into / f.name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", default="memsql_genres")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--queries", type=int, default=200, help="queries per set at most")
    ap.add_argument("--out", default="windows_ab")
    args = ap.parse_args()
    home = Path(os.environ.get("MEMSQL_HOME") or BENCH / ".cache" / "home")
    dsn = psycopg.conninfo.make_conninfo(server.embedded_start(home), dbname=args.database)
    sets = {"scifact": beir(DATA / "scifact", limit_questions=args.queries),
            "notes": dated_notes(BENCH / "dated_notes"),
            "longmemeval s_dev": longmemeval(DATA / "longmemeval" / "s_dev", limit_questions=args.queries)}
    emb = CachingEmbedder(default_embedder(), BENCH / ".cache" / "embeddings.sqlite")
    todo = []
    for name, c in sets.items():
        qs = [q for q in c.questions if q.namespace][: args.queries]
        for q, v in zip(qs, emb.embed([q.text for q in qs])):
            todo.append((name, {"t": q.text, "q": np.asarray(v, dtype=np.float32), "ns": q.namespace}))
    emb.close()
    res = {"when": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
           "machine": f"{platform.machine()}, {os.cpu_count()} cores", "database": args.database,
           "rounds": [], "load_start": loadavg()}
    times: dict[tuple[str, str], list[float]] = {}
    rows: dict[tuple[str, str], list] = {}
    with tempfile.TemporaryDirectory() as tmp, psycopg.connect(dsn, autocommit=True) as conn:
        db.configure(conn)
        present = {r[0] for r in conn.execute("SELECT DISTINCT namespace FROM memsql.memories")}
        todo = [(n, p) for n, p in todo if p["ns"] in present]
        windowed = conn.execute("SELECT namespace, count(*) FILTER (WHERE cardinality(embeddings) > 0), count(*) "
                                "FROM memsql.memory_windows GROUP BY 1 ORDER BY 1").fetchall()
        res["windowed"] = {ns: {"windowed": a, "rows": b} for ns, a, b in windowed}
        files = {"base": base_files(Path(tmp) / "base"), "new": db.function_files()}
        for r in range(args.rounds):
            for v in ("base", "new") if r % 2 == 0 else ("new", "base"):
                apply(conn, files[v])
                got = [[x[0] for x in conn.execute(CALL, p)] for _n, p in todo]   # warm
                for (n, p), ids in zip(todo, got):
                    times.setdefault((v, n), []).append(explain_ms(conn, CALL, p))
                    if r < 2:
                        rows.setdefault((v, n), []).append(ids)
                res["rounds"].append({"round": r, "variant": v, "load": loadavg()})
                print(f"[round {r} {v}] load {res['rounds'][-1]['load']}", flush=True)
        apply(conn, files["new"])
    res["load_end"] = loadavg()
    res["sets"] = []
    for name in sets:
        if ("base", name) not in times:
            continue
        b, n = times[("base", name)], times[("new", name)]
        res["sets"].append({"set": name, "queries": len(b) // args.rounds, "base_p50_ms": pct(b, 50),
                            "new_p50_ms": pct(n, 50), "base_p99_ms": pct(b, 99), "new_p99_ms": pct(n, 99),
                            "same_rows": rows[("base", name)] == rows[("new", name)]})
        print(res["sets"][-1], flush=True)
    OUT.mkdir(exist_ok=True)
    (OUT / f"{args.out}.json").write_text(json.dumps(res, indent=1) + "\n")
    L = ["# memory_search with and without window scoring (bench/windows_ab.py)", "",
         f"{res['when']}, {res['machine']}, database {args.database}. base = sql/functions of the working tree with "
         "the pool's window lookup taken out (each memory by its own embedding), new = the working tree; "
         f"{args.rounds} rounds alternating the variants on one connection, load (1-minute average) "
         f"{res['load_start']} at start, {res['load_end']} at end. SQL time = planning + execution (EXPLAIN (ANALYZE, "
         "TIMING OFF)) of memory_search at its defaults, k 10; same rows = both variants returned the same rows in "
         "the same order for every query.", "",
         "| set | queries | base p50 ms | new p50 ms | base p99 ms | new p99 ms | same rows |",
         "|---|---:|---:|---:|---:|---:|---|"]
    for x in res["sets"]:
        L.append(f"| {x['set']} | {x['queries']} | {x['base_p50_ms']} | {x['new_p50_ms']} | {x['base_p99_ms']} | "
                 f"{x['new_p99_ms']} | {'yes' if x['same_rows'] else 'no'} |")
    L += ["", "Windowed memories per namespace (rows of memsql.memory_windows with at least one window / rows): "
          + ", ".join(f"{ns} {v['windowed']} / {v['rows']}" for ns, v in res["windowed"].items()) + "."]
    (OUT / f"{args.out}.md").write_text("\n".join(L) + "\n")
    print("\n".join(L))


if __name__ == "__main__":
    main()
