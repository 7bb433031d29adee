"""The encoder's layers through the launched app's route, as the page's script asks for them: a link's
`layer=K` on BERT's tables draws the group "layer K" and the paths; on the random tables it opens at layer
0 and says why; the slider is disabled there, and a layer set anyway is put back with the same sentence;
`?layer=K&view=similarity` draws exactly the cosines of hidden state K; `?layer=K&token=N` draws and lists
whom token N attends to most in layer K."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
import torch

from core.drawing.figures import ATTENTION, LAYER_NEAR, LAYER_PATH, NEIGHBOURS, SELECTED
from core.model.checkpoints import bert_encoder
from core.plane.layers import EXPLAINED, NEEDS_BERT, NEEDS_UNTRAINED
from core.tables.presets import bert_source
from tests.appapi import Page, decode, figure, trace_names

RIVER, MONEY = "the%20bank%20of%20the%20river", "money%20in%20the%20bank"
PAIR = f"a={RIVER}&b={MONEY}"


def test_layer_6_on_bert_s_tables_draws_the_layer_6_group_and_every_token_s_path(app_url):
    page = Page(app_url, f"{PAIR}&source=bert&layer=6")
    names = trace_names(page.opened["embed-plot"])
    assert names[:5] == ["token", "position", "segment", "sum", "output"]
    assert {"layer 6", LAYER_PATH.format(6)} <= set(names)
    drawn = {trace["name"]: trace for trace in figure(page.opened["embed-plot"])["data"]}
    assert len(decode(drawn["layer 6"]["x"])) == 12  # [CLS] the bank of the river [SEP] money in the bank [SEP]
    assert np.isnan(decode(drawn[LAYER_PATH.format(6)]["x"]).astype(np.float64)).sum() == 12  # a line a token
    assert page.opened.notice == "" and page.tab.view.layer == 6
    slider = page.opened["encoder-layer"]  # settable here, and named honestly
    assert slider["value"] == 6 and slider["interactive"] is True and slider["info"] == EXPLAINED
    assert "MiniLM-L6: a 6-layer BERT distilled and tuned for sentence similarity (it has no [MASK] head)" in EXPLAINED
    assert "layer=6" in json.loads(page.opened["address"])["query"]
    # moving K moves the group, in the same axes
    moved = page.send(layer=2)
    assert "layer 2" in trace_names(moved["embed-plot"]) and "layer 6" not in trace_names(moved["embed-plot"])


def test_a_link_s_layer_on_the_random_tables_opens_at_layer_0_saying_why_and_draws_none(app_url):
    page = Page(app_url, f"{PAIR}&layer=3")
    assert page.opened.notice == f"{NEEDS_BERT} Showing layer 0 (the embedding layer's output), not layer 3."
    assert not [name for name in trace_names(page.opened["embed-plot"]) if name.startswith(("layer", "path"))]
    assert page.tab.view.layer == 0 and "layer=" not in json.loads(page.opened["address"])["query"]
    # the slider is as the page is built: at 0, disabled, saying why (so the opening need not write it)
    import app

    slider = app.demo.explorer.layer
    assert (slider.value, slider.interactive, slider.info) == (0, False, NEEDS_BERT)


def test_a_layer_set_on_tables_without_an_encoder_is_put_back_with_the_sentence_and_bert_enables_it(app_url):
    page = Page(app_url, PAIR)
    before = page.fingerprint()
    out = page.send(layer=4)
    assert NEEDS_BERT in out.notice and out.value("encoder-layer") == 0 and page.tab.view.layer == 0
    assert page.fingerprint() == before
    assert "layer" not in [name.split(" ")[0] for name in trace_names(page.shown["embed-plot"])]
    enabled = page.send(source="bert")
    assert enabled["encoder-layer"]["interactive"] is True and enabled["encoder-layer"]["info"] == EXPLAINED
    back = page.send(source="glove")  # at layer 0 a source change says nothing of layers, and disables it
    assert back["encoder-layer"]["interactive"] is False and back["encoder-layer"]["info"] == NEEDS_BERT


@pytest.mark.parametrize("hostile", ["7", "-1", "2.5", "six"])
def test_a_hostile_layer_in_a_link_is_ignored_with_a_sentence(app_url, hostile):
    page = Page(app_url, f"{PAIR}&source=bert&layer={hostile}")
    assert f"Ignored layer={hostile}: " in page.opened.notice and "0 to 6" in page.opened.notice
    assert page.tab.view.layer == 0


@pytest.mark.parametrize("k", [3, 6])
def test_the_similarity_view_at_layer_k_draws_exactly_the_cosines_of_hidden_state_k(app_url, k):
    page = Page(app_url, f"{PAIR}&source=bert&layer={k}&view=similarity")
    z = decode(figure(page.opened["similarity-plot"])["data"][0]["z"]).astype(np.float64)
    bert = bert_source()
    encoding = bert.tokenizer.encode("the bank of the river", "money in the bank")
    from core.model.encoder import encode

    states = encode(bert.model, bert_encoder(), torch.tensor([encoding.ids]), torch.tensor([encoding.segment_ids]))
    vectors = states.hidden_states[k][0].numpy().astype(np.float64)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert z.shape == (12, 12) and np.abs(z - unit @ unit.T).max() < 1e-5


def test_the_api_s_view_answers_the_layer_group_s_points_as_the_page_draws_them(app_url, api):
    answer = api.predict(f"{PAIR}&source=bert&layer=4", api_name="/view")
    drawn = {trace["name"]: trace for trace in figure(Page(app_url, f"{PAIR}&source=bert&layer=4")
                                                      .opened["embed-plot"])["data"]}
    order = decode(drawn["layer 4"]["customdata"])[:, 1].astype(int)  # each point's position
    points = np.column_stack([decode(drawn["layer 4"]["x"]), decode(drawn["layer 4"]["y"])])[np.argsort(order)]
    assert np.allclose(answer["points"]["layer 4"], points, atol=1e-6) and answer["notes"] == []
    assert "layer 4" not in api.predict(f"{PAIR}&layer=4", api_name="/view")["points"]


def test_a_training_sets_the_layer_to_0_saying_why_and_a_reset_enables_it_again(app_url):
    page = Page(app_url, f"{PAIR}&source=bert&layer=2")
    merged, steps = page.train(steps=3)
    assert steps and page.tab.session.trained is not None and page.tab.view.layer == 0
    assert NEEDS_UNTRAINED in merged.notice
    assert merged["encoder-layer"]["interactive"] is False and merged["encoder-layer"]["info"] == NEEDS_UNTRAINED
    assert not [name for name in trace_names(page.shown["embed-plot"]) if name.startswith("layer")]
    again = page.send(reset=True)
    assert again["encoder-layer"]["interactive"] is True and page.send(layer=2).notice == ""


def _attention_lines(plot, k: int) -> tuple[list[np.ndarray], dict[int, np.ndarray]]:
    """The attention traces' lines ((vertices, 2) each) and the layer-K group's points by position, as drawn."""
    drawn = figure(plot)["data"]
    group = next(trace for trace in drawn if trace["name"] == f"layer {k}")
    points = np.column_stack([decode(group["x"]), decode(group["y"])])
    by_position = dict(zip(decode(group["customdata"])[:, 1].astype(int).tolist(), points, strict=True))
    lines = [np.column_stack([decode(t["x"]), decode(t["y"])]) for t in drawn if t["name"] == ATTENTION.format(k)]
    return lines, by_position


def test_a_link_s_token_at_layer_3_draws_and_lists_whom_it_attends_to_and_at_layer_0_neither(app_url):
    page = Page(app_url, f"{PAIR}&source=bert&layer=3&token=2")
    lines, points = _attention_lines(page.opened["embed-plot"], 3)
    said = page.opened.value("neighbours-attention").split("\n\n")[-1]  # after its layer-3 neighbours
    listed = re.fullmatch(r"At layer 3, \*\*bank\*\* attends most to: (.*) \(mean over MiniLM\\-L6's 12 heads; "
                          r"\\\[CLS\\\] and \\\[SEP\\\] count like any token\\: .*\)\.", said)
    assert listed, said
    named = [entry.rsplit(" ", 1) for entry in listed[1].split(", ")]
    assert 1 <= len(lines) == len(named) <= 5
    tokens = ["[CLS]", "the", "bank", "of", "the", "river", "[SEP]", "money", "in", "the", "bank", "[SEP]"]
    hovers = [t["hovertext"][0] for t in figure(page.opened["embed-plot"])["data"] if t["name"] == ATTENTION.format(3)]
    for line, (name, weight), hover in zip(lines, named, hovers, strict=True):
        assert np.array_equal(line[0], points[2])  # from the selected token's layer-3 point
        ends = [i for i, point in points.items() if np.array_equal(point, line[-1])]  # to the attended one's
        name = name.replace("\\", "")  # as written: Markdown's escapes gone
        assert ends and name in {"itself" if i == 2 else tokens[i] for i in ends}
        assert hover == f"bank attends to {html.escape(name, quote=False)}: {weight} (layer 3, mean of 12 heads)"
    assert page.opened["neighbours-panel"]["open"] is True
    # at layer 0 the selection's lines and line go; with no token, too
    down = page.send(layer=0)
    assert not [n for n in trace_names(down["embed-plot"]) if n.startswith("attention")]
    assert down.value("neighbours-attention") == ""
    up = page.send(layer=3, token=None)
    assert "layer 3" in trace_names(up["embed-plot"])
    assert not [n for n in trace_names(up["embed-plot"]) if n.startswith("attention")]
    assert up.get("neighbours-attention", "") == ""


def test_a_link_s_token_at_layer_k_stars_its_nearest_tokens_on_their_drawn_layer_k_points_and_lists_them(app_url):
    """`?layer=K&token=N&k=…`: the selected token's neighbours are the pair's tokens nearest it after layer K,
    starred on the layer-K points the page draws, its own layer-K point ringed; the list under the
    neighbours says "after layer K" with their cosines, the vocabulary's tables are empty; layer 0 as before."""
    page = Page(app_url, f"{PAIR}&source=bert&layer=5&token=2&k=4&read=apart")
    drawn = figure(page.opened["embed-plot"])["data"]
    _, points = _attention_lines(page.opened["embed-plot"], 5)
    (stars,) = [t for t in drawn if t["name"] == LAYER_NEAR.format(5)]
    starred = np.column_stack([decode(stars["x"]), decode(stars["y"])])
    named = [re.fullmatch(r"(.*) \((\d+)\)", html.unescape(text)) for text in stars["hovertext"]]
    assert len(starred) == len(named) == 4 and all(named)
    tokens = ["[CLS]", "the", "bank", "of", "the", "river", "[SEP]", "money", "in", "the", "bank", "[SEP]"]
    for point, found in zip(starred, named, strict=True):
        position = int(found[2])
        assert found[1] == tokens[position] and position not in (0, 2, 6, 11)  # neither itself nor a marker
        assert np.array_equal(point, points[position])  # on that token's drawn layer-5 point
    cosines = decode(stars["customdata"]).astype(np.float64)
    assert list(cosines) == sorted(cosines, reverse=True)
    rings = np.concatenate([np.column_stack([decode(t["x"]), decode(t["y"])]) for t in drawn if t["name"] == SELECTED])
    assert any(np.array_equal(ring, points[2]) for ring in rings)  # its own layer-5 point ringed
    said = page.opened.value("neighbours-attention").split("\n\n")[0].replace("\\", "")
    assert said.startswith("Nearest to **bank** after layer 5, by the cosine of the pair's layer-5 vectors")
    for found, cosine in zip(named, cosines, strict=True):
        assert f"{found[0]} {cosine:.3f}" in said
    assert not [t for t in drawn if t["name"] in NEIGHBOURS.values()]
    assert page.opened["neighbours-token"]["data"] == [] and page.opened["neighbours-output"]["data"] == []
    # at layer 0 the vocabulary's neighbours come back, and nothing says "after layer"
    down = page.send(layer=0)
    names = trace_names(down["embed-plot"])
    assert set(NEIGHBOURS.values()) <= set(names) and LAYER_NEAR.format(5) not in names
    assert len(down["neighbours-token"]["data"]) == 4 and down.value("neighbours-attention") == ""
