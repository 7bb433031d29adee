"""Links, rendered: every view a link can express draws the page, and so does any query.

tests/test_share_properties.py checks that links read back; this opens them the way the page
does (`ui.tourpanel.open_link`, the page-load handler, in-process) and reads what it answers:
the main plot with the view's groups, a notice of plain text with the link's own notes, and no
error. A view that could be built opens as itself: had the handler refused it as a whole, its
notice would say so and the default view would be drawn, losing the rest of the link; any other
error is a fault and fails here, as it escapes the handler (README, "A refusal is not a fault").

Random tables of the largest sizes take a second and 127 MiB each, so the generated views draw
their table sizes from small ranges; the limits are opened once each below.
"""

from __future__ import annotations

import html
import ipaddress
import itertools
import json
import re
import uuid
from urllib.parse import quote, urlencode

import gradio as gr
import numpy as np
import orjson
import pytest
from appapi import decode, key_of, run_async
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from starlette.requests import Request

import app
from core.serving.tabs import Tab
from core.view.options import COMPONENTS, LIMITS, MAX_LOOKUP_CHARS, PANELS, VIEWS
from core.view.share import to_query
from core.view.state import View
from tests.test_share_properties import FIELDS, names, values
from ui import events, render, tourpanel

PAGE = app.demo.explorer
ADDRESSES = itertools.count(1)
NOTE = re.compile(r"<p>⚠️ (.*?)</p>", flags=re.DOTALL)


@pytest.fixture(scope="module", autouse=True)
def own_store():
    """The module's tabs in a store of their own, let go at its end (a large table with them)."""
    from core.serving.tabs import Tabs
    from ui.channels import Channels

    with pytest.MonkeyPatch.context() as patch:
        store = Tabs()
        patch.setattr(events, "TABS", store)
        patch.setattr(events, "CHANNELS", Channels(store))  # the page's key reaches a tab of this store
        yield


def request(query: str) -> gr.Request:
    """The page load's request as gradio hands it to the handler: the page's query string, a
    session and a client address of its own (each new tab counts against its address's), and
    headers, in a real Starlette request."""
    address = str(ipaddress.IPv4Address("198.18.0.0") + next(ADDRESSES))  # 198.18.0.0/15: for tests
    scope = {"type": "http", "method": "GET", "path": "/", "query_string": query.encode("ascii"),
             "headers": [(b"host", b"localhost"), (b"user-agent", b"test")], "client": (address, 50000)}
    return gr.Request(Request(scope), session_hash=uuid.uuid4().hex)


def opened(query: str, screen: object = None) -> tuple[dict, Tab]:
    """What the page load answers for `query`, and its tab (the view it holds, its tokens)."""
    render.forget_shared()  # the view is drawn, not taken from an earlier example's drawing
    asked = request(query)
    out = tourpanel.open_link(PAGE, asked, screen)  # a fault escapes it and fails the test
    return out, events.TABS.get(asked.session_hash)


def notes_of(out: dict) -> list[str]:
    """The notice as the notes a person reads; asserts it is plain text, each note escaped."""
    shown = out.get(PAGE.notice, "")
    assert isinstance(shown, str)
    notes = NOTE.findall(shown)
    assert "".join(f"<p>⚠️ {note}</p>" for note in notes) == shown, shown
    for note in notes:
        assert "<" not in note and ">" not in note, note  # markup from the link stays escaped
        assert note == html.escape(html.unescape(note)), note
    return [html.unescape(note) for note in notes]


def drawn(out: dict) -> list[str]:
    """The main plot's trace names; asserts that it was drawn, its groups' points are numbers, and
    every value turns into what the browser receives (the page opening's answer, by element id,
    as JSON), none of them an error."""
    assert set(out) <= set(PAGE.everything)
    for component, value in out.items():
        assert not isinstance(value, BaseException), (component, value)
        assert "Traceback" not in str(value), component
    sent = orjson.loads(orjson.dumps(PAGE.direct.values_of(out), option=orjson.OPT_SERIALIZE_NUMPY))
    assert set(sent) == {component.elem_id for component, value in out.items() if not events.skipped(value)}
    plot = out.get(PAGE.plot)
    assert isinstance(plot, str) and plot, "the page load did not draw the main plot"
    figure = json.loads(plot)
    assert isinstance(figure.get("data"), list) and "layout" in figure
    for trace in figure["data"]:
        if trace.get("name") in COMPONENTS:
            for axis in ("x", "y", "z"):
                if axis in trace:
                    assert np.isfinite(decode(trace[axis]).astype(float)).all(), (trace["name"], axis)
    address = json.loads(out[PAGE.address])
    assert address["push"] is True and address["key"]
    return [trace.get("name") for trace in figure["data"]]


