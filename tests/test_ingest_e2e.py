"""End to end: markdown files -> chunks -> embeddings -> PostgreSQL -> hybrid search (real model, real server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memsql.embedding import count_tokens

NOTES = {
    "caching.md": """---
title: Caching decisions
tags: [infra, cache]
---
# Caching decisions

We put a Redis cache in front of the orders API. Entries expire after five minutes, and a cache
stampede is prevented with request coalescing.

## Invalidation

Writes to the orders table publish an invalidation message on the bus.
""",
    "search.md": """# Search notes

Hybrid search fuses a dense ranking and a lexical ranking with RRF merging, so exact terms such as
error codes are still found.

```python
def rrf(ranks, k=60):
    return sum(1 / (k + r) for r in ranks)
```
""",
    "gardening.md": """# Gardening

Tomatoes need full sun and deep watering twice a week. Mulch keeps the soil moist in summer.
""",
    "deploy.md": """# Deployment

The service is deployed with a blue-green rollout; the load balancer flips traffic after health checks.
Rollback is a single command that flips it back.
""",
}


@pytest.fixture
def notes_dir(tmp_path) -> Path:
    for name, text in NOTES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def top_source(results) -> str:
    return Path(results[0].source_uri).name


def test_ingest_then_exact_term_and_paraphrase(memory, notes_dir):
    summary = memory.ingest([notes_dir])
    assert (summary.inserted, summary.unchanged, len(summary.failed)) == (4, 0, 0)
    # exact term: the lexical arm must put the RRF note first
    res = memory.search("RRF merging", touch=False)
    assert top_source(res) == "search.md"
    assert res[0].lexical_rank == 1
    # paraphrase sharing no keyword with the note: the dense arm finds it
    res = memory.search("where do we store hot data so repeated reads are fast", touch=False)
    assert top_source(res) == "caching.md"
    assert res[0].lexical_rank is None and res[0].dense_rank == 1
    res = memory.search("switching traffic between two identical environments when releasing", touch=False)
    assert top_source(res) == "deploy.md"


def test_front_matter_heading_path_and_code_fence(memory, notes_dir, conn):
    memory.ingest([notes_dir])
    row = conn.execute(
        "SELECT d.title, d.metadata->'tags' FROM memsql.documents d WHERE d.source_uri LIKE '%caching.md'"
    ).fetchone()
    assert row == ("Caching decisions", ["infra", "cache"])
    # front matter tags reach the document and its memories (memory_find_by_tag, the tags filter of memory_search)
    tags = conn.execute("SELECT DISTINCT d.tags, m.tags FROM memsql.memories m JOIN memsql.documents d "
                        "ON d.namespace = m.namespace AND d.id = m.document_id WHERE d.source_uri LIKE '%caching.md'"
                        ).fetchall()
    assert tags == [(["infra", "cache"], ["infra", "cache"])]
    assert memory.search("cache stampede", tags=["cache"])[0].source_uri.endswith("caching.md")
    assert conn.execute("SELECT count(*) FROM memsql.memories m JOIN memsql.documents d ON d.namespace = m.namespace "
                        "AND d.id = m.document_id WHERE d.source_uri LIKE '%gardening.md' AND m.tags <> '{}'"
                        ).fetchone()[0] == 0   # no front matter: no tags
    fences = conn.execute(
        "SELECT count(*) FROM memsql.memories WHERE content LIKE '%def rrf(ranks, k=60):%return sum(1 / (k + r) for r in ranks)%```%'"
    ).fetchone()[0]
    assert fences == 1  # the fenced block sits whole in one chunk


def test_every_stored_chunk_fits_the_model_window(memory, tmp_path, conn):
    long = "\n\n".join(
        f"Paragraph {i}. " + " ".join(f"word{i}_{j} appears in sentence {j}." for j in range(40)) for i in range(30)
    )
    (tmp_path / "long.md").write_text("# Long\n\n" + long + "\n\n" + "x" * 3000 + "Zq9" * 2000, encoding="utf-8")
    summary = memory.ingest([tmp_path / "long.md"])
    assert summary.chunks > 10
    contents = [r[0] for r in conn.execute("SELECT content FROM memsql.memories")]
    assert len(contents) == summary.chunks
    assert max(count_tokens(c) for c in contents) <= 256
    # nothing lost: every paragraph marker is somewhere
    joined = "\n".join(contents)
    assert all(f"Paragraph {i}." in joined for i in range(30))


def test_reingest_is_idempotent_and_supersedes_changed_documents(memory, notes_dir, conn):
    first = memory.ingest([notes_dir])
    ids_before = sorted(r[0] for r in conn.execute("SELECT id FROM memsql.memories"))
    again = memory.ingest([notes_dir])
    assert (again.inserted, again.replaced, again.unchanged, again.chunks) == (0, 0, 4, 0)
    assert sorted(r[0] for r in conn.execute("SELECT id FROM memsql.memories")) == ids_before
    (notes_dir / "gardening.md").write_text("# Gardening\n\nPeppers like heat; water them in the morning.\n")
    changed = memory.ingest([notes_dir])
    assert (changed.inserted, changed.replaced, changed.unchanged, changed.chunks, changed.kept) == (0, 1, 3, 1, 0)
    garden = conn.execute(
        "SELECT m.id, m.content, m.valid_to IS NULL, m.superseded_by FROM memsql.memories m "
        "JOIN memsql.documents d ON d.id = m.document_id WHERE d.source_uri LIKE '%gardening.md' ORDER BY m.id").fetchall()
    # the old chunk stays as a superseded version, linked to the new one at its position
    assert [(("Tomatoes" in c), cur, sup) for _, c, cur, sup in garden] == [(True, False, garden[1][0]),
                                                                           (False, True, None)]
    assert "Peppers" in garden[1][1]
    assert conn.execute("SELECT count(*) FROM memsql.documents").fetchone()[0] == 4
    # the other documents' memories are untouched
    assert sorted(r[0] for r in conn.execute("SELECT id FROM memsql.memories WHERE valid_to IS NULL")) \
        == sorted(set(ids_before) - {garden[0][0]}) + [garden[1][0]]
    # term statistics: superseded versions stay indexed (searchable with include_superseded / as_of)
    df = dict(conn.execute("SELECT lexeme, df FROM memsql.term_stats WHERE lexeme IN ('tomato', 'pepper')").fetchall())
    assert df == {"pepper": 1, "tomato": 1}
    assert first.chunks == conn.execute("SELECT count(*) FROM memsql.memories WHERE valid_to IS NULL").fetchone()[0]
    assert [r.memory_id for r in memory.search("tomatoes full sun", k=1, touch=False)] != [garden[0][0]]
    assert [r.memory_id for r in memory.search("tomatoes full sun", k=1, touch=False, include_superseded=True)] \
        == [garden[0][0]]


def test_bad_files_are_reported_and_do_not_stop_the_others(memory, notes_dir):
    (notes_dir / "broken.json").write_bytes(b"\x00\x01 not json at all")
    (notes_dir / "bad_front.md").write_text("---\ntitle: [unclosed\n---\n# Still here\n\nBody text survives.\n")
    summary = memory.ingest([notes_dir, notes_dir / "missing.md"])
    failed = {Path(src).name for src, _ in summary.failed}
    assert failed == {"broken.json", "missing.md"}
    assert summary.inserted == 5  # four notes + the one with broken front matter
    res = memory.search("Body text survives", touch=False)
    assert top_source(res) == "bad_front.md"


def test_knowledge_type_from_flag_and_front_matter(memory, tmp_path, conn):
    (tmp_path / "a.md").write_text("---\nknowledge_type: principle\n---\n# A\n\nAlways write tests.\n")
    (tmp_path / "b.md").write_text("# B\n\nSome note.\n")
    memory.ingest([tmp_path])
    kinds = dict(conn.execute(
        "SELECT regexp_replace(d.source_uri, '.*/', ''), m.knowledge_type FROM memsql.memories m "
        "JOIN memsql.documents d ON d.id = m.document_id"))
    assert kinds == {"a.md": "principle", "b.md": "note"}
    (tmp_path / "c.txt").write_text("Plain text paper summary.\n")
    memory.ingest([tmp_path / "c.txt"], knowledge_type="paper")
    assert conn.execute(
        "SELECT knowledge_type FROM memsql.memories WHERE content LIKE 'Plain text%'").fetchone()[0] == "paper"


def test_async_memory_has_the_same_verbs_and_results(dsn, embedder, notes_dir):
    import asyncio
    import inspect

    from memsql import AsyncMemory, Memory

    for name in ("init", "search", "add", "ingest", "stats"):
        sync_sig = inspect.signature(getattr(Memory, name))
        async_sig = inspect.signature(getattr(AsyncMemory, name))
        assert list(sync_sig.parameters) == list(async_sig.parameters), name
        assert inspect.iscoroutinefunction(getattr(AsyncMemory, name))

    async def main():
        async with AsyncMemory(dsn=dsn, embedder=embedder) as mem:
            summary = await mem.ingest([notes_dir])
            mid = await mem.add("Async clients share the same verbs.")
            results = await asyncio.gather(*[mem.search("RRF merging", touch=False) for _ in range(4)])
            stats = await mem.stats()
            return summary, mid, results, stats

    summary, mid, results, stats = asyncio.run(main())
    assert summary.inserted == 4
    assert all(Path(r[0].source_uri).name == "search.md" for r in results)
    assert sum(s.memories for s in stats) == summary.chunks + 1
    with Memory(dsn=dsn, embedder=embedder) as mem:
        assert mem.add("Async clients share the same verbs.") == mid


def test_memsql_connections_read_naive_times_as_utc_and_take_importance(memory, conn):
    from datetime import datetime, timezone

    naive = memory.add("Naive time note.", source_date=datetime(2024, 1, 15, 12, 0), importance=0.8)
    aware = memory.add("Aware time note.", source_date=datetime(2024, 1, 15, 12, 0, tzinfo=timezone.utc))
    rows = dict(conn.execute("SELECT id, source_date FROM memsql.memories").fetchall())
    assert rows[naive] == rows[aware] == datetime(2024, 1, 15, 12, 0, tzinfo=timezone.utc)
    assert conn.execute("SELECT importance FROM memsql.memories WHERE id = %s", (naive,)).fetchone()[0] == \
        pytest.approx(0.8)


@pytest.mark.parametrize("embed_group", [1, 1024])
def test_overlapped_groups_keep_each_chunk_with_its_own_vector(conn, embedder, notes_dir, embed_group):
    """One document per embedding group (written one transaction each), or all four in one group (written in one
    transaction, one COPY): groups are written while the next one encodes; every stored vector must still be its
    own chunk's, and every document complete."""
    import numpy as np

    from memsql.chunking import chunk_document
    from memsql.ingest import IngestSettings, Ingestor, ingest_paths, iter_files, parse_path

    summary = ingest_paths(Ingestor(conn, embedder, "overlap", IngestSettings(batch_size=1, embed_group=embed_group)), [notes_dir])
    assert (summary.inserted, len(summary.failed)) == (4, 0)
    expected = {}
    for path in iter_files([notes_dir]):
        doc = parse_path(path).documents[0]
        for c in chunk_document(doc, max_tokens=256, overlap_tokens=32):
            expected[(doc.source_key, c.index)] = c.embed_text
    rows = conn.execute(
        "SELECT d.source_key, m.chunk_index, m.embedding FROM memsql.memories m "
        "JOIN memsql.documents d ON d.namespace = m.namespace AND d.id = m.document_id WHERE m.namespace = 'overlap' "
        "ORDER BY d.source_key, m.chunk_index").fetchall()
    assert [(k, i) for k, i, _ in rows] == sorted(expected) and summary.chunks == len(rows)
    want = embedder.embed([expected[(k, i)] for k, i, _ in rows])
    got = np.array([np.asarray(e.to_numpy() if hasattr(e, "to_numpy") else e, dtype=np.float32) for _, _, e in rows])
    assert np.sum(want * got, axis=1).min() > 0.99999


