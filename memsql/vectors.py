"""Embeddings at the door: the Python twin of SQL's memsql.vector_problem (sql/functions/10_util.sql).

A vector that cannot be both stored and searched alike by the exact scan and the HNSW index (which holds
``embedding::halfvec(384)``) is refused before it reaches the database: not finite, zero, a component past the
half-precision range, or zero or off its direction once in half precision. The SQL functions refuse the same
vectors with SQLSTATE MS005, so every path (Python client, worker, SQL) says the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from memsql.errors import DimensionMismatch

DIMENSION = 384
HALF_MAX = 65504.0
MIN_HALF_COSINE = 0.9999
HINT = ("pass a finite, non-zero 384-dimensional embedding of all-MiniLM-L6-v2 (unit length, as memsql.embedding "
        "makes them); normalise your own vectors to length 1")


def vector_problem(v, dimension: int = DIMENSION) -> str | None:
    """What is wrong with an embedding, or None when it can be stored and searched.

    Args:
        v: array-like of floats, shape (dimension,).
        dimension: the schema's vector dimension (384).

    Returns:
        A short description ("is the zero vector", ...) or None.
    """
    a = np.asarray(v, dtype=np.float64)
    if a.ndim != 1 or a.shape[0] != dimension:
        return f"has shape {a.shape}, not ({dimension},)"
    if not np.all(np.isfinite(a)):
        return "is not finite (NaN or infinite components)"
    if not np.any(a):
        return "is the zero vector"
    if np.max(np.abs(a)) > HALF_MAX:
        return f"has a component beyond the half-precision range ({HALF_MAX:g})"
    single = a.astype(np.float32).astype(np.float64)
    half = single.astype(np.float16).astype(np.float64)
    if not np.any(half):
        return "is zero in half precision (the HNSW index stores halfvec)"
    cosine = float(single @ half / (np.linalg.norm(single) * np.linalg.norm(half)))
    if cosine < MIN_HALF_COSINE:
        return "loses its direction in half precision (components under 6e-5 are subnormal or zero as halfvec)"
    return None


def check_vectors(what: str, vectors: Iterable, dimension: int = DIMENSION) -> list[np.ndarray]:
    """The vectors as float32 arrays, each checked by :func:`vector_problem`.

    Args:
        what: what they are, for the message ("query embedding").
        vectors: iterable of array-likes.
        dimension: expected dimension.

    Returns:
        list of float32 arrays.

    Raises:
        DimensionMismatch: SQLSTATE MS005, naming the first bad vector (1-based, as SQL does).
    """
    out = []
    for i, v in enumerate(vectors, start=1):
        problem = vector_problem(v, dimension)
        if problem:
            raise DimensionMismatch(f"{what} {i} {problem}", HINT, "MS005")
        out.append(np.asarray(v, dtype=np.float32))
    return out
