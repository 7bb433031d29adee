"""The Tour panel, the page opened from a link, and the address bar: each is a whole `View`.

A tour step and a link are the same thing to the page (a step is a view; ``?step=N`` is that
view), so both go through `show`: the tables start untrained, every widget is written, and
anything the link asked for but could not have is named in the notice, as plain text.

The address bar is the view too. Every change writes the view's query string into
`#address` (`ui.render.address`), whose script puts it in the address bar: a new history
entry for a step, a table or a toggle, the same entry rewritten while typing. So F5 reopens
the view, a copied address is a link, and Back and Forward send the address they land on
back here (`back`), which shows it like a link, keeping the tab's trained tables.
"""

from __future__ import annotations

import html
import json

import gradio as gr

from core.serving.poll import PROMPTS
from core.view import share, tour
from core.view.options import PANELS, Refused
from core.view.state import View
from ui import events, render
from ui.direct import written_by_page
from ui.plane import LIVE

# the view's address in the address bar; `props.value` is ui.render.address's JSON going out,
# and the address Back or Forward landed on coming back (then the next write only replaces).
# A discrete change is a new history entry; typing makes one entry, rewritten as it goes on
ADDRESS_JS = """
let first = true, restoring = false, typing = false;
const follow = () => {
  let sent;
  try { sent = JSON.parse(props.value); } catch (error) { return; }
  if (sent && typeof sent.key === 'string') window.embeddingExplorer.setKey(sent.key);
  if (!sent || typeof sent.query !== 'string') return;
  const kept = window.embeddingExplorerClass ? window.embeddingExplorerClass.param() : '';  // class=ID
  const query = [sent.query, kept].filter(Boolean).join('&');
  const url = location.pathname + (query ? '?' + query : '') + location.hash;
  if (url !== location.pathname + location.search + location.hash) {
    const replace = first || restoring || (!sent.push && typing);
    if (replace) history.replaceState(null, '', url); else history.pushState(null, '', url);
    typing = !sent.push;
  }
  first = restoring = false;
};
watch('value', follow);
window.addEventListener('popstate', () => {
  restoring = true;
  typing = false;
  window.embeddingExplorer.set({ back: location.search.replace(/^[?]/, '') });  // over the page's route
});
"""


def layout(page) -> None:
    with gr.Tab(PANELS["tour"], id="tour", elem_id="tab-tour") as page.panel_tabs["tour"]:
        # the buttons above the text: a step's text is longer or shorter than the last one's, and
        # a presenter's pointer must find Next where it was
        # (the page's own buttons, over the direct path; the API's next_step and previous_step are hidden ones)
        page.tour_buttons = gr.HTML(TOUR_BUTTONS, elem_id="tour-buttons", container=False, padding=False,
                                    js_on_load=TOUR_BUTTONS_JS)
        page.previous_button = gr.Button("← Previous", elem_id="tour-previous-api", visible=False)
        page.next_button = gr.Button("Next →", elem_id="tour-next-api", visible=False)
        page.tour_text = gr.HTML(render.tour_text(None), elem_id="tour-text", elem_classes=["prose"])
        # a class (assets/classroom.js writes the box); a lesson's values come as a keystroke's do
        page.class_box = gr.HTML("", elem_id="class-box", html_template=CLASS_HOST, js_on_load=CLASS_JS)


CLASS_JS = "window.embeddingExplorerClass.attach(element.querySelector('.class-host'));"
# the class box's host, with the ready prompts a lecturer may ask the class (assets/classroom.js)
CLASS_HOST = f'<div class="class-host" data-prompts="{html.escape(json.dumps(PROMPTS))}"></div>'


def layout_address(page) -> None:
    """`#address`, outside every tab (inside the Tour tab, gradio relabelled the next tab)."""
    page.address = gr.HTML("", elem_id="address", elem_classes=["offscreen"], container=False, padding=False,
                           js_on_load=written_by_page("address", ADDRESS_JS, then="follow();"))


TOUR_BUTTONS = ('<div class="tour-buttons"><button id="tour-previous" type="button" class="tour-button">← Previous'
                '</button><button id="tour-next" type="button" class="tour-button primary">Next →</button></div>')
