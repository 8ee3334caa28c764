"""The runtime's public hooks around launch submissions and tasks (`distal.runtime.observed`)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt

pytestmark = pytest.mark.legate


def _plan() -> tuple[dt.Plan, dt.Tensor]:
    i, io, ii = dt.index_vars("i io ii")
    m = dt.Machine(dt.Grid(2))
    a = dt.Tensor("a", (8,), dt.Format("x -> x", m))
    b = dt.Tensor.from_array("b", np.arange(8.0), dt.Format("x -> x", m))
    a[i] = b[i] * 2
    return a.schedule().distribute([i], [io], [ii], m).compile(), a


def _counter(counts: dict[str, int], kind: str, lock: threading.Lock) -> Callable[[Callable[[], None]], None]:
    def watch(work: Callable[[], None]) -> None:
        with lock:
            counts[kind] += 1
        work()

    return watch


def test_observers_see_every_submission_and_task_and_the_result_is_unchanged() -> None:
    plan, a = _plan()
    counts, lock = {"submit": 0, "task": 0}, threading.Lock()
    with rt.observed(submit=_counter(counts, "submit", lock), task=_counter(counts, "task", lock)):
        plan.run()
        rt.fence()
    assert counts["submit"] >= 1 and counts["task"] >= counts["submit"]
    np.testing.assert_array_equal(a.to_numpy(), np.arange(8.0) * 2)
    seen = dict(counts)
    plan.run()
    rt.fence()
    assert counts == seen  # gone after the block


def test_blocks_nest_and_restore_the_outer_observers() -> None:
    plan, _ = _plan()
    outer, inner, lock = {"task": 0}, {"task": 0}, threading.Lock()
    with rt.observed(task=_counter(outer, "task", lock)):
        with rt.observed(task=_counter(inner, "task", lock)):
            plan.run()
            rt.fence()
        assert outer["task"] == 0 and inner["task"] >= 1
        plan.run()
        rt.fence()
        assert outer["task"] >= 1
