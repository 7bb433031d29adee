"""The guided tour: seven steps through the embedding layer, for a lecture or a first visit.

Each step is a complete `ViewState`, so a step sets every input and toggle at once (a
lecturer who wandered off between steps is put back on the path) and has its own link:
``?step=4`` plus the rest of ``STEPS[3].state.to_query()`` opens step 4 for a whole room.
The steps follow the order the layer is built in — tokens, the lookup, positions, segments,
LayerNorm — and end on the two documents' closing point: relatedness between words is
something a table learns, not something a lookup has.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.share import MAX_STEP, ViewState

# the side panels a step can open beside the plot
TABS = ("plane", "neighbours", "positions", "layernorm", "similarity", "train")

# the pair of the first steps: "the" twice in A, and a word WordPiece splits in B
_A = "the cat sat on the mat"
_B = "the dog chased the cat into its doghouse"


@dataclass(frozen=True)
class TourStep:
    """One lesson: what to read, and the view and side panel that show it."""

    title: str
    text: str  # markdown, 2-3 sentences
    state: ViewState  # every input and toggle of the step, with state.step set to its number
    tab: str = "plane"  # one of TABS

    def __post_init__(self) -> None:
        if self.tab not in TABS:
            raise ValueError(f"tab must be one of {', '.join(TABS)}, not {self.tab!r}.")
        if self.state.step is None:
            raise ValueError(f"the state of tour step {self.title!r} must carry its step number.")


STEPS: tuple[TourStep, ...] = (
    TourStep(
        "Tokens and segments",
        "BERT reads the two sentences as one sequence, `[CLS] A [SEP] B [SEP]`, and gives every token a "
        "segment id: 0 for `[CLS]`, sentence A and the first `[SEP]`, 1 for sentence B and the last `[SEP]`. "
        "WordPiece splits a word that is not in its vocabulary into pieces, so *doghouse* becomes `dog` and "
        "`##house`, where `##` marks a piece that continues the word before it. "
        "Hover a point to see its token, id, position and segment.",
        ViewState(_A, _B, source="random", groups=("token",), step=1),
        "plane",
    ),
    TourStep(
        "A lookup table",
        "The token table is a lookup table: token id *i* fetches row *i*, so every `the` in the pair gets the "
        "same vector and all of them land on one point. "
        "These rows were drawn at random, so distances mean nothing yet: nothing puts *cat* nearer to *dog* "
        "than to *mat*.",
        ViewState(_A, _B, source="random", groups=("token",), step=2),
        "similarity",
    ),
    TourStep(
        "Add positions",
        "A second table holds one row for every place in the sequence, and BERT adds the row of each token's "
        "position to its token row. "
        "The two `the`s of sentence A share a token vector, but at positions 1 and 5 they get different "
        "position rows, so their sums differ. "
        "Without positions, *the cat sat* and *sat the cat* would give the same vectors, only in another order.",
        ViewState(_A, _B, source="random", groups=("token", "position", "sum"), step=3),
        "positions",
    ),
    TourStep(
        "Add segments",
        "The third table has one row for sentence A and one for sentence B, and every token gets the row of "
        "its sentence. "
        "Every token of B is therefore shifted by the same vector, `seg[1] − seg[0]`, from where it would be "
        "in sentence A, so the shift arrows all have the same length and direction. "
        "The addition path lays each sum out tip to tail: token, plus position, plus segment.",
        ViewState(
            _A, _B, source="random", groups=("token", "position", "segment", "sum"), arrows=True, shift=True, step=4
        ),
        "plane",
    ),
    TourStep(
        "LayerNorm",
        "LayerNorm treats each token's sum on its own: it subtracts the mean of the sum's entries, divides by "
        "their standard deviation, then multiplies by a learned γ and adds a learned β. "
        "In a fresh layer γ is 1 and β is 0, so every output has mean 0, standard deviation 1 and length √d, "
        "however long its sum was. "
        "The output is what BERT's first attention layer receives.",
        ViewState(_A, _B, source="random", groups=("sum", "output"), step=5),
        "layernorm",
    ),
    TourStep(
        "Random vs pretrained",
        "These are BERT's own token rows, learned during pretraining, drawn in a plane fitted to the whole "
        "vocabulary with 2,000 of its words in the background. "
        "Related words now sit near each other: the nearest neighbours of *king* include *kings*, *queen* and "
        "*monarch*. "
        "The random table of step 2 had no such structure, because nothing had shaped its rows.",
        ViewState(
            "The king spoke to the queen.",
            "A man and a woman listened.",
            source="bert",
            groups=("token",),
            basis="vocabulary",
            background=2000,
            token=2,  # "king" in [CLS] the king spoke ...; tests/test_tour.py checks it with the real tokenizer
            step=6,
        ),
        "neighbours",
    ),
    TourStep(
        "Train and freeze",
        "Press *Train*: the layer learns to predict each word of the built-in corpus from its neighbours, the "
        "loss falls, and words used in similar sentences, such as animals or family members, move closer. "
        "The position table is frozen, so its points do not move: the faint marks of where they were before "
        "training sit right under them.",
        ViewState(
            "the cat and the dog slept",
            "my aunt visited my uncle",
            source="random",
            groups=("token", "position"),
            frozen=frozenset({"position"}),
            step=7,
        ),
        "train",
    ),
)


def step(n: int) -> TourStep:
    """Step n of the tour, counted from 1 as the page and the links count them."""
    if isinstance(n, float) and n.is_integer():
        n = int(n)  # number boxes send 3.0
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(STEPS):
        raise ValueError(f"tour step {n!r} does not exist; steps are 1 to {len(STEPS)}.")
    return STEPS[n - 1]


if len(STEPS) != MAX_STEP:  # links are checked against MAX_STEP before this module is read
    raise RuntimeError(f"core.share.MAX_STEP is {MAX_STEP} but the tour has {len(STEPS)} steps.")
