"""Token-aware chunking: a Document's sections -> chunks that fit the model window.

Counts are the embedding model's own word pieces (:func:`memsql.embedding.get_tokenizer`),
[CLS] and [SEP] included, so ``count_tokens(chunk.text) <= max_tokens`` holds for every chunk.

How sections become chunks:

- Consecutive sections that fit together are packed into one chunk, joined by a blank line.
  An atomic section (``Section.atomic``) is always a chunk of its own.
- A section larger than the window is split on token boundaries, preferring (in order) a
  paragraph break, a sentence end or line break, a space, a punctuation mark, and only then
  the middle of a word. Consecutive pieces share about ``overlap_tokens`` tokens.
  A run of characters with no such boundary (e.g. a long base64 string) is cut between word
  pieces, using the tokenizer's character offsets: nothing is dropped or truncated.
- A fenced code block (``` or ~~~) that fits in the window is never cut; a larger one is cut
  at line breaks first.

Each section is tokenized once, in one batch call. A packed chunk is not tokenized again:
its count is the sum of its sections' counts, because this tokenizer never lets a word piece
span whitespace (BertPreTokenizer splits on it; BertNormalizer works character by character),
and sections are joined by a blank line. Likewise a piece cut between words tokenizes exactly
as its slice of the section's tokens. Only a piece cut inside a word is counted again.
"""

from __future__ import annotations

import bisect
import warnings
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memsql.adapters.base import Document, Section
from memsql.embedding import MAX_TOKENS, get_tokenizer

SPECIAL_TOKENS = 2  # [CLS] and [SEP], counted in every window
MIN_WINDOW = 8  # below this a single character may not fit (one code point can be 4 pieces)
PACK_SEPARATOR = "\n\n"

# Cut levels: how good a place between two tokens is for a cut (higher is better).
_FORBIDDEN = -1  # inside a code fence that fits, or inside one character
_IN_WORD, _PUNCT, _SPACE, _SENTENCE, _PARAGRAPH = 0, 1, 2, 3, 4
_SENTENCE_END = frozenset(".!?\u2026\u3002\uff01\uff1f")
_CLOSERS = frozenset("\"')]\u00bb\u201d\u2019")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document sized for the embedding model.

    Attributes:
        text: the chunk text (what gets embedded and stored).
        index: 0-based position of the chunk in its document.
        metadata: metadata of the chunk's first section (e.g. ``heading_path``).
        source_date: latest ``source_date`` of its sections, else the document's, else None.
        token_count: word pieces of ``text`` including [CLS] and [SEP]
            (equals ``count_tokens(text)``), at most the window.
    """

    text: str
    index: int
    metadata: dict[str, Any]
    source_date: datetime | None
    token_count: int
    context: str | None = None

    @property
    def embed_text(self) -> str:
        """What the embedder reads: the chunk's text, then its context (cut first by the model window)."""
        return self.text if not self.context else f"{self.text}\n\n{self.context}"


