"""The page's route (ui/route.py, `Live`), called as the page's script calls it: one POST to the
app's `/explorer/live`, the tab named by the key the server issued when the page opened.

A keystroke changes the tab's view and answers the figure; a click on a point also answers the
picker and the neighbour tables, for the page to hand to gradio's components; keystrokes made
while the tab's call waits ride on it, and an older call still waiting gives way to a newer one;
a quick keystroke is computed where it arrived; anything hostile is refused with a sentence and
changes nothing; the route's bounds hold.
"""

from __future__ import annotations

import asyncio
import html
import json
import math
import secrets
from types import SimpleNamespace

import httpx
import pytest

from core.tables.presets import wordpiece
from core.view.options import MAX_TEXT
from tests.appapi import Page, outputs, run_async, tokens
from tests.lanes import all_taken

STRANGER, STUDENT = "203.0.113.7", "198.51.100.20"  # documentation addresses
KING = "a=The%20king%20spoke.&b="  # the page the tests open: sentence A "The king spoke.", no sentence B


def call(app_url: str, sent) -> dict:
    """What the page's script gets back for `sent`."""
    response = httpx.post(f"{app_url}explorer/live", json=sent, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def said(answer: dict) -> str:
    """What the page tells the person of a call: the sentence of a call refused as a whole, or
    the notice of a refused setting, as the text they read."""
    if "error" in answer:
        return answer["error"]
    return html.unescape(answer["values"].get("notice", ""))


def for_gradio(values: dict) -> dict:
    """An answer's values for gradio's components, by element id: all but those the page's script
    writes itself (`Page.written`), and the token table the test client draws from the plot."""
    import app

    written = {component.elem_id for component in app.demo.explorer.written}
    return {elem_id: value for elem_id, value in values.items() if elem_id not in written | {"token-table"}}


def drawn_tokens(values: dict) -> tuple[str, ...]:
    return tuple(tokens(values["token-table"]))


@pytest.fixture()
def opened(app_url) -> Page:
    """A page opened at sentence A "The king spoke." and no sentence B."""
    return Page(app_url, KING)


def own_live(page: Page):
    """A route of its own on the launched app's page, with lines of its own (a test may hold
    them), that reaches `page`'s tab by its key: (the route, the tab, its channel)."""
    import app
    from ui.route import Live

    site = app.demo.explorer
    live, tab = Live(site), page.tab
    live.channels[tab] = site.live.channels[tab]
    return live, tab, live.channels[tab]


async def answer_of(live, page: Page, change: dict, address: str | None = None) -> dict:
    """The route's answer to `change` from `page`, as the page reads it; `address`: the caller's."""
    request = None if address is None else SimpleNamespace(client=SimpleNamespace(host=address))
    body = json.dumps({"key": page.key, "change": change}).encode()
    response = await live.guarded(lambda: live.answer(body, request))
    return json.loads(response.body)


async def until_waiting(turns, count: int) -> None:
    while len(turns.waiting()) < count:
        await asyncio.sleep(0.01)


# --- a keystroke, a click, a tab -------------------------------------------------------------


def test_a_keystroke_changes_the_tab_and_answers_its_figure_summary_and_address(opened):
    before = opened.fingerprint()
    out = opened.send(sentence_a="A queen ran home.")
    assert set(for_gradio(out)) <= {"selected-token"}  # nothing selected: the plot alone
    assert drawn_tokens(out) == wordpiece().encode("A queen ran home.").tokens
    assert "7 tokens" in out["embed-info"]
    assert "a=A%20queen%20ran%20home." in json.loads(out["address"])["query"]
    assert opened.tab.view.sentence_a == "A queen ran home."
    assert opened.fingerprint() != before
    # each change is newer than the one before: the page draws no older figure over it
    again = opened.post({"key": opened.key, "change": {"sentence_a": "A queen ran home!"}})["values"]
    first = opened.post({"key": opened.key, "change": {"sentence_a": "A queen ran."}})["values"]
    revisions = [json.loads(values["embed-plot"])["layout"]["meta"]["revision"] for values in (again, first)]
    assert revisions[1] == revisions[0] + 1


def test_a_click_answers_the_picker_and_neighbours_for_gradio_s_components(opened):
    """A click on a point selects its token in one call: the plot is drawn by the page, and the
    picker and both neighbour tables come in the same answer, as gradio's browser code takes
    them, each by its element id."""
    out = opened.send(token=2)
    assert opened.tab.view.token == 2
    figure = json.loads(out["embed-plot"]["plot"])
    assert any(trace.get("name") == "selected token" for trace in figure["data"])
    rest = for_gradio(out)
    assert "neighbours-token" in rest and "neighbours-output" in rest
    table = rest["neighbours-token"]
    assert table["headers"] == ["#", "token", "cosine"] and len(table["data"]) == opened.tab.view.k
    assert rest["selected-token"]["value"] == 2
    # the same click again changes nothing: nothing is sent twice
    again = opened.send(token=2)
    assert not set(for_gradio(again)) & {"neighbours-token", "neighbours-output"}


def test_opening_a_tab_is_a_change_of_the_view_and_a_side_view_comes_drawn(opened):
    """A control tab or a main tab opened on the page: the view keeps it (links carry it), and a
    side view's drawing comes in the same answer, for the page's script to draw."""
    out = opened.send(panel="train")
    assert opened.tab.view.panel == "train" and "panel=train" in json.loads(out["address"])["query"]
    assert "controls" not in for_gradio(out)  # the page shows the tab it opened
    out = opened.send(shown="layernorm")
    assert opened.tab.view.shown == "layernorm"
    assert json.loads(out["layernorm-plot"]["plot"])["data"]


def test_text_that_tokenizes_as_before_answers_the_address_and_redraws_nothing(opened):
    out = opened.send(sentence_a="The king spoke. ")
    assert "embed-plot" not in out and "embed-info" not in out
    assert json.loads(out["address"])["query"].startswith("a=The%20king%20spoke.%20")
    assert opened.tab.view.sentence_a == "The king spoke. "
    out = opened.send(sentence_a="The king spoke. A")
    assert drawn_tokens(out) == wordpiece().encode("The king spoke. A").tokens


def test_a_phone_s_screen_redraws_the_plot_in_larger_labels_fitted_to_it_and_no_link_carries_it(opened):
    """A page that turned narrow (a phone, or a window made narrow) says so; its labels are 12 px,
    fitted to a phone's plot, and turned wide again they are 10 px. The address never says it."""
    def label_size(out) -> float:  # the size the page writes the figure's labels in
        return json.loads(out["embed-plot"]["plot"])["layout"]["meta"]["labels"]["size"]

    narrow = opened.send(narrow=True)
    assert label_size(narrow) == 12 and opened.tab.view.narrow is True
    assert "narrow" not in json.loads(narrow["address"])["query"]
    typed = opened.send(sentence_a="A phone's king spoke.")
    assert label_size(typed) == 12  # typing keeps the screen
    wide = opened.send(narrow=False)
    assert label_size(wide) == 10 and opened.tab.view.narrow is False


# --- what is refused -------------------------------------------------------------------------


@pytest.mark.parametrize("sent, says", [
    ("text", "not text"), ([], "not an array"), (5, "not a number"), (True, "not true or false"),
    ({}, "carries no valid page key"), ({"change": {"sentence_a": "x"}}, "carries no valid page key"),
    ({"key": 5, "change": {"sentence_a": "x"}}, "carries no valid page key"),
    ({"key": "k" * 65, "change": {"sentence_a": "x"}}, "at most 64 characters"),
])
def test_a_request_without_a_valid_key_is_refused_with_a_sentence(app_url, sent, says):
    answer = call(app_url, sent)
    assert set(answer) == {"error"} and "key" in answer["error"] and says in answer["error"]


def test_a_guessed_key_reaches_no_tab(app_url, opened):
    before = opened.fingerprint()
    answer = call(app_url, {"key": secrets.token_urlsafe(24), "change": {"sentence_a": "hijacked"}})
    assert set(answer) == {"error"} and "reload the page" in answer["error"]
    assert opened.fingerprint() == before


@pytest.mark.parametrize("change, says", [
    ({}, "An update's change is a JSON object naming what changed"),
    ({"sentence_a": "x", "flips": [1]}, "'flips' is none of them"),  # a field no widget of the page sets
    ({"labels": "yes"}, "labels must be true or false, not 'yes'"),
    ({"source": "evil"}, "source must be one of random, bert, glove, upload"),
    ({"k": 10**9}, "allowed values are 0 to 50"),
    ({"groups": ["evil"]}, "groups may hold only token, position, segment, sum, output"),
    ({"frozen": "token"}, "frozen must be a list of names"),
    ({"d_model": 1.5, "tokenizer": "word"}, "d_model must be a whole number"),
    ({"step": 3}, "'step' is none of them"),  # a tour step is shown by `move`, never set alone
    ({"shown": "settings"}, "shown must be one of plane"),
    ({"view": "layernorm"}, "'view' is none of them"),  # a link's parameter name: a change names the field
    ({"panel": ["train"]}, "panel must be one of tour, view, tables, train, not ['train']"),
    ({"panel": "admin"}, "panel must be one of tour, view, tables, train, not 'admin'"),
    ({"sentence_a": 5}, "Sentence A must be text, not int"),
    ({"token": True}, "token must be a whole number from 0 to 2,047, not True"),
    ({"token": "two"}, "token must be a whole number from 0 to 2,047, not 'two'"),
    ({"token": [2]}, "token must be a whole number from 0 to 2,047, not [2]"),
    ({"sentence_b": "w" * (MAX_TEXT + 1)}, f"Sentence B has {MAX_TEXT + 1:,} characters; at most {MAX_TEXT:,}"),
    ({"token": -1}, "token is -1; allowed values are 0 to 2,047"),
    ({"narrow": 1}, "narrow must be true or false, not 1"),
    ({"narrow": "yes"}, "narrow must be true or false, not 'yes'"),
    ({"flip": True, "reset": True}, "two actions were sent together"),
    ({"example": 99}, "example is a whole number from 0 to"), ({"example": -1}, "example is a whole number from 0 to"),
    ({"example": "2"}, "example is a whole number from 0 to"),
    ({"move": 0}, "move is a whole number from -8 to 8, other than 0, not 0."),
    ({"move": 1000}, "move is a whole number from -8 to 8, other than 0, not 1000."),
    ({"move": 1.0}, "move is a whole number from -8 to 8, other than 0, not 1.0."),
    ({"move": True}, "move is a whole number from -8 to 8, other than 0, not True."),
    # the step picker: a whole step, 1 to 8, and nothing else
    ({"go": 0}, "go is a whole number from 1 to 8, not 0."),
    ({"go": 9}, "go is a whole number from 1 to 8, not 9."),
    ({"go": -1}, "go is a whole number from 1 to 8, not -1."),
    ({"go": 3.0}, "go is a whole number from 1 to 8, not 3.0."),
    ({"go": "3"}, "go is a whole number from 1 to 8, not '3'."),
    ({"go": True}, "go is a whole number from 1 to 8, not True."),
    ({"go": None}, "go is a whole number from 1 to 8, not None."),
    ({"go": 10**30}, "go is a whole number from 1 to 8"),
    ({"go": 2, "move": 1}, "two actions were sent together"),
    ({"back": 5}, "The page's address could not be read"),
])
def test_a_hostile_change_is_refused_with_a_sentence_and_changes_nothing(opened, change, says):
    before = opened.fingerprint()
    answer = opened.post({"key": opened.key, "change": change})
    assert says in said(answer)
    assert opened.fingerprint() == before


def test_a_refused_setting_puts_its_widget_back_and_says_why(opened):
    """A refusal of a setting is the notice and the widgets the person set put back to what the
    view holds; nothing else is drawn."""
    values = opened.post({"key": opened.key, "change": {"d_model": 4096}})["values"]
    assert set(values) == {"d-model", "notice"} and values["d-model"] == 32
    assert "d_model is 4,096; allowed values are 1 to 1,024." in html.unescape(values["notice"])


def test_the_page_s_screen_is_what_its_opening_says_and_nothing_else(app_url):
    """A page opening says whether its screen is narrow: true is narrow, anything else is not."""
    from core.serving.tabs import TABS

    for hostile, narrow in ((True, True), (False, False), (1, False), ("true", False), (None, False), ([], False),
                            ({"narrow": True}, False), ("[" * 10_000, False)):
        answer = call(app_url, {"open": {"query": "", "narrow": hostile}})
        key = json.loads(answer["values"]["address"])["key"]
        assert TABS.kept(key).view.narrow is narrow, hostile


@pytest.mark.parametrize("body", [b"{not json", b'{"key": "k", "change": {"token": NaN}}',
                                  b'{"key": "\\ud800", "change": {}}', b'{"key": "k"', b"\xff\xfe", b""])
def test_a_body_that_is_not_json_says_so_and_what_an_update_is(app_url, body):
    """Not "no valid page key; reload the page": what was wrong (the parser's words), and what is allowed."""
    answer = httpx.post(f"{app_url}explorer/live", content=body, timeout=60)
    text = answer.json()["error"]
    assert answer.status_code == 200 and text.startswith("This update is not valid JSON (")
    assert "An update is a JSON object of the page's key and its change, in UTF-8, without NaN or Infinity" in text


def test_a_body_that_is_too_large_is_refused_with_a_sentence(app_url):
    from ui.route import MAX_BODY

    answer = httpx.post(f"{app_url}explorer/live", content=b"x" * (MAX_BODY + 1), timeout=60)
    assert answer.status_code == 413 and f"{MAX_BODY:,} bytes" in answer.json()["error"]
    assert httpx.get(f"{app_url}explorer/live", timeout=60).status_code == 405


# --- the lines: bounds, merging, skipping, the quick path ---------------------------------------


def test_past_its_address_s_share_a_call_is_refused_at_once_and_another_address_still_waits(app_url, opened):
    """The route asks the process's one account (ui/admission.py): an address with its share of
    work waiting is refused with a sentence; another address's call is taken (it waits its turn)."""
    from ui.admission import Turns, Visitors

    other = Page(app_url)
    live, _, _ = own_live(opened)
    live.channels[other.tab] = own_live(other)[2]
    visitors = Visitors(address_work=1.5)
    live.lanes = {name: Turns(visitors, turns.slots) for name, turns in live.lanes.items()}
    keys = live.lanes["keys"]

    async def calls():
        async with all_taken(keys):  # every turn taken: calls wait
            waits = asyncio.create_task(answer_of(live, opened, {"sentence_a": "first"}, STRANGER))
            await until_waiting(keys, 1)
            refused = await answer_of(live, other, {"sentence_a": "late"}, STRANGER)
            student = asyncio.create_task(answer_of(live, other, {"sentence_a": "mine"}, STUDENT))
            await until_waiting(keys, 2)
        return refused, await waits, await student

    refused, first, student = run_async(calls)
    assert "Your address already has" in refused["error"] and "Try again in a few seconds" in refused["error"]
    assert "values" in first and "values" in student and other.tab.view.sentence_a == "mine"


def test_a_page_with_its_share_of_calls_waiting_is_refused_with_when_to_try_again_and_the_older_give_way(opened):
    """A page may have `per_tab` calls waiting, however it sends them; past that a call is refused
    at once (429, with Retry-After), and of those waiting on the keystrokes' line only the newest is
    computed: the older give way to it."""
    from ui.admission import Turns, Visitors
    from ui.assets import EXAMPLES

    live, tab, _ = own_live(opened)
    visitors = Visitors(per_tab=3)
    live.lanes = {name: Turns(visitors, turns.slots) for name, turns in live.lanes.items()}
    keys = live.lanes["keys"]

    async def calls():
        async with all_taken(keys):
            waiting = []
            for number in range(3):  # examples: actions, never merged
                waiting.append(asyncio.create_task(answer_of(live, opened, {"example": number})))
                await until_waiting(keys, number + 1)
            body = json.dumps({"key": opened.key, "change": {"example": 3}}).encode()
            response = await live.guarded(lambda: live.answer(body))
        return response, [await each for each in waiting]

    refused, answers = run_async(calls)
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "5"
    assert "This page already has 3 calls waiting" in json.loads(refused.body)["error"]
    assert answers[:2] == [{"skipped": True}] * 2 and "values" in answers[2]
    assert (tab.view.sentence_a, tab.view.sentence_b) == tuple(EXAMPLES[2])


def test_a_change_made_while_the_tab_s_call_waits_rides_on_that_call(opened):
    """A key typed while the tab's call waits for its turn is merged into it and answered at
    once; the waiting call, when its turn comes, computes and answers both changes."""
    live, tab, _ = own_live(opened)
    keys = live.lanes["keys"]

    async def calls():
        async with all_taken(keys):  # every turn taken: the first call waits
            first = asyncio.create_task(answer_of(live, opened, {"sentence_a": "a queen"}))
            await until_waiting(keys, 1)
            # answered at once: neither waits for a turn (a bound, not a time: failing, not hanging, if one did)
            typed = await asyncio.wait_for(answer_of(live, opened, {"sentence_a": "a queen ran"}), 60)
            turned = await asyncio.wait_for(answer_of(live, opened, {"narrow": True}), 60)
            assert not first.done()
        return await first, typed, turned

    first, typed, turned = run_async(calls)
    assert typed == turned == {"merged": True}
    assert drawn_tokens(outputs(first["values"])) == wordpiece().encode("a queen ran").tokens
    assert (tab.view.sentence_a, tab.view.narrow) == ("a queen ran", True)


def test_a_change_made_while_the_tab_s_call_computes_waits_for_a_turn_of_its_own(opened, monkeypatch):
    """What the computing call reads is settled when its turn begins: a later change is not lost
    in it, but answered by a call of its own."""
    import threading

    live, tab, channel = own_live(opened)
    channel.computed = math.inf  # computed on a thread: the test holds it there
    computing, release = threading.Event(), threading.Event()
    apply = live.applied

    def held(*args, **kwargs):
        computing.set()
        assert release.wait(60)
        return apply(*args, **kwargs)

    async def calls():
        monkeypatch.setattr(live, "applied", held)
        first = asyncio.create_task(answer_of(live, opened, {"sentence_a": "a queen"}))
        while not computing.is_set():
            await asyncio.sleep(0.01)
        monkeypatch.setattr(live, "applied", apply)
        second = asyncio.create_task(answer_of(live, opened, {"sentence_a": "a queen ran"}))
        await until_waiting(live.lanes["keys"], 1)  # the second waits while the first computes
        release.set()
        return await first, await second

    first, second = run_async(calls)
    assert drawn_tokens(outputs(first["values"])) == wordpiece().encode("a queen").tokens
    assert drawn_tokens(outputs(second["values"])) == wordpiece().encode("a queen ran").tokens
    assert tab.view.sentence_a == "a queen ran"


def test_a_tour_step_or_an_example_is_never_merged_and_the_older_call_waiting_gives_way(opened):
    from ui.assets import EXAMPLES

    live, tab, _ = own_live(opened)
    keys = live.lanes["keys"]

    async def calls():
        async with all_taken(keys):  # every turn taken: both calls wait
            typed = asyncio.create_task(answer_of(live, opened, {"sentence_a": "typed"}))
            example = asyncio.create_task(answer_of(live, opened, {"example": 1}))
            await until_waiting(keys, 2)
        return await typed, await example

    typed, example = run_async(calls)
    assert typed == {"skipped": True}
    assert (tab.view.sentence_a, tab.view.sentence_b) == tuple(EXAMPLES[1]) and "values" in example


def test_a_keystroke_after_a_quick_one_is_computed_on_the_event_loop_and_anything_else_on_a_thread(opened):
    """A thread costs a keystroke more CPU than the hand-over is worth, so a keystroke as quick
    as its tab's last one is computed where it arrived; a call that may take long never is."""
    import threading

    from ui.route import INLINE_GROWTH, INLINE_SECONDS, Live

    live, tab, channel = own_live(opened)
    threads = []
    apply = live.applied

    def noted(*args, **kwargs):
        threads.append(threading.current_thread())
        return apply(*args, **kwargs)

    live.applied = noted

    async def calls(*changes):
        loop = threading.current_thread()
        for change in changes:
            answer = await answer_of(live, opened, change)
            assert "values" in answer, answer
        return loop

    channel.computed = math.inf  # nothing computed yet: its cost is unknown
    loop = run_async(lambda: calls({"sentence_a": "The king"}, {"sentence_a": "The king s"},
                                   {"sentence_b": "A queen"}, {"token": 1},
                                   {"sentence_a": "The king s" + " pasted" * (INLINE_GROWTH // 7 + 1)}))
    assert [thread is loop for thread in threads] == [False, True, True, False, False]
    assert 0 < channel.computed < math.inf  # the last call's CPU was measured (its figure is the machine's)
    channel.computed = INLINE_SECONDS / 2  # a quick last call: what follows is refused for its own sake
    assert not Live.quick(tab, channel, {"panel": "tour"})
    assert not Live.quick(tab, channel, {"sentence_a": "x", "narrow": True})
    channel.computed = 2 * INLINE_SECONDS  # the last one was slow: so may this one be
    assert not Live.quick(tab, channel, {"sentence_a": "The king"})


def test_a_keystroke_never_stops_the_server_while_another_thread_holds_its_tab(app_url, opened):
    """A keystroke that would be computed on the event loop, for a tab another thread holds (a
    table change, a training's step), waits on a worker thread: the server answers others."""
    import threading

    tab = opened.tab
    opened.send(sentence_a="The king")  # quick: the next may go on the loop
    held, release, answered = threading.Event(), threading.Event(), {}

    def hold() -> None:
        with tab.lock:
            held.set()
            release.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(30)
    typist = threading.Thread(target=lambda: answered.update(
        call(app_url, {"key": opened.key, "change": {"sentence_a": "The king s"}})))
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


def test_a_call_given_a_lane_of_its_own_takes_it_even_when_no_call_waits_there(opened):
    """A lane with no call waiting is empty (and so falsy): a call given it must still take it, not
    the keystrokes' lane, where a newer call of its page would skip it (a class's answer, a change
    of the tables)."""
    live, tab, channel = own_live(opened)
    latest = channel.latest
    answer = run_async(lambda: live.turn(tab, channel, lambda: {"done": True}, STRANGER, 1.0, "tables"))
    assert answer == {"done": True}
    assert channel.latest == latest and set(live._threads) == {"tables"}  # the keystrokes' lane counted nothing


def test_an_answer_names_each_value_by_its_element_id_and_every_output_has_its_own(opened):
    """One way out: the page applies an answer by element id, so every component the page declares
    has an id of its own (one without, or sharing one, would be a value never drawn), and every
    value an answer carries names one of them."""
    import app

    page = app.demo.explorer
    components = []
    for name in type(page).__slots__:
        value = getattr(page, name, None)
        components += [each for each in (value.values() if isinstance(value, dict) else [value])
                       if hasattr(each, "elem_id")]
    ids = [component.elem_id for component in components]
    assert all(ids) and len(set(ids)) == len(ids), sorted(ids)
    assert set(page.live.by_id) == set(ids)
    for change in ({"sentence_a": "A queen ran home."}, {"token": 2}, {"shown": "positions"}, {"source": "bert"},
                   {"move": 1}):
        values = opened.post({"key": opened.key, "change": change})["values"]
        assert set(values) <= set(ids), set(values) - set(ids)


# --- actions and work --------------------------------------------------------------------------


def test_an_example_pair_writes_both_sentence_boxes_and_draws_them(opened):
    from ui.assets import EXAMPLES

    out = opened.send(example=2)
    assert (opened.tab.view.sentence_a, opened.tab.view.sentence_b) == tuple(EXAMPLES[2])
    assert for_gradio(out)["sentence-a"] == EXAMPLES[2][0]  # the boxes do not show it yet
    assert for_gradio(out)["sentence-b"] == EXAMPLES[2][1]
    assert drawn_tokens(out) == wordpiece().encode(*EXAMPLES[2]).tokens


def test_a_class_s_new_answers_ride_on_another_action_the_page_sends_with_them(opened):
    """The page merges what it sends while a call waits: the class's answers changing (`poll`) may
    come with an example pair clicked, and both are taken."""
    from ui.assets import EXAMPLES

    out = opened.send(example=1, poll=3)
    assert "error" not in out and (opened.tab.view.sentence_a, opened.tab.view.sentence_b) == tuple(EXAMPLES[1])
    assert drawn_tokens(out) == wordpiece().encode(*EXAMPLES[1]).tokens
    refused = opened.send(example=1, flip=True)  # two actions of the person's own are still one too many
    assert "two actions were sent together" in refused.get("error", "")


def test_next_and_previous_move_the_tour_and_restart_the_tables(opened):
    from core.view import tour

    opened.train(3)
    assert opened.tab.session.training is not None
    out = opened.send(move=1)
    assert opened.tab.view.step == 1 and opened.tab.view.sentence_a == tour.STEPS[0].view.sentence_a
    assert "Step 1 of" in out["tour-text"] and opened.tab.session.training is None
    opened.send(move=2)  # two presses made while one was in flight
    assert opened.tab.view.step == 3
    opened.send(move=-7)  # never before the first step
    assert opened.tab.view.step == 1


def test_the_step_picker_lands_on_exactly_the_view_its_link_opens(app_url, opened):
    """`go: N` from anywhere (a trained table, sentences of one's own, another step) shows what
    ``?step=N`` opens: the same view, untrained tables, the same plot and text; Next goes on from there."""
    from core.view import tour

    opened.train(3)
    opened.send(sentence_b="my own words")
    for number in (6, 2, 7, 1):
        out = opened.send(go=number)
        linked = Page(app_url, f"step={number}")
        assert opened.tab.view == linked.tab.view == tour.STEPS[number - 1].view
        assert opened.tab.session.training is None and opened.tab.session.tables() == linked.tab.session.tables()
        assert out["tour-text"] == linked.opened["tour-text"]
        assert f"Step {number} of {len(tour.STEPS)}" in out["tour-text"]
        assert json.loads(out["embed-plot"]["plot"])["data"] == json.loads(linked.opened["embed-plot"]["plot"])["data"]
        assert json.loads(out["address"])["query"] == f"step={number}"
    opened.send(move=1)
    assert opened.tab.view.step == 2


def test_flip_and_the_listing_s_layer_are_actions_the_route_computes(opened):
    """The page's Flip and the listing's layer go over its route: the server computes the change
    (a flip needs a selected token; two presses cancel), and an action is sent as true or not at all."""
    from core.view.state import DOCUMENT_SENTENCE, LISTING_SETTINGS

    tab = opened.tab
    refused = opened.post({"key": opened.key, "change": {"flip": True}})
    assert "Select a token first" in said(refused) and tab.view.flips == frozenset()
    opened.send(token=2)
    opened.send(flip=True)
    assert tab.view.flips == {2}
    opened.send(flip=False)  # two presses, merged by the page: no flip
    assert tab.view.flips == {2}
    opened.send(flip=True)
    assert tab.view.flips == frozenset()
    before = opened.fingerprint()
    for hostile in ({"listing": False}, {"reset": 1}, {"flip": "yes"}):
        answer = opened.post({"key": opened.key, "change": hostile})
        assert ("sent as true, or not at all" in said(answer) or "flip is true or false" in said(answer)), hostile
        assert opened.fingerprint() == before
    out = opened.send(listing=True)
    assert tab.view.source == "random" and tab.view.sentence_a == DOCUMENT_SENTENCE and tab.view.sentence_b == ""
    assert tab.view.settings == LISTING_SETTINGS
    assert out["sentence-a"] == DOCUMENT_SENTENCE  # the box does not show it yet


def test_the_link_and_a_refit_are_work_the_route_answers_by_element_id(opened):
    """The page's Link and Refit go over its route: the link is the page's own address and the
    view's query, and a refit's result is said in the notice; a hostile call is refused with a
    sentence and changes nothing."""
    tab = opened.tab
    out = opened.send(link="https://class.example/explorer/")
    link = out["share-link"]
    assert link.startswith("https://class.example/explorer/?") and "The%20king%20spoke." in link
    assert "share-notes" in out and "share-query" not in out
    before = opened.fingerprint()
    for change, says in (({"link": 5}, "link is the page's own address, at most 2,048 characters"),
                         ({"link": "x" * 3000}, "at most 2,048"),
                         ({"refit": False}, "refit is an action: it is sent as true, or not at all"),
                         ({"export": "yes"}, "export is an action: it is sent as true, or not at all"),
                         ({"picker": 1}, "picker is an action: it is sent as true, or not at all"),
                         # refused as a whole: the settings sent with it are not applied either
                         ({"sentence_a": "changed", "refit": False}, "refit is an action"),
                         ({"sentence_a": "changed", "link": None}, "link is the page's own address")):
        refused = opened.post({"key": opened.key, "change": change})
        assert says in refused["error"] and opened.fingerprint() == before
    said_ = opened.send(refit=True)
    assert "refits on every change already" in said_.notice and "embed-plot" not in said_
    opened.send(basis="frozen")
    frozen = tab.session.frozen_basis
    out = opened.send(sentence_a="A queen ran.", refit=True)
    assert tab.view.sentence_a == "A queen ran." and tab.session.frozen_basis is not frozen
    assert "ℹ️ The frozen plane now fits the current sentence." in html.unescape(out["notice"])
    assert "embed-plot" in out


def test_the_token_list_is_filled_over_the_route_with_the_tab_s_tokens_now(opened):
    """The picker opened on the page asks the route for its list: the tab's tokens as they are
    now, and the one selected, as gradio's browser code takes a dropdown's update."""
    opened.send(sentence_a="the big cat")
    opened.send(token=3)
    picker = opened.send(picker=True)["selected-token"]
    assert [label for label, _ in picker["choices"]] == ["none", "0: [CLS]", "1: the", "2: big", "3: cat", "4: [SEP]"]
    assert picker["value"] == 3


def test_the_page_s_exports_are_links_on_its_own_route_that_last_two_minutes(app_url, opened):
    """Export over the route answers links, one a file, on the page's own route: each serves its
    file while it lasts; a later export revokes them, and an expired, revoked or guessed link is
    answered 404 with a sentence."""
    import re

    import app
    from tests.clocks import Clock
    from ui.files import LIFETIME

    downloads = app.demo.explorer.downloads
    clock, kept = Clock(), downloads.clock
    downloads.clock = clock
    try:
        out = opened.send(sentence_a="The volcano spoke.", export=True)
        links = re.findall(r'href="([^"]+)"', out["export-links"])
        assert sorted(name.rsplit(".", 1)[-1] for name in re.findall(r'download="([^"]+)"', out["export-links"])) == [
            "csv", "html", "safetensors"]
        got = {link: httpx.get(f"{app_url}{link}", timeout=30) for link in links}
        assert all(response.status_code == 200 and response.content for response in got.values())
        assert any("volcano" in response.text for response in got.values()
                   if "csv" in response.headers["content-disposition"])
        again = opened.send(export=True)
        fresh = re.findall(r'href="([^"]+)"', again["export-links"])
        for gone in (*links, "explorer/file/guessed"):
            response = httpx.get(f"{app_url}{gone}", timeout=30)
            assert response.status_code == 404 and "Export again" in response.text
        assert httpx.get(f"{app_url}{fresh[0]}", timeout=30).status_code == 200
        clock.now += LIFETIME
        assert httpx.get(f"{app_url}{fresh[0]}", timeout=30).status_code == 404
    finally:
        downloads.clock = kept


def test_training_streams_its_curve_over_the_route_an_event_a_step_and_stops_when_the_page_goes(app_url, opened):
    """Train over the page's route: one server-sent event a step, each `{"values": …}` by element
    id, from "Training…" to the trained summary and plot; a training the page leaves is cancelled,
    its result never adopted."""
    from core.view.options import LIMITS
    from tests.waiting import eventually

    tab = opened.tab
    merged, steps = opened.train(5, "builtin")
    assert steps[0]["train-summary"] == "Training 5 steps…"
    assert "Trained 5 steps" in steps[-1]["train-summary"] and "embed-plot" in steps[-1]
    assert "before training" in steps[-1]["embed-plot"]["plot"] and tab.session.training.steps == 5
    _, refused = opened.train(0, "builtin")
    assert "steps" in refused[-1].notice and tab.session.training.steps == 5
    alone = opened.post({"key": opened.key, "change": {"train": {"steps": 5}, "sentence_a": "x"}})
    assert "sent alone" in alone["error"]

    opened.send(reset=True)
    longest = LIMITS["steps"][1]
    with httpx.stream("POST", f"{app_url}explorer/live", timeout=120,
                      json={"key": opened.key, "change": {"train": {"steps": longest, "corpus": "builtin"}}}) as going:
        assert going.headers["content-type"].startswith("text/event-stream")
        first = next(json.loads(line[5:]) for line in going.iter_lines() if line.startswith("data:"))
        assert first["values"]["train-summary"] == f"Training {longest:,} steps…" and tab.job == "training"
    assert eventually(lambda: tab.job is None, 60)  # the training the page left is cancelled
    assert tab.session.training is None


# --- a page opening ----------------------------------------------------------------------------


def test_a_page_opens_over_the_route_and_its_upload_reaches_the_tab_it_opened(app_url, tmp_path):
    """A page's first call opens it: the view its link describes, and its key, which its upload
    carries to the same tab. A hostile opening is refused with a sentence."""
    import numpy as np

    page = Page(app_url, "a=the%20volcano&panel=tables")
    tab = page.tab
    assert tab.view.sentence_a == "the volcano" and tab.view.panel == "tables"
    assert "embed-plot" in page.opened and json.loads(page.opened["address"])["key"] == page.key
    path = tmp_path / f"opening-{secrets.token_hex(4)}.npy"
    np.save(path, np.random.default_rng(1).standard_normal((30, 4)).astype(np.float32))
    page.upload(path)
    assert page.tab is tab and tab.view.source == "upload"
    for sent in ({"open": "x"}, {"open": {"query": 5}}, {"open": ["query"]}):
        assert "A page opening carries its address's query as text" in call(app_url, sent)["error"]
    too_long = call(app_url, {"open": {"query": "a=" + "x" * 40_000}})
    assert "could not be read" in html.unescape(too_long["values"]["notice"])


def test_a_reloaded_page_lets_its_previous_tab_go(app_url, opened):
    """A reload opens a new tab and names the one it had: that tab is let go at once, and its key
    reaches nothing."""
    answer = call(app_url, {"open": {"query": KING, "previous": opened.key}})
    assert "values" in answer
    gone = opened.post({"key": opened.key, "change": {"sentence_a": "still there?"}})
    assert set(gone) == {"error"} and "reload the page" in gone["error"]



def test_a_client_that_leaves_mid_body_is_one_line_in_the_log_not_a_traceback(app_url, live, caplog):
    """A phone that loses its signal while it sends a keystroke is ordinary: the server says so in
    one line, computes nothing for it, and goes on serving the page that stayed."""
    import logging
    import socket
    import time
    from urllib.parse import urlparse

    where = urlparse(app_url)
    with caplog.at_level(logging.INFO):
        with socket.create_connection((where.hostname, where.port)) as connection:
            connection.sendall(b"POST /explorer/live HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 5000\r\n\r\n" + b'{"key": "' + live.key.encode() + b'", "change"')
            time.sleep(0.3)
        for _ in range(100):  # the server notices the socket closed on its loop: a bounded look
            if any("left before its body was read" in record.getMessage() for record in caplog.records):
                break
            time.sleep(0.05)
    left = [record for record in caplog.records if "left before its body was read" in record.getMessage()]
    assert [record.getMessage() for record in left] == ["POST /explorer/live: the client left before its body was read"]
    assert not [record for record in caplog.records if record.exc_info], "a traceback was logged"
    assert tokens(live.send(sentence_a="still here")["token-table"])[:4] == ["[CLS]", "still", "here", "[SEP]"]
