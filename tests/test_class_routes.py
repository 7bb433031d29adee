"""A class through the launched app (ui/classroutes.py): start, lead, follow, end and each page's stream.

Pages are opened and changed through the page's route (tests/appapi.py `Page`), each named by the
key the server issued it, as the page's script names it. A stream is read the way the page reads
it, as server-sent events (one JSON message an event, keep-alive comments between), on a thread
of its own, each wait bounded; what travels (a lesson, the counts) is waited for, never timed.
Every call takes a turn on the page's route's lines, so a flood of them is refused by the same
account. Each test ends the classes it started.
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import secrets
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import core.serving.classroom as classroom
import core.serving.classstore as classstore
from core.serving.classroom import NO_CLASS, NOT_LECTURER, Follower, Leader
from core.serving.classstore import lesson_of
from tests.appapi import Page
from tests.waiting import eventually

WAIT = 30.0  # seconds a bounded wait gives what another thread or the server delivers
ENDED = "The lecturer ended the class."
NO_KEY = "This request carries no valid page key; reload the page."
FULL = "This class has {} pages following it, as many as one class may have."
CLOSED = object()  # the stream's end, as its reader hands it on


def call(app_url: str, name: str, sent=None, content: bytes | None = None,
         address: str | None = None) -> httpx.Response:
    """One class call; `address`: the client address a proxy would forward (the server trusts
    its loopback peer's X-Forwarded-For), so a test's per-address count is its own."""
    headers = {"X-Forwarded-For": address} if address else None
    return httpx.post(f"{app_url}explorer/class/{name}", json=sent, content=content, timeout=60, headers=headers)


class Stream:
    """A page's class stream: its events read on a thread of its own, each message kept."""

    def __init__(self, app_url: str, sent: dict) -> None:
        self.messages: queue.Queue = queue.Queue()
        self.seen: list[dict] = []
        self.status: int | None = None
        self.closed = False
        self.kind = ""
        self._response: httpx.Response | None = None
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(f"{app_url}explorer/class/stream", sent),
                                        daemon=True)
        self._thread.start()
        assert self._opened.wait(WAIT), "the stream did not answer"
        assert self.status == 200, f"the stream answered {self.status}"
        assert self.kind.startswith("text/event-stream"), f"the stream answered {self.kind}"

    def _read(self, url: str, sent: dict) -> None:
        try:
            # a student's idle stream sends a keep-alive comment every 15 s: a read waits longer than that
            with httpx.Client(timeout=httpx.Timeout(10, read=60)) as client, \
                    client.stream("POST", url, json=sent) as response:
                self.status, self._response = response.status_code, response
                self.kind = response.headers.get("content-type", "")
                self._opened.set()
                for line in response.iter_lines():
                    if line.startswith("data:"):  # an event's data; a line starting ":" is a keep-alive
                        self.messages.put(json.loads(line[5:]))
        except (httpx.HTTPError, OSError):
            pass  # closed by the test, or by the server
        finally:
            self._opened.set()
            self.messages.put(CLOSED)

    def next(self, timeout: float = WAIT):
        """The next message (or CLOSED), within `timeout` seconds."""
        if self.closed:
            return CLOSED
        try:
            message = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message within {timeout} s; seen: {self.seen}") from None
        if message is CLOSED:
            self.closed = True
        else:
            self.seen.append(message)
        return message

    def until(self, predicate, timeout: float = WAIT) -> dict:
        """The first message from now on for which `predicate` holds (a bounded wait)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.next(max(0.01, deadline - time.monotonic()))
            if message is CLOSED:
                raise AssertionError(f"the stream closed first; seen: {self.seen}")
            if predicate(message):
                return message

    def wait_closed(self, timeout: float = WAIT) -> None:
        """Wait until the server ends the stream (its messages meanwhile are kept in `seen`)."""
        deadline = time.monotonic() + timeout
        while self.next(max(0.01, deadline - time.monotonic())) is not CLOSED:
            pass

    def close(self) -> None:
        """Hang up, as a page that goes away does (a blocked read wakes only to a shutdown)."""
        response = self._response
        if response is not None:
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with contextlib.suppress(OSError):  # the server closed it first
                    sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(WAIT)


@pytest.fixture()
def pages(app_url):
    """`pages(text)`: a new page showing `text` as sentence A (its tab: `.tab`, its key: `.key`)."""

    def page(text: str | None = None) -> Page:
        opened = Page(app_url)
        opened.send(sentence_a=text or f"A page of its own, {secrets.token_hex(4)}.", sentence_b="")
        return opened

    return page


@pytest.fixture()
def opened(app_url):
    """`opened(key, class_id)`: a page's stream, closed when the test ends."""
    streams: list[Stream] = []

    def open_stream(key: str, class_id: str) -> Stream:
        streams.append(Stream(app_url, {"key": key, "class": class_id}))
        return streams[-1]

    yield open_stream
    for stream in streams:
        stream.close()


