-- Reading around and over the memories: memory_neighbors (the chunks around a hit), memory_duplicates
-- (exact and near copies, a report) and memory_health (checks of the store). CREATE OR REPLACE only.

-- ---------------------------------------------------------------------------------------------
-- memory_neighbors

CREATE OR REPLACE FUNCTION memsql.memory_neighbors(
    memory_id  bigint,
    namespace  text     DEFAULT 'default',
    before     integer  DEFAULT 1,
    after      integer  DEFAULT 1
)
RETURNS SETOF memsql.memory_neighbor
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns   text := memory_neighbors.namespace;
    doc  bigint;
    ci   integer;
    vt   timestamptz;   -- versions: the target's valid_to (NULL = current)
BEGIN
    IF ns IS NULL OR memory_neighbors.memory_id IS NULL THEN
        PERFORM memsql.raise_invalid('memory_neighbors: memory_id and namespace must not be NULL',
                                     'Pass a memory id from memory_search, e.g. memory_neighbors(42).');
    END IF;
    PERFORM memsql.check_argument('memory_neighbors', 'before', memory_neighbors.before, 0, 1000,
                                  'before => 1, after => 1 returns the chunk with one neighbour on each side.');
    PERFORM memsql.check_argument('memory_neighbors', 'after', memory_neighbors.after, 0, 1000,
                                  'before => 1, after => 1 returns the chunk with one neighbour on each side.');
    SELECT m.document_id, m.chunk_index, m.valid_to INTO doc, ci, vt
    FROM memsql.memories m WHERE m.namespace = ns AND m.id = memory_neighbors.memory_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'memory_neighbors: no memory % in namespace %', memory_neighbors.memory_id, quote_literal(ns)
            USING ERRCODE = 'MS004',
                  HINT = 'An archived memory comes back with memory_restore(ARRAY[id]); see memsql.archive.';
    END IF;
    RETURN QUERY
    SELECT w.id, w.document_id, w.chunk_index, w.content, w.id = memory_neighbors.memory_id
    FROM (
        (SELECT m.id, m.document_id, m.chunk_index, m.content
         FROM memsql.memories m
         WHERE m.namespace = ns AND m.document_id = doc AND m.chunk_index < ci
           AND CASE WHEN vt IS NULL THEN m.valid_to IS NULL   -- versions: the chunks of the target's version
                    ELSE tstzrange(m.created_at, m.valid_to) @> (vt - interval '1 microsecond') END
         ORDER BY m.chunk_index DESC
         LIMIT memory_neighbors.before)
        UNION ALL
        (SELECT m.id, m.document_id, m.chunk_index, m.content
         FROM memsql.memories m
         WHERE m.namespace = ns AND m.id = memory_neighbors.memory_id)
        UNION ALL
        (SELECT m.id, m.document_id, m.chunk_index, m.content
         FROM memsql.memories m
         WHERE m.namespace = ns AND m.document_id = doc AND m.chunk_index > ci
           AND CASE WHEN vt IS NULL THEN m.valid_to IS NULL   -- versions: the chunks of the target's version
                    ELSE tstzrange(m.created_at, m.valid_to) @> (vt - interval '1 microsecond') END
         ORDER BY m.chunk_index
         LIMIT memory_neighbors.after)
    ) w
    ORDER BY w.chunk_index;
END
$$;
COMMENT ON FUNCTION memsql.memory_neighbors(bigint, text, integer, integer) IS
$c$The chunks around a memory in its document, for reading a search hit in context.
Args: memory_id bigint, namespace text ('default'), before, after integer 0..1000 (1): how many live chunks to take
  on each side (archived chunks are skipped, so the window counts the chunks that exist, not chunk_index values).
  Versions: around a current memory, current chunks; around a superseded one, the chunks valid just before it ended.
Returns (memory_id, document_id, chunk_index, content, is_target) ordered by chunk_index.
Errors: MS002 NULL or out-of-range argument; MS004 no such memory in the namespace.
Source: sql/functions/54_inspect.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- memory_duplicates

