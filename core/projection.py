"""High-dimensional vectors -> 2-D points with PCA.

All the groups shown (token, position, segment, sum, output) are projected with one basis
fitted on all of them together, so distances between groups mean the same thing as
distances within a group. The projection is affine,
``transform(a + b) == transform(a) + transform(b) - origin()``, which is what lets the
figure draw the embedding sum as vectors laid tip to tail.
"""

from __future__ import annotations

import numpy as np

# the solver, measured by bench/projection_solvers.py: PCA to 2-D of a 2,560 × 384 float32
# matrix (MiniLM's embedding layer, 512 tokens × 5 groups), median of 31 runs in one
# process, ms (ratio to scikit-learn's default PCA(n_components=2); Δ = error in the
# explained-variance ratio against the exact full SVD):
#
#   solver              MiniLM  ratio      Δ    noise  ratio      Δ
#   default (= auto)      25.8   1.00  1e-06     32.1   1.00  2e-04
#   auto                  29.8   1.15  1e-06     33.4   1.04  3e-04
#   full                 142.7   5.52      0    171.6   5.34      0
#   covariance_eigh       38.3   1.48  3e-08     50.8   1.58  3e-09
#   randomized            30.3   1.17  1e-06     37.1   1.16  3e-04
#   arpack                18.4   0.71  2e-08     32.4   1.01  2e-09
#
# arpack finds only the two leading singular vectors, exactly, and was the fastest on
# the real layer in every run (0.5–0.75× the default on a shared 2-core machine whose
# timings wander by up to 2× between runs), and stays at 2–3 ms for typical sentences
# (50–250 vectors, where 'auto' means 'full': 3.5–24 ms); only below ~10 tokens is
# 'full' a millisecond faster. 'auto' picks 'randomized' for the largest input, which
# is approximate (several per cent off on isotropic noise) and, unseeded, differs from
# call to call; covariance_eigh squares the data, so on rank-deficient input its
# rounding noise can pass for a real axis.
SVD_SOLVER = "arpack"


