-- The text pipeline's reads (issue 8): nearest memories for the autosave filter's novelty, the namespace's
-- active topics for its relevance, and knowledge_type half-life overrides from the configuration.

CREATE OR REPLACE FUNCTION memsql.memory_nearest(
    embeddings  vector[],
    namespace   text    DEFAULT 'default',
    k           integer DEFAULT 1
)
RETURNS TABLE (query_index integer, memory_id bigint, similarity double precision)
LANGUAGE plpgsql STABLE
SET search_path = memsql, public, pg_catalog
SET hnsw.iterative_scan = 'relaxed_order'
AS $$
#variable_conflict use_column
BEGIN
    IF memory_nearest.namespace IS NULL THEN
        PERFORM memsql.raise_invalid('memory_nearest: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF k IS NULL OR k < 1 OR k > 100 THEN
        PERFORM memsql.raise_invalid(format('memory_nearest: k must be between 1 and 100, got %s', k),
                                     'k is the number of neighbours per embedding, e.g. 1.');
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(embeddings) AS e WHERE e IS NULL OR vector_dims(e) <> 384) THEN
        RAISE EXCEPTION 'memory_nearest: embeddings must be 384-dimensional and not NULL'
            USING ERRCODE = 'MS005', HINT = 'Embed with all-MiniLM-L6-v2 (memsql.embedding).';
    END IF;
    RETURN QUERY
    SELECT q.i::integer, c.id, 1 - c.dist
    FROM unnest(embeddings) WITH ORDINALITY AS q(vec, i)
    CROSS JOIN LATERAL (
        SELECT m.id, m.embedding <=> q.vec AS dist
        FROM memsql.memories m
        WHERE m.namespace = memory_nearest.namespace AND m.embedding IS NOT NULL
        ORDER BY m.embedding <=> q.vec   -- distance alone: the HNSW index serves it
        LIMIT k
    ) c
    ORDER BY q.i, c.dist, c.id;
END
$$;
COMMENT ON FUNCTION memsql.memory_nearest(vector[], text, integer) IS
$c$Nearest memories of each embedding in a namespace, through the HNSW index (cosine): the autosave filter's novelty
(1 - similarity of the nearest memory).
Args: embeddings vector(384)[] (unit vectors), namespace text ('default'), k int 1..100 (1) neighbours per embedding.
Returns (query_index 1-based position in embeddings, memory_id, similarity = cosine in [-1, 1]), best first per
  query_index; no row for an embedding when the namespace holds no embedded memory. Approximate (HNSW).
Errors: MS002 NULL namespace or k out of range, MS005 an embedding NULL or not 384-d.
Source: sql/functions/60_pipeline.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.namespace_topics(namespace text DEFAULT 'default', max_topics integer DEFAULT 20)
RETURNS TABLE (topic text, memories bigint)
LANGUAGE sql STABLE
SET search_path = memsql, public, pg_catalog
AS $$
    SELECT t.topic, count(*) AS memories
    FROM memsql.memories m CROSS JOIN LATERAL unnest(m.topics) AS t(topic)
    WHERE m.namespace = namespace_topics.namespace
    GROUP BY t.topic
    ORDER BY count(*) DESC, t.topic
    LIMIT greatest(coalesce(max_topics, 20), 0)
$$;
COMMENT ON FUNCTION memsql.namespace_topics(text, integer) IS
$c$The active topics of a namespace: topic labels by the number of memories carrying them, most used first (ties by
label). Args: namespace text ('default'), max_topics int (20; NULL = 20, negative = 0). Returns (topic, memories).
Used by the autosave filter's relevance criterion. Errors: none. Source: sql/functions/60_pipeline.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.knowledge_type_set(
    name            text,
    half_life_days  double precision,
    description     text DEFAULT NULL
)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    action text;
BEGIN
    IF knowledge_type_set.name IS NULL OR knowledge_type_set.name !~ '^[a-z][a-z0-9_]{0,62}$' THEN
        PERFORM memsql.raise_invalid(format('knowledge_type_set: bad name %s', coalesce(quote_literal(knowledge_type_set.name), 'NULL')),
                                     'Names are lower case: a letter, then letters, digits or _ (at most 63).');
    END IF;
    IF knowledge_type_set.half_life_days IS NOT NULL AND (knowledge_type_set.half_life_days <= 0
            OR knowledge_type_set.half_life_days = 'NaN' OR knowledge_type_set.half_life_days = 'Infinity') THEN
        PERFORM memsql.raise_invalid(format('knowledge_type_set: half_life_days must be > 0 or NULL, got %s',
                                            knowledge_type_set.half_life_days), 'NULL means the type never decays.');
    END IF;
    INSERT INTO memsql.knowledge_types AS t (name, half_life_days, description)
    VALUES (knowledge_type_set.name, knowledge_type_set.half_life_days,
            coalesce(knowledge_type_set.description, 'Added by the configuration ([memory.scoring] half_life_days).'))
    ON CONFLICT (name) DO UPDATE
        SET half_life_days = excluded.half_life_days,
            description = coalesce(knowledge_type_set.description, t.description)
    RETURNING CASE WHEN xmax = 0 THEN 'inserted' ELSE 'updated' END INTO action;
    RETURN action;
END
$$;
COMMENT ON FUNCTION memsql.knowledge_type_set(text, double precision, text) IS
$c$Sets the half-life of a knowledge_type, adding the type when it is new (memsql init applies the configuration's
[memory.scoring] half_life_days through it). Args: name text (^[a-z][a-z0-9_]{0,62}$), half_life_days (> 0 days;
NULL = never decays), description (NULL keeps the existing one). Returns 'inserted' or 'updated'.
Errors: MS002 bad name or half-life. Source: sql/functions/60_pipeline.sql.$c$;
