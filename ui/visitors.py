"""Every visitor's share of the server, whichever door they come by: one account per address.

A visitor comes in by the page's own route (`ui.direct`), a class's routes (`ui.classroutes`,
which take the same turns) or gradio's queue (`ui.admission`: the API, the page's other events).
Each door keeps a line of waiting calls, and `Visitors`, the one account they all ask, reads
every line and counts the answers each address's pages have not yet read (`Outbox`, in front
of every route). Each line serves in fair turns across addresses, weighted by work
(`FairClock`): `Turns` for the direct line, `ui.admission.FairLine` for gradio's queue. The
account knows addresses, tabs and work, not transports, so one ASGI middleware could admit
every route the same way.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from core.process.memory import ADDRESS_SHARE, BUDGET, Budget
from core.serving.tabs import network_of
from core.view.options import ADDRESS_WORK, ANSWER_BYTES, SEND_SECONDS, TAB_CALLS, WAITING_CALLS, WORK_BYTES

UNKNOWN = "unknown"  # the address of a call whose client the server was not told
PIECE = 256 * 2**10  # an answer larger than this goes in pieces of it, each once its reader took the last
AGAIN_SECONDS = 1.0  # how often a line whose calls all wait for their answers to be read looks again


class Waiting(NamedTuple):
    """A call waiting in some line: who sent it and how much work it is."""

    address: str
    tab: str | None
    work: float


class Refusal(NamedTuple):
    """Why a call is not taken: its HTTP status, a sentence, and seconds to wait (Retry-After)."""

    status: int
    sentence: str
    retry: int


class Busy(Exception):
    """A call refused by the account, with its `refusal`."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.sentence)
        self.refusal = refusal


def visitor_of(host: object) -> str:
    """The visitor a client host counts as in every bound: its address, IPv6 by its /64
    (`network_of`); `UNKNOWN` when not told."""
    return network_of(host) if isinstance(host, str) and host else UNKNOWN


def visitor_of_request(request) -> str:
    """The visitor a request comes from (`visitor_of` its client's host)."""
    return visitor_of(getattr(getattr(request, "client", None), "host", None))


def work_of(size: int) -> float:
    """A call's work in short updates, from the bytes of its body: 1, plus 1 per `WORK_BYTES`.

    Its size is what a door knows of a call before reading it (Content-Length), so a call past
    its address's share is refused unread (`ui.admission.Door`); its text is most of it."""
    return 1 + size / WORK_BYTES


