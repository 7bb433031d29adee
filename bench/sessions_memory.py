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
import sys
from pathlib import Path

from gradio_client import Client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.appserver import launched_app, mib  # noqa: E402

GROUPS = ["token", "position", "segment", "sum", "output"]


def measure(sessions: int = 100, updates: int = 200) -> dict:
    """RSS in MiB of a launched app: idle, after the first and after all ``sessions`` BERT
    sessions, and before and after ``updates`` more updates in one session."""
    with launched_app() as (url, process):
        first = Client(url, verbose=False)
        first.predict("The cat sat.", "It purred.", GROUPS, True, False, api_name="/embed")
        idle = mib(process)

        first_bert = idle
        for i in range(sessions):
            client = Client(url, verbose=False)
            client.predict("bert", api_name="/source")
            client.predict(f"student {i} types a sentence", "and another one", GROUPS, True, False, api_name="/embed")
            if i == 0:  # the BERT tables are loaded now, once for all sessions
                first_bert = mib(process)
        crowd = mib(process)

        start = mib(process)
        for i in range(updates):
            first.predict(f"update number {i} of the same session", "", GROUPS, True, False, api_name="/embed")
        after = mib(process)
    return {
        "idle": idle, "first_bert": first_bert, "crowd": crowd, "start": start, "after": after,
        "sessions": sessions, "updates": updates,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--updates", type=int, default=200)
    args = parser.parse_args()

    found = measure(args.sessions, args.updates)
    idle, crowd, start, after = found["idle"], found["crowd"], found["start"], found["after"]
    print(f"{'state':<44} {'RSS MiB':>8} {'change':>9}")
    print(f"{'idle server, one plot drawn':<44} {idle:>8.0f}")
    print(f"{f'{args.sessions} sessions on the BERT preset':<44} {crowd:>8.0f} {crowd - idle:>+8.0f}")
    print(
        f"{f'{args.updates} more updates in one session':<44} {after:>8.0f} {after - start:>+8.0f}"
        f"  ({(after - start) / start:+.1%})"
    )


if __name__ == "__main__":
    main()
