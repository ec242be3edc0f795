-- memsql schema, version 1. Released files are never edited: add V0002__... instead.
-- Every unique key and foreign key of a namespaced table includes namespace, so the tables can be
-- distributed by namespace (Citus). knowledge_types and settings are small reference tables.

CREATE SCHEMA IF NOT EXISTS memsql;

-- English with accents folded: "cafe" matches "caf\u00e9". Immutable, so usable in generated columns.
CREATE TEXT SEARCH CONFIGURATION memsql.english (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION memsql.english
    ALTER MAPPING FOR hword, hword_part, word WITH unaccent, english_stem;
COMMENT ON TEXT SEARCH CONFIGURATION memsql.english IS
    'English stemming and stop words with accents folded (unaccent); the lexical arm''s config.';

-- Number of indexed tokens of a tsvector (stop words excluded): the BM25 document length.
-- No SET clause: inlinable; it calls pg_catalog functions only.
CREATE FUNCTION memsql.tsvector_token_count(v tsvector) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(v) AS u);
COMMENT ON FUNCTION memsql.tsvector_token_count(tsvector) IS
    'Indexed tokens in a tsvector (sum of position counts; a lexeme without positions counts 1). '
    'Args: v tsvector. Returns integer >= 0. Used as the BM25 document length.';

-- Exact technical tokens that the english parser splits or drops: URLs, e-mail addresses, paths,
-- dotted.names, snake_case, camelCase, version strings, C++ / C# / .NET. Lower-cased, deduplicated.
CREATE FUNCTION memsql.tech_terms(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT coalesce(array_agg(DISTINCT x.term ORDER BY x.term), '{}')
    FROM (
        SELECT rtrim(lower(m[1]), '.,;:!?)]}''"') AS term
        FROM regexp_matches(t,
            '('
            || '[a-z][a-z0-9+.-]*://[^\s<>"''()]+'
            || '|[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+'
            || '|(?:~|\.{1,2})?(?:/[A-Za-z0-9._-]+){2,}/?'
            || '|[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+)+'
            || '|[A-Za-z_][A-Za-z0-9_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+'
            || '|[A-Za-z0-9]*_[A-Za-z0-9_]+'
            || '|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*'
            || '|[vV]?[0-9]+(?:\.[0-9]+)+(?:[-+][A-Za-z0-9.]+)?'
            || '|\m[A-Za-z]\+\+|\m[A-Za-z]#|\.NET\M'
            || ')', 'g') AS m
    ) x
    WHERE length(x.term) BETWEEN 2 AND 200 AND x.term !~ '^_+$'
);
COMMENT ON FUNCTION memsql.tech_terms(text) IS
    'Exact technical tokens of a text, lower-cased: URLs, e-mail addresses, file paths, dotted.names, snake_case, '
    'camelCase, version strings, C++/C#/.NET. Args: t text. Returns text[] sorted, distinct, 2..200 chars each.';

-- The lexical representation of a text, for memories and queries alike: english lexemes plus the exact
-- technical tokens the parser would split (a query for memory_search matches the lexeme "memory_search").
-- Technical tokens get position 1 (weights, and so ts_filter, need a position).
CREATE FUNCTION memsql.memory_tsvector(t text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN (
    SELECT v.base || ts_delete(coalesce(tech.vec, ''::tsvector), tsvector_to_array(v.base))
    FROM (SELECT to_tsvector('memsql.english'::regconfig, t) AS base) v,
         (SELECT string_agg('''' || replace(replace(x, '\', '\\'), '''', '''''') || ''':1', ' ')::tsvector AS vec
          FROM unnest(memsql.tech_terms(t)) AS x) tech
);
COMMENT ON FUNCTION memsql.memory_tsvector(text) IS
    'tsvector of a text under memsql.english (stemmed, stop words dropped, accents folded) plus its exact '
    'technical tokens (memsql.tech_terms) at position 1. Args: t text. Returns tsvector.';

CREATE TABLE memsql.settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);
COMMENT ON TABLE memsql.settings IS
    'Schema-wide settings (reference table): embedding_model, embedding_dimension.';
INSERT INTO memsql.settings (key, value) VALUES
    ('embedding_model', 'all-MiniLM-L6-v2'),
    ('embedding_dimension', '384');

CREATE TABLE memsql.knowledge_types (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    half_life_days  double precision
        CONSTRAINT knowledge_types_half_life_positive CHECK (half_life_days IS NULL OR half_life_days > 0),
    description     text NOT NULL DEFAULT ''
);
COMMENT ON TABLE memsql.knowledge_types IS
    'Kinds of knowledge and how fast they fade: half_life_days NULL = never decays, else > 0 days. '
    'Rows, not code: UPDATE a half-life or INSERT a new type.';
INSERT INTO memsql.knowledge_types (name, half_life_days, description) VALUES
    ('principle',    NULL,  'Lasting rules and decisions; never decays.'),
    ('paper',        180,   'Research papers and reference material; half-life about six months.'),
    ('news',         21,    'News and status updates; half-life three weeks.'),
    ('experiment',   90,    'Experiment logs and project notes; half-life about a project''s length.'),
    ('note',         365,   'Default for notes and documents; half-life one year.'),
    ('conversation', 90,    'Default for conversation turns; half-life three months.');

CREATE TABLE memsql.documents (
    namespace       text NOT NULL CHECK (length(namespace) BETWEEN 1 AND 200),
    id              bigint GENERATED BY DEFAULT AS IDENTITY,
    source_key      text NOT NULL CHECK (source_key <> ''),
    source_uri      text,
    adapter         text NOT NULL,
    title           text,
    content_hash    text NOT NULL,
    knowledge_type  text NOT NULL REFERENCES memsql.knowledge_types (name) ON UPDATE CASCADE,
    source_date     timestamptz,
    tags            text[] NOT NULL DEFAULT '{}',
    metadata        jsonb NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, id),
    UNIQUE (namespace, source_key)
);
COMMENT ON TABLE memsql.documents IS
    'One row per ingested source (file, conversation, note). source_key is its stable identity '
    'within a namespace; content_hash decides whether a re-ingest changes anything.';

