-- Trigger functions of memsql.memories (the triggers themselves are made by the migrations that added them).
-- CREATE OR REPLACE only; SET search_path FROM CURRENT = the path db.migrate sets while it applies these files
-- (pg_catalog, memsql, then the schemas of the extensions memsql uses).

-- Statement-level triggers keep term_stats, namespace_stats and the BM25 postings exact.
CREATE OR REPLACE FUNCTION memsql.stats_after_insert() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    INSERT INTO memsql.namespace_stats AS s (namespace, doc_count, total_len)
    SELECT n.namespace, count(*), sum(n.tsv_len) FROM new_rows n GROUP BY n.namespace ORDER BY n.namespace
    ON CONFLICT (namespace) DO UPDATE
        SET doc_count = s.doc_count + excluded.doc_count, total_len = s.total_len + excluded.total_len;
    INSERT INTO memsql.term_stats AS t (namespace, lexeme, df)
    SELECT n.namespace, u.lexeme, count(*)
    FROM new_rows n CROSS JOIN LATERAL pg_catalog.unnest(n.tsv) AS u
    GROUP BY n.namespace, u.lexeme ORDER BY n.namespace, u.lexeme
    ON CONFLICT (namespace, lexeme) DO UPDATE SET df = t.df + excluded.df;
    INSERT INTO memsql.postings (namespace, lexeme, memory_id, tf, doc_len)
    SELECT n.namespace, u.lexeme, n.id, coalesce(pg_catalog.array_length(u.positions, 1), 1),
           coalesce(n.bm25_len, n.tsv_len)
    FROM new_rows n CROSS JOIN LATERAL pg_catalog.unnest(n.tsv) AS u;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION memsql.stats_after_insert() IS
    'Trigger (AFTER INSERT, per statement): adds new memories to term_stats, namespace_stats (their own tsv_len) and '
    'postings (doc_len = coalesce(bm25_len, tsv_len): a piece of a split message is normalised by the message). '
    'Source: sql/functions/15_triggers.sql.';

CREATE OR REPLACE FUNCTION memsql.memories_bm25_len_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE memsql.postings p
    SET doc_len = coalesce(NEW.bm25_len, NEW.tsv_len)
    WHERE p.namespace = NEW.namespace AND p.lexeme = ANY (tsvector_to_array(NEW.tsv)) AND p.memory_id = NEW.id;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION memsql.memories_bm25_len_changed() IS
    'Trigger (AFTER UPDATE OF bm25_len, per row, when it changed): sets the memory''s postings doc_len to '
    'coalesce(bm25_len, tsv_len), the length BM25 normalises it by. Source: sql/functions/15_triggers.sql.';

CREATE OR REPLACE FUNCTION memsql.stats_after_delete() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    UPDATE memsql.namespace_stats s
    SET doc_count = s.doc_count - d.cnt, total_len = s.total_len - d.len
    FROM (SELECT o.namespace, count(*) AS cnt, sum(o.tsv_len) AS len
          FROM old_rows o GROUP BY o.namespace ORDER BY o.namespace) d
    WHERE s.namespace = d.namespace;
    UPDATE memsql.term_stats t
    SET df = t.df - d.cnt
    FROM (SELECT o.namespace, u.lexeme, count(*) AS cnt
          FROM old_rows o CROSS JOIN LATERAL pg_catalog.unnest(o.tsv) AS u
          GROUP BY o.namespace, u.lexeme ORDER BY o.namespace, u.lexeme) d
    WHERE t.namespace = d.namespace AND t.lexeme = d.lexeme;
    DELETE FROM memsql.term_stats t
    USING (SELECT DISTINCT o.namespace, u.lexeme FROM old_rows o CROSS JOIN LATERAL pg_catalog.unnest(o.tsv) AS u) d
    WHERE t.namespace = d.namespace AND t.lexeme = d.lexeme AND t.df = 0;
    DELETE FROM memsql.postings p
    USING (SELECT o.namespace, u.lexeme, o.id FROM old_rows o CROSS JOIN LATERAL pg_catalog.unnest(o.tsv) AS u) d
    WHERE p.namespace = d.namespace AND p.lexeme = d.lexeme AND p.memory_id = d.id;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION memsql.stats_after_delete() IS
    'Trigger (AFTER DELETE, per statement): subtracts deleted memories from term_stats and namespace_stats and '
    'removes their postings. Source: sql/functions/15_triggers.sql.';

