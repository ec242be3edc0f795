"""Retrieval quality of memsql's search methods, side by side in one run.

    .venv/bin/python bench/quality.py [--locomo FILE] [--beir DIR] [--methods NAME ...]
                                      [--extra 'NAME=OPTION=VALUE[,OPTION=VALUE]'] [--limit-queries N]

Every dataset goes through the real pipeline: Documents -> Ingestor (normal chunker, batch 64) ->
a fresh database ``memsql_bench`` (dropped and recreated each run, then migrated) on the embedded
server of bench/.cache/home. Vectors are cached in bench/.cache/embeddings.sqlite, so a second run
encodes nothing. Each question is embedded once and the same vector is given to every method;
every search passes touch=False.

Ranking is memory_search's alone. Python only maps chunk ranks to judged-item ranks (a LoCoMo
turn's dia_id, a BEIR document's id), each item keeping its first occurrence; ranx computes every
metric. Latency is the ``Memory.search`` call (SQL round trip plus row decoding, query embedding
excluded), per method and dataset.

Datasets: LoCoMo dev, SciFact train, LongMemEval oracle_dev (all) and s_dev (a stated subset; --s-full for all
323), bench/dated_notes. Writes bench/results/quality.json and quality.md (``--out`` to change) and prints the Markdown.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))  # run as a script from any directory without installing

import numpy as np  # noqa: E402
import psycopg  # noqa: E402

from benchdb import fresh_database, settle  # noqa: E402
from corpora import Corpus, beir, dated_notes, locomo, longmemeval  # noqa: E402
from embed_cache import CachingEmbedder  # noqa: E402
from memsql import server  # noqa: E402
from memsql.calls import VERBS  # noqa: E402
from memsql.client import Memory  # noqa: E402
from memsql.config import SCHEMA  # noqa: E402
from memsql.embedding import default_embedder  # noqa: E402
from memsql.evaluate import evaluate_runs, ranks_to_run  # noqa: E402
from memsql.ingest import IngestSettings, IngestSummary, Ingestor  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
CACHE = BENCH / ".cache"
DATABASE = "memsql_bench"
DEFAULT_K = 10  # memory_search's default k: the timings are also taken at it

DATASETS = ("locomo", "beir", "lme-oracle", "lme-s", "notes")
S_QUESTIONS = 48
"""LongMemEval s_dev questions run by default: 8 of each question_type (round robin, file order), abstention
questions then skipped; ``--s-full`` runs all 323."""

SEARCH_OPTIONS = tuple(a.name for a in VERBS["search"].sql_args[VERBS["search"].positional:])

METHODS: dict[str, dict[str, Any]] = {
    "default": {},                                                # memory_search defaults (memory axis on)
    # the arms alone (no memory axis, an assistant's words weighed as anyone's)
    "bm25-textbook": {"query_embeddings": [], "memory_rerank": False, "assistant_weight": 1.0, "bm25_k1": 1.2,
                      "bm25_b": 0.75},
    "lexical": {"query_embeddings": [], "memory_rerank": False, "assistant_weight": 1.0},  # memsql's BM25 defaults
    "dense": {"lexical_weight": 0.0, "memory_rerank": False, "assistant_weight": 1.0},     # lexical weight 0
    "hybrid": {"memory_rerank": False},                           # memory_search's default fusion, axis off
    "hybrid-rrf": {"fusion": "rrf", "memory_rerank": False},      # RRF (k = 60, weights 1)
    "hybrid+enrich": {"query_embeddings": None, "enrich": True, "memory_rerank": False},  # + key-term variants
}
"""Method name -> Memory.search keyword arguments (touch=False is added to all). Add a variant in one
line, e.g. ``"rrf_k=10": {"fusion": "rrf", "rrf_k": 10, "memory_rerank": False}``. Without
``query_embeddings`` a method gets the question's precomputed embedding."""


