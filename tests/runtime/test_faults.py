"""Faults on Legate leave inputs intact and the runtime usable (issue 15 item 7).

Each case breaks one run on purpose: a kernel raising inside its task, Legate
failing when the second launch of a plan is submitted, and a redistribution
interrupted between its collectives and the tensor taking the result. After
each, every input tensor still holds its data and the next plan runs and
gives the right answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.lower.task_body import TaskBody

pytestmark = pytest.mark.legate  # in this process, or in a child process

i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
N = 8


class _Injected(Exception):
    """The fault a test injects."""


@pytest.fixture
def summa(machine: rt.MachineInfo) -> Iterator[tuple[dt.Schedule, dt.Tensor, np.ndarray, np.ndarray]]:
    """SUMMA on 2x2 with formats, k in 2 steps (two launches); B and C hold known data."""
    m = dt.Machine(dt.Grid(2, 2))
    fmt = dt.Format("xy -> xy", m)
    rng = np.random.default_rng(7)
    b0, c0 = rng.random((N, N)), rng.random((N, N))
    A = dt.Tensor("A", (N, N), fmt)
    B, C = dt.Tensor.from_array("B", b0, fmt), dt.Tensor.from_array("C", c0, fmt)
    A[i, j] = B[i, k] * C[k, j]
    sched = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, N // 2)
             .reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko)
             .substitute([ii, ji, ki], dt.leaf.GEMM))
    yield sched, A, b0, c0
    rt.check_failures()  # nothing left over for the next test


def _inputs_intact_and_next_plan_right(sched: dt.Schedule, A: dt.Tensor, b0: np.ndarray, c0: np.ndarray) -> None:
    B, C = (sched.bindings.tensor(t) for t in sched.tensors() if t.name in "BC")
    np.testing.assert_array_equal(B.to_numpy(), b0)
    np.testing.assert_array_equal(C.to_numpy(), c0)
    sched.evaluate()
    np.testing.assert_allclose(A.to_numpy(), b0 @ c0, rtol=1e-12)
    # and a plan of another shape, on fresh tensors
    x = dt.Tensor.from_array("x", np.arange(6.0))
    y = dt.Tensor("y", (6,))
    y[i] = x[i] * 2
    y.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(2))).evaluate()
    np.testing.assert_array_equal(y.to_numpy(), np.arange(6.0) * 2)


def test_a_kernel_raising_inside_its_task(summa: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sched, A, b0, c0 = summa
    real = TaskBody.__call__

    def failing(self: TaskBody, point: Any, *tiles: Any) -> None:
        if tuple(int(p) for p in point)[-1] == 1:  # the second k step
            raise _Injected("a kernel failed inside its task")
        real(self, point, *tiles)

    monkeypatch.setattr(TaskBody, "__call__", failing)
    with pytest.raises(dt.RuntimeFailure, match="a kernel failed inside its task"):
        sched.evaluate()
        A.to_numpy()
        rt.check_failures()
    monkeypatch.setattr(TaskBody, "__call__", real)
    _inputs_intact_and_next_plan_right(sched, A, b0, c0)


def test_legate_failing_mid_plan(summa: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sched, A, b0, c0 = summa
    from distal.runtime import _execute

    real = _execute.index_launch
    calls = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        if len(calls) == 2:  # the first launch is queued, the second fails to submit
            raise dt.RuntimeFailure("Legate failed while submitting a launch")
        return real(*args, **kwargs)

    monkeypatch.setattr(_execute, "index_launch", failing)
    with pytest.raises(dt.RuntimeFailure, match="Legate failed while submitting a launch"):
        sched.evaluate()
    assert len(calls) == 2
    monkeypatch.setattr(_execute, "index_launch", real)
    _inputs_intact_and_next_plan_right(sched, A, b0, c0)


def test_an_interrupted_redistribution(summa: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    sched, A, b0, c0 = summa
    from distal.runtime import _redistribute

    B = next(sched.bindings.tensor(t) for t in sched.tensors() if t.name == "B")
    old = B.format
    real = _redistribute.run_program
    ran = []

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)  # the collectives ran; the tensor has not taken the result yet
        ran.append(out)
        raise _Injected("redistribution interrupted")

    monkeypatch.setattr(_redistribute, "run_program", interrupted)
    with pytest.raises(_Injected):
        B.redistribute(dt.Format("xy -> yx", old.machine))
    assert ran, "the redistribution ran at least one program before the interruption"
    monkeypatch.setattr(_redistribute, "run_program", real)
    assert B.format == old  # B keeps its format and its data
    _inputs_intact_and_next_plan_right(sched, A, b0, c0)
    # the same redistribution, uninterrupted, works and keeps the data
    B.redistribute(dt.Format("xy -> yx", old.machine))
    np.testing.assert_array_equal(B.to_numpy(), b0)


_OOM_SCRIPT = """
import numpy as np
import distal as dt

i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
m = dt.Machine(dt.Grid(2, 2))
n = 200000
A, B, C = dt.Tensor("A", (n, n)), dt.Tensor("B", (n, n)), dt.Tensor("C", (n, n))
A[i, j] = B[i, k] * C[k, j]
summa = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, 50000)
         .reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko)
         .substitute([ii, ji, ki], dt.leaf.GEMM))
try:
    summa.evaluate()
except dt.OutOfMemory as e:
    print("refused:", str(e).splitlines()[0][:100])
x = dt.Tensor.from_array("x", np.arange(4.0))
y = dt.Tensor("y", (4,))
y[i] = x[i] + 1
y.schedule().evaluate()
print("next plan:", y.to_numpy().tolist())
"""


def test_a_plan_refused_for_memory_leaves_a_process_that_runs_on_and_exits_cleanly(run_python: Any) -> None:
    # it used to raise NumPy's MemoryError and then abort at exit on the output's queued fill
    done = run_python(_OOM_SCRIPT, env={"LEGATE_CONFIG": "--cpus 2 --sysmem 1000 --utility 1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "refused: expected the plan to fit in Legate's system memory of 1000.0 MiB" in done.stdout
    assert "next plan: [1.0, 2.0, 3.0, 4.0]" in done.stdout
