"""A tab's state on the server (`core.serving.tabs`, `.jobs`), and the position tables a session swaps in."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest
import torch

from core.model.training import Corpus, TrainConfig
from core.serving.jobs import Cancelled, Job, Jobs
from core.serving.tabs import Expired, Tab, Tabs, follow
from core.tables.session import Session
from core.view.options import Refused
from core.view.state import Settings, View
from tests.clocks import Clock


@pytest.fixture()
def clock() -> Clock:
    """A hand clock, handed to what keeps time (`Tabs(clock=…)`), never patched into `time`:
    moving a patched `time.monotonic` by hours stalled the launched app's event loop for hours."""
    return Clock()


# --- idle expiry: use, not change, keeps a tab ---


def test_a_tab_used_within_the_idle_time_survives_however_old_its_last_change(clock):
    lives = Tabs(idle=60, clock=clock)
    tab = lives.open("used")
    tab.apply(lambda view: view.with_(k=3), lambda step: None)  # its last change, at the start
    for minute in range(10):  # ten minutes of looking (each event is a use), never changing anything
        clock.now += 59
        assert lives.kept("used") is tab
        lives.open(f"other-{minute}")  # a page opening sweeps: the tab in use stays
    assert clock.now - 1000 > 9 * 60
    assert lives.kept("used") is tab and tab.view.k == 3


def test_a_tab_unused_past_the_idle_time_is_forgotten_and_its_next_event_is_refused(clock):
    lives = Tabs(idle=60, clock=clock)
    forgotten = lives.open("forgotten")
    forgotten.apply(lambda view: view.with_(k=3), lambda step: None)
    kept = lives.open("kept")
    clock.now += 40
    assert lives.kept("kept") is kept
    clock.now += 40  # "forgotten" unused for 80 s, "kept" for 40 s
    lives.open("new")  # a page opening sweeps: the idle tab goes now
    assert lives.kept("kept") is kept
    assert set(lives._lives) == {"kept", "new"}
    with pytest.raises(Expired, match="unused for over an hour and its session has ended: reload the page"):
        lives.kept("forgotten")
    assert issubclass(Expired, Refused)  # an event turns it into a notice, like any refusal
    # a reloaded page (a fresh tab for that hash) starts again from a fresh view
    assert lives.open("forgotten").view == View()


def test_a_new_tab_is_not_an_expired_one(clock):
    lives = Tabs(idle=60, clock=clock)
    clock.now += 10_000
    assert lives.open("new").view == View()


def test_moving_the_hand_clock_leaves_the_launched_app_serving(app_url, clock):
    """The expiry tests jump their clock by hours. When that clock was patched into
    `time.monotonic`, the app's event loop (which sleeps on the same clock) slept for as long,
    and every later test that called the app hung: the clock must stay the tests' own."""
    from tests.appapi import Page

    lives = Tabs(idle=60, clock=clock)
    lives.open("tab")
    clock.now += 10**9
    assert lives.open("other").view == View()
    out = Page(app_url).send(sentence_a="the clock moved", sentence_b="")
    assert "embed-plot" in out, "the app did not answer after the hand clock moved"


@pytest.mark.parametrize("key", [None, "", "x" * 129, 7])
def test_a_request_without_a_valid_session_is_refused(key):
    with pytest.raises(Refused, match="reload the page"):
        Tabs().kept(key)


def test_too_many_tabs_forget_the_longest_unused_first(clock):
    lives = Tabs(idle=60, limit=2, clock=clock)
    first, _ = lives.open("first"), lives.open("second")
    clock.now += 1
    assert lives.kept("first") is first
    lives.open("third")
    with pytest.raises(Expired):
        lives.kept("second")
    assert list(lives._lives) == ["first", "third"]


# --- one tab's changes ---


def test_a_failed_change_changes_nothing():
    tab = Tab()
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


# --- the heavy pool: no job waits or runs without bound ---


def _hold_the_slot(jobs: Jobs) -> tuple[threading.Event, threading.Thread]:
    """Another tab's job that holds the pool's one slot until the returned event is set."""
    release, started = threading.Event(), threading.Event()

    def work():
        started.set()
        release.wait(30)

    holder = threading.Thread(target=jobs.run, args=(Tab(), "training", work), daemon=True)
    holder.start()
    assert started.wait(10), "the first job never started"
    return release, holder


