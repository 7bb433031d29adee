"""Server CPU per live update of the app (as its page sends it, and through the API) against per event of a
one-textbox echo app, under the same load.

    python -m bench.server_cpu [--rounds 3] [--sessions 10] [--updates 20] [--quick]

A class costs the server what each keystroke costs it, and a gradio event has a floor no app
can go below: the queue, the event stream, the JSON of the answer. This puts the app next to
that floor: the app driven as its page drives it and through the public API, beside a Blocks
app that echoes one textbox into another (`serve_echo`), each server in its own child process
so its CPU time is its own (`both_servers`). Rounds of --sessions clients making --updates calls
each (`drive`) alternate between the servers (`measure`). Reported: the medians of the measured
rounds' CPU per update and their ratio, with the load generator's own CPU per update and what
the rest of the machine used in the window, so a reader can see that the generator is light and
how noisy it was.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import psutil

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

ECHO_OPTIONS = ("show_error", "run_history", "max_file_size")  # the app's launch options the echo copies
THINGS = (
    "apples", "boats", "clouds", "ducks", "engines", "feathers", "grapes", "horses", "kettles", "lamps",
    "maps", "nails", "oranges", "pencils", "rabbits", "stones", "tables", "wheels", "buckets", "ladders",
)
CALL_TIMEOUT = 300  # seconds one call may take before the round counts it as an error
# gradio's event log summarised once per thousand events, not after each: the echo's floor is
# gradio's event path itself, as it was measured when the page's keystrokes went through it
ECHO_SETTINGS = {"GRADIO_ANALYTICS_CACHE_FREQUENCY": "1000"}


# the echo app: run in its own process by `--serve-echo`


def echo(text: str) -> str:
    return text


def serve_echo(options: dict) -> None:
    """The baseline server: one textbox echoed into another, queued as the page's live events were
    before the page had a route of its own. Port and address come from GRADIO_SERVER_PORT /
    GRADIO_SERVER_NAME, as for `python app.py`; gradio's settings are `ECHO_SETTINGS`."""
    for name, value in ECHO_SETTINGS.items():
        os.environ.setdefault(name, value)  # before gradio reads them
    import gradio as gr

    with gr.Blocks(title="echo") as demo:
        text, echoed = gr.Textbox(label="text"), gr.Textbox(label="echoed")
        # as the page's live event was wired: latest input wins, one concurrency group, no progress overlay
        text.change(echo, text, echoed, api_name="echo", trigger_mode="always_last", concurrency_id="live",
                    show_progress="hidden")
    demo.queue(default_concurrency_limit=2, max_size=None)  # the page's queue as it was
    demo.launch(quiet=True, **options)


# the texts


def pair(session: int, update: int, run: int, stride: int) -> tuple[str, str]:
    """Sentences A and B, 12 words each, that no other (session, update < stride, run) sends:
    the session names its own subject, and run and update pick a number no other call uses."""
    from bench.lecture import WORDS

    who, thing, n = WORDS[session], THINGS[update % len(THINGS)], str(run * stride + update + 1)
    a = f"the {who} saw {n} {thing} near the old river bank this morning"
    b = f"a {thing} and the {who} walked along the quiet road after lunch"
    return a, b


# the three ways in


@dataclass(frozen=True)
class Served:
    """One server under test, and how a client of it sends an update."""

    name: str  # "page", "api" or "echo"
    url: str
    process: psutil.Process
    endpoints: dict  # api_name -> fn_index, for gradio's queue

    def client(self, index: int):
        """A client: a page opened over the route, or a session of gradio's queue. The API's
        callers come from addresses of their own: each `view` is a page opened, and one address
        may open 200 at once, then one every 2 s (core.serving.tabs.NewTabs)."""
        from bench.load import QueueSession
        from bench.pages import RoutePage

        if self.name == "page":
            return RoutePage(self.url, timeout=CALL_TIMEOUT)
        headers = {"X-Forwarded-For": f"198.51.100.{index + 1}"} if self.name == "api" else None
        return QueueSession(self.url, self.endpoints, CALL_TIMEOUT, headers)

    def send(self, client, a: str, b: str) -> None:
        from bench.pages import query_of

        if self.name == "page":
            client.change(sentence_a=a, sentence_b=b)
        elif self.name == "api":
            client.predict(query_of(a=a, b=b), api_name="view")
        else:
            client.predict(a, api_name="echo")


