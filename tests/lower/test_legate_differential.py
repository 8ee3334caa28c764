"""Plans run on Legate equal numpy.einsum and the reference executor.

Random statements (extents that often do not divide), random formats and
machines (1x1 to 2x3 grids, a 2x2x2 cube, a hierarchical machine) and legal
schedules with rotations and reductions over distributed loops; then
random schedules of the lead's general strategy (fuse, precompute, ...).
"""

from __future__ import annotations

import collections
import importlib.util

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import distal as dt
from distal.api.plan import Plan
from distal.lower import lower
from distal.lower.task_graph import Privilege
from tests._strategies import einsum_oracle, schedules, statements
from tests._strategies.machines import MACHINES, machine_schedules, machines_of_kind

pytestmark = pytest.mark.legate


def _on_legates_processors(legate: object, machines: tuple[dt.Machine, ...]) -> tuple[dt.Machine, ...]:
    """The machines on GPUs when Legate runs GPUs (`legate --gpus 1`) and CuPy is there, else on CPUs."""
    on_gpus = getattr(legate, "gpus", 0) and importlib.util.find_spec("cupy") is not None
    return machines_of_kind("gpu", machines) if on_gpus else machines


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_machine_schedules_on_legate(legate: object, data: st.DataObject) -> None:
    drawn = data.draw(statements(max_extent=9))
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings = data.draw(machine_schedules(out.schedule(),
                                                  machines=_on_legates_processors(legate, MACHINES)))
    drawn.reset()
    sched.evaluate(backend="reference", **bindings)
    reference = out.to_numpy()
    drawn.reset()
    plan = Plan.of(lower(sched, bindings, rotation=data.draw(st.sampled_from(["points", "boxes"]))))
    plan.run()
    got = out.to_numpy()
    _close(got, expected)
    _close(got, reference)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_general_schedules_on_legate(legate: object, data: st.DataObject) -> None:
    drawn = data.draw(statements())
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings, _ = data.draw(schedules(out.schedule()))
    drawn.reset()
    sched.evaluate(**bindings)
    _close(out.to_numpy(), expected)


SPECIAL = {"cube": dt.Machine(dt.Grid(2, 2, 2)), "hierarchical": dt.Machine(dt.Grid(2, 2), dt.Grid(2))}


@pytest.mark.parametrize("kind", sorted(SPECIAL))
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_cube_and_hierarchical_schedules_on_legate(legate: object, kind: str, data: st.DataObject) -> None:
    (machine,) = _on_legates_processors(legate, (SPECIAL[kind],))
    drawn = data.draw(statements(max_extent=7))
    stmt, out = drawn.assignment, drawn.output
    assume(len(out.schedule().loop_vars()) >= machine.grids[0].ndim)
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings = data.draw(machine_schedules(out.schedule(), machines=(machine,)))
    drawn.reset()
    plan = sched.compile(**bindings)
    plan.run()
    _close(out.to_numpy(), expected)


def test_the_random_schedules_cover_every_kind() -> None:
    # Its own seeded draws of the random tests' cases, lowered and not run (so
    # that it passes alone and in any order).
    seen: collections.Counter[str] = collections.Counter()

    @settings(max_examples=160, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data(), kind=st.sampled_from(["flat", *sorted(SPECIAL)]))
    def draw(data: st.DataObject, kind: str) -> None:
        drawn = data.draw(statements(max_extent=9 if kind == "flat" else 7))
        out = drawn.output
        machines = MACHINES if kind == "flat" else (SPECIAL[kind],)
        assume(kind == "flat" or len(out.schedule().loop_vars()) >= machines[0].grids[0].ndim)
        sched, bindings = data.draw(machine_schedules(out.schedule(), machines=machines))
        plan = lower(sched, bindings, rotation=data.draw(st.sampled_from(["points", "boxes"])))
        if kind != "flat":
            seen[kind] += plan.groups[0].distributed >= machines[0].grids[0].ndim and plan.machine == machines[0]
            return
        launches = [launch for _, launch in plan.launches()]
        seen["distributed"] += plan.groups[0].distributed > 0
        seen["rotated"] += any(launch.pinned for launch in launches) or "rotate(" in plan.statement
        seen["reduction"] += any(op.privilege is Privilege.REDUCE_ADD for launch in launches for op in launch.operands)

    draw()
    for kind in ("distributed", "rotated", "reduction", "hierarchical", "cube"):
        assert seen[kind] > 0, f"no random case was {kind}: {dict(seen)}"
