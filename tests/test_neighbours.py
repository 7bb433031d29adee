"""core.plane.neighbours: exact answers on hand-made tables, chunking that changes nothing, real BERT."""

import math

import numpy as np
import pytest
import torch

from core.plane.neighbours import CHUNK_ROWS, K_MAX, Neighbour, nearest, output_neighbours, table_norms
from core.view.options import LIMITS

# words a reader would accept as related to "king"; chosen before looking at the answer
ROYAL = ("queen", "kings", "prince", "monarch", "throne", "emperor", "royal", "lord", "princess", "kingdom", "duke")

# rows whose cosines to the query (1, 0) are known exactly
TINY = np.array([
    [1.0, 0.0],   # 0: same direction, cos 1
    [0.0, 1.0],   # 1: orthogonal, cos 0
    [1.0, 1.0],   # 2: 45°, cos 1/√2
    [-1.0, 0.0],  # 3: opposite, cos −1
    [0.0, 0.0],   # 4: zero row, cos 0 by convention
    [2.0, 0.1],   # 5: nearly the same direction, cos 2/√4.01
    [3.0, 0.0],   # 6: same direction as 0, longer: cos 1, a tie broken by the lower id
], dtype=np.float32)


def ids(found):
    return [n.id for n in found]


def brute_force(table: np.ndarray, query: np.ndarray, k: int, exclude=()) -> list[int]:
    """The definition, for the whole table at once: highest cosine first, then the lower id."""
    norms = np.linalg.norm(table, axis=1)
    cos = np.divide(table @ query, norms * np.linalg.norm(query), out=np.zeros(len(table)), where=norms > 0)
    order = [int(i) for i in np.lexsort((np.arange(len(table)), -cos)) if i not in set(exclude)]
    return order[:k]


# nearest


def test_nearest_on_a_hand_made_table_is_exact():
    found = nearest(TINY, np.array([1.0, 0.0], dtype=np.float32), k=7)
    assert ids(found) == [0, 6, 5, 2, 1, 4, 3]
    assert [n.cosine for n in found] == pytest.approx([1, 1, 2 / math.sqrt(4.01), 1 / math.sqrt(2), 0, 0, -1],
                                                      abs=1e-6)
    assert found[0] == Neighbour(0, pytest.approx(1.0))
    assert all(isinstance(n.id, int) and isinstance(n.cosine, float) for n in found)


def test_nearest_excludes_ids_and_ignores_ids_outside_the_table():
    query = np.array([1.0, 0.0])
    assert ids(nearest(TINY, query, k=3, exclude={0, 6})) == [5, 2, 1]
    assert ids(nearest(TINY, query, k=3, exclude=[0, -1, 7, 10**9])) == [6, 5, 2]  # -1 is not "the last row"
    assert nearest(TINY, query, k=3, exclude=range(7)) == ()


def test_nearest_returns_every_row_when_k_exceeds_the_table():
    # 0, 3, 4 and 6 are all orthogonal to (0, 1) (or zero): a four-way tie, in id order
    assert ids(nearest(TINY, np.array([0.0, 1.0]), k=K_MAX)) == [1, 2, 5, 0, 3, 4, 6]
    assert nearest(np.zeros((0, 2), np.float32), np.zeros(2), k=5) == ()


def test_nearest_zero_rows_and_zero_query_give_cosine_zero_not_nan():
    zeros = np.zeros((5, 3), dtype=np.float32)
    found = nearest(zeros, np.ones(3), k=3)
    assert ids(found) == [0, 1, 2] and [n.cosine for n in found] == [0, 0, 0]
    found = nearest(TINY, np.zeros(2), k=7)  # a zero query is like no query: every cosine 0, ids in order
    assert ids(found) == list(range(7)) and all(n.cosine == 0 for n in found)


