-- Writes: documents and memories. Idempotent by (namespace, source_key) and content hash.

CREATE OR REPLACE FUNCTION memsql.check_knowledge_type(kt text) RETURNS void
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM memsql.knowledge_types t WHERE t.name = kt) THEN
        RAISE EXCEPTION 'unknown knowledge_type %', coalesce(quote_literal(kt), 'NULL')
            USING ERRCODE = 'MS003',
                  HINT = 'Known types: ' || (SELECT string_agg(t.name, ', ' ORDER BY t.name) FROM memsql.knowledge_types t)
                         || '. Add one with SELECT memsql.knowledge_type_set(''name'', half_life_days) (NULL = no decay), '
                         || 'or [memory.scoring] half_life_days in memsql.toml, then memsql init (which writes it '
                         || 'into the database).';
    END IF;
END $$;
COMMENT ON FUNCTION memsql.check_knowledge_type(text) IS
    'Raises MS003 (with the known types in the HINT) unless kt names a row of memsql.knowledge_types.';

CREATE OR REPLACE FUNCTION memsql.document_upsert(
    namespace       text,
    source_key      text,
    content_hash    text,
    adapter         text,
    source_uri      text        DEFAULT NULL,
    title           text        DEFAULT NULL,
    knowledge_type  text        DEFAULT 'note',
    source_date     timestamptz DEFAULT NULL,
    tags            text[]      DEFAULT '{}',
    metadata        jsonb       DEFAULT '{}'
)
RETURNS TABLE (document_id bigint, action text)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns       text := document_upsert.namespace;
    skey     text := document_upsert.source_key;
    doc_id   bigint;
    old_hash text;
    old_date timestamptz;
BEGIN
    PERFORM memsql.check_knowledge_type(document_upsert.knowledge_type);
    PERFORM memsql.check_time('document_upsert', 'source_date', document_upsert.source_date,
                              'A document''s date is a finite time, or NULL.');
    INSERT INTO memsql.documents AS d (namespace, source_key, source_uri, adapter, title, content_hash,
                                       knowledge_type, source_date, tags, metadata)
    VALUES (ns, skey, document_upsert.source_uri, document_upsert.adapter, document_upsert.title,
            document_upsert.content_hash, document_upsert.knowledge_type, document_upsert.source_date,
            coalesce(document_upsert.tags, '{}'), coalesce(document_upsert.metadata, '{}'))
    ON CONFLICT (namespace, source_key) DO NOTHING
    RETURNING d.id INTO doc_id;
    IF doc_id IS NOT NULL THEN
        RETURN QUERY SELECT doc_id, 'inserted'::text;
        RETURN;
    END IF;
    SELECT d.id, d.content_hash, d.source_date INTO doc_id, old_hash, old_date
    FROM memsql.documents d WHERE d.namespace = ns AND d.source_key = skey FOR UPDATE;
    IF old_hash = document_upsert.content_hash THEN
        RETURN QUERY SELECT doc_id, 'unchanged'::text;
        RETURN;
    END IF;
    -- an older conversation export (taken before the stored one) never supersedes what a newer export wrote; a
    -- file (markdown, text) is what it holds now, whatever date it carries
    IF document_upsert.adapter IN ('claude_ai', 'claude_code', 'chatgpt') AND document_upsert.source_date < old_date THEN
        RETURN QUERY SELECT doc_id, 'older'::text;
        RETURN;
    END IF;
    -- the memories stay: the caller revises them (document_revise) so unchanged chunks keep their ids and changed
    -- ones are superseded, not deleted
    UPDATE memsql.documents d
    SET source_uri = document_upsert.source_uri, adapter = document_upsert.adapter, title = document_upsert.title,
        content_hash = document_upsert.content_hash, knowledge_type = document_upsert.knowledge_type,
        source_date = document_upsert.source_date, tags = coalesce(document_upsert.tags, '{}'),
        metadata = coalesce(document_upsert.metadata, '{}'), updated_at = now()
    WHERE d.namespace = ns AND d.id = doc_id;
    RETURN QUERY SELECT doc_id, 'replaced'::text;
END
$$;
COMMENT ON FUNCTION memsql.document_upsert(text, text, text, text, text, text, text, timestamptz, text[], jsonb) IS
$c$Registers a document for ingest; the caller then writes its memories (COPY) in the same transaction.
Args: namespace, source_key (stable identity), content_hash (of the parsed content), adapter, source_uri, title,
  knowledge_type ('note'), source_date, tags, metadata.
