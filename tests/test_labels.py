"""Which points get a written label: no two labels overlap, coincident points get one, and
the groups that matter most win a contested spot."""

import itertools

import numpy as np
import pytest

from core.figures import LABELLED, embedding_spec
from core.labels import LINE_EM, PLOT_PX, legible, width_em
from core.scene import GROUPS
from tests.test_figures import make_scene

FONT = 10


def boxes(points, texts, masks, font=FONT):
    """The kept labels' boxes in screen pixels, as legible() sizes them."""
    everything = np.concatenate(points)
    span = np.ptp(everything, axis=0) * 1.1
    scale = min(w / s for w, s in zip(PLOT_PX, span, strict=True) if s > 0)
    found = []
    for xy, words, mask in zip(points, texts, masks, strict=True):
        for (x, y), word, keep in zip(xy * scale, words, mask, strict=True):
            if keep:
                half = width_em(word) * font / 2
                found.append((x - half, x + half, y))
    return found


@pytest.mark.parametrize("seed", range(5))
def test_kept_labels_never_overlap(seed):
    rng = np.random.default_rng(seed)
    points = [rng.normal(size=(200, 2)) for _ in range(3)]
    texts = [[f"w{'x' * (i % 9)}" for i in range(200)] for _ in range(3)]
    masks = legible(points, texts, FONT)
    kept = boxes(points, texts, masks)
    assert 20 < len(kept) < 600  # some, not all, of a dense cloud
    for (a0, a1, ya), (b0, b1, yb) in itertools.combinations(kept, 2):
        assert abs(ya - yb) >= FONT * LINE_EM or a1 <= b0 or b1 <= a0  # a line apart, or side by side


@pytest.mark.parametrize("seed", range(3))
def test_kept_labels_cover_no_marker_but_their_own(seed):
    """Each label written above its point (its box from the marker's top up one line) leaves
    every other marker uncovered: no label hides a point, and no point hides a label."""
    rng = np.random.default_rng(seed)
    points = [rng.normal(size=(150, 2)) for _ in range(2)]
    texts = [[f"w{'x' * (i % 7)}" for i in range(150)] for _ in range(2)]
    marker, line = 8.0, FONT * LINE_EM
    markers = np.concatenate(points)
    masks = legible(points, texts, FONT, markers=markers, marker_px=marker, lift=(marker + line) / 2)
    without = legible(points, texts, FONT)
    assert 10 < sum(m.sum() for m in masks) < sum(m.sum() for m in without)  # markers take room
    span = np.ptp(markers, axis=0) * 1.1
    scale = min(w / s for w, s in zip(PLOT_PX, span, strict=True))
    centres = markers * scale
    for xy, words, mask in zip(points, texts, masks, strict=True):
        for (x, y), word, keep in zip(xy * scale, words, mask, strict=True):
            if not keep:
                continue
            half = width_em(word) * FONT / 2
            bottom, top = y + marker / 2, y + marker / 2 + line  # up is +y here
            others = np.abs(centres - (x, y)).max(axis=1) > 1e-9
            cx, cy = centres[others].T
            covered = (cx - marker / 2 < x + half - 0.5) & (x - half + 0.5 < cx + marker / 2) & \
                      (cy - marker / 2 < top - 0.5) & (bottom + 0.5 < cy + marker / 2)
            assert not covered.any(), f"{word!r} covers a marker"


def test_a_label_that_may_cover_markers_is_still_kept_off_other_labels():
    here = np.array([[0.0, 0.0], [1e-3, 0.0], [50.0, 50.0]])
    markers = here + (0.0, 1.45)  # a marker about 11 px above each point, where its label would go
    kept = legible([here[:1]], [["x"]], FONT, reserved=here[1:2], reserved_texts=["must"], reserved_checked=[True],
                   reserved_covering=[True], markers=markers, marker_px=8.0, lift=11.0)
    assert kept[-1].tolist() == [True] and kept[0].tolist() == [False]  # it wins its place; 'x' gives way
    blocked = legible([here[:1]], [["x"]], FONT, reserved=here[1:2], reserved_texts=["must"], reserved_checked=[True],
                      markers=markers, marker_px=8.0, lift=11.0)
    assert blocked[-1].tolist() == [False]


