"""Every performance target in one run: a table per measure, then one summary of the targets.

    python -m bench.run [--quick] [--only NAME[,NAME]]

Each measure times ours against a baseline measured side by side in the same run, and prints
both with their ratio; the summary has one row per target (measure, ours, baseline, ratio,
target, met?). The measures are `MEASURES`, each described by its function's docstring
(``--help`` lists them). Whatever the numbers, nothing here asserts a time: "met?" is reported
("—" for a figure without a target), and the exit status is non-zero only when a measure could
not run. The process takes the app's thread settings (one torch thread, one BLAS thread)
before anything is timed; ``--quick`` runs every measure with few repeats (rough numbers).
The measures drive the page through its one route as its script does (bench/pages.py) and the
public API through its functions; rows about what the route replaced became their nearest
equivalent (`server_cpu`, `bursts` and `payload` say which), against the baselines they always
had: the echo app on gradio's queue, the notebook path, plotly.express, a minimal Blocks page.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import json
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.report import kb, ms, percentile, table, times

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' "Loading weights" bar


@dataclass(frozen=True)
class Target:
    """One row of the summary."""

    measure: str
    ours: str
    baseline: str
    ratio: str
    target: str
    met: bool | None  # None: no verdict — a figure reported without a target, or not measured ("—")

    @property
    def verdict(self) -> str:
        if self.met is None:
            return "not measured" if self.ours == "—" else "—"
        return "yes" if self.met else "no"


# 1. update latency



def measured_apart(title: str, command: list[str], timeout: int) -> dict:
    """`python COMMAND` in a process of its own (its figures undisturbed by this one's), its output
    printed, and the JSON its last line holds."""
    import subprocess

    print(f"{title}: python {' '.join(command)}", flush=True)
    done = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=timeout,
                          cwd=Path(__file__).resolve().parents[1])
    print(done.stdout[-3000:], flush=True)
    if done.returncode:
        raise RuntimeError(f"python {' '.join(command)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])

def latency(quick: bool) -> list[Target]:
    """One live update at 16, 128 and 512 tokens: ours (the plane the page's route computes for a
    keystroke, `ui.render.plane`) against the notebook path and the bare compute (bench/update_latency.py).
    Targets: ≥ 8× faster than the notebook at 512 tokens, ≤ 2.5× the bare compute."""
    from bench.update_latency import measure

    repeats = 5 if quick else 30
    results = measure(repeats)
    table(
        f"1. update latency on BERT MiniLM (d 384), median of {repeats} interleaved repeats, ms",
        ("tokens", "ours", "naive", "bare", "naive / ours", "ours / bare", "plot + bar"),
        [
            (
                str(r["tokens"]),
                f"{r['ours_ms']:.2f}",
                f"{r['naive_ms']:.2f}",
                f"{r['bare_ms']:.2f}",
                times(r["naive_ms"] / r["ours_ms"]),
                times(r["ours_ms"] / r["bare_ms"]),
                kb(r["json_bytes"]),
            )
            for r in results
        ],
    )
    targets = []
    for r in results:
        if r["tokens"] == 512:
            speedup = r["naive_ms"] / r["ours_ms"]
            targets.append(
                Target("update 512 tokens vs notebook", f"{r['ours_ms']:.1f} ms", f"{r['naive_ms']:.1f} ms",
                       f"{speedup:.1f}× faster", "≥ 8× faster", speedup >= 8)
            )
    for r in results:
        ratio = r["ours_ms"] / r["bare_ms"]
        targets.append(
            Target(f"update {r['tokens']} tokens vs bare compute", f"{r['ours_ms']:.1f} ms", f"{r['bare_ms']:.1f} ms",
                   times(ratio), "≤ 2.5×", ratio <= 2.5)
        )
    return targets


# 2. server CPU per live update


def server_cpu(quick: bool) -> list[Target]:
    """The app's server CPU per live update as its page sends it (one POST to its route, 10
    sessions × 20 updates at once, 12-word pairs) against a one-textbox echo app's per event
    through gradio's queue under the same load, both in child processes side by side
    (bench/server_cpu.py); the public API's `view` of the same link beside them, for comparison
    only (a `view` opens a tab of its own each call, so it is not the same work).
    Target: ≤ 1.0×."""
    from bench.server_cpu import measure, report

    found = measure(rounds=1 if quick else 3)
    for title, header, rows in report(found):
        table(f"2. {title}", header, rows)
    errors = sum(len(r["errors"]) for r in found["runs"])
    if errors:
        print(f"WARNING: {errors} update(s) failed; the first: {next(e for r in found['runs'] for e in r['errors'])}\n")
    page, echo = found["page"]["server_cpu"], found["echo"]["server_cpu"]
    return [
        Target(f"server CPU per live update, as the page sends it, vs an echo event through the queue "
               f"({found['sessions']} sessions × {found['updates']} at once)",
               ms(page), f"{ms(echo)} (echo)", times(found["ratio"]), "≤ 1.0×", found["ratio"] <= 1.0)
    ]


# 3. browser round trip


def browser(quick: bool) -> list[Target]:
    """Typing a character into sentence A until the plot shows the new token, in Chromium,
    against an echo event in the same page (bench/browser_roundtrip.py). Target: ≤ 1.5× the echo."""
    from bench.browser_roundtrip import CHROMIUM, measure, report

    if CHROMIUM is None:
        print("3. browser round trip: skipped, chromium is not installed (apt-get install chromium)\n")
        return [Target("browser round trip", "—", "—", "—", "≤ 1.5× echo", None)]
    results = measure(characters=4 if quick else 30, warm_up=1 if quick else 3)
    for title, header, rows in report(results):
        table(f"3. {title}", header, rows)
    targets = []
    for r in results:
        if "pace" in r:  # a typist at 8 keys/s: the whole text shown, against the echo's
            pace = r["pace"]
            ratio = pace["plot"] / pace["echo"]
            targets.append(Target("browser: a typist at 8 keys/s, text typed to final plot", f"{pace['plot']:.2f} s",
                                  f"{pace['echo']:.2f} s", times(ratio), "≤ 1.2× echo, final plot = final text",
                                  ratio <= 1.2 and pace["final"]))
            continue
        ratio = r["plot"]["median"] / r["echo"]["median"]
        targets.append(
            Target(f"browser: key to plot, {r['tokens']} tokens", ms(r["plot"]["median"]), ms(r["echo"]["median"]),
                   times(ratio), "≤ 1.5× echo", ratio <= 1.5)
        )
    return targets


# 4. payload


def the_app():
    """The page's entry points this bench calls, in one place: re-point here when the app
    moves (the keystroke's plane itself is drawn through bench/update_latency.py's
    `keystroke_plane`). Returns the Blocks, its launch options and the vocabulary background of
    ``words`` words for a session (``background(words, session)``, the JSON the page's script
    receives once per plane)."""
    import app
    from core.view.state import View
    from ui import render

    def background(words: int, session) -> str:
        return render.background_json(View(background=words, basis="vocabulary"), session.with_basis("vocabulary"))

    return app.demo, app.LAUNCH_OPTIONS, background


_PART_NAMES = {"embed-plot": "plot", "variance-bars": "variance bar"}  # by element id


def measure_payload(sizes: tuple[int, ...] = (16, 128, 512), background: tuple[int, ...] | None = None) -> dict:
    """The bytes the page's route answers a keystroke with (its JSON body, as the page reads it)
    for BERT pairs of ``sizes`` tokens, each part's bytes in it (its value's JSON), the
    notebook's figure JSON for the same pairs, and the vocabulary background's bytes for
    ``background`` words (by default 2,000 and the most the page allows)."""
    from bench.appserver import free_port
    from bench.pages import ROUTE, RoutePage
    from bench.update_latency import keystroke_plane, naive, pair_of
    from core.tables.session import Session
    from core.view.options import LIMITS

    if background is None:
        background = (2_000, LIMITS["background"][1])
    notebook = naive()
    bert = Session.create(source="bert")
    local = keystroke_plane(bert)  # bench/update_latency.py's "ours", in this process
    found = {"updates": [], "background": []}
    demo, launch_options, draw_background = the_app()
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                **launch_options)
    try:
        url = demo.local_url
        with RoutePage(url) as page:
            page.change(source="bert")
            for n in sizes:
                a, b = pair_of(n)
                response = page.http.post(f"{url}{ROUTE}",
                                          json={"key": page.key, "change": {"sentence_a": a, "sentence_b": b}})
                values = response.raise_for_status().json()["values"]
                if "embed-plot" not in values:
                    raise RuntimeError(f"a keystroke's answer has no main plot (embed-plot): {sorted(values)}")
                parts = {_PART_NAMES.get(name, name): len(json.dumps(value, ensure_ascii=False,
                                                                     separators=(",", ":")).encode())
                         for name, value in values.items()}
                # the harness's check that bench/update_latency.py's "ours" makes the plot the route sends
                same = _unrevised(values["embed-plot"]) == _unrevised(local(a, b)[demo.explorer.plot])
                found["updates"].append({"tokens": n, "wire": len(response.content), "parts": parts,
                                         "notebook": notebook(a, b), "same_plot": same})
    finally:
        with contextlib.redirect_stdout(io.StringIO()):  # "Closing server running on port …"
            demo.close()
    for n in background:
        trace = draw_background(n, bert)
        found["background"].append({"words": n, "trace": len(trace.encode()),
                                    "sent": len(json.dumps(trace, ensure_ascii=False, separators=(",", ":")).encode())})
    return found


def _unrevised(figure: str) -> dict:
    """A figure's JSON without its revision (the tab's change count, core.serving.tabs.Change.revision)."""
    found = json.loads(figure)
    found["layout"]["meta"].pop("revision", None)
    return found


def payload(quick: bool) -> list[Target]:
    """The bytes the page's route answers a keystroke with (its JSON answer, all a keystroke's
    outputs in one message), read off the wire from the app launched
    in this process, against the notebook's plotly.express figure JSON; and the vocabulary
    background (2,000 words and the most the page allows), sent once per plane. Target: ≤ 1.2×
    plotly.express at 512 tokens."""
    found = measure_payload()
    rows = []
    for u in found["updates"]:
        p = u["parts"]
        rest = sum(p.values()) - p["plot"] - p.get("variance bar", 0)
        rows.append((str(u["tokens"]), kb(u["wire"]), kb(p["plot"]), kb(p.get("variance bar", 0)), kb(rest),
                     kb(u["notebook"]), times(u["wire"] / u["notebook"]), "yes" if u["same_plot"] else "NO"))
    table(
        "4. payload of one keystroke's answer on BERT MiniLM, bytes on the wire (the route's JSON answer, "
        "uncompressed); the plot carries the token table's columns (the page draws the table from them); "
        "notebook = plotly.express figure JSON",
        ("tokens", "the route sends", "plot", "variance bar", "the rest", "notebook", "sent / notebook",
         "plots = ours?"),
        rows,
    )
    table(
        "4. vocabulary background, BERT MiniLM in its vocabulary plane: sent once per plane (and table), "
        "not with each update",
        ("words", "trace JSON", "as sent (a JSON string)"),
        [(f"{b['words']:,}", kb(b["trace"]), kb(b["sent"])) for b in found["background"]],
    )
    if not all(u["same_plot"] for u in found["updates"]):
        print("WARNING: the route's plots differ from bench/update_latency.py's 'ours': the latency measure is "
              "stale\n")
    last = found["updates"][-1]
    return [
        Target(f"payload per update, {last['tokens']} tokens", kb(last["wire"]), f"{kb(last['notebook'])} (px)",
               times(last["wire"] / last["notebook"]), "≤ 1.2× px", last["wire"] <= 1.2 * last["notebook"]),
        Target(f"plot alone, {last['tokens']} tokens", kb(last["parts"]["plot"]), f"{kb(last['notebook'])} (px)",
               times(last["parts"]["plot"] / last["notebook"]), "—", None),
    ]


# 5. vocabulary basis


def vocabulary(quick: bool) -> list[Target]:
    """The whole-vocabulary plane's first fit and projecting an update into it, against
    scikit-learn's PCA (bench/vocabulary_basis.py). Targets: first fit ≤ 0.5 s, transform ≤ 1 ms."""
    from bench.vocabulary_basis import measure, report

    results = measure(fits=3 if quick else 5, transforms=50 if quick else 500)
    for title, header, rows in report(results):
        table(f"5. {title}", header, rows)
    targets = []
    for r in results:
        fit = r["fit"]
        targets.append(
            Target(f"vocabulary fit, {r['name']}", ms(fit["ours"]), f"{ms(fit['default'])} (PCA)",
                   times(fit["ours"] / fit["default"]), "≤ 0.5 s", fit["ours"] <= 0.5)
        )
    for r in results:
        t = r["transform"]
        targets.append(
            Target(f"vocabulary transform 512 tokens, {r['name']}", f"{t['ours'] * 1e3:.3f} ms",
                   f"{t['sklearn'] * 1e3:.3f} ms (PCA)", times(t["ours"] / t["sklearn"]), "≤ 1 ms", t["ours"] <= 1e-3)
        )
    return targets


