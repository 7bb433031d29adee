"""The lecture hall in a real Chromium: every tour step readable at 1920×1080 in presenter mode
and at 1440×900, a phone, the keyboard alone, the PNG, search, 3-D, the listing's layer, a
live loss curve, and the legend's choices kept while typing.

What the page shows is read from the plot's own data and the DOM's boxes, never from pixels;
screenshots of each tour step go to $TEST_ARTIFACTS (default /tmp/embedding-explorer-artifacts)
for a person to look at.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
import pytest
from PIL import Image

from core.drawing.palette import contrast, luminance, rgb
from core.view.tour import STEPS
from tests.browser import COORDINATES, LABELS, PLOT, label_faults, open_accordion, overlap, settle, wait_for_text
from tests.test_browser_class import classes_end, counts, start_class  # noqa: F401 (its fixture)
from tests.test_browser_poll import CLASS_TRACE, HAS, core_points, send
from tests.test_tour import named_in

pytestmark = pytest.mark.browser

ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", "/tmp/embedding-explorer-artifacts"))

# for each point group drawn: its spread in pixels as a share of its own panel's width and height
GROUP_SPANS = f"""() => {{
    const gd = {PLOT}, L = gd._fullLayout, out = {{}};
    for (const t of gd._fullData) {{
        if (!['token', 'position', 'segment', 'sum', 'output'].includes(t.name) || t.visible !== true) continue;
        const xa = L[t.xaxis.replace('x', 'xaxis')], ya = L[t.yaxis.replace('y', 'yaxis')];
        const xs = Array.from(t.x, v => xa.l2p(v)), ys = Array.from(t.y, v => ya.l2p(v));
        if (xs.length < 2) continue;
        const spread = (v) => Math.max(...v) - Math.min(...v);
        out[t.name] = [spread(xs) / xa._length, spread(ys) / ya._length];
    }}
    return out;
}}"""
# the font size of every written label, in CSS pixels
LABEL_SIZES = f"""() => [...{PLOT}.querySelectorAll('svg.label-layer .labels text')]
    .filter(t => t.getBoundingClientRect().width > 0).map(t => parseFloat(getComputedStyle(t).fontSize))"""
# how many drawn markers of the view (not the vocabulary behind it; a line's unmarked bends are
# not points) lie past their axes' ranges
PAST_THE_AXES = f"""() => {{ const L = {PLOT}._fullLayout;
    const inside = (v, axis) => v >= Math.min(...L[axis].range) && v <= Math.max(...L[axis].range);
    return {PLOT}._fullData.filter(t => t.visible === true && t.name !== 'vocabulary' && t.legendgroup !== 'category'
            && (t.mode || '').includes('markers') && t.x)
        .reduce((n, t) => n + Array.from(t.x).filter((x, i) => x !== null && t.y[i] !== null
            && (typeof t.marker.size === 'number' ? t.marker.size : t.marker.size[i]) > 0
            && !(inside(x, t.xaxis.replace('x', 'xaxis')) && inside(t.y[i], t.yaxis.replace('y', 'yaxis')))
        ).length, 0); }}"""
# the main figure as drawn: its size less its box's (0, 0 when it fills it), and its axes' ranges
DRAWN = f"""() => {{ const gd = {PLOT}, L = gd._fullLayout, box = gd.getBoundingClientRect();
    return {{off: [L.width - box.width, L.height - box.height], x: L.xaxis.range, y: L.yaxis.range}}; }}"""


def _must_label(step) -> set[str]:
    """The tokens of a step's view that its text names, and its selected token."""
    from core.serving.tabs import session_for
    from core.tables.session import Session

    view = step.view
    tokens = session_for(view, Session.create()).encode(view.sentence_a, view.sentence_b).tokens
    return (step.named & set(tokens)) | ({tokens[view.token]} if view.token is not None else set())


