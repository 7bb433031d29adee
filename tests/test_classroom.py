"""A class (core/serving/classroom.py): a lecturer's tab leads, students' tabs follow its view.

Every test runs against the one store, `RedisStore`, twice: on a fakeredis server (what one process
uses) and on a real redis-server (the `redis_url` fixture; `own_redis` for one a test stops and
starts again), with a
hand clock for what the store times (a class's grace, the students' counts) and for how often the
writer publishes. Tabs are real
`core.serving.tabs.Tab` objects changed through `Tab.apply`, the one door every change of a page goes
through. What travels between threads (the writer's lessons and counts, Redis's pub/sub) is
waited for with a bounded poll, never timed.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import subprocess
import sys
import threading
from urllib.parse import parse_qs

import pytest

import core.serving.classroom as classroom
from core.serving.classoutage import LOST
from core.serving.classroom import (
    CANNOT_START,
    ENDED,
    NO_CLASS,
    NOT_LECTURER,
    Classroom,
    Follower,
    Forbidden,
    Leader,
    Reconnecting,
)
from core.serving.classstore import (
    AWAY,
    GRACE_SECONDS,
    PRESENCE_SECONDS,
    RECONNECTING,
    Full,
    Lesson,
    RedisStore,
    lesson_of,
    lesson_view,
)
from core.serving.tabs import Tab
from core.view import tour
from core.view.options import Refused
from core.view.state import View
from tests.clocks import Clock
from tests.waiting import eventually

URLSAFE = re.compile(r"[A-Za-z0-9_-]+")
WAIT = 15.0  # seconds a bounded poll waits at most for what another thread delivers


@pytest.fixture()
def clock() -> Clock:
    """The store's wall clock."""
    return Clock(1_800_000_000.0)


@pytest.fixture(autouse=True)
def closed(monkeypatch):
    """Every classroom a test makes is closed when it ends (its writer and its store's listener
    stop), so none goes on writing to a store another test uses."""
    made: list[Classroom] = []
    make = Classroom.__init__

    def tracked(self, *args, **kwargs):
        make(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Classroom, "__init__", tracked)
    yield
    for room in made:
        room.close()


@pytest.fixture(params=["fakeredis", "redis"])
def stores(request, clock):
    """`stores()` gives the class store as one process sees it: the first call the emptied
    server's client, each later call another client of it (another process). The server is a
    fakeredis one of the test's own, or the real redis-server of `redis_url`."""
    url = request.getfixturevalue("redis_url") if request.param == "redis" else ""
    first = RedisStore(url, clock)
    first.redis.flushdb()
    made: list[RedisStore] = []

    def store_of_a_process() -> RedisStore:
        made.append(first if not made else RedisStore(url, clock, server=getattr(first, "server", None)))
        return made[-1]

    return store_of_a_process


@pytest.fixture()
def store(stores):
    return stores()


@pytest.fixture()
def room(store) -> Classroom:
    return Classroom(store)


def key_of(tab) -> str:
    """A page's key for the class, as the page's transport would issue one (any unique text)."""
    return f"page-{id(tab):x}"


def tab(text: str | None = None) -> Tab:
    """A tab whose view is its own (a unique sentence, so no two tests' lessons agree)."""
    tab = Tab()
    text = text or f"Class test {secrets.token_hex(4)} spoke."
    tab.apply(lambda view: view.with_(sentence_a=text), lambda step: None)
    return tab


def change(tab: Tab, **fields) -> None:
    tab.apply(lambda view: view.with_(**fields), lambda step: None)


def show(room: Classroom, member: Follower, tab: Tab, lesson: Lesson) -> None:
    """Show a student's tab the lesson, as the follow route does (ui/classroutes.py `_show`)."""
    room.expect(member, lesson)
    tab.apply(lambda view: lesson_view(lesson.query).with_(presenter=view.presenter).seen_as(view),
               lambda step: None, whole=True)
    room.shown(member, lesson, lesson_of(tab.view) == lesson.query)


