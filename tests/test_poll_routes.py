"""A round of answers through the launched app (ui/classroutes.py): the lecturer asks, students answer,
every class stream carries the round, and the lecturer's plane draws the words.

Pages, streams and classes as tests/test_class_routes.py makes them (its fixtures). Hostile
bodies get a sentence and change nothing; a student is not the lecturer; a round ends with its
class. What travels is waited for, never timed.
"""

from __future__ import annotations

import orjson
import pytest

from tests.test_class_routes import call, opened, pages, started  # noqa: F401, F811 (the class tests' fixtures)
from tests.waiting import eventually


def poll(app_url: str, name: str, tab, address: str | None = None, **sent):
    return call(app_url, f"poll/{name}", {"key": tab.key, **sent}, address=address)


def redraw(app_url: str, tab, version: int) -> dict:
    """The page's {poll} call on its route, as assets/classroom.js sends it: the values that changed."""
    import httpx

    answer = httpx.post(f"{app_url}explorer/live", json={"key": tab.key, "change": {"poll": version}}, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


def class_trace(values: dict) -> dict | None:
    figure = orjson.loads(values["embed-plot"])
    return next((trace for trace in figure["data"] if trace["name"] == "class"), None)


@pytest.fixture()
def lesson(app_url, pages, started, opened):  # noqa: F811
    """A class with its lecturer and one following student, both streams open: (lecturer, secret,
    student, the lecturer's stream, the student's stream)."""
    lecturer = pages("The king and the queen of the castle.")
    student = pages()
    answer = started(lecturer)
    lecturer_stream = opened(lecturer.key, answer["class"])
    student_stream = opened(student.key, answer["class"])
    assert call(app_url, "follow", {"key": student.key}).status_code == 200
    student_stream.until(lambda m: m["shown"] >= 1)
    return lecturer, answer["secret"], student, lecturer_stream, student_stream


def test_a_round_is_asked_answered_heard_and_drawn(app_url, lesson):
    lecturer, secret, student, lecturer_stream, student_stream = lesson
    asked = poll(app_url, "ask", lecturer, secret=secret, prompt="Type a word you would put next to king.")
    assert asked.status_code == 200, asked.text
    round_ = asked.json()["poll"]
    assert round_["open"] and round_["prompt"] == "Type a word you would put next to king."
    heard = student_stream.until(lambda m: m["poll"]["round"] == round_["round"] and m["poll"]["open"])
    assert "words" not in heard["poll"] and heard["own"] == []  # a student hears no lecturer's detail

    sent = poll(app_url, "answer", student, word="Queen", round=round_["round"])
    assert sent.status_code == 200, sent.text
    assert sent.json()["own"] == ["queen"]
    counted = lecturer_stream.until(lambda m: m["poll"]["answers"] == 1)["poll"]
    assert counted["students"] == 1 and counted["drawn"] == [["queen", 1]]
    assert student_stream.until(lambda m: m["own"] == ["queen"])

    for tab in (lecturer, student):  # each page asks its plot again; the class trace has the word
        trace = class_trace(redraw(app_url, tab, counted["version"])["values"])
        assert trace is not None and trace["hovertext"][0].startswith("queen ×1")
    assert redraw(app_url, lecturer, counted["version"]).get("values", {}).get("embed-plot") is None  # drawn already


def test_hiding_a_word_takes_it_and_its_look_alikes_off_every_plane(app_url, lesson):
    lecturer, secret, student, lecturer_stream, _ = lesson
    number = poll(app_url, "ask", lecturer, secret=secret, prompt="A word?").json()["poll"]["round"]
    for word in ("queen", "prince", "ѕсоре"):  # the last in Cyrillic letters only: a word that looks like scope
        assert poll(app_url, "answer", student, word=word, round=number).status_code == 200
    lecturer_stream.until(lambda m: m["poll"]["answers"] == 3)
    assert poll(app_url, "hide", lecturer, secret=secret, word="scope", on=True).status_code == 200
    hidden = poll(app_url, "hide", lecturer, secret=secret, word="prince", on=True)
    assert hidden.status_code == 200, hidden.text
    assert [word for word, _ in hidden.json()["poll"]["drawn"]] == ["queen"]
    version = hidden.json()["poll"]["version"]
    for tab in (lecturer, student):
        trace = class_trace(redraw(app_url, tab, version)["values"])
        assert [text.split(" ×")[0] for text in trace["hovertext"]] == ["queen"]


def test_the_csv_is_the_lecturers_alone(app_url, lesson):
    lecturer, secret, student, lecturer_stream, _ = lesson
    number = poll(app_url, "ask", lecturer, secret=secret, prompt="A word?").json()["poll"]["round"]
    assert poll(app_url, "answer", student, word="queen", round=number).status_code == 200
    lecturer_stream.until(lambda m: m["poll"]["answers"] == 1)
    answer = poll(app_url, "csv", lecturer, secret=secret)
    assert answer.status_code == 200, answer.text
    assert answer.json()["csv"].splitlines() == ["word,count,hidden,approved", "queen,1,false,false"]
    assert poll(app_url, "csv", student, secret=secret).status_code == 403


@pytest.mark.parametrize(("name", "sent"), [
    ("ask", {"prompt": "x" * 121}),
    ("ask", {"prompt": "a\u0000b"}),
    ("ask", {"prompt": ["not", "text"]}),
    ("ask", {"prompt": "ok", "review": "yes"}),
    ("hide", {"word": "queen", "on": "true"}),
    ("review", {"on": 1}),
])
def test_a_lecturers_hostile_body_gets_a_sentence_and_changes_nothing(app_url, lesson, name, sent):
    from ui.classroutes import CLASSROOM

    lecturer, secret, _, _, _ = lesson
    before = CLASSROOM.rounds.round(lecturer.tab.member.class_id)
    answer = poll(app_url, name, lecturer, secret=secret, **sent)
    assert answer.status_code == 400 and answer.json()["error"].endswith("."), answer.text
    assert CLASSROOM.rounds.round(lecturer.tab.member.class_id) == before


@pytest.mark.parametrize("sent", [
    {"word": "<b>x</b>"}, {"word": "two words"}, {"word": "x" * 31}, {"word": ""}, {"word": 7},
    {"word": "queen", "round": "1"}, {"word": "queen", "round": True}, {"word": "queen", "round": 99},
])
def test_a_students_hostile_answer_gets_a_sentence_and_changes_nothing(app_url, lesson, sent):
    from ui.classroutes import CLASSROOM

    lecturer, secret, student, lecturer_stream, _ = lesson
    number = poll(app_url, "ask", lecturer, secret=secret, prompt="A word?").json()["poll"]["round"]
    answer = poll(app_url, "answer", student, **{"round": number, **sent})
    assert answer.status_code == 400, answer.text
    said = answer.json()["error"]
    assert said.endswith(".") and "<b>" not in said  # the sentence never echoes markup
    # nothing was kept: the page's next word is its first, and the class counts it alone
    assert poll(app_url, "answer", student, word="queen", round=number).json()["own"] == ["queen"]
    counted = lecturer_stream.until(lambda m: m["poll"]["answers"] >= 1)["poll"]
    assert (counted["answers"], counted["drawn"]) == (1, [["queen", 1]])
    assert CLASSROOM.rounds.round(lecturer.tab.member.class_id).number == number


def test_a_student_is_not_the_lecturer(app_url, lesson):
    from ui.classroutes import CLASSROOM

    lecturer, secret, student, _, _ = lesson
    before = CLASSROOM.rounds.round(lecturer.tab.member.class_id)
    for name, sent in (("ask", {"prompt": "Mine?"}), ("clear", {}), ("hide", {"word": "queen", "on": True})):
        for secret_sent in (secret, "x" * 32, None):  # even with the lecturer's secret, from another page
            answer = poll(app_url, name, student, secret=secret_sent, **sent)
            assert answer.status_code in (400, 403), answer.text
    wrong = poll(app_url, "ask", lecturer, secret="y" * 32, prompt="Forged?")
    assert wrong.status_code == 403, wrong.text
    assert CLASSROOM.rounds.round(lecturer.tab.member.class_id) == before


def test_a_fourth_word_is_refused_and_the_same_word_counts_once(app_url, lesson):
    lecturer, secret, student, lecturer_stream, _ = lesson
    number = poll(app_url, "ask", lecturer, secret=secret, prompt="Three words?").json()["poll"]["round"]
    for word in ("queen", "queen", "prince", "crown"):
        answer = poll(app_url, "answer", student, word=word, round=number)
        assert answer.status_code == 200, answer.text
    assert answer.json()["own"] == ["queen", "prince", "crown"]
    fourth = poll(app_url, "answer", student, word="throne", round=number)
    assert fourth.status_code in (400, 429) and "3" in fourth.json()["error"], fourth.text
    assert lecturer_stream.until(lambda m: m["poll"]["answers"] == 3)["poll"]["students"] == 1


def test_a_flood_of_answers_from_one_page_is_refused_with_a_sentence(app_url, pages, started, opened):  # noqa: F811
    """Many pages of one address answering at once: past the per-address or per-student limit a
    sentence says when to try again, and what was acknowledged is counted."""
    lecturer = pages()
    answer = started(lecturer)
    secret, class_id = answer["secret"], answer["class"]
    students = [pages() for _ in range(3)]
    for student in students:
        opened(student.key, class_id)
    number = poll(app_url, "ask", lecturer, secret=secret, prompt="Go!").json()["poll"]["round"]
    statuses = []
    for student in students:
        for word in ("one", "two", "three", "four", "five"):
            statuses.append(poll(app_url, "answer", student, word=word, round=number, address="203.0.113.9"))
    ok = [a for a in statuses if a.status_code == 200]
    refused = [a for a in statuses if a.status_code != 200]
    assert refused and all(a.json()["error"] for a in refused)
    from ui.classroutes import CLASSROOM

    assert eventually(lambda: CLASSROOM.rounds.round(class_id).answers == len(ok)), CLASSROOM.rounds.round(class_id)


def test_a_students_tabs_share_its_seat_and_its_words_and_its_classmates_behind_one_address_answer(
        app_url, pages, started, opened):  # noqa: F811
    """Tabs of one browser keep one seat (the stream's first message gives it, the page keeps it for
    its other tabs): whatever number of them answer, the student's words count at most 3, and a
    classmate behind the same school address still has its answer taken."""
    from tests.test_class_routes import Stream

    lecturer = pages()
    answer = started(lecturer)
    secret, class_id = answer["secret"], answer["class"]
    first, *others = [pages() for _ in range(4)]
    seat = opened(first.key, class_id).next()["seat"]
    streams = [Stream(app_url, {"key": tab.key, "class": class_id, "seat": seat}) for tab in others]
    try:
        assert {stream.next()["seat"] for stream in streams} == {seat}
        number = poll(app_url, "ask", lecturer, secret=secret, prompt="Type a word.").json()["poll"]["round"]
        statuses = [poll(app_url, "answer", tab, word=word, round=number, address="203.0.113.9").status_code
                    for word, tab in zip(("queen", "prince", "crown"), (first, *others), strict=False)]
        fourth = poll(app_url, "answer", others[-1], word="throne", round=number, address="203.0.113.9")
        assert statuses == [200] * 3 and fourth.status_code == 400
        assert fourth.json()["error"] == "You have sent 3 words for this question, as many as one student may."
        streams[0].until(lambda m: m["own"] == ["queen", "prince", "crown"])  # each tab shows the student's words
        classmate = pages()
        opened(classmate.key, class_id).next()
        taken = poll(app_url, "answer", classmate, word="throne", round=number, address="203.0.113.9")
        assert taken.status_code == 200 and taken.json()["own"] == ["throne"]
        lecturer_counts = opened(lecturer.key, class_id)
        counts = lecturer_counts.until(lambda m: m.get("connected") == 5)
        assert (counts["connected"], counts["students"]) == (5, 2)  # five pages, two students
    finally:
        for stream in streams:
            stream.close()


def test_a_round_ends_with_its_class(app_url, lesson):
    from ui.classroutes import CLASSROOM

    lecturer, secret, student, _, student_stream = lesson
    class_id = lecturer.tab.member.class_id
    number = poll(app_url, "ask", lecturer, secret=secret, prompt="Before the end?").json()["poll"]["round"]
    assert call(app_url, "end", {"key": lecturer.key, "secret": secret}).status_code == 200
    student_stream.wait_closed()
    answer = poll(app_url, "answer", student, word="late", round=number)
    assert answer.status_code in (400, 404), answer.text
    assert CLASSROOM.rounds.round(class_id).answers == 0
