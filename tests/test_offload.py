"""Heavy work in the process `core.process.offload`'s pool keeps: the same results as in this process,
shared tables crossing through shared memory, progress and stop carried across, failures said plainly."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch
from threadpoolctl import threadpool_limits

from core.model.training import Corpus, TrainConfig
from core.plane.basis import fit_vocabulary, vocabulary_basis
from core.process import offload as offload_module
from core.process.offload import Offload, OffloadError, crossing_bytes
from core.tables.session import Session
from core.tables.uploads import UploadedTable, read_upload
from core.view.options import Refused
from core.view.state import Settings
from tests.offload_jobs import count_to, exit_now, ignore_stop, refuse

SMALL = Settings(d_model=16, maxlen=64, seed=3)
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def offload():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the app and the offload process: sums in the same order, bit for bit
    worker = Offload()
    yield worker
    worker.close()
    torch.set_num_threads(threads)


def test_a_bert_training_there_equals_one_here_and_shares_this_process_s_table(offload):
    session = Session.create(source="bert")
    here = session.trained_on(Corpus.builtin(), TrainConfig(steps=5))
    steps: list[int] = []
    frames: dict[int, Session] = {}

    def progress(step, total, losses, frame=None):
        steps.append(step)
        if frame is not None:
            frames[step] = frame

    there = session.trained_on(Corpus.builtin(), TrainConfig(steps=5), progress, run=offload.call)
    for name, table in here.trained.state_dict().items():
        assert torch.equal(table, there.trained.state_dict()[name]), name
    assert there.training.losses == here.training.losses
    assert steps and steps[-1] == 5
    # the 30,522-row table came back as a reference to this process's own: same memory, no copy
    assert there.trained.tok_embed.base.data_ptr() == session.model.tok_embed.weight.data_ptr()
    # snapshots on the way, at each fifth: sessions over the same shared table
    assert sorted(frames) == [1, 2, 3, 4]
    for frame in frames.values():
        assert frame.trained.tok_embed.base.data_ptr() == session.model.tok_embed.weight.data_ptr()
    assert not torch.equal(frames[1].trained.tok_embed.values, there.trained.tok_embed.values)
    assert crossing_bytes(session.model) == 0 and all(t.is_shared() for t in session.model.state_dict().values())
    # and the trained rows came back in shared memory, mapped here: not copied out of it
    assert there.trained.tok_embed.values.is_shared()


def test_a_table_made_by_hand_is_moved_into_shared_memory_as_it_crosses(offload):
    rows = np.random.default_rng(0).standard_normal((40, 6)).astype(np.float32)
    session = Session.create(SMALL).with_upload(UploadedTable("token", "npy", None, torch.from_numpy(rows), None, ()))
    here = session.trained_on(Corpus.builtin(), TrainConfig(steps=3))
    there = session.trained_on(Corpus.builtin(), TrainConfig(steps=3), run=offload.call)
    assert torch.equal(here.trained.tok_embed.weight, there.trained.tok_embed.weight)


def test_every_preset_table_is_in_shared_memory_from_the_start():
    """Moving a table into shared memory frees what it leaves: a table other threads read must be
    made there, never moved as it crosses."""
    from core.tables import presets

    for source in (presets.bert_source(), presets.glove_source(), presets.default_random_source(),
                   presets.random_source(Settings(d_model=24, seed=9)),
                   presets.with_positions(presets.bert_source(), "sinusoidal", 0)):
        assert all(t.is_shared() for t in source.model.state_dict().values()), source.key
    # moved before the budget marked them as the process's base, which knows a table by its memory
    from core.process.memory import BUDGET, private

    for source in (presets.bert_source(), presets.glove_source(), presets.default_random_source()):
        assert private([source.model]).keys() <= set(BUDGET._base), source.key


def uploaded(tmp_path, rows: int = 6_000, width: int = 16, seed: int = 0):
    """A table read as an upload is (into memory the heavy-work process can map)."""
    path = tmp_path / f"table-{seed}.npy"
    np.save(path, np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32))
    return read_upload(path)


def test_an_uploaded_table_crosses_as_its_file_and_comes_back_as_this_process_s_own(offload, tmp_path):
    """A training of an upload copies the table neither to the other process nor back: it is read
    into shared memory, and the trained layer and each snapshot read over this process's table."""
    session = Session.create(SMALL).with_upload(uploaded(tmp_path))
    table = session.model.tok_embed.weight
    frames: list[Session] = []
    there = session.trained_on(Corpus.builtin(), TrainConfig(steps=5), lambda *step, frame=None: frames.append(frame),
                               run=offload.call)
    here = session.trained_on(Corpus.builtin(), TrainConfig(steps=5))
    for name, values in here.trained.state_dict().items():
        assert torch.equal(values, there.trained.state_dict()[name]), name
    snapshots = [frame for frame in frames if frame is not None]
    assert len(snapshots) == 4
    for trained in (there, *snapshots):
        assert trained.trained.tok_embed.base.data_ptr() == table.data_ptr()  # this process's memory, no copy
    assert crossing_bytes(session.model) == 0 and table.is_shared()
    assert torch.equal(session.model.tok_embed.weight, table)  # the other process's pages never reach these


