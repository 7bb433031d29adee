"""One browser tab's state on the server, the store that keeps it, and fair heavy work.

The page's truth is a `Live`: the `View` it shows, the `Session` holding the tables that
view asks for, and the tokens last drawn. Every event of a tab goes through `Live.apply`,
which holds the tab's lock while it builds the new view and session, computes what the page
needs, and only then swaps them in — so events of one tab apply one after another, and a
failed one changes nothing. Converting a `View` to a `Session` happens here, once
(`session_for`).

Tabs are kept in `Lives`, keyed by gradio's session hash, and forgotten after an hour
*unused* (every event counts as use, not only changes). Heavy work — training, refits,
exports, uploads, large tables — goes through `Jobs`: a small pool shared by every tab,
with at most one job per tab queued or running and a bounded queue, so one greedy visitor
cannot starve the others and live updates never wait behind it. No job waits or runs without
bound: a job that cannot start within `JOB_WAIT_SECONDS` is refused with a sentence, a job
whose page is gone is cancelled, and a training stops at `JOB_SECONDS` with what it learned.

Both keep time with a clock they are given (`time.monotonic` by default), never by reading
a patched module: a test that moves a hand clock must not move the server's event loop too.
"""

from __future__ import annotations

import difflib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from core.options import Refused
from core.session import Session
from core.state import View
from core.view import fit_sentence_basis

T = TypeVar("T")
IDLE_SECONDS = 3600  # a tab unused this long is forgotten
JOB_WAIT_SECONDS = 60.0  # a heavy job that cannot start within this is refused, not left waiting
JOB_SECONDS = 60.0  # a training stops here, keeping the steps it took (core.training.train's `stop`)
MAX_TABS = 5_000  # tabs kept at once; past it the longest-unused is forgotten first
_ENDED_REMEMBERED = 20_000  # hashes of forgotten tabs, to tell "expired" from "new"


class Expired(Refused):
    """An event from a tab whose state was forgotten after an hour unused."""


class Cancelled(Exception):
    """A heavy job whose page went away before it started or finished: nobody reads its result."""


def session_for(view: View, current: Session) -> Session:
    """The session `view` asks for, reusing `current`'s tables (and training) where they agree.

    Raises `Refused` when the view cannot be had (no uploaded file yet, a setting out of range),
    leaving `current` untouched.
    """
    new = current
    if view.tables() != current.tables():
        new = current.with_tables(view.source, view.settings, view.positions)
    if view.frozen != new.frozen:
        new = new.with_frozen(view.frozen)
    if view.basis != new.basis:
        plane = None
        if view.basis == "frozen":
            plane = fit_sentence_basis(new, view.sentence_a, view.sentence_b, view.groups)
        new = new.with_basis(view.basis, plane)
    return new


def follow(old: tuple[str, ...], new: tuple[str, ...], view: View) -> tuple[View, tuple[str, ...]]:
    """The selected token and the flipped ones, moved to where their tokens went in `new`.

    The old and new token lists are aligned (the longest matching blocks, as `diff` does), so
    typing a word before "king" keeps "king" selected. A token that was deleted or changed
    is let go, and the note says so.
    """
    if view.token is None and not view.flips:
        return view, ()
    if old == new:  # nothing moved: only what is past the end is let go
        token = view.token if view.token is None or view.token < len(new) else None
        notes = () if token == view.token else (
            f"Token {view.token} is past the end of the sentences (0 to {len(new) - 1}), so it was let go.",)
        return view.with_(token=token, flips=frozenset(i for i in view.flips if i < len(new))), notes
    moved: dict[int, int] = {}
    for block in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_matching_blocks():
        moved.update({block.a + i: block.b + i for i in range(block.size)})
    notes = []
    token = view.token
    if token is not None and token < len(old):
        if token in moved:
            token = moved[token]
        else:
            notes.append(f"The selected token '{old[token]}' is no longer in the sentences, so it was let go.")
            token = None
    elif token is not None and token >= len(new):
        notes.append(f"Token {token} is past the end of the sentences (0 to {len(new) - 1}), so it was let go.")
        token = None
    flips = set()
    for index in view.flips:
        if index in moved or (not old and index < len(new)):
            flips.add(moved.get(index, index))
        elif index < len(old):
            notes.append(f"'{old[index]}' is no longer in the sentences, so its segment flip was let go.")
    return view.with_(token=token, flips=frozenset(flips)), tuple(notes)


