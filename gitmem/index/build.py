"""Preparing records for the search index: read each file's blob, parse it, embed its chunks and
shape its keyword document — a batch at a time, in this process or in worker processes.

A full build of a large store spreads the batches over worker processes (one per core, up to
`_MAX_WORKERS`) and keeps for itself what must happen in one place: appending vectors, adding
keyword documents and filling the catalog, in the order of the files. Parsing and embedding are
pure Python under the GIL, so threads cannot share them out (measured: an embedding thread
beside the parser made a build slower); processes can. A worker is a fresh interpreter that
opens the repository and the model itself, reads blobs by id and sends back plain values, so a
batch comes out the same wherever it was prepared: the catalog and the vector file are
identical byte for byte either way, and so are the answers (tested; tantivy's own files may
lay out segments otherwise). Starting workers costs about a second, paid back from a few thousand
records: smaller builds, catch-up updates and models that exist only in memory stay in this
process. If a worker cannot start, fails, or gives no answer to a batch within `_DEADLINE` (alive
but hung: a deadlock, a stopped process), the workers are killed and the rest is prepared here,
with a notice.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import pickle
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import RecordInvalid
from gitmem.index.textdoc import TextDoc, TextFields, text_fields
from gitmem.store.git import GitRepo
from gitmem.store.record import Record
from gitmem.store.recordfile import parse

if TYPE_CHECKING:
    from gitmem.index.embedding import Embedder

__all__ = [
    "IndexDoc",
    "Prepared",
    "chunks",
    "embed",
    "prepare",
    "prepared",
    "read_docs",
    "text_doc",
]

Files = Sequence[tuple[str, str]]  # (path, blob id)
PARALLEL_MIN = 5000  # records from which a full build uses worker processes
_MAX_WORKERS = 4
# Seconds a worker has to answer one batch, from when this process starts waiting for it (the
# worker began that batch no later). A batch of 2,000 records of ~80 words takes ~1.3 s here
# (2 cores), the first one ~1 s more to start Python and load the model; 2,000 records all at
# the 64 KB body limit (112k chunks) took 78-106 s at load 2-3. Five minutes leaves a wide
# margin over any store seen in practice and bounds a hang while the index lock is held; a
# batch that is merely slower than this is prepared again here, so the cost is time, never
# the index.
_DEADLINE = 300.0
_REAP = 10.0  # seconds to wait for a killed worker to be gone (it is not, in uninterruptible sleep)


@dataclass(frozen=True)
class IndexDoc:
    record: Record
    path: str
    blob: str


@dataclass(frozen=True)
class Prepared:
    """One batch, ready to be written: the records found at their own place, their vectors
    (unit rows, each record's chunks contiguous, in `docs` order; None without a model) with
    the number of rows of each record, their keyword documents if asked for, and what was
    left out and why."""

    docs: tuple[IndexDoc, ...]
    vectors: Any
    counts: tuple[int, ...]
    text: tuple[TextFields, ...]
    notices: tuple[str, ...]


def read_docs(repo: GitRepo, files: Files, notices: list[str]) -> list[IndexDoc]:
    """Records found at their own path. A file elsewhere (renamed or copied by hand) is left
    out, so one id is one file and an update agrees with a rebuild."""
    docs = []
    for path, blob in files:
        try:
            record = parse(repo.blob(blob).decode("utf-8"))
        except (UnicodeDecodeError, RecordInvalid):
            notices.append(f"{path} is not a valid record; left out of search")
            continue
        if record.path != path:
            notices.append(
                f"{path} holds {record.id}, whose place is {record.path}; left out of "
                'search — "gitmem validate" explains'
            )
            continue
        docs.append(IndexDoc(record, path, blob))
    return docs


def chunks(text: str, *, max_words: int = 200, overlap: int = 40) -> list[str]:
    """Split a long text into overlapping windows of at most ``max_words`` words, so one long
    record is not averaged into mush. Each window is a slice of the original text (layout
    kept); a text of ``max_words`` words or fewer comes back whole, as ``[text]``."""
    if max_words < 1 or not 0 <= overlap < max_words:
        raise ValueError(
            f"chunks: need max_words >= 1 and 0 <= overlap < max_words, got "
            f"max_words={max_words}, overlap={overlap}"
        )
    if len(text.split()) <= max_words:  # most records; str.split and \S+ agree on spaces
        return [text]
    spans = [m.span() for m in re.finditer(r"\S+", text)]
    out: list[str] = []
    start = 0
    while True:
        end = min(start + max_words, len(spans))
        out.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            return out
        start += max_words - overlap


def embed(embedder: Embedder, docs: Sequence[IndexDoc]) -> tuple[Any, tuple[int, ...]]:
    """Unit vectors of every chunk of every record (a record's rows contiguous), and how many
    rows each record has."""
    from gitmem.index.vectors import normalise

    texts: list[str] = []
    counts: list[int] = []
    for doc in docs:
        r = doc.record
        head = f"{r.title}\n{r.abstract}".strip()
        pieces = chunks(r.body) or [""]
        texts.extend(f"{head}\n{piece}".strip() for piece in pieces)
        counts.append(len(pieces))
    if not texts:
        return None, tuple(counts)
    return normalise(embedder.encode(texts)), tuple(counts)


def text_doc(doc: IndexDoc) -> TextDoc:
    r = doc.record
    return TextDoc(r.id, doc.blob, r.title, r.abstract, r.body, r.tags, r.type)


def prepare(repo: GitRepo, files: Files, embedder: Embedder | None, *, text: bool) -> Prepared:
    notices: list[str] = []
    docs = read_docs(repo, files, notices)
    vectors, counts = (None, ()) if embedder is None else embed(embedder, docs)
    fields = tuple(text_fields(text_doc(d)) for d in docs) if text else ()
    return Prepared(tuple(docs), vectors, counts, fields, tuple(notices))


def prepared(
    repo: GitRepo,
    files: Files,
    embedder: Embedder | None,
    model_folder: Path | None,
    batch: int,
    *,
    workers: int | None = None,
) -> Iterator[Prepared]:
    """Every batch of `files`, prepared with keyword documents, in order. `workers` None
    decides by size and cores; 0 prepares everything here."""
    if workers is None:
        workers = _workers(len(files))
    if embedder is not None and model_folder is None:
        workers = 0  # a model given in memory cannot be loaded by another process
    if not sys.executable or getattr(sys, "frozen", False):
        workers = 0  # no Python to start (embedded), or one that is an application (frozen)
    batches = [files[i : i + batch] for i in range(0, len(files), batch)]
    done = 0
    pool = None
    if workers > 0 and len(batches) > 1:
        try:
            pool = _Pool(repo.root, model_folder, min(workers, len(batches)), _DEADLINE)
        except OSError as exc:
            note = f"cannot start a worker process ({exc}); preparing the index here"
            yield Prepared((), None, (), (), (note,))
    if pool is not None:
        failure = None
        try:
            for result in pool.run(batches):
                done += 1
                yield result
        except _WorkerFailed as exc:
            failure = str(exc)
        finally:
            pool.close()  # before the notice: a hung worker is gone once it is told
        if failure is not None:
            note = f"a worker process failed ({failure}); preparing the rest of the index here"
            yield Prepared((), None, (), (), (note,))
    for files_of_batch in batches[done:]:
        yield prepare(repo, files_of_batch, embedder, text=True)


def _workers(records: int) -> int:
    if records < PARALLEL_MIN:
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return 0 if cores < 2 else min(cores, _MAX_WORKERS)


class _WorkerFailed(Exception):
    pass


class _Late(Exception):
    pass


class _Answers(io.RawIOBase):
    """A worker's stdout, whose reads give up at `deadline` (time.monotonic()) by raising
    _Late, so that pickle.load cannot wait forever on a worker that stopped mid-answer. What
    the worker has sent is read however late: past the deadline only a silent pipe is late
    (this process may have been the slow one: stopped, or waiting for a core)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self.deadline = math.inf

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if not self._poll.poll(None if left == math.inf else max(0, math.ceil(left * 1000))):
            raise _Late
        return os.readv(self._fd, [buffer])


class _Pool:
    """Worker processes, each `python -c` running `serve` with pickled frames over its stdin
    and stdout. Not multiprocessing: its spawn and forkserver methods run the parent's
    `__main__` script again in each child (a script without a main guard would rebuild the
    index from there), and fork copies whatever threads hold."""

    def __init__(self, root: Path, model_folder: Path | None, count: int, deadline: float) -> None:
        package = str(Path(__file__).resolve().parents[2])
        code = f"import sys; sys.path.insert(0, {package!r}); "
        code += "import gitmem.index.build as b; b.serve()"
        self._procs: list[subprocess.Popen[bytes]] = []
        try:
            for _ in range(count):
                # -P: `-c` would put the working directory first on sys.path, so a `pickle.py`
                # or `dataclasses.py` there (a project an agent works in) would run in the worker.
                # Its own process group, so that a kill takes whatever it started (a wrapper
                # script's child) with it.
                self._procs.append(
                    subprocess.Popen(
                        [sys.executable, "-P", "-c", code],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL,
                        process_group=0,
                    )
                )
        except OSError:
            self.close()  # the ones that did start
            raise
        self._start = (str(root), None if model_folder is None else str(model_folder))
        self._deadline = deadline
        self._answers: list[_Answers] = []
        for proc in self._procs:
            assert proc.stdout is not None  # a pipe was asked for
            self._answers.append(_Answers(proc.stdout.fileno()))

    def run(self, batches: Sequence[Files]) -> Iterator[Prepared]:
        """Batch i goes to worker i mod n; results are read back in order. A feeder thread
        per worker writes its requests, so neither side can block the other on a full pipe."""
        count = len(self._procs)
        feeders = [
            threading.Thread(target=self._feed, args=(proc, batches[k::count]), daemon=True)
            for k, proc in enumerate(self._procs)
        ]
        for feeder in feeders:
            feeder.start()
        streams = [io.BufferedReader(answers, 1 << 16) for answers in self._answers]
        for i in range(len(batches)):
            self._answers[i % count].deadline = time.monotonic() + self._deadline
            try:
                kind, value = pickle.load(streams[i % count])
            except _Late:
                raise _WorkerFailed(
                    f"it gave no answer within {self._deadline:g} s and was stopped"
                ) from None
            # Whatever else reached the worker's stdout (a .pth or sitecustomize that prints)
            # fails to unpickle in any number of ways, all of them this worker's failure; so
            # does an answer cut off by the worker's death.
            except Exception as exc:
                raise _WorkerFailed(f"it stopped answering: {exc or type(exc).__name__}") from exc
            if kind != "ok" or not isinstance(value, Prepared):
                raise _WorkerFailed(str(value) if kind == "error" else "it answered nonsense")
            yield value

    def _feed(self, proc: subprocess.Popen[bytes], batches: Sequence[Files]) -> None:
        assert proc.stdin is not None
        try:
            pickle.dump(self._start, proc.stdin)
            for files in batches:
                pickle.dump(list(files), proc.stdin)
            proc.stdin.close()
        except (OSError, ValueError):  # the worker died or was closed: run() notices
            pass

    def close(self) -> None:
        """Kill every worker that is still there (a stopped one too: SIGKILL needs no
        cooperation), each with its process group, then reap them, so none is left running,
        stopped or a zombie."""
        for proc in self._procs:
            if proc.poll() is None:  # not reaped yet, so its group id is still its own
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    proc.kill()
        for proc in self._procs:
            # Only a process in uninterruptible sleep outlives SIGKILL for long; subprocess
            # reaps it later rather than this build waiting on it.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_REAP)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()


# --- in a worker process ------------------------------------------------------------------


def serve() -> None:
    """A worker's loop: the store and model to open, then batches of files until stdin ends;
    each answered by ("ok", Prepared) or ("error", what went wrong)."""
    stdin = sys.stdin.buffer
    # Answers go to the original stdout; anything a library prints goes nowhere.
    stdout = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    try:
        root, folder = pickle.load(stdin)
        repo = GitRepo.open(Path(root))
        embedder = None if folder is None else _load_model(folder)
    except Exception as exc:  # reported in the first answer; the parent falls back
        pickle.dump(("error", f"{type(exc).__name__}: {exc}"), stdout)
        stdout.flush()
        return
    while True:
        try:
            files = pickle.load(stdin)
        except EOFError:
            return
        try:
            answer: tuple[str, Any] = ("ok", prepare(repo, files, embedder, text=True))
        except Exception as exc:
            answer = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(answer, stdout, protocol=pickle.HIGHEST_PROTOCOL)
        stdout.flush()


def _load_model(folder: str) -> Embedder:
    from gitmem.index import embedding, modelfiles

    model = embedding.load(folder, offline=True)
    if model is None:
        raise modelfiles.ModelUnavailable(f"no embedding model at {folder}")
    return model
