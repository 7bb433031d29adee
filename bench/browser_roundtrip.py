"""From a key press in the browser to the plot showing it, against an echo in the same page.

    python -m bench.browser_roundtrip [--characters 30] [--warm-up 3] [--sizes 16,128] [--aids] [--layer]

What a student feels while typing is the whole round trip: the key event, the page sending
the sentences (one POST to its route, ui/route.py), the server's update, the answer's trip back,
and plotly redrawing. This launches the app (``app.build_demo()``, its own launch options, routes
and queue) in this process, with one thing added inside the same Blocks: an echo, a textbox whose
``.input`` event returns its text into a second textbox through gradio's queue (`echo_demo`).
The echo is the baseline: the least a gradio event of this page can take on this machine, in
this browser, in this run. In Chromium
(Playwright, /usr/bin/chromium), for the page's default pair (about 16 tokens) and a 128-token
pair, it times a character typed into each, alternately (`measure_pair`); then a typist at a
human pace into the app's page and into a bare gradio echo page (`typing_pace`). The tables are
the page's default (random, d 32, WordPiece), as a student first sees them.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import io
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

# the browser and flags the page tests use: headless, and off the network
from tests.conftest import CHROMIUM, launch_chromium

SIZES = (16, 128)  # the page's default pair (its first example), and a 128-token pair
KEYS = "sqxzjkvwy"  # characters to type: each must change the token list (checked below)
TIMEOUT_MS = 60_000

# in-page helpers: a keydown timestamp, and a poll that timestamps the first sight of the new state
HELPERS = """() => {
  const plotKey = () => {
    const gd = document.querySelector('#embed-plot .js-plotly-plot');
    // the output group: one point per token, its hover text the token (the token group names a
    // repeated token's positions in its hover text); only once the labels of that figure are
    // written too (assets/explorer.js marks the revision it plotted, and the one drawn whole)
    const trace = gd && gd.data && gd.data.find(t => t.name === 'output');
    const host = gd && gd.closest('.plane-host');
    if (!trace || !host || host.dataset.plotted !== host.dataset.drawn) return null;
    return [...trace.hovertext].sort().join('\\u0001');
  };
  const echoKey = () => {
    const box = document.querySelector('#bench-echo-out textarea');
    return box ? box.value : null;
  };
  const probes = {plot: plotKey, echo: echoKey};
  window.__roundtrip = {keyAt: null, arrivedAt: null, seenAt: null, armed: false};
  // when an answer of the page's route (ui/route.py) has arrived: its fetch resolves
  const fetch0 = window.fetch;
  window.fetch = function (input, init) {
    const url = String(input && input.url || input);
    return fetch0.apply(this, arguments).then((response) => {
      const r = window.__roundtrip;
      if (url.includes('/explorer/live') && r.keyAt !== null && r.arrivedAt === null) r.arrivedAt = performance.now();
      // the figures answered, kept (untimed: only while `__figures` is a list) for the bare redraw
      if (url.includes('/explorer/live') && window.__figures) {
        response.clone().json().then((answer) => {
          const figure = answer && answer.values && answer.values['embed-plot'];
          if (figure) window.__figures.push(figure);
        });
      }
      return response;
    });
  };
  // when the echo's answer starts to arrive: gradio reads its queue's event stream with fetch's reader
  const read = ReadableStreamDefaultReader.prototype.read;
  const decoder = new TextDecoder();
  ReadableStreamDefaultReader.prototype.read = function () {
    return read.call(this).then((chunk) => {
      const r = window.__roundtrip;
      if (r.keyAt !== null && r.arrivedAt === null && chunk.value) {
        const text = typeof chunk.value === 'string' ? chunk.value : decoder.decode(chunk.value);
        if (text.includes('process_completed')) r.arrivedAt = performance.now();
      }
      return chunk;
    });
  };
  document.addEventListener('keydown', () => {
    const r = window.__roundtrip;
    if (r.armed) { r.keyAt = performance.now(); r.armed = false; }
  }, true);
  // `frames`: look once a frame (a typist's pace: seconds long, and the look itself must not
  // load the page it measures), else as often as the page lets a timer run
  window.__watch = (kind, expected, frames) => {
    const r = window.__roundtrip;
    Object.assign(r, {keyAt: null, arrivedAt: null, seenAt: null, armed: true});
    const poll = () => {
      if (probes[kind]() === expected) { r.seenAt = performance.now(); return; }
      if (frames) requestAnimationFrame(poll); else setTimeout(poll, 0);
    };
    poll();
  };
  // the floor of the page's work after an answer: the answered figures (`__figures`, as JSON)
  // parsed and redrawn by Plotly.react alone, alternately, in a plain div of the plot's size (no
  // labels, table or page around them), each timed to the next task, as the probe sees a plot
  window.__bareRedraw = async (count) => {
    const host = document.querySelector('#embed-plot .js-plotly-plot');
    const div = document.createElement('div');
    div.style.cssText = `width: ${host.clientWidth}px; height: ${host.clientHeight}px`;
    document.body.prepend(div);
    const figures = window.__figures.slice(-2);
    const draw = (json) => {
      const figure = JSON.parse(json);
      const { meta, ...layout } = figure.layout;
      return Plotly.react(div, window.embeddingExplorer.expand(figure.data, figure.layout), layout,
        { responsive: false, displaylogo: false });
    };
    await draw(figures[1]);
    const seconds = [];
    for (let i = 0; i < count; i++) {
      await window.__idle();
      const start = performance.now();
      await draw(figures[i % 2]);
      await new Promise((done) => setTimeout(done, 0));
      seconds.push((performance.now() - start) / 1e3);
    }
    Plotly.purge(div);
    div.remove();
    return seconds;
  };
  // resolves once the page has nothing left to do (the last update's drawing included: a plot
  // drawn by moving its points is drawn whole once moves pause, assets/explorer.js `plot`)
  const moved = () => document.querySelector('#embed-plot [data-moved]');
  window.__idle = async () => {
    for (let waited = 0; moved() && waited < 2000; waited += 20) await new Promise(done => setTimeout(done, 20));
    await new Promise(done => requestIdleCallback(() => done(), {timeout: 2000}));
  };
  window.__caretToEnd = (selector) => {
    const box = document.querySelector(selector);
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
  };
}"""


ECHOED = {"seconds": 0.0, "calls": 0}  # the echo's own time in its function, and its calls


def echo(text: str) -> str:
    began = time.perf_counter()
    try:
        return text
    finally:
        ECHOED["seconds"] += time.perf_counter() - began
        ECHOED["calls"] += 1


def echo_demo():
    """The app's page with an echo event added: same Blocks, same queue, same launch options
    (`launch_options` of this Blocks, so its route is the one its page talks to)."""
    import gradio as gr

    import app  # the app's thread settings, as serving it sets them

    demo = app.build_demo()
    with demo, gr.Row():
        echo_in = gr.Textbox(label="echo (benchmark)", elem_id="bench-echo-in", max_length=20_000)
        echo_out = gr.Textbox(label="echoed", elem_id="bench-echo-out", max_length=20_000)
        # as the page's live event was wired when it went through gradio's queue: latest input
        # wins, no progress overlay
        echo_in.input(echo, echo_in, echo_out, api_name=False, trigger_mode="always_last", show_progress="hidden")
    return demo


class Callbacks:
    """The server's own time in each measured event's function: the echo's as it timed itself,
    the plot's as the page's route times each call it computes (`ui.route.Live`'s `seconds`
    and `calls`)."""

    def __init__(self, demo):
        self.live = demo.explorer.live
        self.seen = {kind: (0.0, 0) for kind in ("plot", "echo")}

    def _read(self, kind: str) -> tuple[float, int]:
        if kind == "plot":
            return self.live.seconds, self.live.calls
        return ECHOED["seconds"], ECHOED["calls"]

    def mark(self, kind: str) -> None:
        self.seen[kind] = self._read(kind)

    def since(self, kind: str) -> tuple[float, int]:
        """Seconds in the function and calls of it since ``mark(kind)``."""
        (runtime, runs), (before, calls) = self._read(kind), self.seen[kind]
        return runtime - before, runs - calls


def plot_key(a: str, b: str) -> str:
    """The main plot's token list, as the in-page probe reads it, for sentences a and b."""
    from core.tables.presets import wordpiece

    tokens = wordpiece().encode(a, b, maxlen=512).tokens
    return "\u0001".join(sorted(html.escape(t, quote=False) for t in tokens))