def hearing(store) -> list[Lesson]:
    """The lessons `store` tells its listeners of (through Redis's pub/sub for a RedisStore)."""
    heard: list[Lesson] = []
    store.listen(heard.append)
    return heard


def heard_of(heard: list[Lesson], class_id: str) -> list[Lesson]:
    return [lesson for lesson in list(heard) if lesson is not None and lesson.id == class_id]


# --- starting a class, and who may change it --------------------------------------------------


def test_a_class_read_back_from_its_store_is_the_class_made(store, clock):
    made = store.create("ReadBackClass_01", "a-digest", "192.0.2.1", "step=3&k=4", 3, 10, 10)
    assert made == Lesson("ReadBackClass_01", 1, "step=3&k=4", 3, clock.now + GRACE_SECONDS)
    assert store.lesson("ReadBackClass_01") == made
    assert store.owner("ReadBackClass_01") == ("a-digest", "192.0.2.1")
    assert store.lesson("NoSuchClass_0001") is None and store.owner("NoSuchClass_0001") is None
    seen = store.publish("ReadBackClass_01", None, None)  # the lecturer seen: the same lesson, a later end
    assert (seen.version, seen.query, seen.step) == (1, "step=3&k=4", 3)
    clock.now += 5
    news = store.publish("ReadBackClass_01", "k=5", None)
    assert store.lesson("ReadBackClass_01") == news == Lesson("ReadBackClass_01", 2, "k=5", None,
                                                              clock.now + GRACE_SECONDS)


def test_a_class_starts_with_an_unguessable_id_and_secret_and_keeps_only_the_secrets_digest(room, store):
    lecturer = tab()
    lesson, secret = room.start(lecturer, "10.0.0.1")
    assert len(lesson.id) == 16 and URLSAFE.fullmatch(lesson.id)
    assert len(secret) == 32 and URLSAFE.fullmatch(secret)
    assert (lesson.version, lesson.query, lesson.ended) == (1, lesson_of(lecturer.view), "")
    assert isinstance(lecturer.member, Leader) and lecturer.member.class_id == lesson.id
    # the store holds the secret's SHA-256 digest, and the secret nowhere
    assert store.owner(lesson.id) == (hashlib.sha256(secret.encode()).hexdigest(), "10.0.0.1")
    kept = [str(value) for key in store.redis.keys("*") if store.redis.type(key) == "hash"
            for value in store.redis.hgetall(key).values()]
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
    with pytest.raises(Forbidden, match=re.escape(NOT_LECTURER)):
        room.lead(lesson.id, wrong)
    with pytest.raises(Forbidden, match=re.escape(NOT_LECTURER)):
        room.end(lecturer, wrong)
    assert isinstance(lecturer.member, Leader)
    kept = store.lesson(lesson.id)
    assert (kept.version, kept.query, kept.ended) == (1, lesson.query, "")
    assert room.check(lesson.id, secret)[0].id == lesson.id  # the right secret still is


@pytest.mark.parametrize("class_id", ["unknown", "cut", "longer", "", None, 7, "../../../etc/pass", "*",
                                      "abcdefgh ijklmno", "explorer:classes"])
def test_an_unknown_or_malformed_class_id_is_no_class(room, class_id):
    lecturer = tab()
    lesson, secret = room.start(lecturer, "10.0.0.4")
    class_id = {"unknown": secrets.token_urlsafe(12), "cut": lesson.id[:-1], "longer": lesson.id + "A"}.get(
        class_id, class_id) if isinstance(class_id, str) else class_id
    for call in (lambda: room.lesson(class_id), lambda: room.check(class_id, secret),
                 lambda: room.join(tab(), class_id), lambda: room.lead(class_id, secret)):
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
    room.hear(lambda class_id, lesson, member: told.append(class_id))
    lecturer = tab()
    lesson, _ = room.start(lecturer, "10.0.0.6")
    assert not heard_of(heard, lesson.id)  # a class's start is no news: its page has the lesson
    change(lecturer, sentence_a="The lecturer's new sentence.", k=4)
    query = lesson_of(lecturer.view)
    assert query != lesson.query and "k=4" in query
    assert eventually(lambda: any(lsn.query == query for lsn in heard_of(heard, lesson.id)))
    news = [lsn for lsn in heard_of(heard, lesson.id) if lsn.query == query][-1]
    assert (news.version, news.step, news.ended) == (2, None, "")
    assert lesson_view(news.query) == lecturer.view.with_(presenter=False, narrow=False)
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