def parse_extra(spec: str) -> tuple[str, dict[str, Any]]:
    """One ``--extra`` method: ``NAME=OPTION=VALUE[,OPTION=VALUE...]``, on top of "hybrid".

    Values: true/false, integers, floats, else strings. Example: ``dw0.5=dense_weight=0.5``
    gives method "dw0.5" = {"memory_rerank": False, "dense_weight": 0.5}; ``base=METHOD`` first starts from
    another method (``k1=base=default,bm25_k1=1.2``: memory_search's defaults, axis on, with k1 1.2).

    Raises:
        argparse.ArgumentTypeError: malformed spec or an option memory_search does not have.
    """
    name, sep, rest = spec.partition("=")
    if not name or not sep or not rest:
        raise argparse.ArgumentTypeError(f"--extra {spec!r}: expected NAME=OPTION=VALUE[,OPTION=VALUE]")
    kwargs: dict[str, Any] = dict(METHODS["hybrid"])
    for pair in rest.split(","):
        option, sep, raw = pair.partition("=")
        option = option.strip()
        if option == "base" and raw.strip() in METHODS:  # start from another method, e.g. base=default
            kwargs = {**dict(METHODS[raw.strip()]), **{k: v for k, v in kwargs.items() if k not in METHODS["hybrid"]}}
            continue
        if not sep or option not in SEARCH_OPTIONS or option == "touch":
            raise argparse.ArgumentTypeError(
                f"--extra {spec!r}: {option!r} is not a memory_search option ({', '.join(SEARCH_OPTIONS[:-1])})")
        kwargs[option] = _value(raw.strip())
    return name, kwargs


def _value(raw: str) -> Any:
    if raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


def parse_half_life(spec: str) -> tuple[str, float | None]:
    """One ``--half-life``: ``TYPE=DAYS`` (DAYS a number > 0, or ``never`` for no decay), e.g. ``conversation=45``;
    checked by the rule of memsql.toml's [memory.scoring] half_life_days (memsql.config.SCHEMA).

    Raises:
        argparse.ArgumentTypeError: malformed spec, a knowledge_type name memsql refuses, or DAYS neither a
            positive number nor ``never``.
    """
    name, _, raw = (part.strip() for part in spec.partition("="))
    days: Any = "never" if raw.lower() == "never" else _value(raw)
    if not SCHEMA["memory.scoring"]["half_life_days"][1]({name: days}):
        raise argparse.ArgumentTypeError(f"--half-life {spec!r}: expected TYPE=DAYS, TYPE a knowledge_type name "
                                         "(lower case: a letter, then letters, digits or _), DAYS > 0 or 'never', "
                                         "e.g. conversation=45")
    return name, None if days == "never" else float(days)


# ---------------------------------------------------------------------------------------------
# Database


