"""docker/: no Docker engine runs here, so check what can be checked: the compose file parses and is wired as
documented, the Dockerfile copies files that exist and runs commands the CLI has, and the init step of the compose
file, run as its command line says, creates memsql's schema in an empty database of the test server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))


def cli_has(args: list[str]) -> bool:
    from typer.main import get_command

    from memsql.cli import app

    command = get_command(app)
    for word in args:
        if word.startswith("-"):
            return word in {o for p in command.params for o in p.opts + p.secondary_opts}
        command = command.commands.get(word) if hasattr(command, "commands") else None
        if command is None:
            return False
    return True


def test_compose_services_are_wired(compose):
    services = compose["services"]
    assert set(services) == {"db", "init", "worker"}
    assert services["db"]["image"].startswith("pgvector/pgvector:pg1")
    assert services["init"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert services["worker"]["depends_on"] == {"init": {"condition": "service_completed_successfully"}}
    build = services["init"]["build"]
    context = (DOCKER / build["context"]).resolve()
    assert context == REPO and (context / build["dockerfile"]).is_file()
    assert services["worker"]["image"] == services["init"]["image"]  # the worker runs the image init built
    for name in ("init", "worker"):
        dsn = services[name]["environment"]["MEMSQL_DSN"]
        assert re.fullmatch(r"postgresql://memsql:\$\{MEMSQL_DB_PASSWORD:-memsql\}@db:5432/memsql", dsn)
        assert cli_has(services[name]["command"]), services[name]["command"]
    env = services["db"]["environment"]
    assert (env["POSTGRES_USER"], env["POSTGRES_DB"]) == ("memsql", "memsql")
    assert "pgdata" in compose["volumes"]


def test_dockerfile_copies_existing_files_and_runs_the_cli():
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    copies = re.findall(r"^COPY\s+(.+?)\s+\S+$", text, flags=re.M)
    sources = [src for line in copies for src in line.split()]
    assert sources == ["pyproject.toml", "README.md", "memsql", "sql"]
    for src in sources:
        assert (REPO / src).exists(), src
    ignore = (DOCKER / "Dockerfile.dockerignore").read_text(encoding="utf-8")
    for src in sources:  # the context keeps what is copied
        assert f"!{src}" in ignore
    entry = json.loads(re.search(r"^ENTRYPOINT\s+(\[.*\])$", text, flags=re.M).group(1))
    cmd = json.loads(re.search(r"^CMD\s+(\[.*\])$", text, flags=re.M).group(1))
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert entry == ["memsql"] and 'memsql = "memsql.cli:main"' in pyproject
    assert cli_has(cmd)
    assert "torch==2.13.0" in text and "MEMSQL_SQL_DIR=/opt/memsql/sql" in text


def test_the_init_step_creates_the_schema_in_an_empty_database(compose, conn, dsn):
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    target = "memsql_docker_init"
    admin = psycopg.connect(dsn, autocommit=True)
    admin.execute(f"DROP DATABASE IF EXISTS {target}")
    admin.execute(f"CREATE DATABASE {target} TEMPLATE template0")
    try:
        empty = psycopg.conninfo.make_conninfo(**{**info, "dbname": target})
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSQL_")}
        env.update(MEMSQL_DSN=empty, MEMSQL_SQL_DIR=str(REPO / "sql"))  # what x-memsql-env sets, here
        # the command of the init service, as the image's ENTRYPOINT (memsql) runs it
        out = subprocess.run([sys.executable, "-m", "memsql.cli", *compose["services"]["init"]["command"]],
                             capture_output=True, text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        assert report["ok"] is True and "dblink" in report["steps"][0]
        latest = max(int(p.name[1:5]) for p in (REPO / "sql" / "migrations").glob("V*.sql"))
        with psycopg.connect(empty, autocommit=True) as c:
            assert c.execute("SELECT max(version) FROM memsql.schema_version").fetchone() == (latest,)
            assert c.execute("SELECT workers_connected, memories_pending, dblink_installed FROM memsql.worker_status"
                             ).fetchone() == (0, 0, True)
        again = subprocess.run([sys.executable, "-m", "memsql.cli", *compose["services"]["init"]["command"]],
                               capture_output=True, text=True, env=env, timeout=300)
        assert again.returncode == 0, again.stderr  # idempotent: compose runs it on every `up`
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {target} WITH (FORCE)")
        admin.close()
