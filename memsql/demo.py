"""`make demo`: the main job end to end on the embedded default.

Ingests the repository's own markdown (README.md, docs/) and, when ../shared/data exists, one
LoCoMo conversation (one plain-text document per session, one section per turn), then runs three
searches and prints each with its per-arm ranks, next to the dense-only and lexical-only ranks of
the same results, so the fusion is visible. Data goes to namespace "demo" of the default home.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from memsql.adapters.base import Document, Section, with_neighbour_context

REPO = Path(__file__).resolve().parents[1]
LOCOMO = REPO.parent / "shared" / "data" / "locomo" / "locomo_dev.json"
NAMESPACE = "demo"


def locomo_documents(path: Path, sample: int = 0) -> tuple[list[Document], dict]:
    """One LoCoMo conversation as documents (one per session, one section per turn) and its QA list."""
    data = json.loads(path.read_text(encoding="utf-8"))[sample]
    conv = data["conversation"]
    docs = []
    n = 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        turns = conv.get(f"session_{n}")
        if isinstance(turns, list) and turns:
            when = parse_locomo_date(conv.get(f"session_{n}_date_time", ""))
            sections = tuple(
                Section(text=f"{t['speaker']}: {t['text']}", metadata={"speaker": t["speaker"], "dia_id": t["dia_id"]},
                        source_date=when, atomic=True)
                for t in turns
            )
            docs.append(Document(source_key=f"locomo:{data['sample_id']}:session_{n}", adapter="text",
                                 sections=with_neighbour_context(sections), title=f"{data['sample_id']} session {n}",
                                 source_uri=f"{path.name}#{data['sample_id']}/session_{n}", source_date=when,
                                 metadata={"knowledge_type": "conversation"}))
        n += 1
    return docs, data


def parse_locomo_date(text: str) -> datetime | None:
    """'1:56 pm on 8 May, 2023' -> aware UTC datetime (None when it does not parse)."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def show(mem, title: str, query: str, expect: str | None = None, namespace: str = NAMESPACE) -> None:
    from rich.console import Console
    from rich.table import Table

    embs = mem.embed_query(query)
    hybrid = mem.search(query, k=5, namespace=namespace, query_embeddings=embs, touch=False)
    dense = mem.search(query, k=100, namespace=namespace, query_embeddings=embs, lexical_weight=0.0,
                       memory_rerank=False, touch=False)
    lexical = mem.search(query, k=100, namespace=namespace, query_embeddings=[], memory_rerank=False, touch=False)
    dense_pos = {r.memory_id: i for i, r in enumerate(dense, 1)}
    lex_pos = {r.memory_id: i for i, r in enumerate(lexical, 1)}
    from rich.markup import escape

    table = Table(title=f"{escape(title)}\n[bold]{escape(query)}[/bold]", title_justify="left", expand=True)
    for col, kw in (("#", {"width": 2}), ("score", {"width": 7}), ("dense", {"width": 5}),
                    ("lexical", {"width": 7}), ("source", {"width": 22}), ("content", {"ratio": 1})):
        table.add_column(col, overflow="fold", **kw)
    for i, r in enumerate(hybrid, 1):
        mark = "*" if expect and expect.lower() in r.content.lower() else ""
        snippet = " ".join(r.content.split())[:150]
        table.add_row(f"{i}{mark}", f"{r.score:.4f}", _r(dense_pos.get(r.memory_id)), _r(lex_pos.get(r.memory_id)),
                      escape((r.title or r.source_uri or "")[:22]), escape(snippet))
    Console(width=140).print(table)
    if expect and any(expect.lower() in r.content.lower() for r in hybrid):
        print(f"  * = contains {expect!r}")
    if expect:   # one memory followed through the three lists: the hybrid's first holding the term (else an arm's)
        target = next((r for r in [*hybrid, *lexical, *dense] if expect.lower() in r.content.lower()), None)
        if target is None:
            print(f"  no memory containing {expect!r} in any list\n")
        else:
            hyb = next((i for i, r in enumerate(hybrid, 1) if r.memory_id == target.memory_id), None)
            print(f"  memory {target.memory_id}, the first containing {expect!r}: hybrid rank {_r(hyb)}, "
                  f"dense-only rank {_r(dense_pos.get(target.memory_id))}, "
                  f"lexical-only rank {_r(lex_pos.get(target.memory_id))}\n")


def _r(x) -> str:
    return "-" if x is None else str(x)


