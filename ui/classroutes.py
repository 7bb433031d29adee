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
# the round's changes only its lecturer makes: route -> the body's text and flag (`Classroom.lecture` checks them)
LECTURES = {"ask": ("prompt", "review"), "close": (None, None), "clear": (None, None), "hide": ("word", "on"),
            "approve": ("word", "on"), "review": (None, "on")}

# every class this process serves pages of: in memory, or in the store EXPLORER_CLASS_STORE names
CLASSROOM = Classroom()


class Streams:
    """The class streams this process serves (no thread each), woken when their class changes."""

    def __init__(self, classroom: Classroom) -> None:
        self.classroom = classroom
        self.loop: asyncio.AbstractEventLoop | None = None
        self.changed: dict[str, asyncio.Event] = {}  # class id -> set when it changes (then replaced)
        self.lessons: dict[str, Lesson] = {}  # the newest lesson heard of each class with a stream here
        self.streams: dict[str, int] = {}  # class id -> its streams here
        self.open: dict[str, object] = {}  # page key -> its stream's token: a page's newer stream replaces its older
        classroom.hear(self._soon)  # on the store's and the writer's threads

    def _soon(self, class_id: str | None, lesson: Lesson | None) -> None:
        """`_wake` in the streams' event loop; nothing once it closed (the server is stopping)."""
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._wake, class_id, lesson)

    def _wake(self, class_id: str | None, lesson: Lesson | None = None) -> None:
        """Wake the streams of the class (None: of every class), keeping `lesson` if it is the newest."""
        if lesson is not None and lesson.id in self.streams and lesson.version >= self.lessons[lesson.id].version:
            self.lessons[lesson.id] = lesson  # (>=: a later end)
        for each in list(self.changed) if class_id is None else [class_id]:
            event = self.changed.get(each)
            if event is not None:
                self.changed[each] = asyncio.Event()  # the waiters hold the old one, which is set
                event.set()

    def opening(self, tab, key: str) -> object:
        """The token of the page's stream about to open: its older stream ends, the page stays connected."""
        self.loop = asyncio.get_running_loop()
        token = self.open[key] = object()
        member = tab.member
        if member is not None:
            self._wake(member.class_id)
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
        self.streams[class_id] = self.streams.get(class_id, 0) + 1
        self.changed.setdefault(class_id, asyncio.Event())
        if class_id not in self.lessons or self.lessons[class_id].version < lesson.version:
            self.lessons[class_id] = lesson
        sent, counts, counted = None, (0, 0), -COUNTS_SECONDS
        try:
            while self.open.get(key) is token:
                if leading and self.loop.time() - counted >= COUNTS_SECONDS:
                    counts = await anyio.to_thread.run_sync(self.classroom.presence, class_id) or counts
                    counted = self.loop.time()
                message = {"class": class_id, "role": "lecturer" if leading else "student",
                           **self.lessons[class_id].message(self.classroom.clock(),
                                                            self.classroom.reconnecting(class_id))}
                if leading:
                    message.update(connected=counts[0], following=counts[1])
                    if tab.member is not member and not message["ended"]:  # ended here, or another class began
                        message["ended"] = "This page no longer leads the class."
                else:
                    message.update(following=member.following, shown=member.shown,
                                   own=list(self.classroom.rounds.own(key, class_id)))
                message["poll"] = self.classroom.rounds.round(class_id).message(leading)  # as this page hears it
                if message != sent:
                    yield {"data": orjson.dumps(message).decode()}
                    sent = message
                if message["ended"]:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed[class_id].wait(), COUNTS_SECONDS if leading else KEEPALIVE)
        finally:  # also when the response is cancelled (the page went): so nothing here awaits
            self.release(key, token, member)
            self.streams[class_id] -= 1
            if not self.streams[class_id]:
                for held in (self.streams, self.changed, self.lessons):
                    held.pop(class_id, None)


class ClassRoutes:
    """The routes of one page's route (`ui.route.Live`), which computes what `lead` and `follow` show."""

    def __init__(self, page, classroom: Classroom = CLASSROOM) -> None:
        self.page, self.live = page, page.live
        self.classroom = classroom
        self.streams = Streams(classroom)

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

    async def _turn(self, request: Request, tab, channel, work, lane: str = "work") -> dict:
        """`work()` in the page's turn (`Busy` past its address's share)."""
        return await self.live.turn(tab, channel, work, visitor_of_request(request), 1.0, lane)

    async def start(self, request: Request, tab, channel, sent: dict) -> dict:
        address = visitor_of_request(request)
        lesson, secret = await self._turn(request, tab, channel, lambda: self.classroom.start(tab, address))
        threading.Thread(target=self.warm, name="class-warm", daemon=True).start()
        return {"class": lesson.id, "secret": secret, "step": lesson.step}

    def warm(self) -> None:
        """Draw every tour step's plane once when a class starts (a class is the tour's audience): its
        first lesson on BERT's tables would otherwise load them while a hundred pages wait."""
        from core.serving.tabs import session_for
        from core.tables.session import Session

        for step in tour.STEPS:
            with contextlib.suppress(Refused):
                render.plane(self.page, step.view, session_for(step.view, Session.create()))

    async def lead(self, request: Request, tab, channel, sent: dict) -> dict:
        leader, lesson = await anyio.to_thread.run_sync(self.classroom.lead, sent.get("class"), sent.get("secret"))
        before = tab.member

        def detach(_lesson: Lesson) -> None:  # showing this class's lesson is no change of the class led before
            tab.member = None

        def led(_lesson: Lesson, shown: bool) -> None:  # the page leads once it shows the lesson
            tab.member = leader if shown else before

        return {**await self._show(request, tab, channel, lesson, detach, led), "class": lesson.id}

    async def follow(self, request: Request, tab, channel, sent: dict) -> dict:
        member, lesson = await anyio.to_thread.run_sync(self.classroom.follow, tab)
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
        member = before if leads else await anyio.to_thread.run_sync(self.classroom.join, tab, sent.get("class"))
        try:  # connected before the answer begins: a class with no seat left says so with a 429
            lesson = await anyio.to_thread.run_sync(self.classroom.lesson, member.class_id)
            await anyio.to_thread.run_sync(self.classroom.connect, sent["key"], member, lesson)
        except Refused:
            if not leads:  # refused: the page is as it was
                tab.member = before
            raise
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
        address = visitor_of_request(request)

        def work() -> dict:
            round_, own = self.classroom.answer(tab, sent["key"], address, sent.get("word"), number)
            return {"poll": round_.message(False), "own": list(own)}
        return await self._turn(request, tab, channel, work)


__all__ = ["CLASSROOM", "ClassRoutes"]
