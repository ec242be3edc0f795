-- Small helpers shared by the search and write functions. CREATE OR REPLACE only.
-- The IMMUTABLE SQL helpers carry no SET clause so the planner can inline them; they call only
-- pg_catalog functions (always searched first) and schema-qualified names.

CREATE OR REPLACE FUNCTION memsql.query_lexemes(query text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(array_agg(l ORDER BY l), '{}')
    FROM (
        SELECT unnest(tsvector_to_array(ts_delete(
                   to_tsvector('memsql.english'::regconfig, query),
                   tsvector_to_array(to_tsvector('memsql.english'::regconfig,
                                                 array_to_string(memsql.tech_terms(query), ' '))))))
        UNION
        SELECT unnest(memsql.tech_terms(query))
    ) AS q(l)
);
COMMENT ON FUNCTION memsql.query_lexemes(text) IS
    'Distinct lexemes of a query: english stems (stop words removed, accents folded) plus exact technical tokens '
    '(memsql.tech_terms); an exact token replaces the words it is made of, so "memory_search" asks for the '
    'identifier, not for every note about memory or search. Args: query text. Returns text[] sorted, empty when '
    'the query holds only stop words or punctuation. Operator characters (& | ! : * quotes) are plain text.';

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
SET search_path = pg_catalog AS $$
BEGIN
    RAISE EXCEPTION '%', message USING ERRCODE = 'MS002', HINT = hint;
END $$;
COMMENT ON FUNCTION memsql.raise_invalid(text, text) IS
    'Raises SQLSTATE MS002 (invalid argument) with the given message and HINT. Internal helper.';
