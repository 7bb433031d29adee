"""A round of answers in Chromium (ui/classroutes.py, assets/classroom.js, core/plane/classwords.py).

The lecture as it happens: the lecturer starts a class and asks for a word; three students (one
on a phone, by touch) send queen, queen and prince; the lecturer's plot gets the class trace,
its points where the core places those words in the lecturer's plane; hiding prince takes it
off the lecturer's plot and a follower's; a word of markup is refused with a sentence shown as
text, and a prompt of markup is shown as text. One browser, a context per page; every wait is
for an event on the page, none for time.
"""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

from tests.browser import PLOT
from tests.test_browser_class import STARTED, classes_end, counts, start_class  # noqa: F401 (its fixture)

pytestmark = pytest.mark.browser

# the class trace's hover texts and points, as plotly drew them
CLASS_TRACE = f"""() => {{
    const trace = ({PLOT})._fullData.find(t => t.name === 'class');
    return trace ? {{hover: Array.from(trace.hovertext), x: Array.from(trace.x), y: Array.from(trace.y)}} : null;
}}"""
HAS = f"""(words) => {{
    const trace = ({PLOT}) && ({PLOT}).data.find(t => t.name === 'class');
    const hover = trace ? Array.from(trace.hovertext).map(h => h.split('<br>')[0]) : [];
    return JSON.stringify(hover) === JSON.stringify(words);
}}"""


def send(page, word: str, *, tap: bool = False) -> None:
    page.locator("#poll-answer").fill(word)
    if tap:
        page.locator("#poll-send").tap()
    else:
        page.locator("#poll-answer").press("Enter")


def core_points(class_id: str, drawn: tuple) -> tuple[np.ndarray, list[str]]:
    """Where the core places these words in the lecturer's plane (its tab's view and tables), and
    for each the sentence's word whose token point is nearest it there (markers and punctuation
    left out: a listener hears a word)."""
    from core.plane.classwords import Answers
    from core.plane.pipeline import explore_view
    from core.serving.classroom import Leader
    from core.serving.tabs import TABS

    tab = next(tab for tab in TABS._lives.values() if isinstance(tab.member, Leader)
               and tab.member.class_id == class_id)
    scene = explore_view(tab.view, tab.session, answers=Answers(drawn)).scene
    points = scene.answers.points["token"]
    words = [i for i, special in enumerate(scene.special_mask)
             if not special and any(c.isalnum() for c in scene.tokens[i])]
    apart = np.linalg.norm(points[:, None, :] - scene.points["token"][words][None, :, :], axis=-1)
    return points, [scene.tokens[words[i]] for i in apart.argmin(axis=1)]


