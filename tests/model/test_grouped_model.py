"""The model charges the runtime's cost per task to the Legate tasks that run, not to every launch point.

Launch points bound to one real processor run as one Legate task where `distal.lower.grouping` allows it
(`DISTAL_GROUP_TASKS=0`: one task per point). The model takes that decision from `plan_tasks` on its own
binding, so its task count is the one `explain()` prints and the one the runtime submits (counted by spying
on the launch helper, as tests/runtime/test_group_tasks.py does). Machine descriptions are frozen figures:
nothing here is timed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal.api.plan import Plan
from distal.lower.grouping import ENV, plan_tasks
from distal.model import LEAF_KINDS, Link, MachineModel, ProcessorModel
from distal.model.calibrate import model_of
from tests._strategies.plans import copy_plan
from tests.model.test_rates import THIS_LIKE

FREE = Link("free", 1e30, 0.0)
TASK = 1e-4  # the runtime's cost per task of the fixed models below


def _fixed(serial: bool) -> MachineModel:
    """Compute and links free: a plan's time is its fixed costs (per plan, per launch, per task)."""
    proc = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e30), 1e30, 1 << 40)
    return MachineModel("fixed", proc, 64, FREE, FREE, launch_seconds=3e-4, task_seconds=TASK, overlap=0.0,
                        plan_seconds=5e-4, serial_tasks=serial)


_copy = copy_plan


