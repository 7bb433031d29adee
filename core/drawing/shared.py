"""Drawings shared by every tab that shows the same view on the same shared tables.

A class's hundred pages are each shown the lecturer's lesson: on shared tables (BERT's, GloVe's,
a seeded random layer, one training's result) every one of them would draw the same plane, side
view or background. `shared` draws it once and hands each tab its own copy of the lists in it.
What decides a drawing is the view, the tokens and the tables (`key`); a session with tables
of its own (an upload, a frozen plane) always draws its own. The cache is bounded in bytes
(cachetools, sized by what each drawing's text holds), and a drawing names its tables weakly:
an id reused by other tables after those went is not a match.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import weakref
from collections.abc import Callable, Hashable

from cachetools import LRUCache

from core.tables.session import Session

KEPT_BYTES = 64 * 2**20  # what the kept drawings may hold together; one larger than this is not kept


def _size(entry: tuple[weakref.ref, object]) -> int:
    drawn = entry[1]
    values = drawn.values() if isinstance(drawn, dict) else (drawn,)
    return 256 + sum(len(value) if isinstance(value, str) else 1024 for value in values)


_KEPT: LRUCache = LRUCache(maxsize=KEPT_BYTES, getsizeof=_size)
_LOCK = threading.Lock()


def key(kind: str, view: Hashable, session: Session, tokens: tuple[str, ...] | None) -> tuple | None:
    """What decides a drawing on shared tables; None for a session with tables of its own.

    A trained session is named by its trained tables, which every page that adopted that
    training holds with the rest of its result, and which nothing changes once made."""
    if session.frozen_basis is not None or "upload" in (session.base.key, session.source.key):
        return None
    return (kind, view, tokens, id(session.source.model), id(session.trained), session.base.key, session.source.key,
            session.settings, session.positions, session.frozen, session.basis)


def shared(kind: str, view: Hashable, session: Session, tokens: tuple[str, ...] | None, draw: Callable[[], object],
           also: Hashable = None):
    """`draw()`, or what it gave a tab that showed the same view on the same shared tables.
    `also`: anything else the drawing shows (a class's words), part of what names it."""
    named = key(kind, view, session, tokens)
    if named is None:
        return draw()
    named = (*named, also)
    with _LOCK:
        found = _KEPT.get(named)
    if found is None or found[0]() is not session.model:
        found = (weakref.ref(session.model), draw())
        with _LOCK, contextlib.suppress(ValueError):  # one larger than the whole cache is not kept
            _KEPT[named] = found
    drawn = found[1]
    if isinstance(drawn, dict):  # a tab's lists are its own to change
        drawn = {name: copy.deepcopy(value) if isinstance(value, list) else value for name, value in drawn.items()}
    return drawn


def forget() -> None:
    """Let go of every shared drawing (the tests start each from none)."""
    with _LOCK:
        _KEPT.clear()