def test_a_label_is_as_wide_as_arial_writes_it():
    assert width_em("listened") == pytest.approx(3.446)  # 34.5 px at 10 px in Chromium
    assert width_em("&lt;b&gt;") == width_em("<b>")  # an escape takes the room of what it shows
    assert width_em("猫") == 1.0 and width_em("ö") == 0.6


def test_points_far_apart_all_keep_their_labels():
    points = [np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0], [10.0, 10.0]])]
    assert legible(points, [["king", "queen", "man", "woman"]], FONT)[0].all()


def test_a_contested_spot_goes_to_the_first_array():
    here = np.array([[0.0, 0.0], [50.0, 50.0]])
    first, second = legible([here, here + 1e-3], [["first", "x"], ["second", "y"]], FONT)
    assert first.tolist() == [True, True] and second.tolist() == [False, False]


def test_blank_labels_and_missing_points_take_no_room():
    points = [np.array([[0.0, 0.0], [np.nan, 1.0], [5.0, 5.0]])]
    assert legible(points, [["", "lost", "kept"]], FONT)[0].tolist() == [False, False, True]
    assert [m.tolist() for m in legible([np.zeros((0, 2))], [[]], FONT)] == [[]]
    assert legible([np.zeros((3, 2))], [["a", "a", "a"]], FONT)[0].sum() == 1  # all on one spot


def test_figure_labels_positions_by_index_and_each_segment_once():
    scene = make_scene()
    spec = embedding_spec(scene, labels=True)
    traces = {trace["name"]: trace for trace in spec["data"]}
    segment = [t for t in traces["segment"]["text"] if t]
    assert sorted(segment) == ["A", "B"]  # one row per segment: one label each
    order = np.argsort(np.asarray(scene.special_mask) | np.char.startswith(scene.tokens, "##"), kind="stable")
    shown = [(t, str(scene.positions[i])) for t, i in zip(traces["position"]["text"], order, strict=True) if t]
    assert shown and all(text == position for text, position in shown)


def test_a_crowded_figure_says_how_many_points_are_labelled():
    tokens = tuple(f"word{i}" for i in range(120))
    spec = embedding_spec(make_scene(tokens=tokens), labels=True)
    shown = sum(bool(t) for trace in spec["data"] if trace["name"] in GROUPS for t in trace["text"])
    note = next(a["text"] for a in spec["layout"]["annotations"] if "labelled" in a["text"])
    # segment rows are two distinct points; every other group has one point per token
    assert LABELLED.format(shown, 4 * len(tokens) + 2) in note
    assert 0 < shown < 4 * len(tokens)
    # a projector's larger type has room for fewer labels
    larger = embedding_spec(make_scene(tokens=tokens), labels=True, presenter=True)
    assert sum(bool(t) for trace in larger["data"] if trace["name"] in GROUPS for t in trace["text"]) < shown


def test_reserved_labels_take_their_room_first_and_are_not_returned():
    star = np.array([[0.0, 0.0], [100.0, 100.0]])  # two far apart: the scale puts them ~400 px apart
    token = np.array([[0.0, 0.0], [50.0, 50.0]])
    # the label under the star at (0, 0) is where the token's label above (0, 0) would be, shifted down
    line = FONT * LINE_EM
    (mask,) = legible([token], [["queen", "far"]], FONT, reserved=star, reserved_texts=["kings", "x"],
                      reserved_shift=0.0)
    assert mask.tolist() == [False, True]  # the token at the star's spot gives way
    (mask,) = legible([token], [["queen", "far"]], FONT, reserved=star, reserved_texts=["kings", "x"],
                      reserved_shift=-2 * line)
    assert mask.tolist() == [True, True]  # two lines below: no longer in the way
    assert legible([], [], FONT, reserved=star, reserved_texts=["a", "b"]) == []
