-- The embedding worker's side of SQL: query embeddings for SQL callers (memsql.query_embedding), the calls the
-- worker makes (query_embedding_requests, query_embedding_store; the memory backlog: memory_pending_embeddings,
-- memory_set_embeddings), and its status (memsql.worker_status).
--
-- How a SQL caller gets a query embedding: PostgreSQL cannot run the model here, a worker process
-- (`memsql worker`) does. A NOTIFY is delivered only when its transaction commits, so the caller's own
-- transaction cannot ask and wait for the answer. query_embedding therefore queues the request through a
-- separate connection (dblink, kept open for the session): that short transaction inserts a request row and
-- notifies at its commit; the worker embeds the text and commits the vector; the caller polls the cache row
-- (a fresh snapshot per statement under READ COMMITTED, through dblink under REPEATABLE READ / SERIALIZABLE).

CREATE OR REPLACE FUNCTION memsql.dblink_connstr() RETURNS text
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT AS $$
DECLARE
    custom  text := nullif(current_setting('memsql.dblink_connstr', true), '');
    sockets text;
    host    text;
BEGIN
    -- the setting first: what follows reads unix_socket_directories, which only superusers and members of
    -- pg_read_all_settings may, and a role that is not a superuser needs the setting anyway (a password in it)
    IF custom IS NOT NULL THEN
        RETURN custom;
    END IF;
    IF NOT pg_has_role(current_user, 'pg_read_all_settings', 'USAGE') THEN   -- true for a superuser
        RAISE EXCEPTION 'dblink_connstr: memsql.dblink_connstr is not set for role %, and a role that is not a '
                        'superuser cannot connect through dblink without a password', quote_ident(current_user)
            USING ERRCODE = '42501',
                  HINT = pg_catalog.format('A superuser runs: ALTER ROLE %I IN DATABASE %I SET memsql.dblink_connstr = '
                                '''host=... dbname=%s user=%s password=...'' (or the name of a dblink_fdw foreign '
                                'server with a user mapping; see docs/security.md).', current_user,
                                current_database(), current_database(), current_user);
    END IF;
    sockets := split_part(current_setting('unix_socket_directories'), ',', 1);
    host := CASE WHEN btrim(sockets) <> '' AND left(btrim(sockets), 1) <> '@' THEN btrim(sockets)
                 ELSE coalesce(host(inet_server_addr()), 'localhost') END;
    RETURN pg_catalog.format('host=''%s'' port=%s dbname=''%s'' user=''%s'' application_name=''memsql-query-embedding''',
                  replace(replace(host, '\', '\\'), '''', '\'''), current_setting('port'),
                  replace(replace(current_database(), '\', '\\'), '''', '\'''),
                  replace(replace(current_user, '\', '\\'), '''', '\'''));
END $$;
COMMENT ON FUNCTION memsql.dblink_connstr() IS
$c$libpq connection string query_embedding uses to queue a request in its own transaction (dblink).
Args: none.
Returns the setting memsql.dblink_connstr when set (e.g. ALTER ROLE memsql IN DATABASE memsql SET
  memsql.dblink_connstr = 'host=/var/run/postgresql dbname=memsql user=memsql password=...', or the name of a
  dblink_fdw foreign server whose user mapping holds the password), else this server's first unix socket directory
  (or its TCP address), port, database and current user. A role that is not a superuser needs the setting, with a
  password (dblink's rule); setting it for a role takes a superuser (docs/security.md).
Errors: 42501 the setting is not set and the role may not read the server's settings (not a superuser nor a member
  of pg_read_all_settings). Source: sql/functions/60_worker.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.query_embedding(query text, timeout_ms integer DEFAULT NULL)
RETURNS vector
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    q         text := btrim(query_embedding.query, E' \t\r\n');
    wait_ms   integer;
    h         text;
    e         vector;
    link      constant text := 'memsql_query_embedding';
    deadline  timestamptz;
    via_link  boolean;
BEGIN
    IF q IS NULL OR q = '' THEN
        RETURN NULL;
    END IF;
    -- namespace roles: a role limited to its namespaces (memsql.role_create) may not read the cache, which holds the query
    -- texts of every namespace: no query embedding for it (memory_search then searches lexically, with a NOTICE)
    IF NOT has_table_privilege('memsql.query_embedding_cache', 'SELECT, INSERT, UPDATE') THEN
        RAISE NOTICE 'query_embedding: this role may not use the shared query embedding cache, no query embedding'
            USING HINT = 'Pass the query embeddings (the Python client and the CLI do), or search as the owner.';
        RETURN NULL;
    END IF;
    -- (end of namespace roles)
    wait_ms := coalesce(query_embedding.timeout_ms,
                        nullif(current_setting('memsql.query_embedding_timeout_ms', true), '')::integer, 1000);
    PERFORM memsql.check_argument('query_embedding', 'timeout_ms', wait_ms, 0, 60000,
                                  'The wait for the worker in milliseconds, e.g. 1000; 0 = cache only.');
    h := encode(sha256(convert_to(q, 'UTF8')), 'hex');

    SELECT c.embedding INTO e FROM memsql.query_embedding_cache c WHERE c.query_hash = h;
    IF e IS NOT NULL THEN
        -- least-recently-used bookkeeping, at most once a minute per entry; never waits for a row lock and never
        -- writes in a read-only transaction
        IF current_setting('transaction_read_only') = 'off' THEN
            UPDATE memsql.query_embedding_cache c SET last_used_at = now()
            WHERE c.query_hash = (SELECT x.query_hash FROM memsql.query_embedding_cache x
                                  WHERE x.query_hash = h AND x.last_used_at < now() - interval '1 minute'
                                  FOR UPDATE SKIP LOCKED);
        END IF;
        RETURN e;
    END IF;
    IF wait_ms = 0 THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
                   WHERE a.datname = current_database() AND a.application_name = 'memsql-worker') THEN
        RAISE NOTICE 'query_embedding: no memsql worker is connected to database %, no query embedding',
            current_database()
            USING HINT = 'Start one with `memsql worker start` (or `memsql db start`).';
        RETURN NULL;
    END IF;

    -- queue the request in an autonomous transaction: its NOTIFY is delivered at its own commit
    BEGIN
        IF NOT (link = ANY (coalesce(dblink_get_connections(), '{}'))) THEN
            PERFORM dblink_connect(link, memsql.dblink_connstr());
        END IF;
        PERFORM dblink_exec(link, pg_catalog.format(
            'INSERT INTO memsql.query_embedding_cache (query_hash, query) VALUES (%L, %L) '
            'ON CONFLICT (query_hash) DO NOTHING; NOTIFY memsql_embed, ''query''', h, q));
    EXCEPTION WHEN OTHERS THEN
        BEGIN
            PERFORM dblink_disconnect(link);  -- a broken link is opened again by the next call
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
        RAISE NOTICE 'query_embedding: could not queue the request for the worker: % (SQLSTATE %)', SQLERRM, SQLSTATE
            USING HINT = 'memsql init creates the dblink extension when its role may (a superuser); a role that is '
                         'not a superuser needs memsql.dblink_connstr, with a password (docs/security.md).';
        RETURN NULL;
    END;

    via_link := current_setting('transaction_isolation') <> 'read committed';
    deadline := clock_timestamp() + wait_ms * interval '1 millisecond';
    LOOP
        IF via_link THEN  -- this transaction's snapshot would never show the answer
            BEGIN
                SELECT r.v::vector INTO e
                FROM dblink(link, pg_catalog.format('SELECT embedding::text FROM memsql.query_embedding_cache '
                                         'WHERE query_hash = %L', h)) AS r(v text);
            EXCEPTION WHEN OTHERS THEN
                RAISE NOTICE 'query_embedding: lost the link while waiting for the worker: % (SQLSTATE %)',
                    SQLERRM, SQLSTATE;
                RETURN NULL;
            END;
        ELSE
            SELECT c.embedding INTO e FROM memsql.query_embedding_cache c WHERE c.query_hash = h;
        END IF;
        EXIT WHEN e IS NOT NULL;
        IF clock_timestamp() >= deadline THEN
            RAISE NOTICE 'query_embedding: the memsql worker did not answer within % ms, no query embedding', wait_ms
                USING HINT = 'Check `memsql worker status`; raise the wait with SET memsql.query_embedding_timeout_ms.';
            RETURN NULL;
        END IF;
        PERFORM pg_sleep(0.002);
    END LOOP;
    RETURN e;
END
$$;
COMMENT ON FUNCTION memsql.query_embedding(text, integer) IS
$c$The all-MiniLM-L6-v2 embedding of a query, for SQL callers that have none (memory_search calls it when
query_embeddings is NULL). Read from memsql.query_embedding_cache by the exact text (trimmed); on a miss, asked of the
running memsql worker (a request queued through dblink in its own transaction, NOTIFY memsql_embed) and awaited.
Args: query text; timeout_ms integer 0..60000 (NULL = setting memsql.query_embedding_timeout_ms, else 1000): longest
  wait for the worker, 0 = cache only.
Returns vector(384), unit length; NULL (with a NOTICE saying why) for an empty query, when no worker is connected to
  this database (at once), when the request cannot be queued (dblink missing or refused), after the timeout, or for
  a role without access to the shared cache (one made by memsql.role_create: the cache holds every namespace's query
  texts). Never raises for a missing worker.
Errors: MS002 timeout_ms out of range. Source: sql/functions/60_worker.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.query_embedding_requests(max_rows integer DEFAULT 64)
RETURNS TABLE (query_hash text, query text)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM memsql.check_argument('query_embedding_requests', 'max_rows', query_embedding_requests.max_rows, 1, 10000,
                                  'e.g. max_rows => 64.');
    RETURN QUERY
    SELECT c.query_hash, c.query FROM memsql.query_embedding_cache c
    WHERE c.embedding IS NULL
    ORDER BY c.requested_at, c.query_hash
    LIMIT query_embedding_requests.max_rows;
END
$$;
COMMENT ON FUNCTION memsql.query_embedding_requests(integer) IS
$c$Query texts waiting for an embedding (rows of memsql.query_embedding_cache without a vector), oldest first.
Called by the worker. Args: max_rows integer 1..10000 (64). Returns (query_hash, query).
Errors: MS002 max_rows out of range. Source: sql/functions/60_worker.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.query_embedding_store(query_hashes text[], embeddings vector[])
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
DECLARE
    n        integer;
    max_rows integer;
BEGIN
    IF query_hashes IS NULL OR embeddings IS NULL OR pg_catalog.cardinality(query_hashes) <> pg_catalog.cardinality(embeddings)
       OR pg_catalog.array_position(query_hashes, NULL) IS NOT NULL OR pg_catalog.array_position(embeddings, NULL) IS NOT NULL THEN
        PERFORM memsql.raise_invalid('query_embedding_store: pass one non-NULL embedding per non-NULL query hash',
                                     'Same order as memsql.query_embedding_requests returned them.');
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(embeddings) AS u(e) WHERE vector_dims(u.e) <> 384) THEN
        RAISE EXCEPTION 'query_embedding_store: embeddings must be 384-dimensional'
            USING ERRCODE = 'MS005', HINT = 'Embed with all-MiniLM-L6-v2 (memsql.embedding).';
    END IF;
    PERFORM memsql.check_vectors('query_embedding_store', 'embedding', embeddings);   -- zero or halfvec-lossy: MS005
    UPDATE memsql.query_embedding_cache c
    SET embedding = u.e, embedded_at = now(), last_used_at = now()
    FROM unnest(query_hashes, embeddings) AS u(h, e)
    WHERE c.query_hash = u.h;
    GET DIAGNOSTICS n = ROW_COUNT;
    -- keep the cache bounded: evict the least recently used rows beyond the limit, skipping rows a caller holds
    SELECT s.value::integer INTO max_rows FROM memsql.settings s WHERE s.key = 'query_cache_max_rows';
    DELETE FROM memsql.query_embedding_cache c
    WHERE c.query_hash IN (
        SELECT x.query_hash FROM memsql.query_embedding_cache x
        WHERE x.embedding IS NOT NULL
        ORDER BY x.last_used_at DESC, x.query_hash
        OFFSET greatest(coalesce(max_rows, 10000), 1)
        FOR UPDATE SKIP LOCKED);
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.query_embedding_store(text[], vector[]) IS
$c$Stores query embeddings computed by the worker, then evicts the least recently used cached rows beyond
settings.query_cache_max_rows (10000). Args: query_hashes text[] (from query_embedding_requests), embeddings
vector(384)[] (one per hash, same order). Returns integer: requests answered (hashes no longer present are skipped).
Errors: MS002 NULLs or cardinalities differ, MS005 a vector not 384-d. Source: sql/functions/60_worker.sql.$c$;