# 6. training


def training(quick: bool) -> list[Target]:
    """Steps per second and time to category purity 0.9 on the built-in corpus, against the
    full-table softmax (bench/training_purity.py). Target: ≤ 10 s."""
    from bench.training_purity import SHAPES, TARGET, measure

    layers = (32,) if quick else (32, 2, 16, 64)
    # quick: the default table's baseline over 5 steps, not 20
    shapes = ((SHAPES[0][0], SHAPES[0][1], 5),) if quick else SHAPES
    found = measure(layers, shapes)
    table(
        f"6. training with the default TrainConfig() on the built-in corpus, random WordPiece layers; "
        f"chance purity {found['chance_purity']:.3f}; {found['threads']} torch thread(s); first backward "
        f"{found['first_backward_s']:.1f} s (excluded)",
        ("layer", "purity at start", "steps/s", f"s to {TARGET}", f"steps to {TARGET}", "final purity"),
        [
            (
                f"d {r['d_model']}",
                f"{r['purity_at_start']:.3f}",
                f"{r['steps_per_s']:.0f}",
                "never" if r["seconds_to_target"] is None else f"{r['seconds_to_target']:.2f}",
                "" if r["steps_to_target"] is None else str(r["steps_to_target"]),
                f"{r['final_purity']:.3f}",
            )
            for r in found["layers"]
        ],
    )
    table(
        "6. ms per training step: ours (softmax over the corpus's rows) against the full-table softmax",
        ("token table", "ours", "full softmax", "full / ours"),
        [(f"{s['rows']:,} × {s['d_model']}", f"{s['ours_ms']:.1f}", f"{s['full_ms']:.1f}",
          times(s["full_ms"] / s["ours_ms"])) for s in found["steps"]],
    )
    default, step = found["layers"][0], found["steps"][0]
    if default["seconds_to_target"] is None:
        return [Target(f"training to purity {TARGET}", "never", "—", "—", "≤ 10 s", False)]
    # the baseline: the same number of steps at the full softmax's measured cost per step
    estimate = default["steps_to_target"] * step["full_ms"] / 1e3
    return [
        Target(f"training to purity {TARGET} (d {default['d_model']}, {default['steps_to_target']} steps)",
               ms(default["seconds_to_target"]), f"{ms(estimate)} (full softmax, est.)",
               times(default["seconds_to_target"] / estimate), "≤ 10 s", default["seconds_to_target"] <= 10)
    ]


