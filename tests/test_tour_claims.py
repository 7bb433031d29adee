"""Every tour step's text is true of what the page draws, checked in Chromium one claim at a time
against the coordinates the page drew (pixels on the plot, read from its DOM and its axes), the
labels it wrote (its label layer), the tab a step names and the neighbours it quotes. A distance
the text states is one on the plot as drawn, or the text says it holds in the full space."""

from __future__ import annotations

import math

import pytest

from core.tables.presets import wordpiece
from core.view.tour import STEPS
from tests.browser import COORDINATES, ERROR_BADGES, LABELS, PLOT, open_at, ready, rows, settle, wait_for_text

# one page walks the tour, step after step, on one worker
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("tour-claims")]

# each point of a trace where the page drew it, in pixels from the plot's corner, in sequence
# order (the plot draws a group's points plain words first), with its hover text and label
DRAWN = f"""(name) => {{
    const gd = {PLOT}, layout = gd._fullLayout, i = gd._fullData.findIndex(t => t.name === name);
    if (i < 0) return null;
    const full = gd._fullData[i], data = gd.data[i];
    const xa = layout[full.xaxis.replace('x', 'xaxis')], ya = layout[full.yaxis.replace('y', 'yaxis')];
    const at = [...full.x].map((x, j) => x === null || Number.isNaN(+x) ? null
        : [xa._offset + xa.l2p(+x), ya._offset + ya.l2p(+full.y[j])]);
    const labels = {{}};
    for (const t of gd.querySelectorAll('svg.label-layer .labels text'))
        if (t.dataset.trace === name) labels[t.dataset.point] = t.textContent;
    return {{at, hovertext: data.hovertext || [], symbol: full.marker && full.marker.symbol,
             customdata: full.customdata ? Array.from(full.customdata, r => Array.from(r)) : [],
             label: at.map((_, j) => labels[j] || '')}};
}}"""


def _trace(page, name: str) -> dict:
    """A trace as drawn (`DRAWN`), its per-point lists in sequence order when its points are tokens."""
    found = page.evaluate(DRAWN, name)
    assert found is not None, f"no {name!r} trace"
    if not found["customdata"] or len(found["customdata"][0]) < 4:
        return found
    order = sorted(range(len(found["at"])), key=lambda i: found["customdata"][i][1])  # by position
    return {key: [value[i] for i in order] if isinstance(value, list) and len(value) == len(order) else value
            for key, value in found.items()}


def _indexes(tokens: list[str], token: str) -> list[int]:
    return [i for i, t in enumerate(tokens) if t == token]


def _tokens(step: int) -> list[str]:
    view = STEPS[step - 1].view
    return list(wordpiece().encode(view.sentence_a, view.sentence_b).tokens)


def _apart(a, b) -> float:
    return math.dist(a, b)


def _labelled(page, trace: str) -> list[str]:
    return [label["text"] for label in page.evaluate(LABELS) if label["trace"] == trace]


@pytest.fixture(scope="module")
def walk(browser, app_url):
    """One page pressing Next through the tour; `walk(n)` returns it once step n has settled.
    `walk.seen[n]`: what the page drew on first reaching step n (`COORDINATES`)."""
    page = open_at(browser, app_url, viewport=(1440, 900))
    page.get_by_role("tab", name="Tour").click()
    at = {"step": 0}
    seen: dict[int, list] = {}

    def to(number: int):
        if at["step"] != number:  # a step's test may have opened another tab (step 7's Train)
            page.get_by_role("tab", name="Tour").click()
        while at["step"] != number:
            move = 1 if at["step"] < number else -1
            at["step"] += move
            page.locator("#tour-next" if move > 0 else "#tour-previous").click()
            wait_for_text(page, "#tour-text", f"Step {at['step']} of", timeout=60_000)
            settle(page)
            seen.setdefault(at["step"], page.evaluate(COORDINATES))
            # the step's text and its buttons stay in view on every step
            assert page.locator("#tour-next").is_visible() and page.locator("#tour-previous").is_visible()
            assert page.locator("#tour-text").is_visible()
        return page

    to.seen = seen
    yield to
    assert page.errors == []
    page.context.close()


