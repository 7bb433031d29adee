"""The page for every student, in a real Chromium: axe-core's WCAG 2.2 A/AA rules over the page's
views at a laptop's and a phone's size, over every tour step in presenter mode and in the projector
theme, and over a class's banners; the plane and a side chart explored by keyboard alone, their live
region and the plane's text alternative read as a screen reader reads them; the plane's structure
as a tree; the plane's points as a table; the plane heard, its Web Audio spied on; a focus ring on
every Tab stop at 3:1 or more against what surrounds it, in forced colours too; no animated
transition for who asks for none; 200% and 400% zoom.

axe runs inside the page (axe-playwright-python carries axe-core; nothing is fetched).
"""

from __future__ import annotations

import math
import re
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
    """The default page, tour steps 3 and 5, the Train tab and a selected token at encoder layer 3, whose
    attention the neighbours' panel lists and the plot's text alternative says, and whose path through
    the layers the keys walk (`walk_a_path`), the ring left on one of its vertices."""
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
    # a selected token at encoder layer 3: its neighbours, and whom it attends to, listed and drawn as lines
    page = open_page(f"{KING}&source=bert&layer=3&token=2", viewport)
    wait_for_text(page, "#neighbours-attention", "At layer 3, king attends most to: ")
    said = page.locator("#neighbours-attention").inner_text()
    listed = said.split("At layer 3, king attends most to: ", 1)[1].split(" (mean over")[0]
    first = listed.split(", ")[0]  # "[CLS] 0.76": the plot's description names the same first
    page.wait_for_function(f"() => ({DESCRIPTION})().includes('At layer 3 king attends most to ' + {first!r})")
    # its neighbours are the pair's tokens after layer 3, listed with their cosines, and the description says them
    near = said.split("Nearest to king after layer 3, by the cosine of the pair's layer-3 vectors", 1)[1]
    word, cosine = near.split("): ", 1)[1].split(", ")[0].rsplit(" ", 1)  # "queen (6)", "0.512"
    assert page.evaluate(DESCRIPTION).count("; nearest after layer 3, by the cosine of layer-3 vectors: "
                                            f"{word} {float(cosine):.2f}") == 1
    # and the plane's structure lists them under king in the group "layer 3" (End: the last group)
    page.evaluate("() => window.embeddingExplorerTree.focus()")
    for key in ("End", "ArrowRight", "ArrowRight", "ArrowDown", "ArrowDown"):
        page.keyboard.press(key)
    king = page.evaluate(FOCUSED_ITEM)
    assert king["name"].startswith("king, position 2, ") and f"; by cosine: {word} {float(cosine):.2f}" in king["name"]
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    assert page.evaluate(FOCUSED_ITEM) | {"focused": None} == {
        "level": 4, "expanded": None, "name": f"{word}, cosine {float(cosine):.2f}, nearest after layer 3",
        "focused": None, "tabbable": True}
    assert "(mean of 12 heads), drawn as lines from it." in page.evaluate(DESCRIPTION)
    assert page.evaluate(f"() => {PLOT}.data.filter(t => t.name === 'attention · layer 3').length") == \
        len(listed.split(", "))
    found["selected token at layer 3"] = violations(page)
    walk_a_path(page, "king", 2, 3)
    found["the ring on a path's vertex at layer 3"] = violations(page)  # left after layer 2 of king's path
    assert found == dict.fromkeys(found, [])
    assert page.errors == []


def test_axe_finds_nothing_on_any_tour_step_in_presenter_mode_and_in_the_projector_theme(open_page):
    """The tour with the keyboard alone: Tab to Next, then Enter for each step, the focus kept on Next;
    the last step's chart on the screen beside the plane; then the View tab's theme set to the
    projector's (its controls checked in the dark), and the tour walked back with Previous, every
    step checked again: one page, both themes."""
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
    # the Context step's chart (a selected bank's cosine per layer) in view beside the plane, not under it
    page.wait_for_function("() => document.querySelector('#context-plot .js-plotly-plot')?._fullData", timeout=60_000)
    settle(page)
    chart, plane = (page.locator(selector).bounding_box() for selector in ("#context-plot", "#embed-plot .plane-host"))
    assert chart["height"] > 200 and chart["y"] >= 0 and chart["y"] + chart["height"] <= 1080, chart
    assert chart["x"] >= plane["x"] + plane["width"] and chart["x"] + chart["width"] <= 1920, (chart, plane)
    column = page.locator("#control-column").bounding_box()
    assert column["y"] + column["height"] <= chart["y"], "the control column stops above the chart"
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


