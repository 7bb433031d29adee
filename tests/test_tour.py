"""The guided tour: its steps, their views, and the claims their texts make about them."""

import re
from urllib.parse import parse_qs

import pytest

from core.drawing.figures import NEIGHBOURS
from core.tables.presets import wordpiece
from core.view.options import PANELS, TOUR_STEPS, VIEWS, Refused
from core.view.share import Link, from_query, to_query
from core.view.state import View
from core.view.tour import STEPS, TourStep, moved, step, went

TITLES = (
    "Tokens and segments",
    "A lookup table",
    "Add positions",
    "Add segments",
    "LayerNorm",
    "Random vs pretrained",
    "Train and freeze",
    "Context",
)
# a sentence ends at . ! or ? followed by a space or the end of the text
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def test_eight_steps_in_order_numbered_from_one():
    assert 6 <= len(STEPS) <= 8 and len(STEPS) == TOUR_STEPS
    assert tuple(s.title for s in STEPS) == TITLES
    for number, tour_step in enumerate(STEPS, 1):
        assert isinstance(tour_step.view, View)
        assert tour_step.view.step == number
        assert step(number) is tour_step
        assert tour_step.view.shown in VIEWS and tour_step.view.panel == "tour" and "tour" in PANELS


@pytest.mark.parametrize("tour_step", STEPS, ids=lambda s: s.title)
def test_each_step_reads_in_two_to_four_sentences(tour_step):
    text = tour_step.text
    assert 2 <= len(_SENTENCE_END.findall(text)) <= 4, text
    assert text == text.strip() and "  " not in text and "\n" not in text
    assert not re.search(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]", text)  # no emoji


@pytest.mark.parametrize("tour_step", STEPS, ids=lambda s: s.title)
def test_each_step_has_its_own_link(tour_step):
    query, notes = to_query(tour_step.view)
    assert query == f"step={tour_step.view.step}" and notes == ()
    assert from_query(parse_qs(query, keep_blank_values=True)) == Link(tour_step.view)


def test_the_steps_set_what_the_lessons_need():
    first, lookup, positions, segments, norm, pretrained, training, context = (s.view for s in STEPS)
    assert first.groups == ("token",) and lookup.groups == ("token",)
    assert lookup.source == "random"
    # no addition path yet: it needs the segment group, which step 4 adds
    assert positions.groups == ("token", "position", "sum") and not positions.arrows
    assert segments.groups == ("token", "position", "segment", "sum")
    assert segments.arrows and segments.shift
    assert norm.groups == ("sum", "output") and norm.shown == "layernorm"
    assert pretrained.source == "bert" and pretrained.basis == "vocabulary"
    assert pretrained.background == 2000
    assert training.source == "random" and training.frozen == {"position"}
    assert "position" in training.groups
    # the encoder's layers read BERT's own tables; each sentence on its own, so each bank takes in its own
    assert context.source == "bert" and context.layer == 6 and context.reading == "apart"
    assert wordpiece().encode(context.sentence_a, context.sentence_b).tokens[context.token] == "bank"
    # every step leaves the rest of the page as a fresh one has it: no flips, no presenter mode
    for tour_step in STEPS:
        assert tour_step.view.flips == frozenset() and not tour_step.view.presenter


def test_the_first_pair_shows_what_the_texts_say():
    view = STEPS[0].view
    tokens = wordpiece().encode(view.sentence_a, view.sentence_b).tokens
    assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2
    assert ("dog", "##house") in set(zip(tokens, tokens[1:], strict=False))  # step 1's split word
    assert tokens[1] == tokens[5] == "the"  # step 3's "positions 1 and 5"
    assert all(s.view.sentence_a == view.sentence_a for s in STEPS[:5])


def test_step_6_selects_king_in_bert_s_encoding():
    view = STEPS[5].view
    tokens = wordpiece().encode(view.sentence_a, view.sentence_b).tokens
    assert tokens[view.token] == "king"
    assert "queen" in tokens


@pytest.mark.parametrize("bad", [0, 9, 10, -1, 2.5, "3", None, True])
def test_a_step_that_does_not_exist_is_named(bad):
    with pytest.raises(Refused, match=r"tour step .* does not exist; steps are 1 to 8\."):
        step(bad)


def test_the_message_quotes_the_number():
    with pytest.raises(Refused, match=r"^tour step 9 does not exist; steps are 1 to 8\.$"):
        step(9)
    assert step(3.0) is STEPS[2]  # number boxes send floats


def test_a_jump_and_a_move_land_on_the_step_s_own_view():
    """The picker's jump and Next/Previous share one landing: the step's view on the page's
    screen, presenter mode and sound kept, whatever the page showed before."""
    wandered = View(sentence_a="my own words", source="bert", presenter=True, sound=True, narrow=True)
    for number, tour_step in enumerate(STEPS, 1):
        landed = went(wandered, number)
        assert landed == tour_step.view.with_(presenter=True, sound=True).seen_as(wandered)
        assert landed.step == number and landed.presenter and landed.sound
        assert landed.sentence_a == tour_step.view.sentence_a
        assert went(View(), number) == tour_step.view  # what ?step=N opens
        assert moved(View(step=number), 1) == went(View(), min(number + 1, len(STEPS)))
    assert moved(View(), 1) == went(View(), 1) and moved(View(), -3) == went(View(), 1)


def test_a_step_must_carry_its_number_and_keep_the_tour_open():
    with pytest.raises(ValueError, match="must carry its step number"):
        TourStep("t", "x. y.", View(panel="tour"))
    with pytest.raises(ValueError, match="must keep the Tour panel open"):
        TourStep("t", "x. y.", View(step=1, panel="view"))


def named_in(label: str) -> set[str]:
    """The tokens a written label names: "the ×2, cat +3" names the and cat; “.” ×2 names "."."""
    return {re.sub(r"^“(.+)”$", r"\1", re.sub(r" (×\d+|\+\d+)$", "", part)) for part in label.split(", ")} - {""}


@pytest.mark.parametrize("scale", [{}, {"presenter": True}, {"narrow": True}], ids=["laptop", "presenter", "phone"])
def test_every_word_a_step_names_and_its_selected_token_must_be_labelled(scale):
    """The figure asks the page to write every word a step's text names, and its selected token,
    wherever that takes them (`must`); the others give way. Before, step 2's *cat* and step 6's
    *king* were not. (tests/test_browser_lecture.py reads the labels the page wrote.)"""
    from core.drawing.figures import embedding_spec
    from core.plane.pipeline import explore_view
    from core.serving.tabs import session_for
    from core.tables.session import Session

    for number, lesson in enumerate(STEPS, 1):
        if lesson.view.shown != "plane":
            continue
        session = session_for(lesson.view, Session.create())
        result = explore_view(lesson.view, session)
        tokens, picked = set(result.scene.tokens), lesson.view.token
        must = (lesson.named & tokens) | ({result.scene.tokens[picked]} if picked is not None else set())
        spec = embedding_spec(result.scene, named=lesson.named, **scale)
        labels = spec["layout"]["meta"]["labels"]
        asked = {name for trace, points in labels["must"].items() for point in points
                 for name in named_in(labels["texts"][trace][point])}
        assert must <= asked, f"step {number}: {sorted(must - asked)} not asked for"
        # stars only where the text talks of neighbours: a random table's "nearest" say nothing
        stars = [trace for trace in spec["data"] if trace["name"] in NEIGHBOURS.values()]
        assert bool(stars) == ("nearest" in lesson.text), f"step {number}: stars the text does not explain"