@contextmanager
def both_servers() -> Iterator[tuple[Served, Served, Served]]:
    """The app (as its page drives it, and through the API) and the echo app, each server in its
    own child process, alive side by side.

    - page: `python app.py` (bench/appserver.py) driven as its page drives it (bench/pages.py
      `RoutePage`): the page's opening once, then each update one POST of the change to the
      page's route, with a 12-word sentence A and a 12-word sentence B, on the default tables;
    - api: the same process driven through the public API, `view` of the link of the same two
      sentences (`a=…&b=…`), on gradio's queue (join, then the session's event stream): for
      comparison, not the same work, since each `view` opens a tab of its own for its link
      (the API keeps no session) where a page's keystroke changes the tab it has;
    - echo: `serve_echo`, driven with a 12-word text. It has the queue the page's live events
      had before the page's route (`default_concurrency_limit=2`, unbounded), their event
      options (`trigger_mode="always_last"`, one concurrency group, no progress), gradio's
      settings `ECHO_SETTINGS` and the launch options the app's config reports (`show_error`,
      `run_history`, `max_file_size`); the theme, stylesheet and script only shape the page,
      which nobody loads here.
    """
    import httpx

    from bench.appserver import launched, launched_app
    from bench.load import endpoints_of

    with ExitStack() as stack:
        url, process = stack.enter_context(launched_app())
        config = httpx.get(f"{url}config", timeout=30).raise_for_status().json()
        endpoints = endpoints_of(url)
        if "view" not in endpoints:
            raise RuntimeError(f"the app's API has no view ({sorted(endpoints)}): update bench/server_cpu.py to it")
        page = Served("page", url, process, endpoints)
        api = Served("api", url, process, endpoints)
        options = json.dumps({key: config[key] for key in ECHO_OPTIONS if key in config})
        command = [sys.executable, "-m", "bench.server_cpu", "--serve-echo", options]
        url, process = stack.enter_context(launched(command, "the echo app"))
        echo_app = Served("echo", url, process, endpoints_of(url))
        yield page, api, echo_app


# one round


def busy_seconds() -> float:
    """CPU seconds every process on the machine has used so far."""
    times = psutil.cpu_times()
    return times.user + times.system + getattr(times, "nice", 0.0)


def server_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def drive(server: Served, run: int, sessions: int, updates: int) -> dict:
    """--sessions clients at once, --updates sequential calls each; CPU over the window they share.

    Every text differs from every other (session, update and round each change a word), so
    nothing is answered from a cache. Each client first makes one untimed call (a page's first
    change after its opening; the API's and the echo's first call through gradio's queue);
    then all start together and the window runs until the last answer. Server CPU is the
    child's user + system time over the window, divided by the updates answered in it.
    """
    clients, errors, lock = [], [], threading.Lock()
    for index in range(sessions):
        try:
            clients.append(server.client(index))
        except Exception as error:
            errors.append(f"session {index} opening: {error!r}"[:200])
            clients.append(None)
    start = threading.Barrier(sessions + 1, timeout=CALL_TIMEOUT + 60)
    answered = [0]

    def client(index: int) -> None:
        session = clients[index]
        try:
            if session is not None:  # untimed, with a text of its own
                server.send(session, *pair(index, updates, run, updates + 1))
        except Exception as error:
            with lock:
                errors.append(f"session {index} first call: {error!r}"[:200])
        finally:
            start.wait()
        if session is None:
            return
        for update in range(updates):
            try:
                server.send(session, *pair(index, update, run, updates + 1))
            except Exception as error:
                with lock:
                    errors.append(f"session {index} update {update}: {error!r}"[:200])
                continue
            with lock:
                answered[0] += 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(sessions)]
    for thread in threads:
        thread.start()
    try:
        start.wait()
        began, cpu, own, everyone = time.perf_counter(), server_seconds(server.process), time.process_time(), \
            busy_seconds()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - began
        cpu, own = server_seconds(server.process) - cpu, time.process_time() - own
        everyone = busy_seconds() - everyone
    finally:
        for session in clients:
            if session is not None:
                session.close()
    return {"server": server.name, "answered": answered[0], "errors": errors, "seconds": seconds,
            "server_cpu": cpu, "generator_cpu": own, "others_cpu": max(0.0, everyone - cpu - own)}


