"""The whole page: its panels laid out, its widgets wired to the page's route, and how it launches.

Each panel module has a `layout(page)`, and a `wire(page)` if it answers work on the page's route
(`ui.route`), its only way in and out; view fields' widgets are wired here, from their declarations.
"""

from __future__ import annotations

import json
import os

import gradio as gr
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from core.drawing.captions import markdown
from core.view.options import PARTS
from core.view.state import FIELDS, View
from ui import (
    admission,
    api,
    classroutes,
    codeview,
    ondemand,
    plane,
    render,
    sideviews,
    tablespanel,
    tourpanel,
    trainpanel,
    viewpanel,
)
from ui.assets import ASSETS, head, plotly_route
from ui.files import upload_route
from ui.route import OFFLOAD, Live, left_mid_body

INTRO = """\
# Embedding Explorer
BERT turns each token into three vectors — its **token** row, its **position** row and its
**segment** row (sentence A or B) — adds them into the **sum**, and normalises the sum with
LayerNorm into the **output**. Type two sentences and see all five vectors of every token in
one 2-D plane (PCA). Hover a point for its numbers; click a point to select its token. The page
opens on **a seeded random layer: its vectors mean nothing yet** (Tables → BERT for trained ones).
"""

# the visitor's own system faces, not web fonts: four fewer downloads before the page reads well
SYSTEM_FONTS = ["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica Neue", "Arial", "sans-serif"]
SYSTEM_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "Liberation Mono", "monospace"]
# how a widget's value becomes its field's, where it is not the value itself (JS, `value` in hand)
SENT_AS = {
    "dims": "value ? 3 : 2",  # the 3-D checkbox
    "token": f"value === {json.dumps(render.NO_TOKEN)} ? null : value",  # the picker's "none"
    "frozen": f"{json.dumps(list(PARTS))}.filter((_, i) => values[i])",  # a box per part, ticked or not
}
# the page's script sends the sentences and open tabs itself; a tour step's text is no input
NOT_WIRED = ("sentence_a", "sentence_b", "shown", "panel", "step")


