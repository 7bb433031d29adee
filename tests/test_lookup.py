"""The second document's walk-through: vocabulary, lookups, freezing and from_pretrained."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from core.model.lookup import DOCUMENT_SENTENCE, PRETRAINED, chance_abs_cosine, walk_through


def test_vocabulary_and_ids_are_the_documents():
    walk = walk_through()
    assert walk.sentence == DOCUMENT_SENTENCE == "i am new to PyTorch i am having fun"
    assert walk.counts == (
        ("i", 2, 0),
        ("am", 2, 1),
        ("new", 1, 2),
        ("to", 1, 3),
        ("PyTorch", 1, 4),
        ("having", 1, 5),
        ("fun", 1, 6),
    )
    assert walk.word_to_id == {"i": 0, "am": 1, "new": 2, "to": 3, "PyTorch": 4, "having": 5, "fun": 6}
    assert walk.ids == (0, 1, 2, 3, 4, 0, 1, 5, 6)
    assert walk.vocab_size == 7
    assert walk.table.shape == (7, 3)
    assert walk.looked_up.shape == (9, 3)


def test_ties_keep_first_appearance_and_case_is_kept():
    walk = walk_through("b a I a b i c")
    assert [word for word, _, _ in walk.counts] == ["b", "a", "I", "i", "c"]
    assert walk.ids == (0, 1, 2, 1, 0, 3, 4)


def test_a_lookup_returns_the_tables_rows():
    walk = walk_through(dim=5, seed=3)
    for k, i in enumerate(walk.ids):
        assert np.array_equal(walk.looked_up[k], walk.table[i])
    assert walk.same_word_rows_equal
    # "i" is at places 0 and 5, "am" at 1 and 6
    assert np.array_equal(walk.looked_up[0], walk.looked_up[5])
    assert np.array_equal(walk.looked_up[1], walk.looked_up[6])
    assert not np.array_equal(walk.looked_up[0], walk.looked_up[1])


CODE_CASES = [
    (DOCUMENT_SENTENCE, 3, 0, True),
    (DOCUMENT_SENTENCE, 3, 0, False),
    ('it\'s "quoted" — and ünïcode, twice: ünïcode', 5, 7, True),
]

# runs every shown script in one child process (the scripts seed torch globally, and
# importing torch costs seconds): each script's stdout, captured separately, as json
_RUN_SCRIPTS = """
import contextlib, io, json, sys

outputs = []
for code in json.load(sys.stdin):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(compile(code, "<shown code>", "exec"), {"__name__": "__main__"})
    outputs.append(buffer.getvalue())