class Visitors:
    """The account: what every address has waiting, on every line, and what it has not yet read.

    Lines register what they hold (`line`); answers on their way are registered while they are
    sent (`answering`). Its numbers are attributes, so a test can lower them on the launched
    app's instance instead of sending a flood.

    Calls waiting are bounded per tab (`TAB_CALLS`), per address in work (`ADDRESS_WORK`, by a
    call's size: `work_of`) and in all (`WAITING_CALLS`, which turns away only an address that
    holds its share of the line already, so a flood never fills a bound that refuses others).
    An address holding `ANSWER_BYTES` of unread answers, or the budget's part for answers, has
    its next call wait (`may_answer`)."""

    def __init__(self, waiting: int = WAITING_CALLS, address_work: float = ADDRESS_WORK, per_tab: int = TAB_CALLS,
                 answer_bytes: int = ANSWER_BYTES, send_seconds: float = SEND_SECONDS, budget: Budget = BUDGET) -> None:
        self.waiting, self.address_work, self.per_tab, self.answer_bytes = waiting, address_work, per_tab, answer_bytes
        self.send_seconds = send_seconds  # an answer whose reader takes nothing for this long is dropped (`Outbox`)
        self.budget = budget
        self._lines: list[Callable[[], Iterable[Waiting]]] = []
        self._freed: list[Callable[[], None]] = []
        self._unread: Counter[str] = Counter()  # address -> bytes of its answers on their way
        # what other holders keep unread for an address (None: everyone): gradio's queue, its answers not yet taken
        self._kept: list[Callable[[str | None], int]] = []
        self._lock = threading.Lock()
        self.refused: Counter[int] = Counter()  # HTTP status -> calls refused with it (for benchmarks)

    def freed(self) -> None:
        """Tell the lines that answers were read or let go: a call passed over may start now."""
        for freed in self._freed:
            freed()

    def line(self, waiting: Callable[[], Iterable[Waiting]], freed: Callable[[], None] | None = None) -> None:
        """Count the calls `waiting()` lists; `freed()` is told when an address's answers are read
        (the line may start a call it passed over)."""
        self._lines.append(waiting)
        if freed is not None:
            self._freed.append(freed)

    def calls(self) -> list[Waiting]:
        """Every call waiting now, on every line."""
        return [call for waiting in self._lines for call in waiting()]

    def refusal(self, address: str, work: float, tab: str | None = None) -> Refusal | None:
        """Why a call of `work` from `address` and `tab` (None: not known yet) may not wait; None if it may."""
        waiting = self.calls()
        if tab is not None and sum(call.tab == tab for call in waiting) >= self.per_tab:
            return Refusal(429, f"This page already has {self.per_tab} calls waiting for the server, so this one "
                                "was not taken. Wait for their answers, then try again.", 5)
        mine = [call for call in waiting if call.address == address]
        held = sum(call.work for call in mine)
        if held > 0 and held + work > self.address_work:
            return Refusal(429, f"Your address already has {held:,.0f} units of work waiting for the server (a short "
                                "update is 1, long text counts more), the most one address may have at once, so this "
                                "call was not taken. Try again in a few seconds.", 5)
        if len(waiting) >= self.waiting:
            share = self.waiting / len({call.address for call in waiting} | {address})
            if len(mine) >= share:
                return Refusal(503, f"The server has {len(waiting):,} calls waiting from its visitors, as many as it "
                                    f"takes at once, and {len(mine):,} of them come from your address, its share, so "
                                    "this one was not taken. Try again in a minute.", 30)
        return None

    def refuse(self, refusal: Refusal) -> Refusal:
        self.refused[refusal.status] += 1
        return refusal

    # answers on their way

    @property
    def answer_share(self) -> int:
        """Bytes of unread answers past which an address's next call waits."""
        return min(self.answer_bytes, self.budget.answer_limit // ADDRESS_SHARE)

    def kept_by(self, holder: Callable[[str | None], int]) -> None:
        """Count the answers `holder(address)` keeps unread for `address` (None: everyone)."""
        self._kept.append(holder)

    def unread(self, address: str | None = None) -> int:
        """Bytes of answers made for `address`'s pages and not yet read (None: everyone's)."""
        with self._lock:
            sending = self._unread[address] if address is not None else sum(self._unread.values())
        return sending + sum(holder(address) for holder in self._kept)

    def may_answer(self, address: str) -> bool:
        """Whether a call of `address` may be computed now: its pages have read their answers but
        for less than its share, and everyone's unread answers fit the budget's part for them."""
        return self.unread(address) < self.answer_share and self.unread() < self.budget.answer_limit

    @contextlib.contextmanager
    def answering(self, address: str, nbytes: int) -> Iterator[None]:
        """Count an answer of `nbytes` to `address` while it is on its way."""
        with self._lock:
            self._unread[address] += nbytes
        try:
            yield
        finally:
            with self._lock:
                self._unread[address] -= nbytes
                if self._unread[address] <= 0:
                    del self._unread[address]
            self.freed()


# the process's one account, shared by every door
VISITORS = Visitors()


class FairClock:
    """Start-time fair tags for one line's calls: a call of `work` from an address may start at
    ``max(clock, the finish of that address's previous call)`` and finishes `work` later. The
    line serves by start, then finish; `clock` is the start of the call taken last, and once the
    line is empty every address starts afresh (its last finish would otherwise lie ahead)."""

    def __init__(self) -> None:
        self.clock = 0.0
        self.finish: dict[str, float] = {}  # address -> the finish of its latest call

    def tag(self, address: str, work: float) -> tuple[float, float]:
        start = max(self.clock, self.finish.get(address, self.clock))
        self.finish[address] = start + work
        return start, start + work

    def took(self, start: float, emptied: bool) -> None:
        """The call that starts at `start` was taken; `emptied`: none is left waiting."""
        self.clock = max(self.clock, start)
        if emptied:
            self.finish.clear()

    def forget(self, waiting: int) -> None:
        """Drop the addresses whose turns have all come round, once there are many (`waiting`: calls in line)."""
        if len(self.finish) > 4 * waiting + 64:
            self.finish = {address: f for address, f in self.finish.items() if f > self.clock}


@dataclass(eq=False)
class _Turn:
    address: str
    tab: str | None
    work: float
    start: float
    finish: float
    order: int
    granted: asyncio.Future


class Turns(FairClock):
    """A line of calls served `slots` at a time in fair turns across addresses, each waiting in the
    event loop (no thread held). A call whose address has its share of answers unread is passed
    over until they are read or dropped (`Visitors.may_answer`), so nothing is computed that
    would be held unread. On the page's own route a tab has one call waiting at most (a later
    change joins it, `ui.direct`), so a tab's calls need no order of their own."""

    def __init__(self, visitors: Visitors, slots: int = 1) -> None:
        super().__init__()
        self.visitors, self.slots = visitors, slots
        self.running = 0
        self._line: list[_Turn] = []
        self._order = itertools.count()
        self._again: asyncio.TimerHandle | None = None  # a look at the line passed over, due
        self._granting = False
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once a call came
        visitors.line(self.waiting, freed=self._grant)

    def waiting(self) -> list[Waiting]:
        return [Waiting(turn.address, turn.tab, turn.work) for turn in self._line]

    def __len__(self) -> int:
        return len(self._line)

    def enter(self, address: str, tab: str | None, work: float) -> _Turn:
        """Join the line (at once, in the event loop), or raise `Busy` past a bound of the account."""
        refusal = self.visitors.refusal(address, work, tab)
        if refusal is not None:
            raise Busy(self.visitors.refuse(refusal))
        self.loop = asyncio.get_running_loop()
        turn = _Turn(address, tab, work, *self.tag(address, work), next(self._order), self.loop.create_future())
        bisect.insort(self._line, turn, key=lambda t: (t.start, t.finish, t.order))
        self.forget(len(self._line))
        self._grant()
        return turn

    @contextlib.asynccontextmanager
    async def taken(self, turn: _Turn) -> AsyncIterator[None]:
        """Wait for `turn` (from `enter`), then hold it for the block."""
        try:
            await turn.granted
        except BaseException:  # cancelled (its client went away): out of the line, or its turn given back
            if turn in self._line:
                self._line.remove(turn)
            elif turn.granted.done() and not turn.granted.cancelled():
                self._release()
            raise
        try:
            yield
        finally:
            self._release()

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """Every slot taken for the block (tests make calls wait with it)."""
        self.running += self.slots
        try:
            yield
        finally:
            self.running -= self.slots
            self._grant()

    def _release(self) -> None:
        self.running -= 1
        self._grant()

    def _look_again(self) -> None:
        self._again = None
        self._grant()

    def _grant(self) -> None:
        if self._granting:  # told of answers let go while it looks (`may_answer`): it looks on anyway
            return
        self._granting = True
        try:
            while self.running < self.slots:
                turn = next((turn for turn in self._line if self.visitors.may_answer(turn.address)), None)
                if turn is None:
                    if self._line and self._again is None:  # answers may be let go with no one to say so
                        self._again = self.loop.call_later(AGAIN_SECONDS, self._look_again)
                    return
                self._line.remove(turn)
                if turn.granted.done():  # its caller went away meanwhile
                    continue
                self.running += 1
                self.took(turn.start, emptied=not self._line)
                turn.granted.set_result(None)
        finally:
            self._granting = False


class Unread(Exception):
    """An answer's reader took nothing of it for `SEND_SECONDS`."""


async def handed(send, piece: dict, visitors: Visitors) -> None:
    """`send(piece)` once the connection takes it; `Unread` when it has taken nothing for the
    account's `send_seconds` (read again each second, so a lowered bound applies at once)."""
    loop = asyncio.get_running_loop()
    sending, began = asyncio.ensure_future(send(piece)), loop.time()
    try:
        while not sending.done():
            left = visitors.send_seconds - (loop.time() - began)
            if left <= 0:
                raise Unread
            await asyncio.wait({sending}, timeout=min(left, 1.0))
        sending.result()
    finally:
        sending.cancel()


class Outbox:
    """ASGI middleware: every answer counted in its address's account while it is on its way.

    An answer larger than a `PIECE` is sent a piece at a time, each once the connection has taken
    the last (the server's write buffer holds a piece, not the answer again), and counted as
    unread until its last piece is gone. A reader that takes nothing for `SEND_SECONDS` has its
    answer dropped and its connection closed: a page that never reads cannot grow the server, and
    its address's next call waits meanwhile (`Visitors.may_answer`). Without it, the largest
    answer to a tab that never read would be held whole in the server's write buffer, as long as
    the socket stayed.
    """

    def __init__(self, app, visitors: Visitors = VISITORS) -> None:
        self.app, self.visitors = app, visitors

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        visitors = self.visitors
        client = scope.get("client")
        address = visitor_of(client[0] if client else None)

        async def in_pieces(message) -> None:
            body = message.get("body", b"") if message["type"] == "http.response.body" else b""
            if len(body) <= PIECE:
                await send(message)
                return
            more = message.get("more_body", False)
            with visitors.answering(address, len(body)):
                for at in range(0, len(body), PIECE):
                    piece = {"type": "http.response.body", "body": body[at:at + PIECE],
                             "more_body": more or at + PIECE < len(body)}
                    await handed(send, piece, visitors)

        try:
            await self.app(scope, receive, in_pieces)
        except* Unread:
            pass  # the connection is closed with the answer incomplete (its reader is told by the break)

