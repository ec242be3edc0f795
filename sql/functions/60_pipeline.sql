-- The text pipeline's reads: nearest memories for the autosave filter's novelty, the namespace's
-- active topics for its relevance, and knowledge_type half-life overrides from the configuration.

CREATE OR REPLACE FUNCTION memsql.memory_nearest(
    embeddings        vector[],
    namespace         text    DEFAULT 'default',
    k                 integer DEFAULT 1,
    exclude_document  bigint  DEFAULT NULL
)
RETURNS TABLE (query_index integer, memory_id bigint, similarity double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET hnsw.iterative_scan = 'relaxed_order'
AS $$
#variable_conflict use_column
BEGIN
    IF memory_nearest.namespace IS NULL THEN
        PERFORM memsql.raise_invalid('memory_nearest: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    PERFORM memsql.check_argument('memory_nearest', 'k', k, 1, 100, 'k is the number of neighbours per embedding, e.g. 1.');
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(embeddings) AS e WHERE e IS NULL OR vector_dims(e) <> 384) THEN
        RAISE EXCEPTION 'memory_nearest: embeddings must be 384-dimensional and not NULL'
            USING ERRCODE = 'MS005', HINT = 'Embed with all-MiniLM-L6-v2 (memsql.embedding).';
    END IF;
    PERFORM memsql.check_vectors('memory_nearest', 'embedding', embeddings);   -- zero or halfvec-lossy: MS005
    -- a namespace of at most 1,000 memories is scanned exactly, as memory_search's dense arm does: beside a large
    -- namespace the walk goes through the large one's part of the graph to find a few rows, and may return others
    IF memsql.search_exact_scan(ROW(memory_nearest.namespace, NULL, NULL, NULL, NULL, true, NULL)::memsql.search_filter,
                                k) THEN
        RETURN QUERY
        SELECT q.i::integer, c.id, 1 - c.dist
        FROM pg_catalog.unnest(embeddings) WITH ORDINALITY AS q(vec, i)
        CROSS JOIN LATERAL (
            SELECT m.id, m.embedding <=> q.vec AS dist
            FROM memsql.memories m
            WHERE m.namespace = memory_nearest.namespace AND m.embedding IS NOT NULL
              AND m.document_id IS DISTINCT FROM memory_nearest.exclude_document
            ORDER BY m.embedding <=> q.vec, m.id
            LIMIT k
        ) c
        ORDER BY q.i, c.dist, c.id;
        RETURN;
    END IF;
    RETURN QUERY
    SELECT q.i::integer, c.id, 1 - c.dist
    FROM pg_catalog.unnest(embeddings) WITH ORDINALITY AS q(vec, i)
    CROSS JOIN LATERAL (
        SELECT m.id, m.embedding <=> q.vec AS dist
        FROM memsql.memories m
        WHERE m.namespace = memory_nearest.namespace AND m.embedding IS NOT NULL
          AND m.document_id IS DISTINCT FROM memory_nearest.exclude_document
        ORDER BY m.embedding::halfvec(384) <=> q.vec::halfvec(384)   -- the HNSW index (V0009); dist: exact
        LIMIT k
    ) c
    ORDER BY q.i, c.dist, c.id;
END
$$;
COMMENT ON FUNCTION memsql.memory_nearest(vector[], text, integer, bigint) IS
$c$Nearest memories of each embedding in a namespace (cosine): the autosave filter's novelty (1 - similarity of the
nearest memory). An exact scan when the namespace holds at most 1,000 memories (memsql.search_exact_scan), else a walk
of the HNSW index (iterative scan, relaxed order).
Args: embeddings vector(384)[] (unit vectors), namespace text ('default'), k int 1..100 (1) neighbours per embedding,
  exclude_document bigint (NULL): leave out this document's memories (a revised document's new chunks are not
  judged against the versions they replace, which would make every edited chunk a near-duplicate of itself).
