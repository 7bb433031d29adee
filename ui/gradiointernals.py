"""Every use of gradio past its documented API, in one module: what each relies on and why.

Gradio's public API (components, events, `launch` and `queue` options, `gr.skip`, `gr.Request`)
builds and serves the page. A few needs it has no public way for: a bounded queue served in
fair turns (`ui.admission`), outputs an event leaves as they are not built anew (`Blocks`), a
sentence for an unknown endpoint, uploads swept minutes after they came (`ui.rawfiles`), a
tab's components loaded when it opens (`ui.ondemand`), figures and tables sent in the form the
browser reads (`plot_value`, `table_value`), and the plotly.js bundle gradio ships
(`plotly_bundle`). Each function names the private part it reads.

`CHECKED` lists the gradio versions these were read against, and `requirements.txt` pins one
of them. `tests/test_gradio_internals.py` checks each part's shape on the installed gradio, fails
on a version not listed, and fails when another module of the app reaches past the public API.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr
from gradio.blocks import Block, BlockContext, convert_component_dict_to_list
from gradio.components.base import _Keywords
from gradio.components.dataframe import DataframeData
from gradio.components.plot import PlotData
from gradio.route_utils import FnIndexInferError
from gradio.utils import get_upload_folder
from gradio_client.utils import is_file_obj_with_meta

CHECKED = ("6.31.0",)  # gradio versions whose internals this module was read against


def unchecked(version: str | None = None) -> str | None:
    """A sentence saying gradio `version` (default: the installed one) was not checked against
    this module; None when it was."""
    version = gr.__version__ if version is None else version
    if version in CHECKED:
        return None
    return (f"gradio {version} is installed, but ui/gradiointernals.py was checked only against gradio "
            f"{', '.join(CHECKED)}: read each private part it names in the new version, then add it to CHECKED.")


# --- gradio's queue (ui.admission) -----------------------------------------------------------

class Queue:
    """The queue of one Blocks (`Blocks._queue`, made by `Blocks.queue()`), as admission uses it.

    Gradio's queue has no public hook before a call is registered, no bound per visitor and no
    order but first come; admission stands in front of its `push` and `send_message` and orders
    its lines. Each method names the attribute of `gradio.queueing.Queue` it reads."""

    def __init__(self, blocks: gr.Blocks) -> None:
        self.blocks = blocks
        self.queue = blocks._queue

    def intercept(self, push, send):
        """Put `push` (async, `(body, request, username)`) and `send` (`(event, message)`) in place
        of the queue's `push` and `send_message`; returns gradio's own two. Relies on every call
        that joins the queue (`/queue/join`, `/call/{api_name}`) going through `Queue.push`, and
        every message to a tab through `Queue.send_message`."""
        own = self.queue.push, self.queue.send_message
        self.queue.push, self.queue.send_message = push, send
        return own

    def lines(self, kind: type[list]) -> dict[str, list]:
        """Every concurrency group's waiting calls by group, each made a `kind` (a list) the first
        time it is seen. Relies on `event_queue_per_concurrency_id[group].queue` being a list that
        gradio appends new calls to, reads from the head of (`[0]`, iteration) and `remove`s from."""
        found = {}
        for group, event_queue in self.queue.event_queue_per_concurrency_id.items():
            if not isinstance(event_queue.queue, kind):
                event_queue.queue = kind(event_queue.queue)
            found[group] = event_queue.queue
        return found

    def function(self, fn_index: int | None):
        """The event function numbered `fn_index` (`Blocks.fns`), or None."""
        return None if fn_index is None else self.blocks.fns.get(fn_index)

    def open_line(self, fn) -> None:
        """Make the line of `fn`'s group if gradio has not yet (`create_event_queue_for_fn`, which
        `push` calls too), so it is made fair before the call joins it."""
        self.queue.create_event_queue_for_fn(fn)

    def event(self, event_id: str):
        """The waiting call `push` answered with `event_id` (`event_ids_to_events`), or None."""
        return self.queue.event_ids_to_events.get(event_id)

    def tell_places(self, group: str, after: int) -> None:
        """Send each call of `group`'s line from place `after` on its place and estimated wait
        (`broadcast_estimations`)."""
        self.queue.broadcast_estimations(group, after)

    def keeps(self, tab: str) -> bool:
        """Whether gradio still keeps messages for `tab` (`pending_messages_per_session`: a cache of
        the newest tabs; `send_message` raises KeyError for a tab it let go)."""
        return tab in self.queue.pending_messages_per_session

    def unsent(self, tab: str) -> set[int]:
        """The ids of the messages waiting for `tab`'s stream to take them (the asyncio.Queue in
        `pending_messages_per_session`, read through its `_queue` deque without taking any)."""
        pending = self.queue.pending_messages_per_session.get(tab)
        return {id(message) for message in pending._queue} if pending is not None else set()


def joining(body) -> tuple[int | None, str | None, list | None]:
    """A joining call's `(fn_index, session_hash, data)`: the fields of gradio's `PredictBody`."""
    return body.fn_index, body.session_hash, body.data


def event_tab(event) -> str:
    """The session hash of a waiting call (`queueing.Event.session_hash`)."""
    return event.session_hash


def event_request(event):
    """The gr.Request a waiting call came with (`Event.request`), or None."""
    return getattr(event, "request", None)


def event_inputs(event) -> list | None:
    """A waiting call's input values (`Event.data.data`, set by `push`), or None."""
    return getattr(getattr(event, "data", None), "data", None)


