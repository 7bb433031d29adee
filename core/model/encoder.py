"""BERT's encoder, as in the papers it comes from: where context moves each token's vector.

BERT (Devlin et al., 2019, §3) is "a multi-layer bidirectional Transformer encoder" of Vaswani
et al. (2017, §3.1): N identical layers, each a multi-head self-attention sublayer and a
position-wise feed-forward sublayer, each wrapped as ``LayerNorm(x + Sublayer(x))``. BERT swaps
the feed-forward ReLU for GELU. Names follow the papers (``w_q``, ``w_k``, ``w_v``, ``w_o``,
``w_1``, ``w_2``, ``norm1``, ``norm2``) so the code can be read beside them; the Hugging Face
names are mapped onto these in `core.model.checkpoints`.

The arithmetic order, eps and GELU variant match Hugging Face's `BertModel` in eval mode, so
the same weights give the same hidden states. `encode` runs the embedding layer and the
encoder and returns every hidden state (0 is the embedding layer's output, what the page plots
without the encoder) and each layer's attention probabilities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from core.model.embedding import BertEmbedding


@dataclass(frozen=True)
class EncoderConfig:
    """The shape of an encoder; defaults are MiniLM-L6-H384's, the checkpoint the app installs."""

    n_layers: int = 6  # N, the stacked layers (BERT-base: 12)
    d_model: int = 384  # width of every hidden state (BERT-base: 768)
    n_heads: int = 12  # h, attention heads per layer; each reads d_model / h dimensions
    d_ff: int = 1536  # inner width of the feed-forward block, 4 × d_model (BERT-base: 3072)
    eps: float = 1e-12  # LayerNorm's guard against dividing by zero, BERT's (PyTorch's default is 1e-5)

    def __post_init__(self) -> None:
        for name in ("n_layers", "d_model", "n_heads", "d_ff"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a whole number of at least 1, not {value!r}.")
        if self.d_model % self.n_heads:
            raise ValueError(
                f"d_model {self.d_model} does not split into {self.n_heads} heads; "
                f"d_model must be a multiple of n_heads."
            )
        if not self.eps > 0:
            raise ValueError(f"eps must be a positive number, not {self.eps!r}.")

    @property
    def d_k(self) -> int:
        """Width of one head's queries, keys and values (the paper's d_k = d_v = d_model / h)."""
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class EncoderOutput:
    """What `encode` returns: a token's vector at every depth, and whom it attended to."""

    hidden_states: tuple[torch.Tensor, ...]  # N + 1 of (B, L, d): 0 the embedding layer's, k after layer k
    # N of (B, L, L), the mean over heads: row i is how token i spread its attention over the
    # tokens; (B, h, L, L), every head, when asked for
    attentions: tuple[torch.Tensor, ...]


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention (Vaswani et al., §3.2.2): h scaled dot-product attentions, side by side.

    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O with head_i = Attention(Q W_i^Q, K W_i^K,
    V W_i^V). In self-attention Q, K and V are all the layer's input. The h heads' projections
    are stored as one matrix each (``w_q`` holds every W_i^Q), as BERT's checkpoints store them.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.n_heads, self.d_k = config.n_heads, config.d_k
        self.w_q = nn.Linear(config.d_model, config.d_model)  # W^Q of every head
        self.w_k = nn.Linear(config.d_model, config.d_model)  # W^K of every head
        self.w_v = nn.Linear(config.d_model, config.d_model)  # W^V of every head
        self.w_o = nn.Linear(config.d_model, config.d_model)  # W^O: the heads' outputs mixed back together

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The sublayer's output (B, L, d) and its attention probabilities (B, h, L, L).

        ``mask`` (B, 1, 1, L) is added to the scores: 0 for tokens to attend to, a huge negative
        number for padding, which softmax turns into a weight of exactly 0.
        """
        B, L, d = x.shape
        # (B, L, d) -> (B, h, L, d_k): each head sees its own d_k-wide slice of the projections
        q = self.w_q(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, L, d_k)
        k = self.w_k(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, L, d_k)
        v = self.w_v(x).view(B, L, self.n_heads, self.d_k).transpose(1, 2)  # (B, h, L, d_k)
        probs = attention(q, k, mask)  # (B, h, L, L)
        heads = probs @ v  # (B, h, L, d_k)
        concat = heads.transpose(1, 2).reshape(B, L, d)  # (B, L, d): Concat(head_1, ..., head_h)
        return self.w_o(concat), probs  # (B, L, d), (B, h, L, L)


def attention(q: torch.Tensor, k: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """softmax(Q Kᵀ / √d_k): the weights Attention(Q, K, V) gives the values V (Vaswani et al., eq. 1).

    Dividing by √d_k keeps the dot products' spread independent of the width, so softmax does
    not saturate into one-hot weights with vanishing gradients. The probabilities are returned
    rather than fused into ``@ v`` (as `F.scaled_dot_product_attention` would) because the page
    shows them: "the tokens it attends to most". Scaling after the product, as Hugging Face
    does, gives its numbers to the last bit.
    """
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))  # (B, h, L, L)
    if mask is not None:
        scores = scores + mask  # (B, h, L, L): padding's columns pushed to -3.4e38
    return scores.softmax(dim=-1)  # (B, h, L, L), each row sums to 1 over the keys


class FeedForward(nn.Module):
    """The position-wise feed-forward block (Vaswani et al., eq. 2), with BERT's GELU for ReLU.

    FFN(x) = GELU(x W_1 + b_1) W_2 + b_2, applied to each position alone: attention mixes
    tokens, this block transforms each one. GELU is the exact x · Φ(x) (with erf), as BERT's
    checkpoints were trained with; the tanh approximation would not give Hugging Face's numbers.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.w_1 = nn.Linear(config.d_model, config.d_ff)  # d -> d_ff
        self.w_2 = nn.Linear(config.d_ff, config.d_model)  # d_ff -> d

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(F.gelu(self.w_1(x)))  # (B, L, d_ff) inside, (B, L, d) out


class EncoderLayer(nn.Module):
    """One encoder layer: each sublayer's output is LayerNorm(x + Sublayer(x)) (Vaswani et al., §3.1).

    The residual lets a token keep what it was while adding what it gathered; the LayerNorm
    after it (post-LN, BERT's order) keeps each vector's scale fixed from layer to layer.
    """

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.attn = MultiHeadAttention(config)
        self.norm1 = nn.LayerNorm(config.d_model, eps=config.eps)
        self.ffn = FeedForward(config)
        self.norm2 = nn.LayerNorm(config.d_model, eps=config.eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        attended, probs = self.attn(x, mask)  # (B, L, d), (B, h, L, L)
        # the sublayer's output first, as Hugging Face adds them (the sum is the same either way)
        x = self.norm1(attended + x)  # (B, L, d)
        x = self.norm2(self.ffn(x) + x)  # (B, L, d)
        return x, probs


class Encoder(nn.Module):
    """N encoder layers, stacked; the input is the embedding layer's output."""

    def __init__(self, config: EncoderConfig | None = None) -> None:
        super().__init__()
        self.config = config or EncoderConfig()
        self.layers = nn.ModuleList(EncoderLayer(self.config) for _ in range(self.config.n_layers))

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, *, per_head: bool = False
    ) -> EncoderOutput:
        """Every hidden state of ``x`` (B, L, d) and every layer's attention probabilities.

        ``mask`` (B, L) is 1 (or True) for real tokens and 0 for padding, as Hugging Face's
        ``attention_mask``; None attends to every token. Attention is averaged over heads
        unless ``per_head``: the page shows the mean, and the mean is h times smaller to keep.
        """
        if x.dim() != 3 or x.size(-1) != self.config.d_model:
            raise ValueError(
                f"the encoder reads vectors of shape (batch, length, {self.config.d_model}), "
                f"not {tuple(x.shape)}."
            )
        additive = None if mask is None else _additive_mask(mask, x)  # (B, 1, 1, L)
        hidden_states, attentions = [x], []
        for layer in self.layers:
            x, probs = layer(x, additive)  # (B, L, d), (B, h, L, L)
            hidden_states.append(x)
            attentions.append(probs if per_head else probs.mean(dim=1))  # (B, h, L, L) or (B, L, L)
        return EncoderOutput(tuple(hidden_states), tuple(attentions))


def _additive_mask(mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """(B, L) of 1 = attend, 0 = padding -> (B, 1, 1, L) of 0 and float32's lowest number.

    The lowest finite number rather than -inf, as Hugging Face does: a row with every key
    masked then gives uniform weights instead of NaN.
    """
    if mask.dim() == 1:
        mask = mask.unsqueeze(0)  # a single sequence is a batch of one
    if tuple(mask.shape) != tuple(x.shape[:2]):
        raise ValueError(
            f"the mask has shape {tuple(mask.shape)} but the input has {tuple(x.shape[:2])} "
            f"(batch, length) tokens; the mask needs one entry per token."
        )
    keep = mask.to(torch.bool)[:, None, None, :]  # (B, 1, 1, L)
    return torch.zeros(keep.shape, dtype=x.dtype, device=x.device).masked_fill(~keep, torch.finfo(x.dtype).min)


def encode(
    embedding: BertEmbedding,
    encoder: Encoder,
    x: torch.Tensor,
    seg: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    per_head: bool = False,
) -> EncoderOutput:
    """Token ids ``x`` and segment ids ``seg`` (B, L) through the embedding layer and the encoder.

    Hidden state 0 is ``embedding(x, seg)``, the vectors the page plots without the encoder;
    hidden state k is the output of layer k. Runs in inference mode (no autograd records are
    kept), since the page only reads the results.
    """
    if embedding.config.d_model != encoder.config.d_model:
        raise ValueError(
            f"the embedding layer's vectors have width {embedding.config.d_model} but the encoder "
            f"reads width {encoder.config.d_model}; they must come from the same model."
        )
    with torch.inference_mode():
        return encoder(embedding(x, seg), mask, per_head=per_head)  # (B, L, d) in