CREATE OR REPLACE VIEW memsql.worker_status AS
SELECT (SELECT count(*) FROM pg_catalog.pg_stat_activity a
        WHERE a.datname = current_database() AND a.application_name = 'memsql-worker')        AS workers_connected,
       (SELECT min(a.backend_start) FROM pg_catalog.pg_stat_activity a
        WHERE a.datname = current_database() AND a.application_name = 'memsql-worker')        AS connected_since,
       (SELECT count(*) FROM memsql.memories m WHERE m.embedding IS NULL)                      AS memories_pending,
       (SELECT count(*) FROM memsql.query_embedding_cache c WHERE c.embedding IS NULL)          AS queries_pending,
       (SELECT count(*) FROM memsql.query_embedding_cache c WHERE c.embedding IS NOT NULL)      AS queries_cached,
       (SELECT s.value::integer FROM memsql.settings s WHERE s.key = 'query_cache_max_rows')  AS query_cache_max_rows,
       EXISTS (SELECT 1 FROM pg_catalog.pg_extension x WHERE x.extname = 'dblink')             AS dblink_installed,
       (SELECT count(*) FROM memsql.memory_windows w WHERE w.embeddings IS NULL)               AS windows_pending;
COMMENT ON VIEW memsql.worker_status IS
$c$One row: memsql worker connections to this database (application_name memsql-worker) and since when, the
embedding backlog (memories without embedding in every namespace; per namespace: memory_stats.without_embedding),
query requests waiting, cached query embeddings and the cache bound, whether dblink is installed, and the window
backlog (memories whose window embeddings are still to be computed: memory_pending_windows).
Source: sql/functions/60_worker.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- The embedding backlog

