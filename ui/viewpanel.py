"""The View panel: what to draw, in which plane, for whom; and sharing or exporting it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import gradio as gr

from core.drawing.export import export_view
from core.plane.basis import vocabulary_basis
from core.plane.pipeline import fit_sentence_basis
from core.process.offload import OffloadError
from core.view import options
from core.view.options import BASES, COMPONENTS, LIMITS, PANELS, Refused
from core.view.share import to_query
from ui import events, render
from ui.direct import settable, written_by_page
from ui.downloads import Downloads, links_html
from ui.plane import LIVE
from ui.widgets import Checkbox, CheckboxGroup, Number

HEAVY = {"concurrency_id": "heavy", "concurrency_limit": 16, "show_progress": "minimal"}


def layout(page) -> None:
    with gr.Tab(PANELS["view"], id="view", elem_id="tab-view") as page.panel_tabs["view"]:
        page.groups = CheckboxGroup(list(COMPONENTS), value=list(COMPONENTS), label="Groups to plot", elem_id="groups")
        page.labels = Checkbox(True, label="Show labels", info="where they fit; hover any point", elem_id="show-labels")
        page.arrows = Checkbox(False, label="Show the addition tip to tail", elem_id="show-arrows",
                               info="token → +position → +segment = sum → LayerNorm output")
        page.shift = Checkbox(False, label="Show the segment shift", elem_id="show-shift",
                              info="the vector seg[1] − seg[0] that segment B adds to each sum")
        page.three_d = Checkbox(False, label="3-D: PC1–PC3, rotatable", elem_id="three-d",
                                info="a linear projection in one more dimension; drag to turn it")
        page.basis = gr.Radio([(label, key) for key, label in BASES.items()], value="sentence",
                              label="Plane (PCA basis)", elem_id="basis")
        with gr.Row():
            low, high = LIMITS["background"]
            page.background = Number(0, label=f"Vocabulary words behind (0 = none, up to {high:,})", precision=0,
                                     minimum=low, maximum=high, elem_id="background-size", scale=2,
                                     info="most frequent first; needs the vocabulary or frozen plane")
            page.refit_button = gr.Button("Refit", elem_id="refit-button", size="sm", scale=1)
        page.variance = gr.HTML(elem_id="variance-bars", js_on_load=written_by_page("variance-bars"))
        page.background_json = gr.Textbox(visible="hidden", elem_id="background-data")
        page.presenter = Checkbox(False, label="Presenter mode: large type for a projector", elem_id="presenter")
        page.answers = Checkbox(True, label="Class answers", elem_id="show-answers",
                                info="in a class: the words students sent, where the table puts them")
        with gr.Row():
            page.share_button = gr.Button("Link to this view", elem_id="share-button", size="sm")
            page.png_button = gr.Button("PNG", elem_id="export-png", size="sm")
            page.export_button = gr.Button("CSV, vectors, HTML", elem_id="export-button", size="sm")
        page.share_query = gr.Textbox(visible="hidden", elem_id="share-query")
        page.share_link = gr.Textbox(label="Link", elem_id="share-link", buttons=["copy"], interactive=False)
        page.share_notes = gr.Markdown(elem_id="share-notes")
        # the API's exports (gr.File); the page's come as links to its own route (ui/downloads.py)
        page.exports = gr.File(label="Exports", file_count="multiple", elem_id="export-files", interactive=False,
                               visible=False)
        page.downloads = Downloads()


def layout_last(page) -> None:
    """The page's links to its exports, below the rest of the View panel: made after every other
    component, so the ids gradio numbers the API's unlabeled outputs by are what they were."""
    page.export_links = gr.HTML("", elem_id="export-links", js_on_load=written_by_page("export-links"),
                                render=False)
    with page.panel_tabs["view"]:
        page.export_links.render()


def wire(page) -> None:
    outputs = page.everything
    for name in ("groups", "labels", "arrows", "shift", "presenter", "background", "answers"):  # set directly
        widget = getattr(page, name)
        settable(page, name, widget.input, widget, **LIVE)
    settable(page, "basis", page.basis.input, page.basis, **LIVE)  # may fit a plane: in the tables' lane
    three_d = events.named(lambda request, on: events.update(
        page, request, lambda view: view.with_(dims=3 if options.flag(on, "3-D") else 2), asked=("dims",)),
        ("three_d",))
    settable(page, "dims", page.three_d.input, page.three_d, api=three_d, api_name="three_d",
             js="(on) => window.embeddingExplorer.set({dims: on ? 3 : 2})", **LIVE)
    page.presenter.change(None, page.presenter, None, js="(on) => window.embeddingExplorer.presenter(on)")
    page.background_json.change(None, page.background_json, None,
                                js="(trace) => window.embeddingExplorer.setBackground(trace)")
    settable(page, "refit", page.refit_button.click, None, js="() => window.embeddingExplorer.set({refit: true})",
             api=events.named(lambda request: api_refit(page, request), ()), api_name="refit", outputs=outputs,
             **HEAVY)
    page.direct.work("refit", lambda tab, _: refit(page, tab, direct=True))
    # the page's link is made of its own address (which only it knows behind a proxy) and the view's query
    settable(page, "link", page.share_button.click, None,
             js="() => window.embeddingExplorer.set({link: location.origin + location.pathname})",
             api=events.named(lambda request: api_share(page, request), ()), api_name="share",
             outputs=[page.share_query, page.share_notes], **LIVE)
    page.direct.work("link", lambda tab, address: share(page, tab, address))
    page.png_button.click(None, None, None, js="() => window.embeddingExplorer.downloadPNG()")
    settable(page, "export", page.export_button.click, [page.sentence_a, page.sentence_b],
             js="() => window.embeddingExplorer.set({export: true})",
             api=events.named(lambda request, a, b: export(page, request, a, b), ("sentence_a", "sentence_b")),
             api_name="export", outputs=[page.exports, page.notice], **HEAVY)
    page.direct.work("export", lambda tab, _: export_links(page, tab))


