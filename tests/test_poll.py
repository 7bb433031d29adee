"""The class poll (core/serving/poll.py, and the rounds `Classroom` keeps beside its lessons).

The values and checks are tested on their own; the rounds through a `Classroom` on the one store,
`RedisStore`, on fakeredis and on a real redis-server, as tests/test_classroom.py tests the
lessons, with the same fixtures: real `Tab`s, a hand clock for the store (a round's rate limits,
a class's grace) and for the writer (how often a round is announced). What another thread
delivers is waited for with a bounded poll, never a timed sleep.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
import threading

import pytest

import core.serving.classroom as classroom
import core.serving.poll as poll
from core.serving.classroom import ENDED, NOT_FOLLOWING, NOT_LECTURER, Classroom, Forbidden, Gone, Reconnecting
from core.serving.classrounds import (
    ENOUGH,
    LOOKS_HIDDEN,
    MODERATED,
    NOT_ASKED,
    NOT_OPEN,
    OTHER_ROUND,
    POLL_SECONDS,
    ROUND_FULL,
)
from core.serving.classstore import RECONNECTING, Full, RedisStore
from core.serving.poll import (
    INVISIBLE,
    MAX_ANSWERS,
    MAX_DRAWN,
    MAX_PROMPT,
    MAX_WORD,
    MIXED,
    NO_ROUND,
    NOT_A_PROMPT,
    NOT_A_WORD,
    PROMPTS,
    STACKED,
    Round,
    checked_prompt,
    checked_word,
    csv_of,
)
from core.serving.wording import MAX_MARKS, skeleton
from core.view.options import Refused
from tests import test_classroom
from tests.clocks import Clock
from tests.waiting import eventually

# the class tests' fixtures, as they are: the store's hand clock, the store on both servers, every classroom closed
clock, stores, store, closed = test_classroom.clock, test_classroom.stores, test_classroom.store, test_classroom.closed
key_of, tab = test_classroom.key_of, test_classroom.tab

HOSTILE = [None, True, 3, 1.5, [], ["queen"], {"word": "queen"}, "", "\u0000", "queen\u0000", "x" * 10_000_000,
           "<b>queen</b>", "<script>alert(1)</script>", "two words", "=1+1"]


def a_round(counts: dict[str, int], hidden=(), approved=(), review=False, prompt="Type a word.") -> Round:
    return Round(1, prompt, True, review, counts, frozenset(hidden), frozenset(approved), sum(counts.values()),
                 len(counts), 1)


@pytest.fixture()
def room(store) -> Classroom:
    return Classroom(store)


def lecture(room: Classroom, address: str = "10.9.0.1"):
    """A class started on `room` by a lecturer's tab: (its tab, the class id, the secret)."""
    lecturer = tab()
    lesson, secret = room.start(lecturer, address)
    return lecturer, lesson.id, secret


def students(room: Classroom, class_id: str, n: int) -> list:
    made = [tab() for _ in range(n)]
    for student in made:
        room.join(student, class_id)
    return made


def kept(room: Classroom, class_id: str) -> Round:
    """The round as the store keeps it (what every process reads)."""
    return room.store.poll(class_id) or NO_ROUND


# --- values: prompts and words ---------------------------------------------------------------------


def test_a_prompt_is_stripped_text_of_at_most_120_characters():
    assert checked_prompt("  Type a word you would put next to king.  ") == "Type a word you would put next to king."
    assert checked_prompt("x" * MAX_PROMPT) == "x" * MAX_PROMPT
    assert checked_prompt("=HYPERLINK(\"x\") is text too") == "=HYPERLINK(\"x\") is text too"  # shown as text
    for bad in (None, 7, ["a prompt"], "", "   ", "x" * (MAX_PROMPT + 1), "x" * 10_000_000, "a\u0000b",
                "line\nbreak", "bell\x07", "right\u202eto left"):
        with pytest.raises(Refused) as refused:
            checked_prompt(bad)
        assert str(refused.value) == NOT_A_PROMPT
    assert all(checked_prompt(prompt) == prompt for prompt in PROMPTS)


def test_a_word_is_one_casefolded_word_of_letters_digits_hyphens_and_apostrophes():
    assert checked_word("  Queen ") == "queen"
    assert checked_word("QUEEN") == checked_word("queen") == "queen"
    assert checked_word("don\u2019t") == checked_word("don't") == "don't"  # a phone's apostrophe
    assert checked_word("e\u0301te\u0301") == "\u00e9t\u00e9"  # NFC: one way to write é
    assert checked_word("Straße") == "strasse"
    assert checked_word("नमस्ते") == "नमस्ते"  # a script whose vowel signs are marks
    assert checked_word("東京") == "東京" and checked_word("3d") == "3d" and checked_word("well-known") == "well-known"
    assert checked_word("x" * MAX_WORD) == "x" * MAX_WORD


@pytest.mark.parametrize("bad", HOSTILE[:11] + ["two words", "-dash", "'quote", "under_score", "x" * (MAX_WORD + 1),
                                                 "a.b", "tab\tx", "e\u0301" * 31, "💥"])
def test_anything_else_is_refused_with_a_sentence_that_names_what_is_allowed(bad):
    with pytest.raises(Refused) as refused:
        checked_word(bad)
    assert str(refused.value) == NOT_A_WORD


