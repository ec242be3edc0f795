-- Forgetting: memory_forget (dry run first, archives), memory_restore (back from the archive) and
-- memory_archive_stats. CREATE OR REPLACE only.
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
-- memory_forget

CREATE OR REPLACE FUNCTION memsql.memory_forget(
    namespace             text             DEFAULT 'default',
    score_threshold       double precision DEFAULT 0.05,
    time_weight           double precision DEFAULT 1.0,
    freq_weight           double precision DEFAULT 0.1,
    freq_cap              double precision DEFAULT 1.5,
    importance_threshold  double precision DEFAULT 0.3,
    dry_run               boolean          DEFAULT true,
    max_rows              integer          DEFAULT 10000,
    keep_types            text[]           DEFAULT '{conversation}',   -- never 'faded' (a person's history)
    recent_days           double precision DEFAULT 30,    -- used (memory_touch, restored) this recently: kept
    reference_time        timestamptz      DEFAULT NULL    -- NULL = now(): the time ages are computed from
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
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    fn  CONSTANT text := 'memory_forget';
    ns  text := memory_forget.namespace;
    t0  timestamptz := coalesce(memory_forget.reference_time, now());
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_forget: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF memory_forget.keep_types IS NULL THEN
        PERFORM memsql.raise_invalid('memory_forget: keep_types is NULL',
                                     'Pass the knowledge types never forgotten by age, e.g. ''{conversation}''; ''{}'' = none.');
    END IF;
    -- a misspelt type would protect nothing: an error (MS003, the known ones in the HINT), not a silent no-op
    PERFORM memsql.check_knowledge_type(t) FROM pg_catalog.unnest(memory_forget.keep_types) AS t;
    IF memory_forget.recent_days IS NULL OR memory_forget.recent_days = 'NaN' OR memory_forget.recent_days < 0
       OR memory_forget.recent_days = 'Infinity' THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_forget: recent_days must be a finite number >= 0, got %s',
                                            memory_forget.recent_days),
                                     'The default 30 keeps a memory used (or restored) in the last 30 days; 0 = no grace.');
    END IF;
    IF memory_forget.reference_time = 'infinity' OR memory_forget.reference_time = '-infinity' THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_forget: reference_time must be a finite time, got %s',
                                            memory_forget.reference_time),
                                     'Pass the time ages are computed from, e.g. ''2026-03-01 12:00+00''; NULL = now.');
    END IF;
    PERFORM memsql.check_argument(fn, 'score_threshold', memory_forget.score_threshold, 0, 1,
        'The default 0.05 forgets an unaccessed memory of unset importance after about 4.3 half-lives; 0 disables the rule.');
    PERFORM memsql.check_argument(fn, 'time_weight', memory_forget.time_weight, 0, 1, 'The default is time_weight => 1.0.');
    PERFORM memsql.check_argument(fn, 'freq_weight', memory_forget.freq_weight, 0, 1000, 'The default is freq_weight => 0.1.');
    PERFORM memsql.check_argument(fn, 'freq_cap', memory_forget.freq_cap, 1, 1e6, 'The default is freq_cap => 1.5.');
    PERFORM memsql.check_argument(fn, 'importance_threshold', memory_forget.importance_threshold, 0, 1,
        'The default 0.3 matches memory_search; 0 disables the rule.');
    IF memory_forget.dry_run IS NULL THEN
        PERFORM memsql.raise_invalid('memory_forget: dry_run is NULL', 'Pass dry_run => true to list, false to archive.');
    END IF;
    PERFORM memsql.check_argument(fn, 'max_rows', memory_forget.max_rows, 1, 1000000,
        'max_rows caps one batch; run again for the rest.');

    RETURN QUERY
    WITH RECURSIVE
    -- versions: A closed version is judged with its chain, never alone: walk each closed version forward
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
                        AND extract(epoch FROM t0 - m.valid_to) / 86400.0 >= kt.half_life_days) AS ripe,
               min(extract(epoch FROM t0 - m.valid_to) / 86400.0) AS ended_days
        FROM chain c
        JOIN memsql.memories m ON m.namespace = ns AND m.id = c.id
        JOIN memsql.knowledge_types kt ON kt.name = m.knowledge_type
        GROUP BY c.chain_key
    ),
    scored AS (
        SELECT m.id, m.document_id, m.knowledge_type, m.importance, x.age, kt.half_life_days AS hl,
               m.valid_to IS NOT NULL AS closed, coalesce(r.ripe, false) AS chain_ripe, r.ended_days,
               coalesce(a.access_count, 0) AS acc, a.last_accessed_at AS last_acc,
               m.knowledge_type = ANY (memory_forget.keep_types) AS kept_type,
               coalesce(a.last_accessed_at > t0 - make_interval(secs => memory_forget.recent_days * 86400), false)
                   AS used_recently,
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
            SELECT greatest(0, extract(epoch FROM t0 - coalesce(m.source_date, m.created_at)) / 86400.0)::float8 AS age
        ) x
        WHERE m.namespace = ns
    ),
    judged AS (
        SELECT s.*, s.imp_f * s.dec_f * s.freq_f AS sc
        FROM scored s
    ),
    cand AS (
        SELECT j.*,
               pg_catalog.concat_ws('; ',
                   CASE WHEN j.closed AND j.chain_ripe THEN
                       pg_catalog.format('superseded: its chain of versions ended %s d ago, past the half-life (%s d)',
                              trim_scale(round(j.ended_days::numeric, 1)), trim_scale(round(j.hl::numeric, 1)))
                   END,
                   CASE WHEN NOT j.closed AND j.sc < memory_forget.score_threshold AND NOT j.kept_type THEN
                       pg_catalog.format('faded: score %s < %s (age %s d, half-life %s, %s accesses)',
                              -- 4 decimals, more when those would round up to the threshold ("1 < 1")
                              trim_scale(CASE WHEN round(j.sc::numeric, 4) < memory_forget.score_threshold
                                              THEN round(j.sc::numeric, 4) ELSE trunc(j.sc::numeric, 12) END),
                              memory_forget.score_threshold,
                              trim_scale(round(j.age::numeric, 1)),
                              coalesce(trim_scale(round(j.hl::numeric, 1)) || ' d', 'none'), j.acc)
                   END,
                   CASE WHEN NOT j.closed AND j.importance < memory_forget.importance_threshold::real THEN
                       pg_catalog.format('unimportant: importance %s < %s', j.importance, memory_forget.importance_threshold)
                   END) AS why
        FROM judged j
        WHERE NOT j.used_recently
          AND ((j.closed AND j.chain_ripe)
               OR (NOT j.closed AND ((j.sc < memory_forget.score_threshold AND NOT j.kept_type)
                                     OR j.importance < memory_forget.importance_threshold::real)))
        ORDER BY j.closed DESC, j.sc, j.id   -- superseded chains before current versions
        LIMIT memory_forget.max_rows
    ),
    moved AS (
        DELETE FROM memsql.memories m
        USING cand c
        WHERE NOT memory_forget.dry_run AND m.namespace = ns AND m.id = c.id
        RETURNING m.namespace, m.id, m.document_id, m.chunk_index, m.content, m.content_hash, m.knowledge_type,
                  m.importance, m.topics, m.tags, m.metadata, m.source_date, m.created_at, m.ts_config,
                  m.valid_to, m.superseded_by, m.bm25_len
    ),
    kept AS (
        INSERT INTO memsql.archive AS ar (namespace, id, document_id, chunk_index, content, content_hash, knowledge_type,
                                          importance, topics, tags, metadata, source_date, created_at, last_accessed_at,
                                          access_count, score, reason, archived_at, document_hash, ts_config,
                                          valid_to, superseded_by, bm25_len)
        SELECT mv.namespace, mv.id, mv.document_id, mv.chunk_index, mv.content, mv.content_hash, mv.knowledge_type,
               mv.importance, mv.topics, mv.tags, mv.metadata, mv.source_date, mv.created_at, c.last_acc,
               c.acc, c.sc, c.why, now(), d.content_hash, mv.ts_config, mv.valid_to, mv.superseded_by, mv.bm25_len
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
            superseded_by = excluded.superseded_by, bm25_len = excluded.bm25_len
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
    double precision, double precision, boolean, integer, text[], double precision, timestamptz) IS
