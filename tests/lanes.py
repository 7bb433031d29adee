"""The page's route's lanes (`ui.route.Live.lanes`, each a `ui.admission.Turns`) as a test holds them.

A flood is scaled down, not sent: a lane is held (every slot taken, `all_taken`, in the server's
own loop) while a few calls join it, so they wait and none starts; the test reads the line, then
lets it go. Calls are sent as the page sends them, from an address given in X-Forwarded-For,
which the launched app trusts from its loopback peer as from a proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import httpx

WAIT = 120  # seconds before a test gives up on an event (a fault, never a figure)


def live():
    """The launched app's page route (`ui.route.Live`)."""
    import app

    return app.demo.explorer.live


def lane(name: str):
    """One lane of the page's route: "keys", "tables" or "work"."""
    return live().lanes[name]


def server_loop() -> asyncio.AbstractEventLoop:
    """The launched app's event loop, as a lane that took a call saw it (a page's opening takes one)."""
    loops = [each.loop for each in live().lanes.values() if each.loop is not None]
    assert loops, "no call has reached the page's route yet: open a page first"
    return loops[0]


@contextlib.asynccontextmanager
async def all_taken(turns):
    """Every slot of `turns` (a `ui.admission.Turns`) taken for the block, in its loop: calls join and wait."""
    turns.running += turns.slots
    try:
        yield
    finally:
        turns.running -= turns.slots
        turns._grant()


@contextlib.contextmanager
def held(turns):
    """`turns` held for the block: every slot taken in the server's loop, so calls join and wait.
    Yields `release`, which lets them go (as the block's end does, if not called before)."""
    loop = server_loop()
    holding, let_go = threading.Event(), asyncio.Event()

    async def hold() -> None:
        async with all_taken(turns):
            holding.set()
            await let_go.wait()

    kept = asyncio.run_coroutine_threadsafe(hold(), loop)
    assert holding.wait(WAIT), "the lane was not held"

    def release() -> None:
        if not kept.done():
            loop.call_soon_threadsafe(let_go.set)
            kept.result(WAIT)

    try:
        yield release
    finally:
        release()


def until(happened, what: str) -> None:
    """Wait for `happened()` (polled), or fail saying `what` did not happen."""
    deadline = time.monotonic() + WAIT
    while not happened():
        assert time.monotonic() < deadline, f"{what} did not happen within {WAIT} s"
        time.sleep(0.02)


def post(app_url: str, key: str, change: dict, address: str) -> httpx.Response:
    """One call of a page (its key and change) to the page's route, from `address`."""
    return httpx.post(f"{app_url}explorer/live", json={"key": key, "change": change},
                      headers={"X-Forwarded-For": address}, timeout=WAIT)


def tabs_waiting(turns) -> list[str | None]:
    """The page keys of the calls waiting in `turns`, in the order they will be served."""
    return [call.tab for call in turns.waiting()]
