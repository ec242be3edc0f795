-- The memories that answer a question, as a table refreshed by every `dbt run`. memory_search is called without
-- query embeddings: the running memsql worker embeds the question (dense arm + BM25); without a worker the
-- search is lexical only (a NOTICE in dbt's log). touch => false: a report is not a use of the memories.
{{ config(materialized='table') }}

select
    s.memory_id,
    s.score,
    s.dense_rank,
    s.lexical_rank,
    s.knowledge_type,
    s.content
from memsql.memory_search(
    '{{ var("question") | replace("'", "''") }}',
    k => 5,
    namespace => '{{ var("namespace") | replace("'", "''") }}',
    touch => false
) as s
