"""The first document's test, run exactly: its layer, its inputs, its printout and its bug.

*BERT's embedding layer in PyTorch* builds ``Embedding(vocab_size=10, d_model=2, maxlen=512,
n_segments=2)``, feeds it a batch of 2 sequences of 3 random ids below 10 with random
segments below 2, and prints an output whose entries are all +1 or -1. This module repeats
that run (`run_listing`) so the page can show the console output next to an explanation of
its two lessons: why only ±1 (`_why`), and the listing's bug, which `ListingEmbedding` keeps.

The numbers are the listing's own (`listing_model`), from a private generator seeded with
``seed``: torch's global random state is never touched and concurrent sessions cannot disturb
each other.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from core.model.embedding import COMPONENTS, BertEmbedding
from core.view.options import LIMITS

# the listing's configuration
VOCAB_SIZE = 10
D_MODEL = 2
MAXLEN = 512
N_SEGMENTS = 2
EPS = 1e-5  # nn.LayerNorm's default, which the listing keeps
BATCH, SEQ_LEN = 2, 3  # the listing's test input: 2 sequences of 3 tokens

MAX_SEED = LIMITS["seed"][1]  # the page's one range for every seed
# an output entry this close to +1 or -1 counts as "±1" (float32 and eps leave ~1e-3 or less)
PM_ONE_TOLERANCE = 1e-2
# two entries of one output vector whose sum is this small count as (+1, -1) or (-1, +1)
ANTISYMMETRY_TOLERANCE = 1e-5


class ListingEmbedding(BertEmbedding):
    """The listing's layer with its bug: positions are looked up in the token table.

    The listing embeds positions with ``self.tok_embed(pos)`` instead of
    ``self.pos_embed(pos)``: position p gets the token vector of id p, and the position table
    never takes part, so no gradient ever reaches it. The page shows both facts beside the
    fixed ``BertEmbedding``. Everything else is ``BertEmbedding``'s, so any difference between
    the two on the same tables comes from this one line.
    """

    def embed_positions(self, pos: torch.Tensor) -> torch.Tensor:
        # the bug makes position p read row p of the token table, so the sequence cannot be
        # longer than the vocabulary; say so instead of letting torch raise an IndexError
        seq_len = pos.size(-1)
        if seq_len > self.config.vocab_size:
            raise ValueError(
                f"the sequence has {seq_len} tokens, but the listing's layer looks positions up in "
                f"the token table, which has {self.config.vocab_size} rows; sequences of up to "
                f"{self.config.vocab_size} tokens are allowed."
            )
        return self.tok_embed(pos)  # (B, L, d); the listing's bug: should be pos_embed


def listing_model(seed: int, position_bug: bool = False) -> BertEmbedding:
    """The listing's layer with the tables ``torch.manual_seed(seed)`` would give it.

    ``position_bug=True`` gives the listing's ``ListingEmbedding``; otherwise the fixed
    ``BertEmbedding``. Both get the same tables for the same seed, so they can be compared.
    The tables are drawn N(0, 1) in the order ``nn.Embedding`` draws them, then the ids and
    segments, all from one generator seeded with ``seed``: exactly what the listing prints
    after ``torch.manual_seed(seed)``.
    """
    return _listing_model(_generator(seed), position_bug)


def _listing_model(generator: torch.Generator, position_bug: bool) -> BertEmbedding:
    # nn.Embedding's own init is N(0, 1), drawn table by table in __init__'s order; drawing
    # them here from a private generator gives the same numbers without touching global state
    tok = torch.randn(VOCAB_SIZE, D_MODEL, generator=generator)  # (V, d)
    pos = torch.randn(MAXLEN, D_MODEL, generator=generator)  # (maxlen, d)
    seg = torch.randn(N_SEGMENTS, D_MODEL, generator=generator)  # (n_segments, d)
    cls = ListingEmbedding if position_bug else BertEmbedding
    return cls.from_modules(
        nn.Embedding.from_pretrained(tok, freeze=False),
        nn.Embedding.from_pretrained(pos, freeze=False),
        nn.Embedding.from_pretrained(seg, freeze=False),
        nn.LayerNorm(D_MODEL, eps=EPS),  # γ = 1, β = 0: no random numbers involved
    )


def _generator(seed: object) -> torch.Generator:
    try:
        number = None if isinstance(seed, bool) else operator.index(seed)
    except TypeError:
        number = None
    if number is None or not 0 <= number <= MAX_SEED:
        raise ValueError(f"the seed must be a whole number from 0 to {MAX_SEED}, not {seed!r}.")
    return torch.Generator().manual_seed(number)


def read_only(array: np.ndarray) -> np.ndarray:
    """A copy that cannot be edited in place: a frozen dataclass should not hand out arrays that can."""
    array = np.array(array, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)  # eq=False: comparing numpy fields with == is ambiguous
class ListingRun:
    """One run of the listing's test: its inputs, every intermediate vector and what it proves."""

    seed: int
    position_bug: bool
    x: np.ndarray  # (2, 3) token ids
    seg: np.ndarray  # (2, 3) segment ids
    output: np.ndarray  # (2, 3, 2)
    components: dict[str, np.ndarray]  # "token", "position", "segment", "sum", "output": (2, 3, 2) each
    shapes: dict[str, str]  # the printed shapes, e.g. {"output": "torch.Size([2, 3, 2])"}
    printout: str  # the listing's console output, in torch's own formatting
    max_deviation_from_pm1: float  # max over entries of | |output| - 1 |
    output_is_antisymmetric: bool  # every output vector is (+v, -v)
    why: str  # the ±1 explained with the numbers of one token of this run
    position_rows_max_difference: float  # max |position vector at place p - tok_embed row p|
    position_grad_norm: float | None  # None when pos_embed took no part (the bug)
    token_grad_norm: float
    facts: tuple[str, ...]  # sentences stating the above, for the page

    @property
    def all_pm_one(self) -> bool:
        """Every output entry is +1 or -1 up to float32 rounding and LayerNorm's eps."""
        return self.max_deviation_from_pm1 < PM_ONE_TOLERANCE


