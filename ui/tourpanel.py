"""The Tour panel, the page opened from a link, and the address bar: each is a whole `View`.

A tour step and a link are the same thing to the page (a step is a view; ``?step=N`` is that
view): the route shows both whole (`ui.route.ACTIONS`' `move` and the step picker's `go`, a page's
opening), the tables start untrained, every widget is written, and anything the link asked for but
could not have is named in the notice, as plain text.

The address bar is the view too. Every change writes the view's query string into
`#address` (`ui.render.address`), whose script puts it in the address bar: a new history
entry for a step, a table or a toggle, the same entry rewritten while typing. So F5 reopens
the view, a copied address is a link, and Back and Forward send the address they land on
back to the route (`back`), which shows it like a link, keeping the tab's trained tables.
"""

from __future__ import annotations

import html
import json

import gradio as gr

from core.drawing.captions import tour_text
from core.serving.poll import PROMPTS
from core.view import tour
from ui import ondemand
from ui.assets import written_by_page

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
    with ondemand.tab(page, "panel", "tour"):
        # the buttons above the text: a step's text is longer or shorter than the last one's, and
        # a presenter's pointer must find Next where it was
        ondemand.unnamed(gr.HTML(TOUR_BUTTONS, elem_id="tour-buttons", container=False, padding=False,
                                 js_on_load=TOUR_BUTTONS_JS))
        # the picker and the slide buttons follow the step its text names (assets/tour.js)
        page.tour_text = written_by_page("tour-text", value=tour_text(None), elem_classes=["prose"],
                                         then="window.embeddingTour.text(value);")
        # a step as a slide, under its text: hidden off the tour (assets/slide.js)
        ondemand.unnamed(gr.HTML(TOUR_SLIDE, elem_id="tour-slide", container=False, padding=False,
                                 js_on_load=TOUR_SLIDE_JS))
        # a class (assets/classroom.js writes the box); a lesson's values come as a keystroke's do
        ondemand.unnamed(gr.HTML("", elem_id="class-box", html_template=CLASS_HOST, js_on_load=CLASS_JS))


CLASS_JS = "window.embeddingExplorerClass.attach(element.querySelector('.class-host'));"
# the class box's host, with the ready prompts a lecturer may ask the class (assets/classroom.js)
CLASS_HOST = f'<div class="class-host" data-prompts="{html.escape(json.dumps(PROMPTS))}"></div>'


def layout_address(page) -> None:
    """`#address`, outside every tab (inside the Tour tab, gradio relabelled the next tab)."""
    page.address = written_by_page("address", ADDRESS_JS, then="follow();", elem_classes=["offscreen"])


# ← Previous, the step picker, Next →: the picker lists every step by its number and title, and shows
# the step on screen (a neutral first entry off the tour); typing a step's number picks it
TOUR_BUTTONS = (
    '<div class="tour-buttons"><button id="tour-previous" type="button" class="tour-button">← Previous</button>'
    '<label for="tour-step" class="offscreen">Go to step</label>'
    '<select id="tour-step" class="tour-picker">'
    '<option value="" disabled selected>Go to step…</option>'
    + "".join(f'<option value="{number}">{number}. {html.escape(step.title)}</option>'
              for number, step in enumerate(tour.STEPS, 1))
    + '</select><button id="tour-next" type="button" class="tour-button primary">Next →</button></div>')
TOUR_SLIDE = ('<p id="tour-slide-buttons" class="tour-slide" hidden>Download this step as a slide: '
              '<button id="slide-png" type="button" class="slide-button">PNG</button> · '
              '<button id="slide-svg" type="button" class="slide-button">SVG</button></p>')
# what the buttons, the picker and the slide buttons do is assets/tour.js's
TOUR_BUTTONS_JS = "window.embeddingTour.attach(element);"
TOUR_SLIDE_JS = "window.embeddingTour.attachSlide(element);"