def pair(n_tokens: int) -> tuple[str, str]:
    """The page's default pair for 16, else bench/update_latency.py's pair of n tokens."""
    from bench.update_latency import pair_of
    from ui.assets import EXAMPLES

    return tuple(EXAMPLES[0]) if n_tokens == 16 else pair_of(n_tokens)


def keys_for(a: str, b: str) -> list[str]:
    """Characters that change the token list when typed at the end of sentence a."""
    base = plot_key(a, b)
    keys = [k for k in KEYS if plot_key(a + k, b) != base]
    if not keys:
        raise SystemExit(f"no character of {KEYS!r} changes the tokens of {a[-30:]!r}")
    return keys


def timed_key(page, kind: str, selector: str, key: str, expected: str, *, press: bool = False) -> dict:
    """Seconds from the keydown of ``key`` in ``selector`` to the page showing ``expected``
    ("total"), and to the first bytes of the answer ("arrived", None if not seen), starting
    once the page is idle, so that no earlier update's work is counted."""
    page.evaluate("(s) => window.__caretToEnd(s)", selector)
    page.evaluate("() => window.__idle()")
    page.evaluate("([kind, expected]) => window.__watch(kind, expected)", [kind, expected])
    if press:
        page.keyboard.press(key)
    else:
        page.keyboard.type(key)
    page.wait_for_function("() => window.__roundtrip.seenAt !== null", timeout=TIMEOUT_MS)
    r = page.evaluate("() => window.__roundtrip")
    if r["keyAt"] is None:
        raise RuntimeError(f"no keydown reached the page for {kind}")
    arrived = None if r["arrivedAt"] is None else (r["arrivedAt"] - r["keyAt"]) / 1e3
    return {"total": (r["seenAt"] - r["keyAt"]) / 1e3, "arrived": arrived}


