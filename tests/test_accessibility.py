"""The page for every student, in a real Chromium: axe-core's WCAG 2.2 A/AA rules over the page's
views at a laptop's and a phone's size, over every tour step in presenter mode and in the projector
theme, and over a class's
banners; the plane and a side chart explored by keyboard alone, their live region and the plane's
text alternative read as a screen reader reads them; the plane's points as a table; a focus ring on
every Tab stop at 3:1 or more against what surrounds it; no animated transition for who asks for none; 200% zoom.

axe runs inside the page (axe-playwright-python carries axe-core; nothing is fetched).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from axe_playwright_python.sync_playwright import Axe

from core.view.tour import STEPS
from tests.browser import COUNT_REQUESTS, PLOT, point_on_screen, ready, rows, settle, wait_for_text

pytestmark = pytest.mark.browser

WCAG = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]  # WCAG 2.0, 2.1 and 2.2, levels A and AA
KING = f"a={quote('The king spoke to the queen.')}&b="
ANNOUNCED = "() => document.querySelector('#plot-announcer').textContent"
DESCRIPTION = "() => document.querySelector('#plot-description').textContent"
ACTIVE = "() => { const e = document.activeElement; return e.id || e.closest('[id]')?.id || e.tagName; }"


def violations(page) -> list[str]:
    """What axe finds against WCAG 2.2 A/AA in the page as it is: one line per element."""
    found = Axe().run(page, options={"runOnly": {"type": "tag", "values": WCAG}, "resultTypes": ["violations"]})
    return [f"{rule['id']}: {node['target']} {node['html'][:100]}"
            for rule in found.response["violations"] for node in rule["nodes"]]


def next_step(page, number: int) -> None:
    page.locator("#tour-next").click()
    page.wait_for_function(
        f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')", timeout=60_000)
    settle(page)


def tab_to(page, test: str, presses: int) -> int:
    """Tab until `test` (JS, of the focused element `e`) holds; how many presses it took."""
    for count in range(1, presses + 1):
        page.keyboard.press("Tab")
        if page.evaluate(f"() => {{ const e = document.activeElement; return Boolean({test}); }}"):
            return count
    raise AssertionError(f"{presses} Tabs did not reach {test}; the focus is on {page.evaluate(ACTIVE)}")


@pytest.mark.parametrize("viewport", [(1440, 900), (390, 844)], ids=["1440x900", "390x844"])
def test_axe_finds_nothing_in_the_page_s_views(open_page, viewport):
    """The default page, tour steps 3 and 5, the Train tab and a selected token."""
    found = {}
    page = open_page(viewport=viewport)
    found["default"] = violations(page)
    for number in range(1, 6):
        next_step(page, number)
        if number in (3, 5):
            found[f"step {number}"] = violations(page)
    page.get_by_role("tab", name="Train").click()
    page.locator("#train-button").wait_for()
    settle(page)
    found["train"] = violations(page)
    found["selected token"] = violations(open_page(f"{KING}&token=2", viewport))
    assert found == dict.fromkeys(found, [])


def test_axe_finds_nothing_on_any_tour_step_in_presenter_mode_and_in_the_projector_theme(open_page):
    """The tour with the keyboard alone: Tab to Next, then Enter for each step, the focus kept on Next;
    then the View tab's theme set to the projector's (its controls checked in the dark), and the tour
    walked back with Previous, every step checked again: one page, both themes."""
    page = open_page("presenter=1", (1920, 1080))
    page.locator("#sentence-b textarea").focus()
    tab_to(page, "e.id === 'tour-next'", 8)
    found = {}
    for number in range(1, len(STEPS) + 1):
        page.keyboard.press("Enter")
        page.wait_for_function(
            f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')", timeout=60_000)
        settle(page)
        assert page.evaluate(ACTIVE) == "tour-next"
        found[number] = violations(page)
    page.get_by_role("tab", name="View").click()
    page.locator("#theme").get_by_label("Projector", exact=False).check()
    settle(page)
    assert page.evaluate("() => document.body.matches('.dark.projector')")
    assert "theme=projector" in page.evaluate("() => location.search")
    found["projector: View tab"] = violations(page)
    page.get_by_role("tab", name="Tour").click()
    settle(page)
    found[f"projector: {len(STEPS)}"] = violations(page)
    for number in range(len(STEPS) - 1, 0, -1):
        page.locator("#tour-previous").click()
        page.wait_for_function(
            f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')", timeout=60_000)
        settle(page)
        found[f"projector: {number}"] = violations(page)
    assert page.evaluate("() => document.body.matches('.dark.projector')"), "a tour step keeps the room's theme"
    assert found == dict.fromkeys(found, [])


def test_axe_finds_nothing_in_the_dark_theme(browser, app_url):
    """A browser set to dark gets gradio's dark theme: the View tab (its controls and the variance
    bars, those the plane leaves out hatched as well as grey) passes as the light one does."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, color_scheme="dark")
    context.add_init_script(COUNT_REQUESTS)
    try:
        page = context.new_page()
        page.goto(f"{app_url}?panel=view")
        ready(page)
        page.locator("#variance-bars .variance-column.left-out").first.wait_for()
        assert violations(page) == []
        hatch = page.evaluate("() => getComputedStyle(document.querySelector("
                              "'#variance-bars .variance-column.left-out .variance-bar')).backgroundImage")
        assert hatch.startswith("repeating-linear-gradient")
    finally:
        context.close()


