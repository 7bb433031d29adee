"""A round of answers in a class: a hundred students answer within seconds; how soon the lecturer's
plane has them, and what the flood costs someone typing beside it.

    python -m bench.poll [--students 100] [--spread 5] [--keys 60] [--quick]

One launched app (`python app.py`, one process as a Space runs it), a lecturer's page and
--students students' pages driven as the page scripts drive them (bench/class_follow.py `Page`),
each asking its plot again ({poll} on the page's route) when the round's drawn words change.
The lecturer asks; every student sends one word at a random moment within --spread seconds.
Measured: the answers acknowledged and counted; from the last answer's acknowledgement to the
lecturer's stream counting them all, and to the lecturer's redraw answer drawing them (its
figure's class trace); a typist's key-to-answer (a page outside the class typing on the page's
route, 5 keys/s) beside the flood against the same typist alone, run one after the other.
Targets (bench/run.py, measure `poll`): every answer counted; the lecturer's plane within 2 s
of the last answer. Times are measured, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time

import httpx
import orjson

from bench.class_follow import CallFailed, Page, now
from bench.report import ms, percentile, tables_and_errors, times

WITHIN = 2.0  # seconds: the target, last answer to the lecturer's plane
WORDS = ("queen", "prince", "princess", "crown", "throne", "castle", "royal", "kingdom", "emperor", "monarch",
         "ruler", "palace", "lord", "duke", "knight", "court", "reign", "empire", "majesty", "heir")
PROMPT = "Type a word you would put next to king."
SPREAD = 0.7  # seconds within which a student's page asks its plot again, at random (classroom.js SPREAD_MS)
SCHOOL, ELSEWHERE = "203.0.113.7", "198.51.100.9"  # the class's one network address, and the typist's
FLOODER_WORDS = ("noise", "static", "babble", "racket")  # what each of the one student's tabs sends: one too many


class Student(Page):
    """A student's page: follows the class, and asks its plot again when the round's words change."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.drawn = "[]"  # the round's drawn words last asked for (classroom.js `drawnAsked`: a new page shows none)
        self.polls: list[dict] = []  # each stream message's round, with when it came
        self.redraws: list[tuple[float, dict]] = []  # each {poll} answer, when it came
        self.secret: str | None = None  # a lecturer's, once it started the class

    async def start(self) -> str:
        """Start the class, keeping the secret the lecturer's poll calls carry."""
        answer, _ = await self.post("explorer/class/start", {})
        if "class" not in answer:
            raise CallFailed(f"start: {answer.get('error')!r}")
        self.class_id, self.secret = answer["class"], answer["secret"]
        return self.class_id

    def hear(self, message: dict) -> None:
        super().hear(message)
        poll = message.get("poll")
        if not poll:
            return
        self.polls.append({**poll, "at": now()})
        drawn = orjson.dumps(poll.get("drawn") or []).decode()
        shows = message.get("role") == "lecturer" or message.get("following")
        if shows and drawn != self.drawn:
            self.drawn = drawn
            lecturer = message.get("role") == "lecturer"
            self.spawn(self.redraw(poll["version"], 0.0 if lecturer else random.uniform(0, SPREAD)))

    async def redraw(self, version: int, wait: float) -> None:
        await asyncio.sleep(wait)
        try:
            answer, _ = await self.post("explorer/live", {"change": {"poll": version}})
        except (httpx.HTTPError, ValueError) as error:
            self.error("redraw", error)
            return
        if "error" in answer:
            self.error("redraw", answer["error"])
        self.redraws.append((now(), answer))


def class_words(answer: dict) -> dict[str, int] | None:
    """The class trace's words and counts in an answer's figure (None: no figure in it)."""
    plot = (answer.get("values") or {}).get("embed-plot")
    if not plot:
        return None
    for trace in orjson.loads(plot)["data"]:
        if trace.get("name") == "class":
            return {text.split("<br>")[0].rsplit(" ×", 1)[0]: int(text.split("<br>")[0].rsplit(" ×", 1)[1])
                    for text in trace["hovertext"]}
    return {}


async def typist(page: Page, seconds: float, latencies: list[float], seed: int) -> None:
    stop = asyncio.Event()
    task = page.spawn(page.type(stop, "violin", seed, latencies))
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.wait([task], timeout=60)


