"""Links: a `View` written as a URL's query string, and read back from whatever a link carries.

A lecturer puts a link on a slide and every student opens the same picture; a student sends
a link to show what they found. A link is the view's query string, nothing more — it cannot
carry an uploaded file or trained tables, which live only in the session that made them.

Two directions, with different duties: `to_query` writes short, readable links, the same link
for the same view; `from_query` reads whatever arrives — links edited by hand, cut off by a
chat program, or crafted — and never raises, naming each parameter it could not use in a
plain-text note. An empty value is a real value (an empty sentence B, no groups ticked) and is
written as ``b=``; browsers and Starlette keep such parameters (``parse_qs`` needs
``keep_blank_values``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, urlencode

from core.view import options, tour
from core.view.fields import Choice, Flag, Flipped, Kind, Names, Text, Whole
from core.view.options import MAX_PARAMETERS, MAX_QUERY, MAX_TEXT, PARTS, SHAREABLE_SOURCES, Refused
from core.view.state import FIELDS, View

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_SHOWN = 40  # characters of a bad name or value quoted back in a note
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # from JSON "\ud800"; UTF-8 cannot encode them
NONE = "none"  # the empty set of groups, freezes or flips, and no selected token or tour step
# parameters of a page's address that are not part of its view: the class it follows (core/serving/classroom.py)
PAGE_PARAMETERS = frozenset({"class"})


@dataclass(frozen=True)
class Link:
    """A view read from a link, and a plain-text note for each part that was not used."""

    view: View
    notes: tuple[str, ...] = ()


def to_query(view: View) -> tuple[str, tuple[str, ...]]:
    """The query string of a link to `view` (no leading '?'), and what the link cannot carry.

    Only what differs from the link's base is written, always in the same order, so the same
    view always gives the same link. The base is a fresh page, or, when the view is on a tour
    step, that step's view: ``?step=6`` alone is step 6.
    """
    base = _base(view.step)
    notes = ()
    if view.source == "upload":
        # the link falls back to the random tables, explicitly so a tour step's source does not win
        view = view.with_(source="random")
        notes = ("A link cannot carry an uploaded file: it opens the random tables instead.",)
    pairs = [("step", str(view.step))] if view.step is not None else []
    for parameter, (name, _, write) in _PARAMETERS.items():
        if name != "step" and getattr(view, name) != getattr(base, name):
            pairs.append((parameter, write(getattr(view, name))))
    # commas stay readable in groups=token,sum
    return urlencode(pairs, quote_via=_quote, safe=","), notes


def from_query(params: Mapping[str, str | list[str]]) -> Link:
    """The view a link's parameters describe; never raises.

    Each parameter it cannot use keeps the base's value and is named in a note. Notes are
    plain text; the page shows them as text, never as markup, since a parameter's name and
    value are chosen by whoever wrote the link.

    `params` is a parsed query (``request.query_params``, or ``parse_qs(query,
    keep_blank_values=True)``); a list takes its last value, as a browser's form would. A
    valid ``step`` is the base the other parameters change; otherwise a fresh page is.
    """
    try:
        items = [(str(name), _last(raw)) for name, raw in list(params.items())[:MAX_PARAMETERS + 1]]
    except Exception:  # a link must never break the page
        return Link(View(), ("Ignored the link's parameters: they could not be read.",))
    notes: list[str] = []
    if len(items) > MAX_PARAMETERS:
        items = items[:MAX_PARAMETERS]
        notes.append(f"The link has more than {MAX_PARAMETERS} parameters; the first {MAX_PARAMETERS} were read.")
    items = [(name, value) for name, value in items
             if not name.startswith("__") and name not in PAGE_PARAMETERS and value is not None]
    step = None
    for name, value in items:
        if name == "step":
            try:
                step = _step(value)
            except Refused as error:
                notes.append(f"Ignored step={_shown(value)}: {error}")
    view = _base(step)
    changes: dict[str, object] = {}
    for name, value in items:
        if name == "step":
            continue
        if name not in _PARAMETERS:
            notes.append(f"Ignored unknown parameter {_shown(name)!r}; links use {', '.join(_PARAMETERS)}.")
            continue
        field, read, _ = _PARAMETERS[name]
        try:
            changes[field], note = read(value)
        except Refused as error:
            notes.append(f"Ignored {name}={_shown(value)}: {error}")
            continue
        except Exception:  # a reader's own slip must not break the page either
            notes.append(f"Ignored {name}={_shown(value)}: it could not be read.")
            continue
        if note:
            notes.append(note)
    return Link(*_apply(view, changes, notes))


def _apply(view: View, changes: dict, notes: list[str]) -> tuple[View, tuple[str, ...]]:
    """The changes that fit together; a combination the view refuses drops only that parameter."""
    try:
        return view.with_(**changes), tuple(notes)
    except Refused:
        pass
    for field, value in changes.items():  # one at a time: keep all that fit
        try:
            view = view.with_(**{field: value})
        except Refused as error:
            notes.append(f"Ignored {_NAMES[field]}: {error}")
    return view, tuple(notes)


_FRESH = View()  # a fresh page's view, built once: every keystroke's link is written against it


def _base(step: int | None) -> View:
    return tour.step(step).view if step is not None else _FRESH


def _last(raw: object) -> str | None:
    if isinstance(raw, list | tuple):
        raw = raw[-1] if raw else None
    return None if raw is None else raw if isinstance(raw, str) else str(raw)


def _quote(text: str, safe: str = "", encoding: str | None = None, errors: str | None = None) -> str:
    """`quote`, after replacing unpaired surrogates, which have no UTF-8 form."""
    return quote(_LONE_SURROGATE.sub("\ufffd", text), safe=safe)


def _shown(value: str) -> str:
    value = _LONE_SURROGATE.sub("\ufffd", value)
    return value if len(value) <= _SHOWN else value[:_SHOWN] + "…"


# readers: a query value -> (field value, a note if it was changed to fit); a value that
# cannot be used raises Refused, whose message completes "Ignored name=value: ..."
Reader = Callable[[str], tuple[object, str | None]]
Writer = Callable[[object], str]


def _text(which: str, limit: int = MAX_TEXT) -> Reader:
    def read(value: str) -> tuple[object, str | None]:
        if len(value) <= limit:
            return value, None
        return value[:limit], f"{which} in the link has {len(value):,} characters; the first {limit:,} were kept."

    return read


def _choice(allowed, why: Mapping[str, str] | None = None) -> Reader:
    def read(value: str) -> tuple[object, str | None]:
        if value in allowed:
            return value, None
        raise Refused(f"{(why or {}).get(value, 'it is not one of the choices')}; allowed: {', '.join(allowed)}.")

    return read


def _names(allowed: tuple[str, ...], as_set: bool = False) -> Reader:
    """Comma-separated names; 'none' (or nothing) is the empty choice."""

    def read(value: str) -> tuple[object, str | None]:
        names = [n.strip() for n in value.split(",") if n.strip()]
        if names == [NONE]:
            names = []
        unknown = [n for n in names if n not in allowed]
        if unknown:
            raise Refused(f"{_shown(unknown[0])!r} is not one of {', '.join(allowed)} (comma-separated, or none).")
        chosen = tuple(n for n in allowed if n in names)
        return (frozenset(chosen) if as_set else chosen), None

    return read


def _flag(value: str) -> tuple[object, str | None]:
    word = value.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE, None
    raise Refused("it must be 1 or 0 (also true/false, yes/no, on/off).")


def _number(limit: str, optional: bool = False) -> Reader:
    """A whole number in LIMITS[limit]; an optional one is cleared by an empty value or 'none'."""

    def read(value: str) -> tuple[object, str | None]:
        if optional and value.strip().lower() in ("", NONE):
            return None, None
        return options.whole(value, limit), None

    return read


def _positions(value: str) -> tuple[object, str | None]:
    """Comma-separated token positions (flipped segments)."""
    parts = [p for p in value.split(",") if p.strip()]
    if parts == [NONE]:
        parts = []
    if len(parts) > options.MAX_FLIPS:
        raise Refused(f"at most {options.MAX_FLIPS} tokens can be flipped.")
    return frozenset(options.whole(p, "token") for p in parts), None


def _step(value: str) -> int | None:
    return None if value.strip().lower() in ("", NONE) else options.whole(value, "step")


def _write(value: object) -> str:
    """One field as a query value: booleans 1/0, sets comma-separated in a fixed order."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if value is None:
        return NONE
    if isinstance(value, frozenset):
        value = tuple(sorted(value, key=lambda v: (PARTS.index(v) if v in PARTS else 0, v)))
    if isinstance(value, tuple):
        return ",".join(map(str, value)) or NONE
    return str(value)


