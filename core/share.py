"""The view a link describes: sentences, tables, toggles, as a URL's query string.

A lecturer puts a link on a slide and every student opens the same picture; a student sends
a link to show what they found. So a `ViewState` holds everything that decides what the page
shows and that can travel in a URL — not an uploaded file, and not trained tables, which
live only in the session that trained them.

Two directions, with different duties:

* `ViewState.to_query` writes short, readable links: only what differs from the defaults,
  always in the same order, so the same view always gives the same link.
* `ViewState.from_query` reads whatever arrives — links edited by hand, cut off by a chat
  program, or crafted — and never raises: each parameter it cannot use keeps its default
  and is named in a note, so one typo does not cost the rest of the link.

An empty value is a real value (an empty sentence B, no groups ticked) and is written as
``b=``. Browsers, Starlette and ``URLSearchParams`` keep such parameters; Python's
``parse_qs`` drops them unless it is given ``keep_blank_values=True``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from core.basis import BASES as BASIS_LABELS
from core.embedding import COMPONENTS
from core.presets import LIMITS, POSITIONS, SOURCES
from core.training import ASSETS, PARTS

# a link cannot carry an uploaded file, so "upload" is not a source a link may name
SHAREABLE_SOURCES = tuple(key for key in SOURCES if key != "upload")

BASES = tuple(BASIS_LABELS)  # where the PCA plane comes from

MAX_SENTENCE = 20_000  # characters per sentence, as the page's text boxes allow
MAX_BACKGROUND = 400_003  # vocabulary words drawn behind the sentence: GloVe's rows, the largest table
MAX_TOKEN = LIMITS["maxlen"][1] - 1  # a selected token's position: the longest table allowed
K_RANGE = (1, 50)  # nearest neighbours listed for the selected token
MAX_STEP = 7  # steps of the guided tour (core.tour.STEPS; a test checks they agree)

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,30}")  # ascii digits; longer strings are out of every range anyway
_SHOWN_VALUE = 40  # characters of a bad value quoted back in a note
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # e.g. from JSON "\ud800"; utf-8 cannot encode them
NONE = "none"  # the empty choice of groups or freeze, and no selected token or tour step


def _default_pair() -> tuple[str, str]:
    """The page's first example pair, so a link without sentences opens what the page opens."""
    a, b = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))[0]
    return a, b


DEFAULT_A, DEFAULT_B = _default_pair()


