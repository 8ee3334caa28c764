"""plan_reduction: the entry point for distal's lowering."""

from __future__ import annotations

import numpy as np
import pytest

from distal.errors import ReductionError
from distal.machine.grid import Grid, Machine
from distal.reduction import (
    NIC,
    NVSWITCH_A100,
    SHARED_MEMORY,
    CollectiveKind,
    a100_system,
    execute_lowered,
    plan_reduction,
)


def test_all_devices_of_a_two_node_machine() -> None:
    plan = plan_reduction([("node", 2, NIC), ("gpu", 4, NVSWITCH_A100)], range(8))
    assert plan.program.shape == "ReduceScatter-AllReduce-AllGather"
    assert plan.steps[0] == (CollectiveKind.REDUCE_SCATTER, ((0, 1, 2, 3), (4, 5, 6, 7)))
    assert plan.seconds < plan.allreduce_seconds and plan.speedup > 1.5


def test_groups_inside_one_node_use_one_allreduce() -> None:
    plan = plan_reduction(a100_system(2), [[0, 1, 2, 3], [16, 17, 18, 19]])
    assert str(plan.program) == "(root, InsideGroup, AllReduce)"
    assert plan.steps == ((CollectiveKind.ALL_REDUCE, ((0, 1, 2, 3), (16, 17, 18, 19))),)
    assert plan.speedup == 1.0


def test_distal_machine_and_exact_sums() -> None:
    m = Machine(Grid(2, 2), Grid(4))
    groups = [[n * 4 + g for n in range(4)] for g in range(4)]  # reduce over the nodes
    plan = plan_reduction(m, groups)
    assert plan.seconds <= plan.allreduce_seconds
    values = {d: np.full(10, d, dtype=np.int64) for d in range(16)}
    out = execute_lowered(plan.best.lowered, values)
    for g in groups:
        for d in g:
            assert out[d].tolist() == [sum(g)] * 10


def test_single_device_needs_no_step() -> None:
    plan = plan_reduction([("node", 2, NIC), ("core", 8, SHARED_MEMORY)], [np.int64(3)])
    assert plan.steps == () and plan.seconds == 0.0


def test_errors() -> None:
    with pytest.raises(ReductionError) as info:
        plan_reduction([("node", 2)], [0])  # type: ignore[list-item]
    assert info.value.message == "expected levels as (name, cardinality, Link), but found ('node', 2)"
    with pytest.raises(ReductionError) as info:
        plan_reduction(a100_system(2), [0, [1, 2]])  # type: ignore[list-item]
    assert info.value.message == "expected one group of device ids or a list of groups, but found [0, [1, 2]]"
    with pytest.raises(ReductionError) as info:
        plan_reduction(a100_system(2), [0.5])  # type: ignore[list-item]
    assert info.value.message == "expected device ids or groups of them, but found 0.5"
