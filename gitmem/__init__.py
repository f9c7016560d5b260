"""gitmem: a Git-native long-term memory for AI coding agents.

    from gitmem import Store
    store = Store.open(path)

Attributes load on first use, so that `import gitmem.hooks.main` (the agent's fast path) does not
pay for git, the search index or the embedding model.
"""

from __future__ import annotations

# Not typing's: importing typing costs the hook's no-op path ~8 ms. mypy honours the name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.api import Store
    from gitmem.errors import GitmemError

__all__ = ["GitmemError", "Store", "__version__"]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    if name == "Store":
        from gitmem.api import Store

        return Store
    if name == "GitmemError":
        from gitmem.errors import GitmemError

        return GitmemError
    raise AttributeError(f"module 'gitmem' has no attribute {name!r}")
