"""A public Space meets strangers: hostile links, huge requests, greedy visitors, curious probes.

Every case goes through the launched app (gradio_client over HTTP, or a real Chromium), as a
stranger's request would:

* a link's names and values are shown as text, never as a link, an image or a form, and the
  browser never fetches anything they name;
* the server refuses text over `core.view.options.MAX_TEXT` before any work, and a refusal changes
  nothing (`/fingerprint` before and after);
* one tab holds at most one heavy job, so another visitor waits for at most one job;
* the tests' own `/fingerprint` endpoint exists only when asked for;
* exports do not pile up on disk, and a link cannot ask for an unbounded background.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from core.view.options import LIMITS, MAX_TEXT
from tests.appapi import key_of
from tests.browser import COUNT_REQUESTS, IMAGES_SETTLED, PLOT, settle
from tests.clocks import Clock
from tests.waiting import eventually

# the tests' /fingerprint endpoint is read when `app` is first imported (by conftest's app_url)
os.environ.setdefault("EMBEDDING_EXPLORER_TEST_HOOKS", "1")

ROOT = Path(__file__).resolve().parents[1]
HUGE = "word " * 1_000_000  # 5,000,000 characters
LIMIT_TEXT = f"{MAX_TEXT:,}"  # "10,000", as every message writes it
EXPORT_BUDGET = 15 * 2**20  # bytes 12 exports may leave behind


# --- helpers ----------------------------------------------------------------------------------


def api_outputs(client, api: str) -> list[str | None]:
    """The elem_ids of an endpoint's outputs, in the order gradio_client returns them (it leaves
    out components hidden from the API, such as tabs)."""
    components = {c["id"]: c for c in client.config["components"]}
    (dependency,) = [d for d in client.config["dependencies"] if d.get("api_name") == api]
    return [components[i].get("props", {}).get("elem_id") for i in dependency["outputs"]
            if not components[i].get("skip_api", False)]


def output(client, api: str, result, elem_id: str):
    values = result if isinstance(result, tuple | list) else (result,)
    return values[api_outputs(client, api).index(elem_id)]


def text_of(value) -> str:
    """An output's text; "" when the event left it unchanged (gradio sends an update marker)."""
    return value if isinstance(value, str) else ""


def fingerprint(client) -> str:
    return client.predict(api_name="/fingerprint")


def new_client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


# --- a. markup from a link stays text ---------------------------------------------------------

FORM = ("<form action=https://evil.example>", "<input name=pw>", "</form>")
LINKS = [
    pytest.param("k=" + "[Log in](https://evil.example/login)", ["[Log in](https://evil.example/login)"],
                 id="markdown-link"),
    pytest.param("k=" + "![x](https://evil.example/p.png)", ["![x](https://evil.example/p.png)"],
                 id="markdown-image"),
    pytest.param(urlencode([(name, "1") for name in FORM]), list(FORM), id="form-from-names"),
    pytest.param(urlencode({"source": "<img src=x onerror=alert(1)>"}), ["<img src=x onerror=alert(1)>"],
                 id="html-image"),
    # sentences are drawn (plot labels, hover text, tables), not noted: they must stay text too
    pytest.param(urlencode({"a": '<a href="https://evil.example/a">click</a> [Log in](https://evil.example/b)',
                            "b": "![x](https://evil.example/c.png) <img src=https://evil.example/d.png>"}), [],
                 id="markup-sentences"),
    pytest.param(urlencode({"tokenizer": "word", "a": '<a href="https://evil.example/a">click</a>',
                            "b": "<img src=https://evil.example/d.png>"}), [], id="markup-words"),
]


def evil(url: str) -> bool:
    """A request to evil.example (the app's own address may carry the name in its query)."""
    return (urlsplit(url).hostname or "").endswith("evil.example")


