"""Training: the corpus, freezing, the objective's gradients, reproducibility and purity."""

from __future__ import annotations

import json
import math
import tracemalloc
from dataclasses import replace

import pytest
import torch

from core.model.embedding import BertEmbedding
from core.model.tokenizer import WordLevelTokenizer
from core.model.training import (
    ASSETS,
    MAX_CORPUS_CHARS,
    MAX_SENTENCE_CHARS,
    MAX_SENTENCES,
    PARTS,
    Corpus,
    TrainConfig,
    _Examples,
    masked_token_loss,
    purity,
    train,
    trainable_copy,
)
from core.tables.presets import Settings, random_source, wordpiece

SHORT = TrainConfig(steps=20)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Train on one thread: tests share the machine, and with every core busy a thread pool
    waits on itself at each of the many tiny operations, many times slower than one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.builtin()


@pytest.fixture(scope="module")
def tokenizer():
    return wordpiece()


@pytest.fixture()
def small() -> BertEmbedding:
    """A random 8-d layer over BERT's WordPiece vocabulary, ready to train."""
    return trainable_copy(random_source(Settings(d_model=8)).model)


def tables(model: BertEmbedding) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


# the corpus


def test_builtin_corpus_has_planted_categories_of_single_tokens(corpus, tokenizer):
    categories = json.loads((ASSETS / "corpus_categories.json").read_text())
    assert dict(corpus.categories) == {name: tuple(words) for name, words in categories.items()}
    assert 5 <= len(categories) <= 6
    assert all(6 <= len(words) <= 10 for words in categories.values())
    assert 300 <= len(corpus.sentences) <= 2000
    used = set(" ".join(corpus.sentences).split())
    for words in categories.values():
        for word in words:
            assert tokenizer.encode(word).tokens == ("[CLS]", word, "[SEP]")
            assert word in used
    assert all(s == s.lower() and s.strip() == s and s for s in corpus.sentences)
    assert Corpus.builtin() is corpus  # read once, shared


def test_chance_purity_is_the_share_of_same_category_words(corpus):
    sizes = [len(words) for words in corpus.categories.values()]
    n = sum(sizes)
    expected = sum(size / n * (size - 1) / (n - 1) for size in sizes)
    assert corpus.chance_purity() == pytest.approx(expected)
    assert Corpus(("a b",)).chance_purity() is None


def test_from_text_splits_lines_and_sentence_ends():
    text = "The cat sat. Did it?  Yes!\n\nsecond line\n  third. "
    assert Corpus.from_text(text).sentences == ("The cat sat.", "Did it?", "Yes!", "second line", "third.")
    assert Corpus.from_text(text).categories == {}
    with pytest.raises(ValueError, match="the text has no sentences"):
        Corpus.from_text(" \n\n ")