# where a token's path through the encoder's layers is drawn, read apart from the page's scripts: the path trace's
# polylines split at their gaps, in the layer group's order; each vertex (hidden state 0, after layer 1, …) as
# [x, y] and in the window's pixels (as scrolled now), with the token's output point
PATH_DRAWN = """([position, depth]) => {
    const gd = document.querySelector('#embed-plot .js-plotly-plot');
    const group = gd._fullData.find(t => t.name === `layer ${depth}`);
    const path = gd._fullData.find(t => t.name.startsWith('path: ') && t.name.endsWith(`layer ${depth}`));
    const lines = [[]];
    Array.from(path.x).forEach((x, i) => {
        if (Number.isNaN(Number(x))) lines.push([]); else lines.at(-1).push([x, path.y[i]]);
    });
    const line = lines[group.customdata.findIndex(row => row[1] === position)];
    const box = gd.getBoundingClientRect();
    const axis = (name) => gd._fullLayout[path[name].replace(name[0], name)];
    const output = gd._fullData.find(t => t.name === 'output');
    const o = output.customdata.findIndex(row => row[1] === position);
    return { vertices: line, output: [output.x[o], output.y[o]],
             pixels: line.map(([x, y]) => [box.left + axis('xaxis')._offset + axis('xaxis').l2p(x),
                                           box.top + axis('yaxis')._offset + axis('yaxis').l2p(y)]) };
}"""
RING_CENTRE = """() => { const r = document.querySelector('#embed-plot .plane-ring');
    const b = r.getBoundingClientRect(); return r.hidden ? null : [b.x + b.width / 2, b.y + b.height / 2]; }"""
HOVER_LABEL = "() => [...document.querySelectorAll('#embed-plot .hoverlayer .hovertext')].map(e => e.textContent)"


def down_to(page, found, most: int = 60) -> None:
    """↓ in the plane's tree until the focused item is `found` (a test of FOCUSED_ITEM's answer)."""
    for _ in range(most):
        if found(page.evaluate(FOCUSED_ITEM)):
            return
        page.keyboard.press("ArrowDown")
    raise AssertionError(f"not reached: the focus is on {page.evaluate(FOCUSED_ITEM)}")


def into(page) -> None:
    """→ into the focused item of the plane's tree: opened if it is closed, then its first child."""
    if page.evaluate(FOCUSED_ITEM)["expanded"] != "true":
        page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")


