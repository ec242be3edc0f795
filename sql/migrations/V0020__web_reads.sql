-- memsql schema, version 20: the row types of memory_get and memory_timeline (sql/functions/72_web.sql), the reads
-- of the web page (memsql serve). Released files are never edited: add a later version instead.

CREATE TYPE memsql.memory_record AS (
    memory_id         bigint,
    document_id       bigint,
    chunk_index       integer,
    content           text,
    knowledge_type    text,
    importance        real,
    tags              text[],
    topics            text[],
    metadata          jsonb,
    language          text,
    source_date       timestamptz,
    created_at        timestamptz,
    valid_to          timestamptz,
    superseded_by     bigint,
    has_embedding     boolean,
    access_count      bigint,
    last_accessed_at  timestamptz,
    archived          boolean,
    archive_reason    text,
    archived_at       timestamptz,
    source_uri        text,
    title             text,
    adapter           text,
    document_tags     text[],
    document_chunks   bigint
);
COMMENT ON TYPE memsql.memory_record IS
    'Row of memory_get: one memory (live, superseded or archived) with its access statistics and its document '
    '(source_uri, title, adapter, tags, current chunks).';

CREATE TYPE memsql.timeline_bucket AS (
    namespace     text,
    bucket_start  timestamptz,
    memories      bigint,
    archived      bigint
);
COMMENT ON TYPE memsql.timeline_bucket IS
    'Row of memory_timeline: current and archived memories stated in the period starting at bucket_start.';
