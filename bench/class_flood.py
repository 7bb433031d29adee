"""A stranger's loop of class calls beside a student typing: what it costs the student, and the server.

    python -m bench.class_flood [--calls 3000] [--at-once 20] [--keys 60] [--quick]

One launched app (`python app.py`, one process as a Space runs it). A student's page types at
5 keys/s on the page's route (bench/class_follow.py `Page.type`) from its own address; its
key-to-answer latency is measured alone, then while one tab of a stranger's address posts
`explorer/class/start` --calls times, --at-once at a time (each start ends the class the tab led
before, so a loop of them would churn classes under every other bound), then alone again. Beside
each: the server's threads and its CPU (the process and its children). The target (issue: "a
lecture hall behind one address"): the student's p95 during the flood within 1.5× of alone, and
the server's thread count flat. Times are measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import httpx
import psutil

from bench.appserver import launched_app, tree_seconds
from bench.class_follow import Page, now
from bench.report import ms, percentile, tables_and_errors, times

STUDENT, STRANGER = "198.51.100.9", "203.0.113.66"  # documentation addresses, forwarded as a proxy would


async def typing(page: Page, keys: int, seed: int, during: asyncio.Future | None = None) -> list[float]:
    """`keys` keystrokes at 5 a second at least, and on while `during` runs; their key-to-answer latencies."""
    latencies: list[float] = []
    stop = asyncio.Event()
    task = page.spawn(page.type(stop, "violin", seed, latencies))
    while (len(latencies) < keys or (during is not None and not during.done())) and not task.done():
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait([task], timeout=60)
    return latencies


async def flood(url: str, calls: int, at_once: int) -> dict[int, int]:
    """One tab of the stranger's posting `start` `calls` times, `at_once` at a time: statuses counted."""
    stranger = Page(url, STRANGER)
    await stranger.open()
    statuses: dict[int, int] = {}
    sent = iter(range(calls))

    async def worker() -> None:
        for _ in sent:
            try:
                answer = await stranger.http.post("explorer/class/start", json={"key": stranger.key})
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
            except httpx.HTTPError:
                statuses[0] = statuses.get(0, 0) + 1

    try:
        await asyncio.gather(*(worker() for _ in range(at_once)))
    finally:
        await stranger.close()
    return statuses


async def run(url: str, process: psutil.Process, calls: int, at_once: int, keys: int, say) -> dict:
    student = Page(url, STUDENT)
    await student.open()
    found: dict = {"calls": calls, "at_once": at_once, "phases": []}
    try:
        await typing(student, 10, 0)  # warm: the plane drawn once, the tables at hand
        for phase in ("alone", "flood", "alone after"):
            threads, cpu, began = process.num_threads(), tree_seconds(process), now()
            if phase == "flood":
                flooding = asyncio.ensure_future(flood(url, calls, at_once))
                await asyncio.sleep(1.0)  # the loop under way before the first key
                latencies = await typing(student, keys, 1, flooding)
                statuses = await flooding
            else:
                latencies, statuses = await typing(student, keys, 2), {}
            took = now() - began
            found["phases"].append({"phase": phase, "keys": latencies, "statuses": statuses, "seconds": took,
                                    "threads": (threads, process.num_threads()),
                                    "cpu": (tree_seconds(process) - cpu) / took})
            say(f"  {phase}: {len(latencies)} keys, p95 {ms(percentile(latencies, 0.95))}, {took:.0f} s")
    finally:
        found["errors"] = student.errors
        await student.close()
    return found


def measure(calls: int = 3000, at_once: int = 20, keys: int = 60, say=lambda line: print(line, flush=True)) -> dict:
    with launched_app() as (url, process):
        return asyncio.run(run(url, process, calls, at_once, keys, say))


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    alone = [k for p in found["phases"] if p["phase"] != "flood" for k in p["keys"]]
    base = percentile(alone, 0.95)
    rows = []
    for p in found["phases"]:
        keys = p["keys"]
        statuses = ", ".join(f"{status}: {count:,}" for status, count in sorted(p["statuses"].items())) or "—"
        p50 = ms(statistics.median(keys)) if keys else "—"
        rows.append((p["phase"], str(len(keys)), p50, ms(percentile(keys, 0.95)),
                     times(percentile(keys, 0.95) / base) if keys and base else "—", statuses,
                     f"{p['threads'][0]} → {p['threads'][1]}", f"{100 * p['cpu']:.0f}%"))
    return [(f"a student's keys (5 a second) beside one tab's {found['calls']:,} class starts, {found['at_once']} at "
             "a time; ratio: p95 over the p95 of both phases alone; CPU: the server's, % of one core",
             ("phase", "keys", "p50", "p95", "p95 / alone", "starts answered", "server threads", "server CPU"),
             rows)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--at-once", type=int, default=20)
    parser.add_argument("--keys", type=int, default=60, help="keys the student types in each phase")
    parser.add_argument("--quick", action="store_true", help="1,000 calls, 40 keys")
    args = parser.parse_args()
    calls, keys = (1000, 40) if args.quick else (args.calls, args.keys)
    print(f"python -m bench.class_flood: {calls:,} class starts from one tab, {args.at_once} at a time, beside a "
          f"student typing {keys} keys; {psutil.cpu_count()} CPUs", flush=True)
    began = time.monotonic()
    found = measure(calls, args.at_once, keys)
    tables_and_errors(report(found), found["errors"])
    print(f"({time.monotonic() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
