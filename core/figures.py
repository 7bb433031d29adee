"""Projected embedding vectors -> a Plotly figure.

Takes plain data (a ``Scene``) and returns a ``go.Figure``; knows nothing of torch or
gradio, so it can be tested, and reused, without either.

The figure is rebuilt on every keystroke, so it is built for speed and size: a plain dict
handed to ``go.Figure(..., _validate=False)``, coordinates and hover numbers as float32
numpy arrays (plotly sends them as compact base64 typed arrays), one shared hover
template per trace instead of a hover string per point, and only the 2-D part of the
template, labels only where they fit (``core.labels``), and one point per segment row.
Measured on a shared 2-core machine, BERT's tables, all five groups, labels on (medians of
30; the build includes placing the labels):

    scene                 JSON      build     build + JSON
    512 tokens (WebGL)    103 KB    5.0 ms    6.3 ms
    16 tokens (SVG)       7 KB      1.0 ms    1.2 ms
"""

from __future__ import annotations

import base64
import functools
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.io.json import to_json_plotly

from core.labels import LINE_EM, legible

GROUPS = ("token", "position", "segment", "sum", "output")  # display order

# Okabe–Ito: distinguishable with every common form of colour blindness
COLOURS = {
    "token": "#0072B2",     # blue
    "position": "#E69F00",  # orange
    "segment": "#009E73",   # bluish green
    "sum": "#D55E00",       # vermillion
    "output": "#CC79A7",    # reddish purple
}

# one marker shape per kind of token, the same in every group. plotly's numeric codes
# cost a digit per point in the JSON instead of a word; the open circle keeps its name
# because plotly.js's WebGL renderer draws its code (100) as a filled circle
WORD, SPECIAL, CONTINUATION = 0, 2, "circle-open"  # circle, diamond, open circle
SYMBOL_NOTE = "◆ [CLS] / [SEP]    ○ ## word piece"
LABELLED = "{:,} of {:,} points labelled; the rest would overlap: hover to read them"

# numpy dtypes plotly.js reads as typed arrays, by numpy's code (little-endian, as stored here);
# others (int64) go as plain lists, as go.Figure would send them
TYPED_ARRAYS = frozenset({"f4", "f8", "i1", "u1", "i2", "u2", "i4", "u4"})

ADDITION_PATH = "addition path"
MOVEMENT = "before training"
SEGMENT_SHIFT = "segment shift"
NEIGHBOURS = {"token": "nearest by token vector", "output": "nearest by output vector"}
SELECTED = "selected token"
BACKGROUND = "vocabulary"

# plotly_white's look for a 2-D scatter plot only: the full template also styles
# heatmaps, maps, 3-D scenes, …, which would add kilobytes to every update and, since
# plotly walks it when serialising, most of a small figure's build time
TEMPLATE = {"layout": {key: value for key, value in
                       pio.templates["plotly_white"].layout.to_plotly_json().items()
                       if key in ("font", "hovermode", "hoverlabel", "paper_bgcolor",
                                  "plot_bgcolor", "xaxis", "yaxis")}}