# 7. cold start


def cold_start(quick: bool) -> list[Target]:
    """`python app.py` to the first HTTP 200, against `import gradio` and a minimal Blocks app;
    and whether importing the app leaves the presets unloaded (bench/cold_start.py). Targets:
    ≤ 1.8× the minimal app, presets loaded lazily."""
    from bench.cold_start import measure, report

    found = measure(repeats=1 if quick else 5)
    for title, header, rows in report(found):
        table(f"7. {title}", header, rows)
    start, minimal = found["median"]["app"], found["median"]["minimal"]
    lazy = found["lazy"]
    return [
        Target("cold start: python app.py to first 200", ms(start), f"{ms(minimal)} (minimal Blocks)",
               times(start / minimal), "≤ 1.8× minimal", start <= 1.8 * minimal),
        Target("presets loaded lazily (import app)", "loaded" if lazy["loaded"] else "not loaded", "—", "—",
               "not loaded", not lazy["loaded"]),
    ]


# 8. memory


def memory(quick: bool) -> list[Target]:
    """Idle server RSS and the cost of each further BERT session, against one copy of the BERT
    tables (bench/sessions_memory.py). No target: reported only."""
    from bench.sessions_memory import measure
    from core.tables.presets import bert_source

    found = measure(sessions=10 if quick else 100, updates=20 if quick else 200)
    copy = sum(t.numel() * t.element_size() for t in bert_source().model.state_dict().values()) / 2**20
    n = found["sessions"]
    each = (found["crowd"] - found["first_bert"]) / max(1, n - 1)
    growth = found["after"] - found["start"]
    table(
        "8. server memory (RSS) of `python app.py`; baseline: one copy of the BERT tables "
        f"({copy:.0f} MiB), which a session that copied them would add",
        ("state", "RSS MiB", "change MiB", "change / one copy"),
        [
            ("idle, one plot drawn", f"{found['idle']:.0f}", "", ""),
            ("first BERT session (loads the tables)", f"{found['first_bert']:.0f}",
             f"{found['first_bert'] - found['idle']:+.0f}", times((found["first_bert"] - found["idle"]) / copy)),
            (f"{n} BERT sessions", f"{found['crowd']:.0f}", f"{found['crowd'] - found['first_bert']:+.0f}", ""),
            ("each further BERT session", "", f"{each:+.2f}", times(each / copy)),
            (f"{found['updates']} more updates in one session", f"{found['after']:.0f}", f"{growth:+.0f}",
             f"{growth / found['start']:+.1%} of RSS"),
        ],
    )
    return []


