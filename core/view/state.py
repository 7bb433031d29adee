"""The one description of what the page shows: a `View`.

Everything a person can set on the page is a field here — the sentences, the table source
and every random-table setting, the position table, the groups and toggles, the plane and
its background, the encoder layer, the freezes, the selected token, the flipped segments, the open tabs, the
tour step, presenter mode, the theme, sound, and the inputs of the two documents' walk-throughs. The page is
rendered from a `View`; a link is a `View` written as a query string (`core.view.share`); a tour
step is a `View` (`core.view.tour`); the server keeps one per browser tab (`core.serving.tabs`). Nothing
else holds a copy, so a link, a tour step and the page cannot disagree.

A `View` is immutable and checks itself when built: an instance always holds allowed values,
so code that receives one trusts it. `View.with_(**changes)` is the way to change it (and
`View.seen_as` the way to put it on another page's screen); each builds a new, checked View.
No torch here: the link code reads and writes views without loading a table.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, fields, replace

from core.view import options
from core.view.fields import (
    BACKGROUND,
    DETAIL,
    LISTING,
    LOOKUP,
    PLANE,
    TABLES,
    Choice,
    Flag,
    Flipped,
    Names,
    Sentence,
    Text,
    Whole,
    declarations,
    declare,
)
from core.view.options import (
    BASES,
    COMPONENTS,
    MAX_SEARCH,
    PANELS,
    PARTS,
    POSITIONS,
    READINGS,
    SOURCES,
    THEMES,
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
    """Everything the page shows, as plain values; the defaults are a fresh page's.

    Each field is declared once, here (`core.view.fields.declare`): its default, its kind (type and
    limits, checked when a View is built), its link parameter, the page's widget that shows it
    and what its change redraws. Links (`core.view.share`), the page (`ui.render`, `ui.page`) and the
    checks below all read these declarations (`FIELDS`); the README's "Adding a view field" says how.
    """

    sentence_a: str = declare(DEFAULT_A, Text("Sentence A"), link="a", widget="sentence_a", redraws={PLANE},
                              typed=True)
    sentence_b: str = declare(DEFAULT_B, Text("Sentence B"), link="b", widget="sentence_b", redraws={PLANE},
                              typed=True)
    # the tables: the random tables' settings are as in `Settings`
    source: str = declare("random", Choice(SOURCES), link="source", widget="source", redraws={TABLES})
    tokenizer: str = declare(Settings.tokenizer, Choice(TOKENIZERS), link="tokenizer", widget="tokenizer",
                             redraws={TABLES})
    vocab_size: int = declare(Settings.vocab_size, Whole(), link="vocab", widget="vocab_size", redraws={TABLES})
    d_model: int = declare(Settings.d_model, Whole(), link="d", widget="d_model", redraws={TABLES})
    maxlen: int = declare(Settings.maxlen, Whole(), link="maxlen", widget="maxlen", redraws={TABLES})
    n_segments: int = declare(Settings.n_segments, Whole(), link="segments", widget="n_segments", redraws={TABLES})
    seed: int = declare(Settings.seed, Whole(), link="seed", widget="seed", redraws={TABLES})
    positions: str = declare("learned", Choice(POSITIONS), link="positions", widget="positions", redraws={TABLES})
    # parts training leaves alone: one checkbox each (Page.freezes)
    frozen: frozenset[str] = declare(frozenset(), Names(PARTS, as_set=True), link="freeze", widget="freezes",
                                     redraws={TABLES})
    # the plane
    groups: tuple[str, ...] = declare(COMPONENTS, Names(COMPONENTS), link="groups", widget="groups",
                                      redraws={PLANE})  # groups plotted, in COMPONENTS order
    labels: bool = declare(True, Flag(), link="labels", widget="labels", redraws={PLANE})  # token text, where it fits
    arrows: bool = declare(False, Flag(), link="arrows", widget="arrows", redraws={PLANE})  # the sum tip to tail
    shift: bool = declare(False, Flag(), link="shift", widget="shift", redraws={PLANE})  # seg[1] − seg[0], B's shift
    basis: str = declare("sentence", Choice(BASES), link="basis", widget="basis", redraws={PLANE, BACKGROUND})
    # vocabulary words drawn faintly behind (0: none); the plot's axes reach their corners
    background: int = declare(0, Whole(), link="background", widget="background", redraws={BACKGROUND, PLANE})
    # the selected token's position in the sequence, and its nearest neighbours listed
    token: int | None = declare(None, Whole(optional=True), link="token", widget="token", redraws={PLANE})
    k: int = declare(10, Whole(), link="k", widget="k", redraws={PLANE})
    # positions given the other segment id, by the flip button: the plot shows them
    flips: frozenset[int] = declare(frozenset(), Flipped(), link="flip", widget=None, redraws={PLANE})
    # 2: the plane; 3: PC1–PC3 in a rotatable view (the 3-D checkbox)
    dims: int = declare(2, Whole(), link="dims", widget="three_d", redraws={PLANE})
    # a word (or a regular expression) looked up in the whole vocabulary and marked in the plot
    search: str = declare("", Text("The search", MAX_SEARCH), link="search", widget="search", redraws={PLANE},
                          typed=True)
    regex: bool = declare(False, Flag(), link="regex", widget="regex", redraws={PLANE}, typed=True)
    # the page: what the main column shows, the plane or a side view (its open tab; in a link
    # `view=`, the parameter shared links already carry), and the open control tab (a first
    # visit opens on the tour)
    shown: str = declare("plane", Choice(VIEWS), link="view", widget="views", redraws={DETAIL, LISTING, LOOKUP})
    panel: str = declare("tour", Choice(PANELS), link="panel", widget="controls", redraws=set())
    # the tour step shown, 1-based (None outside the tour): the plot labels the words its text names
    step: int | None = declare(None, Whole(optional=True), link="step", widget="tour_text", redraws={PLANE})
    presenter: bool = declare(False, Flag(), link="presenter", widget="presenter", redraws={PLANE})  # large type
    # "projector": a dark page and plot in high-contrast colours, at presenter mode's size (`presenting`)
    theme: str = declare("light", Choice(THEMES), link="theme", widget="theme", redraws={PLANE, DETAIL})
    # the page's own screen: a phone's narrow plot gets larger labels, and its LayerNorm chart is
    # stacked. Each page says its own (assets/explorer.js), so no link carries it (SCREEN)
    narrow: bool = declare(False, Flag(), link=None, widget=None, redraws={PLANE, DETAIL})
    # the two documents' walk-throughs; listing_bug: positions = tok_embed(pos), as the listing printed it
    listing_seed: int = declare(0, Whole("seed"), link="listing_seed", widget="listing_seed", redraws={LISTING})
    listing_bug: bool = declare(False, Flag(), link="listing_bug", widget="listing_bug", redraws={LISTING})
    lookup_sentence: str = declare(DOCUMENT_SENTENCE, Sentence("The lookup sentence"), link="lookup",
                                   widget="lookup_sentence", redraws={LOOKUP}, typed=True)
    lookup_dim: int = declare(3, Whole(), link="lookup_dim", widget="lookup_dim", redraws={LOOKUP})
    lookup_grad: bool = declare(True, Flag(), link="lookup_grad", widget="lookup_grad", redraws={LOOKUP})
    # in a class: the round's answers drawn as the group "class" (core/plane/classwords.py)
    answers: bool = declare(True, Flag(), link="answers", widget="answers", redraws={PLANE})
    # the encoder's depth drawn: 0 the embedding layer's output (the page without the encoder), K the
    # tokens after MiniLM-L6's encoder layer K, their paths and the similarity view with them. Only on
    # BERT's own tables (core/plane/layers.py); any other tables show layer 0 and say why
    layer: int = declare(0, Whole(), link="layer", widget="layer", redraws={PLANE, DETAIL})
    # the plane heard (assets/sound.js): a point the keys reach sounds, its height as pitch, its side as
    # stereo place, its group as timbre. A person's way of reading the page, so kept across tour steps (ROOM)
    sound: bool = declare(False, Flag(), link="sound", widget="sound", redraws=set())
    # how the encoder reads the sentences (options.READINGS): the pair as one sequence, where each token
    # takes in both sentences, or each sentence on its own, where a word takes in its own sentence alone
    reading: str = declare("pair", Choice(READINGS), link="read", widget="reading", redraws={PLANE, DETAIL})

    def __post_init__(self) -> None:
        for name, declared in FIELDS.items():  # each value checked once, as its declaration says
            self._set(name, declared.kind.check(getattr(self, name), name))

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    def with_(self, **changes) -> View:
        """A new view with `changes`; raises `Refused` (and changes nothing) if one is not allowed.
        Only the changed fields are checked (the others were when this view was built): a keystroke
        makes views of one new sentence, and checking all of a view's fields each time was a tenth
        of its server time."""
        unknown = [name for name in changes if name not in _FIELDS]
        if unknown:
            raise Refused(f"a view has no setting {unknown[0]!r}.")
        checked = {name: FIELDS[name].kind.check(value, name) for name, value in changes.items()}
        new = copy.copy(self)
        for name, value in checked.items():
            new._set(name, value)
        return new

    @property
    def settings(self) -> Settings:
        return Settings(**{name: getattr(self, name) for name in SETTINGS_FIELDS})

    def tables(self) -> tuple:
        """What decides the tables: views that agree on this share one session's tables."""
        return (self.source, self.settings, self.positions)

    @property
    def presenting(self) -> bool:
        """Drawn at presenter size: presenter mode, or the projector theme, which implies it."""
        return self.presenter or self.theme == "projector"

    def in_room_of(self, other: View) -> View:
        """This view as `other`'s room sees it (`ROOM`): a tour step or a class's lesson changes what
        is shown, never how the lecture hall reads it."""
        return replace(self, **{name: getattr(other, name) for name in ROOM})

    def seen_as(self, other: View) -> View:
        """This view on `other`'s screen: a link or a tour step replaces what the page shows,
        never the screen it is shown on."""
        return replace(self, **{name: getattr(other, name) for name in SCREEN})

    def flipped(self) -> View:
        """The selected token given the other segment id, or given back its own; `Refused` when
        no token is selected."""
        if self.token is None:
            raise Refused("Select a token first (click a point, or pick one from the list), then flip its segment.")
        return self.with_(flips=self.flips ^ {self.token})

    def on_listing_layer(self) -> View:
        """The first listing's layer (vocab 10, d_model 2, random) on the second document's sentence."""
        settings = {name: getattr(LISTING_SETTINGS, name) for name in SETTINGS_FIELDS}
        return self.with_(source="random", sentence_a=DOCUMENT_SENTENCE, sentence_b="", **settings)

    def differs(self, other: View) -> tuple[str, ...]:
        """The fields whose values differ between two views, in field order."""
        return tuple(name for name in _FIELDS if getattr(self, name) != getattr(other, name))


FIELDS = declarations(View)  # name -> its declaration (core.view.fields.Field), in field order
_FIELDS = tuple(f.name for f in fields(View))  # every field, declared or not (tests/test_fields.py checks)
SCREEN = tuple(name for name, declared in FIELDS.items() if declared.link is None)  # the screen's: never in a link
# how a lecture hall (or one person in it) reads the page: in a link, but no part of a lesson or a tour step
ROOM = ("presenter", "theme", "sound")
