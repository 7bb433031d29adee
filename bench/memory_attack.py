"""What strangers can make a public Space hold: random tables, uploads, trainings, tabs, unread answers.

    python -m bench.memory_attack [--budget-mib N] [--only random|uploads|training|tabs|answers]

Launches `app.py` in a child process with the memory budget for visitors' own tables set to
`--budget-mib` (`EXPLORER_TABLE_MEMORY_MIB`; the app's default is 4,096) and plays the attacks
of a public Space against it, through the page's route and raw HTTP calls, as a stranger would
(each tab a page over the route, bench/pages.py `RoutePage`, its address forwarded as a proxy
would): many distinct largest random layers (`random_table_rows`), uploads near the cap
(`upload_rows`), trainings of uploads at once (`training_rows`), thousands of new tabs from one
address (`eviction_rows`) and answers nobody reads (`unread_answer_rows`). Memory is the
resident memory of the server *and its children* (the heavy-work process), sampled every 20 ms
(`Peak`); the baseline is the warm server (`warmed`). Each figure is printed beside its target;
nothing is asserted. `bench/public_space.py` reports the same rows beside its others;
bench/answer_memory.py measures what answers leave with the default budget.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import socket
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from bench.appserver import launched_app, tree_mib
from bench.pages import ROUTE, RoutePage, opening, query_of, read
from bench.report import table

# the Tables panel's settings but the seed: a 127.2 MiB layer
LARGEST = {"tokenizer": "wordpiece", "vocab_size": 1000, "d_model": 1024, "maxlen": 2048, "n_segments": 8}
LAYER_MIB = 127.2
STUDENT = "198.51.100.20"  # documentation addresses, forwarded as a proxy would (uvicorn trusts loopback's)
STRANGER = "203.0.113.7"
NON_READER = "203.0.113.9"  # another stranger's address: the pages that never read their answers
UPLOAD_ROWS, UPLOAD_WIDTH = 48_000, 1_024  # 188 MiB of float32, under the 200 MB file cap and 60 M numbers


def visitor(url: str, address: str) -> RoutePage:
    """A new page from `address` (forwarded as a proxy would: uvicorn trusts loopback's)."""
    return RoutePage(url, headers={"X-Forwarded-For": address}, timeout=300)


def warmed(url: str, process) -> float:
    """The server's RSS once it has served what every visitor's first visit loads (WordPiece,
    the plane's solvers, a small random layer): what strangers' tables are counted above."""
    with visitor(url, "192.0.2.254") as warm:
        warm.change(seed=1)
        warm.change(sentence_a="the first visit loads", sentence_b="what every visit needs")
        warm.train(20, "builtin")  # the heavy-work process has trained once
    time.sleep(2)
    return tree_mib(process)


class Peak:
    """The resident memory of the process and its children, sampled every 20 ms while the block
    runs, above `base`."""

    def __init__(self, process, base: float) -> None:
        self.process, self.before, self.peak = process, base, tree_mib(process)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, tree_mib(self.process))

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.after = tree_mib(self.process)


def noticed(answer: dict) -> str:
    """What an answer says: its notice, or the sentence refusing the call as a whole."""
    notice = answer.get("notice")
    return answer.get("error") or (notice if isinstance(notice, str) else "")


def random_table_rows(url: str, process, base: float, budget_mib: int, tabs: int = 60) -> list[tuple[str, ...]]:
    """`tabs` tabs, each asking `/settings` for a distinct largest random layer (127.2 MiB each,
    7.5 GiB in all for 60): the peak above the warm server (target ≤ the budget), and how many
    were refused."""
    refused = 0
    with Peak(process, base) as rss:
        for i in range(tabs):
            with visitor(url, f"192.0.2.{i % 250}") as tab:
                refused += "has no room" in noticed(tab.send(**LARGEST, seed=90_000 + i))
    return _rss_rows(f"{tabs} tabs each asking for a distinct largest random layer "
                     f"({tabs * LAYER_MIB / 1024:.1f} GiB unbounded)", rss, budget_mib, refused, tabs)


def upload_rows(url: str, process, base: float, budget_mib: int, tabs: int = 30) -> list[tuple[str, ...]]:
    """`tabs` tabs, each uploading a distinct file near the upload cap (a 188 MiB `.npy`): the
    peak above the warm server (target ≤ the budget), and how many were refused."""
    import numpy as np

    refused = 0
    table = np.random.default_rng(0).standard_normal((UPLOAD_ROWS, UPLOAD_WIDTH), dtype=np.float32)
    size = table.nbytes / 2**20
    with tempfile.TemporaryDirectory() as folder, Peak(process, base) as rss:
        path = Path(folder) / "near-the-cap.npy"
        for i in range(tabs):
            table[0, 0] = i  # a distinct file each time: nothing to share by content
            np.save(path, table)
            with visitor(url, f"192.0.2.{i}") as tab:
                answer = tab.upload(path)
            refused += "error" in answer or "has no room" in noticed(answer)  # at the door, or by the budget
    return _rss_rows(f"{tabs} tabs each uploading a distinct {size:.0f} MiB file "
                     f"({tabs * size / 1024:.1f} GiB unbounded)", rss, budget_mib, refused, tabs)


