"""memsql.evaluate: ranx metrics on hand-made runs (exact values), golden files, Memory.evaluate end to end."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from memsql.evaluate import (
    GoldenFileError,
    GoldenQuery,
    evaluate_runs,
    load_golden,
    match_label,
    ranks_to_run,
    write_report,
)
from memsql.results import SearchResult

REPO = Path(__file__).resolve().parents[1]

# q1: relevant a, b at ranks 2 and 3; q2: relevant c at rank 3.
QRELS = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}
RUN = {"q1": {"x": 1.0, "a": 0.5, "b": 1 / 3}, "q2": {"y": 1.0, "z": 0.5, "c": 1 / 3}}


def test_evaluate_runs_exact_values():
    out = evaluate_runs(QRELS, {"m": RUN}, ks=(1, 3), per_query=True)["m"]
    overall, per_query = out["overall"], out["per_query"]
    assert per_query["q1"]["mrr@3"] == pytest.approx(0.5)  # first relevant at rank 2
    assert per_query["q2"]["mrr@3"] == pytest.approx(1 / 3)
    assert overall["mrr@3"] == pytest.approx((0.5 + 1 / 3) / 2)
    assert overall["precision@1"] == 0.0
    assert overall["precision@3"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert overall["recall@1"] == 0.0
    assert overall["recall@3"] == pytest.approx(1.0)
    assert overall["hit_rate@1"] == 0.0 and overall["hit_rate@3"] == 1.0
    ndcg_q1 = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    ndcg_q2 = (1 / math.log2(4)) / 1
    assert per_query["q1"]["ndcg@3"] == pytest.approx(ndcg_q1)
    assert overall["ndcg@3"] == pytest.approx((ndcg_q1 + ndcg_q2) / 2)
    assert set(overall) == {f"{m}@{k}" for m in ("precision", "recall", "mrr", "ndcg", "hit_rate") for k in (1, 3)}


def test_evaluate_runs_several_methods_missing_queries_and_explicit_metrics():
    perfect = {"q1": {"a": 1.0, "b": 0.5}, "q2": {"c": 1.0}}
    only_q1 = {"q1": {"b": 1.0, "x": 0.5}, "q9": {"c": 1.0}}  # q2 missing (scores 0), q9 not judged (ignored)
    out = evaluate_runs(QRELS, {"perfect": perfect, "partial": only_q1}, metrics=["mrr@10", "recall@1"])
    assert out["perfect"]["overall"] == {"mrr@10": 1.0, "recall@1": pytest.approx(0.75)}
    assert out["partial"]["overall"] == {"mrr@10": pytest.approx(0.5), "recall@1": pytest.approx(0.25)}
    assert evaluate_runs(QRELS, {"m": RUN}, metrics=["mrr@10"])["m"]["overall"] == {"mrr@10": pytest.approx(5 / 12)}


def test_evaluate_runs_method_without_any_result_scores_zero():
    out = evaluate_runs(QRELS, {"nothing": {}, "empty lists": {"q1": {}, "q2": {}}}, metrics=["mrr@10", "recall@10"])
    assert out["nothing"]["overall"] == out["empty lists"]["overall"] == {"mrr@10": 0.0, "recall@10": 0.0}


def test_evaluate_runs_rejects_unjudged_queries():
    with pytest.raises(ValueError, match="no relevant item"):
        evaluate_runs({"q1": {"a": 0}}, {"m": {"q1": {"a": 1.0}}})
    with pytest.raises(ValueError, match="no query"):
        evaluate_runs({}, {"m": {}})


def test_ranks_to_run_keeps_first_occurrence_in_order():
    run = ranks_to_run(["d1", "d2", "d1", "d3", "d2"])
    assert run == {"d1": 1.0, "d2": 0.5, "d3": pytest.approx(1 / 3)}
    assert evaluate_runs({"q": {"d3": 1}}, {"m": {"q": run}}, metrics=["mrr@10"])["m"]["overall"]["mrr@10"] == (
        pytest.approx(1 / 3))


# ---------------------------------------------------------------------------------------------
# Golden files


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "golden.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_load_golden_reads_entries_in_order(tmp_path):
    golden = load_golden(write(tmp_path, """
- query: "MS005"
  relevant: [README.md]
