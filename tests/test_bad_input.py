"""Bad input through the real API: every call gets a clear message or a correct result.

Each case goes through gradio_client to the launched app, so it meets every layer a
stranger's request meets: gradio's own component checks (sliders, radios, number boxes),
the app's callbacks and core. A refused request must leave the session exactly as it was
(`/fingerprint` before and after) and the server must keep serving (a normal `/embed`
afterwards). Requests that are accepted and change the session legitimately (a new
setting, training) are checked by their result instead.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable

import pytest
from appapi import ALL, Outputs, call, fingerprint
from gradio_client.exceptions import AppError

DEFAULTS = {"tokenizer": "wordpiece", "vocab_size": 1000, "d_model": 32, "maxlen": 512, "n_segments": 2, "seed": 0}
CHOICES = r"is not in the list of choices: "
# what gradio says when a callback or a component's preprocessing raises something other than gr.Error
GENERIC = "has raised an exception but has not enabled verbose error reporting"
_serial = itertools.count()


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def visitor(app_url):
    """One session for every case that must leave its tables as they were (refusals, and
    sentences, which change only the view): each case checks the fingerprint around its own
    call, so a case that did change the session fails there. Cases that change it on purpose
    use `client`."""
    from gradio_client import Client

    return Client(app_url, verbose=False)


def embed(client, a, b="", groups=ALL) -> tuple:
    """The plot, its summary (Markdown escapes removed) and the token table for these sentences and groups."""
    call(client, "/groups", groups)
    out = call(client, "/embed", a, b)
    return out["embed-plot"], out["embed-info"].replace("\\", ""), out["token-table"]


def tables(client) -> str:
    """The tables' part of the fingerprint (its first part hashes the view, which sentences change)."""
    return fingerprint(client).split("-")[-1]


def tokens(table) -> list[str]:
    return [row[0] for row in table["data"]]


def settings(client, **changes) -> Outputs:
    values = {**DEFAULTS, **changes}
    return call(client, "/settings", *values.values())


def train(client, steps, corpus="builtin", a=None, b=None) -> Outputs:
    if a is not None:
        call(client, "/embed", a, b)
    return call(client, "/train", steps, corpus)


def assert_still_serves(client) -> None:
    n = next(_serial)  # a new sentence each time: an unchanged one is answered with "no change"
    _, info, table = embed(client, f"still serving {n}", groups=["token"])
    assert tokens(table) == ["[CLS]", "still", "serving", str(n), "[SEP]"]
    assert info.startswith("5 tokens")


def assert_refused(client, send: Callable, message: str) -> None:
    """Refused with a message matching `message`, and nothing changes.

    A malformed widget payload (a string for a slider, a value no radio offers) is refused by
    the widget with an error; a well-formed value the app does not allow comes back as a
    plain-text notice. Either way the message is a sentence, never a stack trace or a quote.
    """
    before = fingerprint(client)
    try:
        out = send(client)
    except AppError as refused:
        text = str(refused)
        assert GENERIC not in text and "Traceback" not in text
        assert not re.fullmatch(r"(['\"]).*\1", text, flags=re.DOTALL), f"the message arrived quoted: {text}"
        assert re.search(message, text), text
    else:
        assert re.search(message, out.notice), out.notice
    assert fingerprint(client) == before
    assert_still_serves(client)


# --- sentences --------------------------------------------------------------------------------

MARKERS = {"[CLS]": 101, "[SEP]": 102, "[MASK]": 103, "[PAD]": 0}


def check_empty(plot, info, table):
    assert tokens(table) == ["[CLS]", "[SEP]"]
    assert info.startswith("2 tokens (0 from A, 0 from B, 2 markers)")


def check_long_a(plot, info, table):
    assert len(table["data"]) == 512
    assert "Sentence A has 5000 tokens; this table has 512 positions, so it was cut to 510." in info


