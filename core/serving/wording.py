"""Words a moderator can trust: one spelling for each word as the room sees it, one skeleton for each look.

A class's answers are drawn in front of a room, and the lecturer hides a word once: it must not come
back spelled another way. So a word is folded before it is counted or hidden (NFKC, case fold, and
no invisible characters: Unicode's Default_Ignorable_Code_Point set and every format character),
and the poll refuses what is left when it shows nothing, when its letters carry stacked marks, or
when it mixes scripts as a spoof does (Unicode TR39). A look-alike written in one script of its own
(Cyrillic "сор" for "cop") is a word somewhere, so it is taken, and *Hide* groups it by its TR39
skeleton. The confusables and each character's script come from `confusable-homoglyphs`, which
ships Unicode's own tables as data (ICU's SpoofChecker, through pyicu, has no wheel here).
"""

from __future__ import annotations

import functools
import unicodedata

from confusable_homoglyphs.categories import alias
from confusable_homoglyphs.confusables import confusables_data

# Default_Ignorable_Code_Point, from Unicode 14's DerivedCoreProperties.txt (the version of Python's
# unicodedata): Other_Default_Ignorable_Code_Point + Cf + Variation_Selector, less white space, the
# interlinear annotation marks, Egyptian format controls and prepended concatenation marks. Each is
# drawn as nothing, or (the Hangul fillers) as a blank the width of a letter.
DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x061C, 0x061C),  # Arabic letter mark
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors and vowel separator
    (0x200B, 0x200F),  # zero width space, non-joiner, joiner; left-to-right and right-to-left marks
    (0x202A, 0x202E),  # bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated format characters
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors 1-16
    (0xFEFF, 0xFEFF),  # zero width no-break space (byte order mark)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF0, 0xFFF8),  # reserved
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol beams and phrases
    (0xE0000, 0xE0FFF),  # tags, variation selectors 17-256 and the reserved code points between (7 rows there)
)
_IGNORABLE = frozenset(chr(point) for first, last in DEFAULT_IGNORABLE for point in range(first, last + 1))

# TR39's "highly restrictive" level: one script, or Latin with the scripts a Chinese, Japanese or
# Korean word is written in; Common (digits, the hyphen, the apostrophe) and Inherited (marks) go with any
_ANY_SCRIPT = frozenset({"COMMON", "INHERITED"})
_HIGHLY_RESTRICTIVE = (frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}), frozenset({"LATIN", "HAN", "HANGUL"}),
                       frozenset({"LATIN", "HAN", "BOPOMOFO"}))
# TR39 5.4 forbids more than 4 nonspacing marks in a row and the same one twice. Four is enough for
# real words: Vietnamese has at most 2 on a letter (ệ: circumflex and dot below), Hindi 3 (ज़ें in
# चीज़ें: nukta, vowel sign, anusvara), a Tibetan stack 3 or 4; a word of 30 characters then carries
# at most 24, four to a letter, where a pile over one letter (Zalgo) runs into the lines above it.
MAX_MARKS = 4


def invisible(character: str) -> bool:
    """Whether `character` is drawn as nothing (or as a blank) yet makes a string differ."""
    return character in _IGNORABLE or unicodedata.category(character) == "Cf"


def visible(text: str) -> str:
    """`text` without its invisible characters."""
    return "".join(character for character in text if not invisible(character))


def folded(text: str) -> str:
    """The one spelling of a word: NFKC (fullwidth `ｋ` is `k`), case-folded, NFKC again (folding can
    decompose), without invisible characters, before and after (NFKC makes a Hangul filler U+1160,
    which is ignorable too; dropping one can let the letters around it compose, hence the last NFKC)."""
    word = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", visible(text)).casefold())
    return unicodedata.normalize("NFKC", visible(word))


def stacked(word: str) -> bool:
    """Whether a letter of `word` carries more than MAX_MARKS nonspacing marks, or one mark twice."""
    marks: list[str] = []
    for character in unicodedata.normalize("NFD", word):
        if unicodedata.category(character) not in ("Mn", "Me"):
            marks = []
        elif character in marks or len(marks) == MAX_MARKS:
            return True
        else:
            marks.append(character)
    return False


def mixed(word: str) -> bool:
    """Whether `word` mixes scripts below TR39's "highly restrictive" level, as Latin `king` with a
    Cyrillic `і` does. Each character's script is its Script value (Scripts.txt), not its
    Script_Extensions: a Common character used by a few scripts only (the Arabic tatweel) goes with any."""
    scripts = {alias(character) for character in word} - _ANY_SCRIPT
    return len(scripts) > 1 and not any(scripts <= allowed for allowed in _HIGHLY_RESTRICTIVE)


@functools.lru_cache(maxsize=8192)  # a round's distinct words, compared again at each of its changes
def skeleton(word: str) -> str:
    """TR39's skeleton: two words that look alike share it (`king` and `kіng`, `сор` and `cop`).
    NFD, each character replaced by the prototype of its confusable class, NFD again."""
    return _replaced(visible(word), _prototypes())


def _replaced(text: str, prototypes: dict[str, str]) -> str:
    return unicodedata.normalize("NFD", "".join(prototypes.get(character, character)
                                                for character in unicodedata.normalize("NFD", text)))


@functools.cache  # built at the first skeleton asked for, not when the app starts
def _prototypes() -> dict[str, str]:
    """Each confusable character -> the prototype of its class, from Unicode's confusables.txt as
    `confusable-homoglyphs` keeps it: both ends of every line `source → prototype`, undirected. Each
    class is a star (one prototype, its sources), so the prototype is the member with more than one
    neighbour, or the one of several characters (`m → rn`); of two single characters either will do,
    as long as each string is replaced by the same one everywhere (hence the rounds below)."""
    neighbours: dict[str, set[str]] = {}
    for source, found in confusables_data.items():
        for other in found:  # its comment wraps right-to-left characters in marks: not part of either
            ends = visible(source), visible(other["c"])
            if ends[0] != ends[1]:
                neighbours.setdefault(ends[0], set()).add(ends[1])
                neighbours.setdefault(ends[1], set()).add(ends[0])
    prototypes: dict[str, str] = {}
    for character, others in neighbours.items():
        if len(character) > 1:
            continue  # a prototype of several characters (`rn`): only single characters are replaced
        if len(others) > 1:
            prototypes[character] = character  # the centre of its star
        else:
            (other,) = others
            centre = len(neighbours[other]) > 1 or len(other) > 1
            prototypes[character] = other if centre else min(character, other)
    while True:  # a prototype's own characters map to themselves, as TR39's table is idempotent
        again = {character: _replaced(prototype, prototypes) for character, prototype in prototypes.items()}
        if again == prototypes:
            return prototypes
        prototypes = again
