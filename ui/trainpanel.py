"""The Train panel: freeze parts, train a few steps with a live loss curve, reset.

Training runs in the heavy line outside the tab's lock (table changes are refused meanwhile); a
page watches it on the event loop, so a class watching one training holds no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time

import anyio
import gradio as gr

from core.drawing.charts import loss_spec
from core.drawing.palette import Palette, palette
from core.drawing.wire import figure_json
from core.model.training import Corpus, TrainConfig
from core.process.offload import OffloadError
from core.serving.jobs import Cancelled, Job
from core.tables.session import Session
from core.view import options
from core.view.options import CORPORA, LIMITS, PARTS, Refused
from ui import ondemand, render
from ui.assets import chart, number, radio, written_by_page
from ui.route import JOBS, OFFLOAD

LIVE_SECONDS = 0.4  # the least time between two redraws while training
POLL_SECONDS = 0.1  # how often a watcher looks again when a redraw's time came and nothing was new
# what a page is told of a fault in training (a bug, a broken table), whose stack the server's log keeps
FAULT = "Training failed on the server because of a fault, which its log keeps; the tables are as they were."


def layout(page) -> None:
    with ondemand.tab(page, "panel", "train"):
        ondemand.unnamed(gr.Markdown("**Freeze** a table to keep it out of training:"))
        for row in (PARTS[:2], PARTS[2:]):  # two by two: the labels fit
            with gr.Row():
                for part in row:
                    page.freezes[part] = gr.Checkbox(False, label=part, elem_id=f"freeze-{part}")
        page.params = gr.Markdown(elem_id="param-status")
        page.corpus = radio("corpus", CORPORA, "builtin", "Train on")
        with gr.Row():
            page.steps = number("train-steps", "steps", 100, "Steps", min_width=90)
            page.button("Train", "(steps, corpus) => window.embeddingExplorer.train({steps, corpus})",
                        [page.steps, page.corpus], elem_id="train-button", variant="primary", size="lg")
        page.button("Reset tables", "() => window.embeddingExplorer.set({reset: true})", elem_id="reset-button")
        # written by the page's script as each step's event comes, not handed to gradio: a busy
        # page would fold the steps' lines into the last. Heard as news (assets/announce.js): at
        # most a line a second, the latest, never one per step
        page.trained = written_by_page("train-summary", script=TRAINING_HEARD[0], then=TRAINING_HEARD[1],
                                       elem_classes=["prose"])
        page.losses = chart("loss-plot")


# the live region a training's lines are heard in, made when the page loads; each line written is said in it
TRAINING_HEARD = ("window.embeddingSay.region('train-said');",
                  "const line = new DOMParser().parseFromString(value || '', 'text/html').body.textContent.trim();"
                  " if (line) window.embeddingSay.later(window.embeddingSay.region('train-said'), line);")


def wire(page) -> None:
    page.live.stream("train", lambda tab, sent: train(page, tab, sent))


async def train(page, tab, sent):
    """A few gradient steps on the tab's tables, the loss curve drawn as they go: the page's
    `{train: {steps, corpus}}`, each checked here."""
    steps, corpus = (sent.get("steps"), sent.get("corpus")) if isinstance(sent, dict) else (None, None)
    high = LIMITS["steps"][1]
    told = ()
    try:
        if isinstance(steps, int | float) and not isinstance(steps, bool) and steps > high:
            told = (f"{steps:,.0f} steps is more than this page runs at once; training {high:,}.",)
            steps = high
        steps = options.whole(steps, "steps")
        options.choice(corpus, "corpus", CORPORA)
        # after a table change still in flight (BERT loading): train what the page will show
        view, session, revision = await anyio.to_thread.run_sync(_now, tab)
        text = Corpus.builtin() if corpus == "builtin" else Corpus.from_text(f"{view.sentence_a}\n{view.sentence_b}")
    except (Refused, ValueError) as error:
        yield _refused(page, tab, error)
        return
    done: dict = {}
    job = Job()
    config = TrainConfig(steps=steps)

    def progress(step: int, total: int, losses: tuple[float, ...], frame: Session | None = None) -> None:
        frames = job.progress[2] if job.progress else ()
        # read by every page that shares this training: how far it got, and its snapshots so far
        job.progress = (step, losses, frames if frame is None else (*frames, (step, losses, frame)))

    # a class training the same tables alike trains once; tables named by settings, not held (an upload: None)
    key = None if session.base.key == "upload" else (
        "training", session.tables(), session.trained, session.fixed, session.trained_tokenizer, text.sentences,
        config)

    admitted = threading.Event()  # the tab counts as training (or the training was refused)
    loop, finished = asyncio.get_running_loop(), asyncio.Event()  # the training's thread has ended

    def work() -> None:
        try:
            done["session"] = JOBS.run(
                tab, "training", lambda: session.trained_on(text, config, progress, job.stop, run=OFFLOAD.call),
                job, key, admitted=admitted)
        except (Refused, ValueError) as error:
            done["error"] = error
        except Cancelled:
            pass  # the page is gone: nobody reads the result
        except OffloadError as error:  # the heavy-work process ended or could not take the work: its sentence
            logging.getLogger(__name__).warning("training failed: %s", error)
            done["error"] = RuntimeError(f"{error} The tables are as they were.")
        except Exception:  # a fault, not a refusal: logged with its stack, and said plainly
            logging.getLogger(__name__).exception("training failed")
            done["error"] = RuntimeError(FAULT)
        finally:
            admitted.set()
            with contextlib.suppress(RuntimeError):  # the server's loop is closing: nobody watches
                loop.call_soon_threadsafe(finished.set)

    worker = threading.Thread(target=work, name="training", daemon=True)
    worker.start()
    # "Training…" only once the tab counts as training: a table change sent next is refused
    await anyio.to_thread.run_sync(admitted.wait)
    drawn = False  # whether a snapshot's plot was drawn
    try:
        yield {page.trained: f"Training {steps:,} steps…", page.notice: render.notice(told)}
        async with contextlib.aclosing(_as_it_goes(page, finished, job, steps, palette(view.theme))) as snapshots:
            async for out, frame in snapshots:
                if "error" in done:
                    break
                if frame is not None:
                    plot, revision = await anyio.to_thread.run_sync(
                        _plot, page, tab, view, session.adopt_training(frame), revision, True)
                    out.update(plot)
                    drawn = drawn or bool(plot)
                yield out
    finally:
        # its caller went away: the training stops at its next step, unless other pages share it
        if worker.is_alive():
            job.cancel()
    if "error" in done:
        restored = await anyio.to_thread.run_sync(_restored, page, tab, drawn)
        yield {**restored, **_refused(page, tab, done["error"])}
        return
    if "session" not in done:
        return  # cancelled: its page is gone
    yield await anyio.to_thread.run_sync(_adopted, page, tab, done["session"], steps, job, drawn)


def _now(tab) -> tuple:
    """The tab's view, session and revision of one moment (after any change in flight)."""
    with tab.lock:
        return tab.view, tab.session, tab.revision


