"""The search index's catalog as readers outside the index see it, with the standard library
only (a light module: docs/architecture.md): where it is, its schema version, how it joins a
record's tags, and the commit it mirrors. gitmem.index.catalog writes the catalog by these
facts; SessionStart's ranking query (gitmem.agents.context) and the fast recall path read it
through them without importing the catalog's module (it pulls in the record format)."""

from __future__ import annotations

# A constant rather than typing's: the hook path must not import typing (~10 ms). mypy
# honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path

__all__ = ["CATALOG", "CATALOG_SCHEMA", "TAG_SEP", "catalog_stamp", "connect", "readonly_uri"]

CATALOG = ".gitmem/index/catalog.sqlite"  # under the store's root
CATALOG_SCHEMA = "3"  # the catalog meta's "schema"; another is rebuilt (2: context, 3: its SPAN)
TAG_SEP = "\x1f"  # joins a record's tags in the catalog, and starts and ends them


def readonly_uri(path: Path) -> str:
    """SQLite's URI for opening `path` read-only. A URI ends its path at "?" or "#" and decodes
    "%": a store at `notes#2` would otherwise open (and create) `notes`, read-write."""
    quoted = str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{quoted}?mode=ro"


def connect(path: Path) -> sqlite3.Connection | None:
    """The catalog at `path` opened read-only, or None when it is missing, unreadable or of
    another schema version."""
    import sqlite3

    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(readonly_uri(path), uri=True)
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except sqlite3.Error:
        return None
    if row is None or row[0] != CATALOG_SCHEMA:
        db.close()
        return None
    return db


def catalog_stamp(root: Path) -> str | None:
    """The commit the search index was built from, or None (no index, or unreadable)."""
    import sqlite3

    path = root / CATALOG
    if not path.is_file():
        return None
    try:
        db = sqlite3.connect(readonly_uri(path), uri=True)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'commit'").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])
