"""Who may wait in gradio's queue, and in what order: a bounded line, fair across visitors.

Gradio's queue takes every call it is sent and serves each concurrency group first in, first
out, without a bound. So one stranger posting hundreds of `/gradio_api/call/embed` calls, each
from a session hash of its own, put every other visitor's update behind all of them, and could
refill the line at will (issue 21, "Queue flooding"; bench/public_space.py section 5 measures it).

`Admission` stands in front of the queue's `push` (installed once, where the page makes its
queue: `install`) and decides before gradio registers a call:

* **a bound on the whole line** (`QUEUE_WAITING` calls, every visitor together): past it a call
  is refused at once, 503 with a sentence. It is the last guard, for memory and for waits no
  one would sit through; the bounds below keep one visitor far from it;
* **a bound per client address, counted in work** (`QUEUE_ADDRESS_WORK`): past it a call is
  refused at once, 429 with a sentence. A call's work is what the line can know of it before
  any work is done, its text: 1, plus 1 per `QUEUE_WORK_CHARS` characters (`work_of`). An
  update's cost grows with its sentences (up to the table's positions, where the text is cut)
  and the table's width, so a few long calls use up an address's share as many short ones do.
  The bound is generous enough for a class of a hundred behind one school address, every page
  with an update or two waiting, and far below what a flood queues. An address with nothing
  waiting may always send one call, however long: text past `MAX_TEXT` is its handler's to
  refuse, in a sentence on the page, before any work;
* **a bound per tab** (`QUEUE_PER_TAB` calls waiting from one session hash), 429;
* **the newest replaces the older**: when a tab's live update (the "live" group, an event whose
  inputs are its widgets' whole values) arrives while an older call of the same event from the
  same tab still waits, the older is marked superseded. It keeps its place and gets its answer
  in order, as gradio's protocol wants, but its handler (`ui.events.update`) answers "no change"
  at once instead of computing a state the newer call replaces;
* **a queue that keeps going** (`Admission.send_message`): gradio keeps the messages of a
  bounded number of tabs, and a call whose tab was let go while it waited stopped the queue's
  loop for good; its messages are now dropped instead;
* **fair order** (`FairLine`): each group's line is served in turns across client addresses,
  weighted by work (start-time fair queueing). A visitor with nothing waiting goes ahead of
  every call of an address that already has its turn in hand, so a flood delays another
  visitor's update by at most one call per flooding address, not by the whole flood. Within
  one address a short call goes ahead of other tabs' much longer ones; a tab's own calls keep
  the order it sent them in.

Refusals are sentences a person can act on: what happened and what to do. The page shows the
429 ones as they are (gradio's client shows a join's `detail` for those codes) and its
own "busy, try again" for 503; an API client reads `detail` in the JSON answer.

Addresses are what the server sees: behind a trusted proxy, the forwarded address (uvicorn
rewrites the client from X-Forwarded-For for the peers in FORWARDED_ALLOW_IPS; behind a Space's
proxy, `ForwardedClient` below). IPv6 clients count by their /64 (`core.live.client_of`).
When every visitor shares one address (a proxy that is not trusted), fairness across addresses
has nothing to share out, and the address's work bound is what keeps a flood short.

A call that no bound would let in, whatever it carries (the line full, or its address's share
used up), is refused by `Door` before gradio reads its body or makes a session for its hash;
the rest is checked in `push`, before gradio's own awaits anything, so calls arriving in the
same instant may pass a bound by their number; no more. A refused call was never registered:
gradio holds nothing for it.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from fastapi import HTTPException, status
from starlette.responses import JSONResponse

from core.live import client_of as network_of
from core.options import QUEUE_ADDRESS_WORK, QUEUE_PER_TAB, QUEUE_WAITING, QUEUE_WORK_CHARS

LIVE = "live"  # the concurrency group of the page's live updates (ui.plane.LIVE)
TURN = "_explorer_turn"  # the attribute a waiting gradio Event carries its `Turn` in
SUPERSEDED = "explorer_superseded"  # set on a superseded call's request state (`superseded`)
UNKNOWN = "unknown"  # the address of a call whose client the server was not told


@dataclass(frozen=True)
class Turn:
    """A waiting call's place in fair order: it may start at virtual time `start` and its work
    takes it to `finish`; `address` and `work` are what the bounds count."""

    start: float
    finish: float
    address: str
    work: float


def client_of(request) -> str:
    """The client address a request came from, IPv6 by its /64; `UNKNOWN` when not told."""
    return address_of(getattr(getattr(request, "client", None), "host", None))


def address_of(host: object) -> str:
    """A client host as the bounds count it (`core.live.client_of`); `UNKNOWN` when not told."""
    return network_of(host) if isinstance(host, str) and host else UNKNOWN


def characters_of(data) -> int:
    """The characters of text a call carries: its string inputs, and strings in list inputs."""
    total = 0
    for value in data or ():
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, list | tuple):
            total += sum(len(item) for item in value if isinstance(item, str))
    return total


def work_of(data) -> float:
    """A call's work in short updates: 1, plus 1 per `QUEUE_WORK_CHARS` characters of its text."""
    return 1 + characters_of(data) / QUEUE_WORK_CHARS


