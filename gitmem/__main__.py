"""`python -m gitmem` and the `gitmem` console script."""

from __future__ import annotations

import sys

# Commands that must start fast: `gitmem <name> ...` runs `<module>.run()` before typer or
# anything heavy is imported (module, function). Their --help is the full CLI's.
FAST_PATHS = {"hook": ("gitmem.hooks", "run")}


def main() -> None:
    fast = FAST_PATHS.get(sys.argv[1]) if len(sys.argv) > 1 else None
    if fast is not None and not {"-h", "--help"} & set(sys.argv[2:]):
        import importlib

        getattr(importlib.import_module(fast[0]), fast[1])()
        return
    from gitmem.cli import run

    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
