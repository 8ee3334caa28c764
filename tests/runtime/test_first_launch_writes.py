"""`=` plans: the first launch zeroes and writes the new output store itself (no separate fill launch)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal import runtime as rt
from distal.api.plan import Plan
from distal.lower import lower
from distal.runtime import _execute

pytestmark = pytest.mark.legate


def _plan(*args: Any, **kwargs: Any) -> Plan:
    """`distal.lower.lower`'s plan as the user's `Plan` (`Plan.of`), which runs, explains and analyses."""
    return Plan.of(lower(*args, **kwargs))


@pytest.fixture
def fills(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The zero-fills run_plan issues for new outputs."""
    seen: list[Any] = []
    real = _execute.fill

    def counted(store: Any, value: Any, tile: Any = None) -> None:
        seen.append(tile)
        real(store, value, tile)

    monkeypatch.setattr(_execute, "fill", counted)
    return seen


def _copy_plan(n: int, fmt_out: bool, accumulate: bool = False, points: int = 4
               ) -> tuple[Any, dt.Tensor, np.ndarray]:
    i, io, ii = dt.index_vars("i io ii")
    machine = dt.Machine(dt.Grid(points))
    fmt = dt.Format("x -> x", machine)
    data = np.arange(float(n)) + 1
    A = dt.Tensor("A", (n,), format=fmt if fmt_out else None)
    B = dt.Tensor.from_array("B", data, fmt)
    if accumulate:
        A[i] += B[i]  # type: ignore[misc]
    else:
        A[i] = B[i]
    sched = A.schedule().distribute([i], [io], [ii], machine).communicate([A, B], io)
    return sched.compile(), A, data


@pytest.mark.parametrize("points", [4, 1])
@pytest.mark.parametrize("fmt_out", [True, False], ids=["placed", "plain"])
def test_an_assign_plan_writes_its_output_in_its_first_launch(fills: list[Any], fmt_out: bool, points: int) -> None:
    plan, A, data = _copy_plan(10, fmt_out, points=points)  # 10 over 4 points: uneven tiles
    for _ in range(2):  # a new store each run
        plan.run()
        np.testing.assert_array_equal(A.to_numpy(), data)
    assert fills == []


def test_a_scalar_output_written_by_one_task_needs_no_fill(fills: list[Any]) -> None:
    j, k = dt.index_vars("j k")
    b = np.arange(6.0).reshape(2, 3)
    a, B = dt.Tensor("a", ()), dt.Tensor.from_array("B", b)
    a[()] = B[j, k] * B[j, k]
    a.schedule().compile().run()
    assert float(a.to_numpy()) == float((b * b).sum())
    assert fills == []


def test_a_first_launch_that_reduces_into_the_output_keeps_the_fill(fills: list[Any]) -> None:
    """TTV's per-task reduction over k on a 1-D grid writes its tiles; innerprod's REDUCE_ADD launch cannot."""
    rng = np.random.default_rng(0)
    b, c = rng.standard_normal((6, 5, 4)), rng.standard_normal((6, 5, 4))
    ops = [dt.Tensor("a", ()), dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)]
    plan = kernels.build("innerprod", kernels.machine("innerprod", 2), *ops).compile()
    plan.run()
    np.testing.assert_allclose(ops[0].to_numpy(), np.einsum("ijk,ijk->", b, c))
    assert plan.reduction is not None or fills  # a reduction into a new store starts from zeros


def test_a_pinned_first_launch_keeps_the_fill(fills: list[Any]) -> None:
    """Cannon's rotations run as pinned point launches: each writes a part, so the output is zero-filled first."""
    n = 8
    rng = np.random.default_rng(1)
    b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    ops = [dt.Tensor("A", (n, n)), dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)]
    plan = _plan(kernels.build("cannon", kernels.machine("cannon", 4), *ops), rotation="points")
    assert any(launch.pinned for _, launch in plan.launches())
    plan.run()
    np.testing.assert_allclose(ops[0].to_numpy(), b @ c, rtol=1e-12, atol=1e-12)
    assert fills


def test_an_accumulating_plan_fills_nothing_and_keeps_the_output(fills: list[Any]) -> None:
    plan, A, data = _copy_plan(8, True, accumulate=True)
    A.bind(None)
    before = A.to_numpy().copy()
    plan.run()
    np.testing.assert_array_equal(A.to_numpy(), before + data)
    assert fills == []
