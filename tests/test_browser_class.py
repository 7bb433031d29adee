"""A class in Chromium: a lecturer's page leads, students' pages follow (core/serving/classroom.py,
ui/classroutes.py, assets/classroom.js).

The lecture as it happens: the lecturer starts a class from the Tour panel and hands out the
student link; three students open it; one wanders off by typing; the lecturer presses Next, then
jumps to a step with the step picker.
The two who follow show what the lecturer's page shows, point for point (a virtual screen reader
on one hears the step's title and text: tests/screenreader.py); the one who wandered
keeps their own view until they press "Follow the lecturer again". The lecturer's page counts
them all along. The same through the class server (two workers and Redis) is in
tests/test_scaleout.py.
"""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlsplit

import pytest

from core.view import tour
from tests.browser import COORDINATES, settle, wait_for_text
from tests.screenreader import hear, heard, listen, screen_reader  # noqa: F401 (its fixture)

pytestmark = pytest.mark.browser

BANNER = "() => (document.querySelector('#class-banner') || {}).innerText || ''"


STARTED: list[str] = []  # the classes this module's tests started, ended after each test


def start_class(lecturer) -> str:
    """Press "Start a class" on the lecturer's page; the student link it shows."""
    lecturer.get_by_role("tab", name="Tour").click()
    lecturer.locator("#class-start").click()
    lecturer.locator("#class-student-link").wait_for()
    link = lecturer.locator("#class-student-link").input_value()
    STARTED.append(parse_qs(urlsplit(link).query)["class"][0])
    return link


@pytest.fixture(autouse=True)
def classes_end():
    """Every class a test here started ends with it: each counts against the loopback address's
    classes, which other tests on this worker's app start too."""
    yield
    from ui.classroutes import CLASSROOM

    while STARTED:
        CLASSROOM.store.publish(STARTED.pop(), None, None, ended="The test is over.")


def counts(page, connected: int, following: int) -> None:
    """Until the lecturer's banner counts this many pages connected and following."""
    page.wait_for_function(
        """([c, f]) => {
            const n = (id) => Number((document.getElementById(id) || {}).innerText);
            return n('class-connected') === c && n('class-following') === f;
        }""", arg=[connected, following], timeout=60_000)


def shows_the_same(student, lecturer, timeout_s: float = 60) -> None:
    """Until the student's plot is the lecturer's, point for point. The lecturer's is read again
    whenever the student's has not caught up with it: a class's words arriving redraw both pages,
    so the plot read first may already be gone from the lecturer's screen."""
    from playwright.sync_api import TimeoutError as Late

    same = f"(expected) => JSON.stringify(({COORDINATES})()) === JSON.stringify(expected)"
    deadline = time.monotonic() + timeout_s
    while True:
        expected = lecturer.evaluate(COORDINATES)
        try:
            student.wait_for_function(same, arg=expected, timeout=2_000)
        except Late:
            if time.monotonic() > deadline:
                raise AssertionError(f"the student's plot {student.evaluate(COORDINATES)} is not the "
                                     f"lecturer's {lecturer.evaluate(COORDINATES)}") from None
            continue
        if lecturer.evaluate(COORDINATES) == expected:
            return


