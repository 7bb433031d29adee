"""Every choice the page offers and every limit it enforces, in one place.

Page, API, links and the tour all read these names and ranges, so a limit cannot differ
between two doors into the app: a text box's `max_length` and the server's check come from
the same number. The module imports nothing heavy (no torch, no gradio), so the link code
and the view description can be read and tested on their own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

ASSETS = Path(__file__).resolve().parents[2] / "assets"

# the five vectors the explorer shows for each token, in the order they are built
COMPONENTS = ("token", "position", "segment", "sum", "output")
# the four parts of the layer that training can change or leave frozen
PARTS = ("token", "position", "segment", "norm")

SOURCES = MappingProxyType({
    "random": "Random (seeded N(0, 1))",
    "bert": "BERT (MiniLM-L6-H384, uncased)",
    "glove": "GloVe 6B 50-d",
    "upload": "Uploaded file",
})
# a link cannot carry an uploaded file, so "upload" is not a source a link may name
SHAREABLE_SOURCES = tuple(key for key in SOURCES if key != "upload")
POSITIONS = MappingProxyType({
    "learned": "the source's own (learned; random where it has none, as GloVe)",
    "random": "random N(0, σ) (drawn from its own seed)",
    "sinusoidal": "sinusoidal (fixed, never trained)",
})
BASES = MappingProxyType({
    "sentence": "this sentence",
    "vocabulary": "whole vocabulary",
    "frozen": "frozen (keep while typing)",
})
# how the encoder reads the two sentences (core/plane/layers.py): as the page's one sequence, or each on its own
# as a sentence encoder reads one sentence ([CLS] sentence [SEP]): only then does each take in its own context alone
READINGS = MappingProxyType({"pair": "the pair, as one sequence", "apart": "each sentence on its own"})
TOKENIZERS = MappingProxyType({"wordpiece": "WordPiece (BERT, 30,522 pieces)", "word": "Word-level (Counter)"})
CORPORA = MappingProxyType({"builtin": "Built-in corpus: 6 word categories", "mine": "My sentences A and B"})
# the main column's tabs: the plane and the side views beside it
VIEWS = MappingProxyType({
    "plane": "Plane",
    "positions": "Positions",
    "layernorm": "LayerNorm",
    "similarity": "Similarity",
    "listing": "The listing",
    "lookup": "Lookup table",
    "code": "Code",
})
DETAILS = ("positions", "layernorm", "similarity")  # side views drawn from the typed sentences
# the control column's tabs
PANELS = MappingProxyType({"tour": "Tour", "view": "View", "tables": "Tables", "train": "Train"})
# how the page is drawn: the light page, or a dark one for a projector (core/drawing/palette.py), its
# plot dark too and its type at presenter size
THEMES = MappingProxyType({"light": "Light", "projector": "Projector: dark, high-contrast colours, large type"})

TOUR_STEPS = 8  # core.view.tour.STEPS has this many (a test checks they agree)
# MiniLM-L6's encoder layers (core.model.checkpoints.bert_encoder has this many: a test checks they agree), and
# what the page says of the model wherever its layers show
ENCODER_LAYERS = 6
ENCODER_MODEL = "MiniLM-L6: a 6-layer BERT distilled and tuned for sentence similarity (it has no [MASK] head)"

# whole-number inputs: inclusive ranges; every message quotes these
LIMITS = MappingProxyType({
    # random tables: together these bound one random layer to 128 MiB (core.tables.presets.MAX_TABLE_BYTES):
    # the largest, 30,522 rows at width 1,024 with 2,048 positions, is 127.2 MiB of float32. A word
    # vocabulary is capped at WordPiece's size: its words come from typed text, never that many
    "vocab_size": (4, 30_522),
    "d_model": (1, 1024),
    "maxlen": (3, 2048),
    "n_segments": (1, 8),
    "seed": (0, 2**31 - 1),  # torch's generators take 64 bits; one range for every seed on the page
    "k": (0, 50),  # nearest neighbours listed (and starred) for the selected token; 0: none
    # vocabulary words behind the tokens: enough for a lecture's picture; every visitor of a
    # link draws them, so a link cannot ask a browser for all 400,003 of GloVe's
    "background": (0, 5_000),
    "token": (0, 2047),  # a selected token's position: the longest table allowed
    "step": (1, TOUR_STEPS),
    "steps": (1, 2000),  # training steps in one press of Train
    "lookup_dim": (1, 16),  # the lookup walk-through's table width
    "dims": (2, 3),  # the plane, or the rotatable PC1–PC3 view
    "layer": (0, ENCODER_LAYERS),  # 0: the embedding layer's output; K: after encoder layer K (BERT's tables only)
})

MAX_TEXT = 10_000  # characters in one sentence: enough to fill 2,048 positions, refused beyond
MAX_SEARCH = 100  # characters of a vocabulary search
MAX_LOOKUP_WORDS = 200  # the lookup walk-through's sentence: enough for a paragraph, every id printed
MAX_LOOKUP_CHARS = 2_000  # so a single enormous "word" cannot flood the printout
MAX_QUERY = 32_000  # characters of a view's query string the page keeps in its address bar (F5, Back)
MAX_PARAMETERS = 64  # a link's parameters read: one with more is cut, and each ignored one costs a note
MAX_FLIPS = 64  # tokens given the other segment at once

# the work one vocabulary search may cause (core/plane/search.py): a query of at most MAX_SEARCH
# characters collects at most MAX_HITS matches and never tries a word longer than MAX_WORD; a
# regular expression has at most MAX_REPEATS repeats, is tried on words of at most MAX_REGEX_WORD
# characters (so at most about MAX_REGEX_WORD ** MAX_REPEATS steps a word) and stops scanning
# after REGEX_SECONDS
MAX_HITS = 50  # matches returned at most
MAX_WORD = 64  # vocabulary entries longer than this are not searched (GloVe has a few odd long ones)
MAX_REPEATS = 3  # *, +, ?, {m,n} in one pattern: "colou?r", "un.*able", "[a-z]+ing" need one
MAX_REGEX_WORD = 32  # a pattern is tried on words up to this long: with 3 repeats, at most ~32³ steps each
REGEX_SECONDS = 1.0  # a pattern's scan of the vocabulary stops after this long

# how much text one training run reads (core/model/training.py). A corpus is tokenized and padded into
# tensors once per run, so its size sets the run's time and memory before the first step; the
# built-in corpus has 608 sentences of at most 45 characters, 18 KB, far inside these
MAX_CORPUS_CHARS = 100_000  # the whole text, before it is split into sentences
MAX_SENTENCES = 2_000
MAX_SENTENCE_CHARS = 500  # about a paragraph: a pair of them fits the 512 positions of BERT's table

# what may wait for the server at once, on every line together: the page's route (ui/route.py), on
# whose lines a class's routes, a link's script and the public API take their turns too, one account
# per visitor (ui/admission.py). A call's work is counted in short updates: 1, plus 1 per WORK_BYTES
# bytes of its body (two sentences at MAX_TEXT: about 21), since an update's cost grows with its text
# up to the table's positions, and a body's size is known before it is read
WORK_BYTES = 1_000
# calls waiting, every visitor together: past it, a call from an address that has its share of
# them already is told "try again in a minute" (an address with less is still taken)
WAITING_CALLS = 1_000
# work waiting from one client address: a class of a hundred behind one school address, each page
# with two short updates waiting, fits with room; a flood of long calls gets a dozen places
ADDRESS_WORK = 300
TAB_CALLS = 4  # calls waiting from one page (its live updates replace each other besides)
# pages one class seats, and so the pages one network may open from a running class's link
MAX_FOLLOWERS = int(os.environ.get("EXPLORER_CLASS_FOLLOWERS", "500"))
# answers one address's pages have not yet read, beyond which its next call waits: a similarity
# view of 2,048 tokens is about 31 MiB, a keystroke's answer at 512 tokens about 80 KB
ANSWER_BYTES = 64 * 2**20
# an answer whose reader takes nothing more of it for this long is dropped and its connection closed
SEND_SECONDS = 20.0


def default_pair() -> tuple[str, str]:
    """The page's first example pair: what a fresh page and a link without sentences show."""
    a, b = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))[0]
    return a, b


