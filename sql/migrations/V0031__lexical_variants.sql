-- memsql schema, version 31: technical tokens are found by the other forms people type. A memory's lexemes gain,
-- beside its exact technical tokens, the runs of two parts or more of its dotted and snake_case identifiers
-- (ef_search finds hnsw.ef_search, compute_backoff finds compute_backoff_delay), its versions without their v
-- (2.31.0 finds v2.31.0), the numbers after a hyphen inside a token (3094 finds CVE-2024-3094: the parser reads
-- '-3094', a signed number), the short forms of its full commit hashes (c7f3e21 finds the 40-digit hash) and
-- its acronyms that are stop words in lower case (IT, US: memsql.capital_stop_words).
-- The memories whose tsvector changes are lexed again here, with their BM25 postings and statistics. A piece of a
-- split conversation message keeps its bm25_len (the message's length as the ingest counted it). The bodies below
-- are those this version released; sql/functions/05_lexical.sql holds the current ones (applied after every
-- migrate). Released files are never edited: add a later version instead.

-- The short forms of the full commit hashes of a text: git shows 7 to 12 digits.
CREATE OR REPLACE FUNCTION memsql.hash_prefixes(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY(SELECT substr(lower(m[1]), 1, n)
             FROM regexp_matches(t, '\m([0-9a-fA-F]{40})\M', 'g') AS m, generate_series(7, 12) AS n);
COMMENT ON FUNCTION memsql.hash_prefixes(text) IS
    'The 7- to 12-digit prefixes (lower-cased) of every 40-digit hexadecimal commit hash in a text, in order; empty '
    'when it has none. Args: t text. Returns text[]. Used by lexical_variants (memories) and query_lexemes (queries), '
    'so a short hash finds the full one and the reverse. Source: sql/functions/05_lexical.sql.';

-- Other forms a technical token is searched by, indexed beside it: the parts of an identifier, a version without
-- its v, the number after a hyphen (the parser reads a sign: '-3094'), the short forms of a commit hash.
CREATE OR REPLACE FUNCTION memsql.lexical_variants(t text, tech text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(array_agg(DISTINCT v.term ORDER BY v.term), '{}')
    FROM (
        -- the runs of two parts or more of a dotted or snake_case identifier: ef_search of hnsw.ef_search
        SELECT ltrim(array_to_string(p.pieces[i:j], ''), '._') AS term
        FROM unnest(tech) AS x(term)
        CROSS JOIN LATERAL (SELECT ARRAY(SELECT m[1] FROM regexp_matches(x.term, '[._]?[a-z0-9]+', 'g') AS m) AS pieces) p
        CROSS JOIN LATERAL generate_series(1, cardinality(p.pieces) - 1) AS i
        CROSS JOIN LATERAL generate_series(i + 1, cardinality(p.pieces)) AS j
        WHERE x.term ~ '^[a-z0-9]+([._][a-z0-9]+)+$' AND x.term !~ '^v?[0-9]+(\.[0-9]+)+$'
          AND cardinality(p.pieces) <= 8 AND NOT (i = 1 AND j = cardinality(p.pieces))
        UNION ALL   -- a version without its v: 2.31.0 of v2.31.0
        SELECT substr(x.term, 2) FROM unnest(tech) AS x(term) WHERE x.term ~ '^v[0-9]+(\.[0-9]+)+'
        UNION ALL   -- a number after a hyphen within a token (the parser reads a sign): 3094 of CVE-2024-3094
        SELECT m[1] FROM regexp_matches(t, '(?<=[[:alnum:]])-([0-9]+(?:\.[0-9]+)?)', 'g') AS m
        UNION ALL   -- the short forms of a full git commit hash
        SELECT unnest(memsql.hash_prefixes(t))
    ) v
    WHERE length(v.term) BETWEEN 1 AND 200
);
COMMENT ON FUNCTION memsql.lexical_variants(text, text[]) IS
    'The other forms of a text''s technical tokens that a search may type, indexed beside them: every run of two '
    'parts or more of a dotted or snake_case identifier of tech (ef_search, hnsw.ef of hnsw.ef_search; '
    'compute_backoff, backoff_delay of compute_backoff_delay; at most 8 parts), a version of tech without its v '
    '(2.31.0 of v2.31.0), a number after a hyphen inside a token (3094 and 2024 of CVE-2024-3094, which the parser '
    'reads as signed numbers), and the 7- to 12-digit prefixes of a 40-digit hexadecimal commit hash. Args: t text, '
    'tech text[] (memsql.tech_terms(t)). Returns text[] sorted, distinct, raw (not stemmed). Used by '
    'memory_tsvector (memories only: a query asks for the form it types). Source: sql/functions/05_lexical.sql.';

-- A stop word typed in capitals is an acronym: IT (the department), US, WHO. Indexed and searched as itself; the same
-- word in lower case stays a stop word.
CREATE OR REPLACE FUNCTION memsql.capital_stop_words(t text, cfg regconfig) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(array_agg(DISTINCT w.word ORDER BY w.word), '{}')
    FROM (SELECT lower(m[1]) AS word FROM regexp_matches(t, '\m([[:upper:]]{2,5})\M', 'g') AS m) w
    WHERE to_tsvector(cfg, w.word) = ''::tsvector   -- a stop word under cfg
);
COMMENT ON FUNCTION memsql.capital_stop_words(text, regconfig) IS
    'The words of a text written in capitals (2 to 5 letters) whose lower-case form is a stop word under cfg (IT, US, '
    'WHO, AM under english): acronyms, indexed and searched as themselves (lower-cased) where the stop word would be '
    'dropped. Args: t text, cfg regconfig. Returns text[] sorted, distinct, lower-cased. Used by memory_tsvector and '
    'query_lexemes. Source: sql/functions/05_lexical.sql.';

CREATE OR REPLACE FUNCTION memsql.memory_tsvector(t text, cfg regconfig) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$   -- every name qualified: no search_path of its own (a SET clause would cost each call)
DECLARE
    v      tsvector;
    tech   text[] := memsql.tech_terms(t);
    folded text := memsql.lexical_fold(t);
    parts  text;
    cjk    text;
BEGIN
    IF t ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]' THEN
        v := to_tsvector(cfg, regexp_replace(folded, '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)',
                                             ' \1 ', 'g'));   -- CJK runs apart from latin words
        cjk := memsql.cjk_bigrams(t);
    ELSE
        v := to_tsvector(cfg, folded);
    END IF;
    IF folded ~ '[[:alnum:]][.@/][[:alnum:]]' THEN   -- a host, address or path may be there: its parts, once each
        parts := memsql.lexical_parts(folded);
        IF parts IS NOT NULL THEN
            v := v || ts_delete(to_tsvector(cfg, parts), tsvector_to_array(v));
        END IF;
    END IF;
    IF cardinality(tech) > 0 OR t ~ '[[:alnum:]]-[0-9]|[0-9a-fA-F]{40}' THEN   -- and the forms they are searched by
        tech := tech || memsql.lexical_variants(t, tech);
    END IF;
    IF t ~ '\m[[:upper:]]{2,5}\M' THEN   -- acronyms that are stop words in lower case
        tech := tech || memsql.capital_stop_words(t, cfg);
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
    'tsvector of a text under a text search configuration (letters folded by memsql.lexical_fold, stemmed, stop '
    'words dropped; memsql.* configurations fold accents), plus the parts of its hosts, e-mail addresses and paths '
    '(memsql.lexical_parts, each lexeme once), its exact technical tokens (memsql.tech_terms) and the other forms '
    'they are searched by (memsql.lexical_variants) and its acronyms that are stop words in lower case '
    '(memsql.capital_stop_words) at position 1, and the character bigrams of its CJK runs (memsql.cjk_bigrams). Args: t text, cfg regconfig. Returns tsvector. '
    'Used by the trigger memories_lexical (memories.tsv). Source: sql/functions/05_lexical.sql.';

