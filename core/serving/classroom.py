"""A class: students' pages follow the lecturer's view, and the lecturer sees who follows.

A lecturer's tab *leads* (`Leader`): each change to its view becomes the class's *lesson*, written
as a link's query, so a class carries only what a link may. Students' tabs *follow* (`Follower`)
until they change something themselves. `Classroom` is this process's part of every class; the
writer, seats, outage and rounds are modules of their own. A class lasts while a lecturer's page is
connected, and `GRACE_SECONDS` after the last one left.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import os
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from core.serving.classoutage import Outage
from core.serving.classrounds import Rounds
from core.serving.classseats import Seats
from core.serving.classstore import (
    AWAY,
    GRACE_SECONDS,
    NO_CLASS,
    RECONNECTING,
    RETRY_SECONDS,
    Away,
    Full,
    Gone,
    Lesson,
    Reconnecting,
    RedisStore,
    digest,
    lesson_of,
)
from core.serving.classwriter import Writer
from core.serving.poll import MAX_MODERATED, Round, checked_flag, checked_prompt, checked_word
from core.serving.tabs import Buckets
from core.view.options import MAX_FOLLOWERS, Refused
from core.view.state import View

MAX_CLASSES = int(os.environ.get("EXPLORER_MAX_CLASSES", "200"))  # classes running at once, on every process
CLASSES_PER_ADDRESS = 3  # classes one client address may run at once
# classes one network may start at once, then one every START_SECONDS: a page that starts a class ends
# the one it led, so without it a loop of starts would churn classes under every other bound
CLASS_STARTS, START_SECONDS = int(os.environ.get("EXPLORER_CLASS_STARTS", "6")), 10.0  # (the tests': one client)
PUBLISH_SECONDS = 0.2  # a class's lessons go out at most this often: at most 5 a second
BEAT_SECONDS = 10.0  # how often a process says its lecturer pages are there and writes its counts again
ID = re.compile(r"[A-Za-z0-9_-]{16}")  # secrets.token_urlsafe(12)
SECRET = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)
SEAT = re.compile(r"([A-Za-z0-9_-]{16})\.[A-Za-z0-9_-]{22}")  # a seat's id, then its signature (`seat_token`)

ENDED = "The lecturer ended the class."
ANOTHER = "The lecturer started another class."
NOT_LECTURER = "This is not the lecturer's link of this class: only the lecturer's link can change what the class sees."
CANNOT_START = "No class can start just now: the store that keeps classes cannot be reached. Try again in a minute."
# the lecturer's changes to a round: op -> how its text is checked, and its flag's name in a refusal
LECTURES = {"ask": (checked_prompt, "Review first"), "close": (None, None), "clear": (None, None),
            "hide": (checked_word, "Hidden"), "approve": (checked_word, "Approved"), "review": (None, "Review first")}
NOT_FOLLOWING = "This page is not in a class: open the class link the lecturer gave to answer."
__all__ = ["Classroom", "seat_token", "Follower", "Forbidden", "Gone", "Leader", "Reconnecting"]


@dataclass(eq=False)
class Leader:
    """A tab that leads a class, with its ownership as the store holds it (to restore the class from)."""

    classroom: Classroom
    class_id: str
    digest: str
    address: str

    def changed(self, view: View) -> None:
        self.classroom.teach(self, view)


@dataclass(eq=False)
class Follower:
    """A student's tab in a class: following until its view leaves the lesson it was shown. Its
    `seat` is the student: every tab of one browser holds the same (`Classroom.join`)."""

    classroom: Classroom
    class_id: str
    seat: str = ""  # the seat's id: the unit of the class's turns and of a round's words
    token: str = ""  # the seat as its pages keep it: its id, signed for this class
    following: bool = True
    shown: int = 0  # the version of the lesson last shown to the tab
    lesson: str | None = None  # that lesson's query, as `lesson_of` writes it

    def changed(self, view: View) -> None:
        if self.following and self.lesson is not None and lesson_of(view) != self.lesson:
            self.following = False
            self.classroom.seats.changed(self.class_id, self)


def seat_token(kept: str, class_id: str, seat: str) -> str:
    """Seat `seat` of the class as its pages keep it, signed with the class's secret's digest (which
    never leaves the server): a page cannot make up seats, and one class's seat is no other's."""
    mac = hmac.new(kept.encode(), f"seat:{class_id}:{seat}".encode(), hashlib.sha256).digest()
    return f"{seat}.{base64.urlsafe_b64encode(mac).decode()[:22]}"


@dataclass(eq=False)
class Led:
    """A class led from this process: its lecturer pages here, their newest and published lessons."""

    leader: Leader  # the ownership to restore it with
    query: str
    step: int | None
    published: str
    published_at: float = float("-inf")  # when its last publishing began (the writer's ticks)
    version: int = 1
    pages: dict[str, Leader] = field(default_factory=dict)  # page key -> its leader, while its stream is open
    left: float = 0.0  # when (the store's clock) its last page here left, or it was led without one

    def alive(self, now: float) -> bool:
        """Whether a lecturer's page holds the class: connected here, or gone less than GRACE_SECONDS ago."""
        return bool(self.pages) or now - self.left < GRACE_SECONDS


