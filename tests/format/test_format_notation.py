"""Tensor distribution notation: parsing, printing, structure (paper Figure 4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distal.format import BROADCAST, Distribution, Format
from distal.machine import Grid, Machine

M1 = Machine(Grid(2))
M2 = Machine(Grid(2, 2))
M3 = Machine(Grid(2, 2, 2))


@pytest.mark.parametrize(
    ("text", "xs", "ys"),
    [
        ("x -> x", ("x",), ("x",)),
        ("xy -> x", ("x", "y"), ("x",)),
        ("xy -> y", ("x", "y"), ("y",)),
        ("xy -> xy", ("x", "y"), ("x", "y")),
        ("xy -> yx", ("x", "y"), ("y", "x")),
        ("xy -> xy0", ("x", "y"), ("x", "y", 0)),
        ("xy -> xy*", ("x", "y"), ("x", "y", "*")),
        ("xy->x*", ("x", "y"), ("x", "*")),
        ("(i,j) -> (i,j,*)", ("i", "j"), ("i", "j", "*")),
        ("( row , col ) -> ( col, 12 )", ("row", "col"), ("col", 12)),
        ("(i,j) -> ij", ("i", "j"), ("i", "j")),
        ("xyz -> **", ("x", "y", "z"), ("*", "*")),
        ("() -> (*)", (), ("*",)),
        ("-> 0", (), (0,)),
    ],
)
def test_parse(text: str, xs: tuple[str, ...], ys: tuple[object, ...]) -> None:
    d = Distribution.parse(text)
    assert d.tensor_names == xs
    assert d.machine_names == ys
    assert Distribution.parse(str(d)) == d


@pytest.mark.parametrize(
    ("text", "printed"),
    [
        ("xy -> xy0", "xy -> xy0"),
        ("xy->xy*", "xy -> xy*"),
        ("  xy  ->  yx ", "xy -> yx"),
        ("(i,j) -> (i,j,*)", "(i,j) -> (i,j,*)"),
        ("(i, j) -> ij", "(i,j) -> (i,j)"),
        ("(row,col) -> (row)", "(row,col) -> (row)"),
        ("xy -> (x,10)", "(x,y) -> (x,10)"),
        ("-> *", "() -> (*)"),
    ],
)
def test_print(text: str, printed: str) -> None:
    assert str(Distribution.parse(text)) == printed
    assert str(Distribution.parse(printed)) == printed


def test_long_form_is_only_spelling() -> None:
    assert Distribution.parse("(x,y) -> (x,y)") == Distribution.parse("xy -> xy")
    assert hash(Distribution.parse("(x,y) -> (x,y)")) == hash(Distribution.parse("xy -> xy"))
    assert Distribution.parse("xy -> xy") != Distribution.parse("ij -> ij")


def test_structure() -> None:
    d = Distribution.parse("xyz -> zx*0")
    assert (d.ndim, d.machine_ndim) == (3, 4)
    assert [d.machine_dim_of(t) for t in range(3)] == [1, None, 0]
    assert [d.tensor_dim_of(k) for k in range(4)] == [2, 0, None, None]
    assert d.partitioned == (0, 1)
    assert d.fixed == ((3, 0),)
    assert d.broadcast == (2,)
    assert BROADCAST == "*"
    assert repr(d) == "Distribution.parse('xyz -> zx*0')"


def test_format_round_trips() -> None:
    mh = Machine(Grid(2, 2), Grid(4))
    cases = [
        Format("xy -> xy0", M3),
        Format("xy -> xy*", M3),
        Format("xy -> x", M1),
        Format("xy -> yx", M2),
        Format("(i,j) -> (i,j,*)", M3),
        Format(["xy -> xy", "xy -> x"], mh),
        Format(["(i,j) -> (j,i)", "(a,b) -> (b)"], mh),
        Format(["xy -> *0", "xy -> *"], mh),
    ]
    for fmt in cases:
        again = Format(str(fmt), fmt.machine)
        assert again == fmt and hash(again) == hash(fmt)
        assert str(again) == str(fmt)
    assert str(cases[5]) == "[xy -> xy, xy -> x]"
    assert repr(cases[0]) == "Format('xy -> xy0', Machine(Grid(2, 2, 2)))"
    assert Format(Distribution.parse("xy -> x"), M1) == cases[2]
    assert Format(("xy -> xy", "xy -> x"), mh) == cases[5]


def test_format_is_immutable_and_hashable() -> None:
    fmt = Format("xy -> xy", M2)
    with pytest.raises(AttributeError):
        fmt.machine = M1  # type: ignore[misc]
    assert len({fmt, Format("xy -> xy", M2), Format("xy -> yx", M2)}) == 2
    assert fmt != Format("xy -> xy", Machine(Grid(2, 3)))
    assert fmt.levels == (Distribution.parse("xy -> xy"),)
    assert fmt.distribution is fmt.levels[0] and fmt.order == 2


_names = st.lists(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=0, max_size=4, unique=True)


@st.composite
def distributions(draw: st.DrawFn) -> Distribution:
    xs = draw(_names)
    long_names = draw(st.booleans())
    if long_names:
        xs = [x + "_" + x for x in xs]
    pool = draw(st.permutations(xs))
    k = draw(st.integers(0, len(pool)))
    ys: list[str | int] = list(pool[:k])
    ys += draw(st.lists(st.one_of(st.just("*"), st.integers(0, 12)), max_size=3))
    ys = draw(st.permutations(ys))
    return Distribution(tuple(xs), tuple(ys))


@given(distributions())
def test_printing_round_trips(d: Distribution) -> None:
    assert Distribution.parse(str(d)) == d
    assert str(Distribution.parse(str(d))) == str(d)
