"""The encoder's forward pass against transformers' BertModel, and the memory its weights add.

    python -m bench.encoder [--runs 30]    (one torch thread and one BLAS thread, as the app)

It also times a keystroke at layer 6 on a 128-token pair as the page computes it, against its
floor: transformers' forward pass on the same tokens plus the same keystroke at layer 0.

The floor for a keystroke at layer 6 is the encoder's bare forward pass: transformers'
`BertModel` on the same tokens, one thread. This times ours (`core.model.encoder.encode`: the
embedding layer, six layers, every hidden state and the mean attention of each layer) against
it on a 128-token pair of MiniLM's, side by side in one process, the runs interleaved in a
shuffled order and the medians compared (ratio = ours / baseline). transformers is timed as it
loads by default (fused sdpa attention, no probabilities) and with eager attention returning
its probabilities, as ours does. Before any of that, the process's RSS is read before and after
`bert_encoder()` loads the six layers: what the weights add, once (the budget: 60 MB).
"""

from __future__ import annotations

import argparse
import gc
import os
import random

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' "Loading weights" bar

import psutil
import torch
from threadpoolctl import threadpool_limits

from bench.update_latency import pair_of
from bench.vocabulary_basis import medians
from core.model.checkpoints import bert_encoder, bert_preset, minilm_dir
from core.model.encoder import encode
from core.model.tokenizer import WordPieceTokenizer

TOKENS = 128
BUDGET_MB = 60  # what the encoder's weights may add to the process
# two sentences long enough that the pair is cut to TOKENS
SENTENCE_A = "a student types a sentence and the explorer shows how each word moves through the layers " * 6
SENTENCE_B = "the lecturer follows the path of the word bank from the river to the money in the vault " * 6


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 1e6


def measure(runs: int = 30) -> dict:
    """RSS added by loading the encoder once, then the medians of the three forward passes."""
    from transformers import BertModel

    torch.set_num_threads(1)
    threadpool_limits(1)
    random.seed(0)
    wordpiece = WordPieceTokenizer()
    embedding = bert_preset()  # the page's tables, loaded already in the app before any layer is asked for
    encoding = wordpiece.encode(SENTENCE_A, SENTENCE_B, maxlen=TOKENS)
    x, seg = torch.tensor([encoding.ids]), torch.tensor([encoding.segment_ids])  # (1, 128) each

    gc.collect()
    before = rss_mb()
    encoder = bert_encoder()
    gc.collect()
    after = rss_mb()
    weights = sum(p.numel() * p.element_size() for p in encoder.parameters()) / 1e6
    shared = bert_encoder() is encoder  # a second caller (another tab) gets the same module: nothing more is read
    again = rss_mb()

    sdpa = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True).eval()
    eager = BertModel.from_pretrained(str(minilm_dir()), local_files_only=True, attn_implementation="eager").eval()

    def transformers_sdpa() -> object:
        with torch.inference_mode():
            return sdpa(input_ids=x, token_type_ids=seg, output_hidden_states=True)

    def transformers_eager() -> object:
        with torch.inference_mode():
            return eager(input_ids=x, token_type_ids=seg, output_hidden_states=True, output_attentions=True)

    # a keystroke at layer 6 as the page computes it (`ui.render.plane`, typed: drawn anew), against
    # its floor: transformers' bare forward pass on the same 128 tokens plus the same keystroke at layer 0.
    # The states a pair's forward pass leaves are forgotten before each, as a new keystroke's text has none
    key_pair = pair_of(TOKENS)
    key_encoding = wordpiece.encode(*key_pair)
    key_x, key_seg = torch.tensor([key_encoding.ids]), torch.tensor([key_encoding.segment_ids])
    keystroke = _keystroke(key_pair)

    def key_sdpa() -> object:
        with torch.inference_mode():
            return sdpa(input_ids=key_x, token_type_ids=key_seg, output_hidden_states=True)

    calls = {"ours": lambda: encode(embedding, encoder, x, seg), "sdpa": transformers_sdpa, "eager": transformers_eager,
             "key 6": lambda: keystroke(6), "key 0": lambda: keystroke(0), "key sdpa": key_sdpa}
    for call in calls.values():  # warm up: the allocator, each kernel's first use
        call()
        call()
    seconds = medians(calls, runs)
    ours = encode(embedding, encoder, x, seg).hidden_states
    difference = max((a - b).abs().max().item() for a, b in zip(ours, transformers_sdpa().hidden_states, strict=True))
    return {
        "key tokens": len(key_encoding.ids),
        "tokens": x.shape[1],
        "runs": runs,
        "seconds": seconds,
        "max_difference": difference,
        "rss": {"before": before, "after": after, "again": again, "weights": weights, "shared": shared},
    }