@dataclass(frozen=True)
class Neighbourhood:
    """A selected token and its nearest vocabulary entries, placed in the scene's plane.

    ``points`` maps "token" and/or "output" to the neighbours' own vectors of that kind,
    projected: (k, 2) each, with ``labels`` (k,) and cosine similarities (k,).
    """

    selected: int  # the selected token's index in the scene
    points: Mapping[str, np.ndarray]
    labels: Mapping[str, tuple[str, ...]]
    cosines: Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Scene:
    """Everything one picture shows, as plain data (no torch).

    One entry per token in each tuple (length L). ``points`` and ``norms`` hold only the
    groups to draw, keyed by names from ``GROUPS``.
    """

    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    positions: tuple[int, ...]
    segment_ids: tuple[int, ...]
    special_mask: tuple[bool, ...]        # [CLS]/[SEP] markers
    continuation_mask: tuple[bool, ...]   # WordPiece '##' pieces
    points: Mapping[str, np.ndarray]      # group -> (L, 2) projected coordinates
    norms: Mapping[str, np.ndarray]       # group -> (L,) L2 norm of the full vector
    explained: tuple[float, float]        # explained-variance ratio of the two axes
    origin: np.ndarray                    # (2,) where the zero vector lands in the plane
    message: str = ""
    # after training: the same groups' points before it, in the same plane, to show movement
    previous: Mapping[str, np.ndarray] | None = None
    plane: str = ""  # whose variance the axes explain, when not the points' own ("vocabulary")
    # where each token's sum would be with its reference segment (NaN rows: no arrow); the
    # arrow from there to the sum is the shift the segment row adds
    shift_from: np.ndarray | None = None
    neighbourhood: Neighbourhood | None = None

    def __post_init__(self) -> None:
        # a mismatch here is a bug upstream; name it now rather than draw a wrong picture
        length = len(self.tokens)
        for field in ("ids", "positions", "segment_ids", "special_mask", "continuation_mask"):
            if len(getattr(self, field)) != length:
                raise ValueError(f"Scene.{field} has {len(getattr(self, field))} entries "
                                 f"but there are {length} tokens")
        for group, points in self.points.items():
            if group not in GROUPS:
                raise ValueError(f"unknown group {group!r}; groups are {', '.join(GROUPS)}")
            if np.shape(points) != (length, 2):
                raise ValueError(f"points[{group!r}] has shape {np.shape(points)}, "
                                 f"expected ({length}, 2)")
            if np.shape(self.norms.get(group)) != (length,):
                raise ValueError(f"norms[{group!r}] has shape "
                                 f"{np.shape(self.norms.get(group))}, expected ({length},)")
        if self.shift_from is not None and np.shape(self.shift_from) != (length, 2):
            raise ValueError(f"Scene.shift_from has shape {np.shape(self.shift_from)}, expected ({length}, 2)")
        if self.neighbourhood is not None and not 0 <= self.neighbourhood.selected < length:
            raise ValueError(f"the selected token {self.neighbourhood.selected} is not one of the {length} tokens")
        if self.previous is not None and {g: np.shape(p) for g, p in self.previous.items()} != {
                g: np.shape(p) for g, p in self.points.items()}:
            raise ValueError("Scene.previous must hold the same groups and shapes as points")


def embedding_figure(scene: Scene, **options) -> go.Figure:
    """The scene as a plotly figure (options as for `embedding_spec`)."""
    return go.Figure(embedding_spec(scene, **options), _validate=False)


def figure_json(spec: Mapping) -> str:
    """The JSON a plot sends to the browser, straight from a figure dict.

    Equal to ``go.Figure(spec).to_json()`` (numpy arrays become base64 typed arrays) but
    without the figure object, whose construction and deep copies cost more than the rest
    of a 512-token update put together.
    """
    figure = {"data": [_typed(trace) for trace in spec["data"]], "layout": spec["layout"]}
    if "config" in spec:
        figure["config"] = spec["config"]  # plotly.js options the page passes on, e.g. no mode bar
    return to_json_plotly(figure)


def background_trace(points: np.ndarray, labels: Sequence[str]) -> dict:
    """The vocabulary drawn faintly behind the tokens, in WebGL: it can be 400,000 points.

    Sent to the browser once per basis, not with every update (see assets/explorer.js), so it
    is a trace of its own rather than part of ``embedding_spec``.
    """
    points = np.asarray(points, dtype=np.float32)
    if points.ndim != 2 or points.shape[1:] != (2,) or len(points) != len(labels):
        raise ValueError(f"the background needs (N, 2) points and N labels, not {points.shape} and {len(labels)}")
    return {
        "type": "scattergl",
        "name": BACKGROUND,
        "legendgroup": BACKGROUND,
        "x": points[:, 0],
        "y": points[:, 1],
        "mode": "markers",
        "marker": {"size": 3, "color": "rgba(110,110,110,0.3)"},
        "hovertext": [html.escape(label, quote=False) for label in labels],
        "hoverinfo": "text",
    }


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


