-- memsql schema, version 7: the text pipeline (issue 8): topics filter index, memory_add with topics.
-- Released files are never edited: add a later version instead.

-- memory_search(..., topics => ARRAY[...]) keeps memories sharing a topic (memories.topics && topics); the
-- GIN index serves that overlap test and find-by-topic queries.
CREATE INDEX IF NOT EXISTS memories_topics_gin ON memsql.memories USING gin (topics);

-- memory_add gains a topics argument at the end: the old signature is dropped here
-- (sql/functions/30_write.sql creates the new one).
DROP FUNCTION IF EXISTS memsql.memory_add(text, vector, text, text, real, text[], jsonb, timestamptz, text);
