"""The encoder's layers in the plane (core/plane/layers.py): which tables MiniLM-L6's encoder reads, one
plane at every layer, each token's path ending on its drawn point, one forward pass per tokens, the
similarity view of the chosen layer's vectors, and whom a selected token attends to in layer K (its
weights Hugging Face's, its lines from its layer-K point to theirs)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from core.drawing.captions import attention_text
from core.drawing.details import similarity_detail
from core.drawing.figures import ATTENTION, LAYER_PATH, embedding_spec
from core.drawing.palette import LIGHT, PALETTES, PROJECTOR, contrast
from core.drawing.wire import figure_json
from core.model import encoder as encoder_module
from core.model.checkpoints import bert_encoder, minilm_dir
from core.model.encoder import encode
from core.model.measures import cosine_matrix
from core.plane import layers
from core.plane.layers import FLOOR, NEEDS_BERT, NEEDS_POSITIONS, NEEDS_UNTRAINED, TOP, attended, reached, unreadable
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


def test_the_kept_forward_passes_are_counted_in_the_memory_budget_and_let_go_to_make_room(bert, forward_passes):
    """The cache of forward passes is part of what the process holds for its visitors (core/process/memory.py):
    the budget's count grows by exactly what a pass keeps, and room made for a table empties the cache."""
    from core.process.memory import BUDGET

    before = BUDGET.held()
    states = layers.hidden_states(bert, (101, 2924, 2001, 102), (0, 0, 0, 0))
    passed = layers.forward(bert, (101, 2924, 2001, 102), (0, 0, 0, 0))
    assert passed.states is states and passed.nbytes == states.nbytes + passed.attentions.nbytes
    assert BUDGET.held() - before == passed.nbytes
    assert sum(layers.kept().values()) == passed.nbytes
    # what the budget calls to make room (it empties every cache it counts; here only this one)
    clear = next(clear for holder, clear in BUDGET._caches if holder is layers.kept)
    clear()
    assert layers.kept() == {} and BUDGET.held() == before
    assert layers.forward(bert, (101, 2924, 2001, 102), (0, 0, 0, 0)) is not passed  # computed again
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


def test_a_layer_view_s_script_runs_the_encoder_on_bert_s_tables_alone(bert):
    from core.drawing import code
    from core.drawing.code import recipe, script

    assert code.LAYER_PATH == LAYER_PATH  # the script prints the paths under the page's trace's name
    said = script(recipe(View(source="bert", layer=4, token=2), bert))
    for line in ("class EncoderLayer(nn.Module):", "LAYER = 4  #", 'points["layer 4"] = path[-1]',
                 "    for layer in encoder:\n"):  # all six: the page's plane is fitted to every hidden state
        assert line in said, line
    comments = said.replace("\n# ", " ")  # a comment's lines, read as one
    assert "the selected token's attention in layer 4" in comments and "not written here" in comments
    # a plane not fitted to the states runs the encoder only as far as the layer drawn
    assert "    for layer in encoder[:LAYER]:\n" in script(recipe(View(source="bert", layer=4, basis="vocabulary"),
                                                                 bert.with_basis("vocabulary")))
    # at layer 0, or on tables the encoder cannot read, the script draws the embedding layer alone
    for view, session in ((View(source="bert"), bert), (View(layer=4), Session.create())):
        alone = script(recipe(view, session))
        assert "EncoderLayer" not in alone and "LAYER" not in alone and "import math" not in alone


@pytest.fixture(scope="module")
def hugging_face_attention(bert) -> np.ndarray:
    """Transformers' own MiniLM-L6 on RIVER / MONEY: each layer's attention, every head, (6, 12, L, L)."""
    from transformers import BertModel

    model = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True, attn_implementation="eager").eval()
    encoding = bert.encode(RIVER, MONEY)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([encoding.ids]), token_type_ids=torch.tensor([encoding.segment_ids]),
                    output_attentions=True)
    return torch.cat(out.attentions).numpy().astype(np.float64)  # (layers, heads, L, L)


