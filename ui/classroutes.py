"""The class link's routes, outside gradio's queue like the direct route: a class is a hundred pages at once.

    POST explorer/class/start   {key}                 this page's view becomes a class's lesson: {class, secret, step}
    POST explorer/class/lead    {key, class, secret}  the lecturer's link on another page: shown the lesson, it leads
    POST explorer/class/follow  {key}                 a student's page is shown the newest lesson
    POST explorer/class/end     {key, secret}         the lecturer ends the class
    POST explorer/class/stream  {key, class}          JSON lines, one a change: the lesson's version and step, whether
                                                      the page follows; the lecturer's: pages connected, following;
                                                      the round of answers (`poll`), and a student's own words
    POST explorer/class/poll/…                        a round of answers: ui/pollroutes.py

A page is named by its key (`ui.channels.Channel.key`) in the body, never in an address a proxy
logs; `lead` and `follow` answer in the page's bounded direct turns (`Direct.turn`). A store
that is away ends no stream; a call it must answer is answered 200 with `reconnecting` and a
sentence, and the page tries again (a 5xx would read as a broken server).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading

import anyio
import orjson
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from core.serving.classroom import Classroom, Forbidden, Gone, Leader, Reconnecting
from core.serving.classstore import Full, Lesson, lesson_of, lesson_view
from core.view import tour
from core.view.options import Refused
from ui import events, render
from ui.direct import json_answer, json_body
from ui.pollroutes import PollRoutes
from ui.visitors import visitor_of_request

LOG = logging.getLogger(__name__)
PREFIX = "/explorer/class"
MAX_BODY = 1024  # bytes: a key, a class id and a secret
KEEPALIVE = 15.0  # seconds between blank lines on an idle stream
COUNTS_SECONDS = 1.0  # how often a lecturer's stream reads how many pages follow


# every class this process serves pages of: in memory, or in the store EXPLORER_CLASS_STORE names
CLASSROOM = Classroom()


class Streams:
    """The class streams this process serves, woken when their class changes.

    A stream holds no thread: a new lesson wakes its class's streams, an idle one writes a
    blank line every `KEEPALIVE` s, a lecturer's reads the counts every second.
    """

    def __init__(self, classroom: Classroom) -> None:
        self.classroom = classroom
        self.loop: asyncio.AbstractEventLoop | None = None
        self.changed: dict[str, asyncio.Event] = {}  # class id -> set when it changes (then replaced)
        self.lessons: dict[str, Lesson] = {}  # the newest lesson heard of each class with a stream here
        self.streams: dict[str, int] = {}  # class id -> its streams here
        self.open: dict[str, object] = {}  # page key -> its stream's token: a page's newer stream replaces its older
        classroom.listen(self._heard)
        classroom.hear(self._wake_soon)

    def _heard(self, lesson: Lesson) -> None:
        """A new lesson, from any process (on the store's thread)."""
        self._soon(self._keep, lesson)

    def _keep(self, lesson: Lesson) -> None:
        old = self.lessons.get(lesson.id)
        if lesson.id in self.streams and (old is None or lesson.version >= old.version):  # (>=: a later end)
            self.lessons[lesson.id] = lesson
        self._wake(lesson.id)

    def _wake_soon(self, class_id: str | None) -> None:
        self._soon(self._wake, class_id)

    def _soon(self, work, *args) -> None:
        """`work(*args)` in the streams' event loop, from the store's thread; nothing once the
        loop has closed (the server is stopping: no stream is left to tell)."""
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(work, *args)

    def _wake(self, class_id: str | None) -> None:
        """Wake the streams of the class (None: of every class)."""
        for each in list(self.changed) if class_id is None else [class_id]:
            event = self.changed.get(each)
            if event is not None:
                self.changed[each] = asyncio.Event()  # the waiters hold the old one, which is set
                event.set()

    def opening(self, tab, key: str) -> object:
        """The token of the page's stream about to open (in the event loop): its older stream,
        if any, ends at once, and leaves the page connected."""
        self.loop = asyncio.get_running_loop()
        token = self.open[key] = object()
        member = tab.member
        if member is not None:
            self._wake(member.class_id)
        return token

    def release(self, key: str, token: object, member) -> None:
        """The page's stream `token` is over (its generator ended, or never began): the page
        is no longer connected, unless a newer stream of it replaced this one."""
        if self.open.get(key) is token:
            del self.open[key]
            self.classroom.disconnect(key, member)

    async def stream(self, tab, key: str, lesson: Lesson, member, receive, token: object):
        """The page's messages, one JSON line per change, until the class ends or the page goes
        (`receive`, the request's: a page that reloads or closes is let go at once, not at the
        next write that fails, so the counts are right within a second). A follower's seat was
        taken before (`Classroom.connect`); a lecturer's page is connected here."""
        class_id, leading = lesson.id, isinstance(member, Leader)
        self.streams[class_id] = self.streams.get(class_id, 0) + 1
        self.changed.setdefault(class_id, asyncio.Event())
        if class_id not in self.lessons or self.lessons[class_id].version < lesson.version:
            self.lessons[class_id] = lesson
        if leading:
            self.classroom.connect(key, member, lesson)
        sent, counts, counted = None, (0, 0), -COUNTS_SECONDS
        gone = asyncio.ensure_future(_disconnected(receive))
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
                                   own=list(self.classroom.own(key, class_id)))
                message["poll"] = self.classroom.round(class_id).message(leading)  # the round, as this page hears it
                if message != sent:
                    yield orjson.dumps(message) + b"\n"
                    sent = message
                if message["ended"]:
                    return
                changed = asyncio.ensure_future(self.changed[class_id].wait())
                await asyncio.wait((changed, gone), timeout=COUNTS_SECONDS if leading else KEEPALIVE,
                                   return_when=asyncio.FIRST_COMPLETED)
                woke = changed.done()
                changed.cancel()
                if gone.done():
                    return
                if not woke and not leading:
                    yield b"\n"  # kept alive through proxies
        finally:  # also when the response is cancelled (the page went): so nothing here awaits
            gone.cancel()
            self.release(key, token, member)
            self.streams[class_id] -= 1
            if not self.streams[class_id]:
                for held in (self.streams, self.changed, self.lessons):
                    held.pop(class_id, None)


