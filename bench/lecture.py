"""A class typing at human speed: key-to-answer latency and server CPU per update, then capacity on paper.

    python -m bench.lecture [--students 100] [--duration 90] [--quick] [--setups echo,app,lb1,lb2]
                            [--protocol page|queue|call] [--compare-protocols]

Each simulated student (`Student`) loads the page and types sentences into sentence A at human
speed, sending its next update only when the last has returned, as the page does. Setups
(--setups, `serving`), each measured over the same --duration after a ramp: echo, the floor (a
one-textbox echo app through gradio's queue, bench/server_cpu.py's); app, one `python app.py`;
lb1 and lb2, 1 and 2 workers behind HAProxy (deploy/serve.py's ClassServer). Server CPU is every
server process's CPU time (workers and HAProxy) over the measured window, divided by the updates
answered in it; the load generator's own CPU is printed beside it, so you can see the server,
not the generator, is the bottleneck (--protocol picks the route, `PROTOCOLS`). Finally, the
cores and machines a course of --course students needs for p95 <= 1 s (`estimate`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import psutil

from bench.appserver import launched, launched_app
from bench.pages import ROUTE, key_of, opening, query_of
from bench.report import percentile
from deploy.serve import ClassServer, free_port

WORDS = (
    "elephant", "violin", "tractor", "mountain", "umbrella", "piano", "volcano", "guitar", "dragon", "castle",
    "river", "garden", "teacher", "lunch", "window", "forest", "rocket", "candle", "island", "bridge",
)
TEMPLATES = (
    "the {w} sat quietly on the old mat",
    "my {w} likes warm green tea in the morning",
    "a small {w} walked along the river bank",
    "we saw the {w} near the station today",
    "every {w} needs a name and a place",
)
IN_WORD, BEFORE_SPACE, BETWEEN_SENTENCES = (0.15, 0.25), (0.25, 0.40), (2.0, 6.0)


def typing_rate() -> float:
    """Keystrokes per second of the typing model on average (clearing the box counts as one)."""
    mean = lambda bounds: sum(bounds) / 2  # noqa: E731
    keys = seconds = 0.0
    for template in TEMPLATES:
        for word in WORDS:
            sentence = template.format(w=word)
            spaces = sentence.count(" ")
            keys += len(sentence) + 1
            seconds += spaces * mean(BEFORE_SPACE) + (len(sentence) - spaces) * mean(IN_WORD) + mean(BETWEEN_SENTENCES)
    return keys / seconds


# what a keystroke is sent to


@dataclass(frozen=True)
class Endpoint:
    """A gradio event a student's text is sent to, by its api_name and fn_index: the echo's one
    box, or the public API's `view` of the link of sentence A (sentence B empty)."""

    api_name: str
    fn_index: int

    @classmethod
    def discover(cls, url: str, api_name: str) -> Endpoint:
        from bench.load import endpoints_of

        endpoints = endpoints_of(url)
        if api_name not in endpoints:
            raise SystemExit(f"the server at {url} has no {api_name} event; it has {sorted(endpoints)}")
        return cls(api_name, endpoints[api_name])

    def data(self, text: str) -> list:
        """The event's data for a student's text."""
        return [text] if self.api_name == "echo" else [query_of(a=text, b="")]


class CallFailed(Exception):
    pass


