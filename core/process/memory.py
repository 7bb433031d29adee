"""The process's one memory budget: what visitors can make the server hold, admitted before it is made.

BERT's and GloVe's tables are read once and shared: the process's base, not a visitor's. What a
visitor can add, each path reserves here first (`Budget.reserve`), and refused past the limit
with a sentence: a random layer of their own settings, another position table, an upload while
it is read and its table, a training's copies (`core.model.training.training_bytes`) and what a
call copies to the heavy-work process (`core.process.offload.crossing_bytes`). Answers waiting
to be read by their pages have a part of their own (`answer_limit`), counted per address by
`ui.admission`. What is held is read from the holders (`Budget`), never tallied. A tab and the
tabs of one address are capped too (`check_tab`, `check_client`). The limits come from the
environment (`EXPLORER_TABLE_MEMORY_MIB`, `EXPLORER_TAB_MEMORY_MIB`).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from torch import nn

from core.view.options import Refused

MIB = 2**20
# every visitor's private tables together: a 16 GB Space keeps the base (BERT, GloVe, gradio
# and the heavy-work process) and this, with room to spare for the work of the moment
PROCESS_BYTES = 4096 * MIB
# one client address (a household, a school behind one address: by its /64 for IPv6): a quarter
# of the process's budget, so a stranger's few greedy tabs cannot hold it all and lock everyone
# else out of uploads and large tables
ADDRESS_SHARE = 4
# one tab: the largest random layer with a position table of another kind (136 MiB), beside the
# largest upload it keeps to switch back to (60 million numbers, 229 MiB), and a training
TAB_BYTES = 448 * MIB
WORD_BYTES = 120  # what one word of an uploaded vocabulary costs: its string, its dict entry, its list slot
# what a tab holds beside its tables, counted for every tab in the store: its view, its session's
# objects and gradio's per-session state (its last outputs). Set from what the launched app's
# RSS grows per new tab beside its tables (bench/memory_attack.py prints it)
TAB_STATE_BYTES = 384 * 2**10
# the share of the budget kept free for what it cannot count: the allocator's slack after tables
# come and go, the objects of a tab past TAB_STATE_BYTES. With the budget filled by uploads, the
# process grows beyond what was counted by less than this share (`python -m bench.public_space
# --quick` prints it), so counted tables may fill the rest, and RSS stays within the budget
UNCOUNTED = 0.06
# the part of the budget (one in ANSWERS) kept for answers waiting to be read by their pages
# (ui/admission.py counts them, an address at most ANSWER_BYTES): tables fill the rest, so a budget
# full of tables leaves a keystroke's answer its room, and unread answers cannot crowd out tables
ANSWERS = 16

Holding = dict[int, int]  # a storage's address -> its bytes


def private(modules: Iterable[nn.Module | None], words: Iterable[object] = ()) -> Holding:
    """The storages `modules` hold (by address, with their bytes), and an estimate for
    vocabularies (`words`: tokenizers of uploaded files) under their ids."""
    held: Holding = {}
    for module in modules:
        if module is None:
            continue
        for tensor in (*module.parameters(), *module.buffers()):
            storage = tensor.untyped_storage()
            held[storage.data_ptr()] = storage.nbytes()
    for tokenizer in words:
        if tokenizer is not None:
            held[id(tokenizer)] = WORD_BYTES * len(getattr(tokenizer, "vocab", ()))
    return held


class Budget:
    """What the process's private tables may hold, and the one check every new table passes.

    What is held is read from the holders, never tallied: the distinct private tensors of every
    tab and cache, each once however many share it, and each tab's other state
    (`TAB_STATE_BYTES`). Past the limit, the least recently used tabs whose tables their view
    rebuilds exactly are parked (`core.serving.tabs.Tab.park`), then a new table is refused.

    `tabs()` lists the store's tabs, least recently used first, each with what it holds
    (`private`); `park(tab)` lets a tab's tables go when its view can rebuild them, and says
    whether it did. Caches say what they keep and how to empty them (`kept_by`). Both are
    given by the store (`core.serving.tabs.Tabs`) and the caches (`core.tables.presets`), which are the
    truth; with neither, nothing is held and only the limits apply.
    """

    def __init__(self, limit: int = PROCESS_BYTES, tab_limit: int = TAB_BYTES) -> None:
        self.limit, self.tab_limit = limit, tab_limit
        self.tabs: Callable[[], list[tuple[object, Holding]]] = list
        self.park: Callable[[object], bool] = lambda tab: False
        self._kept: list[Callable[[], Holding]] = []
        self._clear: list[Callable[[], None]] = []
        self._base: set[int] = set()  # storages of the shared presets: never a visitor's
        self._reserved = 0
        self._lock = threading.Lock()

    @property
    def admits(self) -> int:
        """What the counted tables may fill: the limit less what it cannot count (UNCOUNTED) and
        the answers' part (`answer_limit`)."""
        return self.limit - int(self.limit * UNCOUNTED) - self.answer_limit

    @property
    def answer_limit(self) -> int:
        """What answers waiting to be read may hold, every visitor's together (ui/admission.py)."""
        return self.limit // ANSWERS

    @classmethod
    def from_environment(cls) -> Budget:
        def mib(name: str, default: int) -> int:
            value = os.environ.get(name, "")
            return int(value) * MIB if value.strip().isdigit() and int(value) > 0 else default

        return cls(mib("EXPLORER_TABLE_MEMORY_MIB", PROCESS_BYTES), mib("EXPLORER_TAB_MEMORY_MIB", TAB_BYTES))

    def shared(self, module: nn.Module) -> nn.Module:
        """Mark a preset's tables (BERT's, GloVe's) as the process's base; returns `module`."""
        self._base.update(private([module]))
        return module

    def kept_by(self, holder: Callable[[], Holding], clear: Callable[[], None]) -> None:
        """Count what a cache holds (`holder()` lists it now); `clear()` empties it to make room."""
        self._kept.append(holder)
        self._clear.append(clear)

    def held(self) -> int:
        """Bytes held now: the distinct private storages of tabs and caches, and each tab's state."""
        tabs, every = self._holders()
        return self._total(tabs, every)

    @staticmethod
    def _total(tabs: list, every: Holding) -> int:
        return sum(every.values()) + len(tabs) * TAB_STATE_BYTES

    def _holders(self) -> tuple[list[tuple[object, Holding]], Holding]:
        tabs = [(tab, self._own(holding)) for tab, holding in self.tabs()]
        every: Holding = {}
        for holding in (*(h for _, h in tabs), *(self._own(kept()) for kept in self._kept)):
            every.update(holding)
        return tabs, every

    def _own(self, holding: Holding) -> Holding:
        return {address: size for address, size in holding.items() if address not in self._base}

    def check_client(self, tab: object, holding: Holding) -> None:
        """Refuse a tab's tables when, with them (`holding`: what the tab would hold), the tabs of
        its client address would hold more than their share of the budget (`ADDRESS_SHARE`).
        The address's own tabs unused longest whose tables can be rebuilt are parked first."""
        client = getattr(tab, "client", None)
        if client is None:
            return
        share = self.limit // ADDRESS_SHARE
        mine = [(other, self._own(h)) for other, h in self.tabs()
                if other is not tab and getattr(other, "client", None) == client]

        def size() -> int:
            held = dict(self._own(holding))
            for _, other in mine:
                held.update(other)
            return sum(held.values())

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
        """Room for a new table of `nbytes` while it is built; parks tabs to make it, or refuses.

        The reservation lasts while the table is built (and counted twice once it is held:
        erring on the safe side for a moment), so two builds at once cannot both take the last
        room.
        """
        if nbytes > self.tab_limit:
            self.check_tab({-1: nbytes})
        with self._lock:
            tabs, every = self._holders()
            short = self._total(tabs, every) + self._reserved + nbytes - self.admits
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
        """Empty the caches (what they keep is rebuilt on demand), then park tabs, least recently
        used first, until what only they held covers what is still `needed`."""
        for clear in self._clear:
            clear()
        holders = Counter(address for _, holding in tabs for address in holding)
        needed -= sum(every.values()) - sum(size for address, size in every.items() if address in holders)
        freed = 0
        for tab, holding in tabs:
            if freed >= needed:
                break
            alone = sum(size for address, size in holding.items() if holders[address] == 1)
            if alone and self.park(tab):
                freed += alone
                holders.subtract(holding.keys())


BUDGET = Budget.from_environment()
