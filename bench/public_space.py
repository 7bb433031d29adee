"""What a public Space costs when strangers push it: heavy neighbours, crowds that train, huge text, exports.

    python bench/public_space.py [--quick]

Launches `app.py` in a child process (`bench.appserver.launched_app`) with its own gradio
cache folder, talks to it with `gradio_client` as strangers would, and prints one markdown
table, each figure beside its baseline or target measured in the same run:

1. another visitor's update latency (a 12-word pair, typed as the page sends it: bench/load.py
   `PageSession`) alone, then while one visitor loops
   every heavy endpoint in parallel threads — tab 1 on BERT's vocabulary plane loops
   `/refit`, `/export` and `/train` 200 steps; tab 2 loops `/settings` between two of the
   largest random tables — p50 and p90 against alone (target ≤ 2×);
2. server RSS per trained BERT session: after one warm-up (the tables and training's
   one-time cost), N clients each `/source` bert then `/train` 20 steps; growth / N
   (target ≤ 12 MiB);
3. a 5 MB sentence to `/embed`: the peak RSS growth while it is answered (sampled every
   10 ms) and the time to the answer (targets < 300 MiB, ≤ 3 s);
4. disk left by 12 `/export` calls from one client: the exports folder and the whole cache
   (target < 15 MB);
5. a student's keystroke (as the page sends it) while 100 strangers queue 500 `/embed` calls of
   two 10,000-character sentences: p50 and p95 against alone (reported);
6. a keystroke on GloVe with a slow regular-expression search in the view (as a link can carry
   it), against one without a search (target ≤ 2×).

Timings on a shared machine are noisy; read the ratios. Asserts nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.appserver import launched_app, mib  # noqa: E402

PAIR = ("the quick brown fox jumps over", "a lazy dog by the river")  # 12 words
LARGE = [("wordpiece", 1000, 1024, 2048, 8, seed) for seed in (1, 2)]  # ~127 MiB random layers
HUGE = "word " * 1_000_000  # 5,000,000 characters
MB = 10**6


def client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def embed_latencies(url: str, count: int) -> list[float]:
    """A student typing on: each update sent as the page sends it, and timed."""
    from bench.load import PageSession, endpoints_of

    visitor = PageSession(url, endpoints_of(url), 300)
    visitor.type(sentence_a=PAIR[0], sentence_b=PAIR[1])  # its tab exists before timing starts
    seconds = []
    try:
        for i in range(count):
            start = time.perf_counter()
            visitor.type(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1])
            seconds.append(time.perf_counter() - start)
    finally:
        visitor.close()
    return seconds


def heavy_visitor(url: str, stop: threading.Event, outcomes: Counter) -> list[threading.Thread]:
    """One visitor's two tabs looping every heavy endpoint until `stop`."""
    bert, random = client(url), client(url)
    bert.predict("bert", api_name="/source")
    bert.predict("vocabulary", api_name="/basis")

    def loop(name: str, call) -> None:
        i = 0
        while not stop.is_set():
            try:
                call(i)
                outcomes[name] += 1
            except Exception:  # a refusal is a notice, not an exception: this is a failure
                outcomes[f"{name} failed"] += 1
            i += 1

    calls = {
        "refit": lambda i: bert.predict(api_name="/refit"),
        "export": lambda i: bert.predict(f"{PAIR[0]} {i}", PAIR[1], api_name="/export"),
        "train": lambda i: bert.predict(200, "builtin", api_name="/train"),
        "settings": lambda i: random.predict(*LARGE[i % 2], api_name="/settings"),
    }
    threads = [threading.Thread(target=loop, args=item, daemon=True) for item in calls.items()]
    for thread in threads:
        thread.start()
    return threads


def beside_heavy_neighbour(url: str, count: int,
                           heavy_url: str | None = None) -> tuple[list[float], list[float], Counter]:
    """A student's update seconds alone, then while one visitor loops every heavy endpoint; and
    the heavy visitor's calls meanwhile. With `heavy_url` (another app process), the heavy
    visitor works there: the floor, what two processes sharing the machine's cores cost."""
    alone = embed_latencies(url, count)
    stop, outcomes = threading.Event(), Counter()
    threads = heavy_visitor(heavy_url or url, stop, outcomes)
    time.sleep(2)  # the loops are under way
    loaded = embed_latencies(url, count)
    stop.set()
    for thread in threads:
        thread.join(300)
    return alone, loaded, outcomes