Returns (document_id, action): 'inserted' (new: write its memories), 'unchanged' (same hash: write nothing),
  'older' (a conversation export, adapter claude_ai, claude_code or chatgpt, whose stored document has a later
  source_date: nothing changes, write nothing; a NULL date on either side never counts as older; a file of another
  adapter is replaced whatever its date), 'replaced' (document row updated, its memories untouched: call
  document_revise with the new chunks' hashes, which keeps unchanged chunks and supersedes the others, then write the
  new chunks). Concurrent calls for one key serialise on the unique key.
Errors: MS002 a source_date of +-infinity; MS003 unknown knowledge_type. Source: sql/functions/30_write.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_add(
    content         text,
    embedding       vector           DEFAULT NULL,
    namespace       text             DEFAULT 'default',
    knowledge_type  text             DEFAULT 'note',
    importance      real             DEFAULT NULL,
    tags            text[]           DEFAULT '{}',
    metadata        jsonb            DEFAULT '{}',
    source_date     timestamptz      DEFAULT NULL,
    title           text             DEFAULT NULL,
    language        text             DEFAULT NULL,
    topics          text[]           DEFAULT '{}'
)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    txt     text := normalize(btrim(memory_add.content, E' \t\r\n'), NFC);   -- as the ingest stores text
    hash    text;
    doc     record;
    mem_id  bigint;
    cfg     regconfig;
    old_id  bigint;
    cur_id  bigint;
    next_id bigint;
    live    boolean;
    n       integer;
BEGIN
    IF txt IS NULL OR btrim(memsql.query_text(txt)) = '' THEN   -- blank in Unicode too (no-break, zero-width ...)
        PERFORM memsql.raise_invalid('memory_add: content is empty', 'Pass the text to remember.');
    END IF;
    cfg := memsql.text_search_config(memory_add.language);
    IF memory_add.embedding IS NOT NULL AND vector_dims(memory_add.embedding) <> 384 THEN
        RAISE EXCEPTION 'memory_add: embedding must be 384-dimensional, got %', vector_dims(memory_add.embedding)
            USING ERRCODE = 'MS005', HINT = 'Embed with all-MiniLM-L6-v2, or pass NULL and let the worker embed it.';
    END IF;
    IF memory_add.embedding IS NOT NULL THEN   -- zero, or not searchable alike in half precision: MS005
        PERFORM memsql.check_vectors('memory_add', 'embedding', ARRAY[memory_add.embedding]);
    END IF;
    PERFORM memsql.check_argument('memory_add', 'importance', memory_add.importance, 0, 1,
                                  'Use NULL (unset) or a value such as 0.8.', true);
    PERFORM memsql.check_time('memory_add', 'source_date', memory_add.source_date,
                              'Pass when the fact was stated, e.g. ''2026-03-01''; NULL = now.');
    PERFORM memsql.namespace_check('memory_add', memory_add.namespace);
    PERFORM memsql.check_tag_list('memory_add', 'tags', memory_add.tags);
    PERFORM memsql.check_tag_list('memory_add', 'topics', memory_add.topics);
    -- a long text's lexical form (the trigger memories_lexical computes it) may be over PostgreSQL's 1 MB tsvector
    -- limit: said plainly, before anything is written. Only past 128 kB, where it can be (a shorter text's lexical
    -- form is at most a few times its size), so that a short note costs no subtransaction.
    IF octet_length(txt) > 131072 THEN
        BEGIN
            PERFORM memsql.memory_tsvector(txt, cfg);
        EXCEPTION WHEN program_limit_exceeded THEN
            PERFORM memsql.raise_invalid(pg_catalog.format('memory_add: the text is too long for one memory (%s characters: %s)',
                                                length(txt), SQLERRM),
                                         'Split it, or ingest it as a file: memsql ingest (Memory.ingest) chunks long texts.');
        END;
    END IF;
    hash := encode(sha256(convert_to(txt, 'UTF8')), 'hex');
    -- the text of a superseded version (and no live note of it): the fact changed since, return the current version
    IF NOT EXISTS (SELECT 1 FROM memsql.documents d
                   WHERE d.namespace = memory_add.namespace AND d.source_key = 'note:' || hash) THEN
        SELECT m.id, m.superseded_by INTO old_id, cur_id FROM memsql.memories m
        WHERE m.namespace = memory_add.namespace AND m.content_hash = hash AND m.valid_to IS NOT NULL
          AND m.superseded_by IS NOT NULL
        ORDER BY m.valid_to DESC, m.id DESC LIMIT 1;
        n := 0;
        WHILE cur_id IS NOT NULL AND n < 100000 LOOP
            SELECT m.superseded_by, m.valid_to IS NULL INTO next_id, live FROM memsql.memories m
            WHERE m.namespace = memory_add.namespace AND m.id = cur_id;
            EXIT WHEN NOT FOUND;   -- the chain goes on in the archive (forgotten): remember the text anew
            IF live THEN
                RAISE NOTICE 'memory_add: this text is memory % superseded by memory %; returning the current version %',
                    old_id, (SELECT m.superseded_by FROM memsql.memories m
                             WHERE m.namespace = memory_add.namespace AND m.id = old_id), cur_id
                    USING HINT = pg_catalog.format('memory_history(%s) shows the versions; memory_update(%s, ...) changes the fact again.',
                                        cur_id, cur_id);
                RETURN cur_id;
            END IF;
            cur_id := next_id;
            n := n + 1;
        END LOOP;
    END IF;
    SELECT * INTO doc FROM memsql.document_upsert(
        memory_add.namespace, 'note:' || hash, hash, 'note', NULL, memory_add.title, memory_add.knowledge_type,
        memory_add.source_date, memory_add.tags, memory_add.metadata);
    IF doc.action = 'unchanged' THEN
        SELECT m.id INTO mem_id FROM memsql.memories m
        WHERE m.namespace = memory_add.namespace AND m.document_id = doc.document_id AND m.valid_to IS NULL
        ORDER BY m.chunk_index LIMIT 1;
        IF mem_id IS NOT NULL THEN
            RETURN mem_id;
        END IF;
        -- the note's memory was archived by forgetting: remembering it again makes it live again
    END IF;
    INSERT INTO memsql.memories AS m (namespace, document_id, chunk_index, content, content_hash, embedding,
                                      knowledge_type, importance, tags, metadata, source_date, ts_config, topics)
    VALUES (memory_add.namespace, doc.document_id, 0, txt, hash, memory_add.embedding, memory_add.knowledge_type,
            memory_add.importance, coalesce(memory_add.tags, '{}'), coalesce(memory_add.metadata, '{}'),
            memory_add.source_date, cfg, coalesce(memory_add.topics, '{}'))
    RETURNING m.id INTO mem_id;
    RETURN mem_id;
