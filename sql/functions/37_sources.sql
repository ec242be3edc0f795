-- Sources on disk: document_sources (the documents read from files, for the client to check which files are gone)
-- and document_prune (archive the memories of documents whose files are gone; dry run first). CREATE OR REPLACE only.
--
-- The database cannot see the client's file system: the client lists the file documents (document_sources), checks
-- which paths no longer exist, and passes those documents to document_prune. A pruned document keeps its row (so
-- memory_restore can bring its memories back); its content_hash becomes 'missing:' || the old hash, so the same
-- file, should it come back, is ingested again (its hash no longer matches) and is never taken for a copy of another.

-- ---------------------------------------------------------------------------------------------
-- document_sources

CREATE OR REPLACE FUNCTION memsql.document_sources(
    namespace  text    DEFAULT NULL,
    under      text[]  DEFAULT NULL
)
RETURNS TABLE (namespace text, document_id bigint, source text, adapter text, memories bigint)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT d.namespace, d.id, d.source_uri, d.adapter,
           (SELECT count(*) FROM memsql.memories m
            WHERE m.namespace = d.namespace AND m.document_id = d.id AND m.valid_to IS NULL)
    FROM memsql.documents d
    WHERE (document_sources.namespace IS NULL OR d.namespace = document_sources.namespace)
      AND d.source_uri LIKE '/%'
      AND (document_sources.under IS NULL
           OR EXISTS (SELECT 1 FROM pg_catalog.unnest(document_sources.under) AS u(p)
                      WHERE d.source_uri = u.p OR starts_with(d.source_uri, rtrim(u.p, '/') || '/')))
      AND EXISTS (SELECT 1 FROM memsql.memories m
                  WHERE m.namespace = d.namespace AND m.document_id = d.id AND m.valid_to IS NULL)
    ORDER BY d.namespace, d.source_uri, d.id
$$;
COMMENT ON FUNCTION memsql.document_sources(text, text[]) IS
$c$The documents read from files (source_uri an absolute path) that have current memories (a pruned document has
none until memory_restore brings them back), for a client to check which files are gone (memsql ingest reports them, --prune archives them; memsql health lists
them).
Args: namespace text (NULL = every namespace), under text[] (absolute paths of folders or files: only documents at
  one of them or below; NULL = all).
Returns (namespace, document_id, source (the source_uri), adapter, memories (current ones)), by namespace and source.
Errors: none. Cost: one pass over the namespace's documents. Source: sql/functions/37_sources.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- document_prune

CREATE OR REPLACE FUNCTION memsql.document_prune(
    namespace     text,
    document_ids  bigint[],
    dry_run       boolean  DEFAULT true,
    reason        text     DEFAULT NULL   -- NULL = 'source missing on disk: <source>'
)
RETURNS TABLE (document_id bigint, source text, memories bigint, archived boolean)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns  text := document_prune.namespace;
BEGIN
    IF ns IS NULL OR document_prune.document_ids IS NULL OR document_prune.dry_run IS NULL
       OR pg_catalog.array_position(document_prune.document_ids, NULL) IS NOT NULL THEN
        PERFORM memsql.raise_invalid('document_prune: namespace, document_ids and dry_run must not be NULL',
                                     'Pass the ids of documents whose files are gone (memsql.document_sources).');
    END IF;
    IF document_prune.dry_run THEN
        RETURN QUERY
        SELECT d.id, coalesce(d.source_uri, d.source_key),
               (SELECT count(*) FROM memsql.memories m WHERE m.namespace = ns AND m.document_id = d.id), false
        FROM memsql.documents d
        WHERE d.namespace = ns AND d.id = ANY (document_prune.document_ids)
        ORDER BY d.id;
        RETURN;
    END IF;
    -- the documents first (in id order), then their memories: a concurrent re-ingest waits or is waited for
    PERFORM 1 FROM memsql.documents d WHERE d.namespace = ns AND d.id = ANY (document_prune.document_ids)
    ORDER BY d.id FOR UPDATE;
    UPDATE memsql.documents d
    SET content_hash = 'missing:' || d.content_hash, updated_at = now()
    WHERE d.namespace = ns AND d.id = ANY (document_prune.document_ids) AND NOT starts_with(d.content_hash, 'missing:');
    RETURN QUERY
    WITH
    moved AS (
        DELETE FROM memsql.memories m
        WHERE m.namespace = ns AND m.document_id = ANY (document_prune.document_ids)
        RETURNING m.namespace, m.id, m.document_id, m.chunk_index, m.content, m.content_hash, m.knowledge_type,
                  m.importance, m.topics, m.tags, m.metadata, m.source_date, m.created_at, m.ts_config,
                  m.valid_to, m.superseded_by, m.bm25_len
    ),
    kept AS (
        INSERT INTO memsql.archive AS ar (namespace, id, document_id, chunk_index, content, content_hash, knowledge_type,
                                          importance, topics, tags, metadata, source_date, created_at, last_accessed_at,
                                          access_count, score, reason, archived_at, document_hash, ts_config,
                                          valid_to, superseded_by, bm25_len)
        SELECT mv.namespace, mv.id, mv.document_id, mv.chunk_index, mv.content, mv.content_hash, mv.knowledge_type,
               mv.importance, mv.topics, mv.tags, mv.metadata, mv.source_date, mv.created_at, a.last_accessed_at,
               coalesce(a.access_count, 0), NULL,
               coalesce(document_prune.reason, 'source missing on disk: ' || coalesce(d.source_uri, d.source_key)),
               now(), d.content_hash, mv.ts_config, mv.valid_to, mv.superseded_by, mv.bm25_len
        FROM moved mv
        JOIN memsql.documents d ON d.namespace = mv.namespace AND d.id = mv.document_id
        LEFT JOIN memsql.memory_access a ON a.namespace = mv.namespace AND a.memory_id = mv.id
        ORDER BY mv.id   -- no ON CONFLICT: a live memory's id is never in the archive (restore removes it there);
                         -- should one be, the statement fails and nothing moves
        RETURNING ar.document_id
    )
    SELECT d.id, coalesce(d.source_uri, d.source_key),
           (SELECT count(*) FROM kept k WHERE k.document_id = d.id), true
    FROM memsql.documents d
    WHERE d.namespace = ns AND d.id = ANY (document_prune.document_ids)
    ORDER BY d.id;
END
$$;
COMMENT ON FUNCTION memsql.document_prune(text, bigint[], boolean, text) IS
$c$Documents whose source files are gone: with dry_run => true (the default) lists them; with false archives every
memory of each (current and superseded versions, with access counts; reason 'source missing on disk: <path>', or
the reason given: a conversation deleted from its export) into
memsql.archive, where memory_restore brings them back. The document row stays; its content_hash becomes
'missing:' || the old hash (memory_restore accepts the memories of that state), so the file, if it comes back, is
ingested again, and a pruned document is never taken for a copy of a new one.
Args: namespace text, document_ids bigint[] (from memsql.document_sources, after the client checked the paths),
  dry_run boolean (true), reason text (NULL = 'source missing on disk: <source>'): the archive's reason.
Returns one row per document found, by id: (document_id, source (source_uri, else source_key), memories (those it holds,
  or moved to the archive by this call), archived (true when this call moved them)). Unknown ids give no row.
Errors: MS002 NULL argument or id. Cost: one delete and one insert over the documents' memories.
Source: sql/functions/37_sources.sql.$c$;
