"""Speed of memsql: embedding backends, ingest, start-up, memory, search latency and the HNSW curve.

    .venv/bin/python bench/speed.py [--parts embed,startup,hnsw,search] [--sizes 10000,100000]
                                    [--backends torch,onnx,openvino] [--queries 200]

The committed search rows: ``--parts search --sizes 10000,25000,100000,1000000``; the 1M HNSW rows:
``--parts hnsw --sizes 1000000 --grid-large 16:64,32:128`` (the first 1M run embeds 900k passages: about an
hour on 2 cores, cached after; the COPY load about 10 minutes).

Every figure is written with the machine's load average (``os.getloadavg``) at the time it was taken: the
2 cores are shared, so a figure taken under load is slower than the machine can do. Parts run separately
and merge into bench/results/speed.json (``--out``); speed.md is rewritten from the JSON after each run.

Parts:

- embed: the first 2,000 chunks of BEIR SciFact (``../shared/data/scifact``: documents in corpus order,
  title + text, cut by memsql's own chunker at 256 word pieces) are embedded by each backend, each in a
  fresh process: throughput (chunks/s, best of ``--runs`` runs, one ``embed`` call with batch 64), cosine of every
  vector to sentence-transformers' (torch) vector of the same chunk (gate: min >= 0.9999), then the same
  documents ingested through ``Ingestor`` (chunk, embed, COPY, term statistics) into a fresh namespace:
  ingest chunks/s and its ratio to the embedder's own chunks/s, and the process's peak RSS.
- startup: wall seconds of a new ``memsql search`` process (per backend), of ``memsql --help``, ``search --sql``,
  ``config show``, ``stats`` and ``eval`` (examples/golden.yaml, its 7 queries, default backend); the MCP
  server (``memsql mcp`` over stdio) from spawn to its first memory_search answer, and its peak RSS.
- hnsw: per corpus size, builds of the HNSW index for a grid of (m, ef_construction) with maintenance_work_mem
  from the row count (memsql.maintenance.rebuild_hnsw, the server's notices kept); per ef_search the dense query of
  memory_search's arm (namespace filter, ORDER BY embedding::halfvec(384) <=> q LIMIT 10, iterative scan
  relaxed_order):
  recall@10 against exact search (numpy over the same vectors) and its server time (EXPLAIN (ANALYZE, TIMING OFF)).
- search: memory_search at its defaults (index m=16, ef_construction=64): SQL-only latency (the server's
  planning + execution time from EXPLAIN (ANALYZE, TIMING OFF) of the exact call Memory.search makes, query
  embeddings given) and
  end to end (Memory.search with the query embedded by the default backend; with and without enrichment).
  The same SQL with ``posting_budget => 0`` (the BM25 arm reading every posting: exact ranking), in a pass of
  its own, and the quality of both at that size: every SciFact train claim with a judged document in the corpus, its
  memories' documents in rank order (first occurrence), nDCG@10 and recall@10 against the train qrels.
  Then the filtered rows, on the first 20 queries: memory_search at its defaults with a tags filter keeping 10% and
  1% of the corpus, and with an importance cutoff (importance_threshold 0.4) dropping 95% of the memories near
  each of those queries, beside the same queries unfiltered: SQL p50 / p99, and the dense arm alone (the call of
  tests/filtered_corpus.py: no lexical arm, no memory axis) at k 10 and 100 against the exact computation
  (tests/filtered_corpus.py exact: the arm's nearest memories the filter keeps by full-precision cosine, ties by id,
  ordered by the similarity memory_search scores, a windowed memory's best window; index scans off): rows returned / min(k, eligible),
  the share of the exact rows returned, and the queries whose rows equal the exact ones in order; and the lexical arm
  alone (no query embedding) at k 10 against the BM25 ranking written out in SQL (tests/filtered_corpus.py).
- filtered: the filtered rows alone (``--parts filtered``), on a restarted, prewarmed server per size.

Search corpora (``--sizes``) are built from real text: distinct passages cut from SciFact abstracts (every
sentence of >= 20 characters, every title, every run of 2 and then 3 consecutive sentences) and LoCoMo turns
(every turn and every 2 consecutive turns), in that order, deduplicated, the first N taken after a seeded
shuffle (past the 128,064 distinct passages, 1M needs more: word windows of the abstracts, see
``windows``); each passage is one memory (document = its SciFact entry or LoCoMo session), loaded with COPY, the
HNSW index built after (every 10th passage tagged t10, every 100th also t1; importance 0.35 on 95 of each of the
first 20 queries' 100 nearest passages, NULL elsewhere: the default cutoff of 0.3 keeps them, so the unfiltered rows
are unchanged), the window embeddings of passages longer than one window computed (db.compute_windows, as the
Ingestor does), the postings index rebuilt (memsql.maintenance.compact_postings, as the Ingestor does after a
large ingest), then VACUUM (ANALYZE) (the state autovacuum reaches a minute later). Queries are SciFact
train queries; every query is run once before the timed passes. Vectors come from the default backend and are cached in bench/.cache/speed/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))   # filtered_corpus: the contract's dense-only call and exact computation

import numpy as np  # noqa: E402
import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

from benchdb import fresh_database, prewarm  # noqa: E402
from benchdb import settle as benchdb_settle  # noqa: E402
from memsql import db, maintenance, server  # noqa: E402

SHARED = REPO.parent / "shared" / "data"
CACHE = BENCH / ".cache" / "speed"
N_CHUNKS = 2000
GATE = 0.9999
BACKENDS = ("torch", "onnx", "openvino")


# filtered rows (part search): memory_search arguments and the same filter in SQL over memsql.memories m
FILTER_QUERIES = 20   # the first queries; their nearest passages carry the importance the cutoff drops
NEAR = 100            # ... their 100 nearest, 95 of which (all but every 20th by rank) get importance 0.35
FILTERS = {
    "none": ({}, "true"),
    "tags 10%": ({"tags": ["t10"]}, "m.tags && ARRAY['t10']"),
    "tags 1%": ({"tags": ["t1"]}, "m.tags && ARRAY['t1']"),
    "importance 95% of near cut": ({"memory_rerank": True, "importance_threshold": 0.4},   # the cutoff is the axis's
                                   "(m.importance IS NULL OR m.importance >= 0.4)"),
}
BUILD_VERSION = 3     # a cached corpus database of an older build (no tags, no importance, no windows) is rebuilt


def load() -> float:
    """1-minute load average (2 cores: 2.0 means both busy)."""
    return round(os.getloadavg()[0], 2)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def home() -> Path:
    return Path(os.environ.get("MEMSQL_HOME") or BENCH / ".cache" / "home")


def server_uri() -> str:
    return server.embedded_start(home())


def database_uri(name: str) -> str | None:
    base = server_uri()
    with psycopg.connect(psycopg.conninfo.make_conninfo(base, dbname="postgres")) as conn:
        ok = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    return psycopg.conninfo.make_conninfo(base, dbname=name) if ok else None


# ------------------------------------------------------------------------------------------------------------
# embed + ingest (one child process per backend)


def scifact_documents(n_chunks: int):
    """SciFact documents in corpus order until their chunks reach ``n_chunks``; returns (docs, chunk texts)."""
    from corpora import beir
    from memsql.chunking import chunk_document

    corpus = beir(SHARED / "scifact")
    docs, texts = [], []
    for doc in corpus.documents[next(iter(corpus.documents))]:
        chunks = chunk_document(doc, max_tokens=256, overlap_tokens=32)
        docs.append(doc)
        texts.extend(c.embed_text for c in chunks)
        if len(texts) >= n_chunks:
            break
    return docs, texts


def cpu_self() -> float:
    t = os.times()
    return t.user + t.system


def cpu_of(pid: int) -> float:
    """user + system CPU seconds of another process (a PostgreSQL backend) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def child_embed(backend: str, runs: int) -> dict:
    """Runs in a fresh process: embedder throughput, vectors saved for the cosine gate, then ingest.

    Results so far are written to bench/.cache/speed/child-<backend>.json after each step."""
    from memsql.embedding import make_embedder
    from memsql.ingest import IngestSettings, Ingestor

    CACHE.mkdir(parents=True, exist_ok=True)
    progress = CACHE / f"child-{backend}.json"
    docs, texts = scifact_documents(N_CHUNKS)
    emb = make_embedder(backend)
    t0 = time.perf_counter()
    emb.embed(texts[:8])  # model load and warm-up, timed apart
    res: dict[str, Any] = {"backend": backend, "chunks": len(texts), "documents": len(docs),
                           "load_and_warmup_s": round(time.perf_counter() - t0, 2),
                           "precision": getattr(emb, "precision", "f32"), "embed_runs": [], "ingest_runs": []}
    for _ in range(runs):
        l0 = load()
        t0, c0 = time.perf_counter(), cpu_self()
        vecs = emb.embed(texts, batch_size=64)
        res["embed_runs"].append({"chunks_per_s": round(len(texts) / (time.perf_counter() - t0), 1),
                                  "cpu_s": round(cpu_self() - c0, 1), "load": l0, "load_after": load()})
        np.save(CACHE / f"gate-{backend}.npy", vecs)
        progress.write_text(json.dumps(res))
    uri = fresh_database(server_uri(), f"speed_ingest_{backend}")
    with db.connect(uri) as conn:
        for i in range(runs):
            l0 = load()
            backend_pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            conn.commit()
            c0, b0 = cpu_self(), cpu_of(backend_pid)
            ing = Ingestor(conn, emb, f"run{i}", IngestSettings(batch_size=64))
            s = ing.ingest(docs)
            assert not s.failed, s.failed
            res["ingest_runs"].append({"chunks": s.chunks, "seconds": round(s.seconds, 2),
                                       "chunks_per_s": round(s.chunks / s.seconds, 1),
                                       "cpu_s": round(cpu_self() - c0, 1),
                                       "server_cpu_s": round(cpu_of(backend_pid) - b0, 1),
                                       "load": l0, "load_after": load()})
            progress.write_text(json.dumps(res))
    res["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    progress.write_text(json.dumps(res))
    return res


def model_arithmetic(texts: list[str]) -> dict:
    """Floating-point work of all-MiniLM-L6-v2 on ``texts`` (each truncated at 256 pieces, no padding), from the
    model's config.json: per token and layer 2 * (4 h^2 + 2 h i) for the projections and the feed-forward block, per
    layer 4 * n^2 * h for the attention scores and their weighted sum (n = pieces); embeddings, norms and pooling
    not counted (a lower bound)."""
    from memsql.embedding import _batch_tokenizer, model_path

    cfg = json.loads((Path(model_path()) / "config.json").read_text())
    h, inner, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    tok = _batch_tokenizer()
    lengths = [sum(e.attention_mask) for e in tok.encode_batch(list(texts))]   # pieces, padding not counted
    flops = [layers * (2 * n * (4 * h * h + 2 * h * inner) + 4 * n * n * h) for n in lengths]
    return {"mean_pieces": round(float(np.mean(lengths)), 1), "gflop_per_chunk": round(float(np.mean(flops)) / 1e9, 3)}


def gemm_ceiling() -> dict:
    """GFLOP/s of the best dense matrix products this machine runs (torch, every core), f32 and bf16, in the model's
    feed-forward shapes (16,384 pieces x 384 x 1,536 and back) and one square 4,096 product: what a backend could do
    at most per precision, since the model is mostly such products."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    out = {}
    for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
        best = 0.0
        for m, k, n in ((16384, 384, 1536), (16384, 1536, 384), (4096, 4096, 4096)):
            a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
            a @ b
            t0 = time.perf_counter()
            for _ in range(5):
                a @ b
            best = max(best, 2 * m * k * n * 5 / (time.perf_counter() - t0) / 1e9)
        out[name] = round(best, 1)
    return out


def quantized_probe(texts: list[str]) -> dict:
    """int8: the ONNX export quantized dynamically (onnxruntime.quantization, int8 weights, activations quantized
    per call), run by ONNX Runtime on ``texts``: throughput and cosine to the f32 ONNX vectors (which are the torch
    ones: cosine 1.0, table above). A faster precision than bf16 would have to pass the same gate."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from memsql.embedding import OnnxEmbedder, onnx_path

    path = CACHE / "minilm-int8-dynamic.onnx"
    if not path.exists():
        quantize_dynamic(str(onnx_path()), str(path), weight_type=QuantType.QInt8)
    ref = OnnxEmbedder("onnx").embed(texts)
    emb = OnnxEmbedder("onnx", model_file=path)
    emb.embed(texts[:64])
    t0 = time.perf_counter()
    vecs = emb.embed(texts)
    rate = len(texts) / (time.perf_counter() - t0)
    cos = np.sum(vecs * ref, axis=1) / np.linalg.norm(vecs, axis=1) / np.linalg.norm(ref, axis=1)
    return {"backend": "onnx int8 (dynamic quantization)", "chunks_per_s": round(rate, 1),
            "min_cosine": round(float(cos.min()), 5), "mean_cosine": round(float(cos.mean()), 5),
            "gate_passed": bool(cos.min() >= GATE), "load": load()}


def part_embed(backends: list[str], runs: int, collect: bool = False) -> dict:
    """Run one child per backend, or with ``collect`` read what earlier children saved (partial runs allowed:
    a backend without ingest runs is reported without them)."""
    out: dict[str, Any] = {"corpus": f"first {N_CHUNKS} chunks of SciFact (corpus order, memsql chunker, 256 pieces)"}
    per = {}
    for b in backends:
        if collect:
            per[b] = json.loads((CACHE / f"child-{b}.json").read_text())
            continue
        print(f"[embed] {b} ...", flush=True)
        res = subprocess.run([sys.executable, __file__, "--child-embed", b, "--runs", str(runs)],
                             capture_output=True, text=True)
        if res.returncode != 0:
            print(res.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"embed child {b} failed")
        per[b] = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"  {per[b]}", flush=True)
    ref_path = CACHE / "gate-torch.npy"  # written by the torch child (run torch in the same invocation)
    ref = np.load(ref_path) if ref_path.exists() else None
    for b, r in per.items():
        best_embed = max(x["chunks_per_s"] for x in r["embed_runs"])
        best_ingest = max((x["chunks_per_s"] for x in r["ingest_runs"]), default=None)
        r["embed_chunks_per_s"] = best_embed
        r["ingest_chunks_per_s"] = best_ingest
        r["ingest_over_embed"] = round(best_ingest / best_embed, 3) if best_ingest else None
        r.setdefault("peak_rss_mb", None)
        e_cpu = min((x["cpu_s"] for x in r["embed_runs"] if "cpu_s" in x), default=None)
        i_cpu = min((x["cpu_s"] + x["server_cpu_s"] for x in r["ingest_runs"] if "cpu_s" in x), default=None)
        r["embed_cpu_s_per_1k"] = round(e_cpu * 1000 / r["chunks"], 1) if e_cpu else None
        r["ingest_cpu_s_per_1k"] = round(i_cpu * 1000 / r["chunks"], 1) if i_cpu else None
        if ref is not None:
            cos = np.sum(np.load(CACHE / f"gate-{b}.npy") * ref, axis=1)
            r["cosine_to_torch"] = {"min": round(float(cos.min()), 6), "mean": round(float(cos.mean()), 7),
                                    "p01": round(pct(list(cos), 1), 6)}
            r["gate_passed"] = bool(cos.min() >= GATE)
    out["backends"] = per
    passing = [b for b, r in per.items() if r.get("gate_passed")]
    if passing:
        out["fastest_passing"] = max(passing, key=lambda b: per[b]["embed_chunks_per_s"])
    # how far from the machine's limit (the 150 chunks/s): the work per chunk, the best matrix products
    _, texts = scifact_documents(N_CHUNKS)
    texts = texts[:N_CHUNKS]
    out["arithmetic"] = {**model_arithmetic(texts), "gemm_gflop_per_s": gemm_ceiling(), "load": load()}
    for r in per.values():
        r["gflop_per_s"] = round(r["embed_chunks_per_s"] * out["arithmetic"]["gflop_per_chunk"], 1)
    if not collect:
        out["int8_probe"] = quantized_probe(texts)
    return out


