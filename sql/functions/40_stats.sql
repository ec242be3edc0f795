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
       max(coalesce(m.source_date, m.created_at))        AS newest
FROM memsql.memories m
JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id
LEFT JOIN memsql.memory_access a ON a.namespace = m.namespace AND a.memory_id = m.id
GROUP BY m.namespace, m.knowledge_type, d.adapter;
COMMENT ON VIEW memsql.memory_stats IS
$c$Counts per (namespace, knowledge_type, adapter): documents, memories, memories without embedding (the embedding
backlog), total accesses, oldest and newest source_date (else created_at). Source: sql/functions/40_stats.sql.$c$;