@pytest.mark.parametrize("scale", [1e-45, 1e-30, 1e-20, 1e25, 3e37])
def test_nearest_keeps_the_direction_of_tiny_and_huge_rows(scale):
    table = (np.array([[0.0, 1.0], [1.0, 0.0], [-1.0, 0.0]]) * scale).astype(np.float32)
    found = nearest(table, np.array([1.0, 0.0], dtype=np.float32), k=3)
    assert ids(found) == [1, 0, 2]
    assert [n.cosine for n in found] == pytest.approx([1, 0, -1], abs=1e-6)
    assert ids(nearest(table, table[1], k=1)) == [1]  # a tiny query too


def test_nearest_ties_are_broken_by_lower_id_across_chunks():
    table = np.tile(np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32), (50, 1))  # ids 0, 2, 4 … alike
    for chunk_rows in (1, 3, 7, 100):
        assert ids(nearest(table, np.array([1.0, 0.0]), k=5, chunk_rows=chunk_rows)) == [0, 2, 4, 6, 8]


def test_nearest_chunked_equals_brute_force_on_70000_rows():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((70_000, 8))  # float64: the search computes in float64 too, so ids must agree
    table[[5, 65_540, 69_999]] = 0.0  # zero rows, one in each chunk
    query = rng.standard_normal(8)
    assert len(table) > CHUNK_ROWS  # the default chunk crosses a boundary
    expected = brute_force(table, query, K_MAX, exclude=(17, 65_537))
    for chunk_rows in (CHUNK_ROWS, 1_000, 70_000):
        found = nearest(table, query, k=K_MAX, exclude=(17, 65_537), chunk_rows=chunk_rows)
        assert ids(found) == expected


def test_nearest_float32_table_agrees_with_float64_brute_force():
    rng = np.random.default_rng(1)
    table = rng.standard_normal((70_000, 8)).astype(np.float32)
    query = table[123]
    found = nearest(table, query, k=50, exclude=[123])
    exact = table.astype(np.float64) @ query / (np.linalg.norm(table.astype(np.float64), axis=1)
                                               * np.linalg.norm(query.astype(np.float64)))
    # float32 may swap two cosines closer than its rounding; the values must still be right
    np.testing.assert_allclose([n.cosine for n in found], exact[ids(found)], atol=1e-6)
    np.testing.assert_allclose([n.cosine for n in found], np.sort(np.delete(exact, 123))[::-1][:50], atol=1e-6)


def test_nearest_with_cached_norms_gives_the_same_answer():
    rng = np.random.default_rng(2)
    table = rng.standard_normal((1_000, 16)).astype(np.float32)
    table[3] = 0
    norms = table_norms(table)
    assert norms.shape == (1_000,) and norms[3] == 0
    np.testing.assert_allclose(norms, np.linalg.norm(table.astype(np.float64), axis=1), rtol=1e-7)
    query = rng.standard_normal(16)
    assert ids(nearest(table, query, k=20, row_norms=norms)) == ids(nearest(table, query, k=20))
    with pytest.raises(ValueError, match=r"row_norms has shape \(999,\).*\(1000,\)"):
        nearest(table, query, row_norms=norms[:-1])


@pytest.mark.parametrize("k", [0, -1, K_MAX + 1, 2.5, True, "3"])
def test_nearest_refuses_k_outside_the_page_s_one_range(k):
    assert LIMITS["k"][1] == K_MAX
    with pytest.raises(ValueError, match=f"from 1 to {K_MAX}"):
        nearest(TINY, np.ones(2), k=k)


@pytest.mark.parametrize(("table", "query", "match"), [
    (np.zeros(5), np.zeros(5), "2-D"),
    (np.zeros((2, 3, 4)), np.zeros(4), "2-D"),
    (np.zeros((5, 3)), np.zeros(4), r"query vector has shape \(4,\).*\(3,\)"),
    (np.zeros((5, 3)), np.zeros((1, 3)), r"\(3,\)"),
    (np.zeros((5, 3)), np.array([1.0, np.nan, 0.0]), "finite"),
    (np.array([["a"]]), np.zeros(1), "numbers"),
])
def test_nearest_refuses_bad_shapes_with_a_sentence(table, query, match):
    with pytest.raises(ValueError, match=match):
        nearest(table, query)


