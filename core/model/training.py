"""Training the embedding layer: which tables learn, and how related words gather.

*nn.Embedding is a lookup table* ends on this point: a randomly initialised table puts
"cat" no nearer to "dog" than to "seven", and relatedness appears only once the table is
trained by gradient descent. This module trains the whole layer on a corpus, leaves alone
the tables a student froze, and measures how far related words gathered (`purity`).

The objective (`masked_token_loss`) is masked-token prediction read straight off the layer's
outputs: the smallest task in which every part of the layer has a job and no other weights
exist. Nothing global is touched (no ``torch.manual_seed``, no thread settings): batches are
drawn from a private generator, so concurrent sessions can train at once and the same
model, corpus and config always give the same tables.
"""

from __future__ import annotations

import copy
import functools
import json
import operator
import re
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from core.model.embedding import BertEmbedding, EmbeddingConfig, PatchedEmbedding, patched
from core.model.tokenizer import Encoding
from core.view.options import MAX_CORPUS_CHARS, MAX_SENTENCE_CHARS, MAX_SENTENCES

ASSETS = Path(__file__).resolve().parents[2] / "assets"

# the parts a student can freeze, and the attribute of BertEmbedding each one names
FRAMES = 4  # snapshots of the tables a training sends on its way (train_copy)
PARTS = {"token": "tok_embed", "position": "pos_embed", "segment": "seg_embed", "norm": "norm"}

# a sentence ends at a line break, or at . ! ? followed by space
_SENTENCE_BREAK = re.compile(r"\n|(?<=[.!?])\s+")



class Tokenizer(Protocol):
    """What training needs of a tokenizer: ``WordPieceTokenizer`` and ``WordLevelTokenizer`` fit."""

    def encode(self, a: str, b: str = "", maxlen: int = 512) -> Encoding: ...


@dataclass(frozen=True)
class Corpus:
    """Sentences to train on, and optionally the word categories purity is measured by."""

    sentences: tuple[str, ...]
    categories: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # category -> words

    def __post_init__(self) -> None:
        categories = {name: tuple(words) for name, words in self.categories.items()}
        home: dict[str, str] = {}
        for name, words in categories.items():
            for word in words:
                if word in home:
                    raise ValueError(
                        f"{word!r} is in both {home[word]!r} and {name!r}; a word belongs to one category."
                    )
                home[word] = name
        sentences = tuple(self.sentences)
        if len(sentences) > MAX_SENTENCES:
            raise ValueError(
                f"the corpus has {len(sentences):,} sentences; up to {MAX_SENTENCES:,} are allowed "
                f"for one training run."
            )
        for number, sentence in enumerate(sentences, start=1):
            if len(sentence) > MAX_SENTENCE_CHARS:
                raise ValueError(
                    f"sentence {number:,} has {len(sentence):,} characters; sentences of up to "
                    f"{MAX_SENTENCE_CHARS:,} are allowed: end each with . ! or ?, or put one per line."
                )
        object.__setattr__(self, "sentences", sentences)
        object.__setattr__(self, "categories", MappingProxyType(categories))

    def __reduce__(self) -> tuple:
        # a read-only mapping does not pickle; a corpus crosses to core.process.offload's process
        return (Corpus, (self.sentences, dict(self.categories)))

    @classmethod
    def builtin(cls) -> Corpus:
        """The corpus that ships in assets/, with planted categories of related words."""
        return _builtin_corpus()

    @classmethod
    def from_text(cls, text: str) -> Corpus:
        """A user's own sentences: one per line, or several per line ended by . ! or ?

        The text is measured before it is split, so an oversized one costs nothing.
        """
        if len(text) > MAX_CORPUS_CHARS:
            raise ValueError(
                f"the text has {len(text):,} characters; up to {MAX_CORPUS_CHARS:,} are allowed for training."
            )
        sentences = tuple(s.strip() for s in _SENTENCE_BREAK.split(text) if s.strip())
        if not sentences:
            raise ValueError("the text has no sentences: write one per line, or end each with . ! or ?")
        return cls(sentences)

    def chance_purity(self) -> float | None:
        """The purity of a table without structure, whose neighbours are random other words.

        A word of a category of n, among N category words, has (n - 1) / (N - 1) of the
        others in its category; averaged over the words this is sum n(n - 1) / N(N - 1).
        """
        sizes = [len(words) for words in self.categories.values()]
        total = sum(sizes)
        if total < 2:
            return None
        return sum(n * (n - 1) for n in sizes) / (total * (total - 1))


