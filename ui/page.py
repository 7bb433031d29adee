"""The whole page: its panels laid out, their events wired, and the options it launches with.

Each panel lives in its own module (`ui.plane`, `ui.sideviews`, `ui.tourpanel`,
`ui.viewpanel`, `ui.tablespanel`, `ui.trainpanel`) with a `layout(page)` that adds its
components to the `Page` and a `wire(page)` that connects their events. The page's state is
not in its components: it is the tab's `View` on the server (`ui.events`), and every event
redraws from it (`ui.render`).
"""

from __future__ import annotations

import json
import os

import gradio as gr
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import HTMLResponse, JSONResponse

from core.tables.uploads import UploadLimits
from core.view.options import MAX_QUERY, VIEWS
from core.view.state import View
from ui import (
    admission,
    classroutes,
    coderoute,
    codeview,
    downloads,
    events,
    ondemand,
    plane,
    rawfiles,
    render,
    sideviews,
    tablespanel,
    tourpanel,
    trainpanel,
    viewpanel,
    visitors,
)
from ui.assets import ASSETS, gradio_plotly
from ui.gradiointernals import Blocks, UnknownEndpoint

# gradio's queue summarises its event log (a pandas DataFrame of up to 10,000 events) after
# every event, for a monitoring dashboard this app does not enable: measured, a tenth of a
# keystroke's server CPU, growing with the events served. Once per thousand events keeps the
# dashboard's figures if it is ever switched on. Read when the queue is made (build_demo);
# bench/server_cpu.py gives its echo baseline the same settings.
GRADIO_SETTINGS = {"GRADIO_ANALYTICS_CACHE_FREQUENCY": "1000"}
for _name, _value in GRADIO_SETTINGS.items():
    os.environ.setdefault(_name, _value)

MAX_UPLOAD_BYTES = UploadLimits().max_bytes  # the upload route refuses larger files while they stream in

INTRO = """\
# Embedding Explorer
BERT turns each token into three vectors — its **token** row, its **position** row and its
**segment** row (sentence A or B) — adds them into the **sum**, and normalises the sum with
LayerNorm into the **output**. Type two sentences and see all five vectors of every token in
one 2-D plane (PCA). Hover a point for its numbers; click a point to select its token. The page
opens on **a seeded random layer: its vectors mean nothing yet** (Tables → BERT for trained ones).
"""

# passed to launch() by `python app.py` and by the tests, so both serve the same page
# the type is the visitor's own system faces, not web fonts: four fewer downloads before the
# page reads well, and the same face on every screen of a class as its laptops have it
SYSTEM_FONTS = ["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica Neue", "Arial", "sans-serif"]
SYSTEM_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "Liberation Mono", "monospace"]

LAUNCH_OPTIONS = {
    "theme": gr.themes.Soft(font=SYSTEM_FONTS, font_mono=SYSTEM_MONO),
    # the footer keeps its link to the API's page (gradio_client users); "built with" and
    # gradio's settings are left out
    "footer_links": ["api"],
    "css_paths": [ASSETS / "style.css"],
    "head": f"<script>window.EMBEDDING_EXPLORER_PLOTLY = {json.dumps(gradio_plotly())};\n"
            f"{(ASSETS / 'labels.js').read_text()}\n{(ASSETS / 'explorer.js').read_text()}\n"
            f"{(ASSETS / 'classroom.js').read_text()}\n{(ASSETS / 'plotkeys.js').read_text()}</script>",
    "show_error": False,  # users see the sentences we write, never stack traces
    "max_file_size": MAX_UPLOAD_BYTES,
    "run_history": False,  # gradio would copy every figure into the browser's storage
}

TEST_HOOKS = "EMBEDDING_EXPLORER_TEST_HOOKS"  # set to 1 to add the tests' /fingerprint endpoint


