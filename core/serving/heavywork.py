"""The heavy-work child's entry (`python -m core.serving.heavywork FD`): warm, then serve.

`core.process.offload` starts this child and speaks to it; the warming is here because it needs
the tables and the training, which sit above the process package and must not be imported by it.
"""

from __future__ import annotations

import sys

from core.model.training import Corpus, TrainConfig
from core.process import offload
from core.tables.session import Session
from core.view.state import Settings


def warm() -> None:
    """A one-step training on a tiny layer, before any job comes: what the first training runs.

    A process's first training builds its layer on torch's "meta" device, and that first use
    imports torch's compiler, which every page of a class pressing Train would wait for. Here it
    is paid while the server starts."""
    tiny = Session.create(Settings(tokenizer="word", vocab_size=50, d_model=2, maxlen=16))
    tiny.trained_on(Corpus.builtin(), TrainConfig(steps=1))


if __name__ == "__main__":
    offload.main(sys.argv[1:], warm)
