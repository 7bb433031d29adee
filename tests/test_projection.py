"""PCAProjection: exact numbers on data whose answer is known, and every degenerate input."""

import numpy as np
import pytest

from core.model.projection import PCAProjection


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def assert_plain(projection: PCAProjection, points: np.ndarray) -> None:
    """Whatever the input, the result is finite and shaped for a 2-D plot."""
    assert points.shape == (projection.n_samples_, 2)
    assert np.isfinite(points).all()
    assert np.isfinite(projection.origin()).all()
    ratio = projection.explained_variance_ratio_
    assert ratio.shape == (2,) and ((ratio >= 0) & (ratio <= 1)).all()


def test_fit_returns_self_and_learns_attributes(rng):
    X = rng.standard_normal((40, 6))
    projection = PCAProjection()
    assert projection.fit(X) is projection
    assert projection.mean_.shape == (6,)
    assert projection.components_.shape == (2, 6)
    assert (projection.n_samples_, projection.n_features_) == (40, 6)
    assert projection.message_ == ""


def test_init_only_stores_parameters():
    projection = PCAProjection(n_components=2, svd_solver="full", random_state=3)
    assert vars(projection) == {"n_components": 2, "svd_solver": "full", "random_state": 3, "n_spectrum": 0}
    assert not hasattr(projection, "components_")
    with pytest.raises(ValueError, match="not fitted yet"):
        projection.transform(np.zeros((2, 3)))


def test_matches_numpy_svd_up_to_sign(rng):
    X = rng.standard_normal((60, 8)) @ np.diag([5, 3, 1, 1, 1, 0.5, 0.5, 0.1])
    projection = PCAProjection().fit(X)

    centred = X - X.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    for found, exact in zip(projection.components_, vt[:2], strict=True):
        assert np.allclose(found, exact) or np.allclose(found, -exact)
    assert np.allclose(projection.explained_variance_ratio_, s[:2] ** 2 / np.sum(s**2))
    assert np.allclose(np.abs(projection.transform(X)), np.abs(centred @ vt[:2].T))


def test_data_on_a_line_explains_everything_on_the_first_axis(rng):
    direction = np.array([3.0, 4.0, 0.0]) / 5
    X = 2.0 + rng.standard_normal((20, 1)) * direction
    projection = PCAProjection().fit(X)
    points = projection.transform(X)

    assert np.allclose(projection.explained_variance_ratio_, [1.0, 0.0])
    assert np.allclose(projection.components_[0], direction)  # largest entry is positive
    assert np.array_equal(projection.components_[1], np.zeros(3))
    assert np.array_equal(points[:, 1], np.zeros(20))
    assert projection.message_ == "The vectors all lie on one line, so the second axis is empty."
    assert_plain(projection, points)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_line_far_from_zero_still_leaves_the_second_axis_empty(rng, dtype):
    # centring values near 100 leaves rounding noise that must not become an axis
    X = (100.0 + rng.standard_normal((50, 1)) * rng.standard_normal((1, 384))).astype(dtype)
    projection = PCAProjection().fit(X)
    assert projection.explained_variance_ratio_[1] == 0.0
    assert projection.explained_variance_ratio_[0] == pytest.approx(1.0, abs=1e-6)
    assert "one line" in projection.message_


def test_data_on_a_plane_is_shown_exactly(rng):
    X = 1.0 + rng.standard_normal((30, 2)) @ rng.standard_normal((2, 5))
    projection = PCAProjection().fit(X)
    points = projection.transform(X)

    assert projection.explained_variance_ratio_.sum() == pytest.approx(1.0)
    # nothing is lost: pairwise distances in the plane equal those in 5-D
    assert np.allclose(np.linalg.norm(points - points[0], axis=1),
                       np.linalg.norm(X - X[0], axis=1))


def test_signs_are_deterministic_under_row_permutation(rng):
    X = rng.standard_normal((50, 7)) * np.arange(7, 0, -1)
    first = PCAProjection().fit(X)
    again = PCAProjection().fit(X[rng.permutation(50)])

    assert np.allclose(first.components_, again.components_)
    assert np.allclose(first.transform(X), again.transform(X))
    for axis in first.components_:
        assert axis[np.abs(axis).argmax()] > 0


def test_projection_is_affine_so_sums_add_tip_to_tail(rng):
    a, b = rng.standard_normal((2, 10, 6))
    projection = PCAProjection().fit(np.vstack([a, b, a + b]))
    # T(a + b) = T(a) + T(b) - T(0): the figure's arrows rely on this
    assert np.allclose(projection.transform(a + b),
                       projection.transform(a) + projection.transform(b) - projection.origin())
    assert np.allclose(projection.origin(), projection.transform(np.zeros((1, 6)))[0])