@dataclass(frozen=True)
class ViewState:
    """Everything a link can say about the page; the defaults are the page's own."""

    sentence_a: str = DEFAULT_A
    sentence_b: str = DEFAULT_B
    source: str = "random"  # one of SHAREABLE_SOURCES
    positions: str = "learned"  # a key of core.presets.POSITIONS
    groups: tuple[str, ...] = COMPONENTS  # groups plotted, kept in COMPONENTS order
    labels: bool = True  # token text beside each point
    arrows: bool = False  # the addition path, token -> + position -> + segment = sum -> output
    shift: bool = False  # arrows from segment A's place to B's: the one vector B adds
    basis: str = "sentence"  # one of BASES
    background: int = 0  # vocabulary words drawn faintly behind; 0 draws none
    frozen: frozenset[str] = frozenset()  # keys of core.training.PARTS that training leaves alone
    token: int | None = None  # position of the token whose neighbours are listed
    k: int = 10  # how many neighbours
    step: int | None = None  # guided-tour step, 1-based; None outside the tour
    presenter: bool = False  # large type and controls out of the way, for a projector

    def __post_init__(self) -> None:
        for name in ("sentence_a", "sentence_b"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise ValueError(f"{name} must be text, not {type(value).__name__}.")
            if len(value) > MAX_SENTENCE:
                raise ValueError(f"{name} has {len(value):,} characters; at most {MAX_SENTENCE:,} are allowed.")
        _check_choice("source", self.source, SHAREABLE_SOURCES)
        _check_choice("positions", self.positions, tuple(POSITIONS))
        _check_choice("basis", self.basis, BASES)
        object.__setattr__(self, "groups", _subset("groups", self.groups, COMPONENTS))
        object.__setattr__(self, "frozen", frozenset(_subset("frozen", self.frozen, tuple(PARTS))))
        for name in ("labels", "arrows", "shift", "presenter"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, not {getattr(self, name)!r}.")
        self._check_number("background", 0, MAX_BACKGROUND)
        self._check_number("token", 0, MAX_TOKEN, optional=True)
        self._check_number("k", *K_RANGE)
        self._check_number("step", 1, MAX_STEP, optional=True)

    def _check_number(self, name: str, low: int, high: int, optional: bool = False) -> None:
        value = getattr(self, name)
        if value is None and optional:
            return
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # number boxes and sliders send 10.0
            object.__setattr__(self, name, value)
        if isinstance(value, bool) or not isinstance(value, int):
            also = " or None" if optional else ""
            raise ValueError(f"{name} must be a whole number{also}, not {value!r}.")
        if not low <= value <= high:
            raise ValueError(f"{name} is {value:,}; allowed values are {low:,} to {high:,}.")

    def to_query(self) -> str:
        """The query string of a link to this view (no leading '?'), defaults left out."""
        default = _DEFAULT
        pairs = [
            (param, _write(getattr(self, attribute)))
            for param, attribute in PARAMETERS.items()
            if getattr(self, attribute) != getattr(default, attribute)
        ]
        # commas stay readable in groups=token,sum; parse_qs splits on '&' only
        return urlencode(pairs, quote_via=_quote, safe=",")

    @classmethod
    def from_query(cls, params: Mapping[str, str | list[str]]) -> tuple[ViewState, tuple[str, ...]]:
        """The view a link's parameters describe, and a note for each part that was ignored.

        `params` is a parsed query: ``request.query_params``, or ``parse_qs(query,
        keep_blank_values=True)``; a list takes its last value, as a browser's form would.
        Never raises: a value that does not fit keeps the default and is named in a note.
        """
        values: dict[str, object] = {}
        notes: list[str] = []
        try:
            items = list(params.items())
        except Exception:  # a link must never break the page
            return _DEFAULT, ("Ignored the link's parameters: they could not be read.",)
        for name, raw in items:
            name = str(name)
            if name.startswith("__"):
                continue  # gradio's own parameters, such as __theme=dark
            if isinstance(raw, list | tuple):
                if not raw:
                    continue
                raw = raw[-1]
            value = raw if isinstance(raw, str) else str(raw)
            if name not in PARAMETERS:
                notes.append(f"Ignored unknown parameter {_shown(name)!r}; links use {', '.join(PARAMETERS)}.")
                continue
            attribute = PARAMETERS[name]
            try:
                values[attribute], note = _READERS[attribute](value)
            except _Ignored as ignored:
                notes.append(f"Ignored {name}={_shown(value)}: {ignored}.")
                continue
            except Exception:  # a reader's own slip must not break the page either
                notes.append(f"Ignored {name}={_shown(value)}: it could not be read.")
                continue
            if note is not None:
                notes.append(note)
        try:
            return cls(**values), tuple(notes)
        except Exception as error:  # each reader checks its own value, so this is a bug; still, never raise
            return _DEFAULT, (*notes, f"Ignored the whole link: {error}")


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}.")


def _subset(name: str, values: Iterable[str], allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A set of choices in `allowed`'s order, whatever order or repeats they came in."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ValueError(f"{name} must be a collection of names from {', '.join(allowed)}, not {values!r}.")
    values = tuple(values)
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise ValueError(f"{name} may hold only {', '.join(allowed)}, not {unknown[0]!r}.")
    return tuple(v for v in allowed if v in values)


def _write(value: object) -> str:
    """One field as a query value: booleans 1/0, sets comma-separated in their canonical order.

    An empty set is written 'none', not as an empty value, which some parsers drop.
    """
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, frozenset):
        value = tuple(part for part in PARTS if part in value)
    if isinstance(value, tuple):
        return ",".join(value) or NONE
    return str(value)


def _quote(text: str, safe: str = "", encoding: str | None = None, errors: str | None = None) -> str:
    """`quote`, after replacing unpaired surrogates, which are not text and have no UTF-8 form."""
    return quote(_LONE_SURROGATE.sub("\ufffd", text), safe=safe)


def _shown(value: str) -> str:
    """A value quoted back to the user, short enough for a note."""
    return value if len(value) <= _SHOWN_VALUE else value[:_SHOWN_VALUE] + "…"


# readers: a query value -> (field value, a note if it was changed to fit); a value that
# cannot be used raises _Ignored, whose reason completes "Ignored name=value: ..."
Reader = Callable[[str], tuple[object, str | None]]


class _Ignored(Exception):
    """Why a query value was left out; the default stays."""


def _sentence(which: str) -> Reader:
    def read(value: str) -> tuple[object, str | None]:
        if len(value) <= MAX_SENTENCE:
            return value, None
        return value[:MAX_SENTENCE], (
            f"Sentence {which} in the link has {len(value):,} characters; the first {MAX_SENTENCE:,} were kept."
        )

    return read


def _choice(allowed: tuple[str, ...], why: Mapping[str, str] | None = None) -> Reader:
    def read(value: str) -> tuple[object, str | None]:
        if value in allowed:
            return value, None
        reason = (why or {}).get(value, "it is not one of the choices")
        raise _Ignored(f"{reason}; allowed: {', '.join(allowed)}")

    return read


def _names(allowed: tuple[str, ...], as_set: bool = False) -> Reader:
    """Comma-separated names; 'none' (or nothing) is the empty choice."""

    def read(value: str) -> tuple[object, str | None]:
        names = [n.strip() for n in value.split(",") if n.strip()]
        if names == [NONE]:
            names = []
        unknown = [n for n in names if n not in allowed]
        if unknown:
            raise _Ignored(f"{_shown(unknown[0])!r} is not one of {', '.join(allowed)} (comma-separated, or none)")
        chosen = tuple(n for n in allowed if n in names)
        return (frozenset(chosen) if as_set else chosen), None

    return read


def _flag(value: str) -> tuple[object, str | None]:
    word = value.strip().lower()
    if word in _TRUE:
        return True, None
    if word in _FALSE:
        return False, None
    raise _Ignored("it must be 1 or 0 (also true/false, yes/no, on/off)")


def _number(low: int, high: int, optional: bool = False) -> Reader:
    """A whole number in range; an optional one is cleared by an empty value or 'none'."""

    def read(value: str) -> tuple[object, str | None]:
        text = value.strip()
        if optional and text.lower() in ("", NONE):
            return None, None
        if _WHOLE_NUMBER.fullmatch(text) and low <= (number := int(text)) <= high:
            return number, None
        raise _Ignored(f"it must be a whole number from {low:,} to {high:,}" + (", or none" if optional else ""))

    return read


# query parameter -> ViewState field, in the order links are written
PARAMETERS = {
    "a": "sentence_a",
    "b": "sentence_b",
    "source": "source",
    "positions": "positions",
    "groups": "groups",
    "labels": "labels",
    "arrows": "arrows",
    "shift": "shift",
    "basis": "basis",
    "background": "background",
    "freeze": "frozen",
    "token": "token",
    "k": "k",
    "step": "step",
    "presenter": "presenter",
}

_READERS: dict[str, Reader] = {
    "sentence_a": _sentence("A"),
    "sentence_b": _sentence("B"),
    "source": _choice(SHAREABLE_SOURCES, {"upload": "a link cannot carry an uploaded file"}),
    "positions": _choice(tuple(POSITIONS)),
    "groups": _names(COMPONENTS),
    "labels": _flag,
    "arrows": _flag,
    "shift": _flag,
    "basis": _choice(BASES),
    "background": _number(0, MAX_BACKGROUND),
    "frozen": _names(tuple(PARTS), as_set=True),
    "token": _number(0, MAX_TOKEN, optional=True),
    "k": _number(*K_RANGE),
    "step": _number(1, MAX_STEP, optional=True),
    "presenter": _flag,
}

_DEFAULT = ViewState()
