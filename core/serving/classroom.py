"""A class: students' pages follow the lecturer's view, and the lecturer sees who follows.

A lecturer's tab *leads* (`Leader`): each change to its view becomes the class's *lesson*, the view
written as a link's query (`core.view.share`), so a class carries only what a link may. Students'
tabs *follow* (`Follower`) until they change something themselves (`Tab.apply` tells a tab's member
of every change). `Classroom` is this process's part of every class: its lessons here, and the calls
the routes make; its other jobs are modules of their own: the writer (`classwriter`), the seats and
counts (`classseats`), the store's outage (`classoutage`) and the poll's rounds (`classrounds`).
Bounds, each a sentence when met: classes at once and per address, pages per class, five lessons a
second. A class lasts while a lecturer's page is connected, `GRACE_SECONDS` after the last one left.
"""

from __future__ import annotations

import hmac
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
    Gone,
    Lesson,
    Reconnecting,
    RedisStore,
    digest,
    lesson_of,
    store_from_environment,
)
from core.serving.classwriter import Writer
from core.serving.poll import MAX_MODERATED, Round, checked_flag, checked_prompt, checked_word
from core.view.options import Refused
from core.view.state import View

MAX_CLASSES = int(os.environ.get("EXPLORER_MAX_CLASSES", "200"))  # classes running at once, on every process
CLASSES_PER_ADDRESS = 3  # classes one client address may run at once
MAX_FOLLOWERS = int(os.environ.get("EXPLORER_CLASS_FOLLOWERS", "500"))  # pages in one class
PUBLISH_SECONDS = 0.2  # a class's lessons go out at most this often: at most 5 a second
BEAT_SECONDS = 10.0  # how often a process says its lecturer pages are there and writes its counts again
ID = re.compile(r"[A-Za-z0-9_-]{16}")  # secrets.token_urlsafe(12)
SECRET = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)

ENDED = "The lecturer ended the class."
ANOTHER = "The lecturer started another class."
NOT_LECTURER = "This is not the lecturer's link of this class: only the lecturer's link can change what the class sees."
CANNOT_START = "No class can start just now: the store that keeps classes cannot be reached. Try again in a minute."
NOT_FOLLOWING = "This page is not in a class: open the class link the lecturer gave to answer."
__all__ = ["Classroom", "Follower", "Forbidden", "Gone", "Leader", "Reconnecting"]


@dataclass(eq=False)
class Leader:
    """A tab that leads a class, holding what the store holds of its ownership (the secret's
    digest, the address that started it), so the class can be restored from it."""

    classroom: Classroom
    class_id: str
    digest: str
    address: str

    def changed(self, view: View) -> None:
        self.classroom.teach(self, view)


@dataclass(eq=False)
class Follower:
    """A student's tab in a class: following until its view leaves the lesson it was shown."""

    classroom: Classroom
    class_id: str
    following: bool = True
    shown: int = 0  # the version of the lesson last shown to the tab
    lesson: str | None = None  # that lesson's query, as `lesson_of` writes it

    def changed(self, view: View) -> None:
        if self.following and self.lesson is not None and lesson_of(view) != self.lesson:
            self.following = False
            self.classroom.seats.changed(self.class_id)