@pytest.mark.parametrize("markup", ["<b>queen</b>", "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
                                    "&lt;b&gt;", "queen<", "=1+1", "+cmd", "@sum"])
def test_markup_or_a_formula_is_never_a_word_and_never_echoed(markup):
    with pytest.raises(Refused) as refused:
        checked_word(markup)
    assert markup not in str(refused.value) and "<" not in str(refused.value)


# --- words a moderator can trust: one spelling, nothing invisible, no spoof ------------------------------

# one of each kind Unicode calls default-ignorable (drawn as nothing), and a format character that is not
INVISIBLES = ["\ufe0f", "\ufe00", "\U000e0100", "\u034f", "\u200d", "\u200c", "\u200b", "\u2060", "\u2064", "\ufeff",
              "\u00ad", "\u180b", "\u180e", "\u3164", "\uffa0", "\u115f", "\u1160", "\u17b4", "\U000e0001",
              "\U000e0067", "\U000e007f", "\u202e", "\u2066", "\u0600"]


@pytest.mark.parametrize("invisible", INVISIBLES)
def test_an_invisible_character_anywhere_in_a_word_is_left_out(invisible):
    assert checked_word("king" + invisible) == checked_word(invisible + "ki" + invisible + "ng") == "king"


def test_a_word_is_counted_in_its_one_spelling_nfkc_and_case_folded():
    assert checked_word("ｋｉｎｇ") == checked_word("KING") == "king"  # fullwidth letters are letters
    assert checked_word("ﬁsh") == "fish" and checked_word("Ǆ") == "dž" and checked_word("①") == "1"
    assert checked_word("ΣΊΣΥΦΟΣ") == checked_word("σίσυφος") == "σίσυφοσ"  # case folded: one sigma
    assert checked_word("e\u034f\u0301") == "\u00e9"  # the joiner that kept the accent apart is gone: é


@pytest.mark.parametrize("word", ["straße", "ελλάδα", "Ελλάδα", "москва", "Москва", "日本語", "tiếng", "Việt",
                                  "नमस्ते", "चीज़ें", "don't", "co-op", "العربية", "עברית", "ภาษาไทย", "한국어",
                                  "東京タワー", "ひらがなとカタカナ", "ok漢字かなカナ", "abc한국어", "中文ㄅㄆ", "3d",
                                  "über", "བསྒྲུབས", "ordinateur", "mère", "ǆungla"])
def test_real_words_in_any_script_are_taken_and_spelled_once(word):
    assert checked_word(checked_word(word)) == checked_word(word)  # the lecturer's Hide sends it back as listed
    assert checked_word(word) == checked_word(word.upper())


def test_real_words_in_other_scripts_keep_their_letters():
    sent = ("Straße", "ΕΛΛΆΔΑ", "МОСКВА", "日本語", "TIẾNG", "नमस्ते", "Don't", "CO-OP")
    assert [checked_word(word) for word in sent] == ["strasse", "ελλάδα", "москва", "日本語", "tiếng", "नमस्ते", "don't",
                                                      "co-op"]


@pytest.mark.parametrize("empty", ["\u3164", "\u3164" * 3, "\uffa0", "\u115f\u1160", "\u200b", "\ufe0f", "\u034f",
                                   "\u3164\u200d\u3164", "\U000e0067\U000e0062", " \u00ad "])
def test_a_word_that_shows_nothing_is_refused_with_a_sentence(empty):
    with pytest.raises(Refused) as refused:
        checked_word(empty)
    assert str(refused.value) == INVISIBLE
    assert empty.strip() not in str(refused.value)


@pytest.mark.parametrize("piled", ["e" + "".join(map(chr, range(0x0300, 0x031B))),  # 27 marks on one letter
                                   "king" + "".join(map(chr, range(0x0300, 0x031B))), "a\u0300\u0301\u0302\u0303\u0304",
                                   "e\u0301\u0301", "ko\u0308\u0308nig", "z" + "\u0336" * 2])
def test_a_pile_of_marks_on_a_letter_is_refused_with_a_sentence(piled):
    with pytest.raises(Refused) as refused:
        checked_word(piled)
    assert str(refused.value) == STACKED and str(MAX_MARKS) in STACKED


def test_up_to_four_different_marks_on_a_letter_are_taken():
    assert MAX_MARKS == 4  # TR39 5.4: more than 4 nonspacing marks in a row is refused
    assert checked_word("a\u0300\u0301\u0302\u0303") == "\u00e0\u0301\u0302\u0303"  # NFC composes the first
    assert checked_word("ệ") == "ệ" and checked_word("a\u0323\u0302\u0301") == "ậ\u0301"


@pytest.mark.parametrize("spoof", ["kіng", "kinɡ\u0456", "pаypal", "gοοd", "ϲat", "queеn", "kiнg", "аpple1",
                                   "日本語ab中文б", "한국어ひらがな"])
def test_a_word_mixing_scripts_as_a_spoof_does_is_refused_with_a_sentence(spoof):
    with pytest.raises(Refused) as refused:
        checked_word(spoof)
    assert str(refused.value) == MIXED and spoof not in MIXED


