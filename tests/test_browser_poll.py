"""A round of answers in Chromium (ui/classroutes.py, assets/classroom.js, core/plane/classwords.py).

A round with review, run by keyboard on a projector and answered on a phone, axe-clean; the
helpers the lecture's round uses. The round as a lecture lives it (queen, queen and prince sent
from a laptop and a phone, their points where the core places them, Hide, words and prompts of
markup shown as text) is in tests/test_browser_lecture.py's driven lecture. One browser, a
context per page; every wait is for an event on the page, none for time.
"""

from __future__ import annotations

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
