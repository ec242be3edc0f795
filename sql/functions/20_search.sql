-- memory_search: hybrid retrieval (HNSW dense arms + BM25 lexical arm) fused by weighted RRF,
-- then the memory axis (importance cutoff, time decay, access-frequency boost). One SQL call.

CREATE OR REPLACE FUNCTION memsql.memory_search(
    query                 text,
    query_embeddings      vector[]         DEFAULT NULL,
    k                     integer          DEFAULT 10,
    namespace             text             DEFAULT 'default',
    knowledge_types       text[]           DEFAULT NULL,
    tags                  text[]           DEFAULT NULL,
    candidates            integer          DEFAULT 100,
    rrf_k                 integer          DEFAULT 60,
    dense_weight          double precision DEFAULT 1.0,
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
    fusion                text             DEFAULT 'convex'
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
    metadata          jsonb
)
LANGUAGE plpgsql VOLATILE
SET search_path = memsql, public, pg_catalog
SET hnsw.ef_search = 100
SET hnsw.iterative_scan = 'relaxed_order'
AS $$
#variable_conflict use_column
DECLARE
    ns        text := memory_search.namespace;
    nvar      integer := coalesce(cardinality(query_embeddings), 0);
    qlex      text[];
    bad_dim   integer;
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
    IF candidates IS NULL OR candidates < 1 OR candidates > 1000 THEN
        PERFORM memsql.raise_invalid(format('memory_search: candidates must be between 1 and 1000, got %s', candidates),
                                     'candidates is the depth of each arm before fusion; 100 is the default.');
    END IF;
    IF rrf_k IS NULL OR rrf_k < 0 THEN
        PERFORM memsql.raise_invalid(format('memory_search: rrf_k must be >= 0, got %s', rrf_k), 'The usual value is 60.');
    END IF;
    IF dense_weight IS NULL OR lexical_weight IS NULL OR dense_weight = 'NaN' OR lexical_weight = 'NaN'
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
    IF fusion IS NULL OR fusion NOT IN ('rrf', 'convex') THEN
        PERFORM memsql.raise_invalid(format('memory_search: fusion must be ''rrf'' or ''convex'', got %s', fusion),
                                     'rrf sums weight / (rrf_k + rank); convex sums weight * normalised score.');
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

    -- [issue 10: query embedding from the worker] NULL = ask memsql.query_embedding (cache, else the memsql worker;
    -- NULL at once without a worker, sql/functions/60_worker.sql); '{}' = lexical only on purpose
    IF query_embeddings IS NULL AND dense_weight > 0 THEN
        query_embeddings := array_remove(ARRAY[memsql.query_embedding(query)], NULL);
        nvar := cardinality(query_embeddings);
    END IF;
    -- [/issue 10]
    IF nvar = 0 THEN
        RAISE NOTICE 'memory_search: no query embeddings given, lexical arm only';
    END IF;
    PERFORM set_config('hnsw.ef_search', greatest(candidates, 40)::text, true);

    qlex := memsql.query_lexemes(query);

    RETURN QUERY
    WITH
    dense AS (
        SELECT c.id, q.i,
               row_number() OVER (PARTITION BY q.i ORDER BY c.dist, c.id)::integer AS rnk
        FROM unnest(query_embeddings) WITH ORDINALITY AS q(vec, i)
        CROSS JOIN LATERAL (
            SELECT m.id, m.embedding <=> q.vec AS dist
            FROM memsql.memories m
            WHERE dense_weight > 0    -- an arm with weight 0 is not run
              AND m.namespace = ns
              AND m.embedding IS NOT NULL
              AND (memory_search.knowledge_types IS NULL OR m.knowledge_type = ANY (memory_search.knowledge_types))
              AND (memory_search.tags IS NULL OR m.tags && memory_search.tags)
            ORDER BY m.embedding <=> q.vec
            LIMIT candidates
        ) c
        WHERE 1 - c.dist >= dense_min_similarity
    ),
    st AS (
        SELECT s.doc_count::float8 AS n,
               s.total_len::float8 / greatest(s.doc_count, 1) AS avgdl
        FROM memsql.namespace_stats s
        WHERE s.namespace = ns AND s.doc_count > 0
    ),
    idf AS (
        SELECT t.lexeme, ln(1 + (st.n - t.df + 0.5) / (t.df + 0.5)) AS w
        FROM memsql.term_stats t, st
        WHERE t.namespace = ns AND t.lexeme = ANY (qlex) AND t.df > 0
    ),
    lex_all AS (   -- BM25 of every memory holding a query lexeme, from the postings; its rank is exact
        SELECT b.id, b.bm25, row_number() OVER (ORDER BY b.bm25 DESC, b.id)::integer AS rnk
        FROM (
            SELECT p.memory_id AS id,
                   sum(idf.w * (p.tf * (bm25_k1 + 1))
                       / (p.tf + bm25_k1 * (1 - bm25_b + bm25_b * p.doc_len / greatest(st.avgdl, 1e-9)))) AS bm25
            FROM memsql.postings p
            JOIN idf ON idf.lexeme = p.lexeme
            CROSS JOIN st
            WHERE lexical_weight > 0  -- an arm with weight 0 is not run
              AND p.namespace = ns
              AND p.lexeme = ANY (qlex)
              AND ((memory_search.knowledge_types IS NULL AND memory_search.tags IS NULL)
                   OR EXISTS (SELECT 1 FROM memsql.memories m
                              WHERE m.namespace = ns AND m.id = p.memory_id
                                AND (memory_search.knowledge_types IS NULL
                                     OR m.knowledge_type = ANY (memory_search.knowledge_types))
                                AND (memory_search.tags IS NULL OR m.tags && memory_search.tags)))
            GROUP BY p.memory_id
        ) b
    ),
    lex AS (
        SELECT l.id, l.rnk FROM lex_all l WHERE l.rnk <= candidates
    ),
    -- Guaranteed candidates: priority memories (principle, or importance >= 0.7) that match the
    -- query -- lexically, or with cosine >= priority_min_similarity -- even when hundreds of others outrank them.
    prio_dense AS (   -- dr: rank among priority memories by distance
        SELECT c.id, row_number() OVER (ORDER BY min(c.dist), c.id)::integer AS dr
        FROM unnest(query_embeddings) AS q(vec)
        CROSS JOIN LATERAL (
            SELECT m.id, m.embedding <=> q.vec AS dist
            FROM memsql.memories m
            WHERE priority_limit > 0
              AND m.namespace = ns
              AND m.embedding IS NOT NULL
              AND (m.knowledge_type = 'principle' OR m.importance >= 0.7)   -- partial index memories_priority
              AND (memory_search.knowledge_types IS NULL OR m.knowledge_type = ANY (memory_search.knowledge_types))
              AND (memory_search.tags IS NULL OR m.tags && memory_search.tags)
            ORDER BY m.embedding <=> q.vec
            LIMIT priority_limit
        ) c
        WHERE 1 - c.dist >= greatest(priority_min_similarity, dense_min_similarity)
        GROUP BY c.id
    ),
    prio_lex AS (     -- lr: rank among priority memories by BM25; lrank_full: exact rank among all matches
        SELECT x.id, x.rnk AS lrank_full, row_number() OVER (ORDER BY x.rnk)::integer AS lr
        FROM lex_all x
        WHERE x.id IN (SELECT m.id FROM memsql.memories m      -- partial index memories_priority
                       WHERE m.namespace = ns AND (m.knowledge_type = 'principle' OR m.importance >= 0.7))
        ORDER BY x.rnk
        LIMIT priority_limit
    ),
    prio AS (
        SELECT coalesce(d.id, l.id) AS id, d.dr, l.lr, l.lrank_full,
               row_number() OVER (
                   ORDER BY coalesce(1.0 / (rrf_k + d.dr), 0) + coalesce(1.0 / (rrf_k + l.lr), 0) DESC,
                            coalesce(d.id, l.id))::integer AS prnk
        FROM prio_dense d
        FULL JOIN prio_lex l ON l.id = d.id
    ),
    arms AS (
        SELECT d.id, dense_weight / greatest(nvar, 1) / (rrf_k + d.rnk) AS s, d.rnk AS drank,
               NULL::integer AS lrank, NULL::integer AS prank
        FROM dense d
        UNION ALL
        SELECT l.id, lexical_weight / (rrf_k + l.rnk), NULL::integer, l.rnk, NULL::integer FROM lex l
        UNION ALL   -- a guaranteed candidate outside the dense top enters at a lower bound of its rank
        SELECT p.id, dense_weight / (rrf_k + candidates + p.dr), NULL::integer, NULL::integer, NULL::integer
        FROM prio p WHERE p.dr IS NOT NULL AND NOT EXISTS (SELECT 1 FROM dense d WHERE d.id = p.id)
        UNION ALL   -- ... and outside the lexical top at its exact BM25 rank
        SELECT p.id, lexical_weight / (rrf_k + p.lrank_full), NULL::integer, p.lrank_full, NULL::integer
        FROM prio p WHERE p.lr IS NOT NULL AND p.lrank_full > candidates
        UNION ALL   -- the priority arm: guaranteed candidates ranked among themselves
        SELECT p.id, priority_weight / (rrf_k + p.prnk), NULL::integer, NULL::integer, p.prnk
        FROM prio p WHERE priority_weight > 0
    ),
    fused AS (
        SELECT a.id, sum(a.s) AS rrf, min(a.drank) AS drank, min(a.lrank) AS lrank, min(a.prank) AS prank
        FROM arms a GROUP BY a.id
    ),
    lex_map AS (   -- memory id -> BM25 of every match, for constant-time lookups below
        SELECT coalesce(jsonb_object_agg(la.id::text, la.bm25), '{}'::jsonb) AS j FROM lex_all la
    ),
    -- true arm scores of every pooled memory: best cosine over the query embeddings, BM25 (0 = no term matched)
    pool AS (
        SELECT f.id, f.rrf, f.drank, f.lrank, f.prank,
               (SELECT max(1 - (m.embedding <=> q.vec)) FROM unnest(query_embeddings) AS q(vec)) AS sim,
               coalesce((lm.j ->> f.id::text)::float8, 0) AS bm25
        FROM fused f
        CROSS JOIN lex_map lm
        JOIN memsql.memories m ON m.namespace = ns AND m.id = f.id
    ),
    -- convex fusion: weights times min-max normalised cosine (over the pool) and BM25 / max BM25
    fused2 AS (
        SELECT p.id, p.drank, p.lrank, p.prank, p.sim, p.bm25,
               CASE WHEN fusion = 'rrf' THEN p.rrf
                    ELSE dense_weight * CASE WHEN p.sim IS NULL THEN 0      -- no embedding, or no query embedding
                                             WHEN mx.smax > mx.smin THEN (p.sim - mx.smin) / (mx.smax - mx.smin)
                                             ELSE 1 END
                       + lexical_weight * CASE WHEN mx.bmax > 0 THEN p.bm25 / mx.bmax ELSE 0 END
                       + coalesce(priority_weight / p.prank, 0)
               END AS rrf
        FROM pool p,
             (SELECT max(x.sim) AS smax, min(x.sim) AS smin, max(x.bm25) AS bmax FROM pool x) mx
    ),
    scored AS (
        SELECT f.id, f.rrf, f.drank, f.lrank, f.prank, f.sim, f.bm25, m.document_id, m.chunk_index, m.content,
               m.knowledge_type, m.importance, m.source_date, m.created_at, m.metadata,
               d.source_uri, d.title,
               CASE WHEN memory_rerank THEN
                   (1 - time_weight) + time_weight * memsql.decay(
                       extract(epoch FROM (now() - coalesce(m.source_date, m.created_at))) / 86400.0,
                       kt.half_life_days)
               ELSE 1.0 END AS decay_f,
               CASE WHEN memory_rerank THEN least(freq_cap, 1 + freq_weight * ln(1 + coalesce(a.access_count, 0)))
               ELSE 1.0 END AS freq_f
        FROM fused2 f
        JOIN memsql.memories m ON m.namespace = ns AND m.id = f.id
        JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id
        JOIN memsql.knowledge_types kt ON kt.name = m.knowledge_type
        LEFT JOIN memsql.memory_access a ON a.namespace = ns AND a.memory_id = f.id
        WHERE NOT memory_rerank OR m.importance IS NULL OR m.importance >= importance_threshold
    ),
    final AS (
        SELECT s.*, s.rrf * s.decay_f * s.freq_f AS final_score
        FROM scored s
        ORDER BY final_score DESC, s.id
        LIMIT k
    ),
    touched AS (
        INSERT INTO memsql.memory_access AS a (namespace, memory_id, access_count, last_accessed_at)
        SELECT ns, f.id, 1, now() FROM final f WHERE touch ORDER BY f.id
        ON CONFLICT (namespace, memory_id)
        DO UPDATE SET access_count = a.access_count + 1, last_accessed_at = excluded.last_accessed_at
        RETURNING a.memory_id
    )
    SELECT f.id, f.document_id, f.chunk_index, f.content, f.final_score, f.rrf, f.drank, f.lrank, f.prank,
           f.sim, f.bm25, f.decay_f, f.freq_f, f.source_uri, f.title, f.knowledge_type, f.importance,
           f.source_date, f.created_at, f.metadata
    FROM final f
    ORDER BY f.final_score DESC, f.id;