def turn_of(event) -> Turn:
    found = getattr(event, TURN, None)
    if found is None:  # an event that entered before the line was made fair: counted, in no turn
        data = getattr(getattr(event, "data", None), "data", None)
        found = Turn(0.0, 0.0, client_of(getattr(event, "request", None)), work_of(data))
    return found


def superseded(request) -> bool:
    """Whether a newer call of the same event from the same tab replaced this one while it
    waited (`request`: the handler's gr.Request). Its handler answers "no change" at once."""
    state = getattr(request, "state", None)
    return bool(getattr(state, SUPERSEDED, False))


class FairLine(list):
    """One concurrency group's waiting calls, kept in fair order as gradio adds and takes them.

    Gradio appends a new call and takes the first (`get_events`: ``queue[0]``, then
    ``remove``); this list puts an appended call at its fair place instead of the end.
    Start-time fair queueing, with each client address a flow: a call may start at
    ``max(clock, the finish of its address's previous call)`` and finishes ``work`` later; the
    line is sorted by start, then finish, then arrival. `clock` is the start of the call taken
    last; once the line is empty every address starts afresh (its last call's finish would
    otherwise still lie ahead of the clock, behind a stranger's first call). An address with
    nothing in hand starts at the clock (at the head of the line's current round), and among
    calls that start together the lighter goes first; an address that sent much waits for its
    finish tags to come round, however many tabs it uses.

    Within one address (a class behind one school address, or every visitor behind a proxy the
    server does not trust), a call takes the turns of the address's waiting calls from other
    tabs that are at least `PASS` times heavier, and they move back by its work: a short
    update is not left behind a stranger's long calls from the same address. A tab's own calls
    are never passed, so they keep their order; only the address's own heavy calls wait longer.
    """

    PASS = 2.0  # how much heavier another tab's call must be for a call of the same address to pass it

    def __init__(self, events=()) -> None:
        super().__init__()
        self.clock = 0.0
        self.finish: dict[str, float] = {}  # address -> the finish of its latest call
        for event in events:
            self.append(event)

    def append(self, event) -> None:
        """Put `event` at its fair place (gradio calls this for every new call)."""
        data = getattr(getattr(event, "data", None), "data", None)
        address, work = client_of(getattr(event, "request", None)), work_of(data)
        start = max(self.clock, self.finish.get(address, self.clock))
        self.finish[address] = start + work
        passed = []  # the address's latest waiting calls this one goes ahead of, latest first
        for waiting in reversed(self):
            turn = turn_of(waiting)
            if turn.address != address:
                continue
            if waiting.session_hash == event.session_hash or turn.work < self.PASS * work:
                break
            passed.append(waiting)
        if passed:
            start = turn_of(passed[-1]).start  # the earliest turn it takes
            for waiting in passed:  # each moves back by this call's work, still in its own order
                super().remove(waiting)
                turn = turn_of(waiting)
                self._insert(waiting, Turn(turn.start + work, turn.finish + work, address, turn.work))
        self._insert(event, Turn(start, start + work, address, work))
        if len(self.finish) > 4 * len(self) + 64:  # forget addresses whose turns have all come round
            self.finish = {a: f for a, f in self.finish.items() if f > self.clock}

    def _insert(self, event, turn: Turn) -> None:
        setattr(event, TURN, turn)
        super().insert(bisect.bisect_right(self, (turn.start, turn.finish), key=_order), event)

    def remove(self, event) -> None:
        if self and self[0] is event:  # gradio takes the head: the line's time moves to its start
            self.clock = max(self.clock, turn_of(event).start)
        super().remove(event)
        if not self:  # the line emptied: a new round, in which no address is behind
            self.finish.clear()

    def place(self, event) -> int:
        """Where `event` stands in the line (0: next), or -1."""
        for i, waiting in enumerate(self):
            if waiting is event:
                return i
        return -1


def _order(event) -> tuple[float, float]:
    turn = turn_of(event)
    return (turn.start, turn.finish)


