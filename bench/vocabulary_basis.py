"""The whole-vocabulary plane: its first fit, its cache, and projecting an update into it.

    python -m bench.vocabulary_basis [--fits 5] [--transforms 500] [--tables bert,glove]

The "whole vocabulary" basis is PCA of every row of the token table (BERT MiniLM's
30,522 × 384, GloVe's 400,003 × 50). It is the one slow step of that plane, so it is fitted
once per table and cached; after that each keystroke only projects its vectors. For each
table this times, side by side in one process (`measure_table` says how), the first fit
against scikit-learn's PCA as a notebook would write it, a cache hit, and projecting an update
against scikit-learn's transform and bare numpy. Ratios are ours / baseline: below 1 is
faster. The app's thread settings apply (one torch and one BLAS thread), as in app.py.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from core.model.embedding import COMPONENTS, BertEmbedding
from core.plane.basis import SPECTRUM, is_cached, vocabulary_basis
from core.tables.presets import bert_source, glove_source

TABLES = {"bert": ("BERT MiniLM", bert_source), "glove": ("GloVe 6B 50d", glove_source)}
TOKENS = 512


def update_vectors(model: BertEmbedding, seed: int = 0) -> np.ndarray:
    """The five components of 512 random tokens (sentence A then B), stacked: (2,560, d) float32."""
    rng = np.random.default_rng(seed)
    ids = torch.from_numpy(rng.integers(0, model.config.vocab_size, (1, TOKENS)))
    segments = (torch.arange(TOKENS) >= TOKENS // 2).long().unsqueeze(0)
    with torch.no_grad():
        parts = model.components(ids, segments)
    return torch.cat([parts[group][0] for group in COMPONENTS]).numpy()


def medians(calls: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Median seconds of each call, interleaved in a shuffled order so load spikes hit all alike."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    for _ in range(rounds):
        random.shuffle(order)
        for name in order:
            start = time.perf_counter()
            calls[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def measure_table(key: str, fits: int = 5, transforms: int = 500) -> dict:
    """Seconds of first fit, refits, baselines, cache hits and transforms for one table.

    - first fit: ``core.plane.basis.vocabulary_basis(table, refit=True)`` (the page's Refit
      button: the same code as the first fit, bypassing the cache) against scikit-learn's
      ``PCA(n_components=10)`` with its default solver on the same rows, and with arpack: what
      a notebook would write, asking for the ten components the explained-variance bar shows.
      Fits are interleaved in a shuffled order and the median is reported. The process's very
      first fit of a table (cold memory, lazy imports) is shown apart when this run made it;
      the cache is process-wide, so it is missing when something earlier fitted that table;
    - cache hit: ``vocabulary_basis(table)`` once cached, a dictionary look-up;
    - transform: a 512-token update (5 groups → 2,560 × d vectors, the layer's real
      components for 512 random rows) projected with the cached ``projection.transform``,
      against scikit-learn's ``PCA.transform`` with the same two axes and a bare numpy
      ``(X − mean) @ axesᵀ``.
    """
    name, source = TABLES[key]
    model = source().model
    table = model.tok_embed
    rows = table.weight.detach().numpy()  # (V, d), shared: read only

    first = None
    if not is_cached(table):
        first = vocabulary_basis(table).seconds  # as the page reports it
    fit = medians(
        {
            "ours": lambda: vocabulary_basis(table, refit=True),
            "default": lambda: PCA(SPECTRUM).fit(rows),
            "arpack": lambda: PCA(SPECTRUM, svd_solver="arpack", random_state=0).fit(rows),
        },
        fits,
    )

    hit = medians({"ours": lambda: vocabulary_basis(table)}, 1000)["ours"]

    projection = vocabulary_basis(table).projection
    reference = PCA(2, svd_solver="covariance_eigh").fit(rows)
    # the same axes in both, so both compute the same numbers
    reference.components_ = projection.components_.astype(reference.components_.dtype)
    reference.mean_ = projection.mean_.astype(reference.mean_.dtype)
    axes, mean = projection.components_.astype(np.float32), projection.mean_.astype(np.float32)
    X = update_vectors(model)
    projection.transform(X), reference.transform(X)  # warm up
    transform = medians(
        {
            "ours": lambda: projection.transform(X),
            "sklearn": lambda: reference.transform(X),
            "numpy": lambda: (X - mean) @ axes.T,
        },
        transforms,
    )
    agree = float(np.abs(projection.transform(X) - reference.transform(X)).max())
    return {
        "key": key,
        "name": name,
        "shape": rows.shape,
        "first_fit": first,
        "fit": fit,
        "hit": hit,
        "transform": transform,
        "transform_shape": X.shape,
        "transform_max_difference": agree,
    }


def measure(tables: tuple[str, ...] = tuple(TABLES), fits: int = 5, transforms: int = 500) -> list[dict]:
    """Every table's numbers, with the app's thread settings for the whole process."""
    torch.set_num_threads(1)
    threadpool_limits(1)
    random.seed(0)
    return [measure_table(key, fits, transforms) for key in tables]


def report(results: list[dict]) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """(title, header, rows) of each table to print."""
    fits, lookups = [], []
    for r in results:
        rows, d = r["shape"]
        fit = r["fit"]
        first = "—" if r["first_fit"] is None else f"{r['first_fit'] * 1e3:.0f}"
        fits.append(
            (
                f"{r['name']} {rows:,} × {d}",
                first,
                f"{fit['ours'] * 1e3:.0f}",
                f"{fit['default'] * 1e3:.0f}",
                f"{fit['arpack'] * 1e3:.0f}",
                f"{fit['ours'] / fit['default']:.2f}×",
                f"{fit['ours'] / fit['arpack']:.2f}×",
            )
        )
        t = r["transform"]
        n, width = r["transform_shape"]
        lookups.append(
            (
                f"{r['name']}, {n:,} × {width}",
                f"{r['hit'] * 1e6:.1f}",
                f"{t['ours'] * 1e3:.3f}",
                f"{t['sklearn'] * 1e3:.3f}",
                f"{t['numpy'] * 1e3:.3f}",
                f"{t['ours'] / t['sklearn']:.2f}×",
                f"{t['ours'] / t['numpy']:.2f}×",
                f"{r['transform_max_difference']:.0e}",
            )
        )
    return [
        (
            f"vocabulary basis, fit of {SPECTRUM} components, ms (median; ratio = ours / baseline)",
            ("table", "first call", "ours refit", "PCA default", "PCA arpack", "/ default", "/ arpack"),
            fits,
        ),
        (
            "vocabulary basis, cache hit (µs) and a 512-token update projected into it (ms, median)",
            ("update", "cache hit µs", "ours", "sklearn", "numpy", "/ sklearn", "/ numpy", "max |Δ|"),
            lookups,
        ),
    ]


def main() -> None:
    from bench.report import table

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fits", type=int, default=5, help="timed fits of each kind (median)")
    parser.add_argument("--transforms", type=int, default=500, help="timed transforms of each kind (median)")
    parser.add_argument("--tables", default=",".join(TABLES), help=f"comma-separated, of {', '.join(TABLES)}")
    args = parser.parse_args()
    for title, header, rows in report(measure(tuple(args.tables.split(",")), args.fits, args.transforms)):
        table(title, header, rows)


if __name__ == "__main__":
    main()
