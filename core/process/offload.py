"""Heavy work in a pool of one niced process, so it never holds the serving process's interpreter lock.

loky's (the stdlib's spawn would import app.py there). Tensors in shared memory cross as their file.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import itertools
import os
import resource
import threading
import time
from collections.abc import Callable
from typing import Any

import torch
from loky import ProcessPoolExecutor
from loky.backend.context import get_context
from threadpoolctl import threadpool_limits
from torch import nn
from torch.multiprocessing.reductions import reduce_storage, reduce_tensor, reduce_typed_storage

from core.model.embedding import BertEmbedding
from core.model.tokenizer import WordLevelTokenizer, WordPieceTokenizer
from core.model.training import Corpus, TrainConfig, train_copy
from core.process.memory import Budget

NICE = 10  # the pool's CPU priority below the server's: a keystroke goes first
POLL_SECONDS = 0.05  # how often a waiting caller reads its progress and asks its `stop`
STOP_GRACE_SECONDS = 10.0  # work still running this long after its stop was asked is killed

_RECIPES: dict[int, tuple[object, tuple]] = {}  # id -> (a process-lifetime object, how to build it)
_MESSAGES: Any = None  # the pool's process: where progress goes (`Offload.start`)


class OffloadError(RuntimeError):
    """The pool's process ended or could not be reached; the work was not done."""


def shared(obj: Any, recipe: tuple[Callable[..., Any], tuple]) -> Any:
    """Register `obj` (a lasting tokenizer) to cross as `recipe`, `(function, args)`, not pickled; returns `obj`."""
    _RECIPES[id(obj)] = (obj, recipe)
    return obj


def _by_recipe(obj: Any) -> tuple:
    found = _RECIPES.get(id(obj))
    return found[1] if found is not None and found[0] is obj else obj.__reduce_ex__(5)  # an upload's: by value


# torch's reductions (tensors through shared memory) and the recipes, for calls, results and progress
REDUCERS = {torch.Tensor: reduce_tensor, nn.Parameter: reduce_tensor, torch.UntypedStorage: reduce_storage,
            torch.TypedStorage: reduce_typed_storage, WordPieceTokenizer: _by_recipe, WordLevelTokenizer: _by_recipe}


def shared_empty(count: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """`count` uninitialised numbers (1-D) in shared memory, made there: nothing is moved later."""
    return torch.empty(0, dtype=dtype).set_(torch.UntypedStorage._new_shared(count * dtype.itemsize))


def crossing_bytes(obj: Any) -> int:
    """What sending `obj` to the pool's process copies: each storage not yet in shared memory, once."""
    seen: dict[int, int] = {}

    def walk(value: Any, depth: int = 0) -> None:
        if isinstance(value, torch.Tensor) and not value.is_shared():
            seen[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
        items = ((*value.parameters(), *value.buffers()) if isinstance(value, nn.Module)
                 else value if isinstance(value, list | tuple | set | frozenset) else value.values()
                 if isinstance(value, dict) else [getattr(value, f.name, None) for f in dataclasses.fields(value)]
                 if dataclasses.is_dataclass(value) and not isinstance(value, type) else ())
        for item in items if depth < 8 else ():
            walk(item, depth + 1)

    walk(obj)
    return sum(seen.values())


def _more_files() -> None:
    """The soft limit of open files raised to the hard one: each table in shared memory holds one."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def niced(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` on the server's one niced thread, for heavy work that stays here (a random table)."""
    return _NICED.submit(function, *args).result()


def _lowered() -> None:
    with contextlib.suppress(OSError):  # a platform without per-thread priorities runs it as it is
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0) + NICE)


_NICED = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="niced", initializer=_lowered)