def test_the_kept_attention_is_hugging_face_s_mean_over_heads_and_its_rows_sum_to_1(bert, hugging_face_attention):
    encoding = bert.encode(RIVER, MONEY)
    passed = layers.forward(bert, encoding.ids, encoding.segment_ids)
    assert hugging_face_attention.shape[:2] == (ENCODER_LAYERS, passed.heads) == (6, 12)
    expected = hugging_face_attention.mean(axis=1)  # (layers, L, L)
    assert passed.attentions.shape == expected.shape == (ENCODER_LAYERS, 12, 12)
    assert np.abs(passed.attentions - expected).max() < 1e-5
    assert np.abs(passed.attentions.sum(axis=-1) - 1).max() < 1e-5
    assert not passed.attentions.flags.writeable
    # one pass holds both, counted in bytes where it is kept
    assert layers._size((None, passed)) == passed.states.nbytes + passed.attentions.nbytes


@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("position", [0, 2, 8])  # [CLS], bank (of the river), bank (in the money)
def test_attended_lists_the_heaviest_of_hugging_face_s_row_for_the_token_in_layer_k(bert, hugging_face_attention, k,
                                                                                    position):
    encoding = bert.encode(RIVER, MONEY)
    row = hugging_face_attention[k - 1, :, position].mean(axis=0)  # (L,): the query's weights, mean of the heads
    listed = attended(layers.forward(bert, encoding.ids, encoding.segment_ids), k, position)
    keys, weights = [key for key, _ in listed], np.array([weight for _, weight in listed])
    assert np.abs(weights - row[keys]).max() < 1e-5
    assert 1 <= len(listed) <= TOP and len(set(keys)) == len(keys)
    assert list(weights) == sorted(weights, reverse=True) and (weights[1:] >= FLOOR).all()
    rest = np.delete(row, keys)  # no token left out weighs more than one listed
    assert rest.max() <= weights.min() + 1e-6
    assert len(listed) == TOP or rest.max() < FLOOR + 1e-6


def test_attended_keeps_the_heaviest_under_the_floor_and_refuses_what_is_not_there(bert):
    encoding = bert.encode(RIVER, MONEY)
    passed = layers.forward(bert, encoding.ids, encoding.segment_ids)
    row = passed.attentions[2, 4]
    assert attended(passed, 3, 4, floor=1.0) == ((int(row.argmax()), float(row.max())),)
    assert len(attended(passed, 3, 4, top=2, floor=0.0)) == 2
    for layer, position in ((0, 1), (7, 1), (3, 12), (3, -1), (True, 1)):
        with pytest.raises(ValueError):
            attended(passed, layer, position)


def _layer_points(figure: dict, k: int) -> dict[int, np.ndarray]:
    """The layer-K group's drawn points by token position."""
    group = next(trace for trace in figure["data"] if trace["name"] == f"layer {k}")
    positions = np.asarray(group["customdata"])[:, 1].astype(int)
    xy = np.column_stack([group["x"], group["y"]])
    return dict(zip(positions.tolist(), xy, strict=True))