- id: mem
  query: "a memory"
  relevant: ["memory:12", "memory:12"]
  namespace: work
"""))
    assert golden == [GoldenQuery("q1", "MS005", ("README.md",)),
                      GoldenQuery("mem", "a memory", ("memory:12",), "work")]
    assert [g.level for g in golden] == ["document", "memory"]


@pytest.mark.parametrize("text, message", [
    ('- query: "ok"\n  relevant: [a.md]\n- query: "second one"\n',
     r"entry 2 \('second one'\): 'relevant' must be a non-empty list"),
    ('- query: "x"\n  relevant: [a.md]\n  namspace: w\n', r"entry 1 \('x'\): unknown key\(s\) namspace"),
    ('- query: ""\n  relevant: [a.md]\n', r"entry 1: 'query' must be a non-empty string"),
    ('- query: "x"\n  relevant: ["memory:1", "doc:2"]\n', r"entry 1 \('x'\): mixes memory:<id>"),
    ('- query: "x"\n  relevant: ["memory:one"]\n', r"'memory:one' is not memory:<integer id>"),
    ('- query: "x"\n  relevant: [3]\n', r"relevant entry 3 is not a non-empty string"),
    ('- id: a\n  query: "x"\n  relevant: [a.md]\n- id: a\n  query: "y"\n  relevant: [b.md]\n',
     r"entry 2: duplicate id 'a'"),
    ("query: x\n", r"expected a non-empty list of queries"),
    ("- [unclosed\n", r"not valid YAML"),
])
def test_load_golden_names_the_bad_entry(tmp_path, text, message):
    with pytest.raises(GoldenFileError, match=message):
        load_golden(write(tmp_path, text))


def test_load_golden_missing_file(tmp_path):
    with pytest.raises(GoldenFileError, match="cannot read golden file"):
        load_golden(tmp_path / "nope.yaml")


def test_example_golden_file_is_valid():
    golden = load_golden(REPO / "examples" / "golden.yaml")
    assert golden[0] == GoldenQuery("error-code", "MS005", ("README.md",))
    assert all(g.level == "document" for g in golden)


def result(memory_id: int, document_id: int, source_uri: str | None) -> SearchResult:
    """A SearchResult by hand: the three fields match_label reads, None for every other column."""
    values = {f.name: None for f in fields(SearchResult)}
    values.update(memory_id=memory_id, document_id=document_id, source_uri=source_uri, content="x", metadata={})
    return SearchResult(**values)


def test_match_label_rules():
    g = GoldenQuery("q", "x", ("README.md", "doc:7"))
    assert match_label(g, result(1, 3, "/home/me/repo/README.md")) == "README.md"
    assert match_label(g, result(2, 4, "/home/me/repo/OLD_README.md")) == "doc:4"  # suffix at a '/' only
    assert match_label(g, result(3, 7, None)) == "doc:7"
    nested = GoldenQuery("q", "x", ("docs/search.md",))
    assert match_label(nested, result(4, 5, "/r/docs/search.md")) == "docs/search.md"
    assert match_label(GoldenQuery("q", "x", ("memory:4",)), result(4, 5, "/r/README.md")) == "memory:4"


# ---------------------------------------------------------------------------------------------
# End to end on a real database and the real model

NOTES = {
    "cache.md": "# Cache\n\nWe chose Redis for the orders cache with a five minute TTL; the code ZX-4711 marks it.\n",
    "garden.md": "# Garden\n\nTomatoes need full sun and deep watering twice a week.\n",
    "deploy.md": "# Deploy\n\nBlue-green rollout: the load balancer flips traffic after health checks.\n",
}


@pytest.fixture
def ingested(memory, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text, encoding="utf-8")
    summary = memory.ingest([notes])
    assert summary.inserted == 3
    return memory


def test_evaluate_end_to_end(ingested, tmp_path):
    mem = ingested
    note = mem.add("The standup moved to 9:30 on Tuesdays.")
    garden_doc = next(r.document_id for r in mem.search("tomatoes", touch=False) if r.source_uri.endswith("garden.md"))
    golden = write(tmp_path, f"""
- id: code
  query: "ZX-4711"
  relevant: [notes/cache.md]
- id: two-docs
  query: "when does the load balancer flip traffic"
  relevant: [deploy.md, "doc:{garden_doc}"]
