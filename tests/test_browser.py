"""The page in a real Chromium: it loads with a plot, and typing updates the plot's data."""

import itertools
from pathlib import Path

import pytest

from tests.browser import IMAGES_SETTLED, wait_for_text

pytestmark = pytest.mark.browser

PLOT_DATA = "() => { const p = document.querySelector('#embed-plot .js-plotly-plot'); return p && p.data; }"
TRACE_NAMES = f"() => ({PLOT_DATA})().map(t => t.name)"


def plot_tokens(page) -> set[str]:
    data = page.evaluate(PLOT_DATA)
    return {token for trace in data for token in trace.get("hovertext") or ()}


def wait_for_plot(page):
    page.wait_for_function(f"() => {{ const d = ({PLOT_DATA})(); return d && d.length >= 5; }}", timeout=30_000)


def test_page_loads_with_a_plot_of_five_groups(page):
    wait_for_plot(page)
    assert page.evaluate(TRACE_NAMES)[:5] == ["token", "position", "segment", "sum", "output"]
    assert {"[CLS]", "cat", "[SEP]"} <= plot_tokens(page)
    assert page.locator("#token-table").is_visible()


def test_typing_a_new_word_puts_it_in_the_plot(page):
    wait_for_plot(page)
    box = page.locator("#sentence-a textarea")
    box.fill("The teacher ate lunch.")
    page.wait_for_function(
        f"() => ({PLOT_DATA})().some(t => (t.hovertext || []).includes('teacher'))",
        timeout=30_000,
    )
    assert "teacher" in plot_tokens(page)


# the plane as drawn: each trace's drawn points (their place, shape and paint), its lines (their
# vertices and paint) and the axes' titles
DRAWN = """(gd) => ({
    points: Object.fromEntries([...gd.querySelectorAll('.scatterlayer .trace')].map((g) => [
        g.__data__[0].trace.name, [...g.querySelectorAll('path.point')].map((p) => {
            const [x, y] = p.getAttribute('transform').slice(10, -1).split(',').map(Number);
            const style = getComputedStyle(p);
            return [x, y, p.getAttribute('d'), style.fill, style.stroke, style.opacity, style.fillOpacity];
        })])),
    lines: Object.fromEntries([...gd.querySelectorAll('.scatterlayer .trace')].map((g) => [
        g.__data__[0].trace.name, [...g.querySelectorAll('path.js-line')].map((p) => {
            const style = getComputedStyle(p);
            const vertices = p.getAttribute('d').match(/-?[0-9.]+/g).map(Number);
            return [vertices, style.stroke, style.strokeWidth, style.opacity];
        })])),
    titles: [...gd.querySelectorAll('.g-xtitle text, .g-ytitle text')].map((t) => t.textContent),
})"""
# the first figure drawn by moving its points from now on (assets/move.js; the plot's data-moved
# says "points"), caught as it is drawn: what is drawn, the traces and axes it was drawn from
CATCH_MOVED = f"""() => {{
    const gd = document.querySelector('#embed-plot .js-plotly-plot');
    const drawn = {DRAWN};
    window.__moved = null;
    window.__moves = [];  // what each figure's move gave (true, "past", false), for a failure's message
    const move = window.embeddingMove.move;
    window.embeddingMove.move = (...given) => {{ const got = move(...given); window.__moves.push(got); return got; }};
    new MutationObserver((records, observer) => {{
        if (gd.dataset.moved !== 'points') return;
        const full = gd._fullLayout;
        const axes = Object.fromEntries(Object.keys(full).filter((n) => /^[xy]axis\\d*$/.test(n) && full[n]._length)
            .map((n) => [n, {{offset: full[n]._offset, length: full[n]._length, range: full[n].range.slice()}}]));
        window.__moved = {{drawn: drawn(gd), data: gd.data.slice(), layout: JSON.parse(JSON.stringify(gd.layout)), axes,
            width: full.width, height: full.height,
            tokens: gd.data.find((t) => t.name === 'output').hovertext.slice()}};
        observer.disconnect();
    }}).observe(gd, {{attributes: true, attributeFilter: ['data-moved']}});
}}"""
# that figure drawn whole by plotly itself from the same traces on the same axes, in a plot of its own
WHOLE_OF_MOVED = f"""async () => {{
    const caught = window.__moved;
    const drawn = {DRAWN};
    const div = document.createElement('div');
    div.style.cssText = `position: fixed; left: -5000px; top: 0; width: ${{caught.width}}px;`
        + ` height: ${{caught.height}}px`;
    document.body.appendChild(div);
    // the moved plot's axes exactly: their ranges, and the margins and domains that put each panel's
    // axes where they are drawn (each axis held to its range, nothing constrained)
    const axes = Object.entries(caught.axes);
    const ends = (letter) => {{
        const mine = axes.filter(([n]) => n[0] === letter).map(([, a]) => a);
        return [Math.min(...mine.map((a) => a.offset)), Math.max(...mine.map((a) => a.offset + a.length))];
    }};
    const [left, right] = ends('x'), [top, bottom] = ends('y');
    const layout = {{...caught.layout, width: caught.width, height: caught.height, autosize: false, margin: {{l: left,
        r: caught.width - right, t: top, b: caught.height - bottom, autoexpand: false}}}};
    for (const [name, a] of axes) {{
        const domain = name[0] === 'x'
            ? [(a.offset - left) / (right - left), (a.offset + a.length - left) / (right - left)]
            : [(bottom - a.offset - a.length) / (bottom - top), (bottom - a.offset) / (bottom - top)];
        const {{scaleanchor, scaleratio, constrain, ...axis}} = layout[name] || {{}};
        layout[name] = {{...axis, domain, range: a.range, autorange: false, automargin: false}};
    }}
    await Plotly.newPlot(div, caught.data.map((t) => ({{...t}})), layout, {{responsive: false}});
    const whole = drawn(div);
    Plotly.purge(div);
    div.remove();
    return {{moved: caught.drawn, whole, tokens: caught.tokens}};
}}"""


