"""Files in and out of a page: an upload (`POST explorer/upload`) and an export's files
(`GET explorer/file/TOKEN`), each on a route of the app's own.

An upload's body is the file itself, its page's key in a header (never in an address a proxy
logs): it is written to a temporary file as it streams in, refused past `UploadLimits.max_bytes`
while it streams (a larger Content-Length before a byte is read), read by the tables'
readers (`core.tables.uploads`, in the heavy pool) and deleted at once, read or refused. Nothing
waits on disk for a sweep.

An export is written to a folder of its own and offered as links, one a file, each an
unguessable token issued for that file alone: a link lasts `LIFETIME` seconds, and the folder
goes when its links expire or its page exports again. Files are streamed from disk: a link
holds no bytes in memory.
"""

from __future__ import annotations

import html
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route

from core.view.options import Refused
from ui.admission import visitor_of_request, work_of

LIFETIME = 120.0  # seconds a download link may be used: time to click it, not to bookmark it
GONE = "This download link has expired or was never issued: a link lasts two minutes. Export again from the View tab."
MAX_NAME = 60  # characters of an uploaded file's name kept (at most 240 bytes: a name the disk takes)
ROOT = Path(tempfile.gettempdir()) / f"embedding-explorer-{os.getpid()}"  # this process's exports and uploads


@dataclass(frozen=True)
class Offered:
    folder: Path  # the export's folder, deleted with its last link
    path: Path
    owner: object  # who asked (a page's key): their next export revokes this one
    until: float


class Downloads:
    """The links issued, by token; `clock` reads seconds (a test moves it by hand)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._offered: dict[str, Offered] = {}
        self._lock = threading.Lock()

    def offer(self, owner: object, folder: Path, paths: Iterable[str | Path]) -> list[tuple[str, str]]:
        """Links to `paths` (in `folder`) for `owner`, as (file name, link relative to the page);
        `owner`'s older links are revoked and every expired export's folder deleted."""
        now = self.clock()
        issued = {secrets.token_urlsafe(24): Offered(folder, Path(path), owner, now + LIFETIME) for path in paths}
        with self._lock:
            kept = {token: offered for token, offered in self._offered.items()
                    if offered.owner != owner and offered.until > now}
            gone = {each.folder for each in self._offered.values()} - {each.folder for each in kept.values()}
            self._offered = {**kept, **issued}
        for each in gone - {folder}:
            shutil.rmtree(each, ignore_errors=True)
        return [(offered.path.name, f"explorer/file/{token}") for token, offered in issued.items()]

    def route(self) -> Route:
        async def download(request: Request) -> Response:
            with self._lock:
                offered = self._offered.get(request.path_params["token"])
            if offered is None or offered.until <= self.clock() or not offered.path.is_file():
                return PlainTextResponse(GONE, status_code=404)
            return FileResponse(offered.path, filename=offered.path.name, headers={"Cache-Control": "no-store"})

        return Route("/explorer/file/{token}", download, methods=["GET"])


def new_folder(kind: str) -> Path:
    """A new folder of this process's for one export's or one upload's files (`kind`: "exports", "uploads")."""
    path = ROOT / kind / secrets.token_hex(8)
    path.mkdir(parents=True)
    return path


def links_html(links: Iterable[tuple[str, str]]) -> str:
    """The links as the page lists them, each a download of its file."""
    items = "".join(f'<li><a href="{html.escape(url)}" download="{html.escape(name)}">{html.escape(name)}</a></li>'
                    for name, url in links)
    return f'<ul class="export-links">{items}</ul>' if items else ""


def file_name(sent: str) -> str:
    """The name the page sent for a file (URL-encoded) as a plain file name in its upload's own
    folder: its last part, printable characters only, at most `MAX_NAME` of them (its ending
    kept, which names the format); "upload" when nothing of it is left."""
    name = "".join(char for char in Path(unquote(sent)).name if char.isprintable())
    if name in ("", ".", ".."):
        return "upload"
    return name if len(name) <= MAX_NAME else name[:MAX_NAME // 2] + name[-(MAX_NAME // 2):]


def upload_route(live, take: Callable, limit: int) -> Route:
    """`POST explorer/upload`: the body is the file; `X-Explorer-Key` names the page and
    `X-File-Name` the file (URL-encoded). `take(tab, path)` reads it for the page's tab and
    answers what the page writes (ui/tablespanel.py); the file is deleted once it returns."""
    larger = f"A table file is at most {limit / 2**20:,.0f} MB; this one is larger."

    async def received(request: Request) -> dict:
        """The file streamed to disk, then taken in, in the page's turn of heavy work; deleted either way."""
        tab, channel = live.channel_of(request.headers.get("x-explorer-key"))
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:  # refused before a byte of it is read
            raise Refused(larger)
        folder = new_folder("uploads")
        path, size = folder / file_name(request.headers.get("x-file-name", "")), 0
        try:
            with path.open("wb") as file:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise Refused(larger)
                    file.write(chunk)
            return await live.turn(tab, channel, lambda: {"values": live.values(channel, take(tab, path))},
                                   visitor_of_request(request), work_of(size), "work")
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    async def upload(request: Request) -> Response:  # a page that left mid-file: `ui.route.left_mid_body`'s 499
        return await live.guarded(lambda: received(request))

    return Route("/explorer/upload", upload, methods=["POST"])
