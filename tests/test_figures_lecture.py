"""core.drawing.figures' lecture additions, read from the figure's data: the segment-shift arrows, the
selected token's neighbourhood (stars, ring, escaped labels), presenter sizes, the vocabulary
plane's axis titles, and the WebGL background trace with its JSON."""

import base64
import json
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from core.drawing.figures import (
    ADDITION_PATH,
    BACKGROUND,
    NEIGHBOURS,
    NORMAL,
    PRESENTER,
    SEGMENT_SHIFT,
    SELECTED,
    background_trace,
    embedding_figure,
    embedding_spec,
)
from core.drawing.wire import figure_json, trace_json
from core.model.projection import PCAProjection
from core.plane.pipeline import explore
from core.plane.scene import GROUPS, Neighbourhood, Scene
from core.tables.session import Session
from core.view.options import LIMITS

TOKENS = ("[CLS]", "the", "cat", "[SEP]", "on", "<i>mat</i>", "[SEP]")
SEGMENTS = (0, 0, 0, 0, 1, 1, 1)
SELECTED_TOKEN = 2
NEAR_LABELS = {"token": ("<b>x</b>", "dog", "a&b"), "output": ("kitten", "<b>x</b>")}


def make_scene(groups=GROUPS, d=6, seed=0, neighbourhood=True) -> Scene:
    """A scene as the app builds one: real vectors in one PCA plane, with shift arrows for
    segment B and three token / two output neighbours of 'cat'."""
    rng = np.random.default_rng(seed)
    length = len(TOKENS)
    token, position = rng.standard_normal((2, length, d))
    seg = rng.standard_normal((2, d))
    segment = seg[list(SEGMENTS)]
    total = token + position + segment
    output = (total - total.mean(1, keepdims=True)) / total.std(1, keepdims=True)
    vectors = {"token": token, "position": position, "segment": segment, "sum": total, "output": output}
    vectors = {group: vectors[group] for group in groups}
    projection = PCAProjection().fit(np.vstack(list(vectors.values())))
    points = {group: projection.transform(v) for group, v in vectors.items()}
    step = projection.transform(seg)
    shift_from = np.full((length, 2), np.nan)
    if "sum" in points:
        b = np.asarray(SEGMENTS) == 1
        shift_from[b] = points["sum"][b] - (step[1] - step[0])
    near = None
    if neighbourhood:
        near = Neighbourhood(
            selected=SELECTED_TOKEN,
            points={kind: projection.transform(rng.standard_normal((len(labels), d)))
                    for kind, labels in NEAR_LABELS.items()},
            labels=NEAR_LABELS,
            cosines={"token": np.array([0.9, 0.5, 0.25], np.float32), "output": np.array([0.75, 0.5], np.float32)},
        )
    return Scene(
        tokens=TOKENS,
        ids=tuple(range(100, 100 + length)),
        positions=tuple(range(length)),
        segment_ids=SEGMENTS,
        special_mask=tuple(t == "[CLS]" or t == "[SEP]" for t in TOKENS),
        continuation_mask=(False,) * length,
        points=points,
        norms={group: np.linalg.norm(v, axis=1) for group, v in vectors.items()},
        explained=tuple(projection.explained_variance_ratio_),
        origin=projection.origin(),
        shift_from=shift_from,
        neighbourhood=near,
    )


def named(spec: dict, name: str) -> list[dict]:
    return [trace for trace in spec["data"] if trace["name"] == name]


def decoded(spec: dict) -> np.ndarray:
    """A typed array as plotly sends it (base64 bytes, dtype, shape) back in numpy."""
    array = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=spec["dtype"])
    shape = spec.get("shape")
    return array.reshape([int(n) for n in shape.split(",")]) if shape else array


# ---------------------------------------------------------------- segment shift


