"""Every tour step's text is true of what the page shows, checked in Chromium against the data
the page draws: labels present, points that coincide, the tab a step names, the neighbours it
quotes, and Next/Previous in view on every step."""

from __future__ import annotations

import math

import pytest

from core.figures import NAMED
from core.presets import wordpiece
from core.tour import STEPS
from tests.browser import PLOT, open_at, rows, settle

pytestmark = pytest.mark.browser


def _trace(page, name: str) -> dict:
    """A trace's points in sequence order (the plot draws them in label-priority order), with
    each point's label (`text`, "" where none fits) and hover text."""
    found = page.evaluate(
        f"""() => {{
            const gd = {PLOT}, i = gd.data.findIndex(t => t.name === {name!r});
            if (i < 0) return null;
            const t = gd.data[i], f = gd._fullData[i];
            return {{x: Array.from(f.x), y: Array.from(f.y), hovertext: t.hovertext || [], text: t.text || [],
                     customdata: f.customdata ? Array.from(f.customdata, r => Array.from(r)) : []}};
        }}"""
    )
    assert found is not None, f"no {name!r} trace"
    if not found["customdata"] or name in ("segment shift", "addition path"):
        return found
    order = sorted(range(len(found["x"])), key=lambda i: found["customdata"][i][1])  # by position
    return {key: [found[key][i] for i in order] if len(found[key]) == len(order) else found[key] for key in found}


def _indexes(tokens: list[str], token: str) -> list[int]:
    return [i for i, t in enumerate(tokens) if t == token]


def _point(trace: dict, index: int) -> tuple[float, float]:
    return trace["x"][index], trace["y"][index]


def _tokens(step: int) -> list[str]:
    view = STEPS[step - 1].view
    return list(wordpiece().encode(view.sentence_a, view.sentence_b).tokens)


@pytest.fixture(scope="module")
def walk(browser, app_url):
    """One page pressing Next through the tour; yields (number, page) after each step settles."""
    page = open_at(browser, app_url, viewport=(1440, 900))
    page.get_by_role("tab", name="Tour").click()

    def to(number: int):
        page.locator("#tour-next").click()
        page.wait_for_function(
            f"() => document.querySelector('#tour-text').innerText.includes('Step {number} of')", timeout=60_000)
        settle(page)
        assert page.locator("#tour-next").is_visible() and page.locator("#tour-previous").is_visible()
        assert page.locator("#tour-text").is_visible()
        return page

    yield to
    assert page.errors == []
    page.context.close()


def test_the_tour_s_claims_hold_step_by_step(walk):
    # 1. [CLS] A [SEP] B [SEP], segment ids, and doghouse split into a labelled ##house
    page = walk(1)
    token, tokens = _trace(page, "token"), _tokens(1)
    assert len(token["x"]) == len(tokens) and tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2
    first_sep = tokens.index("[SEP]")
    segments = [round(row[2]) for row in token["customdata"]]
    assert set(segments[: first_sep + 1]) == {0} and set(segments[first_sep + 1:]) == {1}
    house = tokens.index("##house")
    written = _trace(page, f"token {NAMED}")  # the words the step names, written over every marker
    at = dict(zip(zip(written["x"], written["y"], strict=True), written["text"], strict=True))
    assert at.get(_point(token, house)) == "##house", "step 1 explains ##house: it must be labelled"
    assert tokens[house - 1] == "dog"

    # 2. both "the"s of A on one point, and both "dog"s
    page = walk(2)
    token, tokens = _trace(page, "token"), _tokens(2)
    for word in ("the", "dog"):
        places = {_point(token, i) for i in _indexes(tokens, word)}
        assert len(_indexes(tokens, word)) == 2 and len(places) == 1, f"the two {word!r}s must coincide"
        first, second = _indexes(tokens, word)
        assert token["hovertext"][first] == f"{word} ({first}), {word} ({second})"  # hovering names both

    # 3. the two "the"s share a token vector but their sums differ (positions 1 and 5)
    page = walk(3)
    token, summed = _trace(page, "token"), _trace(page, "sum")
    first, second = _indexes(_tokens(3), "the")
    assert (first, second) == (1, 5)
    assert _point(token, first) == _point(token, second)
    assert _point(summed, first) != _point(summed, second)

    # 4. every shift arrow is the same vector; the addition path is drawn for one token
    page = walk(4)
    shift = _trace(page, "segment shift")
    arrows = [(shift["x"][i + 1] - shift["x"][i], shift["y"][i + 1] - shift["y"][i])
              for i in range(0, len(shift["x"]) - 1, 3) if shift["x"][i] is not None]
    assert len(arrows) >= 5
    for dx, dy in arrows:
        assert math.isclose(dx, arrows[0][0], abs_tol=1e-4) and math.isclose(dy, arrows[0][1], abs_tol=1e-4)
    path = _trace(page, "addition path")
    assert sum(x is None for x in path["x"]) <= 1, "the tip-to-tail path is the selected token's only"

    # 5. LayerNorm: its tab is open and its table says mean 0, standard deviation 1
    page = walk(5)
    assert page.locator("#tab-layernorm").is_visible()
    assert page.get_by_role("tab", name="LayerNorm").get_attribute("aria-selected") == "true"
    info = page.locator("#layernorm-info").inner_text()
    assert "after: mean 0" in info and "std 1" in info

    # 6. BERT's vocabulary plane with 2,000 words behind; king's neighbours include queen and monarch
    page = walk(6)
    page.wait_for_function(f"() => {PLOT}.data.some(t => t.name === 'vocabulary')", timeout=60_000)
    assert page.evaluate(f"() => {PLOT}._fullData.find(t => t.name === 'vocabulary').x.length") == 2000
    page.wait_for_function(f"() => {rows('neighbours-token')} === 10", timeout=60_000)
    neighbours = page.locator("#neighbours-token").inner_text()
    assert "queen" in neighbours and "monarch" in neighbours
    assert page.locator("#selected-token input").input_value() == "2: king"

    # 7. the position table is frozen, and the tour panel stays open to say "open Train"
    page = walk(7)
    assert page.get_by_role("tab", name="Tour").get_attribute("aria-selected") == "true"
    page.get_by_role("tab", name="Train").click()
    assert page.locator("#freeze-position input").is_checked()
    assert not page.locator("#freeze-token input").is_checked()


def test_every_step_names_a_view_the_page_has():
    for step in STEPS:
        assert step.view.panel == "tour"
        assert step.view.shown in ("plane", "layernorm", "positions", "similarity")
