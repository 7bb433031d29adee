"""Heavy work shared fairly between tabs: a thread pool's line, one job per tab, bounded.

A job that would wait too long is refused at once; one whose page has gone stops; identical work runs once.
No job is ever in a reference cycle: a future's result is a visitor's tables, and a cycle would keep
them until the garbage collector's next full pass, past the memory budget that let them go.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from core.view.options import Refused

if TYPE_CHECKING:
    from core.serving.tabs import Tab

T = TypeVar("T")
JOB_QUEUE = 200  # heavy jobs in line at most; past it a job is refused at once, with the expected wait
JOB_WAIT_SECONDS = 60.0  # a job whose line holds more work than this is refused at once, not left waiting
JOB_SECONDS = 60.0  # a training stops here, keeping the steps it took (core.model.training.train's `stop`)


class Cancelled(Exception):
    """A heavy job whose page went away before it started or finished: nobody reads its result."""


class Job:
    """One heavy job's handle; its work reads `stop()`, true once every page that wanted it went or past its time."""

    def __init__(self, seconds: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = JOB_SECONDS if seconds is None else seconds  # read now: a test may lower it
        self.clock, self.started, self.ended, self.progress = clock, None, None, None
        self.following: Job | None = None  # the job with the same key this page shares instead
        self.future: concurrent.futures.Future | None = None
        self._wanted, self._withdrawn, self._lock = 1, False, threading.Lock()  # pages that want it

    def cancel(self) -> None:
        """This page no longer wants the job (once per page, however often it is called)."""
        with self._lock:
            withdrawn, self._withdrawn = self._withdrawn, True
        if not withdrawn:
            self.shared._want(-1)

    def _want(self, more: int) -> None:
        with self._lock:
            self._wanted += more

    @property
    def shared(self) -> Job:
        """The job that does the work for this page: its own, or the one it follows."""
        return self.following or self

    @property
    def cancelled(self) -> bool:
        return self._wanted <= 0

    def stop(self) -> bool:
        return self.cancelled or (self.started is not None and self.clock() - self.started > self.seconds)


class Jobs:
    """`workers` jobs at once, the rest in line: refused past `queue` waiting or `wait` seconds of work, and
    leaving it after twice that; jobs of one `key` (a class pressing *Train* together) run once."""

    def __init__(self, workers: int = 1, queue: int = JOB_QUEUE, wait: float = JOB_WAIT_SECONDS,
                 clock: Callable[[], float] = time.monotonic, remember: int = 4, kept: float = 60.0) -> None:
        self.workers, self.queue, self.wait, self.clock = workers, queue, wait, clock
        self._pool = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="job")
        self._pending: set[Job] = set()  # asked for, not done (the pool's queue keeps their order)
        self._mean = 1.0  # seconds a job takes, a running mean of those done
        self._lock = threading.RLock()  # a job done at once calls `_done` in `_enter`, under it
        # by key: jobs in line or running, and the last `remember` done within `kept` s (they hold tables)
        self._shared: OrderedDict[object, Job] = OrderedDict()
        self._remember, self._kept = remember, kept

    def run(self, tab: Tab, name: str, work: Callable[[], T], job: Job | None = None, key: object = None,
            admitted: threading.Event | None = None) -> T:
        """`work()` in its turn, or `Refused` or `Cancelled`; `admitted` is set once the tab counts as running it."""
        own = job or Job(clock=self.clock)
        try:
            self._enter(tab, name, own, key, work)
        finally:
            if admitted is not None:
                admitted.set()
        job, deadline = own.shared, self.clock() + 2 * self.wait
        try:
            while not concurrent.futures.wait([job.future], 0.25).done:
                if job.started is None and (job.cancelled or self.clock() >= deadline) and job.future.cancel():
                    self._done(job)
                    raise Cancelled(name) if job.cancelled else Refused(
                        f"The server was busy with other visitors' jobs for {2 * self.wait:g} s, so {name} did not "
                        "start; try again in a minute.")
                if self.clock() >= deadline + job.seconds:
                    raise Refused(f"The server was busy with other visitors' jobs, so {name} did not finish; try "
                                  "again in a minute.")
            return job.future.result()
        except concurrent.futures.CancelledError:
            raise Cancelled(name) from None
        except BaseException:
            own.cancel()  # this page no longer waits for it
            raise
        finally:
            with tab.lock:
                tab.job = None
            with self._lock:
                self._forget_old()
            del own, job  # a raised error's frames hold no job: job -> future -> error -> frame -> job

    def _enter(self, tab: Tab, name: str, job: Job, key: object, work: Callable[[], T]) -> None:
        """The tab takes the job (or follows an identical one), or `Refused` if it has one or the line is too long."""
        with tab.lock:
            if tab.job is not None:
                raise Refused(f"{tab.job.capitalize()} is still running for this page; wait for it to finish "
                              f"before {name}.")
            with self._lock:
                self._forget_old()
                shared = self._shared.get(key) if key is not None else None
                failed = shared is not None and shared.future.done() and (shared.future.cancelled()
                                                                          or shared.future.exception() is not None)
                if shared is not None and not shared.cancelled and not failed:
                    shared._want(1)
                    job.following = shared
                else:
                    ahead = len(self._pending)
                    expected = ahead * self._mean / self.workers
                    if sum(job.started is None for job in self._pending) >= self.queue or expected > self.wait:
                        raise Refused(f"The server has {ahead:,} job{'s' * (ahead != 1)} ahead of {name} (about "
                                      f"{expected:,.0f} s of work, more than the {self.wait:g} s a job may wait "
                                      "here); try again in a minute.")
                    self._pending.add(job)
                    job.future = self._pool.submit(contextvars.copy_context().run, self._work, job, work)
                    if key is not None:
                        self._shared[key] = job
            tab.job = name

    def _work(self, job: Job, work: Callable[[], T]) -> T:
        job.started = self.clock()
        try:
            return work()
        finally:
            self._done(job)  # here, not in a done-callback: a callback naming the job is a cycle through it
            del job

    def _done(self, job: Job) -> None:
        with self._lock:
            self._pending.discard(job)
            job.ended = self.clock()
            if job.started is not None:
                self._mean = 0.8 * self._mean + 0.2 * (job.ended - job.started)

    def _forget_old(self) -> None:
        """Drop the finished jobs kept past `kept` seconds, and all but the newest `remember`."""
        done = [key for key, job in self._shared.items() if job.ended is not None]  # oldest first
        fresh = [key for key in done if self.clock() - self._shared[key].ended <= self._kept]
        for key in set(done) - set(fresh[max(0, len(fresh) - self._remember):]):
            del self._shared[key]
