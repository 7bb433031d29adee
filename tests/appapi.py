"""Calling the launched app's endpoints and reading their outputs by element id.

An event returns `{component: value}` for many components, so its API answer is a long tuple
whose order is the page's (`ui.page.Page.everything`), not something a test should count.
`call` names each returned value by its component's `elem_id` (a stable contract, see
DESIGN.md), read from the demo that this test process launched.
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np

from core.drawing.wire import expand, table_rows
from core.plane.pipeline import TABLE_HEADERS
from core.view.options import COMPONENTS

ALL = list(COMPONENTS)


def unchanged(value) -> bool:
    """Whether a returned value is gradio's "no change" (a generator's is nested in props)."""
    if not isinstance(value, dict) or value.get("__type__") != "update":
        return False
    rest = {key: item for key, item in value.items() if key != "__type__"}
    return not rest or (set(rest) == {"props"} and unchanged(rest["props"]))


@cache
def output_ids(api_name: str) -> tuple[str, ...]:
    """The elem_ids of an endpoint's outputs, in the order gradio_client returns their values."""
    import app

    name = api_name.lstrip("/")
    found = [fn for fn in app.demo.fns.values() if fn.api_name == name]
    assert len(found) == 1, f"no single endpoint named {api_name!r}"
    outputs = [block for block in found[0].outputs if not getattr(block, "skip_api", False)]
    ids = tuple(block.elem_id for block in outputs)
    assert all(ids) and len(set(ids)) == len(ids), f"{api_name}: every output needs its own elem_id: {ids}"
    return ids


class Outputs(dict):
    """An endpoint's answer: elem_id -> value; `value(id)` reads through gradio's update dicts."""

    def value(self, elem_id: str):
        got = self[elem_id]
        assert not unchanged(got), f"{elem_id} was not written"
        if isinstance(got, dict) and got.get("__type__") == "update":
            return got.get("value")
        return got

    def written(self, elem_id: str) -> bool:
        return not unchanged(self[elem_id])

    @property
    def notice(self) -> str:
        """The notice area as the plain text a person reads (one note a line)."""
        got = self.get("notice", "")
        if got is None or unchanged(got):
            return ""
        notes = re.findall(r"<p>⚠️ (.*?)</p>", got, flags=re.DOTALL)
        assert "".join(f"<p>⚠️ {note}</p>" for note in notes) == got, f"the notice is not plain notes: {got!r}"
        return "\n".join(html.unescape(note) for note in notes)


def call(client, api_name: str, *args) -> Outputs:
    result = client.predict(*args, api_name=api_name)
    return named(api_name, result)


def named(api_name: str, result) -> Outputs:
    """The answer by elem_id, with the main plot read as the page reads it: expanded, and the
    token table (drawn in the browser from the plot's columns) under "token-table"."""
    ids = output_ids(api_name)
    values = result if isinstance(result, tuple | list) and len(ids) != 1 else (result,)
    assert len(values) == len(ids), (api_name, len(values), ids)
    out = Outputs(zip(ids, values, strict=True))
    plot = out.get("embed-plot")
    if isinstance(plot, str) and plot:  # the compact figure's JSON, which the page's script draws
        whole = expand(json.loads(plot))
        out["embed-plot"] = {"plot": json.dumps(whole)}
        out["token-table"] = {"headers": list(TABLE_HEADERS), "data": table_rows(whole)}
    for written in ("embed-info", "tour-text"):  # HTML: read as the text a person reads
        if isinstance(out.get(written), str):
            out[written] = text_of(out[written])
    return out


def text_of(markup: str) -> str:
    """HTML as the text a person reads: paragraphs on their own lines, tags gone, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup.replace("</p><p>", "</p>\n<p>")))


def open_view(client, key: str) -> None:
    """Open a main tab (plane, positions, layernorm, similarity, listing, lookup) in this client's tab.

    A tab's select event has no API name, so this does what it does on the server: set the
    view's `shown` field under the tab's lock. Side views are computed only while open.
    """
    from ui.events import TABS

    tab = TABS.get(client.session_hash)
    with tab.lock:
        tab.view = tab.view.with_(shown=key)


def embed(client, a: str, b: str = "") -> Outputs:
    return call(client, "/embed", a, b)


def fingerprint(client) -> str:
    return client.predict(api_name="/fingerprint")


def query(client) -> tuple[str, str]:
    """What /share answers: the link's query string and its notes."""
    return client.predict(api_name="/share")


def figure(plot) -> dict:
    return json.loads(plot["plot"])


def trace_names(plot) -> list[str]:
    return [trace.get("name") for trace in figure(plot)["data"]]


def tokens(table) -> list[str]:
    return [row[0] for row in table["data"]]


def decode(array) -> np.ndarray:
    """A plotly typed array ({"dtype": "f4", "bdata": base64, "shape": "L, 4"}) or a plain list, as numpy."""
    if isinstance(array, list):
        return np.asarray(array)
    values = np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"])
    if "shape" in array:
        values = values.reshape(tuple(int(n) for n in array["shape"].split(",")))
    return values


def run_async(coroutine_function):
    """Run a coroutine in a thread of its own: a session's browser keeps an event loop running
    in the test's thread (Playwright's sync API), where asyncio.run is not allowed."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine_function()).result(timeout=120)


def key_of(tab) -> str:
    """The key a page names its tab by in its own calls (`ui.channels`), as the page is given it."""
    from ui.events import CHANNELS

    return CHANNELS.of(tab).key
