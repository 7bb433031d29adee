"""A class following its lecturer: what the students' pages cost the server while they wait, and how soon
the lecturer's *Next* reaches them.

    python -m bench.class_follow [--students 100] [--typing 30] [--presses 5] [--window 20] [--quick]

One launched app (`python app.py` in a child process, as a Space runs it: one process), a
lecturer's page and --students students' pages, each driven as assets/classroom.js drives it
(`Page`). Two parts (`measure` gives each one's detail): the server's CPU while the pages idle
with their class streams open, against the same pages open without streams; and the
lecturer's *Next* reaching the followers, alone and while some of them type, against the
streams' fan-out alone (the echo: the pages only listen). Targets (bench/run.py, measure
`class`): the students' idle streams ≤ 10% of one core; 95% of the followers reached within
1.5 s, alone and while others type. Times are measured, never asserted; the exit status is
non-zero only when the measure could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import orjson
import psutil

from bench.appserver import tree_seconds
from bench.pages import ROUTE, CallFailed, key_of, opening
from bench.report import ms, percentile, tables_and_errors, times

WITHIN = 1.5  # seconds: the target's reach
KEYS_PER_SECOND = 5.0  # a typing student's pace
CALL_TIMEOUT = 120.0  # seconds one call may take
PRESS_TIMEOUT = 60.0  # seconds a press may take to reach every follower; the rest count as missed
SETTLE = 1.0  # seconds of quiet after a press has reached everyone (and before an idle window)
OPENING = 8  # pages opening at once (their first call on the page's route)
WORDS = ("river", "garden", "castle", "violin", "tractor", "mountain", "umbrella", "candle", "island", "bridge")
SENTENCE = "the {w} sat quietly on the old mat while a small dog slept by the door"
# the students' one network address (a school's NAT), and the lecturer's; documentation addresses
SCHOOL, LECTURER = "203.0.113.7", "198.51.100.9"
RELOADS = 30  # students who press F5 once the presses are done


def now() -> float:
    return time.monotonic()


def busy_seconds() -> float:
    spent = psutil.cpu_times()
    return spent.user + spent.system + getattr(spent, "nice", 0.0)


# one page


class Page:
    """One browser tab of the app, as assets/explorer.js and assets/classroom.js drive it.

    It opens as a page does: its first call on the page's route, whose answer's address carries
    the tab's key (bench/pages.py `opening`). A student's page holds its class stream open
    (POST explorer/class/stream, server-sent events; one asyncio task per page, each page its
    own httpx connection pool) and, when a message says it follows and the version is newer
    than the one it was shown, asks to be shown the lesson (POST explorer/class/follow), one
    follow at a time. The follow's answer is the whole view: the figure and what else the
    page's script writes, and the step's text and widgets for gradio's components, which the
    page hands over with an event that runs in the browser alone (ui/page.py `hand_over`).
    Nothing of a lesson goes through gradio's queue; the lecturer's *Next* is one call of the
    page's route (`move`), as its button sends it.
    """

    def __init__(self, url: str, address: str | None = None) -> None:
        limits = httpx.Limits(max_connections=6, max_keepalive_connections=6)  # a browser's per host
        # `address`: the client's, forwarded as the app's trusted proxy would (uvicorn trusts loopback's)
        headers = {"X-Forwarded-For": address} if address else None
        self.http = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(CALL_TIMEOUT, connect=30), limits=limits,
                                      headers=headers)
        self.key: str | None = None
        self.class_id: str | None = None
        self.seat: str | None = None  # the browser's seat in the class, as its localStorage keeps it
        self.last: dict = {}  # the stream's last message
        self.heard: dict[int, float] = {}  # version -> when the stream first said it
        self.followed: dict[int, float] = {}  # version a follow was asked for -> when its answer (the whole view) came
        self.follows = True  # False: the page only listens (the echo baseline)
        self.following_call = False  # a follow call in flight (classroom.js `following`)
        self.answer_bytes: list[int] = []
        self.errors: list[str] = []
        self.tasks: set[asyncio.Task] = set()
        self.stream: asyncio.Task | None = None
        self.streaming = asyncio.Event()  # set at the stream's first message

    def spawn(self, work) -> asyncio.Task:
        task = asyncio.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def error(self, where: str, error: object) -> None:
        self.errors.append(f"{where}: {error!r}"[:240])

    async def open(self, query: str = "") -> None:
        answer = await self.http.post(ROUTE, json=opening(query))
        self.key = key_of(answer.raise_for_status().json())

    async def reload(self) -> None:
        """F5 on the class's link: the page opens again with the key it had (let go, its place taken),
        and its stream opens again with the browser's seat."""
        if self.stream is not None:
            self.stream.cancel()
            await asyncio.gather(self.stream, return_exceptions=True)
        sent = {"open": {**opening(f"class={self.class_id}")["open"], "previous": self.key}}
        self.key = key_of((await self.http.post(ROUTE, json=sent)).json())
        self.streaming.clear()
        self.listen(self.class_id)

    async def move(self, step: int) -> dict:
        """The tour's Next (1) or Previous (−1), as its buttons send it: one call of the page's route."""
        answer, _ = await self.post(ROUTE, {"change": {"move": step}})
        if "error" in answer:
            raise CallFailed(f"{'Next' if step > 0 else 'Previous'}: {answer['error']!r}")
        return answer

    async def post(self, path: str, body: dict) -> tuple[dict, int]:
        try:
            answer = await self.http.post(path, json={"key": self.key, **body})
        except (httpx.ReadError, httpx.RemoteProtocolError):
            # a kept-alive connection the server closed as it was reused: sent again once, as a
            # browser does when a reused connection fails before any answer
            answer = await self.http.post(path, json={"key": self.key, **body})
        return orjson.loads(answer.content), len(answer.content)

    # the class (assets/classroom.js)

    async def start(self) -> str:
        answer, _ = await self.post("explorer/class/start", {})
        if "class" not in answer:
            raise CallFailed(f"start: {answer.get('error')!r}")
        self.class_id = answer["class"]
        return self.class_id

    def listen(self, class_id: str) -> None:
        self.class_id = class_id
        self.stream = self.spawn(self._listen())

    async def _listen(self) -> None:
        body = {"key": self.key, "class": self.class_id, **({"seat": self.seat} if self.seat else {})}
        timeout = httpx.Timeout(CALL_TIMEOUT, connect=30, read=120)  # an idle stream says a blank line every 15 s
        try:
            async with self.http.stream("POST", "explorer/class/stream", json=body, timeout=timeout) as response:
                if response.status_code != 200:
                    self.error("stream", f"HTTP {response.status_code} {(await response.aread())[:160]!r}")
                    return
                async for line in response.aiter_lines():  # one event a message; comments (pings) aside
                    if line.startswith("data:"):
                        self.hear(orjson.loads(line[5:]))
            if not (self.last.get("ended")):
                self.error("stream", "closed by the server")
        except (httpx.HTTPError, ValueError) as error:
            self.error("stream", error)

    def hear(self, message: dict) -> None:
        version = int(message.get("version") or 0)
        self.heard.setdefault(version, now())
        self.seat = message.get("seat") or self.seat
        self.last = message
        self.streaming.set()
        if (message.get("role") == "student" and message.get("following") and version > message.get("shown", 0)
                and not message.get("ended") and self.follows and not self.following_call):
            self.following_call = True  # classroom.js: one follow at a time; a message meanwhile is not followed
            self.spawn(self.follow(version))

    async def follow(self, version: int) -> None:
        try:
            answer, size = await self.post("explorer/class/follow", {})
        except (httpx.HTTPError, ValueError) as error:
            self.error("follow", error)
            return
        finally:
            self.following_call = False
        if "error" in answer or answer.get("skipped"):
            self.error("follow", answer.get("error") or "skipped")
            return
        self.followed.setdefault(version, now())
        self.answer_bytes.append(size)

    def version(self) -> int:
        return max(self.heard, default=0)

    def has(self, base: int, kind: str) -> float | None:
        """When this page first had a version newer than `base`: heard or followed."""
        times_ = [t for v, t in getattr(self, kind).items() if v > base]
        return min(times_) if times_ else None

    # typing (assets/explorer.js): one call in flight, the newest text in the next

    async def type(self, stop: asyncio.Event, word: str, seed: int, latencies: list[float]) -> None:
        rng = random.Random(seed)
        state = {"text": "", "pending": []}
        changed = asyncio.Event()

        async def sender() -> None:
            while True:
                await changed.wait()
                changed.clear()
                keys, state["pending"] = state["pending"], []
                try:
                    answer, _ = await self.post(ROUTE, {"change": {"sentence_a": state["text"]}})
                except (httpx.HTTPError, ValueError) as error:
                    self.error("type", error)
                    continue
                if "error" in answer:
                    self.error("type", answer["error"])
                    continue
                answered = now()
                latencies.extend(answered - k for k in keys)

        sending = self.spawn(sender())
        sentence = SENTENCE.format(w=word)
        try:
            while not stop.is_set():
                for end in range(1, len(sentence) + 1):
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), rng.uniform(0.8, 1.2) / KEYS_PER_SECOND)
                    if stop.is_set():
                        break
                    state["text"] = sentence[:end]
                    state["pending"].append(now())
                    changed.set()
        finally:
            deadline = now() + CALL_TIMEOUT
            while (state["pending"] or changed.is_set()) and now() < deadline and not sending.done():
                await asyncio.sleep(0.05)
            sending.cancel()

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.http.aclose()


