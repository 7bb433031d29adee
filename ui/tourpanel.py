"""The Tour panel, and the page opened from a link: both show a whole `View` at once.

A tour step and a link are the same thing to the page (a step is a view; ``?step=N`` is that
view), so both go through `show`: the tables start untrained, every widget is written, and
anything the link asked for but could not have is named in the notice, as plain text.
"""

from __future__ import annotations

import gradio as gr

from core import share, tour
from core.options import PANELS, Refused
from core.state import View
from ui import events, render
from ui.plane import LIVE


def layout(page) -> None:
    with gr.Tab(PANELS["tour"], id="tour", elem_id="tab-tour") as page.panel_tabs["tour"]:
        page.tour_text = gr.Markdown(render.tour_text(None), elem_id="tour-text")
        with gr.Row():
            page.previous_button = gr.Button("← Previous", elem_id="tour-previous", size="sm")
            page.next_button = gr.Button("Next →", variant="primary", elem_id="tour-next", size="sm")


def wire(page) -> None:
    for button, move, name in ((page.next_button, 1, "next_step"), (page.previous_button, -1, "previous_step")):
        handler = events.named(lambda request, move=move: go(page, request, move), ())
        handler.__name__ = name
        button.click(handler, None, page.everything, api_name=name, **LIVE)


def go(page, request: gr.Request, move: int) -> dict:
    """The step after (or before) the one shown; from outside the tour, Next starts it."""

    def change(view: View) -> View:
        number = (view.step or 0) + move
        # presenter mode is how the room sees the page, not part of a lesson: it stays as it is
        return tour.step(min(max(number, 1), len(tour.STEPS))).view.with_(presenter=view.presenter)

    return events.update(page, request, change, tables=lambda session: session.restart(), whole=True)


def open_link(page, request: gr.Request) -> dict:
    """A page opening: the view its link describes (a fresh page's when it has none)."""
    params = getattr(request, "query_params", None) or {}
    link = share.from_query({key: params.getlist(key) for key in params} if hasattr(params, "getlist") else params)
    live = events.LIVES.get(getattr(request, "session_hash", None), fresh=True)
    try:
        return show(live=live, page=page, change=lambda _: link.view, notes=link.notes)
    except Refused as error:
        notes = (*link.notes, f"The link's view could not be opened ({error}); showing the default view.")
        return show(live=live, page=page, change=lambda _: View(), notes=notes)


def show(page, live, change, notes: tuple[str, ...] = ()) -> dict:
    """Apply a whole view, untrained; raises Refused (changing nothing) if it cannot be had."""
    _, out = live.apply(change, lambda step: render.outputs(page, step, whole=True, notes=notes),
                        tables=lambda session: session.restart(), whole=True)
    return out
