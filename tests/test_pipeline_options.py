"""core.plane.pipeline.explore's lecture options, through real sessions: the vocabulary and frozen bases
(points that stay put while typing), the explained-variance spectrum, the selected token's
nearest neighbours (BERT's and a random table's), and flipping a token's segment."""

from dataclasses import replace

import numpy as np
import pytest

from core.model.training import Corpus, TrainConfig
from core.plane.basis import BASES
from core.plane.pipeline import MAX_NEIGHBOURS, explore, fit_sentence_basis
from core.tables.presets import Settings
from core.tables.session import Session

A = "the cat sat"
B1, B2 = "on the mat", "a dog barked at the postman today"
PREFIX = 5  # [CLS] the cat sat [SEP]: the same tokens, positions and segments in both pairs
ROYAL = {"kings", "queen", "monarch", "prince", "monarchy", "royal", "queens", "kingdom", "throne"}
KING = ("the king spoke to the people", "")


@pytest.fixture(scope="module")
def session():
    return Session.create()


@pytest.fixture(scope="module")
def bert():
    return Session.create(source="bert")


@pytest.fixture(scope="module")
def king(bert):
    """BERT's view of the king sentence with "king" selected, and that token's index."""
    index = bert.encode(*KING).tokens.index("king")
    return explore(bert, *KING, selected=index, k=10), index


def prefix_points(result) -> np.ndarray:
    return np.stack([result.scene.points[g][:PREFIX] for g in result.scene.points])


# ---------------------------------------------------------------- bases


def test_vocabulary_basis_keeps_typed_tokens_in_place(session):
    vocabulary = session.with_basis("vocabulary")
    short, long = explore(vocabulary, A, B1), explore(vocabulary, A, B2)
    assert short.encoding.tokens[:PREFIX] == long.encoding.tokens[:PREFIX]
    assert short.scene.plane == long.scene.plane == "vocabulary"
    np.testing.assert_allclose(prefix_points(short), prefix_points(long), atol=1e-5)
    assert short.scene.explained == long.scene.explained
    # the contrast: this sentence's own plane moves the same tokens when B changes
    own_short, own_long = explore(session, A, B1), explore(session, A, B2)
    assert own_short.scene.plane == ""
    assert np.abs(prefix_points(own_short) - prefix_points(own_long)).max() > 0.1


def test_vocabulary_basis_of_bert_names_the_plane_in_the_axis(bert):
    result = explore(bert.with_basis("vocabulary"), A, B1, groups=["token"])
    assert result.scene.plane == "vocabulary"
    assert len(result.projection.spectrum_) == 10 and result.projection.n_samples_ == 30522


def test_frozen_basis_keeps_the_plane_of_the_moment(session):
    plane = fit_sentence_basis(session, A, B1)
    frozen = session.with_basis("frozen", plane)
    assert frozen.basis == "frozen" and frozen.frozen_basis is plane
    before, after = explore(frozen, A, B1), explore(frozen, A, B2)
    assert before.projection is after.projection is plane
    assert before.scene.plane == "frozen view"
    np.testing.assert_allclose(prefix_points(before), prefix_points(after), atol=1e-5)
    # at the moment it was frozen the picture is exactly the sentence's own
    sentence = explore(session, A, B1)
    for group, points in sentence.scene.points.items():
        np.testing.assert_allclose(before.scene.points[group], points, atol=1e-5)


def test_fitting_a_frozen_basis_needs_a_group(session):
    with pytest.raises(ValueError, match="No group is ticked"):
        fit_sentence_basis(session, A, B1, groups=[])


def test_a_frozen_basis_needs_a_plane_and_a_basis_must_be_known(session):
    with pytest.raises(ValueError, match="a frozen basis needs the plane to keep"):
        session.with_basis("frozen")
    with pytest.raises(ValueError, match="must be one of sentence, vocabulary, frozen, not 'diagonal'"):
        session.with_basis("diagonal")
    assert tuple(BASES) == ("sentence", "vocabulary", "frozen")
    # choosing another basis lets go of the frozen plane
    plane = fit_sentence_basis(session, A, B1)
    assert session.with_basis("frozen", plane).with_basis("vocabulary", plane).frozen_basis is None