# a press moves the tour over the direct path (ui/direct.py `move`). On a phone the step's
# buttons and text sit above its plot (assets/style.css): a step starts with them at the top of
# the screen, so its text and its plot are seen together
TOUR_BUTTONS_JS = """
element.addEventListener('click', (event) => {
  const button = event.target.closest && event.target.closest('#tour-previous, #tour-next');
  if (!button) return;
  window.embeddingExplorer.move(button.id === 'tour-next' ? 1 : -1);
  if (matchMedia('(max-width: 600px)').matches) button.parentElement.scrollIntoView({block: 'start'});
});
"""


def wire(page) -> None:
    for button, move, name in ((page.next_button, 1, "next_step"), (page.previous_button, -1, "previous_step")):
        handler = events.named(lambda request, move=move: go(page, request, move), ())
        handler.__name__ = name
        button.click(handler, None, page.everything, api_name=name, **LIVE)
    # a page opens over its route: its first call carries its address's query and its screen
    page.direct.opening(tab_for, lambda tab, query, on_phone: opened_at(page, tab, query, on_phone))


def go(page, request: gr.Request, move: int) -> dict:
    """The step after (or before) the one shown, for the API (the page's buttons go direct)."""
    return events.update(page, request, lambda view: tour.moved(view, move), tables=lambda session: session.restart(),
                         whole=True)


def open_link(page, request: gr.Request, screen: object = None) -> dict:
    """A page opening, as a request names it (its session, its address's query, its client): the
    view its link describes (a fresh page's when it has none), on the page's screen (`SCREEN`'s
    JSON; anything else is a laptop's)."""
    params = getattr(request, "query_params", None) or {}
    link = share.from_query({key: params.getlist(key) for key in params} if hasattr(params, "getlist") else params)
    try:
        tab = events.tab_of(request, fresh=True)
    except Refused as error:  # too many new pages from this address: the page says so, and draws nothing
        return {page.notice: render.notice((str(error),))}
    return opened(page, tab, link, narrow(screen))


def opened(page, tab, link: share.Link, on_phone: bool) -> dict:
    """What a page opening on `link` writes: the link's view, or the default one with a note
    saying why not (the page's key goes with the address)."""
    on = View(narrow=on_phone)
    try:
        return show(tab=tab, page=page, change=lambda _: link.view.seen_as(on), notes=link.notes)
    except Refused as error:
        notes = (*link.notes, f"The link's view could not be opened ({error}); showing the default view.")
        return show(tab=tab, page=page, change=lambda _: on, notes=notes)


def opened_at(page, tab, query: str, on_phone: bool) -> dict:
    """A page opening over the page's route (`ui.direct.Direct.opening`): its address's query string."""
    try:
        link = share.from_address(query)
    except Refused as error:
        link = share.Link(View(), (str(error),))
    return opened(page, tab, link, on_phone)


def tab_for(session: str, host: str | None):
    """A page opening's tab, kept by its gradio session (an upload reaches it so), made anew (a reload)."""
    tab = events.TABS.get(session, fresh=True, address=host)
    events.CHANNELS.of(tab, session)
    return tab


# what a page says of its screen when it opens (assets/explorer.js `open`): whether it is a phone's,
# as assets/style.css decides it
SCREEN = "{narrow: matchMedia('(max-width: 600px)').matches}"


def narrow(screen: object) -> bool:
    """Whether `screen`, the JSON of `SCREEN`, says the page is narrow; anything else (a hostile value) says no."""
    if not isinstance(screen, str) or len(screen) > 64:  # what SCREEN sends is 16 characters
        return False
    try:
        return json.loads(screen).get("narrow") is True
    except (ValueError, AttributeError, RecursionError):
        return False


def show(page, tab, change, notes: tuple[str, ...] = ()) -> dict:
    """Apply a whole view, untrained; raises Refused (changing nothing) if it cannot be had."""
    events.built_first(tab, change)
    def compute(step):
        out = render.outputs(page, step, whole=True, notes=notes, key=events.CHANNELS.of(tab).key)
        events.track(page, events.CHANNELS.of(tab), out)
        # what the page holds as built is not written again (see `events.as_built`)
        return {component: value for component, value in out.items() if not events.as_built(component, value)}

    _, out = tab.apply(change, compute, tables=lambda session: session.restart(), whole=True)
    return out