def embedding_spec(scene: Scene, *, labels: bool = True, arrows: bool = False, shift: bool = False,
                   presenter: bool = False, webgl_above: int = 1500, uirevision: str = "embed") -> dict:
    """The embedding layer's vectors in the PCA plane, one coloured trace per group.

    labels: write each token beside its point.
    arrows: draw each token's sum tip to tail (token, + position, + segment = sum, then
        LayerNorm to output); needs the token, position, segment and sum groups.
    webgl_above: switch to WebGL once more points than this are drawn; SVG slows down
        with thousands of points, WebGL does not.
    shift: draw the shift each segment row adds, as an arrow ending on each shifted sum.
    presenter: large fonts and thick markers, readable from the back of a lecture hall.
    uirevision: kept constant across updates so the user's zoom and hidden legend
        entries survive while they type.
    """
    groups = [group for group in GROUPS if group in scene.points]
    webgl = len(groups) * len(scene.tokens) > webgl_above
    scale = PRESENTER if presenter else NORMAL
    columns = _TokenColumns.of(scene, groups, labels=labels, webgl=webgl, scale=scale)

    data = [(_segment_trace if group == "segment" else _group_trace)(group, scene, columns, webgl=webgl, scale=scale)
            for group in groups]
    if scene.previous is not None and groups:
        data.append(_movement(scene, groups))
    if arrows and {"token", "position", "segment", "sum"} <= set(groups):
        data.append(_addition_path(scene, scale))
    if shift and scene.shift_from is not None and "sum" in groups:
        data += _segment_shift(scene, scale)
    if scene.neighbourhood is not None:
        data += _neighbourhood(scene, groups, scale)

    of = f" of the {scene.plane}" if scene.plane else ""
    explained = [f"PC{axis} · {ratio:.1%}{of}" for axis, ratio in enumerate(scene.explained, 1)]
    layout = {
        "template": TEMPLATE,
        "font": {"size": scale.font},
        "uirevision": uirevision,
        "xaxis": {"title": {"text": explained[0]}, "zeroline": False},
        # equal scales, so a distance on screen is the same distance along either axis
        "yaxis": {"title": {"text": explained[1]}, "zeroline": False,
                  "scaleanchor": "x", "scaleratio": 1},
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02,
                   "yanchor": "bottom", "font": {"size": scale.font}},
        "margin": {"l": 50, "r": 10, "t": 40, "b": 50},
        "annotations": _annotations(scene, scale, labelled=columns.labelled),
    }
    return {"data": data, "layout": layout}


@dataclass(frozen=True)
class _Scale:
    """Sizes that differ between a laptop screen and a projector at the back of a hall."""

    marker: int
    text: int
    font: int
    line: float


NORMAL = _Scale(marker=8, text=10, font=12, line=1)
PRESENTER = _Scale(marker=15, text=18, font=20, line=2.5)


@dataclass(frozen=True)
class _TokenColumns:
    """What every group's trace shows about each token, computed once for all groups."""

    order: np.ndarray            # (L,) drawing order of the tokens
    hovertext: list[str]         # escaped tokens
    labels: dict[str, list[str]]  # group -> its points' written labels ("": none), if labels are on
    labelled: tuple[int, int]    # points labelled, of the distinct points that could be
    symbol: list[int | str]      # marker shape per token
    customdata: np.ndarray       # (L, 4) float32: id, position, segment, and 0 for the norm

    @classmethod
    def of(cls, scene: Scene, groups: Sequence[str], *, labels: bool, webgl: bool, scale: _Scale) -> _TokenColumns:
        special = np.asarray(scene.special_mask, dtype=bool)
        continuation = np.asarray(scene.continuation_mask, dtype=bool) & ~special
        # plain words first: plotly's legend copies the first point's shape, and a
        # diamond there would read as "this whole group is special"
        order = np.argsort(special | continuation, kind="stable")
        tokens = [scene.tokens[i] for i in order]
        # plotly parses hover text as HTML-like markup: escape what users typed so "<b>" reads "<b>"
        escaped = [html.escape(token, quote=False) for token in tokens]
        # plotly parses SVG labels as markup too, but WebGL draws them as plain text, unescaped
        written, labelled = _labels(scene, order, tokens, groups, scale, escape=not webgl) if labels else ({}, (0, 0))
        return cls(
            order=order,
            hovertext=escaped,
            labels=written,
            labelled=labelled,
            symbol=[SPECIAL if special[i] else CONTINUATION if continuation[i] else WORD
                    for i in order],
            customdata=np.column_stack([scene.ids, scene.positions, scene.segment_ids,
                                        np.zeros(len(order))])[order].astype(np.float32),
        )


# who gets a label first where labels would collide: the two segment points (else buried
# under a hundred others), the tokens themselves, then what the layer makes of them
LABEL_PRIORITY = ("segment", "token", "output", "sum", "position")