@pytest.mark.parametrize("query", ["", "source=bert&layer=3"], ids=["random", "bert-layer-3"])
def test_a_keystroke_moves_the_drawn_points_where_plotly_would_draw_them(open_page, query):
    """Typing draws each figure by moving plotly's point nodes (assets/move.js) when only the points
    changed: what is drawn then equals what plotly draws whole from the same traces on the same axes
    (every point's place within 0.02 px, its symbol's path, fill, stroke and opacity; each line's
    vertices and paint, the paths through the encoder's layers among them; the axes' titles), new
    tokens and word pieces included; once typing pauses plotly draws it whole again."""
    page = open_page(query)
    wait_for_plot(page)
    box = page.locator("#sentence-a textarea")
    box.click()
    page.keyboard.press("End")
    page.keyboard.type(" and quiz", delay=40)
    page.evaluate(CATCH_MOVED)
    page.keyboard.type("zically", delay=40)  # word pieces: a symbol the first figure lacks
    # a figure drawn by moving its points, not only whole: at an encoder layer a key may turn the plane
    # enough to be drawn whole, with room for the next keys' moves
    for key in "ssssssssssssssssssss":
        if page.evaluate("() => window.__moved !== null"):
            break
        page.keyboard.type(key)
        page.wait_for_timeout(150)
    assert page.evaluate("() => window.__moved !== null"), page.evaluate("() => window.__moves")
    seen = page.evaluate(WHOLE_OF_MOVED)
    moved, whole = seen["moved"], seen["whole"]
    assert moved["titles"] == whole["titles"]
    assert sorted(moved["points"]) == sorted(whole["points"])
    for name, points in whole["points"].items():
        assert len(moved["points"][name]) == len(points), name
        for a, b in zip(moved["points"][name], points, strict=True):
            assert abs(a[0] - b[0]) <= 0.02 and abs(a[1] - b[1]) <= 0.02, (name, a, b)
            assert a[2:] == b[2:], (name, a, b)
    assert sorted(moved["lines"]) == sorted(whole["lines"])
    for name, lines in whole["lines"].items():
        assert len(moved["lines"][name]) == len(lines), name
        for (a, *paint_a), (b, *paint_b) in zip(moved["lines"][name], lines, strict=True):
            assert len(a) == len(b) and max(abs(u - v) for u, v in zip(a, b, strict=True)) <= 0.02, (name, a, b)
            assert paint_a == paint_b, name
    if "layer" in query:
        assert any(lines for name, lines in moved["lines"].items() if name.startswith("path")), moved["lines"]
    assert any(token.startswith("##") for token in seen["tokens"]), seen["tokens"]
    # drawn whole once typing pauses: plotly's own hover data holds every point again
    page.wait_for_function("() => !document.querySelector('#embed-plot .js-plotly-plot').dataset.moved",
                           timeout=30_000)
    counts = page.evaluate("""() => { const gd = document.querySelector('#embed-plot .js-plotly-plot');
        return gd.data.map((t, i) => [t.name, gd.calcdata[i].length, (t.hovertext || []).length]); }""")
    assert all(drawn == given for name, drawn, given in counts if name == "output"), counts


