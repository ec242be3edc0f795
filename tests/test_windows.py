"""Window embeddings of long memories (memsql.memory_windows): the backlog the triggers keep, memory_set_windows and
its checks, memory_search scoring a memory by its best window, and the Python paths that fill them (window_texts,
the ingest, Memory.add, Memory.embed_pending, the worker)."""

from __future__ import annotations

import threading

import numpy as np
import psycopg
import pytest

from memsql import db
from memsql.embedding import MAX_TOKENS, WINDOW_STRIDE, WINDOW_TOKENS, get_tokenizer, window_texts

DIM = 384


def unit(*pairs: tuple[int, float]) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for axis, w in pairs:
        v[axis] = w
    return v / np.linalg.norm(v)


def add(conn, content, vec, namespace="default", metadata=None) -> int:
    return conn.execute("SELECT memory_add(%s, %s, %s, metadata => %s::jsonb)",
                        (content, vec, namespace, psycopg.types.json.Jsonb(metadata or {}))).fetchone()[0]


def windows_of(conn, memory_id, namespace="default"):
    row = conn.execute("SELECT embeddings FROM memsql.memory_windows WHERE namespace = %s AND memory_id = %s",
                       (namespace, memory_id)).fetchone()
    return "no row" if row is None else row[0]


def dense(conn, q, k=10, namespace="default"):
    return conn.execute(
        "SELECT memory_id, dense_similarity FROM memory_search('', ARRAY[%s::vector], k => %s, namespace => %s, "
        "lexical_weight => 0, memory_rerank => false, priority_limit => 0)", (q, k, namespace)).fetchall()


def test_window_texts_cover_the_model_window_in_overlapping_spans_with_the_title():
    tok = get_tokenizer()
    assert window_texts("A short note about RRF merging.", "Title") == []
    words = " ".join(f"word{i}" for i in range(400))   # far over the model window
    n = len(tok.encode(words, add_special_tokens=False).ids)
    assert n > MAX_TOKENS
    wins = window_texts(words, "Fusion notes")
    assert len(wins) == 4
    bare = [w.removesuffix("\n\nFusion notes") for w in wins]
    assert all(w.endswith("\n\nFusion notes") for w in wins)
    # spans of WINDOW_TOKENS pieces starting WINDOW_STRIDE apart, over the first MAX_TOKENS - 2 pieces
    offsets = tok.encode(words, add_special_tokens=False).offsets[:MAX_TOKENS - 2]
    starts = [0, WINDOW_STRIDE, 2 * WINDOW_STRIDE, 3 * WINDOW_STRIDE]
    ends = [min(s + WINDOW_TOKENS, len(offsets)) for s in starts]
    assert ends[-1] == MAX_TOKENS - 2 and ends[-2] < ends[-1]
    assert bare == [words[offsets[s][0]:offsets[e - 1][1]] for s, e in zip(starts, ends)]
    # a window that holds the title gets no second copy of it
    titled = window_texts("Fusion notes: " + words, "fusion   NOTES")
    assert not titled[0].endswith("fusion NOTES") and titled[1].endswith("\n\nfusion NOTES")


def test_triggers_keep_the_backlog_and_search_scores_by_the_best_window(conn):
    q = unit((0, 1.0))
    a = add(conn, "alpha long section", unit((0, 0.6), (1, 0.8)))   # own cosine to q 0.6
    b = add(conn, "bravo short note", unit((0, 0.9), (2, 0.43589)))   # 0.9
    msg = add(conn, "charlie said so", unit((0, 0.5), (3, 0.866)), metadata={"speaker": "user"})
    conn.commit()
    assert windows_of(conn, a) is None and windows_of(conn, b) is None   # pending
    assert windows_of(conn, msg) == "no row"   # a conversation message is not windowed
    assert conn.execute("SELECT windows_pending FROM worker_status").fetchone() == (2,)
    assert conn.execute("SELECT memory_id, content FROM memory_pending_windows('default')").fetchall() == [
        (a, "alpha long section"), (b, "bravo short note")]
    # pending rows count as no windows: each memory by its own embedding
    got = dense(conn, q)
    assert [r[0] for r in got] == [b, a, msg]
    assert [round(r[1], 4) for r in got] == [0.9, 0.6, 0.5]

    w1, w2 = unit((0, 0.2), (4, 0.98)), unit((0, 0.99), (5, 0.141))
    assert conn.execute("SELECT memory_set_windows('default', ARRAY[%s, %s]::bigint[], '{2,0}', "
                        "ARRAY[%s, %s]::vector[])", (a, b, w1, w2)).fetchone() == (2,)
    conn.commit()
    assert len(windows_of(conn, a)) == 2 and windows_of(conn, b) == []
    assert conn.execute("SELECT count(*) FROM memory_pending_windows()").fetchone() == (0,)
    assert conn.execute("SELECT windows_pending FROM worker_status").fetchone() == (0,)
    got = dense(conn, q)
    assert [r[0] for r in got] == [a, b, msg]   # a's second window is nearer than b
    assert round(got[0][1], 4) == round(float(w2 @ q), 4) == 0.99
    # the whole call with the lexical arm as well: the same cosine in the fused score
    row = conn.execute("SELECT memory_id, dense_similarity FROM memory_search('alpha', ARRAY[%s::vector], "
                       "memory_rerank => false) ORDER BY memory_id LIMIT 1", (q,)).fetchone()
    assert row[0] == a and round(row[1], 4) == 0.99

    # a new embedding makes the windows pending again; deleting the memory deletes its row
    conn.execute("SELECT memory_set_embeddings('default', ARRAY[%s]::bigint[], ARRAY[%s]::vector[])",
                 (a, unit((0, 0.5), (6, 0.866))))
    assert windows_of(conn, a) is None
    assert [r[0] for r in dense(conn, q)] == [b, a, msg]
    doc = conn.execute("SELECT document_id FROM memsql.memories WHERE id = %s", (a,)).fetchone()[0]
    conn.execute("SELECT delete_document(%s)", (doc,))
    assert windows_of(conn, a) == "no row"