async def queue_update(http: httpx.AsyncClient, endpoint: Endpoint, session_hash: str, text: str,
                       key: str | None = None) -> int:
    """Gradio's queue protocol, as gradio's page speaks it: join the queue, then read the
    session's event stream to our answer. Returns the stream's messages."""
    join = await http.post(
        "gradio_api/queue/join",
        json={"data": endpoint.data(text), "fn_index": endpoint.fn_index, "session_hash": session_hash},
    )
    if join.status_code != 200:
        raise CallFailed(f"join: HTTP {join.status_code}")
    event_id = join.json()["event_id"]
    ours, done, messages = f'"event_id":"{event_id}"', False, 0
    async with http.stream("GET", "gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
        async for line in stream.aiter_lines():
            messages += line.startswith("data:")
            # found by substring, not parsed: the answer is tens of KB the generator need not read
            if '"close_stream"' in line and done:
                break
            if line.startswith("data:") and '"process_completed"' in line[:40] and ours in line[:100]:
                if '"success":true' not in line:  # the answer inside is escaped JSON: no false match
                    error = json.loads(line[5:]).get("output", {}).get("error")
                    raise CallFailed(f"app error: {error!r}")
                done = True
    if not done:
        raise CallFailed("the event stream closed without an answer")
    return messages


async def call_update(http: httpx.AsyncClient, endpoint: Endpoint, session_hash: str, text: str,
                      key: str | None = None) -> int:
    """Gradio's REST route: POST the call, then read its own event stream. Returns its messages."""
    posted = await http.post(f"gradio_api/call/{endpoint.api_name}", json={"data": endpoint.data(text)})
    if posted.status_code != 200:
        raise CallFailed(f"call: HTTP {posted.status_code}")
    event_id = posted.json()["event_id"]
    event, messages = None, 0
    async with http.stream("GET", f"gradio_api/call/{endpoint.api_name}/{event_id}") as stream:
        async for line in stream.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
                messages += 1
            elif line.startswith("data:") and event in ("complete", "error"):
                if event == "error":
                    raise CallFailed(f"app error: {line[5:].strip()[:200]}")
                return messages
    raise CallFailed("the event stream closed without an answer")


async def open_page(http: httpx.AsyncClient) -> str:
    """The page's opening over its route (a view for the tab, and the key its calls carry)."""
    answer = await http.post(ROUTE, json=opening())
    return key_of(answer.raise_for_status().json())


async def page_update(http: httpx.AsyncClient, endpoint: Endpoint, session_hash: str, text: str,
                      key: str | None = None) -> int:
    """The page's own protocol: the text as a change of its tab, one POST to its route
    (ui/route.py) and its JSON answer, which carries every value the call changed on the page.
    Returns 0 when the change was merged into the tab's call still waiting (which shows it)."""
    answer = await http.post(ROUTE, json={"key": key, "change": {"sentence_a": text, "sentence_b": ""}})
    if answer.status_code != 200:
        raise CallFailed(f"page: HTTP {answer.status_code}")
    found = answer.json()
    if "error" in found:
        raise CallFailed(f"refused: {found['error']}")
    return 0 if found.get("merged") else 1


PROTOCOLS = {"page": page_update, "queue": queue_update, "call": call_update}


# the class


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)  # key to answer, keys typed in the window
    keys: int = 0  # keys typed in the window
    updates: int = 0  # answers received in the window
    messages: int = 0  # event-stream messages those answers took (status estimates, starts, the answer)
    typing: float = 0.0  # seconds students spent in the window with their page loaded
    errors: list[str] = field(default_factory=list)

    @property
    def keys_per_second(self) -> float:
        """The demand: keystrokes per second of one student whose page has loaded."""
        return self.keys / self.typing if self.typing else 0.0