def test_axe_finds_nothing_on_a_class_s_banners(open_page):
    """The lecturer's page (the class box, the counting banner) and a student's, following and
    then exploring on their own (the banner's button)."""
    from tests.test_browser_class import BANNER, STARTED, start_class
    from ui.classroutes import CLASSROOM

    lecturer = open_page()
    try:
        link = start_class(lecturer)
        student = open_page(link.split("?", 1)[1])
        student.wait_for_function(f"() => ({BANNER})().includes('Following')", timeout=60_000)
        lecturer.wait_for_function("() => document.getElementById('class-connected')?.innerText === '1'",
                                   timeout=60_000)
        found = {"lecturer": violations(lecturer), "following": violations(student)}
        student.locator("#sentence-a textarea").fill("My own sentence.")
        student.locator("#class-follow").wait_for(timeout=60_000)
        found["on their own"] = violations(student)
        student.locator("#class-follow").focus()
        ring = student.evaluate("() => getComputedStyle(document.activeElement).outlineColor")
    finally:
        while STARTED:
            CLASSROOM.store.publish(STARTED.pop(), None, None, ended="The test is over.")
    assert found == dict.fromkeys(found, [])
    assert ring == "rgb(255, 255, 255)", "the banner's button shows its focus in white on the dark banner"


def test_the_plane_by_keyboard_alone(open_page):
    """Tab reaches the plane; the arrows move a ring from token to token and across the groups, the
    live region names each; Enter selects as a click does; Escape puts the ring away."""
    page = open_page(KING, (1440, 900))
    page.locator("#sentence-b textarea").focus()
    tab_to(page, "e.matches('#embed-plot .plane-host')", 20)
    plane = page.locator("#embed-plot .plane-host")
    assert plane.get_attribute("role") == "application" and "arrow keys" in plane.get_attribute("aria-label").lower()
    assert page.locator("#plot-announcer").get_attribute("aria-live") == "polite"
    page.wait_for_function(f"() => ({DESCRIPTION})().includes('9 tokens')")
    description = page.evaluate(DESCRIPTION)
    assert "5 groups: token, position, segment" in description and "% of the variance" in description

    page.keyboard.press("ArrowRight")  # the first key shows where the ring starts
    assert page.evaluate(ANNOUNCED).startswith("[CLS], position 0, segment A, token; nearest in the plot: ")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(ANNOUNCED).startswith("king, position 2, segment A, token; nearest in the plot: ")
    ring = page.locator("#embed-plot .plane-ring").bounding_box()
    x, y = point_on_screen(page, "token", "king")
    assert abs(ring["x"] + ring["width"] / 2 - x) < 2 and abs(ring["y"] + ring["height"] / 2 - y) < 2
    page.keyboard.press("ArrowDown")
    assert page.evaluate(ANNOUNCED).startswith("king, position 2, segment A, position")
    page.keyboard.press("ArrowDown")
    assert page.evaluate(ANNOUNCED).startswith("king, position 2, segment A, segment: one point for the 9 tokens")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")

    page.keyboard.press("Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('token') === '2'", timeout=30_000)
    page.wait_for_function("() => document.querySelector('#selected-token input')?.value === '2: king'",
                           timeout=30_000)
    settle(page)
    page.wait_for_function(f"() => {rows('neighbours-token')} === 10", timeout=60_000)  # its table, drawn as it opens
    assert page.evaluate(ANNOUNCED).startswith("king selected; its neighbours are listed under the plot; "
                                               "nearest by token vector: ")
    assert page.evaluate(f"() => {PLOT}.data.some(t => t.name === 'selected token')")
    page.keyboard.press("Escape")
    assert page.locator("#embed-plot .plane-ring").is_hidden()
    assert page.evaluate("() => document.activeElement.matches('#embed-plot .plane-host')"), "Tab moves on from here"
    assert page.errors == []


