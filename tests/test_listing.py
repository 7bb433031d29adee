"""The first document's test, run exactly: its printout, its ±1 outputs and its position bug."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from core.model.embedding import COMPONENTS, BertEmbedding
from core.model.listing import EPS, ListingEmbedding, listing_model, run_listing

SEEDS = range(8)
ROOT = Path(__file__).resolve().parents[1]  # so the child process can import core


def test_shapes_are_the_listings():
    run = run_listing(0)
    assert run.shapes == {
        "x": "torch.Size([2, 3])",
        "seg": "torch.Size([2, 3])",
        "output": "torch.Size([2, 3, 2])",
    }
    assert run.x.shape == run.seg.shape == (2, 3)
    assert run.output.shape == (2, 3, 2)
    assert tuple(run.components) == COMPONENTS
    for value in run.components.values():
        assert value.shape == (2, 3, 2)
    assert ((run.x >= 0) & (run.x < 10)).all()
    assert ((run.seg >= 0) & (run.seg < 2)).all()


def test_printout_is_torchs_own_formatting_of_the_run():
    run = run_listing(3)
    x, seg = torch.from_numpy(run.x.copy()), torch.from_numpy(run.seg.copy())
    out = torch.from_numpy(run.output.copy())
    lines = run.printout.split("\n")
    assert lines[0] == f"x: {str(x).splitlines()[0]}"
    assert f"seg: {seg}" in run.printout
    assert "output.shape: torch.Size([2, 3, 2])" in run.printout
    # the listing prints a tensor that came out of the layer, so torch adds its grad_fn
    assert run.printout.endswith(str(out)[: -len(")")] + ", grad_fn=<NativeLayerNormBackward0>)")


def test_the_listing_prints_exactly_this_after_torch_manual_seed():
    # the listing itself, seeded globally, in a child process so this one's rng is untouched
    seed = 5
    script = textwrap.dedent(
        f"""
        import torch
        from core.model.embedding import BertEmbedding
        from core.model.listing import ListingEmbedding

        for layer in (BertEmbedding, ListingEmbedding):
            torch.manual_seed({seed})
            model = layer(10, 2, 512, 2)
            x = torch.randint(0, 10, (2, 3))
            seg = torch.randint(0, 2, (2, 3))
            out = model(x, seg)
            print("x:", x)
            print("seg:", seg)
            print("output.shape:", out.shape)
            print("output:", out)
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT)
    fixed, buggy = run_listing(seed), run_listing(seed, position_bug=True)
    assert result.stdout.rstrip("\n") == fixed.printout + "\n" + buggy.printout
    assert fixed.printout != buggy.printout


@pytest.mark.parametrize("position_bug", [False, True])
def test_outputs_are_plus_minus_one_pairs_as_layernorm_of_two_numbers_predicts(position_bug):
    for seed in SEEDS:
        run = run_listing(seed, position_bug=position_bug)
        out, summed = run.output, run.components["sum"]
        assert run.output_is_antisymmetric
        assert np.abs(out[..., 0] + out[..., 1]).max() < 1e-5
        assert (np.abs(out) <= 1 + 1e-6).all()
        # layernorm of (a, b) is (h, -h) / sqrt(h^2 + eps) with h = (a - b) / 2
        h = (summed[..., 0].astype(np.float64) - summed[..., 1]) / 2
        expected = h / np.sqrt(h * h + EPS)
        np.testing.assert_allclose(out[..., 0], expected, atol=1e-5)
        assert run.max_deviation_from_pm1 == pytest.approx(float(np.max(1 - np.abs(expected))), abs=1e-5)
        assert run.all_pm_one == (run.max_deviation_from_pm1 < 1e-2)


@pytest.mark.parametrize("seed", [2, 3, 4, 5, 6])
def test_every_output_entry_is_within_1e_2_of_plus_or_minus_one(seed):
    for position_bug in (False, True):
        run = run_listing(seed, position_bug=position_bug)
        assert run.all_pm_one
        assert np.abs(np.abs(run.output) - 1).max() < 1e-2
        assert run.facts[0].startswith("Every output entry is within")