# ------------------------------------------------------------------------------------------------------------
# start-up and MCP


def _timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {res.stderr[-2000:]}")
    return time.perf_counter() - t0


def mcp_first_answer(env: dict, namespace: str, query: str) -> dict:
    """Spawn ``memsql mcp``; seconds to its first memory_search answer over stdio (JSON-RPC); its peak RSS."""
    exe = str(Path(sys.executable).with_name("memsql"))
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, text=True, cwd=REPO)

    def send(msg):
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def recv(want_id):
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit("the MCP server closed its output")
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return msg

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "speed", "version": "0"}}})
        recv(1)
        t_init = time.perf_counter() - t0
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_search", "arguments": {"query": query, "k": 5, "namespace": namespace}}})
        answer = recv(2)
        t_first = time.perf_counter() - t0
        if answer.get("error") or answer["result"].get("isError"):
            raise SystemExit(f"MCP memory_search failed: {answer}")
        t1 = time.perf_counter()
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "memory_search", "arguments": {"query": query + " again", "k": 5, "namespace": namespace}}})
        recv(3)
        t_second = time.perf_counter() - t1
        status = Path(f"/proc/{proc.pid}/status").read_text()
        hwm = int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) / 1024
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    return {"initialize_s": round(t_init, 2), "first_answer_s": round(t_first, 2),
            "second_answer_ms": round(t_second * 1000, 1), "peak_rss_mb": round(hwm, 1)}


