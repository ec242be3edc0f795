-- memsql schema, version 12: memory_search's arms share one visibility predicate (sql/functions/20_search.sql).
-- Released files are never edited: add a later version instead.

-- What every arm of memory_search keeps: the filters of one call (memsql.search_visible reads them), and the rows
-- an arm returns (memory, its rank in the arm, its score there).
CREATE TYPE memsql.search_filter AS (
    namespace          text,
    knowledge_types    text[],          -- NULL = every type
    tags               text[],          -- NULL = no tag filter; else any of them
    topics             text[],          -- NULL = no topic filter; else any of them
    min_importance     double precision,-- NULL = no cutoff; else importance NULL or >= it
    include_superseded boolean,
    as_of              timestamptz
);
COMMENT ON TYPE memsql.search_filter IS
    'The filters of one memory_search call, applied by memsql.search_visible inside every arm: namespace, '
    'knowledge_types / tags / topics (NULL = no filter; tags and topics: any of), min_importance (NULL = no cutoff; '
    'a memory without importance always passes), include_superseded and as_of (versions).';

CREATE TYPE memsql.search_hit AS (
    memory_id  bigint,
    rank       integer,            -- 1-based rank in the arm (NULL: scored by the arm, not ranked)
    score      double precision    -- the arm's score: cosine similarity, BM25
);
COMMENT ON TYPE memsql.search_hit IS
    'One row of a memory_search arm: memory_id, rank (1-based, NULL = scored only), score (cosine, BM25).';

-- The priority condition (guaranteed candidates) is a function, and the partial index is defined by it: the
-- planner inlines both, so the search's predicate and the index's are the same expression. Its body must not change
-- without a new migration that rebuilds memories_priority (sql/functions/10_util.sql repeats it; a test compares).
CREATE OR REPLACE FUNCTION memsql.is_priority(knowledge_type text, importance real) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN knowledge_type = 'principle' OR importance >= 0.7;

DROP INDEX IF EXISTS memsql.memories_priority;
CREATE INDEX memories_priority ON memsql.memories (namespace) WHERE memsql.is_priority(knowledge_type, importance);
COMMENT ON INDEX memsql.memories_priority IS
    'Priority memories (memsql.is_priority: principles, importance >= 0.7) per namespace: memory_search''s guaranteed '
    'candidates.';

-- Filters that can keep few memories of a large namespace: memory_search counts what they keep (up to a cap)
-- and scans the kept memories exactly when they are few (tags, knowledge types; topics has memories_topics_gin).
CREATE INDEX memories_tags_gin ON memsql.memories USING gin (tags);
CREATE INDEX memories_knowledge_type ON memsql.memories (namespace, knowledge_type);
-- The importance cutoff: does the namespace hold a memory below it (else no arm needs to check it)?
CREATE INDEX memories_importance ON memsql.memories (namespace, importance) WHERE importance IS NOT NULL;
