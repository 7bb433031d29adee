"""From two sentences to everything one picture shows, as plain data.

This is the explorer's pipeline in one place — tokenizer → embedding components → one PCA
basis → `Scene` — so the UI callback only formats what comes back, and tests and benchmarks
run exactly what a user sees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.embedding import COMPONENTS, BertEmbedding
from core.figures import Scene
from core.projection import PCAProjection
from core.session import Session
from core.tokenizer import Encoding

# columns of the token table shown under the plot
TABLE_HEADERS = ("token", "id", "position", "segment") + tuple(f"|{g}|" for g in COMPONENTS)


@dataclass(frozen=True)
class Exploration:
    """One update's result: the scene to draw, the token table, and notes for the user."""

    encoding: Encoding
    scene: Scene
    rows: list[list]  # one row per token, columns TABLE_HEADERS
    notes: tuple[str, ...]  # plain sentences: truncation, unknown words, projection caveats


def _vectors(model: BertEmbedding, ids: torch.Tensor, segments: torch.Tensor) -> dict[str, np.ndarray]:
    with torch.no_grad():
        parts = model.components(ids, segments)
    return {g: parts[g][0].numpy() for g in COMPONENTS}


def explore(session: Session, a: str, b: str, groups: Sequence[str] = COMPONENTS) -> Exploration:
    """Tokenize, embed and project; raises ValueError with a readable message on bad input."""
    unknown = [g for g in groups if g not in COMPONENTS]
    if unknown:
        raise ValueError(f"unknown group {unknown[0]!r}; the groups are {', '.join(COMPONENTS)}.")
    shown = [g for g in COMPONENTS if g in groups]  # keep the display order whatever was ticked

    encoding = session.encode(a, b)
    notes = [encoding.truncation.describe(session.model.config.maxlen)]
    segment_ids = encoding.segment_ids
    n_segments = session.model.config.n_segments
    if max(segment_ids) >= n_segments:
        # a one-row segment table cannot tell B from A; say so rather than refuse
        segment_ids = tuple(min(s, n_segments - 1) for s in segment_ids)
        notes.append(f"This table has {n_segments} segment row, so sentence B uses segment 0 like A.")
    if encoding.n_unknown:
        notes.append(f"{encoding.n_unknown} token(s) are not in the vocabulary and became [UNK].")

    ids, segments = torch.tensor([encoding.ids]), torch.tensor([segment_ids])
    vectors = _vectors(session.model, ids, segments)  # (L, d) each
    norms = {g: np.linalg.norm(v, axis=1) for g, v in vectors.items()}

    previous = None
    if shown:
        projection = PCAProjection()
        flat = projection.fit_transform(np.concatenate([vectors[g] for g in shown]))
        points = dict(zip(shown, np.split(flat, len(shown)), strict=True))
        if session.trained is not None:
            # the untrained tables in the trained plane: how far training moved each point
            before = _vectors(session.source.model, ids, segments)
            flat = projection.transform(np.concatenate([before[g] for g in shown]))
            previous = dict(zip(shown, np.split(flat, len(shown)), strict=True))
        explained = tuple(float(r) for r in projection.explained_variance_ratio_)
        origin = projection.origin()
        plot_message = projection.message_
    else:
        points, explained, origin = {}, (0.0, 0.0), np.zeros(2)
        plot_message = "No group is ticked: tick token, position, segment, sum or output."
    notes.append(plot_message)

    notes = tuple(n for n in notes if n)
    scene = Scene(
        tokens=encoding.tokens,
        ids=encoding.ids,
        positions=encoding.positions,
        segment_ids=segment_ids,
        special_mask=encoding.special_mask,
        continuation_mask=encoding.continuation_mask,
        points=points,
        norms={g: norms[g] for g in shown},
        explained=explained,
        origin=origin,
        message=plot_message,
        previous=previous,
    )
    rows = [
        [tok, i, p, s, *(round(float(norms[g][k]), 3) for g in COMPONENTS)]
        for k, (tok, i, p, s) in enumerate(
            zip(encoding.tokens, encoding.ids, encoding.positions, segment_ids, strict=True)
        )
    ]
    return Exploration(encoding, scene, rows, notes)
