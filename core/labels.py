"""Which points of the plane get a written label: as many as the screen has room for.

Writing a label beside every point buries the picture. At 128 tokens the five groups put
640 labels on the plane, most of them on top of others (all of a segment's tokens share one
point), and drawing them was half of the browser's work per keystroke: Plotly lays out each
SVG label one by one (in Chromium at 128 tokens, median of five keys: 1.25 s from key to
plot with every label, 0.62 s with none). So a label is written only where it can be read:
at the size the plot is drawn, each label is a box one line tall and as wide as its text,
and in priority order a label is kept if its box overlaps no box kept before it; the others
are left to the hover text. Coincident points (a segment's row, a repeated word) thereby get
one label, and presenter mode's larger type gets fewer, larger labels.

The screen size is an assumption (the server never learns it): the main plot's drawing area
on a laptop. Zooming in does not bring back dropped labels; the hover shows every token.
"""

from __future__ import annotations

import functools
import html
import unicodedata
from collections.abc import Sequence

import numpy as np

PLOT_PX = (800.0, 420.0)  # the main plot's drawing area in a laptop browser, CSS pixels
CHAR_EM = 0.6  # a glyph's average width, in ems of the label's font size
# the plot's type (core/figures.py sets it): Arial, or a face with its widths (Liberation Sans on
# Linux, Helvetica on a Mac), so a label is as wide on every screen as it is measured here
FONT_FAMILY = "Arial, 'Liberation Sans', Helvetica, sans-serif"
# each printable ASCII character's advance width in Arial, in thousandths of an em (its metrics
# file); measured in Chromium, 'listened' at 10 px is 34.5 px wide, as these widths say
_ASCII_WIDTHS = (
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,  # space to /
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,  # 0 to ?
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,  # @ to O
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,  # P to _
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,  # ` to o
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,  # p to ~
)
WIDE_EM = 1.0  # a character of the East Asian scripts: a full em
LINE_EM = 1.4  # a label's line height, in ems, with a little air between lines
AUTORANGE_PAD = 1.1  # plotly pads the axes' range beyond the outermost points
BUCKET = 4  # characters per cell of the grid that finds a label's neighbours


