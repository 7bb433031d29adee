"""One view, one truth, in a real Chromium: a tour step's link is the step, a link reopens the
view it was made from, the token picker follows the tokens, a refused upload leaves the page
usable, and changes made while training runs are not lost.

Coordinates are read from the plot's data (rounded to 3 decimals), never from pixels.
"""

from __future__ import annotations

import io
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
import pytest

from core.tables.presets import wordpiece
from tests.browser import COORDINATES, ERROR_BADGES, PLOT, link_of, point_on_screen, rows, settle, wait_for_text
from tests.waiting import eventually

pytestmark = pytest.mark.browser


def test_a_link_reopens_the_listing_s_layer_with_its_positions_seed_and_side_view(open_page):
    page = open_page()
    page.get_by_role("tab", name="Tables").click()
    page.locator("#listing-defaults").click()
    settle(page)
    page.locator("#positions").get_by_text("sinusoidal").click()
    settle(page)
    seed = page.locator("#seed input")
    seed.fill("7")
    seed.press("Enter")
    settle(page)
    page.get_by_role("tab", name="Positions").click()
    page.wait_for_function("() => document.querySelector('#positions-plot .js-plotly-plot')", timeout=30_000)
    settle(page)
    page.get_by_role("tab", name="Plane").click()
    settle(page)
    before = page.evaluate(COORDINATES)
    page.get_by_role("tab", name="View").click()
    link = link_of(page)
    query = parse_qs(urlsplit(link).query)
    assert query["d"] == ["2"] and query["tokenizer"] == ["word"] and query["seed"] == ["7"]
    assert query["positions"] == ["sinusoidal"]

    again = open_page(urlsplit(link).query)
    assert again.evaluate(COORDINATES) == before
    assert again.locator("#sentence-a textarea").input_value() == "i am new to PyTorch i am having fun"
    again.get_by_role("tab", name="Tables").click()
    assert again.locator("#positions input[value='sinusoidal']").is_checked()
    assert again.locator("#seed input").input_value() == "7"
    assert again.locator("#d-model input[type=number]").input_value() == "2"
    assert again.errors == [] and again.evaluate(ERROR_BADGES) == 0


def test_random_positions_are_not_the_source_s_own(open_page):
    page = open_page(f"a={quote('one two three four five six')}&b=&groups=position&basis=vocabulary")

    def positions():
        return page.evaluate(f"() => Array.from({PLOT}._fullData.find(t => t.name === 'position').x)")

    learned = positions()
    page.get_by_role("tab", name="Tables").click()
    page.locator("#positions").get_by_text("random N(0").click()
    settle(page)
    assert not np.allclose(positions(), learned, atol=1e-3)


def test_a_mouse_click_on_a_point_selects_its_token(open_page):
    """What the intro and tour step 4 promise: click a point, and its token is selected — the
    picker names it, a ring is drawn around it, and its neighbours are listed and starred."""
    page = open_page(f"a={quote('The king spoke to the queen.')}&b=&groups=token")
    # nothing selected: the neighbours' panel is closed, its controls not drawn (ui/ondemand.py)
    assert page.locator("#selected-token").count() == 0
    x, y = point_on_screen(page, "token", "king")
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    page.wait_for_function("() => document.querySelector('#selected-token input')?.value === '2: king'",
                           timeout=30_000)
    settle(page)
    ring = page.evaluate(f"() => {PLOT}._fullData.find(t => t.name === 'selected token')")
    king = page.evaluate(f"() => {{ const t = {PLOT}._fullData.find(t => t.name === 'token');"
                         " const i = t.hovertext.findIndex(h => h.startsWith('king')); return [t.x[i], t.y[i]]; }")
    assert ring is not None and [ring["x"][0], ring["y"][0]] == pytest.approx(king, abs=1e-6)
    page.wait_for_function(f"() => {rows('neighbours-token')} === 10", timeout=60_000)  # its table, drawn as it opens
    assert page.evaluate(f"() => {PLOT}.data.some(t => t.name.startsWith('nearest'))")
    # a click on another point moves the selection there
    x, y = point_on_screen(page, "token", "queen")
    page.mouse.click(x, y)
    page.wait_for_function("() => document.querySelector('#selected-token input')?.value === '6: queen'",
                           timeout=30_000)
    assert page.errors == [] and page.evaluate(ERROR_BADGES) == 0