class Page:
    """The page's components by name, each declared under the module that makes it; `__slots__`, so a
    misspelt name fails where it is set, not as a widget never written."""

    # the page (build_demo)
    controls: gr.Tabs  # the control column's tabs: Tour, View, Tables, Train
    views: gr.Tabs  # the main column's tabs: the plane and the side views
    panel_tabs: dict[str, gr.Tab]  # the control tabs by PANELS key (ui.ondemand.tab adds each)
    view_tabs: dict[str, gr.Tab]  # the main column's tabs by VIEWS key: the plane, the side views, the code
    live: Live  # the page's route (ui/route.py)
    # ui/plane.py: the sentences, the main plot, the selected token, the search
    sentence_a: gr.Textbox
    sentence_b: gr.Textbox
    notice: gr.HTML
    plot: gr.HTML
    info: gr.HTML
    neighbours: gr.Accordion
    token: gr.Dropdown
    k: gr.Slider
    flip: gr.Button
    near_token: gr.Dataframe
    near_output: gr.Dataframe
    attention: gr.Markdown  # at layer K, whom the selected token attends to most
    context: gr.HTML  # at layer K, the selected word's cosine with its other places, per layer (a chart)
    search_panel: gr.Accordion
    search: gr.Textbox
    regex: gr.Checkbox
    search_info: gr.Markdown
    search_hits: gr.Dataframe
    # ui/sideviews.py: positions, LayerNorm, similarity, the two documents
    positions_plot: gr.HTML
    repeated: gr.Dataframe
    layernorm_plot: gr.HTML
    layernorm_info: gr.Markdown
    similarity_plot: gr.HTML
    listing_seed: gr.Number
    listing_bug: gr.Checkbox
    listing_output: gr.Code
    listing_facts: gr.Markdown
    listing_plot: gr.HTML
    lookup_sentence: gr.Textbox
    lookup_dim: gr.Number
    lookup_grad: gr.Checkbox
    lookup_info: gr.Markdown
    lookup_vocab: gr.Dataframe
    lookup_code: gr.Code
    lookup_output: gr.Code
    # ui/codeview.py: the view as a script
    code: gr.Code
    code_corpus: gr.Column  # the corpus's download, shown when the script reads the built-in corpus from its own file
    # ui/tourpanel.py: the tour and the address bar
    tour_text: gr.HTML
    address: gr.HTML
    # ui/viewpanel.py: what to draw, in which plane; the link and exports
    groups: gr.CheckboxGroup
    layer: gr.Slider  # View.layer: the encoder's depth, set only on BERT's own tables
    reading: gr.Radio  # View.reading: the pair as one sequence, or each sentence on its own
    labels: gr.Checkbox
    arrows: gr.Checkbox
    shift: gr.Checkbox
    three_d: gr.Checkbox
    basis: gr.Radio
    background: gr.Number
    variance: gr.HTML
    background_json: gr.HTML
    presenter: gr.Checkbox
    theme: gr.Radio  # View.theme: light, or the projector's dark page
    answers: gr.Checkbox  # a class's words in the plane (View.answers)
    sound: gr.Checkbox  # the plane heard as the keys move (View.sound, assets/sound.js)
    share_link: gr.Textbox
    share_notes: gr.Markdown
    export_links: gr.HTML
    downloads: object  # ui.files.Downloads: the page's links to its exports
    # ui/tablespanel.py: the tables and the random tables' settings
    source: gr.Radio
    positions: gr.Radio
    tables_info: gr.Markdown
    random_panel: gr.Accordion
    tokenizer: gr.Radio
    vocab_size: gr.Number
    d_model: gr.Slider
    maxlen: gr.Slider
    n_segments: gr.Slider
    seed: gr.Number
    # ui/trainpanel.py: freezes and training
    freezes: dict[str, gr.Checkbox]  # by PARTS name
    params: gr.Markdown
    corpus: gr.Radio
    steps: gr.Number
    trained: gr.HTML  # written by the page's script (ui.assets.written_by_page)
    losses: gr.HTML
    # made once the page is laid out (`laid_out`), so a change reads them without running code
    written: frozenset  # the outputs the page's script writes itself (each registered its setter); gradio's the rest
    detail_outputs: list  # the side views' outputs and the Code tab's: drawn while open, emptied when not

    __slots__ = tuple(__annotations__)

    def __init__(self) -> None:
        self.freezes, self.panel_tabs, self.view_tabs = {}, {}, {}
        self.live = Live(self)

    def laid_out(self) -> None:
        """Name the lists of outputs, once every panel has added its components."""
        charts = [self.positions_plot, self.layernorm_plot, self.similarity_plot, self.listing_plot, self.losses,
                  self.context]
        self.written = frozenset({self.plot, self.info, self.variance, self.notice, self.address, self.export_links,
                                  self.background_json, self.tour_text, self.trained, *charts})
        self.detail_outputs = [self.positions_plot, self.repeated, self.layernorm_plot, self.layernorm_info,
                               self.similarity_plot, self.code]

    @staticmethod
    def browser(triggers, js: str, inputs=None, outputs=None) -> None:
        """An event (or several) that runs in the browser alone (`js`): no server function, no API endpoint."""
        gr.on(triggers, None, inputs, outputs, js=js, api_visibility="private", queue=False, show_progress="hidden")

    def button(self, label: str, js: str, inputs=None, *, elem_id: str, size: str = "sm", **kwargs) -> None:
        """A button whose press runs `js` in the browser alone, wired where it is made: nothing else
        names it (in a tab's content it is `ondemand.unnamed`)."""
        button = ondemand.unnamed(gr.Button(label, elem_id=elem_id, size=size, **kwargs))
        self.browser(button.click, js, inputs)


def wire(page: Page) -> None:
    """Every view field's widget sends its value over the page's route when the person sets it."""
    for name in [name for name, declared in FIELDS.items() if declared.widget is not None and name not in NOT_WIRED]:
        widget = getattr(page, FIELDS[name].widget)
        boxes = list(widget.values()) if isinstance(widget, dict) else [widget]
        value = SENT_AS.get(name, "value")
        js = f"(...values) => {{ const value = values[0]; window.embeddingExplorer.set({{{name}: {value}}}); }}"
        page.browser([trigger(box) for box in boxes], js, boxes)


