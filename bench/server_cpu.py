"""Server CPU per live update of the app (as its page sends it, and through the API) against per event of a
one-textbox echo app, under the same load.

    python -m bench.server_cpu [--rounds 3] [--sessions 10] [--updates 20] [--quick]

A class costs the server what each keystroke costs it, and a gradio event has a floor no app
can go below: the queue, the event stream, the JSON of the answer. This puts the app next to
that floor: the app driven as its page drives it (each update straight to the tab,
ui/direct.py) and through the API's `/embed`, beside a Blocks app that echoes one textbox into
another (`serve_echo`), each server in its own child process so its CPU time is its own
(`both_servers`). Rounds of --sessions clients making --updates calls each (`drive`) alternate
between the servers (`measure`). Reported: the medians of the measured rounds' CPU per update
and their ratio, with the load generator's own CPU per update and what the rest of the machine
used in the window, so a reader can see that the generator is light and how noisy it was.
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

import httpx
import psutil

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

EMBED_PARAMETERS = ["sentence_a", "sentence_b"]  # what this measure sends /embed, checked against the app
ECHO_OPTIONS = ("show_error", "run_history", "max_file_size")  # the app's launch options the echo copies
THINGS = (
    "apples", "boats", "clouds", "ducks", "engines", "feathers", "grapes", "horses", "kettles", "lamps",
    "maps", "nails", "oranges", "pencils", "rabbits", "stones", "tables", "wheels", "buckets", "ladders",
)
CALL_TIMEOUT = 300  # seconds one call may take before the round counts it as an error


# the echo app: run in its own process by `--serve-echo`


def echo(text: str) -> str:
    return text


def serve_echo(options: dict) -> None:
    """The baseline server: one textbox echoed into another, queued as the app's live events are.
    Port and address come from GRADIO_SERVER_PORT / GRADIO_SERVER_NAME, as for `python app.py`;
    gradio's own settings that the app makes (ui/page.py GRADIO_SETTINGS: its event log summarised
    once per thousand events, not after each) are the echo's too, so the ratio is the app's work."""
    import gradio as gr

    from ui.page import GRADIO_SETTINGS  # sets them, before the queue below is made

    assert all(os.environ.get(name) == value for name, value in GRADIO_SETTINGS.items())

    with gr.Blocks(title="echo") as demo:
        text, echoed = gr.Textbox(label="text"), gr.Textbox(label="echoed")
        # as ui/plane.py wires /embed: latest input wins, one concurrency group, no progress overlay
        text.change(echo, text, echoed, api_name="echo", trigger_mode="always_last", concurrency_id="live",
                    show_progress="hidden")
    demo.queue(default_concurrency_limit=2, max_size=None)  # as ui/page.py's build_demo
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


# the two servers


@dataclass(frozen=True)
class Served:
    """One server under test: where it is, the event this measure calls, and how its data is made."""

    name: str  # "page", "app" or "echo"
    url: str
    process: psutil.Process
    api_name: str
    fn_index: int
    via: str = "http"  # bench/load.py SESSIONS: how a client talks to it

    def data(self, session: int, update: int, run: int, stride: int) -> list:
        a, b = pair(session, update, run, stride)
        return [a] if self.name == "echo" else [a, b]


def embed_index(url: str) -> tuple[int, dict]:
    """/embed's fn_index, checked to take exactly the sentences this measure sends; and the app's config."""
    from bench.lecture import Endpoint

    config = httpx.get(f"{url}config", timeout=30).raise_for_status().json()
    endpoint = Endpoint.discover(url)
    if endpoint.parameters != EMBED_PARAMETERS or len(endpoint.state_slots) != len(EMBED_PARAMETERS):
        raise RuntimeError(f"/embed takes {endpoint.parameters} ({len(endpoint.state_slots)} inputs); this measure "
                           f"sends {EMBED_PARAMETERS}: update bench/server_cpu.py to the page's")
    return endpoint.fn_index, config


@contextmanager
def both_servers() -> Iterator[tuple[Served, Served, Served]]:
    """The app (as its page drives it, and through the API) and the echo app, each server in its
    own child process, alive side by side.

    - page: `python app.py` (bench/appserver.py) driven as its page drives it (bench/load.py
      `PageSession`): the page's opening once, then each update sent straight to the tab
      (ui/direct.py), with a 12-word sentence A and a 12-word sentence B, on the default tables;
    - app: the same process driven through the API's `/embed` on gradio's queue;
    - echo: `serve_echo`, driven with a 12-word text. It has the app's queue
      (`default_concurrency_limit=2`, unbounded), its event options (`trigger_mode="always_last"`,
      one concurrency group, no progress), the gradio settings the app makes (ui/page.py
      GRADIO_SETTINGS) and the launch options the app's config reports (`show_error`,
      `run_history`, `max_file_size`); the theme, stylesheet and script only shape the page,
      which nobody loads here.
    """
    from bench.appserver import launched, launched_app
    from bench.load import endpoints_of

    with ExitStack() as stack:
        url, process = stack.enter_context(launched_app())
        fn_index, config = embed_index(url)
        app = Served("app", url, process, "embed", fn_index)
        page = Served("page", url, process, "embed", fn_index, via="page")
        options = json.dumps({key: config[key] for key in ECHO_OPTIONS if key in config})
        command = [sys.executable, "-m", "bench.server_cpu", "--serve-echo", options]
        url, process = stack.enter_context(launched(command, "the echo app"))
        echo_app = Served("echo", url, process, "echo", endpoints_of(url)["echo"])
        yield page, app, echo_app


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

    Each client has its own session_hash and speaks the page's protocol (bench/load.py's
    `HttpSession`: queue/join, then the session's event stream). Every text differs from every
    other (session, update and round each change a word), so nothing is answered from a cache.
    Each client first makes one untimed call (the app creates the session's state on it); then
    all start together and the window runs until the last answer. Server CPU is the child's
    user + system time over the window, divided by the updates answered in it.
    """
    from bench.load import SESSIONS

    clients = [SESSIONS[server.via](server.url, {server.api_name: server.fn_index}, CALL_TIMEOUT)
               for _ in range(sessions)]
    start = threading.Barrier(sessions + 1, timeout=CALL_TIMEOUT + 60)
    lock, answered, errors = threading.Lock(), [0], []

    def client(index: int) -> None:
        session = clients[index]
        try:
            # untimed: opens the session (the app creates its state here), with a text of its own
            session.predict(*server.data(index, updates, run, updates + 1), api_name=server.api_name)
        except Exception as error:
            with lock:
                errors.append(f"session {index} opening: {error!r}"[:200])
        finally:
            start.wait()
        for update in range(updates):
            try:
                session.predict(*server.data(index, update, run, updates + 1), api_name=server.api_name)
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
    for name in ("page", "app", "echo"):
        measured = [r for r in runs if r["server"] == name and not r["warm_up"]]
        found[name] = {key: statistics.median(per_update(r, key) for r in measured)
                       for key in ("server_cpu", "generator_cpu")}
    found["ratio"] = found["page"]["server_cpu"] / found["echo"]["server_cpu"]
    found["api_ratio"] = found["app"]["server_cpu"] / found["echo"]["server_cpu"]
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
    page, app, echo_ = found["page"], found["app"], found["echo"]
    summary = [
        (name, f"{found_['server_cpu'] * 1e3:.1f}", f"{found_['generator_cpu'] * 1e3:.1f}")
        for name, found_ in (("page (direct path, 12-word A and B)", page), ("app (API /embed on the queue)", app),
                             ("echo (one textbox, 12 words, queue)", echo_))
    ] + [
        ("page / echo", f"{found['ratio']:.2f}×", ""),
        ("app / echo", f"{found['api_ratio']:.2f}×", ""),
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
