"""Stress of the embedded home: many processes start, use and leave one home at once, some killed at random moments.

Each round runs --procs child processes at the same time on one memsql home. A child starts the embedded server
(memsql.server.embedded_start: reused when running, started when not), then runs a lexical memory_search on the
migrated database or reads the server's status, and exits. A share of the children (--kill-share) is sent SIGTERM or
SIGKILL (even odds) at a random moment of its life (uniform over --kill-window seconds from its spawn: during the
interpreter's start-up, the server start, the query or the exit handlers that rewrite the handle list). Some rounds
start with the server stopped (--stop-share), so the children race to start it. With --corrupt-every N, every Nth
round first leaves the handle list (pgdata/.handle_pids.json) as a process killed in the middle of rewriting it in
place used to: empty, or cut off inside its JSON.

After each round a fresh process (never killed) must start the server and get the search answered: that is a
working home. Counted: children that failed without being killed (with their last error line), rounds that ended
with a broken home, kills by signal, hangs (a child alive after --timeout seconds).

    .venv/bin/python bench/home_stress.py                      # 8 processes x 100 rounds, results in bench/results
    .venv/bin/python bench/home_stress.py --code /tmp/old      # the same children on another copy of memsql
    .venv/bin/python bench/home_stress.py --procs 4 --rounds 5 --corrupt-every 2 --out /tmp/x   # the test's run

The home is a fresh temporary directory unless --home is given; the server is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import sys
from pathlib import Path
home, action = Path(sys.argv[1]), sys.argv[2]
from memsql import server
import psycopg
uri = server.embedded_start(home)
if action == "search":
    with psycopg.connect(uri, connect_timeout=10) as conn:
        conn.execute("SET search_path = memsql, public")
        n = conn.execute("SELECT count(*) FROM memsql.memory_search('stress of the embedded home', k => 5)").fetchone()[0]
    assert n >= 1, n
else:
    st = server.embedded_status(home)
    assert st.running, st
print("ok")
"""


def child_env(code: Path | None) -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.pop("MEMSQL_DSN", None)
    if code is not None:  # another copy of the memsql package first on the path
        env["PYTHONPATH"] = str(code) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def setup(home: Path) -> None:
    """Start the server once, migrate memsql's database and write a few memories (lexical search finds them)."""
    from memsql import db, server

    uri = server.embedded_start(home)
    db.migrate(uri)
    import psycopg

    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute("SET search_path = memsql, public")
        for i in range(5):
            conn.execute("SELECT memsql.memory_add(%s)", (f"Note {i} about the stress of the embedded home.",))


def corrupt(home: Path, rng: random.Random) -> str:
    path = home / "pgdata" / ".handle_pids.json"
    if rng.random() < 0.5:
        path.write_text("")
        return "empty"
    path.write_text("[1234, 56")
    return "cut"


def run_child(home: Path, action: str, env: dict, timeout: float) -> subprocess.Popen:
    # cwd: not this checkout, whose memsql/ would come first on the path of `python -c`
    return subprocess.Popen([sys.executable, "-c", CHILD, str(home), action], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=home.parent)


def check_home(home: Path, env: dict, timeout: float) -> tuple[bool, str]:
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, str(home), "search"], env=env, capture_output=True,
                             text=True, timeout=timeout, cwd=home.parent)
    except subprocess.TimeoutExpired:
        return False, "hang"
    return out.returncode == 0 and out.stdout.strip() == "ok", last_line(out.stderr)


