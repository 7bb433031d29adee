"""The figure JSON the page receives decodes back to the scene's own coordinates.

Typed arrays ({"dtype": "f4", "bdata": base64}) are what plotly.js 3 (bundled by gradio 6)
reads; here they are decoded the way it does, for every trace of a full picture.
"""

import base64
import json

import numpy as np
import pytest

from core.drawing.figures import embedding_spec
from core.drawing.wire import figure_json, trace_json
from core.plane.scene import GROUPS, Scene


def _decoded(value):
    """A JSON value with every typed array turned back into a numpy array."""
    if isinstance(value, dict) and set(value) >= {"dtype", "bdata"}:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]).newbyteorder("<"))
        if "shape" in value:
            array = array.reshape([int(n) for n in value["shape"].split(",")])
        return array
    if isinstance(value, dict):
        return {key: _decoded(item) for key, item in value.items()}
    return value


@pytest.fixture
def scene() -> Scene:
    rng = np.random.default_rng(0)
    n = 40
    tokens = ("[CLS]", *(f"w{i}" for i in range(n - 2)), "[SEP]")
    return Scene(
        tokens=tokens, ids=tuple(range(100, 100 + n)), positions=tuple(range(n)),
        segment_ids=tuple([0] * 20 + [1] * 20), special_mask=tuple(t.startswith("[") for t in tokens),
        continuation_mask=(False,) * n,
        points={g: rng.standard_normal((n, 2)) * 3 for g in GROUPS},
        norms={g: rng.random(n) for g in GROUPS}, explained=(0.4, 0.2), origin=np.zeros(2),
    )


@pytest.mark.parametrize("webgl_above", [10_000, 10])  # SVG and WebGL traces
def test_every_trace_decodes_to_the_scenes_coordinates(scene, webgl_above):
    spec = embedding_spec(scene, webgl_above=webgl_above)
    sent = json.loads(figure_json(spec))
    assert len(sent["data"]) == len(spec["data"])
    for trace, original in zip(sent["data"], spec["data"], strict=True):
        decoded = _decoded(trace)
        for key in ("x", "y", "customdata"):
            if key not in original:
                continue
            assert isinstance(decoded[key], np.ndarray), f"{trace['name']}.{key} was not sent as a typed array"
            expected = np.asarray(original[key], dtype=np.float32)  # float32: the precision sent
            assert decoded[key].dtype == np.float32
            assert np.array_equal(decoded[key], expected, equal_nan=True), f"{trace['name']}.{key}"
        if trace["name"] in scene.points and trace["name"] != "segment":
            # against the scene itself, not only the spec: every point, within float32 rounding
            shown = np.column_stack([decoded["x"], decoded["y"]])
            assert np.allclose(np.sort(shown, axis=0), np.sort(scene.points[trace["name"]], axis=0),
                               rtol=1e-6, atol=1e-6)


def test_one_trace_alone_decodes_the_same(scene):
    trace = embedding_spec(scene)["data"][0]
    decoded = _decoded(json.loads(trace_json(trace)))
    assert np.array_equal(decoded["x"], np.asarray(trace["x"], dtype=np.float32))


def _listed(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


def _piled(scene: Scene) -> Scene:
    """The scene with three tokens sharing one token vector (a repeated word), as real text has."""
    token = np.array(scene.points["token"], copy=True)
    token[[3, 9, 17]] = token[3]
    tokens = list(scene.tokens)
    tokens[3] = tokens[9] = tokens[17] = "<b>the</b>"
    return Scene(**{**{f: getattr(scene, f) for f in scene.__dataclass_fields__},
                    "points": {**scene.points, "token": token}, "tokens": tuple(tokens),
                    "norms": {**scene.norms, "extra": np.arange(len(tokens), dtype=np.float64)}})


@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("options", [{}, {"labels": False}, {"webgl_above": 10}, {"arrows": True, "shift": True}])
def test_the_compact_figure_expands_to_the_whole_one(scene, dims, options):
    """What the page receives (compact) and what the page draws (expanded) are the whole figure."""
    from core.drawing.wire import expand, table_rows

    scene = _piled(scene)
    if dims == 3:
        rng = np.random.default_rng(1)
        scene = Scene(**{**{f: getattr(scene, f) for f in scene.__dataclass_fields__},
                         "points": {g: rng.standard_normal((len(scene.tokens), 3)) for g in GROUPS},
                         "origin": np.zeros(3), "explained": (0.4, 0.2, 0.1)})
    whole = json.loads(figure_json(embedding_spec(scene, **options)))
    compact = json.loads(figure_json(embedding_spec(scene, compact=True, **options)))
    expanded = expand(compact)
    assert len(expanded["data"]) == len(whole["data"])
    for sent, drawn in zip(expanded["data"], whole["data"], strict=True):
        assert set(sent) == set(drawn), sent["name"]
        for key in drawn:
            a, b = _decoded(sent[key]), _decoded(drawn[key])
            if key == "customdata":  # a list of lists once expanded, a typed array in the whole figure
                a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
            assert json.dumps(a, default=_listed, sort_keys=True) == json.dumps(b, default=_listed, sort_keys=True), (
                sent["name"], key)
    if dims == 2:
        # the per-token groups' names, ids, positions, segments and shapes are sent once, not per group
        for trace in compact["data"]:
            if trace["name"] in ("token", "position", "sum", "output"):
                assert not {"hovertext", "customdata"} & set(trace) and "symbol" not in trace["marker"]
        names = next(t for t in expanded["data"] if t["name"] == "token")["hovertext"]
        assert [name for name in names if "the" in name] == [
            "&lt;b&gt;the&lt;/b&gt; (3), &lt;b&gt;the&lt;/b&gt; (9), &lt;b&gt;the&lt;/b&gt; (17)"] * 3
    # the token table, drawn from the same columns: every token, its numbers, every component's norm
    rows = table_rows(compact)
    assert [row[0] for row in rows] == list(scene.tokens)
    numbers = zip(scene.ids, scene.positions, scene.segment_ids, strict=True)
    assert [row[1:4] for row in rows] == [list(r) for r in numbers]
    assert [row[-1] for row in rows] == pytest.approx(np.arange(len(rows)))


def test_the_compact_figure_is_smaller(scene):
    scene = _piled(scene)
    whole, compact = figure_json(embedding_spec(scene)), figure_json(embedding_spec(scene, compact=True))
    assert len(compact) < 0.8 * len(whole)
