"""A public Space meets strangers: hostile links, huge requests, greedy visitors, curious probes.

Every case goes through the launched app as a stranger's request would: the page's route
(`explorer/live`, its uploads and its files, driven as the page's script drives them:
tests/appapi.py), the public API (gradio_client), plain HTTP, or a real Chromium:

* a link's names and values are shown as text, never as a link, an image or a form, and the
  browser never fetches anything they name;
* the server refuses text over `core.view.options.MAX_TEXT` before any work, and a refusal changes
  nothing (the tab's fingerprint before and after), nor does the work asked for with it;
* one tab holds at most one heavy job, so another visitor waits for at most one job;
* the public API is its few documented functions and nothing else;
* exports and uploads do not pile up on disk, and a link cannot ask for an unbounded background;
* memory, new pages and the heavy-work process are bounded against strangers.
"""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import httpx
import pytest

from core.view.options import LIMITS, MAX_TEXT
from core.view.state import SETTINGS_FIELDS
from tests.appapi import Outputs, Page, exported, outputs
from tests.browser import COUNT_REQUESTS, IMAGES_SETTLED, PLOT, settle
from tests.clocks import Clock
from tests.waiting import eventually

HUGE = "word " * 1_000_000  # 5,000,000 characters
OVER = "y" * (MAX_TEXT + 1)  # one character past the limit: a body the route reads, a sentence it refuses
LIMIT_TEXT = f"{MAX_TEXT:,}"  # "10,000", as every message writes it
EXPORT_BUDGET = 15 * 2**20  # bytes 12 exports may leave behind
WAIT = 120  # seconds before a test gives up on an event (a fault, never a figure)


# --- helpers ----------------------------------------------------------------------------------


def sent(page: Page, change: dict) -> httpx.Response:
    """The page's call as it went over the wire (its status, its headers and its answer)."""
    return httpx.post(f"{page.url}explorer/live", json={"key": page.key, "change": change}, headers=page.headers,
                      timeout=WAIT)


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def settings(**values) -> dict:
    """The tables' settings as the page sends them (every field of `core.view.state.Settings`)."""
    defaults = dict(zip(SETTINGS_FIELDS, ("wordpiece", 1000, 32, 512, 2, 0), strict=True))
    return {**defaults, **values}


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


def test_a_huge_sentence_is_refused_before_any_work(live):
    """A body past the route's bound is refused as it streams in, with a sentence; a sentence
    past MAX_TEXT in a body the route reads is refused by the view's limits, the widget put back."""
    before = live.fingerprint()
    huge = sent(live, {"sentence_a": HUGE})
    assert huge.status_code == 413 and "An update is at most" in huge.json()["error"]
    assert live.fingerprint() == before
    out = live.send(sentence_a=OVER)
    assert f"{len(OVER):,} characters" in out.notice and f"at most {LIMIT_TEXT}" in out.notice
    assert out.value("sentence-a") == live.tab.view.sentence_a != OVER  # the box shows what the view holds
    assert live.fingerprint() == before
    out = live.send(sentence_a="fine", sentence_b=OVER)  # sentence B has the same limit
    assert "Sentence B" in out.notice
    assert live.fingerprint() == before


def test_a_huge_sentence_exports_nothing(live):
    """The export asked for with a refused sentence would be of another view than the one asked
    for: the page gets none, not the old view's."""
    before = live.fingerprint()
    out = live.send(sentence_a=OVER, export=True)
    assert f"at most {LIMIT_TEXT}" in out.notice
    assert live.fingerprint() == before
    assert not out.written("export-links"), f"a refused export still wrote links: {out.get('export-links')}"
    assert live.send(sentence_a="the view asked for", export=True).written("export-links")  # once it is allowed