def part_startup(backends: list[str], size: int) -> dict:
    uri = database_uri(f"speed_{size}")
    if uri is None:
        raise SystemExit(f"build the {size} corpus first (--parts hnsw or search with --sizes {size})")
    exe = str(Path(sys.executable).with_name("memsql"))
    base_env = {**os.environ, "MEMSQL_DSN": uri, "MEMSQL_NAMESPACE": "speed"}
    out: dict[str, Any] = {"database": f"speed_{size} ({size} memories)", "runs": 3}
    out["help_s"] = {"median": round(statistics.median(_timed([exe, "--help"], base_env) for _ in range(3)), 2),
                     "load": load()}
    # commands that load no model: their time is Python's imports, the configuration and (but --sql) one query
    golden = REPO / "examples" / "golden.yaml"
    commands = {"search --sql": ["search", "x", "--sql"], "config show": ["config", "show", "--json"],
                "stats": ["stats", "--json", "--namespace", "speed"],
                "eval": ["eval", "--golden", str(golden), "--namespace", "speed", "--json", "--out",
                         tempfile.mkdtemp(prefix="memsql-eval-")]}
    out["commands_s"] = {}
    for name, args in commands.items():
        l0 = load()
        out["commands_s"][name] = {"median": round(statistics.median(_timed([exe, *args], base_env)
                                                                     for _ in range(3)), 2), "load": l0}
    query = "vitamin D deficiency and bone fractures"
    for b in backends:
        env = {**base_env, "MEMSQL_MEMORY_EMBEDDINGS_BACKEND": b}
        l0 = load()
        times = [_timed([exe, "search", query, "-k", "5", "--json", "--namespace", "speed"], env) for _ in range(3)]
        out[f"search_{b}_s"] = {"median": round(statistics.median(times), 2), "min": round(min(times), 2), "load": l0}
        l0 = load()
        out[f"mcp_{b}"] = {**mcp_first_answer(env, "speed", query), "load": l0}
        print(f"[startup] {b}: {out[f'search_{b}_s']} mcp {out[f'mcp_{b}']}", flush=True)
    return out


# ------------------------------------------------------------------------------------------------------------
# search corpora


_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def passages() -> list[tuple[str, str, str]]:
    """(group key, group title, passage) for every distinct passage, in the order described above."""
    out, seen = [], set()

    def add(key, title, text):
        text = " ".join(text.split())
        if len(text) >= 20 and text not in seen:
            seen.add(text)
            out.append((key, title, text))

    corpus = [json.loads(line) for line in (SHARED / "scifact" / "corpus.jsonl").open(encoding="utf-8")]
    sents = {d["_id"]: [s for s in _SENT.split(d["text"]) if len(s.strip()) >= 20] for d in corpus}
    for d in corpus:
        add(f"scifact:{d['_id']}", d["title"], d["title"])
        for s in sents[d["_id"]]:
            add(f"scifact:{d['_id']}", d["title"], s)
    conv = json.loads((SHARED / "locomo" / "locomo_dev.json").read_text(encoding="utf-8"))
    turns = []
    for c in conv:
        for key, val in c["conversation"].items():
            if key.startswith("session_") and isinstance(val, list):
                turns.append((f"locomo:{c['sample_id']}:{key}", [f"{t['speaker']}: {t['text']}" for t in val]))
    for key, ts in turns:
        for t in ts:
            add(key, key, t)
    for width in (2, 3):
        for d in corpus:
            s = sents[d["_id"]]
            for i in range(len(s) - width + 1):
                add(f"scifact:{d['_id']}", d["title"], " ".join(s[i:i + width]))
        for key, ts in turns:
            for i in range(len(ts) - width + 1):
                add(key, key, " ".join(ts[i:i + width]))
    return out


