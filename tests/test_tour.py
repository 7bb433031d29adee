"""The guided tour: its steps, their views, and the claims their texts make about them."""

import re
from urllib.parse import parse_qs

import pytest

from core.presets import wordpiece
from core.share import MAX_STEP, ViewState
from core.tour import STEPS, TABS, TourStep, step

TITLES = (
    "Tokens and segments",
    "A lookup table",
    "Add positions",
    "Add segments",
    "LayerNorm",
    "Random vs pretrained",
    "Train and freeze",
)
# a sentence ends at . ! or ? followed by a space or the end of the text
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")


def test_seven_steps_in_order_numbered_from_one():
    assert 6 <= len(STEPS) <= 8 and len(STEPS) == MAX_STEP
    assert tuple(s.title for s in STEPS) == TITLES
    for number, tour_step in enumerate(STEPS, 1):
        assert tour_step.state.step == number
        assert step(number) is tour_step
        assert tour_step.tab in TABS


@pytest.mark.parametrize("tour_step", STEPS, ids=lambda s: s.title)
def test_each_step_reads_in_two_or_three_sentences(tour_step):
    text = tour_step.text
    assert 2 <= len(_SENTENCE_END.findall(text)) <= 3, text
    assert text == text.strip() and "  " not in text and "\n" not in text
    assert not re.search(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]", text)  # no emoji


@pytest.mark.parametrize("tour_step", STEPS, ids=lambda s: s.title)
def test_each_step_has_its_own_link(tour_step):
    query = tour_step.state.to_query()
    assert f"step={tour_step.state.step}" in query
    assert ViewState.from_query(parse_qs(query, keep_blank_values=True)) == (tour_step.state, ())


def test_the_steps_set_what_the_brief_asks():
    first, lookup, positions, segments, norm, pretrained, training = STEPS
    assert first.state.groups == ("token",) and lookup.state.groups == ("token",)
    assert lookup.state.source == "random"
    # no addition path yet: it needs the segment group, which step 4 adds
    assert positions.state.groups == ("token", "position", "sum") and not positions.state.arrows
    assert segments.state.groups == ("token", "position", "segment", "sum")
    assert segments.state.arrows and segments.state.shift
    assert norm.state.groups == ("sum", "output") and norm.tab == "layernorm"
    assert pretrained.state.source == "bert" and pretrained.state.basis == "vocabulary"
    assert pretrained.state.background == 2000 and pretrained.tab == "neighbours"
    assert training.state.source == "random" and training.state.frozen == {"position"}
    assert training.tab == "train" and "position" in training.state.groups


def test_the_first_pair_shows_what_the_texts_say():
    state = STEPS[0].state
    tokens = wordpiece().encode(state.sentence_a, state.sentence_b).tokens
    assert tokens[0] == "[CLS]" and tokens.count("[SEP]") == 2
    assert ("dog", "##house") in set(zip(tokens, tokens[1:], strict=False))  # step 1's split word
    assert tokens[1] == tokens[5] == "the"  # step 3's "positions 1 and 5"
    assert all(s.state.sentence_a == state.sentence_a for s in STEPS[:5])


def test_step_6_selects_king_in_bert_s_encoding():
    state = STEPS[5].state
    tokens = wordpiece().encode(state.sentence_a, state.sentence_b).tokens
    assert tokens[state.token] == "king"
    assert "queen" in tokens


@pytest.mark.parametrize("bad", [0, 8, 9, -1, 2.5, "3", None, True])
def test_a_step_that_does_not_exist_is_named(bad):
    with pytest.raises(ValueError, match=r"tour step .* does not exist; steps are 1 to 7\."):
        step(bad)


def test_the_message_quotes_the_number():
    with pytest.raises(ValueError, match=r"^tour step 9 does not exist; steps are 1 to 7\.$"):
        step(9)
    assert step(3.0) is STEPS[2]  # number boxes send floats


def test_a_step_must_carry_its_number_and_a_known_tab():
    with pytest.raises(ValueError, match="tab must be one of plane, neighbours"):
        TourStep("t", "x. y.", ViewState(step=1), tab="sidebar")
    with pytest.raises(ValueError, match="must carry its step number"):
        TourStep("t", "x. y.", ViewState())