@functools.cache
def _builtin_corpus() -> Corpus:
    # read once: every session trains on the same immutable corpus
    lines = (ASSETS / "corpus.txt").read_text(encoding="utf-8").splitlines()
    categories = json.loads((ASSETS / "corpus_categories.json").read_text(encoding="utf-8"))
    return Corpus(tuple(line for line in lines if line.strip()), categories)


@dataclass(frozen=True)
class TrainConfig:
    """How long and how fast to train.

    The defaults take a random N(0, 1) 32-d layer from chance to full purity within the
    default steps, quickly, and leave room to watch it happen (``bench/training_purity.py``
    prints the steps and time it takes).
    """

    steps: int = 200  # gradient steps, one batch each
    lr: float = 0.1  # Adam's step size; a much smaller one needs several times the steps, a larger one is slower again
    batch_size: int = 32  # sentence pairs per step
    window: int = 2  # context tokens each side
    seed: int = 0  # seeds batch sampling, so a run can be repeated exactly

    MAX_STEPS: ClassVar[int] = 2000  # larger requests are capped by the caller, with a message
    MAX_LR: ClassVar[float] = 10.0  # far past divergence: room to show it, not to overflow
    # allowed range of each whole-number field, inclusive; the messages quote these
    LIMITS: ClassVar[Mapping[str, tuple[int, int]]] = MappingProxyType(
        {"steps": (0, MAX_STEPS), "batch_size": (1, 1024), "window": (1, 32), "seed": (0, 2**31 - 1)}
    )

    def __post_init__(self) -> None:
        for name, (low, high) in self.LIMITS.items():
            value = _whole_number(getattr(self, name), name)
            if not low <= value <= high:
                raise ValueError(f"{name} is {value:,}; allowed values are {low:,} to {high:,}.")
            object.__setattr__(self, name, value)
        lr = self.lr
        if isinstance(lr, bool) or not isinstance(lr, int | float) or not 0 < lr <= self.MAX_LR:
            raise ValueError(f"lr is {lr!r}; allowed values are above 0 and at most {self.MAX_LR:g}.")


def _whole_number(value: object, name: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)  # number boxes send 200.0
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a whole number, not {value!r}.")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be a whole number, not {value!r}.") from None


@dataclass(frozen=True)
class Run:
    """One press of Train, as plain data: what a script repeats to get the same tables (core/drawing/code.py)."""

    steps: int  # the steps it took
    fixed: frozenset[str]  # the parts it left alone (PARTS names)
    sentences: tuple[str, ...]  # the corpus it read
    builtin: bool  # whether that was the built-in corpus


@dataclass(frozen=True)
class TrainResult:
    """What a run did, for the loss curve and the "purity 0.09 -> 1.00" line."""

    losses: tuple[float, ...]  # one per step
    purity_before: float | None  # None when the corpus has no categories
    purity_after: float | None
    seconds: float  # wall time of the whole call, purity included
    steps: int
    runs: tuple[Run, ...] = ()  # every run that made the tables, oldest first, this one last (Session.trained_on)


