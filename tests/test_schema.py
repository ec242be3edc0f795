"""Schema conventions: every public object documented, keys distributable by namespace, ASCII SQL files."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE_TABLES = {"knowledge_types", "settings", "schema_version",  # small, replicated (Citus reference tables)
                    "query_embedding_cache",  # keyed by query text, the same vector in every namespace (V0006)
                    "role_namespaces"}  # the namespaces of each RLS role, read by every policy (V0005)


def test_every_function_view_and_table_has_a_comment(conn):
    missing = conn.execute("""
        SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p
        WHERE p.pronamespace = 'memsql'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NULL
        UNION ALL
        SELECT c.relkind::text || ' ' || c.relname FROM pg_class c
        WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind IN ('r', 'v', 'm')
          AND c.relname <> 'schema_version' AND obj_description(c.oid, 'pg_class') IS NULL
        ORDER BY 1""").fetchall()
    assert missing == []


def test_every_unique_and_foreign_key_includes_namespace(conn):
    """Citus needs the distribution column in every unique key and in every foreign key between distributed
    tables; foreign keys to reference tables (knowledge_types, settings) are allowed without it."""
    rows = conn.execute("""
        SELECT c.conrelid::regclass::text, c.conname, c.contype, c.confrelid::regclass::text,
               array(SELECT a.attname::text FROM unnest(c.conkey) k JOIN pg_attribute a
                     ON a.attrelid = c.conrelid AND a.attnum = k)
        FROM pg_constraint c
        WHERE c.connamespace = 'memsql'::regnamespace AND c.contype IN ('p', 'u', 'f')
        UNION ALL  -- unique indexes made with CREATE UNIQUE INDEX are no constraints
        SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text, 'i', '-',
               array(SELECT a.attname::text FROM unnest(i.indkey) k JOIN pg_attribute a
                     ON a.attrelid = i.indrelid AND a.attnum = k)
        FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid
        WHERE t.relnamespace = 'memsql'::regnamespace AND i.indisunique
          AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)""").fetchall()
    short = lambda rel: rel.split(".")[-1]  # noqa: E731
    offenders = [
        (rel, name) for rel, name, kind, target, cols in rows
        if short(rel) not in REFERENCE_TABLES
        and not (kind == "f" and short(target) in REFERENCE_TABLES)
        and "namespace" not in cols
    ]
    assert offenders == []
    assert len(rows) >= 8


def test_scaling_doc_distributes_every_table(conn):
    """docs/scaling.md names every memsql table: reference tables as such, all others distributed by namespace."""
    doc = (REPO / "docs" / "scaling.md").read_text(encoding="utf-8")
    tables = [r[0] for r in conn.execute("""
        SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'memsql'::regnamespace AND c.relkind IN ('r', 'p')
          AND c.relname <> 'schema_version' ORDER BY 1""")]
    missing = []
    for t in tables:
        if t in REFERENCE_TABLES:
            ok = f"create_reference_table('memsql.{t}')" in doc
        else:
            ok = f"create_distributed_table('memsql.{t}', 'namespace'" in doc
            has_ns = conn.execute("SELECT 1 FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'namespace'",
                                  (f"memsql.{t}",)).fetchone()
            ok = ok and has_ns is not None
        if not ok:
            missing.append(t)
    assert missing == []


def test_sql_files_are_ascii():
    for path in sorted((REPO / "sql").rglob("*.sql")):
        path.read_text(encoding="ascii")  # raises on any non-ASCII byte


def test_functions_pin_search_path_except_inlinable_helpers(conn):
    unpinned = conn.execute("""
        SELECT p.proname, l.lanname FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
        WHERE p.pronamespace = 'memsql'::regnamespace AND p.proconfig IS NULL
        ORDER BY 1""").fetchall()
    # only SQL-language helpers stay unpinned, so that the planner can inline them (a SET clause prevents
    # inlining); every PL/pgSQL function pins its search_path, pg_catalog first
    # immutable SQL helpers, calling pg_catalog (polymorphic built-ins as pg_catalog.*) and memsql.* only
    assert [name for name, lang in unpinned if lang != "sql"] == []   # memory_tsvector(text, regconfig) pins it too
    assert {name for name, _ in unpinned} >= {"decay", "memory_tsvector", "search_visible"}   # the SQL overload




def test_every_trigger_function_has_its_current_body_in_sql_functions(conn):
    """A trigger's function is defined once where a reader looks: sql/functions (applied after every migrate), not
    "the last migration that touched it"."""
    import re

    defined = set()
    for path in (REPO / "sql" / "functions").glob("*.sql"):
        defined |= set(re.findall(r"CREATE OR REPLACE FUNCTION memsql\.(\w+)\(", path.read_text()))
    used = {r[0] for r in conn.execute("""
        SELECT DISTINCT p.proname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
        JOIN pg_class c ON c.oid = t.tgrelid
        WHERE NOT t.tgisinternal AND c.relnamespace = 'memsql'::regnamespace""")}
    assert used and used <= defined, used - defined
