"""Upgrading memsql: code and schema versions that differ are refused with the command that fixes it, `memsql init`
upgrades in place, and a worker left running from before the upgrade is restarted by it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from memsql import db, worker
from memsql.client import Memory
from memsql.errors import SetupError
from memsql.worker import Worker

REPO = Path(__file__).resolve().parents[1]


def cli(args, dsn, home: Path):
    env = dict(os.environ, MEMSQL_DSN=dsn, MEMSQL_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True, env=env,
                          timeout=180, cwd=REPO)


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def schema_version(dsn: str) -> int:
    with psycopg.connect(dsn) as c:
        return c.execute("SELECT max(version) FROM memsql.schema_version").fetchone()[0]


def test_the_code_knows_its_schema_version():
    newest = max(int(p.name[1:].split("__")[0]) for p in (REPO / "sql" / "migrations").glob("V*__*.sql"))
    assert db.SCHEMA_VERSION == newest > 0
    out = subprocess.run([sys.executable, "-m", "memsql.cli", "--version"], capture_output=True, text=True,
                         cwd=REPO, timeout=60)
    assert out.returncode == 0 and f"schema version {newest}" in out.stdout, out


def test_a_schema_older_than_the_code_is_refused_until_memsql_init(dsn, embedder):
    """The code upgraded, `memsql init` not run yet: every client says which versions differ and what to run
    (a statement of the new code could fail, or write what the old schema silently drops)."""
    with Memory(dsn=dsn, embedder=embedder) as mem:
        mem.add("the release notes of the upgrade")
    with psycopg.connect(dsn) as c:   # the schema as the previous release left it
        c.execute("DELETE FROM memsql.schema_version WHERE version = %s", (db.SCHEMA_VERSION,))
    older = db.SCHEMA_VERSION - 1
    with Memory(dsn=dsn, embedder=embedder) as mem:
        with pytest.raises(SetupError, match=f"has memsql schema version {older}; this memsql needs version "
                                             f"{db.SCHEMA_VERSION}") as err:
            mem.search("release notes")
        assert "run `memsql init`" in err.value.hint
    with pytest.raises(SetupError, match=f"schema version {older}"):
        Memory(dsn=dsn, embedder=embedder, pool_size=2)


def test_a_schema_newer_than_the_code_is_refused_and_init_changes_nothing(dsn, embedder, caplog):
    """An older memsql on a database a newer one upgraded: clients refuse it, `memsql init` refuses before it
    changes anything (no migration, no function replaced), and a worker of that code stops instead of serving."""
    newer = db.SCHEMA_VERSION + 1
    with psycopg.connect(dsn) as c:
        c.execute("INSERT INTO memsql.schema_version (version, description, installed_by) "
                  "VALUES (%s, 'a later release', current_user)", (newer,))
    functions = ("SELECT p.oid::regprocedure::text, p.xmin::text FROM pg_proc p "
                 "WHERE p.pronamespace = 'memsql'::regnamespace ORDER BY 1")
    with psycopg.connect(dsn) as c:
        before = c.execute(functions).fetchall()
    with pytest.raises(SetupError, match=f"has memsql schema version {newer}, newer than this memsql knows "
                                         f"\\({db.SCHEMA_VERSION}\\); nothing was changed"):
        db.migrate(dsn)
    with psycopg.connect(dsn) as c:
        assert c.execute(functions).fetchall() == before
    assert schema_version(dsn) == newer
    with Memory(dsn=dsn, embedder=embedder) as mem, pytest.raises(SetupError, match="never migrated down"):
        mem.stats()

    w = Worker(dsn=dsn, embedder=embedder, idle_seconds=0.2, threads=None)
    t = threading.Thread(target=w.run, daemon=True)
    with caplog.at_level(logging.INFO, logger="memsql"):
        t.start()
        t.join(120)
    assert not t.is_alive(), "the worker kept running on a schema newer than its code"
    assert w.stats.connects == 0
    assert any(f"schema is version {newer}, newer than this worker's code" in r.getMessage() for r in caplog.records)


def test_memsql_init_restarts_a_worker_started_before_the_upgrade(dsn, tmp_path):
    """A worker started by the previous release keeps that release's code (it would never compute what the new
    schema asks for, such as window embeddings): `memsql init` restarts it; a worker of this code is left alone."""
    home = tmp_path / "home"
    old = worker.start_background(home=home, dsn=dsn, wait_seconds=30)
    try:
        wait_for(lambda: worker.running_pid(home) == old, timeout=60)
        assert worker.runs_this_code(old, home)
        worker.pid_path(home).write_text(f"{old}\n")   # what a release before the version in the pid file wrote
        assert not worker.runs_this_code(old, home)

        out = cli(["init", "--json"], dsn, home)
        assert out.returncode == 0, out.stderr
        new = worker.running_pid(home)
        assert new is not None and new != old
        assert any(f"worker: restarted (pid {new})" in s for s in json.loads(out.stdout)["steps"])
        wait_for(lambda: not Path(f"/proc/{old}").exists() or "zombie" in Path(f"/proc/{old}/status").read_text()
                 .lower(), timeout=30)
        assert worker.runs_this_code(new, home)

        again = cli(["init", "--json"], dsn, home)
        assert again.returncode == 0 and "worker: restarted" not in again.stdout
        assert worker.running_pid(home) == new
    finally:
        worker.stop(home)


def test_an_upgrade_lists_a_few_dropped_functions_then_how_many_more():
    assert db._listed(["a(text)", "b(int)"]) == "a(text), b(int)"
    assert db._listed([f"f{i}()" for i in range(40)]) == "f0(), f1(), f2() and 37 more"


def test_functions_of_an_older_memsql_are_refused_by_every_client_until_init(dsn, embedder, tmp_path, monkeypatch):
    """An older memsql's `memsql init` on an upgraded database puts its own functions back under the same schema
    version: this code's clients refuse them (the web server and the hooks too, in one line, nothing served or
    injected) until this memsql's `memsql init` writes its own again."""
    import json
    import socket

    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT memsql.functions_version()").fetchone()[0] == db.SCHEMA_VERSION
    with Memory(dsn=dsn, embedder=embedder) as mem:
        mem.add("The deploy freeze starts on Friday.", namespace=str(tmp_path / "proj"), knowledge_type="principle")
    with psycopg.connect(dsn) as c:   # what an older release's init leaves
        c.execute(f"CREATE OR REPLACE FUNCTION memsql.functions_version() RETURNS integer LANGUAGE sql IMMUTABLE "
                  f"RETURN {db.SCHEMA_VERSION - 1}")
    with Memory(dsn=dsn, embedder=embedder) as mem, \
            pytest.raises(SetupError, match="are those of an older memsql") as err:
        mem.stats()
    assert err.value.hint == "run `memsql init` with this memsql"
    # memsql claude doctor gives the same refusal as a failed check, never raises
    from memsql.claude.install import doctor
    from memsql.config import load

    monkeypatch.setenv("MEMSQL_DSN", dsn)
    (tmp_path / "memsql.toml").write_text("", encoding="utf-8")
    server = next(c for c in doctor(tmp_path, load(path=tmp_path / "memsql.toml", env={"MEMSQL_DSN": dsn}))
                  if c.name == "server")
    assert not server.ok and "are those of an older memsql" in server.detail
    assert server.hint == "run `memsql init` with this memsql"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    served = cli(["serve", "--port", str(port)], dsn, tmp_path / "home")
    assert served.returncode == 1 and "older memsql" in served.stderr, served
    assert "Traceback" not in served.stderr and "memsql serve: http" not in served.stderr

    (tmp_path / "proj" / ".git").mkdir(parents=True)
    env = dict(os.environ, MEMSQL_DSN=dsn, MEMSQL_HOME=str(tmp_path / "home"))
    payload = {"session_id": "s1", "cwd": str(tmp_path / "proj"), "hook_event_name": "SessionStart",
               "source": "startup"}
    hooked = subprocess.run([sys.executable, "-m", "memsql.cli", "hook", "SessionStart"], input=json.dumps(payload),
                            capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert hooked.returncode == 0 and hooked.stdout == "", hooked   # a hook never hurts the session
    assert "older memsql" in (tmp_path / "home" / "claude" / "hooks.log").read_text()

    db.migrate(dsn)
    with Memory(dsn=dsn, embedder=embedder) as mem:
        assert mem.stats()
    hooked = subprocess.run([sys.executable, "-m", "memsql.cli", "hook", "SessionStart"], input=json.dumps(payload),
                            capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert "deploy freeze" in hooked.stdout


def test_memsql_init_of_another_database_leaves_the_homes_worker_alone(dsn, tmp_path):
    """`memsql init` with MEMSQL_DSN naming another database than the one the home's worker serves: that worker is not
    this init's to restart (it was restarted onto the other database)."""
    home = tmp_path / "home"
    elsewhere = dsn + ("&" if "?" in dsn else "?") + "application_name=memsql-worker"   # stands for another database
    old = worker.start_background(home=home, dsn=elsewhere, wait_seconds=30)
    try:
        wait_for(lambda: worker.running_pid(home) == old, timeout=60)
        assert worker.started_for(old) == elsewhere
        worker.pid_path(home).write_text(f"{old}\n")   # a worker of a release before this one
        out = cli(["init", "--json"], dsn, home)
        assert out.returncode == 0, out.stderr
        assert "worker: restarted" not in out.stdout and worker.running_pid(home) == old
    finally:
        worker.stop(home)