def show(page, kind: str, expected: str) -> None:
    """Wait, untimed, until the page shows ``expected``."""
    page.evaluate("([kind, expected]) => window.__watch(kind, expected)", [kind, expected])
    page.wait_for_function("() => window.__roundtrip.seenAt !== null", timeout=TIMEOUT_MS)


def set_pair(page, a: str, b: str) -> None:
    """Put a and b in the sentence boxes (fill: a change event) and wait for the plot to show them."""
    boxes = page.locator("#sentence-a textarea"), page.locator("#sentence-b textarea")
    current_a = boxes[0].input_value()
    if boxes[1].input_value() != b:
        boxes[1].fill(b)
        show(page, "plot", plot_key(current_a, b))
    if current_a != a:
        boxes[0].fill(a)
        show(page, "plot", plot_key(a, b))


def set_echo(page, text: str) -> None:
    """Put text in the echo box: fill all but its last character, then type that one (an input event)."""
    page.locator("#bench-echo-in textarea").fill(text[:-1])
    timed_key(page, "echo", "#bench-echo-in textarea", text[-1], text)


def spread(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    p90 = ordered[round(0.9 * (len(ordered) - 1))]
    return {"median": statistics.median(ordered), "p90": p90, "n": len(ordered)}


def measure_pair(page, callbacks: Callbacks, n_tokens: int, characters: int, warm_up: int) -> dict:
    """Echo and plot, alternately (echo, plot, echo, plot, …), so a busy neighbour slows both alike.

    - echo: a character is typed into the echo box (real key events: ``keyboard.type``) until
      the echo's output shows the new text;
    - plot: a character is typed at the end of ``#sentence-a`` until the main plot
      (``#embed-plot .js-plotly-plot``) holds the new token list in its data (``gd.data``, the
      output trace's hover texts), i.e. plotly has drawn the new figure. The page sends the
      keystroke to its route (ui/route.py), not through gradio's queue.

    Each character typed into sentence A is taken back with Backspace, untimed, so every plot
    measurement starts from the same text; the echo's text grows by one character each time
    (gradio fires ``.input`` on key presses of characters, not on Backspace). Both times are
    taken inside the page with ``performance.now()``: from the keydown event to the first poll
    (every few ms) that sees the new state, so Playwright's own messaging is not in them.
    Reported: median and p90 of each, and plot / echo.
    """
    a, b = pair(n_tokens)
    sentence, echo_box = "#sentence-a textarea", "#bench-echo-in textarea"
    set_pair(page, a, b)
    set_echo(page, a)  # the echo carries sentence A's text
    keys = keys_for(a, b)
    found: dict[str, dict[str, list]] = {kind: {"total": [], "arrived": [], "callback": [], "calls": []}
                                         for kind in ("echo", "plot")}
    echoed = a
    for i in range(warm_up + characters):
        key = keys[i % len(keys)]
        # the echo: gradio fires .input on key presses of characters only (not Backspace), so
        # its text grows by one character per measurement instead of being taken back
        echoed += key
        # the plot: the character, then Backspace (a change event), untimed, back to the same text
        for kind, selector, expected in (("echo", echo_box, echoed), ("plot", sentence, plot_key(a + key, b))):
            callbacks.mark(kind)
            seconds = timed_key(page, kind, selector, key, expected)
            runtime, runs = callbacks.since(kind)
            if i >= warm_up:
                for name, value in (*seconds.items(), ("callback", runtime / max(runs, 1)), ("calls", runs)):
                    found[kind][name].append(value)
        timed_key(page, "plot", sentence, "Backspace", plot_key(a, b), press=True)
    # the floor of the page's own work: the last two figures it was answered, redrawn bare
    page.evaluate("() => { window.__figures = []; }")
    timed_key(page, "plot", sentence, keys[0], plot_key(a + keys[0], b))
    timed_key(page, "plot", sentence, "Backspace", plot_key(a, b), press=True)
    page.wait_for_function("() => window.__figures.length >= 2", timeout=TIMEOUT_MS)
    redraw = page.evaluate("(count) => window.__bareRedraw(count)", characters)
    page.evaluate("() => { window.__figures = null; }")
    result = {"tokens": n_tokens, "typed_tokens": len(plot_key(a + keys[0], b).split("\u0001")),
              "redraw": statistics.median(redraw)}
    for kind, lists in found.items():
        arrived = [t for t in lists["arrived"] if t is not None]
        result[kind] = {
            **spread(lists["total"]),
            "arrived": statistics.median(arrived) if arrived else None,
            "callback": statistics.median(lists["callback"]),
            "calls": sum(lists["calls"]),
        }
    return result


def in_page(demo, helpers: str, each):
    """Launch ``demo``, open it in one page of one Chromium with ``helpers`` installed, wait
    for the first plot, and return ``each(page, callbacks)``."""
    from playwright.sync_api import sync_playwright

    from bench.appserver import free_port
    from ui.page import launch_options

    if CHROMIUM is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                **launch_options(demo))
    try:
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            try:
                page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                page.goto(demo.local_url)
                page.evaluate(helpers)
                show(page, "plot", plot_key(*pair(16)))  # the first plot, drawn on load
                return each(page, Callbacks(demo))
            finally:
                browser.close()
    finally:
        with contextlib.redirect_stdout(io.StringIO()):  # "Closing server running on port …"
            demo.close()


