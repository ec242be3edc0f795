"""Cross-encoder rerank ([memory.vector] rerank = true): the fused top candidates of memory_search are scored
as (query, memory content) pairs by a sentence-transformers CrossEncoder loaded from a local folder, and
returned by that score.

This is the one place where Python re-orders memory_search's rows: a cross-encoder is a transformer, which
PostgreSQL cannot run. Nothing is downloaded: ``rerank_model`` is a path. To use a public reranker, copy it
to disk once on a machine with access to it, e.g. in Python::

    from sentence_transformers import CrossEncoder
    CrossEncoder("cross-encoder/ms-marco-MiniLM-L-6-v2").save_pretrained("/models/ms-marco-MiniLM-L-6-v2")
    # or "BAAI/bge-reranker-base"

then set ``rerank_model = "/models/ms-marco-MiniLM-L-6-v2"`` and ``rerank = true`` in [memory.vector].
"""

from __future__ import annotations

import os
import threading
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from memsql.errors import SetupError

_lock = threading.Lock()


@lru_cache(maxsize=2)
def load_cross_encoder(path: str):
    """The CrossEncoder at a local folder, loaded once per process (CPU).

    Raises:
        SetupError: the folder does not exist or holds no loadable cross-encoder.
    """
    if not path or not Path(path).is_dir():
        raise SetupError(f"rerank_model {path!r} is not a folder",
                         "set [memory.vector] rerank_model to the local folder of a saved cross-encoder "
                         "(see README: Cross-encoder rerank)")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import CrossEncoder

    try:
        return CrossEncoder(path, device="cpu", local_files_only=True)
    except Exception as exc:  # a folder without config.json / weights, a wrong model type
        raise SetupError(f"cannot load the cross-encoder at {path}: {exc}",
                         "the folder must hold a model saved with CrossEncoder.save_pretrained") from exc


def rerank(query: str, results: Sequence, model_path: str, batch_size: int = 32) -> list:
    """Order search results by cross-encoder score.

    Args:
        query: the search text.
        results: memsql.results.SearchResult rows (the fused top candidates).
        model_path: local folder of the cross-encoder.
        batch_size: pairs per forward pass.

    Returns:
        The results with ``rerank_score`` set (the model's raw output: a logit for ms-marco models), best first;
        ties keep memory_search's order.

    Raises:
        SetupError: the model cannot be loaded.
    """
    if not results:
        return []
    model = load_cross_encoder(model_path)
    with _lock:  # one model per process, shared by threads (the MCP server's pool)
        scores = model.predict([(query, r.content) for r in results], batch_size=batch_size,
                               show_progress_bar=False, convert_to_numpy=True)
    scored = [replace(r, rerank_score=float(s)) for r, s in zip(results, scores.reshape(len(results), -1)[:, 0])]
    order = sorted(range(len(scored)), key=lambda i: (-scored[i].rerank_score, i))
    return [scored[i] for i in order]