CREATE OR REPLACE FUNCTION memsql.memory_pending_embeddings(namespace text DEFAULT NULL, max_rows integer DEFAULT 1000)
RETURNS SETOF memsql.pending_embedding
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    PERFORM memsql.check_argument('memory_pending_embeddings', 'max_rows', memory_pending_embeddings.max_rows, 1, 100000,
                                  'Fetch the backlog in batches, e.g. max_rows => 1000.');
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
Errors: MS002 max_rows out of range. Source: sql/functions/60_worker.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_set_embeddings(namespace text, memory_ids bigint[], embeddings vector[])
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
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
    IF pg_catalog.cardinality(memory_set_embeddings.memory_ids) <> pg_catalog.cardinality(memory_set_embeddings.embeddings) THEN
        PERFORM memsql.raise_invalid(
            pg_catalog.format('memory_set_embeddings: %s ids but %s embeddings', pg_catalog.cardinality(memory_set_embeddings.memory_ids),
                   pg_catalog.cardinality(memory_set_embeddings.embeddings)),
            'Pass exactly one embedding per id, in the same order.');
    END IF;
    IF pg_catalog.array_position(memory_set_embeddings.memory_ids, NULL) IS NOT NULL
       OR (SELECT count(DISTINCT u.id) FROM pg_catalog.unnest(memory_set_embeddings.memory_ids) AS u(id))
          <> pg_catalog.cardinality(memory_set_embeddings.memory_ids) THEN
        PERFORM memsql.raise_invalid('memory_set_embeddings: memory_ids holds a NULL or a duplicate id',
                                     'Pass each id once.');
    END IF;
    SELECT u.i INTO bad_pos FROM pg_catalog.unnest(memory_set_embeddings.embeddings) WITH ORDINALITY AS u(e, i)
    WHERE u.e IS NULL ORDER BY u.i LIMIT 1;
    IF FOUND THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_set_embeddings: embedding %s is NULL', bad_pos),
                                     'Pass a vector for every id.');
    END IF;
    SELECT vector_dims(u.e) INTO bad_dim FROM pg_catalog.unnest(memory_set_embeddings.embeddings) AS u(e)
    WHERE vector_dims(u.e) <> 384 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'memory_set_embeddings: embeddings must be 384-dimensional, got %', bad_dim
            USING ERRCODE = 'MS005', HINT = 'Embed with all-MiniLM-L6-v2 (memsql.embedding).';
    END IF;
    PERFORM memsql.check_vectors('memory_set_embeddings', 'embedding', memory_set_embeddings.embeddings);

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
Errors: MS002 NULL argument or element, cardinalities differ, duplicate id; MS005 a vector not 384-d, zero, or
  not searchable alike in half precision (memsql.vector_problem).
