"""Namespaces enforced by Row Level Security: a real second role (its own connection, and SET ROLE) reads and writes
only its namespace, with raw SQL and through every memsql function; the owner keeps everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import numpy as np
import psycopg
import pytest

from memsql import db

DIM = 384


def unit(axis: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[axis] = 1.0
    return v


def namespaced_tables(conn) -> list[str]:
    """Every memsql table with a namespace column, from the catalog (tables added later are covered too)."""
    return [r[0] for r in conn.execute("""
        SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'namespace'
        WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          AND NOT a.attisdropped ORDER BY 1""")]


@pytest.fixture
def seeded(conn):
    """Owner data in two namespaces, touching every namespaced table: memories, documents, postings, stats,
    memory_access (a search), archive (a forgetting)."""
    ids = {}
    for ns, axis in (("work", 0), ("home", 1)):
        ids[ns] = conn.execute("SELECT memory_add(%s, %s, %s)", (f"the shared secret of {ns}", unit(axis), ns)).fetchone()[0]
        conn.execute("SELECT memory_add(%s, %s, %s, importance => 0.01)", (f"a faded detail of {ns}", unit(axis + 2), ns))
        conn.execute("SELECT count(*) FROM memory_search('secret', %s::vector[], namespace => %s, touch => true)", ([unit(axis)], ns))
        conn.execute("SELECT count(*) FROM memory_forget(namespace => %s, dry_run => false, importance_threshold => 0.3)",
                     (ns,))
    conn.commit()
    for table in namespaced_tables(conn):
        if table == "role_namespaces":
            continue
        present = {r[0] for r in conn.execute(f"SELECT DISTINCT namespace FROM memsql.{table}")}
        assert present == {"work", "home"}, (table, present)  # the fixture reaches every table
    return ids


@pytest.fixture
def role(conn, dsn):
    """A role made by memsql.role_create for namespace 'work'; (name, its DSN)."""
    name = "t_" + uuid.uuid4().hex[:10]
    assert conn.execute("SELECT memsql.role_create(%s, 'work')", (name,)).fetchone()[0] == ["work"]
    conn.commit()
    yield name, db.with_user(dsn, name)
    conn.rollback()
    conn.execute("SELECT memsql.role_drop(%s)", (name,))
    conn.commit()
    assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (name,)).fetchone()[0] == 0


def connect_as(role_dsn: str) -> psycopg.Connection:
    c = psycopg.connect(role_dsn, autocommit=True)
    c.execute('SET search_path = "$user", public, memsql')  # a cloned test database lacks ALTER DATABASE settings
    return db.configure(c)


def test_every_namespaced_table_has_rls_and_the_policy(conn):
    tables = namespaced_tables(conn)
    assert {"memories", "documents", "archive", "memory_access", "postings", "term_stats", "namespace_stats",
            "role_namespaces"} <= set(tables)
    rows = conn.execute("""
        SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
               array(SELECT p.polname::text FROM pg_policy p WHERE p.polrelid = c.oid ORDER BY 1)
        FROM pg_class c WHERE c.relnamespace = 'memsql'::regnamespace AND c.relname = ANY(%s) ORDER BY 1""",
                        (tables,)).fetchall()
    for relname, rls, forced, policies in rows:
        assert rls and not forced, relname  # not FORCE: the owner is not subject to RLS
        assert policies == (["own_rows"] if relname == "role_namespaces" else ["namespace_isolation"]), relname


def test_no_function_is_security_definer_and_views_run_as_the_invoker(conn):
    definers = conn.execute("SELECT p.oid::regprocedure::text FROM pg_proc p "
                            "WHERE p.pronamespace = 'memsql'::regnamespace AND p.prosecdef").fetchall()
    assert definers == []
    views = conn.execute("SELECT c.relname, coalesce('security_invoker=true' = ANY (c.reloptions), false) FROM pg_class c "
                         "WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind = 'v' ORDER BY 1").fetchall()
    assert len(views) >= 3 and all(inv for _, inv in views), views


def test_role_reads_only_its_namespace_in_every_table(conn, seeded, role):
    name, role_dsn = role
    with connect_as(role_dsn) as rc:
        assert rc.execute("SELECT current_user").fetchone()[0] == name
        for table in namespaced_tables(conn):
            if table == "role_namespaces":
                assert rc.execute("SELECT namespace, role_name FROM memsql.role_namespaces").fetchall() == [("work", name)]
                continue
            mine = rc.execute(f"SELECT count(*) FILTER (WHERE namespace = 'work'), count(*) FILTER "
                              f"(WHERE namespace <> 'work') FROM memsql.{table}").fetchone()
            owner = conn.execute(f"SELECT count(*) FROM memsql.{table} WHERE namespace = 'work'").fetchone()[0]
            assert mine == (owner, 0), table
            assert owner > 0
        # views run as the invoker: no other namespace through them either
        for view in ("memory_stats", "memory_archive_stats"):
            assert {r[0] for r in rc.execute(f"SELECT namespace FROM memsql.{view}")} == {"work"}, view
        # pg_stats would show column values of other namespaces; it hides tables under RLS
        assert rc.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'memsql'").fetchone()[0] == 0
    owner_ns = {r[0] for r in conn.execute("SELECT DISTINCT namespace FROM memsql.memories")}
    assert owner_ns == {"work", "home"}
    assert conn.execute("SELECT row_security_active('memsql.memories')").fetchone()[0] is False


def test_search_and_functions_cannot_reach_another_namespace(conn, seeded, role):
    _, role_dsn = role
    with connect_as(role_dsn) as rc:
        # both arms: the lexical query matches, the dense query is the home memory's own vector
        home = rc.execute("SELECT memory_id FROM memory_search('secret', %s::vector[], namespace => 'home')",
                          ([unit(1)],)).fetchall()
        assert home == []
        work = rc.execute("SELECT memory_id, lexical_rank FROM memory_search('secret', %s::vector[], namespace => 'work', "
                          "touch => false)", ([unit(0)],)).fetchall()
        assert work == [(seeded["work"], 1)]
        # corpus statistics of home read as those of an empty namespace: nothing leaks through idf
        assert rc.execute("SELECT idf FROM term_idf(ARRAY['secret'], 'home')").fetchone() == \
            rc.execute("SELECT idf FROM term_idf(ARRAY['secret'], 'no_such_namespace')").fetchone()
        assert conn.execute("SELECT idf FROM term_idf(ARRAY['secret'], 'home')").fetchone() != \
            conn.execute("SELECT idf FROM term_idf(ARRAY['secret'], 'no_such_namespace')").fetchone()
        with pytest.raises(psycopg.Error) as info:
            rc.execute("SELECT * FROM memory_neighbors(%s, 'home')", (seeded["home"],))
        assert info.value.sqlstate == "MS004"
        with pytest.raises(psycopg.Error) as info:
            rc.execute("SELECT memory_tag(memory_id => %s, namespace => 'home', importance => 1.0)", (seeded["home"],))
        assert info.value.sqlstate == "MS004"
        doc = conn.execute("SELECT document_id FROM memsql.memories WHERE id = %s", (seeded["home"],)).fetchone()[0]
        with pytest.raises(psycopg.Error) as info:
            rc.execute("SELECT delete_document(%s, 'home')", (doc,))
        assert info.value.sqlstate == "MS004"
        assert rc.execute("SELECT count(*) FROM memory_forget(namespace => 'home', dry_run => false, "
                          "score_threshold => 1, importance_threshold => 1)").fetchone()[0] == 0
        archived = [r[0] for r in conn.execute("SELECT id FROM memsql.archive WHERE namespace = 'home'")]
        assert rc.execute("SELECT count(*) FILTER (WHERE restored) FROM memory_restore(%s::bigint[], 'home')",
                          (archived,)).fetchone()[0] == 0
    # nothing of home changed
    assert conn.execute("SELECT count(*), max(importance) FROM memsql.memories WHERE namespace = 'home'").fetchone() == (1, None)
    assert conn.execute("SELECT count(*) FROM memsql.archive WHERE namespace = 'home'").fetchone()[0] == 1
    assert conn.execute("SELECT access_count FROM memsql.memory_access WHERE memory_id = %s",
                        (seeded["home"],)).fetchone()[0] == 1


@pytest.mark.parametrize("statement", [
    "SELECT memory_add('planted in home', namespace => 'home')",
    "INSERT INTO memsql.documents (namespace, source_key, adapter, content_hash, knowledge_type) "
    "VALUES ('home', 'x', 'note', 'h', 'note')",
    "UPDATE memsql.documents SET namespace = 'home' WHERE namespace = 'work'",
    "INSERT INTO memsql.term_stats (namespace, lexeme, df) VALUES ('home', 'zzz', 1)",
    "INSERT INTO memsql.namespace_stats (namespace, doc_count, total_len) VALUES ('elsewhere', 1, 1)",
    "INSERT INTO memsql.role_namespaces (namespace, role_name) VALUES ('home', current_user)",
    "UPDATE memsql.knowledge_types SET half_life_days = 1",
    "SELECT count(*) FROM memsql.query_embedding_cache",  # query texts of every namespace
    "SELECT memsql.role_create(current_user, 'home')",
    "SET ROLE postgres",
    "ALTER TABLE memsql.memories DISABLE ROW LEVEL SECURITY",
])
def test_role_cannot_write_another_namespace_or_widen_its_rights(conn, seeded, role, statement):
    _, role_dsn = role
    before = conn.execute("SELECT (SELECT count(*) FROM memsql.documents WHERE namespace = 'home'), "
                          "(SELECT count(*) FROM memsql.documents WHERE namespace = 'work'), "
                          "(SELECT count(*) FROM memsql.role_namespaces)").fetchone()
    with connect_as(role_dsn) as rc:
        with pytest.raises(psycopg.Error) as info:
            rc.execute(statement)
        assert info.value.sqlstate == "42501", info.value
    after = conn.execute("SELECT (SELECT count(*) FROM memsql.documents WHERE namespace = 'home'), "
                         "(SELECT count(*) FROM memsql.documents WHERE namespace = 'work'), "
                         "(SELECT count(*) FROM memsql.role_namespaces)").fetchone()
    assert after == before


def test_updates_and_deletes_of_other_namespaces_touch_no_row(conn, seeded, role):
    _, role_dsn = role
    with connect_as(role_dsn) as rc:
        assert rc.execute("UPDATE memsql.memories SET importance = 1 WHERE namespace = 'home'").rowcount == 0
        assert rc.execute("DELETE FROM memsql.documents WHERE namespace = 'home'").rowcount == 0
        assert rc.execute("DELETE FROM memsql.memory_access").rowcount == 1  # its own namespace's row only
    assert conn.execute("SELECT namespace FROM memsql.memory_access").fetchall() == [("home",)]
    assert conn.execute("SELECT count(*) FROM memsql.documents WHERE namespace = 'home'").fetchone()[0] == 2


def test_set_role_in_an_owner_session_is_limited_too(conn, seeded, role):
    name, _ = role
    conn.execute(f'SET ROLE "{name}"')
    try:
        assert {r[0] for r in conn.execute("SELECT namespace FROM memsql.memories")} == {"work"}
        assert conn.execute("SELECT count(*) FROM memory_search('secret', NULL, namespace => 'home')").fetchone()[0] == 0
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT memory_add('via set role', namespace => 'home')")
        assert info.value.sqlstate == "42501"
    finally:
        conn.rollback()
        conn.execute("RESET ROLE")
        conn.commit()
    assert {r[0] for r in conn.execute("SELECT namespace FROM memsql.memories")} == {"work", "home"}


def test_python_api_as_the_role_adds_ingests_and_searches_its_namespace(conn, seeded, role, embedder, tmp_path):
    from memsql.client import Memory
    from memsql.errors import PermissionDenied

    _, role_dsn = role
    (tmp_path / "deploys.md").write_text("# Deploys\n\nWe never deploy the billing service on Fridays.\n")
    (tmp_path / "oncall.md").write_text("# On call\n\nThe on-call engineer carries the pager from Monday 9:00.\n")
    with Memory(dsn=role_dsn, namespace="work", embedder=embedder) as mem:
        mid = mem.add("The work VPN needs the hardware token.")
        # COPY FROM is refused under RLS: the rows go by INSERT (both documents in one transaction, one group)
        summary = mem.ingest([tmp_path])
        assert (summary.inserted, summary.chunks, summary.failed) == (2, 2, [])
        assert mem.search("VPN hardware token", k=1)[0].memory_id == mid
        assert "billing" in mem.search("when can billing be deployed", k=1)[0].content
        assert mem.search("secret", namespace="home") == []
        with pytest.raises(PermissionDenied) as info:
            mem.add("planted", namespace="home")
        assert "row-level security" in info.value.message and "memsql.role_namespaces" in info.value.hint
        assert {s.namespace for s in mem.stats()} == {"work"}
    rows = conn.execute("SELECT namespace, count(*) FROM memsql.memories GROUP BY 1 ORDER BY 1").fetchall()
    assert rows == [("home", 1), ("work", 4)]
    assert conn.execute("SELECT count(DISTINCT xmin::text) FROM memsql.documents WHERE namespace = 'work' "
                        "AND adapter = 'markdown'").fetchone()[0] == 1
    health = {r[0]: r[1] for r in conn.execute('SELECT "check", ok FROM memory_health()')}
    assert health["bm25_statistics"] is True  # statistics written under RLS stay exact


def test_role_create_refuses_roles_that_bypass_rls_and_bad_names(conn):
    owner = conn.execute("SELECT current_user").fetchone()[0]
    for args, fragment in [((owner, "work"), "bypasses row level security"), (("", "work"), "role_name"),
                           (("x" * 64, "work"), "role_name"), (("ok_name", ""), "namespace")]:
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT memsql.role_create(%s, %s)", args)
        conn.rollback()
        assert info.value.sqlstate == "MS002" and fragment in info.value.diag.message_primary
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT memsql.role_drop('no_such_role_here')")
    conn.rollback()
    assert info.value.sqlstate == "MS004"


def run(args, dsn):
    env = {k: v for k, v in os.environ.items() if k != "MEMSQL_DSN"}
    env["MEMSQL_DSN"] = dsn
    return subprocess.run([sys.executable, "-m", "memsql.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_role_create_list_drop(dsn, conn):
    name = "c_" + uuid.uuid4().hex[:10]
    made = run(["role", "create", name, "--namespace", "work", "-n", "lab", "--json"], dsn)
    assert made.returncode == 0, made.stderr
    out = json.loads(made.stdout)
    assert out["namespaces"] == ["lab", "work"] and f"user={name}" in out["dsn"]
    try:
        listed = json.loads(run(["role", "list", "--json"], dsn).stdout)
        assert {"role_name": name, "namespaces": ["lab", "work"]} in listed
        assert run(["add", "lab notebook entry", "-n", "lab"], out["dsn"]).returncode == 0
        denied = run(["add", "not mine", "-n", "default"], out["dsn"])
        assert denied.returncode == 1 and "row-level security" in denied.stderr and "Traceback" not in denied.stderr
        assert json.loads(run(["role", "drop", name, "-n", "lab", "--json"], dsn).stdout) == {"removed": 1}
    finally:
        run(["role", "drop", name], dsn)
    assert conn.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (name,)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = 'lab'").fetchone()[0] == 1
