-- memory_search gains guaranteed candidates (priority_*) and a dense similarity floor: its argument list
-- changes, so the old signature is dropped here (sql/functions/20_search.sql creates the new one).
DROP FUNCTION IF EXISTS memsql.memory_search(text, vector[], integer, text, text[], text[], integer, integer,
    double precision, double precision, double precision, double precision, boolean, double precision,
    double precision, double precision, double precision, boolean);

-- Priority memories (guaranteed candidates of memory_search): few, so a partial index finds them without a scan.
CREATE INDEX memories_priority ON memsql.memories (namespace)
    WHERE knowledge_type = 'principle' OR importance >= 0.7;

-- BM25 postings: one row per (memory, lexeme) with its term frequency and the memory's length. The lexical
-- arm reads the postings of the query's lexemes through the primary key instead of unpacking every matching
-- tsvector, so its cost follows the length of the posting lists, not the size of the documents.
CREATE TABLE memsql.postings (
    namespace  text NOT NULL,
    lexeme     text NOT NULL,
    memory_id  bigint NOT NULL,
    tf         real NOT NULL CHECK (tf > 0),
    doc_len    integer NOT NULL CHECK (doc_len >= 0),
    -- covering key: a lexeme's postings are read by an index-only scan, contiguous in the index
    PRIMARY KEY (namespace, lexeme, memory_id) INCLUDE (tf, doc_len)
);
COMMENT ON TABLE memsql.postings IS
    'BM25 inverted index: term frequency of each lexeme in each memory, with the memory''s length (tsv_len); kept '
    'exact by the statement triggers on memsql.memories.';

INSERT INTO memsql.postings (namespace, lexeme, memory_id, tf, doc_len)
SELECT m.namespace, u.lexeme, m.id, coalesce(array_length(u.positions, 1), 1), m.tsv_len
FROM memsql.memories m CROSS JOIN LATERAL unnest(m.tsv) AS u;

CREATE OR REPLACE FUNCTION memsql.stats_after_insert() RETURNS trigger
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
    INSERT INTO memsql.postings (namespace, lexeme, memory_id, tf, doc_len)
    SELECT n.namespace, u.lexeme, n.id, coalesce(array_length(u.positions, 1), 1), n.tsv_len
    FROM new_rows n CROSS JOIN LATERAL unnest(n.tsv) AS u;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION memsql.stats_after_delete() RETURNS trigger
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
    DELETE FROM memsql.postings p
    USING (SELECT o.namespace, u.lexeme, o.id FROM old_rows o CROSS JOIN LATERAL unnest(o.tsv) AS u) d
    WHERE p.namespace = d.namespace AND p.lexeme = d.lexeme AND p.memory_id = d.id;
    RETURN NULL;
END $$;

-- memsql.lexeme_tsquery is no longer used: the lexical arm reads memsql.postings.
DROP FUNCTION IF EXISTS memsql.lexeme_tsquery(text[]);
