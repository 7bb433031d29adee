"""Links: a `View` written as a query string, and read back from whatever a link carries."""

import json
import random
from dataclasses import fields
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from core.view import tour
from core.view.options import (
    BASES,
    COMPONENTS,
    LIMITS,
    MAX_TEXT,
    PARTS,
    POSITIONS,
    SHAREABLE_SOURCES,
    Refused,
)
from core.view.share import PARAMETERS, Link, from_query, to_query
from core.view.state import SCREEN, View

EXAMPLES = json.loads((Path(__file__).parents[1] / "assets" / "examples.json").read_text(encoding="utf-8"))
MAX_BACKGROUND = LIMITS["background"][1]
MAX_TOKEN = LIMITS["token"][1]


def read(query: str) -> View:
    """What the page does with a link: parse it, keeping empty values as browsers do."""
    link = from_query(parse_qs(query, keep_blank_values=True))
    assert link.notes == ()
    return link.view


def link(view: View) -> str:
    query, notes = to_query(view)
    assert notes == ()
    return query


# --- the view itself ---


def test_defaults_are_the_pages_defaults():
    view = View()
    assert (view.sentence_a, view.sentence_b) == tuple(EXAMPLES[0])
    assert view.source == "random" and view.positions == "learned" and view.basis == "sentence"
    assert view.groups == COMPONENTS and view.frozen == frozenset()
    assert (view.labels, view.arrows, view.shift, view.presenter) == (True, False, False, False)
    assert (view.background, view.token, view.k, view.step) == (0, None, 10, None)
    assert tuple(BASES) == ("sentence", "vocabulary", "frozen")
    assert "upload" not in SHAREABLE_SOURCES and set(SHAREABLE_SOURCES) == {"random", "bert", "glove"}
    assert to_query(View()) == ("", ())


def test_every_field_has_one_parameter():
    assert sorted(PARAMETERS.values()) == sorted(f.name for f in fields(View) if f.name not in SCREEN)
    assert len(set(PARAMETERS.values())) == len(PARAMETERS)


def test_the_screen_is_never_in_a_link_and_survives_a_link_replacing_the_view():
    phone = View(narrow=True, sentence_a="a phone's view")
    assert to_query(phone) == to_query(phone.with_(narrow=False))
    linked = from_query({"a": ["another view"], "narrow": ["1"]})
    assert linked.view.narrow is False and linked.notes  # an unknown parameter, noted
    assert linked.view.seen_as(phone) == View(sentence_a="another view", narrow=True)


def test_sets_are_kept_in_their_canonical_order():
    view = View(groups=["output", "token", "token"], frozen=["norm", "token"])
    assert view.groups == ("token", "output")
    assert view.frozen == frozenset({"token", "norm"})
    assert View(k=12.0, background=3.0).k == 12  # sliders send floats
    assert View(flips=[3, 1]).flips == frozenset({1, 3})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"source": "nonsense"}, "source must be one of random, bert, glove, upload, not 'nonsense'"),
        ({"positions": "rotary"}, "positions must be one of learned, random, sinusoidal"),
        ({"basis": "tsne"}, "basis must be one of sentence, vocabulary, frozen"),
        ({"groups": ("token", "colour")}, "groups may hold only token, position, segment, sum, output, not 'colour'"),
        ({"groups": "token"}, "groups must be a list of names"),
        ({"frozen": {"bias"}}, "frozen may hold only token, position, segment, norm, not 'bias'"),
        ({"labels": 1}, "labels must be true or false"),
        ({"background": MAX_BACKGROUND + 1}, "background is 5,001; allowed values are 0 to 5,000"),
        ({"background": -1}, "background is -1"),
        ({"token": MAX_TOKEN + 1}, "token is 2,048; allowed values are 0 to 2,047"),
        ({"token": "x"}, "token must be a whole number from 0 to 2,047, not 'x'"),
        ({"k": -1}, "k is -1; allowed values are 0 to 50"),
        ({"k": 51}, "k is 51"),
        ({"k": 2.5}, "k must be a whole number"),
        ({"step": 0}, "step is 0; allowed values are 1 to 8"),
        ({"step": True}, "step must be a whole number"),
        ({"sentence_a": "x" * (MAX_TEXT + 1)}, "Sentence A has 10,001 characters; at most 10,000"),
        ({"sentence_b": 3}, "Sentence B must be text"),
        ({"d_model": 1025}, "d_model is 1,025; allowed values are 1 to 1,024"),
        ({"tokenizer": "bpe"}, "tokenizer must be one of wordpiece, word"),
        ({"flips": set(range(65))}, "65 flipped tokens; at most 64"),
        ({"shown": "sidebar"}, "shown must be one of plane, positions"),
    ],
)
def test_invalid_views_are_refused_with_a_sentence(changes, message):
    with pytest.raises(Refused, match=message.replace("(", r"\(")):
        View(**changes)
    with pytest.raises(Refused, match=message.replace("(", r"\(")):
        View().with_(**changes)


def test_a_view_has_no_setting_it_does_not_name():
    with pytest.raises(Refused, match="a view has no setting 'colour'"):
        View().with_(colour="red")