- id: note
  query: "when is the standup"
  relevant: ["memory:{note}"]
""")
    report = mem.evaluate(golden, k=3)
    by_id = {q["id"]: q for q in report["queries"]}
    assert report["metrics"] == [f"{m}@{k}" for m in ("precision", "recall", "mrr", "ndcg", "hit_rate") for k in (1, 3)]
    assert by_id["code"]["found"] == {"notes/cache.md": 1}
    assert by_id["code"]["metrics"]["mrr@3"] == 1.0
    assert by_id["code"]["top"][0]["label"] == "notes/cache.md" and by_id["code"]["top"][0]["relevant"]
    assert by_id["two-docs"]["found"]["deploy.md"] == 1
    assert by_id["two-docs"]["level"] == "document"
    # 4 documents (3 files + the note): each appears once among the judged items
    assert len(by_id["two-docs"]["top"]) == 3 and len({t["document_id"] for t in by_id["two-docs"]["top"]}) == 3
    assert by_id["note"]["level"] == "memory" and by_id["note"]["found"] == {f"memory:{note}": 1}
    assert report["overall"]["hit_rate@3"] == 1.0
    assert report["search_options"] == {"touch": False}
    assert sum(s.accesses for s in mem.stats()) == 0  # touch=False: access statistics untouched

    md_path, json_path = write_report(report, tmp_path / "out")
    md = md_path.read_text(encoding="utf-8")
    assert "| metric | @1 | @3 |" in md and "| code | ZX-4711 | notes/cache.md (1) |" in md
    assert json.loads(json_path.read_text(encoding="utf-8"))["overall"] == report["overall"]


def test_evaluate_writes_reports(ingested, dsn, tmp_path):
    from memsql.client import Memory

    golden = write(tmp_path, '- query: "Redis orders cache TTL"\n  relevant: [cache.md]\n')
    with Memory(dsn=dsn, namespace="default") as mem:
        report = mem.evaluate(golden, tmp_path / "out", k=5, memory_rerank=False)
    assert report["queries"][0]["found"] == {"cache.md": 1}
    assert report["golden"] == str(golden)
    assert report["search_options"] == {"memory_rerank": False, "touch": False}
    assert sorted(Path(p).name for p in report["files"]) == ["report.json", "report.md"]
    assert report["warnings"] == []


def test_evaluate_warns_about_an_empty_namespace(ingested, tmp_path):
    golden = write(tmp_path, '- query: "Redis orders cache TTL"\n  relevant: [cache.md]\n'
                             '- query: "cache"\n  relevant: [cache.md]\n  namespace: nothing-here\n')
    report = ingested.evaluate(golden, tmp_path / "out", namespace="default", k=5)
    assert report["warnings"] == ["namespace 'nothing-here' holds no memories, so its queries score 0: ingest it first"]


# ---------------------------------------------------------------------------------------------
# bench/corpora.py on the shared LoCoMo file


def _bench_corpora():
    """bench/corpora.py imported by path (bench/ is scripts, not a package)."""
    if "bench_corpora" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_corpora", REPO / "bench" / "corpora.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["bench_corpora"] = module  # dataclasses look their module up while the file runs
        spec.loader.exec_module(module)
    return sys.modules["bench_corpora"]


def test_parse_evidence():
    corpora = _bench_corpora()
    assert corpora.parse_evidence(["D8:6; D9:17", "D1:3", "D1:3", "D:x", "D2:4,D2:5 junk"]) == [
        "D8:6", "D9:17", "D1:3", "D2:4", "D2:5"]


def test_locomo_corpus_from_shared_data(shared_data):
    corpora = _bench_corpora()
    corpus = corpora.locomo(shared_data / "locomo" / "locomo_dev.json")
    assert corpus.info["conversations"] == 3 and corpus.info["turns"] == 1451
    assert corpus.info["skipped_questions"] == {"adversarial": 112, "no_evidence": 2}
    assert len(corpus.questions) == 497 - 112 - 2
    q = corpus.questions[0]
    assert q.namespace == "locomo-conv-26" and all(v == 1 for v in q.relevant.values())
    sections = [s for d in corpus.documents["locomo-conv-26"] for s in d.sections]
    assert all(s.atomic and s.metadata["dia_id"] for s in sections)
