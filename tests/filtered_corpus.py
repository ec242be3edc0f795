"""A synthetic corpus for memory_search's contract (tests/test_search_contract.py, and bench/filtered.py at 30k and
100k): random unit vectors in clusters, no model, and the exact computation every filter is checked against.

Clusters of 100 memories; member j of cluster c carries tag 'all' (100%), 't10' when j % 10 == 0 (10%), 't1' when
j == 0 (1%), 't01' when j == 0 and c % 10 == 0 (0.1%); knowledge type 'experiment' and topic 'p1' on the same 1%; in
even clusters members j >= 5 have importance 0.1 (95% of the memories near a query fall under the 0.3 cutoff);
members j % 10 == 2 are closed versions (valid until CLOSED). A query sits near a cluster centre, so its nearest
memories are that cluster's, well apart from the rest (cosine ~0 +- 0.05 to other clusters' members).
"""

from __future__ import annotations

import json

import numpy as np

from memsql import db

DIM = 384
CLUSTER = 100
CREATED = "2026-01-01 00:00+00"
CLOSED = "2026-06-01 00:00+00"
AS_OF = "2026-03-01 00:00+00"
CURRENT = "m.valid_to IS NULL"

# filter -> (memory_search arguments, the same filter in plain SQL over memsql.memories m, share of the namespace)
FILTERS = {
    "none": ({}, "true", 1.0),
    "tags 100%": ({"tags": ["all"]}, "m.tags && ARRAY['all']", 1.0),
    "tags 10%": ({"tags": ["t10"]}, "m.tags && ARRAY['t10']", 0.1),
    "tags 1%": ({"tags": ["t1"]}, "m.tags && ARRAY['t1']", 0.01),
    "tags 0.1%": ({"tags": ["t01"]}, "m.tags && ARRAY['t01']", 0.001),
    "knowledge_types 1%": ({"knowledge_types": ["experiment"]}, "m.knowledge_type = 'experiment'", 0.01),
    "topics 1%": ({"topics": ["p1"]}, "m.topics && ARRAY['p1']", 0.01),
}
IMPORTANCE = "(m.importance IS NULL OR m.importance >= 0.3)"
VERSIONS = {   # memory_search arguments -> which versions the exact computation keeps
    "as_of": ({"as_of": AS_OF}, f"tstzrange(m.created_at, m.valid_to) @> '{AS_OF}'::timestamptz"),
    "include_superseded": ({"include_superseded": True}, "true"),
}


