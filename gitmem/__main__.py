"""`python -m gitmem` and the `gitmem` console script."""

from __future__ import annotations

import contextlib
import os
import sys

# Commands that must start fast: `gitmem <name> ...` runs `<module>.run()` before typer or
# anything heavy is imported (module, function). Their --help is the full CLI's.
FAST_PATHS = {"hook": ("gitmem.hooks", "run")}
# Commands answered without the full CLI when they can be: `<module>.run(args, environ)`
# returns the exit code, or None to leave the command to the full CLI, having printed nothing.
QUICK_PATHS = {"recall": ("gitmem.quickrecall", "run")}


def main() -> None:
    import importlib

    name = sys.argv[1] if len(sys.argv) > 1 else ""
    fast = FAST_PATHS.get(name)
    if fast is not None and not {"-h", "--help"} & set(sys.argv[2:]):
        getattr(importlib.import_module(fast[0]), fast[1])()
        return
    quick = QUICK_PATHS.get(name)
    if quick is not None:
        # OpenBLAS's worker threads spin for up to 2^28 cycles (~0.1 s) waiting for work, after
        # they start and after each call, taking the second core from this short process's
        # own threads: ~50 ms of a recall's wall time, measured at 100k records. The timeout
        # changes only how they wait: results are bit for bit the same (tests/test_quickrecall).
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
        code = getattr(importlib.import_module(quick[0]), quick[1])(sys.argv[2:], os.environ)
        if code is not None:
            _leave(code)
    from gitmem.cli import run

    sys.exit(run(sys.argv[1:]))


def _leave(code: int) -> None:
    """Exit without the interpreter's teardown: ~100 ms of a quick recall at 100k records
    (measured), spent joining idle threads, stopping OpenBLAS's and releasing tantivy's
    searchers and the vector file's mapping. A quick path holds no lock, has written nothing
    and has printed all it will; only the output buffers need flushing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: the descriptor was closed before Python started
                stream.flush()
        except (BrokenPipeError, ValueError):
            pass  # a reader that left, or a stream closed: nothing more to save
        except OSError as exc:
            # Output lost (no space left, say): not a success. 120 is what the interpreter's
            # own exit gives when it cannot flush, so the full CLI's status too.
            with contextlib.suppress(OSError, ValueError, AttributeError):
                sys.stderr.write(f"gitmem: cannot write the output: {exc}\n")
                sys.stderr.flush()
            code = code or 120
    os._exit(code)


if __name__ == "__main__":
    main()
