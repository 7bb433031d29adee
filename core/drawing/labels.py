"""Which points of the main plane ask for a written label, in what order: the page places them.

Where a label fits depends on what only the browser knows: the plot's size, the axes as drawn,
and how wide each label is in the font it is written in. So the server says which labels are
wanted and which come first (`wanted`), and the page's script (assets/labels.js) places them
beside their points with the drawn boxes in hand: none over a marker (its own included),
another label, a note or the plot's edge; a label that must move away from a crowded point is
joined to it by a leader line; what finds no room is left to the hover. Points that coincide
within a group are one point with one label naming them all (`pile_label`: "[SEP] ×2"). A token
of punctuation alone is quoted where a label names it (`legible`: “.” ×2), its hover left as typed.
"""

from __future__ import annotations

import functools
import html
import unicodedata
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

import numpy as np

from core.plane.scene import Scene, segment_name

# who gets room first where labels would collide: the two segment points (else buried under a
# hundred others), the tokens themselves, then what the layer makes of them
LABEL_PRIORITY = ("segment", "token", "output", "sum", "position")
TOKEN_GROUPS = ("token", "sum", "output")  # a point of these is labelled with its token
SPELLED = 2  # the distinct names a shared point's label spells out; the rest are counted
MUST_ANSWERS = 10  # a class's most given words, each labelled with its count wherever that takes it
escape = functools.partial(html.escape, quote=False)  # as plotly's hover text and the columns' tokens are


def legible(name: str) -> str:
    """A token as a label on the plot names it: one of punctuation or symbols alone quoted, “.”, for
    a full stop with its count read ". ×2", and from the back of a room "×2". `name` may come
    HTML-escaped ("&amp;"), as labels are sent. assets/labels.js `legible` is its twin."""
    bare = html.unescape(name)
    return f"“{name}”" if bare and all(unicodedata.category(c)[0] in "PS" for c in bare) else name


def pile_label(names: Sequence[str]) -> str:
    """One label for the tokens that share a point: "the", "[SEP] ×2", "i ×2, am +3", “.” ×2.

    assets/labels.js `pileLabel` is its twin (tests/test_wire_format.py checks they agree)."""
    counts = Counter(names)
    parts = [f"{legible(name)} ×{count}" if count > 1 else legible(name) for name, count in counts.items()]
    if len(parts) <= SPELLED + 1:
        return ", ".join(parts)
    spelled = sum(list(counts.values())[:SPELLED])
    return f"{', '.join(parts[:SPELLED])} +{len(names) - spelled}"


def point_names(group: str, tokens: Sequence[str], positions: Sequence[int], order: Sequence[int]) -> list[str]:
    """What each point of a group's trace is called, in drawing order `order`: its token, or for
    the position group its position."""
    if group == "position":
        return [str(positions[i]) for i in order]
    return [tokens[i] for i in order]


def group_texts(names: Sequence[str], piles: Sequence[Sequence[int]]) -> list[str]:
    """Each point's label in a group's trace: its name (`legible`), or for a pile of coinciding
    points one label on its first point (`pile_label`) and none on the others."""
    texts = [legible(name) for name in names]
    for pile in piles:
        texts[pile[0]] = pile_label([names[i] for i in pile])
        for i in pile[1:]:
            texts[i] = ""
    return texts


