"""The Train panel's stream, in-process: what it trains when the tables change around it.

A class server's worker loaded BERT for the first time while a visitor pressed *Train*; the
training took the random tables the tab still had, and its result was set aside when BERT
arrived, with the summary left saying "Training 5 steps…" for good.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading

import pytest

import app
from core.model.training import FRAMES
from core.serving.tabs import Tab
from tests.appapi import decode, run_async
from ui import route, trainpanel

PAGE = app.demo.explorer


def opened() -> Tab:
    """A page's tab as the route keeps it (its channel beside it), showing the default view."""
    tab = Tab()
    PAGE.live.channels[tab] = route.Channel(secrets.token_urlsafe(24))
    update(tab, lambda view: view)
    return tab


def update(tab: Tab, change) -> dict:
    """A change of the tab's view as the route applies it: the values the page writes, by element id."""
    return PAGE.live.apply(tab, PAGE.live.channels[tab], change)


def answers(tab: Tab, steps, corpus: str = "builtin") -> list[dict]:
    """Every answer the stream gives, by element id as the route sends them (in a thread of its
    own: a browser test's worker keeps an event loop running in this one)."""
    channel = PAGE.live.channels[tab]

    async def taken() -> list[dict]:
        sent = {"steps": steps, "corpus": corpus}  # the page's {train: …}
        return [PAGE.live.values(channel, out) async for out in trainpanel.train(PAGE, tab, sent)]

    return run_async(taken)


def last(outputs: list[dict]) -> dict:
    """What the page shows after the stream's answers, each written over the one before."""
    shown: dict = {}
    for out in outputs:
        shown.update(out)
    return shown


def test_train_pressed_while_bert_loads_trains_bert(monkeypatch):
    import core.tables.session

    entered, release = threading.Event(), threading.Event()
    real = core.tables.session.preset

    def slow(key, settings):  # the first BERT load of a process takes seconds
        if key == "bert":
            entered.set()
            assert release.wait(60)
        return real(key, settings)

    monkeypatch.setattr(core.tables.session, "preset", slow)
    tab = opened()  # the tab opens on random tables
    loading = threading.Thread(target=update, args=(tab, lambda view: view.with_(source="bert")))
    loading.start()
    assert entered.wait(60)
    outputs: list[dict] = []
    training = threading.Thread(target=lambda: outputs.extend(answers(tab, 3)))
    training.start()
    try:
        training.join(1.0)
        assert training.is_alive() and outputs == []  # it waits for the tables the page is about to show
    finally:
        release.set()
    loading.join(60)
    training.join(120)
    assert not training.is_alive()

    assert tab.session.base.key == "bert" and tab.session.training.steps == 3
    shown = last(outputs)
    assert "Trained 3 steps" in shown["train-summary"] and "set aside" not in shown.get("notice", "")


def test_a_training_set_aside_puts_the_summary_and_curve_back(monkeypatch):
    """A table change that got in before the training was registered: its result is refused, and
    the summary no longer says it is training."""
    from core.tables.session import Session

    tab = opened()
    real = Session.trained_on

    def changed_meanwhile(self, *args, **kwargs):
        trained = real(self, *args, **kwargs)
        with tab.lock:  # what an event between the training's snapshot and its job would leave
            tab.view = tab.view.with_(seed=tab.view.settings.seed + 1)
            tab.session = tab.session.with_tables("random", tab.view.settings, tab.view.positions)
        return trained

    monkeypatch.setattr(Session, "trained_on", changed_meanwhile)
    outputs = answers(tab, 40)

    assert outputs[0]["train-summary"] == "Training 40 steps…"
    assert sum("embed-plot" in out for out in outputs[1:-1]) == FRAMES  # the snapshots were drawn on the way
    shown = last(outputs)
    assert "set aside" in shown["notice"]
    assert shown["train-summary"] == "" and shown["loss-plot"] == ""  # the untrained tables' own: no curve
    assert tab.session.training is None
    # and so is the plot: the last snapshot drawn does not stay as if it had been adopted
    assert "embed-plot" in outputs[-1] and "before training" not in outputs[-1]["embed-plot"]


