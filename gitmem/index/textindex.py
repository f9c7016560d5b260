"""The keyword half of recall: a tantivy BM25 index over records, kept as a disposable cache.

The only gitmem module that imports tantivy. Git is the truth: any unreadable or foreign
directory is `TextIndexCorrupt`, and the caller rebuilds it.

Tokens: tantivy's `en_stem` pipeline plus ASCII folding and Lucene's 33 English stop words.
Queries never reach tantivy's parser; the index's own analyzer turns them into term queries, so
`AND`, `field:value`, `-x` or quotes are plain text. Two fields, made in Python by the same code
for records and queries, keep what word splitting loses. `ident` holds identifiers whole
(`PAY-1423`, `src/api/webhooks.go` and `webhooks.go`, `DATABASE_URL`, `E11000`, `v2.3.1`) and
scores as BM25 of a yes/no field; a word a query has only inside an identifier weighs a quarter,
so the record with the exact identifier ranks first. `cjk` holds unigrams and bigrams of Han,
kana and Hangul runs, which the word tokenizer keeps as one token. A long prompt keeps
`_MAX_TERMS` terms: identifiers, then the rarest words.

Determinism: tantivy sums BM25 statistics over all segments, so how records fell into segments
changes no score, and equal scores go by id (while the tie fits in `_MAX_FETCH` hits). Deleted
documents are the catch: tantivy counts them until a merge, which tantivy-py cannot request. So
`write` purges them, rewriting in the same commit each segment that loses a document (survivors
deleted and added again; an emptied segment is dropped), and the index stays equal, score for
score, to a rebuild. Survivors' text comes from `source/`, an index that only stores records, so
hits stay cheap to fetch. A rewrite of more than `_MAX_CARRY` records (an edit in a big old
segment) is put off until such leftovers pass `_MAX_GHOSTS` of the index, which is then rewritten
whole (a full build's time); until then scores drift from a rebuild (rare terms' idf by a few
percent, so near-equal neighbours swap). Scores are float32 sums; tests find them bit-identical,
but tantivy's top-k pruning may add terms in another order, so count on ~1e-7.

Concurrency: commits appear atomically (tantivy swaps meta.json) to readers that `reload`. A
second writer waits `_LOCK_WAIT` seconds for tantivy's lock, then raises `TextIndexBusy`. The
source index commits first and is trusted only where its blob matches the searched index.

Keys: each document may carry its record version's key in the catalog (`TextDoc.key`) and
a fingerprint of its blob (`_fingerprint`), in columns tantivy reads without the document
store. A search given `resolve` (the catalog's key -> (id, blob) of the versions it admits)
names its hits from those: fetching a stored document costs ~15 us (its block is
decompressed) and a search fetches 116 of them, ~2 ms of every recall at 100k records. A
hit whose key the catalog does not admit, or whose blob is not the one the catalog has for
that key (keys are unique within one catalog only: a rebuild by another process swaps in a
catalog whose keys start again), is left out, like one the `allowed` ids leave out. An
index with a document that has no key answers as without `resolve`.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tantivy

from gitmem.errors import GitmemError

__all__ = [
    "TextDoc",
    "TextFields",
    "TextHit",
    "TextIndex",
    "TextIndexBusy",
    "TextIndexCorrupt",
    "text_fields",
]

# Bump the number in these names whenever tokenisation or a derived field changes: an index
# built the old way then fails the schema check and is rebuilt.
_EN = "gitmem1_en"
_WORDS = "gitmem1_words"
_TEXT = ("title", "abstract", "tags", "body")
_Field = tuple[str, str, str, str, bool]  # name, type, tokenizer, postings, stored
TextFields = tuple[dict[str, Any], bytes]  # a searched document's fields, the stored source
_MAIN: tuple[_Field, ...] = (
    ("id", "text", "raw", "basic", True),
    ("blob", "text", "raw", "basic", True),
    *((name, "text", _EN, "freq", False) for name in _TEXT),
    ("ident", "text", _WORDS, "basic", False),
    ("cjk", "text", _WORDS, "freq", False),
    ("key", "i64", "", "", False),  # columns (fast fields): see Keys above
    ("print", "i64", "", "", False),
)
_SOURCE = (("id", "text", "raw", "basic", False), ("doc", "bytes", "", "", True))
_BOOST = {"title": 3.0, "abstract": 2.0, "tags": 2.0, "body": 1.0, "cjk": 1.0}
_IDENT_BOOST = 3.0
_PIECE = 0.25
_FIELDS_OF = {"word": _TEXT, "piece": _TEXT, "cjk": ("cjk",)}  # the largest field last
_MAX_TERMS = 64
_MAX_IDENTS = 16
_MAX_IDENT_LEN = 128
_TIE_PAD = 16  # hits fetched beyond `limit`, so that equal scores at the cut go by id
_MAX_FETCH = 1024
_TERM_SET_MAX = 3000  # `allowed` sets up to this size filter inside tantivy, larger ones after
_MAX_CARRY = 2000
_MAX_GHOSTS = 0.01
_LOCK_WAIT = 2.0
_BIG_BATCH = 5000  # a write adding more documents gets a second indexing thread
_FIX = "delete the directory and rebuild the index from the store"

_TRIM = "._/:@#+-"
_CHUNK = re.compile(r"[\w./:@#+-]+")  # a run that may be an identifier
_IDENT = re.compile(r"[^\W_][._/:@#+-]+[^\W_]|[^\W\d_]\d|\d[^\W\d_]")  # what makes it one
_CJK = (
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    "\uff66-\uff9f\U00020000-\U0003134f]+"
)


class TextIndexCorrupt(GitmemError):
    """The text index directory is missing, unreadable or of another schema: rebuild it.
    `reason` is what is wrong without the fix, for a caller that rebuilds by itself."""

    def __init__(self, reason: str, fix: str = _FIX) -> None:
        super().__init__(f"{reason}; {fix}" if fix else reason)
        self.reason = reason


class TextIndexBusy(GitmemError):
    """Another writer holds the text index lock."""


@dataclass(frozen=True)
class TextDoc:
    """One record version as the keyword index sees it."""

    id: str
    blob: str
    title: str
    abstract: str
    body: str
    tags: tuple[str, ...]
    type: str
    key: int = -1  # the version's key in the catalog; -1: none


@dataclass(frozen=True)
class TextHit:
    """A match: the record id, the blob it was indexed from (or, named by its key, the key
    and no blob), and its BM25 score."""

    id: str
    blob: str
    score: float
    key: int = -1


class TextIndex:
    """A keyword index in one directory. Searches see the state of the last `reload`."""

    def __init__(self, directory: Path, main: tantivy.Index, source: tantivy.Index) -> None:
        self._directory = directory
        self._main = main
        self._source = source
        self._schema = main.schema
        self._en = _english()
        main.register_tokenizer(_EN, self._en)
        words = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build()
        main.register_tokenizer(_WORDS, words)
        main.config_reader("manual")
        source.config_reader("manual")

    @classmethod
    def create(cls, directory: Path) -> TextIndex:
        """A new, empty index in `directory`, which must exist and be empty."""
        if any(directory.iterdir()):
            raise FileExistsError(f"{directory} is not empty; a text index needs its own dir")
        (directory / "source").mkdir()
        main = tantivy.Index(_schema(_MAIN), path=str(directory), reuse=False)
        source = tantivy.Index(_schema(_SOURCE), path=str(directory / "source"), reuse=False)
        return cls(directory, main, source)

    @classmethod
    def open(cls, directory: Path) -> TextIndex:
        """Open an index made by `create`; `TextIndexCorrupt` if that is not what is there."""
        return cls(directory, _open(directory, _MAIN), _open(directory / "source", _SOURCE))

    def reload(self) -> None:
        """Make searches see the latest commit, including one made by another process."""
        try:
            self._main.reload()
        except ValueError as err:
            raise TextIndexCorrupt(
                f"cannot reload the text index in {self._directory}", ""
            ) from err

    def count(self) -> int:
        return int(self._main.searcher().num_docs)

    def ids(self) -> dict[str, str]:
        """Every indexed record id with its blob id."""
        searcher = self._main.searcher()
        return dict(_id_blob(searcher.doc(address)) for address in _every(searcher))

    def write(self, add: Sequence[TextDoc], delete_ids: Sequence[str]) -> None:
        """One commit: drop `delete_ids` and every id in `add`, then add `add` (last one wins)."""
        latest = {doc.id: doc for doc in add}
        doomed = set(delete_ids) | latest.keys()
        if not doomed:
            return
        # Every writer takes the source lock first, so holding it means the main index cannot
        # change under the carry computed here.
        source = _writer(self._source, self._directory, 1, 20_000_000)
        try:
            self._main.reload()
            self._source.reload()
            carry = self._carry(doomed)
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
                    fields, stored = text_fields(doc)
                    source.add_document(tantivy.Document(id=doc.id, doc=stored))
                    main.add_document(tantivy.Document(**fields))
        finally:
            source.wait_merging_threads()
        self.reload()

    @contextlib.contextmanager
    def filling(self) -> Iterator[Callable[[Sequence[TextFields], int], None]]:
        """Fill a new, empty index (a full build) in one commit: yields a function that adds
        documents made by `text_fields`, keyed from its second argument on (-1: no keys);
        committed when the block ends without an error."""
        source = _writer(self._source, self._directory, 1, 20_000_000)
        try:
            main = _writer(self._main, self._directory, 2, 80_000_000)

            def add(docs: Sequence[TextFields], first_key: int) -> None:
                for n, (fields, stored) in enumerate(docs):
                    source.add_document(tantivy.Document(id=fields["id"], doc=stored))
                    if first_key >= 0:
                        fields = {**fields, **_keyed_fields(first_key + n, fields["blob"])}
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
    ) -> list[TextHit]:
        """The best `limit` records for free text `query`, best first; any text is accepted.
        With `resolve`, hits are named by their keys, and only those it names (see Keys)."""
        if limit <= 0 or (allowed is not None and not allowed):
            return []
        searcher = self._main.searcher()
        clauses = self._clauses(searcher, _clean(query)) if searcher.num_docs else []
        if not clauses:
            return []
        q = tantivy.Query.boolean_query([(tantivy.Occur.Should, c) for c in clauses])
        if allowed is not None and len(allowed) <= _TERM_SET_MAX:
            # A small set filters inside tantivy; a large one filters fetched hits.
            only = tantivy.Query.term_set_query(self._schema, "id", sorted(allowed))
            must = tantivy.Occur.Must
            q = tantivy.Query.boolean_query(
                [(must, tantivy.Query.const_score_query(only, 0.0)), (must, q)]
            )
            allowed = None
        try:
            if resolve is not None:
                with contextlib.suppress(_Unkeyed):
                    return _top(searcher, q, limit, allowed, _keyed(resolve))
            return _top(searcher, q, limit, allowed, _stored)
        except ValueError as err:  # tantivy reads lazily: damage can surface here
            raise TextIndexCorrupt(f"cannot search {self._directory} ({err})") from err

    def ceiling(self, query: str) -> float:
        """About what a record matching every query term once, each in its best field, would
        score: a yardstick that makes BM25 scores comparable across queries (recall uses it to
        tell a strong keyword match from a weak one). Terms no record holds are left out."""
        searcher = self._main.searcher()
        n = searcher.num_docs
        if not n:
            return 0.0
        idents, terms = self._terms(searcher, _clean(query))
        total = 0.0
        for ident in idents:
            total += _IDENT_BOOST * _idf(searcher.doc_freq("ident", ident), n)
        for kind, term in terms:
            scale = _PIECE if kind == "piece" else 1.0
            total += max(
                (
                    _BOOST[name] * scale * _idf(df, n)
                    for name in _FIELDS_OF[kind]
                    if (df := searcher.doc_freq(name, term))
                ),
                default=0.0,
            )
        return total

    def _terms(
        self, searcher: tantivy.Searcher, text: str
    ) -> tuple[list[str], list[tuple[str, str]]]:
        """The identifiers and (kind, term) pairs a query searches for, capped."""
        chunks = _identifiers(text)
        idents = _unique(_with_parts(chunks))
        if len(idents) > _MAX_IDENTS:
            rarity = sorted((searcher.doc_freq("ident", t), t) for t in idents)
            idents = [t for df, t in rarity if df][:_MAX_IDENTS]
        # A word the query only has inside an identifier is a fallback, not the intent.
        inside = Counter(self._en.analyze(" ".join(chunks)))
        words = Counter(self._en.analyze(text))
        terms = [("piece" if inside[w] >= n else "word", w) for w, n in words.items()]
        terms += [("cjk", t) for t in _unique(_cjk_grams(text, query=True))]
        if len(idents) + len(terms) > _MAX_TERMS:
            ranked = sorted((_doc_freq(searcher, kind, t), kind, t) for kind, t in terms)
            terms = [(kind, t) for df, kind, t in ranked if df]
        return idents, terms[: _MAX_TERMS - len(idents)]

    def _clauses(self, searcher: tantivy.Searcher, text: str) -> list[tantivy.Query]:
        idents, terms = self._terms(searcher, text)
        return [self._ident(searcher, ident) for ident in idents] + [
            tantivy.Query.boost_query(
                tantivy.Query.term_query(self._schema, name, term, index_option="freq"),
                _BOOST[name] * (_PIECE if kind == "piece" else 1.0),
            )
            for kind, term in terms
            for name in _FIELDS_OF[kind]
        ]

    def _ident(self, searcher: tantivy.Searcher, ident: str) -> tantivy.Query:
        """BM25 of a yes/no field, i.e. idf alone: holding many identifiers costs nothing."""
        df, n = searcher.doc_freq("ident", ident), searcher.num_docs
        term = tantivy.Query.term_query(self._schema, "ident", ident, index_option="basic")
        return tantivy.Query.const_score_query(term, _IDENT_BOOST * _idf(df, n))

    def _carry(self, doomed: set[str]) -> list[TextDoc]:
        """Live records to rewrite so that no deleted document stays in the statistics."""
        searcher = self._main.searcher()
        hits = _matching(self._main, searcher, doomed)
        if not hits:
            return []
        every = _every(searcher)
        segments = {address.segment_ord for address in hits}
        chosen = [a for a in every if a.segment_ord in segments]
        if len(chosen) - len(hits) > _MAX_CARRY:
            live = len(every) - len(hits)
            if _ghosts(self._directory) + len(hits) <= _MAX_GHOSTS * live:
                return []
            chosen = every
        named = [_id_blob(searcher.doc(address)) for address in chosen]
        blobs = {i: b for i, b in named if i not in doomed}
        marks = _keys(searcher, chosen)
        keys = {n: -1 if m is None else m[0] for n, m in zip(named, marks, strict=True)}
        source = self._source.searcher()
        try:
            found = [_from_source(source.doc(a)) for a in _matching(self._source, source, blobs)]
        except (ValueError, TypeError) as err:
            raise TextIndexCorrupt(
                f"text index in {self._directory} is damaged: {err}", ""
            ) from err
        # A carried document keeps its key: the source stores none, the searched index has it.
        docs = [
            replace(doc, key=keys.get((doc.id, doc.blob), -1))
            for doc in found
            if blobs.get(doc.id) == doc.blob
        ]
        if len(docs) != len(blobs):
            raise TextIndexCorrupt(f"text index in {self._directory} lost records' text")
        return docs


def _schema(fields: Sequence[_Field]) -> tantivy.Schema:
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


def _open(directory: Path, fields: Sequence[_Field]) -> tantivy.Index:
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        found = [_shape(field) for field in meta["schema"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise TextIndexCorrupt(f"no readable text index in {directory} ({err})") from err
    if found != list(fields):
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


def _idf(df: int, n: int) -> float:
    """BM25's inverse document frequency, as tantivy computes it."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _doc_freq(searcher: tantivy.Searcher, kind: str, term: str) -> int:
    """Rarity for the term cap: the body's count, else the other fields' (a lookup each)."""
    *others, main = _FIELDS_OF[kind]
    return int(searcher.doc_freq(main, term)) or sum(searcher.doc_freq(f, term) for f in others)


