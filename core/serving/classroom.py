"""A class: students' pages follow the lecturer's view, and the lecturer sees who follows.

A lecturer's tab *leads* (`Leader`): each change to its view becomes the class's *lesson*, the
view written as a link's query (`core.view.share`), so a class carries only what a link may. Students'
tabs *follow* (`Follower`) until they change something themselves (`Tab.apply` tells a tab's member
of every change). Beside its lesson a class keeps its poll's *round* (`core.serving.poll`): the
lecturer asks, students' pages answer, each answer kept in the store before it is acknowledged.

A store keeps the classes: `MemoryStore` in one process, `RedisStore` across processes
(``EXPLORER_CLASS_STORE=redis://…``). A page's change never waits on it: each process writes on
one thread, which says a store that is away ("reconnecting"), tries it again, and restores a
class the store lost from the pages that lead it. A class lasts
while a lecturer's page is connected, `GRACE_SECONDS` after the last one left. Bounds, each a
sentence when met: classes at once and per address, pages per class (seats taken atomically),
five lessons a second. A secret is kept only as its SHA-256 digest.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

from core.serving.poll import (
    ADDRESS_ANSWERS,
    ANSWER_BURST,
    ANSWER_SECONDS,
    MAX_ANSWERS,
    MAX_MODERATED,
    NO_ROUND,
    WORDS_PER_STUDENT,
    Rate,
    Round,
    checked_flag,
    checked_number,
    checked_prompt,
    checked_word,
    too_many,
    too_soon,
)
from core.view.options import Refused
from core.view.share import from_query, to_query
from core.view.state import View

LOG = logging.getLogger(__name__)
MAX_CLASSES = int(os.environ.get("EXPLORER_MAX_CLASSES", "200"))  # classes running at once, on every process
CLASSES_PER_ADDRESS = 3  # classes one client address may run at once
MAX_FOLLOWERS = int(os.environ.get("EXPLORER_CLASS_FOLLOWERS", "500"))  # pages in one class
# a class ends this long after its last lecturer page left (a reload or a dropped network comes back well within it)
GRACE_SECONDS = float(os.environ.get("EXPLORER_CLASS_GRACE_MINUTES", "2")) * 60
PUBLISH_SECONDS = 0.2  # a class's lessons go out at most this often: at most 5 a second
PRESENCE_SECONDS = 30.0  # a process's count of its students is forgotten this long after it last wrote it
BEAT_SECONDS = 10.0  # how often a process says its lecturer pages are there and writes its counts again
RETRY_SECONDS = 1.0  # how often a store that is away is tried again
POLL_SECONDS = 1.0  # a class's round is announced at most this often by each process (the last change always)
ID = re.compile(r"[A-Za-z0-9_-]{16}")  # secrets.token_urlsafe(12)
SECRET = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:g} minute{'s' * (minutes != 1)}"


NO_CLASS = "No class has this link: it may have ended, or the link was cut off. Ask the lecturer for it again."
AWAY = f"The class has ended: its lecturer's page was closed for over {_minutes(GRACE_SECONDS)}."
LOST = ("The class has ended: the store that keeps classes restarted, and no lecturer's page was there to bring the "
        "class back.")
ENDED = "The lecturer ended the class."
ANOTHER = "The lecturer started another class."
NOT_LECTURER = "This is not the lecturer's link of this class: only the lecturer's link can change what the class sees."
RECONNECTING = ("The class is reconnecting: the store that keeps classes cannot be reached just now. This page keeps "
                "its view, and the class carries on as soon as the store is back.")
CANNOT_START = ("No class can start just now: the store that keeps classes cannot be reached. Try again in a "
                "minute.")
NOT_FOLLOWING = "This page is not in a class: open the class link the lecturer gave to answer."
NOT_ASKED = "No question has been asked in this round: ask the class first."
NOT_OPEN = "No question is open for answers just now: wait for the lecturer to ask one."
OTHER_ROUND = "That question is over: the lecturer has asked another. Answer the one shown now."
ENOUGH = f"You have sent {WORDS_PER_STUDENT} words for this question, as many as one page may."
ROUND_FULL = f"This question has {MAX_ANSWERS:,} answers, as many as one question takes."
MODERATED = f"At most {MAX_MODERATED:,} words of a round can be hidden, and as many approved."
NO_KEY = "This request carries no valid page key; reload the page."


@dataclass(frozen=True)
class Lesson:
    """What a class shows, as every process sees it: the lecturer's view as a link's query."""

    id: str
    version: int
    query: str
    step: int | None
    ends: float  # on the store's wall clock: shared by processes and machines
    ended: str = ""  # why the class is over, once it is

    @property
    def view(self) -> View:
        return lesson_view(self.query)

    def message(self, now: float, reconnecting: bool = False) -> dict:
        """What a page hears of the class at wall-clock time `now`: a class whose lecturer's page
        left too long ago has ended, though nobody published that; while the store is away, a
        class that may only not have heard from its lecturer is reconnecting, not ended."""
        ended = self.ended or (AWAY if now >= self.ends and not reconnecting else "")
        return {"version": self.version, "step": self.step, "ended": ended,
                "reconnecting": RECONNECTING if reconnecting and not ended else ""}


def lesson_of(view: View) -> str:
    """The lesson a view teaches: its link, without the screen it is shown on."""
    return to_query(view.with_(presenter=False, narrow=False))[0]


@functools.lru_cache(maxsize=256)
def lesson_view(query: str) -> View:
    """A lesson's view, read as any link is (never raising); read once for a whole class (a
    `View` is immutable, so every follower may share it)."""
    from urllib.parse import parse_qs

    return from_query(parse_qs(query, keep_blank_values=True)).view


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Away(Exception):
    """The store could not be reached (a Redis server stopped, restarting, or cut off)."""


# --- the stores ---------------------------------------------------------------------------


class MemoryStore:
    """Classes in this process: a class server of one process, and the tests. It is never away."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._classes: dict[str, dict] = {}
        self._presence: dict[str, dict[str, tuple[int, int, float]]] = {}
        self._polls: dict[str, dict] = {}  # class id -> its round, as `_poll_record` makes it
        self._networks = Rate(ADDRESS_ANSWERS, ADDRESS_ANSWERS / 60, clock)  # each network's answers
        self._listeners: list[Callable[[Lesson], None]] = []
        self._round_listeners: list[Callable[[str, Round], None]] = []
        self._lock = threading.Lock()

    def ping(self) -> None:
        """Raises `Away` when the store cannot be reached (never, in memory)."""

    def create(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
               limit: int, per_address: int) -> Lesson:
        now = self.clock()
        with self._lock:
            # a class over is kept a minute past its end (as Redis keeps its hash), so its pages hear why
            self._classes = {k: c for k, c in self._classes.items() if c["ends"] + 60 > now}
            self._polls = {k: p for k, p in self._polls.items() if k in self._classes}
            running = [c for c in self._classes.values() if c["ends"] > now and not c["ended"]]
            _check_room(len(running), sum(c["address"] == address for c in running), limit, per_address)
            record = {"secret": secret_digest, "address": address, "query": query, "step": step, "version": 1,
                      "ends": now + GRACE_SECONDS, "ended": ""}
            self._classes[class_id] = record
            return _lesson(class_id, record)

    def restore(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
                version: int) -> tuple[bool, Lesson | None]:
        """The class again, as its lecturer's page holds it, when the store lost it or let its time
        run out (not when it ended): (whether it was restored, the class as the store has it now;
        None when the id is another secret's). A restored class is a new lesson every process hears."""
        now = self.clock()
        with self._lock:
            record = self._classes.get(class_id)
            if record is not None and record["secret"] != secret_digest:
                return False, None
            if record is not None and (record["ended"] or record["ends"] > now):
                return False, _lesson(class_id, record, now)
            record = {"secret": secret_digest, "address": address, "query": query, "step": step,
                      "version": max(version, record["version"] + 1 if record else 0), "ends": now + GRACE_SECONDS,
                      "ended": ""}
            self._classes[class_id] = record
            lesson = _lesson(class_id, record)
            listeners = list(self._listeners)
        for listener in listeners:
            listener(lesson)
        return True, lesson

    def lesson(self, class_id: str) -> Lesson | None:
        with self._lock:
            record = self._classes.get(class_id)
            return None if record is None else _lesson(class_id, record, self.clock())

    def owner(self, class_id: str) -> tuple[str, str] | None:
        """The class's secret's digest and the address that started it."""
        with self._lock:
            record = self._classes.get(class_id)
            return None if record is None else (record["secret"], record["address"])

    def publish(self, class_id: str, query: str | None, step: int | None, ended: str = "") -> Lesson | None:
        """A new lesson (or only the lecturer seen, when `query` is None; or the class ended); None
        when the class is not running."""
        now = self.clock()
        with self._lock:
            record = self._classes.get(class_id)
            if record is None or record["ended"] or record["ends"] <= now:
                return None
            record["ends"] = now + GRACE_SECONDS
            if query is not None and (query != record["query"] or ended):
                record.update(query=query, step=step, version=record["version"] + 1)
            if ended:
                record.update(ended=ended, version=record["version"] + 1)
                self._polls.pop(class_id, None)  # a round ends with its class
            lesson = _lesson(class_id, record)
            listeners = list(self._listeners)
        for listener in listeners:  # a new lesson, or only a later end: the pages keep both
            listener(lesson)
        return lesson

    def set_presence(self, class_id: str, process: str, connected: int, following: int,
                     limit: int | None = None) -> bool:
        """Write this process's count of the class's pages; with a `limit`, only when every
        process's pages together stay within it (a seat taken). Returns whether it was written."""
        now = self.clock()
        with self._lock:
            counts = self._presence.setdefault(class_id, {})
            others = sum(c for name, (c, _, seen) in counts.items()
                         if name != process and now - seen < PRESENCE_SECONDS)
            if limit is not None and others + connected > limit:
                return False
            counts[process] = (connected, following, now)
            return True

    def presence(self, class_id: str) -> tuple[int, int]:
        now = self.clock()
        with self._lock:
            counts = [(c, f) for c, f, seen in self._presence.get(class_id, {}).values()
                      if now - seen < PRESENCE_SECONDS]
        return sum(c for c, _ in counts), sum(f for _, f in counts)

    def listen(self, listener: Callable[[Lesson], None], lost: Callable[[], None] | None = None) -> None:
        self._listeners.append(listener)

    def close(self) -> None:
        self._listeners.clear()
        self._round_listeners.clear()

    # --- the class's poll (core.serving.poll): each call one step under the lock ---

    def _running(self, class_id: str) -> bool:
        record = self._classes.get(class_id)
        return record is not None and not record["ended"] and record["ends"] > self.clock()

    def poll(self, class_id: str) -> Round | None:
        """The class's round as kept; None when there is none (never asked, lost, or the class is over)."""
        with self._lock:
            record = self._polls.get(class_id) if self._running(class_id) else None
            return None if record is None else _round_of_record(record)

    def change_round(self, class_id: str, op: str, text: str, flag: bool, limit: int) -> Round | str:
        """The lecturer's change (`ROUND_CHANGES`), and the round after it; or why not: "gone" (the
        class is not running), "none" (no question asked), "many" (`limit` words moderated)."""
        with self._lock:
            if not self._running(class_id):
                return "gone"
            record = self._polls.setdefault(class_id, _poll_record())
            refused = _change(record, op, text, flag, limit)
            return refused or _round_of_record(record)

    def answer(self, class_id: str, key: str, address: str, word: str, number: int, per_page: int,
               limit: int) -> tuple[str, tuple[str, ...], float]:
        """Page `key`'s answer `word` to round `number`, from network `address`: ("ok", the
        page's words this round, 0) when it is kept (a word the page sent already is kept once);
        else why not, with the words: "gone", "missing" (the class has no round), "closed",
        "other" (another round is open), "enough" (`per_page` words sent), "full" (`limit`
        answers taken), "rate" (the network sent ADDRESS_ANSWERS a minute: the seconds to wait)."""
        with self._lock:
            if not self._running(class_id):
                return "gone", (), 0.0
            record = self._polls.get(class_id)
            if record is None:
                return "missing", (), 0.0
            sent = record["pages"].get(key, ())
            status = _refusal(record, number, word, sent, per_page, limit)
            if status:
                return status, sent, 0.0
            if word not in sent:
                wait = self._networks.take(address)
                if wait:
                    return "rate", sent, wait
                _keep(record, key, (*sent, word))
            return "ok", record["pages"][key], 0.0

    def restore_round(self, class_id: str, round: Round) -> bool:  # noqa: A002 - a round is the poll's noun
        """The round again, without its answers (the pages' processes write those again), when
        the store has none for the running class; whether it was written."""
        with self._lock:
            if not self._running(class_id) or class_id in self._polls:
                return False
            self._polls[class_id] = _poll_record(round)
            return True

    def replay(self, class_id: str, number: int, version: int, pages: Mapping[str, tuple[str, ...]],
               per_page: int, limit: int) -> str:
        """The answers a process acknowledged in round `number`, written again where the store
        lost them (each page's words kept once), and the version moved past `version`: "done"
        (or "same": nothing was lost, and the version is that far already); else "gone",
        "missing" (no round yet), "other" (the store has another round)."""
        with self._lock:
            if not self._running(class_id):
                return "gone"
            record = self._polls.get(class_id)
            if record is None:
                return "missing"
            if record["number"] != number:
                return "other"
            answers = record["answers"]
            for key, words in pages.items():
                kept = record["pages"].get(key, ())
                for word in words:
                    if word not in kept and len(kept) < per_page and record["answers"] < limit:
                        kept = (*kept, word)
                        _keep(record, key, kept)
            if record["answers"] == answers and record["version"] >= version:
                return "same"
            record["version"] = max(record["version"], version) + 1
            return "done"

    def listen_rounds(self, listener: Callable[[str, Round], None]) -> None:
        """`listener(class_id, round)` hears every round announced (`announce_round`)."""
        self._round_listeners.append(listener)

    def announce_round(self, class_id: str) -> Round | None:
        """Tell every listener the class's round as it is now (None: it has none)."""
        found = self.poll(class_id)
        if found is not None:
            for listener in list(self._round_listeners):
                listener(class_id, found)
        return found