def walk_a_path(page, word: str, position: int, depth: int) -> None:
    """At encoder layer `depth`, the ring from `word`'s output point down its path: ↓ reaches each layer's
    vertex (the ring on it as drawn, plotly's hover label on it, the phrase naming the layer and how far it
    has come), ← → keep the layer, ↑ climbs back to the output; the plane heard plays each vertex where it is
    drawn; the tree lists the path's vertices under the token of the layer group and rings each. The ring is
    left on the vertex after layer `depth` - 1."""
    drawn = page.evaluate(PATH_DRAWN, [position, depth])
    assert len(drawn["vertices"]) == depth + 1 and drawn["vertices"][0] == drawn["output"], drawn
    layers = re.search(r"after layer \d+ of (\d+)", page.evaluate(f"() => {PLOT}._fullData.find(t => "
                                                          f"t.name === 'layer {depth}').hovertemplate")).group(1)
    page.evaluate("""() => { window.__reached = []; window.embeddingExplorerSound.on(true);
        document.addEventListener('embedding-explorer:reached', (e) => window.__reached.push(e.detail)); }""")
    page.locator("#embed-plot .plane-host").focus()
    while (page.evaluate("() => window.embeddingExplorerKeys.at()") or {}).get("group") != "output":
        assert len(page.evaluate("() => window.__reached")) < 8, page.evaluate(ANNOUNCED)
        page.keyboard.press("ArrowDown")
    assert page.evaluate(ANNOUNCED).startswith(f"{word}, position {position}, segment A, output")
    for k in range(1, depth + 2):  # one more than there are: the last stays
        page.keyboard.press("ArrowDown")
        at = min(k, depth)
        said = page.evaluate(ANNOUNCED)
        apart = math.dist(drawn["vertices"][at], drawn["vertices"][0])
        assert said.startswith(f"{word}, after layer {at} of {layers}, position {position}, segment A, "
                               f"{apart:.2f} from its output point"), said
        centre, (x, y) = page.evaluate(RING_CENTRE), page.evaluate(PATH_DRAWN, [position, depth])["pixels"][at]
        assert centre and abs(centre[0] - x) < 2 and abs(centre[1] - y) < 2, (k, centre, x, y)
        page.wait_for_function(f"() => ({HOVER_LABEL})().join().includes('after layer {at} of {layers}')")
        heard = page.evaluate("() => window.__reached.at(-1)")
        assert heard["group"] == f"layer {at}", heard
        assert math.dist([heard["x"], heard["y"]], drawn["vertices"][at]) < 1e-6, heard
    page.keyboard.press("ArrowRight")
    assert re.match(rf"\S+, after layer {depth} of {layers}, position {position + 1}, ", page.evaluate(ANNOUNCED))
    page.keyboard.press("ArrowLeft")
    for k in range(depth - 1, -1, -1):
        page.keyboard.press("ArrowUp")
        said = page.evaluate(ANNOUNCED)
        assert said.startswith(f"{word}, after layer {k} of" if k else f"{word}, position {position}, segment A, "
                               "output"), said
    assert page.errors == [], "the plane heard at a vertex"
    page.evaluate("() => window.embeddingExplorerSound.on(false)")

    # the tree: the layer group's token opens on its path's vertices, each ringed as it is focused (after its
    # neighbours' stars when it is selected; what was opened before stays open)
    page.keyboard.press("s")
    page.keyboard.press("Home")
    page.keyboard.press("ArrowRight")
    down_to(page, lambda item: item["name"].startswith(f"Layer {depth} vectors: "))
    into(page)
    for _ in range(position):
        page.keyboard.press("ArrowDown")
    token = page.evaluate(FOCUSED_ITEM)
    assert token["name"].startswith(f"{word}, position {position}, "), token
    into(page)
    down_to(page, lambda item: item["name"].startswith(f"{word}, hidden state 0, "))
    vertices = [page.evaluate(FOCUSED_ITEM)]
    for k in range(1, depth + 1):
        page.keyboard.press("ArrowDown")
        vertices.append(page.evaluate(FOCUSED_ITEM))
        centre, (x, y) = page.evaluate(RING_CENTRE), page.evaluate(PATH_DRAWN, [position, depth])["pixels"][k]
        assert centre and abs(centre[0] - x) < 2 and abs(centre[1] - y) < 2, (k, centre, x, y)
    assert [item["level"] for item in vertices] == [4] * (depth + 1)
    assert vertices[0]["name"].startswith(f"{word}, hidden state 0, at x ")
    assert all(item["name"].startswith(f"{word}, after layer {k} of {layers}, at x ")
               and item["name"].endswith(f", {math.dist(drawn['vertices'][k], drawn['vertices'][0]):.2f} from its "
                                         "output point") for k, item in enumerate(vertices[1:], 1)), vertices
    page.keyboard.press("Escape")  # back to the plane, its ring where it was (the output), and down the path again
    for _ in range(depth - 1):
        page.keyboard.press("ArrowDown")
    assert page.evaluate(ANNOUNCED).startswith(f"{word}, after layer {depth - 1} of {layers}, ")


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

    # sound is off unless asked for (?sound=1): the keys make no audio context (assets/sound.js makes one lazily)
    page.evaluate("() => { window.__contexts = 0; const Native = window.AudioContext; window.AudioContext = "
                  "class extends Native { constructor(...a) { super(...a); window.__contexts += 1; } }; }")
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
    page.keyboard.press("p")
    assert page.evaluate("() => window.__contexts") == 0, "no sound without ?sound=1"
    assert page.errors == []


