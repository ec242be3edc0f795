"""Load: N concurrent search clients plus one ingest for T seconds against the embedded server, then a consistency
check of everything written.

    MEMSQL_HOME=/tmp/memsql-home-7 .venv/bin/python bench/load.py [--clients 8] [--seconds 60] [--base 1000]

Data: SciFact abstracts and queries from ../shared/data/scifact (real text). A fresh database ``memsql_load`` on the
embedded server of $MEMSQL_HOME (default bench/.cache/load-home) gets the first ``--base`` abstracts; then, for
``--seconds``:

- ``--clients`` search processes (default 8), each with its own connection, loop over the SciFact queries: one
  ``Memory.search`` call each (one ``memory_search`` SQL call, k = 10, touch => true, so every search also writes
  access counts), with the query's embedding precomputed;
- one ingest process writes the following abstracts through the real pipeline (chunker, ``Ingestor``, one
  transaction per document) and, after every 4th batch of 8, replaces one of the first 20 stored abstracts by a
  changed version (the replace path, while they are being searched).

Vectors come from bench/.cache/embeddings.sqlite (filled by bench/quality.py; missing ones are encoded by the model),
so the run measures the database under concurrency rather than the CPU model competing with it.

Reported: searches/s, latency p50/p99/max (ms, the Memory.search call), errors (must be 0), ingest documents and
chunks per second, and the final consistency check: documents and memories equal to what the ingest reported, no
duplicate document (namespace, source_key) or memory (document, chunk_index), no memory without an embedding, exact
BM25 statistics (memory_health), and per document the access counts equal to the results the clients received (no
lost or extra increment; documents replaced during the run are left out: their old memories went with their counts). Writes bench/results/load.json and load.md (``--out``) and prints the Markdown.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(BENCH))

DATA = REPO.parent / "shared" / "data" / "scifact"
CACHE = BENCH / ".cache"
DATABASE = "memsql_load"
NAMESPACE = "scifact"


def embedder():
    from embed_cache import CachingEmbedder

    from memsql.embedding import default_embedder

    return CachingEmbedder(default_embedder(), CACHE / "embeddings.sqlite")


def documents():
    from corpora import beir

    corpus = beir(DATA)
    return corpus.documents[f"beir-{DATA.name}"], [q.text for q in corpus.questions]


# --- workers ------------------------------------------------------------------------------------------------------

def search_client(dsn: str, queries: list[str], vectors, start: float, stop: float, out) -> None:
    import numpy as np

    from memsql.api import Memory
    from memsql.errors import MemsqlError

    lat: list[float] = []
    errors: list[str] = []
    by_document: dict[int, int] = {}
    with Memory(dsn=dsn, namespace=NAMESPACE) as mem:
        mem._run(mem._stats_call(None))  # connect before the start
        time.sleep(max(0.0, start - time.time()))
        i = os.getpid() % len(queries)  # clients start at different queries
        while time.time() < stop:
            q, v = queries[i % len(queries)], np.asarray(vectors[i % len(queries)], dtype=np.float32)
            t0 = time.perf_counter()
            try:
                for r in mem.search(q, k=10, query_embeddings=[v], enrich=False):
                    by_document[r.document_id] = by_document.get(r.document_id, 0) + 1
            except MemsqlError as exc:
                errors.append(str(exc)[:200])
            lat.append(time.perf_counter() - t0)
            i += 1
    out.put({"latencies": lat, "errors": errors, "returned_by_document": by_document})


def ingest_client(dsn: str, docs, replace, start: float, stop: float, out) -> None:
    """New documents 8 at a time (each its own transaction) and, after every 4th batch, one stored document
    replaced by a changed version (document_upsert's replace path) while the searches run."""
    from memsql import db
    from memsql.ingest import IngestSummary, Ingestor

    emb = embedder()
    summary = IngestSummary()
    errors: list[str] = []
    replaced: list[str] = []
    with db.connect(dsn) as conn:
        ing = Ingestor(conn, emb, NAMESPACE, embed_group=64)
        time.sleep(max(0.0, start - time.time()))
        t0 = time.perf_counter()
        i = batch = 0
        while time.time() < stop and i < len(docs):
            try:
                ing.ingest(docs[i: i + 8], summary)
                batch += 1
                if batch % 4 == 0 and len(replaced) < len(replace):
                    d = replace[len(replaced)]
                    ing.ingest([d], summary)
                    replaced.append(d.source_key)
            except Exception as exc:  # noqa: BLE001 - counted, reported, and the run fails on any
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            i += 8
        seconds = time.perf_counter() - t0
    errors += [f"{s}: {r}" for s, r in summary.failed]
    out.put({"summary": summary.as_dict(), "attempted": min(i, len(docs)), "replaced_keys": replaced,
             "seconds": seconds, "errors": errors})


# --- checks -------------------------------------------------------------------------------------------------------

def consistency(dsn: str) -> dict:
    import psycopg

    with psycopg.connect(dsn) as conn:
        q = lambda s: conn.execute(s).fetchone()[0]  # noqa: E731
        health = {r[0]: (r[1], r[2]) for r in conn.execute('SELECT "check", ok, value FROM memsql.memory_health()')}
        return {
            "documents": q("SELECT count(*) FROM memsql.documents"),
            "memories": q("SELECT count(*) FROM memsql.memories"),
            "duplicate_documents": q("SELECT count(*) FROM (SELECT 1 FROM memsql.documents "
                                     "GROUP BY namespace, source_key HAVING count(*) > 1) x"),
            "duplicate_memories": q("SELECT count(*) FROM (SELECT 1 FROM memsql.memories "
                                    "GROUP BY namespace, document_id, chunk_index HAVING count(*) > 1) x"),
            "duplicate_contents_in_a_document": q(
                "SELECT count(*) FROM (SELECT 1 FROM memsql.memories "
                "GROUP BY namespace, document_id, content_hash, chunk_index HAVING count(*) > 1) x"),
            "memories_without_embedding": q("SELECT count(*) FROM memsql.memories WHERE embedding IS NULL"),
            "documents_without_memories": q("SELECT count(*) FROM memsql.documents d WHERE NOT EXISTS ("
                                            "SELECT 1 FROM memsql.memories m WHERE m.namespace = d.namespace "
                                            "AND m.document_id = d.id)"),
            "access_count_sum": q("SELECT coalesce(sum(access_count), 0)::bigint FROM memsql.memory_access"),
            "bm25_statistics_exact": health["bm25_statistics"][0],
        }


def owner_vs_role(dsn: str, role_dsn: str, queries: list[str], vectors, rounds: int = 3) -> dict:
    """Single-client latency of the same searches as the owner and as the role, interleaved (so machine load hits
    both alike), touch => false; the first round warms up and is not counted. Rankings must be identical."""
    import numpy as np

    from memsql.api import Memory

    lat: dict[str, list[float]] = {"owner": [], "role": []}
    same = True
    with Memory(dsn=dsn, namespace=NAMESPACE) as owner, Memory(dsn=role_dsn, namespace=NAMESPACE) as role:
        for rnd in range(rounds):
            for q, v in zip(queries[:100], vectors[:100]):
                v = np.asarray(v, dtype=np.float32)
                ids = {}
                for name, mem in (("owner", owner), ("role", role)):
                    t0 = time.perf_counter()
                    ids[name] = [r.memory_id for r in mem.search(q, k=10, query_embeddings=[v], enrich=False,
                                                                 touch=False)]
                    if rnd:
                        lat[name].append(time.perf_counter() - t0)
                same = same and ids["owner"] == ids["role"]
    out = {"identical_rankings": same}
    for name, values in lat.items():
        q = statistics.quantiles(values, n=100, method="inclusive")
        out[name] = {"searches": len(values), "p50_ms": q[49] * 1000, "p90_ms": q[89] * 1000}
    return out


def machine() -> dict:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "loadavg_1_5_15": [round(x, 2) for x in load], "python": platform.python_version(),
            "platform": platform.platform()}


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:  # noqa: BLE001
        return "unknown"


