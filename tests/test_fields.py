"""One declaration per view field (core/view/fields.py): every field has every part, and the page
does what the parts say.

A field of `View` is declared once, with its kind (type and limits), link parameter, widget and
what its change redraws; links, the page's route, its widgets' events and rendering derive from
that. These tests fail when a field lacks a part, names a widget the page does not have or does
not send, or redraws other than it declares; and they follow the README's recipe for a new field.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from core.serving.tabs import Change
from core.tables.session import Session
from core.view.fields import (
    BACKGROUND,
    DETAIL,
    LISTING,
    LOOKUP,
    PLANE,
    REDRAWS,
    TABLES,
    Field,
    Kind,
    Names,
    Text,
    Whole,
)
from core.view.options import ASSETS, DETAILS, LIMITS, PANELS, VIEWS
from core.view.share import PARAMETERS
from core.view.state import FIELDS, SCREEN, View

NAMES = [f.name for f in fields(View)]
ROOT = Path(__file__).resolve().parents[1]
OPENERS = {"panel": PANELS, "shown": VIEWS}  # fields a tab's opening sets (ui/ondemand.py), one tab per key


@pytest.fixture(scope="module")
def page():
    import app

    return app.demo.explorer


def widgets_of(page, declared: Field) -> list:
    widget = getattr(page, declared.widget)
    return list(widget.values()) if isinstance(widget, dict) else [widget]


def missing_parts(page, name: str) -> list[str]:
    """What the field `name` lacks, in words (empty: it is declared whole)."""
    from ui import render

    declared = FIELDS.get(name)
    if not isinstance(declared, Field):
        return ["a declaration: write it as `name: type = declare(default, kind, link=…, widget=…, redraws=…)`"]
    lacks = []
    default = View.__dataclass_fields__[name].default
    if not isinstance(declared.kind, Kind):
        lacks.append(f"a kind (its type and limits), not {declared.kind!r}")
    elif declared.kind.check(default, name) != default:
        lacks.append(f"a default its own kind keeps as it is ({default!r})")
    if declared.link is None:
        if name not in SCREEN or name in PARAMETERS.values():
            lacks.append("its place outside links (View.SCREEN)")
    elif not (isinstance(declared.link, str) and re.fullmatch(r"[a-z][a-z_]*", declared.link)):
        lacks.append(f"a link parameter (lower-case letters and _), or link=None; not {declared.link!r}")
    elif PARAMETERS.get(declared.link) != name:
        lacks.append(f"a link parameter of its own: {declared.link!r} reads {PARAMETERS.get(declared.link)!r}")
    shown = render.fields(page, View(), {name})
    if declared.widget is None:
        if shown:
            lacks.append("widget=None while the page writes a widget of it")
    elif not isinstance(declared.widget, str) or not hasattr(page, declared.widget):
        lacks.append(f"a widget on the page: ui.page.Page has no {declared.widget!r}")
    else:
        widgets = widgets_of(page, declared)
        if not all(widget in shown for widget in widgets):
            lacks.append(f"a writer of its widget {declared.widget!r} (ui/render.py fields)")
        if not all(widget in page.written or widget in hand_over(page).outputs for widget in widgets):
            lacks.append(f"its widget {declared.widget!r} among the outputs the route's answers write "
                         "(ui.page.hand_over, or Page.written)")
        if name in settable() and not sent_when_set(name, widgets):
            lacks.append(f"its widget {declared.widget!r} sending it over the page's route when set (ui.page.wire)")
    if not isinstance(declared.redraws, frozenset) or not declared.redraws <= set(REDRAWS):
        lacks.append(f"what it redraws, from {', '.join(REDRAWS)} (redraws=set(): nothing)")
    return lacks


def settable() -> frozenset[str]:
    from ui.route import SETTABLE

    return SETTABLE


def browser_events() -> list:
    """The page's events that run in the browser alone (no server function): its widgets' wiring."""
    import app

    return [fn for fn in app.demo.fns.values() if fn.fn is None and fn.js]


def hand_over(page):
    """The event whose outputs are the gradio widgets an answer of the page's route may set."""
    found = [fn for fn in browser_events() if "embeddingExplorer.handOver(" in fn.js]
    assert len(found) == 1, "the page has no single hand-over event"
    return found[0]


def sent_when_set(name: str, widgets: list) -> bool:
    """Whether the page sends field `name` over its route when a person sets its widget: an event
    of the widget that sets the field (ui.page.wire), a tab's opening (ui/ondemand.py), or, for
    the sentences, the page's script on every key (assets/explorer.js)."""
    if name in ("sentence_a", "sentence_b"):
        script = (ASSETS / "explorer.js").read_text(encoding="utf-8")
        return all(f'"{widget.elem_id}": "{name}"' in script for widget in widgets)
    if name in OPENERS:
        return all(any(f"tabOpened({json.dumps({name: key})})" in fn.js for fn in browser_events())
                   for key in OPENERS[name])
    return any(f"embeddingExplorer.set({{{name}: " in fn.js and all(widget in fn.inputs for widget in widgets)
               for fn in browser_events())