def cluster_vectors(rng: np.random.Generator, n_clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """(centres (n_clusters, DIM), members (n_clusters, CLUSTER, DIM)), unit length; member j at noise 0.02 + 0.0006 j."""
    centres = rng.normal(size=(n_clusters, DIM)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    scale = (0.02 + 0.0006 * np.arange(CLUSTER, dtype=np.float32))[None, :, None]
    vecs = centres[:, None, :] + scale * rng.normal(size=(n_clusters, CLUSTER, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=2, keepdims=True)
    return centres, vecs


def load(conn, ns: str, n: int, seed: int) -> np.ndarray:
    """COPY n memories (a multiple of CLUSTER) into namespace ns, in the caller's transaction; returns the centres."""
    rng = np.random.default_rng(seed)
    n_clusters = n // CLUSTER
    centres, vecs = cluster_vectors(rng, n_clusters)
    doc = conn.execute("INSERT INTO memsql.documents (namespace, source_key, adapter, content_hash, knowledge_type) "
                       "VALUES (%s, 'contract', 'test', 'x', 'note') RETURNING id", (ns,)).fetchone()[0]
    rows = []
    for c in range(n_clusters):
        for j in range(CLUSTER):
            tags = ["all"] + (["t10"] if j % 10 == 0 else []) + (["t1"] if j == 0 else []) \
                + (["t01"] if j == 0 and c % 10 == 0 else [])
            rows.append((ns, doc, c * CLUSTER + j, f"memory {c} {j}", f"{ns}-{c}-{j}", vecs[c, j],
                         "experiment" if j == 0 else "note", 0.1 if c % 2 == 0 and j >= 5 else None,
                         ["p1"] if j == 0 else [], tags, json.dumps({}), None, "memsql.english", None, CREATED,
                         CLOSED if j % 10 == 2 else None))
    db.copy_memories(conn, rows, db.MEMORY_COPY_COLUMNS + ("created_at", "valid_to"))
    return centres


def near(centre: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    q = centre + 0.02 * rng.normal(size=DIM).astype(np.float32)
    return q / np.linalg.norm(q)


def search_sql(opts: dict) -> str:
    """memory_search as the contract calls it: dense arm only, nothing but the filters between it and the rows."""
    named = "".join(f", {key} => %({key})s" for key in opts)
    return ("SELECT memory_id FROM memsql.memory_search('', ARRAY[%(q)s::vector], k => %(k)s, namespace => %(ns)s, "
            "dense_weight => 1.0, dense_min_similarity => -1, priority_limit => 0, time_weight => 0, "
            "freq_weight => 0, touch => false" + named + ")")


def search(conn, ns: str, q, k: int, **kw) -> list[int]:
    opts = {"memory_rerank": False, **kw}
    return [r[0] for r in conn.execute(search_sql(opts), {"q": q, "k": k, "ns": ns, **opts}).fetchall()]


def exact(conn, ns: str, q, k: int, where: str, versions: str = CURRENT) -> list[int]:
    """The exact computation, index scans off: the greatest(50, k) memories passing the filter nearest by their own
    embedding's cosine distance (ties by id: the dense arm at its default depth), then the k best of those by the
    similarity memory_search scores them with: the best cosine of the memory's windows when it has computed
    windows (memsql.memory_windows; a long memory that is not a conversation message), else its own (ties by id).
    Without windows this is the k nearest by cosine distance, ties by id."""
    with conn.transaction():
        conn.execute("SET LOCAL enable_indexscan = off")
        conn.execute("SET LOCAL enable_bitmapscan = off")
        return [r[0] for r in conn.execute(
            "SELECT x.id FROM ("
            f"  SELECT m.id, m.metadata, m.embedding <=> %(q)s AS dist FROM memsql.memories m "
            f"  WHERE m.namespace = %(ns)s AND {where} AND {versions} AND m.embedding IS NOT NULL "
            "  ORDER BY m.embedding <=> %(q)s, m.id LIMIT greatest(50, %(k)s)) x "
            "LEFT JOIN memsql.memory_windows w ON w.namespace = %(ns)s AND w.memory_id = x.id "
            "ORDER BY coalesce(CASE WHEN NOT x.metadata ? 'speaker' "
            "                  THEN memsql.window_similarity(w.embeddings, %(q)s::vector) END, 1 - x.dist) DESC, x.id "
            "LIMIT %(k)s", {"ns": ns, "q": q, "k": k}).fetchall()]


def eligible(conn, ns: str, where: str, versions: str = CURRENT) -> int:
    return conn.execute(f"SELECT count(*) FROM memsql.memories m WHERE m.namespace = %s AND {where} AND {versions}",
                        (ns,)).fetchone()[0]


def walks(conn, ns: str, args: dict) -> bool:
    """Whether memory_search's dense arm walks the HNSW index for this filter (memsql.search_exact_scan says no)."""
    return not conn.execute(
        "SELECT memsql.search_exact_scan(ROW(%s, %s, %s, %s, %s, %s, %s)::memsql.search_filter)",
        (ns, args.get("knowledge_types"), args.get("tags"), args.get("topics"), args.get("importance_threshold"),
         bool(args.get("include_superseded")), args.get("as_of"))).fetchone()[0]


def lexical_search(conn, ns: str, query: str, k: int, posting_budget: int = 2000, **kw) -> list[int]:
    """memory_search's lexical arm alone (no query embedding, no priority memories; the memory axis off, or with
    memory_rerank => true its cutoff alone: no decay, no frequency boost): its row order."""
    opts = {"memory_rerank": False, "time_weight": 0, "freq_weight": 0, "priority_limit": 0,
            "posting_budget": posting_budget, "touch": False, **kw}
    named = "".join(f", {key} => %({key})s" for key in opts)
    return [r[0] for r in conn.execute(
        "SELECT memory_id FROM memsql.memory_search(%(query)s, '{}', k => %(k)s, namespace => %(ns)s" + named + ")",
        {"query": query, "k": k, "ns": ns, **opts}).fetchall()]


def exact_lexical(conn, ns: str, query: str, k: int, where: str, versions: str = CURRENT,
                  k1: float = 0.9, b: float = 0.4) -> list[int]:
    """The exact lexical ranking, written out: BM25 (the namespace's statistics, memsql.postings) of every memory
    passing the filter that matches a query lexeme, best first, ties by id."""
    return [r[0] for r in conn.execute(
        "WITH s AS (SELECT doc_count::float8 AS n, total_len::float8 / doc_count AS avgdl FROM memsql.namespace_stats "
        "           WHERE namespace = %(ns)s), "
        "t AS (SELECT t.lexeme, ln(1 + (s.n - t.df + 0.5) / (t.df + 0.5)) * (%(k1)s + 1) AS w "
        "      FROM memsql.term_stats t, s WHERE t.namespace = %(ns)s AND t.df > 0 "
        "        AND t.lexeme = ANY (memsql.search_lexemes(%(query)s, %(ns)s))) "
        "SELECT p.memory_id FROM memsql.postings p JOIN t ON t.lexeme = p.lexeme "
        "JOIN memsql.memories m ON m.namespace = p.namespace AND m.id = p.memory_id "
        f"WHERE p.namespace = %(ns)s AND {where} AND {versions} "
        "GROUP BY p.memory_id "
        "ORDER BY sum(t.w * p.tf / (p.tf + %(k1)s * (1 - %(b)s) + %(k1)s * %(b)s / (SELECT avgdl FROM s) * p.doc_len)) DESC, "
        "p.memory_id LIMIT %(k)s", {"ns": ns, "query": query, "k": k, "k1": k1, "b": b}).fetchall()]
