-- One row per namespace: documents, memories, the embedding backlog (memories the worker has not embedded yet)
-- and accesses, from the memory_stats view.
{{ config(materialized='view') }}

select
    namespace,
    sum(documents)::bigint          as documents,
    sum(memories)::bigint           as memories,
    sum(without_embedding)::bigint  as without_embedding,
    sum(accesses)::bigint           as accesses,
    max(newest)                     as newest
from {{ source('memsql', 'memory_stats') }}
group by namespace
