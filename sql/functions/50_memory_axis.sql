-- The memory axis tools: tag, forget (archive), restore, the embedding backlog, tag lookup,
-- neighbouring chunks, duplicate report, health checks, archive statistics. CREATE OR REPLACE only.
--
-- Forgetting score (memory_forget), the same factors memory_search applies, without a query:
--   age_days          = max(0, now() - coalesce(source_date, created_at)) in days
--   decay_factor      = (1 - time_weight) + time_weight * memsql.decay(age_days, half_life_days)
--   frequency_factor  = least(freq_cap, 1 + freq_weight * ln(1 + access_count))
--   importance_factor = coalesce(importance, 0.5) / 0.5          (unset = 1, importance 1 = 2, 0 = 0)
--   score             = importance_factor * decay_factor * frequency_factor
-- A memory is a candidate when score < score_threshold ('faded') or importance is set and
-- < importance_threshold ('unimportant': the memories memory_search already hides).

-- ---------------------------------------------------------------------------------------------
-- Helpers

CREATE OR REPLACE FUNCTION memsql.tags_edit(current_tags text[], tags text[], add_tags text[], remove_tags text[])
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = memsql, pg_catalog
RETURN (
    SELECT coalesce(array_agg(s.t ORDER BY s.ord), '{}')
    FROM (
        SELECT u.t, min(u.ord) AS ord
        FROM unnest(coalesce(tags_edit.tags, tags_edit.current_tags, '{}') || coalesce(tags_edit.add_tags, '{}'))
             WITH ORDINALITY AS u(t, ord)
        WHERE u.t IS NOT NULL AND NOT (u.t = ANY (coalesce(tags_edit.remove_tags, '{}')))
        GROUP BY u.t
    ) s
);
COMMENT ON FUNCTION memsql.tags_edit(text[], text[], text[], text[]) IS
$c$Edits a tag list: start from tags (replace) or else current_tags, append add_tags, drop remove_tags.
Args: current_tags text[], tags text[] (NULL = keep current), add_tags text[], remove_tags text[] (NULL = none).
Returns text[]: distinct tags in first-seen order, NULL elements dropped; '{}' when nothing is left. Internal helper
of memory_tag. Source: sql/functions/50_memory_axis.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.check_tag_list(fn text, arg text, tags text[]) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = memsql, pg_catalog AS $$
BEGIN
    IF tags IS NOT NULL AND (array_position(tags, NULL) IS NOT NULL OR '' = ANY (tags)) THEN
        PERFORM memsql.raise_invalid(format('%s: %s holds a NULL or empty tag', fn, arg),
                                     'Tags are non-empty strings, e.g. ARRAY[''project-x'', ''todo''].');
    END IF;
    IF tags IS NOT NULL AND array_ndims(tags) > 1 THEN
        PERFORM memsql.raise_invalid(format('%s: %s must be a one-dimensional array', fn, arg),
                                     'Pass ARRAY[''a'', ''b''].');
    END IF;
END $$;
COMMENT ON FUNCTION memsql.check_tag_list(text, text, text[]) IS
$c$Raises MS002 when a tag array holds a NULL or empty element or is multi-dimensional. Internal helper.
Args: fn (calling function, for the message), arg (argument name), tags text[] (NULL passes).
Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 1. memory_tag

CREATE OR REPLACE FUNCTION memsql.memory_tag(
    memory_id         bigint   DEFAULT NULL,
    document_id       bigint   DEFAULT NULL,
    namespace         text     DEFAULT 'default',
    importance        double precision DEFAULT NULL,
    knowledge_type    text     DEFAULT NULL,
    tags              text[]   DEFAULT NULL,
    add_tags          text[]   DEFAULT NULL,
    remove_tags       text[]   DEFAULT NULL,
    clear_importance  boolean  DEFAULT false
)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    ns       text := memory_tag.namespace;
    edit     boolean := memory_tag.tags IS NOT NULL OR memory_tag.add_tags IS NOT NULL OR memory_tag.remove_tags IS NOT NULL;
    n        integer;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_tag: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF (memory_tag.memory_id IS NULL) = (memory_tag.document_id IS NULL) THEN
        PERFORM memsql.raise_invalid('memory_tag: pass exactly one of memory_id, document_id',
                                     'memory_id => 42 changes one memory; document_id => 7 changes a document and all its memories.');
    END IF;
    IF memory_tag.clear_importance IS NULL THEN
        PERFORM memsql.raise_invalid('memory_tag: clear_importance is NULL', 'Pass true or false.');
    END IF;
    IF memory_tag.importance IS NOT NULL AND (memory_tag.importance = 'NaN' OR memory_tag.importance < 0
                                              OR memory_tag.importance > 1) THEN
        PERFORM memsql.raise_invalid(format('memory_tag: importance must be in [0, 1], got %s', memory_tag.importance),
                                     'Use a value such as 0.8, or clear_importance => true to unset it.');
    END IF;
    IF memory_tag.importance IS NOT NULL AND memory_tag.clear_importance THEN
        PERFORM memsql.raise_invalid('memory_tag: importance and clear_importance => true contradict each other',
                                     'Pass one of them.');
    END IF;
    IF memory_tag.knowledge_type IS NOT NULL THEN
        PERFORM memsql.check_knowledge_type(memory_tag.knowledge_type);
    END IF;
    PERFORM memsql.check_tag_list('memory_tag', 'tags', memory_tag.tags);
    PERFORM memsql.check_tag_list('memory_tag', 'add_tags', memory_tag.add_tags);
    PERFORM memsql.check_tag_list('memory_tag', 'remove_tags', memory_tag.remove_tags);

    IF memory_tag.memory_id IS NOT NULL THEN
        PERFORM 1 FROM memsql.memories m WHERE m.namespace = ns AND m.id = memory_tag.memory_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'memory_tag: no memory % in namespace %', memory_tag.memory_id, quote_literal(ns)
                USING ERRCODE = 'MS004',
                      HINT = 'An archived memory comes back with memory_restore(ARRAY[id]); see memsql.archive.';
        END IF;
    ELSE
        UPDATE memsql.documents d
        SET knowledge_type = coalesce(memory_tag.knowledge_type, d.knowledge_type),
            tags = CASE WHEN edit THEN memsql.tags_edit(d.tags, memory_tag.tags, memory_tag.add_tags, memory_tag.remove_tags)
                        ELSE d.tags END,
            updated_at = now()
        WHERE d.namespace = ns AND d.id = memory_tag.document_id
          AND (d.knowledge_type, d.tags) IS DISTINCT FROM
              (coalesce(memory_tag.knowledge_type, d.knowledge_type),
               CASE WHEN edit THEN memsql.tags_edit(d.tags, memory_tag.tags, memory_tag.add_tags, memory_tag.remove_tags)
                    ELSE d.tags END);
        IF NOT FOUND THEN
            PERFORM 1 FROM memsql.documents d WHERE d.namespace = ns AND d.id = memory_tag.document_id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'memory_tag: no document % in namespace %', memory_tag.document_id, quote_literal(ns)
                    USING ERRCODE = 'MS004', HINT = 'List documents with SELECT id, source_key FROM memsql.documents.';
            END IF;
        END IF;
    END IF;

    -- Lock the targets in id order, compute the new values from the locked (latest) rows, and
    -- write only rows that change (an unchanged row is not rewritten, so its index entries stay).
    WITH target AS (
        SELECT m.namespace, m.id,
               CASE WHEN memory_tag.clear_importance THEN NULL
                    ELSE coalesce(memory_tag.importance::real, m.importance) END AS new_importance,
               coalesce(memory_tag.knowledge_type, m.knowledge_type) AS new_kt,
               CASE WHEN edit THEN memsql.tags_edit(m.tags, memory_tag.tags, memory_tag.add_tags, memory_tag.remove_tags)
                    ELSE m.tags END AS new_tags
        FROM memsql.memories m
        WHERE m.namespace = ns
          AND (m.id = memory_tag.memory_id OR m.document_id = memory_tag.document_id)
        ORDER BY m.id
        FOR UPDATE
    )
    UPDATE memsql.memories m
    SET importance = t.new_importance, knowledge_type = t.new_kt, tags = t.new_tags
    FROM target t
    WHERE m.namespace = t.namespace AND m.id = t.id
      AND (m.importance, m.knowledge_type, m.tags) IS DISTINCT FROM (t.new_importance, t.new_kt, t.new_tags);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.memory_tag(bigint, bigint, text, double precision, text, text[], text[], text[], boolean) IS