def test_new_tables_of_another_width_drop_the_frozen_basis(session):
    frozen = session.with_basis("frozen", fit_sentence_basis(session, A, B1))
    narrower = frozen.with_tables("random", replace(frozen.settings, d_model=16), frozen.positions)
    assert narrower.basis == "sentence" and narrower.frozen_basis is None
    explore(narrower, A, B1)  # and the view still works
    reseeded = frozen.with_tables("random", replace(frozen.settings, seed=5), frozen.positions)  # same width
    assert reseeded.basis == "frozen" and reseeded.frozen_basis is frozen.frozen_basis


def test_switching_to_bert_drops_a_frozen_32_d_basis(session, bert):
    frozen = session.with_basis("frozen", fit_sentence_basis(session, A, B1))
    assert frozen.with_tables("bert", frozen.settings, frozen.positions).basis == "sentence"


def test_training_keeps_the_frozen_basis(session):
    plane = fit_sentence_basis(session, A, B1)
    trained = session.with_basis("frozen", plane).trained_on(Corpus.builtin(), TrainConfig(steps=2))
    assert trained.trained is not None
    assert trained.basis == "frozen" and trained.frozen_basis is plane
    result = explore(trained, A, B1)
    assert result.projection is plane and result.scene.previous is not None


# ---------------------------------------------------------------- spectrum


@pytest.mark.parametrize("basis", ["sentence", "vocabulary"])
def test_spectrum_has_ten_entries_led_by_the_plane(session, basis):
    result = explore(session.with_basis(basis), A, B1)
    spectrum = result.projection.spectrum_
    assert len(spectrum) == 10
    assert (np.diff(spectrum) <= 1e-12).all() and spectrum.sum() <= 1 + 1e-9
    np.testing.assert_allclose(spectrum[:2], result.scene.explained, atol=1e-7)


def test_spectrum_of_a_tiny_input_has_fewer_entries(session):
    result = explore(session, "hi", "", groups=["token"])  # 3 vectors: [CLS] hi [SEP]
    spectrum = result.projection.spectrum_
    assert len(spectrum) == 3
    assert spectrum[2] == pytest.approx(0, abs=1e-6)  # 3 centred points span a plane at most
    assert spectrum[:2].sum() == pytest.approx(1, abs=1e-6)
    np.testing.assert_allclose(spectrum[:2], result.scene.explained, atol=1e-7)


# ---------------------------------------------------------------- neighbours


def test_bert_neighbours_of_king_are_royal(king):
    result, index = king
    assert result.encoding.tokens[index] == "king"
    for kind in ("token", "output"):
        words = [word for word, _ in result.neighbours[kind]]
        assert len(words) == 10
        assert len(ROYAL & set(words)) >= 5, words
        assert not {"king", "[CLS]", "[SEP]", "[UNK]"} & set(words)
        cosines = [cosine for _, cosine in result.neighbours[kind]]
        assert all(a >= b for a, b in zip(cosines, cosines[1:], strict=False))
        assert all(-1 <= c <= 1 for c in cosines)


def test_neighbourhood_points_are_the_neighbours_own_rows_in_the_plane(bert, king):
    result, index = king
    near = result.scene.neighbourhood
    assert near.selected == index
    assert near.labels["token"] == tuple(word for word, _ in result.neighbours["token"])
    ids = [bert.tokenizer.token_to_id(word) for word in near.labels["token"]]
    rows = bert.model.tok_embed.weight.numpy()[ids]
    np.testing.assert_allclose(near.points["token"], result.projection.transform(rows), atol=1e-5)
    np.testing.assert_allclose(near.cosines["token"], [c for _, c in result.neighbours["token"]], atol=1e-3)
    cosines = near.cosines["output"]
    assert (np.diff(cosines) <= 0).all() and len(cosines) == 10
    # the listed cosine is the cosine in the full 384-d space
    query = result.vectors["token"][index]
    first = rows[0]
    assert near.cosines["token"][0] == pytest.approx(
        float(first @ query / np.linalg.norm(first) / np.linalg.norm(query)), abs=1e-5
    )


