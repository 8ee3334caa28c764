"""Synthesized reduction programs executed on Legate equal the single-step sum."""

from __future__ import annotations

import doctest
from collections.abc import Sequence

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.errors import ReductionError
from distal.reduction import (
    NIC,
    SHARED_MEMORY,
    Link,
    ReductionPlan,
    execute_lowered,
    plan_reduction,
    rank,
)
from distal.reduction import machines as explain_module
from distal.reduction.machines import describe_plan, machine_plan
from distal.runtime import _reduce
from distal.runtime._reduce import ReduceRecord, reduce_arrays, reduce_on_machine, reduce_partials

pytestmark = pytest.mark.legate

M22 = dt.Machine(dt.Grid(2), dt.Grid(2))
M24 = dt.Machine(dt.Grid(2), dt.Grid(4))
M222 = dt.Machine(dt.Grid(2), dt.Grid(2), dt.Grid(2))
M2x2_2 = dt.Machine(dt.Grid(2, 2), dt.Grid(2))
NODES24 = [("node", 2, NIC), ("cpu", 4, SHARED_MEMORY)]

SHAPES = [(7, 3), (), (3,), (16,)]


@pytest.fixture(scope="module", autouse=True)
def legate() -> rt.MachineInfo:
    """Legate, started once per process with distal's defaults."""
    return rt.ensure_started()


def _values(n: int, shape: tuple[int, ...], dtype: str, seed: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    if dtype == "int64":
        return {d: rng.integers(-10**12, 10**12, size=shape, dtype=np.int64) for d in range(n)}
    return {d: rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4) for d in range(n)}


def _check_groups(out: dict[int, np.ndarray], values: dict[int, np.ndarray],
                  groups: Sequence[Sequence[int]], dtype: str) -> None:
    for g in groups:
        expected = np.sum([values[d] for d in g], axis=0)
        for d in g:
            got = out[d]
            assert got.shape == expected.shape and got.dtype == expected.dtype
            if dtype == "int64":
                assert np.array_equal(got, expected), (d, got, expected)
            else:
                scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
                np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12 * scale)


# -- whole machines, one group --------------------------------------------------------------


@pytest.mark.parametrize("machine", [M22, M24, M222], ids=["2x2", "2x4", "2x2x2"])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_machine_sum_equals_single_step(machine: dt.Machine, dtype: str, shape: tuple[int, ...]) -> None:
    values = _values(machine.size, shape, dtype, seed=machine.size + len(shape))
    trace: list[ReduceRecord] = []
    out, plan = reduce_arrays(machine, values, trace=trace)
    assert len(plan.program) > 1, plan.program
    assert len(trace) == len(plan.program)
    assert sorted(out) == list(range(machine.size))
    _check_groups(out, values, [range(machine.size)], dtype)


# -- explicit device groups -------------------------------------------------------------------

GROUPS = [
    (M24, [[0, 1, 4, 5], [2, 3, 6, 7]]),          # two cpus of each node, two groups
    (M24, [[0, 4], [1, 5], [2, 6], [3, 7]]),      # one cpu per node: one flat level
    (M2x2_2, [[0, 1, 2, 3, 4, 5, 6, 7]]),         # 4 nodes of 2
    (M2x2_2, [[0, 1, 4, 5], [2, 3, 6, 7]]),       # Johnson-like: groups of 2 nodes x 2 cpus
    (M222, [[0, 2, 4, 6], [1, 3, 5, 7]]),         # levels 0 and 1, level 2 is the replica
    (M222, [[0, 1], [2, 3], [4, 5], [6, 7]]),     # inside one node: the single AllReduce
]


@pytest.mark.parametrize(("machine", "groups"), GROUPS, ids=[str(g) for _, g in GROUPS])
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_groups_sum_separately(machine: dt.Machine, groups: list[list[int]], dtype: str) -> None:
    values = _values(machine.size, (9, 2), dtype, seed=len(groups))
    out, _ = reduce_arrays(machine, values, groups=groups)
    assert sorted(out) == sorted(d for g in groups for d in g)
    _check_groups(out, values, groups, dtype)


