"""A class at once: many pages typing together, two of them training, none seeing another's data.

N clients (threads, each a page of its own through the page's route, tests/appapi.py) make M
live updates each, with sentences only they type. Two of them train meanwhile and one changes
d_model. Every answer must hold its own page's word and nobody else's, and the settings and
training of a page must show in its own answers only. Times are measured and printed, never
asserted.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import pytest

from core.view.state import SETTINGS_FIELDS
from tests.appapi import Outputs, Page

N_CLIENTS = 20
N_UPDATES = 5
TRAINERS = (0, 7)  # these clients train after their first update, while the others type
SETTER = 3  # this client sets d_model 8 before its update SETTINGS_AT
SETTINGS_AT = 2
TRAIN_STEPS = 20
D_MODEL_8 = dict(zip(SETTINGS_FIELDS, ("wordpiece", 1000, 8, 512, 2, 0), strict=True))
RUN_TIMEOUT = 150  # seconds for the whole crowd

# common words that are one WordPiece token each (checked below), one per client; the rest of
# every sentence uses only words outside this list
WORDS = (
    "apple", "river", "castle", "garden", "window", "doctor", "summer", "forest", "music", "bridge",
    "candle", "rabbit", "pencil", "island", "mountain", "silver", "engine", "coffee", "tiger", "ocean",
)  # fmt: skip


def sentences(client: int, update: int) -> tuple[str, str]:
    word = WORDS[client]
    return f"the {word} is here for update {update}", f"and the {word} stays"


@dataclass
class Response:
    client: int
    update: int
    tokens: set[str]  # every token in the plot's hover texts
    table_tokens: set[str]  # the token table's first column
    output_norms: list[float]  # the token table's last column, |output|
    traces: list[str]  # trace names


@dataclass
class Record:
    responses: list[Response] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    embed_seconds: list[float] = field(default_factory=list)
    train_seconds: list[float] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)


def read(client: int, update: int, out: Outputs) -> Response:
    # the plot expanded, and the token table drawn from it, as the page does
    traces, table = json.loads(out["embed-plot"]["plot"])["data"], out["token-table"]
    return Response(
        client=client,
        update=update,
        tokens={t for trace in traces for t in trace.get("hovertext") or ()},
        table_tokens={row[0] for row in table["data"]},
        output_norms=[row[-1] for row in table["data"]],
        traces=[trace.get("name") for trace in traces],
    )


def student(index: int, url: str, start: threading.Barrier, record: Record, lock: threading.Lock) -> None:
    page = None
    try:
        page = Page(url)
    except Exception as error:  # the barrier below still has to be passed, or everyone waits
        with lock:
            record.errors.append(f"client {index} open: {error!r}")
    try:
        start.wait()
    except threading.BrokenBarrierError:
        with lock:
            record.errors.append(f"client {index}: the crowd never gathered")
        return
    if page is None:
        return
    for update in range(N_UPDATES):
        if index == SETTER and update == SETTINGS_AT:
            call(index, record, lock, "settings", lambda: page.send(**D_MODEL_8))
        began = time.perf_counter()
        a, b = sentences(index, update)
        out = call(index, record, lock, "embed", lambda a=a, b=b: page.send(sentence_a=a, sentence_b=b))
        if out is not None:
            with lock:
                record.embed_seconds.append(time.perf_counter() - began)
                record.responses.append(read(index, update, out))
        if index in TRAINERS and update == 0:
            began = time.perf_counter()
            out = call(index, record, lock, "train", lambda: page.train(TRAIN_STEPS, "builtin")[0])
            if out is not None:
                with lock:
                    record.train_seconds.append(time.perf_counter() - began)
                    record.summaries.append(out.value("train-summary"))


def call(index: int, record: Record, lock: threading.Lock, what: str, send) -> Outputs | None:
    """`send()`'s answer; an error (a refusal of the call, an exception) is recorded instead."""
    try:
        out = send()
    except Exception as error:
        out = Outputs(error=repr(error))
    if "error" in out:
        with lock:
            record.errors.append(f"client {index} {what}: {out['error']}")
        return None
    return out


