"""A namespace as a file: export to JSON lines and import from them, streamed both ways.

The lines are made and read in SQL (memsql.namespace_export, memsql.namespace_import in
sql/functions/56_namespaces.sql); this module only moves them. An export is read from a server-side cursor a few
hundred lines at a time and written to a file beside the target, renamed into place when complete (never a
half-written file). An import reads the file line by line and sends batches of lines, all in one transaction that
commits only after the end line's counts matched: a file cut short or a bad line writes nothing. Neither side holds
more than one batch in memory, whatever the size of the namespace.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterator

import psycopg

from memsql.calls import Call
from memsql.errors import InvalidArgument, NotFound, from_psycopg

EXPORT_ROWS = 200
"""Lines fetched from the server-side cursor at a time."""

IMPORT_LINES = 500
IMPORT_BYTES = 8 << 20
"""An import batch: at most this many lines, or about this many bytes."""


def _stdio(path: str | Path | None) -> bool:
    return path is None or str(path) == "-"


def export_namespace(conn: psycopg.Connection, call: Call, path: str | Path | None) -> dict[str, Any]:
    """Run the namespace_export ``call`` on a server-side cursor and write its lines to ``path``.

    Args:
        conn: a connection (not in autocommit: the cursor lives in a transaction, rolled back at the end).
        call: memsql.namespace_export(...) as built by the client.
        path: the file; None or "-" = standard output.

    Returns:
        {"namespace", "path", "lines", "bytes", "documents", "memories", "archive"}.

    Raises:
        NotFound, InvalidArgument: from the SQL function. OSError: the file cannot be written.
    """
    sql = f"SELECT line::text FROM ({call.sql}) AS export(line)"
    target = None if _stdio(path) else Path(path)
    out: IO[str]
    if target is None:
        out, tmp = sys.stdout, None
    else:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        out = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
    lines = size = 0
    last = None
    try:
        try:
            with conn.cursor(name="memsql_namespace_export") as cur:
                cur.itersize = EXPORT_ROWS
                cur.execute(sql, call.params)
                for (line,) in cur:
                    out.write(line)
                    out.write("\n")
                    lines += 1
                    size += len(line.encode("utf-8")) + 1
                    last = line
        except psycopg.Error as exc:
            raise from_psycopg(exc) from exc
        finally:
            conn.rollback()   # a read: nothing to commit, and the cursor's transaction ends here
        out.flush()
        if tmp is not None:
            os.fsync(out.fileno())
            out.close()
            os.replace(tmp, target)
            tmp = None
    finally:
        if tmp is not None:
            out.close()
            os.unlink(tmp)
    end = json.loads(last) if last else {}
    if end.get("kind") != "end":   # the SQL function always ends with it; anything else is a bug worth a loud error
        raise InvalidArgument("namespace_export ended without its end line", "report this as a memsql bug")
    return {"namespace": (call.params or {}).get("namespace"), "path": str(target) if target else "-",
            "lines": lines, "bytes": size, "documents": end["documents"], "memories": end["memories"],
            "archive": end["archive"]}


def _header(line: str, where: str) -> dict[str, Any]:
    try:
        head = json.loads(line)
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("kind") != "header" or head.get("format") != "memsql-namespace":
        raise InvalidArgument(f"{where}: line 1 is no memsql namespace export header",
                              "import a file written by `memsql namespace export` (memsql.namespace_export)")
    return head


def _open(path: str | Path) -> tuple[IO[str], str]:
    if _stdio(path):
        return sys.stdin, "standard input"
    try:
        return open(path, encoding="utf-8", newline=""), str(path)
    except FileNotFoundError as exc:
        raise NotFound(f"no such file: {path}", "give the path of a file written by `memsql namespace export`") \
            from exc


def batches(src: IO[str], where: str) -> Iterator[tuple[int, list[str]]]:
    """The lines of an export in import batches: (number of the batch's first line, its lines); the first batch
    starts with the header (checked here, so a file that is no export fails before anything is sent).

    Raises:
        InvalidArgument: line 1 is no export header, or a line is not UTF-8.
    """
    lineno = 0
    try:
        first = src.readline()
        _header(first, where)
        batch, start, size = [first.rstrip("\r\n")], 1, len(first)
        lineno = 1
        for line in src:
            lineno += 1
            batch.append(line.rstrip("\r\n"))
            size += len(line)
            if len(batch) >= IMPORT_LINES or size >= IMPORT_BYTES:
                yield start, batch
                batch, start, size = [], lineno + 1, 0
        if batch:
            yield start, batch
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"{where}: line {lineno + 1} is not UTF-8 ({exc.reason})",
                              "an export is UTF-8 JSON lines; import the file namespace export wrote") from exc


def import_statements(statement: Callable[..., Call], path: str | Path, namespace: str | None) -> Iterator[Call]:
    """The namespace_import calls an import of ``path`` makes, batch by batch (for ``--sql``: run them in one
    transaction)."""
    src, where = _open(path)
    try:
        for start, lines in batches(src, where):
            if start == 1:
                namespace = namespace or json.loads(lines[0]).get("namespace")
            yield statement(lines=lines, namespace=namespace, first_line=start)
    finally:
        if src is not sys.stdin:
            src.close()


def import_namespace(conn: psycopg.Connection, statement: Callable[..., Call], path: str | Path,
                     namespace: str | None) -> dict[str, Any]:
    """Send the lines of an export file to memsql.namespace_import in batches, in one transaction.

    Args:
        conn: a connection (not in autocommit).
        statement: builds the namespace_import call from its arguments (lines, namespace, first_line).
        path: the file; "-" = standard input.
        namespace: the target; None = the one the header names.

    Returns:
        {"namespace", "path", "lines", "vectors", "knowledge_types", "documents", "memories", "archive"}.

    Raises:
        InvalidArgument: not an export, a bad line (named), the file ends before its end line, a namespace that
            holds memories. NotFound: no such file. Other MemsqlErrors from the SQL function.
    """
    src, where = _open(path)
    totals = {"knowledge_types": 0, "documents": 0, "memories": 0, "archive": 0, "end": 0}
    head: dict[str, Any] = {}
    target = namespace
    last = 0
    try:
        for start, lines in batches(src, where):
            if start == 1:
                head = json.loads(lines[0])
                target = namespace or head.get("namespace")
            call = statement(lines=lines, namespace=target, first_line=start)
            with conn.cursor() as cur:
                cur.execute(call.sql, call.params)
                for _ns, item, count, _applied in cur.fetchall():
                    totals[item] = totals.get(item, 0) + count
            last = start + len(lines) - 1
        if not totals["end"]:
            raise InvalidArgument(f"{where}: the file ends at line {last} before its end line (cut short?); nothing "
                                  "was imported", "export the namespace again")
        conn.commit()
    except psycopg.Error as exc:
        conn.rollback()
        raise from_psycopg(exc) from exc
    except BaseException:
        conn.rollback()
        raise
    finally:
        if src is not sys.stdin:
            src.close()
    return {"namespace": target, "path": where, "lines": last, "vectors": bool(head.get("vectors")),
            **{k: totals[k] for k in ("knowledge_types", "documents", "memories", "archive")}}