def test_the_plane_s_text_alternative_names_the_step_s_words_and_follows_typing(open_page):
    page = open_page("step=2")
    page.wait_for_function(f"() => ({DESCRIPTION})().includes('This step names')")
    named = STEPS[1].named
    description = page.evaluate(DESCRIPTION)
    assert " lies " in description and all(word in description for word in {"cat", "mat"} & named)
    tokens = int(description.split(" tokens")[0].rsplit(" ", 1)[-1])
    box = page.locator("#sentence-a textarea")
    box.focus()
    page.keyboard.press("End")
    page.keyboard.type(" and a bird", delay=40)
    page.wait_for_function(f"() => ({DESCRIPTION})().includes('{tokens + 3} tokens')", timeout=30_000)


def test_a_side_chart_by_keyboard_reads_its_hover(open_page):
    """The similarity heatmap carries what no table does: its arrows move cell to cell, and the live
    region says each cell's pair and cosine, as the chart's own hover does."""
    page = open_page("view=similarity")
    page.locator("#similarity-plot[data-keys]").wait_for()
    page.locator("#sentence-b textarea").focus()
    tab_to(page, "e.id === 'similarity-plot'", 30)
    page.wait_for_function(f"() => ({ANNOUNCED})().includes('grid of cells')")
    page.keyboard.press("ArrowRight")  # the first key shows where the keys start: the top left cell
    page.wait_for_function(f"() => ({ANNOUNCED})().startsWith('[CLS] · [CLS]: cos 1.00')")
    for key in ("ArrowRight", "ArrowDown", "ArrowDown"):
        page.keyboard.press(key)
    z = page.evaluate("() => document.querySelector('#similarity-plot .js-plotly-plot')._fullData[0].z[2][1]")
    page.wait_for_function(f"() => ({ANNOUNCED})() === 'cat · the: cos {z:.2f}'")


# every Tab stop's focus ring: its style, width and colour, the colour around it (the first opaque
# background among its ancestors) and its box, the target a pointer has
FOCUS = """() => {
    // a checkbox's or a radio button's target is its label, and the ring goes round it
    const focused = document.activeElement;
    const e = (focused.matches('input[type=checkbox], input[type=radio]') && focused.closest('label')) || focused;
    const style = getComputedStyle(e);
    const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number);
    let around = e.parentElement, ground = [255, 255, 255];
    for (; around; around = around.parentElement) {
        const value = rgb(getComputedStyle(around).backgroundColor);
        if (value.length === 3 || value[3] === 1) { ground = value.slice(0, 3); break; }
    }
    const box = e.getBoundingClientRect();
    return {id: e.id || e.closest('[id]')?.id || e.tagName, style: style.outlineStyle,
            width: parseFloat(style.outlineWidth), colour: rgb(style.outlineColor).slice(0, 3), ground,
            size: [box.width, box.height]};
}"""


def contrast(a: list[float], b: list[float]) -> float:
    def luminance(rgb):
        linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("query", ["", "panel=train&view=similarity"], ids=["tour", "train-similarity"])
def test_every_tab_stop_shows_a_focus_ring_at_three_to_one(open_page, query):
    page = open_page(query)
    page.locator("#sentence-a textarea").focus()
    seen, problems = [], []
    for _ in range(45):
        page.keyboard.press("Tab")
        # the ring as it settles: a control's colours may change over a short transition
        page.evaluate("() => Promise.all((document.activeElement.closest('label') || document.activeElement)"
                      ".getAnimations({subtree: true}).map(a => a.finished))")
        ring = page.evaluate(FOCUS)
        if ring["id"] == "BODY" or ring["id"] in seen[:1]:
            break
        seen.append(ring["id"])
        ratio = contrast(ring["colour"], ring["ground"])
        if ring["style"] == "none" or ring["width"] < 2 or ratio < 3:
            problems.append(f"{ring['id']}: {ring['style']} {ring['width']}px at {ratio:.2f}:1")
        if min(ring["size"]) < 24:
            problems.append(f"{ring['id']}: a target of {ring['size'][0]:.0f}×{ring['size'][1]:.0f} px")
    assert len(seen) > 12, f"the Tabs went round only {seen}"
    assert problems == [], problems


