"""The page drawn from a `View`: which widgets and outputs an applied change rewrites.

`outputs(page, step)` is the only place that decides what the page shows after a change:
every field of the view has one widget writer (`fields`), and every computed output (the
plane, the side view, the tables' summary, the background, the documents) is redrawn only
when a field it depends on changed. Which widget shows a field and what its change redraws
are the field's declaration (`core.view.state.View`, `core.view.fields`), not lists kept here. A link, a
tour step and a keystroke all pass here, so they cannot render the same view two ways.

Text that comes from a user or a link — sentences, tokens, notes quoting them, parameter
names — is shown as plain text: `plain` escapes it before it meets Markdown, and notices are
escaped HTML.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Iterable

import gradio as gr

from core.drawing.captions import parameter_status, plain, search_text, summary, tour_text, training_summary
from core.drawing.charts import collapse_figure, loss_spec, variance_bars
from core.drawing.code import recipe, script
from core.drawing.details import layernorm_detail, positions_detail, similarity_detail
from core.drawing.figures import background_trace, embedding_spec
from core.drawing.shared import shared
from core.drawing.wire import figure_json, trace_json
from core.model.listing import run_listing
from core.model.lookup import walk_through
from core.plane.basis import background, vocabulary_basis
from core.plane.classwords import Answers
from core.plane.pipeline import Exploration, explore_view, flipped_tokens
from core.plane.search import SearchResult, search
from core.serving.classroom import Follower
from core.serving.classstore import lesson_of
from core.serving.tabs import Change
from core.tables.session import Session
from core.view import tour
from core.view.fields import BACKGROUND, DETAIL, LISTING, LOOKUP, PLANE, TABLES
from core.view.options import BASES, DETAILS, MAX_QUERY, PARTS, POSITIONS
from core.view.share import to_query
from core.view.state import FIELDS, View

NO_TOKEN = ""  # the token picker's value when no token is selected


def notice(notes: Iterable[str], mark: str = "⚠️") -> str:
    """The notice area's HTML: each note as escaped text on its own line ("" hides it), marked
    as a warning, or (`mark="ℹ️"`) as what the page is told of work it asked for (a refit's result)."""
    return "".join(f"<p>{mark} {html.escape(note)}</p>" for note in notes if note)


def plot(figure: dict) -> str:
    """A chart as the page's script draws it (assets/explorer.js `chart`): the figure's JSON, made
    straight from its dict (building a plotly Figure object costs more than the math)."""
    return figure_json(figure)


def token_choices(tokens: Iterable[str]) -> list[tuple[str, int | str]]:
    """The picker's list: "none", then "position: token" for each token."""
    # an explicit "none" entry: the picker ignores an update to None, so "" clears it
    return [("none", NO_TOKEN), *((f"{i}: {token}", i) for i, token in enumerate(tokens))]


def fields(page, view: View, names: Iterable[str], tokens: tuple[str, ...] = ()) -> dict:
    """The widgets of these view fields (each field's declared `widget`), set to the view's values.

    `tokens`: the view's tokens, for the token picker's list."""
    names = set(names)
    names |= {shown for name, shown in _ALSO.items() if name in names}
    out: dict = {}
    for name, declared in FIELDS.items():
        if name not in names or declared.widget is None:
            continue
        widget = getattr(page, declared.widget)
        if name in _WRITERS:
            out.update(_WRITERS[name](widget, view, tokens))
        else:
            value = getattr(view, name)
            out[widget] = list(value) if isinstance(value, tuple) else value  # gradio wants lists
    return out


def _vocab_size(widget, view: View, tokens) -> dict:
    return {widget: gr.update(value=view.vocab_size, visible=view.tokenizer == "word")}


def _freezes(widgets: dict, view: View, tokens) -> dict:
    fixed = view.positions == "sinusoidal"  # fixed positions never train: shown frozen, not a choice
    return {widgets[part]: gr.update(value=part in view.frozen or (part == "position" and fixed),
                                     interactive=not (part == "position" and fixed)) for part in PARTS}


def _token(widget, view: View, tokens) -> dict:
    value = NO_TOKEN if view.token is None else view.token
    return {widget: gr.update(choices=token_choices(tokens), value=value) if tokens else gr.update(value=value)}


# the widgets that show something other than their field's value as it is: (widget, view, tokens) -> writes
_WRITERS = {
    "vocab_size": _vocab_size,
    "frozen": _freezes,
    "token": _token,
    "dims": lambda widget, view, tokens: {widget: view.dims == 3},
    "shown": lambda widget, view, tokens: {widget: gr.update(selected=view.shown)},
    "panel": lambda widget, view, tokens: {widget: gr.update(selected=view.panel)},
    "step": lambda widget, view, tokens: {widget: tour_text(view.step)},
}
# a field whose value another field's widget shows as well: the vocabulary size is shown only for
# the word tokenizer, and the position table's freeze is not a choice while the table is fixed
_ALSO = {"tokenizer": "vocab_size", "positions": "frozen"}
# the Page attributes of the fields' widgets (ui.page.Page.everything), in the order an event's
# API answer lists them: those that show their field's value as it is, then the others, each in
# the View's order. A tuple, so every process lists the outputs alike (a set's order changes)
def widgets_of(page, names: Iterable[str]) -> list:
    """The components that show these view fields (a field's widget may be several: the freezes)."""
    names = set(names)
    names |= {shown for name, shown in _ALSO.items() if name in names}
    found = []
    for name in names:
        declared = FIELDS.get(name)
        if declared is None or declared.widget is None:
            continue
        widget = getattr(page, declared.widget)
        found += list(widget.values()) if isinstance(widget, dict) else [widget]
    return found


WIDGETS = tuple(dict.fromkeys(
    [declared.widget for name, declared in FIELDS.items() if declared.widget and name not in _WRITERS]
    + [declared.widget for name, declared in FIELDS.items() if declared.widget and name in _WRITERS]))


def _redrawn(names: Iterable[str]) -> frozenset[str]:
    """What a change of these fields draws again, as their declarations say (core.view.fields.REDRAWS)."""
    return frozenset().union(*(FIELDS[name].redraws for name in names))


def outputs(page, step: Change, *, asked: Iterable[str] = (), whole: bool = False, notes: Iterable[str] = (),
            listed: bool = True, key: str | None = None, answers: Answers | None = None,
            answered: bool = False) -> dict:
    """Everything the page must redraw after `step`.

    `listed`: whether the token picker may hold a list of tokens (see `ui.route.Channel.listed`).
    `answers`: a class's words the plane shows (`answers_of`); `answered`: they differ from those
    the page's plane shows now, so the plane is drawn again whatever else changed.
    `key`: the page's key for its calls (`ui.route.Channel.key`), sent with the address
    when the page opens."""
    view, session = step.view, step.session
    changed = set(view.differs(step.old_view))
    redrawn = _redrawn(changed)
    write = set(FIELDS) if whole else (changed - set(asked)) | ({"token"} & set(asked))
    out = fields(page, view, write, step.tokens)
    if step.tokens != step.old_tokens and page.token not in out and (listed or view.token is not None):
        # the picker never lists tokens that are gone: with a token selected it shows the new list
        # (its entry's text is on screen), otherwise an empty one, filled when it is opened. An
        # update of the picker's choices costs gradio a rebuilt component config (a few ms of a
        # keystroke's CPU), so an empty picker is left as it is
        out[page.token] = gr.update(choices=token_choices(step.tokens if view.token is not None else ()))
    elif page.token not in out:  # its value, plainly: an update of the choices costs far more
        out[page.token] = NO_TOKEN if view.token is None else view.token
    if view.token is not None and (whole or step.old_view.token is None):
        out[page.neighbours] = gr.update(open=True)  # a token selected: its neighbours show
    if view.search.strip() and "search" not in asked and (whole or not step.old_view.search.strip()):
        out[page.search_panel] = gr.update(open=True)  # a link's or a step's search: its box shows with its crosses
    tables = whole or step.tables_changed or TABLES in redrawn
    # sentences that tokenize as before (a space typed, a space deleted) draw what is drawn: a
    # class types a space every sixth key, and the plane is most of a keystroke's work
    retyped = (changed <= {"sentence_a", "sentence_b"} and step.tokens == step.old_tokens
               and session is step.old_session and session.tokenizer is not None)
    redraw = (not retyped and PLANE in redrawn) or answered
    if whole or tables or redraw:
        out.update(plane(page, view, session, step.tokens, revision=step.revision, answers=answers,
                         typed=bool(changed) and changed <= TYPED))
        # the side views not open are emptied (each is drawn when it is opened), so none shows
        # another sentence's numbers when it opens
        out.update(dict.fromkeys(page.detail_outputs))
    if view.shown in DETAILS and (whole or tables or redraw or DETAIL in redrawn):
        out.update(detail(page, view, session, step.tokens))
    if whole or tables or BACKGROUND in redrawn:
        out[page.background_json] = background_json(view, session)
    if tables:
        out.update(table_panels(page, session))
    if whole or step.old_session.training is not session.training:
        out.update(training(page, session))
    if view.shown == "listing" and (whole or LISTING in redrawn):
        out.update(listing(page, view))
    if view.shown == "lookup" and (whole or LOOKUP in redrawn):
        out.update(lookup(page, view))
    if view.shown == "code" and (whole or tables or changed):  # a script of everything the view holds
        out[page.code] = code_view(view, session)
    if whole or changed or notes or step.notes:  # an echo of what the page already shows keeps the notice
        out[page.notice] = notice((*notes, *step.notes))
    if whole or changed:
        out[page.address] = address(view, push=whole or bool(changed - TYPED), key=key)
    return out


# fields a person changes a character at a time (declared `typed`): the address bar rewrites one
# history entry while they change, so Back goes to the view before the typing, not to each keystroke
TYPED = frozenset(name for name, declared in FIELDS.items() if declared.typed)


def address(view: View, push: bool, key: str | None = None) -> str:
    """What `#address` puts in the address bar (ui/tourpanel.py ADDRESS_JS): the view's query
    string, as a new history entry when `push`. A view whose link is longer than MAX_QUERY
    leaves the address at the last view that fit (a browser and gradio refuse far longer ones).
    `key`, when the page opens: the page's key for its calls (`ui.route`)."""
    query, _ = to_query(view)
    sent = {"query": query if len(query) <= MAX_QUERY else None, "push": push}
    if key is not None:
        sent["key"] = key
    return json.dumps(sent)


REVISION = -1  # the revision a shared plane's figure is written with, replaced by each tab's own


def plane(page, view: View, session: Session, tokens: tuple[str, ...] | None = None, revision: int = 0, *,
          holds: bool = False, answers: Answers | None = None, typed: bool = False) -> dict:
    """The main plot (in its compact form, which also carries the token table: `core.drawing.wire.expand`),
    its summary, the neighbours, the search and the variance bar.

    `tokens`: the view's tokens when the caller has them (an applied change has), so the
    live path does not tokenize the sentences once more to find the flipped ones.
    `revision`: the tab's change count (`core.serving.tabs.Change.revision`); the page's script draws
    no figure older than the one it shows, whichever path brought it. A plane on shared tables
    is drawn once for every tab (`core.drawing.shared`), with each tab's revision written into its JSON.
    `holds`: a training's figure: the page keeps the axes it has (`hold_key`) for it and for
    every later figure of the same view, so the frozen points stay where they were drawn.
    `answers`: a class's words, drawn as the group "class" (`answers_of`); a class's pages that
    show the same lesson and the same words share one drawing. `typed`: a keystroke's plane,
    which no other page is about to show, is drawn without the cache (nor kept in it)."""
    def draw() -> dict:
        return _plane(page, view, session, tokens, REVISION, answers)

    out = draw() if typed else shared("plane", view, session, tokens, draw, also=answers)
    sent = f'"revision":{revision}' + (',"holdFrom":true' if holds else "")
    out[page.plot] = out[page.plot].replace(f'"revision":{REVISION}', sent, 1)
    return out


# the view's fields that leave every point where it is: a figure that differs from the last only
# in these keeps its axes while they are held (assets/explorer.js `held`)
STILL = frozenset({"token", "k", "labels", "arrows", "shift", "step", "frozen"})
HOLDING = tuple(name for name, declared in FIELDS.items() if declared.redraws & {PLANE, TABLES, BACKGROUND}
                and name not in STILL)


def hold_key(view: View) -> str:
    """What names a view's drawing for the page's held axes: the fields that move its points."""
    return hashlib.sha256(repr([getattr(view, name) for name in HOLDING]).encode()).hexdigest()[:16]


def _plane(page, view: View, session: Session, tokens: tuple[str, ...] | None, revision: int,
           answers: Answers | None = None) -> dict:
    result = explore_view(view, session, tokens, answers)
    found, searched = _search(view, session, result), []
    spec = embedding_spec(result.scene, labels=view.labels, arrows=view.arrows, shift=view.shift,
                          presenter=view.presenter, narrow=view.narrow, compact=True,
                          named=tour.step(view.step).named if view.step else (),
                          layer=None if found is None else found.trace)
    if found is not None:
        searched = [[hit.word, hit.id] for hit in found.hits]
    near = result.neighbours or {}
    listed = [[[i, *pair] for i, pair in enumerate(near.get(kind, ()), 1)] for kind in ("token", "output")]
    projection = result.projection
    spectrum = [] if projection is None else projection.spectrum_
    if projection is not None and len(spectrum) == 0:
        spectrum = projection.explained_variance_ratio_  # a long input: its axes only
    title = f"Explained variance · {BASES[session.basis].split(' (')[0]}"
    spec["layout"]["meta"]["revision"] = revision
    if view.dims == 2:
        spec["layout"]["meta"]["hold"] = hold_key(view)
    return {
        page.plot: figure_json(spec),
        page.info: summary(result, session),
        page.near_token: listed[0],
        page.near_output: listed[1],
        page.variance: variance_bars(spectrum, shown=view.dims, title=title),
        page.search_hits: searched,
        page.search_info: search_text(found),
    }


def answers_of(member, view: View) -> Answers | None:
    """The class's words a tab's plane shows: the round's drawn words, when the tab leads its
    class or shows the lesson it follows, and the view shows the class's answers (`View.answers`);
    None otherwise. Read from what this process knows of the round (no store call)."""
    if member is None or not view.answers:
        return None
    if isinstance(member, Follower) and not member.following and lesson_of(view) != member.lesson:
        return None  # exploring on its own (a page being shown the lesson again follows once it shows it)
    round_ = member.classroom.round(member.class_id)
    return Answers(round_.drawn(), round_.undrawn()) if round_.drawn() else None


def _search(view: View, session: Session, result: Exploration) -> SearchResult | None:
    if not view.search.strip():
        return None
    try:
        return search(session, view.search, regex=view.regex, projection=result.projection)
    except ValueError as error:  # a pattern outside the allowed subset: say why, draw nothing
        return SearchResult(view.search, (), message=str(error))


def detail(page, view: View, session: Session, tokens: tuple[str, ...] | None = None) -> dict:
    """The open side view, computed for the current sentences (once for every tab on the same
    shared tables, `core.drawing.shared`)."""
    return shared("detail", view, session, tokens, lambda: _detail(page, view, session, tokens))


def _detail(page, view: View, session: Session, tokens: tuple[str, ...] | None) -> dict:
    a, b = view.sentence_a, view.sentence_b
    flipped = flipped_tokens(view, session, tokens)
    if view.shown == "positions":
        found = positions_detail(session, a, b, flipped, presenter=view.presenter)
        rows = [[r.token, f"{r.positions[0]} and {r.positions[1]}", round(r.cosine, 3)] for r in found.repeated]
        return {page.positions_plot: plot(found.figure), page.repeated: rows}
    if view.shown == "layernorm":
        found = layernorm_detail(session, a, b, flipped, presenter=view.presenter, narrow=view.narrow)
        return {page.layernorm_plot: plot(found.figure), page.layernorm_info: found.summary}
    return {page.similarity_plot: plot(similarity_detail(session, a, b, flipped, presenter=view.presenter))}


def background_json(view: View, session: Session) -> str:
    """The vocabulary behind the tokens, as one trace's JSON for the page's script ("" = none).

    Only a fixed plane can have a background: in the sentence's own plane every keystroke
    would move all of its points, and the page would have to send them all again.
    """
    if not _behind(view, session):
        return ""

    def draw() -> str:
        behind = _behind_tokens(view, session)
        return trace_json(background_trace(behind.points, behind.labels))

    return shared("background", view, session, None, draw)


def _behind(view: View, session: Session) -> bool:
    """Whether the page draws a background: only a fixed plane can have one (see background_json)."""
    return view.background > 0 and session.basis != "sentence"


def _behind_tokens(view: View, session: Session):
    """The background the page draws (cached: core.plane.basis.background), in the untrained table's
    plane, as core.plane.pipeline._plane draws the sentence in."""
    plane = (vocabulary_basis(session.source.model.tok_embed).projection if session.basis == "vocabulary"
             else session.frozen_basis)
    return background(session.tokenizer, session.model.tok_embed, plane, view.background)


def table_panels(page, session: Session) -> dict:
    """The tables' description, the random-settings panel's visibility and the parameter line."""
    source, config = session.source, session.model.config
    positions = POSITIONS[session.positions].split(" (")[0]
    if session.positions == "learned":
        positions = f"the source's own: {source.own_positions}"
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


def training(page, session: Session) -> dict:
    """The loss curve and summary of the session's training, or nothing when untrained."""
    result = session.training
    if result is None:
        return {page.losses: "", page.trained: ""}
    return {page.losses: plot(loss_spec(result.losses)), page.trained: training_summary(session)}


def listing(page, view: View) -> dict:
    """The first listing's test, run as printed: its console output and what it shows."""
    run = run_listing(view.listing_seed, position_bug=view.listing_bug)
    tokens = [f"x={x} seg={s}" for x, s in zip(run.x.ravel(), run.seg.ravel(), strict=True)]
    figure = collapse_figure(
        run.components["sum"].reshape(-1, 2), run.output.reshape(-1, 2), tokens, title="The listing's six outputs"
    )
    facts = "\n".join(f"- {fact}" for fact in run.facts)
    return {page.listing_output: run.printout, page.listing_facts: f"{run.why}\n\n{facts}",
            page.listing_plot: plot(figure)}


def code_view(view: View, session: Session) -> str:
    """The Code tab's script: what the tab shows, its trainings and frozen plane included (`core.drawing.code`)."""
    return script(recipe(view, session))


def lookup(page, view: View) -> dict:
    """The second document's walk-through, step by step, on the view's sentence."""
    walk = walk_through(view.lookup_sentence, view.lookup_dim, requires_grad=view.lookup_grad)
    rows = [[word, count, id_] for word, count, id_ in walk.counts]
    changed = ", ".join(map(str, walk.rows_changed)) or "none"
    cosine = "" if walk.mean_abs_cosine is None else (
        f" The rows are random: the average |cosine| between different words is {walk.mean_abs_cosine:.2f}, "
        f"about what unrelated directions in {walk.dim} dimensions give ({walk.chance_abs_cosine:.2f})."
    )
    grad = (
        f"With `requires_grad = {walk.requires_grad}`, one gradient step changed rows: **{changed}**"
        + (" (the weight's `.grad` stayed `None`)." if walk.grad_is_none else ".")
    )
    return {page.lookup_vocab: rows, page.lookup_code: walk.code, page.lookup_output: walk.printout,
            page.lookup_info: f"The sentence becomes ids **{list(walk.ids)}**.{cosine}\n\n{grad}"}