def wanted(scene: Scene, order: np.ndarray, groups: Sequence[str], piles: Mapping[str, Sequence[Sequence[int]]],
           *, size: int, colours: Mapping[str, str], named: Collection[str] = (),
           stars: Mapping[str, str] | None = None, layer: dict | None = None, compact: bool = False,
           answers: Mapping[str, Sequence[str]] | None = None,
           hidden: Mapping[str, Sequence[str]] | None = None) -> dict:
    """The figure's labels for the page to place (``layout.meta.labels``).

    Order: a class's answers, then the words a tour step's text names and the selected token
    (`must`: placed however far from their point they must go), then the segment rows' letters,
    the selected token's neighbours (its stars), the search's entries, and every group's points
    in `LABEL_PRIORITY`. A figure the page receives (compact) leaves the texts of the token groups
    out: the page reads them from the tokens it has (`core.drawing.wire`'s columns), by the
    same rule (`filled`).

    groups: the drawn groups (traces named so, points in drawing order `order`, the segment's
        one point per row); piles: each group's coinciding points (indices in drawing order).
    stars: the neighbours' traces by kind ("token": their trace's name); layer: the search's
        trace (its ``text`` the entries' names, escaped for plotly).
    named: words (and positions) a tour step's text names; with the selected token they `must`
        be written, wherever that takes them.
    answers: a class's traces and their points' labels ("queen ×7", escaped, the most given first),
        by trace name: the room goes to them first, and the `MUST_ANSWERS` most given must be
        written (a projector that dropped "queen ×2" for the step's star "queen" on the same spot
        hid the round's answer from the room).
    hidden: the encoder layer's trace and its points' labels (its tokens, escaped, in drawing order
        `order`): room right after the token group, the selected token's must be written.

    Returns ``{"size": px, "order": [trace, …], "colours": {trace: colour}, "texts": {trace:
    [str, …]}, "must": {trace: [point, …]}}``: the traces whose points want a label, in the order
    they get room; each point's text ("": none), HTML-escaped as hover text is (the page writes
    it as text, unescaped); the points that must be labelled. With `compact`, the token groups'
    and position group's texts are left out (the page has them: the columns' escaped tokens).
    """
    named = set(named)
    picked = scene.picked
    ranked = [group for group in LABEL_PRIORITY if group in groups]
    texts: dict[str, list[str]] = {}
    must: dict[str, list[int]] = {}
    for group in ranked:
        if group == "segment":
            texts[group] = [segment_name(int(row)) for row in np.unique(np.asarray(scene.segment_ids))]
            continue
        names = point_names(group, scene.tokens, scene.positions, order)
        first = {i: pile[0] for pile in piles.get(group, ()) for i in pile}  # a pile is labelled on its first point
        chosen = {first.get(j, j) for j, name in enumerate(names)
                  if name in named or (group in TOKEN_GROUPS and picked is not None and order[j] == picked)}
        if chosen:
            must[group] = sorted(chosen)
        if not compact:
            texts[group] = group_texts([escape(name) for name in names], piles.get(group, ()))
    stars = stars or {}
    near = scene.neighbourhood
    for kind, trace in stars.items():
        texts[trace] = [legible(escape(name)) for name in near.labels[kind]]
        chosen = [j for j, name in enumerate(near.labels[kind]) if name in named]
        if chosen:
            must[trace] = chosen
    if layer is not None:  # its names come escaped, as plotly's hover reads them
        name = layer["name"]
        texts[name] = [legible(text) for text in layer["text"]]
        # the word searched for, and any the step names
        must[name] = [j for j, text in enumerate(layer["text"]) if j == 0 or html.unescape(text) in named]
    searched = [] if layer is None else [layer["name"]]
    answers = answers or {}
    texts.update(answers)
    for trace, said in answers.items():
        must[trace] = list(range(min(len(said), MUST_ANSWERS)))
    hidden = hidden or {}
    texts.update(hidden)
    for trace, said in hidden.items():  # the selected token's, unless it shares a point labelled once
        at = [j for j, i in enumerate(order) if i == picked and said[j]]
        if at:
            must[trace] = at
    first = [group for group in ranked if group == "segment"]
    rest = [group for group in ranked if group != "segment"]
    at = rest.index("token") + 1 if "token" in rest else 0
    order_of = [*answers, *first, *stars.values(), *searched, *rest[:at], *hidden, *rest[at:]]
    return {"size": size, "order": order_of, "colours": {trace: colours[trace] for trace in order_of},
            "texts": texts, "must": must}


def filled(labels: Mapping, tokens: Sequence[str], positions: Sequence[int], order: Sequence[int],
           piles: Mapping[str, Sequence[Sequence[int]]]) -> dict:
    """A compact figure's labels with the texts it left out, read from its token columns (the
    escaped tokens, their positions, the drawing order and each group's piles: `core.drawing.wire`):
    what assets/labels.js `texts` does in the page."""
    texts = dict(labels["texts"])
    for group in labels["order"]:
        if group not in texts:
            texts[group] = group_texts(point_names(group, tokens, positions, order), piles.get(group, ()))
    return {**labels, "texts": texts}