-- Lex again every memory that may hold such a token; keep those whose tsvector changed.
CREATE TEMP TABLE memsql_relex_variants ON COMMIT DROP AS
SELECT m.id, m.namespace, m.tsv AS old_tsv, m.tsv_len AS old_len, m.bm25_len,
       memsql.memory_tsvector(m.content, m.ts_config) AS new_tsv
FROM memsql.memories m
WHERE m.content ~ '[[:alnum:]]-[0-9]|[A-Za-z0-9]_[A-Za-z0-9]|[A-Za-z_][A-Za-z0-9_]+\.[A-Za-z_]|[vV][0-9]+\.[0-9]|[0-9a-fA-F]{40}|\m[[:upper:]]{2,5}\M';
DELETE FROM memsql_relex_variants WHERE new_tsv = old_tsv;

-- BM25 statistics: document lengths, then document frequencies (+1 for a lexeme gained; none is lost).
UPDATE memsql.namespace_stats s
SET total_len = s.total_len + d.delta
FROM (SELECT r.namespace, sum(memsql.tsvector_token_count(r.new_tsv) - r.old_len) AS delta
      FROM memsql_relex_variants r GROUP BY r.namespace ORDER BY r.namespace) d
WHERE s.namespace = d.namespace;

INSERT INTO memsql.term_stats AS t (namespace, lexeme, df)
SELECT c.namespace, c.lexeme, sum(c.d)
FROM (SELECT r.namespace, n.lexeme, 1 AS d
      FROM memsql_relex_variants r CROSS JOIN LATERAL unnest(r.new_tsv) AS n
      WHERE NOT n.lexeme = ANY (tsvector_to_array(r.old_tsv))
      UNION ALL
      SELECT r.namespace, o.lexeme, -1
      FROM memsql_relex_variants r CROSS JOIN LATERAL unnest(r.old_tsv) AS o
      WHERE NOT o.lexeme = ANY (tsvector_to_array(r.new_tsv))) c
GROUP BY c.namespace, c.lexeme
HAVING sum(c.d) <> 0
ORDER BY c.namespace, c.lexeme
ON CONFLICT (namespace, lexeme) DO UPDATE SET df = t.df + excluded.df;

DELETE FROM memsql.term_stats t
USING (SELECT DISTINCT r.namespace FROM memsql_relex_variants r) d
WHERE t.namespace = d.namespace AND t.df <= 0;

-- Postings: those of the changed memories replaced (each carries the length BM25 normalises the memory by).
DELETE FROM memsql.postings p
USING (SELECT r.namespace, r.id, o.lexeme FROM memsql_relex_variants r CROSS JOIN LATERAL unnest(r.old_tsv) AS o) d
WHERE p.namespace = d.namespace AND p.lexeme = d.lexeme AND p.memory_id = d.id;

UPDATE memsql.memories m SET tsv = r.new_tsv
FROM memsql_relex_variants r WHERE m.namespace = r.namespace AND m.id = r.id;   -- the trigger sets tsv and tsv_len

INSERT INTO memsql.postings (namespace, lexeme, memory_id, tf, doc_len)
SELECT r.namespace, u.lexeme, r.id, coalesce(array_length(u.positions, 1), 1),
       coalesce(r.bm25_len, memsql.tsvector_token_count(r.new_tsv))
FROM memsql_relex_variants r CROSS JOIN LATERAL unnest(r.new_tsv) AS u;

DROP TABLE memsql_relex_variants;   -- migrations may share one transaction: no temporary table is left to a later one
