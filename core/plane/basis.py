"""Which plane the vectors are drawn in, and the vocabulary drawn faintly behind them.

Three bases, because each answers a different question:

* **this sentence** — PCA of the vectors on screen, fitted anew by the pipeline on every update: the plane
  that spreads *these* tokens best, but points jump as the text changes;
* **whole vocabulary** — PCA of every row of the token table: fitted once per table and
  cached (`vocabulary_basis`), so typing only adds and moves the typed tokens, and the
  vocabulary can be drawn behind them in the same plane;
* **frozen** — the sentence plane of one moment, kept while the lecturer types on.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from core.model.embedding import PatchedEmbedding
from core.model.projection import PCAProjection
from core.model.tokenizer import WordLevelTokenizer, WordPieceTokenizer
from core.view.options import BASES  # noqa: F401 - re-exported

SPECTRUM = 10  # components the explained-variance bar shows
# vectors (5 per token) up to which a sentence's plane also measures those ten components:
# arpack takes several times as long to find 10 components of a long input as to find 2, a
# cost paid on every keystroke; below this many vectors the difference is small
SPECTRUM_ROWS = 1_000


@dataclass(frozen=True)
class VocabularyBasis:
    projection: PCAProjection
    seconds: float  # how long the fit took, for the page: it is the one slow step


_CACHE: weakref.WeakKeyDictionary[nn.Embedding, VocabularyBasis] = weakref.WeakKeyDictionary()
# one lock per table, so a class choosing "whole vocabulary" at once fits each table once, a
# fit of one table never waits for another's, and a cache hit takes no lock at all
_FITTING: weakref.WeakKeyDictionary[nn.Embedding, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS = threading.Lock()  # held only to find or make a table's lock


def vocabulary_basis(table: nn.Embedding | PatchedEmbedding, *, refit: bool = False,
                     run: Callable[..., VocabularyBasis] | None = None) -> VocabularyBasis:
    """PCA of every row of ``table``, fitted once per table and then cached.

    Tables are shared between sessions, so the cache is keyed by the table itself and forgets
    it when the last session using it is gone (a weak reference: trained tables come and go).

    ``refit`` fits again even when cached, for the page's Refit button: the answer is the
    same (the fit is deterministic), but the page reports the time it takes. ``run(fit_vocabulary,
    table)`` does the fit (`core.process.offload.Offload.call` does it in another process); by default here.
    """
    if not refit and (found := _CACHE.get(table)) is not None:
        return found
    with _LOCKS:
        lock = _FITTING.setdefault(table, threading.Lock())
    with lock:
        if not refit and (found := _CACHE.get(table)) is not None:
            return found  # fitted by another request while this one waited
        basis = run(fit_vocabulary, table) if run is not None else fit_vocabulary(table)
        _CACHE[table] = basis
        return basis


def fit_vocabulary(table: nn.Embedding | PatchedEmbedding) -> VocabularyBasis:
    """The fit itself, uncached: a module-level function, so another process can run it.

    The covariance solver makes one pass over the table (BERT's 30,522 × 384, GloVe's
    400,003 × 50) and an eigendecomposition of d × d: several times faster than arpack on
    BERT's table (``bench/vocabulary_basis.py`` prints both).
    """
    start = time.perf_counter()
    # (V, d), read, never written; a trained table is built whole for the fit and dropped
    rows = table.weight.detach().numpy()
    projection = PCAProjection(svd_solver="covariance_eigh", n_spectrum=SPECTRUM).fit(rows)
    return VocabularyBasis(projection, time.perf_counter() - start)


def is_cached(table: nn.Embedding) -> bool:
    return table in _CACHE


@dataclass(frozen=True)
class Background:
    """The vocabulary's most frequent entries, placed in one plane."""

    ids: np.ndarray  # (N,) int32 rows of the token table
    labels: tuple[str, ...]  # (N,) what each row stands for
    points: np.ndarray  # (N, 2) float32

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def extent(self) -> np.ndarray:
        """Its lowest and highest corner (2, 2) (NaN when empty): the page draws it behind the
        tokens, so the plot's axes reach as far, and the labels are fitted to that scale."""
        if not len(self.points):
            return np.full((2, 2), np.nan)
        return np.array([self.points.min(axis=0), self.points.max(axis=0)])


# table -> projection -> {words: Background}: the page draws it once per plane, and each redraw
# of the tokens fits its labels to its extent; both read this one, and it forgets what is gone
_BACKGROUNDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_BACKGROUNDS_LOCK = threading.Lock()


def ranked_vocabulary(
    tokenizer: WordPieceTokenizer | WordLevelTokenizer | None, rows: int
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Row ids of the table, most frequent first, and the word each one is.

    A random word-level table has no vocabulary of its own (the typed text assigns its rows),
    so its rows are labelled by number.
    """
    if tokenizer is None:
        return np.arange(rows, dtype=np.int32), tuple(f"row {i}" for i in range(rows))
    ids = np.asarray([i for i in tokenizer.ranked_ids() if i < rows], dtype=np.int32)
    names = tokenizer.tokens_by_id
    return ids, tuple(names[i] for i in ids)


def background(
    tokenizer: WordPieceTokenizer | WordLevelTokenizer | None,
    table: nn.Embedding | PatchedEmbedding,
    projection: PCAProjection,
    n: int,
) -> Background:
    """The ``n`` most frequent vocabulary entries' token vectors in ``projection``'s plane
    (computed once per table, plane and ``n``, then kept while both live)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"the background shows a whole number of words, 0 or more, not {n!r}.")
    with _BACKGROUNDS_LOCK:
        known = _BACKGROUNDS.get(table, {}).get(projection, {}).get(n)
    if known is not None:
        return known
    ids, labels = ranked_vocabulary(tokenizer, table.num_embeddings)
    ids, labels = ids[:n], labels[:n]
    with torch.no_grad():  # a lookup, not .weight: a trained (patched) table is never built whole here
        rows = table(torch.from_numpy(ids).long()).numpy()  # (N, d)
    points = projection.transform(rows).astype(np.float32) if len(ids) else np.zeros((0, 2), np.float32)
    found = Background(ids, labels, points)
    with _BACKGROUNDS_LOCK:
        _BACKGROUNDS.setdefault(table, weakref.WeakKeyDictionary()).setdefault(projection, {})[n] = found
    return found

