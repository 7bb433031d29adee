"""Memory bounded by design: what a trained session owns, and what the random-layer cache keeps.

A class shares one server; the README promises that sessions share the preset tables and
that a trained one stores only what training changed. These tests measure that by storage
(tensors not shared with the preset), never by the process's memory, which other tests move.
"""

from __future__ import annotations

import copy
import weakref
from dataclasses import replace

import numpy as np
import pytest
import torch

from core.model.embedding import BertEmbedding, PatchedEmbedding, private_bytes
from core.model.tokenizer import WordLevelTokenizer
from core.model.training import PARTS, Corpus, TrainConfig, train, trainable_copy
from core.plane.neighbours import nearest, nearest_patched, output_neighbours, output_neighbours_patched
from core.tables import presets
from core.tables.presets import LIMITS, MAX_TABLE_BYTES, RANDOM_CACHE_BYTES, Settings, random_source, wordpiece
from core.tables.session import Session

SHORT = TrainConfig(steps=20)
MiB = 2**20


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def full_copy(model: BertEmbedding, frozen=()) -> BertEmbedding:
    """The layer as training copied it before: every trainable table copied whole."""
    modules = {}
    for part, attribute in PARTS.items():
        module = getattr(model, attribute)
        if part not in frozen:
            module = copy.deepcopy(module)
        modules[attribute] = module.requires_grad_(part not in frozen)
    return BertEmbedding.from_modules(**modules).eval()


# a patched table gives the numbers of a full copy


@pytest.mark.parametrize("frozen", [(), ("position", "norm"), ("token",)])
def test_a_patched_table_trains_to_exactly_the_numbers_of_a_full_copy(frozen):
    source = random_source(Settings(d_model=8)).model
    corpus, tokenizer = Corpus.builtin(), wordpiece()
    ours, theirs = trainable_copy(source, frozen), full_copy(source, frozen)
    results = [train(model, corpus, tokenizer, SHORT) for model in (ours, theirs)]
    assert results[0].losses == results[1].losses
    for (name, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items(), strict=True):
        assert torch.allclose(a, b, rtol=0, atol=0), name
    x = torch.tensor([[101, 4937, 2003, 102]])
    assert torch.equal(ours(x, torch.zeros_like(x)), theirs(x, torch.zeros_like(x)))


def test_continued_training_accumulates_rows_and_matches_a_full_copy():
    source = random_source(Settings(d_model=8)).model
    tokenizer = wordpiece()
    first, second = Corpus(("the cat sat on the mat", "a dog ran")), Corpus(("red and blue", "one two three"))
    ours, theirs = trainable_copy(source), full_copy(source)
    for corpus in (first, second):
        train(ours, corpus, tokenizer, SHORT)
        train(theirs, corpus, tokenizer, SHORT)
        ours, theirs = trainable_copy(ours.requires_grad_(False)), full_copy(theirs.requires_grad_(False))
    used = {i for corpus in (first, second) for s in corpus.sentences for i in tokenizer.encode(s).ids}
    assert set(ours.tok_embed.rows.tolist()) == used
    assert torch.equal(ours.tok_embed.weight, theirs.tok_embed.weight)
    assert ours.tok_embed.base.data_ptr() == source.tok_embed.weight.data_ptr()  # still the preset's


def test_a_patched_lookup_is_the_whole_table_lookup():
    base = torch.randn(50, 3)
    original = base.clone()
    table = PatchedEmbedding(base)
    table.write(torch.tensor([2, 7, 49]), torch.ones(3, 3))
    table.write(torch.tensor([7, 10]), torch.full((2, 3), 2.0))
    whole = base.clone()
    whole[[2, 49]], whole[[7, 10]] = 1.0, 2.0
    ids = torch.tensor([[0, 2, 7], [10, 49, 48]])
    assert torch.equal(table(ids), whole[ids]) and torch.equal(table.weight, whole)
    assert table.rows.tolist() == [2, 7, 10, 49]
    assert torch.equal(base, original)  # the shared table is never written
    assert list(table.state_dict()) == ["weight"]
    copied = copy.deepcopy(table)
    assert copied.base.data_ptr() == base.data_ptr() and copied.values.data_ptr() != table.values.data_ptr()


def test_a_table_its_owner_may_still_train_is_copied_not_shared():
    model = BertEmbedding(vocab_size=20, d_model=4)  # trainable: its owner may change it later
    patched = trainable_copy(model).tok_embed
    assert patched.base.data_ptr() != model.tok_embed.weight.data_ptr()
    assert torch.equal(patched.weight, model.tok_embed.weight)


# what a session owns


@pytest.fixture(scope="module")
def bert_session() -> Session:
    return Session.create(source="bert")


def test_a_trained_bert_session_owns_under_12_mb(bert_session):
    trained = bert_session.trained_on(Corpus.builtin(), SHORT)
    owned = private_bytes(trained.model, bert_session.model)
    assert owned < 12 * MiB
    # the token table's share: the corpus's rows, not BERT's 30,522
    assert trained.model.tok_embed.private_bytes() < 1 * MiB
    again = trained.trained_on(Corpus.builtin(), SHORT)
    assert private_bytes(again.model, bert_session.model) == owned  # the same rows, trained further
    assert again.model.tok_embed.base.data_ptr() == bert_session.model.tok_embed.weight.data_ptr()


