"""Claude Code hooks fed the JSON payloads Claude Code sends: SessionStart injects memory_context, Stop / PreCompact /
SessionEnd capture the transcript incrementally (idempotent, detached, nothing lost when a capture is killed), and a
hook never hurts the session when the server is down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fake_secrets import fake_secrets, secret_values
from memsql.claude.capture import capture
from memsql.claude.hooks import namespace_for

REPO = Path(__file__).resolve().parents[1]


def hook(event: str, payload: dict, env: dict, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memsql.cli", "hook", event], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=str(REPO))


@pytest.fixture
def hook_env(dsn, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
    env.update({"MEMSQL_DSN": dsn, "MEMSQL_HOME": str(tmp_path / "home")})
    return env


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def turn_lines(session: str, n: int, start: int = 0, secrets: dict | None = None) -> list[str]:
    """n transcript lines as Claude Code writes them: user prompts, assistant replies with a tool call, tool results.
    Every user and assistant line carries a unique word turn<session>x<i> (to count them once stored)."""
    out = []
    for i in range(start, start + n):
        tag = f"turn{session}x{i}"
        kind = i % 3
        if kind == 0:
            content = f"{tag}: please look at the retry logic in worker number {i}"
            if secrets and i // 3 < len(secrets):
                content += " " + list(secrets.values())[i // 3]
            rec = {"type": "user", "message": {"role": "user", "content": content}}
        elif kind == 1:
            rec = {"type": "assistant", "message": {"id": f"msg{session}{i}", "role": "assistant", "content": [
                {"type": "text", "text": f"{tag}: the retry loop backs off exponentially"},
                {"type": "tool_use", "id": f"tu{i}", "name": "Edit",
                 "input": {"file_path": f"/src/worker_{i}.py", "old_string": "a", "new_string": "retry(backoff=2)"}}]}}
        else:
            rec = {"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"tu{i - 1}", "content": "ok"}]}}
        rec.update({"uuid": f"{session}-{i}", "sessionId": session, "timestamp": f"2026-11-20T10:{i // 60:02d}:"
                    f"{i % 60:02d}Z", "cwd": "/proj"})
        out.append(json.dumps(rec))
    return out


def tags_stored(conn, session: str) -> dict[str, int]:
    rows = conn.execute("SELECT m[1], count(*) FROM memsql.memories, regexp_matches(content, %s, 'g') AS m "
                        "WHERE valid_to IS NULL GROUP BY 1", (rf"(turn{session}x\d+)",)).fetchall()
    return dict(rows)


def expected_tags(session: str, n: int) -> set[str]:
    return {f"turn{session}x{i}" for i in range(n) if i % 3 != 2}


def test_namespace_is_the_git_root(project, tmp_path):
    assert namespace_for(str(project / "src")) == str(project)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert namespace_for(str(plain)) == str(plain)
    assert namespace_for(str(plain), "team") == "team"


def test_session_start_injects_the_context(memory, project, hook_env):
    ns = str(project)
    pid = memory.add("Every migration is a new file; released ones are frozen.", namespace=ns,
                     knowledge_type="principle")
    memory.add("proj uses PostgreSQL 18 with pgvector", namespace=ns)
    payload = {"session_id": "s-new", "transcript_path": str(project / "none.jsonl"), "cwd": str(project / "src"),
               "hook_event_name": "SessionStart", "source": "startup"}
    done = hook("SessionStart", payload, hook_env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    assert f"[#{pid}]" in out["additionalContext"] and len(out["additionalContext"]) <= 8000
    last = json.loads((Path(hook_env["MEMSQL_HOME"]) / "claude" / "last_injection.json").read_text())
    assert last["chars"] == len(out["additionalContext"]) and last["namespace"] == ns

    # an empty namespace injects nothing; prompt recall is off by default
    other = dict(payload, cwd=str(project.parent))
    assert hook("SessionStart", other, hook_env).stdout == ""
    # Claude Code's CLAUDE_PROJECT_DIR names the project wherever the agent's cwd is now
    moved = json.loads(hook("SessionStart", other, dict(hook_env, CLAUDE_PROJECT_DIR=str(project))).stdout)
    assert f"[#{pid}]" in moved["hookSpecificOutput"]["additionalContext"]
    prompt = dict(payload, hook_event_name="UserPromptSubmit", prompt="which PostgreSQL version")
    assert hook("UserPromptSubmit", prompt, hook_env).stdout == ""
    env = dict(hook_env, MEMSQL_CLAUDE_PROMPT_RECALL="true")
    recall = json.loads(hook("UserPromptSubmit", prompt, env).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "PostgreSQL 18" in recall and len(recall) <= 1500 and "Principles" not in recall


@pytest.mark.parametrize("dsn_value", ["postgresql://nobody@127.0.0.1:1/none", "postgresql://u@/none?host=/nonexistent"])
def test_hooks_never_hurt(tmp_path, dsn_value, project):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
    env.update({"MEMSQL_DSN": dsn_value, "MEMSQL_HOME": str(tmp_path / "home")})
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(turn_lines("d", 3)) + "\n")
    for event in ("SessionStart", "Stop", "UserPromptSubmit", "SessionEnd"):
        t0 = time.perf_counter()
        done = hook(event, {"session_id": "s", "transcript_path": str(transcript), "cwd": str(project),
                            "hook_event_name": event, "prompt": "x"}, env)
        assert (done.returncode, done.stdout) == (0, ""), done.stderr
        assert time.perf_counter() - t0 < 20
    assert hook("Stop", {"not": "a hook"}, env).returncode == 0
    bad = subprocess.run([sys.executable, "-m", "memsql.cli", "hook", "SessionStart"], input="{broken",
                         capture_output=True, text=True, env=env, timeout=60)
    assert (bad.returncode, bad.stdout) == (0, "")
    log = (tmp_path / "home" / "claude" / "hooks.log").read_text()
    assert "SessionStart: skipped" in log and "JSONDecodeError" in log


def test_a_capture_never_starts_a_stopped_server(tmp_path):
    """With the embedded server stopped, the detached capture fails (logged), and the server stays stopped."""
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
    env["MEMSQL_HOME"] = str(home)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(turn_lines("d", 3)) + "\n")
    done = subprocess.run([sys.executable, "-m", "memsql.claude.capture", "--transcript", str(transcript),
                           "--namespace", "p", "--event", "Stop"], capture_output=True, text=True, env=env,
                          timeout=120, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    assert "DatabaseUnavailable" in done.stderr and "Traceback" not in done.stderr
    last = json.loads((home / "claude" / "last_capture.json").read_text())
    assert last["ok"] is False and "not running" in last["error"]
    assert not list(home.rglob("postmaster.pid"))   # nothing was started


def test_capture_is_incremental_and_idempotent(memory, conn, tmp_path):
    transcript = tmp_path / "sess.jsonl"
    lines = turn_lines("a", 60, secrets=fake_secrets(seed=3))
    ns = "cap"
    with transcript.open("w") as f:
        f.write("\n".join(lines[:20]) + "\n" + lines[20][:30])   # a line still being written
    first = capture(transcript, ns, memory=memory)
    assert first["from"] == 0 and first["to"] == len(("\n".join(lines[:20]) + "\n").encode())
    assert capture(transcript, ns, memory=memory)["documents"] == 0    # fired twice: nothing new
    with transcript.open("w") as f:
        f.write("\n".join(lines) + "\n")
    second = capture(transcript, ns, memory=memory)
    assert second["from"] == first["to"] and second["to"] == transcript.stat().st_size
    stored = tags_stored(conn, "a")
    assert set(stored) == expected_tags("a", 60) and set(stored.values()) == {1}
    assert "/src/worker_1.py" in conn.execute("SELECT string_agg(content, ' ') FROM memsql.memories").fetchone()[0]
    everything = conn.execute("SELECT string_agg(content, ' ') FROM memsql.memories").fetchone()[0]
    assert [v for v in secret_values(fake_secrets(seed=3)) if v in everything] == []
    assert sum(second["secrets"].values()) + sum(first["secrets"].values()) >= 19


def test_a_line_longer_than_a_read_and_a_window_of_tool_output_do_not_stop_the_capture(memory, conn, tmp_path,
                                                                                           monkeypatch):
    """One line longer than the window read at once (a pasted image as base64), or a window holding only tool
    output: the offset never moved and the session was not captured again, without a word."""
    from memsql.claude import capture as cap

    monkeypatch.setattr(cap, "MAX_SEGMENT_BYTES", 4096)
    transcript = tmp_path / "big.jsonl"
    lines = turn_lines("b", 6)
    image = {"type": "user", "uuid": "b-img", "sessionId": "b", "timestamp": "2026-11-20T10:00:07Z",
             "message": {"role": "user", "content": [
                 {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 20_000}},
                 {"type": "text", "text": "turnbximage: what does this chart show"}]}}
    tool = [json.dumps({"type": "user", "uuid": f"b-tool{i}", "sessionId": "b", "timestamp": "2026-11-20T10:00:08Z",
                        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1",
                                                                 "content": "x" * 900}]}}) for i in range(12)]
    later = turn_lines("b", 3, start=6)
    transcript.write_text("\n".join(lines[:3] + [json.dumps(image)] + tool + later) + "\n")
    out = capture(transcript, "big", memory=memory)
    assert out["to"] == transcript.stat().st_size, out
    stored = tags_stored(conn, "b")
    assert {"turnbx0", "turnbx1", "turnbx6", "turnbx7"} <= set(stored) and set(stored.values()) == {1}, stored
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE content LIKE '%%turnbximage%%'").fetchone()[0] == 1

    monkeypatch.setattr(cap, "MAX_LINE_BYTES", 8192)   # past the widest read: an error, said (doctor shows it)
    with transcript.open("a") as f:
        f.write(json.dumps(image) + "\n" + "\n".join(turn_lines("b", 3, start=9)) + "\n")
    with pytest.raises(RuntimeError, match="longer than 8192 bytes"):
        capture(transcript, "big", memory=memory)


def test_a_session_stays_in_the_project_it_was_first_captured_into(memory, conn, tmp_path):
    transcript = tmp_path / "moving.jsonl"
    transcript.write_text("\n".join(turn_lines("m", 6)) + "\n")
    assert capture(transcript, "/repo/a", memory=memory)["documents"] >= 1
    with transcript.open("a") as f:
        f.write("\n".join(turn_lines("m", 3, start=6)) + "\n")
    out = capture(transcript, "/repo/b", memory=memory)   # a hook after `cd` into another repository
    assert out["namespace"] == "/repo/a" and out["documents"] >= 1
    assert conn.execute("SELECT count(*) FROM memsql.documents WHERE namespace = '/repo/b'").fetchone()[0] == 0
    assert set(tags_stored(conn, "m")) == expected_tags("m", 9)


def test_stop_hook_is_detached_and_a_killed_capture_loses_nothing(memory, conn, hook_env, project, tmp_path):
    transcript = tmp_path / "sess.jsonl"
    lines = turn_lines("k", 90)
    transcript.write_text("\n".join(lines[:45]) + "\n")
    payload = {"session_id": "k", "transcript_path": str(transcript), "cwd": str(project),
               "hook_event_name": "Stop"}
    t0 = time.perf_counter()
    done = hook("Stop", payload, hook_env)
    assert done.returncode == 0 and done.stdout == ""
    started = time.perf_counter() - t0
    # a capture killed mid-way: started by hand, SIGKILLed before it can finish
    with transcript.open("a") as f:
        f.write("\n".join(lines[45:]) + "\n")
    env = dict(hook_env)
    victim = subprocess.Popen([sys.executable, "-m", "memsql.claude.capture", "--transcript", str(transcript),
                               "--namespace", str(project)], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    # the next hook completes it
    assert hook("SessionEnd", dict(payload, hook_event_name="SessionEnd"), hook_env).returncode == 0
    deadline = time.time() + 120
    while time.time() < deadline and memory.capture_progress(str(project), str(transcript)) < transcript.stat().st_size:
        time.sleep(0.5)
    assert memory.capture_progress(str(project), str(transcript)) == transcript.stat().st_size
    stored = tags_stored(conn, "k")
    assert set(stored) == expected_tags("k", 90) and set(stored.values()) == {1}
    assert started < 10  # the hook returned without waiting for the capture


def test_transcript_growing_while_hooks_fire(memory, conn, tmp_path):
    transcript = tmp_path / "grow.jsonl"
    transcript.write_text("")
    lines = turn_lines("g", 120)
    stop = threading.Event()

    captured = threading.Event()

    def writer():
        with transcript.open("a") as f:
            for i, line in enumerate(lines):
                if i == 40:
                    captured.wait(120)   # a capture has run while the file was growing
                for part in (line[: len(line) // 2], line[len(line) // 2:] + "\n"):   # lines land in two writes
                    f.write(part)
                    f.flush()
                    time.sleep(0.02)
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    runs = 0
    while not stop.is_set():
        capture(transcript, "grow", memory=memory)
        runs += 1
        captured.set()
    thread.join()
    capture(transcript, "grow", memory=memory)
    stored = tags_stored(conn, "g")
    assert runs >= 2
    assert set(stored) == expected_tags("g", 120) and set(stored.values()) == {1}


def test_real_transcript(memory, conn, shared_data, tmp_path):
    source = shared_data / "chat_exports" / "claude_code" / "daaain_representative_messages.jsonl"
    if not source.is_file():
        pytest.skip("no Claude Code transcript in ../shared/data")
    lines = source.read_text().splitlines()
    transcript = tmp_path / "real.jsonl"
    transcript.write_text("")
    for step in (3, 7, len(lines)):
        transcript.write_text("\n".join(lines[:step]) + "\n")
        capture(transcript, "real", memory=memory)
    rows = conn.execute("SELECT content FROM memsql.memories WHERE valid_to IS NULL ORDER BY id").fetchall()
    text = "\n".join(r[0] for r in rows)
    assert "Python decorators" in text and "[tool_use: Edit /tmp/decorator_example.py]" in text
    assert len(rows) == len({r[0] for r in rows})
    whole = memory.ingest([source], namespace="whole")
    assert whole.chunks >= len(rows) - 2   # the segments hold what one ingest of the whole file holds


def test_claude_code_own_memory_is_searchable_but_never_injected(memory, project, hook_env, conn):
    from memsql.claude.sources import ingest_sources

    ns = str(project)
    (project / "CLAUDE.md").write_text("# billing\n\nThe billing service: always use Decimal for money.\n", "utf-8")
    memory.add("Billing invoices are sent on the first working day of the month.", namespace=ns)
    assert ingest_sources(memory, project)["summary"].inserted == 1
    assert any("Decimal" in r.content for r in memory.search("billing money Decimal", namespace=ns, k=5))
    payload = {"session_id": "s1", "transcript_path": str(project / "none.jsonl"), "cwd": str(project / "src"),
               "hook_event_name": "UserPromptSubmit", "prompt": "how does billing handle money"}
    env = dict(hook_env, MEMSQL_CLAUDE_PROMPT_RECALL="true")
    recall = json.loads(hook("UserPromptSubmit", payload, env).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "first working day" in recall and "Decimal" not in recall, recall
    start = hook("SessionStart", dict(payload, hook_event_name="SessionStart", source="startup"), hook_env)
    assert "Decimal" not in start.stdout


def test_a_project_memsql_toml_applies_in_its_subdirectories_to_hooks_and_the_mcp_namespace(project, hook_env):
    (project / "memsql.toml").write_text('[claude]\nnamespace = "teamx"\n', "utf-8")
    probe = ("from memsql.config import load; from memsql import mcp_server; import os; "
             "os.environ['MEMSQL_NAMESPACE'] = '@project'; print(load().get('claude.namespace'), "
             "mcp_server.memory().namespace)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=hook_env,
                         cwd=str(project / "src"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["teamx", "teamx"]   # the hooks' namespace and the MCP server's agree
    plain = project.parent / "outside"
    plain.mkdir()
    out = subprocess.run([sys.executable, "-c", "from memsql.config import config_path; print(config_path())"],
                         capture_output=True, text=True, env=dict(hook_env, HOME=str(plain)), cwd=str(plain),
                         timeout=60)
    assert out.stdout.strip() == "None"   # outside the repository the project's file does not apply