class Offload:
    """One process and its calls, one at a time, passed `progress` and `stop` hooks that reach the caller's;
    a dead process is `OffloadError` and the next call starts another."""

    def __init__(self, nice: int = NICE, budget: Budget | None = None) -> None:
        self.nice, self.budget = nice, budget  # what a call copies there is reserved first (`crossing_bytes`)
        self._pool: ProcessPoolExecutor | None = None
        self._ids = itertools.count(1)  # what an abandoned call still reports is not read as the next one's
        self._call_lock, self._start_lock = threading.Lock(), threading.Lock()

    def start(self) -> None:
        """Start the process now (imports and a warming training take seconds), without waiting."""
        with self._start_lock:
            if self._pool is None:
                _more_files()
                self._messages = get_context("loky").SimpleQueue(reducers=REDUCERS)  # progress: (call id, args, kwargs)
                self._stopping = torch.zeros(1, dtype=torch.int64).share_memory_()  # the id of the call to stop
                self._pool = ProcessPoolExecutor(1, job_reducers=REDUCERS, result_reducers=REDUCERS,
                                                 initializer=_started, initargs=(self.nice, self._messages))

    def call(self, function: Callable[..., Any], *args: Any,
             progress: Callable[..., None] | None = None, stop: Callable[[], bool] | None = None) -> Any:
        """`function(*args)` in the pool's process; what crosses by copy is reserved in the budget first."""
        copies = crossing_bytes(args) if self.budget is not None else 0
        with (self.budget.reserve(copies, "the heavy work's copy of its tables") if copies
              else contextlib.nullcontext()), self._call_lock:
            self.start()
            call, stopping = next(self._ids), None
            try:
                future = self._pool.submit(_run, call, self._stopping, function, args, progress is not None,
                                           stop is not None)
                while True:
                    done = concurrent.futures.wait([future], POLL_SECONDS).done
                    while not self._messages.empty():
                        sent, values, named = self._messages.get()
                        if sent == call:
                            progress(*values, **named)
                    if done:
                        return future.result()
                    if stop is not None and stopping is None and stop():
                        self._stopping[0], stopping = call, time.monotonic()
                    elif stopping is not None and time.monotonic() - stopping > STOP_GRACE_SECONDS:
                        self.close(kill=True)  # work that does not read its `stop` is ended
                        raise OffloadError("The heavy work did not stop when asked, so the process that runs it "
                                           "was ended; try again.")
            except concurrent.futures.process.BrokenProcessPool as error:
                self.close(kill=True)  # loky's "un-serialize": the process could not read the call
                raise OffloadError(f"The process that runs heavy work could not read it ({error.__cause__})."
                                   if "un-serialize" in str(error) else "The process that runs heavy work (training, "
                                   "refits, exports) ended before it finished, perhaps short of memory; try again."
                                   ) from error
            except BaseException:
                self._stopping[0] = call  # left mid-call (a progress callback failed): the work stops
                raise

    def close(self, kill: bool = False) -> None:
        """End the process (a running call is waited for, unless `kill`)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, kill_workers=kill)


# the pool's process


def _started(nice: int, messages: Any) -> None:
    """The process's start: niced, one thread, watching its server (`_orphaned`), then `warm()`."""
    global _MESSAGES
    threading.Thread(target=_orphaned, args=(os.getppid(),), name="server-watch", daemon=True).start()
    os.nice(nice)
    _more_files()
    torch.set_num_threads(1)
    threadpool_limits(1)  # numpy's and scikit-learn's BLAS
    _MESSAGES = messages
    warm()


def _orphaned(server: int) -> None:
    """Ends this process once the server that started it is gone, however it went (SIGTERM, SIGKILL):
    an idle loky worker waits for its next call forever, holding its tables' memory."""
    while os.getppid() == server:
        time.sleep(1)
    os._exit(0)


def _run(call: int, stopping: torch.Tensor, function: Callable[..., Any], args: tuple, reports: bool,
         stops: bool) -> Any:
    hooks: dict[str, Callable[..., Any]] = {}
    if reports:
        hooks["progress"] = lambda *values, **named: _MESSAGES.put((call, values, named))
    if stops:
        hooks["stop"] = lambda: int(stopping[0]) == call  # the server's memory, read here
    return function(*args, **hooks)


def warm() -> None:
    """A one-step training on a tiny layer: a first training imports torch's compiler (seconds)."""
    corpus = Corpus.builtin()
    tokenizer = WordLevelTokenizer.from_text("\n".join(corpus.sentences), max_size=50)
    train_copy(BertEmbedding(vocab_size=50, d_model=2, maxlen=16), (), corpus, tokenizer, TrainConfig(steps=1))