class Admission:
    """The bounds, and the hook into one gradio queue's `push` (see the module's docstring).

    Its numbers are attributes, so a test can lower them on the launched app's instance
    (``demo.admission``) instead of sending a flood.
    """

    def __init__(self, waiting: int = QUEUE_WAITING, address_work: float = QUEUE_ADDRESS_WORK,
                 per_tab: int = QUEUE_PER_TAB) -> None:
        self.waiting, self.address_work, self.per_tab = waiting, address_work, per_tab
        self.queue = None
        self.blocks = None
        self._push = None
        self.refused: dict[int, int] = {}  # HTTP status -> calls refused with it (for benchmarks)

    def attach(self, blocks) -> Admission:
        """Stand in front of `blocks`' queue (made by `blocks.queue(...)`): its `push` and
        `send_message` are ours."""
        self.blocks, self.queue = blocks, blocks._queue
        self._push, self._send = self.queue.push, self.queue.send_message
        self.queue.push, self.queue.send_message = self.push, self.send_message
        return self

    def send_message(self, event, message) -> None:
        """Gradio's, for a call whose tab's messages gradio still keeps.

        Gradio keeps the messages of its 2,000 newest tabs (`pending_messages_per_session`, a
        bounded cache) and raised KeyError for a call of an older tab still in line: in the
        loop that starts calls, which then stopped for good. A flood of tabs (each call from a
        hash of its own) stopped the whole app that way, every visitor's page answered "Queue
        is stopped" until a restart. Such a call's messages have no reader left to reach; they
        are dropped, and the queue goes on."""
        if event.session_hash in self.queue.pending_messages_per_session:
            self._send(event, message)

    def lines(self) -> dict[str, FairLine]:
        """Every group's line, each made fair the first time it is seen."""
        found = {}
        for concurrency_id, event_queue in self.queue.event_queue_per_concurrency_id.items():
            if not isinstance(event_queue.queue, FairLine):
                event_queue.queue = FairLine(event_queue.queue)
            found[concurrency_id] = event_queue.queue
        return found

    async def push(self, body, request, username):
        """Gradio's `Queue.push`, behind the bounds: refuses (raising the HTTP answer) or queues."""
        fn = self.blocks.fns.get(body.fn_index) if body.fn_index is not None else None
        if fn is None and body.fn_index is not None:  # gradio's own lookup raised KeyError: a 500
            self.refuse(status.HTTP_404_NOT_FOUND, f"This app has no event number {body.fn_index}; its endpoints "
                        "are listed at ?view=api.")
        if fn is None:  # gradio answers a missing function (a name to look up) its own way
            return await self._push(body=body, request=request, username=username)
        self.queue.create_event_queue_for_fn(fn)
        lines = self.lines()
        self.check(body, request, lines)
        queued, answer, state = await self._push(body=body, request=request, username=username)
        if queued:
            event = self.queue.event_ids_to_events.get(answer)
            line = lines.get(fn.concurrency_id)
            if event is not None and line is not None:
                self.supersede(line, event)
                at = line.place(event)
                if 0 <= at < len(line) - 1:  # put ahead of others: tell it, and those behind, their place
                    self.queue.broadcast_estimations(fn.concurrency_id, at)
        return queued, answer, state

    def check(self, body, request, lines: dict[str, FairLine]) -> None:
        """Raise the refusal for a call past a bound; return if it may wait."""
        waiting = [event for line in lines.values() for event in line]
        refusal = self.refusal(waiting, client_of(request), work_of(body.data), body.session_hash)
        if refusal is not None:
            self.refuse(*refusal)

    def refusal(self, waiting: list, address: str, work: float,
                session: str | None = None) -> tuple[int, str, int] | None:
        """(HTTP status, sentence, seconds to wait) for a call of `work` from `address` and tab
        `session` (None: not known yet), with `waiting` in line; None if it may wait too."""
        if len(waiting) >= self.waiting:
            return (status.HTTP_503_SERVICE_UNAVAILABLE,
                    f"The server has {len(waiting):,} calls waiting from its visitors, as many as it takes at "
                    "once, so this one was not taken. Try again in a minute.", 30)
        if session is not None and sum(event.session_hash == session for event in waiting) >= self.per_tab:
            return (status.HTTP_429_TOO_MANY_REQUESTS,
                    f"This page already has {self.per_tab} calls waiting for the server, so this one was not "
                    "taken. Wait for their answers, then try again.", 5)
        mine = sum(turn.work for turn in map(turn_of, waiting) if turn.address == address)
        if mine > 0 and mine + work > self.address_work:
            return (status.HTTP_429_TOO_MANY_REQUESTS,
                    f"Your address already has {mine:,.0f} units of work waiting for the server (a short update "
                    "is 1, long text counts more), the most one address may have at once, so this call was not "
                    "taken. Try again in a few seconds.", 5)
        return None

    def at_door(self, address: str) -> tuple[int, str, int] | None:
        """The refusal every call from `address` would meet now, whatever it carries (a call's work
        is at least 1); None if some call may still pass. Read by `Door` before the body is."""
        if self.queue is None:
            return None
        waiting = [event for line in self.lines().values() for event in line]
        return self.refusal(waiting, address, 1.0)

    def refuse(self, code: int, sentence: str, retry: int | None = None) -> None:
        self.refused[code] = self.refused.get(code, 0) + 1
        headers = None if retry is None else {"Retry-After": str(retry)}
        raise HTTPException(status_code=code, detail=sentence, headers=headers)

    @staticmethod
    def supersede(line: FairLine, event) -> None:
        """Mark the older waiting calls of `event`'s live event from the same tab as superseded."""
        fn = event.fn
        if fn.concurrency_id != LIVE or not fn.inputs:
            return  # an event without inputs (a toggle, a fetch) is not made redundant by a newer one
        for older in line:
            if older is not event and older.session_hash == event.session_hash and older.fn._id == fn._id:
                state = getattr(getattr(older, "request", None), "state", None)
                if state is not None:
                    setattr(state, SUPERSEDED, True)


