"""Projected embedding vectors -> a Plotly figure.

Takes plain data (a ``Scene``, core/plane/scene.py) and returns a figure dict; knows nothing of
torch or gradio, so it can be tested, and reused, without either. How it travels to the page
(JSON, the compact columns) is core/drawing/wire.py.

The figure is rebuilt on every keystroke, so it is built for speed and size: a plain dict
handed to ``go.Figure(..., _validate=False)``, coordinates and hover numbers as float32
numpy arrays (plotly sends them as compact base64 typed arrays), one shared hover
template per trace instead of a hover string per point, and only the 2-D part of the
template, and one point per segment row. The labels are not written here: the figure says
which points want one, and in what order (``layout.meta.labels``, `core.drawing.labels`), and the page
places them where its drawn plot has room (assets/labels.js).
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import plotly.graph_objects as go

from core.drawing.labels import LABEL_PRIORITY, group_texts, legible, wanted
from core.drawing.palette import LAYER_MARKER, LAYER_MARKER_3D, LIGHT, Palette
from core.drawing.wire import pile_names, token_columns
from core.plane.scene import CONTINUATION, GROUPS, LAYER, SPECIAL, WORD, Scene, segment_name, symbols
from core.view.options import ENCODER_MODEL

SYMBOL_NOTE = "◆ [CLS] / [SEP]    ○ ## word piece"
# the plot's type, and its labels': Arial, or a face with its widths (Liberation Sans on Linux,
# Helvetica on a Mac), the same on every screen of a class
FONT_FAMILY = "Arial, 'Liberation Sans', Helvetica, sans-serif"

ADDITION_PATH = "addition path"
MOVEMENT = "before training"
SEGMENT_SHIFT = "segment shift"
NEIGHBOURS = {"token": "nearest by token vector", "output": "nearest by output vector"}
# at an encoder layer K, the selected token's nearest tokens of the pair by their layer-K vectors, starred where
# their layer-K points are (`core.plane.pipeline._layer_neighbours`)
LAYER_NEAR = "nearest after layer {}"
SELECTED = "selected token"
BACKGROUND = "vocabulary"
# a class's answers (core/plane/classwords.py): one trace per group they are placed in
CLASS_TRACES = {"token": "class", "sum": "class · sum", "output": "class · output"}
# the encoder's layers (core/plane/layers.py): the tokens after layer K are the group "layer K", and each
# token's way there from the output, hidden state 0, a thin line through every layer before it
LAYER_PATH = "path: output (hidden state 0) → layer {}"
# with a token selected at layer K, a line from it to each token it attends to most there (its layer-K points),
# one trace a line (its width and opacity are its weight's), all one legend entry
ATTENTION = "attention · layer {}"
CLASS_LARGEST = 4  # a word's marker grows with its count (area ∝ count) to this many times its base size


def embedding_figure(scene: Scene, **options) -> go.Figure:
    """The scene as a plotly figure (options as for `embedding_spec`)."""
    return go.Figure(embedding_spec(scene, **options), _validate=False)


def background_trace(points: np.ndarray, labels: Sequence[str]) -> dict:
    """The vocabulary drawn faintly behind the tokens.

    Sent to the browser once per basis, not with every update (see assets/explorer.js), so it
    is a trace of its own rather than part of ``embedding_spec``. It is SVG, drawn first and so
    underneath the tokens: plotly draws every WebGL trace above every SVG one, so a WebGL
    background would cover them. SVG holds the most words a view may ask for
    (``LIMITS["background"]``, 5,000) at an easy pace.
    """
    points = np.asarray(points, dtype=np.float32)
    if points.ndim != 2 or points.shape[1:] != (2,) or len(points) != len(labels):
        raise ValueError(f"the background needs (N, 2) points and N labels, not {points.shape} and {len(labels)}")
    return {
        "type": "scatter",
        "name": BACKGROUND,
        "legendgroup": BACKGROUND,
        "x": points[:, 0],
        "y": points[:, 1],
        "mode": "markers",
        "marker": {"size": 3, "color": "rgba(110,110,110,0.3)"},
        "hovertext": [html.escape(label, quote=False) for label in labels],
        "hoverinfo": "text",
    }


MODEBAR_PX = 34  # the right margin, which holds plotly's tool bar (a column of 26 px buttons)
BOTTOM_PX = 50  # the bottom margin at least
PANELS = ("auto", "one", "split")
# the output gets a panel of its own when its points and the parts' differ in extent by more
# than this factor (BERT: the outputs spread about 8× wider than the rest, which then blur
# into one blob at the centre of a shared plane)
SPLIT_ABOVE = 3.0
# a position or segment cloud narrower than this share of its panel is drawn magnified about
# its own centre by a round factor, said on the plot; at BERT's scale the segment's two rows
# are 0.02 apart in a panel 1.5 wide
MAGNIFY_BELOW = 0.2
FACTORS = (2, 5, 10, 20, 50, 100, 200, 500, 1000)
MAGNIFIABLE = ("position", "segment")  # never token, sum or output: the addition path runs through them
NOTE_CHARS = 40  # a note's lines are at most this long: a phone's plot (≈ 370 px) holds 40 characters
PANEL_TITLES = {1: "token + position + segment = sum", 2: "after LayerNorm: output, its own scale"}
LAYERS_TITLE = "after LayerNorm: output = hidden state 0,<br>and the layers after it; their own scale"
PANEL_GAP = 0.1  # between the two panels, a share of the figure's width

# ColorBrewer Set2: soft halos that do not compete with the groups' saturated Okabe–Ito colours
CATEGORY_COLOURS = ("#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3", "#a6d854", "#ffd92f", "#e5c494", "#b3b3b3")
CATEGORY = "category: {}"


def embedding_spec(scene: Scene, *, labels: bool = True, arrows: bool = False, shift: bool = False,
                   presenter: bool = False, webgl_above: int = 1500, uirevision: str = "embed",
                   panels: str = "auto", magnify: bool = True, compact: bool = False,
                   named: Collection[str] = (), narrow: bool = False, layer: dict | None = None,
                   palette: Palette = LIGHT) -> dict:
    """The embedding layer's vectors in the PCA plane, one coloured trace per group.

    labels: ask the page to write each point's name beside it, where it fits
        (``layout.meta.labels``: `core.drawing.labels.wanted`).
    named: words (and positions) whose labels must be written (the words a tour step's text
        talks about), like the selected token's: they take their room first, the others give way.
    arrows: draw the sum tip to tail (token, + position, + segment = sum, then LayerNorm to
        output); needs the token, position, segment and sum groups. With a token selected
        (``scene.picked``) only its path is drawn.
    webgl_above: switch to WebGL once more points than this are drawn; SVG slows down
        with thousands of points, WebGL does not.
    shift: draw the shift each segment row adds, as an arrow ending on each shifted sum,
        and state its length in the full space.
    presenter: large fonts and thick markers, readable from the back of a lecture hall.
    palette: the colours of the view's theme (`core.drawing.palette`): light, or the projector's dark.
    narrow: drawn on a phone: labels in larger type.
    layer: a trace drawn over the token panel (the search's crosses, `core.plane.search`, its names in
        ``text``): with labels on, its names are written with the others, the first one always.
    uirevision: kept constant across updates so the user's zoom and hidden legend
        entries survive while they type.
    panels: "split" draws the output in a panel of its own beside the parts (same plane,
        its own scale), "one" draws everything in one plane, "auto" splits when their
        extents differ by more than ``SPLIT_ABOVE``.
    magnify: draw a position or segment cloud too small to see magnified about its own
        centre, by a round factor written on the plot.
    compact: the page's wire form (see ``expand``): what every token's point shares across
        the groups (its name, id, position, segment, marker shape) is sent once, in
        ``layout.meta.columns``, instead of once per group; the page's script, and
        ``expand`` here, put it back into each group's trace.

    A scene with three coordinates per point becomes a rotatable PC1–PC3 view (scatter3d).
    The figure has no fixed height: it fills the plot's container (the page sizes it).
    """
    if panels not in PANELS:
        raise ValueError(f"panels is {panels!r}; choose one of {', '.join(PANELS)}")
    if scene.dims == 3:
        spec = _spec_3d(scene, labels=labels, arrows=arrows, shift=shift, presenter=presenter, uirevision=uirevision,
                        palette=palette)
        if layer is not None:
            spec["data"].append(layer)
        if compact:  # its traces stay whole (a 3-D view is asked for, not typed into): the table's columns only
            spec["layout"]["meta"] = {"columns": token_columns(scene)}
        return spec
    groups = [group for group in GROUPS if group in scene.points]
    webgl = len(groups) * len(scene.tokens) > webgl_above
    scale = PRESENTER if presenter else PHONE if narrow else NORMAL
    split = _split(scene, groups, panels)
    panel = {group: 2 if split and group == "output" else 1 for group in groups}
    points, factors = (_magnified(scene, groups, panel) if magnify and not scene.exact
                       else ({g: np.asarray(scene.points[g]) for g in groups}, {}))
    columns = _TokenColumns.of(scene)
    piles = {group: _piles(np.asarray(points[group])[columns.order]) for group in groups if group != "segment"}

    data = _category_halos(scene, groups, points, panel, columns, scale) if scene.categories else []
    shared = token_columns(scene, columns.order) if compact else None
    data += [_segment_trace(group, scene, points[group], columns, webgl=webgl, scale=scale, axes=_AXES[panel[group]],
                            palette=palette)
             if group == "segment" else
             _group_trace(group, scene, points[group], columns, webgl=webgl, scale=scale, axes=_AXES[panel[group]],
                          shared=shared, piles=piles[group], palette=palette)
             for group in groups]
    if scene.previous is not None and groups:
        data += _movement(scene, groups, panel, factors)
    if scene.hidden is not None:  # with the output, in its panel: each is a LayerNorm's output
        # the attention's lines first: the layer's points are drawn over their ends
        data += _attention_traces(scene, scale, _AXES[2 if split else 1], palette)
        data += _hidden_traces(scene, columns, scale, _AXES[2 if split else 1], palette, webgl=webgl)
    if arrows and {"token", "position", "segment", "sum"} <= set(groups):
        data.append(_addition_path(scene, scale, to_output="output" in groups and not split))
    if shift and scene.shift_from is not None and "sum" in groups:
        data += _segment_shift(scene, scale, palette)
    if scene.neighbourhood is not None or _ringed_layer(scene):
        data += _neighbourhood(scene, groups, scale, panel, palette, layer_panel=2 if split else 1)
    if scene.answers is not None:
        data += _class_traces(scene.answers, scale, panel, palette)

    titles = _axis_titles(scene)
    layout = {
        "template": palette.template,
        "font": {"size": scale.font, "family": FONT_FAMILY},
        "uirevision": uirevision,
        "autosize": True,  # no fixed height: the page's CSS gives the plot its size
        # tick labels may reach past the plot's edge: by default plotly measures every one of them on
        # every redraw to hide those that do, a large share of a keystroke's drawing
        "xaxis": {"title": {"text": titles[0]}, "zeroline": scene.exact, "ticklabeloverflow": "allow"},
        # equal scales, so a distance on screen is the same distance along either axis
        "yaxis": {"title": {"text": titles[1]}, "zeroline": scene.exact, "scaleanchor": "x", "scaleratio": 1,
                  "ticklabeloverflow": "allow"},
        # shown with one group too: plotly leaves out the legend of a figure of one trace
        "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02,
                   "yanchor": "bottom", "font": {"size": scale.font}},
        # plotly's tool bar stands on the right, in a margin of its own: across the top it covered the
        # legend's last entry
        "modebar": {"orientation": "v"},
        "margin": {"l": 50, "r": MODEBAR_PX, "t": 40, "b": bottom_margin(scale)},
        "annotations": _annotations(scene, scale, shift=shift and "sum" in groups,
                                    split=split, factors=factors, groups=groups, palette=palette),
    }
    if layer is not None:  # over everything; its names are labels (the page writes them)
        data.append({key: value for key, value in layer.items() if key not in ("text", "textposition", "textfont")}
                    | {"mode": "markers"})
    meta = {} if shared is None else {"columns": shared}  # meta: plotly keeps it and draws nothing of it
    if labels:
        # the layer's stars are on its labelled points: their names are in their hover and the lists
        stars = {kind: NEIGHBOURS[kind] for kind, _, _ in _neighbours(scene, groups) if kind != LAYER}
        colours = {**palette.colours, **{trace: palette.colours[kind] for kind, trace in stars.items()},
                   **({} if layer is None else {layer["name"]: layer["marker"]["color"]}),
                   **({} if scene.hidden is None else {scene.hidden.name: palette.layer}),
                   **dict.fromkeys(CLASS_TRACES.values(), palette.class_ink)}
        meta["labels"] = wanted(scene, columns.order, groups, piles, size=scale.text, colours=colours, named=named,
                                stars=stars, layer=layer, compact=shared is not None,
                                answers=_class_labels(scene.answers), hidden=_hidden_labels(scene, columns))
    if palette is not LIGHT:  # the page's labels: their halo and count in the theme's colours (assets/labels.js)
        meta["ink"] = {"halo": palette.label_halo, "count": palette.label_count, "ring": palette.ring}
    if meta:
        layout["meta"] = meta
    if split:
        width = (1 - PANEL_GAP) / 2
        layout["xaxis"]["domain"] = [0.0, width]
        layout["xaxis2"] = {"title": {"text": titles[0]}, "zeroline": False, "domain": [1 - width, 1.0],
                            "anchor": "y2"}
        layout["yaxis2"] = {"zeroline": False, "anchor": "x2", "scaleanchor": "x2", "scaleratio": 1}
    return {"data": data, "layout": layout}


_AXES = {1: {}, 2: {"xaxis": "x2", "yaxis": "y2"}}


def _axis_titles(scene: Scene) -> list[str]:
    if scene.exact:
        return [f"dim {axis}" for axis in range(scene.dims)]
    of = f" of the {scene.plane}" if scene.plane else ""
    return [f"PC{axis} · {ratio:.1%}{of}" for axis, ratio in enumerate(scene.explained, 1)]


def _extent(points: np.ndarray) -> float:
    """The larger side of the points' bounding box (0 for none, one, or only NaN)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, np.shape(points)[-1] if np.ndim(points) else 1)
    points = points[np.isfinite(points).all(axis=1)]
    return float(np.ptp(points, axis=0).max()) if len(points) > 1 else 0.0


