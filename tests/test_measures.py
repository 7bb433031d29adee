"""core.model.measures: exact numbers on vectors whose answers are known, and every awkward input."""

import math

import numpy as np
import pytest
import torch

from core.model.embedding import BertEmbedding
from core.model.measures import (
    LayerNormStats,
    RepeatedToken,
    cosine_matrix,
    layernorm_stats,
    repeated_tokens,
)

R = 1 / math.sqrt(2)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# cosine_matrix


def test_cosine_matrix_exact_values_and_zero_vector_convention():
    X = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [-2, 0]], dtype=np.float32)
    expected = np.array([
        [1, 0, R, 0, -1],
        [0, 1, R, 0, 0],
        [R, R, 1, 0, -R],
        [0, 0, 0, 1, 0],  # the zero vector: 0 to everything else, 1 to itself
        [-1, 0, -R, 0, 1],
    ])
    cos = cosine_matrix(X)
    assert cos.dtype == np.float32 and cos.shape == (5, 5)
    np.testing.assert_allclose(cos, expected, atol=1e-7)


def test_cosine_matrix_is_clipped_symmetric_with_unit_diagonal(rng):
    # nearly parallel rows of large values: rounding would leave [-1, 1] without the clip
    base = rng.standard_normal(64).astype(np.float32) * 1e3
    X = np.stack([base, base * 3, -base, base + 1e-3]).astype(np.float32)
    cos = cosine_matrix(X)
    assert cos.max() <= 1.0 and cos.min() >= -1.0
    np.testing.assert_array_equal(np.diag(cos), np.ones(4, dtype=np.float32))
    np.testing.assert_array_equal(cos, cos.T)
    assert cos[0, 2] == pytest.approx(-1.0, abs=1e-6)


@pytest.mark.parametrize("scale", [1e-45, 1e-30, 1e-20, 1e20, 1e37])
def test_cosine_matrix_keeps_direction_of_tiny_and_huge_float32_vectors(scale):
    X = (np.array([[3, 4], [4, 3], [-3, -4]], dtype=np.float64) * scale).astype(np.float32)
    cos = cosine_matrix(X)
    assert np.isfinite(cos).all()
    # subnormal float32 values themselves are coarse (1e-45 is the smallest step), so the
    # tiniest case can only keep the sign and the rough direction
    tolerance = 0.5 if scale < 1e-40 else 1e-6
    assert cos[0, 1] == pytest.approx(24 / 25, abs=tolerance)
    assert cos[0, 2] == pytest.approx(-1.0, abs=1e-6)


def test_cosine_matrix_of_no_vectors_and_of_zero_width():
    assert cosine_matrix(np.zeros((0, 3), dtype=np.float32)).shape == (0, 0)
    np.testing.assert_array_equal(cosine_matrix(np.zeros((2, 0))), np.eye(2, dtype=np.float32))


@pytest.mark.parametrize("X", [np.zeros(3), np.zeros((2, 2, 2)), np.array([["a", "b"]])])
def test_cosine_matrix_refuses_bad_shapes_with_a_sentence(X):
    with pytest.raises(ValueError, match="must"):
        cosine_matrix(X)


def test_cosine_matrix_refuses_nan():
    with pytest.raises(ValueError, match="finite"):
        cosine_matrix(np.array([[1.0, np.nan]]))


# repeated_tokens


def test_repeated_tokens_pairs_every_occurrence_in_order_and_skips_markers():
    tokens = ["[CLS]", "the", "cat", "the", "[SEP]", "the", "cat", "[SEP]"]
    skip = [t in ("[CLS]", "[SEP]") for t in tokens]
    vectors = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1], [-1, 0], [0, 2], [1, 1]], dtype=np.float32)
    found = repeated_tokens(tokens, vectors, skip)
    assert found == (
        RepeatedToken("the", (1, 3), 0.0),
        RepeatedToken("the", (1, 5), -1.0),
        RepeatedToken("cat", (2, 6), 1.0),
        RepeatedToken("the", (3, 5), 0.0),
    )
    # without skip the [SEP]s pair up too
    assert RepeatedToken("[SEP]", (4, 7), pytest.approx(1.0)) in repeated_tokens(tokens, vectors)


def test_repeated_tokens_stops_at_the_limit_in_order():
    tokens = ["a"] * 500  # 124,750 pairs: only the first few are made
    vectors = np.ones((500, 3), dtype=np.float32)
    found = repeated_tokens(tokens, vectors)
    assert len(found) == 50
    assert [pair.positions for pair in found[:3]] == [(0, 1), (0, 2), (0, 3)]
    assert found[-1].positions == (0, 50)
    assert [p.positions for p in repeated_tokens(tokens, vectors, limit=3)] == [(0, 1), (0, 2), (0, 3)]
    assert repeated_tokens(tokens, vectors, limit=0) == ()


def test_repeated_tokens_zero_vectors_give_zero_not_nan():
    found = repeated_tokens(["x", "x"], np.zeros((2, 4), dtype=np.float32))
    assert found == (RepeatedToken("x", (0, 1), 0.0),)


def test_repeated_tokens_with_nothing_repeated_or_no_tokens():
    assert repeated_tokens(["a", "b"], np.eye(2)) == ()
    assert repeated_tokens([], np.zeros((0, 2))) == ()