def _labels(scene: Scene, order: np.ndarray, tokens: list[str], groups: Sequence[str], scale: _Scale,
            *, escape: bool) -> tuple[dict[str, list[str]], tuple[int, int]]:
    """Each drawn group's labels, in drawing order, blank where they would overlap another,
    and how many points are labelled of how many distinct points could be.

    A position row belongs to a position, not to the token there, so it is labelled with its
    index; a segment row with its letter; the other groups with their token. Points that
    coincide within a group (a segment's row, a repeated word) are one vector, labelled once.
    A selected token's neighbours are always labelled (under their stars), so they take their
    room first.
    """
    texts = {
        "position": [str(scene.positions[i]) for i in order],
        "segment": [_segment_name(scene.segment_ids[i]) for i in order],
    }
    ranked = [group for group in LABEL_PRIORITY if group in groups]
    points = [np.ascontiguousarray(scene.points[group], dtype=np.float64)[order] for group in ranked]
    wanted = []
    for group, xy in zip(ranked, points, strict=True):
        words = texts.get(group, tokens)
        _, firsts = np.unique(xy.view(np.complex128).ravel(), return_index=True)  # (x, y) as one number
        first = np.zeros(len(words), dtype=bool)
        first[firsts] = True
        wanted.append([word if keep else "" for word, keep in zip(words, first, strict=True)])
    near = scene.neighbourhood
    kinds = [kind for kind in near.points if kind in groups] if near is not None else []
    kept = legible(points, wanted, scale.text,
                   reserved=np.concatenate([near.points[kind] for kind in kinds]) if kinds else None,
                   reserved_texts=[label for kind in kinds for label in near.labels[kind]],
                   reserved_shift=-(scale.text * LINE_EM + scale.marker + 2))
    write = functools.partial(html.escape, quote=False) if escape else str
    labels = {group: [write(text) if keep else "" for text, keep in zip(words, mask, strict=True)]
              for group, words, mask in zip(ranked, wanted, kept, strict=True)}
    return labels, (sum(int(mask.sum()) for mask in kept), sum(sum(map(bool, words)) for words in wanted))


def _segment_name(segment: int) -> str:
    return chr(ord("A") + segment) if 0 <= segment < 26 else str(segment)


def _group_trace(group: str, scene: Scene, columns: _TokenColumns, *, webgl: bool, scale: _Scale) -> dict:
    """One group's points: colour by group, shape by kind of token, hover by token."""
    customdata = columns.customdata.copy()
    customdata[:, 3] = np.asarray(scene.norms[group])[columns.order]
    return _points_trace(
        group, np.asarray(scene.points[group])[columns.order], columns.labels.get(group), webgl=webgl, scale=scale,
        marker={"symbol": columns.symbol, "size": scale.marker, "line": {"color": COLOURS[group], "width": scale.line}},
        hovertext=columns.hovertext,
        customdata=customdata,
        hovertemplate=(
            f"<b>%{{hovertext}}</b> · {group}<br>"
            "id %{customdata[0]} · position %{customdata[1]} · segment %{customdata[2]}<br>"
            "‖vector‖ = %{customdata[3]:.3f}<extra></extra>"
        ),
    )


def _segment_trace(group: str, scene: Scene, columns: _TokenColumns, *, webgl: bool, scale: _Scale) -> dict:
    """One point per segment row, not one per token: all of a segment's tokens share its row,
    so drawing each of them would stack hundreds of markers on two spots, send them with every
    keystroke, and hover only the top one. Hovering a segment's point says how many tokens use it."""
    segments = np.asarray(scene.segment_ids)[columns.order]
    rows, first, count = np.unique(segments, return_index=True, return_counts=True)
    norms = np.asarray(scene.norms[group])[columns.order][first]
    labels = columns.labels.get(group)
    return _points_trace(
        group, np.asarray(scene.points[group])[columns.order][first],
        None if labels is None else [labels[i] for i in first], webgl=webgl, scale=scale,
        marker={"symbol": "square", "size": scale.marker + 2},
        hovertext=[_segment_name(int(row)) for row in rows],
        customdata=np.column_stack([rows, count, norms]).astype(np.float32),
        hovertemplate=(
            "<b>segment %{hovertext}</b> · row %{customdata[0]} of the segment table<br>"
            "shared by %{customdata[1]} tokens<br>‖vector‖ = %{customdata[2]:.3f}<extra></extra>"
        ),
    )


