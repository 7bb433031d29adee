"""From two sentences to everything one picture shows, as plain data.

This is the explorer's pipeline in one place — tokenizer → embedding components [→ the
encoder's hidden states, `core.plane.layers`] → one PCA basis → `Scene` — so the UI callback
only formats what comes back, and tests and benchmarks run exactly what a user sees.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from core.model.embedding import COMPONENTS, BertEmbedding
from core.model.projection import PCAProjection
from core.model.tokenizer import CLS, SEP, UNK, Encoding
from core.model.training import Corpus
from core.plane.basis import SPECTRUM, SPECTRUM_ROWS, vocabulary_basis
from core.plane.classwords import Answers, place
from core.plane.layers import apart_at, attended, forward, nearest_at, unreadable
from core.plane.neighbours import Neighbour, in_table, outputs_in_table
from core.plane.scene import LAYER, Attention, HiddenStates, Neighbourhood, Scene
from core.tables.session import Session
from core.view.options import ENCODER_LAYERS, LIMITS, READINGS, Refused
from core.view.state import View

MAX_NEIGHBOURS = LIMITS["k"][1]  # the view's own limit: a link, the slider and the API say the same

# columns of the token table shown under the plot
TABLE_HEADERS = ("token", "id", "position", "segment") + tuple(f"|{g}|" for g in COMPONENTS)


@dataclass(frozen=True)
class Exploration:
    """One update's result: the scene to draw, the token table, and notes for the user."""

    encoding: Encoding
    scene: Scene
    rows: list[list]  # one row per token, columns TABLE_HEADERS
    notes: tuple[str, ...]  # plain sentences: truncation, unknown words, projection caveats
    vectors: Mapping[str, np.ndarray]  # group -> (L, d) float32: every vector, full width
    projection: PCAProjection | None  # the plane drawn in (None when no group is ticked)
    # the selected token's nearest vocabulary entries: kind ("token"/"output") -> (word, cosine); at an
    # encoder layer K, "layer" -> the pair's nearest tokens after it, ("bank (8)", cosine of layer-K vectors)
    neighbours: Mapping[str, tuple[tuple[str, float], ...]] | None = None


def _vectors(model: BertEmbedding, ids: torch.Tensor, segments: torch.Tensor) -> dict[str, np.ndarray]:
    with torch.no_grad():
        parts = model.components(ids, segments)
    return {g: parts[g][0].numpy() for g in COMPONENTS}


