"""An eager run checks its output fits in host memory before it allocates (OutOfMemory, not NumPy's MemoryError)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import distal as dt
import distal.host
from distal.api.plan import Plan
from distal.lower.eager import run_eager


def _eager_outer(n: int) -> tuple[Plan, dt.Tensor]:
    i, j = dt.index_vars("i j")
    a = dt.Tensor.from_array("a", np.ones(n))
    b = dt.Tensor.from_array("b", np.ones(n))
    R = dt.Tensor("R", (n, n))
    R[i, j] = a[i] * b[j]
    return Plan.of(replace(R.schedule(), eager="a test").compile()), R


def test_an_eager_output_that_does_not_fit_is_refused_before_it_is_allocated(
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan, R = _eager_outer(64)
    monkeypatch.setattr(distal.host, "available_bytes", lambda: 64 * 64 * 8 - 1)
    with pytest.raises(dt.OutOfMemory, match=r"expected the output R of an eager run \(\[64, 64\] float64\) to fit "
                       r"in the host's available memory of .*nothing was allocated"):
        run_eager(plan)
    assert R.storage is None  # nothing bound: the refusal left no half-made result


def test_an_eager_output_that_fits_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    plan, R = _eager_outer(64)
    monkeypatch.setattr(distal.host, "available_bytes", lambda: 64 * 64 * 8)
    run_eager(plan)
    np.testing.assert_array_equal(R.to_numpy(), np.ones((64, 64)))
