"""The shape the README's architecture section promises, read from the source itself.

Imports are read with `ast` from every module of the app, the benchmarks and the deployment,
including those inside functions and under `TYPE_CHECKING`: a deferred import is still a circle
for the reader who must hold both modules in mind at once.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# core's packages, each importing only those before it (README, Architecture)
LAYERS = ("view", "model", "process", "tables", "plane", "drawing", "serving")
# documented addresses kept stable outside the packages (DESIGN's contracts), and the package each stands in
ADDRESSES = {"core.embedding": "model"}


def layer(module: str) -> int:
    return LAYERS.index(ADDRESSES.get(module, module.split(".")[1]))


def modules() -> dict[str, Path]:
    found = {"app": ROOT / "app.py"}
    for folder in ("core", "ui", "bench", "deploy"):
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The project's modules `path` imports, anywhere in it."""
    named = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            named.update(f"{node.module}.{alias.name}" for alias in node.names)
            named.add(node.module)
    found = set()
    for name in named:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, known) - {name} for name, path in known.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_itself_through_others():
    assert circles(graph()) == []


def test_the_circle_finder_finds_a_circle_however_deep():
    """The check above would pass on a finder that finds nothing: here it must find one."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_core_s_packages_each_import_only_those_before_them():
    edges = graph()
    wrong = []
    for name, imported in edges.items():
        if not name.startswith("core."):
            continue
        wrong += [f"{name} imports {other}" for other in imported
                  if other.startswith("core.") and layer(other) > layer(name)]
        wrong += [f"{name} imports {other}" for other in imported if other.split(".")[0] in ("ui", "app", "bench")]
    assert wrong == []
    loose = {f"core.{path.stem}" for path in (ROOT / "core").iterdir() if path.suffix == ".py"}
    assert loose == {"core.__init__", *ADDRESSES}, "every core module belongs to a package (but a documented address)"
    assert {path.name for path in (ROOT / "core").iterdir() if path.is_dir() and path.name != "__pycache__"} \
        == set(LAYERS)


def test_core_never_imports_gradio_or_the_web_server():
    for path in (ROOT / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(name.split(".")[0] in ("gradio", "starlette", "uvicorn") for name in names), path


def test_the_documented_addresses_still_answer():
    """DESIGN's contracts: the layer and the checkpoint loader keep the names scripts import them by."""
    from core.embedding import BertEmbedding
    from core.model.embedding import BertEmbedding as Layer
    from core.tables import load_bert_embedding

    assert BertEmbedding is Layer and callable(load_bert_embedding)
    layer_ = BertEmbedding(vocab_size=10, d_model=2, maxlen=512, n_segments=2)
    assert {"tok_embed", "pos_embed", "seg_embed", "norm"} <= set(dict(layer_.named_children()))


def test_every_module_says_what_and_why_in_at_most_fifteen_lines():
    """A module's docstring is its one-paragraph map; design detail belongs with the class or
    function it is about, and measured figures in the README."""
    long = {name: lines for name, path in modules().items()
            if (lines := len((ast.get_docstring(ast.parse(path.read_text()), clean=False) or "").strip().splitlines()))
            > 15}
    assert long == {}
