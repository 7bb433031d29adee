"""A class poll: the lecturer asks with a prompt, each following student answers with a word.

A *round* is one question: its prompt, whether answers are taken, and the class's words with how
many gave each; any word can be hidden, and under *review first* only approved words are drawn.
This module holds what needs no store: bounds, the checks of hostile input, the tally and the CSV.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from core.serving.wording import MAX_MARKS, folded, mixed, skeleton, stacked, visible
from core.view.options import Refused

MAX_PROMPT = 120  # characters
MAX_WORD = 30  # characters
WORDS_PER_STUDENT = 3  # a round
MAX_ANSWERS = 1_000  # a round; past it an answer is refused with a sentence
MAX_DRAWN = 200  # distinct words drawn (the most frequent); the rest counted
MAX_MODERATED = MAX_ANSWERS  # words a round may have hidden, and approved (each)
# a student (a seat, whatever number of pages it has open) sends at most one answer this often ...
ANSWER_SECONDS = 1.0
ANSWER_BURST = 3  # ... after a burst of this many (a round's words at once)

PROMPTS: tuple[str, ...] = (
    "Type a word you would put next to king.",
    "Type a word the random table would put anywhere: it has learned nothing yet.",
    "Type a word that means almost the same as happy.",
    "Type an animal.",
    "Type a word you think BERT splits into pieces.",
    "Type a word for a family member.",
)

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})  # a phone's curly apostrophe is the same word
_JOINERS = frozenset("-'")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

NOT_A_PROMPT = f"A prompt is text of 1 to {MAX_PROMPT} visible characters on one line, without control characters."
NOT_A_WORD = (f"An answer is one word of up to {MAX_WORD} characters: letters, digits, hyphens and apostrophes, "
              "starting with a letter or a digit (no spaces, no symbols).")
INVISIBLE = ("This answer shows nothing once its invisible characters are left out: an answer is a word the room "
             "can read, of letters or digits.")
STACKED = (f"This answer piles marks on a letter: a letter may carry up to {MAX_MARKS} accents or vowel signs, "
           "each once.")
MIXED = ("This answer mixes alphabets, as a word passing for another does (Latin with one Cyrillic letter): "
         "write a word in one alphabet; Latin may go with Chinese, Japanese or Korean.")


def checked_prompt(text: object) -> str:
    """The prompt as a class is shown it: stripped, NFC, without invisible characters (the zero-width
    ones would make a prompt look like another), 1..MAX_PROMPT characters on one line. NFC, not NFKC:
    a prompt may mean its compatibility characters ("½ a word")."""
    if not isinstance(text, str) or len(text) > 4 * MAX_PROMPT:  # refused before any work on a huge text
        raise Refused(NOT_A_PROMPT)
    if any(c in _BIDI for c in text):  # refused, not dropped: they reorder what the room reads
        raise Refused(NOT_A_PROMPT)
    prompt = unicodedata.normalize("NFC", visible(text)).strip()
    if not 1 <= len(prompt) <= MAX_PROMPT or any(
            unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp") for c in prompt):
        raise Refused(NOT_A_PROMPT)
    return prompt


def checked_word(text: object) -> str:
    """The word as it is counted and hidden: its one spelling (`wording.folded`), stripped;
    `Refused` with a sentence (never repeating what was sent) unless 1..MAX_WORD letters (any
    script's, with marks), digits, hyphens and apostrophes that show something, carry no pile of
    marks and keep to one script (see `wording`)."""
    if not isinstance(text, str) or len(text) > 4 * MAX_WORD:
        raise Refused(NOT_A_WORD)
    word = folded(text.translate(_APOSTROPHES)).strip()
    if not word and text.strip():
        raise Refused(INVISIBLE)
    if stacked(word):  # said before its length: a pile of marks is what is wrong with it
        raise Refused(STACKED)
    if not 1 <= len(word) <= MAX_WORD or unicodedata.category(word[0])[0] not in "LN" or not all(
            unicodedata.category(c)[0] in "LNM" or c in _JOINERS for c in word):
        raise Refused(NOT_A_WORD)
    if mixed(word):
        raise Refused(MIXED)
    return word


def checked_number(value: object) -> int:
    """A round's number as a page sends it back: a whole number (never a bool, a text or a float)."""
    if type(value) is not int or not 0 <= value < 2**53:
        raise Refused("This answer names no question: reload the page to see the one asked now.")
    return value


def checked_flag(value: object, name: str) -> bool:
    if type(value) is not bool:
        raise Refused(f"{name} is true or false.")
    return value


@dataclass(frozen=True)
class Round:
    """One question of a class, as every process sees it."""

    number: int  # 0: nothing asked yet; +1 at each ask and each clear
    prompt: str  # "" when cleared
    open: bool  # answers taken
    review: bool  # review first: only approved words are drawn
    counts: Mapping[str, int]  # every distinct word answered -> how many gave it (hidden too)
    hidden: frozenset[str]  # as the lecturer's Hide names them (checked_word); their look-alikes are hidden too
    approved: frozenset[str]  # exactly these
    answers: int  # answers taken this round
    students: int  # distinct students who answered this round
    version: int  # strictly increases on every change of the class's poll

    @functools.cached_property  # read by every stream of its class after each change: sorted once
    def _tally(self) -> tuple[tuple[str, int], ...]:
        """Every word the lecturer sees (answered or moderated), most frequent first, ties by word."""
        words = {**dict.fromkeys(self.hidden | self.approved, 0), **self.counts}
        return tuple(sorted(words.items(), key=lambda item: (-item[1], item[0])))

    @functools.cached_property
    def _hidden_looks(self) -> frozenset[str]:
        return frozenset(map(skeleton, self.hidden))

    def is_hidden(self, word: str) -> bool:
        """Whether `word` is hidden: it, or a word it looks like (its skeleton), was hidden. Approval
        stays exact: under review first a look-alike of an approved word is a word no one has read."""
        return word in self.hidden or bool(self.hidden) and skeleton(word) in self._hidden_looks

    @functools.cached_property
    def _visible(self) -> tuple[tuple[str, int], ...]:
        return tuple((word, count) for word, count in self._tally if count and not self.is_hidden(word)
                     and (not self.review or word in self.approved))

    def drawn(self) -> tuple[tuple[str, int], ...]:
        """The words the plane shows (not hidden; under review, approved only): MAX_DRAWN at most."""
        return self._visible[:MAX_DRAWN]

    def undrawn(self) -> int:
        """Visible distinct words left out of `drawn()`."""
        return max(0, len(self._visible) - MAX_DRAWN)

    def message(self, lecturer: bool) -> dict:
        """What a class stream carries as "poll"; a lecturer's page also every word with its moderation."""
        sent = {"round": self.number, "prompt": self.prompt, "open": self.open, "version": self.version,
                "drawn": [[word, count] for word, count in self.drawn()]}
        if lecturer:
            sent.update(review=self.review, answers=self.answers, students=self.students,
                        words=[{"word": word, "count": count, "hidden": self.is_hidden(word),
                                "approved": word in self.approved} for word, count in self._tally])
        return sent


NO_ROUND = Round(0, "", False, False, {}, frozenset(), frozenset(), 0, 0, 0)

_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(word: str) -> str:  # a count and a flag never start a formula, a word might
    return "'" + word if word.startswith(_FORMULA) else word  # a spreadsheet reads it as text, not a formula


def csv_of(round: Round) -> str:  # noqa: A002 - the interface's name
    """The round's words as CSV (RFC 4180) in the lecturer's order; no cell starts a spreadsheet formula."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["word", "count", "hidden", "approved"])
    for word, count in round._tally:
        writer.writerow([_cell(word), count, str(round.is_hidden(word)).lower(), str(word in round.approved).lower()])
    return out.getvalue()


def too_soon(wait: float) -> str:
    return f"One word a second, please: send the next in {_seconds(wait)}."


def _seconds(wait: float) -> str:
    seconds = max(1, math.ceil(wait))
    return f"{seconds} second{'s' * (seconds != 1)}"