def test_fit_transform_equals_fit_then_transform(rng):
    X = rng.standard_normal((25, 4))
    assert np.allclose(PCAProjection().fit_transform(X), PCAProjection().fit(X).transform(X))


@pytest.mark.parametrize("solver", ["auto", "full", "covariance_eigh", "randomized", "arpack"])
def test_every_solver_gives_the_same_plane(rng, solver):
    X = rng.standard_normal((80, 12)) * np.geomspace(10, 1, 12)
    reference = PCAProjection(svd_solver="full").fit(X)
    projection = PCAProjection(svd_solver=solver).fit(X)
    assert np.allclose(projection.components_, reference.components_, atol=1e-6)


def test_float32_input_from_the_embedding_layer(rng):
    X = rng.standard_normal((2560, 384)).astype(np.float32)
    projection = PCAProjection().fit(X)
    assert_plain(projection, projection.transform(X))


# degenerate inputs: a sensible picture and a sentence, never NaN or an exception

def test_one_vector_sits_at_the_centre():
    X = np.array([[1.0, -2.0, 3.0]])
    projection = PCAProjection().fit(X)
    points = projection.transform(X)

    assert np.array_equal(points, [[0.0, 0.0]])
    assert np.array_equal(projection.explained_variance_ratio_, [0.0, 0.0])
    assert "only one vector" in projection.message_
    assert_plain(projection, points)


def test_identical_vectors_have_no_spread():
    X = np.tile([0.1, 0.2, 0.3], (4, 1))  # a mean that does not round-trip exactly
    projection = PCAProjection().fit(X)
    points = projection.transform(X)

    assert np.allclose(points, 0.0)
    assert np.array_equal(projection.explained_variance_ratio_, [0.0, 0.0])
    assert projection.message_.startswith("All 4 vectors are identical")
    assert_plain(projection, points)


def test_one_dimensional_vectors_leave_the_second_axis_empty():
    X = np.array([[1.0], [2.0], [4.0]])
    projection = PCAProjection().fit(X)
    points = projection.transform(X)

    assert np.array_equal(projection.explained_variance_ratio_, [1.0, 0.0])
    assert np.allclose(points, [[-4 / 3, 0], [-1 / 3, 0], [5 / 3, 0]])
    assert "single dimension" in projection.message_
    assert_plain(projection, points)


def test_two_dimensional_vectors_are_only_rotated(rng):
    X = rng.standard_normal((6, 2))  # the documents' d_model = 2
    projection = PCAProjection().fit(X)
    points = projection.transform(X)

    assert projection.explained_variance_ratio_.sum() == pytest.approx(1.0)
    assert np.allclose(projection.components_ @ projection.components_.T, np.eye(2))
    assert np.allclose(np.linalg.norm(points, axis=1),
                       np.linalg.norm(X - X.mean(axis=0), axis=1))
    assert "exactly" in projection.message_
    assert_plain(projection, points)


def test_two_vectors_lie_on_one_line():
    X = np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 2.0]])
    projection = PCAProjection().fit(X)
    points = projection.transform(X)

    assert np.allclose(projection.explained_variance_ratio_, [1.0, 0.0])
    assert np.allclose(points, [[-1.5, 0.0], [1.5, 0.0]])
    assert "one line" in projection.message_
    assert_plain(projection, points)


def test_integer_input_is_projected_as_floats():
    projection = PCAProjection().fit(np.arange(12).reshape(4, 3))
    assert projection.mean_.dtype == np.float64
    assert np.allclose(projection.explained_variance_ratio_, [1.0, 0.0])