def test_a_300_kb_text_is_refused_before_it_is_split():
    text = "the miner said the mine was mine. " * 9_000  # 306,000 characters
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as error:
            Corpus.from_text(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(error.value) == "the text has 306,000 characters; up to 100,000 are allowed for training."
    assert peak < 2**20  # nothing built from it: no sentences, no copies of the text


def test_a_corpus_is_bounded_in_sentences_and_their_length():
    assert len(Corpus.from_text("a cat. " * (MAX_SENTENCES - 1)).sentences) == MAX_SENTENCES - 1
    with pytest.raises(ValueError, match=f"^the corpus has 2,001 sentences; up to {MAX_SENTENCES:,} are allowed"):
        Corpus.from_text("a cat.\n" * (MAX_SENTENCES + 1))
    with pytest.raises(ValueError, match="^sentence 2 has 501 characters; sentences of up to 500 are allowed: end"):
        Corpus(("short", "x" * (MAX_SENTENCE_CHARS + 1)))
    assert MAX_CORPUS_CHARS == 100_000 and MAX_SENTENCE_CHARS == 500


def test_the_largest_text_allowed_encodes_in_bounded_memory(tokenizer):
    # the most text allowed, as sentences of the longest kind: 199 of 500 characters, 101 tokens each
    sentence = ("word " * 100)[:MAX_SENTENCE_CHARS - 1] + "."
    corpus = Corpus.from_text(" ".join([sentence] * (MAX_CORPUS_CHARS // (MAX_SENTENCE_CHARS + 1))))
    config = BertEmbedding(30522, 4).config
    tracemalloc.start()
    try:
        examples = _Examples.encode(corpus, tokenizer, config)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert examples.ids.shape == ((len(corpus.sentences) + 1) // 2, 2 * 101 + 3)  # pairs × [CLS] A [SEP] B [SEP]
    assert peak < 16 * 2**20  # the encodings themselves; the padded tensors are numpy's and torch's


def test_examples_hold_words_markers_and_padding_apart(tokenizer):
    corpus = Corpus(("the cat sat", "a dog", "red"))
    examples = _Examples.encode(corpus, tokenizer, BertEmbedding(30522, 4).config)
    assert examples.lengths.tolist() == [8, 3]  # [CLS] the cat sat [SEP] a dog [SEP]; [CLS] red [SEP]
    assert examples.keep.tolist() == [[True] * 8, [True] * 3 + [False] * 5]
    assert examples.target[0].tolist() == [False, True, True, True, False, True, True, False]
    assert examples.target[1].tolist() == [False, True, False, False, False, False, False, False]
    assert examples.seg[0].tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert examples.rows[examples.ids[1, :3]].tolist() == list(tokenizer.encode("red").ids)
    assert (examples.ids[1, 3:] == 0).all()


def test_a_word_belongs_to_one_category():
    with pytest.raises(ValueError, match="'cat' is in both 'animals' and 'pets'"):
        Corpus(("the cat",), {"animals": ["cat", "dog"], "pets": ["cat"]})


# freezing


def test_trainable_copy_freezes_the_named_parts_and_leaves_the_source_alone(corpus, tokenizer):
    source = random_source(Settings(d_model=8)).model  # shared, read-only
    before = tables(source)
    model = trainable_copy(source, frozen=["position", "norm"])
    assert not model.training
    assert {part: getattr(model, attr).weight.requires_grad for part, attr in PARTS.items()} == {
        "token": True, "position": False, "segment": True, "norm": False
    }
    assert not model.norm.bias.requires_grad
    train(model, corpus, tokenizer, SHORT)
    assert all(torch.equal(before[name], tensor) for name, tensor in source.state_dict().items())
    assert not any(p.requires_grad for p in source.parameters())


def test_trainable_copy_names_the_parts_when_one_is_unknown():
    allowed = "the parts are token, position, segment, norm"
    with pytest.raises(ValueError, match=f"no part called 'tokens'; {allowed}"):
        trainable_copy(BertEmbedding(), frozen=["tokens"])


def test_every_part_gets_a_gradient_from_the_objective():
    model = BertEmbedding(vocab_size=10, d_model=4, maxlen=8, n_segments=2)
    x = torch.tensor([[8, 2, 3, 4, 9, 5, 6, 9]])  # [CLS] a a a [SEP] b b [SEP], markers 8 and 9
    seg = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1]])
    keep = torch.ones_like(x, dtype=torch.bool)
    target = x < 8  # the words, not the markers
    masked_token_loss(model, x, seg, keep, target, window=2).backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


@pytest.mark.parametrize("part", PARTS)
def test_a_frozen_part_stays_bit_identical_while_the_others_learn(part, small, corpus, tokenizer):
    model = trainable_copy(small, frozen=[part])
    before = tables(model)
    train(model, corpus, tokenizer, SHORT)
    after = model.state_dict()
    for name in before:
        frozen = name.startswith(PARTS[part] + ".")
        assert torch.equal(before[name], after[name]) == frozen, name


def test_an_all_frozen_layer_cannot_train(small, corpus, tokenizer):
    with pytest.raises(ValueError, match="^every table is frozen: unfreeze at least one to train.$"):
        train(trainable_copy(small, frozen=PARTS), corpus, tokenizer)


# the loop


def test_same_seed_same_tables_and_nothing_global_is_touched(small, corpus, tokenizer):
    rng = torch.random.get_rng_state()
    runs = [trainable_copy(small) for _ in range(3)]
    seeds = (0, 0, 1)
    results = [train(m, corpus, tokenizer, replace(SHORT, seed=s)) for m, s in zip(runs, seeds, strict=True)]
    assert torch.equal(torch.random.get_rng_state(), rng)
    assert results[0].losses == results[1].losses != results[2].losses
    first, again, other = (model.state_dict() for model in runs)
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert not torch.equal(first["tok_embed.weight"], other["tok_embed.weight"])


def test_only_rows_the_corpus_uses_change(small, corpus, tokenizer):
    before = small.tok_embed.weight.clone()
    train(small, corpus, tokenizer, SHORT)
    used = {i for s in corpus.sentences for i in tokenizer.encode(s).ids}
    changed = (small.tok_embed.weight != before).any(dim=1).nonzero().flatten().tolist()
    assert set(changed) == used


def test_result_records_each_step_and_reports_progress(small, corpus, tokenizer):
    calls = []
    result = train(small, corpus, tokenizer, TrainConfig(steps=40), lambda s, n, losses: calls.append((s, n)))
    assert result.steps == 40 and len(result.losses) == 40
    assert all(math.isfinite(loss) for loss in result.losses)
    assert calls == [(step, 40) for step in range(2, 41, 2)]


def test_stop_ends_training_between_steps_after_the_first(small, corpus, tokenizer):
    """A job's time limit may be used up by the setting-up on a busy server: the first step
    still runs, and `stop` is asked before each later one."""
    asked = []
    result = train(small, corpus, tokenizer, TrainConfig(steps=40), stop=lambda: asked.append(1) or True)
    assert result.steps == 1 and len(asked) == 1

    asked.clear()
    stop_before_fifth = lambda: asked.append(1) or len(asked) == 4  # noqa: E731 - asked before steps 2 to 5
    result = train(small, corpus, tokenizer, TrainConfig(steps=40), stop=stop_before_fifth)
    assert result.steps == 4 and len(asked) == 4


def test_zero_steps_change_nothing(small, corpus, tokenizer):
    before = tables(small)
    result = train(small, corpus, tokenizer, TrainConfig(steps=0))
    assert result.losses == () and result.purity_before == result.purity_after
    assert all(torch.equal(before[name], tensor) for name, tensor in small.state_dict().items())


def test_purity_rises_from_chance(corpus, tokenizer):
    model = trainable_copy(random_source(Settings(d_model=16)).model)
    result = train(model, corpus, tokenizer, TrainConfig(steps=100))
    assert result.purity_before < 0.3
    assert result.purity_after >= 0.9
    assert result.losses[-1] < result.losses[0] / 2


def test_word_level_tokenizer_and_a_single_segment_row_train(corpus):
    words = WordLevelTokenizer.from_text(" ".join(corpus.sentences))
    model = BertEmbedding(words.vocab_size, d_model=8, maxlen=32, n_segments=1)
    result = train(trainable_copy(model), corpus, words, SHORT)
    assert result.purity_after is not None and len(result.losses) == 20


def test_ids_beyond_the_table_are_refused_with_the_sizes(corpus, tokenizer):
    model = trainable_copy(BertEmbedding(vocab_size=1000, d_model=4))
    with pytest.raises(ValueError, match="this token table has 1,000 rows; use the tokenizer the table"):
        train(model, corpus, tokenizer, SHORT)


def test_nothing_to_train_on_is_refused(corpus, tokenizer):
    too_short = trainable_copy(BertEmbedding(vocab_size=30522, d_model=4, maxlen=3))
    with pytest.raises(ValueError, match=r"3 positions hold nothing but \[CLS\] and \[SEP\]"):
        train(too_short, corpus, tokenizer, SHORT)
    with pytest.raises(ValueError, match="^the corpus has no sentences to train on.$"):
        train(trainable_copy(BertEmbedding(30522, 4)), Corpus(()), tokenizer, SHORT)


# purity


def hand_made(rows: dict[str, tuple[float, float]]) -> tuple[BertEmbedding, WordLevelTokenizer]:
    tokenizer = WordLevelTokenizer(list(rows))
    model = BertEmbedding(tokenizer.vocab_size, d_model=2)
    with torch.no_grad():
        model.tok_embed.weight[: len(rows)] = torch.tensor(list(rows.values()))
    return model, tokenizer


CATEGORIES = {"animals": ("cat", "dog", "cow"), "colours": ("red", "blue", "pink")}


def test_purity_is_one_when_categories_lie_on_their_own_axes():
    model, tokenizer = hand_made(
        {"cat": (1, 0), "dog": (2, 0.1), "cow": (3, -0.1), "red": (0, 1), "blue": (0.1, 2), "pink": (-0.1, 3)}
    )
    assert purity(model, Corpus((), CATEGORIES), tokenizer, k=2) == 1.0


def test_purity_is_zero_when_the_nearest_word_is_always_of_the_other_category():
    model, tokenizer = hand_made(
        {"cat": (1, 0), "red": (1, 0.1), "dog": (0, 1), "blue": (0.1, 1), "cow": (-1, 0), "pink": (-1, 0.1)}
    )
    assert purity(model, Corpus((), CATEGORIES), tokenizer, k=1) == 0.0


def test_purity_leaves_out_unknown_words_and_needs_categories():
    model, tokenizer = hand_made({"cat": (1, 0), "dog": (1, 0.1), "red": (0, 1), "blue": (0.1, 1)})
    with_unknown = {"animals": ("cat", "dog", "zebra"), "colours": ("red", "blue")}
    assert purity(model, Corpus((), with_unknown), tokenizer, k=1) == 1.0
    assert purity(model, Corpus(("the cat",)), tokenizer) is None
    with pytest.raises(ValueError, match="k must be a whole number of at least 1"):
        purity(model, Corpus((), with_unknown), tokenizer, k=0)


# configuration


def test_config_defaults_are_valid_and_number_boxes_are_accepted():
    assert TrainConfig(steps=200.0).steps == 200 and isinstance(TrainConfig(steps=200.0).steps, int)
    assert TrainConfig.MAX_STEPS == 2000


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"steps": -1}, "steps is -1; allowed values are 0 to 2,000."),
        ({"steps": 2001}, "steps is 2,001; allowed values are 0 to 2,000."),
        ({"steps": 2.5}, "steps must be a whole number, not 2.5."),
        ({"batch_size": 0}, "batch_size is 0; allowed values are 1 to 1,024."),
        ({"window": 0}, "window is 0; allowed values are 1 to 32."),
        ({"seed": -3}, "seed is -3; allowed values are 0 to 2,147,483,647."),
        ({"seed": True}, "seed must be a whole number, not True."),
        ({"lr": 0}, "lr is 0; allowed values are above 0 and at most 10."),
        ({"lr": float("nan")}, "lr is nan; allowed values are above 0 and at most 10."),
        ({"lr": "0.1"}, "lr is '0.1'; allowed values are above 0 and at most 10."),
    ],
)
def test_config_names_the_field_and_the_allowed_range(changes, message):
    with pytest.raises(ValueError) as error:
        TrainConfig(**changes)
    assert str(error.value) == message


@pytest.mark.parametrize("basis", ["sentence", "vocabulary"])
def test_a_frozen_table_s_points_stay_exactly_where_they_were_after_training(basis):
    """A trained session is drawn in its untrained tables' plane (core/plane/pipeline.py `_plane`): refitted,
    the frozen positions of tour step 7 moved by up to 4.5 units on screen."""
    import numpy as np

    from core.plane.pipeline import explore
    from core.tables.session import Session

    a, b, groups = "the cat and the dog slept", "my aunt visited my uncle", ("token", "position")
    session = Session.create().with_frozen(frozenset({"position"})).with_basis(basis)
    before = explore(session, a, b, groups).scene.points
    after = explore(session.trained_on(Corpus.builtin(), TrainConfig(steps=30)), a, b, groups).scene.points
    assert np.array_equal(after["position"], before["position"])
    assert np.abs(after["token"] - before["token"]).max() > 1e-3  # what trained moved