def test_training_on_my_sentences_is_bounded(live):
    """corpus "mine" trains on the tab's sentences, already at most MAX_TEXT each: the corpus's
    own limits (2,000 sentences, 500 characters each) then refuse or train, with a message."""
    many = ("The cat sat on the mat. " * 500)[: MAX_TEXT - 1]  # 9,999 characters, 416 sentences
    live.send(sentence_a=many, sentence_b="")
    out, _ = live.train(20, "mine")
    assert out.value("train-summary").startswith("Trained 20 steps in ")

    for sentence, message in [
        (("a. " * 4000)[: MAX_TEXT - 1], "the corpus has 3,333 sentences; up to 2,000 are allowed"),
        ("x" * (MAX_TEXT - 1), "sentence 1 has 9,999 characters; sentences of up to 500 are allowed"),
    ]:
        live.send(sentence_a=sentence)
        before = live.fingerprint()
        out, _ = live.train(20, "mine")
        assert message in out.notice
        assert live.fingerprint() == before


# --- c. one heavy job per visitor -------------------------------------------------------------


class Training:
    """A page's training as its script watches it: the streamed answers, read on a thread of
    their own as they come, until the training ends or the page goes away (`leave`)."""

    def __init__(self, page: Page, steps: int, corpus: str = "builtin") -> None:
        self.page, self.steps, self.corpus = page, steps, corpus
        self.seen: list[Outputs] = []
        self.left = threading.Event()
        self.ended = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        change = {"train": {"steps": self.steps, "corpus": self.corpus}}
        try:
            with httpx.stream("POST", f"{self.page.url}explorer/live", json={"key": self.page.key, "change": change},
                              headers=self.page.headers, timeout=300) as response:
                for line in response.iter_lines():
                    if line.startswith("data:"):
                        self.seen.append(outputs(json.loads(line[5:])["values"]))
                    if self.left.is_set():
                        return  # the connection closes: the page went away
        finally:
            self.ended.set()

    def running(self) -> None:
        """Until a training step was shown: its job is running, not only in line."""
        assert eventually(lambda: any(str(out.get("train-summary", "")).startswith("Training… step")
                                      for out in self.seen) or self.ended.is_set(), WAIT), "the training did not start"
        assert not self.ended.is_set(), "the training ended before it was seen running"

    def leave(self) -> None:
        self.left.set()
        assert self.ended.wait(WAIT)

    def result(self) -> Outputs:
        assert self.ended.wait(280), "the training did not end"
        merged = Outputs()
        for out in self.seen:
            merged.update(out)
        return merged


def test_one_visitor_cannot_queue_two_heavy_jobs(app_url):
    first, other = Page(app_url), Page(app_url)
    running = Training(first, 2000)
    running.running()
    second, _ = first.train(2000, "builtin")
    assert "Training is still running for this page" in second.notice
    assert not running.ended.is_set()

    # another visitor waits for the one job running, and is then served
    out, _ = other.train(5, "builtin")
    assert out.value("train-summary").startswith("Trained 5 steps in ")
    assert running.result().value("train-summary").startswith("Trained 2000 steps in ")


def test_a_training_whose_page_went_away_gives_its_slot_back(app_url):
    """The page's stream is closed (as when its tab closes): the training stops at its next
    step, adopts nothing, and the pool's slot is free at once for the next visitor."""
    first, other = Page(app_url), Page(app_url)
    running = Training(first, 2000)
    running.running()
    tab = first.tab
    running.leave()
    assert eventually(lambda: tab.job is None, 60), "the training of a page that went away still holds the pool"
    assert tab.session.training is None  # nothing was adopted
    out, _ = other.train(5, "builtin")
    assert out.value("train-summary").startswith("Trained 5 steps in ")


def test_a_training_stops_at_the_time_limit_of_one_job(live, monkeypatch):
    """A job runs at most `core.serving.jobs.JOB_SECONDS` (lowered here), then keeps the steps it took."""
    import core.serving.jobs

    monkeypatch.setattr(core.serving.jobs, "JOB_SECONDS", 0.5)
    out, _ = live.train(2000, "builtin")
    summary = out.value("train-summary")
    steps = int(summary.split()[1].replace(",", ""))
    assert summary.startswith("Trained ") and 0 < steps < 2000, summary
    assert (f"Training stopped after 0.5 s, the longest one job may run on this server: {steps:,} of 2,000 steps "
            "were taken.") in out.notice


