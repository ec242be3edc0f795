"""The length BM25 normalises a memory by (memories.bm25_len): the pieces of a conversation message split over
several memories are scored by the whole message's length. SQL side: the postings read it at insert, follow an
UPDATE, and forgetting and restoring keep it. The ingest that sets it is tested in test_ingest_conversations.py."""

from __future__ import annotations

import math

import psycopg
import pytest

NS = "default"
K1, B = 0.9, 0.4


def piece(conn, doc, index, text, bm25_len=None, namespace=NS, knowledge_type="note") -> int:
    """A memory written as the ingest writes one (a row of the document), with the given bm25_len."""
    return conn.execute(
        "INSERT INTO memsql.memories (namespace, document_id, chunk_index, content, content_hash, knowledge_type, "
        "bm25_len) VALUES (%s, %s, %s, %s, md5(%s), %s, %s) RETURNING id",
        (namespace, doc, index, text, text, knowledge_type, bm25_len)).fetchone()[0]


def document(conn, key, namespace=NS, knowledge_type="note") -> int:
    return conn.execute("SELECT document_id FROM document_upsert(%s, %s, %s, 'text', knowledge_type => %s)",
                        (namespace, key, "hash-" + key, knowledge_type)).fetchone()[0]


def doc_lens(conn, memory_id) -> set[int]:
    """The doc_len of every posting of a memory (one value when they agree)."""
    return {r[0] for r in conn.execute("SELECT doc_len FROM memsql.postings WHERE memory_id = %s", (memory_id,))}


def lexical_scores(conn, query) -> dict[int, float]:
    rows = conn.execute(
        "SELECT memory_id, lexical_score FROM memory_search(%s, '{}'::vector[], k => 50, memory_rerank => false, "
        "touch => false, bm25_k1 => %s, bm25_b => %s)", (query, K1, B)).fetchall()
    return {m: s for m, s in rows}


def test_a_piece_is_scored_by_its_messages_length(conn):
    doc = document(conn, "chat")
    # two memories with the same two lexemes: one a piece of a 12-token message, one standing alone
    part = piece(conn, doc, 0, "apple fig", bm25_len=12)
    alone = piece(conn, doc, 1, "apple durian")
    piece(conn, doc, 2, "cherry banana melon")
    assert conn.execute("SELECT tsv_len, bm25_len FROM memsql.memories WHERE id = %s", (part,)).fetchone() == (2, 12)
    assert doc_lens(conn, part) == {12} and doc_lens(conn, alone) == {2}
    # the average length stays the mean of the memories' own lengths: (2 + 2 + 3) / 3
    assert conn.execute("SELECT doc_count, total_len FROM memsql.namespace_stats WHERE namespace = %s",
                        (NS,)).fetchone() == (3, 7)
    scores = lexical_scores(conn, "apple")
    n, df, avgdl = 3, 2, 7 / 3
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(tf, dl):
        return idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))

    assert scores[alone] == pytest.approx(bm25(1, 2), rel=1e-9)
    assert scores[part] == pytest.approx(bm25(1, 12), rel=1e-9)
    assert scores[part] < scores[alone]


def test_the_postings_follow_an_update_of_bm25_len(conn):
    doc = document(conn, "chat")
    m = piece(conn, doc, 0, "kilo lima mike kilo", bm25_len=9)
    other = piece(conn, doc, 1, "kilo november", bm25_len=9)
    assert doc_lens(conn, m) == {9}
    conn.execute("UPDATE memsql.memories SET bm25_len = NULL WHERE id = %s", (m,))
    assert doc_lens(conn, m) == {4}                      # its own tsv_len
    conn.execute("UPDATE memsql.memories SET bm25_len = 30 WHERE id = %s", (m,))
    assert doc_lens(conn, m) == {30}
    assert doc_lens(conn, other) == {9}                  # the other memory's postings are not touched
    # an UPDATE of another column leaves them alone
    conn.execute("UPDATE memsql.memories SET importance = 0.5 WHERE id = %s", (m,))
    assert doc_lens(conn, m) == {30}
    conn.commit()
    with pytest.raises(psycopg.errors.CheckViolation):
        conn.execute("UPDATE memsql.memories SET bm25_len = 0 WHERE id = %s", (m,))
    conn.rollback()
    assert doc_lens(conn, m) == {30}


def test_forgetting_and_restoring_keep_bm25_len(conn):
    doc = document(conn, "old chat", knowledge_type="news")
    conn.execute("UPDATE memsql.documents SET source_date = now() - interval '400 days' WHERE id = %s", (doc,))
    m = conn.execute(
        "INSERT INTO memsql.memories (namespace, document_id, chunk_index, content, content_hash, knowledge_type, "
        "source_date, bm25_len) VALUES (%s, %s, 0, 'oscar papa quebec', md5('oscar'), 'news', "
        "now() - interval '400 days', 25) RETURNING id", (NS, doc)).fetchone()[0]
    conn.commit()
    archived = conn.execute("SELECT memory_id FROM memory_forget(dry_run => false)").fetchall()
    conn.commit()
    assert archived == [(m,)]
    assert conn.execute("SELECT bm25_len FROM memsql.archive WHERE id = %s", (m,)).fetchone() == (25,)
    assert doc_lens(conn, m) == set()
    restored = conn.execute("SELECT restored FROM memory_restore(ARRAY[%s]::bigint[])", (m,)).fetchall()
    conn.commit()
    assert restored == [(True,)]
    assert conn.execute("SELECT bm25_len FROM memsql.memories WHERE id = %s", (m,)).fetchone() == (25,)
    assert doc_lens(conn, m) == {25}
