"""The guided tour: seven steps through the embedding layer and one past it, for a lecture or a first visit.

Each step *is* a `View`: pressing *Next* shows exactly that view, and so does the link
``?step=N`` (`core.view.share` reads a step as the base its other parameters change). A step sets
every input and toggle at once, so a lecturer who wandered off between steps is put back on
the path. The steps follow the order the layer is built in — tokens, the lookup, positions,
segments, LayerNorm — and reach the two documents' closing point: relatedness between
words is something a table learns, not something a lookup has. The last looks past the
embedding layer, into the encoder: context moves one word's two uses apart.

Every step keeps the Tour panel open, so its text and *Next*/*Previous* stay in view; each
text claims only what its view shows: a distance is one on the plot as drawn, or said to hold in
the full space, and every word or position it names in italics or code is labelled on its plot
(tests/test_tour_claims.py checks each claim against the coordinates the page draws).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.view.options import TOUR_STEPS, Refused
from core.view.state import View

# the pair of the first steps: "the" twice in A, and a word WordPiece splits in B
_A = "the cat sat on the mat"
_B = "my dog loves its doghouse"


@dataclass(frozen=True)
class TourStep:
    """One lesson: what to read, and the view that shows it."""

    title: str
    text: str  # markdown we write ourselves, 2-3 sentences
    view: View  # everything the page shows, with view.step set to the step's number

    @property
    def named(self) -> frozenset[str]:
        """The words (and positions) its text talks about, in *italics* or `code`: the plot labels
        those it draws."""
        quoted = re.findall(r"\*([^*]+)\*|`([^`]+)`", self.text)
        return frozenset(word for pair in quoted for part in pair for word in part.split())

    def __post_init__(self) -> None:
        if self.view.step is None:
            raise ValueError(f"the view of tour step {self.title!r} must carry its step number.")
        if self.view.panel != "tour":
            raise ValueError(f"tour step {self.title!r} must keep the Tour panel open, so Next stays in view.")


def _step(number: int, **fields) -> View:
    return View(step=number, panel="tour", **fields)


STEPS: tuple[TourStep, ...] = (
    TourStep(
        "Tokens and segments",
        "BERT reads the two sentences as one sequence, `[CLS] A [SEP] B [SEP]`, and gives every token a "
        "segment id: 0 from `[CLS]` through the first `[SEP]`, 1 after it. "
        "WordPiece splits a word it does not know into pieces: *doghouse* becomes `dog` and `##house` (an open "
        "circle: `##` continues the word before it). "
        "These tables are a seeded random layer, with no meaning yet (Tables → BERT for trained ones); hover a "
        "point for its token, id, position and segment.",
        _step(1, sentence_a=_A, sentence_b=_B, groups=("token",)),
    ),
    TourStep(
        "A lookup table",
        "The token table is a lookup table: token id *i* fetches row *i*, so both `the`s of sentence A get "
        "the same row and land on one point, and so do both `dog`s. "
        "These rows were drawn at random, so where a word lands says nothing about it yet: *cat* lands nearer to "
        "`[CLS]` than to *dog*.",
        _step(2, sentence_a=_A, sentence_b=_B, groups=("token",)),
    ),
    TourStep(
        "Add positions",
        "A second table holds one row for every place in the sequence, and BERT adds the row of each token's "
        "position to its token row. "
        "The two `the`s of sentence A share a token vector, but at positions `1` and `5` they get different "
        "position rows, so their sums differ. "
        "Without positions, *the cat sat* and *sat the cat* would give the same vectors, only in another order.",
        _step(3, sentence_a=_A, sentence_b=_B, groups=("token", "position", "sum")),
    ),
    TourStep(
        "Add segments",
        "The third table has one row for sentence A and one for sentence B, and every token gets the row of "
        "its sentence. "
        "Every token of B is therefore shifted by the same vector, `seg[1] − seg[0]`, from where it would be "
        "in sentence A, so the shift arrows all have the same length and direction. "
        "Click a point to draw its sum tip to tail: token, plus position, plus segment.",
        _step(4, sentence_a=_A, sentence_b=_B, groups=("token", "position", "segment", "sum"), arrows=True,
              shift=True, token=2, k=0),  # the path of "cat", without neighbour stars the text never mentions
    ),
    TourStep(
        "LayerNorm",
        "LayerNorm treats each token's sum on its own: it subtracts the mean of the sum's entries, divides by "
        "their standard deviation, then multiplies by a learned γ and adds a learned β. "
        "In a fresh layer γ is 1 and β is 0, so every output has mean 0 and standard deviation 1 however spread "
        "its sum was, as the LayerNorm chart and the line under it show token by token, beside γ and β; every "
        "output therefore has length √d. "
        "The output is what BERT's first attention layer receives.",
        _step(5, sentence_a=_A, sentence_b=_B, groups=("sum", "output"), shown="layernorm"),
    ),
    TourStep(
        "Random vs pretrained",
        "These are BERT's own token rows, learned during pretraining, drawn in a plane fitted to the whole "
        "vocabulary with 2,000 of its words in the background. "
        "Related words now sit near each other in the full space: the nearest neighbours of *king* by cosine, "
        "listed under the plot and starred on it, include *queen* and *monarch*. "
        "The random table of step 2 had no such structure, because nothing had shaped its rows.",
        _step(6, sentence_a="The king spoke to the queen.", sentence_b="A man and a woman listened.",
              source="bert", groups=("token",), basis="vocabulary", background=2000,
              token=2),  # "king" in [CLS] the king spoke ...; tests/test_tour.py checks it
    ),
    TourStep(
        "Train and freeze",
        "Open the *Train* tab and press *Train*: the layer learns to predict each word of the built-in corpus "
        "from its neighbours, the loss falls, and words used in similar sentences, such as animals or family "
        "members, move closer. "
        "The position table is frozen, so its points do not move: the faint marks of where they were before "
        "training sit right under them. "
        "The *Code* tab above the plot then gives all of it, the training included, as a Python script to run.",
        _step(7, sentence_a="the cat and the dog slept", sentence_b="my aunt visited my uncle",
              groups=("token", "position"), frozen=frozenset({"position"})),
    ),
    TourStep(
        "Context",
        "Past the embedding layer, each of MiniLM-L6's six encoder layers mixes every token's vector with the "
        "tokens around it. "
        "Read each sentence on its own: the *bank* of the river and the *bank* that was robbed start from one token "
        "row (cosine 0.99, charted per layer) and drift apart, to 0.85 after layer 6; their paths end further "
        "apart than they start. "
        "Read as one pair (View → The encoder reads), both banks stay at 0.95.",
        _step(8, sentence_a="the river bank was muddy", sentence_b="the bank was robbed", source="bert",
              groups=("output",), layer=6, reading="apart", token=3, k=0),  # "bank" of the river, its chart
    ),
)


def step(n: object) -> TourStep:
    """Step n of the tour, counted from 1 as the page and the links count them."""
    if isinstance(n, float) and n.is_integer():
        n = int(n)  # number boxes send 3.0
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(STEPS):
        raise Refused(f"tour step {n!r} does not exist; steps are 1 to {len(STEPS)}.")
    return STEPS[n - 1]


def went(view: View, number: int) -> View:
    """Step `number` of the tour (a checked one, 1..len(STEPS)), as its link ``?step=N`` shows it, on
    `view`'s screen. Presenter mode and the theme, how the room sees the page, stay as they are: they
    are not part of a lesson. The one way to land on a step: Next, Previous and the picker come here."""
    return STEPS[number - 1].view.in_room_of(view).seen_as(view)


def moved(view: View, move: int) -> View:
    """The step `move` steps after (before, if negative) the one `view` shows, kept within the
    tour; from outside the tour, Next starts it (`went`)."""
    return went(view, min(max((view.step or 0) + move, 1), len(STEPS)))


if len(STEPS) != TOUR_STEPS:  # links are checked against TOUR_STEPS before this module is read
    raise RuntimeError(f"core.view.options.TOUR_STEPS is {TOUR_STEPS} but the tour has {len(STEPS)} steps.")
