"""The keyword thread: one thread running the keyword halves of hybrid recalls handed to it,
one after another, while the recalling thread runs the semantic half (gitmem.recall.recall).

What concurrent.futures' ThreadPoolExecutor(max_workers=1) was here, without that package's
import (it brings logging: ~12 ms of each `gitmem recall` process, measured). Started at the
first hybrid recall; a daemon, so it never holds up an exit; a fork's child starts its own.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["POOL", "Job", "Worker"]


class Job:
    """A call handed to the keyword thread, and what it returned or raised."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._fn, self._args = fn, args
        self._done = threading.Event()
        self._value: Any = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            self._value = self._fn(*self._args)
        except BaseException as exc:  # raised again in the thread that asks for the result
            self._error = exc
        finally:
            self._done.set()

    def wait(self) -> None:
        self._done.wait()

    def result(self) -> Any:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


class Worker:
    """The thread and the queue of jobs it takes, both made at the first job."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Job] | None = None

    def submit(self, fn: Callable[..., Any], *args: Any) -> Job:
        job = Job(fn, args)
        with self._lock:
            if self._jobs is None:
                self._jobs = queue.SimpleQueue()
                threading.Thread(
                    target=_work, args=(self._jobs,), name="gitmem-keyword", daemon=True
                ).start()
            self._jobs.put(job)
        return job

    def forked(self) -> None:
        """In a fork's child: the parent's thread is not there, and its lock may be held."""
        self._lock, self._jobs = threading.Lock(), None


def _work(jobs: queue.SimpleQueue[Job]) -> None:
    while True:
        jobs.get().run()


POOL = Worker()
os.register_at_fork(after_in_child=POOL.forked)
