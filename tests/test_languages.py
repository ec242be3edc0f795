"""Languages in the lexical arm: memories declare a text search configuration, the query is searched under every
configuration of the namespace, CJK text is indexed by character bigrams. Lexical-only searches (no embedding)
so that each assertion is about the lexical arm alone."""

from __future__ import annotations

import pytest

from memsql.errors import InvalidArgument, from_psycopg


def lexical(conn, query, namespace="default"):
    return [r[0] for r in conn.execute(
        "SELECT memory_id FROM memory_search(%s, NULL, namespace => %s, touch => false, memory_rerank => false)",
        (query, namespace))]


def add(conn, text, language=None, namespace="default"):
    return conn.execute("SELECT memory_add(%s, namespace => %s, language => %s)",
                        (text, namespace, language)).fetchone()[0]


@pytest.mark.parametrize("code, config", [
    (None, "memsql.english"), ("", "memsql.english"), ("en", "memsql.english"), ("en-US", "memsql.english"),
    ("de", "memsql.german"), ("pt_BR", "memsql.portuguese"), ("French", "memsql.french"),
    ("zh", "simple"), ("ja", "simple"), ("simple", "simple"),
])
def test_text_search_config_maps_codes_and_names(conn, code, config):
    assert conn.execute("SELECT memsql.text_search_config(%s)::text", (code,)).fetchone()[0] == config


def test_unknown_language_is_a_clear_error_and_writes_nothing(conn):
    with pytest.raises(Exception) as info:
        add(conn, "Ein Satz.", language="klingon")
    err = from_psycopg(info.value)
    assert isinstance(err, InvalidArgument) and "klingon" in str(err) and "german" in str(err)
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM memsql.memories").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM memsql.documents").fetchone()[0] == 0


def test_german_memory_is_stemmed_and_accent_folded_in_german(conn):
    de = add(conn, "Die Häuser am Fluss wurden im Sommer renoviert.", language="de")
    assert conn.execute("SELECT ts_config::text FROM memsql.memories WHERE id = %s", (de,)).fetchone()[0] \
        == "memsql.german"
    assert lexical(conn, "Haus") == [de]           # Häuser -> haus under the german stemmer
    assert lexical(conn, "hauser") == [de]         # accents folded before stemming


def test_english_stemming_would_miss_it(conn):
    add(conn, "Die Häuser am Fluss wurden im Sommer renoviert.")   # declared english (the default)
    assert lexical(conn, "Haus") == []


def test_query_is_searched_in_every_configuration_of_the_namespace(conn):
    en = add(conn, "The houses by the river were renovated in summer.")
    de = add(conn, "Die Häuser am Fluss wurden im Sommer renoviert.", language="de")
    assert set(lexical(conn, "Haus house")) == {en, de}
    assert lexical(conn, "houses") == [en]
    assert lexical(conn, "Häusern") == [de]
    # another namespace with english only: the german configuration is not consulted there
    other = add(conn, "Häuser", namespace="other")
    assert lexical(conn, "Haus", namespace="other") == []
    assert lexical(conn, "Häuser", namespace="other") == [other]


def test_chinese_text_is_found_by_a_word_inside_a_sentence(conn):
    cache = add(conn, "我们决定使用Redis作为缓存，过期时间五分钟。", language="zh")
    other = add(conn, "今天的会议讨论了预算和招聘计划。", language="zh")
    assert lexical(conn, "缓存") == [cache]          # a two-character word inside a run without spaces
    assert lexical(conn, "预算") == [other]
    assert lexical(conn, "Redis") == [cache]        # the latin word inside the CJK run is a word of its own
    assert lexical(conn, "天气") == []


def test_cjk_bigrams_work_in_the_default_configuration_too(conn):
    ko = add(conn, "우리는 캐시를 사용한다")                      # Korean, declared english
    ja = add(conn, "キャッシュの有効期限は五分です")             # Japanese, declared english
    assert lexical(conn, "캐시") == [ko]               # the particle 를 does not hide the noun
    assert lexical(conn, "有効期限") == [ja]
    assert conn.execute("SELECT memsql.cjk_bigrams('ab 缓存器 x 我')").fetchone()[0] == "缓存 存器 我"
    assert conn.execute("SELECT memsql.cjk_bigrams('no cjk here')").fetchone()[0] is None