@pytest.mark.browser
@pytest.mark.parametrize(("query", "shown"), LINKS)
def test_markup_in_a_link_is_shown_as_text_and_never_fetched(browser, app_url, query, shown):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    requests, dialogs = [], []
    try:
        context.add_init_script(COUNT_REQUESTS)
        # nothing may leave for evil.example; if the page tried, the attempt is recorded and stopped
        context.route(evil, lambda route: (requests.append(route.request.url), route.abort()))
        page = context.new_page()
        page.on("request", lambda request: requests.append(request.url) if evil(request.url) else None)
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{app_url}?{query}")
        page.wait_for_function(f"() => {PLOT} && {PLOT}.data && {PLOT}.data.length > 0", timeout=60_000)
        settle(page)
        notice = page.locator("#notice").inner_text()
        for raw in shown:
            assert raw in notice, f"the notice does not show {raw!r} literally: {notice!r}"
        found = page.evaluate("""() => ({
            links: document.querySelectorAll("a[href*='evil.example']").length,
            images: document.querySelectorAll("img[src*='evil.example'], img[src='x'], [onerror]").length,
            forms: document.querySelectorAll("form[action*='evil.example'], input[name='pw']").length,
            svgLinks: document.querySelectorAll("svg a").length,
        })""")
        assert found == {"links": 0, "images": 0, "forms": 0, "svgLinks": 0}
        page.evaluate(IMAGES_SETTLED)  # an image or a script in the page would have fired by now
        assert requests == []
        assert dialogs == []
    finally:
        context.close()


# --- b. the server's limit on text ------------------------------------------------------------


def test_a_huge_sentence_is_refused_before_any_work(client):
    before = fingerprint(client)
    result = client.predict(HUGE, "", api_name="/embed")
    notice = output(client, "embed", result, "notice")
    assert f"{len(HUGE):,} characters" in notice and f"at most {LIMIT_TEXT}" in notice
    assert fingerprint(client) == before
    # sentence B has the same limit
    result = client.predict("fine", HUGE, api_name="/embed")
    assert "Sentence B" in output(client, "embed", result, "notice")
    assert fingerprint(client) == before


def test_a_huge_sentence_exports_nothing(client):
    before = fingerprint(client)
    result = client.predict(HUGE, "", api_name="/export")
    notice = output(client, "export", result, "notice")
    assert f"at most {LIMIT_TEXT}" in notice
    assert fingerprint(client) == before
    # the refused request asked for files of another sentence: it gets none, not the old view's
    files = output(client, "export", result, "export-files")
    assert not (isinstance(files, dict) and files.get("value")), f"a refused export still wrote files: {files}"


def test_training_on_my_sentences_is_bounded(client):
    """corpus "mine" trains on the tab's sentences, already at most MAX_TEXT each: the corpus's
    own limits (2,000 sentences, 500 characters each) then refuse or train, with a message."""
    many = ("The cat sat on the mat. " * 500)[: MAX_TEXT - 1]  # 9,999 characters, 416 sentences
    client.predict(many, "", api_name="/embed")
    result = client.predict(20, "mine", api_name="/train")
    assert output(client, "train", result, "train-summary").startswith("Trained 20 steps in ")

    for sentence, message in [
        (("a. " * 4000)[: MAX_TEXT - 1], "the corpus has 3,333 sentences; up to 2,000 are allowed"),
        ("x" * (MAX_TEXT - 1), "sentence 1 has 9,999 characters; sentences of up to 500 are allowed"),
    ]:
        client.predict(sentence, "", api_name="/embed")
        before = fingerprint(client)
        result = client.predict(20, "mine", api_name="/train")
        assert message in output(client, "train", result, "notice")
        assert fingerprint(client) == before


# --- c. one heavy job per visitor -------------------------------------------------------------


def wait_until_training(client, job, timeout: float = 120) -> None:
    """Until the job reports a training step: its job is running, not only queued."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(text_of(output(client, "train", outputs, "train-summary")).startswith("Training… step")
               for outputs in job.outputs()):
            return
        if job.done():
            raise AssertionError("the training ended before it was seen running")
        time.sleep(0.1)
    raise AssertionError("the training did not start")


def test_one_visitor_cannot_queue_two_heavy_jobs(app_url):
    first, other = new_client(app_url), new_client(app_url)
    running = first.submit(2000, "builtin", api_name="/train")
    wait_until_training(first, running)
    second = first.submit(2000, "builtin", api_name="/train").result(timeout=60)
    assert "Training is still running for this page" in output(first, "train", second, "notice")
    assert not running.done()

    # another visitor waits for the one job running, and is then served
    result = other.predict(5, "builtin", api_name="/train")
    assert output(other, "train", result, "train-summary").startswith("Trained 5 steps in ")
    done = running.result(timeout=280)
    assert output(first, "train", done, "train-summary").startswith("Trained 2000 steps in ")


def test_a_training_whose_page_went_away_gives_its_slot_back(app_url):
    """The page's event is cancelled (as when its tab closes): the training stops at its next
    step, adopts nothing, and the pool's slot is free at once for the next visitor."""
    from ui.events import TABS

    first, other = new_client(app_url), new_client(app_url)
    running = first.submit(2000, "builtin", api_name="/train")
    wait_until_training(first, running)
    tab = TABS.get(first.session_hash)
    running.cancel()
    deadline = time.monotonic() + 60
    while tab.job is not None:
        assert time.monotonic() < deadline, "the cancelled training still holds the heavy pool"
        time.sleep(0.05)
    assert tab.session.training is None  # nothing was adopted
    result = other.predict(5, "builtin", api_name="/train")
    assert output(other, "train", result, "train-summary").startswith("Trained 5 steps in ")