def test_no_animated_transition_for_who_asks_for_none(browser, app_url):
    """Plotly's mode bar fades in over 0.3 s, gradio's controls change colour over some; with
    `prefers-reduced-motion: reduce` neither moves."""
    durations = {}
    for motion in ("no-preference", "reduce"):
        context = browser.new_context(viewport={"width": 1440, "height": 900}, reduced_motion=motion)
        context.add_init_script(COUNT_REQUESTS)
        page = context.new_page()
        page.goto(app_url)
        ready(page)
        durations[motion] = page.evaluate("""() => ['#embed-plot .modebar', '#tab-view-button', '#tour-next']
            .map(s => getComputedStyle(document.querySelector(s)).transitionDuration.split(',')
            .map(parseFloat).reduce((a, b) => Math.max(a, b), 0))""")
        context.close()
    assert max(durations["no-preference"]) >= 0.1, "the check must see the page's transitions where they run"
    assert max(durations["reduce"]) <= 0.001


def test_the_page_works_at_200_percent_zoom(browser, app_url):
    """A 1440 × 900 laptop at 200%: 720 × 450 CSS pixels. Nothing runs past the screen's edge (no
    scrolling sideways), the plot takes the width, and the tour runs by keyboard."""
    context = browser.new_context(viewport={"width": 720, "height": 450}, device_scale_factor=2)
    context.add_init_script(COUNT_REQUESTS)
    try:
        page = context.new_page()
        page.goto(app_url)
        ready(page)
        wide = page.evaluate("""() => [...document.querySelectorAll('.gradio-container *')]
            .filter(e => e.getBoundingClientRect().right > innerWidth + 1 && e.getClientRects().length
                    && getComputedStyle(e).position !== 'fixed'
                    && !e.closest('.visually-hidden, [aria-hidden="true"]'))  // gradio's unseen tab measures
            .map(e => e.id || e.className).slice(0, 5)""")
        assert wide == [] and page.evaluate("() => document.documentElement.scrollWidth") <= 720
        assert page.locator("#embed-plot").bounding_box()["width"] >= 0.75 * 720
        page.locator("#sentence-b textarea").focus()
        tab_to(page, "e.id === 'tour-next'", 12)
        page.keyboard.press("Enter")
        wait_for_text(page, "#tour-text", "Step 1 of", timeout=60_000)
        box = page.locator("#tour-next").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 720
    finally:
        context.close()


# the plane's points as the table lists them (assets/plottable.js): each row's cells' text
TABLE_ROWS = ("() => [...document.querySelectorAll('#plot-table tbody tr')].map(r => "
              "[...r.cells].map(c => c.textContent))")
# the points the plot draws of the five groups (and an encoder layer's), as plotly holds them: each group's name,
# its points' coordinates and each point's position (a segment's: its row)
DRAWN = f"""() => {PLOT}._fullData.filter(t => (['token', 'position', 'segment', 'sum', 'output'].includes(t.name)
    || /^layer \\d+$/.test(t.name)) && t.visible === true)
    .map(t => [t.name, Array.from(t.x, Number), Array.from(t.y, Number),
    Array.from(t.customdata, d => Number(t.name === 'segment' ? d[0] : d[1]))])"""


def table_matches_plot(page) -> list[str]:
    """The table against the drawn figure: a row per drawn point, group by group in sentence order,
    each point's coordinates within 1% of its group's extent. Returns the token group's words."""
    table, drawn = page.evaluate(TABLE_ROWS), page.evaluate(DRAWN)
    assert len(table) == sum(len(xs) for _, xs, _, _ in drawn) > 0
    assert [row[3] for row in table] == [name for name, xs, _, _ in drawn for _ in xs]
    everything = [[x for _, xs, _, _ in drawn for x in xs], [y for _, _, ys, _ in drawn for y in ys]]
    for name, xs, ys, keys in drawn:
        rows = [row for row in table if row[3] == name]
        order = sorted(range(len(xs)), key=keys.__getitem__)
        # a group of one point (one segment) is measured against all the drawn points
        extent = max(max(values) - min(values) for values in ([xs, ys] if len(xs) > 1 else everything))
        for row, i in zip(rows, order, strict=True):
            if name != "segment":
                assert int(row[1]) == keys[i]
            assert abs(float(row[4]) - xs[i]) <= 0.01 * extent and abs(float(row[5]) - ys[i]) <= 0.01 * extent, row
            assert len(row[6].split("), ")) == 2, row  # the two points drawn nearest it
    return [row[0] for row in table if row[3] == "token"]


