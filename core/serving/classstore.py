"""Where classes are kept: each class's record (`Lesson`) and its poll's round, in Redis (`RedisStore`).

Processes share a Redis server (``EXPLORER_CLASS_STORE=redis://…``); one process alone uses its own
fakeredis server, running the same Lua scripts. Each bound is checked in one script: no race past it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from urllib.parse import parse_qs

import redis

from core.serving.poll import ANSWER_BURST, ANSWER_SECONDS, MAX_ANSWERS, WORDS_PER_STUDENT, Round
from core.view.options import Refused
from core.view.share import from_query, to_query
from core.view.state import View

LOG = logging.getLogger(__name__)
# a class ends this long after its last lecturer page left (a reload or a dropped network comes back well within it)
GRACE_SECONDS = float(os.environ.get("EXPLORER_CLASS_GRACE_MINUTES", "2")) * 60
PRESENCE_SECONDS = 30.0  # a process's count of its students is forgotten this long after it last wrote it
RETRY_SECONDS = 1.0  # how often a store that is away is tried again
UNBOUNDED = 1 << 30  # the bounds of a class put back: it had its place


def _minutes(seconds: float) -> str:
    minutes = seconds / 60
    return f"{minutes:g} minute{'s' * (minutes != 1)}"


AWAY = f"The class has ended: its lecturer's page was closed for over {_minutes(GRACE_SECONDS)}."
RECONNECTING = ("The class is reconnecting: the store that keeps classes cannot be reached just now. This page keeps "
                "its view, and the class carries on as soon as the store is back.")
NO_CLASS = "No class has this link: it may have ended, or the link was cut off. Ask the lecturer for it again."
# the store could not be reached (a Redis server stopped, restarting, or cut off): what a call raises then
Away = (redis.ConnectionError, redis.TimeoutError)


@dataclass(frozen=True)
class Lesson:
    """What a class shows, as every process sees it: the lecturer's view as a link's query."""

    id: str
    version: int
    query: str
    step: int | None
    ends: float  # on the store's wall clock: shared by processes and machines
    ended: str = ""  # why the class is over, once it is

    def message(self, now: float, reconnecting: bool = False) -> dict:
        """What a page hears of the class at `now`: past its end it has ended, unless the store is
        away (then it may only not have heard from its lecturer: it is reconnecting)."""
        ended = self.ended or (AWAY if now >= self.ends and not reconnecting else "")
        return {"version": self.version, "step": self.step, "ended": ended,
                "reconnecting": RECONNECTING if reconnecting and not ended else ""}


_FRESH = View()  # a fresh page, in the room a lesson is written for


def lesson_of(view: View) -> str:
    """The lesson a view teaches: its link, without the room and the screen it is shown on."""
    return to_query(view.in_room_of(_FRESH).with_(narrow=False))[0]


@functools.lru_cache(maxsize=256)
def lesson_view(query: str) -> View:
    """A lesson's view, read as any link is; once for a whole class (every follower shares it)."""
    return from_query(parse_qs(query, keep_blank_values=True)).view


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Full(Refused):
    """A bound was met (classes at once, from one address, pages in one class): answered 429."""


class Gone(Refused):
    """No class has this id, or it ended: answered 404."""


class Reconnecting(Refused):
    """Refused because the store is away for now: answered with `reconnecting`, and the page tries again."""


def _fields(flat: list) -> dict:
    """A hash as a script answers it: field, value, field, value, …"""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _lesson(class_id: str, record: dict, now: float | None = None) -> Lesson:
    ends = float(record["ends"])  # Redis gives every field as text
    ended = record["ended"] or (AWAY if now is not None and ends <= now else "")
    return Lesson(class_id, int(record["version"]), record["query"],
                  None if record["step"] in (None, "") else int(record["step"]), ends, ended)


def _round(found: list) -> Round:
    """A round as `RedisStore._CHANGE` answers it."""
    fields, counts, hidden, approved, students = found
    poll = _fields(fields)
    return Round(int(poll["number"]), poll["prompt"], poll["open"] == "1", poll["review"] == "1",
                 {word: int(count) for word, count in _fields(counts).items()}, frozenset(hidden),
                 frozenset(approved), int(poll["answers"]), int(students), int(poll["version"]))


