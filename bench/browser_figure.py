"""What the browser pays to draw the plane's figure, apart from the rest of the page.

    python -m bench.browser_figure [--characters 20] [--warm-up 3]

bench/browser_roundtrip.py measures a key in sentence A until the main plot shows it, against
an echo. This asks where the difference goes: is it the figure, any figure of these points, or
the page around it? In the same page of the same browser (bench/browser_roundtrip.py's page:
the app with an echo added), two more text boxes each feed a plain ``gr.Plot`` of their own
(`figure_demo`): ours, the figure the page's route sends for a keystroke, and plotly.express's
figure of the same points, as a notebook draws it (`figures_for`). Both are computed before any
timing, so only the page's work is measured. Per size (the page's default pair, about 16
tokens, and a 128-token pair) and per key: the echo, the app's own keystroke, ours and
plotly.express in turn, so a busy neighbour slows all alike. Reported: medians from keydown to
the new state on the page, and each against the echo.
"""

from __future__ import annotations

import json
import os
import statistics

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from bench import browser_roundtrip as roundtrip

SIZES = roundtrip.SIZES
PLOTS = ("ours", "express")


def figures_for(a: str, b: str, keys: list[str]) -> dict[str, dict[str, str]]:
    """For sentence A as it is and with each key typed at its end: both figures' JSON, titled A.

    - ours: the figure the page's route sends for sentence A and B (``core.drawing.figures.embedding_spec``,
      compact, made whole with ``core.drawing.wire.expand`` as the page's script does before
      plotly sees it);
    - plotly.express: ``px.scatter`` of the same points, coloured by group, each labelled with
      its token and hovering its position: the figure a notebook draws (bench/update_latency.py).

    Computed for each text a key can make before any timing, so the server's work is a
    dictionary lookup and only the page's is measured: gradio handing the value to its plot
    component, and plotly drawing it. Each answer is new JSON with the text as its title (the
    probe reads the title), so plotly draws new traces every time, as it does for a keystroke.
    """
    import pandas as pd
    import plotly.express as px

    from core.drawing.figures import embedding_spec
    from core.drawing.wire import expand, figure_json
    from core.plane.pipeline import explore
    from core.tables.session import Session
    from core.view.state import View

    session, groups = Session.create(), View().groups  # the page's default tables and groups
    found: dict[str, dict[str, str]] = {kind: {} for kind in PLOTS}
    for text in (a, *(a + key for key in keys)):
        scene = explore(session, text, b, groups).scene
        ours = expand(json.loads(figure_json(embedding_spec(scene, compact=True))))
        rows = [(group, token, i, *scene.points[group][i][:2])
                for group in scene.points for i, token in enumerate(scene.tokens)]
        frame = pd.DataFrame(rows, columns=["group", "token", "position", "x", "y"])
        express = json.loads(px.scatter(frame, x="x", y="y", color="group", text="token",
                                        hover_data=["position"]).to_json())
        for kind, figure in (("ours", ours), ("express", express)):
            figure.setdefault("layout", {})["title"] = {"text": text}
            found[kind][text] = json.dumps(figure)
    return found


def figure_demo(figures: dict[str, dict[str, str]]):
    """bench/browser_roundtrip.py's page, with a text box and a plain plot per figure kind. Each
    figure is made, before any timing, into the value gradio's browser code takes for the plot (by
    gr.Plot's own public `postprocess`, as ui/route.py `for_browser` does), and sent as it is."""
    import gradio as gr
    import plotly.io as pio

    from ui.route import for_browser

    demo = roundtrip.echo_demo()
    with demo, gr.Row():
        for kind in PLOTS:
            box = gr.Textbox(label=kind, elem_id=f"bench-{kind}-in", max_length=20_000)
            plot = gr.Plot(label=kind, elem_id=f"bench-{kind}-plot")
            sent = {text: for_browser(plot, pio.from_json(drawn, skip_invalid=True))
                    for text, drawn in figures[kind].items()}

            def draw(text: str, sent: dict = sent):
                return sent.get(text)

            # as the page's keystroke was wired when it went through gradio's queue: a change event,
            # latest input wins, no progress overlay, values sent as they are
            box.change(draw, box, plot, api_name=False, trigger_mode="always_last", show_progress="hidden",
                      postprocess=False)
    return demo


PROBES = "".join(
    f"{kind}: () => {{ const gd = document.querySelector('#bench-{kind}-plot .js-plotly-plot');"
    " return gd && gd.layout && gd.layout.title ? (gd.layout.title.text || null) : null; },"
    for kind in PLOTS
)
HELPERS = roundtrip.HELPERS.replace("const probes = {plot: plotKey, echo: echoKey};",
                                    f"const probes = {{plot: plotKey, echo: echoKey, {PROBES}}};")
if HELPERS == roundtrip.HELPERS:
    raise RuntimeError("bench/browser_roundtrip.py's probes changed: update bench/browser_figure.py")


def measure_size(page, callbacks, n_tokens: int, characters: int, warm_up: int) -> dict:
    a, b = roundtrip.pair(n_tokens)
    keys = roundtrip.keys_for(a, b)
    timed: dict[str, list[float]] = {kind: [] for kind in PLOTS}
    for kind in PLOTS:
        page.locator(f"#bench-{kind}-in textarea").fill(a)
        roundtrip.show(page, kind, a)
    for i in range(warm_up + characters):
        key = keys[i % len(keys)]
        for kind in PLOTS:
            selector = f"#bench-{kind}-in textarea"
            seconds = roundtrip.timed_key(page, kind, selector, key, a + key)["total"]
            if i >= warm_up:
                timed[kind].append(seconds)
            roundtrip.timed_key(page, kind, selector, "Backspace", a, press=True)  # back to A, untimed
    # the echo and the app's own keystroke, measured in the same page as bench/browser_roundtrip.py does
    app = roundtrip.measure_pair(page, callbacks, n_tokens, characters, warm_up)
    return {"tokens": n_tokens, "echo": app["echo"]["median"], "app": app["plot"]["median"],
            **{kind: statistics.median(seconds) for kind, seconds in timed.items()}}


def measure(characters: int = 20, warm_up: int = 3, sizes: tuple[int, ...] = SIZES) -> list[dict]:
    """Medians per size of the echo, the app's keystroke and the two figures alone, in one page."""
    figures: dict[str, dict[str, str]] = {kind: {} for kind in PLOTS}
    for n in sizes:
        a, b = roundtrip.pair(n)
        for kind, drawn in figures_for(a, b, roundtrip.keys_for(a, b)).items():
            figures[kind].update(drawn)
    return roundtrip.in_page(
        figure_demo(figures), HELPERS,
        lambda page, callbacks: [measure_size(page, callbacks, n, characters, warm_up) for n in sizes])


def report(results: list[dict]) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    rows = []
    for r in results:
        echo = r["echo"]
        for name, key in (("echo (one textbox)", "echo"), ("our figure, plain gr.Plot", "ours"),
                          ("plotly.express figure, plain gr.Plot", "express"), ("the app's keystroke", "app")):
            rows.append((str(r["tokens"]), name, f"{r[key] * 1e3:.0f}", f"{r[key] / echo:.2f}×"))
    return [(
        "browser: keydown → the new state on the page, medians in ms, one page; figures precomputed, so the "
        "plain plots measure the page's work alone",
        ("tokens", "what the key changes", "median", "vs echo"),
        rows,
    )]


def main() -> None:
    roundtrip.run(__doc__, measure, report, characters=20)

if __name__ == "__main__":
    main()
