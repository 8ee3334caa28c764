"""P (coordinates to colors) and F (colors to processors), point by point (paper 3.2, Figure 5)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import distal as dt
from distal.format import Distribution, Format
from distal.machine import Grid, Machine


def table(text: str) -> dict[tuple[int, ...], tuple[int, ...]]:
    """A matrix of colors written out: each entry is a color's digits ('01' is color (0, 1))."""
    rows = [r.split() for r in text.strip().splitlines()]
    return {(i, j): tuple(int(ch) for ch in e) for i, row in enumerate(rows) for j, e in enumerate(row)}


def check_p(fmt: Format, shape: tuple[int, int], expected: dict[tuple[int, ...], tuple[int, ...]]) -> None:
    assert set(expected) == set(itertools.product(*(range(n) for n in shape)))
    for coord, color in expected.items():
        assert fmt.color(coord, shape) == color, coord


# -- Figure 5: the running example, exactly as in the paper ---------------------------------


def test_running_example_broadcast() -> None:
    """T_xy -> xy* M with T 2x2 and M 2x2x2 (Figure 5e): the paper's P and F."""
    fmt = Format("xy -> xy*", Machine(Grid(2, 2, 2)))
    p = {(0, 0): (0, 0), (0, 1): (0, 1), (1, 0): (1, 0), (1, 1): (1, 1)}
    f = {
        (0, 0): {(0, 0, 0), (0, 0, 1)},
        (0, 1): {(0, 1, 0), (0, 1, 1)},
        (1, 0): {(1, 0, 0), (1, 0, 1)},
        (1, 1): {(1, 1, 0), (1, 1, 1)},
    }
    assert {c: fmt.color(c, (2, 2)) for c in p} == p
    assert {color: set(fmt.owners(color)) for color in f} == f
    assert list(fmt.colors()) == list(f)
    for coord in p:
        assert fmt.processors(coord, (2, 2)) == frozenset(f[p[coord]])


# -- Figure 5: every distribution on a 4x4 matrix --------------------------------------------


