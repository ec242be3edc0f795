"""The demo's markdown ingest: run again from another checkout, it updates its documents instead of adding copies."""

from __future__ import annotations

import shutil

from memsql.demo import ingest_markdown


def _checkout(tmp_path, name, readme):
    repo = tmp_path / name
    (repo / "docs").mkdir(parents=True)
    (repo / "README.md").write_text(readme, encoding="utf-8")
    (repo / "docs" / "search.md").write_text("# Search\n\nRRF merging and convex fusion of two arms.\n",
                                             encoding="utf-8")
    return repo


def _documents(memory):
    rows = memory.conn.execute("SELECT source_key, count(m.id) FROM memsql.documents d"
                               " LEFT JOIN memsql.memories m ON m.namespace = d.namespace AND m.document_id = d.id"
                               " WHERE d.namespace = 'demo' GROUP BY 1 ORDER BY 1").fetchall()
    memory.conn.commit()
    return rows


def test_demo_markdown_is_keyed_by_repository_path_and_leaves_no_copies(memory, tmp_path):
    first = _checkout(tmp_path, "clone1", "# memsql\n\nForgetting archives what has faded.\n")
    summary, removed = ingest_markdown(memory, first)
    assert (summary.inserted, removed) == (2, 0)
    assert [k for k, _ in _documents(memory)] == ["demo:README.md", "demo:docs/search.md"]

    # the same files from another checkout: nothing new, nothing removed
    second = tmp_path / "clone2"
    shutil.copytree(first, second)
    summary, removed = ingest_markdown(memory, second)
    assert (summary.inserted, summary.unchanged, removed) == (0, 2, 0)

    # an earlier demo's copy under an absolute-path key (how older versions ingested) is removed; a changed
    # README replaces its document in place (the old copy's text differs: ingest reports, and does not store, a
    # second copy of a text it already holds)
    (first / "README.md").write_text("# memsql\n\nAn older README.\n", encoding="utf-8")
    memory.ingest([first / "README.md"], namespace="demo")
    assert len(_documents(memory)) == 3
    (second / "README.md").write_text("# memsql\n\nForgetting archives what has faded; restore brings it back.\n",
                                      encoding="utf-8")
    summary, removed = ingest_markdown(memory, second)
    assert (summary.replaced, removed) == (1, 1)
    docs = _documents(memory)
    assert [k for k, _ in docs] == ["demo:README.md", "demo:docs/search.md"] and all(n >= 1 for _, n in docs)


def test_the_demo_follows_one_memory_through_the_three_lists(memory, capsys):
    import re

    from memsql.demo import show

    for text in ("Error MS005 means the embedding is not 384-d, zero, or lost in half precision.",
                 "Embeddings are 384-dimensional vectors from all-MiniLM-L6-v2.",
                 "The worker embeds memories written from SQL.", "Half precision halves the index size."):
        memory.add(text, namespace="demo-show")
    show(memory, "t", "what does error MS005 mean", expect="MS005", namespace="demo-show")
    line = capsys.readouterr().out.strip().splitlines()[-1]
    m = re.fullmatch(r"memory (\d+), the first containing 'MS005': hybrid rank (\S+), dense-only rank (\S+), "
                     r"lexical-only rank (\S+)", line.strip())
    assert m, line
    mid = int(m.group(1))
    dense = [r.memory_id for r in memory.search("what does error MS005 mean", k=100, namespace="demo-show",
                                                lexical_weight=0.0, memory_rerank=False)]
    lexical = [r.memory_id for r in memory.search("what does error MS005 mean", k=100, namespace="demo-show",
                                                  query_embeddings=[], memory_rerank=False)]
    assert "MS005" in memory.get([mid], namespace="demo-show")[0].content
    assert (m.group(3), m.group(4)) == (str(dense.index(mid) + 1), str(lexical.index(mid) + 1))
