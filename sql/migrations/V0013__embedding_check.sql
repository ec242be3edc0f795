-- memsql schema, version 13: every stored embedding is checked at the door (memsql.vector_problem, 10_util.sql):
-- whatever writes it (memory_add, the worker, COPY from an ingest, an UPDATE), a vector the exact scan and the
-- half-precision HNSW index would not see alike is refused with SQLSTATE MS005.
-- Released files are never edited: add a later version instead.

-- The trigger's function; its current body lives in sql/functions/15_triggers.sql (applied after every migrate).
CREATE OR REPLACE FUNCTION memsql.memories_embedding_check() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RETURN NEW;
END $$;

CREATE TRIGGER memories_embedding_check BEFORE INSERT OR UPDATE OF embedding ON memsql.memories
    FOR EACH ROW WHEN (NEW.embedding IS NOT NULL) EXECUTE FUNCTION memsql.memories_embedding_check();