def _split(scene: Scene, groups: Sequence[str], panels: str) -> bool:
    """Whether the output gets a panel of its own."""
    parts = [g for g in groups if g != "output"]
    # the output and the encoder's layers after it: each a LayerNorm's output, of one scale
    hidden = [] if scene.hidden is None else [np.reshape(scene.hidden.points, (-1, scene.dims))]
    if panels == "one" or scene.exact or not ("output" in groups or hidden) or not parts:
        return False
    if panels == "split":
        return True
    measured = scene.points if scene.previous is None else scene.previous  # as _magnified: the layout before training
    inner = _extent(np.concatenate([measured[g] for g in parts]))
    outer = _extent(np.concatenate([measured[g] for g in groups if g == "output"] + hidden))
    small, large = sorted((inner, outer))
    return large > 0 and large > SPLIT_ABOVE * small


def _magnified(scene: Scene, groups: Sequence[str], panel: Mapping[str, int]
               ) -> tuple[dict[str, np.ndarray], dict[str, tuple[int, np.ndarray]]]:
    """Each group's points as drawn, and the magnified groups' (factor, centre).

    A position or segment cloud narrower than ``MAGNIFY_BELOW`` of its panel is scaled about
    the centre of its bounding box by the smallest round factor that makes it that wide, so
    its spread shows while its place in the plane stays where it is. The plot says so.

    After training, the factor and centre are those of the points before it (``scene.previous``),
    so a frozen table's points are drawn exactly where they were, whatever the trained ones did
    to the panel's extent.
    """
    points = {g: np.asarray(scene.points[g]) for g in groups}
    measured = points if scene.previous is None else {g: np.asarray(scene.previous[g]) for g in groups}
    factors = {}
    for number in set(panel.values()):
        members = [g for g in groups if panel[g] == number]
        extent = _extent(np.concatenate([measured[g] for g in members]))
        for group in members:
            own = _extent(measured[group])
            if group not in MAGNIFIABLE or own == 0 or extent == 0 or own >= MAGNIFY_BELOW * extent:
                continue
            need = MAGNIFY_BELOW * extent / own
            factor = next((f for f in FACTORS if f >= need), FACTORS[-1])
            centre = (np.nanmin(measured[group], axis=0) + np.nanmax(measured[group], axis=0)) / 2
            points[group] = centre + (points[group] - centre) * factor
            factors[group] = (factor, centre)
    return points, factors


