"""Bad input through the real API: every call gets a clear message or a correct result.

Each case goes through gradio_client to the launched app, so it meets every layer a
stranger's request meets: gradio's own component checks (sliders, radios, number boxes),
the app's callbacks and core. A refused request must leave the session exactly as it was
(`/fingerprint` before and after) and the server must keep serving (a normal `/embed`
afterwards). Requests that are accepted and change the session legitimately (a new
setting, training) are checked by their result instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from gradio_client.exceptions import AppError

from core.embedding import COMPONENTS

ALL = list(COMPONENTS)
DEFAULTS = {"tokenizer": "wordpiece", "vocab_size": 1000, "d_model": 32, "maxlen": 512, "n_segments": 2, "seed": 0}
CHOICES = r"is not in the list of choices: "
# what gradio says when a callback or a component's preprocessing raises something other than gr.Error
GENERIC = "has raised an exception but has not enabled verbose error reporting"



# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def visitor(app_url):
    """One session for every case that must leave it as it was (refusals, and /embed, which
    only looks): each case checks the fingerprint around its own call, so a case that did
    change the session fails there. Cases that change it on purpose use `client`."""
    from gradio_client import Client

    return Client(app_url, verbose=False)


def embed(client, a, b="", groups=ALL, labels=True, arrows=False):
    return client.predict(a, b, groups, labels, arrows, api_name="/embed")[:3]  # plot, summary, token table


def fingerprint(client) -> str:
    return client.predict(api_name="/fingerprint")


def tokens(table) -> list[str]:
    return [row[0] for row in table["data"]]


def settings(client, **changes):
    values = {**DEFAULTS, **changes}
    return client.predict(*values.values(), api_name="/settings")


def train(client, steps, corpus="builtin", a="", b=""):
    return client.predict(steps, corpus, a, b, api_name="/train")


def assert_still_serves(client) -> None:
    _, info, table = embed(client, "still serving", groups=["token"])
    assert tokens(table) == ["[CLS]", "still", "serving", "[SEP]"]
    assert info.startswith("**4 tokens**")


def assert_refused(client, call: Callable, message: str) -> AppError:
    """The call is refused with a message matching `message`, and nothing changes."""
    before = fingerprint(client)
    with pytest.raises(AppError, match=message) as refused:
        call(client)
    text = str(refused.value)
    assert GENERIC not in text and "Traceback" not in text
    assert not re.fullmatch(r"(['\"]).*\1", text, flags=re.DOTALL), f"the message arrived quoted: {text}"
    assert fingerprint(client) == before
    assert_still_serves(client)
    return refused.value


# --- sentences --------------------------------------------------------------------------------

MARKERS = {"[CLS]": 101, "[SEP]": 102, "[MASK]": 103, "[PAD]": 0}


def check_empty(plot, info, table):
    assert tokens(table) == ["[CLS]", "[SEP]"]
    assert info.startswith("**2 tokens** (0 from A, 0 from B, 2 markers)")


def check_long_a(plot, info, table):
    assert len(table["data"]) == 512
    assert "Sentence A has 50000 tokens; this table has 512 positions, so it was cut to 510." in info


def check_long_b(plot, info, table):
    assert len(table["data"]) == 512
    assert tokens(table)[:3] == ["[CLS]", "short", "[SEP]"]
    assert "Sentence B has 50000 tokens; this table has 512 positions, so it was cut to 508." in info


def expect_tokens(*expected: str, unknown: int = 0):
    def check(plot, info, table):
        assert tokens(table) == list(expected)
        if unknown:
            assert f"{unknown} token(s) are not in the vocabulary and became [UNK]." in info
        else:
            assert "[UNK]" not in info

    return check


def check_cjk(plot, info, table):
    # each CJK character is its own piece; the uncased vocabulary lacks most of them
    assert tokens(table)[:2] == ["[CLS]", "我"] and len(table["data"]) == 10


def check_rtl(plot, info, table):
    rows = table["data"]
    first_sep = tokens(table).index("[SEP]")
    assert tokens(table)[1] == "م" and tokens(table)[first_sep + 1] == "ש"
    assert {row[3] for row in rows[: first_sep + 1]} == {0}
    assert {row[3] for row in rows[first_sep + 1 :]} == {1}


def check_typed_markers(plot, info, table):
    # typed markers are text: brackets and words, never the tokenizer's marker rows
    assert tokens(table) == [
        "[CLS]",
        *("[", "cl", "##s", "]", "[", "sep", "]", "[", "mask", "]", "[", "pad", "]"),
        "[SEP]",
        *("[", "sep", "]"),
        "[SEP]",
    ]
    marker_rows = [k for k, row in enumerate(table["data"]) if row[1] in MARKERS.values()]
    assert marker_rows == [0, 14, 18]  # the [CLS] and two [SEP] the tokenizer inserted
    assert [row[3] for row in table["data"]] == [0] * 15 + [1] * 4


def check_markup(plot, info, table):
    raw = plot["plot"]
    assert "<img" not in raw
    figure = json.loads(raw)
    hover = [text for trace in figure["data"] for text in trace.get("hovertext") or ()]
    assert "&lt;" in hover and "&gt;" in hover
    assert not any("<" in text for text in hover)
    assert tokens(table)[1] == "<"  # the table shows the text as typed; only the plot's markup is escaped


def check_no_groups(plot, info, table):
    assert json.loads(plot["plot"])["data"] == []
    assert "No group is ticked" in info
    assert tokens(table) == ["[CLS]", "hi", "[SEP]"]


SENTENCES = [
    pytest.param("", "", ALL, check_empty, id="empty"),
    pytest.param(" \n\t  ", "   ", ALL, check_empty, id="whitespace-only"),
    pytest.param("a " * 50_000, "", ["token"], check_long_a, id="100k-chars-in-A"),
    pytest.param("short", "b " * 50_000, ["token"], check_long_b, id="100k-chars-in-B"),
    pytest.param(
        "I 😀 love 🐍",
        "👩‍👩‍👧",
        ALL,
        expect_tokens("[CLS]", "i", "[UNK]", "love", "[UNK]", "[SEP]", "[UNK]", "[SEP]", unknown=3),
        id="emoji",
    ),
    pytest.param("我爱自然语言处理", "", ALL, check_cjk, id="cjk"),
    pytest.param("مرحبا بالعالم", "שלום עולם", ALL, check_rtl, id="arabic-and-hebrew"),
    pytest.param("cafe\u0301 n\u0303", "", ALL, expect_tokens("[CLS]", "cafe", "n", "[SEP]"), id="combining-marks"),
    pytest.param("a\u200bb\u200d\ufeffc", "", ALL, expect_tokens("[CLS]", "abc", "[SEP]"), id="zero-width"),
    pytest.param("a\x01\x07\x1b b", "", ALL, expect_tokens("[CLS]", "a", "b", "[SEP]"), id="control-chars"),
    pytest.param("a\x00b", "\x00", ALL, expect_tokens("[CLS]", "ab", "[SEP]"), id="nul"),
    pytest.param("[CLS] [SEP] [MASK] [PAD]", "[SEP]", ALL, check_typed_markers, id="typed-markers"),
    pytest.param("<img src=x onerror=alert(1)>", "", ["token", "sum"], check_markup, id="markup"),
    pytest.param("hi", "", [], check_no_groups, id="no-groups"),
    # wrong types: the textbox turns any JSON value into its text, and that text is embedded
    pytest.param(
        ["a", "b"], "", ALL, expect_tokens("[CLS]", "[", "'", "a", "'", ",", "'", "b", "'", "]", "[SEP]"), id="list"
    ),
    pytest.param({"a": 1}, "", ALL, expect_tokens("[CLS]", "{", "'", "a", "'", ":", "1", "}", "[SEP]"), id="dict"),
    pytest.param(12, 3.5, ALL, expect_tokens("[CLS]", "12", "[SEP]", "3", ".", "5", "[SEP]"), id="numbers"),
    pytest.param(None, None, ALL, check_empty, id="none"),
]


@pytest.mark.parametrize(("a", "b", "groups", "check"), SENTENCES)
def test_sentences_get_a_correct_result(visitor, a, b, groups, check):
    before = fingerprint(visitor)
    plot, info, table = embed(visitor, a, b, groups=groups)
    check(plot, info, table)
    assert fingerprint(visitor) == before  # looking never changes the session
    assert_still_serves(visitor)


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        pytest.param(["nope"], rf"'nope'.* {CHOICES}\['token', 'position', 'segment', 'sum', 'output'\]", id="unknown"),
        pytest.param(["token", "Token"], rf"'Token'.* {CHOICES}", id="one-unknown-among-known"),
    ],
)
def test_groups_that_do_not_exist_are_refused(visitor, groups, message):
    assert_refused(visitor, lambda c: embed(c, "some words", groups=groups), message)


def test_groups_none_is_no_groups_or_a_clear_message(visitor):
    # the group checkboxes read None as nothing ticked (widgets.CheckboxGroup)
    before = fingerprint(visitor)
    try:
        _, info, _ = embed(visitor, "hi", groups=None)
    except AppError as refused:
        assert GENERIC not in str(refused)
    else:
        assert "No group is ticked" in info
    assert fingerprint(visitor) == before


# --- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param({"d_model": 0}, r"^Value 0 is less than minimum value 1\.$", id="d_model-0"),
        pytest.param({"d_model": 4096}, r"^Value 4096 is greater than maximum value 1024\.$", id="d_model-4096"),
        pytest.param({"maxlen": 1}, r"^Value 1 is less than minimum value 3\.$", id="maxlen-1"),
        pytest.param({"maxlen": 2}, r"^Value 2 is less than minimum value 3\.$", id="maxlen-2"),
        pytest.param({"n_segments": 0}, r"^Value 0 is less than minimum value 1\.$", id="n_segments-0"),
        pytest.param({"seed": -1}, r"^Value -1 is less than minimum value 0\.$", id="seed-negative"),
        pytest.param(
            {"seed": 2**40}, r"^Value 1099511627776 is greater than maximum value 2147483647\.$", id="seed-2**40"
        ),
        pytest.param({"tokenizer": "word", "vocab_size": 3}, r"^Value 3 is less than minimum value 4\.$", id="vocab-3"),
        pytest.param(
            {"tokenizer": "word", "vocab_size": 10**9},
            r"^Value 1000000000 is greater than maximum value 100000\.$",
            id="vocab-10**9",
        ),
        pytest.param({"tokenizer": "bpe"}, rf"'bpe'.* {CHOICES}\['wordpiece', 'word'\]", id="tokenizer-bpe"),
        pytest.param(
            {"tokenizer": None}, r"^tokenizer must be one of wordpiece, word, not None\.$", id="tokenizer-none"
        ),
        pytest.param({"d_model": 2.5}, r"^d_model must be a whole number, not 2\.5\.$", id="d_model-2.5"),
        pytest.param({"d_model": True}, r"^d_model must be a whole number, not True\.$", id="d_model-bool"),
        pytest.param({"seed": None}, r"^seed must be a whole number, not None\.$", id="seed-none"),
        # the correct behaviour: a sentence naming the bad value and that a number is needed
        pytest.param(
            {"d_model": "abc"},
            r"'abc'.*number|number.*'abc'",
            id="d_model-string",
        ),
        pytest.param(
            {"d_model": None},
            r"None.*number|number.*None",
            id="d_model-none",
        ),
        pytest.param(
            {"tokenizer": "word", "vocab_size": "abc"},
            r"'abc'.*number|number.*'abc'",
            id="vocab-string",
        ),
    ],
)
def test_bad_settings_are_refused_and_change_nothing(visitor, changes, message):
    assert_refused(visitor, lambda c: settings(c, **changes), message)


def test_d_model_1_is_accepted_and_says_the_second_axis_is_empty(client):
    _, tables_info, _ = settings(client, d_model=1)
    assert "tokens: 30,522 × 1," in tables_info
    _, info, table = embed(client, "one wide", "line")
    assert tokens(table) == ["[CLS]", "one", "wide", "[SEP]", "line", "[SEP]"]
    assert "The vectors have a single dimension, so the second axis is empty." in info
    assert_still_serves(client)


def test_one_segment_row_puts_sentence_b_in_segment_0_with_a_note(client):
    _, tables_info, _ = settings(client, n_segments=1)
    assert "segments: 1," in tables_info
    _, info, table = embed(client, "hello there", "general kenobi")
    assert "This table has 1 segment row, so sentence B uses segment 0 like A." in info
    assert [row[3] for row in table["data"]] == [0] * len(table["data"])
    assert_still_serves(client)


# --- training ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param((0, "builtin"), r"Training steps is 0; choose 1 to 2,000\.", id="steps-0"),
        pytest.param((-5, "builtin"), r"Training steps is -5; choose 1 to 2,000\.", id="steps-negative"),
        pytest.param((None, "builtin"), r"Training steps must be a whole number from 1 to 2,000\.", id="steps-none"),
        pytest.param((5, "nonsense"), rf"'nonsense'.* {CHOICES}\['builtin', 'mine'\]", id="corpus-nonsense"),
        pytest.param(
            (5, "mine", "", ""),
            r"^the text has no sentences: write one per line, or end each with \. ! or \?$",
            id="mine-both-empty",
        ),
        pytest.param(
            (5, "mine", "\u200b", "\x01"),
            r"^the corpus gives no words to train on: its sentences are empty once tokenized",
            id="mine-invisible-chars",
        ),
        pytest.param(
            ("abc", "builtin"),
            r"'abc'.*number|number.*'abc'",
            id="steps-string",
        ),
        pytest.param(
            ([1], "builtin"),
            r"\[1\].*number|number.*\[1\]",
            id="steps-list",
        ),
    ],
)
def test_bad_training_requests_are_refused_and_change_nothing(visitor, args, message):
    assert_refused(visitor, lambda c: train(c, *args), message)


def test_huge_step_counts_are_capped_at_2000(client):
    _, summary = train(client, 10**9, "mine", "a tiny corpus", "of two lines")
    assert summary.startswith("Trained 2000 steps")
    assert_still_serves(client)


def test_fractional_steps_are_rounded_by_the_number_box(client):
    # gr.Number(precision=0) rounds 3.7 to 4 before the callback sees it, as the page's box does
    _, summary = train(client, 3.7, "mine", "a tiny corpus", "of two lines")
    assert summary.startswith("Trained 4 steps")
    assert_still_serves(client)


def test_training_with_every_table_frozen_is_refused(client):
    status = client.predict(True, True, True, True, api_name="/freeze")
    assert "**0** of" in status and "frozen: norm, position, segment, token" in status
    assert_refused(client, lambda c: train(c, 5), r"^every table is frozen: unfreeze at least one to train\.$")


def test_freeze_flags_that_are_not_booleans_are_refused_or_read_right(client):
    before = fingerprint(client)
    try:
        status = client.predict("false", False, False, False, api_name="/freeze")
    except AppError as refused:
        assert GENERIC not in str(refused)
        assert fingerprint(client) == before
    else:
        assert "frozen: nothing" in status


# --- table source and positions ---------------------------------------------------------------


def test_upload_source_without_a_file_snaps_back(visitor):
    before = fingerprint(visitor)
    source, info, *_ = visitor.predict("upload", api_name="/source")
    assert source == "random" and info.startswith("**Random")
    assert fingerprint(visitor) == before
    assert_still_serves(visitor)


SOURCE_CHOICES = r"\['random', 'bert', 'glove', 'upload'\]"
POSITION_CHOICES = r"\['learned', 'random', 'sinusoidal'\]"


@pytest.mark.parametrize(
    ("api", "value", "message"),
    [
        pytest.param("/source", "nonsense", rf"'nonsense'.* {CHOICES}{SOURCE_CHOICES}", id="source-unknown"),
        pytest.param("/source", ["bert"], rf"\['bert'\].* {CHOICES}{SOURCE_CHOICES}", id="source-list"),
        pytest.param("/source", 3, rf"3 .* {CHOICES}{SOURCE_CHOICES}", id="source-number"),
        pytest.param("/positions", "rotary", rf"'rotary'.* {CHOICES}{POSITION_CHOICES}", id="positions-unknown"),
        pytest.param(
            "/positions", {"kind": "random"}, rf"\{{'kind'.* {CHOICES}{POSITION_CHOICES}", id="positions-dict"
        ),
    ],
)
def test_unknown_sources_and_positions_are_refused(visitor, api, value, message):
    assert_refused(visitor, lambda c: c.predict(value, api_name=api), message)


@pytest.mark.parametrize("api", ["/source", "/positions"])
def test_none_for_a_radio_keeps_the_current_choice(visitor, api):
    before = fingerprint(visitor)
    info = visitor.predict(None, api_name=api)[-2]
    assert info.startswith("**Random") and "learned (from the source)" in info
    assert fingerprint(visitor) == before
    assert_still_serves(visitor)


# --- the messages themselves ------------------------------------------------------------------


# gr.Error is a ValueError, and str() of one is the repr of its message: a callback wrapper
# that re-wrapped it would deliver the sentence inside quotes
@pytest.mark.parametrize(
    ("call", "message"),
    [
        pytest.param(lambda c: train(c, 0), "Training steps is 0; choose 1 to 2,000.", id="train-steps"),
        pytest.param(
            lambda c: c.predict(None, api_name="/upload"),
            "No file arrived; choose a table file to upload.",
            id="upload-nothing",
        ),
    ],
)
def test_messages_the_app_writes_arrive_as_written(visitor, call, message):
    refused = assert_refused(visitor, call, re.escape(message))
    assert str(refused) == message