def per_update(run: dict, key: str) -> float:
    return run[key] / max(1, run["answered"])


def measure(rounds: int, sessions: int = 10, updates: int = 20) -> dict:
    """Alternating rounds on the app and the echo app after a warm-up round each: every round's
    figures, and the medians of the measured rounds' CPU seconds per update and their ratio.

    The rounds alternate (app, echo, app, echo, …) so a busy neighbour on a shared machine
    slows both alike, and so both servers have served the same number of events at every round
    (gradio's queue summarises the events it has recorded, up to 10,000, every thousand events
    with the app's settings).
    """
    from bench.lecture import WORDS

    if not 1 <= sessions <= len(WORDS):
        raise SystemExit(f"--sessions must be between 1 and {len(WORDS)} (one subject word each), not {sessions}")
    runs = []
    with both_servers() as servers:
        for index in range(1 + rounds):
            for server in servers:
                run = drive(server, len(runs), sessions, updates)
                runs.append({**run, "round": index, "warm_up": index == 0})
    found = {"sessions": sessions, "updates": updates, "rounds": rounds, "cores": os.cpu_count() or 1, "runs": runs}
    for name in ("page", "api", "echo"):
        measured = [r for r in runs if r["server"] == name and not r["warm_up"]]
        found[name] = {key: statistics.median(per_update(r, key) for r in measured)
                       for key in ("server_cpu", "generator_cpu")}
    found["ratio"] = found["page"]["server_cpu"] / found["echo"]["server_cpu"]
    found["api_ratio"] = found["api"]["server_cpu"] / found["echo"]["server_cpu"]
    return found


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    cores = found["cores"]
    rows = []
    for r in found["runs"]:
        rows.append((
            f"{r['round'] or 'warm-up'}", r["server"], str(r["answered"]), str(len(r["errors"])),
            f"{r['seconds']:.1f}", f"{r['answered'] / r['seconds']:.0f}", f"{per_update(r, 'server_cpu') * 1e3:.1f}",
            f"{r['server_cpu'] / r['seconds'] / cores:.0%}", f"{per_update(r, 'generator_cpu') * 1e3:.1f}",
            f"{r['others_cpu'] / r['seconds'] / cores:.0%}",
        ))
    page, api, echo_ = found["page"], found["api"], found["echo"]
    summary = [
        (name, f"{found_['server_cpu'] * 1e3:.1f}", f"{found_['generator_cpu'] * 1e3:.1f}")
        for name, found_ in (("page (its route, 12-word A and B)", page),
                             ("api (view of the same link, on the queue)", api),
                             ("echo (one textbox, 12 words, queue)", echo_))
    ] + [
        ("page / echo", f"{found['ratio']:.2f}×", ""),
        ("api / echo", f"{found['api_ratio']:.2f}×", ""),
    ]
    load = f"{found['sessions']} sessions × {found['updates']} updates at once"
    return [
        (
            f"server CPU per update, each round: {load}; server: its child process's share of {cores} cores; "
            "generator: this process's CPU per update; others: the rest of the machine, share of all cores",
            ("round", "server", "answered", "errors", "wall s", "upd/s", "server ms/upd", "server", "generator ms/upd",
             "others"),
            rows,
        ),
        (
            f"server CPU per update, median of {found['rounds']} alternating round(s), ms",
            ("server", "server CPU / update", "generator CPU / update"),
            summary,
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds per server, after one warm-up each")
    parser.add_argument("--sessions", type=int, default=10, help="clients at once, each its own session")
    parser.add_argument("--updates", type=int, default=20, help="sequential updates per client and round")
    parser.add_argument("--quick", action="store_true", help="one measured round per server")
    parser.add_argument("--serve-echo", metavar="OPTIONS", help=argparse.SUPPRESS)  # the echo app's process
    args = parser.parse_args()
    if args.serve_echo is not None:
        serve_echo(json.loads(args.serve_echo))
        return

    from bench.report import table

    found = measure(1 if args.quick else args.rounds, args.sessions, args.updates)
    for title, header, rows in report(found):
        table(title, header, rows)
    for run in found["runs"]:
        for error in run["errors"][:3]:
            print(f"  {run['server']}: {error}")


if __name__ == "__main__":
    main()
