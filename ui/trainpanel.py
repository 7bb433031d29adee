"""The Train panel: freeze parts, train a few steps with a live loss curve, reset.

Training runs in the heavy pool (`core.live.Jobs`), outside the tab's lock, so the tab keeps
answering while it trains: view changes apply at once, table changes are refused until it
ends, and the trained tables are then adopted by whatever the tab shows by that time.
"""

from __future__ import annotations

import logging
import threading

import gradio as gr

from core import options
from core.figures import loss_figure
from core.live import Cancelled, Job
from core.options import CORPORA, LIMITS, PANELS, PARTS, Refused
from core.training import Corpus, TrainConfig
from ui import events, render
from ui.plane import LIVE
from ui.viewpanel import HEAVY
from ui.widgets import Checkbox, Number

LIVE_CURVE_SECONDS = 0.5  # how often the loss curve is redrawn while training runs


def layout(page) -> None:
    with gr.Tab(PANELS["train"], id="train", elem_id="tab-train") as page.panel_tabs["train"]:
        gr.Markdown("**Freeze** a table to keep it out of training:")
        for row in (PARTS[:2], PARTS[2:]):  # two by two: the labels fit
            with gr.Row():
                for part in row:
                    page.freezes[part] = Checkbox(False, label=part, elem_id=f"freeze-{part}")
        page.params = gr.Markdown(elem_id="param-status")
        page.corpus = gr.Radio([(label, key) for key, label in CORPORA.items()], value="builtin", label="Train on",
                               elem_id="corpus")
        with gr.Row():
            low, high = LIMITS["steps"]
            page.steps = Number(100, label="Steps", precision=0, minimum=low, maximum=high, elem_id="train-steps",
                                min_width=90)
            page.train_button = gr.Button("Train", variant="primary", elem_id="train-button")
        page.reset_button = gr.Button("Reset tables", elem_id="reset-button", size="sm")
        page.trained = gr.Markdown(elem_id="train-summary")
        page.losses = gr.Plot(show_label=False, elem_id="loss-plot")


def wire(page) -> None:
    outputs = page.everything
    freezes = list(page.freezes.values())
    gr.on([box.input for box in freezes], events.named(lambda request, *on: freeze(page, request, on), PARTS),
          freezes, outputs, api_name="freeze", **LIVE)

    def train_handler(request: gr.Request, steps, corpus):
        yield from train(page, request, steps, corpus)

    # the summary line says how far training got; no progress overlay on every output
    page.train_button.click(events.named(train_handler, ("steps", "corpus")), [page.steps, page.corpus], outputs,
                            api_name="train", **{**HEAVY, "show_progress": "hidden"})
    page.reset_button.click(events.named(lambda request: reset(page, request), ()), None, outputs, api_name="reset",
                            **LIVE)


def freeze(page, request: gr.Request, on: tuple) -> dict:
    frozen = frozenset(part for part, flag in zip(PARTS, on, strict=True) if options.flag(flag, f"freeze {part}"))
    return events.update(page, request, lambda view: view.with_(frozen=frozen), asked=("frozen",))


def reset(page, request: gr.Request) -> dict:
    return events.update(page, request, lambda view: view, tables=lambda session: session.reset())


def train(page, request: gr.Request, steps, corpus):
    """A few gradient steps on the tab's tables, the loss curve drawn as they go."""
    live = events.live_of(request)
    low, high = LIMITS["steps"]
    try:
        if isinstance(steps, int | float) and not isinstance(steps, bool) and steps > high:
            gr.Warning(f"{steps:,.0f} steps is more than this page runs at once; training {high:,}.")
            steps = high
        steps = options.whole(steps, "steps")
        options.choice(corpus, "corpus", CORPORA)
        with live.lock:  # after a table change still in flight (BERT loading): train what the page will show
            view, session = live.view, live.session
        text = Corpus.builtin() if corpus == "builtin" else Corpus.from_text(f"{view.sentence_a}\n{view.sentence_b}")
    except (Refused, ValueError) as error:
        yield _refused(page, live, error)
        return
    done: dict = {}
    job = Job()
    config = TrainConfig(steps=steps)

    def progress(step: int, total: int, losses: tuple[float, ...]) -> None:
        job.progress = (step, losses)  # read by every page that shares this training

    # the same tables, earlier training, freezes, corpus and settings train the same way: a
    # class pressing Train together trains once (core.live.Jobs). The source tables are named
    # by their settings (a preset or seeded random tables), not held; an upload is its tab's own
    key = None if session.base.key == "upload" else (
        "training", session.tables(), session.trained, session.fixed, session.trained_tokenizer, text.sentences,
        config)

    def work() -> None:
        try:
            done["session"] = events.JOBS.run(
                live, "training", lambda: session.trained_on(text, config, progress, job.stop, run=events.OFFLOAD.call),
                job, key)
        except (Refused, ValueError) as error:
            done["error"] = error
        except Cancelled:
            pass  # the page is gone: nobody reads the result
        except Exception as error:  # a fault, not a refusal: logged with its stack, and said plainly
            logging.getLogger(__name__).exception("training failed")
            done["error"] = RuntimeError(f"Training failed on the server ({type(error).__name__}); the tables are "
                                         "as they were.")

    worker = threading.Thread(target=work, name="training", daemon=True)
    worker.start()
    try:
        yield {page.trained: f"Training {steps:,} steps…"}
        while worker.is_alive():
            worker.join(LIVE_CURVE_SECONDS)
            seen = job.shared.progress
            if seen and worker.is_alive():
                step, losses = seen
                yield {page.losses: loss_figure(losses), page.trained: f"Training… step {step} of {steps}."}
    finally:
        # gradio closes this generator when the page goes away (or its event is cancelled):
        # the training stops at its next step, unless other pages share it
        if worker.is_alive():
            job.cancel()
    if "error" in done:
        yield _refused(page, live, done["error"])
        return
    if "session" not in done:
        return  # cancelled: its page is gone
    trained = done["session"]
    taken = trained.training.steps
    notes = () if taken == steps else (
        f"Training stopped after {job.seconds:g} s, the longest one job may run on this server: {taken:,} of "
        f"{steps:,} steps were taken. Train again to continue from here.",)
    out = events.update(page, request, lambda view: view, tables=lambda current: current.adopt_training(trained),
                        notes=notes)
    # set aside (the tables changed meanwhile), the summary and curve go back to the tables' own
    yield {**render.training(page, live.session), **out}


def _refused(page, live, error: Exception) -> dict:
    """The refusal said, and the summary and curve back to what the tab's tables have learned."""
    gr.Warning(str(error))
    return {**render.training(page, live.session), page.notice: render.notice((str(error),))}