class Refused(ValueError):
    """A value outside what the app allows; its message says what was wrong and what is allowed."""


def whole(value: object, name: str) -> int:
    """A whole number within LIMITS[name]; number boxes send 3.0, links send "3".

    The one whole-number check of the app: every boundary (page, API, link) calls it.
    """
    low, high = LIMITS[name]
    label = name
    if isinstance(value, str):
        text = value.strip()
        if not (text.lstrip("+-").isascii() and text.lstrip("+-").isdigit() and len(text) <= 30):
            raise Refused(f"{label} must be a whole number from {low:,} to {high:,}, not {_shown(value)}.")
        value = int(text)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(f"{label} must be a whole number from {low:,} to {high:,}, not {_shown(value)}.")
    if not low <= value <= high:
        raise Refused(f"{label} is {value:,}; allowed values are {low:,} to {high:,}.")
    return value


def text(value: object, name: str, limit: int = MAX_TEXT) -> str:
    """A piece of text no longer than `limit` characters, checked before any work is done on it."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Refused(f"{name} must be text, not {type(value).__name__}.")
    if len(value) > limit:
        raise Refused(f"{name} has {len(value):,} characters; at most {limit:,} are allowed.")
    return value


def lookup_sentence(value: object) -> str:
    """The second document's sentence: a few words to count and look up, never empty."""
    if isinstance(value, str) and len(value) > MAX_LOOKUP_CHARS:
        raise Refused(f"The sentence has {len(value):,} characters; up to {MAX_LOOKUP_CHARS:,} are allowed.")
    sentence = text(value, "The lookup sentence")
    if not sentence.strip():
        raise Refused("The sentence is empty: type at least one word.")
    words = len(sentence.split())
    if words > MAX_LOOKUP_WORDS:
        raise Refused(f"The sentence has {words} words; up to {MAX_LOOKUP_WORDS} are allowed.")
    return sentence


