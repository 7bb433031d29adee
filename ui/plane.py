"""The sentences and the main plane: the plot, its summary, one token's neighbours, the token table.

Typing and a click on a point are the live path: the page's script sends them straight to the
tab's state (`ui.direct`) and draws the plot itself. The same changes have API endpoints
(`embed`, `select`) through gradio's queue, which return what a keystroke can change
(`Page.live_outputs`).
"""

from __future__ import annotations

import html
import json

import gradio as gr

from core.plane.pipeline import TABLE_HEADERS
from core.view.options import LIMITS, MAX_SEARCH, MAX_TEXT, Refused
from core.view.state import View
from ui import events, render
from ui.assets import EXAMPLES
from ui.direct import Direct, settable, written_by_page
from ui.widgets import Checkbox, Slider, Table

NEIGHBOUR_HEADERS = ["#", "token", "cosine"]
# the main plot: assets/explorer.js draws each figure this component is given, from the queue
# or from a direct call (ui/direct.py), and fires its `input` event, the hand-over, when a
# direct answer carries values for gradio's components
PLOT_JS = """
window.embeddingExplorer.attach(element.querySelector('.plane-host'), () => trigger('input'));
watch('value', () => window.embeddingExplorer.draw(props.value));
"""


def hand_over_js(outputs: list) -> str:
    """The hand-over event's script: an event with no server function, whose outputs are
    `outputs`, returning the values a direct answer brought for them, looked up by element id
    (`assets/explorer.js`; undefined for the others, which gradio leaves as they are). Gradio
    sets them as it sets any event's outputs. The ids are listed here from the same list the
    event is given, so the page never depends on their order."""
    ids = [component.elem_id for component in outputs]
    unnamed = [component for component, elem_id in zip(outputs, ids, strict=True)
               if not elem_id or ids.count(elem_id) > 1]
    if unnamed:  # an answer names each by its element id: one without its own would never be written
        raise ValueError(f"Every output of the hand-over needs an element id of its own; these do not: {unnamed}")
    return f"() => window.embeddingExplorer.handOver({json.dumps(ids)})"


LIVE = {"concurrency_id": "live", "show_progress": "hidden"}
# the keystroke's events: gradio does not postprocess their values, ui.events.postprocess does
KEYSTROKE = {**LIVE, "postprocess": False}
# the token table's frame; assets/explorer.js fills its body each time the plot is drawn
TOKEN_TABLE = (
    '<div class="token-table"><span class="token-table-label">Tokens and vector norms</span>'
    '<div class="token-table-scroll" tabindex="0" role="region" aria-label="Tokens and vector norms">'
    "<table><thead><tr>" + "".join(f"<th scope=\"col\">{name}</th>" for name in TABLE_HEADERS)
    + "</tr></thead><tbody></tbody></table></div></div>"
)


def layout_sentences(page) -> None:
    with gr.Row():
        page.sentence_a = gr.Textbox(EXAMPLES[0][0], label="Sentence A (segment 0)", elem_id="sentence-a",
                                     max_length=MAX_TEXT)
        page.sentence_b = gr.Textbox(EXAMPLES[0][1], label="Sentence B (segment 1, optional)", elem_id="sentence-b",
                                     max_length=MAX_TEXT)
    # what was let go, refused or ignored from a link: escaped text, kept until the next change
    page.notice = gr.HTML(elem_id="notice", js_on_load=written_by_page("notice"))


def layout(page) -> None:
    page.direct = Direct(page)
    page.plot = gr.HTML("", elem_id="embed-plot", html_template='<div class="plane-host"></div>',
                        js_on_load=PLOT_JS)
    page.info = gr.HTML("", elem_id="embed-info", js_on_load=written_by_page("embed-info"), elem_classes=["prose"])
    # closed until a token is selected (ui.render opens it), so its controls' code loads then (ui.ondemand)
    with gr.Accordion("Nearest neighbours and segments of one token", open=False,
                      elem_id="neighbours-panel") as page.neighbours:
        with gr.Row():
            # its choices are the tab's current tokens, filled when it is opened
            page.token = gr.Dropdown([("none", render.NO_TOKEN)], value=render.NO_TOKEN,
                                     label="Token (or click a point)", elem_id="selected-token", scale=2,
                                     allow_custom_value=True)
            low, high = LIMITS["k"]
            page.k = Slider(low, high, value=10, step=1, label="Neighbours (0: none)", elem_id="neighbour-k", scale=1)
            page.flip = gr.Button("Flip its segment (A ↔ B)", elem_id="flip-button", size="sm", scale=1)
        with gr.Row():
            page.near_token = Table(headers=NEIGHBOUR_HEADERS, label="Nearest by token vector (the table's row)",
                                           interactive=False, elem_id="neighbours-token", max_height=300)
            page.near_output = Table(
                headers=NEIGHBOUR_HEADERS, interactive=False, elem_id="neighbours-output", max_height=300,
                label="Nearest by output vector (same position and segment, after LayerNorm)")
    with gr.Accordion("Search the vocabulary", open=False, elem_id="search-panel"):
        with gr.Row():
            page.search = gr.Textbox(label="Any word of the table's vocabulary, not only the sentences'", scale=3,
                                     elem_id="vocab-search", max_length=MAX_SEARCH, placeholder="e.g. king")
            page.regex = Checkbox(False, label="regular expression", elem_id="search-regex", scale=1)
        page.search_info = gr.Markdown(elem_id="search-info")
        page.search_hits = Table(headers=["entry", "id"], label="Found (crosses in the plot)",
                                        interactive=False, elem_id="search-hits", max_height=200)
    # a click on a pair sends it over the direct path (ui/direct.py `example`); drawn by the page,
    # not gr.Examples, whose table loaded each example component's code with the page
    page.examples = gr.HTML(examples_html(), elem_id="examples", js_on_load=EXAMPLES_JS)
    # drawn by the page's script from the plot's own token columns (core.drawing.wire.token_columns):
    # a keystroke sends the tokens once, for the plot and this table together
    page.table = gr.HTML(TOKEN_TABLE, elem_id="token-table")


