-- Corpus rarity of query words, for query enrichment (memsql/enrich.py).

CREATE OR REPLACE FUNCTION memsql.term_idf(words text[], namespace text DEFAULT 'default')
RETURNS TABLE (word text, idf double precision)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT w.word,
           (SELECT min(ln(1 + (s.doc_count - coalesce(t.df, 0) + 0.5) / (coalesce(t.df, 0) + 0.5)))
            FROM pg_catalog.unnest(memsql.query_lexemes(w.word)) AS l(lexeme)
            LEFT JOIN memsql.term_stats t ON t.namespace = term_idf.namespace AND t.lexeme = l.lexeme)
    FROM pg_catalog.unnest(words) AS w(word)
    CROSS JOIN (SELECT coalesce(max(n.doc_count), 0) AS doc_count FROM memsql.namespace_stats n
                WHERE n.namespace = term_idf.namespace) s
    ORDER BY w.word
$$;
COMMENT ON FUNCTION memsql.term_idf(text[], text) IS
$c$BM25 idf of each word in a namespace: ln(1 + (N - df + 0.5) / (df + 0.5)) over the word's lexemes (the rarest
lexeme counts; a lexeme no memory holds has df 0). Args: words text[], namespace text ('default').
Returns (word, idf) per word, idf NULL for a word without lexemes (a stop word). Used by query enrichment to keep
only WordPiece key terms that are also rare in the corpus. Source: sql/functions/25_enrich.sql.$c$;
