"""What the browser tests read off the page: the main plot's data, never its pixels.

Plotly keeps what it drew in `gd._fullData` (typed arrays decoded), so coordinates are read
there; names, hover texts and labels in `gd.data`.
"""

from __future__ import annotations

PLOT = "document.querySelector('#embed-plot .js-plotly-plot')"
TRACES = f"() => {PLOT}.data.map(t => t.name)"
# gradio marks an output whose event failed with an error badge, and shows an error toast
ERROR_BADGES = "() => document.querySelectorAll('.error, .toast-body.error').length"
# every drawn point of the main plane but the background and a student's own marks (the rings on
# the words it sent in a class's round), rounded to 3 decimals: what a view *is*
COORDINATES = f"""() => {PLOT}._fullData
    .filter(t => t.name !== 'vocabulary' && t.name !== 'your words' && t.x)
    .map(t => [t.name, Array.from(t.x).map(v => v === null ? null : Math.round(v * 1000) / 1000),
               Array.from(t.y).map(v => v === null ? null : Math.round(v * 1000) / 1000)])"""


# counts what the page is waiting for from the server: each event gradio joins to its queue
# (POST .../queue/join) until its "process_completed" message arrives on the event stream, and
# every other request until it answers. The event stream itself stays open and is not counted.
COUNT_REQUESTS = """
window.__inflight = 0;
window.__changes = 0;
const begin = () => { window.__inflight += 1; window.__changes += 1; };
const end = () => { window.__inflight -= 1; window.__changes += 1; };
const fetch0 = window.fetch;
window.fetch = function (input, init) {
    const url = String(input && input.url || input);
    if (url.includes('heartbeat')) return fetch0.apply(this, arguments);
    if (url.includes('/queue/data')) {  // the event stream: an event ends at its process_completed
        return fetch0.apply(this, arguments).then((response) => {
            if (!response.body) return response;
            const [a, b] = response.body.tee();
            const reader = b.getReader(), decoder = new TextDecoder();
            let text = '';
            (function pump() {
                reader.read().then(({ done, value }) => {
                    if (done) return;
                    text += decoder.decode(value, { stream: true });
                    const messages = text.split('\\n\\n');
                    text = messages.pop();
                    for (const m of messages) if (m.includes('"process_completed"')) end();
                    pump();
                }, () => {});
            })();
            return new Response(a, response);
        });
    }
    begin();  // a join ends at its completion message; any other request when it answers
    const joined = url.includes('/queue/join');
    // how many events went through gradio's queue, and how many calls the page made on its route
    if (joined) window.__joins = (window.__joins || 0) + 1;
    if (url.includes('/explorer/live')) window.__routed = (window.__routed || 0) + 1;
    return fetch0.apply(this, arguments).then((response) => {
        if (!joined || !response.ok) end();
        return response;
    }, (error) => { end(); throw error; });
};
"""


# an image the page asks its own server for now (a name no route has): once it has failed, an
# image the page put in its document before it (markup rendered as HTML) has been asked for, and
# its onerror has run
IMAGES_SETTLED = """() => new Promise(done => { const probe = new Image();
    probe.onload = probe.onerror = () => done(true); probe.src = 'x?probe=' + Math.random(); })"""


def rows(table_id: str) -> str:
    """JS: how many data rows a gr.Dataframe shows (its rows carry aria-rowindex; 1 is the header)."""
    return (f"new Set([...document.querySelectorAll('#{table_id} [role=row][aria-rowindex]')]"
            ".map(r => r.getAttribute('aria-rowindex'))).size - 1")


