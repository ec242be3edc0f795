"""Capture of a Claude Code transcript: the complete lines appended since the last capture, ingested as one segment.

A transcript (``~/.claude/projects/<project>/<session>.jsonl``) only grows. Each capture reads from the offset the
database holds for it (memsql.capture_progress: the largest ``byte_end`` of its documents) to the last complete line,
and ingests those lines as the document ``claude_code:<session>#<offset>`` whose metadata records ``byte_start`` and
``byte_end``. The document and its memories are written in one transaction, so the offset moves exactly when the
memories are stored: a capture killed mid-way leaves the offset where it was and the next one does the same work
again; a hook that fires twice finds nothing new. Captures of one transcript are serialised by a file lock. A line
still being written (no newline yet) waits for the next capture.

Run detached by the hooks: ``python -m memsql.claude.capture --transcript PATH --namespace NS``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path

log = logging.getLogger("memsql.claude")

CAPTURE_SECONDS = 300
"""A capture process ends (SIGALRM, the default action: the kernel ends it even when a native library deadlocks
holding the GIL) after this long, releasing its lock; what it had not committed is captured by the next hook from
the stored offset."""
LOCK_SECONDS = 240
"""How long a capture waits for the one already running on the same transcript."""

MAX_SEGMENT_BYTES = 8 * 1024 * 1024
"""Bytes read at once (a long transcript seen for the first time is captured in several segments)."""
MAX_LINE_BYTES = 256 * 1024 * 1024
"""The widest a read grows to hold one line (a pasted image or PDF as base64) or to reach lines with something to
remember past tool output; a single line longer than this stops the capture with an error (logged, in doctor)."""


def state_dir() -> Path:
    """Where the hooks keep their log, locks and last injection: <memsql home>/claude."""
    import os

    env = os.environ.get("MEMSQL_HOME")
    if env:
        home = Path(env).expanduser()
    else:
        import platformdirs

        home = Path(platformdirs.user_data_dir("memsql"))
    path = home / "claude"
    path.mkdir(parents=True, exist_ok=True)
    return path


def record(name: str, data: dict) -> None:
    """Write <state_dir>/<name>.json (last capture, last injection) for ``memsql claude doctor``."""
    path = state_dir() / f"{name}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({**data, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, default=str))
    tmp.replace(path)


def read_segment(path: Path, start: int, limit: int = MAX_SEGMENT_BYTES) -> tuple[list[str], int]:
    """The complete lines of ``path`` from byte ``start`` (at most ``limit`` bytes), and the offset after them."""
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read(limit)
    cut = data.rfind(b"\n")
    if cut < 0:
        return [], start
    chunk = data[: cut + 1]
    return chunk.decode("utf-8", errors="replace").splitlines(), start + len(chunk)


def capture(transcript: str | Path, namespace: str, session_id: str | None = None, memory=None) -> dict:
    """Ingest what the transcript gained since the last capture.

    Args:
        transcript: the session's JSONL file.
        namespace: where its memories go.
        session_id: the session (from the hook payload); default read from the lines.
        memory: a memsql.client.Memory; default one with the configuration, on a running server only (an
            embedded server that is stopped raises DatabaseUnavailable: it is not started).

    Returns:
        {"transcript", "namespace", "from", "to", "documents", "chunks", "secrets", "seconds"}: bytes captured
        [from, to) and what the ingest wrote.
    """
    from filelock import FileLock

    from memsql.adapters.claude_code import parse_claude_code_lines
    from memsql.client import Memory

    t0 = time.perf_counter()
    path = Path(transcript).expanduser().resolve()
    source = str(path)
    lock = FileLock(str(state_dir() / f"capture-{hashlib.sha1(source.encode()).hexdigest()[:16]}.lock"))
    own = memory is None
    if memory is None:  # like the hooks, never start a server the user stopped: fail, logged; the next hook resumes
        from memsql import db
        from memsql.config import load

        config = load()
        dsn = db.resolve_dsn(config.get("database.dsn") or None, start=False,
                             home=Path(config.get("database.home")) if config.get("database.home") else None)
        memory = Memory(dsn=dsn, namespace=namespace)
    out = {"transcript": source, "namespace": namespace, "documents": 0, "chunks": 0, "secrets": {}}
    try:
        with lock.acquire(timeout=LOCK_SECONDS):
            owner = _owner(memory, source)
            if owner is not None and owner != namespace:   # the hook's cwd moved (cd into another repository)
                log.info("%s: captured into %s before, not %s", source, owner, namespace)
                namespace = out["namespace"] = owner
            start = end = memory.capture_progress(namespace, source)
            limit = MAX_SEGMENT_BYTES
            while True:
                lines, end_next = read_segment(path, end, limit)
                more = path.stat().st_size > end + limit   # the window did not reach the end of the file
                if end_next == end:
                    if not more:
                        break   # the last line is still being written
                    if limit >= MAX_LINE_BYTES:
                        raise RuntimeError(f"a line of {source} at byte {end} is longer than {MAX_LINE_BYTES} bytes: "
                                           "the capture cannot pass it")
                    limit *= 4   # one line longer than the window: read it whole
                    continue
                report = parse_claude_code_lines(lines, source, session_id)
                docs = [replace(d, source_key=f"{d.source_key}#{end}",
                                metadata={**d.metadata, "byte_start": end, "byte_end": end_next,
                                          "transcript": source})
                        for d in report.documents]
                if docs:
                    summary = _ingest(memory, docs, namespace)
                    if summary.failed:
                        raise RuntimeError(f"capture of {source} failed: {summary.failed[0][1]}")
                    out["documents"] += summary.inserted + summary.replaced
                    out["chunks"] += summary.chunks
                    for kind, n in summary.secrets.items():
                        out["secrets"][kind] = out["secrets"].get(kind, 0) + n
                    end = end_next
                    limit = MAX_SEGMENT_BYTES
                elif more and limit < MAX_LINE_BYTES:
                    limit *= 4   # a whole window of tool output: read on to the next message (stored from here)
                else:
                    # nothing to remember in these lines (tool output, snapshots): the offset stays and they are
                    # read again with the next lines, which may complete a message
                    break
                if len(lines) == 0:
                    break
            out.update({"from": start, "to": end})
    finally:
        if own:
            memory.close()
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


def _owner(memory, source: str) -> str | None:
    """The namespace a transcript was captured into first, if any: a session stays in its project when a later hook
    comes from another directory."""
    from memsql.client import Work

    def find(conn):
        row = conn.execute("SELECT d.namespace FROM memsql.documents d WHERE d.source_uri = %s "
                           "AND d.adapter = 'claude_code' ORDER BY d.created_at, d.id LIMIT 1", (source,)).fetchone()
        conn.commit()
        return row[0] if row else None

    return memory._work(Work(find, needs="conn"))


def _ingest(memory, docs, namespace):
    """The documents through memsql's ingest (redact, chunk, embed, COPY) on the client's connection."""
    from memsql.client import Work

    return memory._work(Work(lambda conn: memory._ingestor(conn, namespace, None).ingest(docs), needs="conn"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memsql.claude.capture", description=__doc__.splitlines()[0])
    parser.add_argument("--transcript", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--session")
    parser.add_argument("--event", default="")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(CAPTURE_SECONDS)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s capture %(levelname)s %(message)s",
                        stream=sys.stderr)
    try:
        result = capture(args.transcript, args.namespace, args.session)
    except Exception as exc:  # logged for `memsql claude doctor`; the next capture starts from the stored offset
        log.error("%s: %s: %s", args.transcript, type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        record("last_capture", {"ok": False, "event": args.event, "transcript": args.transcript,
                                "error": f"{type(exc).__name__}: {exc}"})
        return 1
    log.info("%s", json.dumps(result))
    record("last_capture", {"ok": True, "event": args.event, **result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
