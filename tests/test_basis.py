"""core.plane.basis: the whole-vocabulary PCA plane (its cache, its maths, its thread safety) and the
vocabulary drawn behind the tokens (which rows, in which order, under which labels, where)."""

import gc
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from torch import nn

import core.plane.basis
from core.model.projection import PCAProjection
from core.plane.basis import SPECTRUM, background, is_cached, ranked_vocabulary, vocabulary_basis
from core.tables.presets import bert_source, glove_source
from tests.waiting import eventually

# BERT uncased reserves ids 0-998: [PAD], [unused0]…[unused993], [UNK], [CLS], [SEP], [MASK]
BERT_RESERVED = 999


@pytest.fixture(scope="module")
def bert():
    return bert_source()


@pytest.fixture(scope="module")
def glove():
    return glove_source()


def seeded_table(rows: int, width: int, seed: int) -> nn.Embedding:
    table = nn.Embedding(rows, width)
    with torch.no_grad():
        table.weight.normal_(generator=torch.Generator().manual_seed(seed))
    return table.requires_grad_(False)


def numpy_pca(X: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, sign-fixed axes, explained-variance ratios) of the rows of X, in float64, by SVD."""
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    _, s, vt = np.linalg.svd(X - mean, full_matrices=False)
    variance = s**2
    # the projection's convention: each axis's largest entry is positive
    largest = vt[np.arange(len(vt)), np.abs(vt).argmax(axis=1)]
    return mean, vt * np.sign(largest)[:, None], variance / variance.sum()


def category(token: str) -> int:
    """0 for a whole word, 1 for a ## piece, 2 for a single character."""
    return 2 if len(token) == 1 else 1 if token.startswith("##") else 0


# ---------------------------------------------------------------- the vocabulary basis


def test_second_call_is_a_cache_hit_and_refit_gives_the_same_plane():
    table = seeded_table(300, 12, seed=1)
    assert not is_cached(table)
    first = vocabulary_basis(table)
    assert is_cached(table)
    assert vocabulary_basis(table) is first
    again = vocabulary_basis(table, refit=True)
    assert again is not first and again.projection is not first.projection
    # the fit is deterministic: refitting is only for the page's timing
    assert np.array_equal(again.projection.components_, first.projection.components_)
    assert np.array_equal(again.projection.spectrum_, first.projection.spectrum_)
    # the refit replaces the cached entry
    assert vocabulary_basis(table) is again


@pytest.mark.parametrize(("rows", "width"), [(200, 16), (40, 6)], ids=["covariance-solver", "full-solver"])
def test_vocabulary_plane_is_the_pca_of_the_whole_table(rows, width):
    # width 16 > SPECTRUM: the covariance solver fits 10 of 16 axes; width 6: every axis, exactly
    table = seeded_table(rows, width, seed=rows)
    projection = vocabulary_basis(table).projection
    X = table.weight.numpy()
    mean, axes, ratio = numpy_pca(X)

    assert len(projection.spectrum_) == min(SPECTRUM, width)
    np.testing.assert_allclose(projection.spectrum_, ratio[:SPECTRUM], atol=1e-6)
    np.testing.assert_allclose(projection.explained_variance_ratio_, ratio[:2], atol=1e-6)
    np.testing.assert_allclose(projection.mean_, mean, atol=1e-6)
    np.testing.assert_allclose(projection.components_, axes[:2], atol=1e-5)
    np.testing.assert_allclose(projection.transform(X), (X - mean) @ axes[:2].T, atol=1e-4)
    assert projection.n_samples_ == rows and projection.n_features_ == width


def test_bert_vocabulary_plane_is_orthonormal_with_a_falling_spectrum(bert):
    projection = vocabulary_basis(bert.model.tok_embed).projection
    components = projection.components_
    assert components.shape == (2, 384)
    np.testing.assert_allclose(components @ components.T, np.eye(2), atol=1e-6)
    spectrum = projection.spectrum_
    assert len(spectrum) == SPECTRUM == 10
    assert (np.diff(spectrum) <= 0).all() and (spectrum > 0).all()
    assert spectrum.sum() < 1
    np.testing.assert_array_equal(spectrum[:2], projection.explained_variance_ratio_)
    assert projection.n_samples_ == 30522


