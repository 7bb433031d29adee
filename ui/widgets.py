"""Gradio components tuned for this page: inputs that answer a malformed value with a
sentence instead of a generic error, and a read-only table that is cheap to redraw.

The page only ever sends well-formed values, but the API takes anything: a string for a
slider, None for a checkbox group. Gradio's own preprocessing then fails with a TypeError
before any callback runs, and with `show_error` off the user reads only "the app has
raised an exception". These subclasses turn that failure into a `gr.Error` naming the
control, the value and what it accepts. Each keeps its parent's frontend (`stock_frontend`).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from ui.gradiointernals import stock_frontend, table_value


def _checked(preprocess, component: gr.Component, payload: Any, allowed: str) -> Any:
    try:
        return preprocess(payload)
    except gr.Error:
        raise
    except (TypeError, ValueError):
        raise gr.Error(f"{component.label} must be {allowed}, not {payload!r}.") from None


@stock_frontend
class Slider(gr.Slider):
    def preprocess(self, payload: Any) -> Any:
        return _checked(super().preprocess, self, payload, f"a number from {self.minimum:g} to {self.maximum:g}")


@stock_frontend
class Number(gr.Number):
    def preprocess(self, payload: Any) -> Any:
        return _checked(super().preprocess, self, payload, "a number")


@stock_frontend
class CheckboxGroup(gr.CheckboxGroup):
    def preprocess(self, payload: Any) -> Any:
        choices = ", ".join(str(value) for _, value in self.choices)
        return _checked(super().preprocess, self, [] if payload is None else payload, f"a list drawn from {choices}")


@stock_frontend
class Checkbox(gr.Checkbox):
    """A checkbox that refuses anything but true or false: the string "false" is truthy."""

    def preprocess(self, payload: Any) -> Any:
        if not isinstance(payload, bool):
            raise gr.Error(f"{self.label} must be true or false, not {payload!r}.")
        return super().preprocess(payload)


@stock_frontend
class Table(gr.Dataframe):
    """A read-only table whose value is its rows, as lists of one length per header.

    Gradio's Dataframe checks on every value whether polars and pandas could have made it (an
    import search, about a millisecond); the page's tables are plain rows, redrawn with each
    keystroke, and need neither. Other values go the Dataframe's own way.
    """

    def postprocess(self, value: Any) -> Any:
        headers = list(self.headers or ())
        if isinstance(value, list) and all(isinstance(row, list) and len(row) == len(headers) for row in value):
            return table_value(headers, value)
        return super().postprocess(value)