def test_a_missing_sentence_is_an_empty_one():
    assert View(sentence_b=None).sentence_b == ""


# --- writing links ---


def test_links_leave_out_defaults_and_keep_one_order():
    view = View(presenter=True, sentence_a="hello world", k=5, groups=("sum", "token"), arrows=True)
    assert link(view) == "a=hello%20world&groups=token,sum&arrows=1&k=5&presenter=1"
    assert link(view.with_(k=10)) == "a=hello%20world&groups=token,sum&arrows=1&presenter=1"


def test_a_tour_step_is_the_base_of_its_link():
    assert link(tour.step(6).view) == "step=6"
    assert link(tour.step(6).view.with_(k=3)) == "step=6&k=3"
    # a field the step sets, put back to a fresh page's value, is written against the step
    assert read(link(tour.step(6).view.with_(source="random"))) == tour.step(6).view.with_(source="random")


def test_empty_choices_are_written_so_that_any_parser_keeps_them():
    view = View(groups=(), sentence_b="")
    assert link(view) == "b=&groups=none"
    # python's parse_qs drops "b=" by default, but "groups=none" survives it
    assert from_query(parse_qs(link(view))).view.groups == ()
    assert read(link(view)) == view


def test_text_that_is_not_utf8_still_makes_a_link():
    # an unpaired surrogate (from JSON "\ud800") has no utf-8 form; the link carries U+FFFD instead
    assert read(link(View(sentence_a="a\ud800b"))).sentence_a == "a\ufffdb"


def test_a_link_to_an_uploaded_table_opens_the_random_tables_and_says_so():
    query, notes = to_query(View(source="upload", k=7))
    assert "source" not in query and "upload" not in query
    assert notes == ("A link cannot carry an uploaded file: it opens the random tables instead.",)
    assert read(query) == View(k=7)
    # on a tour step whose source is BERT, the link still names the random tables
    query, _ = to_query(tour.step(6).view.with_(source="upload"))
    assert read(query).source == "random"


# --- reading links ---


def test_an_uploaded_source_cannot_come_through_a_link():
    found = from_query({"source": "upload", "k": "7"})
    assert found == Link(View(k=7), (
        "Ignored source=upload: a link cannot carry an uploaded file; allowed: random, bert, glove.",
    ))


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
    view, notes = from_query(params).view, from_query(params).notes
    assert view == View(sentence_a="hi", basis="vocabulary", presenter=True)
    assert len(notes) == 9
    assert notes[0] == "Ignored step=99: step is 99; allowed values are 1 to 8."
    assert notes[1] == "Ignored positions=rotary: it is not one of the choices; allowed: learned, random, sinusoidal."
    assert "Ignored groups=token,colour: 'colour' is not one of token, position, segment, sum, output" in notes[2]
    assert notes[3] == "Ignored labels=maybe: it must be 1 or 0 (also true/false, yes/no, on/off)."
    assert notes[4] == "Ignored background=1e3: background must be a whole number from 0 to 5,000, not '1e3'."
    assert notes[5].startswith("Ignored freeze=norm,bias: 'bias' is not one of token, position, segment, norm")
    assert notes[6] == "Ignored token=-3: token is -3; allowed values are 0 to 2,047."
    assert notes[7] == "Ignored k=NaN: k must be a whole number from 0 to 50, not 'NaN'."
    assert notes[-1].startswith("Ignored unknown parameter 'colour'; links use step, a, b, source,")


def test_a_combination_the_view_refuses_drops_only_that_parameter():
    # each value is allowed alone; a 10-word vocabulary needs the word tokenizer, which is fine,
    # but 65 flips are more than a view holds: the flips are dropped, the rest kept
    found = from_query({"tokenizer": "word", "vocab": "10", "flip": ",".join(map(str, range(64)))})
    assert found.view.tokenizer == "word" and found.view.vocab_size == 10 and len(found.view.flips) == 64
    found = from_query({"flip": ",".join(map(str, range(65))), "k": "3"})
    assert found.view == View(k=3)
    assert found.notes == ("Ignored flip=" + ",".join(map(str, range(65)))[:40] + "…: at most 64 tokens can be "
                           "flipped.",)


def test_lenient_spellings():
    for word, value in [("1", True), ("TRUE", True), (" yes ", True), ("On", True), ("0", False), ("off", False)]:
        assert from_query({"arrows": word}) == Link(View(arrows=value))
    assert from_query({"groups": " sum , token ,"}).view.groups == ("token", "sum")
    assert from_query({"groups": ""}).view.groups == ()
    assert from_query({"token": "none", "step": ""}) == Link(View())
    assert from_query({"k": " +7 "}).view.k == 7


def test_a_step_is_the_base_the_other_parameters_change():
    assert from_query({"step": "6"}) == Link(tour.step(6).view)
    assert from_query({"k": "3", "step": "6"}).view == tour.step(6).view.with_(k=3)
    assert from_query({"step": "none", "k": "3"}).view == View(k=3)


