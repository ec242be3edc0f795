-- memsql schema, version 30: window embeddings of long memories. Released files are never edited: add a later
-- version instead.
--
-- Why: all-MiniLM-L6-v2 was trained on texts of at most 128 word pieces; a memory of up to 256 (the window memsql
-- embeds) gets one vector for all of it, and a passage in its second half weighs little in that vector. A memory
-- longer than one window (memsql.embedding.window_texts) is also embedded in overlapping windows, and memory_search
-- takes its cosine to a query as the best of its windows. Conversation messages are not windowed: their pieces
-- share one vector on purpose (memsql.chunking.share_message_embeddings). Measured on SciFact train
-- (bench/results/quality_genres.md, docs/search.md).
--
-- memsql.memory_windows: one row per embedded memory that is not a conversation message; embeddings NULL = not
-- computed yet (memory_search then uses the memory's own embedding; memsql.memory_pending_windows lists it for the
-- worker, the ingest and Memory.embed_pending), '{}' = the memory fits one window. The row goes with its memory
-- (ON DELETE CASCADE) and is computed again when the memory's embedding is set again.
CREATE TABLE memsql.memory_windows (
    namespace   text NOT NULL,
    memory_id   bigint NOT NULL,
    embeddings  vector(384)[],
    PRIMARY KEY (namespace, memory_id),
    FOREIGN KEY (namespace, memory_id) REFERENCES memsql.memories (namespace, id) ON DELETE CASCADE
);
COMMENT ON TABLE memsql.memory_windows IS
    'Window embeddings of each embedded memory that is not a conversation message (overlapping windows of its '
    'text, each with the document title appended when the window lacks it): memory_search scores the memory by '
    'the best of them. '
    'embeddings ''{}'' = fits one window, NULL = not computed yet (memsql.memory_pending_windows); no row = a '
    'conversation message or a memory without embedding, scored by its own embedding.';
-- kept in the row (up to 4 windows, 6 kB): memory_search reads them for every candidate, out-of-line storage cost a
-- TOAST lookup each
ALTER TABLE memsql.memory_windows ALTER COLUMN embeddings SET STORAGE MAIN;
-- the backlog: rows whose windows are still to be computed
CREATE INDEX memory_windows_pending ON memsql.memory_windows (namespace, memory_id) WHERE embeddings IS NULL;
COMMENT ON COLUMN memsql.memory_windows.embeddings IS
    'The windows'' unit vectors in text order; ''{}'' = the memory fits one window; NULL = to be computed.';

-- a row of the backlog, as memsql.memory_pending_windows returns it
CREATE TYPE memsql.pending_window AS (namespace text, memory_id bigint, content text, title text);

-- Every embedded memory that is not a conversation message gets a row to compute (trigger memories_windows_pending,
-- on insert and when its embedding is set again); the memories stored before this version too, now.
INSERT INTO memsql.memory_windows (namespace, memory_id, embeddings)
SELECT m.namespace, m.id, NULL FROM memsql.memories m
WHERE m.embedding IS NOT NULL AND NOT m.metadata ? 'speaker'
ORDER BY m.namespace, m.id;

-- The triggers' function; its current body lives in sql/functions/15_triggers.sql (applied after every migrate).
CREATE OR REPLACE FUNCTION memsql.memories_windows_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END $$;

CREATE TRIGGER memories_windows_insert AFTER INSERT ON memsql.memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memsql.memories_windows_pending();
CREATE TRIGGER memories_windows_embedding AFTER UPDATE OF embedding ON memsql.memories
    FOR EACH ROW WHEN (NEW.embedding IS NOT NULL AND OLD.embedding IS DISTINCT FROM NEW.embedding)
    EXECUTE FUNCTION memsql.memories_windows_pending();
