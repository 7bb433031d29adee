"""The page's style and scripts name only what the app itself puts on the page, or plotly does.

gradio's own DOM (its class names such as `.gradio-container`, `.block`, `.html-container`, the
classes of the code editor inside gr.Code, the ids it derives such as `#tab-tour-button`) is not
part of its public API: a release may rename or reshape it without notice, and a rule or a lookup
that relied on it stops working silently (a focus ring gone, a phone's tour laid out wrong). So
every class and id in a selector of the stylesheet (assets/*.css) and of the page's lookups
(`querySelector`, `querySelectorAll`, `closest`, `matches`, `getElementById` in assets/*.js and in
the scripts ui/*.py gives its components) must be one the app sets:

* `elem_id=` / `elem_classes=` of its components (ui/*.py),
* `class="…"` / `id="…"` in the HTML it writes (ui/, core/, assets/*.js),
* `className`, `classList.add/toggle/replace`, `setAttribute("class"|"id", …)` and `.id =` in its scripts,

or one of plotly's classes (plotly.js is served by the app itself: ui/assets.py), read from the
installed package's plotly.min.js. The readers are tested on snippets of each kind, so a scan that
found nothing because it looked at nothing fails too.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from ui.assets import PLOTLY_JS

ROOT = Path(__file__).resolve().parents[1]
STYLESHEETS = sorted((ROOT / "assets").glob("*.css"))
SCRIPTS = sorted((ROOT / "assets").glob("*.js"))
PAGE_MODULES = sorted((ROOT / "ui").glob("*.py"))  # the components, and the scripts they run (js_on_load)
HTML_MODULES = sorted([*PAGE_MODULES, *(ROOT / "core").rglob("*.py")])  # what writes the page's HTML

NAME = r"-?[_a-zA-Z][\w-]*"
LOOKUPS = re.compile(r"\b(querySelectorAll|querySelector|closest|matches|getElementById)\s*\(")
# a string literal of JS or of Python's JS: "…", '…' or `…` (a template's ${…} parts are not names)
STRING = re.compile(r"\"((?:[^\"\\\n]|\\.)*)\"|'((?:[^'\\\n]|\\.)*)'|`((?:[^`\\]|\\.)*)`")
# markup the app writes: class="a b", id='c' (a value with ${…} or {…} in it is only read up to there)
MARKUP = re.compile(r"""\b(class|id)\s*=\s*\\?["']([^"'\\${}]*)""")
SET_IN_SCRIPT = (
    ("class", re.compile(r"\bclassName\s*[=:]\s*[\"'`]([^\"'`$]*)")),  # el.className = …, {className: …}
    ("class", re.compile(r"\.classList\.(?:add|toggle|replace)\(\s*[\"'`]([^\"'`$]*)")),
    ("class", re.compile(r"setAttribute\(\s*[\"']class[\"']\s*,\s*[\"'`]([^\"'`$]*)")),
    ("id", re.compile(r"setAttribute\(\s*[\"']id[\"']\s*,\s*[\"'`]([^\"'`$]*)")),
    ("id", re.compile(r"\.id\s*=\s*[\"'`]([^\"'`$]*)")),
)


def css_selectors(css: str) -> list[str]:
    """Every selector of a stylesheet, one a comma-separated part (inside at-rules too)."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    found = []
    for prelude in re.findall(r"([^{};]+)\{", css):
        prelude = prelude.strip()
        if prelude and not prelude.startswith("@"):
            found += [part.strip() for part in split_selectors(prelude)]
    return found


def split_selectors(prelude: str) -> list[str]:
    """A selector list split at its top-level commas (not those inside :is(…), :has(…))."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(prelude):
        depth += char in "([" or -(char in ")]")
        if char == "," and depth == 0:
            parts.append(prelude[start:i])
            start = i + 1
    return [*parts, prelude[start:]]


def names_in(selector: str) -> set[tuple[str, str]]:
    """The classes and ids a selector names: {("class", "a"), ("id", "b")}; attribute values and
    strings are not names."""
    selector = re.sub(r"\[[^\]]*\]", "", selector)  # [type=checkbox], [href='a.b']
    found = {("class", name) for name in re.findall(rf"\.({NAME})", selector)}
    return found | {("id", name) for name in re.findall(rf"#({NAME})", selector)}


def script_lookups(code: str) -> list[str]:
    """The selectors a script looks up with: the string literals given to querySelector(All),
    closest and matches (each branch of a `?:`), and getElementById's as `#id`; what a template
    builds at run time (`#${id}`) is left out."""
    found = []
    for call in LOOKUPS.finditer(code):
        depth, end = 1, call.end()
        while depth and end < len(code):
            depth += (code[end] == "(") - (code[end] == ")")
            end += 1
        for match in STRING.finditer(code, call.end(), end - 1):
            text = next(group for group in match.groups() if group is not None)
            text = re.sub(r"\$\{[^}]*\}[\w-]*", "", text)
            if text.strip():
                found.append(f"#{text}" if call.group(1) == "getElementById" else text)
    return found


def set_in_markup(text: str) -> set[tuple[str, str]]:
    """The classes and ids of the HTML in `text` (class="a b", id="c")."""
    found = set()
    for kind, value in MARKUP.findall(text):
        found |= {(kind, name) for name in value.split()}
    return found


def set_in_script(code: str) -> set[tuple[str, str]]:
    """The classes and ids a script writes into the page: its markup and what it sets on elements."""
    found = set_in_markup(code)
    for kind, pattern in SET_IN_SCRIPT:
        for value in pattern.findall(code):
            found |= {(kind, name) for name in value.split()}
    return found


def id_helpers(source: str) -> set[str]:
    """The functions a module defines that make a component from an element id given first
    (ui/assets.py `chart(elem_id)`)."""
    return {node.name for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)
            and node.args.args and node.args.args[0].arg == "elem_id"}


