"""A class pressing *Next* at once (the lecturer says "next step"), against an echo burst.

    python -m bench.next_burst [--students 100] [--spread 2] [--presses 3]

One launched app (`python app.py`, as on a Space) and, side by side, a one-textbox echo app
(bench/server_cpu.py's), each in its own process. Every student is its own page, opened as a
page opens (over its route, bench/pages.py `RoutePage`). Then, --presses times, every student
presses *Next* at a random moment within --spread seconds, as the page's button sends it (one
POST of `{move: 1}` to explorer/live, assets/explorer.js `send`), and waits for the step's
answer; the echo burst sends the echo event at the same moments. The same steps follow through
the public API, as many callers asking `view` of the step's link (`step=N`, what the tour's
Next shows) through gradio's queue at the same moments, each caller from an address of its own
(an API call is a page opened, and one address may open 200 at once). A press's time is from
its moment to its answer. Reported: p50, p95 and the last of each burst, and ours / echo. Times
are measured, never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from bench.appserver import launched, launched_app
from bench.load import QueueSession, endpoints_of
from bench.pages import RoutePage
from bench.report import percentile

TIMEOUT = 120


def burst(sessions: list, press_one: Callable, spread: float, seed: int) -> tuple[list[float], list[str]]:
    """Every session presses once (`press_one(session)`), at a random moment within `spread` s:
    each press's seconds."""
    rng = random.Random(seed)
    moments = [rng.uniform(0, spread) for _ in sessions]
    seconds, errors, lock = [], [], threading.Lock()
    began = time.perf_counter() + 0.5

    def press(index: int) -> None:
        at = began + moments[index]
        time.sleep(max(0.0, at - time.perf_counter()))
        try:
            press_one(sessions[index])
        except Exception as error:  # noqa: BLE001 - a failed press is counted, not raised
            with lock:
                errors.append(repr(error)[:200])
            return
        with lock:
            seconds.append(time.perf_counter() - at)

    with ThreadPoolExecutor(max_workers=len(sessions)) as pool:
        list(pool.map(press, range(len(sessions))))
    return seconds, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--spread", type=float, default=2.0, help="seconds within which every student presses")
    parser.add_argument("--presses", type=int, default=3, help="bursts, one after another (steps 1, 2, 3, …)")
    args = parser.parse_args()
    with ExitStack() as stack:
        app_url, _ = stack.enter_context(launched_app())
        echo_command = [sys.executable, "-m", "bench.server_cpu", "--serve-echo", '{"show_error": false}']
        echo_url, _ = stack.enter_context(launched(echo_command, "the echo app"))
        app_endpoints, echo_endpoints = endpoints_of(app_url), endpoints_of(echo_url)
        with ThreadPoolExecutor(max_workers=8) as pool:  # the pages open before the lesson starts
            students = list(pool.map(lambda _: RoutePage(app_url, timeout=TIMEOUT), range(args.students)))
        callers = [QueueSession(app_url, app_endpoints, TIMEOUT, {"X-Forwarded-For": f"198.51.100.{i % 250 + 1}"})
                   for i in range(args.students)]  # the API's
        echoes = [QueueSession(echo_url, echo_endpoints, TIMEOUT) for _ in range(args.students)]
        rows, api = [], []
        for index in range(args.presses):
            ours = burst(students, lambda s: s.change(move=1), args.spread, index)
            echo = burst(echoes, lambda s, index=index: s.predict(f"step {index}", api_name="echo"), args.spread, index)
            rows.append((index + 1, ours, echo))
        for index in range(args.presses):  # the same steps through the API, by callers of their own
            api.append(burst(callers, lambda s, step=index + 1: s.predict(f"step={step}", api_name="view"),
                             args.spread, index))
        for session in (*students, *callers, *echoes):
            session.close()
    print(f"\n{args.students} students press Next within {args.spread:g} s; one process each (app, echo)")
    print(f"{'burst':>5} {'':6} {'p50 ms':>8} {'p95 ms':>8} {'last ms':>8} {'errors':>7}")
    p95s = []
    for index, (ours, ours_errors), (echo, echo_errors) in rows:
        for name, seconds, errors in (("ours", ours, ours_errors), ("echo", echo, echo_errors)):
            p50, p95 = statistics.median(seconds) * 1000, percentile(seconds, 0.95) * 1000
            print(f"{index:>5} {name:6} {p50:>8.0f} {p95:>8.0f} {max(seconds) * 1000:>8.0f} {len(errors):>7}")
            for error in errors[:2]:
                print(f"      {error}")
        p95s.append((percentile(ours, 0.95), percentile(echo, 0.95)))
    for index, (seconds, errors) in enumerate(api, 1):
        p50, p95 = statistics.median(seconds) * 1000, percentile(seconds, 0.95) * 1000
        print(f"{index:>5} {'API':6} {p50:>8.0f} {p95:>8.0f} {max(seconds) * 1000:>8.0f} {len(errors):>7}")
        for error in errors[:2]:
            print(f"      {error}")
    ours_p95 = statistics.median(p for p, _ in p95s)
    echo_p95 = statistics.median(e for _, e in p95s)
    api_p95 = statistics.median(percentile(seconds, 0.95) for seconds, _ in api)
    print(f"median p95: ours {ours_p95 * 1000:.0f} ms, echo {echo_p95 * 1000:.0f} ms, ours / echo "
          f"{ours_p95 / echo_p95:.2f}×; through the API {api_p95 * 1000:.0f} ms")
    print(json.dumps({"p95": ours_p95, "echo_p95": echo_p95, "api_p95": api_p95}))  # the last line, for bench/run.py


if __name__ == "__main__":
    main()
