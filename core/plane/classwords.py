"""A class's answers placed in the plane: each word where the current table puts it.

A lecturer asks, students answer with words (core/serving/poll.py keeps the round); the
plane draws the round's words as their own group, "class". Each distinct word is tokenized
as the current table tokenizes any text (BERT's WordPiece, GloVe's word list, a trained
table's own), and its vector is its token rows' mean: one row for a word in the vocabulary,
the mean of its pieces for a word the table splits. With the sum and output groups shown, the
word is also put through the layer as if it stood first in sentence A (position 1, segment
A): its sum, and LayerNorm's output of that sum, as the neighbours' output rows are made. All
of it is projected with the plane the scene is drawn in, so a word lands among the tokens as
the table places it. A word the table cannot place (a piece that is [UNK]: a word GloVe does
not know) is listed, not drawn. The round's words come in as data; nothing here reads a class.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import torch

from core.model.projection import PCAProjection
from core.model.tokenizer import UNK
from core.plane.scene import ClassWords
from core.tables.session import Session

PLACED = ("token", "sum", "output")  # the groups the class's words are drawn in (token: always)
POSITION, SEGMENT = 1, 0  # where a word stands for its sum and output: first in sentence A


@dataclass(frozen=True)
class Answers:
    """A round's words to draw, as data: (word, count), most frequent first, and how many more
    words the round counted than it draws. Hashable: drawings of the same answers are shared."""

    drawn: tuple[tuple[str, int], ...]
    undrawn: int = 0


def pieces_of(session: Session, word: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The word's tokens and ids as the session's table tokenizes it (no markers); empty for a
    table whose vocabulary is built from the sentences (the random word-level layer)."""
    if session.tokenizer is None:
        return (), ()
    encoding = session.tokenizer.encode(word)
    kept = [i for i, special in enumerate(encoding.special_mask) if not special]
    return tuple(encoding.tokens[i] for i in kept), tuple(encoding.ids[i] for i in kept)


def place(session: Session, answers: Answers, projection: PCAProjection, groups: Collection[str]) -> ClassWords:
    """The round's drawn words in the plane of `projection`: their token vectors always, their
    sums and outputs when those groups are in `groups`."""
    model = session.model
    words, counts, pieces, ids, unplaced = [], [], [], [], []
    for word, count in answers.drawn:
        tokens, rows = pieces_of(session, word)
        if not tokens or UNK in tokens or any(row >= model.config.vocab_size for row in rows):
            unplaced.append((word, int(count)))
            continue
        words.append(word)
        counts.append(int(count))
        pieces.append(tokens)
        ids.append(rows)
    dims = len(np.atleast_1d(projection.origin()))
    if words:
        with torch.no_grad():
            token = torch.stack([model.tok_embed(torch.tensor(rows)).mean(dim=0) for rows in ids])  # (n, d)
            total = token + model.pos_embed.weight[POSITION] + model.seg_embed.weight[SEGMENT]  # (n, d)
            vectors = {"token": token, "sum": total, "output": model.norm(total)}
        points = {group: projection.transform(vectors[group].numpy()) for group in PLACED
                  if group == "token" or group in groups}
    else:
        points = {group: np.zeros((0, dims)) for group in PLACED if group == "token" or group in groups}
    return ClassWords(words=tuple(words), counts=tuple(counts), pieces=tuple(pieces), points=points,
                      unplaced=tuple(unplaced), undrawn=int(answers.undrawn))