def test_markup_typed_as_a_sentence_stays_text(page):
    wait_for_plot(page)
    page.evaluate("window.__pwned = false")
    page.locator("#sentence-b textarea").fill('<img src=x onerror="window.__pwned = true">')
    page.wait_for_function(
        f"() => ({PLOT_DATA})().some(t => (t.hovertext || []).some(h => h.includes('&lt;')))",
        timeout=30_000,
    )
    page.hover("#embed-plot .js-plotly-plot")
    page.wait_for_selector("#embed-plot .hoverlayer .hovertext")  # the hover drew its text
    page.evaluate(IMAGES_SETTLED)  # an image that text put in the page would have fired by now
    assert page.evaluate("window.__pwned") is False
    assert page.locator("#embed-plot img[src='x']").count() == 0
    # the token table is drawn from the same escaped names: text, not an element
    page.wait_for_function(
        "() => [...document.querySelectorAll('#token-table tbody td')].some(c => c.textContent === '<')")
    assert page.locator("#token-table img").count() == 0


TABLE_ROWS = ("() => [...document.querySelectorAll('#token-table tbody tr')]"
              ".map(r => [...r.cells].map(c => c.textContent))")


def test_the_token_table_shows_what_hovering_the_points_says(page):
    """The table is drawn in the browser from the plot's token columns: each row is its token's
    name, id, position, segment and norms, as the expanded traces' hover data has them."""
    wait_for_plot(page)
    page.locator("#sentence-a textarea").fill("The teacher ate lunch with the teacher.")
    page.wait_for_function("() => document.querySelector('#token-table tbody').textContent.includes('lunch')",
                           timeout=30_000)
    rows = page.evaluate(TABLE_ROWS)
    data = {trace["name"]: trace for trace in page.evaluate(PLOT_DATA)}
    by_position = {group: {int(c[1]): c for c in data[group]["customdata"]}
                   for group in ("token", "position", "sum", "output")}
    names = dict(zip((int(c[1]) for c in data["position"]["customdata"]), data["position"]["hovertext"],
                     strict=True))
    assert [int(row[2]) for row in rows] == list(range(len(rows))) and len(rows) == len(names)
    for row in rows:
        position = int(row[2])
        token_id, _, segment, _ = by_position["token"][position]
        assert (row[0], int(row[1]), int(row[3])) == (names[position], token_id, segment)
        for column, group in ((4, "token"), (5, "position"), (7, "sum"), (8, "output")):
            assert float(row[column]) == pytest.approx(by_position[group][position][3], abs=5e-4)
    # the two "teacher"s are one point of the token group, and its hover names both
    piled = [h for h in data["token"]["hovertext"] if h.startswith("teacher (")]
    assert piled and all(h == piled[0] for h in piled) and piled[0].count("teacher") == 2