def _shown(page) -> dict:
    """What a person sees of the view: the sentence, the open control tab, and every drawn point
    and line (the tables and the tip-to-tail arrows decide them)."""
    return {
        "a": page.locator("#sentence-a textarea").input_value(),
        "panel": page.locator("#controls [role=tab][aria-selected=true]").inner_text(),
        "coordinates": page.evaluate(COORDINATES),
    }


def test_f5_keeps_the_view_and_back_and_forward_step_through_the_visit(open_page):
    page = open_page()
    default = _shown(page)
    page.locator("#sentence-a textarea").fill("The king spoke to the queen.")
    settle(page)
    typed = _shown(page)
    page.get_by_role("tab", name="Tables").click()
    page.locator("#table-source").get_by_text("BERT").click()
    settle(page)
    page.get_by_role("tab", name="View").click()
    page.locator("#show-arrows input").check()
    settle(page)
    changed = _shown(page)
    assert changed["panel"] == "View" and changed["coordinates"] != typed["coordinates"]
    assert "source=bert" in page.url and "arrows=1" in page.url

    page.reload()  # F5
    page.wait_for_function(f"() => {PLOT} && {PLOT}.data && {PLOT}.data.length > 0", timeout=60_000)
    settle(page)
    assert _shown(page) == changed

    # Back: one step per discrete change (the arrows, the View tab, BERT, the Tables tab), none per keystroke
    for _ in range(4):
        page.go_back()
        settle(page)
    assert _shown(page) == {**typed, "panel": default["panel"]}
    page.go_back()
    settle(page)
    assert _shown(page) == default
    for _ in range(5):
        page.go_forward()
        settle(page)
    # the last step's answer may land after the page went quiet on a saturated machine: what is
    # asserted is what the page comes to show, never a step it skips
    assert eventually(lambda: _shown(page) == changed, 30), _shown(page)
    assert page.errors == [] and page.evaluate(ERROR_BADGES) == 0


def test_typing_at_ten_keys_a_second_ends_with_the_plot_of_the_final_text(open_page):
    page = open_page("a=&b=&groups=token")
    box = page.locator("#sentence-a textarea")
    box.click()
    settle(page)
    joins = page.evaluate("() => window.__joins || 0")
    opened = page.evaluate("() => window.__routed || 0")  # the page's opening is its first call on the route
    text = ("the quick brown fox jumps over the lazy dog while seven tired cats watch "
            "from a warm windowsill nearby today")[:100]
    page.keyboard.type(text, delay=100)  # a person typing, one key every 100 ms
    settle(page)
    assert box.input_value() == text
    # the keystrokes took the page's route (ui/route.py), at most two calls on their way, so some
    # were merged; none went through gradio's queue
    routed = page.evaluate("() => window.__routed || 0") - opened
    assert 0 < routed <= len(text) and page.evaluate("() => window.__joins || 0") == joins
    # the token table is drawn from the plot's own columns, in sentence order
    drawn = page.evaluate("() => [...document.querySelectorAll('#token-table tbody tr td:first-child')]"
                          ".map(td => td.innerText)")
    assert tuple(drawn) == wordpiece().encode(text).tokens, "the plot is not the final text's"


# each answer the page reads (its plot's revision, its summary), and each time the summary under the
# plot changes, the revision the plot had drawn by then
WATCH_WRITES = """() => {
    window.__answers = [];
    window.__writes = [];
    const fetch0 = window.fetch;
    window.fetch = function (input) {
        return fetch0.apply(this, arguments).then((response) => {
            if (String(input).includes('/explorer/live')) {
                response.clone().json().then((answer) => {
                    const values = answer.values || {};
                    if (!values['embed-plot'] || !values['embed-info']) return;
                    const info = document.createElement('template');  // as the page writes it
                    info.innerHTML = values['embed-info'];
                    window.__answers.push([JSON.parse(values['embed-plot']).layout.meta.revision, info.innerHTML]);
                    window.__values = values;
                });
            }
            return response;
        });
    };
    const info = document.querySelector('#embed-info');
    const host = document.querySelector('#embed-plot .plane-host');
    new MutationObserver(() => window.__writes.push([Number(host.dataset.drawn),
                                                     info.querySelector('.prose')?.innerHTML]))
        .observe(info, {subtree: true, childList: true, characterData: true});
}"""