# the plane heard (assets/sound.js), spied on before the page's scripts run: every audio context made, every
# oscillator (its frequency, its starts and stops with when they were called, when it ended) and every stereo
# panner (its place), in the order made (one of each a tone), and when Escape was pressed
AUDIO_SPY = """
window.__sound = { contexts: 0, oscillators: [], panners: [], escapes: [] };
(() => {
  const spy = window.__sound;
  const Native = window.AudioContext;
  window.AudioContext = class extends Native { constructor(...args) { super(...args); spy.contexts += 1; } };
  const made = BaseAudioContext.prototype;
  const createOscillator = made.createOscillator, createStereoPanner = made.createStereoPanner;
  const watched = (param, record, key) => {
    const set = param.setValueAtTime;
    param.setValueAtTime = function (value, when) { record[key] = value; return set.call(this, value, when); };
  };
  made.createOscillator = function () {
    const node = createOscillator.call(this);
    const record = { frequency: null, starts: [], stops: [], ended: null };
    spy.oscillators.push(record);
    watched(node.frequency, record, 'frequency');
    const start = node.start, stop = node.stop;
    node.start = function (when) {
      record.starts.push([when ?? 0, performance.now()]);
      return start.apply(this, arguments);
    };
    node.stop = function (when) {
      record.stops.push([when ?? null, performance.now()]);
      return stop.apply(this, arguments);
    };
    node.addEventListener('ended', () => { record.ended = performance.now(); });
    return node;
  };
  made.createStereoPanner = function () {
    const node = createStereoPanner.call(this);
    const record = { pan: null };
    spy.panners.push(record);
    watched(node.pan, record, 'pan');
    return node;
  };
  window.addEventListener('keydown', (event) => { if (event.key === 'Escape') spy.escapes.push(performance.now()); },
                          true);
})();
"""
TONES = "() => window.__sound.oscillators.map((o, i) => [o.frequency, window.__sound.panners[i].pan])"
# where the ring is, read off the drawn figure: the point's x and y and its axes' drawn ranges
RINGED = """() => {
    const at = window.embeddingExplorerKeys.at();
    const gd = document.querySelector('#embed-plot .js-plotly-plot');
    const trace = gd._fullData.find(t => t.name === at.group && t.visible === true);
    const token = gd._fullData.find(t => t.name === 'token').customdata.find(c => c[1] === at.position);
    const i = at.group === 'segment' ? trace.customdata.findIndex(c => c[0] === token[2])
        : trace.customdata.findIndex(c => c[1] === at.position);
    const range = (axis) => gd._fullLayout[trace[axis].replace(axis[0], axis)].range.map(Number);
    return [trace.x[i], trace.y[i], range('xaxis'), range('yaxis')];
}"""
# the page hidden and shown again, as a browser does when its tab is left: when it was hidden
HIDE = """() => {
    const at = performance.now();
    Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
    document.dispatchEvent(new Event('visibilitychange'));
    delete document.visibilityState;
    return at;
}"""
# the token group's points, in sentence order: [x, y] and the axes' ranges
TOKEN_POINTS = """() => {
    const gd = document.querySelector('#embed-plot .js-plotly-plot');
    const trace = gd._fullData.find(t => t.name === 'token');
    const order = trace.customdata.map((c, i) => [c[1], i]).sort((a, b) => a[0] - b[0]).map(([, i]) => i);
    const range = (axis) => gd._fullLayout[trace[axis].replace(axis[0], axis)].range.map(Number);
    return [order.map(i => [trace.x[i], trace.y[i]]), range('xaxis'), range('yaxis')];
}"""


def ranks(values: list[float]) -> list[float]:
    """Each value's rank from 1, ties given their mean rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    out = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            out[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return out


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation: Pearson's of the ranks."""
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    spread = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / spread if spread else 0.0


def share(value: float, span: list[float]) -> float:
    """Where `value` lies in the drawn range `span`, 0 at its start and 1 at its end."""
    return min(1.0, max(0.0, (value - span[0]) / (span[1] - span[0])))