def _next(page, number: int, *, tap: bool = False) -> None:
    """Next, clicked (or tapped, as on a phone), until step `number` is shown and settled."""
    if tap:
        page.locator("#tour-next").tap()
    else:
        page.locator("#tour-next").click()
    page.wait_for_function(
        f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')", timeout=60_000)
    settle(page)


# the count under the plot ("15 of 23 labelled", assets/labels.js) and what it must leave clear: the
# axes' titles and tick labels, each [text, box]; and the figure's box
COUNT_AND_AXES = f"""() => {{ const gd = {PLOT}, AXES_TEXT = ['.g-xtitle', '.g-ytitle', '.g-x2title', '.g-y2title',
        '.xtick', '.ytick', '.x2tick', '.y2tick'].map(s => s + ' text').join(', ');
    const box = (e) => {{ const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }};
    const count = gd.querySelector('.labelled-count');
    return {{count: [count.textContent, box(count)], figure: box(gd),
             axes: [...gd.querySelectorAll(AXES_TEXT)].filter(t => t.textContent).map(t => [t.textContent, box(t)])}};
}}"""


def _count_faults(page) -> list[str]:
    """What is wrong with the count of labels as drawn: over an axis's title or tick label, or past
    the figure's edge. On a phone it was drawn over the x axis's title."""
    drawn = page.evaluate(COUNT_AND_AXES)
    (text, count), figure = drawn["count"], drawn["figure"]
    if not text:
        return []
    faults = [f"{text!r} over {name!r}" for name, other in drawn["axes"] if overlap(count, other) > 0]
    if count[0] < figure[0] or count[3] > figure[3] + 1:
        faults.append(f"{text!r} at {count}, past the figure's edge {figure}")
    return faults


def _assert_the_step_reads(page, number: int, step) -> None:
    """A tour step's plot as drawn, read from the page's DOM: no label's box over a tenth of a
    marker (its own included), over another label or cut by the plot's edge; every word its text
    names labelled; stars only where its text names nearest neighbours; the count of labels clear
    of the axes' titles and ticks."""
    assert label_faults(page) == [], f"step {number}: labels where they must not be"
    assert _count_faults(page) == [], f"step {number}: the count of labels"
    written = {name for label in page.evaluate(LABELS) for name in named_in(label["text"])}
    missing = _must_label(step) - written
    assert not missing, f"step {number}: the text names {sorted(missing)}, which the plot does not label"
    stars = page.evaluate(f"() => {PLOT}._fullData.filter(t => t.name.startsWith('nearest')).length")
    assert bool(stars) == ("nearest" in step.text), f"step {number}: stars only where the text names neighbours"


def _in_view(page, selector: str) -> bool:
    box = page.locator(selector).first.bounding_box()
    size = page.viewport_size
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= size["height"] \
        and box["x"] >= 0 and box["x"] + box["width"] <= size["width"]


def _assert_the_plane_reads(page, number: int, step) -> None:
    """A tour step's plane as the room sees it: drawn at its box's size (also when Next came from
    a tab that hid it, step 5's LayerNorm), its labels readable and every named word labelled, every
    drawn point inside the axes or counted in the plot's corner note, the legend clear of the tool
    bar, no group a blob, the vocabulary behind the tokens."""
    drawn = page.evaluate(DRAWN)
    assert max(map(abs, drawn["off"])) <= 4, f"step {number}: the figure is {drawn['off']} px off its box"
    _assert_the_step_reads(page, number, step)
    assert _past_the_axes_said(page), f"step {number}: points past the axes that no note counts"
    assert _legend_under_the_tool_bar(page) == [], f"step {number}: the tool bar covers the legend"
    for group, (width, height) in page.evaluate(GROUP_SPANS).items():
        assert max(width, height) >= 0.1, f"step {number}: the {group} points are a blob ({width:.2f}×{height:.2f})"
    names = page.evaluate(f"() => {PLOT}.data.map(t => [t.name, t.type])")
    if any(name == "vocabulary" for name, _ in names):
        order = [name for name, _ in names]
        kinds = dict(names)
        assert order.index("vocabulary") < order.index("token"), "the background must be drawn first"
        assert kinds["vocabulary"] == kinds["token"], "WebGL draws over SVG: both must share a renderer"


def _past_the_axes_said(page) -> bool:
    """Whether the plot's corner note counts exactly the drawn points past the axes (and says
    nothing of them when there are none)."""
    past = page.evaluate(PAST_THE_AXES)
    note = page.locator("#embed-plot .labelled-count").text_content() or ""
    said = re.search(r"(\d+) points? past the axes", note)
    return (int(said.group(1)) if said else 0) == past


def _axes_within(drawn: dict, other: dict, share: float = 0.02) -> list[str]:
    """The axes of `drawn` that differ from `other`'s by more than `share` of their span."""
    return [axis for axis in ("x", "y")
            if not all(abs(a - b) <= share * (other[axis][1] - other[axis][0])
                       for a, b in zip(drawn[axis], other[axis], strict=True))]


def test_a_lecture_every_tour_step_is_readable(open_page):
    """At 1440×900, without presenter mode (the lecture driven on a projector, with a class, is
    `test_a_lecturer_drives_the_lecture_with_a_laptop_and_a_phone_following`); then the step
    picker, from the keyboard."""
    viewport = (1440, 900)
    page = open_page("", viewport)
    assert page.locator("#tour-step").input_value() == ""  # off the tour: the picker's neutral entry
    assert not page.locator("#tour-slide-buttons").is_visible()
    # a first visit opens on the tour, its text and Next in view beside the plot
    assert page.get_by_role("tab", name="Tour").get_attribute("aria-selected") == "true"
    assert _in_view(page, "#tour-next") and _in_view(page, "#tour-text")
    assert 0 <= page.locator("#embed-plot").bounding_box()["y"] < viewport[1] / 2
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    places, drawn_by_next = set(), {}
    for number, step in enumerate(STEPS, 1):
        _next(page, number)
        page.screenshot(path=str(ARTIFACTS / f"tour-{viewport[0]}x{viewport[1]}-step{number}.png"))
        # the step's text and its buttons are on screen, not scrolled away
        for selector in ("#tour-next", "#tour-previous", "#tour-step", "#tour-text"):
            assert _in_view(page, selector), f"step {number}: {selector} is out of view"
        assert page.locator("#tour-step").input_value() == str(number), f"step {number}: the picker shows another"
        box = page.locator("#tour-next").bounding_box()
        places.add((round(box["x"]), round(box["y"])))
        assert len(places) == 1, f"step {number}: Next moved, to {places}"  # a pointer stays on it
        if step.view.shown == "plane":
            drawn_by_next[number] = page.evaluate(COORDINATES)
            _assert_the_plane_reads(page, number, step)
            if number == 6:  # the lecture's key slide, as its link draws it
                linked = open_page("step=6", viewport).evaluate(DRAWN)
                assert _axes_within(page.evaluate(DRAWN), linked) == [], "step 6 by Next differs from its link"
    # the picker, from the keyboard (Tab from Previous, then a step's number): the step as Next drew it,
    # in the text, the plot and the address bar; Next where it was; Back goes to the step before
    page.locator("#tour-previous").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.id") == "tour-step"
    page.keyboard.press("3")
    page.wait_for_function("() => document.querySelector('#tour-text').innerText.includes('Step 3 of 8')",
                           timeout=60_000)
    settle(page)
    assert page.evaluate(COORDINATES) == drawn_by_next[3]
    assert "step=3" in page.url and page.locator("#tour-step").input_value() == "3"
    box = page.locator("#tour-next").bounding_box()
    assert {(round(box["x"]), round(box["y"]))} == places, "Next moved after a jump"
    _assert_one_row_of_targets(page)
    page.go_back()
    page.wait_for_function(f"() => document.querySelector('#tour-text').innerText.includes('Step {len(STEPS)} of')",
                           timeout=60_000)
    settle(page)
    assert page.locator("#tour-step").input_value() == str(len(STEPS)) and f"step={len(STEPS)}" in page.url
    # a screen reader hears the step reached, its title and text: one sentence a second at most, the latest
    page.evaluate("() => { window.saidSteps = []; const region = document.getElementById('tour-said');"
                  " new MutationObserver(() => window.saidSteps.push([performance.now(), region.textContent]))"
                  ".observe(region, {childList: true, characterData: true, subtree: true}); }")
    for _ in range(3):
        page.locator("#tour-previous").click()
    reached = STEPS[len(STEPS) - 4]
    wait_for_text(page, "#tour-said", f"Step {len(STEPS) - 3} of {len(STEPS)}: {reached.title}", timeout=60_000)
    said = page.evaluate("() => window.saidSteps")
    assert [text.startswith(f"Step {len(STEPS) - 3} of") for _, text in said][-1:] == [True], said
    assert all(later - earlier >= 990 for (earlier, _), (later, _) in zip(said, said[1:], strict=False)), said
    page.get_by_role("tab", name="Tables").click()
    page.locator("#upload-table .upload-zone").wait_for(state="visible")
    assert _upload_faults(page) == []
    assert page.errors == []


def _on_one_screen(page, *selectors: str, plot: bool = True) -> list[str]:
    """Of the plot (unless a side view is shown) and these elements, those not wholly on the
    screen, or under the class banner."""
    size = page.viewport_size
    banner = page.locator("#class-banner").bounding_box() if page.locator("#class-banner").count() else None
    faults = []
    for selector in ("#embed-plot .js-plotly-plot", *selectors)[0 if plot else 1:]:
        box = page.locator(selector).first.bounding_box()
        if box is None or box["y"] < 0 or box["y"] + box["height"] > size["height"] + 1 \
                or box["x"] < 0 or box["x"] + box["width"] > size["width"] + 1:
            faults.append(f"{selector} is off the screen: {box}")
        elif banner and overlap([box["x"], box["y"], box["x"] + box["width"], box["y"] + box["height"]],
                                [banner["x"], banner["y"], banner["x"] + banner["width"],
                                 banner["y"] + banner["height"]]) > 0:
            faults.append(f"the class banner covers {selector}")
    return faults


def _class_labelled(page) -> list[str]:
    """The class's answers (as the class trace names them, "queen ×2") that no label writes."""
    answers = page.evaluate(f"""() => {{ const t = {PLOT}.data.find(t => t.name === 'class');
        return t ? Array.from(t.hovertext).map(h => h.split('<br>')[0]) : []; }}""")
    written = {label["text"] for label in page.evaluate(LABELS)}
    return [answer for answer in answers if answer not in written]


def test_a_lecturer_drives_the_lecture_with_a_laptop_and_a_phone_following(open_page, phones, browser, tmp_path):
    """The lecture as a lecturer gives it, on a 1920×1080 projector in presenter mode: a class
    started on step 1, a laptop and a phone following, every step reached by Next, a round of
    answers on step 6, Train on step 7, Next to step 8 (Context, through the encoder), and back by
    Previous. At every step the room sees the
    figure fill its box (step 6 as its link draws it), every named word and every class answer
    labelled with its count, every point inside the axes or counted in a note, and the step's
    controls (Next, *Ask the class*, the loss curve) on one screen with the plot, none under the
    class banner; the phone keeps its plot in view, clear of its banner, through the round and
    the training. The round is checked as the class lives it: the words where the core places them
    and as a screen reader hears them, a word of markup refused as text, a word sent twice counted
    once, Hide taking a word off every plot, a prompt of markup shown as text. Before, step 6 by
    Next was drawn at a stale size, "queen ×2" went unlabelled, a trained point left the plot
    unsaid, *Ask the class* and the loss curve were below the fold, and the phone's plot was
    scrolled 1,085 px away after Train."""
    viewport = (1920, 1080)
    lecturer = open_page("presenter=1", viewport)
    assert lecturer.get_by_role("tab", name="Tour").get_attribute("aria-selected") == "true"
    class_id = parse_qs(urlsplit(start_class(lecturer)).query)["class"][0]
    laptop = open_page(f"class={class_id}", (1440, 900))
    phone = phones(f"class={class_id}")
    counts(lecturer, 2, 2)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    places, step6 = set(), None
    for number, step in enumerate(STEPS[:7], 1):  # to Train and freeze; the Context step after its training
        _next(lecturer, number)
        for follower in (laptop, phone):
            follower.wait_for_function(
                f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')", timeout=60_000)
        lecturer.screenshot(path=str(ARTIFACTS / f"lecture-1920x1080-step{number}.png"))
        assert _on_one_screen(lecturer, "#tour-next", "#tour-previous", "#tour-text",
                              plot=step.view.shown == "plane") == [], f"step {number}"
        box = lecturer.locator("#tour-next").bounding_box()
        places.add((round(box["x"]), round(box["y"])))
        assert len(places) == 1, f"step {number}: Next moved, to {places}"  # the presenter's pointer stays on it
        if step.view.shown != "plane":
            continue
        _assert_the_plane_reads(lecturer, number, step)
        if number != 6:
            continue
        by_link = open_page("presenter=1&step=6", viewport)
        assert _axes_within(lecturer.evaluate(DRAWN), by_link.evaluate(DRAWN)) == [], "step 6 by Next ≠ its link"
        _assert_the_step_s_slide_opens_offline(by_link, browser, tmp_path, step)  # the key slide, for the slides
        # a round: asked from the column beside the plot, which stays on the screen the room sees
        lecturer.locator("#poll-prompt").fill("A word next to king?")
        lecturer.locator("#poll-ask").scroll_into_view_if_needed()
        assert _on_one_screen(lecturer, "#poll-ask", "#poll-prompt", "#poll-review") == [], "asking the class"
        lecturer.locator("#poll-ask").click()
        for follower in (laptop, phone):
            follower.wait_for_function("() => (document.getElementById('poll-question') || {}).textContent"
                                       " === 'A word next to king?'", timeout=60_000)
        send(laptop, "queen")
        send(phone, "queen", tap=True)
        phone.wait_for_function("() => document.getElementById('poll-own').textContent.includes('queen')",
                                timeout=60_000)
        send(phone, "prince", tap=True)
        for page in (lecturer, laptop, phone):
            page.wait_for_function(HAS, arg=["queen ×2", "prince ×1"], timeout=60_000)
            settle(page)
        assert _on_one_screen(lecturer, "#poll-ask", "#poll-status") == [], "the round's answers"
        for page in (lecturer, laptop, phone):
            assert _class_labelled(page) == [], f"{page.viewport_size}: class answers unlabelled"
        _assert_the_plane_reads(lecturer, number, step)
        assert _on_one_screen(phone) == [], "the phone's plot during the round"
        # where the core places the words in the lecturer's plane, and what a screen reader hears of
        # them: each word, its count and the sentence's word drawn nearest it
        drawn = lecturer.evaluate(CLASS_TRACE)
        expected, nearest = core_points(class_id, (("queen", 2), ("prince", 1)))
        np.testing.assert_allclose(np.column_stack([drawn["x"], drawn["y"]]), expected, rtol=1e-5, atol=1e-5)
        said = ("The class's words, in the token group, the most given first: "
                f"queen (2 answers, drawn nearest {nearest[0]}) and prince (1 answer, drawn nearest {nearest[1]}).")
        lecturer.wait_for_function("(said) => document.querySelector('#plot-description').textContent.includes(said)",
                                   arg=said, timeout=60_000)
        laptop.wait_for_function(f"() => ({PLOT}).data.some(t => t.name === 'your words')", timeout=60_000)
        # a word of markup is refused with a sentence shown as text; a word sent twice counts once, and
        # the student is told so
        send(laptop, "<b>x</b>")
        laptop.wait_for_function("() => document.getElementById('poll-said').textContent.length > 2", timeout=60_000)
        assert laptop.locator("#poll-student b").count() == 0
        send(laptop, "QUEEN")
        laptop.wait_for_function("() => document.getElementById('poll-said').textContent.includes('already')",
                                 timeout=60_000)
        assert laptop.locator("#poll-own").text_content() == "You sent: queen (2 left)"
        # Hide takes a word off the lecturer's plot and every follower's
        lecturer.locator('[data-poll-hide="prince"]').click()
        for page in (lecturer, laptop, phone):
            page.wait_for_function(HAS, arg=["queen ×2"], timeout=60_000)
            settle(page)
        step6 = lecturer.evaluate(DRAWN)
        lecturer.screenshot(path=str(ARTIFACTS / "lecture-1920x1080-step6-round.png"))
        phone.screenshot(path=str(ARTIFACTS / "lecture-phone-step6-round.png"))

    # step 7: Train, watched by the room and by the phone
    lecturer.get_by_role("tab", name="Train").click()
    settle(lecturer)
    lecturer.locator("#train-button").click()
    lecturer.wait_for_function(
        "() => (document.querySelector('#train-summary') || {}).innerText?.startsWith('Trained')", timeout=120_000)
    lecturer.wait_for_function("() => document.querySelector('#loss-plot .js-plotly-plot')", timeout=60_000)
    settle(lecturer)
    # the phone follows the lecturer to the Train panel (its training is the lecturer's alone)
    phone.wait_for_function("() => document.querySelector('#main-row:not(.on-tour)')", timeout=60_000)
    settle(phone)
    lecturer.screenshot(path=str(ARTIFACTS / "lecture-1920x1080-trained.png"))
    phone.screenshot(path=str(ARTIFACTS / "lecture-phone-trained.png"))
    assert _on_one_screen(lecturer, "#loss-plot .js-plotly-plot", "#train-summary") == [], "after Train"
    assert _past_the_axes_said(lecturer), "after Train: points past the axes that no note counts"
    assert _class_labelled(lecturer) == [], "after Train: class answers unlabelled"
    assert _on_one_screen(phone) == [], "the phone's plot after Train"

    # step 8, Context: on from the trained step 7 by Next, as a lecturer goes on, BERT's tables through the encoder
    lecturer.get_by_role("tab", name="Tour").click()
    _next(lecturer, 8)
    for follower in (laptop, phone):
        follower.wait_for_function("() => document.querySelector('#tour-text').innerText.includes('Step 8 of')",
                                   timeout=60_000)
    lecturer.screenshot(path=str(ARTIFACTS / "lecture-1920x1080-step8.png"))
    assert _on_one_screen(lecturer, "#tour-next", "#tour-previous", "#tour-text") == [], "step 8"
    box = lecturer.locator("#tour-next").bounding_box()
    assert {(round(box["x"]), round(box["y"]))} == places, "step 8: Next moved"
    _assert_the_plane_reads(lecturer, 8, STEPS[7])

    # and back by Previous: step 6 as it was drawn with the class's answers
    for number in (7, 6):
        lecturer.locator("#tour-previous").click()
        lecturer.wait_for_function(f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')",
                                   timeout=60_000)
    settle(lecturer)
    assert _axes_within(lecturer.evaluate(DRAWN), step6) == [], "step 6 by Previous differs from step 6 by Next"
    _assert_the_plane_reads(lecturer, 6, STEPS[5])

    height = lecturer.evaluate(f"() => {PLOT}.getBoundingClientRect().height")
    assert height >= 0.6 * viewport[1], f"the plot is {height:.0f} px tall on a {viewport[1]} px screen"
    # the tabs a lecturer clicks are read from the room too, not left at 14 px beside 21 px text
    sizes = lecturer.evaluate("() => [...document.querySelectorAll('[role=tab]')].filter(t => t.offsetWidth)"
                              ".map(t => parseFloat(getComputedStyle(t).fontSize))")
    assert sizes and min(sizes) >= 18, sizes
    # a new round, its prompt of markup shown as text: no words yet
    lecturer.locator("#poll-prompt").fill("<i>Which</i> word & why?")
    lecturer.locator("#poll-ask").click()
    phone.wait_for_function("() => (document.getElementById('poll-question') || {}).textContent === "
                            "'<i>Which</i> word & why?'", timeout=60_000)
    assert phone.locator("#poll-student i").count() == 0
    lecturer.wait_for_function(HAS, arg=[], timeout=60_000)
    lecturer.get_by_role("tab", name="Tables").click()
    lecturer.locator("#upload-table .upload-zone").wait_for(state="visible")
    assert _upload_faults(lecturer) == []
    for page in (lecturer, laptop, phone):
        assert page.errors == []


def _assert_one_row_of_targets(page) -> None:
    """Previous, the step picker and Next side by side on one line, inside the screen, each a
    target of 24 px or more (WCAG 2.2's target size)."""
    boxes = [page.locator(selector).bounding_box() for selector in ("#tour-previous", "#tour-step", "#tour-next")]
    assert all(box["width"] >= 24 and box["height"] >= 24 for box in boxes), boxes
    assert max(box["y"] for box in boxes) - min(box["y"] for box in boxes) <= 2, boxes
    assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"] and boxes[1]["x"] + boxes[1]["width"] <= boxes[2]["x"]
    assert boxes[2]["x"] + boxes[2]["width"] <= page.viewport_size["width"], boxes


# the slide's layout (assets/slide.js): the text column and the plot, in the slide's pixels
SLIDE = (1920, 1080)
SLIDE_TEXT, SLIDE_PLOT = (64, 220, 664, 700), (712, 220, 1856, 1040)


def _assert_the_step_s_slide_opens_offline(page, browser, folder: Path, step) -> None:
    """The step's slide, downloaded as SVG and PNG from its Tour panel: the SVG, opened in a browser
    that reaches no network, draws the step's title and the plot's markers and points nowhere outside
    itself; the PNG is the slide's 16:9 size, with ink in its text column and in its plot."""
    files = {}
    for kind in ("svg", "png"):
        with page.expect_download(timeout=60_000) as download:
            page.locator(f"#slide-{kind}").click()
        name = download.value.suggested_filename
        assert name == f"step-6-random-vs-pretrained.{kind}", name
        files[kind] = folder / name
        download.value.save_as(files[kind])
    svg = files["svg"].read_text(encoding="utf-8")
    outside = re.sub(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"', "", svg)
    assert not re.search(r"https?:", outside), re.findall(r".{40}https?:.{40}", outside)[:3]
    context = browser.new_context(viewport={"width": SLIDE[0], "height": SLIDE[1]})
    asked = []
    context.route("**/*", lambda route: (asked.append(route.request.url), route.abort()))
    try:
        offline = context.new_page()
        offline.set_content(f"<!doctype html><body style='margin:0'>{svg}</body>")
        texts = offline.evaluate("() => [...document.querySelectorAll('svg text')].map(t => t.textContent)")
        assert step.title in texts and f"Step 6 of {len(STEPS)}" in texts
        markers = offline.evaluate("() => [...document.querySelectorAll('svg .scatterlayer .point')]"
                                   ".filter(p => p.getBoundingClientRect().width > 0).length")
        assert markers >= 2000, f"{markers} markers drawn: the plot's points (and the vocabulary behind them)"
        assert asked == [], f"the slide asked the network for {asked}"
    finally:
        context.close()
    image = Image.open(files["png"]).convert("RGB")
    assert image.size == SLIDE
    background = image.getpixel((4, 4))
    for left, top, right, bottom in (SLIDE_TEXT, SLIDE_PLOT):
        region = image.crop((left, top, right, bottom))
        inked = sum(count for count, colour in region.getcolors(1 << 24) if colour != background)
        assert inked >= 0.01 * region.width * region.height, f"the slide's region {left, top, right, bottom} is blank"


# the projector theme as the page draws it: the plot's ground, the colour of every label the page wrote
# and of every legend entry, the labels' count, the page's own ground and the tabs' type
THEME_LOOK = f"""() => {{
    const gd = {PLOT}, seen = (e) => e.getBoundingClientRect().width > 0;
    const ground = (e) => {{ for (; e; e = e.parentElement) {{ const c = getComputedStyle(e).backgroundColor;
        if (c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; }} return 'rgb(255, 255, 255)'; }};
    const ink = (selector) => [...gd.querySelectorAll(selector)].filter(seen)
        .map(t => [t.textContent, getComputedStyle(t).fill]);
    return {{plot: gd._fullLayout.plot_bgcolor, paper: gd._fullLayout.paper_bgcolor,
        labels: ink('svg.label-layer .labels text'), legend: ink('.legend text.legendtext'),
        count: ink('svg.label-layer .labelled-count'), page: ground(document.querySelector('#main-row')),
        tabs: [...document.querySelectorAll('[role=tab]')].filter(t => t.offsetWidth)
            .map(t => parseFloat(getComputedStyle(t).fontSize)),
        query: location.search, dark: document.body.classList.contains('dark')}};
}}"""


def _low_contrast(look: dict) -> list[str]:
    """The written labels, legend entries and labels' count under WCAG AA's 4.5:1 against the plot."""
    return [f"{text!r} {colour}: {contrast(colour, look['plot']):.2f}:1"
            for text, colour in look["labels"] + look["legend"] + look["count"] if contrast(colour, look["plot"]) < 4.5]


def test_the_projector_theme_opens_dark_with_every_label_at_aa_and_its_control_switches_it(open_page):
    """A link with theme=projector opens dark, plot included, at presenter size, every label and legend
    entry at 4.5:1 or more against the plot (WCAG contrast computed from the colours the page drew);
    the View tab's control switches it, and the address bar follows."""
    page = open_page("theme=projector&step=6", (1920, 1080))
    look = page.evaluate(THEME_LOOK)
    assert look["dark"] and look["query"] == "?step=6&theme=projector"
    assert luminance(look["plot"]) < 0.02 and rgb(look["paper"]) == rgb(look["plot"]), look["plot"]
    assert luminance(look["page"]) < 0.02, f"the page's ground is {look['page']}"
    assert len(look["labels"]) >= 10 and look["legend"], "the step's plot writes its words and its legend"
    assert _low_contrast(look) == []
    assert look["tabs"] and min(look["tabs"]) >= 18, look["tabs"]  # presenter mode's size, implied
    # the plot as tall as the screen leaves it, axes and all in view (gradio's scoped copy of its laptop
    # height once held it at its 680 px floor)
    assert _in_view(page, "#embed-plot .plane-host")
    assert page.locator("#embed-plot .plane-host").bounding_box()["height"] >= 0.65 * 1080
    # its slide: the dark plot on the slide's dark ground, the step's title in light type
    with page.expect_download(timeout=60_000) as download:
        page.locator("#slide-svg").click()
    slide = Path(download.value.path()).read_text(encoding="utf-8")
    ground = re.search(r'<rect width="1920" height="1080" fill="(#\w+)"', slide).group(1)
    title = re.search(r'font-weight="bold" fill="(#\w+)">Random vs pretrained<', slide).group(1)
    assert luminance(ground) < 0.02 and contrast(title, ground) >= 4.5, (ground, title)
    page.get_by_role("tab", name="View").click()
    page.locator("#theme").get_by_label("Light").check()
    settle(page)
    light = page.evaluate(THEME_LOOK)
    assert not light["dark"] and "theme" not in light["query"] and luminance(light["plot"]) > 0.9
    assert max(light["tabs"]) < 18, "back in the light theme, without presenter mode, the type is a laptop's"
    page.locator("#theme").get_by_label("Projector", exact=False).check()
    settle(page)
    again = page.evaluate(THEME_LOOK)
    assert again["dark"] and "theme=projector" in again["query"] and _low_contrast(again) == []
    assert page.errors == []


# the upload's zone and its parts (ui/tablespanel.py UPLOAD) as drawn: boxes and whether their text is cut
UPLOAD_PARTS = """() => { const zone = document.querySelector('#upload-table .upload-zone');
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    return {zone: box(zone), parts: ['.upload-label', '#upload-file', '.upload-hint'].map(s => {
        const e = zone.querySelector(s);
        return [s, box(e), e.scrollWidth > e.clientWidth || e.scrollHeight > e.clientHeight + 1]; })}; }"""


def _upload_faults(page) -> list[str]:
    """What is wrong with the upload as drawn: a part over another, out of its zone, or its text cut
    (gradio's own upload once had its label over "Drop File Here" and "Click to Upload" cut)."""
    drawn = page.evaluate(UPLOAD_PARTS)
    zone, parts = drawn["zone"], drawn["parts"]
    faults = [f"{name} is cut" for name, _, cut in parts if cut]
    faults += [f"{name} is out of the zone" for name, box, _ in parts
               if not (zone[0] <= box[0] and box[2] <= zone[2] and zone[1] <= box[1] and box[3] <= zone[3])]
    faults += [f"{a} covers {b}" for i, (a, one, _) in enumerate(parts) for b, other, _ in parts[i + 1:]
               if overlap(one, other) > 0]
    return faults


def _legend_under_the_tool_bar(page) -> list[str]:
    """The legend's entries that plotly's tool bar covers, once the pointer is over the plot (where
    it shows). Before, it stood over the legend's last entry."""
    box = page.locator("#embed-plot .js-plotly-plot").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_function(f"() => {PLOT}.querySelector('.modebar').getBoundingClientRect().width > 0")
    bar = page.evaluate(f"() => {{ const r = {PLOT}.querySelector('.modebar').getBoundingClientRect(); "
                        "return [r.left, r.top, r.right, r.bottom]; }")
    entries = page.evaluate(f"""() => [...{PLOT}.querySelectorAll('.legend .traces')].map(t => {{
        const r = t.getBoundingClientRect(); return [t.textContent, [r.left, r.top, r.right, r.bottom]]; }})""")
    page.mouse.move(0, 0)
    return [name for name, entry in entries if overlap(entry, bar) > 0]


def _ticks_apart(page, chart: str) -> list[str]:
    """What overlaps in a chart as drawn: two of its (turned) token labels, or an axis title and a
    bar or a tick label. Labels turned by a are apart when the ticks are at least a line of type
    apart across them: spacing × sin(a) ≥ the type's size."""
    found = page.evaluate(f"""() => {{
        const gd = document.querySelector('{chart} .js-plotly-plot'), axis = gd._fullLayout.xaxis;
        const box = (e) => {{ const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; }};
        return {{at: axis._vals.map(v => axis.l2p(v.x)), angle: axis.tickangle, size: axis.tickfont.size,
                 ticks: [...gd.querySelectorAll('.xtick text')].filter(t => t.textContent).map(box),
                 titles: [...gd.querySelectorAll('.g-xtitle text, .g-ytitle text, .g-x2title text, .g-y2title text')]
                     .map(t => [t.textContent, box(t)]),
                 bars: [...gd.querySelectorAll('.barlayer path')].map(box).filter(r => r[2] > r[0])}};
    }}""")
    across = abs(math.sin(math.radians(found["angle"] if isinstance(found["angle"], int | float) else 0))) or 1.0
    at = sorted(found["at"])
    faults = [f"token labels {i} and {i + 1} overlap" for i in range(len(at) - 1)
              if (at[i + 1] - at[i]) * across < found["size"]]
    faults += [f"{title!r} over a bar or a tick" for title, box in found["titles"]
               if any(overlap(box, other) > 0 for other in (*found["bars"], *found["ticks"]))]
    return faults


def _tab_until(page, target: str, presses: int) -> list[str]:
    reached = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        reached.append(page.evaluate("() => document.activeElement.closest('[id]')?.id || ''"))
        if reached[-1] == target:
            break
    return reached


def test_the_main_controls_are_a_few_tabs_from_sentence_b(open_page):
    """A first visit opens on the tour: Next is a few Tabs away; the View panel's groups are
    too once it is chosen (with the keyboard alone: Enter on its tab)."""
    page = open_page()
    page.locator("#sentence-b textarea").focus()
    reached = _tab_until(page, "tour-next", 8)
    assert reached[-1] == "tour-next", f"8 Tabs from sentence B reached only {reached}"
    page.locator("#sentence-b textarea").focus()
    assert _tab_until(page, "tab-view-button", 4)[-1] == "tab-view-button"
    page.keyboard.press("Enter")
    page.locator("#groups").wait_for(state="visible")  # the panel's controls are drawn as it opens
    reached = _tab_until(page, "groups", 12)
    assert "groups" in reached, f"12 Tabs from the View tab reached only {reached}"
    # a checkbox's ring goes round its label, the target a pointer has (assets/style.css)
    outline = page.evaluate("() => getComputedStyle(document.activeElement.closest('label') || "
                            "document.activeElement).outlineStyle")
    assert outline != "none", "the focused control must show it"


def test_on_a_phone_the_controls_follow_the_plot(open_page):
    page = open_page(viewport=(390, 844))
    plot = page.locator("#embed-plot").bounding_box()
    controls = page.locator("#controls").bounding_box()
    assert controls["y"] - plot["y"] <= 2 * 844, "the controls must be within two screen heights of the plot"
    assert page.evaluate("() => getComputedStyle(document.querySelector('#embed-plot .modebar-container')"
                         " || document.body).display") in ("none", "block")
    assert page.evaluate(f"() => {PLOT}.getBoundingClientRect().width") <= 390


def test_the_png_is_the_plot_on_screen_three_times_over(open_page):
    page = open_page("panel=view")
    width, height = page.evaluate(f"() => [{PLOT}._fullLayout.width, {PLOT}._fullLayout.height]")
    with page.expect_download(timeout=60_000) as download:
        page.locator("#export-png").click()
    image = Image.open(io.BytesIO(download.value.path().read_bytes()))
    assert image.format == "PNG" and image.size == (3 * width, 3 * height)
    on_screen = page.evaluate(f"() => {PLOT}.getBoundingClientRect().width")
    assert abs(on_screen - width) <= 2


def test_search_finds_a_word_that_is_not_in_the_sentences(open_page):
    page = open_page("source=bert&groups=token&basis=vocabulary")
    open_accordion(page, "search-panel", "Search the vocabulary")
    page.locator("#vocab-search textarea, #vocab-search input").first.fill("monarch")
    page.wait_for_function(f"() => {PLOT}.data.some(t => t.name === 'search')", timeout=60_000)
    settle(page)
    info = page.locator("#search-info").inner_text()
    assert "monarch" in page.locator("#search-hits").inner_text()
    assert "Nearest to" in info and ("king" in info or "throne" in info or "queen" in info)


def test_three_d_shows_the_same_points_on_three_axes(open_page):
    page = open_page(f"a={quote('the cat sat')}&b=&panel=view")
    # the points of each trace (the flat plane's labels are a trace of their own: assets/explorer.js)
    count = (f"() => Object.fromEntries({PLOT}._fullData.filter(t => t.x)"
             ".map(t => [t.name, t.x.length]))")
    flat = page.evaluate(count)
    page.locator("#three-d input").check()
    page.wait_for_function(f"() => {PLOT}._fullLayout.scene !== undefined && {PLOT}.data[0].type === 'scatter3d'",
                           timeout=60_000)
    settle(page)
    scene = page.evaluate(f"() => Object.keys({PLOT}._fullLayout.scene).filter(k => k.endsWith('axis'))")
    assert {"xaxis", "yaxis", "zaxis"} <= set(scene)
    deep = page.evaluate(count)
    assert {name: deep[name] for name in flat if name in deep} == flat
    # the points as a table (assets/plottable.js): a z column, a row per point of the five groups
    page.get_by_role("button", name="Table", exact=True).click()
    headers = page.evaluate("() => [...document.querySelectorAll('#plot-table thead th')].map(c => c.textContent)")
    assert headers == ["token", "position", "segment", "group", "x", "y", "z", "nearest in the plot"]
    zs = page.evaluate("() => [...document.querySelectorAll('#plot-table tbody tr')].map(r => r.cells[6].textContent)")
    assert len(zs) == sum(deep[group] for group in ("token", "position", "segment", "sum", "output"))
    assert all(math.isfinite(float(z)) for z in zs)
    assert "a PCA space keeping" in page.locator("#plot-table caption").inner_text()


def test_the_listing_s_layer_draws_its_outputs_at_plus_minus_one(open_page):
    page = open_page()
    page.get_by_role("tab", name="Tables").click()
    page.locator("#listing-defaults").click()
    page.wait_for_function(f"() => {PLOT}.layout.xaxis.title.text.includes('dim 0')", timeout=60_000)
    settle(page)
    outputs = page.evaluate(f"() => {{ const t = {PLOT}._fullData.find(t => t.name === 'output');"
                            " return [Array.from(t.x), Array.from(t.y)]; }")
    for x, y in zip(*outputs, strict=True):
        assert abs(abs(x) - 1) < 1e-3 and abs(abs(y) - 1) < 1e-3 and x * y < 0


def test_tip_to_tail_follows_the_selected_token_only(open_page):
    page = open_page(f"a={quote('the cat sat on the mat')}&b=&arrows=1&token=2")
    path = page.evaluate(f"() => Array.from({PLOT}._fullData.find(t => t.name === 'addition path').x)")
    assert sum(value is None for value in path) <= 1  # one polyline: the selected token's


@pytest.mark.parametrize("viewport", [(1440, 900), (390, 844)], ids=["1440x900", "phone"])
def test_a_default_training_is_watched_as_it_goes_and_frozen_points_stay_still_on_screen(open_page, viewport):
    """Step 7, Train with the default 100 steps (a third of a second of work): the page shows
    at least three steps' progress before "Trained", with its loss curve; the token points move
    on the way, and the frozen position points stay on the pixels they were drawn on, within
    2 px, in every frame the page draws through the run and after it. Before, the axes
    rescaled as the trained points moved, and the frozen ones moved with them by up to 112 px
    (their data unchanged); on a phone the legend's new rows pushed the plot down."""
    page = open_page("step=7", viewport)
    # each group's markers where the page drew them, in pixels from the plot's corner
    drawn = f"""() => {{
        const gd = {PLOT}, corner = gd.getBoundingClientRect();
        const curve = document.querySelector('#loss-plot .js-plotly-plot');
        const at = name => {{
            const g = [...gd.querySelectorAll('.scatterlayer .trace')].find(g => g.__data__[0].trace.name === name);
            return g ? [...g.querySelectorAll('path.point')].map(p => p.getBoundingClientRect())
                .map(r => [(r.left + r.right) / 2 - corner.left, (r.top + r.bottom) / 2 - corner.top]) : null;
        }};
        return {{curve: curve && curve._fullData && curve._fullData.length ? curve._fullData[0].y.length : 0,
                summary: (document.querySelector('#train-summary') || {{}}).innerText || '',
                token: at('token'), position: at('position')}};
    }}"""
    page.get_by_role("tab", name="Train").click()
    assert page.locator("#train-steps input").input_value() == "100"
    assert "frozen: position" in page.locator("#param-status").inner_text()
    page.locator("#loss-plot").wait_for(state="attached")  # the tab's controls are drawn as it opens
    # on a phone the plot's box grows as the tour's text goes: the plot is drawn again to fill it
    page.wait_for_function(f"() => Math.max(...({DRAWN})().off.map(Math.abs)) <= 4")
    settle(page)
    before = page.evaluate(drawn)
    # every state the page renders, recorded in the page at each change of its DOM (several
    # updates landing in one frame on a busy machine are each seen) and at each animation frame:
    # a sample from here, one round trip at a time, can miss one
    page.evaluate(f"""() => {{ window.__states = []; const look = () => {{
        const now = JSON.stringify(({drawn})());
        if (window.__states[window.__states.length - 1] !== now) window.__states.push(now);
        return !JSON.parse(now).summary.startsWith('Trained');
    }};
    const watcher = new MutationObserver(() => {{ if (!look()) watcher.disconnect(); }});
    for (const id of ['#loss-plot', '#train-summary', '#embed-plot'])
        watcher.observe(document.querySelector(id), {{subtree: true, childList: true, characterData: true,
                                                       attributes: true}});
    const frame = () => {{ if (look()) requestAnimationFrame(frame); }};
    requestAnimationFrame(frame); }}""")
    page.locator("#train-button").click()
    page.wait_for_function("() => (document.querySelector('#train-summary') || {}).innerText?.startsWith('Trained')",
                           timeout=120_000)
    states = list(map(json.loads, page.evaluate("() => window.__states")))
    seen = [state for state in states if state["summary"].startswith("Training…")]
    # the summary and the main plot are written as each step's message comes (the server sends
    # the snapshots LIVE_SECONDS apart); the loss curve, drawn by the page's script (ui/assets.py
    # chart), is asked only to be drawn on the way
    assert len({s["summary"] for s in seen}) >= 3, [s["summary"] for s in seen]
    assert any(s["curve"] for s in seen)
    assert len({str(s["token"]) for s in seen}) >= 3  # the points on their way, not only at the end
    settle(page)
    after = page.evaluate(drawn)
    assert "before training" in page.locator("#embed-info").inner_text()
    # the held axes keep their scale: a point the training took past them is counted under the plot
    assert _past_the_axes_said(page), "points past the axes that no note counts"
    assert after["token"] != before["token"]
    # the points that moved were watched: on a phone, Train (under the plot) put the plot on the screen
    if viewport[0] < 600:
        assert _on_one_screen(page) == [], "the plot after Train"

    def moved(state) -> float:
        return max(abs(a - b) for now, then in zip(state["position"], before["position"], strict=True)
                   for a, b in zip(now, then, strict=True))

    frames = [state for state in (*states, after) if state["position"] is not None]
    assert len(frames) >= 3 and max(map(moved, frames)) <= 2.0, "the frozen points moved on screen"


def test_a_group_hidden_from_the_legend_stays_hidden_while_typing(open_page):
    page = open_page()
    page.locator("#embed-plot .legend .traces").filter(has_text="position").first.click()
    page.wait_for_function(
        f"() => {PLOT}._fullData.find(t => t.name === 'position').visible === 'legendonly'", timeout=10_000)
    page.locator("#sentence-a textarea").fill("A zebra sat on the mat.")
    page.wait_for_function(f"() => {PLOT}.data.some(t => (t.hovertext || []).some(h => h.startsWith('zebra')))",
                           timeout=60_000)
    settle(page)
    assert page.evaluate(f"() => {PLOT}._fullData.find(t => t.name === 'position').visible") == "legendonly"
    assert page.locator("#token-table tbody tr").count() > 0


def test_search_labels_do_not_pile_up(open_page):
    """GloVe, search *monarch*: twenty crosses and diamonds in one corner of the plane, their
    names written one over another, and *monarch*'s own cross left without one; now the word
    searched for is always named, and the others where they fit beside each other."""
    page = open_page("source=glove&search=monarch&a=the%20king%20and%20the%20queen&b=")
    page.wait_for_function(f"() => {PLOT}._fullData.some(t => t.name === 'search')", timeout=60_000)
    settle(page)
    found = [label for label in page.evaluate(LABELS) if label["trace"] == "search"]
    assert len(found) >= 5 and {"text": "monarch", "point": 0} in [{key: label[key] for key in ("text", "point")}
                                                                   for label in found]
    assert label_faults(page) == []  # none over another, a marker or the plot's edge
    # the link's search box is open, not folded away while its crosses show
    box = page.locator("#vocab-search textarea, #vocab-search input").first
    assert box.is_visible() and box.input_value() == "monarch"
    # the plane's structure puts each match under the sentence's word drawn nearest it (a click opens an item)
    page.locator("#embed-plot .plane-host").focus()
    page.keyboard.press("s")
    tree = page.locator("#plot-tree")
    tree.get_by_role("treeitem", name="Token vectors", exact=False).locator(".tree-row").first.click()
    nearest = page.evaluate("""() => {
        const gd = PLOT, search = gd._fullData.find(t => t.name === 'search');
        const token = gd._fullData.find(t => t.name === 'token');
        const words = [...document.querySelectorAll('.token-table tbody tr')].map(row => row.cells[0].textContent);
        const word = (i) => words[token.customdata[i][1]];
        const apart = (i) => Math.hypot(token.x[i] - search.x[0], token.y[i] - search.y[0]);
        const i = [...token.x.keys()].filter(i => /^[a-z]+$/.test(word(i))).sort((a, b) => apart(a) - apart(b))[0];
        return `${word(i)}, position ${token.customdata[i][1]}, `; }""".replace("PLOT", PLOT))
    item = tree.get_by_role("treeitem", level=3).filter(has_text=nearest).first
    assert item.get_attribute("aria-expanded") == "false"
    item.locator(".tree-row").first.click()
    matches = [name.strip() for name in item.get_by_role("treeitem", level=4).all_inner_texts()]
    assert "monarch, found by the search" in matches
    assert all(name.endswith(", found by the search") or ", near monarch, cosine 0." in name for name in matches)


def test_on_a_phone_each_step_s_text_and_its_plot_are_on_one_screen(browser, app_url):
    """390×844, tapping Next: the step's buttons and text above its plot, scrolled to the top of
    the screen (the plot was 600–700 px above the screen after each Next)."""
    from tests.browser import COUNT_REQUESTS

    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    context.add_init_script(COUNT_REQUESTS)  # what settle() counts
    try:
        page = context.new_page()
        page.goto(app_url)
        page.wait_for_function(f"() => {PLOT} && {PLOT}.data && {PLOT}.data.length > 0", timeout=90_000)
        settle(page)
        places = set()
        for number, step in enumerate(STEPS, 1):
            _next(page, number, tap=True)
            assert _in_view(page, "#tour-next") and _in_view(page, "#tour-text"), f"step {number}"
            # a thumb finds Next where it was: at the top of the screen (a short page, the side
            # view's step 5, scrolls a few pixels less far)
            box = page.locator("#tour-next").bounding_box()
            places.add((round(box["x"]), round(box["y"])))
            assert max(y for _, y in places) - min(y for _, y in places) <= 16 and len({x for x, _ in places}) == 1, \
                f"step {number}: Next moved, to {places}"
            if step.view.shown == "layernorm":  # its chart fitted to the phone: stacked, ticks apart
                page.wait_for_function("() => document.querySelector('#layernorm-plot .js-plotly-plot')?._fullData",
                                       timeout=30_000)
                settle(page)
                assert _ticks_apart(page, "#layernorm-plot") == [], f"step {number}: the LayerNorm chart"
            if step.view.shown == "plane":
                assert _in_view(page, "#embed-plot .js-plotly-plot"), f"step {number}: the plot is off screen"
                # labels a phone can read, fitted to its narrow plot: none over another, none hidden,
                # and the words the step's text names among them
                sizes = page.evaluate(LABEL_SIZES)
                assert sizes and min(sizes) >= 12, f"step {number}: labels of {sorted(set(sizes))} px"
                _assert_the_step_reads(page, number, step)
        # turned to landscape the screen is no longer a phone's: the plot is fitted anew, a laptop's
        page.set_viewport_size({"width": 844, "height": 390})
        page.wait_for_function(f"() => ({LABEL_SIZES})().length > 0 && ({LABEL_SIZES})().every(s => s === 10)",
                               timeout=30_000)
    finally:
        context.close()


# a chart's written notes (its annotations but the panels' titles) and what they must leave clear: its
# markers, its text marks and its tick labels, as boxes (left, top, right, bottom)
NOTES_AND_MARKS = """(chart) => { const gd = document.querySelector(chart + ' .js-plotly-plot');
    const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
    const notes = [...gd.querySelectorAll('.annotation')];
    return {notes: notes.filter(a => a.textContent.startsWith('Left out')).map(box),
            titles: notes.filter(a => !a.textContent.startsWith('Left out')).map(box),
            marks: [...gd.querySelectorAll('.scatterlayer .point, .scatterlayer .textpoint, .xtick text, .ytick text')]
                .map(box).filter(r => r[2] > r[0])}; }"""


@pytest.mark.parametrize("viewport, query", [((390, 844), ""), ((1920, 1080), "&presenter=1")],
                         ids=["phone-390x844", "presenter-1920x1080"])
def test_the_positions_note_covers_no_point_and_no_tick(open_page, viewport, query):
    """BERT's Positions view leaves position 0 out and says so under the learned panel: that note
    was drawn over the path's first points. The panels' titles stand apart (on a phone they ran
    into each other)."""
    page = open_page(f"source=bert&view=positions{query}", viewport)
    page.wait_for_function(f"() => ({NOTES_AND_MARKS})('#positions-plot').notes.length > 0", timeout=60_000)
    settle(page)
    drawn = page.evaluate(NOTES_AND_MARKS, "#positions-plot")
    assert len(drawn["notes"]) == 1 and len(drawn["marks"]) > 60, drawn
    covered = [mark for mark in drawn["marks"] if overlap(drawn["notes"][0], mark) > 0]
    assert covered == [], f"the note {drawn['notes'][0]} covers {covered}"
    (left, right) = drawn["titles"]
    assert overlap(left, right) == 0 and left[0] >= 0 and right[2] <= viewport[0], drawn["titles"]
    assert page.errors == []
