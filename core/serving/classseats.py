"""A class's places: the students' pages connected to it here, and every process's count of them.

A page takes a seat in one step against every process's pages (`RedisStore.set_presence`); each
process writes its count again every beat, and one that stopped is forgotten after `PRESENCE_SECONDS`.
"""

from __future__ import annotations

import threading
import uuid

from core.serving.classstore import Full

# `Classroom.tell`'s member for news of the lecturers' streams only (the counts): a class of hundreds is not woken
LECTURERS = object()


def counts(pages) -> tuple[int, int, int]:
    """Pages connected, following, and the students (seats) they are."""
    pages = list(pages)
    return len(pages), sum(page.following for page in pages), len({page.seat for page in pages})


class Seats:
    """The pages of one `Classroom` (`room`) here, by class (each a `Follower`), read and written under one lock."""

    def __init__(self, room) -> None:
        self.room = room
        self.process = uuid.uuid4().hex  # this process's name in every class's counts
        self.pages: dict[str, dict[str, object]] = {}  # class id -> page key -> its follower, connected here
        self._lock = threading.Lock()
        self._counting = threading.Lock()  # a count is read and written together: an older one is never written last

    def take(self, key: str, member, limit: int) -> None:
        """Page `key`'s stream opened: it takes a seat unless the class has `limit` pages (`Full`)."""
        class_id = member.class_id
        with self._counting:
            with self._lock:
                seated = self.pages.get(class_id, {})
                pages = {**seated, key: member}
            if not self.room.store.set_presence(class_id, self.process, *counts(pages.values()),
                                                limit=None if key in seated else limit):
                raise Full(f"This class has {limit:,} pages following it, as many as one class may have.")
            with self._lock:
                self.pages.setdefault(class_id, {})[key] = member
        self.room.tell(class_id, member=member)

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

    def changed(self, class_id: str, member: object = None) -> None:
        """The class's pages here changed (`member`'s, when given): the writer writes their count; the
        lecturers' streams, and the page's own, hear it now."""
        self.room.writer.soon(("count", class_id), lambda: self.write(class_id))
        self.room.tell(class_id, member=member or LECTURERS)

    def write(self, class_id: str) -> None:
        with self._counting:
            with self._lock:
                pages = list(self.pages.get(class_id, {}).values())
            self.room.store.set_presence(class_id, self.process, *counts(pages))
        self.room.tell(class_id, member=LECTURERS)

    def classes(self) -> set[str]:
        with self._lock:
            return set(self.pages)
