"""The app uses gradio through its public API only: what a gradio release documents and keeps.

A private part of gradio (a submodule, an attribute with a leading underscore, its queue's
tables) can be renamed or reshaped in any release without notice, and the app breaks silently
where it relied on it. So no module of the app, its benchmarks or its deployment (`SCANNED`)
may reach past gradio's public API, in any of four ways:

* import a gradio submodule (`from gradio.blocks import …`, `import gradio.utils`,
  `gradio_client.utils`), or name one by its dotted name for `importlib`;
* use a name of gradio or gradio_client that is not public: not in `gradio.__all__` (or
  `gradio_client.__all__`), nor one of the functions and classes `dir(gradio)` shows at the top
  level (`gr.api`), nor the documented `gr.themes` (`gr.blocks.Block`, `gr.__file__`);
* read or write a private attribute (`._name`) of a gradio object: the module, a component,
  a layout, a request, the Blocks (`demo`), including through getattr, setattr or hasattr;
* use one of gradio's private parts by name: its queue's and event path's tables and steps,
  which the app once reached (`PRIVATE_NAMES`), however they are spelt.

The scan reads the code as Python (`ast`): comments and docstrings are free to name anything.
It is tested on snippets of each kind, so a scan that found nothing because it looked at
nothing fails too.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass
from pathlib import Path

import gradio
import gradio_client
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("ui", "core", "bench", "deploy", "app.py")  # the app's code, its benchmarks and its deployment

MODULES = {"gradio": "gradio", "gradio_client": "gradio_client"}


def public_names(module: types.ModuleType) -> frozenset[str]:
    """The names a package offers: its `__all__`, and the functions and classes at its top level
    (`gr.api` is documented but missing from `__all__`), never its submodules."""
    top = {name for name in dir(module) if not name.startswith("_")
           and not isinstance(getattr(module, name), types.ModuleType)}
    return frozenset(getattr(module, "__all__", ())) | top


PUBLIC = {
    "gradio": public_names(gradio) | {"themes"},  # gr.themes.Soft(…): the one documented subpackage
    "gradio_client": public_names(gradio_client),
}

# gradio's private parts the app once relied on (its queue's hooks, the event path's two steps,
# uploads' bookkeeping, the block tree): each named here is private whatever object holds it
PRIVATE_NAMES = frozenset({
    "_Keywords", "FINISHED_ITERATING", "convert_component_dict_to_list", "FnIndexInferError", "get_upload_folder",
    "upload_file_set", "get_blocks", "is_file_obj_with_meta", "GradioModel", "GradioRootModel", "BlockContext",
    "PlotData", "DataframeData", "SessionState", "state_holder", "is_template", "pending_messages_per_session",
    "event_queue_per_concurrency_id", "event_ids_to_events", "create_event_queue_for_fn", "broadcast_estimations",
    "send_message", "preprocess_data", "postprocess_data", "total_runtime", "total_runs", "PredictBody",
    "PredictBodyInternal", "_queue", "_id", "fns", "concurrency_id", "children",
})
BLOCK_TABLES = frozenset({"values", "items", "keys"})  # Blocks.blocks, the table of every block, read whole
GRADIO_OBJECTS = frozenset({"demo", "blocks"})  # names and attributes that hold the page's Blocks
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "hasattr", "delattr"})


def page_components() -> frozenset[str]:
    """The attributes of `ui.page.Page` that hold gradio components (`page.plot`), read from its annotations."""
    from ui.page import Page

    return frozenset(name for name, kind in Page.__annotations__.items()
                     if isinstance(kind, str) and kind.split("[")[0].startswith(("gr.", "dict")) and "gr." in kind)


@dataclass(frozen=True)
class Reach:
    """One place where code reaches past gradio's public API."""

    line: int
    kind: str  # "submodule", "name", "private attribute", "private part"
    what: str

    def __str__(self) -> str:
        return f"{self.line}: {self.kind} {self.what}"