def chunk_document(
    doc: Document, max_tokens: int = MAX_TOKENS, overlap_tokens: int = 32
) -> list[Chunk]:
    """Cut a document into chunks of at most ``max_tokens`` word pieces.

    Args:
        doc: the document; blank sections are ignored.
        max_tokens: window in word pieces, [CLS] and [SEP] included; values above the
            model's window (256) are capped to it with a warning.
        overlap_tokens: word pieces shared by consecutive pieces of one split section
            (approximate: the overlap starts at a word boundary); at most half the window
            is used, so every piece moves forward.

    Returns:
        The chunks in document order, ``index`` 0..n-1; [] for a document with no text.

    Raises:
        ValueError: max_tokens below 8, overlap_tokens negative, or overlap_tokens not
            smaller than max_tokens.
    """
    if max_tokens > MAX_TOKENS:
        warnings.warn(
            f"max_tokens={max_tokens} exceeds the model window; using {MAX_TOKENS}",
            stacklevel=2,
        )
        max_tokens = MAX_TOKENS
    if max_tokens < MIN_WINDOW:
        raise ValueError(f"max_tokens must be at least {MIN_WINDOW}, got {max_tokens}")
    if overlap_tokens < 0 or overlap_tokens >= max_tokens:
        raise ValueError(
            f"overlap_tokens must be >= 0 and smaller than max_tokens ({max_tokens}), "
            f"got {overlap_tokens}"
        )
    budget = max_tokens - SPECIAL_TOKENS  # word pieces of content per chunk
    overlap = min(overlap_tokens, budget // 2)

    sections = [s for s in doc.sections if s.text.strip()]
    if not sections:
        return []
    texts = [s.text.strip() for s in sections]
    encodings = get_tokenizer().encode_batch(texts, add_special_tokens=False)

    groups: list[tuple[str, int, list[Section]]] = []  # (text, content tokens, sections)
    pending: list[int] = []  # indexes of sections waiting to be packed
    pending_tokens = 0

    def flush() -> None:
        nonlocal pending, pending_tokens
        if pending:
            text = PACK_SEPARATOR.join(texts[i] for i in pending)
            groups.append((text, pending_tokens, [sections[i] for i in pending]))
        pending, pending_tokens = [], 0

    for i, (section, enc) in enumerate(zip(sections, encodings)):
        n = len(enc.ids)
        if n > budget:
            flush()
            pieces = _split(texts[i], enc, budget, overlap)
            groups.extend((text, count, [section]) for text, count in pieces)
        elif section.atomic:
            flush()
            groups.append((texts[i], n, [section]))
        else:
            if pending_tokens + n > budget:
                flush()
            pending.append(i)
            pending_tokens += n
    flush()

    return [
        Chunk(
            text=text,
            index=index,
            metadata=_merged_metadata(group),
            source_date=_latest(s.source_date for s in group) or doc.source_date,
            token_count=count + SPECIAL_TOKENS,
            context=group[0].context,
        )
        for index, (text, count, group) in enumerate(groups)
    ]


def _merged_metadata(group: list[Section]) -> dict[str, Any]:
    """Metadata of a chunk: its first section's, plus ``parts`` (every section's metadata, in order)
    when it packs several sections, so a chunk of several messages keeps each speaker, id and time."""
    meta = dict(group[0].metadata)
    if len(group) > 1:
        meta["parts"] = [dict(s.metadata) for s in group]
    return meta


def _latest(dates) -> datetime | None:
    """The latest of the dates that are not None, or None."""
    known = [d for d in dates if d is not None]
    return max(known) if known else None


def _fit(text: str, budget: int, overlap: int) -> list[tuple[str, int]]:
    """``text`` as one piece when it fits, else split; (piece text, word pieces) pairs."""
    enc = get_tokenizer().encode(text, add_special_tokens=False)
    if len(enc.ids) <= budget:
        return [(text, len(enc.ids))] if text else []
    return _split(text, enc, budget, overlap)


def _split(text: str, enc, budget: int, overlap: int) -> list[tuple[str, int]]:
    """Split one oversized text into pieces of at most ``budget`` word pieces.

    Args:
        text: the text (stripped).
        enc: its ``tokenizers.Encoding`` without special tokens, more than ``budget`` long.
        budget: content word pieces per piece.
        overlap: word pieces shared by consecutive pieces (at most budget // 2).

    Returns:
        (piece text, word pieces without specials) pairs in order, none empty.
    """
    offsets = enc.offsets
    n = len(offsets)
    starts = [a for a, _ in offsets]
    levels = _cut_levels(text, enc.tokens, offsets, budget)

    cuts: list[tuple[int, int]] = []  # token ranges [s, k)
    s = prev_end = 0
    while n - s > budget:
        k = _best_cut(levels, s, budget)
        if k <= prev_end:  # the piece would only repeat the previous overlap: drop the overlap
            s = prev_end
            continue
        cuts.append((s, k))
        prev_end = k
        s = _overlap_start(levels, s, k, overlap)
    cuts.append((s, n))

    pieces = []
    for s, k in cuts:
        piece = text[0 if s == 0 else starts[s] : len(text) if k == n else starts[k]].strip()
        if levels[s] > _IN_WORD and levels[k] > _IN_WORD:
            # cut between words: the piece tokenizes exactly as its token slice
            pieces.append((piece, k - s))
        elif len(piece) < len(text):
            # cut inside a word: count again, split again if needed (shorter text: this ends)
            pieces.extend(_fit(piece, budget, overlap))
        else:  # cannot happen with real tokenizers; halve by characters to stay finite
            half = len(piece) // 2
            pieces.extend(_fit(piece[:half].strip(), budget, overlap))
            pieces.extend(_fit(piece[half:].strip(), budget, overlap))
    return [p for p in pieces if p[0]]


def _cut_levels(
    text: str, tokens: list[str], offsets: list[tuple[int, int]], budget: int
) -> list[int]:
    """How good a cut before each token is.

    Args:
        text: the text the offsets point into.
        tokens: n word pieces (continuations start with "##").
        offsets: n (start, end) character offsets of the word pieces.
        budget: window in word pieces, to tell fences that fit from those that do not.

    Returns:
        levels[k] for k in 0..n: the quality of cutting between token k-1 and token k
        (levels[0] and levels[n], the text's ends, are paragraph level).
    """
    from memsql.adapters.markdown import fence_spans

    n = len(tokens)
    levels = [_PARAGRAPH] * (n + 1)
    prev_end = offsets[0][1] if n else 0
    for k in range(1, n):
        start, end = offsets[k]
        if start < prev_end:  # pieces of one character (e.g. Hangul jamo)
            levels[k] = _FORBIDDEN
        elif tokens[k].startswith("##"):
            levels[k] = _IN_WORD
        elif start == prev_end:
            levels[k] = _PUNCT
        else:
            newlines = text.count("\n", prev_end, start)
            if newlines >= 2:
                levels[k] = _PARAGRAPH
            elif newlines == 1 or _ends_sentence(text, prev_end):
                levels[k] = _SENTENCE
            else:
                levels[k] = _SPACE
        prev_end = end

    spans = fence_spans(text)
    if spans:
        starts = [a for a, _ in offsets]
        for fence_start, fence_end in spans:
            first = bisect.bisect_left(starts, fence_start)
            last_ = bisect.bisect_left(starts, fence_end)  # fence tokens: first .. last_-1
            for k in range(first + 1, last_):
                if last_ - first <= budget:
                    levels[k] = _FORBIDDEN
                else:  # too big: cut at line ends first, blank lines inside are no better
                    levels[k] = min(levels[k], _SENTENCE)
            for k in (first, last_):
                if 0 < k < n and levels[k] != _FORBIDDEN:
                    levels[k] = _PARAGRAPH
    return levels


def _ends_sentence(text: str, end: int) -> bool:
    """True when text[:end] ends with a sentence mark, maybe followed by a closing quote."""
    last = text[end - 1]
    if last in _CLOSERS and end >= 2:
        last = text[end - 2]
    return last in _SENTENCE_END


def _best_cut(levels: list[int], s: int, budget: int) -> int:
    """Where to end the piece that starts at token s (exclusive token index).

    Prefers the best cut level among positions that fill at least half the window, the
    latest position among equals; falls back to any allowed cut, then to the window's end.
    """
    hi = s + budget
    lo = s + max(1, budget // 2)
    best, best_level = hi, _FORBIDDEN - 1
    for k in range(hi, lo - 1, -1):
        level = levels[k]
        if level > best_level:
            best, best_level = k, level
            if level == _PARAGRAPH:
                break
    if best_level >= _IN_WORD:
        return best
    for k in range(lo - 1, s, -1):  # the window's second half is one protected fence
        if levels[k] >= _IN_WORD:
            return k
    return hi


def _overlap_start(levels: list[int], s: int, k: int, overlap: int) -> int:
    """First token of the next piece: about ``overlap`` tokens before k, at a word start."""
    if overlap == 0:
        return k
    fallback = k
    for j in range(max(k - overlap, s + 1), k):
        if levels[j] >= _SPACE:
            return j
        if levels[j] >= _PUNCT and fallback == k:
            fallback = j
    return fallback
