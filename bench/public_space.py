"""What a public Space costs when strangers push it: heavy neighbours, crowds that train, huge text, exports.

    python -m bench.public_space [--quick] [--only N ...]

Launches `app.py` in a child process with temporary folders of its own (gradio's cache, the
app's exports), talks to it as strangers would (pages over its route, the API through gradio's
queue), and prints one markdown table, each figure beside its baseline or target measured in
the same run. The sections (--only N; each function's docstring gives its method and target):
1. another visitor's update beside a heavy neighbour (`latency_rows`); 2. server RSS per
trained BERT session (`session_rows`); 3. a 5 MB sentence typed into a page and in a link to
the API (`huge_rows`); 4. disk left by exports (`disk_rows`); 5. a student's updates while a stranger
floods gradio's queue with API calls (`flood_rows`); 6. a keystroke with a slow search in the
view (`slow_pattern_rows`); 7. what strangers can make the server hold (`bench.memory_attack`);
8. a typist beside a stranger's pages flooding the page's own route (`direct_flood_rows`).
Timings on a shared machine are noisy; read the ratios. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from bench import memory_attack
from bench.appserver import launched_app, tree_mib
from bench.pages import RoutePage, query_of
from bench.report import percentile

ATTACK_BUDGET_MIB = 1024  # section 7's budget: small enough to fill in a minute

PAIR = ("the quick brown fox jumps over", "a lazy dog by the river")  # 12 words
# the largest random tables (~127 MiB layers), as the Tables panel sets them, a seed each
LARGE = [{"tokenizer": "wordpiece", "vocab_size": 1000, "d_model": 1024, "maxlen": 2048, "n_segments": 8,
          "seed": seed} for seed in (1, 2)]
HUGE = "word " * 1_000_000  # 5,000,000 characters
MB = 10**6
NEIGHBOUR = 1.5  # the target: another visitor's update beside heavy work, at most this many times its time alone


def update_latencies(url: str, count: int) -> list[float]:
    """A student typing on: each update sent as the page sends it, and timed."""
    with RoutePage(url, timeout=300) as visitor:
        visitor.change(sentence_a=PAIR[0], sentence_b=PAIR[1])  # its tab has its text before timing starts
        seconds = []
        for i in range(count):
            start = time.perf_counter()
            visitor.change(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1])
            seconds.append(time.perf_counter() - start)
    return seconds


def heavy_visitor(url: str, stop: threading.Event, outcomes: Counter) -> list[threading.Thread]:
    """One visitor's two tabs looping every heavy call of the page until `stop`: on BERT's
    vocabulary plane a refit, an export and a training of 200 steps (streamed, read to its end),
    each in a thread of its own; on the other tab the largest random tables, two seeds in turn."""
    bert, random = RoutePage(url, timeout=300), RoutePage(url, timeout=300)
    bert.change(source="bert")
    bert.change(basis="vocabulary")

    def trained(i: int) -> None:
        merged, _ = bert.train(200, "builtin")
        if "error" in merged:
            raise RuntimeError(merged["error"])

    def loop(name: str, call) -> None:
        i = 0
        while not stop.is_set():
            try:
                call(i)
                outcomes[name] += 1
            except Exception:  # a refusal of a setting is a notice, not an exception: this is a failure
                outcomes[f"{name} failed"] += 1
            i += 1

    calls = {
        "refit": lambda i: bert.change(refit=True),
        "export": lambda i: bert.change(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1], export=True),
        "train": trained,
        "settings": lambda i: random.change(**LARGE[i % 2]),
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
    alone = update_latencies(url, count)
    stop, outcomes = threading.Event(), Counter()
    threads = heavy_visitor(heavy_url or url, stop, outcomes)
    time.sleep(2)  # the loops are under way
    loaded = update_latencies(url, count)
    stop.set()
    for thread in threads:
        thread.join(300)
    return alone, loaded, outcomes


def latency_rows(url: str, count: int) -> list[tuple[str, ...]]:
    """Section 1: another visitor's update latency (a 12-word pair, typed as the page sends it:
    bench/pages.py `RoutePage`) alone, then while one visitor loops every heavy call in parallel
    threads (`heavy_visitor`: tab 1 on BERT's vocabulary plane loops a refit, an export and a
    training of 200 steps; tab 2 loops between two of the largest random tables): p50 and p90
    against alone (target ≤ 1.5×)."""
    alone, loaded, outcomes = beside_heavy_neighbour(url, count)
    rows = []
    for name, q in (("p50", 0.5), ("p90", 0.9)):
        a, b = percentile(alone, q), percentile(loaded, q)
        rows.append((f"another visitor's update {name} (12-word pair), heavy neighbour vs alone",
                     f"{b * 1000:.0f} ms", f"{a * 1000:.0f} ms alone", f"{b / a:.2f}×", f"≤ {NEIGHBOUR:g}×",
                     "yes" if b / a <= NEIGHBOUR else "no"))
    done = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    rows.append(("heavy neighbour's calls while measured", done, "", "", "", ""))
    return rows


STRANGER = "203.0.113.7"  # the flood's address (a documentation range), as a proxy would forward it
# section 8's stranger: another address than section 5's, whose API calls used up its new pages (each
# call is a page opened, core.serving.tabs.NewTabs)
FLOODER = "203.0.113.8"
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
    """A stranger's oversized API calls (`view` of a link of two 10,000-character sentences),
    each from a session hash of its own, posted to gradio's plain API route
    (`/gradio_api/call/view`) as the issue's attacker did: a POST queues the call and nobody
    reads the answer. `burst` calls go as fast as `threads` can post them, then the flood
    refills at `FLOOD_PACE` until it is stopped. All of it comes from one address (`STRANGER`,
    in X-Forwarded-For: the app trusts its loopback proxy, as uvicorn does by default), so the
    server sees one visitor with many tabs. (The attacker's calls went to `/embed`, which is
    gone; `view` of a link is the API's one way to have two sentences embedded.)"""

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
        import uuid

        http = self.http[worker]
        # the body written once, each call's number and hash put in: the load generator shares
        # the server's cores, so its own work is kept small (a query's characters need no JSON escape)
        head = '{"data": ["' + query_of(b=BIG, a=f"{BIG[:-10]} ")
        tail = '"], "session_hash": "'
        while not self.stop.is_set():
            with self.lock:
                n = self.posted
                self.posted += 1
            if n >= self.burst:  # the burst is out: refill at FLOOD_PACE, all threads together
                self.burst_done.set()
                if self.stop.wait(self.threads / FLOOD_PACE):
                    return
            try:
                answer = http.post(f"{self.url}gradio_api/call/view", headers={"Content-Type": "application/json"},
                                   content=f'{head}{n}{tail}{uuid.uuid4().hex}"}}'.encode())
                code = answer.status_code
                if code != 200 and not self.refusal:
                    self.refusal = f"{code}: {answer.json().get('detail', answer.text)[:300]}"
            except Exception:  # noqa: BLE001 - a dropped connection is counted, not measured
                code = "dropped"
            with self.lock:
                self.codes[code] += 1


def student_latencies(url: str, count: int, address: str = STUDENT, queued: list[int] | None = None,
                      budget: float = 240) -> tuple[list[float], list[float], list[str], str]:
    """A student (a tab of its own, from `address`) alternating a keystroke as the page sends it
    (one POST to the page's route) with the API's `view` of a link of a 12-word pair through
    gradio's queue (what an API caller gets: the queue is the API's way in, not the page's).
    Seconds of each kind; the API calls refused or not answered within `budget` (a flooded
    first-in-first-out queue takes minutes), each with what it was told; and why it stopped
    early if it did: once `budget` seconds are spent (after at least 3 keystrokes), or at a
    keystroke that failed. `queued` gets the queue's length before each update."""
    from bench.load import QueueSession, endpoints_of
    from bench.pages import CallFailed

    headers = {"X-Forwarded-For": address}
    keystrokes, updates, failed, stopped = [], [], [], ""
    began = time.monotonic()
    visitor = api = None
    try:
        visitor = RoutePage(url, headers=headers, timeout=budget)
        api = QueueSession(url, endpoints_of(url), budget, headers)
        visitor.change(sentence_a=PAIR[0], sentence_b=PAIR[1])  # its tab has its text before timing starts
        for i in range(count):
            if i >= 3 and time.monotonic() - began > budget:
                stopped = f"the {budget:.0f} s budget spent, after {i} updates"
                break
            if queued is not None:
                queued.append(queue_size(visitor.http, url))
            start = time.perf_counter()
            visitor.change(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1])
            keystrokes.append(time.perf_counter() - start)
            start = time.perf_counter()
            try:
                api.predict(query_of(a=f"{PAIR[0]} {i} again", b=PAIR[1]), api_name="view")
            except CallFailed as error:  # refused, or starved: counted with its sentence, and the keystrokes go on
                failed.append(f"after {time.perf_counter() - start:.1f} s, {error}"[:200])
                if time.monotonic() - began > budget:  # a starved call took the whole budget
                    stopped = f"the {budget:.0f} s budget spent, after {i + 1} updates"
                    break
                continue
            updates.append(time.perf_counter() - start)
    except Exception as error:  # noqa: BLE001 - a call the flood starved is the measure, said in the table
        stopped = f"{type(error).__name__}: {error}"[:200]
    finally:
        for each in (visitor, api):
            if each is not None:
                each.close()
    return keystrokes, updates, failed, stopped


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
    """Section 5: a student's updates while one stranger floods gradio's queue with `calls` API
    calls of two 10,000-character sentences (each from a tab of its own, `Flood`) and keeps
    refilling it; against the same student alone, in the same run. Reported: the student's API
    call through the queue (target ≤ 2 s) and keystroke as the page sends it, p50 and p95, the
    queue's length meanwhile, and how many of the flood were refused. Measured for a student
    behind another address (another person), then for one behind the stranger's own address (a
    class behind one school address, a stranger among it). The flood and the student's update
    through the queue were `/embed` calls; there is no `/embed`, so both are the API's `view` of
    a link, and the student's keystroke goes to the page's route as the page sends it."""
    count, budget = (12, 120) if quick else (30, 240)
    alone_keys, alone_updates, _, _ = student_latencies(url, count)
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
    for who, (flooded_keys, flooded_updates, failed, stopped, queued) in measured.items():
        for name, alone, flooded, target in (("API view through the queue", alone_updates, flooded_updates, 2.0),
                                             ("keystroke (the page's route)", alone_keys, flooded_keys, None)):
            for q_name, q in (("p50", 0.5), ("p95", 0.95)):
                base = percentile(alone, q)
                label = (f"a student's {name} {q_name} ({who}; {len(flooded)} answered) while a stranger floods "
                         f"{calls} API calls of 2 × 10,000 characters")
                target_text = "" if target is None else f"≤ {target:.0f} s"
                if len(flooded) < 3:  # starved or refused: no figure to rank
                    said = f"{len(failed)} refused or unanswered" if target is not None and failed else \
                        f"{len(flooded)} answered in {budget:.0f} s"
                    rows.append((label, said, f"{base * 1000:.0f} ms alone", "", target_text,
                                 "" if target is None else "no"))
                    continue
                ours = percentile(flooded, q)
                met = "" if target is None else ("yes" if ours <= target else "no")
                rows.append((label, f"{ours * 1000:.0f} ms", f"{base * 1000:.0f} ms alone", f"{ours / base:.1f}×",
                             target_text, met))
        if failed:
            rows.append((f"the student's ({who}) API calls refused or unanswered: how many; the first's sentence",
                         f"{len(failed)}; {failed[0]}".replace("|", "/"), "", "", "", ""))
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
    """One stranger's `tabs` pages (one address, `FLOODER`), each keeping a 2 × 10,000-character
    update in flight on the page's own route (`/explorer/live`) until stopped: as soon as one is
    answered (read whole, as a page reads it) the next is sent. What each call was told is counted."""

    def __init__(self, url: str, tabs: int) -> None:
        self.url, self.stop, self.lock = url, threading.Event(), threading.Lock()
        self.told: Counter = Counter()
        self.keys = []
        for _ in range(tabs):
            with RoutePage(url, headers={"X-Forwarded-For": FLOODER}) as page:
                self.keys.append(page.key)
        self.workers = [threading.Thread(target=self.send_on, args=(key,), daemon=True) for key in self.keys]

    def send_on(self, key: str) -> None:
        import httpx

        n = 0
        with httpx.Client(timeout=120, headers={"X-Forwarded-For": FLOODER}) as http:
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
    student = RoutePage(url, headers={"X-Forwarded-For": address})
    latencies, refused = [], []
    try:
        student.change(sentence_a=PAIR[0], sentence_b=PAIR[1])
        began = time.perf_counter()
        keys, sent = int(seconds * rate), 0
        while sent < keys:
            now = time.perf_counter()
            typed = min(keys, int((now - began) * rate) + 1)  # the keys typed by now
            if typed == sent:
                time.sleep(began + sent / rate - now)
                continue
            text = PAIR[0] + " " + "".join("abcdefghij"[key % 10] for key in range(typed))
            found = student.post({"key": student.key, "change": {"sentence_a": text}})
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
    with RoutePage(url, timeout=300) as visitor:
        visitor.change(source="glove")
        if pattern is not None:
            visitor.change(search=pattern, regex=True)
        visitor.change(sentence_a=PAIR[0], sentence_b=PAIR[1])
        seconds = []
        for i in range(count):
            start = time.perf_counter()
            visitor.change(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1])
            seconds.append(time.perf_counter() - start)
        return seconds