def test_a_table_sent_by_value_comes_back_as_a_reference_to_the_one_sent(offload):
    rows = torch.from_numpy(np.random.default_rng(1).standard_normal((6_000, 16)).astype(np.float32))
    session = Session.create(SMALL).with_upload(UploadedTable("token", "npy", None, rows, None, ()))
    there = session.trained_on(Corpus.builtin(), TrainConfig(steps=3), run=offload.call)
    assert there.trained.tok_embed.base.data_ptr() == session.model.tok_embed.weight.data_ptr()


def test_what_a_call_copies_and_what_a_training_holds_are_reserved_in_the_memory_budget(tmp_path, monkeypatch):
    """Past the budget, a training is refused with a sentence before anything is copied or trained."""
    import core.tables.session
    from core.process.memory import MIB, Budget

    rows = torch.zeros(2 * 2**20 // 4 // 16, 16)  # 2 MiB of plain memory: it would be copied into shared memory
    small = Offload(budget=Budget(limit=2 * MIB))
    with pytest.raises(Refused, match="heavy work's copy of its tables"):
        small.call(count_to, 1, rows)
    assert small._pool is None  # refused before the process was even started
    assert crossing_bytes((Session.create(SMALL).with_upload(uploaded(tmp_path)).model,)) == 0
    session = Session.create(source="bert")
    monkeypatch.setattr(core.tables.session, "BUDGET", Budget(limit=MIB))
    with pytest.raises(Refused, match="this training's copies"):
        session.trained_on(Corpus.builtin(), TrainConfig(steps=3))


def test_a_vocabulary_fit_there_is_the_fit_here(offload):
    table = Session.create(source="glove").model.tok_embed
    there = vocabulary_basis(table, refit=True, run=offload.call)
    with threadpool_limits(1):  # as the app and the pool's process: BLAS's sums in the same order
        here = fit_vocabulary(table)
    assert np.array_equal(there.projection.transform(np.eye(50, dtype=np.float32)),
                          here.projection.transform(np.eye(50, dtype=np.float32)))


def test_progress_arrives_and_stop_ends_the_work_early(offload):
    seen: list[int] = []
    done = offload.call(count_to, 10_000, progress=seen.append, stop=lambda: len(seen) >= 3)
    assert 3 <= done < 10_000 and seen[:3] == [0, 1, 2]
    assert offload.call(count_to, 5) == 5  # the next call is not stopped by the last one's stop


def test_a_caller_that_fails_midway_leaves_no_stale_answer_for_the_next(offload):
    def fails(step: int) -> None:
        raise KeyError("a progress callback's own bug")

    with pytest.raises(KeyError):
        offload.call(count_to, 200, progress=fails)
    assert offload.call(count_to, 3) == 3  # not the 200 of the abandoned call


def test_a_refusal_there_is_the_same_refusal_here(offload):
    with pytest.raises(Refused, match="not allowed"):
        offload.call(refuse, "that is not allowed")
    assert offload.call(count_to, 2) == 2


def test_the_process_runs_niced_and_a_dead_one_is_replaced(offload):
    offload.start()
    child = psutil.Process(offload.call(os.getpid))
    assert child.nice() >= os.nice(0) + 10 and child.ppid() == os.getpid()
    with pytest.raises(OffloadError, match="ended before it finished"):
        offload.call(exit_now)
    assert offload.call(count_to, 3) == 3 and offload.call(os.getpid) != child.pid


def test_work_that_ignores_its_stop_is_ended(offload, monkeypatch):
    monkeypatch.setattr(offload_module, "STOP_GRACE_SECONDS", 0.0)  # no grace: ended at the next look
    with pytest.raises(OffloadError, match="did not stop"):
        offload.call(ignore_stop, 60, stop=lambda: True)
    assert offload.call(count_to, 2) == 2


def test_work_the_process_cannot_import_is_refused_plainly(offload, monkeypatch):
    nowhere = types.ModuleType("nowhere")  # a module this process has and the other cannot import
    exec("def function():\n    return 1\n", nowhere.__dict__)
    monkeypatch.setitem(sys.modules, "nowhere", nowhere)
    with pytest.raises(OffloadError, match="could not read it"):
        offload.call(nowhere.function)
    assert offload.call(count_to, 2) == 2


def test_an_abandoned_call_is_stopped_and_the_next_one_runs_at_once(offload):
    """A caller that leaves mid-call asks its work to stop: the process is kept, not killed."""
    pid = offload.call(os.getpid)

    def fails(step: int) -> None:
        raise KeyError("a progress callback's own bug")

    with pytest.raises(KeyError):
        offload.call(count_to, 100_000, progress=fails, stop=lambda: False)
    assert offload.call(count_to, 1) == 1 and offload.call(os.getpid) == pid


def test_the_process_has_one_torch_thread_and_may_open_as_many_files_as_allowed(offload):
    import resource

    from tests.offload_jobs import limits

    threads, (soft, hard) = offload.call(limits)
    assert threads == 1 and soft == hard == resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def test_the_process_imports_neither_the_page_nor_gradio(offload):
    """The server's `__main__` (app.py) builds the whole page: the pool's process must not run it."""
    from tests.offload_jobs import modules

    assert not {name for name in offload.call(modules) if name.split(".")[0] in ("gradio", "ui", "app")}


def test_closing_ends_the_process():
    worker = Offload()
    worker.start()
    child = psutil.Process(worker.call(os.getpid))
    worker.close()
    assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("ended_by", ["SIGTERM", "SIGKILL"])
def test_the_process_ends_with_its_server_however_the_server_went(ended_by):
    """A server stopped by SIGTERM (a Space or supervisord restarting it) or killed outright: before,
    its idle pool process waited for its next call forever, an orphan holding its memory."""
    import signal

    script = ("import os\nfrom core.process.offload import Offload\n"
              "print(Offload().call(os.getpid), flush=True)\n"
              "import time\ntime.sleep(600)\n")
    server = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = None
    try:
        child = psutil.Process(int(server.stdout.readline()))
        assert child.ppid() == server.pid
        server.send_signal(getattr(signal, ended_by))
        server.wait(timeout=60)
        try:
            child.wait(timeout=60)
        except psutil.TimeoutExpired:
            pytest.fail(f"the pool's process outlived its server ({ended_by}) by a minute")
    finally:
        server.kill()
        if child is not None and child.is_running():
            child.kill()


def test_the_process_is_warm_before_its_first_job_a_training_imports_nothing_more():
    """`warm` runs what a first training runs, so the class's first Train does not wait for
    torch's imports (seconds, the first time a layer is built on the meta device)."""
    script = (
        "import sys\n"
        "from core.process.offload import warm\n"
        "from core.tables.session import Session\n"
        "from core.view.state import Settings\n"
        "from core.model.training import Corpus, TrainConfig\n"
        "warm()\n"
        "before = set(sys.modules)\n"
        "Session.create(Settings(d_model=16, maxlen=64, seed=3)).trained_on(Corpus.builtin(), TrainConfig(steps=3))\n"
        "print(sorted(name for name in set(sys.modules) - before if name.startswith('torch')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_work_kept_in_the_server_runs_on_a_thread_of_lower_priority():
    """A random table the server draws from is built on its niced thread: on two cores the
    threads answering other pages come first (each Linux thread has its own priority)."""
    import threading

    own = os.getpriority(os.PRIO_PROCESS, 0)
    there = offload_module.niced(lambda: os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
    assert there == min(own + offload_module.NICE, 19)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own  # this thread is left as it was
