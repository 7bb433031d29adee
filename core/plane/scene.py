"""What one picture of the embedding layer shows, as plain data: the `Scene`.

The pipeline (`core/plane/pipeline.py`) fills it from the tables; the figure builders (`core/drawing/figures.py`),
the wire format (`core/drawing/wire.py`) and the label placement (`core/drawing/labels.py`) read it. No torch,
no plotly, no gradio.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

GROUPS = ("token", "position", "segment", "sum", "output")  # display order
LAYER = "layer"  # the neighbourhood's kind at an encoder layer K: tokens of the pair, by their layer-K vectors

# one marker shape per kind of token, the same in every group. plotly's numeric codes
# cost a digit per point in the JSON instead of a word; the open circle keeps its name
# because plotly.js's WebGL renderer draws its code (100) as a filled circle
WORD, SPECIAL, CONTINUATION = 0, 2, "circle-open"  # circle, diamond, open circle


@dataclass(frozen=True)
class Neighbourhood:
    """A selected token and its nearest vocabulary entries, placed in the scene's plane.

    ``points`` maps "token" and/or "output" to the neighbours' own vectors of that kind,
    projected: (k, dims) each, with ``labels`` (k,) and cosine similarities (k,). At an encoder
    layer K the one kind is "layer" (`LAYER`): the tokens of the pair nearest the selected one
    after layer K, at their layer-K points, by the cosine of their layer-K vectors; ``tokens``
    holds their indices in the scene.
    """

    selected: int  # the selected token's index in the scene
    points: Mapping[str, np.ndarray]
    labels: Mapping[str, tuple[str, ...]]
    cosines: Mapping[str, np.ndarray]
    tokens: tuple[int, ...] = ()  # kind "layer": the neighbours' indices among the scene's tokens


@dataclass(frozen=True)
class ClassWords:
    """A class's answers placed in the scene's plane (`core.plane.classwords.place`).

    One entry per drawn word (n, most frequent first): its count, the pieces the table split it
    into (one for a word in the vocabulary), and ``points`` maps "token" (always), "sum" and
    "output" (when those groups are shown) to (n, dims) projected coordinates. ``unplaced``:
    words the table cannot place, with their counts (listed, not drawn); ``undrawn``: words the
    round counted beyond those it draws.
    """

    words: tuple[str, ...]
    counts: tuple[int, ...]
    pieces: tuple[tuple[str, ...], ...]
    points: Mapping[str, np.ndarray]
    unplaced: tuple[tuple[str, int], ...] = ()
    undrawn: int = 0


@dataclass(frozen=True)
class Attention:
    """Whom the selected token attends to most in the drawn encoder layer (`core.plane.layers.attended`):
    the tokens at ``keys``, heaviest first, with the mean over the layer's ``heads`` of its weights."""

    query: int  # the selected token's index, whose row of the attention this is
    keys: tuple[int, ...]  # the attended tokens' indices ([CLS], [SEP] and the token itself among them)
    weights: tuple[float, ...]  # each one's share of the query's attention, 0 to 1
    heads: int  # how many heads the weights are the mean of


@dataclass(frozen=True)
class HiddenStates:
    """The tokens after each encoder layer up to the one drawn, in the scene's plane (`core.plane.layers`).

    ``points`` is (layer + 1, L, dims): 0 the embedding layer's output (hidden state 0, the
    "output" group's vectors), k each token after encoder layer k; the last row is the group
    drawn as "layer K", the rows before it each token's path. ``norms`` (L,): the full vectors'
    norms after the drawn layer.
    """

    layer: int  # K, the layer drawn: 1 to `layers`
    layers: int  # the encoder's layers (MiniLM-L6: 6)
    points: np.ndarray
    norms: np.ndarray
    attention: Attention | None = None  # a selected token's most attended tokens in layer K
    # where sentence B starts when each sentence was read on its own (core.plane.layers.forward): B's
    # hidden state 0 is then its own reading's, not the output drawn for the pair; None for the pair
    apart: int | None = None
    # the selected token's cosine with each other place of the same word, at every depth 0 to `layers`:
    # ((position, (cosine at 0, …, at 6)), …): how far context moves one word's two uses apart
    same: tuple[tuple[int, tuple[float, ...]], ...] = ()

    @property
    def name(self) -> str:
        """The group's name, in the legend and the figure's traces: "layer 4"."""
        return f"layer {self.layer}"


