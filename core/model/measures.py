"""Numbers computed from one update's vectors: cosines, repeated words, LayerNorm's effect.

The 2-D picture hides most of a 384-dimensional space; these measures are taken in the
full space, so the page can say what the plane cannot show: how alike two tokens really
are, that one word gets a different output vector at every position, and what LayerNorm
did to each vector's mean and spread. Plain numpy in, plain numbers out (no torch), so the
figures and the tests use them without the model.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

REPEATED_LIMIT = 50  # pairs listed at most: a page lists them, and 500 "the"s make 124,750 pairs


def checked_matrix(X: np.ndarray, name: str = "the vectors", *, finite: bool = True) -> np.ndarray:
    """``X`` as a 2-D float array (finite unless ``finite=False``), or a ValueError saying what
    is wrong and what is allowed. The neighbour search passes ``finite=False``: it leaves
    rows with NaN out of its ranking instead of refusing a whole vocabulary for one row."""
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n vectors × d dimensions), "
                         f"got {X.ndim}-D with shape {X.shape}")
    if not (np.issubdtype(X.dtype, np.floating) or np.issubdtype(X.dtype, np.integer)):
        raise ValueError(f"{name} must hold numbers, got dtype {X.dtype}")
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(np.float64)
    if finite and not np.isfinite(X).all():
        raise ValueError(f"{name} contain NaN or infinite values; only finite numbers are allowed")
    return X


def unit_rows(X: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (float64); zero rows stay zero.

    Every row is first divided by its largest absolute entry, so float32 values as small
    as 1e-45 or as large as 1e38 keep their direction: squaring them directly would
    underflow to 0 or overflow to infinity, and a norm of 0 or ∞ turns a cosine into NaN.
    """
    X = np.asarray(X, dtype=np.float64)
    scale = np.abs(X).max(axis=1, keepdims=True) if X.shape[1] else np.zeros((len(X), 1))
    scaled = np.divide(X, scale, out=np.zeros_like(X), where=scale > 0)
    norm = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]
    return np.divide(scaled, norm, out=np.zeros_like(scaled), where=norm > 0)


def cosine_matrix(X: np.ndarray) -> np.ndarray:
    """Cosine similarity of every pair of rows of ``X`` (n × d), as an (n, n) float32 matrix.

    A zero vector has no direction, so its similarity to every *other* vector is 0 rather
    than NaN; the diagonal is 1.0 for every row, zero rows included, because a vector is
    always identical to itself (and a heatmap with one blank diagonal cell would look like
    a bug). Values are clipped to [-1, 1], which rounding can otherwise leave by 1e-7.
    """
    unit = unit_rows(checked_matrix(X))
    cos = np.clip(unit @ unit.T, -1.0, 1.0).astype(np.float32)
    np.fill_diagonal(cos, 1.0)
    return cos


@dataclass(frozen=True)
class RepeatedToken:
    """One word met twice: how alike its two vectors are, at two different positions."""

    token: str
    positions: tuple[int, int]  # (earlier, later) indices in the sequence
    cosine: float


def repeated_tokens(tokens: Sequence[str], vectors: np.ndarray, skip: Sequence[bool] | None = None,
                    limit: int = REPEATED_LIMIT) -> tuple[RepeatedToken, ...]:
    """The cosine between the vectors of each pair of occurrences of the same token string.

    The token table gives one word one vector, yet after the position and segment vectors
    are added (and LayerNorm applied) the same word gets a different vector at every
    position: pass the outputs here and a cosine below 1 shows exactly that. Entries whose
    ``skip`` is True ([CLS], the [SEP]s) are left out, since they repeat by construction.
    Pairs come ordered by their first position, then their second; at most ``limit``.
    """
    vectors = checked_matrix(vectors)
    if len(tokens) != len(vectors):
        raise ValueError(f"there are {len(tokens)} tokens but {len(vectors)} vectors; "
                         "each token needs exactly one vector")
    if skip is not None and len(skip) != len(tokens):
        raise ValueError(f"skip has {len(skip)} entries but there are {len(tokens)} tokens; "
                         "give one True/False per token, or None")
    if isinstance(limit, bool) or not isinstance(limit, int | np.integer) or limit < 0:
        raise ValueError(f"limit must be a whole number of pairs, 0 or more, not {limit!r}")
    pairs = list(_pairs(tokens, skip, int(limit)))
    if not pairs:
        return ()
    unit = unit_rows(vectors)
    first, second = np.array(pairs).T
    cosines = np.clip(np.einsum("ij,ij->i", unit[first], unit[second]), -1.0, 1.0)
    return tuple(RepeatedToken(tokens[i], (int(i), int(j)), float(c))
                 for i, j, c in zip(first, second, cosines, strict=True))