def test_shift_draws_one_arrow_per_shifted_token_ending_on_its_sum():
    scene = make_scene()
    (shift,) = named(embedding_spec(scene, shift=True), SEGMENT_SHIFT)
    rows = np.flatnonzero(~np.isnan(scene.shift_from).any(axis=1))
    np.testing.assert_array_equal(rows, [4, 5, 6])  # segment B's three tokens
    xy = np.column_stack([shift["x"], shift["y"]]).reshape(len(rows), 3, 2)  # start, end, gap
    np.testing.assert_allclose(xy[:, 0], scene.shift_from[rows], atol=1e-6)
    np.testing.assert_allclose(xy[:, 1], scene.points["sum"][rows], atol=1e-6)
    assert np.isnan(xy[:, 2]).all()
    # one and the same vector, seg[1] − seg[0], for every token of B
    arrows = xy[:, 1] - xy[:, 0]
    np.testing.assert_allclose(arrows, np.broadcast_to(arrows[0], arrows.shape), atol=1e-5)
    # an arrow head on the end point only
    np.testing.assert_array_equal(np.asarray(shift["marker"]["size"]).reshape(3, 3)[:, [0, 2]], 0)
    assert (np.asarray(shift["marker"]["size"]).reshape(3, 3)[:, 1] > 0).all()
    assert shift["marker"]["symbol"] == "arrow" and shift["mode"] == "lines+markers"


def test_shift_arrows_of_a_real_flip_end_on_the_sums():
    session = Session.create()
    result = explore(session, "the cat sat", "on the mat", flipped={2: "cat"})
    scene = result.scene
    (shift,) = named(embedding_spec(scene, shift=True), SEGMENT_SHIFT)
    rows = np.flatnonzero(~np.isnan(scene.shift_from).any(axis=1))
    np.testing.assert_array_equal(rows, [2, 5, 6, 7, 8])  # the flipped 'cat' and segment B
    xy = np.column_stack([shift["x"], shift["y"]]).reshape(len(rows), 3, 2)
    np.testing.assert_allclose(xy[:, 1], scene.points["sum"][rows], atol=1e-5)


def test_no_shift_without_the_option_the_sum_group_or_any_arrow():
    scene = make_scene()
    assert named(embedding_spec(scene), SEGMENT_SHIFT) == []
    assert named(embedding_spec(scene, shift=False), SEGMENT_SHIFT) == []
    no_sum = replace(scene, points={g: p for g, p in scene.points.items() if g != "sum"},
                     norms={g: n for g, n in scene.norms.items() if g != "sum"})
    assert named(embedding_spec(no_sum, shift=True), SEGMENT_SHIFT) == []
    all_nan = replace(scene, shift_from=np.full((len(TOKENS), 2), np.nan))
    assert named(embedding_spec(all_nan, shift=True), SEGMENT_SHIFT) == []
    assert named(embedding_spec(replace(scene, shift_from=None), shift=True), SEGMENT_SHIFT) == []


def test_a_shift_of_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"shift_from has shape \(3, 2\), expected \(7, 2\)"):
        replace(make_scene(), shift_from=np.zeros((3, 2)))


# ---------------------------------------------------------------- neighbourhood


def test_neighbours_of_each_kind_shown_and_a_ring_on_the_selected_token():
    scene = make_scene()
    spec = embedding_spec(scene)
    names = [trace["name"] for trace in spec["data"]]
    assert names == [*GROUPS, NEIGHBOURS["token"], NEIGHBOURS["output"], SELECTED]
    # the selected token's label is one the page must write, in each group that carries tokens
    labels = spec["layout"]["meta"]["labels"]
    order = labels["order"]
    assert order[:3] == ["segment", NEIGHBOURS["token"], NEIGHBOURS["output"]]
    for group in ("token", "sum", "output"):
        (point,) = labels["must"][group]
        assert labels["texts"][group][point] == "cat"
    assert NEIGHBOURS == {"token": "nearest by token vector", "output": "nearest by output vector"}
    for kind in ("token", "output"):
        (trace,) = named(spec, NEIGHBOURS[kind])
        np.testing.assert_allclose(np.column_stack([trace["x"], trace["y"]]), scene.neighbourhood.points[kind],
                                   atol=1e-6)
        np.testing.assert_array_equal(trace["customdata"], scene.neighbourhood.cosines[kind])
    (ring,) = named(spec, SELECTED)
    expected = np.stack([scene.points["token"][SELECTED_TOKEN], scene.points["output"][SELECTED_TOKEN]])
    np.testing.assert_allclose(np.column_stack([ring["x"], ring["y"]]), expected, atol=1e-6)


