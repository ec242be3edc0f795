-- memsql schema, version 5: namespaces enforced by Row Level Security for non-owner roles; finite half-lives.
-- Released files are never edited: add V0006__... instead.
--
-- Which namespaces a role may use is a row here, not a setting: a session cannot grant itself another
-- namespace (SET would). The policies themselves (one per table with a namespace column), the group role
-- memsql_namespace_user and its grants are made by memsql.namespace_rls_apply() in
-- sql/functions/60_roles.sql, which every `memsql init` runs again, so a table added by a later migration is
-- covered without editing this file. The owner of the tables (the role that runs `memsql init`) and
-- superusers are not subject to RLS: their plans, and so memory_search's speed, do not change.

CREATE TABLE memsql.role_namespaces (
    namespace   text NOT NULL CHECK (length(namespace) BETWEEN 1 AND 200),
    role_name   text NOT NULL CHECK (length(role_name) BETWEEN 1 AND 63),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, role_name)
);
CREATE INDEX role_namespaces_role ON memsql.role_namespaces (role_name, namespace);
COMMENT ON TABLE memsql.role_namespaces IS
    'Namespaces each restricted role may read and write (Row Level Security on every table with a namespace '
    'column). Written by memsql.role_create / memsql.role_drop; a role reads only its own rows.';

ALTER TABLE memsql.role_namespaces ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON memsql.role_namespaces FOR SELECT USING (role_name = current_user);

-- A half-life of NaN passed the V0001 check (NaN > 0 is true in PostgreSQL, which sorts NaN above every number)
-- and would make every score of its knowledge_type NaN; infinity means "never decays", which NULL already says.
ALTER TABLE memsql.knowledge_types ADD CONSTRAINT knowledge_types_half_life_finite
    CHECK (half_life_days IS NULL OR half_life_days < 'Infinity'::double precision);

-- CJK text has no spaces: the english parser makes one lexeme of a whole run (a Japanese sentence), so a query for
-- a word inside it never matched lexically. Overlapping character bigrams of each CJK run (the CJK bigram method
-- of Lucene's CJKBigramFilter) are added to the lexical representation of memories and queries alike. Memories
-- stored before this version keep their lexemes until they are ingested again.
CREATE FUNCTION memsql.cjk_bigrams(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(array_agg(DISTINCT g.bigram ORDER BY g.bigram), '{}')
    FROM regexp_matches(t, '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+', 'g') AS m(run)
    CROSS JOIN LATERAL generate_series(1, greatest(length(m.run[1]) - 1, 1)) AS i
    CROSS JOIN LATERAL (SELECT substr(m.run[1], i, 2) AS bigram) g
);
COMMENT ON FUNCTION memsql.cjk_bigrams(text) IS
    'Overlapping character bigrams of every run of CJK characters (Hiragana, Katakana, CJK ideographs, Hangul) in a '
    'text; a run of one character gives itself. Args: t text. Returns text[] sorted and distinct, empty for no CJK.';

CREATE OR REPLACE FUNCTION memsql.memory_tsvector(t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT v.base || ts_delete(coalesce(extra.vec, ''::tsvector), tsvector_to_array(v.base))
    FROM (SELECT to_tsvector('memsql.english'::regconfig, t) AS base) v,
         (SELECT string_agg('''' || replace(replace(x, '\', '\\'), '''', '''''') || ''':1', ' ')::tsvector AS vec
          FROM unnest(memsql.tech_terms(t) || memsql.cjk_bigrams(t)) AS x) extra
);
COMMENT ON FUNCTION memsql.memory_tsvector(text) IS
    'tsvector of a text under memsql.english (stemmed, stop words dropped, accents folded) plus its exact '
    'technical tokens (memsql.tech_terms) and CJK character bigrams (memsql.cjk_bigrams) at position 1. '
    'Args: t text. Returns tsvector.';