def test_devices_outside_groups_pass_through() -> None:
    values = _values(8, (5,), "int64", seed=3)
    plan = machine_plan(M24, [[0, 1, 4, 5]], nbytes=40.0)
    partials = rt.from_numpy(np.stack([values[d] for d in range(8)]))
    result = rt.to_numpy(reduce_partials(plan, partials))
    total = values[0] + values[1] + values[4] + values[5]
    for d in range(8):
        assert np.array_equal(result[d], total if d in (0, 1, 4, 5) else values[d])
    assert np.array_equal(rt.to_numpy(partials), np.stack([values[d] for d in range(8)]))


@pytest.mark.parametrize(("shape", "launches"), [((16, 2), [2, 4, 2]), ((7, 3), [8, 4, 8]), ((), [2, 1, 2])],
                         ids=["index-launches", "point-launches", "scalar"])
def test_regular_groups_use_index_launches(shape: tuple[int, ...], launches: list[int]) -> None:
    values = _values(8, shape, "int64", seed=17)
    trace: list[ReduceRecord] = []
    out, plan = reduce_arrays(M24, values, trace=trace)
    assert plan.program.shape == "ReduceScatter-AllReduce-AllGather"
    assert [r.launches for r in trace] == launches
    _check_groups(out, values, [range(8)], "int64")


# -- every synthesized program, not just the best ---------------------------------------------


@pytest.mark.parametrize(("levels", "groups"), [
    (NODES24, [[0, 1, 4, 5], [2, 3, 6, 7]]),
    ([("node", 2, NIC), ("cpu", 2, SHARED_MEMORY)], [[0, 1, 2, 3]]),
], ids=["2x4-two-groups", "2x2"])
@pytest.mark.parametrize("rows", [6, 8], ids=["uneven-chunks", "even-chunks"])
def test_every_program_matches_oracle(levels: list[tuple[str, int, Link]],
                                      groups: list[list[int]], rows: int) -> None:
    plan = plan_reduction(levels, groups, nbytes=64.0)
    system = plan.layout.system
    values = _values(system.size, (rows, 2), "int64", seed=11)
    fvalues = _values(system.size, (rows, 2), "float64", seed=12)
    programs = rank(plan.layout, 64.0)
    assert len(programs) == 93
    ints = rt.from_numpy(np.stack([values[d] for d in range(system.size)]))
    floats = rt.from_numpy(np.stack([fvalues[d] for d in range(system.size)]))
    results = []
    for ranked in programs:
        one = ReductionPlan(ranked, plan.allreduce, plan.layout)
        results.append((ranked, reduce_partials(one, ints), reduce_partials(one, floats)))
    for ranked, int_store, float_store in results:
        got = rt.to_numpy(int_store)
        oracle = execute_lowered(ranked.lowered, values)
        for d in plan.layout.devices:
            assert np.array_equal(got[d], oracle[d]), ranked.program
        _check_groups({d: got[d] for d in plan.layout.devices}, values, groups, "int64")
        fgot = rt.to_numpy(float_store)
        _check_groups({d: fgot[d] for d in plan.layout.devices}, fvalues, groups, "float64")


# -- which program is chosen ------------------------------------------------------------------


@pytest.mark.parametrize("machine", [M22, M24, M222], ids=["2x2", "2x4", "2x2x2"])
@pytest.mark.parametrize("nbytes", [8.0, 8e6, 2.0**31])
def test_cross_level_reduction_picks_a_multi_step_program(machine: dt.Machine, nbytes: float) -> None:
    plan = machine_plan(machine, nbytes=nbytes)
    assert len(plan.program) > 1
    assert plan.seconds < plan.allreduce_seconds
    assert {str(c) for c, _ in plan.steps} >= {"ReduceScatter", "AllGather"}


def test_reduction_inside_a_node_keeps_the_single_allreduce() -> None:
    plan = machine_plan(M24, [[0, 1, 2, 3], [4, 5, 6, 7]], nbytes=2.0**31)
    assert str(plan.program) == "(root, InsideGroup, AllReduce)"
    assert plan.speedup == 1.0


# -- the lowering's entry point ---------------------------------------------------------------