def test_students_follow_the_lecturers_next_and_one_who_wandered_comes_back(open_page, screen_reader):  # noqa: F811
    lecturer = open_page()
    link = start_class(lecturer)
    class_id = parse_qs(urlsplit(link).query)["class"][0]
    assert f"class={class_id}" in lecturer.url  # F5 keeps the class
    assert "lead" not in lecturer.url  # the lecturer's secret is never in the address bar
    students = [open_page(f"class={class_id}") for _ in range(3)]
    counts(lecturer, 3, 3)
    for student in students:
        student.wait_for_function(f"() => ({BANNER})().includes('Following the lecturer')", timeout=60_000)
        shows_the_same(student, lecturer)
    follower, other, wanderer = students

    wanderer.locator("#sentence-a textarea").fill("my own words about a violin")
    wanderer.wait_for_function(f"() => ({BANNER})().includes('Exploring on your own')", timeout=60_000)
    counts(lecturer, 3, 2)
    settle(wanderer)  # the banner changes as the page sends the words; the plot comes after
    own = wanderer.evaluate(COORDINATES)

    listen(follower, screen_reader)  # a blind student following: what a screen reader says on its page
    heard_before = len(heard(follower))
    lecturer.locator("#tour-next").click()
    settle(lecturer)
    assert "step=1" in lecturer.url
    said = [phrase for phrase in hear(follower, heard_before, "polite: Step 1 of", timeout=60)[heard_before:]
            if phrase.startswith("polite: Step ")]
    assert said and said[0].startswith(f"polite: Step 1 of {len(tour.STEPS)}: {tour.step(1).title}. BERT reads")
    assert not any(mark in phrase for phrase in heard(follower) for mark in ("<", "&lt;", "&amp;", "class="))
    for student in (follower, other):
        shows_the_same(student, lecturer)
        student.wait_for_function(f"() => ({BANNER})().includes('step 1')", timeout=60_000)
        assert "step=1" in student.url and f"class={class_id}" in student.url
        # the step's text came too, not only the plot, and a screen reader hears it: its title and text
        wait_for_text(student, "#tour-text", "Step 1 of", timeout=60_000)
        wait_for_text(student, "#tour-said",
                      f"Step 1 of {len(tour.STEPS)}: {tour.step(1).title}. {tour.step(1).text[:40]}", timeout=60_000)
    settle(wanderer)
    assert wanderer.evaluate(COORDINATES) == own  # left as the student made it
    assert "violin" in wanderer.locator("#sentence-a textarea").input_value()
    wanderer.wait_for_function(f"() => ({BANNER})().includes('The lecturer is on step 1')", timeout=60_000)

    # a jump in the step picker, from the keyboard, is followed as Next is
    lecturer.locator("#tour-step").focus()
    lecturer.keyboard.press("4")
    wait_for_text(lecturer, "#tour-text", "Step 4 of", timeout=60_000)
    settle(lecturer)
    assert "step=4" in lecturer.url
    # the one it chose
    wait_for_text(lecturer, "#tour-said", f"Step 4 of {len(tour.STEPS)}: {tour.step(4).title}", timeout=60_000)
    for student in (follower, other):
        shows_the_same(student, lecturer)
        student.wait_for_function(f"() => ({BANNER})().includes('step 4')", timeout=60_000)
        wait_for_text(student, "#tour-text", "Step 4 of", timeout=60_000)
        wait_for_text(student, "#tour-said", f"Step 4 of {len(tour.STEPS)}: {tour.step(4).title}", timeout=60_000)
        assert "step=4" in student.url and student.locator("#tour-step").input_value() == "4"

    wanderer.locator("#class-follow").click()
    shows_the_same(wanderer, lecturer)
    wanderer.wait_for_function(f"() => ({BANNER})().includes('Following the lecturer')", timeout=60_000)
    counts(lecturer, 3, 3)
    for page in (lecturer, *students):
        assert page.errors == []


def test_f5_keeps_a_student_following_and_the_lecturer_leading(open_page):
    lecturer = open_page()
    class_id = parse_qs(urlsplit(start_class(lecturer)).query)["class"][0]
    student = open_page(f"class={class_id}")
    counts(lecturer, 1, 1)
    lecturer.locator("#tour-next").click()
    settle(lecturer)  # its own plot drawn first: that is what the student's is compared with
    shows_the_same(student, lecturer)

    seat = f"() => localStorage.getItem('embedding-explorer-seat:{class_id}')"
    kept = student.evaluate(seat)
    assert kept and re.fullmatch(r"[\w-]{16}\.[\w-]{22}", kept)  # the browser's seat in the class, signed
    student.reload()
    student.wait_for_function(f"() => ({BANNER})().includes('Following the lecturer (step 1)')", timeout=60_000)
    assert student.evaluate(seat) == kept  # F5 keeps the seat: the same student
    second_tab = open_page(f"class={class_id}")  # another tab of the same browser: the same student too
    lecturer.wait_for_function("() => document.getElementById('class-status').innerText === "
                               "'Class: 2 connected (1 student), 2 following'", timeout=60_000)
    assert second_tab.evaluate(seat) == kept
    second_tab.close()
    lecturer.reload()  # the secret stays in this tab's session storage: it leads again
    lecturer.wait_for_function("() => document.getElementById('class-connected') !== null", timeout=60_000)
    settle(lecturer)
    lecturer.locator("#tour-next").click()
    settle(lecturer)
    assert "step=2" in lecturer.url
    shows_the_same(student, lecturer)
    student.wait_for_function(f"() => ({BANNER})().includes('step 2')", timeout=60_000)
    counts(lecturer, 1, 1)


