"""A class: students' pages follow the lecturer's view, and the lecturer sees who follows.

In a lecture the projector shows one view while forty laptops show forty others. A lecturer
starts a class from a tab; that tab *leads*: every change to its view is published as the
class's *lesson*, the view written as a link's query string (`core.share.to_query`), so what
a class carries is checked like any link, and an upload or trained tables never leave the
lecturer's page. Students open the class link; each page *follows*: it is shown the newest
lesson, on its own screen (its phone's width, its presenter mode). A student who changes
anything is no longer following — the tab's view differs from the lesson it was shown — and
keeps their own view until they ask to follow again.

Who leads and who follows is the tab's (`core.live.Live.member`): `Live.apply` tells the
member after every change, so no path into a tab (typing, a click, a tour step, a link, Back)
can change a view without the class hearing of it.

Two stores behind one interface: `MemoryStore` for one process, `RedisStore` for several
processes or machines (``EXPLORER_CLASS_STORE=redis://host:6379/0``, as `make class`, the
Compose file and Kubernetes set it). A store keeps each class (its lesson, a digest of the
lecturer's secret, when it ends), the students each process has connected, and tells every
process of each new lesson (`listen`).

Bounds, each said in a sentence when met: `MAX_CLASSES` at once and `CLASSES_PER_ADDRESS`
from one client address; `MAX_FOLLOWERS` pages in one class; a lesson is published at most
once per `PUBLISH_SECONDS` (the last change always is, so typing ends with the final text);
a class ends `IDLE_SECONDS` after its lecturer was last seen. Ids and secrets are unguessable
(`secrets`), a secret is kept only as its SHA-256 digest and compared in constant time.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from core.options import Refused
from core.share import from_query, to_query
from core.state import View

MAX_CLASSES = int(os.environ.get("EXPLORER_MAX_CLASSES", "200"))  # classes running at once, on every process
CLASSES_PER_ADDRESS = 3  # classes one client address may run at once
MAX_FOLLOWERS = int(os.environ.get("EXPLORER_CLASS_FOLLOWERS", "500"))  # pages in one class
IDLE_SECONDS = float(os.environ.get("EXPLORER_CLASS_HOURS", "3")) * 3600  # a class ends this long after its lecturer
PUBLISH_SECONDS = 0.2  # a class's lessons go out at most this often: at most 5 a second
PRESENCE_SECONDS = 30.0  # a process's count of its students is forgotten this long after it last wrote it
ID = re.compile(r"[A-Za-z0-9_-]{16}")  # secrets.token_urlsafe(12)
SECRET = re.compile(r"[A-Za-z0-9_-]{32}")  # secrets.token_urlsafe(24)
NO_CLASS = "No class has this link: it may have ended, or the link was cut off. Ask the lecturer for it again."
AWAY = f"The class has ended: its lecturer's page changed nothing for {IDLE_SECONDS / 3600:g} hours."
NOT_LECTURER = "This is not the lecturer's link of this class: only the lecturer's link can change what the class sees."


@dataclass(frozen=True)
class Lesson:
    """What a class shows, as every process sees it: the lecturer's view as a link's query."""

    id: str
    version: int
    query: str
    step: int | None
    ends: float  # on the wall clock (`time.time`): shared by processes and machines
    ended: str = ""  # why the class is over, once it is

    @property
    def view(self) -> View:
        return lesson_view(self.query)

    def message(self, now: float) -> dict:
        """What a page hears of the class at wall-clock time `now`: a class its lecturer left
        too long ago has ended, though nobody published that."""
        ended = self.ended or (AWAY if now >= self.ends else "")
        return {"version": self.version, "step": self.step, "ended": ended}


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


# --- the stores ---------------------------------------------------------------------------


class MemoryStore:
    """Classes in this process: a class server of one process, and the tests."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._classes: dict[str, dict] = {}
        self._presence: dict[str, dict[str, tuple[int, int, float]]] = {}
        self._listeners: list[Callable[[Lesson], None]] = []
        self._lock = threading.Lock()

    def create(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
               limit: int, per_address: int) -> Lesson:
        now = self.clock()
        with self._lock:
            self._classes = {k: c for k, c in self._classes.items() if c["ends"] > now and not c["ended"]}
            _check_room(len(self._classes), sum(c["address"] == address for c in self._classes.values()),
                        limit, per_address)
            record = {"secret": secret_digest, "address": address, "query": query, "step": step, "version": 1,
                      "ends": now + IDLE_SECONDS, "ended": ""}
            self._classes[class_id] = record
            return _lesson(class_id, record)

    def lesson(self, class_id: str) -> Lesson | None:
        with self._lock:
            record = self._classes.get(class_id)
            return None if record is None else _lesson(class_id, record, self.clock())

    def secret(self, class_id: str) -> str | None:
        with self._lock:
            record = self._classes.get(class_id)
            return None if record is None else record["secret"]

    def publish(self, class_id: str, query: str | None, step: int | None, ended: str = "") -> Lesson | None:
        """A new lesson (or only the lecturer seen, when `query` is None; or the class ended)."""
        now = self.clock()
        with self._lock:
            record = self._classes.get(class_id)
            if record is None or record["ended"] or record["ends"] <= now:
                return None
            record["ends"] = now + IDLE_SECONDS
            if query is not None and (query != record["query"] or ended):
                record.update(query=query, step=step, version=record["version"] + 1)
            if ended:
                record.update(ended=ended, version=record["version"] + 1)
            lesson = _lesson(class_id, record)
            listeners = list(self._listeners)
        for listener in listeners:  # a new lesson, or only a later end: the pages keep both
            listener(lesson)
        return lesson

    def set_presence(self, class_id: str, process: str, connected: int, following: int) -> None:
        with self._lock:
            self._presence.setdefault(class_id, {})[process] = (connected, following, self.clock())

    def presence(self, class_id: str) -> tuple[int, int]:
        now = self.clock()
        with self._lock:
            counts = [(c, f) for c, f, seen in self._presence.get(class_id, {}).values()
                      if now - seen < PRESENCE_SECONDS]
        return sum(c for c, _ in counts), sum(f for _, f in counts)

    def listen(self, listener: Callable[[Lesson], None]) -> None:
        self._listeners.append(listener)