@pytest.mark.parametrize("k", [1, 3])
def test_a_selected_token_s_attention_is_drawn_from_its_layer_k_point_to_each_token_listed(bert, k):
    run = explore(bert, RIVER, MONEY, layer=k, selected=2)
    attention = run.scene.hidden.attention
    encoding = bert.encode(RIVER, MONEY)
    assert attention.query == 2 and attention.heads == 12
    assert tuple(zip(attention.keys, attention.weights, strict=True)) == attended(
        layers.forward(bert, encoding.ids, encoding.segment_ids), k, 2)
    figure = embedding_spec(run.scene)
    drawn = _layer_points(figure, k)
    lines = [trace for trace in figure["data"] if trace["name"] == ATTENTION.format(k)]
    assert len(lines) == len(attention.keys) >= 1
    assert [trace["showlegend"] for trace in lines] == [True] + [False] * (len(lines) - 1)
    for trace, key, weight in zip(lines, attention.keys, attention.weights, strict=True):
        xy = np.column_stack([trace["x"], trace["y"]])
        assert np.array_equal(xy[0], drawn[2]) and np.array_equal(xy[-1], drawn[key])
        whom = "itself" if key == 2 else run.scene.tokens[key]
        assert trace["hovertext"][0] == f"bank attends to {whom}: {weight:.2f} (layer {k}, mean of 12 heads)"
    # the heavier, the wider and the more opaque
    for drawn_by in (lambda trace: trace["line"]["width"], lambda trace: trace["opacity"]):
        assert [drawn_by(trace) for trace in lines] == sorted(map(drawn_by, lines), reverse=True)
    assert lines[0]["line"]["width"] > lines[-1]["line"]["width"] or attention.weights[0] - attention.weights[-1] < 0.01
    # the line under the neighbours names the same tokens and weights
    said = attention_text(run.scene)
    listed = ", ".join(f"{'itself' if key == 2 else run.scene.tokens[key]} {weight:.2f}"
                       for key, weight in zip(attention.keys, attention.weights, strict=True))
    assert said.replace("\\", "").startswith(f"At layer {k}, **bank** attends most to: {listed} (mean over MiniLM")
    assert "12 heads" in said


@pytest.mark.parametrize("dims", [2, 3])
def test_the_attention_s_lines_share_the_layer_group_s_panel_and_turn_with_the_3d_view(bert, dims):
    run = explore(bert, RIVER, MONEY, layer=2, selected=10, components=dims)
    figure = embedding_spec(run.scene, panels="split")
    group = next(trace for trace in figure["data"] if trace["name"] == "layer 2")
    lines = [trace for trace in figure["data"] if trace["name"] == ATTENTION.format(2)]
    assert len(lines) == len(run.scene.hidden.attention.keys)
    points = np.asarray(run.scene.hidden.points[-1], dtype=np.float32)
    for trace, key in zip(lines, run.scene.hidden.attention.keys, strict=True):
        assert trace["type"] == group["type"] and trace.get("xaxis") == group.get("xaxis") and \
            trace.get("yaxis") == group.get("yaxis")
        ends = np.column_stack([trace[axis] for axis in "xyz"[:dims]])[[0, -1]]
        assert np.array_equal(ends, points[[10, key]])


def test_no_attention_is_drawn_or_said_at_layer_0_without_a_token_or_on_other_tables(bert, forward_passes):
    for run in (explore(bert, RIVER, MONEY, selected=2), explore(bert, RIVER, MONEY, layer=3),
                explore(Session.create(), RIVER, MONEY, layer=3, selected=2)):
        assert run.scene.hidden is None or run.scene.hidden.attention is None
        assert not [t for t in embedding_spec(run.scene)["data"] if t["name"].startswith("attention")]
        assert attention_text(run.scene) == ""
    # selecting a token reads the same forward pass the layer drew
    explore(bert, RIVER, MONEY, layer=4, selected=5)
    assert len(forward_passes) == 1