# the measure


@dataclass
class Press:
    scenario: str
    step: int
    measured: int  # the followers it is measured over
    lecturer: float  # press to the lecturer's own answer
    heard: list[float] = field(default_factory=list)
    reached: list[float] = field(default_factory=list)
    missed: int = 0  # followers not reached within PRESS_TIMEOUT


@dataclass
class Window:
    name: str
    streams: int
    seconds: float
    server: float  # CPU seconds
    generator: float
    others: float
    counts: str = ""  # what the lecturer's banner said


class Lecture:
    def __init__(self, url: str, process: psutil.Process, students: int, addresses: int = 1) -> None:
        self.url, self.process = url, process
        self.lecturer = Page(url, LECTURER)
        self.students = [Page(url, SCHOOL if addresses == 1 else f"198.18.{i // 250}.{i % 250 + 1}")
                         for i in range(students)]
        self.step = 0

    @property
    def pages(self) -> list[Page]:
        return [self.lecturer, *self.students]

    async def open(self) -> None:
        gate = asyncio.Semaphore(OPENING)

        async def opened(page: Page) -> None:
            async with gate:
                await page.open(f"class={self.lecturer.class_id}")  # the student link, as the lecturer gave it

        await self.lecturer.open()
        await self.lecturer.start()
        await asyncio.gather(*(opened(page) for page in self.students))

    async def reload(self, pages: list[Page]) -> int:
        """F5 on each of `pages` (OPENING at once); the number whose stream then says the class again."""
        gate = asyncio.Semaphore(OPENING)

        async def reloaded(page: Page) -> bool:
            async with gate:
                try:
                    await page.reload()
                except (CallFailed, httpx.HTTPError, ValueError) as error:
                    page.error("reload", error)
                    return False
            return await self.until(lambda: page.streaming.is_set() or bool(page.errors), CALL_TIMEOUT) \
                and page.streaming.is_set()

        return sum(await asyncio.gather(*(reloaded(page) for page in pages)))

    async def window(self, name: str, seconds: float, streams: int) -> Window:
        await asyncio.sleep(SETTLE)
        server, own, everyone, began = tree_seconds(self.process), time.process_time(), busy_seconds(), now()
        await asyncio.sleep(seconds)
        took = now() - began
        server, own = tree_seconds(self.process) - server, time.process_time() - own
        everyone = busy_seconds() - everyone
        last = self.lecturer.last
        counts = f"{last.get('connected')} connected, {last.get('following')} following" if last else ""
        return Window(name, streams, took, server, own, max(0.0, everyone - server - own), counts)

    async def join(self) -> None:
        """Every student's stream opened; each page hears its first message and follows the first lesson."""
        for page in self.students:
            page.listen(self.lecturer.class_id)
        await self.until(lambda: all(p.followed or p.errors for p in self.students), CALL_TIMEOUT)
        await self.until(lambda: all(not p.tasks - {p.stream} for p in self.students), CALL_TIMEOUT)
        late = [p for p in self.students if not p.followed]
        if len(late) == len(self.students):
            raise RuntimeError(f"no student followed the first lesson: {self.students[0].errors[:2]}")

    @staticmethod
    async def until(done: Callable[[], bool], seconds: float) -> bool:
        deadline = now() + seconds
        while not done():
            if now() > deadline:
                return False
            await asyncio.sleep(0.02)
        return True

    async def press(self, move: int, scenario: str, measured: list[Page], kind: str) -> Press:
        """The lecturer presses Next (or Previous); wait until every measured page has the new
        version (`kind`: "heard" or "followed"), then until the pages' calls are done."""
        base = max(p.version() for p in self.pages)
        began = now()
        try:
            await self.lecturer.move(move)
        except (CallFailed, httpx.HTTPError) as error:
            raise RuntimeError(f"the lecturer's {'Next' if move > 0 else 'Previous'} failed: {error!r}") from error
        lecturer = now() - began
        self.step += move
        await self.until(lambda: all(p.has(base, kind) is not None for p in measured), PRESS_TIMEOUT)
        # the pages' own calls (follows) finished before the next press
        await self.until(lambda: all(not p.tasks - {p.stream} for p in measured), PRESS_TIMEOUT)
        found = Press(scenario, self.step, len(measured), lecturer)
        for page in measured:
            heard, reached = (page.has(base, k) for k in ("heard", "followed"))
            if heard is not None:
                found.heard.append(heard - began)
            if reached is not None:
                found.reached.append(reached - began)
            if (heard if kind == "heard" else reached) is None:
                found.missed += 1
        if measured and found.missed == len(measured):
            errors = [e for page in measured for e in page.errors][:2]
            raise RuntimeError(f"no page had the lesson of step {self.step} within {PRESS_TIMEOUT:g} s: {errors}")
        await asyncio.sleep(SETTLE)
        return found

    async def back_to(self, step: int) -> None:
        while self.step > step:
            await self.press(-1, "back", [p for p in self.students if p.follows], "followed")

    async def close(self) -> None:
        await asyncio.gather(*(page.close() for page in self.pages), return_exceptions=True)