@pytest.fixture()
def started(app_url):
    """`started(page)`: the class a page starts (its answer), ended when the test ends, so no
    test leaves a class counted against the next one's address."""
    from ui.classroutes import CLASSROOM

    classes: list[str] = []

    def start(page: Page, address: str | None = None) -> dict:
        response = call(app_url, "start", {"key": page.key}, address=address)
        assert response.status_code == 200, response.text
        classes.append(response.json()["class"])
        return response.json()

    start.classes = classes
    yield start
    for class_id in classes:
        CLASSROOM.store.publish(class_id, None, None, ended="The test is over.")


def lesson(class_id: str):
    from ui.classroutes import CLASSROOM

    return CLASSROOM.store.lesson(class_id)


# --- a class begins, and a student follows it --------------------------------------------------------


def test_start_answers_the_class_and_its_secret_and_the_lecturers_stream_counts_pages(pages, started, opened):
    lecturer = pages()
    answer = started(lecturer)
    assert re.fullmatch(r"[A-Za-z0-9_-]{16}", answer["class"]) and re.fullmatch(r"[A-Za-z0-9_-]{32}",
                                                                                 answer["secret"])
    assert answer["step"] is None
    assert isinstance(lecturer.tab.member, Leader) and lecturer.tab.member.class_id == answer["class"]
    assert lesson(answer["class"]).query == lesson_of(lecturer.tab.view)
    first = opened(lecturer.key, answer["class"]).next()
    assert first.pop("poll") == {"round": 0, "prompt": "", "open": False, "version": 0, "drawn": [], "review": False,
                                 "answers": 0, "students": 0, "words": []}  # no question asked yet
    assert first == {"class": answer["class"], "role": "lecturer", "version": 1, "step": None, "ended": "",
                     "reconnecting": "", "connected": 0, "following": 0, "students": 0}


def test_a_student_joins_is_shown_the_lesson_and_hears_the_lecturers_next_change(app_url, pages, started, opened):
    lecturer = pages("The lecturer's sentence.")
    student = pages("The student's sentence.")
    class_id = started(lecturer)["class"]
    counts = opened(lecturer.key, class_id)
    assert counts.next()["connected"] == 0
    stream = opened(student.key, class_id)
    first = stream.next()
    assert (first["role"], first["following"], first["shown"], first["version"]) == ("student", True, 0, 1)
    assert "connected" not in first  # the counts are the lecturer's
    assert isinstance(student.tab.member, Follower)
    counts.until(lambda m: (m["connected"], m["following"]) == (1, 1))
    shown = call(app_url, "follow", {"key": student.key})
    assert shown.status_code == 200, shown.text
    values = shown.json()["values"]
    assert "embed-plot" in values and "address" in values
    assert lesson_of(student.tab.view) == lesson(class_id).query
    assert student.tab.view.sentence_a == "The lecturer's sentence."
    assert stream.until(lambda m: m["shown"] == 1)["following"] is True
    # the lecturer's page moves on: the student's stream hears the new version, and follow shows it
    lecturer.send(move=1)
    assert lecturer.tab.view.step == 1
    news = stream.until(lambda m: m["version"] > 1)
    assert news["step"] == 1 and news["following"] is True
    assert call(app_url, "follow", {"key": student.key}).status_code == 200
    assert lesson_of(student.tab.view) == lesson_of(lecturer.tab.view.with_(presenter=False, narrow=False))
    assert student.tab.view.step == 1
    # a jump with the step picker is a lesson as Next's is
    lecturer.send(go=6)
    assert lecturer.tab.view.step == 6
    news = stream.until(lambda m: m["version"] > 2)
    assert news["step"] == 6 and news["following"] is True
    assert call(app_url, "follow", {"key": student.key}).status_code == 200
    assert student.tab.view == lecturer.tab.view.with_(presenter=False, narrow=False).seen_as(student.tab.view)
    assert student.tab.view.step == 6


