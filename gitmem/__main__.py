"""`python -m gitmem` and the `gitmem` console script.

Also where every command leaves the process, the fast recall path and the full CLI alike
(docs/cli.md, exit codes): an interrupt is one line, "gitmem: interrupted", and 130; a reader
that left (EPIPE on stdout) is said nowhere and ends the command with 141, the status a shell
gives a command killed by SIGPIPE; output lost otherwise (no space left, stdout closed) is one
line and 120. Both paths print through the streams installed here, so both leave alike. A hook
fails open: output its host did not stay for is dropped, and it still exits 0.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys

from gitmem.errors import EXIT_INTERRUPTED, EXIT_OUTPUT_LOST, EXIT_READER_LEFT

TYPE_CHECKING = False  # typing is not imported: the hooks' no-op path runs through here
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn, TextIO

# Commands that must start fast: `gitmem <name> ...` runs `<module>.run()` before typer or
# anything heavy is imported (module, function). Their --help is the full CLI's.
FAST_PATHS = {"hook": ("gitmem.hooks.main", "run")}
# Commands answered without the full CLI when they can be: `<module>.run(args, environ)`
# returns the exit code, or None to leave the command to the full CLI, having printed nothing.
QUICK_PATHS = {
    "recall": ("gitmem.cli.quickrecall", "run"),
    "record": ("gitmem.cli.quickrecord", "run"),
    "graph": ("gitmem.cli.quickhandoff", "run"),  # `graph handoff` (issue 19)
}


class _OutputLost(BaseException):
    """A write to stdout failed. A BaseException, as an interrupt is (and as gitmem.hooks.main'
    timeout), so that no command's `except Exception` reports it as a bug in gitmem: it ends
    the command, cleaning up as it unwinds, and main() says what happened."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


class _Output:
    """sys.stdout or sys.stderr as gitmem's commands write to them: the stream itself, save
    for what a failed write becomes. On stdout, the first failure raises _OutputLost and the
    rest is dropped; on stderr, a message that cannot be shown is dropped (the exit code
    still tells). `stream` is None when the descriptor was closed before Python started."""

    def __init__(self, stream: TextIO | None, stops: bool) -> None:
        self._stream = stream
        self._stops = stops
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        self._attempt(lambda stream: stream.write(text))
        return len(text)

    def flush(self) -> None:
        self._attempt(lambda stream: stream.flush())

    def isatty(self) -> bool:
        return self._stream is not None and self._stream.isatty()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def _attempt(self, call: Callable[[TextIO], object]) -> None:
        if self.failed is not None:
            return
        try:
            if self._stream is None:
                raise OSError(errno.EBADF, os.strerror(errno.EBADF))  # as the closed fd would
            call(self._stream)
        except OSError as exc:
            self.failed = exc
            if self._stops:
                raise _OutputLost(exc) from exc

    def discard(self) -> None:
        """Point the failed descriptor at /dev/null: what the interpreter still has to flush
        as it exits would fail again, and it would say so ("Exception ignored ...")."""
        if self.failed is None or self._stream is None:
            return
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)


def main() -> None:
    import importlib

    name = sys.argv[1] if len(sys.argv) > 1 else ""
    fast = FAST_PATHS.get(name)
    if fast is not None and not {"-h", "--help"} & set(sys.argv[2:]):
        out = _Output(sys.stdout, stops=False)
        try:
            getattr(importlib.import_module(fast[0]), fast[1])()
        finally:  # it fails open: output its host did not stay for is dropped, its code kept
            out.flush()
            out.discard()
        return
    out, err = _Output(sys.stdout, stops=True), _Output(sys.stderr, stops=False)
    sys.stdout, sys.stderr = out, err
    full = False  # till then, nothing holds a lock or has written: no teardown is needed
    try:
        code = None
        if name in QUICK_PATHS:
            # OpenBLAS's worker threads spin for up to 2^28 cycles (~0.1 s) waiting for work,
            # after they start and after each call, taking the second core from this short
            # process's own threads: ~50 ms of a recall's wall time, measured at 100k records.
            # The timeout changes only how they wait: results are bit for bit the same
            # (tests/test_quickrecall).
            os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
            # And a recall computes every product on one BLAS thread anyway (gitmem.index.vectors,
            # gitmem.index.literank): one thread from the start spares loading OpenBLAS the start
            # of the others. Results are the same bit for bit; a user's own setting is kept;
            # worker processes of an index build this process may start inherit it (one
            # thread each, as they should be). Not for `record`, whose children (an editor,
            # git's hooks) are the user's.
            if name == "recall":
                os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
            module, function = QUICK_PATHS[name]
            code = getattr(importlib.import_module(module), function)(sys.argv[2:], os.environ)
        if code is None:
            full = True
            from gitmem.cli.main import run

            code = run(sys.argv[1:])
        out.flush()
    except KeyboardInterrupt:  # one the command did not meet: while importing, say
        code = _interrupted()
    except _OutputLost as lost:
        code = _lost(lost.error)
    with contextlib.suppress(_OutputLost):
        out.flush()  # what an interrupt left unwritten
    err.flush()
    if not full:
        _leave(code)
    out.discard()
    err.discard()
    sys.exit(code)


def _interrupted() -> int:
    from gitmem.cli import display

    display.error("interrupted")
    return EXIT_INTERRUPTED


def _lost(error: OSError) -> int:
    if isinstance(error, BrokenPipeError):
        return EXIT_READER_LEFT  # the reader has what it wanted: nothing to tell anyone
    from gitmem.cli import display

    display.error(f"cannot write to standard output: {error.strerror or error}")
    return EXIT_OUTPUT_LOST


def _leave(code: int) -> NoReturn:
    """Exit without the interpreter's teardown: ~100 ms of a quick recall at 100k records
    (measured), spent joining idle threads, stopping OpenBLAS's and releasing tantivy's
    searchers and the vector file's mapping. A quick path has released any lock it took,
    finished any write it made and printed all it will, its output flushed by main()."""
    os._exit(code)


if __name__ == "__main__":
    main()