def check_drawn(out: dict, tab: Tab, link: View, link_notes: tuple[str, ...] = (), narrow: bool = False) -> None:
    """The page shows `link` on its screen (`narrow`: a phone's), saying exactly its notes: never
    "The link's view could not be opened", which would show the default view instead. A link
    names token positions of its own sentences: a selected token past their end is let go with a
    note, flips past it without one (`core.serving.tabs.follow`)."""
    notes, traces, shown = notes_of(out), drawn(out), tab.view
    length = len(tab.tokens)
    token = link.token if link.token is None or link.token < length else None
    let_go = [] if token == link.token else [
        f"Token {link.token} is past the end of the sentences (0 to {length - 1}), so it was let go."]
    assert notes == [*link_notes, *let_go]
    assert shown == link.with_(narrow=narrow, token=token, flips=frozenset(i for i in link.flips if i < length))
    assert set(shown.groups) <= set(traces), (shown.groups, traces)
    query = json.loads(out[PAGE.address])["query"]
    assert query == to_query(shown)[0]  # the address bar holds what is drawn


# table sizes from small ranges: the limits are opened once each below
SMALL = {"vocab_size": st.integers(4, 64), "d_model": st.integers(1, 16), "maxlen": st.integers(3, 40),
         "n_segments": st.integers(1, 8)}
views = st.fixed_dictionaries({**FIELDS, **SMALL}).map(lambda values: View(**values))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views)
@example(View(groups=()))
@example(View(groups=(), basis="frozen"))  # see test_a_frozen_plane_with_no_group_ticked_reopens_from_its_address
@example(View(dims=3, token=0, arrows=True, shift=True, labels=True, basis="vocabulary", background=50))
@example(View(sentence_a="", sentence_b="", token=2047, flips=frozenset(range(64))))
def test_any_shareable_view_opens_as_itself(view):
    query, notes = to_query(view)
    assert notes == ()
    out, tab = opened(query)
    check_drawn(out, tab, view)


def limits() -> list:
    low = {name: LIMITS[name][0] for name in ("vocab_size", "d_model", "maxlen", "n_segments")}
    high = {name: LIMITS[name][1] for name in low}
    return [
        pytest.param(View(**high), id="largest-random-wordpiece"),
        pytest.param(View(tokenizer="word", **low), id="smallest-random-word"),
        pytest.param(View(source="bert", maxlen=high["maxlen"], background=LIMITS["background"][1],
                          basis="vocabulary", token=5), id="bert"),
        pytest.param(View(source="glove", tokenizer="word", background=LIMITS["background"][1], basis="frozen",
                          search="king", k=LIMITS["k"][1]), id="glove"),
        pytest.param(View(sentence_a="x " * 5_000, sentence_b="y" * 10_000, token=2047), id="longest-sentences"),
        pytest.param(View(shown="lookup", lookup_sentence="w " * 200, lookup_dim=16), id="lookup-longest"),
        pytest.param(View(shown="lookup", lookup_sentence="w" * MAX_LOOKUP_CHARS, lookup_dim=1), id="lookup-one-word"),
        *(pytest.param(View(shown=name), id=f"view-{name}") for name in VIEWS),
        *(pytest.param(View(panel=name), id=f"panel-{name}") for name in PANELS),
        *(pytest.param(View(step=number), id=f"step-{number}") for number in range(1, LIMITS["step"][1] + 1)),
        *(pytest.param(View(groups=(group,)), id=f"group-{group}") for group in COMPONENTS),
    ]


@pytest.mark.parametrize("view", limits())
def test_a_view_at_the_limits_opens_as_itself(view):
    out, tab = opened(to_query(view)[0])
    check_drawn(out, tab, view)


# --- hostile queries: whatever a link carries, the page draws and its notice is text ---

