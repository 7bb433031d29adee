"""Shared fixtures: one launched app per test run, and a real Chromium for the page tests."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

# the suite is one client opening thousands of tabs; tests/test_public_space.py checks the limit itself
os.environ.setdefault("EXPLORER_NEW_TABS", "1000000")
os.environ.setdefault("EXPLORER_CLASS_STARTS", "1000000")

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
# flags that keep headless chromium off the network and quiet on a machine without one
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
# the address bar's two popups: pages of Chromium's own UI that each new window loads in a renderer
# of its own beside the page's, though a headless window has no address bar to show them. Without
# them a page opens in 2.4-2.6 CPU-seconds of this machine instead of 3.2-3.6 (three paired rounds
# of six pages as tabs, whole-machine CPU, 7 Dec 2026)
UNSEEN_FEATURES = ("WebUIOmniboxPopup", "WebUIOmniboxAimPopup")


def launch_chromium(playwright):
    """Chromium with CHROMIUM_ARGS and without UNSEEN_FEATURES. Chromium reads only the last
    --disable-features it is given, and Playwright gives one of its own: the features that one
    names are read off a first launch (the browser says its command line to automation) and
    given again with these."""
    probe = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, "--enable-automation"])
    try:
        line = probe.new_browser_cdp_session().send("Browser.getBrowserCommandLine")["arguments"]
    finally:
        probe.close()
    theirs = [arg.split("=", 1)[1] for arg in line if arg.startswith("--disable-features=")][-1:]
    features = ",".join([*theirs, *UNSEEN_FEATURES])
    return playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, f"--disable-features={features}"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pytest_collection_modifyitems(items) -> None:
    """The slowest files first, so that the two workers end together: the files of an xdist group
    (one worker runs a group's tests, two minutes for the class server's), then the files that
    drive Chromium, then the rest, whose many short tests fill in the end. A file's tests stay
    together and in their order; the workers collect the same order, as xdist requires."""
    def weight(item) -> int:
        if item.get_closest_marker("xdist_group"):
            return 0
        return 1 if item.get_closest_marker("browser") or "browser" in item.fixturenames else 2

    files: dict = {}  # a file's path -> its lightest weight
    for item in items:
        files[item.path] = min(files.get(item.path, 2), weight(item))
    items.sort(key=lambda item: files[item.path])  # stable: each file's order is kept


@pytest.fixture(autouse=True)
def no_shared_results():
    """Every test starts without the trainings earlier tests finished: the app shares a finished
    training with whoever asks for the same one next (core.serving.jobs.Jobs), which would turn a test's
    training into an instant answer, depending on which tests ran before it in this process.
    Nor the drawings shared by tabs on the same tables (core/drawing/shared.py): a test that
    changes how a view is drawn draws it anew."""
    route = sys.modules.get("ui.route")
    if route is not None:
        with route.JOBS._lock:  # the finished ones (jobs in line or running are still shared)
            for key in [key for key, job in route.JOBS._shared.items() if job.future.done()]:
                del route.JOBS._shared[key]
    shared = sys.modules.get("core.drawing.shared")
    if shared is not None:
        shared.forget()
    yield


@pytest.fixture(scope="session")
def app_url():
    """The real app, launched once on a free loopback port."""
    import app

    app.demo.launch(
        server_name="127.0.0.1",
        server_port=free_port(),
        prevent_thread_lock=True,
        quiet=True,
        **app.LAUNCH_OPTIONS,
    )
    yield app.demo.local_url
    app.demo.close()


@pytest.fixture()
def live(app_url):
    """A new page of the launched app, driven through its route as its script drives it (tests/appapi.py)."""
    from tests.appapi import Page

    return Page(app_url)


@pytest.fixture(scope="session")
def api(app_url):
    """A gradio client of the launched app's public API (ui/api.py)."""
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    yield client
    client.close()


@pytest.fixture(scope="session")
def browser():
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; CI must run the browser tests (apt-get install chromium)")
        pytest.skip("chromium is not installed here (apt-get install chromium); CI runs these")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def browsers(browser):
    """One browser context a viewport, kept for the worker's run: `open_page` opens each page as a
    new tab of one, as a student opens a link in the browser they already use. Each tab is a
    visitor of its own to the app (its key is kept in the tab's sessionStorage; the app sets no
    cookie), and the context's cache keeps gradio's scripts and plotly.js between tabs: a page opens
    in 2.4–2.6 CPU-seconds of this machine instead of 2.6–2.8 in a context of its own, with
    `launch_chromium`'s flags (the same probe as UNSEEN_FEATURES'; `python -m bench.idle_page`
    compares the two against a minimal gradio page)."""
    from tests.browser import new_context

    contexts: dict = {}  # a viewport (width, height) -> its context

    def of(viewport: tuple[int, int]):
        if viewport not in contexts:
            contexts[viewport] = new_context(browser, viewport)
        return contexts[viewport]

    yield of
    for context in contexts.values():
        context.close()


@pytest.fixture()
def open_page(browser, browsers, app_url):
    """Open the app at a query string, each page a new tab (a session of its own) of the viewport's browser."""
    from tests.browser import open_at

    pages: list = []

    def opened(query="", viewport=(1400, 1000), wait=True):
        context = browsers(tuple(viewport))
        pages.append(open_at(browser, app_url, query, viewport, wait=wait, context=context))
        return pages[-1]

    yield opened
    for page in pages:
        page.context.clear_permissions()  # what a test granted its tab (the clipboard) goes with it
        page.close()


@pytest.fixture()
def page(open_page):
    """The app's default page, drawn: a new tab of the kept browser, as `open_page` opens it."""
    return open_page()


def phone(browser, app_url: str, query: str, contexts: list):
    """A phone's page (390 × 844, touch), opened at the class link."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  device_scale_factor=2)
    contexts.append(context)
    from tests.browser import COUNT_REQUESTS, ready

    context.add_init_script(COUNT_REQUESTS)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(f"{app_url}?{query}")
    ready(page)
    return page


@pytest.fixture()
def phones(browser, app_url):
    """Phones' pages (390 × 844, touch), each in a context of its own, opened at a query."""
    contexts: list = []
    yield lambda query: phone(browser, app_url, query, contexts)
    for context in contexts:
        context.close()


class RedisServer:
    """A redis-server of a test's own on a free loopback port, keeping nothing on disk: stopped and
    started again (empty, on the same port) as a class server's Redis is when it restarts."""

    def __init__(self) -> None:
        self.program = shutil.which("redis-server")
        if self.program is None:
            if os.environ.get("CI"):
                pytest.fail("redis-server is not installed; CI must run the class store's tests (apt-get install "
                            "redis-server)")
            pytest.skip("redis-server is not installed here (apt-get install redis-server); CI runs these")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        import redis

        self.process = subprocess.Popen([self.program, "--port", str(self.port), "--save", "", "--appendonly", "no",
                                         "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            if self.process.poll() is not None:
                pytest.fail(f"redis-server exited at once (code {self.process.returncode}) on port {self.port}")
            try:
                with redis.Redis.from_url(self.url, socket_timeout=1) as probe:
                    if probe.ping():
                        return self
            except (redis.ConnectionError, redis.TimeoutError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server on port {self.port} did not answer PING within 20 s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="session")
def redis_url():
    """A redis-server of this test process's own: the class store's tests (core/serving/classstore.py's
    RedisStore) run against it."""
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture()
def own_redis():
    """A redis-server of the test's own, which it may stop and start again (empty)."""
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()
