"""What a session costs in memory: idle, untrained and trained, per table source.

    python -m bench.sessions_memory [--sessions 200] [--each 20] [--app]

In this process (no server), with one torch thread as the app runs (`measure_in_process`): the
idle process; for BERT, GloVe and the largest random layer, loading the tables, then --each
untrained and --each trained sessions, each kept alive; --sessions trained BERT sessions kept
alive together; and the baseline side by side, --each BERT sessions trained on a full copy of
every trainable table (`full_copy_trained`). Each session is measured two ways: the growth of
the process's resident memory (psutil's RSS, divided by the number of sessions; includes the
allocator's slack) and the bytes of tensors the session holds that it does not share with the
preset (``core.model.embedding.private_bytes``, exact). Prints a markdown table; asserts
nothing. ``--app`` instead launches ``app.py`` and measures RSS with pages over its route (`measure`).
"""

from __future__ import annotations

import argparse
import copy
import gc
from collections.abc import Callable, Iterator

import psutil
import torch

from core.model.embedding import BertEmbedding, private_bytes
from core.model.training import PARTS, Corpus, TrainConfig, train
from core.tables.presets import LIMITS, Settings
from core.tables.session import Session

TARGET_MIB = 12  # per trained BERT session
CONFIG = TrainConfig(steps=20)
MiB = 2**20
LARGEST = Settings(**{name: LIMITS[name][1] for name in ("d_model", "maxlen", "n_segments")})
SOURCES: dict[str, Callable[[], Session]] = {
    "BERT": lambda: Session.create(source="bert"),
    "GloVe": lambda: Session.create(source="glove"),
    f"random {LARGEST.table_rows:,} × {LARGEST.d_model:,}, {LARGEST.maxlen:,} positions": lambda: Session.create(
        LARGEST
    ),
}


def rss() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / MiB


def full_copy_trained(session: Session) -> BertEmbedding:
    """A session's layer trained the way it was before: every trainable table copied whole."""
    model = session.model
    modules = {attribute: copy.deepcopy(getattr(model, attribute)).requires_grad_(True) for attribute in PARTS.values()}
    trained = BertEmbedding.from_modules(**modules).eval()
    train(trained, Corpus.builtin(), session.tokenizer, CONFIG)
    return trained.requires_grad_(False)


def per_session(make: Callable[[], object], count: int, private: Callable[[object], int]) -> tuple[float, float, list]:
    """(RSS MiB per item, private MiB per item, the items) for ``count`` items kept alive."""
    before = rss()
    kept = [make() for _ in range(count)]
    grown = (rss() - before) / count
    return grown, sum(private(item) for item in kept) / count / MiB, kept


def measure_in_process(sessions: int = 200, each: int = 20) -> Iterator[tuple[str, ...]]:
    """Rows of the table, each as soon as it is measured: (state, RSS, RSS change, private, note).

    The idle process is ``core`` imported and nothing loaded; each source's tables are loaded
    once per process; a trained session is ``Session.trained_on(Corpus.builtin(),
    TrainConfig(steps=20))``."""
    torch.set_num_threads(1)
    corpus = Corpus.builtin()
    yield ("idle process, core imported", f"{rss():.0f}", "", "", "")
    for name, create in SOURCES.items():
        before = rss()
        preset = create()
        loaded = rss()
        yield (f"{name}: tables loaded once", f"{loaded:.0f}", f"{loaded - before:+.1f}", "shared", "")
        grown, owned, _ = per_session(create, each, lambda s, p=preset: private_bytes(s.model, p.model))
        yield (f"{name}: each untrained session", "", f"{grown:+.2f}", f"{owned:.2f}", "")
        grown, owned, _ = per_session(
            lambda p=preset: p.trained_on(corpus, CONFIG), each, lambda s, p=preset: private_bytes(s.model, p.model)
        )
        target = f"≤ {TARGET_MIB} MiB: {'yes' if owned <= TARGET_MIB else 'no'}" if name == "BERT" else ""
        trained = f"{name}: each trained session ({CONFIG.steps} steps)"
        yield (trained, "", f"{grown:+.2f}", f"{owned:.2f}", target)

    bert = Session.create(source="bert")
    before = rss()
    crowd = [bert.trained_on(corpus, CONFIG) for _ in range(sessions)]
    total = rss() - before
    owned = sum(private_bytes(s.model, bert.model) for s in crowd) / MiB
    yield (f"{sessions} trained BERT sessions together", f"{rss():.0f}", f"{total:+.1f}", f"{owned:.1f}",
           f"{total / sessions:.2f} MiB each")
    del crowd

    grown, old, _ = per_session(lambda: full_copy_trained(bert), each, lambda m: private_bytes(m, bert.model))
    yield ("baseline: each BERT session trained on full copies", "", f"{grown:+.2f}", f"{old:.2f}", "")
    ours = private_bytes(bert.trained_on(corpus, CONFIG).model, bert.model) / MiB
    yield ("ours / baseline, private bytes per trained BERT session", "", "", f"{ours / old:.3f}×", "")


HEADER = ("state", "RSS MiB", "RSS change MiB", "private MiB", "note")


def markdown_row(cells: tuple[str, ...]) -> str:
    return "| " + " | ".join(cells) + " |"


def measure(sessions: int = 100, updates: int = 200) -> dict:
    """RSS in MiB of a launched app: idle, after the first and after all ``sessions`` BERT
    sessions (each a page opened over the page's route that sets BERT's tables and types a
    sentence of its own, bench/pages.py `RoutePage`), and before and after ``updates`` more
    updates in one session (``bench/run.py``)."""
    from bench.appserver import launched_app, mib
    from bench.pages import RoutePage

    with launched_app() as (url, process):
        first = RoutePage(url)
        first.change(sentence_a="The cat sat.", sentence_b="It purred.")
        idle = mib(process)

        first_bert, pages = idle, []
        for i in range(sessions):
            page = RoutePage(url)
            pages.append(page)
            page.change(source="bert")
            page.change(sentence_a=f"student {i} types a sentence", sentence_b="and another one")
            if i == 0:  # the BERT tables are loaded now, once for all sessions
                first_bert = mib(process)
        crowd = mib(process)

        start = mib(process)
        for i in range(updates):
            first.change(sentence_a=f"update number {i} of the same session", sentence_b="")
        after = mib(process)
        for page in (first, *pages):
            page.close()
    return {
        "idle": idle, "first_bert": first_bert, "crowd": crowd, "start": start, "after": after,
        "sessions": sessions, "updates": updates,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=200, help="trained BERT sessions kept together")
    parser.add_argument("--each", type=int, default=20, help="sessions per source and kind")
    parser.add_argument("--app", action="store_true", help="measure a launched app over HTTP instead")
    args = parser.parse_args()
    if args.app:
        found = measure(args.sessions)
        print({key: round(value, 1) for key, value in found.items()})
        return
    print(markdown_row(HEADER))
    print("|---|---:|---:|---:|---|")
    for row in measure_in_process(args.sessions, args.each):
        print(markdown_row(row), flush=True)


if __name__ == "__main__":
    main()

