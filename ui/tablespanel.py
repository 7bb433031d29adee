"""The Tables panel: which tables — random, BERT's, GloVe's, an uploaded file — and their positions.

An upload is the page's own file input (no gradio upload component): the page posts the file to
`explorer/upload` (`ui.files.upload_route`), which hands it to `take_upload` here.
"""

from __future__ import annotations

import os

import gradio as gr

from core.process.memory import BUDGET
from core.tables.uploads import UploadLimits, read_upload, reading_bytes
from core.view.options import POSITIONS, SOURCES, TOKENIZERS, Refused
from core.view.state import Settings
from ui import ondemand
from ui.assets import number, radio, slider
from ui.route import JOBS

UPLOAD_LIMITS = UploadLimits()
UPLOAD_LABEL = "Upload a table: .safetensors, .pt, .npy, word2vec/GloVe .txt or .bin"
# the page's file input, with a drop zone: assets/explorer.js `upload` posts the chosen file
UPLOAD = (f'<div class="upload-zone"><label class="upload-label" for="upload-file">{UPLOAD_LABEL}</label>'
          '<input id="upload-file" type="file" aria-describedby="upload-hint">'
          '<p id="upload-hint" class="upload-hint">Choose a file, or drop it here. It is read on the server and '
          'used only by this page.</p></div>')
# the zone is marked `dragging` while a file is over it (assets/style.css): leaving it for one of its
# own children (the label, the input) is not leaving it
UPLOAD_JS = """
const input = element.querySelector('input[type=file]');
const zone = element.querySelector('.upload-zone');
const send = (file) => window.embeddingExplorer.upload(file, input);
input.addEventListener('change', () => { if (input.files.length) send(input.files[0]); });
element.addEventListener('dragover', (event) => { event.preventDefault(); zone.classList.add('dragging'); });
element.addEventListener('dragleave', (event) => {
  if (!element.contains(event.relatedTarget)) zone.classList.remove('dragging');
});
element.addEventListener('drop', (event) => {
  event.preventDefault();
  zone.classList.remove('dragging');
  if (event.dataTransfer.files.length) send(event.dataTransfer.files[0]);
});
"""


def layout(page) -> None:
    defaults = Settings()
    with ondemand.tab(page, "panel", "tables"):
        page.source = radio("table-source", SOURCES, "random", "Table source")
        ondemand.unnamed(gr.HTML(UPLOAD, elem_id="upload-table", js_on_load=UPLOAD_JS))
        page.positions = radio("positions", POSITIONS, "learned", "Position table")
        page.tables_info = gr.Markdown(elem_id="tables-info")
        with gr.Accordion("Random table settings", open=True, elem_id="random-panel") as page.random_panel:
            page.tokenizer = radio("tokenizer", TOKENIZERS, defaults.tokenizer, "Tokenizer")
            page.vocab_size = number("vocab-size", "vocab_size", defaults.vocab_size, "Vocabulary size (words)",
                                     visible=False, info="Most frequent words kept; the rest become [UNK].")
            page.d_model = slider("d-model", "d_model", defaults.d_model, "d_model (vector width)")
            page.maxlen = slider("maxlen", "maxlen", defaults.maxlen, "maxlen (positions)")
            page.n_segments = slider("n-segments", "n_segments", defaults.n_segments, "Segments")
            page.seed = number("seed", "seed", defaults.seed, "Seed")
            page.button("The listing's layer: vocab 10, d_model 2",
                        "() => window.embeddingExplorer.set({listing: true})", elem_id="listing-defaults")


def take_upload(page, tab, path) -> dict:
    """Read an uploaded table (in the heavy pool) and switch to it; a refusal leaves all as it was.

    What reading it holds at its peak (`core.tables.uploads.reading_bytes`: about the file's size
    for a float32 .npy file, read straight into its table; twice that for other formats) is
    reserved in the memory budget while it is read and taken in."""
    channel = page.live.channels[tab]
    try:
        BUDGET.check_client(tab, {**tab.holding(), -1: os.path.getsize(path)})  # before any work: refused at once
        with BUDGET.reserve(reading_bytes(path, UPLOAD_LIMITS), "the uploaded file's table"):
            table = JOBS.run(tab, "reading the upload", lambda: read_upload(path, UPLOAD_LIMITS))
            return page.live.applied(tab, channel, lambda view: view.with_(source="upload"),
                                     tables=lambda session: session.with_upload(table))
    except (Refused, ValueError) as error:
        return page.live.refused(tab, channel, ("source",), Refused(str(error)))


