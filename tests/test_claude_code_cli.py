"""The plugin and `memsql claude install` checked by the real Claude Code client (npm package
@anthropic-ai/claude-code; no model access needed): its validator, its plugin inventory, and its MCP health check
seeing memsql's server connected. Skips without Claude Code: set CLAUDE_BIN or put `claude` on PATH (.ci/run
installs it when npm is there)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import platformdirs
import pytest

REPO = Path(__file__).resolve().parents[1]
CLAUDE = os.environ.get("CLAUDE_BIN") or shutil.which("claude")
MEMSQL = Path(sys.executable).parent / "memsql"

pytestmark = pytest.mark.skipif(not CLAUDE or not os.access(CLAUDE, os.X_OK),
                                reason="Claude Code not installed (npm install @anthropic-ai/claude-code, CLAUDE_BIN)")


@pytest.fixture
def home(tmp_path, dsn):
    """A fresh home for Claude Code; memsql's model cache stays the real one (a new HOME would export it again)."""
    h = tmp_path / "home"
    (h / "proj" / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMSQL_", "CLAUDE_"))}
    env.update({"HOME": str(h), "XDG_CONFIG_HOME": str(h / ".config"), "MEMSQL_DSN": dsn,
                "MEMSQL_HOME": str(tmp_path / "memsql-home"), "MCP_TIMEOUT": "60000",
                "XDG_CACHE_HOME": platformdirs.user_cache_dir(), "DISABLE_AUTOUPDATER": "1"})
    return h, env


def claude(env: dict, *args: str, cwd: Path = REPO, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([CLAUDE, *args], capture_output=True, text=True, env=env, cwd=str(cwd), timeout=timeout)


def test_validator_passes_on_the_plugin_and_the_marketplace(home):
    _, env = home
    for path, kind in (("plugin", "plugin manifest"), (".", "marketplace manifest")):
        r = claude(env, "plugin", "validate", "--strict", path)
        assert r.returncode == 0 and f"Validating {kind}" in r.stdout and "Validation passed" in r.stdout, \
            r.stdout + r.stderr


def test_plugin_installs_from_the_marketplace_with_its_components(home):
    _, env = home
    r = claude(env, "plugin", "marketplace", "add", str(REPO))
    assert r.returncode == 0, r.stdout + r.stderr
    r = claude(env, "plugin", "install", "memsql@memsql")
    assert r.returncode == 0 and "Successfully installed plugin: memsql@memsql" in r.stdout, r.stdout + r.stderr
    r = claude(env, "plugin", "details", "memsql@memsql")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [" ".join(line.split()) for line in r.stdout.splitlines()]
    assert "Skills (1) memsql" in lines
    assert any(line.startswith("Hooks (4) SessionStart, Stop, PreCompact, SessionEnd") for line in lines)
    assert any(line.startswith("MCP servers (1) memsql") for line in lines)


@pytest.mark.parametrize("scope, shown", [("--user", "User config"), ("--project", "Local config")])
def test_claude_mcp_sees_the_installed_server_connected(home, scope, shown):
    h, env = home
    project = h / "proj"
    r = subprocess.run([str(MEMSQL), "claude", "install", scope, "--no-json"], capture_output=True, text=True,
                       env=env, cwd=str(project), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = claude(env, "mcp", "get", "memsql", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Scope: {shown}" in r.stdout and "Status: ✔ Connected" in r.stdout, r.stdout
    assert f"Command: {MEMSQL.absolute()}" in r.stdout
    r = claude(env, "mcp", "list", cwd=project)
    assert f"memsql: {MEMSQL.absolute()} mcp - ✔ Connected" in r.stdout, r.stdout + r.stderr
    subprocess.run([str(MEMSQL), "claude", "uninstall", scope], env=env, cwd=str(project), timeout=60, check=True,
                   capture_output=True)
    r = claude(env, "mcp", "get", "memsql", cwd=project)
    assert r.returncode != 0 and "memsql" in (r.stdout + r.stderr)