def test_snapshots_are_not_drawn_over_a_view_the_person_changed_meanwhile(monkeypatch):
    from core.tables.session import Session

    tab = opened()
    real = Session.trained_on

    def typed_meanwhile(self, *args, **kwargs):  # as the training starts: before any snapshot
        update(tab, lambda view: view.with_(sentence_a="a zebra typed meanwhile"))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Session, "trained_on", typed_meanwhile)
    outputs = answers(tab, 40)
    assert not any("embed-plot" in out for out in outputs[1:-1])
    assert "zebra" in outputs[-1]["embed-plot"] and "Trained 40 steps" in outputs[-1]["train-summary"]


def test_a_class_s_words_stay_drawn_through_the_snapshots(monkeypatch):
    """A lecturer trains with a round's words on the plane: every snapshot draws them, as the
    plane before and after the training does, instead of dropping them until the training ends."""
    from core.plane.classwords import Answers
    from ui import render

    round_ = Answers((("queen", 2), ("prince", 1)), undrawn=0)
    monkeypatch.setattr(render, "answers_of", lambda member, view: round_)  # every plane shows this round
    tab = opened()
    outputs = answers(tab, 40)
    plots = [out["embed-plot"] for out in outputs if "embed-plot" in out]
    assert len(plots) == FRAMES + 1  # the snapshots, then the trained tables
    assert all('"name":"class"' in plot.replace(" ", "") for plot in plots)


@pytest.mark.parametrize("steps", [0, "many"])
def test_a_refused_training_leaves_the_summary_as_the_tables_have_it(steps):
    tab = opened()
    shown = last(answers(tab, steps))
    assert "steps" in shown["notice"] and shown["train-summary"] == ""


def test_the_curve_drawn_while_training_spans_the_whole_run_from_its_first_point():
    """The loss curve grows along a still axis: its x range is the run's steps from the first
    curve on, not the steps done so far (which rescaled the axis at every update)."""
    tab = opened()
    outputs = answers(tab, 100)
    curves = [json.loads(out["loss-plot"]) for out in outputs if out.get("train-summary", "").startswith("Training…")]
    assert curves
    for curve in curves:
        assert curve["layout"]["xaxis"]["range"] == [0, 101] and len(decode(curve["data"][0]["y"])) < 100


def test_the_page_hears_training_only_once_a_table_change_would_be_refused(monkeypatch):
    """The handler's first answer ("Training…") waits until the tab counts as training. Before,
    it came as the training's thread started, and a table change the page sent at once could be
    applied first (a busy server's thread slow to take the tab's lock), the training's result
    then set aside. Forced here: the training's thread reaches the tab's line late."""
    tab = opened()
    reached, release = threading.Event(), threading.Event()
    real = route.JOBS.run

    def late(*args, **kwargs):
        reached.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(route.JOBS, "run", late)
    handler, loop = trainpanel.train(PAGE, tab, {"steps": 2000, "corpus": "builtin"}), asyncio.new_event_loop()
    first: list[dict] = []
    told = threading.Thread(target=lambda: first.append(loop.run_until_complete(anext(handler))))
    told.start()
    try:
        assert reached.wait(60)
        told.join(0.5)
        assert told.is_alive() and first == []  # not told "Training…" before the tab counts as training
    finally:
        release.set()
    told.join(60)
    assert first and first[0][PAGE.trained].startswith("Training 2,000 steps")
    refused = update(tab, lambda view: view.with_(source="glove"))
    assert "Training is running" in refused["notice"] and tab.view.source == "random"
    closed = threading.Thread(target=lambda: loop.run_until_complete(handler.aclose()))  # the page goes away
    closed.start()
    closed.join(60)
    loop.close()
