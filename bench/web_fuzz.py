"""Schema fuzzing of memsql serve's JSON API: schemathesis generates requests from /openapi.json (valid ones and,
in its negative mode, ones that break the schema) for every operation, and each answer must not be a server error
(status < 500; 4xx with a JSON error is the expected answer to bad input).

    .venv/bin/python bench/web_fuzz.py [--examples 200]

Runs against a fresh scratch database (bench/benchdb.py) on the embedded server, seeded with a few memories so
ids in the generated requests sometimes exist. Writes bench/results/web_fuzz.{json,md}. tests/test_web.py runs
:func:`fuzz` with a few examples per operation.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

BASE = "http://127.0.0.1:8765"
RESULTS = Path(__file__).resolve().parent / "results"


def fuzz(client, examples: int, seed: int = 0) -> dict[str, Any]:
    """Send schemathesis' generated requests for every operation of the app behind ``client`` (a Starlette
    TestClient), positive and negative modes, ``examples`` each.

    Returns:
        {"requests": n, "by_status": {status: count}, "server_errors": [{operation, request, status, body}], ...}
    """
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
    statuses: Counter = Counter()
    per_operation: dict[str, Counter] = {}
    errors: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    for result in schema.get_all_operations():
        op = result.ok()
        name = f"{op.method.upper()} {op.path}"
        per_operation[name] = Counter()
        started = time.perf_counter()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                      suppress_health_check=list(HealthCheck))
            @given(op.as_strategy(generation_mode=mode))
            def send(case):
                kwargs = case.as_transport_kwargs(base_url=BASE)
                kwargs.pop("cookies", None)
                try:
                    response = client.request(**kwargs)
                except Exception as exc:  # httpx(2).InvalidURL: longer than the client sends (65536 characters)
                    if type(exc).__name__ != "InvalidURL":
                        raise
                    statuses["unsent"] += 1
                    return
                statuses[response.status_code] += 1
                per_operation[name][f"{mode.value} {response.status_code}"] += 1
                if response.status_code >= 500 and len(errors) < 50:
                    errors.append({"operation": name, "mode": mode.value, "status": response.status_code,
                                   "request": {k: v for k, v in kwargs.items() if k != "headers"},
                                   "body": response.text[:500]})

            try:
                send()
            except Unsatisfiable:  # nothing to break: an operation without parameters has no negative case
                per_operation[name][f"{mode.value} none"] += 1
        seconds[name] = round(time.perf_counter() - started, 2)
    return {"requests": sum(v for k, v in statuses.items() if k != "unsent"), "unsent": statuses.pop("unsent", 0),
            "by_status": dict(sorted(statuses.items())),
            "per_operation": {k: dict(sorted(v.items())) for k, v in per_operation.items()},
            "server_errors": errors, "examples_per_mode": examples, "seconds_per_operation": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=200, help="examples per operation and mode")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from benchdb import fresh_database
    from starlette.testclient import TestClient

    from memsql import server
    from memsql.client import Memory
    from memsql.embedding import default_embedder
    from memsql.web import create_app

    dsn = fresh_database(server.embedded_start(), "memsql_bench_web_fuzz")
    embedder = default_embedder()
    with Memory(dsn=dsn, embedder=embedder) as mem:
        for i, text in enumerate(["The travel budget is 30k euros.", "The office cat is called Miso.",
                                  "Deploys happen on Tuesdays.", "A faded note.", "Lisbon offsite in May."]):
            mem.add(text, importance=0.01 if i == 3 else None, tags=["seed"])
    t0 = time.perf_counter()
    with TestClient(create_app(dsn=dsn, embedder=embedder), base_url=BASE, follow_redirects=False) as client:
        report = fuzz(client, args.examples)
    report["seconds"] = round(time.perf_counter() - t0, 1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "web_fuzz.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    lines = ["# memsql serve: schema fuzzing of the JSON API", "",
             f"schemathesis from /openapi.json, {args.examples} examples per operation in each of its positive and "
             f"negative modes; {report['requests']} requests in {report['seconds']} s.", "",
             f"Server errors (5xx): **{len(report['server_errors'])}**", "", "| status | requests |", "|---|---|"]
    lines += [f"| {s} | {n} |" for s, n in report["by_status"].items()]
    lines += ["", "| operation | answers (mode status: count) |", "|---|---|"]
    lines += [f"| {op} | {', '.join(f'{k}: {v}' for k, v in c.items())} |" for op, c in report["per_operation"].items()]
    (RESULTS / "web_fuzz.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if report["server_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
