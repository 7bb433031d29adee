"""The wire format's one fixture, tests/fixtures/wire.json, and how it is made.

    python -m tests.wire_fixture    # rewrites tests/fixtures/wire.json

The fixture is a real picture of the app: the page's default tables and view with two
sentences that exercise every column (a word six times, whose token points pile up beyond what
a hover names, a ## word piece, the [CLS]/[SEP] markers, and "<", ">" and "&", which the hover
text escapes); `build` lists what it holds. `core.drawing.wire.token_columns` describes the
columns; tests/test_wire_format.py checks that the code still sends exactly ``compact`` and
``expanded``, and that both readers (`core.drawing.wire` and assets/explorer.js) turn
``compact`` into ``expanded``, ``table`` and ``labels``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import numpy as np

from core.drawing.figures import embedding_spec
from core.drawing.wire import figure_json
from core.plane.scene import Scene

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "wire.json"
SENTENCES = ("the cat sat on the mat by the door", "the <b>tokenization</b> & the cat of the dog")
# the scene's fields stored as arrays, with the dtype the pipeline gives them
ARRAYS = {"points": "float32", "norms": "float32", "origin": "float64", "shift_from": "float32"}


def scene_json(scene: Scene) -> dict:
    """The scene as JSON values (float32 numbers stored exactly, as the float64 they equal)."""
    for field in ("previous", "neighbourhood", "categories"):
        assert getattr(scene, field) is None, f"the fixture's scene has no {field}"
    out = {}
    for field in dataclasses.fields(scene):
        value = getattr(scene, field.name)
        if isinstance(value, dict):
            value = {key: _listed(item) for key, item in value.items()}
        elif isinstance(value, np.ndarray):
            value = _listed(value)
        elif isinstance(value, tuple):
            value = list(value)
        out[field.name] = value
    return out


def _listed(array) -> list:
    """An array as nested lists, NaN as None (null: the file stays strict JSON)."""
    array = np.asarray(array)
    if array.dtype.kind != "f":
        return array.tolist()
    return np.where(np.isnan(array), None, array.astype(object)).tolist()


def scene_of(stored: dict) -> Scene:
    """The `Scene` back from `scene_json` (None back to NaN)."""
    values = {}
    for name, value in stored.items():
        if name in ARRAYS and value is not None:
            dtype = ARRAYS[name]
            value = ({key: np.asarray(item, dtype=dtype) for key, item in value.items()} if isinstance(value, dict)
                     else np.asarray(value, dtype=dtype))
        elif isinstance(value, list):
            value = tuple(value)
        values[name] = value
    return Scene(**values)


def compact_of(scene: Scene) -> dict:
    """What the page receives for this scene: the compact figure, as the JSON it is sent as."""
    return json.loads(figure_json(embedding_spec(scene, compact=True)))


def expanded_of(scene: Scene) -> list[dict]:
    """What the page must draw: the whole figure's traces, each per-token group's customdata
    as plain rows, as a reader of the compact form gives them."""
    whole = json.loads(figure_json(embedding_spec(scene)))["data"]
    compact = compact_of(scene)["data"]
    assert [t.get("name") for t in whole] == [t.get("name") for t in compact], "the two figures' traces differ"
    out = []
    for trace, sent in zip(whole, compact, strict=True):
        if isinstance(sent.get("meta"), dict) and "columns" in sent["meta"]:
            rows = trace["customdata"]
            decoded = np.frombuffer(base64.b64decode(rows["bdata"]), dtype=rows["dtype"])
            trace = {**trace, "customdata": decoded.reshape(-1, 4).tolist()}
        out.append(trace)
    return out


def labels_of(scene: Scene) -> dict:
    """The labels the page must place, texts and all: the whole figure's."""
    return json.loads(figure_json(embedding_spec(scene)))["layout"]["meta"]["labels"]


def table_of(scene: Scene) -> list[list]:
    """The token table as the page shows it: sentence order, every component's norm to 3 places."""
    return [[token, scene.ids[i], scene.positions[i], scene.segment_ids[i],
             *(round(float(values[i]), 3) for values in scene.norms.values())]
            for i, token in enumerate(scene.tokens)]


def build() -> dict:
    """The fixture, from the app's pipeline (its default tables, view and options). It holds:

    - ``scene``: the `Scene` the pipeline drew (`core.plane.pipeline.explore_view`), its arrays
      as lists, so the figure is rebuilt from the same numbers anywhere, without torch or PCA;
    - ``compact``: what the page receives (``embedding_spec(scene, compact=True)``, as JSON);
    - ``expanded``: the traces the page must draw, taken from the *whole* figure
      (``embedding_spec(scene)``), not from either reader: each per-token group's customdata
      as a list of [id, position, segment, norm] rows (the whole figure sends it as a typed
      array);
    - ``table``: the token table, from the scene itself: token, id, position, segment and each
      component's norm rounded to 3 decimals;
    - ``labels``: the labels the page must place, taken from the whole figure's
      ``layout.meta.labels`` (every trace's texts), which a reader of the compact one rebuilds.
    """
    from core.plane.pipeline import explore_view
    from core.tables.session import Session
    from core.view.state import View

    view = View(sentence_a=SENTENCES[0], sentence_b=SENTENCES[1])
    stored = scene_json(explore_view(view, Session.create(view.settings, view.source)).scene)
    scene = scene_of(stored)  # the figure is made from the numbers as stored, so the test can remake it
    return {
        "about": "The main plot's wire format, one real figure: see tests/wire_fixture.py (which "
                 "rewrites this file: python -m tests.wire_fixture) and core/drawing/wire.py's docstring.",
        "sentences": list(SENTENCES),
        "scene": stored,
        "compact": compact_of(scene),
        "expanded": expanded_of(scene),
        "table": table_of(scene),
        "labels": labels_of(scene),
    }


def load() -> dict:
    return json.loads(FIXTURE.read_text())


def main() -> None:
    FIXTURE.parent.mkdir(exist_ok=True)
    # keys in the order sent, never sorted: the token table's columns are `norm`'s keys in order
    FIXTURE.write_text(json.dumps(build(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
