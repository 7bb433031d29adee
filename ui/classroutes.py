"""A class's routes beside the page's, each `POST explorer/class/NAME`:

    start, lead, follow, end           a class: start one, lead it from another screen, follow it, end it
    stream                             server-sent events, one a change: the lesson, who follows, the round
    poll/ask, close, clear, hide,      a round of answers, by the lecturer's page (its secret in the body)
      approve, review, csv
    poll/answer                        a following student's word for the round

A page is named by its key in the body (never in an address a proxy logs), and every call takes a
turn on the page's route (`ui.route.Live.turn`). While the store is away a call is answered 200 with
`reconnecting` and a sentence, and the page tries again (a 5xx would read as a broken server).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import urllib.parse

import anyio
import orjson
from sse_starlette import EventSourceResponse
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from core.serving.classroom import Classroom, Forbidden, Gone, Leader, Reconnecting
from core.serving.classstore import Full, Lesson, lesson_of, lesson_view
from core.serving.poll import checked_flag, csv_of
from core.view import tour
from core.view.options import Refused
from ui import render
from ui.admission import VISITORS, Busy, visitor_of_request
from ui.route import answer_of

LOG = logging.getLogger(__name__)
PREFIX = "/explorer/class"
MAX_BODY = 1024  # bytes: a key, a class id, a secret, a word or a prompt
KEEPALIVE = 15.0  # seconds between keep-alive comments on an idle stream
COUNTS_SECONDS = 1.0  # how often a lecturer's stream reads how many pages follow
HOLD_SECONDS = 1.0  # a call refused for its own rate is answered after its wait, at most this long
# the round's changes only its lecturer makes: route -> the body's text and flag (`Classroom.lecture` checks them)
LECTURES = {"ask": ("prompt", "review"), "close": (None, None), "clear": (None, None), "hide": ("word", "on"),
            "approve": ("word", "on"), "review": (None, "on")}

# every class this process serves pages of: in memory, or in the store EXPLORER_CLASS_STORE names
CLASSROOM = Classroom()


class Streams:
    """The class streams this process serves (no thread each), each woken when its news changes: a
    class's lesson or round wakes every stream of it; one page's news (it followed, it stopped),
    only its own and its lecturers' (the counts), so a class of hundreds costs each follow one wake."""

    def __init__(self, classroom: Classroom) -> None:
        self.classroom = classroom
        self.loop: asyncio.AbstractEventLoop | None = None
        # class id -> page key -> (its member, the event that wakes its stream)
        self.waiting: dict[str, dict[str, tuple[object, asyncio.Event]]] = {}
        self.lessons: dict[str, Lesson] = {}  # the newest lesson heard of each class with a stream here
        self.open: dict[str, object] = {}  # page key -> its stream's token: a page's newer stream replaces its older
        classroom.hear(self._soon)  # on the store's and the writer's threads

    def _soon(self, class_id: str | None, lesson: Lesson | None, member: object = None) -> None:
        """`_wake` in the streams' event loop; nothing once it closed (the server is stopping)."""
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._wake, class_id, lesson, member)

    def _wake(self, class_id: str | None, lesson: Lesson | None = None, member: object = None) -> None:
        """Wake the streams of the class (None: of every class), keeping `lesson` if it is the newest;
        with `member`, only its page's and the lecturers' (`LECTURERS`: the lecturers')."""
        if lesson is not None and lesson.id in self.waiting and lesson.version >= self.lessons[lesson.id].version:
            self.lessons[lesson.id] = lesson  # (>=: a later end)
        for streams in list(self.waiting.values()) if class_id is None else [self.waiting.get(class_id, {})]:
            for shown, event in list(streams.values()):
                if member is None or shown is member or isinstance(shown, Leader):
                    event.set()

    def opening(self, tab, key: str) -> object:
        """The token of the page's stream about to open: its older stream ends, the page stays connected."""
        self.loop = asyncio.get_running_loop()
        token = self.open[key] = object()
        member = tab.member
        if member is not None:
            _, older = self.waiting.get(member.class_id, {}).get(key, (None, None))
            if older is not None:
                older.set()
        return token

    def release(self, key: str, token: object, member) -> None:
        """The page's stream `token` is over: the page is let go, unless a newer stream replaced it."""
        if self.open.get(key) is token:
            del self.open[key]
            self.classroom.disconnect(key, member)

    async def stream(self, tab, key: str, lesson: Lesson, member, token: object):
        """The page's messages, one event per change, until the class ends or the page goes (the
        response is cancelled then, and this with it, so the counts are right within a second)."""
        class_id, leading = lesson.id, isinstance(member, Leader)
        woken = asyncio.Event()
        self.waiting.setdefault(class_id, {})[key] = (member, woken)  # an older stream of the page's was told
        if class_id not in self.lessons or self.lessons[class_id].version < lesson.version:
            self.lessons[class_id] = lesson
        sent, counts, counted = None, (0, 0, 0), -COUNTS_SECONDS
        try:
            while self.open.get(key) is token:
                woken.clear()  # what wakes it from here on is news to the message made next
                if leading and self.loop.time() - counted >= COUNTS_SECONDS:
                    counts = await anyio.to_thread.run_sync(self.classroom.presence, class_id) or counts
                    counted = self.loop.time()
                message = {"class": class_id, "role": "lecturer" if leading else "student",
                           **self.lessons[class_id].message(self.classroom.clock(),
                                                            self.classroom.reconnecting(class_id))}
                if leading:
                    message.update(connected=counts[0], following=counts[1], students=counts[2])
                    if tab.member is not member and not message["ended"]:  # ended here, or another class began
                        message["ended"] = "This page no longer leads the class."
                else:  # its seat, which the page keeps for its browser's other tabs and reloads
                    message.update(following=member.following, shown=member.shown, seat=member.token,
                                   own=list(self.classroom.rounds.own(member.seat, class_id)))
                message["poll"] = self.classroom.rounds.round(class_id).message(leading)  # as this page hears it
                if message != sent:
                    yield {"data": orjson.dumps(message).decode()}
                    sent = message
                if message["ended"]:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), COUNTS_SECONDS if leading else KEEPALIVE)
        finally:  # also when the response is cancelled (the page went): so nothing here awaits
            self.release(key, token, member)
            streams = self.waiting.get(class_id, {})
            if streams.get(key, (None, None))[1] is woken:
                del streams[key]
            if not streams:
                self.waiting.pop(class_id, None)
                self.lessons.pop(class_id, None)