$c$Scores every memory of a namespace without a query and lists (dry_run) or archives the ones to forget. Never runs by itself.
Score (the memory axis of memory_search, plus importance as a factor):
  age_days = max(0, reference_time - coalesce(source_date, created_at)) in days (future dates count as 0);
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
  after log2(20) = 4.3 half-lives, e.g. news (21 d) after 91 days, note (1825 d) after 21.6 years);
  time_weight in [0,1] (1.0; below 1 the decay factor never falls under 1 - time_weight, so lower values forget
  by time only with a higher score_threshold); freq_weight >= 0 (0.1); freq_cap >= 1 (1.5);
  importance_threshold in [0,1] (0.3); dry_run (true: change nothing); max_rows 1..1000000 (10000): lowest scores
  first; when max_rows rows come back, run again for the rest.
  keep_types text[] ('{conversation}'): knowledge types the 'faded' rule never selects, so a person's conversation
  history stays however old unless asked (keep_types => '{}'); 'unimportant' and 'superseded' still apply.
  recent_days >= 0 (30): a memory used within recent_days before reference_time (memsql.memory_access
  last_accessed_at: memory_touch, a search with touch, a restore) is never a candidate, so a restored memory is not
  archived again at once. reference_time timestamptz (NULL = now()): the time ages and ended versions are computed from.
