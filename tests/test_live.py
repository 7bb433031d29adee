"""A tab's state on the server (`core.live`), and the position tables a session can swap in."""

from __future__ import annotations

import pytest
import torch

from core import live as live_module
from core.live import Expired, Live, Lives, follow
from core.options import Refused
from core.session import Session
from core.state import Settings, View
from core.training import Corpus, TrainConfig


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(live_module.time, "monotonic", clock)
    return clock


# --- idle expiry: use, not change, keeps a tab ---


def test_a_tab_used_within_the_idle_time_survives_however_old_its_last_change(clock):
    lives = Lives(idle=60)
    tab = lives.get("used")
    tab.apply(lambda view: view.with_(k=3), lambda step: None)  # its last change, at the start
    for _ in range(10):  # ten minutes of looking (each event is a use), never changing anything
        clock.now += 59
        assert lives.get("used") is tab
    assert clock.now - 1000 > 9 * 60
    assert tab.view.k == 3


def test_a_tab_unused_past_the_idle_time_is_forgotten_and_its_next_event_is_refused(clock):
    lives = Lives(idle=60)
    forgotten = lives.get("forgotten")
    forgotten.apply(lambda view: view.with_(k=3), lambda step: None)
    kept = lives.get("kept")
    clock.now += 40
    assert lives.get("kept") is kept
    clock.now += 40  # "forgotten" unused for 80 s, "kept" for 40 s
    assert lives.get("kept") is kept  # any event sweeps: the idle tab goes now
    assert len(lives) == 1
    with pytest.raises(Expired, match="unused for over an hour and its session has ended: reload the page"):
        lives.get("forgotten")
    assert issubclass(Expired, Refused)  # an event turns it into a notice, like any refusal
    # a reloaded page (a fresh tab for that hash) starts again from a fresh view
    assert lives.get("forgotten", fresh=True).view == View()


def test_a_new_tab_is_not_an_expired_one(clock):
    lives = Lives(idle=60)
    clock.now += 10_000
    assert lives.get("new").view == View()


@pytest.mark.parametrize("key", [None, "", "x" * 129, 7])
def test_a_request_without_a_valid_session_is_refused(key):
    with pytest.raises(Refused, match="no valid session"):
        Lives().get(key)


def test_too_many_tabs_forget_the_longest_unused_first(clock):
    lives = Lives(idle=60, limit=2)
    first, _ = lives.get("first"), lives.get("second")
    clock.now += 1
    assert lives.get("first") is first
    lives.get("third")  # the sweep runs before a new tab is added, so the next event makes room
    with pytest.raises(Expired):
        lives.get("second")
    assert len(lives) == 2


# --- one tab's changes ---


def test_a_failed_change_changes_nothing():
    tab = Live()
    before = (tab.view, tab.session, tab.tokens)

    def broken(step):
        raise RuntimeError("the page could not be drawn")

    with pytest.raises(RuntimeError):
        tab.apply(lambda view: view.with_(d_model=8, k=3), broken)
    assert (tab.view, tab.session, tab.tokens) == before
    with pytest.raises(Refused, match="d_model is 0"):
        tab.apply(lambda view: view.with_(d_model=0), lambda step: None)
    assert (tab.view, tab.session, tab.tokens) == before


def test_follow_moves_the_selection_and_the_flips_with_their_tokens():
    old = ("[CLS]", "the", "king", "spoke", "[SEP]")
    new = ("[CLS]", "the", "old", "king", "spoke", "[SEP]")
    view, notes = follow(old, new, View(token=2, flips={3}))
    assert (view.token, view.flips, notes) == (3, frozenset({4}), ())
    gone = ("[CLS]", "the", "spoke", "[SEP]")
    view, notes = follow(old, gone, View(token=2, flips={2}))
    assert view.token is None and view.flips == frozenset()
    assert notes == ("The selected token 'king' is no longer in the sentences, so it was let go.",
                     "'king' is no longer in the sentences, so its segment flip was let go.")


# --- position tables ---

SMALL = Settings(tokenizer="word", vocab_size=200, d_model=8, maxlen=64)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_random_positions_are_not_the_sources_own_table(seed):
    settings = Settings(tokenizer="word", vocab_size=200, d_model=8, maxlen=64, seed=seed)
    session = Session.create(settings)
    swapped = session.with_tables("random", settings, "random")
    own = session.model.pos_embed.weight
    drawn = swapped.model.pos_embed.weight
    assert drawn.shape == own.shape
    assert not torch.allclose(drawn, own)
    # nor any other table the source draws from its seeds
    assert not torch.allclose(drawn[:2], swapped.model.seg_embed.weight[:2])
    assert not torch.allclose(drawn, swapped.model.tok_embed.weight[:64])
    # the rest of the layer is the source's own
    assert torch.equal(swapped.model.tok_embed.weight, session.model.tok_embed.weight)


def test_sinusoidal_positions_are_never_trained():
    session = Session.create(SMALL).with_tables("random", SMALL, "sinusoidal")
    assert session.frozen == frozenset() and session.fixed == {"position"}  # not frozen by the user, but fixed
    before = session.model.pos_embed.weight.clone()
    tokens_before = session.model.tok_embed.weight.clone()
    trained = session.trained_on(Corpus.builtin(), TrainConfig(steps=5))
    assert trained.training is not None
    assert torch.equal(trained.model.pos_embed.weight, before)  # bit-identical
    assert not torch.equal(trained.model.tok_embed.weight, tokens_before)  # while the token table learned


def test_learned_positions_are_trained_when_unfrozen():
    """The control for the test above: the same training does move a learned position table."""
    session = Session.create(SMALL)
    before = session.model.pos_embed.weight.clone()
    trained = session.trained_on(Corpus.builtin(), TrainConfig(steps=5))
    assert not torch.equal(trained.model.pos_embed.weight, before)
