"""The sentences and the main plane: the plot, its summary, one token's neighbours, the search, the token table.

The plot, its summary and the token table are the page's own (assets/explorer.js draws them from
the route's answers); the neighbours' and the search's tables are gradio's widgets.
"""

from __future__ import annotations

import html

import gradio as gr

from core.plane.pipeline import TABLE_HEADERS
from core.view.options import MAX_SEARCH, MAX_TEXT
from ui import ondemand, render
from ui.assets import EXAMPLES, chart, slider, written_by_page
from ui.route import only_true

NEIGHBOUR_HEADERS = ["#", "token", "cosine"]
# the main plot: assets/explorer.js draws each figure it is given, and fires this component's
# `input` event, the hand-over, when an answer carries values for gradio's widgets
PLOT_JS = "window.embeddingExplorer.attach(element.querySelector('.plane-host'), () => trigger('input'));"
# the token table's frame; assets/explorer.js fills its body each time the plot is drawn
TOKEN_TABLE = (
    '<div class="token-table"><span class="token-table-label">Tokens and vector norms</span>'
    '<div class="token-table-scroll" tabindex="0" role="region" aria-label="Tokens and vector norms">'
    "<table><thead><tr>" + "".join(f"<th scope=\"col\">{name}</th>" for name in TABLE_HEADERS)
    + "</tr></thead><tbody></tbody></table></div></div>"
)
# a click on a pair sends it over the page's route (`example`)
EXAMPLES_JS = """
element.addEventListener('click', (event) => {
  const pair = event.target.closest && event.target.closest('button[data-example]');
  if (pair) window.embeddingExplorer.set({example: Number(pair.dataset.example)});
});
"""


def layout_sentences(page) -> None:
    with gr.Row():
        # typed into: the page's script sends each key itself (assets/explorer.js), so gradio is told they are inputs
        page.sentence_a = gr.Textbox(EXAMPLES[0][0], label="Sentence A (segment 0)", elem_id="sentence-a",
                                     max_length=MAX_TEXT, interactive=True)
        page.sentence_b = gr.Textbox(EXAMPLES[0][1], label="Sentence B (segment 1, optional)", elem_id="sentence-b",
                                     max_length=MAX_TEXT, interactive=True)
    # what was let go, refused or ignored from a link: escaped text, kept until the next change
    page.notice = written_by_page("notice")


def layout(page) -> None:
    page.plot = gr.HTML("", elem_id="embed-plot", html_template='<div class="plane-host"></div>', js_on_load=PLOT_JS)
    page.info = written_by_page("embed-info", elem_classes=["prose"])
    # at layer K, a selected word's cosine with its other places, layer by layer ("" hides it)
    page.context = chart("context-plot")
    # closed until a token is selected (ui/render.py opens it), so its controls' code loads then (ui/ondemand.py)
    with gr.Accordion("Nearest neighbours and segments of one token", open=False,
                      elem_id="neighbours-panel") as page.neighbours, ondemand.content(page, page.neighbours):
        with gr.Row():
            # its choices are the tab's current tokens, filled when it is opened (`picker`)
            page.token = gr.Dropdown([("none", render.NO_TOKEN)], value=render.NO_TOKEN,
                                     label="Token (or click a point)", elem_id="selected-token", scale=2,
                                     allow_custom_value=True)
            page.k = slider("neighbour-k", "k", 10, "Neighbours (0: none)", scale=1)
            page.flip = gr.Button("Flip its segment (A ↔ B)", elem_id="flip-button", size="sm", scale=1)
        with gr.Row():
            page.near_token = gr.Dataframe(headers=NEIGHBOUR_HEADERS, label="Nearest by token vector (the table's row)",
                                           interactive=False, elem_id="neighbours-token", max_height=300)
            page.near_output = gr.Dataframe(
                headers=NEIGHBOUR_HEADERS, interactive=False, elem_id="neighbours-output", max_height=300,
                label="Nearest by output vector (same position and segment, after LayerNorm)")
        # at layer K: whom the selected token attends to most there (the plot draws them as lines)
        page.attention = gr.Markdown(elem_id="neighbours-attention")
    with gr.Accordion("Search the vocabulary", open=False, elem_id="search-panel") as page.search_panel, \
            ondemand.content(page, page.search_panel):
        with gr.Row():
            page.search = gr.Textbox(label="Any word of the table's vocabulary, not only the sentences'", scale=3,
                                     elem_id="vocab-search", max_length=MAX_SEARCH, placeholder="e.g. king")
            page.regex = gr.Checkbox(False, label="regular expression", elem_id="search-regex", scale=1)
        page.search_info = gr.Markdown(elem_id="search-info")
        page.search_hits = gr.Dataframe(headers=["entry", "id"], label="Found (crosses in the plot)",
                                        interactive=False, elem_id="search-hits", max_height=200)
    ondemand.unnamed(gr.HTML(examples_html(), elem_id="examples", js_on_load=EXAMPLES_JS))
    # drawn by the page's script from the plot's own token columns (core.drawing.wire.token_columns)
    ondemand.unnamed(gr.HTML(TOKEN_TABLE, elem_id="token-table"))


def wire(page) -> None:
    page.flip.click(None, js="() => window.embeddingExplorer.set({flip: true})")
    # the picker's list is the tab's own tokens when it is opened, so it never lists stale ones
    page.token.focus(None, js="() => window.embeddingExplorer.set({picker: true})")
    page.live.work("picker", lambda tab, _: {page.token: choices(page, tab)}, check=only_true("picker"))


def examples_html() -> str:
    """The example pairs as buttons, each sentence pair on one (escaped: text is text)."""
    pairs = "".join(
        f'<li><button type="button" class="example-pair" data-example="{number}">{html.escape(a)}'
        + (f' <span class="example-b">/ {html.escape(b)}</span>' if b else "") + "</button></li>"
        for number, (a, b) in enumerate(EXAMPLES))
    return f'<div class="examples"><span class="examples-label">Example pairs</span><ul>{pairs}</ul></div>'


def choices(page, tab) -> dict:
    """The picker's list: the tab's tokens now, and the one selected."""
    with tab.lock:
        tokens, token = tab.tokens, tab.view.token
        channel = page.live.channels[tab]
        channel.listed = True
        channel.sent.pop(page.token.elem_id, None)  # written here, outside an applied change
    return gr.update(choices=render.token_choices(tokens), value=render.NO_TOKEN if token is None else token)
