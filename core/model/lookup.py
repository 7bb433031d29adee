"""The second document's walk-through, run exactly: nn.Embedding is a lookup table.

*nn.Embedding is a lookup table* builds a vocabulary with ``collections.Counter`` from
"i am new to PyTorch i am having fun" (split on whitespace, case kept), most frequent word
first, so "i" is 0 and "am" is 1; encodes the sentence as ids; and looks them up in a
randomly initialised ``nn.Embedding``. The points it makes, and that this module measures:

* a lookup returns the table's rows, so a word always gets the same vector;
* the rows start as N(0, 1) noise, so related and unrelated words are equally (un)alike:
  their mean |cosine| is what random directions give (``chance_abs_cosine``), 0.5 in 3-d;
* ``weight.requires_grad = False`` freezes the table: a gradient step changes nothing;
* ``nn.Embedding.from_pretrained(weight)`` loads given vectors, frozen by default.

This vocabulary is the document's, not the app's word-level tokenizer's (`walk_through`).
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from core.model.listing import read_only
from core.model.tokenizer import _check_text
from core.view.options import LIMITS, lookup_sentence

DOCUMENT_SENTENCE = "i am new to PyTorch i am having fun"
PRETRAINED = ((0.1, 0.2, 0.3), (0.4, 0.5, 0.6))  # the document's two pretrained vectors
PRETRAINED_IDS = (0, 1)  # the ids it looks up in them

MAX_DIM = LIMITS["lookup_dim"][1]  # the page's own limit: a link, the box and the API say the same
MAX_SEED = LIMITS["seed"][1]  # the page's one range for every seed
LEARNING_RATE = 0.1


@dataclass(frozen=True, eq=False)  # eq=False: comparing numpy fields with == is ambiguous
class Walkthrough:
    """Every step of the document's walk-through, with the numbers it printed."""

    sentence: str
    dim: int
    seed: int
    counts: tuple[tuple[str, int, int], ...]  # (word, count, id), most frequent first
    word_to_id: dict[str, int]
    ids: tuple[int, ...]  # the sentence, one id per word
    vocab_size: int
    table: np.ndarray  # (V, dim) the randomly initialised nn.Embedding weight
    looked_up: np.ndarray  # (len(ids), dim); row k is table[ids[k]]
    same_word_rows_equal: bool  # every occurrence of a word got the identical vector
    mean_abs_cosine: float | None  # between distinct words' vectors; None with one word
    chance_abs_cosine: float  # what two unrelated random directions in dim dimensions average
    # one SGD step on the looked-up vectors, with weight.requires_grad = requires_grad
    requires_grad: bool
    grad_is_none: bool
    rows_changed: tuple[int, ...]  # ids whose row the step changed; () when frozen
    trained_table: np.ndarray  # (V, dim) the table after the step
    # nn.Embedding.from_pretrained(torch.tensor(PRETRAINED))(torch.LongTensor([0, 1]))
    pretrained_lookup: np.ndarray  # (2, 3)
    pretrained_frozen: bool  # from_pretrained freezes by default
    code: str  # the document's snippets, with this run's arguments
    printout: str  # what that code prints, in torch's own formatting


def walk_through(
    sentence: str = DOCUMENT_SENTENCE, dim: int = 3, seed: int = 0, requires_grad: bool = True
) -> Walkthrough:
    """Do the document's walk-through on ``sentence``, the document's way.

    The result also holds the document's snippets as source (``code``) and what they print
    (``printout``), so the page can show both. The table comes from a private generator
    seeded with ``seed``, which gives the numbers ``nn.Embedding`` draws after
    ``torch.manual_seed(seed)`` (the seed the shown code uses) without touching torch's global
    random state. Words are split on whitespace and keep their case and punctuation, as in the
    document: this vocabulary is the document's, not the app's word-level tokenizer's.

    The gradient step minimises the sum of squares of the looked-up vectors: its gradient
    for row i is 2 * count_i * row_i, non-zero for every row the sentence used, so a
    trainable table visibly moves and a frozen one visibly does not.
    """
    sentence = _check_sentence(sentence)
    dim = _check_whole(dim, "dim", 1, MAX_DIM, "the width of each vector")
    seed = _check_whole(seed, "seed", 0, MAX_SEED, "any seed gives a different random table")
    requires_grad = bool(requires_grad)
    generator = torch.Generator().manual_seed(seed)

    # the vocabulary: most_common sorts by count and keeps first appearance among ties
    words = sentence.split()
    counter = Counter(words)
    vocab = [word for word, _ in counter.most_common()]
    word_to_id = {word: i for i, word in enumerate(vocab)}
    ids = torch.tensor([word_to_id[word] for word in words])  # (n,)

    # nn.Embedding's own init is N(0, 1); drawing it from a private generator gives the same
    # numbers as after torch.manual_seed(seed) and leaves the global state alone
    weight = torch.randn(len(vocab), dim, generator=generator)  # (V, dim)
    embeds = nn.Embedding(len(vocab), dim, _weight=weight)
    table_repr = str(embeds.weight)
    table = read_only(embeds.weight.detach().numpy())  # (V, dim)
    vectors = embeds(ids)  # (n, dim)
    vectors_repr = str(vectors)
    looked_up = read_only(vectors.detach().numpy())  # (n, dim)

    # freeze (or not) and take one gradient step; a frozen table gives a loss with no
    # gradient path, and calling backward on it would raise, so the step is skipped
    embeds.weight.requires_grad = requires_grad
    requires_grad_repr = str(embeds.weight.requires_grad)
    optimizer = torch.optim.SGD(embeds.parameters(), lr=LEARNING_RATE)
    loss = embeds(ids).pow(2).sum()  # ()
    if loss.requires_grad:
        loss.backward()
        optimizer.step()
    grad = embeds.weight.grad
    grad_repr = str(grad)
    trained_repr = str(embeds.weight)
    trained_table = read_only(embeds.weight.detach().numpy())  # (V, dim)
    rows_changed = tuple(i for i in range(len(vocab)) if not np.array_equal(table[i], trained_table[i]))

    pretrained = nn.Embedding.from_pretrained(torch.tensor(PRETRAINED))
    pretrained_vectors = pretrained(torch.LongTensor(list(PRETRAINED_IDS)))  # (2, 3)

    id_list = ids.tolist()
    printout = "\n".join(
        [
            str(word_to_id),
            str(ids),
            table_repr,
            vectors_repr,
            requires_grad_repr,
            grad_repr,
            trained_repr,
            str(pretrained_vectors),
            str(pretrained.weight.requires_grad),
        ]
    )
    return Walkthrough(
        sentence=sentence,
        dim=dim,
        seed=seed,
        counts=tuple((word, counter[word], word_to_id[word]) for word in vocab),
        word_to_id=word_to_id,
        ids=tuple(id_list),
        vocab_size=len(vocab),
        table=table,
        looked_up=looked_up,
        same_word_rows_equal=_same_word_rows_equal(words, looked_up),
        mean_abs_cosine=_mean_abs_cosine(table),
        chance_abs_cosine=chance_abs_cosine(dim),
        requires_grad=requires_grad,
        grad_is_none=grad is None,
        rows_changed=rows_changed,
        trained_table=trained_table,
        pretrained_lookup=read_only(pretrained_vectors.numpy()),
        pretrained_frozen=not pretrained.weight.requires_grad,
        code=_code(sentence, dim, seed, requires_grad),
        printout=printout,
    )


