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


def test_openvino_bulk_path_that_makes_no_progress_fails_with_a_clear_error():
    emb = OnnxEmbedder("openvino")
    emb.warm_up()   # the throughput compilation and its requests, loaded with the default stall_seconds
    texts = [f"Batch text number {i}: the bulk path runs when a call has more texts than a batch. " * 8
             for i in range(200)]
    emb.stall_seconds = 0.0001   # no inference finishes within 0 ms: every wait times out at once
    with pytest.raises(EmbeddingError, match="made no progress for 0.0001 s") as info:
        emb.embed(texts, batch_size=64)
    assert "stall_seconds" in info.value.hint
    emb.stall_seconds = 120.0   # the requests were cancelled, not broken: the next call completes
    got = emb.embed(texts, batch_size=64)
    assert got.shape == (200, DIMENSION) and np.allclose(np.linalg.norm(got, axis=1), 1, atol=1e-3)


def test_words_longer_than_wordpiece_reads_are_embedded_from_their_characters(reference):
    import base64
    import random

    blobs = [base64.b64encode(random.Random(i).randbytes(150)).decode() for i in range(3)]   # 200 chars, no space
    for emb in (OnnxEmbedder("onnx"), SentenceTransformerEmbedder()):
        vecs = emb.embed(blobs, batch_size=3)
        assert float(vecs[0] @ vecs[1]) < 0.99   # one [UNK] each would make them the same vector
    onnx = OnnxEmbedder("onnx").embed(blobs, batch_size=3)
    torch = SentenceTransformerEmbedder().embed(blobs, batch_size=3)
    assert np.min(np.sum(onnx * torch, axis=1)) > EXPORT_MIN_COSINE   # both backends read the same pieces
