-- memsql schema, version 32: importance compared at the precision it is stored in. memories.importance is real; 0.7
-- stored is 0.699999988 as a double, so "importance >= 0.7" was false for a memory given importance 0.7 (and 0.9):
-- it was no priority memory, and a cutoff of 0.7 left it out. The priority condition now compares with 0.7::real;
-- the partial index memories_priority it defines is rebuilt. The body below is the one this version released;
-- sql/functions/10_util.sql holds the current one (applied after every migrate). Released files are never edited:
-- add a later version instead.

CREATE OR REPLACE FUNCTION memsql.is_priority(knowledge_type text, importance real) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN knowledge_type = 'principle' OR importance >= 0.7::real;

REINDEX INDEX memsql.memories_priority;