def drawing(scene: Scene) -> tuple[bool, dict[str, int]]:
    """Whether the outputs get a panel of their own, and the factor of each group drawn magnified:
    what `embedding_spec` draws beyond the plane's coordinates (core/drawing/code.py writes it into a script)."""
    groups = [group for group in GROUPS if group in scene.points]
    if scene.dims == 3 or scene.exact or not groups:
        return False, {}
    split = _split(scene, groups, "auto")
    _, factors = _magnified(scene, groups, {group: 2 if split and group == "output" else 1 for group in groups})
    return split, {group: factor for group, (factor, _) in factors.items()}


@dataclass(frozen=True)
class _Scale:
    """Sizes that differ between a laptop screen, a projector at the back of a hall and a phone."""

    marker: int
    text: int  # a label's type, in pixels
    font: int
    line: float


def bottom_margin(scale: _Scale) -> int:
    """The plot's bottom margin: its x axis's tick labels and title (a line of type each and plotly's
    gaps, 2.6 type sizes and 12 px as drawn in Chromium), then a row under the title for the page's
    count of labels ("15 of 23 labelled", assets/labels.js, in type a pixel under a label's and at
    least 10 px). Beside the title, the count covered it on a phone, whose long title leaves no room
    on its row; plotly grows a margin to fit the axis (automargin), never for a row of the page's own."""
    return max(BOTTOM_PX, math.ceil(2.6 * scale.font) + 12 + max(10, scale.text - 1) + 6)


NORMAL = _Scale(marker=8, text=10, font=12, line=1)
PRESENTER = _Scale(marker=15, text=18, font=20, line=2.5)
PHONE = _Scale(marker=8, text=12, font=12, line=1)  # a phone's labels are read at arm's length


@dataclass(frozen=True)
class _TokenColumns:
    """What every group's trace shows about each token, computed once for all groups."""

    order: np.ndarray            # (L,) drawing order of the tokens
    hovertext: list[str]         # escaped tokens
    symbol: list[int | str]      # marker shape per token
    customdata: np.ndarray       # (L, 4) float32: id, position, segment, and 0 for the norm
    text: dict[str, list[str]]   # group -> its points' text, drawn by plotly (the 3-D view's labels)

    @classmethod
    def of(cls, scene: Scene) -> _TokenColumns:
        shapes = symbols(scene)
        # plain words first: plotly's legend copies the first point's shape, and a
        # diamond there would read as "this whole group is special"
        order = np.argsort([shape != WORD for shape in shapes], kind="stable")
        # plotly parses hover text as HTML-like markup: escape what users typed so "<b>" reads "<b>"
        escaped = [html.escape(scene.tokens[i], quote=False) for i in order]
        customdata = np.column_stack([scene.ids, scene.positions, scene.segment_ids, np.zeros(len(order))])
        return cls(order, escaped, symbol=[shapes[i] for i in order], customdata=customdata[order].astype(np.float32),
                   text={})


def _piles(points: np.ndarray) -> list[list[int]]:
    """The points that coincide exactly, as lists of their indices (piles of one left out)."""
    xy = np.ascontiguousarray(points, dtype=np.float32)
    # each point's coordinates as one number (a complex64 for 2, a void of 12 bytes for 3):
    # np.unique over rows (axis=0) is several times slower
    keys = xy.view(np.complex64).ravel() if xy.shape[1] == 2 else xy.view(f"V{xy.itemsize * 3}").ravel()
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    if len(counts) == len(xy):
        return []
    members: dict[int, list[int]] = {}
    for i in np.flatnonzero(counts[inverse] > 1).tolist():
        members.setdefault(int(inverse[i]), []).append(i)
    return list(members.values())