def test_neighbour_labels_are_escaped():
    spec = embedding_spec(make_scene(groups=("token", "output")))
    (token,) = named(spec, NEIGHBOURS["token"])
    texts = spec["layout"]["meta"]["labels"]["texts"]
    assert texts[NEIGHBOURS["token"]] == token["hovertext"] == ["&lt;b&gt;x&lt;/b&gt;", "dog", "a&amp;b"]
    (output,) = named(spec, NEIGHBOURS["output"])
    assert texts[NEIGHBOURS["output"]] == output["hovertext"] == ["kitten", "&lt;b&gt;x&lt;/b&gt;"]
    assert token["mode"] == output["mode"] == "markers"  # the page writes their names
    payload = figure_json(spec)
    assert "<b>x</b>" not in payload and "<i>mat</i>" not in payload


def test_only_the_shown_kinds_get_neighbours_and_rings():
    spec = embedding_spec(make_scene(groups=("token", "sum")))
    assert [t["name"] for t in spec["data"]] == ["token", "sum", NEIGHBOURS["token"], SELECTED]
    (ring,) = named(spec, SELECTED)
    assert len(ring["x"]) == 1
    spec = embedding_spec(make_scene(groups=("position", "output")))
    assert [t["name"] for t in spec["data"]] == ["position", "output", NEIGHBOURS["output"], SELECTED]
    spec = embedding_spec(make_scene(groups=("position", "sum")))  # no stars, no ring; the selection labelled
    assert [t["name"] for t in spec["data"]] == ["position", "sum"]
    assert list(spec["layout"]["meta"]["labels"]["must"]) == ["sum"]


def test_a_selection_outside_the_scene_is_refused():
    scene = make_scene()
    with pytest.raises(ValueError, match="the selected token 7 is not one of the 7 tokens"):
        replace(scene, neighbourhood=replace(scene.neighbourhood, selected=7))


def test_lecture_traces_survive_plotly_validation_and_the_fast_json():
    scene = make_scene()
    spec = embedding_spec(scene, shift=True, arrows=True)
    fast = json.loads(figure_json(spec))
    assert fast == json.loads(embedding_figure(scene, shift=True, arrows=True).to_json())
    again = pio.from_json(figure_json(spec))  # validates every property of every trace
    assert [trace.name for trace in again.data] == [trace["name"] for trace in spec["data"]]
    assert SEGMENT_SHIFT in [trace.name for trace in again.data]


# ---------------------------------------------------------------- presenter mode and plane


def test_presenter_mode_is_larger_everywhere():
    assert PRESENTER.marker > NORMAL.marker and PRESENTER.text > NORMAL.text
    assert PRESENTER.font > NORMAL.font and PRESENTER.line > NORMAL.line
    scene = make_scene()
    for scale, spec in ((NORMAL, embedding_spec(scene, shift=True)),
                        (PRESENTER, embedding_spec(scene, shift=True, presenter=True))):
        (token,) = named(spec, "token")
        assert token["marker"]["size"] == scale.marker
        assert token["marker"]["line"]["width"] == scale.line
        assert spec["layout"]["meta"]["labels"]["size"] == scale.text
        assert spec["layout"]["font"]["size"] == spec["layout"]["legend"]["font"]["size"] == scale.font
        (near,) = named(spec, NEIGHBOURS["token"])
        assert near["marker"]["size"] == scale.marker + 2
        (ring,) = named(spec, SELECTED)
        assert ring["marker"]["size"] == 3 * scale.marker
        (shift,) = named(spec, SEGMENT_SHIFT)
        assert shift["line"]["width"] == scale.line + 1
    assert (NORMAL.marker, NORMAL.text, NORMAL.font) == (8, 10, 12)
    assert (PRESENTER.marker, PRESENTER.text, PRESENTER.font) == (15, 18, 20)