def test_nearest_leaves_out_rows_that_are_not_finite():
    table = np.array([[1.0, 0.0], [np.nan, 1.0], [np.inf, 0.0], [0.5, 0.5]], dtype=np.float32)
    assert ids(nearest(table, np.array([1.0, 0.0]), k=4)) == [0, 3]


# output_neighbours


def torch_outputs(table, position, segment, gamma, beta, eps):
    return torch.nn.functional.layer_norm(torch.from_numpy(table + position + segment), (table.shape[1],),
                                          torch.from_numpy(gamma), torch.from_numpy(beta), eps).numpy()


@pytest.fixture
def layer():
    rng = np.random.default_rng(3)
    d = 6
    return {
        "table": rng.standard_normal((200, d)).astype(np.float32),
        "position_vector": rng.standard_normal(d).astype(np.float32),
        "segment_vector": rng.standard_normal(d).astype(np.float32),
        "gamma": rng.uniform(0.5, 1.5, d).astype(np.float32),
        "beta": rng.normal(0, 0.3, d).astype(np.float32),
        "eps": 1e-5,
    }


def test_output_neighbours_rank_torch_layer_norm_outputs(layer):
    outputs = torch_outputs(*(layer[key] for key in ("table", "position_vector", "segment_vector", "gamma",
                                                     "beta", "eps")))
    query = outputs[42]
    expected = brute_force(outputs.astype(np.float64), query.astype(np.float64), 30, exclude=(42,))
    unit = outputs / np.linalg.norm(outputs, axis=1, keepdims=True)
    for chunk_rows in (None, 7, 200):  # 7 does not divide 200: the last chunk is short
        found = output_neighbours(**layer, query_output=query, k=30, exclude=(42,), chunk_rows=chunk_rows)
        assert ids(found) == expected
        np.testing.assert_allclose([n.cosine for n in found], unit[expected] @ unit[42], atol=1e-6)
    assert output_neighbours(**layer, query_output=query, k=1)[0] == Neighbour(42, pytest.approx(1.0, abs=1e-6))


def test_output_neighbours_differ_from_token_neighbours():
    """LayerNorm ignores a vector's mean and length: rows that differ only in those land together."""
    table = np.array([[1.0, 2.0, 3.0], [11.0, 12.0, 13.0], [3.0, 2.0, 1.0], [1.1, 2.0, 2.9]], dtype=np.float32)
    zeros, ones = np.zeros(3, np.float32), np.ones(3, np.float32)
    query = torch_outputs(table, zeros, zeros, ones, zeros, 1e-12)[0]
    by_token = nearest(table, table[0], k=3, exclude=[0])
    by_output = output_neighbours(table, zeros, zeros, ones, zeros, 1e-12, query, k=3, exclude=[0])
    assert ids(by_token) == [3, 1, 2]
    assert ids(by_output) == [1, 3, 2] and by_output[0].cosine == pytest.approx(1.0, abs=1e-6)


def test_output_neighbours_constant_rows_and_zero_eps_give_no_nan():
    # row 0 + shift is constant: no spread, so with eps = 0 there is nothing to divide by
    table = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, -1.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    zeros, ones = np.zeros(3, np.float32), np.ones(3, np.float32)
    found = output_neighbours(table, zeros, zeros, ones, zeros, 0.0, np.array([1.0, 0.0, -1.0]), k=3)
    assert ids(found) == [1, 0, 2] and all(np.isfinite(n.cosine) for n in found)
    assert [n.cosine for n in found] == pytest.approx([1, 0, 0], abs=1e-6)


