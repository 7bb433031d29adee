"""The launched app's page, driven as its script drives it: one POST of `{key, change}` to its
route (ui/route.py), answered with values by element id.

`Page` opens a tab the way the page does (`{open: {query, narrow}}`), keeps its key, sends
changes and reads the answers; `Outputs` reads an answer by element id, with the main plot as
the page reads it (expanded, and the token table the page draws from it) and the charts' figures
under "plot". The tests run in the launched app's process, so a test may look at the tab itself
(`Page.tab`) to show a refused change changed nothing (`Page.fingerprint`).
"""

from __future__ import annotations

import asyncio
import base64
import html
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx
import numpy as np

from core.drawing.wire import expand, table_rows
from core.plane.pipeline import TABLE_HEADERS
from core.view.options import COMPONENTS, PARTS

ALL = list(COMPONENTS)
CHARTS = ("positions-plot", "layernorm-plot", "similarity-plot", "listing-plot", "loss-plot")


class Outputs(dict):
    """An answer's values by element id; `value(id)` reads through gradio's update dicts."""

    def value(self, elem_id: str):
        assert elem_id in self, f"{elem_id} was not written (the answer wrote {sorted(self)})"
        got = self[elem_id]
        if isinstance(got, dict) and got.get("__type__") == "update":
            return got.get("value")
        return got

    def written(self, elem_id: str) -> bool:
        return elem_id in self

    @property
    def notice(self) -> str:
        """The notice area as the plain text a person reads (one note a line)."""
        got = self.get("notice") or ""
        notes = re.findall(r"<p>(?:⚠️|ℹ️) (.*?)</p>", got, flags=re.DOTALL)
        assert "".join(re.findall(r"<p>(?:⚠️|ℹ️) .*?</p>", got, flags=re.DOTALL)) == got, \
            f"the notice is not plain notes: {got!r}"
        return "\n".join(html.unescape(note) for note in notes)


def outputs(values: dict) -> Outputs:
    """An answer's values as the page reads them: the main plot expanded, with the token table it
    draws from it under "token-table"; each chart's figure under "plot"; HTML as its text."""
    out = Outputs(values)
    plot = out.get("embed-plot")
    if isinstance(plot, str) and plot:
        whole = expand(json.loads(plot))
        out["embed-plot"] = {"plot": json.dumps(whole)}
        out["token-table"] = {"headers": list(TABLE_HEADERS), "data": table_rows(whole)}
    for chart in CHARTS:
        if chart in out:
            out[chart] = {"plot": out[chart]} if out[chart] else None
    for written in ("embed-info", "tour-text"):
        if isinstance(out.get(written), str):
            out[written] = text_of(out[written])
    return out


class Page:
    """One page of the launched app, opened at `query`: its tab's key, and every value it was sent
    (`shown`, by element id, as the browser holds them)."""

    def __init__(self, app_url: str, query: str = "", narrow: bool = False, headers: dict | None = None) -> None:
        self.url, self.headers = app_url, headers or {}
        answer = self.post({"open": {"query": query, "narrow": narrow}})
        assert "error" not in answer, answer
        self.opened = outputs(answer["values"])
        self.key = json.loads(answer["values"]["address"])["key"]
        self.shown = Outputs(self.opened)

    def post(self, sent: object, timeout: float = 120) -> dict:
        response = httpx.post(f"{self.url}explorer/live", json=sent, headers=self.headers, timeout=timeout)
        return response.json()

    def send(self, **change) -> Outputs:
        """The page's change (view fields, an action or work), answered as the page reads it; a
        refusal of the call itself is under "error"."""
        answer = self.post({"key": self.key, "change": change})
        if "values" not in answer:
            return Outputs(answer)
        out = outputs(answer["values"])
        self.shown.update(out)
        return out

    def train(self, steps: object = 20, corpus: object = "builtin") -> tuple[Outputs, list[Outputs]]:
        """Train as the page does: its answers as they stream, and all of them merged (the last value of each)."""
        steps_seen: list[Outputs] = []
        with httpx.stream("POST", f"{self.url}explorer/live", json={"key": self.key, "change": {
                "train": {"steps": steps, "corpus": corpus}}}, headers=self.headers, timeout=300) as response:
            if "event-stream" not in response.headers.get("content-type", ""):
                return Outputs(json.loads(response.read())), []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    steps_seen.append(outputs(json.loads(line[5:])["values"]))
        merged = Outputs()
        for out in steps_seen:
            merged.update(out)
        self.shown.update(merged)
        return merged, steps_seen

    def upload(self, path: str | Path, name: str | None = None) -> Outputs:
        """Upload a table file as the page does (its body, its page's key and name in headers)."""
        path = Path(path)
        response = httpx.post(f"{self.url}explorer/upload", content=path.read_bytes(), timeout=300, headers={
            **self.headers, "X-Explorer-Key": self.key, "X-File-Name": quote(name or path.name)})
        answer = response.json()
        if "values" not in answer:
            return Outputs(answer)
        out = outputs(answer["values"])
        self.shown.update(out)
        return out

    def freeze(self, *on: bool) -> Outputs:
        """The freeze boxes ticked as given, in PARTS order."""
        return self.send(frozen=[part for part, ticked in zip(PARTS, on, strict=True) if ticked])

    @property
    def tab(self):
        """The tab this page's key names, in the launched app's store."""
        from core.serving.tabs import TABS

        return TABS.kept(self.key)

    def fingerprint(self) -> str:
        """A hash of the tab's view and session: equal before and after a call that changed nothing."""
        tab = self.tab
        return f"{hash(tab.view):x}-{tab.session.fingerprint()}"


def text_of(markup: str) -> str:
    """HTML as the text a person reads: paragraphs on their own lines, tags gone, entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup.replace("</p><p>", "</p>\n<p>")))


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


def exported(app_url: str, out: Outputs) -> dict[str, bytes]:
    """The files an export's links name (`export-links`), fetched as the browser fetches them."""
    links = re.findall(r'href="([^"]+)" download="([^"]+)"', out.value("export-links"))
    return {name: httpx.get(f"{app_url}{html.unescape(link)}", timeout=60).content for link, name in links}
