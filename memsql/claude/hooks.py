"""``memsql hook <event>``: Claude Code's hooks. The JSON payload comes on stdin (session_id, transcript_path, cwd,
hook_event_name, source, prompt).

- SessionStart (startup, resume, clear, compact): prints ``{"hookSpecificOutput": {"hookEventName": "SessionStart",
  "additionalContext": <memory_context>}}``, at most [claude] budget characters (never over 10,000); the previous
  part of the transcript, when there is one (resume, compact), is captured too.
- Stop, PreCompact, SessionEnd: start a detached capture of the transcript (memsql.claude.capture) and return at once.
- UserPromptSubmit, when [claude] prompt_recall: the memories most relevant to the prompt, within prompt_budget.
- PostToolUse, when [claude] capture_tool_events: a capture, as for Stop.

Hooks never hurt a session: whatever fails (no server, no database, a bad payload), the hook logs why in
<memsql home>/claude/hooks.log, prints nothing and exits 0. Start-up stays light: psycopg is imported only by the
events that read the database, never the model.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

log = logging.getLogger("memsql.claude")

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd")
CAPTURE_EVENTS = ("Stop", "PreCompact", "SessionEnd")
MAX_CONTEXT = 10_000
"""Characters Claude Code takes from one hook's output."""
CONNECT_TIMEOUT = 3
"""Seconds a hook waits for the server before giving up."""


def _setup_log() -> Path:
    from memsql.claude.capture import state_dir

    path = state_dir() / "hooks.log"
    if not any(getattr(h, "_memsql_hook", False) for h in log.handlers):
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        handler._memsql_hook = True
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return path


def namespace_for(cwd: str | None, configured: str = "") -> str:
    """The hooks' namespace: [claude] namespace when set, else the git root of cwd, else cwd (absolute)."""
    if configured:
        return configured
    here = Path(cwd or os.getcwd()).expanduser()
    try:
        here = here.resolve()
    except OSError:
        pass
    for directory in (here, *here.parents):
        if (directory / ".git").exists():
            return str(directory)[:200]
    return str(here)[:200]


def _config(cwd: str | None):
    """The configuration as seen from the session's directory (its memsql.toml applies)."""
    from memsql.config import load

    if cwd and Path(cwd).is_dir():
        before = os.getcwd()
        try:
            os.chdir(cwd)
            return load()
        finally:
            os.chdir(before)
    return load()


def spawn_capture(payload: dict, namespace: str, event: str) -> int | None:
    """Start ``python -m memsql.claude.capture`` detached (own session, output to capture.log); its pid, or None
    when there is no transcript."""
    from memsql.claude.capture import state_dir

    transcript = payload.get("transcript_path")
    if not transcript or not Path(transcript).expanduser().is_file():
        log.info("%s: no transcript at %r, nothing to capture", event, transcript)
        return None
    # -P: a folder named memsql in the capture's working directory must not shadow the package
    args = [sys.executable, "-P", "-m", "memsql.claude.capture", "--transcript", str(transcript), "--namespace",
            namespace, "--event", event]
    if payload.get("session_id"):
        args += ["--session", str(payload["session_id"])]
    # the session's directory: its memsql.toml (the database, the settings) applies to the capture as to the hook
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and Path(payload["cwd"]).is_dir() else None
    with open(state_dir() / "capture.log", "ab") as out:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
                                close_fds=True, cwd=cwd or str(Path(transcript).expanduser().parent))
    log.info("%s: capture of %s started (pid %d)", event, transcript, proc.pid)
    return proc.pid


def _context(config, payload: dict, namespace: str, **args) -> str:
    """memory_context through one short-lived connection (never starts a server)."""
    import psycopg

    from memsql import calls, db

    dsn = db.resolve_dsn(config.get("database.dsn") or None, start=False,
                         home=Path(config.get("database.home")) if config.get("database.home") else None)
    call = calls.VERBS["context"].call({**config.search_options(given_only=True, verb="context"), "namespace": namespace,
                                        **args})
    with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT, autocommit=True,
                         options="-c statement_timeout=5000") as conn:
        db.check_schema(conn)   # a schema or functions of another memsql version: logged, nothing injected
        return conn.execute(call.sql, call.params).fetchone()[0] or ""


def session_start(payload: dict, config, namespace: str) -> dict | None:
    budget = min(int(config.get("claude.budget")), MAX_CONTEXT)
    if payload.get("source") in ("resume", "compact", "clear") or payload.get("transcript_path"):
        spawn_capture(payload, namespace, "SessionStart")
    query = Path(namespace).name if namespace.startswith("/") else namespace
    text = _context(config, payload, namespace, query=query, budget=budget, session_id=payload.get("session_id"))
    from memsql.claude.capture import record

    record("last_injection", {"event": "SessionStart", "namespace": namespace, "chars": len(text),
                              "session_id": payload.get("session_id"), "source": payload.get("source"),
                              "context": text})
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text[:MAX_CONTEXT]}}


def prompt_submit(payload: dict, config, namespace: str) -> dict | None:
    prompt = (payload.get("prompt") or "").strip()
    if not config.get("claude.prompt_recall") or not prompt:
        return None
    budget = min(int(config.get("claude.prompt_budget")), MAX_CONTEXT)
    text = _context(config, payload, namespace, query=prompt[:2000], budget=budget, knowledge_types=[],
                    last_session=False)
    from memsql.claude.capture import record

    record("last_injection", {"event": "UserPromptSubmit", "namespace": namespace, "chars": len(text),
                              "session_id": payload.get("session_id"), "context": text})
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text[:budget]}}


def run(event: str, stdin_text: str) -> tuple[int, str]:
    """Handle one hook event; returns (exit code, stdout text). Never raises."""
    t0 = time.perf_counter()
    try:
        _setup_log()
    except OSError:
        pass
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("the payload is not a JSON object")
        event = payload.get("hook_event_name") or event
        if event not in EVENTS:
            log.warning("unknown hook event %r: nothing done", event)
            return 0, ""
        # the project: Claude Code's CLAUDE_PROJECT_DIR (where the session started), else the payload's cwd (where
        # the agent is now: it moves with a `cd` into another repository; a capture keeps a transcript's project)
        project = os.environ.get("CLAUDE_PROJECT_DIR")
        where = project if project and Path(project).is_dir() else payload.get("cwd")
        config = _config(where)
        namespace = namespace_for(where, config.get("claude.namespace"))
        out = None
        if event == "SessionStart":
            out = session_start(payload, config, namespace)
        elif event == "UserPromptSubmit":
            out = prompt_submit(payload, config, namespace)
        elif event in CAPTURE_EVENTS or (event == "PostToolUse" and config.get("claude.capture_tool_events")):
            spawn_capture(payload, namespace, event)
        log.info("%s (%s) namespace %s: %s in %.0f ms", event, payload.get("source") or "-", namespace,
                 f"{len(out['hookSpecificOutput']['additionalContext'])} characters injected" if out else "done",
                 (time.perf_counter() - t0) * 1000)
        return 0, json.dumps(out) if out else ""
    except Exception as exc:  # a hook never hurts the session: log why, print nothing, exit 0
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        log.warning("%s: skipped (%s: %s) after %.0f ms", event, type(exc).__name__, first,
                    (time.perf_counter() - t0) * 1000)
        return 0, ""


def main(event: str) -> int:
    code, text = run(event, sys.stdin.read() if not sys.stdin.isatty() else "")
    if text:
        sys.stdout.write(text + "\n")
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1] if len(sys.argv) > 1 else ""))