class _Unkeyed(Exception):
    """A document without a key: the search names its hits from the stored documents."""


# What names a search's hits: for each address, (id, blob, key), or None to leave it out.
_Namer = Callable[[tantivy.Searcher, list[tantivy.DocAddress]], list[tuple[str, str, int] | None]]


def _stored(searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]) -> list[Any]:
    return [(*_id_blob(searcher.doc(address)), -1) for address in addresses]


def _keyed(resolve: Callable[[list[int]], dict[int, tuple[str, str]]]) -> _Namer:
    def name(searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]) -> list[Any]:
        marks = [mark for mark in _keys(searcher, addresses) if mark is not None]
        if len(marks) < len(addresses):
            raise _Unkeyed
        found = resolve([key for key, _ in marks]) if marks else {}
        return [
            None
            if (known := found.get(key)) is None or _fingerprint(known[1]) != mark
            else (known[0], "", key)
            for key, mark in marks
        ]

    return name


def _keys(
    searcher: tantivy.Searcher, addresses: list[tantivy.DocAddress]
) -> list[tuple[int, int] | None]:
    """Each document's (key, blob fingerprint), None where it has none."""
    if not addresses:
        return []
    keys = searcher.fast_field_values("key", addresses)
    prints = searcher.fast_field_values("print", addresses)
    return [
        None if key is None or mark is None else (int(key), int(mark))
        for key, mark in zip(keys, prints, strict=True)
    ]


