"""`GET /explorer/code?QUERY`: the script of the view a link opens, for the API and for slides.

QUERY is a link's query string, as the address bar holds it. The link is read as the page reads
it (`core.view.share.from_query`, which never raises) and opened as the page opens it: in a tab of its
own, with the tables a page opening it would get, on the page's paths and within its bounds (a
large random table is built in the heavy pool first, `ui.events.built_first`; every table is
reserved in the memory budget). So the script's notes are the page's notes, word for word, and
its plane is drawn as the page draws it. The answer is `text/x-python`; a refusal is a sentence.

Bounds: each call counts as a new page of its client's address (`core.serving.tabs.NewTabs`); the
scripts are written one at a time, on a worker thread, in fair turns across addresses on a line
the process's one account reads (`ui.visitors`), so this route is no side door past its bounds.
"""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from core.drawing.code import recipe, script
from core.serving.tabs import Tab
from core.view import share
from core.view.options import MAX_QUERY, Refused
from core.view.state import View
from ui import events
from ui.visitors import VISITORS, Busy, Turns, Visitors, visitor_of, work_of

PATH = "/explorer/code"
FILE_NAME = "embedding_view.py"


class CodeRoute:
    """The route and its line: one script written at a time, what waits counted by `visitors`."""

    def __init__(self, visitors: Visitors = VISITORS) -> None:
        self.turns = Turns(visitors, 1)
        self._threads: anyio.CapacityLimiter | None = None  # made in the server's event loop, on first use

    def route(self) -> Route:
        return Route(PATH, self.answer, methods=["GET"])

    async def answer(self, request: Request) -> Response:
        if len(request.scope.get("query_string", b"")) > MAX_QUERY:
            return PlainTextResponse(f"This link is too long: a link to a view is at most {MAX_QUERY:,} characters "
                                     "after the question mark.", 414)
        params = request.query_params
        link = share.from_query({key: params.getlist(key) for key in params})
        host = events.host_of(request)
        try:
            events.TABS.new_tabs.take(host)  # a script is a page opened, and counted so
            turn = self.turns.enter(visitor_of(host), None, work_of(len(request.scope.get("query_string", b""))))
        except Refused as error:
            return PlainTextResponse(str(error), 429)
        except Busy as busy:
            return PlainTextResponse(str(busy), busy.refusal.status,
                                     headers={"Retry-After": str(busy.refusal.retry)})
        if self._threads is None:
            self._threads = anyio.CapacityLimiter(1)
        try:
            async with self.turns.taken(turn):
                text = await anyio.to_thread.run_sync(written, link, limiter=self._threads)
        except Refused as error:  # the heavy pool's line is full, or the default tables cannot be had
            return PlainTextResponse(str(error), 503)
        return Response(text, media_type="text/x-python; charset=utf-8",
                        headers={"Content-Disposition": f'inline; filename="{FILE_NAME}"'})


def written(link: share.Link) -> str:
    """The script of the view `link` opens, as `ui.tourpanel.open_link` opens it: the link's view,
    or, when it cannot be had, the default view, with a note that says so."""
    tab = Tab()

    def opened(view: View, notes: tuple[str, ...]) -> str:
        def change(_: View) -> View:  # what a page's opening applies: the whole view
            return view

        events.built_first(tab, change)
        _, made = tab.apply(change, lambda step: recipe(step.view, step.session, (*notes, *step.notes)),
                             tables=lambda session: session.restart(), whole=True)
        return script(made)

    try:
        return opened(link.view, link.notes)
    except Refused as error:
        return opened(View(), (*link.notes, f"The link's view could not be opened ({error}); showing the default "
                                            "view."))