def test_look_alikes_share_a_skeleton_and_other_words_do_not():
    assert skeleton("king") == skeleton("kіng") == skeleton(checked_word("ｋｉｎｇ")) == "king"  # Cyrillic і
    assert skeleton("cop") == skeleton("сор") and skeleton("scope") == skeleton("ѕсоре")  # whole words of Cyrillic
    assert skeleton("modern") == skeleton("rnodern")  # TR39's own: m looks like r n
    assert skeleton("king") != skeleton("kind") and skeleton("cop") != skeleton("cap")
    assert len({skeleton(word) for word in ("king", "kind", "queen", "prince", "москва", "ελλάδα")}) == 6


@pytest.mark.parametrize(("invisible", "prompt"), [
    ("\u200b", "Type\u200b a word."), ("\ufeff", "\ufeffType a word."), ("\u2060", "Type a\u2060 word.\u2060"),
    ("\u3164", "Type a word.\u3164"), ("\u00ad", "Type a wo\u00adrd."), ("\ufe0f", "Type a word.\ufe0f")])
def test_a_prompt_leaves_out_invisible_characters(invisible, prompt):
    assert checked_prompt(prompt) == "Type a word."


def test_a_prompt_is_one_line_of_visible_text_and_keeps_its_compatibility_characters():
    assert checked_prompt("Type ½ a word, in ｆｕｌｌ width.") == "Type ½ a word, in ｆｕｌｌ width."  # NFC, not NFKC
    assert checked_prompt("Type a word\u00a0next to king.") == "Type a word\u00a0next to king."
    for bad in ("line\u2028separator", "paragraph\u2029separator", "next\u0085line", "\u200b", "\u200b\u2060\ufeff",
                "\u3164 \u3164", "left\u2066isolate", "arabic\u061cmark"):
        with pytest.raises(Refused) as refused:
            checked_prompt(bad)
        assert str(refused.value) == NOT_A_PROMPT


# --- a round: the tally, moderation, what a page is sent -----------------------------------------------


def test_drawn_words_are_the_most_frequent_first_ties_by_word():
    counts = {"prince": 2, "queen": 7, "crown": 2, "throne": 1, "apple": 2}
    assert a_round(counts).drawn() == (("queen", 7), ("apple", 2), ("crown", 2), ("prince", 2), ("throne", 1))
    assert a_round(counts).undrawn() == 0


def test_at_most_max_drawn_words_are_drawn_and_the_rest_counted():
    counts = {f"w{i:04d}": 1 + i % 5 for i in range(MAX_DRAWN + 37)}
    round_ = a_round(counts)
    drawn = round_.drawn()
    assert len(drawn) == MAX_DRAWN and round_.undrawn() == 37
    left = set(counts) - {word for word, _ in drawn}
    assert min(count for _, count in drawn) >= max(counts[word] for word in left)  # the most frequent are drawn
    hidden = {word for word, _ in drawn[:10]}
    assert a_round(counts, hidden=hidden).undrawn() == 27  # hidden words make room


def test_hidden_words_are_never_drawn_nor_sent_to_followers_but_the_lecturer_sees_them():
    round_ = a_round({"queen": 3, "rude": 5, "prince": 1}, hidden={"rude", "later"})
    assert round_.drawn() == (("queen", 3), ("prince", 1))
    everyone = round_.message(lecturer=False)
    assert "rude" not in json.dumps(everyone) and "later" not in json.dumps(everyone)
    assert set(everyone) == {"round", "prompt", "open", "version", "drawn"}
    assert everyone["drawn"] == [["queen", 3], ["prince", 1]]
    lecturer = round_.message(lecturer=True)
    assert lecturer["words"] == [
        {"word": "rude", "count": 5, "hidden": True, "approved": False},
        {"word": "queen", "count": 3, "hidden": False, "approved": False},
        {"word": "prince", "count": 1, "hidden": False, "approved": False},
        {"word": "later", "count": 0, "hidden": True, "approved": False},  # hidden before anyone sent it
    ]
    assert (lecturer["answers"], lecturer["students"], lecturer["review"]) == (9, 3, False)


def test_under_review_first_only_approved_words_are_drawn():
    round_ = a_round({"queen": 3, "prince": 2, "rude": 1}, approved={"prince", "rude"}, hidden={"rude"}, review=True)
    assert round_.drawn() == (("prince", 2),)  # approved and not hidden
    assert a_round({"queen": 3, "prince": 2}, approved={"prince"}).drawn() == (("queen", 3), ("prince", 2))


def test_a_hidden_word_hides_its_look_alikes_in_every_list_but_approval_stays_exact():
    # built directly: "kіng" (a Cyrillic і) is refused at answer time, yet a skeleton groups it all the same
    round_ = a_round({"king": 3, "kіng": 2, "сор": 2, "cop": 1, "kind": 1}, hidden={"king", "cop"})
    assert round_.drawn() == (("kind", 1),)
    assert [(word["word"], word["hidden"]) for word in round_.message(lecturer=True)["words"]] == [
        ("king", True), ("kіng", True), ("сор", True), ("cop", True), ("kind", False)]  # the lecturer sees why
    assert "kіng" not in json.dumps(round_.message(lecturer=False))
    assert [row.split(",")[2] for row in csv_of(round_).splitlines()[1:]] == ["true"] * 4 + ["false"]
    # review first: approving "cop" approves no look-alike, which no one has read
    review = a_round({"сор": 2, "cop": 1}, approved={"cop"}, review=True)
    assert review.drawn() == (("cop", 1),)
    assert a_round({"сор": 2, "cop": 1}, hidden={"сор"}).drawn() == ()  # either way round


