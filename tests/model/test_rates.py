"""The model's terms on fixed machine descriptions: bandwidth-bound leaves, size-dependent rates, fixed costs.

No test here measures anything: each builds a `MachineModel` from fixed
figures and checks the arithmetic of `predict` against a hand computation.
"""

from __future__ import annotations

import math

import pytest

import distal as dt
from distal import kernels
from distal.api.plan import Plan
from distal.model import LEAF_KINDS, Link, MachineModel, ModelError, ProcessorModel
from distal.model.calibrate import fit_fixed_costs, model_of

FREE = Link("free", 1e30, 0.0)


def _model(flops: float = 1e30, bandwidth: float = 1e30, curves: dict[str, tuple[tuple[float, float], ...]] | None = None,
           bound: frozenset[str] = frozenset(), **costs: float | bool) -> MachineModel:
    proc = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, flops), bandwidth, 1 << 40, curves=curves or {},
                          bandwidth_bound=bound)
    fixed: dict[str, float | bool] = {"launch_seconds": 0.0, "task_seconds": 0.0, "overlap": 0.0}
    fixed.update(costs)
    return MachineModel("fixed", proc, 64, FREE, FREE, **fixed)  # type: ignore[arg-type]


def _ttv(n: int, procs: int) -> Plan:
    ops = [dt.Tensor("A", (n, n)), dt.Tensor("B", (n, n, n)), dt.Tensor("c", (n,))]
    plan: Plan = kernels.build("ttv", kernels.machine("ttv", procs), *ops).compile()
    return plan


def _summa(n: int, grid: tuple[int, ...] = (1, 1)) -> Plan:
    ops = [dt.Tensor(x, (n, n)) for x in "ABC"]
    plan: Plan = kernels.build("summa", dt.Machine(dt.Grid(*grid)), *ops, chunk=n).compile()
    return plan


def test_bandwidth_bound_leaf_takes_its_bytes_at_the_bandwidth() -> None:
    """TTV at a FLOP rate that would make it take hours: as a bandwidth-bound leaf it takes its bytes' time."""
    n, bw = 64, 1e10
    plan = _ttv(n, 1)
    moved = (n**3 + n + n * n) * 8  # B's tile, c, A's tile
    slow = _model(flops=1e3, bandwidth=bw, bound=frozenset({"TTV"}))
    assert plan.predict(slow).compute_seconds == pytest.approx(moved / bw, rel=1e-9)
    own = _model(flops=1e3, bandwidth=bw, bound=frozenset({"TTV"}))
    own = own.with_(processor=ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e3), bw, 1 << 40,
                                             bandwidth_bound=frozenset({"TTV"}), streaming={"TTV": bw / 2}))
    assert plan.predict(own).compute_seconds == pytest.approx(2 * moved / bw, rel=1e-9)  # TTV's own rate
    roofline = _model(flops=1e3, bandwidth=bw)  # not bandwidth-bound: the FLOPs at 1 kFLOP/s dominate
    assert plan.predict(roofline).compute_seconds == pytest.approx(2 * n**3 / 1e3, rel=1e-9)


@pytest.mark.parametrize("n", [64, 256, 1024])
def test_gemm_rate_is_interpolated_at_the_tiles_size(n: int) -> None:
    curve = ((1e6, 1e9), (1e9, 4e9))
    flops = 2.0 * n**3
    w = min(max((math.log(flops) - math.log(1e6)) / (math.log(1e9) - math.log(1e6)), 0.0), 1.0)
    rate = 1e9 + w * 3e9
    got = _summa(n).predict(_model(curves={"GEMM": curve}))
    assert got.compute_seconds == pytest.approx(flops / rate, rel=1e-9)


