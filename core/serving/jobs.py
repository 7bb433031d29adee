"""Heavy work shared fairly between tabs: a small pool, one job per tab, a bounded line.

Trainings, refits, exports, uploads and large tables go through `Jobs`, never through a tab's
quick path, so a keystroke never waits behind them. A job that would wait too long is refused
at once with the expected wait; one whose page has gone leaves the line or stops; a training
stops at `JOB_SECONDS` with what it learned; identical work asked for by many tabs runs once.
Time is read from a clock it is given.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from core.view.options import Refused

if TYPE_CHECKING:
    from core.serving.tabs import Tab

if TYPE_CHECKING:
    pass

T = TypeVar("T")
JOB_QUEUE = 200  # heavy jobs in line at most; past it a job is refused at once, with the expected wait
JOB_WAIT_SECONDS = 60.0  # a job whose line holds more work than this is refused at once, not left waiting
JOB_SECONDS = 60.0  # a training stops here, keeping the steps it took (core.model.training.train's `stop`)


class Cancelled(Exception):
    """A heavy job whose page went away before it started or finished: nobody reads its result."""


class Job:
    """One heavy job's handle: who still wants it, how far it got, and how long it may run.

    The work reads `stop()` between steps: true once every page that asked for the job has
    gone away, or past its deadline. Pages that asked for the same work (`Jobs.run`'s `key`)
    share one job: each `cancel()` withdraws one of them, and the job stops when none is left.
    The work may report how far it got in `progress`, which every page sharing it reads.
    """

    def __init__(self, seconds: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = JOB_SECONDS if seconds is None else seconds  # read now: a test may lower it
        self.clock = clock
        self.started: float | None = None
        self.ended: float | None = None
        self.progress: object = None
        self.following: Job | None = None  # the job with the same key this page shares instead
        self._wanted = 1  # pages that want it: its own, and those following it
        self._withdrawn = False
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._result: tuple[bool, object] | None = None

    def want(self) -> None:
        """One more page wants this job (it asked for the same work)."""
        with self._lock:
            self._wanted += 1

    def cancel(self) -> None:
        """This page no longer wants the job (once per page, however often it is called)."""
        with self._lock:
            withdrawn, self._withdrawn = self._withdrawn, True
        if withdrawn:
            return
        if self.following is not None:
            self.following._leave()
        else:
            self._leave()

    def _leave(self) -> None:
        with self._lock:
            self._wanted -= 1

    @property
    def shared(self) -> Job:
        """The job that does the work for this page: its own, or the one it follows."""
        return self.following or self

    @property
    def cancelled(self) -> bool:
        return self._wanted <= 0

    @property
    def timed_out(self) -> bool:
        return self.started is not None and self.clock() - self.started > self.seconds

    def stop(self) -> bool:
        return self.cancelled or self.timed_out

    def finish(self, ok: bool, value: object) -> None:
        self.ended = self.clock()
        self._result = (ok, value)
        self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    @property
    def failed(self) -> bool:
        return self._result is not None and not self._result[0]

    def result(self):
        ok, value = self._result
        if not ok:
            raise value
        return value


class Jobs:
    """Heavy work shared fairly: `workers` jobs at once, the rest in line, one per tab.

    Live updates do not go through here, so they never wait behind a training. Jobs start in
    the order they were asked for (each tab has at most one in line, so a class is served
    in turn). A job is refused at once, with the expected wait, when `queue` jobs are already
    waiting or when the line ahead holds more than `wait` seconds of work (the mean time of
    the jobs done so far); one that still has not started after twice that, or whose page
    has gone, leaves the line. Identical work (the same `key`: a class pressing *Train* on
    the same tables) runs once, and every page that asked for it gets its result.
    """

    def __init__(self, workers: int = 1, queue: int = JOB_QUEUE, wait: float = JOB_WAIT_SECONDS,
                 clock: Callable[[], float] = time.monotonic, remember: int = 4, kept: float = 60.0) -> None:
        self.workers, self.queue, self.wait, self.clock = workers, queue, wait, clock
        self._line: deque[Job] = deque()
        self._running = 0
        self._mean = 1.0  # seconds a job takes, a running mean of those done
        self._cond = threading.Condition()
        # by key: jobs in line or running, and the last `remember` done within `kept` seconds
        # (a result holds its session's tables, so only a few are kept, and not for long)
        self._shared: OrderedDict[object, Job] = OrderedDict()
        self._remember, self._kept = remember, kept

    def run(self, tab: Tab, name: str, work: Callable[[], T], job: Job | None = None, key: object = None,
            admitted: threading.Event | None = None) -> T:
        """`work()` in its turn; `job` (its handle) can cancel it while it waits or runs. With a
        `key`, a job already asked for with the same key is shared instead of run again.
        Raises `Refused` (busy, or this tab already has a job) or `Cancelled`.

        `admitted` is set once the tab counts as running the job (or the job was refused): a
        caller that runs this on a thread of its own waits for it before telling the page, so
        a table change the page sends next is refused, not applied under the running job."""
        own = job = job or Job(clock=self.clock)
        try:
            self._enter(tab, name, job, key)
        finally:
            if admitted is not None:
                admitted.set()
        shared = job.following
        job = shared or job
        try:
            if shared is None:
                self._run_in_turn(name, job, work)
            deadline = self.clock() + 2 * self.wait + job.seconds
            while not job.wait(0.25):
                if job.cancelled:
                    raise Cancelled(name)
                if self.clock() >= deadline:
                    raise Refused(f"The server was busy with other visitors' jobs, so {name} did not finish; try "
                                  "again in a minute.")
            return job.result()
        except BaseException:
            own.cancel()  # this page no longer waits for it
            raise
        finally:
            with tab.lock:
                tab.job = None
            if key is not None:
                with self._cond:
                    self._forget_old()

    def _enter(self, tab: Tab, name: str, job: Job, key: object) -> None:
        """The tab takes the job (following an identical one already asked for, `job.following`),
        or `Refused` if it has one, or the line is too long."""
        with tab.lock:
            if tab.job is not None:
                raise Refused(f"{tab.job.capitalize()} is still running for this page; wait for it to finish "
                              f"before {name}.")
            with self._cond:
                if key is not None:
                    self._forget_old()
                shared = self._shared.get(key) if key is not None else None
                if shared is not None and not shared.cancelled and not shared.failed:
                    shared.want()
                    job.following = shared
                else:
                    self._admit(name)
                    self._line.append(job)
                    if key is not None:
                        self._shared[key] = job
            tab.job = name

    def _admit(self, name: str) -> None:
        """Refuse at once, with the expected wait, when the line is full or too long to wait in."""
        ahead = len(self._line) + self._running
        expected = ahead * self._mean / self.workers
        if len(self._line) >= self.queue or expected > self.wait:
            jobs = f"{ahead:,} job{'s' * (ahead != 1)}"
            raise Refused(f"The server has {jobs} ahead of {name} (about {expected:,.0f} s of work, more than the "
                          f"{self.wait:g} s a job may wait here); try again in a minute.")

    def _run_in_turn(self, name: str, job: Job, work: Callable[[], T]) -> None:
        deadline = self.clock() + 2 * self.wait
        with self._cond:
            while not (self._line[0] is job and self._running < self.workers):
                late = self.clock() >= deadline
                if job.cancelled or late:
                    self._line.remove(job)
                    self._cond.notify_all()
                    error = Cancelled(name) if job.cancelled else Refused(
                        f"The server was busy with other visitors' jobs for {2 * self.wait:g} s, so {name} did not "
                        "start; try again in a minute.")
                    job.finish(False, error)
                    raise error
                self._cond.wait(timeout=0.25)
            self._line.popleft()
            self._running += 1
            self._cond.notify_all()
        job.started = self.clock()
        try:
            job.finish(True, work())
        except BaseException as error:
            job.finish(False, error)
        finally:
            with self._cond:
                self._running -= 1
                self._mean = 0.8 * self._mean + 0.2 * (self.clock() - job.started)
                self._cond.notify_all()

    def forget(self) -> None:
        """Drop the results kept for sharing (jobs in line or running are still shared)."""
        with self._cond:
            for key in [key for key, job in self._shared.items() if job.wait(0)]:
                del self._shared[key]

    def _forget_old(self) -> None:
        """Drop the finished jobs kept past `kept` seconds, and all but the newest `remember`."""
        now = self.clock()
        done = [key for key, job in self._shared.items() if job.wait(0)]  # oldest first
        fresh = [key for key in done if now - self._shared[key].ended <= self._kept]
        keep = set(fresh[-self._remember:]) if self._remember else set()
        for key in done:
            if key not in keep:
                del self._shared[key]