def new_context(browser, viewport=(1400, 1000)):
    """A browser context whose pages count what they wait for (`COUNT_REQUESTS`) and take downloads."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, accept_downloads=True)
    context.add_init_script(COUNT_REQUESTS)
    return context


def open_at(browser, app_url: str, query: str = "", viewport=(1400, 1000), contexts: list | None = None,
            wait: bool = True, context=None):
    """A page at the app with this query, in a fresh browser context (a browser of its own) or as a
    new tab of `context`; waits for the plot (or, with `wait=False`, only starts loading: call
    `ready` before reading it)."""
    if context is None:
        context = new_context(browser, viewport)
        if contexts is not None:
            contexts.append(context)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(f"{app_url}?{query}" if query else app_url, wait_until="load" if wait else "commit")
    if wait:
        ready(page)
    return page


def ready(page) -> None:
    """Until the page has drawn its plot and its events have settled."""
    page.wait_for_function(f"() => {PLOT} && {PLOT}.data && {PLOT}.data.length > 0", timeout=90_000)
    settle(page)


# resolves once the page has gone idle twice with a frame drawn between, with nothing in flight,
# no request begun or ended, nothing in the document changed meanwhile and no plane waiting to be
# drawn whole (fails after `timeout` ms). An action's event is sent within a task or a frame of the
# action (gradio's dispatch), an answer's follow-up as the answer is read, and what gradio renders
# from a value (a table's rows) within frames of it, so each falls inside a look and the page is
# looked at again
SETTLED = """(timeout) => new Promise((done, fail) => {
    const idle = () => new Promise(next => requestIdleCallback(next, {timeout: 250}));
    const frame = () => new Promise(next => requestAnimationFrame(next));
    const until = performance.now() + timeout;
    let changed = false;
    const observer = new MutationObserver(() => { changed = true; });
    observer.observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
    (async () => {
        for (;;) {
            const seen = window.__changes;
            changed = false;
            await idle();
            await frame();
            await idle();
            // (a plane drawn by moving its points waits to be drawn whole: assets/explorer.js `plot`)
            if (window.__inflight <= 0 && window.__changes === seen && !changed
                && !document.querySelector('#embed-plot [data-moved]')) {
                observer.disconnect();
                return done(true);
            }
            if (performance.now() > until) {
                observer.disconnect();
                return fail(new Error(`not settled in ${timeout} ms: ${window.__inflight} requests in flight`));
            }
        }
    })();
})"""


def settle(page) -> None:
    """Wait until every event the page sent has completed and it has gone idle with nothing new
    begun (`SETTLED`): what a click or a key set in motion, an answer's follow-ups included."""
    page.evaluate(SETTLED, 90_000)


def train(page, steps: int, timeout: int = 120_000) -> None:
    """Train `steps` steps from the Train tab, as a person does, and wait for the summary."""
    page.get_by_role("tab", name="Train").click()
    page.locator("#train-steps input").fill(str(steps))
    page.locator("#train-button").click()
    page.wait_for_function("(steps) => document.querySelector('#train-summary').innerText.includes("
                           "`Trained ${steps} steps`)", arg=steps, timeout=timeout)


def open_accordion(page, accordion_id: str, title: str) -> None:
    """Open a closed accordion and wait until gradio has mounted what is inside it.

    Gradio mounts a closed accordion's components only when it opens, and for a frame or two
    after the box appears the component can still be replaced: text filled into it in that
    instant is lost (measured: 3 fills in 40). A person's first key comes far later; the test
    waits two animation frames after the box appears, as long as the mounting takes.
    """
    page.locator(f"#{accordion_id}").get_by_text(title).click()
    page.locator(f"#{accordion_id} textarea, #{accordion_id} input").first.wait_for()
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")


def point_on_screen(page, group: str, token: str) -> tuple[float, float]:
    """Where the point of `token` (its hover text's word) in `group` is drawn, in page pixels:
    the spot a person's mouse goes to."""
    return tuple(page.evaluate(
        """([group, token]) => {
            const gd = document.querySelector('#embed-plot .js-plotly-plot');
            const full = gd._fullData.find(t => t.name === group);
            const i = gd.data.find(t => t.name === group).hovertext.findIndex(h => h.split(' ')[0] === token);
            if (i < 0) throw new Error(`no ${token} in ${group}`);
            const area = gd.querySelector('.nsewdrag').getBoundingClientRect();
            const { xaxis, yaxis } = gd._fullLayout;
            return [area.left + xaxis.l2p(full.x[i]), area.top + yaxis.l2p(full.y[i])];
        }""", [group, token]))


