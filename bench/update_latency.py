"""One live update, ours against the notebook path and the bare compute, in one run.

    python -m bench.update_latency [--repeats 30]

For sentence pairs of 16, 128 and 512 tokens on the BERT (MiniLM, d=384) tables it times
three paths to the same picture: ours, the plane the page's route computes for a keystroke
(`ours`); naive, what a notebook would do (`naive`); and bare, the least work that gives the
same numbers, with no figure at all (`bare`). All three run with the app's thread settings (one torch and one BLAS
thread per request). Timings are medians over interleaved repeats, so a noisy neighbour slows
all three alike; the ratios are the result, the milliseconds are for context.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from core.model.checkpoints import minilm_dir
from core.model.embedding import COMPONENTS
from core.tables.presets import wordpiece
from core.tables.session import Session

TEXT = (
    "the quick brown fox jumps over the lazy dog while students watch vectors move across "
    "the plane and a lecturer explains why every token gets a position and a segment "
)


def pair_of(n_tokens: int) -> tuple[str, str]:
    """Two sentences that encode to exactly n_tokens, markers included."""
    words = (TEXT * 40).split()
    half = (n_tokens - 3) // 2
    a, b = [], []
    for target, words_out in ((half, a), (n_tokens - 3 - half, b)):
        for word in words:
            if len(wordpiece().encode(" ".join([*words_out, word])).tokens) - 2 > target:
                break
            words_out.append(word)
    return " ".join(a), " ".join(b)


SIZES = (16, 128, 512)  # tokens per sentence pair, markers included


def keystroke_plane(session: Session):
    """What the page's route computes for a keystroke's plane, with the page's default controls:
    the page's `ui.render.plane` for a fresh `View` of the pair on ``session``'s tables (every
    group, labels on, no arrows, no shift, no presenter mode, no token selected, 10 neighbours,
    no flipped segments, no search), drawn as a keystroke's is (`typed`: anew, without the
    planes the tabs share). The view names the session's source, as a tab's does: the figure's
    held-axes key is made of it. Returns its {component: value} mapping."""
    import app  # builds the page once; sets the app's thread settings, as serving it does
    from core.view.state import View
    from ui import render

    page = app.demo.explorer

    def call(a: str, b: str) -> dict:
        # a keystroke's new text is drawn anew: the plane a tab drew for the same view on the same
        # tables is shared with the next (a class on one pair), and repeating one pair through that
        # cache would time its lookup instead
        return render.plane(page, View(source=session.base.key, sentence_a=a, sentence_b=b), session, typed=True)

    return call


def ours(session: Session):
    """The whole keystroke; returns the bytes of the figure JSON and HTML it made (the plot and the bar).

    `ui.render.plane(app.demo.explorer, view, session, typed=True)` for a fresh tab's `View` of the pair
    (default toggles, nothing selected, no search) in a new session's "this sentence" plane:
    `core.plane.pipeline.explore` (tokenize → components → PCA to 2-D, plus the spectrum of the
    explained-variance bar where the app measures one), the plot's figure JSON
    (`embedding_spec` + `figure_json`), the variance bar's HTML (`variance_bars`), the token
    table, the summary, the neighbours and the search; calling the page's renderer keeps this
    in step with the app. The route's own work (reading the call, finding the tab, the
    answer's JSON) is not in it: bench/server_cpu.py measures the whole call on the server.
    """
    import app

    page = app.demo.explorer
    call = keystroke_plane(session)

    def run(a: str, b: str) -> int:
        out = call(a, b)
        return len(out[page.plot]) + len(out[page.variance])  # the plot's figure JSON and the bar's HTML

    return run


def naive():
    """What a notebook would do: transformers' BertTokenizer + BertModel embeddings,
    scikit-learn PCA() with default settings, plotly.express, figure JSON."""
    import pandas as pd
    import plotly.express as px
    from sklearn.decomposition import PCA
    from transformers import BertModel, BertTokenizer

    tokenizer = BertTokenizer(str(minilm_dir() / "vocab.txt"))
    model = BertModel.from_pretrained(minilm_dir(), local_files_only=True).eval()
    emb = model.embeddings

    def run(a: str, b: str) -> int:
        enc = tokenizer(a, b, return_tensors="pt", truncation=True, max_length=512)
        ids, seg = enc["input_ids"], enc["token_type_ids"]
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        with torch.no_grad():
            token = emb.word_embeddings(ids)
            position = emb.position_embeddings(pos)
            segment = emb.token_type_embeddings(seg)
            summed = token + segment + position
            output = emb(input_ids=ids, token_type_ids=seg)
        vectors = [v[0].numpy() for v in (token, position, segment, summed, output)]
        points = PCA(n_components=2).fit_transform(np.concatenate(vectors))
        words = tokenizer.convert_ids_to_tokens(ids[0])
        frame = pd.DataFrame(
            {
                "x": points[:, 0],
                "y": points[:, 1],
                "group": np.repeat(COMPONENTS, len(words)),
                "token": words * len(COMPONENTS),
                "position": list(range(len(words))) * len(COMPONENTS),
            }
        )
        figure = px.scatter(frame, x="x", y="y", color="group", text="token", hover_data=["position"])
        return len(figure.to_json())

    return run


def bare(model):
    """The least work that gives the same numbers: fast tokenizer, table lookups, a covariance
    eigendecomposition in numpy (the plane and the spectrum); no figure at all."""
    tok, pos, seg, norm = (
        model.tok_embed.weight.numpy(),
        model.pos_embed.weight.numpy(),
        model.seg_embed.weight.numpy(),
        model.norm,
    )
    gamma, beta, eps = norm.weight.numpy(), norm.bias.numpy(), norm.eps

    def run(a: str, b: str) -> int:
        enc = wordpiece().encode(a, b)
        ids, segs = np.array(enc.ids), np.array(enc.segment_ids)
        token, position, segment = tok[ids], pos[: len(ids)], seg[segs]
        summed = token + segment + position
        mean = summed.mean(1, keepdims=True)
        var = summed.var(1, keepdims=True)
        output = (summed - mean) / np.sqrt(var + eps) * gamma + beta
        x = np.concatenate([token, position, segment, summed, output])
        x = x - x.mean(0)
        vals, vecs = np.linalg.eigh(x.T @ x)
        spectrum = vals[::-1][:10] / vals.sum()  # the explained-variance bar's ten shares
        return (x @ vecs[:, -2:]).nbytes + spectrum.nbytes

    return run


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def measure(repeats: int = 30, sizes: tuple[int, ...] = SIZES) -> list[dict]:
    """Median ms of each path per pair size, interleaved, plus the JSON bytes ours makes.

    Sets the app's thread settings (one torch thread, one BLAS thread) for the whole process.
    """
    # the app's thread settings (app.py), applied to all three paths alike
    torch.set_num_threads(1)
    threadpool_limits(1)
    session = Session.create(source="bert")
    assert session.basis == "sentence", session.basis  # the plane a new visitor sees
    paths = {"ours": ours(session), "naive": naive(), "bare": bare(session.model)}
    results = []
    for n in sizes:
        a, b = pair_of(n)
        assert len(session.encode(a, b)) == n, len(session.encode(a, b))
        times = {name: [] for name in paths}
        for run in paths.values():  # warm up caches and lazy imports
            run(a, b)
        size = 0
        for _ in range(repeats):
            for name, run in paths.items():
                start = time.perf_counter()
                result = run(a, b)
                times[name].append(time.perf_counter() - start)
                if name == "ours":
                    size = result
        results.append({"tokens": n, **{f"{name}_ms": median_ms(t) for name, t in times.items()}, "json_bytes": size})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()

    results = measure(args.repeats)
    print(f"torch and BLAS threads: 1 (as in app.py), repeats: {args.repeats}")
    print(
        f"{'tokens':>6}  {'ours ms':>8}  {'naive ms':>8}  {'bare ms':>8}  "
        f"{'naive/ours':>10}  {'ours/bare':>9}  {'plot + bar':>11}"
    )
    for r in results:
        print(
            f"{r['tokens']:>6}  {r['ours_ms']:>8.2f}  {r['naive_ms']:>8.2f}  {r['bare_ms']:>8.2f}  "
            f"{r['naive_ms'] / r['ours_ms']:>9.1f}×  {r['ours_ms'] / r['bare_ms']:>8.2f}×  "
            f"{r['json_bytes'] / 1024:>8.1f} KB"
        )


if __name__ == "__main__":
    main()