def test_the_plane_heard(browser, app_url):
    """With ?sound=1 nothing sounds until a key on the plot asks: not the page opening, not typing
    (p and g in a textbox), not a redraw. Then each point the arrows reach is one tone, higher for a
    higher point and further right for a point further right; P plays the sentence's tokens in order,
    G each of the group's spots once from left to right, Escape stops every tone scheduled; and with
    the switch turned off (axe finds nothing in its tab) the arrows sound nothing."""
    from tests.browser import new_context, open_at

    context = new_context(browser, (1440, 900))
    context.add_init_script(AUDIO_SPY)
    try:
        page = open_at(browser, app_url, f"sound=1&{KING}", context=context)
        plane = page.locator("#embed-plot .plane-host")
        page.wait_for_function("() => document.querySelector('#embed-plot .plane-host')"
                               ".getAttribute('aria-label').includes('P plays')")
        box = page.locator("#sentence-a textarea")
        box.focus()
        page.keyboard.press("End")
        page.keyboard.type(" a pig gap", delay=40)
        page.wait_for_function(f"() => {PLOT}._fullData.find(t => t.name === 'token').x.length > 9", timeout=30_000)
        settle(page)
        assert page.evaluate("() => [window.__sound.contexts, window.__sound.oscillators.length]") == [0, 0]

        plane.focus()
        walk = ["ArrowRight"] * 5 + ["ArrowDown"] + ["ArrowLeft"] * 3 + ["ArrowDown"] * 2 + ["ArrowRight"] * 4 + \
            ["ArrowDown", "ArrowLeft", "ArrowLeft", "End", "ArrowUp", "Home"]
        points = []
        for key in walk:
            page.keyboard.press(key)
            points.append(page.evaluate(RINGED))
        tones = page.evaluate(TONES)
        assert len(tones) == len(walk) >= 10, "one tone a point reached"
        heights = [share(y, yrange) for _, y, _, yrange in points]
        sides = [share(x, xrange) for x, _, xrange, _ in points]
        assert spearman([f for f, _ in tones], heights) >= 0.8
        assert spearman([p for _, p in tones], sides) >= 0.8
        assert all(220 <= f <= 880 and -1 <= p <= 1 for f, p in tones)

        page.keyboard.press("Escape")  # the ring put away: P plays the token group
        before = len(page.evaluate(TONES))
        page.keyboard.press("p")
        page.keyboard.press("Escape")  # at once: the phrase has only begun
        phrase = page.evaluate(TONES)[before:]
        spots, xrange, yrange = page.evaluate(TOKEN_POINTS)
        assert len(phrase) == len(spots), "a tone for each token"
        assert spearman([f for f, _ in phrase], [share(y, yrange) for _, y in spots]) >= 0.95, "in sentence order"
        # the audio itself stops: every tone has ended well before the phrase would have (150 ms a token)
        page.wait_for_function("() => window.__sound.oscillators.every(o => o.ended !== null)", timeout=10_000)
        spy = page.evaluate("() => window.__sound")
        escape = spy["escapes"][-1]
        played = spy["oscillators"][before:]
        starts = [o["starts"][0][0] for o in played]
        assert all(b > a for a, b in zip(starts, starts[1:], strict=False)), "one after the other"
        stopped = [o for o in played if any(when is None and called >= escape for when, called in o["stops"])]
        ended_before = [o for o in played if o["ended"] is not None and o["ended"] < escape]
        assert len(stopped) + len(ended_before) == len(played) and len(stopped) >= len(played) // 2
        assert all(called < escape for o in spy["oscillators"] for _, called in o["starts"]), "nothing starts after"
        assert max(o["ended"] for o in played) - escape < min(1000, 150 * (len(played) - 1) - 200)

        page.keyboard.press("ArrowRight")  # the ring back, on the token group: G plays its spots left to right
        before = len(page.evaluate(TONES))
        page.keyboard.press("g")
        hidden = page.evaluate(HIDE)  # the page hidden (another tab, a closed laptop) stops the phrase too
        group = page.evaluate(TONES)[before:]
        played = page.evaluate("() => window.__sound.oscillators")[before:]
        assert all(any(when is None and called >= hidden for when, called in o["stops"])
                   or (o["ended"] is not None and o["ended"] < hidden) for o in played)
        distinct = sorted({(x, y) for x, y in spots})
        assert len(group) == len(distinct) < len(spots), "a repeated word's tokens share a spot"
        assert [p for _, p in group] == sorted(p for _, p in group), "from left to right"
        by_x = [share(y, yrange) for _, y in sorted(distinct)]
        assert spearman([f for f, _ in group], by_x) >= 0.95

        page.get_by_role("tab", name="View").click()
        page.locator("#sound input").wait_for()
        assert page.locator("#sound input").is_checked()
        assert violations(page) == []
        page.locator("#sound input").uncheck()
        settle(page)
        assert "sound" not in page.evaluate("() => location.search")
        assert "P plays" not in plane.get_attribute("aria-label")
        before = len(page.evaluate(TONES))
        plane.focus()
        for key in ("ArrowRight", "ArrowRight", "ArrowDown", "p", "g"):
            page.keyboard.press(key)
        assert len(page.evaluate(TONES)) == before, "sound off: silence"
        assert page.errors == []
    finally:
        context.close()


