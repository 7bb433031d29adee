"""A stranger's loop of class calls beside a student typing: what it costs the student, and the server.

    python -m bench.class_flood [--calls 3000] [--at-once 20] [--windows 4] [--quick]

One launched app (`python app.py`, one process as a Space runs it). A student's page types at
5 keys/s on the page's route (bench/class_follow.py `Page.type`) from its own address while one
tab of a stranger's address posts `explorer/class/start` --calls times, --at-once at a time (each
start ends the class the tab led before, so a loop of them would churn classes under every other
bound), in --windows windows, each followed by as long with the student alone: its key-to-answer
latency beside the loop and alone, side by side. Beside them: the server's threads and its CPU.
Targets (bench/run.py, measure `flood`): the student's p95 beside the loop within 1.5× of alone,
and the server's thread count flat. Times are measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable

import httpx
import psutil

from bench.appserver import launched_app, tree_seconds
from bench.class_follow import Page, now
from bench.report import ms, percentile, tables_and_errors, times

STUDENT, STRANGER = "198.51.100.9", "203.0.113.66"  # documentation addresses, forwarded as a proxy would


async def typing(page: Page, seed: int, until: Callable[[], bool]) -> list[float]:
    """Keystrokes at 5 a second until `until()`; their key-to-answer latencies."""
    latencies: list[float] = []
    stop = asyncio.Event()
    task = page.spawn(page.type(stop, "violin", seed, latencies))
    while not until() and not task.done():
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait([task], timeout=60)
    return latencies


async def stranger_tab(url: str, at_once: int) -> Page:
    """The stranger's tab, on a script's client: as many connections as calls at once (a browser has 6)."""
    stranger = Page(url, STRANGER)
    await stranger.http.aclose()
    stranger.http = httpx.AsyncClient(base_url=url, headers={"X-Forwarded-For": STRANGER}, timeout=120,
                                      limits=httpx.Limits(max_connections=at_once, max_keepalive_connections=at_once))
    await stranger.open()
    return stranger


async def flood(stranger: Page, calls: int, at_once: int, statuses: dict[int, int]) -> None:
    """The stranger's tab posts `start` `calls` times, `at_once` at a time; each answer's status counted."""
    sent = iter(range(calls))

    async def worker() -> None:
        for _ in sent:
            try:
                answer = await stranger.http.post("explorer/class/start", json={"key": stranger.key})
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
            except httpx.HTTPError:
                statuses[0] = statuses.get(0, 0) + 1

    await asyncio.gather(*(worker() for _ in range(at_once)))


async def run(url: str, process: psutil.Process, calls: int, at_once: int, windows: int, say) -> dict:
    """`windows` pairs, side by side: the flood's share of the calls with the student typing throughout,
    then the student alone for as long; the machine's other work falls on both alike."""
    student, stranger = Page(url, STUDENT), await stranger_tab(url, at_once)
    await student.open()
    found: dict = {"calls": calls, "at_once": at_once, "alone": [], "flood": [], "statuses": {}, "seconds": 0.0}
    try:
        began = now()
        await typing(student, 0, lambda: now() - began > 2.0)  # warm: the plane drawn once, the tables at hand
        threads, cpu, began = process.num_threads(), tree_seconds(process), now()
        for window in range(windows):
            flooding = asyncio.ensure_future(flood(stranger, calls // windows, at_once, found["statuses"]))
            start = now()
            found["flood"] += await typing(student, 2 * window + 1, flooding.done)
            await flooding
            took = now() - start
            await asyncio.sleep(1.0)  # the last held refusals answered
            alone_since = now()
            found["alone"] += await typing(student, 2 * window + 2,
                                           lambda since=alone_since, took=took: now() - since > took)
            found["seconds"] += took
            say(f"  window {window + 1} of {windows}: {took:.0f} s flooded, as long alone")
        found["threads"] = (threads, process.num_threads())
        found["cpu"] = (tree_seconds(process) - cpu) / (now() - began)
    finally:
        found["errors"] = student.errors + stranger.errors
        await student.close()
        await stranger.close()
    return found


def measure(calls: int = 3000, at_once: int = 20, windows: int = 4, say=lambda line: print(line, flush=True)) -> dict:
    with launched_app() as (url, process):
        return asyncio.run(run(url, process, calls, at_once, windows, say))


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    alone, flooded = found["alone"], found["flood"]
    base = percentile(alone, 0.95)
    statuses = ", ".join(f"{status}: {count:,}" for status, count in sorted(found["statuses"].items()))
    rows = [(name, str(len(keys)), ms(statistics.median(keys)) if keys else "—", ms(percentile(keys, 0.95)),
             times(percentile(keys, 0.95) / base) if keys and base else "—", answered)
            for name, keys, answered in (("alone", alone, "—"), ("beside the loop", flooded, statuses))]
    threads = found["threads"]
    return [(f"a student's keys (5 a second) beside one tab's {found['calls']:,} class starts, {found['at_once']} "
             f"at a time, in windows side by side with as long alone ({found['seconds']:.0f} s each way); server "
             f"threads {threads[0]} → {threads[1]}, server CPU {100 * found['cpu']:.0f}% of one core",
             ("student's keys", "keys", "p50", "p95", "p95 / alone", "starts answered"), rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--at-once", type=int, default=20)
    parser.add_argument("--windows", type=int, default=4, help="flooded windows, each beside one alone")
    parser.add_argument("--quick", action="store_true", help="1,000 calls in 2 windows")
    args = parser.parse_args()
    calls, windows = (1000, 2) if args.quick else (args.calls, args.windows)
    print(f"python -m bench.class_flood: {calls:,} class starts from one tab, {args.at_once} at a time, beside a "
          f"student typing; {psutil.cpu_count()} CPUs", flush=True)
    began = time.monotonic()
    found = measure(calls, args.at_once, windows)
    tables_and_errors(report(found), found["errors"])
    print(f"({time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
