"""Peak memory while parsing chat exports: synthetic ChatGPT and Claude.ai exports of about 10 MB and 100 MB, each
parsed in a fresh process by memsql's adapter (every conversation made into a Document and dropped, as the ingest
consumes them), and, for comparison, by ``json.load`` of the whole file (what a non-streaming parser holds).

    .venv/bin/python bench/export_memory.py [--sizes 10 100] [--work /tmp/memsql-export-memory]

The exports are written under --work (never into the repository) and deleted afterwards unless --keep. Peak RSS is
the process's ru_maxrss; "parse MB" is the peak minus the RSS measured after the imports, before the file is opened.
Writes bench/results/export_memory.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = ("the a warehouse order invoice customer shipment pallet forklift dock schedule team meeting budget report "
         "deploy server database index query cache latency backup restore migration rollout review incident "
         "postgres memory search vector chunk token window export import namespace version archive").split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _message_text(rng: random.Random) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 24)) for _ in range(rng.randint(2, 12)))


def chatgpt_conversation(rng: random.Random, c: int, turns: int) -> dict:
    mapping = {"root": {"id": "root", "parent": None, "children": ["n0"], "message": None}}
    t = 1_700_000_000.0 + c * 3600
    for i in range(turns):
        node, parent = f"n{i}", ("root" if i == 0 else f"n{i - 1}")
        role = "user" if i % 2 == 0 else "assistant"
        mapping[node] = {"id": node, "parent": parent, "children": [f"n{i + 1}"] if i + 1 < turns else [],
                         "message": {"id": f"m{c}-{i}", "author": {"role": role, "name": None},
                                     "create_time": t + i * 30, "update_time": None,
                                     "content": {"content_type": "text", "parts": [_message_text(rng)]},
                                     "status": "finished_successfully", "end_turn": True, "weight": 1.0,
                                     "metadata": {"model_slug": "gpt-4o", "request_id": f"req-{c}-{i}"},
                                     "recipient": "all"}}
    return {"id": f"conv-{c}", "conversation_id": f"conv-{c}", "title": f"Conversation {c}", "create_time": t,
            "update_time": t + turns * 30, "mapping": mapping, "current_node": f"n{turns - 1}",
            "moderation_results": [], "is_archived": False}


def claude_conversation(rng: random.Random, c: int, turns: int) -> dict:
    messages = []
    for i in range(turns):
        when = f"2025-{1 + c % 12:02d}-{1 + c % 28:02d}T{i % 24:02d}:{i % 60:02d}:00.000000Z"
        text = _message_text(rng)
        messages.append({"uuid": f"m{c}-{i}", "text": text, "sender": "human" if i % 2 == 0 else "assistant",
                         "created_at": when, "updated_at": when, "attachments": [], "files": [],
                         "content": [{"type": "text", "text": text, "start_timestamp": when, "stop_timestamp": when,
                                      "citations": []}]})
    return {"uuid": f"conv-{c}", "name": f"Conversation {c}", "created_at": messages[0]["created_at"],
            "updated_at": messages[-1]["created_at"], "account": {"uuid": "acct-1"}, "chat_messages": messages}


def write_export(path: Path, kind: str, megabytes: float, seed: int = 7) -> dict:
    """A list of conversations streamed to ``path`` until it holds about ``megabytes`` MB."""
    rng = random.Random(seed)
    make = chatgpt_conversation if kind == "chatgpt" else claude_conversation
    target = int(megabytes * 1_000_000)
    written, conversations = 0, 0
    with path.open("w", encoding="utf-8") as f:
        f.write("[")
        while written < target:
            item = json.dumps(make(rng, conversations, rng.randint(4, 40)), ensure_ascii=False)
            f.write(("," if conversations else "") + item)
            written += len(item) + 1
            conversations += 1
        f.write("]")
    return {"bytes": path.stat().st_size, "conversations": conversations}


_CHILD = r"""
import json, resource, sys, time
kind, mode, path = sys.argv[1:4]
from memsql.adapters.chatgpt import stream_chatgpt
from memsql.adapters.claude_ai import stream_claude_ai
def rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
base = rss_mb()
t0 = time.perf_counter()
if mode == "stream":
    report = (stream_chatgpt if kind == "chatgpt" else stream_claude_ai)(path)
    docs = sections = 0
    for doc in report.documents:
        docs += 1
        sections += len(doc.sections)
    out = {"documents": docs, "sections": sections, "failed": len(report.failed), "empty": report.empty}
else:
    with open(path, "rb") as f:
        value = json.load(f)
    out = {"documents": len(value)}
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({**out, "base_mb": round(base, 1), "peak_mb": round(peak, 1), "seconds": round(seconds, 2)}))
"""


def measure(kind: str, mode: str, path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, mode, str(path)], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        raise SystemExit(f"{kind} {mode} {path}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[10, 100], help="export sizes in MB")
    ap.add_argument("--kinds", nargs="+", default=["chatgpt", "claude_ai"])
    ap.add_argument("--work", default="/tmp/memsql-export-memory")
    ap.add_argument("--keep", action="store_true", help="keep the generated exports")
    ap.add_argument("--out", default=str(HERE / "results" / "export_memory"))
    args = ap.parse_args()

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for kind in args.kinds:
            for size in args.sizes:
                path = work / f"{kind}-{size:g}mb.json"
                made = write_export(path, kind, size)
                mb = made["bytes"] / 1_000_000
                for mode in ("stream", "json.load"):
                    r = measure(kind, mode, path)
                    parse = r["peak_mb"] - r["base_mb"]
                    rows.append({"export": kind, "size_mb": round(mb, 1), "conversations": made["conversations"],
                                 "parser": "memsql adapter (ijson stream)" if mode == "stream" else "json.load",
                                 **r, "parse_mb": round(parse, 1), "peak_over_size": round(r["peak_mb"] / mb, 2),
                                 "parse_over_size": round(parse / mb, 2)})
                    print(json.dumps(rows[-1]), flush=True)
                path.unlink()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}"
    import ijson

    result = {"machine": machine, "ijson_backend": ijson.backend, "date": time.strftime("%Y-%m-%d"), "rows": rows}
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Peak memory while parsing chat exports", "",
             "`bench/export_memory.py`: synthetic exports (conversations of 4-40 messages of 2-12 sentences), each "
             "parsed in a fresh process. *peak* is the process's peak RSS, *parse* the peak minus the RSS after the "
             "imports (the model is not loaded: parsing only). `json.load` is shown for comparison: what holding the "
             "whole file as Python objects costs.", "",
             "| export | size MB | conversations | parser | peak MB | parse MB | peak / size | parse / size | s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['export']} | {r['size_mb']} | {r['conversations']} | {r['parser']} | {r['peak_mb']} | "
                     f"{r['parse_mb']} | {r['peak_over_size']} | {r['parse_over_size']} | {r['seconds']} |")
    lines += ["", f"Machine: {machine}; ijson backend {ijson.backend}. Shared with other work while it ran.", ""]
    out.with_suffix(".md").write_text("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
