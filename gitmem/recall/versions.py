"""The versions the time-travel cache keeps: each blob a record file ever held, parsed once
into a row of its `versions` table and the document its vectors are made of."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gitmem.errors import RecordInvalid
from gitmem.index.build import IndexDoc
from gitmem.index.entries import entry_row
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.store.git import GitRepo

__all__ = ["COLUMNS", "parse_versions"]

COLUMNS = 16  # of a row: the catalog's Entry, then ok, the frontmatter, a hash of the body


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
        # The version indexes know a version by its blob id, never by its record id.
        docs.append(IndexDoc(record.with_(id=blob), record.path, blob))
    return rows, docs
