"""What the page loads beside gradio's own: the example pairs, its scripts, plotly.js, the
outputs its script writes itself, and the widgets several panels build alike.

plotly.js is the one the installed `plotly` package carries (the version its figures are written
for), served by the app at `explorer/plotly.js`, gzipped once when the app starts and cached by
the browser for good (the name carries the version): never from a CDN. Every chart of the page
is drawn with it by the page's script (assets/explorer.js), the main plane and the small charts alike.
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import anyio
import gradio as gr
import plotly
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from core.view.options import LIMITS, TOUR_STEPS

ASSETS = Path(__file__).resolve().parents[1] / "assets"
EXAMPLES = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
PLOTLY_JS = Path(plotly.__path__[0]) / "package_data" / "plotly.min.js"
PLOTLY_PATH = f"explorer/plotly-{plotly.__version__}.js"  # relative to the page: its version names it, for caching
SCRIPTS = ("announce.js", "labels.js", "move.js", "explorer.js", "classroom.js", "plotkeys.js", "plottree.js",
           "plottable.js", "sound.js", "tour.js", "slide.js")

# the script of an output the page writes (a gr.HTML): it gives the page's script its setter, which
# sets the component's value as gradio would and runs `then`
OUTPUT_JS = "window.embeddingExplorer.output(%s, (value) => { props.value = value; %s });"
# a chart the page draws: its setter draws the figure's JSON into the element (no copy in gradio's props)
CHART_JS = "window.embeddingExplorer.output(%s, (value) => window.embeddingExplorer.chart(element, value));"


def head() -> str:
    """The page's scripts, in the page's <head>."""
    scripts = "\n".join((ASSETS / name).read_text(encoding="utf-8") for name in SCRIPTS)
    return (f"<script>window.EMBEDDING_EXPLORER_PLOTLY = {json.dumps(PLOTLY_PATH)};\n"
            f"window.EMBEDDING_EXPLORER_STEPS = {TOUR_STEPS};\n{scripts}</script>")


def written_by_page(elem_id: str, script: str = "", then: str = "", value: str = "", **kwargs) -> gr.HTML:
    """A gr.HTML output the page's script writes (`ui.route.Live.values` sends its value as it is)."""
    return gr.HTML(value, elem_id=elem_id, js_on_load=script + OUTPUT_JS % (json.dumps(elem_id), then), **kwargs)


def chart(elem_id: str) -> gr.HTML:
    """A chart the page's script draws with plotly.js (its value is a figure's JSON; "" is none)."""
    return gr.HTML("", elem_id=elem_id, elem_classes=["chart"], js_on_load=CHART_JS % json.dumps(elem_id))


def number(elem_id: str, limit: str, value: int, label: str, **kwargs) -> gr.Number:
    """A whole number, bounded in the browser as the server bounds it (`LIMITS[limit]`)."""
    low, high = LIMITS[limit]
    return gr.Number(value, label=label, precision=0, minimum=low, maximum=high, elem_id=elem_id, **kwargs)


def slider(elem_id: str, limit: str, value: int, label: str, **kwargs) -> gr.Slider:
    """A slider of whole numbers, bounded as the server bounds them (`LIMITS[limit]`)."""
    low, high = LIMITS[limit]
    return gr.Slider(low, high, value=value, step=1, label=label, elem_id=elem_id, **kwargs)


def radio(elem_id: str, labels: dict[str, str], value: str, label: str) -> gr.Radio:
    """One of a table's keys, each shown by its label."""
    return gr.Radio([(shown, key) for key, shown in labels.items()], value=value, label=label, elem_id=elem_id)


def plotly_route() -> Route:
    """`GET explorer/plotly-VERSION.js`: plotly.js, gzipped once, for browsers that accept it."""

    @functools.cache
    def made(zipped: bool) -> bytes:
        plain = PLOTLY_JS.read_bytes()
        return gzip.compress(plain, compresslevel=9, mtime=0) if zipped else plain

    async def script(request: Request) -> Response:
        zipped = "gzip" in request.headers.get("accept-encoding", "")
        body = await anyio.to_thread.run_sync(made, zipped)  # made once
        headers = {"Cache-Control": "public, max-age=31536000, immutable", "Vary": "Accept-Encoding"}
        if zipped:
            headers["Content-Encoding"] = "gzip"
        return Response(body, media_type="text/javascript", headers=headers)

    return Route(f"/{PLOTLY_PATH}", script, methods=["GET"])