def explore(
    session: Session,
    a: str,
    b: str,
    groups: Sequence[str] = COMPONENTS,
    *,
    selected: int | None = None,
    k: int = 10,
    flipped: Mapping[int, str] | None = None,
    components: int = 2,
    categories: Mapping[str, Sequence[str]] | None = None,
    answers: Answers | None = None,
    layer: int = 0,
    reading: str = "pair",
) -> Exploration:
    """Tokenize, embed and project; raises ValueError with a readable message on bad input.

    selected: a token's index whose nearest vocabulary entries to find and highlight.
    flipped: tokens to give the other segment id (A <-> B), to see the shift it adds, as
        {index: token}; an entry whose index no longer holds that token (the text was edited
        since) is ignored.
    components: 2 for the plane, 3 for the rotatable PC1–PC3 view (always fitted to this
        sentence's vectors: the vocabulary and frozen planes are 2-D).
    categories: word categories to colour ({"animals": ["cat", …], …}), e.g. the built-in
        corpus's (``core.model.training.Corpus.builtin().categories``) while training on it.
    answers: a class's words to place in the plane (`core.plane.classwords`), drawn as the group "class".
    layer: the encoder's depth to draw (0: none): each token after encoder layer K, with its path
        from the output (hidden state 0), on tables MiniLM-L6's encoder reads (`core.plane.layers`;
        on others nothing more is drawn and the encoder never runs). The plane is then fitted to
        the groups shown and every hidden state, 0 to 6, so it is the same plane at every K > 0.
        With a token `selected`, the tokens it attends to most in layer K (`scene.hidden.attention`), and
        its k neighbours are the pair's tokens nearest it after layer K, not the vocabulary's (`_layer_neighbours`).
    reading: "pair" (the encoder reads the page's one sequence) or "apart" (each sentence on its
        own, `core.plane.layers.forward`'s `apart`): what the layers take in.

    With d_model = 2 there is nothing to project: the scene holds the vectors' exact
    coordinates (``Scene.exact``), whatever the plane or the number of components.
    """
    unknown = [g for g in groups if g not in COMPONENTS]
    if unknown:
        raise ValueError(f"unknown group {unknown[0]!r}; the groups are {', '.join(COMPONENTS)}.")
    shown = [g for g in COMPONENTS if g in groups]  # keep the display order whatever was ticked
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_NEIGHBOURS:
        raise ValueError(f"the number of neighbours is {k!r}; choose 0 (none) to {MAX_NEIGHBOURS}.")
    if isinstance(components, bool) or components not in (2, 3):
        raise ValueError(f"the view has {components!r} components; choose 2 (the plane) or 3 (PC1–PC3).")
    if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer <= ENCODER_LAYERS:
        raise ValueError(f"the layer is {layer!r}; choose 0 (the embedding layer) to {ENCODER_LAYERS}.")
    if reading not in READINGS:
        raise ValueError(f"the reading is {reading!r}; choose {' or '.join(map(repr, READINGS))}.")

    encoding = session.encode(a, b)
    model = session.model
    notes = [encoding.truncation.describe(model.config.maxlen)]
    n_segments = model.config.n_segments
    reference = tuple(min(s, n_segments - 1) for s in encoding.segment_ids)
    if reference != encoding.segment_ids:
        # a one-row segment table cannot tell B from A; say so rather than refuse
        notes.append(f"This table has {n_segments} segment row, so sentence B uses segment 0 like A.")
    flipped = [i for i, token in (flipped or {}).items() if 0 <= i < len(encoding) and encoding.tokens[i] == token]
    segment_ids, flip_note = _flip(encoding, reference, flipped, n_segments)
    notes.append(flip_note)
    if encoding.n_unknown:
        notes.append(f"{encoding.n_unknown} token(s) are not in the vocabulary and became [UNK].")

    ids, segments = torch.tensor([encoding.ids]), torch.tensor([segment_ids])
    vectors = _vectors(model, ids, segments)  # (L, d) each
    norms = {g: np.linalg.norm(v, axis=1) for g, v in vectors.items()}

    projection, plane, previous, shift_from, neighbourhood, neighbours = None, "", None, None, None, None
    placed, hidden = None, None
    exact = model.config.d_model == 2
    if shown:
        # the plane is the untrained tables' (see _plane), and they are drawn faintly in it too:
        # how far training moved each point
        before = vectors if session.trained is None else _vectors(session.source.model, ids, segments)
        # the encoder's states only where it reads these tables: at layer 0, or on others, it never runs
        apart = apart_at(encoding.tokens, reading)
        passed = (forward(session, encoding.ids, segment_ids, apart) if layer and unreadable(session) is None
                  else None)
        states = None if passed is None else passed.states
        # every state 0 to 6 in the plane's fit, whichever K is drawn: moving K moves points, never the axes
        fitted = [before[g] for g in shown] + ([] if states is None else list(states))
        projection, plane, basis_note = _plane(session, fitted, components)
        notes.append(basis_note)
        points = {g: projection.transform(vectors[g]) for g in shown}
        if session.trained is not None:
            previous = {g: projection.transform(before[g]) for g in shown}
        explained = tuple(float(r) for r in projection.explained_variance_ratio_)
        origin = projection.origin()
        plot_message = projection.message_
        shift_from = _shift_from(model, projection, points, segment_ids, reference, flipped) if "sum" in shown else None
        # k = 0: the selection's addition path, without neighbours; at layer K the neighbours are the layer's
        if selected is not None and k and states is None:
            neighbourhood, neighbours, note = _neighbours(session, encoding, vectors, segment_ids, projection,
                                                          selected, k)
            notes.append(note)
        if answers is not None and answers.drawn:
            placed = place(session, answers, projection, shown)
        if states is not None:
            drawn = projection.transform(states[:layer + 1].reshape(-1, states.shape[-1]))
            attention, same = None, ()
            if _is_index(selected, len(encoding)):  # whom it attends to in layer K, the same forward pass's
                keys, weights = zip(*attended(passed, layer, selected), strict=True)
                attention = Attention(selected, keys, weights, passed.heads)
                same = _same_word(encoding, states, selected)
            hidden = HiddenStates(layer, len(states) - 1, drawn.reshape(layer + 1, len(encoding), -1),
                                  np.linalg.norm(states[layer], axis=1), attention, apart, same)
            if selected is not None and k:
                neighbourhood, neighbours, note = _layer_neighbours(encoding, states, hidden, selected, k)
                notes.append(note)
    else:
        dims = 2 if exact else components
        points, explained, origin = {}, (0.0,) * dims, np.zeros(dims)
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
        norms={g: norms[g] for g in COMPONENTS},  # every one: the token table shows them all
        explained=explained,
        origin=origin,
        message=plot_message,
        previous=previous,
        plane=plane,
        shift_from=shift_from,
        neighbourhood=neighbourhood,
        selected=selected if _is_index(selected, len(encoding)) else None,
        exact=exact and bool(shown),
        segment_shift=_segment_shift(model),
        categories=_categories(encoding.tokens, categories) if categories else None,
        answers=placed,
        hidden=hidden,
    )
    # rounded as one array: per-cell round(float(...)) was a sixth of a 512-token update
    rounded = np.round(np.column_stack([norms[g] for g in COMPONENTS]).astype(np.float64), 3).tolist()
    rows = [
        [tok, i, p, s, *row]
        for tok, i, p, s, row in zip(
            encoding.tokens, encoding.ids, encoding.positions, segment_ids, rounded, strict=True
        )
    ]
    return Exploration(encoding, scene, rows, notes, vectors, projection, neighbours)