def test_a_training_stops_at_the_time_limit_of_one_job(app_url, monkeypatch):
    """A job runs at most `core.serving.jobs.JOB_SECONDS` (lowered here), then keeps the steps it took."""
    import core.serving.jobs

    monkeypatch.setattr(core.serving.jobs, "JOB_SECONDS", 0.5)
    client = new_client(app_url)
    result = client.predict(2000, "builtin", api_name="/train")
    summary = output(client, "train", result, "train-summary")
    steps = int(summary.split()[1].replace(",", ""))
    assert summary.startswith("Trained ") and 0 < steps < 2000, summary
    assert (f"Training stopped after 0.5 s, the longest one job may run on this server: {steps:,} of 2,000 steps "
            "were taken.") in text_of(output(client, "train", result, "notice"))


def test_a_fault_in_training_is_said_plainly_and_changes_nothing(app_url, monkeypatch):
    """Not a refusal but a fault (a bug, a broken table): logged on the server, a plain sentence
    on the page, the tables as they were, and the tab free to train again."""
    from appapi import fingerprint

    from core.tables.session import Session

    client = new_client(app_url)
    before = fingerprint(client)
    trained_on = Session.trained_on
    monkeypatch.setattr(Session, "trained_on", lambda *args, **kwargs: 1 / 0)
    result = client.predict(5, "builtin", api_name="/train")
    from ui.trainpanel import FAULT

    notice = text_of(output(client, "train", result, "notice"))
    assert notice == f"<p>⚠️ {FAULT}</p>" and "Error" not in notice  # no name of the fault's class
    assert fingerprint(client) == before
    monkeypatch.setattr(Session, "trained_on", trained_on)
    result = client.predict(5, "builtin", api_name="/train")
    assert output(client, "train", result, "train-summary").startswith("Trained 5 steps in ")


def test_a_training_whose_process_ended_is_said_in_a_sentence_and_changes_nothing(app_url, monkeypatch):
    """The heavy-work process ending mid-training (killed for memory, a crash in a library) is
    said in a sentence that names what happened and what to do, never a class's name."""
    from appapi import fingerprint

    from core.process.offload import Offload
    from tests.offload_jobs import exit_now
    from ui import events

    client = new_client(app_url)
    before = fingerprint(client)
    monkeypatch.setattr(events.OFFLOAD, "call", lambda *args, **hooks: Offload.call(events.OFFLOAD, exit_now))
    result = client.predict(5, "builtin", api_name="/train")
    notice = text_of(output(client, "train", result, "notice"))
    assert "ended before it finished" in notice and "try again" in notice and "tables are as they were" in notice
    assert "Error" not in notice
    assert fingerprint(client) == before


# --- d. the tests' hooks are not public -------------------------------------------------------

HOOKS = "EMBEDDING_EXPLORER_TEST_HOOKS"
API_NAMES = "print(sorted(str(f.api_name) for f in demo.fns.values()))"


def api_names_in_subprocess(code: str, hooks: str | None) -> list[str]:
    """The api names of a demo built in a fresh interpreter (so its module state is its own)."""
    env = {k: v for k, v in os.environ.items() if k != HOOKS}
    if hooks is not None:
        env[HOOKS] = hooks
    done = subprocess.run([sys.executable, "-c", f"{code}\n{API_NAMES}"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1].replace("'", '"'))


def test_the_public_app_has_no_test_hooks():
    names = api_names_in_subprocess("import app\ndemo = app.demo", hooks=None)
    assert "embed" in names and "fingerprint" not in names


def test_build_demo_without_hooks_has_none_even_with_the_variable_set():
    code = "from ui.page import build_demo\ndemo = build_demo(test_hooks=False)"
    names = api_names_in_subprocess(code, hooks="1")
    assert "train" in names and "fingerprint" not in names


def test_the_tests_app_has_its_hook(client):
    assert "fingerprint" in [d.get("api_name") for d in client.config["dependencies"]]