def run_listing(seed: int = 0, position_bug: bool = False) -> ListingRun:
    """Run the listing's test with ``seed`` and measure what its printout shows.

    The backward pass uses the sum of squares of the summed vectors, not ``output.sum()``:
    each LayerNorm output vector sums to 0, so that loss is constant and its gradient zero,
    and with ``d_model=2`` the output is ±1 almost regardless of its input, so any loss of the
    output sends back only eps-sized gradients. Through the sum, every row that was used
    gets a gradient of twice its summed vector, and a table that was not used gets none.
    """
    generator = _generator(seed)
    model = _listing_model(generator, position_bug)
    x = torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN), generator=generator)  # (B, L)
    seg = torch.randint(0, N_SEGMENTS, (BATCH, SEQ_LEN), generator=generator)  # (B, L)

    parts = model.components(x, seg)
    out = parts["output"]  # (B, L, d)
    loss = parts["sum"].pow(2).sum()  # ()
    loss.backward()

    printout = "\n".join(
        [
            f"x: {x}",
            f"seg: {seg}",
            f"output.shape: {out.shape}",
            f"output: {out}",
        ]
    )
    components = {name: read_only(parts[name].detach().numpy()) for name in COMPONENTS}
    output = components["output"]  # (B, L, d)
    summed = components["sum"]  # (B, L, d)

    deviation = float(np.abs(np.abs(output) - 1.0).max())
    antisymmetric = bool(np.abs(output[..., 0] + output[..., 1]).max() < ANTISYMMETRY_TOLERANCE)

    # with the bug the position vector at place p is row p of the token table, exactly
    tok_rows = model.tok_embed.weight.detach().numpy()[:SEQ_LEN]  # (L, d)
    position_difference = float(np.abs(components["position"] - tok_rows[None]).max())
    # with the bug torch leaves pos_embed.weight.grad as None: the table never entered the
    # graph, so backward had nothing to write. report None, not 0.0, so the two cases differ
    pos_grad = model.pos_embed.weight.grad
    position_grad_norm = None if pos_grad is None else float(pos_grad.norm())
    token_grad_norm = float(model.tok_embed.weight.grad.norm())

    return ListingRun(
        seed=int(seed),
        position_bug=bool(position_bug),
        x=read_only(x.numpy()),
        seg=read_only(seg.numpy()),
        output=output,
        components=components,
        shapes={"x": str(x.shape), "seg": str(seg.shape), "output": str(out.shape)},
        printout=printout,
        max_deviation_from_pm1=deviation,
        output_is_antisymmetric=antisymmetric,
        why=_why(int(x[0, 0]), int(seg[0, 0]), summed[0, 0], output[0, 0]),
        position_rows_max_difference=position_difference,
        position_grad_norm=position_grad_norm,
        token_grad_norm=token_grad_norm,
        facts=_facts(
            position_bug,
            summed,
            output,
            deviation,
            antisymmetric,
            position_difference,
            position_grad_norm,
            token_grad_norm,
        ),
    )