class Student:
    """One student's page: it loads the page (which gives it the balancer's sticky cookie) and
    opens over the page's route (which issues the tab's key), then types sentences into sentence A
    at human speed: a keystroke every 150-250 ms inside a word and 250-400 ms before a space
    (words in bursts), a 2-6 s pause after each sentence to look at the plot, then a new
    sentence. Like the page (assets/explorer.js), it sends its next update only when the last
    one has returned, carrying the newest text; a keystroke's latency is the time from the key
    to the first answer that includes it. The load generator is one asyncio thread with one
    httpx connection pool per student.

    Its route (--protocol): `page`, the page's own (ui/route.py: one POST to the app's
    explorer/live, whose answer carries every value the call changed on the page); `queue`, the
    public API's `view` of the link of the text, through gradio's queue (join, then the event
    stream); or `call`, the same through gradio's REST `/gradio_api/call/view`
    (--compare-protocols measures each on one process first). An API call opens a tab of its
    own for its link each time: it is what an API caller pays, not the same work as a keystroke.
    """

    def __init__(self, index: int, url: str, endpoint: Endpoint, protocol: str, tally: Tally, window, seed: int):
        self.index, self.url, self.endpoint, self.tally, self.window = index, url, endpoint, tally, window
        self.send = PROTOCOLS[protocol]
        self.rng = random.Random(seed * 1000 + index)
        self.text, self.pending = "", []  # the box's text, and the times of keys no answer has shown yet
        self.changed = asyncio.Event()
        self.busy = False  # an update is on its way
        self.session_hash = uuid.uuid4().hex[:11]
        self.direct = protocol == "page"
        self.tab_key: str | None = None  # the tab's key, when it types on the page's route

    def sentences(self) -> Iterator[str]:
        word = WORDS[self.index % len(WORDS)]
        while True:
            yield self.rng.choice(TEMPLATES).format(w=word)

    async def run(self, start_in: float, stop_at: float) -> None:
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
        # an API call is a page opened, and one address may open 200 at once, then one every 2 s:
        # a student calling the API does so from an address of its own (forwarded, as a proxy would)
        own = {} if self.direct else {"X-Forwarded-For": f"198.18.{self.index // 250}.{self.index % 250 + 1}"}
        async with httpx.AsyncClient(base_url=self.url, timeout=httpx.Timeout(120, connect=30), limits=limits,
                                     headers=own) as http:
            await asyncio.sleep(start_in)
            try:
                (await http.get("")).raise_for_status()  # the page: the balancer's sticky cookie comes with it
            except httpx.HTTPError as error:
                self.tally.errors.append(f"page: {error!r}"[:200])
                return
            if self.direct:  # the page's opening gives the tab its key
                try:
                    self.tab_key = await open_page(http)
                except (CallFailed, httpx.HTTPError, ValueError, KeyError) as error:
                    self.tally.errors.append(f"page load: {error!r}"[:200])
                    return
            loaded = time.monotonic()
            self.tally.typing += max(0.0, self.window[1] - max(self.window[0], loaded))
            sender = asyncio.create_task(self.sender(http))
            try:
                await self.typist(stop_at)
            finally:
                await self.drain(sender)

    async def typist(self, stop_at: float) -> None:
        for sentence in self.sentences():
            self.text = ""
            self.key()  # the box cleared for a new sentence: a change like any other
            for char in sentence:
                gap = self.rng.uniform(*(BEFORE_SPACE if char == " " else IN_WORD))
                if time.monotonic() + gap >= stop_at:
                    return
                await asyncio.sleep(gap)
                self.text += char
                self.key()
            pause = self.rng.uniform(*BETWEEN_SENTENCES)
            if time.monotonic() + pause >= stop_at:
                return
            await asyncio.sleep(pause)

    def key(self) -> None:
        now = time.monotonic()
        self.pending.append(now)
        if self.window[0] <= now < self.window[1]:
            self.tally.keys += 1
        self.changed.set()

    async def sender(self, http: httpx.AsyncClient) -> None:
        if self.direct:
            return await self.page_sender(http)
        while True:
            await self.changed.wait()
            self.changed.clear()
            keys, self.pending, self.busy = self.pending, [], True
            try:
                messages = await self.send(http, self.endpoint, self.session_hash, self.text)
            except (CallFailed, httpx.HTTPError, ValueError, KeyError) as error:
                self.tally.errors.append(f"student {self.index}: {error!r}"[:200])
                continue
            finally:
                self.busy = False
            self.answered(keys, updates=1, messages=messages)

    async def page_sender(self, http: httpx.AsyncClient) -> None:
        """As the page sends (assets/explorer.js): a change goes at once while at most one call is
        on its way; a change the server merged into the tab's waiting call is shown by that
        call's answer, so its keys are timed to it."""
        on_way: list[list[float]] = []  # the key times each call on its way carries, oldest first
        calls: set[asyncio.Task] = set()

        async def call(keys: list[float]) -> None:
            merged = False
            try:
                merged = await self.send(http, self.endpoint, self.session_hash, self.text, key=self.tab_key) == 0
            except (CallFailed, httpx.HTTPError, ValueError, KeyError) as error:
                self.tally.errors.append(f"student {self.index}: {error!r}"[:200])
            place = next(i for i, carried in enumerate(on_way) if carried is keys)
            on_way.pop(place)
            if merged and place > 0:  # the call it joined is still on its way: its answer shows these keys
                on_way[place - 1].extend(keys)
            else:
                self.answered(keys, updates=0 if merged else 1, messages=0 if merged else 1)
            self.busy = bool(on_way)
            self.changed.set()

        while True:
            await self.changed.wait()
            self.changed.clear()
            while self.pending and len(on_way) < 2:
                keys, self.pending = self.pending, []
                on_way.append(keys)
                self.busy = True
                task = asyncio.create_task(call(keys))
                calls.add(task)
                task.add_done_callback(calls.discard)

    def answered(self, keys: list[float], updates: int, messages: int) -> None:
        """An answer came that shows these keys (typed at these times)."""
        now = time.monotonic()
        start, end = self.window
        if start <= now < end:
            self.tally.updates += updates
            self.tally.messages += messages
        self.tally.latencies.extend(now - k for k in keys if start <= k < end)

    async def drain(self, sender: asyncio.Task) -> None:
        """After the last key: wait (bounded) for the answer that shows it, then stop the sender."""
        deadline = time.monotonic() + 120
        while (self.pending or self.busy) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sender