def _reader(name: str, kind: Kind) -> Reader:
    """The reader of a view field's link parameter, from the field's kind (`core.view.state.FIELDS`):
    a link takes what the View takes, with the same limits."""
    if name == "source":  # the one field a link reads more narrowly than a View: no uploaded file
        return _choice(SHAREABLE_SOURCES, {"upload": "a link cannot carry an uploaded file"})
    match kind:
        case Text():  # a Sentence too: cut to its limit here, and checked by the View as it is built
            return _text(kind.label, kind.limit)
        case Whole():
            return _number(kind.limit or name, optional=kind.optional)
        case Choice():
            return _choice(kind.allowed)
        case Names():
            return _names(kind.allowed, as_set=kind.as_set)
        case Flag():
            return _flag
        case Flipped():
            return _positions
    raise TypeError(f"a link cannot read the view field {name!r}: core/view/share.py has no reader of {kind!r}.")


# query parameter -> (View field, reader, writer), in the order links are written: the tour step
# first (the base the others change), then the fields in the View's order
_PARAMETERS: dict[str, tuple[str, Reader, Writer]] = {
    declared.link: (name, _reader(name, declared.kind), _write)
    for name, declared in sorted(FIELDS.items(), key=lambda item: item[0] != "step")
    if declared.link is not None
}
PARAMETERS = {parameter: field for parameter, (field, _, _) in _PARAMETERS.items()}  # parameter -> View field
_NAMES = {field: parameter for parameter, field in PARAMETERS.items()}


def from_address(query: object) -> Link:
    """The view of an address Back or Forward landed on (its query string, without "?"), read
    like any link; `Refused` when it is not one the page could have written."""
    if not isinstance(query, str) or len(query) > MAX_QUERY:
        raise Refused(f"The page's address could not be read (at most {MAX_QUERY:,} characters of a link); it shows "
                      "the view it had.")
    return from_query(parse_qs(query, keep_blank_values=True))
