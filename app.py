"""Embedding Explorer: `python app.py` serves the page; importing this module only builds it.

The page itself lives in the `ui` package (one module per panel) and everything it shows is
computed in `core/`. A Hugging Face Space and the tests import `demo` from here.
"""

from __future__ import annotations

import gc
import importlib
import threading

import torch
from threadpoolctl import threadpool_limits

from ui.page import build_demo, launch_options

# a Space has 2 cores shared by every visitor: one thread per request serves a class in
# parallel, where torch's and BLAS's default pools make small requests wait on each other
# (a 512-token pair's PCA is slower on two BLAS threads than on one)
torch.set_num_threads(1)
threadpool_limits(1)

demo = build_demo()
LAUNCH_OPTIONS = launch_options(demo)  # the page's own routes beside gradio's: `python app.py` and the tests launch so
# what is built by now (torch, gradio, the page, the tables) lives as long as the process: out of
# the garbage collector's reach, a collection does not walk it again after every few updates
gc.freeze()

__all__ = ["LAUNCH_OPTIONS", "demo"]

if __name__ == "__main__":
    # scikit-learn (a large part of the start) is left out of it (see core/model/projection.py) and imported
    # while the server comes up, so the first visitor's first plot does not wait for it
    threading.Thread(target=importlib.import_module, args=("sklearn.decomposition",), daemon=True).start()
    # server name and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT when set
    demo.launch(**LAUNCH_OPTIONS)
