"""Bad input through the page's route: every call gets a clear message or a correct result.

Each case goes over HTTP to the launched app's route (`explorer/live`, ui/route.py) as the page's
script sends it, so it meets every layer a stranger's request meets: the route's reading of the
body, each field's kind (its type and limits, `core.view.fields`), the tables and core. A refused
request must leave the tab exactly as it was (its fingerprint before and after) and the server
must keep serving (a new sentence drawn afterwards). Requests that are accepted and change the
tab legitimately (a new setting, training) are checked by their result instead.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable

import httpx
import pytest

from core.view.state import SETTINGS_FIELDS
from tests.appapi import ALL, Outputs, Page, outputs

DEFAULTS = {"tokenizer": "wordpiece", "vocab_size": 1000, "d_model": 32, "maxlen": 512, "n_segments": 2, "seed": 0}
_serial = itertools.count()


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def visitor(app_url) -> Page:
    """One page for every case that must leave its tables as they were (refusals, and sentences,
    which change only the view): each case checks the fingerprint around its own call, so a case
    that did change the tables fails there. Cases that change them on purpose use `live`."""
    return Page(app_url)


def embed(page: Page, a, b="", groups=ALL) -> tuple:
    """The plot, its summary (Markdown escapes removed) and the token table the page shows for
    these sentences and groups (what it holds: text that tokenizes as before is not drawn again)."""
    page.send(groups=groups)
    out = page.send(sentence_a=a, sentence_b=b)
    assert "error" not in out and not out.notice, (out.get("error"), out.notice)
    shown = page.shown
    return shown["embed-plot"], shown["embed-info"].replace("\\", ""), shown["token-table"]


def tables(page: Page) -> str:
    """The tables' part of the fingerprint (its first part hashes the view, which sentences change)."""
    return page.fingerprint().split("-")[-1]


def tokens(table) -> list[str]:
    return [row[0] for row in table["data"]]


def settings(page: Page, **changes) -> Outputs:
    """The six settings of the random tables, sent together (the brief's `/settings`)."""
    values = {**DEFAULTS, **changes}
    return page.send(**dict(zip(SETTINGS_FIELDS, values.values(), strict=True)))


def train(page: Page, steps, corpus="builtin", a=None, b=None) -> Outputs:
    if a is not None:
        page.send(sentence_a=a, sentence_b=b)
    return page.train(steps, corpus)[0]


def assert_still_serves(page: Page) -> None:
    n = next(_serial)  # a new sentence each time: one that tokenizes as before is not drawn again
    _, info, table = embed(page, f"still serving {n}", groups=["token"])
    assert tokens(table) == ["[CLS]", "still", "serving", str(n), "[SEP]"]
    assert info.startswith("5 tokens")


def assert_refused(page: Page, send: Callable, message: str) -> None:
    """Refused with a message matching `message`, and nothing changes.

    A call the route cannot take as a whole is answered with its sentence; a setting the view
    does not allow comes back as a plain-text notice, its widget put back. Either way the message
    is a sentence, never a stack trace or a quote.
    """
    before = page.fingerprint()
    out = send(page)
    text = out.get("error", out.notice)
    assert "Traceback" not in text
    assert not re.fullmatch(r"(['\"]).*\1", text, flags=re.DOTALL), f"the message arrived quoted: {text}"
    assert re.search(message, text), text
    assert page.fingerprint() == before
    assert_still_serves(page)


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
    pytest.param(None, None, ALL, check_empty, id="none"),  # null: no text
]


@pytest.mark.parametrize(("a", "b", "groups", "check"), SENTENCES)
def test_sentences_get_a_correct_result(visitor, a, b, groups, check):
    before = tables(visitor)
    plot, info, table = embed(visitor, a, b, groups=groups)
    check(plot, info, table)
    assert tables(visitor) == before  # looking never changes the tables
    assert_still_serves(visitor)


@pytest.mark.parametrize(("a", "b", "message"), [
    # what a textbox's value cannot be: a sentence is text (null is none), anything else is refused
    pytest.param(["a", "b"], "", r"^Sentence A must be text, not list\.$", id="list"),
    pytest.param({"a": 1}, "", r"^Sentence A must be text, not dict\.$", id="dict"),
    pytest.param("twelve", 3.5, r"^Sentence B must be text, not float\.$", id="number"),
    pytest.param(True, "", r"^Sentence A must be text, not bool\.$", id="true"),
])
def test_sentences_that_are_not_text_are_refused(visitor, a, b, message):
    assert_refused(visitor, lambda page: page.send(sentence_a=a, sentence_b=b), message)


