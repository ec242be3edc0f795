-- memsql schema, version 29: the pieces of a long conversation message are normalised by the message's length in
-- BM25. Released files are never edited: add a later version instead.
--
-- Why: a message longer than the model window is stored as several memories (pieces). BM25 normalised each piece by
-- its own length, so a short piece that repeats a query word outranked the message that answers the question, and
-- every piece of a long answer competed with the short turns around it. Normalised by the whole message (the sum of
-- its pieces' indexed tokens), LongMemEval's turn nDCG@10 of the default search rose on both development sets
-- (bench/results/long_messages.md). Memories that are not a piece of a split message are unchanged.
--
-- memories.bm25_len: the length BM25 normalises the memory by, in indexed tokens; NULL = its own tsv_len. The ingest
-- sets it for the pieces of a split message. The postings (doc_len) read coalesce(bm25_len, tsv_len) when a memory
-- is inserted, and follow an UPDATE of bm25_len (trigger memories_bm25_len). Average document length (namespace_stats)
-- stays the mean of the memories' own lengths. Memories stored before this version keep NULL until their document is
-- ingested again with changes (or bm25_len is set by an UPDATE).
ALTER TABLE memsql.memories ADD COLUMN bm25_len integer CONSTRAINT memories_bm25_len_positive CHECK (bm25_len > 0);
COMMENT ON COLUMN memsql.memories.bm25_len IS
    'BM25 document length of this memory in indexed tokens when it differs from its own (tsv_len): for a piece of a '
    'conversation message split over several memories, the sum of the pieces'' tsv_len. NULL = tsv_len. Set by the '
    'ingest; the postings follow an UPDATE (trigger memories_bm25_len).';

COMMENT ON TABLE memsql.postings IS
    'BM25 inverted index: term frequency of each lexeme in each memory, with the length BM25 normalises the memory '
    'by (doc_len = coalesce(memories.bm25_len, memories.tsv_len)); kept exact by the triggers on memsql.memories.';

-- forgetting keeps it, restoring puts it back
ALTER TABLE memsql.archive ADD COLUMN bm25_len integer;
COMMENT ON COLUMN memsql.archive.bm25_len IS 'memories.bm25_len of the archived memory (restored with it).';

-- The trigger's function; its current body lives in sql/functions/15_triggers.sql (applied after every migrate).
CREATE OR REPLACE FUNCTION memsql.memories_bm25_len_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END $$;

CREATE TRIGGER memories_bm25_len AFTER UPDATE OF bm25_len ON memsql.memories
    FOR EACH ROW WHEN (OLD.bm25_len IS DISTINCT FROM NEW.bm25_len)
    EXECUTE FUNCTION memsql.memories_bm25_len_changed();