def test_forget_and_restore_keep_the_language(conn):
    de = add(conn, "Die Häuser am Fluss wurden im Sommer renoviert.", language="de")
    conn.execute("UPDATE memsql.memories SET importance = 0.05 WHERE id = %s", (de,))
    archived = conn.execute("SELECT count(*) FROM memory_forget(namespace => 'default', dry_run => false)").fetchone()[0]
    assert archived == 1 and lexical(conn, "Haus") == []
    assert conn.execute("SELECT ts_config::text FROM memsql.archive WHERE id = %s", (de,)).fetchone()[0] \
        == "memsql.german"
    conn.execute("SELECT * FROM memory_restore(ARRAY[%s]::bigint[], namespace => 'default')", (de,))
    assert lexical(conn, "Haus") == [de]


def test_ingest_takes_the_language_from_front_matter_or_the_flag(memory, tmp_path):
    (tmp_path / "de.md").write_text("---\nlanguage: de\n---\n# Notiz\n\nDie Häuser am Fluss wurden renoviert.\n",
                                    encoding="utf-8")
    (tmp_path / "fr.md").write_text("# Note\n\nLes maisons près de la rivière ont été rénovées.\n", encoding="utf-8")
    summary = memory.ingest([tmp_path / "de.md"], namespace="lang")
    assert summary.inserted == 1
    summary = memory.ingest([tmp_path / "fr.md"], namespace="lang", language="fr")
    assert summary.inserted == 1
    rows = dict(memory.conn.execute(
        "SELECT d.source_uri LIKE '%%de.md', m.ts_config::text FROM memsql.memories m "
        "JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id WHERE m.namespace = 'lang'"
    ).fetchall())
    assert rows == {True: "memsql.german", False: "memsql.french"}
    hits = memory.search("maison", namespace="lang", query_embeddings=[], touch=False)
    assert len(hits) == 1 and "maisons" in hits[0].content   # maison = maisons only under the french stemmer


def test_unknown_language_in_front_matter_fails_that_document_only(memory, tmp_path):
    (tmp_path / "bad.md").write_text("---\nlanguage: klingon\n---\nQapla.\n", encoding="utf-8")
    (tmp_path / "good.md").write_text("A good note about caches.\n", encoding="utf-8")
    summary = memory.ingest([tmp_path / "bad.md", tmp_path / "good.md"], namespace="lang2")
    assert summary.inserted == 1 and len(summary.failed) == 1
    assert "klingon" in summary.failed[0][1]
    assert memory.conn.execute("SELECT count(*) FROM memsql.documents WHERE namespace = 'lang2'").fetchone()[0] == 1


V0004_MEMORY_TSVECTOR = r"""
    SELECT v.base || ts_delete(coalesce(tech.vec, ''::tsvector), tsvector_to_array(v.base))
           || coalesce(to_tsvector('pg_catalog.simple'::regconfig, memsql.cjk_bigrams(%(t)s)), ''::tsvector)
    FROM (SELECT to_tsvector(%(cfg)s::regconfig, regexp_replace(%(t)s,
              '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)', ' \1 ', 'g')) AS base) v,
         (SELECT string_agg('''' || replace(replace(x, '\', '\\'), '''', '''''') || ''':1', ' ')::tsvector AS vec
          FROM unnest(memsql.tech_terms(%(t)s)) AS x) tech"""


@pytest.mark.parametrize("text, cfg", [
    ("The cache TTL is five minutes; we chose Redis.", "memsql.english"),
    ("Call memory_search() in v1.2.3-rc1, see https://example.org/a_b?x=1 or mail ops@example.com", "memsql.english"),
    ("camelCase and snake_case in src/memsql/api.py with C++ and C# and .NET", "memsql.english"),
    ("O'Reilly's path C:\\temp\\x and 'quoted' \"words\"", "memsql.english"),
    ("Wir frieren die Deployments im Dezember ein, Größe über alles", "memsql.german"),
    ("我们决定使用Redis作为缓存 and the TTL", "memsql.english"),
    ("東京の天気は晴れです", "simple"),
    ("캐시는 레디스를 사용합니다 v2.0", "memsql.english"),
    ("the of and", "memsql.english"),
    ("ΤΟ ΚΑΦΕΝΕΙΟ ΤΟΥ ΣΙΣΥΦΟΥ ΚΑΙ Ο ΒΡΑΧΟΣ", "memsql.greek"),
    ("Plain words, no hosts: e.g. this", "memsql.english"),
    ("Patch CVE-2024-3094, set hnsw.ef_search, call compute_backoff_delay, pin v2.31.0", "memsql.english"),
    ("Reverted c7f3e21a9b8d4e5f60718293a4b5c6d7e8f90123 on 2024-03-01 (IL-6, x -5)", "memsql.english"),
])
def test_memory_tsvector_differs_from_the_v0004_definition_only_where_a_migration_lexed_again(conn, text, cfg):
    """V0010 rewrote memory_tsvector in PL/pgSQL for speed, V0027 added the parts of hosts and addresses and the
    case folding of memsql.lexical_fold, V0031 the other forms of technical tokens (memsql.lexical_variants) and
    the acronyms that are stop words in lower case (memsql.capital_stop_words): a text
    that neither lexed again (their WHERE clauses) keeps exactly the tsvector of V0004's SQL definition (older
    memories' stored tsvectors and BM25 postings were built with that); one they did gains lexemes and loses none."""
    import re

    from memsql.db import SQL_DIR

    relex = [p for name in ("V0027__lexical_parts_and_case_fold.sql", "V0031__lexical_variants.sql")
             for p in re.findall(r"m\.content ~ '([^']+)'",
                                 (SQL_DIR / "migrations" / name).read_text(encoding="utf-8"))]
    assert len(relex) == 3
    old = conn.execute(V0004_MEMORY_TSVECTOR, {"t": text, "cfg": cfg}).fetchone()[0]
    new = conn.execute("SELECT memsql.memory_tsvector(%s, %s::regconfig)", (text, cfg)).fetchone()[0]
    lexed_again = any(conn.execute("SELECT %s ~ %s", (text, p)).fetchone()[0] for p in relex)
    if not lexed_again:
        assert new == old
    else:
        old_lexemes, new_lexemes = conn.execute("SELECT tsvector_to_array(%s::tsvector), tsvector_to_array(%s::tsvector)",
                                                (old, new)).fetchone()
        assert set(old_lexemes) <= set(new_lexemes)