def test_a_students_own_change_stops_following_and_the_lecturer_sees_the_count_drop(app_url, pages, started,
                                                                                     opened):
    lecturer = pages()
    student = pages()
    class_id = started(lecturer)["class"]
    counts = opened(lecturer.key, class_id)
    stream = opened(student.key, class_id)
    stream.next()
    assert call(app_url, "follow", {"key": student.key}).status_code == 200
    stream.until(lambda m: m["shown"] == 1)
    counts.until(lambda m: (m["connected"], m["following"]) == (1, 1))
    student.send(sentence_a="The student wanders off.", sentence_b="")
    assert stream.until(lambda m: m["following"] is False)["shown"] == 1
    counts.until(lambda m: (m["connected"], m["following"]) == (1, 0))
    # asking to follow again shows the lesson again
    assert call(app_url, "follow", {"key": student.key}).status_code == 200
    assert stream.until(lambda m: m["following"] is True)
    assert lesson_of(student.tab.view) == lesson(class_id).query
    counts.until(lambda m: (m["connected"], m["following"]) == (1, 1))


def test_a_page_that_leaves_is_no_longer_counted(pages, started, opened):
    lecturer = pages()
    student = pages()
    class_id = started(lecturer)["class"]
    counts = opened(lecturer.key, class_id)
    stream = opened(student.key, class_id)
    counts.until(lambda m: m["connected"] == 1)
    stream.close()
    try:
        counts.until(lambda m: m["connected"] == 0)
    except AssertionError as error:  # say what the server holds, to tell a page kept from a count kept
        from ui.classroutes import CLASSROOM

        raise AssertionError(f"{error}; pages held: {len(CLASSROOM.seats.pages.get(class_id, {}))}, counted: "
                             f"{CLASSROOM.store.presence(class_id)}") from None


def test_a_page_that_opens_its_stream_again_is_still_counted(pages, started, opened):
    """The page's script opens the stream again when it drops (assets/classroom.js); the server may
    not yet know the old one is gone. The newer replaces the older, and the page stays counted."""
    from ui.classroutes import CLASSROOM

    lecturer = pages()
    student = pages()
    class_id = started(lecturer)["class"]
    counts = opened(lecturer.key, class_id)
    older = opened(student.key, class_id)
    older.next()
    counts.until(lambda m: m["connected"] == 1)
    newer = opened(student.key, class_id)
    assert newer.next()["role"] == "student"
    older.wait_closed()  # the server ended the older: its page has a newer one
    # the older's goodbye is written on a thread of its own: give it a few seconds to drop the page
    # (a bounded look for what must not happen; no time is asserted)
    assert not eventually(lambda: student.key not in CLASSROOM.seats.pages.get(class_id, {}), timeout=5)
    assert CLASSROOM.store.presence(class_id) == (1, 1, 1)


# --- who may change the class ------------------------------------------------------------------------


def test_a_student_can_neither_end_the_class_nor_lead_it_without_the_secret(app_url, pages, started, opened):
    lecturer = pages()
    student = pages()
    answer = started(lecturer)
    class_id, secret = answer["class"], answer["secret"]
    opened(student.key, class_id).next()
    before, kept = student.fingerprint(), lesson(class_id)
    for name, sent in (("end", {"key": student.key, "secret": secret}),  # the secret, from the wrong page
                       ("end", {"key": student.key}),
                       ("lead", {"key": student.key, "class": class_id}),
                       ("lead", {"key": student.key, "class": class_id, "secret": secrets.token_urlsafe(24)}),
                       ("lead", {"key": student.key, "class": class_id, "secret": secret[:-1]}),
                       ("lead", {"key": student.key, "class": class_id, "secret": 42}),
                       ("end", {"key": lecturer.key, "secret": secrets.token_urlsafe(24)})):
        refused = call(app_url, name, sent)
        assert refused.status_code == 403, (name, sent, refused.text)
        assert refused.json() == {"error": NOT_LECTURER}
    assert lesson(class_id) == kept and kept.ended == ""
    assert isinstance(student.tab.member, Follower) and isinstance(lecturer.tab.member, Leader)
    assert student.fingerprint() == before


@pytest.mark.parametrize("class_id", ["guessed", "AAAAAAAAAAAAAAA", "../../explorer:classes", "", 12, None,
                                      ["AAAAAAAAAAAAAAAA"]])
