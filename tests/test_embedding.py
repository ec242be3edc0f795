"""Embedding backends: ONNX Runtime and OpenVINO give sentence-transformers' vectors from the same weights."""

from __future__ import annotations

import numpy as np
import pytest

from memsql.config import ConfigError, load
from memsql.embedding import (DIMENSION, EXPORT_MIN_COSINE, OnnxEmbedder, SentenceTransformerEmbedder,
                              default_embedder, make_embedder, onnx_path)
from memsql.errors import EmbeddingError

TEXTS = [
    "We chose Redis for the cache, with a five minute TTL.",
    "  Leading and trailing spaces are stripped, as sentence-transformers does.  ",
    "a",
    "PostgreSQL keeps the memories; pgvector's HNSW index answers the dense arm, a GIN index the lexical one. " * 12,
    "Ünïcödé accents fold: café, naïve, Zürich; code tokens too: memory_search(), src/app.py, v1.2.3.",
]


@pytest.fixture(scope="module")
def reference():
    return SentenceTransformerEmbedder().embed(TEXTS, batch_size=2)


@pytest.mark.parametrize("backend", ["onnx", "openvino"])
def test_backend_matches_sentence_transformers(backend, reference):
    emb = OnnxEmbedder(backend)
    got = emb.embed(TEXTS, batch_size=2)  # batches of mixed lengths: padding must not change a vector
    assert got.shape == (len(TEXTS), DIMENSION) and got.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(got * reference, axis=1)
    assert cosines.min() >= EXPORT_MIN_COSINE, cosines
    if backend == "openvino":  # more texts than one batch ran on the throughput compilation, concurrently
        assert emb._bulk is not None
    # a text embedded alone (one batch: the latency compilation) gets the same vector as inside a batch
    alone = emb.embed([TEXTS[3]])[0]
    assert float(alone @ got[3]) >= 0.99999
    assert emb.embed([]).shape == (0, DIMENSION)
    assert onnx_path().is_file()  # exported once into the cache dir, reused after


def test_make_embedder_backends():
    assert make_embedder("torch").backend == "torch"
    assert make_embedder("onnx").backend == "onnx"
    assert default_embedder("onnx") is default_embedder("onnx")
    with pytest.raises(EmbeddingError) as info:
        make_embedder("tensorflow")
    assert "torch, onnx, openvino" in str(info.value)


def test_backend_from_config(tmp_path):
    path = tmp_path / "memsql.toml"
    path.write_text('[memory.embeddings]\nbackend = "onnx"\n')
    cfg = load(path, env={})
    assert (cfg.get("memory.embeddings.backend"), cfg.sources["memory.embeddings.backend"]) == ("onnx", str(path))
    cfg = load(path, env={"MEMSQL_MEMORY_EMBEDDINGS_BACKEND": "torch"})
    assert cfg.get("memory.embeddings.backend") == "torch"
    from memsql.client import Memory

    assert Memory(dsn="postgresql:///unused", config=cfg).embedder.backend == "torch"
    path.write_text('[memory.embeddings]\nbackend = "tensorrt"\n')
    with pytest.raises(ConfigError) as info:
        load(path, env={})
    assert "bad value for memory.embeddings.backend" in str(info.value) and "openvino" in str(info.value)
    path.write_text('[memory.embeddings]\nmodel = "x"\n')
    with pytest.raises(ConfigError) as info:
        load(path, env={})
    assert "unknown key memory.embeddings.model" in str(info.value)
