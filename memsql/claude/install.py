"""``memsql claude install | uninstall | doctor``: Claude Code's settings, written with this installation's paths.

What install writes (the route Claude Code documents for hooks and MCP servers, chosen over installing the plugin
because it needs no ``claude`` binary at install time, names this installation's memsql by absolute path, and can be
read back and checked by ``doctor``):

- hooks in Claude Code's settings: ``--user`` (default) ``<claude dir>/settings.json``; ``--project``
  ``<project>/.claude/settings.local.json`` (the personal, git-ignored file: absolute paths of one machine do not
  belong in the shared settings.json). SessionStart (startup|resume|clear|compact), Stop, PreCompact, SessionEnd;
  UserPromptSubmit when [claude] prompt_recall, PostToolUse when [claude] capture_tool_events. Each command is
  ``'<abs>/memsql' hook <Event> 2>/dev/null || true``: a missing memsql never fails a session.
- the MCP server ``memsql`` (``memsql mcp``, namespace @project = the hooks' namespace) in ``<claude config>``
  (``~/.claude.json``, or ``$CLAUDE_CONFIG_DIR/.claude.json``): top-level ``mcpServers`` for ``--user``
  (Claude Code's user scope), ``projects.<project>.mcpServers`` for ``--project`` (its local scope).
- ``<XDG config>/memsql/claude-bin``: the path the plugin's launcher (plugin/bin/memsql-launch) runs.

Other entries of those files are kept as they are; the files are replaced whole (never half-written). Running
install again gives the same files; uninstall removes only what install wrote. memsql never writes CLAUDE.md nor
Claude Code's memory folder.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER = "memsql"
HOOKS: dict[str, tuple[str | None, int, str | None]] = {
    "SessionStart": ("startup|resume|clear|compact", 15, None),
    "UserPromptSubmit": (None, 10, "claude.prompt_recall"),
    "PostToolUse": (None, 10, "claude.capture_tool_events"),
    "Stop": (None, 10, None),
    "PreCompact": (None, 10, None),
    "SessionEnd": (None, 10, None),
}
"""Event -> (matcher, timeout in seconds, the [claude] key that turns it on; None = always)."""

_OURS = re.compile(r"memsql'?\"? hook (\w+)")
"""A hook command install wrote: ``... memsql' hook <Event> ...`` (the plugin's ``memsql-hook`` is not one)."""


class InstallError(Exception):
    """A settings file install must not touch (unreadable, not a JSON object)."""


def claude_dir() -> Path:
    """Claude Code's directory: $CLAUDE_CONFIG_DIR, else ~/.claude."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def claude_config() -> Path:
    """Claude Code's own config file (user and local MCP servers): $CLAUDE_CONFIG_DIR/.claude.json, else
    ~/.claude.json."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() / ".claude.json" if env else Path.home() / ".claude.json"


def launcher_file() -> Path:
    """The file the plugin's launcher reads to find memsql."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memsql" / "claude-bin"


def memsql_bin() -> Path:
    """This installation's memsql command (absolute; next to the running Python, else on PATH)."""
    here = Path(sys.executable).parent / "memsql"
    if here.is_file() and os.access(here, os.X_OK):
        return here.absolute()
    found = shutil.which("memsql")
    if not found:
        raise InstallError("cannot find this installation's memsql command (not next to Python, not on PATH)")
    return Path(found).absolute()


def project_root(directory: str | Path | None = None) -> Path:
    """The project of a directory: its git root, else the directory (absolute)."""
    from memsql.claude.hooks import namespace_for

    return Path(namespace_for(str(directory or os.getcwd())))


@dataclass(frozen=True)
class Target:
    """Where one scope's hooks and MCP server are written."""

    scope: str                 # "user" or "project"
    settings: Path             # Claude Code settings file holding the hooks
    config: Path               # Claude Code's config file holding the MCP server
    keys: tuple[str, ...]      # path of the mcpServers object inside config
    project: Path | None = None


def target(scope: str, project: str | Path | None = None) -> Target:
    if scope == "user":
        return Target("user", claude_dir() / "settings.json", claude_config(), ("mcpServers",))
    if scope == "project":
        root = project_root(project)
        return Target("project", root / ".claude" / "settings.local.json", claude_config(),
                      ("projects", str(root), "mcpServers"), root)
    raise InstallError(f"scope is user or project, got {scope!r}")


# -- JSON files -------------------------------------------------------------------------------------------------