CREATE OR REPLACE FUNCTION memsql.memories_content_immutable() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    RAISE EXCEPTION 'memory %: content and namespace cannot be updated in place', OLD.id
        USING ERRCODE = 'MS001',
              HINT = 'Delete the document and ingest it again (memsql ingest replaces changed documents).';
END $$;
COMMENT ON FUNCTION memsql.memories_content_immutable() IS
    'Trigger (BEFORE UPDATE of content or namespace, per row): raises MS001, memory content and namespace are '
    'immutable. Source: sql/functions/15_triggers.sql.';

CREATE OR REPLACE FUNCTION memsql.memories_lexical() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    NEW.tsv := memsql.memory_tsvector(NEW.content, NEW.ts_config);
    NEW.tsv_len := memsql.tsvector_token_count(NEW.tsv);
    RETURN NEW;
END
$$;
COMMENT ON FUNCTION memsql.memories_lexical() IS
    'Trigger (BEFORE INSERT, or UPDATE of content, ts_config, tsv or tsv_len; per row): sets tsv = '
    'memsql.memory_tsvector(content, ts_config) and tsv_len = memsql.tsvector_token_count(tsv), whatever the '
    'statement wrote there, so the BM25 postings and statistics (statement triggers) always read the memory''s own '
    'lexemes. Source: sql/functions/15_triggers.sql.';

CREATE OR REPLACE FUNCTION memsql.notify_embedding_backlog() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    -- delivered at commit; repeated identical notifications of one transaction are folded into one
    PERFORM pg_notify('memsql_embed', 'memories');
    RETURN NULL;
END $$;
COMMENT ON FUNCTION memsql.notify_embedding_backlog() IS
    'Trigger (AFTER INSERT OR UPDATE OF embedding, per row, when the embedding is NULL): NOTIFY memsql_embed, '
    '''memories'' so a running memsql worker embeds the row (delivered at commit, one per transaction). '
    'Source: sql/functions/15_triggers.sql.';

CREATE OR REPLACE FUNCTION memsql.memories_embedding_check() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    problem text := memsql.vector_problem(NEW.embedding);
BEGIN
    IF problem IS NOT NULL THEN
        PERFORM memsql.raise_vector('memories', pg_catalog.format('the embedding of memory %s', NEW.id), problem);
    END IF;
    RETURN NEW;
END $$;
COMMENT ON FUNCTION memsql.memories_embedding_check() IS
    'Trigger (BEFORE INSERT or UPDATE OF embedding, per row, when the embedding is not NULL): refuses an embedding '
    'memsql.vector_problem finds wrong (not 384-d, zero, past the half-precision range, zero or off its direction '
    'as halfvec) with SQLSTATE MS005, whatever wrote it (memory_add, memory_set_embeddings, COPY). '
    'Source: sql/functions/15_triggers.sql.';

CREATE OR REPLACE FUNCTION memsql.memories_windows_pending() RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
BEGIN
    IF TG_LEVEL = 'STATEMENT' THEN   -- AFTER INSERT: the new embedded memories that are not conversation messages
        INSERT INTO memsql.memory_windows (namespace, memory_id, embeddings)
        SELECT n.namespace, n.id, NULL FROM new_rows n
        WHERE n.embedding IS NOT NULL AND NOT n.metadata ? 'speaker'
        ORDER BY n.namespace, n.id;
    ELSIF NOT NEW.metadata ? 'speaker' THEN   -- AFTER UPDATE OF embedding: the windows are computed again
        INSERT INTO memsql.memory_windows AS w (namespace, memory_id, embeddings) VALUES (NEW.namespace, NEW.id, NULL)
        ON CONFLICT (namespace, memory_id) DO UPDATE SET embeddings = NULL;
    END IF;
    RETURN NULL;
END $$;
COMMENT ON FUNCTION memsql.memories_windows_pending() IS
    'Trigger (AFTER INSERT per statement; AFTER UPDATE OF embedding per row, when it changed to a vector): puts '
    'each embedded memory that is not a conversation message (metadata speaker) in memsql.memory_windows with '
    'embeddings NULL, the backlog memsql.memory_pending_windows lists. Source: sql/functions/15_triggers.sql.';
