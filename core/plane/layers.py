"""The encoder's layers in the plane: which tables MiniLM-L6's encoder can read, their hidden states and attention.

The encoder (`core.model.encoder`) was trained on the outputs of BERT's own embedding layer, so it
reads only those: the source "bert" with its learned positions, untrained (`unreadable` says why
not for any other tables; GloVe's 50-d rows, an upload, a random layer or tables training changed
are not what its weights expect, and running it on them would draw numbers no model makes).
`forward` runs the embedding layer and the six encoder layers once per (tables, tokens, segments)
in inference mode and keeps every hidden state with each layer's attention (the mean over its 12
heads: 12 times smaller than every head) in a cache bounded in bytes, so moving the layer slider,
selecting a token (`attended`: whom it attends to) or opening the similarity view reads the same
forward pass. `reached` is how a tab's view meets its tables: a layer they cannot give becomes 0,
with a note saying why. `nearest_at`: a selected token's neighbours at layer K, the pair's tokens.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from cachetools import LRUCache

from core.process.memory import BUDGET
from core.tables.session import Session
from core.view.options import ENCODER_MODEL
from core.view.state import View

MODEL = ENCODER_MODEL
NEEDS_BERT = ("The encoder's layers need BERT's tables: MiniLM-L6's encoder reads BERT's vectors; "
              "choose Tables → BERT.")
NEEDS_POSITIONS = ("The encoder's layers need BERT's own position table: MiniLM-L6's encoder was trained on it; "
                   "choose Tables → Position table → the source's own.")
NEEDS_UNTRAINED = ("The encoder's layers read BERT's tables as they come, and training changed them: MiniLM-L6's "
                   "encoder was never trained on these; press Train → Reset tables to read them again.")
# what the layer control says while the tables can be read
EXPLAINED = (f"0: the embedding layer's output, the page without the encoder; K: each token after encoder layer K, "
             f"with its path from 0 (the output is hidden state 0). {MODEL}.")
# forward passes kept at once: a 512-token pair's seven states are 5.5 MiB, its six attentions 6 MiB; the
# process's memory budget counts them (`kept`) and empties them first when it needs room
KEPT_BYTES = 32 * 2**20
TOP = 5  # tokens `attended` lists at most
FLOOR = 0.05  # and none with less of the selected token's attention than this, but the first


def unreadable(session: Session) -> str | None:
    """Why MiniLM-L6's encoder cannot read the session's tables, in a sentence; None when it can."""
    if session.base.key != "bert":
        return NEEDS_BERT
    if session.positions != "learned":
        return NEEDS_POSITIONS
    if session.trained is not None:
        return NEEDS_UNTRAINED
    return None


def reached(view: View, session: Session) -> tuple[View, tuple[str, ...]]:
    """`view` at a layer `session`'s tables can give: its own, or layer 0 with a note saying why."""
    if view.layer == 0:
        return view, ()
    why = unreadable(session)
    if why is None:
        return view, ()
    return view.with_(layer=0), (f"{why} Showing layer 0 (the embedding layer's output), not layer {view.layer}.",)


class Forward(NamedTuple):
    """One forward pass of a sentence pair through MiniLM-L6, as `forward` keeps it (read-only arrays)."""

    states: np.ndarray  # (layers + 1, L, d) float32: 0 the embedding layer's output, k after encoder layer k
    # (layers, L, L) float32: row i of entry k - 1 is how token i spread its attention over the tokens
    # in encoder layer k, the mean over the layer's heads (each row sums to 1)
    attentions: np.ndarray
    heads: int  # how many heads each layer's mean is over (MiniLM-L6: 12)

    @property
    def nbytes(self) -> int:
        return self.states.nbytes + self.attentions.nbytes


def _size(entry: tuple[weakref.ref, Forward]) -> int:
    return entry[1].nbytes


_KEPT: LRUCache = LRUCache(maxsize=KEPT_BYTES, getsizeof=_size)
_LOCK = threading.Lock()


def kept() -> dict[int, int]:
    """What the kept forward passes hold, by array (its address -> its bytes): the process's memory
    budget counts it with the visitors' tables, and empties the cache before it parks a tab."""
    with _LOCK:
        passes = [found[1] for found in _KEPT.values()]
    return {array.__array_interface__["data"][0]: array.nbytes
            for passed in passes for array in (passed.states, passed.attentions)}


