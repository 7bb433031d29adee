"""The process's one memory budget (core/process/memory.py), the store's new-tab limit, and shared tables.

In process, with a budget and a store of each test's own: what is counted (each table once,
whoever holds it), what is parked to make room (the least recently used tab whose view
rebuilds its tables exactly), what is refused (with a sentence, changing nothing), and how
many tabs one address may open. The launched app's cases are in tests/test_public_space.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.process import memory
from core.process.memory import MIB, Budget
from core.serving.tabs import PUSHED_OUT, Expired, NewTabs, Tabs
from core.tables import presets
from core.tables.uploads import read_upload
from core.view.options import Refused
from core.view.state import Settings
from tests.test_tabs import Clock


def big(seed: int) -> dict:
    """A random layer of about 8 MiB: word-level, 2,000 rows at width 1,024, 64 positions."""
    return {"tokenizer": "word", "vocab_size": 2000, "d_model": 1024, "maxlen": 64, "seed": seed}


@pytest.fixture()
def budget(monkeypatch):
    """A budget of 20 MiB (two large layers and change) counting a store of its own."""
    own = Budget(limit=20 * MIB, tab_limit=12 * MIB)
    own.shared(presets.default_random_source().model)  # a fresh page's tables are every page's
    monkeypatch.setattr(memory, "BUDGET", own)
    monkeypatch.setattr(presets, "BUDGET", own)
    import core.serving.tabs

    monkeypatch.setattr(core.serving.tabs, "BUDGET", own)
    own.kept_by(lambda: memory.private(source.model for source in presets.random_source.values()),
                presets.random_source.cache_clear)
    presets.random_source.cache_clear()  # nothing kept from other tests: this store is the truth
    yield own
    presets.random_source.cache_clear()


def settle(tab, **settings) -> None:
    """The tab asks for random tables of these settings, as a settings event does."""
    tab.apply(lambda view: view.with_(source="random", **settings), lambda step: None)


def test_a_table_many_tabs_hold_is_counted_once(budget):
    store = Tabs(budget=budget)
    for name in ("a", "b", "c"):
        settle(store.open(name), **big(1))
    presets.random_source.cache_clear()  # only the tabs hold it now
    tabs = 3 * memory.TAB_STATE_BYTES  # what each tab holds beside its tables
    assert budget.held() - tabs == pytest.approx(Settings(**big(1)).table_bytes, rel=0.01)


def test_identical_settings_share_one_table_after_the_cache_let_it_go(budget):
    store = Tabs(budget=budget)
    settle(store.open("a"), **big(1))
    presets.random_source.cache_clear()
    settle(store.open("b"), **big(1))
    assert store.kept("a").session.source.model is store.kept("b").session.source.model


def test_past_the_budget_the_longest_unused_tab_is_parked_and_rebuilt_exactly(budget):
    clock = Clock()
    store = Tabs(budget=budget, clock=clock)
    first = store.open("first")
    settle(first, **big(1))
    first.apply(lambda view: view.with_(sentence_a="the quick brown fox", token=2), lambda step: None)
    before = first.session.fingerprint(), first.view, first.session.model.tok_embed.weight.clone()
    for seed in (2, 3, 4):  # three more layers of 8 MiB, in a budget of 20: room is made
        clock.now += 1
        settle(store.open(f"tab-{seed}"), **big(seed))
    assert budget.held() <= budget.limit
    assert first._parked is not None  # the longest unused let its tables go
    clock.now += 1
    assert (first.session.fingerprint(), first.view) == before[:2]  # rebuilt on its next read
    assert torch.equal(first.session.model.tok_embed.weight, before[2])  # the same numbers, from the seed


def test_a_tab_that_cannot_be_rebuilt_is_never_parked_and_a_new_table_is_refused(budget):
    store = Tabs(budget=budget)
    keepers = [store.open(f"keeper-{seed}") for seed in (1, 2)]
    for seed, keeper in enumerate(keepers, start=1):
        settle(keeper, **big(seed))
        trained = keeper.session.trained_on(*_tiny_training())
        keeper.apply(lambda view: view, lambda step: None, tables=lambda session, trained=trained: trained)
    other = store.open("other")
    before = other.session.fingerprint(), other.view
    with pytest.raises(Refused, match=r"own tables \(20 MiB.*has no room for these random tables.*smaller settings"):
        settle(other, **big(3))  # 8 + 8 + 8 MiB, and the trained tabs cannot be parked
    assert (other.session.fingerprint(), other.view) == before  # a refusal changes nothing
    assert all(k._parked is None and k.session.training is not None for k in keepers)


def test_one_tab_cannot_hold_more_than_its_share(budget):
    store = Tabs(budget=budget)
    tab = store.open("greedy")
    before = tab.session.fingerprint()
    with pytest.raises(Refused, match=r"would take 119 MiB .* more than the 12 MiB a page may hold"):
        settle(tab, **{**big(1), "tokenizer": "wordpiece"})
    assert tab.session.fingerprint() == before


def test_a_parked_tab_whose_tables_cannot_come_back_says_so_and_keeps_its_view(budget):
    store = Tabs(budget=budget)
    parked = store.open("parked")
    settle(parked, **big(1))
    view = parked.view
    assert parked.park()
    budget.limit = 4 * MIB  # meanwhile the server's room shrank below the layer
    presets.random_source.cache_clear()
    with pytest.raises(Refused, match="memory for visitors' own tables .* has no room"):
        parked.session  # noqa: B018 - reading it rebuilds
    assert parked.view == view and parked._parked is not None  # still parked, the view as it was
    budget.limit = 20 * MIB
    assert parked.session.settings == Settings(**big(1))


def test_uploads_of_the_same_file_share_one_table(tmp_path, budget):
    path = tmp_path / "table.npy"
    np.save(path, np.random.default_rng(0).normal(size=(5000, 300)).astype(np.float32))
    store = Tabs(budget=budget)
    sources = []
    for name in ("a", "b", "c"):
        tab = store.open(name)
        table = read_upload(path)
        tab.apply(lambda view: view.with_(source="upload"), lambda step: None,
                   tables=lambda session, table=table: session.with_upload(table))
        sources.append(tab.session.source.model.tok_embed.weight)
    assert sources[0].data_ptr() == sources[1].data_ptr() == sources[2].data_ptr()
    assert budget.held() < 2 * 5003 * 300 * 4  # once, not three times


def test_new_tabs_from_one_address_are_limited_and_refilled():
    clock = Clock()
    tabs = NewTabs(burst=3, refill=2.0, clock=clock)
    for _ in range(3):
        tabs.take("203.0.113.7")
    with pytest.raises(Refused, match=r"Too many new pages from your address \(3 at once, then one every 2 s\): "
                                      r"try again in 2 s"):
        tabs.take("203.0.113.7")
    tabs.take("198.51.100.1")  # another address is not held back
    clock.now += 2.0
    tabs.take("203.0.113.7")  # one more after the refill time


def test_an_ipv6_network_counts_as_one_address():
    tabs = NewTabs(burst=2, refill=60.0, clock=Clock())
    tabs.take("2001:db8:1:2::1")
    tabs.take("2001:db8:1:2::ffff")
    with pytest.raises(Refused):
        tabs.take("2001:db8:1:2:abcd::9")  # the same /64
    tabs.take("2001:db8:1:3::1")


def test_a_store_asked_for_too_many_new_tabs_keeps_the_ones_it_has():
    store = Tabs(new_tabs=5, refill=60.0, clock=Clock())
    student = store.open("student", address="192.0.2.10")
    for i in range(5):
        store.open(f"stranger-{i}", address="203.0.113.7")
    with pytest.raises(Refused, match="Too many new pages"):
        store.open("stranger-99", address="203.0.113.7")
    for i in range(5):  # the stranger's existing tabs go on being served
        store.kept(f"stranger-{i}")
    assert store.kept("student") is student and len(store._lives) == 6


def test_a_reload_takes_its_tabs_place_and_a_class_link_admits_as_many_pages_as_the_class_seats():
    store = Tabs(new_tabs=3, refill=600.0, clock=Clock())
    store.new_tabs.room_burst = 5
    keys = [f"school-{i}" for i in range(3)]
    for key in keys:
        store.open(key, address="203.0.113.7")
    with pytest.raises(Refused, match="Too many new pages from your address"):
        store.open("school-new", address="203.0.113.7")
    for n in range(30):  # thirty F5s: each new key takes the place of the one its browser tab had
        store.open(f"reload-{n}", address="203.0.113.7", replaces=keys[n % 3])
        keys[n % 3] = f"reload-{n}"
    with pytest.raises(Expired):
        store.kept("school-0")  # the replaced tab is let go
    store.open("stranger", address="198.51.100.1")
    with pytest.raises(Refused, match="from your address"):  # another network's tab is let go, not replaced
        store.open("taken", "203.0.113.7", replaces="stranger")
    with pytest.raises(Expired):
        store.kept("stranger")
    for i in range(5):  # a running class's link: pages of its own, as many as the class seats
        store.open(f"class-{i}", address="203.0.113.7", room="class-one")
    with pytest.raises(Refused, match=r"Too many new pages from this class's link \(5 at once"):
        store.open("class-5", address="203.0.113.7", room="class-one")
    store.open("other-class", address="203.0.113.7", room="class-two")  # each class its own
    assert len(store._lives) == 3 + 5 + 1


def test_a_tab_pushed_out_for_room_is_told_so_not_that_it_was_unused():
    store = Tabs(limit=2, clock=Clock())
    store.open("one")
    store.open("two")
    store.open("three")  # "one" is the longest unused: let go for room
    with pytest.raises(Expired) as refused:
        store.kept("one")
    assert str(refused.value) == PUSHED_OUT.format(limit=2)
    assert "unused for over an hour" not in str(refused.value) and "address keeps the view" in str(refused.value)


def _tiny_training():
    from core.model.training import Corpus, TrainConfig

    return Corpus(("the cat sat", "a dog ran")), TrainConfig(steps=2)


def test_the_tabs_of_one_address_hold_at_most_their_share(budget):
    """A stranger's few greedy tabs cannot hold the whole budget: each address gets a quarter
    (here 5 MiB of 20), while another address's tab still gets its table."""
    store = Tabs(budget=budget)
    small = {"tokenizer": "word", "vocab_size": 1000, "d_model": 1024, "maxlen": 64}  # about 4.2 MiB
    greedy = [store.open(f"greedy-{i}", address="203.0.113.7") for i in range(2)]
    settle(greedy[0], **small, seed=1)
    trained = greedy[0].session.trained_on(*_tiny_training())  # a training cannot be rebuilt: never parked
    greedy[0].apply(lambda view: view, lambda step: None, tables=lambda session: trained)
    before = greedy[1].session.fingerprint()
    with pytest.raises(Refused, match=r"pages from your address would hold [\d,]+ MiB .* more than one address "
                                      r"may \(5 MiB\)"):
        settle(greedy[1], **small, seed=2)
    assert greedy[1].session.fingerprint() == before
    settle(store.open("student", address="198.51.100.20"), **small, seed=3)  # another address: its own share