async def run(url: str, process: psutil.Process, students: int, typing: int, presses: int, window: float,
              say: Callable[[str], None], addresses: int = 1) -> dict:
    lecture = Lecture(url, process, students, addresses)
    windows: list[Window] = []
    found_presses: list[Press] = []
    typed: list[float] = []
    typists = lecture.students[:typing]
    followers = lecture.students[typing:]
    try:
        began = now()
        await lecture.open()
        say(f"  {students + 1} pages opened, the class started ({now() - began:.0f} s)")
        windows.append(await lecture.window("baseline: every page open, no class stream", window, 0))
        began = now()
        await lecture.join()
        say(f"  {students} students' streams open, the first lesson followed ({now() - began:.0f} s)")
        windows.append(await lecture.window("the students' streams, each page following", window, students))
        lecture.lecturer.listen(lecture.lecturer.class_id)
        await lecture.until(lambda: lecture.lecturer.streaming.is_set() or bool(lecture.lecturer.errors), 30)
        windows.append(await lecture.window("the students' and the lecturer's streams", window, students + 1))
        say(f"  idle windows measured ({window:g} s each)")

        await lecture.press(+1, "warm-up", lecture.students, "followed")  # to step 1
        first = lecture.step
        for _ in range(presses):
            found_presses.append(await lecture.press(+1, "alone", lecture.students, "followed"))
        say(f"  alone: {presses} presses")
        await lecture.back_to(first)
        for page in lecture.students:
            page.follows = False
        for _ in range(presses):
            found_presses.append(await lecture.press(+1, "echo", lecture.students, "heard"))
        for page in lecture.students:
            page.follows = True
        await lecture.back_to(first)  # the first Previous's message has every page follow again
        say(f"  echo: {presses} presses")

        stop = asyncio.Event()
        typing_tasks = [page.spawn(page.type(stop, WORDS[i % len(WORDS)], i, typed)) for i, page in
                        enumerate(typists)]
        await lecture.until(lambda: all(not p.last.get("following", True) for p in typists), 30)
        await asyncio.sleep(2.0)
        typed.clear()  # the typists' latency while the presses run
        try:
            for _ in range(presses):
                found_presses.append(await lecture.press(+1, "typing", followers, "followed"))
        finally:
            stop.set()
            await asyncio.wait(typing_tasks, timeout=CALL_TIMEOUT)
        say(f"  typing: {presses} presses")
        stopped = sum(not p.last.get("following", True) for p in typists)
        strays = sum(not p.last.get("following", True) for p in followers)
        reloads = min(RELOADS, len(followers))
        reloaded = await lecture.reload(followers[:reloads])
        say(f"  reloads: {reloaded} of {reloads} served")
    finally:
        errors = [e for page in lecture.pages for e in page.errors]
        sizes = [b for page in lecture.students for b in page.answer_bytes]
        await lecture.close()
    return {"students": students, "typing": typing, "presses": presses, "window": window,
            "cores": os.cpu_count() or 1, "windows": windows, "runs": found_presses, "typed": typed,
            "typists_stopped": stopped, "followers_stopped": strays, "errors": errors,
            "addresses": addresses, "reloads": reloads, "reloaded": reloaded,
            "answer_bytes": statistics.median(sizes) if sizes else 0}


