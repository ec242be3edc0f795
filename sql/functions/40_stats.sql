-- Read-only views over the memory.

CREATE OR REPLACE VIEW memsql.memory_stats AS
SELECT m.namespace,
       m.knowledge_type,
       d.adapter,
       count(DISTINCT m.document_id)                     AS documents,
       count(*)                                          AS memories,
       count(*) FILTER (WHERE m.embedding IS NULL)       AS without_embedding,
       coalesce(sum(a.access_count), 0)::bigint          AS accesses,
       min(coalesce(m.source_date, m.created_at))        AS oldest,
       max(coalesce(m.source_date, m.created_at))        AS newest,
       (SELECT count(*) FROM memsql.archive x
        JOIN memsql.documents xd ON xd.namespace = x.namespace AND xd.id = x.document_id
        WHERE x.namespace = m.namespace AND x.knowledge_type = m.knowledge_type
          AND xd.adapter = d.adapter)                    AS archived,
       count(*) FILTER (WHERE m.valid_to IS NOT NULL)    AS superseded
FROM memsql.memories m
JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id
LEFT JOIN memsql.memory_access a ON a.namespace = m.namespace AND a.memory_id = m.id
GROUP BY m.namespace, m.knowledge_type, d.adapter;
COMMENT ON VIEW memsql.memory_stats IS
$c$Counts per (namespace, knowledge_type, adapter): documents, memories, memories without embedding (the embedding
backlog), total accesses, oldest and newest source_date (else created_at), memories archived by forgetting,
superseded: memories that are not the current version (memory_update, re-ingest; counted in memories too).
Index sizes: memsql.memory_index_stats. Source: sql/functions/40_stats.sql.$c$;

CREATE OR REPLACE VIEW memsql.memory_index_stats AS
SELECT c.relname::text AS index_name, t.relname::text AS table_name, am.amname::text AS method,
       pg_relation_size(c.oid) AS size_bytes, pg_size_pretty(pg_relation_size(c.oid)) AS size, i.indisvalid AS valid
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_am am ON am.oid = c.relam
WHERE t.relnamespace = 'memsql'::regnamespace;
COMMENT ON VIEW memsql.memory_index_stats IS
$c$Every index of memsql's tables: name, table, access method (hnsw, gin, btree), size in bytes and pretty, valid.
Source: sql/functions/40_stats.sql.$c$;