def test_an_answer_s_plot_is_drawn_before_the_rest_it_brings_and_the_newest_of_each_is_written(open_page):
    """The plot is what a keystroke is for: the summary, the variance bars, the address and the
    token table an answer also brings are written after the frame that paints its plot (typing
    fast, answers overtake each other), and what is left written is the newest answer's."""
    page = open_page()
    page.evaluate(WATCH_WRITES)
    box = page.locator("#sentence-a textarea")
    box.click()
    page.keyboard.press("End")
    page.keyboard.type(" and then a dog barked at seven cats", delay=20)
    settle(page)
    answers, writes = page.evaluate("() => [window.__answers, window.__writes]")
    assert len(answers) >= 2 and writes, (answers, writes)
    for drawn, written in writes:
        if not written:
            continue
        # the answers that brought this summary: the plot of the first of them was drawn first
        brought = [revision for revision, info in answers if info == written]
        assert brought, f"a summary no answer brought was written: {written!r}"
        assert drawn >= min(brought), f"the summary of revision {min(brought)} was written over plot {drawn}"
    assert page.locator("#embed-info .prose").inner_html() == answers[-1][1]
    assert page.evaluate(f"() => Number({PLOT}.closest('.plane-host').dataset.drawn)") == answers[-1][0]
    tokens = page.evaluate("() => [...document.querySelectorAll('#token-table tbody tr td:first-child')]"
                           ".map(td => td.innerText)")
    assert tuple(tokens) == wordpiece().encode(box.input_value(), page.locator("#sentence-b textarea").input_value()
                                               ).tokens


def test_a_refusal_is_written_at_once_and_no_earlier_answer_waiting_writes_over_it(open_page):
    """An answer's values wait for its plot; a refusal that comes meanwhile is written at once,
    and what waited is written with it, not after it (it would blank the notice)."""
    page = open_page()
    page.evaluate(WATCH_WRITES)
    box = page.locator("#sentence-a textarea")
    box.click()
    page.keyboard.press("End")
    page.keyboard.type("s")
    settle(page)
    page.evaluate("""() => {
        // the last answer again, as a newer one: its plot waits for a frame, and its values with it
        const values = window.__values, figure = JSON.parse(values['embed-plot']);
        figure.layout.meta.revision += 1;
        window.embeddingExplorer.receive({values: {...values, 'embed-plot': JSON.stringify(figure),
                                                   'embed-info': values['embed-info'] + '<p>again</p>'}});
        window.embeddingExplorer.receive({error: 'Refused here.'});
    }""")
    settle(page)
    assert "Refused here." in page.locator("#notice").inner_text()
    assert "again" in page.locator("#embed-info").inner_text()


def _picker_options(page) -> list[str]:
    return page.evaluate("() => [...document.querySelectorAll('[role=option]')]"
                         ".map(o => o.innerText.replace('✓', '').trim())")


