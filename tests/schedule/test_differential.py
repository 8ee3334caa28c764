"""Any legal schedule equals numpy.einsum: random statements, extents, schedules."""

from __future__ import annotations

import collections

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._strategies import COMMANDS, einsum_oracle, schedules, statements


@settings(max_examples=220, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_reference_executor_equals_einsum(data: st.DataObject) -> None:
    drawn = data.draw(statements())
    stmt, out = drawn.assignment, drawn.output
    expected = einsum_oracle(stmt, drawn.inputs, drawn.output_init)
    sched, bindings, _ = data.draw(schedules(out.schedule()))
    drawn.reset()
    sched.evaluate(backend="reference", **bindings)
    got = out.to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(expected).max(initial=0)))


def test_every_command_is_exercised_by_the_generator() -> None:
    # Its own draws (no counter filled by another test, so it passes alone and
    # in any order): with a fixed seed, 220 drawn schedules apply every command.
    applied: collections.Counter[str] = collections.Counter()

    @settings(max_examples=220, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(data=st.data())
    def draw(data: st.DataObject) -> None:
        drawn = data.draw(statements())
        out = drawn.output
        applied.update(data.draw(schedules(out.schedule()))[2])

    draw()
    missing = [c for c in COMMANDS if applied[c] == 0]
    assert not missing, f"commands never applied: {missing} (applied: {dict(applied)})"