def trainable_copy(model: BertEmbedding, frozen: Collection[str] = ()) -> BertEmbedding:
    """A private layer to train, with each part in `frozen` switched off.

    The shared tables are read-only and used by every session, so training never touches
    them. The token table becomes a `PatchedEmbedding` over the shared one: training changes
    only the corpus's rows, and only those are stored per session (a whole token table,
    copied per session, would be most of a trained session's memory). The small parts
    (positions, segments, norm) are copied when they train. A frozen part that is already
    read-only is shared with `model`: it cannot change. `requires_grad` is set on every
    part, so the layer's state depends on `frozen` alone, not on the source's flags.
    """
    frozen = (frozen,) if isinstance(frozen, str) else tuple(frozen)
    unknown = [part for part in frozen if part not in PARTS]
    if unknown:
        raise ValueError(f"there is no part called {unknown[0]!r}; the parts are {', '.join(PARTS)}.")
    modules = {}
    for part, attribute in PARTS.items():
        module = getattr(model, attribute)
        trains = part not in frozen
        if trains and part == "token":
            module = patched(module)
        elif trains or _trainable(module):
            module = copy.deepcopy(module)
        modules[attribute] = module.requires_grad_(trains)
    return BertEmbedding.from_modules(**modules).eval()


def train_copy(model: BertEmbedding, frozen: Collection[str], corpus: Corpus, tokenizer: Tokenizer,
               config: TrainConfig, progress: Callable[[int, int, tuple[float, ...]], None] | None = None,
               stop: Callable[[], bool] | None = None) -> tuple[BertEmbedding, TrainResult]:
    """A `trainable_copy` of `model`, trained: the model and what its training did. One
    module-level call, so `core.process.offload` can run it in its own process.

    At a fifth, two, three and four fifths of the steps (`FRAMES`), `progress` is also passed a
    frozen snapshot of the tables so far (`frame=`), for the page to draw the points on their
    way: a default training is over too fast to watch. A snapshot costs a
    `trainable_copy`: the corpus's token rows and the small tables, not the vocabulary."""
    copy_ = trainable_copy(model, frozen)
    marks = {max(1, config.steps * k // (FRAMES + 1)) for k in range(1, FRAMES + 1)} - {config.steps}

    def report(step: int, steps: int, losses: tuple[float, ...]) -> None:
        frame = trainable_copy(copy_, PARTS).requires_grad_(False) if step in marks else None
        progress(step, steps, losses, **({"frame": frame} if frame is not None else {}))

    result = train(copy_, corpus, tokenizer, config, report if progress is not None else None, stop,
                   marks=marks)
    return copy_.requires_grad_(False), result


def training_bytes(model: BertEmbedding, frozen: Collection[str], corpus: Corpus, tokenizer: Tokenizer,
                   config: TrainConfig) -> int:
    """The most memory `train_copy(model, frozen, corpus, tokenizer, config)` holds beyond the
    tables it reads, wherever it runs: the corpus as tensors; its copy of the corpus's token rows
    and of every other part it trains, with their gradients, Adam's two moments and the rows
    written back; a batch's logits and their gradient; and each snapshot (`FRAMES`) and the
    result, pickled and read again as they come back, held until the training ends. Reserved in
    the memory budget before it starts (`core.tables.session.Session.trained_on`)."""
    examples = _Examples.encode(corpus, tokenizer, model.config)
    rows, width = len(examples.rows), model.config.d_model
    trains = 0 if "token" in frozen else 4 * rows * width
    trains += sum(4 * parameter.numel() for part, attribute in PARTS.items() if part not in ("token", *frozen)
                  for parameter in getattr(model, attribute).parameters())
    logits = 4 * config.batch_size * examples.ids.shape[1] * rows
    return examples.ids.numel() * 18 + 5 * trains + 2 * logits + 2 * (FRAMES + 1) * trains


def _trainable(module: nn.Module) -> bool:
    return any(p.requires_grad for p in module.parameters())


def train(
    model: BertEmbedding,
    corpus: Corpus,
    tokenizer: Tokenizer,
    config: TrainConfig = TrainConfig(),  # noqa: B008 - frozen, so one shared default is safe
    progress: Callable[[int, int, tuple[float, ...]], None] | None = None,
    stop: Callable[[], bool] | None = None,
    marks: Collection[int] = (),
) -> TrainResult:
    """Train `model` in place on `corpus`; callers pass a `trainable_copy`.

    Only parameters with `requires_grad` reach the optimizer, so a frozen table stays
    bit-identical. `progress(step, steps, losses)` is called about every 5% of the steps and at
    each step of `marks`, after the model's tables have been brought up to that step, so a
    caller may look at them.
    `stop()` is asked before every step after the first: when it says so, training ends there
    and the result counts the steps taken (a server's time limit per job, or a page that went
    away). The first step always runs, so a time limit that the setting-up used up (a busy
    server) still ends with a step taken, not an empty result.
    """
    start = time.perf_counter()
    if not any(p.requires_grad for p in model.parameters()):
        raise ValueError("every table is frozen: unfreeze at least one to train.")
    examples = _Examples.encode(corpus, tokenizer, model.config)
    before = purity(model, corpus, tokenizer)

    layer = _corpus_layer(model, examples.rows)
    optimizer = torch.optim.Adam([p for p in layer.parameters() if p.requires_grad], lr=config.lr)
    generator = torch.Generator().manual_seed(config.seed)
    report_every = max(1, config.steps // 20)
    losses = []
    for step in range(1, config.steps + 1):
        if stop is not None and step > 1 and stop():
            break
        x, seg, keep, target = examples.sample(config.batch_size, generator)
        loss = masked_token_loss(layer, x, seg, keep, target, config.window)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if progress is not None and (step % report_every == 0 or step == config.steps or step in marks):
            _write_back(model, layer, examples.rows)
            progress(step, config.steps, tuple(losses))
    optimizer.zero_grad(set_to_none=True)  # the shared parts keep no stale gradients
    _write_back(model, layer, examples.rows)

    after = purity(model, corpus, tokenizer)
    return TrainResult(tuple(losses), before, after, time.perf_counter() - start, len(losses))


def masked_token_loss(
    model: BertEmbedding,
    x: torch.Tensor,
    seg: torch.Tensor,
    keep: torch.Tensor,
    target: torch.Tensor,
    window: int,
) -> torch.Tensor:
    """Cross-entropy of predicting each target token from its neighbours' outputs.

    x, seg: (B, L) token and segment ids; keep: (B, L) False on padding; target: (B, L)
    True on the positions to predict. The softmax runs over every row of the model's
    token table (its tied output layer): `train` passes a corpus-sized layer::

        output  = norm(tok_embed[x] + seg_embed[seg] + pos_embed[pos])      # (B, L, d)
        c_i     = mean of output[j] for i - window <= j <= i + window, j != i
        logits  = c_i @ tok_embed.weight.T                                   # tied output layer
        loss    = cross-entropy(logits, x[i])   for every word i (markers are not predicted)

    * The gradient reaches ``tok_embed`` twice (through the context and through the tied
      output layer) and ``pos_embed``, ``seg_embed`` and ``norm`` through LayerNorm of the
      sum, so every freeze toggle changes what happens.
    * Words used in the same contexts are pulled towards the same context vectors, so the
      rows of "cat" and "dog" converge: word2vec's CBOW, with the layer itself as the model.
    * ``[CLS]`` and ``[SEP]`` are context but never targets. They are part of what the layer
      embeds, carrying position and segment like any token, and they give the first and last
      word of a sentence a full window; predicting them would be trivial (they are always in
      the same places) and would only pull their rows about.
    * Consecutive sentences are trained as pairs ``[CLS] A [SEP] B [SEP]`` (`_Examples`), so
      both segment rows learn (a one-row segment table gets single sentences).
    """
    output = model(x, seg)  # (B, L, d)
    context = _context_mean(output, keep, window)  # (B, L, d)
    logits = context[target] @ model.tok_embed.weight.T  # (T, V)
    return F.cross_entropy(logits, x[target])


def _context_mean(output: torch.Tensor, keep: torch.Tensor, window: int) -> torch.Tensor:
    """Mean of the outputs up to `window` positions either side, without the position itself or padding."""
    weight = keep.to(output.dtype).unsqueeze(-1)  # (B, L, 1)
    span = 2 * window + 1
    # sliding sums over zero-padded edges, then take the centre back out
    total = F.pad(output * weight, (0, 0, window, window)).unfold(1, span, 1).sum(-1)  # (B, L, d)
    count = F.pad(weight, (0, 0, window, window)).unfold(1, span, 1).sum(-1)  # (B, L, 1)
    return (total - output * weight) / (count - weight).clamp(min=1)  # (B, L, d)


def purity(model: BertEmbedding, corpus: Corpus, tokenizer: Tokenizer, k: int = 3) -> float | None:
    """Nearest-neighbour category purity of the corpus's category words in the token table.

    For each category word, its k nearest other category words by cosine similarity; purity
    is the fraction of those neighbours in the same category, averaged over the words. 1.0
    means every category gathered on its own; `Corpus.chance_purity` is a table without
    structure. Words the tokenizer splits or does not know have no row of their own and
    are left out. None when there are no categories (or fewer than two words to compare).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a whole number of at least 1, not {k!r}.")
    labels, ids = [], []
    for label, words in enumerate(corpus.categories.values()):
        for word in words:
            id_ = _single_token_id(tokenizer, word)
            if id_ is not None:
                _check_fits(id_, word, model.config)
                labels.append(label)
                ids.append(id_)
    if len(ids) < 2:
        return None
    labels_t = torch.tensor(labels)  # (N,)
    with torch.no_grad():
        vectors = F.normalize(model.tok_embed(torch.tensor(ids)), dim=1)  # (N, d)
        similarity = vectors @ vectors.T  # (N, N)
        similarity.fill_diagonal_(float("-inf"))  # a word is not its own neighbour
        neighbours = similarity.topk(min(k, len(ids) - 1), dim=1).indices  # (N, k)
    same = labels_t[neighbours] == labels_t.unsqueeze(1)  # (N, k)
    return same.float().mean().item()


def _single_token_id(tokenizer: Tokenizer, word: str) -> int | None:
    encoding = tokenizer.encode(word)
    ids = [id_ for id_, special in zip(encoding.ids, encoding.special_mask, strict=True) if not special]
    return ids[0] if len(ids) == 1 and encoding.n_unknown == 0 else None


def _check_fits(id_: int, token: str, config: EmbeddingConfig) -> None:
    rows = config.vocab_size
    if id_ >= rows:
        raise ValueError(
            f"the tokenizer gives {token!r} the id {id_:,}, but this token table has {rows:,} rows; "
            f"use the tokenizer the table was made for, or a table with at least {id_ + 1:,} rows."
        )


@dataclass(frozen=True)
class _Examples:
    """The corpus tokenized once, padded into tensors, with ids renumbered to corpus rows."""

    ids: torch.Tensor  # (N, L) rows of the corpus-sized token table; 0 on padding
    seg: torch.Tensor  # (N, L) segment ids
    keep: torch.Tensor  # (N, L) True on real tokens, False on padding
    target: torch.Tensor  # (N, L) True on the words to predict: not markers, not padding
    lengths: torch.Tensor  # (N,) real tokens in each example
    rows: torch.Tensor  # (V,) the model's token ids the corpus uses, sorted: row r of the corpus table

    @classmethod
    def encode(cls, corpus: Corpus, tokenizer: Tokenizer, config: EmbeddingConfig) -> _Examples:
        sentences = corpus.sentences
        if config.n_segments >= 2:  # consecutive sentences as A and B; an odd last one alone
            pairs = list(zip_longest(sentences[0::2], sentences[1::2], fillvalue=""))
        else:
            pairs = [(sentence, "") for sentence in sentences]
        if not sentences:
            raise ValueError("the corpus has no sentences to train on.")
        encodings = [tokenizer.encode(a, b, maxlen=config.maxlen) for a, b in pairs]
        if all(all(e.special_mask) for e in encodings):
            raise ValueError(
                "the corpus gives no words to train on: its sentences are empty once tokenized, "
                f"or the table's {config.maxlen} positions hold nothing but [CLS] and [SEP]."
            )

        # filled in place, one example per row: no padded Python lists on the way
        shape = (len(encodings), max(len(e) for e in encodings))  # (N, L)
        ids = np.zeros(shape, dtype=np.int64)  # ids of the model's table; 0 on padding
        seg = np.zeros(shape, dtype=np.int64)
        keep = np.zeros(shape, dtype=bool)
        target = np.zeros(shape, dtype=bool)
        lengths = np.fromiter((len(e) for e in encodings), dtype=np.int64, count=len(encodings))  # (N,)
        for row, (e, length) in enumerate(zip(encodings, lengths, strict=True)):
            ids[row, :length] = e.ids
            seg[row, :length] = e.segment_ids
            keep[row, :length] = True
            target[row, :length] = e.special_mask
        np.logical_not(target, out=target, where=keep)  # words, not markers; padding stays False
        ids, keep = torch.from_numpy(ids), torch.from_numpy(keep)
        top = int(ids.max())
        if top >= config.vocab_size:
            token = next(t for e in encodings for t, i in zip(e.tokens, e.ids, strict=True) if i == top)
            _check_fits(top, token, config)
        rows = torch.unique(ids[keep])  # (V,) sorted
        return cls(
            ids=torch.searchsorted(rows, ids) * keep,  # (N, L) renumbered; padding -> 0
            seg=torch.from_numpy(seg),
            keep=keep,
            target=torch.from_numpy(target),
            lengths=torch.from_numpy(lengths),
            rows=rows,
        )

    def sample(
        self, batch_size: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """A batch drawn with replacement, cut to its longest example."""
        pick = torch.randint(len(self.ids), (batch_size,), generator=generator)  # (B,)
        width = int(self.lengths[pick].max())
        return tuple(t[pick, :width] for t in (self.ids, self.seg, self.keep, self.target))  # (B, L) each


def _corpus_layer(model: BertEmbedding, rows: torch.Tensor) -> BertEmbedding:
    """The model's layer with only the token rows the corpus uses; the other parts are shared.

    Position, segment and norm are the model's own modules, so they train in place; the
    token rows are a copy, written back by `_write_back`. A frozen token table gives a
    frozen copy.

    Why corpus-sized: the built-in corpus uses 191 of WordPiece's 30,522 ids (GloVe has
    400,003), and a full softmax would add nothing but "not here" for rows the corpus never
    uses, at the price of logits over every row and Adam state for the whole table: orders of
    magnitude more time per step, and for GloVe gigabytes of logits
    (``bench/training_purity.py`` prints both side by side). Rows the corpus never uses stay
    bit-identical.
    """
    with torch.device("meta"):  # shapes only: no memory, and no draw from torch's global generator
        layer = BertEmbedding.from_config(replace(model.config, vocab_size=len(rows)))
    token = model.tok_embed
    with torch.no_grad():
        values = token(rows)  # (V, d) the corpus's rows as they are now
    layer.tok_embed = nn.Embedding.from_pretrained(values, freeze=not _trainable(token))
    layer.pos_embed, layer.seg_embed, layer.norm = model.pos_embed, model.seg_embed, model.norm
    return layer


def _write_back(model: BertEmbedding, layer: BertEmbedding, rows: torch.Tensor) -> None:
    if not layer.tok_embed.weight.requires_grad:
        return
    values = layer.tok_embed.weight.detach()  # (V, d)
    if isinstance(model.tok_embed, PatchedEmbedding):
        model.tok_embed.write(rows, values)  # only these rows are stored
    else:
        with torch.no_grad():
            model.tok_embed.weight[rows] = values  # (V, d) into (vocab, d)