def spread(seconds: list[float]) -> str:
    if not seconds:
        return "none"
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"n={len(ordered)} p50 {statistics.median(ordered):.2f} s, p95 {p95:.2f} s, max {ordered[-1]:.2f} s"


def test_words_are_one_wordpiece_each():
    from core.tables.presets import wordpiece

    assert len(set(WORDS)) == N_CLIENTS
    for word in WORDS:
        assert wordpiece().encode(word).tokens == ("[CLS]", word, "[SEP]"), word
    for client in range(N_CLIENTS):
        filler = set(" ".join(sentences(client, N_UPDATES)).split()) - {WORDS[client]}
        assert not filler & set(WORDS), filler


def test_a_class_at_once_sees_only_its_own_sessions(app_url):
    record, lock = Record(), threading.Lock()
    start = threading.Barrier(N_CLIENTS, timeout=60)
    began = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=N_CLIENTS)
    futures = [pool.submit(student, i, app_url, start, record, lock) for i in range(N_CLIENTS)]
    done, not_done = wait(futures, timeout=RUN_TIMEOUT)
    pool.shutdown(wait=False, cancel_futures=True)  # a hung client fails the test below, not stall it
    elapsed = time.perf_counter() - began
    for future in done:
        if future.exception() is not None:
            record.errors.append(f"worker: {future.exception()!r}")
    print(
        f"\n{N_CLIENTS} clients x {N_UPDATES} updates + {len(TRAINERS)} trainings in {elapsed:.1f} s;"
        f" updates {spread(record.embed_seconds)}; trainings {spread(record.train_seconds)}"
    )

    assert not not_done, f"{len(not_done)} clients were still running after {RUN_TIMEOUT} s"
    assert record.errors == []
    assert len(record.responses) == N_CLIENTS * N_UPDATES
    assert len(record.summaries) == len(TRAINERS)
    assert all(f"Trained {TRAIN_STEPS} steps" in s for s in record.summaries), record.summaries

    crosstalk = []
    for r in record.responses:
        own, others = WORDS[r.client], set(WORDS) - {WORDS[r.client]}
        for name, tokens in (("plot", r.tokens), ("table", r.table_tokens)):
            if own not in tokens or tokens & others:
                crosstalk.append((r.client, r.update, name, sorted(tokens & set(WORDS))))
    assert crosstalk == [], "responses holding another client's words, or missing their own"

    for r in record.responses:
        trained = r.client in TRAINERS and r.update >= 1
        # only a trained session draws its untrained tables as the faint "before training" group
        assert ("before training" in r.traces) == trained, (r.client, r.update, r.traces)
        if trained:
            continue  # training moves LayerNorm's gamma and beta, so |output| is no longer sqrt(d)
        d_model = 8 if r.client == SETTER and r.update >= SETTINGS_AT else 32
        # under LayerNorm's identity affine every output row has norm sqrt(d_model)
        assert r.output_norms == pytest.approx([d_model**0.5] * len(r.output_norms), rel=1e-2), (r.client, r.update)


def test_a_class_pressing_train_together_is_answered_and_trains_once(app_url, monkeypatch):
    """Tour step 7 asks every student to press Train: the same tables, corpus and steps train
    the same way, so the burst trains once and every student gets the result, none refused."""
    from core.tables.session import Session

    calls, students = [], 12
    trained_on = Session.trained_on

    def counted(self, *args, **kwargs):
        calls.append(1)
        return trained_on(self, *args, **kwargs)

    monkeypatch.setattr(Session, "trained_on", counted)
    start = threading.Barrier(students, timeout=60)

    def student(index: int):
        page = Page(app_url)
        page.send(sentence_a=sentences(index, 0)[0], sentence_b=sentences(index, 0)[1])
        start.wait()
        out, _ = page.train(100, "builtin")
        return out.notice, out.value("train-summary")

    with ThreadPoolExecutor(max_workers=students) as pool:
        answers = list(pool.map(student, range(students)))
    assert all(notice == "" for notice, _ in answers), [notice for notice, _ in answers if notice]
    summaries = {summary for _, summary in answers}
    assert len(summaries) == 1 and summaries.pop().startswith("Trained 100 steps in "), summaries
    assert len(calls) == 1, f"{len(calls)} trainings ran for {students} identical requests"
