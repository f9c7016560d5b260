"""What a keyword query searches for, and how much each term weighs: plain Python over the
index's term counts (gitmem.index.textindex, the one tantivy module, builds the queries).

A query's terms are its identifiers (whole, and the parts of paths), its words as the index's
English analyzer makes them, and its CJK bigrams. A word the query has only inside an
identifier is a "piece" and weighs a quarter, so the record with the exact identifier ranks
first; an identifier scores as BM25 of a yes/no field (idf alone). A long prompt keeps
`MAX_TERMS` terms: identifiers, then the rarest words.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Protocol

from gitmem.index.textdoc import TEXT, cjk_grams, identifiers, unique, with_parts

__all__ = [
    "FIELDS_OF",
    "MAX_TERMS",
    "Analyzer",
    "Counts",
    "boost",
    "ceiling",
    "ident_score",
    "idf",
    "query_terms",
]

_BOOST = {"title": 3.0, "abstract": 2.0, "tags": 2.0, "body": 1.0, "cjk": 1.0}
_IDENT_BOOST = 3.0
_PIECE = 0.25
FIELDS_OF = {"word": TEXT, "piece": TEXT, "cjk": ("cjk",)}  # the largest field last
MAX_TERMS = 64
_MAX_IDENTS = 16


class Counts(Protocol):
    """An index's term statistics (a tantivy searcher)."""

    @property
    def num_docs(self) -> int: ...

    def doc_freq(self, field_name: str, field_value: Any, /) -> int: ...


class Analyzer(Protocol):
    """The index's word analyzer (tantivy's TextAnalyzer)."""

    def analyze(self, text: str, /) -> list[str]: ...


def query_terms(
    counts: Counts, analyzer: Analyzer, text: str
) -> tuple[list[str], list[tuple[str, str]]]:
    """The identifiers and (kind, term) pairs a query searches for, capped."""
    chunks = identifiers(text)
    idents = unique(with_parts(chunks))
    if len(idents) > _MAX_IDENTS:
        rarity = sorted((counts.doc_freq("ident", t), t) for t in idents)
        idents = [t for df, t in rarity if df][:_MAX_IDENTS]
    # A word the query only has inside an identifier is a fallback, not the intent.
    inside = Counter(analyzer.analyze(" ".join(chunks)))
    words = Counter(analyzer.analyze(text))
    terms = [("piece" if inside[w] >= n else "word", w) for w, n in words.items()]
    terms += [("cjk", t) for t in unique(cjk_grams(text, query=True))]
    if len(idents) + len(terms) > MAX_TERMS:
        ranked = sorted((_doc_freq(counts, kind, t), kind, t) for kind, t in terms)
        terms = [(kind, t) for df, kind, t in ranked if df]
    return idents, terms[: MAX_TERMS - len(idents)]


def boost(name: str, kind: str) -> float:
    """The weight of a term of `kind` ("word", "piece", "cjk") in field `name`."""
    return _BOOST[name] * (_PIECE if kind == "piece" else 1.0)


def ident_score(counts: Counts, ident: str) -> float:
    """An identifier's score in a record that holds it: BM25 of a yes/no field, i.e. idf
    alone, so that holding many identifiers costs nothing."""
    return _IDENT_BOOST * idf(counts.doc_freq("ident", ident), counts.num_docs)


def ceiling(counts: Counts, analyzer: Analyzer, text: str) -> float:
    """About what a record matching every query term once, each in its best field, would
    score: a yardstick that makes BM25 scores comparable across queries (recall uses it to
    tell a strong keyword match from a weak one). Terms no record holds are left out."""
    n = counts.num_docs
    if not n:
        return 0.0
    idents, terms = query_terms(counts, analyzer, text)
    total = 0.0
    for ident in idents:
        total += ident_score(counts, ident)
    for kind, term in terms:
        total += max(
            (
                boost(name, kind) * idf(df, n)
                for name in FIELDS_OF[kind]
                if (df := counts.doc_freq(name, term))
            ),
            default=0.0,
        )
    return total


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency, as tantivy computes it."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _doc_freq(counts: Counts, kind: str, term: str) -> int:
    """Rarity for the term cap: the body's count, else the other fields' (a lookup each)."""
    *others, main = FIELDS_OF[kind]
    return int(counts.doc_freq(main, term)) or sum(counts.doc_freq(f, term) for f in others)