def _rss_rows(what: str, rss: Peak, budget_mib: int, refused: int, tabs: int) -> list[tuple[str, ...]]:
    peak, after = rss.peak - rss.before, rss.after - rss.before
    return [
        (f"{what}: peak RSS above the warm server", f"{peak:+,.0f} MiB", f"budget {budget_mib:,} MiB",
         f"{peak / budget_mib:.2f}×", "≤ 1× the budget", "yes" if peak <= budget_mib else "no"),
        ("  RSS above the warm server after; refused with a sentence", f"{after:+,.0f} MiB; {refused} of {tabs}",
         "", "", "", ""),
    ]


LONG = "word " * 2_000  # 10,000 characters (the most a sentence may have), 2,000 tokens
VIEW_2048 = query_of(maxlen=2048, a=LONG)  # a link's query: 2,048 positions, about 2,000 tokens


def unread(url: str, key: str, change: dict, address: str) -> socket.socket:
    """A call of the page's route sent on a socket that never reads its answer (its receive buffer
    kept small), from `address` as a proxy forwards it; the socket is the caller's to close."""
    where = urlsplit(url)
    body = json.dumps({"key": key, "change": change}).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a reader that takes nothing
    sock.connect((where.hostname, where.port))
    sock.sendall(b"POST %s HTTP/1.1\r\nHost: %s\r\nX-Forwarded-For: %s\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (f"{where.path}{ROUTE}".encode(), where.netloc.encode(),
                                                     address.encode(), len(body), body))
    return sock


def unread_answer_rows(url: str, process, tabs: int = 40, hold: float = 50.0,
                       settle: float = 10.0) -> list[tuple[str, ...]]:
    """One address's `tabs` tabs, each on a 2,048-token view, asking the page's route for the
    similarity view (the largest answer a call can have) on sockets that never read; the
    sockets close after `hold` seconds. The server's and its children's RSS above where it was
    before, at the peak (target ≤ 256 MiB) and `settle` seconds after the sockets closed
    (target ≤ 64 MiB)."""
    keys, notes = [], ""
    for _ in range(tabs + 1):  # the last one reads its answer, for its size
        with RoutePage(url, VIEW_2048, headers={"X-Forwarded-For": NON_READER}) as page:
            keys.append(page.key)
            notes = notes or page.opened.notice
    change = {"shown": "similarity"}
    with httpx.Client(timeout=300, headers={"X-Forwarded-For": NON_READER}) as http:
        answer = http.post(f"{url}{ROUTE}", json={"key": keys.pop(), "change": change})
    size = len(answer.content) / 2**20
    if size < 1:  # not the view of 2,048 tokens (the budget full, say): nothing large to leave unread
        told = notes or read(answer).get("error") or refusal_of(str((read(answer).get("values") or {}).get("notice")))
        return [(f"{tabs} tabs of one address asking for the similarity view of 2,048 tokens and never reading it",
                 "not measured", f"the view was not had: {told[:160]}".replace("|", "/"), "", "≤ 256 MiB", "")]
    time.sleep(2)
    base = tree_mib(process)
    with Peak(process, base) as rss:
        sockets = [unread(url, key, change, NON_READER) for key in keys]
        time.sleep(hold)
        held = tree_mib(process) - base
        for each in sockets:
            each.close()
        time.sleep(settle)
    peak, after = rss.peak - base, rss.after - base
    return [
        (f"{tabs} tabs of one address asking for the similarity view of 2,048 tokens ({size:.1f} MiB an answer) "
         f"and never reading it, {hold:.0f} s: peak RSS (server and children) above before", f"{peak:+,.0f} MiB",
         f"{tabs * size:,.0f} MiB of answers", f"{peak / 256:.2f}× target", "≤ 256 MiB",
         "yes" if peak <= 256 else "no"),
        (f"  the same when the sockets close; {settle:.0f} s after", f"{held:+,.0f} MiB; {after:+,.0f} MiB", "", "",
         "after ≤ 64 MiB", "yes" if after <= 64 else "no"),
    ]


def refusal_of(notice: str) -> str:
    """A refusal's first words, as a page shows them."""
    return html.unescape(re.sub(r"<[^>]+>|⚠️", "", notice)).strip()[:100]