def test_a_guessed_or_malformed_class_is_not_found_with_a_sentence(app_url, pages, class_id):
    page = pages()
    class_id = secrets.token_urlsafe(12) if class_id == "guessed" else class_id
    before = page.fingerprint()
    for name, sent in (("stream", {"key": page.key, "class": class_id}),
                       ("lead", {"key": page.key, "class": class_id, "secret": secrets.token_urlsafe(24)})):
        refused = call(app_url, name, sent)
        assert refused.status_code == 404, (name, refused.text)
        assert refused.json() == {"error": NO_CLASS}
    assert page.tab.member is None
    assert page.fingerprint() == before
    follow = call(app_url, "follow", {"key": page.key})  # not in a class: said, not shown anything
    assert follow.status_code == 400 and "not in a class" in follow.json()["error"]


# --- what a call may carry ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["start", "lead", "follow", "end", "stream"])
def test_a_body_over_max_body_is_refused_with_413(app_url, pages, name):
    from ui.classroutes import MAX_BODY

    page = pages()
    sent = {"key": page.key, "class": "A" * 16, "secret": "x" * MAX_BODY}
    refused = call(app_url, name, sent)
    assert refused.status_code == 413
    assert refused.json() == {"error": f"A class call is at most {MAX_BODY:,} bytes; this one is larger."}
    assert page.tab.member is None


@pytest.mark.parametrize("name", ["start", "lead", "follow", "end", "stream"])
@pytest.mark.parametrize("content", [b"{not json", b"", b"[]", b'"key"', b"{}", b'{"key": 5}', b'{"key": null}',
                                     b"\xff\xfe"])
def test_junk_or_a_body_without_a_key_is_refused_with_a_sentence(app_url, name, content):
    refused = call(app_url, name, content=content)
    assert refused.status_code == 400
    assert refused.json() == {"error": NO_KEY}


@pytest.mark.parametrize("name", ["start", "lead", "follow", "end", "stream"])
def test_a_guessed_page_key_reaches_no_page(app_url, name):
    refused = call(app_url, name, {"key": secrets.token_urlsafe(24), "class": "A" * 16, "secret": "s" * 32})
    assert refused.status_code == 400
    assert "reload the page" in refused.json()["error"]


def test_a_get_is_not_a_class_call(app_url):
    assert httpx.get(f"{app_url}explorer/class/start", timeout=60).status_code == 405


# --- bounds ------------------------------------------------------------------------------------------


def test_past_the_classes_of_one_address_a_start_is_refused_429_with_a_sentence(app_url, pages, started,
                                                                               monkeypatch):
    monkeypatch.setattr(classroom, "CLASSES_PER_ADDRESS", 2)
    address = "198.51.100.57"  # its own: other tests' classes from the loopback address do not count here
    lives = [pages() for _ in range(3)]
    started(lives[0], address)
    started(lives[1], address)
    refused = call(app_url, "start", {"key": lives[2].key}, address=address)
    assert "At most 2 classes can run at once from one network address" in refused.json()["error"]
    assert lives[2].tab.member is None
    assert refused.status_code == 429


def test_past_the_classes_of_the_server_a_start_is_refused_429_with_a_sentence(app_url, pages, started,
                                                                              monkeypatch):
    monkeypatch.setattr(classroom, "MAX_CLASSES", 0)  # whatever else runs, no room for one more
    page = pages()
    refused = call(app_url, "start", {"key": page.key})
    assert refused.status_code == 429
    assert refused.json() == {"error": "This server runs at most 0 classes at once, and that many are running; "
                                       "try again later."}
    assert page.tab.member is None


def test_a_loop_of_starts_is_refused_past_its_networks_share_and_never_starts_a_thread_a_call(app_url, pages, started,
                                                                                             monkeypatch):
    """A page that starts a class ends the one it led: a loop of starts would churn classes under
    every other bound. A network starts its share, then is refused with a sentence (each refusal
    held, so a loop is answered no faster than it may start); the tour's planes are drawn by one
    thread at most, however many classes start at once."""
    from core.serving.tabs import Buckets
    from ui.classroutes import CLASSROOM

    monkeypatch.setattr(CLASSROOM, "starts", Buckets(2, 600.0))
    page = pages()
    for _ in range(2):
        started(page, "203.0.113.50")
    with ThreadPoolExecutor(8) as pool:
        refused = list(pool.map(lambda _: call(app_url, "start", {"key": page.key}, address="203.0.113.50"),
                                range(8)))
    assert {response.status_code for response in refused} == {429}
    assert refused[0].json() == {"error": "At most 2 classes can be started at once from one network address, then "
                                          "one every 600 s: try again in 600 s."}
    assert isinstance(page.tab.member, Leader) and page.tab.member.class_id == started.classes[-1]
    others = [pages() for _ in range(6)]  # other networks start theirs, six at once
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda i: started(others[i], f"198.51.100.{60 + i}"), range(6)))
    assert len([thread for thread in threading.enumerate() if thread.name == "class-warm"]) <= 1


