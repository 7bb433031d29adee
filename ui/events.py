"""How a page event reaches a tab's state: one path for every event.

Each event handler names the change it makes to the `View` (usually one field, set to the
value its widget sent) and calls `update`. `update` finds the tab's `Live` by gradio's
session hash, applies the change under the tab's lock (`core.live.Live.apply`), lets
`ui.render` write what changed, and turns a refusal into a plain-text notice and a toast —
never an error badge on other controls, and never a changed state.

Limits are checked once, at this boundary, with `core.options`; the page's own widgets only
hint at them.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable

import gradio as gr

from core.live import Jobs, Lives
from core.memory import BUDGET
from core.offload import Offload
from core.options import Refused
from core.session import Session
from core.state import View
from ui.admission import superseded

# every tab's state, and the pool heavy work shares: one job at a time, the rest in line, one per
# tab; a training's or a refit's computing runs in the process OFFLOAD keeps, off this one's lock
LIVES = Lives(budget=BUDGET)
JOBS = Jobs(workers=1)
LARGE_TABLE_BYTES = 16 * 2**20  # a random layer larger than this is built in the heavy pool (about 0.1 s+)
OFFLOAD = Offload()


def live_of(request: gr.Request | None, *, fresh: bool = False):
    """The tab an event comes from (a new one for a new session hash, if its address may open one)."""
    return LIVES.get(getattr(request, "session_hash", None), fresh=fresh, address=address_of(request))


def address_of(request: gr.Request | None) -> str | None:
    """The client's address as the server sees it: behind a trusted proxy, the forwarded one
    (uvicorn reads it from the peers in FORWARDED_ALLOW_IPS, `ui.admission.ForwardedClient` behind a Space's proxy)."""
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    return host if isinstance(host, str) else None


def track(page, live, out: dict, *, direct: bool = False, whole: bool = False) -> tuple[dict, bool]:
    """Keep `live.shown` and `live.pending` true to the page's gradio components (under `live.lock`).

    An event through gradio's queue writes what it returns, superseding what a direct call left
    pending. A direct call (ui/direct.py) returns only the outputs the page's own script writes
    (`Page.direct_outputs`); what else it changed waits in `live.pending`, and the page fetches
    it with one queued `sync` event. A value equal to what the component already holds is not
    sent again, so typing with nothing selected never needs the queue.

    Returns the direct call's page-written values and whether the page must sync: whether
    anything of the plot's sync event is pending (`Page.sync_outputs`), or, for a whole view
    (a class's lesson: `whole`), anything at all, which the class box's sync fetches.
    """
    own = set(page.direct_outputs)
    written = {}
    for component, value in out.items():
        if component in own:
            if isinstance(value, str):
                written[component] = value
            continue
        mark = _fingerprint(value)
        if not direct:
            live.pending.pop(component, None)
        elif mark is None or live.shown.get(component) != mark:
            live.pending[component] = value
        if mark is None:
            live.shown.pop(component, None)
        else:
            live.shown[component] = mark
    if whole:
        return written, bool(live.pending)
    return written, any(component in live.pending for component in page.sync_outputs)


def _fingerprint(value) -> tuple | None:
    """A value to compare with the next one sent to a component; None: always send it (a
    figure). An update (``gr.update(...)``) compares by its properties: a class's lesson sets
    the freezes, the tabs and the picker each time, and an update gradio is sent builds its
    component anew, which cost a follower's page more than the lesson's plot."""
    if value is None or isinstance(value, str | int | float | bool):
        return ("value", value)
    if isinstance(value, list | dict):
        try:
            return (type(value).__name__, json.dumps(value, sort_keys=True))
        except (TypeError, ValueError):
            return None
    return None


def sync(page, request: gr.Request, outputs: list | None = None) -> dict:
    """What direct calls changed on the page's gradio components (pickers, tables, side views):
    those of `outputs` (the plot's sync event's, by default; a class's whole view has more)."""
    outputs = page.sync_outputs if outputs is None else outputs
    try:
        live = live_of(request)
    except Refused:  # an ended session, or a stranger's new tab refused: nothing of its is pending
        return _within(page, {}, outputs)
    wanted = set(outputs)
    with live.lock:
        taken = {component: live.pending.pop(component) for component in list(live.pending)
                 if component in wanted}
    return _within(page, taken, outputs)


def update(
    page,
    request: gr.Request | None,
    change: Callable[[View], View],
    *,
    outputs: Iterable | None = None,
    tables: Callable[[Session], Session] | None = None,
    whole: bool = False,
    asked: Iterable[str] = (),
    notes: Iterable[str] = (),
    postprocessed: bool = False,
    live=None,
    direct: bool = False,
):
    """Apply `change` to the tab's view and return what the page must redraw.

    `asked` names the fields the user set with this event: their widgets already show the
    new value, so they are written back only if the value had to change (or was refused).
    `outputs`, when given, limits what is returned to the event's declared outputs.
    `postprocessed`: the values are returned as the browser receives them, for an event
    declared with ``postprocess=False`` (`ui.plane.KEYSTROKE`; see `postprocess`).
    `live`: the tab, when the caller found it (a direct call, by its key); `direct`: the call
    came straight from the page's script, not through gradio's queue, and gets back
    ``(values the script writes, whether the page must sync)`` (see `track`).
    """
    from ui import render  # render imports the panels' names; events is imported by them

    outputs = None if outputs is None else list(outputs)
    if request is not None and superseded(request):
        # a newer call of this event from this tab waits behind it in gradio's queue
        # (ui/admission.py): that one writes the page; this one answers "no change" at once
        return _within(page, {}, outputs)

    try:
        live = live or live_of(request)
        if not direct:  # a direct call changes the sentences or the selection, never the tables
            built_first(live, change)

        def compute(step):  # under the tab's lock
            for widget in render.widgets_of(page, asked):  # it shows what the user set, not what was sent
                live.shown.pop(widget, None)
            out = render.outputs(page, step, asked=asked, whole=whole, notes=notes, listed=live.listed)
            picker = out.get(page.token) if outputs is None or page.token in outputs else None
            if isinstance(picker, dict) and "choices" in picker:
                live.listed = len(picker["choices"]) > 1  # more than "none"
            out = _within(page, out, outputs)
            return out, track(page, live, out, direct=direct, whole=whole)

        step, (out, sent) = live.apply(change, compute, tables=tables, whole=whole)
    except Refused as error:  # what the app does not allow, said in a sentence; any other error is a fault
        if not direct:
            gr.Warning(str(error))
        current = View() if live is None else live.view
        shown = render.fields(page, current, asked)  # put the refused widgets back
        out = _within(page, {**shown, page.notice: render.notice((str(error),))}, outputs)
        if live is None:
            sent = ({page.notice: out[page.notice]}, False)
        else:
            with live.lock:
                sent = track(page, live, out, direct=direct)
    if direct:
        return sent
    return postprocess(out) if postprocessed else out


def built_first(live, change: Callable[[View], View]) -> None:
    """Build in the heavy pool, first, a large random layer that `change` asks for.

    A random layer of the largest settings takes about a second to draw; built inside the
    change, it would hold one of the two live slots that every page's keystrokes share. Every
    path that changes tables (settings, a link, a tour step, Back) comes through here, so each
    waits its turn in `JOBS` like any heavy work (and the memory budget sees it as it is built)."""
    from core.presets import random_source

    try:
        wanted = change(live.view)
    except Refused:
        return  # the change itself is refused, with its message, when it is applied
    settings = wanted.settings
    if wanted.source == "random" and settings.table_bytes > LARGE_TABLE_BYTES and settings not in random_source:
        JOBS.run(live, "building the tables", lambda: random_source(settings))


def _within(page, values: dict, outputs: Iterable | None) -> dict:
    outputs = None if outputs is None else list(outputs)
    if outputs is not None:
        allowed = set(outputs)
        values = {component: value for component, value in values.items() if component in allowed}
    # gradio reads an empty mapping as one value, not as "nothing changed": name one of the
    # event's outputs (the notice, which most events may write; else its first)
    if values:
        return values
    return {page.notice if outputs is None or page.notice in outputs else outputs[0]: gr.skip()}


def postprocess(values: dict) -> dict:
    """The values as the browser receives them: each component's own `postprocess`, called here.

    Gradio postprocesses an event's outputs one by one, each in a hop to a worker thread; a
    keystroke writes fourteen, and the hops were a fifth of its server CPU. An event declared
    ``postprocess=False`` takes the values as they are, so its handler (already on a worker
    thread) does the same work in one go. Updates (``gr.update``, ``gr.skip``) pass through:
    gradio still applies them.
    """
    from gradio.data_classes import GradioModel, GradioRootModel

    out = {}
    for component, value in values.items():
        if value is not None and not (isinstance(value, dict) and value.get("__type__") == "update"):
            value = component.postprocess(value)
            if isinstance(value, GradioModel | GradioRootModel):
                value = value.model_dump()
        out[component] = value
    return out


def setter(page, *names: str, outputs: Iterable | None = None, postprocessed: bool = False):
    """A handler that sets view fields to its widgets' values (inputs in the order of `names`).

    The request comes first: gradio injects it into a positional parameter annotated
    `gr.Request`, and the widgets' values follow.
    """

    def handler(request: gr.Request, *values):
        changes = dict(zip(names, values, strict=True))
        return update(page, request, lambda view: view.with_(**changes), asked=names, outputs=outputs,
                      postprocessed=postprocessed)

    return named(handler, names)


def named(handler, names: Iterable[str]):
    """Give a `(request, *values)` handler the parameter names the API shows for its inputs."""
    parameters = [inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=gr.Request)]
    parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
    handler.__signature__ = inspect.Signature(parameters)
    handler.__annotations__ = {"request": gr.Request}
    handler.__name__ = "_".join(names) or handler.__name__
    return handler
