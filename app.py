"""Embedding Explorer: the Gradio page. Layout and thin callbacks only.

Every callback turns widget values into a call into `core/`, and the result into widget
values; the math lives in `core/`. A callback that changes the session computes the new one
first and returns it last, so a refused change leaves the session as it was. `python app.py`
launches the page; importing this module only builds it (`demo`), which is what the tests and
a Hugging Face Space need.
"""

from __future__ import annotations

import functools
import importlib
import json
import tempfile
import threading
from pathlib import Path

import gradio as gr
import torch
from gradio.components.plot import PlotData
from threadpoolctl import threadpool_limits

import widgets
from core import tour
from core.basis import BASES, background, vocabulary_basis
from core.charts import collapse_figure, variance_bars
from core.details import layernorm_detail, positions_detail, similarity_detail
from core.embedding import COMPONENTS
from core.export import export_files
from core.figures import background_trace, embedding_spec, figure_json, loss_figure, trace_json
from core.listing import run_listing
from core.lookup import DOCUMENT_SENTENCE, walk_through
from core.presets import LIMITS, LISTING_SETTINGS, POSITIONS, SOURCES, Settings
from core.session import Session
from core.share import MAX_BACKGROUND, ViewState
from core.training import PARTS, Corpus, TrainConfig
from core.uploads import UploadLimits, read_upload
from core.view import MAX_NEIGHBOURS, TABLE_HEADERS, Exploration, explore, fit_sentence_basis

# a Space has 2 cores shared by every visitor: one thread per request serves a class in
# parallel, where torch's and BLAS's default pools make small requests wait on each other
# (PCA of a 512-token pair: 8.6 ms on one BLAS thread, 13 ms on two)
torch.set_num_threads(1)
threadpool_limits(1)

ASSETS = Path(__file__).parent / "assets"
EXAMPLES = json.loads((ASSETS / "examples.json").read_text())
LISTING_SENTENCE = "i am new to PyTorch i am having fun"
TOKENIZER_CHOICES = [("WordPiece (BERT, 30,522 pieces)", "wordpiece"), ("Word-level (Counter)", "word")]
CORPUS_CHOICES = [("Built-in corpus: 6 word categories", "builtin"), ("My sentences A and B", "mine")]
UPLOAD_LIMITS = UploadLimits()

INTRO = """\
# Embedding Explorer
BERT turns each token into three vectors — its **token** row, its **position** row and its
**segment** row (sentence A or B) — adds them into the **sum**, and normalises the sum with
LayerNorm into the **output**. Type two sentences and see all five vectors of every token in
one 2-D plane (PCA). Hover a point for its numbers; click a legend entry to hide a group.
"""

# the main tabs beside which side views open, and the tabs of the control column
VIEWS = {"plane": "Plane", "positions": "Positions", "layernorm": "LayerNorm", "similarity": "Similarity",
         "listing": "The listing", "lookup": "Lookup table"}
DETAILS = ("positions", "layernorm", "similarity")  # views computed from the typed sentences
CONTROLS = {"tour": "Tour", "view": "View", "tables": "Tables", "train": "Train"}
NEIGHBOUR_HEADERS = ["#", "token", "cosine"]
NO_TOKEN = ""  # the token picker's value when no token is selected

# passed to launch() by `python app.py` and by the tests, so both serve the same page
LAUNCH_OPTIONS = {
    "theme": gr.themes.Soft(),
    "css_paths": [ASSETS / "style.css"],
    "head": f"<script>{(ASSETS / 'explorer.js').read_text()}</script>",
    "show_error": False,  # users see the gr.Error sentences we write, never stack traces
    "max_file_size": UPLOAD_LIMITS.max_bytes,
    "run_history": False,
}


