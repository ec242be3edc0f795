-- memory_search: hybrid retrieval (HNSW dense arms + BM25 lexical arm) fused by score (convex, default) or weighted RRF,
-- then the memory axis (importance cutoff, time decay, access-frequency boost). One SQL call.

CREATE OR REPLACE FUNCTION memsql.memory_search(
    query                 text,
    query_embeddings      vector[]         DEFAULT NULL,
    k                     integer          DEFAULT 10,
    namespace             text             DEFAULT 'default',
    knowledge_types       text[]           DEFAULT NULL,
    tags                  text[]           DEFAULT NULL,
    candidates            integer          DEFAULT NULL,   -- NULL = greatest(50, k)
    rrf_k                 integer          DEFAULT 60,
    dense_weight          double precision DEFAULT NULL,
    lexical_weight        double precision DEFAULT 1.0,
    bm25_k1               double precision DEFAULT 0.9,
    bm25_b                double precision DEFAULT 0.4,
    memory_rerank         boolean          DEFAULT true,
    importance_threshold  double precision DEFAULT 0.3,
    time_weight           double precision DEFAULT 0.5,
    freq_weight           double precision DEFAULT 0.1,
    freq_cap              double precision DEFAULT 1.5,
    touch                 boolean          DEFAULT true,
    dense_min_similarity  double precision DEFAULT 0.0,
    priority_weight       double precision DEFAULT 1.0,
    priority_min_similarity double precision DEFAULT 0.35,
    priority_limit        integer          DEFAULT 50,
    fusion                text             DEFAULT 'convex',
    -- issue 8 (the text pipeline): topics filter, ef_search, MMR diversity
    topics                text[]           DEFAULT NULL,
    ef_search             integer          DEFAULT NULL,
    enable_mmr            boolean          DEFAULT false,
    mmr_lambda            double precision DEFAULT 0.6,
    include_superseded    boolean          DEFAULT false,   -- issue 11: versions
    as_of                 timestamptz      DEFAULT NULL,    -- issue 11: versions
    posting_budget        integer          DEFAULT 2000     -- issue 9: exact BM25 ranking up to 2 x this many postings
)
RETURNS TABLE (
    memory_id         bigint,
    document_id       bigint,
    chunk_index       integer,
    content           text,
    score             double precision,
    fusion_score      double precision,
    dense_rank        integer,
    lexical_rank      integer,
    priority_rank     integer,
    dense_similarity  double precision,
    lexical_score     double precision,
    decay_factor      double precision,
    frequency_factor  double precision,
    source_uri        text,
    title             text,
    knowledge_type    text,
    importance        real,
    source_date       timestamptz,
    created_at        timestamptz,
    metadata          jsonb,
    valid_to          timestamptz,   -- issue 11: NULL = current version
    superseded_by     bigint         -- issue 11: the version that replaced it
)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
SET hnsw.ef_search = 100
SET hnsw.iterative_scan = 'relaxed_order'
SET plan_cache_mode = 'force_generic_plan'   -- plans made once per session: planning cost more than running
SET enable_sort = on                         -- switched off for one statement below; restored on exit
AS $$
#variable_conflict use_column
DECLARE
    ns        text := memory_search.namespace;
    nvar      integer := coalesce(cardinality(query_embeddings), 0);
    qlex      text[];
    cfgs      regconfig[];         -- text search configurations present in the namespace
    bad_dim   integer;
    filtered  boolean;
    vfilter   boolean;             -- issue 11: the version filter can drop a memory of this namespace
    n_docs    float8;
    kd0       float8;              -- BM25 length normalisation: tf + kd0 + kd1 * len
    kd1       float8;
    avgdl     float8;
    lx        text[] := '{}';      -- query lexemes present in the namespace, with idf * (k1 + 1)
    lw        float8[];
    ldf       bigint[];            -- ... and their document frequencies (postings)
    run_x     text[];              -- issue 9: the lexemes (and weights) one pass of the lexical arm reads,
    run_w     float8[];
    run_top   integer;             -- ... the memories it keeps,
    rescore   bigint[];            -- ... and, second pass, the only memories it reads postings of (NULL = all)
    d_id      bigint[] := '{}';    -- dense arms: memory, rank (per query embedding)
    d_rank    integer[];
    d_sim     float8[];            -- ... and cosine similarity
    prio_all  bigint[] := '{}';    -- priority memories of the namespace
    pd_id     bigint[] := '{}';    -- priority memories near a query embedding, nearest first
    lex_id    bigint[] := '{}';    -- lexical arm: top `candidates` by BM25, best first
    lex_sc    float8[];
    pl_id     bigint[] := '{}';    -- priority memories matching lexically: exact rank, BM25
    pl_full   integer[];
    pl_sc     float8[];
    w_id      bigint[] := '{}';    -- BM25 of the dense arms' and priority memories
    w_sc      float8[];
    kt_name   text[];              -- knowledge types and their half-lives (memory axis)
    kt_hl     float8[];
    exact_dense boolean;           -- dense arms scan the namespace exactly (few memories) instead of walking HNSW
    exact_scan_max CONSTANT integer := 1000;   -- up to this many memories (namespace_stats): exact scan is as fast