$c$Changes the importance, knowledge_type or tags of one memory, or of a document and all its memories. No re-embedding.
Args: exactly one of memory_id bigint, document_id bigint; namespace text ('default').
  Every other argument NULL = leave as is:
  importance in [0, 1] (double precision, stored as real); clear_importance boolean (false; true sets importance to NULL = unset);
  knowledge_type text (a row of memsql.knowledge_types: changes the half-life the memory decays with);
  tags text[] replaces the tag list, then add_tags text[] are appended (once each), then remove_tags text[] removed.
  With document_id the document row's knowledge_type and tags change as well (documents carry no importance).
Returns integer: memories whose values changed (0 when the target already had them).
Errors: MS002 both or neither id, importance outside [0,1] or NaN, importance with clear_importance, NULL or empty
  tag; MS003 unknown knowledge_type; MS004 no such memory / document in the namespace.
Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 2. memory_forget

CREATE OR REPLACE FUNCTION memsql.memory_forget(
    namespace             text             DEFAULT 'default',
    score_threshold       double precision DEFAULT 0.05,
    time_weight           double precision DEFAULT 1.0,
    freq_weight           double precision DEFAULT 0.1,
    freq_cap              double precision DEFAULT 1.5,
    importance_threshold  double precision DEFAULT 0.3,
    dry_run               boolean          DEFAULT true,
    max_rows              integer          DEFAULT 10000
)
RETURNS TABLE (
    memory_id         bigint,
    document_id       bigint,
    knowledge_type    text,
    importance        real,
    age_days          double precision,
    access_count      bigint,
    decay_factor      double precision,
    frequency_factor  double precision,
    score             double precision,
    reason            text,
    archived          boolean
)
LANGUAGE plpgsql VOLATILE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    ns  text := memory_forget.namespace;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_forget: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF memory_forget.score_threshold IS NULL OR memory_forget.score_threshold = 'NaN'
       OR memory_forget.score_threshold < 0 OR memory_forget.score_threshold > 1 THEN
        PERFORM memsql.raise_invalid(
            format('memory_forget: score_threshold must be in [0, 1], got %s', memory_forget.score_threshold),
            'The default 0.05 forgets an unaccessed memory of unset importance after about 4.3 half-lives; 0 disables the rule.');
    END IF;
    IF memory_forget.time_weight IS NULL OR memory_forget.time_weight = 'NaN'
       OR memory_forget.time_weight < 0 OR memory_forget.time_weight > 1
       OR memory_forget.freq_weight IS NULL OR memory_forget.freq_weight = 'NaN'
       OR memory_forget.freq_weight < 0 OR memory_forget.freq_weight = 'Infinity'
       OR memory_forget.freq_cap IS NULL OR memory_forget.freq_cap = 'NaN' OR memory_forget.freq_cap < 1 THEN
        PERFORM memsql.raise_invalid(
            format('memory_forget: need 0 <= time_weight <= 1, finite freq_weight >= 0, freq_cap >= 1; got %s, %s, %s',
                   memory_forget.time_weight, memory_forget.freq_weight, memory_forget.freq_cap),
            'Defaults: time_weight 1.0, freq_weight 0.1, freq_cap 1.5.');
    END IF;
    IF memory_forget.importance_threshold IS NULL OR memory_forget.importance_threshold = 'NaN'
       OR memory_forget.importance_threshold < 0 OR memory_forget.importance_threshold > 1 THEN
        PERFORM memsql.raise_invalid(
            format('memory_forget: importance_threshold must be in [0, 1], got %s', memory_forget.importance_threshold),
            'The default 0.3 matches memory_search; 0 disables the rule.');
    END IF;
    IF memory_forget.dry_run IS NULL THEN
        PERFORM memsql.raise_invalid('memory_forget: dry_run is NULL', 'Pass dry_run => true to list, false to archive.');
    END IF;
    IF memory_forget.max_rows IS NULL OR memory_forget.max_rows < 1 OR memory_forget.max_rows > 1000000 THEN
        PERFORM memsql.raise_invalid(format('memory_forget: max_rows must be between 1 and 1000000, got %s', memory_forget.max_rows),
                                     'max_rows caps one batch; run again for the rest.');
    END IF;

    RETURN QUERY
    WITH RECURSIVE
    -- issue 11: versions. A closed version is judged with its chain, never alone: walk each closed version forward
    -- to the last closed version it leads to (the chain's key), and archive a chain when every closed version in it
    -- ended (valid_to) more than one half-life of its knowledge_type ago. Chains are short; the walk reads only the
    -- closed versions (partial index memories_closed).
    walk AS (
        SELECT m.id AS start_id, m.id AS at_id, m.superseded_by AS nxt, 0 AS depth
        FROM memsql.memories m WHERE m.namespace = ns AND m.valid_to IS NOT NULL
        UNION ALL
        SELECT w.start_id, n.id, n.superseded_by, w.depth + 1
        FROM walk w
        JOIN memsql.memories n ON n.namespace = ns AND n.id = w.nxt AND n.valid_to IS NOT NULL
        WHERE w.depth < 100000
    ),
    chain AS (
        SELECT DISTINCT ON (w.start_id) w.start_id AS id, w.at_id AS chain_key
        FROM walk w ORDER BY w.start_id, w.depth DESC
    ),
    ripe AS (
        SELECT c.chain_key,
               bool_and(kt.half_life_days IS NOT NULL
                        AND extract(epoch FROM now() - m.valid_to) / 86400.0 >= kt.half_life_days) AS ripe,
               min(extract(epoch FROM now() - m.valid_to) / 86400.0) AS ended_days
        FROM chain c
        JOIN memsql.memories m ON m.namespace = ns AND m.id = c.id
        JOIN memsql.knowledge_types kt ON kt.name = m.knowledge_type
        GROUP BY c.chain_key
    ),
    scored AS (
        SELECT m.id, m.document_id, m.knowledge_type, m.importance, x.age, kt.half_life_days AS hl,
               m.valid_to IS NOT NULL AS closed, coalesce(r.ripe, false) AS chain_ripe, r.ended_days,
               coalesce(a.access_count, 0) AS acc, a.last_accessed_at AS last_acc,
               (1 - memory_forget.time_weight) + memory_forget.time_weight * memsql.decay(x.age, kt.half_life_days) AS dec_f,
               least(memory_forget.freq_cap,
                     1 + memory_forget.freq_weight * ln(1 + coalesce(a.access_count, 0))) AS freq_f,
               coalesce(m.importance, 0.5)::float8 / 0.5 AS imp_f
        FROM memsql.memories m
        JOIN memsql.knowledge_types kt ON kt.name = m.knowledge_type
        LEFT JOIN memsql.memory_access a ON a.namespace = m.namespace AND a.memory_id = m.id
        LEFT JOIN chain c ON c.id = m.id
        LEFT JOIN ripe r ON r.chain_key = c.chain_key
        CROSS JOIN LATERAL (
            SELECT greatest(0, extract(epoch FROM now() - coalesce(m.source_date, m.created_at)) / 86400.0)::float8 AS age
        ) x
        WHERE m.namespace = ns
    ),
    judged AS (
        SELECT s.*, s.imp_f * s.dec_f * s.freq_f AS sc
        FROM scored s
    ),
    cand AS (
        SELECT j.*,
               concat_ws('; ',
                   CASE WHEN j.closed AND j.chain_ripe THEN
                       format('superseded: its chain of versions ended %s d ago, past the half-life (%s d)',
                              trim_scale(round(j.ended_days::numeric, 1)), trim_scale(round(j.hl::numeric, 1)))
                   END,
                   CASE WHEN NOT j.closed AND j.sc < memory_forget.score_threshold THEN
                       format('faded: score %s < %s (age %s d, half-life %s, %s accesses)',
                              trim_scale(round(j.sc::numeric, 4)), memory_forget.score_threshold,
                              trim_scale(round(j.age::numeric, 1)),
                              coalesce(trim_scale(round(j.hl::numeric, 1)) || ' d', 'none'), j.acc)
                   END,
                   CASE WHEN NOT j.closed AND j.importance < memory_forget.importance_threshold THEN
                       format('unimportant: importance %s < %s', j.importance, memory_forget.importance_threshold)
                   END) AS why
        FROM judged j
        WHERE (j.closed AND j.chain_ripe)
           OR (NOT j.closed AND (j.sc < memory_forget.score_threshold OR j.importance < memory_forget.importance_threshold))
        ORDER BY j.closed DESC, j.sc, j.id   -- superseded chains before current versions
        LIMIT memory_forget.max_rows
    ),
    moved AS (
        DELETE FROM memsql.memories m
        USING cand c
        WHERE NOT memory_forget.dry_run AND m.namespace = ns AND m.id = c.id
        RETURNING m.namespace, m.id, m.document_id, m.chunk_index, m.content, m.content_hash, m.knowledge_type,
                  m.importance, m.topics, m.tags, m.metadata, m.source_date, m.created_at, m.ts_config,
                  m.valid_to, m.superseded_by
    ),
    kept AS (
        INSERT INTO memsql.archive AS ar (namespace, id, document_id, chunk_index, content, content_hash, knowledge_type,
                                          importance, topics, tags, metadata, source_date, created_at, last_accessed_at,
                                          access_count, score, reason, archived_at, document_hash, ts_config,
                                          valid_to, superseded_by)
        SELECT mv.namespace, mv.id, mv.document_id, mv.chunk_index, mv.content, mv.content_hash, mv.knowledge_type,
               mv.importance, mv.topics, mv.tags, mv.metadata, mv.source_date, mv.created_at, c.last_acc,
               c.acc, c.sc, c.why, now(), d.content_hash, mv.ts_config, mv.valid_to, mv.superseded_by
        FROM moved mv
        JOIN cand c ON c.id = mv.id
        LEFT JOIN memsql.documents d ON d.namespace = mv.namespace AND d.id = mv.document_id
        ORDER BY mv.id
        ON CONFLICT ON CONSTRAINT archive_pkey DO UPDATE
        SET document_id = excluded.document_id, chunk_index = excluded.chunk_index, content = excluded.content,
            content_hash = excluded.content_hash, knowledge_type = excluded.knowledge_type,
            importance = excluded.importance, topics = excluded.topics, tags = excluded.tags,
            metadata = excluded.metadata, source_date = excluded.source_date, created_at = excluded.created_at,
            last_accessed_at = excluded.last_accessed_at, access_count = excluded.access_count,
            score = excluded.score, reason = excluded.reason, archived_at = excluded.archived_at,
            document_hash = excluded.document_hash, ts_config = excluded.ts_config, valid_to = excluded.valid_to,
            superseded_by = excluded.superseded_by
        RETURNING ar.id
    )
    SELECT c.id, c.document_id, c.knowledge_type, c.importance, c.age, c.acc, c.dec_f, c.freq_f, c.sc, c.why,
           k.id IS NOT NULL
    FROM cand c
    LEFT JOIN kept k ON k.id = c.id
    ORDER BY c.closed DESC, c.sc, c.id;
END
$$;
COMMENT ON FUNCTION memsql.memory_forget(text, double precision, double precision, double precision,
    double precision, double precision, boolean, integer) IS
$c$Scores every memory of a namespace without a query and lists (dry_run) or archives the ones to forget. Never runs by itself.
Score (the memory axis of memory_search, plus importance as a factor):
  age_days = max(0, now() - coalesce(source_date, created_at)) in days (future dates count as 0);
  decay_factor = (1 - time_weight) + time_weight * 0.5 ^ (age_days / half_life_days) (memsql.decay; 1 when the
    knowledge_type has no half-life, e.g. principle);
  frequency_factor = least(freq_cap, 1 + freq_weight * ln(1 + access_count));
  score = (coalesce(importance, 0.5) / 0.5) * decay_factor * frequency_factor (importance unset or 0.5 -> x1, 1 -> x2).
Rules: 'faded' when score < score_threshold; 'unimportant' when importance is set and < importance_threshold
  (the memories memory_search drops with memory_rerank; applies to every knowledge_type, principle included).
  Versions (memory_update, re-ingest): those rules judge current versions only. Superseded versions are judged as
  chains: 'superseded' when every closed version of a chain (the versions linked by superseded_by up to the current
  one) ended (valid_to) at least one half-life of its knowledge_type ago (never for a type without half-life); the
  whole chain is archived at once, and superseded chains come before current versions (in the order and under max_rows).
Args: namespace text ('default'); score_threshold in [0,1] (0.05: an unaccessed memory of unset importance fades
  after log2(20) = 4.3 half-lives, e.g. news (21 d) after 91 days, note (365 d) after 4.3 years);
  time_weight in [0,1] (1.0; below 1 the decay factor never falls under 1 - time_weight, so lower values forget
  by time only with a higher score_threshold); freq_weight >= 0 (0.1); freq_cap >= 1 (1.5);
  importance_threshold in [0,1] (0.3); dry_run (true: change nothing); max_rows 1..1000000 (10000): lowest scores
  first; when max_rows rows come back, run again for the rest.
Returns one row per candidate, superseded versions first, then lowest score first (score, memory_id): the factors
  above, reason (the rules that
  matched, joined by '; ') and archived (true when this call moved it). With dry_run => false the candidates move in
  one statement to memsql.archive (all columns incl. valid_to and superseded_by, access_count and last_accessed_at,
  score, reason, archived_at,
  the document's content_hash; the vector is dropped) and are deleted from memsql.memories: term statistics stay
  exact (delete trigger), memory_access rows go by cascade, documents stay (memory_restore needs them).
Errors: MS002 invalid argument. Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 3. memory_restore

CREATE OR REPLACE FUNCTION memsql.memory_restore(memory_ids bigint[], namespace text DEFAULT 'default')
RETURNS TABLE (memory_id bigint, document_id bigint, restored boolean, reason text)
LANGUAGE plpgsql VOLATILE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    ns  text := memory_restore.namespace;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_restore: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF memory_restore.memory_ids IS NULL OR array_position(memory_restore.memory_ids, NULL) IS NOT NULL THEN
        PERFORM memsql.raise_invalid('memory_restore: memory_ids is NULL or holds a NULL',
                                     'Pass the ids of archived memories: SELECT id FROM memsql.archive.');
    END IF;

    RETURN QUERY
    WITH
    req AS (
        SELECT DISTINCT r.id FROM unnest(memory_restore.memory_ids) AS r(id)
    ),
    arc AS (
        SELECT ar.*
        FROM memsql.archive ar
        WHERE ar.namespace = ns AND ar.id IN (SELECT req.id FROM req)
        ORDER BY ar.id
        FOR UPDATE
    ),
    judged AS (
        SELECT req.id, a.document_id AS doc_id,
               CASE
                   WHEN a.id IS NULL THEN 'not archived'
                   WHEN d.id IS NULL THEN format('document %s no longer exists', a.document_id)
                   WHEN a.valid_to IS NULL AND a.document_hash IS NOT NULL AND d.content_hash <> a.document_hash THEN
                       format('document %s changed since archiving (re-ingested); its current chunks are live', a.document_id)
                   WHEN kt.name IS NULL THEN format('knowledge_type %s no longer exists', quote_literal(a.knowledge_type))
                   WHEN EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = ns AND m.id = a.id) THEN
                       'memory id is in use'
                   WHEN a.valid_to IS NULL AND EXISTS (
                            SELECT 1 FROM memsql.memories m
                            WHERE m.namespace = ns AND m.document_id = a.document_id AND m.chunk_index = a.chunk_index
                              AND m.valid_to IS NULL) THEN
                       format('chunk %s of document %s is taken', a.chunk_index, a.document_id)
               END AS why
        FROM req
        LEFT JOIN arc a ON a.id = req.id
        LEFT JOIN memsql.documents d ON d.namespace = ns AND d.id = a.document_id
        LEFT JOIN memsql.knowledge_types kt ON kt.name = a.knowledge_type
    ),
    ins AS (
        INSERT INTO memsql.memories AS m (namespace, id, document_id, chunk_index, content, content_hash, embedding,
                                          knowledge_type, importance, topics, tags, metadata, source_date, created_at,
                                          ts_config, valid_to, superseded_by)
        SELECT a.namespace, a.id, a.document_id, a.chunk_index, a.content, a.content_hash, NULL,
               a.knowledge_type, a.importance, a.topics, a.tags, a.metadata, a.source_date, a.created_at,
               a.ts_config, a.valid_to, a.superseded_by
        FROM arc a
        JOIN judged j ON j.id = a.id AND j.why IS NULL
        ORDER BY a.id
        ON CONFLICT DO NOTHING
        RETURNING m.id
    ),
    acc AS (
        INSERT INTO memsql.memory_access AS x (namespace, memory_id, access_count, last_accessed_at)
        SELECT a.namespace, a.id, a.access_count, a.last_accessed_at
        FROM arc a
        JOIN ins i ON i.id = a.id
        WHERE a.access_count > 0 OR a.last_accessed_at IS NOT NULL
        ORDER BY a.id
        ON CONFLICT ON CONSTRAINT memory_access_pkey DO UPDATE
        SET access_count = x.access_count + excluded.access_count,
            last_accessed_at = greatest(x.last_accessed_at, excluded.last_accessed_at)
        RETURNING x.memory_id
    ),
    gone AS (
        DELETE FROM memsql.archive ar
        USING ins i
        WHERE ar.namespace = ns AND ar.id = i.id
        RETURNING ar.id
    )
    SELECT j.id, j.doc_id, i.id IS NOT NULL,
           CASE WHEN i.id IS NOT NULL THEN 'restored; embedding pending'
                ELSE coalesce(j.why, 'conflict with a concurrent write; try again') END
    FROM judged j
    LEFT JOIN ins i ON i.id = j.id
    ORDER BY j.id;
END
$$;
COMMENT ON FUNCTION memsql.memory_restore(bigint[], text) IS
$c$Moves archived memories back into memsql.memories with the same id and a NULL embedding.
The lexical arm of memory_search finds them at once; a running memsql worker (or Memory.restore) re-embeds them
(memory_pending_embeddings, memory_set_embeddings), after which the dense arm does too. access_count and last_accessed_at return to
memsql.memory_access. Dates and importance are kept, so the next memory_forget with the same thresholds selects
them again: raise their importance with memory_tag to keep them. A superseded version comes back superseded (valid_to,
superseded_by kept; the document-changed and chunk-taken checks apply to current versions only).
Args: memory_ids bigint[] (ids from memsql.archive; duplicates ignored), namespace text ('default').
Returns one row per distinct id, by id: (memory_id, document_id (NULL when not archived), restored, reason):
  'restored; embedding pending', or why it was skipped: 'not archived', 'document N no longer exists',
  'document N changed since archiving (re-ingested)', 'knowledge_type ... no longer exists', 'memory id is in use',
  'chunk I of document N is taken'. A skipped row stays in the archive untouched (nothing is half-restored).
Errors: MS002 memory_ids or namespace NULL, or a NULL id. Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 4. The embedding backlog

CREATE OR REPLACE FUNCTION memsql.memory_pending_embeddings(namespace text DEFAULT NULL, max_rows integer DEFAULT 1000)
RETURNS SETOF memsql.pending_embedding
LANGUAGE plpgsql STABLE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
BEGIN
    IF memory_pending_embeddings.max_rows IS NULL OR memory_pending_embeddings.max_rows < 1
       OR memory_pending_embeddings.max_rows > 100000 THEN
        PERFORM memsql.raise_invalid(
            format('memory_pending_embeddings: max_rows must be between 1 and 100000, got %s', memory_pending_embeddings.max_rows),
            'Fetch the backlog in batches, e.g. max_rows => 1000.');
    END IF;
    RETURN QUERY
    SELECT m.namespace, m.id, m.content
    FROM memsql.memories m
    WHERE m.embedding IS NULL
      AND (memory_pending_embeddings.namespace IS NULL OR m.namespace = memory_pending_embeddings.namespace)
    ORDER BY m.id, m.namespace
    LIMIT memory_pending_embeddings.max_rows;
END
$$;
COMMENT ON FUNCTION memsql.memory_pending_embeddings(text, integer) IS
$c$The embedding backlog: memories whose embedding is NULL (written without a vector, or restored from the archive).
Args: namespace text (NULL = every namespace), max_rows integer 1..100000 (1000).
Returns (namespace, memory_id, content) by memory_id; embed the contents and pass the vectors to memory_set_embeddings.
Errors: MS002 max_rows out of range. Source: sql/functions/50_memory_axis.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_set_embeddings(namespace text, memory_ids bigint[], embeddings vector[])
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    ns       text := memory_set_embeddings.namespace;
    bad_dim  integer;
    bad_pos  bigint;
    n        integer;
BEGIN
    IF ns IS NULL OR memory_set_embeddings.memory_ids IS NULL OR memory_set_embeddings.embeddings IS NULL THEN
        PERFORM memsql.raise_invalid('memory_set_embeddings: namespace, memory_ids and embeddings must not be NULL',
                                     'Pass the namespace, the ids and one vector per id.');
    END IF;
    IF cardinality(memory_set_embeddings.memory_ids) <> cardinality(memory_set_embeddings.embeddings) THEN
        PERFORM memsql.raise_invalid(
            format('memory_set_embeddings: %s ids but %s embeddings', cardinality(memory_set_embeddings.memory_ids),
                   cardinality(memory_set_embeddings.embeddings)),
            'Pass exactly one embedding per id, in the same order.');
    END IF;
    IF array_position(memory_set_embeddings.memory_ids, NULL) IS NOT NULL
       OR (SELECT count(DISTINCT u.id) FROM unnest(memory_set_embeddings.memory_ids) AS u(id))
          <> cardinality(memory_set_embeddings.memory_ids) THEN
        PERFORM memsql.raise_invalid('memory_set_embeddings: memory_ids holds a NULL or a duplicate id',
                                     'Pass each id once.');
    END IF;
    SELECT u.i INTO bad_pos FROM unnest(memory_set_embeddings.embeddings) WITH ORDINALITY AS u(e, i)
    WHERE u.e IS NULL ORDER BY u.i LIMIT 1;
    IF FOUND THEN
        PERFORM memsql.raise_invalid(format('memory_set_embeddings: embedding %s is NULL', bad_pos),
                                     'Pass a vector for every id.');
    END IF;
    SELECT vector_dims(u.e) INTO bad_dim FROM unnest(memory_set_embeddings.embeddings) AS u(e)
    WHERE vector_dims(u.e) <> 384 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'memory_set_embeddings: embeddings must be 384-dimensional, got %', bad_dim
            USING ERRCODE = 'MS005', HINT = 'Embed with all-MiniLM-L6-v2 (memsql.embedding).';
    END IF;
    SELECT u.i INTO bad_pos FROM unnest(memory_set_embeddings.embeddings) WITH ORDINALITY AS u(e, i)
    WHERE vector_norm(u.e) = 0 ORDER BY u.i LIMIT 1;
    IF FOUND THEN
        PERFORM memsql.raise_invalid(format('memory_set_embeddings: embedding %s is the zero vector', bad_pos),
                                     'A zero vector has no direction; embed the content again.');
    END IF;

    PERFORM 1 FROM memsql.memories m
    WHERE m.namespace = ns AND m.id = ANY (memory_set_embeddings.memory_ids)
    ORDER BY m.id
    FOR UPDATE;
    UPDATE memsql.memories m
    SET embedding = u.e
    FROM unnest(memory_set_embeddings.memory_ids, memory_set_embeddings.embeddings) AS u(id, e)
    WHERE m.namespace = ns AND m.id = u.id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.memory_set_embeddings(text, bigint[], vector[]) IS
$c$Sets the embeddings of memories (the backlog of memory_pending_embeddings, or a re-embedding); content is untouched.
Args: namespace text, memory_ids bigint[] (distinct), embeddings vector(384)[] (one non-zero vector per id, same order).
Returns integer: rows updated (ids absent from the namespace, e.g. deleted meanwhile, are skipped).
Errors: MS002 NULL argument or element, cardinalities differ, duplicate id, zero vector; MS005 a vector not 384-d.
Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 5. find_by_tag

CREATE OR REPLACE FUNCTION memsql.find_by_tag(
    tags       text[],
    namespace  text     DEFAULT 'default',
    match_all  boolean  DEFAULT false,
    k          integer  DEFAULT 100
)
RETURNS SETOF memsql.tagged_memory
LANGUAGE plpgsql STABLE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
BEGIN
    IF find_by_tag.tags IS NULL OR cardinality(find_by_tag.tags) = 0 THEN
        PERFORM memsql.raise_invalid('find_by_tag: tags is NULL or empty', 'Pass at least one tag, e.g. ARRAY[''todo''].');
    END IF;
    PERFORM memsql.check_tag_list('find_by_tag', 'tags', find_by_tag.tags);
    IF find_by_tag.namespace IS NULL OR find_by_tag.match_all IS NULL THEN
        PERFORM memsql.raise_invalid('find_by_tag: namespace and match_all must not be NULL',
                                     'Defaults: namespace ''default'', match_all false.');
    END IF;
    IF find_by_tag.k IS NULL OR find_by_tag.k < 1 OR find_by_tag.k > 10000 THEN
        PERFORM memsql.raise_invalid(format('find_by_tag: k must be between 1 and 10000, got %s', find_by_tag.k),
                                     'k is the number of memories to return, e.g. k => 100.');
    END IF;
    RETURN QUERY
    SELECT m.id, m.document_id, m.chunk_index, m.content, m.tags, m.knowledge_type, m.importance,
           m.source_date, m.created_at
    FROM memsql.memories m
    WHERE m.namespace = find_by_tag.namespace
      AND CASE WHEN find_by_tag.match_all THEN m.tags @> find_by_tag.tags ELSE m.tags && find_by_tag.tags END
      AND m.valid_to IS NULL   -- issue 11: current versions
    ORDER BY m.created_at DESC, m.id
    LIMIT find_by_tag.k;
END
$$;
COMMENT ON FUNCTION memsql.find_by_tag(text[], text, boolean, integer) IS
$c$Current memories (superseded versions excluded) carrying given tags (exact, case-sensitive match), newest first.
Args: tags text[] (non-empty), namespace text ('default'), match_all boolean (false: any of the tags; true: all),
  k integer 1..10000 (100).
Returns (memory_id, document_id, chunk_index, content, tags, knowledge_type, importance, source_date, created_at)
  ordered by created_at DESC, memory_id.
Errors: MS002 empty tags, NULL or empty tag, k out of range. Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 6. memory_neighbors

CREATE OR REPLACE FUNCTION memsql.memory_neighbors(
    memory_id  bigint,
    namespace  text     DEFAULT 'default',
    before     integer  DEFAULT 1,
    after      integer  DEFAULT 1
)
RETURNS SETOF memsql.memory_neighbor
LANGUAGE plpgsql STABLE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    ns   text := memory_neighbors.namespace;
    doc  bigint;
    ci   integer;
    vt   timestamptz;   -- issue 11: the target's valid_to (NULL = current)
BEGIN
    IF ns IS NULL OR memory_neighbors.memory_id IS NULL THEN
        PERFORM memsql.raise_invalid('memory_neighbors: memory_id and namespace must not be NULL',
                                     'Pass a memory id from memory_search, e.g. memory_neighbors(42).');
    END IF;
    IF memory_neighbors.before IS NULL OR memory_neighbors.after IS NULL
       OR memory_neighbors.before < 0 OR memory_neighbors.after < 0
       OR memory_neighbors.before > 1000 OR memory_neighbors.after > 1000 THEN
        PERFORM memsql.raise_invalid(
            format('memory_neighbors: before and after must be between 0 and 1000, got %s, %s',
                   memory_neighbors.before, memory_neighbors.after),
            'before => 1, after => 1 returns the chunk with one neighbour on each side.');
    END IF;
    SELECT m.document_id, m.chunk_index, m.valid_to INTO doc, ci, vt
    FROM memsql.memories m WHERE m.namespace = ns AND m.id = memory_neighbors.memory_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'memory_neighbors: no memory % in namespace %', memory_neighbors.memory_id, quote_literal(ns)
            USING ERRCODE = 'MS004',
                  HINT = 'An archived memory comes back with memory_restore(ARRAY[id]); see memsql.archive.';
    END IF;
    RETURN QUERY
    SELECT w.id, w.document_id, w.chunk_index, w.content, w.id = memory_neighbors.memory_id
    FROM (
        (SELECT m.id, m.document_id, m.chunk_index, m.content
         FROM memsql.memories m
         WHERE m.namespace = ns AND m.document_id = doc AND m.chunk_index < ci
           AND CASE WHEN vt IS NULL THEN m.valid_to IS NULL   -- issue 11: the chunks of the target's version
                    ELSE tstzrange(m.created_at, m.valid_to) @> (vt - interval '1 microsecond') END
         ORDER BY m.chunk_index DESC
         LIMIT memory_neighbors.before)
        UNION ALL
        (SELECT m.id, m.document_id, m.chunk_index, m.content
         FROM memsql.memories m
         WHERE m.namespace = ns AND m.id = memory_neighbors.memory_id)
        UNION ALL
        (SELECT m.id, m.document_id, m.chunk_index, m.content
         FROM memsql.memories m
         WHERE m.namespace = ns AND m.document_id = doc AND m.chunk_index > ci
           AND CASE WHEN vt IS NULL THEN m.valid_to IS NULL   -- issue 11: the chunks of the target's version
                    ELSE tstzrange(m.created_at, m.valid_to) @> (vt - interval '1 microsecond') END
         ORDER BY m.chunk_index
         LIMIT memory_neighbors.after)
    ) w
    ORDER BY w.chunk_index;
END
$$;
COMMENT ON FUNCTION memsql.memory_neighbors(bigint, text, integer, integer) IS
$c$The chunks around a memory in its document, for reading a search hit in context.
Args: memory_id bigint, namespace text ('default'), before, after integer 0..1000 (1): how many live chunks to take
  on each side (archived chunks are skipped, so the window counts the chunks that exist, not chunk_index values).
  Versions: around a current memory, current chunks; around a superseded one, the chunks valid just before it ended.
Returns (memory_id, document_id, chunk_index, content, is_target) ordered by chunk_index.
Errors: MS002 NULL or out-of-range argument; MS004 no such memory in the namespace.
Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 7. memory_duplicates

CREATE OR REPLACE FUNCTION memsql.normalized_content_hash(content text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = memsql, pg_catalog
RETURN md5(lower(btrim(regexp_replace(content, '\s+', ' ', 'g'))));
COMMENT ON FUNCTION memsql.normalized_content_hash(text) IS
$c$md5 of a text lower-cased with white space runs collapsed to one space and trimmed: equal for texts that differ
only in case and spacing. Args: content text. Returns text (32 hex digits). Used by memory_duplicates.
Source: sql/functions/50_memory_axis.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_duplicates(
    namespace   text              DEFAULT 'default',
    similarity  double precision  DEFAULT 0.95,
    max_pairs   integer           DEFAULT 1000
)
RETURNS SETOF memsql.duplicate_pair
LANGUAGE plpgsql STABLE
SET search_path = memsql, public, pg_catalog
SET hnsw.ef_search = 40
SET hnsw.iterative_scan = 'relaxed_order'
AS $$
#variable_conflict use_column
DECLARE
    ns  text := memory_duplicates.namespace;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_duplicates: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF memory_duplicates.similarity IS NULL OR memory_duplicates.similarity = 'NaN'
       OR memory_duplicates.similarity <= 0 OR memory_duplicates.similarity > 1 THEN
        PERFORM memsql.raise_invalid(
            format('memory_duplicates: similarity must be in (0, 1], got %s', memory_duplicates.similarity),
            'Cosine similarity of the embeddings; 0.95 finds near-verbatim copies.');
    END IF;
    IF memory_duplicates.max_pairs IS NULL OR memory_duplicates.max_pairs < 1 OR memory_duplicates.max_pairs > 100000 THEN
        PERFORM memsql.raise_invalid(
            format('memory_duplicates: max_pairs must be between 1 and 100000, got %s', memory_duplicates.max_pairs),
            'max_pairs caps the report, e.g. max_pairs => 1000.');
    END IF;
    RETURN QUERY
    WITH
    norm AS (
        SELECT m.id, memsql.normalized_content_hash(m.content) AS h
        FROM memsql.memories m
        WHERE m.namespace = ns AND m.valid_to IS NULL   -- issue 11: current versions
    ),
    grp AS (
        SELECT n.id, n.h, min(n.id) OVER (PARTITION BY n.h) AS first_id
        FROM norm n
    ),
    exact AS (
        SELECT g.id AS a, g.first_id AS b, 1.0::float8 AS sim, 'exact'::text AS kind
        FROM grp g
        WHERE g.id > g.first_id
    ),
    knn AS (
        SELECT greatest(m.id, nb.id) AS a, least(m.id, nb.id) AS b, 1 - nb.dist AS sim
        FROM memsql.memories m
        CROSS JOIN LATERAL (
            SELECT o.id, o.embedding <=> m.embedding AS dist
            FROM memsql.memories o
            WHERE o.namespace = ns AND o.embedding IS NOT NULL AND o.valid_to IS NULL
            ORDER BY o.embedding::halfvec(384) <=> m.embedding::halfvec(384)   -- the HNSW index (V0009)
            LIMIT 6
        ) nb
        WHERE m.namespace = ns AND m.embedding IS NOT NULL AND m.valid_to IS NULL AND nb.id <> m.id
          AND 1 - nb.dist >= memory_duplicates.similarity
    ),
    near AS (
        SELECT q.a, q.b, max(q.sim) AS sim, 'near'::text AS kind
        FROM knn q
        JOIN grp ga ON ga.id = q.a
        JOIN grp gb ON gb.id = q.b
        WHERE ga.h <> gb.h
        GROUP BY q.a, q.b
    )
    SELECT r.a, r.b, r.sim, r.kind
    FROM (SELECT * FROM exact UNION ALL SELECT * FROM near) r
    ORDER BY r.kind, r.sim DESC, r.a, r.b
    LIMIT memory_duplicates.max_pairs;
END
$$;
COMMENT ON FUNCTION memsql.memory_duplicates(text, double precision, integer) IS
$c$Reports duplicate memories in a namespace (current versions only); never deletes anything.
Args: namespace text ('default'), similarity double precision in (0, 1] (0.95): the cosine similarity from which two
  embeddings count as near duplicates; max_pairs integer 1..100000 (1000).
Returns (memory_id, duplicate_of, similarity, kind), each pair once with memory_id > duplicate_of:
  kind 'exact' (similarity 1.0): equal content after lower() and collapsing white space; every copy points at the
    smallest id of its group;
  kind 'near': cosine similarity >= similarity among the 5 nearest neighbours of each memory (HNSW), exact pairs excluded.
  Ordered by kind ('exact' first), similarity DESC, memory_id, duplicate_of. Memories without an embedding take part in
  'exact' only. Cost: one nearest-neighbour scan per memory.
Errors: MS002 invalid argument. Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 8. memory_health

CREATE OR REPLACE FUNCTION memsql.memory_health(namespace text DEFAULT NULL)
RETURNS TABLE ("check" text, ok boolean, value text, hint text)
LANGUAGE plpgsql STABLE
SET search_path = memsql, public, pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    ns        text := memory_health.namespace;
    n         bigint;
    model     text;
    dim_set   text;
    dim_col   integer;
    bad       text;
BEGIN
    SELECT count(*) INTO n FROM memsql.memories m
    WHERE m.embedding IS NULL AND (ns IS NULL OR m.namespace = ns);
    RETURN QUERY SELECT 'memories_without_embedding'::text, n = 0, n::text,
        'The dense arm cannot find them (the lexical arm can): embed them with memory_pending_embeddings and '
        'memory_set_embeddings: a running memsql worker does this (memsql worker start), so does Memory.restore.'::text;

    SELECT count(*) INTO n FROM memsql.documents d
    WHERE (ns IS NULL OR d.namespace = ns)
      AND NOT EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = d.namespace AND m.document_id = d.id)
      AND NOT EXISTS (SELECT 1 FROM memsql.archive a WHERE a.namespace = d.namespace AND a.document_id = d.id);
    RETURN QUERY SELECT 'orphan_documents'::text, n = 0, n::text,
        'Documents with no memories, live or archived (e.g. an ingest that wrote none): remove them with '
        'SELECT memsql.delete_document(id, namespace) or ingest the source again.'::text;

    SELECT s.value INTO model FROM memsql.settings s WHERE s.key = 'embedding_model';
    RETURN QUERY SELECT 'embedding_model'::text, model IS NOT NULL, coalesce(model, 'unset'),
        'memsql.settings names the model whose vectors the database holds; memsql init records it.'::text;

    SELECT s.value INTO dim_set FROM memsql.settings s WHERE s.key = 'embedding_dimension';
    SELECT a.atttypmod INTO dim_col FROM pg_attribute a
    WHERE a.attrelid = 'memsql.memories'::regclass AND a.attname = 'embedding' AND NOT a.attisdropped;
    RETURN QUERY SELECT 'embedding_dimension'::text, dim_set IS NOT DISTINCT FROM dim_col::text,
        format('settings %s, column %s', coalesce(dim_set, 'unset'), coalesce(dim_col::text, 'missing')),
        'The settings and the memories.embedding column must agree with the model; use a new database for another model.'::text;

    SELECT string_agg(format('%s (%s)', c.relname, t.relname), ', ' ORDER BY c.relname) INTO bad
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indexrelid
    JOIN pg_class t ON t.oid = i.indrelid
    WHERE t.relnamespace = 'memsql'::regnamespace AND NOT (i.indisvalid AND i.indisready);
    RETURN QUERY SELECT 'invalid_indexes'::text, bad IS NULL, coalesce(bad, 'none'),
        'An interrupted CREATE INDEX CONCURRENTLY leaves an invalid index: REINDEX INDEX CONCURRENTLY memsql.<name>.'::text;

    SELECT string_agg(format('%s: %s/%s memories, %s/%s tokens', quote_literal(x.namespace), x.stat_docs, x.real_docs,
                             x.stat_len, x.real_len), '; ' ORDER BY x.namespace) INTO bad
    FROM (
        SELECT coalesce(r.namespace, s.namespace) AS namespace,
               coalesce(s.doc_count, 0) AS stat_docs, coalesce(r.cnt, 0) AS real_docs,
               coalesce(s.total_len, 0) AS stat_len, coalesce(r.len, 0) AS real_len
        FROM (SELECT m.namespace, count(*) AS cnt, sum(m.tsv_len) AS len
              FROM memsql.memories m WHERE ns IS NULL OR m.namespace = ns GROUP BY m.namespace) r
        FULL JOIN (SELECT s.* FROM memsql.namespace_stats s WHERE ns IS NULL OR s.namespace = ns) s
            ON s.namespace = r.namespace
    ) x
    WHERE x.stat_docs <> x.real_docs OR x.stat_len <> x.real_len;
    RETURN QUERY SELECT 'bm25_statistics'::text, bad IS NULL, coalesce(bad, 'exact'),
        'memsql.namespace_stats must equal the memories per namespace (statistics vs actual); a write that bypassed '
        'the triggers (e.g. session_replication_role = replica) breaks it.'::text;
END
$$;
COMMENT ON FUNCTION memsql.memory_health(text) IS
$c$Health checks of the memory store, one row per check: ("check", ok, value, hint). "check" is a reserved word: quote it.
Args: namespace text (NULL = all namespaces; the schema-wide checks ignore it).
Checks: memories_without_embedding (the embedding backlog, ok when 0); orphan_documents (documents with no live or
  archived memory, ok when 0); embedding_model (memsql.settings); embedding_dimension (settings vs the declared
  dimension of memories.embedding, atttypmod); invalid_indexes (pg_index.indisvalid / indisready false on memsql
  tables); bm25_statistics (namespace_stats vs actual memory count and token total).
Returns the rows in that order. Errors: none. Source: sql/functions/50_memory_axis.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- 9. memory_archive_stats

CREATE OR REPLACE VIEW memsql.memory_archive_stats AS
SELECT a.namespace,
       count(*)           AS archived,
       min(a.archived_at) AS oldest_archived_at,
       max(a.archived_at) AS newest_archived_at
FROM memsql.archive a
GROUP BY a.namespace;
COMMENT ON VIEW memsql.memory_archive_stats IS
$c$Archived memories per namespace: how many, and when the oldest and newest were archived (timestamptz).
Restore them with memory_restore(ids, namespace). Source: sql/functions/50_memory_axis.sql.$c$;
