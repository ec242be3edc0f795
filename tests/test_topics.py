"""Topics: fixed / auto / hybrid assignment with the real model, stored by memory_add and ingest."""

from __future__ import annotations

import pytest

from memsql.adapters.base import Document, Section
from memsql.config import load
from memsql.topics import TopicAssigner, TopicSettings, candidates

TEXTS = ["We moved the orders table to a new PostgreSQL cluster and rebuilt the indexes.",
         "Bake the bread at 220 degrees for thirty minutes, then let it cool.",
         "The quarterly release goes out on Friday after the CI pipeline passes.",
         "My grandmother told stories about the war."]
CUSTOM = (("databases", ""), ("cooking", "recipes, baking and food"), ("deployment", "releases, rollouts and CI pipelines"))


def labels(assigned):
    return [[t.label for t in ts] for ts in assigned]


@pytest.fixture(scope="module")
def vecs(embedder):
    return embedder.embed(TEXTS)


def assigner(embedder, taxonomy, min_confidence, custom=CUSTOM, max_topics=3):
    return TopicAssigner(TopicSettings(True, taxonomy, custom, max_topics, min_confidence), embed=embedder.embed)


def test_candidates_are_words_and_pairs_without_stop_words():
    assert candidates("The orders table, the orders table and 2026!") == \
        {"orders": 2, "table": 2, "orders table": 2}


@pytest.mark.parametrize("taxonomy, min_confidence, expected", [
    ("fixed", 0.6, [[], [], ["deployment"], []]),               # the default confidence: only a close label passes
    ("fixed", 0.3, [[], ["cooking"], ["deployment"], []]),      # unmatched content stays uncategorised
    ("auto", 0.4, [["orders table"], ["bread", "bake"], ["quarterly release", "pipeline"],
                   ["grandmother told", "told stories", "war"]]),
    ("hybrid", 0.4, [["orders table"], ["bread", "bake"], ["deployment"], ["grandmother told", "told stories", "war"]]),
])
def test_assignment(embedder, vecs, taxonomy, min_confidence, expected):
    assigned = assigner(embedder, taxonomy, min_confidence).assign(TEXTS, vecs)
    assert labels(assigned) == expected
    for ts in assigned:
        assert all(t.confidence >= min_confidence for t in ts)
        assert [t.confidence for t in ts] == sorted((t.confidence for t in ts), reverse=True)


def test_fixed_confidence_is_the_cosine_to_the_label_and_description(embedder, vecs):
    [[topic]] = [assigner(embedder, "fixed", 0.6).assign(TEXTS[2:3], vecs[2:3])[0]]
    label = embedder.embed(["deployment: releases, rollouts and CI pipelines"])[0]
    assert topic.confidence == pytest.approx(float(label @ vecs[2]), abs=1e-5)


def test_max_topics_and_disabled(embedder, vecs):
    assert labels(assigner(embedder, "auto", 0.3, max_topics=1).assign(TEXTS, vecs)) == \
        [["orders table"], ["bread"], ["quarterly release"], ["grandmother told"]]
    off = TopicAssigner(TopicSettings(False, "auto"), embed=embedder.embed)
    assert off.assign(TEXTS, vecs) == [[], [], [], []]


def topic_config(tmp_path, taxonomy="hybrid", min_confidence=0.4):
    path = tmp_path / "memsql.toml"
    path.write_text(f"""
[memory.topics]
enabled = true
taxonomy = "{taxonomy}"
min_confidence = {min_confidence}
custom_topics = ["databases", {{label = "cooking", description = "recipes, baking and food"}},
                 {{label = "deployment", description = "releases, rollouts and CI pipelines"}}]
""")
    return load(path, env={})


def test_memory_add_and_ingest_store_topics(dsn, embedder, conn, tmp_path):
    from memsql.client import Memory
    from memsql.ingest import Ingestor

    with Memory(dsn=dsn, embedder=embedder, config=topic_config(tmp_path)) as m:
        mid = m.add(TEXTS[2])
        assert conn.execute("SELECT topics FROM memsql.memories WHERE id = %s", (mid,)).fetchone()[0] == ["deployment"]
        ing = m._ingestor(conn, "docs", None)
        assert isinstance(ing, Ingestor)
        doc = Document("recipes.md", "markdown", (Section(TEXTS[1], atomic=True), Section(TEXTS[0], atomic=True)))
        assert ing.ingest([doc]).chunks == 2
    rows = conn.execute("SELECT chunk_index, topics FROM memsql.memories WHERE namespace = 'docs' "
                        "ORDER BY chunk_index").fetchall()
    assert rows == [(0, ["bread", "bake"]), (1, ["orders table"])]
    assert conn.execute("SELECT topic, memories FROM memsql.namespace_topics('docs')").fetchall() == \
        [("bake", 1), ("bread", 1), ("orders table", 1)]