def measure(students: int = 100, typing: int = 30, presses: int = 5, window: float = 20.0,
            say: Callable[[str], None] = lambda line: print(line, flush=True), addresses: int = 1) -> dict:
    """The whole measure on a launched app (bench/appserver.py): returns every window and press.

    The lecturer's page starts a class (POST explorer/class/start), then:

    1. Idle: the server's CPU (the app's process and its children, user + system) over
       `window` seconds in three states, one after another: the baseline, every page open and
       no class stream; every student's stream open, each page having followed the first
       lesson; and the lecturer's stream open beside them (a lecturer's page reads the counts
       once a second). Each as % of one core, and over the baseline. The target is judged on
       the total CPU of the busier of the two windows with streams, not on its difference over
       the baseline (the app's own idle: gradio's queue loop and threads).
    2. Next: the lecturer's page presses *Next* (one call of the page's route, `{move: 1}`, as
       the button sends it) `presses` times, waiting after each until every follower has
       it. Per follower: the time from the press to its stream saying the new version (heard)
       and to its follow call's answer (reached: the page has the whole view). Three scenarios
       on the same steps (2, 3, …), the lecturer sent back to step 1 with *Previous* between
       them (those lessons are followed, not measured):
       - alone: every student follows;
       - echo, the baseline: the same presses while the pages only listen (no follow call), so
         the stream's fan-out is timed alone, and the follow calls' cost shows in the ratio of
         a scenario's reached p95 to the echo's heard p95;
       - typing: `typing` of the students type at human speed (5 keys/s; each keystroke a
         call of the page's route with the growing sentence, one call at a time and the
         newest text winning, as the page sends them; its answer, too, brings all the
         keystroke changed). A typing student stops following, as it should, so reach is
         measured over the others (students − typing); the typists' own key-to-answer latency
         is reported beside it.
    """
    from bench.appserver import launched_app

    if not 0 <= typing < students:
        raise SystemExit(f"--typing must be between 0 and --students − 1, not {typing}")
    with launched_app() as (url, process):
        found = asyncio.run(run(url, process, students, typing, presses, window, say, addresses))
    return summarise(found)


