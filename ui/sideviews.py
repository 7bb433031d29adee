"""The side views beside the plane: positions, LayerNorm, similarity, and the two documents.

A side view is computed only while its tab is open (the view's `shown` field says which is),
so a visitor who never opens one never pays for it. Its charts are drawn by the page's script
(`ui.assets.chart`); its inputs are view fields, sent as the page sets them (`ui.page.wire`).
"""

from __future__ import annotations

import gradio as gr

from core.view.options import MAX_TEXT
from core.view.state import DOCUMENT_SENTENCE
from ui import ondemand
from ui.assets import chart, number


def layout(page) -> None:
    with ondemand.tab(page, "shown", "positions"):
        ondemand.unnamed(gr.Markdown(
            "Position vectors 0, 1, 2, … joined in order, each table in its own PCA plane: this table's positions "
            "beside fixed sinusoidal ones. Below, a word that occurs twice: the cosine of its two **output** "
            "vectors — same word, different positions."
        ))
        page.positions_plot = chart("positions-plot")
        page.repeated = gr.Dataframe(headers=["token", "positions", "cosine of outputs"], interactive=False,
                                     label="Same word, different positions", elem_id="repeated-table",
                                     max_height=240)
    with ondemand.tab(page, "shown", "layernorm"):
        page.layernorm_plot = chart("layernorm-plot")
        page.layernorm_info = gr.Markdown(elem_id="layernorm-info")
    with ondemand.tab(page, "shown", "similarity"):
        ondemand.unnamed(gr.Markdown("Cosine similarity of every pair of **output** vectors: what the next layer "
                                     "starts from."))
        page.similarity_plot = chart("similarity-plot")
    with ondemand.tab(page, "shown", "listing"):
        ondemand.unnamed(gr.Markdown(
            "The first document's test, run exactly: `Embedding(vocab_size=10, d_model=2, maxlen=512, "
            "n_segments=2)` on a batch of 2 sequences of 3 random ids and segments."
        ))
        with gr.Row():
            page.listing_seed = number("listing-seed", "seed", 0, "Seed")
            page.listing_bug = gr.Checkbox(False, label="Reproduce the listing's position bug: positions = "
                                        "tok_embed(pos)", elem_id="listing-bug")
        # code without highlighting (`language=None`): the highlighter's pale hues are 2:1 to 4:1 on white,
        # below WCAG AA; plain, the code is in the theme's text colour. "icon-toolbar": its copy and
        # download icons are sized as targets (assets/style.css)
        page.listing_output = gr.Code(language=None, label="What the test prints", elem_id="listing-output",
                                      interactive=False, elem_classes=["icon-toolbar"])
        page.listing_facts = gr.Markdown(elem_id="listing-facts")
        page.listing_plot = chart("listing-plot")
    with ondemand.tab(page, "shown", "lookup"):
        ondemand.unnamed(gr.Markdown("The second document, *nn.Embedding is a lookup table*, step by step."))
        with gr.Row():
            page.lookup_sentence = gr.Textbox(DOCUMENT_SENTENCE, label="Sentence", scale=3, elem_id="lookup-sentence",
                                              max_length=MAX_TEXT)
            page.lookup_dim = number("lookup-dim", "lookup_dim", 3, "Width", scale=1)
            page.lookup_grad = gr.Checkbox(True, label="weight.requires_grad", elem_id="lookup-grad", scale=1)
        page.lookup_info = gr.Markdown(elem_id="lookup-info")
        page.lookup_vocab = gr.Dataframe(headers=["word", "count", "id"], interactive=False,
                                         label="Counter vocabulary, most frequent first", elem_id="lookup-vocab",
                                         max_height=240)
        page.lookup_code = gr.Code(language=None, label="The code", elem_id="lookup-code", interactive=False,
                                   elem_classes=["icon-toolbar"])
        page.lookup_output = gr.Code(language=None, label="What it prints", elem_id="lookup-output",
                                     interactive=False, elem_classes=["icon-toolbar"])