def markdown(r: dict) -> str:
    s, c, i = r["search"], r["consistency"], r["ingest"]
    lines = [
        "# Load: concurrent searches + one ingest (bench/load.py)",
        "",
        f"{r['date']}, commit {r['commit']}, {r['machine']['cpus']} CPUs shared with other developers' work: load "
        f"average (1/5/15 min) {r['machine_before']['loadavg_1_5_15']} before, {r['machine']['loadavg_1_5_15']} after. "
        f"Data: SciFact ({r['base_documents']} abstracts stored first, then the ingest adds more); embedded "
        "PostgreSQL 18 + pgvector on its unix socket.",
        "",
        f"Searches and ingest run as: {r['role']}" + (" (Row Level Security applies)" if r["role"] != "owner" else
                                                       " (the tables' owner: no Row Level Security)") + ".",
        "",
        "| clients | seconds | searches | searches/s | p50 ms | p99 ms | max ms | search errors |",
        "|---|---|---|---|---|---|---|---|",
        f"| {r['clients']} | {r['seconds']} | {s['count']} | {s['per_second']:.1f} | {s['p50_ms']:.1f} | "
        f"{s['p99_ms']:.1f} | {s['max_ms']:.1f} | {s['errors']} |",
        "",
        "| ingest: documents sent | inserted | replaced | chunks written | docs/s | chunks/s | ingest errors |",
        "|---|---|---|---|---|---|---|",
        f"| {i['attempted'] + len(i['replaced_keys'])} | {i['summary']['inserted']} | {i['summary']['replaced']} | "
        f"{i['summary']['chunks']} | {i['docs_per_second']:.1f} | {i['chunks_per_second']:.1f} | {len(i['errors'])} |",
        "",
        "Consistency after the run:",
        "",
        "| check | expected | found |",
        "|---|---|---|",
    ]
    for name, (want, got) in r["checks"].items():
        lines.append(f"| {name} | {want} | {got} |")
    lines += ["", f"All checks pass: **{r['ok']}**.", ""]
    c = r.get("owner_vs_role")
    if c:
        lines += [
            "Owner vs role, one client, the same 100 queries interleaved (2 rounds after a warm-up, touch => false), "
            f"identical rankings: **{c['identical_rankings']}**:",
            "",
            "| as | searches | p50 ms | p90 ms |",
            "|---|---|---|---|",
            f"| owner (no RLS) | {c['owner']['searches']} | {c['owner']['p50_ms']:.1f} | {c['owner']['p90_ms']:.1f} |",
            f"| {r['role']} (RLS) | {c['role']['searches']} | {c['role']['p50_ms']:.1f} | {c['role']['p90_ms']:.1f} |",
            "",
        ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--base", type=int, default=1000, help="abstracts stored before the run")
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("MEMSQL_HOME") or CACHE / "load-home"))
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "load")
    parser.add_argument("--as-role", default=None, metavar="NAME",
                        help="search and ingest as a role made by memsql.role_create for the namespace (Row Level "
                             "Security applies to it, not to the owner)")
    args = parser.parse_args()
    if not DATA.is_dir():
        print(f"no data at {DATA}", file=sys.stderr)
        return 2

    from memsql import db, server
    from memsql.adapters.base import Document, Section
    from memsql.ingest import Ingestor

    before = machine()
    docs, queries = documents()
    emb = embedder()
    from benchdb import fresh_database

    from memsql import db, server

    dsn = fresh_database(server.embedded_start(args.home.resolve()), DATABASE)
    t0 = time.perf_counter()
    with db.connect(dsn) as conn:
        base = Ingestor(conn, emb, NAMESPACE).ingest(docs[: args.base])
    print(f"base: {base.inserted} documents, {base.chunks} chunks in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    qvecs = [v.tolist() for v in emb.embed(queries)]
    rest = docs[args.base:]
    replace = [Document(source_key=d.source_key, adapter=d.adapter, title=d.title, source_uri=d.source_uri,
                        sections=(Section(text=d.sections[0].text + " (revised)"),)) for d in docs[:20]]
    from memsql.chunking import chunk_document

    emb.embed([c.embed_text for d in replace for c in chunk_document(d)])  # cached now: the ingest never loads the model

    work_dsn = dsn
    if args.as_role:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT memsql.role_create(%s, %s)", (args.as_role, NAMESPACE))
        work_dsn = db.with_user(dsn, args.as_role)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start = time.time() + 15.0  # every process connected and warm by then
    stop = start + args.seconds
    procs = [ctx.Process(target=search_client, args=(work_dsn, queries, qvecs, start, stop, out))
             for _ in range(args.clients)]
    procs.append(ctx.Process(target=ingest_client, args=(work_dsn, rest, replace, start, stop, out)))
    for p in procs:
        p.start()
    results = [out.get(timeout=args.seconds + 600) for _ in procs]
    for p in procs:
        p.join()
    ingest = next(r for r in results if "summary" in r)
    clients = [r for r in results if "latencies" in r]
    lat = sorted(x for c in clients for x in c["latencies"])
    errors = [e for c in clients for e in c["errors"]]
    returned: dict[int, int] = {}
    for c in clients:
        for doc_id, n in c["returned_by_document"].items():
            returned[doc_id] = returned.get(doc_id, 0) + n
    q = statistics.quantiles(lat, n=100, method="inclusive") if len(lat) >= 2 else [0.0] * 99
    search = {"count": len(lat), "per_second": len(lat) / args.seconds, "p50_ms": q[49] * 1000,
              "p99_ms": q[98] * 1000, "max_ms": (lat[-1] if lat else 0) * 1000, "errors": len(errors),
              "error_samples": errors[:5], "results_returned": sum(returned.values())}
    written = ingest["summary"]["inserted"] + ingest["summary"]["replaced"]
    ingest["docs_per_second"] = written / ingest["seconds"]
    ingest["chunks_per_second"] = ingest["summary"]["chunks"] / ingest["seconds"]
    cons = consistency(dsn)
    old_chunks = {d.source_key: len(chunk_document(d)) for d in docs[: len(replace)]}
    expected_docs = base.inserted + ingest["summary"]["inserted"]
    expected_mems = base.chunks + ingest["summary"]["chunks"] - sum(old_chunks[k] for k in ingest["replaced_keys"])
    # access counts: a replaced document's old memories left with their counts (by design), so compare the others
    import psycopg

    with psycopg.connect(dsn) as conn:
        replaced_ids = {r[0] for r in conn.execute("SELECT id FROM memsql.documents WHERE source_key = ANY(%s)",
                                                   (ingest["replaced_keys"],))}
        stored_access = dict(conn.execute(
            "SELECT m.document_id, sum(a.access_count)::bigint FROM memsql.memory_access a JOIN memsql.memories m "
            "ON m.namespace = a.namespace AND m.id = a.memory_id GROUP BY 1").fetchall())
    want_access = {d: n for d, n in returned.items() if d not in replaced_ids}
    got_access = {d: n for d, n in stored_access.items() if d not in replaced_ids}
    lost = sum(max(0, n - got_access.get(d, 0)) for d, n in want_access.items())
    extra = sum(max(0, n - want_access.get(d, 0)) for d, n in got_access.items())
    checks = {
        "search errors": (0, search["errors"]),
        "ingest errors": (0, len(ingest["errors"])),
        "documents": (expected_docs, cons["documents"]),
        "memories": (expected_mems, cons["memories"]),
        "duplicate documents": (0, cons["duplicate_documents"]),
        "duplicate memories": (0, cons["duplicate_memories"]),
        "memories without embedding": (0, cons["memories_without_embedding"]),
        "documents without memories": (0, cons["documents_without_memories"]),
        "BM25 statistics exact": (True, cons["bm25_statistics_exact"]),
        "access increments lost": (0, lost),
        "access increments extra": (0, extra),
    }
    compare = owner_vs_role(dsn, work_dsn, queries, qvecs) if args.as_role else None
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(),
        "machine_before": before, "machine": machine(), "clients": args.clients, "seconds": args.seconds,
        "role": args.as_role or "owner",
        "base_documents": base.inserted, "base_chunks": base.chunks, "search": search,
        "ingest": {k: v for k, v in ingest.items()}, "consistency": cons,
        "checks": {k: list(v) for k, v in checks.items()},
        "ok": all(want == got for want, got in checks.values()),
        "owner_vs_role": compare,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    md = markdown({**report, "checks": checks})
    args.out.with_suffix(".md").write_text(md)
    print(md)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