def refit(page, tab, direct: bool = False) -> dict:
    """Fit the plane again: the frozen one on the current sentence, the vocabulary's from scratch.
    What it says goes in a toast for an API call, in the notice for the page (`direct`, its route)."""

    def said(*notes: str, error: bool = False) -> dict:
        if direct:
            return {page.notice: render.notice(notes, "⚠️" if error else "ℹ️")}
        (gr.Warning if error else gr.Info)(notes[0])
        return {page.notice: render.notice(notes) if error else gr.skip()}

    try:
        view, session = tab.view, tab.session  # a parked tab's tables come back here, or a sentence says why not
        if view.basis == "sentence":
            return said("'This sentence' refits on every change already; freeze the plane to keep one.")
        if view.basis == "vocabulary":
            fitted = events.JOBS.run(tab, "refitting", lambda: vocabulary_basis(  # the plane pipeline draws in
                session.source.model.tok_embed, refit=True, run=events.OFFLOAD.call))
            rows = session.model.config.vocab_size
            return said(f"Fitted the plane of all {rows:,} rows of the token table in {fitted.seconds:.2f} s.")
        plane = events.JOBS.run(tab, "refitting",
                                lambda: fit_sentence_basis(session, view.sentence_a, view.sentence_b, view.groups))
    except (Refused, OffloadError) as error:
        return said(str(error), error=True)
    out = events.update(page, None, lambda v: v, tables=lambda s: s.with_basis("frozen", plane), tab=tab,
                        direct=direct)
    out = {**out[0], **out[1]} if direct else out
    return {**out, **said("The frozen plane now fits the current sentence.")}


def api_refit(page, request: gr.Request) -> dict:
    try:
        tab = events.tab_of(request)
    except Refused as error:
        gr.Warning(str(error))
        return {page.notice: render.notice((str(error),))}
    return refit(page, tab)


def api_share(page, request: gr.Request) -> dict:
    """The link's query string and notes; for a tab whose session has ended, the sentence that says so."""
    try:
        tab = events.tab_of(request)
    except Refused as error:
        return {page.share_query: gr.skip(), page.share_notes: f"⚠️ {render.plain(str(error))}"}
    return share(page, tab)


def share(page, tab, address: str | None = None) -> dict:
    """The query string of a link to what the tab shows, for an API call; for the page (its own
    `address`), the whole link."""
    query, notes = to_query(tab.view)
    link = {page.share_query: query} if address is None else {page.share_link: address + (f"?{query}" if query else "")}
    return {**link, page.share_notes: "\n\n".join(f"ℹ️ {render.plain(n)}" for n in notes)}


# exports live in one folder per tab inside gradio's cache, replaced by the tab's next export
# and swept with the cache, so clicking Export again and again never fills the disk
def export(page, request: gr.Request, sentence_a: str, sentence_b: str) -> dict:
    """The current view as files: coordinates (CSV), raw vectors (safetensors), the figure (HTML)."""
    changed = events.update(page, request, lambda view: view.with_(sentence_a=sentence_a, sentence_b=sentence_b),
                            asked=("sentence_a", "sentence_b"), outputs=[page.notice])
    try:
        tab = events.tab_of(request)
        if (tab.view.sentence_a, tab.view.sentence_b) != (sentence_a or "", sentence_b or ""):
            return changed  # the sentences were refused (the notice says why): no files of another view
        files = exported(page, tab)
    except (Refused, OffloadError) as error:
        gr.Warning(str(error))
        return {page.notice: render.notice((str(error),))}
    return {page.exports: gr.File(value=files, visible=True), **changed}


def export_links(page, tab) -> dict:
    """The page's exports: links to the files on the page's own route, or the sentence saying why not."""
    try:
        files = exported(page, tab)
    except (Refused, OffloadError) as error:
        return {page.notice: render.notice((str(error),))}
    return {page.export_links: links_html(page.downloads.offer(events.CHANNELS.of(tab).key, files))}


def exported(page, tab) -> list[str]:
    """The files of what the tab shows, written in the heavy pool."""
    view, session = tab.view, tab.session
    return events.JOBS.run(tab, "exporting", lambda: events.OFFLOAD.call(
        export_view, export_folder(page, tab), view, session))


def export_folder(page, tab) -> Path:
    name = hashlib.sha256(str(events.CHANNELS.of(tab).session).encode()).hexdigest()[:16]
    return Path(page.exports.GRADIO_CACHE) / "exports" / name