def _same_word(encoding, states: np.ndarray, selected: int) -> tuple[tuple[int, tuple[float, ...]], ...]:
    """The selected token's cosine with every other place of the same word (its id, not a marker),
    at each depth: ((position, (cosine after 0, 1, …, N layers)), …), at most three places."""
    if encoding.special_mask[selected]:
        return ()
    others = [i for i, token_id in enumerate(encoding.ids)
              if token_id == encoding.ids[selected] and i != selected][:3]
    if not others:
        return ()
    picked = states[:, [selected, *others]]  # (N + 1, 1 + places, d): only the tokens compared
    unit = picked / np.maximum(np.linalg.norm(picked, axis=-1, keepdims=True), 1e-12)
    cosines = np.einsum("nd,npd->pn", unit[:, 0], unit[:, 1:])  # (places, N + 1)
    return tuple((i, tuple(float(c) for c in row)) for i, row in zip(others, cosines, strict=True))


def explore_view(view: View, session: Session, tokens: tuple[str, ...] | None = None,
                 answers: Answers | None = None) -> Exploration:
    """The pipeline's result for a tab's view (the one call the plane and the exports share);
    `answers`: a class's words, drawn when the view shows them (`View.answers`)."""
    flipped = flipped_tokens(view, session, tokens)
    # a trained layer colours the built-in corpus's words by category: "related words gather"
    categories = builtin_categories() if session.trained is not None else None
    return explore(session, view.sentence_a, view.sentence_b, view.groups, selected=view.token, k=view.k,
                   flipped=flipped, components=view.dims, categories=categories,
                   answers=answers if view.answers else None, layer=view.layer, reading=view.reading)


@functools.cache
def builtin_categories() -> Mapping[str, tuple[str, ...]]:
    return Corpus.builtin().categories


def flipped_tokens(view: View, session: Session, tokens: tuple[str, ...] | None) -> dict[int, str]:
    """The view's flipped positions with their tokens, as the pipeline takes them."""
    if not view.flips:
        return {}
    if tokens is None:
        tokens = session.encode(view.sentence_a, view.sentence_b).tokens
    return {i: tokens[i] for i in view.flips if i < len(tokens)}


def fit_sentence_basis(session: Session, a: str, b: str, groups: Sequence[str] = COMPONENTS) -> PCAProjection:
    """The plane "this sentence" shows right now, to keep as the frozen basis; what it was fitted
    to is kept with it (`fitted_to_`: the sentences, groups and tables), for core/drawing/code.py."""
    result = explore(session.with_basis("sentence"), a, b, groups)
    if result.projection is None:
        raise Refused("No group is ticked, so there is no plane to keep: tick at least one group.")
    result.projection.fitted_to_ = (a, b, tuple(g for g in COMPONENTS if g in groups), session.tables())
    return result.projection


def _plane(session: Session, shown: list[np.ndarray], components: int = 2) -> tuple[PCAProjection, str, str]:
    """The projection for this update, whose variance its axes explain, and a note if any.

    `shown` are the vectors of the tables before any training, and the vocabulary's plane is
    theirs too: a trained session is drawn in the plane its untrained tables had, so a frozen
    table's points stay exactly where they were and what moves on screen is what training
    changed (refitted to the trained vectors, every point would move with the axes)."""
    if session.model.config.d_model == 2:
        return exact_plane(np.concatenate(shown)), "", EXACT_NOTE
    if components == 3:
        vectors = np.concatenate(shown)
        note = "" if session.basis == "sentence" else THREE_D_NOTE
        return PCAProjection(n_components=3, n_spectrum=sentence_projection(len(vectors)).n_spectrum).fit(
            vectors), "", note
    if session.basis == "vocabulary":
        return vocabulary_basis(session.source.model.tok_embed).projection, "vocabulary", ""
    if session.basis == "frozen" and session.frozen_basis is not None:
        return session.frozen_basis, "frozen view", ""
    vectors = np.concatenate(shown)
    return sentence_projection(len(vectors)).fit(vectors), "", ""


