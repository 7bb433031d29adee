"""What a page's answers leave on the server: a tab holds no copy of what it was sent (`copies_rows`),
and nothing is computed for a reader who left (`leavers_rows`).

    python -m bench.answer_memory [--tabs 80] [--leavers 30] [--only copies|leavers]

One launched app (`python app.py` in a child process: one process, the default memory budget,
trimmable: bench/appserver.py `trim`), asked for the largest answer a call can have, the
similarity view of a view with 2,048 positions and about 2,000 tokens (`VIEW_2048`, about 31 MiB
of JSON). Memory is the resident memory of the server and its children (the heavy-work
process); each figure is beside what breaking the guarantee would cost (the bytes sent, the
CPU of computing every view). Targets: ≤ +256 MiB each; the views computed for readers who
left, at most those already computing when they left. The third guarantee of the page's one
route, heavy work never slows a neighbour, is `python -m bench.run --only neighbour`. Measured,
never asserted.
"""

from __future__ import annotations

import argparse
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.appserver import launched_app, tree_mib, tree_seconds, trim
from bench.memory_attack import NON_READER, STUDENT, VIEW_2048, Peak, unread
from bench.pages import ROUTE, RoutePage
from bench.report import ms, percentile, table

SIMILARITY, PLANE = {"shown": "similarity"}, {"shown": "plane"}
TARGET_MIB = 256
LEFT_AFTER = 1.0  # seconds a reader that never reads keeps its socket open
SETTLE = 8.0  # seconds after the readers left that the memory is read again
ONE_ADDRESS = "203.0.113.40"  # the tabs of guarantee 1 (a documentation address, forwarded as a proxy would)


def streamed(http: httpx.Client, url: str, key: str, change: dict) -> tuple[int, bool]:
    """One call read as a page reads it, a chunk at a time (the load generator holds none of it):
    its bytes, and whether it was answered with values."""
    size, head = 0, b""
    with http.stream("POST", f"{url}{ROUTE}", json={"key": key, "change": change}) as response:
        for chunk in response.iter_bytes():
            head = head or chunk[:16]
            size += len(chunk)
    return size, response.status_code == 200 and head.startswith(b'{"values"')


def opened(url: str, queries: list[str], address: str) -> list[str]:
    """Pages opened at `queries` from `address`, a few at once as a browser's tabs open: their keys."""
    def one(query: str) -> str:
        with RoutePage(url, query, headers={"X-Forwarded-For": address}, timeout=300) as page:
            return page.key

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, queries))


def copies_rows(url: str, process, tabs: int = 80) -> list[tuple[str, ...]]:
    """Guarantee 1: `tabs` tabs of one address, each on `VIEW_2048`, ask for the similarity view at
    once (each waits its turn: the address's unread answers are bounded) and read it, then all go
    back to the plane. RSS (server and children) above before: at the peak, after, and after
    glibc's `malloc_trim` (what the allocator kept for reuse handed back, so what is left is what
    the server holds; the base is read trimmed too); the baseline, the bytes the tabs were sent.
    Target: ≤ +256 MiB after the trim."""
    keys = opened(url, [VIEW_2048] * (tabs + 1), ONE_ADDRESS)
    with httpx.Client(timeout=600, headers={"X-Forwarded-For": ONE_ADDRESS}) as http:
        # one tab first, untimed: the view's tables and its similarity drawn, and the answer's size
        size, _ = streamed(http, url, keys.pop(), SIMILARITY)
    trim(process)  # the base as the last figure is read: what the server holds, without the allocator's slack
    base = tree_mib(process)
    answered, sent = [0, 0], [0]
    lock = threading.Lock()

    def read_then_back(key: str) -> None:
        with httpx.Client(timeout=600, headers={"X-Forwarded-For": ONE_ADDRESS}) as http:
            for index, change in enumerate((SIMILARITY, PLANE)):
                nbytes, ok = streamed(http, url, key, change)
                with lock:
                    answered[index] += ok
                    sent[0] += nbytes

    began = time.perf_counter()
    with Peak(process, base) as rss, ThreadPoolExecutor(tabs) as pool:
        list(pool.map(read_then_back, keys))
    seconds = time.perf_counter() - began
    time.sleep(2)
    after = tree_mib(process) - base
    trim(process)
    trimmed = tree_mib(process) - base
    return [
        (f"a tab holds no copy of what it was sent: RSS once {tabs} tabs of one address read the similarity view "
         "and went back to the plane, after malloc_trim", f"{trimmed:+,.0f} MiB", f"{sent[0] / 2**20:,.0f} MiB sent",
         f"{trimmed / TARGET_MIB:.2f}× target", f"≤ +{TARGET_MIB} MiB", "yes" if trimmed <= TARGET_MIB else "no"),
        (f"  2,048 positions, {size / 2**20:.1f} MiB an answer: RSS (server and children) above before, before "
         "malloc_trim; the peak while they read", f"{after:+,.0f} MiB; {rss.peak - base:+,.0f} MiB", "", "", "", ""),
        ("  views answered, of the tabs; back on the plane; seconds for all", f"{answered[0]} of {tabs}; "
         f"{answered[1]}; {seconds:.0f} s", "", "", "", ""),
    ]