def test_a_fault_in_training_is_said_plainly_and_changes_nothing(live, monkeypatch):
    """Not a refusal but a fault (a bug, a broken table): logged on the server, a plain sentence
    on the page, the tables as they were, and the tab free to train again."""
    from core.tables.session import Session
    from ui.trainpanel import FAULT

    before = live.fingerprint()
    trained_on = Session.trained_on
    monkeypatch.setattr(Session, "trained_on", lambda *args, **kwargs: 1 / 0)
    out, _ = live.train(5, "builtin")
    assert out.notice == FAULT and "Error" not in out.notice  # no name of the fault's class
    assert live.fingerprint() == before
    monkeypatch.setattr(Session, "trained_on", trained_on)
    out, _ = live.train(5, "builtin")
    assert out.value("train-summary").startswith("Trained 5 steps in ")


def test_a_training_whose_process_ended_is_said_in_a_sentence_and_changes_nothing(live, monkeypatch):
    """The heavy-work process ending mid-training (killed for memory, a crash in a library) is
    said in a sentence that names what happened and what to do, never a class's name."""
    from core.process.offload import Offload
    from tests.offload_jobs import exit_now
    from ui.route import OFFLOAD

    before = live.fingerprint()
    monkeypatch.setattr(OFFLOAD, "call", lambda *args, **hooks: Offload.call(OFFLOAD, exit_now))
    out, _ = live.train(5, "builtin")
    assert "ended before it finished" in out.notice and "try again" in out.notice
    assert "tables are as they were" in out.notice and "Error" not in out.notice
    assert live.fingerprint() == before


# --- d. the public API is what it documents -------------------------------------------------------


def test_the_public_api_is_its_four_documented_functions_and_nothing_else(api):
    """No hidden button, no test hook, no twin of a page's handler: the API a stranger can call
    is `view`, `train`, `code` and `tour` (ui/api.py), each with its documented parameters. The
    tests read a tab's fingerprint in the app's own process; no endpoint answers it."""
    endpoints = api.view_api(print_info=False, return_format="dict")
    assert set(endpoints["named_endpoints"]) == {"/view", "/train", "/code", "/tour"}
    assert not endpoints["unnamed_endpoints"]
    parameters = {name: [p["parameter_name"] for p in endpoint["parameters"]]
                  for name, endpoint in endpoints["named_endpoints"].items()}
    assert parameters == {"/view": ["query"], "/train": ["query", "steps", "corpus"], "/code": ["query"], "/tour": []}


# --- e. exports and uploads do not fill the disk ------------------------------------------------


def test_twelve_exports_leave_one(live, app_url):
    """Each export of a page revokes its page's previous links and deletes their files: twelve
    leave one export's files, and an older link says it has expired."""
    from ui.files import ROOT

    exports = ROOT / "exports"
    folders_before, bytes_before = set(exports.iterdir()) if exports.exists() else set(), folder_bytes(exports)
    first = None
    for i in range(12):
        out = live.send(sentence_a=f"export number {i} of twelve", sentence_b="and its pair", export=True)
        assert out.written("export-links"), out
        first = first or out
    kept = set(exports.iterdir()) - folders_before
    assert len(kept) == 1, kept  # this page's newest export, every older one deleted
    (folder,) = kept
    assert sorted(p.name for p in folder.iterdir()) == ["embedding.csv", "embedding.html", "embedding.safetensors"]
    assert folder_bytes(folder) < EXPORT_BUDGET / 2
    # other pages may export meanwhile; this one's twelve left at most one export's bytes
    assert folder_bytes(exports) - bytes_before < EXPORT_BUDGET
    files = exported(app_url, out)
    assert set(files) == {"embedding.csv", "embedding.html", "embedding.safetensors"}
    assert "twelve" in files["embedding.csv"].decode()
    assert b"expired" in b"".join(exported(app_url, first).values())  # the first export's links are gone