class ClassRoutes:
    """The routes of one page's route (`ui.route.Live`), which computes what `lead` and `follow` show."""

    def __init__(self, page, classroom: Classroom = CLASSROOM) -> None:
        self.page, self.live = page, page.live
        self.classroom = classroom
        self.streams = Streams(classroom)
        self._warming = threading.Lock()  # held while a class's start draws the tour's planes (`warm`)
        self.live.room_of = self.room_of

    def room_of(self, query: str) -> str | None:
        """The running class a page's address names (`class=ID`), which admits the pages of its link."""
        named = urllib.parse.parse_qs(query).get("class", [None])[0]
        if named is None:
            return None
        try:
            return self.classroom.lesson(named).id
        except Refused:  # over, unknown, or its store away: the page opens as any page does
            return None

    def routes(self) -> list[Route]:
        handlers = {name: getattr(self, name) for name in ("start", "lead", "follow", "end", "stream")}
        handlers.update({f"poll/{op}": functools.partial(self._lecture, op) for op in LECTURES})
        handlers.update({"poll/csv": self.csv, "poll/answer": self.answer})
        return [Route(f"{PREFIX}/{name}", self._endpoint(name, handler), methods=["POST"])
                for name, handler in handlers.items()]

    def _endpoint(self, name: str, handler):

        async def endpoint(request: Request) -> Response:
            body = await request.body() if int(request.headers.get("content-length") or 0) <= MAX_BODY else None
            if body is None or len(body) > MAX_BODY:
                return answer_of({"error": f"A class call is at most {MAX_BODY:,} bytes; this one is larger."}, 413)
            try:
                sent = None  # not JSON: no key, said as such (not the parser's words)
                with contextlib.suppress(orjson.JSONDecodeError):
                    sent = orjson.loads(body)
                if not isinstance(sent, dict) or not isinstance(sent.get("key"), str):
                    raise Refused("This request carries no valid page key; reload the page.")
                tab, channel = self.live.channel_of(sent["key"])
                answer = await handler(request, tab, channel, sent)
            except Busy as busy:  # past the address's share of the server: the account's sentence
                return answer_of({"error": str(busy)}, busy.status, {"Retry-After": str(busy.retry)})
            except Reconnecting as error:  # nobody's fault: the page says so, and tries again
                return answer_of({"error": str(error), "reconnecting": True})
            except Refused as error:  # a sentence, with the status that says what kind
                return answer_of({"error": str(error)}, {Forbidden: 403, Gone: 404, Full: 429}.get(type(error), 400))
            except Exception:  # a fault (a bug): logged here, a plain sentence there
                LOG.exception("class call %s failed", name)
                return answer_of({"error": "The class call failed on the server; the page tries again."}, 500)
            return answer if isinstance(answer, Response) else answer_of(answer, 429 if "error" in answer else 200)

        return endpoint

    async def _turn(self, request: Request, tab, channel, work, lane: str = "class") -> dict:
        """`work()` in the page's turn on the class's lane (`Busy` past its visitor's share)."""
        return await self.live.turn(tab, channel, work, visitor_of_request(request), 1.0, lane)

    async def start(self, request: Request, tab, channel, sent: dict) -> dict:
        address = visitor_of_request(request)
        wait = self.classroom.start_wait(address)
        if wait:  # a loop of starts is answered no faster than it may start: its refusals cost next to nothing
            await asyncio.sleep(min(wait, HOLD_SECONDS))
            raise self.classroom.too_many_starts(wait)
        lesson, secret = await self._turn(request, tab, channel, lambda: self.classroom.start(tab, address))
        if self._warming.acquire(blocking=False):  # one thread at most, however many classes start
            threading.Thread(target=self.warm, name="class-warm", daemon=True).start()
        return {"class": lesson.id, "secret": secret, "step": lesson.step}

    def warm(self) -> None:
        """Draw every tour step's plane once when a class starts (a class is the tour's audience): its
        first lesson on BERT's tables would otherwise load them while a hundred pages wait. Each plane
        drawn once is kept (`core.drawing.shared`), so a later class's warming costs little."""
        from core.serving.tabs import session_for
        from core.tables.session import Session

        try:
            for step in tour.STEPS:
                with contextlib.suppress(Refused):
                    render.plane(self.page, step.view, session_for(step.view, Session.create()))
        finally:
            self._warming.release()

    async def lead(self, request: Request, tab, channel, sent: dict) -> dict:
        leader, lesson = await self._turn(request, tab, channel,
                                          lambda: self.classroom.lead(sent.get("class"), sent.get("secret")))
        before = tab.member

        def detach(_lesson: Lesson) -> None:  # showing this class's lesson is no change of the class led before
            tab.member = None

        def led(_lesson: Lesson, shown: bool) -> None:  # the page leads once it shows the lesson
            tab.member = leader if shown else before

        return {**await self._show(request, tab, channel, lesson, detach, led), "class": lesson.id}

    async def follow(self, request: Request, tab, channel, sent: dict) -> dict:
        member, lesson = await self._turn(request, tab, channel, lambda: self.classroom.follow(tab))
        if member.following and member.shown >= lesson.version:  # shown already: a page asking twice
            return {"values": {}, "version": member.shown}
        return await self._show(request, tab, channel, lesson, lambda shown: self.classroom.expect(member, shown),
                                lambda shown, took: self.classroom.shown(member, shown, took))

    async def end(self, request: Request, tab, channel, sent: dict) -> dict:
        lesson = await self._turn(request, tab, channel, lambda: self.classroom.end(tab, sent.get("secret")))
        return {"ended": lesson.ended}

    async def stream(self, request: Request, tab, channel, sent: dict) -> Response:
        before = tab.member
        leads = isinstance(before, Leader) and before.class_id == sent.get("class")

        def joined():  # connected before the answer begins: a class with no place left says so with a 429
            member = before if leads else self.classroom.join(tab, sent.get("class"), sent.get("seat"))
            try:
                lesson = self.classroom.lesson(member.class_id)
                self.classroom.connect(sent["key"], member, lesson)
            except Refused:
                if not leads:  # refused: the page is as it was
                    tab.member = before
                raise
            return member, lesson

        member, lesson = await self._turn(request, tab, channel, joined)
        token = self.streams.opening(tab, sent["key"])
        # the page is let go when its stream ends, or when the answer ends before the stream began
        return EventSourceResponse(self.streams.stream(tab, sent["key"], lesson, member, token), ping=KEEPALIVE,
                                   send_timeout=VISITORS.send_seconds, headers={"Cache-Control": "no-store"},
                                   background=BackgroundTask(self.streams.release, sent["key"], token, member))

    async def _show(self, request: Request, tab, channel, lesson: Lesson, before, after) -> dict:
        """Show `tab` the class's newest lesson in the page's turn: `before(lesson)`, the view, then
        `after(lesson, shown)`, `shown` being whether the tab took it (a view can be refused)."""

        def showing(shown: Lesson):
            return lambda view: lesson_view(shown.query).in_room_of(view).seen_as(view)

        def work() -> dict:
            shown = self.classroom.newest(lesson)
            before(shown)
            self.live.built_first(tab, showing(shown))  # a lesson's large random layer, in the heavy pool
            values = self.live.apply(tab, channel, showing(shown), whole=True)
            after(shown, lesson_of(tab.view) == shown.query)
            return {"values": values, "version": shown.version}

        return await self._turn(request, tab, channel, work, lane="keys")

    async def _lecture(self, op: str, request: Request, tab, channel, sent: dict) -> dict:
        """The lecturer's change `op` to the round (its flag checked before the page's turn)."""
        text, flag = LECTURES[op]
        on = flag is not None and checked_flag(sent.get(flag, False if op == "ask" else None), flag)

        def work() -> dict:
            changed = self.classroom.lecture(op, tab, sent.get("secret"), sent.get(text), on)
            return {"poll": changed.message(True), "own": []}
        return await self._turn(request, tab, channel, work)

    async def csv(self, request: Request, tab, channel, sent: dict) -> dict:
        def work() -> dict:
            member = tab.member
            if not isinstance(member, Leader):
                raise Forbidden("Only the page that leads the class can download its answers.")
            self.classroom.check(member.class_id, sent.get("secret"))
            round_ = self.classroom.rounds.round(member.class_id)
            return {"csv": csv_of(round_), "poll": round_.message(True)}
        return await self._turn(request, tab, channel, work)

    async def answer(self, request: Request, tab, channel, sent: dict) -> dict:
        number = sent.get("round")
        if isinstance(number, bool) or not isinstance(number, int):
            raise Refused("round is the number of the round answered, a whole number.")

        def work() -> dict:
            round_, own = self.classroom.answer(tab, sent.get("word"), number)
            return {"poll": round_.message(False), "own": list(own)}
        return await self._turn(request, tab, channel, work)


__all__ = ["CLASSROOM", "ClassRoutes"]
