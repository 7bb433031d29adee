"""A class (core/classroom.py): a lecturer's tab leads, students' tabs follow its view.

Every test runs against both stores: `MemoryStore` (one process) and `RedisStore` on a real
redis-server (the `redis_url` fixture), with a hand clock for what the store times (a class's
idle end, the students' counts). Tabs are real `core.live.Live` objects changed through
`Live.apply`, the one door every change of a page goes through. What travels between threads
(a throttled lesson, Redis's pub/sub) is waited for with a bounded poll, never timed.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
import types
from urllib.parse import parse_qs

import pytest

import core.classroom as classroom
from core import tour
from core.classroom import (
    AWAY,
    IDLE_SECONDS,
    NO_CLASS,
    NOT_LECTURER,
    PRESENCE_SECONDS,
    Classroom,
    Follower,
    Forbidden,
    Leader,
    Lesson,
    MemoryStore,
    RedisStore,
    lesson_of,
    lesson_view,
)
from core.live import Live
from core.options import Refused
from core.state import View

URLSAFE = re.compile(r"[A-Za-z0-9_-]+")
ENDED = "The lecturer ended the class."
WAIT = 15.0  # seconds a bounded poll waits at most for what another thread delivers


class Clock:
    """A wall clock the test moves by hand, handed to the store (never patched into `time`)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def eventually(predicate, timeout: float = WAIT) -> bool:
    """Whether `predicate()` came true within `timeout` seconds (polled; the value is what is asserted)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


@pytest.fixture()
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "redis"])
def stores(request, clock):
    """`stores()` gives the class store as one process sees it: for memory, the one store of the
    one process; for Redis, the first call the emptied database's client, each later call another
    client of it (another process)."""
    if request.param == "memory":
        store = MemoryStore(clock)
        return lambda: store
    url = request.getfixturevalue("redis_url")
    first = RedisStore(url, clock)
    first.redis.flushdb()
    made: list[RedisStore] = []

    def store_of_a_process() -> RedisStore:
        made.append(first if not made else RedisStore(url, clock))
        return made[-1]

    return store_of_a_process


@pytest.fixture()
def store(stores):
    return stores()


@pytest.fixture()
def room(store) -> Classroom:
    return Classroom(store)


def tab(text: str | None = None) -> Live:
    """A tab whose view is its own (a unique sentence, so no two tests' lessons agree)."""
    live = Live()
    text = text or f"Class test {secrets.token_hex(4)} spoke."
    live.apply(lambda view: view.with_(sentence_a=text), lambda step: None)
    return live


def change(live: Live, **fields) -> None:
    live.apply(lambda view: view.with_(**fields), lambda step: None)


def show(room: Classroom, member: Follower, live: Live, lesson: Lesson) -> None:
    """Show a student's tab the lesson, as the follow route does (ui/classroutes.py `_show`)."""
    room.expect(member, lesson)
    live.apply(lambda view: lesson_view(lesson.query).with_(presenter=view.presenter).seen_as(view),
               lambda step: None, whole=True)
    room.shown(member, lesson, lesson_of(live.view) == lesson.query)


def hearing(store) -> list[Lesson]:
    """The lessons `store` tells its listeners of (through Redis's pub/sub for a RedisStore)."""
    heard: list[Lesson] = []
    store.listen(heard.append)
    return heard


def heard_of(heard: list[Lesson], class_id: str) -> list[Lesson]:
    return [lesson for lesson in list(heard) if lesson.id == class_id]


# --- starting a class, and who may change it --------------------------------------------------


def test_a_class_read_back_from_its_store_is_the_class_made(store, clock):
    made = store.create("ReadBackClass_01", "a-digest", "192.0.2.1", "step=3&k=4", 3, 10, 10)
    assert made == Lesson("ReadBackClass_01", 1, "step=3&k=4", 3, clock.now + IDLE_SECONDS)
    assert store.lesson("ReadBackClass_01") == made
    assert store.secret("ReadBackClass_01") == "a-digest"
    assert store.lesson("NoSuchClass_0001") is None and store.secret("NoSuchClass_0001") is None
    seen = store.publish("ReadBackClass_01", None, None)  # the lecturer seen: the same lesson, a later end
    assert (seen.version, seen.query, seen.step) == (1, "step=3&k=4", 3)
    clock.now += 5
    news = store.publish("ReadBackClass_01", "k=5", None)
    assert store.lesson("ReadBackClass_01") == news == Lesson("ReadBackClass_01", 2, "k=5", None,
                                                              clock.now + IDLE_SECONDS)


def test_a_class_starts_with_an_unguessable_id_and_secret_and_keeps_only_the_secrets_digest(room, store):
    lecturer = tab()
    lesson, secret = room.start(lecturer, "10.0.0.1")
    assert len(lesson.id) == 16 and URLSAFE.fullmatch(lesson.id)
    assert len(secret) == 32 and URLSAFE.fullmatch(secret)
    assert (lesson.version, lesson.query, lesson.ended) == (1, lesson_of(lecturer.view), "")
    assert isinstance(lecturer.member, Leader) and lecturer.member.class_id == lesson.id
    # the store holds the secret's SHA-256 digest, and the secret nowhere
    assert store.secret(lesson.id) == hashlib.sha256(secret.encode()).hexdigest()
    if isinstance(store, RedisStore):
        kept = [str(value) for key in store.redis.keys("*") if store.redis.type(key) == "hash"
                for value in store.redis.hgetall(key).values()]
    else:
        kept = [str(value) for record in store._classes.values() for value in record.values()]
    assert kept and not any(secret in value for value in kept)
    # each class its own id and secret
    other, other_secret = room.start(tab(), "10.0.0.2")
    assert other.id != lesson.id and other_secret != secret
    assert store.lesson(lesson.id).query == lesson.query and store.lesson(other.id).query == other.query


@pytest.mark.parametrize("wrong", [
    "right-length-but-wrong-secret-ab",  # 32 url-safe characters, not the secret
    "",
    None,
    12345,
    ["secret"],
    "digest",  # the digest the store keeps, which is not the secret
    "cut",  # the secret cut off by one character
    "longer",  # the secret and one more
    "not-url-safe",  # the secret with one character no secret has
])
def test_a_wrong_or_malformed_secret_is_forbidden_and_changes_nothing(room, store, wrong):
    lecturer = tab()
    lesson, secret = room.start(lecturer, "10.0.0.3")
    wrong = {"digest": hashlib.sha256(secret.encode()).hexdigest(), "cut": secret[:-1], "longer": secret + "A",
             "not-url-safe": secret[:-1] + "!"}.get(wrong, wrong) if isinstance(wrong, str) else wrong
    assert wrong != secret
    with pytest.raises(Forbidden) as refused:
        room.check(lesson.id, wrong)
    assert str(refused.value) == NOT_LECTURER
    another = tab()
    with pytest.raises(Forbidden, match=re.escape(NOT_LECTURER)):
        room.lead(another, lesson.id, wrong)
    with pytest.raises(Forbidden, match=re.escape(NOT_LECTURER)):
        room.end(lecturer, wrong)
    assert another.member is None and isinstance(lecturer.member, Leader)
    kept = store.lesson(lesson.id)
    assert (kept.version, kept.query, kept.ended) == (1, lesson.query, "")
    assert room.check(lesson.id, secret).id == lesson.id  # the right secret still is


@pytest.mark.parametrize("class_id", ["unknown", "cut", "longer", "", None, 7, "../../../etc/pass", "*",
                                      "abcdefgh ijklmno", "explorer:classes"])
def test_an_unknown_or_malformed_class_id_is_no_class(room, class_id):
    lecturer = tab()
    lesson, secret = room.start(lecturer, "10.0.0.4")
    class_id = {"unknown": secrets.token_urlsafe(12), "cut": lesson.id[:-1], "longer": lesson.id + "A"}.get(
        class_id, class_id) if isinstance(class_id, str) else class_id
    for call in (lambda: room.lesson(class_id), lambda: room.check(class_id, secret),
                 lambda: room.join(tab(), class_id), lambda: room.lead(tab(), class_id, secret)):
        with pytest.raises(Refused) as refused:
            call()
        assert not isinstance(refused.value, Forbidden)  # a missing class is not a wrong secret
        assert str(refused.value) == NO_CLASS


def test_a_student_cannot_end_the_class_nor_join_it_as_its_leader(room, store):
    lecturer, student = tab(), tab()
    lesson, secret = room.start(lecturer, "10.0.0.5")
    member = room.join(student, lesson.id)
    assert isinstance(member, Follower) and student.member is member
    assert room.join(student, lesson.id) is member  # joining again is the same page
    with pytest.raises(Forbidden, match=re.escape(NOT_LECTURER)):
        room.end(student, secret)  # even with the secret: the page does not lead
    with pytest.raises(Refused, match="This page leads the class"):
        room.join(lecturer, lesson.id)
    assert isinstance(lecturer.member, Leader) and student.member is member
    assert store.lesson(lesson.id).ended == ""


# --- a leading tab publishes its view --------------------------------------------------------------


def test_a_leading_tabs_change_publishes_a_new_lesson_that_listeners_hear(room, stores):
    store = stores()
    heard = hearing(stores())  # for Redis another process's store: it hears through pub/sub
    told: list[str] = []
    room.hear(told.append)
    lecturer = tab()
    lesson, _ = room.start(lecturer, "10.0.0.6")
    assert not heard_of(heard, lesson.id)  # a class's start is no news: its page has the lesson
    change(lecturer, sentence_a="The lecturer's new sentence.", k=4)
    query = lesson_of(lecturer.view)
    assert query != lesson.query and "k=4" in query
    assert eventually(lambda: any(lsn.query == query for lsn in heard_of(heard, lesson.id)))
    news = [lsn for lsn in heard_of(heard, lesson.id) if lsn.query == query][-1]
    assert (news.version, news.step, news.ended) == (2, None, "")
    assert news.view == lecturer.view.with_(presenter=False, narrow=False)
    kept = store.lesson(lesson.id)
    assert (kept.version, kept.query) == (2, query)
    assert eventually(lambda: lesson.id in told)  # the classroom's own listeners (its pages' streams)


def test_the_lecturers_screen_is_not_the_lesson(room, store):
    """Presenter mode and a phone's width are the lecturer's screen: no new version."""
    lecturer = tab()
    lesson, _ = room.start(lecturer, "10.0.0.7")
    change(lecturer, presenter=True)
    change(lecturer, narrow=True)
    change(lecturer, k=3)  # a real change after them: published, so the two before were seen too
    query = lesson_of(lecturer.view)
    assert eventually(lambda: store.lesson(lesson.id).query == query)
    assert store.lesson(lesson.id).version == 2
    assert "presenter" not in parse_qs(query) and "narrow" not in query


def test_a_burst_of_changes_publishes_a_few_versions_and_always_the_last(room, stores):
    store = stores()
    heard = hearing(store)
    lecturer = tab()
    lesson, _ = room.start(lecturer, "10.0.0.8")
    began = time.monotonic()
    for i in range(40):  # typing: a change a keystroke
        change(lecturer, sentence_a=f"The lecturer types word number {i}")
    elapsed = time.monotonic() - began
    last = lesson_of(lecturer.view)
    assert eventually(lambda: store.lesson(lesson.id).query == last)
    assert eventually(lambda: any(lsn.query == last for lsn in heard_of(heard, lesson.id)))
    time.sleep(3 * classroom.PUBLISH_SECONDS)  # a pending flush, if any were left, has had its turn
    kept = store.lesson(lesson.id)
    assert kept.query == last
    # one version at once, then at most one per PUBLISH_SECONDS of the burst, and the last
    published = kept.version - 1
    assert 1 <= published <= 2 + elapsed / classroom.PUBLISH_SECONDS
    assert published < 40
    assert len({lsn.version for lsn in heard_of(heard, lesson.id)}) == published


def test_a_late_timer_never_publishes_an_older_view_over_a_newer_one(room, store, monkeypatch):
    """A throttled change waits for a timer thread; on a busy server (the GIL held by a model)
    that thread runs late. A change arriving after the wait is over but before the timer ran is
    sent at once: the timer must not then publish the older view it held."""
    release, fired = threading.Event(), threading.Event()

    def late_timer(due, flush):  # the timer thread runs only once the test lets it: late
        def run():
            release.wait(WAIT)
            flush()
            fired.set()
        return threading.Timer(due, run)

    monkeypatch.setattr(classroom, "threading", types.SimpleNamespace(**{**vars(threading), "Timer": late_timer}))
    lecturer = tab()
    lesson, _ = room.start(lecturer, "10.0.0.9")
    change(lecturer, sentence_a="First, sent at once.")
    change(lecturer, sentence_a="Second, held for the timer.")
    leader = lecturer.member
    assert eventually(lambda: time.monotonic() > leader._last + classroom.PUBLISH_SECONDS)
    change(lecturer, sentence_a="Third, the newest.")
    newest = lesson_of(lecturer.view)
    assert eventually(lambda: store.lesson(lesson.id).query == newest)
    release.set()
    assert fired.wait(WAIT)
    assert store.lesson(lesson.id).query == newest


class HeldRedis:
    """A Redis client whose message published on a thread named `held` waits until the test lets
    it go: one process's publish overtaken by another's between its write and its message."""

    def __init__(self, client) -> None:
        self.client, self.arrived, self.release = client, threading.Event(), threading.Event()

    def __getattr__(self, name: str):
        return getattr(self.client, name)

    def publish(self, *args, **kwargs):
        if threading.current_thread().name == "held":
            self.arrived.set()
            self.release.wait(WAIT)
        return self.client.publish(*args, **kwargs)


@pytest.mark.parametrize("stores", ["redis"], indirect=True)  # one process's memory store publishes under its lock
def test_two_processes_publishing_at_once_agree_on_the_newest_lesson(stores):
    """The lecturer's page on two screens (each its own process) publishes at once: the lesson
    the store keeps is the one of its newest version, the one every page heard last."""
    one, two = stores(), stores()
    heard = hearing(two)
    made = one.create(secrets.token_urlsafe(12), "digest", "192.0.2.20", "k=3", None, 10, 10)
    one.redis = HeldRedis(one.redis)
    first = threading.Thread(target=one.publish, args=(made.id, "k=4", None), name="held")
    first.start()
    assert one.redis.arrived.wait(WAIT)  # its lesson is written (version 2), its message not yet sent
    second = two.publish(made.id, "k=5", None)
    one.redis.release.set()
    first.join(WAIT)
    assert eventually(lambda: len(heard_of(heard, made.id)) == 2)
    newest = max(heard_of(heard, made.id), key=lambda lesson: lesson.version)
    kept = two.lesson(made.id)
    assert kept.version == newest.version == 3
    assert kept.query == newest.query
    assert second.version == 3 and second.query == "k=5"


# --- a following tab ---------------------------------------------------------------------------------


def test_a_student_follows_until_its_view_leaves_the_lesson_but_not_for_its_own_screen(room, store):
    lecturer, student = tab(), tab("A student's own sentence.")
    lesson, _ = room.start(lecturer, "10.0.0.10")
    member = room.join(student, lesson.id)
    room.connect(student.key, member)
    assert (member.following, member.shown) == (True, 0)
    change(lecturer, sentence_a="Today: positions.", step=2)
    newest = room.lesson(lesson.id)
    assert newest.version == 2
    show(room, member, student, newest)
    assert lesson_of(student.view) == newest.query and student.view.sentence_a == "Today: positions."
    assert (member.following, member.shown) == (True, 2)
    assert store.presence(lesson.id) == (1, 1)
    change(student, presenter=True)  # the student's screen, not the view: still following
    change(student, narrow=True)
    assert member.following and store.presence(lesson.id) == (1, 1)
    change(student, k=7)  # the student's own change
    assert not member.following and member.shown == 2
    assert store.presence(lesson.id) == (1, 0)
    # a newer lesson does not pull the student back; asking to follow again does
    change(lecturer, sentence_a="Next: segments.")
    assert eventually(lambda: room.lesson(lesson.id).version == 3)  # throttled: it may come a moment later
    newer = room.lesson(lesson.id)
    assert not member.following and student.view.sentence_a == "Today: positions."
    show(room, member, student, newer)
    assert (member.following, member.shown) == (True, 3) and student.view.presenter  # its screen kept
    assert store.presence(lesson.id) == (1, 1)


def test_a_tab_that_refuses_the_lesson_does_not_follow(room, store):
    lecturer, student = tab(), tab()
    lesson, _ = room.start(lecturer, "10.0.0.11")
    member = room.join(student, lesson.id)
    room.connect(student.key, member)
    room.expect(member, lesson)
    room.shown(member, lesson, False)  # the memory budget, or a training, refused the view
    assert (member.following, member.shown) == (False, 0)
    assert store.presence(lesson.id) == (1, 0)


# --- who is there: counts across processes -----------------------------------------------------------


def test_counts_of_connected_and_following_pages_add_up_across_processes(stores, clock):
    one, two = Classroom(stores()), Classroom(stores())  # two processes, one store
    lecturer = tab()
    lesson, _ = one.start(lecturer, "10.0.0.12")
    students = [tab() for _ in range(3)]
    members = [one.join(students[0], lesson.id), one.join(students[1], lesson.id), two.join(students[2], lesson.id)]
    one.connect(students[0].key, members[0])
    one.connect(students[1].key, members[1])
    two.connect(students[2].key, members[2])
    for room in (one, two):
        assert room.store.presence(lesson.id) == (3, 3)
    for member, student, room in zip(members, students, (one, one, two), strict=True):
        show(room, member, student, room.lesson(lesson.id))
    change(students[2], k=5)  # the student on the second process leaves the lesson
    assert one.store.presence(lesson.id) == (3, 2)
    one.disconnect(students[0].key, members[0])
    assert two.store.presence(lesson.id) == (2, 1)
    one.disconnect(students[0].key, Follower(one, lesson.id))  # a stale page's goodbye removes nobody
    assert two.store.presence(lesson.id) == (2, 1)
    # a process's counts are forgotten when it stops writing them (it died), kept while it writes
    clock.now += PRESENCE_SECONDS + 1
    assert one.store.presence(lesson.id) == (0, 0)
    one.recount()
    assert two.store.presence(lesson.id) == (1, 1)
    two.recount()
    assert one.store.presence(lesson.id) == (2, 1)


class Held:
    """A store whose next count written from a thread named `held` waits until the test lets it
    go: one thread counting while another does (the recount thread, a page leaving)."""

    def __init__(self, store) -> None:
        self.store, self.arrived, self.release = store, threading.Event(), threading.Event()

    def __getattr__(self, name: str):
        return getattr(self.store, name)

    def set_presence(self, *args) -> None:
        if threading.current_thread().name == "held":
            self.arrived.set()
            self.release.wait(WAIT)
        self.store.set_presence(*args)


def test_a_count_written_while_a_page_leaves_never_outlives_the_page(store):
    held = Held(store)
    room = Classroom(held)
    lesson, _ = room.start(tab(), "10.0.0.13")
    student = tab()
    member = room.join(student, lesson.id)
    room.connect(student.key, member)
    recount = threading.Thread(target=room.recount, name="held")  # as ui/classroutes.py's thread does
    recount.start()
    assert held.arrived.wait(WAIT)  # it has read one page, and is about to write it
    room.disconnect(student.key, member)  # the page leaves meanwhile, on another thread
    assert store.presence(lesson.id) == (0, 0)
    held.release.set()
    recount.join(WAIT)
    assert store.presence(lesson.id) == (0, 0)  # no page is there, and none is counted


# --- bounds ------------------------------------------------------------------------------------------


def test_at_most_max_classes_run_at_once_and_an_ended_one_makes_room(room, store, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_CLASSES", 2)
    first, second, third = tab(), tab(), tab()
    _, secret = room.start(first, "10.0.1.1")
    room.start(second, "10.0.1.2")
    with pytest.raises(Refused, match="This server runs at most 2 classes at once, and that many are running; "
                                      "try again later."):
        room.start(third, "10.0.1.3")
    assert third.member is None  # a refused start changes nothing
    room.end(first, secret)
    lesson, _ = room.start(third, "10.0.1.3")
    assert isinstance(third.member, Leader) and store.lesson(lesson.id).version == 1


def test_at_most_classes_per_address_run_at_once(room, monkeypatch):
    monkeypatch.setattr(classroom, "CLASSES_PER_ADDRESS", 2)
    tabs = [tab() for _ in range(4)]
    _, secret = room.start(tabs[0], "192.0.2.7")
    room.start(tabs[1], "192.0.2.7")
    with pytest.raises(Refused, match="At most 2 classes can run at once from one network address; end one"):
        room.start(tabs[2], "192.0.2.7")
    assert tabs[2].member is None
    room.start(tabs[3], "192.0.2.8")  # another address has its own
    room.end(tabs[0], secret)
    room.start(tabs[2], "192.0.2.7")
    assert isinstance(tabs[2].member, Leader)


def test_a_class_kept_alive_past_its_first_idle_time_still_counts_for_its_address(room, store, clock, monkeypatch,
                                                                                   request):
    """The lecturer's activity keeps a class running past IDLE_SECONDS after it started; it is
    still one of its address's classes then."""
    monkeypatch.setattr(classroom, "CLASSES_PER_ADDRESS", 1)
    lecturer = tab()
    lesson, _ = room.start(lecturer, "198.51.100.1")
    clock.now += IDLE_SECONDS - 60
    change(lecturer, k=6)  # the lecturer is there: the class's end moves on
    assert eventually(lambda: store.lesson(lesson.id).version == 2)
    clock.now += 120  # past the first end, well within the new one
    assert store.lesson(lesson.id).ended == ""
    with pytest.raises(Refused, match="At most 1 classes can run at once from one network address"):
        room.start(tab(), "198.51.100.1")


def test_at_most_max_followers_pages_join_one_class(room, store, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_FOLLOWERS", 2)
    lesson, _ = room.start(tab(), "10.0.1.4")
    students = [tab() for _ in range(3)]
    members = [room.join(student, lesson.id) for student in students[:2]]
    for student, member in zip(students, members, strict=False):
        room.connect(student.key, member)
    with pytest.raises(Refused, match="This class has 2 pages following it, as many as one class may have."):
        room.join(students[2], lesson.id)
    assert students[2].member is None
    assert room.join(students[0], lesson.id) is members[0]  # a page already in it may ask again
    room.disconnect(students[1].key, members[1])
    assert isinstance(room.join(students[2], lesson.id), Follower)


# --- the end of a class ------------------------------------------------------------------------------


def test_a_class_ends_idle_seconds_after_its_lecturer_was_last_seen(room, store, clock, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_CLASSES", 1)
    lecturer, student = tab(), tab()
    lesson, secret = room.start(lecturer, "10.0.2.1")
    clock.now += IDLE_SECONDS - 10
    assert room.lesson(lesson.id).ended == ""
    room.lead(tab(), lesson.id, secret)  # the lecturer's link opened again: seen, so the end moves on
    clock.now += IDLE_SECONDS - 10
    assert room.lesson(lesson.id).ended == ""
    clock.now += 20
    assert store.lesson(lesson.id).ended == AWAY
    for call in (lambda: room.lesson(lesson.id), lambda: room.join(student, lesson.id),
                 lambda: room.check(lesson.id, secret), lambda: room.end(lecturer, secret)):
        with pytest.raises(Refused) as refused:
            call()
        assert str(refused.value) == AWAY and not isinstance(refused.value, Forbidden)
    assert store.publish(lesson.id, "a=late", None) is None  # nothing is published to it any more
    change(lecturer, k=8)
    assert store.lesson(lesson.id).version == 1
    room.start(tab(), "10.0.2.1")  # and it no longer takes a place


def test_the_lecturer_ends_the_class_with_a_sentence_everyone_hears(room, stores):
    store = stores()
    heard = hearing(stores())
    lecturer, student = tab(), tab()
    lesson, secret = room.start(lecturer, "10.0.2.2")
    room.join(student, lesson.id)
    ended = room.end(lecturer, secret)
    assert (ended.ended, ended.version) == (ENDED, 2)
    assert lecturer.member is None
    assert eventually(lambda: any(lsn.ended == ENDED for lsn in heard_of(heard, lesson.id)))
    assert store.lesson(lesson.id).ended == ENDED
    with pytest.raises(Refused, match=re.escape(ENDED)):
        room.lesson(lesson.id)
    with pytest.raises(Refused, match=re.escape(ENDED)):
        room.join(tab(), lesson.id)
    with pytest.raises(Forbidden):
        room.end(lecturer, secret)  # it leads nothing now
    change(lecturer, k=9)
    assert store.lesson(lesson.id).version == 2


def test_the_lecturers_link_on_another_tab_leads_from_then_on(room, store):
    lecturer, projector = tab(), tab()
    lesson, secret = room.start(lecturer, "10.0.2.3")
    led = room.lead(projector, lesson.id, secret)
    assert led.id == lesson.id
    assert isinstance(projector.member, Leader) and projector.member.class_id == lesson.id
    change(projector, sentence_a="Shown from the projector.")
    query = lesson_of(projector.view)
    assert eventually(lambda: store.lesson(lesson.id).query == query)
    assert room.end(projector, secret).ended == ENDED


# --- a lesson is a link ------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [1, 4, len(tour.STEPS)])
def test_a_lesson_round_trips_a_tour_steps_view_without_the_screen(number):
    step = tour.step(number).view
    on_screen = step.with_(presenter=True, narrow=True)
    query = lesson_of(on_screen)
    assert parse_qs(query)["step"] == [str(number)]
    assert "presenter" not in parse_qs(query) and "narrow" not in query
    assert lesson_view(query) == step.with_(presenter=False, narrow=False)
    assert lesson_of(lesson_view(query)) == query
    edited = step.with_(k=5, sentence_a="An edited step.", labels=False)
    assert lesson_view(lesson_of(edited)) == edited
    assert lesson_of(edited) != query


def test_a_lessons_view_is_read_as_any_link_is():
    assert lesson_view("") == View()
    assert lesson_view("class=AAAAAAAAAAAAAAAA&k=4") == View().with_(k=4)  # the page's class is not the view's
    assert lesson_view("k=%ZZ&&&=&step=999&a=" + "x" * 10).sentence_a == "x" * 10  # junk is let go, never raised
