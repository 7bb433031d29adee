"""Uploaded files on disk: bounded, and deleted minutes after they came.

Gradio's upload route stores any file it is sent, with no session or event, until its hourly
sweep: a stranger could fill the disk in seconds. The app needs a raw file only until the
upload event reads it (`core.tables.uploads`), a moment after it came. So a file goes `RAW_SECONDS`
after it came, read or not, by a timer every `SWEEP_SECONDS` (`Sweeper`) and before gradio
stores another (`UploadGate`), which is refused at once, with a sentence, while the files kept
hold `RAW_BYTES`. An event may name only a file uploaded and still kept (`check_sent`).

A file is not deleted as soon as it is read: gradio stores a file at a path made from its
content's hash, so two visitors uploading the same file share one path, and deleting it after
the first read took it from the second. Gradio records each upload in its Blocks'
set of uploads (exports and other outputs go elsewhere), which is what is swept here.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from starlette.responses import PlainTextResponse

from ui.gradiointernals import blocks_of, is_file_data, upload_folder, upload_paths

RAW_SECONDS = 120.0  # an upload not read this long after it came was never going to be
SWEEP_SECONDS = 10.0  # how often the timer looks: a file goes between RAW_SECONDS and this much later
RAW_BYTES = 1024 * 2**20  # uploaded files waiting to be read, at most, together


def forget(path: str | os.PathLike) -> None:
    """Delete an uploaded file the app has read (and its folder, which gradio made for it alone).

    Only a file in gradio's upload folder: nothing else is the app's to delete."""
    path = Path(path).resolve()
    if not path.is_relative_to(upload_folder().resolve()):
        return
    try:
        path.unlink(missing_ok=True)
        path.parent.rmdir()
    except OSError:
        pass  # already gone, or the folder holds something else: the sweep's business


def sweep(uploaded: set, now: float | None = None, keep: float | None = None) -> int:
    """Delete the files of `uploaded` (gradio's set of upload paths) older than `keep` seconds
    (`RAW_SECONDS`), and forget those gone; returns the bytes of those still waiting."""
    now = time.time() if now is None else now
    keep = RAW_SECONDS if keep is None else keep
    waiting = 0
    for name in list(uploaded):
        try:
            info = os.stat(name)
        except OSError:
            uploaded.discard(name)
            continue
        if now - info.st_mtime > keep:
            forget(name)
            uploaded.discard(name)
        else:
            waiting += info.st_size
    return waiting


class Sweeper:
    """The timer that deletes uploaded files `RAW_SECONDS` after they came, whether or not
    anyone uploads again: every `every` seconds on a thread of its own, on its `clock` (a test
    moves it, then `wake`s the timer)."""

    def __init__(self, uploaded: set, clock: Callable[[], float] = time.time, every: float = SWEEP_SECONDS) -> None:
        self.uploaded, self.clock, self.every = uploaded, clock, every
        self.rounds = 0  # sweeps done
        self._woken = threading.Event()

    def start(self) -> Sweeper:
        threading.Thread(target=self._run, name="raw-uploads", daemon=True).start()
        return self

    def wake(self) -> None:
        self._woken.set()

    def _run(self) -> None:
        while True:
            self._woken.wait(self.every)
            self._woken.clear()
            with contextlib.suppress(Exception):  # a file gone under it: the next round looks again
                sweep(self.uploaded, self.clock())
            self.rounds += 1


SWEEPER: Sweeper | None = None  # this process's timer, started with its first request (`UploadGate`)


def sweeping(uploaded: set) -> Sweeper:
    """The timer over `uploaded` (gradio's set of upload paths), started once."""
    global SWEEPER
    if SWEEPER is None or SWEEPER.uploaded is not uploaded:
        SWEEPER = Sweeper(uploaded).start()
    return SWEEPER


def check_sent(blocks, value: object) -> None:
    """Refuse, with a sentence, an event's file that is not one gradio's upload route stored and
    still keeps: a path on the server (/etc/passwd), a web address, or an upload deleted after
    `RAW_SECONDS`, or anything but a file. `value` is an event's input as it arrived (None, a
    FileData dict, or a list of them)."""
    import gradio as gr

    files = value if isinstance(value, list) else [value]
    kept = upload_paths(blocks)
    for file in files:
        if file is not None and not (is_file_data(file) and file["path"] in kept):  # not said back
            raise gr.Error(f"The upload names a file this server was not sent, or no longer keeps: send the file "
                           f"itself first (gradio_client: handle_file(path)), then name the path its upload answered, "
                           f"within {RAW_SECONDS / 60:g} minutes.", print_exception=False)


class UploadGate:
    """ASGI middleware before gradio's upload route: sweeps stale uploads, refuses past `RAW_BYTES`."""

    def __init__(self, app, limit: int | None = None) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and SWEEPER is None:
            sweeping(upload_paths(blocks_of(scope["app"])))
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].endswith("/gradio_api/upload"):
            limit = RAW_BYTES if self.limit is None else self.limit
            waiting = sweep(upload_paths(blocks_of(scope["app"])))
            coming = _content_length(scope)
            if waiting + coming > limit:
                refusal = PlainTextResponse(
                    f"The server holds as many recently uploaded files as it can ({limit / 2**20:,.0f} MB); try "
                    "again in a minute or two, when the oldest are deleted.", status_code=503,
                    headers={"Retry-After": "60"})
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _content_length(scope) -> int:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return max(0, int(value))
            except ValueError:
                return 0
    return 0