def test_bert_preset_changes_the_plot(page):
    wait_for_plot(page)
    first_x = f"() => JSON.stringify(({PLOT_DATA})()[0].x)"
    before = page.evaluate(first_x)
    page.get_by_role("tab", name="Tables").click()
    page.locator("#table-source").get_by_text("BERT (MiniLM").click()
    page.wait_for_function(f"() => ({first_x})() !== {before!r}", timeout=30_000)
    page.wait_for_function("() => document.querySelector('#tables-info')?.innerText.includes('30,522 × 384')")


# every change of the page's live regions, with when it came: what a screen reader is told
HEARD = """() => { window.heard = [];
    new MutationObserver((changes) => { for (const change of changes) {
        const node = change.target.nodeType === 1 ? change.target : change.target.parentElement;
        const region = node && node.closest('[aria-live], [role=status], [role=alert]');
        const said = region && region.textContent.trim();
        const last = window.heard.at(-1);
        if (said && !(last && last.id === region.id && last.text === said))
            window.heard.push({t: performance.now(), id: region.id, text: said});
    } }).observe(document.body, {subtree: true, childList: true, characterData: true}); }"""


def test_freeze_token_train_and_the_loss_curve_appears(page):
    """A training, and what a screen reader hears while a person types and trains: at most one
    sentence a second, the latest (a training's steps are not read out one by one)."""
    wait_for_plot(page)
    page.get_by_role("tab", name="Train").click()
    page.locator("#freeze-token input").check()
    wait_for_text(page, "#param-status", "frozen: token")
    page.evaluate(HEARD)
    page.locator("#sentence-a textarea").type(" by the river bank", delay=30)
    page.locator("#train-steps input").fill("400")
    page.locator("#train-button").click()
    # the curve may be drawn while training runs (a busy machine): the end is the summary
    wait_for_text(page, "#train-summary", "Trained 400 steps", timeout=60_000)
    page.wait_for_function("() => document.getElementById('train-said').textContent.includes('Trained 400 steps')",
                           timeout=10_000)  # the last line is heard, after the ones before it
    heard = page.evaluate("() => window.heard")
    assert [h for h in heard if h["id"] == "train-said"], heard
    gaps = [round(b["t"] - a["t"]) for a, b in itertools.pairwise(heard)]
    assert all(gap >= 950 for gap in gaps), (gaps, heard)  # one a second at most, across the page
    page.wait_for_function(
        "() => { const p = document.querySelector('#loss-plot .js-plotly-plot'); return p && p.data.length === 1; }",
        timeout=60_000,
    )
    page.wait_for_function(f"() => ({PLOT_DATA})().some(t => t.name === 'before training')", timeout=30_000)


def test_opening_a_page_sends_nothing_through_the_queue_and_a_link_s_panel_is_opened(browser, app_url):
    """A page opens over its own route (its first call carries the link and the screen, and
    gets the page's key): nothing goes through gradio's queue, and writing a tab selection or an
    empty search the page already holds fires no event of gradio's either (it made gradio's
    browser code send three more: two tab selects, one redrawing the plane, and a search). A
    link to another panel still opens it."""
    import json

    def opened(query: str, panel: str, shown: str) -> tuple[list, list, object]:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        joins, opens = [], []
        page.on("request", lambda request: joins.append(request.url) if "queue/join" in request.url else None)
        page.on("request", lambda request: opens.append(json.loads(request.post_data)["open"])
                if "explorer/live" in request.url and "open" in json.loads(request.post_data) else None)
        page.goto(f"{app_url}?{query}")
        wait_for_plot(page)
        assert page.get_by_role("tab", name=panel).get_attribute("aria-selected") == "true"
        page.locator(shown).wait_for(state="visible", timeout=30_000)  # the panel's controls are drawn
        # then the page's link, asked for in the View tab over its route: once its answer is in,
        # whatever the opening sent through the queue was sent before it
        page.get_by_role("tab", name="View").click()
        page.locator("#share-button").click()
        page.wait_for_function("() => document.querySelector('#share-link textarea, #share-link input')"
                               "?.value.startsWith('http')", timeout=30_000)
        context.close()
        return joins, opens

    joins, opens = opened("", "Tour", "#tour-next")
    assert joins == [] and len(opens) == 1 and opens[0]["query"] == "" and opens[0]["narrow"] is False
    joins, opens = opened("panel=train", "Train", "#train-steps input")
    assert joins == [] and [sent["query"] for sent in opens] == ["panel=train"]


