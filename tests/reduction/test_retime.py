"""A machine's reduction plan re-timed on a time model's links (issue 34 item 5)."""

from __future__ import annotations

import pytest

import distal as dt
from distal.errors import ReductionError
from distal.machine.links import Link
from distal.reduction.machines import machine_plan, retimed_seconds


def test_retimed_on_the_plans_own_links_is_the_plans_time() -> None:
    plan = machine_plan(dt.Machine(dt.Grid(4), dt.Grid(4)), nbytes=2**20)
    links = tuple(lv.link for lv in plan.layout.system.levels)
    assert retimed_seconds(plan, 2**20, links) == pytest.approx((plan.seconds, plan.allreduce_seconds))


def test_retimed_on_faster_links_is_faster_and_keeps_the_program() -> None:
    plan = machine_plan(dt.Machine(dt.Grid(16), dt.Grid(4)), nbytes=8.0)
    assert plan.program.shape == "ReduceScatter-AllReduce-AllGather"
    lassen = (Link("edr", 18e9, 1.5e-6), Link("xbus", 64e9, 1e-6))
    best, single = retimed_seconds(plan, 8.0, lassen)
    assert best < plan.seconds and single < plan.allreduce_seconds
    # ring: 3 hops in the node, 2 x 15 between the nodes, 3 in the node again
    assert best == pytest.approx(3 * 1e-6 + 30 * 1.5e-6 + 3 * 1e-6, rel=1e-3)
    with pytest.raises(ReductionError, match="expected 2 interconnects"):
        retimed_seconds(plan, 8.0, lassen[:1])
