"""Every user error of the format language, one case each, with its message."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import distal as dt
from distal.cin.placement import placement
from distal.errors import FormatError
from distal.format import Distribution, Format
from distal.machine import Grid, Machine

M1 = Machine(Grid(2))
M2 = Machine(Grid(2, 2))
M3 = Machine(Grid(2, 2, 2))
MH = Machine(Grid(2, 2), Grid(4))

# (notation text, machine, message, shown context)
INVALID_NOTATIONS = [
    ("xy xy", M2, "expected one '->' between tensor dimensions and machine dimensions ('xy -> xy'), "
     "but found no '->'", "'xy xy'"),
    ("x -> y -> z", M1, "but found more than one '->'", "'x -> y -> z'"),
    ("xx -> x", M1, "expected distinct tensor dimension names, but found 'x' twice", "'xx -> x'"),
    ("xy -> xx", M2, "expected distinct machine dimension names, but found 'x' twice", "'xy -> xx'"),
    ("xy -> xz", M2, "machine dimension 1 is named 'z', which names no tensor dimension of xy; a machine "
     "dimension must name a tensor dimension, be fixed (0, 1, ...) or be broadcast (*)", "'xy -> xz'"),
    ("(i,j) -> (i,k,*)", M3, "machine dimension 1 is named 'k', which names no tensor dimension of (i,j)",
     "'(i,j) -> (i,k,*)'"),
    ("xy -> xy", M3, "expected 3 machine dimension(s) on the right of -> (one per dimension of the 2x2x2 "
     "grid), but found 2 in 'xy -> xy'", "'xy -> xy'"),
    ("xy -> x", M2, "expected 2 machine dimension(s) on the right of -> (one per dimension of the 2x2 "
     "grid), but found 1 in 'xy -> x'", "'xy -> x'"),
    ("xy -> xy2", M3, "machine dimension 2 is fixed to index 2, but the grid has extent 2 there "
     "(indices 0..1) in 'xy -> xy2'", "'xy -> xy2'"),
    ("x0 -> x", M1, "expected a name for each tensor dimension, but found '0'; fixed indices and * belong "
     "on the right of ->", "'x0 -> x'"),
    ("x* -> x", M1, "expected a name for each tensor dimension, but found '*'; fixed indices", "'x* -> x'"),
    ("x$ -> x", M1, "expected a name for each tensor dimension, but found '$'", "'x$ -> x'"),
    ("xy -> x$", M2, "expected a name, a fixed index (0, 1, ...) or * for a machine dimension, but found '$'",
     "'xy -> x$'"),
    ("(i,j -> (i)", M1, "expected a parenthesised, comma-separated list on the left (tensor dimensions) side "
     "of ->, but found '(i,j'", "'(i,j -> (i)'"),
    ("(i,,j) -> (i)", M1, "expected a name between commas on the left (tensor dimensions) side of ->, but "
     "found an empty entry in '(i,,j)'", "'(i,,j) -> (i)'"),
    ("(i j) -> (i)", M1, "expected commas between names on the left (tensor dimensions) side of ->, but "
     "found 'i j'", "'(i j) -> (i)'"),
    ("x(y) -> x", M1, "expected names or a parenthesised list on the left (tensor dimensions) side of ->, "
     "but found 'x(y)'", "'x(y) -> x'"),
    ("xy -> x,y", M2, "expected names or a parenthesised list on the right (machine dimensions) side of ->, "
     "but found 'x,y'", "'xy -> x,y'"),
    ("(i,j) -> (i,-1)", M2, "expected a name, a fixed index (0, 1, ...) or * for a machine dimension, but "
     "found '-1'", "'(i,j) -> (i,-1)'"),
    ("xy -> xy", MH, "expected 2 distribution(s), one per level of Machine(Grid(2, 2), Grid(4)), but found 1",
     "'xy -> xy'"),
    ("[xy -> xy, xy -> x", MH, "expected a closing ] after the list of distributions",
     "'[xy -> xy, xy -> x'"),
    ("[xy -> xy, xy -> xy]", MH, "expected 1 machine dimension(s) on the right of -> (one per dimension of "
     "the 4 grid at level 1), but found 2 in 'xy -> xy'", "[xy -> xy, xy -> xy]"),
    ("[xy -> xy, xy -> z]", MH, "machine dimension 0 is named 'z', which names no tensor dimension of xy; "
     "a machine dimension must name a tensor dimension, be fixed (0, 1, ...) or be broadcast (*) (level 1)",
     "[xy -> xy, xy -> z]"),
    ("[xy -> xy, x -> x]", MH, "expected every level to name 2 tensor dimension(s) like level 0 'xy -> xy', "
     "but level 1 'x -> x' names 1", "[xy -> xy, x -> x]"),
    ("[xy -> xy, xy -> 4]", MH, "machine dimension 0 is fixed to index 4, but the grid at level 1 has "
     "extent 4 there (indices 0..3) in 'xy -> 4'", "[xy -> xy, xy -> 4]"),
    ("[xy -> xy, xy -> x, xy -> x]", MH, "expected 2 distribution(s), one per level",
     "[xy -> xy, xy -> x, xy -> x]"),
    ("[]", MH, "expected 2 distribution(s), one per level of Machine(Grid(2, 2), Grid(4)), but found 0",
     "[]"),
]


@pytest.mark.parametrize(("text", "machine", "message", "context"), INVALID_NOTATIONS)
def test_invalid_notation_is_refused(text: str, machine: Machine, message: str, context: str) -> None:
    with pytest.raises(FormatError) as info:
        Format(text, machine)
    assert message in info.value.message
    assert info.value.context == context
    assert f"in: {context}" in str(info.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Format("xy -> xy", (2, 2)), "expected a Machine to distribute onto, but found (2, 2)"),
        (lambda: Format(3, M1), "expected distribution text ('xy -> xy') or a list of them, one per machine "
         "level, but found 3"),
        (lambda: Format(["xy -> xy", 3], MH), "expected distribution text at level 1, but found 3"),
        (lambda: Distribution.parse(3),
         "expected tensor distribution notation text ('xy -> xy'), but found 3"),
        (lambda: Distribution(["x"], ("x",)), "expected tuples of tensor and machine dimension names"),
        (lambda: Distribution(("1",), ()), "expected a name for each tensor dimension, but found '1'"),
        (lambda: Distribution(("x",), (-1,)), "expected a non-negative fixed index for machine dimension 0, "
         "but found -1"),
        (lambda: Distribution(("x",), (1.5,)), "expected a name, an index or * for machine dimension 0, "
         "but found 1.5"),
        (lambda: Distribution(("x",), ("x-",)), "expected a name, an index or * for machine dimension 0, "
         "but found 'x-'"),
        (lambda: dt.Tensor("A", (4,), Format("xy -> x", M1)), "expected a 2-dimensional tensor for format "
         "'xy -> x', but found A with 1 dimension(s), shape (4,)"),
        (lambda: Format("xy -> x", M1).tile_shape((4, 4), level=1),
         "expected a level in [0, 1), but found 1"),
        (lambda: Format("xy -> x", M1).tile_shape((4,)), "expected a shape of 2 non-negative extent(s) for "
         "format 'xy -> x', but found (4,)"),
        (lambda: Format("xy -> x", M1).tile_shape((4, -1)), "expected a shape of 2 non-negative extent(s)"),
        (lambda: Format("xy -> x", M1).tile_shape(("a", None)), "expected a tensor shape of integers for "
         "format 'xy -> x', but found ('a', None)"),
        (lambda: Format("xy -> x", M1).color((4, 0), (4, 4)), "expected a coordinate inside the tensor of "
         "shape (4, 4) for format 'xy -> x', but found (4, 0)"),
        (lambda: Format("xy -> x", M1).color((0,), (4, 4)), "expected a coordinate inside the tensor"),
        (lambda: Format("xy -> x", M1).color(("a", 0), (4, 4)), "expected a coordinate inside the tensor"),
        (lambda: Format("xy -> x", M1).owners((True,)), "expected a color in a grid of shape (2,)"),
        (lambda: Format("xy -> x", M1).owners((2,)), "expected a color in a grid of shape (2,) for format "
         "'xy -> x', but found (2,)"),
        (lambda: Format("xy -> x", M1).owners((0, 0)), "expected a color in a grid of shape (2,)"),
        (lambda: Format("xy -> x", M1).tile_of((5,), (4, 4)), "expected a color in a grid of shape (2,) for "
         "format 'xy -> x', but found (5,)"),
        (lambda: placement(Format("xy -> x", M1), dt.Tensor("B", (4,))), "expected a 2-dimensional tensor for "
         "format 'xy -> x', but found B with 1 dimension(s)"),
        (lambda: dt.Tensor("B", (4,)).placement_text(Format("xy -> x", M1)), "expected a 2-dimensional tensor for "
         "format 'xy -> x', but found B with 1 dimension(s)"),
        (lambda: dt.Tensor("B", (4,)).placement_text(), "expected a format to place B by, but found B without one"),
        (lambda: dt.Tensor("B", (4,)).placement("x -> x"), "expected a dt.Format to place B by, but found str"),
    ],
)
def test_misuse_is_refused(make: Callable[[], object], message: str) -> None:
    with pytest.raises(FormatError) as info:
        make()
    assert message in str(info.value)