def test_csv_has_every_word_with_its_moderation_and_no_cell_starts_a_formula():
    round_ = a_round({"=cmd|' /c calc'!a0": 4, "+sum": 3, "-2": 2, "@x": 2, "\tx": 1, "\rx": 1, 'say "hi", then': 1,
                      "queen": 5}, hidden={"@x"}, approved={"queen"})  # built directly: checked_word refuses these
    text = csv_of(round_)
    assert text.startswith("word,count,hidden,approved\r\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["word", "count", "hidden", "approved"]
    assert rows[1] == ["queen", "5", "false", "true"]
    words = [row[0] for row in rows[1:]]
    assert words == ["queen", "'=cmd|' /c calc'!a0", "'+sum", "'-2", "'@x", "'\tx", "'\rx", 'say "hi", then']
    assert rows[5][2] == "true"
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for cell in row)
    assert csv_of(NO_ROUND) == "word,count,hidden,approved\r\n"


# --- the lecturer's round, on either store --------------------------------------------------------------


def test_the_lecturer_asks_closes_and_clears_a_round(room):
    lecturer, class_id, secret = lecture(room)
    assert room.rounds.round(class_id) == NO_ROUND
    asked = room.lecture("ask", lecturer, secret, "  Type a word you would put next to king. ")
    assert (asked.number, asked.prompt, asked.open, asked.review, asked.version) == (
        1, "Type a word you would put next to king.", True, False, 1)
    assert kept(room, class_id) == asked == room.rounds.round(class_id)
    (student,) = students(room, class_id, 1)
    room.answer(student, "queen", 1)
    closed_ = room.lecture("close", lecturer, secret)
    assert (closed_.open, dict(closed_.counts), closed_.number) == (False, {"queen": 1}, 1)  # words stay drawn
    assert room.lecture("close", lecturer, secret).version == closed_.version  # closed already: no change
    again = room.lecture("ask", lecturer, secret, "Type an animal.", True)
    assert (again.number, again.open, again.review, dict(again.counts), again.answers, again.students) == (
        2, True, True, {}, 0, 0)
    cleared = room.lecture("clear", lecturer, secret)
    assert (cleared.number, cleared.prompt, cleared.open, dict(cleared.counts), cleared.review) == (3, "", False, {},
                                                                                                   True)
    assert kept(room, class_id) == cleared
    with pytest.raises(Refused, match=NOT_ASKED):
        room.lecture("hide", lecturer, secret, "queen", True)  # nothing asked in a cleared round
    versions = [asked.version, closed_.version, again.version, cleared.version]
    assert versions == sorted(versions) and len(set(versions)) == 4


def test_only_the_lecturer_changes_a_round(room):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    before = kept(room, class_id)
    (student,) = students(room, class_id, 1)
    for op, tab_, secret_, text, flag in (
            ("ask", student, secret, "Mine now.", False), ("close", student, secret, None, False),
            ("clear", student, secret, None, False), ("hide", student, secret, "queen", True),
            ("approve", student, secret, "queen", True), ("review", student, secret, None, True),
            ("ask", lecturer, "right-length-but-wrong-secret-ab", "Not the lecturer.", False),
            ("clear", lecturer, None, None, False)):
        with pytest.raises(Forbidden) as refused:
            room.lecture(op, tab_, secret_, text, flag)
        assert str(refused.value) == NOT_LECTURER
    assert kept(room, class_id) == before


def test_hiding_and_approving_words_before_or_after_they_are_answered(room):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    hidden = room.lecture("hide", lecturer, secret, "Rude", True)  # before anyone sent it: as a word is counted
    assert hidden.hidden == {"rude"}
    pages = students(room, class_id, 3)
    for student, word in zip(pages, ("queen", "rude", "prince"), strict=True):
        room.answer(student, word, 1)
    now = kept(room, class_id)
    assert dict(now.counts) == {"queen": 1, "rude": 1, "prince": 1}
    assert now.drawn() == (("prince", 1), ("queen", 1))
    after = room.lecture("hide", lecturer, secret, "prince", True)  # after it was drawn
    assert after.drawn() == (("queen", 1),) and after.version > now.version
    assert room.lecture("hide", lecturer, secret, "prince", False).drawn() == (("prince", 1), ("queen", 1))
    review = room.lecture("review", lecturer, secret, None, True)
    assert review.review and review.drawn() == ()
    assert room.lecture("approve", lecturer, secret, "queen", True).drawn() == (("queen", 1),)
    assert room.lecture("approve", lecturer, secret, "rude", True).drawn() == (("queen", 1),)  # hidden stays hidden
    assert room.lecture("review", lecturer, secret, None, False).drawn() == (("prince", 1), ("queen", 1))


