"""The encoder's layers in the plane (core/plane/layers.py): which tables MiniLM-L6's encoder reads, one
plane at every layer, each token's path ending on its drawn point, one forward pass per tokens, and the
similarity view of the chosen layer's vectors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from core.drawing.details import similarity_detail
from core.drawing.figures import LAYER_PATH, embedding_spec
from core.drawing.palette import LIGHT, PALETTES, PROJECTOR, contrast
from core.drawing.wire import figure_json
from core.model import encoder as encoder_module
from core.model.checkpoints import bert_encoder
from core.model.encoder import encode
from core.model.measures import cosine_matrix
from core.plane import layers
from core.plane.layers import NEEDS_BERT, NEEDS_POSITIONS, NEEDS_UNTRAINED, reached, unreadable
from core.plane.pipeline import explore
from core.tables.session import Session
from core.view.options import ENCODER_LAYERS, LIMITS
from core.view.state import View

RIVER, MONEY = "the bank of the river", "money in the bank"


@pytest.fixture(scope="module")
def bert() -> Session:
    return Session.create(source="bert")


@pytest.fixture()
def forward_passes(monkeypatch) -> list:
    """Every encoder forward pass the pipeline runs from now on, from a cache of none."""
    layers.forget()
    calls = []
    real = encoder_module.encode

    def counted(*args, **kwargs):
        calls.append(args[2].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(encoder_module, "encode", counted)
    yield calls
    layers.forget()


def test_the_slider_s_range_is_minilm_s_layers():
    assert LIMITS["layer"] == (0, ENCODER_LAYERS) == (0, bert_encoder().config.n_layers)


def test_only_bert_s_own_tables_untrained_are_read_and_every_other_says_why(bert):
    assert unreadable(bert) is None
    assert unreadable(Session.create()) == NEEDS_BERT  # the random layer
    assert unreadable(bert.with_tables("bert", bert.settings, "sinusoidal")) == NEEDS_POSITIONS
    assert unreadable(replace(bert, trained=bert.source.model)) == NEEDS_UNTRAINED
    assert "choose Tables → BERT" in NEEDS_BERT


def test_a_layer_the_tables_cannot_give_is_layer_0_with_a_note(bert):
    view = View(layer=3)
    assert reached(view, bert) == (view, ())
    assert reached(View(), Session.create()) == (View(), ())  # layer 0: nothing to say
    shown, notes = reached(view, Session.create())
    assert shown == View() and notes == (f"{NEEDS_BERT} Showing layer 0 (the embedding layer's output), not layer 3.",)


@pytest.mark.parametrize("basis", ["sentence", "vocabulary"])
def test_the_plane_is_the_same_at_every_layer_and_moving_k_moves_only_points(bert, basis):
    session = bert.with_basis(basis)
    runs = {k: explore(session, RIVER, MONEY, layer=k) for k in range(1, ENCODER_LAYERS + 1)}
    last = runs[ENCODER_LAYERS]
    for k, run in runs.items():
        assert np.array_equal(run.projection.components_, last.projection.components_), k
        assert np.array_equal(run.projection.mean_, last.projection.mean_), k
        assert run.scene.hidden.layer == k and run.scene.hidden.points.shape == (k + 1, 12, 2)
        # a state's point is where it is at every K: the path to K is the first K + 1 of the path to 6
        assert np.array_equal(run.scene.hidden.points, last.scene.hidden.points[:k + 1])
        for group, points in run.scene.points.items():
            assert np.array_equal(points, last.scene.points[group]), group


def _paths(trace: dict) -> list[np.ndarray]:
    """A polyline trace's lines, one (vertices, 2) array each (a NaN ends each line)."""
    xy = np.column_stack([np.asarray(trace["x"], dtype=np.float64), np.asarray(trace["y"], dtype=np.float64)])
    ends = np.flatnonzero(np.isnan(xy).any(axis=1))
    return [xy[start:end] for start, end in zip([0, *(ends[:-1] + 1)], ends, strict=True)]


