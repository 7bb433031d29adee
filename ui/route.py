"""The page's one way in and out: `POST explorer/live`, answered with values by element id.

Everything a person does on the page — a key, a click, a widget, a tab opened, the tour's Next,
Back, an example pair, the page's work (a refit, a link, an export, the token list) — is one POST
of `{key, change}`: view fields (each the one its declaration gives a widget), at most one action
(`ACTIONS`) or work. One handler (`Live.changed`) makes it a change of the tab's `View`
(`core.serving.tabs.Tab.apply`), `ui.render` says what to redraw, and the answer is `{"values":
{element id: value}}`; a refusal is said once (`Live.refused`). A training streams its answers
as server-sent events, as a class's stream does. The page opens with `{open: {query, narrow}}`
and gets its key, an unguessable name for its tab that every later call carries.

Calls wait in fair turns across addresses (`ui.admission.Turns`): keystrokes on one slot, table
changes and work on lanes of their own, so a keystroke never waits behind a table being built. A
tab has one keystroke call waiting at most (a later change joins it), and a call whose client left
is dropped before anything is computed for it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import secrets
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import orjson
import pydantic
from sse_starlette import EventSourceResponse
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route

from core.process.memory import BUDGET
from core.process.offload import Offload, niced
from core.serving.jobs import Jobs
from core.serving.tabs import ENDED, TABS, Tab
from core.tables.session import Session
from core.view import share, tour
from core.view.fields import TABLES
from core.view.options import MAX_TEXT, Refused
from core.view.state import FIELDS, View
from ui import render
from ui.admission import UNKNOWN, VISITORS, Busy, Turns, unit_of, unless_gone, visitor_of_request, work_of
from ui.assets import EXAMPLES

PATH = "/explorer/live"
MAX_BODY = 8 * MAX_TEXT + 4096  # bytes: two sentences at the limit, JSON-escaped, and the rest
MAX_KEY = 64  # characters of a page's key
MAX_ADDRESS = 2048  # characters of the page's own address, which a link is made of
# a keystroke is computed on the event loop, not a thread, when its tab's last call took at most
# this much CPU and its text grew as a typist's does: the hand-over to a thread and the
# interpreter's lock passed back and forth cost more than a short keystroke's work
INLINE_SECONDS, INLINE_GROWTH = 0.025, 64
TYPED = frozenset({"sentence_a", "sentence_b"})  # what a keystroke changes
# the view's fields the page sets, each from its widget (its declaration names it) or its screen
# (`narrow`); a tour step is shown by `move`, never set alone
SETTABLE = frozenset(name for name, declared in FIELDS.items()
                     if declared.widget is not None or declared.link is None) - {"step", "flips"}
# fields whose change builds tables or fits a plane: on a lane of their own, never merged or skipped
TABLE_FIELDS = frozenset(name for name in SETTABLE if TABLES in FIELDS[name].redraws) | {"basis"}
JOBS = Jobs(workers=1)  # heavy work shared fairly between tabs (core/serving/jobs.py)
OFFLOAD = Offload(budget=BUDGET)  # heavy work's process: what a call copies to it is reserved in the budget
LARGE_TABLE_BYTES = 16 * 2**20  # a random layer larger than this is built in the heavy pool
T = TypeVar("T")


@dataclass(frozen=True)
class Action:
    """A change the server computes from the page's value: `show(view, value)`, the view it shows with
    notes of what it could not have, as a link's; `tables`: what becomes of the session's tables; `lane`:
    "tables" when it may build them; `whole`: it shows a whole view (every widget written, as a link)."""

    show: Callable[[View, object], share.Link]
    tables: Callable[[Session], Session] | None = None
    lane: str = "keys"
    whole: bool = False


def _number(value: object, name: str, low: int, high: int, not_zero: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high or (not_zero and not value):
        raise Refused(f"{name} is a whole number from {low} to {high}{', other than 0' if not_zero else ''}, "
                      f"not {value!r}.")
    return value


def only_true(name: str) -> Callable[[object], None]:
    def check(value: object) -> None:
        if value is not True:
            raise Refused(f"{name} is an action: it is sent as true, or not at all.")
    return check


def _moved(view: View, value: object) -> share.Link:
    return share.Link(tour.moved(view, _number(value, "move", -len(tour.STEPS), len(tour.STEPS), not_zero=True)))


def _went(view: View, value: object) -> share.Link:
    return share.Link(tour.went(view, _number(value, "go", 1, len(tour.STEPS))))


def _example(view: View, value: object) -> share.Link:
    a, b = EXAMPLES[_number(value, "example", 0, len(EXAMPLES) - 1)]
    return share.Link(view.with_(sentence_a=a, sentence_b=b))


def _back(view: View, value: object) -> share.Link:
    if isinstance(value, str) and len(value) > MAX_ADDRESS * 16:
        raise Refused(f"back is the page's own address, at most {MAX_ADDRESS * 16:,} characters; this one has "
                      f"{len(value):,}.")
    link = share.from_address(value)
    return share.Link(link.view.seen_as(view), link.notes)


def _flip(view: View, value: object) -> share.Link:
    if not isinstance(value, bool):  # false: a second press that cancels the first (the page merges them)
        raise Refused(f"flip is true or false, not {value!r}.")
    return share.Link(view.flipped() if value else view)


def _checked(check: Callable[[object], None], show: Callable[[View], View]) -> Callable[[View, object], share.Link]:
    return lambda view, value: (check(value), share.Link(show(view)))[1]


ACTIONS = {
    "move": Action(_moved, tables=lambda session: session.restart(), whole=True),  # the tour's Next or Previous
    "go": Action(_went, tables=lambda session: session.restart(), whole=True),  # the step picker: step N, as Next lands
    "back": Action(_back, lane="tables", whole=True),  # Back or Forward landed on this address of the visit
    "example": Action(_example),  # an example pair clicked: its place in EXAMPLES
    "flip": Action(_flip),
    "listing": Action(_checked(only_true("listing"), View.on_listing_layer), lane="tables"),
    "reset": Action(_checked(only_true("reset"), lambda view: view), tables=lambda session: session.reset(),
                    lane="tables"),
    # a class's answers changed (the version its stream said): the plane is drawn again if its words did
    "poll": Action(lambda view, value: share.Link(view)),
}


@dataclass(eq=False)
class Channel:
    """What the route knows of one open page, kept beside its tab (the tab knows nothing of pages)."""

    key: str
    sent: dict[str, bytes] = field(default_factory=dict, repr=False)  # element id -> digest of the value last sent
    listed: bool = False  # the token picker holds a list: filled when opened, emptied once when the tokens change
    latest: int = 0  # the newest keystroke call's number: an older one still waiting is skipped
    waiting: dict | None = field(default=None, repr=False)  # the waiting keystroke call's change, which later ones join
    computed: float = math.inf  # CPU seconds of its last call: a quick tab's next key runs in the loop
    answers: object = None  # the class's words its plane shows (`ui.render.answers_of`)


class Live:
    """The route and its lanes. Panels register the page's work on it (`work`, `stream`)."""

    def __init__(self, page) -> None:
        self.page = page
        # a class's own calls (start, lead, join, a round's) on a lane of few threads: a flood of them from one
        # page waits its turns there, never a thread a call beside the keystrokes (`ui.classroutes`)
        self.lanes = {"keys": Turns(VISITORS, 1), "tables": Turns(VISITORS, 2), "work": Turns(VISITORS, 16),
                      "class": Turns(VISITORS, 2)}
        self._threads: dict[str, anyio.CapacityLimiter] = {}  # a lane's threads, made in the server's loop
        self.works: dict[str, Callable] = {}  # the page's work by name: (tab, value) -> {component: value}
        self.streams: dict[str, Callable] = {}  # work answered as it goes: (tab, value) -> async iterator of those
        self.checks: dict[str, Callable[[object], None]] = {}  # a work's check of its value, by name
        self.channels: weakref.WeakKeyDictionary[Tab, Channel] = weakref.WeakKeyDictionary()
        self.calls, self.seconds = 0, 0.0  # calls computed and their seconds (for benchmarks)
        # the running class whose link a page's query names, which admits its pages (`ui.classroutes`)
        self.room_of: Callable[[str], str | None] = lambda query: None

    def work(self, name: str, handler: Callable, check: Callable[[object], None]) -> None:
        """Answer `{name: value}` with `handler(tab, value)` -> {component: value} (or values by
        element id, as `apply` answers them), after the call's other changes. `check(value)`
        raises `Refused` for a value the work does not take, before anything is changed (a
        press: `only_true(name)`)."""
        self.works[name], self.checks[name] = handler, check

    def stream(self, name: str, handler: Callable) -> None:
        """Answer `{name: value}` as it goes: `handler(tab, value)` is an async iterator of
        {component: value}, each sent as one event; it stops when the page goes."""
        self.streams[name] = handler

    @functools.cached_property
    def by_id(self) -> dict:
        """The page's components by element id (they are fixed once the page is built)."""
        slots = [getattr(self.page, name, None) for name in type(self.page).__slots__]
        found = [each for value in slots for each in (value.values() if isinstance(value, dict) else [value])]
        return {each.elem_id: each for each in found if getattr(each, "elem_id", None)}

    # --- the route ------------------------------------------------------------------------------

    def route(self) -> Route:
        async def endpoint(request: Request) -> Response:
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY:
                    return answer_of({"error": f"An update is at most {MAX_BODY:,} bytes; this one is larger."}, 413)
            return await unless_gone(request, lambda: self.guarded(lambda: self.answer(body, request)))

        return Route(PATH, endpoint, methods=["POST"])

    async def guarded(self, call: Callable[[], Awaitable[dict | Response]]) -> Response:
        """`await call()` as the page reads it: its answer, or a refusal's sentence (the account's
        with its status and when to try again)."""
        try:
            answer = await call()
        except Busy as busy:
            return answer_of({"error": str(busy)}, busy.status, {"Retry-After": str(busy.retry)})
        except Refused as error:
            return answer_of({"error": str(error)})
        return answer if isinstance(answer, Response) else answer_of(answer)

    async def answer(self, body: bytes, request: Request | None = None) -> dict | Response:
        """The answer to one call: the values the page writes (a refusal raised, said by `guarded`)."""
        sent = read(body)
        address = visitor_of_request(request)  # UNKNOWN without a request
        if "open" in sent and "key" not in sent:
            return await self.opened(sent["open"], address)
        tab, channel = self.channel_of(sent.get("key"))
        change = sent.get("change")
        if not isinstance(change, dict) or not change:
            raise Refused("An update's change is a JSON object naming what changed; reload the page.")
        streamed = next(iter(change.keys() & self.streams.keys()), None)
        if streamed is not None:
            if len(change) > 1:
                raise Refused(f"{streamed} is sent alone, with nothing else in the update.")
            return EventSourceResponse(self.events(channel, self.streams[streamed](tab, change[streamed])), ping=15,
                                       send_timeout=VISITORS.send_seconds, headers={"Cache-Control": "no-store"})
        return await self.changed(tab, channel, change, address, work_of(len(orjson.dumps(change))))

    async def changed(self, tab: Tab, channel: Channel, change: dict, address: str, work: float) -> dict:
        """A change of the view, an action or work, each in its lane: fields first, then the action, then the work."""
        fields = {name: value for name, value in change.items() if name in SETTABLE}
        acted = [name for name in change if name in ACTIONS]
        if len(acted) > 1 and "poll" in acted:  # the class's words are drawn with whatever else the call shows
            acted.remove("poll")
        works = [name for name in change if name in self.works]
        unknown = set(change) - set(fields) - ACTIONS.keys() - set(works)
        if unknown or len(acted) > 1:
            named = f"{sorted(unknown)[0]!r} is none of them" if unknown else "two actions were sent together"
            raise Refused(f"An update names some of the view's settings, at most one action ({', '.join(ACTIONS)}) "
                          f"or the page's work ({', '.join(sorted({*self.works, *self.streams}))}); {named}.")
        for name in works:  # a refused work changes nothing: checked before the fields are applied
            self.checks[name](change[name])
        action = ACTIONS[acted[0]] if acted else None
        notes: list[str] = []

        def view_change(view: View) -> View:
            view = view.with_(**fields)
            if action is None:
                return view
            shown = action.show(view, change[acted[0]])
            notes[:] = shown.notes
            return shown.view

        lane = "work" if works else "tables" if (fields.keys() & TABLE_FIELDS or (action and action.lane == "tables")) \
            else "keys"

        def compute() -> dict:
            if lane != "keys":
                self.built_first(tab, view_change)
            values = {}
            if fields or action is not None or not works:
                try:
                    values = self.applied(tab, channel, view_change, tables=action.tables if action else None,
                                          whole=bool(action and action.whole), asked=tuple(fields), notes=notes)
                except Refused as error:  # the work was asked of the view refused: none is done for the old one
                    return {"values": self.refused(tab, channel, tuple(fields), error)}
            for name in works:
                values.update(self.values(channel, self.works[name](tab, change[name])))  # after the change
            return {"values": values}

        if lane != "keys" or action is not None:
            return await self.turn(tab, channel, compute, address, work, lane)
        if channel.waiting is not None:  # the page's keystroke call still waiting takes this change too
            channel.waiting.update(fields)
            return {"merged": True}
        channel.waiting = fields

        def begin() -> None:  # its turn came: what it computes is what it holds now
            if channel.waiting is fields:
                channel.waiting = None

        try:
            return await self.turn(tab, channel, compute, address, work, lane, begin=begin,
                                   quick=lambda: self.quick(tab, channel, fields))
        finally:
            begin()  # refused, or skipped for a newer call: nothing more joins it

    @staticmethod
    def quick(tab: Tab, channel: Channel, change: dict) -> bool:
        """Whether `change` may be computed on the event loop: a keystroke whose tab's last call
        was quick, whose text grew as a typist's does (not a paste), whose tables are at hand
        (not parked) and which is in no class (its change may write to the class's store: I/O
        the loop must not wait on). `python -m bench.server_cpu` measures the three paths."""
        if not change.keys() <= TYPED or channel.computed > INLINE_SECONDS or tab.parked or tab.member is not None:
            return False
        # a value that is not text is refused by its field's kind, on a thread like any other call
        return all(isinstance(change[name], str) and len(change[name]) <= len(getattr(tab.view, name)) + INLINE_GROWTH
                   for name in change)

    async def turn(self, tab: Tab | None, channel: Channel | None, compute: Callable[[], dict], address: str,
                   work: float, lane: str = "keys", begin: Callable[[], None] | None = None,
                   quick: Callable[[], bool] | None = None) -> dict:
        """`compute()` in a fair turn of `lane`, within the account's bounds: on the event loop
        when `quick()` says so and no other thread holds the tab, else on a worker thread. On the
        keystroke lane a tab's older call still waiting when a newer one comes is skipped. The
        class's routes and the API take their turns here too."""
        turns = self.lanes[lane]
        threads = self._threads.get(lane) or self._threads.setdefault(lane, anyio.CapacityLimiter(turns.slots))
        address = address if address != UNKNOWN or tab is None else (tab.client or UNKNOWN)
        seat = getattr(tab.member, "seat", None) if tab is not None else None  # a student's, in a class
        turn = turns.enter(address, channel.key if channel else None, work, unit_of(address, seat))
        skippable = lane == "keys" and channel is not None
        if skippable:
            channel.latest += 1
        mine = channel.latest if channel else 0
        async with turns.taken(turn):
            if skippable and channel.latest != mine:  # a newer call of this page is waiting: it answers instead
                return {"skipped": True}
            if begin is not None:
                begin()
            if tab is not None and quick is not None and quick() and tab.lock.acquire(blocking=False):
                try:
                    return self.timed(channel, compute)
                finally:
                    tab.lock.release()
            return await anyio.to_thread.run_sync(self.timed, channel, compute, limiter=threads)

    def timed(self, channel: Channel | None, compute: Callable[[], dict]) -> dict:
        """`compute()`, its CPU time kept as the channel's `computed` (what the thread spent)."""
        began, wall = time.thread_time(), time.perf_counter()
        try:
            return compute()
        finally:
            if channel is not None:
                channel.computed = time.thread_time() - began
            self.calls += 1
            self.seconds += time.perf_counter() - wall

    # --- one change, applied ----------------------------------------------------------------------

    def apply(self, tab: Tab, channel: Channel, change: Callable[[View], View], **given) -> dict:
        """Apply `change` to the tab's view and return what the page must write, by element id (`applied`,
        given its options); a refusal changes nothing and says why (`refused`)."""
        try:
            return self.applied(tab, channel, change, **given)
        except Refused as error:
            return self.refused(tab, channel, given.get("asked", ()), error)

    def applied(self, tab: Tab, channel: Channel, change: Callable[[View], View], *, tables=None,
                whole: bool = False, asked: tuple[str, ...] = (), notes: list[str] | tuple[str, ...] = (),
                key: str | None = None) -> dict:
        """`apply`, raising `Refused` (having changed nothing) instead of saying it. `key`: the
        page's key, sent with its first address when it opens."""
        page = self.page

        def compute(step) -> dict:
            answers = render.answers_of(tab.member, step.view)
            out = render.outputs(page, step, asked=asked, whole=whole, notes=notes, listed=channel.listed, key=key,
                                 answers=answers, answered=answers != channel.answers)
            channel.answers = answers
            picker = out.get(page.token)
            if isinstance(picker, dict) and "choices" in picker:
                channel.listed = len(picker["choices"]) > 1  # more than "none"
            return self.values(channel, out, asked)

        return tab.apply(change, compute, tables=tables, whole=whole)

    def refused(self, tab: Tab, channel: Channel, asked: tuple[str, ...], error: Refused) -> dict:
        """The one place a refusal becomes what the page shows: the sentence in the notice, and the
        widgets the person set put back to what the view holds. Nothing else changes."""
        with tab.lock:
            return self.values(channel, {**render.fields(self.page, tab.view, asked),
                                         self.page.notice: render.notice((str(error),))}, asked)

    def values(self, channel: Channel, out: dict, asked: tuple[str, ...] = ()) -> dict:
        """`{component: value}` as the page reads it, by element id: a value the page's script
        writes as it is; one for a gradio widget as gradio's browser code takes it, and only when
        the widget does not hold it already (each update makes gradio rebuild its component: a
        class's lesson sets the freezes, the tabs and the picker each time). A digest of each
        is kept, never the value: a tab holds no copy of what it was sent."""
        for widget in render.widgets_of(self.page, asked):  # they show what the person set, not what was sent
            channel.sent.pop(widget.elem_id, None)
        values = {}
        for component, value in out.items():
            if isinstance(component, str):  # by element id already (`apply`'s answer, inside a work's)
                values[component] = value
            elif component in self.page.written:  # the page's script has its setter: gradio's widgets take the rest
                if isinstance(value, str):
                    values[component.elem_id] = value
            elif not (isinstance(value, dict) and value == {"__type__": "update"}):  # gr.skip(): left as it is
                # compared as given, before gradio's postprocess: a value postprocesses alike each time, and
                # a table's postprocess (a search for polars among the installed modules, every call) cost a
                # keystroke more than fitting its plane, for the empty neighbour tables it sent nothing for
                mark = digest(value)
                if mark is None or channel.sent.get(component.elem_id) != mark:
                    channel.sent[component.elem_id] = mark
                    values[component.elem_id] = for_browser(component, value)
        return values

    def built_first(self, tab: Tab, change: Callable[[View], View]) -> None:
        """Build in the heavy pool, first, a large random layer that `change` asks for, so it holds
        no slot the keystrokes share and the memory budget sees it as it is built."""
        from core.tables.presets import random_source

        try:
            wanted = change(tab.view)
        except Refused:
            return  # refused, with its message, when it is applied
        settings = wanted.settings
        if wanted.source == "random" and settings.table_bytes > LARGE_TABLE_BYTES and settings not in random_source:
            JOBS.run(tab, "building the tables", lambda: niced(random_source, settings))

    # --- a page opening ------------------------------------------------------------------------

    async def opened(self, sent: object, address: str) -> dict:
        """A page opening: a new tab named by a new key (in the tables' lane: a link may build
        tables), showing the view its address's query describes on its screen, whole and untrained.
        `previous`: the key this browser tab had before a reload, whose tab is let go at once."""
        if not isinstance(sent, dict) or not isinstance(sent.get("query", ""), str):
            raise Refused("A page opening carries its address's query as text; reload the page.")
        previous = sent.get("previous")
        previous = previous if isinstance(previous, str) and 0 < len(previous) <= MAX_KEY else None
        query = sent.get("query", "")

        def compute() -> dict:  # in the turn, on a thread: a class's link is checked in its store
            key = secrets.token_urlsafe(24)
            tab = TABS.open(key, None if address == UNKNOWN else address, replaces=previous, room=self.room_of(query))
            channel = self.channels[tab] = Channel(key)
            try:
                link = share.from_address(query)
            except Refused as error:
                link = share.Link(View(), (str(error),))

            def show(view: View, notes: tuple[str, ...]) -> dict:
                self.built_first(tab, lambda _: view)
                return self.applied(tab, channel, lambda _: view, tables=lambda session: session.restart(),
                                    whole=True, notes=notes, key=key)

            values = link_shown(link, View(narrow=sent.get("narrow") is True), show)
            return {"values": {elem_id: value for elem_id, value in values.items()
                               if not as_built(self.by_id.get(elem_id), value)}}

        return await self.turn(None, None, compute, address, 1.0, "tables")

    def channel_of(self, key: object) -> tuple[Tab, Channel]:
        """The tab and channel a page's key names (`Refused` for any other key)."""
        if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY:
            raise Refused(f"This request carries no valid page key (the text of at most {MAX_KEY} characters the "
                          "page is given when it opens); reload the page.")
        tab = TABS.kept(key)
        channel = self.channels.get(tab)
        if channel is None or channel.key != key:
            raise Refused(ENDED)
        return tab, channel

    async def events(self, channel: Channel, steps: AsyncIterator[dict]) -> AsyncIterator[dict]:
        """A streamed answer's events, `{"values": …}` a step, until its steps end or the page goes
        (then the response is cancelled, and the steps with it: their work stops)."""
        async with contextlib.aclosing(steps):
            async for out in steps:
                yield {"data": orjson.dumps({"values": self.values(channel, out)},
                                            option=orjson.OPT_SERIALIZE_NUMPY).decode()}