def legible(points: Sequence[np.ndarray], texts: Sequence[Sequence[str]], font_px: float,
            plot_px: tuple[float, float] = PLOT_PX, *, reserved: np.ndarray | None = None,
            reserved_texts: Sequence[str] = (), reserved_shift: float | np.ndarray = 0.0,
            reserved_checked: np.ndarray | None = None, markers: np.ndarray | None = None,
            marker_px: float | np.ndarray = 0.0, lift: float = 0.0,
            reserved_covering: np.ndarray | None = None, reach: np.ndarray | None = None) -> list[np.ndarray]:
    """For each array of points (n_i, 2), in priority order, which may carry their label.

    ``texts[i][j]`` is the label of ``points[i][j]``; an empty label asks for no room. Returns
    one boolean mask (n_i,) per array; kept labels do not overlap each other on a plot of
    ``plot_px`` pixels with equal axis scales (the main plot's ``scaleanchor``).

    ``reserved`` points (m, 2) have labels (``reserved_texts``) that are always written, so
    they take their room first; those labels sit ``reserved_shift`` pixels above the others'
    (negative: below, as the neighbours' labels are written under their stars), one shift for
    all or one per reserved point (a star's own box sits half a label and a marker below the
    others' labels, which are written above their points), or (m, 2) pixels right and up.

    ``reserved_checked`` (m,) marks reserved labels that must not overlap the reserved ones
    before them (the neighbours' names among themselves). With it, one more mask is returned,
    last: which reserved labels are kept.

    ``markers`` (k, 2): the drawn markers, squares of ``marker_px`` pixels (one size, or one
    each), that no checked label may cover or be covered by; a label's box is centred ``lift``
    pixels above its point (half its marker and half a line: written above it), so its own
    marker only touches it. ``reserved_covering`` (m,) marks reserved labels that may cover
    markers (a label that must be written and has no free place). ``reach`` (n, 2): more points
    the axes reach, with no label nor marker of their own here (what else the plot draws).
    """
    if not points:
        return []
    sizes = [len(p) for p in points]
    fixed = np.zeros((0, 2)) if reserved is None else np.asarray(reserved, dtype=np.float64).reshape(-1, 2)
    arrays = [fixed, *(np.asarray(p, dtype=np.float64).reshape(-1, 2) for p in points)]
    everything = np.concatenate(arrays)
    drawn = np.zeros((0, 2)) if markers is None else np.asarray(markers, dtype=np.float64).reshape(-1, 2)
    if len(everything) == 0:
        return [np.zeros(0, dtype=bool) for _ in points]
    finite = np.isfinite(everything).all(axis=1)
    if not finite.any():
        return [np.zeros(n, dtype=bool) for n in sizes]
    on_plot = np.concatenate([everything[finite], drawn, np.zeros((0, 2)) if reach is None else reach])
    on_plot = on_plot[np.isfinite(on_plot).all(axis=1)]  # what sets the axes
    span = np.ptp(on_plot, axis=0) * AUTORANGE_PAD
    # equal scales: the axis with more data per pixel sets the scale of both
    scale = min(width / extent for width, extent in zip(plot_px, span, strict=True) if extent > 0) \
        if (span > 0).any() else 1.0
    line = font_px * LINE_EM
    char = font_px * CHAR_EM
    pixels = everything * scale
    if np.ndim(reserved_shift) == 2:  # (m, 2): right and up, a label beside its point
        pixels[: len(fixed)] += reserved_shift
    else:
        pixels[: len(fixed), 1] += reserved_shift
    rows = np.floor(pixels[:, 1] / line)
    lengths = np.fromiter((width_em(t) for group in (reserved_texts, *texts) for t in group), dtype=np.float64,
                          count=len(everything)) / CHAR_EM  # in average characters
    wanted = finite & (lengths > 0)

    # two labels of two or more characters centred within two characters of each other on
    # one line overlap, so only the first to reach such a cell (in priority order) is a
    # candidate: at most a screenful are left for the exact check below, however long the input
    centre = np.floor(pixels[:, 0] / (2 * char))
    candidates = np.flatnonzero(wanted[len(fixed):]) + len(fixed)
    if len(candidates):
        keys = rows[candidates] * 1e6 + centre[candidates]  # one number per cell: rows are never 1e6 wide
        _, firsts = np.unique(keys, return_index=True)
        candidates = np.sort(candidates[firsts])
    candidates = np.concatenate([np.flatnonzero(wanted[: len(fixed)]), candidates])

    # the exact check: a label's box against the kept boxes near it, found through a grid of
    # cells one line tall and BUCKET characters wide
    bucket = BUCKET * char
    # plain floats: numpy's scalars are slow in a Python loop
    left = (pixels[:, 0] - lengths * char / 2).tolist()
    right = (pixels[:, 0] + lengths * char / 2).tolist()
    height, rows = pixels[:, 1].tolist(), rows.astype(int).tolist()
    covers = _Markers(drawn * scale, marker_px, lift, line, bucket)
    kept: dict[tuple[int, int], list[int]] = {}
    keep = np.zeros(len(everything), dtype=bool)
    for i in candidates.tolist():
        row, columns = rows[i], range(int(left[i] // bucket), int(right[i] // bucket) + 1)
        near = {j for r in (row - 1, row, row + 1) for c in columns for j in kept.get((r, c), ())}
        checked = i >= len(fixed) or (reserved_checked is not None and reserved_checked[i])
        covering = i < len(fixed) and reserved_covering is not None and reserved_covering[i]
        if checked and (any(abs(height[j] - height[i]) < line and left[j] < right[i] and left[i] < right[j]
                            for j in near)
                        or (not covering and covers.hit(left[i], right[i], height[i], row, columns))):
            continue
        keep[i] = True
        for c in columns:
            kept.setdefault((row, c), []).append(i)
    masks = np.split(keep[len(fixed):], np.cumsum(sizes)[:-1])
    return [*masks, keep[: len(fixed)]] if reserved_checked is not None else masks


class _Markers:
    """The drawn markers as boxes in a label's frame (moved down by `lift`), found through the
    same grid as the labels: whether a label's box covers one of them."""

    SLACK = 0.5  # pixels: a label's own marker touches its box, and rounding must not make that a cover

    def __init__(self, pixels: np.ndarray, size: float | np.ndarray, lift: float, line: float, bucket: float) -> None:
        sizes = np.broadcast_to(np.asarray(size, dtype=np.float64), (len(pixels),))
        finite = np.isfinite(pixels).all(axis=1) & (sizes > 0)
        pixels, sizes = pixels[finite], sizes[finite]
        # markers drawn at one spot (a segment's row, a repeated word) are one box
        boxes = np.unique(np.column_stack([np.round(pixels, 1), sizes]), axis=0) if len(pixels) else np.zeros((0, 3))
        self.x, self.y = boxes[:, 0].tolist(), (boxes[:, 1] - lift).tolist()
        self.half = (boxes[:, 2] / 2).tolist()
        self.line, self.bucket = line, bucket
        self.cells: dict[tuple[int, int], list[int]] = {}
        for i, (x, y, half) in enumerate(zip(self.x, self.y, self.half, strict=True)):
            for row in range(int((y - half) // line), int((y + half) // line) + 1):
                for column in range(int((x - half) // bucket), int((x + half) // bucket) + 1):
                    self.cells.setdefault((row, column), []).append(i)

    def hit(self, left: float, right: float, middle: float, row: int, columns: range) -> bool:
        """Whether the label box [left, right] × middle ± line/2 covers a marker."""
        if not self.cells:
            return False
        near = {j for r in (row - 1, row, row + 1) for c in columns for j in self.cells.get((r, c), ())}
        slack = self.SLACK
        return any(abs(self.y[j] - middle) < self.line / 2 + self.half[j] - slack
                   and left < self.x[j] + self.half[j] - slack and self.x[j] - self.half[j] + slack < right
                   for j in near)


@functools.lru_cache(maxsize=1 << 16)  # a class types the same few thousand words
def width_em(text: str) -> float:
    """How wide `text` is written in FONT_FAMILY, in ems (a markup escape counts as what it shows)."""
    if "&" in text:
        text = html.unescape(text)
    total = 0.0
    for character in text:
        if " " <= character <= "~":
            total += _ASCII_WIDTHS[ord(character) - 32] / 1000
        else:
            total += WIDE_EM if _wide(character) else CHAR_EM
    return total


def _wide(character: str) -> bool:
    return unicodedata.east_asian_width(character) in ("W", "F")