def test_windows_move_with_a_renamed_namespace(conn):
    a = add(conn, "a long memory", unit((0, 1.0)), namespace="old")
    w = unit((1, 1.0))
    conn.execute("SELECT memory_set_windows('old', ARRAY[%s]::bigint[], '{1}', ARRAY[%s]::vector[])", (a, w))
    conn.execute("SELECT * FROM namespace_rename('old', 'new')").fetchall()
    got = windows_of(conn, a, "new")
    assert len(got) == 1 and np.allclose(got[0].to_numpy(), w)
    assert windows_of(conn, a, "old") == "no row"


@pytest.mark.parametrize("ids, counts, vecs, state, message", [
    ("ARRAY[%(a)s]::bigint[]", "'{5}'", "ARRAY[%(v)s,%(v)s,%(v)s,%(v)s,%(v)s]::vector[]", "MS002",
     "memory_set_windows: a window count is NULL or outside 0..4"),
    ("ARRAY[%(a)s]::bigint[]", "'{2}'", "ARRAY[%(v)s]::vector[]", "MS002",
     "memory_set_windows: the window counts add up to 2 but 1 embeddings were passed"),
    ("ARRAY[%(a)s, %(a)s]::bigint[]", "'{1,1}'", "ARRAY[%(v)s,%(v)s]::vector[]", "MS002",
     "memory_set_windows: memory_ids holds a NULL or a duplicate id"),
    ("ARRAY[%(a)s]::bigint[]", "'{1,0}'", "ARRAY[%(v)s]::vector[]", "MS002",
     "memory_set_windows: 1 ids but 2 window counts"),
    ("ARRAY[%(a)s]::bigint[]", "'{1}'", "ARRAY[%(z)s]::vector[]", "MS005",
     "memory_set_windows: window embedding 1 is the zero vector"),
    ("NULL", "'{1}'", "ARRAY[%(v)s]::vector[]", "MS002",
     "memory_set_windows: namespace, memory_ids, window_counts and embeddings must not be NULL"),
])
def test_set_windows_refuses_bad_input_and_changes_nothing(conn, ids, counts, vecs, state, message):
    a = add(conn, "a long memory", unit((0, 1.0)))
    conn.commit()
    params = {"a": a, "v": unit((1, 1.0)), "z": np.zeros(DIM, dtype=np.float32)}
    with pytest.raises(psycopg.Error) as err:
        conn.execute(f"SELECT memory_set_windows('default', {ids}, {counts}, {vecs})", params)
    assert err.value.sqlstate == state
    assert err.value.diag.message_primary.startswith(message)
    conn.rollback()
    assert windows_of(conn, a) is None


LONG = ("Reciprocal rank fusion merges the ranked lists of several retrievers by summing one over k plus the rank. "
        * 4 + "The lexical arm is BM25 over exact postings; the dense arm walks an HNSW graph of sentence embeddings. "
        * 3)


