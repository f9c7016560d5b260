"""What the keyword index holds, in plain Python: its documents, their fields and the text
analysis gitmem does itself (gitmem.index.textindex, the one tantivy module, stores and searches
them). Kept apart so that a process that only makes documents (an index build's workers) and
the tests can reason about fields without tantivy's types.

Tokens: tantivy's `en_stem` pipeline plus ASCII folding and Lucene's 33 English stop words
(gitmem.index.textindex). Two fields, made here by the same code for records and queries, keep
what word splitting loses. `ident` holds identifiers whole (`PAY-1423`, `src/api/webhooks.go`
and `webhooks.go`, `DATABASE_URL`, `E11000`, `v2.3.1`) and scores as BM25 of a yes/no field.
`cjk` holds unigrams and bigrams of Han, kana and Hangul runs, which the word tokenizer keeps as
one token.

Keys: each document may carry its record version's key in the catalog (`TextDoc.key`) and a
fingerprint of its blob (`fingerprint`), in columns tantivy reads without the document store.
A search given `resolve` (the catalog's key -> (id, blob) of the versions it admits) names its
hits from those: fetching a stored document costs ~15 us (its block is decompressed) and a
search fetches 116 of them, ~2 ms of every recall at 100k records. A hit whose key the catalog
does not admit, or whose blob is not the one the catalog has for that key (keys are unique
within one catalog only: a rebuild by another process swaps in a catalog whose keys start
again), is left out, like one the `allowed` ids leave out. An index with a document that has
no key answers as without `resolve`.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gitmem.errors import GitmemError

__all__ = [
    "EN",
    "MAIN_FIELDS",
    "SOURCE_FIELDS",
    "TEXT",
    "WORDS",
    "Field",
    "TextDoc",
    "TextFields",
    "TextHit",
    "TextIndexBusy",
    "TextIndexCorrupt",
    "cjk_grams",
    "clean",
    "fingerprint",
    "from_source",
    "identifiers",
    "keyed_fields",
    "schema_fields",
    "text_fields",
    "unique",
    "with_context",
    "with_parts",
]

# Bump the number in these names whenever tokenisation or a derived field changes: an index
# built the old way then fails the schema check and is rebuilt.
EN = "gitmem1_en"
WORDS = "gitmem1_words"
TEXT = ("title", "abstract", "tags", "body")
Field = tuple[str, str, str, str, bool]  # name, type, tokenizer, postings, stored
TextFields = tuple[dict[str, Any], bytes]  # a searched document's fields, the stored source
MAIN_FIELDS: tuple[Field, ...] = (
    ("id", "text", "raw", "basic", True),
    ("blob", "text", "raw", "basic", True),
    *((name, "text", EN, "freq", False) for name in TEXT),
    ("ident", "text", WORDS, "basic", False),
    ("cjk", "text", WORDS, "freq", False),
    ("context", "text", EN, "freq", False),  # the neighbours' text (gitmem.index.neighbours)
    ("key", "i64", "", "", False),  # columns (fast fields): see Keys above
    ("print", "i64", "", "", False),
)
SOURCE_FIELDS: tuple[Field, ...] = (
    ("id", "text", "raw", "basic", False),
    ("doc", "bytes", "", "", True),
)
_MAX_IDENT_LEN = 128
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
    context: str = ""  # what its neighbours lend it (gitmem.index.neighbours), searched apart


@dataclass(frozen=True)
class TextHit:
    """A match: the record id, the blob it was indexed from (or, named by its key, the key
    and no blob), and its BM25 score."""

    id: str
    blob: str
    score: float
    key: int = -1


def text_fields(doc: TextDoc) -> TextFields:
    """A record's keyword documents as plain values (so another process can make them): the
    searched document's fields, and what the source index stores."""
    doc = _cleaned(doc)
    fields: dict[str, Any] = {"id": doc.id, "blob": doc.blob, "title": doc.title}
    if doc.key >= 0:
        fields.update(keyed_fields(doc.key, doc.blob))
    fields.update(abstract=doc.abstract, body=doc.body, tags=list(doc.tags))
    text = "\n".join((doc.title, doc.abstract, *doc.tags, doc.body))
    idents = unique(with_parts(identifiers(text)))
    if idents:
        fields["ident"] = " ".join(idents)
    grams = cjk_grams(text, query=False)
    if grams:
        fields["cjk"] = " ".join(grams)
    if doc.context:
        fields["context"] = doc.context
    data = [doc.id, doc.blob, doc.title, doc.abstract, doc.body, list(doc.tags), doc.type]
    if doc.context:
        data.append(doc.context)
    return fields, json.dumps(data, ensure_ascii=False).encode()