CREATE OR REPLACE FUNCTION memsql.normalized_content_hash(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT
RETURN md5(lower(btrim(regexp_replace(content, '\s+', ' ', 'g'))));
COMMENT ON FUNCTION memsql.normalized_content_hash(text) IS
$c$md5 of a text lower-cased with white space runs collapsed to one space and trimmed: equal for texts that differ
only in case and spacing. Args: content text. Returns text (32 hex digits). Used by memory_duplicates.
Source: sql/functions/54_inspect.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_duplicates(
    namespace   text              DEFAULT 'default',
    similarity  double precision  DEFAULT 0.95,
    max_pairs   integer           DEFAULT 1000
)
RETURNS SETOF memsql.duplicate_pair
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET hnsw.ef_search = 40
SET hnsw.iterative_scan = 'relaxed_order'
AS $$
#variable_conflict use_column
DECLARE
    ns  text := memory_duplicates.namespace;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_duplicates: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    PERFORM memsql.check_argument('memory_duplicates', 'similarity', memory_duplicates.similarity, 0.01, 1,
                                  'Cosine similarity of the embeddings; 0.95 finds near-verbatim copies.');
    PERFORM memsql.check_argument('memory_duplicates', 'max_pairs', memory_duplicates.max_pairs, 1, 100000,
                                  'max_pairs caps the report, e.g. max_pairs => 1000.');
    RETURN QUERY
    WITH
    norm AS (
        SELECT m.id, memsql.normalized_content_hash(m.content) AS h
        FROM memsql.memories m
        WHERE m.namespace = ns AND m.valid_to IS NULL   -- versions: current versions
    ),
    grp AS (
        SELECT n.id, n.h, min(n.id) OVER (PARTITION BY n.h) AS first_id
        FROM norm n
    ),
    exact AS (
        SELECT g.id AS a, g.first_id AS b, 1.0::float8 AS sim, 'exact'::text AS kind
        FROM grp g
        WHERE g.id > g.first_id
    ),
    knn AS (
        SELECT greatest(m.id, nb.id) AS a, least(m.id, nb.id) AS b, 1 - nb.dist AS sim
        FROM memsql.memories m
        CROSS JOIN LATERAL (
            SELECT o.id, o.embedding <=> m.embedding AS dist
            FROM memsql.memories o
            WHERE o.namespace = ns AND o.embedding IS NOT NULL AND o.valid_to IS NULL
            ORDER BY o.embedding::halfvec(384) <=> m.embedding::halfvec(384)   -- the HNSW index (V0009)
            LIMIT 6
        ) nb
        WHERE m.namespace = ns AND m.embedding IS NOT NULL AND m.valid_to IS NULL AND nb.id <> m.id
          AND 1 - nb.dist >= memory_duplicates.similarity
    ),
    near AS (
        SELECT q.a, q.b, max(q.sim) AS sim, 'near'::text AS kind
        FROM knn q
        JOIN grp ga ON ga.id = q.a
        JOIN grp gb ON gb.id = q.b
        WHERE ga.h <> gb.h
        GROUP BY q.a, q.b
    )
    SELECT r.a, r.b, r.sim, r.kind
    FROM (SELECT * FROM exact UNION ALL SELECT * FROM near) r
    ORDER BY r.kind, r.sim DESC, r.a, r.b
    LIMIT memory_duplicates.max_pairs;
END
$$;
COMMENT ON FUNCTION memsql.memory_duplicates(text, double precision, integer) IS
$c$Reports duplicate memories in a namespace (current versions only); never deletes anything.
Args: namespace text ('default'), similarity double precision 0.01..1 (0.95): the cosine similarity from which two
  embeddings count as near duplicates; max_pairs integer 1..100000 (1000).
Returns (memory_id, duplicate_of, similarity, kind), each pair once with memory_id > duplicate_of:
  kind 'exact' (similarity 1.0): equal content after lower() and collapsing white space; every copy points at the
    smallest id of its group;
  kind 'near': cosine similarity >= similarity among the 5 nearest neighbours of each memory (HNSW), exact pairs excluded.
  Ordered by kind ('exact' first), similarity DESC, memory_id, duplicate_of. Memories without an embedding take part in
  'exact' only. Cost: one nearest-neighbour scan per memory.
Errors: MS002 invalid argument. Source: sql/functions/54_inspect.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- memory_health

CREATE OR REPLACE FUNCTION memsql.memory_health(namespace text DEFAULT NULL)
RETURNS TABLE ("check" text, ok boolean, value text, hint text)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns        text := memory_health.namespace;
    n         bigint;
    model     text;
    dim_set   text;
    dim_col   integer;
    bad       text;
BEGIN
    SELECT count(*) INTO n FROM memsql.memories m
    WHERE m.embedding IS NULL AND (ns IS NULL OR m.namespace = ns);
    RETURN QUERY SELECT 'memories_without_embedding'::text, n = 0, n::text,
        'The dense arm cannot find them (the lexical arm can): embed them with memory_pending_embeddings and '
        'memory_set_embeddings: a running memsql worker does this (memsql worker start), so does Memory.restore.'::text;

    SELECT count(*) INTO n FROM memsql.memory_windows w
    WHERE w.embeddings IS NULL AND (ns IS NULL OR w.namespace = ns);
    RETURN QUERY SELECT 'memories_without_windows'::text, n = 0, n::text,
        'Memories whose window embeddings are not computed yet (memory_pending_windows): the dense arm scores them by '
        'their own embedding until then. A running memsql worker computes them (memsql worker start; memsql init '
        'restarts one started before an upgrade), so does Memory.embed_pending.'::text;

    SELECT count(*) INTO n FROM memsql.documents d
    WHERE (ns IS NULL OR d.namespace = ns)
      AND NOT EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = d.namespace AND m.document_id = d.id)
      AND NOT EXISTS (SELECT 1 FROM memsql.archive a WHERE a.namespace = d.namespace AND a.document_id = d.id);
    RETURN QUERY SELECT 'orphan_documents'::text, n = 0, n::text,
        'Documents with no memories, live or archived (e.g. an ingest that wrote none): remove them with '
        'SELECT memsql.delete_document(id, namespace) or ingest the source again.'::text;

    SELECT s.value INTO model FROM memsql.settings s WHERE s.key = 'embedding_model';
    RETURN QUERY SELECT 'embedding_model'::text, model IS NOT NULL, coalesce(model, 'unset'),
        'memsql.settings names the model whose vectors the database holds; memsql init records it.'::text;

    SELECT s.value INTO dim_set FROM memsql.settings s WHERE s.key = 'embedding_dimension';
    SELECT a.atttypmod INTO dim_col FROM pg_attribute a
    WHERE a.attrelid = 'memsql.memories'::regclass AND a.attname = 'embedding' AND NOT a.attisdropped;
    RETURN QUERY SELECT 'embedding_dimension'::text, dim_set IS NOT DISTINCT FROM dim_col::text,
        pg_catalog.format('settings %s, column %s', coalesce(dim_set, 'unset'), coalesce(dim_col::text, 'missing')),
        'The settings and the memories.embedding column must agree with the model; use a new database for another model.'::text;

    SELECT string_agg(pg_catalog.format('%s (%s)', c.relname, t.relname), ', ' ORDER BY c.relname) INTO bad
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_class t ON t.oid = i.indrelid
    WHERE t.relnamespace = 'memsql'::regnamespace AND NOT (i.indisvalid AND i.indisready);
    RETURN QUERY SELECT 'invalid_indexes'::text, bad IS NULL, coalesce(bad, 'none'),
        'An interrupted CREATE INDEX CONCURRENTLY leaves an invalid index: REINDEX INDEX CONCURRENTLY memsql.<name>.'::text;

    SELECT string_agg(pg_catalog.format('%s: %s/%s memories, %s/%s tokens', quote_literal(x.namespace), x.stat_docs, x.real_docs,
                             x.stat_len, x.real_len), '; ' ORDER BY x.namespace) INTO bad
    FROM (
        SELECT coalesce(r.namespace, s.namespace) AS namespace,
               coalesce(s.doc_count, 0) AS stat_docs, coalesce(r.cnt, 0) AS real_docs,
               coalesce(s.total_len, 0) AS stat_len, coalesce(r.len, 0) AS real_len
        FROM (SELECT m.namespace, count(*) AS cnt, sum(m.tsv_len) AS len
              FROM memsql.memories m WHERE ns IS NULL OR m.namespace = ns GROUP BY m.namespace) r
        FULL JOIN (SELECT s.* FROM memsql.namespace_stats s WHERE ns IS NULL OR s.namespace = ns) s
            ON s.namespace = r.namespace
    ) x
    WHERE x.stat_docs <> x.real_docs OR x.stat_len <> x.real_len;
    RETURN QUERY SELECT 'bm25_statistics'::text, bad IS NULL, coalesce(bad, 'exact'),
        'memsql.namespace_stats must equal the memories per namespace (statistics vs actual); a write that bypassed '
        'the triggers (e.g. session_replication_role = replica) breaks it.'::text;
END
$$;
COMMENT ON FUNCTION memsql.memory_health(text) IS
$c$Health checks of the memory store, one row per check: ("check", ok, value, hint). "check" is a reserved word: quote it.
Args: namespace text (NULL = all namespaces; the schema-wide checks ignore it).
Checks: memories_without_embedding (the embedding backlog, ok when 0); memories_without_windows (the window
  embedding backlog, memsql.memory_windows rows with embeddings NULL, ok when 0); orphan_documents (documents with no live or
  archived memory, ok when 0); embedding_model (memsql.settings); embedding_dimension (settings vs the declared
  dimension of memories.embedding, atttypmod); invalid_indexes (pg_index.indisvalid / indisready false on memsql
  tables); bm25_statistics (namespace_stats vs actual memory count and token total).
Returns the rows in that order. Errors: none. Source: sql/functions/54_inspect.sql.$c$;