def _coincident(points: np.ndarray, names: list[str], positions: Sequence[int]) -> list[str]:
    """Hover names of `points` (see `_pile_names`)."""
    return pile_names(names, positions, _piles(points))


def _group_trace(group: str, scene: Scene, points: np.ndarray, columns: _TokenColumns, *, webgl: bool,
                 scale: _Scale, axes: Mapping[str, str], shared: dict | None = None, marker: dict | None = None,
                 piles: list[list[int]] | None = None, palette: Palette = LIGHT) -> dict:
    """One group's points: colour by group, shape by kind of token, hover by token.

    `piles`: its coinciding points (`_piles` of the points in drawing order, computed here if not
    given). With `shared` (the compact form) the trace keeps only what is its own — points and
    the template — and adds its piles to `shared`."""
    drawn = np.asarray(points)[columns.order]
    template = _token_hover(group, scene.exact)
    piles = _piles(drawn) if piles is None else piles
    if shared is not None:
        if piles:
            shared["piles"][group] = piles
        return _points_trace(group, drawn, webgl=webgl, axes=axes, colour=palette.colours[group],
                             marker={"size": scale.marker, "line": {"color": palette.colours[group],
                                                                    "width": scale.line}},
                             meta={"columns": group}, hovertemplate=template)
    customdata = columns.customdata.copy()
    customdata[:, 3] = np.asarray(scene.norms[group])[columns.order]
    marker = marker or {"symbol": columns.symbol, "size": scale.marker,
                        "line": {"color": palette.colours[group], "width": scale.line}}
    return _points_trace(
        group, drawn, webgl=webgl, axes=axes, text=columns.text.get(group), colour=palette.colours[group],
        marker=marker, hovertext=pile_names(columns.hovertext, customdata[:, 1].astype(int).tolist(), piles),
        customdata=customdata, hovertemplate=template,
    )


def _token_hover(group: str, exact: bool) -> str:
    """A token's hover: its name, group, id, position, segment and norm (and, with two
    dimensions, where the point is the vector itself, the vector)."""
    vector = "<br>vector (%{x:.3f}, %{y:.3f})" if exact else ""
    return (f"<b>%{{hovertext}}</b> · {group}<br>"
            "id %{customdata[0]} · position %{customdata[1]} · segment %{customdata[2]}<br>"
            f"‖vector‖ = %{{customdata[3]:.3f}}{vector}<extra></extra>")


def _segment_trace(group: str, scene: Scene, points: np.ndarray, columns: _TokenColumns, *, webgl: bool,
                   scale: _Scale, axes: Mapping[str, str], size: int | None = None, palette: Palette = LIGHT) -> dict:
    """One point per segment row, not one per token: all of a segment's tokens share its row,
    so drawing each of them would stack hundreds of markers on two spots, send them with every
    keystroke, and hover only the top one. Hovering a segment's point says how many tokens use it."""
    segments = np.asarray(scene.segment_ids)[columns.order]
    rows, first, count = np.unique(segments, return_index=True, return_counts=True)
    norms = np.asarray(scene.norms[group])[columns.order][first]
    vector = "<br>vector (%{x:.3f}, %{y:.3f})" if scene.exact else ""
    return _points_trace(
        group, np.asarray(points)[columns.order][first], webgl=webgl, axes=axes, colour=palette.colours[group],
        marker={"symbol": "square", "size": (scale.marker if size is None else size) + 2},
        hovertext=[segment_name(int(row)) for row in rows],
        customdata=np.column_stack([rows, count, norms]).astype(np.float32),
        hovertemplate=(
            "<b>segment %{hovertext}</b> · row %{customdata[0]} of the segment table<br>"
            f"shared by %{{customdata[1]}} tokens<br>‖vector‖ = %{{customdata[2]:.3f}}{vector}<extra></extra>"
        ),
    )


def _points_trace(group: str, points: np.ndarray, *, webgl: bool, marker: dict, axes: Mapping[str, str],
                  colour: str, text: list[str] | None = None, **hover) -> dict:
    """A group's trace: its colour and its points as float32. Points of three coordinates make
    the PC1–PC3 view's trace (scatter3d), whose labels plotly writes (`text`)."""
    points = np.asarray(points, dtype=np.float32)
    trace = {
        "type": "scatter3d" if points.shape[1] == 3 else "scattergl" if webgl else "scatter",
        "name": group,
        "legendgroup": group,
        **{axis: points[:, i] for i, axis in enumerate("xyz"[:points.shape[1]])},
        **axes,
        "mode": "markers",
        "marker": {"color": colour, **marker},
        **hover,
    }
    if text is not None:
        trace.update(mode="markers+text", text=text)
    return trace


def _category_halos(scene: Scene, groups: Sequence[str], points: Mapping[str, np.ndarray],
                    panel: Mapping[str, int], columns: _TokenColumns, scale: _Scale) -> list[dict]:
    """A soft disc in its category's colour behind each corpus word, one legend entry per category.

    Drawn behind the token points (or, with tokens hidden, the sums or outputs): training
    should gather each colour into its own region.
    """
    host = next((g for g in ("token", "sum", "output") if g in groups), None)
    if host is None:
        return []
    names = sorted({c for c in scene.categories if c})
    xy = np.asarray(points[host], dtype=np.float32)
    traces = []
    for number, name in enumerate(names):
        rows = np.asarray([i for i in columns.order if scene.categories[i] == name], dtype=np.int64)
        traces.append({
            "type": "scatter",
            "name": CATEGORY.format(html.escape(name, quote=False)),
            "legendgroup": "category",
            "x": xy[rows, 0],
            "y": xy[rows, 1],
            **_AXES[panel[host]],
            "mode": "markers",
            "marker": {"size": round(scale.marker * 2.4), "color": CATEGORY_COLOURS[number % len(CATEGORY_COLOURS)],
                       "opacity": 0.55},
            "hoverinfo": "skip",
        })
    return traces


def _addition_path(scene: Scene, scale: _Scale, *, to_output: bool = True) -> dict:
    """Each token's sum drawn as arrows laid tip to tail, in one trace; only the selected
    token's when one is selected (every token's paths at once are a tangle).

    A vector v is drawn from the origin ``o`` to its point ``P(v)``; since the projection
    is affine, ``P(a + b) = P(a) + (P(b) - o)``, so adding an arrow means moving by
    ``P(b) - o``. The path token → + position → + segment therefore ends exactly on the
    sum's point, and a last arrow shows where LayerNorm takes it (when the output is drawn
    in the same panel).
    """
    vertices = _addition_vertices(scene, to_output=to_output)
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


