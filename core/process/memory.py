"""The process's one memory budget: what visitors can make the server hold, admitted before it is made.

Shared presets are the process's base. Every path that makes a visitor's table reserves it first
(`Budget.reserve`) or is refused with a sentence; unread answers have their own part (`answer_limit`).
"""

from __future__ import annotations

import os
import threading
from collections import ChainMap, Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from torch import nn

from core.view.options import Refused

MIB = 2**20
# every visitor's private tables together: a 16 GB Space keeps the base and this, with room to spare
PROCESS_BYTES = 4096 * MIB
# one client address may hold a quarter of the budget: a stranger's greedy tabs cannot lock everyone out
ADDRESS_SHARE = 4
# one tab: the largest random layer with another position table (136 MiB), the largest upload (229 MiB)
TAB_BYTES = 448 * MIB
WORD_BYTES = 120  # what one word of an uploaded vocabulary costs: its string, its dict entry, its list slot
# what a tab holds beside its tables: the RSS a new tab adds (bench/memory_attack.py prints it)
TAB_STATE_BYTES = 384 * 2**10
# kept free for the allocator's slack, which bench/public_space.py --quick measures below it
UNCOUNTED = 0.06
# one part in ANSWERS is kept for unread answers (ui/admission.py), so they and tables cannot crowd each other
ANSWERS = 16

Holding = dict[int, int]  # a storage's address -> its bytes


def private(modules: Iterable[nn.Module | None], words: Iterable[object] = ()) -> Holding:
    """The storages `modules` hold (address -> bytes), and an estimate for uploads' vocabularies (`words`)."""
    storages = [tensor.untyped_storage() for module in modules if module is not None
                for tensor in (*module.parameters(), *module.buffers())]
    held: Holding = {storage.data_ptr(): storage.nbytes() for storage in storages}
    held.update((id(tokenizer), WORD_BYTES * len(getattr(tokenizer, "vocab", ()))) for tokenizer in words
                if tokenizer is not None)
    return held


