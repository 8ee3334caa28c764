"""Formats as distributed types and plans between formats (pure; no Legate)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import distal as dt
from distal.errors import FormatError
from distal.format.layout import DimLayout, axis_names, layout
from distal.redist import AllGather, CollectiveProgram
from distal.redist.formats import Repad, dist_type, mesh_of, plan_redistribution
from distal.redist.simulate import offsets

M22 = dt.Machine(dt.Grid(2, 2))
M222 = dt.Machine(dt.Grid(2, 2, 2))
M4 = dt.Machine(dt.Grid(4))
M24 = dt.Machine(dt.Grid(2, 4))
MH = dt.Machine(dt.Grid(2, 2), dt.Grid(2))

FORMATS_22 = ["xy -> xy", "xy -> yx", "xy -> x*", "xy -> *x", "xy -> y*", "xy -> **", "xy -> x0", "xy -> 1y"]


@pytest.mark.parametrize(
    ("spec", "machine", "shape", "text", "fixed"),
    [
        ("xy -> xy", M22, (4, 6), "[2{x}4, 3{y}6]", ()),
        ("xy -> yx", M22, (4, 6), "[2{y}4, 3{x}6]", ()),
        ("xy -> x*", M22, (5, 3), "[3{x}6, 3]", ()),
        ("xy -> **", M22, (5, 3), "[5, 3]", ()),
        ("xy -> x0", M22, (5, 3), "[3{x}6, 3]", (("y", 0),)),
        ("xy -> xy0", M222, (4, 4), "[2{x}4, 2{y}4]", (("z", 0),)),
        ("xy -> xy*", M222, (3, 3), "[2{x}4, 2{y}4]", ()),
        ("xy -> x", M4, (10, 3), "[3{x}12, 3]", ()),
        ("xy -> y", M4, (3, 10), "[3, 3{x}12]", ()),
        (["xy -> xy", "xy -> x"], MH, (5, 4), "[2{x_1,x}8, 2{y}4]", ()),
        (["xy -> x*", "xy -> 1"], MH, (5, 4), "[3{x}6, 4]", (("x_1", 1),)),
    ],
)
def test_format_types(spec: object, machine: dt.Machine, shape: tuple[int, ...], text: str, fixed: object) -> None:
    lay = layout(dt.Format(spec, machine), shape)  # type: ignore[arg-type]
    assert str(dist_type(lay)) == text
    assert lay.fixed == fixed
    assert lay.axes == mesh_of(machine).axes
    dist_type(lay).check(mesh_of(machine))


def test_mesh_names_follow_the_machine() -> None:
    assert str(mesh_of(M222)) == "{x: 2, y: 2, z: 2}"
    assert axis_names(MH) == (("x", "y"), ("x_1",))
    m = dt.Machine(dt.Grid(2, names=("x_1",)), dt.Grid(2, names=("x",)))
    assert axis_names(m) == (("x_1",), ("x_2",))


@pytest.mark.parametrize("n", [0, 1, 4, 5, 7])
def test_positions_match_the_format_tiles(n: int) -> None:
    """Every element sits in the padded block of the device the format gives it to."""
    for spec, machine in [("xy -> x*", M22), (["xy -> xy", "xy -> x"], MH), ("xy -> yx", M24)]:
        fmt = dt.Format(spec, machine)  # type: ignore[arg-type]
        lay = layout(fmt, (n, 3))
        pos = lay.positions()
        t, mesh = dist_type(lay), mesh_of(machine)
        for color, bounds in fmt.tiles((n, 3)):
            owners = fmt.owners(color)
            for i, j in itertools.product(range(*bounds[0]), range(*bounds[1])):
                for device in owners:
                    off = offsets(t, mesh, device)
                    assert off == lay.offset(device)
                    assert off[0] <= pos[0][i] < off[0] + lay.tile[0]
                    assert off[1] <= pos[1][j] < off[1] + lay.tile[1]


def test_pad_and_crop_round_trip() -> None:
    a = np.arange(35.0).reshape(5, 7)
    lay = layout(dt.Format(["xy -> xy", "xy -> x"], MH), a.shape)
    padded = lay.pad(a)
    assert padded.shape == lay.padded == (8, 8)
    assert np.array_equal(lay.crop(padded), a)
    assert DimLayout(5, 8, (("x", 2, 3), ("x_1", 2, 2))).positions().tolist() == [0, 1, 2, 4, 5]


def _check_plan(src: dt.Format, dst: dt.Format, shape: tuple[int, ...], method: str = "search") -> None:
    plan = plan_redistribution(src, dst, shape, method)
    a = np.arange(1, 1 + int(np.prod(shape)), dtype=np.int64).reshape(shape)
    stage_src = plan.source
    for stage in plan.stages:
        if isinstance(stage, CollectiveProgram):
            # raises if any step leaves a device with the wrong tile
            global_array = stage_src.pad(a) if stage is plan.stages[0] else plan.target.pad(a)
            stage.simulate(global_array)
        else:
            assert isinstance(stage, Repad)
    assert plan.programs[0].source == dist_type(plan.source)
    assert plan.programs[-1].target == dist_type(plan.target)
    if len(plan.stages) == 1 and method == "search":
        assert plan.programs[0].height <= plan.bound
        assert plan.cost <= plan.naive_cost
    assert plan.height >= max(np.prod(plan.source.tile), np.prod(plan.target.tile))


@pytest.mark.parametrize("shape", [(4, 6), (5, 3), (1, 1)])
def test_every_pair_on_2x2(shape: tuple[int, int]) -> None:
    fmts = [dt.Format(s, M22) for s in FORMATS_22]
    for src, dst in itertools.product(fmts, fmts):
        _check_plan(src, dst, shape)
        _check_plan(src, dst, shape, "naive")


def test_pairs_on_other_machines() -> None:
    groups = [
        (M222, ["xy -> xy*", "xy -> xy0", "xy -> x1y", "xy -> *yx", "xy -> **0"], [(3, 5), (4, 4)]),
        (M4, ["xy -> x", "xy -> y", "xy -> *", "xy -> 2"], [(5, 3), (8, 4)]),
        (M24, ["xy -> xy", "xy -> yx", "xy -> x*", "xy -> *y", "xy -> 0x"], [(5, 6), (8, 8)]),
        (
            MH,
            [["xy -> xy", "xy -> x"], ["xy -> xy", "xy -> y"], ["xy -> x*", "xy -> y"], ["xy -> **", "xy -> *"]],
            [(5, 7), (4, 8)],
        ),
    ]
    for machine, specs, shapes in groups:
        fmts = [dt.Format(s, machine) for s in specs]  # type: ignore[arg-type]
        for shape in shapes:
            for src, dst in itertools.product(fmts, fmts):
                _check_plan(src, dst, shape)


def test_same_format_is_free() -> None:
    fmt = dt.Format("xy -> xy", M22)
    plan = plan_redistribution(fmt, fmt, (5, 5))
    assert plan.steps == () and plan.cost == 0


def test_conflicting_padding_repads_a_gathered_dimension() -> None:
    """5 rows over 2 parts pad to 6; over 4 parts to 8: gather, repad, slice."""
    plan = plan_redistribution(dt.Format("xy -> x*", M24), dt.Format("xy -> *x", M24), (5, 4))
    kinds = [type(s).__name__ for s in plan.steps]
    assert "Repad" in kinds
    assert len(plan.programs) == 2
    assert isinstance(plan.steps[0], AllGather)
    assert "repad(0)" in str(plan)
    with pytest.raises(FormatError, match="expected one program, but found 2"):
        _ = plan.program


def test_fixed_faces_are_explained() -> None:
    plan = plan_redistribution(dt.Format("xy -> x0", M22), dt.Format("xy -> y1", M22), (4, 4))
    text = str(plan)
    assert "on the face y=0" in text and "on the face y=1" in text
    assert "expand" in text and "restrict" in text
    assert plan.cost == plan.expand_cost + plan.program.cost
    assert plan.expand_cost == 8


def test_refuses_formats_on_different_machines() -> None:
    with pytest.raises(FormatError, match="expected formats on the same machine, but found xy -> xy on"):
        plan_redistribution(dt.Format("xy -> xy", M22), dt.Format("xy -> xy", M24), (4, 4))


def test_refuses_formats_of_different_orders() -> None:
    with pytest.raises(FormatError, match="expected formats of the same order, but found xy -> xy of order 2"):
        plan_redistribution(dt.Format("xy -> xy", M22), dt.Format("xyz -> xy", M22), (4, 4))


def test_refuses_something_else_than_a_format() -> None:
    with pytest.raises(FormatError, match="expected a Format as the target of a redistribution, but found 'xy'"):
        plan_redistribution(dt.Format("xy -> xy", M22), "xy", (4, 4))  # type: ignore[arg-type]


def test_refuses_a_shape_of_the_wrong_order() -> None:
    with pytest.raises(FormatError, match="expected a shape of 2 non-negative extent"):
        layout(dt.Format("xy -> xy", M22), (4,))
