"""The page drawn from a `View`: which widgets and outputs an applied change rewrites.

`outputs(page, step)` alone decides it, from the fields' declarations, so no view renders two ways.
Text from a user or a link is shown as plain text (escaped for Markdown and HTML).
"""

from __future__ import annotations

import functools
import hashlib
import html
import json
from collections.abc import Iterable

import gradio as gr

from core.drawing.captions import (
    attention_text,
    layer_neighbours_text,
    parameter_status,
    plain,
    search_text,
    summary,
    tour_text,
    training_summary,
)
from core.drawing.charts import collapse_figure, context_spec, loss_spec, variance_bars
from core.drawing.code import reads_corpus, recipe, script
from core.drawing.details import layernorm_detail, positions_detail, similarity_detail
from core.drawing.figures import background_trace, embedding_spec
from core.drawing.palette import palette
from core.drawing.shared import shared
from core.drawing.wire import figure_json, trace_json
from core.model.listing import run_listing
from core.model.lookup import walk_through
from core.plane.basis import background, vocabulary_basis
from core.plane.classwords import Answers
from core.plane.layers import EXPLAINED, unreadable
from core.plane.pipeline import Exploration, explore_view, flipped_tokens
from core.plane.search import SearchResult, search
from core.serving.classroom import Follower
from core.serving.classstore import lesson_of
from core.serving.tabs import Change
from core.tables.session import Session
from core.view import tour
from core.view.fields import BACKGROUND, DETAIL, LISTING, LOOKUP, PLANE, TABLES
from core.view.options import BASES, DETAILS, MAX_QUERY, PARTS
from core.view.share import to_query
from core.view.state import FIELDS, View

NO_TOKEN = ""  # the token picker's value when no token is selected


def notice(notes: Iterable[str], mark: str = "⚠️") -> str:
    """The notice area's HTML: each note escaped on its own line, marked as a warning (or `mark`)."""
    return "".join(f"<p>{mark} {html.escape(note)}</p>" for note in notes if note)


def token_choices(tokens: Iterable[str]) -> list[tuple[str, int | str]]:
    """The picker's list: "none" (the picker ignores None, so "" clears it), then "position: token"."""
    return [("none", NO_TOKEN), *((f"{i}: {token}", i) for i, token in enumerate(tokens))]


def _shown(names: Iterable[str]) -> set[str]:
    """These fields with the others their widgets show (`_ALSO`), those that have a widget."""
    names = set(names)
    names |= {shown for name, shown in _ALSO.items() if name in names}
    return {name for name in names if name in FIELDS and FIELDS[name].widget is not None}


def fields(page, view: View, names: Iterable[str], tokens: tuple[str, ...] = ()) -> dict:
    """The widgets of these view fields set to the view's values (`tokens`: the picker's list)."""
    shown, out = _shown(names), {}
    for name in (name for name in FIELDS if name in shown):  # in the declarations' order
        widget = getattr(page, FIELDS[name].widget)
        if name in _WRITERS:
            out.update(_WRITERS[name](widget, view, tokens))
        else:
            value = getattr(view, name)
            out[widget] = list(value) if isinstance(value, tuple) else value  # gradio wants lists
    return out


def _freezes(widgets: dict, view: View, tokens) -> dict:
    fixed = view.positions == "sinusoidal"  # fixed positions never train: shown frozen, not a choice
    return {widgets[part]: gr.update(value=part in view.frozen or (part == "position" and fixed),
                                     interactive=not (part == "position" and fixed)) for part in PARTS}


def _token(widget, view: View, tokens) -> dict:
    value = NO_TOKEN if view.token is None else view.token
    return {widget: gr.update(choices=token_choices(tokens), value=value) if tokens else gr.update(value=value)}


# the widgets that show something other than their field's value as it is: (widget, view, tokens) -> writes
_WRITERS = {
    "vocab_size": lambda widget, view, tokens: {
        widget: gr.update(value=view.vocab_size, visible=view.tokenizer == "word")},
    "frozen": _freezes,
    "token": _token,
    "dims": lambda widget, view, tokens: {widget: view.dims == 3},
    "shown": lambda widget, view, tokens: {widget: gr.update(selected=view.shown)},
    "panel": lambda widget, view, tokens: {widget: gr.update(selected=view.panel)},
    "step": lambda widget, view, tokens: {widget: tour_text(view.step)},
}
# a field whose value another field's widget shows too (the vocabulary size, the position freeze)
_ALSO = {"tokenizer": "vocab_size", "positions": "frozen"}


