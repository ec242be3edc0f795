-- memsql schema, version 10: a memory's tsvector is computed once per row instead of twice.
-- Released files are never edited: add a later version instead.

-- tsv and tsv_len were both stored generated columns, and a generated column cannot read another one, so each
-- evaluated memsql.memory_tsvector(content, ts_config): 0.24 ms per 256-piece chunk, twice, about 40% of the
-- server's CPU for an insert (2,000 SciFact chunks: 1.05 of 2.4 s). They become ordinary columns set by one BEFORE
-- trigger: the tsvector once, its token count from it. DROP EXPRESSION keeps every stored value, so the BM25
-- statistics and postings built from them stay exact.
ALTER TABLE memsql.memories ALTER COLUMN tsv DROP EXPRESSION IF EXISTS,
                            ALTER COLUMN tsv_len DROP EXPRESSION IF EXISTS;

CREATE FUNCTION memsql.memories_lexical() RETURNS trigger
LANGUAGE plpgsql
SET search_path = memsql, public, pg_catalog
AS $$
BEGIN
    NEW.tsv := memsql.memory_tsvector(NEW.content, NEW.ts_config);
    NEW.tsv_len := memsql.tsvector_token_count(NEW.tsv);
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION memsql.memories_lexical() IS
    'Trigger (BEFORE INSERT, or UPDATE of content, ts_config, tsv or tsv_len; per row): sets tsv = '
    'memsql.memory_tsvector(content, ts_config) and tsv_len = memsql.tsvector_token_count(tsv), whatever the '
    'statement wrote there, so the BM25 postings and statistics (statement triggers) always read the memory''s own '
    'lexemes. Source: sql/migrations/V0010__lexical_columns_once.sql.';

CREATE TRIGGER memories_lexical BEFORE INSERT OR UPDATE OF content, ts_config, tsv, tsv_len ON memsql.memories
    FOR EACH ROW EXECUTE FUNCTION memsql.memories_lexical();

COMMENT ON COLUMN memsql.memories.tsv IS
    'Lexemes of content under ts_config plus exact technical tokens and CJK bigrams (memsql.memory_tsvector); set by '
    'the trigger memories_lexical, never by hand. GIN index memories_tsv_gin for ad-hoc @@ queries.';
COMMENT ON COLUMN memsql.memories.tsv_len IS
    'Indexed tokens of tsv (memsql.tsvector_token_count): the BM25 document length; set by the trigger memories_lexical.';

-- The same tsvector as V0004's SQL definition (checked equal on every memory of the development sets, 11,367,
-- and by tests/test_languages.py), in PL/pgSQL: the CJK rewrite and bigrams only for a text with CJK characters,
-- the technical tokens merged only when there are some. 0.18 -> 0.10 ms per memory.
CREATE OR REPLACE FUNCTION memsql.memory_tsvector(t text, cfg regconfig) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$   -- every name qualified: no search_path of its own (a SET clause would cost each call)
DECLARE
    v    tsvector;
    tech text[] := memsql.tech_terms(t);
    cjk  text;
BEGIN
    IF t ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]' THEN
        v := to_tsvector(cfg, regexp_replace(t, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)',
                                             ' \1 ', 'g'));   -- CJK runs apart from latin words
        cjk := memsql.cjk_bigrams(t);
    ELSE
        v := to_tsvector(cfg, t);
    END IF;
    IF cardinality(tech) > 0 THEN   -- exact tokens at position 1, unless the parser already made the same lexeme
        v := v || ts_delete((SELECT string_agg('''' || replace(replace(x, '\', '\\'), '''', '''''') || ''':1', ' ')::tsvector
                             FROM unnest(tech) AS x), tsvector_to_array(v));
    END IF;
    IF cjk IS NOT NULL THEN
        v := v || to_tsvector('pg_catalog.simple'::regconfig, cjk);
    END IF;
    RETURN v;
END
$$;
COMMENT ON FUNCTION memsql.memory_tsvector(text, regconfig) IS
    'tsvector of a text under a text search configuration (stemmed, stop words dropped; memsql.* configurations '
    'fold accents) plus its exact technical tokens (memsql.tech_terms) at position 1 and the character bigrams '
    'of its CJK runs (memsql.cjk_bigrams). Args: t text, cfg regconfig. Returns tsvector. Used by the trigger '
    'memories_lexical (memories.tsv). Source: sql/migrations/V0010__lexical_columns_once.sql (V0004 defined it in SQL).';
