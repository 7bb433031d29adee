"""The smaller figures beside the main plane: variance, similarity, positions, LayerNorm, loss, context.

Like ``core.drawing.figures``, each function takes plain numbers (no torch, no gradio) and returns
a plain plotly figure dict, ``{"data": [...], "layout": {...}}``, with numbers as float32
or int32 numpy arrays so ``figure_json`` sends them as compact typed arrays and no plotly
validation runs on every keystroke. Plotly parses markup in text, hover text and tick
labels, so every token a user typed is HTML-escaped before it is shown.

The variance bar, redrawn on every keystroke, is plain HTML instead (``variance_bars``).

Each figure function takes ``presenter=True`` for a lecture hall: larger fonts, thicker lines and
markers, taller figures, so the back row can read them off a projector; and the view's ``palette``
(core/drawing/palette.py), dark in the projector theme.
"""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from plotly.colors import diverging

from core.drawing.palette import LIGHT, Palette
from core.model.measures import LayerNormStats

VARIANCE_BARS = 10  # components shown at most: past ten the bars are too thin to read
# token labels per axis: all of them up to TICK_LABELS tokens; past that, every k-th, about
# THINNED_LABELS in all (64 labels already crowd a 400 px axis)
TICK_LABELS, THINNED_LABELS = 64, 32
# a phone's chart: about this many pixels across its axis, and a token label at most every NARROW_TICK
# of them (a label turned -60° in 12 px type needs about 14 px beside the next)
NARROW_WIDTH, NARROW_TICK = 280, 16
HOVER_TEXT_MAX = 128  # tokens up to which each heatmap cell gets its own "a · b" hover text (L² strings)

FAINT = "rgba(120,120,120,0.45)"
NOTE_LINE = 1.3  # a line of plotly's text, in font sizes (its LINE_SPACING)
BETA = "#56B4E9"  # Okabe–Ito sky blue: not a group's colour in the light theme, and beside γ in the ink's
# ColorBrewer's RdBu turned round: −1 dark blue, 0 near-white, +1 dark red. Spelled out,
# because the name "RdBu" in a figure means plotly.js's own scale, which runs the other way
# (blue low, red high) and has a grey middle, so 0 would not read as "unrelated"
SIMILARITY_SCALE = [[i / 10, colour] for i, colour in enumerate(reversed(diverging.RdBu))]


@dataclass(frozen=True)
class _Style:
    """Sizes for a laptop screen or a projector."""

    font: int  # base font size, px
    marker: int  # marker diameter, px
    line: float  # line width, px
    scale: float  # figure heights are multiplied by this


_STYLES = {False: _Style(font=12, marker=7, line=1.5, scale=1.0), True: _Style(font=20, marker=12, line=3.0, scale=1.5)}


def variance_bars(ratios: Sequence[float], shown: int = 2, title: str = "Explained variance") -> str:
    """How much of the spread each principal component holds, the plotted ones highlighted,
    as a small HTML bar chart.

    The first ``shown`` bars (the plane's axes) are drawn strong, the rest grey, so the
    share of the picture the 2-D plane leaves out is visible at a glance. At most the
    first ``VARIANCE_BARS`` ratios are drawn; before any basis is fitted the chart says so.

    HTML rather than a Plotly figure because it changes on every keystroke: a second Plotly
    redraw is a cost the page would pay on every key (``bench/browser_roundtrip.py``
    measures it, with the bar left out), and ten bars need no axes, zoom or hover. Its look
    is in assets/style.css; presenter mode enlarges it with the page's type.
    """
    values = np.asarray(ratios, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"ratios must be a flat list of explained-variance ratios, got shape {values.shape}")
    if not np.isfinite(values).all() or (values < -1e-6).any() or (values > 1 + 1e-6).any():
        raise ValueError("explained-variance ratios must be finite numbers from 0 to 1")
    if isinstance(shown, bool) or not isinstance(shown, int | np.integer) or shown < 0:
        raise ValueError(f"shown is {shown!r}; it must be a whole number of components, 0 or more")
    values = np.clip(values[:VARIANCE_BARS], 0.0, 1.0)  # rounding can leave 1.0000001
    heading = f'<p class="variance-title">{html.escape(title, quote=False)}</p>'
    if not len(values):
        return f'<div class="variance-bars">{heading}<p class="variance-empty">no basis yet</p></div>'
    top = max(float(values.max()), 0.05)
    columns = []
    for i, value in enumerate(values):
        label = f"{value:.0%}" if value >= 0.095 else f"{value:.1%}"
        kind = "drawn" if i < shown else "left-out"
        columns.append(
            f'<div class="variance-column {kind}" title="PC{i + 1}: {value:.1%} of the variance">'
            f'<span class="variance-value">{label}</span>'
            f'<span class="variance-bar" style="height: {100 * value / top:.1f}%"></span>'
            f'<span class="variance-name">PC{i + 1}</span></div>'
        )
    described = ", ".join(f"PC{i + 1} {value:.1%}" for i, value in enumerate(values))
    return (f'<div class="variance-bars" role="img" aria-label="{html.escape(title)}: {described}">{heading}'
            f'<div class="variance-columns">{"".join(columns)}</div>'
            f'<p class="variance-key"><span class="drawn">■</span> the plane\'s {min(shown, len(values))} axes '
            f'<span class="left-out">■</span> what it leaves out</p></div>')


