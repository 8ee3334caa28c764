"""Several ranks agree: failures raised on every rank (runtime/_ranks.py), one random state (runtime/_start.py).

The exchange itself needs several Legate processes (tests/multirank runs it
under mpirun); here the decisions around it run with stand-in reports.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import numpy as np
import pytest

from distal import runtime as rt
from distal.errors import RuntimeFailure
from distal.runtime import _ranks, _registry, _start

INFO = rt.MachineInfo(cpus=4, gpus=0, omps=0, sysmem_mb=512, cores=2, cpu_model="x", driver="shim",
                      legate_version="26.1.0", config="--cpus 2", user_config=True, ranks=2, rank=0)


@pytest.fixture
def ranks(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[int, bool, str]]]:
    """Two ranks (this one rank 0); what each check's exchange reads is what the test puts in the list."""
    reports: list[list[tuple[int, bool, str]]] = []
    monkeypatch.setattr(_ranks, "ensure_started", lambda: INFO)
    monkeypatch.setattr(_ranks, "_reports", lambda count: reports.pop(0))
    monkeypatch.setattr(_registry, "_failures", [])
    return reports


def test_a_failure_on_another_rank_is_raised_here(ranks: list[list[tuple[int, bool, str]]]) -> None:
    ranks.append([(0, False, ""), (1, True, "kernel 'bad' failed at launch point (1,) (2 failure(s) in all):\nboom")])
    with pytest.raises(RuntimeFailure, match=r"(?s)on rank 1 of 2 \(failures on rank\(s\) 1;.*kernel 'bad'.*boom"):
        _ranks.check_failures_everywhere()


def test_no_failure_anywhere_raises_nothing(ranks: list[list[tuple[int, bool, str]]]) -> None:
    ranks.append([(0, False, ""), (1, False, "")])
    _ranks.check_failures_everywhere()


def test_failures_on_two_ranks_name_both(ranks: list[list[tuple[int, bool, str]]]) -> None:
    ranks.append([(0, True, "kernel 'a' failed"), (1, True, "kernel 'b' failed")])
    with pytest.raises(RuntimeFailure, match=r"on rank 0 of 2 \(failures on rank\(s\) 0, 1;.*kernel 'a'"):
        _ranks.check_failures_everywhere()


def test_a_ranks_report_takes_its_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    """The task on each rank takes what its process recorded: the next check sees only later failures."""
    monkeypatch.setattr(_registry, "_failures", [_registry.KernelFailure("bad", (2,), "Traceback ...")])
    text = _ranks._failure_text()
    assert text.startswith("1\n") and "kernel 'bad' failed at launch point (2,)" in text and "Traceback" in text
    assert _registry._failures == []
    assert _ranks._failure_text() == "0\n"


def test_one_rank_is_the_local_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ranks, "ensure_started", lambda: dataclasses.replace(INFO, ranks=1))
    monkeypatch.setattr(_registry, "_failures", [_registry.KernelFailure("bad", (3,), "trace")])

    def no_exchange(count: int) -> list[tuple[int, bool, str]]:
        raise AssertionError("one rank exchanges nothing")

    monkeypatch.setattr(_ranks, "_reports", no_exchange)
    with pytest.raises(RuntimeFailure, match=r"kernel 'bad' failed at launch point \(3,\)"):
        _ranks.check_failures_everywhere(ran=False)  # one rank checks even then: it is free


def test_nothing_launched_since_the_last_check_exchanges_nothing(ranks: list[list[tuple[int, bool, str]]]) -> None:
    _registry._failures.append(_registry.KernelFailure("bad", (0,), "recorded before the last check"))
    _ranks.check_failures_everywhere(ran=False)  # `ranks` holds no report: an exchange would fail the test
    assert len(_registry._failures) == 1


def _draws() -> tuple[list[float], list[float]]:
    return [*np.random.standard_normal(3), np.random.random()], [random.gauss(0, 1), random.random()]


@pytest.fixture
def streams_kept() -> Iterator[None]:
    """NumPy's and Python's global random streams as they were before the test, after it."""
    saved_np, saved_py = np.random.get_state(), random.getstate()
    yield
    np.random.set_state(saved_np)
    random.setstate(saved_py)


@pytest.mark.parametrize("warm", [False, True])
def test_the_random_state_packs_and_unpacks_exactly(warm: bool, streams_kept: None) -> None:
    np.random.seed(11)
    random.seed(12)
    if warm:  # leave a cached Gaussian in both generators
        np.random.standard_normal(1)
        random.gauss(0, 1)
    packed = _start.pack_random_state()
    assert packed.dtype == np.uint64
    expected = _draws()
    np.random.seed(99)
    random.seed(98)
    _start.unpack_random_state(packed.copy())
    assert _draws() == expected


@pytest.mark.legate
def test_one_rank_keeps_the_users_random_stream(machine: rt.MachineInfo, streams_kept: None) -> None:
    np.random.seed(5)
    expected = np.random.random(3)
    np.random.seed(5)
    rt.ensure_started()  # started already: nothing changes the stream
    assert np.array_equal(np.random.random(3), expected)


@pytest.mark.legate
def test_a_failing_kernel_is_raised_by_the_next_read(machine: rt.MachineInfo) -> None:
    def bad(point: tuple[int, ...], out: np.ndarray) -> None:
        raise ValueError(f"boom at {point}")

    store = rt.zeros((4,), tile=(2,))
    rt.index_launch(rt.register_kernel(bad, "bad"), (2,), [rt.Arg(store, rt.Privilege.WRITE, (2,))])
    with pytest.raises(RuntimeFailure, match="kernel 'bad' failed"):
        rt.to_numpy(store)
    rt.fence()  # reported once: nothing left



def test_several_ranks_take_rank_0s_streams_and_memory(monkeypatch: pytest.MonkeyPatch, streams_kept: None) -> None:
    """What `_agree_with_rank0` does with what the copy from rank 0 gives back (a stand-in for that copy)."""
    np.random.seed(3)
    random.seed(4)
    rank0 = np.concatenate([_start.pack_random_state(), np.array([5405, 6 << 30], dtype=np.uint64)])
    expected = _draws()
    np.random.seed(8)  # this rank's own, different streams and memory
    random.seed(9)
    monkeypatch.setattr(_start, "_rank0_copy", lambda values: rank0.copy())
    assert _start._agree_with_rank0(5407, 7 << 30) == (5405, 6 << 30)
    assert _draws() == expected
    rank0[-1] = np.iinfo(np.uint64).max  # rank 0 could not read its available memory
    assert _start._agree_with_rank0(5407, 7 << 30) == (5405, None)


@pytest.mark.legate
def test_the_copy_from_rank_0_runs_on_legate(machine: rt.MachineInfo) -> None:
    """The start-up copy several ranks share (here one rank: its own values come back)."""
    values = np.arange(_start._RANDOM_WORDS + 1, dtype=np.uint64) * np.uint64(7)
    assert np.array_equal(_start._rank0_copy(values.copy()), values)


@pytest.mark.legate
def test_the_failure_exchange_runs_on_legate(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exchange's launch and read on one rank: one row, written on rank 0, taking what was recorded."""
    assert _ranks._reports(1) == [(0, False, "")]
    rt.fence()
    monkeypatch.setattr(_registry, "_failures", [_registry.KernelFailure("bad", (5,), "Traceback: boom")])
    [(rank, failed, text)] = _ranks._reports(1)
    assert (rank, failed) == (0, True) and "kernel 'bad' failed at launch point (5,)" in text and "boom" in text
    assert _registry._failures == []
    rt.fence()
