-- memsql schema, version 7: the text pipeline (issue 8): topics filter index, memory_add with topics.
-- Released files are never edited: add a later version instead.

-- memory_search(..., topics => ARRAY[...]) keeps memories sharing a topic (memories.topics && topics); the
-- GIN index serves that overlap test and find-by-topic queries.
CREATE INDEX IF NOT EXISTS memories_topics_gin ON memsql.memories USING gin (topics);

-- memory_add gains a topics argument at the end (after V0004's language): the old signature is dropped here
-- (sql/functions/30_write.sql creates the new one).
DROP FUNCTION IF EXISTS memsql.memory_add(text, vector, text, text, real, text[], jsonb, timestamptz, text, text);

-- memory_search gains topics, ef_search, enable_mmr and mmr_lambda at the end of its arguments: the old
-- signature is dropped here (sql/functions/20_search.sql creates the new one).
DROP FUNCTION IF EXISTS memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text);
