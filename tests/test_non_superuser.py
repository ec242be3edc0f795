"""memsql on a server it does not administer: the database belongs to a role that is not a superuser, pgvector was
created beforehand by a superuser in schema `extensions` (as managed services and most shared servers do). `memsql
init` runs as that owner; its later sessions search from SQL; the errors it meets name what a superuser must do."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import psycopg
import pytest
from psycopg import sql

from memsql import db
from memsql.errors import NAMESPACE_HINT, PermissionDenied, from_psycopg

PASSWORD = "owner-pw-1"


class Owner:
    """A LOGIN role that is not a superuser, the owner of a database of its own (pgvector in schema extensions)."""

    def __init__(self, server, dblink: bool) -> None:
        tag = uuid.uuid4().hex[:10]
        self.role, self.dbname = f"t_owner_{tag}", f"memsql_owner_{tag}"
        self.admin_server = psycopg.conninfo.make_conninfo(host=server.host, port=server.port, user=server.user,
                                                           dbname="postgres", password=server.password or None)
        self.admin = psycopg.conninfo.make_conninfo(self.admin_server, dbname=self.dbname)
        self.dsn = psycopg.conninfo.make_conninfo(self.admin, user=self.role, password=PASSWORD)
        with psycopg.connect(self.admin_server, autocommit=True) as a:
            a.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(sql.Identifier(self.role),
                                                                         sql.Literal(PASSWORD)))
            a.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
                sql.Identifier(self.dbname), sql.Identifier(self.role)))
        with psycopg.connect(self.admin, autocommit=True) as a:   # what the superuser of the trial ran beforehand
            a.execute("CREATE SCHEMA extensions")
            a.execute("CREATE EXTENSION vector SCHEMA extensions")
            if dblink:
                a.execute("CREATE EXTENSION dblink SCHEMA extensions")
            a.execute(sql.SQL("GRANT USAGE ON SCHEMA extensions TO {}").format(sql.Identifier(self.role)))

    def connect(self) -> psycopg.Connection:
        """A new session of the owner, the search_path memsql init gave the database (a cloned database would lack
        it; here it is the database's own)."""
        return db.configure(psycopg.connect(self.dsn, autocommit=True))

    def drop(self) -> None:
        with psycopg.connect(self.admin_server, autocommit=True) as a:
            a.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.dbname)))
            a.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(self.role)))


@pytest.fixture
def owner(memsql_server):
    o = Owner(memsql_server, dblink=False)
    yield o
    o.drop()


@pytest.fixture
def owner_with_dblink(memsql_server):
    o = Owner(memsql_server, dblink=True)
    yield o
    o.drop()


def unit(axis: int) -> np.ndarray:
    v = np.zeros(384, dtype=np.float32)
    v[axis] = 1.0
    return v


def extensions(conn) -> dict[str, str]:
    return dict(conn.execute("SELECT x.extname, n.nspname FROM pg_extension x JOIN pg_namespace n "
                             "ON n.oid = x.extnamespace WHERE x.extname <> 'plpgsql'").fetchall())


def test_init_as_an_owner_that_is_not_a_superuser_goes_on_without_dblink(owner):
    """dblink is untrusted: the owner may not create it. init goes on, says once what that costs and what a superuser
    runs, and puts pg_trgm and unaccent beside pgvector (schema extensions), not in public."""
    steps = db.migrate(owner.dsn)
    assert steps[0] == "extensions: vector, pg_trgm, unaccent in schema extensions", steps
    said = [s for s in steps if "dblink" in s]
    assert len(said) == 1 and said[0].startswith("dblink: not installed, only a superuser may create it"), steps
    assert "lexical arm only" in said[0]
    assert f"a superuser runs in database {owner.dbname}: CREATE EXTENSION dblink SCHEMA extensions" in said[0]
    with owner.connect() as c:
        assert extensions(c) == {"vector": "extensions", "pg_trgm": "extensions", "unaccent": "extensions"}
        assert c.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
        assert c.execute("SELECT dblink_installed FROM memsql.worker_status").fetchone() == (False,)
    assert db.migrate(owner.dsn)[:2] == steps[:2]   # again: the same, nothing new to create