def _pair(values: np.ndarray) -> str:
    return f"({values[0]:.4f}, {values[1]:.4f})"


def _why(token_id: int, segment: int, summed: np.ndarray, output: np.ndarray) -> str:
    """The ±1 in words, worked through for the first token of the first sequence.

    With ``d_model=2`` LayerNorm sees two numbers (a, b). Subtracting their mean (a + b) / 2
    leaves ±(a - b) / 2, and their (population) standard deviation is |a - b| / 2, so the
    quotient is ±1; γ = 1 and β = 0 at initialisation leave it there. Only the ``eps`` added
    to the variance keeps the entries a hair below 1.
    """
    a, b = (float(v) for v in summed)
    mean = (a + b) / 2
    std = abs(a - b) / 2  # the population standard deviation of two numbers: half their gap
    centred = np.array([a - mean, b - mean])
    return (
        f"Take the first token of the first sequence (id {token_id}, segment {segment}): its token, "
        f"position and segment vectors add up to (a, b) = {_pair(summed)}. "
        f"LayerNorm subtracts their mean, {mean:.4f}, which leaves {_pair(centred)}, and divides by "
        f"their standard deviation, {std:.4f}, which gives {_pair(output)}. "
        "With only two numbers, what is left after subtracting the mean is always plus and minus half "
        "their gap, and the standard deviation is exactly that half gap, so every vector becomes "
        "(+1, -1) or (-1, +1), a little less only when a and b nearly coincide because LayerNorm adds "
        f"eps = {EPS:g} to the variance; its scale starts at 1 and its shift at 0, which leave that as it is."
    )


def _facts(
    position_bug: bool,
    summed: np.ndarray,
    output: np.ndarray,
    deviation: float,
    antisymmetric: bool,
    position_difference: float,
    position_grad_norm: float | None,
    token_grad_norm: float,
) -> tuple[str, ...]:
    ids = ", ".join(str(p) for p in range(SEQ_LEN))
    if deviation < PM_ONE_TOLERANCE:
        pm_one = f"Every output entry is within {deviation:.2g} of +1 or -1"
    else:
        # name the token whose two summed values nearly coincide: that is where eps shows
        b, place = np.unravel_index(np.abs(np.abs(output[..., 0]) - 1.0).argmax(), output.shape[:2])
        gap = abs(float(summed[b, place, 0] - summed[b, place, 1]))
        pm_one = (
            f"Not every output entry is ±1: in sequence {b + 1}, place {place + 1} the two summed values "
            f"are only {gap:.4f} apart, so LayerNorm's eps = {EPS:g} pulls the entries to "
            f"±{abs(float(output[b, place, 0])):.4f}"
        )
    pm_one += (
        ", and the two entries of each vector cancel out."
        if antisymmetric
        else ", but the two entries of some vector do not cancel out."
    )
    if position_difference == 0.0:
        position = (
            f"The position vectors equal the token vectors of ids {ids} exactly: "
            "the listing looks positions up in tok_embed."
        )
    else:
        position = (
            f"The position vectors come from pos_embed and differ from the token vectors of ids {ids} "
            f"(largest difference {position_difference:.4f})."
        )
    if position_grad_norm is None:
        grad = "pos_embed received no gradient: its .grad is None, because the table never took part."
    elif position_grad_norm == 0.0:
        grad = "pos_embed took part but its gradient is zero."
    else:
        grad = f"pos_embed received a gradient of norm {position_grad_norm:.4f}: its rows {ids} can learn."
    token = f"tok_embed received a gradient of norm {token_grad_norm:.4f}"
    token += ", for the tokens and for the positions." if position_bug else "."
    return (pm_one, position, grad, token)
