"""Cold start: `python app.py` to its first page, against gradio's own start, in one run.

    python -m bench.cold_start [--repeats 5]

A Space that wakes up, or a lecturer who starts the app before class, waits for this. Each of
three child processes is started fresh (`start`) and timed from ``Popen`` until: app, ``python
app.py`` answers HTTP 200 on ``/``; minimal, a minimal ``gr.Blocks`` app (one textbox) answers
200 on ``/``, the least any gradio app takes to come up on this machine and the baseline of the
ratio; import, ``python -c "import gradio"`` exits, the share of that which is only importing.
The three alternate (import, minimal, app, import, …) and the medians are reported, with the
resident memory (RSS) of the two servers at their first 200. Separately, a fresh ``python -c
"import app"`` reports whether importing the app loaded the BERT or GloVe presets (it must not:
they load on first use) and how long the import took (`lazy_presets`).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from bench.appserver import free_port, mib, stop

ROOT = Path(__file__).resolve().parents[1]

MINIMAL = """
import gradio as gr
with gr.Blocks() as demo:
    gr.Textbox()
demo.launch()
"""
# run in a fresh interpreter: what importing the app loads, and what it leaves for later
LAZY = """
import json, sys, time
start = time.perf_counter()
import app
seconds = time.perf_counter() - start
import core.tables.presets as presets
print(json.dumps({
    "import_s": seconds,
    "bert": presets._bert_source.cache_info().currsize,
    "glove": presets._glove_source.cache_info().currsize,
    "transformers": "transformers" in sys.modules,
    "sklearn": "sklearn" in sys.modules,
}))
"""
COMMANDS = {
    "import": [sys.executable, "-c", "import gradio"],
    "minimal": [sys.executable, "-c", MINIMAL],
    "app": [sys.executable, "app.py"],
}
TIMEOUT = 180  # seconds a start may take before the run gives up on it
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy


def environment(port: int) -> dict[str, str]:
    return {
        **os.environ,
        "GRADIO_SERVER_NAME": "127.0.0.1",
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "HF_HUB_OFFLINE": "1",
    }


def answers(url: str) -> bool:
    try:
        with DIRECT.open(url, timeout=5) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def start(name: str) -> tuple[float, float | None]:
    """Seconds from Popen to the end of ``name`` (first 200 on / for a server, exit for
    ``import``), and a server's RSS in MiB at that moment.

    Fresh each time: cwd the repository root, a free loopback port in GRADIO_SERVER_PORT,
    GRADIO_ANALYTICS_ENABLED=False; a server is polled with urllib every 20 ms."""
    port = free_port()
    began = time.perf_counter()
    child = subprocess.Popen(COMMANDS[name], cwd=ROOT, env=environment(port), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        if name == "import":
            if child.wait(timeout=TIMEOUT) != 0:
                raise RuntimeError(f"`import gradio` exited with code {child.returncode}")
            return time.perf_counter() - began, None
        url = f"http://127.0.0.1:{port}/"
        while not answers(url):
            if child.poll() is not None:
                raise RuntimeError(f"{name} exited with code {child.returncode} before answering")
            if time.perf_counter() - began > TIMEOUT:
                raise RuntimeError(f"{name} did not answer within {TIMEOUT} s")
            time.sleep(0.02)
        return time.perf_counter() - began, mib(psutil.Process(child.pid))
    finally:
        stop(child)


def lazy_presets() -> dict:
    """What a fresh ``import app`` loads: its seconds and whether the presets were loaded."""
    done = subprocess.run([sys.executable, "-c", LAZY], cwd=ROOT, env=environment(free_port()), capture_output=True,
                          text=True, timeout=TIMEOUT, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    found["loaded"] = bool(found["bert"] or found["glove"])
    return found


def measure(repeats: int = 5) -> dict:
    seconds: dict[str, list[float]] = {name: [] for name in COMMANDS}
    rss: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(repeats):
        for name in COMMANDS:  # interleaved, so a busy moment hits all three alike
            took, memory = start(name)
            seconds[name].append(took)
            if memory is not None:
                rss[name].append(memory)
    return {
        "repeats": repeats,
        "seconds": seconds,
        "median": {name: statistics.median(t) for name, t in seconds.items()},
        "rss": {name: statistics.median(r) for name, r in rss.items() if r},
        "lazy": lazy_presets(),
    }


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    median, rss = found["median"], found["rss"]
    names = {"import": "python -c 'import gradio' (exit)", "minimal": "minimal gr.Blocks app (first 200)",
             "app": "python app.py (first 200)"}
    rows = [
        (
            names[name],
            f"{median[name]:.2f}",
            f"{min(found['seconds'][name]):.2f}–{max(found['seconds'][name]):.2f}",
            f"{median[name] / median['minimal']:.2f}×",
            f"{rss[name]:.0f}" if name in rss else "",
        )
        for name in ("import", "minimal", "app")
    ]
    lazy = found["lazy"]
    return [
        (
            f"cold start, fresh processes, median of {found['repeats']} (interleaved); ratio = / minimal app",
            ("start", "seconds", "range", "ratio", "RSS MiB"),
            rows,
        ),
        (
            "what a fresh `import app` loads",
            ("import app", "BERT preset loaded", "GloVe preset loaded", "transformers imported",
             "scikit-learn imported"),
            [(f"{lazy['import_s']:.2f} s", *("yes" if lazy[key] else "no"
                                             for key in ("bert", "glove", "transformers", "sklearn")))],
        ),
    ]


def main() -> None:
    from bench.report import run_repeated

    run_repeated(__doc__, measure, report, 5)


if __name__ == "__main__":
    main()