def test_hide_on_king_hides_it_however_it_is_spelled_and_its_look_alikes(room):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    assert room.lecture("hide", lecturer, secret, "King\ufe0f", True).hidden == {"king"}  # hidden as it is counted
    room.lecture("hide", lecturer, secret, "cop", True)
    pages = students(room, class_id, 6)
    sent = ("king\ufe0f", "king\u034f", "ｋｉｎｇ", "k\u200ding", "сор", "queen")
    for student, word in zip(pages, sent, strict=True):
        room.answer(student, word, 1)
    with pytest.raises(Refused) as refused:  # a Latin word with a Cyrillic і: refused, never counted
        room.answer(pages[0], "kіng", 1)
    assert str(refused.value) == MIXED
    now = kept(room, class_id)
    assert dict(now.counts) == {"king": 4, "сор": 1, "queen": 1}
    assert now.drawn() == (("queen", 1),)
    assert {word["word"] for word in now.message(lecturer=True)["words"] if word["hidden"]} == {"king", "сор", "cop"}
    with pytest.raises(Refused) as refused:  # Show on a look-alike would change nothing: the sentence says why
        room.lecture("hide", lecturer, secret, "сор", False)
    assert str(refused.value) == LOOKS_HIDDEN and kept(room, class_id) == now
    assert room.lecture("hide", lecturer, secret, "cop", False).drawn() == (("queen", 1), ("сор", 1))


def test_at_most_max_moderated_words_are_hidden(room, monkeypatch):
    monkeypatch.setattr(classroom, "MAX_MODERATED", 2)
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    room.lecture("hide", lecturer, secret, "one", True)
    room.lecture("hide", lecturer, secret, "two", True)
    before = kept(room, class_id)
    with pytest.raises(Full) as refused:
        room.lecture("hide", lecturer, secret, "three", True)
    assert str(refused.value) == MODERATED.replace("1,000", "2") or "At most" in str(refused.value)
    assert kept(room, class_id) == before
    hidden = room.lecture("hide", lecturer, secret, "one", True).hidden
    assert hidden == {"one", "two"}  # hidden already: no room needed


# --- a student's answer ----------------------------------------------------------------------------------


def test_a_student_answers_up_to_three_words_and_the_same_word_twice_counts_once(room, clock):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    one, two = students(room, class_id, 2)
    assert room.answer(one, "Queen", 1)[1] == ("queen",)
    assert room.answer(one, "queen", 1)[1] == ("queen",)  # again: no refusal, no count
    assert room.answer(two, "queen", 1)[1] == ("queen",)  # another page: counted
    room.answer(one, "prince", 1)
    assert room.answer(one, "king", 1)[1] == ("queen", "prince", "king")
    assert room.rounds.own(one.member.seat, class_id) == ("queen", "prince", "king")
    assert room.rounds.own(two.member.seat, class_id) == ("queen",) and room.rounds.own("no-seat", class_id) == ()
    before = kept(room, class_id)
    clock.now += 10
    with pytest.raises(Refused) as refused:
        room.answer(one, "crown", 1)
    assert str(refused.value) == ENOUGH
    assert kept(room, class_id) == before
    assert dict(before.counts) == {"queen": 2, "prince": 1, "king": 1}
    assert (before.answers, before.students) == (4, 2)


def test_the_store_keeps_a_pages_word_once_and_three_words_at_most(store, clock):
    room = Classroom(store)
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    for word in ("a", "a", "b", "c"):
        assert store.answer(class_id, "seat-1", word, 1)[0] == "ok"
    assert store.answer(class_id, "seat-1", "d", 1) == ("enough", ("a", "b", "c"), 0.0)
    assert dict(kept(room, class_id).counts) == {"a": 1, "b": 1, "c": 1}


def test_an_answer_is_refused_outside_an_open_round_of_the_number_it_names(room):
    lecturer, class_id, secret = lecture(room)
    (student,) = students(room, class_id, 1)
    with pytest.raises(Refused) as refused:
        room.answer(student, "queen", 1)
    assert str(refused.value) == NOT_OPEN  # nothing asked yet
    room.lecture("ask", lecturer, secret, "Type a word.")
    room.lecture("ask", lecturer, secret, "Type another word.")
    with pytest.raises(Refused) as refused:
        room.answer(student, "queen", 1)  # the first question, asked over
    assert str(refused.value) == OTHER_ROUND
    room.lecture("close", lecturer, secret)
    with pytest.raises(Refused) as refused:
        room.answer(student, "queen", 2)
    assert str(refused.value) == NOT_OPEN
    assert dict(kept(room, class_id).counts) == {} and room.rounds.own(student.member.seat, class_id) == ()
    with pytest.raises(Refused) as refused:
        room.answer(tab(), "queen", 2)  # a page in no class
    assert str(refused.value) == NOT_FOLLOWING
    with pytest.raises(Refused):
        room.answer(lecturer, "queen", 2)  # the lecturer's page leads, it does not answer