def sql_digest() -> str:
    """sha256 (first 12 hex) of every file under sql/ as migrated: names what was measured on a dirty tree."""
    h = hashlib.sha256()
    for path in sorted((REPO / "sql").rglob("*.sql")):
        h.update(path.relative_to(REPO).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def shown_path(path: str) -> str:
    """A dataset path relative to the repository (e.g. ../shared/data/scifact), so results read the same anywhere."""
    return os.path.relpath(path, REPO)


# ---------------------------------------------------------------------------------------------
# One dataset


def _percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def run_dataset(mem: Memory, embedder: CachingEmbedder, corpus: Corpus,
                methods: dict[str, dict[str, Any]], sql_timings: bool = True) -> dict[str, Any]:
    """Ingest one corpus, run every method on every question, score with ranx.

    A corpus with judged levels (LongMemEval: turn and session) is scored at each level ("<level>/<metric>"),
    with groups (question_type) also per group; with reference times each search passes its question's
    (memory_search's ``reference_time``) when memory_search takes one.

    Returns:
        {"info", "ingest", "embedding", "query_embedding", "results": {method: {"metrics", "latency_ms",
        ["by_group": {group: {metric: value}}]}}}.
    """
    print(f"[{corpus.name}] ingest: {sum(map(len, corpus.documents.values()))} documents "
          f"into {len(corpus.documents)} namespace(s)", flush=True)
    before = embedder.stats()
    embedder.label = f"{corpus.name} chunks"
    summary = IngestSummary()
    timed = _TimedEmbedder(embedder)
    for namespace, docs in corpus.documents.items():
        Ingestor(mem.conn, timed, namespace, IngestSettings(batch_size=64)).ingest(docs, summary)
    t_embed = timed.seconds
    settle(mem.conn)
    after = embedder.stats()
    if summary.failed:
        print(f"[{corpus.name}] {len(summary.failed)} documents failed, e.g. {summary.failed[0]}", flush=True)
    chunks = summary.chunks
    encoded = after["misses"] - before["misses"]
    encode_s = after["encode_seconds"] - before["encode_seconds"]
    ingest = {"documents": summary.documents, "chunks": chunks, "failed": len(summary.failed),
              "seconds": round(summary.seconds, 2), "chunks_per_s": round(chunks / summary.seconds, 1),
              "embed_seconds": round(t_embed, 2), "write_seconds": round(summary.seconds - t_embed, 2)}
    embedding = {"texts": chunks, "cache_hits": after["hits"] - before["hits"], "encoded": encoded,
                 "encode_seconds": round(encode_s, 2),
                 "encoded_per_s": round(encoded / encode_s, 1) if encoded else None,
                 "model_load_seconds": round(after["load_seconds"] - before["load_seconds"], 2),
                 "when_cached": embedder.recorded(embedder.label)}
    print(f"[{corpus.name}] {chunks} chunks in {summary.seconds:.1f}s (embedding {t_embed:.1f}s: "
          f"{embedding['encoded']} encoded, {embedding['cache_hits']} cached)", flush=True)

    t = time.perf_counter()
    embedder.label = f"{corpus.name} questions"
    q0 = embedder.stats()
    qvecs = embedder.embed([q.text for q in corpus.questions])
    q1 = embedder.stats()
    query_embedding = {"questions": len(corpus.questions), "seconds": round(time.perf_counter() - t, 2),
                       "encoded": q1["misses"] - q0["misses"], "cache_hits": q1["hits"] - q0["hits"]}

    qrels = {q.id: q.relevant for q in corpus.questions}
    if not methods:  # --ingest-only: the cache is filled, nothing is searched
        return {"source": shown_path(corpus.source), "info": corpus.info, "search_k": corpus.search_k,
                "ingest": ingest, "embedding": embedding, "query_embedding": query_embedding, "results": {}}
    if corpus.questions:  # warm the server's caches once, outside the timings
        first = corpus.questions[0]
        mem.search(first.text, k=corpus.search_k, namespace=first.namespace, query_embeddings=[qvecs[0]], touch=False)
    runs: dict[str, dict[str, dict[str, float]]] = {}
    latency: dict[str, list[float]] = {}
    sql_ms: dict[str, list[float]] = {}
    sql_ms_default_k: dict[str, list[float]] = {}   # the same call at memory_search's default k
    cpu_ms: dict[str, list[float]] = {}
    cpu = backend_cpu_ns(mem)
    for name, kwargs in methods.items():
        runs[name], latency[name], sql_ms[name], sql_ms_default_k[name], cpu_ms[name] = {}, [], [], [], []
        for q, vec in zip(corpus.questions, qvecs):
            options = {"query_embeddings": [vec], **kwargs, "touch": False}
            if corpus.reference_time and "reference_time" in SEARCH_OPTIONS and corpus.reference_time.get(q.id):
                options.setdefault("reference_time", corpus.reference_time[q.id])
            t = time.perf_counter()
            results = mem.search(q.text, k=corpus.search_k, namespace=q.namespace, **options)
            latency[name].append((time.perf_counter() - t) * 1000)
            runs[name][q.id] = ranks_to_run(corpus.item_of(r) for r in results)
            if sql_timings and options["query_embeddings"] is not None:  # SQL time of the same call (enrichment
                                                                           # embeds inside)
                wall, used = sql_time_ms(mem, q, corpus.search_k, options, cpu)
                sql_ms[name].append(wall)
                if used is not None:
                    cpu_ms[name].append(used)
                sql_ms_default_k[name].append(sql_time_ms(mem, q, DEFAULT_K, options, None)[0])
        print(f"[{corpus.name}] {name}: {len(corpus.questions)} searches, "
              f"p50 {statistics.median(latency[name]):.1f} ms"
              + (f", SQL p50 {statistics.median(sql_ms[name]):.2f} ms" if sql_ms[name] else ""), flush=True)
    metrics, by_group = score_runs(corpus, qrels, runs)
    results = {
        name: {"metrics": metrics[name], **({"by_group": by_group[name]} if by_group else {}),
               "latency_ms": {"p50": round(_percentile(latency[name], 50), 2),
                              "p99": round(_percentile(latency[name], 99), 2),
                              "mean": round(statistics.fmean(latency[name]), 2)},
               "sql_ms": ({"p50": round(_percentile(sql_ms[name], 50), 2), "p99": round(_percentile(sql_ms[name], 99), 2)}
                          if sql_ms[name] else None),
               "sql_ms_default_k": ({"k": DEFAULT_K, "p50": round(_percentile(sql_ms_default_k[name], 50), 2),
                                     "p99": round(_percentile(sql_ms_default_k[name], 99), 2)}
                                    if sql_ms_default_k[name] else None),
               "sql_cpu_ms": ({"p50": round(_percentile(cpu_ms[name], 50), 2),
                               "p99": round(_percentile(cpu_ms[name], 99), 2)} if cpu_ms[name] else None)}
        for name in methods
    }
    return {"source": shown_path(corpus.source), "info": corpus.info, "search_k": corpus.search_k, "ingest": ingest,
            "embedding": embedding, "query_embedding": query_embedding, "results": results}


def _ranx_name(metric: str) -> str:
    """A reported metric's ranx name: recall_any@k is hit_rate@k, recall_all@k is computed from recall@k."""
    if metric == "top1":
        return "precision@1"
    return metric.replace("recall_any@", "hit_rate@").replace("recall_all@", "recall@")


def score_runs(corpus: Corpus, qrels: dict[str, dict[str, int]], runs: dict[str, dict[str, dict[str, float]]]
               ) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, dict[str, float]]]]:
    """Metrics of every method: overall (and per group when the corpus has groups), at every judged level.

    ranx computes every value per question; recall_all@k is the share of questions whose ranx recall@k is 1.
    At a level other than the items themselves each run is mapped first (a turn to its session, first occurrence
    kept) and judged against that level's qrels.

    Returns:
        (method -> {metric: value}, method -> {group: {metric: value}}); with levels the metric names are
        "<level>/<metric>"; the second is {} without groups.
    """
    levels = corpus.levels or {"": (lambda item: item, qrels)}
    overall: dict[str, dict[str, float]] = {name: {} for name in runs}
    grouped: dict[str, dict[str, dict[str, float]]] = {name: {} for name in runs} if corpus.groups else {}
    for level, (mapping, level_qrels, *own) in levels.items():
        level_metrics = own[0] if own else corpus.metrics
        names = sorted({_ranx_name(m) for m in level_metrics})
        mapped = {name: {qid: ranks_to_run(mapping(item) for item in sorted(run, key=run.get, reverse=True))
                         for qid, run in method_runs.items() if qid in level_qrels}
                  for name, method_runs in runs.items()}
        scores = evaluate_runs(level_qrels, mapped, metrics=names, per_query=True)
        prefix = f"{level}/" if level else ""
        for name in runs:
            per_query = scores[name]["per_query"]
            buckets: dict[str, list[str]] = {"": list(per_query)}
            if corpus.groups:
                for qid in per_query:
                    buckets.setdefault(corpus.groups[qid], []).append(qid)
            for bucket, qids in buckets.items():
                values = {}
                for metric in level_metrics:
                    column = [per_query[q][_ranx_name(metric)] for q in qids]
                    if metric.startswith("recall_all@"):
                        column = [1.0 if v >= 1.0 - 1e-9 else 0.0 for v in column]
                    values[prefix + metric] = round(statistics.fmean(column), 4)
                if bucket == "":
                    overall[name].update(values)
                else:
                    grouped[name].setdefault(bucket, {}).update({f"{prefix}questions": len(qids), **values})
    return overall, grouped