def _check_room(running: int, from_address: int, limit: int, per_address: int) -> None:
    if running >= limit:
        raise Full(f"This server runs at most {limit:,} classes at once, and that many are running; "
                   "try again later.")
    if from_address >= per_address:
        raise Full(f"At most {per_address} classes can run at once from one network address; end one (its End the "
                   f"class button), or close its lecturer's page: a class ends {_minutes(GRACE_SECONDS)} after its "
                   "lecturer's page closed.")


ROUND_CHANGES = ("ask", "close", "clear", "hide", "approve", "review")  # what a lecturer does to a round


def _poll_record(round: Round = NO_ROUND) -> dict:  # noqa: A002
    """A round as the memory store keeps it (answers, if any, are written again by `replay`)."""
    return {"number": round.number, "prompt": round.prompt, "open": round.open, "review": round.review,
            "version": round.version + 1 if round.number else 0, "answers": 0, "counts": {},
            "hidden": set(round.hidden), "approved": set(round.approved), "pages": {}}


def _round_of_record(record: dict) -> Round:
    return Round(record["number"], record["prompt"], record["open"], record["review"], dict(record["counts"]),
                 frozenset(record["hidden"]), frozenset(record["approved"]), record["answers"],
                 len(record["pages"]), record["version"])


def _change(record: dict, op: str, text: str, flag: bool, limit: int) -> str:
    """A lecturer's change to a round in memory (what `RedisStore._CHANGE` does in Redis): "" when done."""
    before = dict(record, hidden=set(record["hidden"]), approved=set(record["approved"]))
    if op in ("ask", "clear"):
        asked = op == "ask"
        record.update(number=record["number"] + 1, prompt=text if asked else "", open=asked,
                      review=flag if asked else record["review"], answers=0, counts={}, hidden=set(), approved=set(),
                      pages={})
    elif op == "review":
        record["review"] = flag
    elif not record["prompt"]:
        return "none"
    elif op == "close":
        record["open"] = False
    else:
        words = record["hidden" if op == "hide" else "approved"]
        if flag and text not in words and len(words) >= limit:
            return "many"
        (words.add if flag else words.discard)(text)
    if record != before:
        record["version"] += 1
    return ""


def _refusal(record: dict, number: int, word: str, sent: tuple[str, ...], per_page: int, limit: int) -> str:
    """Why the memory store does not keep an answer ("" when it does; a word sent again is kept once)."""
    if not record["open"]:
        return "closed"
    if record["number"] != number:
        return "other"
    if word in sent:
        return ""
    if len(sent) >= per_page:
        return "enough"
    return "full" if record["answers"] >= limit else ""


def _keep(record: dict, key: str, words: tuple[str, ...]) -> None:
    """Page `key`'s words are now `words`, its last one new."""
    if record["pages"].get(key, ()) == words:
        return
    record["pages"][key] = words
    record["counts"][words[-1]] = record["counts"].get(words[-1], 0) + 1
    record["answers"] += 1
    record["version"] += 1


def _lesson(class_id: str, record: dict, now: float | None = None) -> Lesson:
    ends = float(record["ends"])  # Redis gives every field as text
    ended = record["ended"] or (AWAY if now is not None and ends <= now else "")
    return Lesson(class_id, int(record["version"]), record["query"],
                  None if record["step"] in (None, "") else int(record["step"]), ends, ended)


