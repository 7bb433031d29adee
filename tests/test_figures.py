"""embedding_figure, checked through the figure's data rather than its pixels."""

import base64
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from core.drawing.charts import loss_spec
from core.drawing.figures import ADDITION_PATH, MOVEMENT, embedding_figure, embedding_spec
from core.drawing.palette import LIGHT
from core.drawing.wire import figure_json
from core.model.projection import PCAProjection
from core.plane.scene import GROUPS, Scene

ROOT = Path(__file__).resolve().parents[1]
TOKENS = ("[CLS]", "the", "embed", "##ding", "<img src=x onerror=alert(1)>", "[SEP]", "tom & jerry", "[SEP]")
SEGMENTS = (0, 0, 0, 0, 0, 0, 1, 1)


def make_scene(groups=GROUPS, tokens=TOKENS, message="", d=6, seed=0) -> Scene:
    """A scene built the way the app builds it: real vectors, projected with PCA."""
    rng = np.random.default_rng(seed)
    length = len(tokens)
    segments = (SEGMENTS * length)[:length]
    token, position = rng.standard_normal((2, length, d))
    segment = np.where(np.array(segments)[:, None] == 1, 0.5, -0.5) * np.ones(d)
    total = token + position + segment
    output = (total - total.mean(1, keepdims=True)) / total.std(1, keepdims=True)
    vectors = {"token": token, "position": position, "segment": segment, "sum": total, "output": output}
    vectors = {group: vectors[group] for group in groups}
    projection = PCAProjection().fit(np.vstack(list(vectors.values())))
    return Scene(
        tokens=tuple(tokens),
        ids=tuple(range(100, 100 + length)),
        positions=tuple(range(length)),
        segment_ids=segments,
        special_mask=tuple(t in ("[CLS]", "[SEP]") for t in tokens),
        continuation_mask=tuple(t.startswith("##") for t in tokens),
        points={group: projection.transform(v) for group, v in vectors.items()},
        norms={group: np.linalg.norm(v, axis=1) for group, v in vectors.items()},
        explained=tuple(projection.explained_variance_ratio_),
        origin=projection.origin(),
        message=message,
    )


def group_traces(figure: go.Figure) -> list:
    return [trace for trace in figure.data if trace.name in GROUPS]


def token_traces(figure: go.Figure) -> list:
    """The groups drawn with one point per token: all but the segment rows."""
    return [trace for trace in group_traces(figure) if trace.name != "segment"]


def by_token(trace) -> dict[str, tuple]:
    """Each hover token mapped to its (x, y, symbol, customdata row), whatever the order."""
    return {
        token: (x, y, symbol, tuple(row))
        for token, x, y, symbol, row in zip(
            trace.hovertext, trace.x, trace.y, trace.marker.symbol, trace.customdata, strict=True
        )
    }


def test_one_trace_per_group_in_display_order():
    figure = embedding_figure(make_scene())
    traces = group_traces(figure)
    assert [trace.name for trace in traces] == list(GROUPS)
    assert [trace.legendgroup for trace in traces] == list(GROUPS)
    assert [trace.marker.color for trace in traces] == [LIGHT.colours[g] for g in GROUPS]
    assert len(set(LIGHT.colours.values())) == len(GROUPS)
    assert all(len(trace.x) == len(trace.y) == len(TOKENS) for trace in token_traces(figure))


def test_each_segment_row_is_one_point_that_says_how_many_tokens_share_it():
    scene = make_scene()
    figure = embedding_figure(scene)
    segment = next(trace for trace in figure.data if trace.name == "segment")
    assert list(segment.hovertext) == ["A", "B"] and figure.layout.meta["labels"]["texts"]["segment"] == ["A", "B"]
    rows = np.asarray(segment.customdata)
    assert rows[:, :2].tolist() == [[0, SEGMENTS.count(0)], [1, SEGMENTS.count(1)]]
    for row, (x, y) in enumerate(zip(segment.x, segment.y, strict=True)):
        i = SEGMENTS.index(row)
        assert (x, y) == pytest.approx(tuple(scene.points["segment"][i]), rel=1e-6)
        assert rows[row, 2] == pytest.approx(scene.norms["segment"][i], rel=1e-6)
    assert "shared by %{customdata[1]} tokens" in segment.hovertemplate


def test_only_the_groups_given_are_drawn_still_in_display_order():
    figure = embedding_figure(make_scene(groups=("output", "token")))
    assert [trace.name for trace in figure.data] == ["token", "output"]


def test_points_and_hover_data_belong_to_their_token():
    scene = make_scene()
    trace = group_traces(embedding_figure(scene))[3]  # sum
    rows = by_token(trace)
    for i, token in enumerate(TOKENS[:5]):  # the first five tokens are unique
        x, y, _, (token_id, position, segment, norm) = rows[escaped(token)]
        assert (x, y) == pytest.approx(tuple(scene.points["sum"][i]), rel=1e-6)
        assert (token_id, position, segment) == (100 + i, i, SEGMENTS[i])
        assert norm == pytest.approx(scene.norms["sum"][i], rel=1e-6)
    assert "%{customdata[3]:.3f}" in trace.hovertemplate and "sum" in trace.hovertemplate


