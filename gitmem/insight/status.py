"""What `gitmem status` and `gitmem doctor` report about a store, as JSON-ready data."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.index import textcarry, verify
from gitmem.index.catalog import DB_ERRORS, Catalog, CatalogCorrupt
from gitmem.index.textdoc import TextIndexCorrupt
from gitmem.store.reader import RECORDS_DIR

if TYPE_CHECKING:
    from gitmem.api import Store

__all__ = ["diagnose", "store_status", "versions"]

# The libraries whose versions `gitmem version --json` names (read from their metadata: none is
# imported).
_LIBRARIES = ("pygit2", "tantivy", "model2vec", "numpy", "tokenizers", "PyYAML", "typer", "mcp")


def versions() -> dict[str, Any]:
    """What `gitmem version` reports: gitmem's version, the store format it reads and writes,
    the schema versions of its caches (another is rebuilt), Python's and the libraries'."""
    import platform
    from importlib import metadata

    from gitmem import __version__
    from gitmem.index.stamp import CATALOG_SCHEMA
    from gitmem.recall.timeline import SCHEMA_VERSION
    from gitmem.store.config import STORE_FORMAT

    libraries: dict[str, str | None] = {}
    for name in _LIBRARIES:
        try:
            libraries[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            libraries[name] = None
    return {
        "gitmem": __version__,
        "store_format": STORE_FORMAT,
        "index_schema": CATALOG_SCHEMA,
        "timeline_schema": SCHEMA_VERSION,
        "python": platform.python_version(),
        "libraries": libraries,
    }


_UNREADABLE: tuple[type[Exception], ...] = (CatalogCorrupt, *DB_ERRORS)


def store_status(store: Store) -> dict[str, Any]:
    """Cheap facts: counted from the paths at HEAD and the index's own stamp; nothing is
    parsed, rebuilt or loaded."""
    head = store.head()
    counts: Counter[str] = Counter()
    for path, _ in store.repo.files(head, RECORDS_DIR):
        parts = path.split("/")
        if len(parts) == 4 and path.endswith(".md"):
            counts[parts[1]] += 1
    report: dict[str, Any] = {
        "store": str(store.root),
        "branch": store.repo.branch(),
        "head": head,
        "records": sum(counts.values()),
        "by_type": dict(sorted(counts.items())),
        "pending": [{"path": p.path, "state": p.state} for p in store.pending()],
        "index": _index_state(store, head),
        "model": store.config.model,
        "model_problem": store.model_problem,
        "model_notice": _model_notice(store),
        "problems": [],
    }
    from gitmem.sync.state import sync_status  # a lower wing (9); reads two refs, one file

    report["sync"] = sync_status(store)
    from gitmem.capture.report import capture_status

    report["capture"] = capture_status(store.cache_dir)
    return report


def _model_notice(store: Store) -> str:
    """Why the model in use is not the one config.toml names (the built-in stand-in)."""
    model = store.model()
    return "" if model is None else model.notice


def _index_state(store: Store, head: str | None) -> dict[str, Any]:
    root = store.cache_dir / "index"
    if not (root / "catalog.sqlite").exists():
        return {"state": "missing", "commit": None}
    try:
        catalog = Catalog(root / "catalog.sqlite")
    except CatalogCorrupt as exc:
        return {"state": f"unreadable ({exc})", "commit": None}
    try:
        commit = catalog.meta("commit")
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        damage = verify.quick(root, catalog.meta(verify.MANIFEST))  # the check at every open
        return {
            "state": "damaged" if damage else "current" if commit == head else "behind HEAD",
            "damage": [damage.removeprefix("is damaged: ")] if damage else [],
            "commit": commit,
            "records": catalog.count(),
            "vectors": catalog.live_rows(),
            "model": catalog.meta("model") or None,
            "bytes": size,
            "keyword_leftovers": _leftovers(root),
        }
    except _UNREADABLE as exc:  # a damaged page, met by one of the counts
        return {"state": "damaged", "damage": [f"catalog: {exc}"], "commit": None}
    finally:
        catalog.close()


def _leftovers(root: Path) -> dict[str, float | None]:
    """Each keyword index's deleted documents that BM25 still counts, as a share of those it
    counts (docs/search.md: a write rewrites the index whole past a bound); None: no index."""
    shares: dict[str, float | None] = {}
    for name, directory in (("records", "text"), ("sessions", "sources")):
        try:
            shares[name] = round(textcarry.share(root / directory), 4)
        except TextIndexCorrupt:
            shares[name] = None
    return shares


def diagnose(store: Store) -> dict[str, Any]:
    """Status plus checks, each problem with its fix."""
    report = store_status(store)
    problems: list[str] = report["problems"]
    if report["pending"]:
        problems.append(
            f"{len(report['pending'])} record file(s) edited but not committed — "
            'review them and run "gitmem commit"'
        )
    if store.model_problem:
        problems.append(f"semantic search is off: {store.model_problem}")
    from gitmem.store.validate import validate_files

    invalid = [p for p in validate_files(store, []) if p.level == "error"]
    if invalid:
        problems.append(f'{len(invalid)} problem(s) in record files — run "gitmem validate"')
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress", "--connectivity-only"],
        cwd=store.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if fsck.returncode != 0:
        first = (fsck.stderr or fsck.stdout).strip().splitlines()[:1]
        problems.append(f"git fsck failed: {' '.join(first)} — see git fsck's output")
    index = report["index"]
    if index["state"] in ("current", "behind HEAD"):  # every checksum, every catalog page
        found = store.check_index()
        if found:
            index["state"], index["damage"] = "damaged", found
    if index["state"] == "damaged":
        problems.append(
            f"the search index is damaged ({'; '.join(index['damage'][:3])}); the next "
            'recall rebuilds it from git, or run "gitmem rebuild"'
        )
    elif index["state"].startswith("unreadable"):
        problems.append(
            f"the search index is {index['state']}; the next recall rebuilds it from git, "
            'or run "gitmem rebuild"'
        )
    elif index["state"] != "current":
        problems.append(
            f"the search index is {index['state']}; it catches up on the next recall, "
            'or run "gitmem rebuild"'
        )
    return report
