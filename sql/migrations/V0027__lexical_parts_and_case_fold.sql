-- memsql schema, version 27: the lexical arm finds the parts of hosts, e-mail addresses and paths, and words typed in
-- capitals whose lower-case spelling lower() does not give (Greek final sigma, Armenian ligatures, ...).
-- memsql.memory_tsvector gains memsql.lexical_fold and memsql.lexical_parts; the memories whose tsvector changes
-- are lexed again here, their BM25 postings and statistics with them. The bodies below are those this version
-- released; sql/functions/05_lexical.sql holds the current ones (applied after every migrate).
-- Released files are never edited: add a later version instead.

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
                      SELECT array_to_string(l.labels[i:], '.')
                      FROM (SELECT string_to_array(s.seg, '.') AS labels) l,
                           generate_series(1, cardinality(l.labels) - 1) AS i) AS x(part)
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

-- PL/pgSQL: the CJK rewrite and bigrams only for a text with CJK characters, the parts of hosts and addresses and the
-- technical tokens merged only when there are some (faster per memory than one SQL expression doing it all).
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
    '(memsql.lexical_parts, each lexeme once), its exact technical tokens (memsql.tech_terms) at position 1 and '
    'the character bigrams of its CJK runs (memsql.cjk_bigrams). Args: t text, cfg regconfig. Returns tsvector. '
    'Used by the trigger memories_lexical (memories.tsv). Source: sql/functions/05_lexical.sql.';

-- Lex again every memory that may hold a host, address, path or folded letter; keep those whose tsvector changed.
CREATE TEMP TABLE memsql_relex ON COMMIT DROP AS
SELECT m.id, m.namespace, m.tsv AS old_tsv, m.tsv_len AS old_len,
       memsql.memory_tsvector(m.content, m.ts_config) AS new_tsv
FROM memsql.memories m
WHERE m.content ~ '[[:alnum:]][.@/][[:alnum:]]'
   OR m.content ~ '[\u03c2\u03f2\u0587\u1c80-\u1c88\u01f6\u0220\u0196\u01a6\ua7ac-\ua7ae\ua7b2\ua7c5\ua7c6\u1e9b\ufb13-\ufb17]';
DELETE FROM memsql_relex WHERE new_tsv = old_tsv;

-- BM25 statistics: document lengths, then document frequencies (+1 for a lexeme gained, -1 for one lost).
UPDATE memsql.namespace_stats s
SET total_len = s.total_len + d.delta
FROM (SELECT r.namespace, sum(memsql.tsvector_token_count(r.new_tsv) - r.old_len) AS delta
      FROM memsql_relex r GROUP BY r.namespace ORDER BY r.namespace) d
WHERE s.namespace = d.namespace;

INSERT INTO memsql.term_stats AS t (namespace, lexeme, df)
SELECT c.namespace, c.lexeme, sum(c.d)
FROM (SELECT r.namespace, n.lexeme, 1 AS d
      FROM memsql_relex r CROSS JOIN LATERAL unnest(r.new_tsv) AS n
      WHERE NOT n.lexeme = ANY (tsvector_to_array(r.old_tsv))
      UNION ALL
      SELECT r.namespace, o.lexeme, -1
      FROM memsql_relex r CROSS JOIN LATERAL unnest(r.old_tsv) AS o
      WHERE NOT o.lexeme = ANY (tsvector_to_array(r.new_tsv))) c
GROUP BY c.namespace, c.lexeme
HAVING sum(c.d) <> 0
ORDER BY c.namespace, c.lexeme
ON CONFLICT (namespace, lexeme) DO UPDATE SET df = t.df + excluded.df;

DELETE FROM memsql.term_stats t
USING (SELECT DISTINCT r.namespace FROM memsql_relex r) d
WHERE t.namespace = d.namespace AND t.df <= 0;

-- Postings: those of the changed memories replaced (every posting carries the memory's length).
DELETE FROM memsql.postings p
USING (SELECT r.namespace, r.id, o.lexeme FROM memsql_relex r CROSS JOIN LATERAL unnest(r.old_tsv) AS o) d
WHERE p.namespace = d.namespace AND p.lexeme = d.lexeme AND p.memory_id = d.id;

UPDATE memsql.memories m SET tsv = r.new_tsv FROM memsql_relex r WHERE m.id = r.id;   -- the trigger sets tsv_len

INSERT INTO memsql.postings (namespace, lexeme, memory_id, tf, doc_len)
SELECT r.namespace, u.lexeme, r.id, coalesce(array_length(u.positions, 1), 1), memsql.tsvector_token_count(r.new_tsv)
FROM memsql_relex r CROSS JOIN LATERAL unnest(r.new_tsv) AS u;