class RedisStore:
    """Classes in Redis, shared by every process of a class server.

    A class is a hash that expires with it; the running classes, and each address's, are sorted
    sets by when each ends; each process's count of its pages is a field of the class's presence
    hash; lessons and rounds are published on two channels. A call while Redis is away raises
    `Away` within a second or two (one retry: a connection closed by a restart is opened again).
    """

    CHANNEL = "explorer:lessons"
    ROUNDS = "explorer:rounds"  # every class's round, announced

    # a class written (KEYS: its hash, the running classes, its address's) unless one of its id runs or
    # ended: {1 when written, its fields}; 1 or 2 when a new one would pass a bound; false for another secret's
    _PUT = """
    local now, ends = tonumber(ARGV[1]), ARGV[2]
    local record = redis.call('HMGET', KEYS[1], 'secret', 'ended', 'ends', 'version')
    if record[1] and record[1] ~= ARGV[4] then return false end
    if record[1] and (record[2] ~= '' or tonumber(record[3]) > now) then return {0, redis.call('HGETALL', KEYS[1])} end
    for i = 2, 3 do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
    if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[9]) then return 1 end
    if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[10]) then return 2 end
    redis.call('HSET', KEYS[1], 'secret', ARGV[4], 'address', ARGV[5], 'query', ARGV[6], 'step', ARGV[7],
               'version', math.max(tonumber(ARGV[8]), tonumber(record[4] or '-1') + 1), 'ends', ends, 'ended', '')
    for i = 2, 3 do redis.call('ZADD', KEYS[i], ends, ARGV[3]) end
    for _, key in ipairs({KEYS[1], KEYS[3]}) do redis.call('EXPIRE', key, math.ceil(ends - now) + 60) end
    return {1, redis.call('HGETALL', KEYS[1])}
    """

    # one step, so two processes publishing at once never leave a version with another's query, and an
    # end is never undone; the class's round (KEYS[3..]) lives as long as the class, and ends with it
    _PUBLISH = """
    local now, grace = tonumber(ARGV[1]), tonumber(ARGV[2])
    local record = redis.call('HMGET', KEYS[1], 'ends', 'ended', 'query', 'address')
    if not record[1] or record[2] ~= '' or tonumber(record[1]) <= now then return false end
    local ends, by_address = now + grace, 'explorer:classes:' .. record[4]
    redis.call('HSET', KEYS[1], 'ends', ends)
    if ARGV[4] == '1' and ARGV[5] ~= record[3] then
        redis.call('HSET', KEYS[1], 'query', ARGV[5], 'step', ARGV[6])
        redis.call('HINCRBY', KEYS[1], 'version', 1)
    end
    redis.call('EXPIRE', KEYS[1], math.ceil(grace) + 60)
    if ARGV[7] ~= '' then
        redis.call('HSET', KEYS[1], 'ended', ARGV[7])
        redis.call('HINCRBY', KEYS[1], 'version', 1)
        for _, key in ipairs({KEYS[2], by_address}) do redis.call('ZREM', key, ARGV[3]) end
        for i = 3, #KEYS do redis.call('DEL', KEYS[i]) end
    else
        for _, key in ipairs({KEYS[2], by_address}) do redis.call('ZADD', key, ends, ARGV[3]) end
        for _, key in ipairs({by_address, unpack(KEYS, 3)}) do redis.call('EXPIRE', key, math.ceil(grace) + 60) end
    end
    return redis.call('HGETALL', KEYS[1])
    """

    # the class's round: KEYS[1] the class, then `_poll_keys`; ARGV[1] the time. Each script checks the
    # class runs, and gives every key it writes the class's time to live
    _ROUND = """
    local function live()
        local ttl = redis.call('PTTL', KEYS[1])
        if ttl > 0 then for i = 2, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end end
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
    local class = redis.call('HMGET', KEYS[1], 'ended', 'ends')
    if not class[2] or class[1] ~= '' or tonumber(class[2]) <= tonumber(ARGV[1]) then return 'gone' end
    """

    # ARGV: time, op ('read' changes nothing), text, flag ('1'/'0'), how many words may be hidden (and approved)
    _CHANGE = _ROUND + """
    local op, text, flag = ARGV[2], ARGV[3], ARGV[4]
    if redis.call('EXISTS', KEYS[2]) == 0 then
        if op == 'read' then return false end
        redis.call('HSET', KEYS[2], 'number', 0, 'prompt', '', 'open', '0', 'review', '0', 'answers', 0, 'version', 0)
    end
    local poll = redis.call('HMGET', KEYS[2], 'number', 'prompt', 'open', 'review')
    local changed = op ~= 'read'
    if op == 'ask' or op == 'clear' then
        redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
        local asked = op == 'ask'
        redis.call('HSET', KEYS[2], 'number', tonumber(poll[1]) + 1, 'answers', 0, 'prompt', asked and text or '',
                   'open', asked and '1' or '0', 'review', asked and flag or poll[4])
    elseif op == 'review' then
        changed = poll[4] ~= flag
        redis.call('HSET', KEYS[2], 'review', flag)
    elseif op == 'read' then
    elseif poll[2] == '' then
        return 'none'
    elseif op == 'close' then
        changed = poll[3] == '1'
        redis.call('HSET', KEYS[2], 'open', '0')
    else
        local set = op == 'hide' and KEYS[5] or KEYS[6]
        if flag == '0' then
            changed = redis.call('SREM', set, text) == 1
        elseif redis.call('SISMEMBER', set, text) == 0 and redis.call('SCARD', set) >= tonumber(ARGV[5]) then
            return 'many'
        else
            changed = redis.call('SADD', set, text) == 1
        end
    end
    if changed then redis.call('HINCRBY', KEYS[2], 'version', 1) end
    live()
    return {redis.call('HGETALL', KEYS[2]), redis.call('HGETALL', KEYS[3]), redis.call('SMEMBERS', KEYS[5]),
            redis.call('SMEMBERS', KEYS[6]), redis.call('HLEN', KEYS[4])}
    """

    # ARGV: time, round number, seat, word, words a seat may send, answers a round takes, a seat's burst,
    # its answers a second; KEYS[7] the seat's bucket (tokens, when), taken only when it has one
    _ANSWER = _ROUND + """
    local poll = redis.call('HMGET', KEYS[2], 'number', 'open', 'answers')
    if not poll[1] then return {'missing', ''} end
    local sent = redis.call('HGET', KEYS[4], ARGV[3]) or ''
    if poll[2] ~= '1' then return {'closed', sent} end
    if poll[1] ~= ARGV[2] then return {'other', sent} end
    local words = words_of(sent)
    if words[ARGV[4]] then return {'ok', sent} end
    if #words >= tonumber(ARGV[5]) then return {'enough', sent} end
    if tonumber(poll[3]) >= tonumber(ARGV[6]) then return {'full', sent} end
    local burst, rate = tonumber(ARGV[7]), tonumber(ARGV[8])
    local kept = redis.call('HMGET', KEYS[7], 'tokens', 'at')
    local since = math.max(0, tonumber(ARGV[1]) - tonumber(kept[2] or ARGV[1]))
    local left = math.min(burst, tonumber(kept[1] or burst) + since * rate)
    if left < 1 then return {'soon', sent, tostring((1 - left) / rate)} end
    sent = keep(ARGV[3], sent, ARGV[4])
    live()
    redis.call('HSET', KEYS[7], 'tokens', tostring(left - 1), 'at', ARGV[1])
    redis.call('EXPIRE', KEYS[7], math.ceil(burst / rate) + 1)  -- full again by then: as good as gone
    return {'ok', sent}
    """

    # ARGV: time, number, the version heard, {seat: [words]} (JSON), words a seat may send, answers a
    # round takes; then, to put the round back when the store has none: its number, prompt, open, review,
    # hidden and approved words (JSON), or nothing
    _REPLAY = _ROUND + """
    local restored = redis.call('EXISTS', KEYS[2]) == 0 and ARGV[7] ~= nil
    if restored then
        redis.call('HSET', KEYS[2], 'number', ARGV[7], 'prompt', ARGV[8], 'open', ARGV[9], 'review', ARGV[10],
                   'answers', 0, 'version', ARGV[3] + 1)
        for _, word in ipairs(cjson.decode(ARGV[11])) do redis.call('SADD', KEYS[5], word) end
        for _, word in ipairs(cjson.decode(ARGV[12])) do redis.call('SADD', KEYS[6], word) end
    end
    local poll = redis.call('HMGET', KEYS[2], 'number', 'answers')
    if not poll[1] then return 'missing' end
    if poll[1] ~= ARGV[2] then return 'other' end
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
    live()
    if restored then return 'restored' end
    local version = tonumber(redis.call('HGET', KEYS[2], 'version'))
    if redis.call('HGET', KEYS[2], 'answers') == poll[2] and version >= tonumber(ARGV[3]) then return 'same' end
    redis.call('HSET', KEYS[2], 'version', math.max(version, tonumber(ARGV[3])) + 1)
    return 'done'
    """

    # every process's fresh count of a class's pages, {connected, following}, with this process's
    # (ARGV[1]; none: only read) written; with a limit (ARGV[6]), only when the counts stay within it
    # (false otherwise): a seat, taken in one step against every other process's joins
    _PRESENCE = """
    local now, fresh, connected, following = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[2]), tonumber(ARGV[3])
    local students = tonumber(ARGV[7])
    local counts = redis.call('HGETALL', KEYS[1])
    for i = 1, #counts, 2 do
        local pages, followers, seats, seen = string.match(counts[i + 1], '^(%d+) (%d+) (%d+) (%S+)$')
        if counts[i] ~= ARGV[1] and pages and now - tonumber(seen) < fresh then
            connected, following = connected + tonumber(pages), following + tonumber(followers)
            students = students + tonumber(seats)
        end
    end
    if ARGV[6] ~= '' and connected > tonumber(ARGV[6]) then return false end
    if ARGV[1] ~= '' then
        redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. ARGV[3] .. ' ' .. ARGV[7] .. ' ' .. ARGV[4])
        redis.call('EXPIRE', KEYS[1], math.ceil(fresh) * 4)
    end
    return {connected, following, students}
    """

    def __init__(self, url: str = "", clock: Callable[[], float] = time.time, server=None) -> None:
        """`url` names a Redis server; without one, a fakeredis `server` (or a new one) in this process."""
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.clock = clock
        if url:
            self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5, socket_connect_timeout=2,
                                              health_check_interval=30, retry=Retry(NoBackoff(), 1))
        else:
            import fakeredis

            self.server = server or fakeredis.FakeServer()
            self.redis = fakeredis.FakeRedis(server=self.server, decode_responses=True)
        self._put, self._publish, self._change, self._answer, self._replay, self._presence = (
            self.redis.register_script(source) for source in (self._PUT, self._PUBLISH, self._CHANGE, self._ANSWER,
                                                              self._REPLAY, self._PRESENCE))
        self._listeners: list[tuple[Callable, Callable, Callable]] = []  # each `listen`'s (lessons, rounds, lost)
        self._thread: threading.Thread | None = None
        self._subscribed = threading.Event()
        self._closed = threading.Event()

    @staticmethod
    def _poll_keys(class_id: str) -> list[str]:
        """The class, then its round's keys: fields, counts, pages, hidden, approved."""
        poll = f"explorer:poll:{class_id}"
        return [f"explorer:class:{class_id}", poll, *(f"{poll}:{part}" for part in ("counts", "pages", "hidden",
                                                                                       "approved"))]

    def ping(self) -> None:
        """Raises `Away` until Redis answers and this process is subscribed to the lessons again."""
        self.redis.ping()
        if self._thread is not None and not self._subscribed.is_set():
            raise redis.ConnectionError("not yet subscribed to the lessons again")

    def _put_class(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
                   version: int, limit: int, per_address: int):
        now = self.clock()
        return self._put(keys=[self._poll_keys(class_id)[0], "explorer:classes", f"explorer:classes:{address}"],
                         args=[now, now + GRACE_SECONDS, class_id, secret_digest, address, query,
                               "" if step is None else step, version, limit, per_address])

    def create(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
               limit: int, per_address: int) -> Lesson:
        found = self._put_class(class_id, secret_digest, address, query, step, 1, limit, per_address)
        if found == 1:
            raise Full(f"This server runs at most {limit:,} classes at once, and that many are running; "
                       "try again later.")
        if found == 2:
            raise Full(f"At most {per_address} classes can run at once from one network address; end one (its End "
                       f"the class button), or close its lecturer's page: a class ends {_minutes(GRACE_SECONDS)} after "
                       "its lecturer's page closed.")
        return _lesson(class_id, _fields(found[1]))

    def restore(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
                version: int) -> tuple[bool, Lesson | None]:
        """The class put back as its lecturer's page holds it, if the store lost it or let its time run
        out (not if it ended): (whether restored, the class as kept; None for another secret's id)."""
        found = self._put_class(class_id, secret_digest, address, query, step, version, UNBOUNDED, UNBOUNDED)
        if not found:
            return False, None
        lesson = _lesson(class_id, _fields(found[1]), self.clock())
        if found[0]:
            self._announce(lesson)
        return bool(found[0]), lesson

    def lesson(self, class_id: str) -> Lesson | None:
        record = self.redis.hgetall(self._poll_keys(class_id)[0])
        return _lesson(class_id, record, self.clock()) if record else None

    def owner(self, class_id: str) -> tuple[str, str] | None:
        """The class's secret's digest and the address that started it."""
        secret, address = self.redis.hmget(self._poll_keys(class_id)[0], "secret", "address")
        return None if secret is None else (secret, address or "")

    def publish(self, class_id: str, query: str | None, step: int | None, ended: str = "") -> Lesson | None:
        """A new lesson (only the lecturer seen when `query` is None); None unless the class runs."""
        keys = self._poll_keys(class_id)
        found = self._publish(keys=[keys[0], "explorer:classes", *keys[1:]],
                              args=[self.clock(), GRACE_SECONDS, class_id, "" if query is None else "1", query or "",
                                    "" if step is None else step, ended])
        if not found:
            return None
        lesson = _lesson(class_id, _fields(found))
        self._announce(lesson)  # a new lesson, or only a later end: every process's pages keep both
        return lesson

    def poll(self, class_id: str, announce: bool = False) -> Round | None:
        """The class's round as kept, sent to every process to `announce` it; None if none (never asked, lost, over)."""
        found = self._change(keys=self._poll_keys(class_id), args=[self.clock(), "read", "", 0, 0])
        if announce and isinstance(found, list):
            self.redis.publish(self.ROUNDS, json.dumps([class_id, found]))
        return _round(found) if isinstance(found, list) else None

    def change_round(self, class_id: str, op: str, text: str, flag: bool, limit: int) -> Round | str:
        """The round after the lecturer's change `op`; or why not: "gone" (the class is not running),
        "none" (no question asked), "many" (`limit` words moderated)."""
        found = self._change(keys=self._poll_keys(class_id), args=[self.clock(), op, text, int(flag), limit])
        return found if isinstance(found, str) else _round(found)

    def answer(self, class_id: str, seat: str, word: str, number: int) -> tuple[str, tuple[str, ...], float]:
        """Seat `seat`'s answer `word` to round `number`: (status, the seat's words this round, seconds
        to wait). Status "ok" (kept, once), or why not: "gone", "missing" (no round), "closed", "other"
        (another round), "enough", "full" or "soon" (the seat's rate)."""
        found = self._answer(
            keys=[*self._poll_keys(class_id), f"explorer:seat-answers:{class_id}:{seat}"],
            args=[self.clock(), number, seat, word, WORDS_PER_STUDENT, MAX_ANSWERS, ANSWER_BURST, 1 / ANSWER_SECONDS])
        status, sent, *wait = ("gone", "") if found == "gone" else found
        return status, tuple(sent.split()), float(wait[0]) if wait else 0.0

    def replay(self, class_id: str, number: int, pages: Mapping[str, tuple[str, ...]], heard: Round,
               restore: bool = False) -> str:
        """The answers acknowledged in round `number` written again (each once), the version moved past
        `heard`'s: "done", "same" (nothing lost), "restored" (`restore`: `heard` put back first, the
        store having no round), or "gone", "missing", "other" (another round)."""
        text = functools.partial(json.dumps, ensure_ascii=False)
        header = [heard.number, heard.prompt, int(heard.open), int(heard.review), text(sorted(heard.hidden)),
                  text(sorted(heard.approved))] if restore else []
        return self._replay(keys=self._poll_keys(class_id), args=[
            self.clock(), number, heard.version, text({k: list(w) for k, w in pages.items()}), WORDS_PER_STUDENT,
            MAX_ANSWERS, *header])

    def _announce(self, lesson: Lesson) -> None:
        self.redis.publish(self.CHANNEL, json.dumps(asdict(lesson)))

    def set_presence(self, class_id: str, process: str, connected: int, following: int, students: int,
                     limit: int | None = None) -> bool:
        """Write this process's count of the class's pages, and of the students (seats) they are; with a
        `limit`, only within it (a page taking its place)."""
        return bool(self._presence(keys=[f"explorer:presence:{class_id}"],
                                   args=[process, connected, following, self.clock(), PRESENCE_SECONDS,
                                         "" if limit is None else limit, students]))

    def presence(self, class_id: str) -> tuple[int, int, int]:
        """Every process's fresh count of the class's pages and students: (connected, following,
        students). A student whose pages are on two processes counts on each."""
        connected, following, students = self._presence(keys=[f"explorer:presence:{class_id}"],
                                                        args=["", 0, 0, self.clock(), PRESENCE_SECONDS, "", 0])
        return connected, following, students

    def listen(self, lessons: Callable[[Lesson], None], rounds: Callable[[str, Round], None] = lambda *_: None,
               lost: Callable[[], None] = lambda: None) -> None:
        """`lessons` hears every lesson published from now on, `rounds(class_id, round)` every round any
        process announces, `lost` when the subscription was cut (returns once subscribed, so nothing
        after it is missed; after 10 s when Redis is away)."""
        self._listeners.append((lessons, rounds, lost))
        if self._thread is None:
            self._thread = threading.Thread(target=self._listen, name="class-lessons", daemon=True)
            self._thread.start()
        self._subscribed.wait(10)

    def _listen(self) -> None:
        """Polls the subscription (a blocking read would time out on a quiet channel); a lost one is
        said (`lost`) and made again (`core.serving.classoutage` reads what was missed)."""
        while not self._closed.is_set():
            pubsub = self.redis.pubsub()
            try:
                pubsub.subscribe(**{self.CHANNEL: self._heard_lesson, self.ROUNDS: self._heard_round})
                while not self._closed.is_set():  # each message goes to its channel's handler, from within
                    message = pubsub.get_message(timeout=1.0)
                    if message is not None and message["type"] == "subscribe":
                        self._subscribed.set()  # one SUBSCRIBE: both channels are subscribed by its first answer
            except Exception as error:
                if self._closed.is_set():  # closed under it (`close`)
                    return
                if not isinstance(error, Away):  # a fault: logged, and the listening goes on
                    LOG.exception("listening to the class lessons failed")
                self._subscribed.clear()
                for _, _, lost in list(self._listeners):
                    lost()
                self._closed.wait(RETRY_SECONDS / 4)
            finally:
                pubsub.close()

    def _heard_lesson(self, message: dict) -> None:
        lesson = Lesson(**json.loads(message["data"]))  # only this module publishes on its channels
        for lessons, _, _ in list(self._listeners):
            lessons(lesson)

    def _heard_round(self, message: dict) -> None:
        class_id, snapshot = json.loads(message["data"])  # as `poll` read it
        found = _round(snapshot)
        for _, rounds, _ in list(self._listeners):
            rounds(class_id, found)

    def close(self) -> None:
        self._closed.set()  # the listener stops within a second
        self.redis.close()
