-- Languages and CJK text in the lexical arm.
-- 1. Every snowball language PostgreSQL ships gets a memsql.<language> configuration that also folds
--    accents (unaccent before the stemmer), like memsql.english.
-- 2. A memory records the text search configuration of its language (memories.ts_config, default
--    memsql.english); its tsvector is made with that configuration.
-- 3. Chinese, Japanese and Korean runs (written without spaces, or agglutinative) also index their
--    overlapping character bigrams, the usual CJK fallback of lexical engines: the default parser keeps a
--    whole CJK run as one token, which only an identical run would match.
-- The tsvector columns are recomputed and the BM25 statistics and postings rebuilt from them.

DO $$
DECLARE
    lang text;
BEGIN
    FOR lang IN
        SELECT c.cfgname FROM pg_catalog.pg_ts_config c
        JOIN pg_catalog.pg_namespace n ON n.oid = c.cfgnamespace
        WHERE n.nspname = 'pg_catalog' AND c.cfgname NOT IN ('simple', 'english')
          AND EXISTS (SELECT 1 FROM pg_catalog.pg_ts_dict d WHERE d.dictname = c.cfgname || '_stem')
        ORDER BY c.cfgname
    LOOP
        EXECUTE format('CREATE TEXT SEARCH CONFIGURATION memsql.%I (COPY = pg_catalog.%I)', lang, lang);
        EXECUTE format('ALTER TEXT SEARCH CONFIGURATION memsql.%I ALTER MAPPING FOR hword, hword_part, word '
                       'WITH unaccent, %I', lang, lang || '_stem');
        EXECUTE format('COMMENT ON TEXT SEARCH CONFIGURATION memsql.%I IS %L', lang,
                       'pg_catalog.' || lang || ' with accents folded (unaccent) before the ' || lang
                       || ' stemmer; memories declaring this language are indexed with it.');
    END LOOP;
END $$;

-- Overlapping character bigrams of the CJK runs of a text (a one-character run gives itself), space-separated.
CREATE FUNCTION memsql.cjk_bigrams(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT string_agg(CASE WHEN length(r.run) = 1 THEN r.run
                           ELSE (SELECT string_agg(substr(r.run, i, 2), ' ' ORDER BY i)
                                 FROM generate_series(1, length(r.run) - 1) AS i) END, ' ')
    FROM regexp_matches(t, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+', 'g') AS m(a),
         LATERAL (SELECT m.a[1] AS run) r
);
COMMENT ON FUNCTION memsql.cjk_bigrams(text) IS
    'Overlapping character bigrams of every run of CJK characters (Hiragana, Katakana, CJK ideographs, Hangul) '
    'in a text, space-separated; a one-character run gives itself. Args: t text. Returns text, NULL when the '
    'text has no CJK character. Used by memory_tsvector and query_lexemes as the CJK lexical fallback.';

-- The lexical representation of a text under a configuration: its lexemes, its exact technical tokens
-- (memsql.tech_terms) and its CJK bigrams.
CREATE FUNCTION memsql.memory_tsvector(t text, cfg regconfig) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT v.base || ts_delete(coalesce(tech.vec, ''::tsvector), tsvector_to_array(v.base))
           || coalesce(to_tsvector('pg_catalog.simple'::regconfig, memsql.cjk_bigrams(t)), ''::tsvector)
    FROM (SELECT to_tsvector(cfg, regexp_replace(t, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)',
                                                 ' \1 ', 'g')) AS base) v,   -- CJK runs apart from latin words
         (SELECT string_agg('''' || replace(replace(x, '\', '\\'), '''', '''''') || ''':1', ' ')::tsvector AS vec
          FROM unnest(memsql.tech_terms(t)) AS x) tech
);
COMMENT ON FUNCTION memsql.memory_tsvector(text, regconfig) IS
    'tsvector of a text under a text search configuration (stemmed, stop words dropped; memsql.* configurations '
    'fold accents) plus its exact technical tokens (memsql.tech_terms) at position 1 and the character bigrams '
    'of its CJK runs (memsql.cjk_bigrams). Args: t text, cfg regconfig. Returns tsvector.';

-- The tsvector columns follow the memory's configuration: drop and add them again (the table is rewritten
-- once and every row recomputed; ALTER COLUMN ... SET EXPRESSION would need PostgreSQL 17).
-- Vectors inline: a row with content, tsvector and a 1.5 kB vector passes the 2 kB TOAST threshold and the
-- vector (the largest value) went to the TOAST table, so every exact distance paid a TOAST lookup (an exact
-- scan of a 419-memory namespace: 0.75 -> 0.42 ms). MAIN keeps it in the row and moves content and tsvector
-- out first. Set before the rewrite below, which stores every row again.
ALTER TABLE memsql.memories ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE memsql.memories ADD COLUMN ts_config regconfig NOT NULL DEFAULT 'memsql.english';
COMMENT ON COLUMN memsql.memories.ts_config IS
    'Text search configuration of the memory''s language (memsql.text_search_config maps ISO codes and names); '
    'its tsvector is made with it and memory_search searches the query in every configuration of the namespace.';
DROP INDEX memsql.memories_tsv_gin;
ALTER TABLE memsql.memories DROP COLUMN tsv_len, DROP COLUMN tsv;
ALTER TABLE memsql.memories
    ADD COLUMN tsv tsvector GENERATED ALWAYS AS (memsql.memory_tsvector(content, ts_config)) STORED,
    ADD COLUMN tsv_len integer GENERATED ALWAYS AS
        (memsql.tsvector_token_count(memsql.memory_tsvector(content, ts_config))) STORED;
CREATE INDEX memories_tsv_gin ON memsql.memories USING gin (tsv);
-- the configurations present in a namespace, read by a loose index scan in memory_search
CREATE INDEX memories_ts_config ON memsql.memories (namespace, ts_config);

ALTER TABLE memsql.archive ADD COLUMN ts_config regconfig NOT NULL DEFAULT 'memsql.english';
COMMENT ON COLUMN memsql.archive.ts_config IS 'The archived memory''s text search configuration, restored with it.';

-- BM25 statistics and postings from the recomputed tsvectors.
TRUNCATE memsql.postings, memsql.term_stats, memsql.namespace_stats;
INSERT INTO memsql.namespace_stats (namespace, doc_count, total_len)
SELECT m.namespace, count(*), sum(m.tsv_len) FROM memsql.memories m GROUP BY m.namespace;
INSERT INTO memsql.term_stats (namespace, lexeme, df)
SELECT m.namespace, u.lexeme, count(*) FROM memsql.memories m CROSS JOIN LATERAL unnest(m.tsv) AS u
GROUP BY m.namespace, u.lexeme;
INSERT INTO memsql.postings (namespace, lexeme, memory_id, tf, doc_len)
SELECT m.namespace, u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.tsv_len
FROM memsql.memories m CROSS JOIN LATERAL unnest(m.tsv) AS u;

-- memory_add gains a language argument (sql/functions/30_write.sql creates the new signature).
DROP FUNCTION IF EXISTS memsql.memory_add(text, vector, text, text, real, text[], jsonb, timestamptz, text);