def test_vector() -> None:
    """T_x -> x M, 100 components on 10 processors: 10 components each (paper 3.2)."""
    fmt = Format("x -> x", Machine(Grid(10)))
    for i in range(100):
        assert fmt.color((i,), (100,)) == (i // 10,)
        assert fmt.processors((i,), (100,)) == {(i // 10,)}
    assert fmt.tile_shape((100,)) == (10,)


def test_rows() -> None:
    fmt = Format("xy -> x", Machine(Grid(2)))
    check_p(fmt, (4, 4), table("""
        0 0 0 0
        0 0 0 0
        1 1 1 1
        1 1 1 1
    """))
    assert fmt.owners((0,)) == {(0,)} and fmt.owners((1,)) == {(1,)}
    assert fmt.tile_shape((4, 4)) == (2, 4)
    assert list(fmt.tiles((4, 4))) == [((0,), ((0, 2), (0, 4))), ((1,), ((2, 4), (0, 4)))]


def test_columns() -> None:
    fmt = Format("xy -> y", Machine(Grid(2)))
    check_p(fmt, (4, 4), table("""
        0 0 1 1
        0 0 1 1
        0 0 1 1
        0 0 1 1
    """))
    assert fmt.owners((1,)) == {(1,)}
    assert fmt.tile_shape((4, 4)) == (4, 2)


def test_tiles() -> None:
    fmt = Format("xy -> xy", Machine(Grid(2, 2)))
    check_p(fmt, (4, 4), table("""
        00 00 01 01
        00 00 01 01
        10 10 11 11
        10 10 11 11
    """))
    for color in fmt.colors():
        assert fmt.owners(color) == {color}


def test_transposed_tiles() -> None:
    fmt = Format("xy -> yx", Machine(Grid(2, 2)))
    check_p(fmt, (4, 4), table("""
        00 00 10 10
        00 00 10 10
        01 01 11 11
        01 01 11 11
    """))
    assert fmt.processors((0, 3), (4, 4)) == {(1, 0)}


def test_face() -> None:
    """T_xy -> xy0 M (Figure 5d): tiles on the z = 0 face of the cube only."""
    fmt = Format("xy -> xy0", Machine(Grid(2, 2, 2)))
    check_p(fmt, (4, 4), table("""
        00 00 01 01
        00 00 01 01
        10 10 11 11
        10 10 11 11
    """))
    assert {c: fmt.owners(c) for c in fmt.colors()} == {
        (0, 0): {(0, 0, 0)}, (0, 1): {(0, 1, 0)}, (1, 0): {(1, 0, 0)}, (1, 1): {(1, 1, 0)}
    }
    held = fmt.local_size((4, 4))
    assert all(held[p] == (4 if p[2] == 0 else 0) for p in held)
    top = Format("xy -> xy1", Machine(Grid(2, 2, 2)))
    assert top.processors((3, 0), (4, 4)) == {(1, 0, 1)}


def test_broadcast_on_4x4() -> None:
    fmt = Format("xy -> xy*", Machine(Grid(2, 2, 2)))
    assert fmt.processors((3, 1), (4, 4)) == {(1, 0, 0), (1, 0, 1)}
    held = fmt.local_size((4, 4))
    assert set(held.values()) == {4}


def test_replicated_everywhere_and_fixed_everywhere() -> None:
    everywhere = Format("xy -> **", Machine(Grid(2, 3)))
    assert everywhere.color((1, 2), (4, 4)) == ()
    assert everywhere.owners(()) == frozenset(Grid(2, 3).coords())
    assert list(everywhere.tiles((4, 4))) == [((), ((0, 4), (0, 4)))]
    one = Format("xy -> 10", Machine(Grid(2, 3)))
    assert one.processors((3, 3), (4, 4)) == {(1, 0)}


def test_long_names_mean_the_same() -> None:
    m = Machine(Grid(2, 2, 2))
    a, b = Format("(i,j) -> (i,j,*)", m), Format("xy -> xy*", m)
    for coord in itertools.product(range(3), range(5)):
        assert a.color(coord, (3, 5)) == b.color(coord, (3, 5))
        assert a.processors(coord, (3, 5)) == b.processors(coord, (3, 5))


# -- extents that do not divide, empty tiles ---------------------------------------------


def test_uneven_tiles() -> None:
    fmt = Format("xy -> xy", Machine(Grid(2, 2)))
    check_p(fmt, (5, 3), table("""
        00 00 01
        00 00 01
        00 00 01
        10 10 11
        10 10 11
    """))
    assert fmt.tile_shape((5, 3)) == (3, 2)
    assert dict(fmt.tiles((5, 3))) == {
        (0, 0): ((0, 3), (0, 2)), (0, 1): ((0, 3), (2, 3)),
        (1, 0): ((3, 5), (0, 2)), (1, 1): ((3, 5), (2, 3)),
    }


def test_empty_tiles() -> None:
    fmt = Format("x -> x", Machine(Grid(4)))
    assert [fmt.color((i,), (5,)) for i in range(5)] == [(0,), (0,), (1,), (1,), (2,)]
    assert list(fmt.tiles((5,))) == [
        ((0,), ((0, 2),)), ((1,), ((2, 4),)), ((2,), ((4, 5),)), ((3,), ((5, 5),))
    ]
    assert fmt.tile_of((3,), (5,)) == ((5, 5),)
    assert list(fmt.tiles((0,))) == [((c,), ((0, 0),)) for c in range(4)]
    assert fmt.tile_shape((0,)) == (0,)
    few = Format("x -> x", Machine(Grid(8)))
    assert [b for _, b in few.tiles((3,))] == [((0, 1),), ((1, 2),), ((2, 3),)] + [((3, 3),)] * 5


def test_numpy_coordinates() -> None:
    fmt = Format("xy -> xy", Machine(Grid(2, 2)))
    coord = np.array([3, 0])
    assert fmt.color(tuple(coord), np.array([4, 4])) == (1, 0)
    assert fmt.owners((np.int64(1), np.int64(0))) == {(1, 0)}


# -- hierarchy ----------------------------------------------------------------------------


MH = Machine(Grid(2, 2), Grid(2))


def test_hierarchical_tiles_then_rows() -> None:
    """[T_xy -> xy, T_xy -> x]: 2-D tiles over nodes, each tile by rows over a node's processors."""
    fmt = Format(["xy -> xy", "xy -> x"], MH)
    check_p(fmt, (4, 4), table("""
        000 000 010 010
        001 001 011 011
        100 100 110 110
        101 101 111 111
    """))
    for i, j in itertools.product(range(4), range(4)):
        assert fmt.level_colors((i, j), (4, 4)) == ((i // 2, j // 2), (i % 2,))
        assert fmt.processors((i, j), (4, 4)) == {(i // 2, j // 2, i % 2)}
    assert fmt.color_shape() == (2, 2, 2) and fmt.color_shape(0) == (2, 2)
    assert fmt.tile_shape((4, 4)) == (2, 2) and fmt.tile_shape((4, 4), level=1) == (1, 2)


def test_hierarchical_names_are_per_level() -> None:
    """The paper's [T_xy -> xy, T_zw -> z]: level 1 names the same tensor dimensions afresh."""
    assert Format(["xy -> xy", "zw -> z"], MH) == Format(["xy -> xy", "zw -> z"], MH)
    a, b = Format(["xy -> xy", "zw -> z"], MH), Format(["xy -> xy", "xy -> x"], MH)
    for coord in itertools.product(range(5), range(3)):
        assert a.processors(coord, (5, 3)) == b.processors(coord, (5, 3))


def test_hierarchical_uneven_uses_nominal_tiles() -> None:
    """Level 1 cuts every level-0 tile by the nominal extent ceil(n/g), clipped to the tensor."""
    fmt = Format(["x -> x", "x -> x"], Machine(Grid(2), Grid(4)))
    # level 0: tiles of 3 ([0,3), [3,5)); level 1: sub-tiles of ceil(3/4) = 1
    assert [b for _, b in fmt.tiles((5,))] == [
        ((0, 1),), ((1, 2),), ((2, 3),), ((3, 3),),
        ((3, 4),), ((4, 5),), ((5, 5),), ((5, 5),),
    ]
    assert [fmt.color((i,), (5,)) for i in range(5)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]
    assert [b for _, b in fmt.tiles((5,), level=0)] == [((0, 3),), ((3, 5),)]


def test_hierarchical_broadcast_and_fixed() -> None:
    fmt = Format(["xy -> x*", "xy -> *"], MH)
    assert fmt.color((3, 3), (4, 4)) == (1,)
    assert fmt.owners((1,)) == {(1, a, b) for a in range(2) for b in range(2)}
    fixed = Format(["xy -> *0", "xy -> y"], MH)
    assert fixed.processors((0, 3), (4, 4)) == {(0, 0, 1), (1, 0, 1)}


# -- properties ---------------------------------------------------------------------------


@st.composite
def formats_and_shapes(draw: st.DrawFn) -> tuple[Format, tuple[int, ...]]:
    order = draw(st.integers(1, 3))
    names = "abc"[:order]
    grids, levels = [], []
    for _ in range(draw(st.integers(1, 2))):
        dims = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
        grids.append(Grid(*dims))
        pool = list(draw(st.permutations(names)))
        ys: list[str | int] = []
        for g in dims:
            choice = draw(st.sampled_from(["name", "fixed", "*"]))
            if choice == "name" and pool:
                ys.append(pool.pop())
            elif choice == "fixed":
                ys.append(draw(st.integers(0, g - 1)))
            else:
                ys.append("*")
        levels.append(Distribution(tuple(names), tuple(ys)))
    shape = tuple(draw(st.lists(st.integers(0, 6), min_size=order, max_size=order)))
    return Format(levels, Machine(*grids)), shape


@settings(max_examples=150, deadline=None)
@given(formats_and_shapes())
def test_tiles_partition_the_tensor(case: tuple[Format, tuple[int, ...]]) -> None:
    fmt, shape = case
    tiles = list(fmt.tiles(shape))
    assert len(tiles) == int(np.prod(fmt.color_shape()))
    leaf = fmt.tile_shape(shape, level=len(fmt.levels) - 1)
    for _, bounds in tiles:
        assert all(0 <= lo <= hi <= n and hi - lo <= t for (lo, hi), n, t in zip(bounds, shape, leaf))
    machine = set(fmt.machine.coords())
    for coord in itertools.product(*(range(n) for n in shape)):
        holders = [c for c, b in tiles if all(lo <= x < hi for x, (lo, hi) in zip(coord, b))]
        assert holders == [fmt.color(coord, shape)]
        procs = fmt.processors(coord, shape)
        assert procs and procs <= machine
    total = sum(fmt.local_size(shape).values())
    assert total == sum(int(np.prod([hi - lo for lo, hi in b])) * len(fmt.owners(c)) for c, b in tiles)


def test_tensor_takes_a_format() -> None:
    m = Machine(Grid(2, 2))
    fmt = Format("xy -> xy", m)
    A = dt.Tensor("A", (4, 4), fmt)
    assert A.format is fmt
    assert fmt.tile_shape(A.shape) == (2, 2)
    with pytest.raises(dt.FormatError, match="expected a 2-dimensional tensor"):
        dt.Tensor("B", (4, 4, 4), fmt)