BEGIN
    IF query IS NULL THEN
        PERFORM memsql.raise_invalid('memory_search: query is NULL', 'Pass a text query ('''' for dense-only search).');
    END IF;
    IF ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_search: namespace is NULL', 'Pass a namespace, e.g. ''default''.');
    END IF;
    IF k IS NULL OR k < 1 OR k > 1000 THEN
        PERFORM memsql.raise_invalid(format('memory_search: k must be between 1 and 1000, got %s', k),
                                     'k is the number of results to return, e.g. k => 10.');
    END IF;
    -- NULL = greatest(50, k): on the development sets every depth from 40 to 200 gives the same top 10 (convex
    -- fusion); 50 keeps a margin, and an arm never asks fewer rows than the answer holds
    candidates := coalesce(candidates, greatest(50, k));
    IF candidates < 1 OR candidates > 1000 THEN
        PERFORM memsql.raise_invalid(format('memory_search: candidates must be between 1 and 1000, got %s', candidates),
                                     'candidates is the depth of each arm before fusion; NULL (the default) = greatest(50, k).');
    END IF;
    IF rrf_k IS NULL OR rrf_k < 0 THEN
        PERFORM memsql.raise_invalid(format('memory_search: rrf_k must be >= 0, got %s', rrf_k), 'The usual value is 60.');
    END IF;
    IF fusion IS NULL OR fusion NOT IN ('rrf', 'convex') THEN
        PERFORM memsql.raise_invalid(format('memory_search: fusion must be ''rrf'' or ''convex'', got %s', fusion),
                                     'convex adds weight * score (cosine, BM25 / max BM25); rrf adds weight / (rrf_k + rank).');
    END IF;
    -- NULL = the fusion's default: cosine is not normalised under convex, so its weight is larger (chosen on the
    -- development sets: 2.0 to 3.0 all beat the former min-max fusion on both, 2.75 best on both)
    dense_weight := coalesce(dense_weight, CASE WHEN fusion = 'convex' THEN 2.75 ELSE 1.0 END);
    IF lexical_weight IS NULL OR dense_weight = 'NaN' OR lexical_weight = 'NaN'
       OR dense_weight < 0 OR lexical_weight < 0 OR dense_weight = 'Infinity' OR lexical_weight = 'Infinity' THEN
        PERFORM memsql.raise_invalid(
            format('memory_search: arm weights must be finite and >= 0, got dense %s, lexical %s', dense_weight, lexical_weight),
            'Use weights such as dense_weight => 1.0, lexical_weight => 1.0.');
    END IF;
    IF bm25_k1 IS NULL OR bm25_k1 < 0 OR bm25_k1 = 'NaN' OR bm25_b IS NULL OR bm25_b < 0 OR bm25_b > 1 OR bm25_b = 'NaN' THEN
        PERFORM memsql.raise_invalid(format('memory_search: need bm25_k1 >= 0 and 0 <= bm25_b <= 1, got %s, %s', bm25_k1, bm25_b),
                                     'The defaults are bm25_k1 => 0.9, bm25_b => 0.4.');
    END IF;
    IF time_weight IS NULL OR time_weight < 0 OR time_weight > 1 OR time_weight = 'NaN'
       OR freq_weight IS NULL OR freq_weight < 0 OR freq_weight = 'NaN' OR freq_weight = 'Infinity'
       OR freq_cap IS NULL OR freq_cap < 1 OR freq_cap = 'NaN'
       OR importance_threshold IS NULL OR importance_threshold = 'NaN' THEN
        PERFORM memsql.raise_invalid(
            format('memory_search: need 0 <= time_weight <= 1, finite freq_weight >= 0, freq_cap >= 1, importance_threshold not NULL; got %s, %s, %s, %s',
                   time_weight, freq_weight, freq_cap, importance_threshold),
            'Defaults: time_weight 0.5, freq_weight 0.1, freq_cap 1.5, importance_threshold 0.3.');
    END IF;
    IF dense_min_similarity IS NULL OR dense_min_similarity = 'NaN' OR dense_min_similarity < -1 OR dense_min_similarity > 1
       OR priority_weight IS NULL OR priority_weight = 'NaN' OR priority_weight < 0 OR priority_weight = 'Infinity'
       OR priority_min_similarity IS NULL OR priority_min_similarity = 'NaN'
       OR priority_limit IS NULL OR priority_limit < 0 OR priority_limit > 1000 THEN
        PERFORM memsql.raise_invalid(
            format('memory_search: need -1 <= dense_min_similarity <= 1, finite priority_weight >= 0, '
                   'priority_min_similarity not NULL, 0 <= priority_limit <= 1000; got %s, %s, %s, %s',
                   dense_min_similarity, priority_weight, priority_min_similarity, priority_limit),
            'Defaults: dense_min_similarity 0, priority_weight 1.0, priority_min_similarity 0.35, priority_limit 50.');
    END IF;
    IF ef_search IS NOT NULL AND (ef_search < 1 OR ef_search > 1000) THEN
        PERFORM memsql.raise_invalid(format('memory_search: ef_search must be between 1 and 1000, got %s', ef_search),
                                     'NULL (the default) = greatest(candidates, 40).');
    END IF;
    IF posting_budget IS NULL OR posting_budget < 0 THEN
        PERFORM memsql.raise_invalid(format('memory_search: posting_budget must be >= 0, got %s',
                                            coalesce(posting_budget::text, 'NULL')),
                                     '0 = read every posting of the query lexemes (exact BM25 ranking); default 2000.');
    END IF;
    IF enable_mmr IS NULL OR mmr_lambda IS NULL OR mmr_lambda = 'NaN' OR mmr_lambda < 0 OR mmr_lambda > 1 THEN
        PERFORM memsql.raise_invalid(
            format('memory_search: need enable_mmr not NULL and 0 <= mmr_lambda <= 1, got enable_mmr %s, mmr_lambda %s',
                   coalesce(enable_mmr::text, 'NULL'), coalesce(mmr_lambda::text, 'NULL')),
            'Defaults: enable_mmr false, mmr_lambda 0.6.');
    END IF;
    -- issue 11: versions
    IF include_superseded IS NULL THEN
        PERFORM memsql.raise_invalid('memory_search: include_superseded is NULL',
                                     'false = current versions only; true = every version (or every version written by as_of).');
    END IF;
    IF as_of IS NOT NULL AND (as_of = 'infinity' OR as_of = '-infinity') THEN
        PERFORM memsql.raise_invalid(format('memory_search: as_of must be a finite time, got %s', as_of),
                                     'Pass a timestamptz such as ''2026-03-01 12:00+00''; NULL = now.');
    END IF;
    IF nvar > 3 THEN
        PERFORM memsql.raise_invalid(format('memory_search: at most 3 query embeddings, got %s', nvar),
                                     'Pass the query and up to two enrichment variants.');
    END IF;
    SELECT vector_dims(e) INTO bad_dim FROM unnest(query_embeddings) AS e
    WHERE e IS NULL OR vector_dims(e) <> 384 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'memory_search: query embeddings must be 384-dimensional, got %', coalesce(bad_dim::text, 'NULL')
            USING ERRCODE = 'MS005', HINT = 'Embed the query with all-MiniLM-L6-v2 (memsql.embedding).';
    END IF;

    -- the query's lexemes under every text search configuration of the namespace (a loose index scan of
    -- memories_ts_config: one probe per configuration)
    WITH RECURSIVE c(cfg) AS (
        (SELECT m.ts_config FROM memsql.memories m WHERE m.namespace = ns ORDER BY m.ts_config LIMIT 1)
        UNION ALL
        SELECT (SELECT m.ts_config FROM memsql.memories m WHERE m.namespace = ns AND m.ts_config > c.cfg
                ORDER BY m.ts_config LIMIT 1)
        FROM c WHERE c.cfg IS NOT NULL
    )
    SELECT coalesce(array_agg(c.cfg) FILTER (WHERE c.cfg IS NOT NULL), '{}') INTO cfgs FROM c;
    IF cardinality(cfgs) <= 1 THEN
        qlex := memsql.query_lexemes(query, coalesce(cfgs[1], 'memsql.english'::regconfig));
    ELSE
        SELECT coalesce(array_agg(DISTINCT l.l ORDER BY l.l), '{}') INTO qlex
        FROM unnest(cfgs) AS c(cfg), unnest(memsql.query_lexemes(query, c.cfg)) AS l(l);
    END IF;
    -- [issue 10: query embedding from the worker] NULL = ask memsql.query_embedding (cache, else the memsql worker;
    -- NULL at once without a worker, sql/functions/60_worker.sql); '{}' = lexical only on purpose
    IF query_embeddings IS NULL AND dense_weight > 0 THEN
        query_embeddings := array_remove(ARRAY[memsql.query_embedding(query)], NULL);
        nvar := cardinality(query_embeddings);
    END IF;
    -- [/issue 10]
    IF nvar = 0 AND cardinality(qlex) = 0 THEN   -- a blank query (or only stop words / punctuation): no rows
        RAISE NOTICE 'memory_search: nothing to search: the query has no searchable word and no query embedding was given';
    ELSIF nvar = 0 THEN
        RAISE NOTICE 'memory_search: no query embeddings given, lexical arm only';
    END IF;
    -- an arm asking `candidates` rows must not be cut to ef_search (default 40)
    PERFORM set_config('hnsw.ef_search', coalesce(ef_search, greatest(candidates, 40))::text, true);
    filtered := memory_search.knowledge_types IS NOT NULL OR memory_search.tags IS NOT NULL
                OR memory_search.topics IS NOT NULL;
    -- issue 11: versions. Current versions only (default) filter nothing in a namespace that holds no closed version
    -- (one probe of the partial index memories_closed); then the lexical arm skips its version check.
    vfilter := as_of IS NOT NULL
               OR (NOT include_superseded
                   AND EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = ns AND m.valid_to IS NOT NULL));

    -- The search runs as a few small statements whose results travel in arrays, so that no plan can
    -- re-run an aggregate per row, whatever the planner estimates. Cost: one HNSW scan per query embedding,
    -- one pass over the query lexemes' postings, then primary-key lookups for the pooled memories only.

    -- 1. Dense arms: the `candidates` nearest memories per query embedding (HNSW; iterative scan under filters).
    IF nvar > 0 AND dense_weight > 0 THEN   -- an arm with weight 0 is not run
        exact_dense := coalesce((SELECT s.doc_count <= exact_scan_max FROM memsql.namespace_stats s
                                 WHERE s.namespace = ns), true);
        -- Sorts off while this statement is planned (once per session, like the others; restored below): the planner
        -- would rather sort a few thousand rows than walk the HNSW index, which is faster. Two branches, one run
        -- per call: a small namespace is scanned exactly (exact recall, no half-precision casts), a larger one walks
        -- the HNSW index (V0009). Ranks always come from the exact distance (below). One statement with its
        -- ORDER BY chosen by a CASE could not use the index in a plan made once, and planning it per call cost
        -- 0.15-0.3 ms (10k-100k).
        PERFORM set_config('enable_sort', 'off', true);
        WITH f AS NOT MATERIALIZED (   -- the filters, written once: inlined into both branches below
            SELECT m.id, m.embedding FROM memsql.memories m
            WHERE m.namespace = ns AND m.embedding IS NOT NULL
              AND (memory_search.knowledge_types IS NULL OR m.knowledge_type = ANY (memory_search.knowledge_types))
              AND (memory_search.tags IS NULL OR m.tags && memory_search.tags)
              AND (memory_search.topics IS NULL OR m.topics && memory_search.topics)
              -- issue 11: versions (current; or valid at as_of; or every version written by as_of)
              AND (include_superseded OR as_of IS NOT NULL OR m.valid_to IS NULL)
              AND (as_of IS NULL OR include_superseded OR tstzrange(m.created_at, m.valid_to) @> as_of)
              AND (as_of IS NULL OR NOT include_superseded OR m.created_at <= as_of)
        )
        SELECT coalesce(array_agg(c.id ORDER BY q.i, c.rnk), '{}'), array_agg(c.rnk ORDER BY q.i, c.rnk),
               array_agg(1 - c.dist ORDER BY q.i, c.rnk)
        INTO d_id, d_rank, d_sim
        FROM unnest(query_embeddings) WITH ORDINALITY AS q(vec, i)
        CROSS JOIN LATERAL (
            SELECT x.id, x.dist, row_number() OVER (ORDER BY x.dist, x.id)::integer AS rnk
            FROM (
                (SELECT f.id, f.embedding <=> q.vec AS dist FROM f WHERE exact_dense
                 ORDER BY f.embedding <=> q.vec LIMIT candidates)
                UNION ALL
                (SELECT f.id, f.embedding <=> q.vec AS dist FROM f WHERE NOT exact_dense
                 ORDER BY f.embedding::halfvec(384) <=> q.vec::halfvec(384) LIMIT candidates)
            ) x
            WHERE 1 - x.dist >= dense_min_similarity
        ) c;
        PERFORM set_config('enable_sort', 'on', true);
    END IF;

    -- 2. Priority memories (principle, or importance >= 0.7; partial index memories_priority) passing the
    --    filters, and those near a query embedding, nearest first.
    IF priority_limit > 0 THEN
        SELECT coalesce(array_agg(m.id), '{}') INTO prio_all
        FROM memsql.memories m
        WHERE m.namespace = ns AND (m.knowledge_type = 'principle' OR m.importance >= 0.7)
          AND (memory_search.knowledge_types IS NULL OR m.knowledge_type = ANY (memory_search.knowledge_types))
          AND (memory_search.tags IS NULL OR m.tags && memory_search.tags)
          AND (memory_search.topics IS NULL OR m.topics && memory_search.topics)
          -- issue 11: versions (current; or valid at as_of; or every version written by as_of)
          AND (include_superseded OR as_of IS NOT NULL OR m.valid_to IS NULL)
          AND (as_of IS NULL OR include_superseded OR tstzrange(m.created_at, m.valid_to) @> as_of)
          AND (as_of IS NULL OR NOT include_superseded OR m.created_at <= as_of);
        IF cardinality(prio_all) > 0 AND nvar > 0 THEN
            SELECT coalesce(array_agg(y.id ORDER BY y.dist, y.id), '{}') INTO pd_id
            FROM (
                SELECT c.id, min(c.dist) AS dist
                FROM unnest(query_embeddings) AS q(vec)
                CROSS JOIN LATERAL (
                    SELECT m.id, m.embedding <=> q.vec AS dist
                    FROM memsql.memories m
                    WHERE m.namespace = ns
                      AND m.embedding IS NOT NULL
                      AND (m.knowledge_type = 'principle' OR m.importance >= 0.7)
                      AND (memory_search.knowledge_types IS NULL OR m.knowledge_type = ANY (memory_search.knowledge_types))
                      AND (memory_search.tags IS NULL OR m.tags && memory_search.tags)
                      AND (memory_search.topics IS NULL OR m.topics && memory_search.topics)
                      -- issue 11: versions (current; or valid at as_of; or every version written by as_of)
                      AND (include_superseded OR as_of IS NOT NULL OR m.valid_to IS NULL)
                      AND (as_of IS NULL OR include_superseded OR tstzrange(m.created_at, m.valid_to) @> as_of)
                      AND (as_of IS NULL OR NOT include_superseded OR m.created_at <= as_of)
                    ORDER BY m.embedding <=> q.vec
                    LIMIT priority_limit
                ) c
                WHERE 1 - c.dist >= greatest(priority_min_similarity, dense_min_similarity)
                GROUP BY c.id
                ORDER BY min(c.dist), c.id
                LIMIT priority_limit
            ) y;
        END IF;
    END IF;

    -- 3. Lexical arm. BM25 = sum over query lexemes of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl)),
    --    idf = ln(1 + (N - df + 0.5) / (df + 0.5)), from the namespace's exact statistics. One index range of
    --    memsql.postings per lexeme gives every matching memory with its BM25, once: the top `candidates`, the BM25
    --    of the dense candidates and priority memories and the priority memories' exact ranks all read that result.
    IF lexical_weight > 0 AND cardinality(qlex) > 0 THEN   -- an arm with weight 0 is not run
        SELECT s.doc_count::float8, s.total_len::float8 / s.doc_count INTO n_docs, avgdl
        FROM memsql.namespace_stats s WHERE s.namespace = ns AND s.doc_count > 0;
        IF FOUND THEN
            SELECT coalesce(array_agg(t.lexeme ORDER BY t.lexeme), '{}'),
                   array_agg(ln(1 + (n_docs - t.df + 0.5) / (t.df + 0.5)) * (bm25_k1 + 1) ORDER BY t.lexeme),
                   array_agg(t.df ORDER BY t.lexeme)
            INTO lx, lw, ldf
            FROM memsql.term_stats t
            WHERE t.namespace = ns AND t.lexeme = ANY (qlex) AND t.df > 0;
            kd0 := bm25_k1 * (1 - bm25_b);
            kd1 := bm25_k1 * bm25_b / greatest(avgdl, 1e-9);
        END IF;
    END IF;
    --    Past twice posting_budget postings (the query lexemes' summed document frequencies) the arm runs in two
    --    passes (issue 9): first over the rarest lexemes whose postings fit the budget, keeping the best
    --    4 x candidates memories; then over every lexeme, reading only the postings of those memories and of the
    --    dense and priority candidates (index probes of the same key). Their BM25 is exact; a memory ranked low on the
    --    rare lexemes, or matching only the commonest ones, is not scored. Otherwise one pass over every posting
    --    (exact ranking): below twice the budget the second statement and its probes cost what they save (measured).
    run_x := lx; run_w := lw; run_top := candidates;
    IF cardinality(lx) > 1 AND posting_budget > 0
       AND (SELECT sum(f) FROM unnest(ldf) AS f) > 2 * posting_budget::bigint THEN
        SELECT array_agg(x.lexeme ORDER BY x.lexeme), array_agg(x.w ORDER BY x.lexeme) INTO run_x, run_w
        FROM (SELECT u.lexeme, u.w, sum(u.df) OVER (ORDER BY u.df, u.lexeme) AS cum,
                     row_number() OVER (ORDER BY u.df, u.lexeme) AS rn
              FROM unnest(lx, lw, ldf) AS u(lexeme, w, df)) x
        WHERE x.cum <= posting_budget OR x.rn = 1;   -- the rarest lexeme always
        run_top := 4 * candidates;
    END IF;
    <<lexical>>
    LOOP
        EXIT lexical WHEN cardinality(lx) = 0;
        WITH hits AS MATERIALIZED (
            SELECT a.id, a.bm25
            FROM (SELECT p.memory_id AS id, sum(u.w * p.tf / (p.tf + kd0 + kd1 * p.doc_len)) AS bm25
                  FROM unnest(run_x, run_w) AS u(lexeme, w)
                  CROSS JOIN LATERAL (SELECT p.memory_id, p.tf, p.doc_len FROM memsql.postings p
                                      WHERE p.namespace = ns AND p.lexeme = u.lexeme AND rescore IS NULL
                                      UNION ALL   -- second pass: the postings of the memories to score only
                                      SELECT p.memory_id, p.tf, p.doc_len FROM memsql.postings p
                                      WHERE p.namespace = ns AND p.lexeme = u.lexeme AND p.memory_id = ANY (rescore)
                                      OFFSET 0) p   -- one index range per lexeme, never a join over the namespace
                  GROUP BY p.memory_id) a
            WHERE (NOT filtered   -- the filters, applied after aggregation (fewer rows than postings)
                   OR EXISTS (SELECT 1 FROM memsql.memories m
                              WHERE m.namespace = ns AND m.id = a.id
                                AND (memory_search.knowledge_types IS NULL OR m.knowledge_type = ANY (memory_search.knowledge_types))
                                AND (memory_search.tags IS NULL OR m.tags && memory_search.tags)
                                AND (memory_search.topics IS NULL OR m.topics && memory_search.topics)))
          -- issue 11: versions, the same predicate as the other arms, as one hashed set per call instead of a probe
          -- per hit: current only = not among the namespace's closed versions (few; partial index memories_closed);
          -- as_of = among the versions valid then (GiST memories_validity)
          AND (NOT vfilter
               OR CASE WHEN as_of IS NULL
                       THEN a.id NOT IN (SELECT m.id FROM memsql.memories m
                                         WHERE m.namespace = ns AND m.valid_to IS NOT NULL)
                       ELSE a.id IN (SELECT m.id FROM memsql.memories m
                                     WHERE m.namespace = ns
                                       AND (as_of IS NULL OR include_superseded OR tstzrange(m.created_at, m.valid_to) @> as_of)
                                       AND (as_of IS NULL OR NOT include_superseded OR m.created_at <= as_of))
                  END)
        ),
        top AS (
            SELECT h.id, h.bm25 FROM hits h ORDER BY h.bm25 DESC, h.id LIMIT run_top
        ),
        probed AS MATERIALIZED (   -- BM25 of the dense candidates and priority memories: read from hits
            SELECT h.id, h.bm25 FROM hits h
            WHERE run_top = candidates   -- the last pass only (a first pass's are not used)
              AND h.id IN (SELECT unnest(d_id || pd_id || prio_all))
        ),
        prio_lex AS (   -- priority memories matching lexically, best first, with their exact rank among all matches
            SELECT x.id, x.bm25,
                   (SELECT count(*) FROM hits h
                    WHERE h.bm25 > x.bm25 OR (h.bm25 = x.bm25 AND h.id < x.id))::integer + 1 AS rnk
            FROM (SELECT b.id, b.bm25 FROM probed b WHERE b.id = ANY (prio_all)
                  ORDER BY b.bm25 DESC, b.id LIMIT priority_limit) x
        )
        SELECT (SELECT coalesce(array_agg(t.id ORDER BY t.bm25 DESC, t.id), '{}') FROM top t),
               (SELECT array_agg(t.bm25 ORDER BY t.bm25 DESC, t.id) FROM top t),
               (SELECT coalesce(array_agg(pl.id ORDER BY pl.rnk), '{}') FROM prio_lex pl),
               (SELECT array_agg(pl.rnk ORDER BY pl.rnk) FROM prio_lex pl),
               (SELECT array_agg(pl.bm25 ORDER BY pl.rnk) FROM prio_lex pl),
               (SELECT coalesce(array_agg(b.id), '{}') FROM probed b),
               (SELECT array_agg(b.bm25) FROM probed b)
        INTO lex_id, lex_sc, pl_id, pl_full, pl_sc, w_id, w_sc;
        EXIT lexical WHEN run_top = candidates;
        rescore := lex_id || d_id || pd_id || pl_id;   -- first pass done: score these on every lexeme
        run_x := lx; run_w := lw; run_top := candidates;
    END LOOP;

    -- 4. The pool (every arm's candidates once), fusion and the memory axis over it (primary-key lookups), the top
    --    k, access statistics.
    IF memory_rerank THEN
        SELECT array_agg(t.name), array_agg(t.half_life_days) INTO kt_name, kt_hl FROM memsql.knowledge_types t;
    END IF;
    RETURN QUERY
    WITH
    prio AS (   -- priority memories ranked among themselves (dense rank dr, lexical rank lr)
        SELECT coalesce(d.id, l.id) AS id, d.dr, l.lfull, l.bm25,
               row_number() OVER (ORDER BY coalesce(1.0 / (rrf_k + d.dr), 0) + coalesce(1.0 / (rrf_k + l.lr), 0) DESC,
                                           coalesce(d.id, l.id))::integer AS prnk
        FROM unnest(pd_id) WITH ORDINALITY AS d(id, dr)
        FULL JOIN unnest(pl_id, pl_full, pl_sc) WITH ORDINALITY AS l(id, lfull, bm25, lr) ON l.id = d.id
    ),
    cand AS (   -- every candidate once, with its arm ranks, its RRF sum and its BM25
        SELECT a.id, min(a.rnk) FILTER (WHERE a.arm = 'd') AS drank,
               min(a.rnk) FILTER (WHERE a.arm = 'l') AS lrank, min(a.rnk) FILTER (WHERE a.arm = 'p') AS prank,
               sum(a.s) AS rrf, coalesce(max(a.bm25), 0) AS bm25, max(a.sim) AS sim
        FROM (
            SELECT u.id, 'd' AS arm, u.rnk, dense_weight / greatest(nvar, 1) / (rrf_k + u.rnk) AS s,
                   NULL::float8 AS bm25, u.sim
            FROM unnest(d_id, d_rank, d_sim) AS u(id, rnk, sim)
            UNION ALL
            SELECT u.id, 'l', u.rnk::integer, lexical_weight / (rrf_k + u.rnk), u.bm25, NULL
            FROM unnest(lex_id, lex_sc) WITH ORDINALITY AS u(id, bm25, rnk)
            UNION ALL   -- BM25 of the dense candidates: a score, no rank
            SELECT u.id, 'b', NULL, 0, u.bm25, NULL FROM unnest(w_id, w_sc) AS u(id, bm25)
            UNION ALL   -- a guaranteed candidate outside the dense top enters at a lower bound of its dense rank ...
            SELECT pr.id, 'x', NULL, dense_weight / (rrf_k + candidates + pr.dr), NULL, NULL
            FROM prio pr WHERE pr.dr IS NOT NULL AND NOT pr.id = ANY (d_id)
            UNION ALL   -- ... outside the lexical top at its exact BM25 rank ...
            SELECT pr.id, 'l', pr.lfull, lexical_weight / (rrf_k + pr.lfull), pr.bm25, NULL
            FROM prio pr WHERE pr.lfull > candidates
            UNION ALL   -- ... and in the priority arm at its rank among priority memories
            SELECT pr.id, 'p', pr.prnk, priority_weight / (rrf_k + pr.prnk), pr.bm25, NULL
            FROM prio pr WHERE priority_weight > 0
        ) a
        GROUP BY a.id
    ),
    pool AS MATERIALIZED (   -- the candidates' rows (primary-key lookups); each cosine computed once (with one
                             -- query embedding, the dense arm's)
        SELECT u.id, u.drank, u.lrank, u.prank, u.rrf, u.bm25, m.document_id, m.knowledge_type, m.importance,
               coalesce(m.source_date, m.created_at) AS age_from,
               CASE WHEN memory_rerank THEN (SELECT a.access_count FROM memsql.memory_access a
                                             WHERE a.namespace = ns AND a.memory_id = u.id) END AS access_count,
               CASE WHEN u.sim IS NOT NULL AND nvar = 1 THEN u.sim
                    WHEN nvar = 1 THEN 1 - (m.embedding <=> query_embeddings[1])
                    ELSE (SELECT max(1 - (m.embedding <=> q.vec)) FROM unnest(query_embeddings) AS q(vec)) END AS sim
        FROM cand u
        -- one primary-key lookup per candidate, whatever a plan made once per session estimates (a join could
        -- otherwise become a scan of the whole namespace): LIMIT keeps the subquery from being flattened
        CROSS JOIN LATERAL (SELECT m.* FROM memsql.memories m WHERE m.namespace = ns AND m.id = u.id LIMIT 1) m
        -- issue 11: versions, as in the arms (a version closed meanwhile does not slip through)
        WHERE (include_superseded OR as_of IS NOT NULL OR m.valid_to IS NULL)
          AND (as_of IS NULL OR include_superseded OR tstzrange(m.created_at, m.valid_to) @> as_of)
          AND (as_of IS NULL OR NOT include_superseded OR m.created_at <= as_of)
    ),
    -- convex fusion: weights times cosine and BM25 / max BM25 of the pool
    norm AS (
        SELECT p.*, max(p.bm25) OVER () AS bmax FROM pool p
    ),
    scored AS (
        SELECT p.id, p.drank, p.lrank, p.prank, p.sim, p.bm25, p.document_id,
               CASE WHEN fusion = 'rrf' THEN p.rrf
                    ELSE dense_weight * coalesce(p.sim, 0)      -- NULL: no embedding, or no query embedding
                       + lexical_weight * CASE WHEN p.bmax > 0 THEN p.bm25 / p.bmax ELSE 0 END
                       + coalesce(priority_weight / p.prank, 0)
               END AS fscore,
               CASE WHEN memory_rerank THEN
                   (1 - time_weight) + time_weight * memsql.decay(
                       extract(epoch FROM (now() - p.age_from)) / 86400.0,
                       kt_hl[array_position(kt_name, p.knowledge_type)])
               ELSE 1.0 END AS decay_f,
               CASE WHEN memory_rerank THEN least(freq_cap, 1 + freq_weight * ln(1 + coalesce(p.access_count, 0)))
               ELSE 1.0 END AS freq_f
        FROM norm p
        WHERE NOT memory_rerank OR p.importance IS NULL OR p.importance >= importance_threshold
    ),
    ranked AS MATERIALIZED (
        SELECT s.*, s.fscore * s.decay_f * s.freq_f AS final_score FROM scored s
    ),
    top AS MATERIALIZED (   -- pos: the row's place in the answer
        (SELECT r.*, row_number() OVER (ORDER BY r.final_score DESC, r.id)::integer AS pos
         FROM ranked r WHERE NOT enable_mmr
         ORDER BY r.final_score DESC, r.id
         LIMIT k)
        UNION ALL   -- MMR (issue 8): k picked greedily from every scored candidate, relevance = final score
        SELECT r.*, x.mmr_rank
        FROM memsql.mmr_select(
                 (SELECT array_agg(r.id ORDER BY r.final_score DESC, r.id) FROM ranked r WHERE enable_mmr),
                 (SELECT array_agg(r.final_score ORDER BY r.final_score DESC, r.id) FROM ranked r WHERE enable_mmr),
                 (SELECT array_agg((SELECT m.embedding FROM memsql.memories m WHERE m.namespace = ns AND m.id = r.id)
                                   ORDER BY r.final_score DESC, r.id)
                  FROM ranked r WHERE enable_mmr),
                 k, mmr_lambda) x
        JOIN ranked r ON r.id = x.memory_id
        WHERE enable_mmr
    ),
    final AS (   -- the wide columns, for the k returned rows only (primary-key lookups, as above)
        SELECT t.*, m.chunk_index, m.content, m.knowledge_type, m.importance, m.source_date, m.created_at,
               m.metadata, m.valid_to, m.superseded_by, d.source_uri, d.title
        FROM top t
        CROSS JOIN LATERAL (SELECT m.* FROM memsql.memories m WHERE m.namespace = ns AND m.id = t.id LIMIT 1) m
        CROSS JOIN LATERAL (SELECT d.source_uri, d.title FROM memsql.documents d
                            WHERE d.namespace = ns AND d.id = t.document_id LIMIT 1) d
    ),
    -- [issue 7] touch only the memories that stay: one being deleted right now (memory_forget, delete_document,
    -- a re-ingest) holds a row lock and is skipped, instead of failing this search on the memory_access foreign
    -- key after the delete commits, or deadlocking with it; the locks are shared and taken in id order
    touchable AS (
        SELECT m.id FROM memsql.memories m
        WHERE touch AND m.namespace = ns AND m.id = ANY (ARRAY(SELECT t.id FROM top t))
        ORDER BY m.id
        FOR KEY SHARE SKIP LOCKED
    ),
    touched AS (
        INSERT INTO memsql.memory_access AS a (namespace, memory_id, access_count, last_accessed_at)
        SELECT ns, t.id, 1, now() FROM touchable t ORDER BY t.id
        ON CONFLICT (namespace, memory_id)
        DO UPDATE SET access_count = a.access_count + 1, last_accessed_at = excluded.last_accessed_at
        RETURNING a.memory_id
    )
    SELECT f.id, f.document_id, f.chunk_index, f.content, f.final_score, f.fscore, f.drank, f.lrank, f.prank,
           f.sim, f.bm25, f.decay_f, f.freq_f, f.source_uri, f.title, f.knowledge_type, f.importance,
           f.source_date, f.created_at, f.metadata, f.valid_to, f.superseded_by
    FROM final f
    ORDER BY f.pos;
END
$$;

COMMENT ON FUNCTION memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text, text[], integer, boolean, double precision, boolean, timestamptz, integer) IS
$c$Hybrid memory search in one call: dense arms (HNSW, cosine) + a BM25 lexical arm, fused, then the memory axis.
Args:
  query text: the question; its lexemes (memsql.query_lexemes, under every text search configuration present in the
    namespace: memories.ts_config) are OR-ed for the lexical arm ('' = no lexical arm).
  query_embeddings vector(384)[]: 0 to 3 unit vectors (query + enrichment variants), one dense arm each; NULL = the query's
    embedding from memsql.query_embedding (cached, else the memsql worker; lexical only with a NOTICE when no worker
    answers within memsql.query_embedding_timeout_ms, 1000); '{}' = lexical only (NOTICE).
  k int 1..1000 (10): rows returned.  namespace text ('default'): every arm is filtered to it.
  knowledge_types text[], tags text[] (NULL = all): filters applied identically to every arm (tags: any of).
  candidates int 1..1000 (NULL = greatest(50, k)): depth of each arm; hnsw.ef_search is raised to match inside the call.
  fusion ('convex'): 'convex' = dense_weight * cosine + lexical_weight * BM25 / max BM25 of the pool (each pooled
    memory scored on both arms: its true cosine and BM25; the cosine is not rescaled, the theoretical range is its
    normalisation); 'rrf' = sum over arms of weight / (rrf_k + rank), the dense weight shared equally among the
    query embeddings.
  dense_weight >= 0 (NULL = 2.75 under convex, 1.0 under rrf), lexical_weight >= 0 (1.0); rrf_k int >= 0 (60).
  bm25_k1 >= 0 (0.9), bm25_b in [0,1] (0.4): BM25 over exact per-namespace statistics and postings (memsql.postings).
  posting_budget int >= 0 (2000): a query whose lexemes have at most 2 x posting_budget postings (summed document
    frequencies in the namespace) is ranked exactly, every posting read. Past that the arm ranks on the rarest
    lexemes whose postings fit the budget (at least the rarest one), keeps the best 4 x candidates memories, and
    scores those, with the dense and priority candidates, on every lexeme by index probes: exact BM25 for every
    memory it returns, but a memory ranked low on the rare lexemes or matching only the commonest ones is not
    scored, and a priority memory's lexical rank is its rank among the scored ones. 0 = always exact (slower past
    ~10,000 memories). Measured: bench/results/speed.md, docs/search.md.
  dense_min_similarity (0.0): dense candidates with cosine similarity below it do not enter fusion.
  Guaranteed candidates: priority memories (knowledge_type principle, or importance >= 0.7) that match the query
    (lexically, or cosine >= priority_min_similarity 0.35), at most priority_limit (50), enter the pool even when
    hundreds of others outrank them. Under rrf they count at a lower bound of their rank in each arm (dense: candidates
    + rank among priority memories; lexical: their exact BM25 rank) plus a priority arm priority_weight / (rrf_k +
    priority_rank); under convex they are scored on both arms like any pooled memory plus priority_weight / priority_rank.
    priority_weight 1.0; 0 = no boost; priority_limit 0 = no guarantee.
  memory_rerank (true): importance cutoff (importance set and < importance_threshold 0.3 -> dropped), time decay
    factor (1 - time_weight) + time_weight * 0.5^(age_days / half_life_days) (time_weight 0.5, half-life from
    knowledge_types, age from source_date else created_at), frequency factor min(freq_cap 1.5, 1 + freq_weight 0.1 * ln(1 + access_count)).
  topics text[] (NULL = all): memories sharing at least one topic (memories.topics &&), applied identically to every arm
    like knowledge_types and tags (GIN index memories_topics_gin).
  ef_search int 1..1000 (NULL = greatest(candidates, 40)): hnsw.ef_search of the dense arms for this call.
  enable_mmr (false), mmr_lambda 0..1 (0.6): maximal marginal relevance over every scored candidate (memsql.mmr_select):
    the k rows are picked greedily by mmr_lambda * final score (min-max normalised) - (1 - mmr_lambda) * highest cosine
    to the rows already picked, and returned in pick order (not by score).
  include_superseded (false), as_of timestamptz (NULL) -- versions (memory_update, re-ingest): by default only current
    versions (valid_to NULL) are searched; as_of => t searches the versions valid at t (created_at <= t < valid_to:
    what was current then; GiST index memories_validity); include_superseded => true searches every version (with
    as_of: every version written by t). Applied identically in every arm. Superseded versions stay in the BM25
    statistics (memsql.term_stats, namespace_stats). A memory archived by forgetting is not searched.
  touch (true): access_count + 1 and last_accessed_at = now() in memsql.memory_access for the returned memories
    (a memory being deleted by a concurrent transaction at that moment is returned but not counted)
    (atomic under concurrency: INSERT ... ON CONFLICT DO UPDATE).
Returns one row per memory, best first (score DESC, memory_id; in MMR pick order with enable_mmr): score = fusion_score * decay_factor * frequency_factor;
  dense_rank (best over query embeddings), lexical_rank and priority_rank are arm ranks (1-based, NULL when absent);
  dense_similarity = best cosine over the query embeddings, lexical_score = BM25 (0 when no query term matched);
  valid_to and superseded_by mark a superseded version (both NULL for a current one; memory_history shows the chain).
Cost: per query embedding one HNSW walk over the half-precision index (V0009), or an exact scan when the namespace
  holds at most 1,000 memories (namespace_stats; as fast there, and exact); one index range of memsql.postings per
  query lexeme (BM25 of every matching memory, computed once), or past 2 x posting_budget postings the ranges of
  the rare lexemes plus index probes for at most 4 x candidates + the dense and priority candidates; primary-key
  lookups of the pooled memories. Ranks and
  similarities always come from the full-precision embeddings. Every statement uses a plan made once per session.
Errors: MS002 invalid argument (k, candidates, weights, bm25 parameters, posting_budget, fusion, ef_search, mmr_lambda,
  include_superseded NULL, as_of infinite), MS005 embedding not 384-d.
Source: sql/functions/20_search.sql.$c$;