def slow_pattern_rows(url: str, count: int) -> list[tuple[str, ...]]:
    """Section 6: a keystroke on GloVe with a slow regular-expression search in the view (as a
    link can carry it), against one without a search (target ≤ 2×)."""
    plain = percentile(slow_pattern_latencies(url, count, None), 0.5)
    slow = percentile(slow_pattern_latencies(url, count, SLOW_PATTERN), 0.5)
    return [(f"a keystroke (p50) with the search {SLOW_PATTERN!r} in the view, GloVe", f"{slow * 1000:.1f} ms",
             f"{plain * 1000:.1f} ms without", f"{slow / plain:.2f}×", "≤ 2×", "yes" if slow / plain <= 2 else "no")]


def session_rows(url: str, process, sessions: int) -> list[tuple[str, ...]]:
    """Section 2: server RSS per trained BERT session, the server's and its children's (training
    runs in the heavy-work pool): after one warm-up (the tables and training's one-time cost), N
    pages each set BERT's tables, then train 20 steps (streamed, as the page trains), and stay
    open; growth / N (target ≤ 12 MiB)."""
    def trained() -> RoutePage:
        page = RoutePage(url, timeout=300)
        page.change(source="bert")
        merged, _ = page.train(20, "builtin")
        if not str(merged.get("train-summary", "")).startswith("Trained"):
            raise RuntimeError(f"a training was not done: {merged.get('error') or merged.get('notice')!r}")
        return page

    trained().close()
    before = tree_mib(process)
    crowd = [trained() for _ in range(sessions)]
    each = (tree_mib(process) - before) / sessions
    for page in crowd:
        page.close()
    return [(f"server RSS (and its children's) per trained BERT session ({sessions} sessions, 20 steps each)",
             f"{each:.2f} MiB", f"{before:.0f} MiB before", f"{each / 12:.2f}× target", "≤ 12 MiB",
             "yes" if each <= 12 else "no")]