Returns one row per candidate, superseded versions first, then lowest score first (score, memory_id): the factors
  above, reason (the rules that
  matched, joined by '; ') and archived (true when this call moved it). With dry_run => false the candidates move in
  one statement to memsql.archive (all columns incl. valid_to and superseded_by, access_count and last_accessed_at,
  score, reason, archived_at,
  the document's content_hash; the vector is dropped) and are deleted from memsql.memories: term statistics stay
  exact (delete trigger), memory_access rows go by cascade, documents stay (memory_restore needs them).
Errors: MS002 namespace or dry_run NULL, or a numeric argument NULL, not finite or out of its range (the message
  names it: memsql.check_argument); MS003 a keep_types entry that is no knowledge type (a misspelt one would protect
  nothing). Source: sql/functions/52_forget.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- memory_restore

CREATE OR REPLACE FUNCTION memsql.memory_restore(memory_ids bigint[], namespace text DEFAULT 'default')
RETURNS TABLE (memory_id bigint, document_id bigint, restored boolean, reason text)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    ns  text := memory_restore.namespace;
BEGIN
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_restore: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF memory_restore.memory_ids IS NULL OR pg_catalog.array_position(memory_restore.memory_ids, NULL) IS NOT NULL THEN
        PERFORM memsql.raise_invalid('memory_restore: memory_ids is NULL or holds a NULL',
                                     'Pass the ids of archived memories: SELECT id FROM memsql.archive.');
    END IF;

    RETURN QUERY
    WITH
    req AS (
        SELECT DISTINCT r.id FROM pg_catalog.unnest(memory_restore.memory_ids) AS r(id)
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
                   WHEN a.id IS NULL AND EXISTS (SELECT 1 FROM memsql.memories m
                                                 WHERE m.namespace = ns AND m.id = req.id) THEN 'not archived'
                   WHEN a.id IS NULL THEN pg_catalog.format('no memory %s in namespace %s', req.id, quote_literal(ns))
                   WHEN d.id IS NULL THEN pg_catalog.format('document %s no longer exists', a.document_id)
                   WHEN a.valid_to IS NULL AND a.document_hash IS NOT NULL AND d.content_hash <> a.document_hash THEN
                       pg_catalog.format('document %s changed since archiving (re-ingested); its current chunks are live', a.document_id)
                   WHEN kt.name IS NULL THEN pg_catalog.format('knowledge_type %s no longer exists', quote_literal(a.knowledge_type))
                   WHEN EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = ns AND m.id = a.id) THEN
                       'memory id is in use'
                   WHEN a.valid_to IS NULL AND EXISTS (
                            SELECT 1 FROM memsql.memories m
                            WHERE m.namespace = ns AND m.document_id = a.document_id AND m.chunk_index = a.chunk_index
                              AND m.valid_to IS NULL) THEN
                       pg_catalog.format('chunk %s of document %s is taken', a.chunk_index, a.document_id)
               END AS why
        FROM req
        LEFT JOIN arc a ON a.id = req.id
        LEFT JOIN memsql.documents d ON d.namespace = ns AND d.id = a.document_id
        LEFT JOIN memsql.knowledge_types kt ON kt.name = a.knowledge_type
    ),
    ins AS (
        INSERT INTO memsql.memories AS m (namespace, id, document_id, chunk_index, content, content_hash, embedding,
                                          knowledge_type, importance, topics, tags, metadata, source_date, created_at,
                                          ts_config, valid_to, superseded_by, bm25_len)
        SELECT a.namespace, a.id, a.document_id, a.chunk_index, a.content, a.content_hash, NULL,
               a.knowledge_type, a.importance, a.topics, a.tags, a.metadata, a.source_date, a.created_at,
               a.ts_config, a.valid_to, a.superseded_by, a.bm25_len
        FROM arc a
        JOIN judged j ON j.id = a.id AND j.why IS NULL
        ORDER BY a.id
        ON CONFLICT DO NOTHING
        RETURNING m.id
    ),
    acc AS (
        INSERT INTO memsql.memory_access AS x (namespace, memory_id, access_count, last_accessed_at)
        SELECT a.namespace, a.id, a.access_count + 1, now()   -- restoring is a use: not forgotten again at once
        FROM arc a
        JOIN ins i ON i.id = a.id
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
memsql.memory_access, the restore counted as one more access (last_accessed_at = now()): memory_forget keeps a
memory used within its recent_days (30), so a restored memory is not a candidate again at once. Dates and importance
are kept: after recent_days the same thresholds select it again unless it is used; raise its importance with
memory_tag to keep it. A superseded version comes back superseded (valid_to,
superseded_by kept; the document-changed and chunk-taken checks apply to current versions only).
Args: memory_ids bigint[] (ids from memsql.archive; duplicates ignored), namespace text ('default').
Returns one row per distinct id, by id: (memory_id, document_id (NULL when not archived), restored, reason):
  'restored; embedding pending', or why it was skipped: 'not archived' (a live memory), 'no memory N in namespace
  ''ns''' (neither live nor archived), 'document N no longer exists',
  'document N changed since archiving (re-ingested)', 'knowledge_type ... no longer exists', 'memory id is in use',
  'chunk I of document N is taken'. A skipped row stays in the archive untouched (nothing is half-restored).
Errors: MS002 memory_ids or namespace NULL, or a NULL id. Source: sql/functions/52_forget.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- memory_archive_stats

CREATE OR REPLACE VIEW memsql.memory_archive_stats AS
SELECT a.namespace,
       count(*)           AS archived,
       min(a.archived_at) AS oldest_archived_at,
       max(a.archived_at) AS newest_archived_at
FROM memsql.archive a
GROUP BY a.namespace;
COMMENT ON VIEW memsql.memory_archive_stats IS
$c$Archived memories per namespace: how many, and when the oldest and newest were archived (timestamptz).
Restore them with memory_restore(ids, namespace). Source: sql/functions/52_forget.sql.$c$;