async def run(url: str, students: int, spread: float, keys: int, say, flooder: int = 0) -> dict:
    lecturer, typing = Student(url), Page(url)
    pupils = [Student(url) for _ in range(students)]
    flooding = [Student(url) for _ in range(flooder)]  # one student's tabs: they share its seat, as a browser's do
    pages = [lecturer, typing, *pupils, *flooding]
    for page in pages:  # as the server sees them behind a school's router, and a visitor elsewhere (the
        # server trusts its loopback peer's X-Forwarded-For)
        page.http.headers["X-Forwarded-For"] = ELSEWHERE if page is typing else SCHOOL
    found: dict = {"students": students, "spread": spread}
    try:
        began = now()
        gate = asyncio.Semaphore(8)

        async def opened(page: Page) -> None:
            async with gate:
                await page.open()

        await asyncio.gather(opened(lecturer), opened(typing))
        class_id = await lecturer.start()

        async def joined(page: Page) -> None:  # the student link, as the lecturer gave it
            async with gate:
                await page.open(f"class={class_id}")

        await asyncio.gather(*(joined(page) for page in [*pupils, *flooding]))
        lecturer.listen(class_id)
        for page in pupils:
            page.listen(class_id)
        until = asyncio.get_running_loop().time() + 120
        if flooding:  # the first tab's seat, which the browser's other tabs read from its localStorage
            flooding[0].listen(class_id)
            while flooding[0].seat is None and not flooding[0].errors and asyncio.get_running_loop().time() < until:
                await asyncio.sleep(0.05)
            for page in flooding[1:]:
                page.seat = flooding[0].seat
                page.listen(class_id)
        while not all(p.followed or p.errors for p in [*pupils, *flooding]) and \
                asyncio.get_running_loop().time() < until:
            await asyncio.sleep(0.05)
        say(f"  {students + 2} pages opened, {sum(bool(p.followed) for p in pupils)} students follow "
            f"({now() - began:.0f} s)")
        # the typist alone, then the round
        seconds = keys / 5.0
        alone: list[float] = []
        await typist(typing, seconds, alone, 1)
        asked, _ = await lecturer.post("explorer/class/poll/ask", {"secret": lecturer.secret, "prompt": PROMPT})
        if "error" in asked:
            raise CallFailed(f"ask: {asked['error']}")
        number = asked["poll"]["round"]
        while not all(any(m.get("round") == number and m.get("open") for m in p.polls) for p in pupils):
            await asyncio.sleep(0.05)
        rng = random.Random(0)
        acks: list[tuple[float, float, dict]] = []  # (sent, acknowledged, answer)

        async def answer(page: Student, word: str, at: float, kept: list) -> None:
            await asyncio.sleep(at)
            sent = now()
            try:
                said, _ = await page.post("explorer/class/poll/answer", {"word": word, "round": number})
            except (httpx.HTTPError, ValueError) as error:
                page.error("answer", error)
                return
            kept.append((sent, now(), said))

        beside: list[float] = []
        flooded: list[tuple[float, float, dict]] = []  # the one student's tabs' answers
        flood_began = now()
        await asyncio.gather(typist(typing, max(seconds, spread + 2), beside, 1),
                             *(answer(page, WORDS[i % len(WORDS)], rng.uniform(0, spread), acks)
                               for i, page in enumerate(pupils)),
                             *(answer(page, word, rng.uniform(0, spread), flooded)
                               for page in flooding for word in FLOODER_WORDS))
        taken = [a for a in acks if "poll" in a[2]]
        last = max((acked for _, acked, _ in taken), default=flood_began)
        # every answer the round counts: the classmates', and the one student's words once each
        total = len(taken) + max((len(a[2].get("own") or ()) for a in flooded), default=0)
        # the lecturer's stream counting every acknowledged answer, and its redraw drawing them all
        deadline = now() + 30
        while now() < deadline and not any(m.get("answers", 0) >= total and m["at"] >= flood_began
                                           for m in lecturer.polls):
            await asyncio.sleep(0.02)
        heard = next((m["at"] for m in lecturer.polls if m.get("answers", 0) >= total and m["at"] >= flood_began),
                     None)
        while now() < deadline and not any(sum((class_words(a) or {}).values()) >= total
                                           for _, a in lecturer.redraws):
            await asyncio.sleep(0.02)
        drawn = next((at for at, a in lecturer.redraws if sum((class_words(a) or {}).values()) >= total), None)
        counted = max((m.get("answers", 0) for m in lecturer.polls), default=0)
        words = {w["word"]: w["count"] for w in (lecturer.polls[-1].get("words") or [])} if lecturer.polls else {}
        found.update(
            flooder=flooder, flooder_sent=len(flooded), classmates_taken=len(taken),
            flooder_taken=sum("poll" in a[2] for a in flooded),
            flooder_counted=sum(words.get(word, 0) for word in FLOODER_WORDS),
            sent=len(acks), acknowledged=total,
            refused=[a[2].get("error") or str(a[2])[:200] for a in acks if "poll" not in a[2]][:3],
            counted=counted, students_counted=max((m.get("students", 0) for m in lecturer.polls), default=0),
            answer_ms=[acked - sent for sent, acked, _ in taken],
            to_stream=None if heard is None else heard - last, to_plane=None if drawn is None else drawn - last,
            flood=last - flood_began, alone=alone, beside=beside,
            redraws=sum(len(p.redraws) for p in pupils), errors=[e for p in pages for e in p.errors])
    finally:
        await asyncio.gather(*(page.close() for page in pages), return_exceptions=True)
    return found


