"""How a page event reaches a tab's state: one path for every event.

Each event handler names the change it makes to the `View` (usually one field, set to the
value its widget sent) and calls `update`. `update` finds the tab's `Tab` by gradio's
session hash, applies the change under the tab's lock (`core.serving.tabs.Tab.apply`), lets
`ui.render` write what changed, and turns a refusal into a plain-text notice and a toast —
never an error badge on other controls, and never a changed state.

Limits are checked once, at this boundary, with `core.view.options`; the page's own widgets only
hint at them.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable

import gradio as gr
import pydantic

from core.process.memory import BUDGET
from core.process.offload import Offload, niced
from core.serving.jobs import Jobs
from core.serving.tabs import Tabs
from core.tables.session import Session
from core.view.options import Refused
from core.view.state import View
from ui.admission import superseded
from ui.channels import Channels

# every tab's state, and the pool heavy work shares: one job at a time, the rest in line, one per
# tab; a training's or a refit's computing runs in the process OFFLOAD keeps, off this one's lock
TABS = Tabs(budget=BUDGET)
CHANNELS = Channels(TABS)  # what the transport knows of each tab's page: its key, what its components hold
JOBS = Jobs(workers=1)
LARGE_TABLE_BYTES = 16 * 2**20  # a random layer larger than this is built in the heavy pool (about 0.1 s+)
OFFLOAD = Offload(budget=BUDGET)  # what a call copies to its process is reserved in the budget


def tab_of(request: gr.Request | None, *, fresh: bool = False):
    """The tab an event comes from (a new one for a new session hash, if its address may open one)."""
    session = getattr(request, "session_hash", None)
    tab = TABS.get(session, fresh=fresh, address=host_of(request))
    CHANNELS.of(tab, session)
    return tab


def host_of(request: gr.Request | None) -> str | None:
    """The client's address as the server sees it: behind a trusted proxy, the forwarded one
    (uvicorn reads it from the peers in FORWARDED_ALLOW_IPS, `ui.admission.ForwardedClient` behind a Space's proxy)."""
    client = getattr(request, "client", None)
    host = getattr(client, "host", None)
    return host if isinstance(host, str) else None


def track(page, channel, out: dict, *, direct: bool = False) -> tuple[dict, dict]:
    """Keep `channel.sent` true to the page's gradio components (under its tab's lock), and split a
    direct call's values by who writes them.

    An event through gradio's queue writes what it returns. A direct call (ui/direct.py, a
    class's lesson: ui/classroutes.py) answers with the outputs the page's own script writes
    (`Page.direct_outputs`) and, of the others, those whose component does not hold the value
    already: the page hands them to gradio with one event that runs in the browser alone
    (`ui.plane.hand_over_js`), so no change needs a second trip through the queue. A value equal
    to what the component holds is not sent again, so typing with nothing selected sends only
    the plot.

    Returns the page-written values and the rest (both by component); `gr.skip()` is neither.
    """
    own = set(page.direct_outputs)
    written, rest = {}, {}
    for component, value in out.items():
        if component in own:
            if isinstance(value, str):
                written[component] = value
            continue
        if skipped(value):
            continue
        mark = _fingerprint(value)
        if not direct or mark is None or channel.sent.get(component) != mark:
            rest[component] = value
        if mark is None:
            channel.sent.pop(component, None)
        else:
            channel.sent[component] = mark
    return written, rest


def as_built(component, value) -> bool:
    """Whether `component` holds `value` already as the page is built (its constructor's value
    and properties), so a page opening need not write it.

    Writing it anyway is not free: gradio's browser code fires a tab's `select` when its Tabs
    are given a selection, and a textbox's `change` when its empty value becomes "", so every
    page opening sent three events more through the queue (one of them redrawing the plane)."""
    if _is_update(value):
        return all(_same(getattr(component, name, _MISSING), wanted)
                   for name, wanted in value.items() if name != "__type__")
    if value is None or isinstance(value, str | int | float | bool | list):
        return _same(getattr(component, "value", _MISSING), value)
    return False


_MISSING = object()


def _same(built, value) -> bool:
    return built is not _MISSING and (built == value or (built is None and value == ""))


def skipped(value) -> bool:
    """Whether `value` leaves its component as it is (`gr.skip()`)."""
    return _is_update(value) and len(value) == 1


def _fingerprint(value) -> tuple | None:
    """A value to compare with the next one sent to a component; None: always send it (a
    figure). An update (``gr.update(...)``) compares by its properties: a class's lesson sets
    the freezes, the tabs and the picker each time, and each update makes the browser's gradio
    rebuild its component, which cost a follower's page more than the lesson's plot."""
    if value is None or isinstance(value, str | int | float | bool):
        return ("value", value)
    if isinstance(value, list | dict):
        try:
            return (type(value).__name__, json.dumps(value, sort_keys=True))
        except (TypeError, ValueError):
            return None
    return None


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
    tab=None,
    direct: bool = False,
):
    """Apply `change` to the tab's view and return what the page must redraw.

    `asked` names the fields the user set with this event: their widgets already show the
    new value, so they are written back only if the value had to change (or was refused).
    `outputs`, when given, limits what is returned to the event's declared outputs.
    `postprocessed`: the values are returned as the browser receives them, for an event
    declared with ``postprocess=False`` (`ui.plane.KEYSTROKE`; see `postprocess`).
    `tab`: the tab, when the caller found it (a direct call, by its key); `direct`: the call
    came straight from the page's script, not through gradio's queue, and gets back
    ``(values the script writes, the rest for gradio's components)`` (see `track`).
    """
    from ui import render  # render imports the panels' names; events is imported by them

    outputs = None if outputs is None else list(outputs)
    if request is not None and superseded(request):
        # a newer call of this event from this tab waits behind it in gradio's queue
        # (ui/admission.py): that one writes the page; this one answers "no change" at once
        return _within(page, {}, outputs)

    try:
        tab = tab or tab_of(request)
        channel = CHANNELS.of(tab)
        if not direct:  # a direct call changes the sentences or the selection, never the tables
            built_first(tab, change)

        def compute(step):  # under the tab's lock
            for widget in render.widgets_of(page, asked):  # it shows what the user set, not what was sent
                channel.sent.pop(widget, None)
            answers = render.answers_of(tab.member, step.view)  # a class's words, when the plane shows them
            out = render.outputs(page, step, asked=asked, whole=whole, notes=notes, listed=channel.listed,
                                 answers=answers, answered=answers != channel.answers)
            channel.answers = answers
            picker = out.get(page.token) if outputs is None or page.token in outputs else None
            if isinstance(picker, dict) and "choices" in picker:
                channel.listed = len(picker["choices"]) > 1  # more than "none"
            out = _within(page, out, outputs)
            return out, track(page, channel, out, direct=direct)

        step, (out, sent) = tab.apply(change, compute, tables=tables, whole=whole)
    except Refused as error:  # what the app does not allow, said in a sentence; any other error is a fault
        if not direct:
            gr.Warning(str(error))
        current = View() if tab is None else tab.view
        shown = render.fields(page, current, asked)  # put the refused widgets back
        out = _within(page, {**shown, page.notice: render.notice((str(error),))}, outputs)
        if tab is None:
            sent = ({page.notice: out[page.notice]}, {})
        else:
            with tab.lock:
                for widget in render.widgets_of(page, asked):  # they show what the user set: put back
                    channel.sent.pop(widget, None)
                sent = track(page, channel, out, direct=direct)
    if direct:
        return sent
    return postprocess(out) if postprocessed else out