END
$$;
COMMENT ON FUNCTION memsql.memory_add(text, vector, text, text, real, text[], jsonb, timestamptz, text, text, text[]) IS
$c$Remembers one short text (a note, a fact) as a document of one memory; idempotent by content.
Args: content text (non-empty; in Unicode NFC, leading/trailing white space trimmed; should fit the model window of 256 word pieces,
  longer texts go through memsql ingest / Memory.add which chunk them), embedding vector(384) (NULL = not yet embedded:
  the lexical arm finds it at once), namespace ('default'), knowledge_type ('note'), importance real 0..1 (NULL = unset),
  tags, metadata jsonb, source_date timestamptz (when the fact was stated), title, language (ISO 639-1 code or text
  search configuration name, NULL = english: memsql.text_search_config; it decides the stemmer of the lexical arm),
  topics text[] ('{}'; topic labels, filterable in memory_search; memsql's Python layer assigns them from [memory.topics]).
Returns the memory id; the same content added twice to a namespace returns the same id (a note archived by
  forgetting and added again comes back as a new live memory). The text of a superseded version (memory_update, a
  revised document) returns the current version of its chain, with a NOTICE naming both, instead of a new memory that
  would outrank the correction.
Errors: MS002 empty content, a text too long for one memory (its lexical form over PostgreSQL's 1 MB tsvector
  limit: split it or ingest it as a file), importance outside [0,1], unknown language, a NULL or empty tag or
  topic, a namespace not of 1 to 200 characters, a source_date of +-infinity; MS003 unknown knowledge_type; MS005
  embedding not 384-d.
Source: sql/functions/30_write.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.delete_document(document_id bigint, namespace text DEFAULT 'default')
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    n integer;
BEGIN
    SELECT count(*) INTO n FROM memsql.memories m
    WHERE m.namespace = delete_document.namespace AND m.document_id = delete_document.document_id;
    DELETE FROM memsql.documents d
    WHERE d.namespace = delete_document.namespace AND d.id = delete_document.document_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'delete_document: no document % in namespace %', delete_document.document_id,
            quote_literal(delete_document.namespace)
            USING ERRCODE = 'MS004', HINT = 'List documents with SELECT id, source_key FROM memsql.documents.';
    END IF;
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.delete_document(bigint, text) IS
$c$Deletes a document and all its memories, every version (term statistics stay exact).
Args: document_id bigint, namespace text ('default'). Returns the number of memories deleted (superseded versions included).
Errors: MS004 no such document. Source: sql/functions/30_write.sql.$c$;