def _matmul(name: str, grid: tuple[int, ...], n: int = 12) -> tuple[Plan, dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(n)
    b, c = rng.random((n, n)), rng.random((n, n))
    A = dt.Tensor("A", (n, n))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    # SUMMA in steps of one tile column (its default chunk takes the whole k extent at this size)
    extra = {"chunk": n // max(grid)} if name == "summa" else {}
    plan: Plan = kernels.build(name, dt.Machine(dt.Grid(*grid)), A, B, C, **extra).compile(rotation="boxes")
    return plan, A, b @ c


# (plan builder, launch points, Legate tasks on 2 CPU processors with grouping on), counted by hand
CASES: list[tuple[Callable[[], tuple[Plan, dt.Tensor, np.ndarray]], int, int]] = [
    (_copy, 4, 2),  # one launch of 4 points, 2 per processor: one task each
    (lambda: _matmul("summa", (2, 2)), 8, 4),  # 2 steps of 4 points: a row of the grid per processor
    (lambda: _matmul("summa", (4, 4)), 64, 8),  # 4 steps of 16 points: 2 rows (8 points) per processor
    (lambda: _matmul("cannon", (2, 2)), 8, 8),  # a row's tiles of C are a diagonal: one task per point
]
IDS = ["copy-grid4", "summa-2x2", "summa-4x4", "cannon-2x2"]


@pytest.mark.parametrize(("build", "points", "tasks"), CASES, ids=IDS)
def test_the_model_counts_the_tasks_explain_prints(build: Callable[[], tuple[Plan, dt.Tensor, np.ndarray]],
                                                   points: int, tasks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 2 --sysmem 3000 --utility 1")
    monkeypatch.setenv(ENV, "1")
    plan, _, _ = build()
    got = plan.predict(_fixed(True), 2)
    assert (got.points, got.tasks) == (points, tasks)
    assert sum(row["tasks"] for row in got.per_processor) == tasks
    assert plan.stats()["legate_task_count"] == tasks
    text = plan.explain(model_of(THIS_LIKE))  # this machine's model: timed on Legate's 2 configured CPUs
    printed = [int(x) for x in re.findall(r"(\d+) Legate task\(s\) on 2 real processor\(s\)", text)]
    assert sum(printed) == tasks and len(printed) == len(list(plan.launches()))
    assert f"of {points} point(s) in {tasks} Legate task(s)" in text
    # a flat machine's processors are its nodes (the traffic table's split): the model's node is not shown
    assert f"processor 0: {points // 2} point(s) in {tasks // 2} Legate task(s)" in text
    monkeypatch.setenv(ENV, "0")
    off = plan.predict(_fixed(True), 2)
    assert (off.points, off.tasks) == (points, points)
    assert f"of {points} point(s) in {points} Legate task(s)" in plan.explain(model_of(THIS_LIKE))


@pytest.mark.parametrize(("build", "points", "tasks"), CASES, ids=IDS)
@pytest.mark.parametrize("switch", ["env", "function"])
def test_fixed_cost_drops_by_the_tasks_grouping_saves(build: Callable[[], tuple[Plan, dt.Tensor, np.ndarray]],
                                                      points: int, tasks: int, switch: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Serial tasks (this machine's model): the plan's time differs by (points - tasks) * task_seconds exactly;
    the launches, the plan and the leaves' work are charged alike either way."""
    plan, _, _ = build()
    launches = len(list(plan.launches()))
    monkeypatch.setenv(ENV, "1")
    on = plan.predict(_fixed(True), 2)
    if switch == "env":
        monkeypatch.setenv(ENV, "0")
    else:
        from distal.lower import grouping

        monkeypatch.setattr(grouping, "grouping_enabled", lambda: False)
    off = plan.predict(_fixed(True), 2)
    assert off.tasks == points
    assert off.seconds - on.seconds == pytest.approx((points - tasks) * TASK, rel=1e-9, abs=1e-15)
    assert on.launch_seconds == pytest.approx(5e-4 + 3e-4 * launches + tasks * TASK, rel=1e-12)
    assert off.launch_seconds == pytest.approx(5e-4 + 3e-4 * launches + points * TASK, rel=1e-12)
    assert (on.flops, on.compute_seconds) == (off.flops, off.compute_seconds)


@pytest.mark.parametrize(("build", "points", "tasks"), CASES, ids=IDS)
def test_each_processor_pays_for_its_own_tasks(build: Callable[[], tuple[Plan, dt.Tensor, np.ndarray]],
                                               points: int, tasks: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks in parallel (not serial): a processor's compute holds its tasks' cost, so the two processors
    (half the points and half the tasks each) differ from one task per point by half the saving."""
    plan, _, _ = build()
    monkeypatch.setenv(ENV, "1")
    on = plan.predict(_fixed(False), 2)
    monkeypatch.setenv(ENV, "0")
    off = plan.predict(_fixed(False), 2)
    for a, b in zip(on.per_processor, off.per_processor, strict=True):
        assert (a["points"], a["tasks"], b["tasks"]) == (points // 2, tasks // 2, points // 2)
        assert b["compute_seconds"] - a["compute_seconds"] == pytest.approx((points - tasks) / 2 * TASK, rel=1e-9)
    assert off.seconds - on.seconds == pytest.approx((points - tasks) / 2 * TASK, rel=1e-9, abs=1e-15)


def test_one_point_per_processor_is_one_task_each() -> None:
    """SUMMA 2x2 on 4 real processors: nothing to group, the model charges every point as before."""
    plan, _, _ = _matmul("summa", (2, 2))
    got = plan.predict(_fixed(True), 4)
    assert (got.points, got.tasks) == (8, 8)
    assert sum(t.tasks for t in plan_tasks(plan, 4)) == 8
    assert got.launch_seconds == pytest.approx(5e-4 + 3e-4 * 2 + 8 * TASK, rel=1e-12)


# -- what the runtime submits -------------------------------------------------------------------------------------


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The kernel name and Legate tasks of every launch submitted (one entry per launch)."""
    from distal import runtime as rt
    from distal.runtime import _launch
    from distal.runtime._registry import kernel

    rt.ensure_started()
    if rt.processor_count("cpu") != 2:
        pytest.skip("the hand counts are for Legate with 2 CPU processors")
    seen: list[tuple[str, int]] = []
    real = _launch._submit

    def counted(key: int, args: Sequence[Any], lower: Sequence[int], upper: Sequence[int], whole_stores: bool,
                pinned: Sequence[int] | None = None) -> None:
        seen.append((kernel(key)[0], 1 if pinned is not None else math.prod(hi - lo for lo, hi in zip(lower, upper))))
        real(key, args, lower, upper, whole_stores, pinned)

    monkeypatch.setattr(_launch, "_submit", counted)
    monkeypatch.setenv("DISTAL_REPLAY", "0")  # every run works its launches out (a replayed one skips _submit)
    return seen


@pytest.mark.legate
@pytest.mark.parametrize(("build", "points", "tasks"), CASES, ids=IDS)
def test_the_model_counts_the_tasks_the_runtime_submits(build: Callable[[], tuple[Plan, dt.Tensor, np.ndarray]],
                                                        points: int, tasks: int, submitted: list[tuple[str, int]],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, out, expected = build()
    names = tuple(g.body.name for g in plan.groups)
    for on, want in ((True, tasks), (False, points)):
        monkeypatch.setenv(ENV, "1" if on else "0")
        plan.run()  # the first run places the inputs (copies that are no task of the plan's kernels)
        submitted.clear()
        plan.run()
        np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12)
        ran = sum(n for label, n in submitted if label.startswith(names))
        assert ran == want == plan.predict(_fixed(True), 2).tasks
