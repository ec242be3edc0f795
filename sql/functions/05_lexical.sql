-- The lexical representation of a text, for memories and queries alike: its lexemes under a text search
-- configuration, its exact technical tokens (the english parser would split them) and the character bigrams of its
-- CJK runs. CREATE OR REPLACE only.
-- These helpers carry no SET clause: the SQL ones are inlined by the planner, the PL/pgSQL one is called per row by
-- the trigger memories_lexical (a SET clause would cost each call). Every name in them is schema-qualified or a
-- pg_catalog built-in.

CREATE OR REPLACE FUNCTION memsql.tsvector_token_count(v tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(v) AS u);
COMMENT ON FUNCTION memsql.tsvector_token_count(tsvector) IS
    'Indexed tokens in a tsvector (sum of position counts; a lexeme without positions counts 1). '
    'Args: v tsvector. Returns integer >= 0. Used as the BM25 document length. Source: sql/functions/05_lexical.sql.';

-- URLs, e-mail addresses, paths, dotted.names, snake_case, camelCase, version strings, C++ / C# / .NET.
CREATE OR REPLACE FUNCTION memsql.tech_terms(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(array_agg(DISTINCT x.term ORDER BY x.term), '{}')
    FROM (
        SELECT rtrim(lower(m[1]), '.,;:!?)]}''"') AS term
        FROM regexp_matches(t,
            '('
            || '[a-z][a-z0-9+.-]*://[^\s<>"''()]+'
            || '|[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+'
            || '|(?:~|\.{1,2})?(?:/[A-Za-z0-9._-]+){2,}/?'
            || '|[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)+'
            || '|[A-Za-z_][A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+'
            || '|[A-Za-z0-9]*_[A-Za-z0-9_]+'
            || '|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*'
            || '|[vV]?[0-9]+(?:\.[0-9]+)+(?:[-+][A-Za-z0-9.]+)?'
            || '|\m[A-Za-z]\+\+|\m[A-Za-z]#|\.NET\M'
            || ')', 'g') AS m
    ) x
    WHERE length(x.term) BETWEEN 2 AND 200 AND x.term !~ '^_+$'
);
COMMENT ON FUNCTION memsql.tech_terms(text) IS
    'Exact technical tokens of a text, lower-cased: URLs, e-mail addresses, file paths, dotted.names, snake_case, '
    'camelCase, version strings, C++/C#/.NET. Args: t text. Returns text[] sorted, distinct, 2..200 chars each. '
    'Source: sql/functions/05_lexical.sql.';

CREATE OR REPLACE FUNCTION memsql.cjk_bigrams(t text) RETURNS text
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
    'text has no CJK character. Used by memory_tsvector and query_lexemes as the CJK lexical fallback. '
    'Source: sql/functions/05_lexical.sql.';

-- The first definition, under memsql.english only (memories carry their own configuration since the languages
-- migration): kept for callers that use it.
CREATE OR REPLACE FUNCTION memsql.memory_tsvector(t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT v.base || ts_delete(coalesce(tech.vec, ''::tsvector), tsvector_to_array(v.base))
    FROM (SELECT to_tsvector('memsql.english'::regconfig, t) AS base) v,
         (SELECT string_agg('''' || replace(replace(x, '\', '\\'), '''', '''''') || ''':1', ' ')::tsvector AS vec
          FROM unnest(memsql.tech_terms(t)) AS x) tech
);
COMMENT ON FUNCTION memsql.memory_tsvector(text) IS
    'tsvector of a text under memsql.english (stemmed, stop words dropped, accents folded) plus its exact '
    'technical tokens (memsql.tech_terms) at position 1. Args: t text. Returns tsvector. '
    'Source: sql/functions/05_lexical.sql.';

-- PL/pgSQL: the CJK rewrite and bigrams only for a text with CJK characters, the technical tokens merged only when
-- there are some (the same tsvector as a plain SQL definition, faster per memory).
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
    'memories_lexical (memories.tsv). Source: sql/functions/05_lexical.sql.';