def link_shown(link: share.Link, on: View, show: Callable[[View, tuple[str, ...]], T]) -> T:
    """`show(view, notes)` of the link's view on `on`'s screen, or of `on` with a note saying why
    the link's view could not be had: a link never leaves a page without a view."""
    try:
        return show(link.view.seen_as(on), link.notes)
    except Refused as error:
        return show(on, (*link.notes, f"The link's view could not be opened ({error}); showing the default view."))


def read(body: bytes) -> dict:
    """The update a body holds, checked as a JSON object; its key is checked by `Live.channel_of`, and
    each value where it is used (a field by its kind, an action by its own check)."""
    try:
        sent = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise Refused(f"This update is not valid JSON ({error}). An update is a JSON object of the page's key and its "
                      "change, in UTF-8, without NaN or Infinity; if the page sent it, reload the page.") from None
    if not isinstance(sent, dict):
        kind = {list: "an array", str: "text", bool: "true or false", type(None): "null"}.get(type(sent), "a number")
        raise Refused(f"An update is a JSON object of the page's key and its change, not {kind}; if the page sent it, "
                      "reload the page.")
    return sent


async def left_mid_body(request: Request, _: ClientDisconnect) -> Response:
    """A client that left while its request's body was read (any route): one line in the log, not
    a traceback, and nothing computed for it."""
    logging.getLogger(__name__).warning("%s %s: the client left before its body was read", request.method,
                                        request.url.path)
    return Response(status_code=499)


