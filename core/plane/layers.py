"""The encoder's layers in the plane: which tables MiniLM-L6's encoder can read, and their hidden states.

The encoder (`core.model.encoder`) was trained on the outputs of BERT's own embedding layer, so it
reads only those: the source "bert" with its learned positions, untrained (`unreadable` says why
not for any other tables; GloVe's 50-d rows, an upload, a random layer or tables training changed
are not what its weights expect, and running it on them would draw numbers no model makes).
`hidden_states` runs the embedding layer and the six encoder layers once per (tables, tokens,
segments) in inference mode, kept in a cache bounded in bytes, so moving the layer slider or
opening the similarity view reads the same forward pass. `reached` is how a tab's view meets its
tables: a layer they cannot give becomes 0, with a note saying why.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

import numpy as np
import torch
from cachetools import LRUCache

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
KEPT_BYTES = 32 * 2**20  # hidden states kept at once: a 512-token pair's seven states are 5.5 MiB


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


def _size(entry: tuple[weakref.ref, np.ndarray]) -> int:
    return entry[1].nbytes


_KEPT: LRUCache = LRUCache(maxsize=KEPT_BYTES, getsizeof=_size)
_LOCK = threading.Lock()


def hidden_states(session: Session, ids: Sequence[int], segments: Sequence[int]) -> np.ndarray:
    """Every hidden state of these tokens, (layers + 1, L, d) float32: 0 the embedding layer's
    output (the page's "output" group), k after encoder layer k. The session's tables must be readable
    (`unreadable` is None): a programming error otherwise, raised as ValueError."""
    why = unreadable(session)
    if why is not None:
        raise ValueError(why)
    from core.model.checkpoints import bert_encoder
    from core.model.encoder import encode

    model = session.model
    named = (id(model), tuple(ids), tuple(segments))
    with _LOCK:
        found = _KEPT.get(named)
    if found is not None and found[0]() is model:
        return found[1]
    x, seg = torch.tensor([list(ids)]), torch.tensor([list(segments)])  # (1, L)
    out = encode(model, bert_encoder(), x, seg)  # inference mode
    states = torch.cat(out.hidden_states).numpy()  # (N + 1, L, d)
    states.setflags(write=False)  # shared by every tab that reads the same tokens
    with _LOCK:
        if states.nbytes <= KEPT_BYTES:
            _KEPT[named] = (weakref.ref(model), states)
    return states


def forget() -> None:
    """Let go of every kept forward pass (the tests start each from none)."""
    with _LOCK:
        _KEPT.clear()
