"""Query enrichment: key terms from the embedding model's WordPiece tokenizer -> up to 3 query variants.

A word the tokenizer splits into several pieces ("pgvector" -> pg ##ve ##ctor) is one the model has no
single token for: a name, an identifier, a rare term. Those are the words a dense embedding of the
whole question tends to blur. The raw signal is noisy (ordinary words such as "configure" split too),
so a word counts as a key term only when it is also rare in the namespace's corpus: its BM25 idf
(from memsql.term_stats) is at least ``min_idf``. Variants: the query itself, the key terms alone,
and the query with its key terms first. All are embedded and searched in the same memory_search call
(one dense arm each, the dense weight shared among them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from memsql.embedding import get_tokenizer

WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+#-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
STOP = frozenset("""a an and are as at be but by can could did do does for from had has have how i if in into is it
its me my of on or our should so than that the their them then there these they this to was we were what when where
which who why will with would you your""".split())


@dataclass(frozen=True)
class Enrichment:
    """The query variants to embed and why.

    Attributes:
        variants: 1 to 3 texts, the query first.
        key_terms: the words kept as key terms, most pieces first.
        pieces: word -> number of WordPiece pieces, for every candidate word.
    """

    variants: tuple[str, ...]
    key_terms: tuple[str, ...]
    pieces: Mapping[str, int]


def wordpiece_candidates(query: str, min_pieces: int = 2) -> dict[str, int]:
    """Words of the query that the model's tokenizer splits into at least ``min_pieces`` pieces.

    Args:
        query: the question.
        min_pieces: pieces needed to count as a candidate (2).

    Returns:
        word -> pieces, in query order; stop words and words shorter than 3 characters are left out.
    """
    words = [w for w in WORD.findall(query) if len(w) >= 3 and w.lower() not in STOP]
    if not words:
        return {}
    encodings = get_tokenizer().encode_batch(words, add_special_tokens=False)
    out: dict[str, int] = {}
    for word, enc in zip(words, encodings):
        if len(enc.ids) >= min_pieces and word not in out:
            out[word] = len(enc.ids)
    return out


def enrich(query: str, idf: Callable[[Sequence[str]], Mapping[str, float]] | None = None, min_idf: float = 2.0,
           max_variants: int = 3) -> Enrichment:
    """Query variants from WordPiece key terms filtered by corpus rarity.

    Args:
        query: the question.
        idf: maps words to their BM25 idf in the namespace (missing = unseen, kept as rare); None = no rarity filter.
        min_idf: idf a key term needs (2.0 ~ the term is in under ~13% of the namespace's memories).
        max_variants: 1..3.

    Returns:
        The variants (just the query when there is no key term).
    """
    cands = wordpiece_candidates(query)
    if cands and idf is not None:
        rarity = idf(list(cands))
        cands = {w: n for w, n in cands.items() if rarity.get(w, float("inf")) >= min_idf}
    keys = tuple(sorted(cands, key=lambda w: (-cands[w], query.find(w))))
    variants = [query]
    if keys:
        variants.append(" ".join(keys))
        rest = " ".join(w for w in query.split() if w.strip("?.,!:;") not in cands)
        variants.append(" ".join(keys) + " " + rest)
    return Enrichment(tuple(dict.fromkeys(variants))[: max(1, min(3, max_variants))], keys, cands)