CREATE TABLE memsql.memories (
    namespace         text NOT NULL,
    id                bigint GENERATED BY DEFAULT AS IDENTITY,
    document_id       bigint NOT NULL,
    chunk_index       integer NOT NULL CHECK (chunk_index >= 0),
    content           text NOT NULL CHECK (content <> ''),
    content_hash      text NOT NULL,
    embedding         vector(384)
        CONSTRAINT memories_embedding_nonzero CHECK (embedding IS NULL OR vector_norm(embedding) > 0),
    tsv               tsvector GENERATED ALWAYS AS (memsql.memory_tsvector(content)) STORED,
    tsv_len           integer GENERATED ALWAYS AS
                          (memsql.tsvector_token_count(memsql.memory_tsvector(content))) STORED,
    knowledge_type    text NOT NULL REFERENCES memsql.knowledge_types (name) ON UPDATE CASCADE,
    importance        real CHECK (importance IS NULL OR (importance >= 0 AND importance <= 1)),
    topics            text[] NOT NULL DEFAULT '{}',
    tags              text[] NOT NULL DEFAULT '{}',
    metadata          jsonb NOT NULL DEFAULT '{}',
    source_date       timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, id),
    UNIQUE (namespace, document_id, chunk_index),
    FOREIGN KEY (namespace, document_id) REFERENCES memsql.documents (namespace, id) ON DELETE CASCADE
);
COMMENT ON TABLE memsql.memories IS
    'One row per chunk: content, its 384-d embedding (NULL until embedded), a generated tsvector '
    '(memsql.memory_tsvector), knowledge_type, importance 0..1 (NULL = unset), topics, tags, source_date.';

-- Access statistics live in a narrow table: updating a wide memories row (1.5 kB vector) is rarely a
-- HOT update, so every search would re-insert its results into the HNSW and GIN indexes.
CREATE TABLE memsql.memory_access (
    namespace         text NOT NULL,
    memory_id         bigint NOT NULL,
    access_count      bigint NOT NULL DEFAULT 0 CHECK (access_count >= 0),
    last_accessed_at  timestamptz,
    PRIMARY KEY (namespace, memory_id),
    FOREIGN KEY (namespace, memory_id) REFERENCES memsql.memories (namespace, id) ON DELETE CASCADE
) WITH (fillfactor = 70);
COMMENT ON TABLE memsql.memory_access IS
    'How often and when each memory was returned by memory_search (touch => true); no row = never accessed.';

CREATE INDEX memories_embedding_hnsw ON memsql.memories
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX memories_tsv_gin ON memsql.memories USING gin (tsv);
CREATE INDEX memories_document ON memsql.memories (namespace, document_id, chunk_index);

-- BM25 term statistics, kept exact by statement triggers in the transactions that write memories.
CREATE TABLE memsql.term_stats (
    namespace  text NOT NULL,
    lexeme     text NOT NULL,
    df         bigint NOT NULL CHECK (df >= 0),
    PRIMARY KEY (namespace, lexeme)
);
COMMENT ON TABLE memsql.term_stats IS
    'Document frequency of each lexeme per namespace (memories counted as documents), for BM25 idf.';

CREATE TABLE memsql.namespace_stats (
    namespace  text PRIMARY KEY,
    doc_count  bigint NOT NULL CHECK (doc_count >= 0),
    total_len  bigint NOT NULL CHECK (total_len >= 0)
);
COMMENT ON TABLE memsql.namespace_stats IS
    'Memories and indexed tokens per namespace, for BM25 (N and average document length).';

