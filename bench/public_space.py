"""What a public Space costs when strangers push it: heavy neighbours, crowds that train, huge text, exports.

    python -m bench.public_space [--quick] [--only N ...]

Launches `app.py` in a child process (`bench.appserver.launched_app`) with its own gradio cache
folder, talks to it as strangers would, and prints one markdown table, each figure beside its
baseline or target measured in the same run. The sections (--only N; each function's docstring
gives its method and target): 1. another visitor's update beside a heavy neighbour
(`latency_rows`); 2. server RSS per trained BERT session (`session_rows`); 3. a 5 MB sentence
to `/embed` (`huge_rows`); 4. disk left by exports (`disk_rows`); 5. a student's updates while a
stranger floods gradio's queue (`flood_rows`); 6. a keystroke with a slow regular-expression
search in the view (`slow_pattern_rows`); 7. what strangers can make the server hold
(`bench.memory_attack`); 8. a typist beside a stranger's pages flooding the page's own route
(`direct_flood_rows`). Timings on a shared machine are noisy; read the ratios. Asserts nothing.
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

from bench import memory_attack
from bench.appserver import launched_app, mib
from bench.report import percentile

ATTACK_BUDGET_MIB = 1024  # section 7's budget: small enough to fill in a minute

PAIR = ("the quick brown fox jumps over", "a lazy dog by the river")  # 12 words
LARGE = [("wordpiece", 1000, 1024, 2048, 8, seed) for seed in (1, 2)]  # ~127 MiB random layers
HUGE = "word " * 1_000_000  # 5,000,000 characters
MB = 10**6


def client(url: str):
    from gradio_client import Client

    return Client(url, verbose=False, download_files=False)



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
    """Section 1: another visitor's update latency (a 12-word pair, typed as the page sends it:
    bench/load.py `PageSession`) alone, then while one visitor loops every heavy endpoint in
    parallel threads (tab 1 on BERT's vocabulary plane loops `/refit`, `/export` and `/train`
    200 steps; tab 2 loops `/settings` between two of the largest random tables): p50 and p90
    against alone (target ≤ 2×)."""
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


STRANGER = "203.0.113.7"  # the flood's address (a documentation range), as a proxy would forward it
STUDENT = "198.51.100.20"  # the student's: another person, behind another address
BIG = "word " * 2_000  # 10,000 characters, the most a sentence may have
FLOOD_PACE = 50  # calls a second once the burst is out: 3× the attacker (500 in 30 s), and
# more than a first-in-first-out queue drains of these calls, so such a queue never empties


def queue_size(http, url: str) -> int:
    return http.get(f"{url}gradio_api/queue/status").raise_for_status().json()["queue_size"]


class Senders:
    """Threads that send until `stop`: started as the block begins, stopped and joined as it ends."""

    workers: list[threading.Thread]
    stop: threading.Event

    def __enter__(self):
        for worker in self.workers:
            worker.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for worker in self.workers:
            worker.join(120)
        self.closed()

    def closed(self) -> None:
        """What the senders leave to close."""


class Flood(Senders):
    """A stranger's oversized /embed calls, each from a session hash of its own, posted to the
    plain API route (`/gradio_api/call/embed`) as the issue's attacker did: a POST queues the
    call and nobody reads the answer. `burst` calls go as fast as `threads` can post them, then
    the flood refills at `FLOOD_PACE` until it is stopped. All of it comes from one address
    (`STRANGER`, in X-Forwarded-For: the app trusts its loopback proxy, as uvicorn does by
    default), so the server sees one visitor with many tabs."""

    def __init__(self, url: str, burst: int, threads: int) -> None:
        import httpx

        self.url, self.burst, self.threads = url, burst, threads
        self.posted, self.codes, self.refusal = 0, Counter(), ""
        self.stop, self.burst_done, self.lock = threading.Event(), threading.Event(), threading.Lock()
        self.http = [httpx.Client(timeout=60, headers={"X-Forwarded-For": STRANGER}) for _ in range(threads)]
        self.workers = [threading.Thread(target=self.post_on, args=(i,), daemon=True) for i in range(threads)]

    def closed(self) -> None:
        for http in self.http:
            http.close()

    def post_on(self, worker: int) -> None:
        import json
        import uuid

        http = self.http[worker]
        # the body written once, each call's number and hash put in: the load generator shares
        # the server's cores, so its own work is kept small
        head, tail = '{"data": [' + json.dumps(f"{BIG[:-10]} ")[:-1], '", ' + json.dumps(BIG) + '], "session_hash": "'
        while not self.stop.is_set():
            with self.lock:
                n = self.posted
                self.posted += 1
            if n >= self.burst:  # the burst is out: refill at FLOOD_PACE, all threads together
                self.burst_done.set()
                if self.stop.wait(self.threads / FLOOD_PACE):
                    return
            try:
                answer = http.post(f"{self.url}gradio_api/call/embed", headers={"Content-Type": "application/json"},
                                   content=f'{head}{n}{tail}{uuid.uuid4().hex}"}}'.encode())
                code = answer.status_code
                if code != 200 and not self.refusal:
                    self.refusal = f"{code}: {answer.json().get('detail', answer.text)[:300]}"
            except Exception:  # noqa: BLE001 - a dropped connection is counted, not measured
                code = "dropped"
            with self.lock:
                self.codes[code] += 1


def student_latencies(url: str, count: int, address: str = STUDENT, queued: list[int] | None = None,
                      budget: float = 240) -> tuple[list[float], list[float], str]:
    """A student (a tab of its own, from `address`) alternating a keystroke as the page sends it (a
    direct call, whose answer brings all it changed: no queued call follows) with an update through
    gradio's queue (`embed` with a 12-word pair: what the page's other widgets, an example click
    and the API all go through). Seconds of each kind, and why it stopped early if it did: after
    at least 3 of each once `budget` seconds are spent, or at a call not answered within
    `budget` (a flooded first-in-first-out queue takes minutes). `queued` gets the queue's
    length before each update."""
    from bench.load import HttpSession, PageSession, endpoints_of

    visitor = PageSession(url, endpoints_of(url), budget)
    visitor.http.headers["X-Forwarded-For"] = address
    keystrokes, updates, stopped = [], [], ""
    began = time.monotonic()
    try:
        visitor.type(sentence_a=PAIR[0], sentence_b=PAIR[1])  # its tab exists before timing starts
        for i in range(count):
            if i >= 3 and time.monotonic() - began > budget:
                break
            if queued is not None:
                queued.append(queue_size(visitor.http, url))
            start = time.perf_counter()
            visitor.type(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1])
            keystrokes.append(time.perf_counter() - start)
            start = time.perf_counter()
            HttpSession.predict(visitor, f"{PAIR[0]} {i} again", PAIR[1], api_name="embed")
            updates.append(time.perf_counter() - start)
    except Exception as error:  # noqa: BLE001 - a call the flood starved is the measure, said in the table
        stopped = f"{type(error).__name__}: {error}"[:200]
    finally:
        visitor.close()
    return keystrokes, updates, stopped


def drained(url: str, timeout: float) -> float | None:
    """Seconds until gradio's queue is empty (None: not within `timeout`), so later sections
    measure an idle server."""
    import httpx

    start = time.monotonic()
    with httpx.Client(timeout=30) as http:
        while time.monotonic() - start < timeout:
            if queue_size(http, url) == 0:
                return time.monotonic() - start
            time.sleep(0.5)
    return None


def flood_rows(url: str, calls: int = 500, strangers: int = 50, quick: bool = False) -> list[tuple[str, ...]]:
    """Section 5: a student's updates while one stranger floods gradio's queue with `calls`
    /embed calls of two 10,000-character sentences (each from a tab of its own, `Flood`) and
    keeps refilling it; against the same student alone, in the same run. Reported: the
    student's update through the queue (target ≤ 2 s) and keystroke as the page sends it, p50
    and p95, the queue's length meanwhile, and how many of the flood were refused. Measured for
    a student behind another address (another person), then for one behind the stranger's own
    address (a class behind one school address, a stranger among it)."""
    count, budget = (12, 120) if quick else (30, 240)
    alone_keys, alone_updates, _ = student_latencies(url, count)
    measured = {}
    with Flood(url, calls, strangers) as flood:
        flood.burst_done.wait(300)
        time.sleep(1)  # the burst's last posts are answered
        for who, address in (("another address", STUDENT), ("the flood's address", STRANGER)):
            queued: list[int] = []
            measured[who] = (*student_latencies(url, count, address, queued, budget), queued)
        codes, refusal = Counter(flood.codes), flood.refusal
    drain = drained(url, 900)
    refused = sum(n for code, n in codes.items() if code != 200)
    rows = []
    for who, (flooded_keys, flooded_updates, stopped, queued) in measured.items():
        for name, alone, flooded, target in (("update through the queue", alone_updates, flooded_updates, 2.0),
                                             ("keystroke (direct call)", alone_keys, flooded_keys, None)):
            for q_name, q in (("p50", 0.5), ("p95", 0.95)):
                base = percentile(alone, q)
                label = (f"a student's {name} {q_name} ({who}; {len(flooded)} calls) while a stranger floods "
                         f"{calls} /embed calls of 2 × 10,000 characters")
                target_text = "" if target is None else f"≤ {target:.0f} s"
                if stopped and len(flooded) < 3:  # starved: no figure to rank, only how long it went unanswered
                    rows.append((label, f"no answer in {budget:.0f} s", f"{base * 1000:.0f} ms alone", "",
                                  target_text, "" if target is None else "no"))
                    continue
                ours = percentile(flooded, q)
                met = "" if target is None else ("yes" if ours <= target else "no")
                rows.append((label, f"{ours * 1000:.0f} ms", f"{base * 1000:.0f} ms alone", f"{ours / base:.1f}×",
                             target_text, met))
        if stopped:
            rows.append((f"the student ({who}) stopped at", stopped.replace("|", "/"), "", "", "", ""))
        if queued:
            rows.append((f"gradio's queue length as the student ({who}) sent each update: median, max",
                         f"{percentile(queued, 0.5)}, {max(queued)}", "", "", "", ""))
    answers = ", ".join(f"{code}: {n}" for code, n in sorted(codes.items(), key=str))
    rows.append((f"the flood's calls refused at once, of {sum(codes.values())} answered ({answers})", f"{refused}",
                 "", "", "", ""))
    if refusal:
        rows.append(("what a refused call is told", refusal.replace("|", "/"), "", "", "", ""))
    rows.append(("the queue drained after the flood stopped", "no" if drain is None else f"{drain:.0f} s",
                 "", "", "", ""))
    return rows


class FloodTabs(Senders):
    """One stranger's `tabs` pages (one address, `STRANGER`), each keeping a 2 × 10,000-character
    update in flight on the page's own route (`/explorer/live`) until stopped: as soon as one is
    answered (read whole, as a page reads it) the next is sent. What each call was told is counted."""

    def __init__(self, url: str, tabs: int) -> None:
        from bench.load import PageSession, endpoints_of

        self.url, self.stop, self.lock = url, threading.Event(), threading.Lock()
        self.told: Counter = Counter()
        endpoints = endpoints_of(url)
        self.keys = []
        for _ in range(tabs):
            page = PageSession(url, endpoints, 120)
            page.http.headers["X-Forwarded-For"] = STRANGER
            page.open()
            self.keys.append(page.key)
            page.close()
        self.workers = [threading.Thread(target=self.send_on, args=(key,), daemon=True) for key in self.keys]

    def send_on(self, key: str) -> None:
        import httpx

        n = 0
        with httpx.Client(timeout=120, headers={"X-Forwarded-For": STRANGER}) as http:
            while not self.stop.is_set():
                n += 1
                change = {"sentence_a": f"{n:09d} {BIG[10:]}", "sentence_b": BIG}
                try:
                    answer = http.post(f"{self.url}explorer/live", json={"key": key, "change": change})
                    found = answer.json() if answer.status_code == 200 else {"error": f"HTTP {answer.status_code}"}
                    told = "answered" if "values" in found else found.get("error", "merged or skipped")[:70]
                except Exception as error:  # noqa: BLE001 - a dropped call is counted, not measured
                    told = type(error).__name__
                with self.lock:
                    self.told[told] += 1


def flooding(url: str, tabs: int, ready, stop, told) -> None:
    """A process of its own: `FloodTabs` until `stop`, then what their calls were told, in `told`."""
    flood = FloodTabs(url, tabs)
    ready.set()
    with flood:
        stop.wait()
    told.put(dict(flood.told))


class DirectFlood:
    """`FloodTabs` sent from a process of its own, as a stranger's machine would send them: its
    150 threads do not share an interpreter with the student measured beside it (whose calls
    waited for that interpreter's lock, not only for the server)."""

    def __init__(self, url: str, tabs: int) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.ready, self.stop, self.said = context.Event(), context.Event(), context.Queue()
        self.process = context.Process(target=flooding, args=(url, tabs, self.ready, self.stop, self.said),
                                       daemon=True)
        self.told: Counter = Counter()

    def __enter__(self) -> DirectFlood:
        self.process.start()
        if not self.ready.wait(900):
            raise SystemExit("the flood's pages did not open within 900 s")
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.told = Counter(self.said.get(timeout=600))
        self.process.join(60)


def typist_latencies(url: str, seconds: float, rate: float = 4.0,
                     address: str = STUDENT) -> tuple[list[float], list[str]]:
    """A student (a tab of its own, from `address`) typing `rate` keys a second for `seconds`, sent
    as the page sends them: one call on its way at a time, the keys typed meanwhile going together
    in the next. For each key, the seconds from when it was typed to the answer that showed it;
    and every refusal's sentence."""
    from bench.load import PageSession, endpoints_of

    student = PageSession(url, endpoints_of(url), 120)
    student.http.headers["X-Forwarded-For"] = address
    latencies, refused = [], []
    try:
        student.type(sentence_a=PAIR[0], sentence_b=PAIR[1])
        began = time.perf_counter()
        keys, sent = int(seconds * rate), 0
        while sent < keys:
            now = time.perf_counter()
            typed = min(keys, int((now - began) * rate) + 1)  # the keys typed by now
            if typed == sent:
                time.sleep(began + sent / rate - now)
                continue
            text = PAIR[0] + " " + "".join("abcdefghij"[key % 10] for key in range(typed))
            answer = student.http.post(f"{url}explorer/live",
                                       json={"key": student.key, "change": {"sentence_a": text}})
            found = answer.json() if answer.status_code == 200 else {"error": f"HTTP {answer.status_code}"}
            done = time.perf_counter()
            if "error" in found:
                refused += [found["error"][:200]] * (typed - sent)
            latencies += [done - (began + key / rate) for key in range(sent, typed)]
            sent = typed
    finally:
        student.close()
    return latencies, refused


def direct_flood_rows(url: str, tabs: int = 150, seconds: float = 40.0) -> list[tuple[str, ...]]:
    """Section 8: a student typing 4 keys a second from another address while one stranger's
    `tabs` pages flood the page's route (`/explorer/live`) with 2 × 10,000-character updates for
    `seconds`, against the same student alone. Target: p95 from key to answer ≤ 1 s and no key
    refused."""
    alone, _ = typist_latencies(url, 10)
    with DirectFlood(url, tabs) as flood:  # its pages opened before the clock starts
        time.sleep(3)  # every flood page has a call on its way
        flooded, refused = typist_latencies(url, seconds)
    told = flood.told
    p95, base = percentile(flooded, 0.95), percentile(alone, 0.95)
    met = p95 <= 1.0 and not refused
    said = ", ".join(f"{what}: {n}" for what, n in told.most_common(4)).replace("|", "/")
    return [
        (f"a student typing 4 keys/s ({len(flooded)} keys) while one address's {tabs} pages flood /explorer/live "
         f"with 2 × 10,000-character updates for {seconds:.0f} s: p95 key to answer; keys refused",
         f"{p95 * 1000:,.0f} ms; {len(refused)} refused", f"{base * 1000:.0f} ms alone", f"{p95 / base:.1f}×",
         "≤ 1 s, none refused", "yes" if met else "no"),
        ("  the flood's calls meanwhile", said, "", "", "", ""),
        *([("  what a refused key was told", refused[0].replace("|", "/"), "", "", "", "")] if refused else []),
    ]


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
    """Section 6: a keystroke on GloVe with a slow regular-expression search in the view (as a
    link can carry it), against one without a search (target ≤ 2×)."""
    plain = percentile(slow_pattern_latencies(url, count, None), 0.5)
    slow = percentile(slow_pattern_latencies(url, count, SLOW_PATTERN), 0.5)
    return [(f"a keystroke (p50) with the search {SLOW_PATTERN!r} in the view, GloVe", f"{slow * 1000:.1f} ms",
             f"{plain * 1000:.1f} ms without", f"{slow / plain:.2f}×", "≤ 2×", "yes" if slow / plain <= 2 else "no")]


def session_rows(url: str, process, sessions: int) -> list[tuple[str, ...]]:
    """Section 2: server RSS per trained BERT session: after one warm-up (the tables and
    training's one-time cost), N clients each `/source` bert then `/train` 20 steps; growth / N
    (target ≤ 12 MiB)."""
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
    """Section 3: a 5 MB sentence to `/embed`: the peak RSS growth while it is answered (sampled
    every 10 ms) and the time to the answer (targets < 300 MiB, ≤ 3 s)."""
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
    """Section 4: disk left by 12 `/export` calls from one client: the exports folder and the
    whole cache (target < 15 MB)."""
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
    parser.add_argument("--only", type=int, action="append", choices=range(1, 9), metavar="N",
                        help="run only section N of the list above (repeatable); default: all eight")
    args = parser.parse_args()
    print("command:", shlex.join([Path(sys.executable).name, *sys.argv]))
    count, sessions = (12, 4) if args.quick else (40, 12)
    only = set(args.only or range(1, 9))
    with tempfile.TemporaryDirectory(prefix="public-space-cache-") as cache:
        os.environ["GRADIO_TEMP_DIR"] = cache  # the child's cache is its own, so its size is ours
        with launched_app() as (url, process):
            print(f"app at {url}, pid {process.pid}, cache {cache}", flush=True)
            # in the order that keeps each measure clean: the flood (5) runs last of the
            # latency measures and waits until its queue has drained before the next one
            sections = [
                (1, lambda: latency_rows(url, count)),
                (6, lambda: slow_pattern_rows(url, count)),
                (5, lambda: flood_rows(url, quick=args.quick)),
                (8, lambda: direct_flood_rows(url, seconds=20 if args.quick else 40)),
                (2, lambda: session_rows(url, process, sessions)),
                (3, lambda: huge_rows(url, process)),
                (4, lambda: disk_rows(url, Path(cache))),
            ]
            rows = [row for number, rows_of in sections if number in only for row in rows_of()]
        if 7 in only:  # an app of its own, with a budget small enough to fill quickly
            os.environ["EXPLORER_TABLE_MEMORY_MIB"] = str(ATTACK_BUDGET_MIB)
            with launched_app() as (url, process):
                rows += memory_attack.rows(url, process, ATTACK_BUDGET_MIB)
    print()
    print("| measure | ours | baseline | ratio | target | met |")
    print("|---|---:|---:|---:|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\n{count} /embed calls per phase; percentiles are nearest-rank. CPU count: {os.cpu_count()}; "
          f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}.")


if __name__ == "__main__":
    main()