def latency_rows(url: str, count: int) -> list[tuple[str, ...]]:
    alone, loaded, outcomes = beside_heavy_neighbour(url, count)
    rows = []
    for name, q in (("p50", 0.5), ("p90", 0.9)):
        a, b = percentile(alone, q), percentile(loaded, q)
        rows.append((f"another visitor's update {name} (12-word pair), heavy neighbour vs alone",
                     f"{b * 1000:.0f} ms", f"{a * 1000:.0f} ms alone", f"{b / a:.2f}×", "≤ 2×",
                     "yes" if b / a <= 2 else "no"))
    done = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    rows.append(("heavy neighbour's calls while measured", done, "", "", "", ""))
    return rows


def flood_rows(url: str, calls: int = 500, strangers: int = 100) -> list[tuple[str, ...]]:
    """A student typing as the page does while strangers flood gradio's queue with `calls` /embed
    calls of two 10,000-character sentences, `strangers` at once: the keystroke's latency."""
    from concurrent.futures import ThreadPoolExecutor

    from bench.load import HttpSession, endpoints_of

    big = "word " * 2_000  # 10,000 characters, the most a sentence may have
    endpoints = endpoints_of(url)

    def flood(i: int) -> None:
        stranger = HttpSession(url, endpoints, 600)
        try:
            stranger.predict(f"{big[:-10]} {i}", big, api_name="embed")
        except Exception:  # noqa: BLE001 - a refused or dropped call is the stranger's loss, not measured
            pass
        finally:
            stranger.close()

    alone = embed_latencies(url, 40)
    pool = ThreadPoolExecutor(strangers)
    for i in range(calls):
        pool.submit(flood, i)
    time.sleep(2)  # the queue is full
    flooded = embed_latencies(url, 60)
    pool.shutdown(wait=False, cancel_futures=True)
    return [(f"a keystroke {name} while {strangers} strangers queue {calls} /embed calls of 2 × 10,000 characters",
             f"{percentile(flooded, q) * 1000:.0f} ms", f"{percentile(alone, q) * 1000:.0f} ms alone",
             f"{percentile(flooded, q) / percentile(alone, q):.1f}×", "", "")
            for name, q in (("p50", 0.5), ("p95", 0.95))]


SLOW_PATTERN = ".{0,32}.{0,32}.{0,32}#"  # within every limit, ~1 s to scan GloVe's 400,003 words


def slow_pattern_latencies(url: str, count: int, pattern: str | None) -> list[float]:
    """Keystrokes on GloVe's tables, with `pattern` as the view's regular-expression search (as a
    link carries it) or no search; each update sent as the page sends it, and timed."""
    from bench.load import PageSession, endpoints_of

    visitor = PageSession(url, endpoints_of(url), 300)
    try:
        visitor.open()  # the page's load comes first: it sets the tab's view from the (empty) link
        visitor.predict("glove", api_name="source")
        if pattern is not None:
            visitor.predict(pattern, True, api_name="search")
        visitor.type(sentence_a=PAIR[0], sentence_b=PAIR[1])
        seconds = []
        for i in range(count):
            start = time.perf_counter()
            visitor.type(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1])
            seconds.append(time.perf_counter() - start)
        return seconds
    finally:
        visitor.close()


def slow_pattern_rows(url: str, count: int) -> list[tuple[str, ...]]:
    plain = percentile(slow_pattern_latencies(url, count, None), 0.5)
    slow = percentile(slow_pattern_latencies(url, count, SLOW_PATTERN), 0.5)
    return [(f"a keystroke (p50) with the search {SLOW_PATTERN!r} in the view, GloVe", f"{slow * 1000:.1f} ms",
             f"{plain * 1000:.1f} ms without", f"{slow / plain:.2f}×", "≤ 2×", "yes" if slow / plain <= 2 else "no")]