def test_a_round_takes_at_most_max_answers(room, clock):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    pages = students(room, class_id, MAX_ANSWERS // 3 + 1)
    taken = 0
    for student in pages:
        for word in ("one", "two", "three"):
            if taken == MAX_ANSWERS:
                break
            room.answer(student, word, 1)
            taken += 1
        clock.now += 0.2  # no network sends more than it may
    assert kept(room, class_id).answers == MAX_ANSWERS
    before = kept(room, class_id)
    with pytest.raises(Refused) as refused:
        room.answer(pages[-1], "four", 1)
    assert str(refused.value) == ROUND_FULL
    assert kept(room, class_id) == before


def test_a_page_sends_at_most_one_answer_a_second_after_a_burst_of_three(room, clock):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    (student,) = students(room, class_id, 1)
    for word in ("one", "two", "three"):  # a burst: a round's words at once
        room.answer(student, word, 1)
    round_ = room.lecture("ask", lecturer, secret, "Type another word.")
    with pytest.raises(Full) as refused:
        room.answer(student, "four", round_.number)
    assert str(refused.value) == "One word a second, please: send the next in 1 second."
    assert kept(room, class_id).answers == 0
    clock.now += poll.ANSWER_SECONDS
    assert room.answer(student, "four", round_.number)[1] == ("four",)
    with pytest.raises(Full):
        room.answer(student, "five", round_.number)


def test_a_students_tabs_share_one_seat_and_its_three_words_whichever_process_takes_them(stores, clock):
    one, two = Classroom(stores()), Classroom(stores())  # two processes of one server, for Redis
    lecturer, class_id, secret = lecture(one)
    one.lecture("ask", lecturer, secret, "Type a word.")
    first = tab()
    seat = one.join(first, class_id).token  # the seat its stream's messages give the page to keep
    tabs = [first] + [tab() for _ in range(149)]  # one student's 150 tabs from the class link, on both processes
    for index, each in enumerate(tabs[1:]):
        assert (one, two)[index % 2].join(each, class_id, seat).seat == first.member.seat
    refusals = []
    for index, each in enumerate(tabs):
        for word in ("one", "two", "three", "four"):
            try:
                (one, two)[index % 2].answer(each, word, 1)
            except Refused as error:
                refusals.append(str(error))
            clock.now += 0.01
    assert refusals == [ENOUGH] * len(tabs)  # each tab's fourth word: the student's three were sent
    assert kept(one, class_id).counts == {"one": 1, "two": 1, "three": 1}  # the student's three words, once each
    assert kept(one, class_id).students == 1
    classmates = students(two, class_id, 5)  # behind the same school address: none held up by the one
    for index, student in enumerate(classmates):
        assert two.answer(student, ("queen", "prince")[index % 2], 1)[1] == (("queen", "prince")[index % 2],)
    assert kept(one, class_id).students == 6 and kept(one, class_id).answers == 8


def test_a_seat_is_the_class_s_own_and_cannot_be_made_up(room):
    _, class_id, _ = lecture(room)
    _, other_class, _ = lecture(room)
    student = tab()
    token = room.join(student, class_id).token
    seat, signature = token.split(".")
    forged = [f"{seat}.{'A' * len(signature)}", f"{'B' * len(seat)}.{signature}", token + "x", token.upper(),
              room.join(tab(), other_class).token, 7, None, {"seat": token}]
    for given in forged:  # each a seat of its own: a made-up or another class's seat sits in none
        assert room.join(tab(), class_id, given).seat not in (seat, "")
    again = tab()
    assert room.join(again, class_id, token).seat == seat  # the browser's other tab, or a reload: the same seat
    assert room.join(again, class_id, room.join(tab(), class_id).token).seat == seat  # a page keeps its seat


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: repr(v)[:20])
def test_any_json_value_in_any_argument_is_a_sentence_and_changes_nothing(room, value):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    (student,) = students(room, class_id, 1)
    room.answer(student, "queen", 1)
    text = isinstance(value, str) and 1 <= len(value) <= 200
    calls = [  # (the call, whether `value` is a valid argument there)
        (lambda: room.lecture("ask", lecturer, value, "A prompt."), False),
        (lambda: room.lecture("ask", lecturer, secret, value),
         text and "\u0000" not in value and value.strip() == value),
        (lambda: room.lecture("ask", lecturer, secret, "A prompt.", value), value is True),
        (lambda: room.lecture("close", lecturer, value), False),
        (lambda: room.lecture("clear", lecturer, value), False),
        (lambda: room.lecture("hide", lecturer, secret, value, True), False),
        (lambda: room.lecture("hide", lecturer, secret, "queen", value), value is True),
        (lambda: room.lecture("approve", lecturer, secret, value, True), False),
        (lambda: room.lecture("approve", lecturer, secret, "queen", value), value is True),
        (lambda: room.lecture("review", lecturer, secret, None, value), value is True),
        (lambda: room.answer(student, value, room.rounds.round(class_id).number), False),
        (lambda: room.answer(student, "crown", value), False),
    ]
    for index, (call, valid) in enumerate(calls):
        before, own = kept(room, class_id), room.rounds.own(student.member.seat, class_id)
        try:
            call()
        except Refused as error:
            assert not valid, f"call {index} refused {value!r}: {error}"
            sentence = str(error)
            assert sentence.endswith((".", "!")) and len(sentence) < 300 and "\u0000" not in sentence
            assert "<" not in sentence and "=1+1" not in sentence  # never echoed
            assert kept(room, class_id) == before, f"call {index} changed"
            assert room.rounds.own(student.member.seat, class_id) == own, f"call {index} changed"
        else:
            assert valid, f"call {index} took {value!r}"
    assert room.rounds.round(7) == NO_ROUND and room.rounds.round(["x"]) == NO_ROUND
    assert room.rounds.own(None, None) == ()


# --- every process's round --------------------------------------------------------------------------


