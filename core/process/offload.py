"""Heavy work in a child process, so it never holds the serving process's interpreter lock.

A training step, a vocabulary PCA or an export is mostly torch and numpy, but between their
kernels each runs Python, and Python runs one thread at a time per process: in a thread of the
server, one visitor looping *Train*, *Refit* and *Export* would make every other visitor's
keystroke wait its turn for the lock (`python -m bench.run --only neighbour` measures a
keystroke beside that work in a thread and in a child, side by side).

`Offload` keeps one such child (`python -m core.serving.heavywork`), niced and on one torch
thread, so the serving process keeps a core; tables cross without copies (`_Crossing`). If the
child dies (killed for memory, a crash in a native library), the call raises `OffloadError`
and the next call starts a new child. The child ends when its parent's end of the socket
closes, so it never outlives the server.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import errno
import io
import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch
from torch import nn

from core.process import sharedmemory
from core.process.memory import Budget
from core.view.options import Refused

ROOT = Path(__file__).resolve().parents[2]
# the child's entry: it knows what to warm (the tables and the training, above this package)
CHILD = "core.serving.heavywork"
NICE = 10  # the child's CPU priority below the server's: a keystroke goes first
POLL_SECONDS = 0.05  # how often a waiting caller asks its `stop`
STOP_GRACE_SECONDS = 10.0  # work still running this long after its stop was sent is killed

Recipe = tuple[Callable[..., Any], tuple]

# an object's key (see _key_of) -> (a weak reference to it, its recipe); and recipe -> object,
# weakly: a table dropped from its cache is not kept alive by having crossed once
_REGISTRY: dict[tuple, tuple[Callable[[], Any], Recipe]] = {}
_BUILT: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


class OffloadError(RuntimeError):
    """The child process ended or could not be reached; the work was not done."""


def shared(obj: Any, recipe: Recipe) -> Any:
    """Register `obj` (a shared read-only table or tokenizer, weakly referable) as what `recipe` builds; returns `obj`.

    `recipe` is `(function, args)`, both picklable, and `function(*args)` must return an object
    equal in every value to `obj` in any process: it is how the other side gets it without a copy.
    """
    key = _key_of(obj)

    def forget(ref: weakref.ref) -> None:
        with _REGISTRY_LOCK:
            if _REGISTRY.get(key, (None,))[0] is ref:
                del _REGISTRY[key]

    with _REGISTRY_LOCK:
        _REGISTRY[key] = (weakref.ref(obj, forget), recipe)
        _BUILT.setdefault(recipe, obj)
    return obj


def _key_of(obj: Any) -> tuple:
    if isinstance(obj, torch.Tensor):
        # `detach()` and `nn.Embedding.weight` give new tensor objects over the same memory, so a
        # table is known by the memory it views, not by its identity
        return ("tensor", obj.data_ptr(), tuple(obj.shape), tuple(obj.stride()), obj.dtype)
    return ("object", id(obj))


def _crossing_as(obj: Any) -> tuple | None:
    """How `obj` crosses by reference: ("tensor", recipe, as a parameter) or ("object", recipe);
    None when it is not registered and crosses by value."""
    found = _REGISTRY.get(_key_of(obj))
    if found is None or found[0]() is None:  # a dead table's memory or id, now another's
        return None
    if isinstance(obj, torch.Tensor):
        return ("tensor", found[1], isinstance(obj, nn.Parameter))
    return ("object", found[1]) if found[0]() is obj else None


def _rebuilt(recipe: Recipe) -> Any:
    with _REGISTRY_LOCK:
        found = _BUILT.get(recipe)
    if found is not None:
        return found
    function, args = recipe
    return shared(function(*args), recipe)  # the function may have registered it already


# a tensor whose storage is this large crosses by value one way only: what comes back over its
# memory is a reference to the sender's own (`_Crossing`); smaller ones are cheaper copied back
TOKEN_BYTES = 64 * 2**10


class _Crossing:
    """One call's messages, pickled and read on either side, tables crossing without copies.

    From the server: a shared read-only table (BERT's, GloVe's, a seeded random one),
    registered with `shared(obj, recipe)`, crosses as its recipe and is rebuilt once on the
    other side; a table in shared memory (`core.process.sharedmemory`) as its file, whose
    descriptor goes with the message (`fds`); any other large tensor by value, under a token
    (what crosses by value, a trained patch or a corpus, is reserved in the memory budget
    first). In the child, each table it was sent is known by its memory, and a tensor over that
    memory goes back as the token, never as a copy: a trained layer reads over the table it was
    sent (`core.model.training.trainable_copy`), so a trained upload and its snapshots come back
    as their trained rows alone. The work must not change in place what it was sent (the shared
    tables are read-only, and trained parts are copies).
    """

    def __init__(self, fds: list[int] | None = None) -> None:
        self.sent: list[torch.Tensor] = []  # the server: what it sent, by token
        self._tokens: dict[int, int] = {}  # the server: a storage's address -> its token
        self._passing: set[int] = set()  # the server: tensors being pickled by value just now
        self.fds: list[int] = []  # the server: descriptors of the files the message names
        self._fd_index: dict[int, int] = {}  # the server: a segment's key -> its place in `fds`
        self.received = fds is not None  # the child's side: reads what the server sent
        self._given = list(fds or ())  # the child: the descriptors that came with the message
        self._mapped: dict[int, torch.Tensor] = {}  # the child: a segment's key -> its memory here
        self._known: dict[int, int] = {}  # the child: a received storage's address -> its token

    def dumps(self, obj: Any) -> bytes:
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        pickler.persistent_id = self._persistent_id
        pickler.dump(obj)
        return buffer.getvalue()

    def loads(self, data: bytes) -> Any:
        unpickler = pickle.Unpickler(io.BytesIO(data))
        unpickler.persistent_load = self._persistent_load
        return unpickler.load()

    def _persistent_id(self, obj: Any) -> tuple | None:
        found = _crossing_as(obj)
        if found is not None or type(obj) is not torch.Tensor:  # a Parameter crosses as its `.data`
            return found
        address = obj.untyped_storage().data_ptr()
        where = (obj.dtype, obj.storage_offset(), tuple(obj.shape), tuple(obj.stride()))
        if self.received:  # the child: a tensor over memory it was sent goes back as its token
            token = self._known.get(address)
            return None if token is None else ("sent", token, *where)
        segment = sharedmemory.segment_of(obj)
        if segment is not None:
            if segment.key not in self._fd_index:
                self._fd_index[segment.key] = len(self.fds)
                self.fds.append(segment.fd)
            return ("segment", self._fd_index[segment.key], segment.key, segment.size, self._token(obj), *where)
        if obj.untyped_storage().nbytes() >= TOKEN_BYTES and id(obj) not in self._passing:
            self._passing.add(id(obj))  # pickled by value inside the reference, once
            return ("value", self._token(obj), obj)
        return None

    def _token(self, tensor: torch.Tensor) -> int:
        address = tensor.untyped_storage().data_ptr()
        if address not in self._tokens:
            self._tokens[address] = len(self.sent)
            self.sent.append(tensor)
        return self._tokens[address]

    def _persistent_load(self, reference: tuple) -> Any:
        kind = reference[0]
        if kind == "sent":  # the server: its own memory, as the child viewed it
            _, token, *where = reference
            return sharedmemory.view(self.sent[token].untyped_storage(), *where)
        if kind == "segment":  # the child: the server's file, mapped here
            _, index, key, size, token, *where = reference
            if key not in self._mapped:
                self._mapped[key] = sharedmemory.mapped(os.dup(self._given[index]), size)
            storage = self._mapped[key].untyped_storage()
            self._known[storage.data_ptr()] = token
            return sharedmemory.view(storage, *where)
        if kind == "value":
            _, token, tensor = reference
            self._known[tensor.untyped_storage().data_ptr()] = token
            return tensor
        found = _rebuilt(reference[1])  # a recipe
        if kind == "object":
            return found
        if reference[2]:  # the same class as it left: a module's parameter, or a plain view
            return found if isinstance(found, nn.Parameter) else nn.Parameter(found, requires_grad=False)
        return found.detach()

    def close(self) -> None:
        """The child: the descriptors that came with the message (each mapping keeps its own)."""
        for fd in self._given:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._given = []


def dumps(obj: Any) -> bytes:
    """`obj` as the server would send it to the child (the files it names are not sent)."""
    return _Crossing().dumps(obj)


def crossing_bytes(obj: Any) -> int:
    """What sending `obj` to the child would copy: the tensors that cross by value, each storage
    once, twice over (the pickled message here, the tables there). Registered tables and tables
    in shared memory cost nothing; modules, tensors and the containers holding them are walked."""
    seen: dict[int, int] = {}

    def walk(value: Any, depth: int = 0) -> None:
        if depth > 8:
            return
        if isinstance(value, nn.Module):
            for tensor in (*value.parameters(), *value.buffers()):
                walk(tensor, depth + 1)
        elif isinstance(value, torch.Tensor):
            if _crossing_as(value) is None and sharedmemory.segment_of(value) is None:
                storage = value.untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                walk(item, depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, depth + 1)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for field in dataclasses.fields(value):
                walk(getattr(value, field.name, None), depth + 1)

    walk(obj)
    return 2 * sum(seen.values())


def _send(connection: Connection, channel: socket.socket | None, payload: bytes, fds: list[int] = ()) -> None:
    """One message: the number of descriptors, the pickle; then the descriptors, on one byte."""
    connection.send_bytes(bytes([len(fds)]) + payload)
    if fds:
        socket.send_fds(channel, [b"\0"], fds)


def _receive(connection: Connection, channel: socket.socket | None) -> tuple[bytes, list[int]]:
    data = connection.recv_bytes()
    fds: list[int] = []
    if data[0]:
        _, fds, _, _ = socket.recv_fds(channel, 1, data[0])
    return data[1:], list(fds)


def niced(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` on this process's one niced thread, for the heavy work that must stay
    in the server (a random table it draws from: building one at the largest settings is a
    second of torch's work outside the interpreter lock): on two cores the threads answering
    the other pages come first. Linux gives each thread its own priority."""
    return _NICED.submit(function, *args).result()


