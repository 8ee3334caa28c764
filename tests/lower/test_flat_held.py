"""On a small flat machine, large partials are held instead of Legate's reduction instances (issue 34, item 4).

Johnson and COSMA on `Grid(2, 2, 2)` reduce every point's tile of A into
A once; with Legate's reduction each point gets a reduction instance made
afresh every run, which on this machine cost an erratic 1.5-40 ms a run,
against 1.0-3.2 ms from n = 32 to 512 with each processor adding into its own
partial, kept with the plan, and folding it into its tile once (`HeldReduction`). The lowering
holds them where the partials are at least `HOLD_MIN_BYTES` and the flat
machine has at most `HOLD_MAX_PROCESSORS` processors; what is reduced, and
the bytes counted, are the same as with Legate's reduction.
"""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal.api.plan import Plan
from distal.lower.reductions import HOLD_MAX_PROCESSORS, HOLD_MIN_BYTES, HeldReduction


def _plan(name: str, n: int, grid: tuple[int, ...] = (2, 2, 2), data: bool = False, **options: str) -> Plan:
    rng = np.random.default_rng(n)
    A = dt.Tensor("A", (n, n))
    if data:  # small integers: every order of summation gives numpy's result exactly
        B = dt.Tensor.from_array("B", rng.integers(-4, 5, (n, n)).astype(np.float64))
        C = dt.Tensor.from_array("C", rng.integers(-4, 5, (n, n)).astype(np.float64))
    else:
        B, C = dt.Tensor("B", (n, n)), dt.Tensor("C", (n, n))
    plan: Plan = dt.kernels.build(name, dt.Machine(dt.Grid(*grid)), A, B, C).compile(**options)
    return plan


@pytest.mark.parametrize("name", ["johnson", "cosma"])
def test_large_partials_on_a_small_flat_machine_are_held(name: str) -> None:
    n = 512  # a processor's tile of A: 256 x 256 float64, 512 KiB
    assert 8 * (n // 2) ** 2 >= HOLD_MIN_BYTES
    held, legate = _plan(name, n), _plan(name, n, reduction="legate")
    assert isinstance(held.reduction, HeldReduction) and not isinstance(legate.reduction, HeldReduction)
    assert held.reduction.reason.startswith("flat machine: each processor adds into its own partial (524288 B")
    assert held.reduction.row == (n // 2, n // 2) and held.reduction.across == ()
    assert len(held.reduction.folds) == 1  # one launch: its tiles folded once, after it
    # the same bytes reduced, by the same senders
    assert held.stats()["total_reduced_bytes"] == legate.stats()["total_reduced_bytes"] == 4 * 8 * (n // 2) ** 2
    assert held.stats()["reduced_bytes"] == legate.stats()["reduced_bytes"]


def test_small_partials_and_large_machines_keep_legates_reduction() -> None:
    small = _plan("johnson", 16)  # 512 B tiles: not measured, Legate's one reduction
    assert 8 * 8 ** 2 < HOLD_MIN_BYTES
    assert small.reduction is not None and not isinstance(small.reduction, HeldReduction)
    assert small.reduction.reason == "flat machine: one Legate reduction"
    grid = (4, 4, 2)  # 32 processors: one pinned fold each would outnumber Legate's one reduction launch
    assert 32 > HOLD_MAX_PROCESSORS
    large = _plan("johnson", 2048, grid)
    assert large.reduction is not None and not isinstance(large.reduction, HeldReduction)


def test_held_partials_give_numpys_result_on_the_numpy_executor() -> None:
    from distal.lower import numpy_exec

    plan = _plan("johnson", 512, data=True)
    assert isinstance(plan.reduction, HeldReduction)
    b, c = (plan.tensor(t).to_numpy() for t in plan.tensors[1:])
    numpy_exec.run_numpy(plan)
    np.testing.assert_array_equal(plan.tensor(plan.output).to_numpy(), b @ c)


@pytest.mark.legate
@pytest.mark.parametrize("name", ["johnson", "cosma"])
def test_held_partials_give_numpys_result_on_legate(name: str, legate: object) -> None:
    plan = _plan(name, 512, data=True)
    assert isinstance(plan.reduction, HeldReduction)
    b, c = (plan.tensor(t).to_numpy() for t in plan.tensors[1:])
    for _ in range(2):  # the partials are kept with the plan and zeroed at each run
        plan.run()
        np.testing.assert_array_equal(plan.tensor(plan.output).to_numpy(), b @ c)


def test_several_ranks_keep_legates_reduction(monkeypatch: pytest.MonkeyPatch) -> None:
    # the pinned fold would move a tile held on another rank to the reducer and back: twice Legate's bytes
    for name in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(_plan("johnson", 512).reduction, HeldReduction)
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    plan = _plan("johnson", 512)
    assert plan.reduction is not None and not isinstance(plan.reduction, HeldReduction)
    assert plan.reduction.reason == "flat machine: one Legate reduction"
