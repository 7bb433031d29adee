"""A class when its store goes away: Redis stopped under a lecture on two workers, then started empty.

    python -m bench.class_outage [--students 20] [--typing 3] [--outage 30]

deploy/serve.py's ClassServer (two workers behind HAProxy, its own redis-server). A lecturer's
page and --students students' pages open and follow as pages do (bench/class_follow.py `Page`).
Redis is stopped for --outage seconds, while the lecturer presses Next every 5 s and --typing
students type (5 keys a second, the page's route); then started again, empty, as `make class`
does, and the lecturer presses Next at once, then End once every follower shows that step.
Reported: every answer's status by route; streams cut (closed before the class ended); pages
that heard "reconnecting"; the seconds from Redis's start to the pages hearing the class is
back, the Next reaching every follower, and End reaching every page. Targets: no 5xx, no stream
cut, Next and End within 10 s. Times are measured, never asserted; the exit status is non-zero
only when the measure could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import time
from collections.abc import Callable

import httpx

from bench.class_follow import CallFailed, Page
from bench.report import tables_and_errors

WITHIN = 10.0  # seconds: the target, from Redis's start
PRESS_EVERY = 5.0  # seconds between the lecturer's Nexts while Redis is away
WAIT = 60.0  # seconds any one thing may take before it counts as missed


def now() -> float:
    return time.monotonic()


async def until(done: Callable[[], bool], seconds: float = WAIT) -> float | None:
    """Seconds until `done()` came true, or None when it did not within `seconds`."""
    began = now()
    while not done():
        if now() - began > seconds:
            return None
        await asyncio.sleep(0.02)
    return now() - began


def route(url: str) -> str:
    path = httpx.URL(url).path
    return "gradio (queue and page)" if "/gradio_api/" in path or path in ("", "/") else path.lstrip("/")


async def run(url: str, stop_redis: Callable[[], None], start_redis: Callable[[], None], students: int,
              typing: int, outage: float, say: Callable[[str], None]) -> dict:
    lecturer = Page(url)
    pupils = [Page(url) for _ in range(students)]
    pages = [lecturer, *pupils]
    statuses: collections.Counter = collections.Counter()

    async def counted(response: httpx.Response) -> None:
        statuses[(route(str(response.request.url)), response.status_code)] += 1

    for page in pages:
        page.http.event_hooks["response"] = [counted]
    reconnecting: set[int] = set()  # pages whose stream said so during the outage
    found: dict = {"students": students, "typing": typing, "outage": outage}
    try:
        for page in pages:
            await page.open()
        workers = collections.Counter(page.http.cookies.get("SERVERID") for page in pages)
        started, _ = await lecturer.post("explorer/class/start", {})
        if "class" not in started:
            raise CallFailed(f"start: {started.get('error')!r}")
        class_id, secret = started["class"], started["secret"]
        lecturer.listen(class_id)
        for page in pupils:
            page.listen(class_id)
        if await until(lambda: all(p.followed or p.errors for p in pupils)) is None:
            raise CallFailed("the students did not follow the first lesson")
        say(f"  {students} students following, {dict(workers)} pages per worker")

        async def next_step() -> dict:
            return await lecturer.move(1)

        typists, followers = pupils[:typing], pupils[typing:]
        watching = True

        async def watch() -> None:
            while watching:
                reconnecting.update(i for i, p in enumerate(pages) if p.last.get("reconnecting"))
                await asyncio.sleep(0.05)

        watcher = asyncio.create_task(watch())
        stop_redis()
        stopped, presses = now(), 0
        halt = asyncio.Event()
        typed: list[float] = []
        keys = [page.spawn(page.type(halt, "garden", i, typed)) for i, page in enumerate(typists)]
        while now() - stopped < outage:
            await next_step()
            presses += 1
            await asyncio.sleep(min(PRESS_EVERY, max(0.0, outage - (now() - stopped))))
        halt.set()
        await asyncio.wait(keys, timeout=WAIT)
        watching = False
        await watcher
        say(f"  Redis away {now() - stopped:.0f} s: {presses} Nexts, {len(typed)} keys typed, "
            f"{len(reconnecting)} of {len(pages)} pages heard 'reconnecting'")

        start_redis()
        back = now()
        await next_step()
        step = presses + 1
        found["next_answered"] = now() - back
        found["back"] = await until(lambda: not any(p.last.get("reconnecting") for p in pages))
        found["reached"] = await until(lambda: all(
            p.last.get("step") == step and p.last.get("shown") == p.last.get("version") for p in followers))
        found["reached"] = None if found["reached"] is None else now() - back
        found["lecturer_step"] = lecturer.last.get("step")
        ended, _ = await lecturer.post("explorer/class/end", {"secret": secret})
        found["end_answer"] = ended
        found["ended"] = await until(lambda: all(p.last.get("ended") for p in pages))
        found["ended"] = None if found["ended"] is None else now() - back
        found["typists_following"] = sum(bool(p.last.get("following")) for p in typists)
    finally:
        found["statuses"] = statuses
        found["reconnecting"] = len(reconnecting)
        found["pages"] = len(pages)
        found["errors"] = [e for page in pages for e in page.errors]
        found["cut"] = sum("stream" in e for e in found["errors"])
        await asyncio.gather(*(page.close() for page in pages), return_exceptions=True)
    return found


def measure(students: int = 20, typing: int = 3, outage: float = 30.0,
            say: Callable[[str], None] = lambda line: print(line, flush=True)) -> dict:
    """The whole measure on a class server of its own (two workers, HAProxy, its Redis). A Next
    has reached a follower when the follower has followed it and its stream says so."""
    from deploy.serve import ClassServer, free_port

    kept = os.environ.pop("EXPLORER_CLASS_STORE", None)  # the server's own Redis: this measure stops it
    try:
        with ClassServer(2, port=free_port(), host="127.0.0.1", first_worker_port=0) as server:
            say(f"  class server up: {server.url}, Redis on port {server.redis_port}")
            # through supervisord, as `supervisorctl stop redis` / `start redis` would: started without waiting
            # for its one second of startsecs, so the times below count from Redis's own start
            return asyncio.run(run(server.url, lambda: server.rpc.stopProcess("redis"),
                                   lambda: server.rpc.startProcess("redis", False), students, typing, outage, say))
    finally:
        if kept is not None:
            os.environ["EXPLORER_CLASS_STORE"] = kept


def seconds(value: float | None) -> str:
    return "missed" if value is None else f"{value:.1f} s"


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    by_route: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for (name, status), count in found["statuses"].items():
        by_route[name][status] += count
    routes = [(name, ", ".join(f"{status}: {count}" for status, count in sorted(counts.items())),
               str(sum(c for s, c in counts.items() if s >= 500))) for name, counts in sorted(by_route.items())]
    times_ = [("pages say the class is back (no 'reconnecting')", seconds(found.get("back")), "—"),
              ("the next Next reaches every follower (followed, stream says so)", seconds(found.get("reached")),
               f"≤ {WITHIN:g} s"),
              ("End reaches every page", seconds(found.get("ended")), f"≤ {WITHIN:g} s")]
    return [
        (f"class outage: answers by route, {found['students']} students ({found['typing']} typing) and a lecturer "
         f"over two workers, Redis away {found['outage']:g} s",
         ("route", "statuses", "5xx"), routes),
        (f"class outage: from Redis's start (empty); {found['reconnecting']} of {found['pages']} pages heard "
         f"'reconnecting' while it was away; streams cut: {found['cut']}; the lecturer's step after: "
         f"{found.get('lecturer_step')}",
         ("what", "seconds", "target"), times_),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20)
    parser.add_argument("--typing", type=int, default=3, help="students who type while Redis is away")
    parser.add_argument("--outage", type=float, default=30.0, help="seconds Redis is stopped")
    args = parser.parse_args()
    print(f"python -m bench.class_outage: {args.students} students ({args.typing} typing), Redis away "
          f"{args.outage:g} s; {os.cpu_count()} CPUs", flush=True)
    try:
        found = measure(args.students, args.typing, args.outage)
    except (RuntimeError, CallFailed, httpx.HTTPError) as error:
        print(f"the measure could not run: {error}", file=sys.stderr)
        return 1
    tables_and_errors(report(found), found["errors"])
    print(f"  End answered: {found.get('end_answer')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
