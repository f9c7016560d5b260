"""The keyword half of recall: a tantivy BM25 index over records, kept as a disposable cache.

The only gitmem module that imports tantivy. Git is the truth: any unreadable or foreign
directory is `TextIndexCorrupt`, and the caller rebuilds it.

Tokens: tantivy's `en_stem` pipeline plus ASCII folding and Lucene's 33 English stop words.
Queries never reach tantivy's parser; the index's own analyzer turns them into term queries, so
`AND`, `field:value`, `-x` or quotes are plain text. The documents, their fields and the `ident`
and `cjk` fields made in Python are gitmem.index.textdoc's (pure Python); this module stores and
searches them. An identifier scores as BM25 of a yes/no field; a word a query has only inside an
identifier weighs a quarter, so the record with the exact identifier ranks first. A long prompt
keeps `textquery.MAX_TERMS` terms: identifiers, then the rarest words.

Determinism: tantivy sums BM25 statistics over all segments, so how records fell into segments
changes no score, and equal scores go by id (while the tie fits in `texthits.MAX_FETCH` hits).
Deleted documents are the catch: tantivy counts them until a merge, which tantivy-py cannot
request. So `write` purges them by carrying, in the same commit, segments that hold them
(their survivors deleted and added again; an emptied segment is dropped): at most `budget`
documents read a write, the segments with the most leftovers per document first
(gitmem.index.textcarry). An edit in a small segment leaves the index equal, score for score,
to a rebuild; one in a big old segment leaves a leftover there, and scores drift from a
rebuild's, until tantivy merges that segment or leftovers pass `whole` (default `WHOLE`) of
the index, when the write rewrites it whole (docs/search.md says how far). Survivors' text
comes from `source/`, an index that only stores records, so hits stay cheap to fetch. Scores
are float32 sums; tests find them bit-identical, but tantivy's top-k pruning may add terms in
another order, so count on ~1e-7.

Concurrency: commits appear atomically (tantivy swaps meta.json) to readers that `reload`. A
second writer waits `_LOCK_WAIT` seconds for tantivy's lock, then raises `TextIndexBusy`. The
source index commits first and is trusted only where its blob matches the searched index.

Keys: a search given `resolve` names its hits by their catalog keys instead of their stored
documents (gitmem.index.textdoc says why, and which hits it leaves out).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import tantivy

from gitmem.index import textcarry, textdoc, texthits, textquery
from gitmem.index.textdoc import TextDoc, TextHit, TextIndexBusy, TextIndexCorrupt

# The documents and errors are gitmem.index.textdoc's; named here too, as what TextIndex takes,
# returns and raises.
__all__ = ["TextDoc", "TextHit", "TextIndex", "TextIndexBusy", "TextIndexCorrupt"]

_TERM_SET_MAX = 3000  # `allowed` sets up to this size filter inside tantivy, larger ones after
CARRY = 2000  # documents a write reads, at most, to purge the deleted ones (textcarry)
WHOLE = 0.10  # leftovers' share of the index past which a write rewrites all of it (textcarry)
_LOCK_WAIT = 2.0
_BIG_BATCH = 5000  # a write adding more documents gets a second indexing thread


class TextIndex:
    """A keyword index in one directory. Searches see the state of the last `reload`."""

    def __init__(self, directory: Path, main: tantivy.Index, source: tantivy.Index) -> None:
        self._directory = directory
        self._main = main
        self._source = source
        self._schema = main.schema
        self._en = _english()
        main.register_tokenizer(textdoc.EN, self._en)
        words = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
        main.register_tokenizer(textdoc.WORDS, words)
        main.config_reader("manual")
        source.config_reader("manual")
        self._counted = textcarry.counted(main.searcher(), directory, tantivy.DocAddress)

    @classmethod
    def create(cls, directory: Path) -> TextIndex:
        """A new, empty index in `directory`, which must exist and be empty."""
        if any(directory.iterdir()):
            raise FileExistsError(f"{directory} is not empty; a text index needs its own dir")
        (directory / "source").mkdir()
        main = tantivy.Index(_schema(textdoc.MAIN_FIELDS), path=str(directory), reuse=False)
        source = tantivy.Index(
            _schema(textdoc.SOURCE_FIELDS), path=str(directory / "source"), reuse=False
        )
        return cls(directory, main, source)

    @classmethod
    def open(cls, directory: Path) -> TextIndex:
        """Open an index made by `create`; `TextIndexCorrupt` if that is not what is there."""
        main = _open(directory, textdoc.MAIN_FIELDS)
        return cls(directory, main, _open(directory / "source", textdoc.SOURCE_FIELDS))

    def reload(self) -> None:
        """Make searches see the latest commit, including one made by another process."""
        try:
            self._main.reload()
        except ValueError as err:
            raise TextIndexCorrupt(
                f"cannot reload the text index in {self._directory}", ""
            ) from err
        self._counted = textcarry.counted(
            self._main.searcher(), self._directory, tantivy.DocAddress
        )

    def count(self) -> int:
        return int(self._main.searcher().num_docs)

    def ids(self) -> dict[str, str]:
        """Every indexed record id with its blob id."""
        searcher = self._main.searcher()
        return dict(texthits.id_blob(searcher.doc(address)) for address in _every(searcher))

    def write(
        self,
        add: Sequence[TextDoc],
        delete_ids: Sequence[str],
        budget: int | None = None,
        whole: float | None = None,
    ) -> int:
        """One commit: drop `delete_ids` and every id in `add`, then add `add` (last one wins),
        carrying segments of at most `budget` (default `CARRY`) documents in all to purge deleted
        ones, or every document if the leftovers would otherwise pass `whole` (default `WHOLE`) of
        the documents tantivy counts (see Determinism). Returns how many documents it carried."""
        latest = {doc.id: doc for doc in add}
        doomed = set(delete_ids) | latest.keys()
        if not doomed:
            return 0
        # Every writer takes the source lock first, so holding it means the main index cannot
        # change under the carry computed here.
        source = _writer(self._source, self._directory, 1, 20_000_000)
        try:
            self._main.reload()
            self._source.reload()
            carry = self._carry(
                doomed, CARRY if budget is None else budget, WHOLE if whole is None else whole
            )
            threads = 2 if len(carry) + len(latest) > _BIG_BATCH else 1
            main = _writer(self._main, self._directory, threads, 40_000_000 * threads)
            with _committing(source, main):
                for ident in sorted(doomed):
                    source.delete_documents_by_term("id", ident)
                for ident in sorted(doomed | {doc.id for doc in carry}):
                    main.delete_documents_by_term("id", ident)
                for doc in carry:
                    main.add_document(_document(doc))
                for doc in latest.values():
                    fields, stored = textdoc.text_fields(doc)
                    source.add_document(tantivy.Document(id=doc.id, doc=stored))
                    main.add_document(tantivy.Document(**fields))
        finally:
            source.wait_merging_threads()
        self.reload()
        return len(carry)

    @contextlib.contextmanager
    def filling(self) -> Iterator[Callable[[Sequence[textdoc.TextFields], int], None]]:
        """Fill a new, empty index (a full build) in one commit: yields a function that adds
        documents made by `text_fields`, keyed from its second argument on (-1: no keys);
        committed when the block ends without an error."""
        source = _writer(self._source, self._directory, 1, 20_000_000)
        try:
            main = _writer(self._main, self._directory, 2, 80_000_000)

            def add(docs: Sequence[textdoc.TextFields], first_key: int) -> None:
                for n, (fields, stored) in enumerate(docs):
                    source.add_document(tantivy.Document(id=fields["id"], doc=stored))
                    if first_key >= 0:
                        fields = {**fields, **textdoc.keyed_fields(first_key + n, fields["blob"])}
                    main.add_document(tantivy.Document(**fields))

            with _committing(source, main):
                yield add
        finally:
            source.wait_merging_threads()
        self.reload()

    def search(
        self,
        query: str,
        limit: int,
        allowed: frozenset[str] | None = None,
        resolve: Callable[[list[int]], dict[int, tuple[str, str]]] | None = None,
        context: float = 0.0,
        below: int | None = None,
    ) -> list[TextHit]:
        """The best `limit` records for free text `query`, best first; any text is accepted.
        With `resolve`, hits are named by their keys, and only those it names (see Keys).
        `context`: the weight of the context field against the body's (0: not searched).
        `below`: only documents whose key is less (filtered inside tantivy; scores unchanged)."""
        if limit <= 0 or (allowed is not None and not allowed):
            return []
        counted = self._counted
        searcher = counted.searcher
        text = textdoc.clean(query)
        clauses = self._clauses(counted, text, context) if searcher.num_docs else []
        if not clauses:
            return []
        q = tantivy.Query.boolean_query([(tantivy.Occur.Should, c) for c in clauses])
        if allowed is not None and len(allowed) <= _TERM_SET_MAX:
            # A small set filters inside tantivy; a large one filters fetched hits.
            q = _within(tantivy.Query.term_set_query(self._schema, "id", sorted(allowed)), q)
            allowed = None
        if below is not None:
            keys = tantivy.Query.range_query(
                self._schema, "key", tantivy.FieldType.Integer, -1, below, False, False
            )
            q = _within(keys, q)
        try:
            if resolve is not None:
                with contextlib.suppress(texthits.Unkeyed):
                    return texthits.top(searcher, q, limit, allowed, texthits.keyed(resolve))
            return texthits.top(searcher, q, limit, allowed, texthits.stored)
        except ValueError as err:  # tantivy reads lazily: damage can surface here
            raise TextIndexCorrupt(f"cannot search {self._directory} ({err})") from err

    def ceiling(self, query: str) -> float:
        """About what a record matching every query term once would score (see
        gitmem.index.textquery.ceiling)."""
        return textquery.ceiling(self._counted, self._en, textdoc.clean(query))

    def _clauses(
        self, counted: textcarry.Counted, text: str, context: float = 0.0
    ) -> list[tantivy.Query]:
        idents, terms = textquery.query_terms(counted, self._en, text)
        weighed = [
            (name, term, textquery.boost(name, kind))
            for kind, term in terms
            for name in textquery.FIELDS_OF[kind]
        ]
        if context > 0:  # a word's BM25 in its neighbours' text, at `context` of the body's
            weighed += [
                ("context", term, context * textquery.boost("body", kind))
                for kind, term in terms
                if kind != "cjk"
            ]
        return [self._ident(counted, ident) for ident in idents] + [
            tantivy.Query.boost_query(
                tantivy.Query.term_query(self._schema, name, term, index_option="freq"), weight
            )
            for name, term, weight in weighed
        ]

    def context_scores(self, query: str, ids: Sequence[str], weight: float) -> dict[str, float]:
        """What the context field adds to each of `ids`' scores in `search(..., context=
        weight)` (for --explain): the same clauses, the record's own fields left out."""
        searcher = self._counted.searcher
        if not ids or weight <= 0 or not searcher.num_docs:
            return {}
        _, terms = textquery.query_terms(self._counted, self._en, textdoc.clean(query))
        clauses = [
            tantivy.Query.boost_query(
                tantivy.Query.term_query(self._schema, "context", term, index_option="freq"),
                weight * textquery.boost("body", kind),
            )
            for kind, term in terms
            if kind != "cjk"
        ]
        if not clauses:
            return {}
        only = tantivy.Query.term_set_query(self._schema, "id", sorted(set(ids)))
        q = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.const_score_query(only, 0.0)),
                (
                    tantivy.Occur.Must,
                    tantivy.Query.boolean_query([(tantivy.Occur.Should, c) for c in clauses]),
                ),
            ]
        )
        found = searcher.search(q, len(set(ids)), count=False).hits
        return {texthits.id_blob(searcher.doc(a))[0]: float(s) for s, a in found}

    def stored(self, ids: Iterable[str]) -> list[TextDoc]:
        """The indexed documents of `ids` as written, with their keys (those not indexed are
        left out): to write again with another context. Both halves are reloaded first (the
        caller holds the index lock): another process may have written since this one last
        looked, and documents read from an older commit would lack what it added."""
        self.reload()
        self._source.reload()
        searcher = self._main.searcher()
        return self._written(searcher, _matching(self._main, searcher, ids), set())

    def _written(
        self, searcher: tantivy.Searcher, chosen: list[tantivy.DocAddress], doomed: set[str]
    ) -> list[TextDoc]:
        source = self._source.searcher()
        match = functools.partial(_matching, self._source, source)
        return textcarry.written(searcher, chosen, doomed, (source, match), self._directory)

    def _ident(self, counted: textcarry.Counted, ident: str) -> tantivy.Query:
        term = tantivy.Query.term_query(self._schema, "ident", ident, index_option="basic")
        return tantivy.Query.const_score_query(term, textquery.ident_score(counted, ident))

    def _carry(self, doomed: set[str], budget: int, whole: float) -> list[TextDoc]:
        """Live records to rewrite so that deleted documents leave the statistics, within
        `budget`, or all of them past `whole` (gitmem.index.textcarry): found without listing
        the index."""
        searcher = self._main.searcher()
        hits = _matching(self._main, searcher, doomed)
        found = textcarry.segments(self._directory)
        losing: dict[int, int] = {}
        for address in hits:
            losing[address.segment_ord] = losing.get(address.segment_ord, 0) + 1
        chosen = textcarry.choose(found, losing, budget)
        if textcarry.past(found, losing, chosen, whole):
            chosen = [s.ord for s in found]
        if not chosen:
            return []
        match = functools.partial(_matching, self._main, searcher)
        addresses = textcarry.live(searcher, tantivy.DocAddress, found, chosen, match)
        if addresses is None:  # meta.json is not the searcher's: list the index, slow but right
            wanted = set(chosen)
            addresses = [a for a in _every(searcher) if a.segment_ord in wanted]
        return self._written(searcher, addresses, doomed)


def _schema(fields: Sequence[textdoc.Field]) -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    for name, kind, tokenizer, postings, stored in fields:
        if kind == "bytes":
            builder.add_bytes_field(name, stored=stored)
        elif kind == "i64":
            builder.add_integer_field(name, stored=stored, indexed=False, fast=True)
        else:
            builder.add_text_field(
                name, stored=stored, tokenizer_name=tokenizer, index_option=postings
            )
    return builder.build()


def _open(directory: Path, fields: Sequence[textdoc.Field]) -> tantivy.Index:
    if textdoc.schema_fields(directory) != list(fields):
        raise TextIndexCorrupt(f"text index in {directory} has another schema")
    try:
        return tantivy.Index.open(str(directory))
    except ValueError as err:
        raise TextIndexCorrupt(f"text index in {directory} is damaged ({err})") from err


def _english() -> tantivy.TextAnalyzer:
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    for step in (
        tantivy.Filter.remove_long(100),
        tantivy.Filter.lowercase(),
        tantivy.Filter.stopword("english"),
        tantivy.Filter.ascii_fold(),
        tantivy.Filter.stemmer("english"),
    ):
        builder = builder.filter(step)
    return builder.build()


@contextlib.contextmanager
def _committing(source: tantivy.IndexWriter, main: tantivy.IndexWriter) -> Iterator[None]:
    """Commit both writers, the source index first, if the block succeeds; roll both back if
    not. Either way the main writer's merges finish, which releases its lock."""
    try:
        yield
        source.commit()
        main.commit()
    except BaseException:
        for writer in (source, main):
            with contextlib.suppress(ValueError):
                writer.rollback()
        raise
    finally:
        main.wait_merging_threads()


def _writer(index: tantivy.Index, directory: Path, threads: int, heap: int) -> tantivy.IndexWriter:
    deadline = time.monotonic() + _LOCK_WAIT
    while True:
        try:
            return index.writer(heap_size=heap, num_threads=threads)
        except ValueError as err:
            if "LockBusy" not in str(err):
                raise TextIndexCorrupt(f"cannot write to {directory}: {err}") from err
            if time.monotonic() > deadline:
                raise TextIndexBusy(
                    f"text index in {directory} is being written by another process;"
                    " retry when it is done"
                ) from err
            time.sleep(0.05)


def _within(only: tantivy.Query, q: tantivy.Query) -> tantivy.Query:
    """`q`, its hits limited to those of `only` (a filter: scored 0, so scores are `q`'s)."""
    must = tantivy.Occur.Must
    return tantivy.Query.boolean_query(
        [(must, tantivy.Query.const_score_query(only, 0.0)), (must, q)]
    )


def _every(searcher: tantivy.Searcher) -> list[tantivy.DocAddress]:
    total = searcher.num_docs
    if not total:
        return []
    return [a for _, a in searcher.search(tantivy.Query.all_query(), total, count=False).hits]


def _matching(
    index: tantivy.Index, searcher: tantivy.Searcher, ids: Iterable[str]
) -> list[tantivy.DocAddress]:
    """Addresses of the live documents whose id is one of `ids`."""
    terms = sorted(ids)
    if not terms or not searcher.num_docs:
        return []
    query = tantivy.Query.term_set_query(index.schema, "id", terms)
    limit = min(len(terms), searcher.num_docs)
    return [a for _, a in searcher.search(query, limit, count=False).hits]


def _document(doc: TextDoc) -> tantivy.Document:
    return tantivy.Document(**textdoc.text_fields(doc)[0])
