-- Access statistics: memory_touch records that memories were used (opened, fetched in full, cited back). A memory
-- that only appears in a result list is not counted (memory_search's touch defaults to false), so the frequency
-- factor of the memory axis and forgetting see use, not exposure. CREATE OR REPLACE only.

CREATE OR REPLACE FUNCTION memsql.memory_touch(memory_ids bigint[], namespace text DEFAULT 'default')
RETURNS TABLE (memory_id bigint, access_count bigint, last_accessed_at timestamptz)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns  text := memory_touch.namespace;
BEGIN
    IF ns IS NULL OR memory_touch.memory_ids IS NULL OR pg_catalog.array_position(memory_touch.memory_ids, NULL) IS NOT NULL THEN
        PERFORM memsql.raise_invalid('memory_touch: memory_ids and namespace must not be NULL nor hold a NULL',
                                     'Pass the ids of the memories used, e.g. memory_touch(''{42,43}'').');
    END IF;
    RETURN QUERY
    WITH
    -- the memories that exist and stay (one being deleted right now holds a row lock and is skipped); shared locks
    -- in id order, as memory_search's touch
    live AS (
        SELECT m.id FROM memsql.memories m
        WHERE m.namespace = ns AND m.id = ANY (memory_touch.memory_ids)
        ORDER BY m.id
        FOR KEY SHARE SKIP LOCKED
    ),
    counted AS (
        INSERT INTO memsql.memory_access AS a (namespace, memory_id, access_count, last_accessed_at)
        SELECT ns, l.id, 1, now() FROM live l ORDER BY l.id
        ON CONFLICT (namespace, memory_id)
        DO UPDATE SET access_count = a.access_count + 1, last_accessed_at = excluded.last_accessed_at
        RETURNING a.memory_id, a.access_count, a.last_accessed_at
    )
    SELECT c.memory_id, c.access_count::bigint, c.last_accessed_at FROM counted c ORDER BY c.memory_id;
END
$$;
COMMENT ON FUNCTION memsql.memory_touch(bigint[], text) IS
$c$Counts one access of each memory used (opened, fetched in full, cited back): access_count + 1 and
last_accessed_at = now() in memsql.memory_access (duplicates in memory_ids count once). memory_search counts nothing
by default (touch => false): a memory in a result list is not a memory used, and the same query twice returns the
same order. The counts feed the memory axis (frequency factor) and memory_forget (a memory used within recent_days
is kept).
Args: memory_ids bigint[] (ids from memory_search); namespace text ('default').
Returns one row per memory counted, by id: (memory_id, access_count after this call, last_accessed_at); an id that
  is not a live memory of the namespace (unknown, archived, being deleted) returns no row.
Errors: MS002 NULL namespace, memory_ids or id. Source: sql/functions/22_access.sql.$c$;