def test_gradios_own_upload_route_takes_nothing_and_the_pages_keeps_no_file(live, tmp_path):
    """The page uploads through its own route, which writes the file as it streams in and deletes
    it once read or refused: nothing waits on disk for a sweep. Gradio's upload route, which kept
    files nobody asked for, takes none (`max_file_size` 0)."""
    import numpy as np

    from ui.files import ROOT

    gradios = httpx.post(f"{live.url}gradio_api/upload", files={"files": ("one.bin", os.urandom(2 * 2**20))},
                         timeout=60)
    assert gradios.status_code == 413
    uploads = ROOT / "uploads"
    path = tmp_path / "table.npy"
    np.save(path, np.random.default_rng(23).normal(size=(40, 6)).astype(np.float32))
    assert "6 dimensions" in live.upload(path).value("tables-info")  # taken
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"not a table at all")
    assert "not in a format the explorer reads" in live.upload(junk).notice  # refused
    assert not uploads.exists() or not any(uploads.iterdir())


@pytest.mark.parametrize("named", ["/etc/passwd.npy", "../../etc/passwd.npy", "http://192.0.2.1/table.npy",
                                   "%2e%2e%2f%2e%2e%2fetc%2fpasswd.npy"])
def test_an_uploads_name_names_nothing_on_the_server_the_body_is_the_table(live, tmp_path, named):
    """An upload is the file's body; its name (a header, URL-encoded) only says its format. A name
    that is a path or an address on the server or beyond is never read: the body is the table."""
    import numpy as np

    table = tmp_path / "t.npy"
    np.save(table, np.random.default_rng(24).normal(size=(30, 7)).astype(np.float32))
    answer = httpx.post(f"{live.url}explorer/upload", content=table.read_bytes(), timeout=60,
                        headers={"X-Explorer-Key": live.key, "X-File-Name": named}).json()
    out = outputs(answer["values"])
    assert out.value("table-source") == "upload" and "7 dimensions" in out.value("tables-info")
    assert "passwd" not in json.dumps(answer) and "192.0.2.1" not in json.dumps(answer)


def test_an_upload_without_its_pages_key_is_refused_with_a_sentence(app_url):
    for key in (None, "", "guessed-key"):
        headers = {"X-File-Name": "t.npy"} | ({"X-Explorer-Key": key} if key is not None else {})
        answer = httpx.post(f"{app_url}explorer/upload", content=b"\x93NUMPY", headers=headers, timeout=60).json()
        assert "reload the page" in answer["error"], answer


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
        settle(page)
        sizes = page.evaluate(TRACE_SIZES)
        assert max(size for _, size in sizes) <= BACKGROUND_CAP
        assert page.evaluate("() => window.embeddingExplorer.hasBackground()") is False  # refused, so nothing behind
    finally:
        for context in contexts:
            context.close()


@pytest.mark.browser
def test_the_largest_background_a_link_may_ask_for_is_drawn(browser, app_url):
    """The check above can see a background: the cap itself is drawn, and no more, in the plane
    the link opens on, without the View tab (where the background's data is carried) opened."""
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
    page = open_page(f"view=lookup&lookup={quote(lookup)}")
    assert page.evaluate(f"() => {PLOT}.data.length") > 0
    assert page.evaluate("() => document.querySelectorAll('.error, .toast-body.error').length") == 0
    assert why in page.locator("#notice").inner_text()
    assert "i am new to PyTorch i am having fun" in page.locator("#lookup-code").inner_text()


def test_asking_for_a_link_after_the_session_ended_says_so(app_url, monkeypatch):
    """A store of its own for this test, on a clock it moves past the idle time: the others' tabs
    are untouched. The store forgets a tab unused for over an hour when it next looks (a page
    opening), and the page's next call is told why, with no link made of what it forgot."""
    import ui.route
    from core.serving.tabs import Tabs

    clock = Clock()
    store = Tabs(clock=clock)
    monkeypatch.setattr(ui.route, "TABS", store)
    page = Page(app_url)
    page.send(sentence_a="kept for an hour", sentence_b="")
    clock.now += store.idle + 1  # the tab has been unused for over an hour
    Page(app_url)  # another visitor's page opens meanwhile
    answer = sent(page, {"link": "http://host/"}).json()
    assert "unused for over an hour and its session has ended: reload the page" in answer["error"]
    assert "values" not in answer and "kept" not in json.dumps(answer)


