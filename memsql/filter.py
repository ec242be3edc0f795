"""The autosave filter: decides whether a conversation turn (or a memory_add text) is worth saving.

Every entry gets a composite score in [0, 1], the weighted mean of five criteria, each in [0, 1]:

- density: information density, ``(unique words / words) * min(1, content words / 8)``; content words are
  words that are not stop words or fillers ("ok", "thanks", "lol"), so "ok" and "thanks!" score 0.
- novelty: ``1 - max cosine similarity`` to the namespace's memories (HNSW, :sql:`memsql.memory_nearest`) and
  to the entries saved earlier in the same batch; clipped to [0, 1]. 1 when nothing is stored yet.
- relevance: max cosine similarity (clipped to [0, 1]) to the namespace's active topics
  (:sql:`memsql.namespace_topics`) and the configured custom_topics; None (left out) when there are none.
- actionability: ``1 - 0.5 ** hits`` over cues of decisions, commitments and action items ("I will",
  "let's", "we decided", "todo", "deadline", dates, weekdays, @owners); the cues found are reported.
- recency: ``0.5 ** (age_days / half_life_days)`` of the entry's source_date under its knowledge_type's
  half-life (memsql.knowledge_types); 1 without a date or for a type that never decays.

A criterion that is None is left out and the weights of the others are renormalised. Hard rules come before
the score: shorter than ``min_length`` characters -> "too_short"; an ``exclude_patterns`` match ->
"excluded"; density 0 (not one content word: "ok ok, thanks!") -> "no_content", however novel; similarity to an existing memory >= ``novelty_threshold`` -> "near_duplicate"; composite below
``autosave_threshold`` -> "low_score". Every :class:`Decision` carries all criteria, so a skip is explainable
(``memsql ingest --dry-run``, ``memsql add --explain``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

import numpy as np

CRITERIA = ("density", "novelty", "relevance", "actionability", "recency")
REASONS = ("too_short", "excluded", "no_content", "near_duplicate", "low_score")
DENSITY_SATURATION = 8  # content words at which density stops growing

_WORD = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*", re.UNICODE)
# English stop words plus conversational fillers: words that carry no fact on their own.
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both but
by can could did do does doing down during each few for from further had has have having he her here hers herself
him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours ourselves out over own same she should so some such than that the their theirs them themselves then
there these they this those through to too under until up very was we were what when where which while who whom why
will with would you your yours yourself yourselves it's i'm you're that's don't can't won't isn't didn't doesn't
ok okay k kk yes yeah yep yup no nope sure thanks thank thx ty cool nice great good fine lol haha hah hmm hm um uh
oh ah wow right alright awesome sounds got gotcha see well also really just like
""".split())

# Cues of decisions, commitments and action items (case-insensitive); each distinct cue found counts once.
ACTION_CUES: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(rx, re.IGNORECASE)) for name, rx in (
    ("commitment", r"\b(?:i|we|you|they|he|she)\s*(?:will|'ll|\u2019ll|shall|am going to|are going to)\b"),
    ("proposal", r"\blet['\u2019]?s\b"),
    ("decision", r"\b(?:we|i|they)\s+(?:decided|agreed|chose|settled on|concluded)\b|\bdecision\b|\bagreed\b"),
    ("action_item", r"\b(?:todo|to-do|action item|next steps?|follow[- ]up|deadline|due)\b"),
    ("obligation", r"\b(?:need to|needs to|have to|has to|must|should)\b"),
    ("date", r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|"
             r"oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b|\b\d{1,2}\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"),
    ("when", r"\b(?:tomorrow|tonight|next (?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|"
             r"sunday)|by (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|eod|end of))\b"),
    ("owner", r"(?<!\w)@\w+|\bassigned to\b|\bowner\b|\bresponsible\b"),
))


@dataclass(frozen=True)
class FilterSettings:
    """[memory.filter] values (see README, Configuration)."""

    enabled: bool = False
    apply_to_documents: bool = False
    autosave_threshold: float = 0.4
    novelty_threshold: float = 0.85
    min_length: int = 20
    max_length: int = 10_000
    exclude_patterns: tuple[str, ...] = ()
    density_weight: float = 0.3
    novelty_weight: float = 0.3
    relevance_weight: float = 0.15
    actionability_weight: float = 0.15
    recency_weight: float = 0.1

    @classmethod
    def from_config(cls, values: dict[str, Any]) -> "FilterSettings":
        """From ``Config.section("memory.filter")``."""
        v = dict(values)
        v["exclude_patterns"] = tuple(v.get("exclude_patterns", ()))
        return cls(**v)

    def weights(self) -> dict[str, float]:
        return {"density": self.density_weight, "novelty": self.novelty_weight,
                "relevance": self.relevance_weight, "actionability": self.actionability_weight,
                "recency": self.recency_weight}


