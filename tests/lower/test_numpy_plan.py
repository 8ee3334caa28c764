"""The NumPy executor of plans equals numpy.einsum and the reference executor (no Legate)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._strategies import einsum_oracle, schedules, statements
from tests._strategies.machines import machine_schedules


def _close(got: np.ndarray, expected: np.ndarray) -> None:
    scale = max(1.0, float(np.abs(expected).max(initial=0)))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_schedules_equal_einsum(data: st.DataObject) -> None:
    drawn = data.draw(statements())
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings, _ = data.draw(schedules(out.schedule()))
    drawn.reset()
    sched.compile(**bindings).run(backend="numpy")
    _close(out.to_numpy(), expected)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_machine_schedules_equal_einsum_and_reference(data: st.DataObject) -> None:
    drawn = data.draw(statements(max_extent=9))
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings = data.draw(machine_schedules(out.schedule()))
    drawn.reset()
    sched.evaluate(backend="reference", **bindings)
    reference = out.to_numpy()
    drawn.reset()
    plan = sched.compile(**bindings)
    plan.run(backend="numpy")
    _close(out.to_numpy(), expected)
    _close(out.to_numpy(), reference)
    data = plan.stats()  # the cost model holds for any format, machine and schedule
    assert data["launch_count"] == plan.launch_count()
    assert all(b >= 0 for b in data["received_bytes"].values())
    assert "communication" in plan.explain()
