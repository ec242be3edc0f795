-- The lexical representation of a text, for memories and queries alike: its lexemes under a text search
-- configuration, its exact technical tokens (the english parser would split them) and the character bigrams of its
-- CJK runs. CREATE OR REPLACE only.
-- The SQL helpers carry no SET clause, so that the planner inlines them: they run under their caller's search_path.
-- Every name in them is schema-qualified or a pg_catalog built-in, and the polymorphic built-ins (array_agg, unnest,
-- cardinality, array_to_string, array_length, array_cat) are called as pg_catalog.*: a function of the same name
-- declared for text[] in a schema on the path (public.cardinality(text[])) matches more exactly than the built-in
-- for anyarray and wins whatever the order of the path. The PL/pgSQL memory_tsvector(text, regconfig) also pins its
-- search_path (pg_catalog first), as every PL/pgSQL function of memsql does; the clause costs nothing measurable per
-- call (about 11 us a short memory, 160 us a long one, with or without it).

CREATE OR REPLACE FUNCTION memsql.tsvector_token_count(v tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(sum(coalesce(pg_catalog.array_length(u.positions, 1), 1)), 0)::integer
        FROM pg_catalog.unnest(v) AS u);
COMMENT ON FUNCTION memsql.tsvector_token_count(tsvector) IS
    'Indexed tokens in a tsvector (sum of position counts; a lexeme without positions counts 1). '
    'Args: v tsvector. Returns integer >= 0. Used as the BM25 document length. Source: sql/functions/05_lexical.sql.';

