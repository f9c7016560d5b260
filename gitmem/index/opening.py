"""Opening the build of the index that is in place, and knowing which build it is.

A rebuild writes a new directory and swaps it in by rename (gitmem.index.index), so a reader
may meet the catalog of one build and the keyword index of the next. A build is named by its
catalog's inode (its generation): a file held open keeps its inode from any new file, and a
rebuild's new catalog exists before the old one goes, so a reader that sees the same
generation before and after opening the parts has opened one build. What is damaged, missing,
unfinished or of another model is said as a reason for the caller's rebuild notice.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from gitmem.index import verify
from gitmem.index.catalog import DB_ERRORS, Catalog, CatalogCorrupt
from gitmem.index.textindex import TextIndex, TextIndexCorrupt
from gitmem.index.verify import IndexDamaged

__all__ = ["DAMAGE", "Build", "damaged", "generation", "open_build", "same_generation"]

# What a search of a damaged index raises: the caller rebuilds (`Index.repair`) and asks again.
DAMAGE: tuple[type[Exception], ...] = (IndexDamaged, CatalogCorrupt, TextIndexCorrupt, *DB_ERRORS)
_UNREADABLE: tuple[type[Exception], ...] = (CatalogCorrupt, TextIndexCorrupt, *DB_ERRORS)
_SQLITE_DAMAGE = frozenset({11, 26})  # SQLITE_CORRUPT ("malformed"), SQLITE_NOTADB
_OPEN_TRIES = 5  # opens of an index another process keeps swapping


def damaged(exc: BaseException) -> bool:
    """Whether `exc`, one of DAMAGE, says a file of the index is damaged: SQLite's errors also
    say busy, locked or full, which a rebuild would not mend."""
    code = getattr(exc, "sqlite_errorcode", None)
    return not isinstance(code, int) or code & 0xFF in _SQLITE_DAMAGE


class Build(NamedTuple):
    """The parts of one build, opened."""

    catalog: Catalog
    text: TextIndex
    generation: int


def generation(root: Path) -> int:
    """Which build of the index is in place (OSError when none is)."""
    return (root / "catalog.sqlite").stat().st_ino


def same_generation(root: Path, expected: int) -> bool:
    """Whether the build in place is still `expected`."""
    try:
        return generation(root) == expected
    except OSError:
        return False


def open_build(root: Path, model_name: str) -> Build | str:
    """The build in place, opened; or what is wrong with it."""
    for _ in range(_OPEN_TRIES):
        try:  # held open while the parts open, so that no new file can take its inode
            held = os.open(root / "catalog.sqlite", os.O_RDONLY)
        except OSError:
            return "is missing"
        try:
            opened = os.fstat(held).st_ino
            parts = _open_parts(root, model_name)
            if isinstance(parts, str):
                return parts
            if same_generation(root, opened):
                return Build(*parts, opened)
        finally:
            os.close(held)
        # Another process's rebuild swapped its directory in between the opens: the
        # catalog may be the old build's and the text index the new one's.
        parts[0].close()
    return "kept changing while it was opened (another process was rebuilding it)"


def _open_parts(root: Path, model_name: str) -> tuple[Catalog, TextIndex] | str:
    """The catalog and the text index, or what is wrong with them."""
    try:
        catalog = Catalog(root / "catalog.sqlite")
    except CatalogCorrupt as exc:
        return f"is unreadable ({exc})"
    try:
        damage = verify.quick(root, catalog.meta(verify.MANIFEST))
        text = None if damage else TextIndex.open(root / "text")
        built, commit = catalog.meta("model"), catalog.meta("commit")
    except _UNREADABLE as exc:
        catalog.close()
        return f"is unreadable ({getattr(exc, 'reason', exc)})"  # the caller rebuilds it
    except BaseException as exc:
        catalog.close()
        if verify.is_panic(exc):  # tantivy's Rust code met a damaged file
            return f"is unreadable (its keyword index: {exc})"
        raise
    if text is None or built != model_name or commit is None:
        catalog.close()
        if damage:
            return damage
        if built != model_name:
            return f"was built with {built or 'no model'}, not {model_name or 'no model'}"
        return "was never finished"
    return catalog, text