SIMILARITY_MIN_PX, SIMILARITY_MAX_PX = 480, 900


def similarity_figure(tokens: Sequence[str], matrix: np.ndarray, *, presenter: bool = False,
                      palette: Palette = LIGHT, title: str = "Cosine similarity") -> dict:
    """An (L, L) cosine matrix as a heatmap, tokens along both axes, first token at the top.

    Colours: ColorBrewer's RdBu reversed (``SIMILARITY_SCALE``), so +1 is red, 0 white,
    −1 blue; zmin −1 and zmax 1
    are fixed so the same colour means the same cosine on every update. The axes are token
    indices with the tokens as tick labels, not categories: a repeated token ("the" twice)
    would otherwise merge into one row. Each cell's hover names both tokens while there
    are at most ``HOVER_TEXT_MAX`` of them; beyond that the L² strings would outweigh the
    rest of the update, and the hover gives the two indices instead.
    """
    style = _STYLES[bool(presenter)]
    z = np.asarray(matrix)
    length = len(tokens)
    if z.shape != (length, length):
        raise ValueError(f"the similarity matrix has shape {z.shape}; with {length} tokens it must be "
                         f"({length}, {length}), one row and one column per token")
    z = z.astype(np.float32)
    if not np.isfinite(z).all():
        raise ValueError("the similarity matrix contains NaN or infinite values; cosines must be finite")
    # a cell per pair big enough to read its colour from the back of a room: the chart grows
    # with the sentence, from 480 px up to 900
    height = min(SIMILARITY_MAX_PX, max(SIMILARITY_MIN_PX, 160 + 24 * length))
    layout = _layout(style, palette, height, title, margin={"l": 80, "r": 10, "t": 40, "b": 80})
    if not length:
        layout.update(xaxis={"visible": False}, yaxis={"visible": False},
                      annotations=[_note("no tokens yet", style)])
        return {"data": [], "layout": layout}

    escaped = [_escape(token) for token in tokens]
    index = np.arange(length, dtype=np.int32)
    heatmap = {
        "type": "heatmap",
        "x": index,
        "y": index,
        "z": z,
        "zmin": -1.0,
        "zmax": 1.0,
        "colorscale": SIMILARITY_SCALE,  # red for similar, blue for opposite
        "colorbar": {"title": {"text": "cos"}, "thickness": 10 if not presenter else 18},
    }
    if length <= HOVER_TEXT_MAX:
        heatmap["text"] = [[f"{row} · {column}" for column in escaped] for row in escaped]
        heatmap["hovertemplate"] = "%{text}: cos %{z:.2f}<extra></extra>"
    else:
        heatmap["hovertemplate"] = "token %{y} · token %{x}: cos %{z:.2f}<extra></extra>"
    ticks = _token_ticks(escaped)
    layout.update(
        xaxis={**ticks, "tickangle": -60, "showgrid": False, "constrain": "domain"},
        # a square cell per pair, and the first token at the top, as the sentence reads
        yaxis={**ticks, "autorange": "reversed", "showgrid": False, "scaleanchor": "x", "scaleratio": 1,
               "constrain": "domain"},
    )
    return {"data": [heatmap], "layout": layout}