@pytest.mark.parametrize(("a", "b", "which"), [("x" * 10_001, "", "Sentence A"), ("", "é" * 20_000, "Sentence B")])
def test_sentences_over_the_limit_are_refused_before_any_work(visitor, a, b, which):
    count = f"{len(a or b):,}"
    assert_refused(visitor, lambda page: page.send(sentence_a=a, sentence_b=b),
                   rf"^{which} has {count} characters; at most 10,000 are allowed\.$")


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        pytest.param(["nope"], r"^groups may hold only token, position, segment, sum, output, not 'nope'\.$",
                     id="unknown"),
        pytest.param(["token", "Token"], r"^groups may hold only .*, not 'Token'\.$", id="one-unknown-among-known"),
        pytest.param("token", r"^groups must be a list of names from token, .*, not 'token'\.$", id="text"),
    ],
)
def test_groups_that_do_not_exist_are_refused(visitor, groups, message):
    assert_refused(visitor, lambda page: page.send(groups=groups), message)


def test_groups_none_is_no_groups(visitor):
    # null groups: nothing ticked, as an empty list
    before = tables(visitor)
    _, info, _ = embed(visitor, "hi there", groups=None)
    assert "No group is ticked" in info
    assert tables(visitor) == before


# --- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        pytest.param({"d_model": 0}, r"^d_model is 0; allowed values are 1 to 1,024\.$", id="d_model-0"),
        pytest.param({"d_model": 4096}, r"^d_model is 4,096; allowed values are 1 to 1,024\.$", id="d_model-4096"),
        pytest.param({"maxlen": 1}, r"^maxlen is 1; allowed values are 3 to 2,048\.$", id="maxlen-1"),
        pytest.param({"maxlen": 2}, r"^maxlen is 2; allowed values are 3 to 2,048\.$", id="maxlen-2"),
        pytest.param({"n_segments": 0}, r"^n_segments is 0; allowed values are 1 to 8\.$", id="n_segments-0"),
        pytest.param({"seed": -1}, r"^seed is -1; allowed values are 0 to 2,147,483,647\.$", id="seed-negative"),
        pytest.param({"seed": 2**40}, r"^seed is 1,099,511,627,776; allowed values are 0 to 2,147,483,647\.$",
                     id="seed-2**40"),
        pytest.param({"tokenizer": "word", "vocab_size": 3}, r"^vocab_size is 3; allowed values are 4 to 30,522\.$",
                     id="vocab-3"),
        pytest.param({"tokenizer": "word", "vocab_size": 10**9},
                     r"^vocab_size is 1,000,000,000; allowed values are 4 to 30,522\.$", id="vocab-10**9"),
        pytest.param({"tokenizer": "bpe"}, r"^tokenizer must be one of wordpiece, word, not 'bpe'\.$",
                     id="tokenizer-bpe"),
        pytest.param({"tokenizer": None}, r"^tokenizer must be one of wordpiece, word, not None\.$",
                     id="tokenizer-none"),
        pytest.param({"d_model": 2.5}, r"^d_model must be a whole number from 1 to 1,024, not 2\.5\.$",
                     id="d_model-2.5"),
        pytest.param({"d_model": True}, r"^d_model must be a whole number from 1 to 1,024, not True\.$",
                     id="d_model-bool"),
        pytest.param({"seed": None}, r"^seed must be a whole number from 0 to 2,147,483,647, not None\.$",
                     id="seed-none"),
        # a sentence naming the control, the bad value and that a whole number is needed
        pytest.param({"d_model": "abc"}, r"^d_model must be a whole number from 1 to 1,024, not 'abc'\.$",
                     id="d_model-string"),
        pytest.param({"d_model": None}, r"^d_model must be a whole number from 1 to 1,024, not None\.$",
                     id="d_model-none"),
        pytest.param({"tokenizer": "word", "vocab_size": "abc"},
                     r"^vocab_size must be a whole number from 4 to 30,522, not 'abc'\.$", id="vocab-string"),
    ],
)
def test_bad_settings_are_refused_and_change_nothing(visitor, changes, message):
    assert_refused(visitor, lambda page: settings(page, **changes), message)


def test_a_refused_setting_is_put_back_in_its_widget(visitor):
    out = settings(visitor, d_model=4096)
    assert out.value("d-model") == 32 and out.notice.startswith("d_model is 4,096")


def test_d_model_1_is_accepted_and_says_the_second_axis_is_empty(live):
    assert "tokens: 30,522 × 1," in settings(live, d_model=1).value("tables-info")
    _, info, table = embed(live, "one wide", "line")
    assert tokens(table) == ["[CLS]", "one", "wide", "[SEP]", "line", "[SEP]"]
    assert "The vectors have a single dimension, so the second axis is empty." in info
    assert_still_serves(live)


def test_one_segment_row_puts_sentence_b_in_segment_0_with_a_note(live):
    assert "segments: 1," in settings(live, n_segments=1).value("tables-info")
    _, info, table = embed(live, "hello there", "general kenobi")
    assert "This table has 1 segment row, so sentence B uses segment 0 like A." in info
    assert [row[3] for row in table["data"]] == [0] * len(table["data"])
    assert_still_serves(live)


