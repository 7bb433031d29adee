"""Uploaded files on disk: bounded, and deleted minutes after they came.

Gradio's upload route stores any file it is sent, with no session and no event, and keeps it
until its cache is swept (hourly here). A stranger could fill the disk with 50 MB files in
seconds. The app needs a raw file only until the upload event reads it (`core.uploads`), a
moment after it came, after which its table is in memory. So before gradio stores a new file,
files that came more than `RAW_SECONDS` ago, read or not, are deleted (`UploadGate`), and a new
file is refused at once, with a sentence, while the files kept hold `RAW_BYTES` or more.

A file is not deleted as soon as it is read: gradio stores a file at a path made from its
content's hash, so two visitors uploading the same file at once share one path, and deleting it
after the first read took it from the second (the test suite's two workers showed it).

Gradio records each upload in its Blocks' `upload_file_set` (only uploads: exports and other
outputs go elsewhere in its cache), which is what is swept here.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from starlette.responses import PlainTextResponse

RAW_SECONDS = 120.0  # an upload not read this long after it came was never going to be
RAW_BYTES = 1024 * 2**20  # uploaded files waiting to be read, at most, together


def forget(path: str | os.PathLike) -> None:
    """Delete an uploaded file the app has read (and its folder, which gradio made for it alone).

    Only a file in gradio's upload folder: nothing else is the app's to delete."""
    from gradio.utils import get_upload_folder

    path = Path(path).resolve()
    if not path.is_relative_to(Path(get_upload_folder()).resolve()):
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


class UploadGate:
    """ASGI middleware before gradio's upload route: sweeps stale uploads, refuses past `RAW_BYTES`."""

    def __init__(self, app, limit: int | None = None) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].endswith("/gradio_api/upload"):
            blocks = scope["app"].get_blocks()
            limit = RAW_BYTES if self.limit is None else self.limit
            waiting = sweep(blocks.upload_file_set)
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