def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InstallError(f"{path} is not readable JSON ({exc}); fix or move it, nothing was changed") from exc
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds {type(data).__name__}, not a JSON object; nothing was changed")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    """Replace path whole (a temporary file renamed over it), keeping its mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600 if path.name == ".claude.json" else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _dig(data: dict[str, Any], keys: tuple[str, ...], create: bool) -> dict[str, Any] | None:
    for key in keys:
        nxt = data.get(key)
        if not isinstance(nxt, dict):
            if not create:
                return None
            nxt = data[key] = {}
        data = nxt
    return data


# -- what install writes ----------------------------------------------------------------------------------------

def hook_command(binary: Path, event: str) -> str:
    env = f"MEMSQL_HOME={shlex.quote(os.environ['MEMSQL_HOME'])} " if os.environ.get("MEMSQL_HOME") else ""
    return f"{env}{shlex.quote(str(binary))} hook {event} 2>/dev/null || true"


def wanted_events(config) -> list[str]:
    return [e for e, (_, _, key) in HOOKS.items() if key is None or config.get(key)]


def mcp_entry(binary: Path) -> dict[str, Any]:
    env = {"MEMSQL_NAMESPACE": "@project"}
    if os.environ.get("MEMSQL_HOME"):
        env["MEMSQL_HOME"] = os.environ["MEMSQL_HOME"]
    return {"type": "stdio", "command": str(binary), "args": ["mcp"], "env": env}


def _strip_hooks(settings: dict[str, Any]) -> list[str]:
    """Remove the hooks install wrote (any scope's binary); returns their events."""
    removed = []
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return removed
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not (isinstance(h, dict) and _OURS.search(str(h.get("command", ""))))]
            removed += [event] * (len(inner) - len(kept))
            if kept:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return removed


def install(scope: str = "user", project: str | Path | None = None, config=None) -> dict[str, Any]:
    """Write the hooks and the MCP server of one scope (idempotent). Returns what was written."""
    from memsql.config import load

    config = config or load()
    binary = memsql_bin()
    t = target(scope, project)
    settings = _read(t.settings)
    if not isinstance(settings.get("hooks", {}), dict):
        raise InstallError(f"{t.settings}: \"hooks\" is not a JSON object; fix it, nothing was changed")
    before = json.dumps(settings, sort_keys=True)
    _strip_hooks(settings)
    events = wanted_events(config)
    hooks = settings.setdefault("hooks", {})
    for event in events:
        matcher, timeout, _ = HOOKS[event]
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        group["hooks"] = [{"type": "command", "command": hook_command(binary, event), "timeout": timeout}]
        hooks.setdefault(event, []).append(group)
    changed = []
    if json.dumps(settings, sort_keys=True) != before:
        _write(t.settings, settings)
        changed.append(str(t.settings))
    cfg = _read(t.config)
    servers = _dig(cfg, t.keys, create=True)
    entry = mcp_entry(binary)
    if servers.get(SERVER) != entry:
        servers[SERVER] = entry
        _write(t.config, cfg)
        changed.append(str(t.config))
    launcher = launcher_file()
    if not launcher.exists() or launcher.read_text(encoding="utf-8").strip() != str(binary):
        launcher.parent.mkdir(parents=True, exist_ok=True)
        launcher.write_text(str(binary) + "\n", encoding="utf-8")
        changed.append(str(launcher))
    return {"scope": t.scope, "memsql": str(binary), "hooks": events, "settings": str(t.settings),
            "mcp": f"{t.config} ({'.'.join(t.keys)}.{SERVER})", "project": str(t.project) if t.project else None,
            "changed": changed}


def uninstall(scope: str = "user", project: str | Path | None = None) -> dict[str, Any]:
    """Remove what install wrote in one scope: memsql's hooks, the memsql MCP server if it runs a memsql."""
    t = target(scope, project)
    changed = []
    removed: list[str] = []
    if t.settings.exists():
        settings = _read(t.settings)
        removed = _strip_hooks(settings)
        if removed:
            _write(t.settings, settings)
            changed.append(str(t.settings))
    mcp_removed = False
    if t.config.exists():
        cfg = _read(t.config)
        servers = _dig(cfg, t.keys, create=False)
        entry = servers.get(SERVER) if servers else None
        if isinstance(entry, dict) and Path(str(entry.get("command", ""))).name == "memsql":
            del servers[SERVER]
            _write(t.config, cfg)
            changed.append(str(t.config))
            mcp_removed = True
    return {"scope": t.scope, "hooks_removed": removed, "mcp_removed": mcp_removed, "changed": changed}


