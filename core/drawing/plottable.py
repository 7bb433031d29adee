"""The plane's drawn points as a real HTML table, for who cannot see the plot.

One row per point the figure draws of the five groups (and an encoder layer's group): its token,
position, segment, group, its coordinates as drawn (rounded to a thousandth of its group's spread),
and the two points drawn nearest it on the same panel. The exported page (core/drawing/export.py)
carries it as markup, readable without a script; the page builds the same table in the browser from
the figure it drew (assets/plottable.js), whose rules these are: a change here is a change there
(tests/test_export.py runs the page's script on an exported figure and compares the two, cell for cell).
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence

import numpy as np

from core.plane.scene import GROUPS, segment_name

TABLE_ID = "plot-table"
HEADERS = ("token", "position", "segment", "group", "x", "y")
NEAREST = "nearest in the plot"
LAYER = re.compile(r"layer \d+")  # an encoder layer's group (core/plane/scene.py Hidden.name)
NEAREST_COUNT = 2
REGION = "The plane's points as a table"  # the scrolling region's name
SHARE = re.compile(r"([\d.]+)%")


def is_group(name: object) -> bool:
    """Whether a trace of this name is one of the table's groups (not the background, rings, stars)."""
    return isinstance(name, str) and (name in GROUPS or bool(LAYER.fullmatch(name)))


def _values(value) -> np.ndarray:
    return np.asarray(value if value is not None else [], dtype=np.float64)


def _name_in(hover: str, position: int) -> str:
    """A token's name from a hover text that names every token at its spot: "the (1), the (5)"."""
    text = html.unescape(str(hover))
    mine = next((part for part in text.split(", ") if part.endswith(f" ({position})")), None)
    return mine[: -len(f" ({position})")] if mine else text


def decimals(extent: float) -> int:
    """Digits after the point that keep a coordinate within a thousandth of a spread this wide."""
    if not extent or not math.isfinite(extent):
        return 3
    return min(6, max(0, math.ceil(3 - math.log10(extent))))


def rounded(value: float, digits: int) -> str:
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def rows(spec: dict, tokens: Sequence[str] | None = None) -> list[dict]:
    """The table's rows, group by group in the plot's order, tokens in the sentence's: each a dict of
    token, position (-1 for a segment's point, `shared` by its tokens), segment, group, x, y (z), as drawn, the panel
    it is drawn in, and `nearest`, the other rows drawn nearest it ("word (group)")."""
    found, seen = [], set()
    for trace in spec.get("data", []):
        name = trace.get("name")
        if not is_group(name) or name in seen or trace.get("visible", True) is not True or "x" not in trace:
            continue
        seen.add(name)
        xyz = np.column_stack([_values(trace[axis]) for axis in "xyz" if axis in trace])
        data = np.asarray(trace.get("customdata"), dtype=np.float64)
        hover = list(trace.get("hovertext") or [""] * len(xyz))
        panel = "scene" if "z" in trace else f"{trace.get('xaxis', 'x')}{trace.get('yaxis', 'y')}"
        points = []
        for i, point in enumerate(xyz):
            if name == "segment":  # one point per segment row, shared by its tokens
                segment = int(data[i, 0])
                word, position = f"segment {segment_name(segment)}", -1
                shared = int(data[i, 1])
            else:
                position, segment, shared = int(data[i, 1]), int(data[i, 2]), 1
                word = tokens[position] if tokens is not None and position < len(tokens) else \
                    _name_in(hover[i], position)
            points.append({"token": word, "position": position, "segment": segment_name(segment), "group": name,
                           "shared": shared, "xyz": point, "panel": panel})
        points.sort(key=lambda row: (row["position"], row["segment"]))
        digits = decimals(_spread(xyz))  # a group of one point (a segment's): its panel's spread, below
        for row in points:
            row["digits"], row["alone"] = digits, len(points) < 2
        found += points
    for row in found:
        if row["alone"]:
            panel = np.array([other["xyz"] for other in found if other["panel"] == row["panel"]])
            row["digits"] = decimals(_spread(panel))
    _nearest(found)
    return found


