"""Query enrichment: WordPiece key terms filtered by corpus rarity, searched as extra dense arms."""

from __future__ import annotations

from memsql.enrich import enrich, wordpiece_candidates


def test_wordpiece_candidates_are_words_the_model_splits():
    cands = wordpiece_candidates("How does pgvector merge RRF ranks for the cache?")
    assert set(cands) == {"pgvector", "RRF"}  # "merge", "ranks", "cache" are single pieces; stop words dropped
    assert cands["pgvector"] >= 2


def test_rarity_filter_drops_common_words():
    common = enrich("how do I configure pgvector", idf=lambda words: {"configure": 0.3, "pgvector": 4.0})
    assert common.key_terms == ("pgvector",)
    assert common.variants[0] == "how do I configure pgvector" and "pgvector" in common.variants[1]
    assert enrich("plain words only").variants == ("plain words only",)


def test_search_with_enrichment_uses_term_idf_and_extra_arms(memory, conn):
    target = memory.add("The pgvector extension stores embeddings next to the rows.")
    memory.add("Embeddings are stored next to rows in many databases.")
    idf = dict(conn.execute("SELECT word, idf FROM memsql.term_idf(ARRAY['pgvector', 'embeddings', 'the'])").fetchall())
    assert idf["the"] is None and idf["pgvector"] > idf["embeddings"]
    res = memory.search("where does pgvector keep embeddings", enrich=True, touch=False)
    assert res[0].memory_id == target