@dataclass(frozen=True)
class Decision:
    """The filter's verdict on one entry.

    Attributes:
        keep: save it.
        score: composite in [0, 1] (weighted mean of the criteria that are not None).
        reason: why it is not saved (one of REASONS), None when kept.
        criteria: criterion -> value in [0, 1], or None when it does not apply (relevance without topics).
        nearest_memory_id, nearest_similarity: the most similar stored memory (None when the namespace is empty);
            nearest_similarity may also come from an entry saved earlier in the same batch (nearest_memory_id None).
        cues: actionability cues found; pattern: the exclude pattern that matched.
    """

    keep: bool
    score: float
    reason: str | None
    criteria: dict[str, float | None]
    nearest_memory_id: int | None = None
    nearest_similarity: float | None = None
    cues: tuple[str, ...] = ()
    pattern: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"keep": self.keep, "score": round(self.score, 4), "reason": self.reason,
                "criteria": {k: (None if v is None else round(v, 4)) for k, v in self.criteria.items()},
                "nearest_memory_id": self.nearest_memory_id,
                "nearest_similarity": None if self.nearest_similarity is None else round(self.nearest_similarity, 4),
                "cues": list(self.cues), "pattern": self.pattern}


def density(text: str) -> float:
    """Information density in [0, 1]: (unique words / words) * min(1, unique content words / 8); 0 for no words."""
    words = [w.lower() for w in _WORD.findall(text)]
    if not words:
        return 0.0
    unique = set(words)
    content = {w for w in unique if w not in STOP_WORDS and (len(w) > 2 or w.isdigit())}
    return (len(unique) / len(words)) * min(1.0, len(content) / DENSITY_SATURATION)


def action_cues(text: str) -> tuple[str, ...]:
    """Names of the actionability cues found in text, in ACTION_CUES order."""
    return tuple(name for name, rx in ACTION_CUES if rx.search(text))


def actionability(cues: Sequence[str]) -> float:
    """1 - 0.5 ** (number of distinct cues): 0, 0.5, 0.75, 0.875, ..."""
    return 1.0 - 0.5 ** len(cues)


def recency(source_date: datetime | None, half_life_days: float | None, now: datetime | None = None) -> float:
    """0.5 ** (age_days / half_life_days); 1.0 without a date, without decay, or for a future date."""
    if source_date is None or half_life_days is None:
        return 1.0
    now = now or datetime.now(timezone.utc)
    if source_date.tzinfo is None:
        source_date = source_date.replace(tzinfo=timezone.utc)
    age = (now - source_date).total_seconds() / 86400.0
    return 1.0 if age <= 0 else 0.5 ** (age / half_life_days)


def composite(criteria: dict[str, float | None], weights: dict[str, float]) -> float:
    """Weighted mean of the criteria that are not None (weights renormalised); 1.0 when no weight applies."""
    total = sum(weights[k] for k, v in criteria.items() if v is not None)
    if total <= 0:
        return 1.0
    return sum(weights[k] * v for k, v in criteria.items() if v is not None) / total


Fetch = Callable[[str, Any], list[dict]]
"""Runs one SQL statement with parameters and returns its rows as dicts."""


