"""BertEmbedding: the listing's layer, its five components and its error messages."""

import math

import pytest
import torch

from core.model.embedding import COMPONENTS, BertEmbedding, EmbeddingConfig


def layer(**kwargs) -> BertEmbedding:
    torch.manual_seed(0)
    return BertEmbedding(**kwargs).eval()


def test_listing_test_every_output_row_is_a_minus_a():
    # the first document's test: vocab 10, d_model 2, batch 2, length 3
    torch.manual_seed(1)
    model = BertEmbedding(vocab_size=10, d_model=2, maxlen=512, n_segments=2)
    x = torch.randint(0, 10, (2, 3))
    seg = torch.randint(0, 2, (2, 3))
    parts = model.components(x, seg)
    out = model(x, seg)
    assert out.shape == (2, 3, 2)
    # layernorm of (u, v) is (h, -h) / sqrt(h^2 + eps) with h = (u - v) / 2
    h = (parts["sum"][..., 0] - parts["sum"][..., 1]) / 2
    a = h / torch.sqrt(h**2 + 1e-5)
    assert torch.allclose(out[..., 0], a, atol=1e-6)
    assert torch.allclose(out[..., 1], -a, atol=1e-6)
    assert (out.abs() <= 1).all()


def test_listing_minus_0_9996_comes_from_eps():
    # when the two summed values nearly coincide, eps shrinks |a| below 1: the printed -0.9996
    model = BertEmbedding(vocab_size=10, d_model=2)
    h = 0.1118  # half the gap between the two summed values
    with torch.no_grad():
        for table in (model.tok_embed, model.pos_embed, model.seg_embed):
            table.weight.zero_()
        model.tok_embed.weight[3] = torch.tensor([-h, h])
        model.tok_embed.weight[4] = torch.tensor([5.0, -5.0])
    out = model(torch.tensor([[3, 4]]), torch.tensor([[0, 0]]))
    expected = h / math.sqrt(h * h + 1e-5)
    assert out[0, 0].tolist() == pytest.approx([-expected, expected], abs=1e-6)
    assert round(out[0, 0, 0].item(), 4) == -0.9996
    assert out[0, 1].tolist() == pytest.approx([1.0, -1.0], abs=1e-6)  # a wide gap: |a| = 1


def test_components_identities():
    model = layer(vocab_size=50, d_model=8, maxlen=16, n_segments=2)
    x = torch.randint(0, 50, (3, 7))
    seg = torch.randint(0, 2, (3, 7))
    parts = model.components(x, seg)
    assert tuple(parts) == COMPONENTS
    for value in parts.values():
        assert value.shape == (3, 7, 8)
    # each part is its table's rows, read here straight from the tables
    token, segment = model.tok_embed.weight[x], model.seg_embed.weight[seg]
    position = model.pos_embed.weight[torch.arange(7)].expand(3, 7, 8)
    assert torch.equal(parts["token"], token) and torch.equal(parts["segment"], segment)
    assert torch.equal(parts["position"], position)
    # summed in Hugging Face's order (token + segment + position), so this identity is exact
    assert torch.equal(parts["sum"], token + segment + position)
    # LayerNorm written out: each vector centred, divided by its spread, then scaled and shifted
    mean = parts["sum"].mean(-1, keepdim=True)
    variance = ((parts["sum"] - mean) ** 2).mean(-1, keepdim=True)
    expected = (parts["sum"] - mean) / torch.sqrt(variance + model.norm.eps) * model.norm.weight + model.norm.bias
    assert torch.allclose(parts["output"], expected, atol=1e-5)
    assert torch.equal(model(x, seg), parts["output"])  # the layer's output is the fifth component


def test_positions_use_the_position_table_not_the_token_table():
    # the listing's bug embedded positions with tok_embed(pos); ours must read pos_embed
    model = layer(vocab_size=20, d_model=4, maxlen=8)
    x = torch.tensor([[5, 5, 5]])
    parts = model.components(x, torch.zeros_like(x))
    assert torch.equal(parts["position"][0], model.pos_embed.weight[:3])
    assert not torch.equal(parts["position"][0], model.tok_embed.weight[:3])


def test_a_single_sequence_is_a_batch_of_one():
    model = layer(vocab_size=10, d_model=4)
    assert model(torch.tensor([1, 2, 3]), torch.tensor([0, 0, 1])).shape == (1, 3, 4)


@pytest.mark.parametrize(
    ("x", "seg", "message"),
    [
        (torch.tensor([[1, 2, 10]]), torch.tensor([[0, 0, 0]]), "token id 10 is out of range"),
        (torch.tensor([[-1, 2]]), torch.tensor([[0, 0]]), "token id -1 is out of range"),
        (torch.tensor([[1, 2]]), torch.tensor([[0, 2]]), "segment id 2 is out of range"),
        (torch.tensor([[1, 2]]), torch.tensor([[0, 0, 0]]), "must match"),
        (torch.tensor([[1.0, 2.0]]), torch.tensor([[0, 0]]), "must be integers"),
        (torch.zeros(1, 1, 2, dtype=torch.long), torch.zeros(1, 1, 2, dtype=torch.long), "(batch, length)"),
        ([[1, 2]], torch.tensor([[0, 0]]), "must be a torch tensor"),
        (torch.zeros(1, 6, dtype=torch.long), torch.zeros(1, 6, dtype=torch.long), "5 positions"),
    ],
)
def test_bad_arguments_say_what_is_allowed(x, seg, message):
    model = layer(vocab_size=10, d_model=2, maxlen=5)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        model.components(x, seg)


def test_out_of_range_message_names_the_allowed_range():
    model = layer(vocab_size=10, d_model=2)
    with pytest.raises(ValueError, match=r"ids 0 to 9 are allowed"):
        model(torch.tensor([[10]]), torch.tensor([[0]]))


@pytest.mark.parametrize("field", ["vocab_size", "d_model", "maxlen", "n_segments"])
@pytest.mark.parametrize("value", [0, -3, 2.5, True])
def test_config_rejects_nonsense(field, value):
    with pytest.raises(ValueError, match=field):
        EmbeddingConfig(**{field: value})


def test_eps_reaches_layernorm():
    model = BertEmbedding(vocab_size=10, d_model=4, maxlen=6, n_segments=2, eps=1e-12)
    assert model.norm.eps == 1e-12 and model.config.eps == 1e-12


def test_from_modules_shares_tables_and_checks_widths():
    donor = layer(vocab_size=12, d_model=4, maxlen=9, n_segments=3)
    other_positions = torch.nn.Embedding(20, 4)
    model = BertEmbedding.from_modules(donor.tok_embed, other_positions, donor.seg_embed, donor.norm)
    assert model.tok_embed is donor.tok_embed  # shared, not copied
    assert model.config == EmbeddingConfig(12, 4, 20, 3, donor.norm.eps)
    x = torch.tensor([[1, 2]])
    assert torch.equal(model.components(x, torch.zeros_like(x))["position"][0], other_positions.weight[:2])
    with pytest.raises(ValueError, match=r"same width; these have widths \[4, 5\]"):
        BertEmbedding.from_modules(donor.tok_embed, torch.nn.Embedding(9, 5), donor.seg_embed, donor.norm)