PACE_TEXT = " and then the quick brown fox jumped over the lazy dog twice"  # 60 keys, at the end of sentence A
PACE_DELAY_MS = 125  # 8 keys a second: a quick typist
PACE_ROUNDS = 3  # the typist types the text this many times on each page, the pages taking turns


def bare_echo_demo():
    """The floor for typing: a bare gradio page whose textbox echoes each input through the queue
    into a second box, and nothing else (gradio's default theme and launch options)."""
    import gradio as gr

    with gr.Blocks(title="echo") as demo:
        echo_in = gr.Textbox(label="echo", elem_id="bench-echo-in", max_length=20_000)
        echo_out = gr.Textbox(label="echoed", elem_id="bench-echo-out", max_length=20_000)
        echo_in.input(echo, echo_in, echo_out, api_name=False, trigger_mode="always_last", show_progress="hidden")
    demo.queue()
    return demo


def typed(page, kind: str, selector: str, text: str, expected: str) -> float:
    """Seconds from the first keydown of `text`, typed at PACE_DELAY_MS a key with real key events
    (each key is dispatched when the page's main thread takes it), until the page shows `expected`."""
    page.evaluate("(s) => window.__caretToEnd(s)", selector)
    page.evaluate("() => window.__idle()")
    page.evaluate("([kind, expected]) => window.__watch(kind, expected, true)", [kind, expected])
    page.keyboard.type(text, delay=PACE_DELAY_MS)
    page.wait_for_function("() => window.__roundtrip.seenAt !== null", timeout=TIMEOUT_MS)
    r = page.evaluate("() => window.__roundtrip")
    return (r["seenAt"] - r["keyAt"]) / 1e3


