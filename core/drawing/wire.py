"""The main plot on the wire: figure dicts as JSON with numpy arrays as typed arrays, and the
compact form a keystroke sends.

A keystroke's figure carries what every token's point shares across the groups (its name, id,
position, segment, marker shape, norms and drawing order) once, in ``layout.meta.columns``
(`token_columns`, which describes each column), instead of once per group. The compact form has
two readers that must agree: this module's `expand` and `table_rows` (for API readers and the
tests) and assets/explorer.js's ``expand`` and ``drawTable`` (before Plotly draws).
tests/test_wire_format.py checks the code still sends tests/fixtures/wire.json's compact figure
and that both readers turn it into the fixture's traces and table (``python -m
tests.wire_fixture`` rewrites it). ``layout.meta.revision`` (`ui.render.plane`) is the tab's
change count: the page never draws a figure older than the one it shows.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence

import numpy as np
from plotly.io.json import to_json_plotly

from core.drawing.labels import filled
from core.plane.scene import Scene, symbols
from core.view.options import COMPONENTS

# numpy dtypes plotly.js reads as typed arrays, by numpy's code (little-endian, as stored here);
# others (int64) go as plain lists, as go.Figure would send them
TYPED_ARRAYS = frozenset({"f4", "f8", "i1", "u1", "i2", "u2", "i4", "u4"})
MAX_NAMED = 5  # tokens a hover names at one spot at most; the rest are counted


def figure_json(spec: Mapping) -> str:
    """The JSON a plot sends to the browser, straight from a figure dict.

    Equal to ``go.Figure(spec).to_json()`` (numpy arrays become base64 typed arrays) but
    without the figure object, whose construction and deep copies cost more than the rest
    of a 512-token update put together.
    """
    layout = spec["layout"]
    if "meta" in layout:  # the compact figure's shared columns hold arrays too
        layout = {**layout, "meta": _typed(layout["meta"])}
    figure = {"data": [_typed(trace) for trace in spec["data"]], "layout": layout}
    if "config" in spec:
        figure["config"] = spec["config"]  # plotly.js options the page passes on, e.g. no mode bar
    return to_json_plotly(figure)


def trace_json(trace: Mapping) -> str:
    """One trace's JSON, with numpy arrays as typed arrays, as ``figure_json`` writes them."""
    return to_json_plotly(_typed(dict(trace)))


def _typed(value):
    """numpy arrays -> plotly.js typed-array specs, inside (nested) dicts."""
    if isinstance(value, np.ndarray) and value.dtype.str[1:] in TYPED_ARRAYS:
        return {"dtype": value.dtype.str[1:], "bdata": base64.b64encode(
            np.ascontiguousarray(value).tobytes()).decode("ascii"), **(
            {"shape": ", ".join(map(str, value.shape))} if value.ndim > 1 else {})}
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    return value


def pile_names(names: list[str], positions: Sequence[int], piles: Sequence[Sequence[int]]) -> list[str]:
    """Hover names: a point that several tokens share names each of them with its position,
    "the (1), the (5)", since plotly's hover shows one point of a pile; others just the token."""
    if not piles:
        return names
    out = list(names)
    for indices in piles:
        listed = ", ".join(f"{names[i]} ({positions[i]})" for i in indices[:MAX_NAMED])
        if len(indices) > MAX_NAMED:
            listed += f", and {len(indices) - MAX_NAMED} more"
        for i in indices:
            out[i] = listed
    return out


def token_columns(scene: Scene, order: np.ndarray | None = None) -> dict:
    """Each token's name, id, position, segment, marker shape and norms, once, in token order.

    The compact figure's traces point into these (``order``: the traces' drawing order),
    and the page's token table is drawn from them: the table costs no bytes of its own.
    One entry per token, L tokens in sentence order; a dtype is a plotly typed array
    ``{"dtype", "bdata"}`` (base64 of little-endian values), a list is JSON:

    ============  ==================  ==========================================================
    key           type                what it holds
    ============  ==================  ==========================================================
    ``tokens``    list of L str       each token, HTML-escaped (``&lt;b&gt;``): plotly reads
                                      hover text as markup; the table shows it unescaped
    ``id``        i4 (L)              its row of the token table
    ``position``  u2 (L)              its position, the row of the position table (maxlen ≤ 2,048)
    ``segment``   u1 (L)              its segment row: 0 for sentence A, 1 for B (≤ 8 segments)
    ``symbol``    list of L int|str   its marker shape (`core.plane.scene`): 0 a word, 2 a
                                      [CLS]/[SEP] marker, "circle-open" a ## word piece
    ``norm``      {group: f4 (L)}     each component's full-vector L2 norm, every group of the
                                      scene (drawn or not), in the token table's column order
    ``order``     u2 (L)              the drawing order: point j of a group's trace is token
                                      ``order[j]`` (plain words first, for the legend's shape)
    ``piles``     {group: [[int]]}    that group's points that coincide, as indices j of the
                                      drawing order; a group with none is left out
    ============  ==================  ==========================================================
    """
    length = len(scene.tokens)
    return {
        # plotly parses hover text as HTML-like markup: escape what users typed so "<b>" reads "<b>"
        "tokens": [html.escape(token, quote=False) for token in scene.tokens],
        "id": np.asarray(scene.ids, dtype=np.int32),
        "position": np.asarray(scene.positions, dtype=np.uint16),  # maxlen ≤ 2,048
        "segment": np.asarray(scene.segment_ids, dtype=np.uint8),  # ≤ 8 segments
        "symbol": symbols(scene),
        "norm": {group: np.asarray(values, dtype=np.float32) for group, values in scene.norms.items()},
        "order": np.asarray(np.arange(length) if order is None else order, dtype=np.uint16),
        "piles": {},
    }