def with_context(made: TextFields, context: str) -> TextFields:
    """`made` (from `text_fields` of a document without context) with `context` added, as
    `text_fields` of the document with it would be: a full build's workers make documents
    before the neighbours are known."""
    if not context:
        return made
    fields, stored = made
    context = clean(context)
    # `stored` is json.dumps of a list, so it ends in "]" and its items are joined by ", ":
    # the context goes in as one more item, without parsing and encoding the body again (a
    # full build does this for every record, in its one process).
    more = b", " + json.dumps(context, ensure_ascii=False).encode() + b"]"
    return {**fields, "context": context}, stored[:-1] + more


def from_source(data: str | bytes) -> TextDoc:
    """A record as the source index stores it (the second half of `text_fields`)."""
    ident, blob, title, abstract, body, tags, kind, *context = json.loads(data)
    return TextDoc(ident, blob, title, abstract, body, tuple(tags), kind, -1, "".join(context))


def fingerprint(blob: str) -> int:
    """60 bits of a git blob id (its first 15 hex digits); of any other text, its CRC-32."""
    try:
        return int(blob[:15], 16)
    except ValueError:
        return zlib.crc32(blob.encode())


def keyed_fields(key: int, blob: str) -> dict[str, int]:
    return {"key": key, "print": fingerprint(blob)}


def identifiers(text: str) -> list[str]:
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


def with_parts(chunks: list[str]) -> list[str]:
    """The chunks, and the identifier-like parts of the paths among them (`webhooks.go`)."""
    found = []
    for chunk in chunks:
        found.append(chunk)
        if "/" in chunk:
            found.extend(part for part in chunk.split("/") if _IDENT.search(part))
    return found


def cjk_grams(text: str, *, query: bool) -> list[str]:
    """Bigrams of each CJK run; records also get unigrams, which a one-character query uses."""
    grams: list[str] = []
    # Compiled on first use, not at import: ~5 ms (its ranges), and most text is ASCII.
    for run in [] if text.isascii() else re.findall(_CJK, text):
        if not query or len(run) == 1:
            grams.extend(run)
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def clean(text: str) -> str:
    """Text tantivy accepts: lone surrogates (which UTF-8 cannot hold) become "?"."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _cleaned(doc: TextDoc) -> TextDoc:
    title, abstract, body, kind = map(clean, (doc.title, doc.abstract, doc.body, doc.type))
    tags, context = tuple(map(clean, doc.tags)), clean(doc.context)
    return replace(
        doc, title=title, abstract=abstract, body=body, tags=tags, type=kind, context=context
    )


def unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def schema_fields(directory: Path) -> list[Field]:
    """The fields of the tantivy index in `directory`, as its meta.json lists them."""
    try:
        meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        return [_shape(field) for field in meta["schema"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise TextIndexCorrupt(f"no readable text index in {directory} ({err})") from err


def _shape(field: dict[str, Any]) -> Field:
    options = field["options"]
    indexing = options.get("indexing") or {}
    name, kind, stored = field["name"], field["type"], options["stored"]
    return name, kind, indexing.get("tokenizer", ""), indexing.get("record", ""), stored