def _check_room(running: int, from_address: int, limit: int, per_address: int) -> None:
    if running >= limit:
        raise Full(f"This server runs at most {limit:,} classes at once, and that many are running; "
                      "try again later.")
    if from_address >= per_address:
        raise Full(f"At most {per_address} classes can run at once from one network address; end one (its "
                      "End the class button) or wait until one ends.")


def _lesson(class_id: str, record: dict, now: float | None = None) -> Lesson:
    ends = float(record["ends"])  # Redis gives every field as text
    ended = record["ended"] or (AWAY if now is not None and ends <= now else "")
    return Lesson(class_id, int(record["version"]), record["query"],
                  None if record["step"] in (None, "") else int(record["step"]), ends, ended)


class RedisStore:
    """Classes in Redis, shared by every process of a class server (and every machine of one).

    A class is a hash that expires with the class; the running classes are a sorted set by
    when each ends (their count is the bound, read and written in one Lua script); each
    process's count of its students is a field of the class's presence hash; a new lesson is
    published on one channel that every process listens to.
    """

    CHANNEL = "explorer:lessons"
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

    # one step, so two processes publishing at once never leave a version with another's query,
    # and an end is never undone: the class's end time moves in both sorted sets (the running
    # classes, and its address's), a new query takes the next version, an end takes one more
    _PUBLISH = """
    local now, idle = tonumber(ARGV[1]), tonumber(ARGV[2])
    local record = redis.call('HMGET', KEYS[1], 'ends', 'ended', 'query', 'address')
    if not record[1] or record[2] ~= '' or tonumber(record[1]) <= now then return false end
    local ends = now + idle
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
        redis.call('EXPIRE', by_address, math.ceil(idle) + 60)
    end
    redis.call('EXPIRE', KEYS[1], math.ceil(idle) + 60)
    return redis.call('HGETALL', KEYS[1])
    """

    def __init__(self, url: str, clock: Callable[[], float] = time.time) -> None:
        import redis

        self.url, self.clock = url, clock
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5, health_check_interval=30)
        self._create = self.redis.register_script(self._CREATE)
        self._publish = self.redis.register_script(self._PUBLISH)
        self._listeners: list[Callable[[Lesson], None]] = []
        self._thread: threading.Thread | None = None
        self._subscribed = threading.Event()

    @staticmethod
    def _key(class_id: str) -> str:
        return f"explorer:class:{class_id}"

    def create(self, class_id: str, secret_digest: str, address: str, query: str, step: int | None,
               limit: int, per_address: int) -> Lesson:
        now = self.clock()
        ends = now + IDLE_SECONDS
        refused = self._create(keys=["explorer:classes", f"explorer:classes:{address}", self._key(class_id)],
                               args=[now, limit, per_address, class_id, ends, secret_digest, address, query,
                                     "" if step is None else step])
        if refused:
            _check_room(limit if refused == 1 else 0, per_address, limit, per_address)
        return Lesson(class_id, 1, query, step, ends)

    def lesson(self, class_id: str) -> Lesson | None:
        record = self.redis.hgetall(self._key(class_id))
        return _lesson(class_id, record, self.clock()) if record else None

    def secret(self, class_id: str) -> str | None:
        return self.redis.hget(self._key(class_id), "secret")

    def publish(self, class_id: str, query: str | None, step: int | None, ended: str = "") -> Lesson | None:
        found = self._publish(keys=[self._key(class_id), "explorer:classes"],
                              args=[self.clock(), IDLE_SECONDS, class_id, "" if query is None else "1", query or "",
                                    "" if step is None else step, ended])
        if not found:
            return None
        record = dict(zip(found[::2], found[1::2], strict=True))
        lesson = _lesson(class_id, record)
        # a new lesson, or only a later end: every process's pages keep both
        self.redis.publish(self.CHANNEL, json.dumps({"id": class_id, "version": lesson.version, "query": lesson.query,
                                                     "step": lesson.step, "ends": lesson.ends, "ended": lesson.ended}))
        return lesson

    def set_presence(self, class_id: str, process: str, connected: int, following: int) -> None:
        key = f"explorer:presence:{class_id}"
        with self.redis.pipeline() as pipe:
            pipe.hset(key, process, f"{connected} {following} {self.clock()}")
            pipe.expire(key, int(PRESENCE_SECONDS) * 4)
            pipe.execute()

    def presence(self, class_id: str) -> tuple[int, int]:
        now, connected, following = self.clock(), 0, 0
        for value in self.redis.hgetall(f"explorer:presence:{class_id}").values():
            c, f, seen = value.split()
            if now - float(seen) < PRESENCE_SECONDS:
                connected, following = connected + int(c), following + int(f)
        return connected, following

    def listen(self, listener: Callable[[Lesson], None]) -> None:
        """`listener` hears every lesson published from now on, by any process (it returns once
        this process is subscribed, so nothing published after it is missed)."""
        self._listeners.append(listener)
        if self._thread is None:
            self._thread = threading.Thread(target=self._listen, name="class-lessons", daemon=True)
            self._thread.start()
        self._subscribed.wait(10)

    def _listen(self) -> None:
        """Every process hears every lesson. It polls its subscription (a blocking read would
        time out with the client's socket timeout on a quiet channel, and the channel was left
        unheard while it subscribed again); a lost connection is made again, and a lesson
        missed meanwhile reaches the pages with the next one, or when they read the class."""
        import redis

        while True:
            try:
                pubsub = self.redis.pubsub()
                pubsub.subscribe(self.CHANNEL)
                while True:
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._subscribed.set()
                    elif message["type"] == "message":
                        self._heard(message["data"])
            except (redis.ConnectionError, redis.TimeoutError):
                time.sleep(0.5)

    def _heard(self, data: str) -> None:
        try:
            sent = json.loads(data)
            lesson = Lesson(sent["id"], int(sent["version"]), sent["query"], sent["step"], float(sent["ends"]),
                            sent["ended"])
        except (ValueError, KeyError, TypeError):  # not one of ours: ignored
            return
        for listener in list(self._listeners):
            listener(lesson)