def test_a_burst_of_changes_publishes_a_few_versions_and_always_the_last(stores):
    store = stores()
    heard = hearing(store)
    ticks = Clock()  # the writer's clock: it stands still while the lecturer types
    room = Classroom(store, ticks=ticks)
    lecturer = tab()
    lesson, _ = room.start(lecturer, "10.0.0.8")
    change(lecturer, sentence_a="The lecturer types word number 0")
    first = lesson_of(lecturer.view)
    assert eventually(lambda: room._led[lesson.id].published == first)  # published at once, and noted so
    began = ticks.now
    for i in range(1, 40):  # typing: a change a keystroke
        change(lecturer, sentence_a=f"The lecturer types word number {i}")
        room.writer.flush()  # the writer's turn after each key
    elapsed = ticks.now - began
    last = lesson_of(lecturer.view)

    def published_last() -> bool:
        ticks.now += classroom.PUBLISH_SECONDS  # the writer's time goes on while the test waits
        return store.lesson(lesson.id).query == last

    assert eventually(published_last)
    assert eventually(lambda: any(lsn.query == last for lsn in heard_of(heard, lesson.id)))
    ticks.now += 3 * classroom.PUBLISH_SECONDS
    room.writer.flush()  # a pending flush, if any were left, has had its turn
    kept = store.lesson(lesson.id)
    assert kept.query == last
    # one version at once, then at most one per PUBLISH_SECONDS of the burst, and the last
    published = kept.version - 1
    assert 1 <= published <= 2 + elapsed / classroom.PUBLISH_SECONDS
    assert published < 40
    assert len({lsn.version for lsn in heard_of(heard, lesson.id)}) == published


class HeldStore:
    """A store whose next call of `name` from the writer thread waits until the test lets it go
    (the writer busy with an older lesson while the lecturer's page changes again)."""

    def __init__(self, store, name: str) -> None:
        self.store, self.name, self.arrived, self.release = store, name, threading.Event(), threading.Event()

    def __getattr__(self, name: str):
        found = getattr(self.store, name)
        if name != self.name or threading.current_thread().name not in ("class-writer", "held"):
            return found

        def held(*args, **kwargs):
            if not self.release.is_set():
                self.arrived.set()
                self.release.wait(WAIT)
            return found(*args, **kwargs)

        return held


def test_a_writer_kept_waiting_publishes_the_newest_lesson_never_an_older_one(store):
    """The writer publishes one class's lesson at a time, the newest its lecturer's page asked
    for: changes made while it waits for the store are not queued, and none is lost."""
    held = HeldStore(store, "publish")
    room = Classroom(held)
    lecturer = tab()
    lesson, _ = room.start(lecturer, "10.0.0.9")
    change(lecturer, sentence_a="First, being published.")
    assert held.arrived.wait(WAIT)  # the writer has the first in hand, and the store keeps it waiting
    change(lecturer, sentence_a="Second, never published.")
    change(lecturer, sentence_a="Third, the newest.")
    newest = lesson_of(lecturer.view)
    held.release.set()
    assert eventually(lambda: store.lesson(lesson.id).query == newest)
    assert store.lesson(lesson.id).version == 3  # the first, then the newest: the second was never sent


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
    room.connect(key_of(student), member, lesson)
    assert (member.following, member.shown) == (True, 0)
    change(lecturer, sentence_a="Today: positions.", step=2)
    assert eventually(lambda: room.lesson(lesson.id).version == 2)
    newest = room.lesson(lesson.id)
    show(room, member, student, newest)
    assert lesson_of(student.view) == newest.query and student.view.sentence_a == "Today: positions."
    assert (member.following, member.shown) == (True, 2)
    assert eventually(lambda: store.presence(lesson.id) == (1, 1, 1))
    change(student, presenter=True)  # the student's screen, not the view: still following
    change(student, narrow=True)
    assert member.following
    change(student, k=7)  # the student's own change
    assert not member.following and member.shown == 2
    assert eventually(lambda: store.presence(lesson.id) == (1, 0, 1))
    # a newer lesson does not pull the student back; asking to follow again does
    change(lecturer, sentence_a="Next: segments.")
    assert eventually(lambda: room.lesson(lesson.id).version == 3)
    newer = room.lesson(lesson.id)
    assert not member.following and student.view.sentence_a == "Today: positions."
    show(room, member, student, newer)
    assert (member.following, member.shown) == (True, 3) and student.view.presenter  # its screen kept
    assert eventually(lambda: store.presence(lesson.id) == (1, 1, 1))