def test_a_shared_link_keeps_its_parameter_names_when_a_field_is_renamed():
    """The field `shown` (what the main column shows) was `view`: links shared before still say
    `view=`, so the parameter stays and reads into the field."""
    assert from_query({"view": "lookup"}) == Link(View(shown="lookup"))
    assert link(View(shown="lookup")) == "view=lookup"
    assert "shown" not in PARAMETERS


def test_a_repeated_parameter_takes_its_last_value():
    assert from_query({"k": ["3", "4"], "a": []}) == Link(View(k=4))


def test_gradios_own_parameters_pass_silently():
    assert from_query({"__theme": "dark"}) == Link(View())


def test_an_overlong_sentence_is_cut_with_a_note():
    found = from_query({"b": "é" * 25_000})
    assert found.view.sentence_b == "é" * MAX_TEXT
    assert found.notes == ("Sentence B in the link has 25,000 characters; the first 10,000 were kept.",)


def test_a_long_bad_value_is_quoted_short():
    notes = from_query({"source": "x" * 10_000}).notes
    assert len(notes[0]) < 200 and "x" * 40 + "…" in notes[0]


def test_too_many_parameters_are_cut_with_a_note():
    found = from_query({f"p{i}": "1" for i in range(1000)})
    assert found.view == View()
    assert found.notes[0] == "The link has more than 64 parameters; the first 64 were read."
    assert len(found.notes) == 65


def test_links_parsed_by_the_server_read_back():
    # the page reads gr.Request.query_params, a starlette QueryParams
    datastructures = pytest.importorskip("starlette.datastructures")
    view = View(sentence_a="a & b = c # d + e % f", sentence_b="", groups=(), frozen={"norm"}, token=0)
    params = datastructures.QueryParams(link(view))
    assert from_query({key: params.getlist(key) for key in params}) == Link(view)
    url = "https://example.org/?" + link(view)
    assert read(urlsplit(url).query) == view


# --- never raising, and the round trip (tests/test_share_properties.py generates more) ---


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
        found = from_query(params)
        assert isinstance(found.view, View)
        assert all(isinstance(note, str) and note for note in found.notes)
    # whole query strings of random bytes, as parse_qs would hand them over
    for _ in range(500):
        query = "".join(rng.choice("ak=&%0Fz;+#?") for _ in range(rng.randint(0, 40)))
        from_query(parse_qs(query, keep_blank_values=True))


HAND_MADE = [
    View(),
    View(sentence_a="", sentence_b=""),
    View(sentence_a="the cat sat on the mat", sentence_b="the dog chased the cat", groups=("token",), step=1),
    View(source="bert", basis="vocabulary", background=2000, token=2, k=50, groups=("token",)),
    View(source="glove", positions="sinusoidal", labels=False, arrows=True, shift=True, presenter=True),
    View(frozen=frozenset(PARTS), groups=(), basis="frozen", background=MAX_BACKGROUND, token=MAX_TOKEN, k=1),
    View(sentence_a="a&b=c#d", sentence_b="100% + 1 = ?", positions="random", step=7),
    View(sentence_a="x" * MAX_TEXT, sentence_b="  leading and trailing spaces  "),
    View(tokenizer="word", vocab_size=10, d_model=2, maxlen=3, n_segments=8, seed=2**31 - 1, flips={0, 5}),
    View(shown="lookup", panel="train", listing_seed=7, listing_bug=True, lookup_sentence=" a  b ", lookup_dim=16,
         lookup_grad=False),
    *(s.view for s in tour.STEPS),
]


def _random_view(rng: random.Random) -> View:
    return View(
        sentence_a=_random_text(rng, rng.randint(0, 60)),
        sentence_b=_random_text(rng, rng.randint(0, 60)),
        source=rng.choice(SHAREABLE_SOURCES),
        positions=rng.choice(list(POSITIONS)),
        groups=tuple(g for g in COMPONENTS if rng.random() < 0.5),
        labels=rng.random() < 0.5,
        arrows=rng.random() < 0.5,
        shift=rng.random() < 0.5,
        basis=rng.choice(list(BASES)),
        background=rng.choice([0, 1, 2000, MAX_BACKGROUND]),
        frozen=frozenset(p for p in PARTS if rng.random() < 0.3),
        token=rng.choice([None, 0, 5, MAX_TOKEN]),
        k=rng.randint(1, 50),
        step=rng.choice([None, 1, 7]),
        presenter=rng.random() < 0.5,
    )


@pytest.mark.parametrize("view", HAND_MADE + [_random_view(random.Random(seed)) for seed in range(300)])
def test_a_link_reads_back_as_the_same_view(view):
    assert read(link(view)) == view
    if view.sentence_a and view.sentence_b and view.lookup_sentence:
        # with nothing empty, python's default parse_qs reads it back too
        assert from_query(parse_qs(link(view))).view == view


def test_the_link_code_loads_no_tables():
    """Links, views and the tour are read without torch: a link is plain data."""
    import subprocess
    import sys
    from pathlib import Path

    code = "import sys, core.view.share, core.view.tour, core.view.state; print('torch' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], capture_output=True,
                           text=True, check=True)
    assert found.stdout.strip() == "False"
