"""A class's seats: the students' pages connected to it here, and every process's count of them.

A student's page takes a seat when its class stream opens, in one step against every process's
pages (`RedisStore.set_presence` with a limit), so no class holds more than its bound. This process
writes its count (connected, following) of each class when it changes, on the writer's thread, and
again every beat: a process that stopped writing (it died) is forgotten once its count is
`PRESENCE_SECONDS` old.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

from core.serving.classstore import Full, RedisStore
from core.serving.classwriter import Writer


class Seats:
    """The pages here by class (each a `Follower`), read and written under one lock."""

    def __init__(self, store: RedisStore, writer: Writer, tell: Callable[[str | None], None]) -> None:
        self.store, self.writer, self.tell = store, writer, tell
        self.process = uuid.uuid4().hex  # this process's name in every class's counts
        self.pages: dict[str, dict[str, object]] = {}  # class id -> page key -> its follower, connected here
        self._lock = threading.Lock()
        self._counting = threading.Lock()  # a count is read and written together: an older one is never written last

    def take(self, key: str, member, limit: int) -> None:
        """Page `key`'s stream opened: it takes a seat unless the class has `limit` pages (`Full`;
        the store's `Away` is raised as it is). A page seated already keeps its seat."""
        class_id, taken = member.class_id, False
        with self._counting:
            with self._lock:
                pages = self.pages.setdefault(class_id, {})
                before, pages[key] = pages.get(key), member
                counts = len(pages), sum(page.following for page in pages.values())
            try:
                taken = self.store.set_presence(class_id, self.process, *counts, None if before is not None else limit)
            finally:
                if not taken:  # refused, or the store away: the page is as it was
                    with self._lock:
                        if before is not None:
                            pages[key] = before
                        elif pages.pop(key, None) is not None and not pages:
                            self.pages.pop(class_id, None)
            if not taken:
                raise Full(f"This class has {limit:,} pages following it, as many as one class may have.")
        self.tell(class_id)

    def leave(self, key: str, member) -> None:
        """The page's stream closed (a page whose newer stream replaced it keeps its seat)."""
        with self._lock:
            pages = self.pages.get(member.class_id, {})
            if pages.get(key) is not member:
                return
            del pages[key]
            if not pages:
                self.pages.pop(member.class_id, None)
        self.changed(member.class_id)

    def changed(self, class_id: str) -> None:
        """The class's pages here came, left, or stopped or started following: the writer writes
        their count, and the pages' streams hear it now."""
        self.writer.soon(("count", class_id), lambda: self.write(class_id))
        self.tell(class_id)

    def write(self, class_id: str) -> None:
        with self._counting:
            with self._lock:
                pages = list(self.pages.get(class_id, {}).values())
            self.store.set_presence(class_id, self.process, len(pages), sum(page.following for page in pages))
        self.tell(class_id)

    def classes(self) -> set[str]:
        with self._lock:
            return set(self.pages)
