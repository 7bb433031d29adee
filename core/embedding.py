"""BERT's input embedding layer, as in the listing it comes from.

The module sums three lookups — the token's row, its position's row and its segment's row —
and normalises the sum with LayerNorm. Names follow the listing (`tok_embed`, `pos_embed`,
`seg_embed`, `norm`) so the code can be read beside it. The listing embeds positions with
`tok_embed(pos)`, which leaves the position table unused; here positions go through
`pos_embed`.

The arithmetic order and `eps` match Hugging Face's `BertEmbeddings` in eval mode
(`inputs_embeds + token_type_embeddings + position_embeddings`, then LayerNorm), so the same
tables give the same numbers; BERT checkpoints use `eps=1e-12`, PyTorch's default is 1e-5.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from core.options import COMPONENTS  # noqa: E402,F401 - the five vectors, re-exported


@dataclass(frozen=True)
class EmbeddingConfig:
    """The shape of an embedding layer; defaults are the first listing's."""

    vocab_size: int = 10  # rows of the token table
    d_model: int = 2  # width of every vector
    maxlen: int = 512  # rows of the position table: the longest sequence it can embed
    n_segments: int = 2  # rows of the segment table: sentence A and sentence B
    eps: float = 1e-5  # LayerNorm's guard against dividing by zero (BERT uses 1e-12)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "maxlen", "n_segments"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}.")
        if not self.eps > 0:
            raise ValueError(f"eps must be a positive number, not {self.eps!r}.")


class BertEmbedding(nn.Module):
    """Token + position + segment embeddings, summed, then LayerNorm."""

    def __init__(
        self,
        vocab_size: int = 10,
        d_model: int = 2,
        maxlen: int = 512,
        n_segments: int = 2,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.config = EmbeddingConfig(vocab_size, d_model, maxlen, n_segments, eps)
        self.tok_embed = nn.Embedding(vocab_size, d_model)  # token embedding
        self.pos_embed = nn.Embedding(maxlen, d_model)  # position embedding
        self.seg_embed = nn.Embedding(n_segments, d_model)  # segment (token type) embedding
        self.norm = nn.LayerNorm(d_model, eps=eps)

    @classmethod
    def from_config(cls, config: EmbeddingConfig) -> BertEmbedding:
        return cls(**asdict(config))

    @classmethod
    def from_modules(
        cls, tok_embed: nn.Embedding, pos_embed: nn.Embedding, seg_embed: nn.Embedding, norm: nn.LayerNorm
    ) -> BertEmbedding:
        """Assemble a layer from existing tables without copying them.

        Presets mix tables (BERT's tokens with sinusoidal positions, an uploaded token table
        with the current segments); sharing the modules keeps one copy of each in memory.
        """
        widths = {m.embedding_dim for m in (tok_embed, pos_embed, seg_embed)} | {norm.normalized_shape[0]}
        if len(widths) != 1:
            raise ValueError(f"all tables must have the same width; these have widths {sorted(widths)}.")
        # skip __init__: it would draw throwaway tables from torch's global random state
        model = cls.__new__(cls)
        nn.Module.__init__(model)
        model.config = EmbeddingConfig(
            tok_embed.num_embeddings,
            tok_embed.embedding_dim,
            pos_embed.num_embeddings,
            seg_embed.num_embeddings,
            norm.eps,
        )
        model.tok_embed, model.pos_embed, model.seg_embed, model.norm = tok_embed, pos_embed, seg_embed, norm
        return model

    def forward(self, x: torch.Tensor, seg: torch.Tensor) -> torch.Tensor:
        return self.components(x, seg)["output"]

    def components(self, x: torch.Tensor, seg: torch.Tensor) -> dict[str, torch.Tensor]:
        """Every intermediate vector of the layer, so each can be plotted on its own."""
        x, seg = self._check(x, seg)
        seq_len = x.size(1)
        pos = torch.arange(seq_len, dtype=torch.long, device=x.device)
        pos = pos.unsqueeze(0).expand_as(x)  # (L,) -> (B, L)
        token = self.tok_embed(x)  # (B, L, d)
        position = self.embed_positions(pos)  # (B, L, d)
        segment = self.seg_embed(seg)  # (B, L, d)
        summed = token + segment + position  # (B, L, d); Hugging Face's order, for identical rounding
        output = self.norm(summed)  # (B, L, d)
        return {
            "token": token,
            "position": position,
            "segment": segment,
            "sum": summed,
            "output": output,
        }

    def embed_positions(self, pos: torch.Tensor) -> torch.Tensor:
        """Position rows for position ids ``pos``: the one line where the listing went wrong
        (it used ``tok_embed``), kept separate so ``core.listing`` can reproduce that."""
        return self.pos_embed(pos)  # (B, L, d)

    def _check(self, x: torch.Tensor, seg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Turn bad arguments into sentences instead of an IndexError from inside torch."""
        x = _as_ids(x, "token ids")
        seg = _as_ids(seg, "segment ids")
        if x.shape != seg.shape:
            raise ValueError(
                f"token ids have shape {tuple(x.shape)} but segment ids have shape "
                f"{tuple(seg.shape)}; they must match, one segment id per token."
            )
        if x.size(1) > self.config.maxlen:
            raise ValueError(
                f"the sequence has {x.size(1)} tokens but this table has {self.config.maxlen} "
                f"positions; sequences of up to {self.config.maxlen} tokens are allowed."
            )
        _check_range(x, self.config.vocab_size, "token id", "the vocabulary has")
        _check_range(seg, self.config.n_segments, "segment id", "this table has")
        return x, seg


def _as_ids(ids: torch.Tensor, what: str) -> torch.Tensor:
    if not isinstance(ids, torch.Tensor):
        raise ValueError(f"{what} must be a torch tensor, not {type(ids).__name__}.")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise ValueError(f"{what} must be integers, not {ids.dtype}.")
    if ids.dim() == 1:
        ids = ids.unsqueeze(0)  # a single sequence is a batch of one
    if ids.dim() != 2:
        raise ValueError(f"{what} must have shape (batch, length), not {tuple(ids.shape)}.")
    return ids.long()


def _check_range(ids: torch.Tensor, size: int, what: str, owner: str) -> None:
    if ids.numel() == 0:
        return
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= size:
        bad = low if low < 0 else high
        raise ValueError(f"{what} {bad} is out of range: {owner} {size} rows, so ids 0 to {size - 1} are allowed.")
