"""The public API (ui/api.py) through gradio_client, as a stranger's script calls it.

Each function takes a link's query and answers what a page opened at that link shows: the
answers are compared with a page opened through its route (tests/appapi.Page) and with
`GET explorer/code`, not with the API's own helpers. tests/test_app.py and
tests/test_public_space.py check which endpoints there are and their parameters;
tests/test_lecture_api.py reads the tour's steps through `view`. Here: each endpoint is
described, `view` draws what the page draws for any link, `code` is the route's script, `train`
says which tables learned, and a hostile call is refused with a sentence while the app serves on.
"""

from __future__ import annotations

import math

import httpx
import numpy as np
import pytest
from gradio_client.exceptions import AppError

from core.drawing.figures import NEIGHBOURS
from core.view.options import COMPONENTS
from tests.appapi import Page, decode, figure

LINKS = [
    "a=The+king+spoke.&b=The+queen+listened.&token=2",  # two segments, a token and its neighbours
    "a=the+cat+sat+on+the+mat&groups=token,sum&basis=vocabulary&seed=7",  # two groups, a fixed plane
    "a=hello+world&dims=3&d=16",  # three axes
]


def page_points(plot) -> dict[str, np.ndarray]:
    """Each group's points as the page's figure draws them, in token order (the segment trace's one
    point per segment row given to each of its tokens), and the neighbours' traces as drawn."""
    fig = figure(plot)
    traces = {trace.get("name"): trace for trace in fig["data"]}
    axes = "xyz" if "z" in traces.get("token", traces.get("sum", {})) else "xy"

    def xyz(trace) -> np.ndarray:
        return np.column_stack([decode(trace[axis]) for axis in axes]).astype(np.float64)

    token_data = decode(traces["token"]["customdata"]) if "token" in traces else None
    points: dict[str, np.ndarray] = {}
    for name, trace in traces.items():
        if name in NEIGHBOURS.values():
            points[name] = xyz(trace)
        elif name in COMPONENTS and name != "segment":
            at = decode(trace["customdata"])[:, 1].astype(int)  # [id, position, segment, norm] a point
            ordered = np.empty((len(at), len(axes)))
            ordered[at] = xyz(trace)
            points[name] = ordered
    if "segment" in traces:
        rows = {int(row): point for row, point in zip(decode(traces["segment"]["customdata"])[:, 0],
                                                       xyz(traces["segment"]), strict=True)}
        segments = token_data[np.argsort(token_data[:, 1]), 2].astype(int)
        points["segment"] = np.asarray([rows[s] for s in segments])
    return points


def refused(call) -> str:
    """The sentence of a call the API refuses (gradio_client raises the app's error with it)."""
    with pytest.raises(AppError) as error:
        call()
    return str(error.value)


def test_the_api_lists_a_few_named_endpoints_each_described(api):
    """A stranger reads the API from its listing: a handful of functions, each with a sentence of
    what it answers (the function's docstring), so none needs the source to be used."""
    endpoints = api.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert 0 < len(endpoints) <= 6, sorted(endpoints)
    for name, endpoint in endpoints.items():
        assert endpoint.get("description", "").strip(), f"{name} has no description"
        assert len(endpoint["description"].split()) >= 8, (name, endpoint["description"])


@pytest.mark.parametrize("query", LINKS)
def test_view_answers_the_points_a_page_opened_at_the_link_draws(app_url, api, query):
    """`view` of a link answers each group's points, the tokens and the neighbours exactly as a page
    opened at that link draws them, and only the groups the link shows."""
    answer = api.predict(query, api_name="/view")
    opened = Page(app_url, query).opened
    drawn = page_points(opened["embed-plot"])
    assert answer["notes"] == []
    assert answer["tokens"] == [row[:4] for row in opened["token-table"]["data"]]
    assert set(answer["points"]) == set(drawn), (sorted(answer["points"]), sorted(drawn))
    for group, points in answer["points"].items():
        np.testing.assert_allclose(np.asarray(points), drawn[group], atol=1e-6, err_msg=group)
    if "groups=token,sum" in query:
        assert set(answer["points"]) == {"token", "sum"}
    if "token=2" in query:
        assert set(NEIGHBOURS.values()) <= set(answer["points"])
        listed = opened.value("neighbours-token")
        assert answer["neighbours"]["token"] == (listed["data"] if isinstance(listed, dict) else listed)
        assert answer["neighbours"]["token"], "a selected token has neighbours"
    if "dims=3" in query:
        assert {len(point) for point in answer["points"]["token"]} == {3}