def choice(value: object, name: str, allowed) -> str:
    """One of `allowed`'s keys."""
    if not isinstance(value, str) or value not in allowed:
        raise Refused(f"{name} must be one of {', '.join(allowed)}, not {_shown(value)}.")
    return value


def subset(values: object, name: str, allowed) -> tuple[str, ...]:
    """Names from `allowed`, in its order, whatever order or repeats they came in."""
    if values is None:
        values = ()
    if isinstance(values, str) or not isinstance(values, list | tuple | set | frozenset):
        raise Refused(f"{name} must be a list of names from {', '.join(allowed)}, not {_shown(values)}.")
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise Refused(f"{name} may hold only {', '.join(allowed)}, not {_shown(unknown[0])}.")
    return tuple(v for v in allowed if v in values)


def flipped(values: object, name: str) -> frozenset[int]:
    """Token positions (each a `whole` number within LIMITS["token"]), at most MAX_FLIPS of them."""
    if isinstance(values, str) or not isinstance(values, list | tuple | set | frozenset):
        raise Refused(f"{name} must be a set of token positions, not {type(values).__name__}.")
    if len(values) > MAX_FLIPS:
        raise Refused(f"{len(values):,} flipped tokens; at most {MAX_FLIPS} can be flipped at once.")
    return frozenset(whole(i, "token") for i in values)


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise Refused(f"{name} must be true or false, not {_shown(value)}.")
    return value


def _shown(value: object, limit: int = 40) -> str:
    """A value quoted back to the user, short enough for a sentence."""
    shown = repr(value)
    return shown if len(shown) <= limit else shown[:limit] + "…"


# --- kinds: a view field's type and limits, as the one check of this module it takes ---


class Kind:
    """What values a field takes. `check` returns the value as the View keeps it (3.0 -> 3, a
    list of names -> a tuple in canonical order) or raises `Refused` saying what is allowed."""

    def check(self, value: object, name: str) -> object:
        raise NotImplementedError


@dataclass(frozen=True)
class Text(Kind):
    """Text of at most `limit` characters; `label` names it in messages ("Sentence A has …")."""

    label: str
    limit: int = MAX_TEXT

    def check(self, value: object, name: str) -> str:
        return text(value, self.label, self.limit)


@dataclass(frozen=True)
class Sentence(Text):
    """The lookup walk-through's sentence: a few words, never empty (`lookup_sentence`).
    A link reads it as text of up to `limit` characters; the View refuses it beyond its own bounds."""

    def check(self, value: object, name: str) -> str:
        return lookup_sentence(value)


@dataclass(frozen=True)
class Whole(Kind):
    """A whole number within `LIMITS[limit]` (the field's own name when None); `optional`:
    None too (no token selected, no tour step)."""

    limit: str | None = None
    optional: bool = False

    def check(self, value: object, name: str) -> int | None:
        if self.optional and value is None:
            return None
        return whole(value, self.limit or name)


@dataclass(frozen=True)
class Choice(Kind):
    """One key of `allowed` (a mapping of `core.view.options`: key -> label)."""

    allowed: Mapping[str, str]

    def check(self, value: object, name: str) -> str:
        return choice(value, name, self.allowed)


@dataclass(frozen=True)
class Names(Kind):
    """Names from `allowed`, kept in its order (a frozenset when `as_set`)."""

    allowed: tuple[str, ...]
    as_set: bool = False

    def check(self, value: object, name: str) -> tuple[str, ...] | frozenset[str]:
        chosen = subset(value, name, self.allowed)
        return frozenset(chosen) if self.as_set else chosen


@dataclass(frozen=True)
class Flag(Kind):
    """True or false, nothing else (1 is not a flag)."""

    def check(self, value: object, name: str) -> bool:
        return flag(value, name)


@dataclass(frozen=True)
class Flipped(Kind):
    """A set of token positions, at most `MAX_FLIPS` of them."""

    def check(self, value: object, name: str) -> frozenset[int]:
        return flipped(value, name)
