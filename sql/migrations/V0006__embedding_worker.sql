-- The embedding worker (memsql worker): memories written without a vector are announced on channel
-- memsql_embed, and query embeddings asked for by SQL callers (memsql.query_embedding) are cached by text.
-- Functions used by the worker and by SQL callers live in sql/functions/60_worker.sql.

-- (memories without an embedding are found through the partial index memories_pending_embedding of V0002)

CREATE FUNCTION memsql.notify_embedding_backlog() RETURNS trigger
LANGUAGE plpgsql SET search_path = memsql, pg_catalog AS $$
BEGIN
    -- delivered at commit; repeated identical notifications of one transaction are folded into one
    PERFORM pg_notify('memsql_embed', 'memories');
    RETURN NULL;
END $$;
COMMENT ON FUNCTION memsql.notify_embedding_backlog() IS
    'Trigger (AFTER INSERT OR UPDATE OF embedding, per row, when the embedding is NULL): NOTIFY memsql_embed, '
    '''memories'' so a running memsql worker embeds the row (delivered at commit, one per transaction).';

CREATE TRIGGER memories_embedding_backlog AFTER INSERT OR UPDATE OF embedding ON memsql.memories
    FOR EACH ROW WHEN (NEW.embedding IS NULL) EXECUTE FUNCTION memsql.notify_embedding_backlog();

-- Query embeddings by exact query text (white space at both ends trimmed). Not per namespace: the same text has
-- the same vector everywhere (on Citus: a local or reference table, like settings).
CREATE TABLE memsql.query_embedding_cache (
    query_hash    text PRIMARY KEY,          -- sha256 hex of the trimmed query text (UTF-8)
    query         text NOT NULL,
    embedding     vector(384)
        CONSTRAINT query_embedding_cache_nonzero CHECK (embedding IS NULL OR vector_norm(embedding) > 0),
    requested_at  timestamptz NOT NULL DEFAULT now(),
    embedded_at   timestamptz,
    last_used_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE memsql.query_embedding_cache IS
    'Query embeddings by text for SQL callers (memsql.query_embedding): a row with a NULL embedding is a request '
    'waiting for the worker. Bounded to settings.query_cache_max_rows rows, least recently used evicted first.';
CREATE INDEX query_embedding_cache_lru ON memsql.query_embedding_cache (last_used_at);
CREATE INDEX query_embedding_cache_pending ON memsql.query_embedding_cache (requested_at) WHERE embedding IS NULL;

INSERT INTO memsql.settings (key, value) VALUES ('query_cache_max_rows', '10000');
COMMENT ON TABLE memsql.settings IS
    'Schema-wide settings (reference table): embedding_model, embedding_dimension, query_cache_max_rows (bound of '
    'memsql.query_embedding_cache).';