class Page:
    """The page's components by name; panels add theirs in `layout` and find others' here.

    Every component is declared below, under the module that makes it, and nothing else can be
    set (`__slots__`): a misspelt name fails where it is set, not as a widget that is never
    written. A view field's widget is named by its declaration in `core.view.state.View`."""

    # the page (build_demo)
    controls: gr.Tabs  # the control column's tabs: Tour, View, Tables, Train
    views: gr.Tabs  # the main column's tabs: the plane and the side views
    plane_tab: gr.Tab
    panel_tabs: dict[str, gr.Tab]  # the control tabs by PANELS key, each added by its panel
    # ui/plane.py: the sentences, the main plot, the selected token, the search
    sentence_a: gr.Textbox
    sentence_b: gr.Textbox
    notice: gr.HTML
    direct: plane.Direct  # the page's live route (ui/direct.py)
    plot: gr.HTML
    info: gr.HTML
    neighbours: gr.Accordion  # the selected token's picker, neighbours and flip
    token: gr.Dropdown
    k: gr.Slider
    flip: gr.Button
    near_token: gr.Dataframe
    near_output: gr.Dataframe
    search: gr.Textbox
    regex: gr.Checkbox
    search_info: gr.Markdown
    search_hits: gr.Dataframe
    examples: gr.HTML  # the example pairs (ui/plane.py examples_html)
    table: gr.HTML
    embed_api: gr.Button
    api_button: gr.Button | None  # holds the API's endpoints of what the page sends directly (ui.direct.settable)
    # ui/sideviews.py: positions, LayerNorm, similarity, the two documents
    view_tabs: dict[str, gr.Tab]  # the side views' tabs by VIEWS key
    positions_plot: gr.Plot
    repeated: gr.Dataframe
    layernorm_plot: gr.Plot
    layernorm_info: gr.Markdown
    similarity_plot: gr.Plot
    listing_seed: gr.Number
    listing_bug: gr.Checkbox
    listing_output: gr.Code
    listing_facts: gr.Markdown
    listing_plot: gr.Plot
    lookup_sentence: gr.Textbox
    lookup_dim: gr.Number
    lookup_grad: gr.Checkbox
    lookup_info: gr.Markdown
    lookup_vocab: gr.Dataframe
    lookup_code: gr.Code
    lookup_output: gr.Code
    # ui/codeview.py: the view as a script; ui/coderoute.py: a link's script
    code: gr.Code
    code_copy: gr.Button
    code_download: gr.Button
    code_route: coderoute.CodeRoute
    # ui/tourpanel.py: the tour and the address bar
    tour_buttons: gr.HTML  # ← Previous and Next → (#tour-previous, #tour-next), the page's own
    previous_button: gr.Button  # hidden: the API's previous_step
    next_button: gr.Button  # hidden: the API's next_step
    tour_text: gr.HTML
    class_box: gr.HTML
    classes: classroutes.ClassRoutes  # a class's routes (ui/classroutes.py)
    address: gr.HTML
    # ui/viewpanel.py: what to draw, in which plane; the link and exports
    groups: gr.CheckboxGroup
    labels: gr.Checkbox
    arrows: gr.Checkbox
    shift: gr.Checkbox
    three_d: gr.Checkbox
    basis: gr.Radio
    background: gr.Number
    refit_button: gr.Button
    variance: gr.HTML
    background_json: gr.Textbox
    presenter: gr.Checkbox
    answers: gr.Checkbox  # a class's words in the plane (View.answers)
    share_button: gr.Button
    png_button: gr.Button
    export_button: gr.Button
    share_query: gr.Textbox
    share_link: gr.Textbox
    share_notes: gr.Markdown
    exports: gr.File
    export_links: gr.HTML
    downloads: downloads.Downloads  # the page's links to its exports (ui/downloads.py)
    # ui/tablespanel.py: the tables and the random tables' settings
    source: gr.Radio
    upload: gr.File
    positions: gr.Radio
    tables_info: gr.Markdown
    random_panel: gr.Accordion
    tokenizer: gr.Radio
    vocab_size: gr.Number
    d_model: gr.Slider
    maxlen: gr.Slider
    n_segments: gr.Slider
    seed: gr.Number
    listing: gr.Button
    # ui/trainpanel.py: freezes and training
    freezes: dict[str, gr.Checkbox]  # by PARTS name
    params: gr.Markdown
    corpus: gr.Radio
    steps: gr.Number
    train_button: gr.Button
    reset_button: gr.Button
    trained: gr.Markdown
    losses: gr.Plot

    __slots__ = tuple(__annotations__)

    def __init__(self) -> None:
        self.freezes = {}
        self.panel_tabs = {}
        self.api_button = None

    @property
    def live_outputs(self) -> list:
        """What a keystroke can change: the plane, the open side view, the picker, the notice.
        (The token table is drawn in the browser from the plot's token columns.)"""
        return [self.plot, self.info, self.token, self.near_token, self.near_output, self.variance,
                self.search_hits, self.search_info, *self.detail_outputs, self.notice, self.address]

    @property
    def direct_outputs(self) -> list:
        """The outputs the page's script writes when a direct call answers (ui/direct.py): each a
        gr.HTML whose script lets it set its value as gradio would."""
        return [self.plot, self.info, self.variance, self.notice, self.address, self.export_links]

    @property
    def handed_over(self) -> list:
        """What a direct answer may hand to gradio's components: everything a change writes, and
        what the page's work answers (`ui.direct.Direct.work`: a link)."""
        return [*self.everything, self.share_link, self.share_notes]

    @property
    def detail_outputs(self) -> list:
        """The side views' outputs, and the Code tab's: drawn from the sentences while open, emptied when not."""
        return [self.positions_plot, self.repeated, self.layernorm_plot, self.layernorm_info, self.similarity_plot,
                self.code]

    @property
    def everything(self) -> list:
        """Every component a change can write: a link, a tour step or a table change may set any.
        The view fields' widgets come from their declarations (`core.view.state.View`, `render.WIDGETS`)."""
        widgets = [getattr(self, name) for name in render.WIDGETS]
        widgets = [part for widget in widgets for part in (widget.values() if isinstance(widget, dict) else [widget])]
        return list(dict.fromkeys([  # the token picker is a live output and a field's widget: listed once
            *self.live_outputs, *widgets, self.neighbours, self.background_json, self.tables_info, self.random_panel,
            self.params, self.losses, self.trained, self.listing_output, self.listing_facts, self.listing_plot,
            self.lookup_vocab, self.lookup_code, self.lookup_output, self.lookup_info,
        ]))


