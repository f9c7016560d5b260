"""The layering of docs/architecture.md, enforced on the source: the wings import only
downwards, nothing anywhere imports in a circle, each third-party library has one owner, and
the light modules (the hook path's and the fast recall path's) import only the standard
library at module level.

Every import counts, wherever it stands: at the top of a module, inside a function (the lazy
imports that keep start-up fast) and under `if TYPE_CHECKING:` (a type still couples the two
modules). That is what makes a circle visible that only closes at run time, as the old
`store` <-> `history` one did through a function-level import."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gitmem"

# A wing (sub-package) or a top-level module, by layer: each may import its own layer's names
# and lower layers, never a higher one. Two names on one layer may not import each other.
LAYERS: dict[str, int] = {
    "errors": 0,
    "atomic": 0,
    "detach": 0,  # a process started detached (the catch-up, the distillation)
    "store": 1,
    "index": 2,
    "recall": 3,
    "graph": 4,  # entities from Markdown frontmatter, their edges, the graph's queries
    "coord": 5,  # messages, tasks, session log, presence, handoff (reads the graph)
    "capture": 5,  # distilling finished sessions into records
    "consolidate": 5,  # gitmem sleep: duplicates, contradictions, stale records; proposals
    "agents": 6,
    "api": 7,
    "answers": 7,
    "__init__": 8,  # the public face of api: `gitmem.Store`
    "sync": 9,
    "evaluate": 10,
    "insight": 11,  # status and doctor's report, stats, the HTML report (reads sync): no writes
    "hooks": 11,
    "mcp_server": 11,
    "cli": 12,
    "__main__": 13,
}

# The one module (or the modules) allowed to import each library, as paths in the package.
OWNERS: dict[str, set[str]] = {
    # The git adapter, in two: reading a repository, and writing one (GitRepo extends GitReader).
    "pygit2": {"store/gitread.py", "store/git.py"},
    "yaml": {"store/recordfile.py"},
    "tantivy": {"index/textindex.py"},
    "usearch": {"index/ann.py"},  # optional: the `scale` extra
    "model2vec": {"index/embedding.py"},
    "tokenizers": {"index/embedding.py"},
    "huggingface_hub": {"index/embedding.py"},
    "safetensors": {"index/embedding.py"},
    "transformers": {"index/embedding.py"},
    # The one shared library: numpy arrays are the currency between the model and the vector
    # file (docs/architecture.md).
    "numpy": {"index/embedding.py", "index/vectors.py"},
    # SQLite speaks the catalog's tables: the catalog, its stamp read without the catalog's
    # module (light), the time-travel cache's own catalog, SessionStart's ranking query and
    # the facts records' contexts are made of (issue 21).
    "sqlite3": {
        "index/catalog.py",
        "index/stamp.py",
        "recall/timelinedb.py",
        "agents/context.py",
        "index/neighbours.py",
    },
    "typer": {
        "cli/app.py",
        "cli/main.py",
        "cli/writes.py",
        "cli/reads.py",
        "cli/checks.py",
        "cli/search.py",
        "cli/travel.py",
        "cli/remote.py",
        "cli/agents.py",
        "cli/purge.py",
        "cli/consolidate.py",
        "cli/insight.py",
        "cli/capture.py",
        "cli/coord.py",
        "cli/tasks.py",
        "cli/handoff.py",
        "cli/graph.py",
    },
    "click": set(),
    "rich": {"cli/display.py"},
    "mcp": {"mcp_server.py"},
    "git_filter_repo": {"sync/purge.py"},
    # Entity files' frontmatter, in whatever shape (issue 19); records keep their own reader.
    "frontmatter": {"graph/frontmatter.py"},
    # The benchmark's second opinion; kept off the guard and the hook path by measurement
    # (docs/secret-guard.md).
    "detect_secrets": set(),
}

# Modules on the paths that must start in milliseconds (the hook path, `gitmem recall` and
# `gitmem record` of a current index): at module level they import the standard library and
# each other only; anything else they need they import inside the function that needs it.
LIGHT = {
    "gitmem",
    "gitmem.errors",
    "gitmem.atomic",
    "gitmem.store.location",
    "gitmem.store.gitfiles",
    "gitmem.index.stamp",
    "gitmem.index.blas",
    "gitmem.index.literank",
    "gitmem.index.tokenizer",
    "gitmem.index.embedding",
    "gitmem.index.modelfiles",
    "gitmem.index.queryvec",
    "gitmem.index.model",
    "gitmem.agents.settings",
    "gitmem.agents.notes",
    "gitmem.hooks.main",
    "gitmem.cli.argsplit",
    "gitmem.cli.quickrecall",
    "gitmem.cli.background",
    "gitmem.detach",
    "gitmem.coord.sessiontag",
    "gitmem.coord.presence",
    "gitmem.consolidate.pending",
    "gitmem.consolidate.recallstats",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wing(module: str) -> str:
    """The layer name of a module: its sub-package, or itself at the top level."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def _resolve(node: ast.ImportFrom, here: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = here.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(tree: ast.AST, here: str, is_package: bool) -> Iterator[tuple[str, bool]]:
    """(imported module, at module level?) for every import in the tree. `from pkg import name`
    yields pkg.name too, since the name may be a module."""
    top_level = {id(node) for node in getattr(tree, "body", [])}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, id(node) in top_level
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, here, is_package)
            yield target, id(node) in top_level
            for alias in node.names:
                yield f"{target}.{alias.name}", id(node) in top_level