def function_group(fn) -> str:
    """An event function's concurrency group (`BlockFunction.concurrency_id`)."""
    return fn.concurrency_id


def event_function(event):
    """The event function a waiting call runs (`Event.fn`)."""
    return event.fn


def takes_inputs(fn) -> bool:
    """Whether an event function has inputs (`BlockFunction.inputs`)."""
    return bool(fn.inputs)


def same_function(one, other) -> bool:
    """Whether two event functions are one (`BlockFunction._id`)."""
    return one._id == other._id


def message_output(message):
    """What a message to a tab carries as the answer (`ProcessCompletedMessage.output`), or None."""
    return getattr(message, "output", None)


def fail_message(message, sentence: str) -> None:
    """Make a message not yet read an error saying `sentence` (its `output` and `success`)."""
    message.output, message.success = {"error": sentence}, False


# --- an event's inputs and outputs (ui.page) ---------------------------------------------------

UnknownEndpoint = FnIndexInferError  # raised by gradio's `/call/{api_name}` for a name the app has not
FINISHED_ITERATING = _Keywords.FINISHED_ITERATING  # an output `postprocess_data` writes nothing to


class Blocks(gr.Blocks):
    """gr.Blocks with two steps of every queued event taken over: `preprocess_data` and
    `postprocess_data`, methods gradio calls with the event's function (`block_fn.inputs`,
    `block_fn.outputs`) and does not document."""

    def check_file(self, value: object) -> None:
        """Raise gr.Error for a file an event names (a gr.File's input as it arrived) that the
        app does not allow; by default every file passes."""

    async def preprocess_data(self, block_fn, inputs, state, explicit_call: bool = False):
        """Gradio's, after `check_file` on each gr.File input."""
        for block, value in zip(block_fn.inputs, inputs, strict=False):
            if isinstance(block, gr.File):
                self.check_file(value)
        return await super().preprocess_data(block_fn, inputs, state, explicit_call)

    async def postprocess_data(self, block_fn, predictions, state):
        """Gradio's, without rebuilding the outputs an event leaves as they are.

        Gradio fills every output a handler's dict leaves out with `gr.skip()`, an update with
        no properties, and builds each such component anew (its config and API schema, on the
        server's event loop). Those outputs are passed to gradio as `FINISHED_ITERATING`, which
        it writes nothing to, and answered `gr.skip()`: the browser leaves them as they are.
        """
        outputs = list(block_fn.outputs)
        if len(outputs) > 1 and isinstance(predictions, dict) and predictions == gr.skip():
            return [gr.skip() for _ in outputs]
        if len(outputs) > 1 and isinstance(predictions, dict) and predictions \
                and all(isinstance(key, Block) for key in predictions):
            predictions = convert_component_dict_to_list(outputs, predictions)
        if len(outputs) <= 1 or not isinstance(predictions, list | tuple):
            return await super().postprocess_data(block_fn, predictions, state)
        unchanged = [i for i, value in enumerate(predictions) if isinstance(value, dict) and value == gr.skip()]
        predictions = [FINISHED_ITERATING if i in unchanged else value for i, value in enumerate(predictions)]
        output = await super().postprocess_data(block_fn, predictions, state)
        for i in unchanged:
            output[i] = gr.skip()
        return output