class CompressedPage:
    """The page's HTML, gzipped for browsers that accept it.

    Gradio's page is its index with the whole page's configuration inside (every component and
    event: hundreds of KB for this page), and gradio compresses only paths with a file extension,
    so the document itself came uncompressed: a fifth of a first visit's bytes. Everything else
    passes as it is (a keystroke's answer is not worth the server's CPU to compress). A page
    asked for with a query string longer than any link the page writes (`MAX_QUERY`) is answered
    414 with a sentence.
    """

    def __init__(self, app) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=1000, compresslevel=6)

    async def __call__(self, scope, receive, send) -> None:
        page = scope["type"] == "http" and scope["method"] == "GET" and scope["path"].rstrip("/") == ""
        if page and len(scope.get("query_string", b"")) > MAX_QUERY:
            # a link the page could never have written: said in a sentence (gradio's own handler
            # passes the page's address to httpx, whose URL limit turned a 64 KB link into a 500)
            await TOO_LONG(scope, receive, send)
            return
        await (self.gzip if page else self.app)(scope, receive, send)


TOO_LONG = HTMLResponse(
    f"<!doctype html><title>Embedding Explorer</title><p>This link is too long: a link to a view of "
    f"Embedding Explorer is at most {MAX_QUERY:,} characters after the question mark. "
    f"<a href='./'>Open the explorer</a> and make the link again with its button.</p>", status_code=414)


class Explorer(Blocks):
    """The page's Blocks, launched with the page's own route (`ui.direct`) beside gradio's, and
    its HTML compressed (`CompressedPage`); outputs an event leaves as they are are not rebuilt
    (`ui.gradiointernals.Blocks`).

    Both go in through `launch`'s `app_kwargs` (FastAPI's `routes` and `middleware`), fresh each
    launch, so `python app.py`, a Space and the tests all serve them, however they launch.
    """

    explorer: Page  # the page's components (gradio's own `page` names a page of a multipage app)

    def launch(self, *args, app_kwargs: dict | None = None, **kwargs):
        app_kwargs = dict(app_kwargs or {})
        app_kwargs["routes"] = [*app_kwargs.get("routes", ()), self.explorer.direct.route(),
                                *self.explorer.classes.routes(), self.explorer.code_route.route(),
                                self.explorer.downloads.route()]
        # the client's address first: every per-address bound reads it (a Space's proxy is one hop)
        hops = os.environ.get("EXPLORER_PROXY_HOPS", "1" if os.environ.get("SPACE_ID") else "0")
        # then a call no bound would let in is refused before any route reads it (ui.admission.Door), and
        # every answer is counted in its address's account while it is on its way (ui.visitors.Outbox)
        app_kwargs["middleware"] = [Middleware(admission.ForwardedClient, hops=int(hops) if hops.isdigit() else 0),
                                    Middleware(admission.Door, visitors=self.admission.visitors),
                                    Middleware(visitors.Outbox, visitors=self.admission.visitors),
                                    *app_kwargs.get("middleware", ()), Middleware(CompressedPage),
                                    Middleware(rawfiles.UploadGate)]
        app_kwargs["exception_handlers"] = {**app_kwargs.get("exception_handlers", {}),
                                            UnknownEndpoint: no_such_endpoint}
        events.OFFLOAD.start()  # heavy work's process imports while the server comes up
        return super().launch(*args, app_kwargs=app_kwargs, **kwargs)

    def check_file(self, value: object) -> None:
        """A file an event names that was never uploaded is refused with a sentence
        (`rawfiles.check_sent`; gradio's own refusal reached an API client as a bare error)."""
        rawfiles.check_sent(self, value)