def test_a_round_ends_with_its_class(room, store):
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    (student,) = students(room, class_id, 1)
    room.connect(key_of(student), student.member, room.lesson(class_id))
    room.answer(student, "queen", 1)
    room.end(lecturer, secret)
    assert store.poll(class_id) is None
    seat = student.member.seat
    assert eventually(lambda: room.rounds.round(class_id) == NO_ROUND and room.rounds.own(seat, class_id) == ())
    with pytest.raises(Gone, match=ENDED):
        room.answer(student, "prince", 1)
    assert not store.redis.keys(f"explorer:poll:{class_id}*")


def test_a_rounds_keys_live_as_long_as_its_class(stores, clock):
    store = stores()
    room = Classroom(store)
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, "Type a word.")
    (student,) = students(room, class_id, 1)
    room.answer(student, "queen", 1)
    room.lecture("hide", lecturer, secret, "rude", True)
    keys = store._poll_keys(class_id)
    ttl = store.redis.pttl(keys[0])
    assert ttl > 0 and all(abs(ttl - store.redis.pttl(key)) < 2_000 for key in keys[1:5])
    store.redis.pexpire(keys[1], 5_000)  # as if it were written long ago: the class's beat gives it the class's life
    store.publish(class_id, None, None)
    assert all(store.redis.pttl(key) > 60_000 for key in keys[1:5])


def test_every_process_hears_a_round_and_its_streams_wake(stores):
    one, two = Classroom(stores()), Classroom(stores())
    lecturer, class_id, secret = lecture(one)
    told: list[str | None] = []
    two.hear(lambda class_id, lesson, member: told.append(class_id))
    student = tab()
    two.join(student, class_id)
    two.connect(key_of(student), student.member, two.lesson(class_id))
    asked = one.lecture("ask", lecturer, secret, "Type a word.")
    assert eventually(lambda: two.rounds.round(class_id).prompt == "Type a word.")
    assert class_id in told
    two.answer(student, "queen", asked.number)
    assert eventually(lambda: dict(one.rounds.round(class_id).counts) == {"queen": 1})
    hidden = one.lecture("hide", lecturer, secret, "queen", True)
    assert eventually(lambda: two.rounds.round(class_id).hidden == {"queen"})
    assert two.rounds.round(class_id).version >= hidden.version and two.rounds.round(class_id).drawn() == ()


def test_a_burst_of_answers_is_announced_at_most_once_a_second_and_the_last_always(stores):
    store = stores()
    heard: list[Round] = []
    listener = stores()
    listener.listen(lambda lesson: None, lambda class_id, round_: heard.append(round_) if class_id == made[0] else None)
    ticks = Clock()
    room = Classroom(store, ticks=ticks)
    made: list[str] = []
    lecturer, class_id, secret = lecture(room)
    made.append(class_id)
    room.lecture("ask", lecturer, secret, "Type a word.")
    assert eventually(lambda: len(heard) == 1)  # the first change goes out at once
    pages = students(room, class_id, 20)
    for student in pages:
        room.answer(student, "queen", 1)
        room.writer.flush()  # the writer's turn after each answer, its clock standing still
    assert len(heard) <= 2
    ticks.now += POLL_SECONDS
    assert eventually(lambda: heard and heard[-1].answers == 20)
    assert len(heard) <= 3 and heard[-1] == store.poll(class_id)


def test_100_students_answering_at_once_on_threads_are_all_counted(stores, clock):
    one, two = Classroom(stores()), Classroom(stores())  # two processes, for Redis
    lecturer, class_id, secret = lecture(one)
    one.lecture("ask", lecturer, secret, "Type a word you would put next to king.")
    pages = [(room, tab()) for room in (one, two) for _ in range(50)]
    for room, student in pages:
        room.join(student, class_id)
    words = ("queen", "prince", "crown")
    errors: list[BaseException] = []

    def answers(index: int) -> None:
        room, student = pages[index]
        try:
            for word in words[: 1 + index % 3]:
                room.answer(student, word, 1)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=answers, args=(index,)) for index in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    expected = {"queen": 100, "prince": 66, "crown": 33}  # each page 1, 2 or 3 words, by its index
    final = one.store.poll(class_id)
    assert dict(final.counts) == expected and final.answers == 199 and final.students == 100
    assert eventually(lambda: dict(one.rounds.round(class_id).counts) == expected)
    assert eventually(lambda: dict(two.rounds.round(class_id).counts) == expected)


# --- a store that is away ------------------------------------------------------------------------------


@pytest.fixture()
def rooms(own_redis, clock):
    """Two processes' classrooms on a Redis the test stops and starts again, trying it every 50 ms and
    beating every second (a process writes its answers again at its beat: 10 s in a class)."""
    made = [Classroom(RedisStore(own_redis.url, clock), retry=0.05, beat=1.0) for _ in range(2)]
    yield own_redis, made
    for room in made:
        room.close()


