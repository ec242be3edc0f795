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
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from memsql.adapters.base import Document, Section, with_neighbour_context
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
        levels: judged levels beyond the item itself: level name -> (map of an item id to that level's id, e.g. a
            turn to its session; question id -> {level id: grade}[; the metrics of this level, default ``metrics``]);
            None = one level, the items and ``relevant``.
        groups: question id -> group (a LongMemEval question_type) for per-group metrics; None = overall only.
        reference_time: question id -> the time its search computes decay from (None = now).
    """

    name: str
    source: str
    documents: dict[str, list[Document]]
    questions: list[Question]
    item_of: Callable[[SearchResult], str]
    search_k: int
    metrics: tuple[str, ...]
    info: dict[str, Any] = field(default_factory=dict)
    levels: dict[str, tuple] | None = None
    groups: dict[str, str] | None = None
    reference_time: dict[str, datetime | None] | None = None


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


# ---------------------------------------------------------------------------------------------
# LongMemEval

LONGMEMEVAL_TYPES = ("single-session-user", "single-session-assistant", "single-session-preference",
                     "multi-session", "knowledge-update", "temporal-reasoning")


def parse_longmemeval_date(text: str) -> datetime | None:
    """'2023/05/20 (Sat) 02:21' -> aware UTC datetime (None when it does not parse)."""
    try:
        return datetime.strptime(re.sub(r"\s*\([^)]*\)\s*", " ", text.strip()), "%Y/%m/%d %H:%M").replace(
            tzinfo=timezone.utc)
    except (ValueError, AttributeError):
        return None


def _turn_id(result: SearchResult) -> str:
    return str(result.metadata.get("turn_id") or f"memory:{result.memory_id}")


def _session_of_turn(turn_id: str) -> str:
    """The session id of a turn id "<session id>#<turn index>" (a result that is no turn keeps its own id)."""
    return turn_id.rsplit("#", 1)[0]


def longmemeval_files(folder: Path, limit_questions: int | None = None, stratified: bool = False) -> list[Path]:
    """The question files of one LongMemEval split folder, in file-name order.

    Args:
        folder: e.g. ../shared/data/longmemeval/s_dev (question files under ``questions/``).
        limit_questions: keep n files (None = all).
        stratified: with a limit, take the first files of each question_type in turn (round robin over
            :data:`LONGMEMEVAL_TYPES`, file order within a type) instead of the first n files, so every type is
            represented; deterministic. Abstention questions count like the others.

    Returns:
        Paths, in file order.
    """
    files = sorted((Path(folder) / "questions").glob("*.json"))
    if limit_questions is None or limit_questions >= len(files):
        return files
    if not stratified:
        return files[:limit_questions]
    by_type: dict[str, list[Path]] = {}
    for f in files:
        qtype = json.loads(f.read_text(encoding="utf-8"))["question_type"]
        by_type.setdefault(qtype, []).append(f)
    chosen: list[Path] = []
    order = [t for t in LONGMEMEVAL_TYPES if t in by_type] + sorted(set(by_type) - set(LONGMEMEVAL_TYPES))
    while len(chosen) < limit_questions:
        for t in order:
            if by_type[t] and len(chosen) < limit_questions:
                chosen.append(by_type[t].pop(0))
    return sorted(chosen)


def longmemeval(folder: Path, limit_questions: int | None = None, stratified: bool = False,
                name: str | None = None) -> Corpus:
    """A LongMemEval split as a corpus: one namespace per question holding its haystack, one memory per turn.

    Each haystack session is one document (source_date = the session's date, knowledge_type conversation), each
    turn one atomic section "<role>: <content>" with its neighbouring turns as embedding context (as LoCoMo and
    the chat adapters); a turn longer than the model window is split by the chunker into several memories of the
    same turn, which share the turn's embedding (memsql.chunking.share_message_embeddings). Abstention questions
    (id ending ``_abs``) are skipped.

    Args:
        folder: a split folder (``questions/*.json``).
        limit_questions: first n question files (see :func:`longmemeval_files`), counted before abstention
            questions are skipped.
        stratified: pick the limited files round robin by question_type.
        name: corpus name (default "longmemeval-<folder name>").

    Returns:
        Corpus with two judged levels: "turn" (items "<session id>#<turn index>", relevant = turns with
        has_answer) and "session" (items = session ids, relevant = answer_session_ids; a turn hit counts for
        its session). Questions without an evidence turn are judged at session level only. Each question
        carries its question_type and question_date (the reference time of its search). 100 memories per search.
    """
    folder = Path(folder)
    documents: dict[str, list[Document]] = {}
    questions: list[Question] = []
    session_rel: dict[str, dict[str, int]] = {}
    qtypes: dict[str, str] = {}
    qdates: dict[str, datetime | None] = {}
    skipped = {"abstention": 0, "no_turn_evidence": 0}
    turns = 0
    for path in longmemeval_files(folder, limit_questions, stratified):
        d = json.loads(path.read_text(encoding="utf-8"))
        qid = str(d["question_id"])
        if qid.endswith("_abs"):
            skipped["abstention"] += 1
            continue
        namespace = f"lme-{qid}"
        docs = []
        evidence_turns: dict[str, int] = {}
        for sid, date, session in zip(d["haystack_session_ids"], d["haystack_dates"], d["haystack_sessions"]):
            when = parse_longmemeval_date(date)
            sections = []
            for i, turn in enumerate(session):
                text = str(turn.get("content") or "").strip()
                if not text:
                    continue
                turn_id = f"{sid}#{i}"
                if turn.get("has_answer"):
                    evidence_turns[turn_id] = 1
                sections.append(Section(text=f"{turn['role']}: {text}",
                                        metadata={"role": turn["role"], "turn_id": turn_id, "session_id": sid,
                                                  "speaker": "human" if turn["role"] == "user" else turn["role"]},
                                        source_date=when, atomic=True))
            if sections:
                turns += len(sections)
                docs.append(Document(source_key=f"longmemeval:{qid}:{sid}", adapter="text",
                                     sections=with_neighbour_context(sections), title=f"session {sid}",
                                     source_uri=f"{folder.name}/{path.name}#{sid}", source_date=when,
                                     metadata={"knowledge_type": "conversation"}))
        documents[namespace] = docs
        if not evidence_turns:
            skipped["no_turn_evidence"] += 1
        questions.append(Question(qid, d["question"], namespace, evidence_turns))
        session_rel[qid] = {str(s): 1 for s in d["answer_session_ids"]}
        qtypes[qid] = d["question_type"]
        qdates[qid] = parse_longmemeval_date(d.get("question_date") or "")
    by_type: dict[str, int] = {}
    for t in qtypes.values():
        by_type[t] = by_type.get(t, 0) + 1
    info = {"questions": len(questions), "files": len(questions) + skipped["abstention"],
            "sessions": sum(map(len, documents.values())), "turns": turns, "skipped_questions": skipped,
            "question_types": dict(sorted(by_type.items())),
            "subset": (None if limit_questions is None else
                       f"first {limit_questions} question files" + (" round robin by question_type" if stratified
                                                                  else "") + " (file-name order)")}
    turn_rel = {q.id: q.relevant for q in questions if q.relevant}
    return Corpus(name or f"longmemeval-{folder.name}", str(folder), documents, questions, _turn_id, search_k=100,
                  metrics=LONGMEMEVAL_METRICS, info=info,
                  levels={"turn": (lambda item: item, turn_rel), "session": (_session_of_turn, session_rel)},
                  groups=qtypes, reference_time=qdates)


LONGMEMEVAL_METRICS = ("recall_any@5", "recall_any@10", "recall_all@5", "recall_all@10", "ndcg@10")
"""recall_any@k: share of questions with at least one evidence item in the top k (ranx hit_rate@k); recall_all@k:
share with every evidence item in the top k (ranx recall@k equal to 1, per question); nDCG@10 binary."""


# ---------------------------------------------------------------------------------------------
# Dated notes (bench/dated_notes)

NOTES_REFERENCE_TIME = datetime(2026, 12, 1, tzinfo=timezone.utc)
"""The reference time of every dated-notes search: results do not move with the wall clock."""


def _note_file(result: SearchResult) -> str:
    return Path(result.source_uri or f"memory:{result.memory_id}").name


def dated_notes(folder: Path) -> Corpus:
    """bench/dated_notes as a corpus: every notes/*.md parsed by memsql's markdown adapter (front-matter date ->
    source_date; knowledge_type note), one namespace; queries.json judged by file name (grades 2 and 1), grouped
    by kind (newer, dated); every search at :data:`NOTES_REFERENCE_TIME`.

    Returns:
        Corpus "notes": items are note file names; graded nDCG@10 (grades 2 and 1), and against the answer alone
        (grade 2) top1 (the answer ranked first), MRR@10 and recall_any@5; 20 memories per search.
    """
    from memsql.adapters.markdown import parse_markdown

    folder = Path(folder)
    docs = [parse_markdown(p) for p in sorted((folder / "notes").glob("*.md"))]
    raw = json.loads((folder / "queries.json").read_text(encoding="utf-8"))
    namespace = "dated-notes"
    questions = [Question(q["id"], q["query"], namespace, {f: int(g) for f, g in q["relevant"].items()}) for q in raw]
    best = {q["id"]: {f: 1 for f, g in q["relevant"].items() if g == max(q["relevant"].values())} for q in raw}
    info = {"notes": len(docs), "dated": sum(1 for d in docs if d.source_date), "questions": len(questions),
            "reference_time": NOTES_REFERENCE_TIME.isoformat()}
    return Corpus("notes", str(folder), {namespace: docs}, questions, _note_file, search_k=20,
                  metrics=("ndcg@10", "mrr@10", "top1"), info=info,
                  levels={"graded": (lambda item: item, {q.id: q.relevant for q in questions}, ("ndcg@10",)),
                          "answer": (lambda item: item, best, ("top1", "mrr@10", "recall_any@5"))},
                  groups={q["id"]: q["kind"] for q in raw},
                  reference_time={q.id: NOTES_REFERENCE_TIME for q in questions})