def windows(seen: set[str]) -> list[tuple[str, str, str]]:
    """Word windows of the SciFact abstracts, for corpora larger than the distinct passages: from every word
    offset of title + text but the last ten, the next 12 to 40 words (length drawn per offset, seed 10); those not already a
    passage. Overlapping and near-duplicate by design: the text is real, the redundancy is not natural."""
    rng, out = random.Random(10), []
    for line in (SHARED / "scifact" / "corpus.jsonl").open(encoding="utf-8"):
        d = json.loads(line)
        words = (d["title"] + " " + d["text"]).split()
        for s in range(max(1, len(words) - 10)):
            text = " ".join(words[s:s + rng.randint(12, 40)])
            if text not in seen:
                seen.add(text)
                out.append((f"scifact:{d['_id']}", d["title"], text))
    return out


def corpus_passages(size: int) -> list[tuple[str, str, str]]:
    """The first ``size`` passages: the distinct passages after a seeded shuffle (seed 9), then, past their
    number, word windows after their own shuffle (seed 11)."""
    allp = passages()
    random.Random(9).shuffle(allp)
    if size > len(allp):
        fill = windows({p[2] for p in allp})
        random.Random(11).shuffle(fill)
        allp += fill
    if len(allp) < size:
        raise SystemExit(f"only {len(allp)} passages and windows in ../shared/data; cannot build {size}")
    return allp[:size]


def corpus_vectors(size: int):
    """The corpus passages (``corpus_passages``) and their vectors (default backend, cached)."""
    from memsql.embedding import DEFAULT_BACKEND, make_embedder

    chosen = corpus_passages(size)
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"passages-{DEFAULT_BACKEND}.npy"
    have = np.load(path, mmap_mode="r") if path.exists() else np.zeros((0, 384), np.float32)
    if len(have) < size:  # encode the missing ones, saving every 32,768 so an interrupted run resumes
        emb = make_embedder(DEFAULT_BACKEND)
        t0, l0, start = time.perf_counter(), load(), len(have)
        full = np.empty((size, 384), np.float32)
        full[:start] = have
        del have
        for i in range(start, size, 4096):
            end = min(i + 4096, size)
            full[i:end] = emb.embed([p[2] for p in chosen[i:end]], batch_size=64)
            if end == size or (end - start) % 32768 == 0:
                np.save(CACHE / "passages.tmp.npy", full[:end])
                os.replace(CACHE / "passages.tmp.npy", path)
                print(f"  embedded {end}/{size} ({time.perf_counter() - t0:.0f}s, load {load()})", flush=True)
        print(f"[corpus] {size - start} passages embedded in {time.perf_counter() - t0:.0f}s, load {l0}", flush=True)
        return chosen, full
    return chosen, np.asarray(have[:size])


def settle(uri: str) -> None:
    """The postings index rebuilt as memsql's Ingestor does after a large ingest, then benchdb.settle."""
    with db.connect(uri) as conn:
        maintenance.compact_postings(conn, force=True)
        benchdb_settle(conn)


def passage_tags(i: int) -> list[str]:
    """Passage i's tags: t10 on every 10th, t1 also on every 100th (the corpus order is a seeded shuffle)."""
    return (["t10"] if i % 10 == 0 else []) + (["t1"] if i % 100 == 0 else [])


def near_importance(vecs: np.ndarray) -> dict[int, float]:
    """Importance 0.35 for 95 of the NEAR nearest passages (exact cosine) of each of the first FILTER_QUERIES
    queries: every rank but 0, 20, 40, 60, 80. The filtered rows' cutoff of 0.4 drops them; the default 0.3 keeps
    them."""
    qv = query_vectors(queries(FILTER_QUERIES)).astype(np.float32)
    sims = np.asarray(vecs, dtype=np.float32) @ qv.T
    marked: dict[int, float] = {}
    for col in range(sims.shape[1]):
        top = np.argsort(-sims[:, col], kind="stable")[:NEAR]
        marked.update({int(i): 0.35 for rank, i in enumerate(top) if rank % 20})
    return marked


def build_corpus(size: int) -> str:
    """Database speed_<size> with ``size`` memories, loaded with COPY (index dropped), index built after."""
    existing = database_uri(f"speed_{size}")
    meta_path = CACHE / f"build-{size}.json"
    built = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if existing and built.get("version") == BUILD_VERSION:
        with db.connect(existing) as conn:
            n = conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = 'speed'").fetchone()[0]
        if n == size:
            db.migrate(existing)  # the corpus is kept; the schema and functions are those of this checkout
            settle(existing)
            return existing
    chosen, vecs = corpus_vectors(size)
    importance = near_importance(vecs)
    uri = fresh_database(server_uri(), f"speed_{size}")
    t0 = time.perf_counter()
    with db.connect(uri) as conn:
        maintenance.drop_hnsw(conn)
        groups: dict[str, list[int]] = {}
        for i, (key, _, _) in enumerate(chosen):
            groups.setdefault(key, []).append(i)
        cfg = conn.execute("SELECT memsql.text_search_config(NULL)::text").fetchone()[0]
        conn.commit()   # each transaction below commits (not savepoints of one)
        # a transaction per 200 documents, as an ingest commits its groups: in one transaction the term
        # statistics' rows of common lexemes pile up a version per document that cannot be pruned, and each update
        # walks them (100k passages in one transaction: over 30 minutes; 10k: 33 s)
        items = list(groups.items())
        for start in range(0, len(items), 200):
            with conn.transaction():
                for key, idx in items[start:start + 200]:
                    title = chosen[idx[0]][1]
                    doc_id, _ = conn.execute(
                        "SELECT document_id, action FROM memsql.document_upsert(%s, %s, %s, %s, %s, %s, %s, %s, %s, "
                        "%s::jsonb)", ("speed", key, f"h{key}", "text", key, title[:200], "note", None, [], "{}"),
                    ).fetchone()
                    rows = (("speed", doc_id, j, chosen[i][2], f"c{i}", vecs[i], "note", importance.get(i), [],
                             passage_tags(i), "{}", None, cfg, None) for j, i in enumerate(idx))
                    db.copy_memories(conn, rows)
        load_s = time.perf_counter() - t0
        build = maintenance.rebuild_hnsw(conn)
        # the window embeddings of passages longer than one window, as the Ingestor stores them
        from memsql.embedding import default_embedder
        t1 = time.perf_counter()
        windowed = db.compute_windows(conn, default_embedder(), "speed", batch=1024)
        n_long = conn.execute("SELECT count(*) FROM memsql.memory_windows WHERE namespace = 'speed' "
                              "AND cardinality(embeddings) > 0").fetchone()[0]
        windows_s = time.perf_counter() - t1
    settle(uri)
    meta = {"size": size, "version": BUILD_VERSION, "load_seconds": round(load_s, 1), "documents": len(groups),
            "index_build": build, "importance_marked": len(importance), "windowed": windowed,
            "with_windows": n_long, "windows_seconds": round(windows_s, 1), "load": load()}
    meta_path.write_text(json.dumps(meta))
    print(f"[corpus] speed_{size}: {meta}", flush=True)
    return uri