def handler_timing(blocks: gr.Blocks, fn) -> tuple[float, int]:
    """Seconds spent in the event function that calls `fn`, and its calls (`Blocks.fns`,
    `BlockFunction.total_runtime`, `total_runs`): a benchmark's baseline."""
    found = next(block_fn for block_fn in blocks.fns.values() if block_fn.fn is fn)
    return found.total_runtime, found.total_runs


# --- uploads (ui.rawfiles) ---------------------------------------------------------------------

def upload_folder() -> Path:
    """The folder gradio's upload route stores files in (`gradio.utils.get_upload_folder`)."""
    return Path(get_upload_folder())


def upload_paths(blocks: gr.Blocks) -> set:
    """The paths gradio's upload route stored for `blocks` (`Blocks.upload_file_set`: the set
    it checks an event's file against; the app removes a path when it deletes the file)."""
    return blocks.upload_file_set


def blocks_of(app) -> gr.Blocks:
    """The Blocks a gradio app serves (`scope["app"]` in a middleware: `App.get_blocks`)."""
    return app.get_blocks()


def is_file_data(value: object) -> bool:
    """Whether an input names a file the way gradio's client does (a FileData dict with its
    `meta`; `gradio_client.utils.is_file_obj_with_meta`)."""
    return is_file_obj_with_meta(value)


# --- the page's blocks (ui.ondemand) -----------------------------------------------------------

def children(block) -> list:
    """The blocks made inside a layout block (`Block.children`)."""
    return list(getattr(block, "children", ()))


def is_layout(block) -> bool:
    """Whether `block` is a layout block that holds others (a `gradio.blocks.BlockContext` that is
    not a component: a Row, Column, Tab, Accordion…)."""
    return isinstance(block, BlockContext) and not isinstance(block, gr.Component)


def components_of(blocks: gr.Blocks) -> list:
    """Every component of `blocks`, in no set order (`Blocks.blocks`)."""
    return [block for block in blocks.blocks.values() if isinstance(block, gr.Component)]


# --- values in the form the browser reads (ui.render, ui.widgets) ------------------------------

def plot_value(figure_json: str) -> PlotData:
    """A gr.Plot's value from a plotly figure already in JSON (`components.plot.PlotData`), so
    gradio does not build and serialise a plotly Figure object again."""
    return PlotData(type="plotly", plot=figure_json)


def table_value(headers: list[str], rows: list[list]) -> DataframeData:
    """A gr.Dataframe's value from plain rows (`components.dataframe.DataframeData`)."""
    return DataframeData(headers=headers, data=rows, metadata=None)


def plotly_bundle() -> str:
    """The file name of the plotly.js bundle gradio's frontend ships (its gr.Plot loads it, from
    `templates/frontend/assets/PlotlyPlot-*.js`, served under `assets/`)."""
    found = sorted((Path(gr.__file__).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    if len(found) != 1:
        raise RuntimeError(f"gradio's plotly.js bundle not found (or not one): {[p.name for p in found]}")
    return found[0].name


# where gradio's frontend keeps the page's session hash, which its queued calls (an upload) carry:
# the page's opening sends it (assets/explorer.js `open`), so an upload reaches the tab the page opened
SESSION_JS = "window.__gradio_session_hash__"


def frontend_keeps_session() -> bool:
    """Whether gradio's frontend sets `SESSION_JS` (its app's script, `templates/frontend/assets/Index-*.js`)."""
    assets = Path(gr.__file__).parent / "templates" / "frontend" / "assets"
    return any(f"{SESSION_JS}=" in path.read_text(errors="replace") for path in assets.glob("Index-*.js"))


def stock_frontend(cls: type) -> type:
    """Class decorator: a subclass of a gradio component drawn by its parent's frontend code, so
    it needs no frontend of its own (`is_template`, read by `Block.get_block_name`)."""
    cls.is_template = True
    return cls