def test_vocabulary_plane_is_named_in_the_axis_titles():
    scene = replace(make_scene(), explained=(0.0202, 0.0167), plane="vocabulary")
    layout = embedding_spec(scene)["layout"]
    assert layout["xaxis"]["title"]["text"] == "PC1 · 2.0% of the vocabulary"
    assert layout["yaxis"]["title"]["text"] == "PC2 · 1.7% of the vocabulary"
    own = embedding_spec(replace(scene, plane=""))["layout"]
    assert own["xaxis"]["title"]["text"] == "PC1 · 2.0%"


def test_a_vocabulary_view_names_its_plane():
    result = explore(Session.create().with_basis("vocabulary"), "the cat", "")
    title = embedding_spec(result.scene)["layout"]["xaxis"]["title"]["text"]
    assert title.startswith("PC1 · ") and title.endswith("% of the vocabulary")


# ---------------------------------------------------------------- background


def test_background_trace_is_a_faint_layer_beneath_the_tokens():
    points = np.array([[0.5, -1.25], [3.0, 4.0], [1e-3, 2.0]])  # float64 in
    trace = background_trace(points, ["<b>x</b>", "a&b", "the"])
    # WebGL is drawn above every SVG trace: the background is SVG, drawn first
    assert trace["type"] == "scatter"
    assert trace["name"] == trace["legendgroup"] == BACKGROUND == "vocabulary"
    assert trace["x"].dtype == trace["y"].dtype == np.float32
    np.testing.assert_array_equal(trace["x"], points[:, 0].astype(np.float32))
    np.testing.assert_array_equal(trace["y"], points[:, 1].astype(np.float32))
    assert trace["hovertext"] == ["&lt;b&gt;x&lt;/b&gt;", "a&amp;b", "the"]
    assert trace["mode"] == "markers" and trace["hoverinfo"] == "text"


def test_the_largest_background_a_view_may_ask_for_is_svg_beneath_the_tokens():
    largest = LIMITS["background"][1]
    assert background_trace(np.zeros((largest, 2)), ["w"] * largest)["type"] == "scatter"


def test_empty_background_trace():
    trace = background_trace(np.zeros((0, 2)), [])
    assert len(trace["x"]) == len(trace["y"]) == 0 and trace["hovertext"] == []


@pytest.mark.parametrize(
    ("points", "labels"),
    [(np.zeros((3, 3)), ["a", "b", "c"]), (np.zeros(3), ["a", "b", "c"]), (np.zeros((3, 2)), ["a", "b"]),
     (np.zeros((2, 2, 2)), ["a", "b"])],
    ids=["three-columns", "one-dimensional", "too-few-labels", "three-dimensional"],
)
def test_background_trace_refuses_mismatched_shapes(points, labels):
    with pytest.raises(ValueError, match=r"the background needs \(N, 2\) points and N labels"):
        background_trace(points, labels)


def test_trace_json_parses_and_plotly_decodes_it():
    points = np.array([[0.5, -1.25], [3.0, 4.0], [1e-3, 2.0]])
    trace = background_trace(points, ["<b>x</b>", "a&b", "the"])
    sent = json.loads(trace_json(trace))
    assert sent["x"]["dtype"] == sent["y"]["dtype"] == "f4"
    np.testing.assert_array_equal(decoded(sent["x"]), trace["x"])
    np.testing.assert_array_equal(decoded(sent["y"]), trace["y"])
    assert sent["hovertext"] == ["&lt;b&gt;x&lt;/b&gt;", "a&amp;b", "the"]
    assert "<b>" not in trace_json(trace)
    figure = go.Figure({"data": [sent]})  # plotly validates the trace as it builds the figure
    assert figure.data[0].type == "scatter" and figure.data[0].name == BACKGROUND
    again = pio.from_json(json.dumps({"data": [sent], "layout": {}}))
    np.testing.assert_array_equal(decoded(again.data[0].x), trace["x"])
    # the trace itself is left as it was: numpy arrays, for the next serialisation
    assert isinstance(trace["x"], np.ndarray)