async def run_class(url: str, students: int, ramp: float, duration: float, protocol: str, seed: int,
                    on_window_start, on_window_end) -> Tally:
    endpoint = Endpoint.discover(url, "echo" if protocol == "echo" else "view")
    if protocol == "echo":
        protocol = "queue"
    tally = Tally()
    began = time.monotonic()
    window = (began + ramp, began + ramp + duration)
    rng = random.Random(seed)
    crowd = [Student(i, url, endpoint, protocol, tally, window, seed) for i in range(students)]
    tasks = [asyncio.create_task(s.run(rng.uniform(0, ramp * 0.8), window[1])) for s in crowd]

    async def marks() -> None:
        await asyncio.sleep(max(0.0, window[0] - time.monotonic()))
        on_window_start()
        await asyncio.sleep(max(0.0, window[1] - time.monotonic()))
        on_window_end()

    await asyncio.gather(marks(), *tasks)
    return tally


# measuring one setup


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system
    return total



@dataclass
class Result:
    name: str
    workers: int
    students: int
    duration: float
    tally: Tally
    server_cpu: float
    generator_cpu: float
    rss_mib: float
    others_cpu: float  # CPU seconds of everything else on the machine in the window
    idle_cpu: float = 0.0  # CPU seconds a second the same server spends with no student (`IDLE_SECONDS`)

    @property
    def cpu_per_update(self) -> float:
        return self.server_cpu / max(1, self.tally.updates)

    @property
    def cpu_above_idle(self) -> float:
        """Server CPU per update beyond what it spends idle over the same window: gradio's queue wakes
        a thousand times a second with nothing to do (a bare Blocks app idles at about 55 ms/s on this
        machine), a cost of the platform that a light class's few updates each carry a large share of."""
        return max(0.0, self.server_cpu - self.idle_cpu * self.duration) / max(1, self.tally.updates)

    def row(self) -> str:
        t = self.tally
        if not t.latencies:
            return f"{self.name:<34} no answers ({len(t.errors)} errors)"
        p50, p95 = statistics.median(t.latencies), percentile(t.latencies, 0.95)
        cores = os.cpu_count() or 1
        return (
            f"{self.name:<34} {t.keys:>6} {t.updates:>8} {t.updates / self.duration:>7.1f} {len(t.errors):>6}"
            f" {p50 * 1000:>8.0f} {p95 * 1000:>8.0f} {self.cpu_per_update * 1000:>10.1f}"
            f" {self.idle_cpu * 1000:>8.0f} {self.cpu_above_idle * 1000:>10.1f}"
            f" {self.server_cpu / self.duration / cores:>8.0%} {self.generator_cpu / self.duration:>9.0%}"
            f" {self.rss_mib:>7.0f} {self.others_cpu / self.duration / cores:>7.0%}"
            f" {t.messages / max(1, t.updates):>8.1f}"
        )


HEADER = (
    f"{'setup':<34} {'keys':>6} {'updates':>8} {'upd/s':>7} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8}"
    f" {'CPU ms/upd':>10} {'idle ms/s':>8} {'above idle':>10} {'server':>8} {'generator':>9} {'RSS MiB':>7}"
    f" {'others':>7} {'msgs/upd':>8}"
)
IDLE_SECONDS = 5.0  # the server measured with no student, after its warm-up, before the class arrives


@contextlib.contextmanager
def serving(setup: str) -> Iterator[tuple[str, list[psutil.Process]]]:
    if setup == "app":
        with launched_app() as (url, process):
            yield url, [process]
        return
    if setup == "echo":  # the floor: a one-textbox echo app, its event on gradio's queue (bench/server_cpu.py)
        command = [sys.executable, "-m", "bench.server_cpu", "--serve-echo", '{"show_error": false}']
        with launched(command, "the echo app") as (url, process):
            yield url, [process]
        return
    workers = int(setup.removeprefix("lb"))
    with ClassServer(workers, port=free_port(), host="127.0.0.1", first_worker_port=0) as server:
        yield server.url, psutil.Process(server.supervisord.pid).children()  # the workers, HAProxy and Redis


