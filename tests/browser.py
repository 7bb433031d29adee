"""What the browser tests read off the page: the main plot's data, never its pixels.

Plotly keeps what it drew in `gd._fullData` (typed arrays decoded), so coordinates are read
there; names, hover texts and labels in `gd.data`.
"""

from __future__ import annotations

PLOT = "document.querySelector('#embed-plot .js-plotly-plot')"
TRACES = f"() => {PLOT}.data.map(t => t.name)"
# gradio marks an output whose event failed with an error badge, and shows an error toast
ERROR_BADGES = "() => document.querySelectorAll('.error, .toast-body.error').length"
# every drawn point of the main plane but the background, rounded to 3 decimals: what a view *is*
COORDINATES = f"""() => {PLOT}._fullData
    .filter(t => t.name !== 'vocabulary' && t.x)
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
    // how many events went through gradio's queue, and how many calls took the direct path
    if (joined) window.__joins = (window.__joins || 0) + 1;
    if (url.includes('/explorer/live')) window.__direct = (window.__direct || 0) + 1;
    return fetch0.apply(this, arguments).then((response) => {
        if (!joined || !response.ok) end();
        return response;
    }, (error) => { end(); throw error; });
};
"""


def rows(table_id: str) -> str:
    """JS: how many data rows a gr.Dataframe shows (its rows carry aria-rowindex; 1 is the header)."""
    return (f"new Set([...document.querySelectorAll('#{table_id} [role=row][aria-rowindex]')]"
            ".map(r => r.getAttribute('aria-rowindex'))).size - 1")


def open_at(browser, app_url: str, query: str = "", viewport=(1400, 1000), contexts: list | None = None,
            wait: bool = True):
    """A fresh browser context (its own session) at the app with this query; waits for the plot
    (or, with `wait=False`, only starts loading: call `ready` before reading it)."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, accept_downloads=True)
    if contexts is not None:
        contexts.append(context)
    context.add_init_script(COUNT_REQUESTS)
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


def settle(page, quiet_ms: int = 500) -> None:
    """Wait until every event the page sent has completed and nothing new began for `quiet_ms`.

    The quiet time counts from this call, so an event that a click is about to send (gradio
    sends it a frame or two later) is waited for too; a completed answer may start another.
    """
    page.wait_for_function(
        """([quiet, since]) => {
            const now = performance.now();
            if (window.__inflight > 0 || window.__seen !== window.__changes) {
                window.__seen = window.__changes;
                window.__idleSince = now;
            }
            const idle = Math.max(window.__idleSince || 0, since);
            return window.__inflight <= 0 && now - idle > quiet;
        }""",
        arg=[quiet_ms, page.evaluate("() => performance.now()")], timeout=90_000, polling=50,
    )


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