@pytest.mark.parametrize("query", [*LINKS, "a=x&colour=red&d=99999", ""])
def test_code_answers_the_script_the_code_route_answers(app_url, api, query):
    """`code` and `GET explorer/code?QUERY` are one script for one link, word for word, the link's
    notes included."""
    script = api.predict(query, api_name="/code")
    route = httpx.get(f"{app_url}explorer/code?{query}", timeout=120)
    assert route.status_code == 200, route.text
    assert script == route.text
    compile(script, "embedding_view.py", "exec")


def test_train_answers_the_losses_and_which_tables_learned(api):
    """`train` answers the loss at each step and the view of the trained tables: in a plane kept
    still, the frozen tables' points stay where `view` draws them and the learned ones move."""
    query = "a=the+cat+sat&b=on+the+mat&freeze=token,segment&basis=frozen"
    before = api.predict(query, api_name="/view")
    after = api.predict(query, 5, "builtin", api_name="/train")
    assert len(after["losses"]) == 5 and all(math.isfinite(loss) for loss in after["losses"])
    assert after["losses"][-1] < after["losses"][0]
    assert after["tokens"] == before["tokens"] and after["notes"] == []
    assert "trained here" in after["summary"].lower() and "trained here" not in before["summary"].lower()
    assert "mean nothing yet" in before["summary"] and "mean nothing" not in after["summary"]
    for group in ("token", "segment"):  # frozen: where they were
        np.testing.assert_allclose(after["points"][group], before["points"][group], atol=1e-6, err_msg=group)
    for group in ("position", "sum", "output"):  # learned (or built from what learned): moved
        assert not np.allclose(after["points"][group], before["points"][group], atol=1e-6), group
    mine = api.predict(query, 3, "mine", api_name="/train")
    assert len(mine["losses"]) == 3


@pytest.mark.parametrize(("call", "says"), [
    (lambda api: api.predict(5, api_name="/view"), "query is a link's query string (text), not int."),
    (lambda api: api.predict(["a=x"], api_name="/code"), "query is a link's query string (text), not list."),
    (lambda api: api.predict("a=" + "x" * 40_000, api_name="/view"),
     "query is at most 32,000 characters, as a link is; this one has 40,002."),
    (lambda api: api.predict("a=x", 10**9, "builtin", api_name="/train"),
     "steps is 1,000,000,000; allowed values are 1 to 2,000."),
    (lambda api: api.predict("a=x", "many", "builtin", api_name="/train"),
     "steps must be a whole number from 1 to 2,000, not 'many'."),
    (lambda api: api.predict("a=x", 5, "the web", api_name="/train"),
     "corpus must be one of builtin, mine, not 'the web'."),
])
def test_a_hostile_call_is_refused_with_a_sentence_naming_what_is_allowed(app_url, api, call, says):
    """A call the API cannot take (a query that is no text or longer than any link, steps or a
    corpus out of their range or of the wrong type) is answered with the sentence, no stack trace,
    and the app serves the next call."""
    sentence = refused(lambda: call(api))
    assert says in sentence, sentence
    assert "Traceback" not in sentence and "Error" not in sentence
    assert api.predict("a=still+serving", api_name="/view")["tokens"][1][0] == "still"
    assert Page(app_url, "a=still+serving").opened.value("sentence-a") == "still serving"


def test_a_hostile_links_fields_become_notes_naming_what_is_allowed(api):
    """A link's query is read as the page reads a link: a field it does not know or a value out of
    its range is ignored with a note saying what links allow, and the rest of the view is drawn."""
    answer = api.predict("a=the+king&colour=red&d=99999&basis=upside-down&token=x", api_name="/view")
    notes = " ".join(answer["notes"])
    assert "Ignored unknown parameter 'colour'; links use" in notes and " a, b," in notes, notes
    assert "Ignored d=99999: d_model is 99,999; allowed values are 1 to 1,024." in notes, notes
    assert "Ignored basis=upside-down" in notes and "allowed: sentence" in notes, notes
    assert "Ignored token=x" in notes, notes
    assert [row[0] for row in answer["tokens"]][:4] == ["[CLS]", "the", "king", "[SEP]"]  # and the default B
    assert answer["points"]["token"]