def _lowered() -> None:
    with contextlib.suppress(OSError):  # a platform without per-thread priorities runs it as it is
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + NICE)


# its thread starts with the first job, not when this module is imported
_NICED = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="niced", initializer=_lowered)


def _spawn(command: list[str], fd: int) -> subprocess.Popen:
    """The child, started with a copy of the environment made here.

    Without `env`, the child is started (with vfork) on the process's own environment table,
    which the server's other threads may be rewriting as it starts (a library setting a
    variable): the exec then read a freed table and failed with "[Errno 14] Bad address", about
    once in fifteen launches on a busy machine, and the whole app failed to start. A copy is
    the child's alone. One more try covers any other passing failure of the same kind."""
    def start() -> subprocess.Popen:
        return subprocess.Popen(command, cwd=ROOT, pass_fds=(fd,), stdin=subprocess.DEVNULL, env=dict(os.environ))

    try:
        return start()
    except OSError as error:
        if error.errno != errno.EFAULT:
            raise
    time.sleep(0.1)
    return start()


class Offload:
    """One child process and the calls it runs, one at a time (callers wait their turn).

    The child is started on first use or by `start()`. `call(fn, *args)` sends a module-level
    function and its arguments, pickled, over a private socket pair, and returns what the
    child returns or raises what it raised. The work may report `progress` (sent back as it
    goes) and read `stop()` (forwarded from the caller's `stop`).
    """

    def __init__(self, nice: int = NICE, budget: Budget | None = None) -> None:
        self.nice = nice
        self.budget = budget  # what a call copies to the child is reserved there first (`crossing_bytes`)
        self._process: subprocess.Popen | None = None
        self._connection: Connection | None = None
        self._channel: socket.socket | None = None  # the same socket, for the descriptors a call sends
        self._call_lock = threading.Lock()  # one call at a time
        self._start_lock = threading.Lock()

    def start(self) -> None:
        """Start the child now (imports take a few seconds), so the first job does not wait for them."""
        with self._start_lock:
            if self._process is not None and self._process.poll() is None:
                return
            mine, theirs = socket.socketpair()
            self._process = _spawn([sys.executable, "-m", CHILD, str(theirs.fileno())], theirs.fileno())
            theirs.close()
            # from here, not by the child itself after its imports: it is niced from its first step
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.setpriority(os.PRIO_PROCESS, self._process.pid, os.getpriority(os.PRIO_PROCESS, 0) + self.nice)
            self._channel = socket.socket(fileno=os.dup(mine.fileno()))
            self._connection = Connection(mine.detach())

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None and self._process.poll() is None else None

    def call(self, function: Callable[..., Any], *args: Any,
             progress: Callable[..., None] | None = None, stop: Callable[[], bool] | None = None) -> Any:
        """`function(*args)` in the child; with `progress`, the function is passed a `progress`
        callable whose calls reach this one; with `stop`, a `stop` callable that turns true
        once this one has.

        What crosses by value (`crossing_bytes`) is reserved in the memory budget first; tables
        in shared memory cross as their files, and what comes back over them is this process's
        own memory (`_Crossing`)."""
        copies = crossing_bytes(args) if self.budget is not None else 0
        with (self.budget.reserve(copies, "the heavy work's copy of its tables") if copies
              else contextlib.nullcontext()), self._call_lock:
            self.start()
            connection, channel, crossing = self._connection, self._channel, _Crossing()
            try:
                message = crossing.dumps(("call", function, args, progress is not None, stop is not None))
                _send(connection, channel, message, crossing.fds)
                del message
                stopping: float | None = None  # when the stop was sent
                while True:
                    if stop is not None and stopping is None and stop():
                        _send(connection, channel, crossing.dumps(("stop",)))
                        stopping = time.monotonic()
                    elif stopping is not None and time.monotonic() - stopping > STOP_GRACE_SECONDS:
                        self.close(kill=True)  # work that does not read its `stop` is ended
                        raise OffloadError("The heavy work did not stop when asked, so the process that runs it was "
                                           "ended; try again.")
                    if not connection.poll(POLL_SECONDS):
                        continue
                    kind, *rest = crossing.loads(_receive(connection, channel)[0])
                    if kind == "progress":
                        progress(*rest[0], **rest[1])
                    elif kind == "done":
                        return rest[0]
                    elif kind == "error":
                        failure = rest[0]
                        break
            except (EOFError, OSError) as error:
                self.close()
                raise OffloadError("The process that runs heavy work (training, refits, exports) ended before it "
                                   "finished, perhaps short of memory; try again.") from error
            except BaseException:
                # left mid-call (a progress callback failed, the thread was interrupted): the child
                # may still send this call's messages, which the next call would read as its own
                self.close(kill=True)
                raise
        raise failure

    def close(self, kill: bool = False) -> None:
        """End the child (closing its socket ends it; a stuck one, or with `kill`, is killed)."""
        process, connection, channel = self._process, self._connection, self._channel
        self._process = self._connection = self._channel = None
        if channel is not None:
            channel.close()
        if connection is not None:
            connection.close()
        if process is not None:
            if kill:
                process.kill()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)