def stress(home: Path, procs: int, rounds: int, code: Path | None, seed: int, kill_share: float,
           kill_window: float, stop_share: float, corrupt_every: int, timeout: float, log=print) -> dict:
    from memsql import server

    rng = random.Random(seed)
    env = child_env(code)
    kills = Counter()
    outcomes = Counter()
    failures = Counter()
    broken = Counter()
    injected = Counter()
    hangs = 0
    stops = 0
    rounds_broken = 0
    started = time.monotonic()
    for rnd in range(rounds):
        if corrupt_every and rnd % corrupt_every == corrupt_every - 1:
            injected[corrupt(home, rng)] += 1
        if rng.random() < stop_share:
            try:
                server.embedded_stop(home)
                stops += 1
            except Exception as exc:  # the old code may not even stop it
                failures[f"stop: {type(exc).__name__}: {str(exc)[:120]}"] += 1
        children = []
        for i in range(procs):
            action = "search" if rng.random() < 0.6 else "status"
            kill = (rng.choice((signal.SIGTERM, signal.SIGKILL)), rng.uniform(0, kill_window)) \
                if rng.random() < kill_share else None
            children.append((run_child(home, action, env, timeout), kill, time.monotonic()))
        pending = {id(c[0]) for c in children}
        deadline = time.monotonic() + timeout
        sent: dict[int, int] = {}
        while pending and time.monotonic() < deadline:
            now = time.monotonic()
            for proc, kill, t0 in children:
                if id(proc) not in pending:
                    continue
                if proc.poll() is not None:
                    pending.discard(id(proc))
                    continue
                if kill is not None and id(proc) not in sent and now - t0 >= kill[1]:
                    try:
                        os.kill(proc.pid, kill[0])
                        sent[id(proc)] = kill[0]
                    except ProcessLookupError:
                        pass
            time.sleep(0.005)
        for proc, kill, t0 in children:
            if proc.poll() is None:
                hangs += 1
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            if id(proc) in sent and proc.returncode < 0:
                kills[signal.Signals(sent[id(proc)]).name] += 1
                outcomes["killed"] += 1
            elif proc.returncode == 0 and out.strip() == "ok":
                outcomes["ok"] += 1
            else:
                outcomes["failed"] += 1
                failures[last_line(err) or f"exit {proc.returncode}"] += 1
        ok, why = check_home(home, env, timeout)
        if not ok:
            rounds_broken += 1
            broken[why] += 1
        log(f"round {rnd + 1}/{rounds}: {dict(outcomes)} kills {dict(kills)} home {'ok' if ok else 'BROKEN: ' + why}")
    return {
        "procs": procs, "rounds": rounds, "seed": seed, "code": str(code) if code else "this checkout",
        "kill_share": kill_share, "kill_window_s": kill_window, "stop_share": stop_share,
        "corrupt_every": corrupt_every, "server_stops": stops, "injected_corruptions": dict(injected),
        "children": sum(outcomes.values()), "outcomes": dict(outcomes), "kills": dict(kills),
        "child_failures": dict(failures), "hangs": hangs,
        "rounds_home_working": rounds - rounds_broken, "rounds_home_broken": rounds_broken,
        "home_broken_reasons": dict(broken), "seconds": round(time.monotonic() - started, 1),
    }


def markdown(runs: list[dict]) -> str:
    lines = ["# Embedded home stress (bench/home_stress.py)", "",
             "Each round: N processes at once on one home start the embedded server, run a lexical memory_search or "
             "read the status, exit; a share of them is killed (SIGTERM or SIGKILL) at a random moment; some rounds "
             "begin with the server stopped; with corrupt_every, every Nth round first leaves the handle list empty "
             "or cut (what a process killed while rewriting it in place left). After each round a fresh process must "
             "start the server and get its search answered.", "",
             "| code | procs x rounds | children | ok | killed (TERM / KILL) | failed | hangs | injected | "
             "rounds with a working home | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        o, k = r["outcomes"], r["kills"]
        lines.append(f"| {r['label']} | {r['procs']} x {r['rounds']} | {r['children']} | {o.get('ok', 0)} | "
                     f"{o.get('killed', 0)} ({k.get('SIGTERM', 0)} / {k.get('SIGKILL', 0)}) | {o.get('failed', 0)} | "
                     f"{r['hangs']} | {sum(r['injected_corruptions'].values())} | "
                     f"{r['rounds_home_working']} of {r['rounds']} | {r['seconds']} |")
    for r in runs:
        if r["child_failures"] or r["home_broken_reasons"]:
            lines += ["", f"{r['label']}: failures"]
            for msg, n in sorted(r["child_failures"].items(), key=lambda kv: -kv[1]):
                lines.append(f"- child, {n}x: `{msg}`")
            for msg, n in sorted(r["home_broken_reasons"].items(), key=lambda kv: -kv[1]):
                lines.append(f"- home broken after the round, {n}x: `{msg}`")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--home", type=Path, default=None, help="memsql home (default: a fresh temporary directory)")
    ap.add_argument("--code", type=Path, default=None,
                    help="a directory holding another copy of the memsql package, run by the children")
    ap.add_argument("--label", default=None, help="name of this run in the results (default: after / --code)")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--kill-share", type=float, default=0.3)
    ap.add_argument("--kill-window", type=float, default=1.5, help="seconds after spawn a kill may land in")
    ap.add_argument("--stop-share", type=float, default=0.25, help="share of rounds that begin with the server stopped")
    ap.add_argument("--corrupt-every", type=int, default=10, help="0 = never leave the handle list damaged")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds before a child counts as hung")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "home_stress",
                    help="results: OUT.json (runs by label, merged) and OUT.md")
    args = ap.parse_args()

    from memsql import server

    home = args.home or Path(tempfile.mkdtemp(prefix="memsql-stress-")) / "home"
    setup(home)
    try:
        result = stress(home, args.procs, args.rounds, args.code, args.seed, args.kill_share, args.kill_window,
                        args.stop_share, args.corrupt_every, args.timeout)
    finally:
        server.embedded_stop(home)
    result["label"] = args.label or ("before (" + str(args.code) + ")" if args.code else "after")
    path = args.out.with_suffix(".json")
    runs = json.loads(path.read_text()) if path.exists() else {}
    runs[result["label"]] = result
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(runs, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(list(runs.values())))
    print(json.dumps(result, indent=1))
    failed = result["outcomes"].get("failed", 0) + result["hangs"] + result["rounds_home_broken"]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