def test_coordinates_and_hover_numbers_are_sent_as_compact_float32():
    trace = embedding_figure(make_scene()).data[0]
    assert trace.x.dtype == trace.y.dtype == trace.customdata.dtype == np.float32
    assert trace.customdata.shape == (len(TOKENS), 4)
    sent = json.loads(embedding_figure(make_scene()).to_json())["data"][0]
    assert sent["x"]["dtype"] == "f4" and "bdata" in sent["x"]  # base64, not a list


def test_special_tokens_and_word_pieces_have_their_own_shapes():
    rows = by_token(embedding_figure(make_scene()).data[0])
    assert rows["[CLS]"][2] == rows["[SEP]"][2] == 2  # plotly's code for a diamond
    assert rows["##ding"][2] == "circle-open"
    assert rows["the"][2] == rows["embed"][2] == 0  # circle
    note = embedding_figure(make_scene()).layout.annotations[0].text
    assert "[CLS]" in note and "##" in note


def test_legend_shows_a_plain_circle():
    # plotly's legend copies the first point's shape, so a plain word must come first
    for trace in token_traces(embedding_figure(make_scene())):
        assert trace.marker.symbol[0] == 0


def test_no_shape_note_without_special_tokens_or_pieces():
    figure = embedding_figure(make_scene(tokens=("a", "b", "c")), labels=False)  # no count of labels either
    assert figure.layout.annotations == ()


def test_axis_titles_carry_the_explained_variance():
    figure = embedding_figure(replace(make_scene(), explained=(0.412, 0.0789)))
    assert figure.layout.xaxis.title.text == "PC1 · 41.2%"
    assert figure.layout.yaxis.title.text == "PC2 · 7.9%"
    assert figure.layout.yaxis.scaleanchor == "x"  # equal scales: honest distances


def test_layout_keeps_user_state_across_updates():
    figure = embedding_figure(make_scene(), uirevision="session-1")
    assert figure.layout.uirevision == "session-1"
    assert figure.layout.legend.orientation == "h"
    assert figure.layout.template.layout.plot_bgcolor == "white"  # plotly_white


def test_user_text_is_escaped_in_labels_hover_and_json():
    figure = embedding_figure(make_scene())
    escaped = "&lt;img src=x onerror=alert(1)&gt;"
    assert all(escaped in trace.hovertext for trace in token_traces(figure))
    texts = figure.layout.meta["labels"]["texts"]  # the page writes them as text, unescaped
    for group in ("token", "sum", "output"):
        assert escaped in texts[group] and "tom &amp; jerry" in texts[group]
    payload = figure.to_json()
    assert "<img" not in payload and "onerror=alert(1)>" not in payload
    # in every hover, and in every label of a token
    assert payload.count(escaped) == len(token_traces(figure)) + 3


def test_webgl_figures_ask_for_the_same_labels():
    """The page writes the labels of a WebGL figure as of an SVG one: in its own layer."""
    svg, gl = embedding_figure(make_scene()), embedding_figure(make_scene(), webgl_above=0)
    assert {trace.type for trace in token_traces(gl)} == {"scattergl"}
    assert gl.layout.meta["labels"] == svg.layout.meta["labels"]


def test_labels_switch():
    with_labels = embedding_figure(make_scene(), labels=True)
    without = embedding_figure(make_scene(), labels=False)
    wanted = with_labels.layout.meta["labels"]
    assert wanted["order"] == ["segment", "token", "output", "sum", "position"]
    assert all(len(wanted["texts"][group]) == len(TOKENS) for group in ("token", "sum", "output", "position"))
    assert wanted["texts"]["segment"] == ["A", "B"]
    # plotly writes no label itself: the page places them (assets/labels.js)
    assert {trace.mode for trace in group_traces(with_labels)} == {"markers"}
    assert without.layout.meta is None or "labels" not in without.layout.meta
    assert len(without.data[0].hovertext) == len(TOKENS)  # hover still names the token


def test_webgl_above_the_threshold():
    points = len(GROUPS) * len(TOKENS)
    assert {t.type for t in embedding_figure(make_scene(), webgl_above=points).data} == {"scatter"}
    assert {t.type for t in embedding_figure(make_scene(), webgl_above=points - 1).data} == {"scattergl"}


def test_message_is_shown_as_an_annotation():
    figure = embedding_figure(make_scene(message="All 4 vectors are identical & dull."))
    texts = [annotation.text for annotation in figure.layout.annotations]
    assert "All 4 vectors are identical &amp; dull." in texts


