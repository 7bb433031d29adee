"""The class server: `deploy/serve.py` with two workers behind HAProxy, driven through the balancer.

The command is started as a lecturer would start it (a child process on free ports) and
stopped with SIGTERM at the end; its classes live in a redis-server the module runs (named in
EXPLORER_CLASS_STORE, as a Redis of one's own is), so a test can stop it and start it again
empty under a class. Without haproxy these skip locally (`make test` and `make class` install it
as root); under CI=true they fail instead. The container files cannot run here (no docker
engine), so their YAML and HAProxy configuration are only parsed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import yaml

from deploy.serve import free_port

# one worker runs the whole module: the class server (two app processes and haproxy) starts once
pytestmark = pytest.mark.xdist_group("class-server")

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
GROUPS = ("token", "position", "segment", "sum", "output")
# every string the five groups carry (hover text, labels, custom data): the tokens shown
PLOT_STRINGS = f"""() => {{
    const p = document.querySelector('#embed-plot .js-plotly-plot');
    if (!p || !p.data) return [];
    const out = [];
    for (const t of p.data) {{
        if (!{list(GROUPS)!r}.includes(t.name)) continue;
        for (const key of ['hovertext', 'text', 'customdata']) {{
            const v = t[key];
            if (v) [v].flat(3).forEach(x => {{ if (typeof x === 'string') out.push(x); }});
        }}
    }}
    return out;
}}"""


@pytest.fixture(scope="module")
def haproxy() -> str:
    """The haproxy executable (`make test` and `make class` install it as root).

    Decided when a test runs, not when the module is collected: a collection-time `skipif`
    skipped a CI run's check before anything had installed haproxy.
    """
    from deploy.serve import ServeError, program

    try:
        return program("haproxy")
    except ServeError as error:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the class server's tests: {error}")
        pytest.skip(f"{error} (CI runs these)")


class Running:
    """The class server's process, its front URL, its run folder, and everything it printed."""

    def __init__(self, process: subprocess.Popen, url: str, run_dir: Path):
        self.process, self.url, self.run_dir, self.lines = process, url, Path(run_dir), []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line.rstrip())

    @property
    def output(self) -> str:
        return "\n".join(self.lines[-40:])

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        return self.process.returncode


