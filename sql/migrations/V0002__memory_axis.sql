-- memsql schema, version 2: the memory axis tools (forget / restore / embedding backlog).
-- Released files are never edited: add V0003__... instead.

-- The content hash of the document a memory belonged to when it was archived. memory_restore
-- refuses to put a chunk back into a document that has been re-ingested since (the chunk would
-- mix two versions of the source). NULL = unknown (restore allowed).
ALTER TABLE memsql.archive ADD COLUMN document_hash text;
COMMENT ON COLUMN memsql.archive.document_hash IS
    'documents.content_hash at archiving time; memory_restore skips the row when the document has changed since. '
    'NULL = unknown.';

-- The embedding backlog (memories written or restored without a vector). Partial: it holds only
-- the pending rows, so it stays tiny and memory_pending_embeddings reads it in id order.
CREATE INDEX memories_pending_embedding ON memsql.memories (id, namespace) WHERE embedding IS NULL;

-- Row types of the memory axis functions whose result columns share a name with an argument
-- (memory_neighbors(memory_id) -> memory_id, find_by_tag(tags) -> tags, ...): PL/pgSQL does not
-- allow an argument and a RETURNS TABLE column of the same name, a named row type does.
CREATE TYPE memsql.pending_embedding AS (
    namespace  text,
    memory_id  bigint,
    content    text
);
COMMENT ON TYPE memsql.pending_embedding IS
    'Row of memory_pending_embeddings: a memory whose embedding is NULL (namespace, memory_id, content).';

CREATE TYPE memsql.tagged_memory AS (
    memory_id       bigint,
    document_id     bigint,
    chunk_index     integer,
    content         text,
    tags            text[],
    knowledge_type  text,
    importance      real,
    source_date     timestamptz,
    created_at      timestamptz
);
COMMENT ON TYPE memsql.tagged_memory IS
    'Row of find_by_tag: a memory with its tags, knowledge_type, importance and dates.';

CREATE TYPE memsql.memory_neighbor AS (
    memory_id    bigint,
    document_id  bigint,
    chunk_index  integer,
    content      text,
    is_target    boolean
);
COMMENT ON TYPE memsql.memory_neighbor IS
    'Row of memory_neighbors: a chunk of the document around a memory; is_target marks the memory asked for.';

CREATE TYPE memsql.duplicate_pair AS (
    memory_id     bigint,
    duplicate_of  bigint,
    similarity    double precision,
    kind          text
);
COMMENT ON TYPE memsql.duplicate_pair IS
    'Row of memory_duplicates: memory_id > duplicate_of, cosine similarity (1.0 for exact), kind exact or near.';