@pytest.mark.parametrize("k", [1, 4, 6])
def test_each_token_s_path_has_k_plus_1_points_from_its_output_to_its_drawn_layer_k_point(bert, k):
    run = explore(bert, RIVER, MONEY, layer=k)
    figure = embedding_spec(run.scene)  # as drawn: the page's compact figure differs only in shared columns
    traces = {trace["name"]: trace for trace in figure["data"]}
    drawn = np.column_stack([traces[f"layer {k}"]["x"], traces[f"layer {k}"]["y"]]).astype(np.float64)
    output = np.column_stack([traces["output"]["x"], traces["output"]["y"]]).astype(np.float64)
    paths = _paths(traces[LAYER_PATH.format(k)])
    assert len(paths) == len(run.scene.tokens) == len(drawn)
    for i, path in enumerate(paths):  # in drawing order, as the group's points
        assert len(path) == k + 1
        assert np.array_equal(path[-1], drawn[i])
        assert np.allclose(path[0], output[i], atol=1e-4)  # hidden state 0 is the output group
    # the hover names the layer
    assert f"after layer {k} of 6" in traces[f"layer {k}"]["hovertemplate"]
    assert traces[LAYER_PATH.format(k)]["hovertext"][:2] == ["<b>the</b> · output (LayerNorm) = hidden state 0",
                                                             "<b>the</b> · after layer 1 of 6"]


def test_layer_0_and_other_tables_never_run_the_encoder_and_one_pass_serves_every_k(bert, forward_passes):
    assert explore(bert, RIVER, MONEY).scene.hidden is None
    assert explore(Session.create(), RIVER, MONEY, layer=3).scene.hidden is None
    assert forward_passes == []
    for k in (2, 5, 6):
        explore(bert, RIVER, MONEY, layer=k)
    similarity_detail(bert, RIVER, MONEY, layer=4)
    assert len(forward_passes) == 1
    explore(bert, RIVER, MONEY + "s", layer=2)  # other tokens: their own pass
    assert len(forward_passes) == 2


def test_the_states_are_computed_without_autograd_and_kept_read_only(bert):
    states = layers.hidden_states(bert, (101, 2924, 102), (0, 0, 0))
    assert states.shape == (ENCODER_LAYERS + 1, 3, 384) and not states.flags.writeable
    with pytest.raises(ValueError, match="need BERT's tables"):
        layers.hidden_states(Session.create(), (101, 102), (0, 0))


@pytest.mark.parametrize("k", [0, 3, 6])
def test_the_similarity_view_at_layer_k_draws_exactly_the_cosines_of_hidden_state_k(bert, k):
    encoding = bert.encode(RIVER, MONEY)
    x, seg = torch.tensor([encoding.ids]), torch.tensor([encoding.segment_ids])
    states = encode(bert.model, bert_encoder(), x, seg).hidden_states[k][0].numpy().astype(np.float64)
    unit = states / np.linalg.norm(states, axis=1, keepdims=True)
    expected = unit @ unit.T
    figure = similarity_detail(bert, RIVER, MONEY, layer=k)
    z = np.asarray(figure["data"][0]["z"], dtype=np.float64)
    assert z.shape == expected.shape and np.abs(z - expected).max() < 1e-5
    assert np.array_equal(z, cosine_matrix(states.astype(np.float32)))
    assert figure["layout"]["title"]["text"] == ("Cosine similarity" if k == 0 else
                                                 f"Cosine similarity after layer {k} of MiniLM-L6")


def test_on_other_tables_the_similarity_view_stays_the_outputs(bert):
    random = Session.create()
    assert figure_json(similarity_detail(random, RIVER, MONEY, layer=5)) == \
        figure_json(similarity_detail(random, RIVER, MONEY))


@pytest.mark.parametrize("palette", list(PALETTES.values()), ids=list(PALETTES))
def test_the_layer_group_has_its_own_colour_readable_on_its_plot(palette):
    assert contrast(palette.layer, palette.background) >= 4.5
    assert palette.layer not in palette.colours.values() and palette.layer != palette.class_ink
    assert (LIGHT.layer, PROJECTOR.layer) == ("#332288", "#A99CFF")


def test_a_layer_view_s_script_says_it_draws_the_embedding_layer_alone(bert):
    from core.drawing.code import recipe, script

    said = script(recipe(View(source="bert", layer=4), bert))
    assert "# The page draws layer 4 of MiniLM-L6: a 6-layer BERT distilled" in said
    assert "this script draws the embedding layer alone" in said
    assert "The page draws layer" not in script(recipe(View(source="bert"), bert))
