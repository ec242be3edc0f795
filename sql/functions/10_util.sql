-- Small helpers shared by the search and write functions. CREATE OR REPLACE only.
-- The IMMUTABLE SQL helpers carry no SET clause so the planner can inline them; they call only
-- pg_catalog functions (always searched first) and schema-qualified names.

CREATE OR REPLACE FUNCTION memsql.decay(age_days double precision, half_life_days double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE
    WHEN half_life_days IS NULL THEN 1.0
    -- at most 200 half-lives: 0.5 ^ 200 (6e-61) is as faded as any older age, and 0.5 ^ 1075 is below the smallest
    -- double (power() raises "underflow": one memory that old failed every search of its namespace), nor does a
    -- product of it with a score underflow
    ELSE power(0.5, least(greatest(coalesce(age_days, 0), 0) / half_life_days, 200))
END;
COMMENT ON FUNCTION memsql.decay(double precision, double precision) IS
    'Exponential time decay 0.5 ^ (age_days / half_life_days) in (0, 1], the exponent capped at 200 half-lives '
    '(6e-61: as faded as any older age, and never an underflow). '
    'Args: age_days (days; negative = future date, clamped to 0; NULL = 0), half_life_days (> 0, NULL = no decay). '
    'Returns 1.0 for no decay or age <= 0, exactly 0.5 at one half-life. Source: sql/functions/10_util.sql.';

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
RETURN (   -- polymorphic built-ins named pg_catalog.*: a public.unnest(text[]) would win over unnest(anyarray)
    SELECT coalesce(pg_catalog.array_agg(l ORDER BY l), '{}')
    FROM (
        SELECT pg_catalog.unnest(tsvector_to_array(ts_delete(
                   to_tsvector(cfg, regexp_replace(   -- CJK runs apart from latin words, as in memory_tsvector
                       memsql.lexical_fold(query), '([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+)', ' \1 ', 'g')),
                   tsvector_to_array(to_tsvector(cfg, pg_catalog.array_to_string(memsql.tech_terms(query), ' '))))))
        UNION
        SELECT pg_catalog.unnest(memsql.tech_terms(query))
        UNION
        SELECT pg_catalog.unnest(tsvector_to_array(to_tsvector('pg_catalog.simple'::regconfig, memsql.cjk_bigrams(query))))
        UNION   -- an acronym that is a stop word in lower case (IT, US): itself
        SELECT pg_catalog.unnest(memsql.capital_stop_words(query, cfg))
        UNION   -- a full commit hash also finds its short forms (memory_tsvector indexes the reverse)
        SELECT pg_catalog.unnest(memsql.hash_prefixes(query))
    ) AS q(l)
);
COMMENT ON FUNCTION memsql.query_lexemes(text, regconfig) IS
    'Distinct lexemes of a query under a text search configuration: stems (letters folded by memsql.lexical_fold, '
    'stop words removed), exact technical tokens (memsql.tech_terms; an exact token replaces the words it is made '
    'of), its acronyms that are stop words in lower case (memsql.capital_stop_words: IT, US), the character bigrams '
    'of its CJK runs (memsql.cjk_bigrams) and, for a 40-digit commit hash, its 7- to 12-digit prefixes. Args: query text, cfg regconfig. Returns text[] sorted, empty when the query '
    'holds only stop words or punctuation. Operator characters (& | ! : * quotes) are plain text.';

CREATE OR REPLACE FUNCTION memsql.query_lexemes(query text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN memsql.query_lexemes(query, 'memsql.english'::regconfig);
COMMENT ON FUNCTION memsql.query_lexemes(text) IS
    'Distinct lexemes of a query under memsql.english: english stems (stop words removed, accents folded), exact '
    'technical tokens (memsql.tech_terms; "memory_search" asks for the identifier, not for every note about memory '
    'or search) and CJK character bigrams. Args: query text. Returns text[] sorted, empty when the query holds only '
    'stop words or punctuation. Operator characters (& | ! : * quotes) are plain text.';

-- The priority condition of memory_search's guaranteed candidates. The partial index memories_priority is defined by
-- this function (V0012, rebuilt by V0032), so its body must not change without a migration that rebuilds that index;
-- the latest such migration holds the same text (tests/test_search_door.py compares them). Importance is real: the
-- threshold is compared as real (0.7 as a double is above 0.7 stored).
CREATE OR REPLACE FUNCTION memsql.is_priority(knowledge_type text, importance real) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN knowledge_type = 'principle' OR importance >= 0.7::real;
COMMENT ON FUNCTION memsql.is_priority(text, real) IS
    'Whether a memory is a priority memory (a guaranteed candidate of memory_search): knowledge_type principle, or '
    'importance >= 0.7 (compared as real, as stored). Args: knowledge_type text, importance real (NULL = unset). Returns boolean (NULL when neither '
    'holds and importance is NULL). The partial index memories_priority is defined by it. '
    'Source: sql/functions/10_util.sql.';

-- Whose words a memory holds: an assistant's (a chat or agent turn the conversation adapters mark with speaker
-- "assistant"; a chunk packing several turns counts only when every one is the assistant's) or anyone else's.
CREATE OR REPLACE FUNCTION memsql.said_by_assistant(metadata jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(metadata ->> 'speaker' = 'assistant', false)
   AND (jsonb_typeof(metadata -> 'parts') IS DISTINCT FROM 'array'   -- one message (the parts path only when packed)
        OR NOT jsonb_path_exists(metadata,
                                 '$.parts[*] ? (!(@.speaker == "assistant") || !(@.speaker.type() == "string"))'));
COMMENT ON FUNCTION memsql.said_by_assistant(jsonb) IS
    'Whether a memory holds an assistant''s words: metadata speaker is ''assistant'' (as the ChatGPT, Claude.ai and '
    'Claude Code adapters write it) and, for a chunk packing several messages (metadata parts), every part''s speaker '
    'is too. memory_search weighs such memories by its assistant_weight. Args: metadata jsonb (NULL = false). '
    'Returns boolean, never NULL. Source: sql/functions/10_util.sql.';

-- What one memory_search call may return: the one predicate every arm, the priority candidates and the pool apply.
-- Inlined by the planner (SQL, no SET clause): inside an HNSW walk it is the walk's filter; in a statement planned
-- for its values (the exact scans) the NULL filters fold away and the indexes of the others apply.
CREATE OR REPLACE FUNCTION memsql.search_visible(m memsql.memories, f memsql.search_filter) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN m.namespace = f.namespace
   AND (f.knowledge_types IS NULL OR m.knowledge_type = ANY (f.knowledge_types))
   AND (f.tags IS NULL OR m.tags && f.tags)
   AND (f.topics IS NULL OR m.topics && f.topics)
   AND (f.min_importance IS NULL OR m.importance IS NULL OR m.importance >= f.min_importance::real)
   AND CASE WHEN f.as_of IS NULL THEN f.include_superseded OR m.valid_to IS NULL     -- current versions (or all)
            WHEN f.include_superseded THEN m.created_at <= f.as_of                   -- every version written by as_of
            ELSE tstzrange(m.created_at, m.valid_to) @> f.as_of END;                 -- the versions valid at as_of
COMMENT ON FUNCTION memsql.search_visible(memsql.memories, memsql.search_filter) IS
    'Whether memory_search may return a memory under a call''s filters (memsql.search_filter): its namespace, one of '
    'the knowledge types, any of the tags, any of the topics (each NULL = no filter), importance NULL or >= '
    'min_importance (NULL = no cutoff), and its version: current (valid_to NULL) unless include_superseded; with as_of, '
    'valid at as_of (created_at <= as_of < valid_to), or with include_superseded every version written by as_of. A '
    'memory archived by forgetting is no longer in memsql.memories. Args: m memsql.memories, f memsql.search_filter. '
    'Returns boolean. Source: sql/functions/10_util.sql.';

-- The cosine of a memory's best window (memsql.memory_windows) to a query embedding. Inlined by the planner (SQL, no
-- SET clause, no subquery): the pool of memory_search reads it per candidate, where an unnest cost 10 us a row.
CREATE OR REPLACE FUNCTION memsql.window_similarity(windows vector[], q vector) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN greatest(1 - (windows[1] <=> q), 1 - (windows[2] <=> q), 1 - (windows[3] <=> q), 1 - (windows[4] <=> q));
COMMENT ON FUNCTION memsql.window_similarity(vector[], vector) IS
    'The highest cosine similarity of a memory''s windows to q. Args: windows vector(384)[] '
    '(memory_windows.embeddings, at most 4: memsql.memory_set_windows refuses more), q vector(384), not zero '
    '(memory_search checks its query embeddings at the door; this helper does not: a zero q gives NaN, another '
    'dimension pgvector''s error 22000). Returns double precision in [-1, 1]; NULL when windows is NULL or empty (the '
    'memory fits one window: its own embedding counts). Source: sql/functions/10_util.sql.';

-- Argument checks shared by the public functions: one place for "finite, in range, else MS002 with a hint".
CREATE OR REPLACE FUNCTION memsql.raise_argument(fn text, name text, value text, lo double precision,
                                                 hi double precision, hint text) RETURNS double precision
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT AS $$
BEGIN
    RAISE EXCEPTION '%: % must be %, got %', fn, name,
        CASE WHEN lo = '-Infinity' AND hi = 'Infinity' THEN 'a finite number'
             WHEN hi = 'Infinity' THEN pg_catalog.format('a finite number >= %s', lo)
             WHEN lo = '-Infinity' THEN pg_catalog.format('a finite number <= %s', hi)
             ELSE pg_catalog.format('between %s and %s', lo, hi) END,
        coalesce(value, 'NULL')
        USING ERRCODE = 'MS002', HINT = hint;
END $$;
COMMENT ON FUNCTION memsql.raise_argument(text, text, text, double precision, double precision, text) IS
    'Raises SQLSTATE MS002 for an argument out of range: "<fn>: <name> must be between <lo> and <hi>, got <value>" '
    'with the HINT. Internal helper of memsql.check_argument. Source: sql/functions/10_util.sql.';

CREATE OR REPLACE FUNCTION memsql.check_argument(fn text, name text, value double precision, lo double precision,
                                                 hi double precision, hint text, nullable boolean DEFAULT false)
RETURNS double precision
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN value IS NULL AND nullable THEN NULL
            WHEN value IS NULL OR value = 'NaN' OR value = 'Infinity' OR value = '-Infinity'
                 OR value < lo OR value > hi
            THEN memsql.raise_argument(fn, name, value::text, lo, hi, hint)
            ELSE value END;
COMMENT ON FUNCTION memsql.check_argument(text, text, double precision, double precision, double precision, text, boolean) IS
    'The range check of every numeric argument of memsql''s public functions: value must be finite (not NaN or '
    '+-Infinity), lo <= value <= hi, and not NULL unless nullable. Args: fn (the function, for the message), name '
    '(the argument), value, lo, hi (bounds, inclusive; +-Infinity = unbounded), hint, nullable (false). Returns value. '
    'Errors: MS002 with the given HINT. Inlined (SQL, no SET clause): a check costs an expression. '
    'Source: sql/functions/10_util.sql.';

CREATE OR REPLACE FUNCTION memsql.check_time(fn text, name text, value timestamptz, hint text) RETURNS timestamptz
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
BEGIN
    IF value = 'infinity' OR value = '-infinity' THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('%s: %s must be a finite time, got %s', fn, name, value), hint);
    END IF;
    RETURN value;
END $$;
COMMENT ON FUNCTION memsql.check_time(text, text, timestamptz, text) IS
    'The check of a time argument that is stored or computed with: +-infinity is refused (an age, a decay or a date '
    'shown from it would be infinite or fail to print). Args: fn (the function, for the message), name (the '
    'argument), value (NULL passes), hint. Returns value. Errors: MS002 with the given HINT. '
    'Source: sql/functions/10_util.sql.';

-- Vectors at the door: what every function that takes an embedding refuses.
-- PL/pgSQL, one test after the other: in a SQL CASE a plan made for a constant vector would cast it to halfvec
-- before the range test could stop it.
CREATE OR REPLACE FUNCTION memsql.vector_problem(v vector) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
BEGIN
    IF v IS NULL THEN
        RETURN 'is NULL';
    ELSIF vector_dims(v) <> 384 THEN
        RETURN pg_catalog.format('has %s dimensions, not 384', vector_dims(v));
    ELSIF vector_norm(v) = 0 THEN
        RETURN 'is the zero vector';
    -- no component exceeds the norm: the per-component scan only past it (AND evaluates left to right here)
    ELSIF vector_norm(v) > 65504 AND (SELECT max(abs(x)) FROM pg_catalog.unnest(v::real[]) AS x) > 65504 THEN
        RETURN 'has a component beyond the half-precision range (65504)';
    ELSIF l2_norm(v::halfvec(384)) = 0 THEN
        RETURN 'is zero in half precision (the HNSW index stores halfvec)';
    ELSIF 1 - (v <=> v::halfvec(384)::vector) < 0.9999 THEN
        RETURN 'loses its direction in half precision (components under 6e-5 are subnormal or zero as halfvec)';
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION memsql.vector_problem(vector) IS
    'What is wrong with an embedding, or NULL when it can be stored and searched alike by the exact scan and the '
    'HNSW index (which stores embedding::halfvec(384)): NULL, not 384-dimensional, zero, a component beyond 65504, '
    'zero in half precision, or off its direction there (cosine to its halfvec form < 0.9999; a unit vector is at '
    'about 1 - 1e-7). pgvector itself refuses NaN and infinite components. Args: v vector. Returns text or NULL. '
    'Source: sql/functions/10_util.sql.';

CREATE OR REPLACE FUNCTION memsql.raise_vector(fn text, what text, problem text) RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT AS $$
BEGIN
    RAISE EXCEPTION '%: % %', fn, what, problem
        USING ERRCODE = 'MS005',
              HINT = 'Pass a finite, non-zero 384-dimensional embedding of all-MiniLM-L6-v2 (unit length, as '
                     'memsql.embedding makes them); normalise your own vectors to length 1.';
END $$;
COMMENT ON FUNCTION memsql.raise_vector(text, text, text) IS
    'Raises SQLSTATE MS005 "<fn>: <what> <problem>" with a HINT. Internal helper of memsql.check_vectors. '
    'Source: sql/functions/10_util.sql.';

CREATE OR REPLACE FUNCTION memsql.check_vectors(fn text, what text, vs vector[]) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
DECLARE
    v       vector;
    i       integer := 0;
    problem text;
BEGIN
    IF vs IS NULL THEN
        RETURN true;
    END IF;
    IF pg_catalog.array_ndims(vs) > 1 THEN   -- ARRAY[[e]]: vs[1] would be NULL, and a filtered search silently empty
        RETURN memsql.raise_vector(fn, what || 's', pg_catalog.format('are a %s-dimensional array; pass a one-dimensional array '
                                                           'of vectors, e.g. ARRAY[e1, e2]', pg_catalog.array_ndims(vs)));
    END IF;
    FOREACH v IN ARRAY vs LOOP   -- plain expressions, no statement: this runs on every search
        i := i + 1;
        problem := memsql.vector_problem(v);
        IF problem IS NOT NULL THEN
            RETURN memsql.raise_vector(fn, pg_catalog.format('%s %s', what, i), problem);
        END IF;
    END LOOP;
    RETURN true;
END $$;
COMMENT ON FUNCTION memsql.check_vectors(text, text, vector[]) IS
    'Refuses embeddings memory_search, memory_add or the worker cannot store or search (memsql.vector_problem), and '
    'an array of more than one dimension: raises MS005 naming the first bad one ("<fn>: <what> <position> <problem>"). Args: fn, what (e.g. '
    '''query embedding''), vs vector[] (NULL or empty = nothing to check). Returns true. Errors: MS005 with a HINT. '
    'Source: sql/functions/10_util.sql.';

-- Which release's functions the database holds: memsql init writes them all (apply_functions); an older memsql's init
-- would put its own back under the same schema version, and drops this one or answers a smaller number. Raised with
-- every new migration (tests/test_upgrade.py checks it equals memsql.db.SCHEMA_VERSION).
CREATE OR REPLACE FUNCTION memsql.functions_version() RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 33;
COMMENT ON FUNCTION memsql.functions_version() IS
    'The schema version of the memsql release whose sql/functions the database holds (written by memsql init). '
    'Clients refuse a database whose functions are older than their code (memsql.db.check_schema), as after an '
    'older memsql''s init. Args: none. Returns integer. Source: sql/functions/10_util.sql.';

-- The phrases a query quotes: "connection reset by peer" asks for those words in that order.
CREATE OR REPLACE FUNCTION memsql.query_phrases(query text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN ARRAY(
    SELECT DISTINCT p.phrase
    FROM (SELECT btrim(rtrim(lower(regexp_replace(m[1], '\s+', ' ', 'g')), '.,;:!? '), ' ') AS phrase
          FROM regexp_matches(query, '["\u201c\u201d\u201e]([^"\u201c\u201d\u201e]+)["\u201c\u201d\u201e]', 'g') AS m) p
    WHERE p.phrase ~ '\s' AND length(p.phrase) <= 200
    ORDER BY p.phrase
    LIMIT 5
);
COMMENT ON FUNCTION memsql.query_phrases(text) IS
    'The phrases a query quotes (between straight or curly double quotes): lower-cased, blanks collapsed, trailing '
    'punctuation trimmed; only phrases of two words or more (a quoted single word is a word), at most 200 characters, '
    'at most 5, distinct, sorted. Args: query text. Returns text[] (empty when it quotes none). memory_search adds '
    'lexical_weight times the share of them a memory holds word for word (memsql.phrase_share). '
    'Source: sql/functions/10_util.sql.';

-- The share of a query's phrases a text holds word for word (case and runs of blanks ignored).
CREATE OR REPLACE FUNCTION memsql.phrase_share(content text, phrases text[]) RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN CASE WHEN pg_catalog.cardinality(phrases) = 0 THEN 0
            ELSE (SELECT count(*) FROM pg_catalog.unnest(phrases) AS p(phrase)
                  WHERE strpos(lower(regexp_replace(content, '\s+', ' ', 'g')), p.phrase) > 0)::float8
                 / pg_catalog.cardinality(phrases) END;
COMMENT ON FUNCTION memsql.phrase_share(text, text[]) IS
    'The share (0..1) of phrases (memsql.query_phrases) that content holds word for word, case-insensitive, any run '
    'of blanks matching one space. Args: content text, phrases text[]. Returns double precision, 0 for no phrase. '
    'Source: sql/functions/10_util.sql.';

-- Query text as searched, the same in SQL and Python (memsql.client.query_text; tests/test_search_contract.py
-- checks every code point): NFC, then each white space (Unicode White_Space, plus the information separators U+001C..U+001F
-- Python counts as space), control (Cc) and format (Cf: zero-width, bidi marks, byte order mark, ...) character
-- becomes a space. Unicode 14.0 classes.
CREATE OR REPLACE FUNCTION memsql.query_text(query text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN regexp_replace(normalize(query, NFC), '[\u0001-\u0020\u007f-\u00a0\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]', ' ', 'g');
COMMENT ON FUNCTION memsql.query_text(text) IS
    'A query as memory_search reads it: in Unicode normal form NFC, every white space, control (Cc) and format (Cf) character (zero-width and '
    'no-break spaces, bidi marks, byte order mark, line and paragraph separators, ideographic space, ...) replaced by '
    'a space, as memsql.client.query_text does in Python. A query blank after this finds nothing. Args: query text. '
    'Returns text. Source: sql/functions/10_util.sql.';