def test_new_documents_of_a_group_share_one_transaction_and_a_bad_one_fails_alone(conn, embedder):
    """The new documents of an embedding group are written in one transaction (pipelined document_upsert, one
    COPY); when that fails it is rolled back and each is written alone, so only the bad document fails."""
    from memsql.adapters.base import Document, Section
    from memsql.ingest import Ingestor

    def doc(key, text, **meta):
        return Document(key, "text", (Section(text),), source_uri=key, metadata=meta)

    good = [doc(f"g{i}", f"Note {i} about caching layers and request coalescing.") for i in range(3)]
    actions = []
    summary = Ingestor(conn, embedder, "group").ingest(good, on_document=lambda d, a: actions.append((d.source_key, a)))
    assert (summary.inserted, summary.chunks, summary.failed) == (3, 3, [])
    assert actions == [("g0", "inserted"), ("g1", "inserted"), ("g2", "inserted")]
    # one transaction: the three document rows and their memories carry the same xmin
    assert conn.execute("SELECT count(DISTINCT xmin::text) FROM memsql.documents WHERE namespace = 'group'"
                        ).fetchone()[0] == 1
    assert conn.execute("SELECT count(DISTINCT xmin::text), count(*) FROM memsql.memories WHERE namespace = 'group'"
                        ).fetchone() == (1, 3)

    mixed = [doc("a", "Alpha note on HNSW graphs."), doc("b", "Bravo note.", knowledge_type="no_such_type"),
             doc("c", "Charlie note on BM25 postings.")]
    actions.clear()
    summary = Ingestor(conn, embedder, "mixed").ingest(mixed, on_document=lambda d, a: actions.append((d.source_key, a)))
    assert actions == [("a", "inserted"), ("b", "failed"), ("c", "inserted")]
    assert (summary.inserted, summary.chunks) == (2, 2)
    assert [src for src, _ in summary.failed] == ["b"] and "no_such_type" in summary.failed[0][1]
    rows = conn.execute("SELECT d.source_key, count(m.id) FROM memsql.documents d LEFT JOIN memsql.memories m "
                        "ON m.namespace = d.namespace AND m.document_id = d.id WHERE d.namespace = 'mixed' "
                        "GROUP BY d.source_key ORDER BY 1").fetchall()
    assert rows == [("a", 1), ("c", 1)]   # b: nothing, not even its document row
    conn.commit()
