"""The text pipeline's stages measured on ../shared/data: chunking strategy, autosave filter,
dense similarity threshold.

    .venv/bin/python bench/pipeline.py [--parts chunking filter threshold] [--limit-queries N]

- chunking: SciFact (BEIR) ingested with strategy "token" and with "semantic" (breakpoint 0.3, min 64 word
  pieces, window 256), each into its own namespace, searched with memory_search's defaults (memory axis off):
  nDCG@10, recall@10, recall@100, MRR@10, chunk counts. LoCoMo turns are one atomic section each, so both
  strategies give one chunk per turn: the run checks that the two chunk sets are identical instead of
  searching twice.
- filter: LoCoMo dev ingested without and with the autosave filter ([memory.filter] defaults, and the
  thresholds listed in FILTER_VARIANTS): memories kept, skips by reason, evidence turns lost, recall@10,
  nDCG@10 of the questions (all questions, also those whose evidence was filtered out).
- threshold: memory_search's dense similarity floor (similarity_threshold / dense_min_similarity) at 0, 0.3
  and 0.5 on both datasets, hybrid and dense-only.

Same harness as bench/quality.py (fresh database memsql_bench, cached embeddings in
bench/.cache/embeddings.sqlite, ranx metrics, touch=False). Writes bench/results/pipeline.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
sys.path.insert(0, str(BENCH))

from corpora import Corpus, beir, locomo  # noqa: E402
from embed_cache import CachingEmbedder  # noqa: E402
from benchdb import fresh_database  # noqa: E402
from quality import CACHE, DATABASE, SHARED, _git, sql_digest  # noqa: E402

from memsql import server  # noqa: E402
from memsql.client import Memory  # noqa: E402
from memsql.embedding import default_embedder  # noqa: E402
from memsql.evaluate import evaluate_runs, ranks_to_run  # noqa: E402
from memsql.filter import AutosaveFilter, FilterSettings  # noqa: E402
from memsql.ingest import IngestSettings, IngestSummary, Ingestor  # noqa: E402

SEARCH = {"memory_rerank": False, "touch": False}
SEMANTIC = {"strategy": "semantic", "breakpoint_threshold": 0.3, "min_tokens": 64, "tokenizer": "model"}
TOKEN = {"strategy": "token", "breakpoint_threshold": 0.3, "min_tokens": 64, "tokenizer": "model"}
FILTER_VARIANTS: dict[str, dict[str, Any]] = {
    "filter (defaults)": {},
    "filter autosave_threshold 0.3": {"autosave_threshold": 0.3},
    "filter autosave_threshold 0.5": {"autosave_threshold": 0.5},
    "filter recency_weight 0": {"recency_weight": 0.0},
}
THRESHOLDS = (0.0, 0.3, 0.5)


def ingest(mem: Memory, embedder, corpus: Corpus, suffix: str, chunker: dict, autosave=None) -> IngestSummary:
    """Ingest every namespace of the corpus into '<namespace><suffix>'."""
    summary = IngestSummary()
    for namespace, docs in corpus.documents.items():
        # LoCoMo sessions come through the "text" adapter (memsql.demo): they are conversations, so the filter
        # is told to judge them (filter_documents) as it judges conversation adapters.
        settings = IngestSettings(batch_size=64, chunker=chunker, filter_documents=autosave is not None,
                                  keep_decisions=autosave is not None)
        Ingestor(mem.conn, embedder, namespace + suffix, settings, autosave=autosave).ingest(docs, summary)
    return summary


def evaluate(mem: Memory, corpus: Corpus, qvecs, suffix: str, options: dict) -> dict[str, float]:
    runs = {}
    for q, vec in zip(corpus.questions, qvecs):
        results = mem.search(q.text, k=corpus.search_k, namespace=q.namespace + suffix, query_embeddings=[vec],
                             **SEARCH, **options)
        runs[q.id] = ranks_to_run(corpus.item_of(r) for r in results)
    scores = evaluate_runs({q.id: q.relevant for q in corpus.questions}, {"m": runs}, metrics=corpus.metrics)
    return {m: round(v, 4) for m, v in scores["m"]["overall"].items()}


def subset(corpus: Corpus, n_docs: int | None) -> Corpus:
    """The first ``n_docs`` documents (file order) and the questions judged on at least one of them, with their
    relevance restricted to those documents; the whole corpus when n_docs is None."""
    if n_docs is None:
        return corpus
    (namespace, docs), = corpus.documents.items()
    docs = docs[:n_docs]
    keys = {d.source_key for d in docs}
    questions = [replace(q, relevant={d: g for d, g in q.relevant.items() if d in keys}) for q in corpus.questions]
    questions = [q for q in questions if q.relevant]
    info = {**corpus.info, "documents": len(docs), "questions": len(questions), "subset": f"first {n_docs} documents"}
    return replace(corpus, documents={namespace: docs}, questions=questions, info=info)


def part_chunking(mem, embedder, scifact: Corpus, loc: Corpus, n_docs: int | None) -> dict[str, Any]:
    sci = subset(scifact, n_docs)
    qvecs = embedder.embed([q.text for q in sci.questions])
    out: dict[str, Any] = {"scifact": {}, "scifact_info": sci.info, "locomo": {}}
    for name, chunker, suffix in (("token", TOKEN, "/ctoken"), ("semantic", SEMANTIC, "/csemantic")):
        t = time.perf_counter()
        s = ingest(mem, embedder, sci, suffix, chunker)
        seconds = time.perf_counter() - t
        metrics = evaluate(mem, sci, qvecs, suffix, {})
        out["scifact"][name] = {"chunks": s.chunks, "documents": s.documents, "failed": len(s.failed),
                                "ingest_seconds": round(seconds, 1), "metrics": metrics}
        print(f"[chunking] scifact {name}: {s.chunks} chunks in {seconds:.0f} s, {metrics}", flush=True)
    # LoCoMo: each turn is an atomic section, never merged with another under either strategy; only a turn longer
    # than min_tokens can be cut differently (at a topic shift inside it) by the semantic chunker.
    from memsql.embedding import count_tokens

    turns = [sec.text for docs in loc.documents.values() for d in docs for sec in d.sections]
    long_turns = sum(1 for t in turns if count_tokens(t) - 2 >= SEMANTIC["min_tokens"])
    out["locomo"] = {"turns": len(turns), "turns_over_min_tokens": long_turns}
    print(f"[chunking] locomo: {long_turns} of {len(turns)} turns reach min_tokens", flush=True)
    return out


def part_filter(mem, embedder, loc: Corpus, qvecs) -> dict[str, Any]:
    out: dict[str, Any] = {}
    base = ingest(mem, embedder, loc, "/all", TOKEN)
    out["no filter"] = {"memories": base.chunks, "metrics": evaluate(mem, loc, qvecs, "/all", {})}
    print(f"[filter] no filter: {out['no filter']}", flush=True)
    evidence = {e for q in loc.questions for e in q.relevant}
    for i, (name, overrides) in enumerate(FILTER_VARIANTS.items()):
        settings = replace(FilterSettings(enabled=True), **overrides)
        suffix = f"/f{i}"
        s = ingest(mem, embedder, loc, suffix, TOKEN, AutosaveFilter(settings))
        dropped = {_dia(loc, src, idx) for src, idx, text, d in s.decisions if not d.keep}
        lost = evidence & dropped
        answerable = sum(1 for q in loc.questions if set(q.relevant) - lost)
        out[name] = {"settings": overrides, "memories": s.chunks, "kept_fraction": round(s.chunks / base.chunks, 4),
                     "skipped": dict(sorted(s.filtered.items())), "evidence_turns": len(evidence),
                     "evidence_turns_skipped": len(lost),
                     "questions_with_some_evidence_kept": answerable, "questions": len(loc.questions),
                     "metrics": evaluate(mem, loc, qvecs, suffix, {})}
        print(f"[filter] {name}: {out[name]}", flush=True)
    return out


_DIA_INDEX: dict[tuple[str, int], str] = {}


def _dia(loc: Corpus, source: str, index: int) -> str:
    """dia_id of chunk ``index`` of the LoCoMo session whose source_uri (or key) is ``source``."""
    if not _DIA_INDEX:
        for docs in loc.documents.values():
            for d in docs:
                for i, sec in enumerate(d.sections):
                    _DIA_INDEX[(d.source_uri or d.source_key, i)] = str(sec.metadata.get("dia_id"))
    return _DIA_INDEX.get((source, index), f"{source}#{index}")


def part_threshold(mem, corpora: list[tuple[Corpus, Any, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for corpus, qvecs, suffix in corpora:
        out[corpus.name] = {}
        for t in THRESHOLDS:
            for arm, extra in (("hybrid", {}), ("dense", {"lexical_weight": 0.0})):
                name = f"{arm} similarity_threshold {t}"
                out[corpus.name][name] = evaluate(mem, corpus, qvecs, suffix, {"dense_min_similarity": t, **extra})
                print(f"[threshold] {corpus.name} {name}: {out[corpus.name][name]}", flush=True)
    return out


def to_markdown(res: dict[str, Any]) -> str:
    dirty = " (uncommitted changes)" if res["dirty"] else ""
    lines = ["# memsql text pipeline", "",
             f"Commit `{res['commit']}`{dirty}, sql/ sha256 `{res['sql_sha256']}`, {res['date']}, "
             f"{res['machine']['cpus']} CPUs (shared with other jobs), model {res['model']}. "
             f"Total run {res['total_seconds']:.0f} s.", ""]
    if "chunking" in res:
        c = res["chunking"]
        info = c["scifact_info"]
        lines += ["## Chunking: token vs semantic (SciFact)", "",
                  f"{info.get('subset', 'all documents')}: {info['documents']} documents, {info['questions']} "
                  "questions judged on them. Window 256 word pieces; token: overlap 32; semantic: breakpoint_threshold "
                  "0.3, min_tokens 64. Search: memory_search defaults, memory axis off, 100 memories per query.", ""]
        metrics = list(next(iter(c["scifact"].values()))["metrics"])
        lines += ["| strategy | chunks | ingest s | " + " | ".join(metrics) + " |",
                  "|---|---:|---:|" + "---:|" * len(metrics)]
        for name, r in c["scifact"].items():
            lines.append(f"| {name} | {r['chunks']} | {r['ingest_seconds']} | "
                         + " | ".join(f"{v:.4f}" for v in r["metrics"].values()) + " |")
        lines += ["", f"LoCoMo: every turn is an atomic section (never merged with another turn under either "
                  f"strategy); {c['locomo']['turns_over_min_tokens']} of {c['locomo']['turns']} turns reach min_tokens "
                  "and could be cut inside by the semantic chunker, the others are one chunk under both.", "",
                  "Ingest seconds include embedding every sentence (semantic) on a cold or warm embedding cache; "
                  "see the JSON for the cache state.", ""]
    if "filter" in res:
        f = res["filter"]
        lines += ["## Autosave filter (LoCoMo dev)", "",
                  "Every turn of the 3 conversations offered to the filter in order ([memory.filter] defaults "
                  "unless listed); questions searched as in bench/quality.py (20 memories, memory axis off).", "",
                  "| variant | memories | kept | skipped by reason | evidence turns skipped | recall@10 | ndcg@10 |",
                  "|---|---:|---:|---|---:|---:|---:|"]
        for name, r in f.items():
            skipped = ", ".join(f"{k} {v}" for k, v in r.get("skipped", {}).items()) or "-"
            lost = (f"{r['evidence_turns_skipped']} of {r['evidence_turns']}" if "evidence_turns" in r else "-")
            kept = f"{r.get('kept_fraction', 1.0):.1%}"
            lines.append(f"| {name} | {r['memories']} | {kept} | {skipped} | {lost} | "
                         f"{r['metrics']['recall@10']:.4f} | {r['metrics']['ndcg@10']:.4f} |")
        lines.append("")
    if "threshold" in res:
        lines += ["## Dense similarity threshold", "",
                  "Dense candidates whose cosine similarity is below the threshold do not enter fusion.", ""]
        for ds, rows in res["threshold"].items():
            metrics = list(next(iter(rows.values())))
            lines += [f"### {ds}", "", "| method | " + " | ".join(metrics) + " |", "|---|" + "---:|" * len(metrics)]
            for name, m in rows.items():
                lines.append(f"| {name} | " + " | ".join(f"{v:.4f}" for v in m.values()) + " |")
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", nargs="+", choices=("chunking", "filter", "threshold"),
                        default=["chunking", "filter", "threshold"])
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--scifact-docs", type=int, default=None, metavar="N",
                        help="chunking part: the first N SciFact documents and the questions judged on them "
                             "(semantic chunking embeds every sentence: about 9 per document)")
    parser.add_argument("--out", type=Path, default=BENCH / "results")
    parser.add_argument("--home", type=Path, default=CACHE / "home")
    args = parser.parse_args(argv)
    loc_path, sci_path = SHARED / "locomo" / "locomo_dev.json", SHARED / "scifact"
    if not loc_path.exists() or not (sci_path / "corpus.jsonl").exists():
        print(f"skipping: {loc_path} or {sci_path} is absent", file=sys.stderr)
        return 0
    t0 = time.perf_counter()
    dsn = fresh_database(server.embedded_start(args.home), DATABASE)
    embedder = CachingEmbedder(default_embedder(), CACHE / "embeddings.sqlite")
    res: dict[str, Any] = {}
    try:
        with Memory(dsn=dsn, embedder=embedder) as mem:
            loc = locomo(loc_path, args.limit_queries)
            sci = beir(sci_path, None, args.limit_queries)
            q_loc = embedder.embed([q.text for q in loc.questions])
            q_sci = embedder.embed([q.text for q in sci.questions])
            if "chunking" in args.parts:
                res["chunking"] = part_chunking(mem, embedder, sci, loc, args.scifact_docs)
            if "filter" in args.parts:
                res["filter"] = part_filter(mem, embedder, loc, q_loc)
            if "threshold" in args.parts:
                for corpus, suffix in ((loc, "/all"), (sci, "/token")):
                    if not ("filter" in args.parts and corpus is loc):
                        ingest(mem, embedder, corpus, suffix, TOKEN)
                res["threshold"] = part_threshold(mem, [(loc, q_loc, "/all"), (sci, q_sci, "/token")])
    finally:
        stats = embedder.stats()
        embedder.close()
        server.embedded_stop(args.home)
    res = {"commit": _git("rev-parse", "HEAD"), "dirty": bool(_git("status", "--porcelain")),
           "sql_sha256": sql_digest(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
           "model": embedder.model_name, "limit_queries": args.limit_queries, "embedding_cache": stats,
           "total_seconds": round(time.perf_counter() - t0, 1), **res}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "pipeline.json").write_text(json.dumps(res, indent=2, default=str) + "\n", encoding="utf-8")
    md = to_markdown(res)
    (args.out / "pipeline.md").write_text(md, encoding="utf-8")
    print()
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