def _addition_vertices(scene: Scene, *, to_output: bool = True) -> list[np.ndarray]:
    """The corners of each drawn token's path: token, + position, + segment (= sum), then its
    output when `to_output` (see `_addition_path`); the selected token's alone when one is."""
    rows = [scene.picked] if scene.picked is not None else slice(None)
    points, origin = {g: np.asarray(p)[rows] for g, p in scene.points.items()}, np.asarray(scene.origin, np.float64)
    step = points["token"] + (points["position"] - origin)
    vertices = [points["token"], step, step + (points["segment"] - origin)]
    if to_output and "output" in points:
        vertices.append(points["output"])
    return vertices


def _shift_lines(scene: Scene) -> tuple[np.ndarray, np.ndarray] | None:
    """Where each shifted sum would be with its reference segment, and where it is (None: no
    token is shifted)."""
    rows = np.flatnonzero(~np.isnan(scene.shift_from).any(axis=1))
    if not len(rows):
        return None
    return scene.shift_from[rows], np.asarray(scene.points["sum"], dtype=np.float32)[rows]


def _segment_shift(scene: Scene, scale: _Scale, palette: Palette) -> list[dict]:
    """An arrow from where each shifted sum would be with its reference segment to where it is.

    Segment B adds one and the same vector, seg[1] − seg[0], to every one of its tokens;
    in a fixed plane every arrow is therefore the same arrow, which is the point.
    """
    lines = _shift_lines(scene)
    if lines is None:
        return []
    heads = np.tile(np.array([0, scale.marker + 4, 0], dtype=np.uint8), len(lines[0]))
    trace = {
        "type": "scatter",
        "name": SEGMENT_SHIFT,
        "legendgroup": SEGMENT_SHIFT,
        **_polylines(list(lines)),
        "mode": "lines+markers",
        "line": {"color": palette.colours["segment"], "width": scale.line + 1, "dash": "dot"},
        "marker": {"symbol": "arrow", "angleref": "previous", "size": heads, "color": palette.colours["segment"]},
        "hoverinfo": "skip",
    }
    if scene.segment_shift is not None:
        del trace["hoverinfo"]
        trace["hovertemplate"] = f"segment shift: length {scene.segment_shift:.3f} in the full space<extra></extra>"
    return [trace]


def _neighbourhood(scene: Scene, groups: list[str], scale: _Scale, panel: Mapping[str, int],
                   palette: Palette, *, layer_panel: int = 1) -> list[dict]:
    """The selected token ringed, and its nearest vocabulary entries as stars (their names are
    labels: `core.drawing.labels.wanted`; hover names them all). At layer K its layer-K point is
    ringed too, and its nearest tokens there are open stars around their layer-K points."""
    traces = []
    for kind, points, hover in _neighbours(scene, groups):
        marker = ({"symbol": "star-open", "size": scale.marker * 2 + 4, "color": palette.layer,
                   "line": {"width": scale.line + 1}} if kind == LAYER else
                  {"symbol": "star", "size": scale.marker + 2, "color": "white",
                   "line": {"color": palette.colours[kind], "width": scale.line + 1}})
        traces.append({
            "type": "scatter",
            "name": near_name(scene, kind),
            "legendgroup": near_name(scene, kind),
            "x": np.asarray(points[:, 0], dtype=np.float32),
            "y": np.asarray(points[:, 1], dtype=np.float32),
            **_AXES[layer_panel if kind == LAYER else panel[kind]],
            "mode": "markers",
            "marker": marker,
            **hover,
        })
    ringed = {**{g: panel[g] for g in groups if g in RINGED}, **({LAYER: layer_panel} if _ringed_layer(scene) else {})}
    for number in sorted(set(ringed.values())):
        points = _rings(scene, [g for g, at in ringed.items() if at == number], scene.picked)
        traces.append({
            "type": "scatter",
            "name": SELECTED,
            "legendgroup": SELECTED,
            "showlegend": number == 1 or len(traces) == 0 or traces[-1]["name"] != SELECTED,
            "x": points[:, 0],
            "y": points[:, 1],
            **_AXES[number],
            "mode": "markers",
            "marker": {"symbol": "circle-open", "size": scale.marker * 3, "color": palette.ring,
                       "line": {"width": scale.line + 1}},
            "hoverinfo": "skip",
        })
    return traces


RINGED = ("token", "output")  # the groups whose selected point is ringed: those neighbours are found for


def _ringed_layer(scene: Scene) -> bool:
    """Whether the selected token's layer-K point is ringed: at layer K, with any k (its attention is drawn)."""
    return scene.hidden is not None and scene.picked is not None


def near_name(scene: Scene, kind: str) -> str:
    """The trace of the selected token's neighbours of a kind: "nearest by token vector", "nearest after layer 3"."""
    return LAYER_NEAR.format(scene.hidden.layer) if kind == LAYER else NEIGHBOURS[kind]


def class_names(answers) -> list[str]:
    """Each drawn word as its label and its hover begin: "queen ×7", “?” ×2 (escaped: plotly reads markup)."""
    return [f"{legible(html.escape(word, quote=False))} ×{count}" for word, count in zip(answers.words, answers.counts,
                                                                                          strict=True)]


def class_hover(answers) -> list[str]:
    """Each drawn word's hover: "queen ×7", then how the table split it, when it did."""
    texts = []
    for name, pieces in zip(class_names(answers), answers.pieces, strict=True):
        split = " ".join(html.escape(piece, quote=False) for piece in pieces)
        if any(piece.startswith("##") for piece in pieces):
            name += f"<br>not in the vocabulary: split as {split}, drawn at their mean"
        elif len(pieces) > 1:
            name += f"<br>({len(pieces)} pieces: {split}, drawn at their mean)"
        texts.append(name)
    return texts


def _class_labels(answers) -> dict[str, list[str]]:
    """The class traces' label texts, by trace name (`core.drawing.labels.wanted`)."""
    if answers is None or not answers.words:
        return {}
    names = class_names(answers)
    return {CLASS_TRACES[group]: names for group in answers.points}


def _class_traces(answers, scale: _Scale, panel: Mapping[str, int], palette: Palette) -> list[dict]:
    """A class's words: one trace per group they are placed in, each marker's area growing with
    its count. The words' own names are their labels and hover; the page rings a student's own."""
    if not answers.words:
        return []
    base = scale.marker + 2
    sizes = np.minimum(base * np.sqrt(np.asarray(answers.counts, dtype=np.float64)), base * CLASS_LARGEST)
    hover = class_hover(answers)
    traces = []
    for group, points in answers.points.items():
        points = np.asarray(points, dtype=np.float32)
        name = CLASS_TRACES[group]
        marker = {"size": sizes.astype(np.float32), "color": palette.class_fill,
                  "line": {"color": palette.class_ink if group == "token" else palette.colours[group],
                           "width": scale.line + 1}}
        trace = {"type": "scatter3d" if points.shape[1] == 3 else "scatter", "name": name, "legendgroup": name,
                 **{axis: points[:, i] for i, axis in enumerate("xyz"[:points.shape[1]])},
                 "mode": "markers", "marker": marker, "customdata": list(answers.words), "hovertext": hover,
                 "hovertemplate": "%{hovertext}<extra></extra>"}
        if points.shape[1] == 3:  # plotly writes a 3-D view's labels
            marker["size"] = (sizes * 0.75).astype(np.float32)
            trace.update(mode="markers+text", text=class_names(answers), textfont={"size": scale.text,
                                                                                    "color": palette.class_ink})
        else:
            trace.update(_AXES[panel.get(group, 1)])
        traces.append(trace)
    return traces