def store_from_environment() -> MemoryStore | RedisStore:
    url = os.environ.get("EXPLORER_CLASS_STORE", "").strip()
    return RedisStore(url) if url else MemoryStore()


# --- who leads and who follows --------------------------------------------------------------


@dataclass(eq=False)
class Leader:
    """A tab that leads a class: each change to its view is published (at most once per
    `PUBLISH_SECONDS`; a change that comes sooner is published when that time is up)."""

    classroom: Classroom
    class_id: str
    _last: float = -1e9
    _sent: str | None = None
    _waiting: View | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def changed(self, view: View) -> None:
        with self._lock:
            due = self._last + PUBLISH_SECONDS - time.monotonic()
            if due > 0:
                first = self._waiting is None
                self._waiting = view
                if first:
                    timer = threading.Timer(due, self._flush)
                    timer.daemon = True
                    timer.start()
                return
            self._waiting = None  # a held older view (its timer ran late) never goes out after this one
            self._send(view)

    def _flush(self) -> None:
        with self._lock:
            view, self._waiting = self._waiting, None
            if view is not None:
                self._send(view)

    def _send(self, view: View) -> None:
        query = lesson_of(view)
        self._last = time.monotonic()
        if query != self._sent:
            self._sent = query
            self.classroom.store.publish(self.class_id, query, view.step)


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