def set_in_python(source: str, helpers: frozenset[str] = frozenset()) -> set[tuple[str, str]]:
    """What a module of the app puts on the page: its components' elem_id and elem_classes (every
    string in the argument: a list, a conditional; the first argument of a `helpers` function),
    and the classes and ids of the HTML and the scripts in its strings."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        called = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None
        if called in helpers and node.args and isinstance(node.args[0], ast.Constant):
            found.add(("id", node.args[0].value))
        if isinstance(node, ast.keyword) and node.arg in ("elem_id", "elem_classes"):
            kind = "id" if node.arg == "elem_id" else "class"
            found |= {(kind, name.value) for name in ast.walk(node.value)
                      if isinstance(name, ast.Constant) and isinstance(name.value, str)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found |= set_in_script(node.value)
    return found


@functools.cache
def plotly_classes() -> frozenset[str]:
    """The classes plotly.js gives its elements, read from the installed package's plotly.min.js:
    those it sets (`.classed("modebar", …)`, `class` attributes) and those its selectors and its
    own stylesheet name (`.select(".nsewdrag")`, "X .modebar-btn")."""
    code = PLOTLY_JS.read_text(encoding="utf-8")
    found = set()
    for pattern in (r"\.classed\(\s*\"([^\"]+)\"", r"\"class\"\s*,\s*\"([^\"]+)\"", r"className\s*=\s*\"([^\"]+)\""):
        for value in re.findall(pattern, code):
            found |= set(value.split())
    selectors = re.findall(r"\.(?:select|selectAll|querySelector|querySelectorAll)\(\s*\"([^\"]+)\"", code)
    selectors += re.findall(r"\"(X[^\"]*)\"\s*:", code)  # its stylesheet's rules, X for ".js-plotly-plot .plotly"
    for selector in selectors:
        found |= {name for kind, name in names_in(selector) if kind == "class"}
    return frozenset(found)


def set_by_app() -> set[tuple[str, str]]:
    """Every class and id the app puts on the page."""
    sources = [path.read_text(encoding="utf-8") for path in HTML_MODULES]
    helpers = frozenset().union(*map(id_helpers, sources))
    found = set()
    for source in sources:
        found |= set_in_python(source, helpers)
    for path in SCRIPTS:
        found |= set_in_script(path.read_text(encoding="utf-8"))
    return found


def used_by_page() -> dict[tuple[str, str], list[str]]:
    """Every class and id the page's style and lookups name, with where: {("class", "a"): ["style.css: .a b"]}."""
    used: dict[tuple[str, str], list[str]] = {}

    def note(where: str, selector: str) -> None:
        for name in names_in(selector):
            used.setdefault(name, []).append(f"{where}: {selector}")

    for path in STYLESHEETS:
        for selector in css_selectors(path.read_text(encoding="utf-8")):
            note(path.name, selector)
    for path in [*SCRIPTS, *PAGE_MODULES]:
        for selector in script_lookups(path.read_text(encoding="utf-8")):
            note(path.name, selector)
    return used


