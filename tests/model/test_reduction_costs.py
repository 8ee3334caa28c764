"""What a reduction into the output costs besides its leaves (issue 34 item 4): Legate's reduction instances, a
held reduction's zero fill and folds."""

from __future__ import annotations

import pytest

import distal as dt
from distal import kernels
from distal.lower.reductions import HeldReduction
from distal.machine.links import Link
from distal.model.hardware import HUGE_PAGE, LEAF_KINDS, MachineModel, ProcessorModel

FREE = Link("free", 1e30, 0.0)
STREAM = 1e10  # bytes/s of element-wise work


def _model(instance: float = 0.0, page: float = 0.0) -> MachineModel:
    """This machine's shape (one shared memory, 2 cores), leaves and links free: what is left is the runtime."""
    proc = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e30), 1e30, 1 << 40, streaming={"GENERIC": STREAM})
    return MachineModel("free", proc, 1 << 16, FREE, FREE, launch_seconds=3e-4, task_seconds=1e-4, overlap=0.0,
                        plan_seconds=5e-4, serial_tasks=True, shared_memory=True, cores=2,
                        reduction_instance_seconds=instance, reduction_page_seconds=page)


def _plan(name: str, grid: tuple[int, ...], n: int, reduction: str = "auto") -> dt.Plan:
    built = kernels.build(name, dt.Machine(dt.Grid(*grid)), *(dt.Tensor(x, (n, n)) for x in "ABC"))
    plan: dt.Plan = built.compile(reduction=reduction)
    return plan


def test_a_reduction_instance_costs_per_instance_and_per_byte_of_its_whole_huge_pages() -> None:
    m = _model(2e-4, 1e-9)
    assert m.reduction_seconds(HUGE_PAGE - 8) == pytest.approx(2e-4)
    assert m.reduction_seconds(2 * HUGE_PAGE + 8) == pytest.approx(2e-4 + 2 * HUGE_PAGE * 1e-9)
    assert "us per reduction instance" in m.describe() and "reduction instance" not in _model().describe()
    with pytest.raises(dt.DistalError, match="reduction instance"):
        _model(-1.0)


@pytest.mark.parametrize("n", [256, 2048])
def test_johnson_pays_one_instance_per_point_of_its_legate_reduction(n: int) -> None:
    plan = _plan("johnson", (2, 2, 2), n, "legate")  # one REDUCE_ADD launch of 8 points, Legate's reduction
    assert plan.reduction is not None and plan.reduction.strategy == "legate"
    assert not isinstance(plan.reduction, HeldReduction)
    base = plan.predict(_model(), 2).seconds
    costs = _model(2e-4, 1e-9)
    tile = (n // 2) ** 2 * 8
    # 4 points on each of the 2 processors, each with its own instance of A's tile; 2 busy processors, 2 cores
    assert plan.predict(costs, 2).seconds - base == pytest.approx(4 * costs.reduction_seconds(tile), rel=1e-9)


def test_plans_without_legates_reduction_pay_no_instance() -> None:
    costs = _model(2e-4, 1e-9)
    for name, grid in (("summa", (2, 2)), ("cannon", (2, 1)), ("johnson", (2, 2, 1)), ("solomonik", (2, 2, 2)),
                       ("johnson", (2, 2, 2))):  # the last: its 512 KiB partials held (distal.lower.reductions)
        plan = _plan(name, grid, 1024)
        assert plan.predict(costs, 2).seconds == pytest.approx(plan.predict(_model(), 2).seconds, rel=1e-12), name


def test_a_held_reduction_pays_its_zero_fill_and_one_pinned_fold_per_processor_and_stage() -> None:
    n = 1024
    plan = _plan("solomonik", (2, 2, 2), n)  # 8 launches of 2 points (Cannon steps), partials held across them
    red = plan.reduction
    assert isinstance(red, HeldReduction) and red.folds == (7,)  # one stage: folded after the last launch
    free = _model()
    got = plan.predict(free, 2)
    tile = (n // 2) ** 2 * 8
    folds = 8  # each of the 8 processors of the machine adds its partial into its tile once
    launches = free.launch_overhead(2) * 8 + free.launch_overhead(1) * (1 + folds)  # the plan's, the fill, folds
    tasks = (16 + folds) * free.task_seconds  # one node: its tasks one after the other
    # per real processor (4 of the machine's): its partials zeroed (one write), its folds (read, read, write)
    work = 4 * tile / STREAM + 4 * 3 * tile / STREAM
    assert got.seconds == pytest.approx(free.plan_seconds + launches + tasks + work, rel=1e-9)