@pytest.mark.parametrize(("back", "expected"), [
    (5, "The page's address could not be read"),
    (["a=x"], "The page's address could not be read"),
    ("a=" + "x" * 32_500, "The page's address could not be read"),
    ("a=" + "x" * 40_000, "back is the page's own address, at most 32,768 characters; this one has 40,002."),
    ("a=%3Cimg%20src%3Dx%3E&k=999&zz=1", "Ignored unknown parameter 'zz'"),
], ids=["not-text", "a-list", "too-long", "far-too-long", "hostile-link"])
def test_an_address_sent_back_by_back_or_forward_is_read_like_any_link(live, back, expected):
    """The page's script sends the address Back landed on; a stranger can send anything there:
    it is a sentence and a drawn page, never an error, and markup stays text."""
    live.send(sentence_a="kept", sentence_b="")
    answer = sent(live, {"back": back}).json()
    said = answer.get("error") or outputs(answer["values"]).notice
    assert expected in said
    assert "<img" not in (answer.get("error") or answer["values"]["notice"])  # the notice is escaped text
    if "zz" in expected:  # the rest of the link applies: the sentence is the text typed, as text
        assert answer["values"]["sentence-a"] == "<img src=x>" and live.tab.view.sentence_a == "<img src=x>"
    else:
        assert live.tab.view.sentence_a == "kept"  # the view it had