# gradio's switch to its dark theme: the class on <body> whose rule sets the theme's `_dark` values,
# which the stylesheet follows for the two colours the theme has no dark value of (the accent, the ring)
THEME_SWITCH = frozenset({("class", "dark")})


def strangers(used: dict, known: set[tuple[str, str]]) -> dict:
    """What is named but neither set by the app (`known`) nor plotly's, nor gradio's dark-theme switch."""
    return {name: where for name, where in used.items() if name not in known | THEME_SWITCH
            and not (name[0] == "class" and name[1] in plotly_classes())}


def test_the_style_and_the_scripts_name_only_classes_and_ids_the_app_or_plotly_sets():
    used = used_by_page()
    unknown = strangers(used, set_by_app())
    assert not unknown, "named by the page but set by neither the app nor plotly (gradio's own DOM?):\n" + "\n".join(
        f"  {kind} {name}: {'; '.join(where)}" for (kind, name), where in sorted(unknown.items()))


def test_the_scan_reads_the_stylesheet_the_scripts_and_what_the_app_sets():
    used = used_by_page()
    known = set_by_app()
    assert STYLESHEETS and SCRIPTS and PAGE_MODULES
    assert len(used) > 100, "the scan found few names: it may be looking at nothing"
    # a few of each kind, from each source
    assert {("id", "main-row"), ("id", "embed-plot"), ("class", "on-tour"), ("class", "chart"),
            ("class", "upload-zone"), ("class", "chart-host"), ("class", "js-plotly-plot")} <= set(used)
    assert {("id", "main-row"), ("class", "on-tour"), ("class", "chart"),  # elem_id, elem_classes
            ("class", "upload-zone"), ("id", "upload-file"),  # markup in ui/
            ("class", "variance-bars"),  # markup in core/
            ("class", "chart-host"), ("class", "dragging"), ("id", "class-banner")} <= known  # set by scripts


def test_the_stylesheet_reader_finds_each_selector_inside_at_rules_and_not_in_comments():
    css = """/* .commented { } */
    :root:root { --a: 1px; }
    body.presenter #intro, .x:is(.y, .z) > p { display: none; }
    @media (max-width: 600px) {
        #main-row.on-tour #main-column { order: 1; }
    }
    label:has(input:is([type=checkbox], [type=radio]):focus-visible) { outline: 0; }"""
    assert css_selectors(css) == [":root:root", "body.presenter #intro", ".x:is(.y, .z) > p",
                                  "#main-row.on-tour #main-column",
                                  "label:has(input:is([type=checkbox], [type=radio]):focus-visible)"]


def test_a_selector_names_its_classes_and_ids_not_its_attribute_values():
    assert names_in(".gradio-container .block:has(> .empty.unpadded_box)") == {
        ("class", "gradio-container"), ("class", "block"), ("class", "empty"), ("class", "unpadded_box")}
    assert names_in("#tab-tour-button[aria-selected='true'] a[href='x.y#z']") == {("id", "tab-tour-button")}
    assert names_in("label:has(input:is([type=checkbox], [type=radio]))") == set()