def peak_while(process, call) -> tuple[object, float, float, float]:
    """`call()`'s result, its seconds, the peak RSS growth in MiB of the server and its children
    (the heavy-work pool) meanwhile (sampled every 10 ms), and their RSS before."""
    before = tree_mib(process)
    peak, done = [before], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak.append(tree_mib(process))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        result = call()
    finally:
        seconds = time.perf_counter() - start
        done.set()
        sampler.join()
    return result, seconds, max(peak) - before, before


def huge_rows(url: str, process) -> list[tuple[str, ...]]:
    """Section 3: a 5 MB sentence, the two ways a stranger can send it (it went to the API's
    `/embed` once; there is no `/embed` now): typed into a page, one POST to the page's route as a
    keystroke; and in a link given to the public API's `view` (gradio's queue). For each, the peak
    RSS growth while it is answered (sampled every 10 ms) and the time to the answer (targets
    < 300 MiB, ≤ 3 s), against the same way's 12-word update."""
    from bench.load import QueueSession, endpoints_of
    from bench.pages import CallFailed

    rows = []
    with RoutePage(url, timeout=300) as visitor:
        visitor.change(sentence_a=PAIR[0], sentence_b=PAIR[1])

        def typed() -> dict:
            try:
                return visitor.post({"key": visitor.key, "change": {"sentence_a": HUGE, "sentence_b": ""}})
            except httpx.HTTPError as error:  # refused before the body was all sent, the connection closed
                return {"error": f"the connection closed: {type(error).__name__}"}

        answer, seconds, grown, before = peak_while(process, typed)
        baseline = time.perf_counter()
        visitor.change(sentence_a=f"{PAIR[0]} again", sentence_b=PAIR[1])
        normal = time.perf_counter() - baseline
    told = answer.get("error") or (answer.get("values") or {}).get("notice") or ""
    said = "answered" if "values" in answer and "at most" not in told else "refused"
    rows.append(("the page's route, as a keystroke", said, told, grown, before, seconds, normal))

    api = QueueSession(url, endpoints_of(url), 300)
    try:
        api.predict(query_of(a=PAIR[0], b=PAIR[1]), api_name="view")  # the API's first call is not timed

        def linked() -> str:
            try:
                api.predict(query_of(a=HUGE, b=""), api_name="view")
                return ""
            except CallFailed as error:  # refused: gradio's error, with the app's sentence
                return str(error)

        told, seconds, grown, before = peak_while(process, linked)
        baseline = time.perf_counter()
        api.predict(query_of(a=f"{PAIR[0]} again", b=PAIR[1]), api_name="view")
        normal = time.perf_counter() - baseline
    finally:
        api.close()
    rows.append(("the API's view of a link", "refused" if told else "answered", told, grown, before, seconds,
                 normal))
    return [row for way, said, told, grown, before, seconds, normal in rows for row in (
        (f"peak RSS growth (server and children) while a 5 MB sentence is answered ({way})", f"{grown:+.1f} MiB",
         f"{before:.0f} MiB before",
         f"{grown / 300:.2f}× target", "< 300 MiB", "yes" if grown < 300 else "no"),
        (f"time to the 5 MB sentence's answer ({way}; {said})", f"{seconds:.2f} s", f"{normal * 1000:.0f} ms normal",
         f"{seconds / normal:.1f}×", "≤ 3 s", "yes" if seconds <= 3 else "no"),
        *([(f"  what the 5 MB sentence was told ({way})", told[:200].replace("|", "/"), "", "", "", "")]
          if told else []),
    )]


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def disk_rows(url: str, process, temporary: Path) -> list[tuple[str, ...]]:
    """Section 4: disk left by 12 exports from one page (the View panel's export, whose answer
    links the files: ui/files.py): the app's exports folder, and the server's whole temporary
    folder (gradio's cache and the app's own), against one export's files (target < 15 MB)."""
    exports = temporary / f"embedding-explorer-{process.pid}" / "exports"
    before_exports, before = folder_bytes(exports), folder_bytes(temporary)
    with RoutePage(url, timeout=300) as exporter:
        exporter.change(sentence_a=PAIR[0], sentence_b=PAIR[1], export=True)
        one = folder_bytes(exports) - before_exports  # one export's files: the baseline
        for i in range(12):
            exporter.change(sentence_a=f"{PAIR[0]} {i}", sentence_b=PAIR[1], export=True)
    if one <= 0:
        raise RuntimeError(f"an export wrote nothing under {exports}: update bench/public_space.py to ui/files.py")
    kept = folder_bytes(exports) - before_exports
    whole = folder_bytes(temporary) - before
    return [
        ("exports folder: what the page's 13 exports left", f"{kept / MB:.2f} MB", f"{one / MB:.2f} MB for one",
         f"{kept / one:.2f}×", "< 15 MB", "yes" if kept < 15 * MB else "no"),
        ("the server's temporary folder (gradio's cache and the app's): what the 13 exports left",
         f"{whole / MB:.2f} MB", f"{13 * one / MB:.2f} MB if kept", f"{whole / one:.2f}×", "< 15 MB",
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
        # the child's temporary folders are its own (gradio's cache, the app's exports), so their size is ours
        os.environ["GRADIO_TEMP_DIR"] = os.environ["TMPDIR"] = cache
        with launched_app() as (url, process):
            print(f"app at {url}, pid {process.pid}, temporary folder {cache}", flush=True)
            # in the order that keeps each measure clean: the flood (5) runs last of the
            # latency measures and waits until its queue has drained before the next one
            sections = [
                (1, lambda: latency_rows(url, count)),
                (6, lambda: slow_pattern_rows(url, count)),
                (5, lambda: flood_rows(url, quick=args.quick)),
                (8, lambda: direct_flood_rows(url, seconds=20 if args.quick else 40)),
                (2, lambda: session_rows(url, process, sessions)),
                (3, lambda: huge_rows(url, process)),
                (4, lambda: disk_rows(url, process, Path(cache))),
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
    print(f"\n{count} updates per phase; percentiles are nearest-rank. CPU count: {os.cpu_count()}; "
          f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}.")


if __name__ == "__main__":
    main()