def widgets_of(page, names: Iterable[str]) -> list:
    """The components that show these view fields (a field's widget may be several: the freezes)."""
    widgets = [getattr(page, FIELDS[name].widget) for name in _shown(names)]
    return [each for widget in widgets for each in (widget.values() if isinstance(widget, dict) else [widget])]


def outputs(page, step: Change, *, asked: Iterable[str] = (), whole: bool = False, notes: Iterable[str] = (),
            listed: bool = True, key: str | None = None, answers: Answers | None = None,
            answered: bool = False) -> dict:
    """Everything the page must redraw after `step`. `answers`: a class's words the plane shows, and
    `answered`: they differ from those drawn; `key`: the page's key, sent with the address on opening."""
    view, session = step.view, step.session
    changed = set(view.differs(step.old_view))
    redrawn = frozenset().union(*(FIELDS[name].redraws for name in changed))  # as the fields declare
    write = set(FIELDS) if whole else (changed - set(asked)) | (FITTED & set(asked))
    out = fields(page, view, write, step.tokens)
    if step.tokens != step.old_tokens and page.token not in out and (listed or view.token is not None):
        # the picker never lists tokens that are gone: with a token selected, the new list; otherwise an
        # empty one, filled when opened (new choices cost gradio a rebuilt config: an empty one is left)
        out[page.token] = gr.update(choices=token_choices(step.tokens if view.token is not None else ()))
    elif page.token not in out:  # its value, plainly: an update of the choices costs far more
        out[page.token] = NO_TOKEN if view.token is None else view.token
    if view.token is not None and (whole or step.old_view.token is None):
        out[page.neighbours] = gr.update(open=True)  # a token selected: its neighbours show
    if view.search.strip() and "search" not in asked and (whole or not step.old_view.search.strip()):
        out[page.search_panel] = gr.update(open=True)  # a link's or a step's search: its box shows with its crosses
    tables = whole or step.tables_changed or TABLES in redrawn
    # sentences that tokenize as before (a space typed) keep the plane, most of a keystroke's work
    retyped = (changed <= {"sentence_a", "sentence_b"} and step.tokens == step.old_tokens
               and session is step.old_session and session.tokenizer is not None)
    redraw = (not retyped and PLANE in redrawn) or answered
    if whole or tables or redraw:
        out.update(plane(page, view, session, step.tokens, revision=step.revision, answers=answers,
                         typed=bool(changed) and changed <= TYPED))
        # the side views not open are emptied (drawn when opened): none shows another sentence's numbers
        out.update(dict.fromkeys(page.detail_outputs))
    if view.shown in DETAILS and (whole or tables or redraw or DETAIL in redrawn):
        out.update(detail(page, view, session, step.tokens))
    if whole or tables or BACKGROUND in redrawn:
        out[page.background_json] = background_json(view, session)
    if tables:
        out.update(table_panels(page, session))
        out.update(layer_control(page, view, session))
    if whole or step.old_session.training is not session.training or "theme" in changed:
        out.update(training(page, session, view.theme))
    if view.shown == "listing" and (whole or LISTING in redrawn):
        out.update(listing(page, view))
    if view.shown == "lookup" and (whole or LOOKUP in redrawn):
        out.update(lookup(page, view))
    if view.shown == "code" and (whole or tables or changed):  # a script of everything the tab holds
        made = recipe(view, session)
        out[page.code] = script(made)
        out[page.code_corpus] = gr.update(visible=reads_corpus(made))  # its file offered beside the script's
    if whole or changed or notes or step.notes:  # an echo of what the page already shows keeps the notice
        out[page.notice] = notice((*notes, *step.notes))
    if whole or changed:
        out[page.address] = address(view, push=whole or bool(changed - TYPED), key=key)
    return out


# fields the tab may change from what a person set (core.serving.tabs.Tab.apply): the selection follows its token,
# a layer the tables cannot give becomes 0; their widgets are written back even when set
FITTED = frozenset({"token", "layer"})


def layer_control(page, view: View, session: Session) -> dict:
    """The layer slider: its value, and whether it can be set on these tables (disabled, saying why, when not)."""
    why = unreadable(session)
    return {page.layer: gr.update(value=view.layer, interactive=why is None, info=EXPLAINED if why is None else why)}


# fields changed a character at a time: their history entry is rewritten, so Back skips each keystroke
TYPED = frozenset(name for name, declared in FIELDS.items() if declared.typed)


def address(view: View, push: bool, key: str | None = None) -> str:
    """What `#address` puts in the address bar: the view's query (None past MAX_QUERY), pushed or not."""
    query, _ = to_query(view)
    keyed = {} if key is None else {"key": key}
    return json.dumps({"query": query if len(query) <= MAX_QUERY else None, "push": push, **keyed})


REVISION = -1  # the revision a shared plane's figure is written with, replaced by each tab's own