def built_first(tab, change: Callable[[View], View]) -> None:
    """Build in the heavy pool, first, a large random layer that `change` asks for.

    A random layer of the largest settings takes about a second to draw; built inside the
    change, it would hold one of the two live slots that every page's keystrokes share. Every
    path that changes tables (settings, a link, a tour step, Back) comes through here, so each
    waits its turn in `JOBS` like any heavy work (and the memory budget sees it as it is built)."""
    from core.tables.presets import random_source

    try:
        wanted = change(tab.view)
    except Refused:
        return  # the change itself is refused, with its message, when it is applied
    settings = wanted.settings
    if wanted.source == "random" and settings.table_bytes > LARGE_TABLE_BYTES and settings not in random_source:
        JOBS.run(tab, "building the tables", lambda: niced(random_source, settings))


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
    return {component: value if _is_update(value) else _postprocessed(component, value)
            for component, value in values.items()}


def for_browser(component, value):
    """`value` as gradio's browser code takes it for `component`, with no event on the server:
    a value postprocessed; an update's properties as they are and its value postprocessed. The
    page's updates set only plain properties (`visible`, `interactive`, `selected`, a picker's
    `choices`, already (label, value) pairs), so nothing but the value needs the component:
    gradio's own path builds the whole component anew for each update."""
    if not _is_update(value):
        return _postprocessed(component, value)
    out = dict(value)
    if "value" in out:
        out["value"] = _postprocessed(component, out["value"])
    return out


def _is_update(value) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update"


def _postprocessed(component, value):
    if value is None:
        return None
    value = component.postprocess(value)  # a data model (pydantic) for figures, tables and files
    return value.model_dump() if isinstance(value, pydantic.BaseModel) else value


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
