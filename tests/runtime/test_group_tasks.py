"""Launch points bound to one real processor run as one Legate task (`distal.lower.grouping`).

The Legate tasks are counted by spying on the launch helper (`_launch.Submission.launch`, which every
launch goes through, a replayed one too: an index launch runs one task per point of its domain, a pinned
launch one), not by timing. Every plan runs with grouping on and
off (`DISTAL_GROUP_TASKS`), and both results are compared with NumPy; `explain()`'s count
(`plan_tasks`) must be what ran.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal import runtime as rt
from distal.api.plan import Plan
from distal.lower import lower
from distal.lower.grouping import ENV, plan_tasks
from distal.lower.task_body import TaskBody
from distal.runtime import _group_tasks, _launch
from distal.runtime._registry import kernel
from tests._strategies.plans import copy_plan

pytestmark = pytest.mark.legate


def _plan(*args: Any, **kwargs: Any) -> Plan:
    """`distal.lower.lower`'s plan as the user's `Plan` (`Plan.of`), which runs, explains and analyses."""
    return Plan.of(lower(*args, **kwargs))


@pytest.fixture
def tasks(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The kernel name and Legate tasks of every launch submitted (one entry per launch)."""
    seen: list[tuple[str, int]] = []
    real = _launch.Submission.launch

    def counted(self: _launch.Submission, key: int) -> None:
        pinned = ";" in self.layout  # a pinned launch's layout carries its point
        count = 1 if pinned else math.prod(hi - lo for lo, hi in zip(self.lower, self.upper))
        seen.append((kernel(key)[0], count))
        real(self, key)

    monkeypatch.setattr(_launch.Submission, "launch", counted)
    return seen


def _two_cpus() -> None:
    if rt.processor_count("cpu") != 2:
        pytest.skip("the counts below are for Legate with 2 CPU processors")


_copy = copy_plan


def _matmul(name: str, machine: dt.Machine, n: int, rotation: str = "boxes",
            **params: Any) -> tuple[Any, dt.Tensor, np.ndarray]:
    rng = np.random.default_rng(n)
    b, c = rng.random((n, n)), rng.random((n, n))
    A = dt.Tensor("A", (n, n))
    B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
    return _plan(kernels.build(name, machine, A, B, C, **params), rotation=rotation), A, b @ c


def _counted(plan: Any, out: dt.Tensor, expected: np.ndarray, tasks: list[tuple[str, int]],
             monkeypatch: pytest.MonkeyPatch, on: bool) -> int:
    """Run `plan` with grouping on or off (after a run that places its inputs); the Legate tasks of its
    launches (those of its groups' kernels: not the copies that lay its output out by its format)."""
    monkeypatch.setenv(ENV, "1" if on else "0")
    plan.run()
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12)
    tasks.clear()
    plan.run()
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12)
    names = tuple(g.body.name for g in plan.groups)
    ran = sum(n for label, n in tasks if label.startswith(names))
    assert ran == sum(t.tasks for t in plan_tasks(plan, rt.processor_count("cpu"), enabled=on))
    return ran


@pytest.mark.parametrize(("build", "grouped", "ungrouped"), [
    (lambda: _copy(8, 4), 2, 4),  # one launch of 4 points: 2 per processor
    (lambda: _copy(11, 4), 2, 4),  # uneven tiles (3, 3, 3, 2)
    (lambda: _matmul("summa", dt.Machine(dt.Grid(2, 2)), 13, chunk=7), 4, 8),  # 2 steps of 4 points: a row each
    (lambda: _matmul("pumma", dt.Machine(dt.Grid(2, 2)), 7), 4, 8),
], ids=["copy-grid4", "copy-grid4-uneven", "summa-2x2-n13", "pumma-2x2-n7"])
def test_points_of_one_processor_run_as_one_task(tasks: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch,
                                                 build: Callable[[], tuple[Any, dt.Tensor, np.ndarray]],
                                                 grouped: int, ungrouped: int) -> None:
    _two_cpus()
    plan, out, expected = build()
    assert _counted(plan, out, expected, tasks, monkeypatch, on=False) == ungrouped
    assert _counted(plan, out, expected, tasks, monkeypatch, on=True) == grouped


@pytest.mark.parametrize("build", [
    lambda: _matmul("cannon", dt.Machine(dt.Grid(2, 2)), 11),  # a row's tiles of C are a diagonal: not a box
    lambda: _matmul("cannon", dt.Machine(dt.Grid(2, 2)), 5, rotation="points"),  # pinned points
    lambda: _matmul("summa", dt.Machine(dt.Grid(3, 3)), 7),  # 5 + 4 points per processor: not boxes
    lambda: _matmul("summa", dt.Machine(dt.Grid(1, 2), dt.Grid(2, 1)), 9),  # hierarchical
    lambda: _matmul("johnson", dt.Machine(dt.Grid(2, 2, 2)), 5),  # reduction over k
    lambda: _copy(7, 2),  # one point per processor
], ids=["cannon-boxes", "cannon-points", "summa-3x3", "summa-hierarchical", "johnson-2x2x2", "copy-grid2"])
def test_grouping_changes_no_result_and_explain_counts_what_runs(
        tasks: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch, build: Callable[[], tuple[Any, dt.Tensor, np.ndarray]]
) -> None:
    plan, out, expected = build()
    off = _counted(plan, out, expected, tasks, monkeypatch, on=False)
    on = _counted(plan, out, expected, tasks, monkeypatch, on=True)
    assert on <= off