def sentence_projection(rows: int) -> PCAProjection:
    """A fresh projection for the ``rows`` vectors of one update (this sentence's own plane,
    fitted anew each time), with the bar's spectrum when measuring it costs little (long inputs:
    the two axes' shares only)."""
    return PCAProjection(n_spectrum=SPECTRUM if rows <= SPECTRUM_ROWS else 0)


EXACT_NOTE = "With d_model = 2 there is nothing to project: the plot shows each vector's exact coordinates."
THREE_D_NOTE = "The 3-D view is fitted to this sentence's vectors; the chosen plane applies to the 2-D view."


def exact_plane(vectors: np.ndarray) -> PCAProjection:
    """A projection that keeps 2-D vectors exactly as they are: axes dim 0 and dim 1, no centring.

    Fitted like the PCA (same attributes, so the rest of the pipeline and a frozen plane work
    unchanged), but its components are the identity: x @ I is x, bit for bit, so a LayerNorm
    output at (1, −1) is drawn at (1, −1).
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    d = vectors.shape[1]
    variance = vectors.var(axis=0) if len(vectors) > 1 else np.zeros(d)
    total = variance.sum()
    plane = PCAProjection()
    plane.mean_ = np.zeros(d)
    plane.components_ = np.eye(2, d)
    plane.explained_variance_ratio_ = variance / total if total > 0 else np.zeros(d)
    plane.spectrum_ = plane.explained_variance_ratio_.copy()
    plane.message_ = ""
    plane.n_samples_, plane.n_features_ = len(vectors), d
    return plane


def _is_index(selected: object, length: int) -> bool:
    return not isinstance(selected, bool) and isinstance(selected, int) and 0 <= selected < length


def _segment_shift(model: BertEmbedding) -> float | None:
    """|seg[1] − seg[0]|: how far segment B moves every one of its tokens, in the full space."""
    if model.config.n_segments < 2:
        return None
    rows = model.seg_embed.weight.detach().numpy()
    return float(np.linalg.norm(rows[1].astype(np.float64) - rows[0]))


def _categories(tokens: Sequence[str], categories: Mapping[str, Sequence[str]]) -> tuple[str, ...]:
    """Each token's category name, "" for a token in none (compared in lower case, as typed)."""
    home = {word.lower(): name for name, words in categories.items() for word in words}
    return tuple(home.get(token.lower(), "") for token in tokens)


def _flip(
    encoding: Encoding, reference: tuple[int, ...], flipped: Collection[int], n_segments: int
) -> tuple[tuple[int, ...], str]:
    """The segment ids with the chosen tokens moved to the other segment, and what was done."""
    if not flipped:
        return reference, ""
    if n_segments < 2:
        return reference, "This table has one segment row, so no token can change segment."
    segment_ids, done = list(reference), []
    for index in sorted(flipped):
        segment_ids[index] = 1 - min(reference[index], 1)
        done.append(f"'{encoding.tokens[index]}' ({index}) now uses segment {segment_ids[index]}")
    return tuple(segment_ids), f"Segment flipped: {', '.join(done)}."


def _shift_from(
    model: BertEmbedding,
    projection: PCAProjection,
    points: Mapping[str, np.ndarray],
    segment_ids: tuple[int, ...],
    reference: tuple[int, ...],
    flipped: Collection[int],
) -> np.ndarray | None:
    """Where each sum would be in its reference segment: A's row for B tokens, the old row for
    flipped ones (NaN where the two agree). The projection is affine, so moving a vector by
    seg[s] − seg[r] moves its point by P(seg[s]) − P(seg[r])."""
    if model.config.n_segments < 2:
        return None
    rows = projection.transform(model.seg_embed.weight.detach().numpy())  # (n_segments, 2)
    now = np.asarray(segment_ids)
    was = np.where(np.isin(np.arange(len(now)), list(flipped)), np.asarray(reference), 0)
    start = points["sum"] - (rows[now] - rows[was])
    start[now == was] = np.nan
    return start