def summarise(found: dict) -> dict:
    windows = found["windows"]
    base = windows[0]
    found["baseline_pct"] = 100 * base.server / base.seconds
    found["followers_pct"] = max(100 * w.server / w.seconds for w in windows[1:])
    found["scenarios"] = {}
    for scenario in ("alone", "echo", "typing"):
        runs = [r for r in found["runs"] if r.scenario == scenario]
        measured = sum(r.measured for r in runs)
        reached = [s for r in runs for s in (r.heard if scenario == "echo" else r.reached)]
        found["scenarios"][scenario] = {
            "measured": measured, "presses": len(runs),
            "heard": [s for r in runs for s in r.heard], "reached": reached,
            "within": sum(s <= WITHIN for s in reached) / measured if measured else 0.0,
            "p95": percentile(reached, 0.95),
            "missed": sum(r.missed for r in runs),
            "lecturer": [r.lecturer for r in runs],
        }
    return found


def spread(values: list[float]) -> tuple[str, str, str]:
    if not values:
        return "—", "—", "—"
    return ms(statistics.median(values)), ms(percentile(values, 0.95)), ms(max(values))


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    cores, base = found["cores"], found["windows"][0]
    base_pct = 100 * base.server / base.seconds
    idle_rows = []
    for w in found["windows"]:
        pct = 100 * w.server / w.seconds
        idle_rows.append((w.name, str(w.streams), f"{w.seconds:.1f}", f"{w.server:.2f}", f"{pct:.1f}%",
                          "" if w is base else f"{pct - base_pct:+.1f} pt", f"{100 * w.generator / w.seconds:.1f}%",
                          f"{100 * w.others / w.seconds / cores:.0f}%", w.counts))
    press_rows = []
    for r in found["runs"]:
        scope = (f"{r.measured} listening" if r.scenario == "echo" else
                 f"{r.measured} following" + (f", {found['typing']} typing" if r.scenario == "typing" else ""))
        reached = r.heard if r.scenario == "echo" else r.reached
        p50, p95, top = spread(reached)
        press_rows.append((r.scenario, str(r.step), scope, ms(r.lecturer), spread(r.heard)[1], p50, p95, top,
                           f"{sum(s <= WITHIN for s in reached) / r.measured:.0%}", str(r.missed)))
    echo = found["scenarios"]["echo"]
    echo_p95 = percentile(echo["heard"], 0.95)
    summary_rows = []
    for scenario, label in (("alone", "alone: every student follows"),
                            ("typing", f"typing: {found['typing']} type, the others follow"),
                            ("echo", "echo: the pages only listen (baseline)")):
        s = found["scenarios"][scenario]
        if not s["presses"]:
            continue
        p50, p95, top = spread(s["reached"])
        ratio = percentile(s["reached"], 0.95) / echo_p95 if s["reached"] and echo["heard"] else float("nan")
        summary_rows.append((label, str(s["measured"]), spread(s["lecturer"])[0], spread(s["heard"])[1], p50, p95,
                             top, f"{s['within']:.1%}", str(s["missed"]), times(ratio)))
    typed = found["typed"]
    tables = [
        (f"class idle: server CPU (app process and children, user + system) over {found['window']:g} s per window, "
         f"{found['students']} students' pages and a lecturer's open; % of one core; generator: this process, % "
         f"of one core; others: the rest of the machine, share of {cores} cores; lecturer's banner: what its "
         "stream last said",
         ("window", "streams", "wall s", "CPU s", "server", "over baseline", "generator", "others",
          "lecturer's banner"),
         idle_rows),
        ("class Next, each press: press (the lecturer's Next on the page's route) to each page's stream "
         "saying the new version (heard) and to its follow call's answer, the whole view (reached); echo: the "
         "same presses, the pages only listen, reached = heard",
         ("scenario", "step", "pages", "lecturer's answer", "heard p95", "reached p50", "p95", "max",
          f"≤ {WITHIN:g} s", "missed"),
         press_rows),
        (f"class Next, all presses pooled; ratio: reached p95 / echo's heard p95; typing: {KEYS_PER_SECOND:g} keys/s "
         f"each; the typists' key-to-answer p50 {spread(typed)[0]}, p95 {spread(typed)[1]} ({len(typed)} keys); "
         f"{found['typists_stopped']} of {found['typing']} typists stopped following, "
         f"{found['followers_stopped']} of the others did; F5 on the class link: {found['reloaded']} of "
         f"{found['reloads']} pages served again; a follow answer: "
         f"{found['answer_bytes'] / 1024:.0f} KB (median)",
         ("scenario", "followers × presses", "lecturer p50", "heard p95", "reached p50", "p95", "max",
          f"≤ {WITHIN:g} s", "missed", "p95 / echo"),
         summary_rows),
    ]
    return tables


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--typing", type=int, default=30, help="students who type during the last presses")
    parser.add_argument("--presses", type=int, default=None, help="presses per scenario (5; 3 with --quick)")
    parser.add_argument("--window", type=float, default=None, help="seconds per idle window (20; 8 with --quick)")
    parser.add_argument("--quick", action="store_true", help="shorter windows and fewer presses")
    parser.add_argument("--addresses", type=int, default=1,
                        help="the students' client addresses: 1, one school's NAT (default); more, one a student")
    args = parser.parse_args()
    presses = args.presses or (3 if args.quick else 5)
    window = args.window or (8.0 if args.quick else 20.0)
    where = "one network address" if args.addresses == 1 else "an address each"
    print(f"python -m bench.class_follow: {args.students} students from {where} ({args.typing} of them typing in the "
          f"last scenario), {presses} presses per scenario, {window:g} s idle windows; {os.cpu_count()} CPUs",
          flush=True)
    try:
        found = measure(args.students, args.typing, presses, window, addresses=args.addresses)
    except (RuntimeError, CallFailed, httpx.HTTPError) as error:
        print(f"the measure could not run: {error}", file=sys.stderr)
        return 1
    tables_and_errors(report(found), found["errors"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