def test_read_apart_each_sentence_is_hugging_face_s_reading_of_it_alone_put_back_in_the_pair_s_order(bert):
    """`read=apart`: sentence A's tokens are transformers' states for ``[CLS] A [SEP]`` and sentence
    B's for ``[CLS] B [SEP]`` (its own [CLS] left out), each within 1e-5 at every depth; a token's
    attention stays within its own sentence; the pair's reading is a different one."""
    from transformers import BertModel

    model = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True, attn_implementation="eager").eval()

    def alone(sentence: str) -> tuple[np.ndarray, np.ndarray]:
        encoding = bert.encode(sentence, "")
        with torch.no_grad():
            out = model(input_ids=torch.tensor([encoding.ids]), token_type_ids=torch.zeros(1, len(encoding.ids),
                        dtype=torch.long), output_hidden_states=True, output_attentions=True)
        return (torch.cat(out.hidden_states).numpy(), torch.cat(out.attentions).numpy().mean(axis=1))

    encoding = bert.encode(RIVER, MONEY)
    split = layers.apart_at(encoding.tokens, "apart")
    assert encoding.tokens[split - 1] == "[SEP]" and split == len(bert.encode(RIVER, "").ids)
    passed = layers.forward(bert, encoding.ids, encoding.segment_ids, split)
    (a_states, a_attention), (b_states, b_attention) = alone(RIVER), alone(MONEY)
    assert np.abs(passed.states[:, :split] - a_states).max() < 1e-5
    assert np.abs(passed.states[:, split:] - b_states[:, 1:]).max() < 1e-5
    assert np.abs(passed.attentions[:, :split, :split] - a_attention).max() < 1e-5
    assert np.abs(passed.attentions[:, split:, split:] - b_attention[:, 1:, 1:]).max() < 1e-5
    assert not passed.attentions[:, :split, split:].any() and not passed.attentions[:, split:, :split].any()
    together = layers.forward(bert, encoding.ids, encoding.segment_ids)
    assert np.abs(together.states[1:, split:] - passed.states[1:, split:]).max() > 0.1
    assert layers.apart_at(encoding.tokens, "pair") is None and layers.apart_at(bert.encode(RIVER, "").tokens,
                                                                                "apart") is None


@pytest.mark.parametrize("reading", ["pair", "apart"])
def test_a_selected_word_s_other_places_are_its_cosines_at_every_depth_and_charted(bert, reading):
    """The selected bank's cosine with the other bank, after each layer, is that of the hidden states
    the reading gives; the chart draws them over layers 0 to 6 and marks the layer drawn. Read
    apart, the two banks drift apart (the tour's Context step says so); a marker has no chart."""
    from core.drawing.charts import context_spec

    run = explore(bert, RIVER, MONEY, layer=4, reading=reading, selected=2, k=0)
    banks = [i for i, token in enumerate(run.scene.tokens) if token == "bank"]
    assert banks[0] == 2 and len(banks) == 2
    states = layers.hidden_states(bert, run.encoding.ids, run.scene.segment_ids,
                                  layers.apart_at(run.scene.tokens, reading))
    expected = [float(cosine_matrix(states[k])[2, banks[1]]) for k in range(7)]
    (other, cosines), = run.scene.hidden.same
    assert other == banks[1] and np.allclose(cosines, expected, atol=1e-5)
    if reading == "apart":
        assert cosines[0] - cosines[-1] > 0.08  # context moves the two banks apart
    spec = context_spec(run.scene.tokens, 2, run.scene.hidden.same, 4, apart=reading == "apart")
    (line,) = spec["data"]
    assert list(line["x"]) == list(range(7)) and np.allclose(line["y"], cosines, atol=1e-6)
    assert line["marker"]["size"][4] > line["marker"]["size"][0]  # the layer drawn
    assert ("each sentence read on" in spec["layout"]["title"]["text"]) == (reading == "apart")
    # in presenter mode, in the control column beside the plane: short lines, and as tall as the column leaves it
    narrow = context_spec(run.scene.tokens, 2, run.scene.hidden.same, 4, apart=reading == "apart", presenter=True)
    lines = narrow["layout"]["title"]["text"].split("<br>")
    assert max(map(len, lines)) <= 30 and lines[-1] == spec["layout"]["title"]["text"].split(" · ")[-1], lines
    assert narrow["layout"]["height"] < spec["layout"]["height"] * 1.5
    assert narrow["layout"]["margin"]["t"] >= 26 * len(lines)
    # on a phone, short lines too: its title and axis fit 390 px
    phone = context_spec(run.scene.tokens, 2, run.scene.hidden.same, 4, apart=reading == "apart", narrow=True)
    lines = phone["layout"]["title"]["text"].split("<br>")
    assert max(map(len, lines)) <= 30 and lines[-1] == spec["layout"]["title"]["text"].split(" · ")[-1], lines
    assert max(map(len, phone["layout"]["xaxis"]["title"]["text"].split("<br>"))) <= 30
    assert explore(bert, RIVER, MONEY, layer=4, reading=reading, selected=0, k=0).scene.hidden.same == ()
