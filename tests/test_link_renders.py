"""Links, rendered: every view a link can express draws the page, and so does any query.

tests/test_share_properties.py checks that links read back; this opens them the way the page
does (`{open: {query, narrow}}` on the page's route, ui/route.py `Live.opened`, in-process) and
reads what it answers: the main plot with the view's groups, a notice of plain text with the
link's own notes, and no error. A view that could be built opens as itself: had the opening
refused it as a whole, its notice would say so and the default view would be drawn, losing the
rest of the link; any other error is a fault and fails here, as it escapes the route (README, "A
refusal is not a fault").

Random tables of the largest sizes take a second and 127 MiB each, so the generated views draw
their table sizes from small ranges; the limits are opened once each below.
"""

from __future__ import annotations

import html
import json
import re
from urllib.parse import quote, urlencode

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import app
from core.drawing import shared
from core.drawing.wire import expand
from core.plane.layers import reached
from core.serving.tabs import Tab
from core.view.options import COMPONENTS, LIMITS, MAX_LOOKUP_CHARS, PANELS, VIEWS
from core.view.share import to_query
from core.view.state import View
from tests.appapi import decode, run_async
from tests.test_share_properties import FIELDS, names, values
from ui import route

PAGE = app.demo.explorer
LIVE = route.Live(PAGE)  # the page's route, with lines of its own
NOTE = re.compile(r"<p>⚠️ (.*?)</p>", flags=re.DOTALL)


@pytest.fixture(scope="module", autouse=True)
def own_store():
    """The module's tabs in a store of their own, let go at its end (a large table with them)."""
    from core.serving.tabs import Tabs

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(route, "TABS", Tabs())
        yield


def answered(sent: dict) -> dict:
    """The route's answer to `sent`, as the page reads it (a fault escapes it and fails the test)."""
    LIVE._threads.clear()  # each call runs in an event loop of its own: its lines' threads are made in it
    response = run_async(lambda: LIVE.guarded(lambda: LIVE.answer(json.dumps(sent).encode())))
    return json.loads(response.body)


def opened(query: str, narrow: object = False) -> tuple[dict, Tab]:
    """What a page opening answers for `query` on a screen that says `narrow`, and its tab (the
    view it holds, its tokens)."""
    shared.forget()  # the view is drawn, not taken from an earlier example's drawing
    answer = answered({"open": {"query": query, "narrow": narrow}})
    assert "values" in answer, answer
    key = json.loads(answer["values"]["address"])["key"]
    return answer["values"], route.TABS.kept(key)


def notes_of(values: dict) -> list[str]:
    """The notice as the notes a person reads; asserts it is plain text, each note escaped."""
    shown = values.get("notice", "")
    assert isinstance(shown, str)
    notes = NOTE.findall(shown)
    assert "".join(f"<p>⚠️ {note}</p>" for note in notes) == shown, shown
    for note in notes:
        assert "<" not in note and ">" not in note, note  # markup from the link stays escaped
        assert note == html.escape(html.unescape(note)), note
    return [html.unescape(note) for note in notes]


def drawn(values: dict) -> list[str]:
    """The main plot's trace names; asserts that it was drawn, its groups' points are numbers, and
    every value names an element of the page, none of them an error."""
    assert set(values) <= set(LIVE.by_id), set(values) - set(LIVE.by_id)
    for elem_id, value in values.items():
        assert "Traceback" not in str(value), elem_id
    plot = values.get("embed-plot")
    assert isinstance(plot, str) and plot, "the page's opening did not draw the main plot"
    figure = expand(json.loads(plot))
    assert isinstance(figure.get("data"), list) and "layout" in figure
    for trace in figure["data"]:
        if trace.get("name") in COMPONENTS:
            for axis in ("x", "y", "z"):
                if axis in trace:
                    assert np.isfinite(decode(trace[axis]).astype(float)).all(), (trace["name"], axis)
    address = json.loads(values["address"])
    assert address["push"] is True and address["key"]
    return [trace.get("name") for trace in figure["data"]]


