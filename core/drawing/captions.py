"""What the page says in words about a view: the line under the plot, the tables' line, the search's
line, a selected token's attention, the parameters and a training's summary, the tour's text, and the
page's own Markdown.

Text that comes from a user or a link (sentences, tokens, notes quoting them) is shown as plain
text: `plain` escapes it before it meets Markdown, and HTML is escaped. `ui.render` puts these
words where they go; the public API (`ui.api`) answers the same sentences as text (`text_of`).
"""

from __future__ import annotations

import functools
import html
import re

from core.plane.pipeline import Exploration
from core.plane.scene import LAYER, Scene
from core.plane.search import SearchResult
from core.tables.session import Session
from core.view import tour
from core.view.options import ENCODER_MODEL

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>&:])")


def plain(text: str) -> str:
    """Text shown literally inside Markdown: no link, image, emphasis or HTML can come of it."""
    return _MARKDOWN.sub(r"\\\1", text)


def text_of(markup: str) -> str:
    """HTML as the text a person reads: paragraphs on their own lines, tags gone, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup.replace("</p><p>", "</p>\n<p>"))).strip()


def search_text(found: SearchResult | None) -> str:
    if found is None:
        return ""
    line = plain(found.message)
    if found.neighbours:
        near = ", ".join(f"{plain(word)} ({cosine:.2f})" for word, cosine in found.neighbours)
        line += f" Nearest to **{plain(found.hits[0].word)}** by cosine in the full space: {near}."
    return line


MARKERS_SAID = "[CLS] and [SEP] count like any token: much of a layer's attention goes to them"


def attention_text(scene: Scene) -> str:
    """The selected token's line beside its neighbours at layer K (Markdown; "" with none): whom it
    attends to most in layer K, by the mean of the layer's heads, as the plot's lines draw it."""
    hidden = scene.hidden
    attention = None if hidden is None else hidden.attention
    if attention is None:
        return ""
    query = scene.tokens[attention.query]
    listed = ", ".join(f"{'itself' if key == attention.query else plain(scene.tokens[key])} {weight:.2f}"
                       for key, weight in zip(attention.keys, attention.weights, strict=True))
    model = ENCODER_MODEL.split(":")[0]
    return (f"At layer {hidden.layer}, **{plain(query)}** attends most to: {listed} (mean over {plain(model)}'s "
            f"{attention.heads} heads; {plain(MARKERS_SAID)}).")


def layer_neighbours_text(scene: Scene) -> str:
    """The selected token's nearest tokens of the pair after layer K, as the plot's open stars draw them
    (Markdown; "" at layer 0 or without them): at layer K the lists by token and output vector are empty,
    as the vocabulary has no layer-K vectors."""
    hidden, near = scene.hidden, scene.neighbourhood
    if hidden is None or near is None or LAYER not in near.labels:
        return ""
    k = hidden.layer
    listed = ", ".join(f"{plain(label)} {cosine:.3f}" for label, cosine in
                       zip(near.labels[LAYER], near.cosines[LAYER], strict=True))
    return (f"Nearest to **{plain(scene.tokens[near.selected])}** after layer {k}, by the cosine of the pair's "
            f"layer-{k} vectors (the token itself and {plain('[CLS]/[SEP]')} left out): {listed}. After an encoder "
            f"layer the neighbours are the pair's tokens: the vocabulary's rows have no layer-{k} vectors.")


def parameter_status(session: Session) -> str:
    trainable, total = session.parameter_counts()
    frozen = sorted(session.frozen)
    if session.positions == "sinusoidal" and "position" not in frozen:
        frozen.append("position (sinusoidal: fixed)")
    return f"**{trainable:,}** of {total:,} parameters trainable · frozen: {', '.join(frozen) or 'nothing'}"


def training_summary(session: Session) -> str:
    """A training's line, as HTML the page's script writes (its own numbers only: nothing to escape)."""
    result = session.training
    losses = result.losses
    line = f"Trained {result.steps} steps in {result.seconds:.1f} s"
    line += f"; loss {losses[0]:.2f} → {losses[-1]:.2f}." if losses else "."
    if result.purity_before is not None:
        line += (
            f" Category purity of the corpus words (3 nearest neighbours, token table): "
            f"<strong>{result.purity_before:.2f} → {result.purity_after:.2f}</strong>."
        )
    return line


def summary(result: Exploration, session: Session) -> str:
    """The line under the plot, as HTML (the page's script writes it with the plot): what the
    tokens are, how much of their spread the plane shows, and the pipeline's notes (escaped:
    they quote the sentences)."""
    encoding, scene = result.encoding, result.scene
    markers = sum(encoding.special_mask)
    in_b = sum(1 for s, special in zip(encoding.segment_ids, encoding.special_mask, strict=True) if s and not special)
    whose = f"the {scene.plane}'s variance" if scene.plane else "the variance"
    line = (
        f"<strong>{len(encoding)} tokens</strong> ({len(encoding) - in_b - markers} from A, {in_b} from B, "
        f"{markers} markers) · the plane shows {scene.explained[0]:.1%} + {scene.explained[1]:.1%} of "
        f"{html.escape(whose)}"
    )
    if session.trained is not None:
        line += " · faint points: before training, in the plane they had then"
    return "".join(f"<p>{part}</p>" for part in (line, tables_line(session), *layers_line(scene),
                                                 *(f"⚠️ {html.escape(note)}" for note in result.notes)))


def layers_line(scene) -> tuple[str, ...]:
    """What the group "layer K" is, under the plot (the plot's own note only names it): the model,
    honestly, and how it read the sentences."""
    hidden = scene.hidden
    if hidden is None:
        return ()
    name, what = ENCODER_MODEL.split(": ", 1)
    read = "each sentence read on its own" if hidden.apart is not None else "the pair read as one sequence"
    return (f"<strong>Layer {hidden.layer} of {html.escape(name)}</strong>: {html.escape(what)}; {read}.",)


# what the tables are, under the plot: a student must not take a random layer's picture for BERT's
TABLES_SAID = {
    "random": "<strong>A seeded random layer</strong>: its vectors mean nothing yet (Tables → BERT for trained ones).",
    "bert": "<strong>BERT's own tables</strong>, learned in pretraining (MiniLM-L6-H384).",
    "glove": "<strong>GloVe's vectors</strong>, learned from 6 billion words of text.",
    "upload": "<strong>Your uploaded table.</strong>",
}


# the same after a training here: a trained random layer's vectors no longer mean nothing
TRAINED_SAID = {
    "random": "<strong>A seeded random layer, trained here</strong>: its vectors hold what this training taught "
              "them, from a small corpus (Tables → BERT for pretrained ones).",
}


def tables_line(session: Session) -> str:
    """What the plotted tables are, and whether they were trained here."""
    key = session.base.key
    if session.trained is None:
        return TABLES_SAID[key]
    return TRAINED_SAID.get(key) or TABLES_SAID[key] + " Trained here since."


@functools.cache  # eight texts, made once each
def tour_text(number: int | None) -> str:
    """The step's text as HTML (`#tour-text` is a gr.HTML: see `markdown`)."""
    if number is None:
        return markdown(
            f"**A guided tour in {len(tour.STEPS)} steps**, from tokens to a trained table and into the encoder. "
            "Each step sets the sentences, tables and toggles, and explains what the plot shows. "
            "Press **Next** to begin."
        )
    step = tour.step(number)
    return markdown(f"**Step {number} of {len(tour.STEPS)}: {step.title}**\n\n{step.text}")


def markdown(text: str) -> str:
    """The page's own Markdown (the intro, the tour's steps) as HTML, made here: a gr.HTML shows
    it, and the page then loads no Markdown component's code (ui.ondemand's reason). Raw HTML
    in the text is escaped, as gr.Markdown would have shown it."""
    return _markdown_it().render(text).strip()


@functools.cache
def _markdown_it():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "typographer": False})
