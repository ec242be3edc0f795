"""Smaller CLI and client behaviours, as a user meets them: stdin for `add -`, `tag ID TAG`, --explain that decides,
flag values checked once, psql -U and its TimeZone, --set worker.autostart, a pool on a database without memsql."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from datetime import datetime, timezone

import psycopg
import pytest

from test_cli import REPO, run


def run_in(args, dsn, stdin: bytes, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "MEMSQL_DSN"}
    env.update({"MEMSQL_DSN": dsn, **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], input=stdin, capture_output=True, env=env,
                          timeout=120, cwd=REPO)


def test_add_dash_reads_stdin(dsn, conn):
    text = "The release train leaves every second Tuesday.\nFreeze starts the Friday before."
    out = run_in(["add", "-", "--json"], dsn, (text + "\n").encode())
    assert out.returncode == 0, out.stderr
    mid = json.loads(out.stdout)["memory_id"]
    assert conn.execute("SELECT content FROM memsql.memories WHERE id = %s", (mid,)).fetchone() == (text,)
    updated = run_in(["update", str(mid), "-", "--json"], dsn, "Every third Tuesday now.\n".encode())
    new = json.loads(updated.stdout)["memory_id"]
    assert conn.execute("SELECT content FROM memsql.memories WHERE id = %s", (new,)).fetchone() == \
        ("Every third Tuesday now.",)
    bad = run_in(["add", "-"], dsn, b"caf\xe9 latin-1")
    assert bad.returncode == 1 and b"not UTF-8" in bad.stderr and b"Traceback" not in bad.stderr
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE content = '-'").fetchone() == (0,)


def test_add_refuses_an_argument_that_is_not_utf8_and_drops_a_byte_order_mark(dsn, conn):
    """The text argument is read as strictly as standard input: bytes that are not UTF-8 are refused (they were
    stored as U+FFFD), and a leading byte order mark is dropped, as ingest drops it."""
    before = conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0]
    bad = run_in(["add", b"Caf\xe9 latin-1 argument about herons"], dsn, b"")
    assert bad.returncode == 1 and b"not UTF-8" in bad.stderr and b"Traceback" not in bad.stderr
    assert conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0] == before
    for args, stdin, text in ((["add", "\ufeffHerons nest by the lake.", "--json"], b"", "Herons nest by the lake."),
                              (["add", "-", "--json"], "\ufeffEgrets nest by the river.\n".encode(),
                               "Egrets nest by the river.")):
        out = run_in(args, dsn, stdin)
        assert out.returncode == 0, out.stderr
        mid = json.loads(out.stdout)["memory_id"]
        assert conn.execute("SELECT content FROM memsql.memories WHERE id = %s", (mid,)).fetchone() == (text,)


def test_empty_tags_are_refused_and_blanks_around_a_run_tag_dropped(dsn, conn, tmp_path):
    """An empty tag is refused everywhere (memory_add from SQL and the CLI, ingest --tag), not stored; ingest --tag
    drops the blanks around a tag as front matter's tags are."""
    for tags in (["ok", ""], ["ok", None]):
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT memory_add('A note with a bad tag list.', tags => %s)", (tags,))
        conn.rollback()
        assert info.value.sqlstate == "MS002" and "NULL or empty tag" in info.value.diag.message_primary
    for bad in ("topics => ARRAY['']", "namespace => ''", "namespace => NULL"):
        with pytest.raises(psycopg.Error) as info:
            conn.execute(f"SELECT memory_add('A note with a bad argument.', {bad})")
        conn.rollback()
        assert info.value.sqlstate == "MS002", bad
    cli = run_in(["add", "A note tagged with nothing.", "--tag", ""], dsn, b"")
    assert cli.returncode == 1 and "NULL or empty tag" in cli.stderr.decode() and b"Traceback" not in cli.stderr
    note = tmp_path / "note.md"
    note.write_text("Kingfishers dive for small fish.\n", encoding="utf-8")
    empty = run_in(["ingest", str(note), "-n", "tagcheck", "--tag", ""], dsn, b"")
    assert empty.returncode != 0 and "NULL or empty tag" in (empty.stdout + empty.stderr).decode()
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = 'tagcheck'").fetchone() == (0,)
    spaced = run_in(["ingest", str(note), "-n", "tagcheck", "--tag", " birds "], dsn, b"")
    assert spaced.returncode == 0, spaced.stderr
    assert conn.execute("SELECT tags FROM memsql.memories WHERE namespace = 'tagcheck'").fetchall() == [(["birds"],)]


