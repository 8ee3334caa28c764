"""Leaves are registered objects: adding one is one `register` call, task bodies run it by its pattern."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import distal as dt
import distal.leaf as leaf_module
from distal.errors import ScheduleError
from distal.leaf import GEMM, Leaf, register
from distal.lower.device_standin import to_device
from distal.lower.numpy_exec import run_numpy
from distal.lower.steps import Broadcast
from distal.notation.ast import BinaryOp

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def leaves(monkeypatch: pytest.MonkeyPatch) -> dict[str, Leaf]:
    """The registry, restored after the test (a leaf registered here does not leak into other tests)."""
    saved = dict(leaf_module.LEAVES)
    monkeypatch.setattr(leaf_module, "LEAVES", saved)
    return saved


def _outer_statement() -> tuple[dt.Schedule, dt.Tensor, np.ndarray]:
    i, j, io, ii = dt.index_vars("i j io ii")
    rng = np.random.default_rng(1)
    A = dt.Tensor("A", (6, 4))
    B = dt.Tensor.from_array("B", rng.standard_normal(6))
    C = dt.Tensor.from_array("C", rng.standard_normal(4))
    A[i, j] = B[i] * C[j]
    expected = np.multiply.outer(B.to_numpy(), C.to_numpy())
    machine = dt.Machine(dt.Grid(2))
    sched = A.schedule().distribute([i], [io], [ii], machine).communicate([A, B, C], io).substitute([ii, j], "OUTER")
    return sched, A, expected


@pytest.mark.parametrize("device", [False, True])
def test_a_registered_leaf_is_one_entry_and_task_bodies_run_it(leaves: dict[str, Leaf], device: bool) -> None:
    seen: list[str] = []

    def outer(pattern: str, xp: Any, b: Any, c: Any) -> Any:
        seen.append(pattern)
        return b.reshape(-1, 1) * c.reshape(1, -1)

    OUTER = register(Leaf("OUTER", "a,b->ab", outer, "outer product"))
    assert leaf_module.get("outer") is OUTER
    sched, A, expected = _outer_statement()
    plan = sched.compile()
    run_numpy(plan, device=to_device if device else None)
    assert seen == ["a,b->ab"] * 2  # one block per launch point, the leaf's own kernel
    np.testing.assert_allclose(A.to_numpy(), expected, rtol=1e-12)


def test_register_refuses_a_name_twice(leaves: dict[str, Leaf]) -> None:
    with pytest.raises(ValueError, match="GEMM"):
        register(Leaf("GEMM", "ac,cb->ab"))
    assert leaf_module.get("gemm") is GEMM


def test_a_wrong_leaf_name_lists_the_registered_ones(leaves: dict[str, Leaf]) -> None:
    register(Leaf("OUTER", "a,b->ab"))
    with pytest.raises(ScheduleError, match=r"GEMM, .*OUTER\), but found 'nope'"):
        leaf_module.get("nope")


def test_no_leaf_is_recognised_by_its_name_string() -> None:
    sources = [*(ROOT / "distal").rglob("*.py"), *(ROOT / "runtime").rglob("*.py")]
    found = [str(p) for p in sources if re.search(r"leaf\.name\s*(==|!=|in\b)", p.read_text())]
    assert found == []


class _Pow(BinaryOp):
    """An operator no pass knows."""


def test_the_broadcast_walker_refuses_an_unknown_operator() -> None:
    (i,) = dt.index_vars("i")
    b = dt.Tensor("b", (3,))
    e = _Pow(b[i], b[i])
    view = lambda acc: (np.ones(3), "a")  # noqa: E731
    with pytest.raises(TypeError, match="_Pow"):
        Broadcast(np, view, {i: "a"}, {})(e)