def test_a_tab_that_refuses_the_lesson_does_not_follow(room, store):
    lecturer, student = tab(), tab()
    lesson, _ = room.start(lecturer, "10.0.0.11")
    member = room.join(student, lesson.id)
    room.connect(key_of(student), member, lesson)
    room.expect(member, lesson)
    room.shown(member, lesson, False)  # the memory budget, or a training, refused the view
    assert (member.following, member.shown) == (False, 0)
    assert eventually(lambda: store.presence(lesson.id) == (1, 0, 1))


# --- who is there: counts across processes -----------------------------------------------------------


def test_counts_of_connected_and_following_pages_add_up_across_processes(stores, clock):
    one, two = Classroom(stores()), Classroom(stores())  # two processes, one store
    lecturer = tab()
    lesson, _ = one.start(lecturer, "10.0.0.12")
    students = [tab() for _ in range(3)]
    members = [one.join(students[0], lesson.id), one.join(students[1], lesson.id), two.join(students[2], lesson.id)]
    for student, member, room in zip(students, members, (one, one, two), strict=True):
        room.connect(key_of(student), member, lesson)  # a seat is written as it is taken
    for room in (one, two):
        assert room.store.presence(lesson.id) == (3, 3, 3)
    for member, student, room in zip(members, students, (one, one, two), strict=True):
        show(room, member, student, room.lesson(lesson.id))
    change(students[2], k=5)  # the student on the second process leaves the lesson
    assert eventually(lambda: one.store.presence(lesson.id) == (3, 2, 3))
    one.disconnect(key_of(students[0]), members[0])
    assert eventually(lambda: two.store.presence(lesson.id) == (2, 1, 2))
    one.disconnect(key_of(students[0]), Follower(one, lesson.id))  # a stale page's goodbye removes nobody
    assert two.store.presence(lesson.id) == (2, 1, 2)
    # a process's counts are forgotten when it stops writing them (it died), kept while it writes
    clock.now += PRESENCE_SECONDS + 1
    assert one.store.presence(lesson.id) == (0, 0, 0)
    one.beat()
    assert two.store.presence(lesson.id) == (1, 1, 1)
    two.beat()
    assert one.store.presence(lesson.id) == (2, 1, 2)


def test_a_count_written_while_a_page_leaves_never_outlives_the_page(store):
    held = HeldStore(store, "set_presence")
    room = Classroom(held)
    lesson, _ = room.start(tab(), "10.0.0.13")
    student = tab()
    member = room.join(student, lesson.id)
    held.release.set()
    room.connect(key_of(student), member, lesson)
    held.release.clear()
    beat = threading.Thread(target=room.beat, name="held")  # as the writer's beat does
    beat.start()
    assert held.arrived.wait(WAIT)  # it has read one page, and is about to write it
    room.disconnect(key_of(student), member)  # the page leaves meanwhile, on another thread
    held.release.set()
    beat.join(WAIT)
    assert eventually(lambda: store.presence(lesson.id) == (0, 0, 0))  # no page is there, and none is counted
    room.beat()
    assert store.presence(lesson.id) == (0, 0, 0)


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