def test_a_frozen_token_table_is_shared_whole(bert_session):
    trained = bert_session.with_frozen({"token"}).trained_on(Corpus.builtin(), SHORT)
    assert trained.model.tok_embed is bert_session.model.tok_embed


@pytest.mark.parametrize("tokenizer", ["word", "wordpiece"])
def test_what_a_trained_session_owns_does_not_grow_with_the_vocabulary(tokenizer):
    corpus = Corpus.builtin()
    owned = []
    for vocab_size in (2_000, 30_000):
        session = Session.create(Settings(tokenizer=tokenizer, vocab_size=vocab_size, d_model=16))
        if tokenizer == "word":  # a word table over the corpus's words, as many rows as asked for
            words = WordLevelTokenizer.from_text("\n".join(corpus.sentences))
            session = replace(session, trained_tokenizer=words)
        trained = session.trained_on(corpus, SHORT)
        owned.append(private_bytes(trained.model, session.model))
    assert owned[0] == owned[1]


# the random-layer cache


def test_the_largest_random_layer_fits_the_stated_budget():
    largest = Settings(
        tokenizer="word", **{name: LIMITS[name][1] for name in ("vocab_size", "d_model", "maxlen", "n_segments")}
    )
    assert largest.table_bytes <= MAX_TABLE_BYTES <= RANDOM_CACHE_BYTES
    assert replace(largest, tokenizer="wordpiece").table_bytes <= MAX_TABLE_BYTES


def test_the_random_cache_stays_within_its_byte_bound(monkeypatch):
    cache = presets.ByteBoundedCache(presets._random_source, presets._source_bytes, max_bytes=3 * MiB)
    one = Settings(tokenizer="word", vocab_size=10_000, d_model=32)  # 1.3 MiB with its positions
    for seed in range(6):
        source = cache(replace(one, seed=seed))
        assert presets._source_bytes(source) == replace(one, seed=seed).table_bytes
        assert cache.nbytes <= 3 * MiB
    assert len(cache) == 2
    assert cache(replace(one, seed=5)) is source  # the newest is kept
    huge = Settings(tokenizer="word", vocab_size=30_000, d_model=64)  # 7.8 MiB: more than the bound
    held = cache(huge)
    assert len(cache) == 2 and huge not in cache  # never kept: larger than the bound
    assert cache(huge) is held  # but shared while someone holds it
    gone = weakref.ref(held.model)
    del held
    assert gone() is None  # the cache does not keep it alive
    cache.cache_clear()
    assert cache.nbytes == 0


def test_the_shared_random_cache_is_bounded():
    assert isinstance(random_source, presets.ByteBoundedCache)
    assert random_source.max_bytes == RANDOM_CACHE_BYTES
    assert random_source.nbytes <= RANDOM_CACHE_BYTES


# searching a patched table without building it


def test_neighbours_in_a_patched_table_are_those_of_the_whole_table():
    generator = np.random.default_rng(0)
    base = generator.standard_normal((500, 8)).astype(np.float32)
    rows = np.array([3, 17, 40, 41, 250, 499])
    values = generator.standard_normal((len(rows), 8)).astype(np.float32)
    whole = base.copy()
    whole[rows] = values
    query, exclude = whole[40], {40, 0, 250}
    expected = nearest(whole, query, 12, exclude=exclude)
    found = nearest_patched(base, rows, values, query, 12, exclude=exclude)
    assert [n.id for n in found] == [n.id for n in expected] and 40 not in [n.id for n in found]
    assert np.allclose([n.cosine for n in found], [n.cosine for n in expected], atol=1e-6)
    layer = (whole[1], whole[2], np.ones(8, np.float32), np.zeros(8, np.float32), 1e-12, whole[17])
    expected = output_neighbours(whole, *layer, 12, exclude=exclude)
    found = output_neighbours_patched(base, rows, values, *layer, 12, exclude=exclude)
    assert [n.id for n in found] == [n.id for n in expected]


def test_a_trained_session_s_neighbours_and_search_never_build_its_whole_table(monkeypatch):
    """The selected token's neighbours and a search read a trained table as its shared rows and
    its own: the same lists as the whole table gives, without building it (GloVe's is 80 MB)."""
    from core.plane import search as searching
    from core.plane.pipeline import explore
    from core.plane.search import search

    session = Session.create(source="bert").trained_on(Corpus.builtin(), SHORT)
    tokens = session.model.tok_embed
    assert isinstance(tokens, PatchedEmbedding) and len(tokens.rows) > 0
    sentence = "the cat sat on the mat"
    whole = explore(session, sentence, "", selected=2, k=8).neighbours  # 'cat', a word training moved
    found = search(session, "dog", k=8).neighbours
    assert whole["token"] and len(found) == 8
    monkeypatch.setattr(PatchedEmbedding, "weight", property(lambda self: pytest.fail("the whole table was built")))
    monkeypatch.setattr(searching, "_CACHE", type(searching._CACHE)())  # the search scans again
    assert explore(session, sentence, "", selected=2, k=8).neighbours == whole
    assert search(session, "dog", k=8).neighbours == found
