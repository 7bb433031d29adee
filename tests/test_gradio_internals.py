"""gradio's private parts the app relies on, pinned: each exists with the shape relied on, the
installed gradio is one they were checked against, and no module but `ui/gradiointernals.py`
reaches past gradio's public API.

A gradio release can rename or reshape any of these without notice; these tests say which part
moved, in a sentence, before the queue's fairness or an upload's check breaks silently. The
scan reads the app's code (not its comments or docstrings) for the private names below and for
any import of a gradio submodule.
"""

from __future__ import annotations

import ast
import asyncio
import collections
import inspect
import io
import re
import tokenize
from pathlib import Path

import gradio as gr
import pytest

from ui import gradiointernals as internals

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("ui", "core", "bench", "deploy", "app.py")  # the app's code, its benchmarks and deployment
HOME = ROOT / "ui" / "gradiointernals.py"  # the one module allowed past the public API

# how a private reach is spelt in code; each is a part `ui/gradiointernals.py` names
PRIVATE = re.compile(r"""
    \b(?:from|import)\s+gradio(?:_client)?\.\w        # any gradio (or gradio_client) submodule
  | \bgr(?:adio)?\.(?!themes\b)[a-z_]\w*\.            # a submodule reached as an attribute (gr.components.…)
  | \bgr(?:adio)?\.__file__                           # gradio's installed files (its frontend bundle)
  | \b(?:_Keywords|FINISHED_ITERATING|convert_component_dict_to_list|FnIndexInferError|get_upload_folder
       |upload_file_set|get_blocks|is_file_obj_with_meta|GradioModel|GradioRootModel|BlockContext|PlotData
       |DataframeData|SessionState|state_holder|is_template|pending_messages_per_session
       |event_queue_per_concurrency_id|event_ids_to_events|create_event_queue_for_fn|broadcast_estimations
       |send_message|preprocess_data|postprocess_data|total_runtime|total_runs|PredictBody\w*)\b
  | \._queue\b | \._id\b | \.fns\b | \.concurrency_id\b  # Blocks' queue and functions, an event function's id
  | \.blocks\.(?:values|items|keys)\b                 # Blocks' table of every block
  | \.children\b(?!\s*\() | ["']children["']          # a layout block's children (not psutil's children())
""", re.VERBOSE)


def code_lines(source: str) -> list[tuple[int, str]]:
    """`source`'s lines as code: comments and docstrings blanked, other strings kept (a string
    can hold code run elsewhere, or an attribute name for getattr)."""
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            docstrings.update(range(body[0].lineno, body[0].end_lineno + 1))
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    return [(number, "" if number in docstrings else line) for number, line in enumerate(lines, 1)]


def reaches(source: str) -> list[tuple[int, str]]:
    """Each line of `source` whose code reaches past gradio's public API, with the name it uses."""
    return [(number, f"{found.group(0).strip()!r} in {line.strip()}") for number, line in code_lines(source)
            for found in [PRIVATE.search(line)] if found]


def scanned_files() -> list[Path]:
    files = []
    for name in SCANNED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [path for path in files if path != HOME]


# --- (c) no private name outside the one module ------------------------------------------------

def test_no_module_but_gradiointernals_reaches_past_gradios_public_api():
    found = [f"{path.relative_to(ROOT)}:{number}: {name}" for path in scanned_files()
             for number, name in reaches(path.read_text(encoding="utf-8"))]
    assert not found, ("gradio's private parts are used outside ui/gradiointernals.py; name them there (with what "
                       "they rely on, and a check in this file) and call that instead:\n" + "\n".join(found))


def test_the_scan_finds_each_kind_of_reach_and_not_comments_or_public_names():
    caught = '''
from gradio.blocks import Block
import gradio.utils
x = gr.components.Component
y = blocks._queue.push
z = demo.fns.values()
for b in app.demo.blocks.values(): pass
kids = getattr(block, "children", ())
event.fn._id
Path(gradio.__file__)
cls.is_template = True
'''
    assert [number for number, _ in reaches(caught)] == list(range(2, 12))
    public = '''
"""A docstring may name `_queue`, `upload_file_set` and gradio.blocks.Block."""
import gradio as gr  # a comment may too: demo.fns, BlockContext
from gradio_client import Client, handle_file
theme = gr.themes.Soft()
button.click(f, None, out, concurrency_id="live", api_name="embed")
for child in process.children(recursive=True): pass
'''
    assert reaches(public) == []


def test_the_scan_reads_every_scanned_module_and_this_module_uses_each_pattern():
    files = scanned_files()
    assert ROOT / "ui" / "admission.py" in files and ROOT / "app.py" in files and HOME not in files
    assert len(reaches(HOME.read_text(encoding="utf-8"))) >= 15  # the names live here, and only here


# --- (b) the gradio version --------------------------------------------------------------------