def test_seed_0_shows_eps_at_work_when_the_two_sums_nearly_coincide():
    # the fixed layer with seed 0 has one token whose two summed values are 0.035 apart
    run = run_listing(0)
    assert not run.all_pm_one
    assert 0.015 < run.max_deviation_from_pm1 < 0.017
    assert round(float(abs(run.output[0, 2, 0])), 4) == 0.9842
    gap = abs(float(run.components["sum"][0, 2, 0] - run.components["sum"][0, 2, 1]))
    assert run.facts[0].startswith(
        f"Not every output entry is ±1: in sequence 1, place 3 the two summed values are only {gap:.4f} apart"
    )
    assert "±0.9842" in run.facts[0]


@pytest.mark.parametrize("seed", [0, 7])
def test_why_uses_the_numbers_of_the_first_token(seed):
    run = run_listing(seed)
    a, b = (float(v) for v in run.components["sum"][0, 0])
    mean, std = (a + b) / 2, abs(a - b) / 2
    out = run.output[0, 0]

    def pair(u, v):
        return f"({u:.4f}, {v:.4f})"

    assert f"(id {run.x[0, 0]}, segment {run.seg[0, 0]})" in run.why
    assert f"(a, b) = {pair(a, b)}" in run.why
    assert f"their mean, {mean:.4f}, which leaves {pair(a - mean, b - mean)}" in run.why
    assert f"standard deviation, {std:.4f}, which gives {pair(out[0], out[1])}" in run.why
    # the population std of two numbers is half their gap
    assert std == pytest.approx(float(np.std([a, b])), rel=1e-9)
    assert 2 <= len(re.findall(r"[.;:] [A-Z]|\.$", run.why)) <= 4


def test_with_the_bug_positions_are_token_rows_and_pos_embed_gets_no_gradient():
    run = run_listing(4, position_bug=True)
    model = listing_model(4, position_bug=True)
    tok = model.tok_embed.weight.detach().numpy()
    for place in range(3):
        assert np.array_equal(run.components["position"][:, place], np.stack([tok[place]] * 2))
    assert run.position_rows_max_difference == 0.0
    assert run.position_grad_norm is None
    assert "exactly" in run.facts[1]
    assert run.facts[2] == "pos_embed received no gradient: its .grad is None, because the table never took part."


def test_without_the_bug_positions_come_from_pos_embed_and_it_learns():
    run = run_listing(4)
    model = listing_model(4)
    pos = model.pos_embed.weight.detach().numpy()
    assert np.array_equal(run.components["position"][0], pos[:3])
    assert run.position_rows_max_difference > 0.1
    assert run.position_grad_norm is not None and run.position_grad_norm > 0
    assert f"largest difference {run.position_rows_max_difference:.4f}" in run.facts[1]
    assert f"norm {run.position_grad_norm:.4f}" in run.facts[2]


@pytest.mark.parametrize("position_bug", [False, True])
def test_gradient_norms_are_those_of_the_sum_of_squares(position_bug):
    # d/d(row) of sum(sum^2) is 2 * sum, added up over every place the row was used
    run = run_listing(6, position_bug=position_bug)
    summed = run.components["sum"].astype(np.float64)  # (2, 3, 2)
    tok_grad = np.zeros((10, 2))
    np.add.at(tok_grad, run.x.ravel(), 2 * summed.reshape(-1, 2))
    pos_grad = 2 * summed.sum(axis=0)  # rows 0, 1, 2 of whichever table positions used
    if position_bug:
        tok_grad[:3] += pos_grad
    else:
        assert run.position_grad_norm == pytest.approx(np.linalg.norm(pos_grad), rel=1e-5)
    assert run.token_grad_norm == pytest.approx(np.linalg.norm(tok_grad), rel=1e-5)