def queries(n: int) -> list[str]:
    path = SHARED / "scifact" / "queries.train.jsonl"
    if not path.exists():
        path = SHARED / "scifact" / "queries.jsonl"
    return [json.loads(line)["text"] for line in path.open(encoding="utf-8")][:n]


def query_vectors(qs: list[str]) -> np.ndarray:
    from memsql.embedding import default_embedder

    return default_embedder().embed(qs)


def explain_ms(conn, stmt, params) -> float:
    """Server time of one statement: planning + execution, EXPLAIN (ANALYZE, TIMING OFF) (per-node clocks off:
    they would add their own cost), as bench/quality.py measures it."""
    plan = conn.execute(sql.SQL("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ") + sql.SQL(stmt), params).fetchone()[0]
    return float(plan[0]["Execution Time"]) + float(plan[0].get("Planning Time", 0.0))


DENSE_SQL = ("SELECT m.id FROM memsql.memories m WHERE m.namespace = 'speed' AND m.embedding IS NOT NULL "
             "ORDER BY m.embedding::halfvec(384) <=> %s::halfvec(384) LIMIT 10")


def hnsw_curve(uri: str, vecs: np.ndarray, qvecs: np.ndarray, grid: list[tuple[int, int]],
               ef_values: list[int], built: dict) -> list[dict]:
    """The curve for each (m, ef_construction) of ``grid``; the index build_corpus made (``built``, its
    rebuild_hnsw result) is used as is for its own parameters, the others are built and the default restored."""
    with db.connect(uri) as conn:
        ids = np.array([r[0] for r in conn.execute(
            "SELECT id FROM memsql.memories WHERE namespace = 'speed' ORDER BY id").fetchall()])
        stored = np.array([np.asarray(r[0].to_numpy() if hasattr(r[0], "to_numpy") else r[0], dtype=np.float32)
                           for r in conn.execute("SELECT embedding FROM memsql.memories WHERE namespace = 'speed' "
                                                 "ORDER BY id").fetchall()])
        exact = [set(ids[np.argsort(-(stored @ q), kind="stable")[:10]]) for q in qvecs]
        rows, rebuilt = [], False
        for m, efc in grid:
            if (m, efc) == (built["m"], built["ef_construction"]) and not rebuilt:
                build = built
            else:
                build, rebuilt = maintenance.rebuild_hnsw(conn, m=m, ef_construction=efc), True
            conn.execute("SET hnsw.iterative_scan = 'relaxed_order'")
            for ef in ef_values:
                conn.execute(sql.SQL("SET hnsw.ef_search = {}").format(sql.Literal(ef)))
                for q in qvecs[:5]:
                    conn.execute(DENSE_SQL, (q,)).fetchall()  # warm the index pages
                plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + DENSE_SQL, (qvecs[0],)).fetchall())
                index_used = "memories_embedding_hnsw" in plan  # else the planner chose an exact scan
                l0 = load()
                recall, times = [], []
                for q, truth in zip(qvecs, exact):
                    got = {r[0] for r in conn.execute(DENSE_SQL, (q,)).fetchall()}
                    recall.append(len(got & truth) / 10)
                    times.append(explain_ms(conn, DENSE_SQL, (q,)))
                row = {"m": m, "ef_construction": efc, "ef_search": ef, "recall_at_10": round(float(np.mean(recall)), 4),
                       "p50_ms": round(pct(times, 50), 3), "p99_ms": round(pct(times, 99), 3),
                       "build_seconds": build["seconds"], "maintenance_work_mem": build["maintenance_work_mem"],
                       "build_notices": build["notices"], "index_used": index_used, "load": l0}
                rows.append(row)
                print(f"  {row}", flush=True)
            conn.commit()
        if rebuilt:
            maintenance.rebuild_hnsw(conn)  # back to the defaults for the search part
    return rows


def memory_notice_demo(uri: str) -> dict:
    """One build at the server's default maintenance_work_mem, to show pgvector's notice when the graph outgrows it."""
    with db.connect(uri) as conn:
        default = conn.execute("SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'"
                               ).fetchone()[0]
        low = maintenance.rebuild_hnsw(conn, maintenance_work_mem=int(default))
        sized = maintenance.rebuild_hnsw(conn)
    return {"server_default": low, "sized_from_row_count": sized}


def part_hnsw(sizes: list[int], nq: int, grids: dict[int, list[tuple[int, int]]], ef_values: list[int]) -> dict:
    out = {}
    qs = queries(nq)
    qv = query_vectors(qs)
    for size in sizes:
        uri = build_corpus(size)
        _, vecs = corpus_vectors(size)
        print(f"[hnsw] {size}", flush=True)
        built = json.loads((CACHE / f"build-{size}.json").read_text())["index_build"]
        res: dict[str, Any] = {"queries": len(qs), "curve": hnsw_curve(uri, vecs, qv, grids.get(size, [(16, 64)]),
                                                                       ef_values, built)}
        # the graph outgrows the server's default: show its notice (up to 100k: past it, a build that spills to
        # disk takes hours)
        if 64 * 2**20 < maintenance.hnsw_build_memory(size) and size <= 100_000:
            res["maintenance_work_mem_demo"] = memory_notice_demo(uri)
        out[str(size)] = res
    return out


def claims_quality(mem, conn, options: dict) -> dict:
    """SciFact train claims against this corpus: the documents of the top 50 memories in rank order (first
    occurrence), nDCG@10 and recall@10 against the train qrels restricted to the documents the corpus holds
    (memsql.evaluate, ranx)."""
    import csv

    from memsql.evaluate import evaluate_runs, ranks_to_run

    qrels: dict[str, dict[str, int]] = {}
    with (SHARED / "scifact" / "qrels" / "train.tsv").open(encoding="utf-8") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            qrels.setdefault(r["query-id"], {})[r["corpus-id"]] = int(r["score"])
    source = dict(conn.execute("SELECT id, source_uri FROM memsql.documents WHERE namespace = 'speed'").fetchall())
    held = {u.split(":", 1)[1] for u in source.values() if u.startswith("scifact:")}
    claims = [json.loads(line) for line in (SHARED / "scifact" / "queries.train.jsonl").open(encoding="utf-8")]
    judged = {c["_id"]: {d: g for d, g in qrels.get(c["_id"], {}).items() if d in held} for c in claims}
    claims = [c for c in claims if judged[c["_id"]]]
    vecs = mem.embedder.embed([c["text"] for c in claims])
    run = {}
    for c, v in zip(claims, vecs):
        uris = (source[r.document_id] for r in mem.search(c["text"], k=50, query_embeddings=[v], touch=False,
                                                          **options))
        run[c["_id"]] = ranks_to_run(u.split(":", 1)[1] for u in uris if u.startswith("scifact:"))
    scores = evaluate_runs({c["_id"]: judged[c["_id"]] for c in claims}, {"run": run},
                           metrics=["ndcg@10", "recall@10"])["run"]["overall"]
    return {"claims": len(claims), "ndcg@10": round(scores["ndcg@10"], 4),
            "recall@10": round(scores["recall@10"], 4), "options": options}


