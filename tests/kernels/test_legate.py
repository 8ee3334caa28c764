"""The algorithm library on Legate: results equal numpy, communication equals theory."""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import kernels

pytestmark = pytest.mark.legate

GRIDS_2D = [(2, 2), (2, 3), (3, 2)]


def operands(m: int, n: int, k: int, seed: int = 0) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    rng = np.random.default_rng(seed)
    return (
        dt.Tensor("A", (m, n)),
        dt.Tensor.from_array("B", rng.standard_normal((m, k))),
        dt.Tensor.from_array("C", rng.standard_normal((k, n))),
    )


def run(sched: dt.Schedule, A: dt.Tensor, B: dt.Tensor, C: dt.Tensor) -> None:
    sched.evaluate()
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["summa", "cannon", "pumma"])
@pytest.mark.parametrize("grid", GRIDS_2D)
def test_2d_algorithms_on_legate(name: str, grid: tuple[int, int]) -> None:
    A, B, C = operands(25, 19, 23)
    run(kernels.build(name, dt.Machine(dt.Grid(*grid)), A, B, C), A, B, C)


@pytest.mark.parametrize("name", ["johnson", "solomonik", "cosma"])
def test_3d_algorithms_on_legate(name: str) -> None:
    A, B, C = operands(17, 14, 15)
    run(kernels.build(name, dt.Machine(dt.Grid(2, 2, 2)), A, B, C), A, B, C)


@pytest.mark.parametrize("name", kernels.names()[:6])
@pytest.mark.parametrize("procs", [3, 5, 6])
def test_any_processor_count_on_legate(name: str, procs: int) -> None:
    A, B, C = operands(13, 11, 12)
    run(kernels.build(name, kernels.machine(name, procs, (13, 11, 12)), A, B, C), A, B, C)


def test_higher_order_on_legate() -> None:
    rng = np.random.default_rng(5)
    b = rng.standard_normal((9, 7, 6))
    B = dt.Tensor.from_array("B", b)
    A = dt.Tensor("A", (9, 7))
    c = dt.Tensor.from_array("c", rng.standard_normal(6))
    kernels.build("ttv", kernels.machine("ttv", 4), A, B, c).evaluate()
    np.testing.assert_allclose(A.to_numpy(), np.einsum("ijk,k->ij", b, c.to_numpy()), rtol=1e-10)
    a = dt.Tensor("a", ())
    C = dt.Tensor.from_array("C", rng.standard_normal((9, 7, 6)))
    kernels.build("innerprod", kernels.machine("innerprod", 3), a, B, C).evaluate()
    np.testing.assert_allclose(a.to_numpy(), np.sum(b * C.to_numpy()), rtol=1e-10)
    A3 = dt.Tensor("A", (9, 7, 5))
    M = dt.Tensor.from_array("M", rng.standard_normal((6, 5)))
    kernels.build("ttm", kernels.machine("ttm", 6), A3, B, M).evaluate()
    np.testing.assert_allclose(A3.to_numpy(), np.einsum("ijk,kl->ijl", b, M.to_numpy()), rtol=1e-10)
    A2 = dt.Tensor("A", (9, 5))
    Cm = dt.Tensor.from_array("Cm", rng.standard_normal((7, 5)))
    D = dt.Tensor.from_array("D", rng.standard_normal((6, 5)))
    kernels.build("mttkrp", kernels.machine("mttkrp", 8), A2, B, Cm, D).evaluate()
    np.testing.assert_allclose(A2.to_numpy(), np.einsum("ijk,jl,kl->il", b, Cm.to_numpy(), D.to_numpy()), rtol=1e-10)


def test_auto_picks_the_least_predicted_time_and_runs() -> None:
    A, B, C = operands(24, 24, 24)
    sched = kernels.build("auto", dt.Machine(dt.Grid(8)), A, B, C)
    chosen = [n for n in sched.notes if n.startswith("auto: chose")]
    considered = [n for n in sched.notes if n.startswith("auto: considered")]
    assert len(chosen) == 1 and len(considered) >= 6
    # the fastest is listed first
    assert chosen[0].removeprefix("auto: chose ").rsplit(" (", 1)[0] == considered[0].removeprefix("auto: considered ")
    run(sched, A, B, C)


# -- communication accounting against the analytic formulas of docs/algorithms.md --

F64 = 8


def received(sched: dt.Schedule) -> dict[str, int]:
    stats = sched.compile().stats()
    return dict(stats["received_bytes"])


@pytest.mark.parametrize("name", ["summa", "cannon", "pumma"])
@pytest.mark.parametrize("g,n", [(2, 8), (3, 12), (4, 16)])
def test_2d_algorithms_receive_what_theory_says(name: str, g: int, n: int) -> None:
    A, B, C = (dt.Tensor(x, (n, n)) for x in "ABC")
    got = received(kernels.build(name, dt.Machine(dt.Grid(g, g)), A, B, C))
    # every processor fetches the g-1 tiles of B and of C it does not own
    assert set(got.values()) == {2 * (g - 1) * (n // g) ** 2 * F64}
    assert len(got) == g * g


@pytest.mark.parametrize("c,n", [(2, 8), (3, 9)])
def test_johnson_receives_what_theory_says(c: int, n: int) -> None:
    A, B, C = (dt.Tensor(x, (n, n)) for x in "ABC")
    sched = kernels.build("johnson", dt.Machine(dt.Grid(c, c, c)), A, B, C)
    stats = sched.compile().stats()
    tile = (n // c) ** 2 * F64
    for x in range(c):
        for y in range(c):
            for z in range(c):
                key = f"({x},{y},{z})"
                # B(x,z) lives on y = 0, C(z,y) on x = 0, A(x,y) on z = 0 (reduced into)
                assert stats["received_bytes"].get(key, 0) == tile * ((y != 0) + (x != 0))
                assert stats["reduced_bytes"].get(key, 0) == tile * (z != 0)