class Forbidden(Refused):
    """Refused because the caller is not the lecturer: answered 403."""


class Classroom:
    """This process's part of every class. A request's call reaches the store at once (`Reconnecting`
    while it is away, nothing changed); what a page's change causes is left to the writer."""

    def __init__(self, store: RedisStore | None = None, *, beat: float = BEAT_SECONDS,
                 retry: float = RETRY_SECONDS, ticks: Callable[[], float] = time.monotonic) -> None:
        # the Redis that EXPLORER_CLASS_STORE names, or this process's own fakeredis server
        self.store = store if store is not None else RedisStore(os.environ.get("EXPLORER_CLASS_STORE", "").strip())
        self.writer = Writer(self, beat=beat, retry=retry, ticks=ticks)
        self.seats, self.outage, self.rounds = Seats(self), Outage(self), Rounds(self)
        self._led: dict[str, Led] = {}  # class id -> the class as its lecturer pages here hold it
        self._lock, self._beating = threading.Lock(), threading.Lock()
        self._told: list[Callable[[str | None, Lesson | None], None]] = []  # `hear`'s listeners
        self.starts = Buckets(CLASS_STARTS, START_SECONDS, ticks)  # by network
        self.store.listen(self.heard, self.rounds.heard, self.writer.lost)

    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock a class's times are on (the store's)."""
        return self.store.clock

    def reach(self, call: Callable, *args, refusal: str | None = RECONNECTING):
        """`call(*args)` on the store; while it is away, refused with `refusal` (None: answered None)."""
        try:
            return call(*args)
        except Away:
            self.writer.lost()
            if refusal is None:
                return None
            raise Reconnecting(refusal) from None

    def start_wait(self, address: str) -> float:
        """Seconds until `address` may start a class (0: now, and its start is counted)."""
        return self.starts.take(address)

    def too_many_starts(self, wait: float) -> Full:
        return Full(f"At most {self.starts.burst} classes can be started at once from one network address, then one "
                    f"every {self.starts.refill:g} s: try again in {max(1, math.ceil(wait))} s.")

    def start(self, tab, address: str) -> tuple[Lesson, str]:
        """A new class led by `tab`, its lesson that tab's view; returns it and the secret."""
        class_id, secret, before, view = secrets.token_urlsafe(12), secrets.token_urlsafe(24), tab.member, tab.view
        lesson = self.reach(self.store.create, class_id, digest(secret), address, lesson_of(view), view.step,
                            MAX_CLASSES, CLASSES_PER_ADDRESS, refusal=CANNOT_START)
        tab.member = Leader(self, class_id, digest(secret), address)
        self._hold(tab.member, lesson, left=self.clock())
        # a page leads one class: the one it led ends, said to its students (while the store is away,
        # it is left to end when its time runs out, its page no longer leading it)
        if isinstance(before, Leader) and self.reach(self.store.publish, before.class_id, None, None, ANOTHER,
                                                     refusal=None):
            self.forget(before.class_id)
        return lesson, secret

    def _hold(self, leader: Leader, lesson: Lesson, left: float = 0.0) -> Led:
        """The class as its lecturer pages here hold it (kept when it is held already)."""
        with self._lock:
            return self._led.setdefault(leader.class_id, Led(leader, lesson.query, lesson.step, lesson.query,
                                                             version=lesson.version, left=left))

    def lesson(self, class_id: object) -> Lesson:
        """The class's lesson (restored first if led here and lost by the store); `Gone` if none runs."""
        if not isinstance(class_id, str) or not ID.fullmatch(class_id):
            raise Gone(NO_CLASS)
        lesson = self.reach(self.store.lesson, class_id)
        if lesson is None or lesson.ended == AWAY:  # lost by the store, or its time ran out while it was away
            led = self._led.get(class_id)
            if led is not None and led.alive(self.clock()):
                lesson = self.reach(self.outage.restore, led)
            elif lesson is None and self.outage.just_back():
                raise Reconnecting(RECONNECTING)  # the store is just back: the class may not be restored yet
        if lesson is None or lesson.ended:
            raise Gone(lesson.ended if lesson else NO_CLASS)
        return lesson

    def check(self, class_id: object, secret: object) -> tuple[Lesson, str, str]:
        """The class, its secret's digest and the address that started it, if `secret` is its lecturer's."""
        lesson = self.lesson(class_id)
        kept, address = self.reach(self.store.owner, lesson.id) or ("", "")
        if not isinstance(secret, str) or not SECRET.fullmatch(secret) or not hmac.compare_digest(
                digest(secret), kept):
            raise Forbidden(NOT_LECTURER)
        return lesson, kept, address

    def _class_led(self, tab, secret: object) -> str:
        """The class `tab` leads, when `secret` is its lecturer's; raises `Forbidden` otherwise."""
        if not isinstance(tab.member, Leader):
            raise Forbidden(NOT_LECTURER)
        return self.check(tab.member.class_id, secret)[0].id

    def lead(self, class_id: object, secret: object) -> tuple[Leader, Lesson]:
        """A leader for a page that opened the lecturer's link (its member once it shows the lesson)."""
        lesson, kept, address = self.check(class_id, secret)
        leader = Leader(self, lesson.id, kept, address)
        self._hold(leader, lesson, left=self.clock())
        self.rounds.seed(lesson.id)
        return leader, lesson

    def end(self, tab, secret: object) -> Lesson:
        class_id = self._class_led(tab, secret)
        ended = self.reach(self.store.publish, class_id, None, None, ENDED)
        tab.member = None
        self.forget(class_id)
        if ended is None:
            raise Gone(NO_CLASS)
        return ended

    def join(self, tab, class_id: object, seat: object = None) -> Follower:
        """`tab` follows the class; its page is counted when its stream connects (`connect`).

        A student is a seat, not a page: a page that brings its browser's seat (`seat`, a token
        this class signed) sits in it, so a student's tabs and reloads share one share of the
        class's turns and one round's words; any other page is given a new seat. A page keeps
        the seat it joined with, so one page mints one seat a class, and a network opens no
        more pages of a class than the class seats (`core.serving.tabs.NewTabs`)."""
        lesson, member = self.lesson(class_id), tab.member
        if isinstance(member, Leader) and member.class_id == lesson.id:
            raise Refused("This page leads the class.")
        if not (isinstance(member, Follower) and member.class_id == lesson.id):
            kept = (self.reach(self.store.owner, lesson.id) or ("",))[0]
            given = SEAT.fullmatch(seat) if isinstance(seat, str) else None
            if given is None or not hmac.compare_digest(seat_token(kept, lesson.id, given[1]), seat):
                given = None
            sid = given[1] if given else secrets.token_urlsafe(12)
            tab.member = Follower(self, lesson.id, sid, seat_token(kept, lesson.id, sid))
        return tab.member

    def follow(self, tab) -> tuple[Follower, Lesson]:
        """The lesson `tab` is to be shown now (it follows, or asked to follow again)."""
        if not isinstance(tab.member, Follower):
            raise Refused("This page is not in a class: open the class link the lecturer gave.")
        return tab.member, self.lesson(tab.member.class_id)

    def newest(self, lesson: Lesson) -> Lesson:
        """The class's newest lesson, or `lesson` when there is none newer (or the store is away)."""
        newest = self.reach(self.store.lesson, lesson.id, refusal=None)
        return newest if newest is not None and newest.version > lesson.version and not newest.ended else lesson

    def expect(self, member: Follower, lesson: Lesson) -> None:
        """The tab is about to be shown `lesson`: the change that shows it is not the student's."""
        member.lesson = lesson.query

    def shown(self, member: Follower, lesson: Lesson, took: bool = True) -> None:
        """The tab was shown `lesson` (or refused it, `took` false: then it does not follow)."""
        was = member.following
        member.following, member.shown = took, lesson.version if took else member.shown
        if was != took:
            self.seats.changed(member.class_id, member)
        else:  # its own stream says so (a page's follow is no news to its classmates)
            self.tell(member.class_id, member=member)

    def teach(self, leader: Leader, view: View) -> None:
        """A leading tab's view changed: the writer publishes it at most once per PUBLISH_SECONDS."""
        with self._lock:
            led = self._led.get(leader.class_id)
            if led is None:  # its class ended, or was let go: the tab leads nothing now
                return
            led.query, led.step = lesson_of(view), view.step
        self.writer.soon(("lesson", leader.class_id), lambda: self._publish(led),
                         at=led.published_at + PUBLISH_SECONDS)

    def _publish(self, led: Led) -> None:
        query, step = led.query, led.step
        if query == led.published:
            return
        led.published_at = self.writer.ticks()  # when it began: a change meanwhile waits its turn
        lesson = self.store.publish(led.leader.class_id, query, step)
        led.published = query
        if lesson is None:  # the store lost it, or its time ran out while it was away
            self.outage.restore(led)

    def leading(self, now: float | None = None) -> list[Led]:
        """The classes led here (those a lecturer's page holds at `now`)."""
        with self._lock:
            return [led for led in self._led.values() if now is None or led.alive(now)]

    def leads(self, class_id: str) -> bool:
        return class_id in self._led

    def here(self, class_id: str) -> bool:
        """Whether the class has pages here (students', or its lecturer's)."""
        return class_id in self.seats.pages or class_id in self._led

    def forget(self, class_id: str) -> None:
        with self._lock:
            self._led.pop(class_id, None)

    def connect(self, key: str, member: Leader | Follower, lesson: Lesson) -> None:
        """The page's stream is open on `lesson`: a follower takes a seat (`Full` when none is left); a
        lecturer's page holds its class (again, if let go here while another screen kept it)."""
        if isinstance(member, Leader):
            led = self._hold(member, lesson)
            with self._lock:
                led.pages[key] = member
        else:
            self.reach(self.seats.take, key, member, MAX_FOLLOWERS)
        self.rounds.seed(member.class_id)

    def disconnect(self, key: str, member: Leader | Follower) -> None:
        """The page's stream closed (a page whose newer stream replaced it is not let go)."""
        if not isinstance(member, Leader):
            return self.seats.leave(key, member)
        with self._lock:
            led = self._led.get(member.class_id)
            if led is not None and led.pages.get(key) is member:
                del led.pages[key]
                if not led.pages:
                    led.left = self.clock()

    def presence(self, class_id: str) -> tuple[int, int, int] | None:
        """The class's pages connected and following, and the students they are, on every process; None
        while the store is away."""
        return self.reach(self.store.presence, class_id, refusal=None)

    def reconnecting(self, class_id: str) -> bool:
        """Whether what this process knows of the class waits for the store (away, or just back)."""
        return self.writer.away or class_id in self.outage.unsure

    def hear(self, listener: Callable[[str | None, Lesson | None, object], None]) -> None:
        """`listener(class_id, lesson, member)` is told when a class changed (None: every class's
        connection), with every lesson this process hears of (from the store, or read again); when
        the change is one page's and its lecturers' news only, `member` names it (`LECTURERS`: none)."""
        self._told.append(listener)

    def tell(self, class_id: str | None, lesson: Lesson | None = None, member: object = None) -> None:
        for listener in list(self._told):
            listener(class_id, lesson, member)

    def heard(self, lesson: Lesson) -> None:
        """A lesson was heard: published by any process, restored, or read again."""
        with self._lock:
            led = self._led.get(lesson.id)
            if led is not None:
                led.version = max(led.version, lesson.version)
            if lesson.ended:
                self._led.pop(lesson.id, None)
        self.outage.unsure.pop(lesson.id, None)  # its class is sure now
        if lesson.ended:  # a round ends with its class
            self.rounds.drop(lesson.id)
        self.tell(lesson.id, lesson)

    def lecture(self, op: str, tab, secret: object, text: object = None, flag: object = False) -> Round:
        """The lecturer's change `op` to the round (`LECTURES`), its text and flag checked first."""
        check, name = LECTURES[op]
        text, flag = check(text) if check else "", checked_flag(flag, name) if name else False
        return self.rounds.change(self._class_led(tab, secret), op, text, flag, MAX_MODERATED)

    def answer(self, tab, word: object, round_number: object) -> tuple[Round, tuple[str, ...]]:
        """A following tab's word, counted for its seat: a student's tabs share their words."""
        if not isinstance(tab.member, Follower):
            raise Refused(NOT_FOLLOWING)
        return self.rounds.answer(tab.member.class_id, tab.member.seat, word, round_number)

    def beat(self) -> None:
        """Every `beat` seconds: move on the end of classes led here, let go of those left past their
        grace, write the counts and acknowledged answers again, and wake every stream."""
        with self._beating:
            now = self.clock()
            with self._lock:
                self._led = {class_id: led for class_id, led in self._led.items() if led.alive(now)}
            for led in self.leading():
                if led.pages and self.store.publish(led.leader.class_id, None, None) is None:
                    self.outage.restore(led)
            for class_id in self.seats.classes():
                self.seats.write(class_id)
            for class_id in self.rounds.classes():
                self.rounds.replay_soon(class_id)
        self.tell(None)

    def close(self) -> None:
        """Stop the writer and the store's listener (a test's classroom, when the test ends)."""
        self.writer.close()
        self.store.close()