JOINS = ("/gradio_api/queue/join", "/gradio_api/call/")  # the routes by which a call joins the queue


class Door:
    """ASGI middleware: a call that no bound would let in is refused before gradio reads it.

    Gradio's `/call/{api_name}` route reads and validates the body (two sentences: 20 KB of
    JSON) and makes a session for the call's hash (a copy of the page's whole configuration, on
    the server's event loop) before it calls `push`. A flood refused only there still cost all
    of that per call, and took the event loop from everyone. Here, when the line is full or the
    address has used its share (`Admission.at_door`), the call is answered at once from its
    address alone; the rest, and a call's own work and tab, are `Admission.push`'s to check.
    """

    def __init__(self, app, admission: Admission) -> None:
        self.app, self.admission = app, admission

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and any(
                route in scope["path"] for route in JOINS):
            client = scope.get("client")
            refusal = self.admission.at_door(address_of(client[0] if client else None))
            if refusal is not None:
                code, sentence, retry = refusal
                self.admission.refused[code] = self.admission.refused.get(code, 0) + 1
                answer = JSONResponse({"detail": sentence}, status_code=code, headers={"Retry-After": str(retry)})
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def install(blocks, admission: Admission | None = None) -> Admission:
    """Put `admission` (default: the bounds of `core.options`) in front of `blocks`' queue, once
    it is made (`blocks.queue(...)`); kept as ``blocks.admission``. Its `Door` goes in front of
    the app when it launches (`ui.page.Explorer.launch`)."""
    admission = (admission or Admission()).attach(blocks)
    blocks.admission = admission
    return admission


__all__ = ["Admission", "Door", "FairLine", "install", "superseded", "work_of"]


class ForwardedClient:
    """ASGI middleware: the client's address read from X-Forwarded-For, behind `hops` proxies.

    Every per-address bound (new tabs, memory, the queue) counts the address the server sees.
    Behind HAProxy on the same machine (`make class`), uvicorn already puts the forwarded address
    there, for the peers in FORWARDED_ALLOW_IPS (loopback by default). A Space's proxy reaches the
    app from internal addresses that change, and trusting every peer instead ("*") makes uvicorn
    take the leftmost entry, which the client writes itself: a flood could claim a new address per
    call. Here the entry `hops` places from the right is taken, the one the outermost of the
    trusted proxies appended: a client can put entries before it, never replace it. `hops` is
    `EXPLORER_PROXY_HOPS` (1 on a Space, where the app sets it; 0, off, elsewhere).
    """

    def __init__(self, app, hops: int = 0) -> None:
        self.app, self.hops = app, hops

    async def __call__(self, scope, receive, send) -> None:
        if self.hops > 0 and scope["type"] in ("http", "websocket"):
            entries = [entry.strip() for name, value in scope.get("headers", ())
                       if name == b"x-forwarded-for" for entry in value.decode("latin-1").split(",")]
            if len(entries) >= self.hops and entries[-self.hops]:
                scope = {**scope, "client": (entries[-self.hops], 0)}
        await self.app(scope, receive, send)
