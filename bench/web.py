"""Speed of memsql serve at 100k memories: server time of the search page and of the API search (p50 / p99), of the
other pages, and the weight of each page.

    MEMSQL_HOME=/tmp/<you>-bench flock /work/notes/bench.lock .venv/bin/python bench/web.py [--size 100000]
                                                                                    [--queries 200]

Corpus: bench/speed.py's search corpus of ``--size`` memories (real passages of SciFact and LoCoMo, one memory
each, namespace ``speed``; built once into database speed_<size> of $MEMSQL_HOME's embedded server, kept after),
its pages prewarmed (bench/benchdb.py). The server is ``memsql serve`` (memsql.web.serve: uvicorn, one AsyncMemory,
the default embedder warm) in a process of its own on a free loopback port; one client sends one request at a time
over HTTP keep-alive.

Each of ``--queries`` SciFact train queries is sent once untimed, then once to each of the search page
(``/?q=...``, k = 10) and the API (``/api/search?query=...``, k = 10, touch=false), alternating which goes first.
Both embed the query text on the server (the default backend), then run memory_search. Reported per request kind:
the server's own time (its ``Server-Timing: app;dur=`` header: from the request to the response headers, the
page's rendering included) and the client's (to the last byte, over loopback). Then a memory's page (the first
result of each of the first 20 queries), the namespaces page (counts, health, the plot: over all 100k) and the
forgetting page (a dry run over the namespace, decay curves, the archive), 20 requests each.

Page weight: bytes of each page's HTML as served (no compression is configured) and gzip'd (level 6, what a
compressing proxy would send), plus the page's one stylesheet and one script; a search page in headless Chromium
(when playwright and a chromium are installed, see memsql.web.live) gives the requests it made and the bytes it
transferred. Writes bench/results/web.json and web.md (``--out``) and prints the Markdown.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import socket
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlencode

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(REPO))

import speed  # noqa: E402  (its corpus, queries, load and percentiles)
from load import git_commit, machine  # noqa: E402

NAMESPACE = "speed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(dsn: str, port: int) -> subprocess.Popen:
    code = ("import sys; from memsql.web import serve; "
            "serve(port=int(sys.argv[1]), dsn=sys.argv[2], namespace=sys.argv[3])")
    return subprocess.Popen([sys.executable, "-c", code, str(port), dsn, NAMESPACE], cwd=REPO)


class Client:
    """A keep-alive HTTP session on one base URL (requests)."""

    def __init__(self, base: str) -> None:
        import requests

        self.base, self.session = base, requests.Session()

    def get(self, path: str, params: dict | None = None):
        return self.session.get(self.base + path, params=params, timeout=120)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.session.close()


def wait_ready(client, proc: subprocess.Popen, timeout: float = 300.0) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"memsql serve exited with {proc.returncode}")
        try:
            if client.get("/openapi.json").status_code == 200:
                return time.perf_counter() - t0
        except Exception:  # noqa: BLE001  (not listening yet)
            pass
        time.sleep(0.2)
    raise SystemExit("memsql serve did not answer in time")


def timed(client, path: str, params: dict | None = None) -> tuple[float, float, bytes]:
    """(server ms from Server-Timing, client ms, body) of one GET; a non-200 answer stops the run."""
    t0 = time.perf_counter()
    r = client.get(path, params=params)
    client_ms = (time.perf_counter() - t0) * 1000
    if r.status_code != 200:
        raise SystemExit(f"GET {path} {params}: {r.status_code} {r.text[:300]}")
    server_ms = float(re.fullmatch(r"app;dur=([\d.]+)", r.headers["server-timing"]).group(1))
    return server_ms, client_ms, r.content


def summary(server_ms: list[float], client_ms: list[float]) -> dict:
    return {"n": len(server_ms),
            "server_ms": {"p50": round(speed.pct(server_ms, 50), 2), "p99": round(speed.pct(server_ms, 99), 2),
                          "max": round(max(server_ms), 2)},
            "client_ms": {"p50": round(speed.pct(client_ms, 50), 2), "p99": round(speed.pct(client_ms, 99), 2)}}


def weight(body: bytes) -> dict:
    return {"html_bytes": len(body), "html_gzip_bytes": len(gzip.compress(body, 6))}


def browser_weight(base: str, query: str) -> dict | None:
    """Requests and bytes of one search page as loaded by headless Chromium, or None without one."""
    try:
        from memsql.web.live import chromium, chromium_path
    except ImportError:
        return None
    if chromium_path() is None:
        return None
    try:
        import playwright  # noqa: F401
    except ImportError:
        return None
    with chromium() as browser:
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(base + "/?" + urlencode({"q": query, "k": 10}))
        page.wait_for_load_state("load")
        entries = page.evaluate(
            "() => [performance.getEntriesByType('navigation')[0], ...performance.getEntriesByType('resource')]"
            ".map(e => ({name: e.name, transfer: e.transferSize, body: e.decodedBodySize}))")
        ms = page.evaluate("() => performance.getEntriesByType('navigation')[0].loadEventEnd")
        page.close()
    return {"requests": len(requests), "other_hosts": sorted({u.split("/")[2] for u in requests} - {base.split("/")[2]}),
            "transferred_bytes": sum(e["transfer"] for e in entries), "decoded_bytes": sum(e["body"] for e in entries),
            "load_event_ms": round(ms, 1), "resources": [e["name"].replace(base, "") for e in entries]}


def run(size: int, nq: int) -> dict:
    from benchdb import prewarm
    from memsql import db
    from memsql.embedding import DEFAULT_BACKEND

    uri = speed.build_corpus(size)
    with db.connect(uri) as conn:
        buffers = prewarm(conn)
        memories = conn.execute("SELECT count(*) FROM memsql.memories WHERE namespace = %s",
                                (NAMESPACE,)).fetchone()[0]
    qs = speed.queries(nq)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = start_server(uri, port)
    try:
        with Client(base) as client:
            ready_s = wait_ready(client, proc)
            for q in qs:  # untimed: plans made, pages touched by this server's connections
                timed(client, "/api/search", {"query": q, "k": 10, "touch": "false"})
                timed(client, "/", {"q": q, "k": 10})
            l0 = speed.load()
            page_s, page_c, api_s, api_c, first_ids, pages = [], [], [], [], [], []
            for i, q in enumerate(qs):
                order = ("page", "api") if i % 2 == 0 else ("api", "page")
                for kind in order:
                    if kind == "page":
                        s, c, body = timed(client, "/", {"q": q, "k": 10})
                        page_s.append(s)
                        page_c.append(c)
                        pages.append(body)
                    else:
                        s, c, body = timed(client, "/api/search", {"query": q, "k": 10, "touch": "false"})
                        api_s.append(s)
                        api_c.append(c)
                        rows = json.loads(body)["result"]
                        if len(first_ids) < 20 and rows:
                            first_ids.append(rows[0]["memory_id"])
            l1 = speed.load()
            others: dict[str, dict] = {}
            bodies: dict[str, bytes] = {}
            for name, path, params in (
                    [("memory", f"/memory/{m}", {"namespace": NAMESPACE}) for m in first_ids]
                    + [("namespaces", "/namespaces", None)] * 20 + [("forget", "/forget", None)] * 20):
                s, c, body = timed(client, path, params)
                others.setdefault(name, {"server": [], "client": []})
                others[name]["server"].append(s)
                others[name]["client"].append(c)
                bodies.setdefault(name, body)
            l2 = speed.load()
            static = {p: len(client.get(p).content) for p in ("/static/style.css", "/static/app.js")}
            search_sizes = sorted(len(b) for b in pages)
            median_page = pages[[len(b) for b in pages].index(search_sizes[len(search_sizes) // 2])]
            weights = {"search": {**weight(median_page), "results": median_page.count(b'class="result"')},
                       **{k: weight(v) for k, v in bodies.items()}}
            browser = browser_weight(base, qs[0])
    finally:
        proc.terminate()
        proc.wait(30)
    return {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(),
        "machine": machine(), "memories": memories, "queries": len(qs), "embedding_backend": DEFAULT_BACKEND,
        "buffers": buffers, "server_ready_seconds": round(ready_s, 1),
        "search_page": {**summary(page_s, page_c), "load": l0},
        "api_search": {**summary(api_s, api_c), "load": l0},
        "other_pages": {k: {**summary(v["server"], v["client"]), "load": l1} for k, v in others.items()},
        "load_after": l2,
        "weight": {"pages": weights, "static_bytes": static, "search_page_html_bytes_range": [search_sizes[0],
                                                                                              search_sizes[-1]],
                   "browser": browser},
    }


def markdown(r: dict) -> str:
    st = r["weight"]["static_bytes"]
    L = ["# memsql serve: server time and page weight (bench/web.py)", "",
         f"{r['date']}, commit {r['commit']}, {r['machine']['cpus']} CPUs shared with other developers' work "
         f"(1-minute load average {r['search_page']['load']} when the timed searches began, "
         f"{r['load_after']} at the end). {r['memories']:,} memories (bench/speed.py's search corpus, namespace "
         f"speed), shared buffers {r['buffers']['shared_buffers']}, {r['buffers']['prewarmed_mb']} MB prewarmed; "
         f"`memsql serve` in its own process (uvicorn, embedder {r['embedding_backend']} warm; ready in "
         f"{r['server_ready_seconds']} s); one client, one request at a time over loopback HTTP keep-alive.", "",
         f"Searches: {r['queries']} SciFact train queries, each once untimed first, then once to each; k = 10. "
         "Both embed the query on the server and run memory_search. Server time = the `Server-Timing: app;dur=` "
         "header (request to response headers, rendering included); client = to the last byte.", "",
         "| request | n | server p50 ms | server p99 ms | server max ms | client p50 ms | client p99 ms |",
         "|---|---|---|---|---|---|---|"]
    rows = [("search page `/?q=`", r["search_page"]), ("API `/api/search`", r["api_search"])]
    rows += [(f"{k} page", v) for k, v in r["other_pages"].items()]
    for name, v in rows:
        L.append(f"| {name} | {v['n']} | {v['server_ms']['p50']} | {v['server_ms']['p99']} | {v['server_ms']['max']} "
                 f"| {v['client_ms']['p50']} | {v['client_ms']['p99']} |")
    L += ["", "Page weight (HTML as served, no compression configured; gzip level 6 for comparison). Every page also "
          f"loads /static/style.css ({st['/static/style.css']:,} B) and /static/app.js ({st['/static/app.js']:,} B), "
          "nothing from another host.", "", "| page | HTML bytes | gzip bytes |", "|---|---|---|"]
    lo, hi = r["weight"]["search_page_html_bytes_range"]
    for name, w in r["weight"]["pages"].items():
        extra = f" (median of the timed searches, {w['results']} results; range {lo:,}-{hi:,})" if name == "search" \
            else ""
        L.append(f"| {name}{extra} | {w['html_bytes']:,} | {w['html_gzip_bytes']:,} |")
    b = r["weight"]["browser"]
    if b:
        L += ["", f"In headless Chromium, one search page: {b['requests']} requests "
              f"({', '.join(b['resources'][:4])}), {b['transferred_bytes']:,} bytes transferred "
              f"({b['decoded_bytes']:,} decoded), load event at {b['load_event_ms']} ms; requests to other hosts: "
              f"{b['other_hosts'] or 'none'}."]
    else:
        L += ["", "(No chromium/playwright: the in-browser figures were not taken.)"]
    return "\n".join(L) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path, default=BENCH / "results" / "web")
    args = ap.parse_args()
    os.environ.setdefault("MEMSQL_HOME", str(speed.home()))
    res = run(args.size, args.queries)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    md = markdown(res)
    args.out.with_suffix(".md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