def test_the_installed_gradio_is_one_the_internals_were_checked_against():
    assert internals.unchecked() is None, internals.unchecked()


def test_an_unchecked_gradio_version_is_named_in_a_sentence():
    said = internals.unchecked("6.32.0")
    assert said is not None and "6.32.0" in said and "6.31.0" in said and "CHECKED" in said
    assert internals.unchecked(internals.CHECKED[0]) is None


# --- (a) each private part, with the shape relied on -------------------------------------------

def parameters(function) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


@pytest.fixture(scope="module")
def demo():
    import app

    return app.demo


def test_the_queue_of_a_blocks_and_its_hooks(demo):
    from gradio.queueing import Queue

    queue = internals.Queue(demo)
    assert isinstance(queue.queue, Queue)  # Blocks._queue, made by Blocks.queue()
    assert inspect.iscoroutinefunction(Queue.push) and parameters(Queue.push) == ["body", "request", "username"]
    assert parameters(Queue.send_message) == ["event", "event_message"]
    assert parameters(Queue.create_event_queue_for_fn) == ["block_fn"]
    assert parameters(Queue.broadcast_estimations) == ["concurrency_id", "after"]
    for name in ("pending_messages_per_session", "event_queue_per_concurrency_id", "event_ids_to_events"):
        assert isinstance(getattr(queue.queue, name), dict), name
    # admission stands in front of both (ui.admission.Admission.attach): what gradio calls is ours
    admission = demo.admission
    assert queue.queue.push == admission.push and queue.queue.send_message == admission.send


def test_the_queue_treats_a_line_as_a_list_it_appends_to_reads_and_removes_from(demo):
    """`FairLine` keeps its order by overriding `append` and `remove`: gradio must not add to a
    line or take from it any other way."""
    import gradio.queueing as queueing

    source = inspect.getsource(queueing)
    assert set(re.findall(r"\.queue\.(\w+)\(", source)) == {"append", "remove"}
    assert re.findall(r"\.queue\s*(?::[^=\n]*)?=[^=]", source) == [".queue: list[Event] = "]  # made once, a list
    line = queueing.EventQueue("group", 1)
    assert line.queue == [] and type(line.queue) is list
    queue = internals.Queue(demo)
    queue.open_line(next(fn for fn in demo.fns.values() if fn.api_name == "embed"))
    lines = queue.lines(list)
    assert "live" in lines and all(isinstance(each, list) for each in lines.values())


def test_a_waiting_call_and_its_function(demo):
    from gradio.queueing import Event

    queue = internals.Queue(demo)
    index, fn = next((i, fn) for i, fn in demo.fns.items() if fn.api_name == "embed")
    assert queue.function(index) is fn and queue.function(None) is None and queue.function(10**6) is None
    assert internals.function_group(fn) == "live" and internals.takes_inputs(fn)
    assert parameters(Event) == ["session_hash", "fn", "request", "username"]
    event, other = Event("tab-1", fn, None, None), Event("tab-2", fn, None, None)
    assert internals.event_tab(event) == "tab-1" and internals.event_function(event) is fn
    assert internals.event_request(event) is None and internals.event_inputs(event) is None
    assert internals.same_function(internals.event_function(event), internals.event_function(other))
    assert isinstance(event._id, str) and isinstance(fn._id, int)
    queue.open_line(fn)
    assert "live" in queue.queue.event_queue_per_concurrency_id
    assert queue.event("no such event") is None


def test_a_joining_calls_body_and_a_message_to_its_tab():
    from gradio.data_classes import PredictBodyInternal
    from gradio.server_messages import ProcessCompletedMessage

    body = PredictBodyInternal(data=["a", "b"], fn_index=3, session_hash="tab", event_data=None)
    assert internals.joining(body) == (3, "tab", ["a", "b"])
    message = ProcessCompletedMessage(output={"data": ["x"]}, success=True)
    assert internals.message_output(message) == {"data": ["x"]}
    internals.fail_message(message, "let go")
    assert message.output == {"error": "let go"} and message.success is False


def test_a_tabs_unsent_messages_are_read_without_taking_them(demo):
    queue = internals.Queue(demo)
    waiting = asyncio.Queue()
    assert isinstance(waiting._queue, collections.deque)  # what `unsent` reads
    message = object()
    waiting.put_nowait(message)
    queue.queue.pending_messages_per_session["pinned-tab"] = waiting
    try:
        assert queue.keeps("pinned-tab") and queue.unsent("pinned-tab") == {id(message)}
        assert waiting.qsize() == 1  # still there
    finally:
        del queue.queue.pending_messages_per_session["pinned-tab"]
    assert not queue.keeps("pinned-tab") and queue.unsent("pinned-tab") == set()