# the child: `python -m core.serving.heavywork FD`, which warms and then runs `main`


def _serve(connection: Connection, channel: socket.socket) -> None:
    """Run calls in the main thread; a reader thread takes `stop` messages meanwhile. Each call's
    messages are read and written by a crossing of its own (`_Crossing`): what comes back over
    the tables it was sent goes back as a reference."""
    calls: queue.Queue = queue.Queue()
    stopping = threading.Event()
    send_lock = threading.Lock()

    def send(crossing: _Crossing, message: tuple) -> None:
        data = crossing.dumps(message)
        with send_lock:
            _send(connection, None, data)

    def read() -> None:
        while True:
            try:
                data, fds = _receive(connection, channel)
            except (EOFError, OSError):
                calls.put(None)  # the parent is gone
                return
            crossing = _Crossing(fds)
            try:
                message = crossing.loads(data)
            except Exception as error:  # noqa: BLE001 - e.g. a function this process cannot import
                crossing.close()
                calls.put((crossing, ("unreadable", error)))
                continue
            if message[0] == "stop":
                stopping.set()
            else:
                calls.put((crossing, message))

    threading.Thread(target=read, daemon=True).start()
    while (taken := calls.get()) is not None:
        crossing, message = taken
        if message[0] == "unreadable":
            unreadable = OffloadError(f"The process that runs heavy work could not read it ({message[1]}).")
            send(crossing, ("error", unreadable))
            continue
        crossing.close()  # the files are mapped: their descriptors are not needed
        _, function, args, reports, stops = message
        stopping.clear()
        hooks = {}
        if reports:
            hooks["progress"] = lambda *values, _on=crossing, **named: send(_on, ("progress", values, named))
        if stops:
            hooks["stop"] = stopping.is_set
        try:
            result = ("done", function(*args, **hooks))
        except BaseException as error:  # noqa: BLE001 - every failure goes back to the caller
            if not isinstance(error, Refused):  # a refusal is an answer; anything else, a fault to log
                traceback.print_exc()
            result = ("error", error)
        try:
            send(crossing, result)
        except (pickle.PicklingError, TypeError, AttributeError) as error:
            send(crossing, ("error", OffloadError(f"The heavy work's result could not be sent back ({error}).")))
        del taken, crossing, message, args, result, hooks  # the tables it mapped go with the call


def main(argv: list[str], warm: Callable[[], None] = lambda: None) -> None:
    """The child's life: one torch thread, `warm()` (what its first call would pay), then serve
    calls on the descriptor `argv[0]` until the parent's end closes."""
    fd = int(argv[0])
    torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415

        threadpool_limits(1)
    except ImportError:
        pass
    warm()
    _serve(Connection(fd), socket.socket(fileno=os.dup(fd)))