def test_explain_says_how_many_tasks_run_and_why(machine: rt.MachineInfo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEGATE_CONFIG", "--cpus 2 --sysmem 3000")
    plan, _, _ = _copy(8, 4)
    monkeypatch.setenv(ENV, "1")
    assert "2 Legate task(s) on 2 real processor(s): the 2 points of each processor run as one task" in plan.explain()
    assert plan.stats()["legate_task_count"] == 2
    monkeypatch.setenv(ENV, "0")
    assert f"4 Legate task(s) on 2 real processor(s): one task per point (grouping off: {ENV}=0)" in plan.explain()
    cannon, _, _ = _matmul("cannon", dt.Machine(dt.Grid(2, 2)), 11)
    monkeypatch.setenv(ENV, "1")
    assert "two of its dimensions follow launch dimension 1, so a group's tiles are not a box" in cannon.explain()


def test_grouped_task_runs_each_point_in_order(tasks: list[tuple[str, int]], monkeypatch: pytest.MonkeyPatch) -> None:
    """The grouped task calls the body once per original point, row-major, each with its own tile."""
    _two_cpus()
    plan, out, expected = _copy(8, 4)
    calls: list[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = []
    real = _group_tasks.Grouped.__call__

    def spied(self: Any, point: tuple[int, ...], *tiles: Any) -> None:
        inner = self.kernel

        def record(p: tuple[int, ...], *views: Any) -> None:
            calls.append((tuple(int(x) for x in p), tuple(v.shape for v in views)))
            inner(p, *views)

        self.kernel = record
        try:
            real(self, point, *tiles)
        finally:
            self.kernel = inner

    monkeypatch.setattr(_group_tasks.Grouped, "__call__", spied)
    _counted(plan, out, expected, tasks, monkeypatch, on=True)
    assert sorted(calls) == sorted([((p,), ((1, 2), (1, 2))) for p in range(4)] * 2)  # two runs, blocks of 2
    for run in (calls[:4], calls[4:]):
        firsts = [c[0][0] for c in run]
        assert firsts.index(0) < firsts.index(1) and firsts.index(2) < firsts.index(3)


def test_a_failure_in_a_grouped_task_names_the_launch_point(machine: rt.MachineInfo,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    _two_cpus()
    plan, out, expected = _matmul("summa", dt.Machine(dt.Grid(2, 2)), 6, chunk=3)  # two k-steps
    monkeypatch.setenv(ENV, "1")
    real = TaskBody.__call__

    def failing(self: TaskBody, point: Any, *tiles: Any) -> None:
        if tuple(int(p) for p in point) == (1, 1, 1):  # the second point of processor 1, second step
            raise ValueError("injected")
        real(self, point, *tiles)

    monkeypatch.setattr(TaskBody, "__call__", failing)
    with pytest.raises(dt.RuntimeFailure, match=r"at launch point \(1, 1, 1\) \(run in the task of group \(1, 0, 0\)\)"):
        plan.run()
        out.to_numpy()
        rt.check_failures()
    monkeypatch.setattr(TaskBody, "__call__", real)
    plan.run()
    np.testing.assert_allclose(out.to_numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize(("name", "placed"), [("summa", False), ("summa", True), ("cannon", True),
                                               ("johnson", True), ("solomonik", True)])
def test_the_executables_cuts_are_those_of_the_real_launch_arguments(machine: rt.MachineInfo,
                                                                     monkeypatch: pytest.MonkeyPatch, name: str,
                                                                     placed: bool) -> None:
    """`finalize` works the task groups out from `operand_cut`; every argument the run makes cuts its store
    as `operand_cut` said (tile, projection, colors), so what was grouped is what runs."""
    from distal.kernels._algorithms import ALGORITHMS
    from distal.lower.grouping import Cut, operand_cut
    from distal.lower.task_graph import Privilege
    from distal.runtime import _execute

    monkeypatch.setenv(ENV, "1")
    seen: list[tuple[Cut, Cut]] = []
    real_run, real_arg = _execute._run, _execute.launch_arg
    state: dict[str, Any] = {}

    def run(plan: Any, exe: Any, trace: Any) -> None:
        state["plan"], state["exe"] = plan, exe
        real_run(plan, exe, trace)

    def arg(stores: Any, placed_ops: Any, launch: Any, op: Any) -> Any:
        made = real_arg(stores, placed_ops, launch, op)
        exe = state["exe"]
        written = made.privilege is not Privilege.READ
        got = (Cut(None, None, None, written) if made.tile is None
               else Cut(made.tile, tuple(made.maps(len(launch.lower))), made.color_shape(), written))
        view = exe.views[op.tensor]
        seen.append((got, operand_cut(state["plan"], launch, op, exe.layouts[op.tensor],
                                      view.of(launch, op) if view is not None else None)))
        return made

    monkeypatch.setattr(_execute, "_run", run)
    monkeypatch.setattr(_execute, "launch_arg", arg)
    alg = ALGORITHMS[name]
    for n, procs in ((8, 4), (7, 8)):
        m = kernels.machine(name, procs)
        b, c = np.ones((n, n)), np.ones((n, n))
        A = dt.Tensor("A", (n, n), alg.format_of(0, m) if placed else None)
        B = dt.Tensor.from_array("B", b, alg.format_of(1, m) if placed else None)
        C = dt.Tensor.from_array("C", c, alg.format_of(2, m) if placed else None)
        kernels.build(name, m, A, B, C).compile().run()
        np.testing.assert_allclose(A.to_numpy(), b @ c)
    assert seen and all(got == want for got, want in seen)
