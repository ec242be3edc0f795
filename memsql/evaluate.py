"""Retrieval evaluation: ranking metrics (ranx), golden query files, reports.

Metrics are computed by the ranx library, never by hand: :func:`evaluate_runs` turns plain dicts
into ranx ``Qrels`` / ``Run`` objects and asks ranx for precision@k, recall@k, mrr@k, ndcg@k and
hit_rate@k. The ranking itself is memsql's: results are kept in the order ``memory_search``
returned them, and the only thing done in Python is mapping chunk (memory) ranks to judged-item
ranks, each item keeping its first (best) occurrence.

Golden file (YAML, read with ``yaml.safe_load``): a list of queries::

    - query: "MS005"              # the question, required
      relevant: [README.md]       # required, non-empty
      namespace: default          # optional; default the namespace given to eval
      id: ms005                   # optional; default q1, q2, ... (position in the file)

A ``relevant`` entry is one of:

- ``memory:<id>``: that memory;
- ``doc:<id>``: that document (any of its memories);
- anything else, a *source*: it matches a result whose ``source_uri`` equals it or ends with
  ``"/" + entry``. ``README.md`` matches ``/home/me/repo/README.md`` (so a golden file works
  wherever the repository is checked out) and any other ``.../README.md`` of the namespace: write
  more of the path (``docs/README.md``) to tell files apart.

A query is judged either on memories (every entry is ``memory:<id>``) or on documents (every
entry is ``doc:<id>`` or a source); mixing the two in one query is an error. On documents, each
result is labelled with the first entry it matches, else ``doc:<document_id>``, and a label
keeps only its first position: a document with three matching chunks counts once, at its best
chunk's rank, and the results after it move up.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from memsql.errors import InvalidArgument
from memsql.results import SearchResult


METRIC_FAMILIES = ("precision", "recall", "mrr", "ndcg", "hit_rate")
"""ranx metric names computed by default, each at every k."""

DEFAULT_KS = (1, 3, 5, 10)
_MEMORY_RE = re.compile(r"memory:(\d+)")
_DOC_RE = re.compile(r"doc:(\d+)")
_GOLDEN_KEYS = {"query", "relevant", "namespace", "id"}


class GoldenFileError(InvalidArgument):
    """A golden file that cannot be read or has a malformed entry (the message names the entry)."""


# ---------------------------------------------------------------------------------------------
# Metrics


def metric_names(ks: Iterable[int] = DEFAULT_KS, families: Iterable[str] = METRIC_FAMILIES) -> list[str]:
    """ranx metric names for every family at every cutoff, e.g. ``["precision@1", ..., "hit_rate@10"]``."""
    return [f"{family}@{k}" for family in families for k in ks]


def evaluate_runs(qrels: Mapping[str, Mapping[str, int]], runs: Mapping[str, Mapping[str, Mapping[str, float]]],
                  ks: Sequence[int] = DEFAULT_KS, metrics: Sequence[str] | None = None,
                  per_query: bool = False) -> dict[str, dict[str, Any]]:
    """Score several runs against the same judgements with ranx.

    A run query missing from ``qrels`` is ignored; a judged query missing from a run (or with no
    results) scores 0. Items are ranked by descending score as ranx does: give distinct scores
    (e.g. 1 / rank) to keep a given order exactly.

    Args:
        qrels: query id -> {item id: relevance grade (int, > 0 means relevant)}; every query needs
            at least one relevant item.
        runs: method name -> query id -> {item id: score (float, higher is better)}.
        ks: cutoffs for the default metric families (precision, recall, mrr, ndcg, hit_rate).
        metrics: explicit ranx metric names (e.g. ``["ndcg@10", "recall@100"]``) instead of the
            families at ``ks``.
        per_query: also return each query's values.

    Returns:
        method name -> ``{"overall": {metric: mean over judged queries (float)}}``, plus
        ``"per_query": {query id: {metric: float}}`` when ``per_query`` is True.

    Raises:
        ValueError: no judged query, or a query without any relevant item.
    """
    Qrels, Run, evaluate = _ranx()
    names = list(metrics) if metrics else metric_names(ks)
    if not qrels:
        raise ValueError("evaluate_runs: qrels holds no query")
    unjudged = [q for q, rel in qrels.items() if not any(v > 0 for v in rel.values())]
    if unjudged:
        raise ValueError(f"evaluate_runs: {len(unjudged)} queries have no relevant item, e.g. {unjudged[0]!r}")
    codes: dict[str, str] = {}

    def code(item: Any) -> str:
        # Item ids become fixed-width codes: with numba's JIT on (see _ranx), ranx compiles (cached on disk) one
        # specialisation per id width, and a shared cache written by concurrent processes was seen to serve a
        # wrong one.
        return codes.setdefault(str(item), f"{len(codes):0{_CODE_WIDTH}d}")

    coded_qrels = {str(q): {code(d): int(v) for d, v in rel.items()} for q, rel in qrels.items()}
    ranx_qrels = _checked(Qrels(coded_qrels), coded_qrels, "qrels")
    out: dict[str, dict[str, Any]] = {}
    for method, run in runs.items():
        coded = {str(q): {code(d): float(s) for d, s in docs.items()} for q, docs in run.items() if str(q) in qrels}
        if not any(coded.values()):  # ranx cannot build a run without any item; a placeholder changes no metric
            coded[next(iter(coded_qrels))] = {"~" * _CODE_WIDTH: 0.0}
        ranx_run = _checked(Run(coded, name=method), coded, f"run {method!r}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba's uint64 -> int64 cast warning inside ranx
            means = evaluate(ranx_qrels, ranx_run, names, make_comparable=True)
        if not isinstance(means, dict):  # ranx returns a bare number for a single metric
            means = {names[0]: means}
        result: dict[str, Any] = {"overall": {m: float(means[m]) for m in names}}
        if per_query:
            result["per_query"] = {q: {m: float(ranx_run.scores[m][q]) for m in names} for q in coded_qrels}
        out[method] = result
    return out


_CODE_WIDTH = 12


def _ranx():
    """ranx's Qrels, Run and evaluate, with numba's JIT off unless numba was imported (and configured) before.

    ranx builds its Qrels and Run in numba typed dictionaries, whose methods numba compiles again in every new
    process (typed-dictionary code is not cached on disk, so warming ranx's cache at install does not help):
    measured under load, one query scored in 33 to 61 s with the JIT and 8 s without, 1,000 queries of 100
    results in 28 s and 10 s (ranx's own import, 5 to 8 s, included in both); the metrics are the same
    (tests/test_evaluate.py checks exact values). NUMBA_DISABLE_JIT=0 in the environment keeps the JIT.
    """
    import os
    import sys

    if "numba" in sys.modules or "NUMBA_DISABLE_JIT" in os.environ:
        from ranx import Qrels, Run, evaluate
    else:
        os.environ["NUMBA_DISABLE_JIT"] = "1"  # read once, when numba is imported (here, by ranx)
        try:
            from ranx import Qrels, Run, evaluate
        finally:
            del os.environ["NUMBA_DISABLE_JIT"]  # not passed on to processes started later
    return Qrels, Run, evaluate


def _checked(obj: Any, expected: Mapping[str, Mapping[str, float]], what: str) -> Any:
    """``obj`` (ranx Qrels or Run) after checking that ranx stored exactly ``expected``.

    Raises:
        RuntimeError: ranx's compiled code altered the ids or values (a stale numba cache).
    """
    stored = obj.to_dict()
    if {q: dict(d) for q, d in stored.items() if d} != {q: dict(d) for q, d in expected.items() if d}:
        raise RuntimeError(f"ranx stored a different {what} than it was given; its numba cache is likely stale: "
                           "delete the __pycache__ folders under site-packages/ranx and run again")
    return obj


def ranks_to_run(items: Iterable[str]) -> dict[str, float]:
    """A ranked list of item ids as one query's run: first occurrence kept, score 1 / rank.

    Args:
        items: item ids best first (repeats allowed, e.g. several chunks of one document).

    Returns:
        {item id: 1 / rank}, ranks 1, 2, ... counted over distinct items, so ranx keeps this order.
    """
    run: dict[str, float] = {}
    for item in items:
        if item not in run:
            run[item] = 1.0 / (len(run) + 1)
    return run


# ---------------------------------------------------------------------------------------------
# Golden files


@dataclass(frozen=True)
class GoldenQuery:
    """One judged query of a golden file.

    Attributes:
        id: the entry's ``id``, else ``q<position>`` (1-based).
        query: the question.
        relevant: relevant entries: ``memory:<id>``, ``doc:<id>`` or sources (see the module doc).
        namespace: namespace to search, or None for the evaluation's default.
    """

    id: str
    query: str
    relevant: tuple[str, ...]
    namespace: str | None = None

    @property
    def level(self) -> str:
        """``"memory"`` when every entry is ``memory:<id>``, else ``"document"``."""
        return "memory" if all(_MEMORY_RE.fullmatch(e) for e in self.relevant) else "document"


def load_golden(path: str | Path) -> list[GoldenQuery]:
    """Read and validate a golden YAML file.

    Args:
        path: a YAML file holding a list of {query, relevant, namespace?, id?} mappings.

    Returns:
        The queries in file order.

    Raises:
        GoldenFileError: unreadable file, invalid YAML, or a malformed entry; the message names
            the entry (position and query) and what is wrong.
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise GoldenFileError(f"cannot read golden file {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise GoldenFileError(f"golden file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, list) or not data:
        raise GoldenFileError(f"golden file {path}: expected a non-empty list of queries, got {type(data).__name__}",
                              "each item: {query: ..., relevant: [...], namespace: ... (optional)}")
    queries: list[GoldenQuery] = []
    seen: set[str] = set()
    for pos, entry in enumerate(data, 1):
        queries.append(_golden_entry(path, pos, entry))
        if queries[-1].id in seen:
            raise GoldenFileError(f"golden file {path}, entry {pos}: duplicate id {queries[-1].id!r}")
        seen.add(queries[-1].id)
    return queries


def _golden_entry(path: Path, pos: int, entry: Any) -> GoldenQuery:
    where = f"golden file {path}, entry {pos}"
    if not isinstance(entry, dict):
        raise GoldenFileError(f"{where}: expected a mapping with query and relevant, got {type(entry).__name__}")
    query = entry.get("query")
    if isinstance(query, str) and query.strip():
        where += f" ({query.strip()[:40]!r})"
    else:
        raise GoldenFileError(f"{where}: 'query' must be a non-empty string")
    unknown = set(entry) - _GOLDEN_KEYS
    if unknown:
        raise GoldenFileError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}",
                              f"allowed keys: {', '.join(sorted(_GOLDEN_KEYS))}")
    relevant = entry.get("relevant")
    if not isinstance(relevant, list) or not relevant:
        raise GoldenFileError(f"{where}: 'relevant' must be a non-empty list",
                              "entries: memory:<id>, doc:<id>, or a source such as README.md")
    for item in relevant:
        if not isinstance(item, str) or not item.strip():
            raise GoldenFileError(f"{where}: relevant entry {item!r} is not a non-empty string")
        if item.startswith("memory:") and not _MEMORY_RE.fullmatch(item):
            raise GoldenFileError(f"{where}: {item!r} is not memory:<integer id>")
        if item.startswith("doc:") and not _DOC_RE.fullmatch(item):
            raise GoldenFileError(f"{where}: {item!r} is not doc:<integer id>")
    kinds = {bool(_MEMORY_RE.fullmatch(item)) for item in relevant}
    if len(kinds) > 1:
        raise GoldenFileError(f"{where}: mixes memory:<id> entries with documents",
                              "judge a query either on memories or on documents (doc:<id> / sources)")
    namespace = entry.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace):
        raise GoldenFileError(f"{where}: 'namespace' must be a non-empty string")
    qid = entry.get("id", f"q{pos}")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not str(qid):
        raise GoldenFileError(f"{where}: 'id' must be a string")
    return GoldenQuery(id=str(qid), query=query, relevant=tuple(dict.fromkeys(s.strip() for s in relevant)),
                       namespace=namespace)