@pytest.mark.parametrize("name", NAMES)
def test_every_view_field_is_declared_with_every_part(page, name):
    assert missing_parts(page, name) == []


def test_the_declarations_are_the_views_fields():
    assert list(FIELDS) == NAMES


def test_links_keep_their_parameters_and_order():
    """The link format is a contract: derived from the declarations, it stays what it was."""
    assert list(PARAMETERS) == [
        "step", "a", "b", "source", "tokenizer", "vocab", "d", "maxlen", "segments", "seed", "positions", "freeze",
        "groups", "labels", "arrows", "shift", "basis", "background", "token", "k", "flip", "dims", "search", "regex",
        "view", "panel", "presenter", "theme", "listing_seed", "listing_bug", "lookup", "lookup_dim", "lookup_grad",
        "answers", "layer", "sound", "read"]
    assert SCREEN == ("narrow",)


def test_a_misspelt_redraw_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="a field redraws only tables, plane"):
        Field(Whole(), link="x", widget=None, redraws={"plain"}, typed=False)


# --- what a change redraws is what its declaration says ---


def another(name: str, value: object) -> object:
    """An allowed value of field `name` other than `value`."""
    kind = FIELDS[name].kind
    if isinstance(value, bool):
        return not value
    if isinstance(kind, Whole):
        low, _ = LIMITS[kind.limit or name]
        return low + 1 if value == low else low
    if isinstance(kind, Names):
        chosen = tuple(value) or kind.allowed[:1]
        chosen = chosen[:-1] if len(chosen) > 1 else kind.allowed[-1:]
        return frozenset(chosen) if kind.as_set else chosen
    if isinstance(kind, Text):
        return "the dog slept"
    if name == "flips":
        return frozenset({1})
    return next(key for key in kind.allowed if key != value)  # a Choice


def drawn(page, out: dict, view: View) -> set[str]:
    """What `render.outputs` drew again, named as in core.view.fields.REDRAWS."""
    seen = {what for what, component in ((TABLES, page.tables_info), (PLANE, page.plot),
                                         (BACKGROUND, page.background_json), (LISTING, page.listing_output),
                                         (LOOKUP, page.lookup_output)) if component in out}
    side = {"positions": page.positions_plot, "layernorm": page.layernorm_plot, "similarity": page.similarity_plot}
    if view.shown in side and out.get(side[view.shown]) is not None:
        seen.add(DETAIL)
    return seen


def closure(redraws: frozenset[str]) -> set[str]:
    """What a declaration's redraws bring with them: tables the plane and the background, the
    plane its open side view."""
    wanted = set(redraws)
    if TABLES in wanted:
        wanted |= {PLANE, BACKGROUND}
    if PLANE in wanted:
        wanted.add(DETAIL)
    return wanted


def expected(redraws: frozenset[str], view: View) -> set[str]:
    """What the declaration says a change draws on a page showing `view`: a side view only while open."""
    shown = {DETAIL} if view.shown in DETAILS else {LISTING} if view.shown == "listing" else \
        {LOOKUP} if view.shown == "lookup" else set()
    return {what for what in closure(redraws) if what not in (DETAIL, LISTING, LOOKUP) or what in shown}


@pytest.fixture(scope="module")
def session():
    return Session.create()


@pytest.mark.parametrize("name", NAMES)
def test_a_change_of_each_field_redraws_what_it_declares(page, session, name):
    from ui import render

    declared = FIELDS[name]
    tab = "plane" if name == "shown" else "listing" if LISTING in declared.redraws else \
        "lookup" if LOOKUP in declared.redraws else "positions"
    old = View(shown=tab, panel="view")
    new = old.with_(**{name: another(name, getattr(old, name))})
    assert new.differs(old) == (name,)
    tokens = [session.encode(view.sentence_a, view.sentence_b).tokens for view in (old, new)]
    step = Change(old, new, session, session, tokens[1], (), tokens[0], revision=1)
    out = render.outputs(page, step)
    assert drawn(page, out, new) == expected(declared.redraws, new)
    if declared.widget is not None:  # and its widget shows the new value
        assert all(widget in out for widget in widgets_of(page, declared))


def draw(page, what: str, view: View, session: Session):
    """One of the things a change can redraw, drawn for `view`, as ui/render.py draws it."""
    from ui import render

    if what == PLANE:
        return render.plane(page, view, session)
    if what == DETAIL:
        return render.detail(page, view, session)
    if what == BACKGROUND:
        return render.background_json(view, session)
    return render.listing(page, view) if what == LISTING else render.lookup(page, view)