def test_ingest_and_add_store_windows_of_long_memories_only(memory, tmp_path):
    with db.configure(psycopg.connect(memory.dsn, autocommit=True)) as c:   # a backlog row written before: not ours
        older = c.execute("SELECT memsql.memory_add(%s, %s, 'docs')",
                          ("an older long memory " + LONG, memory.embedder.embed([LONG])[0])).fetchone()[0]
    (tmp_path / "fusion.md").write_text("# Fusion\n\n" + LONG + "\n")
    (tmp_path / "short.md").write_text("# Short\n\nA short section.\n")
    summary = memory.ingest([tmp_path / "fusion.md", tmp_path / "short.md"], namespace="docs")
    assert summary.windowed == summary.chunks == 2
    with psycopg.connect(memory.dsn) as c:
        rows = c.execute("SELECT m.content, d.title, cardinality(w.embeddings) FROM memsql.memory_windows w "
                         "JOIN memsql.memories m ON m.namespace = w.namespace AND m.id = w.memory_id "
                         "JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id "
                         "WHERE w.namespace = 'docs' AND w.memory_id <> %s ORDER BY d.title", (older,)).fetchall()
        # the ingest computes the windows of what it wrote, not the namespace's older backlog (the worker's job)
        assert c.execute("SELECT embeddings IS NULL FROM memsql.memory_windows WHERE memory_id = %s",
                         (older,)).fetchone() == (True,)
    assert len(rows) == summary.chunks
    assert [n for _, _, n in rows] == [len(window_texts(content, title)) for content, title, _ in rows]
    assert rows[0][2] >= 2 and rows[-1][2] == 0   # the long section is windowed, the short one fits one window

    mid = memory.add(LONG[:600], namespace="notes")
    with db.configure(psycopg.connect(memory.dsn)) as c:
        stored = c.execute("SELECT embeddings FROM memsql.memory_windows WHERE namespace = 'notes' AND memory_id = %s",
                           (mid,)).fetchone()[0]
    assert len(window_texts(LONG[:600])) >= 2 and len(stored) == len(window_texts(LONG[:600]))
    assert float(stored[0].to_numpy() @ memory.embedder.embed(window_texts(LONG[:600])[:1])[0]) > 0.9999
    # a new version of a fact gets its own windows at once
    changed = LONG[:560] + " The fusion constant is now 40."
    new = memory.update(mid, changed, namespace="notes")
    with db.configure(psycopg.connect(memory.dsn)) as c:
        got = c.execute("SELECT embeddings FROM memsql.memory_windows WHERE namespace = 'notes' AND memory_id = %s",
                        (new,)).fetchone()[0]
    assert new != mid and len(got) == len(window_texts(changed)) >= 2
    assert float(got[-1].to_numpy() @ memory.embedder.embed(window_texts(changed)[-1:])[0]) > 0.9999


def test_embed_pending_and_the_worker_fill_the_backlog(memory, dsn, embedder):
    from memsql.worker import Worker

    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SELECT memsql.memory_add(%s, namespace => 'sql')", (LONG,))
        c.execute("SELECT memsql.memory_add('a short one', namespace => 'sql')")
    assert memory.embed_pending("sql") == 2
    with psycopg.connect(dsn) as c:
        got = c.execute("SELECT m.content = btrim(%s), cardinality(w.embeddings) FROM memsql.memory_windows w "
                        "JOIN memsql.memories m ON m.namespace = w.namespace AND m.id = w.memory_id "
                        "WHERE w.namespace = 'sql' ORDER BY m.id", (LONG,)).fetchall()
    assert got == [(True, len(window_texts(LONG))), (False, 0)]
    # the worker: a memory written from SQL is embedded, then windowed
    with psycopg.connect(dsn, autocommit=True) as c:
        mid = c.execute("SELECT memsql.memory_add(%s, namespace => 'w')", (LONG + " Worker.",)).fetchone()[0]
    w = Worker(dsn=dsn, embedder=embedder, idle_seconds=0.2, threads=None)
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            for _ in range(500):
                row = c.execute("SELECT cardinality(embeddings) FROM memsql.memory_windows WHERE namespace = 'w' "
                                "AND memory_id = %s AND embeddings IS NOT NULL", (mid,)).fetchone()
                if row:
                    break
                threading.Event().wait(0.05)
        assert row == (len(window_texts(LONG + " Worker.")),)
        assert w.stats.windows >= 1
    finally:
        w.stop_event.set()
        t.join(timeout=30)


class FailingWindows:
    """The test embedder, failing for any text that is not the first one embedded (the windows come second)."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.model_name, self.dimension = inner.model_name, inner.dimension

    def embed(self, texts, batch_size=64):
        self.calls += 1
        if self.calls > 1:
            from memsql.errors import EmbeddingError

            raise EmbeddingError("the model stalled")
        return self.inner.embed(texts, batch_size=batch_size)


def test_a_window_failure_leaves_the_memory_written_and_pending(dsn, embedder, caplog):
    from memsql.client import Memory

    with Memory(dsn=dsn, embedder=FailingWindows(embedder)) as m:
        mid = m.add(LONG[:600], namespace="f")
    assert mid is not None
    with db.configure(psycopg.connect(dsn)) as c:
        stored = c.execute("SELECT content FROM memsql.memories WHERE id = %s", (mid,)).fetchone()[0]
        assert stored == LONG[:600].strip()
        assert c.execute("SELECT embeddings IS NULL FROM memsql.memory_windows "
                         "WHERE namespace = 'f' AND memory_id = %s", (mid,)).fetchone() == (True,)
    assert "were not stored (the model stalled)" in caplog.text
