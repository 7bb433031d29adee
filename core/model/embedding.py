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

import copy
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.view.options import COMPONENTS  # noqa: E402,F401 - the five vectors, re-exported


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
        cls,
        tok_embed: nn.Embedding | PatchedEmbedding,
        pos_embed: nn.Embedding,
        seg_embed: nn.Embedding,
        norm: nn.LayerNorm,
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
        (it used ``tok_embed``), kept separate so ``core.model.listing`` can reproduce that."""
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


class PatchedEmbedding(nn.Module):
    """A token table that shares a large read-only table and owns only the rows that changed.

    Training changes the rows of the corpus's words (a few hundred of BERT's 30,522: the
    softmax runs over the corpus's own ids), so a trained session need not copy the whole
    table: it keeps the shared ``base`` as it is, the ids it ``rows`` touched, and their new
    ``values``. A lookup reads ``base`` and takes the touched rows from ``values``, so it gives
    exactly the numbers a full copy trained the same way would.

    It stands in for ``nn.Embedding`` as a layer's ``tok_embed``: ``num_embeddings``,
    ``embedding_dim``, ``forward(ids)`` and a ``weight`` that is the whole table. ``weight``
    is built on each access (V × d, for callers that need every row at once, such as a PCA
    of the vocabulary), so hold on to it only as long as the call needs it; ``lookup`` rows
    instead where possible. ``state_dict()`` gives that whole table as ``weight``, as
    ``nn.Embedding`` does. Only ``values`` is a parameter: ``base`` is never trained, so no
    ``requires_grad_`` on the layer can expose the shared table to an optimizer.
    """

    def __init__(self, base: torch.Tensor, rows: torch.Tensor | None = None, values: torch.Tensor | None = None):
        super().__init__()
        if base.dim() != 2:
            raise ValueError(f"a token table is 2-D (rows × width), not {tuple(base.shape)}.")
        self.base = base.detach()  # (V, d) shared, read only; a plain attribute: not a parameter, not copied
        self.num_embeddings, self.embedding_dim = base.shape
        if rows is None:
            rows, values = torch.zeros(0, dtype=torch.long), base.new_zeros(0, base.shape[1])
        self.register_buffer("rows", rows.long())  # (P,) the touched ids, sorted, unique
        self.values = nn.Parameter(values.detach(), requires_grad=False)  # (P, d) their rows

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        found = F.embedding(ids, self.base)  # (..., d)
        if len(self.rows) == 0:
            return found
        slot = torch.searchsorted(self.rows, ids).clamp(max=len(self.rows) - 1)  # (...,)
        touched = self.rows[slot] == ids  # (...,)
        return torch.where(touched.unsqueeze(-1), F.embedding(slot, self.values), found)  # (..., d)

    lookup = forward

    @property
    def weight(self) -> torch.Tensor:
        """The whole table, (V, d), built now; differentiable with respect to ``values``."""
        return self.base.index_put((self.rows,), self.values)

    def write(self, ids: torch.Tensor, values: torch.Tensor) -> None:
        """Set the rows ``ids`` (sorted, unique) to ``values``; they join the touched rows."""
        with torch.no_grad():
            rows = torch.cat([self.rows, ids]).unique()  # (P',) sorted
            merged = self(rows)  # (P', d) every touched row as it is now
            merged[torch.searchsorted(rows, ids)] = values
        self.rows = rows
        self.values = nn.Parameter(merged, requires_grad=self.values.requires_grad)

    def private_bytes(self) -> int:
        """Bytes this table owns: the touched rows, not the shared base."""
        return self.rows.nbytes + self.values.nbytes

    def __deepcopy__(self, memo: dict) -> PatchedEmbedding:
        # a copy owns its patch and shares the read-only base, which is the point of the class
        copied = PatchedEmbedding(self.base, self.rows.clone(), self.values.detach().clone())
        copied.values.requires_grad_(self.values.requires_grad)
        return copied.train(self.training)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        weight = self.weight
        destination[prefix + "weight"] = weight if keep_vars else weight.detach()

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, touched={len(self.rows)}"


def patched(table: nn.Embedding | PatchedEmbedding) -> PatchedEmbedding:
    """A private, trainable-to-be version of ``table`` that shares its rows instead of copying them.

    A read-only table (a preset's, shared by every session) is shared as the base; a table
    its owner may still train is copied first, so later changes to it cannot show through.
    A patched table keeps its base and gets its own copy of the patch.
    """
    if isinstance(table, PatchedEmbedding):
        return copy.deepcopy(table)
    base = table.weight.detach()
    return PatchedEmbedding(base.clone() if table.weight.requires_grad else base)


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


def private_bytes(model: nn.Module, shared: nn.Module) -> int:
    """Bytes of the tensors ``model`` holds that it does not share with ``shared``.

    Tensors are matched by their storage, so a view of a shared table counts as shared and
    a copy as private. What a session costs beyond the presets it reads: the tests and
    ``bench/sessions_memory.py`` hold sessions to it.
    """
    common = {storage.data_ptr() for storage in _storages(shared)}
    return sum(storage.nbytes() for storage in _storages(model) if storage.data_ptr() not in common)


def _storages(model: nn.Module) -> list[torch.UntypedStorage]:
    tensors = [*model.parameters(), *model.buffers()]
    tensors += [m.base for m in model.modules() if isinstance(m, PatchedEmbedding)]
    unique = {t.untyped_storage().data_ptr(): t.untyped_storage() for t in tensors if t.numel()}
    return list(unique.values())