def test_addition_path_ends_on_the_sum_then_goes_to_the_output():
    scene = make_scene()
    figure = embedding_figure(scene, arrows=True)
    assert [trace.name for trace in figure.data] == [*GROUPS, ADDITION_PATH]
    path = figure.data[-1]
    assert path.mode == "lines+markers" and path.marker.symbol == "arrow"
    assert path.marker.angleref == "previous"

    # one path per token: token, + position, + segment, output, then a gap
    xy = np.column_stack([path.x, path.y]).reshape(len(TOKENS), 5, 2)
    origin = scene.origin
    assert np.allclose(xy[:, 0], scene.points["token"], atol=1e-5)
    assert np.allclose(xy[:, 1], scene.points["token"] + scene.points["position"] - origin, atol=1e-5)
    assert np.allclose(xy[:, 2], scene.points["sum"], atol=1e-5)  # PCA is affine
    assert np.allclose(xy[:, 3], scene.points["output"], atol=1e-5)
    assert np.isnan(xy[:, 4]).all()
    # an arrow head on each step, none where a path starts or breaks
    heads = np.asarray(path.marker.size).reshape(len(TOKENS), 5)
    assert (heads[:, [0, 4]] == 0).all() and (heads[:, 1:4] > 0).all()


def test_addition_path_without_output_stops_at_the_sum():
    scene = make_scene(groups=("token", "position", "segment", "sum"))
    path = embedding_figure(scene, arrows=True).data[-1]
    xy = np.column_stack([path.x, path.y]).reshape(len(TOKENS), 4, 2)
    assert np.allclose(xy[:, 2], scene.points["sum"], atol=1e-5)


def test_no_addition_path_when_a_summand_is_missing_or_arrows_are_off():
    partial = make_scene(groups=("token", "position", "sum", "output"))
    assert ADDITION_PATH not in [t.name for t in embedding_figure(partial, arrows=True).data]
    assert ADDITION_PATH not in [t.name for t in embedding_figure(make_scene()).data]


def test_json_round_trip_passes_plotly_validation():
    # the figure is built unvalidated for speed; from_json validates every property
    figure = embedding_figure(make_scene(message="hello"), arrows=True)
    again = pio.from_json(figure.to_json())
    assert [trace.name for trace in again.data] == [trace.name for trace in figure.data]
    assert np.array_equal(decoded(again.data[0].x), figure.data[0].x)
    assert np.array_equal(decoded(again.data[0].customdata), figure.data[0].customdata)
    assert again.layout.xaxis.title.text == figure.layout.xaxis.title.text


def test_a_mismatched_scene_is_refused():
    scene = make_scene()
    with pytest.raises(ValueError, match="ids has 2 entries but there are 8 tokens"):
        replace(scene, ids=(1, 2))
    with pytest.raises(ValueError, match="unknown group 'glove'"):
        replace(scene, points={"glove": np.zeros((8, 2))})
    with pytest.raises(ValueError, match=r"points\['sum'\] has shape \(7, 2\)"):
        replace(scene, points={"sum": np.zeros((7, 2))})


def test_groups_are_the_embedding_layers_components():
    from core.model.embedding import COMPONENTS

    assert GROUPS == COMPONENTS


def test_figures_import_neither_torch_nor_gradio():
    check = "import core.drawing.figures, sys; assert 'torch' not in sys.modules and 'gradio' not in sys.modules"
    subprocess.run([sys.executable, "-c", check], cwd=ROOT, check=True)


def decoded(spec: dict) -> np.ndarray:
    """A typed array as plotly sends it (base64 bytes, dtype, shape) back in numpy."""
    array = np.frombuffer(base64.b64decode(spec["bdata"]), dtype=spec["dtype"])
    shape = spec.get("shape")
    return array.reshape([int(n) for n in shape.split(",")]) if shape else array


def escaped(token: str) -> str:
    return token.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


@pytest.mark.parametrize(
    "options",
    [{}, {"arrows": True}, {"labels": False}, {"webgl_above": 10}],
    ids=["plain", "arrows", "no-labels", "webgl"],
)
def test_fast_json_equals_the_figure_objects_json(options):
    scene = make_scene()
    previous = {g: p + 0.5 for g, p in scene.points.items()}
    for s in (scene, replace(scene, previous=previous)):
        assert json.loads(figure_json(embedding_spec(s, **options))) == json.loads(
            embedding_figure(s, **options).to_json()
        )


def test_movement_since_training_draws_before_points_and_lines():
    scene = make_scene()
    previous = {g: p + 1.0 for g, p in scene.points.items()}
    figure = embedding_figure(replace(scene, previous=previous))
    moved = next(t for t in figure.data if t.name == MOVEMENT)
    n = len(GROUPS) * len(scene.tokens)
    x = np.asarray(moved.x).reshape(n, 3)
    assert np.allclose(x[:, 0] - x[:, 1], 1.0) and np.isnan(x[:, 2]).all()  # from before to now
    with pytest.raises(ValueError, match="same groups and shapes"):
        replace(scene, previous={"token": previous["token"]})


def test_the_loss_curve_has_one_point_per_step():
    trace = loss_spec([3.0, 2.5, 2.0])["data"][0]
    assert list(trace["x"]) == [1, 2, 3] and np.allclose(trace["y"], [3.0, 2.5, 2.0])


def test_fast_json_sends_arrays_without_a_typed_array_as_lists():
    spec = {"data": [{"type": "scatter", "x": np.arange(3, dtype=np.int64), "y": np.ones(3, np.float32)}], "layout": {}}
    trace = json.loads(figure_json(spec))["data"][0]
    assert trace["x"] == [0, 1, 2] and trace["y"]["dtype"] == "f4"
