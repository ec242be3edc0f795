"""How the schema is kept: released migrations frozen (sql/migrations.lock), every function in sql/functions applied in
one transaction (old overloads dropped with it), pg_catalog first in every function's search_path, pgvector in a
schema of its own."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path

import numpy as np
import psycopg
import pytest

from memsql import db
from memsql.errors import SetupError

REPO = Path(__file__).resolve().parents[1]


def test_released_migrations_are_frozen():
    """sql/migrations.lock holds `sha256sum` lines of every migration (check with `cd sql/migrations && sha256sum -c
    ../migrations.lock`): a released migration is applied in lasting databases and is never edited; a change to what
    it created is a new migration, whose line is added to the lock."""
    lock = {}
    for line in (REPO / "sql" / "migrations.lock").read_text(encoding="ascii").splitlines():
        digest, name = line.split(maxsplit=1)
        lock[name] = digest
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (REPO / "sql" / "migrations").glob("*.sql")}
    assert sorted(files) == sorted(lock), "every migration has one line in sql/migrations.lock"
    changed = [name for name, digest in files.items() if lock[name] != digest]
    assert changed == [], "released migrations must not change: write a new migration instead"
    assert len(lock) >= 11


def test_every_function_has_its_current_body_in_sql_functions(conn):
    """Each memsql function is (re)defined by a sql/functions file, so its current body is read in one place."""
    defined = set()
    for path in db.function_files():
        defined |= set(re.findall(r"CREATE OR REPLACE FUNCTION memsql\.(\w+)\(", path.read_text(encoding="ascii")))
    names = {r[0] for r in conn.execute("SELECT proname FROM pg_proc WHERE pronamespace = 'memsql'::regnamespace")}
    assert names - defined == set()
    assert {"stats_after_insert", "memories_lexical", "notify_embedding_backlog", "tech_terms"} <= defined


def test_source_in_a_comment_names_the_file_that_defines_it(conn):
    rows = conn.execute("""
        SELECT p.proname, substring(obj_description(p.oid, 'pg_proc') FROM 'Source: (sql/functions/[0-9A-Za-z_]+[.]sql)')
        FROM pg_proc p WHERE p.pronamespace = 'memsql'::regnamespace""").fetchall()
    named = [(name, src) for name, src in rows if src]
    assert len(named) > 30
    wrong = [(name, src) for name, src in named
             if f"CREATE OR REPLACE FUNCTION memsql.{name}(" not in (REPO / src).read_text(encoding="ascii")]
    assert wrong == []


def test_every_pinned_search_path_starts_with_pg_catalog(conn):
    rows = conn.execute("""
        SELECT p.oid::regprocedure::text, c FROM pg_proc p, unnest(p.proconfig) c
        WHERE p.pronamespace = 'memsql'::regnamespace AND c LIKE 'search_path=%'""").fetchall()
    assert len(rows) >= 39
    assert {c for _, c in rows} == {"search_path=pg_catalog, memsql, public"}


def test_an_object_in_public_does_not_shadow_a_builtin(conn):
    """ln() is in BM25's idf: a public.ln returning 0 would zero every lexical score if public came first."""
    conn.execute("CREATE FUNCTION public.ln(double precision) RETURNS double precision LANGUAGE sql IMMUTABLE "
                 "RETURN 0")
    conn.execute("SELECT memory_add('kiwi lime'), memory_add('kiwi mango'), memory_add('plum')")
    rows = conn.execute("SELECT lexical_score FROM memory_search('lime', '{}', touch => false)").fetchall()
    conn.rollback()
    assert len(rows) == 1 and rows[0][0] > 0.5


