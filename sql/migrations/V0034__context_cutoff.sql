-- memsql schema, version 34: memory_context takes memory_rerank and importance_threshold, as memory_search does (it
-- left out memories below a fixed 0.3 whatever cutoff the caller's search used). Released files are never edited:
-- add a later version instead.

-- Its argument list changes, so the old signature is dropped (sql/functions/70_context.sql creates the new one, the
-- new arguments last: calls that name their arguments, or pass the first ones by position, are unchanged).
DROP FUNCTION IF EXISTS memsql.memory_context(text, text, vector[], integer, text, text[], integer, boolean);