def _ask(jobs: Jobs, tab: Tab, name: str, work, outcome: dict, **kwargs) -> threading.Thread:
    def ask():
        try:
            outcome[name] = jobs.run(tab, name, work, **kwargs)
        except (Refused, Cancelled) as error:
            outcome[name] = error

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    return asker


def test_a_job_whose_line_is_too_long_is_refused_at_once_with_the_expected_wait():
    jobs = Jobs(workers=1, wait=0.5)  # the first job's mean time (1 s) is already more than that
    release, holder = _hold_the_slot(jobs)
    tab = Tab()
    with pytest.raises(Refused) as refused:
        jobs.run(tab, "exporting", lambda: "ran")
    assert str(refused.value) == ("The server has 1 job ahead of exporting (about 1 s of work, more than the 0.5 s a "
                                  "job may wait here); try again in a minute.")
    assert tab.job is None  # the tab is free to ask again
    release.set()
    holder.join(10)
    assert jobs.run(tab, "exporting", lambda: "ran") == "ran"


def waiting(jobs: Jobs) -> list[Job]:
    """The jobs asked for and not started."""
    return [job for job in list(jobs._pending) if job.started is None]


def test_a_job_that_still_has_not_started_leaves_the_line(clock):
    jobs = Jobs(workers=1, wait=30, clock=clock)
    release, holder = _hold_the_slot(jobs)
    tab, outcome = Tab(), {}
    asker = _ask(jobs, tab, "exporting", lambda: "ran", outcome)
    while not waiting(jobs):  # in line behind the holder
        time.sleep(0.01)
    clock.now += 61  # past twice the wait
    asker.join(10)
    assert not asker.is_alive(), "a job waited in line without bound"
    assert str(outcome["exporting"]) == ("The server was busy with other visitors' jobs for 60 s, so exporting did "
                                         "not start; try again in a minute.")
    assert tab.job is None
    release.set()
    holder.join(10)


def test_jobs_start_in_the_order_they_were_asked_for():
    jobs = Jobs(workers=1, wait=60)
    release, holder = _hold_the_slot(jobs)
    order, outcome, askers = [], {}, []
    for name in ("first", "second", "third", "fourth"):
        askers.append(_ask(jobs, Tab(), name, lambda name=name: order.append(name), outcome))
        while len(waiting(jobs)) < len(askers):
            time.sleep(0.01)
    release.set()
    for asker in (holder, *askers):
        asker.join(10)
    assert order == ["first", "second", "third", "fourth"]


def test_identical_work_runs_once_and_every_page_gets_its_result():
    jobs = Jobs(workers=1, wait=60)
    release, holder = _hold_the_slot(jobs)
    runs, outcome = [], {}
    tabs = [Tab() for _ in range(5)]

    def work():
        runs.append(1)
        return object()  # one result, shared read-only

    askers = [_ask(jobs, tab, "training", work, outcome_i, key="same tables") for tab, outcome_i in
              zip(tabs, [outcome.setdefault(i, {}) for i in range(5)], strict=True)]
    while len(waiting(jobs)) < 1 or sum(tab.job is not None for tab in tabs) < 5:
        time.sleep(0.01)
    assert len(waiting(jobs)) == 1  # one job in line for the five pages
    release.set()
    for asker in (holder, *askers):
        asker.join(10)
    results = [outcome[i]["training"] for i in range(5)]
    assert len(runs) == 1 and all(result is results[0] for result in results)
    # asked again after it finished: the same result, not another run
    assert jobs.run(Tab(), "training", work, key="same tables") is results[0] and len(runs) == 1
    assert jobs.run(Tab(), "training", work, key="other tables") is not results[0] and len(runs) == 2


