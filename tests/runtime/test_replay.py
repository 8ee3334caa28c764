"""A plan run again submits the launches its last run worked out (`runtime._execute._Replay`, kept per `Executable`).

A run that made no store keeps its launches; the next runs submit them as they were (no `_submit`), for as
long as the plan's tensors hold the same storage and task grouping is unchanged. Counted by spying on the
launch helpers, not by timing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.lower.grouping import ENV
from distal.runtime import _execute, _launch

pytestmark = pytest.mark.legate


@pytest.fixture
def calls(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many launches went through `_submit` (worked out) and through `Submission.launch` (all)."""
    seen = {"worked_out": 0, "launched": 0}
    submit, launch = _launch._submit, _launch.Submission.launch

    def worked_out(*args: Any, **kwargs: Any) -> None:
        seen["worked_out"] += 1
        submit(*args, **kwargs)

    def launched(self: _launch.Submission, key: int) -> None:
        seen["launched"] += 1
        launch(self, key)

    monkeypatch.setattr(_launch, "_submit", worked_out)
    monkeypatch.setattr(_launch.Submission, "launch", launched)
    monkeypatch.setenv(ENV, "1")
    monkeypatch.delenv("DISTAL_REPLAY", raising=False)
    return seen


def _kept(plan: Any) -> Any:
    """The launches kept for the plan's next run (`_execute.replay_of` its executable), or None."""
    return _execute.replay_of(_execute.executable_of(plan))


def _copy(source: dt.Tensor, n: int, points: int = 4) -> tuple[Any, dt.Tensor]:
    """out(i) = source(i) on Grid(points), both laid out x -> x."""
    i, io, ii = dt.index_vars("i io ii")
    machine = dt.Machine(dt.Grid(points))
    out = dt.Tensor("out", (n,), format=dt.Format("x -> x", machine))
    out[i] = source[i]
    return out.schedule().distribute([i], [io], [ii], machine).communicate([out, source], io).compile(), out


def test_runs_after_one_that_made_no_store_replay_its_launches(calls: dict[str, int]) -> None:
    data = np.arange(10.0) + 1
    B = dt.Tensor.from_array("B", data, dt.Format("x -> x", dt.Machine(dt.Grid(4))))
    plan, out = _copy(B, 10)
    plan.run()  # places B and makes the output: not kept
    assert _kept(plan) is None
    plan.run()  # writes into the previous output's store: kept
    np.testing.assert_array_equal(out.to_numpy(), data)
    kept = _kept(plan)
    worked_out = calls["worked_out"]
    launched = calls["launched"]
    storage = out.storage
    for _ in range(3):
        plan.run()
        np.testing.assert_array_equal(out.to_numpy(), data)
    assert calls["worked_out"] == worked_out  # nothing worked out again
    assert calls["launched"] - launched == 3 * len(kept.launches) > 0
    assert out.storage is storage  # written in place, as a run that works its launches out does


def test_a_tensor_given_other_storage_makes_the_next_run_work_its_launches_out(calls: dict[str, int]) -> None:
    fmt = dt.Format("x -> x", dt.Machine(dt.Grid(4)))
    first, second = np.arange(12.0), -np.arange(12.0) - 5
    A = dt.Tensor.from_array("A", first, fmt)
    plan, out = _copy(A, 12)
    for _ in range(3):
        plan.run()
    np.testing.assert_array_equal(out.to_numpy(), first)
    assert _kept(plan) is not None
    C = dt.Tensor.from_array("C", second, fmt)
    i, io, ii = dt.index_vars("i io ii")
    A[i] = C[i]  # another plan writes A: A holds new storage after it
    machine = dt.Machine(dt.Grid(4))
    A.schedule().distribute([i], [io], [ii], machine).communicate([A, C], io).compile().run()
    worked_out = calls["worked_out"]
    plan.run()
    np.testing.assert_array_equal(out.to_numpy(), second)
    assert calls["worked_out"] > worked_out


def test_changing_task_grouping_works_the_launches_out_again(calls: dict[str, int],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    data = np.arange(12.0)
    B = dt.Tensor.from_array("B", data, dt.Format("x -> x", dt.Machine(dt.Grid(4))))
    plan, out = _copy(B, 12)
    for _ in range(3):
        plan.run()
    monkeypatch.setenv(ENV, "0")
    worked_out = calls["worked_out"]
    plan.run()
    np.testing.assert_array_equal(out.to_numpy(), data)
    assert calls["worked_out"] > worked_out


def test_replay_off_keeps_nothing(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DISTAL_REPLAY", "0")
    data = np.arange(8.0)
    B = dt.Tensor.from_array("B", data, dt.Format("x -> x", dt.Machine(dt.Grid(4))))
    plan, out = _copy(B, 8)
    for _ in range(3):
        plan.run()
    np.testing.assert_array_equal(out.to_numpy(), data)
    assert _kept(plan) is None


def test_the_kept_launches_go_with_their_plan(calls: dict[str, int]) -> None:
    import gc
    import weakref

    B = dt.Tensor.from_array("B", np.arange(8.0), dt.Format("x -> x", dt.Machine(dt.Grid(4))))
    plan, _ = _copy(B, 8)
    for _ in range(3):
        plan.run()
    exe = weakref.ref(_execute.executable_of(plan))
    assert _execute.replay_of(exe()) is not None  # type: ignore[arg-type]
    held = weakref.ref(plan)
    del plan
    gc.collect()
    assert held() is None and exe() is None