def _pairs(tokens: Sequence[str], skip: Sequence[bool] | None, limit: int) -> Iterator[tuple[int, int]]:
    """(i, j) with i < j and tokens[i] == tokens[j], in order, stopping after ``limit``.

    Only the pairs kept are generated: a sequence of 512 identical tokens has 130,816.
    """
    where: dict[str, list[int]] = {}
    for index, token in enumerate(tokens):
        if skip is None or not skip[index]:
            where.setdefault(token, []).append(index)
    # each occurrence with the places of the same token after it; slices are taken only
    # for the occurrences reached before the limit
    later = {index: (places, rank) for places in where.values() if len(places) > 1
             for rank, index in enumerate(places)}
    count = 0
    for i in sorted(later):
        places, rank = later[i]
        for j in places[rank + 1:]:
            if count == limit:
                return
            yield i, j
            count += 1


@dataclass(frozen=True, eq=False)  # eq would compare arrays element-wise and fail; identity is enough
class LayerNormStats:
    """What LayerNorm did to each token's vector, and the learned scale and shift it used.

    Means and standard deviations are taken across the d dimensions of each vector, as
    LayerNorm takes them; the standard deviation is the population one (ddof=0), the one
    LayerNorm divides by. Before: the summed vectors; after: the layer's outputs.
    """

    mean_before: np.ndarray  # (L,)
    std_before: np.ndarray   # (L,)
    mean_after: np.ndarray   # (L,)
    std_after: np.ndarray    # (L,)
    gamma: np.ndarray        # (d,) the learned scale, γ
    beta: np.ndarray         # (d,) the learned shift, β

    def describe(self) -> str:
        """One line for the page: what normalising changed, and why the result is not exactly (0, 1).

        After LayerNorm each vector has mean 0 and std 1 *before* γ and β are applied; the
        output's mean and std therefore follow γ and β, which is why β's mean is quoted
        beside the mean after.
        """
        if not len(self.std_before):
            return "no tokens yet"
        return (f"before: mean {_span(self.mean_before)}, std {_span(self.std_before)}; "
                f"after: mean {_span(self.mean_after)} (β̄ = {_number(self.beta.mean())}), "
                f"std {_span(self.std_after)}; "
                f"γ ranges {_number(self.gamma.min())} to {_number(self.gamma.max())}, "
                f"β ranges {_number(self.beta.min())} to {_number(self.beta.max())}")


def layernorm_stats(summed: np.ndarray, output: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> LayerNormStats:
    """Per-token mean and std of the summed vectors and of LayerNorm's outputs, with γ and β.

    summed, output: (L, d), the vectors LayerNorm received and returned.
    gamma, beta: (d,), its weight and bias.
    """
    summed, output = checked_matrix(summed, "the summed vectors"), checked_matrix(output, "the outputs")
    if summed.shape != output.shape:
        raise ValueError(f"the summed vectors have shape {summed.shape} but the outputs {output.shape}; "
                         "LayerNorm returns one vector of the same width per input")
    d = summed.shape[1]
    if d == 0:
        raise ValueError("the vectors have 0 dimensions; LayerNorm needs at least 1")
    gamma, beta = (checked_vector(value, d, name) for value, name in ((gamma, "gamma (γ)"), (beta, "beta (β)")))
    before, after = summed.astype(np.float64), output.astype(np.float64)
    return LayerNormStats(
        mean_before=before.mean(axis=1).astype(np.float32),
        std_before=before.std(axis=1).astype(np.float32),
        mean_after=after.mean(axis=1).astype(np.float32),
        std_after=after.std(axis=1).astype(np.float32),
        gamma=gamma.astype(np.float32),
        beta=beta.astype(np.float32),
    )


def checked_vector(value: np.ndarray, d: int, name: str) -> np.ndarray:
    """``value`` as a finite (d,) float64 vector, or a ValueError naming the expected shape."""
    value = np.asarray(value)
    if value.shape != (d,):
        raise ValueError(f"{name} has shape {value.shape}; it must have one entry per dimension, ({d},)")
    if not np.isfinite(value.astype(np.float64)).all():
        raise ValueError(f"{name} contains NaN or infinite values; only finite numbers are allowed")
    return value.astype(np.float64)


def _number(value: float) -> str:
    """A short number for the page: three decimals at most, no exponent, a true minus sign (−).

    Rounding first makes float32 crumbs such as 2e-08 read as the 0 they stand for.
    """
    value = round(float(value), 3)
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return "0" if text in ("0", "-0") else text.replace("-", "−")


def _span(values: np.ndarray) -> str:
    """'1.4 (0.9 to 2.1)': the average, then the range, or just the value when all are equal."""
    low, high = _number(values.min()), _number(values.max())
    if low == high:
        return low
    return f"{_number(values.mean())} ({low} to {high})"