print(json.dumps(outputs))
"""


def test_the_code_prints_exactly_the_printout():
    walks = [walk_through(sentence, dim=dim, seed=seed, requires_grad=grad) for sentence, dim, seed, grad in CODE_CASES]
    result = subprocess.run(
        [sys.executable, "-c", _RUN_SCRIPTS],
        input=json.dumps([walk.code for walk in walks]),
        capture_output=True,
        text=True,
        check=True,
    )
    outputs = json.loads(result.stdout)
    for walk, output, (_, dim, seed, requires_grad) in zip(walks, outputs, CODE_CASES, strict=True):
        assert output.rstrip("\n") == walk.printout
        assert f"nn.Embedding(len(vocab), {dim})" in walk.code
        assert f"torch.manual_seed({seed})" in walk.code
        assert f"embeds.weight.requires_grad = {requires_grad}" in walk.code


def test_printout_shows_the_documents_steps():
    lines = walk_through().printout.split("\n")
    assert lines[0] == "{'i': 0, 'am': 1, 'new': 2, 'to': 3, 'PyTorch': 4, 'having': 5, 'fun': 6}"
    assert lines[1] == "tensor([0, 1, 2, 3, 4, 0, 1, 5, 6])"
    assert lines[2] == "Parameter containing:"
    assert lines[-3:] == [
        "tensor([[0.1000, 0.2000, 0.3000],",
        "        [0.4000, 0.5000, 0.6000]])",
        "False",
    ]


def test_a_trainable_table_moves_exactly_its_used_rows_by_the_gradient():
    walk = walk_through(requires_grad=True)
    assert walk.requires_grad and not walk.grad_is_none
    assert walk.rows_changed == tuple(sorted(set(walk.ids))) == tuple(range(7))
    # loss = sum of squares of the looked-up rows: row i's gradient is 2 * count_i * row_i
    counts = np.array([count for _, count, _ in walk.counts], dtype=np.float32)[:, None]
    np.testing.assert_allclose(walk.trained_table, walk.table * (1 - 0.1 * 2 * counts), rtol=1e-6, atol=1e-7)


def test_a_frozen_table_does_not_move_and_gets_no_gradient():
    walk = walk_through(requires_grad=False)
    assert not walk.requires_grad
    assert walk.grad_is_none
    assert walk.rows_changed == ()
    assert np.array_equal(walk.trained_table, walk.table)
    assert "\nNone\n" in walk.printout


def test_from_pretrained_returns_the_given_vectors_frozen():
    walk = walk_through()
    assert walk.pretrained_lookup.shape == (2, 3)
    np.testing.assert_allclose(walk.pretrained_lookup, np.array(PRETRAINED, dtype=np.float32), rtol=0, atol=0)
    assert walk.pretrained_frozen is True


def test_random_vectors_are_as_alike_as_random_directions():
    assert chance_abs_cosine(1) == pytest.approx(1.0)
    assert chance_abs_cosine(2) == pytest.approx(2 / math.pi)
    assert chance_abs_cosine(3) == pytest.approx(0.5)
    assert chance_abs_cosine(16) == pytest.approx(math.sqrt(2 / (math.pi * 16)), rel=0.05)

    walk = walk_through(dim=4, seed=1)
    unit = walk.table / np.linalg.norm(walk.table, axis=1, keepdims=True)
    cosines = [abs(float(unit[i] @ unit[j])) for i in range(7) for j in range(i + 1, 7)]
    assert walk.mean_abs_cosine == pytest.approx(np.mean(cosines), rel=1e-5)
    assert walk.chance_abs_cosine == pytest.approx(chance_abs_cosine(4))
    # averaged over many random tables, the document's point: no relatedness beyond chance
    mean = np.mean([walk_through(seed=seed).mean_abs_cosine for seed in range(200)])
    assert mean == pytest.approx(0.5, abs=0.02)
    assert walk_through("hello hello").mean_abs_cosine is None


def test_same_seed_same_table_different_seed_different_table():
    assert np.array_equal(walk_through(seed=4).table, walk_through(seed=4).table)
    assert walk_through(seed=4).printout == walk_through(seed=4).printout
    assert not np.array_equal(walk_through(seed=4).table, walk_through(seed=5).table)


def test_global_rng_is_untouched():
    before = torch.get_rng_state()
    walk_through()
    walk_through("one two two", dim=2, seed=9, requires_grad=False)
    assert torch.equal(torch.get_rng_state(), before)


def test_results_are_read_only():
    walk = walk_through()
    with pytest.raises(ValueError):
        walk.table[0, 0] = 1.0
    with pytest.raises(AttributeError):
        walk.dim = 4


@pytest.mark.parametrize("sentence", ["", "   ", "\n\t"])
def test_an_empty_sentence_asks_for_a_word(sentence):
    with pytest.raises(ValueError, match="type at least one word"):
        walk_through(sentence)


@pytest.mark.parametrize("dim", [0, 17, -3, 2.5, 3.0, True, "3", None])
def test_dim_must_be_a_whole_number_from_1_to_16(dim):
    with pytest.raises(ValueError, match="dim must be a whole number from 1 to 16"):
        walk_through(dim=dim)


def test_dim_limits_are_allowed():
    assert walk_through(dim=1).table.shape == (7, 1)
    assert walk_through(dim=16).table.shape == (7, 16)


def test_at_most_200_words():
    assert len(walk_through(" ".join(["w"] * 200)).ids) == 200
    with pytest.raises(ValueError, match="The sentence has 201 words; up to 200 are allowed."):
        walk_through(" ".join(["w"] * 201))


def test_at_most_2000_characters():
    with pytest.raises(ValueError, match="The sentence has 2,001 characters; up to 2,000 are allowed."):
        walk_through("x" * 2001)


def test_a_sentence_must_be_text():
    with pytest.raises(TypeError, match="must be a str"):
        walk_through(["i", "am"])


@pytest.mark.parametrize("seed", [-1, 2**31, 0.5])
def test_bad_seeds_say_what_is_allowed(seed):
    with pytest.raises(ValueError, match="seed must be a whole number from 0 to 2147483647"):
        walk_through(seed=seed)