# ---------------------------------------------------------------- legible in the lecture hall

KING = ("The king spoke to the queen.", "A man and a woman listened.")


@pytest.fixture(scope="module")
def bert():
    return Session.create(source="bert")


def panel_of(trace: dict) -> int:
    return 2 if trace.get("xaxis") == "x2" else 1


def spans(spec: dict, plot_px=(800.0, 420.0)) -> dict[str, float]:
    """Each group's extent as a share of its panel's width or height (the larger), with the
    panel's range as plotly draws it: equal scales, 10% padding, the panel's share of the width."""
    layout, shares = spec["layout"], {}
    for number in (1, 2):
        traces = [t for t in spec["data"] if t["name"] in GROUPS and panel_of(t) == number]
        if not traces:
            continue
        xy = np.concatenate([np.column_stack([t["x"], t["y"]]) for t in traces])
        axis = layout["xaxis" if number == 1 else "xaxis2"]
        lo, hi = axis.get("domain", [0, 1])
        width, height = plot_px[0] * (hi - lo), plot_px[1]
        per_px = max(np.ptp(xy[:, 0]) * 1.1 / width, np.ptp(xy[:, 1]) * 1.1 / height)
        for t in traces:
            own = np.ptp(np.column_stack([t["x"], t["y"]]), axis=0)
            shares[t["name"]] = max(own[0] / (per_px * width), own[1] / (per_px * height))
    return shares


def test_bert_outputs_get_their_own_panel_and_every_group_is_spread_out(bert):
    scene = explore(bert, *KING).scene
    spec = embedding_spec(scene)
    assert {t["name"]: panel_of(t) for t in spec["data"] if t["name"] in GROUPS} == {
        "token": 1, "position": 1, "segment": 1, "sum": 1, "output": 2}
    layout = spec["layout"]
    assert layout["yaxis2"]["scaleanchor"] == "x2" and layout["yaxis"]["scaleanchor"] == "x"
    assert layout["xaxis"]["domain"][1] < layout["xaxis2"]["domain"][0]  # side by side
    for plot_px in ((800.0, 420.0), (1150.0, 720.0), (370.0, 480.0)):
        shares = spans(spec, plot_px)
        assert min(shares.values()) >= 0.1, shares
    # the one blob it used to be: in one plane the segment and position clouds are specks
    one = spans(embedding_spec(scene, panels="one", magnify=False))
    assert one["segment"] < 0.01 and one["position"] < 0.1


def test_a_magnified_group_says_so_on_the_plot_and_keeps_its_centre(bert):
    scene = explore(bert, *KING).scene
    spec = embedding_spec(scene)
    notes = " ".join(a["text"] for a in spec["layout"]["annotations"])
    assert "segment ×20" in notes and "position ×2" in notes and "magnified" in notes
    assert "after LayerNorm: output, its own scale" in notes
    (segment,) = named(spec, "segment")
    drawn = np.column_stack([segment["x"], segment["y"]])
    rows = [scene.segment_ids.index(0), scene.segment_ids.index(1)]
    true = scene.points["segment"][rows]
    np.testing.assert_allclose(drawn.mean(axis=0), true.mean(axis=0), atol=1e-5)  # same centre
    np.testing.assert_allclose(drawn[1] - drawn[0], 20 * (true[1] - true[0]), rtol=1e-3)
    # unmagnified, the groups that carry the arrows are drawn where they are
    (token,) = named(spec, "token")
    assert np.allclose(sorted(token["x"]), sorted(scene.points["token"][:, 0]), atol=1e-6)


