"""Who may wait in gradio's queue, and in what order: a bounded line, fair across visitors.

Gradio's queue takes every call it is sent and serves each group first come, first served,
without a bound: one stranger's flood of calls, each from a session hash of its own, put every
other visitor behind it. `Admission` stands in front of the queue (`install`) and asks the
process's one account (`ui.visitors.Visitors`: bounds per tab, per address and in all, answers
not yet read) before gradio registers a call; a refusal is a sentence (429 or 503, Retry-After)
for which gradio holds nothing. A tab's newer live update supersedes its older one still
waiting, and `FairLine` serves each group in fair turns across addresses. `Door` refuses, before
any route reads a body, a call no bound would let in; `ForwardedClient` reads the client's
address behind a Space's proxy. Gradio's queue is reached only through `ui.gradiointernals`.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from dataclasses import dataclass

from fastapi import HTTPException, status
from starlette.responses import JSONResponse

from ui import gradiointernals as internals
from ui.visitors import PIECE, VISITORS, FairClock, Refusal, Visitors, Waiting, visitor_of, visitor_of_request, work_of

LIVE = "live"  # the concurrency group of the page's live updates (ui.plane.LIVE)
TURN = "_explorer_turn"  # the attribute a waiting gradio Event carries its `Turn` in
SUPERSEDED = "explorer_superseded"  # set on a superseded call's request state (`superseded`)


@dataclass(frozen=True)
class Turn:
    """A waiting call's place in fair order: it may start at virtual time `start` and its work
    takes it to `finish`; `address` and `work` are what the bounds count."""

    start: float
    finish: float
    address: str
    work: float


@dataclass(frozen=True)
class Unread:
    """An answer gradio keeps for a tab until its stream takes it."""

    message: object
    size: int  # bytes, about (`answer_size`)
    since: float  # when it was made (time.monotonic)
    address: str


LET_GO = ("This answer was not read within the time the server keeps one, so it was let go to make room for "
          "others; call again.")


def answer_size(value, budget: int = 100_000) -> int:
    """About how many bytes `value` (an answer's output) takes as JSON: its text and numbers,
    looked at in at most `budget` pieces (a larger answer counts as it was found so far)."""
    size, stack = 0, [value]
    while stack and budget:
        budget -= 1
        item = stack.pop()
        if isinstance(item, str | bytes):
            size += len(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        else:
            size += 8
    return size




def characters_of(data) -> int:
    """The characters of text a call carries: its string inputs, and strings in list inputs."""
    total = 0
    for value in data or ():
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, list | tuple):
            total += sum(len(item) for item in value if isinstance(item, str))
    return total


def work_in(request, data) -> float:
    """A call's work (`ui.visitors.work_of`): from its body's size, as `Door` knew it before it was
    read, or, for a body sent in chunks, from the text it carries."""
    size = getattr(request, "headers", {}).get("content-length", "")
    return work_of(int(size) if size.isdigit() else characters_of(data))


def turn_of(event) -> Turn:
    found = getattr(event, TURN, None)
    if found is None:  # an event that entered before the line was made fair: counted, in no turn
        request = internals.event_request(event)
        found = Turn(0.0, 0.0, visitor_of_request(request), work_in(request, internals.event_inputs(event)))
    return found


def superseded(request) -> bool:
    """Whether a newer call of the same event from the same tab replaced this one while it
    waited (`request`: the handler's gr.Request). Its handler answers "no change" at once."""
    state = getattr(request, "state", None)
    return bool(getattr(state, SUPERSEDED, False))


class FairLine(FairClock, list):
    """One concurrency group's waiting calls, kept in fair order as gradio adds and takes them.

    Gradio appends a new call and takes the first (`get_events`: ``queue[0]``, then
    ``remove``); this list puts an appended call at its fair place instead of the end: start-time
    fair queueing across client addresses (`ui.visitors.FairClock`), sorted by start, then
    finish, then arrival, so an address that sent much waits for its finish tags to come round,
    however many tabs it uses, and one with nothing in hand goes to the head of the round.

    Within one address (a class behind one school address, or every visitor behind a proxy the
    server does not trust), a call takes the turns of the address's waiting calls from other
    tabs that are at least `PASS` times heavier, and they move back by its work: a short
    update is not left behind a stranger's long calls from the same address. A tab's own calls
    are never passed, so they keep their order; only the address's own heavy calls wait longer.
    """

    PASS = 2.0  # how much heavier another tab's call must be for a call of the same address to pass it

    def __init__(self, events=()) -> None:
        list.__init__(self)
        FairClock.__init__(self)
        for event in events:
            self.append(event)

    def append(self, event) -> None:
        """Put `event` at its fair place (gradio calls this for every new call)."""
        request = internals.event_request(event)
        address, work = visitor_of_request(request), work_in(request, internals.event_inputs(event))
        start, _ = self.tag(address, work)
        passed = []  # the address's latest waiting calls this one goes ahead of, latest first
        for waiting in reversed(self):
            turn = turn_of(waiting)
            if turn.address != address:
                continue
            if internals.event_tab(waiting) == internals.event_tab(event) or turn.work < self.PASS * work:
                break
            passed.append(waiting)
        if passed:
            start = turn_of(passed[-1]).start  # the earliest turn it takes
            for waiting in passed:  # each moves back by this call's work, still in its own order
                super().remove(waiting)
                turn = turn_of(waiting)
                self._insert(waiting, Turn(turn.start + work, turn.finish + work, address, turn.work))
        self._insert(event, Turn(start, start + work, address, work))
        self.forget(len(self))

    def _insert(self, event, turn: Turn) -> None:
        setattr(event, TURN, turn)
        super().insert(bisect.bisect_right(self, (turn.start, turn.finish), key=_order), event)

    def remove(self, event) -> None:
        head = bool(self) and self[0] is event  # gradio takes the head: the line's time moves to its start
        super().remove(event)
        self.took(turn_of(event).start if head else self.clock, emptied=not self)

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
    """The hook into one gradio queue (see the module's docstring): its `push` and `send`
    stand in for gradio's, asking the process's account (`ui.visitors.VISITORS`) for every call."""

    def __init__(self, visitors: Visitors = VISITORS) -> None:
        self.visitors = visitors
        self.queue: internals.Queue | None = None
        self._push = self._send = None
        self._answers: dict[str, list[Unread]] = {}  # a tab's answers gradio keeps for it, counted as unread
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once a call came

    def attach(self, blocks) -> Admission:
        """Stand in front of `blocks`' queue (made by `blocks.queue(...)`): calls join it through
        `push`, answers leave through `send`, and its lines are counted in the account."""
        self.queue = internals.Queue(blocks)
        self._push, self._send = self.queue.intercept(self.push, self.send)
        self.visitors.line(self.waiting)
        self.visitors.kept_by(self.unread)
        return self

    def waiting(self) -> list[Waiting]:
        """The calls waiting in gradio's queue, as the account counts them."""
        return [Waiting(turn.address, internals.event_tab(event), turn.work)
                for line in self.lines().values() for event in line for turn in (turn_of(event),)]

    def send(self, event, message) -> None:
        """Gradio's, for a call whose tab's messages gradio still keeps; an answer is counted as
        unread in its address's account until its tab's stream takes it (`unread`).

        Gradio keeps the messages of its newest tabs only (a bounded cache) and raised KeyError
        for a call of an older tab still in line: in the loop that starts calls, which then
        stopped for good, every visitor's page answered "Queue is stopped" until a restart.
        Such a call's messages have no reader left to reach; they are dropped, and the queue
        goes on."""
        tab = internals.event_tab(event)
        if not self.queue.keeps(tab):
            return
        self._send(event, message)
        size = answer_size(internals.message_output(message))
        if size > PIECE and self.loop is not None:  # an answer worth counting: a keystroke's is a few kilobytes
            self._answers.setdefault(tab, []).append(
                Unread(message, size, time.monotonic(), visitor_of_request(internals.event_request(event))))
            # looked at again once it may be let go, whoever calls meanwhile (in the server's loop: gradio
            # may send a message from a handler's thread)
            self.loop.call_soon_threadsafe(self.loop.call_later, self.visitors.send_seconds + 0.5, self.unread)

    def unread(self, address: str | None = None) -> int:
        """Bytes of answers gradio keeps for `address`'s tabs (None: everyone's) that no stream has
        taken yet; one kept longer than the account's `send_seconds` is let go, its tab told so
        in a sentence if it ever reads it (a POST to `/call/` whose result is never fetched held
        its answer until 2,000 newer tabs came)."""
        now, total, freed = time.monotonic(), 0, False
        for session, answers in list(self._answers.items()):
            if address is not None and answers[0].address != address:
                continue
            unsent = self.queue.unsent(session)
            kept = []
            for answer in answers:
                if id(answer.message) not in unsent:
                    continue  # its stream took it (and `ui.visitors.Outbox` counts it on its way)
                if now - answer.since > self.visitors.send_seconds:
                    internals.fail_message(answer.message, LET_GO)
                    freed = True
                    continue
                kept.append(answer)
                total += answer.size
            if kept:
                self._answers[session] = kept
            else:
                del self._answers[session]
        if freed:
            self.visitors.freed()
        return total

    def lines(self) -> dict[str, FairLine]:
        """Every group's line, each made fair the first time it is seen."""
        return self.queue.lines(FairLine)

    async def push(self, body, request, username):
        """Gradio's `Queue.push`, behind the account: refuses (raising the HTTP answer) or queues."""
        self.loop = asyncio.get_running_loop()
        fn_index, tab, data = internals.joining(body)
        fn = self.queue.function(fn_index)
        if fn is None and fn_index is not None:  # gradio's own lookup raised KeyError: a 500
            self.refuse(Refusal(status.HTTP_404_NOT_FOUND, f"This app has no event number {fn_index}; its "
                                "endpoints are listed at ?view=api.", 0))
        if fn is None:  # gradio answers a missing function (a name to look up) its own way
            return await self._push(body=body, request=request, username=username)
        self.queue.open_line(fn)
        lines = self.lines()
        address = visitor_of_request(request)
        refusal = self.visitors.refusal(address, work_in(request, data), tab)
        if refusal is None and not self.visitors.may_answer(address):
            refusal = unread(self.visitors, address)
        if refusal is not None:
            self.refuse(self.visitors.refuse(refusal))
        queued, answer, state = await self._push(body=body, request=request, username=username)
        if queued:
            event = self.queue.event(answer)
            line = lines.get(internals.function_group(fn))
            if event is not None and line is not None:
                self.supersede(line, event)
                at = line.place(event)
                if 0 <= at < len(line) - 1:  # put ahead of others: tell it, and those behind, their place
                    self.queue.tell_places(internals.function_group(fn), at)
        return queued, answer, state

    @staticmethod
    def refuse(refusal: Refusal) -> None:
        headers = {"Retry-After": str(refusal.retry)} if refusal.retry else None
        raise HTTPException(status_code=refusal.status, detail=refusal.sentence, headers=headers)

    @staticmethod
    def supersede(line: FairLine, event) -> None:
        """Mark the older waiting calls of `event`'s live event from the same tab as superseded."""
        fn, tab = internals.event_function(event), internals.event_tab(event)
        if internals.function_group(fn) != LIVE or not internals.takes_inputs(fn):
            return  # an event without inputs (a toggle, a fetch) is not made redundant by a newer one
        for older in line:
            if older is not event and internals.event_tab(older) == tab \
                    and internals.same_function(internals.event_function(older), fn):
                state = getattr(internals.event_request(older), "state", None)
                if state is not None:
                    setattr(state, SUPERSEDED, True)


def unread(visitors: Visitors, address: str) -> Refusal:
    """The refusal of a call whose address's pages have not read their share of answers."""
    return Refusal(status.HTTP_429_TOO_MANY_REQUESTS,
                   f"Your address's pages have {visitors.unread(address) / 2**20:,.1f} MiB of answers from the server "
                   "they have not read yet, the most one address may have, so this call was not taken. Try again "
                   "in a few seconds.", 5)


JOINS = ("/gradio_api/queue/join", "/gradio_api/call/")  # the routes by which a call joins gradio's queue
# the page's own routes that take a turn (ui/direct.py, ui/classroutes.py): their answers are JSON with "error"
TURNS = ("/explorer/live", "/explorer/class/lead", "/explorer/class/follow")
POLLS = "/explorer/class/poll/"  # a round of answers' routes (ui/pollroutes.py): each takes a turn too


class Door:
    """ASGI middleware: a call that no bound would let in is refused before any route reads it.

    Gradio's `/call/{api_name}` route reads and validates the body (two sentences: 20 KB of
    JSON) and makes a session for the call's hash (a copy of the page's whole configuration, on
    the server's event loop) before it calls `push`; the page's own route reads and parses its
    body too. A flood refused only there still cost all of that per call, and took the event
    loop from everyone. Here a call is asked of the account by its address and its work, which
    its size gives (`ui.visitors.work_of`: Content-Length), and past a bound answered at once,
    unread; its tab is each door's to ask about once the body is read.
    """

    def __init__(self, app, visitors: Visitors = VISITORS) -> None:
        self.app, self.visitors = app, visitors

    async def __call__(self, scope, receive, send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" and scope["method"] == "POST" else ""
        queue, turn = any(route in path for route in JOINS), path.endswith(TURNS) or POLLS in path
        if queue or turn:
            client = scope.get("client")
            size = dict(scope.get("headers", ())).get(b"content-length", b"")
            refusal = self.visitors.refusal(visitor_of(client[0] if client else None),
                                            work_of(int(size) if size.isdigit() else 0))
            if refusal is not None:
                self.visitors.refuse(refusal)
                said = {"detail": refusal.sentence} if queue else {"error": refusal.sentence}
                answer = JSONResponse(said, status_code=refusal.status, headers={"Retry-After": str(refusal.retry)})
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def install(blocks, admission: Admission | None = None) -> Admission:
    """Put `admission` (default: one asking the process's account) in front of `blocks`' queue,
    once it is made (`blocks.queue(...)`); kept as ``blocks.admission``. `Door` goes in front of
    the app when it launches (`ui.page.Explorer.launch`)."""
    admission = (admission or Admission()).attach(blocks)
    blocks.admission = admission
    return admission


__all__ = ["Admission", "Door", "FairLine", "install", "superseded"]


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
