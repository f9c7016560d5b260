"""The search index's stamp (the commit its catalog mirrors), read with the standard library
only (a light module: docs/architecture.md)."""

from __future__ import annotations

# A constant rather than typing's: the hook path must not import typing (~10 ms). mypy
# honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["CATALOG", "catalog_stamp", "readonly_uri"]

CATALOG = ".gitmem/index/catalog.sqlite"  # under the store's root


def readonly_uri(path: Path) -> str:
    """SQLite's URI for opening `path` read-only. A URI ends its path at "?" or "#" and decodes
    "%": a store at `notes#2` would otherwise open (and create) `notes`, read-write."""
    quoted = str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return f"file:{quoted}?mode=ro"


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
