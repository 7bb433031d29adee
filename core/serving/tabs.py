"""One browser tab's state on the server (`Tab`), and the store that keeps every visitor's (`Tabs`).

Every change goes through `Tab.apply`, under the tab's lock, so a failed one changes nothing.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from cachetools import FIFOCache, LRUCache

from core.plane.layers import reached
from core.plane.pipeline import fit_sentence_basis
from core.process.memory import BUDGET, Budget, private
from core.tables.session import Session
from core.view.options import COMPONENTS, MAX_FOLLOWERS, Refused
from core.view.state import View

T = TypeVar("T")
IDLE_SECONDS = 3600  # a tab unused this long is forgotten
MAX_TABS = 5_000  # tabs kept at once; past it the longest-unused is forgotten first
# new tabs an address may open at once, then one every NEW_TAB_SECONDS (the tests raise it: one client)
NEW_TABS = int(os.environ.get("EXPLORER_NEW_TABS", "200"))
NEW_TAB_SECONDS = 2.0
_ENDED_REMEMBERED = 20_000  # names of forgotten tabs, to tell "expired" from "new"


class Expired(Refused):
    """An event from a tab whose state was forgotten after an hour unused."""


def session_for(view: View, current: Session, *, whole: bool = False) -> Session:
    """The session `view` asks for, reusing `current`'s tables where they agree (`whole`: not an edit)."""
    new = current
    if view.tables() != current.tables():
        new = current.with_tables(view.source, view.settings, view.positions)
    if view.frozen != new.frozen:
        new = new.with_frozen(view.frozen)
    if view.basis != new.basis:
        plane = None
        if view.basis == "frozen":
            # the plane the ticked groups show; a whole view with none ticked (unticked after freezing)
            # cannot say which groups it was kept with, so it keeps the one every group spans
            groups = view.groups or (COMPONENTS if whole else ())
            plane = fit_sentence_basis(new, view.sentence_a, view.sentence_b, groups)
        new = new.with_basis(view.basis, plane)
    return new


def follow(old: tuple[str, ...], new: tuple[str, ...], view: View) -> tuple[View, tuple[str, ...]]:
    """The selected and flipped tokens, moved where they went in `new` (aligned as `diff` does), or let go."""
    if view.token is None and not view.flips:
        return view, ()
    if old == new:  # nothing moved: no alignment to compute
        moved = {i: i for i in range(len(new))}
    else:
        blocks = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_matching_blocks()
        moved = {block.a + i: block.b + i for block in blocks for i in range(block.size)}
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


def holding(session: Session) -> dict[int, int]:
    """The tables a session holds, as `core.process.memory.Budget` counts them."""
    uploaded = session.uploaded  # each storage counted once, however many of these share it
    models = (session.base.model, session.source.model, session.trained, None if uploaded is None else uploaded.model)
    return private(models, () if uploaded is None else (uploaded.tokenizer,))


@dataclass(frozen=True)
class Change:
    """One applied change: the view and session before and after, and what was let go."""

    old_view: View
    view: View
    old_session: Session
    session: Session
    tokens: tuple[str, ...]  # the tokens of view's sentences under session's tokenizer
    notes: tuple[str, ...]  # plain sentences: what was changed to fit
    old_tokens: tuple[str, ...] = ()  # the tokens drawn before
    revision: int = 0  # the tab's count of applied changes: the page draws nothing older than it has

    @property
    def tables_changed(self) -> bool:
        """Whether the tables drawn changed: another source, a training, a reset, freezes."""
        old, new = self.old_session, self.session
        return (old.model is not new.model or old.training is not new.training or old.fixed != new.fixed
                or old.frozen_basis is not new.frozen_basis)