def backend_cpu_ns(mem: Memory) -> Callable[[], int] | None:
    """A reader of the CPU time (ns) the server process of ``mem``'s connection has used, from
    /proc/<pid>/schedstat; None when the server is not on this machine or the file is not readable."""
    pid = mem.conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    mem.conn.rollback()
    path = Path(f"/proc/{pid}/schedstat")
    try:
        path.read_text()
    except OSError:
        return None
    return lambda: int(path.read_text().split()[0])


def sql_time_ms(mem: Memory, q, k: int, options: dict[str, Any], cpu: Callable[[], int] | None) -> tuple[float, float | None]:
    """Server time of one memory_search call: planning + execution of EXPLAIN (ANALYZE, TIMING OFF), which runs
    the function once more with the same arguments (touch is false) and leaves out the client round trip and the
    decoding of rows; and the CPU time the server process spent on it (ns resolution; unlike the wall time it does
    not grow when other processes share the cores)."""
    opts = {k_: v for k_, v in options.items() if k_ != "query_embeddings"}
    call = mem.statement("search", query=q.text, query_embeddings=options["query_embeddings"], k=k,
                         namespace=q.namespace, **opts)
    c0 = cpu() if cpu else None
    with mem.conn.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + call.sql, call.params)
        plan = cur.fetchone()[0][0]
    c1 = cpu() if cpu else None
    mem.conn.rollback()
    return plan["Planning Time"] + plan["Execution Time"], ((c1 - c0) / 1e6 if cpu else None)


