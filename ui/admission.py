"""Every visitor's share of the server: one account per visitor, one door in front of every route.

Calls wait in lines served in fair turns across visitors (`Turns`), bounded by one account
(`Visitors`); `Door` refuses what no bound lets in before a route reads it; `Outbox` sends large answers.
A visitor is a client address, or, inside a class, a student's seat (`unit_of`): a lecture hall
behind one school address is served as its students, not as one stranger.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import threading
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse, JSONResponse, Response

from core.process.memory import ADDRESS_SHARE, BUDGET, Budget
from core.serving.tabs import network_of
from core.view.options import ADDRESS_WORK, ANSWER_BYTES, MAX_QUERY, SEND_SECONDS, TAB_CALLS, WAITING_CALLS, WORK_BYTES

UNKNOWN = "unknown"  # the address of a call whose client the server was not told
PIECE = 256 * 2**10  # an answer larger than this goes in pieces of it, each once its reader took the last
AGAIN_SECONDS = 1.0  # how often a line whose calls all wait for their answers to be read looks again
# the routes whose calls wait in a line: the page's, a class's, the API's and a link's script
ADMITTED = ("/explorer/", "/gradio_api/queue/join", "/gradio_api/call/")


class Busy(Exception):
    """A call the account does not take: its HTTP status, a sentence, and seconds to wait (Retry-After)."""

    def __init__(self, status: int, sentence: str, retry: int) -> None:
        super().__init__(sentence)
        self.status, self.sentence, self.retry = status, sentence, retry


def visitor_of_request(request) -> str:
    """The visitor a request (starlette's or gradio's) counts as in every bound: its client's address, IPv6 by
    its /64; `UNKNOWN` when not told."""
    host = getattr(getattr(request, "client", None), "host", None)
    return network_of(host) if isinstance(host, str) and host else UNKNOWN


def unit_of(address: str, seat: str | None) -> str:
    """The visitor a call counts as in the turns and the account: its address, or its seat in a class
    (named within its address, so a seat is never another address's)."""
    return f"{address} seat {seat}" if seat else address


def work_of(size: int) -> float:
    """A call's work in short updates: 1, plus 1 per `WORK_BYTES` of its body (known before reading it)."""
    return 1 + size / WORK_BYTES


class Visitors:
    """The account: what every address has waiting, on every line, and what it has not yet read. `waiting`
    turns away only an address holding its share of the line: a flood never fills a bound that refuses others."""

    def __init__(self, waiting: int = WAITING_CALLS, address_work: float = ADDRESS_WORK, per_tab: int = TAB_CALLS,
                 answer_bytes: int = ANSWER_BYTES, send_seconds: float = SEND_SECONDS, budget: Budget = BUDGET) -> None:
        self.waiting, self.address_work, self.per_tab, self.answer_bytes = waiting, address_work, per_tab, answer_bytes
        self.send_seconds = send_seconds  # an answer whose reader takes nothing for this long is dropped (`Outbox`)
        self.answer_limit = budget.answer_limit  # read once: the budget's part for answers on their way
        self.lines: list[Turns] = []
        self._unread: Counter[str] = Counter()  # address -> bytes of its answers on their way
        self._lock = threading.Lock()

    def calls(self) -> list[Turn]:
        """Every call waiting now, on every line."""
        return [call for line in self.lines for call in line.waiting()]

    def refusal(self, unit: str, work: float, tab: str | None = None) -> Busy | None:
        """Why a call of `work` from visitor `unit` and `tab` (None: not known yet) may not wait; None if it may."""
        waiting = self.calls()
        if tab is not None and sum(call.tab == tab for call in waiting) >= self.per_tab:
            return Busy(429, f"This page already has {self.per_tab} calls waiting for the server, so this one "
                             "was not taken. Wait for their answers, then try again.", 5)
        mine = [call for call in waiting if call.unit == unit]
        held = sum(call.work for call in mine)
        if held > 0 and held + work > self.address_work:
            return Busy(429, f"Your address already has {held:,.0f} units of work waiting for the server (a short "
                             "update is 1, long text counts more), the most one address may have at once, so this "
                             "call was not taken. Try again in a few seconds.", 5)
        if len(waiting) >= self.waiting and len(mine) >= self.waiting / len({c.unit for c in waiting} | {unit}):
            return Busy(503, f"The server has {len(waiting):,} calls waiting from its visitors, as many as it "
                             f"takes at once, and {len(mine):,} of them come from your address, its share, so "
                             "this one was not taken. Try again in a minute.", 30)
        return None

    def may_answer(self, address: str) -> bool:
        """Whether a call of `address` may be computed now: its and everyone's unread answers fit their shares."""
        with self._lock:
            mine, everyone = self._unread[address], sum(self._unread.values())
        return mine < min(self.answer_bytes, self.answer_limit // ADDRESS_SHARE) and everyone < self.answer_limit

    @contextlib.contextmanager
    def answering(self, address: str, nbytes: int) -> Iterator[None]:
        """Count an answer of `nbytes` to `address` while it is on its way."""
        with self._lock:
            self._unread[address] += nbytes
        try:
            yield
        finally:
            with self._lock:
                self._unread -= Counter({address: nbytes})  # an address with nothing on its way is let go
            for line in self.lines:  # a call passed over for its unread answers may start now
                line.grant_soon()


VISITORS = Visitors()  # the process's one account, shared by every door


@dataclass(eq=False)
class Turn:
    """One call's place in a line: its visitor's (`unit`) turn; its `address` reads the answers."""

    address: str
    unit: str
    tab: str | None
    work: float
    start: float  # it finishes at its start plus its work
    order: int
    granted: asyncio.Future


def _place(turn: Turn) -> tuple[float, float, int]:
    return turn.start, turn.start + turn.work, turn.order


class Turns:
    """A line served `slots` at a time in start-time fair turns (a call starts at ``max(clock, its address's
    last finish)``), in the event loop, a visitor (`unit_of`) a share; an address with its share of
    answers unread is passed over."""

    PASS = 2.0  # how much heavier another page's call of the same address must be for a call to pass it

    def __init__(self, visitors: Visitors = VISITORS, slots: int = 1) -> None:
        self.visitors, self.slots = visitors, slots
        self.clock, self.running = 0.0, 0
        self.finish: dict[str, float] = {}  # visitor -> the finish of its latest call
        self._line: list[Turn] = []
        self._order = itertools.count()
        self._again: asyncio.TimerHandle | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once a call came
        visitors.lines.append(self)

    def waiting(self) -> list[Turn]:
        return list(self._line)

    def enter(self, address: str, tab: str | None, work: float, unit: str | None = None) -> Turn:
        """Join the line as visitor `unit` (None: `address`), or `Busy`. A call takes the turns of its
        visitor's latest calls from other pages `PASS` times heavier (not left behind a classmate's long
        calls); a page's own keep their order."""
        unit = unit or address
        refusal = self.visitors.refusal(unit, work, tab)
        if refusal is not None:
            raise refusal
        self.loop = asyncio.get_running_loop()
        start = max(self.clock, self.finish.get(unit, self.clock))
        self.finish[unit] = start + work
        passed = []  # the visitor's latest waiting calls this one goes ahead of, latest first
        for waiting in reversed([turn for turn in self._line if turn.unit == unit]):
            if tab is None or waiting.tab in (None, tab) or waiting.work < self.PASS * work:
                break
            passed.append(waiting)
        if passed:
            start = passed[-1].start  # the earliest turn it takes
            for waiting in passed:  # each moves back by this call's work, still in its own order
                self._line.remove(waiting)
                waiting.start += work
                bisect.insort(self._line, waiting, key=_place)
        turn = Turn(address, unit, tab, work, start, next(self._order), self.loop.create_future())
        bisect.insort(self._line, turn, key=_place)
        self._grant()
        return turn

    @contextlib.asynccontextmanager
    async def taken(self, turn: Turn) -> AsyncIterator[None]:
        """Wait for `turn`, then hold it for the block; cancelled, it leaves the line or gives its turn back."""
        try:
            await turn.granted
        except BaseException:
            if turn in self._line:
                self._line.remove(turn)
            elif turn.granted.done() and not turn.granted.cancelled():
                self._release()
            raise
        try:
            yield
        finally:
            self._release()

    def grant_soon(self) -> None:
        """Look at the line again from the server's loop (answers were read: from any thread)."""
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
                self.loop.call_soon_threadsafe(self._grant)

    def _release(self) -> None:
        self.running -= 1
        self._grant()

    def _look_again(self) -> None:
        self._again = None
        self._grant()

    def _grant(self) -> None:
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
            self.clock = max(self.clock, turn.start)
            if not self._line:  # an empty line starts afresh
                self.finish.clear()
            elif len(self.finish) > 4 * len(self._line) + 64:
                self.finish = {unit: f for unit, f in self.finish.items() if f > self.clock}
            turn.granted.set_result(None)


async def gone(receive) -> None:
    """Returns when the client has gone (for a request whose body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def unless_gone(request, work: Callable[[], object]):
    """`await work()`, cancelled the moment the request's client goes: then a 499, which nobody reads."""
    task = asyncio.ensure_future(work())
    left = asyncio.ensure_future(gone(request.receive))
    try:
        await asyncio.wait({task, left}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        left.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return Response(status_code=499)
    return task.result()


class Door:
    """ASGI middleware: a call no bound lets in is refused unread (a route would parse it first), the page's
    document is gzipped (gradio does only paths with an extension), and too long a query is a 414."""

    def __init__(self, app, visitors: Visitors = VISITORS) -> None:
        self.app, self.visitors = app, visitors
        self.gzip = GZipMiddleware(app, minimum_size=1000, compresslevel=6)

    async def __call__(self, scope, receive, send) -> None:
        app = self.app
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].rstrip("/") == "":
            app = TOO_LONG if len(scope.get("query_string", b"")) > MAX_QUERY else self.gzip
        elif scope["type"] == "http" and scope["method"] == "POST" and any(door in scope["path"] for door in ADMITTED):
            size = dict(scope.get("headers", ())).get(b"content-length", b"")
            refusal = self.visitors.refusal(visitor_of_request(HTTPConnection(scope)),
                                            work_of(int(size) if size.isdigit() else 0))
            if refusal is not None:
                said = {"error": refusal.sentence, "detail": refusal.sentence}
                app = JSONResponse(said, refusal.status, {"Retry-After": str(refusal.retry)})
        await app(scope, receive, send)


TOO_LONG = HTMLResponse(
    f"<!doctype html><title>Embedding Explorer</title><p>This link is too long: a link to a view of "
    f"Embedding Explorer is at most {MAX_QUERY:,} characters after the question mark. "
    f"<a href='./'>Open the explorer</a> and make the link again with its button.</p>", status_code=414)


class Outbox:
    """ASGI middleware: a large answer goes a `PIECE` at a time, counted until sent, and is dropped when its
    reader takes nothing for `send_seconds` (a page that never reads cannot grow the write buffers)."""

    def __init__(self, app, visitors: Visitors = VISITORS) -> None:
        self.app, self.visitors = app, visitors

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        address = visitor_of_request(HTTPConnection(scope))

        async def in_pieces(message) -> None:
            body = message.get("body", b"") if message["type"] == "http.response.body" else b""
            if len(body) <= PIECE:
                await send(message)
                return
            with self.visitors.answering(address, len(body)):
                for at in range(0, len(body), PIECE):
                    piece = {"type": "http.response.body", "body": body[at:at + PIECE],
                             "more_body": message.get("more_body", False) or at + PIECE < len(body)}
                    await asyncio.wait_for(send(piece), self.visitors.send_seconds)

        try:
            await self.app(scope, receive, in_pieces)
        except* OSError:  # unread (a TimeoutError), or its client left: the connection is closed, the answer incomplete
            pass
