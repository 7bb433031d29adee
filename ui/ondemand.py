"""A tab's components are drawn when the tab is first opened, not when the page opens.

Gradio's browser code loads a script and a stylesheet for each type of component a page shows,
whether its tab is open or not; only a component itself built invisible is not loaded (one in an
invisible column is). So the content of every tab but the two the page opens with (the Tour
panel and the plane), and of a closed accordion in those, is a column built invisible whose
components are built invisible too (`content`), which the tab's `select` (the accordion's
`expand`) makes visible: a visitor who never opens the Train tab never downloads its code.

A tab's `select` runs in the browser alone: it shows the column and its components and tells the
tab's view over the page's route (a link carries the open tabs). Gradio fires it for a tab the
server selects too (a link, a tour step), so a tab is always drawn when it shows; values written
to its components before it opens are kept and shown when it does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import gradio as gr

from core.view.options import PANELS, VIEWS
from core.view.state import View

VISIBLE = json.dumps({"__type__": "update", "visible": True})
_UNNAMED: list[gr.Component] = []  # static components of the content being built (`unnamed`)


@contextlib.contextmanager
def content(page, opener, field: str | None = None, key: str | None = None) -> Iterator[gr.Column]:
    """The content of `opener` (a tab: the view's `field`, "panel" or "shown", set to `key` when
    it opens; or an accordion), in a column drawn when it first opens unless the page opens with
    it showing; the opener's event shows it, and a tab's tells the view which tab opened."""
    shown = opener.open is True if field is None else getattr(View(), field) == key
    before, unnamed = set(map(id, components_of(page))), len(_UNNAMED)
    with gr.Column(visible=shown) as column:
        yield column
    built = [*(component for component in components_of(page) if id(component) not in before), *_UNNAMED[unnamed:]]
    del _UNNAMED[unnamed:]  # an outer content does not take them again
    later = [] if shown else [column, *(component for component in built if component.visible is True)]
    for component in later:
        component.visible = False
    shows = f"Array({len(later)}).fill({VISIBLE})"
    if field is None:
        page.browser(opener.expand, f"() => {shows}", outputs=later)
    else:
        told = json.dumps({field: key})
        page.browser(opener.select, f"() => {{ window.embeddingExplorer.tabOpened({told}); return {shows}; }}",
                     outputs=later)


@contextlib.contextmanager
def tab(page, field: str, key: str) -> Iterator[gr.Tab]:
    """The tab `key` of the control column (`field` "panel": `PANELS`, kept in `page.panel_tabs`) or
    of the main one ("shown": `VIEWS`, in `page.view_tabs`), its content a `content` of it."""
    labels, tabs = (PANELS, page.panel_tabs) if field == "panel" else (VIEWS, page.view_tabs)
    with gr.Tab(labels[key], id=key, elem_id=f"tab-{key}") as tabs[key], content(page, tabs[key], field, key):
        yield tabs[key]


def unnamed(component: gr.Component) -> gr.Component:
    """A component of a tab's content the page does not name (static text), drawn when the tab
    opens as the named ones are: built visible, its type's code would load with the page."""
    _UNNAMED.append(component)
    return component


def components_of(page) -> list[gr.Component]:
    """The page's components, as its slots hold them (a component in a tab's content is one the page
    names: built visible, it is hidden with the tab's column; one an inner `content` holds is hidden
    by it already, and the server's own shown or hidden ones are built invisible)."""
    found = []
    for name in type(page).__slots__:
        value = getattr(page, name, None)
        found += [each for each in (value.values() if isinstance(value, dict) else [value])
                  if isinstance(each, gr.Component)]
    return found