def hand_over(page: Page) -> None:
    """A browser-only event whose outputs are the gradio widgets an answer writes (explorer.js `handOver`)."""
    widgets = [component for component in page.live.by_id.values()
               if component not in page.written and not isinstance(component, gr.Button | gr.HTML | gr.Tab)]
    ids = json.dumps([widget.elem_id for widget in widgets])
    page.browser(page.plot.input, f"() => window.embeddingExplorer.handOver({ids})", outputs=widgets)


def trigger(widget):
    """The event that says a person set `widget`: a slider let go, a text changed, else its input."""
    if isinstance(widget, gr.Slider):
        return widget.release
    return widget.change if isinstance(widget, gr.Textbox) else widget.input


def build_demo() -> gr.Blocks:
    """The page, its routes and its API."""
    page = Page()
    with gr.Blocks(title="Embedding Explorer") as demo:
        gr.HTML(markdown(INTRO), elem_id="intro", elem_classes=["prose"])
        plane.layout_sentences(page)
        tourpanel.layout_address(page)
        # the controls come first in the page's order, so the keyboard reaches them a few Tabs
        # after the sentences; the stylesheet draws them on the right (on a phone, below the plot).
        # `on-tour` while the Tour tab is open (assets/explorer.js keeps it so): a phone's tour is laid out by it
        on_tour = ["on-tour"] if View().panel == "tour" else []
        with gr.Row(equal_height=False, elem_id="main-row", elem_classes=on_tour):
            with gr.Column(scale=1, min_width=320, elem_id="control-column"), \
                    gr.Tabs(selected=View().panel, elem_id="controls") as page.controls:
                for panel in (tourpanel, viewpanel, tablespanel, trainpanel):
                    panel.layout(page)
            with gr.Column(scale=3, elem_id="main-column"), gr.Tabs(selected="plane", elem_id="views") as page.views:
                with ondemand.tab(page, "shown", "plane"):
                    plane.layout(page)
                sideviews.layout(page)
                codeview.layout(page)
        page.laid_out()
        wire(page)
        for panel in (plane, viewpanel, trainpanel):
            panel.wire(page)
        hand_over(page)
        api.declare(page)
    # the API's calls take turns in the app's lines (ui/admission.py); gradio's queue only bounds them
    demo.queue(default_concurrency_limit=api.CONCURRENT, max_size=api.QUEUED)
    demo.explorer = page  # tests and benchmarks reach the page's route and components here
    return demo


def launch_options(demo: gr.Blocks) -> dict:
    """What `launch` is given (by app.py and the tests alike): the page's own routes and middleware."""
    page: Page = demo.explorer
    routes = [page.live.route(), *classroutes.ClassRoutes(page).routes(), api.route(page.live), api.corpus_route(),
              page.downloads.route(),
              upload_route(page.live, lambda tab, path: tablespanel.take_upload(page, tab, path),
                           tablespanel.UPLOAD_LIMITS.max_bytes), plotly_route()]
    # the client's address behind trusted proxies (uvicorn's own reading of X-Forwarded-For):
    # FORWARDED_ALLOW_IPS names them (a Space's proxy reaches the app from private addresses)
    trusted = os.environ.get("FORWARDED_ALLOW_IPS") or (
        "10.0.0.0/8,172.16.0.0/12,192.168.0.0/16,127.0.0.1" if os.environ.get("SPACE_ID") else "127.0.0.1")
    middleware = [Middleware(ProxyHeadersMiddleware, trusted_hosts=trusted), Middleware(admission.Door),
                  Middleware(admission.Outbox)]
    OFFLOAD.start()  # heavy work's process imports while the server comes up
    return {
        "theme": gr.themes.Soft(font=SYSTEM_FONTS, font_mono=SYSTEM_MONO),
        "footer_links": ["api"],  # the API's page, for gradio_client users
        "css_paths": [ASSETS / "style.css"],
        "head": head(),
        "show_error": False,  # users see the sentences we write, never stack traces
        "max_file_size": 0,  # the page uploads through its own route; gradio's takes nothing
        "app_kwargs": {"routes": routes, "middleware": middleware,
                       "exception_handlers": {ClientDisconnect: left_mid_body}},
    }