def positions_figure(paths: Mapping[str, np.ndarray], explained: Mapping[str, Sequence[float]] | None = None, *,
                     presenter: bool = False, indices: Mapping[str, Sequence[int]] | None = None,
                     notes: Mapping[str, str] | None = None, palette: Palette = LIGHT,
                     narrow: bool = False) -> dict:
    """Position vectors 0…N−1 of one or more tables, each in its own plane, joined in order.

    One subplot per entry of ``paths`` (e.g. {"learned": (N, 2), "sinusoidal": (N, 2)}),
    side by side, each with equal scales on its own axes. The path and a light-to-dark
    colour show the order: sinusoidal positions trace a smooth curve, random ones jump
    about, learned ones sit in between. ``explained`` gives each plane's explained-variance
    ratios, quoted in its title.

    indices: the position each row of a path stands for, when some were left out (an
    outlier such as BERT's position 0); default 0…N−1. notes: a sentence per panel written
    under its title, e.g. what was left out and why: the plot says so, not only the page.
    narrow: drawn for a phone's screen, each title on two lines (on one, the two ran into each other).
    """
    style = _STYLES[bool(presenter)]
    explained = explained or {}
    indices, notes = indices or {}, notes or {}
    checked = {name: _points(points, f"paths[{name!r}]") for name, points in paths.items()}
    layout = _layout(style, palette, 320, None, margin={"l": 40, "r": 10, "t": 40, "b": 30}, showlegend=False)
    if not checked:
        layout.update(xaxis={"visible": False}, yaxis={"visible": False},
                      annotations=[_note("no positions yet", style)])
        return {"data": [], "layout": layout}

    gap = 0.08
    width = (1 - gap * (len(checked) - 1)) / len(checked)
    data, annotations, lines = [], [], 0  # lines: the longest note's
    for number, (name, points) in enumerate(checked.items(), 1):
        suffix = "" if number == 1 else str(number)
        left = (number - 1) * (width + gap)
        domain = [left, min(left + width, 1.0)]
        count = len(points)
        order = np.asarray(indices.get(name, range(count)), dtype=np.int32)
        if order.shape != (count,):
            raise ValueError(f"indices[{name!r}] has {order.size} entries for {count} points; give one per point")
        data.append({
            "type": "scatter",
            "name": _escape(name),
            "x": points[:, 0],
            "y": points[:, 1],
            "xaxis": f"x{suffix}",
            "yaxis": f"y{suffix}",
            "mode": "lines+markers",
            "line": {"color": FAINT, "width": style.line},
            "marker": {"color": order, "colorscale": [list(stop) for stop in palette.position_scale], "cmin": 0,
                       "cmax": max(int(order.max()) if count else 0, 1),
                       "size": style.marker},
            "customdata": order,
            "hovertemplate": f"position %{{customdata}}<extra>{_escape(name)}</extra>",
        })
        ends = [0, count - 1] if count > 1 else [0] if count else []
        data.append({
            "type": "scatter",
            "name": f"{_escape(name)} ends",
            "x": points[ends, 0],
            "y": points[ends, 1],
            "xaxis": f"x{suffix}",
            "yaxis": f"y{suffix}",
            "mode": "text",
            "text": [str(order[end]) for end in ends],
            "textposition": "top center",
            "textfont": {"size": style.font, "color": palette.position_scale[-1][1]},
            "hoverinfo": "skip",
        })
        layout[f"xaxis{suffix}"] = {"domain": domain, "anchor": f"y{suffix}", "zeroline": False,
                                    "constrain": "domain"}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "scaleanchor": f"x{suffix}", "scaleratio": 1,
                                    "zeroline": False, "constrain": "domain"}
        annotations.append({"text": _plane_title(name, explained.get(name), "<br>" if narrow else " · "),
                            "xref": "paper", "yref": "paper",
                            "x": (domain[0] + domain[1]) / 2, "y": 1.0, "xanchor": "center", "yanchor": "bottom",
                            "showarrow": False, "font": {"size": style.font + 1}})
        if notes.get(name):
            # under the panel's tick labels, in a margin made for it: over the plot it covered the path's points
            text = _wrap(_escape(notes[name]), 48)
            lines = max(lines, text.count("<br>") + 1)
            annotations.append({"text": text, "xref": "paper", "yref": "paper",
                                "x": domain[0], "y": 0.0, "xanchor": "left", "yanchor": "top", "align": "left",
                                "yshift": -_ticks_height(style), "showarrow": False,
                                "font": {"size": style.font - 1, "color": palette.chart_ink}})
    layout["annotations"] = annotations
    if narrow:  # a second line for the titles, the plot keeping its height
        title_line = math.ceil(NOTE_LINE * (style.font + 1))
        layout["height"] += title_line
        layout["margin"] = {**layout["margin"], "t": layout["margin"]["t"] + title_line}
    if lines:  # the plot keeps its height; the figure grows by the note's
        below = _ticks_height(style) + math.ceil(lines * NOTE_LINE * (style.font - 1)) + 8
        layout["height"] += below - layout["margin"]["b"]
        layout["margin"] = {**layout["margin"], "b": below}
    return {"data": data, "layout": layout}


