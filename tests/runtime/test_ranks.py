"""Several ranks agree (runtime/_ranks.py): failures raised on every rank, one random state.

The exchange itself needs several Legate processes (tests/multirank runs it
under mpirun); here the decisions around it run with stand-in reports.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest

from distal import runtime as rt
from distal.errors import RuntimeFailure
from distal.runtime import _ranks, _registry

INFO = rt.MachineInfo(cpus=4, gpus=0, omps=0, sysmem_mb=512, cores=2, cpu_model="x", driver="shim",
                      legate_version="26.1.0", config="--cpus 2", user_config=True, ranks=2, rank=0)


@pytest.fixture
def ranks(monkeypatch: pytest.MonkeyPatch) -> list[list[tuple[int, int, str]]]:
    """Two ranks (this one rank 0); what each check's exchange reads is what the test puts in the list."""
    reports: list[list[tuple[int, int, str]]] = []
    monkeypatch.setattr(_ranks, "ensure_started", lambda: INFO)
    monkeypatch.setattr(_ranks, "_reports", lambda count, cpus: reports.pop(0))
    monkeypatch.setattr(_registry, "_failures", [])
    return reports


def test_a_failure_on_another_rank_is_raised_here(ranks: list[list[tuple[int, int, str]]]) -> None:
    ranks.append([(0, 0, ""), (2, 1, "kernel 'bad' failed at launch point (1,):\nValueError: boom")])
    with pytest.raises(RuntimeFailure, match=r"(?s)on rank 1 of 2 \(2 failure\(s\) in all.*kernel 'bad'.*boom"):
        _ranks.check_failures_everywhere()


def test_no_failure_anywhere_raises_nothing(ranks: list[list[tuple[int, int, str]]]) -> None:
    ranks.append([(0, 0, ""), (0, 1, "")])
    _ranks.check_failures_everywhere()


def test_this_ranks_reported_failures_are_cleared_and_later_ones_kept(
        ranks: list[list[tuple[int, int, str]]]) -> None:
    first = _registry.KernelFailure("bad", (0,), "trace 1")
    later = _registry.KernelFailure("bad", (1,), "trace 2")
    _registry._failures.extend([first, later])
    ranks.append([(1, 0, "kernel 'bad' failed at launch point (0,):\ntrace 1"), (0, 1, "")])
    with pytest.raises(RuntimeFailure, match="on rank 0 of 2"):
        _ranks.check_failures_everywhere()
    assert _registry._failures == [later]  # recorded after this rank's report: every rank sees it next time
    ranks.append([(1, 0, "kernel 'bad' failed at launch point (1,):\ntrace 2"), (0, 1, "")])
    with pytest.raises(RuntimeFailure, match=r"launch point \(1,\)"):
        _ranks.check_failures_everywhere()
    assert _registry._failures == []


def test_one_rank_is_the_local_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ranks, "ensure_started", lambda: dataclasses.replace(INFO, ranks=1))
    monkeypatch.setattr(_registry, "_failures", [_registry.KernelFailure("bad", (3,), "trace")])

    def no_exchange(count: int, cpus: int) -> list[tuple[int, int, str]]:
        raise AssertionError("one rank exchanges nothing")

    monkeypatch.setattr(_ranks, "_reports", no_exchange)
    with pytest.raises(RuntimeFailure, match=r"kernel 'bad' failed at launch point \(3,\)"):
        _ranks.check_failures_everywhere()


def _draws() -> tuple[list[float], list[float]]:
    return [*np.random.standard_normal(3), np.random.random()], [random.gauss(0, 1), random.random()]


@pytest.mark.parametrize("warm", [False, True])
def test_the_random_state_packs_and_unpacks_exactly(warm: bool) -> None:
    saved_np, saved_py = np.random.get_state(), random.getstate()
    try:
        np.random.seed(11)
        random.seed(12)
        if warm:  # leave a cached Gaussian in both generators
            np.random.standard_normal(1)
            random.gauss(0, 1)
        packed = _ranks.pack_random_state()
        assert packed.dtype == np.uint64
        expected = _draws()
        np.random.seed(99)
        random.seed(98)
        _ranks.unpack_random_state(packed.copy())
        assert _draws() == expected
    finally:
        np.random.set_state(saved_np)
        random.setstate(saved_py)


@pytest.mark.legate
def test_one_rank_keeps_the_users_random_stream(machine: rt.MachineInfo) -> None:
    saved = np.random.get_state()
    try:
        np.random.seed(5)
        expected = np.random.random(3)
        np.random.seed(5)
        _ranks.share_random_state()  # nothing to share with one rank
        assert np.array_equal(np.random.random(3), expected)
    finally:
        np.random.set_state(saved)


@pytest.mark.legate
def test_a_failing_kernel_is_raised_by_the_next_read(machine: rt.MachineInfo) -> None:
    def bad(point: tuple[int, ...], out: np.ndarray) -> None:
        raise ValueError(f"boom at {point}")

    store = rt.zeros((4,), tile=(2,))
    rt.index_launch(rt.register_kernel(bad, "bad"), (2,), [rt.Arg(store, rt.Privilege.WRITE, (2,))])
    with pytest.raises(RuntimeFailure, match="kernel 'bad' failed"):
        rt.to_numpy(store)
    rt.fence()  # reported once: nothing left


def test_every_rank_checks_memory_against_the_smallest_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each rank sized its own default from the memory free when it started: 5405 and 5407 MiB were seen."""
    asked: list[str] = []

    def gather(what: str, ranks: int, cpus: int) -> list[tuple[int, str]]:
        asked.append(what)
        assert _ranks._sysmem_text() == "5407"  # what this rank's task reports
        return [(0, "5407"), (1, "5405"), (2, "6000")]

    monkeypatch.setattr(_ranks, "_gather", gather)
    assert _ranks.agreed_sysmem_mb(3, 3, 5407) == 5405
    assert asked == ["sysmem"]


def test_a_ranks_failure_report_reads_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_registry, "_failures", [_registry.KernelFailure("bad", (2,), "Traceback ...")])
    text = _ranks._failure_text()
    monkeypatch.setattr(_ranks, "_gather", lambda what, ranks, cpus: [(0, "0\n"), (1, text)])
    assert _ranks._reports(2, 2) == [(0, 0, ""), (1, 1, "kernel 'bad' failed at launch point (2,):\nTraceback ...")]


def test_nothing_launched_since_the_last_check_exchanges_nothing(ranks: list[list[tuple[int, int, str]]]) -> None:
    _registry._failures.append(_registry.KernelFailure("bad", (0,), "recorded before the last check"))
    _ranks.check_failures_everywhere(ran=False)  # `ranks` holds no report: an exchange would fail the test
    assert len(_registry._failures) == 1