def test_the_owner_searches_from_sql_in_later_sessions(owner_with_dblink, embedder):
    """The functions' SET hnsw.iterative_scan is applied at every call: a new session of the owner, pgvector's library
    not loaded yet, searches with and without query embeddings; and through Python."""
    from memsql.client import Memory

    steps = db.migrate(owner_with_dblink.dsn)   # a function's SET clause of a placeholder refused it before
    assert steps[0] == "extensions: vector, pg_trgm, unaccent, dblink in schema extensions", steps
    with owner_with_dblink.connect() as c:
        ids = [c.execute("SELECT memory_add(%s, %s)", (t, unit(i))).fetchone()[0]
               for i, t in enumerate(("Redis caches the orders API.", "Tomatoes need full sun."))]
    with owner_with_dblink.connect() as c:   # a new session: the vector library is loaded by the call itself
        assert c.execute("SELECT memory_id FROM memory_search('tomatoes', '{}', touch => false)").fetchall() == [
            (ids[1],)]
    with owner_with_dblink.connect() as c:
        rows = c.execute("SELECT memory_id, dense_rank FROM memory_search('which cache', ARRAY[%s::vector], "
                         "touch => false)", (unit(0),)).fetchall()
        assert rows[0] == (ids[0], 1)
    with owner_with_dblink.connect() as c:   # no embedding and no worker: the lexical arm, with a NOTICE
        assert c.execute("SELECT memory_id FROM memory_search('orders', touch => false)").fetchall() == [(ids[0],)]
    with Memory(dsn=owner_with_dblink.dsn, embedder=embedder) as mem:
        mid = mem.add("The deploy freeze starts on Friday at noon.")
        assert mem.search("when does the deploy freeze start?", k=1, touch=False)[0].memory_id == mid


def test_dblink_connstr_reads_the_setting_before_the_servers_settings(owner_with_dblink):
    """unix_socket_directories is readable by superusers and pg_read_all_settings only: the explicit setting is
    returned without reading it, and without the setting a role that is not a superuser gets one clear error."""
    db.migrate(owner_with_dblink.dsn)
    with owner_with_dblink.connect() as c:
        c.execute("SET memsql.dblink_connstr = 'memsql_loopback'")
        assert c.execute("SELECT memsql.dblink_connstr()").fetchone() == ("memsql_loopback",)
        c.execute("RESET memsql.dblink_connstr")
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
            c.execute("SELECT memsql.dblink_connstr()")
        assert "memsql.dblink_connstr is not set" in info.value.diag.message_primary
        assert f"ALTER ROLE {owner_with_dblink.role} IN DATABASE {owner_with_dblink.dbname} SET " \
               "memsql.dblink_connstr" in info.value.diag.message_hint


def _hba_with_password(admin_dsn: str, dbname: str, role: str):
    """pg_hba.conf of the test server with a first line that asks ``role`` for its password on ``dbname`` over the
    socket (dblink refuses a role that is not a superuser a connection that asks none); None when the file is not
    writable here (MEMSQL_TEST_DSN on another machine). Returns (path, the text to put back)."""
    with psycopg.connect(admin_dsn, autocommit=True) as a:
        path = Path(a.execute("SHOW hba_file").fetchone()[0])
        try:
            before = path.read_text()
            path.write_text(f"local {dbname} {role} scram-sha-256\n" + before)   # in place: owner and mode kept
        except OSError:
            return None
        a.execute("SELECT pg_reload_conf()")
    return path, before