def query_of(params: dict) -> str:
    """`params` as a browser sends them: percent-encoded UTF-8 (a lone surrogate as its bytes,
    which the server reads as U+FFFD), a list as a repeated parameter."""
    pairs = [(name, item) for name, value in params.items()
             for item in (value if isinstance(value, list) else [value])]
    return urlencode(pairs, quote_via=lambda text, *_: quote(text, safe="", errors="surrogatepass"))


# what the page says of its screen (tourpanel.SCREEN_JS), or anything a hostile page sends instead
screens = st.one_of(st.none(), st.sampled_from(['{"narrow":true}', '{"narrow":false}', '{"narrow":1}', "[]", "null"]),
                    st.text(max_size=80), st.integers(), st.lists(st.text(max_size=5), max_size=3))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(names, values, max_size=12), screens)
@example({"view": "lookup", "lookup": ""}, '{"narrow":true}')
@example({"view": "lookup", "lookup": "w " * 201}, None)
@example({"view": "lookup", "lookup": "w" * (MAX_LOOKUP_CHARS + 1)}, None)
@example({"a": "x" * 10_001, "step": "8", "panel": "<script>"}, None)
@example({"<img src=x onerror=alert(1)>": "1", "k": "**7**", "vocab": "30522", "d": "1024", "tokenizer": "word"}, None)
def test_any_query_opens_the_page_with_its_notes_as_text(params, screen):
    from starlette.datastructures import QueryParams

    from core.view.share import from_query

    query = query_of(params)
    link = from_query({key: QueryParams(query).getlist(key) for key in QueryParams(query)})
    out, tab = opened(query, screen)
    check_drawn(out, tab, link.view, link.notes, narrow=tourpanel.narrow(screen))


# --- what the generated views found ---

def test_a_frozen_plane_with_no_group_ticked_reopens_from_its_address():
    """Freezing the plane, then unticking every group, is a view the page holds and writes into its
    address; reloading that address was refused ("No group is ticked, so there is no plane to
    keep") and showed the default view, losing the rest of it. A whole view (a link, Back, a
    class's lesson) cannot say which groups its plane was kept with, so it keeps the one every
    group spans; choosing to freeze with nothing ticked is still refused."""
    asked = request("")
    tourpanel.open_link(PAGE, asked, None)
    events.update(PAGE, asked, lambda view: view.with_(sentence_a="the king spoke", basis="frozen"), asked=("basis",))
    events.update(PAGE, asked, lambda view: view.with_(groups=()), asked=("groups",))
    kept = events.TABS.get(asked.session_hash).view
    assert (kept.basis, kept.groups) == ("frozen", ())

    reloaded = request(to_query(kept)[0])
    out = tourpanel.open_link(PAGE, reloaded, None)
    tab = events.TABS.get(reloaded.session_hash)
    check_drawn(out, tab, kept)
    assert notes_of(out) == []
    assert tab.session.basis == "frozen" and tab.session.frozen_basis is not None
    out = events.update(PAGE, reloaded, lambda view: view.with_(groups=("token",)), asked=("groups",))
    titles = [axis["title"]["text"] for name, axis in json.loads(out[PAGE.plot])["layout"].items()
              if name.startswith("xaxis")]
    assert titles and all("of the frozen view" in title for title in titles), titles
    back = request("")  # Back to that address shows it too, over the page's route
    tourpanel.open_link(PAGE, back, None)
    tab = events.TABS.get(back.session_hash)
    answer = run_async(lambda: PAGE.direct.answer({"key": key_of(tab), "change": {"back": to_query(kept)[0]}}))
    assert notes_of({PAGE.notice: answer["values"].get("notice", "")}) == [] and tab.view == kept

    fresh = request("")
    tourpanel.open_link(PAGE, fresh, None)
    events.update(PAGE, fresh, lambda view: view.with_(groups=()), asked=("groups",))
    with pytest.warns(UserWarning, match="No group is ticked"):  # the toast, outside a page
        out = events.update(PAGE, fresh, lambda view: view.with_(basis="frozen"), asked=("basis",))
    assert notes_of(out) == ["No group is ticked, so there is no plane to keep: tick at least one group."]
    assert events.TABS.get(fresh.session_hash).view.basis == "sentence"