class ClassRoutes:
    """The routes of one page (`Page.direct` computes what `lead` and `follow` show)."""

    def __init__(self, page, classroom: Classroom) -> None:
        self.page = page
        self.classroom = classroom
        self.streams = Streams(self.classroom)
        self.polls = PollRoutes(page, classroom)  # a round of answers (ui/pollroutes.py)

    def routes(self) -> list[Route]:
        handlers = {name: getattr(self, name) for name in ("start", "lead", "follow", "end", "stream")}
        handlers.update(self.polls.handlers())
        return [Route(f"{PREFIX}/{name}", self._endpoint(name, handler), methods=["POST"])
                for name, handler in handlers.items()]

    def _endpoint(self, name: str, handler):

        async def endpoint(request: Request) -> Response:
            sent, within = await json_body(request, MAX_BODY)
            if not within:
                return json_answer({"error": f"A class call is at most {MAX_BODY:,} bytes; this one is larger."}, 413)
            try:
                if not isinstance(sent, dict) or not isinstance(sent.get("key"), str):
                    raise Refused("This request carries no valid page key; reload the page.")
                tab, _ = events.CHANNELS.by_key(sent["key"])
                return await handler(request, tab, sent)
            except Reconnecting as error:  # nobody's fault: the page says so, and tries again
                return json_answer({"error": str(error), "reconnecting": True})
            except Refused as error:  # a sentence, with the status that says what kind
                status = {Forbidden: 403, Gone: 404, Full: 429}.get(type(error), 400)
                return json_answer({"error": str(error)}, status)
            except Exception:  # a fault (a bug): logged here, a plain sentence there
                LOG.exception("class call %s failed", name)
                return json_answer({"error": "The class call failed on the server; the page tries again."}, 500)

        return endpoint

    async def start(self, request: Request, tab, sent: dict) -> Response:
        address = visitor_of_request(request)
        lesson, secret = await anyio.to_thread.run_sync(self.classroom.start, tab, address)
        threading.Thread(target=self.warm, name="class-warm", daemon=True).start()
        return json_answer({"class": lesson.id, "secret": secret, "step": lesson.step})

    def warm(self) -> None:
        """Draw every tour step's plane once, in the background, when a class starts: a class
        is the tour's audience, and its first lesson on BERT's tables would otherwise load them
        (and fit their vocabulary plane) while a hundred pages wait. The planes are kept for
        the followers (`render.plane`); the pretrained tables stay loaded, as for any visitor."""
        from core.serving.tabs import session_for
        from core.tables.session import Session

        for step in tour.STEPS:
            with contextlib.suppress(Refused):
                render.plane(self.page, step.view, session_for(step.view, Session.create()))

    async def lead(self, request: Request, tab, sent: dict) -> Response:
        leader, lesson = await anyio.to_thread.run_sync(self.classroom.lead, sent.get("class"), sent.get("secret"))
        before = tab.member

        def detach(_lesson: Lesson) -> None:  # showing this class's lesson is no change of the class led before
            tab.member = None

        def led(_lesson: Lesson, shown: bool) -> None:  # the page leads once it shows the lesson
            tab.member = leader if shown else before

        answer = await self._show(tab, lesson, detach, led)
        return json_answer({**answer, "class": lesson.id})

    async def follow(self, request: Request, tab, sent: dict) -> Response:
        member, lesson = await anyio.to_thread.run_sync(self.classroom.follow, tab)
        if member.following and member.shown >= lesson.version:  # shown already: a page asking twice
            return json_answer({"values": {}, "version": member.shown})
        answer = await self._show(tab, lesson, lambda shown: self.classroom.expect(member, shown),
                                  lambda shown, took: self.classroom.shown(member, shown, took))
        return json_answer(answer)

    async def end(self, request: Request, tab, sent: dict) -> Response:
        lesson = await anyio.to_thread.run_sync(self.classroom.end, tab, sent.get("secret"))
        return json_answer({"ended": lesson.ended})

    async def stream(self, request: Request, tab, sent: dict) -> Response:
        member = tab.member
        if isinstance(member, Leader) and member.class_id == sent.get("class"):
            lesson = await anyio.to_thread.run_sync(self.classroom.lesson, member.class_id)
        else:
            before = member
            member = await anyio.to_thread.run_sync(self.classroom.join, tab, sent.get("class"))
            try:  # the seat, taken before the answer begins: a class that is full says so with a 429
                lesson = await anyio.to_thread.run_sync(self.classroom.lesson, member.class_id)
                await anyio.to_thread.run_sync(self.classroom.connect, sent["key"], member, lesson)
            except Refused:  # refused: the page is as it was
                tab.member = before
                raise
        token = self.streams.opening(tab, sent["key"])
        # the page is let go when its stream ends, or when the answer ends before the stream began
        return StreamingResponse(self.streams.stream(tab, sent["key"], lesson, member, request.receive, token),
                                 media_type="application/x-ndjson",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
                                 background=BackgroundTask(self.streams.release, sent["key"], token, member))

    async def _show(self, tab, lesson: Lesson, before, after) -> dict:
        """Show `tab` the class's lesson, in the page's direct turn: `before(lesson)`,
        then the view, then `after(lesson, shown)`, `shown` being whether the tab took it (a
        view can be refused: the memory budget, a training running). The lesson is read again
        when the turn comes, so a follower that waited behind a class shows the newest; the
        answer says which (`version`)."""

        def showing(shown: Lesson):
            return lambda view: lesson_view(shown.query).with_(presenter=view.presenter).seen_as(view)

        # a lesson's large random layer is built in the heavy pool first, as a link's is
        await anyio.to_thread.run_sync(events.built_first, tab, showing(lesson))

        def work() -> dict:
            shown = self.classroom.newest(lesson)
            before(shown)
            answer = self.page.direct.show(tab, showing(shown))
            after(shown, lesson_of(tab.view) == shown.query)
            return {**answer, "version": shown.version}

        return await self.page.direct.turn(tab, work)


async def _disconnected(receive) -> None:
    """Returns when the client has gone (the request's body was read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


__all__ = ["ClassRoutes"]