# every item of the plane's structure as the page has it: its level, name (the text it is labelled by),
# whether it is open, and whether it has the focus
TREE_ITEMS = """() => [...document.querySelectorAll('#plot-tree [role=treeitem]')].map(e => ({
    level: Number(e.getAttribute('aria-level')), expanded: e.getAttribute('aria-expanded'),
    name: document.getElementById(e.getAttribute('aria-labelledby')).textContent,
    focused: e === document.activeElement, tabbable: e.tabIndex === 0}))"""
FOCUSED_ITEM = f"() => ({TREE_ITEMS})().find(item => item.focused) || null"
# the token trace's drawn points by position: [x, y]
TOKEN_POINTS_AT = f"""() => {{ const t = {PLOT}._fullData.find(t => t.name === 'token');
    return Object.fromEntries(Array.from(t.customdata, (row, i) => [row[1], [t.x[i], t.y[i]]])); }}"""


def test_the_plane_s_structure_is_a_tree_to_walk_by_keyboard(open_page):
    """The Tab stop after the plane is a WAI-ARIA tree: the plane, its groups, each group's tokens in
    sentence order (where each is drawn), a selected token's neighbours with their cosines; the
    arrows walk it, Escape goes back to the plane and `s` comes again; axe finds nothing in it open;
    Enter selects a token; typing a new word, the tree follows."""
    page = open_page(f"{KING}&token=2", (1440, 900))
    page.locator("#sentence-b textarea").focus()
    tab_to(page, "e.matches('#embed-plot .plane-host')", 20)
    assert "structure" in page.locator("#embed-plot .plane-host").get_attribute("aria-label")
    between = []  # the plot's own tool bar and its Table switch, then the tree
    while len(between) < 20 and not page.evaluate("() => document.activeElement.closest('#plot-tree') !== null"):
        page.keyboard.press("Tab")
        between.append(page.evaluate("() => document.activeElement.matches("
                                     "'#embed-plot .modebar-btn, #embed-plot .plane-table-switch')"))
    assert between[-1] is False and all(between[:-1]), "the Tab stop after the plane, its tool bar and Table"
    tree = page.locator("#plot-tree")
    assert tree.get_attribute("role") == "tree" and tree.get_attribute("aria-label")
    items = page.evaluate(TREE_ITEMS)
    assert [item["tabbable"] for item in items].count(True) == 1
    first = page.evaluate(FOCUSED_ITEM)
    tokens = page.evaluate(f"() => {PLOT}._fullData.find(t => t.name === 'token').x.length")
    assert first["level"] == 1 and first["expanded"] == "true"
    assert first["name"].startswith(f"Embedding plane: {tokens} tokens in 5 groups (token, position, segment, sum, "
                                    "output); a PCA plane keeping ")
    assert first["name"].endswith("% of the variance")
    page.keyboard.press("End")  # the last item shown: the last group (closed)
    assert page.evaluate(FOCUSED_ITEM)["name"].startswith("Output vectors: ")
    page.keyboard.press("Home")
    assert page.evaluate(FOCUSED_ITEM) == first

    page.keyboard.press("ArrowRight")  # the plane is open: to its first group
    groups = [page.evaluate(FOCUSED_ITEM)]
    for _ in range(5):  # one more than there are: the last stays
        page.keyboard.press("ArrowDown")
        groups.append(page.evaluate(FOCUSED_ITEM))
    assert [item["level"] for item in groups] == [2] * 6 and groups[-1] == groups[-2]
    assert [item["name"].split(":")[0] for item in groups[:5]] == [
        "Token vectors", "Position vectors", "Segment vectors", "Sum vectors", "Output vectors"]
    assert all(re.search(r": \d+ points?, .*\bin the (centre|(top|middle|bottom) (left|centre|right))\b.*"
                         r"; nearest group: [a-z]+$", item["name"]) for item in groups[:5]), groups
    for _ in range(4):
        page.keyboard.press("ArrowUp")
    assert page.evaluate(FOCUSED_ITEM)["name"].startswith("Token vectors")
    page.keyboard.press("ArrowRight")  # opens the group
    assert page.evaluate(FOCUSED_ITEM)["expanded"] == "true"
    page.keyboard.press("ArrowRight")  # to its first token
    walked = [page.evaluate(FOCUSED_ITEM)]
    for _ in range(tokens - 1):
        page.keyboard.press("ArrowDown")
        walked.append(page.evaluate(FOCUSED_ITEM))
    assert [item["level"] for item in walked] == [3] * tokens
    words = page.evaluate("() => [...document.querySelectorAll('.token-table tbody tr')]"
                          ".map(row => row.cells[0].textContent)")
    assert [item["name"].split(", position ")[0] for item in walked] == words
    drawn = page.evaluate(TOKEN_POINTS_AT)
    for position, item in enumerate(walked):
        assert f", position {position}, " in item["name"]
        at = re.search(r", at x (\S+), y ([^,;]+)", item["name"]).groups()
        x, y = (float(value.replace("−", "-")) for value in at)
        assert abs(x - drawn[str(position)][0]) < 0.006 and abs(y - drawn[str(position)][1]) < 0.006
    assert "; nearest in the plot: " in walked[3]["name"]
    # the ring is on the focused token's point
    ring = page.locator("#embed-plot .plane-ring").bounding_box()
    x, y = point_on_screen(page, "token", words[-1])
    assert abs(ring["x"] + ring["width"] / 2 - x) < 2 and abs(ring["y"] + ring["height"] / 2 - y) < 2

    # the selected token (king) has its neighbour stars under it, with their cosines
    for _ in range(tokens - 3):
        page.keyboard.press("ArrowUp")
    king = page.evaluate(FOCUSED_ITEM)
    assert king["name"].startswith("king, position 2, ") and ", selected" in king["name"]
    assert "; by cosine: " in king["name"] and king["expanded"] == "false"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    star = page.evaluate(FOCUSED_ITEM)
    near = page.evaluate(f"() => {{ const t = {PLOT}._fullData.find(t => t.name === 'nearest by token vector');"
                         " return [t.hovertext[0], t.customdata[0]]; }")
    assert star["level"] == 4 and star["name"] == f"{near[0]}, cosine {near[1]:.2f}, nearest by token vector"
    assert f"by cosine: {near[0]} {near[1]:.2f}" in king["name"]
    assert page.evaluate("() => document.querySelector('#embed-plot .plane-ring').hidden") is False
    page.keyboard.press("ArrowLeft")  # to the token
    page.keyboard.press("ArrowLeft")  # closes it
    assert page.evaluate(FOCUSED_ITEM)["expanded"] == "false"
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    names = [item["name"] for item in page.evaluate(TREE_ITEMS)]
    assert not [name for name in names if "<" in name or "&lt;" in name or "&amp;" in name], names
    items = page.evaluate(TREE_ITEMS)
    assert {item["level"] for item in items} == {1, 2, 3, 4}
    assert [item for item in items if item["tabbable"]] == [item for item in items if item["focused"]], "roving"
    # an open item's name is its own line, not its branch's lines too
    assert page.get_by_role("treeitem", name=groups[0]["name"], exact=True).get_attribute("aria-expanded") == "true"
    assert page.get_by_role("treeitem", level=4).count() == page.evaluate(
        f"() => {PLOT}._fullData.find(t => t.name === 'nearest by token vector').x.length")
    assert violations(page) == []

    page.keyboard.press("Escape")
    assert page.evaluate("() => document.activeElement.matches('#embed-plot .plane-host')")
    page.keyboard.press("s")
    assert page.evaluate(FOCUSED_ITEM)["level"] == 4, "the tree keeps its place"
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")  # up to the token group
    page.keyboard.press("ArrowRight")
    for _ in range(6):
        page.keyboard.press("ArrowDown")
    assert page.evaluate(FOCUSED_ITEM)["name"].startswith("queen, position 6, ")
    page.keyboard.press("Enter")
    page.wait_for_function("() => new URLSearchParams(location.search).get('token') === '6'", timeout=30_000)
    page.wait_for_function(f"() => ({FOCUSED_ITEM})()?.name.includes('queen, position 6, ') "
                           f"&& ({FOCUSED_ITEM})().name.includes(', selected')", timeout=30_000)

    # typing: the tree, left, follows once drawing pauses
    box = page.locator("#sentence-a textarea")
    box.focus()
    page.keyboard.press("End")
    page.keyboard.type(" A bird sang.", delay=40)
    page.wait_for_function(f"() => ({TREE_ITEMS})().some(item => item.level === 3 && item.name.startsWith('bird, '))",
                           timeout=30_000)
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