def forward(session: Session, ids: Sequence[int], segments: Sequence[int], apart: int | None = None) -> Forward:
    """These tokens through the embedding layer and the encoder, once: every hidden state and each
    layer's attention, the mean over its heads. The session's tables must be readable (`unreadable`
    is None): a programming error otherwise, raised as ValueError.

    `apart`: where sentence B starts (the token after the first [SEP]). The pair is then read as
    two sequences, ``[CLS] A [SEP]`` and ``[CLS] B [SEP]``, each from position 0 with segment A, as
    a sentence encoder reads one sentence, and their states are put back in the pair's order (B's
    own [CLS] left out). A token attends only to its own sentence: its row holds its sentence's
    weights (B's tokens' share of their own [CLS] is not among the pair's tokens). Hidden state 0 of
    B's tokens is then not the page's output: they sit at other positions, in segment A."""
    why = unreadable(session)
    if why is not None:
        raise ValueError(why)
    model = session.model
    named = (id(model), tuple(ids), tuple(segments), apart)
    with _LOCK:
        found = _KEPT.get(named)
    if found is not None and found[0]() is model:
        return found[1]
    if apart is None or not 0 < apart < len(ids):
        states, attentions, heads = _encoded(model, list(ids), list(segments))
    else:
        a, b = _encoded(model, list(ids[:apart]), list(segments[:apart])), _encoded(
            model, [ids[0], *ids[apart:]], [0] * (len(ids) - apart + 1))
        states = np.concatenate([a[0], b[0][:, 1:]], axis=1)
        attentions = np.zeros((len(a[1]), len(ids), len(ids)), dtype=np.float32)
        attentions[:, :apart, :apart] = a[1]
        attentions[:, apart:, apart:] = b[1][:, 1:, 1:]
        heads = a[2]
    for shared in (states, attentions):
        shared.setflags(write=False)  # shared by every tab that reads the same tokens
    passed = Forward(states, attentions, heads)
    with _LOCK:
        if passed.nbytes <= KEPT_BYTES:
            _KEPT[named] = (weakref.ref(model), passed)
    return passed


def _encoded(model, ids: list[int], segments: list[int]) -> tuple[np.ndarray, np.ndarray, int]:
    """One sequence through the embedding layer and the encoder: states (N + 1, L, d), attention
    means (N, L, L), and how many heads each mean is over."""
    from core.model.checkpoints import bert_encoder
    from core.model.encoder import encode

    encoder = bert_encoder()
    out = encode(model, encoder, torch.tensor([ids]), torch.tensor([segments]))  # inference mode
    return (torch.cat(out.hidden_states).numpy(), torch.cat(out.attentions).numpy(),  # (N + 1, L, d), (N, L, L)
            encoder.config.n_heads)


def apart_at(tokens: Sequence[str], reading: str) -> int | None:
    """Where sentence B starts when the encoder reads each sentence on its own (`forward`'s
    `apart`); None when it reads the pair as one sequence, or there is no sentence B."""
    if reading != "apart" or "[SEP]" not in tokens:
        return None
    start = list(tokens).index("[SEP]") + 1
    return start if start < len(tokens) else None


def hidden_states(session: Session, ids: Sequence[int], segments: Sequence[int],
                  apart: int | None = None) -> np.ndarray:
    """Every hidden state of these tokens, (layers + 1, L, d) float32: 0 the embedding layer's
    output (the page's "output" group; read apart, not B's), k after encoder layer k (`forward`'s states)."""
    return forward(session, ids, segments, apart).states


def attended(passed: Forward, layer: int, position: int, top: int = TOP,
             floor: float = FLOOR) -> tuple[tuple[int, float], ...]:
    """Whom the token at `position` attends to most in encoder layer `layer` (1 to 6), by the mean of
    the layer's heads: ((position, weight), …), heaviest first, at most `top`, none under `floor`
    but the heaviest (a token whose attention is spread thin still names where most of it goes).
    [CLS] and [SEP] are listed like any token, and so is the token itself: much attention goes there."""
    layers = len(passed.attentions)
    if isinstance(layer, bool) or not isinstance(layer, int) or not 1 <= layer <= layers:
        raise ValueError(f"the layer is {layer!r}; attention is computed in layers 1 to {layers}.")
    length = passed.attentions.shape[1]
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < length:
        raise ValueError(f"token {position!r} is not one of the {length} tokens.")
    row = passed.attentions[layer - 1, position]  # (L,): a query's weights over the keys
    order = np.argsort(-row, kind="stable")[:max(1, top)]  # ties: the earlier token first
    return tuple((int(i), float(row[i])) for n, i in enumerate(order) if n == 0 or row[i] >= floor)


def nearest_at(states: np.ndarray, layer: int, position: int, k: int,
               leave_out: Sequence[int] = ()) -> tuple[tuple[int, float], ...]:
    """The tokens of the pair nearest the token at `position` after encoder layer `layer`, by the cosine of
    their layer-`layer` vectors (`states`, as `forward` keeps them): ((position, cosine), …), highest first,
    at most `k`; the token itself and `leave_out` (the markers) never listed, ties to the earlier token.
    In float64: the lists a page, an export and a script give are the same to the last digit shown."""
    vectors = np.asarray(states[layer], dtype=np.float64)  # (L, d)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    cosines = unit @ unit[position]
    others = np.setdiff1d(np.arange(len(vectors)), [position, *leave_out])
    order = others[np.argsort(-cosines[others], kind="stable")][:k]
    return tuple((int(i), float(np.clip(cosines[i], -1.0, 1.0))) for i in order)


def forget() -> None:
    """Let go of every kept forward pass (the tests start each from none; the budget, to make room)."""
    with _LOCK:
        _KEPT.clear()


BUDGET.kept_by(kept, forget)
