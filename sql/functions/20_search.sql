-- memory_search: hybrid retrieval fused by score (convex, default) or weighted RRF, then the memory axis. One SQL call.
--
-- How it is built: memsql.search_visible (10_util.sql) is the one predicate of what a call may return (namespace,
-- knowledge types, tags, topics, importance cutoff, versions); every arm applies it inside its scan, before its LIMIT.
-- Each arm is a helper returning memsql.search_hit rows (memory, rank, score):
--   search_dense     the nearest memories per query embedding (HNSW walk, or an exact scan of what the filters keep)
--   search_priority  the priority memories (memsql.is_priority) and those near the query
--   search_lexical   BM25 over the postings (search_bm25, ranked by search_lexical_pass)
-- memory_search itself validates its arguments, runs the arms, fuses them, applies the memory axis and returns rows.

-- The query's lexemes under every text search configuration present in the namespace (a loose index scan of
-- memories_ts_config: one probe per configuration).
CREATE OR REPLACE FUNCTION memsql.search_lexemes(query text, ns text) RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    cfgs regconfig[];
BEGIN
    WITH RECURSIVE c(cfg) AS (
        (SELECT m.ts_config FROM memsql.memories m WHERE m.namespace = ns ORDER BY m.ts_config LIMIT 1)
        UNION ALL
        SELECT (SELECT m.ts_config FROM memsql.memories m WHERE m.namespace = ns AND m.ts_config > c.cfg
                ORDER BY m.ts_config LIMIT 1)
        FROM c WHERE c.cfg IS NOT NULL
    )
    SELECT coalesce(pg_catalog.array_agg(c.cfg) FILTER (WHERE c.cfg IS NOT NULL), '{}') INTO cfgs FROM c;
    IF pg_catalog.cardinality(cfgs) <= 1 THEN
        RETURN memsql.query_lexemes(query, coalesce(cfgs[1], 'memsql.english'::regconfig));
    END IF;
    RETURN (SELECT coalesce(pg_catalog.array_agg(DISTINCT l.l ORDER BY l.l), '{}')
            FROM pg_catalog.unnest(cfgs) AS c(cfg), pg_catalog.unnest(memsql.query_lexemes(query, c.cfg)) AS l(l));
END $$;
COMMENT ON FUNCTION memsql.search_lexemes(text, text) IS
    'The lexemes memory_search''s lexical arm looks up: memsql.query_lexemes of the query under every text search '
    'configuration present in the namespace (memories.ts_config; memsql.english when it holds none). Args: query '
    'text, ns text. Returns text[] (distinct, sorted; empty for a query of stop words or blanks). '
    'Source: sql/functions/20_search.sql.';

-- Does the call's filter drop any memory of the namespace? Cheap probes only; false lets the lexical arm skip its
-- per-hit check (its postings know no filter).
CREATE OR REPLACE FUNCTION memsql.search_filter_drops(f memsql.search_filter) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
RETURN f.knowledge_types IS NOT NULL OR f.tags IS NOT NULL OR f.topics IS NOT NULL OR f.as_of IS NOT NULL
    OR (NOT f.include_superseded          -- a closed version (partial index memories_closed)
        AND EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = f.namespace AND m.valid_to IS NOT NULL))
    OR (f.min_importance IS NOT NULL      -- a memory under the cutoff (partial index memories_importance)
        AND EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = f.namespace AND m.importance IS NOT NULL
                                                      AND m.importance < f.min_importance::real));
COMMENT ON FUNCTION memsql.search_filter_drops(memsql.search_filter) IS
    'Whether a memory_search filter can drop a memory of its namespace: a knowledge type, tag, topic or as_of filter, '
    'a closed version when only current ones are searched, or a memory under the importance cutoff (index probes). '
    'Args: f memsql.search_filter. Returns boolean. Source: sql/functions/20_search.sql.';

-- How many embedded memories a call's filters keep, by the planner's estimate (not a count: counting a filter that
-- keeps thousands reads their index and rows before the search starts). NULL when the call has no knowledge type,
-- tag, topic or as_of filter: the importance cutoff and current versions keep most memories.
CREATE OR REPLACE FUNCTION memsql.search_filter_estimate(f memsql.search_filter) RETURNS double precision
LANGUAGE plpgsql VOLATILE   -- EXPLAIN is refused in a STABLE function
SET search_path FROM CURRENT
AS $$
DECLARE
    plan json;
BEGIN
    IF f.knowledge_types IS NULL AND f.tags IS NULL AND f.topics IS NULL AND f.as_of IS NULL THEN
        RETURN NULL;
    END IF;
    -- planned for the filter's values (NULL filters fold away; tags, topics, knowledge types use their statistics)
    EXECUTE 'EXPLAIN (FORMAT JSON) SELECT FROM memsql.memories m WHERE memsql.search_visible(m, $1) '
            'AND m.embedding IS NOT NULL' INTO plan USING f;
    RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
COMMENT ON FUNCTION memsql.search_filter_estimate(memsql.search_filter) IS
    'The planner''s estimate of how many embedded memories a memory_search filter keeps (EXPLAIN of the filtered '
    'scan, from the table''s statistics; nothing is counted). Args: f memsql.search_filter. Returns double precision '
    'rows, or NULL when f has no knowledge type, tag, topic or as_of filter. Source: sql/functions/20_search.sql.';

-- How the dense arm reads a namespace: exactly (every memory the filters keep, full precision) or by the HNSW walk.
-- Up to 5,000 kept memories the exact scan costs a few milliseconds and is exact (bench/filtered.py at 30k and
-- 100k). Past that, under a filter the walk visits about n / share memories (share = kept / namespace) and the
-- exact scan reads the kept ones: their costs meet near kept = sqrt(4.4 * n * namespace), which passes 5,000 in
-- namespaces of about 115,000 and more for n = 50 (bench/speed.py at 1M: 10,000 kept, exact 20.7 ms against a
-- 43.9 ms walk; 100,000 kept, walk 5.2 ms against 207 ms). A wrong estimate costs time, never rows: a walk that
-- stops short is followed by the exact scan.
CREATE OR REPLACE FUNCTION memsql.search_exact_scan(f memsql.search_filter, kept double precision, n integer)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    namespace_max CONSTANT integer := 1000;   -- a namespace this small: the exact scan is as fast as the walk
    filtered_min  CONSTANT integer := 5000;   -- filters keeping at most this many: the exact scan, at any size
    size bigint;
BEGIN
    SELECT s.doc_count INTO size FROM memsql.namespace_stats s WHERE s.namespace = f.namespace;
    RETURN coalesce(size, 0) <= namespace_max
        OR coalesce(kept <= greatest(filtered_min, sqrt(4.4 * greatest(n, 1) * size)), false);
END $$;
COMMENT ON FUNCTION memsql.search_exact_scan(memsql.search_filter, double precision, integer) IS
    'Whether memory_search''s dense arm scans exactly instead of walking the HNSW index for n rows per query '
    'embedding: the namespace holds at most 1,000 memories (namespace_stats), or the filter keeps at most '
    'greatest(5,000, sqrt(4.4 * n * namespace size)) embedded memories by the estimate kept (memsql.search_filter_estimate; NULL = no '
    'such filter), where the exact scan costs less than the walk. Args: f memsql.search_filter, kept double '
    'precision, n integer. Returns boolean. Source: sql/functions/20_search.sql.';

CREATE OR REPLACE FUNCTION memsql.search_exact_scan(f memsql.search_filter, n integer DEFAULT 50) RETURNS boolean
LANGUAGE sql VOLATILE
RETURN memsql.search_exact_scan(f, memsql.search_filter_estimate(f), n);
COMMENT ON FUNCTION memsql.search_exact_scan(memsql.search_filter, integer) IS
    'memsql.search_exact_scan(f, memsql.search_filter_estimate(f), n): the dense arm''s choice for filter f and n rows '
    'per query embedding (default 50, memory_search''s arm depth), estimated here. Args: f memsql.search_filter, n. '
    'Returns boolean. Source: sql/functions/20_search.sql.';