def test_past_the_pages_of_one_class_a_student_is_refused_with_a_sentence(app_url, pages, started, opened,
                                                                         monkeypatch):
    monkeypatch.setattr(classroom, "MAX_FOLLOWERS", 1)
    lecturer = pages()
    first = pages()
    second = pages()
    class_id = started(lecturer)["class"]
    counts = opened(lecturer.key, class_id)
    opened(first.key, class_id).next()
    counts.until(lambda m: m["connected"] == 1)
    refused = call(app_url, "stream", {"key": second.key, "class": class_id})
    assert refused.status_code in (400, 429)
    assert refused.json() == {"error": "This class has 1 pages following it, as many as one class may have."}
    assert second.tab.member is None


def test_three_classes_whose_pages_closed_let_a_fourth_start_from_their_address_within_the_grace(
        app_url, pages, started, opened, monkeypatch):
    """Three students behind one school address press Start and close their pages: the classes
    run on for the grace (a reload comes back within it), then end, and the lecturer's Start from
    that address succeeds. The store's clock is moved, never waited for."""
    from ui.classroutes import CLASSROOM

    address = "203.0.113.77"
    lives = [pages() for _ in range(4)]
    classes, streams = [], []
    for page in lives[:3]:
        classes.append(started(page, address)["class"])
        streams.append(opened(page.key, classes[-1]))
        streams[-1].next()
    student = pages()
    follower = opened(student.key, classes[0])
    follower.next()
    for stream in streams:
        stream.close()
    assert eventually(lambda: not any(CLASSROOM._led[c].pages for c in classes))  # each page's going was seen
    refused = call(app_url, "start", {"key": lives[3].key}, address=address)
    assert refused.status_code == 429 and "close its lecturer's page" in refused.json()["error"]
    later = time.time() + classstore.GRACE_SECONDS
    monkeypatch.setattr(CLASSROOM.store, "clock", lambda: later)
    CLASSROOM.beat()
    assert follower.until(lambda m: m["ended"] != "")["ended"] == classstore.AWAY  # its students hear it ended
    assert follower.next() is CLOSED
    fourth = call(app_url, "start", {"key": lives[3].key}, address=address)
    assert fourth.status_code == 200, fourth.text
    started.classes.append(fourth.json()["class"])
    assert isinstance(lives[3].tab.member, Leader)


