"""Does training gather related words, how fast, and why the softmax is corpus-sized.

    python -m bench.training_purity

Part 1 is the classroom demonstration (`demonstration`): a random N(0, 1) layer shaped like
BERT's (WordPiece, 30,522 rows) trained with the default `TrainConfig` on the built-in corpus,
its steps per second, time until category purity 0.9, final purity and the chance level; rows
at other widths and with the word-level tokenizer show where it stops working (d = 2). Part 2
(`ms_per_step`) is why `train` works on a corpus-sized copy of the token table: a step of the
same objective with the softmax over every row of the table (the baseline) against ours, on
the table shapes the app offers. The process's first backward pass (torch's lazy imports) is
timed on its own and kept out of the other numbers (`first_backward`). On a machine whose
cores are busy with other work, PyTorch's thread pool waits on itself at every small
operation: run with ``OMP_NUM_THREADS=1`` for steady numbers there.
"""

from __future__ import annotations

import argparse
import time

import torch

from core.model.embedding import BertEmbedding
from core.model.tokenizer import WordLevelTokenizer
from core.model.training import (
    Corpus,
    Tokenizer,
    TrainConfig,
    _Examples,  # the baseline samples the very batches `train` does
    masked_token_loss,
    purity,
    train,
    trainable_copy,
)
from core.tables.presets import Settings, random_source, wordpiece

TARGET = 0.9  # the purity the demonstration must reach
# (rows, width, timed baseline steps) of the tables the app offers: random, MiniLM, GloVe;
# a baseline step at GloVe's size takes seconds and 2 GB, so it is timed twice only
SHAPES = ((30522, 32, 20), (30522, 384, 5), (400003, 50, 2))
OUR_STEPS = 200  # enough that tokenizing the corpus and measuring purity hardly count


def demonstration(model: BertEmbedding, corpus: Corpus, tokenizer: Tokenizer) -> dict:
    """Train with the defaults: steps/s, seconds and steps to TARGET (None: never), final purity.

    Purity is evaluated every 5% of the steps through the progress callback, with the clock
    paused meanwhile."""
    config = TrainConfig()
    paused, reached = 0.0, None

    def evaluate(step: int, steps: int, losses: tuple[float, ...]) -> None:  # train's progress callback
        nonlocal paused, reached
        pause = time.perf_counter()
        if reached is None and purity(model, corpus, tokenizer) >= TARGET:
            reached = (step, pause - start - paused)
        paused += time.perf_counter() - pause

    start = time.perf_counter()
    result = train(model, corpus, tokenizer, config, progress=evaluate)
    seconds = result.seconds - paused
    return {
        "steps_per_s": config.steps / seconds,
        "seconds_to_target": None if reached is None else reached[1],
        "steps_to_target": None if reached is None else reached[0],
        "final_purity": result.purity_after,
    }


def demonstration_cells(found: dict) -> tuple[str, ...]:
    to_target = (
        ("never", "") if found["steps_to_target"] is None
        else (f"{found['seconds_to_target']:.2f} s", f"{found['steps_to_target']}")
    )
    return (f"{found['steps_per_s']:.0f}", *to_target, f"{found['final_purity']:.3f}")


def ms_per_step(model: BertEmbedding, corpus: Corpus, tokenizer: Tokenizer, steps: int) -> tuple[float, float]:
    """Milliseconds per step: ours (corpus-sized softmax) and the full-table baseline."""
    ours = train(trainable_copy(model), corpus, tokenizer, TrainConfig(steps=OUR_STEPS)).seconds / OUR_STEPS

    config = TrainConfig()
    examples = _Examples.encode(corpus, tokenizer, model.config)
    full = trainable_copy(model)
    optimizer = torch.optim.Adam(full.parameters(), lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    start = time.perf_counter()
    for _ in range(steps):
        x, seg, keep, target = examples.sample(config.batch_size, generator)
        # the same batch in the model's own ids: the softmax covers all of its rows
        loss = masked_token_loss(full, examples.rows[x], seg, keep, target, config.window)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return 1e3 * ours, 1e3 * (time.perf_counter() - start) / steps


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    for row in (header, *rows):
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
    print()


def first_backward(corpus: Corpus, tokenizer: Tokenizer) -> float:
    """Seconds of the process's first training call (torch's lazy imports), to keep out of the rest."""
    start = time.perf_counter()
    train(trainable_copy(random_source(Settings(d_model=2)).model), corpus, tokenizer, TrainConfig(steps=1))
    return time.perf_counter() - start


def measure(layers: tuple[int, ...] = (32,), shapes: tuple[tuple[int, int, int], ...] = SHAPES[:1]) -> dict:
    """Part 1 on WordPiece layers of the given widths (the first is the app's default layer)
    and part 2 on the given table shapes, as numbers, for bench/run.py."""
    corpus, tokenizer = Corpus.builtin(), wordpiece()
    warm_up = first_backward(corpus, tokenizer)
    demos = []
    for d in layers:
        model = trainable_copy(random_source(Settings(d_model=d)).model)
        before = purity(model, corpus, tokenizer)
        demos.append({"d_model": d, "purity_at_start": before, **demonstration(model, corpus, tokenizer)})
    steps = []
    for vocab_size, d_model, baseline_steps in shapes:
        ours, full = ms_per_step(BertEmbedding(vocab_size, d_model), corpus, tokenizer, baseline_steps)
        steps.append({"rows": vocab_size, "d_model": d_model, "ours_ms": ours, "full_ms": full})
    return {
        "first_backward_s": warm_up,
        "chance_purity": corpus.chance_purity(),
        "threads": torch.get_num_threads(),
        "layers": demos,
        "steps": steps,
    }


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # no options: --help
    corpus, tokenizer = Corpus.builtin(), wordpiece()
    words = sum(len(w) for w in corpus.categories.values())
    warm_up = first_backward(corpus, tokenizer)
    print(
        f"{len(corpus.sentences)} sentences, {words} category words in {len(corpus.categories)} "
        f"categories; {torch.get_num_threads()} threads; first backward in this process: "
        f"{warm_up:.1f} s (excluded below)\n"
    )

    word_level = WordLevelTokenizer.from_text(" ".join(corpus.sentences))
    layers = [(f"WordPiece, d {d}", Settings(d_model=d), tokenizer) for d in (32, 2, 16, 64)]
    layers.append(("word-level, d 32", Settings("word", word_level.vocab_size, 32), word_level))
    rows = []
    for name, settings, layer_tokenizer in layers:
        model = trainable_copy(random_source(settings).model)
        before = purity(model, corpus, layer_tokenizer)
        found = demonstration(model, corpus, layer_tokenizer)
        rows.append((name, f"{before:.3f}", *demonstration_cells(found)))
    print(f"1. default TrainConfig() on the built-in corpus; chance purity {corpus.chance_purity():.3f}")
    table(("layer", "purity at start", "steps/s", f"to {TARGET}", "steps", "final purity"), rows)

    rows = []
    for vocab_size, d_model, steps in SHAPES:
        model = BertEmbedding(vocab_size, d_model)  # values do not matter for timing
        ours, full = ms_per_step(model, corpus, tokenizer, steps)
        rows.append((f"{vocab_size:,} x {d_model}", f"{ours:.1f}", f"{full:.1f}", f"{full / ours:.0f}x"))
    print("2. ms per training step, WordPiece ids; ratio = full softmax / corpus-sized")
    table(("token table", "corpus-sized", "full softmax", "ratio"), rows)


if __name__ == "__main__":
    main()