# 9. lecture


LECTURE_SETUPS = ("echo", "app", "lb1", "lb2")  # the floor, one process, then 1 and 2 workers behind HAProxy
LECTURE_STUDENTS, LECTURE_LIGHT, LECTURE_COURSE, LECTURE_UTILISATION = 100, 10, 500, 0.6


def haproxy_found() -> bool:
    """Whether HAProxy is installed, looked up as deploy/serve.py does, without installing it."""
    import shutil

    return bool(shutil.which("haproxy")) or any(os.access(p, os.X_OK)
                                               for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy"))


def lecture(quick: bool) -> list[Target]:
    """100 students typing at human speed on one process, then on 1 and 2 workers behind HAProxy
    (deploy/serve.py), then 10 students on the last setup (bench/lecture.py); and, from the CPU
    per update, the cores a 500-student course needs for p95 ≤ 1 s. Reported only: p95
    key-to-answer and CPU per update for each setup, and the cores. Without haproxy the
    balanced setups are not measured."""
    from bench import lecture as hall

    ramp, duration = (5, 30) if quick else (10, 60)
    runnable = [s for s in LECTURE_SETUPS if s in ("echo", "app") or haproxy_found()]
    print(f"9. a lecture: {LECTURE_STUDENTS} students typing at human speed, {duration} s measured per setup after a "
          f"{ramp} s ramp, then {LECTURE_LIGHT} students on the last setup (bench/lecture.py)", flush=True)
    print(hall.HEADER, flush=True)
    results, targets, floor = [], [], None
    for setup in LECTURE_SETUPS:
        name = hall.SETUP_NAMES[setup]
        if setup not in runnable:
            print(f"{name:<34} not measured: haproxy is not installed (apt-get install haproxy)", flush=True)
            targets += [Target(f"lecture p95 key → answer, {name}", "—", "—", "—", "reported", None),
                        Target(f"lecture server CPU per update, {name}", "—", "—", "—", "reported", None)]
            continue
        light = LECTURE_LIGHT if setup == runnable[-1] else 0
        try:
            found = hall.measure(setup, name, LECTURE_STUDENTS, ramp, duration, "page", seed=0, light=light)
        except (Exception, SystemExit):  # a setup that cannot start is reported, the others still run
            traceback.print_exc()
            print(f"{name:<34} FAILED (above)", flush=True)
            found = []
        for result in found:
            print(result.row(), flush=True)
            for error in result.tally.errors[:3]:
                print(f"  {error}")
        results += [r for r in found if setup != "echo"]
        for result in found or [None]:
            label = result.name if result else name
            latencies = result.tally.latencies if result else []
            p95 = percentile(latencies, 0.95) if latencies else None
            cpu = ms(result.cpu_per_update) if result and result.tally.updates else "—"
            if setup == "echo":
                floor = p95
                continue
            # 100 students: p95 ≤ 1 s on one process (as on a Space), and the same or better behind HAProxy
            full = result is None or result.students == LECTURE_STUDENTS
            targets += [Target(f"lecture p95 key → answer, {label}", "—" if p95 is None else ms(p95),
                               "—" if floor is None else f"{ms(floor)} (echo app)",
                               "—" if p95 is None or floor is None else times(p95 / floor),
                               "≤ 1 s" if full else "reported", (p95 is not None and p95 <= 1.0) if full else None),
                        Target(f"lecture server CPU per update, {label}", cpu, "—", "—", "reported", None)]
    print("  keys: keystrokes typed in the window; p50/p95: key to the first answer showing it; CPU ms/upd: server "
          "CPU per answered update; server: share of all cores; generator: the load generator's CPU, share of one "
          "core; others: every other process on the machine, share of all cores; msgs/upd: event-stream messages a "
          "student received per answer", flush=True)
    if not results:
        raise RuntimeError("no setup of the lecture could be measured (above)")
    course = hall.capacity(results, LECTURE_COURSE, LECTURE_UTILISATION)
    print(flush=True)
    if course is None:  # no setup answered an update
        targets.append(Target(f"lecture: cores for {LECTURE_COURSE} students, p95 ≤ 1 s", "—", "—", "—", "reported",
                              None))
    else:
        targets.append(Target(f"lecture: cores for {LECTURE_COURSE} students, p95 ≤ 1 s (on paper, "
                              f"{ms(course.cpu)}/update at {course.keys_per_s:.2f} updates/s each)",
                              f"{course.cores:.1f} cores", "—", "—", "reported", None))
    return targets


# 10. a class's bursts: Next, Train


def bursts(quick: bool) -> list[Target]:
    """A class pressing *Next* at once (bench/next_burst.py: as the page sends it, and through
    the API, `view` of the step's link, where the hidden `next_step` event was) against an echo,
    and pressing *Train* at once (bench/train_burst.py) beside a typing student. Targets: Next's
    p95 ≤ 2 s (the page's); no Train refused, the last done within 30 s, others' typing p95 ≤ 1.5 s."""

    students = 40 if quick else 100
    targets = []
    for name, command in (("next", ["-m", "bench.next_burst", "--students", str(students), "--presses", "3"]),
                          ("train", ["-m", "bench.train_burst", "--students", str(students), "--spread", "5"])):
        found = measured_apart(f"10. {name} burst", command, 1800)
        if name == "next":
            targets.append(Target(f"{students} students press Next within 2 s: p95", ms(found["p95"]),
                                  f"{ms(found['echo_p95'])} (echo)", times(found["p95"] / found["echo_p95"]),
                                  "≤ 2 s", found["p95"] <= 2.0))
            targets.append(Target(f"{students} ask the API for the next step (view of its link) within 2 s: p95",
                                  ms(found["api_p95"]), f"{ms(found['echo_p95'])} (echo)",
                                  times(found["api_p95"] / found["echo_p95"]), "reported", None))
        else:
            ok = found["refused"] == 0 and found["last"] <= 30 and found["typing_p95"] <= 1.5
            targets.append(Target(f"{students} press Train within 5 s: refused / last done / others' typing p95",
                                  f"{found['refused']} / {found['last']:.1f} s / {ms(found['typing_p95'])}",
                                  f"typing alone {ms(found['alone_p95'])}", "—",
                                  "0 / ≤ 30 s / ≤ 1.5 s", ok))
    return targets


# 11. a heavy neighbour, and a first visit's weight


NEIGHBOUR = 1.5  # heavy work never slows a neighbour: another visitor's update at most this many times alone


def neighbour(quick: bool) -> list[Target]:
    """Another visitor's update beside one looping every heavy call of the page (refit, export,
    train and the largest random tables, bench/public_space.py `heavy_visitor`) on the same app,
    and beside the same visitor on another app process (the floor: two processes sharing two
    cores), in alternating rounds; the medians of the rounds' p50 ratios. One of the three
    guarantees of the page's one route (measure `answers` has the other two): heavy work never
    slows a neighbour. Target: ≤ 1.5× on the same app, against the same visitor alone."""
    from bench.appserver import launched_app
    from bench.public_space import beside_heavy_neighbour

    ratios: dict[str, list[float]] = {"same": [], "floor": []}
    seconds: dict[str, list[float]] = {"same": [], "floor": [], "alone": []}
    with launched_app() as (url, _), launched_app() as (other, _):
        for _ in range(2 if quick else 3):
            for kind, heavy in (("same", None), ("floor", other)):
                alone, loaded, outcomes = beside_heavy_neighbour(url, 60 if quick else 150, heavy)
                a, b = percentile(alone, 0.5), percentile(loaded, 0.5)
                ratios[kind].append(b / a)
                seconds[kind].append(b)
                seconds["alone"].append(a)
                print(f"11. another visitor's update, p50: {ms(b)} beside a visitor looping refit, export, train and"
                      f" large tables {'on this app' if kind == 'same' else 'on another app process'}; {ms(a)} alone"
                      f" ({b / a:.2f}×). The heavy visitor's calls: {dict(outcomes)}", flush=True)
    same, floor = statistics.median(ratios["same"]), statistics.median(ratios["floor"])
    print(f"11. median ratio: {same:.2f}× on this app, {floor:.2f}× with the heavy visitor on another process\n",
          flush=True)
    return [Target("another visitor's update (p50) beside one looping train/refit/export",
                   ms(statistics.median(seconds["same"])), f"{ms(statistics.median(seconds['alone']))} alone; "
                   f"floor {floor:.2f}× (heavy work on another process)", times(same), f"≤ {NEIGHBOUR:g}×",
                   same <= NEIGHBOUR)]


def first_load(quick: bool) -> list[Target]:
    """A first visit's bytes and requests over the wire (bench/first_load.py), against a
    minimal Gradio page with a plot and a page of one of each of the app's component types.
    Targets: ≤ 1.3× the minimal page in bytes and in requests."""
    from bench.first_load import measure as weigh
    from bench.first_load import report as weight_report

    found = weigh(1 if quick else 3)
    for title, header, rows in weight_report(found):
        table(f"12. {title}", header, rows)
    app, minimal = found["app"], found["minimal"]
    return [Target("first visit: bytes over the wire vs a minimal Gradio page with a plot",
                   f"{app['bytes'] / 1e6:.2f} MB", f"{minimal['bytes'] / 1e6:.2f} MB",
                   times(app["bytes"] / minimal["bytes"]), "≤ 1.3×", app["bytes"] / minimal["bytes"] <= 1.3),
            Target("first visit: requests vs a minimal Gradio page with a plot", f"{app['requests']:.0f}",
                   f"{minimal['requests']:.0f}", times(app["requests"] / minimal["requests"]), "≤ 1.3×",
                   app["requests"] / minimal["requests"] <= 1.3),
            # the floor of gradio's machinery for these controls: a few requests per component type
            Target("first visit: requests vs one of each of the app's component types", f"{app['requests']:.0f}",
                   f"{found['same types']['requests']:.0f}", times(app["requests"] / found["same types"]["requests"]),
                   "—", None)]


# 13. a class following its lecturer


def on_the_app(number: str, report, measure, *args, **kwargs) -> dict:
    """`measure(*args, **kwargs)` of pages on a launched app, its tables printed as measure
    `number`'s, with a warning when page calls failed; a RuntimeError when the app did not start."""
    try:
        found = measure(*args, **kwargs)
    except SystemExit as stopped:  # the app did not start: this measure could not run
        raise RuntimeError(str(stopped)) from None
    print(flush=True)
    for title, header, rows in report(found):
        table(f"{number}. {title}", header, rows)
    if found["errors"]:
        print(f"WARNING: {len(found['errors'])} page call(s) failed; the first: {found['errors'][0]}\n")
    return found


def class_follow(quick: bool) -> list[Target]:
    """A class on one process (bench/class_follow.py): the server's CPU while 100 students'
    pages hold their class streams open and idle, against the same pages open without streams;
    and the lecturer's *Next* reaching the followers (the stream's message, then the follow
    call's answer, the whole view), alone and while 30 of them type, against the streams'
    fan-out alone (the pages only listen). Targets: the idle streams ≤ 10% of one core (the
    total, not the difference); 95% of the followers reached within 1.5 s, alone and beside
    the typists."""
    from bench.class_follow import WITHIN, measure, report

    students, typing = 100, 30
    found = on_the_app("13", report, measure, students, typing, presses=3 if quick else 5,
                       window=8.0 if quick else 20.0)
    idle, base = found["followers_pct"], found["baseline_pct"]
    scenarios = found["scenarios"]
    echo = scenarios["echo"]["p95"]
    targets = [Target(f"class: {students} followers' streams idle, server CPU (window total, % of one core)",
                      f"{idle:.1f}%", f"{base:.1f}% (same pages, no streams)", f"{idle - base:+.1f} pt",
                      "≤ 10% of one core", idle <= 10)]
    for name, label in (("alone", f"{students} followers"),
                        ("typing", f"{students - typing} followers while {typing} type")):
        s = scenarios[name]
        targets.append(Target(f"class: Next reaches {label}, share within {WITHIN:g} s (p95)",
                              f"{s['within']:.0%} (p95 {ms(s['p95'])})", f"{ms(echo)} (stream alone, p95)",
                              times(s["p95"] / echo), f"≥ 95% within {WITHIN:g} s", s["within"] >= 0.95))
    return targets


# 13b. a round of answers in a class


def poll(quick: bool) -> list[Target]:
    """A round of answers on one process (bench/poll.py): 100 students (30 with --quick), each
    following the class, send one word within 5 s; the lecturer's stream and its plane's redraw
    are timed from the last answer's acknowledgement, and a typist outside the class types beside
    the round and alone. Targets: every acknowledged answer counted; the lecturer's plane within
    2 s of the last answer; the typist's p95 reported beside the flood against alone."""
    from bench.poll import WITHIN, measure, report

    students = 30 if quick else 100
    found = on_the_app("13b", report, measure, students, 5.0, 30 if quick else 60)
    plane = found["to_plane"]
    alone, beside = percentile(found["alone"], 0.95), percentile(found["beside"], 0.95)
    return [Target(f"poll: {students} students' answers counted", f"{found['counted']} of {found['acknowledged']}",
                   f"{found['sent']} sent", "—", "every acknowledged answer", found["counted"] >= found["acknowledged"]
                   == found["sent"]),
            Target("poll: last answer to the lecturer's plane", "missed" if plane is None else ms(plane),
                   ms(found["to_stream"]) if found["to_stream"] is not None else "—", "—", f"≤ {WITHIN:g} s",
                   plane is not None and plane <= WITHIN),
            Target("poll: a typist's key-to-answer p95 beside the round", ms(beside), f"{ms(alone)} (alone)",
                   times(beside / alone), "—", None)]


# 13c. a stranger's loop of class starts beside a student typing


def flood(quick: bool) -> list[Target]:
    """One tab posts `class/start` 3,000 times (1,000 with --quick), 20 at a time, while a student
    elsewhere types at 5 keys/s (bench/class_flood.py). Targets: the student's key-to-answer p95
    during the loop within 1.5x of alone; the server's thread count flat."""
    from bench.class_flood import measure, report

    found = on_the_app("13c", report, measure, 1000 if quick else 3000, 20, 2 if quick else 4)
    alone, during = percentile(found["alone"], 0.95), percentile(found["flood"], 0.95)
    threads = found["threads"]
    return [Target("class starts in a loop: a student's key p95 beside it", ms(during), f"{ms(alone)} (alone)",
                   times(during / alone), "≤ 1.5×", during <= 1.5 * alone),
            Target("class starts in a loop: the server's threads", f"{threads[1]}", f"{threads[0]} (before)",
                   "—", "flat", threads[1] <= threads[0] + 2)]


# 14. a class whose store goes away


def outage(quick: bool) -> list[Target]:
    """A class on two workers behind HAProxy whose Redis stops for 30 s (15 with --quick) and
    starts again empty (bench/class_outage.py): 20 students follow, 3 type, the lecturer
    presses Next meanwhile and once Redis is back, then End. Targets: no 5xx on any route, no
    stream cut, the Next reaching every follower and End every page within 10 s of Redis's
    start. Needs haproxy and redis-server."""
    from bench.class_outage import WITHIN, measure, report

    if not haproxy_found():
        print("14. the class outage needs haproxy (apt-get install haproxy): not measured\n", flush=True)
        return [Target("class outage: no 5xx, Next and End within 10 s of Redis's start", "—", "—", "—", "—", None)]
    found = measure(outage=15.0 if quick else 30.0)
    print(flush=True)
    for title, header, rows in report(found):
        table(f"14. {title}", header, rows)
    failures = sum(count for (_, status), count in found["statuses"].items() if status >= 500)
    reached, ended = found.get("reached"), found.get("ended")
    return [Target(f"class outage (Redis away {found['outage']:g} s): answers that were 5xx", str(failures),
                   f"{sum(found['statuses'].values())} answers", "—", "0, and no stream cut",
                   failures == 0 and found["cut"] == 0),
            Target("class outage: the next Next reaches every follower, from Redis's start",
                   "missed" if reached is None else f"{reached:.1f} s", "—", "—", f"≤ {WITHIN:g} s",
                   reached is not None and reached <= WITHIN),
            Target("class outage: End reaches every page, from Redis's start",
                   "missed" if ended is None else f"{ended:.1f} s", "—", "—", f"≤ {WITHIN:g} s",
                   ended is not None and ended <= WITHIN)]


# 15. what a keystroke runs


def keystroke(quick: bool) -> list[Target]:
    """Which of the project's Python files one keystroke runs code in, traced in the launched
    server (bench/keystroke_path.py, in a process of its own: its tracing stays there): all of
    them, and those of the transport (ui/, core/serving, core/process, app.py). Targets: at most
    18 files, at most 4 of them transport."""

    command = ["-m", "bench.keystroke_path", "--keys", "3" if quick else "5"]
    found = measured_apart("15.", command, 900)
    files, transport = found["files"], found["transport"]
    return [Target("files one keystroke runs code in", str(files), "—", "—", "≤ 18", files <= 18),
            Target("of them, transport (ui/, core/serving, core/process, app.py)", str(transport), "—", "—", "≤ 4",
                   transport <= 4)]


# 16. what a page's answers leave on the server


def answers(quick: bool) -> list[Target]:
    """Two guarantees of the page's one route, on one process with the default memory budget
    (bench/answer_memory.py): a tab holds no copy of what it was sent (80 tabs of one address read
    the similarity view of 2,048 positions, then go back to the plane: the server's RSS after
    malloc_trim), and nothing is computed for a reader who left (30 tabs ask for that view on
    sockets that never read, then close: the RSS 8 s after, the views computed, and another
    visitor's keystrokes meanwhile). The third, heavy work never slows a neighbour, is measure
    `neighbour`. Targets: ≤ +256 MiB each; at most the 2 views computing when their readers left."""
    from bench.answer_memory import HEADER, rows

    found = rows(tabs=80, leavers=30)
    table("16. what a page's answers leave on the server (one process, the default memory budget)", HEADER, found)
    return [Target(row[0], row[1], row[2], row[3], row[4], row[5] == "yes") for row in found if row[5] in ("yes", "no")]


MEASURES: dict[str, Callable[[bool], list[Target]]] = {
    "latency": latency,
    "server_cpu": server_cpu,
    "browser": browser,
    "payload": payload,
    "vocabulary": vocabulary,
    "training": training,
    "cold_start": cold_start,
    "memory": memory,
    "lecture": lecture,
    "bursts": bursts,
    "neighbour": neighbour,
    "first_load": first_load,
    "class": class_follow,
    "poll": poll,
    "flood": flood,
    "outage": outage,
    "keystroke": keystroke,
    "answers": answers,
}


def main() -> int:
    measures = "\n".join(f"  {name}: {inspect.cleandoc(fn.__doc__)}".replace("\n", "\n    ")
                         for name, fn in MEASURES.items())
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=f"measures:\n{measures}",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few repeats: a smoke run of about eight minutes")
    parser.add_argument("--only", default="", help=f"comma-separated measures, of: {', '.join(MEASURES)}")
    args = parser.parse_args()
    asked = [name.strip() for name in args.only.split(",") if name.strip()] or list(MEASURES)
    unknown = [name for name in asked if name not in MEASURES]
    if unknown:
        parser.error(f"unknown measure {unknown[0]!r}; the measures are {', '.join(MEASURES)}")
    chosen = [name for name in MEASURES if name in asked]  # always in the order above

    # the app's thread settings (app.py), for every measure alike
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(1)
    print(f"python -m bench.run{' --quick' if args.quick else ''}: {', '.join(chosen)}; {os.cpu_count()} CPUs, "
          f"1 torch thread, 1 BLAS thread\n", flush=True)

    targets: list[Target] = []
    failed, seconds = [], {}
    for name in chosen:
        began = time.perf_counter()
        try:
            targets += MEASURES[name](args.quick)
        except Exception:
            traceback.print_exc()
            print(f"{name}: FAILED (above)\n", flush=True)
            failed.append(name)
            targets.append(Target(name, "—", "—", "—", "—", None))
        seconds[name] = time.perf_counter() - began

    table(
        "summary" + (" (--quick: few repeats, rough numbers)" if args.quick else ""),
        ("measure", "ours", "baseline", "ratio", "target", "met?"),
        [(t.measure, t.ours, t.baseline, t.ratio, t.target, t.verdict) for t in targets],
    )
    print("wall time: " + ", ".join(f"{name} {s:.0f} s" for name, s in seconds.items())
          + f"; total {sum(seconds.values()):.0f} s")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
