"""Claude Code hooks measured as Claude Code runs them: `memsql hook <event>` processes fed the JSON payloads on stdin.

Parts (results in bench/results/claude_hooks.{json,md}):

- latency: wall time of one hook process, start to exit (what a session waits for). SessionStart cold = the first
  hook after the PostgreSQL server restarted (empty shared buffers, new backend); warm = the ones after it.
  Stop = the hook that starts the detached capture and returns.
- injected: characters of SessionStart's additionalContext over the simulated week (budget [claude] budget).
- lag: from a turn appended to the transcript and its Stop hook fired, to memory_search finding the turn's unique word
  (lexical arm: what an agent's next search sees; the capture embeds in the same transaction).
- week: --sessions sessions of --lines transcript lines, appended in steps of 5..40 lines (a step may end in a
  half-written line), hooks firing at each event (SessionStart startup, Stop after every step, PreCompact and
  SessionStart compact mid-way in some, SessionEnd at the end). In --kill-share of the sessions a capture process
  is SIGKILLed while it runs and the session ends without SessionEnd (the client died); those sessions are resumed
  later (SessionStart resume), as a user would. Then counted: turns stored twice (0 expected), turns never stored
  (0 expected), fake secrets found anywhere in the database (0 expected), database size.

Transcript lines are the real Claude Code lines of ../shared/data/chat_exports/claude_code (user prompts, assistant
replies with code, a summary line), cycled with new uuids, session ids, times and one unique word per turn; every
tenth prompt carries a fake credential (tests/fake_secrets.py).

    flock /work/notes/bench.lock .venv/bin/python bench/claude_hooks.py
    .venv/bin/python bench/claude_hooks.py --sessions 2 --lines 60 --out /tmp/x     # a quick run
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

DATA = ROOT.parent / "shared" / "data" / "chat_exports" / "claude_code"


def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def summary(ms: list[float]) -> dict:
    return {"n": len(ms), "p50_ms": round(pct(ms, 50), 1), "p99_ms": round(pct(ms, 99), 1),
            "max_ms": round(max(ms), 1)} if ms else {"n": 0}


# -- transcripts ------------------------------------------------------------------------------------------------

def real_lines() -> list[dict]:
    files = sorted(DATA.glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no Claude Code transcripts in {DATA}")
    out = []
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
    return out


def _mark(rec: dict, word: str, extra: str = "") -> bool:
    """Put word (and extra) at the start of the line's first text; False when the line has no text."""
    msg = rec.get("message")
    if not isinstance(msg, dict):
        return False
    content = msg.get("content")
    if isinstance(content, str):
        msg["content"] = f"{word} {extra} {content}".strip()
        return True
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") == "text":
                part["text"] = f"{word} {extra} {part['text']}".replace("  ", " ")
                return True
    return False


def session_lines(base: list[dict], session: str, n: int, secrets: list[str], cwd: str
                  ) -> tuple[list[str], set, int]:
    """n lines for one session, the unique words of the turns that must be stored, fake secrets planted."""
    lines, words, planted = [], set(), 0
    for i in range(n):
        rec = json.loads(json.dumps(base[i % len(base)]))
        word = f"wk{session}t{i}"
        if rec.get("type") in ("user", "assistant"):
            extra = secrets[(i // 10) % len(secrets)] if rec["type"] == "user" and i % 10 == 0 else ""
            if _mark(rec, word, extra):
                words.add(word)
                planted += bool(extra)
            rec.update({"uuid": f"{session}-{i}", "sessionId": session, "cwd": cwd,
                        "timestamp": f"2026-11-{16 + int(session[1:]) % 7:02d}T{9 + i // 60:02d}:{i % 60:02d}:00Z"})
            if rec.get("parentUuid"):
                rec["parentUuid"] = f"{session}-{i - 1}"
            if isinstance(rec.get("message"), dict) and rec["message"].get("id"):
                rec["message"]["id"] = f"msg-{session}-{i}"
        elif rec.get("type") == "summary":
            rec["leafUuid"] = f"{session}-{i - 1}"
        lines.append(json.dumps(rec))
    return lines, words, planted


# -- hooks ------------------------------------------------------------------------------------------------------

def hook(event: str, payload: dict, env: dict) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "memsql"), "hook", event], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=120)
    ms = (time.perf_counter() - t0) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"hook {event} exited {done.returncode}: {done.stderr[-300:]}")
    return ms, done.stdout


def captures_running(transcript: Path) -> list[int]:
    import psutil

    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = p.info.get("cmdline") or []
        if "memsql.claude.capture" in cmd and str(transcript) in cmd:
            out.append(p.info["pid"])
    return out


