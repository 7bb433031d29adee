"""A class pressing *Next* at once (the lecturer says "next step"), against an echo burst.

    python -m bench.next_burst [--students 100] [--spread 2] [--presses 3]

One launched app (`python app.py`, as on a Space) and, side by side, a one-textbox echo app
(bench/server_cpu.py's), each in its own process. Every student is its own session, opened as
a page opens (over its route, bench/load.py `PageSession`). Then, --presses times, every
student presses *Next* at a random moment within --spread seconds (the page's `next_step`
event, through gradio's queue like the button), and waits for the step to be drawn; the echo
burst sends the echo event at the same moments. A press's time is from its moment to its
answer. Reported: p50, p95 and the last of each burst, and ours / echo. Times are measured,
never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from bench.appserver import launched, launched_app
from bench.load import HttpSession, PageSession, endpoints_of
from bench.report import percentile

TIMEOUT = 120


def burst(sessions: list, api_name: str, data: list, spread: float, seed: int) -> tuple[list[float], list[str]]:
    """Every session presses once, at a random moment within `spread` s: each press's seconds."""
    rng = random.Random(seed)
    moments = [rng.uniform(0, spread) for _ in sessions]
    seconds, errors, lock = [], [], threading.Lock()
    began = time.perf_counter() + 0.5

    def press(index: int) -> None:
        at = began + moments[index]
        time.sleep(max(0.0, at - time.perf_counter()))
        try:
            sessions[index].predict(*data, api_name=api_name)
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
        students = [PageSession(app_url, app_endpoints, TIMEOUT) for _ in range(args.students)]
        echoes = [HttpSession(echo_url, echo_endpoints, TIMEOUT) for _ in range(args.students)]
        with ThreadPoolExecutor(max_workers=8) as pool:  # the pages open before the lesson starts
            list(pool.map(lambda s: s.open(), students))
        rows = []
        for index in range(args.presses):
            ours = burst(students, "next_step", [], args.spread, index)
            echo = burst(echoes, "echo", [f"step {index}"], args.spread, index)
            rows.append((index + 1, ours, echo))
        for session in (*students, *echoes):
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
    ours_p95 = statistics.median(p for p, _ in p95s)
    echo_p95 = statistics.median(e for _, e in p95s)
    print(f"median p95: ours {ours_p95 * 1000:.0f} ms, echo {echo_p95 * 1000:.0f} ms, ours / echo "
          f"{ours_p95 / echo_p95:.2f}×")
    print(json.dumps({"p95": ours_p95, "echo_p95": echo_p95}))  # the last line, for bench/run.py


if __name__ == "__main__":
    main()
