"""The View panel: what to draw (the groups, the encoder layer), in which plane, for whom (presenter mode,
the theme, the plane heard); sharing or exporting it.

Its settings are view fields (the page sends each widget's value: `ui.page.wire`); its work —
a refit, a link, the exports — is answered on the page's route (`ui.route.Live.work`).
"""

from __future__ import annotations

import gradio as gr

from core.drawing.captions import plain
from core.drawing.export import export_view
from core.plane.basis import vocabulary_basis
from core.plane.layers import NEEDS_BERT
from core.plane.pipeline import fit_sentence_basis
from core.process.offload import OffloadError
from core.view.options import BASES, COMPONENTS, LIMITS, READINGS, THEMES, Refused
from core.view.share import to_query
from ui import ondemand, render
from ui.assets import number, radio, slider, written_by_page
from ui.files import Downloads, links_html, new_folder
from ui.route import JOBS, MAX_ADDRESS, OFFLOAD, only_true

# the switch's description, which names the sound keys (assets/sound.js says them on the plot when on)
SOUND_INFO = ("the plane heard as the arrow keys move over it: pitch is height, left and right is stereo, "
              "each group its own timbre; with the plot focused, P plays the tokens in order, G the ring's group, "
              "Escape stops")


def layout(page) -> None:
    with ondemand.tab(page, "panel", "view"):
        page.groups = gr.CheckboxGroup(list(COMPONENTS), value=list(COMPONENTS), label="Groups to plot",
                                       elem_id="groups")
        # disabled, saying why, on tables the encoder cannot read (ui.render.layer_control); as built: a fresh page's
        page.layer = slider("encoder-layer", "layer", 0, "Encoder layer", interactive=False, info=NEEDS_BERT)
        page.reading = radio("encoder-reading", READINGS, "pair", "The encoder reads")
        page.labels = gr.Checkbox(True, label="Show labels", info="where they fit; hover any point",
                                  elem_id="show-labels")
        page.arrows = gr.Checkbox(False, label="Show the addition tip to tail", elem_id="show-arrows",
                                  info="token → +position → +segment = sum → LayerNorm output")
        page.shift = gr.Checkbox(False, label="Show the segment shift", elem_id="show-shift",
                                 info="the vector seg[1] − seg[0] that segment B adds to each sum")
        page.three_d = gr.Checkbox(False, label="3-D: PC1–PC3, rotatable", elem_id="three-d",
                                   info="a linear projection in one more dimension; drag to turn it")
        page.basis = radio("basis", BASES, "sentence", "Plane (PCA basis)")
        with gr.Row():
            page.background = number("background-size", "background", 0, f"Vocabulary words behind (0 = none, up to "
                                     f"{LIMITS['background'][1]:,})", scale=2,
                                     info="most frequent first; needs the vocabulary or frozen plane")
            page.button("Refit", "() => window.embeddingExplorer.set({refit: true})", elem_id="refit-button", scale=1)
        page.variance = written_by_page("variance-bars")
        # the vocabulary behind the tokens: one trace's JSON, which the page's script merges into every
        # redraw of the plane as it comes, whether this tab has opened or not (assets/explorer.js setOutput)
        page.background_json = gr.HTML("", elem_id="background-data", elem_classes=["offscreen"])
        page.presenter = gr.Checkbox(False, label="Presenter mode: large type for a projector", elem_id="presenter")
        page.theme = radio("theme", THEMES, "light", "Theme")  # the projector's implies presenter mode's type
        page.answers = gr.Checkbox(True, label="Class answers", elem_id="show-answers",
                                   info="in a class: the words students sent, where the table puts them")
        # the plane heard as the keys move over it (assets/sound.js); nothing sounds until a key asks
        page.sound = gr.Checkbox(False, label="Sound", elem_id="sound", info=SOUND_INFO)
        with gr.Row():
            # the page's link is made of its own address (which only it knows behind a proxy) and the view's query
            page.button("Link to this view", "() => window.embeddingExplorer.set({link: location.origin + "
                        "location.pathname})", elem_id="share-button")
            page.button("PNG", "() => window.embeddingExplorer.downloadPNG()", elem_id="export-png")
            page.button("CSV, vectors, HTML", "() => window.embeddingExplorer.set({export: true})",
                        elem_id="export-button")
        page.share_link = gr.Textbox(label="Link", elem_id="share-link", buttons=["copy"], interactive=False,
                                     elem_classes=["icon-toolbar"])
        page.share_notes = gr.Markdown(elem_id="share-notes")
        page.export_links = written_by_page("export-links")
        page.downloads = Downloads()