async def no_such_endpoint(request, error) -> JSONResponse:
    """A call to an API name the app does not have: 404 and a sentence (gradio answered 500)."""
    name = str(request.path_params.get("api_name", ""))[:100]
    return JSONResponse({"error": f"This app has no endpoint named {name!r}; its endpoints are listed at "
                                  "?view=api."}, status_code=404)


def build_demo(*, test_hooks: bool | None = None) -> gr.Blocks:
    """The page. `test_hooks` (default: the EMBEDDING_EXPLORER_TEST_HOOKS variable) adds the
    endpoints tests use to look inside a session; a public server never has them."""
    if test_hooks is None:
        test_hooks = os.environ.get(TEST_HOOKS) == "1"
    page = Page()
    # uploaded files are deleted an hour after they arrive (checked every 10 minutes)
    with Explorer(title="Embedding Explorer", delete_cache=(600, 3600)) as demo:
        gr.HTML(render.markdown(INTRO), elem_id="intro", elem_classes=["prose"])
        plane.layout_sentences(page)
        tourpanel.layout_address(page)
        page.classes = classroutes.ClassRoutes(page, classroutes.CLASSROOM)
        page.code_route = coderoute.CodeRoute()
        # the controls come first in the page's order, so the keyboard reaches them a few Tabs
        # after the sentences; the stylesheet draws them on the right (on a phone, below the plot)
        with gr.Row(equal_height=False, elem_id="main-row"):
            with gr.Column(scale=1, min_width=320, elem_id="control-column"), \
                    gr.Tabs(selected=View().panel, elem_id="controls") as page.controls:
                tourpanel.layout(page)
                viewpanel.layout(page)
                tablespanel.layout(page)
                trainpanel.layout(page)
            with gr.Column(scale=3, elem_id="main-column"), \
                    gr.Tabs(selected="plane", elem_id="views") as page.views:
                with gr.Tab(VIEWS["plane"], id="plane", elem_id="tab-plane") as page.plane_tab:
                    plane.layout(page)
                sideviews.layout(page)
                codeview.layout(page)
        for panel in (plane, sideviews, codeview, tourpanel, viewpanel, tablespanel, trainpanel):
            panel.wire(page)
        ondemand.defer(page)  # a tab's components are drawn when it is first opened; its select tells the view
        if test_hooks:
            _test_hooks(page)
        viewpanel.layout_last(page)
    # live updates: two at a time (one per core); heavy work waits in core.serving.jobs.Jobs, not here.
    # gradio's own bound (max_size) is off: ui.admission bounds the line per tab, per address and
    # in all, each refusal a sentence, and serves it in fair turns across addresses
    demo.queue(default_concurrency_limit=2, max_size=None)
    admission.install(demo)
    demo.explorer = page  # benchmarks call the page's own rendering (ui.render) with its components
    return demo


def _test_hooks(page: Page) -> None:
    """/fingerprint: a hash of the tab's view and session, to show a refused request changed nothing."""
    with gr.Row(visible=False):
        button, box = gr.Button("fingerprint"), gr.Textbox()

    def fingerprint(request: gr.Request) -> str:
        tab = events.tab_of(request)
        return f"{hash(tab.view):x}-{tab.session.fingerprint()}"

    button.click(fingerprint, None, box, api_name="fingerprint")


__all__ = ["LAUNCH_OPTIONS", "Page", "build_demo"]