def plane(page, view: View, session: Session, tokens: tuple[str, ...] | None = None, revision: int = 0, *,
          holds: bool = False, answers: Answers | None = None, typed: bool = False) -> dict:
    """The main plot (with the token table), its summary, neighbours, search and variance bar: drawn
    once for the tabs on shared tables, each tab's `revision` written in. `holds`: a training's figure,
    whose axes the page keeps (`hold_key`); `typed`: a keystroke's plane, drawn without the cache."""
    draw = functools.partial(_plane, page, view, session, tokens, answers)
    out = draw() if typed else shared("plane", view, session, tokens, draw, also=answers)
    sent = f'"revision":{revision}' + (',"holdFrom":true' if holds else "")
    out[page.plot] = out[page.plot].replace(f'"revision":{REVISION}', sent, 1)
    return out


# the fields that leave every point where it is: a figure differing only in these keeps held axes
STILL = frozenset({"token", "k", "labels", "arrows", "shift", "step", "frozen"})
HOLDING = tuple(name for name, declared in FIELDS.items() if declared.redraws & {PLANE, TABLES, BACKGROUND}
                and name not in STILL)


def hold_key(view: View) -> str:
    """What names a view's drawing for the page's held axes: the fields that move its points."""
    return hashlib.sha256(repr([getattr(view, name) for name in HOLDING]).encode()).hexdigest()[:16]


def _plane(page, view: View, session: Session, tokens: tuple[str, ...] | None, answers: Answers | None) -> dict:
    result = explore_view(view, session, tokens, answers)
    found = _search(view, session, result)
    spec = embedding_spec(result.scene, labels=view.labels, arrows=view.arrows, shift=view.shift,
                          presenter=view.presenting, narrow=view.narrow, compact=True, palette=palette(view.theme),
                          named=tour.step(view.step).named if view.step else (),
                          layer=None if found is None else found.trace)
    near = result.neighbours or {}
    listed = [[[i, *pair] for i, pair in enumerate(near.get(kind, ()), 1)] for kind in ("token", "output")]
    projection, spectrum = result.projection, []
    if projection is not None:  # a long input has no spectrum: its axes' variance only
        spectrum = projection.spectrum_ if len(projection.spectrum_) else projection.explained_variance_ratio_
    title = f"Explained variance · {BASES[session.basis].split(' (')[0]}"
    spec["layout"]["meta"]["revision"] = REVISION
    if view.dims == 2:
        spec["layout"]["meta"]["hold"] = hold_key(view)
    return {
        page.plot: figure_json(spec),
        page.info: summary(result, session),
        page.near_token: listed[0],
        page.near_output: listed[1],
        # at layer K: its nearest tokens there, then whom it attends to
        page.attention: "\n\n".join(filter(None, (layer_neighbours_text(result.scene),
                                                   attention_text(result.scene)))),
        page.context: context_json(result.scene, view),
        page.variance: variance_bars(spectrum, shown=view.dims, title=title),
        page.search_hits: [] if found is None else [[hit.word, hit.id] for hit in found.hits],
        page.search_info: search_text(found),
    }


def context_json(scene, view: View) -> str:
    """The selected word's cosine with its other places per layer, as a chart's JSON ("" = none)."""
    hidden = scene.hidden
    if hidden is None or not hidden.same:
        return ""
    return figure_json(context_spec(scene.tokens, scene.selected, hidden.same, hidden.layer,
                                    apart=hidden.apart is not None, presenter=view.presenting,
                                    narrow=view.narrow, palette=palette(view.theme)))


def answers_of(member, view: View) -> Answers | None:
    """The class's words a tab's plane shows, when it leads its class or shows its lesson; else None."""
    if member is None or not view.answers:
        return None
    if isinstance(member, Follower) and not member.following and lesson_of(view) != member.lesson:
        return None  # exploring on its own (a page being shown the lesson again follows once it shows it)
    round_ = member.classroom.rounds.round(member.class_id)
    return Answers(round_.drawn(), round_.undrawn()) if round_.drawn() else None


def _search(view: View, session: Session, result: Exploration) -> SearchResult | None:
    if not view.search.strip():
        return None
    try:
        return search(session, view.search, regex=view.regex, projection=result.projection)
    except ValueError as error:  # a pattern outside the allowed subset: say why, draw nothing
        return SearchResult(view.search, (), message=str(error))


def detail(page, view: View, session: Session, tokens: tuple[str, ...] | None = None) -> dict:
    """The open side view, computed once for every tab on the same shared tables."""
    return shared("detail", view, session, tokens, lambda: _detail(page, view, session, tokens))


