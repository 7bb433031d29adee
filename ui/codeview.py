"""The Code tab: the view on screen as a short Python script (`core.drawing.code`), with Copy and Download .py.

A tab of the main column like the side views (`ui.sideviews`): its components are drawn when it
is first opened (`ui.ondemand`), a link opens it as ``?view=code``, and its script is written
only while it is open (`ui.render.outputs`). The script is the tab's own: its trainings, its
frozen plane and its drawing, which no link carries; `/explorer/code?…` (`ui.api`) writes
a link's. Copy and Download run in the browser alone: the script is the code box's value. A
trained tab's script reads the built-in corpus from a file beside it, which a second button saves.
"""

from __future__ import annotations

import json

import gradio as gr

from core.drawing.code import CORPUS_FILE
from ui import ondemand
from ui.api import CODE_PATH, CORPUS_PATH, FILE_NAME

INTRO = (
    "**This view as a Python script**: the tokenizer, the `Embedding` module with its four tables, the five groups, "
    "the plane and the plot, in plain PyTorch, NumPy, scikit-learn and Plotly. Paste it into a notebook, or save it "
    f"and run `python {FILE_NAME}` for the plot, `--json` for each group's points as this page plots them. Any "
    f"link's script: `{CODE_PATH.lstrip('/')}?` and the link's query."
)


def with_code(action: str, said: str) -> str:
    """A button's script: `action` with the code box's value as `code`, ended by a line break as a
    file is (the box keeps none), then `said` in the live region, which reads it out."""
    return f"""async (code) => {{
  code = code.endsWith('\\n') ? code : code + '\\n';
{action}
  const status = document.querySelector('#code-status');
  if (status) status.textContent = {said};
}}"""


COPY_JS = with_code("""  try {
    await navigator.clipboard.writeText(code);
  } catch (error) {  // no clipboard permission (an http page): select a copy and copy that
    const area = Object.assign(document.createElement('textarea'), {value: code});
    document.body.appendChild(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }""", "'Copied the script.'")
# a file made in the browser from the code box's value, named as the route names it
DOWNLOAD_JS = with_code(f"""  const link = document.createElement('a');
  link.href = URL.createObjectURL(new Blob([code], {{type: 'text/x-python'}}));
  link.download = {json.dumps(FILE_NAME)};
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);""", json.dumps(f"Downloaded the script as {FILE_NAME}."))


# the built-in corpus, saved from the app's route under the name the script reads (relative: a Space serves the
# page under a path of its own)
CORPUS_JS = f"""() => {{
  const link = Object.assign(document.createElement('a'), {{href: {json.dumps(CORPUS_PATH.lstrip('/'))},
                                                            download: {json.dumps(CORPUS_FILE)}}});
  document.body.appendChild(link);
  link.click();
  link.remove();
  const status = document.querySelector('#code-status');
  if (status) status.textContent = {json.dumps(f"Downloaded {CORPUS_FILE}: keep it beside {FILE_NAME}.")};
}}"""


def layout(page) -> None:
    with ondemand.tab(page, "shown", "code"):
        ondemand.unnamed(gr.Markdown(INTRO))
        with gr.Row():
            copy = ondemand.unnamed(gr.Button("Copy", size="sm", elem_id="code-copy", scale=0, min_width=90))
            download = ondemand.unnamed(gr.Button("Download .py", size="sm", elem_id="code-download", scale=0,
                                                  min_width=140))
            # shown by the server when the script reads the corpus (`ui.render.outputs`): a layout, as gradio's
            # widgets an answer writes are (`ui.page.hand_over`), built invisible
            with gr.Column(scale=0, min_width=170, visible=False, elem_id="code-corpus-box") as page.code_corpus:
                corpus = gr.Button(f"Download {CORPUS_FILE}", size="sm", elem_id="code-corpus")
            ondemand.unnamed(gr.HTML('<p id="code-status" role="status" aria-live="polite"></p>', padding=False))
        # plain (`language=None`), as the side views' code (ui/sideviews.py): in the theme's text colour
        page.code = gr.Code(language=None, interactive=False, show_label=False, elem_id="code-view", lines=20,
                            max_lines=40, buttons=[])
        page.browser(copy.click, COPY_JS, page.code)
        page.browser(download.click, DOWNLOAD_JS, page.code)
        page.browser(corpus.click, CORPUS_JS)
