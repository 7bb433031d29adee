"""Which points of the plane get a written label: as many as the screen has room for.

Writing a label beside every point buries the picture. At 128 tokens the five groups put
640 labels on the plane, most of them on top of others (all of a segment's tokens share one
point), and drawing them was half of the browser's work per keystroke: Plotly lays out each
SVG label one by one (in Chromium at 128 tokens, median of five keys: 1.25 s from key to
plot with every label, 0.62 s with none). So a label is written only where it can be read:
at the size the plot is drawn, each label is a box one line tall and as wide as its text,
and in priority order a label is kept if its box overlaps no box kept before it; the others
are left to the hover text. Coincident points (a segment's row, a repeated word) thereby get
one label, and presenter mode's larger type gets fewer, larger labels. No label covers a
drawn marker either (`Canvas`): a label over a point hides the point, a point over a label
hides the word.

`place` decides a figure's labels: the words a tour step names and the selected token first,
each trying several places around its point (`PLACES`), then the stars' names, the search's,
and every group's in `LABEL_PRIORITY`.

The screen size is an assumption: the main plot's drawing area on a laptop, a projector
(presenter mode) or a phone (the page says which it is, `View.narrow`). Zooming in does not
bring back dropped labels; the hover shows every token.
"""

from __future__ import annotations

import functools
import html
import itertools
import math
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from core.scene import SPECIAL, Scene, segment_name, symbols

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
    all or one per reserved point, or (m, 2) pixels right and up (a label beside its point).

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
    fixed = np.zeros((0, 2)) if reserved is None else reserved
    canvas = Canvas([fixed, *points, *(() if reach is None else (reach,))], font_px, plot_px,
                    markers=markers, marker_px=marker_px, lift=lift)
    return canvas.fit(points, texts, reserved=reserved, reserved_texts=reserved_texts, reserved_shift=reserved_shift,
                      reserved_checked=reserved_checked, reserved_covering=reserved_covering)


class Canvas:
    """A plot's drawing area at the scale its axes will have, and the markers drawn on it: what
    `fit` writes labels on, as often as a caller tries places for some of them (`legible`'s
    arguments, split between what stays and what is tried)."""

    def __init__(self, extent: Sequence[np.ndarray], font_px: float, plot_px: tuple[float, float] = PLOT_PX, *,
                 markers: np.ndarray | None = None, marker_px: float | np.ndarray = 0.0, lift: float = 0.0) -> None:
        """`extent`: arrays of the points the axes reach besides the markers (labelled points,
        and what the plot draws that has neither label nor marker here)."""
        drawn = np.zeros((0, 2)) if markers is None else np.asarray(markers, dtype=np.float64).reshape(-1, 2)
        on_plot = np.concatenate([*(np.asarray(p, dtype=np.float64).reshape(-1, 2) for p in extent), drawn])
        on_plot = on_plot[np.isfinite(on_plot).all(axis=1)]  # what sets the axes
        span = np.ptp(on_plot, axis=0) * AUTORANGE_PAD if len(on_plot) else np.zeros(2)
        # equal scales: the axis with more data per pixel sets the scale of both
        self.scale = min(width / extent for width, extent in zip(plot_px, span, strict=True) if extent > 0) \
            if (span > 0).any() else 1.0
        self.font_px, self.line, self.char = font_px, font_px * LINE_EM, font_px * CHAR_EM
        self.bucket = BUCKET * self.char
        self.markers = _Markers(drawn * self.scale, marker_px, lift, self.line, self.bucket)

    def fit(self, points: Sequence[np.ndarray], texts: Sequence[Sequence[str]], *,
            reserved: np.ndarray | None = None, reserved_texts: Sequence[str] = (),
            reserved_shift: float | np.ndarray = 0.0, reserved_checked: np.ndarray | None = None,
            reserved_covering: np.ndarray | None = None) -> list[np.ndarray]:
        """`legible`'s masks on this canvas."""
        sizes = [len(p) for p in points]
        fixed = np.zeros((0, 2)) if reserved is None else np.asarray(reserved, dtype=np.float64).reshape(-1, 2)
        everything = np.concatenate([fixed, *(np.asarray(p, dtype=np.float64).reshape(-1, 2) for p in points)])
        finite = np.isfinite(everything).all(axis=1)
        line, char = self.line, self.char
        pixels = everything * self.scale
        if np.ndim(reserved_shift) == 2:  # (m, 2): right and up, a label beside its point
            pixels[: len(fixed)] += reserved_shift
        else:
            pixels[: len(fixed), 1] += reserved_shift
        rows = np.floor(pixels[:, 1] / line)
        half = np.fromiter((width_em(t) for group in (reserved_texts, *texts) for t in group), dtype=np.float64,
                           count=len(everything)) * (self.font_px / 2)  # half of each label's width, in pixels
        wanted = finite & (half > 0)

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

        # the exact check: a label's box against the kept boxes near it (`Room`)
        # plain floats: numpy's scalars are slow in a Python loop
        left = (pixels[:, 0] - half).tolist()
        right = (pixels[:, 0] + half).tolist()
        height = pixels[:, 1].tolist()
        room = self.room()
        keep = np.zeros(len(everything), dtype=bool)
        for i in candidates.tolist():
            checked = i >= len(fixed) or (reserved_checked is not None and reserved_checked[i])
            covering = i < len(fixed) and reserved_covering is not None and bool(reserved_covering[i])
            if checked and not room.free(left[i], right[i], height[i], covering=covering):
                continue
            keep[i] = True
            room.take(left[i], right[i], height[i])
        masks = np.split(keep[len(fixed):], np.cumsum(sizes)[:-1]) if sizes else []
        return [*masks, keep[: len(fixed)]] if reserved_checked is not None else masks


    def room(self) -> Room:
        """An empty plot to write labels on, one by one, with this canvas's markers on it."""
        return Room(self.line, self.bucket, self.markers)