@dataclass(eq=False)
class Led:
    """A class led from this process: its lecturer pages here, the newest lesson they asked for,
    the one published, and the newest version heard of."""

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
    """This process's part of every class. Calls from a request reach the store at once and say a
    store that is away as `Reconnecting`, having changed nothing; what a page's change causes (a
    new lesson, a count, a round announced) is left to the writer."""

    def __init__(self, store: RedisStore | None = None, *, beat: float = BEAT_SECONDS,
                 retry: float = RETRY_SECONDS, ticks: Callable[[], float] = time.monotonic) -> None:
        self.store = store if store is not None else store_from_environment()
        self.writer = Writer(self.store.ping, beat=beat, retry=retry, ticks=ticks, on_beat=self.beat,
                             on_away=lambda: self.tell(None), on_back=lambda: self.outage.back())
        self.seats, self.outage, self.rounds = Seats(self.store, self.writer, self.tell), Outage(self), Rounds(self)
        self._led: dict[str, Led] = {}  # class id -> the class as its lecturer pages here hold it
        self._lock, self._beating = threading.Lock(), threading.Lock()
        self._told: list[Callable[[str | None], None]] = []  # told a class whose state changed (None: every class)
        self._lessons: list[Callable[[Lesson], None]] = []  # told every lesson heard
        self.store.listen_rounds(self.rounds.heard)
        self.store.listen(self.heard, lost=self.writer.lost)

    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock a class's times are on (the store's)."""
        return self.store.clock

    @property
    def away(self) -> bool:
        return self.writer.away

    def reach(self, call: Callable, *args, refusal: str = RECONNECTING):
        """`call(*args)` on the store; a store that is away is refused with `refusal`."""
        try:
            return call(*args)
        except Away:
            self.writer.lost()
            raise Reconnecting(refusal) from None

    def tried(self, call: Callable, *args, otherwise=None):
        """`call(*args)` on the store, or `otherwise` while the store is away (said, and tried again)."""
        try:
            return call(*args)
        except Away:
            self.writer.lost()
            return otherwise

    # --- a class's lessons: who leads and who follows ------------------------------------------

    def start(self, tab, address: str) -> tuple[Lesson, str]:
        """A new class led by `tab`, its lesson that tab's view; returns it and the secret."""
        class_id, secret, before, view = secrets.token_urlsafe(12), secrets.token_urlsafe(24), tab.member, tab.view
        lesson = self.reach(self.store.create, class_id, digest(secret), address, lesson_of(view), view.step,
                            MAX_CLASSES, CLASSES_PER_ADDRESS, refusal=CANNOT_START)
        tab.member = Leader(self, class_id, digest(secret), address)
        self._hold(tab.member, lesson, left=self.clock())
        # a page leads one class: the one it led ends, said to its students (while the store is away,
        # it is left to end when its time runs out, its page no longer leading it)
        if isinstance(before, Leader) and self.tried(self.store.publish, before.class_id, None, None, ANOTHER):
            self.forget(before.class_id)
        return lesson, secret

    def _hold(self, leader: Leader, lesson: Lesson, left: float = 0.0) -> Led:
        """The class as its lecturer pages here hold it (kept when it is held already)."""
        with self._lock:
            return self._led.setdefault(leader.class_id, Led(leader, lesson.query, lesson.step, lesson.query,
                                                             version=lesson.version, left=left))

    def lesson(self, class_id: object) -> Lesson:
        """The class's lesson; raises `Refused` for an id no class has, or a class that ended.
        A class led here that the store lost is restored first."""
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

    def check(self, class_id: object, secret: object) -> Lesson:
        """The class, when `secret` is its lecturer's; raises `Forbidden` otherwise."""
        return self._checked(class_id, secret)[0]

    def _checked(self, class_id: object, secret: object) -> tuple[Lesson, tuple[str, str]]:
        lesson = self.lesson(class_id)
        kept, address = self.reach(self.store.owner, lesson.id) or ("", "")
        if not isinstance(secret, str) or not SECRET.fullmatch(secret) or not hmac.compare_digest(
                digest(secret), kept):
            raise Forbidden(NOT_LECTURER)
        return lesson, (kept, address)

    def _class_led(self, tab, secret: object) -> str:
        """The class `tab` leads, when `secret` is its lecturer's; raises `Forbidden` otherwise."""
        if not isinstance(tab.member, Leader):
            raise Forbidden(NOT_LECTURER)
        return self.check(tab.member.class_id, secret).id

    def lead(self, class_id: object, secret: object) -> tuple[Leader, Lesson]:
        """A leader of the class for a page that opened the lecturer's link, and the lesson to
        show it; the caller makes it the page's member once the page shows the lesson."""
        lesson, (kept, address) = self._checked(class_id, secret)
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

    def join(self, tab, class_id: object) -> Follower:
        """`tab` follows the class (its page opened the class link); its seat is taken when its
        stream connects (`connect`)."""
        lesson, member = self.lesson(class_id), tab.member
        if isinstance(member, Leader) and member.class_id == lesson.id:
            raise Refused("This page leads the class.")
        if not (isinstance(member, Follower) and member.class_id == lesson.id):
            tab.member = Follower(self, lesson.id)
        return tab.member

    def follow(self, tab) -> tuple[Follower, Lesson]:
        """The lesson `tab` is to be shown now (it follows, or asked to follow again)."""
        if not isinstance(tab.member, Follower):
            raise Refused("This page is not in a class: open the class link the lecturer gave.")
        return tab.member, self.lesson(tab.member.class_id)

    def newest(self, lesson: Lesson) -> Lesson:
        """The class's newest lesson, or `lesson` when there is none newer (or the store is away)."""
        newest = self.tried(self.store.lesson, lesson.id)
        return newest if newest is not None and newest.version > lesson.version and not newest.ended else lesson

    def expect(self, member: Follower, lesson: Lesson) -> None:
        """The tab is about to be shown `lesson`: the change that shows it is not the student's."""
        member.lesson = lesson.query

    def shown(self, member: Follower, lesson: Lesson, took: bool = True) -> None:
        """The tab was shown `lesson` (or refused it, `took` false: then it does not follow)."""
        was = member.following
        member.following, member.shown = took, lesson.version if took else member.shown
        if was != took:
            self.seats.changed(member.class_id)
        else:
            self.tell(member.class_id)

    def teach(self, leader: Leader, view: View) -> None:
        """A leading tab's view changed: the class's newest lesson, published by the writer at
        most once per PUBLISH_SECONDS (the last always)."""
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

    # --- the pages connected here ---------------------------------------------------------------

    def connect(self, key: str, member: Leader | Follower, lesson: Lesson) -> None:
        """The page's stream is open on `lesson`. A follower takes a seat (`Full` when there is
        none; `Reconnecting` while the store is away); a lecturer's page keeps its class running
        (held again if it was let go here after its grace, yet runs: another screen kept it)."""
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

    def presence(self, class_id: str) -> tuple[int, int] | None:
        """How many pages the class has connected and following, every process's together;
        None while the store is away."""
        return self.tried(self.store.presence, class_id)

    def reconnecting(self, class_id: str) -> bool:
        return self.outage.reconnecting(class_id)

    # --- what pages hear -----------------------------------------------------------------------

    def hear(self, listener: Callable[[str | None], None]) -> None:
        """`listener(class_id)` is told when a class's lesson, counts, round or connection changed
        (None: every class's connection)."""
        self._told.append(listener)

    def listen(self, listener: Callable[[Lesson], None]) -> None:
        """`listener` hears every lesson this process hears of (from the store, or read again)."""
        self._lessons.append(listener)

    def tell(self, class_id: str | None) -> None:
        for listener in list(self._told):
            listener(class_id)

    def heard(self, lesson: Lesson) -> None:
        """A lesson was heard: published by any process, restored, or read again."""
        with self._lock:
            led = self._led.get(lesson.id)
            if led is not None:
                led.version = max(led.version, lesson.version)
            if lesson.ended:
                self._led.pop(lesson.id, None)
        self.outage.heard(lesson)
        if lesson.ended:  # a round ends with its class
            self.rounds.drop(lesson.id)
        for listener in list(self._lessons):
            listener(lesson)
        self.tell(lesson.id)

    # --- the class's poll: the lecturer's changes (checked here) and a student's answer -----------

    def round(self, class_id: object) -> Round:
        return self.rounds.round(class_id)

    def own(self, key: object, class_id: object) -> tuple[str, ...]:
        return self.rounds.own(key, class_id)

    def ask(self, tab, secret: object, prompt: object, review: object = False) -> Round:
        """A new open round with `prompt` (its answers emptied); `review`: only approved words are drawn."""
        return self._lecture(tab, secret, "ask", checked_prompt(prompt), checked_flag(review, "Review first"))

    def close_round(self, tab, secret: object) -> Round:
        """Answers are no longer taken; the words stay drawn."""
        return self._lecture(tab, secret, "close")

    def clear_round(self, tab, secret: object) -> Round:
        """A new round with no question and no words."""
        return self._lecture(tab, secret, "clear")

    def moderate(self, tab, secret: object, word: object, hidden: object) -> Round:
        """Hide one word (answered or not yet), or show it again."""
        return self._lecture(tab, secret, "hide", checked_word(word), checked_flag(hidden, "Hidden"))

    def approve(self, tab, secret: object, word: object, approved: object) -> Round:
        """Approve one word for drawing under review first (or take the approval back)."""
        return self._lecture(tab, secret, "approve", checked_word(word), checked_flag(approved, "Approved"))

    def review(self, tab, secret: object, on: object) -> Round:
        """Review first on or off: under it only the words the lecturer approved are drawn."""
        return self._lecture(tab, secret, "review", "", checked_flag(on, "Review first"))

    def _lecture(self, tab, secret: object, op: str, text: str = "", flag: bool = False) -> Round:
        return self.rounds.change(self._class_led(tab, secret), op, text, flag, MAX_MODERATED)

    def answer(self, tab, key: object, address: object, word: object,
               round_number: object) -> tuple[Round, tuple[str, ...]]:
        if not isinstance(tab.member, Follower):
            raise Refused(NOT_FOLLOWING)
        return self.rounds.answer(tab.member.class_id, key, address, word, round_number)

    # --- the writer's work ------------------------------------------------------------------------

    def flush(self) -> None:
        """Do now, on this thread, the writer's work that is due (a test's writer turn)."""
        self.writer.flush()

    def replay(self) -> None:
        """Write again, now, the answers acknowledged here in every class's round."""
        for class_id in self.rounds.classes():
            self.rounds.replay(class_id)

    def beat(self) -> None:
        """What the writer does every `beat` seconds (a test moving its clock calls it): say the
        lecturer pages here are there (the class's end moves on), let go of classes whose
        lecturer pages left more than GRACE_SECONDS ago, write the counts again and the answers
        acknowledged here (a round is kept while its class runs), and wake every stream (a class
        past its end says so)."""
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