def measure(students: int = 100, spread: float = 5.0, keys: int = 60, say=lambda line: print(line, flush=True),
            flooder: int = 0) -> dict:
    """The whole measure on a launched app (bench/appserver.py)."""
    from bench.appserver import launched_app

    with launched_app() as (url, _):
        return asyncio.run(run(url, students, spread, keys, say, flooder))


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    alone, beside = found["alone"], found["beside"]
    p95 = (percentile(alone, 0.95), percentile(beside, 0.95)) if alone and beside else (float("nan"),) * 2
    second = lambda value: "—" if value is None else ms(value)  # noqa: E731
    return [
        (f"a round of answers: {found['students']} students each send one word within {found['spread']:g} s "
         "(one process); the lecturer's stream and its plane's redraw ({poll} on the page's route)",
         ("answers sent", "acknowledged", "counted", "students counted", "answer p50", "answer p95",
          "last answer → lecturer's stream", "→ lecturer's plane", f"≤ {WITHIN:g} s", "followers' redraws"),
         [(str(found["sent"]), str(found["acknowledged"]), str(found["counted"]), str(found["students_counted"]),
           ms(statistics.median(found["answer_ms"])) if found["answer_ms"] else "—",
           ms(percentile(found["answer_ms"], 0.95)) if found["answer_ms"] else "—",
           second(found["to_stream"]), second(found["to_plane"]),
           "yes" if found["to_plane"] is not None and found["to_plane"] <= WITHIN else "no",
           str(found["redraws"]))]),
        (f"one student's {found['flooder']} tabs from the class link, behind the classmates' address, sharing its "
         f"seat as a browser's tabs do: each sends {len(FLOODER_WORDS)} words in the same seconds",
         ("tabs", "answers sent", "taken", "its words counted", "classmates' answers taken"),
         [(str(found["flooder"]), str(found["flooder_sent"]), str(found["flooder_taken"]),
           str(found["flooder_counted"]), f"{found['classmates_taken']} of {found['sent']}")]),
        ("a typist beside the round: key-to-answer on the page's route (5 keys/s, a page outside the class), "
         "alone and while the answers come; ratio: beside / alone",
         ("typist", "keys", "p50", "p95", "max"),
         [("alone", str(len(alone)), ms(statistics.median(alone)) if alone else "—", ms(p95[0]),
           ms(max(alone)) if alone else "—"),
          ("beside the round", str(len(beside)), ms(statistics.median(beside)) if beside else "—", ms(p95[1]),
           ms(max(beside)) if beside else "—"),
          ("ratio", "", "", times(p95[1] / p95[0]) if alone and beside else "—", "")]),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=100)
    parser.add_argument("--spread", type=float, default=5.0, help="seconds over which the students answer")
    parser.add_argument("--keys", type=int, default=60, help="keys the typist types alone (at 5 a second)")
    parser.add_argument("--quick", action="store_true", help="30 students, 30 keys")
    parser.add_argument("--flooder", type=int, default=150,
                        help="one student's tabs answering beside the class, sharing its seat (0: none)")
    args = parser.parse_args()
    students, keys = (30, 30) if args.quick else (args.students, args.keys)
    print(f"python -m bench.poll: {students} students answering within {args.spread:g} s, a typist "
          f"({keys} keys alone); {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}", flush=True)
    try:
        found = measure(students, args.spread, keys, flooder=args.flooder)
    except (RuntimeError, CallFailed, httpx.HTTPError) as error:
        print(f"the measure could not run: {error}", file=sys.stderr)
        return 1
    tables_and_errors(report(found), found["errors"] + [f"refused: {r}" for r in found["refused"]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