def test_twenty_simultaneous_joins_against_a_cap_of_five_admit_five(app_url, pages, started, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_FOLLOWERS", 5)
    from ui.classroutes import CLASSROOM

    lecturer = pages()
    class_id = started(lecturer)["class"]
    students = [pages() for _ in range(20)]
    gate, done = threading.Barrier(20), threading.Event()
    answers: dict[int, tuple[int, bytes]] = {}

    def join(i: int) -> None:
        gate.wait(WAIT)
        with httpx.Client(timeout=httpx.Timeout(10, read=60)) as client, client.stream(
                "POST", f"{app_url}explorer/class/stream",
                json={"key": students[i].key, "class": class_id}) as answer:
            chunks = answer.iter_bytes()  # kept: a generator let go closes the stream
            answers[i] = (answer.status_code, next(chunks))
            if answer.status_code == 200:
                done.wait(WAIT)  # held open, as a page holds its stream

    threads = [threading.Thread(target=join, args=(i,), daemon=True) for i in range(20)]
    for thread in threads:
        thread.start()
    try:
        assert eventually(lambda: len(answers) == 20)
        statuses = sorted(status for status, _ in answers.values())
        assert statuses == [200] * 5 + [429] * 15, statuses
        for i, (status, body) in answers.items():
            if status == 429:
                assert json.loads(body) == {"error": FULL.format(5)}
                assert students[i].tab.member is None  # a refused page is as it was
        assert CLASSROOM.store.presence(class_id)[0] == 5
    finally:
        done.set()
        for thread in threads:
            thread.join(WAIT)


def test_a_class_call_waits_its_turn_in_the_pages_account_and_past_its_share_is_refused_with_a_sentence(
        app_url, pages, started, monkeypatch):
    """Every class call that does work waits its turn on the page's route's lines, counted for its
    page and its address in the one account: a page flooding the class's routes is held by the same
    bounds as its keystrokes, refused with the account's sentence and status, and nothing changes."""
    from ui.admission import VISITORS

    lecturer, student = pages(), pages()
    answer = started(lecturer)
    class_id, secret = answer["class"], answer["secret"]
    before = lesson(class_id)
    monkeypatch.setattr(VISITORS, "per_tab", 0)  # no call of any page may wait: each is refused as it would
    for page, name, sent in ((student, "start", {}), (student, "lead", {"class": class_id, "secret": secret}),
                             (lecturer, "end", {"secret": secret}), (lecturer, "poll/ask", {"secret": secret,
                                                                                           "prompt": "A word?"}),
                             (student, "poll/answer", {"word": "queen", "round": 1})):
        refused = call(app_url, name, {"key": page.key, **sent})
        assert refused.status_code == 429, (name, refused.text)
        assert refused.json() == {"error": "This page already has 0 calls waiting for the server, so this one was "
                                           "not taken. Wait for their answers, then try again."}, name
        assert refused.headers["retry-after"] == "5"
    assert student.tab.member is None and isinstance(lecturer.tab.member, Leader)
    from ui.classroutes import CLASSROOM

    assert lesson(class_id) == before and CLASSROOM.rounds.round(class_id).number == 0


# --- another page leads; the class ends ---------------------------------------------------------------


def test_the_lecturers_link_on_another_page_leads_and_is_shown_the_lesson(app_url, pages, started):
    lecturer = pages("What the lecturer shows.")
    projector = pages("What the projector showed before.")
    answer = started(lecturer)
    class_id = answer["class"]
    led = call(app_url, "lead", {"key": projector.key, "class": class_id, "secret": answer["secret"]})
    assert led.status_code == 200, led.text
    assert led.json()["class"] == class_id
    assert "embed-plot" in led.json()["values"] and "address" in led.json()["values"]
    assert projector.tab.view.sentence_a == "What the lecturer shows."
    assert lesson_of(projector.tab.view) == lesson(class_id).query
    assert isinstance(projector.tab.member, Leader) and projector.tab.member.class_id == class_id
    projector.send(sentence_a="Now the projector leads.", sentence_b="")
    assert eventually(lambda: lesson(class_id).query == lesson_of(projector.tab.view))
    assert lesson(class_id).version == 2


def test_leading_a_class_never_changes_the_class_the_page_led_before(app_url, pages, started):
    lecturer = pages("The other class's lesson.")
    both = pages("This page's own class.")
    own = started(both)["class"]
    own_lesson = lesson(own)
    other = started(lecturer)
    led = call(app_url, "lead", {"key": both.key, "class": other["class"], "secret": other["secret"]})
    assert led.status_code == 200, led.text
    assert isinstance(both.tab.member, Leader) and both.tab.member.class_id == other["class"]
    kept = lesson(own)
    assert (kept.version, kept.query) == (own_lesson.version, own_lesson.query)


def test_the_lecturer_ends_the_class_and_the_students_streams_say_so_and_close(app_url, pages, started, opened):
    lecturer = pages()
    student = pages()
    another = pages()
    answer = started(lecturer)
    class_id = answer["class"]
    counts = opened(lecturer.key, class_id)
    counts.next()
    streams = [opened(student.key, class_id), opened(another.key, class_id)]
    for stream in streams:
        stream.next()
    ended = call(app_url, "end", {"key": lecturer.key, "secret": answer["secret"]})
    assert ended.status_code == 200 and ended.json() == {"ended": ENDED}
    for stream in streams:
        assert stream.until(lambda m: m["ended"] != "")["ended"] == ENDED
        assert stream.next() is CLOSED  # the server closed it
    assert counts.until(lambda m: m["ended"] != "")["ended"]
    assert counts.next() is CLOSED
    assert lecturer.tab.member is None
    again = call(app_url, "stream", {"key": student.key, "class": class_id})
    assert again.status_code == 404 and again.json() == {"error": ENDED}
    assert call(app_url, "end", {"key": lecturer.key, "secret": answer["secret"]}).status_code == 403
