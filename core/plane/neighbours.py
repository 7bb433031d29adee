"""Nearest vocabulary entries by cosine, measured in the full-dimensional space.

Two points close together in the PCA plane may be far apart in 384 dimensions, and the
other way round; the neighbours listed beside the plot are therefore found in the full
space. Tables are large (GloVe: 400,003 × 50, BERT: 30,522 × 384) and differ per session
(an upload, a trained copy), so nothing is precomputed globally: each search walks the
table in chunks, keeps a running top k, and never holds more than one chunk's temporaries
(a table searched again and again — every keystroke with a token selected — keeps its row
norms while it lives: ``in_table``, ``table_norms``).

Ranking is exact and deterministic: highest cosine first, ties broken by the lower id; the
chunk size changes only the memory used (and, at most, the last bit of a float32 dot
product where BLAS blocks a chunk differently).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from core.model.embedding import PatchedEmbedding
from core.model.measures import checked_matrix, checked_vector, unit_rows
from core.view.options import LIMITS

K_MAX = LIMITS["k"][1]  # neighbours per search at most: a list for people to read, not a database
CHUNK_ROWS = 65_536  # rows per step of `nearest`: its temporaries are (rows,), the chunk itself a view
# values per step of `output_neighbours`, which must build each chunk's outputs: 1 MB of
# float32 stays in a core's cache through the eight passes over it; chunks that outgrow the
# cache are markedly slower on both tables
CHUNK_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class Neighbour:
    """One vocabulary entry and its cosine to the query."""

    id: int
    cosine: float


def nearest(table: np.ndarray, query: np.ndarray, k: int = 10, exclude: Collection[int] = (), *,
            row_norms: np.ndarray | None = None, chunk_rows: int = CHUNK_ROWS) -> tuple[Neighbour, ...]:
    """The ``k`` rows of ``table`` (V × d) most similar to ``query`` (d,) by cosine, highest first.

    exclude: ids never returned, e.g. the query's own id and [CLS]/[SEP]; ids outside the
        table are ignored, so one list of special ids serves every table.
    row_norms: (V,) the Euclidean norm of each row, if the caller has them cached (see
        ``table_norms``); otherwise each chunk's norms are computed as it is visited.
    chunk_rows: rows per step; the memory used depends on it, the ranking does not.

    A zero row (or a zero query) has no direction: its cosine is 0. Rows whose cosine is
    not a finite number (a table with NaN in it) are left out. When fewer than ``k`` rows
    remain, all of them are returned.
    """
    table, query, k, chunk_rows = _checked(table, query, k, chunk_rows)
    if row_norms is not None:
        row_norms = np.asarray(row_norms)
        if row_norms.shape != (len(table),):
            raise ValueError(f"row_norms has shape {row_norms.shape}; it must hold one norm per table row, "
                             f"({len(table)},)")
    work = _working_dtype(table)
    unit = unit_rows(query[None, :])[0].astype(work)
    best = _TopK(k)
    for start, stop, keep in _chunks(len(table), chunk_rows, exclude):
        rows = table[start:stop]
        dots = rows.astype(work, copy=False) @ unit  # (rows,)
        if row_norms is None:
            cosines = _cosines(rows, dots, unit)
        else:
            norms = row_norms[start:stop]
            cosines = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
        best.add(start, cosines, keep)
    return best.neighbours()


def table_norms(table: np.ndarray, chunk_rows: int = CHUNK_ROWS) -> np.ndarray:
    """The Euclidean norm of every row of ``table``, (V,) float64, to pass to ``nearest`` as ``row_norms``.

    Worth caching once per table when the same table is searched on every keystroke: the
    norms are about half of a search's work, on BERT's table and GloVe's alike.
    """
    table = checked_matrix(table, "the table", finite=False)
    norms = np.empty(len(table))
    for start in range(0, len(table), chunk_rows):
        rows = table[start:start + chunk_rows]
        norms[start:start + len(rows)] = _norms(rows)
    return norms


def output_neighbours(table: np.ndarray, position_vector: np.ndarray, segment_vector: np.ndarray,
                      gamma: np.ndarray, beta: np.ndarray, eps: float, query_output: np.ndarray,
                      k: int = 10, exclude: Collection[int] = (), *,
                      chunk_rows: int | None = None) -> tuple[Neighbour, ...]:
    """The vocabulary entries whose LayerNorm *output* here is closest by cosine to ``query_output``.

    Answers "which other words would land near this one at this position, in this segment,
    after normalisation": every row t of the token table is put through the same layer as
    the query token, ``LayerNorm(t + position_vector + segment_vector)`` (population
    variance, this ``eps``, then × γ + β, as ``nn.LayerNorm`` does), and the outputs are
    ranked by cosine. Normalisation can bring together words whose token vectors differ
    mostly in length or in mean, so this list can differ from ``nearest`` on the table.

    The outputs are built one chunk at a time (``chunk_rows`` rows, by default about
    ``CHUNK_ELEMENTS`` values), never for the whole table. Other arguments as for ``nearest``.
    """
    d = checked_matrix(table, "the table", finite=False).shape[1]
    if chunk_rows is None:
        chunk_rows = max(1, CHUNK_ELEMENTS // max(d, 1))
    table, query_output, k, chunk_rows = _checked(table, query_output, k, chunk_rows)
    if d == 0:
        raise ValueError("the table's vectors have 0 dimensions; LayerNorm needs at least 1")
    position_vector, segment_vector, gamma, beta = (checked_vector(value, d, name) for value, name in (
        (position_vector, "position_vector"), (segment_vector, "segment_vector"),
        (gamma, "gamma (γ)"), (beta, "beta (β)")))
    if isinstance(eps, bool) or not isinstance(eps, int | float | np.integer | np.floating) or not 0 <= eps < np.inf:
        raise ValueError(f"eps must be a finite number, 0 or more (BERT uses 1e-12), not {eps!r}")

    work = _working_dtype(table)
    shift = (position_vector + segment_vector).astype(work)  # (d,) the same for every row
    gamma, beta = gamma.astype(work), beta.astype(work)
    unit = unit_rows(query_output[None, :])[0].astype(work)
    buffer = np.empty((min(chunk_rows, len(table)), d), dtype=work)  # reused: one chunk's outputs at a time
    best = _TopK(k)
    for start, stop, keep in _chunks(len(table), chunk_rows, exclude):
        out = buffer[:stop - start]
        np.add(table[start:stop], shift, out=out)  # (rows, d) what LayerNorm receives
        out -= out.mean(axis=1, keepdims=True)
        variance = np.einsum("ij,ij->i", out, out) / d  # population variance, as LayerNorm uses
        scale = variance + work.type(eps)
        # with eps = 0 a constant vector has no spread to divide by; it centres to zero and stays there
        np.sqrt(scale, out=scale)
        np.divide(1, scale, out=scale, where=scale > 0)
        out *= scale[:, None]
        out *= gamma
        out += beta
        best.add(start, _cosines(out, out @ unit, unit), keep)
    return best.neighbours()


def nearest_patched(base: np.ndarray, rows: np.ndarray, values: np.ndarray, query: np.ndarray, k: int = 10,
                    exclude: Collection[int] = (), **options) -> tuple[Neighbour, ...]:
    """``nearest`` in ``base`` (V × d) with the rows ``rows`` replaced by ``values`` (P × d).

    A trained session's token table is the shared table plus the rows training changed
    (``core.model.embedding.PatchedEmbedding``); searching the two apart and merging the lists
    gives the same ranking without building the whole table for every search.
    """
    return _patched(nearest, base, rows, values, (query,), k, exclude, options)


def output_neighbours_patched(base: np.ndarray, rows: np.ndarray, values: np.ndarray, position_vector: np.ndarray,
                              segment_vector: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float,
                              query_output: np.ndarray, k: int = 10, exclude: Collection[int] = (),
                              **options) -> tuple[Neighbour, ...]:
    """``output_neighbours`` in ``base`` with the rows ``rows`` replaced by ``values``, as ``nearest_patched``."""
    args = (position_vector, segment_vector, gamma, beta, eps, query_output)
    return _patched(output_neighbours, base, rows, values, args, k, exclude, options)


def in_table(tokens: nn.Embedding | PatchedEmbedding, query: np.ndarray, k: int = 10, exclude: Collection[int] = (),
             *, first: int | None = None) -> tuple[Neighbour, ...]:
    """``nearest`` over a session's token table as its layer holds it: a shared table as it is,
    a trained one (``PatchedEmbedding``) as its shared table and its own rows, never built whole
    (for GloVe that would be 80 MB per search). ``first``: only the first rows are searched."""
    base, rows, values = _parts(tokens, first)
    shared = tokens.base if isinstance(tokens, PatchedEmbedding) else tokens.weight
    norms = _shared_norms(shared)[:first] if not shared.requires_grad else None  # a table in training moves
    if rows is None:
        return nearest(base, query, k, exclude=exclude, row_norms=norms)
    return nearest_patched(base, rows, values, query, k, exclude=exclude, row_norms=norms)


# a shared table -> its rows' norms: the same table is searched on every keystroke with a token
# selected, and the norms are about half of a search's work (`table_norms`)
# (by the tensor's id, dropped when it dies: a tensor's == compares values, so it cannot be a weak key)
_NORMS: dict[int, np.ndarray] = {}
_NORMS_LOCK = threading.Lock()


def _shared_norms(table: torch.Tensor) -> np.ndarray:
    """`table_norms` of a read-only table, computed once while the table lives."""
    key = id(table)
    with _NORMS_LOCK:
        norms = _NORMS.get(key)
    if norms is None:
        norms = table_norms(table.detach().numpy())
        with _NORMS_LOCK:
            if key not in _NORMS:
                weakref.finalize(table, _NORMS.pop, key, None)
            _NORMS[key] = norms
    return norms


def outputs_in_table(tokens: nn.Embedding | PatchedEmbedding, position_vector: np.ndarray,
                     segment_vector: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float,
                     query_output: np.ndarray, k: int = 10, exclude: Collection[int] = ()) -> tuple[Neighbour, ...]:
    """``output_neighbours`` over a session's token table, as ``in_table`` reads it."""
    base, rows, values = _parts(tokens)
    args = (position_vector, segment_vector, gamma, beta, eps, query_output)
    if rows is None:
        return output_neighbours(base, *args, k, exclude=exclude)
    return output_neighbours_patched(base, rows, values, *args, k, exclude=exclude)