def _ticks_height(style: _Style) -> int:
    """The pixels under a panel its x tick labels take: plotly's tick length and gap, and a line of type."""
    return math.ceil(NOTE_LINE * style.font) + 8


def layernorm_figure(stats: LayerNormStats, tokens: Sequence[str], *, presenter: bool = False,
                     narrow: bool = False, palette: Palette = LIGHT) -> dict:
    """What LayerNorm did: each token's std before and after (left), and its γ and β (right).

    Before, the stds differ from token to token; after, they are all about the same,
    set by γ (exactly 1 when γ = 1 and β = 0, the dotted line). The right panel shows the
    learned scale and shift that then move every output away from mean 0 and std 1.
    `narrow`: a phone's screen, about 300 px across: γ and β go under the bars, each panel the
    chart's whole width, with a token label every NARROW_TICK px at most.
    """
    style = _STYLES[bool(presenter)]
    if not isinstance(stats, LayerNormStats):
        raise ValueError(f"stats must be a LayerNormStats (from core.model.measures.layernorm_stats), "
                         f"not {type(stats).__name__}")
    length = len(stats.std_before)
    if len(tokens) != length:
        raise ValueError(f"there are {len(tokens)} tokens but the statistics cover {length}; "
                         "give the tokens the statistics were computed from")
    escaped = [_escape(token) for token in tokens]
    index = np.arange(length, dtype=np.int32)
    dims = np.arange(len(stats.gamma), dtype=np.int32)
    line_mode = "lines+markers" if len(dims) <= 64 else "lines"
    data = [
        {"type": "bar", "name": "std before", "x": index, "y": np.asarray(stats.std_before, dtype=np.float32),
         "marker": {"color": palette.colours["sum"]}, "hovertext": escaped,
         "hovertemplate": "%{hovertext}: std %{y:.3f}<extra>before</extra>"},
        {"type": "bar", "name": "std after", "x": index, "y": np.asarray(stats.std_after, dtype=np.float32),
         "marker": {"color": palette.colours["output"]}, "hovertext": escaped,
         "hovertemplate": "%{hovertext}: std %{y:.3f}<extra>after</extra>"},
        {"type": "scatter", "name": "γ (scale)", "x": dims, "y": np.asarray(stats.gamma, dtype=np.float32),
         "xaxis": "x2", "yaxis": "y2", "mode": line_mode, "line": {"color": palette.strong, "width": style.line},
         "marker": {"size": style.marker - 2}, "hovertemplate": "dimension %{x}: γ %{y:.3f}<extra></extra>"},
        {"type": "scatter", "name": "β (shift)", "x": dims, "y": np.asarray(stats.beta, dtype=np.float32),
         "xaxis": "x2", "yaxis": "y2", "mode": line_mode, "line": {"color": BETA, "width": style.line},
         "marker": {"size": style.marker - 2}, "hovertemplate": "dimension %{x}: β %{y:.3f}<extra></extra>"},
    ]
    if narrow:  # stacked: the bars on top, γ and β under them, a token label every NARROW_TICK px
        # (and plotly's tool bar down the right margin, off the legend)
        layout = _layout(style, palette, 520, None, margin={"l": 50, "r": 34, "t": 60, "b": 50},
                         modebar={"orientation": "v"})
        ticks = _token_ticks(escaped, most=NARROW_WIDTH // NARROW_TICK)
        panels = {"xaxis": [0.0, 1.0], "yaxis": [0.5, 1.0], "xaxis2": [0.0, 1.0], "yaxis2": [0.0, 0.2]}
    else:
        layout = _layout(style, palette, 280, None, margin={"l": 50, "r": 10, "t": 60, "b": 70})
        ticks = _token_ticks(escaped)
        panels = {"xaxis": [0.0, 0.55], "yaxis": [0.0, 1.0], "xaxis2": [0.65, 1.0], "yaxis2": [0.0, 1.0]}
    layout.update(
        barmode="group",
        xaxis={"domain": panels["xaxis"], "anchor": "y", "title": {"text": "token"}, **ticks, "tickangle": -60},
        yaxis={"domain": panels["yaxis"], "anchor": "x", "title": {"text": "std across dimensions"},
               "rangemode": "tozero"},
        xaxis2={"domain": panels["xaxis2"], "anchor": "y2", "title": {"text": "dimension"}},
        yaxis2={"domain": panels["yaxis2"], "anchor": "x2", "title": {"text": "γ, β"}},
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": 1.12 if not narrow else 1.02, "yanchor": "bottom"},
        # std 1: where LayerNorm puts every vector before γ and β
        shapes=[{"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": 1, "y1": 1,
                 "line": {"color": palette.rule, "width": 1, "dash": "dot"}}],
    )
    return {"data": data, "layout": layout}


def collapse_figure(before: np.ndarray, after: np.ndarray, tokens: Sequence[str],
                    title: str = "LayerNorm with d_model = 2", *, presenter: bool = False,
                    palette: Palette = LIGHT) -> dict:
    """The first listing's puzzle drawn exactly: why every output is (1, −1) or (−1, 1).

    With two dimensions no projection is needed. LayerNorm subtracts each vector's mean,
    which moves it onto the line x + y = 0 (dashed), then divides by its std, which puts it
    at distance √2 from the origin on that line: (1, −1) or (−1, 1), marked, whichever side
    the larger coordinate was on. γ and β then scale and shift those two points. A faint
    line joins each sum (before) to its output (after).
    """
    style = _STYLES[bool(presenter)]
    before, after = _points(before, "before"), _points(after, "after")
    if before.shape != after.shape:
        raise ValueError(f"before has shape {before.shape} but after {after.shape}; each sum needs exactly "
                         "one output")
    if len(tokens) != len(before):
        raise ValueError(f"there are {len(tokens)} tokens but {len(before)} vectors; each vector needs one token")
    escaped = [_escape(token) for token in tokens]
    largest = max([1.0, *(float(np.abs(points).max()) for points in (before, after) if points.size)])
    reach = float(np.float32(largest * 1.15))  # the visible range, ±reach on both axes
    path = np.stack([before, after, np.full_like(before, np.nan)], axis=1)  # (L, 3, 2): a NaN ends each line
    data = [
        {"type": "scatter", "name": "LayerNorm", "x": path[..., 0].ravel(), "y": path[..., 1].ravel(),
         "mode": "lines", "line": {"color": FAINT, "width": style.line}, "hoverinfo": "skip", "showlegend": False},
        {"type": "scatter", "name": "x + y = 0", "x": np.array([-reach, reach], dtype=np.float32),
         "y": np.array([reach, -reach], dtype=np.float32), "mode": "lines",
         "line": {"color": palette.rule, "width": style.line, "dash": "dash"}, "hoverinfo": "skip"},
        {"type": "scatter", "name": "(1, −1) and (−1, 1)", "x": np.array([1, -1], dtype=np.float32),
         "y": np.array([-1, 1], dtype=np.float32), "mode": "markers+text", "text": ["(1, −1)", "(−1, 1)"],
         "textposition": ["bottom right", "top left"], "textfont": {"size": style.font - 1, "color": palette.chart_ink},
         "marker": {"symbol": "circle-open", "size": style.marker * 2.2, "color": palette.chart_ink,
                    "line": {"width": style.line}},
         "hoverinfo": "skip"},
        {"type": "scatter", "name": "before (sum)", "x": before[:, 0], "y": before[:, 1], "mode": "markers+text",
         "marker": {"color": palette.colours["sum"], "size": style.marker}, "text": escaped,
         "textposition": "top center", "textfont": {"size": style.font - 1, "color": palette.colours["sum"]},
         "hovertext": escaped,
         "hovertemplate": "%{hovertext}<br>sum (%{x:.3f}, %{y:.3f})<extra></extra>"},
        {"type": "scatter", "name": "after (output)", "x": after[:, 0], "y": after[:, 1], "mode": "markers",
         "marker": {"color": palette.colours["output"], "size": style.marker * 1.3}, "hovertext": escaped,
         "hovertemplate": "%{hovertext}<br>output (%{x:.3f}, %{y:.3f})<extra></extra>"},
    ]
    layout = _layout(style, palette, 420, title, margin={"l": 50, "r": 10, "t": 40, "b": 50})
    layout.update(
        # constrain: keep the range and shrink the plot area to a square, rather than
        # widening the x range to fill a wide plot
        xaxis={"title": {"text": "dimension 0"}, "range": [-reach, reach], "zeroline": True, "constrain": "domain"},
        # equal scales: the two marked points and the dashed line keep their true angles
        yaxis={"title": {"text": "dimension 1"}, "range": [-reach, reach], "zeroline": True,
               "scaleanchor": "x", "scaleratio": 1, "constrain": "domain"},
        legend={"orientation": "h", "x": 0, "xanchor": "left", "y": -0.15, "yanchor": "top"},
    )
    return {"data": data, "layout": layout}


def _layout(style: _Style, palette: Palette, height: int, title: str | None, **rest) -> dict:
    """The layout every chart starts from: the theme's 2-D template, sized for the audience."""
    layout = {"template": palette.template, "height": round(height * style.scale), "font": {"size": style.font}}
    if title is not None:
        layout["title"] = {"text": title, "font": {"size": style.font + 1}, "x": 0, "xanchor": "left"}
    layout.update(rest)
    return layout


def _wrap(text: str, width: int) -> str:
    return "<br>".join(textwrap.wrap(text, width, break_long_words=False)) or text


def _note(text: str, style: _Style) -> dict:
    """A message in the middle of an empty figure, instead of empty axes."""
    return {"text": text, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5, "showarrow": False,
            "font": {"size": style.font + 2, "color": "#888888"}}


def _escape(text: str) -> str:
    # plotly reads <b>, <br>, &amp; … in text and tick labels; what a user typed must show as typed
    return html.escape(str(text), quote=False)


def _token_ticks(escaped: Sequence[str], most: int = TICK_LABELS) -> dict:
    """Tick values and labels for a token-index axis: every token up to `most`, past that every
    k-th, at most `most` (and THINNED_LABELS at most past TICK_LABELS) in all."""
    thinned = min(most, THINNED_LABELS) if len(escaped) > TICK_LABELS else most
    step = 1 if len(escaped) <= most else math.ceil(len(escaped) / thinned)
    shown = range(0, len(escaped), step)
    return {"tickmode": "array", "tickvals": list(shown), "ticktext": [escaped[i] for i in shown]}


def _points(points: np.ndarray, name: str) -> np.ndarray:
    """(N, 2) finite float32 coordinates, or a ValueError saying what is wrong and what is allowed."""
    points = np.asarray(points)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"{name} has shape {points.shape}; it must be (N, 2), one (x, y) pair per point")
    if not (np.issubdtype(points.dtype, np.floating) or np.issubdtype(points.dtype, np.integer)):
        raise ValueError(f"{name} must hold numbers, got dtype {points.dtype}")
    points = points.astype(np.float32)
    if not np.isfinite(points).all():
        raise ValueError(f"{name} contains NaN or infinite values (or values too large for float32); "
                         "only finite coordinates can be drawn")
    return points