def _neighbours(scene: Scene, groups: Sequence[str]) -> list[tuple[str, np.ndarray, dict]]:
    """Each drawn group's nearest entries: (group, their points, their hover: escaped names,
    cosines and the template); at layer K (kind `LAYER`) the selected token's nearest tokens there."""
    near, found = scene.neighbourhood, []
    if near is None:
        return found
    for kind, points in near.points.items():
        if (kind in groups or (kind == LAYER and scene.hidden is not None)) and len(points):
            said = (f"nearest to {html.escape(scene.tokens[near.selected], quote=False)} after layer "
                    f"{scene.hidden.layer}<br>cosine of their layer-{scene.hidden.layer} vectors"
                    if kind == LAYER else f"{NEIGHBOURS[kind]}<br>cosine")
            found.append((kind, np.asarray(points), {
                "customdata": np.asarray(near.cosines[kind], dtype=np.float32),
                "hovertext": [html.escape(label, quote=False) for label in near.labels[kind]],
                "hovertemplate": f"<b>%{{hovertext}}</b> · {said} %{{customdata:.3f}}<extra></extra>",
            }))
    return found


def _rings(scene: Scene, groups: Sequence[str], selected: int) -> np.ndarray:
    """The selected token's points in these groups (`LAYER`: its layer-K point), to draw a ring around each."""
    return np.concatenate([np.asarray(scene.hidden.points[-1] if g == LAYER else scene.points[g])[[selected]]
                           for g in groups]).astype(np.float32)


def _polylines(vertices: list[np.ndarray]) -> dict[str, np.ndarray]:
    """One line per row through vertices[0][i], vertices[1][i], …, all in one trace's x and y
    (and z, for three coordinates).

    Each vertex array is (n, dims); a NaN after each line ends it, like None in a list.
    """
    gap = np.full_like(np.asarray(vertices[0], dtype=np.float32), np.nan)
    path = np.stack([*vertices, gap], axis=1).astype(np.float32)  # (n, vertices + 1, dims)
    return {axis: path[..., i].ravel() for i, axis in enumerate("xyz"[: path.shape[-1]])}


def _movement(scene: Scene, groups: list[str], panel: Mapping[str, int],
              factors: Mapping[str, tuple[int, np.ndarray]]) -> list[dict]:
    """Where training moved each point: a faint line from before to now, one trace per panel.

    A magnified group's earlier points are magnified with it, about the same centre."""
    def drawn(group: str, xy: np.ndarray) -> np.ndarray:
        if group not in factors:
            return np.asarray(xy)
        factor, centre = factors[group]
        return centre + (np.asarray(xy) - centre) * factor

    traces = []
    for number in sorted(set(panel.values())):
        members = [g for g in groups if panel[g] == number]
        before = np.concatenate([drawn(g, scene.previous[g]) for g in members])
        after = np.concatenate([drawn(g, scene.points[g]) for g in members])
        sizes = np.tile(np.array([5, 0, 0], dtype=np.uint8), len(before))  # a dot where it was
        traces.append({
            "type": "scattergl" if len(before) > 1500 else "scatter",
            "name": MOVEMENT,
            "legendgroup": MOVEMENT,
            "showlegend": number == min(panel.values()),
            **_polylines([before, after]),
            **_AXES[number],
            "mode": "lines+markers",
            "line": {"color": "rgba(120,120,120,0.45)", "width": 1},
            "marker": {"color": "rgba(120,120,120,0.45)", "size": sizes},
            "hoverinfo": "skip",
        })
    return traces


