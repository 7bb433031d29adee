"""A class's writer: one thread a process for the store work a page's change leaves behind, so no
page's change waits on the store. A job still to run is replaced by a newer one of its key, so a
burst of changes publishes the newest lesson; a job that finds the store away is kept until it is back
(every page told at once, then `Outage.back` before the jobs kept); `Classroom.beat` runs every `beat` seconds.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable

from core.serving.classstore import Away

LOG = logging.getLogger(__name__)
Job = Callable[[], None]


class Writer:
    """The thread (started on its first job) and its jobs: key -> (when due, on `ticks`; the job)."""

    def __init__(self, room, *, beat: float, retry: float, ticks: Callable[[], float]) -> None:
        self.room, self.beat_seconds, self.retry_seconds, self.ticks = room, beat, retry, ticks  # its `Classroom`
        self.away = False  # the store could not be reached at the last try
        self._jobs: dict[Hashable, tuple[float, Job]] = {}
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def soon(self, key: Hashable, job: Job, at: float = float("-inf")) -> None:
        """Run `job` once it is due (at `at`), in place of any job of `key` still to run."""
        with self._wake:
            self._jobs[key] = (at, job)
            self._stir()

    def lost(self) -> None:
        """The store could not be reached: said once, and tried again every `retry` seconds."""
        with self._wake:
            if self.away:
                return
            self.away = True
            self._stir()
        LOG.warning("the class store cannot be reached; trying again every %g s", self.retry_seconds)
        self.room.tell(None)

    def _stir(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._write, name="class-writer", daemon=True)
            self._thread.start()
        self._wake.notify()

    def close(self) -> None:
        with self._wake:
            self._closed = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(5)

    def flush(self) -> None:
        """Run the jobs due now, on this thread; one that finds the store away is kept, with those after it."""
        with self._wake:
            due = [(key, job) for key, (at, job) in self._jobs.items() if at <= self.ticks()]
            for key, _ in due:
                del self._jobs[key]
        for index, (key, job) in enumerate(due):
            try:
                job()
            except Away:
                with self._wake:
                    for kept, later in due[index:]:
                        self._jobs.setdefault(kept, (float("-inf"), later))
                raise
            except Exception:  # a fault: logged, and the other jobs go on
                LOG.exception("the class writer's job %s failed", key)

    def _write(self) -> None:
        beat_at = self.ticks() + self.beat_seconds
        while True:
            with self._wake:
                now = self.ticks()
                wait = self.retry_seconds if self.away else min([beat_at, *(at for at, _ in self._jobs.values())]) - now
                if wait > 0 and not self._closed:
                    self._wake.wait(wait)
                if self._closed:
                    return
            try:
                if self.away:
                    self.room.store.ping()
                    self.room.outage.back()  # what to do again is scheduled before any page hears the store is back
                    with self._wake:
                        self.away = False
                    LOG.warning("the class store answers again")
                    continue
                self.flush()
                if self.ticks() >= beat_at:
                    self.room.beat()
                    beat_at = self.ticks() + self.beat_seconds
            except Away:
                self.lost()
            except Exception:  # a fault: logged, and the writer goes on at its next turn
                LOG.exception("the class writer failed")
                time.sleep(self.retry_seconds)