def test_a_redis_outage_loses_no_acknowledged_answer_nor_the_rounds_moderation(rooms, clock):
    """Redis stops during a round and starts again empty: answers acknowledged through either
    process before it stopped are all there again, once each, with the round's number, prompt,
    review mode and moderation; while it is away an answer is refused with `Reconnecting`."""
    redis_server, (one, two) = rooms
    lecturer, class_id, secret = lecture(one)
    one.connect(key_of(lecturer), lecturer.member, one.lesson(class_id))
    one.lecture("ask", lecturer, secret, "Type a word.")
    one.lecture("ask", lecturer, secret, "Type a word you would put next to king.", True)  # round 2, review first
    one.lecture("hide", lecturer, secret, "rude", True)
    one.lecture("approve", lecturer, secret, "queen", True)
    pages = [(room, tab()) for room in (one, two, two) for _ in range(1)]
    for index, (room, student) in enumerate(pages):
        room.join(student, class_id)
        room.connect(key_of(student), student.member, room.lesson(class_id))
        for word in ("queen", "rude", f"word{index}")[: index + 1]:
            room.answer(student, word, 2)
    acknowledged = one.store.poll(class_id)
    assert dict(acknowledged.counts) == {"queen": 3, "rude": 2, "word2": 1}

    redis_server.stop()
    with pytest.raises(Reconnecting) as refused:
        two.answer(pages[1][1], "late", 2)
    assert str(refused.value) == RECONNECTING
    assert two.rounds.own(pages[1][1].member.seat, class_id) == ("queen", "rude")
    redis_server.start()  # empty
    assert eventually(lambda: one.store.poll(class_id) is not None
                      and dict(one.store.poll(class_id).counts) == dict(acknowledged.counts))
    restored = one.store.poll(class_id)
    assert (restored.number, restored.prompt, restored.open, restored.review) == (
        2, "Type a word you would put next to king.", True, True)
    assert (restored.hidden, restored.approved, restored.answers, restored.students) == (
        {"rude"}, {"queen"}, 6, 3)
    assert eventually(lambda: one.rounds.round(class_id) == two.rounds.round(class_id) == one.store.poll(class_id))
    assert restored.version > acknowledged.version
    with pytest.raises(Refused, match=ENOUGH):
        two.answer(pages[2][1], "late", 2)  # its three words are its three again
    clock.now += 5
    assert two.answer(pages[1][1], "late", 2)[1] == ("queen", "rude", "late")  # it goes on
    assert dict(one.store.poll(class_id).counts) == {"queen": 3, "rude": 2, "word2": 1, "late": 1}


def test_one_processs_own_store_is_never_away_and_writes_answers_again_once(clock):
    store = RedisStore(clock=clock)  # a fakeredis server of this process's own
    store.ping()
    room = Classroom(store)
    lecturer, class_id, secret = lecture(room)
    room.lecture("ask", lecturer, secret, f"Type a word, {secrets.token_hex(2)}.")
    assert store.replay(class_id, 1, {"page-1": ("queen",)}, NO_ROUND) == "done"  # written again once
    assert store.replay(class_id, 1, {"page-1": ("queen",)}, NO_ROUND) == "same"  # nothing lost
    assert dict(store.poll(class_id).counts) == {"queen": 1}
    assert store.replay(class_id, 2, {}, NO_ROUND) == "other"
    assert store.replay(class_id, 1, {}, store.poll(class_id), restore=True) == "same"  # it has one


def test_a_redis_emptied_under_running_processes_loses_no_acknowledged_answer(rooms, clock):
    """The store forgets everything while no connection drops (it restarted faster than anyone
    noticed): an answer then is 'reconnecting', never 'no class'; the lecturer's process puts the
    class and its round back at its next beat, and every process writes its answers again."""
    redis_server, (one, two) = rooms
    lecturer, class_id, secret = lecture(one)
    one.connect(key_of(lecturer), lecturer.member, one.lesson(class_id))
    one.lecture("ask", lecturer, secret, "Type a word.")
    one.lecture("hide", lecturer, secret, "rude", True)
    here, there = tab(), tab()
    one.join(here, class_id)
    two.join(there, class_id)
    one.answer(here, "queen", 1)
    two.answer(there, "prince", 1)
    one.store.redis.flushall()
    with pytest.raises(Reconnecting):
        two.answer(there, "crown", 1)
    one.beat()  # its lecturer's page is there: the class is put back, and the round with it
    assert eventually(lambda: one.store.poll(class_id) is not None
                      and dict(one.store.poll(class_id).counts) == {"queen": 1, "prince": 1})
    assert one.store.poll(class_id).hidden == {"rude"}
    assert two.answer(there, "crown", 1)[1] == ("prince", "crown")


def test_an_answer_sent_before_its_process_wrote_its_answers_again_keeps_the_earlier_ones(rooms, clock):
    """The store comes back empty and the lecturer's process puts the round back; a student on
    another process answers before that process wrote its answers again: the page keeps its
    earlier word, and the writing again puts it back in the store beside the new one."""
    redis_server, (one, two) = rooms
    lecturer, class_id, secret = lecture(one)
    one.connect(key_of(lecturer), lecturer.member, one.lesson(class_id))
    one.lecture("ask", lecturer, secret, "Type a word.")
    there = tab()
    two.join(there, class_id)
    two.answer(there, "prince", 1)
    replay, two.rounds.replay = two.rounds.replay, lambda class_id: None  # its answers not written again yet
    one.store.redis.flushall()
    one.beat()  # the lecturer's process puts the class and its round back
    assert eventually(lambda: one.store.poll(class_id) is not None)
    assert two.answer(there, "crown", 1)[1] == ("prince", "crown")
    two.rounds.replay = replay
    for known in two.rounds.classes():  # every round it knows of, its answers written again
        two.rounds.replay(known)
    assert eventually(lambda: dict(one.store.poll(class_id).counts) == {"prince": 1, "crown": 1})