def trace(page, name: str) -> dict | None:
    return page.evaluate(f"() => {PLOT}.data.find(t => t.name === {name!r}) || null")


def hovertext(page, name: str) -> list[str]:
    found = trace(page, name)
    return list(found.get("hovertext") or []) if found else []


def link_of(page) -> str:
    """The page's own link to what it shows (the share button's result)."""
    box = "#share-link textarea, #share-link input"
    page.evaluate(f"() => {{ const b = document.querySelector('{box}'); if (b) b.value = ''; }}")
    page.locator("#share-button").click()
    page.wait_for_function(f"() => document.querySelector('{box}').value.startsWith('http')", timeout=30_000)
    return page.locator(box).first.input_value()


# the main plot's written labels as the page drew them (assets/labels.js), read from the DOM:
# each label's text, its trace and point, its box on screen, and its subplot's box
def labels_of(plot: str = PLOT) -> str:
    """JS: the written labels of the plot `plot` (a JS expression for its div)."""
    return f"""() => {{
    const gd = {plot};
    return [...gd.querySelectorAll('svg.label-layer .labels text')].map(t => {{
        const r = t.getBoundingClientRect(), trace = gd._fullData.find(d => d.name === t.dataset.trace);
        const area = gd.querySelector(`.draglayer .${{trace.xaxis}}${{trace.yaxis}} .nsewdrag`).getBoundingClientRect();
        return {{text: t.textContent, trace: t.dataset.trace, point: Number(t.dataset.point),
                 box: [r.left, r.top, r.right, r.bottom], area: [area.left, area.top, area.right, area.bottom]}};
    }}).filter(l => l.box[2] > l.box[0]);
}}"""


def markers_of(plot: str = PLOT) -> str:
    """JS: every marker drawn on the plot `plot`, as its box on screen: the points, stars, search
    crosses, the selection's ring, arrow heads and where points were before training; not the
    faint vocabulary behind them nor the category halos."""
    return f"""() => [...{plot}.querySelectorAll('.scatterlayer .trace')].flatMap(g => {{
    const trace = g.__data__ && g.__data__[0] && g.__data__[0].trace;
    if (!trace || trace.name === 'vocabulary' || trace.legendgroup === 'category') return [];
    return [...g.querySelectorAll('.points path.point')].map(p => p.getBoundingClientRect())
        .filter(r => r.width > 0 && r.height > 0).map(r => [trace.name, [r.left, r.top, r.right, r.bottom]]);
}})"""


LABELS, MARKERS = labels_of(), markers_of()


def overlap(a, b) -> float:
    """The area two boxes (left, top, right, bottom) share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def label_faults(page, plot: str = PLOT) -> list[str]:
    """What is wrong with a plot's written labels as drawn: a label's box covering more than a
    tenth of a marker, two labels overlapping, a label cut by its plot's edge."""
    labels, markers = page.evaluate(labels_of(plot)), page.evaluate(markers_of(plot))
    faults = []
    for i, label in enumerate(labels):
        box, area = label["box"], label["area"]
        if box[0] < area[0] - 0.5 or box[1] < area[1] - 0.5 or box[2] > area[2] + 0.5 or box[3] > area[3] + 0.5:
            faults.append(f"{label['text']!r} is cut by the plot's edge")
        for name, marker in markers:
            size = (marker[2] - marker[0]) * (marker[3] - marker[1])
            if overlap(box, marker) > 0.1 * size:
                faults.append(f"{label['text']!r} covers a {name} marker")
        for other in labels[i + 1:]:
            if overlap(box, other["box"]) > 0.25:
                faults.append(f"{label['text']!r} overlaps {other['text']!r}")
    return faults


def wait_for_text(page, selector: str, text: str, timeout: int = 30_000) -> None:
    """Wait until `selector`'s element exists and its text includes `text`: an element a tab
    builds when it is first opened is not in the page at first, and a predicate reading it
    would throw rather than wait."""
    page.wait_for_function("([selector, text]) => { const found = document.querySelector(selector);"
                           " return Boolean(found) && found.innerText.includes(text); }",
                           arg=[selector, text], timeout=timeout)
