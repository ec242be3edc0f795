-- Versions of a memory: memory_update (a new version supersedes the current one), memory_history (the chain of
-- versions), document_revise (re-ingest of a changed document: unchanged chunks kept, changed ones superseded).
-- A version is valid over tstzrange(created_at, valid_to); valid_to NULL = current (V0008).

CREATE OR REPLACE FUNCTION memsql.memory_update(
    memory_id    bigint,
    content      text,
    embedding    vector       DEFAULT NULL,
    namespace    text         DEFAULT 'default',
    importance   real         DEFAULT NULL,
    source_date  timestamptz  DEFAULT NULL,
    language     text         DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns      text := memory_update.namespace;
    txt     text := normalize(btrim(memory_update.content, E' \t\r\n'), NFC);   -- as the ingest stores text
    old     memsql.memories%ROWTYPE;
    doc     memsql.documents%ROWTYPE;
    cfg     regconfig;
    hash    text;
    ts      timestamptz;
    new_id  bigint;
BEGIN
    IF ns IS NULL OR memory_update.memory_id IS NULL THEN
        PERFORM memsql.raise_invalid('memory_update: memory_id and namespace must not be NULL',
                                     'Pass the id of the memory to update, e.g. memory_update(42, ''new text'').');
    END IF;
    IF txt IS NULL OR btrim(memsql.query_text(txt)) = '' THEN   -- blank in Unicode too (no-break, zero-width ...)
        PERFORM memsql.raise_invalid('memory_update: content is empty', 'Pass the new text of the fact.');
    END IF;
    IF memory_update.embedding IS NOT NULL AND vector_dims(memory_update.embedding) <> 384 THEN
        RAISE EXCEPTION 'memory_update: embedding must be 384-dimensional, got %', vector_dims(memory_update.embedding)
            USING ERRCODE = 'MS005', HINT = 'Embed with all-MiniLM-L6-v2, or pass NULL and let the worker embed it.';
    END IF;
    PERFORM memsql.check_argument('memory_update', 'importance', memory_update.importance, 0, 1,
                                  'Use NULL (keep the old version''s) or a value such as 0.8.', true);
    PERFORM memsql.check_time('memory_update', 'source_date', memory_update.source_date,
                              'Pass when the new fact was stated, e.g. ''2026-03-01''; NULL = now.');
    SELECT * INTO old FROM memsql.memories m WHERE m.namespace = ns AND m.id = memory_update.memory_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'memory_update: no memory % in namespace %', memory_update.memory_id, quote_literal(ns)
            USING ERRCODE = 'MS004',
                  HINT = 'An archived memory comes back with memory_restore(ARRAY[id]); see memsql.archive.';
    END IF;
    IF old.valid_to IS NOT NULL THEN
        PERFORM memsql.raise_invalid(
            pg_catalog.format('memory_update: memory %s is not the current version (superseded by %s at %s)',
                   old.id, coalesce(old.superseded_by::text, 'nothing'), old.valid_to),
            pg_catalog.format('Update the current version: memory_history(%s) lists the chain.', old.id));
    END IF;
    IF regexp_replace(txt, '\s+', ' ', 'g') = regexp_replace(btrim(old.content, E' \t\r\n'), '\s+', ' ', 'g') THEN
        RETURN old.id;   -- nothing but white space changed: no new version
    END IF;
    cfg := CASE WHEN memory_update.language IS NULL THEN old.ts_config
                ELSE memsql.text_search_config(memory_update.language) END;
    hash := encode(sha256(convert_to(txt, 'UTF8')), 'hex');
    ts := greatest(now(), old.created_at);   -- ranges never run backwards, even across clock skew
    new_id := nextval(pg_get_serial_sequence('memsql.memories', 'id'));
    -- close the old version first: it leaves the (document, chunk_index) slot of current versions
    UPDATE memsql.memories m SET valid_to = ts, superseded_by = new_id
    WHERE m.namespace = ns AND m.id = old.id;
    INSERT INTO memsql.memories (namespace, id, document_id, chunk_index, content, content_hash, embedding,
                                 knowledge_type, importance, topics, tags, metadata, source_date, created_at, ts_config)
    VALUES (ns, new_id, old.document_id, old.chunk_index, txt, hash, memory_update.embedding, old.knowledge_type,
            coalesce(memory_update.importance, old.importance), old.topics, old.tags,
            -- revision_of: the version its source wrote (kept while the source still says that: document_chunks)
            old.metadata || pg_catalog.jsonb_build_object('revision_of', CASE WHEN jsonb_typeof(old.metadata->'revision_of') = 'number'
                                                                   THEN old.metadata->'revision_of' ELSE pg_catalog.to_jsonb(old.id) END),
            memory_update.source_date, ts, cfg);
    -- a note of memory_add is keyed by its content hash: re-key it, so memory_add of the new text finds this version
    -- (and memory_add of the old text is a new note, not this chain)
    SELECT * INTO doc FROM memsql.documents d WHERE d.namespace = ns AND d.id = old.document_id FOR UPDATE;
    IF doc.adapter = 'note' AND doc.source_key = 'note:' || doc.content_hash
       AND NOT EXISTS (SELECT 1 FROM memsql.documents d WHERE d.namespace = ns AND d.source_key = 'note:' || hash) THEN
        UPDATE memsql.documents d SET source_key = 'note:' || hash, content_hash = hash, updated_at = now()
        WHERE d.namespace = ns AND d.id = doc.id;
    END IF;
    RETURN new_id;
END
$$;
COMMENT ON FUNCTION memsql.memory_update(bigint, text, vector, text, real, timestamptz, text) IS
$c$Writes a new version of a memory and marks the old one superseded: a fact changed (the budget was 30k, now 45k).
Args: memory_id bigint (the current version), content text (the new text; NFC, trimmed, non-empty), embedding vector(384)
  (NULL = not yet embedded: the lexical arm finds it at once), namespace ('default'), importance real 0..1 (NULL = the
  old version's), source_date timestamptz (when the new fact was stated; NULL = now, so its age starts at 0),
  language (NULL = the old version's; else an ISO 639-1 code or text search configuration name).
The new version takes the old one's document, chunk_index, knowledge_type, topics, tags and metadata, and metadata
  revision_of = the id of the version its source wrote (the first of a run of hand revisions): a re-ingest of the
  document keeps the revision while the source's text of that chunk is the one revised, and supersedes it with the
  source's new text when that changes. It starts with no accesses. The old version stays, valid over [created_at, t) with superseded_by = the new id; the new one is valid
  from t = now() (t = the old created_at if that is later). memory_search returns current versions only unless asked
  (include_superseded, as_of). A note of memory_add is re-keyed to the new text.
Returns the new memory id; the old id when content equals the current text up to white space (runs of spaces, tabs
  and line breaks count as one space: nothing changes, no new version).
Errors: MS002 NULL id or namespace, empty content, importance outside [0,1], unknown language, a source_date of
  +-infinity, memory_id not the current version (HINT: memory_history); MS004 no such memory in the namespace; MS005 embedding not 384-d.
Source: sql/functions/35_versions.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_history(memory_id bigint, namespace text DEFAULT 'default')
RETURNS SETOF memsql.memory_version
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns    text := memory_history.namespace;
    cur   bigint := memory_history.memory_id;
    prev  bigint;
    r     record;
    n     integer := 0;
BEGIN
    IF ns IS NULL OR cur IS NULL THEN
        PERFORM memsql.raise_invalid('memory_history: memory_id and namespace must not be NULL',
                                     'Pass a memory id, e.g. memory_history(42).');
    END IF;
    PERFORM 1 FROM memsql.memories m WHERE m.namespace = ns AND m.id = cur
    UNION ALL SELECT 1 FROM memsql.archive a WHERE a.namespace = ns AND a.id = cur;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'memory_history: no memory % in namespace %', cur, quote_literal(ns)
            USING ERRCODE = 'MS004', HINT = 'Ids come from memory_search, memory_add or memsql.archive.';
    END IF;
    -- back to the first version (partial indexes memories_closed, archive_superseded_by); chains are linear
    LOOP
        SELECT x.id INTO prev FROM (
            SELECT m.id FROM memsql.memories m
            WHERE m.namespace = ns AND m.superseded_by = cur AND m.valid_to IS NOT NULL
            UNION ALL
            SELECT a.id FROM memsql.archive a WHERE a.namespace = ns AND a.superseded_by = cur
        ) x ORDER BY x.id LIMIT 1;
        EXIT WHEN NOT FOUND;
        cur := prev;
        n := n + 1;
        IF n > 100000 THEN
            RAISE EXCEPTION 'memory_history: chain of memory % does not end', memory_history.memory_id
                USING ERRCODE = 'MS002', HINT = 'superseded_by links form a cycle; check memsql.memories.superseded_by.';
        END IF;
    END LOOP;
    -- forward, oldest first
    n := 0;
    WHILE cur IS NOT NULL LOOP
        SELECT * INTO r FROM (
            SELECT m.id, m.document_id, m.chunk_index, m.content, m.created_at, m.valid_to, m.superseded_by, false AS arch
            FROM memsql.memories m WHERE m.namespace = ns AND m.id = cur
            UNION ALL
            SELECT a.id, a.document_id, a.chunk_index, a.content, a.created_at, a.valid_to, a.superseded_by, true
            FROM memsql.archive a WHERE a.namespace = ns AND a.id = cur
        ) x LIMIT 1;
        EXIT WHEN NOT FOUND;   -- the successor was deleted with its document
        n := n + 1;
        IF n > 100000 THEN
            RAISE EXCEPTION 'memory_history: chain of memory % does not end', memory_history.memory_id
                USING ERRCODE = 'MS002', HINT = 'superseded_by links form a cycle; check memsql.memories.superseded_by.';
        END IF;
        RETURN NEXT ROW(n, r.id, r.document_id, r.chunk_index, r.content, r.created_at, r.valid_to, r.superseded_by,
                        r.valid_to IS NULL, r.arch)::memsql.memory_version;
        cur := r.superseded_by;
    END LOOP;
END
$$;
COMMENT ON FUNCTION memsql.memory_history(bigint, text) IS
$c$The chain of versions a memory belongs to (memory_update, re-ingest of a changed document), oldest first.
Args: memory_id bigint (any version of the chain, live or archived), namespace text ('default').
Returns (version, memory_id, document_id, chunk_index, content, valid_from, valid_to, superseded_by, is_current,
  archived) ordered by version (1 = first): version i was valid over [valid_from, valid_to) and replaced by
  superseded_by (valid_to NULL = the current version; valid_to set and superseded_by NULL = dropped from its source);
  archived = the version sits in memsql.archive (forgotten; memory_restore brings it back). A memory never updated
  returns one row.
Errors: MS002 NULL argument; MS004 no such memory (live or archived) in the namespace.
Cost: one primary-key probe per version and one index probe per step back. Source: sql/functions/35_versions.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.document_revise(
    namespace          text,
    document_id        bigint,
    chunk_hashes       text[],
    link_by_position   boolean DEFAULT true
)
RETURNS SETOF memsql.revised_chunk
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns      text := document_revise.namespace;
    doc     bigint := document_revise.document_id;
    ts      timestamptz;
    pos     integer[];    -- new chunk positions, 0-based
    kid     bigint[];     -- memory kept at that position (NULL = a new chunk)
    nid     bigint[];     -- the id of each position: kept or pre-allocated
    offs    integer;
BEGIN
    IF ns IS NULL OR doc IS NULL OR document_revise.chunk_hashes IS NULL
       OR pg_catalog.array_position(document_revise.chunk_hashes, NULL) IS NOT NULL OR document_revise.link_by_position IS NULL THEN
        PERFORM memsql.raise_invalid('document_revise: arguments and hashes must not be NULL',
                                     'Pass the sha256 of every new chunk, in chunk order.');
    END IF;
    PERFORM 1 FROM memsql.documents d WHERE d.namespace = ns AND d.id = doc FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'document_revise: no document % in namespace %', doc, quote_literal(ns)
            USING ERRCODE = 'MS004', HINT = 'Call document_upsert first (same transaction).';
    END IF;
    -- lock the current versions in id order
    PERFORM 1 FROM memsql.memories m WHERE m.namespace = ns AND m.document_id = doc AND m.valid_to IS NULL
    ORDER BY m.id FOR UPDATE;
    SELECT greatest(now(), max(m.created_at)) INTO ts
    FROM memsql.memories m WHERE m.namespace = ns AND m.document_id = doc AND m.valid_to IS NULL;
    ts := coalesce(ts, now());
    -- an unchanged chunk (same content hash; the k-th copy of a text matches the k-th) keeps its memory
    WITH cur AS (
        SELECT m.id, m.content_hash,
               row_number() OVER (PARTITION BY m.content_hash ORDER BY m.chunk_index, m.id) AS occ
        FROM memsql.memories m
        WHERE m.namespace = ns AND m.document_id = doc AND m.valid_to IS NULL
    ),
    nw AS (
        SELECT (u.i - 1)::integer AS idx, u.h,
               row_number() OVER (PARTITION BY u.h ORDER BY u.i) AS occ
        FROM pg_catalog.unnest(document_revise.chunk_hashes) WITH ORDINALITY AS u(h, i)
    )
    SELECT coalesce(pg_catalog.array_agg(n.idx ORDER BY n.idx), '{}'), pg_catalog.array_agg(c.id ORDER BY n.idx)
    INTO pos, kid
    FROM nw n LEFT JOIN cur c ON c.content_hash = n.h AND c.occ = n.occ;
    SELECT coalesce(pg_catalog.array_agg(coalesce(u.k, nextval(pg_get_serial_sequence('memsql.memories', 'id'))) ORDER BY u.p), '{}')
    INTO nid
    FROM unnest(pos, kid) AS u(p, k);
    -- changed or dropped chunks: closed; superseded by the new chunk at the same position when there is one
    UPDATE memsql.memories m
    SET valid_to = ts,
        superseded_by = CASE WHEN document_revise.link_by_position THEN
                            (SELECT u.id FROM unnest(pos, kid, nid) AS u(p, k, id) WHERE u.p = m.chunk_index AND u.k IS NULL)
                        END
    WHERE m.namespace = ns AND m.document_id = doc AND m.valid_to IS NULL
      AND NOT m.id = ANY (coalesce(pg_catalog.array_remove(kid, NULL), '{}'));
    -- kept chunks that moved: renumbered in two steps (the current-chunk slots are unique)
    offs := greatest(pg_catalog.cardinality(pos), coalesce((SELECT max(m.chunk_index) FROM memsql.memories m
                                                  WHERE m.namespace = ns AND m.document_id = doc), 0)) + 1;
    UPDATE memsql.memories m SET chunk_index = m.chunk_index + offs
    FROM unnest(pos, kid) AS u(p, k)
    WHERE m.namespace = ns AND m.id = u.k AND m.chunk_index <> u.p;
    UPDATE memsql.memories m SET chunk_index = u.p
    FROM unnest(pos, kid) AS u(p, k)
    WHERE m.namespace = ns AND m.id = u.k AND m.chunk_index <> u.p;
    RETURN QUERY SELECT u.p, u.id, u.k IS NOT NULL, ts FROM unnest(pos, kid, nid) AS u(p, k, id) ORDER BY u.p;
END
$$;
COMMENT ON FUNCTION memsql.document_revise(text, bigint, text[], boolean) IS
$c$Re-ingest of a changed document, step 2 (after document_upsert returned 'replaced', same transaction): matches the
new chunks to the document's current memories by content hash, so unchanged chunks keep their ids, access counts and
importance (renumbered when they moved), and supersedes the rest instead of deleting them.
Args: namespace, document_id, chunk_hashes text[] (sha256 hex of each new chunk's content, in chunk order; the k-th
  copy of a text matches the k-th), link_by_position boolean (true: a changed chunk's superseded_by is the new chunk at
  the same position, when one is new there; false: closed without a successor, e.g. conversation turns, where a later
  message restating a fact supersedes nothing by itself).
Returns (chunk_index, memory_id, kept, valid_from) per new chunk, by chunk_index: kept = an existing memory; else
  memory_id is pre-allocated and the caller writes the chunk under that id with created_at = valid_from (memsql.ingest
  does this with COPY). valid_from = greatest(now(), the newest created_at among the document's current versions) is
  also the valid_to of every closed memory, so the versions' ranges meet.
Term statistics: superseded memories stay in memsql.postings / term_stats (they remain searchable with
  include_superseded / as_of); memory_search filters them at query time.
Errors: MS002 NULL argument or hash; MS004 no such document. Source: sql/functions/35_versions.sql.$c$;

-- document_refresh: a re-ingest of the same text with other front matter (tags, importance, knowledge type, date)
CREATE OR REPLACE FUNCTION memsql.document_refresh(
    namespace           text,
    document_id         bigint,
    content_hash        text,
    title               text,
    source_date         timestamptz,
    metadata            jsonb,
    drop_tags           text[],
    add_tags            text[],
    importance_from     real,
    importance_to       real,
    knowledge_type_from text,
    knowledge_type_to   text,
    date_from           timestamptz,
    redate              boolean DEFAULT true   -- false: the memories keep their dates (messages dated one by one)
)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns      text := document_refresh.namespace;
    doc     bigint := document_refresh.document_id;
    n       integer;
BEGIN
    IF ns IS NULL OR doc IS NULL OR document_refresh.content_hash IS NULL OR drop_tags IS NULL OR add_tags IS NULL
       OR knowledge_type_from IS NULL OR knowledge_type_to IS NULL OR redate IS NULL THEN
        PERFORM memsql.raise_invalid('document_refresh: namespace, document_id, content_hash, the tags and the knowledge '
                                     'types must not be NULL', 'Pass ''{}'' for no tags.');
    END IF;
    IF importance_to IS NOT NULL THEN
        PERFORM memsql.check_argument('document_refresh', 'importance_to', importance_to, 0, 1,
                                      'An importance is a number from 0 to 1, or NULL.');
    END IF;
    PERFORM memsql.check_time('document_refresh', 'source_date', document_refresh.source_date,
                              'A document''s date is a finite time, or NULL.');
    IF knowledge_type_to <> knowledge_type_from THEN
        PERFORM memsql.check_knowledge_type(knowledge_type_to);
    END IF;
    UPDATE memsql.documents d
    SET title = document_refresh.title, source_date = document_refresh.source_date,
        metadata = coalesce(document_refresh.metadata, '{}'),
        tags = memsql.tags_swapped(d.tags, drop_tags, add_tags),
        knowledge_type = CASE WHEN d.knowledge_type = knowledge_type_from THEN knowledge_type_to ELSE d.knowledge_type END,
        updated_at = now()
    WHERE d.namespace = ns AND d.id = doc AND d.content_hash = document_refresh.content_hash;
    IF NOT FOUND THEN
        RETURN NULL;   -- revised or removed meanwhile: the caller's view of it is stale
    END IF;
    UPDATE memsql.memories m
    SET tags = memsql.tags_swapped(m.tags, drop_tags, add_tags),
        importance = CASE WHEN m.importance IS NOT DISTINCT FROM importance_from THEN importance_to ELSE m.importance END,
        knowledge_type = CASE WHEN m.knowledge_type = knowledge_type_from THEN knowledge_type_to ELSE m.knowledge_type END,
        source_date = CASE WHEN redate AND m.source_date IS NOT DISTINCT FROM date_from
                           THEN document_refresh.source_date ELSE m.source_date END
    WHERE m.namespace = ns AND m.document_id = doc AND m.valid_to IS NULL;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.document_refresh(text, bigint, text, text, timestamptz, jsonb, text[], text[], real, real,
                                            text, text, timestamptz, boolean) IS
$c$Re-ingest of a document whose text is unchanged but whose front matter or title changed (memsql.ingest calls it when
document_upsert would say 'unchanged' and the declared values differ): the document row takes the new title,
source_date and metadata, and its current memories follow, nothing embedded again. Tags: drop_tags (the document's
former own tags) leave, add_tags (its new ones) join at the end, each once (tags given by a run or by hand stay).
Importance, knowledge type and source date change on the memories still holding the former declared value (a memory
revised by hand keeps its own).
Args: namespace, document_id, content_hash (the stored hash: nothing happens when the document changed meanwhile),
  title, source_date, metadata jsonb (the new values), drop_tags text[], add_tags text[], importance_from real and
  importance_to real (0..1 or NULL; equal = unchanged), knowledge_type_from, knowledge_type_to (equal = unchanged),
  date_from timestamptz (the former source_date), redate boolean (true: memories dated date_from take source_date;
  false for a conversation, whose memories carry their own messages' dates, one of which the document's may equal).
Returns integer: current memories updated; NULL when no document of that id holds content_hash.
Errors: MS002 NULL argument, importance out of range or source_date +-infinity; MS003 unknown knowledge_type_to. Source:
  sql/functions/35_versions.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.tags_swapped(tags text[], drop_tags text[], add_tags text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY(SELECT v.t FROM (SELECT DISTINCT ON (u.t) u.t, u.o
                              FROM pg_catalog.unnest(pg_catalog.array_cat(ARRAY(SELECT x FROM pg_catalog.unnest(tags) AS x WHERE NOT x = ANY (drop_tags)),
                                                    add_tags)) WITH ORDINALITY AS u(t, o)
                              ORDER BY u.t, u.o) v
             ORDER BY v.o);
COMMENT ON FUNCTION memsql.tags_swapped(text[], text[], text[]) IS
$c$tags without drop_tags and with add_tags at the end, each tag once, in order of first appearance. Internal helper of
document_refresh. Args: tags, drop_tags, add_tags text[]. Returns text[]. Errors: none. Source:
sql/functions/35_versions.sql.$c$;
