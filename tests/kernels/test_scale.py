"""The library chooses as DISTAL did at scale (issue 34 item 5).

Solomonik's c and COSMA's grid fit a memory bound per processor (`kernels.machine(name, p, shape,
memory=bytes)`), where the choice without the bound does not; innerprod on a two-level machine reduces
within the node first, then between nodes (paper 7.2.2), by the reduction synthesizer's program.
"""

from __future__ import annotations

import numpy as np
import pytest

import distal as dt
from distal import kernels
from distal.kernels import _machines

GIB = 2**30


def _peak(name: str, machine: dt.Machine, m: int, n: int, k: int) -> int:
    """The most bytes a processor of the library's plan holds (the plan's analysis)."""
    A, B, C = dt.Tensor("A", (m, n)), dt.Tensor("B", (m, k)), dt.Tensor("C", (k, n))
    plan = kernels.build(name, machine, A, B, C).compile()
    return int(max(plan.analysis().peak.values()))


def test_solomonik_c_fits_the_memory_bound_as_distal_chose_it_on_lassen() -> None:
    # 128 Lassen nodes, 512 V100s of 15 GiB, n = 20000 sqrt(128): the most layers (c = 8) need 25.3 GiB
    shape, memory = (226304,) * 3, 15 * GIB
    assert _machines.solomonik_grid(512) == (8, 8, 8)
    assert _machines.solomonik_bytes((8, 8, 8), shape, 512) > memory
    machine = kernels.machine("solomonik", 512, shape, memory=memory)
    assert machine.shape == (16, 16, 2)
    assert _machines.solomonik_bytes(machine.shape, shape, 512) <= memory
    # where memory allows, the most layers still win (2, 8, 32 nodes of the paper's runs: c = 2)
    assert kernels.machine("solomonik", 128, (113152,) * 3, memory=memory).shape == (8, 8, 2)
    assert kernels.machine("solomonik", 512).shape == (8, 8, 8)  # no bound given: today's choice


def test_solomonik_c_fits_the_plans_own_peak() -> None:
    n, procs = 64, 64
    assert kernels.machine("solomonik", procs).shape == (4, 4, 4)
    memory = 4096
    over = _peak("solomonik", kernels.machine("solomonik", procs), n, n, n)
    assert over == _machines.solomonik_bytes((4, 4, 4), (n, n, n), procs) > memory
    machine = kernels.machine("solomonik", procs, (n, n, n), memory=memory)
    assert machine.shape == (8, 8, 1)
    assert _peak("solomonik", machine, n, n, n) <= memory


def test_cosma_grid_fits_the_memory_bound() -> None:
    shape = (64, 64, 64)
    unbounded = _machines.cosma_grid(8, shape)
    assert unbounded == (2, 2, 2)
    memory = 28672
    over = _peak("cosma", kernels.machine("cosma", 8, shape), *shape)
    assert over == _machines.cosma_bytes(unbounded, shape) > memory
    machine = kernels.machine("cosma", 8, shape, memory=memory)
    assert machine.shape == (2, 4, 1)
    assert _peak("cosma", machine, *shape) == _machines.cosma_bytes(machine.shape, shape) <= memory
    assert kernels.machine("cosma", 8, shape, memory=2**20).shape == unbounded  # room enough: today's grid
    # nothing fits: the grid that needs the least memory
    assert _machines.cosma_grid(8, shape, memory=1) == (2, 4, 1)


def test_memory_without_a_shape_keeps_todays_choice() -> None:
    assert kernels.machine("cosma", 8, memory=1).shape == (2, 2, 2)
    assert kernels.machine("solomonik", 512, memory=1).shape == (8, 8, 8)
    with pytest.raises(dt.MachineError, match="expected memory= as a positive number of bytes"):
        kernels.machine("solomonik", 8, (64, 64, 64), memory=-1)
    assert kernels.machine("johnson", 8) == dt.Machine(dt.Grid(2, 2, 2))  # the pinned spelling