def _reaching(method):
    """A RedisStore method whose lost connection is `Away` (the caller says so, and tries again)."""

    @functools.wraps(method)
    def reach(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except self.unreachable as error:
            raise Away(str(error)) from None

    return reach


class RedisStore:
    """Classes in Redis, shared by every process of a class server (and every machine of one).

    A class is a hash that expires with the class; the running classes are a sorted set by
    when each ends (their count is the bound, read and written in one Lua script), and so are
    each address's; each process's count of its students is a field of the class's presence
    hash, a seat taken in one script too; a new lesson is published on one channel that every
    process listens to. A call while Redis is away raises `Away` within a second or two: one
    retry (a connection Redis closed as it restarted is opened again), no waiting between.
    """

    CHANNEL = "explorer:lessons"
    ROUNDS = "explorer:rounds"  # every class's round, announced
    _CREATE = """
    local now, limit, per_address = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
    if redis.call('ZCARD', KEYS[1]) >= limit then return 1 end
    if redis.call('ZCARD', KEYS[2]) >= per_address then return 2 end
    redis.call('ZADD', KEYS[1], ARGV[5], ARGV[4])
    redis.call('ZADD', KEYS[2], ARGV[5], ARGV[4])
    redis.call('EXPIRE', KEYS[2], math.ceil(ARGV[5] - now) + 60)
    redis.call('HSET', KEYS[3], 'secret', ARGV[6], 'address', ARGV[7], 'query', ARGV[8], 'step', ARGV[9],
               'version', 1, 'ends', ARGV[5], 'ended', '')
    redis.call('EXPIRE', KEYS[3], math.ceil(ARGV[5] - now) + 60)
    return 0
    """

    # the class again, unless it ended or runs: {1 when restored, the class's fields}; false for another secret's
    _RESTORE = """
    local now, ends = tonumber(ARGV[1]), tonumber(ARGV[2])
    local record = redis.call('HMGET', KEYS[1], 'secret', 'ended', 'ends', 'version')
    if record[1] and record[1] ~= ARGV[4] then return false end
    if record[1] and (record[2] ~= '' or tonumber(record[3]) > now) then
        return {0, redis.call('HGETALL', KEYS[1])}
    end
    local version = math.max(tonumber(ARGV[8]), tonumber(record[4] or '-1') + 1)
    redis.call('HSET', KEYS[1], 'secret', ARGV[4], 'address', ARGV[5], 'query', ARGV[6], 'step', ARGV[7],
               'version', version, 'ends', ends, 'ended', '')
    redis.call('EXPIRE', KEYS[1], math.ceil(ends - now) + 60)
    redis.call('ZADD', KEYS[2], ends, ARGV[3])
    redis.call('ZADD', KEYS[3], ends, ARGV[3])
    redis.call('EXPIRE', KEYS[3], math.ceil(ends - now) + 60)
    return {1, redis.call('HGETALL', KEYS[1])}
    """

    # one step, so two processes publishing at once never leave a version with another's query,
    # and an end is never undone: the class's end time moves in both sorted sets (the running
    # classes, and its address's), a new query takes the next version, an end takes one more;
    # the class's round (KEYS[3..]) lives as long as the class, and ends with it
    _PUBLISH = """
    local now, grace = tonumber(ARGV[1]), tonumber(ARGV[2])
    local record = redis.call('HMGET', KEYS[1], 'ends', 'ended', 'query', 'address')
    if not record[1] or record[2] ~= '' or tonumber(record[1]) <= now then return false end
    local ends = now + grace
    local by_address = 'explorer:classes:' .. record[4]
    redis.call('HSET', KEYS[1], 'ends', ends)
    if ARGV[4] == '1' and ARGV[5] ~= record[3] then
        redis.call('HSET', KEYS[1], 'query', ARGV[5], 'step', ARGV[6])
        redis.call('HINCRBY', KEYS[1], 'version', 1)
    end
    if ARGV[7] ~= '' then
        redis.call('HSET', KEYS[1], 'ended', ARGV[7])
        redis.call('HINCRBY', KEYS[1], 'version', 1)
        redis.call('ZREM', KEYS[2], ARGV[3])
        redis.call('ZREM', by_address, ARGV[3])
    else
        redis.call('ZADD', KEYS[2], ends, ARGV[3])
        redis.call('ZADD', by_address, ends, ARGV[3])
        redis.call('EXPIRE', by_address, math.ceil(grace) + 60)
    end
    redis.call('EXPIRE', KEYS[1], math.ceil(grace) + 60)
    for i = 3, #KEYS do
        if ARGV[7] ~= '' then redis.call('DEL', KEYS[i]) else redis.call('EXPIRE', KEYS[i], math.ceil(grace) + 60) end
    end
    return redis.call('HGETALL', KEYS[1])
    """

    # --- the class's round: KEYS[1] the class, then `_poll_keys`; ARGV[1] the time -------------
    # the round's fields (a hash), its words' counts (a hash), each page's words (a hash: key ->
    # words with spaces between), the hidden and the approved words (sets); each script checks
    # the class runs, and gives every key it writes the class's time to live
    _ROUND = """
    local function running()
        local class = redis.call('HMGET', KEYS[1], 'ended', 'ends')
        return class[2] and class[1] == '' and tonumber(class[2]) > tonumber(ARGV[1])
    end
    local function live()
        local ttl = redis.call('PTTL', KEYS[1])
        if ttl > 0 then for i = 2, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
    end
    local function snapshot()
        return {redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), redis.call('SMEMBERS', KEYS[5]),
                redis.call('SMEMBERS', KEYS[6]), redis.call('HLEN', KEYS[4])}
    end
    local function keep(key, sent, word)
        if sent == '' then sent = word else sent = sent .. ' ' .. word end
        redis.call('HSET', KEYS[4], key, sent)
        redis.call('HINCRBY', KEYS[3], word, 1)
        redis.call('HINCRBY', KEYS[2], 'answers', 1)
        redis.call('HINCRBY', KEYS[2], 'version', 1)
        return sent
    end
    local function words_of(sent)
        local words = {}
        for word in string.gmatch(sent, '%S+') do words[#words + 1] = word; words[word] = true end
        return words
    end
    """

    _READ = _ROUND + """
    if not running() or redis.call('EXISTS', KEYS[2]) == 0 then return false end
    return snapshot()
    """

    # ARGV: time, op, text, flag ('1'/'0'), how many words may be hidden (and approved)
    _CHANGE = _ROUND + """
    if not running() then return 'gone' end
    local op, text, flag = ARGV[2], ARGV[3], ARGV[4]
    if redis.call('EXISTS', KEYS[2]) == 0 then
        redis.call('HSET', KEYS[2], 'number', 0, 'prompt', '', 'open', '0', 'review', '0', 'answers', 0, 'version', 0)
    end
    local poll = redis.call('HMGET', KEYS[2], 'number', 'prompt', 'open', 'review')
    local changed = true
    if op == 'ask' or op == 'clear' then
        redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
        if op == 'ask' then
            redis.call('HSET', KEYS[2], 'prompt', text, 'open', '1', 'review', flag)
        else
            redis.call('HSET', KEYS[2], 'prompt', '', 'open', '0')
        end
        redis.call('HSET', KEYS[2], 'number', tonumber(poll[1]) + 1, 'answers', 0)
    elseif op == 'review' then
        changed = poll[4] ~= flag
        redis.call('HSET', KEYS[2], 'review', flag)
    elseif poll[2] == '' then
        return 'none'
    elseif op == 'close' then
        changed = poll[3] == '1'
        redis.call('HSET', KEYS[2], 'open', '0')
    else
        local set = KEYS[6]
        if op == 'hide' then set = KEYS[5] end
        if flag == '0' then
            changed = redis.call('SREM', set, text) == 1
        elseif redis.call('SISMEMBER', set, text) == 1 then
            changed = false
        elseif redis.call('SCARD', set) >= tonumber(ARGV[5]) then
            return 'many'
        else
            redis.call('SADD', set, text)
        end
    end
    if changed then redis.call('HINCRBY', KEYS[2], 'version', 1) end
    live()
    return snapshot()
    """

    # ARGV: time, round number, page key, word, words a page may send, answers a round takes, answers a
    # network may send a minute; KEYS[7] the network's bucket (tokens, when), shared by every class
    _ANSWER = _ROUND + """
    if not running() then return {'gone', ''} end
    local poll = redis.call('HMGET', KEYS[2], 'number', 'open', 'answers')
    if not poll[1] then return {'missing', ''} end
    local sent = redis.call('HGET', KEYS[4], ARGV[3]) or ''
    if poll[2] ~= '1' then return {'closed', sent} end
    if poll[1] ~= ARGV[2] then return {'other', sent} end
    local words = words_of(sent)
    if words[ARGV[4]] then return {'ok', sent} end
    if #words >= tonumber(ARGV[5]) then return {'enough', sent} end
    if tonumber(poll[3]) >= tonumber(ARGV[6]) then return {'full', sent} end
    local now, size = tonumber(ARGV[1]), tonumber(ARGV[7])
    local bucket = redis.call('HMGET', KEYS[7], 'tokens', 'at')
    local since = math.max(0, now - tonumber(bucket[2] or now))
    local tokens = math.min(size, tonumber(bucket[1] or size) + since * size / 60)
    if tokens < 1 then return {'rate', sent, tostring((1 - tokens) * 60 / size)} end
    sent = keep(ARGV[3], sent, ARGV[4])
    live()
    redis.call('HSET', KEYS[7], 'tokens', tostring(tokens - 1), 'at', ARGV[1])
    redis.call('EXPIRE', KEYS[7], 61)  -- full again within a minute: as good as gone
    return {'ok', sent}
    """

    # ARGV: time, number, prompt, open, review, version, hidden words, approved words (JSON)
    _RESTORE_ROUND = _ROUND + """
    if not running() or redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
    redis.call('HSET', KEYS[2], 'number', ARGV[2], 'prompt', ARGV[3], 'open', ARGV[4], 'review', ARGV[5],
               'answers', 0, 'version', ARGV[6])
    for _, word in ipairs(cjson.decode(ARGV[7])) do redis.call('SADD', KEYS[5], word) end
    for _, word in ipairs(cjson.decode(ARGV[8])) do redis.call('SADD', KEYS[6], word) end
    live()
    return 1
    """

    # ARGV: time, number, the version heard, {page key: [words]} (JSON), words a page may send, answers a round takes
    _REPLAY = _ROUND + """
    if not running() then return 'gone' end
    local poll = redis.call('HMGET', KEYS[2], 'number', 'version')
    if not poll[1] then return 'missing' end
    if poll[1] ~= ARGV[2] then return 'other' end
    local answers = redis.call('HGET', KEYS[2], 'answers')
    for key, journal in pairs(cjson.decode(ARGV[4])) do
        local sent = redis.call('HGET', KEYS[4], key) or ''
        local words = words_of(sent)
        for _, word in ipairs(journal) do
            local answers = tonumber(redis.call('HGET', KEYS[2], 'answers'))
            if not words[word] and #words < tonumber(ARGV[5]) and answers < tonumber(ARGV[6]) then
                sent = keep(key, sent, word)
                words[#words + 1] = word; words[word] = true
            end
        end
    end
    local version = tonumber(redis.call('HGET', KEYS[2], 'version'))
    if redis.call('HGET', KEYS[2], 'answers') == answers and version >= tonumber(ARGV[3]) then return 'same' end
    redis.call('HSET', KEYS[2], 'version', math.max(version, tonumber(ARGV[3])) + 1)
    live()
    return 'done'
    """

    # this process's count of a class's pages; with a limit (ARGV[6]), only when every process's
    # fresh counts stay within it: a seat, taken in one step against every other process's joins
    _PRESENCE = """
    local now, fresh = tonumber(ARGV[4]), tonumber(ARGV[5])
    if ARGV[6] ~= '' then
        local others = 0
        local counts = redis.call('HGETALL', KEYS[1])
        for i = 1, #counts, 2 do
            local connected, _, seen = string.match(counts[i + 1], '^(%d+) (%d+) (%S+)$')
            if counts[i] ~= ARGV[1] and connected and now - tonumber(seen) < fresh then
                others = others + tonumber(connected)
            end
        end
        if others + tonumber(ARGV[2]) > tonumber(ARGV[6]) then return 0 end
    end
    redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[4])
    redis.call('EXPIRE', KEYS[1], math.ceil(fresh) * 4)
    return 1
    """

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.url, self.clock = url, clock
        self.unreachable = (redis.ConnectionError, redis.TimeoutError)
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5, socket_connect_timeout=2,
                                          health_check_interval=30, retry=Retry(NoBackoff(), 1))
        self._create = self.redis.register_script(self._CREATE)
        self._restore = self.redis.register_script(self._RESTORE)
        self._publish = self.redis.register_script(self._PUBLISH)
        self._presence = self.redis.register_script(self._PRESENCE)
        self._read = self.redis.register_script(self._READ)
        self._change = self.redis.register_script(self._CHANGE)
        self._answer = self.redis.register_script(self._ANSWER)
        self._restore_round = self.redis.register_script(self._RESTORE_ROUND)
        self._replay = self.redis.register_script(self._REPLAY)
        self._round_listeners: list[Callable[[str, Round], None]] = []
        self._listeners: list[Callable[[Lesson], None]] = []
        self._lost: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None
        self._subscribed = threading.Event()
        self._closed = threading.Event()

    @staticmethod
    def _key(class_id: str) -> str:
        return f"explorer:class:{class_id}"

    @classmethod
    def _poll_keys(cls, class_id: str) -> list[str]:
        """The class, then its round's keys: fields, counts, pages, hidden, approved."""
        poll = f"explorer:poll:{class_id}"
        return [cls._key(class_id), poll, f"{poll}:counts", f"{poll}:pages", f"{poll}:hidden", f"{poll}:approved"]

    @_reaching
    def ping(self) -> None:
        """Raises `Away` until Redis answers and this process hears lessons again (what is
        published before its subscription is back would not reach its pages)."""
        self.redis.ping()
        if self._thread is not None and not self._subscribed.is_set():
            raise Away("not yet subscribed to the lessons again")

    @_reaching
    def create(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
               limit: int, per_address: int) -> Lesson:
        now = self.clock()
        ends = now + GRACE_SECONDS
        refused = self._create(keys=["explorer:classes", f"explorer:classes:{address}", self._key(class_id)],
                               args=[now, limit, per_address, class_id, ends, secret_digest, address, query,
                                     "" if step is None else step])
        if refused:
            _check_room(limit if refused == 1 else 0, per_address, limit, per_address)
        return Lesson(class_id, 1, query, step, ends)

    @_reaching
    def restore(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
                version: int) -> tuple[bool, Lesson | None]:
        now = self.clock()
        found = self._restore(keys=[self._key(class_id), "explorer:classes", f"explorer:classes:{address}"],
                              args=[now, now + GRACE_SECONDS, class_id, secret_digest, address, query,
                                    "" if step is None else step, version])
        if not found:
            return False, None
        restored, fields = found
        lesson = _lesson(class_id, dict(zip(fields[::2], fields[1::2], strict=True)), now)
        if restored:
            self._announce(lesson)
        return bool(restored), lesson

    @_reaching
    def lesson(self, class_id: str) -> Lesson | None:
        record = self.redis.hgetall(self._key(class_id))
        return _lesson(class_id, record, self.clock()) if record else None

    @_reaching
    def owner(self, class_id: str) -> tuple[str, str] | None:
        secret, address = self.redis.hmget(self._key(class_id), "secret", "address")
        return None if secret is None else (secret, address or "")

    @_reaching
    def publish(self, class_id: str, query: str | None, step: int | None, ended: str = "") -> Lesson | None:
        found = self._publish(keys=[self._key(class_id), "explorer:classes", *self._poll_keys(class_id)[1:]],
                              args=[self.clock(), GRACE_SECONDS, class_id, "" if query is None else "1", query or "",
                                    "" if step is None else step, ended])
        if not found:
            return None
        lesson = _lesson(class_id, dict(zip(found[::2], found[1::2], strict=True)))
        self._announce(lesson)  # a new lesson, or only a later end: every process's pages keep both
        return lesson

    @_reaching
    def poll(self, class_id: str) -> Round | None:
        found = self._read(keys=self._poll_keys(class_id), args=[self.clock()])
        return _round_of_snapshot(found) if found else None

    @_reaching
    def change_round(self, class_id: str, op: str, text: str, flag: bool, limit: int) -> Round | str:
        found = self._change(keys=self._poll_keys(class_id), args=[self.clock(), op, text, int(flag), limit])
        return found if isinstance(found, str) else _round_of_snapshot(found)

    @_reaching
    def answer(self, class_id: str, key: str, address: str, word: str, number: int, per_page: int,
               limit: int) -> tuple[str, tuple[str, ...], float]:
        status, sent, *wait = self._answer(keys=[*self._poll_keys(class_id), f"explorer:answers:{address}"],
                                           args=[self.clock(), number, key, word, per_page, limit,
                                                 ADDRESS_ANSWERS])
        return status, tuple(sent.split()), float(wait[0]) if wait else 0.0

    @_reaching
    def restore_round(self, class_id: str, round: Round) -> bool:  # noqa: A002
        return bool(self._restore_round(keys=self._poll_keys(class_id), args=[
            self.clock(), round.number, round.prompt, int(round.open), int(round.review), round.version + 1,
            json.dumps(sorted(round.hidden), ensure_ascii=False), json.dumps(sorted(round.approved),
                                                                             ensure_ascii=False)]))

    @_reaching
    def replay(self, class_id: str, number: int, version: int, pages: Mapping[str, tuple[str, ...]],
               per_page: int, limit: int) -> str:
        return self._replay(keys=self._poll_keys(class_id), args=[
            self.clock(), number, version, json.dumps({k: list(w) for k, w in pages.items()}, ensure_ascii=False),
            per_page, limit])

    def listen_rounds(self, listener: Callable[[str, Round], None]) -> None:
        """`listener(class_id, round)` hears every round any process announces (`listen` subscribes)."""
        self._round_listeners.append(listener)

    @_reaching
    def announce_round(self, class_id: str) -> Round | None:
        """The class's round read, and sent to every process."""
        found = self.poll(class_id)
        if found is not None:
            self.redis.publish(self.ROUNDS, json.dumps({"id": class_id, **asdict(found), "counts": dict(found.counts),
                                                        "hidden": sorted(found.hidden),
                                                        "approved": sorted(found.approved)}, ensure_ascii=False))
        return found

    def _announce(self, lesson: Lesson) -> None:
        self.redis.publish(self.CHANNEL, json.dumps({"id": lesson.id, "version": lesson.version, "query": lesson.query,
                                                     "step": lesson.step, "ends": lesson.ends, "ended": lesson.ended}))

    @_reaching
    def set_presence(self, class_id: str, process: str, connected: int, following: int,
                     limit: int | None = None) -> bool:
        return bool(self._presence(keys=[f"explorer:presence:{class_id}"],
                                   args=[process, connected, following, self.clock(), PRESENCE_SECONDS,
                                         "" if limit is None else limit]))

    @_reaching
    def presence(self, class_id: str) -> tuple[int, int]:
        now, connected, following = self.clock(), 0, 0
        for value in self.redis.hgetall(f"explorer:presence:{class_id}").values():
            c, f, seen = value.split()
            if now - float(seen) < PRESENCE_SECONDS:
                connected, following = connected + int(c), following + int(f)
        return connected, following

    def listen(self, listener: Callable[[Lesson], None], lost: Callable[[], None] | None = None) -> None:
        """`listener` hears every lesson published from now on, by any process, and `lost` is
        told when the subscription was cut (it returns once this process is subscribed, so
        nothing published after it is missed, or after 10 s when Redis is away)."""
        self._listeners.append(listener)
        if lost is not None:
            self._lost.append(lost)
        if self._thread is None:
            self._thread = threading.Thread(target=self._listen, name="class-lessons", daemon=True)
            self._thread.start()
        self._subscribed.wait(10)

    def _listen(self) -> None:
        """Every process hears every lesson. It polls its subscription (a blocking read would
        time out with the client's socket timeout on a quiet channel); a lost connection is
        said (`lost`) and made again, and what was published meanwhile the pages read from the
        store once it is back (`Classroom`)."""
        while not self._closed.is_set():
            pubsub = self.redis.pubsub()
            try:
                pubsub.subscribe(self.CHANNEL, self.ROUNDS)
                while not self._closed.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._subscribed.set()  # one SUBSCRIBE: both channels are subscribed by its first answer
                    elif message["type"] == "message" and message["channel"] == self.ROUNDS:
                        self._heard_round(message["data"])
                    elif message["type"] == "message":
                        self._heard(message["data"])
            except Exception as error:
                if self._closed.is_set():  # closed under it (`close`)
                    return
                if not isinstance(error, self.unreachable):  # a fault: logged, and the listening goes on
                    LOG.exception("listening to the class lessons failed")
                self._subscribed.clear()
                for lost in list(self._lost):
                    lost()
                self._closed.wait(RETRY_SECONDS / 4)
            finally:
                pubsub.close()

    def close(self) -> None:
        """Stop listening, and let go of the connections."""
        self._closed.set()  # the listener stops within a second
        self.redis.close()

    def _heard(self, data: str) -> None:
        try:
            sent = json.loads(data)
            lesson = Lesson(sent["id"], int(sent["version"]), sent["query"], sent["step"], float(sent["ends"]),
                            sent["ended"])
        except (ValueError, KeyError, TypeError):  # not one of ours: ignored
            return
        for listener in list(self._listeners):
            listener(lesson)


    def _heard_round(self, data: str) -> None:
        try:
            sent = json.loads(data)
            found = Round(int(sent["number"]), str(sent["prompt"]), bool(sent["open"]), bool(sent["review"]),
                          {str(w): int(c) for w, c in sent["counts"].items()}, frozenset(sent["hidden"]),
                          frozenset(sent["approved"]), int(sent["answers"]), int(sent["students"]),
                          int(sent["version"]))
        except (ValueError, KeyError, TypeError, AttributeError):  # not one of ours: ignored
            return
        for listener in list(self._round_listeners):
            listener(str(sent["id"]), found)