def test_a_lecturer_asks_three_students_answer_and_the_plane_shows_them(open_page, phones):
    lecturer = open_page()
    link = start_class(lecturer)
    class_id = parse_qs(urlsplit(link).query)["class"][0]
    students = [open_page(f"class={class_id}"), open_page(f"class={class_id}"), phones(f"class={class_id}")]
    counts(lecturer, 3, 3)

    lecturer.locator("#poll-prompt").fill("Type a word you would put next to king.")
    lecturer.locator("#poll-ask").click()
    for student in students:
        student.wait_for_function("() => (document.getElementById('poll-question') || {}).textContent === "
                                  "'Type a word you would put next to king.'", timeout=60_000)
    send(students[0], "queen")
    send(students[1], "Queen")
    send(students[2], "prince", tap=True)
    for student, word in zip(students, ("queen", "queen", "prince"), strict=True):
        student.wait_for_function("(word) => document.getElementById('poll-own').textContent === "
                                  "`You sent: ${word} (2 left)`", arg=word, timeout=60_000)

    acknowledged = time.monotonic()
    lecturer.wait_for_function(HAS, arg=["queen ×2", "prince ×1"], timeout=60_000)
    drawn_after = time.monotonic() - acknowledged
    lecturer.wait_for_function("() => document.getElementById('poll-status').textContent.includes("
                               "'3 answers from 3 students')", timeout=60_000)
    drawn = lecturer.evaluate(CLASS_TRACE)
    expected, nearest = core_points(class_id, (("queen", 2), ("prince", 1)))
    np.testing.assert_allclose(np.column_stack([drawn["x"], drawn["y"]]), expected, rtol=1e-5, atol=1e-5)
    # what a screen reader hears of them: the plane's description names each word, its count and
    # the sentence's word drawn nearest it
    said = ("The class's words, in the token group, the most given first: "
            f"queen (2 answers, drawn nearest {nearest[0]}) and prince (1 answer, drawn nearest {nearest[1]}).")
    lecturer.wait_for_function("(said) => document.querySelector('#plot-description').textContent.includes(said)",
                               arg=said, timeout=60_000)
    follower = students[0]
    follower.wait_for_function(HAS, arg=["queen ×2", "prince ×1"], timeout=60_000)
    follower.wait_for_function(f"() => ({PLOT}).data.some(t => t.name === 'your words')", timeout=60_000)

    lecturer.locator('[data-poll-hide="prince"]').click()
    hidden = time.monotonic()
    lecturer.wait_for_function(HAS, arg=["queen ×2"], timeout=60_000)
    follower.wait_for_function(HAS, arg=["queen ×2"], timeout=60_000)
    print(f"the lecturer's plot had the answers {drawn_after:.2f} s after the last was acknowledged; prince was off "
          f"the lecturer's and a follower's plots {time.monotonic() - hidden:.2f} s after Hide")  # measured only
    students[2].wait_for_function(HAS, arg=["queen ×2"], timeout=60_000)  # the phone follows too

    send(follower, "<b>x</b>")  # refused: the sentence is shown as text
    follower.wait_for_function("() => document.getElementById('poll-said').textContent.length > 2",
                               timeout=60_000)
    assert follower.locator("#poll-student b").count() == 0
    assert follower.locator("#poll-own").text_content() == "You sent: queen (2 left)"
    send(follower, "QUEEN")  # the same word again: counted once, and the student is told so
    follower.wait_for_function("() => document.getElementById('poll-said').textContent.includes('already')",
                               timeout=60_000)
    assert follower.locator("#poll-own").text_content() == "You sent: queen (2 left)"

    lecturer.locator("#poll-prompt").fill("<i>Which</i> word & why?")
    lecturer.locator("#poll-ask").click()
    students[2].wait_for_function("() => (document.getElementById('poll-question') || {}).textContent === "
                                  "'<i>Which</i> word & why?'", timeout=60_000)
    assert students[2].locator("#poll-student i").count() == 0
    lecturer.wait_for_function(HAS, arg=[], timeout=60_000)  # a new round: no words yet
    for page in (lecturer, *students):
        assert page.errors == []


def test_a_round_by_keyboard_on_a_projector_and_a_phone_is_axe_clean(open_page, phones):
    """The lecturer's box worked from the keyboard in presenter mode at 1920 × 1080 (review first
    on, so each word has its Approve), a phone's banner with the prompt, its box and a refusal:
    axe finds nothing against WCAG 2.2 A/AA, and the phone's box and Send fit its screen."""
    from tests.test_accessibility import tab_to, violations

    lecturer = open_page("presenter=1", viewport=(1920, 1080))
    class_id = parse_qs(urlsplit(start_class(lecturer)).query)["class"][0]
    student = phones(f"class={class_id}")
    counts(lecturer, 1, 1)
    lecturer.locator("#poll-review").check()
    lecturer.locator("#poll-prompt").focus()
    lecturer.keyboard.type("Type an animal.")
    tab_to(lecturer, "e.id === 'poll-ask'", 6)
    lecturer.keyboard.press("Enter")
    student.wait_for_function("() => (document.getElementById('poll-question') || {}).textContent === "
                              "'Type an animal.'", timeout=60_000)
    send(student, "otter", tap=True)
    send(student, "two words", tap=True)
    student.wait_for_function("() => document.getElementById('poll-said').textContent.includes('one word')",
                              timeout=60_000)
    lecturer.wait_for_function("() => document.querySelector('[data-poll-approve=\"otter\"]') !== null",
                               timeout=60_000)
    lecturer.locator('[data-poll-approve="otter"]').focus()
    lecturer.keyboard.press("Enter")  # approved from the keyboard: drawn, and the focus stays on its row
    lecturer.wait_for_function(HAS, arg=["otter ×1"], timeout=60_000)
    assert lecturer.evaluate("() => document.activeElement.dataset.pollApprove") == "otter"
    for box in ("#poll-answer", "#poll-send"):
        edge = student.locator(box).bounding_box()
        assert edge is not None and edge["x"] >= 0 and edge["x"] + edge["width"] <= 390, box
    assert lecturer.locator("#poll-ask").bounding_box()["width"] > 0
    found = {"lecturer": violations(lecturer), "phone": violations(student)}
    assert found == dict.fromkeys(found, [])
