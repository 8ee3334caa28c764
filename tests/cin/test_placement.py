"""Placement statements: lowering tensor distribution notation to concrete index notation (paper 5.3)."""

from __future__ import annotations

import pytest

import distal as dt
from distal.cin import Assign, Communicate, Distribute, Divide, FixedForall, Forall, placement, placement_text
from distal.cin.statements import loop_vars
from distal.format import Format
from distal.machine import Grid, Machine
from distal.notation import IndexVar

T2 = dt.Tensor("T", (4, 4))


@pytest.mark.parametrize(
    ("spec", "machine", "text"),
    [
        # The paper's example (5.3), with m.x for the paper's gx and the grid the loop maps onto.
        ("xy -> x", Machine(Grid(2)),
         "∀xo ∀xi ∀y T(x,y) s.t. divide(x, xo, xi, m.x), distribute({xo}, Grid(2)), communicate(T, xo)"),
        ("xy -> y", Machine(Grid(2)),
         "∀yo ∀x ∀yi T(x,y) s.t. divide(y, yo, yi, m.x), distribute({yo}, Grid(2)), communicate(T, yo)"),
        ("xy -> xy", Machine(Grid(2, 2)),
         "∀xo ∀yo ∀xi ∀yi T(x,y) s.t. divide(x, xo, xi, m.x), divide(y, yo, yi, m.y), "
         "distribute({xo, yo}, Grid(2, 2)), communicate(T, yo)"),
        ("xy -> yx", Machine(Grid(2, 3)),
         "∀yo ∀xo ∀xi ∀yi T(x,y) s.t. divide(y, yo, yi, m.x), divide(x, xo, xi, m.y), "
         "distribute({yo, xo}, Grid(2, 3)), communicate(T, xo)"),
        ("xy -> xy0", Machine(Grid(2, 2, 2)),
         "∀xo ∀yo ∀z=0 ∀xi ∀yi T(x,y) s.t. divide(x, xo, xi, m.x), divide(y, yo, yi, m.y), "
         "distribute({xo, yo, z}, Grid(2, 2, 2)), communicate(T, z)"),
        ("xy -> xy*", Machine(Grid(2, 2, 2)),
         "∀xo ∀yo ∀z ∀xi ∀yi T(x,y) s.t. divide(x, xo, xi, m.x), divide(y, yo, yi, m.y), "
         "distribute({xo, yo, z}, Grid(2, 2, 2)), communicate(T, z)"),
        ("(i,j) -> (i,j,*)", Machine(Grid(2, 2, 2)),
         "∀io ∀jo ∀z ∀ii ∀ji T(i,j) s.t. divide(i, io, ii, m.x), divide(j, jo, ji, m.y), "
         "distribute({io, jo, z}, Grid(2, 2, 2)), communicate(T, z)"),
        ("zy -> zy*", Machine(Grid(2, 2, 2)),
         "∀zo ∀yo ∀z1 ∀zi ∀yi T(z,y) s.t. divide(z, zo, zi, m.x), divide(y, yo, yi, m.y), "
         "distribute({zo, yo, z1}, Grid(2, 2, 2)), communicate(T, z1)"),
        ("xy -> *", Machine(Grid(3)),
         "∀x1 ∀x ∀y T(x,y) s.t. distribute({x1}, Grid(3)), communicate(T, x1)"),
        (["xy -> xy", "xy -> x"], Machine(Grid(2, 2), Grid(4)),
         "∀xo ∀yo ∀xio ∀xii ∀yi T(x,y) s.t. divide(x, xo, xi, m.x), divide(y, yo, yi, m.y), "
         "distribute({xo, yo}, Grid(2, 2)), divide(xi, xio, xii, m.x@1), distribute({xio}, Grid(4)), "
         "communicate(T, xio)"),
        (["xy -> x*", "ab -> b0"], Machine(Grid(2, 2), Grid(2, 2)),
         "∀xo ∀y1 ∀yo ∀y2=0 ∀xi ∀yi T(x,y) s.t. divide(x, xo, xi, m.x), distribute({xo, y1}, Grid(2, 2)), "
         "divide(y, yo, yi, m.x@1), distribute({yo, y2}, Grid(2, 2)), communicate(T, y2)"),
    ],
)
def test_placement_text(spec: str | list[str], machine: Machine, text: str) -> None:
    fmt = Format(spec, machine)
    assert placement_text(fmt, T2) == text
    assert T2.placement_text(fmt) == text  # the user's tensor asks for it too


def test_a_tensor_s_placement_defaults_to_its_own_format() -> None:
    fmt = Format("xy -> xy0", Machine(Grid(2, 2, 2)))
    T = dt.Tensor("T", (4, 4), fmt)
    assert T.placement_text() == placement_text(fmt, T)
    assert T.placement() == placement(fmt, T)


def test_placement_structure() -> None:
    m = Machine(Grid(2, 2, 2))
    stmt, relations = placement(Format("xy -> xy0", m), T2)
    x, y, xo, xi, yo, yi, z = (IndexVar(n) for n in ("x", "y", "xo", "xi", "yo", "yi", "z"))
    assert isinstance(stmt, Forall) and stmt.var == xo
    fixed = stmt.body.children()[0]
    assert isinstance(fixed, FixedForall) and not isinstance(fixed, Forall)
    assert (fixed.var, fixed.value) == (z, 0)
    assert loop_vars(stmt) == (xo, yo, xi, yi)  # the fixed forall is not an ordinary loop
    assert relations == (
        Divide(x, xo, xi, m.x),
        Divide(y, yo, yi, m.y),
        Distribute((xo, yo, z), m.grid, 0),
        Communicate((T2.var,), z),
    )
    leaf = fixed.body.children()[0].children()[0]
    assert isinstance(leaf, Assign) and str(leaf) == "T(x,y) = T(x,y)"
    assert str(stmt) == "∀xo ∀yo ∀z=0 ∀xi ∀yi T(x,y) = T(x,y)"


def test_hierarchical_placement_levels() -> None:
    mh = Machine(Grid(2, 2), Grid(4, kind="gpu"))
    _, relations = placement(Format(["xy -> xy", "xy -> x"], mh), T2)
    distributes = [r for r in relations if isinstance(r, Distribute)]
    assert [(d.level, d.grid) for d in distributes] == [(0, mh.grids[0]), (1, mh.grids[1])]
    inner = [r for r in relations if isinstance(r, Divide)][-1]
    assert inner.parts == mh.dim("x", 1) and inner.parts.size == 4


def test_placement_of_vectors_and_scalars() -> None:
    v = dt.Tensor("v", (6,))
    assert placement_text(Format("x -> x", Machine(Grid(3))), v) == (
        "∀xo ∀xi v(x) s.t. divide(x, xo, xi, m.x), distribute({xo}, Grid(3)), communicate(v, xo)"
    )
    s = dt.Tensor("s", ())
    assert placement_text(Format("() -> (*)", Machine(Grid(3))), s) == (
        "∀x s s.t. distribute({x}, Grid(3)), communicate(s, x)"
    )
