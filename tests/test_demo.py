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