@pytest.mark.parametrize("k", [1, 3, MAX_NEIGHBOURS])
def test_k_neighbours_are_listed(bert, k):
    index = bert.encode(*KING).tokens.index("king")
    result = explore(bert, *KING, ["token", "output"], selected=index, k=k)
    assert {kind: len(words) for kind, words in result.neighbours.items()} == {"token": k, "output": k}
    assert {kind: len(p) for kind, p in result.scene.neighbourhood.points.items()} == {"token": k, "output": k}


@pytest.mark.parametrize("k", [-1, MAX_NEIGHBOURS + 1, 2.5, True])
def test_k_out_of_range_is_refused(session, k):
    with pytest.raises(ValueError, match="choose 0 \\(none\\) to 50"):
        explore(session, A, B1, selected=1, k=k)


def test_no_neighbours_keeps_the_selection_without_stars(session):
    """k = 0 (tour step 4): the selected token's addition path, and no neighbours found or starred."""
    result = explore(session, A, B1, selected=1, k=0)
    assert result.neighbours is None and result.scene.neighbourhood is None and result.scene.picked == 1


@pytest.mark.parametrize("selected", [9, 100, -1, True])
def test_a_selection_outside_the_pair_shows_no_neighbours(session, selected):
    result = explore(session, A, B1, selected=selected)  # 9 tokens: 0 to 8
    assert result.neighbours is None and result.scene.neighbourhood is None
    assert f"Token {selected!r} is not in this sentence pair" in " ".join(result.notes)


def test_a_random_table_has_no_royal_neighbourhood(session):
    index = session.encode(*KING).tokens.index("king")
    result = explore(session, *KING, selected=index, k=10)
    for kind in ("token", "output"):
        words = {word for word, _ in result.neighbours[kind]}
        assert len(words) == 10
        assert len(ROYAL & words) <= 1


def test_random_word_table_neighbours_leave_out_the_markers():
    words = Session.create(Settings(tokenizer="word", vocab_size=10, d_model=8))
    result = explore(words, A, B1, selected=2, k=MAX_NEIGHBOURS)  # 'cat'; the table has 10 rows
    for kind in ("token", "output"):
        listed = {word for word, _ in result.neighbours[kind]}
        assert "cat" not in listed
        assert not {"[CLS]", "[SEP]", "[UNK]"} & listed, listed


# ---------------------------------------------------------------- segment flips

# [CLS] the cat sat [SEP] on the mat [SEP]: 'cat' (2) is in A, 'on' (5) in B
FLIPS = {2: "cat", 5: "on"}


@pytest.fixture(scope="module")
def flipped(session):
    return explore(session, A, B1), explore(session, A, B1, flipped=FLIPS)


def test_a_flip_moves_the_token_to_the_other_segment(session, flipped):
    plain, flip = flipped
    assert plain.scene.segment_ids == (0, 0, 0, 0, 0, 1, 1, 1, 1)
    assert flip.scene.segment_ids == (0, 0, 1, 0, 0, 0, 1, 1, 1)
    assert [row[3] for row in flip.rows] == list(flip.scene.segment_ids)
    seg = session.model.seg_embed.weight.numpy()
    shift = flip.vectors["sum"] - plain.vectors["sum"]
    np.testing.assert_allclose(shift[2], seg[1] - seg[0], atol=1e-5)
    np.testing.assert_allclose(shift[5], seg[0] - seg[1], atol=1e-5)
    np.testing.assert_array_equal(np.delete(shift, [2, 5], axis=0), 0)
    np.testing.assert_array_equal(flip.vectors["token"], plain.vectors["token"])
    assert "Segment flipped: 'cat' (2) now uses segment 1, 'on' (5) now uses segment 0." in flip.notes


def test_a_stale_flip_is_ignored(session, flipped):
    plain, _ = flipped
    stale = explore(session, A, B1, flipped={2: "dog", 40: "cat", -1: "[SEP]"})
    assert stale.scene.segment_ids == plain.scene.segment_ids
    np.testing.assert_array_equal(stale.vectors["sum"], plain.vectors["sum"])
    assert not any("flipped" in note for note in stale.notes)