-- What an importance cutoff hides: the current memories whose importance is set and below it (the complement of
-- memsql.search_visible's cutoff among the current versions).
CREATE OR REPLACE FUNCTION memsql.memories_below_cutoff(ns text, importance_threshold double precision,
                                                        knowledge_types text[] DEFAULT NULL, tags text[] DEFAULT NULL,
                                                        topics text[] DEFAULT NULL)
RETURNS bigint
LANGUAGE sql STABLE
RETURN (SELECT count(*) FROM memsql.memories m
        WHERE m.namespace = ns AND m.valid_to IS NULL AND m.importance < importance_threshold::real
          AND (memories_below_cutoff.knowledge_types IS NULL
               OR m.knowledge_type = ANY (memories_below_cutoff.knowledge_types))
          AND (memories_below_cutoff.tags IS NULL OR m.tags && memories_below_cutoff.tags)
          AND (memories_below_cutoff.topics IS NULL OR m.topics && memories_below_cutoff.topics));
COMMENT ON FUNCTION memsql.memories_below_cutoff(text, double precision, text[], text[], text[]) IS
    'How many current memories of namespace ns an importance cutoff leaves out of memory_search (importance set and '
    'below importance_threshold) among those its other filters keep: what memory_search''s NOTICE for an empty '
    'result and the clients'' note say. Args: ns text, importance_threshold double precision, knowledge_types, tags, '
    'topics text[] (NULL = no filter; tags and topics: any of). Returns bigint. Source: sql/functions/20_search.sql.';

-- The exact dense arm: every memory the filters keep, by full-precision cosine distance, ties by id.
CREATE OR REPLACE FUNCTION memsql.search_dense_exact(f memsql.search_filter, queries vector[], n integer)
RETURNS SETOF memsql.search_hit
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT c.id, c.rnk, 1 - c.dist
    FROM pg_catalog.unnest(queries) WITH ORDINALITY AS q(vec, i)
    CROSS JOIN LATERAL (
        SELECT x.id, x.dist, row_number() OVER (ORDER BY x.dist, x.id)::integer AS rnk
        FROM (SELECT m.id, m.embedding <=> q.vec AS dist FROM memsql.memories m
              WHERE memsql.search_visible(m, f) AND m.embedding IS NOT NULL
              ORDER BY m.embedding <=> q.vec, m.id LIMIT n) x
    ) c
    ORDER BY q.i, c.rnk;
END;
COMMENT ON FUNCTION memsql.search_dense_exact(memsql.search_filter, vector[], integer) IS
    'Exact dense arm of memory_search: per query embedding, the n memories memsql.search_visible keeps nearest by '
    'full-precision cosine distance (ties by memory id). Args: f memsql.search_filter, queries vector(384)[], n. '
    'Returns memsql.search_hit (memory_id, rank per query embedding, score = cosine similarity). '
    'Source: sql/functions/20_search.sql.';

-- The memories the filters keep, read once for both arms when they are few (memsql.search_exact_scan): their ids
-- (the lexical arm ranks their postings alone) and the exact dense arm's rows; up to 3 query embeddings.
CREATE OR REPLACE FUNCTION memsql.search_kept(f memsql.search_filter, queries vector[], n integer)
RETURNS TABLE (kept bigint[], hits memsql.search_hit[])
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    WITH k AS MATERIALIZED (
        SELECT m.id, m.embedding <=> queries[1] AS d1, m.embedding <=> queries[2] AS d2,
               m.embedding <=> queries[3] AS d3
        FROM memsql.memories m WHERE memsql.search_visible(m, f)
    )
    SELECT ARRAY(SELECT k.id FROM k),
           ARRAY(SELECT ROW(c.id, c.rnk, 1 - c.dist)::memsql.search_hit
                 FROM generate_series(1, least(pg_catalog.cardinality(queries), 3)) AS q(i)
                 CROSS JOIN LATERAL (
                     SELECT x.id, x.dist, row_number() OVER (ORDER BY x.dist, x.id)::integer AS rnk
                     FROM (SELECT k.id, CASE q.i WHEN 1 THEN k.d1 WHEN 2 THEN k.d2 ELSE k.d3 END AS dist FROM k) x
                     WHERE x.dist IS NOT NULL
                     ORDER BY x.dist, x.id LIMIT n) c
                 ORDER BY q.i, c.rnk);
END;
COMMENT ON FUNCTION memsql.search_kept(memsql.search_filter, vector[], integer) IS
$c$The memories a memory_search filter keeps, read once (memory_search does so when memsql.search_exact_scan says
they are few): their ids for the lexical arm, and the exact dense arm's rows.
Args: f memsql.search_filter; queries vector(384)[] (the first 3 are ranked; '{}' = the ids only); n (rows per query
  embedding).
Returns one row: kept bigint[] (every memory memsql.search_visible keeps, with or without an embedding), hits
  memsql.search_hit[] (per query embedding, the n kept memories nearest by full-precision cosine distance, ties by
  id: the rows of memsql.search_dense_exact). Source: sql/functions/20_search.sql.$c$;

-- The dense arm: one HNSW walk per query embedding under the filters, or the exact scan.
CREATE OR REPLACE FUNCTION memsql.search_dense(f memsql.search_filter, queries vector[], n integer,
                                               min_similarity double precision DEFAULT -1,
                                               exact boolean DEFAULT NULL)
RETURNS memsql.search_hit[]
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET enable_sort = off                       -- the walk is planned with sorts off (else the planner sorts a namespace)
SET hnsw.iterative_scan = 'relaxed_order'   -- under a filter the walk goes on until it has n rows ...
SET hnsw.max_scan_tuples = 50000            -- ... or has visited this many (then the exact scan below)
AS $$
DECLARE
    hits  memsql.search_hit[];
    walks integer := 0;   -- walks that found n rows
BEGIN
    IF coalesce(pg_catalog.cardinality(queries), 0) = 0 THEN
        RETURN '{}';
    END IF;
    IF NOT coalesce(exact, memsql.search_exact_scan(f, n)) THEN
        -- ranks and similarities from the full-precision embeddings of the rows the walk returns (relaxed order)
        SELECT coalesce(pg_catalog.array_agg(ROW(c.id, c.rnk, 1 - c.dist)::memsql.search_hit ORDER BY q.i, c.rnk)
                        FILTER (WHERE 1 - c.dist >= min_similarity), '{}'),
               count(DISTINCT q.i) FILTER (WHERE c.rnk = n)
        INTO hits, walks
        FROM pg_catalog.unnest(queries) WITH ORDINALITY AS q(vec, i)
        CROSS JOIN LATERAL (
            SELECT x.id, x.dist, row_number() OVER (ORDER BY x.dist, x.id)::integer AS rnk
            FROM (SELECT m.id, m.embedding <=> q.vec AS dist FROM memsql.memories m
                  WHERE memsql.search_visible(m, f) AND m.embedding IS NOT NULL
                  ORDER BY m.embedding::halfvec(384) <=> q.vec::halfvec(384) LIMIT n) x
        ) c;
        IF walks = pg_catalog.cardinality(queries) THEN
            RETURN hits;
        END IF;
        -- a walk stopped short: fewer memories pass the filters than n, or they are too sparse for the walk
    END IF;
    PERFORM set_config('enable_sort', 'on', true);
    IF f.knowledge_types IS NULL AND f.tags IS NULL AND f.topics IS NULL AND f.as_of IS NULL THEN
        RETURN ARRAY(SELECT h FROM memsql.search_dense_exact(f, queries, n) AS h WHERE h.score >= min_similarity);
    ELSE   -- planned for the filter's values, so that the indexes of tags, topics and knowledge types apply
        EXECUTE 'SELECT ARRAY(SELECT h FROM memsql.search_dense_exact($1, $2, $3) AS h WHERE h.score >= $4)'
            INTO hits USING f, queries, n, min_similarity;
        RETURN hits;
    END IF;
END $$;
COMMENT ON FUNCTION memsql.search_dense(memsql.search_filter, vector[], integer, double precision, boolean) IS
$c$Dense arm of memory_search: per query embedding, the n nearest memories memsql.search_visible keeps.
Args: f memsql.search_filter; queries vector(384)[]; n (rows per query embedding); min_similarity (-1): rows with a lower
  cosine similarity are dropped after the ranking; exact (NULL = ask memsql.search_exact_scan): true = scan exactly.
Returns memsql.search_hit[] (memory_id, rank per query embedding 1..n, score = cosine similarity from the
  full-precision embeddings; ties by memory id).
How: an exact scan when memsql.search_exact_scan says so (a small namespace, or filters keeping few memories);
  otherwise an HNSW walk over the half-precision index with the filters inside it (iterative scan, relaxed order,
  up to hnsw.max_scan_tuples 50,000 visited), and the exact scan when a walk returns fewer than n rows.
Source: sql/functions/20_search.sql.$c$;

-- The priority arm: guaranteed candidates (priority memories passing the filters; partial index memories_priority).
CREATE OR REPLACE FUNCTION memsql.search_priority(f memsql.search_filter, queries vector[], n integer,
                                                  min_similarity double precision)
RETURNS SETOF memsql.search_hit
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    WITH prio AS NOT MATERIALIZED (
        SELECT m.id, m.embedding FROM memsql.memories m
        WHERE memsql.is_priority(m.knowledge_type, m.importance) AND memsql.search_visible(m, f)
    ),
    near AS (   -- nearest first over the query embeddings, at most n
        SELECT c.id, min(c.dist) AS dist
        FROM pg_catalog.unnest(queries) AS q(vec)
        CROSS JOIN LATERAL (SELECT p.id, p.embedding <=> q.vec AS dist FROM prio p WHERE p.embedding IS NOT NULL
                            ORDER BY p.embedding <=> q.vec, p.id LIMIT n) c
        WHERE 1 - c.dist >= min_similarity
        GROUP BY c.id
        ORDER BY min(c.dist), c.id
        LIMIT n
    )
    SELECT p.id, r.rnk::integer, 1 - r.dist
    FROM prio p
    LEFT JOIN (SELECT near.id, near.dist, row_number() OVER (ORDER BY near.dist, near.id) AS rnk FROM near) r
        ON r.id = p.id
    ORDER BY r.rnk, p.id;
END;
COMMENT ON FUNCTION memsql.search_priority(memsql.search_filter, vector[], integer, double precision) IS
$c$Priority arm of memory_search: every priority memory (memsql.is_priority) that memsql.search_visible keeps.
Args: f memsql.search_filter; queries vector(384)[] (empty = none near); n (at most this many ranked);
  min_similarity: the cosine similarity a priority memory needs to count as near.
Returns memsql.search_hit rows, one per priority memory: rank = its place among those near a query embedding (nearest
  first, ties by id; NULL when not near), score = its best cosine similarity (NULL when not near).
Source: sql/functions/20_search.sql.$c$;

-- BM25 of every memory matching any of the lexemes: one index range of memsql.postings per lexeme (a lateral join,
-- never a join over the namespace), summed per memory once.
CREATE OR REPLACE FUNCTION memsql.search_bm25(ns text, lexemes text[], weights double precision[],
                                              kd0 double precision, kd1 double precision, only_ids bigint[])
RETURNS TABLE (memory_id bigint, bm25 double precision)
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    SELECT p.memory_id, sum(u.w * p.tf / (p.tf + kd0 + kd1 * p.doc_len))
    FROM unnest(lexemes, weights) AS u(lexeme, w)
    CROSS JOIN LATERAL (SELECT p.memory_id, p.tf, p.doc_len FROM memsql.postings p
                        WHERE p.namespace = ns AND p.lexeme = u.lexeme AND only_ids IS NULL
                        UNION ALL   -- the postings of the given memories only (index probes of the same key)
                        SELECT p.memory_id, p.tf, p.doc_len FROM memsql.postings p
                        WHERE p.namespace = ns AND p.lexeme = u.lexeme AND p.memory_id = ANY (only_ids)
                        OFFSET 0) p
    GROUP BY p.memory_id;
END;
COMMENT ON FUNCTION memsql.search_bm25(text, text[], double precision[], double precision, double precision, bigint[]) IS
$c$BM25 of the memories of a namespace matching any of the lexemes, from memsql.postings.
Args: ns text; lexemes text[] and weights (idf * (k1 + 1) of each); kd0 = k1 * (1 - b), kd1 = k1 * b / avgdl;
  only_ids bigint[] (NULL = every posting of the lexemes; else the postings of these memories only).
Returns (memory_id, bm25 = sum over lexemes of weight * tf / (tf + kd0 + kd1 * doc_len)), unordered. No filter but
  the namespace. Source: sql/functions/20_search.sql.$c$;

-- One ranking pass of the lexical arm: the best n memories the filters keep, and the BM25 of the other arms' memories.
CREATE OR REPLACE FUNCTION memsql.search_lexical_pass(f memsql.search_filter, check_hits boolean, lexemes text[],
                                                      weights double precision[], kd0 double precision,
                                                      kd1 double precision, only_ids bigint[], n integer,
                                                      scored bigint[], ranked bigint[], ranked_n integer)
RETURNS SETOF memsql.search_hit
LANGUAGE sql STABLE PARALLEL SAFE
BEGIN ATOMIC
    WITH hits AS MATERIALIZED (
        SELECT b.memory_id, b.bm25 FROM memsql.search_bm25(f.namespace, lexemes, weights, kd0, kd1, only_ids) b
    ),
    top AS MATERIALIZED (   -- best first: a bounded (top-n) sort when there is no filter to check; else the filters
                            -- checked lazily, hit by hit in order, until n pass
        (SELECT h.memory_id, h.bm25 FROM hits h WHERE NOT check_hits ORDER BY h.bm25 DESC, h.memory_id LIMIT n)
        UNION ALL
        (SELECT h.memory_id, h.bm25
         FROM (SELECT h.memory_id, h.bm25 FROM hits h WHERE check_hits ORDER BY h.bm25 DESC, h.memory_id OFFSET 0) h
         WHERE EXISTS (SELECT 1 FROM memsql.memories m
                       WHERE m.namespace = f.namespace AND m.id = h.memory_id AND memsql.search_visible(m, f))
         ORDER BY h.bm25 DESC, h.memory_id   -- the LIMIT's order: a semi join on the memories side must not lose it
         LIMIT n)
    ),
    top_ranked AS (
        SELECT t.memory_id, t.bm25, row_number() OVER (ORDER BY t.bm25 DESC, t.memory_id)::integer AS rnk FROM top t
    ),
    others AS (   -- the other arms' memories (they passed the filters there) matching outside the top: BM25 only ...
        SELECT h.memory_id, h.bm25 FROM hits h
        WHERE h.memory_id IN (SELECT pg_catalog.unnest(scored)) AND h.memory_id NOT IN (SELECT t.memory_id FROM top t)
    ),
    chosen AS (   -- ... but the best ranked_n of `ranked` among them get their exact rank among the visible hits
        SELECT o.memory_id, o.bm25 FROM others o WHERE o.memory_id = ANY (ranked)
        ORDER BY o.bm25 DESC, o.memory_id
        LIMIT greatest(ranked_n - (SELECT count(*) FROM top t WHERE t.memory_id = ANY (ranked)), 0)
    ),
    above AS MATERIALIZED (   -- the visible hits down to the lowest chosen one
        SELECT h.memory_id, h.bm25 FROM hits h
        WHERE h.bm25 >= (SELECT min(c.bm25) FROM chosen c)
          AND (NOT check_hits
               OR EXISTS (SELECT 1 FROM memsql.memories m
                          WHERE m.namespace = f.namespace AND m.id = h.memory_id AND memsql.search_visible(m, f)))
    )
    SELECT t.memory_id, t.rnk, t.bm25 FROM top_ranked t
    UNION ALL
    SELECT c.memory_id,
           (SELECT count(*) FROM above a
            WHERE a.bm25 > c.bm25 OR (a.bm25 = c.bm25 AND a.memory_id < c.memory_id))::integer + 1,
           c.bm25
    FROM chosen c
    UNION ALL
    SELECT o.memory_id, NULL, o.bm25 FROM others o WHERE o.memory_id NOT IN (SELECT c.memory_id FROM chosen c);
END;
COMMENT ON FUNCTION memsql.search_lexical_pass(memsql.search_filter, boolean, text[], double precision[],
    double precision, double precision, bigint[], integer, bigint[], bigint[], integer) IS
$c$One ranking pass of memory_search's lexical arm over memsql.search_bm25.
Args: f memsql.search_filter; check_hits (false: every hit passes the filters: they drop nothing here, see
  memsql.search_filter_drops, or only_ids holds only memories they keep); lexemes, weights, kd0, kd1, only_ids as
  memsql.search_bm25; n (rows ranked); scored bigint[] (memories whose BM25 is wanted: the other arms' candidates);
  ranked bigint[] (among them, those whose exact lexical rank is wanted: the priority memories), ranked_n (at most
  this many of them ranked, best BM25 first).
Returns memsql.search_hit rows: the top n hits memsql.search_visible keeps (rank 1..n, score = BM25, ties by id;
  with check_hits each hit is checked by a primary-key probe, best first, until n pass); the scored memories
  matching outside the top (rank NULL), the chosen ranked ones with their rank among the visible hits (> n).
Source: sql/functions/20_search.sql.$c$;

-- The lexical arm: BM25 = sum over query lexemes of idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avgdl)),
-- idf = ln(1 + (N - df + 0.5) / (df + 0.5)), from the namespace's exact statistics.
CREATE OR REPLACE FUNCTION memsql.search_lexical(f memsql.search_filter, lexemes text[], n integer,
                                                 bm25_k1 double precision, bm25_b double precision,
                                                 posting_budget integer, scored bigint[], ranked bigint[],
                                                 ranked_n integer, eligible bigint[], kept double precision)
