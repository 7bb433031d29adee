"""The app (or another gradio server) in a child process on a free loopback port, for benchmarks that
measure the server."""

from __future__ import annotations

import contextlib
import os
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mib(process: psutil.Process) -> float:
    """Resident memory in MiB."""
    return process.memory_info().rss / 2**20


def tree_mib(process: psutil.Process) -> float:
    """Resident memory of the process and its children (the heavy-work process), in MiB."""
    total = process.memory_info().rss
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):  # a child that ended as it was read
            total += child.memory_info().rss
    return total / 2**20


@contextmanager
def launched_app(start_timeout: float = 120) -> Iterator[tuple[str, psutil.Process]]:
    """`python app.py` until the block ends: yields its URL, once it answers, and its process."""
    with launched([sys.executable, "app.py"], "the app", start_timeout) as served:
        yield served


@contextmanager
def launched(command: list[str], name: str, start_timeout: float = 120) -> Iterator[tuple[str, psutil.Process]]:
    """Any gradio server in a child process until the block ends, so its CPU and memory are
    its own: ``command`` is run in the repository with GRADIO_SERVER_NAME / GRADIO_SERVER_PORT
    set to a free loopback port; yields the URL, once its config answers, and its process."""
    port = free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
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
