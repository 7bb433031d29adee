"""Which points get a written label: no two labels overlap, coincident points get one, and
the groups that matter most win a contested spot."""

import itertools

import numpy as np
import pytest

from core.figures import GROUPS, LABELLED, embedding_spec
from core.labels import CHAR_EM, LINE_EM, PLOT_PX, legible
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
                half = len(word) * font * CHAR_EM / 2
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
