-- Small helpers shared by the search and write functions. CREATE OR REPLACE only.
-- The IMMUTABLE SQL helpers carry no SET clause so the planner can inline them; they call only
-- pg_catalog functions (always searched first) and schema-qualified names.

CREATE OR REPLACE FUNCTION memsql.decay(age_days double precision, half_life_days double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN half_life_days IS NULL THEN 1.0
    ELSE power(0.5, greatest(coalesce(age_days, 0), 0) / half_life_days)
END;
COMMENT ON FUNCTION memsql.decay(double precision, double precision) IS
    'Exponential time decay 0.5 ^ (age_days / half_life_days) in (0, 1]. '
    'Args: age_days (days; negative = future date, clamped to 0; NULL = 0), half_life_days (> 0, NULL = no decay). '
    'Returns 1.0 for no decay or age <= 0, exactly 0.5 at one half-life.';

CREATE OR REPLACE FUNCTION memsql.raise_invalid(message text, hint text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path FROM CURRENT AS $$
BEGIN
    RAISE EXCEPTION '%', message USING ERRCODE = 'MS002', HINT = hint;
END $$;
COMMENT ON FUNCTION memsql.raise_invalid(text, text) IS
    'Raises SQLSTATE MS002 (invalid argument) with the given message and HINT. Internal helper.';

CREATE OR REPLACE FUNCTION memsql.text_search_config(language text) RETURNS regconfig
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT AS $$
DECLARE
    code text := lower(btrim(coalesce(language, '')));
    name text;
    cfg  regconfig;
BEGIN
    IF code = '' THEN
        RETURN 'memsql.english'::regconfig;
    END IF;
    code := split_part(replace(code, '_', '-'), '-', 1);   -- en-US, pt_BR -> en, pt
    name := CASE code
        WHEN 'en' THEN 'english' WHEN 'de' THEN 'german' WHEN 'fr' THEN 'french' WHEN 'es' THEN 'spanish'
        WHEN 'it' THEN 'italian' WHEN 'pt' THEN 'portuguese' WHEN 'nl' THEN 'dutch' WHEN 'sv' THEN 'swedish'
        WHEN 'da' THEN 'danish' WHEN 'no' THEN 'norwegian' WHEN 'nb' THEN 'norwegian' WHEN 'nn' THEN 'norwegian'
        WHEN 'fi' THEN 'finnish' WHEN 'hu' THEN 'hungarian' WHEN 'ro' THEN 'romanian' WHEN 'ru' THEN 'russian'
        WHEN 'tr' THEN 'turkish' WHEN 'el' THEN 'greek' WHEN 'ar' THEN 'arabic' WHEN 'hy' THEN 'armenian'
        WHEN 'eu' THEN 'basque' WHEN 'ca' THEN 'catalan' WHEN 'hi' THEN 'hindi' WHEN 'id' THEN 'indonesian'
        WHEN 'ga' THEN 'irish' WHEN 'lt' THEN 'lithuanian' WHEN 'ne' THEN 'nepali' WHEN 'sr' THEN 'serbian'
        WHEN 'ta' THEN 'tamil' WHEN 'yi' THEN 'yiddish'
        WHEN 'zh' THEN 'simple' WHEN 'ja' THEN 'simple' WHEN 'ko' THEN 'simple'   -- CJK: character bigrams
        ELSE code END;
    IF name = 'simple' THEN
        RETURN 'pg_catalog.simple'::regconfig;
    END IF;
    SELECT c.oid::regconfig INTO cfg FROM pg_catalog.pg_ts_config c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.cfgnamespace
    WHERE n.nspname = 'memsql' AND c.cfgname = name;
    IF cfg IS NULL THEN
        RAISE EXCEPTION 'unknown language %', quote_literal(language)
            USING ERRCODE = 'MS002',
                  HINT = 'Use an ISO 639-1 code (en, de, fr, zh, ...) or one of: simple, ' || (
                      SELECT string_agg(c.cfgname, ', ' ORDER BY c.cfgname) FROM pg_catalog.pg_ts_config c
                      JOIN pg_catalog.pg_namespace n ON n.oid = c.cfgnamespace WHERE n.nspname = 'memsql') || '.';
    END IF;
    RETURN cfg;
END $$;
COMMENT ON FUNCTION memsql.text_search_config(text) IS
    'Text search configuration of a language: an ISO 639-1 code (a region suffix such as en-US is ignored) or a '
    'configuration name (german, french, simple, ...). Args: language text (NULL or '''' = english). Returns '
    'regconfig: memsql.<language> (snowball stemmer with accents folded), pg_catalog.simple for zh/ja/ko and '
    '''simple'' (CJK text is indexed by character bigrams in every configuration). Errors: MS002 unknown language '
    '(the HINT lists the known ones).';

CREATE OR REPLACE FUNCTION memsql.query_lexemes(query text, cfg regconfig) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(array_agg(l ORDER BY l), '{}')
    FROM (
        SELECT unnest(tsvector_to_array(ts_delete(
                   to_tsvector(cfg, regexp_replace(   -- CJK runs apart from latin words, as in memory_tsvector
                       query, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)', ' \1 ', 'g')),
                   tsvector_to_array(to_tsvector(cfg, array_to_string(memsql.tech_terms(query), ' '))))))
        UNION
        SELECT unnest(memsql.tech_terms(query))
        UNION
        SELECT unnest(tsvector_to_array(to_tsvector('pg_catalog.simple'::regconfig, memsql.cjk_bigrams(query))))
    ) AS q(l)
);
COMMENT ON FUNCTION memsql.query_lexemes(text, regconfig) IS
    'Distinct lexemes of a query under a text search configuration: stems (stop words removed), exact technical '
    'tokens (memsql.tech_terms; an exact token replaces the words it is made of) and the character bigrams of its '
    'CJK runs (memsql.cjk_bigrams). Args: query text, cfg regconfig. Returns text[] sorted, empty when the query '
    'holds only stop words or punctuation. Operator characters (& | ! : * quotes) are plain text.';

CREATE OR REPLACE FUNCTION memsql.query_lexemes(query text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN memsql.query_lexemes(query, 'memsql.english'::regconfig);
COMMENT ON FUNCTION memsql.query_lexemes(text) IS
    'Distinct lexemes of a query under memsql.english: english stems (stop words removed, accents folded), exact '
    'technical tokens (memsql.tech_terms; "memory_search" asks for the identifier, not for every note about memory '
    'or search) and CJK character bigrams. Args: query text. Returns text[] sorted, empty when the query holds only '
    'stop words or punctuation. Operator characters (& | ! : * quotes) are plain text.';