class PCAProjection:
    """One 2-D basis fitted on all vectors shown, so groups are comparable in one plane.

    Follows scikit-learn's estimator conventions: ``__init__`` only stores parameters,
    ``fit`` returns ``self``, learned attributes end in ``_``, and ``fit_transform`` fits
    then transforms. It does not inherit scikit-learn's base classes, and imports its PCA
    on the first fit, because importing scikit-learn is about 2 s of the server's start
    (``python -X importtime -c "import app"``; app.py imports it in the background once the
    server is up). Unlike a bare ``PCA`` it never fails or returns NaN
    on the small or degenerate inputs a student can make (one token, identical vectors,
    a one-dimensional table); it explains them in ``message_`` instead, because the app
    shows that sentence on the figure.

    Learned attributes
    ------------------
    mean_ : (d,) mean of the fitted vectors, the centre of the plane.
    components_ : (n_components, d) orthonormal axes; an axis along which the data has
        no spread is all zeros, so every point lies at 0 on it.
    explained_variance_ratio_ : (n_components,) share of the total variance on each axis.
    spectrum_ : (up to n_spectrum,) the shares of the leading components beyond the plane
        too, for the page's explained-variance bar: how much of the picture two axes miss.
    message_ : a sentence about anything unusual in the fit, "" when all is normal.
    n_samples_, n_features_ : the shape of the fitted data.
    """

    def __init__(self, n_components: int = 2, svd_solver: str = SVD_SOLVER,
                 random_state: int = 0, n_spectrum: int = 0):
        self.n_components = n_components
        self.svd_solver = svd_solver
        self.random_state = random_state
        self.n_spectrum = n_spectrum

    def fit(self, X: np.ndarray, y: None = None) -> PCAProjection:
        """Fit the plane to the rows of ``X`` (n vectors × d features)."""
        from sklearn.decomposition import PCA  # see the class's docstring

        k = self.n_components
        if k < 1:
            raise ValueError(f"n_components must be at least 1, got {k}")
        X = _checked(X)
        n, d = X.shape
        mean = X.mean(axis=0)
        components = np.zeros((k, d))  # axes without spread stay all zeros
        ratio = np.zeros(k)
        spectrum = np.zeros(0)

        # PCA divides by the total variance: with one vector, or identical ones, there
        # is none (the test is exact: max - min is zero only when all values are equal)
        if n > 1 and np.ptp(X, axis=0).any():
            # the data cannot have more axes than samples or features
            fitted = min(max(k, self.n_spectrum), n, d)
            # arpack needs fitted < min(n, d); at that size any exact solver is instant
            solver = self.svd_solver if fitted < min(n, d) else "full"
            pca = PCA(fitted, svd_solver=solver, random_state=self.random_state).fit(X)
            spectrum = np.clip(pca.explained_variance_ratio_[: self.n_spectrum], 0.0, 1.0)
            plane = min(k, fitted)
            # an axis whose variance is rounding noise points in an arbitrary direction
            # that could change on every keystroke: leave it empty. centring values of
            # size `scale` leaves an error of about eps * scale in each of the n × d
            # entries, at most n d (eps scale)² / (n - 1) of variance; 10× is a margin
            eps, scale = np.finfo(pca.components_.dtype).eps, np.abs(X).max()
            floor = n * d / (n - 1) * (10 * eps * scale) ** 2
            axes = np.flatnonzero(pca.explained_variance_[:plane] > floor)
            components[axes] = pca.components_[axes]
            ratio[axes] = np.clip(pca.explained_variance_ratio_[axes], 0.0, 1.0)

        # make each axis's largest entry positive: an SVD's signs are arbitrary, and a
        # basis whose sign flips between keystrokes would make every point jump across
        # the plane while the user types
        largest = components[np.arange(k), np.abs(components).argmax(axis=1)]
        components *= np.where(largest < 0, -1.0, 1.0)[:, None]

        self.mean_ = np.asarray(mean, dtype=np.float64)
        self.components_ = components
        self.explained_variance_ratio_ = ratio
        self.spectrum_ = spectrum
        self.message_ = _describe(n, d, rank=int(np.count_nonzero(ratio)))
        self.n_samples_, self.n_features_ = n, d
        return self

    def fit_transform(self, X: np.ndarray, y: None = None) -> np.ndarray:
        """``fit(X)``, then the coordinates of its rows in the plane."""
        return self.fit(X).transform(X)

    def transform(self, X: np.ndarray) -> np.ndarray:
        """Coordinates of the rows of ``X`` in the fitted plane, shape (n, n_components)."""
        self._check_fitted()
        X = _checked(X)
        if X.shape[1] != self.n_features_:
            raise ValueError(f"X has {X.shape[1]} features, but the projection was fitted "
                             f"on {self.n_features_}")
        # project, then shift: the same numbers as centring first, without a centred
        # float64 copy of X (most of the cost at 512 tokens)
        components = self.components_.T.astype(X.dtype)
        return X @ components - (self.mean_ @ self.components_.T).astype(X.dtype)

    def origin(self) -> np.ndarray:
        """Where the zero vector lands in the plane, shape (n_components,).

        The plane is centred on the data's mean, not on zero, so a vector drawn as an
        arrow starts here rather than at (0, 0).
        """
        self._check_fitted()
        return -self.mean_ @ self.components_.T

    def _check_fitted(self) -> None:
        if not hasattr(self, "components_"):
            raise ValueError("This PCAProjection is not fitted yet: call fit() with the vectors first.")


def _checked(X: np.ndarray) -> np.ndarray:
    """``X`` as a 2-D float array, or a ValueError saying what is wrong with it."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"expected a 2-D array of vectors (n × d), got {X.ndim}-D "
                         f"with shape {X.shape}")
    if X.size == 0:
        raise ValueError(f"there are no vectors to project (shape {X.shape})")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    if not np.isfinite(X).all():
        problems = [name for name, bad in (("NaN", np.isnan(X).any()),
                                           ("infinite", np.isinf(X).any())) if bad]
        raise ValueError(f"the vectors contain {' and '.join(problems)} values; "
                         "only finite numbers can be projected")
    return X


def _describe(n: int, d: int, rank: int) -> str:
    """A sentence a student understands about why the picture looks unusual, or ""."""
    if n == 1:
        return ("There is only one vector, so there is no spread to show: "
                "it sits at the centre of the plane.")
    if rank == 0:
        return (f"All {n} vectors are identical, so there is no spread to show: "
                "they all sit at the centre of the plane.")
    if d == 1:
        return "The vectors have a single dimension, so the second axis is empty."
    if rank == 1:
        return "The vectors all lie on one line, so the second axis is empty."
    if d == 2:
        return "The vectors have two dimensions, so this plane shows them exactly, only rotated."
    return ""
