"""The page's own live path: a keystroke or a click on a point, straight to the tab's state.

Through gradio's queue a keystroke costs more than the explorer's work: a join, an event
stream, a position estimate to every waiting visitor, and each output processed by gradio in
the browser before Plotly draws. So the main plane (`#embed-plot`, a `gr.HTML` the page's
script draws with Plotly) carries a server function, `live`, which the script calls with one
POST: the change (the sentences as typed, or the token clicked) and the tab's key. The call
goes through `ui.events.update` and `core.live.Live.apply` like every event, and answers with
the values of the outputs the script writes itself (`Page.direct_outputs`: the plot, its
summary, the variance bars, the notice, the address). What else it changed (the picker, the
neighbour tables, an open side view) waits on the server until the page fetches it with one
queued `sync` event.

A server function is not given gradio's session hash, so the page identifies its tab with the
unguessable key the server issued when the page loaded (`core.live.Live.key`).

Bounds: the calls compute two at a time (one per core, like the queue's live group); at
most `WAITING` wait for a turn, past which a call is refused at once; and a tab's older call
still waiting when a newer one comes is skipped (the page sends one at a time anyway, the
latest text winning).
"""

from __future__ import annotations

import threading

from core.options import Refused
from ui import events

SLOTS = 2  # direct calls computing at once: one per core
WAITING = 200  # direct calls waiting for a turn at most; past it a call is refused at once
# what a direct call may change, and the type each value must have
CHANGES = {"sentence_a": str, "sentence_b": str, "token": int}
MAX_KEY = 64


class Direct:
    """The `live` server function of one page, with its bounds."""

    def __init__(self, page, slots: int = SLOTS, waiting: int = WAITING) -> None:
        self.page = page
        self.slots = threading.BoundedSemaphore(slots)
        self.limit = waiting
        self.waiting = 0
        self._count = threading.Lock()

    def __call__(self, sent: object) -> dict:
        try:
            key, changes = read(sent)
            tab = events.LIVES.by_key(key)
        except Refused as error:
            return {"error": str(error)}
        with self._count:
            if self.waiting >= self.limit:
                return {"error": f"The server has {self.waiting:,} updates waiting; this one was not taken. Type "
                                 "again in a moment."}
            self.waiting += 1
            tab.latest += 1
            mine = tab.latest
        try:
            with self.slots:
                if tab.latest != mine:  # a newer call of this tab is waiting: it answers instead
                    return {"skipped": True}
                values, sync = events.update(self.page, None, lambda view: view.with_(**changes), asked=tuple(changes),
                                             outputs=self.page.sync_outputs + self.page.direct_outputs, live=tab,
                                             direct=True)
        finally:
            with self._count:
                self.waiting -= 1
        return {"values": {component.elem_id: value for component, value in values.items()}, "sync": sync}

    def function(self):
        """The server function gradio calls; the page's script calls it as `server.live(...)`."""

        def live(sent):
            return self(sent)

        return live


def read(sent: object) -> tuple[str, dict]:
    """The tab's key and the change, checked: anything else is refused with a sentence."""
    if not isinstance(sent, dict) or not isinstance(sent.get("key"), str) or not 0 < len(sent["key"]) <= MAX_KEY:
        raise Refused("This request carries no valid page key; reload the page.")
    change = sent.get("change")
    if not isinstance(change, dict) or not change or not set(change) <= set(CHANGES):
        raise Refused(f"A direct update changes some of {', '.join(CHANGES)}; nothing else.")
    for name, value in change.items():
        wanted = CHANGES[name]
        if name == "token" and value is None:
            continue
        if not isinstance(value, wanted) or isinstance(value, bool):
            raise Refused(f"{name} must be a {wanted.__name__}, not {type(value).__name__}.")
    return sent["key"], dict(change)


# the script of each gr.HTML output the page writes itself: it lets assets/explorer.js set the
# component's value as gradio would (so a later value from the queue compares with the right one).
# A value set here fires no `watch` callback: `then` runs what the component does with a new value
OUTPUT_JS = """
(window.embeddingExplorerOutputs = window.embeddingExplorerOutputs || {})[%r] = (value) => { props.value = value; %s };
"""


def written_by_page(elem_id: str, script: str = "", then: str = "") -> str:
    """`js_on_load` for an output the page's script writes: the component's own `script`, and
    the setter, which runs `then` after setting the value."""
    return script + OUTPUT_JS % (elem_id, then)
