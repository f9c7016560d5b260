"""A package's compiled extension module, loaded without running the package's `__init__`.

usearch's `__init__` imports urllib.request, and with it http.client, ssl and email (60-190 ms
of a `gitmem recall` process on the loaded 2-core host, docs/benchmarks.md, "Session 14:
`gitmem recall` at a million, whole process"), for a binary downloader that a reader of a
vector graph never uses; the reader needs only the compiled index. This finds the extension's
file through the package's spec (the package is not imported), loads the shared libraries it
links against with their symbols global first (as that `__init__` does for NumKong), and
registers the module under its full name, where a later ordinary import of the package finds
it. gitmem.index.ann is the caller and keeps the ordinary import for when this answers None.
The module is never bound as an attribute of its package, not even once the package is
imported later (Python binds a submodule onto its package only when it loads it, and this one is
in sys.modules by then): `from usearch.compiled import X`, `import usearch.compiled as c` and
sys.modules find it; `usearch.compiled` as an attribute of an imported `usearch` does not.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

__all__ = ["load_alone"]


def load_alone(name: str, needs: tuple[str, ...] = ()) -> ModuleType | None:
    """The extension module `name` ("package.module"), loaded alone, after the extensions
    `needs` names (each loaded as a shared library, symbols global, when installed); None when
    it cannot be found or loaded so (another layout: the caller imports it as usual)."""
    try:
        spec = _spec(name)
        if spec is None or spec.loader is None:
            return None
        for needed in needs:
            found = _spec(needed)
            if found is not None and found.origin:
                import ctypes

                ctypes.CDLL(found.origin, mode=ctypes.RTLD_GLOBAL)
        module = importlib.util.module_from_spec(spec)  # an extension: initialised here
        spec.loader.exec_module(module)
    except (ImportError, OSError, ValueError):
        return None
    sys.modules[name] = module
    return module


def _spec(name: str) -> Any:
    """The spec of the extension module `name`, found without importing its package."""
    package_name, _, _ = name.rpartition(".")
    package = importlib.util.find_spec(package_name)
    if package is None or not package.submodule_search_locations:
        return None
    kinds = (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES)
    for where in package.submodule_search_locations:
        found = importlib.machinery.FileFinder(where, kinds).find_spec(name)
        if found is not None:
            return found
    return None
