-- memsql schema: versions of a memory (issue 11). Facts change: memory_update writes a new version and closes
-- the old one; a re-ingested document supersedes only its changed chunks. Released files are never edited.
--
-- A memory is valid over tstzrange(created_at, valid_to): created_at is when the version was written (the
-- transaction time), valid_to when a newer version replaced it or its source stopped containing it (NULL = the
-- current version). superseded_by names the version that replaced it (NULL: current, or removed from its source
-- without a successor). No new valid_from column: it would always equal created_at, and adding one would rewrite
-- every row of the table (and re-insert it into the HNSW index).

ALTER TABLE memsql.memories
    ADD COLUMN valid_to timestamptz,
    ADD COLUMN superseded_by bigint,
    ADD CONSTRAINT memories_valid_range CHECK (valid_to IS NULL OR valid_to >= created_at),
    ADD CONSTRAINT memories_superseded_closed CHECK (superseded_by IS NULL OR valid_to IS NOT NULL);
COMMENT ON COLUMN memsql.memories.valid_to IS
    'End of this version''s validity (a newer version replaced it, or a re-ingest of its document dropped it); '
    'NULL = the current version. Valid over tstzrange(created_at, valid_to).';
COMMENT ON COLUMN memsql.memories.superseded_by IS
    'The memory id of the version that replaced this one (memory_update, re-ingest); NULL = current, or ended '
    'without a successor. Not a foreign key: the successor may sit in memsql.archive (forgotten) and come back '
    'with the same id (memory_restore).';

-- Only the current version of a chunk holds its (document, chunk_index) slot; superseded versions keep theirs.
ALTER TABLE memsql.memories DROP CONSTRAINT memories_namespace_document_id_chunk_index_key;
CREATE UNIQUE INDEX memories_current_chunk ON memsql.memories (namespace, document_id, chunk_index)
    WHERE valid_to IS NULL;

-- Closed versions: few next to the current ones. memory_search probes it once per call (does the namespace hold
-- any history? if not, the lexical arm needs no version filter) and reads the closed ids from it (index-only) to
-- drop them from the lexical hits with one hash; memory_history walks chains backwards by it.
CREATE INDEX memories_closed ON memsql.memories (namespace, superseded_by) INCLUDE (id) WHERE valid_to IS NOT NULL;

-- as_of: the validity range. GiST answers "range contains the instant" (as_of) and "range overlaps (-inf, t]"
-- (as_of with include_superseded); the planner uses it for the dense arm when an as_of is selective (see
-- docs/versions.md for the measurement).
CREATE INDEX memories_validity ON memsql.memories USING gist (tstzrange(created_at, valid_to));

-- The archive keeps a version's place in its chain, so memory_history still shows it and memory_restore puts it
-- back as the version it was.
ALTER TABLE memsql.archive
    ADD COLUMN valid_to timestamptz,
    ADD COLUMN superseded_by bigint;
COMMENT ON COLUMN memsql.archive.valid_to IS
    'memories.valid_to at archiving time (NULL: it was a current version).';
COMMENT ON COLUMN memsql.archive.superseded_by IS
    'memories.superseded_by at archiving time: the version that replaced it.';
CREATE INDEX archive_superseded_by ON memsql.archive (namespace, superseded_by) WHERE superseded_by IS NOT NULL;

-- memory_search gains include_superseded and as_of and returns valid_to and superseded_by: its argument list and
-- result type change, so the old signature is dropped (sql/functions/20_search.sql creates the new one).
DROP FUNCTION IF EXISTS memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text);
DROP FUNCTION IF EXISTS memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text, text[], integer, boolean, double precision);   -- as of V0007

-- Row types of memory_history and document_revise: a RETURNS TABLE column may not share an argument's name.
CREATE TYPE memsql.memory_version AS (
    version        integer,
    memory_id      bigint,
    document_id    bigint,
    chunk_index    integer,
    content        text,
    valid_from     timestamptz,
    valid_to       timestamptz,
    superseded_by  bigint,
    is_current     boolean,
    archived       boolean
);
COMMENT ON TYPE memsql.memory_version IS
    'Row of memory_history: one version of a memory (1 = the first), valid over [valid_from, valid_to) '
    '(valid_to NULL = current), the id that replaced it, and whether it sits in memsql.archive.';

CREATE TYPE memsql.revised_chunk AS (
    chunk_index  integer,
    memory_id    bigint,
    kept         boolean,
    valid_from   timestamptz
);
COMMENT ON TYPE memsql.revised_chunk IS
    'Row of document_revise: a chunk position of the new document text, the memory id it has (kept = an unchanged '
    'chunk keeps its memory; else a pre-allocated id the caller writes the new chunk under, with created_at = valid_from).';