def test_shift_arrows_start_where_the_reference_segment_would_put_the_sum(session, flipped):
    plain, flip = flipped
    # which rows start an arrow: B's tokens (from A's row) and flipped ones (from their old row)
    cases = ((plain, [0, 1, 2, 3, 4], [5, 6, 7, 8]), (flip, [0, 1, 3, 4], [6, 7, 8]))
    for result, without, b_tokens in cases:
        projected = result.projection.transform(session.model.seg_embed.weight.numpy())
        step = projected[1] - projected[0]  # P(seg[1]) − P(seg[0]): the same arrow for every B token
        start, ends = result.scene.shift_from, result.scene.points["sum"]
        assert start.shape == (9, 2)
        assert np.isnan(start[without]).all()
        np.testing.assert_allclose(start[b_tokens], ends[b_tokens] - step, atol=1e-5)
    # a flipped token's arrow starts at the sum it had in its own segment
    np.testing.assert_allclose(flip.scene.shift_from[2], flip.scene.points["sum"][2] - step, atol=1e-5)
    np.testing.assert_allclose(flip.scene.shift_from[5], flip.scene.points["sum"][5] + step, atol=1e-5)
    # the unflipped view's own sums are where the flipped ones' arrows start, in any one plane
    moved = flip.projection.transform(plain.vectors["sum"][[2, 5]])
    np.testing.assert_allclose(flip.scene.shift_from[[2, 5]], moved, atol=1e-4)


def test_no_shift_arrows_without_the_sum_group(session):
    result = explore(session, A, B1, ["token", "segment"], flipped=FLIPS)
    assert result.scene.shift_from is None
    assert result.scene.segment_ids[2] == 1  # the flip itself still happens


def test_one_segment_row_cannot_flip(session):
    one = session.with_tables("random", replace(session.settings, n_segments=1), session.positions)
    plain = explore(one, A, B1)
    flip = explore(one, A, B1, flipped=FLIPS)
    assert flip.scene.segment_ids == plain.scene.segment_ids == (0,) * 9
    np.testing.assert_array_equal(flip.vectors["sum"], plain.vectors["sum"])
    assert "This table has one segment row, so no token can change segment." in flip.notes
    assert flip.scene.shift_from is None


# ---------------------------------------------------------------- d_model 2: exact coordinates


def test_the_listing_layer_is_drawn_at_its_exact_coordinates():
    from core.drawing.figures import embedding_spec

    session = Session.create(Settings(tokenizer="word", vocab_size=10, d_model=2))
    result = explore(session, "i am new to PyTorch i am having fun", "")
    scene = result.scene
    assert scene.exact
    for group, points in scene.points.items():
        np.testing.assert_array_equal(points, result.vectors[group])  # no PCA, no centring: the vectors
    output = scene.points["output"]
    # LayerNorm with d = 2: every output on (1, -1) or (-1, 1), up to its eps
    np.testing.assert_allclose(np.abs(output), 1.0, atol=1e-3)
    np.testing.assert_allclose(output[:, 0], -output[:, 1], atol=1e-6)
    spec = embedding_spec(scene)
    layout = spec["layout"]
    assert layout["xaxis"]["title"]["text"] == "dim 0" and layout["yaxis"]["title"]["text"] == "dim 1"
    assert "xaxis2" not in layout  # one plane: the collapse is seen against the sums
    notes = " ".join(a["text"] for a in layout["annotations"]).replace("<br>", " ")
    assert "exact coordinates, no projection" in notes
    (trace,) = [t for t in spec["data"] if t["name"] == "output"]
    assert "(%{x:.3f}, %{y:.3f})" in trace["hovertemplate"]
    (position,) = [t for t in spec["data"] if t["name"] == "position"]
    np.testing.assert_array_equal(np.sort(position["x"]), np.sort(scene.points["position"][:, 0].astype(np.float32)))
    assert any("nothing to project" in note for note in result.notes)
    # a 3-D request has no third dimension to show: the exact plane it stays
    assert explore(session, "i am new", "", components=3).scene.dims == 2


def test_components_must_be_two_or_three(session):
    with pytest.raises(ValueError, match="choose 2 .* or 3"):
        explore(session, A, B1, components=4)


def test_a_valid_selection_is_kept_on_the_scene(session):
    assert explore(session, A, B1, selected=1).scene.selected == 1
    assert explore(session, A, B1, selected=999).scene.selected is None