def test_the_plane_s_points_as_a_table_by_its_switch_and_by_t(open_page):
    """The "Table" switch beside the plot shows table#plot-table and hides it again; `t` on the plane
    shows it and puts the focus on it; it lists every drawn point as the plot draws it, follows
    typing, and axe finds nothing with it shown."""
    page = open_page(KING, (1440, 900))
    switch = page.get_by_role("button", name="Table", exact=True)
    region = page.locator("#plot-table-region")
    assert switch.get_attribute("aria-pressed") == "false" and region.is_hidden()
    plane = page.locator("#embed-plot .plane-host")
    assert "t shows the points as a table" in plane.get_attribute("aria-label").lower()
    switch.click()
    assert switch.get_attribute("aria-pressed") == "true" and region.is_visible()
    assert region.get_attribute("role") == "region" and region.get_attribute("aria-label")
    headers = page.evaluate("() => [...document.querySelectorAll('#plot-table thead th[scope=col]')]"
                            ".map(c => c.textContent)")
    assert headers == ["token", "position", "segment", "group", "x", "y", "nearest in the plot"]
    page.wait_for_function(f"() => ({DESCRIPTION})().includes('% of the variance')")
    kept = page.evaluate(DESCRIPTION).split("keeping ")[1].split("%")[0]  # as the text alternative says it
    caption = page.locator("#plot-table caption").inner_text()
    assert caption == f"The plane's points: 9 tokens in 5 groups, a PCA plane keeping {kept}% of the variance"
    words = table_matches_plot(page)
    assert words == ["[CLS]", "the", "king", "spoke", "to", "the", "queen", ".", "[SEP]"]
    assert page.locator("#plot-table tbody th[scope=row]").count() == len(page.evaluate(TABLE_ROWS))
    assert violations(page) == []
    page.locator("#embed-plot .legend .traces", has_text="sum").click()  # a group hidden from the legend
    page.wait_for_function(f"() => !({TABLE_ROWS})().some(r => r[3] === 'sum')", timeout=10_000)
    table_matches_plot(page)
    page.locator("#embed-plot .legend .traces", has_text="sum").click()
    page.wait_for_function(f"() => ({TABLE_ROWS})().some(r => r[3] === 'sum')", timeout=10_000)
    switch.click()
    assert switch.get_attribute("aria-pressed") == "false" and region.is_hidden()

    plane.focus()
    page.keyboard.press("t")
    assert region.is_visible() and page.evaluate("() => document.activeElement.id") == "plot-table"
    page.keyboard.press("Escape")  # back to the plane it came from
    assert page.evaluate("() => document.activeElement.matches('#embed-plot .plane-host')")

    box = page.locator("#sentence-a textarea")
    box.focus()
    page.keyboard.press("End")
    page.keyboard.type(" A bird sang", delay=40)
    page.wait_for_function(f"""() => {{ const rows = ({TABLE_ROWS})();
        return rows.some(r => r[0] === 'bird' && r[3] === 'token')
            && rows.length === ({DRAWN})().reduce((n, t) => n + t[1].length, 0); }}""", timeout=30_000)
    settle(page)
    words = table_matches_plot(page)
    assert words.count("bird") == 1 and "sang" in words and len(words) == 12
    assert page.errors == []


def test_the_plane_s_table_lists_a_layer_s_group_and_never_widens_a_phone_s_page(open_page):
    """BERT's tables at encoder layer 6, in presenter mode's type on a phone (390 × 844): the table lists
    the "layer 6" group's points as the five groups', and scrolls in its own frame, a Tab stop."""
    page = open_page(f"{KING}&source=bert&layer=6&presenter=1", (390, 844))
    page.get_by_role("button", name="Table", exact=True).click()
    region = page.locator("#plot-table-region")
    assert region.is_visible() and region.get_attribute("tabindex") == "0"
    table_matches_plot(page)
    groups = [row[3] for row in page.evaluate(TABLE_ROWS)]
    assert groups.count("layer 6") == groups.count("token") == 9
    box = region.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    assert page.evaluate("() => document.querySelector('#plot-table').scrollWidth") > box["width"], \
        "the check must see a table wider than the phone"