def test_a_class_whose_lecturers_page_is_connected_runs_past_its_grace_and_counts_for_its_address(
        room, store, clock, monkeypatch):
    monkeypatch.setattr(classroom, "CLASSES_PER_ADDRESS", 1)
    lecturer = tab()
    lesson, _ = room.start(lecturer, "198.51.100.1")
    room.connect(key_of(lecturer), lecturer.member, lesson)  # its stream is open
    for _ in range(3):  # three graces pass, the writer beating as it does
        clock.now += GRACE_SECONDS - 1
        room.beat()
    assert store.lesson(lesson.id).ended == ""
    with pytest.raises(Full, match="At most 1 classes can run at once from one network address"):
        room.start(tab(), "198.51.100.1")


@pytest.mark.parametrize(("minutes", "grace", "said"), [(None, 120.0, "over 2 minutes."),
                                                       ("5", 300.0, "over 5 minutes."),
                                                       ("0.5", 30.0, "over 0.5 minutes.")])
def test_the_grace_is_minutes_and_set_by_its_setting(minutes, grace, said):
    """A class once outlived its page by three hours: the grace is two minutes unless
    EXPLORER_CLASS_GRACE_MINUTES says otherwise, and the sentence says the grace in force."""
    env = {k: v for k, v in os.environ.items() if k != "EXPLORER_CLASS_GRACE_MINUTES"}
    if minutes is not None:
        env["EXPLORER_CLASS_GRACE_MINUTES"] = minutes
    shown = "from core.serving import classstore as c; print(c.GRACE_SECONDS); print(c.AWAY)"
    read = subprocess.run([sys.executable, "-c", shown], env=env, capture_output=True, text=True, check=True,
                          timeout=60)
    seconds, away = read.stdout.splitlines()
    assert float(seconds) == grace
    assert away.endswith(f"its lecturer's page was closed for {said}")


@pytest.mark.parametrize("closed", ["closed", "never opened"])
def test_three_classes_whose_pages_closed_make_room_for_a_fourth_within_the_grace(room, store, clock, closed):
    """Three students behind one school address press Start and close their pages: the
    lecturer's Start from that address succeeds once the grace has passed, not hours later."""
    address = "203.0.113.9"
    students = [tab() for _ in range(3)]
    started = [room.start(student, address)[0] for student in students]
    if closed == "closed":
        for student, lesson in zip(students, started, strict=True):
            room.connect(key_of(student), student.member, lesson)
        clock.now += 30
        for student in students:
            room.disconnect(key_of(student), student.member)
    lecturer = tab()
    with pytest.raises(Full, match="At most 3 classes can run at once from one network address"):
        room.start(lecturer, address)
    assert lecturer.member is None
    clock.now += GRACE_SECONDS
    room.beat()
    lesson, _ = room.start(lecturer, address)
    assert isinstance(lecturer.member, Leader) and store.lesson(lesson.id).ended == ""
    for each in started:  # the students' classes ended, and say why
        assert store.lesson(each.id).ended == AWAY
        with pytest.raises(Refused, match=re.escape(AWAY)):
            room.lesson(each.id)


def test_twenty_seats_taken_at_once_against_a_cap_of_five_admit_five(stores, monkeypatch):
    """Pages join from several processes at the same instant: the count each sees is the one
    its seat is taken against, so no more than the cap get in."""
    monkeypatch.setattr(classroom, "MAX_FOLLOWERS", 5)
    rooms = [Classroom(stores()) for _ in range(4)]  # four processes on one store
    lesson, _ = rooms[0].start(tab(), "10.0.1.5")
    students = [tab() for _ in range(20)]
    members = [rooms[i % 4].join(student, lesson.id) for i, student in enumerate(students)]
    gate = threading.Barrier(20)
    taken: list[bool] = []

    def take(i: int) -> None:
        gate.wait(WAIT)
        try:
            rooms[i % 4].connect(key_of(students[i]), members[i], lesson)
            taken.append(True)
        except Full as refused:
            assert str(refused) == "This class has 5 pages following it, as many as one class may have."
            taken.append(False)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert taken.count(True) == 5 and taken.count(False) == 15
    assert rooms[1].store.presence(lesson.id)[0] == 5
    seated = [i for i in range(20) if key_of(students[i]) in rooms[i % 4].seats.pages.get(lesson.id, {})]
    assert len(seated) == 5
    first = seated[0]
    rooms[first % 4].connect(key_of(students[first]), members[first], lesson)  # a page seated already keeps its seat
    rooms[first % 4].disconnect(key_of(students[first]), members[first])  # one leaves: a seat is free
    assert eventually(lambda: rooms[2].store.presence(lesson.id)[0] == 4)
    late = next(i for i in range(20) if i not in seated)
    rooms[late % 4].connect(key_of(students[late]), members[late], lesson)