def _keystroke(pair: tuple[str, str]):
    """`keystroke(layer)`: the page's plane for the pair on BERT's tables at that layer, as a typed
    key draws it (`ui.render.plane`, typed), the pair's kept forward pass forgotten first."""
    import app  # builds the page once; sets the app's thread settings, as serving it does
    from core.plane import layers
    from core.tables.session import Session
    from core.view.state import View
    from ui import render

    page, session = app.demo.explorer, Session.create(source="bert")

    def keystroke(layer: int) -> dict:
        layers.forget()
        return render.plane(page, View(source="bert", sentence_a=pair[0], sentence_b=pair[1], layer=layer), session,
                            typed=True)

    return keystroke


def report(found: dict) -> list[tuple[str, tuple[str, ...], list[tuple[str, ...]]]]:
    """(title, header, rows) of each table to print."""
    s = found["seconds"]
    baseline = s["sdpa"]
    rows = [
        ("ours: encode(), hidden states + mean attention", f"{s['ours'] * 1e3:.1f}", f"{s['ours'] / baseline:.2f}×"),
        ("transformers BertModel, default (sdpa), hidden states", f"{baseline * 1e3:.1f}", "1.00×"),
        ("transformers BertModel, eager, hidden states + attentions", f"{s['eager'] * 1e3:.1f}",
         f"{s['eager'] / baseline:.2f}×"),
    ]
    floor = s["key sdpa"] + s["key 0"]
    keys = [
        ("a keystroke at layer 6 (ui.render.plane, typed)", f"{s['key 6'] * 1e3:.1f}", f"{s['key 6'] / floor:.2f}×"),
        ("floor: transformers' forward pass + the keystroke at layer 0",
         f"{s['key sdpa'] * 1e3:.1f} + {s['key 0'] * 1e3:.1f}", "1.00×"),
    ]
    rss = found["rss"]
    added = rss["after"] - rss["before"]
    memory = [
        ("RSS before bert_encoder()", f"{rss['before']:.1f}", ""),
        ("RSS after the first call", f"{rss['after']:.1f}", f"{added:+.1f}"),
        (f"RSS after a second call ({'the same module' if rss['shared'] else 'a new module'})", f"{rss['again']:.1f}",
         f"{rss['again'] - rss['after']:+.1f}"),
        ("the six layers' float32 weights", "", f"{rss['weights']:.1f}"),
        (f"added / budget {BUDGET_MB} MB", "", f"{added / BUDGET_MB:.2f}×"),
    ]
    return [
        (
            f"forward pass, {found['tokens']}-token pair, one thread: median of {found['runs']} interleaved runs, "
            f"ms (ratio = / transformers default); largest hidden-state difference {found['max_difference']:.1e}",
            ("model", "ms", "ratio"),
            rows,
        ),
        (f"a keystroke at layer 6 on a {found['key tokens']}-token pair, BERT's tables: median ms (ratio = / its "
         "floor, target 1.2×)", ("keystroke", "ms", "ratio"), keys),
        ("memory the encoder's weights add to the process, MB (10^6 bytes)", ("state", "RSS", "added"), memory),
    ]


def main() -> None:
    from bench.report import table

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs of each forward pass (median)")
    for title, header, rows in report(measure(parser.parse_args().runs)):
        table(title, header, rows)


if __name__ == "__main__":
    main()