def warm(url: str, workers: int, echo: bool = False) -> None:
    """One update on every worker (each fresh client gets the least busy one), so no cold start is
    measured: a page opened and typed into, or the echo's event."""
    endpoint = Endpoint.discover(url, "echo" if echo else "view")

    async def one(http: httpx.AsyncClient) -> None:
        await http.get("")  # the page: the balancer's sticky cookie comes with it
        if echo:
            await queue_update(http, endpoint, uuid.uuid4().hex[:11], "warm up")
        else:
            await page_update(http, endpoint, "", "warm up", key=await open_page(http))

    async def once() -> None:
        clients = [httpx.AsyncClient(base_url=url, timeout=120) for _ in range(max(2, 2 * workers))]
        try:
            await asyncio.gather(*(one(http) for http in clients))
        finally:
            await asyncio.gather(*(h.aclose() for h in clients))

    asyncio.run(once())


def measure(setup: str, name: str, students: int, ramp: float, duration: float, protocol: str,
            seed: int, light: int = 0) -> list[Result]:
    """The class on one setup; with `light`, then as many students on the same server, unsaturated."""
    workers = 1 if setup in ("app", "echo") else int(setup.removeprefix("lb"))
    if setup == "echo":
        protocol = "echo"  # its one event, on the queue
    results = []
    with serving(setup) as (url, processes):
        warm(url, workers, echo=setup == "echo")
        time.sleep(1.0)  # the warm-up's last answers and collections done
        before = cpu_seconds(processes)
        time.sleep(IDLE_SECONDS)
        idle = (cpu_seconds(processes) - before) / IDLE_SECONDS
        for crowd, label in ((students, name), (light, f"{name}, {light} students")):
            if not crowd:
                continue
            marks: dict[str, float] = {}

            def busy() -> float:  # every process on the machine
                times = psutil.cpu_times()
                return times.user + times.system + getattr(times, "nice", 0.0)

            def start(marks=marks) -> None:
                marks["server"], marks["own"], marks["all"] = cpu_seconds(processes), time.process_time(), busy()

            def end(marks=marks) -> None:
                marks["server"] = cpu_seconds(processes) - marks["server"]
                marks["own"] = time.process_time() - marks["own"]
                marks["all"] = busy() - marks["all"]

            tally = asyncio.run(run_class(url, crowd, ramp, duration, protocol, seed, start, end))
            rss = sum(p.memory_info().rss for p in processes if p.is_running()) / 2**20
            others = max(0.0, marks["all"] - marks["server"] - marks["own"])
            results.append(Result(label, workers, crowd, duration, tally, marks["server"], marks["own"], rss, others,
                                  idle))
    return results


SETUP_NAMES = {"app": "1 process (app.py)", "lb1": "1 worker + HAProxy", "lb2": "2 workers + HAProxy",
               "echo": "echo app (floor), 1 process"}


@dataclass(frozen=True)
class Estimate:
    """A course's cores on paper: the demand of the typing model times a measured cost per update."""

    basis: Result  # the run whose CPU per update is the cost
    full: Result  # the largest class measured, whose keystroke rate is printed beside the model's
    keys_per_s: float
    cpu: float  # server CPU seconds per update
    cores: float

    @property
    def workers(self) -> int:
        return math.ceil(self.cores)


def estimate(results: list[Result], course: int, utilisation: float) -> Estimate | None:
    """The cores ``course`` students need at ``utilisation``; None when no setup answered::

        cores = students x updates/s per student x CPU s per update / target utilisation

    with updates/s per student taken as the keystroke rate (every key an update: the most a
    student can ask for when answers come quickly) and a target utilisation of 60% (the
    command's default).
    """
    answered = [r for r in results if r.tally.updates]
    if not answered:
        return None
    # the cost of an update where a course should run: below saturation (a long queue costs
    # gradio extra CPU per update, which a well-sized server never pays); the demand from the full class
    light = [r for r in answered if r.students < max(x.students for x in answered)]
    basis = light[-1] if light else answered[-1]
    full = max(answered, key=lambda r: (r.students, r.tally.typing))
    keys_per_s = typing_rate()
    cpu = basis.cpu_per_update
    return Estimate(basis, full, keys_per_s, cpu, course * keys_per_s * cpu / utilisation)