def test_an_address_s_own_unused_tabs_make_room_for_its_new_one(budget):
    store = Tabs(budget=budget)
    small = {"tokenizer": "word", "vocab_size": 1000, "d_model": 1024, "maxlen": 64}
    old, new = (store.open(name, address="192.0.2.5") for name in ("old", "new"))
    settle(old, **small, seed=1)
    settle(new, **small, seed=2)  # 8 MiB over a 5 MiB share: the address's older tab is parked
    assert old._parked is not None and new.session.settings.seed == 2


def test_the_budget_keeps_a_share_free_for_what_it_cannot_count_and_a_part_for_answers():
    """Tables are counted exactly, but a process grows beyond them (the allocator's slack, a
    tab's objects): counted tables may fill the budget less UNCOUNTED, so RSS stays within it,
    and less the part kept for answers waiting to be read (ui/admission.py), so a budget full of
    tables still leaves a keystroke's answer its room."""
    own = Budget(limit=100 * MIB, tab_limit=200 * MIB)
    assert own.answer_limit == 100 * MIB // memory.ANSWERS > 0
    assert own.admits == 100 * MIB - int(100 * MIB * memory.UNCOUNTED) - own.answer_limit < own.limit
    with pytest.raises(Refused, match="has no room"), own.reserve(own.admits + 1, "a table"):
        pass
    with own.reserve(own.admits, "a table"):
        assert own._reserved == own.admits