def test_functions_of_the_same_name_for_text_arrays_do_not_change_the_lexemes(conn):
    """pg_catalog first in a path does not stop an overload that matches more exactly: public.cardinality(text[]) would
    win over the built-in cardinality(anyarray) (and unnest, array_to_string, array_agg, array_cat likewise).
    memory_tsvector and the helpers it calls name those built-ins as pg_catalog.*, so the lexemes of a memory stay
    what they are, whoever calls it with whatever search_path."""
    text = "Mail ops-team+alerts@db1.example.com when hnsw.ef_search in v2.31.0 breaks CVE-2024-3094; IT knows."
    before = conn.execute("SELECT memsql.memory_tsvector(%s, 'memsql.english')::text", (text,)).fetchone()[0]
    assert "'ef_search'" in before and "'example.com'" in before and "'it'" in before
    query = "SELECT memsql.query_lexemes('hnsw.ef_search breaks for IT'::text)"
    lexemes = conn.execute(query).fetchone()[0]
    assert "hnsw.ef_search" in lexemes and "it" in lexemes, lexemes
    for stmt in ("CREATE FUNCTION public.cardinality(text[]) RETURNS integer LANGUAGE sql IMMUTABLE RETURN 0",
                 "CREATE FUNCTION public.unnest(text[]) RETURNS SETOF text LANGUAGE sql IMMUTABLE "
                 "RETURN 'shadowed'",
                 "CREATE FUNCTION public.array_to_string(text[], text) RETURNS text LANGUAGE sql IMMUTABLE "
                 "RETURN 'shadowed'",
                 "CREATE FUNCTION public.array_length(smallint[], integer) RETURNS integer LANGUAGE sql IMMUTABLE "
                 "RETURN 99",
                 "CREATE FUNCTION public.array_cat(text[], text[]) RETURNS text[] LANGUAGE sql IMMUTABLE "
                 "RETURN '{shadowed}'::text[]",
                 "CREATE FUNCTION public.format(text, text) RETURNS text LANGUAGE sql IMMUTABLE RETURN 'shadowed'",
                 "CREATE FUNCTION public.to_jsonb(bigint) RETURNS jsonb LANGUAGE sql IMMUTABLE RETURN '\"shadowed\"'::jsonb"):
        conn.execute(stmt)
    try:
        for path in ('"$user", public, memsql', "public, memsql, pg_catalog"):
            conn.execute(f"SET LOCAL search_path = {path}")
            assert conn.execute("SELECT memsql.memory_tsvector(%s, 'memsql.english')::text", (text,)).fetchone()[0] \
                == before, path
            mid = conn.execute("SELECT memory_add(%s, namespace => 'shadow')", (text,)).fetchone()[0]
            row = conn.execute("SELECT tsv::text, tsv_len = memsql.tsvector_token_count(tsv) FROM memsql.memories "
                               "WHERE id = %s", (mid,)).fetchone()
            assert row == (before, True), path
            assert conn.execute(query).fetchone()[0] == lexemes, path   # the query side too
            assert mid in [r[0] for r in conn.execute(
                "SELECT memory_id FROM memory_search('ef_search', '{}'::vector[], namespace => 'shadow')")], path
        pack = conn.execute("SELECT memsql.memory_context('shadow', 'ef_search', '{}'::vector[])").fetchone()[0]
        assert pack.startswith("# Memory from memsql (namespace shadow)"), pack   # format(text, text) shadowed
        new = conn.execute("SELECT memory_update(%s, 'ef_search is 64 now', namespace => 'shadow')",
                           (mid,)).fetchone()[0]
        assert conn.execute("SELECT metadata->'revision_of' FROM memsql.memories WHERE id = %s",
                            (new,)).fetchone()[0] == mid   # to_jsonb(bigint) shadowed
    finally:
        conn.rollback()


def _routine(conn, signature: str):
    return conn.execute("SELECT to_regprocedure(%s)", (signature,)).fetchone()[0]


def test_a_signature_change_drops_the_old_overload_in_the_same_transaction(dsn):
    """An overload no file defines any more (here a stand-in for memory_search's previous argument list) is dropped
    by the transaction that applies sql/functions: until it commits other sessions see the old one, after it only
    the new; memory_search exists at every moment."""
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute("CREATE FUNCTION memsql.memory_search(query text) RETURNS integer LANGUAGE sql RETURN 1")
        setup.execute("COMMENT ON FUNCTION memsql.memory_search(text) IS 'an old signature'")
        current = setup.execute("SELECT count(*) FROM pg_proc WHERE proname = 'memory_search'").fetchone()[0]
    assert current == 2
    with psycopg.connect(dsn) as mig, psycopg.connect(dsn, autocommit=True) as other:
        out = db.apply_functions(mig)   # inside mig's open transaction
        assert out["dropped"] == ["memory_search(text)"]
        assert _routine(other, "memsql.memory_search(text)") is not None   # not committed yet: the old one stands
        mig.commit()
        assert _routine(other, "memsql.memory_search(text)") is None
        n = other.execute("SELECT count(*) FROM pg_proc WHERE proname = 'memory_search' "
                          "AND pronamespace = 'memsql'::regnamespace").fetchone()[0]
        assert n == 1
        assert other.execute("SELECT count(*) FROM memsql.memory_search('x', '{}', touch => false)").fetchone() == (0,)


def test_a_changed_result_type_is_dropped_and_created_again(dsn):
    """CREATE OR REPLACE cannot change a result type: the old function is dropped just before the new definition,
    in the same transaction (here memsql.term_idf made to return integer)."""
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute("DROP FUNCTION memsql.term_idf(text[], text)")
        setup.execute("CREATE FUNCTION memsql.term_idf(words text[], namespace text DEFAULT 'default') "
                      "RETURNS integer LANGUAGE sql RETURN 7")
    steps = db.migrate(dsn)
    assert any("dropped term_idf(text[],text)" in s for s in steps), steps
    with psycopg.connect(dsn) as c:
        assert c.execute("SELECT pg_get_function_result('memsql.term_idf(text[], text)'::regprocedure)"
                         ).fetchone()[0].startswith("TABLE(")


