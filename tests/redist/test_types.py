"""Meshes and distributed types: notation, round trips, Shardy form, well-formedness."""

from __future__ import annotations

import pytest

from distal.errors import TypeNotationError
from distal.redist import Dim, DistType, Mesh


@pytest.mark.parametrize(
    "text",
    ["[32{x,y}512, 128]", "[128{x}512, 32{y}128]", "[16]", "[]", "[3{x:(2)2,y}24, 4]", "[8{}8]"],
)
def test_type_round_trips(text: str) -> None:
    t = DistType.parse(text)
    assert DistType.parse(str(t)) == t


def test_type_parses_quoted_names_and_spaces() -> None:
    t = DistType.parse('[ 8{"devices"}256 , 1024 ]')
    assert t == DistType((Dim(8, ("devices",), 256), Dim(1024, (), 1024)))
    assert str(t) == "[8{devices}256, 1024]"


def test_type_metafunctions() -> None:
    t = DistType.parse("[32{x,y}512, 128]")
    assert t.global_type == (512, 128)
    assert t.local_type == (32, 128)
    assert (t.global_size, t.local_size, t.rank) == (65536, 4096, 2)
    assert t.axes == ("x", "y")


@pytest.mark.parametrize(
    ("text", "shardy"),
    [
        ("[32{x,y}512, 128]", '[{"y", "x"}, {}]'),
        ("[128{x}512, 32{y}128]", '[{"x"}, {"y"}]'),
        ("[3{x:(2)2,y}24, 4]", '[{"y", "x":(2)2}, {}]'),
    ],
)
def test_to_shardy_is_major_to_minor(text: str, shardy: str) -> None:
    assert DistType.parse(text).to_shardy() == shardy


def test_mesh_notation() -> None:
    m = Mesh(x=4, y=4)
    assert str(m) == "{x: 4, y: 4}"
    assert Mesh.parse(str(m)) == m == Mesh.parse("x=4,y=4") == Mesh.parse('{"x": 4, "y": 4}')
    assert m.names == ("x", "y") and m.size == 16
    assert [str(f) for f in Mesh(y=12).factors] == ["y:(1)2", "y:(2)2", "y:(4)3"]


def test_factor_lists_and_sub_axes() -> None:
    m = Mesh(x=4, y=6)
    t = DistType.parse("[3{x}12, 2{y}12]")
    # minor-to-major: x's minor factor (index 1) first
    assert t.factor_lists(m) == ((1, 0), (3, 2))
    split = DistType.parse("[1{y:(2)3,x,y:(1)2}24]")
    assert split.factor_lists(m) == ((3, 1, 0, 2),)
    back = DistType.from_factor_lists(m, ((1,), (0, 3, 2)), (24, 24))
    assert str(back) == "[12{x:(2)2}24, 2{x:(1)2,y}24]"


def test_well_formed_types_pass() -> None:
    DistType.parse("[32{x,y}512, 128]").check(Mesh(x=4, y=4))
    DistType.parse("[1{x:(2)2}2, 1{x:(1)2}2]").check(Mesh(x=4))


@pytest.mark.parametrize(
    ("text", "mesh", "message"),
    [
        ("[32{x,x}512]", "x=4", "expected every axis at most once, but found x twice in [32{x,x}512]"),
        (
            "[32{x}512]",
            "x=4",
            "expected dimension 0 to have global size 32*4 = 128 (local size "
            "times the size of its axes), but found 512 in [32{x}512]",
        ),
        ("[32{z}128]", "x=4", "expected an axis of mesh {x: 4}, but found 'z'"),
        (
            "[4{x:(1)3}12]",
            "x=12",
            "expected a sub-axis made of the prime factors 2*2*3 of axis x, but found x:(1)3",
        ),
        ("[1{x}4, 2{x:(2)2}4]", "x=4", "expected every axis at most once, but found x:(2)2 overlapping x"),
    ],
)
def test_ill_formed_types_are_refused(text: str, mesh: str, message: str) -> None:
    with pytest.raises(TypeNotationError) as e:
        DistType.parse(text).check(Mesh.parse(mesh))
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("32{x}128", "expected a distributed type in brackets like [32{x}128, 64], but found '32{x}128'"),
        ("[32{x}]", "expected a dimension like 128 or 32{x,y}512, but found '32{x}'"),
        ("[32{x y}128]", "expected an axis like x or x:(1)2, but found 'x y'"),
        ("[0]", "expected a positive integer size, but found 0"),
    ],
)
def test_malformed_type_text_is_refused(text: str, message: str) -> None:
    with pytest.raises(TypeNotationError) as e:
        DistType.parse(text)
    assert message in str(e.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=4,x=2", "expected distinct axis names, but found 'x' twice"),
        ("x=0", "expected a positive integer size for axis x, but found 0"),
        ("x:four", "expected a mesh axis like x=4, but found 'x:four'"),
        ("", "expected at least one mesh axis, but found none"),
    ],
)
def test_malformed_meshes_are_refused(text: str, message: str) -> None:
    with pytest.raises(TypeNotationError) as e:
        Mesh.parse(text)
    assert message in str(e.value)


def test_mesh_refuses_bad_axis_names_and_unknown_axes() -> None:
    with pytest.raises(TypeNotationError) as e:
        Mesh((("1x", 2),))
    assert "expected an axis name, but found '1x'" in str(e.value)
    with pytest.raises(TypeNotationError) as e:
        Mesh(x=2).axis_size("y")
    assert "expected an axis of mesh {x: 2}, but found 'y'" in str(e.value)
    assert Mesh(axes=2).names == ("axes",)


def test_type_refuses_non_dims() -> None:
    with pytest.raises(TypeNotationError) as e:
        DistType((Dim(2, (), 2), 3))  # type: ignore[arg-type]
    assert "expected a Dim, but found 3" in str(e.value)
    with pytest.raises(TypeNotationError) as e:
        Dim(4, ("x y",), 8)
    assert "expected an axis like x or x:(1)2, but found 'x y'" in str(e.value)