def test_sql_search_of_an_owner_that_is_not_a_superuser_gets_query_embeddings(owner_with_dblink, embedder):
    """What docs/security.md tells a superuser to run, run: a dblink_fdw foreign server to this database, the owner's
    user mapping (its password) and its memsql.dblink_connstr; then memory_search from SQL without embeddings gets
    one from the worker, as the owner."""
    import threading

    from memsql.worker import Worker

    o = owner_with_dblink
    db.migrate(o.dsn)
    hba = _hba_with_password(o.admin_server, o.dbname, o.role)
    if hba is None:
        pytest.skip("the test server's pg_hba.conf is not writable from here")
    try:
        info = psycopg.conninfo.conninfo_to_dict(o.dsn)
        with psycopg.connect(o.admin, autocommit=True) as a:   # the superuser's part (docs/security.md)
            a.execute(sql.SQL("CREATE SERVER memsql_loopback FOREIGN DATA WRAPPER dblink_fdw OPTIONS "
                              "(host {}, port {}, dbname {})").format(
                sql.Literal(info["host"]), sql.Literal(str(info.get("port") or 5432)), sql.Literal(o.dbname)))
            a.execute(sql.SQL("GRANT USAGE ON FOREIGN SERVER memsql_loopback TO {}").format(sql.Identifier(o.role)))
            a.execute(sql.SQL("ALTER ROLE {} IN DATABASE {} SET memsql.dblink_connstr = 'memsql_loopback'").format(
                sql.Identifier(o.role), sql.Identifier(o.dbname)))
        with o.connect() as c:   # the owner's own password stays in its user mapping
            c.execute(sql.SQL("CREATE USER MAPPING FOR CURRENT_USER SERVER memsql_loopback OPTIONS (user {}, "
                              "password {})").format(sql.Literal(o.role), sql.Literal(PASSWORD)))
            mid = c.execute("SELECT memory_add('Redis caches the orders API for five minutes.')").fetchone()[0]
        w = Worker(dsn=o.dsn, embedder=embedder, idle_seconds=0.2, threads=None)
        ready = threading.Event()
        t = threading.Thread(target=w.run, kwargs={"ready": ready.set}, daemon=True)
        t.start()
        try:
            assert ready.wait(120), "the worker did not connect"
            with o.connect() as c:
                notices = []
                c.add_notice_handler(lambda d: notices.append(d.message_primary))
                rows = c.execute("SELECT memory_id, dense_rank FROM memory_search('which cache serves the orders?', "
                                 "touch => false)").fetchall()
                assert notices == [] and rows == [(mid, 1)], (notices, rows)
                assert c.execute("SELECT count(*) FROM memsql.query_embedding_cache WHERE embedding IS NOT NULL"
                                 ).fetchone() == (1,)
        finally:
            w.stop()
            t.join(30)
    finally:
        path, before = hba
        path.write_text(before)
        with psycopg.connect(o.admin_server, autocommit=True) as a:
            a.execute("SELECT pg_reload_conf()")


def test_permission_errors_name_the_namespaces_only_for_a_row_rls_kept_out(owner, embedder):
    """42501 is also a missing privilege: an extension, a parameter, creating a role. Their hints say what to do
    about that, not that a role made by memsql role create reads only its namespaces."""
    from memsql.client import Memory

    o = owner
    db.migrate(o.dsn)
    with o.connect() as c:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
            c.execute("CREATE EXTENSION dblink")
        err = from_psycopg(info.value)
        assert isinstance(err, PermissionDenied) and "role_namespaces" not in (err.hint or "")
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as info:
            c.execute("ALTER ROLE CURRENT_USER SET memsql.dblink_connstr = 'memsql_loopback'")
        err = from_psycopg(info.value)
        assert "role_namespaces" not in err.hint and "SET ON PARAMETER" in err.hint
    with Memory(dsn=o.dsn, embedder=embedder) as mem, pytest.raises(PermissionDenied) as denied:
        mem.role_create("t_" + uuid.uuid4().hex[:10], "work")   # `memsql role create` without CREATEROLE
    assert "role_namespaces" not in denied.value.hint and f"ALTER ROLE {o.role} CREATEROLE" in denied.value.hint
    rls = psycopg.errors.lookup("42501")("new row violates row-level security policy for table \"memories\"")
    assert from_psycopg(rls).hint == NAMESPACE_HINT   # the one case it is true (tests/test_isolation.py: for real)
