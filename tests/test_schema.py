"""Schema conventions: every public object documented, keys distributable by namespace, ASCII SQL files."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE_TABLES = {"knowledge_types", "settings", "schema_version",  # small, replicated (Citus reference tables)
                    "query_embedding_cache"}  # keyed by query text, the same vector in every namespace (V0006)


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
    rows = conn.execute("""
        SELECT c.conrelid::regclass::text, c.conname, c.contype,
               array(SELECT a.attname::text FROM unnest(c.conkey) k JOIN pg_attribute a
                     ON a.attrelid = c.conrelid AND a.attnum = k)
        FROM pg_constraint c
        WHERE c.connamespace = 'memsql'::regnamespace AND c.contype IN ('p', 'u', 'f')""").fetchall()
    offenders = [
        (rel, name) for rel, name, kind, cols in rows
        if rel.split(".")[-1] not in REFERENCE_TABLES
        and not (kind == "f" and rel.split(".")[-1] != "memory_access" and cols == ["knowledge_type"])
        and "namespace" not in cols
    ]
    assert offenders == []
    assert len(rows) >= 8


def test_sql_files_are_ascii():
    for path in sorted((REPO / "sql").rglob("*.sql")):
        path.read_text(encoding="ascii")  # raises on any non-ASCII byte


def test_functions_pin_search_path_except_inlinable_helpers(conn):
    unpinned = [r[0] for r in conn.execute("""
        SELECT p.proname FROM pg_proc p
        WHERE p.pronamespace = 'memsql'::regnamespace AND p.proconfig IS NULL
        ORDER BY 1""")]
    # immutable SQL helpers stay unpinned so the planner can inline them; they call pg_catalog only
    assert set(unpinned) <= {"cjk_bigrams", "decay", "memory_tsvector", "query_lexemes", "tech_terms",
                             "tsvector_token_count"}
