"""Which of the project's Python files one keystroke runs code in, traced in the launched server.

    python -m bench.keystroke_path [--keys 5]

The app is launched in this process with a profile function on every thread the server starts
(`threading.setprofile`, set before the server starts its threads, and `sys.setprofile` on this
one), recording the file of every Python function called while recording is on. A page is
opened and warmed with a few keys; then each of `--keys` keystrokes is sent as the page sends it,
and the files whose code ran for any of them are printed, the transport's (`ui/`, `core/serving`,
`core/process`, `app.py`) apart from the rest; the last line says both counts as JSON (for
bench/run.py, measure `keystroke`, which runs this in a process of its own: the tracing stays
here). Targets: at most 18 files, at most 4 transport.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
TRANSPORT = ("ui/", "core/serving/", "core/process/", "app.py")

recording = False
seen: set[str] = set()
functions: set[tuple[str, str]] = set()


def profile(frame, event, arg):
    if recording and event == "call":
        seen.add(frame.f_code.co_filename)
        functions.add((frame.f_code.co_filename, frame.f_code.co_name))


def project_files(paths: set[str]) -> list[str]:
    found = set()
    for path in paths:
        try:
            relative = Path(path).resolve().relative_to(ROOT)
        except ValueError:
            continue
        if relative.parts[0] in ("core", "ui") or relative.name == "app.py":
            found.add(str(relative))
    return sorted(found)


def main() -> None:
    global recording
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5)
    parser.add_argument("--functions", action="store_true", help="name the functions that ran in each file")
    keys = parser.parse_args().keys
    os.environ.setdefault("EXPLORER_NEW_TABS", "100000")
    sys.path.insert(0, str(ROOT))
    threading.setprofile(profile)
    sys.setprofile(profile)
    import app
    from bench.appserver import free_port

    app.demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                    **app.LAUNCH_OPTIONS)
    try:
        live = f"{app.demo.local_url}explorer/live"
        opened = httpx.post(live, json={"open": {"query": ""}}, timeout=60).json()
        key = json.loads(opened["values"]["address"])["key"]

        def send(text: str) -> None:  # as the page sends a key: its raw JSON, read by nobody here
            httpx.post(live, json={"key": key, "change": {"sentence_a": text}}, timeout=60).read()

        text = "The cat sat on the mat"
        for character in " and the dog":  # warm: the quick path is taken once a tab's calls are quick
            text += character
            send(text)
        recording = True
        for character in (" and it ran home" * 4)[:keys]:
            text += character
            send(text)
        recording = False
    finally:
        app.demo.close()
    files = project_files(seen)
    transport = [path for path in files if path.startswith(TRANSPORT)]
    print(f"one keystroke ran code in {len(files)} of the project's Python files, {len(transport)} of them transport")
    for path in files:
        print(("  transport  " if path in transport else "             ") + path)
        if "--functions" in sys.argv:
            names = sorted(name for file, name in functions if file.endswith(path))
            print("               " + ", ".join(names))
    print(json.dumps({"files": len(files), "transport": len(transport)}), flush=True)  # the last line


if __name__ == "__main__":
    main()
