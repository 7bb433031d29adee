"""A class after its store was away: put back from its lecturer's page, and read again by every other page.

While Redis is away every page keeps its view and hears the class is reconnecting. Once it is back,
each class led here is put back from its lecturer's pages (`restore`), every other class with pages
here is read again until found, and a class nobody puts back within `GRACE_SECONDS` is over (`LOST`).
"""

from __future__ import annotations

import logging

from core.serving.classstore import GRACE_SECONDS, Lesson

LOG = logging.getLogger(__name__)
LOST = ("The class has ended: the store that keeps classes restarted, and no lecturer's page was there to bring the "
        "class back.")
FINAL = 2**53 - 1  # the version of the lesson that ends a class nobody put back: above any it had (and exact in JSON)


class Outage:
    """What one `Classroom` (`room`) does about its store's being away."""

    def __init__(self, room) -> None:
        self.room = room
        self.unsure: dict[str, float] = {}  # classes to read again since the store came back -> until when
        self.back_at = float("-inf")  # when (the writer's ticks) the store answered again

    def back(self) -> None:
        """The store answers again (no store call here): what each class needs is scheduled."""
        room, now = self.room, self.room.clock()
        self.back_at = room.writer.ticks()
        for led in room.leading(now):
            room.writer.soon(("restore", led.leader.class_id), lambda led=led: self.restore(led))
        seated, answered = room.seats.classes(), room.rounds.classes()
        for class_id in seated | answered | {led.leader.class_id for led in room.leading()}:
            self.unsure.setdefault(class_id, now + GRACE_SECONDS)
            room.writer.soon(("reread", class_id), lambda class_id=class_id: self.reread(class_id))
        for class_id in seated:
            room.seats.changed(class_id)
        for class_id in answered:
            room.rounds.replay_soon(class_id)

    def restore(self, led) -> Lesson | None:
        """The class as its lecturer's pages here hold it, put back if the store lost it or let it run out."""
        room, leader = self.room, led.leader
        restored, lesson = room.store.restore(leader.class_id, leader.digest, leader.address, led.query, led.step,
                                              led.version + 1)
        if lesson is None:  # another secret's class has its id (an ended one is let go as it is heard)
            room.forget(leader.class_id)
            return None
        led.published = lesson.query
        if restored:
            LOG.warning("class %s restored in the store from its lecturer's page", leader.class_id)
            room.rounds.replay_soon(leader.class_id)  # its round too
        room.heard(lesson)
        return lesson

    def reread(self, class_id: str) -> None:
        """A class unsure since the store came back, read again: found, over (past its grace), or tried again."""
        room, until = self.room, self.unsure.get(class_id)
        if until is None:  # heard of meanwhile
            return
        lesson, now = room.store.lesson(class_id), room.clock()
        if lesson is None and now >= until:
            lesson = Lesson(class_id, FINAL, "", None, now, LOST)
        if lesson is not None:
            room.heard(lesson)
        else:
            room.writer.soon(("reread", class_id), lambda: self.reread(class_id),
                             at=room.writer.ticks() + room.writer.retry_seconds)

    def just_back(self) -> bool:
        """Whether the store answered again so lately that a class led elsewhere may not be back yet."""
        writer = self.room.writer
        return writer.ticks() - self.back_at < writer.beat_seconds + 2 * writer.retry_seconds