def test_comparable_groups_stay_in_one_plane():
    spec = embedding_spec(make_scene())
    assert "xaxis2" not in spec["layout"] and all("xaxis" not in t for t in spec["data"])
    with pytest.raises(ValueError, match="panels is 'two'"):
        embedding_spec(make_scene(), panels="two")


def test_split_panels_keep_neighbours_rings_and_arrows_with_their_groups(bert):
    index = bert.encode(*KING).tokens.index("king")
    scene = explore(bert, *KING, selected=index).scene
    spec = embedding_spec(scene, arrows=True)
    assert panel_of(named(spec, NEIGHBOURS["output"])[0]) == 2 and panel_of(named(spec, NEIGHBOURS["token"])[0]) == 1
    assert sorted(panel_of(t) for t in named(spec, SELECTED)) == [1, 2]
    (path,) = named(spec, ADDITION_PATH)
    assert panel_of(path) == 1 and len(path["x"]) == 4  # token, + position, + segment = sum, gap


def test_arrows_follow_the_selected_token_only():
    scene = replace(make_scene(neighbourhood=False), selected=SELECTED_TOKEN)
    (path,) = named(embedding_spec(scene, arrows=True), ADDITION_PATH)
    xy = np.column_stack([path["x"], path["y"]]).reshape(1, 5, 2)
    np.testing.assert_allclose(xy[0, 0], scene.points["token"][SELECTED_TOKEN], atol=1e-6)
    np.testing.assert_allclose(xy[0, 2], scene.points["sum"][SELECTED_TOKEN], atol=1e-5)
    np.testing.assert_allclose(xy[0, 3], scene.points["output"][SELECTED_TOKEN], atol=1e-6)
    # with neighbours shown, the neighbourhood's token is the selected one
    (path,) = named(embedding_spec(make_scene(), arrows=True), ADDITION_PATH)
    assert len(path["x"]) == 5
    (every,) = named(embedding_spec(make_scene(neighbourhood=False), arrows=True), ADDITION_PATH)
    assert len(every["x"]) == 5 * len(TOKENS)


def test_hover_on_coincident_points_names_every_token_there():
    scene = make_scene(neighbourhood=False)
    token = scene.points["token"].copy()
    token[4] = token[1]  # "on" where "the" is, as a repeated word's rows would be
    scene = replace(scene, points={**scene.points, "token": token})
    (trace,) = named(embedding_spec(scene), "token")
    texts = list(trace["hovertext"])
    assert texts.count("the (1), on (4)") == 2 and "cat" in texts
    (sums,) = named(embedding_spec(scene), "sum")
    assert "the" in sums["hovertext"]  # the sums do not coincide


def test_the_segment_shift_states_its_length(bert):
    scene = explore(bert, *KING).scene
    seg = bert.model.seg_embed.weight.detach().numpy()
    assert scene.segment_shift == pytest.approx(float(np.linalg.norm(seg[1] - seg[0])), rel=1e-6)
    spec = embedding_spec(scene, shift=True)
    notes = " ".join(a["text"] for a in spec["layout"]["annotations"])
    assert f"= {scene.segment_shift:.3f}" in notes.replace("<br>", " ") and "full space" in notes
    (shift,) = named(spec, SEGMENT_SHIFT)
    assert f"length {scene.segment_shift:.3f}" in shift["hovertemplate"]
    assert "seg[1]" not in " ".join(a["text"] for a in embedding_spec(scene)["layout"]["annotations"])


def test_figures_fill_the_page_instead_of_a_fixed_height():
    for presenter in (False, True):
        layout = embedding_spec(make_scene(), presenter=presenter)["layout"]
        assert layout["autosize"] is True and "height" not in layout


def test_notes_fit_a_phone(bert):
    index = bert.encode(*KING).tokens.index("king")
    scene = explore(bert, *KING, selected=index).scene
    for spec in (embedding_spec(scene, shift=True, arrows=True), embedding_spec(replace(scene, message="x " * 60))):
        for note in spec["layout"]["annotations"]:
            assert max(len(line) for line in note["text"].split("<br>")) <= 60
            if note["xanchor"] == "right":
                assert max(len(line) for line in note["text"].split("<br>")) <= 45