class Classroom:
    """This process's part of every class: the store, and the students' pages it serves."""

    def __init__(self, store: MemoryStore | RedisStore | None = None) -> None:
        self.store = store if store is not None else store_from_environment()
        self.process = uuid.uuid4().hex
        self._pages: dict[str, dict[str, Follower]] = {}  # class id -> page key -> its follower
        self._lock = threading.Lock()
        self._counting = threading.Lock()
        self._heard: list[Callable[[str], None]] = []  # told the id of a class whose lesson or counts changed
        self.store.listen(lambda lesson: self._tell(lesson.id))

    def start(self, live, address: str) -> tuple[Lesson, str]:
        """A new class led by `live`'s tab, its lesson that tab's view; returns it and the secret."""
        class_id, secret = secrets.token_urlsafe(12), secrets.token_urlsafe(24)
        view = live.view
        lesson = self.store.create(class_id, digest(secret), address, lesson_of(view), view.step,
                                   MAX_CLASSES, CLASSES_PER_ADDRESS)
        led = live.member
        if isinstance(led, Leader):  # a page leads one class: the one it led ends (said to its students)
            self.store.publish(led.class_id, None, None, ended="The lecturer started another class.")
        live.member = Leader(self, class_id, _sent=lesson.query)
        return lesson, secret

    def lesson(self, class_id: object) -> Lesson:
        """The class's lesson; raises `Refused` for an id no class has, or a class that ended."""
        if not isinstance(class_id, str) or not ID.fullmatch(class_id):
            raise Gone(NO_CLASS)
        lesson = self.store.lesson(class_id)
        if lesson is None:
            raise Gone(NO_CLASS)
        if lesson.ended:
            raise Gone(lesson.ended)
        return lesson

    def check(self, class_id: object, secret: object) -> Lesson:
        """The class, when `secret` is its lecturer's; raises `Forbidden` otherwise."""
        lesson = self.lesson(class_id)
        kept = self.store.secret(lesson.id) or ""
        if not isinstance(secret, str) or not SECRET.fullmatch(secret) or not hmac.compare_digest(
                digest(secret), kept):
            raise Forbidden(NOT_LECTURER)
        return lesson

    def lead(self, live, class_id: object, secret: object) -> Lesson:
        """`live`'s tab leads the class from now on (the lecturer's link opened on another
        screen); the caller shows it the lesson first."""
        lesson = self.check(class_id, secret)
        self.store.publish(lesson.id, None, None)  # the lecturer was seen
        live.member = Leader(self, lesson.id, _sent=lesson.query)
        return lesson

    def end(self, live, secret: object) -> Lesson:
        member = live.member
        if not isinstance(member, Leader):
            raise Forbidden(NOT_LECTURER)
        self.check(member.class_id, secret)
        ended = self.store.publish(member.class_id, None, None, ended="The lecturer ended the class.")
        live.member = None
        if ended is None:
            raise Gone(NO_CLASS)
        return ended

    def join(self, live, class_id: object) -> Follower:
        """`live`'s tab follows the class (its page opened the class link)."""
        lesson = self.lesson(class_id)
        member = live.member
        if isinstance(member, Leader) and member.class_id == lesson.id:
            raise Refused("This page leads the class.")
        if isinstance(member, Follower) and member.class_id == lesson.id:
            return member
        connected, _ = self.store.presence(lesson.id)
        if connected >= MAX_FOLLOWERS:
            raise Full(f"This class has {MAX_FOLLOWERS:,} pages following it, as many as one class may have.")
        live.member = Follower(self, lesson.id)
        return live.member

    def follow(self, live) -> tuple[Follower, Lesson]:
        """The lesson `live`'s tab is to be shown now (it follows, or asked to follow again)."""
        member = live.member
        if not isinstance(member, Follower):
            raise Refused("This page is not in a class: open the class link the lecturer gave.")
        return member, self.lesson(member.class_id)

    def expect(self, member: Follower, lesson: Lesson) -> None:
        """The tab is about to be shown `lesson`: the change that shows it is not the student's."""
        member.lesson = lesson.query

    def shown(self, member: Follower, lesson: Lesson, shown: bool = True) -> None:
        """The tab was shown `lesson` (or refused it: then it does not follow)."""
        was = member.following
        member.following, member.shown = shown, lesson.version if shown else member.shown
        if was != shown:
            self.counted(member.class_id)

    # the pages this process serves, counted for the lecturer

    def connect(self, key: str, member: Follower) -> None:
        with self._lock:
            self._pages.setdefault(member.class_id, {})[key] = member
        self.counted(member.class_id)

    def disconnect(self, key: str, member: Follower) -> None:
        with self._lock:
            pages = self._pages.get(member.class_id, {})
            if pages.get(key) is member:
                del pages[key]
            if not pages:
                self._pages.pop(member.class_id, None)
        self.counted(member.class_id)

    def counted(self, class_id: str) -> None:
        """Write this process's count of the class's pages to the store (a follower's page left,
        came, or stopped following)."""
        with self._counting:  # read and written together: an older count is never written last
            with self._lock:
                pages = list(self._pages.get(class_id, {}).values())
            self.store.set_presence(class_id, self.process, len(pages), sum(p.following for p in pages))
        self._tell(class_id)

    def recount(self) -> None:
        """Write every count again, so the store keeps them (`PRESENCE_SECONDS`)."""
        with self._lock:
            held = list(self._pages)
        for class_id in held:
            self.counted(class_id)

    def hear(self, listener: Callable[[str], None]) -> None:
        self._heard.append(listener)

    def _tell(self, class_id: str) -> None:
        for listener in list(self._heard):
            listener(class_id)


class Forbidden(Refused):
    """Refused because the caller is not the lecturer: answered 403."""


class Gone(Refused):
    """No class has this id, or it ended: answered 404."""


class Full(Refused):
    """A bound was met (classes at once, from one address, pages in one class): answered 429."""