def test_one_word_gets_different_output_vectors_at_different_positions():
    """The point of the measure: one token vector, several outputs."""
    torch.manual_seed(0)
    model = BertEmbedding(vocab_size=10, d_model=8).eval()
    ids = torch.tensor([[3, 5, 3, 3]])
    with torch.no_grad():
        parts = {k: v[0].numpy() for k, v in model.components(ids, torch.zeros_like(ids)).items()}
    tokens = ["w", "v", "w", "w"]
    assert all(p.cosine == pytest.approx(1.0) for p in repeated_tokens(tokens, parts["token"]))
    outputs = repeated_tokens(tokens, parts["output"])
    assert [p.positions for p in outputs] == [(0, 2), (0, 3), (2, 3)]
    assert all(p.cosine < 0.999 for p in outputs)


@pytest.mark.parametrize(("tokens", "vectors", "skip", "match"), [
    (["a", "b"], np.zeros((3, 2)), None, "2 tokens but 3 vectors"),
    (["a", "b"], np.zeros(2), None, "2-D"),
    (["a", "b"], np.zeros((2, 2)), [True], "skip has 1"),
])
def test_repeated_tokens_refuses_mismatches(tokens, vectors, skip, match):
    with pytest.raises(ValueError, match=match):
        repeated_tokens(tokens, vectors, skip)


# layernorm_stats


def test_layernorm_stats_match_torch_layer_norm(rng):
    summed = (rng.standard_normal((5, 16)) * 3 + 1).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    beta = rng.normal(0, 0.2, 16).astype(np.float32)
    norm = torch.nn.LayerNorm(16, eps=1e-12)
    with torch.no_grad():
        norm.weight.copy_(torch.from_numpy(gamma))
        norm.bias.copy_(torch.from_numpy(beta))
        output = norm(torch.from_numpy(summed)).numpy()
    stats = layernorm_stats(summed, output, gamma, beta)
    np.testing.assert_allclose(stats.mean_before, summed.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(stats.std_before, summed.std(axis=1, ddof=0), rtol=1e-5)
    np.testing.assert_allclose(stats.mean_after, output.mean(axis=1), atol=1e-6)
    np.testing.assert_allclose(stats.std_after, output.std(axis=1), rtol=1e-5)
    # the mean after is exactly what γ and β make of a vector with mean 0 and std 1
    normalised = (summed - summed.mean(1, keepdims=True)) / summed.std(1, keepdims=True)
    np.testing.assert_allclose(stats.mean_after, (normalised * gamma + beta).mean(axis=1), atol=1e-5)
    np.testing.assert_array_equal(stats.gamma, gamma)
    assert all(a.dtype == np.float32 for a in (stats.mean_before, stats.std_after, stats.gamma, stats.beta))


def test_layernorm_stats_std_is_the_population_one():
    stats = layernorm_stats(np.array([[1.0, 3.0]]), np.array([[-1.0, 1.0]]), np.ones(2), np.zeros(2))
    assert stats.std_before[0] == pytest.approx(1.0)  # ddof=1 would say √2
    assert stats.std_after[0] == pytest.approx(1.0)
    assert stats.mean_before[0] == pytest.approx(2.0)


def test_layernorm_stats_describe_says_before_after_gamma_and_beta():
    summed = np.array([[1.0, -1.0, 3.0], [0.5, 0.5, -2.0]], dtype=np.float32)
    output = (summed - summed.mean(1, keepdims=True)) / summed.std(1, keepdims=True)
    text = layernorm_stats(summed, output, np.array([0.5, 1.0, 2.0]), np.array([-0.25, 0.0, 0.25])).describe()
    assert text.startswith("before: mean ")
    assert "after: mean 0 (β̄ = 0), std 1;" in text  # float32 crumbs of 2e-08 read as 0
    assert "γ ranges 0.5 to 2" in text and "β ranges −0.25 to 0.25" in text  # a true minus sign
    assert "nan" not in text.lower()


def test_layernorm_stats_of_zero_vectors_and_of_no_tokens_have_no_nan():
    stats = layernorm_stats(np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float32), np.ones(4), np.zeros(4))
    for values in (stats.mean_before, stats.std_before, stats.mean_after, stats.std_after):
        np.testing.assert_array_equal(values, 0)
    assert "nan" not in stats.describe()
    empty = layernorm_stats(np.zeros((0, 4)), np.zeros((0, 4)), np.ones(4), np.zeros(4))
    assert empty.std_before.shape == (0,) and empty.describe() == "no tokens yet"


def test_layernorm_stats_is_frozen():
    stats = layernorm_stats(np.ones((1, 2)), np.zeros((1, 2)), np.ones(2), np.zeros(2))
    assert isinstance(stats, LayerNormStats)
    with pytest.raises(AttributeError):
        stats.gamma = np.zeros(2)


@pytest.mark.parametrize(("summed", "output", "gamma", "beta", "match"), [
    (np.zeros((2, 3)), np.zeros((2, 4)), np.ones(3), np.zeros(3), "same width"),
    (np.zeros((2, 3)), np.zeros((2, 3)), np.ones(4), np.zeros(3), r"gamma.*\(3,\)"),
    (np.zeros((2, 3)), np.zeros((2, 3)), np.ones(3), np.zeros((3, 1)), r"beta.*\(3,\)"),
    (np.zeros(3), np.zeros(3), np.ones(3), np.zeros(3), "2-D"),
    (np.zeros((2, 0)), np.zeros((2, 0)), np.ones(0), np.zeros(0), "at least 1"),
    (np.full((1, 2), np.inf), np.zeros((1, 2)), np.ones(2), np.zeros(2), "finite"),
])
def test_layernorm_stats_refuses_bad_shapes(summed, output, gamma, beta, match):
    with pytest.raises(ValueError, match=match):
        layernorm_stats(summed, output, gamma, beta)
