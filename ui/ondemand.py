"""A tab's components are drawn when the tab is first opened, not when the page opens.

Gradio's browser code loads a script and a stylesheet (and an "example" form) for each type of
component a page declares, a few requests a type, whether its tab is open or not; only a
component built invisible is not loaded. So every component in a tab other than the two the
page opens with (the Tour panel and the plane) is built invisible, and the tab's `select` makes
it visible: a visitor who never opens the Train tab never downloads its code. The same for a
closed accordion of those two tabs (the search; the neighbours): drawn when it opens.

A tab's `select` runs in the browser alone: it makes the tab's components visible and tells
the tab's view over the direct path (`ui.direct`; a link carries the open tabs). Gradio fires
it for a tab the server selects too (a link, a tour step), so a tab is always drawn when it
shows; values written to a component before its tab opens are kept and shown when it does.
"""

from __future__ import annotations

import json

import gradio as gr

from ui.gradiointernals import children, is_layout

VISIBLE = {"__type__": "update", "visible": True}


def defer(page) -> None:
    """Build invisible the components of every tab but the ones the page opens with, and wire
    each tab's `select` to draw them and to tell the view."""
    from core.view.state import View

    tabs = [("panel", key, tab) for key, tab in page.panel_tabs.items()]
    tabs += [("shown", key, tab) for key, tab in {"plane": page.plane_tab, **page.view_tabs}.items()]
    opened = {("panel", View().panel), ("shown", View().shown)}
    for field, key, tab in tabs:
        later = [] if (field, key) in opened else shown_in(tab)
        for component in later:
            component.visible = False
        tab.select(None, None, later, js=opened_js(field, key, len(later)))
        if (field, key) in opened:  # in the tabs the page opens with, a closed accordion's are drawn when it opens
            for accordion in closed_in(tab):
                inside = shown_in(accordion)
                for component in inside:
                    component.visible = False
                accordion.expand(None, None, inside, js=f"() => Array({len(inside)}).fill({json.dumps(VISIBLE)})")


def shown_in(block) -> list:
    """The components inside `block` that are built visible (not those the server shows and
    hides, which are built invisible, nor layout blocks)."""
    found = []
    for child in children(block):
        if isinstance(child, gr.Component):
            if child.visible is True:
                found.append(child)
        elif is_layout(child):
            found += shown_in(child)
    return found


def closed_in(block) -> list:
    """The accordions inside `block` built closed."""
    found = []
    for child in children(block):
        if isinstance(child, gr.Accordion):
            found += [child] if child.open is False else []
        if is_layout(child):
            found += closed_in(child)
    return found


def opened_js(field: str, key: str, count: int) -> str:
    """The script of a tab's `select`: the view's `field` (`panel`, a control tab; `shown`, a
    main one) set to `key` over the direct path, and its `count` components made visible. Gradio
    also fires `select` for the tabs selected when the page is built; the page's script lets
    those changes go (the page has no key yet), and they draw nothing new."""
    return (f"() => {{ window.embeddingExplorer.tabOpened({json.dumps({field: key})}); "
            f"return Array({count}).fill({json.dumps(VISIBLE)}); }}")


__all__ = ["defer", "shown_in"]
