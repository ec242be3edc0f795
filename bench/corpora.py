"""Evaluation datasets as memsql Documents plus judged questions: LoCoMo files and BEIR folders.

Pure functions (no database, no model), shared by the benchmark scripts in bench/. Named
``corpora`` rather than ``datasets``: bench/ is first on ``sys.path`` when a script here runs, and
a ``datasets`` module would shadow the Hugging Face package of that name for every importer.

- LoCoMo (``locomo_dev.json`` layout): each conversation is one namespace, each turn one memory
  (one document per session, one atomic section per turn, via :func:`memsql.demo.locomo_documents`);
  a question's relevant items are its evidence turns (dia_id "D<session>:<turn>"), category 5
  (adversarial) skipped.
- BEIR (``corpus.jsonl``, ``queries[.split].jsonl``, ``qrels/<split>.tsv``): one namespace, one
  document per corpus entry (title + " " + text, adapter "text", source_key = the entry's _id),
  chunked by the normal chunker; relevant items are corpus ids.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from memsql.adapters.base import Document, Section
from memsql.results import SearchResult
from memsql.demo import locomo_documents

_DIA_ID = re.compile(r"D\d+:\d+")


@dataclass(frozen=True)
class Question:
    """One judged question.

    Attributes:
        id: unique within its corpus.
        text: the question, searched as is.
        namespace: the namespace it searches.
        relevant: item id -> relevance grade (int > 0).
    """

    id: str
    text: str
    namespace: str
    relevant: dict[str, int]


@dataclass
class Corpus:
    """A dataset ready to ingest and evaluate.

    Attributes:
        name: short name used in results ("locomo", "scifact", ...).
        source: the file or folder it was read from.
        documents: namespace -> documents to ingest there.
        questions: judged questions, in file order.
        item_of: maps one search result to the id of the judged item it belongs to (a turn's dia_id,
            a corpus document's _id); several results may map to one item (chunks of a document).
        search_k: memories asked from memory_search per question.
        metrics: ranx metric names reported.
        info: sizes and skipped counts, for the results file.
    """

    name: str
    source: str
    documents: dict[str, list[Document]]
    questions: list[Question]
    item_of: Callable[[SearchResult], str]
    search_k: int
    metrics: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# LoCoMo


def parse_evidence(evidence: list[str]) -> list[str]:
    """Evidence dia_ids of a LoCoMo question, in order, without repeats.

    A string may hold several ids ("D8:6; D9:17"): it is split on ';', ',' and white space, and
    pieces that are not "D<int>:<int>" are dropped.

    Args:
        evidence: the question's ``evidence`` list.

    Returns:
        dia_ids such as ["D8:6", "D9:17"] ([] when nothing parses).
    """
    ids = [piece for s in evidence for piece in re.split(r"[;,\s]+", str(s)) if _DIA_ID.fullmatch(piece)]
    return list(dict.fromkeys(ids))


def _dia_id(result: SearchResult) -> str:
    return str(result.metadata.get("dia_id") or f"memory:{result.memory_id}")


def locomo(path: Path, limit_questions: int | None = None) -> Corpus:
    """A LoCoMo file as a corpus: one namespace per conversation, one memory per turn.

    Args:
        path: LoCoMo JSON (a list of samples with conversation and qa).
        limit_questions: keep only the first n judged questions (file order); conversations left
            without a question are not ingested.

    Returns:
        Corpus "locomo": items are dia_ids (a memory's ``metadata["dia_id"]``); metrics evidence
        recall@5, recall@10, ndcg@10, mrr@10 with binary relevance; 20 memories per search.
    """
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    documents: dict[str, list[Document]] = {}
    questions: list[Question] = []
    skipped = {"adversarial": 0, "no_evidence": 0}
    turns = 0
    for index, sample in enumerate(samples):
        namespace = f"locomo-{sample['sample_id']}"
        for n, qa in enumerate(sample.get("qa", [])):
            if qa.get("category") == 5:
                skipped["adversarial"] += 1
                continue
            evidence = parse_evidence(qa.get("evidence") or [])
            if not evidence:
                skipped["no_evidence"] += 1
                continue
            if limit_questions is None or len(questions) < limit_questions:
                questions.append(Question(f"{sample['sample_id']}/{n}", qa["question"], namespace,
                                          {e: 1 for e in evidence}))
        if any(q.namespace == namespace for q in questions):
            docs, _ = locomo_documents(Path(path), index)
            documents[namespace] = docs
            turns += sum(len(d.sections) for d in docs)
    info = {"conversations": len(documents), "sessions": sum(map(len, documents.values())), "turns": turns,
            "questions": len(questions), "skipped_questions": skipped}
    return Corpus("locomo", str(path), documents, questions, _dia_id, search_k=20,
                  metrics=("recall@5", "recall@10", "ndcg@10", "mrr@10"), info=info)


# ---------------------------------------------------------------------------------------------
# BEIR


def _corpus_id(result: SearchResult) -> str:
    return (result.source_uri or "").rsplit("#", 1)[-1]


def beir_split(folder: Path) -> str:
    """The split evaluated by default: "train" when qrels/train.tsv exists, else "test", else "dev"."""
    for split in ("train", "test", "dev"):
        if (Path(folder) / "qrels" / f"{split}.tsv").exists():
            return split
    raise FileNotFoundError(f"{folder}/qrels holds no train.tsv, test.tsv or dev.tsv")


def beir(folder: Path, split: str | None = None, limit_questions: int | None = None) -> Corpus:
    """A BEIR-layout folder as a corpus: one document per corpus entry, ranked by its best chunk.

    Args:
        folder: holds corpus.jsonl, queries.<split>.jsonl (or queries.jsonl) and qrels/<split>.tsv
            (tab-separated, header query-id, corpus-id, score).
        split: qrels split; default :func:`beir_split`.
        limit_questions: keep only the first n judged queries (file order).

    Returns:
        Corpus named after the folder: items are corpus _ids (kept after '#' in each document's
        source_uri); metrics ndcg@10, recall@10, recall@100, mrr@10; 100 memories per search, so
        a document's rank is the rank of its best chunk among distinct documents.
    """
    folder = Path(folder)
    split = split or beir_split(folder)
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels" / f"{split}.tsv", encoding="utf-8", newline="") as f:
        rows = csv.reader(f, delimiter="\t")
        for row in rows:
            if len(row) < 3 or row[0] == "query-id" or not row[2].strip().lstrip("-").isdigit():
                continue  # header or malformed line
            if int(row[2]) > 0:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    queries_file = folder / f"queries.{split}.jsonl"
    if not queries_file.exists():
        queries_file = folder / "queries.jsonl"
    namespace = f"beir-{folder.name}"
    questions = []
    for line in queries_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            qid = str(q["_id"])
            if qid in qrels and (limit_questions is None or len(questions) < limit_questions):
                questions.append(Question(qid, q["text"], namespace, qrels[qid]))
    documents = []
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            title = (d.get("title") or "").strip()
            text = f"{title} {d.get('text') or ''}".strip()
            documents.append(Document(source_key=str(d["_id"]), adapter="text", sections=(Section(text=text),),
                                      source_uri=f"{folder.name}/corpus.jsonl#{d['_id']}", title=title or None))
    info = {"documents": len(documents), "questions": len(questions), "split": split,
            "judged_pairs": sum(len(qrels[q.id]) for q in questions)}
    return Corpus(folder.name, str(folder), {namespace: documents}, questions, _corpus_id, search_k=100,
                  metrics=("ndcg@10", "recall@10", "recall@100", "mrr@10"), info=info)
