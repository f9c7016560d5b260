"""When a distilled record says what a current record already says: the definition capture
uses to drop it (measured in benchmarks/bench_capture.py; docs/capture.md, "De-duplication").

Two records of the same type are duplicates when their words, compared as sets after folding
case, accents and punctuation and dropping the commonest English words, overlap by
`JACCARD` or more, or when the smaller set lies `CONTAINED` or more inside the other and their
titles agree on `CONTAINED` of their words (a restatement with a sentence added or left out).
Words are compared whole, and the names of the smaller record (words with a digit or an
underscore: numbers, versions, ports, identifiers) must all be in the other: "retries 3
times" never duplicates "retries 5 times", nor "dbt model fct_payouts" "dbt model
fct_disputes", however alike the rest.
"""

from __future__ import annotations

import re
import unicodedata

from gitmem.store.record import Record

__all__ = ["CONTAINED", "JACCARD", "Seen", "names", "record_text", "words"]

JACCARD = 0.6
CONTAINED = 0.8

_WORD = re.compile(r"[^\W_]+")
_NAME = re.compile(r"\w+")
_STOP = frozenset(
    "a an and are as at be but by for from has have in is it its of on or that the this to "
    "was we were will with not no so than then there these they those use used uses".split()
)


def _plain(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in folded if not unicodedata.combining(ch))


def words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(_plain(text)) if w not in _STOP)


def names(text: str) -> frozenset[str]:
    """The words with a digit or an underscore in them: numbers, versions, identifiers."""
    return frozenset(
        w for w in _NAME.findall(_plain(text)) if "_" in w or any(c.isdigit() for c in w)
    )


def record_text(record: Record) -> str:
    return f"{record.title}\n{record.abstract}\n{record.body}"


class Seen:
    """Records (current ones, and those already taken from this answer) to compare with."""

    def __init__(self) -> None:
        self._items: list[tuple[str, frozenset[str], frozenset[str], frozenset[str], str]] = []
        self._ids: set[str] = set()

    def add(self, type_: str, title: str, text: str, ident: str) -> None:
        if ident and ident in self._ids:
            return
        self._ids.add(ident)
        self._items.append((type_, words(title), words(text), names(text), ident))

    def add_record(self, record: Record) -> None:
        if record.status != "superseded":
            self.add(record.type, record.title, record_text(record), record.id)

    def duplicate(self, type_: str, title: str, text: str) -> str | None:
        """The id (or "" for one of this answer's) of what `text` duplicates, else None."""
        mine, my_title, my_names = words(text), words(title), names(text)
        for kind, their_title, theirs, their_names, ident in self._items:
            if kind != type_:
                continue
            small, large = (my_names, their_names)
            if len(mine) > len(theirs):
                small, large = large, small
            if small <= large and _similar(mine, theirs, my_title, their_title):
                return ident
        return None


def _similar(a: frozenset[str], b: frozenset[str], ta: frozenset[str], tb: frozenset[str]) -> bool:
    if not a or not b:
        return False
    shared = len(a & b)
    if shared / len(a | b) >= JACCARD:
        return True
    titles = len(ta & tb) / max(1, min(len(ta), len(tb)))
    return shared / min(len(a), len(b)) >= CONTAINED and titles >= CONTAINED