@dataclass(eq=False)
class Tab:
    """What one browser tab shows, and the tables behind it."""

    view: View = field(default_factory=View)
    _session: Session | None = field(default_factory=Session.create, repr=False)
    tokens: tuple[str, ...] = ()  # the tokens last drawn, to follow a selection through edits
    job: str | None = None  # the heavy job queued or running for this tab, if any
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)
    used: float = 0.0  # when its last event came, on the clock of the `Tabs` that keeps it
    revision: int = 0
    client: str | None = None  # the client address (an IPv6 /64) that opened it, if known: its share of memory
    _parked: tuple | None = field(default=None, repr=False)  # a parked tab's basis and frozen plane (`park`)
    # its part in a class (core/serving/classroom.py), told of every change to the view by `apply`
    member: object | None = field(default=None, repr=False)

    @property
    def session(self) -> Session:
        """The tab's session, a parked tab's rebuilt from its view (`Refused` when the budget has no room)."""
        if self._parked is None:
            return self._session
        with self.lock:
            if self._parked is not None:
                basis, plane = self._parked
                view = self.view
                session = Session.create().with_tables(view.source, view.settings, view.positions)
                self._session, self._parked = session.with_frozen(view.frozen).with_basis(basis, plane), None
            return self._session

    @session.setter
    def session(self, session: Session) -> None:
        self._session, self._parked = session, None

    @property
    def parked(self) -> bool:
        """Whether its tables were let go (`park`)."""
        return self._parked is not None

    def holding(self) -> dict[int, int]:
        """What this tab's tables hold (`core.process.memory.private`); nothing while parked."""
        session = self._session  # one read: the tab may be parked or changed meanwhile
        return {} if session is None else holding(session)

    def park(self) -> bool:
        """Let go of the tables if the view rebuilds them exactly (not an upload or a training, nor
        during a change or a job), to make room for another page's; returns whether it did."""
        if not self.lock.acquire(blocking=False):
            return False
        try:
            session = self._session
            if (session is None or self.job is not None or session.uploaded is not None
                    or session.training is not None or session.tables() != self.view.tables()):
                return False
            self._parked, self._session = (session.basis, session.frozen_basis), None
            return True
        finally:
            self.lock.release()

    def apply(self, change: Callable[[View], View], compute: Callable[[Change], T], *,
              tables: Callable[[Session], Session] | None = None, whole: bool = False) -> T:
        """Change the view, compute what the page shows, then swap the new state in (nothing if anything raises);
        returns what `compute(step)` made. `tables(session)` changes the tables beyond the view (an upload, a
        training, a reset)."""
        with self.lock:
            view = change(self.view)
            if self.job is not None and (tables is not None or view.tables() != self.view.tables()):
                raise Refused(f"{self.job.capitalize()} is running for this page: the tables can change "
                              "when it has finished.")
            current = self.session
            session = session_for(view, tables(current) if tables is not None else current, whole=whole)
            if session is not current:
                held = holding(session)
                BUDGET.check_tab(held)
                BUDGET.check_client(self, held)
            tokens = session.encode(view.sentence_a, view.sentence_b).tokens
            view, notes = follow(() if whole else self.tokens, tokens, view)
            if view.layer:  # a layer only BERT's own tables give (at layer 0, a keystroke runs nothing of it)
                view, cannot = reached(view, session)
                notes += cannot
            step = Change(self.view, view, current, session, tokens, notes, self.tokens, self.revision + 1)
            out = compute(step)
            self.view, self.session, self.tokens, self.revision = view, session, tokens, step.revision
            if self.member is not None:
                self.member.changed(view)
            return out


class Tabs:
    """Every tab's `Tab` by an opaque name (the page's key), forgotten after `idle` seconds unused; new
    tabs are rate-limited per address (`NewTabs`). Given a `budget`, the store is what it counts."""

    def __init__(self, idle: float = IDLE_SECONDS, limit: int = MAX_TABS,
                 clock: Callable[[], float] = time.monotonic, budget: Budget | None = None,
                 new_tabs: int = NEW_TABS, refill: float = NEW_TAB_SECONDS) -> None:
        self.idle, self.limit, self.clock = idle, limit, clock
        self._lives: OrderedDict[str, Tab] = OrderedDict()  # least recently used first
        self._ended: FIFOCache[str, str] = FIFOCache(_ENDED_REMEMBERED)  # name -> why it ended
        self._lock = threading.Lock()
        self.new_tabs = NewTabs(new_tabs, refill, clock)
        if budget is not None:
            budget.tabs = self._holdings
            budget.park = Tab.park

    def open(self, key: str, address: str | None = None, replaces: str | None = None, room: str | None = None) -> Tab:
        """A new tab by this name (a page's new key), if `address` may open one now; the tabs past the
        idle time or the store's limit are forgotten (their pages' next calls are `Expired`).

        `replaces`: the key the browser tab had before a reload. Its tab is let go, and when it was
        the same network's, the new one takes its place instead of a new tab's (an F5 never runs
        out). `room`: a running class whose link the page opened, which admits its own pages."""
        client = network_of(address) if address else None
        with self._lock:
            replaced = self._lives.pop(replaces, None) if isinstance(replaces, str) else None
            if replaced is not None:
                self._ended[replaces] = ENDED
        if replaced is None or replaced.client != client:
            self.new_tabs.take(address, room)
        tab = Tab(client=client)  # outside the lock: the budget reads the store
        with self._lock:
            self._ended.pop(key, None)
            self._lives[key] = tab
            self._lives.move_to_end(key)
            tab.used = self.clock()
            self._sweep(tab.used)
        return tab

    def kept(self, key: str) -> Tab:
        """The tab kept by this name, touched as used; `Expired` when it is not (never a new tab)."""
        with self._lock:
            tab = self._lives.get(key)
            if tab is None:
                raise Expired(self._ended.get(key, ENDED))
            self._lives.move_to_end(key)
            tab.used = self.clock()
            return tab

    def end(self, key: str) -> None:
        """Let the tab kept by this name go now (its page reloaded)."""
        with self._lock:
            if self._lives.pop(key, None) is not None:
                self._ended[key] = ENDED

    def _holdings(self) -> list[tuple[Tab, dict[int, int]]]:
        """Every tab with what its tables hold, least recently used first (for the budget)."""
        with self._lock:
            tabs = list(self._lives.values())
        return [(tab, tab.holding()) for tab in tabs]

    def _sweep(self, now: float) -> None:
        while self._lives:
            key, tab = next(iter(self._lives.items()))
            idle = now - tab.used > self.idle
            if not idle and len(self._lives) <= self.limit:
                break
            del self._lives[key]
            self._ended[key] = IDLE if idle else PUSHED_OUT.format(limit=self.limit)