def check_drawn(values: dict, tab: Tab, link: View, link_notes: tuple[str, ...] = (), narrow: bool = False) -> None:
    """The page shows `link` on its screen (`narrow`: a phone's), saying exactly its notes: never
    "The link's view could not be opened", which would show the default view instead. A link
    names token positions of its own sentences: a selected token past their end is let go with a
    note, flips past it without one (`core.serving.tabs.follow`); an encoder layer tables other than
    BERT's cannot give is layer 0, with a note (`core.plane.layers.reached`)."""
    notes, traces, shown = notes_of(values), drawn(values), tab.view
    length = len(tab.tokens)
    token = link.token if link.token is None or link.token < length else None
    let_go = [] if token == link.token else [
        f"Token {link.token} is past the end of the sentences (0 to {length - 1}), so it was let go."]
    layered, cannot = reached(link, tab.session)
    assert notes == [*link_notes, *let_go, *cannot]
    assert shown == layered.with_(narrow=narrow, token=token, flips=frozenset(i for i in link.flips if i < length))
    assert set(shown.groups) <= set(traces), (shown.groups, traces)
    query = json.loads(values["address"])["query"]
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


# what the page says of its screen (assets/explorer.js: true or false), or anything a hostile page sends instead
# that JSON can carry (no lone surrogates: the route reads the body as UTF-8)
letters = st.characters(exclude_categories=["Cs"])
screens = st.one_of(st.booleans(), st.none(), st.integers(), st.text(letters, max_size=80),
                    st.lists(st.text(letters, max_size=5), max_size=3),
                    st.sampled_from(["true", 1, 1.0, {"narrow": True}]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(names, values, max_size=12), screens)
@example({"view": "lookup", "lookup": ""}, True)
@example({"view": "lookup", "lookup": "w " * 201}, False)
@example({"view": "lookup", "lookup": "w" * (MAX_LOOKUP_CHARS + 1)}, None)
@example({"a": "x" * 10_001, "step": "8", "panel": "<script>"}, None)
@example({"<img src=x onerror=alert(1)>": "1", "k": "**7**", "vocab": "30522", "d": "1024", "tokenizer": "word"}, None)
def test_any_query_opens_the_page_with_its_notes_as_text(params, screen):
    from starlette.datastructures import QueryParams

    from core.view.share import from_query

    query = query_of(params)
    link = from_query({key: QueryParams(query).getlist(key) for key in QueryParams(query)})
    out, tab = opened(query, screen)
    check_drawn(out, tab, link.view, link.notes, narrow=screen is True)


# --- what the generated views found ---

def test_a_frozen_plane_with_no_group_ticked_reopens_from_its_address():
    """Freezing the plane, then unticking every group, is a view the page holds and writes into its
    address; reloading that address was refused ("No group is ticked, so there is no plane to
    keep") and showed the default view, losing the rest of it. A whole view (a link, Back, a
    class's lesson) cannot say which groups its plane was kept with, so it keeps the one every
    group spans; choosing to freeze with nothing ticked is still refused."""
    def changed(tab: Tab, **change) -> dict:
        return LIVE.apply(tab, LIVE.channels[tab], lambda view: view.with_(**change), asked=tuple(change))

    _, tab = opened("")
    changed(tab, sentence_a="the king spoke", basis="frozen")
    changed(tab, groups=())
    kept = tab.view
    assert (kept.basis, kept.groups) == ("frozen", ())

    out, tab = opened(to_query(kept)[0])
    check_drawn(out, tab, kept)
    assert notes_of(out) == []
    assert tab.session.basis == "frozen" and tab.session.frozen_basis is not None
    out = changed(tab, groups=("token",))
    titles = [axis["title"]["text"] for name, axis in json.loads(out["embed-plot"])["layout"].items()
              if name.startswith("xaxis")]
    assert titles and all("of the frozen view" in title for title in titles), titles
    _, back = opened("")  # Back to that address shows it too, over the page's route
    key = LIVE.channels[back].key
    answer = answered({"key": key, "change": {"back": to_query(kept)[0]}})
    assert notes_of(answer["values"]) == [] and back.view == kept

    _, fresh = opened("")
    changed(fresh, groups=())
    out = changed(fresh, basis="frozen")
    assert notes_of(out) == ["No group is ticked, so there is no plane to keep: tick at least one group."]
    assert fresh.view.basis == "sentence"