# -- doctor -----------------------------------------------------------------------------------------------------

@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    hint: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


def _registered(t: Target) -> tuple[list[str], list[str]]:
    """(events whose hooks install wrote, the binaries they run) in one scope's settings."""
    events, bins = [], []
    try:
        settings = _read(t.settings)
    except InstallError:
        return [], []
    for event, groups in (settings.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else []:
            for h in (group.get("hooks") or []) if isinstance(group, dict) else []:
                cmd = str(h.get("command", "")) if isinstance(h, dict) else ""
                if _OURS.search(cmd):
                    events.append(event)
                    words = shlex.split(cmd.split(" 2>")[0])
                    # the program, not an assignment before it (MEMSQL_HOME=/x/memsql ends in /memsql too)
                    bins += [w for w in words if w.endswith("/memsql") and not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", w)]
    return events, bins


def _plugin_enabled(settings: Path) -> bool:
    try:
        enabled = _read(settings).get("enabledPlugins") or {}
    except InstallError:
        return False
    return isinstance(enabled, dict) and any(k.split("@")[0] == "memsql" and v for k, v in enabled.items())


def _age(at: str | None) -> str:
    if not at:
        return "?"
    try:
        secs = time.time() - time.mktime(time.strptime(at, "%Y-%m-%dT%H:%M:%SZ")) + time.timezone
    except ValueError:
        return at
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if secs >= size:
            return f"{at} ({secs / size:.0f} {unit} ago)"
    return f"{at} ({secs:.0f} s ago)"


def doctor(project: str | Path | None = None, config=None) -> list[Check]:
    """What a Claude Code session would get: memsql, hooks and MCP registration, server, worker, last capture and
    last injection. Never starts anything."""
    from memsql.claude.capture import state_dir
    from memsql.claude.hooks import namespace_for
    from memsql.config import load

    config = config or load()
    checks: list[Check] = []
    try:
        binary = memsql_bin()
        checks.append(Check("memsql", True, str(binary)))
    except InstallError as exc:
        binary = None
        checks.append(Check("memsql", False, str(exc)))

    scopes = [target("user"), target("project", project)]
    wanted = set(wanted_events(config))
    hooked = []
    for t in scopes:
        events, bins = _registered(t)
        if not events:
            continue
        hooked.append(t.scope)
        missing = sorted(wanted - set(events), key=list(HOOKS).index)
        gone = sorted({b for b in bins if not os.access(b, os.X_OK)})
        ok = not missing and not gone
        detail = f"{t.scope} ({t.settings}): {', '.join(events)}"
        hint = (f"run `memsql claude install --{t.scope}` again" + (f" (missing {', '.join(missing)})" if missing
                else "") + (f" (no such memsql: {', '.join(gone)})" if gone else "")) if not ok else None
        checks.append(Check("hooks", ok, detail, hint, {"scope": t.scope, "events": events}))
        here = Path(project or os.getcwd()).resolve()
        if t.scope == "project" and here != project_root(project):   # Claude Code reads .claude/ where it starts
            checks.append(Check("hooks", False, f"the project's hooks are in {t.settings}, but Claude Code started "
                                                f"in {here} reads {here / '.claude'} only",
                                f"start `claude` in {project_root(project)}, or `memsql claude install --user`"))
    plugin = [t.scope for t in scopes if _plugin_enabled(t.settings)]
    if plugin:
        checks.append(Check("plugin", True, f"memsql@memsql enabled in the {', '.join(plugin)} settings (its hooks "
                                            "and MCP server: plugin/)"))
    if not hooked and not plugin:
        checks.append(Check("hooks", False, "no memsql hooks in Claude Code's settings",
                            "run `memsql claude install` (or install the plugin: docs/claude-code.md)"))
    elif len(hooked) + bool(plugin) > 1:
        checks.append(Check("hooks", False, "memsql's hooks are registered more than once (" +
                            ", ".join(hooked + ["plugin"] * bool(plugin)) + "): they fire twice",
                            "keep one: `memsql claude uninstall --project` / `--user`, or "
                            "`claude plugin uninstall memsql@memsql`"))

    found_mcp = []
    for t in scopes:
        try:
            servers = _dig(_read(t.config), t.keys, create=False) or {}
        except InstallError as exc:
            checks.append(Check("mcp", False, str(exc)))
            continue
        entry = servers.get(SERVER)
        if isinstance(entry, dict):
            cmd = str(entry.get("command", ""))
            ok = os.access(cmd, os.X_OK)
            found_mcp.append(t.scope)
            checks.append(Check("mcp", ok, f"{t.scope} ({t.config}): {cmd} {' '.join(entry.get('args') or [])}",
                                None if ok else f"no such command; run `memsql claude install --{t.scope}`"))
    root = project_root(project)
    shared = root / ".mcp.json"
    if shared.exists():
        try:
            if SERVER in (_read(shared).get("mcpServers") or {}):
                found_mcp.append("project .mcp.json")
                checks.append(Check("mcp", True, f"shared ({shared}): a memsql server, approved per user in "
                                                 "Claude Code"))
        except InstallError as exc:
            checks.append(Check("mcp", False, str(exc)))
    if not found_mcp and not plugin:
        checks.append(Check("mcp", False, "no memsql MCP server registered", "run `memsql claude install`"))

    namespace = namespace_for(str(root), config.get("claude.namespace"))
    try:
        import psycopg

        from memsql import db
        from memsql.errors import SetupError

        dsn = db.resolve_dsn(config.get("database.dsn") or None, start=False,
                             home=Path(config.get("database.home")) if config.get("database.home") else None)
        with psycopg.connect(dsn, connect_timeout=3, autocommit=True) as conn:
            version = db.database_schema_version(conn)
            try:   # the refusal every client gives: schema or functions of another version
                db.check_schema(conn)
                problem = None
            except SetupError as exc:
                problem = exc
            memories = conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = %s AND valid_to IS NULL",
                                    (namespace,)).fetchone()[0]
            workers = conn.execute("SELECT workers_connected FROM memsql.worker_status").fetchone()[0]
        checks.append(Check("server", problem is None, f"{db.redact(dsn)}: schema version {version}"
                            + (f": {problem.message}" if problem else ""), problem.hint if problem else None,
                            data={"schema_version": version}))
        checks.append(Check("namespace", True, f"{namespace}: {memories} memories", data={"memories": memories}))
        checks.append(Check("worker", bool(workers), f"{workers} worker(s) connected",
                            None if workers else "`memsql worker start`: without it new memories are found by "
                                                 "words only until embedded"))
    except Exception as exc:  # down, not initialised, no permission: say so, never raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        checks.append(Check("server", False, f"database unavailable: {first}",
                            "`memsql db start` (then `memsql init`); hooks skip quietly meanwhile"))

    state = state_dir()
    for name, label in (("last_capture", "last capture"), ("last_injection", "last injection")):
        path = state / f"{name}.json"
        if not path.exists():
            checks.append(Check(label, True, "none yet" + ("" if name == "last_injection" else
                                " (start a session in Claude Code and end a turn; each capture is logged in "
                                f"{state / 'capture.log'})")))
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            checks.append(Check(label, False, f"{path}: {exc}"))
            continue
        if name == "last_capture":
            ok = bool(data.get("ok"))
            detail = (f"{_age(data.get('at'))} {data.get('event', '')}: " +
                      (", ".join(f"{k} {data[k]}" for k in ("namespace", "documents", "chunks", "secrets", "from", "to")
                                  if k in data) if ok
                       else str(data.get("error", "failed"))))
        else:
            ok = True
            text = str(data.get("context") or "")
            detail = (f"{_age(data.get('at'))} {data.get('event', '')} ({data.get('source') or '-'}), namespace "
                      f"{data.get('namespace')}: {data.get('chars', len(text))} characters")
            data = {**data, "preview": text[:400]}
        log_file = state / ("capture.log" if name == "last_capture" else "hooks.log")   # where that failure is told
        checks.append(Check(label, ok, detail, None if ok else f"see {log_file}", data))

    log = state / "hooks.log"
    skipped = []
    if log.exists():
        with open(log, "rb") as fh:
            fh.seek(max(0, log.stat().st_size - 20_000))
            skipped = [ln for ln in fh.read().decode("utf-8", "replace").splitlines() if "skipped" in ln][-3:]
    checks.append(Check("hooks.log", True, f"{log}" + (f"; last problems: {' | '.join(skipped)}" if skipped
                                                       else ": no problem logged recently")))
    return checks