def test_the_lecturer_link_on_another_screen_leads_and_ending_the_class_tells_the_students(open_page):
    lecturer = open_page()
    start_class(lecturer)
    lecturer.locator("#class-box details summary").click()  # folded, so a projector does not show it
    lecturer_link = lecturer.locator("#class-lecturer-link").input_value()
    query, secret = urlsplit(lecturer_link).query, urlsplit(lecturer_link).fragment
    assert secret.startswith("lead=")
    student = open_page(query)
    counts(lecturer, 1, 1)

    projector = open_page(f"{query}#{secret}")  # the lecturer's link, opened on the projector's computer
    projector.wait_for_function("() => document.getElementById('class-connected') !== null", timeout=60_000)
    assert "lead=" not in projector.url  # taken out of the address bar as soon as it was read
    projector.locator("#tour-next").click()
    settle(projector)
    shows_the_same(student, projector)

    lecturer.locator("#class-end").click()
    student.wait_for_function(f"() => ({BANNER})().includes('The lecturer ended the class')", timeout=60_000)
    assert not student.locator("#class-follow").count()


def test_a_student_on_a_phone_follows_each_step_onto_the_screen(open_page):
    """A phone at 390×844 follows the lecturer's Next: the step's text and sentences come, the
    banner says so, and the page puts the step on screen as its own Next would — its buttons at
    the top, its text and plot under them, none of them under the banner. Before, a following
    phone stayed scrolled to the top of the page, the plot off screen."""
    lecturer = open_page()
    class_id = parse_qs(urlsplit(start_class(lecturer)).query)["class"][0]
    phone = open_page(f"class={class_id}", (390, 844))
    phone.wait_for_function(f"() => ({BANNER})().includes('Following the lecturer')", timeout=60_000)
    for number in (1, 2):
        lecturer.locator("#tour-next").click()
        phone.wait_for_function(f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')",
                                timeout=60_000)
        phone.wait_for_function(f"() => ({BANNER})().includes('step {number}')", timeout=60_000)
        settle(phone)
        assert phone.locator("#sentence-a textarea").input_value() == \
            lecturer.locator("#sentence-a textarea").input_value()
        banner = phone.locator("#class-banner").bounding_box()
        assert banner["y"] + banner["height"] <= 844 and banner["width"] <= 390  # on the screen, not beside it
        for selector in ("#tour-next", "#tour-text", "#embed-plot .js-plotly-plot"):
            box = phone.locator(selector).first.bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= banner["y"], f"step {number}: {selector} off screen"


@pytest.mark.parametrize(("viewport", "query"), [((1440, 900), ""), ((1920, 1080), "presenter=1")],
                         ids=["1440x900", "presenter-1920x1080"])
def test_the_banner_covers_none_of_the_plot(open_page, viewport, query):
    """The banner of a student exploring on their own (its widest) stands clear of the plot and
    its corner note, whatever is scrolled into view. Before, centred at the bottom, it covered
    the plot's corner note."""
    lecturer = open_page()
    class_id = parse_qs(urlsplit(start_class(lecturer)).query)["class"][0]
    student = open_page("&".join(filter(None, [f"class={class_id}", query])), viewport)
    student.wait_for_function(f"() => ({BANNER})().includes('Following the lecturer')", timeout=60_000)
    student.locator("#sentence-a textarea").fill("my own words about a violin")
    student.wait_for_function(f"() => ({BANNER})().includes('Exploring on your own')", timeout=60_000)
    settle(student)
    banner = student.locator("#class-banner").bounding_box()
    for scroll in (0, 200, 400, 10_000):
        student.evaluate(f"() => window.scrollTo(0, {scroll})")
        plot = student.locator("#embed-plot .js-plotly-plot").bounding_box()
        assert banner["x"] >= plot["x"] + plot["width"] or plot["y"] >= banner["y"] + banner["height"] \
            or plot["y"] + plot["height"] <= banner["y"], f"the banner covers the plot (scrolled {scroll} px)"
