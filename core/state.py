"""The one description of what the page shows: a `View`.

Everything a person can set on the page is a field here — the sentences, the table source
and every random-table setting, the position table, the groups and toggles, the plane and
its background, the freezes, the selected token, the flipped segments, the open tabs, the
tour step, presenter mode, and the inputs of the two documents' walk-throughs. The page is
rendered from a `View`; a link is a `View` written as a query string (`core.share`); a tour
step is a `View` (`core.tour`); the server keeps one per browser tab (`core.live`). Nothing
else holds a copy, so a link, a tour step and the page cannot disagree.

A `View` is immutable and checks itself when built: an instance always holds allowed values,
so code that receives one trusts it. `View.with_(**changes)` is the one way to change it.
No torch here: the link code reads and writes views without loading a table.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from core import options
from core.options import (
    BASES,
    COMPONENTS,
    MAX_FLIPS,
    MAX_SEARCH,
    PANELS,
    PARTS,
    POSITIONS,
    SOURCES,
    TOKENIZERS,
    VIEWS,
    Refused,
    default_pair,
)

WORDPIECE_VOCAB_SIZE = 30522
DOCUMENT_SENTENCE = "i am new to PyTorch i am having fun"  # the second document's sentence
DEFAULT_A, DEFAULT_B = default_pair()


@dataclass(frozen=True)
class Settings:
    """What a randomly initialised embedding layer looks like.

    The defaults give a first picture with some structure to see: 32 dimensions are
    enough for the five groups to separate, few enough for LayerNorm's effect to show.
    """

    tokenizer: str = "wordpiece"  # "wordpiece" (BERT's 30,522 pieces) or "word" (Counter vocabulary)
    vocab_size: int = 1000  # word-level only: most frequent words kept, specials included
    d_model: int = 32  # width of every vector
    maxlen: int = 512  # positions in the table: longer input is cut
    n_segments: int = 2  # segment rows: sentence A and sentence B
    seed: int = 0  # makes every random table reproducible; random positions use their own stream

    def __post_init__(self) -> None:
        options.choice(self.tokenizer, "tokenizer", TOKENIZERS)
        for name in ("vocab_size", "d_model", "maxlen", "n_segments", "seed"):
            object.__setattr__(self, name, options.whole(getattr(self, name), name))

    @property
    def table_rows(self) -> int:
        """Rows of the token table: fixed by WordPiece, chosen by the user for words."""
        return WORDPIECE_VOCAB_SIZE if self.tokenizer == "wordpiece" else self.vocab_size

    @property
    def table_bytes(self) -> int:
        """Bytes of float32 the random layer of these settings holds: its four tables."""
        rows = self.table_rows + self.maxlen + self.n_segments + 2  # + LayerNorm's γ and β
        return 4 * rows * self.d_model


# the first listing's layer: a 10-word vocabulary in two dimensions
LISTING_SETTINGS = Settings(tokenizer="word", vocab_size=10, d_model=2)
SETTINGS_FIELDS = tuple(f.name for f in fields(Settings))


@dataclass(frozen=True)
class View:
    """Everything the page shows, as plain values; the defaults are a fresh page's."""

    sentence_a: str = DEFAULT_A
    sentence_b: str = DEFAULT_B
    # the tables
    source: str = "random"  # a key of SOURCES
    tokenizer: str = Settings.tokenizer  # the random tables' settings, as in `Settings`
    vocab_size: int = Settings.vocab_size
    d_model: int = Settings.d_model
    maxlen: int = Settings.maxlen
    n_segments: int = Settings.n_segments
    seed: int = Settings.seed
    positions: str = "learned"  # a key of POSITIONS
    frozen: frozenset[str] = frozenset()  # parts training leaves alone
    # the plane
    groups: tuple[str, ...] = COMPONENTS  # groups plotted, in COMPONENTS order
    labels: bool = True  # token text beside points, where it fits
    arrows: bool = False  # the addition path tip to tail
    shift: bool = False  # the one vector seg[1] − seg[0] that B adds
    basis: str = "sentence"  # a key of BASES
    background: int = 0  # vocabulary words drawn faintly behind; 0 draws none
    token: int | None = None  # the selected token's position in the sequence
    k: int = 10  # its nearest neighbours listed
    flips: frozenset[int] = frozenset()  # positions given the other segment id
    dims: int = 2  # 2: the plane; 3: PC1–PC3 in a rotatable view
    search: str = ""  # a word (or pattern) looked up in the whole vocabulary and marked in the plot
    regex: bool = False  # the search is a regular expression
    # the page
    view: str = "plane"  # the open main tab, a key of VIEWS
    panel: str = "tour"  # the open control tab, a key of PANELS: a first visit opens on the tour
    step: int | None = None  # the tour step shown, 1-based; None outside the tour
    presenter: bool = False  # large type for a projector
    # the page's own screen: a phone's narrow plot gets larger labels, fitted to its width. Each
    # page says its own (assets/explorer.js), so no link carries it (SCREEN)
    narrow: bool = False
    # the two documents' walk-throughs
    listing_seed: int = 0
    listing_bug: bool = False  # positions = tok_embed(pos), as the listing printed it
    lookup_sentence: str = DOCUMENT_SENTENCE
    lookup_dim: int = 3
    lookup_grad: bool = True

    def __post_init__(self) -> None:
        for name in ("sentence_a", "sentence_b"):
            self._set(name, options.text(getattr(self, name), _LABELS[name]))
        self._set("lookup_sentence", options.lookup_sentence(self.lookup_sentence))
        self._set("search", options.text(self.search, "The search", MAX_SEARCH))
        options.choice(self.source, "source", SOURCES)
        settings = self.settings  # checks the random-table settings (raises if one is not allowed)
        for name in SETTINGS_FIELDS:
            self._set(name, getattr(settings, name))  # as Settings normalised them: 32.0 -> 32
        for name in ("k", "background", "dims"):
            self._set(name, options.whole(getattr(self, name), name))
        self._set("listing_seed", options.whole(self.listing_seed, "seed"))
        self._set("lookup_dim", options.whole(self.lookup_dim, "lookup_dim"))
        for name in ("token", "step"):
            if getattr(self, name) is not None:
                self._set(name, options.whole(getattr(self, name), name))
        options.choice(self.positions, "positions", POSITIONS)
        options.choice(self.basis, "basis", BASES)
        options.choice(self.view, "view", VIEWS)
        options.choice(self.panel, "panel", PANELS)
        self._set("groups", options.subset(self.groups, "groups", COMPONENTS))
        self._set("frozen", frozenset(options.subset(self.frozen, "frozen", PARTS)))
        for name in ("labels", "arrows", "shift", "presenter", "narrow", "listing_bug", "lookup_grad", "regex"):
            options.flag(getattr(self, name), name)
        flips = self.flips
        if isinstance(flips, str) or not isinstance(flips, list | tuple | set | frozenset):
            raise Refused(f"flips must be a set of token positions, not {type(flips).__name__}.")
        if len(flips) > MAX_FLIPS:
            raise Refused(f"{len(flips):,} flipped tokens; at most {MAX_FLIPS} can be flipped at once.")
        self._set("flips", frozenset(options.whole(i, "token") for i in flips))

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def with_(self, **changes) -> View:
        """A new view with `changes`; raises `Refused` (and changes nothing) if one is not allowed."""
        unknown = [name for name in changes if name not in _FIELDS]
        if unknown:
            raise Refused(f"a view has no setting {unknown[0]!r}.")
        return replace(self, **changes)

    @property
    def settings(self) -> Settings:
        return Settings(**{name: getattr(self, name) for name in SETTINGS_FIELDS})

    def tables(self) -> tuple:
        """What decides the tables: views that agree on this share one session's tables."""
        return (self.source, self.settings, self.positions)

    def seen_as(self, other: View) -> View:
        """This view on `other`'s screen: a link or a tour step replaces what the page shows,
        never the screen it is shown on."""
        return replace(self, **{name: getattr(other, name) for name in SCREEN})

    def differs(self, other: View) -> tuple[str, ...]:
        """The fields whose values differ between two views, in field order."""
        return tuple(name for name in _FIELDS if getattr(self, name) != getattr(other, name))


_FIELDS = tuple(f.name for f in fields(View))
SCREEN = ("narrow",)  # the view fields the page's screen decides: never in a link
_LABELS = {"sentence_a": "Sentence A", "sentence_b": "Sentence B", "lookup_sentence": "The lookup sentence"}
