"""A class's round of answers as this process serves it (`core.serving.poll` holds the round's values).

A change or an answer is kept by the store before it is answered; the writer then announces the
round to every process, at most once per `POLL_SECONDS`. Each answer acknowledged here is noted in
its round's journal and written again after an outage and every beat (`replay`), so none is lost.
"""

from __future__ import annotations

import logging
import threading

from core.serving.classstore import NO_CLASS, RECONNECTING, Full, Gone, Reconnecting
from core.serving.poll import (
    MAX_ANSWERS,
    MAX_MODERATED,
    NO_ROUND,
    WORDS_PER_STUDENT,
    Round,
    checked_number,
    checked_word,
    too_soon,
)
from core.view.options import Refused

LOG = logging.getLogger(__name__)
POLL_SECONDS = 1.0  # a class's round is announced at most this often by each process (the last change always)

NOT_ASKED = "No question has been asked in this round: ask the class first."
NOT_OPEN = "No question is open for answers just now: wait for the lecturer to ask one."
OTHER_ROUND = "That question is over: the lecturer has asked another. Answer the one shown now."
ENOUGH = f"You have sent {WORDS_PER_STUDENT} words for this question, as many as one student may."
ROUND_FULL = f"This question has {MAX_ANSWERS:,} answers, as many as one question takes."
MODERATED = f"At most {MAX_MODERATED:,} words of a round can be hidden, and as many approved."
NO_SEAT = "This page has no seat in the class; reload the page."
LOOKS_HIDDEN = "This word is hidden because it looks like a word you hid: Show that word, and both are shown."