def test_the_script_reader_finds_every_lookup_and_each_branch_of_a_choice():
    code = """
    const button = document.querySelector("#search-panel > button.label-wrap");
    el.closest('#a, .b'); list.querySelectorAll(`.c .d`);
    document.getElementById("main-row").classList.toggle("on-tour", true);
    document.querySelector(tour ? "#tour-buttons .tour-buttons" : "#embed-plot");
    panel.querySelector(`:scope > #${panelId}`); target.matches("textarea, input");
    """
    assert script_lookups(code) == ["#search-panel > button.label-wrap", "#a, .b", ".c .d", "#main-row",
                                    "#tour-buttons .tour-buttons", "#embed-plot", ":scope > #", "textarea, input"]


def test_what_a_script_and_a_module_set_is_read_from_each_way_of_setting_it():
    script = """
    host.className = "chart-host";
    row.classList.add('in-class'); zone.classList.toggle("dragging", on);
    ring.setAttribute("class", "plane-ring big"); box.id = "class-banner";
    Object.assign(document.createElement("div"), { className: "ring", hidden: true });
    box.innerHTML = `<p class="poll-word ${extra}" id="poll-own">${word}</p>`;
    """
    assert set_in_script(script) == {("class", "chart-host"), ("class", "in-class"), ("class", "dragging"),
                                     ("class", "plane-ring"), ("class", "big"), ("id", "class-banner"),
                                     ("class", "poll-word"), ("id", "poll-own"), ("class", "ring")}
    module = '''
import gradio as gr
UPLOAD = '<div class="upload-zone"><input id="upload-file"></div>'
def layout(page, on):
    gr.Row(elem_id="main-row", elem_classes=["on-tour"] if on else [])
    gr.HTML(f'<span class="value {on}">', elem_classes="chart")
    gr.HTML(js_on_load="element.querySelector('.x').classList.add('lit')")
def chart(elem_id):
    return gr.HTML("", elem_id=elem_id)
plot = chart("loss-plot")
'''
    assert id_helpers(module) == {"chart"}
    assert set_in_python(module, frozenset({"chart"})) == {
        ("class", "upload-zone"), ("id", "upload-file"), ("id", "main-row"), ("class", "on-tour"),
        ("class", "value"), ("class", "chart"), ("class", "lit"), ("id", "loss-plot")}


def test_plotlys_classes_are_read_from_its_script_and_are_not_gradios():
    classes = plotly_classes()
    assert {"js-plotly-plot", "plotly", "plot-container", "svg-container", "main-svg", "modebar",
            "modebar-container", "modebar-btn", "nsewdrag", "hoverlayer", "hovertext"} <= classes
    assert not {"gradio-container", "block", "html-container", "label-wrap", "icon-button", "download-link",
                "cm-editor", "cm-line", "empty", "unpadded_box"} & classes


@pytest.mark.parametrize("rule", [
    ".gradio-container button { min-height: 24px; }",
    "#tour-buttons .html-container { padding: 0; }",
    "#main-row:has(#tab-tour-button[aria-selected='true']) #main-column { order: 1; }",
    "#code-view .cm-editor .cm-line span { color: black; }",
    "@media (max-width: 600px) { .block.chart { display: none; } }",
])
def test_a_rule_on_gradios_own_dom_is_found(rule):
    used: dict = {}
    for selector in css_selectors(rule):
        for name in names_in(selector):
            used.setdefault(name, []).append(selector)
    assert used and strangers(used, set_by_app())


def test_a_lookup_of_gradios_own_dom_is_found():
    code = 'const b = document.querySelector("#search-panel > button.label-wrap");'
    used = {name: [selector] for selector in script_lookups(code) for name in names_in(selector)}
    assert strangers(used, set_by_app()) == {("class", "label-wrap"): ["#search-panel > button.label-wrap"]}