def test_step_1_one_sequence_two_segments(walk):
    """"BERT reads the two sentences as one sequence, [CLS] A [SEP] B [SEP], and gives every token a
    segment id: 0 from [CLS] through the first [SEP], 1 after it."""
    page = walk(1)
    token, tokens = _trace(page, "token"), _tokens(1)
    assert len(token["at"]) == len(tokens) and tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2
    first = tokens.index("[SEP]")
    segments = [round(row[2]) for row in token["customdata"]]
    assert set(segments[: first + 1]) == {0} and set(segments[first + 1:]) == {1}
    # both [SEP]s are one row, one point: one label names them both
    assert _apart(token["at"][first], token["at"][-1]) < 0.5
    assert _labelled(page, "token").count("[SEP] ×2") == 1 and "[CLS]" in _labelled(page, "token")


def test_step_1_a_word_piece_is_an_open_circle_and_labelled(walk):
    """"WordPiece splits … doghouse becomes dog and ##house, where ## marks a piece that continues
    the word before it (an open circle).\""""
    page = walk(1)
    token, tokens = _trace(page, "token"), _tokens(1)
    house = tokens.index("##house")
    assert tokens[house - 1] == "dog"
    assert token["symbol"][house] == "circle-open"
    assert token["label"][house] == "##house", "step 1 explains ##house: it must be labelled at its point"


def test_step_1_says_the_tables_are_random(walk):
    """"The tables here are a seeded random layer, so no vector means anything yet.\""""
    page = walk(1)
    assert "seeded random layer" in page.locator("#embed-info").inner_text()
    assert "seeded random layer" in page.locator("#tour-text").inner_text()


def test_step_2_a_lookup_puts_a_repeated_word_on_one_point(walk):
    """"Token id i fetches row i, so both thes of sentence A get the same row and land on one point,
    and so do both dogs.\""""
    page = walk(2)
    token, tokens = _trace(page, "token"), _tokens(2)
    for word in ("the", "dog"):
        first, second = _indexes(tokens, word)
        assert _apart(token["at"][first], token["at"][second]) < 0.5, f"the two {word!r}s must coincide"
        assert token["hovertext"][first] == f"{word} ({first}), {word} ({second})"  # hovering names both
        assert f"{word} ×2" in _labelled(page, "token")


def test_step_2_where_a_random_word_lands_means_nothing(walk):
    """"These rows were drawn at random, so where a word lands says nothing about it yet: cat lands
    nearer to [CLS] than to dog.\""""
    page = walk(2)
    token, tokens = _trace(page, "token"), _tokens(2)
    cat, cls, dog = (token["at"][tokens.index(word)] for word in ("cat", "[CLS]", "dog"))
    assert _apart(cat, cls) < _apart(cat, dog)
    assert {"cat", "[CLS]", "dog ×2"} <= set(_labelled(page, "token"))


def test_step_3_positions_part_the_two_thes(walk):
    """"The two thes of sentence A share a token vector, but at positions 1 and 5 they get different
    position rows, so their sums differ.\""""
    page = walk(3)
    token, position, summed = (_trace(page, name) for name in ("token", "position", "sum"))
    first, second = _indexes(_tokens(3), "the")
    assert (first, second) == (1, 5)
    assert _apart(token["at"][first], token["at"][second]) < 0.5
    assert _apart(position["at"][first], position["at"][second]) > 8  # two rows, apart on the plot
    assert _apart(summed["at"][first], summed["at"][second]) > 8
    assert position["label"][first] == "1" and position["label"][second] == "5"
    assert summed["label"][first] == summed["label"][second] == "the"  # both sums named
    assert "the ×2" in _labelled(page, "token")


def test_step_4_every_shift_is_one_vector(walk):
    """"Every token of B is therefore shifted by the same vector, seg[1] − seg[0], … so the shift
    arrows all have the same length and direction.\""""
    page = walk(4)
    at = page.evaluate(DRAWN, "segment shift")["at"]
    arrows = [(b[0] - a[0], b[1] - a[1]) for a, b in zip(at[0::3], at[1::3], strict=True) if a and b]
    assert len(arrows) >= 5
    for dx, dy in arrows:
        assert abs(dx - arrows[0][0]) < 0.5 and abs(dy - arrows[0][1]) < 0.5


def test_step_4_the_selected_token_s_sum_tip_to_tail(walk):
    """"Click a point to draw its sum tip to tail: token, plus position, plus segment." (the step
    shows cat's)"""
    page = walk(4)
    tokens = _tokens(4)
    cat = tokens.index("cat")
    path = [p for p in page.evaluate(DRAWN, "addition path")["at"]]
    assert sum(p is None for p in path) <= 1, "the tip-to-tail path is the selected token's only"
    token, summed = _trace(page, "token"), _trace(page, "sum")
    assert _apart(path[0], token["at"][cat]) < 0.5 and _apart(path[2], summed["at"][cat]) < 0.5
    assert token["label"][cat] == summed["label"][cat] == "cat"


