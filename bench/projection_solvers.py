"""Which scikit-learn PCA solver should the projection use?

    python -m bench.projection_solvers [rounds]    (one BLAS thread, as the app)

The app refits the 2-D basis on every keystroke, so the solver is on the hot path. This
script times each solver on the largest picture the app draws (512 tokens × 5 groups,
384 features: BERT MiniLM's width) and prints ratios against scikit-learn's default
``PCA(n_components=2)`` measured in the same run, on two inputs, because iterative solvers are
only as fast as the spectrum lets them be: the real embedding layer (`minilm`), whose leading
directions stand out clearly, and isotropic noise (`noise`), the worst case. ``default`` and
``auto`` run the same code (only the seed differs), so the gap between them shows how much
noise the machine adds to the timings. The Δ columns are how far each solver's
explained-variance ratios are from the exact answer (LAPACK's full SVD): a fast but
approximate solver would make the axis labels and the picture wobble.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import numpy as np
import scipy.linalg
import torch
from sklearn.decomposition import PCA

from core.model.checkpoints import bert_preset
from core.model.embedding import COMPONENTS
from core.model.projection import PCAProjection
from core.plane.basis import SPECTRUM

TOKENS = 512
SOLVERS = ("auto", "full", "covariance_eigh", "randomized", "arpack")
ROUNDS = 31  # timed runs per solver; the median shrugs off a busy neighbour


def minilm(rng: np.random.Generator) -> np.ndarray:
    """The five components of MiniLM's embedding layer for 512 tokens, stacked, float32."""
    ids = torch.from_numpy(rng.integers(1000, 30522, (1, TOKENS)))
    segments = (torch.arange(TOKENS) >= TOKENS // 2).long().unsqueeze(0)
    with torch.no_grad():
        parts = bert_preset().components(ids, segments)
    return torch.cat([parts[group][0] for group in COMPONENTS]).numpy()


def noise(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def median_ms(fits: dict[str, Callable[[], object]], rounds: int = ROUNDS) -> dict[str, float]:
    """Median wall time of each fit, interleaved so that load spikes hit all alike."""
    for fit in fits.values():  # warm up caches, thread pools and lazy imports
        fit()
    times: dict[str, list[float]] = {name: [] for name in fits}
    order = list(fits)
    for _ in range(rounds):
        random.shuffle(order)  # no fit always runs first, right after another's work
        for name in order:
            start = time.perf_counter()
            fits[name]()
            times[name].append(time.perf_counter() - start)
    return {name: 1e3 * statistics.median(t) for name, t in times.items()}


def main() -> None:
    from threadpoolctl import threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=ROUNDS, help="timed runs per solver")
    rounds = parser.parse_args().rounds

    threadpool_limits(1)  # the app's setting
    torch.set_num_threads(1)
    random.seed(0)
    rng = np.random.default_rng(0)
    real = minilm(rng)
    inputs = {"MiniLM": real, "noise": noise(rng, real.shape)}
    estimators: dict[str, Callable[[], PCA | PCAProjection]] = {
        "default": lambda: PCA(n_components=2),
        **{s: lambda s=s: PCA(2, svd_solver=s, random_state=0) for s in SOLVERS},
        "PCAProjection (arpack)": lambda: PCAProjection(svd_solver="arpack"),
        f"PCAProjection ({PCAProjection().svd_solver})": PCAProjection,
        f"  + spectrum of {SPECTRUM}": lambda: PCAProjection(n_spectrum=SPECTRUM),
        f"  arpack + spectrum of {SPECTRUM}": lambda: PCAProjection(svd_solver="arpack", n_spectrum=SPECTRUM),
    }

    print(
        f"PCA to 2-D of a {real.shape[0]} × {real.shape[1]} float32 matrix, median of "
        f"{rounds} interleaved runs in ms; ratio = time / default's time; Δ = largest "
        f"explained-variance ratio error (relative); ∠ = largest principal angle (rad) of the "
        f"plane; both against numpy's SVD of the float64 data\n"
    )
    print(f"{'':<30}" + "".join(f"{name:>10}{'ratio':>7}{'Δ':>9}{'∠':>9}" for name in inputs))
    cells: dict[str, str] = dict.fromkeys(estimators, "")
    for X in inputs.values():
        ms = median_ms({name: lambda make=make, X=X: make().fit(X) for name, make in estimators.items()}, rounds)
        centred = X.astype(np.float64) - X.astype(np.float64).mean(axis=0)
        _, s, vt = np.linalg.svd(centred, full_matrices=False)
        exact = s[:2] ** 2 / np.sum(s**2)
        for name, make in estimators.items():
            fitted = make().fit(X)
            error = np.max(np.abs(fitted.explained_variance_ratio_ - exact) / exact)
            angle = np.max(scipy.linalg.subspace_angles(np.asarray(fitted.components_, dtype=np.float64).T, vt[:2].T))
            cells[name] += f"{ms[name]:10.1f}{ms[name] / ms['default']:7.2f}{error:9.0e}{angle:9.0e}"
    for name, row in cells.items():
        print(f"{name:<30}{row}")


if __name__ == "__main__":
    main()
