"""A class pressing *Train* at once (tour step 7), against the same burst with every student's own tables.

    python -m bench.train_burst [--students 40] [--spread 2] [--steps 100]

One launched app (`python app.py`, as on a Space). Each student is its own page (bench/pages.py
`RoutePage`, opened once for both bursts): it draws its sentences, then presses *Train* at a
random moment within --spread seconds, its curve streamed as the page's route streams it
(`burst`). Two bursts run one after the other in one process: ours, every student on the same
tables (the tour's), so the trainings are identical and the app runs one for the class
(`core.serving.jobs.Jobs`, shared by key); and the baseline, every student on tables of their own
(a random seed each), so every training must run: the fair line alone. For each it prints how
many trained and how many were refused, when the last was done (from the burst's first press),
and a typing student's update latency (p50/p95) during the burst against the same student's
alone (`typist`). Times are measured, never asserted.
"""

from __future__ import annotations

import argparse
import html
import json
import random
import re
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from bench.appserver import launched_app
from bench.pages import RoutePage
from bench.report import percentile

SENTENCES = ("The cat sat on the mat.", "A dog slept on the rug.")


@dataclass
class Burst:
    trained: int = 0
    refused: list[str] = field(default_factory=list)
    last_done: float = 0.0
    typing: list[float] = field(default_factory=list)


def summary_of(merged) -> tuple[str, str]:
    """The training summary and the notice's text, from a training's answers merged."""
    text = lambda value: value if isinstance(value, str) else ""  # noqa: E731 - an output left as it is is absent
    notice = html.unescape(re.sub(r"<[^>]+>|⚠️", "", text(merged.get("notice")))).strip()
    return text(merged.get("train-summary")), notice or text(merged.get("error"))


def typist(url: str, stop: threading.Event, seconds: list[float]) -> None:
    """A student typing on beside the burst, as the page sends keystrokes (bench/pages.py
    `RoutePage`): one update after another, each timed."""
    with RoutePage(url, timeout=300) as student:
        n = 0
        while not stop.is_set():
            n += 1
            began = time.perf_counter()
            student.change(sentence_a=f"the student keeps typing word {n}", sentence_b="")
            seconds.append(time.perf_counter() - began)
            time.sleep(0.15)


def burst(url: str, pages: list[RoutePage], spread: float, steps: int, shared: bool, seed: int) -> Burst:
    rng = random.Random(seed)
    students = len(pages)
    out, lock = Burst(), threading.Lock()
    for index, page in enumerate(pages):
        if not shared:  # tables of their own: the default settings, a seed each
            page.change(seed=1000 + seed * students + index)
        page.change(sentence_a=SENTENCES[0], sentence_b=SENTENCES[1])
    stop, typing = threading.Event(), []
    watcher = threading.Thread(target=typist, args=(url, stop, typing), daemon=True)
    watcher.start()
    time.sleep(1.0)
    began = time.perf_counter()

    def press(page: RoutePage) -> None:
        time.sleep(rng.uniform(0, spread))
        merged, _ = page.train(steps, "builtin")
        summary, notice = summary_of(merged)
        with lock:
            if summary.startswith("Trained"):
                out.trained += 1
            else:
                out.refused.append(notice or summary)
            out.last_done = max(out.last_done, time.perf_counter() - began)

    with ThreadPoolExecutor(max_workers=students) as pool:
        list(pool.map(press, pages))
    stop.set()
    watcher.join(30)
    out.typing = typing
    return out


def alone(url: str, seconds: float = 8.0) -> list[float]:
    stop, typing = threading.Event(), []
    watcher = threading.Thread(target=typist, args=(url, stop, typing), daemon=True)
    watcher.start()
    time.sleep(seconds)
    stop.set()
    watcher.join(30)
    return typing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--spread", type=float, default=2.0, help="seconds within which every student presses Train")
    parser.add_argument("--steps", type=int, default=100, help="steps per training (the page's default)")
    args = parser.parse_args()
    with launched_app() as (url, _):
        quiet = alone(url)
        with ThreadPoolExecutor(max_workers=8) as pool:  # the pages open before the lesson starts
            pages = list(pool.map(lambda _: RoutePage(url, timeout=300), range(args.students)))
        try:
            runs = {name: burst(url, pages, args.spread, args.steps, shared, seed)
                    for seed, (name, shared) in enumerate((("ours: the same tables", True),
                                                           ("baseline: tables of their own", False)))}
        finally:
            for page in pages:
                page.close()
    print(f"\n{args.students} students press Train ({args.steps} steps) within {args.spread:g} s; one process")
    print(f"a typing student alone: p50 {statistics.median(quiet) * 1000:.0f} ms, "
          f"p95 {percentile(quiet, 0.95) * 1000:.0f} ms")
    print(f"{'burst':32} {'trained':>8} {'refused':>8} {'last done':>10} {'typing p50':>11} {'p95':>8} "
          f"{'p95/alone':>10}")
    for name, run in runs.items():
        p50, p95 = statistics.median(run.typing) * 1000, percentile(run.typing, 0.95) * 1000
        print(f"{name:32} {run.trained:>8} {len(run.refused):>8} {run.last_done:>9.1f}s {p50:>9.0f}ms "
              f"{p95:>6.0f}ms {p95 / (percentile(quiet, 0.95) * 1000):>9.2f}×")
        for reason in sorted(set(run.refused))[:3]:
            print(f"    refused: {reason}")
    ours = next(iter(runs.values()))
    print(json.dumps({"refused": len(ours.refused), "last": ours.last_done,  # the last line, for bench/run.py
                      "typing_p95": percentile(ours.typing, 0.95), "alone_p95": percentile(quiet, 0.95)}))


if __name__ == "__main__":
    main()
