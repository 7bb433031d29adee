"""Server memory as a class arrives: idle, then N sessions on the BERT preset, then updates.

    python bench/sessions_memory.py [--sessions 100] [--updates 200]

Launches `app.py` in a child process on a free loopback port and reads its resident memory
(RSS) with psutil:

1. idle, after the first page load;
2. after N separate clients each switch to the BERT preset and draw one plot — the BERT
   tables are shared, so this should cost little more than one copy;
3. after one more client makes M live updates — growth here would be a leak.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
from gradio_client import Client

ROOT = Path(__file__).resolve().parents[1]
GROUPS = ["token", "position", "segment", "sum", "output"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mib(process: psutil.Process) -> float:
    return process.memory_info().rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--updates", type=int, default=200)
    args = parser.parse_args()

    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    server = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(120):
            try:
                first = Client(url, verbose=False)
                break
            except Exception:
                time.sleep(0.5)
        else:
            raise SystemExit("the app did not start")
        process = psutil.Process(server.pid)
        first.predict("The cat sat.", "It purred.", GROUPS, True, False, api_name="/embed")
        idle = mib(process)

        for i in range(args.sessions):
            client = Client(url, verbose=False)
            client.predict("bert", api_name="/source")
            client.predict(f"student {i} types a sentence", "and another one", GROUPS, True, False, api_name="/embed")
        crowd = mib(process)

        start = mib(process)
        for i in range(args.updates):
            first.predict(f"update number {i} of the same session", "", GROUPS, True, False, api_name="/embed")
        after = mib(process)
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(f"{'state':<44} {'RSS MiB':>8} {'change':>9}")
    print(f"{'idle server, one plot drawn':<44} {idle:>8.0f}")
    print(f"{f'{args.sessions} sessions on the BERT preset':<44} {crowd:>8.0f} {crowd - idle:>+8.0f}")
    print(f"{f'{args.updates} more updates in one session':<44} {after:>8.0f} {after - start:>+8.0f}"
          f"  ({(after - start) / start:+.1%})")


if __name__ == "__main__":
    main()