def _plane_title(name: str, ratios: Sequence[float] | None, between: str = " · ") -> str:
    """'learned · PC1+PC2 41%': which table, and how much of its spread the plane shows (`between` them)."""
    title = _escape(name)
    if ratios is None or not len(ratios):
        return title
    axes = list(ratios)[:2]
    label = "+".join(f"PC{i}" for i in range(1, len(axes) + 1))
    return f"{title}{between}{label} {sum(float(r) for r in axes):.0%}"


LOSS_LAYOUT = {"template": LIGHT.template, "height": 240, "margin": {"l": 50, "r": 10, "t": 30, "b": 40},
               "title": {"text": "Training loss", "font": {"size": 13}}, "uirevision": "loss",
               "xaxis": {"title": {"text": "step"}}, "yaxis": {"title": {"text": "cross-entropy"}}}


def loss_spec(losses: Sequence[float], steps: int | None = None, palette: Palette = LIGHT) -> dict:
    """Training loss per step as a figure dict: cheap enough to send after every reported step.

    steps: the run's total number of steps, if known: the x axis then spans the whole run
    from the first update, so the curve grows along a still axis instead of rescaling.
    palette: the view's theme's (the light one's layout is LOSS_LAYOUT, shared by every curve).
    """
    y = np.asarray(losses, dtype=np.float32).ravel()
    trace = {"type": "scatter", "x": np.arange(1, len(y) + 1, dtype=np.int32), "y": y, "mode": "lines",
             "name": "loss", "line": {"color": palette.colours["token"], "width": 2},
             "hovertemplate": "step %{x}: loss %{y:.3f}<extra></extra>"}
    layout = LOSS_LAYOUT if palette is LIGHT else {**LOSS_LAYOUT, "template": palette.template}
    if steps is not None and steps > 0:
        layout = {**layout, "xaxis": {**LOSS_LAYOUT["xaxis"], "range": [0, max(int(steps), len(y)) + 1]}}
    return {"data": [trace], "layout": layout}