Returns (query_index 1-based position in embeddings, memory_id, similarity = cosine in [-1, 1]), best first per
  query_index; no row for an embedding when the namespace holds no embedded memory. Approximate past 1,000
  memories (HNSW).
Errors: MS002 NULL namespace or k out of range, MS005 an embedding NULL or not 384-d.
Source: sql/functions/60_pipeline.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.namespace_topics(namespace text DEFAULT 'default', max_topics integer DEFAULT 20)
RETURNS TABLE (topic text, memories bigint)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT t.topic, count(*) AS memories
    FROM memsql.memories m CROSS JOIN LATERAL pg_catalog.unnest(m.topics) AS t(topic)
    WHERE m.namespace = namespace_topics.namespace
    GROUP BY t.topic
    ORDER BY count(*) DESC, t.topic
    LIMIT memsql.check_argument('namespace_topics', 'max_topics', coalesce(max_topics, 20), 0, 10000,
                                'e.g. max_topics => 20 (NULL = 20).')::integer
$$;
COMMENT ON FUNCTION memsql.namespace_topics(text, integer) IS
$c$The active topics of a namespace: topic labels by the number of memories carrying them, most used first (ties by
label). Args: namespace text ('default'), max_topics int 0..10000 (20; NULL = 20). Returns (topic, memories).
Used by the autosave filter's relevance criterion. Errors: MS002 max_topics out of range. Source: sql/functions/60_pipeline.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.knowledge_type_set(
    name            text,
    half_life_days  double precision,
    description     text DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    action text;
BEGIN
    IF knowledge_type_set.name IS NULL OR knowledge_type_set.name !~ '^[a-z][a-z0-9_]{0,62}$' THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('knowledge_type_set: bad name %s', coalesce(quote_literal(knowledge_type_set.name), 'NULL')),
                                     'Names are lower case: a letter, then letters, digits or _ (at most 63).');
    END IF;
    PERFORM memsql.check_argument('knowledge_type_set', 'half_life_days', knowledge_type_set.half_life_days,
                                  0.001, 'Infinity', 'In days; NULL means the type never decays.', true);
    INSERT INTO memsql.knowledge_types AS t (name, half_life_days, description)
    VALUES (knowledge_type_set.name, knowledge_type_set.half_life_days,
            coalesce(knowledge_type_set.description, 'Added by the configuration ([memory.scoring] half_life_days).'))
    ON CONFLICT (name) DO UPDATE
        SET half_life_days = excluded.half_life_days,
            -- a description that says the half-life says the new one ("News and status updates; half-life 7 days.")
            description = coalesce(knowledge_type_set.description,
                                   CASE WHEN t.half_life_days IS DISTINCT FROM excluded.half_life_days
                                             AND t.description ~ ';\s*(half-life|never decays)'
                                        THEN rtrim(split_part(t.description, ';', 1), '.') || '; '
                                             || CASE WHEN excluded.half_life_days IS NULL THEN 'never decays'
                                                     ELSE 'half-life ' || trim_scale(excluded.half_life_days::numeric)
                                                          || ' days' END || '.'
                                        ELSE t.description END)
    RETURNING CASE WHEN xmax = 0 THEN 'inserted' ELSE 'updated' END INTO action;
    RETURN action;
END
$$;
COMMENT ON FUNCTION memsql.knowledge_type_set(text, double precision, text) IS
$c$Sets the half-life of a knowledge_type, adding the type when it is new (memsql init applies the configuration's
[memory.scoring] half_life_days through it). Args: name text (^[a-z][a-z0-9_]{0,62}$), half_life_days (>= 0.001 days;
NULL = never decays), description (NULL keeps the existing one; when the half-life changes, a description that
states it after a ';' ("...; half-life three weeks.", "...; never decays.") is made to say the new one). Returns 'inserted' or 'updated'.
Errors: MS002 bad name or half-life. Source: sql/functions/60_pipeline.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.mmr_select(
    ids         bigint[],
    relevance   double precision[],
    embeddings  vector[],
    k           integer,
    mmr_lambda  double precision DEFAULT 0.6
)
RETURNS TABLE (memory_id bigint, mmr_rank integer, mmr_score double precision)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $$
DECLARE
    n        integer := coalesce(pg_catalog.cardinality(ids), 0);
    rel      double precision[];
    lo       double precision;
    hi       double precision;
    chosen   boolean[];
    maxsim   double precision[];
    best     integer;
    best_s   double precision;
    s        double precision;
    sim      double precision;
