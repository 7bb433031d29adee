"""The page's direct path (ui/direct.py), called as the page's script calls it: one POST to the
app's `/explorer/live`, the tab named by the key the server issued.

A keystroke changes the tab's view and answers the figure; a click on a point also answers the
picker and the neighbour tables, for the page to hand to gradio's components; anything hostile
is refused with a sentence and changes nothing; the path's bounds hold.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import secrets

import httpx
import pytest

from core.drawing.wire import expand, table_rows
from core.tables.presets import wordpiece
from core.view.options import MAX_TEXT
from tests.appapi import key_of, run_async

os.environ.setdefault("EMBEDDING_EXPLORER_TEST_HOOKS", "1")


def call(app_url: str, sent) -> dict:
    """What the page's script gets back for `sent`."""
    response = httpx.post(f"{app_url}explorer/live", json=sent, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def for_gradio(answer: dict) -> dict:
    """The answer's values for gradio's components, by element id: all but those the page's
    script writes itself (`Page.direct_outputs`)."""
    import app

    written = {component.elem_id for component in app.demo.explorer.direct_outputs}
    return {elem_id: value for elem_id, value in answer["values"].items() if elem_id not in written}


@pytest.fixture()
def tab(client):
    """A tab opened through gradio (its first event makes it), and its key."""
    from ui.events import TABS

    client.predict("The king spoke.", "", api_name="/embed")
    return client, TABS.get(client.session_hash)


STRANGER, STUDENT = "203.0.113.7", "198.51.100.20"  # documentation addresses


def new_tab(client):
    """Another tab of the launched app (its first event makes it)."""
    from gradio_client import Client

    from ui.events import TABS

    other = Client(client.src, verbose=False)
    other.predict("Another tab.", "", api_name="/embed")
    return TABS.get(other.session_hash)


def drawn_tokens(answer: dict) -> tuple[str, ...]:
    figure = expand(json.loads(answer["values"]["embed-plot"]))
    return tuple(row[0] for row in table_rows(figure))


def test_a_keystroke_changes_the_tab_and_answers_its_figure_summary_and_address(app_url, tab):
    client, tab = tab
    before = client.predict(api_name="/fingerprint")
    answer = call(app_url, {"key": key_of(tab), "change": {"sentence_a": "A queen ran home."}})
    assert set(for_gradio(answer)) <= {"selected-token"}  # nothing selected: the plot alone
    assert drawn_tokens(answer) == wordpiece().encode("A queen ran home.").tokens
    values = answer["values"]
    assert "7 tokens" in values["embed-info"]
    assert "a=A%20queen%20ran%20home." in json.loads(values["address"])["query"]
    assert tab.view.sentence_a == "A queen ran home."
    assert client.predict(api_name="/fingerprint") != before
    # each change is newer than the one before: the page draws no older figure over it
    again = call(app_url, {"key": key_of(tab), "change": {"sentence_a": "A queen ran home!"}})
    revisions = [json.loads(a["values"]["embed-plot"])["layout"]["meta"]["revision"] for a in (answer, again)]
    assert revisions[1] == revisions[0] + 1


def test_a_click_answers_the_picker_and_neighbours_for_gradio_s_components(app_url, tab):
    """A click on a point selects its token in one call: the plot is drawn by the page, and the
    picker and both neighbour tables come in the same answer, as gradio's browser code takes
    them, each by its element id."""
    client, tab = tab
    answer = call(app_url, {"key": key_of(tab), "change": {"token": 2}})
    assert tab.view.token == 2
    figure = json.loads(answer["values"]["embed-plot"])
    assert any(trace.get("name") == "selected token" for trace in figure["data"])
    rest = for_gradio(answer)
    assert "neighbours-token" in rest and "neighbours-output" in rest
    table = rest["neighbours-token"]
    assert table["headers"] == ["#", "token", "cosine"] and len(table["data"]) == tab.view.k
    assert rest["selected-token"]["value"] == 2
    # the same click again changes nothing: nothing is sent twice
    again = call(app_url, {"key": key_of(tab), "change": {"token": 2}})
    assert not set(for_gradio(again)) & {"neighbours-token", "neighbours-output"}


@pytest.mark.parametrize("sent, says", [
    ("text", "not text"), ([], "not an array"), (5, "not a number"), (True, "not true or false"),
    ({}, "carries no page key"), ({"change": {"sentence_a": "x"}}, "carries no page key"),
    ({"key": 5, "change": {"sentence_a": "x"}}, "carries no page key"),
    ({"key": "k" * 65, "change": {"sentence_a": "x"}}, "at most 64 characters"),
])
def test_a_request_without_a_valid_key_is_refused_with_a_sentence(app_url, sent, says):
    answer = call(app_url, sent)
    assert set(answer) == {"error"} and "key" in answer["error"] and says in answer["error"]


def test_a_guessed_key_reaches_no_tab(app_url, tab):
    client, tab = tab
    before = client.predict(api_name="/fingerprint")
    answer = call(app_url, {"key": secrets.token_urlsafe(24), "change": {"sentence_a": "hijacked"}})
    assert set(answer) == {"error"} and "reload the page" in answer["error"]
    assert client.predict(api_name="/fingerprint") == before


def test_opening_a_tab_is_a_direct_change_and_a_side_view_comes_drawn(app_url, tab):
    """A control tab or a main tab opened on the page: the view keeps it (links carry it), and a
    side view's drawing comes in the same answer, for gradio's components."""
    client, tab = tab
    answer = call(app_url, {"key": key_of(tab), "change": {"panel": "train"}})
    assert tab.view.panel == "train" and "panel=train" in json.loads(answer["values"]["address"])["query"]
    assert "controls" not in for_gradio(answer)  # the page shows the tab it opened
    answer = call(app_url, {"key": key_of(tab), "change": {"shown": "layernorm"}})
    assert tab.view.shown == "layernorm"
    drawn = for_gradio(answer)["layernorm-plot"]
    assert drawn["type"] == "plotly" and json.loads(drawn["plot"])["data"]


@pytest.mark.parametrize("change, says", [
    ({}, "changes some of"),
    ({"sentence_a": "x", "flips": [1]}, "nothing else"),  # a field no widget of the page sets
    ({"labels": "yes"}, "labels must be true or false, not 'yes'"),
    ({"source": "evil"}, "source must be one of random, bert, glove, upload"),
    ({"k": 10**9}, "allowed values are 0 to 50"),
    ({"groups": ["evil"]}, "groups may hold only token, position, segment, sum, output"),
    ({"frozen": "token"}, "frozen must be a list of names"),
    ({"d_model": 1.5, "tokenizer": "word"}, "d_model must be a whole number"),
    ({"step": 3}, "nothing else"),
    ({"shown": "settings"}, "shown must be one of plane"),
    ({"view": "layernorm"}, "changes some of"),  # a link's parameter name: a direct change names the field
    ({"panel": ["train"]}, "panel must be text, not list"),
    ({"panel": "admin"}, "panel"),
    ({"sentence_a": 5}, "sentence_a must be text, not int"),
    ({"token": True}, "token must be a whole number or null, not bool"),
    ({"token": "2"}, "token must be a whole number or null, not str"),
    ({"sentence_b": "w" * (MAX_TEXT + 1)}, f"{MAX_TEXT:,}"),
    ({"token": -1}, "token"),
    ({"narrow": 1}, "narrow must be true or false, not int"),
    ({"narrow": "yes"}, "narrow must be true or false, not str"),
])
def test_a_hostile_change_is_refused_with_a_sentence_and_changes_nothing(app_url, tab, change, says):
    client, tab = tab
    before = client.predict(api_name="/fingerprint")
    answer = call(app_url, {"key": key_of(tab), "change": change})
    notice = answer.get("error") or html.unescape(answer["values"]["notice"])  # the notice is escaped text
    assert says in notice
    assert client.predict(api_name="/fingerprint") == before


def test_a_phone_s_screen_redraws_the_plot_in_larger_labels_fitted_to_it_and_no_link_carries_it(app_url, tab):
    """A page that turned narrow (a phone, or a window made narrow) says so; its labels are 12 px,
    fitted to a phone's plot, and turned wide again they are 10 px. The address never says it."""
    client, tab = tab

    def label_size(answer: dict) -> float:  # the size the page writes the figure's labels in
        return json.loads(answer["values"]["embed-plot"])["layout"]["meta"]["labels"]["size"]

    narrow = call(app_url, {"key": key_of(tab), "change": {"narrow": True}})
    assert label_size(narrow) == 12 and tab.view.narrow is True
    assert "narrow" not in json.loads(narrow["values"]["address"])["query"]
    typed = call(app_url, {"key": key_of(tab), "change": {"sentence_a": "A phone's king spoke."}})
    assert label_size(typed) == 12  # typing keeps the screen
    wide = call(app_url, {"key": key_of(tab), "change": {"narrow": False}})
    assert label_size(wide) == 10 and tab.view.narrow is False


def test_the_page_s_screen_is_read_from_what_its_script_says_and_nothing_else():
    from ui.tourpanel import narrow

    assert narrow('{"narrow": true}') is True
    assert narrow('{"narrow":true}') is True and narrow('{"narrow":false}') is False
    for hostile in (None, "", "{", "[]", '{"narrow": 1}', '{"narrow": "true"}', 5, '"x"', "{}" * 10_000,
                    "[" * 100_000, b'{"narrow": true}', '{"narrow": true, "x": "' + "y" * 100 + '"}'):
        assert narrow(hostile) is False


@pytest.mark.parametrize("body", [b"{not json", b'{"key": "k", "change": {"token": NaN}}',
                                  b'{"key": "\\ud800", "change": {}}', b'{"key": "k"', b"\xff\xfe", b""])
def test_a_body_that_is_not_json_says_so_and_what_an_update_is(app_url, body):
    """Not "no valid page key; reload the page": what was wrong (the parser's words), and what is allowed."""
    answer = httpx.post(f"{app_url}explorer/live", content=body, timeout=60)
    said = answer.json()["error"]
    assert answer.status_code == 200 and said.startswith("This update is not valid JSON (")
    assert "An update is a JSON object of the page's key and its change, in UTF-8, without NaN or Infinity" in said


def test_a_body_that_is_too_large_is_refused_with_a_sentence(app_url):
    from ui.direct import MAX_BODY

    answer = httpx.post(f"{app_url}explorer/live", content=b"x" * (MAX_BODY + 1), timeout=60)
    assert answer.status_code == 413 and f"{MAX_BODY:,} bytes" in answer.json()["error"]
    assert httpx.get(f"{app_url}explorer/live", timeout=60).status_code == 405


def test_past_its_address_s_share_a_call_is_refused_at_once_and_another_address_still_waits(tab):
    """The route asks the process's one account (ui/visitors.py): an address with its share of
    work waiting is refused with a sentence; another address's call is taken (it waits its turn)."""
    import app
    from ui.direct import Direct
    from ui.visitors import Visitors

    client, tab = tab
    other = new_tab(client)
    direct = Direct(app.demo.explorer, visitors=Visitors(address_work=1.5))

    async def calls():
        async with direct.turns.held():  # every turn taken: calls wait
            waits = asyncio.create_task(direct.answer({"key": key_of(tab), "change": {"sentence_a": "first"}},
                                                      STRANGER))
            while len(direct.turns) < 1:
                await asyncio.sleep(0.01)
            refused = await direct.answer({"key": key_of(other), "change": {"sentence_a": "late"}}, STRANGER)
            student = asyncio.create_task(direct.answer({"key": key_of(other), "change": {"sentence_a": "mine"}},
                                                        STUDENT))
            while len(direct.turns) < 2:
                await asyncio.sleep(0.01)
        return refused, await waits, await student

    refused, first, student = run_async(calls)
    assert "Your address already has" in refused["error"] and "Try again in a few seconds" in refused["error"]
    assert "values" in first and "values" in student and other.view.sentence_a == "mine"


def test_a_change_made_while_the_tab_s_call_waits_rides_on_that_call(tab):
    """A key typed while the tab's call waits for its turn is merged into it and answered at
    once; the waiting call, when its turn comes, computes and answers both changes."""
    import app
    from ui.direct import Direct

    _client, tab = tab
    direct = Direct(app.demo.explorer, slots=1)

    async def calls():
        await direct.answer({"key": key_of(tab), "change": {"sentence_a": "warm"}})  # makes the turns
        async with direct.turns.held():  # every turn taken: the first call waits
            first = asyncio.create_task(direct.answer({"key": key_of(tab), "change": {"sentence_a": "a queen"}}))
            while len(direct.turns) < 1:
                await asyncio.sleep(0.01)
            # answered at once: neither waits for a turn (a bound, not a time: failing, not hanging, if one did)
            typed = await asyncio.wait_for(direct.answer({"key": key_of(tab), "change": {"sentence_a": "a queen ran"}}),
                                           60)
            turned = await asyncio.wait_for(direct.answer({"key": key_of(tab), "change": {"narrow": True}}), 60)
            assert not first.done()
        return await first, typed, turned

    first, typed, turned = run_async(calls)
    assert typed == turned == {"merged": True}
    assert drawn_tokens(first) == wordpiece().encode("a queen ran").tokens
    assert (tab.view.sentence_a, tab.view.narrow) == ("a queen ran", True)


def test_a_change_made_while_the_tab_s_call_computes_waits_for_a_turn_of_its_own(tab, monkeypatch):
    """What the computing call reads is settled when its turn begins: a later change is not lost
    in it, but answered by a call of its own."""
    import threading

    import app
    from ui.direct import Direct

    _client, tab = tab
    direct = Direct(app.demo.explorer, slots=1)
    computing, release = threading.Event(), threading.Event()
    apply = direct.apply

    def held(*args):
        computing.set()
        assert release.wait(60)
        return apply(*args)

    async def calls():
        monkeypatch.setattr(direct, "apply", held)
        first = asyncio.create_task(direct.answer({"key": key_of(tab), "change": {"sentence_a": "a queen"}}))
        while not computing.is_set():
            await asyncio.sleep(0.01)
        monkeypatch.setattr(direct, "apply", apply)
        second = asyncio.create_task(direct.answer({"key": key_of(tab), "change": {"sentence_a": "a queen ran"}}))
        while len(direct.turns) < 1:  # the second waits while the first computes
            await asyncio.sleep(0.01)
        release.set()
        return await first, await second

    first, second = run_async(calls)
    assert drawn_tokens(first) == wordpiece().encode("a queen").tokens
    assert drawn_tokens(second) == wordpiece().encode("a queen ran").tokens
    assert tab.view.sentence_a == "a queen ran"


def test_a_tour_step_or_an_example_is_never_merged_and_the_older_call_waiting_gives_way(tab):
    import app
    from ui.assets import EXAMPLES
    from ui.direct import Direct

    _client, tab = tab
    direct = Direct(app.demo.explorer, slots=1)

    async def calls():
        await direct.answer({"key": key_of(tab), "change": {"sentence_a": "warm"}})  # makes the turns
        async with direct.turns.held():  # every turn taken: both calls wait
            typed = asyncio.create_task(direct.answer({"key": key_of(tab), "change": {"sentence_a": "typed"}}))
            example = asyncio.create_task(direct.answer({"key": key_of(tab), "change": {"example": 1}}))
            while len(direct.turns) < 2:
                await asyncio.sleep(0.01)
        return await typed, await example

    typed, example = run_async(calls)
    assert typed == {"skipped": True}
    assert (tab.view.sentence_a, tab.view.sentence_b) == tuple(EXAMPLES[1]) and "values" in example


def test_text_that_tokenizes_as_before_answers_the_address_and_redraws_nothing(app_url, tab):
    client, tab = tab  # its sentence A is "The king spoke."
    answer = call(app_url, {"key": key_of(tab), "change": {"sentence_a": "The king spoke. "}})
    assert "embed-plot" not in answer["values"] and "embed-info" not in answer["values"]
    assert json.loads(answer["values"]["address"])["query"].startswith("a=The%20king%20spoke.%20")
    assert tab.view.sentence_a == "The king spoke. "
    answer = call(app_url, {"key": key_of(tab), "change": {"sentence_a": "The king spoke. A"}})
    assert drawn_tokens(answer) == wordpiece().encode("The king spoke. A").tokens


def test_an_example_pair_writes_both_sentence_boxes_and_draws_them(app_url, tab):
    from ui.assets import EXAMPLES

    client, tab = tab
    answer = call(app_url, {"key": key_of(tab), "change": {"example": 2}})
    assert (tab.view.sentence_a, tab.view.sentence_b) == tuple(EXAMPLES[2])
    assert for_gradio(answer)["sentence-a"] == EXAMPLES[2][0]  # the boxes do not show it yet
    assert for_gradio(answer)["sentence-b"] == EXAMPLES[2][1]
    assert drawn_tokens(answer) == wordpiece().encode(*EXAMPLES[2]).tokens


def test_next_and_previous_go_direct_and_restart_the_tables(app_url, tab):
    from core.view import tour

    client, tab = tab
    answer = call(app_url, {"key": key_of(tab), "change": {"move": 1}})
    assert tab.view.step == 1 and tab.view.sentence_a == tour.STEPS[0].view.sentence_a
    assert "Step 1 of" in for_gradio(answer)["tour-text"]
    call(app_url, {"key": key_of(tab), "change": {"move": 2}})  # two presses made while one was in flight
    assert tab.view.step == 3
    call(app_url, {"key": key_of(tab), "change": {"move": -7}})  # never before the first step
    assert tab.view.step == 1


@pytest.mark.parametrize("change, says", [
    ({"example": 99}, "example must be from 0"), ({"example": -1}, "example must be from 0"),
    ({"example": "2"}, "example must be a whole number, not str"),
    ({"move": 0}, "move is 0; it is a number of the tour's steps to move, from -7 to 7, other than 0."),
    ({"move": 1000}, "move is 1,000; it is a number of the tour's steps to move, from -7 to 7, other than 0."),
    ({"move": 1.0}, "move must be a whole number, not float"),
])
def test_a_hostile_example_or_move_is_refused_and_changes_nothing(app_url, tab, change, says):
    client, tab = tab
    before = client.predict(api_name="/fingerprint")
    answer = call(app_url, {"key": key_of(tab), "change": change})
    assert set(answer) == {"error"} and says in answer["error"]
    assert client.predict(api_name="/fingerprint") == before


def test_a_keystroke_after_a_quick_one_is_computed_on_the_event_loop_and_anything_else_on_a_thread(tab):
    """A thread costs a keystroke more CPU than the hand-over is worth, so a keystroke as quick
    as its tab's last one is computed where it arrived; a call that may take long never is."""
    import threading

    import app
    from ui import events
    from ui.direct import INLINE_GROWTH, INLINE_SECONDS, Direct

    _client, tab = tab
    direct = Direct(app.demo.explorer)
    threads = []
    apply = direct.apply

    def noted(*args):
        threads.append(threading.current_thread())
        return apply(*args)

    direct.apply = noted

    async def calls(*changes):
        loop = threading.current_thread()
        for change in changes:
            answer = await direct.answer({"key": key_of(tab), "change": change})
            assert "values" in answer, answer
        return loop

    channel = events.CHANNELS.of(tab)
    channel.computed = float("inf")  # nothing computed yet: its cost is unknown
    loop = run_async(lambda: calls({"sentence_a": "The king"}, {"sentence_a": "The king s"},
                                   {"sentence_b": "A queen"}, {"token": 1},
                                   {"sentence_a": "The king s" + " pasted" * (INLINE_GROWTH // 7 + 1)}))
    assert [thread is loop for thread in threads] == [False, True, True, False, False]
    assert 0 < channel.computed <= INLINE_SECONDS
    assert not Direct.quick(tab, channel, {"panel": "tour"})
    assert not Direct.quick(tab, channel, {"sentence_a": "x", "narrow": True})
    channel.computed = 2 * INLINE_SECONDS  # the last one was slow: so may this one be
    assert not Direct.quick(tab, channel, {"sentence_a": "The king"})


def test_a_keystroke_never_stops_the_server_while_another_thread_holds_its_tab(app_url, tab):
    """A keystroke that would be computed on the event loop, for a tab another thread holds (a
    table change, a training's step), waits on a worker thread: the server answers others."""
    import threading

    _client, tab = tab
    call(app_url, {"key": key_of(tab), "change": {"sentence_a": "The king"}})  # quick: the next may go on the loop
    held, release, answered = threading.Event(), threading.Event(), {}

    def hold() -> None:
        with tab.lock:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(30)
    typist = threading.Thread(target=lambda: answered.update(
        call(app_url, {"key": key_of(tab), "change": {"sentence_a": "The king s"}})))
    typist.start()
    try:
        typist.join(0.5)
        assert not answered  # it waits for the tab
        assert httpx.get(f"{app_url}config", timeout=10).status_code == 200  # and the server serves others
    finally:
        release.set()
        holder.join(30)
        typist.join(60)
    assert "values" in answered and tab.view.sentence_a == "The king s"


def test_an_answer_names_each_value_by_its_element_id_and_every_output_has_its_own():
    """One way out: the page applies an answer by element id; an output without an id of its own
    (or sharing one) is refused where the hand-over is built, not discovered as a value never drawn."""
    import gradio as gr

    import app
    from ui.plane import hand_over_js

    page = app.demo.explorer
    script = hand_over_js(page.everything)
    assert all(f'"{component.elem_id}"' in script for component in page.everything)
    for outputs in ([page.plot, gr.HTML()], [page.plot, gr.HTML(elem_id="embed-plot")]):
        with pytest.raises(ValueError, match="element id of its own"):
            hand_over_js(outputs)


def test_flip_and_the_listing_s_layer_are_actions_the_route_computes(app_url, tab):
    """The page's Flip and the listing's layer go over its route: the server computes the change
    (a flip needs a selected token; two presses cancel), and an action is sent as true or not at all."""
    from core.view.state import DOCUMENT_SENTENCE, LISTING_SETTINGS

    client, tab = tab
    refused = call(app_url, {"key": key_of(tab), "change": {"flip": True}})
    assert "Select a token first" in html.unescape(refused["values"]["notice"]) and tab.view.flips == frozenset()
    call(app_url, {"key": key_of(tab), "change": {"token": 2}})
    call(app_url, {"key": key_of(tab), "change": {"flip": True}})
    assert tab.view.flips == {2}
    call(app_url, {"key": key_of(tab), "change": {"flip": False}})  # two presses, merged by the page: no flip
    assert tab.view.flips == {2}
    call(app_url, {"key": key_of(tab), "change": {"flip": True}})
    assert tab.view.flips == frozenset()
    before = client.predict(api_name="/fingerprint")
    answer = call(app_url, {"key": key_of(tab), "change": {"listing": False}})
    assert "sent as true, or not at all" in answer["error"] and client.predict(api_name="/fingerprint") == before
    answer = call(app_url, {"key": key_of(tab), "change": {"listing": True}})
    assert tab.view.source == "random" and tab.view.sentence_a == DOCUMENT_SENTENCE and tab.view.sentence_b == ""
    assert tab.view.settings == LISTING_SETTINGS
    assert answer["values"]["sentence-a"] == DOCUMENT_SENTENCE  # the box does not show it yet


def test_the_link_and_a_refit_are_work_the_route_answers_by_element_id(app_url, tab):
    """The page's Link and Refit go over its route: the link is the page's own address and the
    view's query, and a refit's result is said in the notice; a hostile call is refused with a
    sentence and changes nothing."""
    client, tab = tab
    answer = call(app_url, {"key": key_of(tab), "change": {"link": "https://class.example/explorer/"}})
    link = answer["values"]["share-link"]
    assert link.startswith("https://class.example/explorer/?") and "The%20king%20spoke." in link
    assert "share-notes" in answer["values"] and "share-query" not in answer["values"]
    before = client.predict(api_name="/fingerprint")
    for change, says in (({"link": 5}, "link must be the page's address"), ({"link": "x" * 3000}, "at most 2,048"),
                         ({"refit": False}, "sent as true, or not at all")):
        refused = call(app_url, {"key": key_of(tab), "change": change})
        assert says in refused["error"] and client.predict(api_name="/fingerprint") == before
    said = call(app_url, {"key": key_of(tab), "change": {"refit": True}})["values"]
    assert "refits on every change already" in html.unescape(said["notice"]) and "embed-plot" not in said
    call(app_url, {"key": key_of(tab), "change": {"basis": "frozen"}})
    frozen = tab.session.frozen_basis
    answer = call(app_url, {"key": key_of(tab), "change": {"sentence_a": "A queen ran.", "refit": True}})
    assert tab.view.sentence_a == "A queen ran." and tab.session.frozen_basis is not frozen
    assert "ℹ️ The frozen plane now fits the current sentence." in html.unescape(answer["values"]["notice"])
    assert "embed-plot" in answer["values"]


def test_the_token_list_is_filled_over_the_route_with_the_tab_s_tokens_now(app_url, tab):
    """The picker opened on the page asks the route for its list: the tab's tokens as they are
    now, and the one selected, as gradio's browser code takes a dropdown's update."""
    client, tab = tab
    call(app_url, {"key": key_of(tab), "change": {"sentence_a": "the big cat"}})
    call(app_url, {"key": key_of(tab), "change": {"token": 3}})
    picker = call(app_url, {"key": key_of(tab), "change": {"picker": True}})["values"]["selected-token"]
    assert [label for label, _ in picker["choices"]] == ["none", "0: [CLS]", "1: the", "2: big", "3: cat", "4: [SEP]"]
    assert picker["value"] == 3
    assert "must be true" in call(app_url, {"key": key_of(tab), "change": {"picker": 1}})["error"]


def test_the_page_s_exports_are_links_on_its_own_route_that_last_two_minutes(app_url, tab):
    """Export over the route answers links, one a file, on the page's own route: each serves its
    file while it lasts; a later export revokes them, and an expired, revoked or guessed link is
    answered 404 with a sentence."""
    import re

    import app
    from tests.clocks import Clock
    from ui.downloads import LIFETIME

    client, tab = tab
    downloads = app.demo.explorer.downloads
    clock, kept = Clock(), downloads.clock
    downloads.clock = clock
    try:
        answer = call(app_url, {"key": key_of(tab), "change": {"sentence_a": "The volcano spoke.", "export": True}})
        links = re.findall(r'href="([^"]+)"', answer["values"]["export-links"])
        assert sorted(link.rsplit(".", 1)[-1] for link in re.findall(r'download="([^"]+)"',
                                                                     answer["values"]["export-links"])) == [
            "csv", "html", "safetensors"]
        got = {link: httpx.get(f"{app_url}{link}", timeout=30) for link in links}
        assert all(response.status_code == 200 and response.content for response in got.values())
        assert any("volcano" in response.text for link, response in got.items() if "csv" in
                   response.headers["content-disposition"])
        again = call(app_url, {"key": key_of(tab), "change": {"export": True}})
        fresh = re.findall(r'href="([^"]+)"', again["values"]["export-links"])
        for gone in (*links, "explorer/file/guessed"):
            response = httpx.get(f"{app_url}{gone}", timeout=30)
            assert response.status_code == 404 and "Export again" in response.text
        assert httpx.get(f"{app_url}{fresh[0]}", timeout=30).status_code == 200
        clock.now += LIFETIME
        assert httpx.get(f"{app_url}{fresh[0]}", timeout=30).status_code == 404
    finally:
        downloads.clock = kept


def lines_of(app_url: str, sent) -> list[dict]:
    """A streamed answer's lines, each one step of what the page writes."""
    with httpx.stream("POST", f"{app_url}explorer/live", json=sent, timeout=120) as response:
        assert response.status_code == 200 and response.headers["content-type"] == "application/x-ndjson"
        return [json.loads(line) for line in response.iter_lines() if line.strip()]


def test_training_streams_its_curve_over_the_route_a_step_a_line_and_stops_when_the_page_goes(app_url, tab):
    """Train over the page's route: one line a step, each `{"values": …}` by element id, from
    "Training…" to the trained summary and plot; a training the page leaves is cancelled, its
    result never adopted."""
    from core.view.options import LIMITS
    from tests.waiting import eventually

    client, tab = tab
    lines = lines_of(app_url, {"key": key_of(tab), "change": {"train": {"steps": 5, "corpus": "builtin"}}})
    assert lines[0]["values"]["train-summary"] == "Training 5 steps…"
    assert "Trained 5 steps" in lines[-1]["values"]["train-summary"] and "embed-plot" in lines[-1]["values"]
    assert "before training" in lines[-1]["values"]["embed-plot"] and tab.session.training.steps == 5
    refused = lines_of(app_url, {"key": key_of(tab), "change": {"train": {"steps": 0, "corpus": "builtin"}}})
    assert "steps" in html.unescape(refused[-1]["values"]["notice"]) and tab.session.training.steps == 5
    alone = call(app_url, {"key": key_of(tab), "change": {"train": {"steps": 5}, "sentence_a": "x"}})
    assert "sent alone" in alone["error"]

    call(app_url, {"key": key_of(tab), "change": {"reset": True}})
    longest = LIMITS["steps"][1]
    with httpx.stream("POST", f"{app_url}explorer/live", timeout=120,
                      json={"key": key_of(tab), "change": {"train": {"steps": longest, "corpus": "builtin"}}}) as going:
        first = json.loads(next(going.iter_lines()))
        assert first["values"]["train-summary"] == f"Training {longest:,} steps…" and tab.job == "training"
    assert eventually(lambda: tab.job is None, 60)  # the training the page left is cancelled
    assert tab.session.training is None


def test_a_page_opens_over_the_route_and_its_upload_reaches_the_tab_it_opened(app_url):
    """A page's first call opens it: the view its link describes, and its key; its gradio session
    names the tab, so an upload (through gradio's queue) reaches the same one. A hostile opening
    is refused with a sentence."""
    import numpy as np
    from gradio_client import Client, handle_file

    from ui.events import TABS

    client = Client(app_url, verbose=False)
    answer = call(app_url, {"open": {"query": "a=the%20volcano&panel=tables", "narrow": False,
                                     "session": client.session_hash}})
    tab = TABS.get(client.session_hash)
    assert tab.view.sentence_a == "the volcano" and tab.view.panel == "tables"
    assert json.loads(answer["values"]["address"])["key"] == key_of(tab) and "embed-plot" in answer["values"]
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"opening-{secrets.token_hex(4)}.npy")
    np.save(path, np.random.default_rng(1).standard_normal((30, 4)).astype(np.float32))
    try:
        client.predict(handle_file(path), api_name="/upload")
    finally:
        os.remove(path)
    assert TABS.get(client.session_hash) is tab and tab.view.source == "upload"
    for sent, says in (({"open": {"query": ""}}, "names its session"), ({"open": "x"}, "names its session"),
                       ({"open": {"session": "s" * 65}}, "at most 64"),
                       ({"open": {"session": "s", "query": 5}}, "query is text")):
        assert says in call(app_url, sent)["error"]
    too_long = call(app_url, {"open": {"query": "a=" + "x" * 40_000, "session": secrets.token_hex(8)}})
    assert "could not be read" in html.unescape(too_long["values"]["notice"])


def test_a_call_given_a_lane_of_its_own_takes_it_even_when_no_call_waits_there(tab):
    """A lane with no call waiting is empty (and so falsy): a call given it must still take it, not
    the keystrokes' lane, where a newer call of its page would skip it (a class's answer, a change
    of the tables)."""
    import app
    from ui.channels import Channel
    from ui.direct import Direct
    from ui.visitors import Turns, Visitors

    _, tab = tab
    visitors = Visitors()
    direct = Direct(app.demo.explorer, visitors=visitors)
    own = Turns(visitors, 1)
    channel = Channel(session=None)
    answer = run_async(lambda: direct.turn(tab, lambda: {"done": True}, channel=channel, lane=own, address=STRANGER))
    assert answer == {"done": True}
    assert channel.latest == 0 and id(own) in direct._threads  # its own lane's: the keystrokes' counted nothing
