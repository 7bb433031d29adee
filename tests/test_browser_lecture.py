"""The lecture features in a real Chromium: links that restore a view, the tour, the vocabulary
background, clicking a point, presenter mode and the PNG export.

What the page shows is read from the plot's own data (`.js-plotly-plot`.data) and the
inputs' DOM values, never from pixels.
"""

from __future__ import annotations

import io
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from PIL import Image

from core.share import ViewState
from core.tour import STEPS

pytestmark = pytest.mark.browser

PLOT = "document.querySelector('#embed-plot .js-plotly-plot')"
TRACES = f"() => {PLOT}.data.map(t => t.name)"
# gradio shows a refused or failed event as a toast with this class
ERROR_TOASTS = "() => document.querySelectorAll('.toast-body.error').length"


def rows(table_id: str) -> str:
    """JS: how many data rows a gr.Dataframe shows (its rows carry aria-rowindex; 1 is the header)."""
    return (f"new Set([...document.querySelectorAll('#{table_id} [role=row][aria-rowindex]')]"
            ".map(r => r.getAttribute('aria-rowindex'))).size - 1")


@pytest.fixture()
def open_page(browser, app_url):
    """Open the app at a query string; every page gets its own context (its own session)."""
    contexts = []

    def open_(query: str = "", viewport=(1400, 1000)):
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]},
                                      accept_downloads=True)
        contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        page.goto(f"{app_url}?{query}" if query else app_url)
        page.wait_for_function(f"() => {PLOT} && {PLOT}.data && {PLOT}.data.length > 0", timeout=60_000)
        return page

    yield open_
    for context in contexts:
        context.close()


def trace(page, name: str) -> dict | None:
    return page.evaluate(f"() => {PLOT}.data.find(t => t.name === {name!r}) || null")


def hovertext(page, name: str) -> list[str]:
    found = trace(page, name)
    return list(found.get("hovertext") or []) if found else []


def test_a_crafted_link_restores_the_inputs_and_the_plot(open_page):
    state = ViewState(
        sentence_a="the king spoke",
        sentence_b="a queen & a jester listened",
        source="bert",
        groups=("token", "output"),
        labels=False,
        shift=True,
        basis="vocabulary",
        token=2,
        k=5,
    )
    page = open_page(state.to_query())
    # the last of the restore's updates: the selected token's neighbours are listed
    page.wait_for_function(f"() => {rows('neighbours-token')} === 5", timeout=60_000)
    assert page.locator("#sentence-a textarea").input_value() == "the king spoke"
    assert page.locator("#sentence-b textarea").input_value() == "a queen & a jester listened"
    page.get_by_role("tab", name="Tables").click()  # a tab's controls are drawn when it is opened
    assert page.locator("#table-source input[value='bert']").is_checked()
    page.get_by_role("tab", name="View").click()
    assert page.locator("#basis input[value='vocabulary']").is_checked()
    assert page.locator("#show-labels input").is_checked() is False
    ticked = page.eval_on_selector_all("#groups input[type=checkbox]", "boxes => boxes.map(b => b.checked)")
    assert ticked == [True, False, False, False, True]
    assert page.locator("#selected-token input").input_value() == "2: king"

    names = page.evaluate(TRACES)
    assert names[:2] == ["token", "output"] and "selected token" in names
    assert "king" in hovertext(page, "token") and "queen" in hovertext(page, "output")
    assert "of the vocabulary" in page.evaluate(f"() => {PLOT}.layout.xaxis.title.text")
    neighbours = page.locator("#neighbours-token").inner_text()
    assert "queen" in neighbours or "kings" in neighbours
    assert page.evaluate(ERROR_TOASTS) == 0 and page.errors == []

    # and the page's own link reproduces the view it was opened with
    page.locator("#share-button").click()
    page.wait_for_function("() => document.querySelector('#share-link textarea, #share-link input').value !== ''")
    link = page.locator("#share-link textarea, #share-link input").first.input_value()
    restored, notes = ViewState.from_query(parse_qs(urlsplit(link).query, keep_blank_values=True))
    assert restored == state and notes == ()


def test_a_link_with_bad_values_opens_with_the_rest_and_says_what_was_ignored(open_page):
    page = open_page(f"a={quote('still here')}&source=upload&k=999&basis=sideways")
    page.wait_for_function(f"() => {PLOT}.data.some(t => (t.hovertext || []).includes('still'))", timeout=60_000)
    page.get_by_role("tab", name="Tables").click()
    assert page.locator("#table-source input[value='random']").is_checked()
    page.get_by_role("tab", name="View").click()
    assert page.locator("#basis input[value='sentence']").is_checked()
    notes = page.locator("#link-notes").inner_text()
    assert "source=upload" in notes and "k=999" in notes and "basis=sideways" in notes


def test_every_tour_step_renders_without_error(open_page):
    page = open_page()
    page.get_by_role("tab", name="Tour").click()
    for number, step in enumerate(STEPS, 1):
        page.locator("#tour-next").click()
        page.wait_for_function(
            f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of {len(STEPS)}')",
            timeout=60_000,
        )
        state = step.state
        page.wait_for_function(
            f"() => document.querySelector('#sentence-a textarea').value === {state.sentence_a!r}", timeout=30_000
        )
        first_word = state.sentence_a.lower().split()[0].strip(".")
        page.wait_for_function(
            f"() => {PLOT}.data.some(t => (t.hovertext || []).includes({first_word!r}))"
            f" && {PLOT}.data.filter(t => {list(state.groups)!r}.includes(t.name)).length === {len(state.groups)}",
            timeout=60_000,
        )
        assert step.title in page.locator("#tour-text").inner_text()
        assert page.evaluate(ERROR_TOASTS) == 0, f"step {number} showed an error"
    assert page.errors == []
    # previous goes back one step (the last step opened the Train tab)
    page.get_by_role("tab", name="Tour").click()
    page.locator("#tour-previous").click()
    page.wait_for_function(f"() => document.querySelector('#tour-text').innerText.includes('Step {len(STEPS) - 1}')")