class Budget:
    """What the process's private tables may hold, and the one check every new table passes. What is
    held is read from the holders (`tabs()`, set by the store, and `kept_by`), never tallied; past the
    limit, caches are emptied and tabs parked (`park`) least recently used first."""

    def __init__(self, limit: int = PROCESS_BYTES, tab_limit: int = TAB_BYTES) -> None:
        self.limit, self.tab_limit = limit, tab_limit
        self.tabs: Callable[[], list[tuple[object, Holding]]] = list
        self.park: Callable[[object], bool] = lambda tab: False
        self._caches: list[tuple[Callable[[], Holding], Callable[[], None]]] = []  # (what it keeps, clear)
        self._base: set[int] = set()  # storages of the shared presets: never a visitor's
        self._reserved = 0
        self._lock = threading.Lock()

    @property
    def admits(self) -> int:
        """What the counted tables may fill: the limit less UNCOUNTED and the answers' part."""
        return self.limit - int(self.limit * UNCOUNTED) - self.answer_limit

    @property
    def answer_limit(self) -> int:
        """What answers waiting to be read may hold, every visitor's together (ui/admission.py)."""
        return self.limit // ANSWERS

    def shared(self, module: nn.Module) -> nn.Module:
        """Mark a preset's tables (BERT's, GloVe's) as the process's base; returns `module`."""
        self._base.update(private([module]))
        return module

    def kept_by(self, holder: Callable[[], Holding], clear: Callable[[], None]) -> None:
        """Count what a cache holds (`holder()` lists it now); `clear()` empties it to make room."""
        self._caches.append((holder, clear))

    def held(self, holders: tuple | None = None) -> int:
        """Bytes held now (or by `holders`, from `_holders`): distinct private storages and each tab's state."""
        tabs, every = holders or self._holders()
        return sum(every.values()) + len(tabs) * TAB_STATE_BYTES

    def _holders(self) -> tuple[list[tuple[object, Holding]], Holding]:
        tabs = [(tab, self._own(holding)) for tab, holding in self.tabs()]
        caches = [self._own(kept()) for kept, _ in self._caches]
        return tabs, dict(ChainMap(*(holding for _, holding in tabs), *caches))

    def _own(self, holding: Holding) -> Holding:
        return {address: size for address, size in holding.items() if address not in self._base}

    def check_client(self, tab: object, holding: Holding) -> None:
        """Refuse a tab's tables (`holding`) past its address's share, after parking the address's other tabs."""
        client = getattr(tab, "client", None)
        if client is None:
            return
        share = self.limit // ADDRESS_SHARE
        mine = [(other, self._own(h)) for other, h in self.tabs()
                if other is not tab and getattr(other, "client", None) == client]

        def size() -> int:  # each storage once, however many of the tabs hold it
            return sum(ChainMap(self._own(holding), *(other for _, other in mine)).values())

        for index, (other, _) in enumerate(mine):  # least recently used first
            if size() <= share:
                break
            if self.park(other):
                mine[index] = (other, {})
        if size() > share:
            raise Refused(f"The pages from your address would hold {size() / MIB:,.0f} MiB of the server's memory "
                          f"for visitors' own tables, more than one address may ({share / MIB:,.0f} MiB): close "
                          "pages you no longer use (they are let go after an hour unused), or choose smaller "
                          "settings, or BERT's or GloVe's tables, which every page shares.")

    def check_tab(self, holding: Holding) -> None:
        """Refuse a tab's tables past the tab's limit (`holding`: what it would hold)."""
        size = sum(self._own(holding).values())
        if size > self.tab_limit:
            raise Refused(f"These tables would take {size / MIB:,.0f} MiB of the server's memory for this page, more "
                          f"than the {self.tab_limit / MIB:,.0f} MiB a page may hold: choose smaller settings (fewer "
                          "dimensions or positions), or BERT's or GloVe's tables, which every page shares.")

    @contextmanager
    def reserve(self, nbytes: int, what: str) -> Iterator[None]:
        """Room for a new table of `nbytes` while it is built (parking tabs for it), or `Refused`."""
        self.check_tab({-1: nbytes})
        with self._lock:
            tabs, every = self._holders()
            short = self.held((tabs, every)) + self._reserved + nbytes - self.admits
            if short > 0:
                self._make_room(short, tabs, every)
                short = self.held() + self._reserved + nbytes - self.admits
            if short > 0:
                raise Refused(
                    f"The server's memory for visitors' own tables ({self.limit / MIB:,.0f} MiB, shared by every page) "
                    f"has no room for {what} ({nbytes / MIB:,.1f} MiB) just now: choose smaller settings, or BERT's or "
                    "GloVe's tables, which every page shares, or try again in a few minutes.")
            self._reserved += nbytes
        try:
            yield
        finally:
            with self._lock:
                self._reserved -= nbytes

    def _make_room(self, needed: int, tabs: list[tuple[object, Holding]], every: Holding) -> None:
        """Empty the caches, then park tabs until what only they held covers what is still `needed`."""
        for _, clear in self._caches:
            clear()
        holders = Counter(address for _, holding in tabs for address in holding)
        needed -= sum(size for address, size in every.items() if address not in holders)  # the caches' alone
        for tab, holding in tabs:
            if needed <= 0:
                break
            alone = sum(size for address, size in holding.items() if holders[address] == 1)
            if alone and self.park(tab):
                needed -= alone
                holders.subtract(holding.keys())


def _mib(name: str, default: int) -> int:
    value = os.environ.get(name, "")
    return int(value) * MIB if value.strip().isdigit() and int(value) > 0 else default


BUDGET = Budget(_mib("EXPLORER_TABLE_MEMORY_MIB", PROCESS_BYTES), _mib("EXPLORER_TAB_MEMORY_MIB", TAB_BYTES))
