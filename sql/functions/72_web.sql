-- Reads for the web page of `memsql serve`, agents and any SQL caller: memories by id with their document, and the
-- number of memories over time. CREATE OR REPLACE only.

-- ---------------------------------------------------------------------------------------------
-- memory_get

CREATE OR REPLACE FUNCTION memsql.memory_get(
    memory_ids  bigint[],
    namespace   text     DEFAULT 'default',
    max_chars   integer  DEFAULT 4000
)
RETURNS SETOF memsql.memory_record
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns     text := memory_get.namespace;
    cut    integer := memory_get.max_chars;
    n_rows bigint := 0;
BEGIN
    IF ns IS NULL OR memory_ids IS NULL OR pg_catalog.array_position(memory_ids, NULL) IS NOT NULL THEN
        PERFORM memsql.raise_invalid('memory_get: memory_ids (and each id) and namespace must not be NULL',
                                     'Pass ids from memory_search or memory_context, e.g. memory_get(ARRAY[12, 40]).');
    END IF;
    IF pg_catalog.cardinality(memory_ids) = 0 OR pg_catalog.cardinality(memory_ids) > 100 THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_get: between 1 and 100 ids at once, got %s',
                                            pg_catalog.cardinality(memory_ids)),
                                     'Ask for more in several calls.');
    END IF;
    PERFORM memsql.check_argument('memory_get', 'max_chars', cut, 100, 100000,
                                  'max_chars caps each memory''s text; 4000 is the default.');
    RETURN QUERY
    SELECT x.id, x.document_id, x.chunk_index,
           CASE WHEN length(x.content) > cut THEN left(x.content, cut) ELSE x.content END,
           x.knowledge_type, x.importance, x.tags, x.topics,
           x.metadata, x.ts_config::text, x.source_date, x.created_at, x.valid_to, x.superseded_by, x.has_embedding,
           x.access_count, x.last_accessed_at, x.archived, x.reason, x.archived_at,
           d.source_uri, d.title, d.adapter, d.tags,
           (SELECT count(*) FROM memsql.memories c
            WHERE c.namespace = ns AND c.document_id = x.document_id AND c.valid_to IS NULL),
           length(x.content), length(x.content) > cut
    FROM (SELECT u.id, min(u.ord) AS ord FROM pg_catalog.unnest(memory_ids) WITH ORDINALITY AS u(id, ord) GROUP BY u.id) w
    CROSS JOIN LATERAL (
        SELECT m.id, m.document_id, m.chunk_index, m.content, m.knowledge_type, m.importance, m.tags, m.topics,
               m.metadata, m.ts_config, m.source_date, m.created_at, m.valid_to, m.superseded_by,
               m.embedding IS NOT NULL AS has_embedding, coalesce(a.access_count, 0)::bigint AS access_count,
               a.last_accessed_at, false AS archived, NULL::text AS reason, NULL::timestamptz AS archived_at
        FROM memsql.memories m
        LEFT JOIN memsql.memory_access a ON a.namespace = m.namespace AND a.memory_id = m.id
        WHERE m.namespace = ns AND m.id = w.id
        UNION ALL
        SELECT r.id, r.document_id, r.chunk_index, r.content, r.knowledge_type, r.importance, r.tags, r.topics,
               r.metadata, r.ts_config, r.source_date, r.created_at, r.valid_to, r.superseded_by, false,
               r.access_count, r.last_accessed_at, true, r.reason, r.archived_at
        FROM memsql.archive r
        WHERE r.namespace = ns AND r.id = w.id
        LIMIT 1
    ) x
    LEFT JOIN memsql.documents d ON d.namespace = ns AND d.id = x.document_id
    ORDER BY w.ord;
    GET DIAGNOSTICS n_rows = ROW_COUNT;
    IF n_rows = 0 THEN
        RAISE EXCEPTION 'memory_get: no memory % in namespace %', pg_catalog.array_to_string(memory_ids, ', '), quote_literal(ns)
            USING ERRCODE = 'MS004', HINT = 'Ids come from memory_search, memory_context, memory_add or memsql.archive.';
    END IF;
END
$$;
COMMENT ON FUNCTION memsql.memory_get(bigint[], text, integer) IS
$c$Memories by id with their document and access statistics, live, superseded or archived, in the order asked,
each id once: the agents' full text of a memory_search or memory_context line, and the memory page of
`memsql serve`.
Args: memory_ids bigint[] (1 to 100 ids); namespace text ('default'); max_chars integer 100..100000 (4000): longest
  text returned per memory.
Returns rows of memsql.memory_record: the memory's columns (content cut at max_chars, chars = the whole text's
  length, truncated = it was cut; knowledge_type, importance, tags, topics, metadata, language = its text search
  configuration, source_date, created_at, valid_to and superseded_by of a superseded version), has_embedding,
  access_count, last_accessed_at; archived with archive_reason and archived_at for a forgotten memory (restorable
  with memory_restore); its document's source_uri, title, adapter, document_tags, and document_chunks = the
  document's current chunks. An id found neither live nor archived gives no row. Reads only (no access counted).
Errors: MS002 NULL arguments, no id or more than 100, max_chars out of range; MS004 none of the ids is in the
  namespace (nor in its archive).
Source: sql/functions/72_web.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- memory_timeline

CREATE OR REPLACE FUNCTION memsql.memory_timeline(namespace text DEFAULT NULL, bucket text DEFAULT 'month')
RETURNS SETOF memsql.timeline_bucket
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns  text := memory_timeline.namespace;
    b   text := memory_timeline.bucket;
BEGIN
    IF b IS NULL OR b NOT IN ('day', 'week', 'month', 'year') THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_timeline: bucket must be day, week, month or year, got %s',
                                            coalesce(quote_literal(b), 'NULL')),
                                     'bucket => ''month'' counts memories per calendar month (UTC).');
    END IF;
    RETURN QUERY
    SELECT t.namespace, t.bucket_start, sum(t.live)::bigint, sum(t.gone)::bigint
    FROM (
        SELECT m.namespace, date_trunc(b, coalesce(m.source_date, m.created_at), 'UTC') AS bucket_start,
               1 AS live, 0 AS gone
        FROM memsql.memories m
        WHERE (ns IS NULL OR m.namespace = ns) AND m.valid_to IS NULL
        UNION ALL
        SELECT r.namespace, date_trunc(b, coalesce(r.source_date, r.created_at), 'UTC'), 0, 1
        FROM memsql.archive r
        WHERE (ns IS NULL OR r.namespace = ns)
    ) t
    GROUP BY t.namespace, t.bucket_start
    ORDER BY t.namespace, t.bucket_start;
END
$$;
COMMENT ON FUNCTION memsql.memory_timeline(text, text) IS
$c$Memories over time: how many current memories (and archived ones) were stated in each period, by
coalesce(source_date, created_at) truncated in UTC.
Args: namespace text (NULL = every namespace the caller may read); bucket text 'day', 'week', 'month' (default)
  or 'year'.
Returns (namespace, bucket_start timestamptz, memories bigint, archived bigint) ordered by namespace, bucket_start;
  periods without memories are absent.
Errors: MS002 bucket is not day, week, month or year.
Source: sql/functions/72_web.sql.$c$;