# --- training ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param((0, "builtin"), r"^steps is 0; allowed values are 1 to 2,000\.$", id="steps-0"),
        pytest.param((-5, "builtin"), r"^steps is -5; allowed values are 1 to 2,000\.$", id="steps-negative"),
        pytest.param((None, "builtin"), r"^steps must be a whole number from 1 to 2,000, not None\.$", id="steps-none"),
        pytest.param((3.7, "builtin"), r"^steps must be a whole number from 1 to 2,000, not 3\.7\.$",
                     id="steps-fractional"),
        pytest.param((5, "nonsense"), r"^corpus must be one of builtin, mine, not 'nonsense'\.$",
                     id="corpus-nonsense"),
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
        pytest.param(("abc", "builtin"), r"^steps must be a whole number from 1 to 2,000, not 'abc'\.$",
                     id="steps-string"),
        pytest.param(([1], "builtin"), r"^steps must be a whole number from 1 to 2,000, not \[1\]\.$",
                     id="steps-list"),
    ],
)
def test_bad_training_requests_are_refused_and_change_nothing(visitor, args, message):
    steps, corpus, *sentences = args
    if sentences:
        visitor.send(sentence_a=sentences[0], sentence_b=sentences[1])  # "mine" trains on the tab's own sentences
    assert_refused(visitor, lambda page: train(page, steps, corpus), message)


@pytest.mark.parametrize("sent", [5, "train", [5, "builtin"], None])
def test_a_training_that_is_not_an_object_of_steps_and_corpus_is_refused(visitor, sent):
    before = visitor.fingerprint()
    with httpx.stream("POST", f"{visitor.url}explorer/live", json={"key": visitor.key, "change": {"train": sent}},
                      timeout=120) as response:
        events = [json.loads(line[5:]) for line in response.iter_lines() if line.startswith("data:")]
    assert "steps must be a whole number from 1 to 2,000, not None." in outputs(events[-1]["values"]).notice
    assert visitor.fingerprint() == before


def test_training_with_every_table_frozen_is_refused(live):
    status = live.freeze(True, True, True, True).value("param-status")
    assert "**0** of" in status and "frozen: norm, position, segment, token" in status
    assert_refused(live, lambda page: train(page, 5), r"^every table is frozen: unfreeze at least one to train\.$")


@pytest.mark.parametrize(("frozen", "message"), [
    ("token", r"^frozen must be a list of names from token, position, segment, norm, not 'token'\.$"),
    (["token", "false"], r"^frozen may hold only token, position, segment, norm, not 'false'\.$"),
    ([True], r"^frozen may hold only token, position, segment, norm, not True\.$"),
    ({"token": True}, r"^frozen must be a list of names from .*, not \{'token': True\}\.$"),
])
def test_freezes_that_are_not_a_list_of_parts_are_refused(visitor, frozen, message):
    assert_refused(visitor, lambda page: page.send(frozen=frozen), message)


# --- table source and positions ---------------------------------------------------------------


def test_upload_source_without_a_file_snaps_back(visitor):
    before = visitor.fingerprint()
    out = visitor.send(source="upload")
    assert out.value("table-source") == "random"
    assert out.notice == "No file uploaded yet: upload a table first, then choose 'Uploaded file'."
    assert visitor.fingerprint() == before
    assert_still_serves(visitor)


SOURCES = "random, bert, glove, upload"
POSITIONS = "learned, random, sinusoidal"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param("source", "nonsense", rf"^source must be one of {SOURCES}, not 'nonsense'\.$",
                     id="source-unknown"),
        pytest.param("source", ["bert"], rf"^source must be one of {SOURCES}, not \['bert'\]\.$", id="source-list"),
        pytest.param("source", 3, rf"^source must be one of {SOURCES}, not 3\.$", id="source-number"),
        pytest.param("source", None, rf"^source must be one of {SOURCES}, not None\.$", id="source-none"),
        pytest.param("positions", "rotary", rf"^positions must be one of {POSITIONS}, not 'rotary'\.$",
                     id="positions-unknown"),
        pytest.param("positions", {"kind": "random"}, rf"^positions must be one of {POSITIONS}, not \{{'kind'",
                     id="positions-dict"),
        pytest.param("positions", None, rf"^positions must be one of {POSITIONS}, not None\.$", id="positions-none"),
        pytest.param("basis", "tsne", r"^basis must be one of sentence, vocabulary, frozen, not 'tsne'\.$",
                     id="basis-unknown"),
        pytest.param("token", "abc", r"^token must be a whole number from 0 to 2,047, not 'abc'\.$",
                     id="token-string"),
    ],
)
def test_unknown_choices_are_refused(visitor, field, value, message):
    assert_refused(visitor, lambda page: page.send(**{field: value}), message)


def test_an_upload_of_nothing_is_refused_and_changes_nothing(visitor, tmp_path):
    empty = tmp_path / "table.npy"
    empty.write_bytes(b"")
    assert_refused(visitor, lambda page: page.upload(empty), r"^the file is empty; upload a file that holds a table\.$")


def test_a_refused_radio_is_put_back_to_the_current_choice(visitor):
    out = visitor.send(positions=None)
    assert out.value("positions") == "learned"
    assert out.notice.startswith("positions must be one of")