END
$$;

COMMENT ON FUNCTION memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text) IS
$c$Hybrid memory search in one call: dense arms (HNSW, cosine) + a BM25 lexical arm, fused, then the memory axis.
Args:
  query text: the question; its lexemes (memsql.query_lexemes) are OR-ed for the lexical arm ('' = no lexical arm).
  query_embeddings vector(384)[]: 0 to 3 unit vectors (query + enrichment variants), one dense arm each; NULL = the query's
    embedding from memsql.query_embedding (cached, else the memsql worker; lexical only with a NOTICE when no worker
    answers within memsql.query_embedding_timeout_ms, 1000); '{}' = lexical only (NOTICE).
  k int 1..1000 (10): rows returned.  namespace text ('default'): every arm is filtered to it.
  knowledge_types text[], tags text[] (NULL = all): filters applied identically to every arm (tags: any of).
  candidates int 1..1000 (100): depth of each arm; hnsw.ef_search is raised to match inside the call.
  fusion ('convex'): 'convex' = dense_weight * cosine min-max normalised over the pooled candidates
    + lexical_weight * BM25 / max BM25 (each pooled memory scored on both arms: its true cosine and BM25);
    'rrf' = sum over arms of weight / (rrf_k + rank), the dense weight shared equally among the query embeddings.
  dense_weight, lexical_weight >= 0 (1.0); rrf_k int >= 0 (60).
  bm25_k1 >= 0 (0.9), bm25_b in [0,1] (0.4): BM25 over exact per-namespace statistics and postings (memsql.postings).
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
  touch (true): access_count + 1 and last_accessed_at = now() in memsql.memory_access for the returned memories
    (atomic under concurrency: INSERT ... ON CONFLICT DO UPDATE).
Returns one row per memory, best first (score DESC, memory_id): score = fusion_score * decay_factor * frequency_factor;
  dense_rank (best over query embeddings), lexical_rank and priority_rank are arm ranks (1-based, NULL when absent);
  dense_similarity = best cosine over the query embeddings, lexical_score = BM25 (0 when no query term matched).
Errors: MS002 invalid argument (k, candidates, weights, bm25 parameters, fusion), MS005 embedding not 384-d.
Source: sql/functions/20_search.sql.$c$;
