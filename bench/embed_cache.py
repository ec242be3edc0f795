"""An Embedder wrapper that keeps every vector on disk, so benchmark re-runs do not re-encode.

Vectors live in one SQLite file (default bench/.cache/embeddings.sqlite, gitignored), keyed by
sha256(model name + NUL + text) and stored as float32 bytes. Only the texts missing from the cache
reach the wrapped model; the model itself is loaded on the first miss, never on a fully warm run.
Each encode is also logged (model, label, texts, seconds), so a warm run can still report the
model's throughput measured when the cache was filled.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from memsql.embedding import Embedder


class CachingEmbedder:
    """Embedder with a persistent cache (same ``embed`` contract as :class:`memsql.embedding.Embedder`).

    Args:
        inner: the real embedder (model_name and dimension are taken from it).
        path: SQLite file of the cache (created with its directory).

    Attributes:
        label: free text logged with each encode (e.g. the dataset), see :meth:`recorded`.
        hits, misses: texts served from the cache / encoded by the model, since creation.
        encode_seconds: wall time inside the model's ``embed`` for the misses (model load excluded).
        load_seconds: wall time of loading the model (first miss only; 0 on a fully warm run).
    """

    def __init__(self, inner: Embedder, path: Path) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        # memsql's Ingestor encodes in a worker thread (overlapping the writes): one connection shared by the
        # threads, its use serialised by a lock
        # the cache file may be shared by several checkouts' benchmarks at once: wait for another writer's commit
        # (WAL: readers never wait) instead of failing with "database is locked"
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=600)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._lock = threading.RLock()
        self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS encodes (model TEXT, label TEXT, texts INTEGER, seconds REAL)")
        self._db.commit()
        self.label = ""
        self._loaded = False
        self.hits = 0
        self.misses = 0
        self.encode_seconds = 0.0
        self.load_seconds = 0.0

    def key(self, text: str) -> str:
        """Cache key of one text for this model: sha256 hex of model name, NUL, UTF-8 text."""
        return hashlib.sha256(f"{self.model_name}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def _lookup(self, keys: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            rows = self._db.execute(
                f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
            ).fetchall()
            for key, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape == (self.dimension,):
                    found[key] = vec
        return found

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts, encoding only those not cached.

        Args:
            texts: n strings.
            batch_size: texts per forward pass of the model.

        Returns:
            float32 array (n, dimension), rows L2-normalised, in the order of ``texts``.
        """
        with self._lock:
            return self._embed(texts, batch_size)

    def _embed(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        keys = [self.key(t) for t in texts]
        found = self._lookup(list(dict.fromkeys(keys)))
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        self.hits += len(texts) - sum(1 for k in keys if k not in found)
        self.misses += sum(1 for k in keys if k not in found)
        if missing:
            if not self._loaded:
                t = time.perf_counter()
                self.inner.embed(["warm up"])  # loads the model outside the timed encode
                self.load_seconds += time.perf_counter() - t
                self._loaded = True
            t = time.perf_counter()
            vecs = np.asarray(self.inner.embed(missing, batch_size=batch_size), dtype=np.float32)
            seconds = time.perf_counter() - t
            self.encode_seconds += seconds
            new = {self.key(text): vec for text, vec in zip(missing, vecs)}
            self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                                 [(k, v.tobytes()) for k, v in new.items()])
            self._db.execute("INSERT INTO encodes VALUES (?, ?, ?, ?)",
                             (self.model_name, self.label, len(missing), seconds))
            self._db.commit()
            found.update(new)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def recorded(self, label: str) -> dict[str, float] | None:
        """Every encode logged under ``label`` for this model, this run's and earlier runs'.

        Returns:
            {"texts", "seconds", "per_s"} summed over the log (model load excluded), or None if nothing was logged.
        """
        with self._lock:
            texts, seconds = self._db.execute(
                "SELECT sum(texts), sum(seconds) FROM encodes WHERE model = ? AND label = ?", (self.model_name, label)
            ).fetchone()
        if not texts:
            return None
        return {"texts": texts, "seconds": round(seconds, 2), "per_s": round(texts / seconds, 1)}

    def stats(self) -> dict[str, float]:
        """Counters so far: hits, misses, encode_seconds, load_seconds."""
        return {"hits": self.hits, "misses": self.misses, "encode_seconds": self.encode_seconds,
                "load_seconds": self.load_seconds}

    def close(self) -> None:
        with self._lock:
            self._db.close()
