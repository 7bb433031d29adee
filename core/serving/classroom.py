"""A class: students' pages follow the lecturer's view, and the lecturer sees who follows.

A lecturer's tab *leads* (`Leader`): each change to its view becomes the class's *lesson*, the
view written as a link's query (`core.view.share`), so a class carries only what a link may. Students'
tabs *follow* (`Follower`) until they change something themselves (`Tab.apply` tells a tab's member
of every change). Beside its lesson a class keeps its poll's *round* (`core.serving.poll`): the
lecturer asks, students' pages answer, each answer kept in the store before it is acknowledged.

A store keeps the classes (`core.serving.classstore`: in memory, or in Redis across processes).
A page's change never waits on it: each process writes on one thread, which says a store that
is away ("reconnecting"), tries it again, and restores a class the store lost from the pages
that lead it. A class lasts while a lecturer's page is connected, `GRACE_SECONDS` after the last
one left. Bounds, each a sentence when met: classes at once and per address, pages per class
(seats taken atomically), five lessons a second. A secret is kept only as its SHA-256 digest.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from core.serving.classstore import (
    AWAY,
    GRACE_SECONDS,
    RECONNECTING,
    RETRY_SECONDS,
    Away,
    Full,
    Lesson,
    RedisStore,
    digest,
    lesson_of,
    store_from_environment,
)
from core.serving.poll import (
    ANSWER_BURST,
    ANSWER_SECONDS,
    MAX_ANSWERS,
    MAX_MODERATED,
    NO_ROUND,
    WORDS_PER_STUDENT,
    Rate,
    Round,
    checked_flag,
    checked_number,
    checked_prompt,
    checked_word,
    too_many,
    too_soon,
)
from core.view.options import Refused
from core.view.state import View

LOG = logging.getLogger(__name__)
MAX_CLASSES = int(os.environ.get("EXPLORER_MAX_CLASSES", "200"))  # classes running at once, on every process
CLASSES_PER_ADDRESS = 3  # classes one client address may run at once
MAX_FOLLOWERS = int(os.environ.get("EXPLORER_CLASS_FOLLOWERS", "500"))  # pages in one class
PUBLISH_SECONDS = 0.2  # a class's lessons go out at most this often: at most 5 a second
BEAT_SECONDS = 10.0  # how often a process says its lecturer pages are there and writes its counts again
POLL_SECONDS = 1.0  # a class's round is announced at most this often by each process (the last change always)
ID = re.compile(r"[A-Za-z0-9_-]{16}")  # secrets.token_urlsafe(12)
SECRET = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)


NO_CLASS = "No class has this link: it may have ended, or the link was cut off. Ask the lecturer for it again."
LOST = ("The class has ended: the store that keeps classes restarted, and no lecturer's page was there to bring the "
        "class back.")
ENDED = "The lecturer ended the class."
ANOTHER = "The lecturer started another class."
NOT_LECTURER = "This is not the lecturer's link of this class: only the lecturer's link can change what the class sees."
CANNOT_START = ("No class can start just now: the store that keeps classes cannot be reached. Try again in a "
                "minute.")
NOT_FOLLOWING = "This page is not in a class: open the class link the lecturer gave to answer."
NOT_ASKED = "No question has been asked in this round: ask the class first."
NOT_OPEN = "No question is open for answers just now: wait for the lecturer to ask one."
OTHER_ROUND = "That question is over: the lecturer has asked another. Answer the one shown now."
ENOUGH = f"You have sent {WORDS_PER_STUDENT} words for this question, as many as one page may."
ROUND_FULL = f"This question has {MAX_ANSWERS:,} answers, as many as one question takes."
MODERATED = f"At most {MAX_MODERATED:,} words of a round can be hidden, and as many approved."
NO_KEY = "This request carries no valid page key; reload the page."


# --- who leads and who follows --------------------------------------------------------------


@dataclass(eq=False)
class Leader:
    """A tab that leads a class: each change to its view is the class's newest lesson, which
    the process's writer publishes (`Classroom.teach`). It holds what the store holds of the
    class's ownership (the secret's digest, the address that started it), so the class can be
    restored from it if the store loses it."""

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
    shown: int = 0  # the version of the lesson last applied to the tab
    lesson: str | None = None  # that lesson's query, as `lesson_of` writes it

    def changed(self, view: View) -> None:
        if self.following and self.lesson is not None and lesson_of(view) != self.lesson:
            self.following = False
            self.classroom.counted(self.class_id)


@dataclass(eq=False)
class Led:
    """A class led from this process: its lecturer pages connected here, the newest lesson they
    asked for and the one published, and the newest version heard of."""

    leader: Leader  # the ownership to restore it with
    query: str
    step: int | None
    sent: str  # the lesson last published
    sent_at: float = float("-inf")  # when (the writer's ticks), for PUBLISH_SECONDS
    version: int = 1
    pages: dict[str, Leader] = field(default_factory=dict)  # page key -> its leader, while its stream is open
    left: float = 0.0  # when (the store's clock) its last page here left, or it was led without one

    def alive(self, now: float) -> bool:
        """Whether a lecturer's page holds the class: connected here, or gone less than GRACE_SECONDS ago."""
        return bool(self.pages) or now - self.left < GRACE_SECONDS


