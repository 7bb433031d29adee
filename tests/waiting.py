"""Waiting in a test for what another thread or the server delivers: a bounded poll, never a timed sleep."""

from __future__ import annotations

import time


def eventually(predicate, timeout: float = 30.0) -> bool:
    """Whether `predicate()` came true within `timeout` seconds (polled; the value is what is asserted)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