def test_step_5_layernorm_gives_mean_0_and_std_1(walk):
    """"Every output has mean 0 and standard deviation 1 however spread its sum was, as the
    LayerNorm chart and the line under it show token by token … every output therefore has
    length √d.\""""
    page = walk(5)
    # the step selects the LayerNorm tab, whose components show once the tab's select has run in
    # the page: waited for (a slow machine was seen reading it a moment before), not read once
    page.locator("#tab-layernorm").wait_for(state="visible", timeout=30_000)
    wait_for_text(page, "#layernorm-info", "after: mean 0")
    assert page.get_by_role("tab", name="LayerNorm").get_attribute("aria-selected") == "true"
    info = page.locator("#layernorm-info").inner_text()
    assert "after: mean 0" in info and "std 1" in info
    chart = "document.querySelector('#layernorm-plot .js-plotly-plot')"
    page.wait_for_function(f"() => {chart} && {chart}._fullData", timeout=30_000)
    after = page.evaluate(f"() => Array.from({chart}._fullData.find(t => t.name === 'std after').y)")
    before = page.evaluate(f"() => Array.from({chart}._fullData.find(t => t.name === 'std before').y)")
    assert len(after) == len(_tokens(5)) and all(abs(std - 1) < 1e-3 for std in after)
    assert max(before) - min(before) > 0.1  # however spread the sums were
    # a vector of mean 0 and std 1 in d dimensions has length √d: the token table's output norms
    d = 32
    norms = page.evaluate("""() => [...document.querySelectorAll('#token-table tbody tr')]
        .map(row => parseFloat(row.cells[row.cells.length - 1].textContent))""")
    assert norms and all(abs(norm - math.sqrt(d)) < 2e-3 for norm in norms)


def test_step_6_bert_s_related_words_are_near_in_the_full_space(walk):
    """"These are BERT's own token rows … drawn in a plane fitted to the whole vocabulary with 2,000
    of its words in the background. Related words now sit near each other in the full space: the
    nearest neighbours of king by cosine, listed under the plot and starred on it, include queen
    and monarch.\""""
    page = walk(6)
    page.wait_for_function(f"() => {PLOT}.data.some(t => t.name === 'vocabulary')", timeout=60_000)
    assert page.evaluate(f"() => {PLOT}._fullData.find(t => t.name === 'vocabulary').x.length") == 2000
    assert "of the vocabulary" in page.evaluate(f"() => {PLOT}._fullLayout.xaxis.title.text")
    page.wait_for_function(f"() => {rows('neighbours-token')} === 10", timeout=60_000)
    neighbours = page.locator("#neighbours-token").inner_text()
    assert "queen" in neighbours and "monarch" in neighbours
    assert page.locator("#selected-token input").input_value() == "2: king"
    starred = _labelled(page, "nearest by token vector") + _labelled(page, "token")
    assert {"queen", "monarch"} <= set(starred) and "king" in _labelled(page, "token")


def test_step_7_frozen_positions_stay_and_trained_words_gather(walk):
    """"Press Train: … words used in similar sentences, such as animals or family members, move
    closer. The position table is frozen, so its points do not move: the faint marks of where they
    were before training sit right under them." (on the plot as drawn)"""
    page = walk(7)
    assert page.get_by_role("tab", name="Tour").get_attribute("aria-selected") == "true"
    tokens = _tokens(7)
    before = {name: _trace(page, name) for name in ("token", "position")}
    page.get_by_role("tab", name="Train").click()
    assert page.locator("#freeze-position input").is_checked()
    assert not page.locator("#freeze-token input").is_checked()
    page.locator("#train-button").click()
    page.wait_for_function("() => (document.querySelector('#train-summary') || {}).innerText?.startsWith('Trained')",
                           timeout=120_000)
    settle(page)
    after = {name: _trace(page, name) for name in ("token", "position")}
    for pair in (("cat", "dog"), ("aunt", "uncle")):
        i, j = (tokens.index(word) for word in pair)
        now, then = (_apart(state["token"]["at"][i], state["token"]["at"][j]) for state in (after, before))
        assert now < then, f"{pair} did not move closer on the plot"
    for now, then in zip(after["position"]["at"], before["position"]["at"], strict=True):
        assert _apart(now, then) <= 2.0, "a frozen point moved on the plot"
    # the faint mark of where each was: the movement's dots (size 5) under the position points
    marks = page.evaluate(DRAWN, "before training")
    sizes = page.evaluate(f"() => Array.from({PLOT}._fullData.find(t => t.name === 'before training').marker.size)")
    dots = [p for p, size in zip(marks["at"], sizes, strict=True) if p and size]
    for point in after["position"]["at"]:
        assert min(_apart(point, dot) for dot in dots) < 0.5