BEGIN
    IF n <> coalesce(pg_catalog.cardinality(relevance), 0) OR n <> coalesce(pg_catalog.cardinality(embeddings), 0) THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('mmr_select: ids, relevance and embeddings must have one length, got %s, %s, %s',
                                            n, coalesce(pg_catalog.cardinality(relevance), 0), coalesce(pg_catalog.cardinality(embeddings), 0)),
                                     'Pass one relevance and one embedding (or NULL) per id.');
    END IF;
    PERFORM memsql.check_argument('mmr_select', 'k', k, 1, 1000, 'k is the number of ids to select, e.g. 10.');
    PERFORM memsql.check_argument('mmr_select', 'mmr_lambda', mmr_lambda, 0, 1,
                                  'The usual lambda is 0.6 (1 = relevance only, 0 = diversity only).');
    IF n = 0 THEN
        RETURN;
    END IF;
    SELECT min(x), max(x) INTO lo, hi FROM pg_catalog.unnest(relevance) AS x;
    rel := ARRAY(SELECT CASE WHEN hi > lo THEN (coalesce(x, lo) - lo) / (hi - lo) ELSE 1.0 END
                 FROM pg_catalog.unnest(relevance) WITH ORDINALITY AS u(x, i) ORDER BY i);
    chosen := pg_catalog.array_fill(false, ARRAY[n]);
    maxsim := pg_catalog.array_fill(0.0::double precision, ARRAY[n]);
    FOR r IN 1 .. least(k, n) LOOP
        best := NULL;
        FOR i IN 1 .. n LOOP
            CONTINUE WHEN chosen[i];
            s := mmr_lambda * rel[i] - (1 - mmr_lambda) * maxsim[i];
            IF best IS NULL OR s > best_s THEN   -- ties keep the earlier (more relevant) position
                best := i;
                best_s := s;
            END IF;
        END LOOP;
        chosen[best] := true;
        memory_id := ids[best];
        mmr_rank := r;
        mmr_score := best_s;
        RETURN NEXT;
        FOR i IN 1 .. n LOOP
            CONTINUE WHEN chosen[i] OR embeddings[i] IS NULL OR embeddings[best] IS NULL;
            sim := 1 - (embeddings[i] <=> embeddings[best]);
            IF sim > maxsim[i] THEN
                maxsim[i] := sim;
            END IF;
        END LOOP;
    END LOOP;
END
$$;
COMMENT ON FUNCTION memsql.mmr_select(bigint[], double precision[], vector[], integer, double precision) IS
$c$Maximal marginal relevance: picks k of n candidates greedily, each time the one maximising
mmr_lambda * relevance' - (1 - mmr_lambda) * (highest cosine similarity to the candidates already picked, 0 for the
first pick and for a NULL embedding), where relevance' is relevance min-max normalised over the n candidates (all
equal -> 1). Ties go to the earlier position, so pass candidates best first.
Args: ids bigint[n], relevance float8[n] (higher = better; NULL = the lowest), embeddings vector[n] (unit vectors or
  NULL), k int >= 1, mmr_lambda float8 in [0, 1] (0.6; 1 = order by relevance only).
Returns (memory_id, mmr_rank 1..min(k, n), mmr_score) in pick order. Used by memory_search (enable_mmr).
Errors: MS002 arrays of different lengths, k < 1 or mmr_lambda outside [0, 1]. Source: sql/functions/60_pipeline.sql.$c$;
