"""The figure JSON the page receives decodes back to the scene's own coordinates.

Typed arrays ({"dtype": "f4", "bdata": base64}) are what plotly.js 3 (bundled by gradio 6)
reads; here they are decoded the way it does, for every trace of a full picture.
"""

import base64
import json

import numpy as np
import pytest

from core.figures import GROUPS, Scene, embedding_spec, figure_json, trace_json


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