def _fingerprint(blob: str) -> int:
    """60 bits of a git blob id (its first 15 hex digits); of any other text, its CRC-32."""
    try:
        return int(blob[:15], 16)
    except ValueError:
        return zlib.crc32(blob.encode())


def _keyed_fields(key: int, blob: str) -> dict[str, int]:
    return {"key": key, "print": _fingerprint(blob)}


def _top(
    searcher: tantivy.Searcher,
    query: tantivy.Query,
    limit: int,
    allowed: frozenset[str] | None,
    name: _Namer,
) -> list[TextHit]:
    """Top `limit` by (score desc, id): fetch more hits while `allowed` (or `name`) rejects
    too many, or while hits tie with the last one kept (up to `_MAX_FETCH`)."""
    total = searcher.num_docs
    want = limit + _TIE_PAD
    if allowed is not None:  # about enough hits to find `want` allowed ones
        want = want * total // len(allowed) + want
    want = min(want, total)
    seen: dict[tuple[int, int], tuple[str, str, int] | None] = {}
    while True:
        hits = searcher.search(query, want, count=False).hits
        fresh = [a for _, a in hits if (a.segment_ord, a.doc) not in seen]
        named = name(searcher, fresh)
        seen.update(zip([(a.segment_ord, a.doc) for a in fresh], named, strict=True))
        rows = []
        for score, address in hits:
            hit = seen[(address.segment_ord, address.doc)]
            if hit is not None and (allowed is None or hit[0] in allowed):
                rows.append(TextHit(hit[0], hit[1], float(score), hit[2]))
        rows.sort(key=lambda hit: (-hit.score, hit.id))
        if len(hits) < want or want >= total:
            return rows[:limit]
        if len(rows) >= limit and (rows[limit - 1].score > hits[-1][0] or want >= _MAX_FETCH):
            return rows[:limit]
        want = min(want * 4, total)