def wire(page) -> None:
    outputs, keystroke = page.live_outputs, KEYSTROKE
    embed = events.setter(page, "sentence_a", "sentence_b", outputs=outputs, postprocessed=True)
    # the page types through ui.direct; this hidden button is the same change for API clients
    page.embed_api = gr.Button(visible=False)
    page.embed_api.click(embed, [page.sentence_a, page.sentence_b], outputs, api_name="embed", **keystroke)
    settable(page, "k", page.k.release, page.k, api=events.setter(page, "k", outputs=outputs, postprocessed=True),
             outputs=outputs, **keystroke)
    none = json.dumps(render.NO_TOKEN)  # the picker's "none": no token selected
    settable(page, "token", page.token.input, page.token, api=select(page), api_name="select", outputs=outputs,
             js=f"(token) => window.embeddingExplorer.set({{token: token === {none} ? null : token}})", **keystroke)
    # the list is filled from the tab's own tokens when opened, so it never lists stale ones
    settable(page, "picker", page.token.focus, None, js="() => window.embeddingExplorer.set({picker: true})",
             api=events.named(lambda request: api_choices(page, request), ()), api_name="picker",
             outputs=page.token, **LIVE)
    page.direct.work("picker", lambda tab, _: {page.token: choices(page, tab)})
    # what a direct call or a class's lesson changed beyond what the page's script writes (ui/direct.py)
    page.plot.input(None, None, page.handed_over, js=hand_over_js(page.handed_over), api_name=False,
                    show_progress="hidden", trigger_mode="always_last")
    # the search box's `change`, not its `input`: a paste or a filled-in value counts as typed
    settable(page, ("search", "regex"), [page.search.change, page.regex.input], [page.search, page.regex],
             api=events.setter(page, "search", "regex", outputs=outputs, postprocessed=True), outputs=outputs,
             trigger_mode="always_last", **keystroke)
    settable(page, "flip", page.flip.click, None, js="() => window.embeddingExplorer.set({flip: true})",
             api=events.named(lambda request: flip(page, request), ()), outputs=outputs, **keystroke)


EXAMPLES_JS = """
element.addEventListener('click', (event) => {
  const pair = event.target.closest && event.target.closest('button[data-example]');
  if (pair) window.embeddingExplorer.example(Number(pair.dataset.example));
});
"""


def examples_html() -> str:
    """The example pairs as buttons, each sentence pair on one (escaped: they are our own files,
    but text is text)."""
    pairs = "".join(
        f'<li><button type="button" class="example-pair" data-example="{number}">{html.escape(a)}'
        + (f' <span class="example-b">/ {html.escape(b)}</span>' if b else "") + "</button></li>"
        for number, (a, b) in enumerate(EXAMPLES))
    return f'<div class="examples"><span class="examples-label">Example pairs</span><ul>{pairs}</ul></div>'


def select(page):
    """Select a token from the list (its index); a click on a point goes through `ui.direct`."""

    def handler(request: gr.Request, value):
        token = None if value in (None, "", render.NO_TOKEN) else value
        return events.update(page, request, lambda view: view.with_(token=token), asked=("token",),
                             outputs=page.live_outputs, postprocessed=True)

    return events.named(handler, ("token",))


def api_choices(page, request: gr.Request):
    try:
        tab = events.tab_of(request)
    except Refused as error:  # an ended session, or a stranger's new tab refused: the picker stays as it is
        gr.Warning(str(error))
        return gr.skip()
    return choices(page, tab)


def choices(page, tab) -> dict:
    """The picker's list: the tab's tokens now, and the one selected."""
    with tab.lock:
        tokens, token = tab.tokens, tab.view.token
        channel = events.CHANNELS.of(tab)
        channel.listed = True
        channel.sent.pop(page.token, None)  # written here, outside ui.events.update
    return gr.update(choices=render.token_choices(tokens), value=render.NO_TOKEN if token is None else token)


def flip(page, request: gr.Request):
    """Give the selected token the other segment id, or give it back its own (the API's; the page's goes direct)."""
    return events.update(page, request, View.flipped, outputs=page.live_outputs, postprocessed=True)