@pytest.mark.parametrize("name", [name for name in NAMES if name not in FIELDS or TABLES not in FIELDS[name].redraws])
def test_what_a_field_does_not_redraw_does_not_depend_on_it(page, session, name):
    """The other half of a declaration's truth: a field left out of what something redraws
    (the plane, say) must not change that thing, or the page would keep showing it stale."""
    behind = session.with_basis("vocabulary")  # a fixed plane: the background and its reach are drawn
    old = View(shown="positions", background=0 if name == "background" else 100)
    new = old.with_(**{name: LIMITS["background"][1] if name == "background" else another(name, getattr(old, name))})
    for what in set(REDRAWS) - closure(FIELDS[name].redraws) - {TABLES}:
        assert draw(page, what, old, behind) == draw(page, what, new, behind), f"{name} changes the {what}"


# --- the README's recipe, followed ---

RECIPE = {  # "Adding a view field": one declaration in View, the widget named on the Page and laid out in its panel
    "core/view/state.py": (
        '    answers: bool = declare(True, Flag(), link="answers", widget="answers", redraws={PLANE})\n',
        '    grid: bool = declare(False, Flag(), link="grid", widget="grid", redraws={PLANE})\n'),
    "ui/page.py": ("    answers: gr.Checkbox  # a class's words in the plane (View.answers)\n",
                   "    grid: gr.Checkbox\n"),
    "ui/viewpanel.py": ('info="in a class: the words students sent, where the table puts them")\n',
                        '        page.grid = gr.Checkbox(False, label="Grid", elem_id="show-grid")\n'),
}
# run in the copy: what the page, its route and render make of the new field
FOLLOWED = """
import asyncio, json
import app
from core.view.state import View
from tests.test_fields import missing_parts
from ui import render, route

page = app.demo.explorer
live = page.live

async def answer(sent):
    return json.loads((await live.guarded(lambda: live.answer(json.dumps(sent).encode()))).body)

async def calls():
    opened = await answer({"open": {"query": "grid=1"}})
    key = json.loads(opened["values"]["address"])["key"]
    tab, _ = live.channel_of(key)
    seen = {"opened": opened["values"], "grid": tab.view.grid}
    seen["off"] = (await answer({"key": key, "change": {"grid": False}}))["values"]
    seen["off grid"] = tab.view.grid
    seen["hostile"] = (await answer({"key": key, "change": {"grid": "yes"}}))["values"]
    seen["back"] = (await answer({"key": key, "change": {"back": "grid=1&a=a%20grid"}}))["values"]
    seen["back grid"] = tab.view.grid
    return seen

seen = asyncio.run(calls())
seen["settable"] = "grid" in route.SETTABLE
seen["missing"] = missing_parts(page, "grid")
seen["rendered"] = render.fields(page, View(grid=True), {"grid"}) == {page.grid: True}
print(json.dumps(seen))
"""


def test_a_field_added_as_the_readme_says_is_set_by_its_widget_and_written_back(tmp_path):
    """The README's "Adding a view field", followed in a copy of the app: a declaration in `View`
    and a widget on the Page, laid out in its panel, and nothing else. The route then takes the
    field (`ui.route.SETTABLE`), the page sends it when its widget is set (`ui.page.wire`), a link
    carries it, and an answer that shows a whole view writes it back into the widget
    (`ui.render`); a value its kind refuses is said and the widget put back."""
    copy = tmp_path / "explorer"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", "bench", "deploy", "*.pyc"))
    for path, (after, line) in RECIPE.items():
        text = (copy / path).read_text(encoding="utf-8")
        assert text.count(after) == 1, f"{path} no longer has the line the recipe is followed after"
        (copy / path).write_text(text.replace(after, after + line), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", FOLLOWED], cwd=copy, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONPATH": str(copy)})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["settable"] and seen["missing"] == [] and seen["rendered"]
    # a link carries it, and the page it opens shows it in its widget
    assert seen["grid"] is True and seen["opened"]["show-grid"] is True
    assert "grid=1" in json.loads(seen["opened"]["address"])["query"]
    # set by its widget: the view takes it, the link drops it, the widget keeps what the person set
    assert seen["off grid"] is False and "grid" not in json.loads(seen["off"]["address"])["query"]
    assert "show-grid" not in seen["off"]
    # refused by its kind: said, and the widget put back
    assert seen["hostile"]["show-grid"] is False and "grid must be true or false" in seen["hostile"]["notice"]
    # a whole view (Back to an address) writes it back into its widget
    assert seen["back grid"] is True and seen["back"]["show-grid"] is True
