"""The layering in shared/STYLE.md, enforced: imports only point down, and each third-party
library is imported by exactly one module."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gitmem"

# Lower numbers are lower layers; a module may import its own layer or lower ones.
LAYERS: dict[str, int] = {
    "errors": 0,
    "atomic": 0,
    "argsplit": 0,
    "blas": 0,
    "record": 1,
    "git": 1,
    "guard": 1,
    "schema": 1,
    "lock": 1,
    "config": 1,
    "views": 1,
    "embedding": 1,
    "textindex": 1,
    "vectors": 1,
    "literank": 1,
    "listing": 1,
    "timeparse": 1,
    "catalog": 1,
    "tinyvocab": 1,
    "wordpiece": 1,
    "lazytokenizer": 1,
    "store": 2,
    "amend": 2,
    "transfer": 2,
    "history": 2,
    "index": 3,
    "indexbuild": 3,
    "recall": 3,
    "validate": 3,
    "searching": 4,
    "api": 5,
    "__init__": 5,
    "status": 5,
    "evaluate": 6,
    "display": 6,
    "writeinput": 6,
    "cli": 7,
    # Time travel (issue 4).
    "timeline": 3,
    "asof": 4,
    "changes": 4,
    "cli_time": 7,
    # Sync (issue 5).
    "gitcli": 1,
    "sshcause": 1,
    "merge": 2,
    "publish": 2,
    "sync": 5,
    "cli_sync": 7,
    # Agents (issue 6).
    "project": 1,
    "hostsetup": 1,
    "location": 1,
    "gitfiles": 1,
    "stamp": 1,
    "hooksettings": 1,
    "notes": 1,
    "context": 5,
    "automemory": 5,
    "session": 5,
    "entities": 5,
    "answers": 5,
    "hooks": 6,
    "hookevents": 6,
    "mcp_server": 6,
    "cli_agents": 7,
    # The fast recall path (issue 3): an entry point, below __main__ and beside the CLI.
    "quickrecall": 7,
    "quickrecord": 7,
    "__main__": 8,
}
OWNERS = {
    "pygit2": {"git"},
    "tantivy": {"textindex"},
    "model2vec": {"embedding"},
    "tokenizers": {"embedding"},
    "huggingface_hub": {"embedding"},
    "safetensors": {"embedding"},
    "transformers": {"embedding"},
    # The one shared library: numpy arrays are the currency between the model (embedding) and
    # the vector store (vectors); see docs/architecture.md.
    "numpy": {"embedding", "vectors"},
    "typer": {"cli", "cli_time", "cli_sync", "cli_agents"},
    "rich": {"display"},
    "yaml": {"record"},
    "mcp": {"mcp_server"},
}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module == "gitmem":
                found.update(f"gitmem.{alias.name}" for alias in node.names)
    return found


def modules() -> dict[str, set[str]]:
    return {p.stem: imports(p) for p in sorted(PACKAGE.glob("*.py"))}


def test_every_module_has_a_layer() -> None:
    assert set(modules()) <= set(LAYERS), set(modules()) - set(LAYERS)


def test_imports_point_down() -> None:
    wrong = []
    for name, found in modules().items():
        for target in found:
            if target.startswith("gitmem."):
                other = target.split(".")[1]
                if other in LAYERS and LAYERS[other] > LAYERS[name]:
                    wrong.append(f"{name} (layer {LAYERS[name]}) imports {other} ({LAYERS[other]})")
    assert not wrong


def test_each_library_has_one_owner() -> None:
    for library, owner in OWNERS.items():
        users = {
            name
            for name, found in modules().items()
            if any(t == library or t.startswith(library + ".") for t in found)
        }
        assert users <= owner, f"{library} is imported by {sorted(users)}, only {owner} may"
