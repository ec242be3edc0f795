"""Worker processes for tests/test_concurrency.py: each is a real OS process with its own connection.

Usage: python tests/workers.py <job> <json args>. Prints one JSON line with what it did; exit 0 unless a
write or a search raised.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def wait_until(t0: float) -> None:
    """Start together: every worker sleeps until the same wall-clock instant."""
    delay = t0 - time.time()
    if delay > 0:
        time.sleep(delay)


def connect(dsn: str):
    import psycopg

    from memsql import db

    conn = db.configure(psycopg.connect(dsn, autocommit=True))
    conn.execute('SET search_path = "$user", public, memsql')
    return conn


def add_same(a: dict) -> dict:
    conn = connect(a["dsn"])
    wait_until(a["t0"])
    ids = [conn.execute("SELECT memsql.memory_add(%s, namespace => %s)", (t, a["namespace"])).fetchone()[0]
           for t in a["texts"]]
    return {"ids": ids}


def search_touch(a: dict) -> dict:
    conn = connect(a["dsn"])
    wait_until(a["t0"])
    returned: dict[int, int] = {}
    for _ in range(a["n"]):
        for (mid,) in conn.execute("SELECT memory_id FROM memsql.memory_search(%s, NULL, k => %s, namespace => %s, "
                                   "memory_rerank => false, touch => true)", (a["query"], a["k"], a["namespace"])).fetchall():
            returned[mid] = returned.get(mid, 0) + 1
    return {"returned": returned}


def churn(a: dict) -> dict:
    """Until deadline: add memories (half of them unimportant), search with touch, or forget the unimportant."""
    from memsql.client import Memory

    role = a["role"]
    counts = {"added": 0, "searches": 0, "forgotten": 0}
    mem = Memory(dsn=a["dsn"], namespace=a["namespace"], embedder=None)
    conn = connect(a["dsn"])
    wait_until(a["t0"])
    i = 0
    while time.time() < a["deadline"]:
        i += 1
        if role == "writer":
            conn.execute("SELECT memsql.memory_add(%s, namespace => %s, importance => %s::real)",
                         (f"{a['tag']} note {i} about caches and queues", a["namespace"], 0.1 if i % 2 else 0.9))
            counts["added"] += 1
        elif role == "searcher":
            mem.search("caches queues note", k=10, query_embeddings=[], memory_rerank=False, touch=True)
            counts["searches"] += 1
        else:
            counts["forgotten"] += len([r for r in mem.forget(importance_threshold=0.3, score_threshold=0.0,
                                                              dry_run=False) if r.archived])
    mem.close()
    return counts


def ingest(a: dict) -> dict:
    from memsql.client import Memory

    with Memory(dsn=a.get("dsn"), namespace=a["namespace"]) as mem:
        wait_until(a.get("t0", 0))
        s = mem.ingest([a["path"]])
    return s.as_dict()


if __name__ == "__main__":
    job, args = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps(globals()[job](args)), flush=True)