# --- e. exports do not fill the disk ----------------------------------------------------------


def test_twelve_exports_leave_one(client):
    import app

    (files,) = [block for block in app.demo.blocks.values() if getattr(block, "elem_id", None) == "export-files"]
    exports = Path(files.GRADIO_CACHE) / "exports"
    tab = exports / hashlib.sha256(client.session_hash.encode()).hexdigest()[:16]
    before = folder_bytes(exports)
    for i in range(12):
        result = client.predict(f"export number {i} of twelve", "and its pair", api_name="/export")
        assert output(client, "export", result, "export-files")["value"]
    kept = sorted(p.name for p in tab.rglob("*") if p.is_file())
    assert kept == ["embedding.csv", "embedding.html", "embedding.safetensors"]
    assert folder_bytes(tab) < EXPORT_BUDGET / 2
    # other sessions may export meanwhile; this one's twelve left at most one export's bytes
    assert folder_bytes(exports) - before < EXPORT_BUDGET


# --- f. a link cannot ask for an unbounded background -----------------------------------------

BACKGROUND_CAP = LIMITS["background"][1]
TRACE_SIZES = f"() => {PLOT}._fullData.map(t => [t.name, t.x ? t.x.length : 0])"


@pytest.mark.browser
@pytest.mark.parametrize("query", ["background=400003", "basis=vocabulary&background=400003"])
def test_a_links_background_is_capped(browser, app_url, query):
    from tests.browser import open_at

    contexts: list = []
    try:
        page = open_at(browser, app_url, query, contexts=contexts)
        notice = page.locator("#notice").inner_text()
        assert "400,003" in notice and f"{BACKGROUND_CAP:,}" in notice
        page.get_by_role("tab", name="View").click()  # where the background's data lives
        sizes = page.evaluate(TRACE_SIZES)
        assert max(size for _, size in sizes) <= BACKGROUND_CAP
        data = page.locator("#background-data textarea, #background-data input").first.input_value()
        assert data == ""  # refused, so nothing behind
    finally:
        for context in contexts:
            context.close()


@pytest.mark.browser
def test_the_largest_background_a_link_may_ask_for_is_drawn(browser, app_url):
    """The check above can see a background: the cap itself is drawn, and no more."""
    from tests.browser import open_at

    contexts: list = []
    try:
        page = open_at(browser, app_url, f"basis=vocabulary&background={BACKGROUND_CAP}", contexts=contexts)
        page.wait_for_function("() => window.embeddingExplorer.hasBackground()", timeout=60_000)
        settle(page)
        sizes = dict(page.evaluate(TRACE_SIZES))
        assert sizes.get("vocabulary") == BACKGROUND_CAP, sizes
    finally:
        for context in contexts:
            context.close()


@pytest.mark.browser
@pytest.mark.parametrize(("lookup", "why"), [
    ("", "The sentence is empty: type at least one word."),
    (" ".join(["a"] * 401), "The sentence has 401 words; up to 200 are allowed."),  # 801 characters
], ids=["empty", "401-words"])
def test_a_lookup_link_the_walk_through_refuses_still_draws_the_page(open_page, lookup, why):
    """Every view a link can express draws: the lookup sentence's limits are the View's own, so
    a link past them drops that parameter with a note instead of breaking the page's load."""
    from urllib.parse import quote

    page = open_page(f"view=lookup&lookup={quote(lookup)}")
    assert page.evaluate(f"() => {PLOT}.data.length") > 0
    assert page.evaluate("() => document.querySelectorAll('.error, .toast-body.error').length") == 0
    assert why in page.locator("#notice").inner_text()
    assert "i am new to PyTorch i am having fun" in page.locator("#lookup-code").inner_text()


def test_asking_for_a_link_after_the_session_ended_says_so(app_url, monkeypatch):
    """A store of its own for this test, on a clock it moves past the idle time: the others' tabs are untouched."""
    import ui.events
    from core.serving.tabs import Tabs

    clock = Clock()
    store = Tabs(clock=clock)
    monkeypatch.setattr(ui.events, "TABS", store)
    client = new_client(app_url)
    client.predict("kept for an hour", "", api_name="/embed")
    clock.now += store.idle + 1  # the tab has been unused for over an hour
    query, notes = client.predict(api_name="/share")
    shown = notes.replace("\\", "")  # the notes box is Markdown: its text comes escaped
    assert "unused for over an hour and its session has ended: reload the page" in shown
    assert "kept" not in (query or "")