# the context chart's height in presenter mode (× 1.5): beside the plane, under the step's text (assets/style.css
# --context-room: this, and a gap)
CONTEXT_PRESENTER = 200


def context_spec(tokens: Sequence[str], selected: int, same: Sequence[tuple[int, Sequence[float]]], drawn: int,
                 *, apart: bool, presenter: bool = False, narrow: bool = False, palette: Palette = LIGHT) -> dict:
    """How far context moves one word's uses apart: the selected token's cosine with each other place
    of the same word after every encoder layer (0: the embedding layer's output), a line each, the
    layer the plane draws marked. `same` is `core.plane.scene.HiddenStates.same`; `apart`: each
    sentence was read on its own (the title says so: it changes what the cosines mean). `narrow`: a
    phone's screen, whose one line of title and axis ran past the chart's edge."""
    style = _STYLES[presenter]
    word = _escape(tokens[selected])
    dashes = ("solid", "dash", "dot")
    data = []
    for n, (other, cosines) in enumerate(same):
        y = np.asarray(cosines, dtype=np.float32)
        layers = np.arange(len(y), dtype=np.int32)
        data.append({"type": "scatter", "x": layers, "y": y, "mode": "lines+markers",
                     "name": f"{word} ({selected}) · {word} ({other})",
                     "line": {"color": palette.layer, "width": style.line + 0.5, "dash": dashes[n % len(dashes)]},
                     "marker": {"color": palette.layer, "size": [style.marker + 5 if k == drawn else style.marker
                                                                   for k in range(len(y))]},
                     "hovertemplate": f"after layer %{{x}}: cosine %{{y:.3f}}<extra>{word} ({other})</extra>"})
    title = f"{word} and its other place{'s' if len(same) > 1 else ''}: cosine per layer"
    reading = "each sentence read on its own" if apart else "the pair read as one sequence"
    axis = "encoder layer (0: the embedding layer's output)"
    margin = {"l": 60, "r": 10, "t": 50, "b": 45}
    height = 230
    if presenter or narrow:  # in presenter mode's control column beside the plane (assets/style.css), a third
        # of the screen wide, or on a phone's 390 px: short lines (the axes say "cosine" and "layer")
        title = f"{_wrap(title.split(':')[0], 28)}<br>{reading}"
        axis = "encoder layer<br>(0: embedding layer output)"
        lines = title.count("<br>") + 1
        margin, height = (({"l": 70, "r": 10, "t": 26 * lines + 22, "b": 80}, CONTEXT_PRESENTER) if presenter
                          else ({"l": 60, "r": 10, "t": 20 * lines + 46, "b": 70}, 286))
    else:
        title = _wrap(f"{title} · {reading}", 100)
    layout = _layout(style, palette, height, title,
                     xaxis={"title": {"text": axis}, "dtick": 1,
                            "range": [-0.3, (len(same[0][1]) - 1 if same else 6) + 0.3]},
                     yaxis={"title": {"text": "cosine"}, "tickformat": ".2f"},
                     showlegend=len(same) > 1, margin=margin)
    if presenter or narrow:  # its lines down from the top, not about the middle of the margin (into the axes);
        # plotly anchors a title of several lines by its first line's middle
        # (on a phone, under the row of plotly's tools a touch shows)
        layout["title"].update({"y": 1, "yref": "container", "yanchor": "top",
                                "pad": {"t": style.font + (30 if narrow and not presenter else 14)}})
    return {"data": data, "layout": layout}