def test_listing_embedding_is_bert_embedding_with_token_rows_as_positions():
    generator = torch.Generator().manual_seed(11)
    tok = nn.Embedding.from_pretrained(torch.randn(10, 4, generator=generator), freeze=False)
    seg = nn.Embedding.from_pretrained(torch.randn(2, 4, generator=generator), freeze=False)
    norm = nn.LayerNorm(4)
    buggy = ListingEmbedding.from_modules(tok, nn.Embedding.from_pretrained(torch.zeros(512, 4)), seg, norm)
    # a correct layer whose position table is a copy of the token table
    fixed = BertEmbedding.from_modules(tok, nn.Embedding.from_pretrained(tok.weight.detach().clone()), seg, norm)
    assert isinstance(buggy, ListingEmbedding)
    x = torch.randint(0, 10, (3, 10), generator=generator)
    s = torch.randint(0, 2, (3, 10), generator=generator)
    got, want = buggy.components(x, s), fixed.components(x, s)
    for name in COMPONENTS:
        assert torch.equal(got[name], want[name]), name


def test_run_matches_the_model_it_describes():
    run = run_listing(9, position_bug=True)
    model = listing_model(9, position_bug=True)
    assert isinstance(model, ListingEmbedding)
    assert type(listing_model(9)) is BertEmbedding
    parts = model.components(torch.from_numpy(run.x.copy()), torch.from_numpy(run.seg.copy()))
    for name in COMPONENTS:
        assert np.array_equal(parts[name].detach().numpy(), run.components[name]), name
    # the same seed gives both layers the same tables, so only the bug differs
    fixed = listing_model(9)
    for table in ("tok_embed", "pos_embed", "seg_embed"):
        assert torch.equal(getattr(model, table).weight, getattr(fixed, table).weight)
    assert np.array_equal(run_listing(9).x, run.x)


def test_listing_embedding_raises_the_same_errors():
    buggy, fixed = listing_model(0, position_bug=True), listing_model(0)
    bad_inputs = [
        (torch.tensor([[1, 2, 10]]), torch.tensor([[0, 0, 0]])),
        (torch.tensor([[1, 2, 3]]), torch.tensor([[0, 2, 0]])),
        (torch.tensor([[1, 2, 3]]), torch.tensor([[0, 0]])),
        (torch.tensor([[1.0, 2.0]]), torch.tensor([[0, 0]])),
        ([[1, 2]], torch.tensor([[0, 0]])),
    ]
    for x, seg in bad_inputs:
        with pytest.raises(ValueError) as fixed_error:
            fixed(x, seg)
        with pytest.raises(ValueError) as buggy_error:
            buggy(x, seg)
        assert str(buggy_error.value) == str(fixed_error.value)


def test_the_bug_limits_sequences_to_the_vocabulary_size():
    buggy = listing_model(0, position_bug=True)
    assert buggy(torch.zeros(1, 10, dtype=torch.long), torch.zeros(1, 10, dtype=torch.long)).shape == (1, 10, 2)
    with pytest.raises(ValueError, match="sequence has 11 tokens.*10 rows; sequences of up to 10 tokens are allowed"):
        buggy(torch.zeros(1, 11, dtype=torch.long), torch.zeros(1, 11, dtype=torch.long))


def test_same_seed_same_run_different_seed_different_inputs():
    first, again = run_listing(2), run_listing(2)
    assert first.printout == again.printout
    assert first.why == again.why and first.facts == again.facts
    for name in COMPONENTS:
        assert np.array_equal(first.components[name], again.components[name])
    assert not np.array_equal(run_listing(2).x, run_listing(3).x)
    assert len({run_listing(seed).x.tobytes() for seed in SEEDS}) == len(SEEDS)


def test_global_rng_is_untouched():
    before = torch.get_rng_state()
    run_listing(0)
    run_listing(1, position_bug=True)
    listing_model(2)
    assert torch.equal(torch.get_rng_state(), before)


def test_results_are_plain_and_read_only():
    run = run_listing(0)
    assert isinstance(run.max_deviation_from_pm1, float)
    assert isinstance(run.token_grad_norm, float)
    assert type(run.output_is_antisymmetric) is bool
    assert isinstance(run.x, np.ndarray) and run.x.dtype == np.int64
    assert run.output.dtype == np.float32
    with pytest.raises(ValueError):
        run.output[0, 0, 0] = 5.0
    with pytest.raises(AttributeError):
        run.seed = 1


@pytest.mark.parametrize("seed", [-1, 2**31, 1.5, True, "0", None])
def test_bad_seeds_say_what_is_allowed(seed):
    with pytest.raises(ValueError, match="the seed must be a whole number from 0 to 2147483647"):
        run_listing(seed)
