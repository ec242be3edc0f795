"""Claude Code's own memory as memsql sources: ``memsql claude ingest``.

Claude Code keeps instructions in CLAUDE.md files (the project's ``CLAUDE.md``, ``CLAUDE.local.md``,
``.claude/CLAUDE.md``; the user's ``~/.claude/CLAUDE.md``) and notes it writes itself in its auto-memory folder
``~/.claude/projects/<project>/memory/*.md`` (<project> = the project's absolute path with every character other
than a letter or digit replaced by ``-``, as Claude Code names it). They are ingested read-only, as markdown, into the project's namespace:
searchable beside the captured sessions (memory_search, the MCP tools), never injected by SessionStart (Claude
Code loads them into the context itself). memsql never writes to them; ingesting again replaces a file's document
only when the file changed.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

from memsql.claude.install import claude_dir, project_root

SOURCE_TAG = "claude-code-memory"
"""The tag of every memory `memsql claude ingest` writes; memsql.memory_context (what the hooks inject) leaves such
memories out."""


def auto_memory_dir(project: Path) -> Path:
    """Claude Code's auto-memory folder of a project: projects/<path, non-alphanumerics as '-'>/memory, as Claude
    Code 2.1 names it; a name past 200 characters is cut there and ends in a hash of the path, found by its
    prefix."""
    name = re.sub(r"[^A-Za-z0-9]", "-", str(project))
    base = claude_dir() / "projects"
    if len(name) > 200:
        hits = sorted(base.glob(glob.escape(name[:200]) + "-*")) if base.is_dir() else []
        return (hits[0] if hits else base / name[:200]) / "memory"
    return base / name / "memory"


def sources(directory: str | Path | None = None, user: bool = False) -> list[Path]:
    """The CLAUDE.md files and auto-memory notes of a directory's project that exist (absolute, sorted within
    each kind): project CLAUDE.md files, then the auto-memory notes, then (user=True) ~/.claude/CLAUDE.md."""
    root = project_root(directory)
    found = [p for p in (root / "CLAUDE.md", root / "CLAUDE.local.md", root / ".claude" / "CLAUDE.md") if p.is_file()]
    folder = auto_memory_dir(root)
    if folder.is_dir():
        found += sorted(p for p in folder.glob("*.md") if p.is_file())
    if user and (claude_dir() / "CLAUDE.md").is_file():
        found.append(claude_dir() / "CLAUDE.md")
    return found


def ingest_sources(memory, directory: str | Path | None = None, user: bool = False,
                   namespace: str | None = None, prune: bool = False) -> dict:
    """Ingest sources(directory, user) into namespace (default the hooks' namespace of the project); returns
    {"namespace", "files", "summary"} (summary: memsql.ingest.IngestSummary, None when there is no file). The notes
    ingested before whose files are gone (Claude Code rewrites and renames its auto-memory notes) are listed in
    summary.missing, and with ``prune`` archived (restorable), as ``memsql ingest --prune`` does for a folder."""
    from memsql.claude.hooks import namespace_for
    from memsql.client import Work
    from memsql.ingest import IngestSummary, _resolved, sync_missing

    root = project_root(directory)
    ns = namespace or namespace_for(str(root), memory.config.get("claude.namespace"))
    files = sources(root, user)
    watched = [root / "CLAUDE.md", root / "CLAUDE.local.md", root / ".claude" / "CLAUDE.md", auto_memory_dir(root),
               *([claude_dir() / "CLAUDE.md"] if user else [])]
    # tagged: memory_context leaves them out of what the hooks inject (Claude Code loads them itself)
    summary = (memory.ingest([str(p) for p in files], namespace=ns, adapter="markdown", tags=[SOURCE_TAG])
               if files else IngestSummary())
    seen = {_resolved(p) for p in files}
    memory._work(Work(lambda conn: sync_missing(memory._ingestor(conn, ns, None), watched, seen, summary, prune),
                      needs="conn"))
    if not files and not summary.missing:
        return {"namespace": ns, "files": [], "summary": None}
    return {"namespace": ns, "files": [str(p) for p in files], "summary": summary}
