"""High-dimensional vectors -> 2-D points with PCA.

All the groups shown (token, position, segment, sum, output) are projected with one basis
fitted on all of them together, so distances between groups mean the same thing as
distances within a group. The projection is affine,
``transform(a + b) == transform(a) + transform(b) - origin()``, which is what lets the
figure draw the embedding sum as vectors laid tip to tail.
"""

from __future__ import annotations

import numpy as np

# the solver, chosen side by side by bench/projection_solvers.py on the largest picture
# (512 tokens × 5 groups of MiniLM, 2,560 × 384 float32): scikit-learn's arpack works in the
# data's float32, so its plane is off the exact one (numpy's SVD in float64) by float32's
# rounding; "lanczos" is the same ARPACK Lanczos iteration run in float64 on the distinct rows
# only (each segment's row once, weighted by how many tokens share it; repeated words likewise)
# with a wider Krylov basis (20 vectors, where scikit-learn passes 2k + 1 = 5), so it needs
# fewer passes over the data and is exact to float64's rounding. The leading eigenvalues lie
# close together, which is why block and randomised subspace iterations need many passes to
# converge and were slower; forming the 384 × 384 covariance costs as much as the whole
# Lanczos run. Figures live in the bench output and the README, not here.
SVD_SOLVER = "lanczos"
# ARPACK's stopping rule: each Ritz value within this relative error. 0 (machine precision)
# takes markedly more products with XᵀX for the same plane: the Ritz vectors converge with the
# values once the basis holds them, so the plane stays within about this angle of numpy's SVD;
# tests/test_projection.py holds it to 1e-6 rad
TOLERANCE = 1e-8
# Lanczos basis size: a smaller one needs about twice the products with XᵀX, a larger one a
# few fewer but dearer each
KRYLOV = 20
DENSE_BELOW = 80  # distinct rows or features up to which one dense SVD is cheaper and exact