def filtered_rows(mem, conn, uri: str, qs: list[str], qv: list) -> list[dict]:
    """Per filter (FILTERS): memory_search's SQL p50 / p99 at its defaults, and the dense arm's rows at k 10 and
    100 against the exact computation (tests/filtered_corpus.py's call and exact query, on a connection of its own in
    autocommit: its SET LOCAL must end with its statement)."""
    from filtered_corpus import eligible, exact, exact_lexical, lexical_search, search

    xconn = db.connect(uri, autocommit=True)
    out = []
    for name, (args, where) in FILTERS.items():
        kept = eligible(conn, "speed", where)
        l0 = load()
        calls = [mem.statement("search", query=q, query_embeddings=[v], namespace="speed", touch=False, **args)
                 for q, v in zip(qs, qv)]
        for call in calls:   # warm: plans made, pages touched
            conn.execute(call.sql, call.params).fetchall()
        times = [explain_ms(conn, call.sql, call.params) for call in calls]
        row = {"filter": name, "eligible": kept, "queries": len(qs), "load": l0,
               "sql_ms": {"p50": round(pct(times, 50), 3), "p99": round(pct(times, 99), 3)}}
        for k in (10, 100):
            got_n = want_n = overlap = same = 0
            for v in qv:
                got = search(conn, "speed", v, k, **args)
                want = exact(xconn, "speed", v, k, where)
                got_n, want_n = got_n + len(got), want_n + len(want)
                overlap += len(set(got) & set(want))
                same += got == want
            row[f"dense_k{k}"] = {"rows": got_n, "expected": len(qv) * min(k, kept),
                                  "overlap": round(overlap / max(want_n, 1), 4), "same_order": same}
        # the lexical arm alone (no query embedding) against the BM25 ranking written out in SQL
        got_n = want_n = overlap = same = 0
        for q in qs:
            got = lexical_search(conn, "speed", q, 10, **args)
            want = exact_lexical(xconn, "speed", q, 10, where)
            got_n, want_n = got_n + len(got), want_n + len(want)
            overlap += len(set(got) & set(want))
            same += got == want
        row["lexical_k10"] = {"rows": got_n, "expected": want_n, "overlap": round(overlap / max(want_n, 1), 4),
                              "same_order": same}
        out.append(row)
        print(f"[filtered] {row}", flush=True)
    xconn.close()
    return out


def part_search(sizes: list[int], nq: int, stamp: dict) -> dict:
    from memsql.client import Memory
    from memsql.embedding import DEFAULT_BACKEND

    qs = queries(nq)
    out = {}
    for size in sizes:
        uri = build_corpus(size)
        build = json.loads((CACHE / f"build-{size}.json").read_text())
        # a server holding this corpus only: restarted (shared buffers emptied; with the other corpora in the pool
        # too, 10k searches measured 3.75 ms p50 against 3.1-3.3), then its pages loaded, as after a while of searching
        server.embedded_stop(home())
        server_uri()
        with Memory(dsn=uri, namespace="speed") as mem, db.connect(uri) as conn:
            warm = prewarm(conn)
            qv = list(mem.embedder.embed(qs))
            # warm: every query once on both connections (Memory's, and the one timing EXPLAIN): plans made, and
            # each backend's page table filled for the shared buffers it touches (a backend's first touch of a
            # buffer page is a page fault: with the corpus prewarmed into 6 GB, a new connection's first pass
            # measured 0.5-1 ms slower per search; a server's long-lived connection has paid that long before)
            for q, v in zip(qs, qv):
                mem.search(q, query_embeddings=[v], touch=False)
                for opts in ({"touch": False}, {"touch": False, "posting_budget": 0}):
                    call = mem.statement("search", query=q, query_embeddings=[v], namespace="speed", **opts)
                    conn.execute(call.sql, call.params).fetchall()
            l0 = load()
            sql_ms, client_ms, exact_ms = [], [], []
            for q, v in zip(qs, qv):
                call = mem.statement("search", query=q, query_embeddings=[v], namespace="speed", touch=False)
                sql_ms.append(explain_ms(conn, call.sql, call.params))
                t0 = time.perf_counter()
                mem.search(q, query_embeddings=[v], touch=False)
                client_ms.append((time.perf_counter() - t0) * 1000)
            # every posting read: a pass of its own. Alternated with the default call (runs before 2026-11-30
            # 18:40), its reads of up to millions of postings at 1M evicted the default call's pages from the CPU
            # caches there (default p50 4.6 ms alternated, 3.5 alone); at 10k-100k no difference was measurable
            for q, v in zip(qs, qv):
                call = mem.statement("search", query=q, query_embeddings=[v], namespace="speed", touch=False,
                                     posting_budget=0)
                exact_ms.append(explain_ms(conn, call.sql, call.params))
            l1 = load()
            e2e = {}
            for enrich in (False, True):
                times = []
                for q in qs:
                    t0 = time.perf_counter()
                    mem.search(q, touch=False, enrich=enrich)
                    times.append((time.perf_counter() - t0) * 1000)
                e2e["enrich" if enrich else "plain"] = {"p50_ms": round(pct(times, 50), 2), "p99_ms": round(pct(times, 99), 2)}
            l2 = load()
            quality = {name: claims_quality(mem, conn, opts) for name, opts in
                       (("default", {}), ("exact_bm25", {"posting_budget": 0}))}
            filtered = filtered_rows(mem, conn, uri, qs[:FILTER_QUERIES], qv[:FILTER_QUERIES])
        out[str(size)] = {
            "memories": size, "queries": len(qs), "buffers": warm, "index": {k: build["index_build"][k] for k in
                                                            ("m", "ef_construction", "maintenance_work_mem", "seconds", "notices")},
            "sql_ms": {"p50": round(pct(sql_ms, 50), 3), "p99": round(pct(sql_ms, 99), 3), "load": l0,
                       "how": "EXPLAIN (ANALYZE, TIMING OFF) planning + execution time of the exact memory_search call, 1 query embedding"},
            "client_ms": {"p50": round(pct(client_ms, 50), 3), "p99": round(pct(client_ms, 99), 3), "load": l0,
                          "how": "Memory.search with precomputed embedding: round trip + row decoding"},
            "end_to_end_ms": {**e2e, "load": l1, "load_after": l2, "backend": DEFAULT_BACKEND,
                              "how": "Memory.search(query) including query embedding; enrich = up to 3 variants"},
            "sql_ms_exact_bm25": {"p50": round(pct(exact_ms, 50), 3), "p99": round(pct(exact_ms, 99), 3), "load": l0,
                                  "how": "the same call with posting_budget => 0 (every posting), a pass of its own"},
            "claims_quality": quality,
            "filtered": filtered,
            "run": stamp,
        }
        print(f"[search] {size}: {out[str(size)]}", flush=True)
    return out