def _spread(xyz: np.ndarray) -> float:
    finite = xyz[np.isfinite(xyz).all(axis=1)] if len(xyz) else xyz
    return float(np.ptp(finite, axis=0).max()) if len(finite) > 1 else 0.0


def _nearest(found: list[dict]) -> None:
    """Each row's `nearest`: the NEAREST_COUNT other rows drawn nearest it on its panel, each named
    "word (group)", a word the sentence has twice with its position: "the at position 6 (token)"."""
    seen: dict[str, set[int]] = {}
    for row in found:
        seen.setdefault(row["token"], set()).add(row["position"])
    named = [f"{row['token']}" + (f" at position {row['position']}" if len(seen[row["token"]]) > 1 else "")
             + f" ({row['group']})" for row in found]
    for row, name in zip(found, named, strict=True):
        row["name"] = name
    for panel in {row["panel"] for row in found}:
        members = [row for row in found if row["panel"] == panel]
        xyz = np.array([row["xyz"] for row in members], dtype=np.float64)
        apart = np.sqrt(((xyz[:, None, :] - xyz[None, :, :]) ** 2).sum(axis=2))
        np.fill_diagonal(apart, np.inf)
        apart[~np.isfinite(apart)] = np.inf
        for i, row in enumerate(members):
            order = np.argsort(apart[i], kind="stable")[:NEAREST_COUNT]
            row["nearest"] = [members[j]["name"] for j in order if np.isfinite(apart[i, j])]


def caption(spec: dict, found: list[dict]) -> str:
    """What the table lists: its tokens and groups, and the plane's share of the variance."""
    layout = spec.get("layout", {})
    three = any(row["panel"] == "scene" for row in found)
    axes = [(layout.get("scene") or {}).get(name) for name in ("xaxis", "yaxis", "zaxis")] if three \
        else [layout.get("xaxis"), layout.get("yaxis")]
    titles = [str(((axis or {}).get("title") or {}).get("text") or "") for axis in axes]
    shares = [SHARE.search(title) for title in titles]
    tokens = len({row["position"] for row in found if row["position"] >= 0})
    groups = len({row["group"] for row in found})
    text = f"The plane's points: {tokens} tokens in {groups} group{'' if groups == 1 else 's'}"
    if found and all(shares):
        kept = sum(float(share.group(1)) for share in shares)
        text += f", a PCA {'space' if three else 'plane'} keeping {kept:.1f}% of the variance"
    elif found and titles[0]:
        text += f", on the axes {' and '.join(html.unescape(title) for title in titles)}"
    return text


def table_html(spec: dict, tokens: Sequence[str] | None = None) -> str:
    """`table#plot-table` of the figure's drawn points, in a region that scrolls when it is too wide."""
    found = rows(spec, tokens)
    three = any(row["panel"] == "scene" for row in found)
    headers = (*HEADERS, *(("z",) if three else ()), NEAREST)
    head = "".join(f'<th scope="col">{name}</th>' for name in headers)
    body = []
    for row in found:
        position = str(row["position"]) if row["position"] >= 0 else f"shared by {row['shared']}"
        coordinates = [rounded(float(value), row["digits"]) for value in row["xyz"]]
        cells = [position, row["segment"], row["group"], *coordinates, ", ".join(row["nearest"])]
        body.append(f'<tr><th scope="row">{html.escape(row["token"], quote=False)}</th>'
                    + "".join(f"<td>{html.escape(cell, quote=False)}</td>" for cell in cells) + "</tr>")
    said = html.escape(caption(spec, found), quote=False)
    return (f'<div class="plot-table-region" role="region" aria-label="{REGION}" tabindex="0">'
            f'<table id="{TABLE_ID}" class="plot-table" tabindex="-1"><caption>{said}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")