def test_a_shared_job_goes_on_while_one_of_its_pages_is_left():
    jobs = Jobs(workers=1, wait=60)
    started, release = threading.Event(), threading.Event()

    def work():
        started.set()
        release.wait(30)
        return "trained"

    first, second = Job(), Job()
    one, two = {}, {}
    a = _ask(jobs, Tab(), "training", work, one, job=first, key="k")
    assert started.wait(10)
    b = _ask(jobs, Tab(), "training", work, two, job=second, key="k")
    while first._wanted < 2:
        time.sleep(0.01)
    first.cancel()  # the page that started it went away: the other still wants it
    assert not first.stop()
    release.set()
    a.join(10)
    b.join(10)
    assert two == {"training": "trained"}
    # when every page has gone, the job stops at its next step
    lonely = Job()
    lonely.cancel()
    assert lonely.stop()


def test_a_waiting_job_whose_page_went_away_never_runs():
    jobs = Jobs(workers=1, queue=8, wait=30)
    release, holder = _hold_the_slot(jobs)
    tab, job, ran, outcome = Tab(), Job(), threading.Event(), {}

    def ask():
        try:
            jobs.run(tab, "training", ran.set, job)
        except Cancelled:
            outcome["cancelled"] = True

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    job.cancel()
    asker.join(10)
    assert not asker.is_alive(), "a cancelled job kept waiting for a slot"
    assert outcome == {"cancelled": True} and not ran.is_set() and tab.job is None
    release.set()
    holder.join(10)
    assert jobs.run(Tab(), "exporting", lambda: "free") == "free"  # its place in the pool was given back


class _Tables:
    """Stands for a job's result: a visitor's tables, which must go when the last holder lets go."""


@pytest.mark.parametrize("fails", [False, True], ids=["returned", "raised"])
def test_a_finished_job_is_in_no_reference_cycle_so_its_tables_go_with_their_last_holder(fails):
    """A cycle through a job (its future's done-callback naming it, a raised error's frames) kept a
    visitor's tables until the collector's next full pass, past the budget that had let them go."""
    jobs, box = Jobs(workers=1), [_Tables()]  # the work takes the tables out: the test holds none
    alive = weakref.ref(box[0])

    def work():
        time.sleep(0.2)  # still running when the job is set up (a done future runs its callbacks at once)
        if fails:
            raise Refused("no room", box.pop())  # an error that names the tables, as a traceback's frames do
        return box.pop()

    gc.disable()  # only reference counts free anything here
    try:
        try:
            got = jobs.run(Tab(), "building the tables", work, key=None)
        except Refused as error:
            got = error
        assert alive() is not None  # held by the caller
        del got
        assert alive() is None, "the job's tables outlived their last holder: a cycle holds them"
    finally:
        gc.enable()


def test_a_training_stops_at_the_time_limit_and_keeps_its_steps(clock):
    job = Job(seconds=60, clock=clock)
    job.started = clock()

    def progress(step, total, losses):
        clock.now += 30  # each report (every 5 steps of 100) takes half a minute on this clock

    trained = Session.create(SMALL).trained_on(Corpus.builtin(), TrainConfig(steps=100), progress, job.stop)
    assert job.stop() and not job.cancelled  # past its time, still wanted
    # 30 s after step 5, 60 s after step 10 (not yet past the limit), 90 s after step 15: it stops there
    assert trained.training.steps == 15 == len(trained.training.losses)
    assert trained.training.purity_after is not None


def test_a_cancelled_training_stops_at_its_next_step():
    job = Job()
    job.started = job.clock()
    seen = []

    def progress(step, total, losses):
        seen.append(step)
        job.cancel()

    trained = Session.create(SMALL).trained_on(Corpus.builtin(), TrainConfig(steps=200), progress, job.stop)
    assert seen == [10] and trained.training.steps == 10


def test_a_shared_result_is_kept_only_a_minute_and_only_the_newest_few(clock):
    """A finished result holds its session's tables: kept for a burst, not for the process."""
    jobs = Jobs(workers=1, wait=60, clock=clock, remember=2, kept=60)
    runs = []

    def work():
        runs.append(1)
        return len(runs)

    assert jobs.run(Tab(), "training", work, key="a") == 1
    assert jobs.run(Tab(), "training", work, key="a") == 1  # shared: no second run
    clock.now += 61
    assert jobs.run(Tab(), "training", work, key="a") == 2  # a minute later it runs again
    for key in ("b", "c", "d"):
        jobs.run(Tab(), "training", work, key=key)
    assert len(jobs._shared) == 2  # only the newest two are kept