Source: sql/functions/60_worker.sql.$c$;

-- ---------------------------------------------------------------------------------------------
-- The window backlog (memsql.memory_windows)

CREATE OR REPLACE FUNCTION memsql.memory_pending_windows(namespace text DEFAULT NULL, max_rows integer DEFAULT 1000,
                                                         memory_ids bigint[] DEFAULT NULL)
RETURNS SETOF memsql.pending_window
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
BEGIN
    PERFORM memsql.check_argument('memory_pending_windows', 'max_rows', memory_pending_windows.max_rows, 1, 100000,
                                  'Fetch the backlog in batches, e.g. max_rows => 1000.');
    -- A plan linear in the batch whatever the statistics say. The batch of the backlog comes first (the partial
    -- index memory_windows_pending, at most max_rows rows), then each row's memory and document by their primary
    -- keys: the lateral subqueries (OFFSET 0: not flattened into joins) are lookups of one row, never a join the
    -- planner may turn around. And the plan is made again at every call (plan_cache_mode): PL/pgSQL would otherwise
    -- keep for the session the generic plan it made after five calls, and the worker's session makes it while the
    -- tables are empty (an idle worker polls every second); nothing invalidates it until the tables are analysed,
    -- which a bulk load does not wait for. With the three-table join such a plan matched windows with documents on
    -- the namespace alone, then each pair with the namespace's memories: 6.6 s for 300 windows, more than 10 minutes
    -- for 3,000 (a fresh database, the adds in one transaction, no ANALYZE); now 9 ms and 2 ms. (On tables of a few
    -- hundred rows never analysed, the planner may read a document through another index of the namespace: the 9 ms.)
    RETURN QUERY
    WITH batch AS MATERIALIZED (
        SELECT w.namespace, w.memory_id
        FROM memsql.memory_windows w
        WHERE w.embeddings IS NULL
          AND (memory_pending_windows.namespace IS NULL OR w.namespace = memory_pending_windows.namespace)
          AND (memory_pending_windows.memory_ids IS NULL OR w.memory_id = ANY (memory_pending_windows.memory_ids))
        ORDER BY w.namespace, w.memory_id
        LIMIT memory_pending_windows.max_rows
    )
    SELECT b.namespace, b.memory_id, m.content, d.title
    FROM batch b
    CROSS JOIN LATERAL (SELECT x.content, x.document_id FROM memsql.memories x
                        WHERE x.namespace = b.namespace AND x.id = b.memory_id OFFSET 0) m
    CROSS JOIN LATERAL (SELECT y.title FROM memsql.documents y
                        WHERE y.namespace = b.namespace AND y.id = m.document_id OFFSET 0) d
    ORDER BY b.namespace, b.memory_id;