CREATE TABLE memsql.archive (
    namespace         text NOT NULL,
    id                bigint NOT NULL,
    document_id       bigint NOT NULL,
    chunk_index       integer NOT NULL,
    content           text NOT NULL,
    content_hash      text NOT NULL,
    knowledge_type    text NOT NULL,
    importance        real,
    topics            text[] NOT NULL DEFAULT '{}',
    tags              text[] NOT NULL DEFAULT '{}',
    metadata          jsonb NOT NULL DEFAULT '{}',
    source_date       timestamptz,
    created_at        timestamptz NOT NULL,
    last_accessed_at  timestamptz,
    access_count      bigint NOT NULL DEFAULT 0,
    score             double precision,
    reason            text NOT NULL,
    archived_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, id)
);
COMMENT ON TABLE memsql.archive IS
    'Memories removed by forgetting, with their score, reason and time; the vector is dropped and '
    're-computed on restore.';

-- Statement-level triggers keep term_stats and namespace_stats exact.
CREATE FUNCTION memsql.stats_after_insert() RETURNS trigger
LANGUAGE plpgsql SET search_path = memsql, pg_catalog AS $$
BEGIN
    INSERT INTO memsql.namespace_stats AS s (namespace, doc_count, total_len)
    SELECT n.namespace, count(*), sum(n.tsv_len) FROM new_rows n GROUP BY n.namespace ORDER BY n.namespace
    ON CONFLICT (namespace) DO UPDATE
        SET doc_count = s.doc_count + excluded.doc_count, total_len = s.total_len + excluded.total_len;
    INSERT INTO memsql.term_stats AS t (namespace, lexeme, df)
    SELECT n.namespace, u.lexeme, count(*)
    FROM new_rows n CROSS JOIN LATERAL unnest(n.tsv) AS u
    GROUP BY n.namespace, u.lexeme ORDER BY n.namespace, u.lexeme
    ON CONFLICT (namespace, lexeme) DO UPDATE SET df = t.df + excluded.df;
    RETURN NULL;
END $$;

CREATE FUNCTION memsql.stats_after_delete() RETURNS trigger
LANGUAGE plpgsql SET search_path = memsql, pg_catalog AS $$
BEGIN
    UPDATE memsql.namespace_stats s
    SET doc_count = s.doc_count - d.cnt, total_len = s.total_len - d.len
    FROM (SELECT o.namespace, count(*) AS cnt, sum(o.tsv_len) AS len
          FROM old_rows o GROUP BY o.namespace ORDER BY o.namespace) d
    WHERE s.namespace = d.namespace;
    UPDATE memsql.term_stats t
    SET df = t.df - d.cnt
    FROM (SELECT o.namespace, u.lexeme, count(*) AS cnt
          FROM old_rows o CROSS JOIN LATERAL unnest(o.tsv) AS u
          GROUP BY o.namespace, u.lexeme ORDER BY o.namespace, u.lexeme) d
    WHERE t.namespace = d.namespace AND t.lexeme = d.lexeme;
    DELETE FROM memsql.term_stats t
    USING (SELECT DISTINCT o.namespace, u.lexeme FROM old_rows o CROSS JOIN LATERAL unnest(o.tsv) AS u) d
    WHERE t.namespace = d.namespace AND t.lexeme = d.lexeme AND t.df = 0;
    RETURN NULL;
END $$;

CREATE FUNCTION memsql.memories_content_immutable() RETURNS trigger
LANGUAGE plpgsql SET search_path = memsql, pg_catalog AS $$
BEGIN
    RAISE EXCEPTION 'memory % : content and namespace cannot be updated in place', OLD.id
        USING ERRCODE = 'MS001',
              HINT = 'Delete the document and ingest it again (memsql ingest replaces changed documents).';
END $$;

COMMENT ON FUNCTION memsql.stats_after_insert() IS
    'Trigger (AFTER INSERT, per statement): adds new memories to term_stats and namespace_stats.';
COMMENT ON FUNCTION memsql.stats_after_delete() IS
    'Trigger (AFTER DELETE, per statement): subtracts deleted memories from term_stats and namespace_stats.';
COMMENT ON FUNCTION memsql.memories_content_immutable() IS
    'Trigger (BEFORE UPDATE): raises MS001, memory content and namespace are immutable.';

CREATE TRIGGER memories_stats_insert AFTER INSERT ON memsql.memories
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memsql.stats_after_insert();
CREATE TRIGGER memories_stats_delete AFTER DELETE ON memsql.memories
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memsql.stats_after_delete();
CREATE TRIGGER memories_content_immutable BEFORE UPDATE OF content, namespace ON memsql.memories
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content OR OLD.namespace IS DISTINCT FROM NEW.namespace)
    EXECUTE FUNCTION memsql.memories_content_immutable();
