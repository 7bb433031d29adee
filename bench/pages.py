"""A page of the app over its one route, as the benchmarks drive it: how it opens, and its calls.

A page opens with `{"open": {"query", "narrow"}}` on `POST explorer/live` and finds its key in
the answer's address (assets/explorer.js `open`); every later call is `{"key", "change"}`
(ui/route.py). `opening` and `key_of` say that once, for the benchmarks' own asyncio clients
(bench/lecture.py, bench/class_follow.py). `RoutePage` is the tests' page client
(tests/appapi.py `Page`) on one kept-alive connection, with `change` answering the raw JSON:
a load generator shares the server's two cores, so it neither opens a connection per call nor
expands every figure it is sent.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import httpx

from tests.appapi import Page

ROUTE = "explorer/live"


class CallFailed(Exception):
    """A call the app refused as a whole (its sentence), or whose answer was not the route's JSON."""


def opening(query: str = "", narrow: bool = False) -> dict:
    """A page's first call: its address's query (a link) and its screen."""
    return {"open": {"query": query, "narrow": narrow}}


def key_of(answer: dict) -> str:
    """The tab's key, from the opening's answer (its `address` value)."""
    if "error" in answer:
        raise CallFailed(f"refused: {answer['error']}")
    return json.loads(answer["values"]["address"])["key"]


def query_of(**view) -> str:
    """A link's query for the view's fields by their link names (`a`, `b`, `source`, `maxlen`, …)."""
    return urlencode(view)


def read(response: httpx.Response) -> dict:
    """The route's answer as JSON; a refusal without JSON (the door's, a dropped call) as an error."""
    try:
        return response.json()
    except ValueError:
        return {"error": f"HTTP {response.status_code}: {response.text[:160]!r}"}


class RoutePage(Page):
    """One page of the launched app (tests/appapi.py `Page`: opened at `query` in the constructor,
    `send`, `train`, `upload`) on a kept-alive connection of its own; `headers` go with every call
    (an `X-Forwarded-For`, as the app's trusted proxy would send it)."""

    def __init__(self, app_url: str, query: str = "", narrow: bool = False, headers: dict | None = None,
                 timeout: float = 120) -> None:
        self.http = httpx.Client(timeout=httpx.Timeout(timeout, connect=30), headers=headers or {})
        try:
            super().__init__(app_url, query, narrow, headers)
        except BaseException:
            self.http.close()
            raise

    def post(self, sent: object, timeout: float | None = None) -> dict:
        return read(self.http.post(f"{self.url}{ROUTE}", json=sent))

    def change(self, **change) -> dict:
        """The page's change sent as its script sends it, the answer as it came (`values` by element
        id, or `merged` / `skipped`); `CallFailed` with the sentence when the call is refused."""
        answer = self.post({"key": self.key, "change": change})
        if "error" in answer:
            raise CallFailed(f"refused: {answer['error']}")
        return answer

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> RoutePage:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
