"""A first visit's weight: the bytes and requests until the page has drawn, against a minimal Gradio page.

    python -m bench.first_load [--repeats 3]

Two servers side by side, each in its own child process: the app (`python app.py`) and a
minimal `gr.Blocks` page with one textbox and one `gr.Plot` showing a small figure (the least
a Gradio page that draws a plot can load). Each is opened in a fresh Chromium context (an empty
cache, as a first visit), and every request is counted until the page has drawn its plot and
the network has been quiet for a second: the bytes are what came over the wire (Chromium's
encoded lengths: compressed where the server compressed), the requests every one the page made.
The HTML document's own bytes are shown apart. Reported: medians
of --repeats visits, and ours / minimal. Measured, never asserted.
"""

from __future__ import annotations

import statistics
import sys
from contextlib import ExitStack

from bench.appserver import launched, launched_app
from tests.conftest import CHROMIUM, launch_chromium

MINIMAL = """
import gradio as gr
import plotly.graph_objects as go
figure = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], mode="markers+text", text=["a", "b", "c"]))
with gr.Blocks() as demo:
    gr.Textbox("The cat sat on the mat.", label="Sentence")
    plot = gr.Plot(figure, elem_id="minimal-plot")
demo.launch()
"""
# the floor for a page with this app's controls: one of each component type the app's page uses
# (read from the app itself: its components by element id, ui.route.Live.by_id), beside the same
# plot, and nothing else: no events, no script of ours. Gradio loads each type's code (and its
# "example" form) as modules of their own, a few requests a type, whatever the page does with them
SAME_TYPES = """
import gradio as gr
import plotly.graph_objects as go
import app
kinds = sorted({type(c) for c in app.demo.explorer.live.by_id.values() if isinstance(c, gr.Component)},
               key=lambda k: k.__name__)
figure = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], mode="markers+text", text=["a", "b", "c"]))
with gr.Blocks() as demo:
    with gr.Tabs():
        with gr.Tab("one"):
            with gr.Accordion("closed", open=False):
                gr.Markdown("x")
            for kind in kinds:
                if kind is gr.Dataset:
                    gr.Dataset(components=[gr.Textbox(visible=False)], samples=[["a"]])
                elif kind is not gr.Plot:
                    kind()
            gr.Plot(figure, elem_id="minimal-plot")
        with gr.Tab("two"):
            gr.Markdown("y")
print(sorted(k.__name__ for k in kinds), flush=True)
demo.launch()
"""
DRAWN = {  # when each page has drawn its plot
    "app": "() => { const gd = document.querySelector('#embed-plot .js-plotly-plot'); return gd && gd.data"
           " && gd.data.length > 0; }",
    "minimal": "() => { const gd = document.querySelector('#minimal-plot .js-plotly-plot'); return gd && gd.data"
               " && gd.data.length > 0; }",
}
DRAWN["same types"] = DRAWN["minimal"]


def visit(browser, url: str, drawn: str) -> dict:
    """One first visit: bytes over the wire, requests, and the HTML document's bytes."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
    sizes, urls = {}, {}
    cdp.on("Network.requestWillBeSent", lambda e: urls.setdefault(e["requestId"], e["request"]["url"]))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    cdp.on("Network.dataReceived", lambda e: sizes.__setitem__(
        e["requestId"], sizes.get(e["requestId"], 0) + e.get("encodedDataLength", 0)))
    try:
        page.goto(url)
        page.wait_for_function(drawn, timeout=120_000)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(1000)
        document = next((sizes.get(i, 0) for i, u in urls.items() if u.rstrip("/") == url.rstrip("/")), 0)
        return {"bytes": sum(sizes.values()), "requests": len(urls), "html": document}
    finally:
        context.close()


def measure(repeats: int = 3) -> dict:
    from playwright.sync_api import sync_playwright

    if CHROMIUM is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    found = {"app": [], "minimal": [], "same types": []}
    with ExitStack() as stack:
        app_url, _ = stack.enter_context(launched_app())
        minimal_url, _ = stack.enter_context(launched([sys.executable, "-c", MINIMAL], "the minimal page"))
        same_url, _ = stack.enter_context(launched([sys.executable, "-c", SAME_TYPES], "the same types' page"))
        playwright = stack.enter_context(sync_playwright())
        browser = launch_chromium(playwright)
        stack.callback(browser.close)
        for _ in range(repeats):
            for name, url in (("minimal", minimal_url), ("same types", same_url), ("app", app_url)):
                found[name].append(visit(browser, url, DRAWN[name]))
    return {name: {key: statistics.median(v[key] for v in visits) for key in ("bytes", "requests", "html")}
            for name, visits in found.items()}


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    app, minimal, same = found["app"], found["minimal"], found["same types"]
    rows = [
        (name, f"{m['bytes'] / 1e6:.2f}", f"{m['requests']:.0f}", f"{m['html'] / 1e3:.0f}")
        for name, m in (("the app", app), ("minimal page (a textbox and a plot)", minimal),
                        ("one of each of the app's component types and the plot", same))
    ]
    for name, base in (("minimal", minimal), ("same types", same)):
        rows.append((f"the app / {name}", f"{app['bytes'] / base['bytes']:.2f}×",
                     f"{app['requests'] / base['requests']:.2f}×", f"{app['html'] / max(1, base['html']):.2f}×"))
    return [("first visit, empty cache, until the plot is drawn and the network is quiet (medians)",
             ("page", "MB over the wire", "requests", "HTML KB"), rows)]


def main() -> None:
    from bench.report import run_repeated

    run_repeated(__doc__, measure, report, 3)


if __name__ == "__main__":
    main()