class Scan(ast.NodeVisitor):
    """The reaches in one module's code (see the module's docstring)."""

    def __init__(self, components: frozenset[str] = frozenset()) -> None:
        self.components = components
        self.found: list[Reach] = []
        self.aliases: dict[str, str] = {}  # a local name -> the package it is ("gr" -> "gradio")
        self.typed: set[str] = set()  # local names holding a gradio object
        self.called: set[int] = set()  # ids of Attribute nodes that are called (`process.children()`)
        self.docstrings: set[int] = set()

    def reach(self, node: ast.AST, kind: str, what: str) -> None:
        self.found.append(Reach(node.lineno, kind, what))

    def scan(self, source: str) -> list[Reach]:
        tree = ast.parse(source)
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                self.docstrings.add(id(body[0].value))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                self.called.add(id(node.func))
        self.visit(tree)
        return sorted(self.found, key=lambda reach: reach.line)

    # --- what a name holds ---------------------------------------------------------------------------

    def package(self, node: ast.AST) -> str | None:
        """The gradio package `node` names (`gr`, `gradio`), if it names one."""
        return self.aliases.get(node.id) if isinstance(node, ast.Name) else None

    def gradio_object(self, node: ast.AST) -> bool:
        """Whether `node` holds a gradio object: the package, anything reached from it or made by
        it, a name given one, the page's Blocks, or a component of the page (`page.plot`)."""
        if self.package(node) is not None:
            return True
        if isinstance(node, ast.Name):
            return node.id in self.typed or node.id in GRADIO_OBJECTS
        if isinstance(node, ast.Call):
            return self.gradio_object(node.func)
        if isinstance(node, ast.Subscript):
            return self.gradio_object(node.value)
        if isinstance(node, ast.Attribute):
            if node.attr in GRADIO_OBJECTS:
                return True
            holder = node.value
            if node.attr in self.components and (
                    (isinstance(holder, ast.Name) and holder.id == "page")
                    or (isinstance(holder, ast.Attribute) and holder.attr == "page")):
                return True
            return self.gradio_object(holder)
        return False

    def annotated(self, annotation: ast.AST | None) -> bool:
        if annotation is None:
            return False
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return False
        return any(self.package(node) is not None for node in ast.walk(annotation))

    # --- the four kinds -----------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            root, _, rest = alias.name.partition(".")
            if root in MODULES:
                if rest:
                    self.reach(node, "submodule", f"import {alias.name}")
                else:
                    self.aliases[alias.asname or root] = root

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        root, _, rest = (node.module or "").partition(".")
        if node.level or root not in MODULES:
            return
        if rest:
            self.reach(node, "submodule", f"from {node.module} import …")
            return
        for alias in node.names:
            if alias.name not in PUBLIC[root]:
                self.reach(node, "name", f"{root}.{alias.name}")
            elif alias.name in PRIVATE_NAMES:
                self.reach(node, "private part", alias.name)
            else:
                self.typed.add(alias.asname or alias.name)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        package = self.package(node.value)
        if package is not None and node.attr not in PUBLIC[package]:
            self.reach(node, "name", f"{node.value.id}.{node.attr}")
        elif self.private(node.attr) and self.gradio_object(node.value):
            self.reach(node, "private attribute", f"._{node.attr.lstrip('_')} of a gradio object")
        elif node.attr in PRIVATE_NAMES and not (node.attr == "children" and id(node) in self.called):
            self.reach(node, "private part", node.attr)
        elif node.attr in BLOCK_TABLES and isinstance(node.value, ast.Attribute) and node.value.attr == "blocks":
            self.reach(node, "private part", f"blocks.{node.attr}")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in PRIVATE_NAMES:
            self.reach(node, "private part", node.id)

    def visit_Call(self, node: ast.Call) -> None:
        function = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        named = node.args[1] if len(node.args) > 1 else None
        if function in ATTRIBUTE_FUNCTIONS and isinstance(named, ast.Constant) and isinstance(named.value, str) \
                and self.private(named.value) and self.gradio_object(node.args[0]):
            self.reach(node, "private attribute", f"{function}(…, {named.value!r}) of a gradio object")
        if function in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and node.args[0].value.partition(".")[0] in MODULES \
                and "." in node.args[0].value:
            self.reach(node, "submodule", f"{function}({node.args[0].value!r})")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # an attribute named for getattr, or a layout's children read off its config
        if isinstance(node.value, str) and id(node) not in self.docstrings and node.value in PRIVATE_NAMES:
            self.reach(node, "private part", repr(node.value))

    # --- names that come to hold gradio objects -----------------------------------------------------

    def visit_Assign(self, node: ast.Assign) -> None:
        if self.gradio_object(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.typed.add(target.id)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and (self.annotated(node.annotation)
                                                  or (node.value is not None and self.gradio_object(node.value))):
            self.typed.add(node.target.id)
        self.generic_visit(node)

    def visit_withitem(self, node: ast.withitem) -> None:
        if isinstance(node.optional_vars, ast.Name) and self.gradio_object(node.context_expr):
            self.typed.add(node.optional_vars.id)
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        if self.annotated(node.annotation):
            self.typed.add(node.arg)

    @staticmethod
    def private(name: str) -> bool:
        return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def reaches(source: str, components: frozenset[str] = frozenset()) -> list[Reach]:
    """Each place in `source` that reaches past gradio's public API."""
    return Scan(components).scan(source)


def scanned_files() -> list[Path]:
    files = []
    for name in SCANNED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


# --- the app -----------------------------------------------------------------------------------------


def test_no_module_of_the_app_reaches_past_gradios_public_api():
    components = page_components()
    found = [f"{path.relative_to(ROOT)}:{reach}" for path in scanned_files()
             for reach in reaches(path.read_text(encoding="utf-8"), components)]
    assert not found, ("these lines use gradio past its public API (a submodule, a name it does not export, a "
                       "private attribute or part); use what gradio documents instead:\n" + "\n".join(found))


def test_the_scan_reads_every_module_of_the_app_its_benchmarks_and_its_deployment():
    files = scanned_files()
    for expected in ("app.py", "ui/page.py", "ui/route.py", "ui/admission.py", "ui/api.py", "core/serving/tabs.py",
                     "deploy/serve.py"):
        assert ROOT / expected in files, expected
    assert any(path.parent == ROOT / "bench" for path in files)
    # the page's components are known by their annotations, so `page.plot._x` is seen as gradio's
    assert {"plot", "sentence_a", "notice", "controls", "freezes"} <= page_components()


def test_the_public_names_are_gradios_own_and_hold_what_the_app_uses():
    for name in ("Blocks", "Textbox", "HTML", "Request", "Error", "on", "skip", "api", "themes", "update"):
        assert name in PUBLIC["gradio"], name
    assert {"Client", "handle_file"} <= PUBLIC["gradio_client"]
    for name in ("blocks", "queueing", "routes", "utils", "components", "data_classes", "state_holder"):
        assert name not in PUBLIC["gradio"], name  # submodules, not the API


# --- the scan, on snippets of each kind ---------------------------------------------------------------


def kinds(source: str, components: frozenset[str] = frozenset()) -> list[tuple[int, str]]:
    return [(reach.line, reach.kind) for reach in reaches(source, components)]


def test_the_scan_finds_an_import_of_a_gradio_submodule():
    source = """
from gradio.blocks import Block
import gradio.utils
from gradio_client.utils import encode_url_or_file_to_base64
import gradio_client.documentation as docs
importlib.import_module("gradio.queueing")
"""
    assert kinds(source) == [(2, "submodule"), (3, "submodule"), (4, "submodule"), (5, "submodule"),
                             (6, "submodule")]


def test_the_scan_finds_a_gradio_name_that_is_not_public():
    source = """
import gradio as gr
import gradio
from gradio import Blocks, BlockContext
from gradio_client import Client, utils
x = gr.components.Component
bundle = Path(gradio.__file__)
queue = gr.queueing.Queue
"""
    found = reaches(source)
    assert [(reach.line, reach.kind) for reach in found] == [(4, "name"), (5, "name"), (6, "name"), (7, "name"),
                                                             (8, "name")]
    assert [reach.what for reach in found] == ["gradio.BlockContext", "gradio_client.utils", "gr.components",
                                               "gradio.__file__", "gr.queueing"]


def test_the_scan_finds_a_private_attribute_of_a_gradio_object():
    source = """
import gradio as gr
demo.launch_ok = gr.Blocks()._is_running
with gr.Blocks() as page_blocks:
    box = gr.Textbox()
box._selectable = True
page_blocks._config
def handler(value, request: gr.Request):
    return request._request
def drawn(page):
    return page.plot._elem_classes
x = app.demo._state
getattr(box, "_value", None)
setattr(page.notice, "_label", "x")
"""
    assert kinds(source, frozenset({"plot", "notice"})) == [
        (3, "private attribute"), (6, "private attribute"), (7, "private attribute"), (9, "private attribute"),
        (11, "private attribute"), (12, "private attribute"), (13, "private attribute"), (14, "private attribute")]


def test_the_scan_finds_gradios_private_parts_by_name_on_any_object():
    source = """
y = blocks._queue.push
z = app.fns.values()
for block in self.demo.blocks.values(): pass
kids = getattr(block, "children", ())
event.fn._id
cls.is_template = True
holder = server.state_holder
for child in layout.children: pass
FINISHED_ITERATING
"""
    found = kinds(source)
    # each line is found, some by more than one rule (blocks._queue is a private attribute of the Blocks too)
    assert sorted({line for line, _ in found}) == list(range(2, 11)), found
    assert all(kind in ("private part", "private attribute") for _, kind in found)


def test_the_scan_leaves_comments_docstrings_the_apps_own_privates_and_public_names_alone():
    source = '''
"""A docstring may name `_queue`, `upload_file_set`, gradio.blocks.Block and demo.fns."""
import gradio as gr  # a comment may too: demo.fns, BlockContext, from gradio.blocks import Block
from gradio_client import Client, handle_file
theme = gr.themes.Soft()
button.click(f, None, out, concurrency_id="live", api_name="embed")
gr.api(view, api_name="view", concurrency_limit=16, concurrency_id="api")
for child in process.children(recursive=True): pass
class Line:
    """Its own privates are the app's."""
    def __init__(self):
        self._line, self._lock = [], None
    def waiting(self):
        return list(self._line)
value = component.postprocess(value)
slots = type(self.page).__slots__
gr.on([box.change], None, js="() => 1", queue=False)
gr.skip(); gr.update(value=1); gr.Error("a sentence")
'''
    assert reaches(source, frozenset({"plot"})) == []


@pytest.mark.parametrize("snippet", ["import gradio.utils", "from gradio.routes import App",
                                     "import gradio as gr\ngr.utils.get_space()", "demo._queue"])
def test_a_reach_is_said_with_its_line_and_what_it_uses(snippet):
    (reach, *_) = reaches(snippet)
    said = str(reach)
    assert said.startswith(f"{reach.line}: ") and reach.kind in said and reach.what in said