class _TimedEmbedder:
    """Pass-through embedder that adds up the wall time of ``embed`` (cache lookups included)."""

    def __init__(self, inner: CachingEmbedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        self.seconds = 0.0

    def embed(self, texts, batch_size: int = 64):
        t = time.perf_counter()
        try:
            return self.inner.embed(texts, batch_size=batch_size)
        finally:
            self.seconds += time.perf_counter() - t


# ---------------------------------------------------------------------------------------------
# Output


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


HEADLINE = {
    "locomo": ("recall@10", "ndcg@10"),
    "scifact": ("ndcg@10", "recall@100"),
    "longmemeval-oracle_dev": ("session/recall_all@5", "turn/recall_any@5", "turn/ndcg@10"),
    "longmemeval-s_dev": ("session/recall_all@5", "turn/recall_any@5", "turn/ndcg@10"),
    "notes": ("answer/top1", "graded/ndcg@10"),
}
"""The columns of the summary table: per dataset the figures the targets are stated in."""

PUBLISHED = {
    "longmemeval-s_dev": "Published on LongMemEval_S with all-MiniLM-L6-v2 (other systems' runs on all 500 questions, "
                         "not this split; data README): session recall@5 0.966 (vector only), 0.952 (BM25 + vector); "
                         "turn recall@5 0.804, turn nDCG@10 0.822.",
    "longmemeval-oracle_dev": "No published retrieval figures for the oracle split (each haystack holds only the "
                              "evidence sessions).",
    "scifact": "Published (test split, nDCG@10): BM25 0.665 (BEIR paper), all-MiniLM-L6-v2 dense about 0.645 (MTEB).",
}


def _fmt(v: Any) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def to_markdown(res: dict[str, Any]) -> str:
    """The results as Markdown: a summary (every method on every dataset), then per dataset its metrics table
    (per group too, e.g. LongMemEval question_type), its timings, sizes."""
    dirty = " (uncommitted changes)" if res["dirty"] else ""
    lines = ["# memsql retrieval quality", "",
             f"Commit `{res['commit']}`{dirty}, sql/ sha256 `{res['sql_sha256']}`, {res['date']}, "
             f"{res['machine']['cpus']} CPUs (load average at the end {res['machine'].get('loadavg_at_end')}), "
             f"model {res['model']}. Total run {res['total_seconds']:.0f} s.", ""]
    datasets = {n: d for n, d in res["datasets"].items() if d["results"]}
    methods = list(dict.fromkeys(m for d in datasets.values() for m in d["results"]))
    cols = [(n, m) for n, d in datasets.items()
            for m in HEADLINE.get(n, tuple(next(iter(d["results"].values()))["metrics"])[:2])]
    if cols:
        lines += ["## Summary", "", "| method | " + " | ".join(f"{n} {m}" for n, m in cols) + " |",
                  "|---|" + "---:|" * len(cols)]
        for method in methods:
            cells = [_fmt(datasets[n]["results"][method]["metrics"].get(m, "-")) if method in datasets[n]["results"]
                     else "-" for n, m in cols]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
    for name, d in datasets.items():
        metrics = list(next(iter(d["results"].values()))["metrics"])
        info = ", ".join(f"{k} {v}" for k, v in d["info"].items() if not isinstance(v, dict) and v is not None)
        lines += [f"## {name}", "", f"`{d['source']}`: {info}; {d['ingest']['chunks']} chunks; "
                  f"{d['search_k']} memories per search.", ""]
        if name in PUBLISHED:
            lines += [PUBLISHED[name], ""]
        lines += ["| method | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
        for method, r in d["results"].items():
            lines.append(f"| {method} | " + " | ".join(_fmt(r["metrics"].get(m, "-")) for m in metrics) + " |")
        groups = sorted({g for r in d["results"].values() for g in r.get("by_group", {})})
        if groups:
            shown = HEADLINE.get(name, tuple(metrics[:2]))
            first = next(iter(d["results"].values()))["by_group"]
            counts = [str(max(v for k, v in first[g].items() if k.endswith("questions"))) for g in groups]
            lines += ["", f"Per group ({' / '.join(shown)}; questions per group in the header):", "",
                      "| method | " + " | ".join(f"{g} ({c})" for g, c in zip(groups, counts)) + " |",
                      "|---|" + "---:|" * len(groups)]
            for method, r in d["results"].items():
                cells = [" / ".join(f"{r['by_group'][g][m]:.3f}" if m in r["by_group"].get(g, {}) else "-"
                                    for m in shown) for g in groups]
                lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines += ["", "| method | SQL p50 ms | SQL p99 ms | SQL CPU p50 ms | SQL CPU p99 ms "
                  f"| SQL p50 ms, k={DEFAULT_K} | SQL p99 ms, k={DEFAULT_K} | call p50 ms | call p99 ms |",
                  "|---|" + "---:|" * 8]
        for method, r in d["results"].items():
            sq, cq = r.get("sql_ms") or {}, r.get("sql_cpu_ms") or {}
            dk = r.get("sql_ms_default_k") or {}
            sql_cols = (f"{sq['p50']:.2f} | {sq['p99']:.2f}" if sq else "- | -") + " | " + (
                f"{cq['p50']:.2f} | {cq['p99']:.2f}" if cq else "- | -") + " | " + (
                f"{dk['p50']:.2f} | {dk['p99']:.2f}" if dk else "- | -")
            lines.append(f"| {method} | {sql_cols} | {r['latency_ms']['p50']:.1f} | {r['latency_ms']['p99']:.1f} |")
        ing, emb = d["ingest"], d["embedding"]
        rate = f", {emb['encoded_per_s']} chunks/s" if emb["encoded"] else ""
        filled = emb.get("when_cached")
        cached = (f" The model encoded these chunks at {filled['per_s']} chunks/s ({filled['texts']} in "
                  f"{filled['seconds']} s) when the cache was filled." if filled else "")
        lines += ["", f"Ingest {ing['seconds']} s ({ing['chunks_per_s']} chunks/s): embedding {ing['embed_seconds']} s "
                  f"({emb['encoded']} encoded in {emb['encode_seconds']} s{rate}; {emb['cache_hits']} cache hits), "
                  f"chunking and writes {ing['write_seconds']} s. Query embeddings {d['query_embedding']['seconds']} s "
                  f"({d['query_embedding']['encoded']} encoded).{cached}", ""]
    lines += ["Methods (Memory.search options, touch=False on all; lexical passes no query embedding):", ""]
    lines += [f"- {name}: `{json.dumps(kw, default=str)}`" for name, kw in res["methods"].items()]
    if res.get("half_lives"):
        lines += ["", "Half-lives (memsql.knowledge_types, days; never = no decay): " + ", ".join(
            f"{k} {'never' if v is None else f'{v:g}'}" for k, v in res["half_lives"].items()) + "."]
    lines += ["", "Timed searches start after memsql's own post-ingest maintenance (statistics, postings index rebuild) "
              "and a VACUUM (ANALYZE) of its tables, the state autovacuum reaches a minute later.",
              "", "SQL: server time of the memory_search call (planning + execution, EXPLAIN (ANALYZE, TIMING OFF)"
              " of the same arguments; not measured for enrichment, whose variants are embedded inside the call). "
              "SQL CPU: CPU time of the server process for that call (/proc/<pid>/schedstat): the figure that does not "
              "grow when other work shares the cores (see the load average above). "
              f"SQL, k={DEFAULT_K}: the same call asking memory_search's default k = {DEFAULT_K} rows (what a search "
              "costs; the metrics above need the deeper lists). "
              "Call: Memory.search wall time per question (SQL round trip and row decoding; query "
              "embedding excluded). Metrics by ranx; items are LoCoMo evidence turns (dia_id), BEIR "
              "documents (best chunk, first occurrence), LongMemEval turns (a long turn's best chunk) and sessions "
              "(a session's best turn; recall_any@k = ranx hit_rate@k, recall_all@k = share of questions with ranx "
              "recall@k = 1; abstention questions skipped), dated notes by file (answer = grade-2 notes only; "
              "top1 = ranx precision@1 against the answer).", ""]
    return "\n".join(lines)


def merge_runs(specs: list[str]) -> dict[str, Any]:
    """Several runs' quality.json as one result: ``DIR[:OLD=NEW,...]`` per run (its methods renamed, e.g.
    ``/tmp/run1:default=default-tw0.5,tw0.2=default`` when the default changed between runs; NEW ``-`` drops the
    method); a dataset of a later
    run replaces the same dataset of an earlier one. Each dataset keeps the commit, sql/ digest and date it was
    measured at (``measured``)."""
    merged: dict[str, Any] = {}
    for spec in specs:
        folder, _, renames = spec.partition(":")
        names = dict(pair.split("=", 1) for pair in renames.split(",") if pair)
        run = json.loads((Path(folder) / "quality.json").read_text(encoding="utf-8"))
        run["methods"] = {names.get(n, n): kw for n, kw in run["methods"].items() if names.get(n, n) != "-"}
        for d in run["datasets"].values():
            d["results"] = {names.get(n, n): r for n, r in d["results"].items() if names.get(n, n) != "-"}
            d["results"] = dict(sorted(d["results"].items(), key=lambda item: item[0] != "default"))  # default first
            d["measured"] = {"commit": run["commit"], "dirty": run["dirty"], "sql_sha256": run["sql_sha256"],
                             "date": run["date"], "methods": run["methods"]}
        if not merged:
            merged = {**run, "datasets": {}, "methods": {}, "runs": []}
        merged["datasets"].update(run["datasets"])
        merged["methods"].update(run["methods"])
        merged["runs"].append({"folder": folder, "renamed": names, "commit": run["commit"],
                               "sql_sha256": run["sql_sha256"], "date": run["date"],
                               "total_seconds": run["total_seconds"], "s_dev_questions": run.get("s_dev_questions")})
        for key in ("commit", "dirty", "sql_sha256", "date", "machine", "model", "s_dev_questions"):
            merged[key] = run.get(key, merged.get(key))
    merged["total_seconds"] = sum(r["total_seconds"] for r in merged["runs"])
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=Path, default=SHARED / "locomo" / "locomo_dev.json",
                        help="LoCoMo-format JSON file (default ../shared/data/locomo/locomo_dev.json)")
    parser.add_argument("--beir", type=Path, default=SHARED / "scifact",
                        help="BEIR-layout folder (default ../shared/data/scifact)")
    parser.add_argument("--beir-split", default=None, help="qrels split (default train, else test, else dev)")
    parser.add_argument("--longmemeval", type=Path, default=SHARED / "longmemeval",
                        help="LongMemEval folder holding oracle_dev/ and s_dev/ (default ../shared/data/longmemeval)")
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--s-questions", type=int, default=S_QUESTIONS, metavar="N",
                        help=f"LongMemEval s_dev: the first N question files round robin by question_type "
                             f"(default {S_QUESTIONS}; the full split costs ~45 min of embedding)")
    parser.add_argument("--s-full", action="store_true", help="LongMemEval s_dev: every question (323)")
    parser.add_argument("--ingest-only", action="store_true",
                        help="ingest every dataset (fills the embedding cache) and search nothing")
    parser.add_argument("--methods", nargs="+", default=None, help=f"subset of {', '.join(METHODS)}")
    parser.add_argument("--extra", action="append", type=parse_extra, default=[], metavar="NAME=OPT=VAL[,OPT=VAL]",
                        help="an extra method on top of hybrid, e.g. 'dw0.5=dense_weight=0.5' (repeatable)")
    parser.add_argument("--limit-queries", type=int, default=None, metavar="N", help="first N questions per dataset")
    parser.add_argument("--no-sql-timings", action="store_true",
                        help="skip the EXPLAIN timings of every search (a third of the run; metrics unchanged)")
    parser.add_argument("--out", type=Path, default=BENCH / "results", help="results directory")
    parser.add_argument("--home", type=Path, default=CACHE / "home", help="embedded server home")
    parser.add_argument("--keep-server", action="store_true", help="leave the embedded server running")
    parser.add_argument("--database", default=DATABASE,
                        help=f"scratch database, dropped and created again (default {DATABASE}); two runs at once "
                             "need two names")
    parser.add_argument("--merge", nargs="+", metavar="DIR[:OLD=NEW,...]", default=None,
                        help="search nothing: merge these runs' quality.json (methods renamed) into --out/--name")
    parser.add_argument("--name", default="quality", help="results file name without extension (default quality)")
    parser.add_argument("--half-life", action="append", type=parse_half_life, default=[], metavar="TYPE=DAYS",
                        help="a knowledge_type's half-life for this run (memsql.knowledge_type_set after the "
                             "migration; DAYS > 0 or 'never'), e.g. conversation=45 (repeatable)")
    args = parser.parse_args(argv)
    if args.merge:
        res = merge_runs(args.merge)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{args.name}.json").write_text(json.dumps(res, indent=2, default=str) + "\n", encoding="utf-8")
        (args.out / f"{args.name}.md").write_text(to_markdown(res), encoding="utf-8")
        print(to_markdown(res))
        return 0

    methods = {name: METHODS[name] for name in (args.methods or METHODS) if name in METHODS}
    unknown = set(args.methods or ()) - set(METHODS)
    if unknown:
        parser.error(f"unknown method(s) {', '.join(sorted(unknown))}; known: {', '.join(METHODS)}")
    methods.update(dict(args.extra))
    if args.ingest_only:
        methods = {}
    corpora = []
    if "locomo" in args.datasets:
        if args.locomo.exists():
            corpora.append(lambda: locomo(args.locomo, args.limit_queries))
        else:
            print(f"skipping LoCoMo: {args.locomo} is absent", file=sys.stderr)
    if "beir" in args.datasets:
        if (args.beir / "corpus.jsonl").exists():
            corpora.append(lambda: beir(args.beir, args.beir_split, args.limit_queries))
        else:
            print(f"skipping BEIR: {args.beir}/corpus.jsonl is absent", file=sys.stderr)
    for split, limit in (("oracle_dev", None), ("s_dev", None if args.s_full else args.s_questions)):
        key = "lme-oracle" if split == "oracle_dev" else "lme-s"
        if key not in args.datasets:
            continue
        if (args.longmemeval / split / "questions").is_dir():
            corpora.append(lambda split=split, limit=limit: longmemeval(args.longmemeval / split, limit,
                                                                        stratified=limit is not None))
        else:
            print(f"skipping LongMemEval {split}: {args.longmemeval / split}/questions is absent", file=sys.stderr)
    if "notes" in args.datasets:
        corpora.append(lambda: dated_notes(BENCH / "dated_notes"))
    if not corpora:
        parser.error("no dataset to run")

    logging.getLogger("psycopg").setLevel(logging.WARNING)  # lexical-only NOTICEs
    t0 = time.perf_counter()
    dsn = fresh_database(server.embedded_start(args.home), args.database)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, days in args.half_life:
            conn.execute("SELECT memsql.knowledge_type_set(%s, %s)", (name, days))
        half_lives = dict(conn.execute("SELECT name, half_life_days FROM memsql.knowledge_types ORDER BY name").fetchall())
    sql_sha = sql_digest()
    embedder = CachingEmbedder(default_embedder(), CACHE / "embeddings.sqlite")
    datasets: dict[str, Any] = {}
    try:
        with Memory(dsn=dsn, embedder=embedder) as mem:
            for load in corpora:
                corpus = load()
                datasets[corpus.name] = run_dataset(mem, embedder, corpus, methods, not args.no_sql_timings)
    finally:
        embedder.close()
        if not args.keep_server:
            server.embedded_stop(args.home)
    res = {
        "commit": _git("rev-parse", "HEAD"), "dirty": bool(_git("status", "--porcelain")),
        "modified": [line.split(maxsplit=1)[1] for line in (_git("status", "--porcelain") or "").splitlines()
                     if line and not line.startswith("??")],
        "sql_sha256": sql_sha,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]},
        "model": embedder.model_name, "limit_queries": args.limit_queries,
        "s_dev_questions": None if args.s_full else args.s_questions,
        "methods": {name: {k: v for k, v in kw.items()} for name, kw in methods.items()},
        "half_lives": half_lives,
        "datasets": datasets, "embedding_cache": embedder.stats(),
        "total_seconds": round(time.perf_counter() - t0, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(res, indent=2, default=str) + "\n", encoding="utf-8")
    md = to_markdown(res)
    (args.out / f"{args.name}.md").write_text(md, encoding="utf-8")
    print()
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
