"""The lines every call waits in, bounded and fair across visitors (`ui.admission.Turns`).

Every call — a keystroke, a table change, the page's work, an API call — waits in one of the
page's route's lanes (`ui.route.Live.lanes`), each a `Turns`: served in fair turns across
client addresses, weighted by work, and bounded by the account (`ui.admission.Visitors`). The
cases go through the launched app over HTTP, as a stranger's script or a page would; the client's
address is the one its trusted proxy appended to X-Forwarded-For (uvicorn's
`ProxyHeadersMiddleware`, as `ui.page.launch_options` sets it up), which the launched app trusts
from its loopback peer.

A flood is scaled down, not sent: a lane is held (as if its slots were taken, so calls wait and
none starts) while a few calls join, and the bounds are lowered on the app's own account where
a case needs them (tests/lanes.py). Nothing here is timed.
"""

from __future__ import annotations

import asyncio
import json
import socket
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import httpx
import pytest

from core.view.options import MAX_TEXT
from tests.appapi import Page, outputs
from tests.lanes import WAIT, all_taken, held, lane, post, tabs_waiting, until

STRANGER = "203.0.113.7"  # documentation addresses, forwarded as a proxy would
STUDENT = "198.51.100.20"
CLASSMATE = "198.51.100.21"
PAIR = ("the quick brown fox jumps over", "a lazy dog by the river")
BIG = "word " * (MAX_TEXT // 5)  # a sentence at the limit


@pytest.fixture()
def admission(app_url, monkeypatch):
    """The launched app's account of visitors, which every lane asks; its bounds restored after the test."""
    from ui.admission import VISITORS

    for name in ("waiting", "address_work", "per_tab"):
        monkeypatch.setattr(VISITORS, name, getattr(VISITORS, name))
    return VISITORS


def page_of(app_url: str, address: str) -> Page:
    return Page(app_url, headers={"X-Forwarded-For": address})


def api_client(app_url: str, address: str):
    from gradio_client import Client

    return Client(app_url, verbose=False, headers={"X-Forwarded-For": address})


def test_a_students_table_change_goes_ahead_of_a_flood_from_another_address(app_url, admission):
    """The issue's case, scaled down: oversized table changes from one address, each from a page
    of its own, wait in line; a student's change from another address is next, not behind them all."""
    pages = [page_of(app_url, STRANGER) for _ in range(8)]
    student = page_of(app_url, STUDENT)
    turns = lane("tables")
    with ThreadPoolExecutor(9) as pool, held(turns) as release:
        flood = [pool.submit(post, app_url, page.key, {"seed": 100 + i, "sentence_a": BIG[:-10], "sentence_b": BIG},
                             STRANGER) for i, page in enumerate(pages)]
        until(lambda: len(turns.waiting()) == 8, "the flood's eight calls waiting")
        mine = pool.submit(post, app_url, student.key, {"seed": 7}, STUDENT)
        until(lambda: len(turns.waiting()) == 9, "the student's call waiting")
        assert tabs_waiting(turns).index(student.key) == 0  # first come, first served: 8
        release()
        out = outputs(mine.result(WAIT).json()["values"])
        for call in flood:
            assert "values" in call.result(WAIT).json()
    assert out.written("embed-plot") and student.tab.view.seed == 7


def test_an_api_caller_waits_for_at_most_one_call_of_an_address_that_sent_several(app_url, admission):
    """The public API's calls take the same turns (on the lane of the page's work): three waiting
    from one address, a fourth visitor's from another is second at most, not fourth."""
    Page(app_url)  # the page's route has seen the server's loop
    turns = lane("work")
    strangers = [api_client(app_url, STRANGER) for _ in range(3)]
    student = api_client(app_url, STUDENT)
    try:
        with held(turns) as release:
            jobs = [client.submit(f"a=stranger+{i}", api_name="/view") for i, client in enumerate(strangers)]
            until(lambda: len(turns.waiting()) == 3, "the stranger's three calls waiting")
            mine = student.submit("a=the+student", api_name="/view")
            until(lambda: len(turns.waiting()) == 4, "the student's call waiting")
            assert [call.address for call in turns.waiting()].index(STUDENT) <= 1
            release()
            answer = mine.result(WAIT)
            for job in jobs:
                job.result(WAIT)
    finally:
        for client in (*strangers, student):
            client.close()
    assert "student" in [row[0] for row in answer["tokens"]]


def test_behind_one_address_a_short_change_passes_a_strangers_long_calls_but_never_its_own_pages(app_url,
                                                                                                 admission):
    """A class behind one school address with a stranger among it: a classmate's short change
    goes ahead of the stranger's long calls from other pages; a page's own calls keep their order."""
    pages = [page_of(app_url, STRANGER) for _ in range(3)]
    classmate, mine = page_of(app_url, STRANGER), page_of(app_url, STRANGER)
    turns = lane("tables")
    with ThreadPoolExecutor(6) as pool, held(turns):
        for i, page in enumerate(pages):
            pool.submit(post, app_url, page.key, {"seed": 200 + i, "sentence_a": BIG[:-10], "sentence_b": BIG},
                        STRANGER)
        until(lambda: len(turns.waiting()) == 3, "the stranger's three long calls waiting")
        pool.submit(post, app_url, classmate.key, {"seed": 3}, STRANGER)
        until(lambda: len(turns.waiting()) == 4, "the classmate's call waiting")
        assert tabs_waiting(turns).index(classmate.key) == 0  # first come, first served: 3
        pool.submit(post, app_url, mine.key, {"seed": 4, "sentence_a": BIG[:-1], "sentence_b": BIG}, STRANGER)
        until(lambda: len(turns.waiting()) == 5, "a page's own long call waiting")
        pool.submit(post, app_url, mine.key, {"seed": 5}, STRANGER)
        until(lambda: len(turns.waiting()) == 6, "the same page's short call waiting")
        order = tabs_waiting(turns)
        assert order[-2:] == [mine.key, mine.key]  # its own long call is not passed
    until(lambda: len(turns.waiting()) == 0, "every call answered")


def test_past_its_share_an_address_is_refused_at_once_with_a_sentence(app_url, admission):
    admission.address_work = 5  # about four short updates
    pages = [page_of(app_url, STRANGER) for _ in range(5)]
    student = page_of(app_url, STUDENT)
    turns = lane("keys")
    with ThreadPoolExecutor(6) as pool, held(turns):
        for page in pages[:4]:
            pool.submit(post, app_url, page.key, {"sentence_a": PAIR[0]}, STRANGER)
        until(lambda: len(turns.waiting()) == 4, "the stranger's four calls waiting")
        refused = post(app_url, pages[4].key, {"sentence_a": PAIR[0]}, STRANGER)
        assert refused.status_code == 429
        sentence = refused.json()["error"]
        assert "Your address already has" in sentence and "Try again in a few seconds" in sentence
        assert refused.headers.get("retry-after") == "5"
        pool.submit(post, app_url, student.key, {"sentence_a": PAIR[0]}, STUDENT)  # another visitor is not refused
        until(lambda: len(turns.waiting()) == 5, "the student's call waiting")
    assert pages[4].tab.view.sentence_a != PAIR[0]  # the refused call changed nothing


def test_long_text_counts_for_more_of_an_addresss_share(app_url, admission):
    """The cost cap: two sentences at the limit count 21 short updates (ui.admission.work_of)."""
    admission.address_work = 30
    first, second, third = (page_of(app_url, STRANGER) for _ in range(3))
    turns = lane("keys")
    with ThreadPoolExecutor(3) as pool, held(turns):
        pool.submit(post, app_url, first.key, {"sentence_a": BIG[:-1], "sentence_b": BIG}, STRANGER)
        until(lambda: len(turns.waiting()) == 1, "the first long call waiting")
        refused = post(app_url, second.key, {"sentence_a": BIG[:-2], "sentence_b": BIG}, STRANGER)
        assert refused.status_code == 429  # 21 + 21 > 30
        pool.submit(post, app_url, third.key, {"sentence_a": PAIR[0]}, STRANGER)  # 21 + 1 fits
        until(lambda: len(turns.waiting()) == 2, "the short call waiting")


def test_one_page_may_have_only_a_few_calls_waiting(app_url, admission):
    page = page_of(app_url, STUDENT)
    turns = lane("tables")
    with ThreadPoolExecutor(admission.per_tab) as pool, held(turns):
        for seed in range(admission.per_tab):
            pool.submit(post, app_url, page.key, {"seed": 300 + seed}, STUDENT)
            until(lambda n=seed: len(turns.waiting()) == n + 1, "the page's calls waiting")
        refused = post(app_url, page.key, {"seed": 399}, STUDENT)
        assert refused.status_code == 429
        assert "This page already has 4 calls waiting" in refused.json()["error"]
    until(lambda: len(turns.waiting()) == 0, "every call answered")
    assert page.tab.view.seed != 399  # the refused call changed nothing


def test_past_the_whole_lines_bound_only_an_address_holding_its_share_is_refused(app_url, admission):
    """A flood can fill the bound on every call waiting, never so that it turns others away: past
    it, a call from an address that holds its share of the line is refused at once, with a
    sentence, and a call from any other address is still taken."""
    pages = [page_of(app_url, STRANGER) for _ in range(4)]
    student = page_of(app_url, STUDENT)
    turns = lane("keys")
    admission.waiting = len(admission.calls()) + 3
    with ThreadPoolExecutor(4) as pool, held(turns):
        for page in pages[:3]:
            pool.submit(post, app_url, page.key, {"sentence_a": PAIR[0]}, STRANGER)
        until(lambda: len(turns.waiting()) == 3, "the stranger's three calls waiting")
        refused = post(app_url, pages[3].key, {"sentence_a": PAIR[0]}, STRANGER)
        assert refused.status_code == 503 and "Try again in a minute" in refused.json()["error"]
        api = httpx.post(f"{app_url}gradio_api/call/view", headers={"X-Forwarded-For": STRANGER},
                         json={"data": ["a=x"]}, timeout=WAIT)
        assert api.status_code == 503 and "calls waiting from its visitors" in api.json()["detail"]
        pool.submit(post, app_url, student.key, {"sentence_a": PAIR[0]}, STUDENT)  # another visitor: taken
        until(lambda: len(turns.waiting()) == 4, "the student's call waiting")


def test_a_pages_keystrokes_join_its_call_still_waiting_and_its_work_is_never_merged(app_url, admission):
    """A change made while the page's keystroke call waits joins that call (answered at once,
    "merged"): one turn, whose answer shows the newest text. The page's work (a link, an
    export) is never made redundant by a newer call: each is answered."""
    page = page_of(app_url, STUDENT)
    turns = lane("keys")
    with ThreadPoolExecutor(1) as pool, held(turns):
        older = pool.submit(post, app_url, page.key, {"sentence_a": "the older sentence"}, STUDENT)
        until(lambda: len(turns.waiting()) == 1, "the older call waiting")
        assert post(app_url, page.key, {"sentence_a": "the newer sentence"}, STUDENT).json() == {"merged": True}
        assert len(turns.waiting()) == 1
    plot = outputs(older.result(WAIT).json()["values"])["embed-plot"]["plot"]
    assert "newer" in plot and "older" not in plot

    work = lane("work")
    with ThreadPoolExecutor(2) as pool, held(work):
        links = []
        for asked, host in enumerate(("http://one.example/", "http://two.example/"), 1):
            links.append(pool.submit(post, app_url, page.key, {"link": host}, STUDENT))
            until(lambda asked=asked: len(work.waiting()) == asked, "the links asked for")
    for host, link in zip(("http://one.example/", "http://two.example/"), links, strict=True):
        assert outputs(link.result(WAIT).json()["values"]).value("share-link").startswith(f"{host}?")


def test_a_call_whose_page_went_away_while_it_waited_is_dropped_and_the_line_goes_on(app_url, admission):
    """A page closed while its call waited: the call leaves the line before anything is computed
    for it, and the next visitor is served."""
    gone, student = page_of(app_url, STRANGER), page_of(app_url, STUDENT)
    turns = lane("keys")
    where = urlsplit(app_url)
    body = json.dumps({"key": gone.key, "change": {"sentence_a": "never computed"}}).encode()
    with ThreadPoolExecutor(1) as pool, held(turns):
        with socket.create_connection((where.hostname, where.port), timeout=WAIT) as leaving:
            leaving.sendall(b"POST /explorer/live HTTP/1.1\r\nHost: %s\r\nX-Forwarded-For: %s\r\nContent-Type: "
                            b"application/json\r\nContent-Length: %d\r\n\r\n%s"
                            % (where.netloc.encode(), STRANGER.encode(), len(body), body))
            until(lambda: len(turns.waiting()) == 1, "the call waiting")
        until(lambda: len(turns.waiting()) == 0, "the call of the page that went away dropped")
        mine = pool.submit(post, app_url, student.key, {"sentence_a": "served"}, STUDENT)
        until(lambda: len(turns.waiting()) == 1, "the student's call waiting")
    assert "values" in mine.result(WAIT).json()
    assert gone.tab.view.sentence_a != "never computed"


# --- the client's address behind a proxy ------------------------------------------------------------


def proxy_headers(monkeypatch, environment: dict[str, str]):
    """The app's reading of X-Forwarded-For (uvicorn's ProxyHeadersMiddleware) as `launch_options`
    sets it up under `environment`, in front of an app that records the client it sees."""
    from starlette.middleware import Middleware
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    import app
    from ui.page import launch_options

    for name in ("SPACE_ID", "FORWARDED_ALLOW_IPS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    middleware = launch_options(app.demo)["app_kwargs"]["middleware"]
    (reading,) = [each for each in middleware if isinstance(each, Middleware) and each.cls is ProxyHeadersMiddleware]
    seen: list[str] = []

    async def recorded(scope, receive, send):
        seen.append(scope["client"][0])

    def client_of(peer: str, forwarded: str | None) -> str:
        headers = [] if forwarded is None else [(b"x-forwarded-for", forwarded.encode())]
        scope = {"type": "http", "scheme": "http", "client": (peer, 5000), "headers": headers}
        with ThreadPoolExecutor(1) as pool:  # a loop of its own (a test before may leave one running here)
            pool.submit(asyncio.run, reading.cls(recorded, *reading.args, **reading.kwargs)(scope, None, None)).result()
        return seen.pop()

    return client_of


SPACE = {"SPACE_ID": "someone/embedding-explorer"}  # on a Space: its proxy reaches the app from private addresses


@pytest.mark.parametrize(("environment", "peer", "forwarded", "seen"), [
    (SPACE, "10.16.3.80", "198.51.100.20", "198.51.100.20"),
    # a client's own entry to the left of what the proxy appended is not believed: it claims nothing
    (SPACE, "10.16.3.80", "203.0.113.99, 198.51.100.20", "198.51.100.20"),
    (SPACE, "10.16.3.80", "1.2.3.4, 5.6.7.8, 198.51.100.20", "198.51.100.20"),
    (SPACE, "10.16.3.80", "203.0.113.99, 198.51.100.20, 10.0.0.5", "198.51.100.20"),  # two proxies of the Space's
    (SPACE, "10.16.3.80", None, "10.16.3.80"),  # no header: the peer, as it is
    (SPACE, "203.0.113.50", "198.51.100.20", "203.0.113.50"),  # a peer outside is no proxy: its header is not read
    ({}, "10.16.3.80", "198.51.100.20", "10.16.3.80"),  # off a Space only loopback is trusted (make class's HAProxy)
    ({}, "127.0.0.1", "203.0.113.99, 198.51.100.20", "198.51.100.20"),
    ({"FORWARDED_ALLOW_IPS": "192.0.2.1"}, "192.0.2.1", "203.0.113.99, 198.51.100.20", "198.51.100.20"),
    ({"FORWARDED_ALLOW_IPS": "192.0.2.1"}, "127.0.0.1", "198.51.100.20", "127.0.0.1"),
], ids=["space", "space-spoofed", "space-spoofed-many", "space-two-hops", "space-no-header", "space-outsider",
        "loopback-only", "loopback-spoofed", "named-proxy", "named-proxy-only"])
def test_the_client_address_is_the_one_the_trusted_proxy_appended(monkeypatch, environment, peer, forwarded, seen):
    assert proxy_headers(monkeypatch, environment)(peer, forwarded) == seen


def test_a_spoofed_forwarded_entry_cannot_claim_a_new_address_for_a_flood(app_url, monkeypatch):
    """Through the launched app: a stranger who writes a new address to the left of every call's
    X-Forwarded-For is still counted as the one address its proxy appended, so its new pages are
    limited as one address's, its calls share one address's turns, and a student is untouched."""
    import ui.route
    from core.serving.tabs import Tabs

    store = Tabs(new_tabs=3, refill=600.0)
    monkeypatch.setattr(ui.route, "TABS", store)
    answers = [httpx.post(f"{app_url}explorer/live", json={"open": {"query": ""}}, timeout=WAIT,
                          headers={"X-Forwarded-For": f"192.0.2.{i}, {STRANGER}"}).json() for i in range(6)]
    opened = [answer for answer in answers if "values" in answer]
    assert len(opened) == 3 and len(store._lives) == 3
    assert all("Too many new pages from your address" in answer["error"] for answer in answers if "error" in answer)
    keys = [json.loads(answer["values"]["address"])["key"] for answer in opened]
    assert {store.kept(key).client for key in keys} == {STRANGER}
    student = Page(app_url, headers={"X-Forwarded-For": f"203.0.113.250, {STUDENT}"})
    assert store.kept(student.key).client == STUDENT

    turns = lane("keys")
    with ThreadPoolExecutor(3) as pool, held(turns):
        for i, key in enumerate(keys):
            pool.submit(post, app_url, key, {"sentence_a": PAIR[0]}, f"192.0.2.{50 + i}, {STRANGER}")
        until(lambda: len(turns.waiting()) == 3, "the stranger's calls waiting")
        assert {call.address for call in turns.waiting()} == {STRANGER}


# --- the fair clock, in process -----------------------------------------------------------------------


def in_a_loop_of_its_own(coroutine) -> None:
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coroutine).result()


def test_once_the_line_has_emptied_an_address_that_sent_before_is_not_behind_a_newcomer():
    """Found on a CI machine: an address's last finish stayed ahead of the clock after its calls
    were all taken, so its next update waited behind a stranger's first long call."""
    from ui.admission import Turns, Visitors

    account = Visitors()
    line = Turns(account)

    async def calls():
        for i in range(3):  # the student's earlier updates, each taken in turn
            async with line.taken(line.enter(STUDENT, f"earlier {i}", 1.0)):
                pass
        assert not line.waiting()
        async with all_taken(line):
            line.enter(STRANGER, "flood", 21.0)
            line.enter(STUDENT, "update", 1.0)
            assert [call.tab for call in line.waiting()] == ["update", "flood"]

        busy = Turns(Visitors())  # while the line is not empty, an address's recent calls still count
        async with all_taken(busy):
            busy.enter(CLASSMATE, "classmate", 1.0)
            for i in range(3):
                busy.enter(STUDENT, f"student {i}", 1.0)
            busy.enter(STRANGER, "newcomer", 1.0)
            assert [call.tab for call in busy.waiting()].index("newcomer") <= 2

    in_a_loop_of_its_own(calls())


def test_behind_one_address_a_short_call_passes_only_other_pages_heavier_calls():
    """`Turns` within one address: a call goes ahead of the address's waiting calls from other
    pages that are at least `PASS` times heavier (they move back by its work, in their own order),
    never ahead of its own page's calls nor of calls about as light as it."""
    from ui.admission import Turns, Visitors

    line = Turns(Visitors())

    async def calls():
        async with all_taken(line):
            for name in ("long 1", "long 2", "long 3"):
                line.enter(STRANGER, name, 21.0)
            line.enter(STRANGER, "short", 1.0)
            assert [call.tab for call in line.waiting()] == ["short", "long 1", "long 2", "long 3"]
            line.enter(STRANGER, "long 3", 1.0)  # its own page's long call stays ahead of it
            assert [call.tab for call in line.waiting()][-2:] == ["long 3", "long 3"]
            line.enter(STRANGER, "light", 1.0)  # the calls behind it are about as light: it waits its turn
            assert [call.tab for call in line.waiting()][-1] == "light"
            line.enter(STUDENT, "student", 1.0)  # another address still takes its fair turn
            assert [call.tab for call in line.waiting()].index("student") <= 1

    in_a_loop_of_its_own(calls())


def test_every_api_call_waiting_is_in_the_account_so_one_address_cannot_fill_gradios_line(app_url, admission):
    """gradio hands each API call on at once: waiting, it is in the app's fair line, where the account
    sees it and bounds it per address. (Left in gradio's own first-come line, one address's calls
    filled it, and every other visitor's was refused "Queue is full".) Scaled down: more calls than
    gradio ever ran at once (16) all wait in the app's line; past the address's share the account
    refuses the next with its sentence; another address's call is still taken and answered."""
    Page(app_url)  # the page's route has seen the server's loop
    turns = lane("work")
    admission.address_work = 24.6  # an address may hold 24 short calls waiting (each a little over 1)
    stranger, student = api_client(app_url, STRANGER), api_client(app_url, STUDENT)
    try:
        with held(turns) as release:
            flood = [stranger.submit(f"a=call+{i}", api_name="/view") for i in range(24)]
            until(lambda: len(turns.waiting()) == 24, "the stranger's 24 calls waiting in the app's line")
            with pytest.raises(httpx.HTTPStatusError) as refused:  # at the door, before gradio reads it
                stranger.predict("a=one+more", api_name="/view")
            assert refused.value.response.status_code == 429
            assert "Your address already has 24 units of work waiting" in refused.value.response.json()["detail"]
            mine = student.submit("a=the+student", api_name="/view")
            until(lambda: len(turns.waiting()) == 25, "the student's call waiting")
            release()
            answer = mine.result(WAIT)
            for job in flood:
                job.result(WAIT)
    finally:
        stranger.close()
        student.close()
    assert "student" in [row[0] for row in answer["tokens"]]
