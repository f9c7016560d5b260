"""Damage to the index's files: found, so that it is rebuilt from git instead of trusted.

A build records, in the catalog's stamp transaction, the size and CRC-32 of every file of the
keyword index (`manifest`). Opening the index checks the cheap facts (`quick`: every file's
size, and the checksum of the small ones: ~0.1 ms at 100k records), and `full` checks every
checksum, SQLite's own page check of the catalog and the vector file's length (for `gitmem
doctor`, with the vector graph's own check, gitmem.index.ann.check). Damage a
quick check cannot see (bytes changed in a large file, a catalog page) is met when a search
reads it: SQLite's error, or a panic of tantivy's Rust code, which Python sees as a
BaseException (`is_panic`). The index's caller then rebuilds it (gitmem.index.index).

Tantivy's segment files never change once written, so a catch-up reuses the checksums of
files whose name and size it recorded before and reads only new ones; its `meta.json` and
`.managed.json` are rewritten by every commit and are checked by tantivy's own open (JSON).
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "MANIFEST",
    "IndexDamaged",
    "check",
    "crc32",
    "full",
    "is_panic",
    "manifest",
    "quick",
    "text_damage",
]

MANIFEST = "files"  # the catalog's meta key
SMALL = 64 * 1024  # files up to this size are checksummed at every open
_REWRITTEN = frozenset({"meta.json", ".managed.json"})  # by every commit of the text index
_LOCKS = (".tantivy-",)  # lock files, empty


class IndexDamaged(Exception):
    """A file of the index is not what its build wrote: rebuild it."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def is_panic(exc: BaseException) -> bool:
    """Whether `exc` is a Rust panic surfaced by pyo3 (tantivy reading a damaged file)."""
    return type(exc).__name__ == "PanicException"


@contextlib.contextmanager
def text_damage() -> Iterator[None]:
    """Around a read of the keyword index: a panic of tantivy's Rust code (a damaged segment
    file) becomes IndexDamaged, an Exception that callers rebuild on."""
    try:
        yield
    except BaseException as exc:
        if is_panic(exc):
            raise IndexDamaged(f"its keyword index: {exc}") from exc
        raise


def crc32(path: Path) -> int:
    """The CRC-32 of the file at `path`, read 1 MB at a time."""
    crc = 0
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            crc = zlib.crc32(chunk, crc)
    return crc


def _files(root: Path) -> list[Path]:
    """The keyword index's files under the index directory `root`, in a fixed order."""
    return sorted(
        p
        for p in (root / "text").rglob("*")
        if p.is_file() and not p.name.startswith(_LOCKS) and p.name not in _REWRITTEN
    )


def _load(recorded: str | None) -> dict[str, list[int]]:
    if not recorded:
        return {}
    try:
        data = json.loads(recorded)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def manifest(root: Path, previous: str | None = None) -> str:
    """What the catalog records of the keyword index just written under `root`: JSON
    {path: [size, crc32]}. Checksums in `previous` are reused for files of the same name and
    size (segment files are immutable)."""
    old = _load(previous)
    out: dict[str, list[int]] = {}
    for path in _files(root):
        name = path.relative_to(root).as_posix()
        size = path.stat().st_size
        known = old.get(name)
        crc = known[1] if isinstance(known, list) and known[:1] == [size] else crc32(path)
        out[name] = [size, crc]
    return json.dumps(out, separators=(",", ":"), sort_keys=True)


def quick(root: Path, recorded: str | None) -> str | None:
    """What is wrong with the keyword index's files by their sizes and the small files'
    checksums, or None (also for an index built before checksums were recorded)."""
    for name, (size, crc) in _load(recorded).items():
        path = root / name
        try:
            found = os.stat(path).st_size
        except OSError:
            return f"is damaged: {name} is missing"
        if found != size:
            return f"is damaged: {name} has {found} bytes, not the {size} it was built with"
        if size <= SMALL and crc32(path) != crc:
            return f"is damaged: {name} does not match the checksum it was built with"
    return None


def full(root: Path, recorded: str | None) -> list[str]:
    """Every file of the keyword index whose size or checksum differs from its build's, and
    files its build did not write."""
    known = _load(recorded)
    if not known:
        return [
            "holds no checksums (built by an earlier gitmem): run gitmem rebuild to record them"
        ]
    problems = []
    for name, (size, crc) in known.items():
        path = root / name
        try:
            found = os.stat(path).st_size
        except OSError:
            problems.append(f"has lost {name}")
            continue
        if found != size or crc32(path) != crc:
            problems.append(f"is damaged: {name} does not match the checksum it was built with")
    for path in _files(root):
        if path.relative_to(root).as_posix() not in known:
            problems.append(
                f"holds {path.relative_to(root).as_posix()}, which its build did not write"
            )
    return problems


def check(root: Path, dim: int | None) -> list[str]:
    """The full check of the index under `root` (`gitmem doctor`): SQLite's page check of
    the catalog, every file's checksum (`full`), the keyword index's open, and, with a model
    of `dim` dimensions, whether the vector file holds every row the catalog names."""
    from gitmem.index.catalog import DB_ERRORS, Catalog, CatalogCorrupt
    from gitmem.index.textindex import TextIndex, TextIndexCorrupt

    unreadable: tuple[type[Exception], ...] = (CatalogCorrupt, *DB_ERRORS)
    try:
        catalog = Catalog(root / "catalog.sqlite")
    except CatalogCorrupt as exc:
        return [f"catalog: {exc}"]
    try:
        problems = [f"catalog: {p}" for p in catalog.check()]
        if problems:
            return problems
        problems = full(root, catalog.meta(MANIFEST))
        if dim is not None:
            name = catalog.vectors_name()
            try:
                have = os.stat(root / name).st_size // (dim * 4)
            except FileNotFoundError:
                have = 0
            want = catalog.next_row()
            if have < want:
                problems.append(f"{name} holds {have} vector rows, the catalog {want}")
    except unreadable as exc:
        return [f"catalog: {exc}"]
    finally:
        catalog.close()
    try:
        with text_damage():
            TextIndex.open(root / "text").count()  # its meta.json, read by its own open
    except (TextIndexCorrupt, IndexDamaged) as exc:
        problems.append(f"keyword index: {getattr(exc, 'reason', '') or exc}")
    return problems
