"""Links: a view written as a query string, and read back from whatever a link carries."""

import json
import random
from dataclasses import fields, replace
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from core.embedding import COMPONENTS
from core.presets import POSITIONS
from core.share import (
    BASES,
    BASIS_LABELS,
    MAX_BACKGROUND,
    MAX_SENTENCE,
    MAX_TOKEN,
    PARAMETERS,
    SHAREABLE_SOURCES,
    ViewState,
)
from core.training import PARTS

EXAMPLES = json.loads((Path(__file__).parents[1] / "assets" / "examples.json").read_text(encoding="utf-8"))


def read(query: str) -> ViewState:
    """What the page does with a link: parse it, keeping empty values as browsers do."""
    state, notes = ViewState.from_query(parse_qs(query, keep_blank_values=True))
    assert notes == ()
    return state


# --- the state itself ---


def test_defaults_are_the_pages_defaults():
    state = ViewState()
    assert (state.sentence_a, state.sentence_b) == tuple(EXAMPLES[0])
    assert state.source == "random" and state.positions == "learned" and state.basis == "sentence"
    assert state.groups == COMPONENTS and state.frozen == frozenset()
    assert (state.labels, state.arrows, state.shift, state.presenter) == (True, False, False, False)
    assert (state.background, state.token, state.k, state.step) == (0, None, 10, None)
    assert BASES == ("sentence", "vocabulary", "frozen") and tuple(BASIS_LABELS) == BASES
    assert "upload" not in SHAREABLE_SOURCES and set(SHAREABLE_SOURCES) == {"random", "bert", "glove"}
    assert ViewState().to_query() == ""


def test_every_field_has_one_parameter():
    assert sorted(PARAMETERS.values()) == sorted(f.name for f in fields(ViewState))