def wire(page) -> None:
    page.browser(page.presenter.change, "(on) => window.embeddingExplorer.presenter(on)", page.presenter)
    page.browser(page.theme.change, "(theme) => window.embeddingExplorer.theme(theme)", page.theme)
    page.browser(page.sound.change, "(on) => window.embeddingExplorerSound.on(on)", page.sound)
    page.live.work("refit", lambda tab, _: refit(page, tab), check=only_true("refit"))
    page.live.work("link", lambda tab, address: share(page, tab, address), check=page_address)
    page.live.work("export", lambda tab, _: export(page, tab), check=only_true("export"))


def refit(page, tab) -> dict:
    """Fit the plane again: the frozen one on the current sentence, the vocabulary's from scratch."""
    def said(note: str, error: bool = False) -> dict:
        return {page.notice: render.notice((note,), "⚠️" if error else "ℹ️")}

    try:
        view, session = tab.view, tab.session  # a parked tab's tables come back here, or a sentence says why not
        if view.basis == "sentence":
            return said("'This sentence' refits on every change already; freeze the plane to keep one.")
        if view.basis == "vocabulary":
            fitted = JOBS.run(tab, "refitting", lambda: vocabulary_basis(  # the plane the pipeline draws in
                session.source.model.tok_embed, refit=True, run=OFFLOAD.call))
            rows = session.model.config.vocab_size
            return said(f"Fitted the plane of all {rows:,} rows of the token table in {fitted.seconds:.2f} s.")
        plane = JOBS.run(tab, "refitting",
                         lambda: fit_sentence_basis(session, view.sentence_a, view.sentence_b, view.groups))
    except (Refused, OffloadError) as error:
        return said(str(error), error=True)
    channel = page.live.channels[tab]
    out = page.live.apply(tab, channel, lambda v: v, tables=lambda s: s.with_basis("frozen", plane))
    return {**out, **said("The frozen plane now fits the current sentence.")}


def page_address(address: object) -> None:
    """`Refused` unless `address` can be the page's own address, which a link is made of."""
    if not isinstance(address, str) or len(address) > MAX_ADDRESS:
        raise Refused(f"link is the page's own address, at most {MAX_ADDRESS:,} characters.")


def share(page, tab, address: str) -> dict:
    """The link to what the tab shows (the page's own `address`, checked by `page_address`) and what it cannot carry."""
    query, notes = to_query(tab.view)
    return {page.share_link: address + (f"?{query}" if query else ""),
            page.share_notes: "\n\n".join(f"ℹ️ {plain(n)}" for n in notes)}


def export(page, tab) -> dict:
    """The current view as files, written in the heavy pool: coordinates (CSV), raw vectors
    (safetensors), the figure (HTML); answered as links, or the sentence saying why not."""
    view, session, folder = tab.view, tab.session, new_folder("exports")
    try:
        files = JOBS.run(tab, "exporting", lambda: OFFLOAD.call(export_view, folder, view, session))
    except (Refused, OffloadError) as error:
        return {page.notice: render.notice((str(error),))}
    key = page.live.channels[tab].key
    return {page.export_links: links_html(page.downloads.offer(key, folder, files))}