def test_a_query_string_past_every_limit_is_refused_and_the_server_keeps_serving(app_url):
    """A link of 70,000 characters (a browser sends it; httpx refuses to build it): refused by the
    server's HTTP parser with a 4xx, never a 500, and the next visitor's page still opens."""
    import socket

    host, port = urlsplit(app_url).hostname, urlsplit(app_url).port
    with socket.create_connection((host, port), timeout=30) as connection:
        connection.sendall(f"GET /?a={'x' * 70_000} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        status = connection.recv(64).split(b"\r\n")[0]
    assert status.split()[1].startswith(b"4"), status
    assert httpx.get(app_url, timeout=30).status_code == 200


# --- e. heavy work in its own process -------------------------------------------------------


def test_a_training_computes_in_the_niced_heavy_work_process(live):
    import psutil

    from ui.route import OFFLOAD

    live.train(5, "builtin")  # the process is up and has imported what training needs
    child = psutil.Process(OFFLOAD.call(os.getpid))
    assert child.ppid() == os.getpid() and child.nice() >= os.nice(0) + 10
    before = sum(child.cpu_times()[:2])
    out, _ = live.train(400, "builtin")
    assert out.value("train-summary").startswith("Trained 400 steps in ")
    assert sum(child.cpu_times()[:2]) > before  # the steps were computed there, not in this process


def test_a_heavy_work_process_that_dies_fails_its_job_plainly_and_is_replaced(live):
    import psutil

    from ui.route import OFFLOAD

    live.train(5, "builtin")
    before = live.fingerprint()
    child = psutil.Process(OFFLOAD.call(os.getpid))
    idle = sum(child.cpu_times()[:2])
    training = Training(live, 2_000)
    deadline = time.monotonic() + 60
    while sum(child.cpu_times()[:2]) < idle + 0.3 and time.monotonic() < deadline:  # it is training
        time.sleep(0.05)
    child.kill()
    assert training.result().notice == (
        "The process that runs heavy work (training, refits, exports) ended before it finished, perhaps short "
        "of memory; try again. The tables are as they were.")
    assert live.fingerprint() == before
    out, _ = live.train(5, "builtin")  # a new process takes the next job
    assert out.value("train-summary").startswith("Trained 5 steps in ")
    assert OFFLOAD.call(os.getpid) != child.pid


def test_a_slow_search_in_the_view_is_scanned_once_not_on_every_keystroke(live, monkeypatch):
    """A link can carry a pattern that takes a third of a second to scan GloVe's 400,003 words;
    typing on with it in the view redraws its crosses without scanning again."""
    import core.plane.search as module

    scans = []
    scan = module._regex_matches
    monkeypatch.setattr(module, "_regex_matches", lambda *args: scans.append(args[2]) or scan(*args))
    live.send(source="glove")
    pattern = ".{0,32}.{0,32}.{0,32}#"
    found = live.send(search=pattern, regex=True)
    assert "found" in found.value("search-info")
    for typed in ("the cat", "the cat sat", "the cat sat down"):
        live.send(sentence_a=typed, sentence_b="")
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


def visitor_from(app_url: str, address: str) -> Page:
    return Page(app_url, headers={"X-Forwarded-For": address})


def distinct_large(seed: int) -> dict:
    """Settings of a random layer of about 17 MiB (built in the heavy line) that no other test asks for."""
    return settings(tokenizer="word", vocab_size=4100, d_model=1024, maxlen=64, seed=7_000 + seed)


def shared_storages() -> set[int]:
    """Every table in shared memory the process holds, reachable or not (garbage waiting for the
    collector holds its memory all the same)."""
    import torch

    dense = (o for o in gc.get_objects() if isinstance(o, torch.Tensor) and o.layout == torch.strided)
    return {o.untyped_storage().data_ptr() for o in dense if o.is_shared() and o.untyped_storage().nbytes() >= 2**20}


def test_tabs_asking_for_distinct_large_tables_stay_within_the_memory_budget(app_url, monkeypatch):
    """Break 1: each tab's own random layer counted against one budget; the longest unused tabs'
    layers are let go and rebuilt, the same numbers, when they come back."""
    from core.process.memory import BUDGET, MIB

    monkeypatch.setattr(BUDGET, "limit", BUDGET.held() + 40 * MIB)  # room for about two of them
    first = Page(app_url)
    first.send(**distinct_large(0))
    first.send(sentence_a="the tables come back", sentence_b="as they were")
    before, earlier = first.fingerprint(), shared_storages()
    gc.disable()  # what reference counts alone free: a cycle holding a let-go layer is caught here
    try:
        for seed in range(1, 7):  # six more, 96 MiB more than the budget's room
            out = Page(app_url).send(**distinct_large(seed))
            assert "has no room" not in out.notice
            assert BUDGET.held() <= BUDGET.limit
            tabs, counted = BUDGET._holders()
            uncounted = shared_storages() - earlier - set(counted) - BUDGET._base
            assert not uncounted, f"{len(uncounted)} tables held that the budget does not count"
    finally:
        gc.enable()
    assert first.fingerprint() == before  # rebuilt from its seed: the view and every number as before
    out = first.send(sentence_a="the tables come back", sentence_b="as they were, again")
    assert "has no room" not in out.notice and out.written("embed-plot")


def test_a_class_uploading_one_file_holds_it_once(app_url, tmp_path):
    """Break 2: the same content is one table however many pages upload it."""
    import numpy as np

    from core.process.memory import BUDGET

    path = tmp_path / "class.npy"
    np.save(path, np.random.default_rng(21).normal(size=(20_000, 100)).astype(np.float32))  # 8 MB
    held = []
    for _ in range(4):
        assert Page(app_url).upload(path).value("table-source") == "upload"
        held.append(BUDGET.held())
    assert held[-1] - held[0] < 2 * 2**20  # three more pages, not three more tables


def test_an_upload_past_the_memory_budget_is_refused_with_a_sentence_and_changes_nothing(live, tmp_path,
                                                                                        monkeypatch):
    import numpy as np

    from core.process.memory import BUDGET, MIB

    monkeypatch.setattr(BUDGET, "limit", 4 * MIB)  # less than the file's table, whatever is let go
    path = tmp_path / "wide.npy"
    np.save(path, np.random.default_rng(22).normal(size=(20_000, 100)).astype(np.float32))  # 8 MB
    live.send(sentence_a="kept as it was", sentence_b="")
    before = live.fingerprint()
    notice = live.upload(path).notice
    assert "memory for visitors' own tables" in notice and "MiB" in notice  # the process's, or its address's share
    assert live.fingerprint() == before


def test_an_upload_with_a_value_too_large_for_float32_arithmetic_is_refused_with_a_sentence(live, tmp_path):
    """A finite 3e38 made the server fail building the upload's position table (its spread
    overflowed): refused now, in a sentence, before any work, and the page is as it was."""
    import numpy as np

    path = tmp_path / "huge.npy"
    table = np.ones((30, 8), dtype=np.float32)
    table[4, 1] = 3e38
    np.save(path, table)
    live.send(sentence_a="kept as it was", sentence_b="")
    before = live.fingerprint()
    notice = live.upload(path).notice
    assert "row 4 holds 3e+38; every value must lie between -1e+12 and 1e+12" in notice
    assert live.fingerprint() == before


def test_a_stranger_opening_many_tabs_cannot_push_a_student_out(app_url, monkeypatch):
    """Break 4: new tabs are limited per address, so a student's tab is never flushed out."""
    import ui.route
    from core.serving.tabs import Tabs

    store = Tabs(limit=30, new_tabs=10, refill=600.0)
    monkeypatch.setattr(ui.route, "TABS", store)
    student = visitor_from(app_url, STUDENT)
    student.send(sentence_a="my own view", sentence_b="")
    answers = [httpx.post(f"{app_url}explorer/live", json={"open": {"query": f"a=stranger+{i}"}}, timeout=30,
                          headers={"X-Forwarded-For": STRANGER}).json() for i in range(50)]
    refused = [a for a in answers if "Too many new pages from your address" in a.get("error", "")]
    assert len(refused) == 40 and len(store._lives) == 11
    out = student.send(sentence_a="my own view", sentence_b="still here")
    assert "error" not in out and out.written("embed-plot")


def test_a_link_to_a_large_random_layer_builds_it_in_the_heavy_pool(app_url, monkeypatch):
    """Break 1: a link's tables were built on the live path every keystroke shares; now in the
    heavy pool, like the settings' (`ui.route.Live.built_first`)."""
    from ui.route import JOBS

    jobs = []
    run = JOBS.run
    monkeypatch.setattr(JOBS, "run", lambda tab, name, *a, **k: (jobs.append(name), run(tab, name, *a, **k))[1])
    page = Page(app_url, "tokenizer=word&vocab=6000&d=1024&maxlen=64&seed=4242")
    assert jobs == ["building the tables"]
    assert "6,000" in page.opened.value("tables-info")


def new_page_from(app_url: str, door: str) -> str:
    """What a stranger is told when it opens a page (or asks for one's answer) through `door`."""
    if door == "page":
        return httpx.post(f"{app_url}explorer/live", json={"open": {"query": "a=x"}}, timeout=30,
                          headers={"X-Forwarded-For": STRANGER}).json()["error"]
    if door == "script":
        return httpx.get(f"{app_url}explorer/code?a=x", headers={"X-Forwarded-For": STRANGER}, timeout=30).text
    from gradio_client import Client

    client = Client(app_url, verbose=False, headers={"X-Forwarded-For": STRANGER})
    try:
        with pytest.raises(Exception) as refused:  # gradio_client raises the app's gr.Error with its sentence
            client.predict("a=x", *((5, "builtin") if door == "train" else ()), api_name=f"/{door}")
        return str(refused.value)
    finally:
        client.close()


@pytest.mark.parametrize("door", ["page", "view", "train", "code", "script"])
def test_a_new_page_refused_for_its_address_gets_the_sentence_from_every_door(app_url, monkeypatch, door):
    """A page opening, each API call and a link's script are each a page opened, counted for its address."""
    import ui.api
    import ui.route
    from core.serving.tabs import Tabs

    store = Tabs(new_tabs=0)
    monkeypatch.setattr(ui.route, "TABS", store)
    monkeypatch.setattr(ui.api, "TABS", store)
    assert "Too many new pages from your address" in new_page_from(app_url, door)