def match_label(golden: GoldenQuery, result: "SearchResult") -> str:
    """The judged-item label of one search result for a golden query (rule in the module doc).

    Returns:
        On memories: ``memory:<memory_id>``. On documents: the first relevant entry the result
        matches, else ``doc:<document_id>``.
    """
    if golden.level == "memory":
        return f"memory:{result.memory_id}"
    uri = result.source_uri or ""
    for entry in golden.relevant:
        m = _DOC_RE.fullmatch(entry)
        if m:
            if int(m.group(1)) == result.document_id:
                return entry
        elif uri and (uri == entry or uri.endswith("/" + entry)):
            return entry
    return f"doc:{result.document_id}"


DEPTH = 100
"""Memories asked from memory_search per golden query, at least: more than k, so that a document with several
chunks does not crowd out the ones after it."""


def search_depth(k: int) -> int:
    """The k of each golden query's search for metrics down to ``k``: max(:data:`DEPTH`, k)."""
    return max(DEPTH, k)


def score_golden(golden: Sequence[GoldenQuery], ranked: Sequence[Sequence[SearchResult]],
                 namespaces: Sequence[str], k: int = 10, search_options: Mapping[str, Any] | None = None,
                 ks: Sequence[int] = DEFAULT_KS) -> dict[str, Any]:
    """Score the rankings of the golden queries (Memory.evaluate searches them, then calls this).

    Results keep memory_search's order; chunk ranks become judged-item ranks by first occurrence (see
    :func:`match_label`); nothing else is re-ranked.

    Args:
        golden: the queries (:func:`load_golden`).
        ranked: each query's search results, best first (``search_depth(k)`` of them).
        namespaces: the namespace each query was searched in.
        k: the deepest cutoff reported; metrics at each of ``ks`` up to ``k``, and at ``k``.
        search_options: the memory_search options of the searches (recorded in the report).
        ks: cutoffs.

    Returns:
        A JSON-serialisable dict: ``k``, ``metrics`` (names), ``overall`` {metric: mean},
        ``queries`` [{id, query, namespace, level, relevant, found {entry: rank or None},
        metrics {metric: value}, top [first k items: rank, label, relevant, memory_id, document_id,
        source_uri, title, score, snippet]}], ``search_options``, ``created_at`` (ISO UTC).

    Raises:
        ValueError: empty golden list or k < 1.
    """
    if not golden:
        raise ValueError("score_golden: no golden queries")
    if k < 1:
        raise ValueError(f"score_golden: k must be >= 1, got {k}")
    cutoffs = sorted({c for c in ks if c <= k} | {k})
    names = metric_names(cutoffs)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    details: list[dict[str, Any]] = []
    for g, results, ns in zip(golden, ranked, namespaces):
        labels = [match_label(g, r) for r in results]
        run[g.id] = ranks_to_run(labels)
        qrels[g.id] = {entry: 1 for entry in g.relevant}
        top, seen = [], set()
        for label, r in zip(labels, results):
            if label in seen:
                continue
            seen.add(label)
            if len(top) < k:
                top.append({"rank": len(seen), "label": label, "relevant": label in qrels[g.id],
                            "memory_id": r.memory_id, "document_id": r.document_id, "source_uri": r.source_uri,
                            "title": r.title, "score": r.score, "snippet": " ".join(r.content.split())[:120]})
        ranks = {label: i for i, label in enumerate(run[g.id], 1)}
        details.append({"id": g.id, "query": g.query, "namespace": ns, "level": g.level,
                        "relevant": list(g.relevant), "found": {e: ranks.get(e) for e in g.relevant}, "top": top})
    scores = evaluate_runs(qrels, {"memsql": run}, metrics=names, per_query=True)["memsql"]
    for d in details:
        d["metrics"] = scores["per_query"][d["id"]]
    return {
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "k": k, "depth": search_depth(k), "metrics": names, "search_options": dict(search_options or {}),
        "overall": scores["overall"], "queries": details,
    }


