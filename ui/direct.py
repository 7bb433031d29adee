"""The page's own route: every change a person makes to the view, straight to the tab's state.

Through gradio's queue a keystroke costs more than the explorer's work: a join, an event
stream, a position estimate to every waiting visitor, and each output processed by gradio in
the browser before Plotly draws. So the page's script (assets/explorer.js) sends the change
with one POST to a route of the app, `/explorer/live` (`Direct.route`), and draws the main
plane (`#embed-plot`, a `gr.HTML`) with Plotly itself. The call goes through `ui.events.update`
and `core.serving.tabs.Tab.apply` like every event, and answers with values by element id
(`Direct.answered`): nothing the page does needs a trip through the queue, from its opening to
its work (a refit, an export, a training whose curve streams: `Direct.work`, `Direct.stream`).

A route of the app, not a gradio server function: the same keystrokes cost the server less CPU
through it, and gradio's `/component_server` makes a session for any hash it is sent. The page
names its tab by the unguessable key the server issued it (`ui.channels.Channel.key`).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from core.view import share, tour
from core.view.fields import TABLES
from core.view.options import MAX_TEXT, Refused
from core.view.state import FIELDS, View
from ui import events
from ui.assets import EXAMPLES
from ui.channels import MAX_KEY
from ui.visitors import UNKNOWN, VISITORS, Busy, Turns, Visitors, visitor_of_request, work_of

PATH = "/explorer/live"  # the route, under the app's root (assets/explorer.js calls it relative to the page)
SLOTS = 1  # direct calls computing at once: in one interpreter a second thread only adds contention
TABLE_SLOTS = 2  # changes of the tables computing at once, beside the keystrokes (as gradio's heavy group did)
# what a direct call may change, and the type each value must have (as a sentence names it)
CHANGES = {"sentence_a": (str, "text"), "sentence_b": (str, "text"), "token": (int, "a whole number or null"),
           "narrow": (bool, "true or false"),  # the page's screen turned a phone's, or turned back
           "panel": (str, "text"), "shown": (str, "text"),  # a tab opened (each checked by `View.with_`)
           "example": (int, "a whole number"),  # an example pair clicked: its place in EXAMPLES
           "move": (int, "a whole number"),  # the tour's Next or Previous: a whole view, untrained (tour.moved)
           "back": (object, ""),  # Back or Forward landed on this address of the visit (its query string)
           # the page's actions on the view (ACTIONS): true; flip false is two presses that cancel
           "flip": (bool, "true or false"), "listing": (bool, "true"), "reset": (bool, "true"),
           # a class's answers changed (the version its stream said): the plane is drawn again if its words did
           "poll": (int, "a whole number"),
           # the page's work on its tab beyond a change of the view (`Direct.work`: each panel names its own)
           "refit": (bool, "true"), "link": (str, "the page's address"), "export": (bool, "true"),
           "picker": (bool, "true"),
           "train": (dict, "an object of steps and corpus")}  # answered as it goes (`Direct.stream`)
# a keystroke is computed on the event loop when its tab's last call took at most this much CPU
# (a keystroke on a 128-token pair fits well within it), and its text grew by at most
# INLINE_GROWTH characters
INLINE_SECONDS = 0.025
INLINE_GROWTH = 64
# the plane's settings the page sets through this route: each redraws the plane alone (no tables
# change, nothing heavy is fitted), and each value is checked by its field's kind as the view is built
SETTINGS = ("labels", "arrows", "shift", "groups", "background", "k", "search", "regex", "dims", "presenter",
            "listing_seed", "listing_bug", "lookup_sentence", "lookup_dim", "lookup_grad",  # and the documents' inputs
            "answers")  # a class's words shown
# settings that build tables or fit a plane (seconds, the first time): computed in a lane of their
# own (`Direct.tables`), so nobody's keystrokes wait behind them
TABLE_SETTINGS = frozenset({*(name for name, declared in FIELDS.items() if TABLES in declared.redraws), "basis"})
CHANGES.update({name: (object, "") for name in (*SETTINGS, *TABLE_SETTINGS)})
# actions whose change is the server's to compute: (the change, what becomes of the tables, whether it
# builds tables and so takes the tables' lane); what else the call carries is applied first
ACTIONS = {"flip": (View.flipped, None, False),
           "listing": (View.on_listing_layer, None, True),
           "reset": (lambda view: view, lambda session: session.reset(), True)}
# checked where they are read, each with its own sentence: a setting by its field's kind, an address as a link
CHECKED_LATER = frozenset({*SETTINGS, *TABLE_SETTINGS, "back"})
TRUE_OR_NOTHING = ("listing", "reset", "refit", "export", "picker")  # actions: sent as true, or not at all
WORK_SLOTS = 16  # the page's work computing at once (each mostly waits for the heavy pool), as gradio's heavy group did
MAX_ADDRESS = 2048  # characters of the page's own address, which a link is made of
TYPED = frozenset({"sentence_a", "sentence_b"})

MAX_BODY = 8 * MAX_TEXT + 4096  # bytes: two sentences at the limit, JSON-escaped, and the rest


class Direct:
    """The page's direct calls to one page's tabs, with their bounds.

    A call waits for its turn in the event loop (no thread is held while it waits), then
    computes, `slots` at a time: a quick keystroke on the event loop itself, anything else on a
    worker thread (`quick`).

    Bounds: the calls compute one at a time (one interpreter: a second computing thread only
    contends with the first for its lock), in fair turns across client addresses, weighted by
    work (`ui.visitors.Turns`), so one address's many tabs cannot hold another student's
    keystrokes (bench/public_space.py measures it); what may wait is the process's one
    account's to say (`ui.visitors`: per address, per tab and in all, over every door), past
    which a call is refused at once with a sentence; a call whose address's pages have not read
    their share of answers waits until they do; a tab's older call still waiting when a newer
    one comes is skipped; a body is at most `MAX_BODY`.
    """

    def __init__(self, page, slots: int = SLOTS, visitors: Visitors = VISITORS) -> None:
        self.page = page
        self.turns = Turns(visitors, slots)
        self.tables = Turns(visitors, TABLE_SLOTS)  # the lane of changes that build tables (TABLE_SETTINGS)
        self.working = Turns(visitors, WORK_SLOTS)  # the lane of the page's work (`work`)
        self.works: dict[str, Callable] = {}  # the page's work by name: tab, what was sent -> {component: value}
        self.streams: dict[str, Callable] = {}  # work answered as it goes: tab, what was sent -> its answers
        self.opens: Callable | None = None  # a page opening: (session, host) -> its tab; (tab, link, narrow) -> values
        self.calls, self.seconds = 0, 0.0  # calls computed and their seconds computing
        self._threads: dict[int, anyio.CapacityLimiter] = {}  # a lane's threads, made in the server's event loop

    async def answer(self, sent: object, address: str = UNKNOWN, work: float = 1.0, host: str | None = None) -> dict:
        """The answer to one call of `work` (`ui.visitors.work_of`) from `address`: the values the
        page writes, or a sentence saying why not.

        A keystroke rides on the tab's call still waiting, if there is one: the call's change is
        read when its turn comes, and a later change of the same kind (what a person types,
        clicks or opens, not a tour step or an example) is merged into it and answered at once,
        `{"merged": true}`; the waiting call's answer shows both. The page sends a change as it
        is made while one call waits (assets/explorer.js), so a key typed while a class's turns
        go round is drawn at the end of the round it was typed in, not after a whole round of
        its own (bench/lecture.py measures the wait).
        """
        if isinstance(sent, dict) and "open" in sent and "key" not in sent:  # a page opening: it has no key yet
            return await self.opened(sent["open"], address, work, host)
        try:
            key, changes, asked = read(sent)
            tab, channel = events.CHANNELS.by_key(key)
        except Refused as error:
            return {"error": str(error)}
        if "move" in changes:  # a tour step replaces the whole view: what else was typed meanwhile goes with it
            move = changes["move"]
            return await self.turn(tab, lambda: self.show(tab, lambda view: tour.moved(view, move),
                                                          tables=lambda session: session.restart()),
                                   address=address, work=work, channel=channel)
        streamed = changes.keys() & self.streams.keys()
        if streamed:  # work answered as it goes, alone: what it writes, step by step
            if len(changes) > 1:
                return {"error": f"{', '.join(sorted(streamed))} is sent alone, with nothing else in the update."}
            name = streamed.pop()
            return Streamed(self.streams[name](tab, changes[name]))
        if changes.keys() & self.works.keys():  # work: alone, after what else the call changes
            return await self.turn(tab, lambda: self.worked(tab, changes), address=address, work=work,
                                   channel=channel, lane=self.working)
        acted = [name for name in ACTIONS if changes.get(name)]
        if acted or changes.get("flip") is False:  # an action: alone, its change the server's to compute
            return await self.turn(tab, lambda: self.act(tab, changes), address=address, work=work, channel=channel,
                                   lane=self.tables if any(ACTIONS[name][2] for name in acted) else None)
        if "back" in changes:  # an address of this visit: its view, read as a link, its tables kept where they agree
            try:
                link = share.from_address(changes["back"])
            except Refused as error:
                return {"error": str(error)}
            return await self.turn(tab, lambda: self.show(tab, link.view.seen_as, notes=link.notes, built=True),
                                   address=address, work=work, channel=channel, lane=self.tables)
        if changes.keys() & TABLE_SETTINGS:  # tables are built: alone, in their own lane, never skipped
            return await self.turn(tab, lambda: self.apply(tab, changes, asked, tables=True), address=address,
                                   work=work, channel=channel, lane=self.tables)
        if set(asked) != set(changes):  # an example pair: its sentences are the server's to write
            return await self.turn(tab, lambda: self.apply(tab, changes, asked), address=address, work=work,
                                   channel=channel)
        if channel.waiting is not None:  # the page's call still waiting takes this change too
            channel.waiting.update(changes)
            return {"merged": True}
        channel.waiting = waiting = dict(changes)

        def begin() -> None:  # its turn came: what it computes is what it holds now
            if channel.waiting is waiting:
                channel.waiting = None

        try:
            return await self.turn(tab, lambda: self.apply(tab, waiting, tuple(waiting)), begin=begin,
                                   quick=lambda: self.quick(tab, channel, waiting), address=address, work=work,
                                   channel=channel)
        finally:
            begin()  # refused, or skipped for a newer call: nothing more joins it

    @staticmethod
    def quick(tab, channel, change: dict) -> bool:
        """Whether `change` may be computed on the event loop: a keystroke (the sentences alone)
        whose tab's last call was quick (INLINE_SECONDS of CPU), whose text grew as a typist's
        does (not a paste), whose tables are at hand (not parked), and which is in no class (its
        change may write to the class's store, which may be a Redis server: I/O the loop must not
        wait on).

        Handing a keystroke to a thread costs the server CPU beyond the explorer's own work for
        it, a sizeable share of that work: the hand-over and back, and the interpreter's lock
        passed to and fro between the thread and the loop as the call's bytes come and go,
        enough to make it dearer than an echo through gradio's queue (`python -m
        bench.server_cpu` measures the three side by side). A call that may take long (a paste,
        a tab, a click's neighbours, a tab whose last call was slow or whose tables must be
        rebuilt) or may wait (a tab in a class, or one another thread holds) still goes to the
        thread, so the loop never stops for long."""
        if not change.keys() <= TYPED or channel.computed > INLINE_SECONDS or tab.parked or tab.member is not None:
            return False
        return all(len(change[name]) <= len(getattr(tab.view, name)) + INLINE_GROWTH for name in change)

    async def turn(self, tab, compute: Callable[[], dict], begin: Callable[[], None] | None = None,
                   quick: Callable[[], bool] | None = None, address: str | None = None, work: float = 1.0,
                   channel=None, lane: Turns | None = None) -> dict:
        """`compute()`'s answer, computed in this page's turn, within the account's bounds (a
        class's follow and lead calls take the same turns, `ui.classroutes`); a call of `work`
        from `address` (by default the address that opened the tab). `begin()` runs in the event
        loop as the turn starts; then `compute` runs right there if `quick()` says it may and no
        other thread holds the tab, else on a worker thread."""
        lane = self.turns if lane is None else lane  # (a lane with no call waiting is empty, and falsy)
        threads = self._threads.get(id(lane))
        if threads is None:
            threads = self._threads[id(lane)] = anyio.CapacityLimiter(lane.slots)
        channel = channel or events.CHANNELS.of(tab)
        try:
            turn = lane.enter(address or tab.client or UNKNOWN, channel.key, work)
        except Busy as busy:
            return {"error": str(busy)}
        skippable = lane is self.turns  # a change of the tables is never skipped for a keystroke
        if skippable:
            channel.latest += 1
        mine = channel.latest
        async with lane.taken(turn):
            if skippable and channel.latest != mine:  # a newer call of this page is waiting: it answers instead
                return {"skipped": True}
            if begin is not None:
                begin()
            if quick is not None and quick() and tab.lock.acquire(blocking=False):
                try:
                    return self.timed(channel, compute)
                finally:
                    tab.lock.release()
            return await anyio.to_thread.run_sync(self.timed, channel, compute, limiter=threads)

    @staticmethod
    def timed(channel, work: Callable[[], dict]) -> dict:
        """`work()`, its CPU time kept as the channel's `computed` (what the thread spent, however
        long it waited for the interpreter's lock)."""
        began = time.thread_time()
        try:
            return work()
        finally:
            channel.computed = time.thread_time() - began

    def apply(self, tab, changes: dict, asked: tuple[str, ...] | None = None, tables: bool = False) -> dict:
        """Apply the change to the tab (in its turn: `turn`) and say what the page writes. `asked`:
        the fields whose widgets show the change already (all of them, unless said). `tables`: the
        change may build tables, which a large random layer's are first, in the heavy pool."""
        if tables:
            events.built_first(tab, lambda view: view.with_(**changes))
        return self.answered(lambda: events.update(
            self.page, None, lambda view: view.with_(**changes), asked=tuple(changes) if asked is None else asked,
            outputs=self.everything, tab=tab, direct=True))

    def act(self, tab, changes: dict) -> dict:
        """The page's actions in `changes` (ACTIONS), after its other changes (in its turn)."""
        values = {name: value for name, value in changes.items() if name not in ACTIONS}
        acted = [ACTIONS[name] for name in ACTIONS if changes.get(name)]

        def change(view: View) -> View:
            view = view.with_(**values)
            for act, _, _ in acted:
                view = act(view)
            return view

        tables = next((tables for _, tables, _ in acted if tables is not None), None)
        if any(heavy for _, _, heavy in acted):
            events.built_first(tab, change)
        return self.answered(lambda: events.update(self.page, None, change, tables=tables, asked=tuple(values),
                                                   outputs=self.everything, tab=tab, direct=True))

    def work(self, name: str, handler: Callable) -> None:
        """Answer `{name: value}` with `handler(tab, value)`: the page's work beyond a change of the
        view (a refit, a link, an export), which returns what it writes, `{component: value}`."""
        self.works[name] = handler

    def opening(self, tab_for: Callable, show: Callable) -> None:
        """Answer a page opening, `{"open": {"session", "query", "narrow"}}`: `tab_for(session,
        host)` makes its tab (or raises `Refused`), `show(tab, query, narrow)` the values of the
        view its link describes, the page's key among them (`#address`)."""
        self.opens = (tab_for, show)

    async def opened(self, sent: object, address: str, work: float, host: str | None) -> dict:
        """The answer to a page opening (`opening`), in the tables' lane: a link may build tables."""
        tab_for, show = self.opens
        try:
            session, query, narrow = read_opening(sent)
            tab = tab_for(session, host)
        except Refused as error:
            return {"error": str(error)}
        return await self.turn(tab, lambda: {"values": self.values_of(show(tab, query, narrow))}, address=address,
                               work=work, lane=self.tables)

    def stream(self, name: str, handler: Callable) -> None:
        """Answer `{name: value}` as it goes: `handler(tab, value)` is an async generator of what
        the page writes, `{component: value}` a step (a training's curve); each step is one line
        of the answer (`route`). It stops when the page goes."""
        self.streams[name] = handler

    def worked(self, tab, changes: dict) -> dict:
        """The call's changes of the view, then its work, in the order the page's script sent
        them (in its turn): their values together, the work's last."""
        values = {name: value for name, value in changes.items() if name not in self.works}
        if any(values.get(name) is not None for name in ACTIONS):
            answer = self.act(tab, values)
        else:
            answer = self.apply(tab, values, tables=bool(values.keys() & TABLE_SETTINGS)) if values else {"values": {}}
        for name in [name for name in changes if name in self.works]:
            answer["values"].update(self.values_of(self.works[name](tab, changes[name])))
        return answer

    def values_of(self, out: dict) -> dict:
        """`{component: value}` as the page reads it: by element id, as its script or gradio's
        browser code takes it; a component left as it is (`gr.skip()`) is not named."""
        own = set(self.page.direct_outputs)
        return {component.elem_id: value if component in own else events.for_browser(component, value)
                for component, value in out.items() if not events.skipped(value)}

    def show(self, tab, change: Callable[[View], View], notes: tuple[str, ...] = (), tables=None,
             built: bool = False) -> dict:
        """Show the tab a whole view, as a link would (in its turn, on a worker thread): any component may change.
        `tables`: what becomes of the session's tables (a tour step restarts them untrained); `built`:
        a large random layer the view asks for is built first, in the heavy pool."""
        if built:
            events.built_first(tab, change)
        return self.answered(lambda: events.update(self.page, None, change, whole=True, notes=notes, tables=tables,
                                                   outputs=self.everything, tab=tab, direct=True))

    @functools.cached_property
    def everything(self) -> list:
        """`Page.everything`, read once: the page's components are fixed once it is built."""
        return self.page.everything

    def answered(self, update: Callable[[], tuple[dict, dict]]) -> dict:
        """The answer the page reads: `values`, by element id, whether its script writes them
        (`Page.direct_outputs`) or hands them to gradio's components (as gradio's browser code
        takes them); the page tells the two apart itself (assets/explorer.js `receive`)."""
        began = time.perf_counter()
        written, rest = update()
        values = {component.elem_id: value for component, value in written.items()}
        values.update((component.elem_id, events.for_browser(component, value)) for component, value in rest.items())
        self.calls += 1  # for benchmarks; exact with one slot, approximate with more
        self.seconds += time.perf_counter() - began
        return {"values": values}

    def route(self) -> Route:
        """The app's route for these calls: one POST of JSON, answered with JSON."""

        async def tab(request: Request) -> Response:
            body = await body_of(request, MAX_BODY)
            if body is None:
                return json_answer({"error": f"An update is at most {MAX_BODY:,} bytes; this one is larger."}, 413)
            answer = await self.answer(parsed(body), visitor_of_request(request), work_of(len(body)),
                                       host=events.host_of(request))
            if isinstance(answer, Streamed):
                return Lines(self.lines(answer.steps))
            return json_answer(answer)

        return Route(PATH, tab, methods=["POST"])

    async def lines(self, steps: AsyncIterator[dict]) -> AsyncIterator[bytes]:
        """A streamed answer's lines, `{"values": …}` a step, until its steps end or the page goes
        (then the response is cancelled, and the steps with it: their work stops)."""
        async with contextlib.aclosing(steps):
            async for out in steps:
                yield orjson.dumps({"values": self.values_of(out)}, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


class Lines(StreamingResponse):
    """JSON lines as they are made (`Direct.lines`), stopped when the page goes: starlette
    cancels a response whose client left, and whatever way it ends, its lines are closed."""

    def __init__(self, lines: AsyncIterator[bytes]) -> None:
        super().__init__(lines, media_type="application/x-ndjson",
                         headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.body_iterator.aclose()


@dataclass(frozen=True)
class Streamed:
    """An answer that goes as it is made (`Direct.stream`)."""

    steps: AsyncIterator[dict]



async def body_of(request: Request, limit: int) -> bytes | None:
    """The request's body; None when it is larger than `limit` bytes (refused while it streams in)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return body


async def json_body(request: Request, limit: int) -> tuple[object, bool]:
    """The request's JSON (None when it is not JSON), and whether its body kept within `limit`
    bytes (read no further than that: a larger body is refused while it streams in)."""
    body = await body_of(request, limit)
    return (None, False) if body is None else (parsed(body), True)


class Malformed(str):
    """A body that is not JSON (a fragment, NaN, a lone surrogate, not UTF-8): why, as the parser said."""


def parsed(body: bytes) -> object:
    """The body's JSON, or `Malformed` saying why it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as error:
        return Malformed(error)


def json_answer(answer: dict, status: int = 200) -> Response:
    # numpy arrays and scalars as lists and numbers (a postprocessed table can hold them)
    return Response(orjson.dumps(answer, option=orjson.OPT_SERIALIZE_NUMPY), status_code=status,
                    media_type="application/json")


def read(sent: object) -> tuple[str, dict, tuple[str, ...]]:
    """The tab's key, the change to the view and the fields the page shows already (the
    widgets the user set), checked: anything else is refused with a sentence. An example pair
    is its two sentences, which the page's boxes do not show yet."""
    if isinstance(sent, Malformed):
        raise Refused(f"This update is not valid JSON ({sent}). An update is a JSON object of the page's key and its "
                      "change, in UTF-8, without NaN or Infinity; if the page sent it, reload the page.")
    if not isinstance(sent, dict):
        raise Refused(f"An update is a JSON object of the page's key and its change, not {_json_kind(sent)}; if the "
                      "page sent it, reload the page.")
    if not isinstance(sent.get("key"), str) or not 0 < len(sent["key"]) <= MAX_KEY:
        raise Refused(f"This update carries no page key (the text of at most {MAX_KEY} characters the page is given "
                      "when it opens); reload the page.")
    change = sent.get("change")
    if not isinstance(change, dict) or not change or not set(change) <= set(CHANGES):
        raise Refused(f"A direct update changes some of {', '.join(CHANGES)}; nothing else.")
    for name, value in change.items():
        wanted, described = CHANGES[name]
        if (name == "token" and value is None) or name in CHECKED_LATER:
            continue
        if not isinstance(value, wanted) or (isinstance(value, bool) and wanted is not bool):
            raise Refused(f"{name} must be {described}, not {type(value).__name__}.")
    for name in TRUE_OR_NOTHING:
        if change.get(name) is False:
            raise Refused(f"{name} is an action: it is sent as true, or not at all.")
    change = dict(change)
    change.pop("poll", None)  # asks for nothing but what changed: the class's words (`ui.render.answers_of`)
    asked = tuple(name for name in change if name != "example")
    if "example" in change:
        number = change.pop("example")
        if not 0 <= number < len(EXAMPLES):
            raise Refused(f"example must be from 0 to {len(EXAMPLES) - 1}, not {number}.")
        change.update(sentence_a=EXAMPLES[number][0], sentence_b=EXAMPLES[number][1])
        asked = tuple(name for name in asked if name not in ("sentence_a", "sentence_b"))
    if "link" in change and len(change["link"]) > MAX_ADDRESS:
        raise Refused(f"link is the page's own address, at most {MAX_ADDRESS:,} characters; this one has "
                      f"{len(change['link']):,}.")
    if "move" in change and not (change["move"] and abs(change["move"]) <= len(tour.STEPS)):
        raise Refused(f"move is {change['move']:,}; it is a number of the tour's steps to move, from "
                      f"-{len(tour.STEPS)} to {len(tour.STEPS)}, other than 0.")
    return sent["key"], change, asked


def read_opening(sent: object) -> tuple[str, str, bool]:
    """A page opening's gradio session (its uploads reach the tab by it), its link's query
    string and whether its screen is a phone's, checked: anything else is refused with a sentence."""
    session = sent.get("session") if isinstance(sent, dict) else None
    if not isinstance(session, str) or not 0 < len(session) <= MAX_KEY:
        raise Refused(f"A page opening names its session (text of at most {MAX_KEY} characters); reload the page.")
    query = sent.get("query", "")
    if not isinstance(query, str):
        raise Refused(f"A page opening's query is text, not {_json_kind(query)}; reload the page.")
    return session, query, sent.get("narrow") is True


def _json_kind(value: object) -> str:
    """What JSON calls a value of this type: an array, text, a number, true or false, null."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "true or false"
    return "null" if value is None else "a number"


# the script of each gr.HTML output the page writes itself: it lets assets/explorer.js set the
# component's value as gradio would (so a later value from the queue compares with the right one).
# A value set here fires no `watch` callback: `then` runs what the component does with a new value
OUTPUT_JS = """
(window.embeddingExplorerOutputs = window.embeddingExplorerOutputs || {})[%r] = (value) => { props.value = value; %s };
"""


def written_by_page(elem_id: str, script: str = "", then: str = "") -> str:
    """`js_on_load` for an output the page's script writes: the component's own `script`, and
    the setter, which runs `then` after setting the value."""
    return script + OUTPUT_JS % (elem_id, then)


def settable(page, names: str | tuple[str, ...], trigger, api_inputs, *, js: str | None = None, api=None,
             api_name: str | None = None, outputs=None, **kwargs) -> None:
    """Wire a plane setting's widgets to this route: when the person sets them (`trigger`, an
    event or a list of events of the widgets `api_inputs`), the page sends their values as
    `{name: value}` (`js`: the script's own change, for a value the view holds otherwise), with
    no event through gradio's queue. The public API keeps its endpoint (`api_name`, by default
    the first name) on a hidden button with the same inputs and outputs (`api`: its handler, by
    default the fields' setter; `outputs`: by default everything a change may write)."""
    import gradio as gr

    names = (names,) if isinstance(names, str) else names
    script = js or f"({', '.join(names)}) => window.embeddingExplorer.set({{{', '.join(names)}}})"
    gr.on(trigger if isinstance(trigger, list) else [trigger], None, api_inputs, None, js=script)
    api_name = api_name or names[0]
    if page.api_button is None:  # one hidden button holds every such endpoint: the page never presses it
        page.api_button = gr.Button(visible=False, elem_id="api-endpoints")
    page.api_button.click(api or events.setter(page, *names), api_inputs,
                          page.everything if outputs is None else outputs, api_name=api_name, **kwargs)