def wait_captured(memory, namespace: str, transcripts: list[Path], timeout: float = 900) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(memory.capture_progress(namespace, str(t)) >= t.stat().st_size for t in transcripts) and not any(
                captures_running(t) for t in transcripts):
            return True
        time.sleep(0.5)
    return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--kill-share", type=float, default=0.25)
    ap.add_argument("--warm", type=int, default=30, help="warm SessionStart / Stop hooks timed")
    ap.add_argument("--cold", type=int, default=5, help="cold SessionStart hooks (server restarted before each)")
    ap.add_argument("--lag", type=int, default=10, help="turns timed from append to searchable")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = ap.parse_args()
    rng = random.Random(args.seed)

    import psycopg

    from benchdb import fresh_database
    from fake_secrets import fake_secrets, secret_values
    from memsql import server
    from memsql.client import Memory

    home = Path(tempfile.mkdtemp(prefix="memsql-bench-claude-"))
    os.environ["MEMSQL_HOME"] = str(home / "memsql")
    uri = server.embedded_start(home / "memsql")
    dsn = fresh_database(uri, "claude_hooks")
    project = home / "proj"
    (project / ".git").mkdir(parents=True)
    ns = str(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
    env.update({"MEMSQL_DSN": dsn, "MEMSQL_HOME": str(home / "memsql"), "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1"})
    os.environ["MEMSQL_DSN"] = dsn
    base = real_lines()
    secrets_by_kind = fake_secrets(seed=args.seed)
    secrets = list(secrets_by_kind.values())
    memory = Memory(dsn=dsn, namespace=ns)
    memory.add("Every schema change is a new migration file; released migrations are frozen.",
               knowledge_type="principle", namespace=ns)
    memory.add("Decided: hooks never call an LLM; capture and recall run in PostgreSQL.", knowledge_type="decision",
               namespace=ns)

    # -- the week ---------------------------------------------------------------------------------------------
    t_week = time.perf_counter()
    transcripts, expected, killed_sessions, injected = [], {}, [], []
    stop_ms, kills, planted = [], 0, 0
    kill_sessions = set(rng.sample(range(args.sessions), round(args.sessions * args.kill_share)))
    for s in range(args.sessions):
        sid = f"s{s}"
        transcript = project / f".claude-{sid}.jsonl"
        lines, words, n_planted = session_lines(base, sid, args.lines, secrets, ns)
        expected[sid] = words
        planted += n_planted
        transcripts.append(transcript)
        transcript.write_text("")
        payload = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(project)}
        ms, out = hook("SessionStart", {**payload, "hook_event_name": "SessionStart", "source": "startup"}, env)
        if out.strip():
            injected.append(len(json.loads(out)["hookSpecificOutput"]["additionalContext"]))
        i, pending, compacted = 0, "", False
        kill_at = rng.randrange(2, 6) if s in kill_sessions else None
        step = 0
        with transcript.open("a", encoding="utf-8") as f:
            while i < len(lines):
                n = rng.randint(5, 40)
                chunk = lines[i:i + n]
                i += len(chunk)
                text = pending + "".join(line + "\n" for line in chunk)
                pending = ""
                if i < len(lines) and rng.random() < 0.3:       # the next line half-written when the hook fires
                    nxt = lines[i] + "\n"
                    cut = rng.randint(1, len(nxt) - 2)
                    text, pending = text + nxt[:cut], nxt[cut:]
                    i += 1
                f.write(text)
                f.flush()
                step += 1
                ms, _ = hook("Stop", {**payload, "hook_event_name": "Stop"}, env)
                stop_ms.append(ms)
                if kill_at is not None and step == kill_at:
                    deadline = time.time() + 20
                    while time.time() < deadline and not captures_running(transcript):
                        time.sleep(0.05)
                    time.sleep(rng.uniform(0.5, 2.5))           # mid-way: loading, parsing or writing
                    for pid in captures_running(transcript):
                        os.kill(pid, signal.SIGKILL)
                        kills += 1
                    break                                        # the client died too: no SessionEnd
                if not compacted and s % 4 == 1 and i > len(lines) // 2:
                    compacted = True
                    hook("PreCompact", {**payload, "hook_event_name": "PreCompact", "trigger": "auto"}, env)
                    ms, out = hook("SessionStart", {**payload, "hook_event_name": "SessionStart",
                                                    "source": "compact"}, env)
                    if out.strip():
                        injected.append(len(json.loads(out)["hookSpecificOutput"]["additionalContext"]))
            if kill_at is not None and i < len(lines):
                killed_sessions.append((sid, transcript, lines[i:], pending))
            else:
                if pending:
                    f.write(pending)
                hook("SessionEnd", {**payload, "hook_event_name": "SessionEnd", "reason": "exit"}, env)
    # the killed sessions resumed later: the rest of their lines, then SessionStart resume, Stop, SessionEnd
    for sid, transcript, rest, pending in killed_sessions:
        payload = {"session_id": sid, "transcript_path": str(transcript), "cwd": str(project)}
        ms, out = hook("SessionStart", {**payload, "hook_event_name": "SessionStart", "source": "resume"}, env)
        if out.strip():
            injected.append(len(json.loads(out)["hookSpecificOutput"]["additionalContext"]))
        with transcript.open("a", encoding="utf-8") as f:
            f.write(pending + "".join(line + "\n" for line in rest))
        hook("Stop", {**payload, "hook_event_name": "Stop"}, env)
        hook("SessionEnd", {**payload, "hook_event_name": "SessionEnd", "reason": "exit"}, env)
    from memsql.claude.capture import CAPTURE_SECONDS

    complete = wait_captured(memory, ns, transcripts, timeout=CAPTURE_SECONDS + 120)
    # a capture that died (or was ended by its time limit) leaves the rest to the next hook of that session
    retried = [t for t in transcripts if memory.capture_progress(ns, str(t)) < t.stat().st_size]
    for t in retried:
        hook("Stop", {"session_id": t.stem.split("-")[-1], "transcript_path": str(t), "cwd": str(project),
                      "hook_event_name": "Stop"}, env)
    if retried:
        complete = wait_captured(memory, ns, transcripts, timeout=CAPTURE_SECONDS + 120)
    week_s = time.perf_counter() - t_week

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(r"SELECT m[1], count(*) FROM memsql.memories, regexp_matches(content, '(wks\d+t\d+)\M', 'g')"
                            r" AS m WHERE valid_to IS NULL GROUP BY 1").fetchall()
        stored = dict(rows)
        everything = "\n".join(r[0] or "" for r in conn.execute(
            "SELECT content FROM memsql.memories UNION ALL SELECT coalesce(title, '') || metadata::text "
            "FROM memsql.documents UNION ALL SELECT content FROM memsql.archive"))
        db_bytes = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        counts = conn.execute("SELECT (SELECT count(*) FROM memsql.documents WHERE namespace = %s), "
                              "(SELECT count(*) FROM memsql.memories WHERE namespace = %s)", (ns, ns)).fetchone()
    want = set().union(*expected.values())
    duplicates = sorted(w for w, c in stored.items() if c > 1)
    lost = sorted(want - set(stored))
    leaked = [v for v in secret_values(secrets_by_kind) if v in everything]

    # -- latency: warm SessionStart and Stop, then cold SessionStart ---------------------------------------------
    quiet = project / ".claude-latency.jsonl"
    quiet.write_text("".join(line + "\n" for line in session_lines(base, "q0", 3, [""], ns)[0]))
    payload = {"session_id": "lat", "transcript_path": str(quiet), "cwd": str(project)}
    hook("Stop", {**payload, "hook_event_name": "Stop"}, env)
    wait_captured(memory, ns, [quiet])
    warm = []
    for _ in range(args.warm):
        ms, out = hook("SessionStart", {**payload, "hook_event_name": "SessionStart", "source": "startup",
                                        "transcript_path": None}, env)
        warm.append(ms)
    stop_quiet = []
    for _ in range(args.warm):
        ms, _ = hook("Stop", {**payload, "hook_event_name": "Stop"}, env)
        stop_quiet.append(ms)
        wait_captured(memory, ns, [quiet], timeout=120)
    memory.close()
    cold = []
    for _ in range(args.cold):
        server.embedded_stop(home / "memsql")
        server.embedded_start(home / "memsql")
        ms, _ = hook("SessionStart", {**payload, "hook_event_name": "SessionStart", "source": "startup",
                                      "transcript_path": None}, env)
        cold.append(ms)

    # -- lag: a turn appended + Stop, until memory_search finds it --------------------------------------------
    memory = Memory(dsn=dsn, namespace=ns)
    lag_file = project / ".claude-lag.jsonl"
    lag_file.write_text("")
    lags = []
    payload = {"session_id": "lag", "transcript_path": str(lag_file), "cwd": str(project)}
    for k in range(args.lag):
        word = f"lagturn{k}q"
        rec = {"type": "user", "uuid": f"lag-{k}", "sessionId": "lag", "timestamp": f"2026-11-30T10:00:{k:02d}Z",
               "cwd": ns, "message": {"role": "user", "content": f"{word}: is the retry budget per request?"}}
        t0 = time.perf_counter()
        with lag_file.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        hook("Stop", {**payload, "hook_event_name": "Stop"}, env)
        while time.perf_counter() - t0 < 120:
            if any(word in r.content for r in memory.search(word, k=3, query_embeddings=[], touch=False)):
                break
            time.sleep(0.05)
        lags.append((time.perf_counter() - t0) * 1000)
        wait_captured(memory, ns, [lag_file], timeout=120)
    memory.close()
    server.embedded_stop(home / "memsql")

    result = {
        "machine": {"cpus": os.cpu_count(), "load_1min_at_end": round(os.getloadavg()[0], 2)},
        "latency": {"session_start_warm": summary(warm), "session_start_cold": summary(cold),
                    "stop": summary(stop_quiet), "stop_during_week": summary(stop_ms)},
        "injected_chars": {"n": len(injected), "p50": pct(injected, 50), "max": max(injected) if injected else None,
                           "budget": 8000},
        "lag_turn_to_searchable": summary(lags),
        "week": {"sessions": args.sessions, "lines_per_session": args.lines, "killed_sessions": len(killed_sessions),
                 "captures_killed": kills,
                 "completed_by_a_later_hook": len(retried), "turns_expected": len(want), "turns_stored": len(set(stored) & want),
                 "duplicates": len(duplicates), "lost": len(lost), "secrets_planted": planted, "secret_kinds": len(secrets_by_kind),
                 "secrets_stored": len(leaked), "all_captured": complete, "documents": counts[0],
                 "memories": counts[1], "db_size_mb": round(db_bytes / 2**20, 1), "seconds": round(week_s, 1),
                 "examples": {"duplicates": duplicates[:5], "lost": lost[:5]}},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "claude_hooks.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "claude_hooks.md").write_text(markdown(result))
    print(json.dumps(result, indent=2))


def markdown(r: dict) -> str:
    lat, w = r["latency"], r["week"]

    def row(name, s):
        return f"| {name} | {s['n']} | {s.get('p50_ms')} | {s.get('p99_ms')} | {s.get('max_ms')} |"

    return "\n".join([
        "# Claude Code hooks (bench/claude_hooks.py)",
        "",
        f"Machine: {r['machine']['cpus']} cores shared with other jobs (load {r['machine']['load_1min_at_end']} at "
        "the end). Each figure is one `memsql hook <event>` process, start to exit, as Claude Code runs it.",
        "",
        "| hook | n | p50 ms | p99 ms | max ms |",
        "|---|---|---|---|---|",
        row("SessionStart, warm", lat["session_start_warm"]),
        row("SessionStart, cold (server just restarted)", lat["session_start_cold"]),
        row("Stop (starts the detached capture)", lat["stop"]),
        row("Stop, during the week (captures running)", lat["stop_during_week"]),
        row("lag: turn appended + Stop -> found by memory_search", r["lag_turn_to_searchable"]),
        "",
        f"Characters injected by SessionStart: p50 {r['injected_chars']['p50']}, max {r['injected_chars']['max']} "
        f"(budget {r['injected_chars']['budget']}, Claude Code's limit 10000), over {r['injected_chars']['n']} "
        "session starts.",
        "",
        f"## Simulated week: {w['sessions']} sessions x {w['lines_per_session']} lines",
        "",
        "Lines appended in steps of 5..40 (30% of the steps end in a half-written line), Stop after each step, "
        "PreCompact + SessionStart compact in every fourth session; "
        f"{w['killed_sessions']} sessions had {w['captures_killed']} capture process(es) SIGKILLed mid-way and "
        "ended without SessionEnd, then were resumed. Transcripts a capture had left unfinished when the week "
        f"ended (a capture process that hung or died), completed by one more Stop hook: "
        f"{w['completed_by_a_later_hook']}.",
        "",
        "| turns expected | stored | duplicates | lost | fake secrets planted | secrets stored | documents | "
        "memories | database size | wall time |",
        "|---|---|---|---|---|---|---|---|---|---|",
        f"| {w['turns_expected']} | {w['turns_stored']} | {w['duplicates']} | {w['lost']} | {w['secrets_planted']} "
        f"({w['secret_kinds']} kinds) | "
        f"{w['secrets_stored']} | {w['documents']} | {w['memories']} | {w['db_size_mb']} MB | {w['seconds']} s |",
        "",
    ])


if __name__ == "__main__":
    main()