def _round_of_snapshot(found: list) -> Round:
    """A round as `RedisStore._ROUND`'s `snapshot()` reads it."""
    fields, counts, hidden, approved, students = found
    poll = dict(zip(fields[::2], fields[1::2], strict=True))
    return Round(int(poll["number"]), poll["prompt"], poll["open"] == "1", poll["review"] == "1",
                 {word: int(count) for word, count in zip(counts[::2], counts[1::2], strict=True)},
                 frozenset(hidden), frozenset(approved), int(poll["answers"]), int(students), int(poll["version"]))


def store_from_environment() -> MemoryStore | RedisStore:
    url = os.environ.get("EXPLORER_CLASS_STORE", "").strip()
    return RedisStore(url) if url else MemoryStore()


# --- who leads and who follows --------------------------------------------------------------


@dataclass(eq=False)
class Leader:
    """A tab that leads a class: each change to its view is the class's newest lesson, which
    the process's writer publishes (`Classroom.teach`). It holds what the store holds of the
    class's ownership (the secret's digest, the address that started it), so the class can be
    restored from it if the store loses it."""

    classroom: Classroom
    class_id: str
    digest: str
    address: str

    def changed(self, view: View) -> None:
        self.classroom.teach(self, view)


@dataclass(eq=False)
class Follower:
    """A student's tab in a class: following until its view leaves the lesson it was shown."""

    classroom: Classroom
    class_id: str
    following: bool = True
    shown: int = 0  # the version of the lesson last applied to the tab
    lesson: str | None = None  # that lesson's query, as `lesson_of` writes it

    def changed(self, view: View) -> None:
        if self.following and self.lesson is not None and lesson_of(view) != self.lesson:
            self.following = False
            self.classroom.counted(self.class_id)