@cache
def graph() -> dict[str, dict[str, bool]]:
    """Each module of the package: the gitmem modules and the libraries it imports, each with
    whether one of its imports of it is at module level (outside any function or if)."""
    found: dict[str, dict[str, bool]] = {}
    paths = sorted(PACKAGE.rglob("*.py"))
    names = {module_name(p) for p in paths}
    for path in paths:
        here = module_name(path)
        edges: dict[str, bool] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for target, top in _imports(tree, here, path.name == "__init__.py"):
            if target.startswith("gitmem"):
                if target not in names:
                    continue  # a name from a module, not a module
            else:
                target = target.split(".")[0]
            if target != here:
                edges[target] = edges.get(target, False) or top
        found[here] = edges
    return found


def test_every_module_is_in_a_layer() -> None:
    unknown = sorted(m for m in graph() if wing(m) not in LAYERS)
    assert not unknown, f"give these a layer in LAYERS: {unknown}"


def test_wings_import_only_downwards() -> None:
    wrong = []
    for module, edges in graph().items():
        for target in edges:
            if not target.startswith("gitmem.") or wing(target) == wing(module):
                continue
            if LAYERS[wing(target)] >= LAYERS[wing(module)]:
                wrong.append(f"{module} ({LAYERS[wing(module)]}) imports {target}")
    assert not wrong, "\n".join(wrong)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles among modules: one per strongly connected component of more than
    one module (Tarjan's algorithm), each as its members in order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_circles() -> None:
    edges = {
        module: {t for t in targets if t.startswith("gitmem.")}
        for module, targets in graph().items()
    }
    assert cycles(edges) == []


def test_the_circle_check_finds_the_circles_the_old_layout_had() -> None:
    """The two circles of the flat package, as they were: the CLI's app imported its command
    modules, which imported the app; the store imported history in a function, and history
    imported the store's Version in one of its own."""
    old = {
        "cli": {"cli_agents", "cli_sync", "cli_time", "api"},
        "cli_agents": {"cli"},
        "cli_sync": {"cli"},
        "cli_time": {"cli"},
        "store": {"history", "transfer", "record"},
        "history": {"store", "record"},
        "transfer": {"store"},
        "record": set(),
        "api": {"store"},
    }
    assert cycles(old) == [
        ["history", "store", "transfer"],
        ["cli", "cli_agents", "cli_sync", "cli_time"],
    ]


def test_each_library_has_its_owners() -> None:
    wrong = []
    for module, edges in graph().items():
        path = module.removeprefix("gitmem").lstrip(".").replace(".", "/")
        path = f"{path}.py" if (PACKAGE / f"{path}.py").exists() else f"{path}/__init__.py"
        for library, owners in OWNERS.items():
            if library in edges and path not in owners:
                wrong.append(f"{path} imports {library}; only {sorted(owners)} may")
    assert not wrong, "\n".join(wrong)


def test_every_library_imported_has_an_owner() -> None:
    """A library outside OWNERS would pass the check above with any number of importers: every
    import of the package that is neither gitmem's nor the standard library's names a key."""
    unowned = sorted(
        f"{module} imports {target}"
        for module, edges in graph().items()
        for target in edges
        if target != "gitmem"
        and not target.startswith("gitmem.")
        and target not in sys.stdlib_module_names
        and target not in OWNERS
    )
    assert not unowned, "give these libraries their owner in OWNERS:\n" + "\n".join(unowned)


def test_wing_packages_are_empty() -> None:
    """Importing any module of a wing runs its `__init__.py` first: what it imported would land
    on the hook path and the fast paths."""
    full = [p for p in PACKAGE.glob("*/__init__.py") if p.read_text(encoding="utf-8").strip()]
    assert full == []


@pytest.mark.parametrize("module", sorted(LIGHT))
def test_light_modules_import_only_the_standard_library_at_load(module: str) -> None:
    assert module in graph(), f"{module} is named light but does not exist"
    wings = {m for m in graph() if m.count(".") == 1 and (PACKAGE / m.split(".")[1]).is_dir()}
    heavy = sorted(
        target
        for target, top in graph()[module].items()
        if top and target not in LIGHT | wings and target not in sys.stdlib_module_names
    )
    assert heavy == [], f"{module} imports {heavy} at module level"
