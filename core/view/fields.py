"""One declaration per view field: its check, its link parameter, its widget and what it redraws.

Each field of the page's `View` (core/view/state.py) is declared once, on the line that names it:

    d_model: int = declare(Settings.d_model, Whole(), link="d", widget="d_model", redraws={TABLES})

and the rest of the app derives from that line (`Field` says how), so a new field is one edit
and tests/test_fields.py fails on a field some part of the app would miss. `core` never imports
gradio, so a widget is named by its attribute on `ui.page.Page`, and what a field redraws by
the names in `REDRAWS`, which ui/render.py draws. The limits and the kinds of
value a field takes stay in `core.view.options`, beside the one check of each kind.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from core.view.options import Choice, Flag, Flipped, Kind, Names, Sentence, Text, Whole

# what a field's change draws again, beside its own widget (ui/render.py draws each)
TABLES = "tables"  # the session's tables, so everything drawn from them: plane, side view, background, summary
PLANE = "plane"  # the main plot, its summary, neighbours, search and variance bars, and the open side view
BACKGROUND = "background"  # the vocabulary words drawn behind the tokens
DETAIL = "detail"  # the open side view (positions, LayerNorm, similarity)
LISTING = "listing"  # the first document's listing, while its tab is open
LOOKUP = "lookup"  # the second document's walk-through, while its tab is open
REDRAWS = (TABLES, PLANE, BACKGROUND, DETAIL, LISTING, LOOKUP)

_DECLARED = "declared"  # the key of a dataclass field's metadata that holds its `Field`


# --- the declaration ---


@dataclass(frozen=True)
class Field:
    """Everything the app needs to know about one view field besides its type and default.

    The `View` checks the value with its kind when it is built (`Whole()`: a whole number
    within `core.view.options.LIMITS["d_model"]`); `core.view.share` reads and writes the link
    parameter with that kind's reader, so a link and the page accept the same values;
    `ui.render` writes the page's widget and redraws what `redraws` names; `ui.page.Page.everything`
    lists the widget among what a change may write. When each of those kept its own list, a
    new field took an edit in five modules, and one left out of a list never redrew the plot.

    `declare` takes every part but `typed` without a default: leaving one out is a TypeError
    where the field is declared, so "none" is always said (`link=None`, `widget=None`,
    `redraws=set()`), never assumed."""

    kind: Kind  # its type and limits: the check the View makes when it is built
    link: str | None  # its link parameter; None: no link carries it, the page's own screen decides it
    widget: str | None  # the `ui.page.Page` attribute that shows it; None: no widget of its own
    redraws: frozenset[str]  # what its change draws again beside its widget: names of REDRAWS
    typed: bool  # changed a keystroke at a time: the address bar rewrites one history entry meanwhile

    def __post_init__(self) -> None:
        object.__setattr__(self, "redraws", frozenset(self.redraws))
        unknown = self.redraws - set(REDRAWS)
        if unknown:  # a misspelt name would redraw nothing, silently
            raise ValueError(f"redraws {sorted(unknown)}: a field redraws only {', '.join(REDRAWS)}.")


def declare(default: object, kind: Kind, *, link: str | None, widget: str | None, redraws: Collection[str],
            typed: bool = False):
    """A `View` field with its declaration (see `Field`): ``name: type = declare(default, kind, …)``."""
    return dataclasses.field(default=default, metadata={_DECLARED: Field(kind, link, widget, redraws, typed)})


def declarations(cls) -> Mapping[str, Field]:
    """The declared fields of dataclass `cls`, in field order (a field declared without
    `declare` is left out: tests/test_fields.py checks that every field of a View is here)."""
    return MappingProxyType({f.name: f.metadata[_DECLARED] for f in dataclasses.fields(cls) if _DECLARED in f.metadata})


__all__ = ["BACKGROUND", "DETAIL", "LISTING", "LOOKUP", "PLANE", "REDRAWS", "TABLES", "Choice", "Field", "Flag",
           "Flipped", "Kind", "Names", "Sentence", "Text", "Whole", "declarations", "declare"]