# the five groups' drawn fills, by group: each trace's first point as the browser paints it
GROUP_FILLS = f"""() => {{ const gd = {PLOT}; const groups = ['token', 'position', 'segment', 'sum', 'output'];
    const traces = [...gd.querySelectorAll('.scatterlayer .trace')];
    return Object.fromEntries(gd._fullData.map((t, i) => [t.name, traces[i]]).filter(([name, node]) =>
        groups.includes(name) && node && node.querySelector('.point'))
        .map(([name, node]) => [name, getComputedStyle(node.querySelector('.point')).fill]));
}}"""
RING = """() => { const r = document.querySelector('#embed-plot .plane-ring'), s = getComputedStyle(r);
    const bg = document.querySelector('#embed-plot .js-plotly-plot .main-svg .bg');
    const rgb = (text) => (text.match(/[\\d.]+/g) || []).map(Number).slice(0, 3);
    return {hidden: r.hidden, colour: rgb(s.borderTopColor), width: parseFloat(s.borderTopWidth),
            ground: rgb(getComputedStyle(bg).fill)}; }"""


def forced_colours(page) -> None:
    """A dark high-contrast theme (Windows' forced colours): the theme's colours replace the page's,
    where the page does not keep its own. The plot keeps its five groups' fills (an SVG's colours
    are the data's), the ring its dark ring and white halo on the plot."""
    page.emulate_media(forced_colors="active", color_scheme="dark")
    fills = page.evaluate(GROUP_FILLS)
    assert len(fills) == 5 and len(set(fills.values())) == 5, fills
    page.evaluate(f"() => {PLOT}.focus()")
    page.keyboard.press("ArrowRight")
    ring = page.evaluate(RING)
    assert not ring["hidden"] and ring["width"] >= 2 and contrast(ring["colour"], ring["ground"]) >= 3, ring


