"""The side views of one sentence pair: positions, LayerNorm and token-to-token similarity.

Each takes the same inputs as the main plane (`core.plane.pipeline.explore`) and returns a figure dict
plus what the page lists beside it, so what a side tab shows is always the sentence the
plane shows. They run only when their tab is open: a 512 × 512 heatmap is not worth sending
on every keystroke to a student who is looking at the plane.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from core.drawing.charts import collapse_figure, layernorm_figure, positions_figure, similarity_figure
from core.drawing.palette import LIGHT, Palette
from core.model.measures import RepeatedToken, cosine_matrix, layernorm_stats, repeated_tokens
from core.model.projection import PCAProjection
from core.plane.layers import apart_at, hidden_states, unreadable
from core.plane.pipeline import explore
from core.tables.presets import sinusoidal_table
from core.tables.session import Session
from core.view.options import ENCODER_MODEL

PATH_POSITIONS = 64  # positions drawn at least: a path needs a few dozen steps to show its shape
# a position whose vector is this many times the median position's length is left out of the
# path and its plane, and named on the plot: BERT's position 0 is about 5× the others, so a
# plane fitted with it has it alone on one axis and the other 511 on a line
OUTLIER_RATIO = 3.0

COLLAPSE = (
    "With d_model = 2 a vector (a, b) has mean (a + b)/2; subtracting it leaves ±(a − b)/2 in the two "
    "places, and dividing by the standard deviation |a − b|/2 leaves **(+1, −1) or (−1, +1)**. Every output "
    "lands on one of two points (times γ, plus β): the vector's size and direction are lost, only which "
    "entry was larger survives. This is why the first listing prints only ±1."
)


@dataclass(frozen=True)
class PositionsDetail:
    figure: dict
    repeated: tuple[RepeatedToken, ...]  # same word at two positions: cosine of its output vectors
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class LayerNormDetail:
    figure: dict
    summary: str  # markdown for the page


def positions_detail(
    session: Session, a: str, b: str, flipped: Mapping[int, str] | None = None, *, presenter: bool = False,
    palette: Palette = LIGHT,
    narrow: bool = False,
) -> PositionsDetail:
    """This table's position vectors as a path in order, beside fixed sinusoidal ones.

    Both paths cover at least PATH_POSITIONS positions (or the table's length), each in its
    own PCA plane, because the shape of the path is the lesson: learned positions drift
    smoothly, sinusoidal ones circle; random ones jump. `narrow`: drawn for a phone's screen.
    """
    result = explore(session, a, b, groups=[], flipped=flipped)
    config = session.model.config
    n = min(config.maxlen, max(len(result.encoding), PATH_POSITIONS))
    tables = {
        f"this table ({session.positions_name})": session.model.pos_embed.weight[:n],
        "sinusoidal": sinusoidal_table(n, config.d_model).weight,
    }
    paths, explained, indices, notes = {}, {}, {}, {}
    for name, table in tables.items():
        rows = table.detach().numpy()
        kept, note = _without_outliers(rows)
        projection = PCAProjection().fit(rows[kept])
        paths[name] = projection.transform(rows[kept])
        explained[name] = projection.explained_variance_ratio_
        indices[name], notes[name] = kept, note
    skip = result.encoding.special_mask
    repeated = repeated_tokens(result.encoding.tokens, result.vectors["output"], skip=skip)
    figure = positions_figure(paths, explained, presenter=presenter, indices=indices, notes=notes, palette=palette,
                              narrow=narrow)
    return PositionsDetail(figure, repeated, result.encoding.tokens)


def _without_outliers(rows: np.ndarray) -> tuple[np.ndarray, str]:
    """The positions to draw (all but those far longer than the typical one), and a note naming
    the ones left out with their lengths, or ""."""
    norms = np.linalg.norm(rows.astype(np.float64), axis=1)
    typical = float(np.median(norms)) if len(norms) else 0.0
    outliers = np.flatnonzero(norms > OUTLIER_RATIO * typical) if typical > 0 and len(norms) > 3 else []
    kept = np.setdiff1d(np.arange(len(rows)), outliers)
    if not len(outliers):
        return kept, ""
    named = ", ".join(f"{i} (length {norms[i]:.2f})" for i in outliers[:5])
    more = f" and {len(outliers) - 5} more" if len(outliers) > 5 else ""
    word, them = ("position", "it") if len(outliers) == 1 else ("positions", "them")
    return kept, (f"Left out: {word} {named}{more}, over {OUTLIER_RATIO:g}× the typical length "
                  f"{typical:.2f}; with {them} the others would flatten into one line.")


def layernorm_detail(
    session: Session, a: str, b: str, flipped: Mapping[int, str] | None = None, *, presenter: bool = False,
    narrow: bool = False, palette: Palette = LIGHT,
) -> LayerNormDetail:
    """What LayerNorm did to each token; with d_model = 2, the collapse to two points. `narrow`:
    drawn for a phone's screen."""
    result = explore(session, a, b, groups=[], flipped=flipped)
    norm, tokens = session.model.norm, result.encoding.tokens
    summed, output = result.vectors["sum"], result.vectors["output"]
    stats = layernorm_stats(summed, output, norm.weight.detach().numpy(), norm.bias.detach().numpy())
    summary = f"Per token, across its {summed.shape[1]} dimensions — {stats.describe()}."
    if summed.shape[1] == 2:
        figure = collapse_figure(summed, output, tokens, presenter=presenter, palette=palette)
        summary += "\n\n" + COLLAPSE
    else:
        figure = layernorm_figure(stats, tokens, presenter=presenter, narrow=narrow, palette=palette)
    return LayerNormDetail(figure, summary)


def similarity_detail(
    session: Session, a: str, b: str, flipped: Mapping[int, str] | None = None, *, presenter: bool = False,
    palette: Palette = LIGHT, layer: int = 0, reading: str = "pair",
) -> dict:
    """Cosine similarity of every pair of output vectors, token × token; at `layer` K > 0, of the
    tokens after encoder layer K (`core.plane.layers`: on tables the encoder reads, else the outputs),
    read as the pair or each sentence on its own (`reading`)."""
    result = explore(session, a, b, groups=[], flipped=flipped)
    vectors, title = result.vectors["output"], "Cosine similarity"
    if layer and unreadable(session) is None:
        vectors = hidden_states(session, result.encoding.ids, result.scene.segment_ids,
                                apart_at(result.encoding.tokens, reading))[layer]
        title = (f"Cosine similarity after layer {layer} of {ENCODER_MODEL.split(':')[0]}"
                 + (", each sentence read on its own" if reading == "apart" else ""))
    matrix = cosine_matrix(np.asarray(vectors))
    return similarity_figure(result.encoding.tokens, matrix, presenter=presenter, palette=palette, title=title)