def test_reduce_on_machine_with_a_store_and_root_rows() -> None:
    groups = [[0, 1, 4, 5], [2, 3, 6, 7]]
    tile = (4, 3)
    values = _values(M2x2_2.size, tile, "float64", seed=5)
    partials = rt.from_numpy(np.stack([values[d] for d in range(M2x2_2.size)]))
    plan = machine_plan(M2x2_2, groups, nbytes=8.0 * 12)
    trace: list[ReduceRecord] = []
    result = rt.to_numpy(reduce_on_machine(M2x2_2, partials, groups, plan, trace))
    assert result.shape == (8, *tile)
    assert len(trace) == len(plan.program) > 1
    for g in groups:
        expected = np.sum([values[d] for d in g], axis=0)
        np.testing.assert_allclose(result[g[0]], expected, rtol=1e-12, atol=1e-12)


def test_reduce_on_machine_plans_by_itself_for_a_scalar() -> None:
    values = np.arange(8, dtype=np.int64).reshape(8, 1) * 3
    result = rt.to_numpy(reduce_on_machine(M222, rt.from_numpy(values)))
    assert result[:, 0].tolist() == [84] * 8


def test_groups_of_one_device_copy_the_partials() -> None:
    values = _values(4, (3,), "int64", seed=9)
    out, plan = reduce_arrays(M22, values, groups=[[0], [1], [2], [3]])
    assert len(plan.program) == 0
    for d in range(4):
        assert np.array_equal(out[d], values[d])
    assert "nothing to reduce" in describe_plan(plan)


def test_empty_values_are_copied() -> None:
    out, _ = reduce_arrays(M22, {d: np.zeros((0, 2)) for d in range(4)})
    assert all(a.shape == (0, 2) for a in out.values())


# -- refused inputs ---------------------------------------------------------------------------


def test_refuses_partials_of_the_wrong_device_count() -> None:
    plan = machine_plan(M22, nbytes=8.0)
    with pytest.raises(ReductionError, match=r"expected partials of shape \(4, \.\.\.\).*\(3, 2\)"):
        reduce_partials(plan, rt.from_numpy(np.zeros((3, 2))))


def test_refuses_bad_processors() -> None:
    plan = machine_plan(M22, nbytes=8.0)
    with pytest.raises(ReductionError, match="expected one CPU processor"):
        reduce_partials(plan, rt.from_numpy(np.zeros((4, 2))), processors=[0, 0, 0])


def test_refuses_a_plan_for_another_machine() -> None:
    plan = machine_plan(M22, nbytes=8.0)
    with pytest.raises(ReductionError, match="expected a plan for the 8 processors"):
        reduce_on_machine(M24, rt.from_numpy(np.zeros((8, 2))), plan=plan)


def test_refuses_mixed_shapes() -> None:
    with pytest.raises(ReductionError, match="expected arrays of one shape and dtype"):
        reduce_arrays(M22, {0: np.zeros(2), 1: np.zeros(3)})


# -- descriptions and examples ----------------------------------------------------------------


def test_describe_plan_names_program_and_both_times() -> None:
    plan = machine_plan(M24, nbytes=2.0**23)
    text = describe_plan(plan, 2.0**23, "ring")
    assert f"program: {plan.program}" in text
    assert "single AllReduce" in text and "x faster" in text
    assert "8 MiB per device" in text
    assert text.count("over [[") == len(plan.program)
    single = machine_plan(M24, [[0, 1, 2, 3], [4, 5, 6, 7]], nbytes=2.0**31)
    assert "(the single AllReduce)" in describe_plan(single)


@pytest.mark.parametrize("module", [_reduce, explain_module], ids=["runtime._reduce", "reduction.explain"])
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)  # type: ignore[arg-type]
    assert result.attempted > 0 and result.failed == 0



def test_flat_machine_and_gpu_machine_plans() -> None:
    values = _values(4, (6,), "int64", seed=21)
    out, plan = reduce_arrays(dt.Machine(dt.Grid(2, 2)), values)
    assert str(plan.layout.system) == "[(l0, 4)]"
    _check_groups(out, values, [range(4)], "int64")
    gpu = machine_plan(dt.Machine(dt.Grid(2), dt.Grid(4, kind="gpu")), nbytes=2.0**31)
    assert "nvswitch" in describe_plan(gpu)