class Classroom:
    """This process's part of every class: the store, the pages it serves, and the writer.

    Calls from a request (start, lead, end, join, a seat) read or write the store at once and
    say a store that is away as `Reconnecting`, having changed nothing. What a page's change
    causes (a new lesson, a count) is left to the writer thread, which publishes and writes
    once the store can be reached, and every `beat` seconds says its lecturer pages are there.
    After the store was away it restores the classes led here and reads the others again.
    """

    def __init__(self, store: RedisStore | None = None, *, beat: float = BEAT_SECONDS,
                 retry: float = RETRY_SECONDS, ticks: Callable[[], float] = time.monotonic) -> None:
        self.store = store if store is not None else store_from_environment()
        self.beat_seconds, self.retry_seconds = beat, retry
        self.ticks = ticks  # the writer's own clock (a test moves it by hand): when to publish, beat, retry
        self.process = uuid.uuid4().hex
        self.away = False  # the store could not be reached at the last try
        self._back_at = float("-inf")  # when (the writer's ticks) it answered again
        self._pages: dict[str, dict[str, Follower]] = {}  # class id -> page key -> its follower, connected here
        self._led: dict[str, Led] = {}  # class id -> the class as its lecturer pages here hold it
        self._dirty: set[str] = set()  # classes whose counts here are to be written
        self._unsure: dict[str, float] = {}  # classes to read again after the store was away -> until when
        self._versions: dict[str, int] = {}  # the newest version heard of each class with pages here
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._counting = threading.Lock()  # a count is read and written together: an older one is never written last
        self._beating = threading.Lock()
        self._writer: threading.Thread | None = None
        self._closed = False
        self._heard: list[Callable[[str | None], None]] = []  # told a class whose state changed (None: every class)
        self._lessons: list[Callable[[Lesson], None]] = []  # told every lesson heard
        self._rounds: dict[str, Round] = {}  # the newest round heard of each class with pages here
        # the answers acknowledged here in each class's current round: class id -> (round, page key -> its words)
        self._journal: dict[str, tuple[int, dict[str, tuple[str, ...]]]] = {}
        self._announce: set[str] = set()  # classes whose round changed here since it was last announced
        self._announced: dict[str, float] = {}  # when (the writer's ticks) each was announced
        self._replay: set[str] = set()  # classes whose answers here are to be written again (the store was away)
        self._pages_rate = Rate(ANSWER_BURST, 1 / ANSWER_SECONDS, self.clock)  # a page's answers (on this process)
        self.store.listen_rounds(self._hear_round)
        self.store.listen(self._hear, lost=self.lost)

    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock a class's times are on (the store's)."""
        return self.store.clock

    # --- calls from a request ------------------------------------------------------------------

    def _reach(self, call: Callable, *args, refusal: str = RECONNECTING):
        """`call(*args)` on the store; a store that is away is refused with `refusal`."""
        try:
            return call(*args)
        except Away:
            self.lost()
            raise Reconnecting(refusal) from None

    def start(self, tab, address: str) -> tuple[Lesson, str]:
        """A new class led by `tab`, its lesson that tab's view; returns it and the secret."""
        class_id, secret = secrets.token_urlsafe(12), secrets.token_urlsafe(24)
        view = tab.view
        lesson = self._reach(self.store.create, class_id, digest(secret), address, lesson_of(view), view.step,
                             MAX_CLASSES, CLASSES_PER_ADDRESS, refusal=CANNOT_START)
        before = tab.member
        leader = Leader(self, class_id, digest(secret), address)
        with self._lock:
            self._led[class_id] = Led(leader, lesson.query, lesson.step, sent=lesson.query, left=self.clock())
            self._stir()  # its lecturer's page is said to be there from now on
        tab.member = leader
        if isinstance(before, Leader):  # a page leads one class: the one it led ends (said to its students)
            try:
                if self.store.publish(before.class_id, None, None, ended=ANOTHER) is not None:
                    self._forget(before.class_id)
            except Away:  # left to end when its time runs out, its page no longer leading it
                self.lost()
        return lesson, secret

    def lesson(self, class_id: object) -> Lesson:
        """The class's lesson; raises `Refused` for an id no class has, or a class that ended.
        A class led here that the store lost is restored first."""
        if not isinstance(class_id, str) or not ID.fullmatch(class_id):
            raise Gone(NO_CLASS)
        lesson = self._reach(self.store.lesson, class_id)
        if lesson is None or lesson.ended == AWAY:  # lost by the store, or its time ran out while it was away
            now = self.clock()
            with self._lock:
                led = self._led.get(class_id)
            if led is not None and led.alive(now):
                lesson = self._reach(self._restore, led)
            elif lesson is None and self.ticks() - self._back_at < self.beat_seconds + 2 * self.retry_seconds:
                raise Reconnecting(RECONNECTING)  # the store is just back: the class may not be restored yet
        if lesson is None:
            raise Gone(NO_CLASS)
        if lesson.ended:
            raise Gone(lesson.ended)
        return lesson

    def check(self, class_id: object, secret: object) -> Lesson:
        """The class, when `secret` is its lecturer's; raises `Forbidden` otherwise."""
        return self._checked(class_id, secret)[0]

    def _checked(self, class_id: object, secret: object) -> tuple[Lesson, tuple[str, str]]:
        lesson = self.lesson(class_id)
        kept, address = self._reach(self.store.owner, lesson.id) or ("", "")
        if not isinstance(secret, str) or not SECRET.fullmatch(secret) or not hmac.compare_digest(
                digest(secret), kept):
            raise Forbidden(NOT_LECTURER)
        return lesson, (kept, address)

    def lead(self, class_id: object, secret: object) -> tuple[Leader, Lesson]:
        """A leader of the class for a page that opened the lecturer's link, and the lesson to
        show it; the caller makes it the page's member once the page shows the lesson."""
        lesson, (kept, address) = self._checked(class_id, secret)
        leader = Leader(self, lesson.id, kept, address)
        with self._lock:
            if lesson.id not in self._led:
                self._led[lesson.id] = Led(leader, lesson.query, lesson.step, sent=lesson.query,
                                           version=lesson.version, left=self.clock())
            self._stir()
        self._seed_round(lesson.id)
        return leader, lesson

    def end(self, tab, secret: object) -> Lesson:
        member = tab.member
        if not isinstance(member, Leader):
            raise Forbidden(NOT_LECTURER)
        self.check(member.class_id, secret)
        ended = self._reach(self.store.publish, member.class_id, None, None, ENDED)
        tab.member = None
        self._forget(member.class_id)
        if ended is None:
            raise Gone(NO_CLASS)
        return ended

    def join(self, tab, class_id: object) -> Follower:
        """`tab` follows the class (its page opened the class link); its seat is taken
        when its stream connects (`connect`)."""
        lesson = self.lesson(class_id)
        member = tab.member
        if isinstance(member, Leader) and member.class_id == lesson.id:
            raise Refused("This page leads the class.")
        if isinstance(member, Follower) and member.class_id == lesson.id:
            return member
        tab.member = Follower(self, lesson.id)
        return tab.member

    def follow(self, tab) -> tuple[Follower, Lesson]:
        """The lesson `tab` is to be shown now (it follows, or asked to follow again)."""
        member = tab.member
        if not isinstance(member, Follower):
            raise Refused("This page is not in a class: open the class link the lecturer gave.")
        return member, self.lesson(member.class_id)

    def newest(self, lesson: Lesson) -> Lesson:
        """The class's newest lesson, or `lesson` when there is none newer (or the store is away)."""
        try:
            newest = self.store.lesson(lesson.id)
        except Away:
            self.lost()
            return lesson
        return newest if newest is not None and newest.version > lesson.version and not newest.ended else lesson

    def expect(self, member: Follower, lesson: Lesson) -> None:
        """The tab is about to be shown `lesson`: the change that shows it is not the student's."""
        member.lesson = lesson.query

    def shown(self, member: Follower, lesson: Lesson, shown: bool = True) -> None:
        """The tab was shown `lesson` (or refused it: then it does not follow); its stream says so."""
        was = member.following
        member.following, member.shown = shown, lesson.version if shown else member.shown
        if was != shown:
            self.counted(member.class_id)
        else:
            self._tell(member.class_id)

    def presence(self, class_id: str) -> tuple[int, int] | None:
        """How many pages the class has connected and following, every process's together;
        None while the store is away."""
        try:
            return self.store.presence(class_id)
        except Away:
            self.lost()
            return None

    def reconnecting(self, class_id: str) -> bool:
        """Whether what this process knows of the class waits for the store (away, or just back)."""
        return self.away or class_id in self._unsure

    # --- the pages connected here --------------------------------------------------------------

    def connect(self, key: str, member: Leader | Follower, lesson: Lesson) -> None:
        """The page's stream is open on `lesson`. A follower takes a seat in the class,
        atomically against every process's pages (`Full` when there is none; `Reconnecting`
        while the store is away); a page connected already keeps its seat. A lecturer's page
        keeps its class running."""
        if isinstance(member, Leader):
            with self._lock:
                led = self._led.get(member.class_id)
                if led is None:  # let go here after its grace, yet running: another screen kept it
                    led = self._led[member.class_id] = Led(member, lesson.query, lesson.step, sent=lesson.query,
                                                           version=lesson.version)
                led.pages[key] = member
                self._stir()
            self._seed_round(member.class_id)
            return
        with self._counting:
            with self._lock:
                pages = self._pages.setdefault(member.class_id, {})
                before = pages.get(key)
                pages[key] = member
                connected, following = len(pages), sum(p.following for p in pages.values())
            try:
                taken = self.store.set_presence(member.class_id, self.process, connected, following,
                                                None if before is not None else MAX_FOLLOWERS)
            except Away:
                taken = None
            if not taken:
                with self._lock:
                    if before is None:
                        pages.pop(key, None)
                        if not pages:
                            self._pages.pop(member.class_id, None)
                    else:
                        pages[key] = before
            if taken is None:
                self.lost()
                raise Reconnecting(RECONNECTING)
            if not taken:
                raise Full(f"This class has {MAX_FOLLOWERS:,} pages following it, as many as one class may have.")
        self._seed_round(member.class_id)
        self._tell(member.class_id)

    def disconnect(self, key: str, member: Leader | Follower) -> None:
        """The page's stream closed (a page whose newer stream replaced it is not let go)."""
        with self._lock:
            if isinstance(member, Leader):
                led = self._led.get(member.class_id)
                if led is not None and led.pages.get(key) is member:
                    del led.pages[key]
                    if not led.pages:
                        led.left = self.clock()
                return
            pages = self._pages.get(member.class_id, {})
            if pages.get(key) is not member:
                return
            del pages[key]
            if not pages:
                self._pages.pop(member.class_id, None)
        self.counted(member.class_id)

    def counted(self, class_id: str) -> None:
        """The class's pages here changed (came, left, stopped or started following): their
        count is written by the writer, and the pages' streams hear it now."""
        with self._lock:
            self._dirty.add(class_id)
            self._stir()
        self._tell(class_id)

    def teach(self, leader: Leader, view: View) -> None:
        """A leading tab's view changed: the class's newest lesson, published by the writer at
        most once per PUBLISH_SECONDS (the last always)."""
        query = lesson_of(view)
        with self._lock:
            led = self._led.get(leader.class_id)
            if led is None:  # its class ended, or was let go: the tab leads nothing now
                return
            led.query, led.step = query, view.step
            self._stir()

    def hear(self, listener: Callable[[str | None], None]) -> None:
        """`listener(class_id)` is told when a class's lesson, counts or connection changed
        (None: every class's connection)."""
        self._heard.append(listener)

    def listen(self, listener: Callable[[Lesson], None]) -> None:
        """`listener` hears every lesson this process hears of (from the store, or read again)."""
        self._lessons.append(listener)

    def _tell(self, class_id: str | None) -> None:
        for listener in list(self._heard):
            listener(class_id)

    def _hear(self, lesson: Lesson) -> None:
        with self._lock:
            led = self._led.get(lesson.id)
            if led is not None:
                led.version = max(led.version, lesson.version)
                if lesson.ended:
                    self._led.pop(lesson.id, None)
            if lesson.id in self._pages or lesson.id in self._led:
                self._versions[lesson.id] = max(self._versions.get(lesson.id, 0), lesson.version)
            self._unsure.pop(lesson.id, None)
            if lesson.ended:  # a round ends with its class
                self._drop_round(lesson.id)
        for listener in list(self._lessons):
            listener(lesson)
        self._tell(lesson.id)

    def _forget(self, class_id: str) -> None:
        with self._lock:
            self._led.pop(class_id, None)

    # --- the class's poll ------------------------------------------------------------------------

    def round(self, class_id: object) -> Round:
        """The newest round of the class this process knows (no store call)."""
        with self._lock:
            return self._rounds.get(class_id, NO_ROUND) if isinstance(class_id, str) else NO_ROUND

    def own(self, key: object, class_id: object) -> tuple[str, ...]:
        """The words page `key` sent in the class's current round (as this process acknowledged them)."""
        with self._lock:
            journal = self._journal.get(class_id) if isinstance(class_id, str) else None
            if journal is None or not isinstance(key, str) or journal[0] < self._rounds.get(class_id, NO_ROUND).number:
                return ()
            return journal[1].get(key, ())

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
        member = tab.member
        if not isinstance(member, Leader):
            raise Forbidden(NOT_LECTURER)
        self.check(member.class_id, secret)
        changed = self._reach(self.store.change_round, member.class_id, op, text, flag, MAX_MODERATED)
        if changed == "gone":
            self.lesson(member.class_id)  # says why: it ended, or is lost
            raise Reconnecting(RECONNECTING)
        if isinstance(changed, str):
            raise Full(MODERATED) if changed == "many" else Refused(NOT_ASKED)
        self._changed_round(member.class_id, changed)
        return changed

    def answer(self, tab, key: object, address: object, word: object,
               round_number: object) -> tuple[Round, tuple[str, ...]]:
        """A following page's answer to the round it was shown: the round and the page's words
        this round, once the store has it (a word sent again is kept once); else `Refused` with
        a sentence, nothing kept and no rate spent."""
        member = tab.member
        if not isinstance(member, Follower):
            raise Refused(NOT_FOLLOWING)
        if not all(isinstance(given, str) and 1 <= len(given) <= 200 for given in (key, address)):
            raise Refused(NO_KEY)  # both the routes' own: a page's key, a visitor's network
        word, number, class_id = checked_word(word), checked_number(round_number), member.class_id
        with self._lock:
            journal = self._journal.get(class_id)
            sent = journal[1].get(key, ()) if journal is not None and journal[0] == number else ()
        if word in sent:
            return self.round(class_id), sent
        if len(sent) >= WORDS_PER_STUDENT:
            raise Refused(ENOUGH)
        wait = self._pages_rate.take(key)
        if wait:
            raise Full(too_soon(wait))
        try:
            status, words, wait = self.store.answer(class_id, key, address, word, number, WORDS_PER_STUDENT,
                                                    MAX_ANSWERS)
        except Away:
            self._pages_rate.give_back(key)
            self.lost()
            raise Reconnecting(RECONNECTING) from None
        if status != "ok":
            self._pages_rate.give_back(key)
            if status == "rate":
                raise Full(too_many(wait))
            self._refuse_answer(class_id, number, status)
        with self._lock:
            journal = self._journal.get(class_id)
            if journal is None or journal[0] != number:
                journal = self._journal[class_id] = (number, {})
            # a store emptied before this process wrote its answers again knows only this word:
            # the page's earlier words stay acknowledged here, and `replay` writes them back
            kept = journal[1].get(key, ())
            words = journal[1][key] = kept + tuple(w for w in words if w not in kept)
        self._changed_round(class_id)
        return self.round(class_id), words

    def _refuse_answer(self, class_id: str, number: int, status: str) -> None:
        with self._lock:
            journal = self._journal.get(class_id)
            known = max(self._rounds.get(class_id, NO_ROUND).number, journal[0] if journal else 0) >= number
        if status == "gone":
            try:
                self.lesson(class_id)  # says why: it ended, or is lost
            except Gone as error:
                if str(error) != NO_CLASS or not known:
                    raise
        if status in ("gone", "missing") and known:
            # the store forgot a class or round running here: it restarted, maybe unheard of yet
            self.lost()  # the writer reads every class again, restores what is led here, writes answers again
            raise Reconnecting(RECONNECTING)
        raise Full(ROUND_FULL) if status == "full" else Refused(
            {"enough": ENOUGH, "other": OTHER_ROUND}.get(status, NOT_OPEN))

    def _changed_round(self, class_id: str, round: Round | None = None) -> None:  # noqa: A002
        """The class's round changed here (`round`, when the store returned it): the writer
        announces it to every process, at most once per POLL_SECONDS."""
        if round is not None:
            self._hear_round(class_id, round, kept=True)
        with self._lock:
            self._announce.add(class_id)
            self._stir()

    def _hear_round(self, class_id: str, round: Round, kept: bool = False) -> None:  # noqa: A002
        """A class's round was heard of: kept when newer than the one known (and the class has
        pages here, or `kept`), its streams woken."""
        with self._lock:
            known = self._rounds.get(class_id)
            if known is None and not kept and not any(class_id in c for c in (self._pages, self._led, self._journal)):
                return
            if known is not None and (round.number, round.version) <= (known.number, known.version):
                return
            self._rounds[class_id] = round
            journal = self._journal.get(class_id)
            if journal is not None and journal[0] < round.number:
                del self._journal[class_id]
        self._tell(class_id)

    def _seed_round(self, class_id: str) -> None:
        """A page of a class this process knew no round of: the store's round, read once."""
        with self._lock:
            if class_id in self._rounds:
                return
        try:
            found = self.store.poll(class_id)
        except Away:
            self.lost()
            return
        if found is not None:
            self._hear_round(class_id, found, kept=True)

    def _drop_round(self, class_id: str) -> None:
        """The class is over here: so is its round (under the lock)."""
        for kept in (self._rounds, self._journal, self._announced):
            kept.pop(class_id, None)
        self._announce.discard(class_id)
        self._replay.discard(class_id)

    # --- the writer ----------------------------------------------------------------------------

    def lost(self) -> None:
        """The store could not be reached: every page here hears the class is reconnecting, and
        the writer tries the store again every `retry` seconds."""
        with self._lock:
            if self.away:
                return
            self.away = True
            self._stir()
        LOG.warning("the class store cannot be reached; trying again every %g s", self.retry_seconds)
        self._tell(None)

    def _stir(self) -> None:
        """Wake the writer (started on first need); under the lock."""
        if self._writer is None:
            self._writer = threading.Thread(target=self._write, name="class-writer", daemon=True)
            self._writer.start()
        self._wake.notify()

    def close(self) -> None:
        """Stop the writer and the store's listener (a test's classroom, when the test ends)."""
        with self._lock:
            self._closed = True
            self._wake.notify()
            writer = self._writer
        if writer is not None:
            writer.join(5)
        self.store.close()

    def _write(self) -> None:
        beat_at = self.ticks() + self.beat_seconds
        while True:
            with self._lock:
                wait = self.retry_seconds if self.away else self._due(beat_at)
                if wait > 0 and not self._closed:
                    self._wake.wait(wait)
                if self._closed:
                    return
            try:
                if self.away:
                    self.store.ping()
                    self._back()
                self.flush()
                self.reread()
                self.replay()
                if self.ticks() >= beat_at:
                    self.beat()
                    beat_at = self.ticks() + self.beat_seconds
            except Away:
                self.lost()
            except Exception:  # a fault: logged, and the writer goes on with the next round
                LOG.exception("the class writer failed")
                time.sleep(self.retry_seconds)

    def _due(self, beat_at: float) -> float:
        """Seconds until the writer has work (under the lock)."""
        now = self.ticks()
        if self._dirty:
            return 0.0
        due = min(beat_at - now, self.retry_seconds if self._unsure or self._replay else float("inf"))
        for led in self._led.values():
            if led.query and led.query != led.sent:
                due = min(due, led.sent_at + PUBLISH_SECONDS - now)
        for class_id in self._announce:
            due = min(due, self._announced.get(class_id, float("-inf")) + POLL_SECONDS - now)
        return due

    def flush(self) -> None:
        """Publish the lessons that are due, announce the rounds that are, and write the counts that changed."""
        now = self.ticks()
        with self._lock:
            due = [(led, led.query, led.step) for led in self._led.values()
                   if led.query and led.query != led.sent and now >= led.sent_at + PUBLISH_SECONDS]
        for led, query, step in due:
            lesson = self.store.publish(led.leader.class_id, query, step)
            led.sent, led.sent_at = query, self.ticks()
            if lesson is None:  # the store lost it, or its time ran out while it was away
                self._restore(led)
        self._announce_rounds()
        while True:
            with self._lock:
                if not self._dirty:
                    break
                class_id = self._dirty.pop()
            try:
                self._write_count(class_id)
            except Away:
                with self._lock:
                    self._dirty.add(class_id)
                raise

    def _announce_rounds(self) -> None:
        """Tell every process the rounds that changed here, each at most once per POLL_SECONDS."""
        now = self.ticks()
        with self._lock:
            due = [c for c in self._announce if now >= self._announced.get(c, float("-inf")) + POLL_SECONDS]
            self._announce.difference_update(due)
        for class_id in due:
            try:
                found = self.store.announce_round(class_id)
            except Away:
                with self._lock:
                    self._announce.add(class_id)
                raise
            with self._lock:
                self._announced[class_id] = self.ticks()
            if found is not None:
                self._hear_round(class_id, found, kept=True)

    def replay(self) -> None:
        """Write again the answers acknowledged here in each class's round (a store that kept
        them keeps each once), moving its version past the one heard here: after the store was
        away, and every beat (a store that restarted unheard of loses nothing either). A round
        the store lost is restored by its lecturer's process first; until then this waits."""
        with self._lock:
            pending = list(self._replay)
        for class_id in pending:
            with self._lock:
                known, journal = self._rounds.get(class_id), self._journal.get(class_id)
                led = self._led.get(class_id)
            status = "other"
            if known is not None and known.number:
                number, pages = journal if journal is not None else (known.number, {})
                status = self.store.replay(class_id, number, known.version, dict(pages), WORDS_PER_STUDENT,
                                           MAX_ANSWERS)
                if status == "missing" and led is not None and self.store.restore_round(class_id, known):
                    LOG.warning("the round of class %s restored in the store from its lecturer's page", class_id)
                    continue  # its answers are written on the writer's next turn
            if status == "missing" or (status == "gone" and class_id in self._unsure):
                continue  # not back yet: tried again, until the class is back or heard of as over
            with self._lock:
                self._replay.discard(class_id)
                if status == "other" and journal is not None and self._journal.get(class_id) is journal:
                    del self._journal[class_id]
            if status == "done":
                self._changed_round(class_id)

    def _write_count(self, class_id: str) -> None:
        with self._counting:
            with self._lock:
                pages = list(self._pages.get(class_id, {}).values())
            self.store.set_presence(class_id, self.process, len(pages), sum(p.following for p in pages))
        self._tell(class_id)

    def _restore(self, led: Led) -> Lesson | None:
        """The class as its lecturer's pages here hold it, put back in the store if the store
        lost it (or its time ran out while the store was away); heard as any lesson is."""
        leader = led.leader
        restored, lesson = self.store.restore(leader.class_id, leader.digest, leader.address, led.query or led.sent,
                                              led.step, led.version + 1)
        if lesson is None or lesson.ended:
            self._forget(leader.class_id)
        if lesson is not None:
            led.sent = lesson.query
            if restored:
                LOG.warning("class %s restored in the store from its lecturer's page", leader.class_id)
            self._hear(lesson)
            if restored:  # its round too, on the writer's next turn (`replay`)
                with self._lock:
                    self._replay.add(leader.class_id)
                    self._stir()
        return lesson

    def _back(self) -> None:
        """The store answers again: every class with pages here is read again (and restored,
        if led here) before its pages stop hearing that it is reconnecting."""
        now = self.clock()
        with self._lock:
            self.away, self._back_at = False, self.ticks()
            for class_id in {*self._pages, *self._led, *self._rounds}:
                self._unsure.setdefault(class_id, now + GRACE_SECONDS)
            self._dirty.update(self._pages)
            self._replay.update(self._rounds)
            led = [each for each in self._led.values() if each.alive(now)]
        LOG.warning("the class store answers again")
        for each in led:
            self._restore(each)

    def reread(self) -> None:
        """Read again each class this process is unsure of since the store was away: found, its
        pages hear it; not restored within GRACE_SECONDS, they hear it is over."""
        now = self.clock()
        with self._lock:
            unsure = dict(self._unsure)
        for class_id, until in unsure.items():
            lesson = self.store.lesson(class_id)
            if lesson is None and now >= until:
                with self._lock:
                    version = self._versions.get(class_id, 0) + 1
                lesson = Lesson(class_id, version, "", None, now, LOST)
            if lesson is not None:
                self._hear(lesson)

    def beat(self) -> None:
        """What the writer does every `beat` seconds (a test moving its clock calls it): say the
        lecturer pages here are there (the class's end moves on), let go of classes whose
        lecturer pages left more than GRACE_SECONDS ago, write the counts again and the answers
        acknowledged here (`replay`), and wake every stream (a class past its end says so)."""
        with self._beating:
            now = self.clock()
            with self._lock:
                for class_id, led in list(self._led.items()):
                    if not led.alive(now):
                        del self._led[class_id]
                leading = [led for led in self._led.values() if led.pages]
                counted = list(self._pages)
                answered = [c for c in self._rounds if c not in self._pages and c not in self._led
                            and c not in self._unsure and c not in self._replay]
            for led in leading:
                if self.store.publish(led.leader.class_id, None, None) is None:
                    self._restore(led)
            for class_id in counted:
                self._write_count(class_id)
            for class_id in answered:  # no page here any more: its round is kept here while the class runs
                lesson = self.store.lesson(class_id)
                if lesson is not None and lesson.ended:
                    with self._lock:
                        self._drop_round(class_id)
                elif lesson is None:  # the store forgot a class running here: it restarted, unheard of
                    self.lost()
            with self._lock:
                self._replay.update(self._rounds)
            with self._lock:
                self._versions = {k: v for k, v in self._versions.items() if k in self._pages or k in self._led}
        self._tell(None)


class Forbidden(Refused):
    """Refused because the caller is not the lecturer: answered 403."""


class Gone(Refused):
    """No class has this id, or it ended: answered 404."""


class Reconnecting(Refused):
    """Refused because the store is away for now: answered with `reconnecting`, and the page tries again."""