END
$$;
COMMENT ON FUNCTION memsql.memory_pending_windows(text, integer, bigint[]) IS
$c$The window backlog: memories whose window embeddings are still to be computed (memsql.memory_windows.embeddings
NULL: written or embedded again since).
Args: namespace text (NULL = every namespace), max_rows integer 1..100000 (1000), memory_ids bigint[] (NULL = any;
  else only these: the memories a client just wrote).
Returns (namespace, memory_id, content, title: the document's title) by namespace and id; cut the content into windows
(the Python function memsql.embedding.window_texts), embed them and pass the vectors to memory_set_windows.
Errors: MS002 max_rows out of range. Source: sql/functions/60_worker.sql.$c$;

CREATE OR REPLACE FUNCTION memsql.memory_set_windows(namespace text, memory_ids bigint[], window_counts integer[],
                                                     embeddings vector[])
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    fn   CONSTANT text := 'memory_set_windows';
    ns   text := memory_set_windows.namespace;
    ids  bigint[] := memory_set_windows.memory_ids;
    cnt  integer[] := memory_set_windows.window_counts;
    vecs vector[] := memory_set_windows.embeddings;
    n    integer;
BEGIN
    IF ns IS NULL OR ids IS NULL OR cnt IS NULL OR vecs IS NULL THEN
        PERFORM memsql.raise_invalid('memory_set_windows: namespace, memory_ids, window_counts and embeddings must not be NULL',
                                     'Pass the namespace, the ids, each id''s number of windows and the windows'' vectors.');
    END IF;
    IF pg_catalog.cardinality(ids) <> pg_catalog.cardinality(cnt) THEN
        PERFORM memsql.raise_invalid(pg_catalog.format('memory_set_windows: %s ids but %s window counts', pg_catalog.cardinality(ids),
                                            pg_catalog.cardinality(cnt)),
                                     'Pass one window count per id (0 = the memory fits one window).');
    END IF;
    IF pg_catalog.array_position(ids, NULL) IS NOT NULL
       OR (SELECT count(DISTINCT u.id) FROM pg_catalog.unnest(ids) AS u(id)) <> pg_catalog.cardinality(ids) THEN
        PERFORM memsql.raise_invalid('memory_set_windows: memory_ids holds a NULL or a duplicate id', 'Pass each id once.');
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.unnest(cnt) AS u(c) WHERE u.c IS NULL OR u.c < 0 OR u.c > 4) THEN
        PERFORM memsql.raise_invalid('memory_set_windows: a window count is NULL or outside 0..4',
                                     'Windows cover the model window (256 word pieces): at most 4 (the Python '
                                     'function memsql.embedding.window_texts); 0 when the memory fits one window.');
    END IF;
    IF (SELECT coalesce(sum(u.c), 0) FROM pg_catalog.unnest(cnt) AS u(c)) <> pg_catalog.cardinality(vecs) THEN
        PERFORM memsql.raise_invalid(
            pg_catalog.format('memory_set_windows: the window counts add up to %s but %s embeddings were passed',
                   (SELECT sum(u.c) FROM pg_catalog.unnest(cnt) AS u(c)), pg_catalog.cardinality(vecs)),
            'Pass the windows'' vectors of every id in order, as many as its window count.');
    END IF;
    IF pg_catalog.array_position(vecs, NULL) IS NOT NULL THEN
        PERFORM memsql.raise_invalid('memory_set_windows: an embedding is NULL', 'Pass a vector for every window.');
    END IF;
    PERFORM memsql.check_vectors(fn, 'window embedding', vecs);
    WITH u AS (
        SELECT u.id, u.c, (sum(u.c) OVER (ORDER BY u.ord) - u.c)::integer AS off
        FROM unnest(ids, cnt) WITH ORDINALITY AS u(id, c, ord)
    )
    UPDATE memsql.memory_windows w
    SET embeddings = CASE WHEN u.c = 0 THEN '{}'::vector[] ELSE vecs[u.off + 1 : u.off + u.c] END
    FROM u
    WHERE w.namespace = ns AND w.memory_id = u.id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;
COMMENT ON FUNCTION memsql.memory_set_windows(text, bigint[], integer[], vector[]) IS
$c$Stores (replaces) the window embeddings of memories that have a row in memsql.memory_windows (the backlog of
memory_pending_windows, or a recomputation).
Args: namespace text, memory_ids bigint[] (distinct), window_counts integer[] 0..4 (one per id: its number of
  windows, 0 = it fits one window and is scored by its own embedding; windows cover the model window of 256
  pieces), embeddings vector(384)[] (the windows' unit vectors, id after id in the order of memory_ids,
  sum(window_counts) in all).
Returns integer: memories updated (an id without a row in memsql.memory_windows, e.g. deleted meanwhile, is skipped).
Errors: MS002 NULL argument or element, cardinalities differ, duplicate id, a count outside 0..4, counts not
  adding up to the embeddings; MS005 a vector not 384-d, zero, or not searchable alike in half precision
  (memsql.vector_problem). Source: sql/functions/60_worker.sql.$c$;