def _parts(tokens: nn.Embedding | PatchedEmbedding, first: int | None = None
           ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A token table's rows as arrays, read only: (the table, None, None), or for a trained one
    (its shared table, the ids it changed, their rows)."""
    if not isinstance(tokens, PatchedEmbedding):
        return tokens.weight.detach().numpy()[:first], None, None
    rows, values = tokens.rows.numpy(), tokens.values.detach().numpy()
    if first is not None:
        rows, values = rows[rows < first], values[rows < first]
    return tokens.base.numpy()[:first], rows, values


def _patched(search, base, rows, values, args, k, exclude, options) -> tuple[Neighbour, ...]:
    """The best ``k`` of the unchanged rows of ``base`` and of ``values``, ranked as one table."""
    rows = np.asarray(rows, dtype=np.int64)
    excluded = {int(i) for i in exclude}
    found = search(base, *args, k, excluded | set(rows.tolist()), **options)
    if len(rows):
        skip = [slot for slot, id_ in enumerate(rows.tolist()) if id_ in excluded]
        options = {name: value for name, value in options.items() if name != "row_norms"}  # norms are base's
        found += tuple(Neighbour(int(rows[n.id]), n.cosine) for n in search(values, *args, k, skip, **options))
    return tuple(sorted(found, key=lambda n: (-n.cosine, n.id))[:k])


class _TopK:
    """The k best (cosine, id) pairs seen so far: higher cosine first, then lower id."""

    def __init__(self, k: int):
        self.k = k
        self.ids = np.empty(0, dtype=np.int64)
        self.cosines = np.empty(0, dtype=np.float64)

    def add(self, start: int, cosines: np.ndarray, keep: np.ndarray | None) -> None:
        """Merge one chunk's cosines (row i of the chunk is id start + i); ``keep`` masks excluded rows."""
        valid = np.isfinite(cosines)
        if keep is not None:
            valid &= keep
        candidates = np.flatnonzero(valid)
        values = cosines[candidates]
        if len(values) > self.k:
            # every value tied with the k-th largest stays a candidate, so the lower ids
            # win ties whatever the chunk boundaries
            threshold = np.partition(values, len(values) - self.k)[len(values) - self.k]
            chosen = values >= threshold
            candidates, values = candidates[chosen], values[chosen]
        ids = np.concatenate([self.ids, candidates + start])
        values = np.concatenate([self.cosines, values.astype(np.float64)])
        order = np.lexsort((ids, -values))[:self.k]
        self.ids, self.cosines = ids[order], values[order]

    def neighbours(self) -> tuple[Neighbour, ...]:
        cosines = np.clip(self.cosines, -1.0, 1.0)
        return tuple(Neighbour(int(i), float(c)) for i, c in zip(self.ids, cosines, strict=True))


def _chunks(rows: int, chunk_rows: int, exclude: Collection[int]) -> Iterator[tuple[int, int, np.ndarray | None]]:
    """(start, stop, keep) for each chunk; keep is None when nothing in it is excluded."""
    excluded = np.unique(np.fromiter((i for i in map(int, exclude) if 0 <= i < rows), dtype=np.int64))
    for start in range(0, rows, chunk_rows):
        stop = min(start + chunk_rows, rows)
        inside = excluded[(excluded >= start) & (excluded < stop)]
        keep = None
        if len(inside):
            keep = np.ones(stop - start, dtype=bool)
            keep[inside - start] = False
        yield start, stop, keep


def _cosines(rows: np.ndarray, dots: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """``dots`` (rows @ unit) divided by the rows' norms; zero rows get 0, rows with NaN or ∞ get NaN.

    The fast path squares the values in their own precision, which in float32 underflows
    below about 1e-19 and overflows above about 1e19; those (rare) rows are recomputed from
    values rescaled by their largest entry, so a tiny but nonzero row keeps its direction
    instead of counting as a zero row.
    """
    squares = np.einsum("ij,ij->i", rows, rows)
    info = np.finfo(squares.dtype)
    safe = np.isfinite(squares) & (squares > info.tiny / info.eps)
    cosines = np.zeros_like(dots)
    np.divide(dots, np.sqrt(squares), out=cosines, where=safe)
    suspect = np.flatnonzero(~safe)
    if len(suspect):
        subset = rows[suspect]
        finite = np.isfinite(subset).all(axis=1)
        cosines[suspect] = np.where(finite, unit_rows(np.where(finite[:, None], subset, 0))
                                    @ unit.astype(np.float64), np.nan)
    return cosines


def _norms(rows: np.ndarray) -> np.ndarray:
    """Row norms in float64, from values rescaled by each row's largest entry (no under- or overflow)."""
    rows = np.asarray(rows, dtype=np.float64)
    largest = np.abs(rows).max(axis=1) if rows.shape[1] else np.zeros(len(rows))
    scaled = np.divide(rows, largest[:, None], out=np.zeros_like(rows), where=largest[:, None] > 0)
    return largest * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))


def _working_dtype(table: np.ndarray) -> np.dtype:
    """float32 for float32 (and smaller) tables, as the layer computes; float64 tables stay float64."""
    return np.dtype(np.result_type(table.dtype, np.float32))


def _checked(table: np.ndarray, query: np.ndarray, k: int, chunk_rows: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The arguments every search shares, checked, or a ValueError saying what is allowed."""
    table = checked_matrix(table, "the table", finite=False)
    query = checked_vector(query, table.shape[1], "the query vector")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= K_MAX:
        raise ValueError(f"k is {k!r}; ask for a whole number of neighbours from 1 to {K_MAX}")
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int | np.integer) or chunk_rows < 1:
        raise ValueError(f"chunk_rows is {chunk_rows!r}; it must be a whole number of rows, 1 or more")
    return table, query, int(k), int(chunk_rows)