def typing_pace(page, echo_page, rounds: int = PACE_ROUNDS) -> dict:
    """A typist at 8 keys/s, PACE_TEXT into sentence A of the app's default page and into a bare
    echo page, the two taking turns: the median seconds from the first keydown until each shows the
    whole text (the echo's box; the plot's tokens), and whether the app's final plot is the final
    text's.

    Real key events (``keyboard.type(delay=125)``: each key is dispatched when the page's main
    thread takes it, so a page busy redrawing holds the next key back), into the app's default
    page and into a bare gradio echo page (a textbox and its echo, nothing else: the floor), the
    two pages taking turns in the same browser.
    """
    a, b = pair(16)
    found: dict = {"echo": [], "plot": [], "final": True}
    for number in range(rounds):
        start = str(number)  # each round's text its own, so the last round's echo is not taken for it
        echo_page.locator("#bench-echo-in textarea").fill(start)
        found["echo"].append(typed(echo_page, "echo", "#bench-echo-in textarea", PACE_TEXT, start + PACE_TEXT))
        set_pair(page, a, b)
        found["plot"].append(typed(page, "plot", "#sentence-a textarea", PACE_TEXT, plot_key(a + PACE_TEXT, b)))
        found["final"] &= page.locator("#sentence-a textarea").input_value() == a + PACE_TEXT
    return {"echo": statistics.median(found["echo"]), "plot": statistics.median(found["plot"]),
            "rounds": rounds, "final": found["final"], "ratios": [p / e for p, e in zip(found["plot"], found["echo"],
                                                                                     strict=True)]}


# the table of the plane's points (assets/plottable.js) holds the typed text's last word
TABLE_HAS = "(word) => [...document.querySelectorAll('#plot-table tbody th')].some(c => c.textContent.trim() === word)"


