"""The Tables panel: which tables — random, BERT's, GloVe's, an uploaded file — and their positions."""

from __future__ import annotations

import os

import gradio as gr

from core.process.memory import BUDGET
from core.tables.uploads import UploadLimits, read_upload, reading_bytes
from core.view.options import LIMITS, PANELS, POSITIONS, SOURCES, TOKENIZERS, Refused
from core.view.state import SETTINGS_FIELDS, Settings, View
from ui import events, render
from ui.direct import settable
from ui.plane import LIVE
from ui.viewpanel import HEAVY
from ui.widgets import Number, Slider

UPLOAD_LIMITS = UploadLimits()


def layout(page) -> None:
    defaults = Settings()
    with gr.Tab(PANELS["tables"], id="tables", elem_id="tab-tables") as page.panel_tabs["tables"]:
        page.source = gr.Radio([(label, key) for key, label in SOURCES.items()], value="random",
                               label="Table source", elem_id="table-source")
        page.upload = gr.File(label="Upload a table: .safetensors, .pt, .npy, word2vec/GloVe .txt or .bin",
                              elem_id="upload-table", height=120)
        page.positions = gr.Radio([(label, key) for key, label in POSITIONS.items()], value="learned",
                                  label="Position table", elem_id="positions")
        page.tables_info = gr.Markdown(elem_id="tables-info")
        with gr.Accordion("Random table settings", open=True, elem_id="random-panel") as page.random_panel:
            page.tokenizer = gr.Radio([(label, key) for key, label in TOKENIZERS.items()], value=defaults.tokenizer,
                                      label="Tokenizer", elem_id="tokenizer")
            page.vocab_size = _number("vocab_size", "Vocabulary size (words)", defaults, visible=False,
                                      info="Most frequent words kept; the rest become [UNK].")
            page.d_model = _slider("d_model", "d_model (vector width)", defaults)
            page.maxlen = _slider("maxlen", "maxlen (positions)", defaults)
            page.n_segments = _slider("n_segments", "Segments", defaults)
            page.seed = _number("seed", "Seed", defaults)
            page.listing = gr.Button("The listing's layer: vocab 10, d_model 2", elem_id="listing-defaults",
                                     size="sm")


def wire(page) -> None:
    outputs = page.everything
    for name in ("source", "positions"):  # the page sets these directly (ui.direct: their own lane)
        widget = getattr(page, name)
        settable(page, name, widget.input, widget, **LIVE)
    settings = [getattr(page, name) for name in SETTINGS_FIELDS]
    triggers = [page.tokenizer.input, page.vocab_size.input, page.d_model.release, page.maxlen.release,
                page.n_segments.release, page.seed.input]
    # the API's event in the heavy group: a large table is built in the shared pool, not on a live slot
    settable(page, SETTINGS_FIELDS, triggers, settings, api_name="settings", trigger_mode="always_last",
             api=events.named(lambda request, *values: apply_settings(page, request, values), SETTINGS_FIELDS),
             **HEAVY)
    # one event for the whole layer: its source, settings and sentence change together
    settable(page, "listing", page.listing.click, None, js="() => window.embeddingExplorer.set({listing: true})",
             api=events.named(lambda request: listing(page, request), ()), **LIVE)
    page.upload.upload(events.named(lambda request, path: upload(page, request, path), ("path",)), page.upload,
                       [*outputs, page.upload], api_name="upload", **HEAVY)


def apply_settings(page, request: gr.Request, values: tuple) -> dict:
    """New random-table settings (a large layer is built in the heavy pool first: `events.built_first`)."""
    changes = dict(zip(SETTINGS_FIELDS, values, strict=True))
    return events.update(page, request, lambda view: view.with_(**changes), asked=SETTINGS_FIELDS)


def listing(page, request: gr.Request) -> dict:
    """The first listing's layer on the second document's sentence (the API's; the page's goes direct)."""
    return events.update(page, request, View.on_listing_layer)


def upload(page, request: gr.Request, path: str | None) -> dict:
    """Read an uploaded table (in the heavy pool) and switch to it; a refusal leaves all as it was.

    What reading it holds at its peak (`core.tables.uploads.reading_bytes`: about the file's size for a
    float32 .npy file, which is read straight into its table, twice that for other formats) is
    reserved in the memory budget while it is read and taken in. The raw file is left to
    `ui.rawfiles`' sweep, not deleted here: gradio stores a file by its content's hash, so another
    visitor's upload of the same file may be about to read the same path."""
    tab = None
    try:
        tab = events.tab_of(request)
        if not path:
            raise Refused("No file arrived; choose a table file to upload.")
        BUDGET.check_client(tab, {**tab.holding(), -1: _size(path)})  # before any work: refused at once
        with BUDGET.reserve(reading_bytes(path, UPLOAD_LIMITS), "the uploaded file's table"):
            table = events.JOBS.run(tab, "reading the upload", lambda: read_upload(path, UPLOAD_LIMITS))
            out = events.update(page, request, lambda view: view.with_(source="upload"),
                                tables=lambda session: session.with_upload(table))
    except (Refused, ValueError) as error:
        gr.Warning(str(error))
        # the box is emptied, so a refused file does not look loaded
        return {page.upload: None, page.notice: render.notice((str(error),)),
                **({} if tab is None else render.fields(page, tab.view, ("source",)))}
    return {**out, page.upload: None}


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # read_upload says what is wrong with it


def _slider(name: str, label: str, defaults: Settings) -> gr.Slider:
    low, high = LIMITS[name]
    return Slider(low, high, value=getattr(defaults, name), step=1, label=label, elem_id=name.replace("_", "-"))


def _number(name: str, label: str, defaults: Settings, **extra) -> gr.Number:
    low, high = LIMITS[name]
    return Number(getattr(defaults, name), label=label, precision=0, minimum=low, maximum=high,
                  elem_id=name.replace("_", "-"), **extra)