def _same_word_rows_equal(words: list[str], looked_up: np.ndarray) -> bool:
    """Every occurrence of a word was given exactly the vector of its first occurrence."""
    first: dict[str, int] = {}
    for k, word in enumerate(words):
        first.setdefault(word, k)
    return all(np.array_equal(looked_up[k], looked_up[first[word]]) for k, word in enumerate(words))


def chance_abs_cosine(dim: int) -> float:
    """E|cos| between two independent random directions in ``dim`` dimensions.

    Unrelated words are not at |cos| = 0 in a small table: in 3-d two random directions
    average |cos| = 0.5 (in 1-d, 1.0), shrinking like sqrt(2 / (pi * dim)) as dim grows.
    The mean |cosine| of a random table should be compared with this, not with 0.
    """
    return math.exp(math.lgamma(dim / 2) - math.lgamma((dim + 1) / 2)) / math.sqrt(math.pi)


def _mean_abs_cosine(table: np.ndarray) -> float | None:
    """Mean |cosine| over pairs of distinct rows: how alike unrelated random vectors look."""
    if len(table) < 2:
        return None
    rows = table.astype(np.float64)  # (V, dim)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)  # (V, 1)
    unit = rows / np.maximum(norms, np.finfo(np.float64).tiny)  # (V, dim)
    cosines = unit @ unit.T  # (V, V)
    upper = np.triu_indices(len(table), k=1)
    return float(np.abs(cosines[upper]).mean())


def _code(sentence: str, dim: int, seed: int, requires_grad: bool) -> str:
    """The document's snippets as one script that prints exactly ``printout``."""
    return f"""\
from collections import Counter

import torch
from torch import nn

sentence = {sentence!r}
words = sentence.split()
counts = Counter(words)
vocab = [word for word, count in counts.most_common()]
word_to_id = {{word: i for i, word in enumerate(vocab)}}
print(word_to_id)

ids = torch.tensor([word_to_id[word] for word in words])
print(ids)

torch.manual_seed({seed})
embeds = nn.Embedding(len(vocab), {dim})
print(embeds.weight)

vectors = embeds(ids)
print(vectors)

embeds.weight.requires_grad = {requires_grad}
print(embeds.weight.requires_grad)

optimizer = torch.optim.SGD(embeds.parameters(), lr={LEARNING_RATE})
loss = embeds(ids).pow(2).sum()
if loss.requires_grad:  # a frozen table leaves nothing to differentiate
    loss.backward()
    optimizer.step()
print(embeds.weight.grad)
print(embeds.weight)

weight = torch.FloatTensor({[list(row) for row in PRETRAINED]})
pretrained = nn.Embedding.from_pretrained(weight)
print(pretrained(torch.LongTensor({list(PRETRAINED_IDS)})))
print(pretrained.weight.requires_grad)
"""


def _check_sentence(sentence: object) -> str:
    """The limits of `core.view.options`, which a `View` checks too: a link cannot ask for more."""
    return lookup_sentence(_check_text(sentence, "the sentence"))


def _check_whole(value: object, name: str, low: int, high: int, what: str) -> int:
    try:
        number = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        number = None
    if number is None or not low <= number <= high:
        raise ValueError(f"{name} must be a whole number from {low} to {high} ({what}), not {value!r}.")
    return number