def training_rows(url: str, process, base: float, budget_mib: int, tabs: int = 8) -> list[tuple[str, ...]]:
    """`tabs` tabs from distinct addresses, each uploading a distinct file near the cap; then every
    tab whose upload was accepted presses Train at once. Peak RSS of the server and its children
    above the warm server (target ≤ 1.15× the budget), and what was refused, with its sentence."""
    import numpy as np

    table = np.random.default_rng(1).standard_normal((UPLOAD_ROWS, UPLOAD_WIDTH), dtype=np.float32)
    size = table.nbytes / 2**20
    accepted, refusals, pages = [], Counter(), []
    try:
        with tempfile.TemporaryDirectory() as folder, Peak(process, base) as rss:
            path = Path(folder) / "near-the-cap.npy"
            for i in range(tabs):
                table[0, 0] = 1000 + i  # a distinct file each time: nothing to share by content
                np.save(path, table)
                tab = visitor(url, f"192.0.2.{100 + i}")
                pages.append(tab)
                answer = tab.upload(path)
                notice = noticed(answer)
                # refused as a whole (at the door, by the route), or by the budget's sentence (the notes of
                # an accepted file say nothing of memory)
                if "error" in answer or "memory" in notice:
                    refusals[refusal_of(notice)] += 1
                else:
                    accepted.append(tab)
            with ThreadPoolExecutor(len(accepted) or 1) as pool:
                trained = list(pool.map(lambda tab: tab.train(100, "builtin")[0], accepted))
    finally:
        for tab in pages:
            tab.close()
    for answer in trained:
        done = str(answer.get("train-summary", "")).startswith("Trained ")
        refusals["trained" if done else "Train: " + refusal_of(noticed(answer))] += 1
    peak, after = rss.peak - rss.before, rss.after - rss.before
    said = "; ".join(f"{n} × {what!r}" for what, n in refusals.items())
    return [
        (f"{tabs} distinct {size:.0f} MiB uploads, each accepted one trained at once: peak RSS (server and children) "
         "above the warm server", f"{peak:+,.0f} MiB", f"budget {budget_mib:,} MiB", f"{peak / budget_mib:.2f}×",
         "≤ 1.15× the budget", "yes" if peak <= 1.15 * budget_mib else "no"),
        (f"  after; {len(accepted)} accepted; what each was told", f"{after:+,.0f} MiB", said.replace("|", "/"),
         "", "", ""),
    ]


def eviction_rows(url: str, tabs: int = 5_050) -> list[tuple[str, ...]]:
    """An idle student's tab, then a stranger's thousands of new tabs from one address (each a
    page opening on the page's route, as a browser tab opens): how many the server refused, and
    whether the student's view was kept."""
    student = visitor(url, STUDENT)
    student.change(sentence_a="my own view", sentence_b="kept while strangers come")
    refused = Counter()
    lock = threading.Lock()
    local, clients = threading.local(), []

    def open_tab(_: int) -> None:
        if not hasattr(local, "http"):
            local.http = httpx.Client(timeout=60, headers={"X-Forwarded-For": STRANGER})
            with lock:
                clients.append(local.http)
        answer = read(local.http.post(f"{url}{ROUTE}", json=opening()))
        with lock:
            refused["refused" if "Too many new pages" in answer.get("error", "") else "opened"] += 1

    start = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(open_tab, range(tabs)))
    seconds = time.perf_counter() - start
    for http in clients:
        http.close()
    answer = student.post({"key": student.key, "change": {"sentence_a": "my own view", "sentence_b": "still here?"}})
    student.close()
    kept = "values" in answer
    return [(f"a student's idle tab after one address opened {tabs:,} new tabs in {seconds:.0f} s",
             "kept" if kept else "pushed out", f"{refused['refused']:,} refused, {refused['opened']:,} opened", "",
             "kept", "yes" if kept else "no")]


HEADER = ("measure", "ours", "baseline", "ratio", "target", "met?")


def rows(url: str, process, budget_mib: int, only: str | None = None) -> list[tuple[str, ...]]:
    """Every attack's rows, one after another on one server (what an earlier one left is held
    while the next runs, as on a Space): RSS is counted above the warm server."""
    base = warmed(url, process)
    found = []
    if only in (None, "random"):
        found += random_table_rows(url, process, base, budget_mib)
    if only in (None, "uploads"):
        found += upload_rows(url, process, base, budget_mib)
    if only in (None, "training"):
        found += training_rows(url, process, base, budget_mib)
    if only in (None, "tabs"):
        found += eviction_rows(url, 5_050)
    if only in (None, "answers"):
        found += unread_answer_rows(url, process)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-mib", type=int, default=1024, help="the app's budget for visitors' own tables")
    parser.add_argument("--only", choices=("random", "uploads", "training", "tabs", "answers"), help="one attack")
    args = parser.parse_args()
    os.environ["EXPLORER_TABLE_MEMORY_MIB"] = str(args.budget_mib)
    with launched_app() as (url, process):
        table(f"what strangers can make the server hold (budget for visitors' own tables {args.budget_mib:,} MiB)",
              HEADER, rows(url, process, args.budget_mib, args.only))


if __name__ == "__main__":
    main()
