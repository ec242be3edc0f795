-- memsql schema, version 33: memory_context takes memory_rerank and importance_threshold, as memory_search does (it
-- left out memories below a fixed 0.3 whatever cutoff the caller's search used). Released files are never edited:
-- add a later version instead.

-- Its argument list changes: sql/functions/70_context.sql creates the new signature, and memsql init drops the old
-- one in the same transaction (memsql.db.apply_functions drops the routines no file defines), so there is no moment
-- without memory_context. This version marks the change for clients (memsql.functions_version).
SELECT 1;