@pytest.mark.parametrize(("X", "problem"), [
    (np.zeros((0, 3)), "no vectors"),
    (np.zeros((3, 0)), "no vectors"),
    (np.zeros(3), "2-D"),
    (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
    (np.array([[1.0, np.inf], [0.0, 1.0]]), "infinite"),
])
def test_unusable_input_raises_a_value_error_naming_the_problem(X, problem):
    with pytest.raises(ValueError, match=problem):
        PCAProjection().fit(X)


def test_at_least_one_component():
    with pytest.raises(ValueError, match="n_components must be at least 1"):
        PCAProjection(n_components=0).fit(np.eye(3))


def test_transform_checks_the_width(rng):
    projection = PCAProjection().fit(rng.standard_normal((5, 4)))
    with pytest.raises(ValueError, match="3 features, but the projection was fitted on 4"):
        projection.transform(np.zeros((2, 3)))


@pytest.mark.parametrize("solver", ["arpack", "full", "covariance_eigh"])
def test_spectrum_lists_the_leading_components_and_keeps_the_plane(rng, solver):
    X = rng.standard_normal((300, 20)) * np.linspace(5, 1, 20)
    plane = PCAProjection().fit(X)
    wide = PCAProjection(n_spectrum=10, svd_solver=solver).fit(X)
    exact = np.linalg.svd(X - X.mean(0), compute_uv=False) ** 2
    assert wide.spectrum_.shape == (10,)
    assert np.allclose(wide.spectrum_, exact[:10] / exact.sum(), atol=1e-8)
    assert np.allclose(wide.spectrum_[:2], wide.explained_variance_ratio_)
    # the plane itself does not depend on how many components were measured
    assert np.allclose(np.abs(wide.transform(X)), np.abs(plane.transform(X)), atol=1e-8)
    assert PCAProjection(n_spectrum=10).fit(X[:4]).spectrum_.shape == (4,)  # no more axes than samples


# the default solver against a full decomposition: the plane and the shares are exact to a
# stated tolerance, on inputs large enough for the iterative path (not the dense fallback)

ANGLE = 1e-6  # radians: the largest principal angle between our axes and the exact ones
SHARE = 1e-6  # relative error of every explained-variance ratio


def _exact(X: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    centred = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    return vt[:k], (s**2 / np.sum(s**2))[:k]


def _repeated_rows(rng: np.random.Generator) -> np.ndarray:
    """Like the app's picture: token rows with repeated words, position rows, two segment rows
    shared by every token, their sums, stacked (float32)."""
    vocabulary = rng.standard_normal((60, 96)) * np.geomspace(3, 0.3, 96)
    words = rng.integers(0, 60, 200)
    token = vocabulary[words]
    position = rng.standard_normal((200, 96)) * 0.5
    segment = np.repeat(rng.standard_normal((2, 96)), 100, axis=0)
    return np.vstack([token, position, segment, token + position + segment]).astype(np.float32)


def _rank_deficient(rng: np.random.Generator) -> np.ndarray:
    return (rng.standard_normal((500, 12)) * np.geomspace(5, 0.5, 12)) @ rng.standard_normal((12, 150))


@pytest.mark.parametrize("make", [
    pytest.param(lambda rng: rng.standard_normal((700, 128)) * np.geomspace(4, 1, 128), id="random"),
    pytest.param(lambda rng: (rng.standard_normal((900, 200)) * np.geomspace(2, 1, 200)).astype(np.float32),
                 id="flat-float32"),
    pytest.param(_rank_deficient, id="rank-deficient"),
    pytest.param(_repeated_rows, id="repeated-rows"),
])
@pytest.mark.parametrize("n_spectrum", [0, 10])
def test_the_plane_and_shares_are_exact_to_the_stated_tolerance(rng, make, n_spectrum):
    import scipy.linalg

    X = make(rng)
    projection = PCAProjection(n_spectrum=n_spectrum).fit(X)
    axes, shares = _exact(X, 10)
    assert np.max(scipy.linalg.subspace_angles(projection.components_.T, axes[:2].T)) < ANGLE
    for found, exact in zip(projection.components_, axes[:2], strict=True):  # each axis, not just the plane
        assert min(np.linalg.norm(found - exact), np.linalg.norm(found + exact)) < ANGLE
    assert np.allclose(projection.explained_variance_ratio_, shares[:2], rtol=SHARE, atol=0)
    if n_spectrum:
        assert np.allclose(projection.spectrum_, shares, rtol=SHARE, atol=0)


def test_repeated_rows_give_the_plane_of_the_rows_written_out(rng):
    X = _repeated_rows(rng)
    once = PCAProjection(n_spectrum=10).fit(X)
    # the same rows in another order: the repeats merge the same way, the plane is the same
    again = PCAProjection(n_spectrum=10).fit(X[rng.permutation(len(X))])
    assert np.allclose(once.components_, again.components_, atol=1e-9)
    assert np.allclose(once.spectrum_, again.spectrum_, rtol=1e-9)


def test_signs_follow_the_scikit_learn_convention_and_repeat_exactly(rng):
    X = _repeated_rows(rng)
    first, second = PCAProjection().fit(X), PCAProjection().fit(X.copy())
    assert np.array_equal(first.components_, second.components_)  # deterministic, bit for bit
    for axis in first.components_:
        assert axis[np.abs(axis).argmax()] > 0
    flipped = PCAProjection().fit(-X)  # the same axes up to sign: the rule picks the same signs
    assert np.allclose(flipped.components_, first.components_, atol=1e-9)


def test_distinct_rows_are_counted_exactly():
    from core.model.projection import _distinct_rows

    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [2.0, 0.0]])
    rows, counts = _distinct_rows(X)
    assert sorted(zip(rows.tolist(), counts.tolist(), strict=True)) == [(0, 2), (2, 1), (3, 1)]
