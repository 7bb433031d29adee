"""The current view as files that open elsewhere: a spreadsheet, a notebook, a browser.

A student who found something wants to keep it, or to go on in their own code; a lecturer
wants the picture in a slide deck that works without a network. Three files, each in the most
ordinary format for its job: ``.csv``, the 2-D points as plotted, for a spreadsheet or pandas
(`coordinates_csv`); ``.safetensors``, the full vectors with the token columns that produced
them, for numpy or torch, in a format that runs no code when opened (`vectors_safetensors`);
``.html``, the interactive figure, which opens offline, and its points as a table (`figure_html`).

The file writers read neither torch nor gradio: they take the plain data `core.plane.pipeline`
produces (a `Scene`, vectors as numpy arrays, a figure dict). `export_view` runs the pipeline
for a tab's view and writes them: one module-level call, which `core.process.offload` runs in
its own process (the figure's HTML alone is megabytes of Python string work).
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from safetensors.numpy import save

from core.drawing.plottable import table_html
from core.plane.scene import GROUPS, Scene

# the table under the plot: a frame of its own that scrolls sideways on a narrow screen, not the page
TABLE_STYLE = (".plot-table-region { max-width: 100%; overflow: auto; margin: 1em 0; } "
               ".plot-table { border-collapse: collapse; font: 14px sans-serif; font-variant-numeric: tabular-nums; } "
               ".plot-table caption { text-align: left; font-weight: 600; padding: 0.3em 0; } "
               ".plot-table th, .plot-table td { padding: 0.15em 0.6em; border-bottom: 1px solid #ccc; "
               "text-align: left; }")
LABELS_JS = Path(__file__).resolve().parents[2] / "assets" / "labels.js"  # the page's label placement

if TYPE_CHECKING:
    from core.tables.session import Session
    from core.view.state import View

CSV_HEADER = ("group", "token", "id", "position", "segment", "x", "y")
# tensors that describe the tokens, stored beside the groups' vectors
INDEX_TENSORS = ("ids", "positions", "segment_ids")
# a file name stem: letters, digits, '-', '_' and '.', not starting with '.', so it cannot leave the directory
_STEM = re.compile(r"[\w\-][\w.\-]{0,99}")


def _float32(value: float) -> str:
    """The shortest text that reads back as the same float32: coordinates are float32 numbers."""
    return str(np.float32(value))


def coordinates_csv(scene: Scene) -> str:
    """Every plotted point: one row per group and token, groups in the plot's order."""
    out = io.StringIO()
    writer = csv.writer(out)  # quotes tokens holding commas, quotes or line breaks
    writer.writerow(CSV_HEADER)
    for group in scene.points:
        points = np.asarray(scene.points[group], dtype=np.float32)
        for k, token in enumerate(scene.tokens):
            writer.writerow(
                (
                    group,
                    token,
                    scene.ids[k],
                    scene.positions[k],
                    scene.segment_ids[k],
                    _float32(points[k, 0]),
                    _float32(points[k, 1]),
                )
            )
    return out.getvalue()


def vectors_safetensors(vectors: Mapping[str, np.ndarray], scene: Scene) -> bytes:
    """The groups' full vectors, (L, d) float32 each, with the token columns that produced them.

    Tokens are text, which safetensors cannot hold as a tensor, so they travel as JSON in the
    header's metadata (its values must be strings); ``groups`` there keeps the plot's order,
    since the file itself stores tensors sorted by name.
    """
    length = len(scene.tokens)
    unknown = [group for group in vectors if group not in GROUPS]
    if unknown:
        raise ValueError(f"unknown group {unknown[0]!r}; the groups are {', '.join(GROUPS)}.")
    tensors: dict[str, np.ndarray] = {}
    for group, array in vectors.items():
        array = np.asarray(array)
        if array.ndim != 2 or array.shape[0] != length:
            raise ValueError(f"vectors[{group!r}] has shape {array.shape}; expected ({length}, d), one row per token.")
        tensors[group] = np.ascontiguousarray(array, dtype=np.float32)
    for name in INDEX_TENSORS:
        tensors[name] = np.asarray(getattr(scene, name), dtype=np.int64).reshape(length)
    metadata = {
        "tokens": json.dumps(list(scene.tokens)),
        "groups": json.dumps([group for group in GROUPS if group in vectors]),
    }
    return save(tensors, metadata=metadata)


def figure_html(spec: dict, tokens: Sequence[str] | None = None) -> str:
    """A standalone page of the figure, with plotly.js inlined so it opens without a network.

    Megabytes, nearly all of them plotly.js: the price of a file that works on a lecture hall's
    laptop with no connection. The camera button saves a PNG at three times screen resolution,
    sharp enough for a slide. The same figure always gives the same bytes. Its labels
    (``layout.meta.labels``) are placed by the page's own script (assets/labels.js), inlined
    after the plot, which writes them as the page does. Under the plot, its drawn points as a table
    (`core.drawing.plottable`: markup, read without any script), their words from `tokens` (the
    scene's) or, without, from the hover texts.
    """
    labels = (spec.get("layout", {}).get("meta") or {}).get("labels")
    place = "" if labels is None else (
        LABELS_JS.read_text() + "\nconst gd = document.getElementById('{plot_id}');\n"
        "window.embeddingLabels.show(gd, gd.layout.meta.labels);")
    page = pio.to_html(
        go.Figure(spec),
        include_plotlyjs=True,
        full_html=True,
        config={"toImageButtonOptions": {"scale": 3}},
        div_id="embedding-figure",  # plotly's default is a random id; a fixed one makes the same view the same file
        post_script=place or None,
    )
    head, end = page.rsplit("</body>", 1)  # the table after the plot, its style in the page's head
    head = head.replace("</head>", f"<style>{TABLE_STYLE}</style></head>", 1)
    return f"{head}{table_html(spec, tokens)}</body>{end}"


def export_files(
    directory: Path,
    scene: Scene,
    vectors: Mapping[str, np.ndarray],
    spec: dict,
    stem: str = "embedding",
) -> list[Path]:
    """Write ``stem.csv``, ``stem.safetensors`` and ``stem.html`` into directory; return their paths.

    All three are built before any is written, so a refused export leaves no partial set behind.
    """
    if not isinstance(stem, str) or not _STEM.fullmatch(stem):
        raise ValueError(
            f"the file name {stem!r} is not allowed; use 1 to 100 letters, digits, '-', '_' or '.', "
            "not starting with '.'."
        )
    contents = {
        ".csv": coordinates_csv(scene).encode("utf-8"),
        ".safetensors": vectors_safetensors(vectors, scene),
        ".html": figure_html(spec, scene.tokens).encode("utf-8"),
    }
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for suffix, data in contents.items():
        path = directory / f"{stem}{suffix}"
        path.write_bytes(data)
        paths.append(path)
    return paths


def export_view(folder: Path, view: View, session: Session) -> list[str]:
    """The three files of `view` (a `core.view.state.View`) on `session`'s tables, in `folder`, which
    is emptied first: a tab's next export replaces its last."""
    from core.drawing.figures import embedding_spec
    from core.drawing.palette import palette
    from core.plane.pipeline import explore_view  # torch: only for this call, the writers above need none

    result = explore_view(view, session)
    spec = embedding_spec(result.scene, labels=view.labels, arrows=view.arrows, shift=view.shift,
                          presenter=view.presenting, palette=palette(view.theme))
    shutil.rmtree(folder, ignore_errors=True)
    return [str(path) for path in export_files(folder, result.scene, result.vectors, spec)]