def test_step_8_context_moves_the_two_banks_apart(walk):
    """"Reading each sentence on its own, the bank of the river and the bank that was robbed start
    from one token row (cosine 0.99 in the chart under the plot) and drift apart layer by layer …, to
    0.85 after layer 6: their paths end further apart on the plot than they start. Read as one pair
    …, both banks take in both sentences and stay at 0.95." The chart's cosines are the ones the
    text quotes; the paths as drawn; the pair's reading in the full space."""
    import re

    from core.plane import layers
    from core.tables.session import Session

    step, page = STEPS[7], walk(8)
    quoted = [float(number) for number in re.findall(r"\b0\.\d\d\b", step.text)]
    assert len(quoted) == 3
    page.wait_for_function("() => document.querySelector('#context-plot .js-plotly-plot')?._fullData", timeout=60_000)
    chart = page.evaluate("() => { const gd = document.querySelector('#context-plot .js-plotly-plot');"
                          " return {y: Array.from(gd._fullData[0].y), title: gd._fullLayout.title.text}; }")
    assert round(chart["y"][0], 2) == quoted[0] and round(chart["y"][6], 2) == quoted[1]
    assert "each sentence read on" in chart["title"] and chart["y"][6] < chart["y"][0]
    # the paths as drawn: each bank's from hidden state 0 to layer 6, in pixels
    tokens, group = _tokens(8), page.evaluate(DRAWN, "layer 6")
    path = page.evaluate(DRAWN, "path: output (hidden state 0) → layer 6")
    lines, line = [], []
    for point in path["at"]:
        if point is None:
            lines.append(line)
            line = []
        else:
            line.append(point)
    positions = [round(row[1]) for row in group["customdata"]]  # the paths are drawn in the group's order
    ends = {position: (drawn[0], drawn[-1]) for position, drawn in zip(positions, lines, strict=True)}
    first, second = _indexes(tokens, "bank")
    assert _apart(ends[first][1], ends[second][1]) > 2 * _apart(ends[first][0], ends[second][0])
    assert "bank" in _labelled(page, "layer 6")
    # and a screen reader is told the same: where the selected bank moved, and the chart's cosines
    page.evaluate("() => window.embeddingExplorerKeys.describe()")
    said = page.locator("#plot-description").text_content()
    assert f"bank (position {first}) " in said and "layer 6" in said, said
    assert f"its cosine with bank at position {second} went from {quoted[0]:.2f} to {quoted[1]:.2f}" in said, said
    # read as one pair, in the full space
    bert = Session.create(source="bert")
    encoding = bert.encode(step.view.sentence_a, step.view.sentence_b)
    states = layers.hidden_states(bert, encoding.ids, encoding.segment_ids)[-1]
    pair = float(states[first] @ states[second] / math.hypot(*states[first]) / math.hypot(*states[second]))
    assert round(pair, 2) == quoted[2]


def test_a_step_link_shows_what_pressing_next_shows(walk, browser, app_url):
    """Each step's link, the eight loaded side by side (each page a session of its own), draws what
    pressing Next up to that step drew (the walk's first sight of each; step 8's after step 7's training)."""
    page = walk(len(STEPS))
    assert page.errors == [] and page.evaluate(ERROR_BADGES) == 0
    contexts: list = []
    try:
        links = [open_at(browser, app_url, f"step={number}", contexts=contexts, wait=False)
                 for number in range(1, len(STEPS) + 1)]
        for number, linked in enumerate(links, 1):
            ready(linked)
            assert f"Step {number} of" in linked.locator("#tour-text").inner_text()
            assert linked.evaluate(COORDINATES) == walk.seen[number], f"?step={number} differs from Next × {number}"
    finally:
        for context in contexts:
            context.close()
