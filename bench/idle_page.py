"""What an open page costs when nobody touches it, and what opening one costs, against a minimal Gradio page.

    python -m bench.idle_page [--repeats 2]

Two servers side by side, each in its own child process: the app (`python app.py`) and
bench/first_load.py's minimal `gr.Blocks` page (a textbox and a plot). For each, idle: three
pages drawn, then 20 s untouched: the machine's busy time beyond the same 20 s with none open,
as a share of one core per page (whatever a page does while idle, a timer or a frame asked for
again and again), and the server's own share with no page open (whatever it polls). Opening:
the machine's CPU seconds until a page has drawn its plot and gone quiet, in a fresh browser
context (an empty cache: a first visit) and as a new tab of a context that opened the page
before (a student's own browser; the browser tests open their pages so). Medians of --repeats
runs, on a quiet machine. Measured, never asserted.
"""

from __future__ import annotations

import statistics
import sys
import time
from contextlib import ExitStack

import psutil

from bench.appserver import launched, launched_app, tree_seconds
from bench.first_load import DRAWN, MINIMAL
from tests.conftest import CHROMIUM, launch_chromium

PAGES = 3
IDLE_SECONDS = 20.0
VIEWPORT = {"width": 1400, "height": 1000}


def machine_seconds() -> float:
    """CPU seconds the whole machine has been busy (every process: the browser's, which come and
    go with their tabs, and both servers'). Run on a quiet machine."""
    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


def idle(browser, url: str, drawn: str, server: psutil.Process) -> dict:
    """Shares of a core while untouched: the server alone, then each of `PAGES` open pages
    (the machine's busy time with them open, less the same time's with none)."""
    before, machine = tree_seconds(server), machine_seconds()
    time.sleep(IDLE_SECONDS)
    alone = (tree_seconds(server) - before) / IDLE_SECONDS
    quiet = (machine_seconds() - machine) / IDLE_SECONDS
    context = browser.new_context(viewport=VIEWPORT)
    try:
        for _ in range(PAGES):
            page = context.new_page()
            page.goto(url)
            page.wait_for_function(drawn, timeout=120_000)
        time.sleep(3)  # the first answers' follow-ups
        machine = machine_seconds()
        time.sleep(IDLE_SECONDS)
        busy = (machine_seconds() - machine) / IDLE_SECONDS
    finally:
        context.close()
    return {"server alone": alone, "a page": (busy - quiet) / PAGES}


def opening(browser, url: str, drawn: str, kept) -> float:
    """The machine's CPU seconds until a page has drawn and gone quiet: in a fresh context, or
    as a new tab of `kept`."""
    time.sleep(2)  # what the last page's closing set going ends first
    spent = machine_seconds()
    context = kept or browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(drawn, timeout=120_000)
    page.wait_for_load_state("networkidle")
    time.sleep(1)  # scripts compiled in the background after the first draw
    spent = machine_seconds() - spent
    if kept:
        page.close()
    else:
        context.close()
    return spent


def measure(repeats: int = 2) -> dict:
    from playwright.sync_api import sync_playwright

    if CHROMIUM is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    found: dict = {name: {"server alone": [], "a page": [], "fresh": [], "tab": []} for name in ("app", "minimal")}
    with ExitStack() as stack:
        servers = {"app": stack.enter_context(launched_app()),
                   "minimal": stack.enter_context(launched([sys.executable, "-c", MINIMAL], "the minimal page"))}
        playwright = stack.enter_context(sync_playwright())
        browser = launch_chromium(playwright)
        stack.callback(browser.close)
        for _ in range(repeats):
            for name, (url, server) in servers.items():
                for key, share in idle(browser, url, DRAWN[name], server).items():
                    found[name][key].append(share)
                kept = browser.new_context(viewport=VIEWPORT)
                opening(browser, url, DRAWN[name], kept)  # the context's first visit fills its cache
                found[name]["fresh"].append(opening(browser, url, DRAWN[name], None))
                found[name]["tab"].append(opening(browser, url, DRAWN[name], kept))
                kept.close()
    return {name: {key: statistics.median(values) for key, values in measured.items()}
            for name, measured in found.items()}


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    app, minimal = found["app"], found["minimal"]
    rows = [(label, f"{m['server alone']:.1%}", f"{m['a page']:.1%}", f"{m['fresh']:.2f}", f"{m['tab']:.2f}")
            for label, m in (("the app", app), ("minimal page (a textbox and a plot)", minimal))]
    rows.append(("the app / minimal", f"{app['server alone'] / minimal['server alone']:.2f}×",
                 f"{app['a page'] / minimal['a page']:.2f}×", f"{app['fresh'] / minimal['fresh']:.2f}×",
                 f"{app['tab'] / minimal['tab']:.2f}×"))
    title = f"idle for {IDLE_SECONDS:.0f} s (a core's share) and opening a page (the machine's CPU seconds; medians)"
    return [(title, ("page", "server, no page open", "each open page, idle", "open: fresh context",
                     "open: tab of a kept context"), rows)]


def main() -> None:
    from bench.report import run_repeated

    run_repeated(__doc__, measure, report, 2)


if __name__ == "__main__":
    main()