def _adopted(page, tab, trained: Session, steps: int, job: Job, drawn: bool) -> dict:
    """The answer once trained: the tables adopted by what the tab shows (or set aside if they changed)."""
    taken = trained.training.steps
    notes = () if taken == steps else (
        f"Training stopped after {job.seconds:g} s, the longest one job may run on this server: {taken:,} of "
        f"{steps:,} steps were taken. Train again to continue from here.",)
    out = page.live.apply(tab, page.live.channels[tab], lambda view: view, notes=notes,
                          tables=lambda current: current.adopt_training(trained))
    if page.plot.elem_id not in out:  # set aside (the tables changed meanwhile): their own summary, curve and plot
        out = {**render.training(page, tab.session, tab.view.theme), **_restored(page, tab, drawn), **out}
    return out


def _plot(page, tab, view, session: Session, since: int | None = None, holds: bool = False) -> tuple[dict, int]:
    """The plot of `view` and `session` as a new revision of the tab; with `since`, only if none came since."""
    with tab.lock:
        if since is not None and tab.revision != since:
            return {}, since
        tab.revision += 1
        # a class's words stay drawn through a training's snapshots, as on the page before and after it
        out = render.plane(page, view, session, revision=tab.revision, holds=holds,
                           answers=render.answers_of(tab.member, view))
        return out, tab.revision


def _restored(page, tab, drawn: bool) -> dict:
    """After a training that drew its snapshots and was not adopted: the tab's own plot again."""
    if not drawn:
        return {}
    with tab.lock:  # the same lock _plot takes (reentrant): the view and session of one moment
        return _plot(page, tab, tab.view, tab.session)[0]


async def _as_it_goes(page, finished: asyncio.Event, job: Job, steps: int, colours: Palette):
    """(the loss curve and summary, a snapshot or None) every LIVE_SECONDS until `finished`, each snapshot
    shown; the curve in the palette of the view's theme (`colours`)."""
    drawn_at, drawn_step, shown = time.monotonic(), 0, 0
    while True:
        running = not finished.is_set()
        step, losses, frames = job.shared.progress or (0, (), ())
        if time.monotonic() - drawn_at >= LIVE_SECONDS:
            frame = None
            if shown < len(frames):
                step, losses, frame = frames[shown]
                shown += 1
            if frame is not None or (running and step != drawn_step):
                drawn_at, drawn_step = time.monotonic(), step
                # the whole run's x axis from the first curve: it grows along a still axis
                curve = figure_json(loss_spec(losses, steps, colours))
                yield {page.losses: curve, page.trained: f"Training… step {step} of {steps}."}, frame
                continue
        if not running and shown >= len(frames):
            if drawn_step:  # the last of them stays on screen its LIVE_SECONDS too, before the result
                await asyncio.sleep(max(0.0, LIVE_SECONDS - (time.monotonic() - drawn_at)))
            return
        # until the next redraw is due (or, past it with nothing new, a moment), or the training ends
        wait = max(POLL_SECONDS, LIVE_SECONDS - (time.monotonic() - drawn_at))
        if running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished.wait(), wait)
        else:  # the snapshots left are shown in their turn
            await asyncio.sleep(wait)


def _refused(page, tab, error: Exception) -> dict:
    """The refusal said, and the summary and curve back to what the tab's tables have learned."""
    return {**render.training(page, tab.session, tab.view.theme), page.notice: render.notice((str(error),))}