def refusing(callback):
    """Turn core's ValueError/TypeError into a gr.Error: the user reads its sentence, and
    since the callback raised before returning, the session is left exactly as it was."""

    @functools.wraps(callback)
    def wrapper(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except gr.Error:
            raise  # already the user's sentence (gr.Error is itself a ValueError)
        except (ValueError, TypeError) as error:
            raise gr.Error(str(error)) from None

    return wrapper


@refusing
def embed(
    sentence_a: str,
    sentence_b: str,
    groups: list[str],
    labels: bool,
    arrows: bool,
    shift: bool = False,
    presenter: bool = False,
    token: int | None = None,
    k: float = 10,
    flips: dict | None = None,
    view: str = "plane",
    session: Session | None = None,
):
    """The main update: two sentences in; the plot, a summary, the token table, the token
    picker, the selected token's neighbours, the explained-variance bar and, when a side
    view is open, that view out — in one event, not a second one per keystroke."""
    result, spec = _view(sentence_a, sentence_b, groups, labels, arrows, shift, presenter, token, k, flips, session)
    near = result.neighbours or {}
    listed = [[[i, *pair] for i, pair in enumerate(near.get(kind, ()), 1)] for kind in ("token", "output")]
    projection = result.projection
    spectrum = [] if projection is None else projection.spectrum_
    if projection is not None and len(spectrum) == 0:
        spectrum = projection.explained_variance_ratio_  # a long input: its two axes only
    title = f"Explained variance · {BASES[session.basis].split(' (')[0]}"
    return (
        # the figure's JSON straight from its dict: building a go.Figure costs more than the math
        plot_data(spec),
        summary(result, session),
        result.rows,
        # choices only: writing the value back would undo a newer choice still on its way;
        # with no token selected, none at all: the picker fills its list when opened
        gr.update(choices=token_choices(result.encoding.tokens)) if _token(token) is not None else gr.skip(),
        *listed,
        variance_bars(spectrum, title=title),
        *show_details(view, sentence_a, sentence_b, flips, presenter, session),
    )


def _view(sentence_a, sentence_b, groups, labels, arrows, shift, presenter, token, k, flips, session: Session):
    """What the plane shows for these controls: the exploration and its figure dict."""
    result = explore(session, sentence_a or "", sentence_b or "", groups or [], selected=_token(token),
                     k=_whole(k, "The number of neighbours"), flipped=flips)
    return result, embedding_spec(result.scene, labels=labels, arrows=arrows, shift=shift, presenter=presenter)


def plot_data(spec: dict) -> PlotData:
    return PlotData(type="plotly", plot=figure_json(spec))


@refusing
def picker_choices(sentence_a: str, sentence_b: str, session: Session):
    """The token picker's list for the current sentences, sent when the picker is opened.

    While no token is selected, a keystroke leaves the list alone: a new list of every token
    on every keystroke was a measurable share of the page's work in the browser (gradio
    copies each component's properties several times per event); with a token selected, the
    list follows each keystroke, since the picker shows the selected entry's text.
    """
    return gr.update(choices=token_choices(session.encode(sentence_a or "", sentence_b or "").tokens))


def token_choices(tokens: tuple[str, ...]) -> list[tuple[str, int | str]]:
    # an explicit "none" entry: the picker ignores an update to None, so "" clears it
    return [("none", NO_TOKEN), *((f"{i}: {token}", i) for i, token in enumerate(tokens))]


def _token(value) -> int | None:
    """The selected token's index from the picker: its value, or a number typed into it."""
    if value is None or value == "":
        return None
    try:
        return _whole(value, "The selected token")
    except gr.Error:
        raise gr.Error(f"Pick a token from the list (or click a point), not {value!r}.") from None


def _whole(value, name: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise gr.Error(f"{name} must be a whole number, not {value!r}.") from None
    if not number.is_integer():
        raise gr.Error(f"{name} must be a whole number, not {value!r}.")
    return int(number)


@refusing
def choose_basis(basis: str, sentence_a: str, sentence_b: str, groups: list[str], session: Session):
    """Another plane: "frozen" keeps the plane on screen now, whatever is typed next."""
    frozen = None
    if basis == "frozen":
        frozen = fit_sentence_basis(session, sentence_a or "", sentence_b or "", groups or [])
    return session.with_basis(basis, frozen)


@refusing
def refit(sentence_a: str, sentence_b: str, groups: list[str], session: Session):
    """Fit the plane again: the frozen one on the current sentence, the vocabulary's from scratch."""
    if session.basis == "frozen":
        plane = fit_sentence_basis(session, sentence_a or "", sentence_b or "", groups or [])
        new = session.with_basis("frozen", plane)
        gr.Info("The frozen plane now fits the current sentence.")
        return new
    if session.basis == "vocabulary":
        fitted = vocabulary_basis(session.model.tok_embed, refit=True)
        rows = session.model.config.vocab_size
        gr.Info(f"Fitted the plane of all {rows:,} rows of the token table in {fitted.seconds:.2f} s.")
        return session
    gr.Info("'This sentence' refits on every change already; freeze the plane to keep one.")
    return session


@refusing
def draw_background(n: float, session: Session) -> str:
    """The vocabulary behind the tokens, as one trace's JSON for the page's script ("" = none).

    Only a fixed plane can have a background: in the sentence's own plane every keystroke
    would move all of its points, and the page would have to send them all again.
    """
    n = _whole(n, "The number of background words")
    if not 0 <= n <= MAX_BACKGROUND:
        raise gr.Error(f"The background shows 0 to {MAX_BACKGROUND:,} words, not {n:,}.")
    if n == 0:
        return ""
    if session.basis == "sentence":
        gr.Warning("The vocabulary background needs a fixed plane: choose 'whole vocabulary' or 'frozen'.")
        return ""
    model = session.model
    projection = vocabulary_basis(model.tok_embed).projection if session.basis == "vocabulary" else session.frozen_basis
    behind = background(session.tokenizer, model.tok_embed, projection, n)
    return trace_json(background_trace(behind.points, behind.labels))


def pick_token(picked: str) -> int | str:
    """A click on a point, as the page's script reports it ("position@time"): that token."""
    try:
        return int(str(picked).split("@")[0])
    except ValueError:
        return NO_TOKEN


@refusing
def flip_segment(token: int | None, sentence_a: str, sentence_b: str, flips: dict, session: Session) -> dict:
    """Give the selected token the other segment id, or give it back its own."""
    token = _token(token)
    if token is None:
        raise gr.Error("Select a token first (click a point, or pick one from the list), then flip its segment.")
    encoding = session.encode(sentence_a or "", sentence_b or "")
    if not 0 <= token < len(encoding):
        raise gr.Error(f"Token {token} is not in this sentence pair; tokens are 0 to {len(encoding) - 1}.")
    # flips are kept with their token, so an edit that moves the tokens drops them (see explore)
    flips = {i: t for i, t in (flips or {}).items() if i < len(encoding) and encoding.tokens[i] == t}
    if token in flips:
        del flips[token]
    else:
        flips[token] = encoding.tokens[token]
    return flips


@refusing
def show_details(view: str, sentence_a: str, sentence_b: str, flips: dict, presenter: bool, session: Session):
    """The open side view, computed for the current sentences; the closed ones are left alone."""
    a, b, skip = sentence_a or "", sentence_b or "", gr.skip()
    if view == "positions":
        detail = positions_detail(session, a, b, flips, presenter=presenter)
        rows = [[r.token, f"{r.positions[0]} and {r.positions[1]}", round(r.cosine, 3)] for r in detail.repeated]
        return plot_data(detail.figure), rows, skip, skip, skip
    if view == "layernorm":
        detail = layernorm_detail(session, a, b, flips, presenter=presenter)
        return skip, skip, plot_data(detail.figure), detail.summary, skip
    if view == "similarity":
        return skip, skip, skip, skip, plot_data(similarity_detail(session, a, b, flips, presenter=presenter))
    return skip, skip, skip, skip, skip


@refusing
def show_listing(seed: float, bug: bool):
    """The first listing's test, run as printed: its console output and what it shows."""
    run = run_listing(_whole(seed, "The seed"), position_bug=bool(bug))
    tokens = [f"x={x} seg={s}" for x, s in zip(run.x.ravel(), run.seg.ravel(), strict=True)]
    figure = collapse_figure(
        run.components["sum"].reshape(-1, 2), run.output.reshape(-1, 2), tokens, title="The listing's six outputs"
    )
    facts = "\n".join(f"- {fact}" for fact in run.facts)
    return run.printout, f"{run.why}\n\n{facts}", plot_data(figure)


@refusing
def show_lookup(sentence: str, dim: float, requires_grad: bool):
    """The second document's walk-through, step by step, on the sentence given."""
    walk = walk_through(sentence, _whole(dim, "The width"), requires_grad=bool(requires_grad))
    rows = [[word, count, id_] for word, count, id_ in walk.counts]
    return rows, walk.code, walk.printout, lookup_summary(walk)


def lookup_summary(walk) -> str:
    changed = ", ".join(map(str, walk.rows_changed)) or "none"
    cosine = "" if walk.mean_abs_cosine is None else (
        f" The rows are random: the average |cosine| between different words is {walk.mean_abs_cosine:.2f}, "
        f"about what unrelated directions in {walk.dim} dimensions give ({walk.chance_abs_cosine:.2f})."
    )
    grad = (
        f"With `requires_grad = {walk.requires_grad}`, one gradient step changed rows: **{changed}**"
        + (" (the weight's `.grad` stayed `None`)." if walk.grad_is_none else ".")
    )
    return f"The sentence becomes ids **{list(walk.ids)}**.{cosine}\n\n{grad}"


@refusing
def apply_settings(
    tokenizer: str, vocab_size: float, d_model: float, maxlen: float, n_segments: float, seed: float, session: Session
):
    """Swap in a session with the new random-table settings; on bad values keep the old one."""
    new = session.with_settings(
        tokenizer=tokenizer, vocab_size=vocab_size, d_model=d_model, maxlen=maxlen, n_segments=n_segments, seed=seed
    )
    return new, gr.update(visible=new.settings.tokenizer == "word"), *table_panels(new)


def choose_source(source: str, session: Session):
    try:
        new = session.with_source(source)
    except ValueError as error:
        # put the radio back on the tables still in use, so page and session agree
        gr.Warning(str(error))
        new = session
    return new, new.source.key, *table_panels(new)


@refusing
def upload_table(path: str | None, session: Session):
    if not path:
        raise gr.Error("No file arrived; choose a table file to upload.")
    new = session.with_upload(read_upload(path, UPLOAD_LIMITS))
    return new, "upload", *table_panels(new)


@refusing
def choose_positions(kind: str, session: Session):
    new = session.with_positions(kind)
    return new, *table_panels(new)


@refusing
def freeze(token: bool, position: bool, segment: bool, norm: bool, session: Session):
    flags = dict(zip(PARTS, (token, position, segment, norm), strict=True))
    new = session.with_frozen({part for part, frozen in flags.items() if frozen})
    return new, parameter_status(new)


@refusing
def train(
    steps: float,
    corpus: str,
    sentence_a: str,
    sentence_b: str,
    session: Session,
    progress=gr.Progress(),  # noqa: B008 - gradio injects its progress bar through this default
):
    """A few gradient steps on a private copy of the tables; the old session stays on error."""
    try:
        steps = int(steps)
    except (TypeError, ValueError, OverflowError):
        raise gr.Error(f"Training steps must be a whole number from 1 to {TrainConfig.MAX_STEPS:,}.") from None
    if steps < 1:
        raise gr.Error(f"Training steps is {steps:,}; choose 1 to {TrainConfig.MAX_STEPS:,}.")
    if steps > TrainConfig.MAX_STEPS:
        gr.Warning(f"{steps:,} steps is more than this page runs at once; training {TrainConfig.MAX_STEPS:,}.")
        steps = TrainConfig.MAX_STEPS
    if corpus not in {value for _, value in CORPUS_CHOICES}:
        raise gr.Error(f"Train on 'builtin' or 'mine', not {corpus!r}.")
    mine = f"{sentence_a or ''}\n{sentence_b or ''}"
    text = Corpus.builtin() if corpus == "builtin" else Corpus.from_text(mine)
    new = session.trained_on(text, TrainConfig(steps=steps), lambda i, n: progress(i / n, desc="training"))
    return new, loss_figure(new.training.losses), training_summary(new)


def reset_tables(session: Session):
    new = session.reset()
    return new, None, "Tables reset to the source; nothing is trained."


def apply_view(state: ViewState, session: Session, notes: tuple[str, ...] = ()) -> tuple:
    """Every control set as ``state`` says, and the session to match: a link or a tour step.

    The tables are the source's, untrained, as the view describes them. The session is built
    first and swapped in last, as everywhere: a link that names GloVe on a machine that
    cannot load it leaves the page as it was.
    """
    new = session.reset().with_source(state.source).with_positions(state.positions).with_frozen(state.frozen)
    frozen = None
    if state.basis == "frozen":
        frozen = fit_sentence_basis(new, state.sentence_a, state.sentence_b, state.groups)
    new = new.with_basis(state.basis, frozen)
    step = tour.step(state.step) if state.step is not None else None
    encoding = new.encode(state.sentence_a, state.sentence_b)
    token = state.token if state.token is not None and state.token < len(encoding) else NO_TOKEN
    view = step.tab if step is not None and step.tab in VIEWS else "plane"
    control = "train" if step is not None and step.tab == "train" else "tour" if step is not None else "view"
    return (
        new,
        {},  # no flipped segments: a link or a step shows the segments its sentences have
        state.sentence_a,
        state.sentence_b,
        new.source.key,
        new.positions,
        list(state.groups),
        state.labels,
        state.arrows,
        state.shift,
        new.basis,
        state.background,
        *(part in state.frozen for part in PARTS),
        gr.update(choices=token_choices(encoding.tokens), value=token),
        state.k,
        state.presenter,
        state.step or 0,
        tour_text(step),
        gr.Tabs(selected=view),
        view,
        gr.Tabs(selected=control),
        *table_panels(new),
        # what a link asked for but could not have: kept on the page, a toast would be gone too soon
        gr.update(value="\n".join(f"⚠️ {note}" for note in notes), visible=bool(notes)),
        # the loss curve and summary of a training the view has just undone
        *((None, "") if session.training is not None else (gr.skip(), gr.skip())),
    )


def restore(session: Session, request: gr.Request):
    """The view a link describes, read from its query parameters when the page opens."""
    state, notes = ViewState.from_query(dict(request.query_params) if request else {})
    try:
        return apply_view(state, session, notes)
    except (ValueError, TypeError) as error:
        gr.Warning(f"The link's view could not be opened ({error}); showing the default view.")
        return apply_view(ViewState(), session)


@refusing
def next_step(current: float, session: Session):
    """The tour's next step; from before the first step, "next" starts the tour."""
    return _go_to_step(_whole(current, "The tour step") + 1, session)


@refusing
def previous_step(current: float, session: Session):
    return _go_to_step(_whole(current, "The tour step") - 1, session)


def _go_to_step(number: int, session: Session):
    return apply_view(tour.step(min(max(number, 1), len(tour.STEPS))).state, session)


def tour_text(step: tour.TourStep | None) -> str:
    if step is None:
        return (
            f"**A guided tour in {len(tour.STEPS)} steps**, from tokens to a trained table. Each step sets the "
            "sentences, tables and toggles, and explains what the plot shows. Press **Next** to begin."
        )
    number = tour.STEPS.index(step) + 1
    return f"**Step {number} of {len(tour.STEPS)}: {step.title}**\n\n{step.text}"


@refusing
def share_query(
    sentence_a, sentence_b, source, positions, groups, labels, arrows, shift, basis, background_n,
    token_frozen, position_frozen, segment_frozen, norm_frozen, token, k, step, presenter,
) -> str:
    """The query string of a link to what the page shows now (the page adds its own address)."""
    if source == "upload":
        gr.Warning("A link cannot carry an uploaded file: the link opens the random tables instead.")
        source = "random"
    frozen = {part for part, on in zip(PARTS, (token_frozen, position_frozen, segment_frozen, norm_frozen),
                                       strict=True) if on}
    state = ViewState(
        sentence_a or "", sentence_b or "", source, positions, tuple(groups or ()), bool(labels), bool(arrows),
        bool(shift), basis, _whole(background_n, "The background"), frozenset(frozen), _token(token),
        _whole(k, "The number of neighbours"), int(step) or None, bool(presenter),
    )
    return state.to_query()


@refusing
def export_view(
    sentence_a, sentence_b, groups, labels, arrows, shift, presenter, token, k, flips, session: Session
) -> gr.File:
    """The current view as files: coordinates (CSV), raw vectors (safetensors), the figure (HTML)."""
    result, spec = _view(sentence_a, sentence_b, groups, labels, arrows, shift, presenter, token, k, flips, session)
    directory = Path(tempfile.mkdtemp(prefix="embedding-"))
    files = [str(path) for path in export_files(directory, result.scene, result.vectors, spec)]
    return gr.File(value=files, visible=True)


def fingerprint(session: Session) -> str:
    return session.fingerprint()


def listing_defaults():
    """The first listing's layer (vocab 10, d_model 2) on the second document's sentence."""
    s = LISTING_SETTINGS
    return "random", s.tokenizer, s.vocab_size, s.d_model, s.maxlen, s.n_segments, s.seed, LISTING_SENTENCE, ""


# text for the page


def summary(result: Exploration, session: Session) -> str:
    encoding, scene = result.encoding, result.scene
    markers = sum(encoding.special_mask)
    in_b = sum(1 for s, special in zip(encoding.segment_ids, encoding.special_mask, strict=True) if s and not special)
    whose = f"the {scene.plane}'s variance" if scene.plane else "the variance"
    line = (
        f"**{len(encoding)} tokens** ({len(encoding) - in_b - markers} from A, {in_b} from B, {markers} markers)"
        f" · the plane shows {scene.explained[0]:.1%} + {scene.explained[1]:.1%} of {whose}"
    )
    if session.trained is not None:
        line += " · faint points: before training"
    return "\n\n".join([line, *(f"⚠️ {note}" for note in result.notes)])


def table_panels(session: Session) -> tuple:
    """The table description, the random-settings panel's visibility and the parameter line."""
    source, config = session.source, session.model.config
    lines = [
        f"**{source.label}** · tokens: {config.vocab_size:,} × {config.d_model}, positions: "
        f"{config.maxlen:,} ({POSITIONS[session.positions]}), segments: {config.n_segments}, "
        f"LayerNorm eps {config.eps:g} · text becomes ids through {source.vocabulary}",
        *(f"ℹ️ {note}" for note in source.notes),
    ]
    return "\n\n".join(lines), gr.update(visible=source.key == "random"), parameter_status(session)


def parameter_status(session: Session) -> str:
    trainable, total = session.parameter_counts()
    frozen = ", ".join(sorted(session.frozen)) or "nothing"
    return f"**{trainable:,}** of {total:,} parameters trainable · frozen: {frozen}"


def training_summary(session: Session) -> str:
    result = session.training
    losses = result.losses
    line = f"Trained {result.steps} steps in {result.seconds:.1f} s; loss {losses[0]:.2f} → {losses[-1]:.2f}."
    if result.purity_before is not None:
        line += (
            f" Category purity of the corpus words (3 nearest neighbours, token table): "
            f"**{result.purity_before:.2f} → {result.purity_after:.2f}**."
        )
    return line


def _setting_slider(name: str, label: str, defaults: Settings) -> gr.Slider:
    low, high = LIMITS[name]
    return widgets.Slider(low, high, value=getattr(defaults, name), step=1, label=label, elem_id=name.replace("_", "-"))


def _setting_number(name: str, label: str, defaults: Settings, **extra) -> gr.Number:
    low, high = LIMITS[name]
    return widgets.Number(
        getattr(defaults, name),
        label=label,
        precision=0,
        minimum=low,
        maximum=high,
        elem_id=name.replace("_", "-"),
        **extra,
    )


def build_demo() -> gr.Blocks:
    defaults = Settings()
    # uploaded files are deleted an hour after they arrive (checked every 10 minutes)
    with gr.Blocks(title="Embedding Explorer", delete_cache=(600, 3600)) as demo:
        session = gr.State(Session.create, time_to_live=3600)
        flips = gr.State(dict, time_to_live=3600)  # {token index: token} given the other segment
        view = gr.State("plane")  # the open main tab: only it is computed on each change
        step = gr.State(0)  # the tour step shown, 0 before the tour
        gr.Markdown(INTRO, elem_id="intro")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                with gr.Row():
                    sentence_a = gr.Textbox(
                        EXAMPLES[0][0], label="Sentence A (segment 0)", elem_id="sentence-a", max_length=20_000
                    )
                    sentence_b = gr.Textbox(
                        EXAMPLES[0][1],
                        label="Sentence B (segment 1, optional)",
                        elem_id="sentence-b",
                        max_length=20_000,
                    )
                link_notes = gr.Markdown(visible=False, elem_id="link-notes")
                with gr.Tabs(elem_id="views") as views:
                    with gr.Tab(VIEWS["plane"], id="plane", elem_id="tab-plane") as plane_tab:
                        plot = gr.Plot(show_label=False, elem_id="embed-plot")
                        info = gr.Markdown(elem_id="embed-info")
                        with gr.Accordion("Nearest neighbours and segments of one token", open=True):
                            with gr.Row():
                                # its choices are each session's tokens, so the server cannot
                                # check a value against them: explore() does
                                token = gr.Dropdown(
                                    [("none", NO_TOKEN)], value=NO_TOKEN, label="Token (or click a point)",
                                    elem_id="selected-token", scale=2, allow_custom_value=True,
                                )
                                k = widgets.Slider(1, MAX_NEIGHBOURS, value=10, step=1, label="Neighbours",
                                                   elem_id="neighbour-k", scale=1)
                                flip = gr.Button("Flip its segment (A ↔ B)", elem_id="flip-button", size="sm",
                                                 scale=1)
                            picked = gr.Textbox(visible="hidden", elem_id="picked-token")
                            with gr.Row():
                                near_token = gr.Dataframe(
                                    headers=NEIGHBOUR_HEADERS, label="Nearest by token vector (the table's row)",
                                    interactive=False, elem_id="neighbours-token", max_height=300,
                                )
                                near_output = gr.Dataframe(
                                    headers=NEIGHBOUR_HEADERS,
                                    label="Nearest by output vector (same position and segment, after LayerNorm)",
                                    interactive=False, elem_id="neighbours-output", max_height=300,
                                )
                        gr.Examples(EXAMPLES, inputs=[sentence_a, sentence_b], label="Example pairs")
                        table = gr.Dataframe(
                            headers=list(TABLE_HEADERS),
                            label="Tokens and vector norms",
                            interactive=False,
                            elem_id="token-table",
                            max_height=320,
                        )
                    with gr.Tab(VIEWS["positions"], id="positions", elem_id="tab-positions") as positions_tab:
                        gr.Markdown(
                            "Position vectors 0, 1, 2, … joined in order, each table in its own PCA plane: this "
                            "table's positions beside fixed sinusoidal ones. Below, a word that occurs twice: "
                            "the cosine of its two **output** vectors — same word, different positions."
                        )
                        positions_plot = gr.Plot(show_label=False, elem_id="positions-plot")
                        repeated = gr.Dataframe(
                            headers=["token", "positions", "cosine of outputs"], interactive=False,
                            label="Same word, different positions", elem_id="repeated-table", max_height=240,
                        )
                    with gr.Tab(VIEWS["layernorm"], id="layernorm", elem_id="tab-layernorm") as layernorm_tab:
                        layernorm_plot = gr.Plot(show_label=False, elem_id="layernorm-plot")
                        layernorm_info = gr.Markdown(elem_id="layernorm-info")
                    with gr.Tab(VIEWS["similarity"], id="similarity", elem_id="tab-similarity") as similarity_tab:
                        gr.Markdown("Cosine similarity of every pair of **output** vectors: what the next layer "
                                    "starts from.")
                        similarity_plot = gr.Plot(show_label=False, elem_id="similarity-plot")
                    with gr.Tab(VIEWS["listing"], id="listing", elem_id="tab-listing") as listing_tab:
                        gr.Markdown(
                            "The first document's test, run exactly: `Embedding(vocab_size=10, d_model=2, "
                            "maxlen=512, n_segments=2)` on a batch of 2 sequences of 3 random ids and segments."
                        )
                        with gr.Row():
                            listing_seed = widgets.Number(0, label="Seed", precision=0, minimum=0,
                                                          maximum=2**31 - 1, elem_id="listing-seed")
                            listing_bug = widgets.Checkbox(
                                False, label="Reproduce the listing's position bug: positions = tok_embed(pos)",
                                elem_id="listing-bug",
                            )
                        listing_output = gr.Code(language="python", label="What the test prints",
                                                 elem_id="listing-output", interactive=False)
                        listing_facts = gr.Markdown(elem_id="listing-facts")
                        listing_plot = gr.Plot(show_label=False, elem_id="listing-plot")
                    with gr.Tab(VIEWS["lookup"], id="lookup", elem_id="tab-lookup") as lookup_tab:
                        gr.Markdown("The second document, *nn.Embedding is a lookup table*, step by step.")
                        with gr.Row():
                            lookup_sentence = gr.Textbox(DOCUMENT_SENTENCE, label="Sentence", scale=3,
                                                         elem_id="lookup-sentence", max_length=5_000)
                            lookup_dim = widgets.Number(3, label="Width", precision=0, minimum=1, maximum=16,
                                                        elem_id="lookup-dim", scale=1)
                            lookup_grad = widgets.Checkbox(True, label="weight.requires_grad", elem_id="lookup-grad",
                                                           scale=1)
                        lookup_info = gr.Markdown(elem_id="lookup-info")
                        lookup_vocab = gr.Dataframe(headers=["word", "count", "id"], interactive=False,
                                                    label="Counter vocabulary, most frequent first",
                                                    elem_id="lookup-vocab", max_height=240)
                        lookup_code = gr.Code(language="python", label="The code", elem_id="lookup-code",
                                              interactive=False)
                        lookup_output = gr.Code(language="python", label="What it prints", elem_id="lookup-output",
                                                interactive=False)
            with gr.Column(scale=1, min_width=320), gr.Tabs(selected="view", elem_id="controls") as controls:
                with gr.Tab(CONTROLS["tour"], id="tour", elem_id="tab-tour"):
                    tour_box = gr.Markdown(tour_text(None), elem_id="tour-text")
                    with gr.Row():
                        previous_button = gr.Button("← Previous", elem_id="tour-previous", size="sm")
                        next_button = gr.Button("Next →", variant="primary", elem_id="tour-next", size="sm")
                with gr.Tab(CONTROLS["view"], id="view", elem_id="tab-view"):
                    groups = widgets.CheckboxGroup(
                        list(COMPONENTS), value=list(COMPONENTS), label="Groups to plot", elem_id="groups"
                    )
                    labels = widgets.Checkbox(
                        True, label="Show labels", info="where they fit; hover any point", elem_id="show-labels"
                    )
                    arrows = widgets.Checkbox(
                        False,
                        label="Show the addition tip to tail",
                        elem_id="show-arrows",
                        info="token → +position → +segment = sum → LayerNorm output",
                    )
                    shift = widgets.Checkbox(
                        False, label="Show the segment shift", elem_id="show-shift",
                        info="the vector seg[1] − seg[0] that segment B adds to each sum",
                    )
                    basis = gr.Radio([(label, key) for key, label in BASES.items()], value="sentence",
                                     label="Plane (PCA basis)", elem_id="basis")
                    with gr.Row():
                        background_n = widgets.Number(
                            0, label="Vocabulary words behind (0 = none)", precision=0, minimum=0,
                            maximum=MAX_BACKGROUND, elem_id="background-size", scale=2,
                            info="most frequent first; needs the vocabulary or frozen plane",
                        )
                        refit_button = gr.Button("Refit", elem_id="refit-button", size="sm", scale=1)
                    variance = gr.HTML(elem_id="variance-bars")
                    background_json = gr.Textbox(visible="hidden", elem_id="background-data")
                    presenter = widgets.Checkbox(False, label="Presenter mode: large type for a projector",
                                                 elem_id="presenter")
                    with gr.Row():
                        share_button = gr.Button("Link to this view", elem_id="share-button", size="sm")
                        png_button = gr.Button("PNG", elem_id="export-png", size="sm")
                        export_button = gr.Button("CSV, vectors, HTML", elem_id="export-button", size="sm")
                    share_query_box = gr.Textbox(visible="hidden", elem_id="share-query")
                    share_link = gr.Textbox(label="Link", elem_id="share-link", buttons=["copy"], interactive=False)
                    exports = gr.File(label="Exports", file_count="multiple", elem_id="export-files",
                                      interactive=False, visible=False)
                with gr.Tab(CONTROLS["tables"], id="tables", elem_id="tab-tables"):
                    source = gr.Radio(
                        [(label, key) for key, label in SOURCES.items()],
                        value="random",
                        label="Table source",
                        elem_id="table-source",
                    )
                    upload = gr.File(
                        label="Upload a table: .safetensors, .pt, .npy, word2vec/GloVe .txt or .bin",
                        elem_id="upload-table",
                        height=120,
                    )
                    positions = gr.Radio(
                        [(label, key) for key, label in POSITIONS.items()],
                        value="learned",
                        label="Position table",
                        elem_id="positions",
                    )
                    tables_info = gr.Markdown(elem_id="tables-info")
                    with gr.Accordion("Random table settings", open=True) as random_panel:
                        tokenizer = gr.Radio(
                            TOKENIZER_CHOICES, value=defaults.tokenizer, label="Tokenizer", elem_id="tokenizer"
                        )
                        vocab_size = _setting_number(
                            "vocab_size",
                            "Vocabulary size (words)",
                            defaults,
                            visible=False,
                            info="Most frequent words kept; the rest become [UNK].",
                        )
                        d_model = _setting_slider("d_model", "d_model (vector width)", defaults)
                        maxlen = _setting_slider("maxlen", "maxlen (positions)", defaults)
                        n_segments = _setting_slider("n_segments", "Segments", defaults)
                        seed = _setting_number("seed", "Seed", defaults)
                        listing = gr.Button(
                            "The listing's layer: vocab 10, d_model 2", elem_id="listing-defaults", size="sm"
                        )
                with gr.Tab(CONTROLS["train"], id="train", elem_id="tab-train"):
                    gr.Markdown("**Freeze** a table to keep it out of training:")
                    freezes = []
                    for row in (tuple(PARTS)[:2], tuple(PARTS)[2:]):  # two by two: the labels fit
                        with gr.Row():
                            freezes += [widgets.Checkbox(False, label=part, elem_id=f"freeze-{part}") for part in row]
                    params = gr.Markdown(elem_id="param-status")
                    corpus = gr.Radio(CORPUS_CHOICES, value="builtin", label="Train on", elem_id="corpus")
                    with gr.Row():
                        steps = widgets.Number(100, label="Steps", precision=0, elem_id="train-steps", min_width=90)
                        train_button = gr.Button("Train", variant="primary", elem_id="train-button")
                    reset_button = gr.Button("Reset tables", elem_id="reset-button", size="sm")
                    trained = gr.Markdown(elem_id="train-summary")
                    losses = gr.Plot(show_label=False, elem_id="loss-plot")

        detail_inputs = [view, sentence_a, sentence_b, flips, presenter, session]
        detail_outputs = [positions_plot, repeated, layernorm_plot, layernorm_info, similarity_plot]
        view_inputs = [sentence_a, sentence_b, groups, labels, arrows, shift, presenter, token, k, flips, view, session]
        view_outputs = [plot, info, table, token, near_token, near_output, variance, *detail_outputs]
        panels = [tables_info, random_panel, params]
        quiet = {"show_progress": "hidden"}

        def redraw(event, *, tables: bool = False):
            """After a change: the plane and the open side view, and, if the tables changed, the background."""
            event = event.success(embed, view_inputs, view_outputs, api_name=False, **quiet)
            if tables:
                event.then(draw_background, [background_n, session], background_json, api_name=False, **quiet)
            return event

        # the sentences redraw on any change: typed, pasted, or set by an example; the toggles
        # only on the user's input, since a link or a tour step sets many at once, then redraws
        gr.on(
            [
                sentence_a.change, sentence_b.change, groups.input, labels.input, arrows.input, shift.input,
                presenter.input, token.input, k.release,
            ],
            embed,
            view_inputs,
            view_outputs,
            api_name="embed",
            trigger_mode="always_last",
            **quiet,
        )

        # side views: computed when opened, then on every change while open
        for key, tab in (("plane", plane_tab), ("positions", positions_tab), ("layernorm", layernorm_tab),
                         ("similarity", similarity_tab), ("listing", listing_tab), ("lookup", lookup_tab)):
            tab.select(functools.partial(str, key), None, view, api_name=False, queue=False).then(
                show_details, detail_inputs, detail_outputs, api_name=False, **quiet
            )
        # the two documents run when their tab opens, not for every visitor who never opens it
        gr.on([listing_tab.select, listing_seed.change, listing_bug.change], show_listing, [listing_seed, listing_bug],
              [listing_output, listing_facts, listing_plot], api_name="listing_run", **quiet)
        gr.on([lookup_tab.select, lookup_sentence.change, lookup_dim.change, lookup_grad.change], show_lookup,
              [lookup_sentence, lookup_dim, lookup_grad], [lookup_vocab, lookup_code, lookup_output, lookup_info],
              api_name="lookup", trigger_mode="always_last", **quiet)

        # a page opened from a link shows the link's view; the tour sets views the same way
        applied = [session, flips, sentence_a, sentence_b, source, positions, groups, labels, arrows, shift, basis,
                   background_n, *freezes, token, k, presenter, step, tour_box, views, view, controls, *panels,
                   link_notes, losses, trained]
        loaded = demo.load(restore, session, applied, api_name=False)
        for button, move in ((next_button, next_step), (previous_button, previous_step)):
            redraw(button.click(move, [step, session], applied, api_name=move.__name__), tables=True)
        redraw(loaded, tables=True)
        presenter.change(None, presenter, None, js="(on) => window.embeddingExplorer.presenter(on)")  # also from links

        # the plane: sentence, vocabulary or frozen basis; the background drawn in it
        redraw(basis.input(choose_basis, [basis, sentence_a, sentence_b, groups, session], session,
                           api_name="basis"), tables=True)
        redraw(refit_button.click(refit, [sentence_a, sentence_b, groups, session], session, api_name="refit"),
               tables=True)
        background_n.change(draw_background, [background_n, session], background_json, api_name="background", **quiet)
        background_json.change(None, background_json, None,
                               js="(trace) => window.embeddingExplorer.setBackground(trace)")

        # one token: picked by a click on the plot (the page's script fills `picked`) or the list
        token.focus(picker_choices, [sentence_a, sentence_b, session], token, api_name="picker", **quiet)
        picked.change(pick_token, picked, token, api_name=False, queue=False).then(
            embed, view_inputs, view_outputs, api_name=False, **quiet
        )
        redraw(flip.click(flip_segment, [token, sentence_a, sentence_b, flips, session], flips, api_name="flip"))

        settings = [tokenizer, vocab_size, d_model, maxlen, n_segments, seed]
        redraw(
            gr.on(
                [c.change for c in settings],
                apply_settings,
                [*settings, session],
                [session, vocab_size, *panels],
                api_name="settings",
                trigger_mode="always_last",
                **quiet,
            ),
            tables=True,
        )
        # the listing's layer: the settings' own change events swap the tables and redraw
        listing.click(listing_defaults, None, [source, *settings, sentence_a, sentence_b], api_name="listing")
        redraw(source.change(choose_source, [source, session], [session, source, *panels], api_name="source"),
               tables=True)
        redraw(
            upload.upload(
                upload_table,
                [upload, session],
                [session, source, *panels],
                api_name="upload",
                concurrency_id="heavy",
                concurrency_limit=1,
            ),
            tables=True,
        )
        redraw(positions.input(choose_positions, [positions, session], [session, *panels], api_name="positions"))
        gr.on([f.input for f in freezes], freeze, [*freezes, session], [session, params], api_name="freeze")
        # training runs in its own small queue, so a class pressing Train at once does not
        # hold up everyone's live plot updates
        redraw(
            train_button.click(
                train,
                [steps, corpus, sentence_a, sentence_b, session],
                [session, losses, trained],
                api_name="train",
                concurrency_id="heavy",
                concurrency_limit=1,
            ),
            tables=True,
        )
        redraw(reset_button.click(reset_tables, session, [session, losses, trained], api_name="reset"), tables=True)

        # sharing and exporting what is on screen
        share_inputs = [sentence_a, sentence_b, source, positions, groups, labels, arrows, shift, basis,
                        background_n, *freezes, token, k, step, presenter]
        share_button.click(share_query, share_inputs, share_query_box, api_name="share").success(
            None, share_query_box, share_link,
            js="(query) => location.origin + location.pathname + (query ? '?' + query : '')",
        )
        png_button.click(None, None, None, js="() => window.embeddingExplorer.downloadPNG()")
        export_button.click(export_view, [sentence_a, sentence_b, groups, labels, arrows, shift, presenter, token, k,
                                          flips, session], exports, api_name="export")

        # for tests: a hash of the session, to show a refused request changed nothing
        with gr.Row(visible=False):
            fingerprint_button = gr.Button("fingerprint")
            fingerprint_box = gr.Textbox()
        fingerprint_button.click(fingerprint, session, fingerprint_box, api_name="fingerprint")

    # two quick updates at a time (one per core, one thread each) and one training or upload
    # in its own "heavy" group, so a class pressing Train never holds up live typing; the
    # queue itself is unbounded, so no update is turned away as "queue full"
    demo.queue(default_concurrency_limit=2, max_size=None)
    return demo


demo = build_demo()

if __name__ == "__main__":
    # scikit-learn (about 2 s) is left out of the start (see core/projection.py) and imported
    # while the server comes up, so the first visitor's first plot does not wait for it
    threading.Thread(target=importlib.import_module, args=("sklearn.decomposition",), daemon=True).start()
    # server name and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT when set
    demo.launch(**LAUNCH_OPTIONS)