def test_tsv_is_set_once_by_the_trigger_whatever_is_written(conn):
    mid = add(conn, "Redis caches sessions; memory_search merges RRF ranks")
    tsv, tsv_len, expected = conn.execute(
        "SELECT tsv::text, tsv_len, memsql.memory_tsvector(content, ts_config)::text FROM memsql.memories WHERE id = %s",
        (mid,)).fetchone()
    assert tsv == expected and "'memory_search':" in tsv
    assert tsv_len == conn.execute("SELECT memsql.tsvector_token_count(%s::tsvector)", (expected,)).fetchone()[0] > 0
    # a hand-written tsvector does not stick: the postings and statistics keep matching the memory's own lexemes
    conn.execute("UPDATE memsql.memories SET tsv = 'bogus', tsv_len = 99 WHERE id = %s", (mid,))
    assert conn.execute("SELECT tsv::text, tsv_len FROM memsql.memories WHERE id = %s", (mid,)).fetchone() == \
        (expected, tsv_len)
    conn.rollback()


def test_the_configured_language_applies_to_add_and_ingest_that_name_none(dsn, embedder, tmp_path):
    """[memory.lexical] language: a German user sets it once instead of passing the language to every call; a
    language given (argument or front matter) still wins."""
    from memsql.client import Memory
    from memsql.config import load

    (tmp_path / "memsql.toml").write_text('[memory.lexical]\nlanguage = "de"\n', encoding="utf-8")
    config = load(path=tmp_path / "memsql.toml", env={})
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "bruecken.md").write_text("Die Brücken der Stadt werden im Winter gesperrt.\n",
                                                    encoding="utf-8")
    (tmp_path / "notes" / "english.md").write_text("---\nlanguage: en\n---\nThe bridges close in winter.\n",
                                                   encoding="utf-8")
    with Memory(dsn=dsn, embedder=embedder, config=config) as mem:
        added = mem.add("Wir frieren die Deployments im Dezember ein.", namespace="de")
        explicit = mem.add("We freeze deployments in December.", namespace="de", language="en")
        mem.ingest([tmp_path / "notes"], namespace="de")
        configs = dict(mem.conn.execute(
            "SELECT coalesce(d.source_uri, m.content), m.ts_config::text FROM memsql.memories m "
            "JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id "
            "WHERE m.namespace = 'de'").fetchall())
        ids = dict(mem.conn.execute("SELECT ts_config::text, id FROM memsql.memories WHERE id IN (%s, %s)",
                                    (added, explicit)).fetchall())
        # the German stemmer: "Brücke" finds "Brücken" lexically
        hit = mem.conn.execute("SELECT memory_id FROM memsql.memory_search('Brücke', '{}'::vector[], namespace => 'de', "
                               "touch => false)").fetchone()
        bruecken = mem.conn.execute("SELECT id FROM memsql.memories WHERE namespace = 'de' AND content LIKE "
                                    "'Die Brücken%'").fetchone()[0]
    assert ids == {"memsql.german": added, "memsql.english": explicit}
    by_file = {k.rsplit("/", 1)[-1]: v for k, v in configs.items() if k.endswith(".md")}
    assert by_file == {"bruecken.md": "memsql.german", "english.md": "memsql.english"}
    assert hit is not None and hit[0] == bruecken