def test_rate_of_each_point_is_the_rate_of_its_own_tile() -> None:
    """Four points of n/2-sized tiles run at the small tiles' rate, not at the whole product's."""
    n = 512
    curve = ((1e6, 1e9), (1e8, 4e9))
    got = _summa(n, (2, 2)).predict(_model(curves={"GEMM": curve}), 4)
    point = 2.0 * (n // 2) ** 2 * n  # one point: an (n/2 x n) by (n x n/2) product
    w = (math.log(point) - math.log(1e6)) / (math.log(1e8) - math.log(1e6))
    assert got.compute_seconds == pytest.approx(point / (1e9 + w * 3e9), rel=1e-9)


@pytest.mark.parametrize("serial", [True, False])
def test_fixed_costs_per_plan_launch_and_point(serial: bool) -> None:
    """One launch of 4 points on 4 processors of one node: plan + launch + 4 or 1 point costs."""
    plan = _ttv(8, 4)
    assert len(list(plan.launches())) == 1
    m = _model(plan_seconds=1e-3, launch_seconds=2e-4, task_seconds=1e-4, serial_tasks=serial)
    got = plan.predict(m, 4)
    assert got.seconds == pytest.approx(1e-3 + 2e-4 + (4 if serial else 1) * 1e-4, rel=1e-6)


def test_fixed_costs_fit_recovers_the_terms() -> None:
    rows = [[1, 1, 0.0011], [1, 4, 0.0014], [1, 8, 0.0018], [2, 2, 0.0015], [4, 4, 0.0023], [8, 8, 0.0039]]
    got = fit_fixed_costs([[a, b, 5e-4 + 3e-4 * a + 1e-4 * b] for a, b, _ in rows])
    assert got == pytest.approx({"plan_seconds": 5e-4, "launch_seconds": 3e-4, "task_seconds": 1e-4}, rel=1e-6)


def test_malformed_curve_is_refused() -> None:
    with pytest.raises(ModelError, match=r"expected a leaf kind .* but found 'DOT'"):
        ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e9), 1e9, 1 << 30, curves={"DOT": ((1.0, 1.0),)})
    with pytest.raises(ModelError, match=r"expected bandwidth-bound leaf kinds .* but found DOT"):
        ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e9), 1e9, 1 << 30, bandwidth_bound=frozenset({"DOT"}))


# This 2-core machine as calibrated on a quiet afternoon (python -m distal.model.calibrate), frozen here.
THIS_LIKE = {
    "flops": {"GEMM": 60e9, "TTM": 56e9, "MTTKRP": 60e9, "TTV": 7.9e9, "INNERPROD": 13e9, "GENERIC": 4.4e9},
    "curves": {"GEMM": [[65536, 14e9], [524288, 42.8e9], [4194304, 52.5e9], [33554432, 57.3e9],
                        [268435456, 60.4e9]],
               "TTM": [[131072, 23e9], [2097152, 48.4e9], [33554432, 56e9]],
               "MTTKRP": [[3145728, 46.8e9], [25165824, 60e9]]},
    "streaming": {"TTV": 25e9, "INNERPROD": 45e9}, "bandwidth": 35e9, "copy_bandwidth": 9.9e9, "plan_seconds": 5.8e-4, "launch_seconds": 1.34e-4,
    "task_seconds": 7.2e-5, "cores": 2, "memory": 24 << 30,
}


def test_this_machine_model_of_a_calibration_record() -> None:
    m = model_of(THIS_LIKE)
    assert m.serial_tasks and m.plan_seconds == 5.8e-4 and m.cores == 2
    assert m.processor.bandwidth_bound == {"TTV", "INNERPROD"}
    assert m.processor.rate("GEMM", 65536) == 14e9 and m.processor.rate("GEMM", 1e12) == 60.4e9


def test_launches_on_disjoint_processors_share_the_cores() -> None:
    """Cannon on Grid(2, 2) launches one row at a time, but the rows' launches run together: on 2 cores its 4
    processors compute as slowly as SUMMA's, whose launches span all four (auto once chose Cannon for a 2x
    predicted gain that measured runs did not show: 57 vs 62 ms at n = 1024, 300 vs 220 ms at n = 1536)."""
    m = model_of(THIS_LIKE)
    n = 1024
    got = {}
    for name in ("cannon", "summa"):
        plan = kernels.build(name, dt.Machine(dt.Grid(2, 2)), *[dt.Tensor(x, (n, n)) for x in "ABC"]).compile()
        got[name] = plan.predict(m, 4)
    point = 2.0 * (n // 2) ** 2 * (n // 2)  # one step of one point: (n/2 x n/2) by (n/2 x n/2)
    per_proc = 2 * point / m.processor.rate("GEMM", point) * 4 / 2  # two steps; 4 busy processors on 2 cores
    assert got["cannon"].compute_seconds == pytest.approx(per_proc, rel=1e-9)
    assert got["summa"].compute_seconds == pytest.approx(got["cannon"].compute_seconds, rel=0.05)
    assert got["cannon"].seconds == pytest.approx(got["summa"].seconds, rel=0.1)


@pytest.mark.parametrize("grid", [(2,), (4,), (2, 2)])
def test_auto_on_this_like_machine_uses_every_processor(grid: tuple[int, ...]) -> None:
    """With this machine's fixed costs, auto still spreads a 1024 product over every processor."""
    machine = dt.Machine(dt.Grid(*grid))
    ops = [dt.Tensor(x, (1024, 1024)) for x in "ABC"]
    plan = kernels.build("auto", machine, *ops, model=model_of(THIS_LIKE)).compile()
    assert plan.machine is not None and set(plan.machine.bind(machine.size).values()) == set(range(machine.size))