@dataclass(frozen=True)
class Step:
    """One applied change: the view and session before and after, and what was let go."""

    old_view: View
    view: View
    old_session: Session
    session: Session
    tokens: tuple[str, ...]  # the tokens of view's sentences under session's tokenizer
    notes: tuple[str, ...]  # plain sentences: what was changed to fit
    old_tokens: tuple[str, ...] = ()  # the tokens drawn before

    def changed(self, *names: str) -> bool:
        """Whether any of these view fields changed."""
        return any(getattr(self.old_view, n) != getattr(self.view, n) for n in names)

    @property
    def tables_changed(self) -> bool:
        """Whether the tables drawn changed: another source, a training, a reset, freezes."""
        old, new = self.old_session, self.session
        return (old.model is not new.model or old.training is not new.training or old.fixed != new.fixed
                or old.frozen_basis is not new.frozen_basis)


@dataclass(eq=False)
class Live:
    """What one browser tab shows, and the tables behind it."""

    view: View = field(default_factory=View)
    session: Session = field(default_factory=Session.create)
    tokens: tuple[str, ...] = ()  # the tokens last drawn, to follow a selection through edits
    job: str | None = None  # the heavy job queued or running for this tab, if any
    # whether the page's token picker holds a list of tokens: filled when it is opened, and
    # emptied (once) when they change, so a keystroke does not rewrite an empty picker
    listed: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    used: float = 0.0  # when its last event came, on the clock of the `Lives` that keeps it

    def apply(
        self,
        change: Callable[[View], View],
        compute: Callable[[Step], T],
        *,
        tables: Callable[[Session], Session] | None = None,
        whole: bool = False,
    ) -> tuple[Step, T]:
        """Change the view, compute what the page shows, then swap the new state in.

        `change(view)` gives the new view; `tables(session)`, if given, changes the tables
        beyond what the view says (an upload, a training's result, a reset). `compute(step)`
        runs under the tab's lock; if anything raises, nothing is swapped in. A `whole` view (a
        link, a tour step) names its own token positions; an edit's are followed to where
        their tokens moved.
        """
        with self.lock:
            view = change(self.view)
            if self.job is not None and (tables is not None or view.tables() != self.view.tables()):
                raise Refused(f"{self.job.capitalize()} is running for this page: the tables can change "
                              "when it has finished.")
            session = session_for(view, tables(self.session) if tables is not None else self.session)
            tokens = session.encode(view.sentence_a, view.sentence_b).tokens
            view, notes = follow(() if whole else self.tokens, tokens, view)
            step = Step(self.view, view, self.session, session, tokens, notes, self.tokens)
            out = compute(step)
            self.view, self.session, self.tokens = view, session, tokens
            return step, out