def capacity(results: list[Result], course: int, utilisation: float) -> Estimate | None:
    """Print the estimate for ``course`` students, and return it."""
    found = estimate(results, course, utilisation)
    if found is None:
        return None
    basis, full, cpu, cores = found.basis, found.full, found.cpu, found.cores
    keys_per_s, workers = found.keys_per_s, found.workers
    print(f"\nCapacity on paper for {course} students, p95 <= 1 s (cost from '{basis.name}'):")
    print(f"  demand: {keys_per_s:.2f} keystrokes/s per student, the typing model's average (typing and pausing;"
          f" {full.tally.keys_per_second:.2f} measured in '{full.name}', lower when this machine delays the timers);"
          " every key counted as one update (the most a student sends when answers come quickly)")
    print(f"  cost:   {cpu * 1000:.1f} ms of server CPU per update (workers and HAProxy together)")
    print(f"  model:  cores = {course} x {keys_per_s:.2f} updates/s x {cpu * 1000:.1f} ms / {utilisation:.0%} target"
          f" utilisation = {cores:.1f} cores -> {workers} workers (one per core)")
    print(f"          (at {utilisation:.0%} utilisation a core's queue stays short: waits are a few updates of"
          f" ~{cpu * 1000:.0f} ms, far under 1 s; the page adds ~0.4 s of its own drawing)")
    per_worker = basis.rss_mib / basis.workers
    for rate in (2.0, 1.0):
        if rate < keys_per_s:
            print(f"          at {rate:.0f} update(s)/s per student (keys coalesced while the page redraws):"
                  f" {course * rate * cpu / utilisation:.0f} cores")
    for machine in (8, 16, 32, 64):
        machines = math.ceil(cores / machine)
        print(f"  on {machine:>2}-core machines: {machines} machine(s), {workers} workers, about"
              f" {workers * per_worker / 1024:.0f} GiB of worker memory in all ({per_worker:.0f} MiB each)")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--duration", type=float, default=90, help="measured seconds per setup")
    parser.add_argument("--ramp", type=float, default=10, help="seconds for the class to arrive, not measured")
    parser.add_argument("--quick", action="store_true", help="30 s per setup after a 5 s ramp")
    parser.add_argument("--setups", default="echo,app,lb1,lb2",
                        help="comma-separated: echo, app, lb1, lb2 (lbN: N workers)")
    parser.add_argument("--protocol", choices=sorted(PROTOCOLS), default="page",
                        help="page: as the page types (ui/route.py); queue, call: the API's view of the text's link")
    parser.add_argument("--compare-protocols", action="store_true",
                        help="first measure both protocols on one process with a quarter of the class")
    parser.add_argument("--light", type=int, default=10,
                        help="after the last setup's class, this many students on it again: the unsaturated cost")
    parser.add_argument("--course", type=int, default=500, help="students the capacity estimate is for")
    parser.add_argument("--utilisation", type=float, default=0.6, help="target CPU utilisation for the estimate")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.quick:
        args.duration, args.ramp = 30, 5

    cores = os.cpu_count() or 1
    print(f"{args.students} students typing at human speed, {args.duration:.0f} s measured per setup after a"
          f" {args.ramp:.0f} s ramp, on {cores} cores (server and load generator share them)")
    if args.compare_protocols:
        few = max(5, args.students // 4)
        print(f"\nprotocols, on one process, {few} students:")
        print(HEADER)
        for protocol in sorted(PROTOCOLS):
            [result] = measure("app", f"{protocol}", few, args.ramp, args.duration, protocol, args.seed)
            print(result.row(), flush=True)
            gen = result.generator_cpu / max(1, result.tally.updates) * 1000
            print(f"{'':<34} generator {gen:.1f} ms CPU per update", flush=True)

    results = []
    print(f"\nupdates via '{args.protocol}':")
    print(HEADER, flush=True)
    setups = [x.strip() for x in args.setups.split(",") if x.strip()]
    for setup in setups:
        name = SETUP_NAMES.get(setup, f"{setup.removeprefix('lb')} workers + HAProxy")
        light = args.light if setup == setups[-1] else 0
        for result in measure(setup, name, args.students, args.ramp, args.duration, args.protocol, args.seed, light):
            results.append(result)
            print(result.row(), flush=True)
            for error in result.tally.errors[:3]:
                print(f"  {error}")
    print("  keys: keystrokes typed in the window; p50/p95: key to the first answer showing it; CPU ms/upd:"
          " server CPU per answered update; idle ms/s: the same server's CPU a second with no student, before"
          " the class; above idle: CPU ms/upd less that idle share of the window; server: share of all cores;"
          " generator: this script's CPU,"
          " share of one core; others: every other process on the machine, share of all cores;"
          " msgs/upd: event-stream messages a student received per answer")
    capacity(results, args.course, args.utilisation)


if __name__ == "__main__":
    main()