def test_sets_are_kept_in_their_canonical_order():
    state = ViewState(groups=["output", "token", "token"], frozen=["norm", "token"])
    assert state.groups == ("token", "output")
    assert state.frozen == frozenset({"token", "norm"})
    assert ViewState(k=12.0, background=3.0).k == 12  # sliders send floats


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"source": "upload"}, "source must be one of random, bert, glove, not 'upload'"),
        ({"positions": "rotary"}, "positions must be one of learned, random, sinusoidal"),
        ({"basis": "tsne"}, "basis must be one of sentence, vocabulary, frozen"),
        ({"groups": ("token", "colour")}, "groups may hold only token, position, segment, sum, output, not 'colour'"),
        ({"groups": "token"}, "groups must be a collection of names"),
        ({"frozen": {"bias"}}, "frozen may hold only token, position, segment, norm, not 'bias'"),
        ({"labels": 1}, "labels must be True or False"),
        ({"background": MAX_BACKGROUND + 1}, "background is 400,004; allowed values are 0 to 400,003"),
        ({"background": -1}, "background is -1"),
        ({"token": MAX_TOKEN + 1}, "token is 2,048; allowed values are 0 to 2,047"),
        ({"token": "3"}, "token must be a whole number or None"),
        ({"k": 0}, "k is 0; allowed values are 1 to 50"),
        ({"k": 51}, "k is 51"),
        ({"k": 2.5}, "k must be a whole number"),
        ({"step": 0}, "step is 0; allowed values are 1 to 7"),
        ({"step": True}, "step must be a whole number"),
        ({"sentence_a": "x" * (MAX_SENTENCE + 1)}, "sentence_a has 20,001 characters; at most 20,000"),
        ({"sentence_b": None}, "sentence_b must be text"),
    ],
)
def test_invalid_states_are_refused_with_a_sentence(changes, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        ViewState(**changes)


# --- writing links ---


def test_links_leave_out_defaults_and_keep_one_order():
    state = ViewState(presenter=True, sentence_a="hello world", k=5, groups=("sum", "token"), arrows=True)
    query = state.to_query()
    assert query == "a=hello%20world&groups=token,sum&arrows=1&k=5&presenter=1"
    assert replace(state, k=10).to_query() == "a=hello%20world&groups=token,sum&arrows=1&presenter=1"


def test_empty_choices_are_written_so_that_any_parser_keeps_them():
    state = ViewState(groups=(), sentence_b="")
    assert state.to_query() == "b=&groups=none"
    # python's parse_qs drops "b=" by default, but "groups=none" survives it
    assert ViewState.from_query(parse_qs(state.to_query()))[0].groups == ()
    assert read(state.to_query()) == state


def test_text_that_is_not_utf8_still_makes_a_link():
    # an unpaired surrogate (from JSON "\ud800") has no utf-8 form; the link carries U+FFFD instead
    state = ViewState(sentence_a="a\ud800b")
    assert read(state.to_query()).sentence_a == "a\ufffdb"


# --- reading links ---


def test_an_uploaded_source_cannot_come_through_a_link():
    state, notes = ViewState.from_query({"source": "upload", "k": "7"})
    assert state == ViewState(k=7)
    assert notes == ("Ignored source=upload: a link cannot carry an uploaded file; allowed: random, bert, glove.",)


def test_each_bad_parameter_is_ignored_alone_and_named():
    params = {
        "a": "hi",
        "positions": "rotary",
        "groups": "token,colour",
        "labels": "maybe",
        "basis": "vocabulary",
        "background": "1e3",
        "freeze": "norm,bias",
        "token": "-3",
        "k": "NaN",
        "step": "99",
        "presenter": "yes",
        "colour": "red",
    }
    state, notes = ViewState.from_query(params)
    assert state == ViewState(sentence_a="hi", basis="vocabulary", presenter=True)
    assert len(notes) == 9
    assert notes[0] == "Ignored positions=rotary: it is not one of the choices; allowed: learned, random, sinusoidal."
    assert "Ignored groups=token,colour: 'colour' is not one of token, position, segment, sum, output" in notes[1]
    assert notes[2] == "Ignored labels=maybe: it must be 1 or 0 (also true/false, yes/no, on/off)."
    assert notes[3] == "Ignored background=1e3: it must be a whole number from 0 to 400,003."
    assert notes[5] == "Ignored token=-3: it must be a whole number from 0 to 2,047, or none."
    assert notes[6] == "Ignored k=NaN: it must be a whole number from 1 to 50."
    assert notes[-1].startswith("Ignored unknown parameter 'colour'; links use a, b, source,")


def test_lenient_spellings():
    for word, value in [("1", True), ("TRUE", True), (" yes ", True), ("On", True), ("0", False), ("off", False)]:
        assert ViewState.from_query({"arrows": word}) == (ViewState(arrows=value), ())
    assert ViewState.from_query({"groups": " sum , token ,"})[0].groups == ("token", "sum")
    assert ViewState.from_query({"groups": ""})[0].groups == ()
    assert ViewState.from_query({"token": "none", "step": ""}) == (ViewState(), ())
    assert ViewState.from_query({"k": " +7 "})[0].k == 7


def test_a_repeated_parameter_takes_its_last_value():
    assert ViewState.from_query({"k": ["3", "4"], "a": []}) == (ViewState(k=4), ())


def test_gradios_own_parameters_pass_silently():
    assert ViewState.from_query({"__theme": "dark"}) == (ViewState(), ())


def test_an_overlong_sentence_is_cut_with_a_note():
    state, notes = ViewState.from_query({"b": "é" * 25_000})
    assert state.sentence_b == "é" * MAX_SENTENCE
    assert notes == ("Sentence B in the link has 25,000 characters; the first 20,000 were kept.",)


def test_a_long_bad_value_is_quoted_short():
    _, notes = ViewState.from_query({"source": "x" * 10_000})
    assert len(notes[0]) < 200 and "x" * 40 + "…" in notes[0]


def test_links_parsed_by_the_server_read_back(tmp_path):
    # the page reads gr.Request.query_params, a starlette QueryParams
    datastructures = pytest.importorskip("starlette.datastructures")
    state = ViewState(sentence_a="a & b = c # d + e % f", sentence_b="", groups=(), frozen={"norm"}, token=0)
    assert ViewState.from_query(datastructures.QueryParams(state.to_query())) == (state, ())
    url = "https://example.org/?" + state.to_query()
    assert read(urlsplit(url).query) == state


# --- never raising, and the round trip ---


def _random_text(rng: random.Random, size: int) -> str:
    alphabet = "ab &=#+%?/;,.:'\"<>\\\n\t ~[]{}$@!éüßç中文字🙂👩‍🔬العربية\u200b\u0000\u202e"
    return "".join(rng.choice(alphabet) for _ in range(size))


def _random_value(rng: random.Random):
    choices = [
        lambda: _random_text(rng, rng.randint(0, 30)),
        lambda: str(rng.randint(-(10**40), 10**40)),
        lambda: str(rng.randint(-5, 60)),
        lambda: rng.choice(["NaN", "nan", "inf", "-inf", "1e309", "0x10", "١٢", "٣", "½", "²", "1_000", " ", ""]),
        lambda: rng.choice(["1", "0", "true", "off", "none", "token,sum", "norm", ",,,"]),
        lambda: "9" * rng.choice([10, 100, 5000]),
        lambda: [_random_text(rng, 5) for _ in range(rng.randint(0, 3))],
        lambda: rng.choice([None, 3, 2.5, float("nan"), b"bytes", object()]),
    ]
    return rng.choice(choices)()


def test_reading_any_link_never_raises():
    rng = random.Random(0)
    names = [*PARAMETERS, "__theme", "", "A", "k ", "a[]", "🙂", 7]
    for _ in range(3000):
        params = {rng.choice(names): _random_value(rng) for _ in range(rng.randint(0, 8))}
        state, notes = ViewState.from_query(params)
        assert isinstance(state, ViewState)
        assert all(isinstance(note, str) and note for note in notes)
    # whole query strings of random bytes, as parse_qs would hand them over
    for _ in range(500):
        query = "".join(rng.choice("ak=&%0Fz;+#?") for _ in range(rng.randint(0, 40)))
        ViewState.from_query(parse_qs(query, keep_blank_values=True))


HAND_MADE = [
    ViewState(),
    ViewState(sentence_a="", sentence_b=""),
    ViewState(sentence_a="the cat sat on the mat", sentence_b="the dog chased the cat", groups=("token",), step=1),
    ViewState(source="bert", basis="vocabulary", background=2000, token=2, k=50, groups=("token",)),
    ViewState(source="glove", positions="sinusoidal", labels=False, arrows=True, shift=True, presenter=True),
    ViewState(frozen=frozenset(PARTS), groups=(), basis="frozen", background=MAX_BACKGROUND, token=MAX_TOKEN, k=1),
    ViewState(sentence_a="a&b=c#d", sentence_b="100% + 1 = ?", positions="random", step=7),
    ViewState(sentence_a="x" * MAX_SENTENCE, sentence_b="  leading and trailing spaces  "),
]


def _random_state(rng: random.Random) -> ViewState:
    return ViewState(
        sentence_a=_random_text(rng, rng.randint(0, 60)),
        sentence_b=_random_text(rng, rng.randint(0, 60)),
        source=rng.choice(SHAREABLE_SOURCES),
        positions=rng.choice(list(POSITIONS)),
        groups=tuple(g for g in COMPONENTS if rng.random() < 0.5),
        labels=rng.random() < 0.5,
        arrows=rng.random() < 0.5,
        shift=rng.random() < 0.5,
        basis=rng.choice(BASES),
        background=rng.choice([0, 1, 2000, MAX_BACKGROUND]),
        frozen=frozenset(p for p in PARTS if rng.random() < 0.3),
        token=rng.choice([None, 0, 5, MAX_TOKEN]),
        k=rng.randint(1, 50),
        step=rng.choice([None, 1, 7]),
        presenter=rng.random() < 0.5,
    )


@pytest.mark.parametrize("state", HAND_MADE + [_random_state(random.Random(seed)) for seed in range(300)])
def test_a_link_reads_back_as_the_same_view(state):
    assert read(state.to_query()) == state
    if state.sentence_a and state.sentence_b:
        # with nothing empty, python's default parse_qs reads it back too
        assert ViewState.from_query(parse_qs(state.to_query()))[0] == state
