"""The versions the time-travel cache keeps: each blob a record file ever held, parsed once
into a row of its `versions` table and the document its vectors are made of.

A row also keeps what a view of the past indexes the version from (`Made`: its record and
the fields of its keyword document, without context), pickled and compressed, so that a view
made in any later process reads them (~0.1 ms a version) instead of parsing the blob and
making the fields again (~1 ms). The fields depend on the blob alone (its text and the
keyword schema's analysis, which `gitmem.index.textdoc` versions by name: a change there
changes SCHEMA_VERSION of the timeline too)."""

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
from gitmem.index.textdoc import TextFields, text_fields
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.git import GitRepo
    from gitmem.store.record import Record

__all__ = ["COLUMNS", "Made", "made", "parse_versions"]

# Of a row: the catalog's Entry, then ok, the frontmatter, a hash of the body, the Made.
COLUMNS = 17
Made = tuple["Record", TextFields]  # a version's record and its keyword document's fields


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
            rows.append(("", "", blob, "", "", "", "", "", "", "", 0, 0, 0.0, 0, "{}", "", None))
            continue
        data = record.to_dict()
        body = hashlib.sha1(data.pop("body").encode("utf-8")).hexdigest()
        doc = IndexDoc(record, record.path, blob)
        kept = (record, text_fields(text_doc(doc)))
        # The catalog's columns first, so that rows read back as the same Entry tuples.
        rows.append(
            (*entry_row(record, record.path, blob), 1, json.dumps(data), body, _packed(kept))
        )
        # The version vectors know a version by its blob id, never by its record id.
        docs.append(IndexDoc(record.with_(id=blob), record.path, blob))
    return rows, docs


def made(packed: bytes) -> Made:
    """A version's `Made`, as `parse_versions` kept it (the cache's own bytes)."""
    # Unpickled: the bytes are this cache's own, written by _packed (as context.py's spill).
    found: Made = pickle.loads(zlib.decompress(packed))
    return found


def _packed(kept: Made) -> bytes:
    return zlib.compress(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL), 1)