@pytest.mark.parametrize("query, forced", [("", False), ("panel=train&view=similarity", False), ("", True)],
                         ids=["tour", "train-similarity", "forced-colours"])
def test_every_tab_stop_shows_a_focus_ring_at_three_to_one(open_page, query, forced):
    page = open_page(query)
    if forced:
        forced_colours(page)
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


# a control whose text does not fit it: a button's text running past its box, a picker's chosen
# entry wider than the picker (less its arrow)
CUT = """() => { const measure = document.createElement('canvas').getContext('2d');
    const past = (e) => {
        const box = e.getBoundingClientRect(), walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
        for (let node = walk.nextNode(); node; node = walk.nextNode()) {
            if (!node.textContent.trim() || node.parentElement.closest('.icon')) continue;  // gradio's ▼
            const range = document.createRange(); range.selectNodeContents(node);
            const text = range.getBoundingClientRect();
            if (text.left < box.left - 1 || text.right > box.right + 1) return true;
        }
        return false; };
    return [...document.querySelectorAll('.gradio-container button, .gradio-container select')]
        .filter(e => e.getClientRects().length && !e.closest('.visually-hidden, [aria-hidden="true"], .offscreen'))
        .filter(e => { if (e.tagName !== 'SELECT') return past(e);
            const style = getComputedStyle(e); measure.font = `${style.fontSize} ${style.fontFamily}`;
            return measure.measureText(e.selectedOptions[0]?.text || '').width > e.clientWidth - 24; })
        .map(e => e.id || e.textContent.trim().slice(0, 20)); }"""


@pytest.mark.parametrize("zoom", [2, 4], ids=["200%", "400%"])
def test_the_page_works_at_200_and_400_percent_zoom(browser, app_url, zoom):
    """A 1440 × 900 laptop at 200%: 720 × 450 CSS pixels; a 1280 × 1024 screen at 400%: 320 × 256,
    WCAG's reflow width. Nothing runs past the screen's edge (no scrolling sideways), no control's
    text is cut, the plot takes the width, and the tour runs by keyboard."""
    width, height = (720, 450) if zoom == 2 else (320, 256)
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=zoom)
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
        assert wide == [] and page.evaluate("() => document.documentElement.scrollWidth") <= width
        assert page.locator("#embed-plot").bounding_box()["width"] >= 0.75 * width
        assert page.evaluate(CUT) == []
        page.locator("#sentence-b textarea").focus()
        tab_to(page, "e.id === 'tour-next'", 12)
        page.keyboard.press("Enter")
        wait_for_text(page, "#tour-text", "Step 1 of", timeout=60_000)
        box = page.locator("#tour-next").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
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
