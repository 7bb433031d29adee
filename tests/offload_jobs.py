"""Small jobs for tests/test_offload.py, in a module the offload process can import by name
(pytest imports test files under names of its own)."""

from __future__ import annotations

import os
import time

from core.view.options import Refused


def refuse(message: str):
    raise Refused(message)


def count_to(limit: int, progress=None, stop=None) -> int:
    """A job that reports each step and ends early when asked."""
    for i in range(limit):
        if stop is not None and stop():
            return i
        if progress is not None:
            progress(i)
        time.sleep(0.01)
    return limit


def ignore_stop(seconds: float, stop=None) -> None:
    """A job that never reads its `stop`."""
    time.sleep(seconds)


def limits() -> tuple[int, tuple[int, int]]:
    """The process's torch threads and its limit of open files (soft, hard)."""
    import resource

    import torch

    return torch.get_num_threads(), resource.getrlimit(resource.RLIMIT_NOFILE)


def modules() -> list[str]:
    """The modules the process has imported."""
    import sys

    return list(sys.modules)


def exit_now() -> None:
    os._exit(3)