def part_filtered(sizes: list[int], stamp: dict) -> dict:
    """The filtered rows alone (filtered_rows), on a server restarted for each corpus and prewarmed as part_search's;
    returns {size: rows}, each row stamped with its commit."""
    from memsql.client import Memory

    qs = queries(FILTER_QUERIES)
    out = {}
    for size in sizes:
        uri = build_corpus(size)
        server.embedded_stop(home())
        server_uri()
        with Memory(dsn=uri, namespace="speed") as mem, db.connect(uri) as conn:
            prewarm(conn)
            qv = list(mem.embedder.embed(qs))
            for q, v in zip(qs, qv):   # warm, as part_search
                call = mem.statement("search", query=q, query_embeddings=[v], namespace="speed", touch=False)
                conn.execute(call.sql, call.params).fetchall()
            out[size] = [{**row, "commit": stamp["commit"], "at": stamp["at"]}
                         for row in filtered_rows(mem, conn, uri, qs, qv)]
    return out


# ------------------------------------------------------------------------------------------------------------
# report


def markdown(res: dict) -> str:
    L = ["# Speed (bench/speed.py)", "",
         f"Machine: {res.get('machine', '')}. Load = 1-minute load average when the figure was taken "
         "(the 2 cores may be shared: a figure taken under load is slower than the machine can do; see the notes).", ""]
    e = res.get("embed")
    if e:
        L += ["## Embedding backends and ingest", "", f"Corpus: {e['corpus']}. Gate: min cosine to torch >= {GATE}.", "",
              "| backend | precision | embed chunks/s | ingest chunks/s | ingest / embed | embed CPU s / 1k chunks | "
              "ingest CPU s / 1k (client + server) | min cosine to torch | gate | load | peak RSS MB | model load s |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for b, r in e["backends"].items():
            cos = r.get("cosine_to_torch", {})
            na = lambda v: "not run" if v is None else v  # noqa: E731
            L.append(f"| {b} | {r['precision']} | {r['embed_chunks_per_s']} | {na(r['ingest_chunks_per_s'])} | "
                     f"{na(r['ingest_over_embed'])} | {na(r.get('embed_cpu_s_per_1k'))} | "
                     f"{na(r.get('ingest_cpu_s_per_1k'))} | {cos.get('min', '')} | {'pass' if r.get('gate_passed') else 'FAIL'} | "
                     f"{', '.join(str(x['load']) for x in r['embed_runs'] + r['ingest_runs'])} | {na(r['peak_rss_mb'])} | "
                     f"{r['load_and_warmup_s']} |")
        L += ["", f"Fastest passing backend: **{e.get('fastest_passing')}** (throughputs are the best of "
              f"{len(next(iter(e['backends'].values()))['embed_runs'])} run(s); "
              f"ingest = chunk + embed + COPY + term statistics, a group's new documents in one transaction, writes overlapped "
              "with the next group's encoding).", ""]
        a = e.get("arithmetic")
        if a:
            g = a["gemm_gflop_per_s"]
            need = round(150 * a["gflop_per_chunk"], 1)
            L += [f"Arithmetic (bench/speed.py model_arithmetic, a lower bound): {a['gflop_per_chunk']} GFLOP per chunk "
                  f"(mean {a['mean_pieces']} pieces); the backends run "
                  + ", ".join(f"{b} {r['gflop_per_s']}" for b, r in e["backends"].items() if "gflop_per_s" in r)
                  + f" GFLOP/s. The best matrix products of this machine (gemm_ceiling, torch, every core): f32 "
                  f"{g['f32']}, bf16 {g['bf16']} GFLOP/s (load {a['load']}). 150 chunks/s of these chunks needs {need} "
                  f"GFLOP/s: {round(need / g['bf16'], 2)} x the best bf16 product.", ""]
        q = e.get("int8_probe")
        if q:
            L += [f"int8 ({q['backend']}, bench/speed.py quantized_probe): {q['chunks_per_s']} chunks/s, min cosine "
                  f"{q['min_cosine']} (mean {q['mean_cosine']}) to the f32 vectors: gate "
                  f"{'pass' if q['gate_passed'] else 'FAIL'} (load {q['load']}).", ""]
    s = res.get("startup")
    if s:
        L += ["## Start-up", "", f"New processes against {s['database']}; median of {s['runs']}.", "",
              f"- `memsql --help`: {s['help_s']['median']} s (load {s['help_s']['load']})"]
        L += [f"- `memsql {name}`: {c['median']} s (load {c['load']})" for name, c in s.get("commands_s", {}).items()]
        L += [""]
        L += ["| backend | `memsql search` cold process s | MCP initialize s | MCP first answer s | "
              "MCP next answer ms | MCP peak RSS MB | load |", "|---|---|---|---|---|---|---|"]
        for b in BACKENDS:
            if f"search_{b}_s" in s:
                m = s[f"mcp_{b}"]
                L.append(f"| {b} | {s[f'search_{b}_s']['median']} | {m['initialize_s']} | {m['first_answer_s']} | "
                         f"{m['second_answer_ms']} | {m['peak_rss_mb']} | {s[f'search_{b}_s']['load']}, {m['load']} |")
        L.append("")
    se = res.get("search")
    if se:
        L += ["## Search latency (memory_search defaults)", "",
              "| memories | SQL p50 ms | SQL p99 ms | client p50 ms | end-to-end p50 ms | p99 | enriched p50 ms | "
              "p99 | shared_buffers (prewarmed MB) | load |", "|---|---|---|---|---|---|---|---|---|---|"]
        for size, r in se.items():
            ee = r["end_to_end_ms"]
            buf = r.get("buffers") or {}
            L.append(f"| {size} | {r['sql_ms']['p50']} | {r['sql_ms']['p99']} | {r['client_ms']['p50']} | "
                     f"{ee['plain']['p50_ms']} | {ee['plain']['p99_ms']} | {ee['enrich']['p50_ms']} | "
                     f"{ee['enrich']['p99_ms']} | {buf.get('shared_buffers', '')} ({buf.get('prewarmed_mb', '')}) | "
                     f"{r['sql_ms']['load']}, {ee['load']} |")
        L += ["", "SQL = the server's planning + execution time (EXPLAIN (ANALYZE, TIMING OFF)) of the exact call "
              "Memory.search makes, one "
              "query embedding given; client = Memory.search with that embedding (round trip, decoding); "
              "end to end = Memory.search(query) embedding the query itself (enriched: up to 3 variants). "
              "Warm: the server restarted before each size (its shared buffers hold that corpus only), memsql's tables "
              "and indexes loaded into shared buffers (pg_prewarm; not the postings heap nor the GIN index, which "
              "memory_search does not read) as a server that has been answering searches holds them, then every query "
              "once on each connection (a connection's first touch of a shared-buffer page is a page fault).", ""]
        if all("claims_quality" in r for r in se.values()):
            L += ["BM25 arm within its posting budget (default 2000: past twice that, ranked on the rarest lexemes, "
                  "the best 4 x candidates scored on all) against every posting read (`posting_budget => 0`, exact ranking): "
                  "SQL in a pass of its own after the timings above; quality = SciFact train claims with a judged document in "
                  "the corpus, documents of the top 50 memories in rank order, against the train qrels.", "",
                  "| memories | SQL p50 ms | exact BM25: SQL p50 ms | p99 | claims | nDCG@10 | exact BM25: nDCG@10 | "
                  "recall@10 | exact BM25: recall@10 |", "|---|---|---|---|---|---|---|---|---|"]
            for size, r in se.items():
                qd, qe = r["claims_quality"]["default"], r["claims_quality"]["exact_bm25"]
                L.append(f"| {size} | {r['sql_ms']['p50']} | {r['sql_ms_exact_bm25']['p50']} | "
                         f"{r['sql_ms_exact_bm25']['p99']} | {qd['claims']} | {qd['ndcg@10']} | {qe['ndcg@10']} | "
                         f"{qd['recall@10']} | {qe['recall@10']} |")
            L.append("")
    if se and any("filtered" in r for r in se.values()):
        L += ["## Filtered search", "",
              f"The first {FILTER_QUERIES} queries; tags t10 / t1 on every 10th / 100th passage; importance cutoff "
              f"0.4 over 95 of each query's {NEAR} nearest passages at importance 0.35 (bench/speed.py "
              "near_importance). SQL = memory_search at its defaults with the filter (planning + execution). Rows = "
              "the dense arm alone (tests/filtered_corpus.py's call) against the exact computation (index scans "
              "off: the greatest(50, k) memories the filter keeps nearest by the full-precision cosine of their own "
              "embedding, ties by id, then ordered as memory_search scores them: a windowed memory by its best "
              "window; rows before e1e8ee6 by the own cosine only, there were no windows): rows returned / "
              "queries x min(k, eligible), the share of the exact rows returned, queries in the exact order. "
              "Lexical = memory_search without a query embedding (its lexical arm alone, tests/filtered_corpus.py "
              "lexical_search) at k 10 against the BM25 ranking written out in SQL over the memories the filter keeps "
              "(exact_lexical): rows returned / exact rows, overlap, same order (a dash: not measured then).", "",
              "| memories | filter | eligible | SQL p50 ms | SQL p99 ms | k 10: rows | overlap | same order | "
              "k 100: rows | overlap | same order | lexical k 10: rows | overlap | same order | load | commit |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for size, r in se.items():
            for f in r.get("filtered", []):
                a, b, x = f["dense_k10"], f["dense_k100"], f.get("lexical_k10")
                lex = (f"{x['rows']} / {x['expected']} | {x['overlap']:.4f} | {x['same_order']}/{f['queries']}"
                       if x else "- | - | -")
                L.append(f"| {size} | {f['filter']} | {f['eligible']} | {f['sql_ms']['p50']} | {f['sql_ms']['p99']} | "
                         f"{a['rows']} / {a['expected']} | {a['overlap']:.4f} | {a['same_order']}/{f['queries']} | "
                         f"{b['rows']} / {b['expected']} | {b['overlap']:.4f} | {b['same_order']}/{f['queries']} | "
                         f"{lex} | {f['load']} | {f.get('commit') or r['run']['commit']} |")
        L.append("")
    h = res.get("hnsw")
    if h:
        L += ["## HNSW: recall@10 against exact search, and latency", "",
              "Dense arm alone (namespace filter, ORDER BY embedding::halfvec(384) <=> q LIMIT 10, iterative scan "
              "relaxed_order; the index stores half-precision vectors, V0009); "
              "exact = numpy over the same stored vectors.", "",
              "| memories | m | ef_construction | build s | maintenance_work_mem | ef_search | recall@10 | p50 ms | "
              "p99 ms | plan | load |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for size, r in h.items():
            for row in r["curve"]:
                L.append(f"| {size} | {row['m']} | {row['ef_construction']} | {row['build_seconds']} | "
                         f"{row['maintenance_work_mem']} | {row['ef_search']} | {row['recall_at_10']} | "
                         f"{row['p50_ms']} | {row['p99_ms']} | "
                         f"{ {True: 'HNSW', False: 'exact scan'}.get(row.get('index_used'), 'not recorded')} | {row['load']} |")
        for size, r in h.items():
            demo = r.get("maintenance_work_mem_demo")
            if demo:
                lo, hi = demo["server_default"], demo["sized_from_row_count"]
                L += ["", f"maintenance_work_mem at {size} memories (m=16, ef_construction=64): server default "
                      f"{lo['maintenance_work_mem']}: {lo['seconds']} s, notices: {lo['notices'] or 'none'}; sized "
                      f"from the row count (memsql.maintenance.hnsw_build_memory) {hi['maintenance_work_mem']}: {hi['seconds']} s, "
                      f"notices: {hi['notices'] or 'none'}."]
        L.append("")
    for note in res.get("notes", []):
        L.append(f"- {note}")
    return "\n".join(L) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="embed,startup,hnsw,search")
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ef", default="40,64,100,200")
    ap.add_argument("--grid-small", default="8:64,16:64,16:128,32:128")
    ap.add_argument("--grid-large", default="16:64,16:128,32:128")
    ap.add_argument("--out", default=str(BENCH / "results" / "speed"))
    ap.add_argument("--runs", type=int, default=2, help="embed and ingest runs per backend (best is reported)")
    ap.add_argument("--collect", action="store_true", help="embed part: report the children's saved results")
    ap.add_argument("--child-embed")
    args = ap.parse_args()
    if args.child_embed:
        print(json.dumps(child_embed(args.child_embed, args.runs)))
        return
    if not (SHARED / "scifact").is_dir():
        raise SystemExit("../shared/data is absent: nothing to measure")
    out = Path(args.out)
    res = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else {}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    res["machine"] = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    parts = args.parts.split(",")
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    stamp = {"commit": commit, "at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    grid = lambda s: [tuple(int(x) for x in p.split(":")) for p in s.split(",")]  # noqa: E731
    if "embed" in parts:
        res["embed"] = {**part_embed(backends, args.runs, args.collect), **stamp}
    if "hnsw" in parts:
        res["hnsw"] = {**res.get("hnsw", {}), **part_hnsw(
            sizes, args.queries, {s: grid(args.grid_small if s < 50_000 else args.grid_large) for s in sizes},
            [int(x) for x in args.ef.split(",")])}
    if "search" in parts:
        res["search"] = {**res.get("search", {}), **part_search(sizes, args.queries, stamp)}
    if "filtered" in parts:   # the filtered rows alone, into the search part's entry of each size
        for size, rows in part_filtered(sizes, stamp).items():
            res.setdefault("search", {}).setdefault(str(size), {})["filtered"] = rows
    if "startup" in parts:
        res["startup"] = {**part_startup(backends, min(sizes)), **stamp}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(res, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(res))
    print(markdown(res))


if __name__ == "__main__":
    main()