# --- the end of a class ------------------------------------------------------------------------------


def test_a_class_ends_grace_seconds_after_its_last_lecturer_page_left(room, store, clock, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_CLASSES", 1)
    lecturer, projector, student = tab(), tab(), tab()
    lesson, secret = room.start(lecturer, "10.0.2.1")
    leader, _ = room.lead(lesson.id, secret)  # the lecturer's link on the projector too
    projector.member = leader
    room.connect(key_of(lecturer), lecturer.member, lesson)
    room.connect(key_of(projector), projector.member, lesson)
    room.disconnect(key_of(lecturer), lecturer.member)  # one of its pages closes: the other holds the class
    for _ in range(3):  # the writer beats as it does, and the grace passes
        clock.now += GRACE_SECONDS / 2
        room.beat()
    assert room.lesson(lesson.id).ended == ""
    room.disconnect(key_of(projector), projector.member)  # the last one closes
    clock.now += GRACE_SECONDS - 1
    room.beat()
    assert room.lesson(lesson.id).ended == ""  # a reload comes back well within it
    clock.now += 2
    room.beat()
    assert store.lesson(lesson.id).ended == AWAY
    for call in (lambda: room.lesson(lesson.id), lambda: room.join(student, lesson.id),
                 lambda: room.check(lesson.id, secret), lambda: room.end(lecturer, secret)):
        with pytest.raises(Refused) as refused:
            call()
        assert str(refused.value) == AWAY and not isinstance(refused.value, Forbidden)
    assert store.publish(lesson.id, "a=late", None) is None  # nothing is published to it any more
    change(lecturer, k=8)
    room.beat()
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
    leader, led = room.lead(lesson.id, secret)
    assert led.id == lesson.id and leader.class_id == lesson.id and projector.member is None
    projector.member = leader  # the page leads once it shows the lesson (ui/classroutes.py)
    change(projector, sentence_a="Shown from the projector.")
    query = lesson_of(projector.view)
    assert eventually(lambda: store.lesson(lesson.id).query == query)
    assert room.end(projector, secret).ended == ENDED


def test_starting_another_class_ends_the_first_and_leading_another_lets_it_go(room, store, clock):
    lecturer, other = tab(), tab()
    first, first_secret = room.start(lecturer, "10.0.2.4")
    second, _ = room.start(lecturer, "10.0.2.4")  # the same page starts another: the first ends
    assert store.lesson(first.id).ended == "The lecturer started another class."
    assert lecturer.member.class_id == second.id
    third, third_secret = room.start(other, "10.0.2.5")
    room.connect(key_of(lecturer), lecturer.member, second)
    leader, _ = room.lead(third.id, third_secret)  # the page opens another class's lecturer link
    room.disconnect(key_of(lecturer), lecturer.member)  # its stream of the second class ends (ui/classroutes.py)
    lecturer.member = leader
    room.connect(key_of(lecturer), leader, third)  # and its stream of the third opens
    clock.now += GRACE_SECONDS + 1
    room.beat()
    assert store.lesson(second.id).ended == AWAY  # let go: no page leads it, and its grace is over
    assert store.lesson(third.id).ended == ""


# --- a store that is away ----------------------------------------------------------------------------


@pytest.fixture()
def rooms(own_redis, clock):
    """Two processes' classrooms on a Redis the test stops and starts again, trying it every
    50 ms; the test's hand clock is the store's."""
    made = [Classroom(RedisStore(own_redis.url, clock), retry=0.05) for _ in range(2)]
    yield own_redis, made
    for room in made:  # before its Redis stops
        room.close()


def test_while_the_store_is_away_calls_say_so_changes_wait_and_the_class_comes_back_when_it_does(rooms):
    """Redis stops under a class and starts again empty: meanwhile every call that needs the store
    is refused with a sentence and changes nothing, every page's own change goes on, and every
    process says the class is reconnecting; once it is back, the lecturer's process restores the
    class from its page (its lesson the newest the page asked for) and the other process hears it."""
    redis_server, (one, two) = rooms
    lecturer, student = tab(), tab()
    lesson, secret = one.start(lecturer, "10.0.3.1")
    one.connect(key_of(lecturer), lecturer.member, lesson)
    member = two.join(student, lesson.id)
    two.connect(key_of(student), member, lesson)
    show(two, member, student, lesson)
    heard = []
    two.hear(lambda class_id, lesson, member: heard.append(lesson))  # None: no lesson, only a change
    redis_server.stop()
    for call, sentence in ((lambda: one.start(tab(), "10.0.3.2"), CANNOT_START),
                           (lambda: one.lesson(lesson.id), RECONNECTING),
                           (lambda: one.end(lecturer, secret), RECONNECTING),
                           (lambda: two.join(tab(), lesson.id), RECONNECTING)):
        with pytest.raises(Reconnecting) as refused:
            call()
        assert str(refused.value) == sentence
    assert isinstance(lecturer.member, Leader)  # the refused end changed nothing
    change(lecturer, sentence_a="Taught while the store was away.", step=3)  # the page's own change goes on
    change(student, k=6)
    assert lecturer.view.step == 3 and not member.following
    assert eventually(lambda: one.reconnecting(lesson.id) and two.reconnecting(lesson.id))
    redis_server.start()  # empty
    assert eventually(lambda: one.store.lesson(lesson.id) is not None)
    restored = one.store.lesson(lesson.id)
    assert restored.query == lesson_of(lecturer.view) and restored.step == 3 and restored.version > lesson.version
    assert one.store.owner(lesson.id) == (hashlib.sha256(secret.encode()).hexdigest(), "10.0.3.1")
    assert eventually(lambda: not one.reconnecting(lesson.id) and not two.reconnecting(lesson.id))
    assert eventually(lambda: any(lsn.query == restored.query for lsn in heard_of(heard, lesson.id)))
    assert eventually(lambda: two.store.presence(lesson.id) == (1, 0, 1))  # the student's page counted again
    change(lecturer, sentence_a="The next lesson, after the store came back.")
    newest = lesson_of(lecturer.view)
    assert eventually(lambda: any(lsn.query == newest for lsn in heard_of(heard, lesson.id)))
    assert one.end(lecturer, secret).ended == ENDED
    assert eventually(lambda: any(lsn.ended == ENDED for lsn in heard_of(heard, lesson.id)))


def test_a_class_no_lecturers_page_restores_ends_for_its_students_after_the_grace(rooms, clock):
    redis_server, (one, two) = rooms
    lesson, _ = one.start(tab(), "10.0.3.3")  # a class no page connects to lead
    student = tab()
    member = two.join(student, lesson.id)
    two.connect(key_of(student), member, lesson)
    heard = []
    two.hear(lambda class_id, lesson, member: heard.append(lesson))  # None: no lesson, only a change
    redis_server.stop()
    assert eventually(lambda: two.reconnecting(lesson.id))
    clock.now += GRACE_SECONDS + 1  # the class's own page is long gone: nobody will bring it back
    redis_server.start()  # empty
    assert eventually(lambda: not two.writer.away)
    assert two.reconnecting(lesson.id)  # not restored yet: its students are not told it ended
    assert not any(lsn.ended for lsn in heard_of(heard, lesson.id))
    clock.now += GRACE_SECONDS + 1
    assert eventually(lambda: any(lsn.ended == LOST for lsn in heard_of(heard, lesson.id)))
    assert not two.reconnecting(lesson.id) and one.store.lesson(lesson.id) is None


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