def test_the_cache_forgets_a_table_that_is_garbage_collected():
    gc.collect()
    before = len(core.plane.basis._CACHE)
    table = seeded_table(64, 4, seed=3)
    vocabulary_basis(table)
    assert len(core.plane.basis._CACHE) == before + 1
    gone = weakref.ref(table)
    del table
    gc.collect()
    assert gone() is None  # the cache held no strong reference to it
    assert len(core.plane.basis._CACHE) == before


def test_concurrent_first_calls_fit_the_table_once(monkeypatch):
    fits, missed = [], []
    original = PCAProjection.fit

    class Counted:
        """The lock a call takes to find its table's lock, once it found no cached fit."""

        def __init__(self) -> None:
            self.lock = threading.Lock()

        def __enter__(self):
            missed.append(threading.get_ident())
            return self.lock.__enter__()

        def __exit__(self, *raised):
            return self.lock.__exit__(*raised)

    def counting_fit(self, X, y=None):
        fits.append(threading.get_ident())
        # the fit goes on once every thread has missed the cache and goes for the table's lock
        assert eventually(lambda: len(missed) == 4)
        return original(self, X, y)

    monkeypatch.setattr(core.plane.basis, "_LOCKS", Counted())
    monkeypatch.setattr(core.plane.basis.PCAProjection, "fit", counting_fit)
    table = seeded_table(500, 8, seed=4)
    start = threading.Barrier(4)

    def first_call(_):
        start.wait()
        return vocabulary_basis(table)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(first_call, range(4)))
    assert len(fits) == 1
    assert all(result is results[0] for result in results)


# ---------------------------------------------------------------- ranked vocabulary


def test_wordpiece_ranking_words_then_pieces_then_characters(bert):
    tokenizer = bert.tokenizer
    ids, labels = ranked_vocabulary(tokenizer, bert.model.config.vocab_size)
    assert ids.dtype == np.int32
    assert labels[:5] == ("the", "of", "and", "in", "to")
    assert tokenizer.token_to_id("the") == ids[0] == 1996
    assert labels == tuple(tokenizer.tokens_by_id[i] for i in ids)
    # reserved slots and markers never appear, everything else exactly once
    for marker in ("[PAD]", "[unused0]", "[unused993]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"):
        assert tokenizer.token_to_id(marker) not in set(ids.tolist())
    assert not any(label.startswith("[") and label.endswith("]") for label in labels)
    assert len(ids) == len(set(ids.tolist())) == 30522 - BERT_RESERVED
    # words, then ## pieces, then single characters; the file's order within each
    kinds = np.array([category(label) for label in labels])
    assert (np.diff(kinds) >= 0).all()
    assert set(kinds.tolist()) == {0, 1, 2}
    for kind in (0, 1, 2):
        assert (np.diff(ids[kinds == kind]) > 0).all()
    assert labels[int(np.argmax(kinds == 1))].startswith("##")


def test_wordpiece_ranking_keeps_only_the_rows_a_table_has(bert):
    ids, labels = ranked_vocabulary(bert.tokenizer, 2000)
    assert (ids < 2000).all() and labels[0] == "the"
    assert len(ids) == 2000 - BERT_RESERVED


def test_word_level_ranking_keeps_the_file_order_without_markers(glove):
    tokenizer = glove.tokenizer
    rows = glove.model.config.vocab_size
    assert rows == 400_003
    ids, labels = ranked_vocabulary(tokenizer, rows)
    np.testing.assert_array_equal(ids, np.arange(400_000))
    assert labels[:5] == ("the", ",", ".", "of", "to")
    assert labels == tokenizer.tokens_by_id[:400_000]
    assert not {"[UNK]", "[CLS]", "[SEP]"} & set(labels)


def test_no_tokenizer_labels_rows_by_number():
    ids, labels = ranked_vocabulary(None, 4)
    np.testing.assert_array_equal(ids, [0, 1, 2, 3])
    assert ids.dtype == np.int32
    assert labels == ("row 0", "row 1", "row 2", "row 3")


# ---------------------------------------------------------------- the background


