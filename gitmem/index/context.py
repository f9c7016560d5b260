"""Writing the records' context and the sources' documents into the index, in a full build and
in a catch-up (what they are: gitmem.index.neighbours; how recall uses them: docs/search.md).

Layout beside the catalog: `neighbours.sqlite` (the facts contexts are made of) and
`sources/`, a keyword index with one document per source, keyed by the source's name. A
record's context is a field of its own document in the keyword index (`text/`), so a change
of a record writes again the documents of the records whose context it is in: at most
2 × WINDOW and its links, each keeping its key.
"""

from __future__ import annotations

import contextlib
import hashlib
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.index.neighbours import FILE, Neighbours
from gitmem.index.textdoc import TextDoc, TextFields, text_fields, with_context
from gitmem.index.textindex import TextIndex

if TYPE_CHECKING:
    from gitmem.store.record import Record

__all__ = [
    "SOURCES",
    "SOURCE_CARRY",
    "SOURCE_WHOLE",
    "filling",
    "open_parts",
    "rewrite",
    "source_doc",
    "source_prior",
]

SOURCES = "sources"
SOURCES_DEPTH = 100  # sources whose documents a recall's prior scores
_SPILL = "documents.spill"  # a full build's documents, waiting for every record's facts
# Documents a catch-up's write of the sources' index reads, at most, to purge deleted ones
# (gitmem.index.textcarry): a source's document holds a whole session's text, ~25 records'
# at 100k, so a tenth of the records' budget reads about as much.
SOURCE_CARRY = 200
# The sessions' index's leftovers' share past which a catch-up rewrites it whole: lower than
# the records' (textindex.WHOLE), as a common word is in nearly every session, so its idf
# moves most with leftovers, and the index is small (~4,000 documents at 100k records).
SOURCE_WHOLE = 0.05


def open_parts(root: Path) -> tuple[Neighbours, TextIndex]:
    """The facts (read-only) and the sources' index of the build in `root`."""
    return Neighbours(root / FILE, readonly=True), TextIndex.open(root / SOURCES)


def source_prior(
    facts: Neighbours, sources: TextIndex, query: str, ids: Sequence[str]
) -> dict[str, float]:
    """For each of `ids` whose source's document matches `query`: how much of the query that
    document matches, in (0, 1]: its BM25 over the query's ceiling in the sources' index (what
    a document holding every query term once would score), capped at 1 (docs/search.md, "the
    source prior"). Absolute, not relative to the best source: a query that no source matches
    as a whole (a paraphrase, whose words are scattered over every day's notes) lifts nothing
    much, where over the best source's BM25 it lifted the best of the noise by the most."""
    ceiling = sources.ceiling(query)
    if ceiling <= 0:
        return {}
    share = {
        hit.id: min(1.0, hit.score / ceiling)
        for hit in sources.search(query, SOURCES_DEPTH)
        if hit.score > 0
    }
    return {rid: share[s] for rid, s in facts.sources(ids).items() if s in share}


@contextmanager
def filling(
    root: Path, add: Callable[[Sequence[TextFields], int], None]
) -> Iterator[Callable[[Sequence[TextFields], int, Iterable[Record]], None]]:
    """A full build's way of writing documents that need every record's facts first: each
    batch given (its documents, their first key, its records) puts its records' facts into
    `neighbours.sqlite` and spills its documents to a file beside it, so a build holds one
    batch in memory, not the store; at the end the spilled batches are read back in order and
    written with their context, then the sources' index."""
    facts = Neighbours(root / FILE, create=True, indexed=False)
    spill = root / _SPILL
    try:
        out = spill.open("wb")

        def keep(texts: Sequence[TextFields], first: int, records: Iterable[Record]) -> None:
            facts.put(records, new=True)  # a build's ids are unique (CatchUp._single_claims)
            try:
                pickle.dump((list(texts), first), out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
            except OSError as err:  # a full disk: named, as the other index files are
                raise OSError(err.errno, err.strerror, str(spill)) from err

        try:
            yield keep
        finally:
            # Each batch was flushed: a close fails only after a failed write, whose error
            # (naming the file) must not be replaced by the close's.
            with contextlib.suppress(OSError):
                out.close()
        facts.index()
        context_of, _ = facts.contexts()
        with spill.open("rb") as held:
            while True:
                try:
                    texts, first = pickle.load(held)  # our own file, just written
                except EOFError:
                    break
                add([with_context(t, context_of(t[0]["id"])) for t in texts], first)
        sources = TextIndex.create(_fresh(root / SOURCES))
        with sources.filling() as put:
            put([text_fields(source_doc(s, facts.source_text(s))) for s in facts.all_sources()], -1)
        facts.commit()
    finally:
        facts.close()
        spill.unlink(missing_ok=True)


def rewrite(
    root: Path,
    text: TextIndex,
    written: Sequence[TextDoc],
    records: Sequence[Record],
    removed: set[str],
) -> None:
    """A catch-up's keyword writes: `written` (the documents of the changed `records`) with
    their context, the documents of the records whose context changed with theirs, `removed`
    dropped; then the documents of the sources touched."""
    facts = Neighbours(root / FILE)
    try:
        touched = {r.id for r in records} | removed
        around = facts.around(touched)
        sources = set(facts.sources(touched).values())
        facts.put(records)
        facts.drop(sorted(removed))
        around |= facts.around(touched)
        sources |= set(facts.sources(touched).values())
        written = [replace(d, context=facts.context(d.id)) for d in written]
        stored = text.stored(around - touched)
        again = [replace(d, context=facts.context(d.id)) for d in stored]
        # A neighbour whose context did not change keeps its document as it is.
        docs = [*written, *(new for old, new in zip(stored, again, strict=True) if new != old)]
        text.write(docs, sorted(removed))
        made = [(s, facts.source_text(s)) for s in sorted(sources)]
        TextIndex.open(root / SOURCES).write(
            [source_doc(s, body) for s, body in made if body],
            [s for s, body in made if not body],
            SOURCE_CARRY,
            SOURCE_WHOLE,
        )
        facts.commit()
    finally:
        facts.close()


def source_doc(name: str, body: str, key: int = -1) -> TextDoc:
    """A session's document in the sources' index: its whole text, named `name`, the text's
    SHA-1 standing in a blob's place (the time-travel cache's span index keeps the same
    documents, keyed by span: gitmem.recall.replay)."""
    blob = hashlib.sha1(body.encode(), usedforsecurity=False).hexdigest()
    return TextDoc(name, blob, "", "", body, (), "source", key)


def _fresh(directory: Path) -> Path:
    directory.mkdir()
    return directory
