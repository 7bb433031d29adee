"""`GET /explorer/file/TOKEN`: a file the page's work wrote (an export), by a short-lived link.

The page asks for its exports over its own route (`ui.direct`), so its answer cannot carry
gradio's file outputs; it carries links instead, one a file, each an unguessable token this
process issued for that file alone. A link lasts `LIFETIME` seconds and is revoked when its tab
asks again (its files are then replaced on disk); anything else is answered 404 with a sentence.
The files stay on disk, where the export wrote them, and are streamed from there: a link holds
no bytes in memory, and a tab holds one export's links at most.
"""

from __future__ import annotations

import html
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Route

PATH = "/explorer/file"
LIFETIME = 120.0  # seconds a link may be used: time to click it, not to bookmark it
GONE = ("This download link has expired or was never issued: a link lasts two minutes. "
        "Export again from the View tab.")


@dataclass(frozen=True)
class Offered:
    path: Path
    owner: object  # who asked (a tab's key): their next export revokes this one
    until: float


class Downloads:
    """The links issued, by token; `clock` reads seconds (a test moves it by hand)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._offered: dict[str, Offered] = {}
        self._lock = threading.Lock()

    def offer(self, owner: object, paths: Iterable[str | Path]) -> list[tuple[str, str]]:
        """Links to `paths` for `owner`, as (file name, the link relative to the page), its older ones revoked."""
        now = self.clock()
        with self._lock:
            self._offered = {token: offered for token, offered in self._offered.items()
                             if offered.owner != owner and offered.until > now}
            links = []
            for path in map(Path, paths):
                token = secrets.token_urlsafe(24)
                self._offered[token] = Offered(path, owner, now + LIFETIME)
                links.append((path.name, f"{PATH.lstrip('/')}/{token}"))
            return links

    def __len__(self) -> int:
        return len(self._offered)

    def path_of(self, token: str) -> Path | None:
        """The file a token names, while its link lasts."""
        with self._lock:
            offered = self._offered.get(token)
            if offered is not None and offered.until <= self.clock():
                del self._offered[token]
                offered = None
        return None if offered is None or not offered.path.is_file() else offered.path

    def route(self) -> Route:
        async def download(request: Request) -> Response:
            path = self.path_of(request.path_params["token"])
            if path is None:
                return PlainTextResponse(GONE, status_code=404)
            return FileResponse(path, filename=path.name, headers={"Cache-Control": "no-store"})

        return Route(PATH + "/{token}", download, methods=["GET"])


def links_html(links: Iterable[tuple[str, str]]) -> str:
    """The links as the page lists them, each a download of its file."""
    items = "".join(f'<li><a href="{html.escape(url)}" download="{html.escape(name)}">{html.escape(name)}</a></li>'
                    for name, url in links)
    return f'<ul class="export-links">{items}</ul>' if items else ""


__all__ = ["Downloads", "links_html"]