def test_the_event_paths_two_steps_and_their_markers():
    from gradio.components.base import _Keywords

    assert inspect.iscoroutinefunction(gr.Blocks.preprocess_data)
    assert parameters(gr.Blocks.preprocess_data) == ["block_fn", "inputs", "state", "explicit_call"]
    assert inspect.iscoroutinefunction(gr.Blocks.postprocess_data)
    assert parameters(gr.Blocks.postprocess_data) == ["block_fn", "predictions", "state"]
    # gradio writes nothing to an output given this marker (what `Blocks.postprocess_data` passes it)
    assert internals.FINISHED_ITERATING is _Keywords.FINISHED_ITERATING
    assert "_Keywords.FINISHED_ITERATING" in inspect.getsource(gr.Blocks.postprocess_data)
    with gr.Blocks():
        one, two = gr.Textbox(), gr.Textbox()
    from gradio.blocks import convert_component_dict_to_list

    assert convert_component_dict_to_list([one, two], {two: "b"}) == [gr.skip(), "b"]
    assert issubclass(internals.UnknownEndpoint, Exception)


def test_the_blocks_function_counters(demo):
    fn = next(fn for fn in demo.fns.values() if fn.api_name == "embed")
    runtime, runs = internals.handler_timing(demo, fn.fn)
    assert isinstance(runtime, int | float) and isinstance(runs, int)


def test_uploads_folder_paths_and_file_data(demo):
    from gradio.routes import App

    assert isinstance(internals.upload_folder(), Path)
    assert isinstance(internals.upload_paths(demo), set)
    assert parameters(App.get_blocks) == []
    assert internals.is_file_data({"path": "/tmp/x", "meta": {"_type": "gradio.FileData"}})
    assert not internals.is_file_data({"path": "/etc/passwd"}) and not internals.is_file_data("/etc/passwd")


def test_layout_blocks_and_their_children(demo):
    with gr.Blocks() as small, gr.Row() as row:
        box = gr.Markdown("a")  # not a form field: gradio puts those in a Form of their own
        with gr.Accordion("inside", open=False) as accordion:
            inner = gr.Markdown("x")
    assert internals.children(row) == [box, accordion] and internals.children(accordion) == [inner]
    assert internals.children(box) == []
    assert internals.is_layout(row) and internals.is_layout(accordion) and not internals.is_layout(box)
    assert set(internals.components_of(small)) == {box, inner}
    assert len(internals.components_of(demo)) > 50


def test_values_in_the_form_the_browser_reads():
    plot = internals.plot_value('{"data": []}')
    assert plot.model_dump() == {"type": "plotly", "plot": '{"data": []}'}
    table = internals.table_value(["a", "b"], [[1, 2]])
    assert table.model_dump()["headers"] == ["a", "b"] and table.model_dump()["data"] == [[1, 2]]
    assert internals.plotly_bundle().startswith("PlotlyPlot-") and internals.plotly_bundle().endswith(".js")


def test_the_frontend_keeps_the_page_s_session_where_the_page_s_opening_reads_it():
    from pathlib import Path

    assert internals.frontend_keeps_session()
    script = (Path(__file__).resolve().parents[1] / "assets" / "explorer.js").read_text()
    assert f"session: {internals.SESSION_JS}" in script


def test_a_stock_frontend_subclass_is_drawn_by_its_parents_code():
    @internals.stock_frontend
    class Quiet(gr.Slider):
        pass

    class Own(gr.Slider):
        pass

    with gr.Blocks():
        assert Quiet().get_block_name() == "slider" and Own().get_block_name() == "own"


def test_outputs_an_event_leaves_as_they_are_build_no_component(monkeypatch):
    """A training's curve writes 2 of its event's 61 outputs; gradio would build each of the
    other 59 components anew (config and API schema) on the event loop."""
    import gradio as gr
    from gradio.components import Component
    from gradio.state_holder import SessionState

    import app
    from tests.appapi import run_async

    train = next(fn for fn in app.demo.fns.values() if fn.api_name == "train")
    page = app.demo.explorer
    built: list[str] = []
    init = Component.__init__

    def counted(self, *args, **kwargs):
        built.append(type(self).__name__)
        init(self, *args, **kwargs)

    monkeypatch.setattr(Component, "__init__", counted)
    state = SessionState(app.demo)
    sent = run_async(lambda: app.demo.postprocess_data(train, {page.trained: "Training… step 3 of 9."}, state))
    assert built == []
    assert sent[list(train.outputs).index(page.trained)] == "Training… step 3 of 9."
    assert sum(value == gr.skip() for value in sent) == len(train.outputs) - 1
    # gradio's own does build them: what this saves
    run_async(lambda: gr.Blocks.postprocess_data(app.demo, train, {page.trained: "Training… step 3 of 9."}, state))
    assert len(built) == sum(isinstance(block, Component) for block in train.outputs if block is not page.trained)