def test_stale_overloads_that_depend_on_each_other_are_all_dropped(dsn):
    """An old wrapper whose SQL body calls another old overload (both gone from sql/functions) depends on it: the
    wrapper goes first, then the overload, whatever order the catalog lists them in."""
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute("CREATE FUNCTION memsql.old_inner(x integer, y integer) RETURNS integer LANGUAGE sql RETURN x + y")
        setup.execute("CREATE FUNCTION memsql.old_inner(x integer) RETURNS integer LANGUAGE sql "
                      "RETURN memsql.old_inner(x, 1)")
    with psycopg.connect(dsn) as mig:
        out = db.apply_functions(mig)
        mig.commit()
    assert sorted(out["dropped"]) == ["old_inner(integer)", "old_inner(integer,integer)"]
    with psycopg.connect(dsn) as c:
        assert _routine(c, "memsql.old_inner(integer)") is None and _routine(c, "memsql.old_inner(integer,integer)") is None


def test_a_stale_function_with_dependents_stops_the_migrate_and_changes_nothing(dsn):
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute("CREATE FUNCTION memsql.old_helper() RETURNS integer LANGUAGE sql RETURN 1")
        setup.execute("CREATE VIEW public.uses_old AS SELECT memsql.old_helper() AS x")
    with pytest.raises(SetupError) as info:
        db.migrate(dsn)
    assert "old_helper() is no longer defined in sql/functions" in str(info.value)
    assert "uses_old" in str(info.value)
    with psycopg.connect(dsn) as c:
        assert _routine(c, "memsql.old_helper()") is not None


@pytest.fixture
def bare_database(memsql_server):
    """An empty database on the test server (no extension, no schema), dropped afterwards."""
    name = f"memsql_bare_{uuid.uuid4().hex[:10]}"
    admin_dsn = psycopg.conninfo.make_conninfo(host=memsql_server.host, port=memsql_server.port,
                                               user=memsql_server.user, dbname="postgres",
                                               password=memsql_server.password or None)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE template0")
    yield psycopg.conninfo.make_conninfo(admin_dsn, dbname=name)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_pgvector_in_a_schema_of_its_own(bare_database, embedder):
    """As managed services do: the extensions live in schema `extensions`. memsql init finds them there, creates the
    one missing beside them (dblink, not in public), puts that schema on the database's search_path and in every
    function's, and every verb works."""
    from memsql.client import Memory

    with psycopg.connect(bare_database, autocommit=True) as c:
        c.execute("CREATE SCHEMA extensions")
        for ext in ("vector", "pg_trgm", "unaccent"):
            c.execute(f"CREATE EXTENSION {ext} SCHEMA extensions")
    steps = db.migrate(bare_database)
    assert any('search_path of database' in s and s.endswith("memsql, extensions") for s in steps), steps
    with psycopg.connect(bare_database) as c:
        where = dict(c.execute("SELECT extname, extnamespace::regnamespace::text FROM pg_extension").fetchall())
        assert where["vector"] == "extensions" and where["unaccent"] == "extensions"
        assert where.get("dblink", "extensions") == "extensions"   # where the server has it
        paths = {r[0] for r in c.execute("SELECT DISTINCT cfg FROM pg_proc p, unnest(p.proconfig) cfg "
                                         "WHERE p.pronamespace = 'memsql'::regnamespace AND cfg LIKE 'search_path=%'")}
        assert paths == {"search_path=pg_catalog, memsql, extensions"}
    with Memory(dsn=bare_database, embedder=embedder) as mem:
        ids = [mem.add(t) for t in ("Redis caches the orders API for five minutes.", "Tomatoes need full sun.",
                                    "Blue-green deploys flip the load balancer.")]
        hits = mem.search("which cache do the orders use?", k=2, touch=False)
        assert [h.memory_id for h in hits][:1] == [ids[0]]
        assert hits[0].dense_rank == 1 and hits[0].lexical_rank == 1
        assert mem.tag(memory_id=ids[1], importance=0.9) == 1
        assert [d.memory_id for d in mem.duplicates()] == []
    with psycopg.connect(bare_database) as c:   # from SQL, memsql and pgvector found through the database's path
        db.configure(c)
        q = np.asarray(embedder.embed(["load balancer deploys"])[0])
        rows = c.execute("SELECT memory_id FROM memory_search('load balancer', ARRAY[%s::vector], touch => false)",
                         (q,)).fetchall()
        assert rows[0][0] == ids[2]