def test_three_components_give_a_rotatable_scene_of_the_same_points(bert):
    flat, deep = explore(bert, *KING), explore(bert, *KING, components=3)
    assert deep.scene.dims == 3 and len(deep.scene.explained) == 3
    spec = embedding_spec(deep.scene, arrows=True)
    scene_layout = spec["layout"]["scene"]
    assert [scene_layout[a]["title"]["text"][:4] for a in ("xaxis", "yaxis", "zaxis")] == ["PC1 ", "PC2 ", "PC3 "]
    assert scene_layout["aspectmode"] == "data"
    groups = {t["name"]: t for t in spec["data"] if t["name"] in GROUPS}
    assert list(groups) == list(GROUPS) and {t["type"] for t in groups.values()} == {"scatter3d"}
    flat_groups = {t["name"]: t for t in embedding_spec(flat.scene)["data"] if t["name"] in GROUPS}
    for name, trace in groups.items():
        assert len(trace["x"]) == len(trace["y"]) == len(trace["z"]) == len(flat_groups[name]["x"])
        assert list(trace["hovertext"]) == list(flat_groups[name]["hovertext"])
        assert trace["hovertemplate"].split("<br>")[0] == flat_groups[name]["hovertemplate"].split("<br>")[0]
    # the first two components are the plane's (the same sentence fit, up to float rounding)
    np.testing.assert_allclose(deep.scene.points["token"][:, :2], flat.scene.points["token"], atol=1e-3)
    assert {t["type"] for t in named(spec, ADDITION_PATH)} == {"scatter3d", "cone"}
    fast = json.loads(figure_json(spec))
    assert [t["name"] for t in pio.from_json(json.dumps(fast)).data] == [t["name"] for t in spec["data"]]


def test_a_selected_token_is_ringed_in_three_dimensions(bert):
    index = bert.encode(*KING).tokens.index("king")
    scene = explore(bert, *KING, selected=index, components=3).scene
    spec = embedding_spec(scene, arrows=True)
    (ring,) = named(spec, SELECTED)
    np.testing.assert_allclose([ring["x"][0], ring["y"][0], ring["z"][0]], scene.points["token"][index], atol=1e-6)
    assert named(spec, NEIGHBOURS["token"])[0]["type"] == "scatter3d"
    (path,) = [t for t in named(spec, ADDITION_PATH) if t["type"] == "scatter3d"]
    assert len(path["x"]) == 5  # only the selected token's path


def test_categories_colour_the_corpus_words_with_a_legend():
    from core.model.training import Corpus

    categories = Corpus.builtin().categories
    session = Session.create()
    scene = explore(session, "the cat and the dog", "a red fox", categories=categories).scene
    spec = embedding_spec(scene)
    halos = [t for t in spec["data"] if t["name"].startswith("category: ")]
    assert [t["name"] for t in halos] == ["category: animals", "category: colours"]
    assert len(halos[0]["x"]) == 3 and len(halos[1]["x"]) == 1  # cat, dog, fox; red
    assert spec["data"].index(halos[0]) < spec["data"].index(named(spec, "token")[0])  # drawn beneath
    assert len({t["marker"]["color"] for t in halos}) == 2
    plain = embedding_spec(explore(session, "the cat", "").scene)
    assert not any(t["name"].startswith("category") for t in plain["data"])


def test_the_loss_curve_is_a_cheap_dict_that_can_span_the_whole_run():
    from core.drawing.charts import loss_spec

    spec = loss_spec([3.0, 2.5, 2.0], steps=150)
    assert isinstance(spec, dict) and spec["layout"]["xaxis"]["range"] == [0, 151]
    np.testing.assert_array_equal(spec["data"][0]["x"], [1, 2, 3])
    assert spec["layout"]["uirevision"] == "loss"
    assert "range" not in loss_spec([1.0])["layout"]["xaxis"]