@pytest.mark.parametrize(("sent", "expected"), [
    (5, "The page's address could not be read"),
    (["a=x"], "The page's address could not be read"),
    ("a=" + "x" * 40_000, "The page's address could not be read"),
    ("a=%3Cimg%20src%3Dx%3E&k=999&zz=1", "Ignored unknown parameter 'zz'"),
], ids=["not-text", "a-list", "too-long", "hostile-link"])
def test_an_address_sent_back_by_back_or_forward_is_read_like_any_link(app_url, sent, expected):
    """The page's script sends the address Back landed on; a stranger can send anything there:
    it is a sentence and a drawn page, never an error, and markup stays text."""
    import httpx

    from ui.events import TABS

    client = new_client(app_url)
    client.predict("kept", "", api_name="/embed")
    tab = TABS.get(client.session_hash)
    answer = httpx.post(f"{app_url}explorer/live", json={"key": key_of(tab), "change": {"back": sent}},
                        timeout=60).json()
    said = answer.get("error") or html.unescape(answer["values"]["notice"])  # the notice is escaped text
    assert expected in said
    assert "<img" not in (answer.get("error") or answer["values"]["notice"])
    if "zz" in expected:  # the rest of the link applies: the sentence is the text typed, as text
        assert answer["values"]["sentence-a"] == "<img src=x>" and tab.view.sentence_a == "<img src=x>"
    else:
        assert tab.view.sentence_a == "kept"  # the view it had


def test_a_call_to_an_endpoint_the_app_does_not_have_is_a_404_with_a_sentence(app_url):
    """/gradio_api/call/<name> for a name the app lacks (the tests' own hook on a public server,
    say) is refused plainly; gradio answered 500."""
    import httpx

    for name in ("no_such_endpoint", "x" * 300):
        answer = httpx.post(f"{app_url}gradio_api/call/{name}", json={"data": []}, timeout=30)
        assert answer.status_code == 404, answer.text
        assert "has no endpoint named" in answer.json()["error"] and len(answer.text) < 300
    assert httpx.post(f"{app_url}gradio_api/call/embed", json={"data": ["a", "b"]}, timeout=30).status_code == 200