def answer_of(answer: dict, status: int = 200, headers: dict | None = None) -> Response:
    # numpy arrays and scalars as lists and numbers (a table's rows can hold them)
    return Response(orjson.dumps(answer, option=orjson.OPT_SERIALIZE_NUMPY), status_code=status, headers=headers,
                    media_type="application/json")


def for_browser(component, value):
    """`value` as gradio's browser code takes it for `component` (its own public `postprocess`);
    an update's properties as they are, its value postprocessed."""
    if isinstance(value, dict) and value.get("__type__") == "update":
        return {**value, "value": _postprocessed(component, value["value"])} if "value" in value else value
    return _postprocessed(component, value)


def _postprocessed(component, value):
    if value is None:
        return None
    value = component.postprocess(value)
    return value.model_dump() if isinstance(value, pydantic.BaseModel) else value


def as_built(component, value) -> bool:
    """Whether `component` holds `value` already as the page is built (its constructor's value and
    properties), so a page opening need not write it: gradio's browser code fires a tab's `select`
    when its Tabs are given a selection, and a textbox's `change` when its empty value becomes ""."""
    if component is None:
        return False
    if isinstance(value, dict) and value.get("__type__") == "update":
        return all(_same(getattr(component, name, _MISSING), wanted) for name, wanted in value.items()
                   if name != "__type__")
    return (value is None or isinstance(value, str | int | float | bool | list)) and \
        _same(getattr(component, "value", _MISSING), value)


_MISSING = object()


def _same(built, value) -> bool:
    return built is not _MISSING and (built == value or (built is None and value == ""))


def digest(value: object) -> bytes | None:
    """A short digest of a value sent to a widget, to compare with the next; None: not comparable."""
    try:
        return hashlib.blake2b(orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY),
                               digest_size=16).digest()
    except TypeError:
        return None