def _names(session: Session, encoding: Encoding) -> Sequence[str] | Mapping[int, str]:
    """What each row of the token table stands for, for listing neighbours."""
    if session.tokenizer is not None:
        names = session.tokenizer.tokens_by_id
        if len(names) >= session.model.config.vocab_size:
            return names
        # a random word table trained on a corpus of fewer words than it has rows: the others are rows
        return _RowNames(enumerate(names))
    # a random word-level table: the typed text's vocabulary names some rows, the rest are rows
    words = {id_: word for word, id_ in (encoding.vocab or {}).items()}
    return _RowNames(words)


class _RowNames(dict):
    def __missing__(self, id_: int) -> str:
        return f"row {id_}"


def _neighbours(
    session: Session,
    encoding: Encoding,
    vectors: Mapping[str, np.ndarray],
    segment_ids: tuple[int, ...],
    projection: PCAProjection,
    selected: int,
    k: int,
) -> tuple[Neighbourhood | None, dict | None, str]:
    """The selected token's k nearest vocabulary entries, by token vector and by output vector.

    Markers and the token itself are left out: "the" is trivially closest to "the".
    """
    if isinstance(selected, bool) or not isinstance(selected, int) or not 0 <= selected < len(encoding):
        return None, None, f"Token {selected!r} is not in this sentence pair, so no neighbours are shown."
    model, names = session.model, _names(session, encoding)
    # a random word table has no tokenizer of its own: its markers' ids are in the encoding's vocabulary
    lookup = session.tokenizer.token_to_id if session.tokenizer is not None else (encoding.vocab or {}).get
    markers = {lookup(t) for t in (CLS, SEP, UNK)}
    exclude = {encoding.ids[selected]} | (markers - {None})
    position = model.pos_embed.weight[selected].detach().numpy()
    segment = model.seg_embed.weight[segment_ids[selected]].detach().numpy()
    norm = model.norm
    found: dict[str, tuple[Neighbour, ...]] = {
        # the table as the layer holds it: a trained session's is never built whole here
        "token": in_table(model.tok_embed, vectors["token"][selected], k, exclude=exclude),
        "output": outputs_in_table(
            model.tok_embed,
            position,
            segment,
            norm.weight.detach().numpy(),
            norm.bias.detach().numpy(),
            norm.eps,
            vectors["output"][selected],
            k,
            exclude=exclude,
        ),
    }
    with torch.no_grad():
        token_rows = {kind: torch.tensor([n.id for n in near], dtype=torch.long) for kind, near in found.items()}
        own = {
            "token": model.tok_embed(token_rows["token"]),  # (k, d)
            "output": norm(model.tok_embed(token_rows["output"]) + torch.from_numpy(position + segment)),  # (k, d)
        }
    neighbourhood = Neighbourhood(
        selected=selected,
        points={kind: projection.transform(own[kind].numpy()) for kind in found},
        labels={kind: tuple(names[n.id] for n in near) for kind, near in found.items()},
        cosines={kind: np.asarray([n.cosine for n in near], dtype=np.float32) for kind, near in found.items()},
    )
    listed = {kind: tuple((names[n.id], round(n.cosine, 3)) for n in near) for kind, near in found.items()}
    return neighbourhood, listed, ""


def _layer_neighbours(encoding: Encoding, states: np.ndarray, hidden: HiddenStates, selected: int,
                      k: int) -> tuple[Neighbourhood | None, dict | None, str]:
    """The selected token's k nearest tokens of the pair after encoder layer K, by the cosine of their
    layer-K vectors, at their layer-K points: what the similarity view compares at that layer. The
    vocabulary has no layer-K vectors (the encoder reads sentences, not rows of a table), and its
    output vectors held against a layer-K state mostly name the word's own forms whatever the
    context (README, "Decisions worth knowing"). The token itself and the markers are left out."""
    if not _is_index(selected, len(encoding)):
        return None, None, f"Token {selected!r} is not in this sentence pair, so no neighbours are shown."
    markers = [i for i, special in enumerate(encoding.special_mask) if special]
    found = nearest_at(states, hidden.layer, selected, k, markers)
    if not found:
        return None, None, ""
    indices = tuple(i for i, _ in found)
    labels = tuple(f"{encoding.tokens[i]} ({i})" for i in indices)
    neighbourhood = Neighbourhood(
        selected=selected,
        points={LAYER: np.asarray(hidden.points[-1])[list(indices)]},
        labels={LAYER: labels},
        cosines={LAYER: np.asarray([c for _, c in found], dtype=np.float32)},
        tokens=indices,
    )
    return neighbourhood, {LAYER: tuple((label, round(c, 3)) for label, (_, c) in zip(labels, found, strict=True))}, ""