ENDED = ("This page's session has ended (unused for over an hour, let go to make room for others, or the "
         "server restarted): reload the page to start again.")
IDLE = "This page was unused for over an hour and its session has ended: reload the page to start again."
PUSHED_OUT = ("The server keeps {limit:,} pages at most and had to let this one go, the longest unused, to make "
              "room for others: reload the page. Its address keeps the view; an uploaded file or a training must be "
              "made again.")


class Buckets:
    """A token bucket per name: `burst` at once, then one every `refill` seconds; the `remember` names
    seen last are kept (one forgotten was quiet long enough to be full again)."""

    def __init__(self, burst: int, refill: float, clock: Callable[[], float] = time.monotonic,
                 remember: int = 10_000) -> None:
        self.burst, self.refill, self.clock = burst, refill, clock
        self._buckets: LRUCache[object, tuple[float, float]] = LRUCache(remember)  # name -> (tokens, when)
        self._lock = threading.Lock()

    def take(self, name: object, burst: int | None = None) -> float:
        """Take one for `name` (from a bucket of `burst`, if given): 0, or the seconds until one is there."""
        burst = self.burst if burst is None else burst
        now = self.clock()
        with self._lock:
            tokens, when = self._buckets.get(name, (float(burst), now))
            tokens = min(float(burst), tokens + (now - when) / self.refill)
            if tokens < 1:
                self._buckets[name] = (tokens, now)
                return (1 - tokens) * self.refill
            self._buckets[name] = (tokens - 1, now)
            return 0.0


class NewTabs(Buckets):
    """How many new tabs each client may open: `burst` at once, then one every `refill` seconds. A
    running class's link admits its own: a network may open `room_burst` pages of one class (as many
    as a class seats), so a lecture hall behind one school address all gets in, and a stranger still
    opens no more of them than the class would seat."""

    def __init__(self, burst: int = NEW_TABS, refill: float = NEW_TAB_SECONDS,
                 clock: Callable[[], float] = time.monotonic, remember: int = 10_000,
                 room_burst: int = MAX_FOLLOWERS) -> None:
        super().__init__(burst, refill, clock, remember)
        self.room_burst = room_burst

    def take(self, address: str | None, room: str | None = None) -> None:
        """Count one new tab for `address` (None: not counted), in the class `room`'s own bucket when
        given, or `Refused` saying when the next may come."""
        if not address:
            return
        client = network_of(address)
        burst = self.room_burst if room else self.burst
        wait = super().take((client, room) if room else client, burst)
        if wait:
            where = "this class's link" if room else "your address"
            raise Refused(f"Too many new pages from {where} ({burst} at once, then one every {self.refill:g} s): "
                          f"try again in {max(1, round(wait))} s.")


def network_of(address: str) -> str:
    """A client as every per-address bound counts it: IPv4 as it is, IPv6 by its /64 (one household)."""
    if ":" not in address:
        return address
    try:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    except ValueError:
        return address


TABS = Tabs(budget=BUDGET)  # every tab of this process, what the memory budget counts