def expand(figure: dict) -> dict:
    """A compact figure (``embedding_spec(compact=True)``, as JSON) made whole again.

    The page's script does the same in the browser (assets/explorer.js, ``expand``); this is
    its twin on the server: the public API (ui/api.py) reads the page's plot with it, and so do the tests.
    A figure without shared columns is returned unchanged.

    A trace that reads the columns is marked ``meta: {"columns": group}`` and sends only what
    is its own (x, y, labels, colours, hover template). Reading it back removes ``meta`` and
    adds, in the drawing order: ``hovertext``, the tokens, the points of a pile named together
    as "the (1), the (5)" (`pile_names`: at most ``MAX_NAMED``, then "and N more");
    ``customdata``, one ``[id, position, segment, norm]`` row per point (float32 values); and
    ``marker.symbol``. Every other trace (the segment rows, arrows, label layers, the search)
    is sent whole and read as it is; a 3-D figure sends all its traces whole and the columns
    only for the table.

    ``layout.meta.labels`` (`core.drawing.labels.wanted`) names the points that want a written
    label, for the page to place: ``order`` (the traces, in the order they get room), ``must``
    ({trace: [point index]}: written wherever that takes them), ``colours``, ``size`` (the
    type, px) and ``texts`` ({trace: [text, "" for none]}, HTML-escaped as the tokens are; the
    page writes each as text, never as markup). A compact figure leaves out the texts of the
    traces that read the columns; a reader makes them from the tokens or, for the position
    group, the positions, in the drawing order, a pile of coinciding points labelled once on
    its first point (`core.drawing.labels.group_texts`, assets/labels.js ``texts``).
    """
    meta = figure.get("layout", {}).get("meta") or {}
    columns = meta.get("columns")
    if not columns:
        return figure
    order = _untyped(columns["order"]).astype(np.int64)
    ids, positions, segments = (_untyped(columns[key])[order] for key in ("id", "position", "segment"))
    tokens, symbols = [columns["tokens"][i] for i in order], [columns["symbol"][i] for i in order]
    data = []
    for trace in figure["data"]:
        group = trace["meta"].get("columns") if isinstance(trace.get("meta"), dict) else None
        if group is None:
            data.append(trace)
            continue
        norms = _untyped(columns["norm"][group])[order]
        whole = {key: value for key, value in trace.items() if key != "meta"}
        whole["marker"] = {**trace.get("marker", {}), "symbol": symbols}
        whole["hovertext"] = pile_names(tokens, positions.astype(int).tolist(), columns["piles"].get(group, []))
        whole["customdata"] = np.column_stack([ids, positions, segments, norms]).astype(np.float32).tolist()
        data.append(whole)
    if "labels" not in meta:
        return {**figure, "data": data}
    labels = filled(meta["labels"], columns["tokens"], _untyped(columns["position"]).tolist(), order.tolist(),
                    columns["piles"])
    return {**figure, "data": data, "layout": {**figure["layout"], "meta": {**meta, "labels": labels}}}


def table_rows(figure: dict) -> list[list]:
    """The token table, as the page draws it (assets/explorer.js ``drawTable``), from a figure's
    shared columns (JSON form): one row per token in sentence order: token, id, position,
    segment, then the norm of each component, rounded to 3 decimals."""
    columns = figure["layout"]["meta"]["columns"]
    ids, positions, segments = (_untyped(columns[key]).tolist() for key in ("id", "position", "segment"))
    norms = [np.round(_untyped(values).astype(np.float64), 3).tolist() for values in columns["norm"].values()]
    return [[html.unescape(token), ids[i], positions[i], segments[i], *(n[i] for n in norms)]
            for i, token in enumerate(columns["tokens"])]


def plotted_points(figure: dict, also: Sequence[str] = (), groups: Sequence[str] = COMPONENTS
                   ) -> dict[str, list[list[float]]]:
    """Each group's points as a whole figure (`expand`) plots them, in token order ({group:
    [[x, y], …]}: a segment's point for each of its tokens), and the traces named in `also` (the
    selected token's neighbours) as drawn: what the public API answers for a view. `groups`: the
    traces of a point per token (the five, and an encoder layer's "layer K")."""
    points = {}
    for trace in figure["data"]:
        name = trace.get("name")
        if name not in (*groups, *also) or "x" not in trace:
            continue
        xyz = np.column_stack([_untyped(trace[axis]).astype(np.float64) for axis in "xyz" if axis in trace])
        if name in also:
            points[name] = xyz.tolist()
            continue
        data = _untyped(trace["customdata"]).astype(np.float64)  # [id, position, segment, norm] a point
        if name == "segment":  # one point per segment row: each token gets its row's
            segments = _untyped(figure["layout"]["meta"]["columns"]["segment"]).astype(int)
            rows = {int(row): xyz[i] for i, row in enumerate(data[:, 0])}
            points[name] = [rows[s].tolist() for s in segments]
        else:
            ordered = np.empty_like(xyz)
            ordered[data[:, 1].astype(int)] = xyz
            points[name] = ordered.tolist()
    return points


def _untyped(value) -> np.ndarray:
    """A plotly typed array ({"dtype", "bdata"}) or a list, as numpy."""
    if isinstance(value, dict) and "bdata" in value:
        found = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return found.reshape([int(n) for n in value["shape"].split(",")]) if "shape" in value else found
    return np.asarray(value)