def test_memory_search_topics_filter_applies_to_every_arm(conn, embedder):
    facts = [("Redis cache entries expire after five minutes.", ["caching"], "note"),
             ("Redis cluster failover runbook for the on-call engineer.", ["ops"], "note"),
             ("Cache invalidation happens on every deploy of Redis clients.", ["caching", "deploy"], "note"),
             ("Always keep Redis sessions in a separate cache database.", ["ops"], "principle")]
    ids = [conn.execute("SELECT memsql.memory_add(%s, %s, knowledge_type => %s, topics => %s)",
                        (c, embedder.embed([c])[0], kt, t)).fetchone()[0] for c, t, kt in facts]
    q = embedder.embed(["redis cache"])[0]

    def search(topics, embeddings=True):
        rows = conn.execute(
            "SELECT memory_id, dense_rank, lexical_rank, priority_rank FROM memsql.memory_search("
            "'redis cache', %s::vector[], touch => false, topics => %s)",
            ([q] if embeddings else None, topics)).fetchall()
        return rows

    unfiltered = search(None)
    assert {r[0] for r in unfiltered} == set(ids) and any(r[3] for r in unfiltered)  # the principle is a priority row
    caching = search(["caching"])
    assert sorted(r[0] for r in caching) == [ids[0], ids[2]]
    assert sorted(r[1] for r in caching) == [1, 2] and sorted(r[2] for r in caching) == [1, 2]  # ranks among the kept
    assert all(r[3] is None for r in caching)
    assert sorted(r[0] for r in search(["caching"], embeddings=False)) == [ids[0], ids[2]]  # lexical arm alone
    assert sorted(r[0] for r in search(["ops", "deploy"])) == [ids[1], ids[2], ids[3]]
    assert search(["nothing"]) == []


def test_async_memory_runs_filter_topics_and_evaluate_on_its_own_pool(dsn, embedder, conn, tmp_path, monkeypatch):
    """AsyncMemory's judge, filtered add (with topics), restore and evaluate run the same steps as Memory, on its
    pool: no synchronous Memory is made (its constructor is disabled here)."""
    import asyncio

    from memsql import AsyncMemory
    from memsql.client import Memory

    cfg = topic_config(tmp_path)
    cfg.values["memory.filter.enabled"] = True
    golden = tmp_path / "golden.yaml"

    def no_sync_client(*args, **kwargs):
        raise AssertionError("AsyncMemory opened a synchronous Memory")

    monkeypatch.setattr(Memory, "__init__", no_sync_client)

    async def main():
        async with AsyncMemory(dsn=dsn, embedder=embedder, config=cfg) as mem:
            short = await mem.judge("ok")
            mid = await mem.add(TEXTS[2])
            again = await mem.add(TEXTS[2] + " ")  # a near duplicate: the filter does not save it
            assert await mem.tag(memory_id=mid, importance=0.1) == 1
            forgotten = await mem.forget(dry_run=False)  # importance below the 0.3 cut: archived
            restored = await mem.restore([mid])
            golden.write_text(f"- query: how do releases roll out\n  relevant: [\"memory:{mid}\"]\n")
            report = await mem.evaluate(golden, k=3, memory_rerank=False)  # importance 0.1 is below the cut
            return short, mid, again, forgotten, restored, report

    short, mid, again, forgotten, restored, report = asyncio.run(main())
    assert (short.keep, short.reason) == (False, "too_short")
    assert again is None
    assert [c.memory_id for c in forgotten] == [mid] and [r.restored for r in restored] == [True]
    row = conn.execute("SELECT topics, embedding IS NOT NULL FROM memsql.memories WHERE id = %s", (mid,)).fetchone()
    assert row == (["deployment"], True)  # the topics Memory gives it (above), embedded again after the restore
    assert report["queries"][0]["found"] == {f"memory:{mid}": 1} and report["warnings"] == []