def aided_pace(page, echo_page, rounds: int = PACE_ROUNDS, query: str = "sound=1", table: bool = True) -> dict:
    """The typist of `typing_pace` on three pages taking turns: the bare echo page, the app's page,
    and the app's page opened with `query`: by default what a blind student turns on, the plane heard
    (`?sound=1`) and the points' table shown (its switch pressed, `table`); or BERT's tables through
    the encoder (`source=bert&layer=6`). The app's pages are timed to the plot drawn with the final
    text, as `typing_pace`'s; a shown table is timed too, to when its rows name the final text's
    last word (it is written once drawing pauses, so it follows the plot)."""
    aided = page.context.new_page()
    aided.goto(page.url.split("?")[0] + "?" + query)
    aided.evaluate(HELPERS)
    show(aided, "plot", plot_key(*pair(16)))
    if table:
        aided.locator(".plane-table-switch").click()
        aided.locator("#plot-table").wait_for(state="visible", timeout=TIMEOUT_MS)
    a, b = pair(16)
    last = PACE_TEXT.split()[-1]
    found: dict = {"echo": [], "plot": [], "aided": [], "table": [], "final": True}
    try:
        for number in range(rounds):
            start = str(number)
            echo_page.locator("#bench-echo-in textarea").fill(start)
            found["echo"].append(typed(echo_page, "echo", "#bench-echo-in textarea", PACE_TEXT, start + PACE_TEXT))
            set_pair(page, a, b)
            found["plot"].append(typed(page, "plot", "#sentence-a textarea", PACE_TEXT, plot_key(a + PACE_TEXT, b)))
            set_pair(aided, a, b)
            if table:
                aided.wait_for_function(f"(w) => !({TABLE_HAS})(w)", arg=last, timeout=TIMEOUT_MS)
            found["aided"].append(typed(aided, "plot", "#sentence-a textarea", PACE_TEXT, plot_key(a + PACE_TEXT, b)))
            if table:
                aided.wait_for_function(TABLE_HAS, arg=last, timeout=TIMEOUT_MS)
                found["table"].append(aided.evaluate("() => (performance.now() - window.__roundtrip.keyAt) / 1e3"))
            found["final"] &= aided.locator("#sentence-a textarea").input_value() == a + PACE_TEXT
    finally:
        aided.close()
    medians = {kind: statistics.median(values) for kind, values in found.items() if isinstance(values, list) and values}
    return {**medians, "query": query, "rounds": rounds, "final": found["final"],
            "ratios": [p / e for p, e in zip(found["aided"], found["echo"], strict=True)]}


def measure(characters: int = 30, warm_up: int = 3, sizes: tuple[int, ...] = SIZES, aids: bool = False,
            layer: bool = False) -> list[dict]:
    """Median and p90 seconds, echo and plot, for each pair size, and a typist's pace, in one page
    of one browser; with `aids`, the typist's pace with the plane heard and its table shown too;
    with `layer`, on BERT's tables at encoder layer 6 too."""
    def each(page, callbacks) -> list[dict]:
        pairs = [measure_pair(page, callbacks, n, characters, warm_up) for n in sizes]
        extra = [({"aided": beside_bare_echo(page, aided_pace)} if kind == "aids" else
                  {"aided": beside_bare_echo(page, lambda p, e: aided_pace(p, e, query="source=bert&layer=6",
                                                                        table=False))})
                 for kind, asked in (("aids", aids), ("layer", layer)) if asked]
        return [*pairs, {"pace": beside_bare_echo(page, typing_pace)}, *extra]

    return in_page(echo_demo(), HELPERS, each)


def beside_bare_echo(page, each):
    """`each(page, echo_page)`, with a bare echo page (`bare_echo_demo`) launched in this process and
    opened in the same browser as `page`, in a context of its own, with the same helpers."""
    from bench.appserver import free_port

    demo = bare_echo_demo()
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    context = page.context.browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        echo_page = context.new_page()
        echo_page.goto(demo.local_url)
        echo_page.locator("#bench-echo-in textarea").wait_for()
        echo_page.evaluate(HELPERS)
        return each(page, echo_page)
    finally:
        context.close()
        with contextlib.redirect_stdout(io.StringIO()):
            demo.close()


