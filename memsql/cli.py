"""memsql command line (typer). Heavy imports happen inside commands, so `memsql --help` is instant.

Output is human-readable on a terminal and JSON when piped or with --json. `--sql` prints the
SQL call a command would run instead of running it. Exit codes: 0 success, 1 runtime error (one
line saying what to do next), 2 usage error.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import List, Optional

import typer

from memsql import calls
from memsql.calls import REQUIRED

app = typer.Typer(
    help="memsql: local-first long-term memory in PostgreSQL (hybrid search, SQL is the API).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,   # help text as written: "[memory.vector] top_k" is a config key, not rich markup
)
db_app = typer.Typer(rich_markup_mode=None, help="The embedded PostgreSQL server: start, stop, status, url.",
                     no_args_is_help=True)
archive_app = typer.Typer(rich_markup_mode=None, help="Archived (forgotten) memories.", no_args_is_help=True)
app.add_typer(archive_app, name="archive")
app.add_typer(db_app, name="db")
config_app = typer.Typer(rich_markup_mode=None, help="Configuration (memsql.toml, MEMSQL_* variables).",
                         no_args_is_help=True)
app.add_typer(config_app, name="config")
worker_app = typer.Typer(rich_markup_mode=None,
                         help="The embedding worker: embeds memories written from SQL and answers query embeddings "
                         "for SQL callers (run, start, stop, status).", no_args_is_help=True)
app.add_typer(worker_app, name="worker")
role_app = typer.Typer(rich_markup_mode=None, help="Roles limited to namespaces by Row Level Security: create, list, drop.",
                       no_args_is_help=True)
app.add_typer(role_app, name="role")
namespace_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                            help="Namespaces as a whole: list, rename, drop (dry run first), export, import.")
app.add_typer(namespace_app, name="namespace")
GROUPS = {"namespace": namespace_app}
"""Command groups of verbs whose CLI name has two words ("namespace list")."""


def _setup() -> None:
    """Server notices and warnings (and memsql's own warnings) are printed on stderr, one line each, with one
    "memsql: " before it (messages written for every entry point already start with it)."""
    import logging   # not at import: `memsql --help` starts without it

    class OnePrefix(logging.Formatter):
        def format(self, record) -> str:
            text = super().format(record)
            return text if text.startswith("memsql: ") else f"memsql: {text}"

    logger = logging.getLogger("memsql")
    if not any(getattr(h, "_memsql_cli", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(OnePrefix("%(message)s"))
        handler._memsql_cli = True
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logging.getLogger("memsql.server").setLevel(logging.INFO)  # NOTICE too


SqlOpt = typer.Option(False, "--sql", help="Print the SQL call instead of running it.")
JsonOpt = typer.Option(None, "--json/--no-json", help="JSON output (default: JSON when stdout is not a terminal).")


_FLAGS: dict = {}  # "section.key" -> value from --set, highest precedence (memsql.config.load flags)


def _parse_set(items: List[str]) -> dict:
    """--set section.key=value pairs; values are TOML (true, 0.5, "text", ["a", "b"]) or else read as the
    setting's environment variable would be (yes / no, news=14, a,b), else plain text."""
    import tomllib

    from memsql.config import read_text_value

    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or "." not in key:
            typer.echo(f"memsql: error: --set {item!r}: expected section.key=value, e.g. memory.vector.top_k=5",
                       err=True)
            raise typer.Exit(2)
        try:
            out[key.strip()] = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = read_text_value(key.strip(), raw)
    return out


@app.callback()
def _main(set_: List[str] = typer.Option([], "--set", metavar="SECTION.KEY=VALUE",
                                         help="Override a configuration key for this call (repeatable), "
                                              "e.g. --set memory.chunker.strategy=semantic."),
          version: bool = typer.Option(False, "--version", is_eager=True, callback=lambda v: _version(v),
                                       help="Print memsql's version and the schema version it works with, then "
                                            "exit.")) -> None:
    """memsql: local-first long-term memory in PostgreSQL (hybrid search, SQL is the API)."""
    _setup()
    _FLAGS.clear()
    _FLAGS.update(_parse_set(set_))


def _version(wanted: bool) -> None:
    if not wanted:
        return
    from importlib.metadata import PackageNotFoundError, version

    from memsql import db

    try:
        release = version("memsql")
    except PackageNotFoundError:   # run from a checkout that is not installed
        release = "(not installed)"
    typer.echo(f"memsql {release}, schema version {db.SCHEMA_VERSION} ({db.SQL_DIR})")
    raise typer.Exit(0)


def _config(extra: Optional[dict] = None):
    from memsql.config import load

    return load(flags={**_FLAGS, **(extra or {})})


def _want_json(flag: Optional[bool]) -> bool:
    return flag if flag is not None else not sys.stdout.isatty()


def _emit(obj) -> None:
    typer.echo(json.dumps(obj, ensure_ascii=False, default=str, indent=None))


def _fail(exc: Exception) -> None:
    """One line on stderr and exit 1."""
    typer.echo(f"memsql: error: {exc}", err=True)
    raise typer.Exit(1)


def _run(fn):
    """Call fn, turning memsql errors (and psycopg ones) into one-line messages, exit 1."""
    from memsql.errors import MemsqlError, from_psycopg

    try:
        return fn()
    except MemsqlError as exc:
        _fail(exc)
    except Exception as exc:  # psycopg errors that escaped translation
        import psycopg

        if isinstance(exc, psycopg.Error):
            _fail(from_psycopg(exc))
        raise


# ---------------------------------------------------------------------------------------------
# The verbs: each command's arguments are its verb's (memsql.calls), with the flags below; the command's own
# parameters are what it shows or how (--json, --explain, ...). `--sql` prints the verb's SQL call.

FLAGS: dict[str, tuple[str, ...]] = {
    "namespace": ("--namespace", "-n"), "knowledge_type": ("--knowledge-type", "-t"),
    "knowledge_types": ("--knowledge-type", "-t"), "language": ("--language", "-l"), "k": ("-k",),
    "tags": ("--tag",), "add_tags": ("--add-tag",), "remove_tags": ("--remove-tag",), "topics": ("--topic",),
    "memory_rerank": ("--memory-rerank/--no-memory-rerank", " /--no-rerank"), "touch": ("--touch/--no-touch",),
    "last_session": ("--last-session/--no-last-session",),
    "enable_mmr": ("--mmr/--no-mmr",), "match_all": ("--all",),
    "tag.memory_id": ("--memory", "-m"), "tag.document_id": ("--document", "-d"),
    "forget.dry_run": ("--dry-run/--apply",),
    "evaluate.golden_path": ("--golden", "-g"), "evaluate.out_dir": ("--out", "-o"),
    "namespace_drop.dry_run": ("--dry-run/--apply",), "namespace_export.path": ("--output", "-o"),
    "namespace_import.namespace": ("--namespace", "-n"), "namespace_import.embed": ("--embed/--no-embed",),
    "namespace_export.vectors": ("--vectors/--no-vectors",),
}
"""Argument -> its option's spelling ("verb.argument" for one verb only); default --name-with-dashes. A required
argument is positional unless its "verb.argument" is here."""

DEFAULTS: dict[str, object] = {"forget.dry_run": True, "evaluate.out_dir": Path("eval-report"),
                               "namespace_drop.dry_run": True}
"""The CLI's own defaults where they differ from the verb's (it never archives without --apply; eval writes its
report files)."""

_CLI_TYPES = {str: str, int: int, float: float, bool: bool, datetime: str, list[str]: List[str],
              list[int]: List[int], "pathlib.Path": Path, "list of pathlib.Path": List[Path]}


def _help(arg) -> str:
    text = arg.help + (" (repeatable)" if arg.type.endswith("[]") else "")
    if arg.config:
        section, key = arg.config.rsplit(".", 1)
        return f"{text}; default [{section}] {key}."
    if arg.default not in (None, REQUIRED, "{}") and "default" not in text:
        shown = str(arg.default).lower() if isinstance(arg.default, bool) else arg.default
        return f"{text} (default {shown})."
    return text + "."


def _cli_param(verb, arg) -> inspect.Parameter:
    """The typer parameter of a verb's argument: name, type, flags, range and help from memsql.calls."""
    py = _CLI_TYPES[arg.python_type]
    flags = FLAGS.get(f"{verb.name}.{arg.name}") or (None if arg.required else FLAGS.get(arg.name))
    default = DEFAULTS.get(f"{verb.name}.{arg.name}", ... if arg.required else None)
    bounds = {"min": arg.low, "max": arg.high} if arg.low is not None or arg.high is not None else {}
    if arg.required and not flags:
        info = typer.Argument(..., help=_help(arg), **bounds)
    else:
        info = typer.Option(default, *(flags or (f"--{arg.name.replace('_', '-')}",)), help=_help(arg),
                            show_default=False, **bounds)
    annotation = py if arg.required or default not in (None, ...) else Optional[py]
    return inspect.Parameter(arg.name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def verb_command(name: str, sql: bool = True, prepare=None):
    """Register the decorated function as the CLI command of verb ``name``.

    The command's parameters are the verb's CLI arguments (:func:`_cli_param`), then the function's own (after
    its first, ``args``), then ``--sql``. The function is called with ``args``: the arguments given (None and
    empty lists left out, so the verb's defaults apply), keyed by the verb's argument names.

    ``prepare(args, given)``, when set, completes ``args`` from the function's own parameters (``given``: it may
    pop them) before the call is run or printed by ``--sql`` (stdin for ``-``, positional shortcuts).
    """
    verb = calls.VERBS[name]

    def register(body):
        own = list(inspect.signature(body).parameters.values())[1:]
        params = [_cli_param(verb, a) for a in verb.on("cli")] + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
                                                                   for p in own]
        if sql:
            params.append(inspect.Parameter("sql", inspect.Parameter.KEYWORD_ONLY, default=SqlOpt, annotation=bool))

        @functools.wraps(body)
        def command(**given):
            show_sql = given.pop("sql", False) if sql else False   # else the command's own --sql, if any
            args = {a.name: given.pop(a.name) for a in verb.on("cli")}
            args = {k: v for k, v in args.items() if v is not None and v != []}
            for key in calls.NAMESPACE_ARGS & set(args):   # --namespace "": refused, --sql too (as every surface)
                _run(functools.partial(calls.check_namespace, verb.name, key, args[key]))
            if prepare is not None:
                prepare(args, given)
            if show_sql:
                sql_args = {k: v for k, v in args.items() if verb.arg(k).sql}
                call = _run(lambda: _memory().shown_statement(name, **sql_args))
                typer.echo(call.render())
                return None
            return body(args, **given)

        command.__signature__ = inspect.Signature(params)
        group, _, name_ = verb.cli.rpartition(" ")
        (GROUPS[group] if group else app).command(name_)(command)
        return body

    return register


@app.command()
def init(json_out: Optional[bool] = JsonOpt) -> None:
    """Create or upgrade the memsql schema (idempotent): extensions, migrations, functions, search_path."""

    steps = _run(lambda: _memory().init())
    restarted = _restart_other_worker()
    if restarted is not None:
        steps.append(f"worker: restarted (pid {restarted}): the running one was started by another installation "
                     "or version of memsql")
    if _want_json(json_out):
        _emit({"ok": True, "steps": steps})
    else:
        for s in steps:
            typer.echo(f"  {s}")
        typer.echo("memsql is ready: try `memsql ingest README.md` then `memsql search \"...\"`.")


def _restart_other_worker() -> Optional[int]:
    """After an upgrade: the home's background worker, when it runs the code of another installation or schema
    version (memsql.worker.runs_this_code) and serves the database this init upgraded (memsql.worker.started_for:
    a worker of another database is left alone), is stopped and started again from this one for the same database;
    its new pid, else None."""
    from memsql import db, worker

    pid = worker.running_pid()
    if pid is None or worker.runs_this_code(pid):
        return None
    target = worker.started_for(pid)
    if target != (os.environ.get("MEMSQL_DSN") or None):
        return None
    worker.stop()
    new = worker.start_background(dsn=target, wait_seconds=5.0)
    _run(lambda: worker.wait_connected(db.resolve_dsn(), timeout=15.0))
    return new


@verb_command("ingest", sql=False)
def ingest(
    args: dict,
    strategy: Optional[str] = typer.Option(None, "--strategy",
                                           help="Chunking strategy: token or semantic; default [memory.chunker]."),
    json_out: Optional[bool] = JsonOpt,
) -> None:
    """Ingest files: parse, chunk (<= 256 word pieces), embed, filter, write; unchanged documents are skipped."""
    from memsql.adapters.base import path_text
    from memsql.ingest import iter_files

    paths = args.pop("paths")
    files = list(iter_files(paths))   # counted for the progress bar; the paths go to the ingest (--prune needs them)
    want_json = _want_json(json_out)
    extra = {"memory.chunker.strategy": strategy} if strategy else {}

    def go():
        mem = _memory(extra)
        if want_json or not sys.stderr.isatty():
            return mem.ingest(paths, **args)
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("ingest"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[name]}", markup=False), transient=True) as bar:
            task = bar.add_task("ingest", total=len(files), name="")
            return mem.ingest(paths, progress=lambda p, s: bar.update(task, advance=1, name=path_text(p.name)), **args)

    summary = _run(go)
    if want_json:
        _emit(summary.as_dict())
        if summary.failed:
            raise typer.Exit(1)
        return
    if args.get("dry_run"):
        from memsql.filter import describe

        for src, index, text, decision in summary.decisions:
            typer.echo(f"{src}#{index}: {describe(decision)}")
            typer.echo(f"    {' '.join(text.split())[:100]}")
        kept = summary.filter_kept
        docs = summary.would_insert + summary.would_replace
        typer.echo(f"dry run, nothing written: {docs} document{'s' * (docs != 1)} would be written "
                   f"(new {summary.would_insert}, changed {summary.would_replace}, unchanged {summary.unchanged}), "
                   f"{summary.would_chunks} chunk{'s' * (summary.would_chunks != 1)}, "
                   f"failed: {len(summary.failed)}; "
                   + (f"the autosave filter would save {kept} of {kept + sum(summary.filtered.values())} chunks it "
                      "judged" + (", skipped: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.filtered.items()))
                                  if summary.filtered else "")
                      if summary.decisions or summary.filtered else
                      "the autosave filter is off ([memory.filter] enabled = false)" if not summary.filter_enabled else
                      "documents bypass the autosave filter unless [memory.filter] apply_to_documents = true"))
    else:
        typer.echo(
            f"documents: {summary.documents} (new {summary.inserted}, replaced {summary.replaced}, "
            f"unchanged {summary.unchanged}), chunks: {summary.chunks}, empty: {summary.empty}, "
            f"failed: {len(summary.failed)}  [{summary.seconds:.1f}s]"
        )
    # what a dry run finds is what the real run would report: failures, repairs, copies, older versions, gone files
    would = "would be " if summary.dry_run else ""
    for src, reason in summary.failed:
        typer.echo(f"  failed: {src}: {reason}", err=True)
    for src, warning in summary.warnings:
        typer.echo(f"  warning: {src}: {warning}", err=True)
    for src, twin in summary.duplicates:
        typer.echo(f"  {'would not be written' if summary.dry_run else 'not written'}: {src}: the same content is "
                   f"stored as {twin}")
    for old, new in summary.moved:
        typer.echo(f"  {would}moved: {old} -> {new}")
    for src in summary.updated:
        typer.echo(f"  {would}updated: {src}: the same text with another front matter, date or title; applied to "
                   "the document and its memories (nothing embedded again)")
    for src, n in summary.emptied:
        typer.echo(f"  {would}emptied: {src}: the file holds nothing now; {'its' if summary.dry_run else 'ended'} "
                   f"{n} memor{'y' if n == 1 else 'ies'}{' would end' if summary.dry_run else ''} (still found with "
                   "include_superseded or as_of)")
    for src in summary.older_sources:
        typer.echo(f"  {'would not be revised' if summary.dry_run else 'not revised'}: {src}: an export older than "
                   "the stored version (its source date is earlier)")
    if summary.skipped_blocks:
        typer.echo("  skipped: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.skipped_blocks.items())))
    if summary.secrets:
        typer.echo(f"  secrets {would}removed: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.secrets.items())))
    if summary.filtered and not summary.dry_run:
        typer.echo("  not saved by the autosave filter: "
                   + ", ".join(f"{k} {v}" for k, v in sorted(summary.filtered.items())))
    _missing_out(summary.missing, would_prune=summary.dry_run and bool(args.get("prune")))
    _dropped_out(summary.dropped, would_prune=summary.dry_run and bool(args.get("prune")))
    if summary.failed:  # the others are (or would be) written; the exit code tells a script that some were not
        raise typer.Exit(1)


def _dropped_out(dropped: list[tuple[str, int, bool]], would_prune: bool = False) -> None:
    """The conversations an export read whole no longer holds: archived by --prune (or would be), or listed."""
    for src, n, archived in dropped:
        state = "would be pruned" if would_prune else "pruned" if archived else "no longer in its export"
        typer.echo(f"  {state}: {src} ({n} memories{' archived' * archived})")
    if dropped and not would_prune and not all(a for *_, a in dropped):
        typer.echo(f"  {sum(not a for *_, a in dropped)} conversations deleted from their export are still searchable: "
                   "run the same ingest with --prune to archive them (restorable)")


def _missing_out(missing: list[tuple[str, int, bool]], would_prune: bool = False) -> None:
    """The documents whose files are gone: archived by --prune (or would be, in a dry run), or listed with the
    command that would."""
    if would_prune:
        for src, n, _ in missing:
            typer.echo(f"  would be pruned: {src} ({n} memories would move to the archive, restorable)")
        return
    for src, n, archived in missing:
        typer.echo(f"  {'pruned' if archived else 'missing on disk'}: {src} ({n} memories{' archived' * archived})")
    pruned = sum(a for *_, a in missing)
    if pruned:
        typer.echo(f"  {pruned} documents pruned: their memories are in the archive (`memsql archive export`); "
                   "`memsql restore ID ...` brings them back")
    if len(missing) > pruned:
        typer.echo(f"  {len(missing) - pruned} documents whose files are gone are still searchable: run the same "
                   "ingest with --prune to archive them (restorable)")


def _content_text(args: dict, given: dict) -> None:
    """The content as UTF-8 text, whether given as the argument or as ``-`` (read from standard input; one final
    newline dropped); a leading byte order mark dropped, as ingest does. Text that is not UTF-8 is refused, never
    stored with replacement characters (an argument's undecodable bytes reach Python as lone surrogates)."""
    if args.get("content") != "-":
        text = args.get("content")
        if isinstance(text, str):
            bad = next((i for i, c in enumerate(text) if "\ud800" <= c <= "\udfff"), None)
            if bad is not None:
                _fail(Exception(f"the text argument is not UTF-8 text (character {bad}); convert it first, e.g. "
                                "iconv -t utf-8"))
            args["content"] = text.removeprefix("\ufeff")
        return
    data = sys.stdin.buffer.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        _fail(Exception(f"standard input is not UTF-8 text (byte {exc.start}); convert it first, e.g. iconv -t utf-8"))
    text = text.removeprefix("\ufeff")
    args["content"] = text[:-1] if text.endswith("\n") else text


@verb_command("add", prepare=_content_text)
def add(
    args: dict,
    explain: bool = typer.Option(False, "--explain",
                                 help="Run the autosave filter and show its score of each criterion (even when "
                                      "[memory.filter] is off); a text it would not keep is not stored."),
    json_out: Optional[bool] = JsonOpt,
) -> None:
    """Remember a short text (memory_add); the same text twice gives the same memory id. CONTENT - reads stdin."""

    def go():
        mem = _memory()
        decision = (mem.judge(args["content"], namespace=args.get("namespace"),
                              knowledge_type=args.get("knowledge_type")) if explain else None)
        if decision is not None and not decision.keep:  # what --explain reports is what happens
            return None, decision, None
        # already judged: do not filter twice
        mid = mem.add(**args, autosave=False if decision is not None else None)
        stored = None
        if mid is not None and args.get("importance") is not None:   # the same text twice: the stored memory
            row = mem.conn.execute("SELECT importance FROM memsql.memories WHERE namespace = %s AND id = %s",
                                   (args.get("namespace") or _config().get("database.namespace"), mid)).fetchone()
            mem.conn.rollback()
            stored = row[0] if row else None
        return mid, decision, stored

    mid, decision, stored = _run(go)
    if mid is not None and args.get("importance") is not None and (
            stored is None or abs(stored - args["importance"]) > 1e-6):
        shown = "unset" if stored is None else f"{stored:g}"
        typer.echo(f"note: this text is already stored as memory {mid} with importance {shown}; the memory is "
                   f"returned as it is (memsql tag {mid} --importance {args['importance']:g} changes it)", err=True)
    elif mid is not None:
        _below_cutoff(args.get("importance"))
    if _want_json(json_out):
        _emit({"memory_id": mid, **({"filter": decision.as_dict()} if decision is not None else {})})
        return
    if decision is not None:
        from memsql.filter import describe

        typer.echo(describe(decision))
    typer.echo(f"memory {mid}" if mid is not None else "not saved by the autosave filter (memsql add --explain shows why)")


@verb_command("search")
def search(
    args: dict,
    rerank_model: Optional[str] = typer.Option(None, "--rerank-model",
                                               help="Re-order the top candidates with this local cross-encoder."),
    json_out: Optional[bool] = JsonOpt,
) -> None:
    """Hybrid search (dense HNSW + BM25, fused by score (convex, default) or RRF, then the memory axis) in one SQL call."""
    extra = {"memory.vector.rerank": True, "memory.vector.rerank_model": rerank_model} if rerank_model else {}
    namespace = args.get("namespace")

    def go():
        from memsql.errors import InvalidArgument

        try:
            return _memory(extra).search(**args)
        except InvalidArgument as exc:
            if "as_of" in args and exc.sqlstate in ("22007", "22008"):  # PostgreSQL could not read the time
                raise InvalidArgument(f"--as-of {args['as_of']!r}: {exc.message}", calls.TIME_HINT,
                                      exc.sqlstate) from exc
            raise

    import logging

    class SaidBelow(logging.Filter):   # the server's NOTICEs of an empty result: it says why below, once
        def filter(self, record) -> bool:
            text = record.getMessage()
            return "memory_search: nothing to search" not in text and "memory_search: no rows;" not in text

    server_log = logging.getLogger("memsql.server")
    said_below = SaidBelow()
    server_log.addFilter(said_below)
    try:
        results = _run(go)
    finally:
        server_log.removeFilter(said_below)
    if _want_json(json_out):
        from dataclasses import asdict

        _emit([asdict(r) for r in results])
        if not results:
            typer.echo("memsql: no results: " + _empty_reason(args.get("query"), namespace, args), err=True)
        return
    if not results:
        typer.echo("no results: " + _empty_reason(args.get("query"), namespace, args))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=False)
    for col in ("#", "score", "dense", "lexical", "source", "content"):
        table.add_column(col, overflow="fold")
    for i, r in enumerate(results, 1):
        src = r.title or r.source_uri or ""
        snippet = " ".join(r.content.split())[:160]
        if r.valid_to is not None:
            snippet = f"[superseded {r.valid_to:%Y-%m-%d %H:%M}" + (
                f" by {r.superseded_by}] " if r.superseded_by is not None else "] ") + snippet
        table.add_row(str(i), f"{r.score:.4f}", _rank(r.dense_rank), _rank(r.lexical_rank), src[:40], snippet)
    Console(markup=False).print(table)   # memories are text: [brackets] are theirs, not markup


def _empty_reason(query: str | None, namespace: str | None, args: dict | None = None) -> str:
    """Why a search found nothing (memsql.client.empty_reason, the words of every surface), with what the search's
    filters left out (memsql.client.hidden_note: the importance cutoff, --as-of)."""
    from memsql.client import empty_reason

    with _memory() as mem:
        ns = namespace or mem.namespace
        rows = _run(mem.namespace_list)
        held = {r.namespace: r.memories for r in rows if r.memories}
        reason = empty_reason(query or "", ns, held, archived={r.namespace: r.archived for r in rows if r.archived})
        if args is None or ns not in held or not (query or "").strip():
            return reason
        note = _run(lambda: mem.hidden(ns, args.get("memory_rerank"), args.get("as_of"), args))
        return f"{reason}; {note}" if note else reason


def _below_cutoff(importance: float | None) -> None:
    """Say on stderr when an importance given to a memory is below the search's importance cutoff: memory_search
    leaves such a memory out while the memory axis is on (the cutoff is the point of a low importance)."""
    if importance is None:
        return
    threshold = _config().get("memory.scoring.importance_threshold")
    if importance < threshold:
        typer.echo(f"note: importance {importance:g} is below the search cutoff {threshold:g} ([memory.scoring] "
                   "importance_threshold): searches leave this memory out unless the memory axis is off "
                   "(--no-memory-rerank)", err=True)


@verb_command("update", prepare=_content_text)
def update(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """A fact changed: write a new version and mark the old one superseded (memory_update)."""
    memory_id = args["memory_id"]
    mid = _run(lambda: _memory().update(**args))
    if _want_json(json_out):
        _emit({"memory_id": mid, "supersedes": memory_id if mid != memory_id else None})
    else:
        typer.echo(f"memory {mid} supersedes {memory_id}" if mid != memory_id else f"memory {mid} unchanged")


@verb_command("history")
def history(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """The chain of versions of a memory, oldest first, with the time each was valid (memory_history)."""
    _rows_out(_run(lambda: _memory().history(**args)), json_out,
              ["version", "memory_id", "valid_from", "valid_to", "superseded_by", "archived", "content"])


@verb_command("stats")
def stats(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Counts per namespace, knowledge_type and adapter (the memory_stats view)."""
    rows = _run(lambda: _memory().stats(**args))
    if _want_json(json_out):
        from dataclasses import asdict

        _emit([asdict(r) for r in rows])
        return
    for r in rows:
        typer.echo(f"{r.namespace}\t{r.knowledge_type}\t{r.adapter}\tdocuments {r.documents}\t"
                   f"memories {r.memories}\tunembedded {r.without_embedding}\taccesses {r.accesses}")
    if not rows:
        typer.echo("no memories yet")


def _rows_out(rows, json_out: Optional[bool], columns: Optional[list[str]] = None, empty: str = "nothing",
              cut: int = 120) -> None:
    """Rows (dataclasses or dicts) as JSON when piped / --json, else a table whose cells are cut at ``cut``
    characters (white space collapsed; a cut cell ends in "..."; --json gives every value whole)."""
    from dataclasses import asdict, is_dataclass

    dicts = [asdict(r) if is_dataclass(r) else dict(r) for r in rows]
    if _want_json(json_out):
        _emit(dicts)
        return
    if not dicts:
        typer.echo(empty)
        return
    from rich.console import Console
    from rich.table import Table

    cols = columns or list(dicts[0])
    table = Table()
    for c in cols:
        table.add_column(c, overflow="fold")
    for d in dicts:
        table.add_row(*[_cell(d[c], cut) for c in cols])
    Console(markup=False).print(table)   # memories are text: [brackets] are theirs, not markup


def _cell(value, cut: int) -> str:
    """A table cell: "-" for None, white space collapsed, at most ``cut`` characters ending in "..." when cut."""
    if value is None:
        return "-"
    text = " ".join(str(value).split())
    return text if len(text) <= cut else text[:cut - 3].rstrip() + "..."


def _memory(extra: Optional[dict] = None):
    """A Memory with the configuration (file, MEMSQL_* variables, --set and the command's own flags)."""
    from memsql.client import Memory

    return Memory(config=_config(extra))


def _tag_positionals(args: dict, given: dict) -> None:
    """`memsql tag 42 a b`: the memory id and tags to add as arguments (the same as -m 42 --add-tag a --add-tag b);
    with --memory or --document every argument is a tag to add."""
    words = [w for w in [given.pop("target", None), *(given.pop("tag_names", None) or [])] if w is not None]
    if words and "memory_id" not in args and "document_id" not in args:
        first = words.pop(0)
        if not first.isdigit():
            typer.echo(f"memsql: error: {first!r} is no memory id: `memsql tag MEMORY_ID [TAG]...`, or --memory / "
                       "--document before the tags", err=True)
            raise typer.Exit(2)
        args["memory_id"] = int(first)
    if words:
        args["add_tags"] = [*args.get("add_tags", []), *words]
    if ("memory_id" in args) == ("document_id" in args):
        typer.echo("memsql: error: give exactly one of a memory id (argument or --memory) and --document", err=True)
        raise typer.Exit(2)


@verb_command("tag", prepare=_tag_positionals)
def tag(
    args: dict,
    target: Optional[str] = typer.Argument(None, metavar="MEMORY_ID",
                                           help="The memory to change (or --memory / --document)."),
    tag_names: Optional[List[str]] = typer.Argument(None, metavar="TAG", help="Tags to add (or --add-tag)."),
    json_out: Optional[bool] = JsonOpt,
) -> None:
    """Set importance, knowledge_type or tags of a memory or a whole document (memory_tag); no re-embedding.
    `memsql tag 42 urgent` adds tag urgent to memory 42."""
    n = _run(lambda: _memory().tag(**args))
    _emit({"changed": n}) if _want_json(json_out) else typer.echo(f"{n} memories changed")
    if n:
        _below_cutoff(args.get("importance"))


@verb_command("forget")
def forget(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """List (dry run, default) or archive (--apply) the memories that have faded (memory_forget)."""
    rows = _run(lambda: _memory().forget(**args))
    _rows_out(rows, json_out, ["memory_id", "knowledge_type", "importance", "score", "archived", "reason"],
              empty="nothing to forget")
    if not _want_json(json_out) and rows and args["dry_run"]:
        typer.echo(f"dry run: {len(rows)} memories would be archived; run again with --apply")
    elif not _want_json(json_out) and rows:
        moved = sum(1 for r in rows if r.archived)
        typer.echo(f"archived {moved} memories (memsql restore ID brings one back; memsql.archive lists them)")


@verb_command("restore")
def restore(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Bring archived memories back, embedded again (memory_restore). An id that could not be restored is named on
    stderr with the reason and the exit code is 1 (the others are restored)."""
    rows = _run(lambda: _memory().restore(**args))
    _rows_out(rows, json_out)
    failed = [r for r in rows if not r.restored]
    if failed:
        typer.echo("memsql: not restored: " + "; ".join(f"{r.memory_id}: {r.reason}" for r in failed), err=True)
        raise typer.Exit(1)


@verb_command("touch")
def touch(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Count a use of memories (opened, read in full, cited): access_count + 1 (memory_touch). An id that names no
    live memory of the namespace is named on stderr and the exit code is 1 (the others are counted)."""
    rows = _run(lambda: _memory().touch(**args))
    _rows_out(rows, json_out, empty="no live memory with these ids")
    _exit_on_missing(args, rows, "no live memory {ids} in namespace {ns!r} (not counted)")


@verb_command("find_by_tag")
def find_by_tag(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Memories carrying the tags, newest first (find_by_tag)."""
    _rows_out(_run(lambda: _memory().find_by_tag(**args)), json_out, ["memory_id", "tags", "knowledge_type", "content"])


@verb_command("delete_document")
def delete_document(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Delete a document and all its memories (delete_document)."""
    n = _run(lambda: _memory().delete_document(**args))
    _emit({"deleted_memories": n}) if _want_json(json_out) else typer.echo(f"deleted {n} memories")


@verb_command("neighbors")
def neighbors(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """The chunks around a memory in its document (memory_neighbors)."""
    _rows_out(_run(lambda: _memory().neighbors(**args)), json_out)


@verb_command("duplicates")
def duplicates(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Exact and near-duplicate memories; a report, nothing is deleted (memory_duplicates)."""
    _rows_out(_run(lambda: _memory().duplicates(**args)), json_out, empty="no duplicates")


@verb_command("health")
def health(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Checks: embedding and window backlogs, orphans, model and dimension, invalid indexes, BM25 statistics."""
    rows = _run(lambda: _memory().health(**args))
    _rows_out(rows, json_out, cut=2000)   # a hint says what to do: whole
    if any(not r.ok for r in rows):
        raise typer.Exit(1)


@archive_app.command("export")
def archive_export(namespace: Optional[str] = typer.Option(None, "--namespace", "-n"),
                   jsonl: bool = typer.Option(True, "--jsonl", help="One JSON object per line.")) -> None:
    """Write archived memories to stdout as JSON lines."""
    for row in _run(lambda: _memory().archive(namespace)):
        typer.echo(json.dumps(row, ensure_ascii=False, default=str))


@verb_command("evaluate", sql=False)
def eval_(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Retrieval quality on your own golden queries: Precision, Recall, MRR, nDCG and Hit Rate at 1, 3, 5, 10."""
    report = _run(lambda: _memory().evaluate(**args))
    for warning in report.get("warnings", []):
        typer.echo(f"memsql: warning: {warning}", err=True)
    if _want_json(json_out):
        _emit({"overall": report["overall"], "files": report["files"]})
        return
    k = report["k"]
    overall = report["overall"]
    typer.echo("  ".join(f"{m} {v:.3f}" for m, v in overall.items() if m.endswith(f"@{k}") or m.endswith("@10")))
    typer.echo(f"report: {', '.join(report['files'])}")


@verb_command("context")
def context(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """A budgeted context pack (memory_context): principles and decisions, memories relevant to --query, the last
    session; one line per memory with its id (what Claude Code's SessionStart hook injects)."""
    text = _run(lambda: _memory().context(**args))
    if _want_json(json_out):
        _emit({"context": text, "chars": len(text)})
    else:
        typer.echo(text.rstrip("\n") if text else "nothing to show: the namespace holds no memories yet")


@verb_command("get")
def get(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Memories by id with their full text (memory_get), in the order given; archived ones too. An id that names no
    memory of the namespace is named on stderr and the exit code is 1 (the others are printed)."""
    rows = _run(lambda: _memory().get(**args))
    if _want_json(json_out):
        _rows_out(rows, True)
    else:
        for r in rows:
            state = ", archived" if r.archived else ", superseded" if r.valid_to else ""
            typer.echo(f"# {r.memory_id} ({r.knowledge_type}{state}{', ' + r.title if r.title else ''})"
                       + (f" [first {len(r.content)} of {r.chars} characters]" if r.truncated else ""))
            typer.echo(r.content)
    _exit_on_missing(args, rows, "no memory {ids} in namespace {ns!r} (ids are per namespace: --namespace NAME)")


def _exit_on_missing(args: dict, rows, message: str) -> None:
    """The ids of args["memory_ids"] no row answered, named on stderr (``message`` formatted with ids and ns), and
    exit 1; nothing when every id was answered."""
    answered = {r.memory_id for r in rows}
    missing = [i for i in dict.fromkeys(args["memory_ids"]) if i not in answered]
    if missing:
        ns = args.get("namespace") or _config().get("database.namespace")
        typer.echo("memsql: " + message.format(ids=", ".join(map(str, missing)), ns=ns), err=True)
        raise typer.Exit(1)


@app.command()
def mcp(
    read_only: Optional[bool] = typer.Option(None, "--read-only/--read-write",
                                             help="Offer only the tools that read; default [mcp] read_only."),
    root: Optional[Path] = typer.Option(None, "--root", help="The directory the file tools (ingest, export, import, "
                                        "eval) may read and write, relative paths resolving against it; default "
                                        "[mcp] root, else the directory the server starts in."),
) -> None:
    """Run the MCP server on stdio (for Claude Code, Cursor and other MCP clients)."""
    from memsql.mcp_server import main as mcp_main

    _run(lambda: mcp_main(read_only=read_only, root_dir=str(root.resolve()) if root else None,
                          flags=dict(_FLAGS)))


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on; another than loopback needs --token."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="Port to listen on."),
    token: Optional[str] = typer.Option(None, "--token", envvar="MEMSQL_SERVE_TOKEN",
                                        help="Require this token on every request (at least 16 characters; "
                                             "also MEMSQL_SERVE_TOKEN)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n",
                                            help="Default namespace of the pages; default [database] namespace."),
    allow_host: List[str] = typer.Option([], "--allow-host",
                                         help="Another Host name the server answers to (repeatable)."),
    mcp: bool = typer.Option(False, "--mcp", help="Also serve the MCP tools over streamable HTTP at /mcp "
                                                  "(one warm model for every client)."),
) -> None:
    """A local web page (search, memories, namespaces, forgetting) over a JSON HTTP API (/api, /openapi.json)."""
    from memsql.web import serve as run_server
    from memsql.web.security import check_bind

    try:
        check_bind(host, token)
    except ValueError as exc:
        typer.echo(f"memsql: error: {exc}", err=True)
        raise typer.Exit(2)
    _run(lambda: calls.check_namespace("serve", "namespace", namespace))
    problem = _cannot_listen(host, port)
    if problem:   # said before the address is printed, not after it
        typer.echo(f"memsql: error: cannot listen on {host}:{port}: {problem} (a port another program uses? --port N)",
                   err=True)
        raise typer.Exit(3)
    from memsql import db

    config = _config()
    # a database that cannot serve this memsql (not initialised, another schema version) is said in one line here,
    # not as a traceback of the server's startup after the address was printed
    _run(lambda: db.check_ready(db.resolve_dsn(config.get("database.dsn") or None)))
    shown = "localhost" if host in ("127.0.0.1", "::1") else host
    typer.echo(f"memsql serve: http://{shown}:{port}/" + ("  (token required: open /login)" if token else ""),
               err=True)
    _run(lambda: run_server(host=host, port=port, token=token, namespace=namespace, config=config,
                            allow_hosts=allow_host or None, mcp=mcp))


def _cannot_listen(host: str, port: int) -> str | None:
    """Why a server could not listen on host:port, or None: a bind of every address the host resolves to (as
    asyncio's create_server, which uvicorn calls, binds them all), each released at once."""
    import socket

    try:
        for family, kind, proto, _, addr in dict.fromkeys(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)):
            with socket.socket(family, kind, proto) as sock:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(addr)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


claude_app = typer.Typer(rich_markup_mode=None, no_args_is_help=True,
                         help="Claude Code: install / uninstall the hooks and the MCP server, doctor.")
app.add_typer(claude_app, name="claude")


def _claude_scope(project: bool, user: bool) -> str:
    if project and user:
        typer.echo("memsql: error: --project or --user, not both", err=True)
        raise typer.Exit(2)
    return "project" if project else "user"


_ProjectOpt = typer.Option(False, "--project", help="This project only: <project>/.claude/settings.local.json and "
                                                   "Claude Code's local MCP scope.")
_UserOpt = typer.Option(False, "--user", help="Every project (the default): ~/.claude/settings.json and Claude "
                                             "Code's user MCP scope.")
_DirOpt = typer.Option(None, "--dir", help="The project directory (default: the current one; its git root is used).")


def _claude_run(fn):
    from memsql.claude.install import InstallError

    try:
        return _run(fn)   # a bad memsql.toml (ConfigError) and the other memsql errors: one line, exit 1
    except InstallError as exc:
        typer.echo(f"memsql: error: {exc}", err=True)
        raise typer.Exit(1)


@claude_app.command("install")
def claude_install(project: bool = _ProjectOpt, user: bool = _UserOpt, directory: Optional[Path] = _DirOpt,
                   json_out: Optional[bool] = JsonOpt) -> None:
    """Register memsql's hooks and MCP server in Claude Code's settings, with this installation's absolute path
    (running it again changes nothing)."""
    from memsql.claude.install import install

    out = _claude_run(lambda: install(_claude_scope(project, user), directory, _config()))
    if _want_json(json_out):
        _emit(out)
        return
    typer.echo(f"hooks ({', '.join(out['hooks'])}) in {out['settings']}")
    typer.echo(f"MCP server memsql in {out['mcp']}")
    typer.echo(f"runs {out['memsql']}" + ("" if out["changed"] else "  (already installed: nothing changed)"))
    typer.echo("check with `memsql claude doctor`; takes effect in the next Claude Code session")
    if _claude_scope(project, user) == "project":
        from memsql.claude.install import project_root

        root, here = project_root(directory), Path(directory or Path.cwd()).resolve()
        if root != here:   # Claude Code reads a project's .claude/ settings in the directory it starts in
            typer.echo(f"note: start `claude` in {root}: started in {here} (or any other subdirectory) Claude Code "
                       "does not read these settings; `memsql claude install --user` works from every directory",
                       err=True)


@claude_app.command("uninstall")
def claude_uninstall(project: bool = _ProjectOpt, user: bool = _UserOpt, directory: Optional[Path] = _DirOpt,
                     json_out: Optional[bool] = JsonOpt) -> None:
    """Remove what `memsql claude install` wrote (other hooks and servers are kept; memories stay)."""
    from memsql.claude.install import uninstall

    out = _claude_run(lambda: uninstall(_claude_scope(project, user), directory))
    if _want_json(json_out):
        _emit(out)
        return
    if not out["changed"]:
        typer.echo(f"nothing to remove in the {out['scope']} scope")
        return
    typer.echo(f"removed: hooks {', '.join(out['hooks_removed']) or 'none'}; MCP server "
               f"{'memsql' if out['mcp_removed'] else 'none'} ({out['scope']} scope)")


@claude_app.command("ingest")
def claude_ingest(directory: Optional[Path] = _DirOpt,
                  user_md: bool = typer.Option(False, "--user-claude-md", help="Also ~/.claude/CLAUDE.md."),
                  namespace: Optional[str] = typer.Option(None, "--namespace", "-n",
                                                          help="Default: the hooks' namespace of the project."),
                  prune: bool = typer.Option(False, "--prune", help="Also archive (restorable) the notes ingested "
                                                                    "before whose files are gone."),
                  json_out: Optional[bool] = JsonOpt) -> None:
    """Ingest Claude Code's own memory of the project, read-only: its CLAUDE.md files and the auto-memory notes
    (~/.claude/projects/<project>/memory/*.md); searchable, never injected (Claude Code loads them itself). Notes
    ingested before whose files are gone are listed (--prune archives them)."""
    from memsql.claude.sources import ingest_sources

    _run(lambda: calls.check_namespace("claude ingest", "namespace", namespace,
                                       default="the hooks' namespace of the project"))
    out = _run(lambda: ingest_sources(_memory(), directory, user_md, namespace, prune))
    summary = out["summary"]
    if _want_json(json_out):
        _emit({"namespace": out["namespace"], "files": out["files"],
               "summary": summary.as_dict() if summary else None})
        return
    if summary is None:
        typer.echo(f"no CLAUDE.md nor auto-memory notes for this project (namespace {out['namespace']})")
        return
    typer.echo(f"{len(out['files'])} files into {out['namespace']}: {summary.inserted} new, {summary.replaced} "
               f"changed, {summary.unchanged} unchanged, {summary.chunks} memories written"
               + (f", {len(summary.failed)} failed" if summary.failed else ""))
    _missing_out(summary.missing)


@claude_app.command("doctor")
def claude_doctor(directory: Optional[Path] = _DirOpt, json_out: Optional[bool] = JsonOpt) -> None:
    """What a Claude Code session here gets: memsql, hooks and MCP registration, server, worker, the last capture
    and what was injected last. Exits 1 when something is wrong."""
    from dataclasses import asdict

    from memsql.claude.install import doctor

    checks = _claude_run(lambda: doctor(directory, _config()))
    if _want_json(json_out):
        _emit([asdict(c) for c in checks])
    else:
        for c in checks:
            typer.echo(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}" + (f"\n     fix: {c.hint}" if c.hint else ""))
            if c.name == "last injection" and c.data.get("preview"):
                typer.echo("     " + c.data["preview"].replace("\n", "\n     ").rstrip())
    raise typer.Exit(0 if all(c.ok for c in checks) else 1)


@app.command()
def hook(event: str = typer.Argument(..., help="Claude Code hook event: SessionStart, UserPromptSubmit, PostToolUse, "
                                                "Stop, PreCompact, SessionEnd.")) -> None:
    """Run a Claude Code hook: the JSON payload on stdin; always exits 0 (problems are logged in
    <memsql home>/claude/hooks.log)."""
    from memsql.claude.hooks import main as hook_main

    raise typer.Exit(hook_main(event))

@config_app.command("show")
def config_show(json_out: Optional[bool] = JsonOpt) -> None:
    """Print every effective setting and where it came from (default, file, variable)."""
    from memsql.config import config_path, load
    from memsql.db import redact

    cfg = _run(lambda: load(flags=dict(_FLAGS)))
    rows = [(k, redact(v) if k == "database.dsn" and v else v, cfg.sources[k]) for k, v in cfg.values.items()]
    if _want_json(json_out):
        _emit({"file": str(config_path()) if config_path() else None,
               "settings": {k: {"value": v, "source": src} for k, v, src in rows},
               "ingest_rules": [r.__dict__ for r in cfg.rules]})
        return
    typer.echo(f"# file: {config_path() or '(none: ./memsql.toml or the user config dir)'}")
    for k, v, src in rows:
        typer.echo(f"{k} = {v!r}    # {src}")
    for r in cfg.rules:
        typer.echo(f"ingest rule: glob={r.glob!r} adapter={r.adapter!r} -> {r.knowledge_type}")


# ---------------------------------------------------------------------------------------------
@db_app.command("start")
def db_start(
    no_worker: bool = typer.Option(False, "--no-worker",
                                   help="Do not start the embedding worker (also: [worker] autostart = false)."),
) -> None:
    """Start the embedded PostgreSQL (data in $MEMSQL_HOME/pgdata) and the embedding worker; both keep running."""

    def go():
        from memsql import server

        return server.embedded_start()

    url = _run(go)
    typer.echo(f"running: {url}")
    pid = _autostart_worker(no_worker)
    if pid is not None:
        typer.echo(f"worker: pid {pid} (log {_worker_log()})")


def _autostart_worker(disabled: bool) -> Optional[int]:
    """Start the worker in the background unless disabled by flag or [worker] autostart; its pid, or None."""
    if disabled:
        return None
    cfg = _run(_config)  # the file, MEMSQL_* variables and --set
    if not cfg.get("worker.autostart"):
        return None
    from memsql import db, worker

    pid = worker.start_background(wait_seconds=5.0)
    # return once it answers: a query sent before its model is loaded would search lexically only
    connected = _run(lambda: worker.wait_connected(db.resolve_dsn(), timeout=15.0))
    if connected is False:
        typer.echo(f"memsql: the worker (pid {pid}) is not connected yet; see {_worker_log()}", err=True)
    elif connected is None:   # a new home: the worker waits for the schema
        typer.echo("memsql: the database is not initialised yet: run `memsql init` (the worker starts serving "
                   "then)", err=True)
    return pid


def _worker_log() -> str:
    from memsql import worker

    return str(worker.log_path())


@db_app.command("stop")
def db_stop() -> None:
    """Stop the embedding worker and the embedded PostgreSQL."""

    def go():
        from memsql import server, worker

        return worker.stop(), server.embedded_stop()

    stopped_worker, stopped = _run(go)
    if stopped_worker:
        typer.echo("worker stopped")
    typer.echo("stopped" if stopped else "not running")


@db_app.command("status")
def db_status(json_out: Optional[bool] = JsonOpt) -> None:
    """Whether the embedded PostgreSQL and the embedding worker run, the data dir and pids."""
    from memsql import db, server, worker

    st = server.embedded_status()
    wpid = worker.running_pid()
    external = os.environ.get("MEMSQL_DSN")
    if _want_json(json_out):
        _emit({"running": st.running, "pgdata": str(st.pgdata), "pid": st.pid, "worker_pid": wpid,
               "external_dsn": db.redact(external) if external else None})
    else:
        typer.echo(f"{'running' if st.running else 'stopped'}  pgdata {st.pgdata}" + (f"  pid {st.pid}" if st.pid else ""))
        typer.echo(f"worker: {'running, pid ' + str(wpid) if wpid else 'stopped'}")
        if external:
            typer.echo(f"note: MEMSQL_DSN is set ({db.redact(external)}); memsql uses that server, not this one")


@db_app.command("url")
def db_url() -> None:
    """Print the connection URI (use it with psql)."""
    from memsql import db, server

    external = os.environ.get("MEMSQL_DSN")
    if external:
        shown = db.without_password(external)
        if shown != external:
            typer.echo("memsql: the password is not printed; psql reads it from ~/.pgpass or PGPASSWORD", err=True)
        typer.echo(shown)
        return
    url = server.embedded_url()
    if url is None:
        _fail(Exception("the embedded PostgreSQL is not running; run `memsql db start`"))
    typer.echo(url)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def psql(
    ctx: typer.Context,
    no_worker: bool = typer.Option(False, "--no-worker", help="Do not start the embedding worker."),
) -> None:
    """Open psql on memsql's database (the server's own psql binary); extra arguments go to psql.

    Starts the embedded server and the embedding worker when needed (unless MEMSQL_DSN points elsewhere).
    -U ROLE connects as that role. The session's TimeZone is UTC, as in every memsql surface: a time written
    without a zone is read as UTC (PGTZ is not used; SET TimeZone in the session to change it).
    """
    import argparse
    import shutil

    def go():
        from memsql import db

        return db.resolve_dsn()

    url = _run(go)
    # psql takes the connection string's user over -U: move -U into the connection string
    users = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    users.add_argument("-U", "--username", dest="user")
    given, rest = users.parse_known_args(ctx.args)
    if given.user:
        from memsql import db

        url = db.with_user(url, given.user)
    tz = os.environ.get("PGTZ")
    if tz and tz.upper() not in ("UTC", "ETC/UTC", "Z"):
        typer.echo(f"memsql: the psql session's TimeZone is UTC, not PGTZ={tz}: memsql reads a time without a zone "
                   "as UTC (SET TimeZone in the session to change it)", err=True)
    os.environ["PGTZ"] = "UTC"
    if not os.environ.get("MEMSQL_DSN"):
        _autostart_worker(no_worker)
    from memsql import server

    binary = server.psql_binary() or shutil.which("psql")
    if binary is None:
        _fail(Exception("no psql binary found; install the PostgreSQL client, or connect with `memsql db url`"))
    sys.stdout.flush()
    os.execv(binary, [binary, url, *rest])


@worker_app.command("run")
def worker_run(
    dsn: Optional[str] = typer.Option(None, "--dsn", help="Database (default: MEMSQL_DSN, else the embedded server)."),
    batch: Optional[int] = typer.Option(None, min=1, max=1024, help="Memories per batch; default [worker] batch."),
) -> None:
    """Run the worker in the foreground (Ctrl-C / SIGTERM stops it); pid in $MEMSQL_HOME/worker.pid."""
    from memsql import worker

    cfg = _run(_config)
    worker.main(dsn=dsn, batch=batch or cfg.get("worker.batch"), threads=cfg.get("worker.threads"))


@worker_app.command("start")
def worker_start(
    dsn: Optional[str] = typer.Option(None, "--dsn", help="Database (default: MEMSQL_DSN, else the embedded server)."),
) -> None:
    """Start the worker in the background (log in $MEMSQL_HOME/worker.log)."""
    from memsql import worker

    pid = worker.start_background(dsn=dsn, wait_seconds=5.0)
    typer.echo(f"worker: pid {pid} (log {worker.log_path()})")


@worker_app.command("stop")
def worker_stop() -> None:
    """Stop the background worker."""
    from memsql import worker

    typer.echo("worker stopped" if worker.stop() else "worker not running")


@worker_app.command("status")
def worker_status(json_out: Optional[bool] = JsonOpt) -> None:
    """Whether the worker runs (pid file), and the backlog it sees when the database is reachable."""
    from memsql import worker

    pid = worker.running_pid()
    out = {"running": pid is not None, "pid": pid, "log": str(worker.log_path())}
    try:
        from memsql import db, server

        with db.connect(db.resolve_dsn(start=False)) as conn:
            cur = conn.execute("SELECT * FROM memsql.worker_status")
            out.update(zip([c.name for c in cur.description], cur.fetchone()))
    except Exception as exc:  # database down or not initialised: the process state is still worth showing
        out["database"] = f"unavailable: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    if _want_json(json_out):
        _emit(out)
    else:
        for key, value in out.items():
            typer.echo(f"{key}: {value}")


# ---------------------------------------------------------------------------------------------
@role_app.command("create")
def role_create(
    name: str = typer.Argument(..., help="Role name (created when missing: LOGIN, no password)."),
    namespace: List[str] = typer.Option(..., "--namespace", "-n", help="Namespace the role may use (repeatable)."),
    json_out: Optional[bool] = JsonOpt,
) -> None:
    """Make a role that reads and writes only its namespaces, even with raw SQL (memsql.role_create, RLS)."""

    def go():
        with _memory() as mem:
            namespaces = []
            for ns in namespace:
                namespaces = mem.role_create(name, ns)
            return namespaces, mem.dsn

    namespaces, dsn = _run(go)
    from memsql import db

    role_dsn = db.with_user(dsn, name)
    if _want_json(json_out):
        _emit({"role": name, "namespaces": namespaces, "dsn": role_dsn})
    else:
        typer.echo(f"role {name}: namespaces {', '.join(namespaces)}")
        typer.echo(f"connect as it: MEMSQL_DSN='{role_dsn}'")


@role_app.command("list")
def role_list(json_out: Optional[bool] = JsonOpt) -> None:
    """Roles made by `memsql role create` and their namespaces."""
    _rows_out(_run(lambda: _memory().roles()), json_out, empty="no restricted roles")


@role_app.command("drop")
def role_drop(
    name: str = typer.Argument(...),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n",
                                            help="Take only this namespace (default: all, and drop the role)."),
    json_out: Optional[bool] = JsonOpt,
) -> None:
    """Take a namespace from a role, or drop the role (memsql.role_drop); its memories stay."""
    n = _run(lambda: _memory().role_drop(name, namespace))
    _emit({"removed": n}) if _want_json(json_out) else typer.echo(f"{n} namespaces removed from {name}")


# ---------------------------------------------------------------------------------------------
# namespaces as a whole

@verb_command("namespace_list")
def namespace_list(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """The namespaces that hold something, with their counts (memsql.namespace_list)."""
    _rows_out(_run(lambda: _memory().namespace_list(**args)), json_out, empty="no namespace holds memories yet")


@verb_command("namespace_rename")
def namespace_rename(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Rename a namespace: documents, memories (ids and versions kept), archive and role grants move."""
    rows = _run(lambda: _memory().namespace_rename(**args))
    if _want_json(json_out):
        _rows_out(rows, json_out)
        return
    typer.echo(f"renamed {args['namespace']} to {args['new_name']}: "
               + ", ".join(f"{r.count} {r.item}" for r in rows))


@verb_command("namespace_drop")
def namespace_drop(args: dict, json_out: Optional[bool] = JsonOpt) -> None:
    """Delete a namespace and everything in it. A dry run by default; --apply --confirm NAME deletes."""
    if args.get("dry_run") is False and args.get("confirm") != args["namespace"]:   # said in this command's words
        from memsql.errors import InvalidArgument

        _fail(InvalidArgument(f"dropping namespace {args['namespace']!r} needs --confirm {args['namespace']}",
                              "run it first without --apply to see what goes; then --apply --confirm NAME"))
    rows = _run(lambda: _memory().namespace_drop(**args))
    if _want_json(json_out):
        _rows_out(rows, json_out)
        return
    counts = ", ".join(f"{r.count} {r.item}" for r in rows)
    if rows and rows[0].applied:
        typer.echo(f"dropped {args['namespace']}: {counts}")
    else:
        typer.echo(f"dry run: dropping {args['namespace']} deletes {counts} (not restorable: `memsql namespace "
                   f"export {args['namespace']} -o FILE` first); run again with --apply --confirm {args['namespace']}")


@verb_command("namespace_export")
def namespace_export(args: dict) -> None:
    """Write a namespace as JSON lines (stdout unless -o); import it with `memsql namespace import`."""
    out = _run(lambda: _memory().namespace_export(**args))
    if out["path"] != "-":
        typer.echo(f"exported {out['namespace']}: {out['documents']} documents, {out['memories']} memories, "
                   f"{out['archive']} archived, {out['lines']} lines, {out['bytes']:,} bytes to {out['path']}",
                   err=True)


@verb_command("namespace_import", sql=False)
def namespace_import(args: dict, json_out: Optional[bool] = JsonOpt,
                     sql: bool = typer.Option(False, "--sql", help="Print the SQL calls (one per batch of lines, "
                                              "to run in one transaction) instead of running them.")) -> None:
    """Import a namespace export into a namespace that holds nothing yet (all or nothing)."""
    if sql:
        from memsql.portability import import_statements

        def show():
            mem = _memory()
            typer.echo("BEGIN;")
            for call in import_statements(functools.partial(mem.statement, "namespace_import"), args["path"],
                                          args.get("namespace")):
                typer.echo(call.render())
            typer.echo("COMMIT;")

        _run(show)
        return
    out = _run(lambda: _memory().namespace_import(**args))
    if _want_json(json_out):
        _emit(out)
        return
    typer.echo(f"imported {out['namespace']}: {out['documents']} documents, {out['memories']} memories, "
               f"{out['archive']} archived, {out['knowledge_types']} new knowledge types"
               + (f", {out['embedded']} embedded" if out["embedded"] else ""))


# ---------------------------------------------------------------------------------------------
def _rank(r: Optional[int]) -> str:
    return "-" if r is None else str(r)


def main() -> None:
    """Console-script entry point (``memsql hook <event>`` goes straight to the hooks: no CLI to build)."""
    if sys.argv[1:2] == ["hook"] and len(sys.argv) == 3 and not sys.argv[2].startswith("-"):
        from memsql.claude.hooks import main as hook_main

        sys.exit(hook_main(sys.argv[2]))
    app()


if __name__ == "__main__":
    main()