def start_class_server(run_dir, store: str = "") -> Running:
    """`deploy/serve.py` with two workers behind HAProxy, once it says the class can open; its
    classes in the Redis `store` names (by default, one the command starts)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "deploy/serve.py", "--workers", "2", "--port", str(port), "--host", "127.0.0.1",
         "--first-worker-port", "0", "--run-dir", str(run_dir)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
        env={**os.environ, "EXPLORER_CLASS_STORE": store},
    )
    server = Running(process, f"http://127.0.0.1:{port}/", run_dir)
    deadline = time.monotonic() + 420  # two cold starts on a busy 2-core machine, and maybe apt-get
    while not any("The class can open" in line for line in server.lines):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            pytest.fail(f"the class server did not start:\n{server.output}")
        time.sleep(0.5)
    return server


@pytest.fixture(scope="module")
def class_server(tmp_path_factory, haproxy):
    """`make class` as a lecturer runs it, with a Redis of its own under supervisord, once for the
    module (two workers' cold starts are a minute of this machine): the test that stops it comes last."""
    server = start_class_server(tmp_path_factory.mktemp("class"))
    yield server
    server.stop()


def supervisor(server: Running):
    """The class server's supervisord, through its API (what `supervisorctl` uses)."""
    from supervisor import childutils

    return childutils.getRPCInterface({"SUPERVISOR_SERVER_URL": f"unix://{server.run_dir}/supervisor.sock"}).supervisor


def test_the_generated_configuration_is_sticky_with_long_timeouts(class_server, haproxy):
    """The HAProxy configuration the class server runs: deploy/class-haproxy.cfg and one server a worker."""
    config = (class_server.run_dir / "haproxy.cfg").read_text()
    ports = sorted(int(p["name"].removeprefix("worker-")) for p in supervisor(class_server).getAllProcessInfo()
                   if p["group"] == "worker")  # supervisord names each worker by its port
    assert len(ports) == 2
    assert "cookie SERVERID insert indirect nocache" in config
    for cookie_value, port in (("w1", ports[0]), ("w2", ports[1])):
        assert f"server {cookie_value} 127.0.0.1:{port} cookie {cookie_value}" in config
    assert "timeout server 1h" in config and "timeout tunnel 1h" in config
    assert "timeout check 20s" in config  # a worker busy with a class is not taken for a dead one
    assert "uri /gradio_api/app_id" in config  # the health route: gradio's own, nothing of the app's
    # every interface by default (--host 0.0.0.0), as `make class` runs it
    check = subprocess.run([haproxy, "-c", "-f", str(class_server.run_dir / "haproxy.cfg")], capture_output=True,
                           text=True, env={**os.environ, "CLASS_BIND": "0.0.0.0:7860"})
    assert check.returncode == 0, check.stderr + check.stdout


def worker_of(response: httpx.Response) -> str | None:
    return response.cookies.get("SERVERID")


def test_the_page_loads_through_the_balancer_and_each_visitor_gets_a_sticky_cookie(class_server):
    # Fresh visitors without cookies go to the least busy worker, so they spread over both. An
    # event stream another test left open (a closed gradio client's heartbeat lingers until its
    # next beat, 15 s) makes one worker busier for a while: keep arriving until both have served.
    seen, deadline = [], time.monotonic() + 60
    while set(seen) != {"w1", "w2"} and time.monotonic() < deadline:
        page = httpx.get(class_server.url, timeout=30)
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert "SERVERID=" in page.headers.get("set-cookie", "")
        seen.append(worker_of(page))
        time.sleep(0.25)
    assert set(seen) == {"w1", "w2"}, f"every fresh visitor went to {seen[0]} for a minute: {len(seen)} visits"
    with httpx.Client(base_url=class_server.url, timeout=30) as visitor:  # a browser: it sends the cookie back
        first = worker_of(visitor.get("/"))
        for path in ("/", "/config", "/gradio_api/info"):
            answer = visitor.get(path)
            assert answer.status_code == 200
            assert worker_of(answer) is None  # indirect: no new cookie, the worker stays the same
        assert visitor.cookies.get("SERVERID") == first


def test_a_page_that_sends_its_cookie_types_and_uploads_through_the_balancer(class_server, tmp_path):
    """A page's calls to its route and its upload carry the balancer's cookie, as a browser sends
    them, so each reaches the worker that holds the page's tab; on the other worker its key names
    no tab, and the page is told to reload."""
    import numpy as np

    from tests.appapi import Page

    worker = worker_of(httpx.get(class_server.url, timeout=30))
    assert worker in {"w1", "w2"}, "the balancer set no stickiness cookie"
    page = Page(class_server.url, headers={"Cookie": f"SERVERID={worker}"})
    out = page.send(sentence_a="the dragon guards the castle", sentence_b="")
    assert {"dragon", "castle"} <= {row[0] for row in out["token-table"]["data"]}
    path = tmp_path / "table.npy"
    np.save(path, np.random.default_rng(0).standard_normal((20, 6)).astype(np.float32))
    uploaded = page.upload(path)
    assert uploaded.value("table-source") == "upload" and "6 dimensions" in uploaded.value("tables-info")

    elsewhere = {"w1": "w2", "w2": "w1"}[worker]
    answer = httpx.post(f"{class_server.url}explorer/live", json={"key": page.key, "change": {"sentence_a": "x"}},
                        headers={"Cookie": f"SERVERID={elsewhere}"}, timeout=30)
    assert answer.status_code == 200 and "reload the page" in answer.json()["error"]


def test_the_public_api_answers_through_the_balancer(class_server):
    """gradio_client keeps the balancer's cookie, so an API call and the stream that answers it
    reach one worker; the call keeps no session, so any worker answers it."""
    from gradio_client import Client

    client = Client(class_server.url, verbose=False)
    try:
        assert client.cookies.get("SERVERID") in {"w1", "w2"}
        answer = client.predict("a=the+dragon+guards+the+castle", api_name="/view")
        assert {"dragon", "castle"} <= {row[0] for row in answer["tokens"]}
        code = client.predict("a=the+dragon", api_name="/code")
        assert "class Embedding(nn.Module):" in code and "the dragon" in code
    finally:
        client.close()


def open_page(browser, url: str, worker: str | None = None):
    """A new browser (context) at the class's URL; `worker` presets the stickiness cookie."""
    from tests.browser import COUNT_REQUESTS

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    context.add_init_script(COUNT_REQUESTS)  # so `tests.browser.settle` can wait for the page's events
    if worker:
        context.add_cookies([{"name": "SERVERID", "value": worker, "url": url}])
    page = context.new_page()
    page.goto(url)
    page.wait_for_function(f"() => ({PLOT_STRINGS})().length > 0", timeout=90_000)
    return context, page


def cookie(context) -> str | None:
    return next((c["value"] for c in context.cookies() if c["name"] == "SERVERID"), None)


@pytest.mark.browser
def test_browsers_on_the_same_and_on_different_workers_see_only_their_own_tokens(class_server, browser):
    url = class_server.url
    first, first_page = open_page(browser, url)
    mine = cookie(first)
    assert mine in {"w1", "w2"}, "the balancer set no stickiness cookie"
    other = {"w1": "w2", "w2": "w1"}[mine]
    second, second_page = open_page(browser, url, other)  # another worker
    third, third_page = open_page(browser, url, mine)  # the same worker as the first
    visitors = [
        (first, first_page, mine, "the elephant plays the violin", {"elephant", "violin"}),
        (second, second_page, other, "a tractor climbs the mountain", {"tractor", "mountain"}),
        (third, third_page, mine, "my umbrella hides the piano", {"umbrella", "piano"}),
    ]
    try:
        for _, page, _, sentence, _ in visitors:
            page.locator("#sentence-a textarea").fill(sentence)
        for _, page, _, _, words in visitors:
            page.wait_for_function(
                f"() => {{ const s = new Set(({PLOT_STRINGS})()); return {sorted(words)!r}.every(w => s.has(w)); }}",
                timeout=60_000,
            )
        everyone = set().union(*(words for *_, words in visitors))
        for context, page, worker, _, words in visitors:
            shown = set(page.evaluate(PLOT_STRINGS))
            assert words <= shown
            assert not (everyone - words) & shown, f"a page on {worker} shows another visitor's tokens"
            assert cookie(context) == worker  # every request of this browser stayed on its worker
    finally:
        for context, *_ in visitors:
            context.close()


@pytest.mark.browser
def test_bert_training_export_upload_and_a_link_work_behind_the_balancer(class_server, browser, tmp_path):
    import numpy as np

    from tests.browser import train

    context, page = open_page(browser, class_server.url)
    worker = cookie(context)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.locator("#sentence-a textarea").fill("the volcano and the guitar")
        page.wait_for_function(f"() => ({PLOT_STRINGS})().includes('volcano')", timeout=60_000)

        page.get_by_role("tab", name="Tables").click()
        page.locator("#table-source label").filter(has_text="BERT").first.click()
        # BERT's own size: random tables on its word pieces are 30,522 rows too
        page.wait_for_function("() => document.querySelector('#tables-info')?.innerText.includes('30,522 × 384')",
                               timeout=120_000)

        train(page, 5, timeout=180_000)

        page.get_by_role("tab", name="View").click()
        page.locator("#export-button").click()
        page.wait_for_function("() => document.querySelectorAll('#export-links a').length >= 3", timeout=60_000)
        links = page.eval_on_selector_all("#export-links a", "links => links.map(a => a.href)")
        for link in links:  # the downloads come from the worker that wrote them: the cookie goes along
            download = context.request.get(link)
            assert download.status == 200 and len(download.body()) > 0, link
            if link.endswith(".csv"):
                assert "volcano" in download.text()

        page.locator("#share-button").click()
        page.wait_for_function(
            "() => { const b = document.querySelector('#share-link textarea, #share-link input');"
            " return b && b.value !== ''; }", timeout=60_000)
        link = page.locator("#share-link textarea, #share-link input").first.input_value()
        assert link.startswith(class_server.url) and "volcano" in urlsplit(link).query

        # the link opens on whichever worker a new visitor gets, with the same sentence
        reader, reader_page = open_page(browser, link)
        try:
            reader_page.wait_for_function(f"() => ({PLOT_STRINGS})().includes('volcano')", timeout=90_000)
            assert "volcano" in reader_page.locator("#sentence-a textarea").input_value()
        finally:
            reader.close()

        # an uploaded table reaches the session that uploaded it
        path = tmp_path / "table.npy"
        np.save(path, np.random.default_rng(1).standard_normal((30, 4)).astype(np.float32))
        page.get_by_role("tab", name="Tables").click()
        page.locator("#upload-table input[type=file]").set_input_files(str(path))
        page.wait_for_function("() => document.querySelector('#tables-info')?.innerText.includes('4 dimensions')",
                               timeout=60_000)
        assert cookie(context) == worker and errors == []
    finally:
        context.close()


@pytest.mark.browser
def test_a_class_follows_its_lecturer_across_workers_through_redis(class_server, browser):
    """tests/test_browser_class.py's lecture, with the lecturer on one worker and students on
    both: the lesson and the counts go through the class server's Redis."""
    from tests.browser import settle
    from tests.test_browser_class import BANNER, COORDINATES, counts, shows_the_same, start_class

    url = class_server.url
    opened = [open_page(browser, url)]
    try:
        lecturer = opened[0][1]
        mine = cookie(opened[0][0])
        other = {"w1": "w2", "w2": "w1"}[mine]
        link = start_class(lecturer)
        for worker in (other, mine, other):  # two students on the other worker, one on the lecturer's
            opened.append(open_page(browser, link, worker))
        (_, near), (_, far), (_, wanderer) = opened[2], opened[1], opened[3]
        counts(lecturer, 3, 3)
        assert [cookie(context) for context, _ in opened] == [mine, other, mine, other]

        # a round of answers: students on both workers answer, the lecturer's page counts and draws them all
        ask(lecturer, "Type a word you would put next to king.")
        for student, word in ((near, "queen"), (far, "queen"), (wanderer, "prince")):
            answer(student, word)
        answered(lecturer, 3, 3)
        lecturer.wait_for_function(CLASS_WORDS, arg=["queen ×2", "prince ×1"], timeout=60_000)
        far.wait_for_function(CLASS_WORDS, arg=["queen ×2", "prince ×1"], timeout=60_000)

        wanderer.locator("#sentence-a textarea").fill("my own words about a violin")
        wanderer.wait_for_function(f"() => ({BANNER})().includes('Exploring on your own')", timeout=60_000)
        counts(lecturer, 3, 2)
        settle(wanderer)  # the banner changes as the page sends the words; the plot comes after
        own = wanderer.evaluate(COORDINATES)
        lecturer.locator("#tour-next").click()
        lecturer.wait_for_function("() => location.search.includes('step=1')", timeout=60_000)
        settle(lecturer)
        for student in (near, far):
            shows_the_same(student, lecturer)
            student.wait_for_function(f"() => ({BANNER})().includes('step 1')", timeout=60_000)
        assert wanderer.evaluate(COORDINATES) == own
        wanderer.locator("#class-follow").click()
        shows_the_same(wanderer, lecturer)
        counts(lecturer, 3, 3)
    finally:
        for context, _ in opened:
            context.close()


RECONNECTING = "() => (document.querySelector('#class-banner') || {}).innerText.includes('reconnecting')"
# the class trace's points as the page drew them: each hover's first line, "queen ×2"
CLASS_WORDS = """(words) => {
    const trace = document.querySelector('#embed-plot .js-plotly-plot').data.find(t => t.name === 'class');
    const drawn = trace ? Array.from(trace.hovertext).map(h => h.split('<br>')[0]) : [];
    return JSON.stringify(drawn) === JSON.stringify(words);
}"""


def ask(lecturer, prompt: str) -> None:
    """The lecturer's page asks the class (its poll box in the Tour panel)."""
    lecturer.locator("#poll-prompt").fill(prompt)
    lecturer.locator("#poll-ask").click()
    lecturer.wait_for_function("(p) => document.getElementById('poll-status').textContent.includes(p)", arg=prompt,
                               timeout=60_000)


def answer(student, word: str) -> None:
    """A student's page sends a word, and waits until the server acknowledged it (its own words say so)."""
    student.locator("#poll-answer").fill(word)
    student.locator("#poll-answer").press("Enter")
    student.wait_for_function("(w) => (document.getElementById('poll-own') || {}).textContent.includes(w)",
                              arg=word, timeout=60_000)


def answered(lecturer, answers: int, students: int) -> None:
    """Until the lecturer's poll box counts this many answers from this many students."""
    until(lecturer, "(said) => document.getElementById('poll-status').textContent.includes(said)",
          f"{answers} answers from {students} students", "() => document.getElementById('poll-status').textContent")


def until(page, condition: str, arg, shown: str) -> None:
    """Until `condition(arg)` holds on the page; failing, the message says what `shown` reads there."""
    from playwright.sync_api import TimeoutError as Late

    try:
        page.wait_for_function(condition, arg=arg, timeout=60_000)
    except Late:
        raise AssertionError(f"waited for {arg!r}; the page shows {page.evaluate(shown)!r}") from None


@pytest.mark.browser
def test_a_class_survives_its_redis_stopping_and_starting_again_empty(class_server, browser):
    """Redis stops under a lecture on two workers, and starts again empty. Meanwhile no route
    answers a 5xx, every page says the class is reconnecting, the lecturer's Next and a student's
    typing change their own pages, and no stream is cut; once it is back, the class is restored
    from the lecturer's page without anyone reloading: the next Next reaches every follower and
    End ends the class. The seconds from Redis's start are printed (the README's figures come from
    `python -m bench.class_outage`)."""
    from tests.browser import settle
    from tests.test_browser_class import BANNER, counts, shows_the_same, start_class

    url = class_server.url
    opened = [open_page(browser, url)]
    answers: list[tuple[int, str]] = []
    streams: dict[int, int] = {}  # page -> class streams it opened
    errors: list[str] = []

    def watch(index: int, page) -> None:
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("response", lambda response: answers.append((response.status, response.url)))
        page.on("request", lambda request: streams.__setitem__(index, streams.get(index, 0) + (
            "explorer/class/stream" in request.url)))

    try:
        lecturer = opened[0][1]
        watch(0, lecturer)
        mine = cookie(opened[0][0])
        other = {"w1": "w2", "w2": "w1"}[mine]
        link = start_class(lecturer)
        for worker in (mine, other, other):
            opened.append(open_page(browser, link, worker))
        (_, near), (_, far), (_, typist) = opened[1:]
        for index, (_, page) in enumerate(opened[1:], 1):
            watch(index, page)
        counts(lecturer, 3, 3)
        ask(lecturer, "A word, before the store goes away?")
        for student, word in ((near, "queen"), (far, "prince")):  # acknowledged: each page says it sent it
            answer(student, word)
        answered(lecturer, 2, 2)
        opened_streams = {index: streams.get(index, 0) for index in range(len(opened))}

        supervisor(class_server).stopProcess("redis")
        for _, page in opened:
            page.wait_for_function(RECONNECTING, timeout=60_000)
        lecturer.locator("#tour-next").click()  # the lecturer's own page moves on
        lecturer.wait_for_function("() => location.search.includes('step=1')", timeout=60_000)
        typist.locator("#sentence-a textarea").fill("a student types while the store is away")
        typist.wait_for_function(f"() => ({PLOT_STRINGS})().includes('away')", timeout=60_000)

        supervisor(class_server).startProcess("redis")  # empty: it keeps nothing on disk
        back = time.monotonic()
        lecturer.locator("#tour-next").click()  # the next Next, at once
        lecturer.wait_for_function("() => location.search.includes('step=2')", timeout=60_000)
        settle(lecturer)
        for student in (near, far):
            student.wait_for_function(f"() => ({BANNER})().includes('step 2')", timeout=60_000)
            shows_the_same(student, lecturer)
        reached = time.monotonic() - back
        until(typist, f"(said) => ({BANNER})().includes(said)", "Exploring on your own", BANNER)
        counts(lecturer, 3, 2)
        answer(far, "crown")  # the round goes on where it was: no acknowledged answer was lost
        answered(lecturer, 3, 2)
        lecturer.wait_for_function(CLASS_WORDS, arg=["crown ×1", "prince ×1", "queen ×1"], timeout=60_000)
        lecturer.locator("#class-end").click()
        for _, page in opened:
            page.wait_for_function(f"() => ({BANNER})().includes('The lecturer ended the class.')", timeout=60_000)
        ended = time.monotonic() - back
        print(f"after Redis started again: the next Next reached every follower in {reached:.1f} s, End every page "
              f"in {ended:.1f} s")
        assert not [a for a in answers if a[0] >= 500], f"5xx answers: {[a for a in answers if a[0] >= 500]}"
        assert {index: streams.get(index, 0) for index in range(len(opened))} == opened_streams, \
            "a class stream was cut, and opened again"
        assert errors == []
    finally:
        if supervisor(class_server).getProcessInfo("redis")["statename"] != "RUNNING":
            supervisor(class_server).startProcess("redis")  # for the tests after this one
        for context, _ in opened:
            context.close()


def test_a_worker_and_redis_that_die_start_again_and_sigterm_stops_everything(class_server):
    """A worker killed (SIGKILL) starts again and its visitors' cookie reaches it again; Redis killed
    starts again, empty, on the port the workers were given; SIGTERM stops supervisord, HAProxy,
    every worker and Redis, and the workers' heavy-work processes. The module's last test on the
    class server: it stops it."""
    import psutil
    import redis

    try:
        programs = {p["name"]: p for p in supervisor(class_server).getAllProcessInfo()}
        assert {"haproxy", "redis"} <= set(programs) and sum(n.startswith("worker-") for n in programs) == 2
        worker = min((n for n in programs if n.startswith("worker-")), key=lambda n: int(n[7:]))  # w1: the first port
        store = psutil.Process(programs[worker]["pid"]).environ()["EXPLORER_CLASS_STORE"]  # the workers' Redis
        redis.Redis.from_url(store).set("a class", "kept in memory only")
        for name in ("redis", worker):
            os.kill(programs[name]["pid"], signal.SIGKILL)

        deadline = time.monotonic() + 240  # a worker's cold start on a busy 2-core machine
        while True:
            again = {p["name"]: p for p in supervisor(class_server).getAllProcessInfo()}
            with httpx.Client(base_url=class_server.url, cookies={"SERVERID": "w1"}, timeout=30) as visitor:
                answer = visitor.get("/gradio_api/app_id")  # answered by w1 itself: no new cookie
            if again[worker]["pid"] not in (0, programs[worker]["pid"]) and answer.status_code == 200 \
                    and "SERVERID" not in answer.cookies:
                break
            assert time.monotonic() < deadline, f"{worker} did not come back: {again[worker]}\n{class_server.output}"
            time.sleep(1)
        assert again["redis"]["pid"] != programs["redis"]["pid"] and again["redis"]["statename"] == "RUNNING"
        with redis.Redis.from_url(store, socket_timeout=5) as client:  # the same address, empty
            assert client.ping() and client.get("a class") is None

        children = psutil.Process(class_server.process.pid).children(recursive=True)
        names = sorted({c.name() for c in children})
        assert len(children) >= 4 and any("haproxy" in n for n in names) and "redis-server" in names, names
        assert class_server.stop() == 0, class_server.output
        _gone, alive = psutil.wait_procs(children, timeout=30)
        assert alive == [], f"still running after SIGTERM: {alive}"
        assert "stopped" in class_server.output
    finally:
        class_server.stop()


# the container files: they cannot run here, so they are parsed and checked for what matters


def test_compose_file_runs_replicas_behind_haproxy_with_sticky_cookies():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    app, balancer = compose["services"]["app"], compose["services"]["haproxy"]
    assert app["build"]["dockerfile"] == "deploy/Dockerfile"
    assert int(str(app["deploy"]["replicas"]).strip("${}").split(":-")[-1]) >= 2
    assert balancer["image"].startswith("haproxy:")
    assert any(str(p).endswith(":7860") for p in balancer["ports"])
    assert app["environment"]["EXPLORER_CLASS_STORE"] == "redis://redis:6379/0"  # a class across replicas
    assert compose["services"]["redis"]["image"].startswith("redis:") and "redis" in app["depends_on"]
    config = (DEPLOY / "haproxy.cfg").read_text()
    assert "cookie SERVERID insert indirect nocache" in config
    assert "timeout tunnel" in config and "server-template" in config


def test_kubernetes_manifest_has_client_ip_affinity_and_cookie_affinity_at_the_ingress():
    loaded = [d for d in yaml.safe_load_all((DEPLOY / "k8s.yaml").read_text()) if d]
    documents = {(d["kind"], d["metadata"]["name"]): d for d in loaded}
    name = "embedding-explorer"
    deployment, service = documents["Deployment", name], documents["Service", name]
    ingress = documents["Ingress", name]
    assert deployment["spec"]["replicas"] >= 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"][0]["containerPort"] == 7860
    assert service["spec"]["sessionAffinity"] == "ClientIP"
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    annotations = ingress["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] == service["metadata"]["name"]
    # a class across pods: every pod names the one Redis, which its Service reaches
    store = next(e["value"] for e in container["env"] if e["name"] == "EXPLORER_CLASS_STORE")
    redis = documents["Service", "embedding-explorer-redis"]
    assert store == f"redis://{redis['metadata']['name']}:6379/0"
    redis_pods = documents["Deployment", "embedding-explorer-redis"]["spec"]["template"]["metadata"]["labels"]
    assert redis["spec"]["selector"] == redis_pods


def test_dockerfile_installs_the_requirements_on_python_311_slim():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in dockerfile
    assert "pip install" in dockerfile and "requirements.txt" in dockerfile
    assert 'CMD ["python", "app.py"]' in dockerfile


def test_haproxy_accepts_the_compose_configuration(haproxy):
    check = subprocess.run([haproxy, "-c", "-f", str(DEPLOY / "haproxy.cfg")], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr + check.stdout