def _detail(page, view: View, session: Session, tokens: tuple[str, ...] | None) -> dict:
    a, b = view.sentence_a, view.sentence_b
    flipped = flipped_tokens(view, session, tokens)
    if view.shown == "positions":
        found = positions_detail(session, a, b, flipped, presenter=view.presenting, palette=palette(view.theme),
                                 narrow=view.narrow)
        rows = [[r.token, f"{r.positions[0]} and {r.positions[1]}", round(r.cosine, 3)] for r in found.repeated]
        return {page.positions_plot: figure_json(found.figure), page.repeated: rows}
    if view.shown == "layernorm":
        found = layernorm_detail(session, a, b, flipped, presenter=view.presenting, narrow=view.narrow,
                                 palette=palette(view.theme))
        return {page.layernorm_plot: figure_json(found.figure), page.layernorm_info: found.summary}
    return {page.similarity_plot: figure_json(similarity_detail(session, a, b, flipped, presenter=view.presenting,
                                                                palette=palette(view.theme), layer=view.layer,
                                                                reading=view.reading))}


def background_json(view: View, session: Session) -> str:
    """The vocabulary behind the tokens, as one trace's JSON ("" = none). Only a fixed plane has one:
    in the sentence's own, every keystroke would move all its points, and the page resend them."""
    if view.background <= 0 or session.basis == "sentence":
        return ""

    def draw() -> str:  # in the plane the sentence is drawn in
        plane = (vocabulary_basis(session.source.model.tok_embed).projection if session.basis == "vocabulary"
                 else session.frozen_basis)
        behind = background(session.tokenizer, session.model.tok_embed, plane, view.background)
        return trace_json(background_trace(behind.points, behind.labels))

    return shared("background", view, session, None, draw)


def table_panels(page, session: Session) -> dict:
    """The tables' description, the random-settings panel's visibility and the parameter line."""
    source, config = session.source, session.model.config
    positions = (f"the source's own: {session.positions_name}" if session.positions == "learned"
                 else session.positions_name)
    lines = [
        f"**{plain(source.label)}** · tokens: {config.vocab_size:,} × {config.d_model}, positions: "
        f"{config.maxlen:,} ({plain(positions)}), segments: {config.n_segments}, "
        f"LayerNorm eps {config.eps:g} · text becomes ids through {plain(source.vocabulary)}",
        *(f"ℹ️ {plain(note)}" for note in source.notes),
    ]
    return {
        page.tables_info: "\n\n".join(lines),
        page.random_panel: gr.update(visible=source.key == "random"),
        page.params: parameter_status(session),
    }


def training(page, session: Session, theme: str) -> dict:
    """The loss curve and summary of the session's training, or nothing when untrained; in `theme`'s colours."""
    result = session.training
    if result is None:
        return {page.losses: "", page.trained: ""}
    return {page.losses: figure_json(loss_spec(result.losses, palette=palette(theme))),
            page.trained: training_summary(session)}


def listing(page, view: View) -> dict:
    """The first listing's test, run as printed: its console output and what it shows."""
    run = run_listing(view.listing_seed, position_bug=view.listing_bug)
    tokens = [f"x={x} seg={s}" for x, s in zip(run.x.ravel(), run.seg.ravel(), strict=True)]
    figure = collapse_figure(
        run.components["sum"].reshape(-1, 2), run.output.reshape(-1, 2), tokens, title="The listing's six outputs"
    )
    facts = "\n".join(f"- {fact}" for fact in run.facts)
    return {page.listing_output: run.printout, page.listing_facts: f"{run.why}\n\n{facts}",
            page.listing_plot: figure_json(figure)}


def lookup(page, view: View) -> dict:
    """The second document's walk-through, step by step, on the view's sentence."""
    walk = walk_through(view.lookup_sentence, view.lookup_dim, requires_grad=view.lookup_grad)
    rows = [[word, count, id_] for word, count, id_ in walk.counts]
    changed = ", ".join(map(str, walk.rows_changed)) or "none"
    cosine = "" if walk.mean_abs_cosine is None else (
        f" The rows are random: the average |cosine| between different words is {walk.mean_abs_cosine:.2f}, "
        f"about what unrelated directions in {walk.dim} dimensions give ({walk.chance_abs_cosine:.2f})."
    )
    stayed = " (the weight's `.grad` stayed `None`)" if walk.grad_is_none else ""
    grad = f"With `requires_grad = {walk.requires_grad}`, one gradient step changed rows: **{changed}**{stayed}."
    return {page.lookup_vocab: rows, page.lookup_code: walk.code, page.lookup_output: walk.printout,
            page.lookup_info: f"The sentence becomes ids **{list(walk.ids)}**.{cosine}\n\n{grad}"}
