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

from core.view.state import View

VISIBLE = json.dumps({"__type__": "update", "visible": True})
_LATER: dict[int, list] = {}  # id(page) -> [(opener, shown, field, key)]: what each opener shows


@contextlib.contextmanager
def content(page, opener, field: str | None = None, key: str | None = None) -> Iterator[gr.Column]:
    """The content of `opener` (a tab: the view's `field`, "panel" or "shown", set to `key` when
    it opens; or an accordion), in a column drawn when it first opens unless the page opens with
    it showing."""
    shown = (field == "panel" and key == View().panel) or (field == "shown" and key == View().shown)
    if field is None:
        shown = opener.open is True
    with gr.Column(visible=shown) as column:
        yield column
    later = [] if shown else [column, *built_visible(column)]
    for component in later:
        component.visible = False
    _LATER.setdefault(id(page), []).append((opener, later, field, key))


def built_visible(block) -> list:
    """The components inside `block` built visible (not those the server shows and hides, built
    invisible, nor those of an inner `content`, shown by their own opener), layouts looked into."""
    found = []
    for child in block.children:
        if isinstance(child, gr.Component):
            found += [child] if child.visible is True else []
        elif isinstance(child, gr.blocks.BlockContext):
            found += built_visible(child)
    return found


def defer(page) -> None:
    """Wire each opener recorded by `content`: its column and components shown, the view told which tab opened."""
    for opener, later, field, key in _LATER.pop(id(page), []):
        shown = f"Array({len(later)}).fill({VISIBLE})"
        if field is None:
            page.browser(opener.expand, f"() => {shown}", outputs=later)
        else:
            told = json.dumps({field: key})
            page.browser(opener.select, f"() => {{ window.embeddingExplorer.tabOpened({told}); return {shown}; }}",
                         outputs=later)


__all__ = ["content", "defer"]