@dataclass
class AutosaveFilter:
    """Scores entries against a namespace's memories and decides which to save.

    Args:
        settings: [memory.filter] values.
        embed: embeds topic labels (texts -> (n, 384) unit vectors); used for relevance.
        custom_topics: configured topic labels (with descriptions) that count as active topics.
        now: clock for recency (tests pin it); default the current time.
    """

    settings: FilterSettings
    embed: Callable[[list[str]], np.ndarray] | None = None
    custom_topics: tuple[str, ...] = ()
    now: datetime | None = None
    _label_vecs: dict[str, np.ndarray] = field(default_factory=dict)
    _patterns: list[re.Pattern] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._patterns = [re.compile(p) for p in self.settings.exclude_patterns]

    def _topic_matrix(self, fetch: Fetch, namespace: str) -> np.ndarray | None:
        rows = fetch("SELECT topic FROM memsql.namespace_topics(%s, 20)", (namespace,))
        labels = list(dict.fromkeys([*self.custom_topics, *(r["topic"] for r in rows)]))
        if not labels or self.embed is None:
            return None
        missing = [t for t in labels if t not in self._label_vecs]
        if missing:
            for t, v in zip(missing, self.embed(missing)):
                self._label_vecs[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self._label_vecs[t] for t in labels])

    def evaluate(self, fetch: Fetch, namespace: str, texts: Sequence[str], vectors: np.ndarray,
                 knowledge_type: str, source_dates: Sequence[datetime | None] | None = None,
                 batch_kept: list | None = None, exclude_document: int | None = None) -> list[Decision]:
        """Decide for each entry, in order; an entry kept here counts as stored for the ones after it.

        Args:
            fetch: runs SQL (memsql.memory_nearest, memsql.namespace_topics, the knowledge_types half-life).
            namespace: where the entries would be saved.
            texts: n entries.
            vectors: (n, 384) unit embeddings of the entries.
            knowledge_type: their knowledge_type (its half-life drives recency).
            source_dates: n dates (or None) for recency.
            batch_kept: vectors of entries kept by earlier calls but not stored (a dry run); kept entries are
                appended to it. Default: only this call's kept entries count.
            exclude_document: a document whose memories novelty ignores (the revised document the entries replace).

        Returns:
            n decisions.
        """
        n = len(texts)
        if n == 0:
            return []
        s = self.settings
        vectors = np.asarray(vectors, dtype=np.float32)
        dates = list(source_dates) if source_dates is not None else [None] * n
        nearest: dict[int, tuple[int, float]] = {}
        for r in fetch("SELECT query_index, memory_id, similarity FROM memsql.memory_nearest(%s::vector[], %s, 1, %s)",
                       (list(vectors), namespace, exclude_document)):
            nearest[r["query_index"] - 1] = (r["memory_id"], float(r["similarity"]))
        hl_rows = fetch("SELECT half_life_days FROM memsql.knowledge_types WHERE name = %s", (knowledge_type,))
        half_life = hl_rows[0]["half_life_days"] if hl_rows else None
        topics = self._topic_matrix(fetch, namespace)
        weights = s.weights()
        kept: list[np.ndarray] = batch_kept if batch_kept is not None else []
        out: list[Decision] = []
        for i, (text, vec) in enumerate(zip(texts, vectors)):
            mem_id, sim = nearest.get(i, (None, None))
            if kept:  # entries saved earlier in this batch are not in the index yet
                batch_sim = float(np.max(np.stack(kept) @ vec))
                if sim is None or batch_sim > sim:
                    mem_id, sim = None, batch_sim
            cues = action_cues(text)
            criteria: dict[str, float | None] = {
                "density": density(text),
                "novelty": 1.0 if sim is None else min(1.0, max(0.0, 1.0 - sim)),
                "relevance": None if topics is None else min(1.0, max(0.0, float(np.max(topics @ vec)))),
                "actionability": actionability(cues),
                "recency": recency(dates[i], half_life, self.now),
            }
            score = composite(criteria, weights)
            pattern = next((p.pattern for p in self._patterns if p.search(text)), None)
            if len(text.strip()) < s.min_length:
                reason = "too_short"
            elif pattern is not None:
                reason = "excluded"
            elif criteria["density"] == 0.0:
                reason = "no_content"
            elif sim is not None and sim >= s.novelty_threshold:
                reason = "near_duplicate"
            elif score < s.autosave_threshold:
                reason = "low_score"
            else:
                reason = None
            if reason is None:
                kept.append(vec)
            out.append(Decision(reason is None, score, reason, criteria, mem_id, sim, cues, pattern))
        return out


def describe(decision: Decision) -> str:
    """One line for a terminal: verdict, score and each criterion."""
    crit = "  ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in decision.criteria.items())
    verdict = "keep" if decision.keep else f"skip ({decision.reason})"
    extra = ""
    if decision.nearest_similarity is not None:
        extra += f"  nearest {decision.nearest_memory_id or 'batch'} @ {decision.nearest_similarity:.2f}"
    if decision.cues:
        extra += f"  cues {','.join(decision.cues)}"
    if decision.pattern:
        extra += f"  pattern {decision.pattern!r}"
    return f"{verdict:<22} score {decision.score:.2f}  {crit}{extra}"

