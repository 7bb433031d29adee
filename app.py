"""Embedding Explorer: the Gradio page. Layout and thin callbacks only.

Every callback turns widget values into a call into `core/`, and the result into widget
values; the math lives in `core/`. A callback that changes the session computes the new one
first and returns it last, so a refused change leaves the session as it was. `python app.py`
launches the page; importing this module only builds it (`demo`), which is what the tests and
a Hugging Face Space need.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import gradio as gr
import torch
from gradio.components.plot import PlotData
from threadpoolctl import threadpool_limits

import widgets
from core.embedding import COMPONENTS
from core.figures import embedding_spec, figure_json, loss_figure
from core.presets import LIMITS, LISTING_SETTINGS, POSITIONS, SOURCES, Settings
from core.session import Session
from core.training import PARTS, Corpus, TrainConfig
from core.uploads import UploadLimits, read_upload
from core.view import TABLE_HEADERS, Exploration, explore

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

# passed to launch() by `python app.py` and by the tests, so both serve the same page
LAUNCH_OPTIONS = {
    "theme": gr.themes.Soft(),
    "css_paths": [ASSETS / "style.css"],
    "show_error": False,  # users see the gr.Error sentences we write, never stack traces
    "max_file_size": UPLOAD_LIMITS.max_bytes,
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
def embed(sentence_a: str, sentence_b: str, groups: list[str], labels: bool, arrows: bool, session: Session):
    """The main update: two sentences in, the plot, a summary line and the token table out."""
    result = explore(session, sentence_a or "", sentence_b or "", groups or [])
    # the figure's JSON straight from its dict: building a go.Figure costs more than the math
    figure = PlotData(type="plotly", plot=figure_json(embedding_spec(result.scene, labels=labels, arrows=arrows)))
    return figure, summary(result, session), result.rows


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
    line = (
        f"**{len(encoding)} tokens** ({len(encoding) - in_b - markers} from A, {in_b} from B, {markers} markers)"
        f" · the plane shows {scene.explained[0]:.1%} + {scene.explained[1]:.1%} of the variance"
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
                plot = gr.Plot(show_label=False, elem_id="embed-plot")
                info = gr.Markdown(elem_id="embed-info")
                gr.Examples(EXAMPLES, inputs=[sentence_a, sentence_b], label="Example pairs")
                table = gr.Dataframe(
                    headers=list(TABLE_HEADERS),
                    label="Tokens and vector norms",
                    interactive=False,
                    elem_id="token-table",
                    max_height=320,
                )
            with gr.Column(scale=1, min_width=320), gr.Tabs():
                with gr.Tab("View", elem_id="tab-view"):
                    groups = widgets.CheckboxGroup(
                        list(COMPONENTS), value=list(COMPONENTS), label="Groups to plot", elem_id="groups"
                    )
                    labels = widgets.Checkbox(True, label="Show token labels", elem_id="show-labels")
                    arrows = widgets.Checkbox(
                        False,
                        label="Show the addition tip to tail",
                        elem_id="show-arrows",
                        info="token → +position → +segment = sum → LayerNorm output",
                    )
                with gr.Tab("Tables", elem_id="tab-tables"):
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
                with gr.Tab("Train", elem_id="tab-train"):
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

        view_inputs = [sentence_a, sentence_b, groups, labels, arrows, session]
        view_outputs = [plot, info, table]
        panels = [tables_info, random_panel, params]

        def then_embed(event):
            return event.success(embed, view_inputs, view_outputs, api_name=False, show_progress="hidden")

        gr.on(
            [sentence_a.change, sentence_b.change, groups.change, labels.change, arrows.change],
            embed,
            view_inputs,
            view_outputs,
            api_name="embed",
            trigger_mode="always_last",
            show_progress="hidden",
        )
        demo.load(table_panels, session, panels, api_name=False).then(
            embed, view_inputs, view_outputs, api_name=False, show_progress="hidden"
        )
        settings = [tokenizer, vocab_size, d_model, maxlen, n_segments, seed]
        then_embed(
            gr.on(
                [c.change for c in settings],
                apply_settings,
                [*settings, session],
                [session, vocab_size, *panels],
                api_name="settings",
                trigger_mode="always_last",
                show_progress="hidden",
            )
        )
        listing.click(listing_defaults, None, [source, *settings, sentence_a, sentence_b], api_name="listing")
        then_embed(source.change(choose_source, [source, session], [session, source, *panels], api_name="source"))
        then_embed(
            upload.upload(
                upload_table,
                [upload, session],
                [session, source, *panels],
                api_name="upload",
                concurrency_id="heavy",
                concurrency_limit=1,
            )
        )
        then_embed(positions.input(choose_positions, [positions, session], [session, *panels], api_name="positions"))
        gr.on([f.input for f in freezes], freeze, [*freezes, session], [session, params], api_name="freeze")
        # training runs in its own small queue, so a class pressing Train at once does not
        # hold up everyone's live plot updates
        then_embed(
            train_button.click(
                train,
                [steps, corpus, sentence_a, sentence_b, session],
                [session, losses, trained],
                api_name="train",
                concurrency_id="heavy",
                concurrency_limit=1,
            )
        )
        then_embed(reset_button.click(reset_tables, session, [session, losses, trained], api_name="reset"))

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
    # server name and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT when set
    demo.launch(**LAUNCH_OPTIONS)