def _points_trace(group: str, points: np.ndarray, labels: list[str] | None, *, webgl: bool, scale: _Scale,
                  marker: dict, **hover) -> dict:
    """A group's trace: its colour, its points as float32, and its labels when they are on."""
    points = np.asarray(points, dtype=np.float32)
    trace = {
        "type": "scattergl" if webgl else "scatter",
        "name": group,
        "legendgroup": group,
        "x": points[:, 0],
        "y": points[:, 1],
        "mode": "markers",
        "marker": {"color": COLOURS[group], **marker},
        **hover,
    }
    if labels is not None:
        trace.update(mode="markers+text", text=labels, textposition="top center",
                     textfont={"size": scale.text, "color": COLOURS[group]})
    return trace


def _addition_path(scene: Scene, scale: _Scale) -> dict:
    """Each token's sum drawn as arrows laid tip to tail, in one trace.

    A vector v is drawn from the origin ``o`` to its point ``P(v)``; since the projection
    is affine, ``P(a + b) = P(a) + (P(b) - o)``, so adding an arrow means moving by
    ``P(b) - o``. The path token → + position → + segment therefore ends exactly on the
    sum's point, and a last arrow shows where LayerNorm takes it.
    """
    points, origin = scene.points, np.asarray(scene.origin, dtype=np.float64)
    step = points["token"] + (points["position"] - origin)
    vertices = [points["token"], step, step + (points["segment"] - origin)]
    if "output" in points:
        vertices.append(points["output"])
    # an arrow head on every vertex but the first: that one is where a path starts
    heads = np.full((len(vertices[0]), len(vertices) + 1), scale.marker + 2, dtype=np.uint8)
    heads[:, [0, -1]] = 0
    return {
        "type": "scatter",  # WebGL has no arrow heads that follow the line
        "name": ADDITION_PATH,
        "legendgroup": ADDITION_PATH,
        **_polylines(vertices),
        "mode": "lines+markers",
        "line": {"color": "#9a9a9a", "width": scale.line},
        "marker": {"symbol": "arrow", "angleref": "previous", "size": heads.ravel(),
                   "color": "#9a9a9a"},
        "hoverinfo": "skip",
    }


def _segment_shift(scene: Scene, scale: _Scale) -> list[dict]:
    """An arrow from where each shifted sum would be with its reference segment to where it is.

    Segment B adds one and the same vector, seg[1] − seg[0], to every one of its tokens;
    in a fixed plane every arrow is therefore the same arrow, which is the point.
    """
    rows = np.flatnonzero(~np.isnan(scene.shift_from).any(axis=1))
    if not len(rows):
        return []
    ends = np.asarray(scene.points["sum"], dtype=np.float32)[rows]
    heads = np.tile(np.array([0, scale.marker + 4, 0], dtype=np.uint8), len(rows))
    return [{
        "type": "scatter",
        "name": SEGMENT_SHIFT,
        "legendgroup": SEGMENT_SHIFT,
        **_polylines([scene.shift_from[rows], ends]),
        "mode": "lines+markers",
        "line": {"color": COLOURS["segment"], "width": scale.line + 1, "dash": "dot"},
        "marker": {"symbol": "arrow", "angleref": "previous", "size": heads, "color": COLOURS["segment"]},
        "hoverinfo": "skip",
    }]