def test_a_tab_s_controls_load_when_it_opens_and_an_example_pair_fills_both_boxes(page):
    """A first visit loads the code of what it shows (the Tour panel and the plane); a tab's
    controls are drawn, and their code fetched, when the tab opens (ui/ondemand.py)."""
    wait_for_plot(page)
    page.wait_for_load_state("networkidle")
    assert page.locator("#train-button").count() == 0 and page.locator("#refit-button").count() == 0
    fetched = []
    page.on("request", lambda request: fetched.append(request.url) if "/assets/" in request.url else None)
    page.get_by_role("tab", name="Train").click()
    page.locator("#train-button").wait_for(state="visible", timeout=30_000)
    assert fetched  # the Train panel's code came now
    page.locator("#examples button[data-example='2']").click()
    page.wait_for_function("() => document.querySelector('#sentence-a textarea').value.includes('river bank')",
                           timeout=30_000)
    assert "interest rates" in page.locator("#sentence-b textarea").input_value()
    page.wait_for_function(f"() => ({PLOT_DATA})().some(t => (t.hovertext || []).some(h => h.startsWith('river')))",
                           timeout=30_000)


def test_a_page_s_whole_use_sends_nothing_through_gradio_s_queue(open_page, tmp_path):
    """Open a link, type, click a point, fill the token list, train 5 steps, refit, make the link,
    export a PNG and the files, upload a table, go Back: every request the page makes is recorded,
    and none joins gradio's queue (the page's own routes carry it all, its upload included; the
    queue is the API's)."""
    import numpy as np

    from tests.browser import point_on_screen, settle, train

    page = open_page("a=the%20king%20spoke&b=&basis=frozen", wait=False)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    from tests.browser import ready

    ready(page)
    box = page.locator("#sentence-a textarea")
    box.click()
    box.press("End")
    box.type(" well", delay=20)
    page.wait_for_function(f"() => ({PLOT_DATA})().some(t => (t.hovertext || []).some(h => h.startsWith('well')))",
                           timeout=30_000)
    settle(page)
    page.mouse.click(*point_on_screen(page, "token", "king"))
    page.wait_for_function("() => document.querySelector('#selected-token input')?.value === '2: king'",
                           timeout=30_000)
    page.locator("#selected-token input").click()  # the token list fills as it opens
    page.get_by_role("option", name="3: spoke").wait_for(timeout=30_000)
    page.keyboard.press("Escape")
    train(page, 5)
    page.get_by_role("tab", name="View").click()
    page.locator("#refit-button").click()
    wait_for_text(page, "#notice", "frozen plane now fits", timeout=60_000)
    page.locator("#share-button").click()
    page.wait_for_function("() => document.querySelector('#share-link textarea, #share-link input')"
                           "?.value.includes('king%20spoke%20well')", timeout=30_000)
    with page.expect_download() as png:
        page.locator("#export-png").click()
    assert png.value.suggested_filename == "embedding.png"
    page.locator("#export-button").click()
    page.wait_for_function("() => document.querySelectorAll('#export-links a').length === 3", timeout=120_000)
    with page.expect_download() as csv:
        page.locator("#export-links a[download$='.csv']").click()
    assert "well" in Path(csv.value.path()).read_text()
    table = tmp_path / "table.npy"
    np.save(table, np.random.default_rng(0).standard_normal((20, 6)).astype(np.float32))
    page.get_by_role("tab", name="Tables").click()
    page.locator("#upload-table input[type=file]").set_input_files(str(table))
    wait_for_text(page, "#tables-info", "6 dimensions", timeout=60_000)
    assert page.locator("#table-source input[value='upload']").is_checked()
    page.go_back()
    settle(page)
    assert not any("queue/join" in url for url in requests), [url for url in requests if "queue/join" in url]
    assert sum("explorer/live" in url for url in requests) >= 8 and page.errors == []
