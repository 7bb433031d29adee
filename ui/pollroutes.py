"""A round of answers in a class, beside the class's routes: the lecturer asks, students answer.

    POST explorer/class/poll/ask      {key, secret, prompt, review}  a new round, open (the lecturer's page)
    POST explorer/class/poll/close    {key, secret}                  answers no longer taken; the words stay
    POST explorer/class/poll/clear    {key, secret}                  a new round with no prompt and no words
    POST explorer/class/poll/hide     {key, secret, word, on}        a word hidden (on) or shown again
    POST explorer/class/poll/approve  {key, secret, word, on}        under review first: a word approved or not
    POST explorer/class/poll/review   {key, secret, on}              review first on or off
    POST explorer/class/poll/csv      {key, secret}                  the round's words and counts: {csv, poll}
    POST explorer/class/poll/answer   {key, word, round}             a following student's word for the round

Each answers `{poll, own}` (`Round.message`, and this page's words this round) or `{error}`
(400/403/404/429, or 200 with `reconnecting`); every call takes a turn in its address's share
(`ui.direct.Direct.turn`), so a flood of answers costs its sender. Values are checked in core.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from core.serving.classroom import Classroom, Forbidden, Leader
from core.serving.poll import csv_of
from core.view.options import Refused
from ui.direct import json_answer
from ui.visitors import VISITORS, Turns, visitor_of_request

LECTURER = ("ask", "close", "clear", "hide", "approve", "review", "csv")
ROUTES = (*LECTURER, "answer")
SLOTS = 2  # poll calls at once: each is short, and may wait on the class's store (Redis) rather than compute


def _on(sent: dict) -> bool:
    on = sent.get("on")
    if not isinstance(on, bool):
        raise Refused("on is true or false.")
    return on


class PollRoutes:
    """The poll's routes of one page (`ui.classroutes.ClassRoutes` serves them, with its bounds)."""

    def __init__(self, page, classroom: Classroom) -> None:
        self.page = page
        self.classroom = classroom
        # a lane of their own, on the account every door shares: never skipped for the page's keystroke
        self.lane = Turns(VISITORS, SLOTS)

    def handlers(self) -> dict:
        """Each route's name (under explorer/class/poll/) and its handler (request, tab, body) -> Response."""
        return {f"poll/{name}": getattr(self, name) for name in ROUTES}

    async def _turn(self, request: Request, tab, work) -> Response:
        """`work()` (a blocking call: it may reach the store) in the page's direct turn; a call
        past its address's share is refused with the account's sentence."""
        answer = await self.page.direct.turn(tab, work, address=visitor_of_request(request), lane=self.lane)
        return json_answer(answer, 429 if "error" in answer else 200)

    async def _lecturer(self, request: Request, tab, act) -> Response:
        """`act(classroom)` by the lecturer's page, answered with the lecturer's message."""
        def work() -> dict:
            return {"poll": act(self.classroom).message(True), "own": []}
        return await self._turn(request, tab, work)

    async def ask(self, request: Request, tab, sent: dict) -> Response:
        review = sent.get("review", False)
        if not isinstance(review, bool):
            raise Refused("review is true or false.")
        return await self._lecturer(request, tab, lambda room: room.ask(tab, sent.get("secret"), sent.get("prompt"),
                                                                        review=review))

    async def close(self, request: Request, tab, sent: dict) -> Response:
        return await self._lecturer(request, tab, lambda room: room.close_round(tab, sent.get("secret")))

    async def clear(self, request: Request, tab, sent: dict) -> Response:
        return await self._lecturer(request, tab, lambda room: room.clear_round(tab, sent.get("secret")))

    async def hide(self, request: Request, tab, sent: dict) -> Response:
        on = _on(sent)
        return await self._lecturer(request, tab, lambda room: room.moderate(tab, sent.get("secret"),
                                                                             sent.get("word"), on))

    async def approve(self, request: Request, tab, sent: dict) -> Response:
        on = _on(sent)
        return await self._lecturer(request, tab, lambda room: room.approve(tab, sent.get("secret"),
                                                                            sent.get("word"), on))

    async def review(self, request: Request, tab, sent: dict) -> Response:
        on = _on(sent)
        return await self._lecturer(request, tab, lambda room: room.review(tab, sent.get("secret"), on))

    async def csv(self, request: Request, tab, sent: dict) -> Response:
        def work() -> dict:
            member = tab.member
            if not isinstance(member, Leader):
                raise Forbidden("Only the page that leads the class can download its answers.")
            self.classroom.check(member.class_id, sent.get("secret"))
            round_ = self.classroom.round(member.class_id)
            return {"csv": csv_of(round_), "poll": round_.message(True)}
        return await self._turn(request, tab, work)

    async def answer(self, request: Request, tab, sent: dict) -> Response:
        number = sent.get("round")
        if isinstance(number, bool) or not isinstance(number, int):
            raise Refused("round is the number of the round answered, a whole number.")
        address = visitor_of_request(request)

        def work() -> dict:
            round_, own = self.classroom.answer(tab, sent["key"], address, sent.get("word"), number)
            return {"poll": round_.message(False), "own": list(own)}
        return await self._turn(request, tab, work)


__all__ = ["PollRoutes", "ROUTES"]