def test_innerprod_on_a_two_level_machine_reduces_within_the_node_first() -> None:
    machine = kernels.machine("innerprod", 8, nodes=2)
    assert machine == dt.Machine(dt.Grid(2), dt.Grid(4))
    rng = np.random.default_rng(1)
    n = 13  # not a multiple of the processors: tiles are clipped at the edge
    a = dt.Tensor("a", ())
    B = dt.Tensor.from_array("B", rng.standard_normal((n, n, n)))
    C = dt.Tensor.from_array("C", rng.standard_normal((n, n, n)))
    sched = kernels.build("innerprod", machine, a, B, C)
    plan = sched.compile()
    assert str(B.format) == "[xyz -> x, xyz -> y]"  # i over the nodes, j over each node's processors
    assert plan.launch_count() == 1
    red = plan.reduction
    assert red is not None and red.synthesized
    assert red.groups == (tuple(range(8)),)
    # the first step runs inside each node, the next between the nodes
    first, second = red.plan.best.lowered.steps[:2]
    assert sorted(map(sorted, first.groups)) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert sorted(map(sorted, second.groups)) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    text = plan.explain()
    assert "reduction into a: synthesized" in text and "ReduceScatter-AllReduce-AllGather" in text
    sched.evaluate(backend="reference")
    np.testing.assert_allclose(a.to_numpy(), np.sum(B.to_numpy() * C.to_numpy()), rtol=1e-10)


def test_innerprods_synthesized_reduction_is_timed_on_the_models_links() -> None:
    """On Lassen's model (a node of 4 GPUs, its EDR port between nodes) the program the lowering ranked on the
    default links (a 10 us NIC) is re-timed on the model's own links."""
    from distal import model
    from distal.model.predict import predict
    from distal.reduction.machines import retimed_seconds

    machine = kernels.machine("innerprod", 8, nodes=2)
    a, B, C = dt.Tensor("a", ()), dt.Tensor("B", (16, 16, 16)), dt.Tensor("C", (16, 16, 16))
    plan = kernels.build("innerprod", machine, a, B, C).compile()
    red = plan.reduction
    assert red is not None and red.synthesized and red.plan is not None
    lassen = model.lassen_gpu().with_(per_node=4)
    retimed = retimed_seconds(red.plan, red.nbytes, (lassen.inter, lassen.intra))[0]
    assert retimed != red.seconds
    got = predict(plan, lassen, 8)
    assert got.step_times[-1]["reduce"] == pytest.approx(retimed)


def test_innerprod_keeps_its_one_level_machine() -> None:
    assert kernels.machine("innerprod", 8) == dt.Machine(dt.Grid(8))
    with pytest.raises(dt.MachineError, match="expected nodes= a positive divisor of the 8 processors"):
        kernels.machine("innerprod", 8, nodes=3)


@pytest.mark.legate
def test_innerprod_on_a_two_level_machine_runs_on_legate() -> None:
    rng = np.random.default_rng(2)
    n = 13
    a = dt.Tensor("a", ())
    B = dt.Tensor.from_array("B", rng.standard_normal((n, n, n)))
    C = dt.Tensor.from_array("C", rng.standard_normal((n, n, n)))
    sched = kernels.build("innerprod", kernels.machine("innerprod", 4, nodes=2), a, B, C)
    assert sched.compile().reduction.synthesized  # type: ignore[union-attr]
    sched.evaluate()
    np.testing.assert_allclose(a.to_numpy(), np.sum(B.to_numpy() * C.to_numpy()), rtol=1e-10)


@pytest.mark.parametrize("name,procs,memory", [("cosma", 8, 7500), ("solomonik", 64, 1000)])
def test_the_grid_chosen_under_memory_computes_the_product(name: str, procs: int, memory: int) -> None:
    rng = np.random.default_rng(3)
    n = 32
    A = dt.Tensor("A", (n, n))
    B = dt.Tensor.from_array("B", rng.standard_normal((n, n)))
    C = dt.Tensor.from_array("C", rng.standard_normal((n, n)))
    machine = kernels.machine(name, procs, (n, n, n), memory=memory)
    assert machine != kernels.machine(name, procs, (n, n, n))
    kernels.build(name, machine, A, B, C).evaluate(backend="reference")
    np.testing.assert_allclose(A.to_numpy(), B.to_numpy() @ C.to_numpy(), rtol=1e-10, atol=1e-10)