def test_background_places_the_most_frequent_words_in_the_plane(bert):
    table = bert.model.tok_embed
    projection = vocabulary_basis(table).projection
    drawn = background(bert.tokenizer, table, projection, 100)
    ids, labels = ranked_vocabulary(bert.tokenizer, table.num_embeddings)
    assert len(drawn) == 100
    np.testing.assert_array_equal(drawn.ids, ids[:100])
    assert drawn.labels == labels[:100] and drawn.labels[0] == "the"
    assert drawn.points.shape == (100, 2) and drawn.points.dtype == np.float32
    expected = projection.transform(table.weight.numpy()[ids[:100]])
    np.testing.assert_allclose(drawn.points, expected, atol=1e-6)
    # a word's point is its own token row's: "the" at the projection of row 1996
    np.testing.assert_allclose(drawn.points[0], projection.transform(table.weight.numpy()[[1996]])[0], atol=1e-6)


def test_background_of_glove_words(glove):
    table = glove.model.tok_embed
    # any plane will do here; the whole-vocabulary fit of 400,003 rows is the slow step
    projection = PCAProjection().fit(table.weight.numpy()[:1000])
    drawn = background(glove.tokenizer, table, projection, 5)
    assert drawn.labels == ("the", ",", ".", "of", "to")
    np.testing.assert_allclose(drawn.points, projection.transform(table.weight.numpy()[:5]), atol=1e-6)


def test_empty_and_oversized_backgrounds(bert):
    table = bert.model.tok_embed
    projection = vocabulary_basis(table).projection
    empty = background(bert.tokenizer, table, projection, 0)
    assert len(empty) == 0 and empty.labels == ()
    assert empty.points.shape == (0, 2)
    everything = background(bert.tokenizer, table, projection, 100_000)
    assert len(everything) == 30522 - BERT_RESERVED
    assert everything.labels == ranked_vocabulary(bert.tokenizer, 30522)[1]


def test_background_of_a_table_without_vocabulary():
    table = seeded_table(20, 5, seed=5)
    projection = vocabulary_basis(table).projection
    drawn = background(None, table, projection, 100)
    assert len(drawn) == 20
    assert drawn.labels[0] == "row 0" and drawn.labels[-1] == "row 19"
    np.testing.assert_allclose(drawn.points, projection.transform(table.weight.numpy()), atol=1e-6)


@pytest.mark.parametrize("n", [-1, 2.5, True, "10", None])
def test_background_refuses_a_count_that_is_not_a_whole_number(n):
    table = seeded_table(10, 3, seed=6)
    projection = PCAProjection().fit(table.weight.numpy())
    with pytest.raises(ValueError, match="whole number of words"):
        background(None, table, projection, n)


def test_a_sentence_plane_measures_the_spectrum_only_while_it_is_cheap():
    from core.plane.basis import SPECTRUM_ROWS
    from core.plane.pipeline import sentence_projection

    rng = np.random.default_rng(0)
    short = sentence_projection(SPECTRUM_ROWS).fit(rng.standard_normal((SPECTRUM_ROWS, 12)))
    long = sentence_projection(SPECTRUM_ROWS + 1).fit(rng.standard_normal((SPECTRUM_ROWS + 1, 12)))
    assert len(short.spectrum_) == 10 and len(long.spectrum_) == 0
    assert np.allclose(short.spectrum_[:2], short.explained_variance_ratio_)


def test_a_cached_plane_is_read_while_another_table_is_being_fitted():
    """A refit loop must not hold up everyone on the vocabulary plane: a hit takes no lock."""
    import threading

    from torch import nn

    from core.plane import basis

    cached, other = nn.Embedding(50, 4), nn.Embedding(60, 4)
    first = basis.vocabulary_basis(cached)
    with basis._LOCKS:  # what a fit of another table holds while it finds its own lock
        lock = basis._FITTING.setdefault(other, threading.Lock())
    found = {}
    with basis._LOCKS, lock:  # another table is being fitted, and finding its lock, right now
        reader = threading.Thread(target=lambda: found.update(hit=basis.vocabulary_basis(cached)))
        reader.start()
        reader.join(timeout=30)
        assert not reader.is_alive(), "a cache hit waited for another table's fit"
    assert found["hit"] is first