@dataclass(eq=False)
class Led:
    """A class led from this process: its lecturer pages connected here, the newest lesson they
    asked for and the one published, and the newest version heard of."""

    leader: Leader  # the ownership to restore it with
    query: str
    step: int | None
    sent: str  # the lesson last published
    sent_at: float = float("-inf")  # when (the writer's ticks), for PUBLISH_SECONDS
    version: int = 1
    pages: dict[str, Leader] = field(default_factory=dict)  # page key -> its leader, while its stream is open
    left: float = 0.0  # when (the store's clock) its last page here left, or it was led without one

    def alive(self, now: float) -> bool:
        """Whether a lecturer's page holds the class: connected here, or gone less than GRACE_SECONDS ago."""
        return bool(self.pages) or now - self.left < GRACE_SECONDS


class Classroom:
    """This process's part of every class: the store, the pages it serves, and the writer.

    Calls from a request (start, lead, end, join, a seat) read or write the store at once and
    say a store that is away as `Reconnecting`, having changed nothing. What a page's change
    causes (a new lesson, a count) is left to the writer thread, which publishes and writes
    once the store can be reached, and every `beat` seconds says its lecturer pages are there.
    After the store was away it restores the classes led here and reads the others again.
    """

    def __init__(self, store: MemoryStore | RedisStore | None = None, *, beat: float = BEAT_SECONDS,
                 retry: float = RETRY_SECONDS, ticks: Callable[[], float] = time.monotonic) -> None:
        self.store = store if store is not None else store_from_environment()
        self.beat_seconds, self.retry_seconds = beat, retry
        self.ticks = ticks  # the writer's own clock (a test moves it by hand): when to publish, beat, retry
        self.process = uuid.uuid4().hex
        self.away = False  # the store could not be reached at the last try
        self._back_at = float("-inf")  # when (the writer's ticks) it answered again
        self._pages: dict[str, dict[str, Follower]] = {}  # class id -> page key -> its follower, connected here
        self._led: dict[str, Led] = {}  # class id -> the class as its lecturer pages here hold it
        self._dirty: set[str] = set()  # classes whose counts here are to be written
        self._unsure: dict[str, float] = {}  # classes to read again after the store was away -> until when
        self._versions: dict[str, int] = {}  # the newest version heard of each class with pages here
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._counting = threading.Lock()  # a count is read and written together: an older one is never written last
        self._beating = threading.Lock()
        self._writer: threading.Thread | None = None
        self._closed = False
        self._heard: list[Callable[[str | None], None]] = []  # told a class whose state changed (None: every class)
        self._lessons: list[Callable[[Lesson], None]] = []  # told every lesson heard
        self._rounds: dict[str, Round] = {}  # the newest round heard of each class with pages here
        # the answers acknowledged here in each class's current round: class id -> (round, page key -> its words)
        self._journal: dict[str, tuple[int, dict[str, tuple[str, ...]]]] = {}
        self._announce: set[str] = set()  # classes whose round changed here since it was last announced
        self._announced: dict[str, float] = {}  # when (the writer's ticks) each was announced
        self._replay: set[str] = set()  # classes whose answers here are to be written again (the store was away)
        self._pages_rate = Rate(ANSWER_BURST, 1 / ANSWER_SECONDS, self.clock)  # a page's answers (on this process)
        self.store.listen_rounds(self._hear_round)
        self.store.listen(self._hear, lost=self.lost)

    @property
    def clock(self) -> Callable[[], float]:
        """The wall clock a class's times are on (the store's)."""
        return self.store.clock

    # --- calls from a request ------------------------------------------------------------------

    def _reach(self, call: Callable, *args, refusal: str = RECONNECTING):
        """`call(*args)` on the store; a store that is away is refused with `refusal`."""
        try:
            return call(*args)
        except Away:
            self.lost()
            raise Reconnecting(refusal) from None

    def start(self, tab, address: str) -> tuple[Lesson, str]:
        """A new class led by `tab`, its lesson that tab's view; returns it and the secret."""
        class_id, secret = secrets.token_urlsafe(12), secrets.token_urlsafe(24)
        view = tab.view
        lesson = self._reach(self.store.create, class_id, digest(secret), address, lesson_of(view), view.step,
                             MAX_CLASSES, CLASSES_PER_ADDRESS, refusal=CANNOT_START)
        before = tab.member
        leader = Leader(self, class_id, digest(secret), address)
        with self._lock:
            self._led[class_id] = Led(leader, lesson.query, lesson.step, sent=lesson.query, left=self.clock())
            self._stir()  # its lecturer's page is said to be there from now on
        tab.member = leader
        if isinstance(before, Leader):  # a page leads one class: the one it led ends (said to its students)
            try:
                if self.store.publish(before.class_id, None, None, ended=ANOTHER) is not None:
                    self._forget(before.class_id)
            except Away:  # left to end when its time runs out, its page no longer leading it
                self.lost()
        return lesson, secret

    def lesson(self, class_id: object) -> Lesson:
        """The class's lesson; raises `Refused` for an id no class has, or a class that ended.
        A class led here that the store lost is restored first."""
        if not isinstance(class_id, str) or not ID.fullmatch(class_id):
            raise Gone(NO_CLASS)
        lesson = self._reach(self.store.lesson, class_id)
        if lesson is None or lesson.ended == AWAY:  # lost by the store, or its time ran out while it was away
            now = self.clock()
            with self._lock:
                led = self._led.get(class_id)
            if led is not None and led.alive(now):
                lesson = self._reach(self._restore, led)
            elif lesson is None and self.ticks() - self._back_at < self.beat_seconds + 2 * self.retry_seconds:
                raise Reconnecting(RECONNECTING)  # the store is just back: the class may not be restored yet
        if lesson is None:
            raise Gone(NO_CLASS)
        if lesson.ended:
            raise Gone(lesson.ended)
        return lesson

    def check(self, class_id: object, secret: object) -> Lesson:
        """The class, when `secret` is its lecturer's; raises `Forbidden` otherwise."""
        return self._checked(class_id, secret)[0]

    def _checked(self, class_id: object, secret: object) -> tuple[Lesson, tuple[str, str]]:
        lesson = self.lesson(class_id)
        kept, address = self._reach(self.store.owner, lesson.id) or ("", "")
        if not isinstance(secret, str) or not SECRET.fullmatch(secret) or not hmac.compare_digest(
                digest(secret), kept):
            raise Forbidden(NOT_LECTURER)
        return lesson, (kept, address)

    def lead(self, class_id: object, secret: object) -> tuple[Leader, Lesson]:
        """A leader of the class for a page that opened the lecturer's link, and the lesson to
        show it; the caller makes it the page's member once the page shows the lesson."""
        lesson, (kept, address) = self._checked(class_id, secret)
        leader = Leader(self, lesson.id, kept, address)
        with self._lock:
            if lesson.id not in self._led:
                self._led[lesson.id] = Led(leader, lesson.query, lesson.step, sent=lesson.query,
                                           version=lesson.version, left=self.clock())
            self._stir()
        self._seed_round(lesson.id)
        return leader, lesson

    def end(self, tab, secret: object) -> Lesson:
        member = tab.member
        if not isinstance(member, Leader):
            raise Forbidden(NOT_LECTURER)
        self.check(member.class_id, secret)
        ended = self._reach(self.store.publish, member.class_id, None, None, ENDED)
        tab.member = None
        self._forget(member.class_id)
        if ended is None:
            raise Gone(NO_CLASS)
        return ended

    def join(self, tab, class_id: object) -> Follower:
        """`tab` follows the class (its page opened the class link); its seat is taken
        when its stream connects (`connect`)."""
        lesson = self.lesson(class_id)
        member = tab.member
        if isinstance(member, Leader) and member.class_id == lesson.id:
            raise Refused("This page leads the class.")
        if isinstance(member, Follower) and member.class_id == lesson.id:
            return member
        tab.member = Follower(self, lesson.id)
        return tab.member

    def follow(self, tab) -> tuple[Follower, Lesson]:
        """The lesson `tab` is to be shown now (it follows, or asked to follow again)."""
        member = tab.member
        if not isinstance(member, Follower):
            raise Refused("This page is not in a class: open the class link the lecturer gave.")
        return member, self.lesson(member.class_id)

    def newest(self, lesson: Lesson) -> Lesson:
        """The class's newest lesson, or `lesson` when there is none newer (or the store is away)."""
        try:
            newest = self.store.lesson(lesson.id)
        except Away:
            self.lost()
            return lesson
        return newest if newest is not None and newest.version > lesson.version and not newest.ended else lesson

    def expect(self, member: Follower, lesson: Lesson) -> None:
        """The tab is about to be shown `lesson`: the change that shows it is not the student's."""
        member.lesson = lesson.query

    def shown(self, member: Follower, lesson: Lesson, shown: bool = True) -> None:
        """The tab was shown `lesson` (or refused it: then it does not follow); its stream says so."""
        was = member.following
        member.following, member.shown = shown, lesson.version if shown else member.shown
        if was != shown:
            self.counted(member.class_id)
        else:
            self._tell(member.class_id)

    def presence(self, class_id: str) -> tuple[int, int] | None:
        """How many pages the class has connected and following, every process's together;
        None while the store is away."""
        try:
            return self.store.presence(class_id)
        except Away:
            self.lost()
            return None

    def reconnecting(self, class_id: str) -> bool:
        """Whether what this process knows of the class waits for the store (away, or just back)."""
        return self.away or class_id in self._unsure

    # --- the pages connected here --------------------------------------------------------------

    def connect(self, key: str, member: Leader | Follower, lesson: Lesson) -> None:
        """The page's stream is open on `lesson`. A follower takes a seat in the class,
        atomically against every process's pages (`Full` when there is none; `Reconnecting`
        while the store is away); a page connected already keeps its seat. A lecturer's page
        keeps its class running."""
        if isinstance(member, Leader):
            with self._lock:
                led = self._led.get(member.class_id)
                if led is None:  # let go here after its grace, yet running: another screen kept it
                    led = self._led[member.class_id] = Led(member, lesson.query, lesson.step, sent=lesson.query,
                                                           version=lesson.version)
                led.pages[key] = member
                self._stir()
            self._seed_round(member.class_id)
            return
        with self._counting:
            with self._lock:
                pages = self._pages.setdefault(member.class_id, {})
                before = pages.get(key)
                pages[key] = member
                connected, following = len(pages), sum(p.following for p in pages.values())
            try:
                taken = self.store.set_presence(member.class_id, self.process, connected, following,
                                                None if before is not None else MAX_FOLLOWERS)
            except Away:
                taken = None
            if not taken:
                with self._lock:
                    if before is None:
                        pages.pop(key, None)
                        if not pages:
                            self._pages.pop(member.class_id, None)
                    else:
                        pages[key] = before
            if taken is None:
                self.lost()
                raise Reconnecting(RECONNECTING)
            if not taken:
                raise Full(f"This class has {MAX_FOLLOWERS:,} pages following it, as many as one class may have.")
        self._seed_round(member.class_id)
        self._tell(member.class_id)

    def disconnect(self, key: str, member: Leader | Follower) -> None:
        """The page's stream closed (a page whose newer stream replaced it is not let go)."""
        with self._lock:
            if isinstance(member, Leader):
                led = self._led.get(member.class_id)
                if led is not None and led.pages.get(key) is member:
                    del led.pages[key]
                    if not led.pages:
                        led.left = self.clock()
                return
            pages = self._pages.get(member.class_id, {})
            if pages.get(key) is not member:
                return
            del pages[key]
            if not pages:
                self._pages.pop(member.class_id, None)
        self.counted(member.class_id)

    def counted(self, class_id: str) -> None:
        """The class's pages here changed (came, left, stopped or started following): their
        count is written by the writer, and the pages' streams hear it now."""
        with self._lock:
            self._dirty.add(class_id)
            self._stir()
        self._tell(class_id)

    def teach(self, leader: Leader, view: View) -> None:
        """A leading tab's view changed: the class's newest lesson, published by the writer at
        most once per PUBLISH_SECONDS (the last always)."""
        query = lesson_of(view)
        with self._lock:
            led = self._led.get(leader.class_id)
            if led is None:  # its class ended, or was let go: the tab leads nothing now
                return
            led.query, led.step = query, view.step
            self._stir()

    def hear(self, listener: Callable[[str | None], None]) -> None:
        """`listener(class_id)` is told when a class's lesson, counts or connection changed
        (None: every class's connection)."""
        self._heard.append(listener)

    def listen(self, listener: Callable[[Lesson], None]) -> None:
        """`listener` hears every lesson this process hears of (from the store, or read again)."""
        self._lessons.append(listener)

    def _tell(self, class_id: str | None) -> None:
        for listener in list(self._heard):
            listener(class_id)

    def _hear(self, lesson: Lesson) -> None:
        with self._lock:
            led = self._led.get(lesson.id)
            if led is not None:
                led.version = max(led.version, lesson.version)
                if lesson.ended:
                    self._led.pop(lesson.id, None)
            if lesson.id in self._pages or lesson.id in self._led:
                self._versions[lesson.id] = max(self._versions.get(lesson.id, 0), lesson.version)
            self._unsure.pop(lesson.id, None)
            if lesson.ended:  # a round ends with its class
                self._drop_round(lesson.id)
        for listener in list(self._lessons):
            listener(lesson)
        self._tell(lesson.id)

    def _forget(self, class_id: str) -> None:
        with self._lock:
            self._led.pop(class_id, None)

    # --- the class's poll ------------------------------------------------------------------------

    def round(self, class_id: object) -> Round:
        """The newest round of the class this process knows (no store call)."""
        with self._lock:
            return self._rounds.get(class_id, NO_ROUND) if isinstance(class_id, str) else NO_ROUND

    def own(self, key: object, class_id: object) -> tuple[str, ...]:
        """The words page `key` sent in the class's current round (as this process acknowledged them)."""
        with self._lock:
            journal = self._journal.get(class_id) if isinstance(class_id, str) else None
            if journal is None or not isinstance(key, str) or journal[0] < self._rounds.get(class_id, NO_ROUND).number:
                return ()
            return journal[1].get(key, ())

    def ask(self, tab, secret: object, prompt: object, review: object = False) -> Round:
        """A new open round with `prompt` (its answers emptied); `review`: only approved words are drawn."""
        return self._lecture(tab, secret, "ask", checked_prompt(prompt), checked_flag(review, "Review first"))

    def close_round(self, tab, secret: object) -> Round:
        """Answers are no longer taken; the words stay drawn."""
        return self._lecture(tab, secret, "close")

    def clear_round(self, tab, secret: object) -> Round:
        """A new round with no question and no words."""
        return self._lecture(tab, secret, "clear")

    def moderate(self, tab, secret: object, word: object, hidden: object) -> Round:
        """Hide one word (answered or not yet), or show it again."""
        return self._lecture(tab, secret, "hide", checked_word(word), checked_flag(hidden, "Hidden"))

    def approve(self, tab, secret: object, word: object, approved: object) -> Round:
        """Approve one word for drawing under review first (or take the approval back)."""
        return self._lecture(tab, secret, "approve", checked_word(word), checked_flag(approved, "Approved"))

    def review(self, tab, secret: object, on: object) -> Round:
        """Review first on or off: under it only the words the lecturer approved are drawn."""
        return self._lecture(tab, secret, "review", "", checked_flag(on, "Review first"))

    def _lecture(self, tab, secret: object, op: str, text: str = "", flag: bool = False) -> Round:
        member = tab.member
        if not isinstance(member, Leader):
            raise Forbidden(NOT_LECTURER)
        self.check(member.class_id, secret)
        changed = self._reach(self.store.change_round, member.class_id, op, text, flag, MAX_MODERATED)
        if changed == "gone":
            self.lesson(member.class_id)  # says why: it ended, or is lost
            raise Reconnecting(RECONNECTING)
        if isinstance(changed, str):
            raise Full(MODERATED) if changed == "many" else Refused(NOT_ASKED)
        self._changed_round(member.class_id, changed)
        return changed

    def answer(self, tab, key: object, address: object, word: object,
               round_number: object) -> tuple[Round, tuple[str, ...]]:
        """A following page's answer to the round it was shown: the round and the page's words
        this round, once the store has it (a word sent again is kept once); else `Refused` with
        a sentence, nothing kept and no rate spent."""
        member = tab.member
        if not isinstance(member, Follower):
            raise Refused(NOT_FOLLOWING)
        if not all(isinstance(given, str) and 1 <= len(given) <= 200 for given in (key, address)):
            raise Refused(NO_KEY)  # both the routes' own: a page's key, a visitor's network
        word, number, class_id = checked_word(word), checked_number(round_number), member.class_id
        with self._lock:
            journal = self._journal.get(class_id)
            sent = journal[1].get(key, ()) if journal is not None and journal[0] == number else ()
        if word in sent:
            return self.round(class_id), sent
        if len(sent) >= WORDS_PER_STUDENT:
            raise Refused(ENOUGH)
        wait = self._pages_rate.take(key)
        if wait:
            raise Full(too_soon(wait))
        try:
            status, words, wait = self.store.answer(class_id, key, address, word, number, WORDS_PER_STUDENT,
                                                    MAX_ANSWERS)
        except Away:
            self._pages_rate.give_back(key)
            self.lost()
            raise Reconnecting(RECONNECTING) from None
        if status != "ok":
            self._pages_rate.give_back(key)
            if status == "rate":
                raise Full(too_many(wait))
            self._refuse_answer(class_id, number, status)
        with self._lock:
            journal = self._journal.get(class_id)
            if journal is None or journal[0] != number:
                journal = self._journal[class_id] = (number, {})
            # a store emptied before this process wrote its answers again knows only this word:
            # the page's earlier words stay acknowledged here, and `replay` writes them back
            kept = journal[1].get(key, ())
            words = journal[1][key] = kept + tuple(w for w in words if w not in kept)
        self._changed_round(class_id)
        return self.round(class_id), words

    def _refuse_answer(self, class_id: str, number: int, status: str) -> None:
        with self._lock:
            journal = self._journal.get(class_id)
            known = max(self._rounds.get(class_id, NO_ROUND).number, journal[0] if journal else 0) >= number
        if status == "gone":
            try:
                self.lesson(class_id)  # says why: it ended, or is lost
            except Gone as error:
                if str(error) != NO_CLASS or not known:
                    raise
        if status in ("gone", "missing") and known:
            # the store forgot a class or round running here: it restarted, maybe unheard of yet
            self.lost()  # the writer reads every class again, restores what is led here, writes answers again
            raise Reconnecting(RECONNECTING)
        raise Full(ROUND_FULL) if status == "full" else Refused(
            {"enough": ENOUGH, "other": OTHER_ROUND}.get(status, NOT_OPEN))

    def _changed_round(self, class_id: str, round: Round | None = None) -> None:  # noqa: A002
        """The class's round changed here (`round`, when the store returned it): the writer
        announces it to every process, at most once per POLL_SECONDS."""
        if round is not None:
            self._hear_round(class_id, round, kept=True)
        with self._lock:
            self._announce.add(class_id)
            self._stir()

    def _hear_round(self, class_id: str, round: Round, kept: bool = False) -> None:  # noqa: A002
        """A class's round was heard of: kept when newer than the one known (and the class has
        pages here, or `kept`), its streams woken."""
        with self._lock:
            known = self._rounds.get(class_id)
            if known is None and not kept and not any(class_id in c for c in (self._pages, self._led, self._journal)):
                return
            if known is not None and (round.number, round.version) <= (known.number, known.version):
                return
            self._rounds[class_id] = round
            journal = self._journal.get(class_id)
            if journal is not None and journal[0] < round.number:
                del self._journal[class_id]
        self._tell(class_id)

    def _seed_round(self, class_id: str) -> None:
        """A page of a class this process knew no round of: the store's round, read once."""
        with self._lock:
            if class_id in self._rounds:
                return
        try:
            found = self.store.poll(class_id)
        except Away:
            self.lost()
            return
        if found is not None:
            self._hear_round(class_id, found, kept=True)

    def _drop_round(self, class_id: str) -> None:
        """The class is over here: so is its round (under the lock)."""
        for kept in (self._rounds, self._journal, self._announced):
            kept.pop(class_id, None)
        self._announce.discard(class_id)
        self._replay.discard(class_id)

    # --- the writer ----------------------------------------------------------------------------

    def lost(self) -> None:
        """The store could not be reached: every page here hears the class is reconnecting, and
        the writer tries the store again every `retry` seconds."""
        with self._lock:
            if self.away:
                return
            self.away = True
            self._stir()
        LOG.warning("the class store cannot be reached; trying again every %g s", self.retry_seconds)
        self._tell(None)

    def _stir(self) -> None:
        """Wake the writer (started on first need); under the lock."""
        if self._writer is None:
            self._writer = threading.Thread(target=self._write, name="class-writer", daemon=True)
            self._writer.start()
        self._wake.notify()

    def close(self) -> None:
        """Stop the writer and the store's listener (a test's classroom, when the test ends)."""
        with self._lock:
            self._closed = True
            self._wake.notify()
            writer = self._writer
        if writer is not None:
            writer.join(5)
        self.store.close()

    def _write(self) -> None:
        beat_at = self.ticks() + self.beat_seconds
        while True:
            with self._lock:
                wait = self.retry_seconds if self.away else self._due(beat_at)
                if wait > 0 and not self._closed:
                    self._wake.wait(wait)
                if self._closed:
                    return
            try:
                if self.away:
                    self.store.ping()
                    self._back()
                self.flush()
                self.reread()
                self.replay()
                if self.ticks() >= beat_at:
                    self.beat()
                    beat_at = self.ticks() + self.beat_seconds
            except Away:
                self.lost()
            except Exception:  # a fault: logged, and the writer goes on with the next round
                LOG.exception("the class writer failed")
                time.sleep(self.retry_seconds)

    def _due(self, beat_at: float) -> float:
        """Seconds until the writer has work (under the lock)."""
        now = self.ticks()
        if self._dirty:
            return 0.0
        due = min(beat_at - now, self.retry_seconds if self._unsure or self._replay else float("inf"))
        for led in self._led.values():
            if led.query and led.query != led.sent:
                due = min(due, led.sent_at + PUBLISH_SECONDS - now)
        for class_id in self._announce:
            due = min(due, self._announced.get(class_id, float("-inf")) + POLL_SECONDS - now)
        return due

    def flush(self) -> None:
        """Publish the lessons that are due, announce the rounds that are, and write the counts that changed."""
        now = self.ticks()
        with self._lock:
            due = [(led, led.query, led.step) for led in self._led.values()
                   if led.query and led.query != led.sent and now >= led.sent_at + PUBLISH_SECONDS]
        for led, query, step in due:
            lesson = self.store.publish(led.leader.class_id, query, step)
            led.sent, led.sent_at = query, self.ticks()
            if lesson is None:  # the store lost it, or its time ran out while it was away
                self._restore(led)
        self._announce_rounds()
        while True:
            with self._lock:
                if not self._dirty:
                    break
                class_id = self._dirty.pop()
            try:
                self._write_count(class_id)
            except Away:
                with self._lock:
                    self._dirty.add(class_id)
                raise

    def _announce_rounds(self) -> None:
        """Tell every process the rounds that changed here, each at most once per POLL_SECONDS."""
        now = self.ticks()
        with self._lock:
            due = [c for c in self._announce if now >= self._announced.get(c, float("-inf")) + POLL_SECONDS]
            self._announce.difference_update(due)
        for class_id in due:
            try:
                found = self.store.announce_round(class_id)
            except Away:
                with self._lock:
                    self._announce.add(class_id)
                raise
            with self._lock:
                self._announced[class_id] = self.ticks()
            if found is not None:
                self._hear_round(class_id, found, kept=True)

    def replay(self) -> None:
        """Write again the answers acknowledged here in each class's round (a store that kept
        them keeps each once), moving its version past the one heard here: after the store was
        away, and every beat (a store that restarted unheard of loses nothing either). A round
        the store lost is restored by its lecturer's process first; until then this waits."""
        with self._lock:
            pending = list(self._replay)
        for class_id in pending:
            with self._lock:
                known, journal = self._rounds.get(class_id), self._journal.get(class_id)
                led = self._led.get(class_id)
            status = "other"
            if known is not None and known.number:
                number, pages = journal if journal is not None else (known.number, {})
                status = self.store.replay(class_id, number, known.version, dict(pages), WORDS_PER_STUDENT,
                                           MAX_ANSWERS)
                if status == "missing" and led is not None and self.store.restore_round(class_id, known):
                    LOG.warning("the round of class %s restored in the store from its lecturer's page", class_id)
                    continue  # its answers are written on the writer's next turn
            if status == "missing" or (status == "gone" and class_id in self._unsure):
                continue  # not back yet: tried again, until the class is back or heard of as over
            with self._lock:
                self._replay.discard(class_id)
                if status == "other" and journal is not None and self._journal.get(class_id) is journal:
                    del self._journal[class_id]
            if status == "done":
                self._changed_round(class_id)

    def _write_count(self, class_id: str) -> None:
        with self._counting:
            with self._lock:
                pages = list(self._pages.get(class_id, {}).values())
            self.store.set_presence(class_id, self.process, len(pages), sum(p.following for p in pages))
        self._tell(class_id)

    def _restore(self, led: Led) -> Lesson | None:
        """The class as its lecturer's pages here hold it, put back in the store if the store
        lost it (or its time ran out while the store was away); heard as any lesson is."""
        leader = led.leader
        restored, lesson = self.store.restore(leader.class_id, leader.digest, leader.address, led.query or led.sent,
                                              led.step, led.version + 1)
        if lesson is None or lesson.ended:
            self._forget(leader.class_id)
        if lesson is not None:
            led.sent = lesson.query
            if restored:
                LOG.warning("class %s restored in the store from its lecturer's page", leader.class_id)
            self._hear(lesson)
            if restored:  # its round too, on the writer's next turn (`replay`)
                with self._lock:
                    self._replay.add(leader.class_id)
                    self._stir()
        return lesson

    def _back(self) -> None:
        """The store answers again: every class with pages here is read again (and restored,
        if led here) before its pages stop hearing that it is reconnecting."""
        now = self.clock()
        with self._lock:
            self.away, self._back_at = False, self.ticks()
            for class_id in {*self._pages, *self._led, *self._rounds}:
                self._unsure.setdefault(class_id, now + GRACE_SECONDS)
            self._dirty.update(self._pages)
            self._replay.update(self._rounds)
            led = [each for each in self._led.values() if each.alive(now)]
        LOG.warning("the class store answers again")
        for each in led:
            self._restore(each)

    def reread(self) -> None:
        """Read again each class this process is unsure of since the store was away: found, its
        pages hear it; not restored within GRACE_SECONDS, they hear it is over."""
        now = self.clock()
        with self._lock:
            unsure = dict(self._unsure)
        for class_id, until in unsure.items():
            lesson = self.store.lesson(class_id)
            if lesson is None and now >= until:
                with self._lock:
                    version = self._versions.get(class_id, 0) + 1
                lesson = Lesson(class_id, version, "", None, now, LOST)
            if lesson is not None:
                self._hear(lesson)

    def beat(self) -> None:
        """What the writer does every `beat` seconds (a test moving its clock calls it): say the
        lecturer pages here are there (the class's end moves on), let go of classes whose
        lecturer pages left more than GRACE_SECONDS ago, write the counts again and the answers
        acknowledged here (`replay`), and wake every stream (a class past its end says so)."""
        with self._beating:
            now = self.clock()
            with self._lock:
                for class_id, led in list(self._led.items()):
                    if not led.alive(now):
                        del self._led[class_id]
                leading = [led for led in self._led.values() if led.pages]
                counted = list(self._pages)
                answered = [c for c in self._rounds if c not in self._pages and c not in self._led
                            and c not in self._unsure and c not in self._replay]
            for led in leading:
                if self.store.publish(led.leader.class_id, None, None) is None:
                    self._restore(led)
            for class_id in counted:
                self._write_count(class_id)
            for class_id in answered:  # no page here any more: its round is kept here while the class runs
                lesson = self.store.lesson(class_id)
                if lesson is not None and lesson.ended:
                    with self._lock:
                        self._drop_round(class_id)
                elif lesson is None:  # the store forgot a class running here: it restarted, unheard of
                    self.lost()
            with self._lock:
                self._replay.update(self._rounds)
            with self._lock:
                self._versions = {k: v for k, v in self._versions.items() if k in self._pages or k in self._led}
        self._tell(None)


class Forbidden(Refused):
    """Refused because the caller is not the lecturer: answered 403."""


class Gone(Refused):
    """No class has this id, or it ended: answered 404."""


class Full(Refused):
    """A bound was met (classes at once, from one address, pages in one class): answered 429."""


class Reconnecting(Refused):
    """Refused because the store is away for now: answered with `reconnecting`, and the page tries again."""