class Room:
    """The labels written so far on a canvas, as boxes (left, right, middle, in pixels) in a
    grid of cells one line tall and BUCKET characters wide: whether a new one would overlap one
    of them, or cover a marker. Two boxes a line apart or more never overlap, so a box is
    checked against its own row of cells and the rows either side, over the columns it spans."""

    def __init__(self, line: float, bucket: float, markers: _Markers) -> None:
        self.line, self.bucket, self.markers = line, bucket, markers
        self.cells: dict[tuple[int, int], list[tuple[float, float, float]]] = {}

    def free(self, left: float, right: float, middle: float, *, covering: bool = False) -> bool:
        """Whether the box overlaps no label written so far, nor (unless `covering`) a marker."""
        line, cells = self.line, self.cells
        row, columns = int(middle // line), range(int(left // self.bucket), int(right // self.bucket) + 1)
        for r in (row - 1, row, row + 1):
            for c in columns:
                for other_left, other_right, other_middle in cells.get((r, c), ()):
                    if abs(other_middle - middle) < line and other_left < right and left < other_right:
                        return False
        return covering or not self.markers.hit(left, right, middle, row, columns)

    def take(self, left: float, right: float, middle: float) -> None:
        """Write the label: its box is room no later label may take."""
        row, box = int(middle // self.line), (left, right, middle)
        for c in range(int(left // self.bucket), int(right // self.bucket) + 1):
            self.cells.setdefault((row, c), []).append(box)


class _Markers:
    """The drawn markers as boxes in a label's frame (moved down by `lift`), found through the
    same grid as the labels: whether a label's box covers one of them. The grid is built with
    numpy (a keystroke at 512 tokens draws 2,560 markers): each cell's markers are one slice of
    a list sorted by cell."""

    SLACK = 0.5  # pixels: a label's own marker touches its box, and rounding must not make that a cover
    ROW = 1 << 20  # a cell's key: row * ROW + column (columns are far fewer than ROW / 2 either side)

    def __init__(self, pixels: np.ndarray, size: float | np.ndarray, lift: float, line: float, bucket: float) -> None:
        sizes = np.broadcast_to(np.asarray(size, dtype=np.float64), (len(pixels),))
        finite = np.isfinite(pixels).all(axis=1) & (sizes > 0)
        pixels, sizes = pixels[finite], sizes[finite]
        # markers drawn at one spot (a segment's row, a repeated word) are one box, the largest
        spots = np.round(pixels, 1)
        _, first, inverse = np.unique(spots[:, 0] + 1j * spots[:, 1], return_index=True, return_inverse=True)
        half = np.zeros(len(first))
        np.maximum.at(half, inverse.ravel(), sizes / 2)
        x, y = spots[first, 0], spots[first, 1] - lift
        self.x, self.y, self.half = x.tolist(), y.tolist(), half.tolist()
        self.line = line
        # every (marker, cell) a marker's box touches
        rows, columns = np.floor((y - half) / line).astype(np.int64), np.floor((x - half) / bucket).astype(np.int64)
        last_row, last_column = np.floor((y + half) / line), np.floor((x + half) / bucket)
        members, keys = [], []
        for down, across in itertools.product(range(int((last_row - rows).max(initial=0)) + 1),
                                              range(int((last_column - columns).max(initial=0)) + 1)):
            inside = np.flatnonzero((rows + down <= last_row) & (columns + across <= last_column))
            members.append(inside)
            keys.append((rows[inside] + down) * self.ROW + columns[inside] + across)
        members, keys = np.concatenate(members or [np.zeros(0, int)]), np.concatenate(keys or [np.zeros(0, int)])
        order = np.argsort(keys, kind="stable")
        cells, starts = np.unique(keys[order], return_index=True)
        ends = np.append(starts[1:], len(order))[: len(starts)]
        self.members = members[order].tolist()
        self.cells = dict(zip(cells.tolist(), zip(starts.tolist(), ends.tolist(), strict=True), strict=True))

    def hit(self, left: float, right: float, middle: float, row: int, columns: range) -> bool:
        """Whether the label box [left, right] × middle ± line/2 covers a marker."""
        cells, members, key = self.cells, self.members, self.ROW
        if not cells:
            return False
        near = set()
        for r in (row - 1, row, row + 1):
            for c in columns:
                span = cells.get(r * key + c)
                if span is not None:
                    near.update(members[span[0]:span[1]])
        slack, x, y, half = self.SLACK, self.x, self.y, self.half
        tall = self.line / 2 - slack
        for j in near:  # a plain loop: this is the label fitting's innermost step
            size = half[j]
            if abs(y[j] - middle) < tall + size and left < x[j] + size - slack and x[j] - size + slack < right:
                return True
        return False


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


class Sizes(Protocol):
    """What placing labels needs of a figure's scale (core/figures.py `_Scale`)."""

    marker: int  # a point's marker size, in pixels
    text: int  # a label's type size, in pixels


LAYER = "layer"  # the labels of embedding_spec's `layer`, among a figure's labels
# how far plotly's symbols reach, in marker sizes (measured in Chromium: a size-10 star is 13.3 px wide)
SYMBOL_EXTENT = {"star": 1.35, SPECIAL: 1.3}  # SPECIAL: a diamond
# where a label that must be written may go, in the order tried (plotly's textposition)
PLACES = ("top center", "bottom center", "middle right", "middle left", "top right", "top left", "bottom right",
          "bottom left")
# who gets a label first where labels would collide: the two segment points (else buried
# under a hundred others), the tokens themselves, then what the layer makes of them
LABEL_PRIORITY = ("segment", "token", "output", "sum", "position")


def place(scene: Scene, order: np.ndarray, tokens: list[str], groups: Sequence[str],
          drawn: Mapping[str, np.ndarray], scale: Sizes, plot_px: tuple[float, float],
          *, escape: bool, named: Collection[str] = (), layer: dict | None = None,
          reach: np.ndarray | None = None
          ) -> tuple[dict[str, list[str]], tuple[int, int], dict[str, list[str]], dict[str, Written]]:
    """Each drawn group's labels, in drawing order, blank where they would overlap another,
    and how many points are labelled of how many distinct points could be.

    A position row belongs to a position, not to the token there, so it is labelled with its
    index; a segment row with its letter; the other groups with their token. Points that
    coincide within a group (a segment's row, a repeated word) are one vector, labelled once.
    The selected token and the `named` tokens are labelled first, in the first of the token,
    sum and output groups drawn, and the segment rows' letters with them: each above its point,
    or under, beside or at a corner of it where that is taken. A named or selected token is
    always written (over a marker where no place is free, over another named word where not
    even that is) and returned apart, to be drawn over everything (`Written`). Then the selected token's
    neighbours' names (under their stars), the names of the `layer` drawn over the plot (the
    search's crosses: its ``text``, as LAYER in the labels returned), and the others, which give
    way. No other label covers a marker, nor is covered by one: every point's, star's and
    cross's marker keeps its room (a label's own marker only touches it). Also returns, by
    group, each label's place (PLACES) where one is not above.
    """
    texts = {
        "position": [str(scene.positions[i]) for i in order],
        "segment": [segment_name(scene.segment_ids[i]) for i in order],
    }
    ranked = [group for group in LABEL_PRIORITY if group in groups]
    points = [np.ascontiguousarray(drawn[group], dtype=np.float64)[order] for group in ranked]
    wanted = []
    for group, xy in zip(ranked, points, strict=True):
        words = texts.get(group, tokens)
        _, firsts = np.unique(xy.view(np.complex128).ravel(), return_index=True)  # (x, y) as one number
        first = np.zeros(len(words), dtype=bool)
        first[firsts] = True
        wanted.append([word if keep else "" for word, keep in zip(words, first, strict=True)])
    # the labels placed first, each where it fits (above, under, beside or at a corner of its point):
    # the selected token's and the named ones, each point once, which must be written, and the
    # segment rows' letters, which would otherwise be lost among the other groups' markers
    lead = next((ranked.index(g) for g in ("token", "sum", "output") if g in ranked), None)
    named = set(named) | ({scene.tokens[scene.picked]} if scene.picked is not None else set())
    placed = [] if lead is None else [(lead, j) for j, w in enumerate(wanted[lead]) if w and w in named]
    needed = np.ones(len(placed), dtype=bool)
    if "segment" in ranked:
        rows = ranked.index("segment")
        placed += [(rows, j) for j, w in enumerate(wanted[rows]) if w]
        needed = np.concatenate([needed, np.zeros(len(placed) - len(needed), dtype=bool)])
    placed_texts = [wanted[g][j] for g, j in placed]
    for g, j in placed:  # written through the reserved room, not a second time as an ordinary label
        wanted[g][j] = ""
    near = scene.neighbourhood
    kinds = [kind for kind in near.points if kind in groups and len(near.points[kind])] if near is not None else []
    line = scale.text * LINE_EM
    stars = np.concatenate([near.points[kind] for kind in kinds]) if kinds else np.zeros((0, 2))
    star_texts = [label for kind in kinds for label in near.labels[kind]]  # written under their stars
    # the layer's names, above its markers (larger than the points', so a little higher)
    crosses = np.zeros((0, 2)) if layer is None else np.column_stack([layer["x"], layer["y"]]).astype(np.float64)
    cross_px = np.zeros(0) if layer is None else np.broadcast_to(layer["marker"]["size"], len(crosses)).astype(float)
    cross_texts = [] if layer is None else list(layer["text"])
    # every marker on the plot, and its size: the groups' points (a segment's a larger square), the stars, the crosses
    markers = np.concatenate([*points, stars, crosses])
    star_px = (scale.marker + 2.0) * SYMBOL_EXTENT["star"]
    shapes = symbols(scene)
    widest = np.array([SYMBOL_EXTENT.get(shapes[i], 1.0) for i in order])  # a token's shape, in drawing order
    marker_px = np.concatenate([*(np.full(len(xy), scale.marker + 2.0) if group == "segment" else widest * scale.marker
                                  for group, xy in zip(ranked, points, strict=True)),
                                np.full(len(stars), star_px), cross_px])
    spots = np.array([points[g][j] for g, j in placed]).reshape(-1, 2)

    def shift(i: int, spot: int) -> tuple[float, float]:
        """Pixels right and up of where a label above would be, for placed label `i` at PLACES[spot]."""
        half = width_em(placed_texts[i]) * scale.text / 2
        under = -(line + scale.marker)
        return ((0.0, 0.0), (0.0, under), (half + scale.marker, -line / 2), (-half - scale.marker, -line / 2),
                (half, 0.0), (-half, 0.0), (half, under), (-half, under))[spot]

    canvas = Canvas([*points, stars, crosses, *(() if reach is None else (reach,))], scale.text, plot_px,
                    markers=markers, marker_px=marker_px, lift=(scale.marker + line) / 2)

    # each placed label above its point, checked against the ones placed before it; one that overlaps
    # tries under its point, then right and left of it, then its corners, the others staying where
    # they fit. One that must be written and finds no free place in a crowd is written over a marker
    # where it overlaps no label, or else above its point: a word the step's text names is never missing
    place, settled = np.zeros(len(placed), dtype=int), np.zeros(len(placed), dtype=bool)
    room, at = canvas.room(), (spots * canvas.scale).tolist()
    halves = [width_em(text) * scale.text / 2 for text in placed_texts]
    for covering, spot in itertools.product((False, True), range(len(PLACES)) if placed else ()):
        if covering and (settled | ~needed).all():
            break
        for i in np.flatnonzero(~settled).tolist():
            place[i] = spot
            across, up = shift(i, spot)
            x, y = at[i][0] + across, at[i][1] + up
            left, right = x - halves[i], x + halves[i]
            if math.isfinite(x + y) and room.free(left, right, y, covering=covering and bool(needed[i])):
                room.take(left, right, y)
                settled[i] = True
        if settled.all():
            break
    if not (settled | ~needed).all():  # (a segment's letter with no free place is left to the hover)
        place[~settled & needed] = 0
        settled |= needed

    # then every other label, around the placed ones (which the others never move): the stars'
    # names, the layer's, then the groups'
    ranks = np.concatenate([np.flatnonzero(settled), np.flatnonzero(~settled)])  # the order they are fitted in
    shifts = np.array([shift(i, place[i]) for i in ranks] +
                      [(0.0, -(line + (star_px + scale.marker) / 2))] * len(stars) +  # under the star
                      [(0.0, (size - scale.marker) / 2) for size in cross_px]).reshape(-1, 2)
    checked = np.concatenate([np.zeros(settled.sum(), dtype=bool),
                              np.ones((~settled).sum() + len(stars) + len(crosses), dtype=bool)])
    *kept, fitted = canvas.fit(points, wanted, reserved=np.concatenate([spots[ranks], stars, crosses]),
                               reserved_texts=[placed_texts[i] for i in ranks] + star_texts + cross_texts,
                               reserved_shift=shifts, reserved_checked=checked)
    fits = np.concatenate([np.zeros(len(placed), dtype=bool), fitted[len(placed):]])
    fits[ranks] = fitted[: len(placed)]
    for (g, j), text, keep in zip(placed, placed_texts, fits[: len(placed)], strict=True):
        wanted[g][j], kept[g][j] = text, bool(keep)
    fits = fits[len(placed):]
    near_labels = {}
    if kinds:
        # the neighbours' names that fit beside each other, by kind, for their own trace
        names = iter(label if keep else "" for label, keep in zip(star_texts, fits[: len(stars)], strict=True))
        near_labels = {kind: [next(names) for _ in near.labels[kind]] for kind in kinds}
    write = functools.partial(html.escape, quote=False) if escape else str
    labels = {group: [write(text) if keep else "" for text, keep in zip(words, mask, strict=True)]
              for group, words, mask in zip(ranked, wanted, kept, strict=True)}
    labels.update({f"near {kind}": [write(text) for text in texts] for kind, texts in near_labels.items()})
    if layer is not None:  # its text comes as it is drawn (escaped where it must be)
        labels[LAYER] = [text if keep else "" for text, keep in zip(cross_texts, fits[len(stars):], strict=True)]
    counts = (sum(int(mask.sum()) for mask in kept), sum(sum(map(bool, words)) for words in wanted))
    where: dict[str, list[str]] = {}
    over: dict[str, list[tuple[int, str, str]]] = {}  # group -> (point, label, place) written over everything
    for (g, j), spot, must, text in zip(placed, place, needed, placed_texts, strict=True):
        group = ranked[g]
        if must:  # written over everything (embedding_spec), so no marker drawn later hides it
            over.setdefault(group, []).append((j, labels[group][j], PLACES[spot]))
            labels[group][j] = ""
        elif spot and text:
            where.setdefault(group, [PLACES[0]] * len(wanted[g]))[j] = PLACES[spot]
    last = {group: Written(*map(list, zip(*written, strict=True))) for group, written in over.items()}
    return labels, counts, where, last


@dataclass(frozen=True)
class Written:
    """Labels written over everything else: the words that must be labelled."""

    indices: list[int]  # their points, in the group's drawing order
    texts: list[str]
    places: list[str]  # plotly's textposition of each