def check_long_b(plot, info, table):
    assert len(table["data"]) == 512
    assert tokens(table)[:3] == ["[CLS]", "short", "[SEP]"]
    assert "Sentence B has 5000 tokens; this table has 512 positions, so it was cut to 508." in info


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
    pytest.param("a " * 5_000, "", ["token"], check_long_a, id="10k-chars-in-A"),
    pytest.param("short", "b " * 5_000, ["token"], check_long_b, id="10k-chars-in-B"),
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
    before = tables(visitor)
    plot, info, table = embed(visitor, a, b, groups=groups)
    check(plot, info, table)
    assert tables(visitor) == before  # looking never changes the tables
    assert_still_serves(visitor)


@pytest.mark.parametrize(("a", "b", "which"), [("x" * 10_001, "", "Sentence A"), ("", "é" * 20_000, "Sentence B")])
def test_sentences_over_the_limit_are_refused_before_any_work(visitor, a, b, which):
    count = f"{len(a or b):,}"
    assert_refused(visitor, lambda c: call(c, "/embed", a, b),
                   rf"^{which} has {count} characters; at most 10,000 are allowed\.$")


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        pytest.param(["nope"], rf"'nope'.* {CHOICES}\['token', 'position', 'segment', 'sum', 'output'\]", id="unknown"),
        pytest.param(["token", "Token"], rf"'Token'.* {CHOICES}", id="one-unknown-among-known"),
    ],
)
def test_groups_that_do_not_exist_are_refused(visitor, groups, message):
    assert_refused(visitor, lambda c: embed(c, "some words", groups=groups), message)


def test_groups_none_is_no_groups(visitor):
    # the group checkboxes read None as nothing ticked (widgets.CheckboxGroup)
    before = tables(visitor)
    _, info, _ = embed(visitor, "hi there", groups=None)
    assert "No group is ticked" in info
    assert tables(visitor) == before


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
            r"^Value 1000000000 is greater than maximum value 30522\.$",
            id="vocab-10**9",
        ),
        pytest.param({"tokenizer": "bpe"}, rf"'bpe'.* {CHOICES}\['wordpiece', 'word'\]", id="tokenizer-bpe"),
        pytest.param(
            {"tokenizer": None}, r"^tokenizer must be one of wordpiece, word, not None\.$", id="tokenizer-none"
        ),
        pytest.param({"d_model": 2.5}, r"^d_model must be a whole number from 1 to 1,024, not 2\.5\.$",
                     id="d_model-2.5"),
        pytest.param({"d_model": True}, r"^d_model must be a whole number from 1 to 1,024, not True\.$",
                     id="d_model-bool"),
        pytest.param({"seed": None}, r"^seed must be a whole number from 0 to 2,147,483,647, not None\.$",
                     id="seed-none"),
        # a sentence naming the control, the bad value and that a number is needed
        pytest.param({"d_model": "abc"}, r"^d_model \(vector width\) must be a number from 1 to 1024, not 'abc'\.$",
                     id="d_model-string"),
        pytest.param({"d_model": None}, r"^d_model \(vector width\) must be a number from 1 to 1024, not None\.$",
                     id="d_model-none"),
        pytest.param({"tokenizer": "word", "vocab_size": "abc"},
                     r"^Vocabulary size \(words\) must be a number, not 'abc'\.$", id="vocab-string"),
    ],
)
def test_bad_settings_are_refused_and_change_nothing(visitor, changes, message):
    assert_refused(visitor, lambda c: settings(c, **changes), message)


def test_d_model_1_is_accepted_and_says_the_second_axis_is_empty(client):
    assert "tokens: 30,522 × 1," in settings(client, d_model=1).value("tables-info")
    _, info, table = embed(client, "one wide", "line")
    assert tokens(table) == ["[CLS]", "one", "wide", "[SEP]", "line", "[SEP]"]
    assert "The vectors have a single dimension, so the second axis is empty." in info
    assert_still_serves(client)