class Rounds:
    """The rounds of the classes of one `Classroom` (`room`: its store, writer and classes)."""

    def __init__(self, room) -> None:
        self.room = room
        self.rounds: dict[str, Round] = {}  # the newest round heard of each class with pages here
        # the answers acknowledged here in each class's current round: class id -> (round, seat -> its words)
        self.journal: dict[str, tuple[int, dict[str, tuple[str, ...]]]] = {}
        self.announced: dict[str, float] = {}  # when (the writer's ticks) each class's round was last announced
        self._lock = threading.Lock()

    def round(self, class_id: object) -> Round:
        """The newest round of the class this process knows (no store call)."""
        return self.rounds.get(class_id, NO_ROUND) if isinstance(class_id, str) else NO_ROUND

    def own(self, seat: object, class_id: object) -> tuple[str, ...]:
        """The words seat `seat` sent in the class's current round (as this process acknowledged them)."""
        number, seats = self.journal.get(class_id, (0, {})) if isinstance(class_id, str) else (0, {})
        return seats.get(seat, ()) if isinstance(seat, str) and number >= self.round(class_id).number else ()

    def change(self, class_id: str, op: str, text: str, flag: bool, limit: int) -> Round:
        heard = self.round(class_id)
        if op == "hide" and not flag and text not in heard.hidden and heard.is_hidden(text):
            raise Refused(LOOKS_HIDDEN)  # Show on it would change nothing: the word it looks like hides it
        changed = self.room.reach(self.room.store.change_round, class_id, op, text, flag, limit)
        if changed == "gone":
            self.room.lesson(class_id)  # says why: it ended, or is lost
            raise Reconnecting(RECONNECTING)
        if isinstance(changed, str):
            raise Full(MODERATED) if changed == "many" else Refused(NOT_ASKED)
        self.changed(class_id, changed)
        return changed

    def answer(self, class_id: str, seat: object, word: object,
               round_number: object) -> tuple[Round, tuple[str, ...]]:
        """A student's answer, from any page in its seat: the round and the seat's words this round,
        once the store has it; else `Refused` with a sentence, nothing kept and no rate spent."""
        if not (isinstance(seat, str) and 1 <= len(seat) <= 200):
            raise Refused(NO_SEAT)  # the classroom's own: a follower's seat
        word, number = checked_word(word), checked_number(round_number)
        noted, seats = self.journal.get(class_id, (0, {}))
        sent = seats.get(seat, ()) if noted == number else ()
        if word in sent:
            return self.round(class_id), sent
        if len(sent) >= WORDS_PER_STUDENT:
            raise Refused(ENOUGH)
        status, words, wait = self.room.reach(self.room.store.answer, class_id, seat, word, number)
        if status == "soon":
            raise Full(too_soon(wait))
        if status != "ok":
            self._refuse(class_id, number, status)
        with self._lock:
            journal = self.journal.get(class_id)
            if journal is None or journal[0] != number:
                journal = self.journal[class_id] = (number, {})
            # a store emptied before this process wrote its answers again knows only this word:
            # the page's earlier words stay acknowledged here, and `replay` writes them back
            noted = journal[1].get(seat, ())
            words = journal[1][seat] = noted + tuple(w for w in words if w not in noted)
        self.changed(class_id)
        return self.round(class_id), words

    def _refuse(self, class_id: str, number: int, status: str) -> None:
        known = max(self.round(class_id).number, self.journal.get(class_id, (0,))[0]) >= number
        if status == "gone":
            try:
                self.room.lesson(class_id)  # says why: it ended, or is lost
            except Gone as error:
                if str(error) != NO_CLASS or not known:
                    raise
        if status in ("gone", "missing") and known:
            # the store forgot a class or round running here: it restarted, maybe unheard of yet
            self.room.writer.lost()  # every class is read again, restored if led here, its answers written again
            raise Reconnecting(RECONNECTING)
        raise Full(ROUND_FULL) if status == "full" else Refused(
            {"enough": ENOUGH, "other": OTHER_ROUND}.get(status, NOT_OPEN))

    def changed(self, class_id: str, round: Round | None = None) -> None:  # noqa: A002 - a round is the poll's noun
        """The class's round changed here (to `round`, if given): the writer announces it soon."""
        self.heard(class_id, round)
        self.room.writer.soon(("announce", class_id), lambda: self.announce(class_id),
                              at=self.announced.get(class_id, float("-inf")) + POLL_SECONDS)

    def announce(self, class_id: str) -> None:
        self.announced[class_id] = self.room.writer.ticks()  # when it began: a change meanwhile waits its turn
        self.heard(class_id, self.room.store.poll(class_id, announce=True))

    def heard(self, class_id: str, round: Round | None) -> None:  # noqa: A002
        """A round heard of: kept if newer and the class has pages or answers here; its streams woken."""
        if round is None:
            return
        with self._lock:
            known = self.rounds.get(class_id)
            if known is None and not self.room.here(class_id) and class_id not in self.journal:
                return
            if known is not None and (round.number, round.version) <= (known.number, known.version):
                return
            self.rounds[class_id] = round
            journal = self.journal.get(class_id)
            if journal is not None and journal[0] < round.number:
                del self.journal[class_id]
        self.room.tell(class_id)

    def seed(self, class_id: str) -> None:
        """A page of a class this process knew no round of: the store's round, read once."""
        if class_id not in self.rounds:
            self.heard(class_id, self.room.reach(self.room.store.poll, class_id, refusal=None))

    def drop(self, class_id: str) -> None:
        """The class is over: so is its round."""
        with self._lock:
            for kept in (self.rounds, self.journal, self.announced):
                kept.pop(class_id, None)

    def classes(self) -> set[str]:
        with self._lock:
            return set(self.rounds)

    def replay_soon(self, class_id: str, at: float = float("-inf")) -> None:
        self.room.writer.soon(("replay", class_id), lambda: self.replay(class_id), at=at)

    def replay(self, class_id: str) -> None:
        """Write again the answers acknowledged here in the class's round (`RedisStore.replay`); a round
        or class the store lost is tried again every `retry` seconds until its lecturer's process puts it back."""
        room, known, journal = self.room, self.rounds.get(class_id), self.journal.get(class_id)
        status = "other"
        if known is not None and known.number:
            number, pages = journal if journal is not None else (known.number, {})
            status = room.store.replay(class_id, number, dict(pages), known, restore=room.leads(class_id))
        if status == "missing" or (status == "gone" and class_id in room.outage.unsure):
            self.replay_soon(class_id, at=room.writer.ticks() + room.writer.retry_seconds)
        elif status == "gone":  # over, or forgotten by a store that restarted unheard of
            lesson = room.store.lesson(class_id)
            if lesson is None:
                room.writer.lost()  # every class is read again, restored if led here, its answers written again
            elif lesson.ended:
                self.drop(class_id)
        elif status == "other":
            with self._lock:
                if journal is not None and self.journal.get(class_id) is journal:
                    del self.journal[class_id]
        elif status != "same":
            if status == "restored":
                LOG.warning("the round of class %s restored in the store from its lecturer's page", class_id)
            self.changed(class_id)