def text_fields(doc: TextDoc) -> TextFields:
    """A record's keyword documents as plain values (so another process can make them): the
    searched document's fields, and what the source index stores."""
    doc = _cleaned(doc)
    fields: dict[str, Any] = {"id": doc.id, "blob": doc.blob, "title": doc.title}
    if doc.key >= 0:
        fields.update(_keyed_fields(doc.key, doc.blob))
    fields.update(abstract=doc.abstract, body=doc.body, tags=list(doc.tags))
    text = "\n".join((doc.title, doc.abstract, *doc.tags, doc.body))
    idents = _unique(_with_parts(_identifiers(text)))
    if idents:
        fields["ident"] = " ".join(idents)
    grams = _cjk_grams(text, query=False)
    if grams:
        fields["cjk"] = " ".join(grams)
    data = [doc.id, doc.blob, doc.title, doc.abstract, doc.body, list(doc.tags), doc.type]
    return fields, json.dumps(data, ensure_ascii=False).encode()


def _document(doc: TextDoc) -> tantivy.Document:
    return tantivy.Document(**text_fields(doc)[0])


def _from_source(stored: tantivy.Document) -> TextDoc:
    ident, blob, title, abstract, body, tags, kind = json.loads(stored.get_first("doc") or "")
    return TextDoc(ident, blob, title, abstract, body, tuple(tags), kind)