def leavers_rows(url: str, process, tabs: int = 30) -> list[tuple[str, ...]]:
    """Guarantee 2: `tabs` tabs of one address, each on `VIEW_2048` with tables of its own (a seed
    each: no drawing is shared between them), ask for the similarity view on sockets that never
    read, closed `LEFT_AFTER` s later; another visitor types meanwhile (4 keys a second,
    bench/public_space.py `typist_latencies`). RSS (server and children) above before, while the
    sockets are open, at the peak and `SETTLE` s after they closed (target ≤ +256 MiB); the views
    the server computed after their readers left, its CPU from the close to the end of the window
    less the typist's (measured alone, in proportion) over one view's (measured on a tab that
    reads its answer), against computing all (target: at most the 2 computing when their readers
    left; the others are dropped while they wait); what it computed while they were there, for
    context; the typist's key-to-answer against the same typist alone."""
    from bench.public_space import typist_latencies

    window = LEFT_AFTER + SETTLE
    keys = opened(url, [f"{VIEW_2048}&seed={1000 + i}" for i in range(tabs + 1)], NON_READER)
    # one view computed and read, on tables of its own as each leaver's: what computing one costs
    with httpx.Client(timeout=600, headers={"X-Forwarded-For": NON_READER}) as http:
        spent = tree_seconds(process)
        size, _ = streamed(http, url, keys.pop(), SIMILARITY)
        one = tree_seconds(process) - spent
    time.sleep(2)
    spent = tree_seconds(process)
    alone, _ = typist_latencies(url, window, address=STUDENT)
    typist_cpu = tree_seconds(process) - spent  # the typist's own cost of the window, alone
    time.sleep(2)
    base = tree_mib(process)
    beside: list[float] = []
    typing = threading.Thread(target=lambda: beside.extend(typist_latencies(url, window, address=STUDENT)[0]))
    spent = tree_seconds(process)
    with Peak(process, base) as rss:
        typing.start()
        sockets = [unread(url, key, SIMILARITY, NON_READER) for key in keys]
        time.sleep(LEFT_AFTER)
        during = tree_mib(process) - base
        closed = tree_seconds(process)
        for each in sockets:
            each.close()
        time.sleep(SETTLE)
        settled, ended = tree_mib(process) - base, tree_seconds(process)
        typing.join(120)
    after = ended - closed
    before = max(0.0, closed - spent - typist_cpu * LEFT_AFTER / window) / one  # while their readers were there
    computed = max(0.0, after - typist_cpu * SETTLE / window) / one
    p95, alone_p95 = percentile(beside, 0.95), percentile(alone, 0.95)
    return [
        (f"nothing is computed for a reader who left: RSS {SETTLE:g} s after {tabs} tabs of one address asked for "
         "the similarity view and left", f"{settled:+,.0f} MiB", f"{tabs * size / 2**20:,.0f} MiB of answers",
         f"{settled / TARGET_MIB:.2f}× target", f"≤ +{TARGET_MIB} MiB", "yes" if settled <= TARGET_MIB else "no"),
        (f"nothing is computed for a reader who left: the views computed for those {tabs} after they left (server "
         f"CPU in the {SETTLE:g} s after, less a typist's, over one view's)", f"{computed:.1f} of {tabs} "
         f"({after:.1f} s CPU; {before:.1f} views while they were there)",
         f"{tabs * one:.1f} s to compute all", f"{computed / tabs:.2f}×", "≤ 2 (computing when their reader left)",
         "yes" if computed <= 2 else "no"),
        (f"  2,048 positions, {size / 2**20:.1f} MiB an answer, tables of their own, sockets that never read closed "
         f"{LEFT_AFTER:g} s later: RSS while open; the peak", f"{during:+,.0f} MiB; {rss.peak - base:+,.0f} MiB",
         "", "", "", ""),
        ("  another visitor's keystrokes meanwhile (4 keys/s): p95 key to answer", ms(p95),
         f"{ms(alone_p95)} alone", f"{p95 / alone_p95:.2f}×", "—", ""),
    ]


HEADER = ("measure", "ours", "baseline", "ratio", "target", "met?")


def rows(tabs: int = 80, leavers: int = 30, only: str | None = None) -> list[tuple[str, ...]]:
    """Both guarantees' rows, on one app launched with the default memory budget."""
    found = []
    with launched_app(trimmable=True, env={"EXPLORER_TABLE_MEMORY_MIB": None}) as (url, process):
        if only in (None, "copies"):
            found += copies_rows(url, process, tabs)
        if only in (None, "leavers"):
            found += leavers_rows(url, process, leavers)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=80, help="tabs that read the similarity view (guarantee 1)")
    parser.add_argument("--leavers", type=int, default=30, help="tabs that ask and leave (guarantee 2)")
    parser.add_argument("--only", choices=("copies", "leavers"), help="one guarantee")
    args = parser.parse_args()
    table("what a page's answers leave on the server (one process, the default memory budget)", HEADER,
          rows(args.tabs, args.leavers, args.only))


if __name__ == "__main__":
    main()