RETURNS memsql.search_hit[]
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    n_docs   float8;
    avgdl    float8;
    kd0      float8;
    kd1      float8;
    lx       text[];     -- query lexemes present in the namespace,
    lw       float8[];   -- ... their idf * (k1 + 1),
    ldf      bigint[];   -- ... and document frequencies (postings)
    rare_x   text[];     -- the rarest lexemes whose postings fit the budget, and their weights
    rare_w   float8[];
    first    bigint[];   -- the memories the first pass keeps
    probe    bigint[];   -- ... and the other arms' memories: those the second pass scores
    check_hits boolean := memsql.search_filter_drops(f);
    budget   float8;     -- the first pass's postings: posting_budget, then over the share of the namespace kept
    share    float8;     -- the share of the namespace the filters keep (estimate; 1 without one)
    total    bigint;     -- the lexemes' postings
BEGIN
    SELECT s.doc_count::float8, s.total_len::float8 / s.doc_count INTO n_docs, avgdl
    FROM memsql.namespace_stats s WHERE s.namespace = f.namespace AND s.doc_count > 0;
    IF NOT FOUND THEN
        RETURN '{}';
    END IF;
    SELECT coalesce(pg_catalog.array_agg(t.lexeme ORDER BY t.lexeme), '{}'),
           pg_catalog.array_agg(ln(1 + (n_docs - t.df + 0.5) / (t.df + 0.5)) * (bm25_k1 + 1) ORDER BY t.lexeme),
           pg_catalog.array_agg(t.df ORDER BY t.lexeme)
    INTO lx, lw, ldf
    FROM memsql.term_stats t
    WHERE t.namespace = f.namespace AND t.lexeme = ANY (lexemes) AND t.df > 0;
    IF pg_catalog.cardinality(lx) = 0 THEN
        RETURN '{}';
    END IF;
    kd0 := bm25_k1 * (1 - bm25_b);
    kd1 := bm25_k1 * bm25_b / greatest(avgdl, 1e-9);
    -- Few memories pass the filters (the dense arm scanned them exactly, memsql.search_kept): rank the postings of
    -- those alone. Exact whatever posting_budget; cheaper than checking hits most of which the filters drop.
    IF check_hits AND eligible IS NOT NULL THEN
        RETURN ARRAY(SELECT h FROM memsql.search_lexical_pass(f, false, lx, lw, kd0, kd1, eligible, n,
                                                              scored, ranked, ranked_n) AS h);
    END IF;
    -- Past twice the budget (the lexemes' summed document frequencies), two passes: the first over the rarest
    -- lexemes whose postings fit the budget keeps the best 4 x n memories; the second scores those, and the other
    -- arms' memories, on every lexeme by index probes. Their BM25 is exact; a memory ranked low on the rare lexemes,
    -- or matching only the commonest ones, is not scored. Below that, one pass over every posting (exact ranking):
    -- there the second statement and its probes cost what they save (measured). Under a filter the first pass
    -- checks its hits best first until 4 x n pass; when fewer than n do, it runs again over the postings of about
    -- as many kept memories (posting_budget over the estimated share kept), and when still fewer than n pass, the
    -- one exact pass runs: a filter never costs rows. (Widening at once costs ~1.6 x the time of a 10% tag for an
    -- exact top 10 where this one shares 0.73-0.87 of it, unfiltered 0.43-0.84: bench/results/speed.md.)
    share := CASE WHEN check_hits THEN least(greatest(coalesce(kept, n_docs) / n_docs, 1e-6), 1) ELSE 1 END;
    budget := posting_budget;
    total := (SELECT sum(d) FROM pg_catalog.unnest(ldf) AS d);
    WHILE pg_catalog.cardinality(lx) > 1 AND posting_budget > 0 AND total > 2 * budget LOOP
        SELECT pg_catalog.array_agg(x.lexeme ORDER BY x.lexeme), pg_catalog.array_agg(x.w ORDER BY x.lexeme) INTO rare_x, rare_w
        FROM (SELECT u.lexeme, u.w, sum(u.df) OVER (ORDER BY u.df, u.lexeme) AS cum,
                     row_number() OVER (ORDER BY u.df, u.lexeme) AS rn
              FROM unnest(lx, lw, ldf) AS u(lexeme, w, df)) x
        WHERE x.cum <= budget OR x.rn = 1;   -- the rarest lexeme always
        -- When the filters drop nothing here and no priority memory wants its exact rank, each pass is one
        -- statement over memsql.search_bm25: the general pass's CTEs cost about 0.2 ms a search at 100k
        -- (bench/results/search_ab_speed100k.md).
        IF check_hits THEN
            first := ARRAY(SELECT h.memory_id
                           FROM memsql.search_lexical_pass(f, true, rare_x, rare_w, kd0, kd1, NULL, 4 * n,
                                                           '{}', '{}', 0) AS h);
        ELSE
            first := ARRAY(SELECT b.memory_id FROM memsql.search_bm25(f.namespace, rare_x, rare_w, kd0, kd1, NULL) b
                           ORDER BY b.bm25 DESC, b.memory_id LIMIT 4 * n);
        END IF;
        IF NOT check_hits OR pg_catalog.cardinality(first) >= n THEN
            -- the memories the second pass scores, sorted once (each lexeme's index scan would sort them again);
            -- every one passes the filters (the first pass checked its own, the other arms theirs)
            probe := ARRAY(SELECT DISTINCT i FROM pg_catalog.unnest(first || scored) AS i ORDER BY i);
            IF NOT check_hits AND coalesce(pg_catalog.cardinality(ranked), 0) = 0 THEN
                -- the top n (rank 1..n, ties by id), and the other arms' memories outside it (rank NULL): as the pass
                RETURN ARRAY(SELECT ROW(x.memory_id, CASE WHEN x.rn <= n THEN x.rn END, x.bm25)::memsql.search_hit
                             FROM (SELECT b.memory_id, b.bm25,
                                          row_number() OVER (ORDER BY b.bm25 DESC, b.memory_id)::integer AS rn
                                   FROM memsql.search_bm25(f.namespace, lx, lw, kd0, kd1, probe) b) x
                             WHERE x.rn <= n OR x.memory_id = ANY (scored)
                             ORDER BY x.rn);
            END IF;
            RETURN ARRAY(SELECT h FROM memsql.search_lexical_pass(f, false, lx, lw, kd0, kd1, probe, n,
                                                                  scored, ranked, ranked_n) AS h);
        END IF;
        -- a filter left fewer than n: the postings of about as many kept memories as the budget, then every one
        EXIT WHEN budget >= posting_budget / share;
        budget := posting_budget / share;
    END LOOP;
    RETURN ARRAY(SELECT h FROM memsql.search_lexical_pass(f, check_hits, lx, lw, kd0, kd1, NULL, n,
                                                          scored, ranked, ranked_n) AS h);
END $$;
COMMENT ON FUNCTION memsql.search_lexical(memsql.search_filter, text[], integer, double precision, double precision,
    integer, bigint[], bigint[], integer, bigint[], double precision) IS
$c$Lexical arm of memory_search: BM25 over the namespace's exact statistics (memsql.term_stats, namespace_stats) and
postings, the filters (memsql.search_visible) applied to the hits before the top n is taken.
Args: f memsql.search_filter; lexemes text[] (memsql.search_lexemes); n (rows ranked); bm25_k1 >= 0, bm25_b in [0,1];
  posting_budget (as memory_search); scored, ranked, ranked_n as memsql.search_lexical_pass; eligible bigint[]
  (NULL, or every memory f keeps: memsql.search_kept, when memsql.search_exact_scan says they are few); kept =
  memsql.search_filter_estimate(f) (NULL: no knowledge type, tag, topic or as_of filter).
How: when the filter drops memories and eligible is given, the postings of those alone are ranked (exact BM25
  ranking, whatever posting_budget). Else past twice the budget (summed document
  frequencies of the lexemes), the best 4 x n on the rarest lexemes that pass the filter (checked best first) are
  scored on all of them with the other arms' memories; when a filter leaves fewer than n, the first pass runs
  again over posting_budget / the share kept (estimate). When still fewer than n pass, or below the budget, one
  pass over every posting ranks exactly, the filter checked best hit first. So a filter never costs rows:
  min(n, matching memories kept) rows.
Returns memsql.search_hit[]: the rows of memsql.search_lexical_pass (empty when no lexeme occurs in the namespace;
  without a filter to check and a priority memory to rank, the two passes are one statement each, same rows);
  an array, not a set: memory_search holds each arm's rows in an array (no tuplestore and copy per call).
Source: sql/functions/20_search.sql.$c$;

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
    time_weight           double precision DEFAULT 0.4,
    freq_weight           double precision DEFAULT 0.1,
    freq_cap              double precision DEFAULT 1.5,
    touch                 boolean          DEFAULT false,
    dense_min_similarity  double precision DEFAULT 0.0,
    priority_weight       double precision DEFAULT 1.0,
    priority_min_similarity double precision DEFAULT 0.35,
    priority_limit        integer          DEFAULT 50,
    fusion                text             DEFAULT 'convex',
    topics                text[]           DEFAULT NULL,
    ef_search             integer          DEFAULT NULL,
    enable_mmr            boolean          DEFAULT false,
    mmr_lambda            double precision DEFAULT 0.6,
    include_superseded    boolean          DEFAULT false,
    as_of                 timestamptz      DEFAULT NULL,
    posting_budget        integer          DEFAULT 2000,
    reference_time        timestamptz      DEFAULT NULL,    -- NULL = now(): the time decay is computed from
    group_by              text             DEFAULT NULL,    -- 'document': the best memory per document
    assistant_weight      double precision DEFAULT 0.8      -- times the fused score of an assistant's words
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
    valid_to          timestamptz,   -- NULL = the current version
    superseded_by     bigint,        -- the version that replaced it
    document_rank     integer        -- the rank of the memory's document (by its best memory) among the scored
)
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
SET plan_cache_mode = 'force_generic_plan'   -- plans made once per session: planning cost more than running
AS $$
#variable_conflict use_column
DECLARE
    fn    CONSTANT text := 'memory_search';
    ns    text := memory_search.namespace;
    nvar  integer := coalesce(pg_catalog.cardinality(query_embeddings), 0);
    hidden bigint;   -- memories below the importance cutoff, counted for an empty result
    vis   memsql.search_filter;       -- what every arm may return (memsql.search_visible)
    qlex  text[];                     -- the query's lexemes
    phr   text[];                     -- the phrases it quotes (memsql.query_phrases)
    dense memsql.search_hit[] := '{}';   -- the arms' rows: per query embedding (score = cosine) ...
    prio  memsql.search_hit[] := '{}';   -- ... priority memories (rank when near a query embedding) ...
    lex   memsql.search_hit[] := '{}';   -- ... BM25 (rank <= candidates: the top; > candidates: a priority
                                         --     memory's exact rank; NULL: BM25 of another arm's memory)
    kt_name text[];                   -- knowledge types and their half-lives (memory axis)
    kt_hl   float8[];
    kept    float8;                   -- how many memories the filters keep (estimate; NULL: no indexed filter)
    eligible bigint[];                -- when the filters keep few memories: all of them (memsql.search_kept)
    dq      vector[];                 -- the query embeddings the dense arm ranks ('{}': no dense arm)
    depth_max CONSTANT integer := 5000;   -- the deepest arms of a group_by 'document' search
    filtered_out boolean := false;        -- no memory passes the knowledge type, tag and topic filters
    empty   boolean;                      -- no row returned
BEGIN
    -- 1. Arguments
    IF query IS NULL OR ns IS NULL THEN
        PERFORM memsql.raise_invalid('memory_search: query and namespace must not be NULL',
                                     'Pass a text query ('''' with query embeddings for dense-only search) and a namespace.');
    END IF;
    IF ns = '' THEN
        PERFORM memsql.raise_invalid('memory_search: namespace is empty', 'Pass a namespace, e.g. ''default''.');
    END IF;
    PERFORM memsql.check_argument(fn, 'k', k, 1, 1000, 'k is the number of rows to return, e.g. k => 10.');
    candidates := memsql.check_argument(fn, 'candidates', coalesce(candidates, greatest(50, k)), 1, 1000,
        'candidates is the depth of each arm before fusion; NULL (the default) = greatest(50, k).');
    PERFORM memsql.check_argument(fn, 'rrf_k', rrf_k, 0, 1000000, 'The usual value is 60.');
    IF fusion IS NULL OR fusion NOT IN ('rrf', 'convex') THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_search: fusion must be ''rrf'' or ''convex'', got %s', fusion),
                                     'convex adds weight * score (cosine, BM25 / max BM25); rrf adds weight / (rrf_k + rank).');
    END IF;
    -- NULL = the fusion's default: cosine is not normalised under convex, so its weight is larger (chosen on the
    -- development sets: 2.0 to 3.0 all beat the former min-max fusion on both, 2.75 best on both)
    dense_weight := memsql.check_argument(fn, 'dense_weight',
        coalesce(dense_weight, CASE WHEN fusion = 'convex' THEN 2.75 ELSE 1.0 END), 0, 1e6, 'e.g. dense_weight => 1.0.');
    -- the other ranges in one statement (left to right: the first bad one raises), one executor run for all
    PERFORM memsql.check_argument(fn, 'lexical_weight', lexical_weight, 0, 1e6, 'e.g. lexical_weight => 1.0.'),
        memsql.check_argument(fn, 'priority_weight', priority_weight, 0, 1e6, '0 = no priority boost; default 1.0.'),
        memsql.check_argument(fn, 'bm25_k1', bm25_k1, 0, 1000, 'The default is bm25_k1 => 0.9.'),
        memsql.check_argument(fn, 'bm25_b', bm25_b, 0, 1, 'The default is bm25_b => 0.4.'),
        memsql.check_argument(fn, 'importance_threshold', importance_threshold, 0, 1,
            'Importance is 0..1; memories below the threshold are not returned (default 0.3; memory_rerank => false: no cutoff).'),
        memsql.check_argument(fn, 'time_weight', time_weight, 0, 1, 'The default is time_weight => 0.4.'),
        memsql.check_argument(fn, 'freq_weight', freq_weight, 0, 1000, 'The default is freq_weight => 0.1.'),
        memsql.check_argument(fn, 'freq_cap', freq_cap, 1, 1e6, 'The default is freq_cap => 1.5.'),
        memsql.check_argument(fn, 'dense_min_similarity', dense_min_similarity, -1, 1,
            'A cosine similarity; the default 0 keeps every candidate with a non-negative cosine.'),
        memsql.check_argument(fn, 'priority_min_similarity', priority_min_similarity, -1, 1,
            'A cosine similarity; the default is 0.35.'),
        memsql.check_argument(fn, 'priority_limit', priority_limit, 0, 1000, '0 = no guaranteed candidates; default 50.'),
        memsql.check_argument(fn, 'ef_search', ef_search, 1, 1000, 'NULL (the default) = greatest(candidates, 40).', true),
        memsql.check_argument(fn, 'posting_budget', posting_budget, 0, 'Infinity',
            '0 = read every posting of the query lexemes (exact BM25 ranking); default 2000.'),
        memsql.check_argument(fn, 'mmr_lambda', mmr_lambda, 0, 1, 'The default is mmr_lambda => 0.6.'),
        memsql.check_argument(fn, 'assistant_weight', assistant_weight, 0, 1e6,
            '1 = an assistant''s words rank as anyone''s; the default 0.8 ranks what the person said first.');
    IF dense_weight = 0 AND lexical_weight = 0 THEN
        PERFORM memsql.raise_invalid('memory_search: dense_weight and lexical_weight are both 0: nothing ranks the memories',
                                     'Give one arm a weight above 0 (defaults: dense_weight NULL = 2.75 under convex, '
                                     'lexical_weight 1.0).');
    END IF;
    IF enable_mmr IS NULL OR include_superseded IS NULL OR memory_rerank IS NULL OR touch IS NULL THEN
        PERFORM memsql.raise_invalid('memory_search: enable_mmr, include_superseded, memory_rerank and touch must not be NULL',
                                     'Pass true or false (defaults: false, false, true, false).');
    END IF;
    IF reference_time = 'infinity' OR reference_time = '-infinity' THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_search: reference_time must be a finite time, got %s', reference_time),
                                     'Pass the time decay is computed from, e.g. ''2026-03-01 12:00+00''; NULL = now.');
    END IF;
    IF group_by IS NOT NULL AND group_by <> 'document' THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_search: group_by must be NULL or ''document'', got %s', group_by),
                                     'group_by => ''document'' returns the best memory of each of the k best documents.');
    END IF;
    IF group_by IS NOT NULL AND enable_mmr THEN
        PERFORM memsql.raise_invalid('memory_search: group_by and enable_mmr cannot be combined',
                                     'Use one: group_by => ''document'' already returns one memory per document.');
    END IF;
    IF as_of = 'infinity' OR as_of = '-infinity' THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_search: as_of must be a finite time, got %s', as_of),
                                     'Pass a timestamptz such as ''2026-03-01 12:00+00''; NULL = now.');
    END IF;
    IF nvar > 3 THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_search: at most 3 query embeddings, got %s', nvar),
                                     'Pass the query and up to two enrichment variants.');
    END IF;
    PERFORM memsql.check_vectors(fn, 'query embedding', query_embeddings);
    IF knowledge_types IS NOT NULL THEN   -- a mistyped type is an error (MS003, the known ones in the HINT), not 0 rows
        PERFORM memsql.check_knowledge_type(t) FROM pg_catalog.unnest(knowledge_types) AS t;
    END IF;
    vis := ROW(ns, knowledge_types, tags, topics, CASE WHEN memory_rerank THEN importance_threshold END,
             include_superseded, as_of)::memsql.search_filter;

    -- 2. The query: its text with every blank (white space, format character) a space, its lexemes, its embedding.
    query := memsql.query_text(query);
    IF btrim(query) = '' AND query_embeddings IS NULL THEN
        RAISE NOTICE 'memory_search: nothing to search: the query is blank and no query embedding was given';
        RETURN;
    END IF;
    qlex := memsql.search_lexemes(query, ns);
    phr := CASE WHEN lexical_weight > 0 THEN memsql.query_phrases(query) ELSE '{}' END;
    -- a misspelt or new namespace: said before a query embedding is asked for
    IF NOT EXISTS (SELECT 1 FROM memsql.memories m WHERE m.namespace = ns) THEN
        IF EXISTS (SELECT 1 FROM memsql.archive a WHERE a.namespace = ns) THEN   -- forgotten, not gone
            RAISE NOTICE 'memory_search: nothing to search: every memory of namespace % is archived', quote_literal(ns)
                USING HINT = 'SELECT * FROM memsql.archive lists them; memory_restore(ARRAY[id]) brings one back.';
        ELSE
            RAISE NOTICE 'memory_search: nothing to search: namespace % holds no memories', quote_literal(ns)
                USING HINT = 'SELECT namespace FROM memsql.namespace_list() lists the namespaces (memsql namespace list).';
        END IF;
        RETURN;
    END IF;
    -- NULL = ask memsql.query_embedding (cache, else the memsql worker; NULL at once without a worker,
    -- sql/functions/60_worker.sql); '{}' = lexical only on purpose
    IF query_embeddings IS NULL AND dense_weight > 0 THEN
        query_embeddings := pg_catalog.array_remove(ARRAY[memsql.query_embedding(query)], NULL);
        nvar := pg_catalog.cardinality(query_embeddings);
    END IF;
    IF nvar = 0 AND pg_catalog.cardinality(qlex) = 0 THEN   -- only stop words / punctuation: no rows
        RAISE NOTICE 'memory_search: nothing to search: the query has no searchable word and no query embedding was given';
        RETURN;
    ELSIF nvar = 0 THEN
        RAISE NOTICE 'memory_search: no query embeddings given, lexical arm only';
    END IF;

    -- 3. The arms (an arm with weight 0 is not run). hnsw.ef_search: an arm asking `candidates` rows must not be cut
    --    to pgvector's default of 40. group_by 'document' needs k documents among the arms' memories: while they
    --    hold fewer and an arm was full, the arms run again 4 times as deep (up to depth_max).
    dq := CASE WHEN nvar > 0 AND dense_weight > 0 THEN query_embeddings ELSE '{}' END;
    kept := memsql.search_filter_estimate(vis);
    IF priority_limit > 0 THEN   -- the guaranteed candidates: the same at any depth
        prio := ARRAY(SELECT h FROM memsql.search_priority(vis, query_embeddings,
                                                            priority_limit,
                                                            greatest(priority_min_similarity, dense_min_similarity)) AS h);
    END IF;
    LOOP
        PERFORM set_config('hnsw.ef_search', coalesce(ef_search, least(greatest(candidates, 40), 1000))::text, true);
        IF memsql.search_exact_scan(vis, kept, candidates) THEN
            -- the filters keep few memories: one read of them serves the dense arm (exact) and the lexical arm
            IF kept IS NULL THEN   -- no knowledge type, tag, topic or as_of filter
                SELECT s.kept, s.hits INTO eligible, dense FROM memsql.search_kept(vis, dq, candidates) s;
            ELSE   -- planned for the filter's values, so that the indexes of tags, topics and knowledge types apply
                EXECUTE 'SELECT s.kept, s.hits FROM memsql.search_kept($1, $2, $3) s' INTO eligible, dense
                    USING vis, dq, candidates;
            END IF;
            dense := ARRAY(SELECT h FROM pg_catalog.unnest(dense) AS h WHERE h.score >= dense_min_similarity);
        ELSIF pg_catalog.cardinality(dq) > 0 THEN
            dense := memsql.search_dense(vis, dq, candidates, dense_min_similarity, false);
        END IF;
        IF lexical_weight > 0 AND pg_catalog.cardinality(qlex) > 0 THEN
            lex := memsql.search_lexical(
                       vis, qlex, candidates, bm25_k1, bm25_b, posting_budget,
                       ARRAY(SELECT d.memory_id FROM pg_catalog.unnest(dense) AS d UNION SELECT p.memory_id FROM pg_catalog.unnest(prio) AS p),
                       ARRAY(SELECT p.memory_id FROM pg_catalog.unnest(prio) AS p), priority_limit, eligible, kept);
        END IF;
        EXIT WHEN group_by IS NULL OR candidates >= depth_max
            OR NOT (EXISTS (SELECT 1 FROM pg_catalog.unnest(dense) AS d WHERE d.rank >= candidates)      -- no arm was full
                    OR (SELECT count(*) FROM pg_catalog.unnest(lex) AS l WHERE l.rank <= candidates) >= candidates)
            OR (SELECT count(DISTINCT m.document_id) FROM memsql.memories m
                WHERE m.namespace = ns AND m.id IN (SELECT d.memory_id FROM pg_catalog.unnest(dense) AS d
                                                    UNION SELECT l.memory_id FROM pg_catalog.unnest(lex) AS l
                                                          WHERE l.rank <= candidates
                                                    UNION SELECT p.memory_id FROM pg_catalog.unnest(prio) AS p)) >= k;
        candidates := least(candidates * 4, depth_max);
    END LOOP;

    -- 4. Fusion over the pool (every arm's candidates once), the memory axis, the top k, access statistics.
    IF memory_rerank THEN
        SELECT pg_catalog.array_agg(t.name), pg_catalog.array_agg(t.half_life_days) INTO kt_name, kt_hl FROM memsql.knowledge_types t;
    END IF;
    RETURN QUERY
    WITH
    prio_lex AS (   -- priority memories matching lexically: their exact lexical rank, best first
        SELECT l.memory_id AS id, l.rank AS lfull, l.score AS bm25,
               row_number() OVER (ORDER BY l.rank, l.memory_id) AS lr
        FROM pg_catalog.unnest(lex) AS l
        WHERE l.rank IS NOT NULL AND l.memory_id IN (SELECT p.memory_id FROM pg_catalog.unnest(prio) AS p)
        ORDER BY l.rank, l.memory_id
        LIMIT priority_limit
    ),
    prio_ranked AS (   -- guaranteed candidates ranked among themselves: near (dense rank dr) or lexical (rank lr)
        SELECT coalesce(d.memory_id, l.id) AS id, d.rank AS dr, l.lfull, l.bm25,
               row_number() OVER (ORDER BY coalesce(1.0 / (rrf_k + d.rank), 0) + coalesce(1.0 / (rrf_k + l.lr), 0) DESC,
                                           coalesce(d.memory_id, l.id))::integer AS prnk
        FROM (SELECT p.* FROM pg_catalog.unnest(prio) AS p WHERE p.rank IS NOT NULL) d
        FULL JOIN prio_lex l ON l.id = d.memory_id
    ),
    entries AS (   -- what each arm says of a candidate: its rank there, its RRF share, its BM25, its cosine
        SELECT d.memory_id AS id, d.rank AS drank, NULL::integer AS lrank, NULL::integer AS prank,
               dense_weight / greatest(nvar, 1) / (rrf_k + d.rank) AS rrf, NULL::float8 AS bm25, d.score AS sim
        FROM pg_catalog.unnest(dense) AS d
        UNION ALL   -- the lexical top
        SELECT l.memory_id, NULL, l.rank, NULL, lexical_weight / (rrf_k + l.rank), l.score, NULL
        FROM pg_catalog.unnest(lex) AS l WHERE l.rank <= candidates
        UNION ALL   -- BM25 of the other arms' memories: a score, no rank
        SELECT l.memory_id, NULL, NULL, NULL, 0, l.score, NULL FROM pg_catalog.unnest(lex) AS l WHERE l.rank IS NULL
        UNION ALL   -- a guaranteed candidate outside the dense top enters at a lower bound of its dense rank ...
        SELECT p.id, NULL, NULL, NULL, dense_weight / (rrf_k + candidates + p.dr), NULL, NULL
        FROM prio_ranked p WHERE p.dr IS NOT NULL AND p.id NOT IN (SELECT d.memory_id FROM pg_catalog.unnest(dense) AS d)
        UNION ALL   -- ... outside the lexical top at its exact BM25 rank ...
        SELECT p.id, NULL, p.lfull, NULL, lexical_weight / (rrf_k + p.lfull), p.bm25, NULL
        FROM prio_ranked p WHERE p.lfull > candidates
        UNION ALL   -- ... and in the priority arm at its rank among priority memories
        SELECT p.id, NULL, NULL, p.prnk, priority_weight / (rrf_k + p.prnk), p.bm25, NULL
        FROM prio_ranked p WHERE priority_weight > 0
    ),
    cand AS (
        SELECT e.id, min(e.drank) AS drank, min(e.lrank) AS lrank, min(e.prank) AS prank, sum(e.rrf) AS rrf,
               coalesce(max(e.bm25), 0) AS bm25, max(e.sim) AS sim
        FROM entries e GROUP BY e.id
    ),
    pool AS MATERIALIZED (   -- the candidates' rows (primary-key lookups), still visible (the arms ran as statements
                             -- of their own); each cosine computed once (with one query embedding, the dense arm's,
                             -- unless the memory has windows)
        SELECT u.id, u.drank, u.lrank, u.prank, u.rrf, u.bm25, m.document_id, m.knowledge_type,
               coalesce(m.source_date, m.created_at) AS age_from, memsql.said_by_assistant(m.metadata) AS assistant,
               CASE WHEN memory_rerank THEN (SELECT a.access_count FROM memsql.memory_access a
                                             WHERE a.namespace = ns AND a.memory_id = u.id) END AS access_count,
               -- a memory longer than one window: the best cosine of its windows (memsql.memory_windows; a
               -- conversation message has none)
               coalesce(CASE WHEN NOT m.metadata ? 'speaker' THEN
                            (SELECT CASE WHEN nvar = 1 THEN memsql.window_similarity(w.embeddings, query_embeddings[1])
                                         ELSE (SELECT max(memsql.window_similarity(w.embeddings, q.vec))
                                               FROM pg_catalog.unnest(query_embeddings) AS q(vec)) END
                             FROM memsql.memory_windows w WHERE w.namespace = ns AND w.memory_id = u.id) END,
                        CASE WHEN u.sim IS NOT NULL AND nvar = 1 THEN u.sim
                             WHEN nvar = 1 THEN 1 - (m.embedding <=> query_embeddings[1])
                             ELSE (SELECT max(1 - (m.embedding <=> q.vec)) FROM pg_catalog.unnest(query_embeddings) AS q(vec))
                        END) AS sim
        FROM cand u
        -- one primary-key lookup per candidate, whatever a plan made once per session estimates (a join could
        -- otherwise become a scan of the whole namespace): LIMIT keeps the subquery from being flattened
        CROSS JOIN LATERAL (SELECT m.* FROM memsql.memories m
                            WHERE m.namespace = ns AND m.id = u.id AND memsql.search_visible(m, vis) LIMIT 1) m
    ),
    scored AS (   -- convex fusion: weights times cosine and BM25 / max BM25 of the pool; or the RRF sum; the quoted
                  -- phrases held word for word as much again as the best BM25 (or a first lexical rank); times
                  -- assistant_weight for an assistant's words
        SELECT p.id, p.drank, p.lrank, p.prank, p.sim, p.bm25, p.document_id,
               (CASE WHEN fusion = 'rrf' THEN p.rrf + lexical_weight * p.phrase / (rrf_k + 1)
                     ELSE dense_weight * coalesce(p.sim, 0)      -- NULL: no embedding, or no query embedding
                        + lexical_weight * (CASE WHEN p.bmax > 0 THEN p.bm25 / p.bmax ELSE 0 END + p.phrase)
                        + coalesce(priority_weight / p.prank, 0)
                END) * CASE WHEN p.assistant THEN assistant_weight ELSE 1 END AS fscore,
               CASE WHEN memory_rerank THEN
                   (1 - time_weight) + time_weight * memsql.decay(
                       extract(epoch FROM (coalesce(reference_time, now()) - p.age_from)) / 86400.0,
                       kt_hl[pg_catalog.array_position(kt_name, p.knowledge_type)])
               ELSE 1.0 END AS decay_f,
               CASE WHEN memory_rerank THEN least(freq_cap, 1 + freq_weight * ln(1 + coalesce(p.access_count, 0)))
               ELSE 1.0 END AS freq_f
        FROM (SELECT p.*, max(p.bm25) OVER () AS bmax,
                     -- the share of the quoted phrases the candidate holds word for word (read only when quoted)
                     CASE WHEN pg_catalog.cardinality(phr) > 0
                          THEN (SELECT memsql.phrase_share(m.content, phr) FROM memsql.memories m
                                WHERE m.namespace = ns AND m.id = p.id)
                          ELSE 0 END AS phrase
              FROM pool p) p
    ),
    ranked AS (
        SELECT s.*, s.fscore * s.decay_f * s.freq_f AS final_score FROM scored s
    ),
    docs AS MATERIALIZED (   -- each document's rank by its best memory (one row per document)
        SELECT r.document_id, row_number() OVER (ORDER BY max(r.final_score) DESC, r.document_id)::integer AS drank_doc
        FROM ranked r GROUP BY r.document_id
    ),
    top AS MATERIALIZED (   -- pos: the row's place in the answer
        (SELECT r.*, row_number() OVER (ORDER BY r.final_score DESC, r.id)::integer AS pos
         FROM ranked r WHERE NOT enable_mmr AND group_by IS NULL
         ORDER BY r.final_score DESC, r.id
         LIMIT k)
        UNION ALL   -- group_by 'document': each document's best memory (score, then id), the k best of those
        (SELECT r.*, row_number() OVER (ORDER BY r.final_score DESC, r.id)::integer
         FROM (SELECT DISTINCT ON (r.document_id) r.* FROM ranked r WHERE group_by IS NOT NULL
               ORDER BY r.document_id, r.final_score DESC, r.id) r
         ORDER BY r.final_score DESC, r.id
         LIMIT k)
        UNION ALL   -- MMR: k picked greedily from every scored candidate, relevance = final score
        SELECT r.*, x.mmr_rank
        FROM memsql.mmr_select(
                 (SELECT pg_catalog.array_agg(r.id ORDER BY r.final_score DESC, r.id) FROM ranked r WHERE enable_mmr),
                 (SELECT pg_catalog.array_agg(r.final_score ORDER BY r.final_score DESC, r.id) FROM ranked r WHERE enable_mmr),
                 (SELECT pg_catalog.array_agg((SELECT m.embedding FROM memsql.memories m WHERE m.namespace = ns AND m.id = r.id)
                                   ORDER BY r.final_score DESC, r.id)
                  FROM ranked r WHERE enable_mmr),
                 k, mmr_lambda) x
        JOIN ranked r ON r.id = x.memory_id
        WHERE enable_mmr
    ),
    final AS (   -- the wide columns, for the k returned rows only (primary-key lookups, as above)
        SELECT t.*, m.chunk_index, m.content, m.knowledge_type, m.importance, m.source_date, m.created_at,
               m.metadata, m.valid_to, m.superseded_by, d.source_uri, d.title,
               (SELECT x.drank_doc FROM docs x WHERE x.document_id = t.document_id) AS drank_doc
        FROM top t
        CROSS JOIN LATERAL (SELECT m.* FROM memsql.memories m WHERE m.namespace = ns AND m.id = t.id LIMIT 1) m
        CROSS JOIN LATERAL (SELECT d.source_uri, d.title FROM memsql.documents d
                            WHERE d.namespace = ns AND d.id = t.document_id LIMIT 1) d
    ),
    -- touch only the memories that stay: one being deleted right now (memory_forget, delete_document, a re-ingest)
    -- holds a row lock and is skipped, instead of failing this search on the memory_access foreign key after the
    -- delete commits, or deadlocking with it; the locks are shared and taken in id order
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
           f.source_date, f.created_at, f.metadata, f.valid_to, f.superseded_by, f.drank_doc
    FROM final f
    ORDER BY f.pos, f.id;
    -- no row: say when the filters keep no memory at all, or the importance cutoff hid memories (counted only then;
    -- a search with rows pays nothing)
    empty := NOT FOUND;
    IF empty AND (vis.knowledge_types IS NOT NULL OR vis.tags IS NOT NULL OR vis.topics IS NOT NULL) THEN
        -- planned for the filter's values (the indexes of tags, topics and knowledge types), the cutoff left aside
        EXECUTE 'SELECT NOT EXISTS (SELECT 1 FROM memsql.memories m WHERE memsql.search_visible(m, $1))'
            INTO filtered_out
            USING ROW(vis.namespace, vis.knowledge_types, vis.tags, vis.topics, NULL, vis.include_superseded,
                      vis.as_of)::memsql.search_filter;
    END IF;
    IF filtered_out THEN
        RAISE NOTICE 'memory_search: no rows; no memory of namespace % has %', quote_literal(ns),
            pg_catalog.concat_ws(' together with ',
                      'knowledge type ' || pg_catalog.array_to_string(knowledge_types, ' or '),
                      'tag ' || pg_catalog.array_to_string(tags, ' or '), 'topic ' || pg_catalog.array_to_string(topics, ' or '))
            USING HINT = 'Drop or change a filter (tags and topics: any of those given).';
    ELSIF empty AND memory_rerank AND importance_threshold > 0 THEN
        hidden := memsql.memories_below_cutoff(ns, importance_threshold, knowledge_types, tags, topics);
        IF hidden > 0 THEN
            RAISE NOTICE 'memory_search: no rows; % memories of namespace % have importance below the cutoff %',
                hidden, quote_literal(ns), importance_threshold
                USING HINT = 'memory_rerank => false (or a lower importance_threshold) includes them.';
        END IF;
    END IF;
END
$$;

COMMENT ON FUNCTION memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean, double precision, double precision,
    double precision, integer, text, text[], integer, boolean, double precision, boolean, timestamptz, integer,
    timestamptz, text, double precision) IS
$c$Hybrid memory search in one call: dense arms (HNSW, cosine) + a BM25 lexical arm, fused, then the memory axis.
Args:
  query text: the question; its lexemes (memsql.query_lexemes, under every text search configuration present in the
    namespace: memories.ts_config) are OR-ed for the lexical arm ('' = no lexical arm). A phrase it quotes ("...",
    two words or more: memsql.query_phrases) adds lexical_weight x the share of the quoted phrases a candidate holds
    word for word (memsql.phrase_share; under rrf, that times 1 / (rrf_k + 1)) to its fused score.
  query_embeddings vector(384)[]: 0 to 3 unit vectors (query + enrichment variants), one dense arm each; NULL = the query's
    embedding from memsql.query_embedding (cached, else the memsql worker; lexical only with a NOTICE when no worker
    answers within memsql.query_embedding_timeout_ms, 1000); '{}' = lexical only (NOTICE).
  k int 1..1000 (10): rows returned.  namespace text ('default'): every arm is filtered to it.
  knowledge_types text[], tags text[] (NULL = all): filters applied identically to every arm (tags: any of).
  candidates int 1..1000 (NULL = greatest(50, k)): depth of each arm (a depth below k can return fewer than k rows);
    hnsw.ef_search is raised to match inside the call (at most 1000).
  fusion ('convex'): 'convex' = dense_weight * cosine + lexical_weight * BM25 / max BM25 of the pool (each pooled
    memory scored on both arms: its true cosine and BM25; the cosine is not rescaled, the theoretical range is its
    normalisation); 'rrf' = sum over arms of weight / (rrf_k + rank), the dense weight shared equally among the
    query embeddings.
  dense_weight 0..1e6 (NULL = 2.75 under convex, 1.0 under rrf), lexical_weight 0..1e6 (1.0), not both 0;
  rrf_k int 0..1000000 (60). bm25_k1 0..1000 (0.9), bm25_b in [0,1] (0.4): BM25 over exact per-namespace statistics and postings (memsql.postings).
  posting_budget int >= 0 (2000): a query whose lexemes have at most 2 x posting_budget postings (summed document
    frequencies in the namespace) is ranked exactly, every posting read. Past that the arm ranks on the rarest
    lexemes whose postings fit the budget (at least the rarest one), keeps the best 4 x candidates memories, and
    scores those, with the dense and priority candidates, on every lexeme by index probes: exact BM25 for every
    memory it returns, but a memory ranked low on the rare lexemes or matching only the commonest ones is not
    scored, and a priority memory's lexical rank is its rank among the scored ones. 0 = always exact (slower past
    ~10,000 memories). Under a filter: when it keeps few memories (the dense arm's exact scan) their postings alone
    are ranked, exactly; else the rare lexemes' hits are checked best first, and when fewer than candidates pass
    the budget widens to posting_budget over the share kept, then to every posting: a filter never costs rows
    (min(k, matching memories kept) from the lexical arm alone). Measured: bench/results/speed.md, docs/search.md.
  dense_min_similarity (0.0): dense candidates with cosine similarity below it do not enter fusion.
  Guaranteed candidates: priority memories (knowledge_type principle, or importance >= 0.7) that match the query
    (lexically, or cosine >= priority_min_similarity 0.35), at most priority_limit (50), enter the pool even when
    hundreds of others outrank them. Under rrf they count at a lower bound of their rank in each arm (dense: candidates
    + rank among priority memories; lexical: their exact BM25 rank) plus a priority arm priority_weight / (rrf_k +
    priority_rank); under convex they are scored on both arms like any pooled memory plus priority_weight / priority_rank.
    priority_weight 1.0; 0 = no boost; priority_limit 0 = no guarantee.
  assistant_weight 0..1e6 (0.8): the fused score (either fusion) of a memory holding an assistant's words
    (memsql.said_by_assistant: metadata speaker 'assistant', as the chat and Claude Code adapters write it) is
    multiplied by it, so in a conversation what the person said ranks above the assistant's answer on the same
    subject; 1 = no difference. Chosen on LongMemEval s_dev and oracle_dev (docs/search.md); questions about what the
    assistant said rank their turn lower.
  memory_rerank (true): importance cutoff (importance set and < importance_threshold 0.3 -> dropped), time decay
    factor (1 - time_weight) + time_weight * 0.5^(age_days / half_life_days) (time_weight 0.4, half-life from
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
  reference_time timestamptz (NULL = now()): the time the memory axis computes ages from (decay of each memory's
    source_date else created_at). A memory dated after it is not left out and counts as new (age 0): a past time
    ages what came before it as it stood then; as_of (when memsql stored a memory) leaves out what came later.
  group_by text (NULL): 'document' = the best memory of each of the k best documents (a session, a file), one row
    per document; not with enable_mmr. min(k, documents with an eligible memory among the arms' first 5,000) rows:
    while the arms' memories come from fewer than k documents and an arm returned all it was asked for, the arms
    run again 4 times as deep, up to 5,000 memories each (a document whose memories all rank below that, behind
    larger documents, is not returned).
  touch (false): access_count + 1 and last_accessed_at = now() in memsql.memory_access for the returned memories.
    Appearing in a result list is not a use: an access is counted when a memory is used (memsql.memory_touch:
    opened, fetched in full, cited), so the same query twice returns the same order. true = count this search
    (a memory being deleted by a concurrent transaction at that moment is returned but not counted; atomic under
    concurrency: INSERT ... ON CONFLICT DO UPDATE).
Returns one row per memory, best first (score DESC, memory_id; in MMR pick order with enable_mmr): score = fusion_score * decay_factor * frequency_factor
  (fusion_score includes assistant_weight); no row with memory_rerank while the namespace holds memories below the
  importance cutoff: a NOTICE says how many (memory_rerank => false includes them);
  dense_rank (best over query embeddings), lexical_rank and priority_rank are arm ranks (1-based, NULL when absent;
  the dense arm ranks by each memory's own embedding);
  dense_similarity = best cosine over the query embeddings, of the memory's best window when it has windows
  (memsql.memory_windows: a long memory that is not a message; then it can differ from the order of dense_rank),
  lexical_score = BM25 (0 when no query term matched);
  valid_to and superseded_by mark a superseded version (both NULL for a current one; memory_history shows the chain).
  document_rank: the rank of the memory's document (1 = the document of the best memory) among the documents of
    every scored candidate, each by its best memory.
  No rows, with a NOTICE saying why: a namespace holding no memories (misspelt, or nothing written yet; the HINT
    names memsql.namespace_list), a blank query without query embeddings, a query of stop words only, filters
    (knowledge_types, tags, topics) that no memory passes.
Cost: per query embedding one HNSW walk over the half-precision index (V0009), or one exact scan of what the
  filters keep when the namespace holds at most 1,000 memories or the filters keep few (memsql.search_exact_scan,
  memsql.search_kept; as fast there, and exact); one index range of memsql.postings per
  query lexeme (BM25 of every matching memory, computed once), or past 2 x posting_budget postings the ranges of
  the rare lexemes plus index probes for at most 4 x candidates + the dense and priority candidates; primary-key
  lookups of the pooled memories. Ranks and
  similarities always come from the full-precision embeddings. Every statement uses a plan made once per session.
Errors: MS002 invalid argument (an empty namespace, k, candidates, weights or both arm weights 0, assistant_weight, bm25 parameters, posting_budget, fusion,
  ef_search, mmr_lambda, include_superseded NULL, as_of or reference_time infinite, group_by unknown
  or with enable_mmr), MS003 a knowledge_types entry that names no knowledge type (memsql.knowledge_types),
  MS005 a query embedding not finite, zero, not 384-d, or an array of more than one dimension.
Source: sql/functions/20_search.sql.$c$;
