"""Topic assignment at ingest and memory_add ([memory.topics]); no language model calls.

- fixed: each custom topic's label (with its description, when given) is embedded once; a chunk gets the
  topics whose cosine similarity to the chunk's embedding is >= min_confidence, best first, at most
  max_topics_per_entry. Unmatched content stays uncategorised (no topic).
- auto: key phrases of the chunk itself. Candidates are its words and two-word phrases without stop words
  (3+ characters, not only digits), pre-ranked by term frequency times the word's rarity in the namespace
  (BM25 idf from memsql.term_idf; a word the namespace has never seen gets the highest idf), the best
  ``AUTO_CANDIDATES`` of them embedded (cached per label) and ranked by cosine similarity to the chunk (as
  KeyBERT does). Those >= min_confidence are kept, skipping a label contained in one already chosen.
- hybrid: fixed first; auto only for chunks no custom topic matches.

The confidence of a topic is that cosine similarity; labels are stored lower-cased for auto topics and as
written for custom ones.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from memsql.filter import STOP_WORDS

AUTO_CANDIDATES = 8  # candidate phrases per chunk that are embedded and ranked
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#.\-]*[A-Za-z0-9+#]|[A-Za-z]{3,}")


@dataclass(frozen=True)
class Topic:
    """A topic assigned to a chunk: label and confidence (cosine similarity to the chunk, in [-1, 1])."""

    label: str
    confidence: float


@dataclass(frozen=True)
class TopicSettings:
    """[memory.topics] values."""

    enabled: bool = False
    taxonomy: str = "auto"
    custom_topics: tuple[tuple[str, str], ...] = ()  # (label, description)
    max_topics_per_entry: int = 3
    min_confidence: float = 0.6

    @classmethod
    def from_config(cls, values: dict[str, Any]) -> "TopicSettings":
        custom = []
        for t in values.get("custom_topics", ()):
            if isinstance(t, str):
                custom.append((t.strip(), ""))
            else:
                custom.append((t["label"].strip(), t.get("description", "").strip()))
        return cls(values.get("enabled", False), values.get("taxonomy", "auto"), tuple(custom),
                   values.get("max_topics_per_entry", 3), values.get("min_confidence", 0.6))

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.custom_topics)


def candidates(text: str) -> Counter:
    """Candidate key phrases of a text with their counts: words and two-word phrases, lower-cased, no stop words."""
    words = [w.lower().strip(".-") for w in _TOKEN.findall(text)]
    counts: Counter = Counter()
    prev: str | None = None
    for w in words:
        ok = len(w) >= 3 and w not in STOP_WORDS and not w.replace(".", "").isdigit()
        if ok:
            counts[w] += 1
            if prev is not None:
                counts[f"{prev} {w}"] += 1
        prev = w if ok else None
    return counts


@dataclass
class TopicAssigner:
    """Assigns topics to chunks.

    Args:
        settings: [memory.topics] values.
        embed: texts -> (n, 384) unit vectors (the embedding model).
        idf: words -> {word: idf} in the target namespace (memsql.term_idf); None = every word equally rare.
    """

    settings: TopicSettings
    embed: Callable[[list[str]], np.ndarray]
    idf: Callable[[list[str]], dict[str, float]] | None = None
    _vecs: dict[str, np.ndarray] = field(default_factory=dict)

    def _vectors(self, labels: Sequence[str], texts: Sequence[str] | None = None) -> np.ndarray:
        texts = texts or labels
        missing = [(label, t) for label, t in zip(labels, texts) if label not in self._vecs]
        if missing:
            for (label, _), v in zip(missing, self.embed([t for _, t in missing])):
                self._vecs[label] = np.asarray(v, dtype=np.float32)
        return np.stack([self._vecs[label] for label in labels]) if labels else np.zeros((0, 384), np.float32)

    def _fixed(self, vecs: np.ndarray) -> list[list[Topic]]:
        s = self.settings
        labels = [f"custom:{label}" for label, _ in s.custom_topics]
        texts = [f"{label}: {desc}" if desc else label for label, desc in s.custom_topics]
        sims = vecs @ self._vectors(labels, texts).T  # (n, topics)
        out = []
        for row in sims:
            order = sorted(range(len(row)), key=lambda j: (-row[j], j))
            out.append([Topic(s.custom_topics[j][0], float(row[j])) for j in order
                        if row[j] >= s.min_confidence][: s.max_topics_per_entry])
        return out

    def _auto(self, texts: Sequence[str], vecs: np.ndarray) -> list[list[Topic]]:
        s = self.settings
        counts = [candidates(t) for t in texts]
        words = sorted({w for c in counts for phrase in c for w in phrase.split()})
        idf = self.idf(words) if (self.idf and words) else {}
        top_idf = max(idf.values(), default=1.0)
        out = []
        for c, vec in zip(counts, vecs):
            if not c:
                out.append([])
                continue
            def weight(phrase: str) -> float:
                return c[phrase] * max(idf.get(w, top_idf) or 0.0 for w in phrase.split())
            ranked = sorted(c, key=lambda p: (-weight(p), p))[:AUTO_CANDIDATES]
            sims = self._vectors(ranked) @ vec
            chosen: list[Topic] = []
            for j in sorted(range(len(ranked)), key=lambda j: (-sims[j], ranked[j])):
                if sims[j] < s.min_confidence or len(chosen) >= s.max_topics_per_entry:
                    break
                label = ranked[j]
                if any(label in t.label or t.label in label for t in chosen):
                    continue
                chosen.append(Topic(label, float(sims[j])))
            out.append(chosen)
        return out

    def assign(self, texts: Sequence[str], vectors: np.ndarray) -> list[list[Topic]]:
        """Topics for each chunk, best first.

        Args:
            texts: n chunk texts.
            vectors: (n, 384) their unit embeddings.

        Returns:
            n lists of :class:`Topic` (empty when nothing reaches min_confidence or topics are disabled).
        """
        s = self.settings
        if not s.enabled or len(texts) == 0:
            return [[] for _ in texts]
        vecs = np.asarray(vectors, dtype=np.float32)
        if s.taxonomy == "fixed":
            return self._fixed(vecs) if s.custom_topics else [[] for _ in texts]
        if s.taxonomy == "auto":
            return self._auto(texts, vecs)
        fixed = self._fixed(vecs) if s.custom_topics else [[] for _ in texts]
        todo = [i for i, t in enumerate(fixed) if not t]
        if todo:
            auto = self._auto([texts[i] for i in todo], vecs[todo])
            for i, topics in zip(todo, auto):
                fixed[i] = topics
        return fixed