def test_one_segment_row_puts_sentence_b_in_segment_0_with_a_note(client):
    assert "segments: 1," in settings(client, n_segments=1).value("tables-info")
    _, info, table = embed(client, "hello there", "general kenobi")
    assert "This table has 1 segment row, so sentence B uses segment 0 like A." in info
    assert [row[3] for row in table["data"]] == [0] * len(table["data"])
    assert_still_serves(client)


# --- training ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param((0, "builtin"), r"^Value 0 is less than minimum value 1\.$", id="steps-0"),
        pytest.param((-5, "builtin"), r"^Value -5 is less than minimum value 1\.$", id="steps-negative"),
        pytest.param((10**9, "builtin"), r"^Value 1000000000 is greater than maximum value 2000\.$", id="steps-10**9"),
        pytest.param((None, "builtin"), r"^steps must be a whole number from 1 to 2,000, not None\.$", id="steps-none"),
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
        pytest.param(("abc", "builtin"), r"^Steps must be a number, not 'abc'\.$", id="steps-string"),
        pytest.param(([1], "builtin"), r"^Steps must be a number, not \[1\]\.$", id="steps-list"),
    ],
)
def test_bad_training_requests_are_refused_and_change_nothing(visitor, args, message):
    steps, corpus, *sentences = args
    if sentences:
        call(visitor, "/embed", *sentences)  # "mine" trains on the tab's own sentences
    assert_refused(visitor, lambda c: train(c, steps, corpus), message)


def test_fractional_steps_are_rounded_by_the_number_box(client):
    # gr.Number(precision=0) rounds 3.7 to 4 before the callback sees it, as the page's box does
    out = train(client, 3.7, "mine", "a tiny corpus", "of two lines")
    assert out.value("train-summary").startswith("Trained 4 steps")
    assert_still_serves(client)


def test_training_with_every_table_frozen_is_refused(client):
    status = call(client, "/freeze", True, True, True, True).value("param-status")
    assert "**0** of" in status and "frozen: norm, position, segment, token" in status
    assert_refused(client, lambda c: train(c, 5), r"^every table is frozen: unfreeze at least one to train\.$")


def test_freeze_flags_that_are_not_booleans_are_refused(client):
    assert_refused(client, lambda c: call(c, "/freeze", "false", False, False, False),
                   r"^token must be true or false, not 'false'\.$")


# --- table source and positions ---------------------------------------------------------------


def test_upload_source_without_a_file_snaps_back(visitor):
    before = fingerprint(visitor)
    out = call(visitor, "/source", "upload")
    assert out.value("table-source") == "random"
    assert out.notice == "No file uploaded yet: upload a table first, then choose 'Uploaded file'."
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
        pytest.param("/source", None, r"^source must be one of random, bert, glove, upload, not None\.$",
                     id="source-none"),
        pytest.param("/positions", "rotary", rf"'rotary'.* {CHOICES}{POSITION_CHOICES}", id="positions-unknown"),
        pytest.param(
            "/positions", {"kind": "random"}, rf"\{{'kind'.* {CHOICES}{POSITION_CHOICES}", id="positions-dict"
        ),
        pytest.param("/positions", None, r"^positions must be one of learned, random, sinusoidal, not None\.$",
                     id="positions-none"),
        pytest.param("/basis", "tsne", rf"'tsne'.* {CHOICES}", id="basis-unknown"),
        pytest.param("/select", "abc", r"^token must be a whole number from 0 to 2,047, not 'abc'\.$",
                     id="token-string"),
        pytest.param("/upload", None, r"^No file arrived; choose a table file to upload\.$", id="upload-nothing"),
    ],
)
def test_unknown_choices_are_refused(visitor, api, value, message):
    assert_refused(visitor, lambda c: call(c, api, value), message)


def test_a_refused_radio_is_put_back_to_the_current_choice(visitor):
    out = call(visitor, "/positions", None)
    assert out.value("positions") == "learned"
    assert out.notice.startswith("positions must be one of")