# ---------------------------------------------------------------------------------------------
# Reports


def _fmt(x: float | None) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def report_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown of a :func:`run_golden` report: overall metrics by cutoff, then one row per query."""
    k = report["k"]
    cutoffs = sorted({int(m.split("@")[1]) for m in report["metrics"]})
    families = [f for f in METRIC_FAMILIES if f"{f}@{k}" in report["metrics"]]
    lines = [f"# memsql evaluation: {len(report['queries'])} queries, k = {k}", ""]
    if report.get("golden"):
        lines += [f"Golden file: `{report['golden']}`. Created {report['created_at']}.", ""]
    lines += ["## Overall (mean over queries)", "",
              "| metric | " + " | ".join(f"@{c}" for c in cutoffs) + " |",
              "|---|" + "---:|" * len(cutoffs)]
    for f in families:
        lines.append(f"| {f} | " + " | ".join(_fmt(report["overall"].get(f"{f}@{c}")) for c in cutoffs) + " |")
    lines += ["", "## Per query", "",
              f"| id | query | relevant (rank) | hit@{k} | recall@{k} | mrr@{k} | ndcg@{k} | top result |",
              "|---|---|---|---:|---:|---:|---:|---|"]
    for q in report["queries"]:
        found = ", ".join(f"{e} ({r if r is not None else '-'})" for e, r in q["found"].items())
        top = q["top"][0] if q["top"] else None
        top_text = "-" if top is None else f"{'*' if top['relevant'] else ''}{top['label']}"
        m = q["metrics"]
        lines.append(f"| {_cell(q['id'])} | {_cell(q['query'][:60])} | {_cell(found)} | {_fmt(m[f'hit_rate@{k}'])} | "
                     f"{_fmt(m[f'recall@{k}'])} | {_fmt(m[f'mrr@{k}'])} | {_fmt(m[f'ndcg@{k}'])} | {_cell(top_text)} |")
    lines += ["", "Rank: position of the entry's best result among distinct judged items (chunks of one document "
              "count once); `-` = not in the results. `*` marks a relevant top result.", ""]
    return "\n".join(lines)


def write_report(report: Mapping[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``report.md`` and ``report.json`` into ``out_dir`` (created if needed).

    Returns:
        (path of report.md, path of report.json).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / "report.md", out / "report.json"
    md.write_text(report_markdown(report), encoding="utf-8")
    js.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    return md, js


__all__ = [
    "GoldenFileError", "GoldenQuery", "evaluate_runs", "load_golden", "match_label", "metric_names",
    "ranks_to_run", "report_markdown", "score_golden", "search_depth", "write_report",
]