def test_tag_takes_the_memory_id_and_tags_as_arguments(dsn, conn):
    mid = json.loads(run(["add", "Rotate the API keys each quarter."], dsn).stdout)["memory_id"]
    out = run(["tag", str(mid), "security", "ops", "--json"], dsn)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"changed": 1}
    assert conn.execute("SELECT tags FROM memsql.memories WHERE id = %s", (mid,)).fetchone() == (["ops", "security"],) \
        or sorted(conn.execute("SELECT tags FROM memsql.memories WHERE id = %s", (mid,)).fetchone()[0]) == \
        ["ops", "security"]
    assert run(["tag", "--memory", str(mid), "quarterly", "--json"], dsn).returncode == 0  # -m, then tags
    assert "quarterly" in conn.execute("SELECT tags FROM memsql.memories WHERE id = %s", (mid,)).fetchone()[0]
    wrong = run(["tag", "security"], dsn)
    assert wrong.returncode == 2 and "no memory id" in wrong.stderr


def test_explain_that_would_not_keep_does_not_store(dsn, conn):
    out = run(["add", "ok ok ok, thanks thanks, sure sure", "--explain", "--json"], dsn)  # the filter is off
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert body["memory_id"] is None and body["filter"]["keep"] is False
    assert conn.execute("SELECT count(*) FROM memsql.memories").fetchone() == (0,)
    kept = json.loads(run(["add", "We decided to freeze deploys on Fridays.", "--explain", "--json"], dsn).stdout)
    assert kept["filter"]["keep"] is True and isinstance(kept["memory_id"], int)


@pytest.mark.parametrize("flags, message", [
    (["--knowledge-type", "gossip"], "unknown knowledge_type 'gossip'"),
    (["--language", "klingon"], "unknown language 'klingon'"),
    (["--adapter", "nope"], "unknown adapter 'nope'"),
])
def test_a_bad_flag_value_is_reported_once_not_per_file(dsn, conn, tmp_path, flags, message):
    for i in range(3):
        (tmp_path / f"note{i}.md").write_text(f"# Note {i}\n\nThe fact number {i} about the build.\n")
    out = run(["ingest", str(tmp_path), "--no-json", *flags], dsn)
    assert out.returncode == 1
    assert out.stderr.count(message) == 1 and out.stderr.strip().count("\n") == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert conn.execute("SELECT count(*) FROM memsql.documents").fetchone() == (0,)


@pytest.fixture
def empty_database(dsn):
    """A database on the test server where `memsql init` never ran."""
    name = f"memsql_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield psycopg.conninfo.make_conninfo(dsn, dbname=name)
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_a_pool_on_a_database_without_memsql_fails_at_open(empty_database):
    from memsql import AsyncMemory, Memory
    from memsql.errors import SetupError

    # before: the pool retried in the background and the first call waited 30 s for a PoolTimeout
    with pytest.raises(SetupError, match="memsql init"):
        Memory(dsn=empty_database, pool_size=2)

    async def open_async():
        async with AsyncMemory(dsn=empty_database, pool_size=2):
            pass

    with pytest.raises(SetupError, match="memsql init"):
        asyncio.run(open_async())
    with psycopg.connect(empty_database, autocommit=True) as c:  # pgvector there, the schema not: still refused
        c.execute("CREATE EXTENSION IF NOT EXISTS vector")
    with pytest.raises(SetupError, match="no memsql schema"):
        Memory(dsn=empty_database, pool_size=2)


def test_psql_connects_as_the_role_given_with_U(dsn):
    role = f"reader_{uuid.uuid4().hex[:6]}"
    assert run(["role", "create", role, "-n", "team"], dsn).returncode == 0
    try:
        for flag in (["-U", role], [f"--username={role}"]):
            out = run(["psql", *flag, "-X", "-At", "-c", "SELECT current_user"], dsn)
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == role
    finally:
        run(["role", "drop", role], dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"DROP ROLE IF EXISTS {role}")


def test_a_time_without_a_zone_written_through_psql_is_utc_whatever_pgtz(dsn, conn):
    out = run(["psql", "-X", "-At", "-c", "SELECT memsql.memory_add('Standup moved to 9:30.', "
               "source_date => '2026-03-01 12:00'), current_setting('TimeZone')"], dsn,
              env_extra={"PGTZ": "America/New_York"})
    assert out.returncode == 0, out.stderr
    mid, tz = out.stdout.strip().split("|")
    assert tz == "UTC" and "TimeZone is UTC, not PGTZ=America/New_York" in out.stderr
    stored = conn.execute("SELECT source_date FROM memsql.memories WHERE id = %s", (int(mid),)).fetchone()[0]
    assert stored == datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)


def test_set_worker_autostart_false_is_honoured(tmp_path):
    env = {"MEMSQL_HOME": str(tmp_path / "home")}
    assert run(["init"], env_extra=env).returncode == 0
    try:
        out = run(["--set", "worker.autostart=false", "psql", "-X", "-At", "-c",
                   "SELECT workers_connected FROM worker_status"], env_extra=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "0"
        assert not (tmp_path / "home" / "worker.pid").exists()
        started = run(["--set", "worker.autostart=false", "db", "start"], env_extra=env)
        assert started.returncode == 0 and "worker:" not in started.stdout
        assert not (tmp_path / "home" / "worker.pid").exists()
    finally:
        assert run(["db", "stop"], env_extra=env).returncode == 0
