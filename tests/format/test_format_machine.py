"""Machines: grids, kinds, hierarchy, and binding to real processors."""

from __future__ import annotations

import pytest

import distal as dt
from distal.errors import MachineError
from distal.machine import Grid, Machine
from distal.sizes import MachineDim


def test_grid_defaults() -> None:
    g = Grid(2, 3)
    assert g.dims == (2, 3)
    assert g.names == ("x", "y")
    assert (g.kind, g.memory) == ("cpu", "sysmem")
    assert g.size == 6 and g.ndim == 2
    assert list(g.coords()) == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]


@pytest.mark.parametrize(
    ("grid", "kind", "memory"),
    [
        (Grid(4, kind="gpu"), "gpu", "fbmem"),
        (Grid(4, kind="GPU", memory="zcmem"), "gpu", "zcmem"),
        (Grid(4, kind="omp"), "omp", "sysmem"),
        (Grid(4, kind="cpu", memory="zcmem"), "cpu", "zcmem"),
    ],
)
def test_grid_kinds(grid: Grid, kind: str, memory: str) -> None:
    assert (grid.kind, grid.memory) == (kind, memory)


@pytest.mark.parametrize(
    "grid",
    [
        Grid(2, 2),
        Grid(3, names="i"),
        Grid(2, 2, names=("a", "b"), kind="gpu"),
        Grid(4, kind="gpu", memory="zcmem"),
    ],
)
def test_grid_repr_round_trips(grid: Grid) -> None:
    assert eval(repr(grid), {"Grid": Grid}) == grid
    assert hash(eval(repr(grid), {"Grid": Grid})) == hash(grid)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Grid(), "expected at least one grid dimension, but found none"),
        (lambda: Grid(2, 0), "expected positive integer grid sizes or dt.Param, but found 0"),
        (lambda: Grid(2, True), "expected positive integer grid sizes or dt.Param, but found True"),
        (lambda: Grid(2, 2, names="x"), "expected 2 dimension names, but found 1"),
        (lambda: Grid(2, 2, names="xx"), "expected distinct dimension names, but found ('x', 'x')"),
        (lambda: Grid(2, names=("1a",)), "expected identifiers as dimension names, but found '1a'"),
        (lambda: Grid(*[2] * 9), "grids have at most 8 unnamed dimensions"),
        (lambda: Grid(2, kind="tpu"), "expected a processor kind (cpu, gpu, omp), but found 'tpu'"),
        (lambda: Grid(2, memory="disk"), "expected a memory kind (sysmem, fbmem, zcmem), but found 'disk'"),
        (lambda: Grid(2, kind="cpu", memory="fbmem"),
         "expected a memory a cpu can address (sysmem, zcmem), but found 'fbmem'"),
        (lambda: Machine(), "expected at least one grid, but found none"),
        (lambda: Machine((2, 2)), "expected a Grid per machine level, but found (2, 2)"),  # type: ignore[arg-type]
        (lambda: Machine(Grid(2)).bind(0), "expected a positive number of real processors, but found 0"),
        (lambda: Machine(Grid(2)).dim("x", 1), "expected a level in [0, 1), but found 1"),
        (lambda: Machine(Grid(2)).dim("q"), "expected a dimension of ('x',) at level 0, but found 'q'"),
    ],
)
def test_machine_errors(make: object, message: str) -> None:
    with pytest.raises(MachineError) as info:
        make()  # type: ignore[operator]
    assert message in str(info.value)


def test_machine_dims_are_sizes() -> None:
    m = Machine(Grid(2, 3))
    assert m.x == MachineDim("x", 2, 0)
    assert m.y.size == 3 and int(m.y) == 3
    assert m.dims() == (m.x, m.y)
    with pytest.raises(AttributeError, match="expected one of the axes x, y of Machine"):
        _ = m.z
    t = dt.Tensor("T", (m.x, m.y))
    assert t.shape == (2, 3)


def test_hierarchical_machine() -> None:
    mh = Machine(Grid(2, 2), Grid(4, kind="gpu"))
    assert mh.levels == 2
    assert mh.shape == (2, 2) and mh.ndim == 2
    assert mh.full_shape == (2, 2, 4)
    assert mh.size == 16
    assert (mh.kind, mh.memory) == ("gpu", "fbmem")
    assert mh.dim("x", 1) == MachineDim("x", 4, 1)
    coords = list(mh.coords())
    assert coords[:5] == [(0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 0, 3), (0, 1, 0)]
    assert len(coords) == 16
    assert repr(mh) == "Machine(Grid(2, 2), Grid(4, kind='gpu'))"
    same = Machine(Grid(2, 2), Grid(4, kind="gpu"))
    assert mh == same and hash(mh) == hash(same)


def test_bind_one_to_one_when_enough_real_processors() -> None:
    assert Machine(Grid(2, 2)).bind(4) == {(0, 0): 0, (0, 1): 1, (1, 0): 2, (1, 1): 3}
    assert Machine(Grid(3)).bind(8) == {(0,): 0, (1,): 1, (2,): 2}


def test_bind_block_wise_not_round_robin() -> None:
    binding = Machine(Grid(4)).bind(2)
    assert binding == {(0,): 0, (1,): 0, (2,): 1, (3,): 1}  # round-robin would give 0, 1, 0, 1


@pytest.mark.parametrize(("dims", "n_real"), [((5,), 4), ((3, 3), 2), ((2, 3, 4), 5), ((7,), 7), ((6, 6), 4)])
def test_bind_blocks_are_contiguous_and_balanced(dims: tuple[int, ...], n_real: int) -> None:
    m = Machine(Grid(*dims))
    binding = m.bind(n_real)
    order = [binding[c] for c in m.coords()]
    assert order == sorted(order)  # contiguous blocks in row-major order
    counts = [order.count(r) for r in range(min(n_real, m.size))]
    assert max(counts) - min(counts) <= 1
    assert set(order) == set(range(min(n_real, m.size)))


def test_bind_hierarchical_keeps_nodes_together() -> None:
    mh = Machine(Grid(2, 2), Grid(4))
    binding = mh.bind(4)
    for node in Grid(2, 2).coords():
        assert {binding[(*node, p)] for p in range(4)} == {node[0] * 2 + node[1]}


def test_describe_binding() -> None:
    text = Machine(Grid(4, kind="gpu")).describe_binding(2)
    assert text == (
        "Machine(Grid(4, kind='gpu')): 4 abstract gpu processors on 2 real gpu processors, block-wise\n"
        "  gpu 0: (0,) (1,)\n"
        "  gpu 1: (2,) (3,)"
    )
    idle = Machine(Grid(2)).describe_binding(3)
    assert idle.splitlines() == [
        "Machine(Grid(2)): 2 abstract cpu processors on 3 real cpu processors, one to one",
        "  cpu 0: (0,)",
        "  cpu 1: (1,)",
        "  cpu 2: idle",
    ]