@pytest.mark.parametrize(("change", "match"), [
    ({"eps": -1e-5}, "eps must be"),
    ({"eps": float("nan")}, "eps must be"),
    ({"eps": "1e-5"}, "eps must be"),
    ({"gamma": np.ones(5)}, r"gamma.*\(6,\)"),
    ({"beta": np.ones((6, 1))}, r"beta.*\(6,\)"),
    ({"position_vector": np.ones(7)}, r"position_vector.*\(6,\)"),
    ({"segment_vector": np.full(6, np.inf)}, "finite"),
    ({"query_output": np.ones(5)}, r"query vector.*\(6,\)"),
    ({"k": 0}, f"from 1 to {K_MAX}"),
    ({"chunk_rows": 0}, "1 or more"),
])
def test_output_neighbours_refuses_bad_arguments(layer, change, match):
    with pytest.raises(ValueError, match=match):
        output_neighbours(**{**layer, "query_output": np.ones(6), **change})


def test_output_neighbours_refuses_a_table_without_dimensions():
    none = np.zeros(0)
    with pytest.raises(ValueError, match="LayerNorm needs at least 1"):
        output_neighbours(np.zeros((4, 0)), none, none, none, none, 1e-5, none)


# the real BERT table


@pytest.fixture(scope="module")
def bert():
    from core.tables.presets import bert_source, wordpiece

    return bert_source().model, wordpiece()


def royal_ids(tokenizer) -> set[int]:
    found = {tokenizer.token_to_id(word) for word in ROYAL}
    assert None not in found  # every word is one WordPiece
    return found


def test_bert_neighbours_of_king_are_royal_and_random_ones_are_not(bert):
    model, tokenizer = bert
    table = model.tok_embed.weight.detach().numpy()
    king, royal = tokenizer.token_to_id("king"), royal_ids(tokenizer)
    found = nearest(table, table[king], k=10, exclude=[king])
    # observed: kings, queen, monarch, prince, monarchy, royal, queens, kingdom, kingdoms, throne
    assert len(royal & set(ids(found))) >= 5
    random = np.random.default_rng(0).standard_normal(table.shape).astype(np.float32)
    assert not royal & set(ids(nearest(random, random[king], k=10, exclude=[king])))


def test_bert_output_neighbours_of_king_stay_royal(bert):
    model, tokenizer = bert
    weights = {name: tensor.detach().numpy() for name, tensor in (
        ("table", model.tok_embed.weight), ("position", model.pos_embed.weight),
        ("segment", model.seg_embed.weight), ("gamma", model.norm.weight), ("beta", model.norm.bias))}
    king, royal = tokenizer.token_to_id("king"), royal_ids(tokenizer)
    position, segment = weights["position"][3], weights["segment"][0]
    query = torch_outputs(weights["table"][king:king + 1], position, segment, weights["gamma"], weights["beta"],
                          model.norm.eps)[0]
    found = output_neighbours(weights["table"], position, segment, weights["gamma"], weights["beta"],
                              model.norm.eps, query, k=10, exclude=[king])
    assert len(royal & set(ids(found))) >= 5


def test_a_shared_table_s_norms_are_computed_once_while_it_lives(monkeypatch):
    """Every keystroke with a token selected searches the same shared table: its row norms
    are kept (half a search's work), give the same ranking, and go with the table."""
    import gc

    import torch

    from core.plane import neighbours
    from core.plane.neighbours import in_table

    calls = []
    monkeypatch.setattr(neighbours, "table_norms", lambda t: calls.append(len(t)) or table_norms(t))
    table = torch.nn.Embedding.from_pretrained(torch.randn(500, 16, generator=torch.Generator().manual_seed(3)))
    query = table.weight[7].numpy() + 0.1
    found = [in_table(table, query, 5, exclude={7}) for _ in range(3)]
    assert calls == [500]  # once for three searches
    assert found[0] == found[2] == nearest(table.weight.detach().numpy(), query, 5, exclude={7})
    key = id(table.weight)
    assert key in neighbours._NORMS
    del table, found
    gc.collect()
    assert key not in neighbours._NORMS
