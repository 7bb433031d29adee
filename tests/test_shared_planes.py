"""What a class's hundred pages share, and what each keeps its own (ui/render.plane, ui/route.Live.values).

A plane drawn on shared tables for a view is drawn once and handed to every tab that shows the
same view on the same tables, each with its own revision; so are one training's tables, which a
class that pressed Train together adopts as one; tables of a session's own (an upload, a training
of its own) are never shared. An update the page was sent already is not sent again, unless
the user changed that widget since.
"""

from __future__ import annotations

import json
import threading

import gradio as gr
import pytest
import torch

from core.model.training import Corpus, TrainConfig
from core.serving.tabs import Tab, session_for
from core.tables.session import Session
from core.tables.uploads import UploadedTable
from core.view.state import View
from ui import render
from ui.route import Channel, as_built


@pytest.fixture(scope="module")
def page():
    import app

    return app.demo.explorer


def planes_drawn(monkeypatch) -> list[tuple]:
    """The planes this thread computes from now on (not taken from the shared ones), each as the
    arguments `render._plane` was called with. Only this thread's: another test's app in this
    process may draw a plane meanwhile, on a thread of its own."""
    calls = []
    original = render._plane
    here = threading.get_ident()

    def counted(*args):
        if threading.get_ident() == here:
            calls.append(args)
        return original(*args)

    monkeypatch.setattr(render, "_plane", counted)
    return calls


@pytest.fixture()
def drawn(monkeypatch):
    return planes_drawn(monkeypatch)


def revision(out: dict, page) -> int:
    return json.loads(out[page.plot])["layout"]["meta"]["revision"]


def test_two_tabs_showing_one_view_on_shared_tables_share_its_plane_each_with_its_revision(page, drawn):
    view = View(sentence_a="the shared plane of a lesson", sentence_b="drawn once for the class")
    first, second = session_for(view, Session.create()), session_for(view, Session.create())
    assert first is not second and first.source.model is second.source.model  # shared tables
    a = render.plane(page, view, first, revision=3)
    b = render.plane(page, view, second, revision=41)
    assert len(drawn) == 1
    assert (revision(a, page), revision(b, page)) == (3, 41)
    assert a[page.plot].replace('"revision":3', "") == b[page.plot].replace('"revision":41', "")
    assert a[page.info] == b[page.info] and a[page.near_token] == b[page.near_token]
    assert a[page.near_token] is not b[page.near_token]  # a tab's lists are its own to change

    other = view.with_(sentence_b="another sentence, another plane")
    render.plane(page, other, session_for(other, first), revision=4)
    seeded = view.with_(seed=view.seed + 1)  # other tables: never the first tables' plane
    render.plane(page, seeded, session_for(seeded, first), revision=5)
    assert len(drawn) == 3


def test_pages_that_adopted_one_training_share_its_drawings_and_a_training_of_its_own_is_not(page, drawn):
    view = View(sentence_a="the cat sat on the mat", sentence_b="a dog slept on the rug")
    base = session_for(view, Session.create())
    frames = []
    trained = base.trained_on(Corpus.builtin(), TrainConfig(steps=5),
                              progress=lambda step, steps, losses, frame=None: frame and frames.append(frame))
    class_pages = [session_for(view, Session.create()).adopt_training(trained) for _ in range(3)]
    drawings = [render.plane(page, view, session, revision=1) for session in class_pages]
    assert len(drawn) == 1
    assert drawings[0][page.plot] == drawings[2][page.plot]
    assert "before training" in drawings[0][page.info]  # the trained tables' plane, not the untrained one
    snapshots = [session_for(view, Session.create()).adopt_training(frames[0]) for _ in range(2)]
    for session in snapshots:
        render.plane(page, view, session, revision=1)
    assert len(drawn) == 2  # a snapshot is drawn once for the class too

    again = base.trained_on(Corpus.builtin(), TrainConfig(steps=5))  # the same numbers, but another page's own
    render.plane(page, view, again, revision=1)
    render.plane(page, view, base, revision=1)  # and the untrained tables are not the trained ones
    assert len(drawn) == 4


def test_tables_of_a_session_s_own_are_never_shared(page, drawn):
    view = View(sentence_a="0 1 2 3", sentence_b="")
    upload = UploadedTable("token", "npy", None, torch.randn(8, 4), None, ())
    own = [Session.create().with_upload(upload) for _ in range(2)]
    for session in own:
        render.plane(page, view.with_(source="upload"), session, revision=1)
    assert len(drawn) == 2


def test_an_update_sent_already_is_not_sent_again_unless_the_user_changed_its_widget(page):
    live, tab, channel = page.live, Tab(), Channel("a page's key")
    out = {page.controls: gr.update(selected="view"), page.views: gr.update(selected="plane")}
    assert set(live.values(channel, out)) == {"controls", "views"}
    assert live.values(channel, out) == {}  # the page shows these already

    # the student opens the Train tab: its widget shows what the user chose, not what was sent
    live.apply(tab, channel, lambda view: view.with_(panel="train"), asked=("panel",))
    assert "controls" not in channel.sent
    assert set(live.values(channel, out)) == {"controls"}  # a lesson on the View tab is sent again


def test_what_the_page_writes_is_sent_as_it_is_and_a_skip_is_not_sent(page):
    """The page's script writes its own outputs (the plot, the notice, the tour's text) from each
    answer, so they are sent as they are, never compared with what was sent before; gradio's
    widgets get their values as gradio's browser code takes them; a skip is no value at all."""
    channel = Channel("a page's key")
    out = {page.tour_text: "<p>Step 2</p>", page.info: "<p>6 tokens</p>", page.notice: gr.skip(),
           page.token: gr.skip(), page.k: 7}
    assert page.live.values(channel, out) == {"tour-text": "<p>Step 2</p>", "embed-info": "<p>6 tokens</p>",
                                              "neighbour-k": 7}
    assert set(channel.sent) == {"neighbour-k"}  # a skip is not what the picker holds
    assert page.live.values(channel, out) == {"tour-text": "<p>Step 2</p>", "embed-info": "<p>6 tokens</p>"}


def test_what_the_page_holds_as_built_is_known_and_nothing_else(page):
    assert as_built(page.views, gr.update(selected="plane"))
    assert not as_built(page.views, gr.update(selected="layernorm"))
    assert as_built(page.controls, gr.update(selected="tour"))
    assert as_built(page.search, "")  # built empty (None): "" is what it holds
    assert not as_built(page.search, "king")
    assert as_built(page.tour_text, page.tour_text.value)
    assert not as_built(page.token, gr.update(choices=[("none", ""), ("0: [CLS]", 0)]))
    assert not as_built(page.notice, {"a": 1})  # not a value a component is built with
    assert not as_built(None, "")  # no component of the page
