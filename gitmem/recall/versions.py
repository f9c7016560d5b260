"""The versions the time-travel cache keeps: each blob a record file ever held, parsed once
into a row of its `versions` table and the document its vectors are made of.

What a view of the past indexes a version from (`Made`: its record and the fields of its
keyword document, without context) is made by the first view that needs it, in any process,
and kept in the cache pickled and compressed (~0.8 KB), so that a later view reads it
(~0.1 ms a version) instead of parsing the blob and making the fields again (~1 ms). Made at
the build instead, for every version, it doubled the build's cost for versions no view may
ever ask for. The fields depend on the blob alone (its text and the keyword schema's
analysis, which `gitmem.index.textdoc` versions by name: the cache's `made` table is stamped
with MADE_VERSION, which names it, and emptied when that differs)."""

from __future__ import annotations

import hashlib
import json
import pickle
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitmem.errors import RecordInvalid
from gitmem.index.build import IndexDoc, text_doc
from gitmem.index.entries import entry_row
from gitmem.index.textdoc import EN, WORDS, TextFields, text_fields
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.git import GitRepo
    from gitmem.store.record import Record

__all__ = ["COLUMNS", "MADE_VERSION", "Made", "make", "pack", "parse_versions", "unpack"]

COLUMNS = 16  # of a row: the catalog's Entry, then ok, the frontmatter, a hash of the body
Made = tuple["Record", TextFields]  # a version's record and its keyword document's fields
# What kept Made were made with: the keyword analysis (textdoc's tokenizers' names) and this
# module's way of making them. A cache whose `made` table has another is emptied of it.
MADE_VERSION = f"1 {EN} {WORDS}"


def parse_versions(
    repo: GitRepo, blobs: Sequence[str]
) -> tuple[list[tuple[object, ...]], list[IndexDoc]]:
    """A row per blob (an invalid one is kept, marked not ok, so it is never parsed again) and
    a document per valid one."""
    rows: list[tuple[object, ...]] = []
    docs: list[IndexDoc] = []
    for blob in blobs:
        try:
            record = parse(repo.blob(blob).decode("utf-8"))
        except (UnicodeDecodeError, RecordInvalid):
            rows.append(("", "", blob, "", "", "", "", "", "", "", 0, 0, 0.0, 0, "{}", ""))
            continue
        data = record.to_dict()
        body = hashlib.sha1(data.pop("body").encode("utf-8")).hexdigest()
        # The catalog's columns first, so that rows read back as the same Entry tuples.
        rows.append((*entry_row(record, record.path, blob), 1, json.dumps(data), body))
        # The version vectors know a version by its blob id, never by its record id.
        docs.append(IndexDoc(record.with_(id=blob), record.path, blob))
    return rows, docs


def make(repo: GitRepo, blob: str) -> Made:
    """The Made of a valid version (one the cache's versions table marks ok)."""
    record = parse(repo.blob(blob).decode("utf-8"))
    return record, text_fields(text_doc(IndexDoc(record, record.path, blob)))


def pack(made: Made) -> bytes:
    return zlib.compress(pickle.dumps(made, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack(blob: str, packed: bytes) -> Made | None:
    """The Made kept of `blob`; None for a damaged row or one of another blob (made again)."""
    # Unpickled: the bytes are this cache's own, written by `pack` (as context.py's spill).
    try:
        found = pickle.loads(zlib.decompress(packed))
        ok = found[1][0]["blob"] == blob
    except Exception:  # damaged bytes raise whatever unpickling meets
        return None
    return found if ok else None
