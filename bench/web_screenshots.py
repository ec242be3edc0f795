"""Screenshots of memsql serve's pages in headless Chromium, to look at (docs/web.md describes each); never a test
oracle.

    MEMSQL_HOME=/tmp/<you>-home .venv/bin/python bench/web_screenshots.py [--out docs/screenshots]

Data, in a fresh scratch database (bench/benchdb.py) on the embedded server of $MEMSQL_HOME: the repository's
markdown (README.md, docs/*.md, as ``make demo`` ingests it) in namespace ``docs``; one LoCoMo conversation (sessions
of 2023) in namespace ``chat`` when ../shared/data is present; a few notes in ``default``, one corrected twice (three
versions), one of importance 0.03 (a forgetting candidate) and one of 0.01 already archived. The server runs in this
process (memsql.web.live) and the browser is the system's Chromium. Writes one PNG per page (1280 px wide, the
whole page; docs/screenshots holds the last committed set) and prints their paths.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

NOTES = [
    ("The travel budget for the Lisbon offsite is 30k euros.", {"importance": 0.9, "tags": ["budget", "offsite"]}),
    ("Our office cat is called Miso and likes the window seat.", {"tags": ["office"]}),
    ("Deploys happen on Tuesdays after the 10:00 stand-up; never on Fridays.",
     {"knowledge_type": "principle", "tags": ["ops"]}),
    ("A throwaway note about a parking ticket.", {"importance": 0.03}),
    ("The old VPN endpoint was vpn1.example.internal (replaced in March).", {"importance": 0.01}),
]


def seed(dsn: str, embedder) -> dict[str, int]:
    from memsql.client import Memory
    from memsql.demo import LOCOMO, ingest_markdown, locomo_documents
    from memsql.ingest import IngestSummary, Ingestor

    with Memory(dsn=dsn, embedder=embedder) as mem:
        ingest_markdown(mem, REPO, namespace="docs")
        if LOCOMO.exists():
            docs, _ = locomo_documents(LOCOMO)
            Ingestor(mem.conn, mem.embedder, "chat").ingest(docs, IngestSummary())
        ids = [mem.add(text, **kw) for text, kw in NOTES]
        v2 = mem.update(ids[0], "The travel budget for the Lisbon offsite is 40k euros (approved by finance).")
        v3 = mem.update(v2, "The travel budget for the Lisbon offsite is 45k euros (approved by finance, 2 Dec).")
        archived = ids[4]
        mem.forget(importance_threshold=0.1, score_threshold=1.0, max_rows=1, dry_run=False)
        return {"budget": v3, "faded": ids[3], "archived": archived}


def shoot(base: str, ids: dict[str, int], out: Path) -> list[Path]:
    from memsql.web.live import chromium

    shots = [
        ("search", "/?q=how+does+forgetting+work&namespace=docs&k=6"),
        ("search-chat", "/?q=when+did+Caroline+go+to+the+LGBTQ+support+group&namespace=chat&k=5"),
        ("memory", f"/memory/{ids['budget']}"),
        ("namespaces", "/namespaces"),
        ("forget", "/forget?namespace=default"),
        ("forget-chat", "/forget?namespace=chat&max_rows=20"),
        ("api", "/api"),
        ("error", "/?q=x&k=5000"),
    ]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for name, path in shots:
            page.goto(base + path)
            page.wait_for_load_state("load")
            target = out / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            small(target)
            written.append(target)
    return written


def small(path: Path) -> None:
    """Down to 256 colours (a page of flat colours and text loses nothing visible; a third of the bytes) when Pillow
    is installed."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as im:
        reduced = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    reduced.save(path, optimize=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/memsql-screenshots"))
    args = ap.parse_args()
    from benchdb import fresh_database

    from memsql import server
    from memsql.embedding import default_embedder
    from memsql.web import create_app
    from memsql.web.live import running

    dsn = fresh_database(server.embedded_start(), "memsql_web_screenshots")
    embedder = default_embedder()
    ids = seed(dsn, embedder)
    with running(create_app(dsn=dsn, embedder=embedder)) as base:
        for path in shoot(base, ids, args.out):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