class PCAProjection:
    """One 2-D basis fitted on all vectors shown, so groups are comparable in one plane.

    Follows scikit-learn's estimator conventions: ``__init__`` only stores parameters,
    ``fit`` returns ``self``, learned attributes end in ``_``, and ``fit_transform`` fits
    then transforms. It does not inherit scikit-learn's base classes, and imports its PCA
    on the first fit, because importing scikit-learn is a large part of the server's start
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
        k = self.n_components
        if k < 1:
            raise ValueError(f"n_components must be at least 1, got {k}")
        X = _checked(X)
        n, d = X.shape
        mean = X.mean(axis=0, dtype=np.float64)
        components = np.zeros((k, d))  # axes without spread stay all zeros
        ratio = np.zeros(k)
        spectrum = np.zeros(0)

        # PCA divides by the total variance: with one vector, or identical ones, there
        # is none (the test is exact: max - min is zero only when all values are equal)
        if n > 1 and np.ptp(X, axis=0).any():
            # the data cannot have more axes than samples or features
            fitted = min(max(k, self.n_spectrum), n, d)
            variance, axes_found, total = self._leading(X, mean, fitted)
            spectrum = np.clip(variance[: self.n_spectrum] / total, 0.0, 1.0)
            plane = min(k, fitted)
            # an axis whose variance is rounding noise points in an arbitrary direction
            # that could change on every keystroke: leave it empty. centring values of
            # size `scale` leaves an error of about eps * scale in each of the n × d
            # entries, at most n d (eps scale)² / (n - 1) of variance; 10× is a margin
            eps, scale = np.finfo(X.dtype).eps, np.abs(X).max()
            floor = n * d / (n - 1) * (10 * eps * scale) ** 2
            axes = np.flatnonzero(variance[:plane] / (n - 1) > floor)
            components[axes] = axes_found[axes]
            ratio[axes] = np.clip(variance[axes] / total, 0.0, 1.0)

        # make each axis's largest entry positive: an SVD's signs are arbitrary, and a
        # basis whose sign flips between keystrokes would make every point jump across
        # the plane while the user types
        largest = components[np.arange(k), np.abs(components).argmax(axis=1)]
        components *= np.where(largest < 0, -1.0, 1.0)[:, None]

        self.mean_ = mean
        self.components_ = components
        self.explained_variance_ratio_ = ratio
        self.spectrum_ = spectrum
        self.message_ = _describe(n, d, rank=int(np.count_nonzero(ratio)))
        self.n_samples_, self.n_features_ = n, d
        return self

    def _leading(self, X: np.ndarray, mean: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, float]:
        """The k largest eigenvalues of the centred scatter matrix, their axes (k, d), and its trace.

        Eigenvalues are sums of squares (variance × (n − 1)), the trace is the total.
        """
        # scikit-learn's solvers: the vocabulary plane's covariance solver (core/plane/basis.py), and the
        # others for bench/projection_solvers.py
        if self.svd_solver != "lanczos":
            from sklearn.decomposition import PCA  # see the class's docstring

            # arpack needs k < min(n, d); at that size any exact solver is instant
            solver = self.svd_solver if k < min(X.shape) else "full"
            pca = PCA(k, svd_solver=solver, random_state=self.random_state).fit(X)
            centred = X - mean
            return (pca.explained_variance_ * (X.shape[0] - 1), pca.components_.astype(np.float64),
                    float(np.einsum("ij,ij->", centred, centred)))
        rows, counts = _distinct_rows(X)
        # a repeated row counts as often as it occurs: sqrt(count) × its centred row has the
        # same scatter matrix as the repeats, so every eigenpair is unchanged
        A = (X[rows] - mean) * np.sqrt(counts, dtype=np.float64)[:, None]  # (m, d) float64
        total = float(np.einsum("ij,ij->", A, A))
        m, d = A.shape
        if min(m, d) <= DENSE_BELOW or k >= min(m, d) - 1:
            _, s, vt = np.linalg.svd(A, full_matrices=False)
            return (s**2)[:k], vt[:k], float(np.sum(s**2))  # the same total, as the values round
        from scipy.sparse.linalg import LinearOperator, eigsh

        def scatter(v: np.ndarray) -> np.ndarray:
            return A.T @ (A @ v)  # never forms the d × d matrix: two passes over the rows

        operator = LinearOperator((d, d), matvec=scatter, matmat=scatter, dtype=np.float64)
        start = np.random.default_rng(self.random_state).standard_normal(d)  # deterministic
        values, vectors = eigsh(operator, k=k, ncv=min(max(KRYLOV, 2 * k + 1), d), tol=TOLERANCE, v0=start)
        order = np.argsort(values)[::-1]
        return np.clip(values[order], 0.0, None), vectors[:, order].T, total

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
        # project, then shift: the same numbers as centring first, without centring a copy of X.
        # In float64, then rounded to X's type: BLAS sums the last rows of a block in another order,
        # and in float32 two equal rows (a word twice, both [SEP]s) landed a rounding apart, two
        # points where the page must draw one
        projected = X @ self.components_.T - self.mean_ @ self.components_.T  # float64
        return projected.astype(X.dtype)

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


def _distinct_rows(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The indices of X's distinct rows and how often each occurs, exactly.

    Rows are grouped by one random projection (equal rows give bitwise equal keys), then
    compared in full: rows whose keys collide without being equal stay apart.
    """
    key = X @ np.random.default_rng(0).standard_normal(X.shape[1]).astype(X.dtype)
    _, first, inverse, counts = np.unique(key, return_index=True, return_inverse=True, return_counts=True)
    same = (X[first[inverse]] == X).all(axis=1)
    if same.all():
        return first, counts
    odd = np.flatnonzero(~same)
    counts = np.bincount(inverse[same], minlength=len(first))
    return np.concatenate([first, odd]), np.concatenate([counts, np.ones(len(odd), dtype=counts.dtype)])


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