def test_a_query_string_past_every_limit_is_refused_and_the_server_keeps_serving(app_url):
    """A link of 70,000 characters (a browser sends it; httpx refuses to build it): refused by the
    server's HTTP parser with a 4xx, never a 500, and the next visitor's page still opens."""
    import socket
    from urllib.parse import urlsplit

    import httpx

    host, port = urlsplit(app_url).hostname, urlsplit(app_url).port
    with socket.create_connection((host, port), timeout=30) as connection:
        connection.sendall(f"GET /?a={'x' * 70_000} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        status = connection.recv(64).split(b"\r\n")[0]
    assert status.split()[1].startswith(b"4"), status
    assert httpx.get(app_url, timeout=30).status_code == 200


# --- e. heavy work in its own process -------------------------------------------------------


def test_a_training_computes_in_the_niced_heavy_work_process(app_url):
    import psutil

    from ui import events

    client = new_client(app_url)
    client.predict(5, "builtin", api_name="/train")  # the process is up and has imported what training needs
    child = psutil.Process(events.OFFLOAD.pid)
    assert child.ppid() == os.getpid() and child.nice() >= os.nice(0) + 10
    before = sum(child.cpu_times()[:2])
    result = client.predict(400, "builtin", api_name="/train")
    assert output(client, "train", result, "train-summary").startswith("Trained 400 steps in ")
    assert sum(child.cpu_times()[:2]) > before  # the steps were computed there, not in this process


def test_a_heavy_work_process_that_dies_fails_its_job_plainly_and_is_replaced(app_url):
    import threading

    import psutil
    from appapi import fingerprint

    from ui import events

    client = new_client(app_url)
    client.predict(5, "builtin", api_name="/train")
    before = fingerprint(client)
    child = psutil.Process(events.OFFLOAD.pid)
    answer, idle = {}, sum(child.cpu_times()[:2])
    training = threading.Thread(target=lambda: answer.setdefault(
        "result", client.predict(2_000, "builtin", api_name="/train")))
    training.start()
    deadline = time.monotonic() + 60
    while sum(child.cpu_times()[:2]) < idle + 0.3 and time.monotonic() < deadline:  # it is training
        time.sleep(0.05)
    child.kill()
    training.join(120)
    assert text_of(output(client, "train", answer["result"], "notice")) == (
        "<p>⚠️ The process that runs heavy work (training, refits, exports) ended before it finished, perhaps short "
        "of memory; try again. The tables are as they were.</p>")
    assert fingerprint(client) == before
    result = client.predict(5, "builtin", api_name="/train")  # a new process takes the next job
    assert output(client, "train", result, "train-summary").startswith("Trained 5 steps in ")
    assert events.OFFLOAD.pid != child.pid


def test_a_slow_search_in_the_view_is_scanned_once_not_on_every_keystroke(app_url, monkeypatch):
    """A link can carry a pattern that takes a third of a second to scan GloVe's 400,003 words;
    typing on with it in the view redraws its crosses without scanning again."""
    import core.plane.search as module

    scans = []
    scan = module._regex_matches
    monkeypatch.setattr(module, "_regex_matches", lambda *args: scans.append(args[2]) or scan(*args))
    client = new_client(app_url)
    client.predict("glove", api_name="/source")
    pattern = ".{0,32}.{0,32}.{0,32}#"
    found = client.predict(pattern, True, api_name="/search")
    assert "found" in output(client, "search", found, "search-info")
    for typed in ("the cat", "the cat sat", "the cat sat down"):
        client.predict(typed, "", api_name="/embed")
    assert scans == [pattern]


def test_a_link_longer_than_any_the_page_writes_is_answered_with_a_sentence(app_url):
    """A query string past MAX_QUERY (the page never writes one) gets 414 and what to do; at 64 KB
    gradio's own handler answered 500. A long link within the limit still opens the page."""
    import http.client

    from core.view.options import MAX_QUERY

    def get(query: str) -> tuple[int, str]:  # http.client: httpx itself refuses URLs past 64 KB
        where = urlsplit(app_url)
        connection = http.client.HTTPConnection(where.hostname, where.port, timeout=60)
        try:
            connection.request("GET", f"{where.path}?{query}" if query else where.path)
            answer = connection.getresponse()
            return answer.status, answer.read().decode(errors="replace")
        finally:
            connection.close()

    for length in (MAX_QUERY + 1, 65_000):
        status, text = get(f"a={'x' * length}")
        assert status == 414 and f"at most {MAX_QUERY:,} characters" in text, length
    assert 400 <= get(f"a={'x' * 1_000_000}")[0] < 500  # the HTTP server refuses it before the app
    assert get(f"a={'x' * (MAX_QUERY - 10)}")[0] == 200
    assert get("")[0] == 200  # and the server keeps serving


# --- g. memory, uploads and the store, bounded against strangers (core/process/memory.py, core/serving/tabs.py) ---

STRANGER = "203.0.113.7"  # documentation addresses, forwarded as a proxy would (uvicorn trusts loopback's)
STUDENT = "198.51.100.20"


def visitor_from(app_url, address: str):
    from gradio_client import Client

    return Client(app_url, verbose=False, headers={"X-Forwarded-For": address})


def distinct_large(seed: int) -> tuple:
    """/settings for a random layer of about 16 MiB that no other test asks for."""
    return ("word", 4000, 1024, 64, 2, 7_000 + seed)


def test_tabs_asking_for_distinct_large_tables_stay_within_the_memory_budget(app_url, monkeypatch):
    """Break 1: each tab's own random layer counted against one budget; the longest unused tabs'
    layers are let go and rebuilt, the same numbers, when they come back."""
    from core.process.memory import BUDGET, MIB

    monkeypatch.setattr(BUDGET, "limit", BUDGET.held() + 40 * MIB)  # room for about two of them
    first = new_client(app_url)
    call_settings = lambda client, seed: client.predict(*distinct_large(seed), api_name="/settings")  # noqa: E731
    call_settings(first, 0)
    first.predict("the tables come back", "as they were", api_name="/embed")
    before = fingerprint(first)
    for seed in range(1, 7):  # six more, 96 MiB more than the budget's room
        call_settings(new_client(app_url), seed)
        assert BUDGET.held() <= BUDGET.limit
    assert fingerprint(first) == before  # rebuilt from its seed: the view and every number as before
    out = first.predict("the tables come back", "as they were", api_name="/embed")
    assert "has no room" not in str(out)


def test_a_class_uploading_one_file_holds_it_once(app_url, tmp_path):
    """Break 2: the same content is one table however many pages upload it."""
    import numpy as np
    from gradio_client import handle_file

    from core.process.memory import BUDGET

    path = tmp_path / "class.npy"
    np.save(path, np.random.default_rng(21).normal(size=(20_000, 100)).astype(np.float32))  # 8 MB
    held = []
    for _ in range(4):
        client = new_client(app_url)
        client.predict(handle_file(str(path)), api_name="/upload")
        held.append(BUDGET.held())
    assert held[-1] - held[0] < 2 * 2**20  # three more pages, not three more tables


def test_an_upload_past_the_memory_budget_is_refused_with_a_sentence_and_changes_nothing(app_url, tmp_path,
                                                                                        monkeypatch):
    import numpy as np
    from gradio_client import handle_file

    from core.process.memory import BUDGET, MIB

    monkeypatch.setattr(BUDGET, "limit", 4 * MIB)  # less than the file's table, whatever is let go
    path = tmp_path / "wide.npy"
    np.save(path, np.random.default_rng(22).normal(size=(20_000, 100)).astype(np.float32))  # 8 MB
    client = new_client(app_url)
    client.predict("kept as it was", "", api_name="/embed")
    before = fingerprint(client)
    result = client.predict(handle_file(str(path)), api_name="/upload")
    notice = html.unescape(text_of(output(client, "upload", result, "notice")))
    assert "memory for visitors' own tables" in notice and "MiB" in notice  # the process's, or its address's share
    assert fingerprint(client) == before


def test_raw_uploads_nobody_reads_are_bounded_and_swept(app_url, tmp_path, monkeypatch):
    """Break 2: files posted to gradio's upload route with no event behind them."""
    import httpx

    import app
    from ui import rawfiles

    rawfiles.sweep(app.demo.upload_file_set, keep=0.0)  # other tests' files are not this test's business
    monkeypatch.setattr(rawfiles, "RAW_BYTES", 3 * 2**20)
    blob = os.urandom(2 * 2**20)

    def post(name: str) -> httpx.Response:
        return httpx.post(f"{app_url}gradio_api/upload", files={"files": (name, blob)}, timeout=60)

    first = post("one.bin")
    assert first.status_code == 200, first.text
    refused = post("two.bin")  # 2 MB waiting + 2 MB coming > 3 MB
    assert refused.status_code == 503 and "recently uploaded files" in refused.text
    came = os.stat(first.json()[0]).st_mtime - rawfiles.RAW_SECONDS - 1
    os.utime(first.json()[0], (came, came))  # the first file is now past its time
    assert post("three.bin").status_code == 200  # the sweep made room
    assert not os.path.exists(first.json()[0])


def test_raw_uploads_are_deleted_by_a_timer_when_their_time_is_up_with_no_upload_after_them(app_url, monkeypatch):
    """The README's two minutes: a file nobody reads goes when its time is up, not at the next
    upload (131 files stayed 40 minutes when nobody uploaded again). The timer's clock is moved."""
    import httpx

    from ui import rawfiles

    sent = httpx.post(f"{app_url}gradio_api/upload", files={"files": ("lone.bin", os.urandom(4096))}, timeout=60)
    assert sent.status_code == 200, sent.text
    path = sent.json()[0]
    sweeper = rawfiles.SWEEPER
    assert sweeper is not None  # started with the server's first request
    rounds = sweeper.rounds
    sweeper.wake()
    assert eventually(lambda: sweeper.rounds > rounds)
    assert os.path.exists(path)  # within its time: kept for the upload event
    monkeypatch.setattr(sweeper, "clock", lambda: time.time() + rawfiles.RAW_SECONDS + 1)
    sweeper.wake()
    assert eventually(lambda: not os.path.exists(path))


@pytest.mark.parametrize("named", ["/etc/passwd", "../../etc/passwd", "http://192.0.2.1/table.npy", "swept", "bare"])
def test_an_upload_naming_a_file_the_server_was_not_sent_is_refused_with_a_sentence(app_url, monkeypatch, named):
    """Through the API an upload names a path: one gradio's upload route never stored (or that was
    deleted when its time was up) is refused with a sentence, not gradio's bare error, and is
    never read."""
    import httpx

    from ui import rawfiles

    if named == "swept":
        sent = httpx.post(f"{app_url}gradio_api/upload", files={"files": ("t.npy", os.urandom(256))}, timeout=60)
        named = sent.json()[0]
        rawfiles.sweep(rawfiles.SWEEPER.uploaded, now=time.time() + rawfiles.RAW_SECONDS + 1)
    data = {"path": named} if named == "bare" else {"path": named, "meta": {"_type": "gradio.FileData"}}
    if named == "bare":
        data["path"] = "/etc/passwd"  # without gradio's marker of a file
    call = httpx.post(f"{app_url}gradio_api/call/upload", json={"data": [data]}, timeout=60)
    answer = httpx.get(f"{app_url}gradio_api/call/upload/{call.json()['event_id']}", timeout=60).text
    assert "event: error" in answer
    assert ("The upload names a file this server was not sent, or no longer keeps: send the file itself first "
            "(gradio_client: handle_file(path))") in answer
    assert "passwd" not in answer.split("event: error", 1)[1]  # the caller's path is not said back


def test_an_upload_with_a_value_too_large_for_float32_arithmetic_is_refused_with_a_sentence(app_url, tmp_path):
    """A finite 3e38 made the server fail building the upload's position table (its spread
    overflowed): refused now, in a sentence, before any work, and the page is as it was."""
    import numpy as np
    from gradio_client import handle_file

    path = tmp_path / "huge.npy"
    table = np.ones((30, 8), dtype=np.float32)
    table[4, 1] = 3e38
    np.save(path, table)
    client = new_client(app_url)
    client.predict("kept as it was", "", api_name="/embed")
    before = fingerprint(client)
    result = client.predict(handle_file(str(path)), api_name="/upload")
    notice = html.unescape(text_of(output(client, "upload", result, "notice")))
    assert "row 4 holds 3e+38; every value must lie between -1e+12 and 1e+12" in notice
    assert fingerprint(client) == before


def test_a_stranger_opening_many_tabs_cannot_push_a_student_out(app_url, monkeypatch):
    """Break 4: new tabs are limited per address, so a student's tab is never flushed out."""
    import httpx

    import ui.events
    from core.serving.tabs import Tabs

    store = Tabs(limit=30, new_tabs=10, refill=600.0)
    monkeypatch.setattr(ui.events, "TABS", store)
    student = visitor_from(app_url, STUDENT)
    student.predict("my own view", "", api_name="/embed")
    answers = []
    for i in range(50):
        sent = httpx.post(f"{app_url}gradio_api/call/embed", headers={"X-Forwarded-For": STRANGER},
                          json={"data": [f"stranger {i}", ""], "session_hash": f"stranger-{i}"}, timeout=30)
        event = sent.json()["event_id"]
        answers.append(httpx.get(f"{app_url}gradio_api/call/embed/{event}", timeout=30).text)
    refused = [a for a in answers if "Too many new pages from your address" in a]
    assert len(refused) == 40 and len(store) == 11
    out = student.predict("my own view", "still here", api_name="/embed")
    assert "reload the page" not in str(out)


def test_a_link_to_a_large_random_layer_builds_it_in_the_heavy_pool(app_url, monkeypatch):
    """Break 1: a link's tables were built in the page-load event, on the live path every
    keystroke shares; now in the heavy pool, like the settings' (`events.built_first`)."""
    from types import SimpleNamespace

    import app
    import ui.events
    from ui import tourpanel

    jobs = []
    run = ui.events.JOBS.run
    monkeypatch.setattr(ui.events.JOBS, "run", lambda tab, name, *a, **k: (jobs.append(name), run(tab, name, *a,
                                                                                                  **k))[1])
    query = {"tokenizer": ["word"], "vocab": ["6000"], "d": ["1024"], "maxlen": ["64"], "seed": ["4242"]}
    page = app.demo.explorer
    out = tourpanel.open_link(page, SimpleNamespace(session_hash="large-link", query_params=query), None)
    assert jobs == ["building the tables"]
    assert "6,000" in str(out[page.tables_info]) or "6000" in str(out[page.tables_info])


@pytest.mark.parametrize(("api", "args"), [("/embed", ("a", "b")), ("/refit", ()), ("/export", ("a", "b")),
                                           ("/train", (5, "builtin")), ("/upload", (None,))])
def test_a_new_tab_refused_for_its_address_gets_the_sentence_from_every_endpoint(app_url, monkeypatch, api, args):
    import ui.events
    from core.serving.tabs import Tabs

    monkeypatch.setattr(ui.events, "TABS", Tabs(new_tabs=0))
    client = visitor_from(app_url, STRANGER)
    result = client.predict(*args, api_name=api)
    values = result if isinstance(result, tuple | list) else (result,)
    assert any("Too many new pages from your address" in html.unescape(str(v)) for v in values), values