def _hidden_traces(scene: Scene, columns: _TokenColumns, scale: _Scale, axes: Mapping[str, str], palette: Palette,
                   *, webgl: bool = False) -> list[dict]:
    """The tokens after encoder layer K as a group of their own ("layer K": its colour and marker), and
    each token's path from the output (hidden state 0) through every layer before K, thin and faint.
    Every vertex of a path is hovered with the layer it is after; the group's points as the others'."""
    hidden, order = scene.hidden, columns.order
    points = np.asarray(hidden.points)[:, order]  # (K + 1, L, dims), in drawing order
    three = scene.dims == 3
    kind = "scatter3d" if three else "scattergl" if webgl else "scatter"
    after = [f"after layer {k} of {hidden.layers}" for k in range(1, hidden.layer + 1)]
    # read apart, sentence B's tokens start from their own reading's hidden state 0, not the pair's output
    starts = ["hidden state 0 of sentence B read on its own" if hidden.apart is not None and index >= hidden.apart
              else "output (LayerNorm) = hidden state 0" for index in order]
    said = [f"<b>{token}</b> · {step}" if step else "" for token, start in zip(columns.hovertext, starts, strict=True)
            for step in (start, *after, "")]
    path = {"type": kind, "name": LAYER_PATH.format(hidden.layer), "legendgroup": hidden.name,
            **_polylines(list(points)), **axes, "mode": "lines" if three else "lines+markers",
            # every vertex kept (plotly drops those nearly in line): a keystroke moves the drawn path's
            # vertices where plotly would draw them (assets/move.js)
            "line": {"color": palette.layer_path, "width": scale.line * (2 if three else 1),
                     **({} if three else {"simplify": False})},
            "hovertext": said, "hovertemplate": "%{hovertext}<extra></extra>"}
    if not three:  # a small dot on each layer the path passes; none under the drawn layer's own marker
        dots = np.tile(np.array([*[max(3, scale.marker // 2)] * hidden.layer, 0, 0], dtype=np.uint8), len(order))
        path["marker"] = {"color": palette.layer_path, "size": dots}
    marker = LAYER_MARKER_3D if three else LAYER_MARKER
    symbol = ["diamond" if shape == SPECIAL else f"{marker}-open" if shape == CONTINUATION else marker
              for shape in columns.symbol]
    customdata = columns.customdata.copy()
    customdata[:, 3] = np.asarray(hidden.norms)[order]
    group = _points_trace(
        hidden.name, points[-1], webgl=webgl, axes=axes, colour=palette.layer,
        marker={"symbol": symbol, "size": (round(scale.marker * 0.75) if three else scale.marker) + 1,
                "line": {"color": palette.layer, "width": scale.line}},
        hovertext=pile_names(columns.hovertext, customdata[:, 1].astype(int).tolist(), _piles(points[-1])),
        customdata=customdata,
        hovertemplate=(f"<b>%{{hovertext}}</b> · after layer {hidden.layer} of {hidden.layers}<br>"
                       "id %{customdata[0]} · position %{customdata[1]} · segment %{customdata[2]}<br>"
                       "‖vector‖ = %{customdata[3]:.3f}<extra></extra>"),
    )
    group["legendgroup"] = hidden.name
    return [path, group]


def _attention_traces(scene: Scene, scale: _Scale, axes: Mapping[str, str], palette: Palette) -> list[dict]:
    """A line from the selected token's layer-K point to each token it attends to most in layer K (the
    mean of the layer's heads, `core.plane.scene.Attention`), each as wide and as opaque as its weight,
    with a dot at its middle where its hover says who attends to whom and how much; [CLS], [SEP] and
    the token itself (a line of no length) among them. None without a selected token or a layer."""
    attention = None if scene.hidden is None else scene.hidden.attention
    if attention is None:
        return []
    points = np.asarray(scene.hidden.points[-1], dtype=np.float32)  # (L, dims): the layer-K group's points
    name, three = ATTENTION.format(scene.hidden.layer), scene.dims == 3
    query = html.escape(scene.tokens[attention.query], quote=False)
    traces = []
    for number, (key, weight) in enumerate(zip(attention.keys, attention.weights, strict=True)):
        start, end = points[attention.query], points[key]
        whom = "itself" if key == attention.query else html.escape(scene.tokens[key], quote=False)
        said = (f"{query} attends to {whom}: {weight:.2f} (layer {scene.hidden.layer}, "
                f"mean of {attention.heads} heads)")
        trace = {"type": "scatter3d" if three else "scatter", "name": name, "legendgroup": name,
                 "showlegend": number == 0,
                 **{axis: np.stack([start[i], (start[i] + end[i]) / 2, end[i]]) for i, axis in
                    enumerate("xyz"[:scene.dims])}, **axes,
                 "mode": "lines" if three else "lines+markers", "opacity": round(0.3 + 0.7 * weight, 3),
                 "line": {"color": palette.layer, "width": round(scale.line * (1 + 6 * weight) * (2 if three else 1),
                                                                 2)},
                 "hovertext": [said] * 3, "hovertemplate": "%{hovertext}<extra></extra>"}
        if not three:
            trace["marker"] = {"color": palette.layer, "size": np.array([0, scale.marker // 2 + 1, 0], np.uint8)}
        traces.append(trace)
    return traces


def _hidden_labels(scene: Scene, columns: _TokenColumns) -> dict[str, list[str]]:
    """The layer group's label texts, by trace name, in drawing order (`core.drawing.labels.wanted`)."""
    if scene.hidden is None:
        return {}
    names = [scene.tokens[i] for i in columns.order]
    return {scene.hidden.name: group_texts([html.escape(name, quote=False) for name in names],
                                           _piles(np.asarray(scene.hidden.points[-1])[columns.order]))}


def class_notes(scene: Scene) -> list[str]:
    """What the plot says of a class's words it does not draw: those the table cannot place, and
    those past the most frequent ones the round draws (escaped, wrapped for a phone's plot)."""
    answers = scene.answers
    if answers is None:
        return []
    notes = []
    if answers.unplaced:
        listed = ", ".join(f"{word} ×{count}" for word, count in answers.unplaced[:MAX_UNPLACED])
        more = len(answers.unplaced) - MAX_UNPLACED
        listed += f" and {more} more" if more > 0 else ""
        notes.append(_wrapped(html.escape(f"class words not in this vocabulary, not drawn: {listed}", quote=False)))
    if answers.undrawn:
        notes.append(_wrapped(f"class: {answers.undrawn} less frequent words counted, not drawn"))
    return notes


MAX_UNPLACED = 5  # class words the plot names that the table cannot place; the rest are counted


def _wrapped(text: str, width: int = NOTE_CHARS) -> str:
    """Plain text broken into lines of at most ``width`` characters, joined by <br>."""
    return "<br>".join(textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False)) or text


def _annotations(scene: Scene, scale: _Scale = NORMAL, *, shift: bool = False,
                 split: bool = False, factors: Mapping[str, tuple[int, np.ndarray]] | None = None,
                 groups: Sequence[str] = (), palette: Palette = LIGHT) -> list[dict]:
    """The key to the marker shapes, what is drawn at which scale,
    and the projection's message, if any. Lines are short enough for a phone's plot."""
    notes = []
    key = [SYMBOL_NOTE] if any(scene.special_mask) or any(scene.continuation_mask) else []
    if scene.exact and scene.points:
        key.append(_wrapped("d_model = 2: these are the vectors' exact coordinates, no projection"))
    if shift and scene.segment_shift is not None:
        key.append(_wrapped(f"segment shift |seg[1] − seg[0]| = {scene.segment_shift:.3f} in the full space"))
    key += class_notes(scene)
    if scene.hidden is not None:
        # short on a phone's plot; what the model is, whole, is the line under the plot (captions.layers_line)
        key.append(_wrapped(f"{scene.hidden.name}: each token after layer {scene.hidden.layer} of "
                            f"{ENCODER_MODEL.split(':')[0]}, a distilled BERT"))
    if scene.points and key:
        notes.append({"text": "<br>".join(key), "xref": "paper", "yref": "paper", "x": 1,
                      "y": 0, "xanchor": "right", "yanchor": "bottom", "showarrow": False, "align": "right",
                      "bgcolor": palette.note_fill, "font": {"size": scale.font - 1, "color": palette.note_ink}})
    factors = factors or {}
    magnified = [f"{group} ×{factors[group][0]}" for group in MAGNIFIABLE if group in factors]
    for number, domain in ((1, (0.0, (1 - PANEL_GAP) / 2)), (2, ((1 + PANEL_GAP) / 2, 1.0))) if split else (
            (1, (0.0, 1.0)),):
        lines = [PANEL_TITLES[number] if number == 1 or scene.hidden is None else LAYERS_TITLE] if split else []
        if number == 1 and magnified:
            lines.append(_wrapped(f"{', '.join(magnified)}: magnified about their centres"))
        if lines:
            notes.append({"text": "<br>".join(lines), "xref": "paper", "yref": "paper", "x": domain[0], "y": 1,
                          "xanchor": "left", "yanchor": "top", "showarrow": False, "align": "left",
                          "bgcolor": palette.note_fill, "font": {"size": scale.font - 1, "color": palette.title_ink}})
    if scene.message:
        notes.append({"text": _wrapped(html.escape(scene.message, quote=False), 60), "xref": "paper",
                      "yref": "paper", "x": 0, "y": 1 if not notes or notes[-1]["y"] != 1 else 0.86,
                      "xanchor": "left", "yanchor": "top",
                      "showarrow": False, "align": "left", "bgcolor": palette.message_fill,
                      "font": {"size": scale.font + 1}})
    return notes


# ---------------------------------------------------------------- the PC1–PC3 view

SYMBOLS_3D = {WORD: "circle", SPECIAL: "diamond", CONTINUATION: "circle-open"}
LABELS_3D = 64  # tokens up to which the 3-D view writes labels: they cannot be kept apart while it turns


def _spec_3d(scene: Scene, *, labels: bool, arrows: bool, shift: bool, presenter: bool, uirevision: str,
             palette: Palette = LIGHT) -> dict:
    """The scene's three principal components in a rotatable scene: the same traces as the
    plane's (the builders above take three coordinates), with cones for arrow heads."""
    groups = [group for group in GROUPS if group in scene.points]
    scale = PRESENTER if presenter else NORMAL
    columns = _TokenColumns.of(scene)
    size = round(scale.marker * 0.75)
    if labels and len(scene.tokens) <= LABELS_3D:  # one group named: labels cannot be kept apart while it turns
        named = next((g for g in LABEL_PRIORITY if g in groups and g != "segment"), None)
        columns = replace(columns, text={named: list(map(legible, columns.hovertext))} if named else {})
    symbols_3d = [SYMBOLS_3D[shape] for shape in columns.symbol]
    data = []
    for group in groups:
        if group == "segment":
            trace = _segment_trace(group, scene, scene.points[group], columns, webgl=False, scale=scale, axes={},
                                   size=size, palette=palette)
            if labels:
                trace.update(mode="markers+text", text=trace["hovertext"])
        else:
            trace = _group_trace(group, scene, scene.points[group], columns, webgl=False, scale=scale, axes={},
                                 marker={"symbol": symbols_3d, "size": size}, palette=palette)
        trace["textfont"] = {"size": scale.text, "color": palette.colours[group]}
        data.append(trace)
    extent = _extent(np.concatenate([scene.points[g] for g in groups])) if groups else 0.0
    if scene.hidden is not None:
        data += _attention_traces(scene, scale, {}, palette)
        data += _hidden_traces(scene, columns, scale, {}, palette)
    if scene.previous is not None and groups:
        before = np.concatenate([scene.previous[g] for g in groups])
        after = np.concatenate([scene.points[g] for g in groups])
        data.append({"type": "scatter3d", "name": MOVEMENT, "legendgroup": MOVEMENT, **_polylines([before, after]),
                     "mode": "lines", "line": {"color": "rgba(120,120,120,0.45)", "width": 2}, "hoverinfo": "skip"})
    if arrows and {"token", "position", "segment", "sum"} <= set(groups):
        vertices = _addition_vertices(scene)
        data.append({"type": "scatter3d", "name": ADDITION_PATH, "legendgroup": ADDITION_PATH,
                     **_polylines(vertices), "mode": "lines", "line": {"color": "#9a9a9a", "width": scale.line * 3},
                     "hoverinfo": "skip"})
        data.append(_cones(ADDITION_PATH, vertices[:-1], vertices[1:], "#9a9a9a", extent))
    lines = _shift_lines(scene) if shift and scene.shift_from is not None and "sum" in groups else None
    if lines is not None:
        data.append({"type": "scatter3d", "name": SEGMENT_SHIFT, "legendgroup": SEGMENT_SHIFT,
                     **_polylines(list(lines)), "mode": "lines",
                     "line": {"color": palette.colours["segment"], "width": scale.line * 3, "dash": "dot"},
                     "hoverinfo": "skip"})
        data.append(_cones(SEGMENT_SHIFT, [lines[0]], [lines[1]], palette.colours["segment"], extent))
    for kind, points, hover in _neighbours(scene, groups):
        colour = palette.layer if kind == LAYER else palette.colours[kind]
        data.append(_trace_3d(near_name(scene, kind), points, marker={"symbol": "diamond-open", "size": size + 2,
                                                                       "color": colour},
                              mode="markers+text", text=list(map(legible, hover["hovertext"])),
                              textfont={"size": scale.text, "color": colour}, **hover))
    if scene.answers is not None:
        data += _class_traces(scene.answers, scale, {}, palette)
    rings = [g for g in groups if g in RINGED] + ([LAYER] if _ringed_layer(scene) else [])
    if scene.picked is not None and rings:
        data.append(_trace_3d(SELECTED, _rings(scene, rings, scene.picked),
                              marker={"symbol": "circle-open", "size": size * 3, "color": palette.ring},
                              hoverinfo="skip"))
    titles = _axis_titles(scene)
    axes = {name: {"title": {"text": title}} for name, title in zip(("xaxis", "yaxis", "zaxis"), titles, strict=True)}
    return {"data": data, "layout": {
        "template": palette.template_3d,
        "font": {"size": scale.font, "family": FONT_FAMILY},
        "uirevision": uirevision,
        "autosize": True,
        # equal scales on all three axes: distances are honest whichever way the scene is turned
        "scene": {**axes, "aspectmode": "data", "uirevision": uirevision},
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom",
                   "font": {"size": scale.font}},
        "margin": {"l": 0, "r": 0, "t": 40, "b": 0},
        "annotations": _annotations(scene, scale, shift=shift and "sum" in groups, palette=palette),
    }}


def _trace_3d(name: str, xyz: np.ndarray, *, marker: dict, **rest) -> dict:
    """A 3-D trace of markers that is not one of the five groups (neighbours, the selection ring)."""
    xyz = np.asarray(xyz, dtype=np.float32)
    return {"type": "scatter3d", "name": name, "legendgroup": name, "x": xyz[:, 0], "y": xyz[:, 1], "z": xyz[:, 2],
            "mode": "markers", **rest, "marker": marker}


def _cones(name: str, starts: list[np.ndarray], ends: list[np.ndarray], colour: str, extent: float) -> dict:
    """Arrow heads for 3-D arrows: a cone of fixed size at each end, pointing along its arrow."""
    tips = np.concatenate([np.asarray(e, dtype=np.float64) for e in ends])
    direction = tips - np.concatenate([np.asarray(s, dtype=np.float64) for s in starts])
    length = np.linalg.norm(direction, axis=1, keepdims=True)
    unit = np.divide(direction, length, out=np.zeros_like(direction), where=length > 0)
    uvw = (unit * max(extent, 1e-9) * 0.04).astype(np.float32)  # each head 4% of the scene across
    tips = tips.astype(np.float32)
    return {"type": "cone", "name": name, "legendgroup": name, "showlegend": False,
            "x": tips[:, 0], "y": tips[:, 1], "z": tips[:, 2], "u": uvw[:, 0], "v": uvw[:, 1], "w": uvw[:, 2],
            "anchor": "tip", "sizemode": "absolute", "sizeref": 1, "showscale": False,
            "colorscale": [[0, colour], [1, colour]], "hoverinfo": "skip"}