def _neighbourhood(scene: Scene, groups: list[str], scale: _Scale) -> list[dict]:
    """The selected token ringed, and its nearest vocabulary entries beside it, labelled."""
    near = scene.neighbourhood
    traces = []
    for kind, points in near.points.items():
        if kind not in groups or not len(points):
            continue
        labels = [html.escape(label, quote=False) for label in near.labels[kind]]
        traces.append({
            "type": "scatter",
            "name": NEIGHBOURS[kind],
            "legendgroup": NEIGHBOURS[kind],
            "x": np.asarray(points[:, 0], dtype=np.float32),
            "y": np.asarray(points[:, 1], dtype=np.float32),
            "mode": "markers+text",
            "text": labels,
            "textposition": "bottom center",
            "textfont": {"size": scale.text, "color": COLOURS[kind]},
            "marker": {"symbol": "star", "size": scale.marker + 2, "color": "white",
                       "line": {"color": COLOURS[kind], "width": scale.line + 1}},
            "customdata": np.asarray(near.cosines[kind], dtype=np.float32),
            "hovertext": labels,
            "hovertemplate": f"<b>%{{hovertext}}</b> · {NEIGHBOURS[kind]}<br>cosine %{{customdata:.3f}}<extra></extra>",
        })
    rings = [g for g in groups if g in ("token", "output")]
    if rings:
        points = np.concatenate([scene.points[g][[near.selected]] for g in rings]).astype(np.float32)
        traces.append({
            "type": "scatter",
            "name": SELECTED,
            "legendgroup": SELECTED,
            "x": points[:, 0],
            "y": points[:, 1],
            "mode": "markers",
            "marker": {"symbol": "circle-open", "size": scale.marker * 3, "color": "#222",
                       "line": {"width": scale.line + 1}},
            "hoverinfo": "skip",
        })
    return traces


def _polylines(vertices: list[np.ndarray]) -> dict[str, np.ndarray]:
    """One line per row through vertices[0][i], vertices[1][i], …, all in one trace's x and y.

    Each vertex array is (n, 2); a NaN after each line ends it, like None in a list.
    """
    gap = np.full_like(vertices[0], np.nan)
    path = np.stack([*vertices, gap], axis=1).astype(np.float32)  # (n, vertices + 1, 2)
    return {"x": path[..., 0].ravel(), "y": path[..., 1].ravel()}


def _movement(scene: Scene, groups: list[str]) -> dict:
    """Where training moved each point: a faint line from before to now, in one trace."""
    before = np.concatenate([scene.previous[g] for g in groups])
    after = np.concatenate([scene.points[g] for g in groups])
    sizes = np.tile(np.array([5, 0, 0], dtype=np.uint8), len(before))  # a dot where it was
    return {
        "type": "scattergl" if len(before) > 1500 else "scatter",
        "name": MOVEMENT,
        "legendgroup": MOVEMENT,
        **_polylines([before, after]),
        "mode": "lines+markers",
        "line": {"color": "rgba(120,120,120,0.45)", "width": 1},
        "marker": {"color": "rgba(120,120,120,0.45)", "size": sizes},
        "hoverinfo": "skip",
    }


def loss_figure(losses: Sequence[float]) -> go.Figure:
    """Training loss per step: a falling curve says the tables are learning."""
    steps = np.arange(1, len(losses) + 1, dtype=np.int32)
    data = [{"type": "scatter", "x": steps, "y": np.asarray(losses, dtype=np.float32), "mode": "lines",
             "name": "loss", "line": {"color": COLOURS["token"], "width": 2},
             "hovertemplate": "step %{x}: loss %{y:.3f}<extra></extra>"}]
    layout = {"template": TEMPLATE, "height": 240, "margin": {"l": 50, "r": 10, "t": 30, "b": 40},
              "title": {"text": "Training loss", "font": {"size": 13}},
              "xaxis": {"title": {"text": "step"}}, "yaxis": {"title": {"text": "cross-entropy"}}}
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def _annotations(scene: Scene, scale: _Scale = NORMAL, labelled: tuple[int, int] = (0, 0)) -> list[dict]:
    """The key to the marker shapes, how many points are labelled, and the projection's message, if any."""
    notes = []
    key = [SYMBOL_NOTE] if any(scene.special_mask) or any(scene.continuation_mask) else []
    if labelled[0] < labelled[1]:
        key.append(LABELLED.format(*labelled))
    if scene.points and key:
        notes.append({"text": "<br>".join(key), "xref": "paper", "yref": "paper", "x": 1,
                      "y": 0, "xanchor": "right", "yanchor": "bottom", "showarrow": False,
                      "font": {"size": scale.font - 1, "color": "#666"}})
    if scene.message:
        notes.append({"text": html.escape(scene.message, quote=False), "xref": "paper",
                      "yref": "paper", "x": 0, "y": 1, "xanchor": "left", "yanchor": "top",
                      "showarrow": False, "align": "left", "bgcolor": "rgba(255,255,255,0.85)",
                      "font": {"size": scale.font + 1}})
    return notes