@dataclass(frozen=True)
class Scene:
    """Everything one picture shows, as plain data (no torch).

    One entry per token in each tuple (length L). ``points`` holds the groups to draw, keyed
    by names from ``GROUPS``; ``norms`` holds at least those (the pipeline gives all five:
    the token table shows every norm, drawn or not). Points have 2 coordinates (the plane) or
    3 (the rotatable PC1–PC3 view); ``origin`` has as many, and every other array of points
    in the scene the same number of columns.
    """

    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    positions: tuple[int, ...]
    segment_ids: tuple[int, ...]
    special_mask: tuple[bool, ...]        # [CLS]/[SEP] markers
    continuation_mask: tuple[bool, ...]   # WordPiece '##' pieces
    points: Mapping[str, np.ndarray]      # group -> (L, dims) projected coordinates
    norms: Mapping[str, np.ndarray]       # group -> (L,) L2 norm of the full vector
    explained: tuple[float, ...]          # explained-variance ratio of each axis
    origin: np.ndarray                    # (dims,) where the zero vector lands in the plane
    message: str = ""
    # after training: the same groups' points before it, in the same plane, to show movement
    previous: Mapping[str, np.ndarray] | None = None
    plane: str = ""  # whose variance the axes explain, when not the points' own ("vocabulary")
    # where each token's sum would be with its reference segment (NaN rows: no arrow); the
    # arrow from there to the sum is the shift the segment row adds
    shift_from: np.ndarray | None = None
    neighbourhood: Neighbourhood | None = None
    selected: int | None = None  # a token picked by the user: its addition path alone is drawn
    # d_model = 2: the points are the vectors' own coordinates (no projection), axes dim 0 / dim 1
    exact: bool = False
    segment_shift: float | None = None  # |seg[1] − seg[0]| in the full space, for the shift's note
    # each token's word category ("animals", …; "" for none) while training on a corpus that has them
    categories: tuple[str, ...] | None = None
    answers: ClassWords | None = None  # a class's words, drawn as the group "class"
    hidden: HiddenStates | None = None  # the tokens after encoder layer K and their paths there (K > 0)

    @property
    def dims(self) -> int:
        """How many coordinates each point has: 2 for the plane, 3 for the PC1–PC3 view."""
        return int(np.shape(self.origin)[0]) if np.ndim(self.origin) == 1 else 2

    @property
    def picked(self) -> int | None:
        """The selected token's index, from the selection or the neighbourhood, if any."""
        if self.selected is not None:
            return self.selected
        return self.neighbourhood.selected if self.neighbourhood is not None else None

    def __post_init__(self) -> None:
        # a mismatch here is a bug upstream; name it now rather than draw a wrong picture
        length, dims = len(self.tokens), self.dims
        if dims not in (2, 3):
            raise ValueError(f"Scene.origin has shape {np.shape(self.origin)}; points have 2 or 3 coordinates")
        for field in ("ids", "positions", "segment_ids", "special_mask", "continuation_mask"):
            if len(getattr(self, field)) != length:
                raise ValueError(f"Scene.{field} has {len(getattr(self, field))} entries "
                                 f"but there are {length} tokens")
        if self.categories is not None and len(self.categories) != length:
            raise ValueError(f"Scene.categories has {len(self.categories)} entries but there are {length} tokens")
        for group, points in self.points.items():
            if group not in GROUPS:
                raise ValueError(f"unknown group {group!r}; groups are {', '.join(GROUPS)}")
            if np.shape(points) != (length, dims):
                raise ValueError(f"points[{group!r}] has shape {np.shape(points)}, "
                                 f"expected ({length}, {dims})")
            if np.shape(self.norms.get(group)) != (length,):
                raise ValueError(f"norms[{group!r}] has shape "
                                 f"{np.shape(self.norms.get(group))}, expected ({length},)")
        if self.shift_from is not None and np.shape(self.shift_from) != (length, dims):
            raise ValueError(f"Scene.shift_from has shape {np.shape(self.shift_from)}, expected ({length}, {dims})")
        if self.neighbourhood is not None and not 0 <= self.neighbourhood.selected < length:
            raise ValueError(f"the selected token {self.neighbourhood.selected} is not one of the {length} tokens")
        if self.answers is not None and any(np.shape(p) != (len(self.answers.words), dims)
                                            for p in self.answers.points.values()):
            raise ValueError(f"the class's words have points of shapes "
                             f"{[np.shape(p) for p in self.answers.points.values()]}, expected "
                             f"({len(self.answers.words)}, {dims})")
        if self.hidden is not None and (np.shape(self.hidden.points) != (self.hidden.layer + 1, length, dims)
                                        or not 1 <= self.hidden.layer <= self.hidden.layers):
            raise ValueError(f"the hidden states have points of shape {np.shape(self.hidden.points)} at layer "
                             f"{self.hidden.layer} of {self.hidden.layers}, expected ({self.hidden.layer + 1}, "
                             f"{length}, {dims})")
        attention = None if self.hidden is None else self.hidden.attention
        if attention is not None and (not all(0 <= i < length for i in (attention.query, *attention.keys))
                                      or len(attention.keys) != len(attention.weights)):
            raise ValueError(f"the attention names tokens {attention.query} and {list(attention.keys)} with "
                             f"{len(attention.weights)} weights; there are {length} tokens")
        if self.selected is not None and not 0 <= self.selected < length:
            raise ValueError(f"the selected token {self.selected} is not one of the {length} tokens")
        if self.previous is not None and {g: np.shape(p) for g, p in self.previous.items()} != {
                g: np.shape(p) for g, p in self.points.items()}:
            raise ValueError("Scene.previous must hold the same groups and shapes as points")


def symbols(scene: Scene) -> list[int | str]:
    """Each token's marker shape, in token order: a diamond for a marker, an open circle for a
    ## word piece, a circle for a word."""
    return [SPECIAL if special else CONTINUATION if piece else WORD
            for special, piece in zip(scene.special_mask, scene.continuation_mask, strict=True)]


def segment_name(segment: int) -> str:
    """A segment row's name: A, B, … (a number past Z)."""
    return chr(ord("A") + segment) if 0 <= segment < 26 else str(segment)