def _id_blob(doc: tantivy.Document) -> tuple[str, str]:
    return str(doc.get_first("id")), str(doc.get_first("blob"))


def _identifiers(text: str) -> list[str]:
    """Identifier-like chunks of `text`, lowercased."""
    found = []
    for token in text.split():
        if token.isalpha():  # most words: the fast way out
            continue
        for chunk in _CHUNK.findall(token):
            chunk = chunk.strip(_TRIM).lower()
            if len(chunk) <= _MAX_IDENT_LEN and _IDENT.search(chunk):
                found.append(chunk)
    return found


def _with_parts(chunks: list[str]) -> list[str]:
    """The chunks, and the identifier-like parts of the paths among them (`webhooks.go`)."""
    found = []
    for chunk in chunks:
        found.append(chunk)
        if "/" in chunk:
            found.extend(part for part in chunk.split("/") if _IDENT.search(part))
    return found


def _cjk_grams(text: str, *, query: bool) -> list[str]:
    """Bigrams of each CJK run; records also get unigrams, which a one-character query uses."""
    grams: list[str] = []
    # Compiled on first use, not at import: ~5 ms (its ranges), and most text is ASCII.
    for run in [] if text.isascii() else re.findall(_CJK, text):
        if not query or len(run) == 1:
            grams.extend(run)
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def _clean(text: str) -> str:
    """Text tantivy accepts: lone surrogates (which UTF-8 cannot hold) become "?"."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _cleaned(doc: TextDoc) -> TextDoc:
    title, abstract, body, kind = map(_clean, (doc.title, doc.abstract, doc.body, doc.type))
    tags = tuple(map(_clean, doc.tags))
    return replace(doc, title=title, abstract=abstract, body=body, tags=tags, type=kind)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _shape(field: dict[str, Any]) -> _Field:
    options = field["options"]
    indexing = options.get("indexing") or {}
    name, kind, stored = field["name"], field["type"], options["stored"]
    return name, kind, indexing.get("tokenizer", ""), indexing.get("record", ""), stored


def _ghosts(directory: Path) -> int:
    """Deleted documents that tantivy still counts (its own bookkeeping in meta.json)."""
    meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
    return sum((s.get("deletes") or {}).get("num_deleted_docs", 0) for s in meta["segments"])
