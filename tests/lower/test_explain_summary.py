"""explain() begins with at most three lines: processors used of those available (and why any are idle),
the calls the leaves run, the predicted time against memory."""

from __future__ import annotations

import numpy as np

import distal as dt
from distal.host import configured_processors


def _head(text: str) -> list[str]:
    lines = text.splitlines()
    end = next(n for n, line in enumerate(lines) if line.startswith("plan for"))
    return lines[:end]


def test_a_plan_over_every_processor_says_so_first() -> None:
    real = configured_processors("cpu")
    i, j, k, io, ii = dt.index_vars("i j k io ii")
    A, B, C = (dt.Tensor(n, (64, 64)) for n in "ABC")
    A[i, j] = B[i, k] * C[k, j]
    text = A.schedule().distribute([i], [io], [ii], dt.Machine(dt.Grid(real))).compile().explain()
    head = _head(text)
    assert len(head) == 3
    assert head[0] == f"summary: runs on {real} of {real} cpu processor(s)"
    assert head[1].startswith("  calls: A(i,j) += B(i,k) * C(k,j): GEMM [")
    assert head[2].startswith("  predicted ") and "peak memory" in head[2] and "(fits)" in head[2]


def test_the_default_schedule_says_why_processors_are_idle() -> None:
    real = configured_processors("cpu")
    i, j = dt.index_vars("i j")
    X, Y = dt.Tensor("X", (8, 8)), dt.Tensor("Y", (8, 8))
    Y[i, j] = X[j, i]
    head = _head(Y.schedule().compile().explain())
    if real > 1:
        assert head[0] == (f"summary: runs on 1 of {real} cpu processor(s); {real - 1} idle: the schedule "
                           "distributes no loop (Schedule.auto, or distribute, spreads the work)")
    assert "copied" in head[1] or "transposed" in head[1]


def test_an_eager_plan_says_it_runs_in_this_process() -> None:
    a = np.ones((3, 3))
    head = _head(dt.einsum_plan("ij,jk->ik", a, a).explain())
    assert head[0].startswith("summary: runs eagerly in this process with NumPy, no Legate tasks (auto predicted ")
    assert head[2].startswith("  as Legate tasks it would be predicted ")
