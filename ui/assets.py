"""Files the page reads at start: the example pairs, the stylesheet and the page's script."""

from __future__ import annotations

import json
from pathlib import Path

ASSETS = Path(__file__).resolve().parents[1] / "assets"
EXAMPLES = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))


def gradio_plotly() -> str:
    """The page-relative URL of gradio's own plotly.js bundle (the chunk its gr.Plot loads).

    The page's script draws the main plane with it: the app serves it already, the browser
    caches it once for every plot of the page, and every plot runs the same plotly.js.
    """
    from ui.gradiointernals import plotly_bundle

    return f"assets/{plotly_bundle()}"