def test_the_picker_lists_the_current_tokens_and_its_selection_follows_them(open_page):
    page = open_page(f"a={quote('the cat sat on a very long mat today')}&b=&groups=token")
    page.get_by_text("Nearest neighbours and segments of one token").click()  # its panel opens with its controls
    page.locator("#selected-token input").click()
    page.get_by_role("option", name="2: cat").click()
    settle(page)
    # a word typed before "cat" moves it; the selection moves with it
    box = page.locator("#sentence-a textarea")
    box.fill("the big cat sat on a very long mat today")
    settle(page)
    assert page.locator("#selected-token input").input_value() == "3: cat"
    # the sentence shrinks: the list holds exactly the tokens there are now
    box.fill("the big cat")
    settle(page)
    page.locator("#selected-token input").click()
    page.get_by_role("option", name="3: cat").wait_for(timeout=30_000)
    options = _picker_options(page)
    assert options == ["none", "0: [CLS]", "1: the", "2: big", "3: cat", "4: [SEP]"]
    # Escape closes the list; so does clicking elsewhere, and the keyboard opens it again
    page.keyboard.press("Escape")
    page.wait_for_function("() => document.querySelectorAll('[role=option]').length === 0", timeout=5_000)
    page.keyboard.press("ArrowDown")
    page.get_by_role("option", name="3: cat").wait_for(timeout=30_000)
    page.locator("#embed-info").click()
    page.wait_for_function("() => document.querySelectorAll('[role=option]').length === 0", timeout=5_000)
    # the selected token is deleted: it is let go, and the page says so
    box.fill("the big dog")
    settle(page)
    assert page.locator("#selected-token input").input_value() in ("", "none")
    assert "'cat' is no longer in the sentences" in page.locator("#notice").inner_text()
    assert page.errors == []


def test_a_refused_upload_leaves_the_page_usable(open_page, tmp_path):
    page = open_page()
    bad = tmp_path / "nan.npy"
    table = np.ones((20, 8), dtype=np.float32)
    table[3, 2] = np.nan
    buffer = io.BytesIO()
    np.save(buffer, table)
    bad.write_bytes(buffer.getvalue())
    page.get_by_role("tab", name="Tables").click()
    page.locator("#upload-table input[type=file]").set_input_files(str(bad))
    wait_for_text(page, "#notice", "NaN", timeout=60_000)
    settle(page)
    assert page.evaluate(ERROR_BADGES) == 0
    assert page.locator("#upload-table").inner_text().count("nan.npy") == 0  # the box does not look loaded
    assert page.locator("#table-source input[value='random']").is_checked()
    assert "Random" in page.locator("#tables-info").inner_text()
    page.locator("#table-source").get_by_text("BERT (MiniLM").click()
    page.wait_for_function("() => document.querySelector('#tables-info')?.innerText.includes('30,522 × 384')",
                           timeout=60_000)


def test_changes_made_while_training_runs_are_kept_or_refused(open_page):
    # the longest training a page can start (1,024 dimensions, 2,000 steps), so the clicks below land
    # while it runs even on a busy machine (256 and 1,500 steps were outlasted once in a full suite,
    # once the heavy-work process no longer paid torch's imports at its first training)
    page = open_page("?d=1024")
    page.get_by_role("tab", name="Train").click()
    page.locator("#train-steps input").fill("2000")
    page.locator("#train-button").click()
    wait_for_text(page, "#train-summary", "Training", timeout=60_000)
    page.get_by_role("tab", name="Tables").click()
    page.locator("#table-source").get_by_text("GloVe").click()
    wait_for_text(page, "#notice", "Training is running", timeout=60_000)
    # put back: nothing changed (the notice is the page's own to write; the choice, gradio's, a moment later)
    page.wait_for_function("() => document.querySelector(\"#table-source input[value='random']\").checked",
                           timeout=10_000)
    page.get_by_role("tab", name="Train").click()
    page.locator("#freeze-token input").check()
    page.get_by_role("tab", name="View").click()
    page.locator("#basis").get_by_text("whole vocabulary").click()
    page.get_by_role("tab", name="Train").click()
    wait_for_text(page, "#train-summary", "Trained 2000", timeout=180_000)
    wait_for_text(page, "#embed-info", "before training", timeout=60_000)
    assert "frozen: token" in page.locator("#param-status").inner_text()
    assert page.locator("#freeze-token input").is_checked()
    assert "faint points: before training" in page.locator("#embed-info").inner_text()
    page.get_by_role("tab", name="View").click()
    query = parse_qs(urlsplit(link_of(page)).query)
    assert query.get("freeze") == ["token"] and query.get("basis") == ["vocabulary"] and "source" not in query
    assert page.evaluate(ERROR_BADGES) == 0 and page.errors == []