def ingest_markdown(mem, repo: Path, namespace: str = NAMESPACE):
    """Ingest ``repo``'s README.md and docs/*.md into ``namespace`` under keys relative to ``repo``
    (``demo:README.md``; the markdown adapter's own key is the absolute path), so the demo run again from another
    checkout updates these documents instead of adding copies; markdown documents of the namespace under other
    keys (an earlier demo's, or a file since removed) are deleted first. Returns (IngestSummary, documents deleted).
    """
    from dataclasses import replace

    from memsql.ingest import IngestSummary, parse_path

    files = [f for f in [repo / "README.md", *sorted((repo / "docs").glob("*.md"))] if f.exists()]
    docs = [replace(d, source_key=f"demo:{f.relative_to(repo).as_posix()}")
            for f in files for d in parse_path(f).documents]
    stale = mem.conn.execute(
        "SELECT id FROM memsql.documents WHERE namespace = %s AND adapter = 'markdown' AND NOT source_key = ANY (%s)",
        (namespace, [d.source_key for d in docs])).fetchall()
    mem.conn.commit()
    for (doc_id,) in stale:
        mem.delete_document(doc_id, namespace=namespace)
    return mem._ingestor(mem.conn, namespace, None, None, False).ingest(docs, IngestSummary()), len(stale)


def main() -> int:
    from memsql import db
    from memsql.client import Memory
    from memsql.ingest import IngestSummary, Ingestor

    t0 = time.perf_counter()
    mem = Memory(namespace=NAMESPACE)
    print(f"memsql demo: database {db.redact(mem.dsn)}")
    for step in mem.init():
        print(f"  init: {step}")

    summary, removed = ingest_markdown(mem, REPO)
    print(f"  repository markdown: {summary.documents} documents, {summary.chunks} new chunks "
          f"({summary.unchanged} unchanged" + (f"; {removed} copies from earlier runs removed" if removed else "")
          + ")")
    qa = None
    if LOCOMO.exists():
        docs, data = locomo_documents(LOCOMO)
        ing = Ingestor(mem.conn, mem.embedder, NAMESPACE)
        t = time.perf_counter()
        s2 = ing.ingest(docs, IngestSummary())
        dt = time.perf_counter() - t
        rate = f", {s2.chunks / dt:.1f} chunks/s" if s2.chunks else ""
        print(f"  LoCoMo {data['sample_id']}: {s2.documents} sessions, {s2.chunks} new chunks{rate}")
        qa = next(q for q in data["qa"] if q.get("category") == 4 and q.get("evidence"))
    else:
        print(f"  ({LOCOMO} is absent: the conversation search is skipped)")
    print()

    show(mem, "1. An exact technical term (an error code the docs mention):", "MS005", expect="MS005")
    # the answer: any text about forgetting (memory_forget, "forgotten", the Forgetting section)
    show(mem, "2. A vague paraphrase (shares no keyword with the answer):",
         "how does it get rid of stuff that is no longer relevant", expect="forget")
    if qa:
        evid = qa["evidence"][0].split(";")[0].strip()
        turn = next((sec.text for d in docs for sec in d.sections if sec.metadata.get("dia_id") == evid), None)
        show(mem, f"3. A question about the conversation (answer: {qa['answer']}; evidence {evid}):", qa["question"],
             expect=turn[:40] if turn else None)

    # first figures: median SQL time of memory_search at this corpus size (query embedding precomputed)
    embs = mem.embed_query("what did we decide about the cache?")
    times = []
    for _ in range(30):
        t = time.perf_counter()
        mem.search("what did we decide about the cache?", namespace=NAMESPACE, query_embeddings=embs, touch=False)
        times.append((time.perf_counter() - t) * 1000)
    total = sum(r.memories for r in mem.stats(NAMESPACE))
    print(f"memory_search median {statistics.median(times):.2f} ms (SQL round trip, {total} memories); "
          f"demo took {time.perf_counter() - t0:.1f} s")
    print(f"Search it yourself: .venv/bin/memsql search \"RRF merging\" --namespace {NAMESPACE}\n"
          f"  or from SQL (.venv/bin/memsql psql): SELECT * FROM memory_search('RRF merging', namespace => '{NAMESPACE}');")
    mem.close()
    return 0


if __name__ == "__main__":
    from memsql.errors import MemsqlError

    try:
        sys.exit(main())
    except MemsqlError as exc:
        print(f"memsql demo: error: {exc}", file=sys.stderr)
        sys.exit(1)
