"""`python -m gitmem` and the `gitmem` console script."""

from __future__ import annotations

import sys


def main() -> None:
    from gitmem.cli import run

    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
