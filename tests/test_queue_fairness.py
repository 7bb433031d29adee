"""Gradio's queue, bounded and fair across visitors (issue 21, break 3, "Queue flooding"; ui/admission.py).

Every case goes through the launched app over HTTP, as a stranger's script or a page would: a
call joins the queue (`/gradio_api/queue/join`, the page's way, or `/gradio_api/call/embed`,
the plain API's), and its answers arrive on the tab's event stream. Addresses are sent in
X-Forwarded-For, which the server trusts from its loopback peer as behind a proxy.

A flood is scaled down, not sent: the live group is held (as if its slots were taken, so
calls wait and none starts) while a few calls join, and the bounds are lowered on the app's own
`Admission` where a case needs them. Nothing here is timed.
"""

from __future__ import annotations

import json
import uuid
from contextlib import contextmanager

import httpx
import pytest

from core.view.options import MAX_TEXT
from tests.appapi import named, unchanged

STRANGER = "203.0.113.7"  # documentation addresses, forwarded as a proxy would
STUDENT = "198.51.100.20"
CLASSMATE = "198.51.100.21"
PAIR = ("the quick brown fox jumps over", "a lazy dog by the river")
BIG = "word " * (MAX_TEXT // 5)  # a sentence at the limit
WAIT = 120  # seconds a stream may stay silent before a test gives up (a fault, never a figure)


def fn_index(api_name: str) -> int:
    import app

    (found,) = [i for i, fn in app.demo.fns.items() if fn.api_name == api_name]
    return found


def tab() -> str:
    return uuid.uuid4().hex[:12]


def join(app_url: str, data: list, session: str, address: str, api_name: str = "embed") -> httpx.Response:
    """Join the queue as the page does; the answer is the event id, or a refusal."""
    return httpx.post(f"{app_url}gradio_api/queue/join", headers={"X-Forwarded-For": address}, timeout=WAIT,
                      json={"data": data, "fn_index": fn_index(api_name), "session_hash": session})


def queued(answer: httpx.Response) -> str:
    assert answer.status_code == 200, (answer.status_code, answer.text)
    return answer.json()["event_id"]


def messages(app_url: str, session: str):
    """The tab's event stream, one message at a time (opened once; closing it drops the tab's calls)."""
    with httpx.stream("GET", f"{app_url}gradio_api/queue/data", params={"session_hash": session},
                      timeout=httpx.Timeout(WAIT)) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                yield json.loads(line[5:])


def completed(stream, event_id: str) -> dict:
    """Read on to the call's answer; returns its data, or fails with the error it carried."""
    for message in stream:
        if message.get("event_id") == event_id and message.get("msg") == "process_completed":
            assert message.get("success"), message.get("output")
            return message["output"]
    raise AssertionError(f"the stream ended without an answer to {event_id}")


def rank(stream, event_id: str) -> int:
    """The first place in line the server tells the call (0: next)."""
    for message in stream:
        if message.get("event_id") == event_id and message.get("msg") == "estimation":
            return message["rank"]
    raise AssertionError(f"the stream ended without a place for {event_id}")


def answered(app_url: str, session: str, event_ids: list[str]) -> list[dict]:
    """Every call's answer, in the order the tab's stream brings them."""
    left, outputs = set(event_ids), []
    for message in messages(app_url, session):
        if message.get("event_id") in left and message.get("msg") == "process_completed":
            assert message.get("success"), message.get("output")
            outputs.append((message["event_id"], message["output"]))
            left.discard(message["event_id"])
            if not left:
                return outputs
    raise AssertionError(f"no answer to {left}")


class Held:
    """The live group held: calls join and wait, none starts, until `release`. Gradio starts a
    group's next call while fewer than its limit run; the hold counts as that many more running."""

    HOLD = 1_000

    def __init__(self) -> None:
        import app

        queue = app.demo._queue
        tab = next(fn for fn in app.demo.fns.values() if fn.concurrency_id == "live")
        queue.create_event_queue_for_fn(tab)
        self.group = queue.event_queue_per_concurrency_id["live"]
        self.group.current_concurrency += self.HOLD
        self.held = True

    def release(self) -> None:
        if self.held:
            self.group.current_concurrency -= self.HOLD
            self.held = False


@contextmanager
def held(app_url: str, drain: list[tuple[str, str]]):
    """Hold the live group for the block; afterwards let it go and read every call in `drain`
    ((tab, event id) pairs) to its answer, so the next test finds an empty line."""
    hold = Held()
    try:
        yield hold
    finally:
        hold.release()
        by_tab: dict[str, list[str]] = {}
        for session, event_id in drain:
            by_tab.setdefault(session, []).append(event_id)
        for session, event_ids in by_tab.items():
            answered(app_url, session, event_ids)


@pytest.fixture()
def admission(app_url, monkeypatch):
    """The launched app's account of visitors, which its queue asks; its bounds restored after the test."""
    import app

    found = app.demo.admission.visitors  # the process's one account, which the queue asks (ui/visitors.py)
    for name in ("waiting", "address_work", "per_tab"):
        monkeypatch.setattr(found, name, getattr(found, name))
    return found


def test_a_students_update_goes_ahead_of_a_flood_from_another_address(app_url, admission):
    """The issue's case, scaled down: oversized calls from one address, each from its own tab,
    wait in line; a student's update from another address is next, not behind them all."""
    flood = []
    with held(app_url, flood):
        for i in range(8):
            session = tab()
            flood.append((session, queued(join(app_url, [f"{BIG[:-10]} {i}", BIG], session, STRANGER))))
        student = tab()
        event_id = queued(join(app_url, list(PAIR), student, STUDENT))
        stream = messages(app_url, student)  # kept open to the answer: closing it would drop the call
        assert rank(stream, event_id) == 0  # first in, first out: 8
    out = named("/embed", completed(stream, event_id)["data"])
    assert out.written("embed-plot")
    stream.close()


def test_a_visitor_waits_for_at_most_one_call_of_an_address_that_sent_several(app_url, admission):
    """Short calls too: three waiting from one address, a fourth visitor's from another is
    second at most (after the call whose turn is in hand), not fourth."""
    drain = []
    with held(app_url, drain):
        for i in range(3):
            session = tab()
            drain.append((session, queued(join(app_url, [f"{PAIR[0]} {i}", PAIR[1]], session, STRANGER))))
        student = tab()
        event_id = queued(join(app_url, [f"{PAIR[0]}!", PAIR[1]], student, STUDENT))
        stream = messages(app_url, student)
        assert rank(stream, event_id) <= 1
    completed(stream, event_id)
    stream.close()


def test_behind_one_address_a_short_update_passes_a_strangers_long_calls_but_never_its_own_tabs(app_url,
                                                                                                admission):
    """A class behind one school address with a stranger among it: a classmate's short update
    goes ahead of the stranger's long calls from other tabs; a tab's own calls keep their order."""
    drain = []
    with held(app_url, drain) as hold:
        for i in range(3):
            session = tab()
            drain.append((session, queued(join(app_url, [f"{BIG[:-10]} {i}", BIG], session, STRANGER))))
        classmate = tab()
        event_id = queued(join(app_url, list(PAIR), classmate, STRANGER))
        stream = messages(app_url, classmate)
        assert rank(stream, event_id) == 0  # first in, first out: 3
        mine = tab()
        own_long = queued(join(app_url, [BIG[:-1], BIG], mine, STRANGER))
        own_short = queued(join(app_url, list(PAIR), mine, STRANGER))
        drain += [(mine, own_long), (mine, own_short)]
        order = [event._id for event in hold.group.queue]
        assert order.index(own_long) < order.index(own_short)  # its own long call is not passed
    completed(stream, event_id)
    stream.close()


def test_past_its_share_an_address_is_refused_at_once_with_a_sentence(app_url, admission):
    admission.address_work = 5  # about five short updates
    drain = []
    with held(app_url, drain):
        for _ in range(4):
            session = tab()
            drain.append((session, queued(join(app_url, list(PAIR), session, STRANGER))))
        refused = join(app_url, list(PAIR), tab(), STRANGER)
        assert refused.status_code == 429
        sentence = refused.json()["detail"]
        assert "Your address already has" in sentence and "Try again in a few seconds" in sentence
        assert refused.headers.get("retry-after") == "5"
        session = tab()  # another visitor is not refused for the stranger's calls
        drain.append((session, queued(join(app_url, list(PAIR), session, STUDENT))))


def test_a_flood_past_its_share_is_refused_before_gradio_reads_it(app_url, admission):
    """The plain API route reads a call's body and makes a gradio session for its hash before it
    queues it; past the address's share, a call is answered from its address alone (ui.admission.Door)."""
    import app

    admission.address_work = 1.5  # one short update
    drain = []
    with held(app_url, drain):
        session = tab()
        drain.append((session, queued(join(app_url, list(PAIR), session, STRANGER))))
        refused = tab()
        answer = httpx.post(f"{app_url}gradio_api/call/embed", headers={"X-Forwarded-For": STRANGER},
                            json={"data": [BIG, BIG], "session_hash": refused}, timeout=WAIT)
        assert answer.status_code == 429 and "Try again in a few seconds" in answer.json()["detail"]
        assert refused not in app.demo.state_holder  # gradio made nothing for it


def test_long_text_counts_for_more_of_an_addresss_share(app_url, admission):
    """The cost cap: two sentences at the limit count 21 short updates (ui.admission.work_of)."""
    admission.address_work = 30
    drain = []
    with held(app_url, drain):
        session = tab()
        drain.append((session, queued(join(app_url, [BIG[:-1], BIG], session, STRANGER))))
        assert join(app_url, [BIG[:-2], BIG], tab(), STRANGER).status_code == 429  # 21 + 21 > 30
        session = tab()
        drain.append((session, queued(join(app_url, list(PAIR), session, STRANGER))))  # 21 + 1 fits


def test_one_tab_may_have_only_a_few_calls_waiting(app_url, admission):
    session = tab()
    drain = []
    with held(app_url, drain):
        for i in range(admission.per_tab):
            drain.append((session, queued(join(app_url, [f"{PAIR[0]} {i}", PAIR[1]], session, STUDENT))))
        refused = join(app_url, list(PAIR), session, STUDENT)
        assert refused.status_code == 429
        assert "This page already has 4 calls waiting" in refused.json()["detail"]


def test_past_the_whole_lines_bound_only_an_address_holding_its_share_is_refused(app_url, admission):
    """A flood can fill the bound on every call waiting, never so that it turns others away: past
    it, a call from an address that holds its share of the line is refused at once, with a
    sentence, and a call from any other address is still taken."""
    import app

    admission.waiting = len(app.demo._queue) + 3
    drain = []
    with held(app_url, drain):
        for i in range(3):
            session = tab()
            drain.append((session, queued(join(app_url, [f"{PAIR[0]} {i}", PAIR[1]], session, STRANGER))))
        refused = join(app_url, list(PAIR), tab(), STRANGER)
        assert refused.status_code == 503
        assert "Try again in a minute" in refused.json()["detail"]
        api = httpx.post(f"{app_url}gradio_api/call/embed", headers={"X-Forwarded-For": STRANGER},
                         json={"data": list(PAIR), "session_hash": tab()}, timeout=WAIT)
        assert api.status_code == 503 and "calls waiting from its visitors" in api.json()["detail"]
        session = tab()
        drain.append((session, queued(join(app_url, list(PAIR), session, STUDENT))))  # another visitor: taken


def test_a_tabs_newer_update_replaces_its_older_one_still_waiting_but_a_toggle_is_never_replaced(app_url,
                                                                                               admission):
    """The older call is answered with no change; only the newer one computes. An event without
    inputs (a toggle such as flip, a fetch such as share) is not made redundant by a newer one."""
    session = tab()
    with held(app_url, []) as hold:
        older = queued(join(app_url, ["the older sentence", ""], session, STUDENT))
        newer = queued(join(app_url, ["the newer sentence", ""], session, STUDENT))
        assert [e._id for e in hold.group.queue if e.session_hash == session] == [older, newer]  # in order
        hold.release()
        answers = dict(answered(app_url, session, [older, newer]))
    assert all(unchanged(value) for value in answers[older]["data"])
    plot = named("/embed", answers[newer]["data"])["embed-plot"]
    assert "newer" in plot["plot"] and "older" not in plot["plot"]

    with held(app_url, []) as hold:
        first = queued(join(app_url, [], session, STUDENT, "share"))
        second = queued(join(app_url, [], session, STUDENT, "share"))
        hold.release()
        answers = dict(answered(app_url, session, [first, second]))
    assert all(not all(unchanged(value) for value in answers[i]["data"]) for i in (first, second))


def test_a_call_whose_tab_gradio_let_go_while_it_waited_does_not_stop_the_queue(app_url, admission):
    """Gradio keeps the messages of its 2,000 newest tabs; a flood of tabs let an older tab's
    entry go while its call still waited, and the next estimate sent to it stopped the queue's
    loop for good ("Queue is stopped" for everyone). Letting one entry go is what 2,000 newer
    tabs do."""
    import app

    first, forgotten = tab(), tab()
    with held(app_url, []) as hold:
        event_id = queued(join(app_url, list(PAIR), first, STRANGER))
        queued(join(app_url, [f"{PAIR[0]} too", PAIR[1]], forgotten, STRANGER))
        del app.demo._queue.pending_messages_per_session[forgotten]
        hold.release()
        answered(app_url, first, [event_id])  # its start sends the line behind it their places
    student = tab()
    event_id = queued(join(app_url, list(PAIR), student, STUDENT))  # "Queue is stopped": 503
    assert named("/embed", answered(app_url, student, [event_id])[0][1]["data"]).written("embed-plot")


@pytest.mark.parametrize(("hops", "forwarded", "seen"), [
    (1, "198.51.100.20", "198.51.100.20"),
    (1, "203.0.113.99, 198.51.100.20", "198.51.100.20"),  # a client's own entry to the left is not believed
    (2, "203.0.113.99, 198.51.100.20, 10.0.0.5", "198.51.100.20"),
    (1, None, "10.16.3.80"),  # no header: the peer, as it was
    (0, "203.0.113.99", "10.16.3.80"),  # off
])
def test_the_client_address_is_the_one_the_trusted_proxy_appended(hops, forwarded, seen):
    from tests.appapi import run_async
    from ui.admission import ForwardedClient

    found = []

    async def app(scope, receive, send):
        found.append(scope["client"][0])

    headers = [] if forwarded is None else [(b"x-forwarded-for", forwarded.encode())]
    scope = {"type": "http", "client": ("10.16.3.80", 5000), "headers": headers}
    run_async(lambda: ForwardedClient(app, hops=hops)(scope, None, None))
    assert found == [seen]


@pytest.mark.parametrize("number", [9_999, -5])
def test_a_join_naming_an_event_the_app_does_not_have_is_a_404_with_a_sentence(app_url, number):
    """Gradio looked the number up and raised KeyError: a 500 for any stranger's junk."""
    answer = httpx.post(f"{app_url}gradio_api/queue/join",
                        json={"data": [], "fn_index": number, "session_hash": uuid.uuid4().hex}, timeout=30)
    assert answer.status_code == 404 and f"no event number {number}" in answer.json()["detail"]
    assert httpx.post(f"{app_url}gradio_api/call/embed", json={"data": ["a", "b"]}, timeout=30).status_code == 200


def waiting_call(address: str, text: str = "a short update", session: str | None = None):
    """A stand-in for gradio's waiting Event: what FairLine reads of one."""
    from types import SimpleNamespace

    return SimpleNamespace(data=SimpleNamespace(data=[text, ""]), session_hash=session or tab(),
                           request=SimpleNamespace(client=SimpleNamespace(host=address)))


def test_once_the_line_has_emptied_an_address_that_sent_before_is_not_behind_a_newcomer():
    """Found on a CI machine: an address's last finish stayed ahead of the clock after its
    calls were all taken, so its next update waited behind a stranger's first long call."""
    from ui.admission import FairLine

    line = FairLine()
    for _ in range(3):  # the student's earlier updates, each taken in turn
        call = waiting_call(STUDENT)
        line.append(call)
        line.remove(line[0])
    assert not line
    flood = waiting_call(STRANGER, BIG)
    line.append(flood)
    update = waiting_call(STUDENT)
    line.append(update)
    assert line.place(update) == 0 and line.place(flood) == 1

    busy = FairLine()  # while the line is not empty, an address's recent calls still count
    busy.append(waiting_call(CLASSMATE))
    for _ in range(3):
        busy.append(waiting_call(STUDENT))
    newcomer = waiting_call(STRANGER)
    busy.append(newcomer)
    assert busy.place(newcomer) <= 2
