"""memsql claude install / uninstall / doctor against a temporary home and project: the settings Claude Code reads
get memsql's hooks and MCP server with this installation's absolute path, nothing else changes, a second install
changes nothing, uninstall removes only what install wrote, and doctor says what a session would get."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memsql.claude import install as inst
from memsql.config import load

MEMSQL = Path(sys.executable).parent / "memsql"


@pytest.fixture
def claude_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("MEMSQL_HOME", str(tmp_path / "memsql-home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    return root


def cli(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(MEMSQL), *args], capture_output=True, text=True, cwd=str(cwd), timeout=120,
                          env={**os.environ, **(env or {})})


def test_user_install_writes_hooks_and_mcp_with_absolute_paths_and_keeps_the_rest(claude_home, project):
    settings = claude_home / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
                                         "PreToolUse": [{"matcher": "Bash", "hooks": [
                                             {"type": "command", "command": "check-bash"}]}]}}
    settings.write_text(json.dumps(theirs))
    (claude_home / ".claude.json").write_text(json.dumps({"userID": "u1", "mcpServers": {"other": {"command": "x"}},
                                                          "projects": {"/p": {"allowedTools": []}}}))
    (claude_home / ".claude.json").chmod(0o640)
    out = inst.install("user", project, load())
    assert out["memsql"] == str(MEMSQL.absolute()) and out["hooks"] == ["SessionStart", "Stop", "PreCompact",
                                                                         "SessionEnd"]
    data = json.loads(settings.read_text())
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert data["hooks"]["Stop"][0] == theirs["hooks"]["Stop"][0]       # theirs first, ours added
    start = data["hooks"]["SessionStart"][0]
    assert start["matcher"] == "startup|resume|clear|compact"
    cmd = start["hooks"][0]["command"]
    assert cmd == f"MEMSQL_HOME={os.environ['MEMSQL_HOME']} {MEMSQL.absolute()} hook SessionStart 2>/dev/null || true"
    cfg = json.loads((claude_home / ".claude.json").read_text())
    assert cfg["userID"] == "u1" and cfg["mcpServers"]["other"] == {"command": "x"} and "/p" in cfg["projects"]
    assert cfg["mcpServers"]["memsql"] == {"type": "stdio", "command": str(MEMSQL.absolute()), "args": ["mcp"],
                                           "env": {"MEMSQL_NAMESPACE": "@project",
                                                   "MEMSQL_HOME": os.environ["MEMSQL_HOME"]}}
    assert (claude_home / ".config" / "memsql" / "claude-bin").read_text().strip() == str(MEMSQL.absolute())
    assert (claude_home / ".claude.json").stat().st_mode & 0o777 == 0o640      # replaced whole, mode kept
    before = {p: p.read_bytes() for p in (settings, claude_home / ".claude.json")}
    again = inst.install("user", project, load())
    assert again["changed"] == [] and {p: p.read_bytes() for p in before} == before


def test_optional_events_follow_the_configuration(claude_home, project, monkeypatch):
    (project / "memsql.toml").write_text("[claude]\nprompt_recall = true\ncapture_tool_events = true\n")
    monkeypatch.chdir(project)
    out = inst.install("user", project, load())
    assert out["hooks"] == ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd"]
    (project / "memsql.toml").write_text("[claude]\nprompt_recall = false\n")
    out = inst.install("user", project, load())      # turned off again: its hooks go
    data = json.loads((claude_home / ".claude" / "settings.json").read_text())
    assert out["hooks"] == ["SessionStart", "Stop", "PreCompact", "SessionEnd"] and sorted(data["hooks"]) == sorted(
        out["hooks"])


def test_project_install_uses_the_git_root_and_claude_codes_local_scope(claude_home, project):
    out = inst.install("project", project / "src" / "deep", load())
    local = project / ".claude" / "settings.local.json"
    assert out["settings"] == str(local) and out["project"] == str(project.resolve())
    assert set(json.loads(local.read_text())["hooks"]) == {"SessionStart", "Stop", "PreCompact", "SessionEnd"}
    cfg = json.loads((claude_home / ".claude.json").read_text())
    assert "mcpServers" not in cfg and cfg["projects"][str(project.resolve())]["mcpServers"]["memsql"]["args"] == [
        "mcp"]
    assert not (claude_home / ".claude" / "settings.json").exists()   # the user scope is untouched
    assert not (project / ".claude" / "settings.json").exists()      # nor the project's shared settings


def test_uninstall_removes_only_what_install_wrote(claude_home, project):
    inst.install("user", project, load())
    settings = claude_home / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    data["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "say done"}]})
    data["theme"] = "dark"
    settings.write_text(json.dumps(data))
    out = inst.uninstall("user", project)
    assert sorted(out["hooks_removed"]) == ["PreCompact", "SessionEnd", "SessionStart", "Stop"] and out["mcp_removed"]
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [{"hooks": [{"type": "command",
                                                                                "command": "say done"}]}]},
                                                "theme": "dark"}
    assert "memsql" not in json.loads((claude_home / ".claude.json").read_text())["mcpServers"]
    assert inst.uninstall("user", project)["changed"] == []
    # a memsql server someone else registered (not a memsql command) is left alone
    cfg = claude_home / ".claude.json"
    cfg.write_text(json.dumps({"mcpServers": {"memsql": {"command": "/opt/other/server"}}}))
    assert inst.uninstall("user", project)["mcp_removed"] is False and "memsql" in json.loads(cfg.read_text())[
        "mcpServers"]


def test_a_damaged_settings_file_is_refused_and_left_as_it_is(claude_home, project):
    settings = claude_home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": ')
    r = cli("claude", "install", "--no-json", cwd=project)
    assert r.returncode == 1 and "is not readable JSON" in r.stderr and "Traceback" not in r.stderr
    assert settings.read_text() == '{"hooks": ' and not (claude_home / ".claude.json").exists()
    for text in ("[1, 2]", '{"hooks": []}'):
        settings.write_text(text)
        with pytest.raises(inst.InstallError, match="not a JSON object"):
            inst.install("user", project, load())
        assert settings.read_text() == text
    r = cli("claude", "install", "--user", "--project", cwd=project)
    assert r.returncode == 2 and "not both" in r.stderr


def test_installed_hook_commands_run_and_never_fail(claude_home, project, tmp_path):
    inst.install("user", project, load())
    data = json.loads((claude_home / ".claude" / "settings.json").read_text())
    payload = json.dumps({"session_id": "s1", "transcript_path": str(tmp_path / "none.jsonl"), "cwd": str(project),
                          "hook_event_name": "SessionStart", "source": "startup"})
    env = {k: v for k, v in os.environ.items() if k != "MEMSQL_DSN"}
    env["MEMSQL_DSN"] = "postgresql://nobody@127.0.0.1:1/none"          # no server there
    for event in ("SessionStart", "Stop"):
        cmd = data["hooks"][event][0]["hooks"][0]["command"]
        r = subprocess.run(["sh", "-c", cmd], input=payload, capture_output=True, text=True, env=env, timeout=60)
        assert (r.returncode, r.stdout) == (0, "")
    gone = data["hooks"]["Stop"][0]["hooks"][0]["command"].replace(str(MEMSQL.absolute()), "/nonexistent/memsql")
    r = subprocess.run(["sh", "-c", gone], input=payload, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")          # memsql removed: the session goes on


def test_doctor_reports_server_hooks_mcp_capture_and_injection(claude_home, project, dsn, monkeypatch):
    r = cli("claude", "doctor", "--json", cwd=project, env={"MEMSQL_DSN": "postgresql://nobody@127.0.0.1:1/none"})
    checks = {c["name"]: c for c in json.loads(r.stdout)}
    assert r.returncode == 1 and not checks["hooks"]["ok"] and not checks["mcp"]["ok"]
    assert not checks["server"]["ok"] and "memsql db start" in checks["server"]["hint"]
    assert "Traceback" not in r.stderr

    inst.install("user", project, load())
    monkeypatch.setenv("MEMSQL_DSN", dsn)
    from memsql.client import Memory

    with Memory(dsn=dsn, namespace=str(project.resolve())) as mem:
        mem.init()
        mem.add("Releases are cut from main on Tuesdays.", knowledge_type="decision")
    from memsql.claude.hooks import run

    code, out = run("SessionStart", json.dumps({"session_id": "s9", "cwd": str(project), "source": "startup",
                                                "hook_event_name": "SessionStart"}))
    assert code == 0 and "Releases are cut from main" in out
    checks = {c.name: c for c in inst.doctor(project, load())}
    assert checks["hooks"].ok and checks["mcp"].ok and checks["server"].ok
    assert checks["namespace"].data["memories"] == 1 and checks["namespace"].detail.startswith(str(project.resolve()))
    assert checks["last injection"].ok and "SessionStart (startup)" in checks["last injection"].detail
    assert "Releases are cut from main" in checks["last injection"].data["preview"]
    # no capture has run yet: doctor says so, and a fresh install is not a failure
    assert checks["last capture"].ok and checks["last capture"].detail.startswith("none yet")
    inst.install("project", project, load())                  # both scopes: the hooks would fire twice
    dup = [c for c in inst.doctor(project, load()) if c.name == "hooks" and not c.ok]
    assert dup and "(user, project): they fire twice" in dup[0].detail


def test_claude_code_memory_files_are_ingested_read_only(claude_home, project, memory, conn):
    from memsql.claude.sources import auto_memory_dir, ingest_sources, sources

    root = project.resolve()
    (root / "CLAUDE.md").write_text("# Conventions\n\nRun the linter with `make lint` before every commit.\n")
    (root / ".claude").mkdir()
    (root / ".claude" / "CLAUDE.md").write_text("# Local\n\nThe staging host is staging-eu-3.\n")
    notes = auto_memory_dir(root)
    # Claude Code's folder name: the path with every non-alphanumeric character as '-'
    assert notes == claude_home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(root)) / "memory"
    notes.mkdir(parents=True)
    (notes / "MEMORY.md").write_text("- [flaky test](flaky.md)\n")
    (notes / "flaky.md").write_text("# Flaky test\n\ntest_retry_budget fails under load; rerun it alone.\n")
    (notes / "ignore.txt").write_text("not markdown")
    files = sources(root / "src")
    assert files == [root / "CLAUDE.md", root / ".claude" / "CLAUDE.md", notes / "MEMORY.md", notes / "flaky.md"]
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files}
    out = ingest_sources(memory, root / "src")
    assert out["namespace"] == str(root) and out["summary"].inserted == 4 and not out["summary"].failed
    hits = memory.search("which test is flaky under load", namespace=str(root), k=3)
    assert "test_retry_budget" in hits[0].content
    assert ingest_sources(memory, root)["summary"].unchanged == 4            # again: nothing new
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in files} == before   # never written
    assert sorted(p.name for p in notes.iterdir()) == ["MEMORY.md", "flaky.md", "ignore.txt"]
    # a note Claude Code deleted (it rewrites and renames them): listed, then archived on request
    (notes / "flaky.md").unlink()
    again = ingest_sources(memory, root)["summary"]
    assert again.missing == [(str(notes / "flaky.md"), 1, False)], again.missing
    assert "test_retry_budget" in memory.search("which test is flaky under load", namespace=str(root), k=1)[0].content
    assert ingest_sources(memory, root, prune=True)["summary"].missing == [(str(notes / "flaky.md"), 1, True)]
    assert not any("test_retry_budget" in r.content
                   for r in memory.search("which test is flaky under load", namespace=str(root), k=3))
    assert ingest_sources(memory, root)["summary"].missing == []
    # nothing there: said, not an error
    empty = project.parent / "empty"
    empty.mkdir()
    assert ingest_sources(memory, empty)["summary"] is None


def test_doctor_sees_the_plugin_and_hooks_registered_twice(claude_home, project):
    settings = claude_home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"enabledPlugins": {"memsql@memsql": True}}))
    checks = inst.doctor(project, load())
    names = [(c.name, c.ok) for c in checks]
    assert ("plugin", True) in names and ("hooks", False) not in names and ("mcp", False) not in names
    inst.install("user", project, load())          # the plugin and the settings hooks: each event twice
    dup = [c for c in inst.doctor(project, load()) if c.name == "hooks" and not c.ok]
    assert dup and "(user, plugin): they fire twice" in dup[0].detail


def test_doctor_from_a_subdirectory_says_claude_code_would_not_read_the_project_hooks(claude_home, project):
    inst.install("project", project, load())
    at_root = [c for c in inst.doctor(project, load()) if c.name == "hooks"]
    assert at_root and all(c.ok for c in at_root)
    below = [c for c in inst.doctor(project / "src", load()) if c.name == "hooks" and not c.ok]
    assert len(below) == 1 and f"started in {(project / 'src').resolve()}" in below[0].detail, below
    assert below[0].hint == f"start `claude` in {project.resolve()}, or `memsql claude install --user`"


def test_doctor_reads_the_program_not_a_memsql_home_ending_in_memsql(claude_home, project, tmp_path, monkeypatch):
    """install writes MEMSQL_HOME=... before the program when the home is not the default; a home named .../memsql
    was taken for the program, and doctor failed right after a good install ("no such memsql")."""
    monkeypatch.setenv("MEMSQL_HOME", str(tmp_path / "data" / "memsql"))
    inst.install("user", project, load())
    hooks = {c.name: c for c in inst.doctor(project, load())}["hooks"]
    assert hooks.ok, (hooks.detail, hooks.hint)
