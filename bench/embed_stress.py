"""Embedding never hangs: N bulk ingests (more than 64 chunks each, so the OpenVINO bulk path runs), each in a
fresh process (`memsql ingest`), with a timeout; a round that does not finish within it counts as a hang.

    .venv/bin/python bench/embed_stress.py --rounds 200 [--timeout 300] [--files 12] [--backend openvino]

An embedded server in a scratch home (or $MEMSQL_BENCH_DSN); every round ingests the same synthetic notes into a
namespace of its own, so every chunk is embedded again. Writes bench/results/embed_stress.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WORDS = ("memory search index vector postgres chunk embedding model window ingest document version namespace "
         "filter topic lexical dense fusion rank decay importance archive restore history export stream").split()


def write_notes(folder: Path, files: int) -> None:
    """``files`` markdown notes of 6 sections of ~120 words: about 3 chunks a section, 18 a file."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        parts = [f"# Note {f}"]
        for s in range(6):
            words = [WORDS[(f * 31 + s * 7 + i * i) % len(WORDS)] for i in range(330)]
            parts.append(f"## Section {s}\n\n" + " ".join(words) + f" (file {f}, section {s}).")
        (folder / f"note{f:03d}.md").write_text("\n\n".join(parts) + "\n", "utf-8")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a round counts as a hang")
    ap.add_argument("--files", type=int, default=6)
    ap.add_argument("--backend", default="openvino")
    ap.add_argument("--out", default=str(HERE / "results" / "embed_stress"))
    args = ap.parse_args()

    from benchdb import fresh_database

    from memsql import server

    work = Path(tempfile.mkdtemp(prefix="memsql-embed-stress-"))
    dsn = os.environ.get("MEMSQL_BENCH_DSN") or server.embedded_start(work / "home")
    dsn = fresh_database(dsn, "memsql_embed_stress")
    notes = work / "notes"
    write_notes(notes, args.files)
    memsql_cli = Path(sys.executable).with_name("memsql")
    env = {**os.environ, "MEMSQL_DSN": dsn, "MEMSQL_MEMORY_EMBEDDINGS_BACKEND": args.backend,
           "MEMSQL_WORKER_AUTOSTART": "false"}
    rounds = []
    t_all = time.perf_counter()
    for r in range(args.rounds):
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(memsql_cli), "ingest", str(notes), "--namespace", f"stress{r}", "--json"],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=args.timeout)
            outcome = "ok" if proc.returncode == 0 else "error"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            outcome = "hang"
        seconds = time.perf_counter() - t0
        chunks = None
        try:
            chunks = json.loads(out)["chunks"]
        except (ValueError, KeyError, TypeError):
            pass
        rounds.append({"round": r, "outcome": outcome, "seconds": round(seconds, 2), "chunks": chunks,
                       **({"stderr": err.strip().splitlines()[-1:] } if outcome != "ok" else {})})
        print(f"round {r}: {outcome} {seconds:.1f}s chunks={chunks}", flush=True)
        _write(args, rounds, time.perf_counter() - t_all)   # partial results survive an interrupted run
    if not os.environ.get("MEMSQL_BENCH_DSN"):
        server.embedded_stop(work / "home")
    hangs = sum(r["outcome"] == "hang" for r in rounds)
    return 1 if hangs else 0


def _write(args, rounds: list[dict], wall: float) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    counts = {k: sum(r["outcome"] == k for r in rounds) for k in ("ok", "error", "hang")}
    secs = sorted(r["seconds"] for r in rounds)
    result = {"rounds_planned": args.rounds, "rounds_run": len(rounds), **counts, "timeout_s": args.timeout,
              "backend": args.backend, "chunks_per_round": rounds[-1]["chunks"] if rounds else None,
              "seconds_median": secs[len(secs) // 2] if secs else None, "seconds_max": secs[-1] if secs else None,
              "wall_s": round(wall, 1), "machine": f"{platform.machine()} {os.cpu_count()} cpus",
              "failures": [r for r in rounds if r["outcome"] != "ok"]}
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(
        "# Embedding stress: bulk ingests in fresh processes\n\n"
        f"`bench/embed_stress.py`: each round runs `memsql ingest` of {args.files} notes "
        f"({result['chunks_per_round']} chunks, over 64, so the {args.backend} bulk path runs) in a new process; "
        f"a round still running after {args.timeout:g} s counts as a hang.\n\n"
        "| rounds run | ok | error | hang | median s | max s |\n|---|---|---|---|---|---|\n"
        f"| {len(rounds)} of {args.rounds} | {counts['ok']} | {counts['error']} | {counts['hang']} | "
        f"{result['seconds_median']} | {result['seconds_max']} |\n\n"
        f"Machine: {result['machine']}, shared with other work while it ran.\n")


if __name__ == "__main__":
    raise SystemExit(main())