def report(results: list[dict]) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    def at(seconds: float | None) -> str:
        return "—" if seconds is None else f"{seconds * 1e3:.0f}"

    rows, parts, paces, aided = [], [], [], []
    for r in results:
        if "aided" in r:
            pace = r["aided"]
            aided.append((f"?{pace['query']}: {len(PACE_TEXT)} keys at {1000 // PACE_DELAY_MS} keys/s, median of "
                          f"{pace['rounds']}", f"{pace['echo']:.2f}", f"{pace['plot']:.2f}", f"{pace['aided']:.2f}",
                          f"{pace['aided'] / pace['echo']:.2f}×", " ".join(f"{r:.2f}×" for r in pace["ratios"]),
                          f"{pace['table']:.2f}" if "table" in pace else "—", "yes" if pace["final"] else "NO"))
            continue
        if "pace" in r:
            pace = r["pace"]
            paces.append((f"{len(PACE_TEXT)} keys at {1000 // PACE_DELAY_MS} keys/s, median of {pace['rounds']}",
                          f"{pace['echo']:.2f}", f"{pace['plot']:.2f}", f"{pace['plot'] / pace['echo']:.2f}×",
                          " ".join(f"{r:.2f}×" for r in pace["ratios"]), "yes" if pace["final"] else "NO"))
            continue
        echo_, plot = r["echo"], r["plot"]
        name = f"{r['tokens']} ({r['typed_tokens']} typed)"
        rows.append((name, str(plot["n"]), at(echo_["median"]), at(echo_["p90"]), at(plot["median"]),
                     at(plot["p90"]), f"{plot['median'] / echo_['median']:.2f}×", f"{plot['p90'] / echo_['p90']:.2f}×"))
        for kind, m in (("echo", echo_), ("plot", plot)):
            after = None if m["arrived"] is None else m["median"] - m["arrived"]
            parts.append((f"{name}, {kind}", f"{m['callback'] * 1e3:.1f}", at(m["arrived"]), at(after),
                          at(r["redraw"]) if kind == "plot" else "—", f"{m['calls']} for {m['n']} keys"))
    return [
        (
            "browser round trip in Chromium, keydown → the new state in the page, ms; the page's default tables "
            "(random, d 32)",
            ("tokens", "keys", "echo median", "echo p90", "plot median", "plot p90", "plot / echo", "p90 / p90"),
            rows,
        ),
        (
            "where the round trip goes, medians in ms: the server's time in the event's function; keydown → the "
            "answer's first bytes in the page; and from there → the new state (the page's own work); its floor, the "
            "same figures parsed and redrawn by Plotly.react alone in a plain div",
            ("event", "callback", "key → answer", "answer → shown", "bare redraw", "callback runs"),
            parts,
        ),
        (
            "a typist's pace: first keydown → the whole text shown, seconds: a bare gradio echo page's box, the app's "
            "plot (its tokens), taking turns",
            ("typing", "echo page", "plot", "plot / echo", "each round", "final plot = final text"),
            paces,
        ),
        *([(
            "the same typist on a page opened otherwise (?sound=1 with its points' table shown: the plane heard; "
            "?source=bert&layer=6: through the encoder), seconds: the bare echo page, the app's plain page, that "
            "page's plot, and when its table names the final word",
            ("typing", "echo page", "plain plot", "its plot", "its / echo", "each round", "its table", "final text"),
            aided,
        )] if aided else []),
    ]


def run(doc: str, measure, report, characters: int) -> None:
    """A browser measure's command line: --characters and --warm-up, then its tables printed."""
    from bench.report import table

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--characters", type=int, default=characters, help="timed characters per size and kind")
    parser.add_argument("--warm-up", type=int, default=3, help="characters typed first, untimed")
    args = parser.parse_args()
    for title, header, rows in report(measure(args.characters, args.warm_up)):
        table(title, header, rows)


def main() -> None:
    from bench.report import table

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--characters", type=int, default=30, help="timed characters per size and kind")
    parser.add_argument("--warm-up", type=int, default=3, help="characters typed first, untimed")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="pair sizes in tokens, comma-separated ('' for the typist's pace alone)")
    parser.add_argument("--aids", action="store_true",
                        help="the typist's pace with the plane heard and its points' table shown, too")
    parser.add_argument("--layer", action="store_true", help="the typist's pace on BERT's tables at layer 6, too")
    args = parser.parse_args()
    sizes = tuple(int(n) for n in args.sizes.split(",") if n)
    for title, header, rows in report(measure(args.characters, args.warm_up, sizes, args.aids, args.layer)):
        table(title, header, rows)


if __name__ == "__main__":
    main()
