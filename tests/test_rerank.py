"""Cross-encoder rerank: a tiny cross-encoder made and saved here (no download), loaded from its path."""

from __future__ import annotations

import pytest

from memsql.config import load

FACTS = ["Deploys freeze on Fridays after noon.",
         "The cache uses Redis with a five minute TTL.",
         "Backups are encrypted at rest with age.",
         "Friday deploys need a second reviewer.",
         "The staging database runs on pg-staging-3."]


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory):
    """A 1-layer BERT sequence classifier (random weights, seed 0) with the packaged MiniLM tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from memsql.embedding import model_path

    path = tmp_path_factory.mktemp("cross-encoder")
    torch.manual_seed(0)
    model = BertForSequenceClassification(BertConfig(
        vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        num_labels=1, max_position_embeddings=512))
    model.save_pretrained(path)
    AutoTokenizer.from_pretrained(model_path()).save_pretrained(path)
    return str(path)


def config(tmp_path, **vector):
    p = tmp_path / "memsql.toml"
    p.write_text("")
    return load(p, env={}, flags={f"memory.vector.{k}": v for k, v in vector.items()})


def test_rerank_orders_by_the_cross_encoder(dsn, embedder, tmp_path, tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    from memsql.client import Memory

    cfg = config(tmp_path, rerank=True, rerank_model=tiny_cross_encoder, rerank_candidates=5)
    with Memory(dsn=dsn, embedder=embedder, config=cfg) as m:
        for f in FACTS:
            m.add(f)
        plain = m.search("can I deploy on friday?", k=5, rerank=False, touch=False)
        reranked = m.search("can I deploy on friday?", k=3, touch=False)
    scores = CrossEncoder(tiny_cross_encoder, device="cpu").predict(
        [("can I deploy on friday?", r.content) for r in plain])
    expected = [plain[i].memory_id for i in sorted(range(len(plain)), key=lambda i: (-scores[i], i))][:3]
    assert [r.memory_id for r in reranked] == expected
    assert [r.rerank_score for r in reranked] == pytest.approx(sorted(scores, reverse=True)[:3], abs=1e-6)
    assert all(r.rerank_score is None for r in plain)


def test_rerank_model_errors(dsn, embedder, tmp_path):
    from memsql.client import Memory
    from memsql.errors import SetupError

    with Memory(dsn=dsn, embedder=embedder,
                config=config(tmp_path, rerank=True, rerank_model=str(tmp_path / "missing"))) as m:
        m.add(FACTS[0])
        with pytest.raises(SetupError, match="is not a folder"):
            m.search("deploy", touch=False)
    (tmp_path / "empty").mkdir()
    with Memory(dsn=dsn, embedder=embedder,
                config=config(tmp_path, rerank=True, rerank_model=str(tmp_path / "empty"))) as m:
        with pytest.raises(SetupError, match="cannot load the cross-encoder"):
            m.search("deploy", touch=False)


def test_cli_rerank_model_flag(dsn, tiny_cross_encoder):
    import json

    from test_cli import run

    assert run(["add", FACTS[0]], dsn).returncode == 0
    out = run(["search", "deploy friday", "--rerank-model", tiny_cross_encoder, "--no-touch"], dsn)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert len(rows) == 1 and isinstance(rows[0]["rerank_score"], float)