-- URLs, e-mail addresses, paths, dotted.names, snake_case, camelCase, version strings, C++ / C# / .NET.
CREATE OR REPLACE FUNCTION memsql.tech_terms(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(pg_catalog.array_agg(DISTINCT x.term ORDER BY x.term), '{}')
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

-- Letters whose lower-case form is not what their capital lowers to (Greek final and lunate sigma, Armenian
-- ligatures, old Cyrillic letter variants), and capitals the server's lower() may not know (Latin letters added in
-- recent Unicode versions): folded as Unicode case folding does, so that a word typed in capitals has the lexemes of
-- its lower-case spelling. The Greek iota subscript is left to unaccent (dropped, as monotonic spelling writes it).
CREATE OR REPLACE FUNCTION memsql.lexical_fold(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE
    WHEN t !~ '[\u03c2\u03f2\u0587\u1c80-\u1c88\u01f6\u0220\u0196\u01a6\ua7ac-\ua7ae\ua7b2\ua7c5\ua7c6\u1e9b\ufb13-\ufb17]' THEN t
    ELSE replace(replace(replace(replace(replace(replace(
             translate(t, U&'\03C2\03F2\1C80\1C81\1C82\1C83\1C84\1C85\1C86\1C87\1C88\01F6\0220\A7AC\0196\A7AE\A7AD\01A6\A7C5\A7B2\A7C6\1E9B',
                          U&'\03C3\03C3\0432\0434\043E\0441\0442\0442\044A\0463\A64B\0195\019E\0261\0269\026A\026C\0280\0282\029D\1D8E\1E61'),
             U&'\0587', U&'\0565\0582'), U&'\FB13', U&'\0574\0576'), U&'\FB14', U&'\0574\0565'),
             U&'\FB15', U&'\0574\056B'), U&'\FB16', U&'\057E\0576'), U&'\FB17', U&'\0574\056D')
END;
COMMENT ON FUNCTION memsql.lexical_fold(text) IS
    'A text with the letters folded that lower() alone does not match with their lower-case spelling: Greek final '
    'and lunate sigma to sigma, the Armenian ligatures (U+0587, U+FB13..FB17) to their two letters, the Cyrillic '
    'letter variants U+1C80..1C88 to their base letters, long s with dot above to s with dot above, and Latin '
    'capitals a server''s lower() may not know (U+01F6, U+0220, U+0196, U+01A6, U+A7AC..A7AE, U+A7B2, U+A7C5, '
    'U+A7C6) to their small letters. Args: t text. '
    'Returns text (t itself when it holds none of them). Applied to memories and queries alike before they are '
    'lexed (memory_tsvector, query_lexemes). Source: sql/functions/05_lexical.sql.';

-- The parts of the e-mail addresses, host names, file names and URL paths of a text: the default parser keeps each
-- as one token, so "alerts" or "example.com" would not find 'ops-team+alerts@example.com'.
CREATE OR REPLACE FUNCTION memsql.lexical_parts(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT string_agg(p.part, ' ' ORDER BY p.part)
    FROM (
        SELECT DISTINCT x.part
        FROM pg_catalog.ts_parse('pg_catalog.default', t) AS tok(tokid, token),
             LATERAL regexp_split_to_table(tok.token, '[/@]+') AS s(seg),
             LATERAL (SELECT w FROM regexp_split_to_table(s.seg, '[^[:alnum:]]+') AS w
                      UNION ALL   -- the dotted suffixes of two labels or more: example.com of db1.example.com
                      SELECT pg_catalog.array_to_string(l.labels[i:], '.')
                      FROM (SELECT pg_catalog.string_to_array(s.seg, '.') AS labels) l,
                           generate_series(1, pg_catalog.cardinality(l.labels) - 1) AS i) AS x(part)
        WHERE tok.tokid IN (4, 6, 18, 19)   -- email, host, url_path, file
          AND length(x.part) >= 2 AND x.part <> tok.token   -- a single letter (e of e.g.) is no part
    ) p
);
COMMENT ON FUNCTION memsql.lexical_parts(text) IS
    'The parts of every e-mail address, host name, file name and URL path in a text (the tokens the default text '
    'search parser keeps whole): its words (split at any character that is not a letter or digit) and, for each '
    'part between @ and /, its dotted suffixes of two labels or more (alerts@db1.example.com -> alerts, db1, '
    'example, com, db1.example.com, example.com); parts of one character are left out (e.g. gives none). Args: t text. Returns text, the parts space-separated, sorted and '
    'distinct; NULL when the text has no such token. Used by memory_tsvector. Source: sql/functions/05_lexical.sql.';

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
    SELECT coalesce(pg_catalog.array_agg(DISTINCT v.term ORDER BY v.term), '{}')
    FROM (
        -- the runs of two parts or more of a dotted or snake_case identifier: ef_search of hnsw.ef_search
        SELECT ltrim(pg_catalog.array_to_string(p.pieces[i:j], ''), '._') AS term
        FROM pg_catalog.unnest(tech) AS x(term)
        CROSS JOIN LATERAL (SELECT ARRAY(SELECT m[1] FROM regexp_matches(x.term, '[._]?[a-z0-9]+', 'g') AS m) AS pieces) p
        CROSS JOIN LATERAL generate_series(1, pg_catalog.cardinality(p.pieces) - 1) AS i
        CROSS JOIN LATERAL generate_series(i + 1, pg_catalog.cardinality(p.pieces)) AS j
        WHERE x.term ~ '^[a-z0-9]+([._][a-z0-9]+)+$' AND x.term !~ '^v?[0-9]+(\.[0-9]+)+$'
          AND pg_catalog.cardinality(p.pieces) <= 8 AND NOT (i = 1 AND j = pg_catalog.cardinality(p.pieces))
        UNION ALL   -- a version without its v: 2.31.0 of v2.31.0
        SELECT substr(x.term, 2) FROM pg_catalog.unnest(tech) AS x(term) WHERE x.term ~ '^v[0-9]+(\.[0-9]+)+'
        UNION ALL   -- a number after a hyphen within a token (the parser reads a sign): 3094 of CVE-2024-3094
        SELECT m[1] FROM regexp_matches(t, '(?<=[[:alnum:]])-([0-9]+(?:\.[0-9]+)?)', 'g') AS m
        UNION ALL   -- the short forms of a full git commit hash
        SELECT pg_catalog.unnest(memsql.hash_prefixes(t))
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
    SELECT coalesce(pg_catalog.array_agg(DISTINCT w.word ORDER BY w.word), '{}')
    FROM (SELECT lower(m[1]) AS word FROM regexp_matches(t, '\m([[:upper:]]{2,5})\M', 'g') AS m) w
    WHERE to_tsvector(cfg, w.word) = ''::tsvector   -- a stop word under cfg
);
COMMENT ON FUNCTION memsql.capital_stop_words(text, regconfig) IS
    'The words of a text written in capitals (2 to 5 letters) whose lower-case form is a stop word under cfg (IT, US, '
    'WHO, AM under english): acronyms, indexed and searched as themselves (lower-cased) where the stop word would be '
    'dropped. Args: t text, cfg regconfig. Returns text[] sorted, distinct, lower-cased. Used by memory_tsvector and '
    'query_lexemes. Source: sql/functions/05_lexical.sql.';

-- The first definition, under memsql.english only (memories carry their own configuration since the languages
-- migration): kept for callers that use it, the same tsvector as the two-argument form under memsql.english.
CREATE OR REPLACE FUNCTION memsql.memory_tsvector(t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN memsql.memory_tsvector(t, 'memsql.english'::regconfig);
COMMENT ON FUNCTION memsql.memory_tsvector(text) IS
    'memsql.memory_tsvector(t, ''memsql.english''): the tsvector of a text under memsql.english. Args: t text. '
    'Returns tsvector. Source: sql/functions/05_lexical.sql.';

-- PL/pgSQL: the CJK rewrite and bigrams only for a text with CJK characters, the parts of hosts and addresses and the
-- technical tokens merged only when there are some (faster per memory than one SQL expression doing it all).
CREATE OR REPLACE FUNCTION memsql.memory_tsvector(t text, cfg regconfig) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT
AS $$   -- pg_catalog first in its path, and the built-ins a same-named function could shadow qualified as well
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
    -- and the forms they are searched by
    IF pg_catalog.cardinality(tech) > 0 OR t ~ '[[:alnum:]]-[0-9]|[0-9a-fA-F]{40}' THEN
        tech := pg_catalog.array_cat(tech, memsql.lexical_variants(t, tech));
    END IF;
    IF t ~ '\m[[:upper:]]{2,5}\M' THEN   -- acronyms that are stop words in lower case
        tech := pg_catalog.array_cat(tech, memsql.capital_stop_words(t, cfg));
    END IF;
    -- exact tokens at position 1, unless the parser already made the same lexeme
    IF pg_catalog.cardinality(tech) > 0 THEN
        v := v || ts_delete((SELECT string_agg('''' || replace(replace(x, '\', '\\'), '''', '''''') || ''':1', ' ')::tsvector
                             FROM pg_catalog.unnest(tech) AS x), tsvector_to_array(v));
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