def test_the_vocabulary_background_is_sent_once_and_survives_typing(open_page):
    page = open_page("source=bert&basis=vocabulary&background=2000&groups=token")
    page.wait_for_function(f"() => {PLOT}.data[0].name === 'vocabulary'", timeout=60_000)
    background = trace(page, "vocabulary")
    assert background["type"] == "scattergl"
    assert page.evaluate(f"() => {PLOT}._fullData[0].x.length") == 2000
    assert background["hovertext"][:3] == ["the", "of", "and"]
    page.evaluate(f"() => {{ window.firstBackground = {PLOT}.data[0]; }}")

    page.locator("#sentence-a textarea").fill("an entirely new sentence about lunch")
    page.wait_for_function(f"() => {PLOT}.data.some(t => (t.hovertext || []).includes('lunch'))", timeout=60_000)
    # the redraw re-used the trace already in the page: nothing was sent again
    assert page.evaluate(f"() => {PLOT}.data[0] === window.firstBackground")
    assert page.evaluate(f"() => {PLOT}.data.filter(t => t.name === 'vocabulary').length") == 1

    # back to the sentence's own plane: the background goes (it would move on every keystroke)
    page.get_by_role("tab", name="View").click()
    page.locator("#basis").get_by_text("this sentence").click()
    page.wait_for_function(f"() => !{PLOT}.data.some(t => t.name === 'vocabulary')", timeout=30_000)


def test_clicking_a_point_selects_its_token(open_page):
    page = open_page(f"a={quote('the cat sat')}&b=&groups=token&labels=0")
    # the link's view is in place: clicking earlier could be undone by its restore
    page.wait_for_function(f"() => {PLOT}.data[0].hovertext.length === 5", timeout=60_000)
    # the pixel position of the "cat" point (position 2), from plotly's own axes
    x, y = page.evaluate(
        f"""() => {{
            const gd = {PLOT}, t = gd.data.findIndex(d => d.name === 'token');
            const k = gd.data[t].hovertext.indexOf('cat');
            const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
            const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
            return [box.left + xa.l2p(gd._fullData[t].x[k]), box.top + ya.l2p(gd._fullData[t].y[k])];
        }}"""
    )
    page.mouse.click(x, y)
    page.wait_for_function("() => document.querySelector('#selected-token input').value === '2: cat'",
                           timeout=30_000)
    page.wait_for_function(f"() => {rows('neighbours-token')} === 10", timeout=30_000)
    assert "selected token" in page.evaluate(TRACES)


def test_the_token_picker_lists_the_tokens_just_typed_when_opened(open_page):
    page = open_page(f"a={quote('the cat sat')}&b=&groups=token")
    page.wait_for_function(f"() => {PLOT}.data[0].hovertext.length === 5", timeout=60_000)
    page.locator("#sentence-a textarea").fill("the zebra sat")
    page.wait_for_function(f"() => {PLOT}.data[0].hovertext.includes('zebra')", timeout=30_000)
    page.locator("#selected-token input").click()  # opening the picker fills its list
    option = page.get_by_role("option", name="2: zebra")
    option.wait_for(timeout=30_000)
    option.click()
    page.wait_for_function(f"() => {rows('neighbours-token')} === 10", timeout=30_000)
    assert page.locator("#selected-token input").input_value() == "2: zebra"
    assert page.evaluate(ERROR_TOASTS) == 0 and page.errors == []


def test_presenter_mode_enlarges_type_and_markers(open_page):
    page = open_page()
    size = f"() => {PLOT}.data.find(t => t.name === 'token').marker.size"
    before = page.evaluate(size)
    font = "() => parseFloat(getComputedStyle(document.querySelector('#sentence-a textarea')).fontSize)"
    font_before = page.evaluate(font)
    page.locator("#presenter input").check()
    page.wait_for_function(f"() => ({size})() > {before}", timeout=30_000)
    assert page.evaluate("() => document.body.classList.contains('presenter')")
    assert page.evaluate(font) > font_before


def test_png_export_is_a_high_resolution_image(open_page):
    page = open_page()
    page.get_by_role("tab", name="View").click()
    width = page.evaluate(f"() => {PLOT}._fullLayout.width")
    with page.expect_download(timeout=60_000) as download:
        page.locator("#export-png").click()
    image = Image.open(io.BytesIO(download.value.path().read_bytes()))
    assert image.format == "PNG"
    assert image.width == 3 * width  # three times the screen's resolution


def test_an_open_side_view_follows_the_typing(open_page):
    page = open_page(f"a={quote('the cat sat')}&b=")
    page.wait_for_function(f"() => {PLOT}.data[0].hovertext.length === 5", timeout=60_000)
    page.get_by_role("tab", name="Positions").click()
    page.wait_for_function("() => document.querySelector('#positions-plot .js-plotly-plot')", timeout=30_000)
    page.locator("#sentence-a textarea").fill("a zebra met a zebra")
    # the update itself redraws the open view: the repeated word appears in its table
    page.wait_for_function("() => document.querySelector('#repeated-table').innerText.includes('zebra')",
                           timeout=60_000)
