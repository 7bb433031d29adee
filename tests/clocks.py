"""A clock a test moves by hand, handed to what keeps time (`Tabs(clock=…)`, a class store, a
classroom's writer); never patched into `time`: moving a patched `time.monotonic` by hours
stalled the launched app's event loop for hours."""

from __future__ import annotations


class Clock:
    """Reads `now`, which only the test moves."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
