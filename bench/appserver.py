"""The app (or another gradio server) in a child process on a free loopback port, for benchmarks that
measure the server: its address, and its memory and CPU with its children's (the heavy-work
process's)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
# `python app.py`, and on SIGUSR1 glibc's malloc_trim(0): what the allocator kept for reuse goes
# back to the system, so the resident memory left is what the server still holds
TRIMMABLE = """
import ctypes, runpy, signal
libc = ctypes.CDLL("libc.so.6")
signal.signal(signal.SIGUSR1, lambda *_: libc.malloc_trim(0))
runpy.run_path("app.py", run_name="__main__")
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mib(process: psutil.Process) -> float:
    """Resident memory in MiB."""
    return process.memory_info().rss / 2**20


def tree_mib(process: psutil.Process) -> float:
    """Memory of the process and its children (the heavy-work process), in MiB: the sum of their
    proportional sets (PSS), so a page both map — the tables the pool shares — counts once, not
    once in each process's RSS."""
    total = 0
    for each in (process, *process.children(recursive=True)):
        with contextlib.suppress(psutil.NoSuchProcess):  # a child that ended as it was read
            total += each.memory_full_info().pss
    return total / 2**20


def tree_seconds(process: psutil.Process) -> float:
    """CPU seconds (user + system) of the process and its children (the heavy-work process's)."""
    total = 0.0
    for each in (process, *process.children(recursive=True)):
        with contextlib.suppress(psutil.Error):  # a child that ended as it was read
            spent = each.cpu_times()
            total += spent.user + spent.system
    return total


def trim(process: psutil.Process, settle: float = 2.0) -> None:
    """Have a server launched `trimmable` hand its allocator's free memory back to the system."""
    process.send_signal(signal.SIGUSR1)
    time.sleep(settle)


@contextmanager
def launched_app(start_timeout: float = 120, trimmable: bool = False,
                 env: dict[str, str | None] | None = None) -> Iterator[tuple[str, psutil.Process]]:
    """`python app.py` until the block ends: yields its URL, once it answers, and its process.
    `trimmable`: it also trims its allocator on SIGUSR1 (`trim`); `env`: variables set for it
    (None: unset)."""
    command = [sys.executable, "-c", TRIMMABLE] if trimmable else [sys.executable, "app.py"]
    with launched(command, "the app", start_timeout, env) as served:
        yield served


@contextmanager
def launched(command: list[str], name: str, start_timeout: float = 120,
             env: dict[str, str | None] | None = None) -> Iterator[tuple[str, psutil.Process]]:
    """Any gradio server in a child process until the block ends, so its CPU and memory are
    its own: ``command`` is run in the repository with GRADIO_SERVER_NAME / GRADIO_SERVER_PORT
    set to a free loopback port, and ``env`` (None: unset); yields the URL, once its config
    answers, and its process."""
    port = free_port()
    given = env or {}
    env = {**{var: value for var, value in os.environ.items() if given.get(var, value) is not None},
           **{var: value for var, value in given.items() if value is not None},
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    # served as the public serves it: a measure that imports the tests' helpers (tests/conftest.py
    # turns the tests' hooks on for this process) does not pass their hidden controls on
    env.pop("EMBEDDING_EXPLORER_TEST_HOOKS", None)
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if server.poll() is not None:
                raise SystemExit(f"{name} exited with code {server.returncode}")
            try:
                httpx.get(f"{url}config", timeout=10).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{name} did not start within {start_timeout:.0f} s") from None
                time.sleep(0.5)
        yield url, psutil.Process(server.pid)
    finally:
        stop(server)


def stop(process: subprocess.Popen) -> None:
    """End a child process: politely, then for sure."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=30)
