"""core.figures' lecture additions, read from the figure's data: the segment-shift arrows, the
selected token's neighbourhood (stars, ring, escaped labels), presenter sizes, the vocabulary
plane's axis titles, and the WebGL background trace with its JSON."""

import base64
import json
from dataclasses import replace

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from core.figures import (
    BACKGROUND,
    GROUPS,
    NEIGHBOURS,
    NORMAL,
    PRESENTER,
    SEGMENT_SHIFT,
    SELECTED,
    SVG_BACKGROUND,
    Neighbourhood,
    Scene,
    background_trace,
    embedding_figure,
    embedding_spec,
    figure_json,
    trace_json,
)
from core.projection import PCAProjection
from core.session import Session
from core.view import explore

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
    spec = embedding_spec(make_scene())
    (token,) = named(spec, NEIGHBOURS["token"])
    assert token["text"] == token["hovertext"] == ["&lt;b&gt;x&lt;/b&gt;", "dog", "a&amp;b"]
    (output,) = named(spec, NEIGHBOURS["output"])
    assert output["text"] == ["kitten", "&lt;b&gt;x&lt;/b&gt;"]
    payload = figure_json(spec)
    assert "<b>x</b>" not in payload and "<i>mat</i>" not in payload


def test_only_the_shown_kinds_get_neighbours_and_rings():
    spec = embedding_spec(make_scene(groups=("token", "sum")))
    assert [t["name"] for t in spec["data"]] == ["token", "sum", NEIGHBOURS["token"], SELECTED]
    (ring,) = named(spec, SELECTED)
    assert len(ring["x"]) == 1
    spec = embedding_spec(make_scene(groups=("position", "output")))
    assert [t["name"] for t in spec["data"]] == ["position", "output", NEIGHBOURS["output"], SELECTED]
    spec = embedding_spec(make_scene(groups=("position", "sum")))
    assert [t["name"] for t in spec["data"]] == ["position", "sum"]


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
        assert token["textfont"]["size"] == scale.text
        assert spec["layout"]["font"]["size"] == spec["layout"]["legend"]["font"]["size"] == scale.font
        (near,) = named(spec, NEIGHBOURS["token"])
        assert near["textfont"]["size"] == scale.text and near["marker"]["size"] == scale.marker + 2
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
    # WebGL is drawn above every SVG trace: up to the page's cap the background is SVG, drawn first
    assert trace["type"] == "scatter" and SVG_BACKGROUND == 5_000
    assert trace["name"] == trace["legendgroup"] == BACKGROUND == "vocabulary"
    assert trace["x"].dtype == trace["y"].dtype == np.float32
    np.testing.assert_array_equal(trace["x"], points[:, 0].astype(np.float32))
    np.testing.assert_array_equal(trace["y"], points[:, 1].astype(np.float32))
    assert trace["hovertext"] == ["&lt;b&gt;x&lt;/b&gt;", "a&amp;b", "the"]
    assert trace["mode"] == "markers" and trace["hoverinfo"] == "text"


def test_a_background_beyond_the_cap_is_webgl():
    many = background_trace(np.zeros((SVG_BACKGROUND + 1, 2)), ["w"] * (SVG_BACKGROUND + 1))
    assert many["type"] == "scattergl"
    assert background_trace(np.zeros((SVG_BACKGROUND, 2)), ["w"] * SVG_BACKGROUND)["type"] == "scatter"


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
