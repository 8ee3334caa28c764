"""Typing rules (Fig. 8, multi-axis 7.1) and costs (Fig. 11) of the collectives."""

from __future__ import annotations

import pytest

from distal.errors import TypeNotationError
from distal.redist import AllGather, AllPermute, AllToAll, Collective, DistType, DynSlice, Mesh

M = Mesh(x=4, y=4)
M3 = Mesh(x=4, y=2, z=4)


def T(text: str) -> DistType:
    return DistType.parse(text)


@pytest.mark.parametrize(
    ("op", "src", "dst", "mesh", "cost"),
    [
        # Fig. 4 right: allgather removes the minor-most axis
        (AllGather(((0, ("x",)),)), "[32{x,y}512, 512]", "[128{y}512, 512]", M, 128 * 512),
        (AllGather(((0, ("x", "y")),)), "[32{x,y}512, 128]", "[512, 128]", M, 512 * 128),
        (
            AllGather(((0, ("x",)), (2, ("y",)))),
            "[32{x}128, 512, 32{y}128]",
            "[128, 512, 128]",
            M,
            128 * 512 * 128,
        ),
        (DynSlice(((3, ("z",)),)), "[1{y,x}8, 8, 8, 4]", "[1{y,x}8, 8, 8, 1{z}4]", M3, 0),
        (DynSlice(((0, ("x",)),)), "[128{y}512]", "[32{x,y}512]", M, 0),
        # Fig. 12 right
        (AllToAll(((0, 1, ("y",)),)), "[1{y,x}8, 8, 8, 1{z}4]", "[2{x}8, 4{y}8, 8, 1{z}4]", M3, 64),
        (AllToAll(((0, 2, ("x",)),)), "[2{x}8, 4{y}8, 8, 1{z}4]", "[8, 4{y}8, 2{x}8, 1{z}4]", M3, 64),
        # Shardy's example: two moves at once
        (
            AllToAll(((0, 2, ("y",)), (1, 3, ("z",)))),
            "[2{y,x}16, 2{z}8, 8, 8]",
            "[4{x}16, 8, 4{y}8, 2{z}8]",
            M3,
            2 * 2 * 8 * 8,
        ),
        (AllPermute(), "[32{x}128]", "[32{y}128]", M, 32),
        (AllPermute(), "[64{y,x}1024, 128]", "[64{x,y}1024, 128]", M, 64 * 128),
    ],
)
def test_typing_rules_and_costs(op: Collective, src: str, dst: str, mesh: Mesh, cost: int) -> None:
    a, b = T(src), T(dst)
    op.check(a, b, mesh)
    if not isinstance(op, AllPermute):
        assert op.infer(a, mesh) == b
    assert op.cost(a, b) == cost


@pytest.mark.parametrize(
    ("op", "src", "dst", "message"),
    [
        (
            AllGather(((0, ("y",)),)),
            "[32{x,y}512, 128]",
            "[128{x}512, 128]",
            "expected dimension 0 to have the minor-most axes of allgather(0{y}), but found [32{x,y}512, 128]",
        ),
        (
            DynSlice(((1, ("x",)),)),
            "[128{x}512, 128]",
            "[128{x}512, 32{x}128]",
            "expected axes unused by [128{x}512, 128], but found dynslice(1{x})",
        ),
        (
            DynSlice(((1, ("x",)),)),
            "[512, 2]",
            "[512, 1{x}2]",
            "expected the local size of dimension 1 to be divisible by the axes of dynslice(1{x}), but found [512, 2]",
        ),
        (
            AllToAll(((0, 1, ("x",)),)),
            "[32{x}128, 2]",
            "[128, 1{x}2]",
            "expected the local size of dimension 1 to be divisible by the axes of "
            "alltoall(0->1{x}), but found [32{x}128, 2]",
        ),
        (
            AllToAll(((0, 0, ("x",)),)),
            "[32{x}128]",
            "[32{x}128]",
            "expected each dimension at most once, but found alltoall(0->0{x})",
        ),
        (
            AllGather(((2, ("x",)),)),
            "[32{x}128]",
            "[128]",
            "expected a dimension below 1, but found 2 in allgather(2{x})",
        ),
        (
            AllPermute(),
            "[32{x}128]",
            "[16{x,y:(1)2}128]",
            "expected allpermute between equal local types, but found [32{x}128] and [16{x,y:(1)2}128]",
        ),
        (
            AllGather(((0, ("x",)),)),
            "[32{x,y}512, 128]",
            "[512, 128]",
            "expected allgather(0{x}) to give [128{y}512, 128], but found [512, 128]",
        ),
    ],
)
def test_ill_typed_collectives_are_refused(op: Collective, src: str, dst: str, message: str) -> None:
    with pytest.raises(TypeNotationError) as e:
        op.check(T(src), T(dst), M)
    assert message in str(e.value)


def test_sub_axis_collectives_use_prime_factors() -> None:
    m = Mesh(x=4, y=6)
    a = T("[3{x}12, 2{y}12]")
    b = AllToAll(((0, 1, ("x:(2)2",)),)).infer(a, m)
    assert str(b) == "[6{x:(1)2}12, 1{x:(2)2,y}12]"
    assert AllGather(((1, ("x:(2)2", "y")),)).infer(b, m) == T("[6{x:(1)2}12, 12]")


def test_step_notation() -> None:
    assert str(AllGather(((0, ("x", "y")), (2, ("z",))))) == "allgather(0{x,y}, 2{z})"
    assert str(DynSlice(((3, ("z",)),))) == "dynslice(3{z})"
    assert str(AllToAll(((0, 1, ("x",)), (2, 3, ("y",))))) == "alltoall(0->1{x}, 2->3{y})"
    assert str(AllPermute()) == "allpermute"


@pytest.mark.parametrize(
    "text",
    ["allgather(0{x,y}, 2{z})", "dynslice(3{z:(1)2})", "alltoall(0->1{x}, 2->3{y})", "allpermute"],
)
def test_step_round_trips(text: str) -> None:
    assert str(Collective.parse(text)) == text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "allscatter(0{x})",
            "expected a collective like allgather(0{x}), dynslice(0{x}), "
            "alltoall(0->1{x}), allpermute or relabel, but found 'allscatter(0{x})'",
        ),
        ("alltoall(0{x})", "expected a group like 0{x} or 0->1{x}, but found '0{x}'"),
        ("allgather(0->1{x})", "expected a group like 0{x} or 0->1{x}, but found '0->1{x}'"),
    ],
)
def test_malformed_steps_are_refused(text: str, message: str) -> None:
    with pytest.raises(TypeNotationError) as e:
        Collective.parse(text)
    assert message in str(e.value)


def test_allpermute_has_no_inferred_type() -> None:
    with pytest.raises(TypeNotationError) as e:
        AllPermute().infer(T("[32{x}128]"), M)
    assert "expected a target type for allpermute, but found none" in str(e.value)
