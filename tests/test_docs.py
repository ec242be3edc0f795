"""Generated documentation is current: docs/sql.md (COMMENT ON texts of the migrated test database), docs/config.md
(memsql.config.SCHEMA) and the README's name table (memsql.calls). Regenerate with `python -m memsql.docs`."""

from __future__ import annotations

from memsql import docs

STALE = f"is stale: run `{docs.COMMAND}` and commit the result"


def test_sql_reference_is_current(conn):
    assert docs.SQL_MD.read_text(encoding="utf-8") == docs.sql_reference(conn), f"docs/sql.md {STALE}"


def test_config_reference_is_current():
    assert docs.CONFIG_MD.read_text(encoding="utf-8") == docs.config_reference(), f"docs/config.md {STALE}"


def test_readme_name_table_is_current():
    text = docs.README.read_text(encoding="utf-8")
    assert text == docs.readme_with_name_table(text), f"README.md's name table {STALE}"


def test_every_public_sql_object_is_documented(conn):
    text = docs.sql_reference(conn)
    for name in ("memory_search", "memory_add", "memory_forget", "memory_stats", "memories", "knowledge_types"):
        assert f"### {name}\n" in text