class Lives:
    """Every tab's `Live`, by gradio's session hash; forgotten after `idle` seconds unused."""

    def __init__(self, idle: float = IDLE_SECONDS, limit: int = MAX_TABS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle, self.limit, self.clock = idle, limit, clock
        self._lives: OrderedDict[str, Live] = OrderedDict()  # least recently used first
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str | None, *, fresh: bool = False) -> Live:
        """The tab's state, touched as used; a new one for a new tab (or when `fresh`).

        Raises `Expired` for a tab that was forgotten: its page shows a view the server no
        longer has, so it must be reloaded rather than silently drawn with other tables.
        """
        if not isinstance(key, str) or not 0 < len(key) <= 128:
            raise Refused("This request carries no valid session; reload the page.")
        now = self.clock()
        with self._lock:
            self._sweep(now)
            live = None if fresh else self._lives.get(key)
            if live is None:
                if key in self._ended and not fresh:
                    raise Expired("This page was unused for over an hour and its session has ended: reload the "
                                  "page to start again.")
                self._ended.pop(key, None)
                live = self._lives[key] = Live()
            self._lives.move_to_end(key)
            live.used = now
            self._sweep(now)  # a new tab may have taken the store past its limit
            return live

    def drop(self, key: str | None) -> None:
        """Forget a tab at once (its page was closed)."""
        with self._lock:
            self._lives.pop(key, None)

    def __len__(self) -> int:
        return len(self._lives)

    def _sweep(self, now: float) -> None:
        while self._lives:
            key, live = next(iter(self._lives.items()))
            if now - live.used <= self.idle and len(self._lives) <= self.limit:
                break
            del self._lives[key]
            self._ended[key] = None
            if len(self._ended) > _ENDED_REMEMBERED:
                self._ended.popitem(last=False)


class Job:
    """One heavy job's handle: cancelled when its page goes away, and how long it may run.

    The work reads `stop()` between steps: true once the job is cancelled or past its
    deadline. A job that has not started yet is cancelled before it takes a slot.
    """

    def __init__(self, seconds: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = JOB_SECONDS if seconds is None else seconds  # read now: a test may lower it
        self.clock = clock
        self._cancelled = threading.Event()
        self.started: float | None = None

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def timed_out(self) -> bool:
        return self.started is not None and self.clock() - self.started > self.seconds

    def stop(self) -> bool:
        return self.cancelled or self.timed_out


class Jobs:
    """Heavy work shared fairly: `workers` jobs at once, `queue` more waiting, one per tab.

    Live updates do not go through here, so they never wait behind a training; a tab that
    asks for a second job while its first is queued or running is refused with a message,
    and so is any job when the queue is full, or when no slot frees within `wait` seconds
    (a training holds its slot at most `JOB_SECONDS`, so `wait` covers a queue of them).
    """

    def __init__(self, workers: int = 1, queue: int = 8, wait: float = JOB_WAIT_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._slots = threading.BoundedSemaphore(workers)
        self._queue = queue
        self.wait = wait
        self.clock = clock
        self._waiting = 0
        self._lock = threading.Lock()

    def run(self, live: Live, name: str, work: Callable[[], T], job: Job | None = None) -> T:
        """`work()` in a free slot; `job`, when given, can cancel it while it waits (and the work
        reads `job.stop()` while it runs). Raises `Refused` (busy) or `Cancelled`."""
        job = job or Job(clock=self.clock)
        with live.lock:
            if live.job is not None:
                raise Refused(f"{live.job.capitalize()} is still running for this page; wait for it to finish "
                              f"before {name}.")
            with self._lock:
                if self._waiting >= self._queue:
                    raise Refused(f"The server is busy with {self._waiting} other jobs; try {name} again in a "
                                  "minute.")
                self._waiting += 1
            live.job = name
        try:
            try:
                self._take_slot(name, job)
            finally:
                with self._lock:
                    self._waiting -= 1
            try:
                job.started = self.clock()
                return work()
            finally:
                self._slots.release()
        finally:
            with live.lock:
                live.job = None

    def _take_slot(self, name: str, job: Job) -> None:
        """Wait for a slot, a cancellation or the end of `wait`, whichever comes first."""
        deadline = self.clock() + self.wait
        while not self._slots.acquire(timeout=min(0.25, self.wait)):
            if job.cancelled:
                raise Cancelled(name)
            if self.clock() >= deadline:
                raise Refused(f"The server was busy with other visitors' jobs for {self.wait:g} s, so {name} "
                              "did not start; try again in a minute.")
        if job.cancelled:
            self._slots.release()
            raise Cancelled(name)