def session_rows(url: str, process, sessions: int) -> list[tuple[str, ...]]:
    warm = client(url)
    warm.predict("bert", api_name="/source")
    warm.predict(20, "builtin", api_name="/train")
    before = mib(process)
    crowd = []
    for _ in range(sessions):
        visitor = client(url)
        visitor.predict("bert", api_name="/source")
        visitor.predict(20, "builtin", api_name="/train")
        crowd.append(visitor)
    each = (mib(process) - before) / sessions
    return [(f"server RSS per trained BERT session ({sessions} sessions, 20 steps each)", f"{each:.2f} MiB",
             f"{before:.0f} MiB before", f"{each / 12:.2f}× target", "≤ 12 MiB", "yes" if each <= 12 else "no")]


def huge_rows(url: str, process) -> list[tuple[str, ...]]:
    visitor = client(url)
    visitor.predict(*PAIR, api_name="/embed")
    before = mib(process)
    peak, done = [before], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak.append(mib(process))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    result = visitor.predict(HUGE, "", api_name="/embed")
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    baseline = time.perf_counter()
    visitor.predict(*PAIR, api_name="/embed")
    normal = time.perf_counter() - baseline
    grown = max(peak) - before
    notice = next((v for v in reversed(result) if isinstance(v, str) and "characters" in v), "")
    answer = "refused" if "at most" in notice else "answered"
    return [
        ("peak RSS growth while a 5 MB sentence is answered", f"{grown:+.1f} MiB", f"{before:.0f} MiB before",
         f"{grown / 300:.2f}× target", "< 300 MiB", "yes" if grown < 300 else "no"),
        (f"time to the 5 MB sentence's answer ({answer})", f"{seconds:.2f} s", f"{normal * 1000:.0f} ms normal",
         f"{seconds / normal:.1f}×", "≤ 3 s", "yes" if seconds <= 3 else "no"),
    ]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def disk_rows(url: str, cache: Path) -> list[tuple[str, ...]]:
    exporter = client(url)
    exporter.predict(*PAIR, api_name="/export")
    # the tab's own folder (ui.viewpanel.export_folder); the heavy visitor left its own beside it
    tab = cache / "exports" / hashlib.sha256(exporter.session_hash.encode()).hexdigest()[:16]
    one = folder_bytes(tab)  # one export's files: the baseline
    before_exports, before = folder_bytes(cache / "exports"), folder_bytes(cache)
    for i in range(12):
        exporter.predict(f"{PAIR[0]} {i}", PAIR[1], api_name="/export")
    kept = folder_bytes(tab)
    exports = folder_bytes(cache / "exports") - before_exports + one
    whole = folder_bytes(cache) - before + one
    return [
        ("the tab's export folder after 12 exports", f"{kept / MB:.2f} MB", f"{one / MB:.2f} MB for one",
         f"{kept / one:.2f}×", "< 15 MB", "yes" if kept < 15 * MB else "no"),
        ("exports folder: what the 12 exports left", f"{exports / MB:.2f} MB", f"{12 * one / MB:.2f} MB if kept",
         f"{exports / one:.2f}×", "< 15 MB", "yes" if exports < 15 * MB else "no"),
        ("whole gradio cache: what the 12 exports left", f"{whole / MB:.2f} MB", "", f"{whole / one:.2f}×", "< 15 MB",
         "yes" if whole < 15 * MB else "no"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and sessions (a rough pass)")
    args = parser.parse_args()
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    count, sessions = (12, 4) if args.quick else (40, 12)
    with tempfile.TemporaryDirectory(prefix="public-space-cache-") as cache:
        os.environ["GRADIO_TEMP_DIR"] = cache  # the child's cache is its own, so its size is ours
        with launched_app() as (url, process):
            print(f"app at {url}, pid {process.pid}, cache {cache}", flush=True)
            rows = [*latency_rows(url, count), *slow_pattern_rows(url, count), *flood_rows(url),
                    *session_rows(url, process, sessions),
                    *huge_rows(url, process), *disk_rows(url, Path(cache))]
    print()
    print("| measure | ours | baseline | ratio | target | met |")
    print("|---|---:|---:|---:|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\n{count} /embed calls per phase; percentiles are nearest-rank. CPU count: {os.cpu_count()}; "
          f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}.")


if __name__ == "__main__":
    main()
