"""The one description of a machine's levels (distal.machine.level): what a level is, its errors, and the levels
of a format's machine."""

from __future__ import annotations

import pytest

from distal.errors import MachineError
from distal.machine import (
    NIC,
    NVLINK2_LASSEN,
    NVSWITCH_A100,
    SHARED_MEMORY,
    Grid,
    Level,
    Link,
    Machine,
    default_links,
    machine_levels,
    node_size,
)


def test_a_level_is_a_name_a_shape_a_processor_kind_and_a_link() -> None:
    lv = Level("gpu", 16, NVSWITCH_A100, "gpu")
    assert (lv.name, lv.shape, lv.kind, lv.link, lv.size, lv.ndim) == ("gpu", (16,), "gpu", NVSWITCH_A100, 16, 1)
    grid = Level("l0", (2, 3), NIC)
    assert (grid.shape, grid.size, grid.ndim, grid.kind) == ((2, 3), 6, 2, None)
    assert Level("gpu", 16, NVSWITCH_A100) == Level("gpu", (16,), NVSWITCH_A100)
    assert len({Level("a", 2, NIC), Level("a", (2,), NIC)}) == 1


@pytest.mark.parametrize(
    ("level", "text", "expression"),
    [
        (Level("gpu", 16, NVSWITCH_A100), "gpu 16 nvswitch(270 GB/s, 2 us)", "Level('gpu', 16, NVSWITCH_A100)"),
        (Level("l0", (2, 2), NIC, "cpu"), "l0 2x2 nic(8 GB/s, 10 us)", "Level('l0', (2, 2), NIC, kind='cpu')"),
        (Level("socket", 2, NVLINK2_LASSEN, "gpu"), "socket 2 nvlink2(75 GB/s, 2 us)",
         "Level('socket', 2, NVLINK2_LASSEN, kind='gpu')"),
        (Level("ring", 4, Link("ring", 5e10, 1e-6)), "ring 4 ring(50 GB/s, 1 us)",
         "Level('ring', 4, Link('ring', 50000000000.0, 1e-06))"),
    ],
)
def test_a_level_prints_itself_and_the_expression_that_makes_it(level: Level, text: str, expression: str) -> None:
    import distal.machine

    assert str(level) == text
    assert repr(level) == expression
    assert eval(expression, {name: getattr(distal.machine, name) for name in distal.machine.__all__}) == level


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Level("a b", 2, NIC), "expected an identifier as the name of a level, but found 'a b'"),
        (lambda: Level("gpu", 0, NIC), "expected a positive size or shape for level gpu, but found 0"),
        (lambda: Level("gpu", (2, 0), NIC), r"expected a positive size or shape for level gpu, but found (2, 0)"),
        (lambda: Level("gpu", (), NIC), "expected a positive size or shape for level gpu, but found ()"),
        (lambda: Level("gpu", True, NIC), "expected a positive size or shape for level gpu, but found True"),
        (lambda: Level("gpu", 2, "nic"), "expected a Link joining the units of level gpu, but found 'nic'"),  # type: ignore[arg-type]
        (lambda: Level("gpu", 2, NIC, "tpu"), "expected a processor kind (cpu, gpu, omp) for level gpu, but found 'tpu'"),
        (lambda: machine_levels("m"), "expected a distal Machine, but found 'm'"),  # type: ignore[arg-type]
        (lambda: machine_levels(Machine(Grid(2), Grid(2)), [NIC]),
         "expected 2 links (one per machine level), but found 1"),
    ],
)
def test_level_errors(make: object, message: str) -> None:
    with pytest.raises(MachineError) as info:
        make()  # type: ignore[operator]
    assert info.value.message == message


def test_the_levels_of_a_formats_machine() -> None:
    m = Machine(Grid(2, 2), Grid(4, kind="gpu"))
    assert machine_levels(m) == (Level("l0", (2, 2), NIC, "cpu"), Level("l1", 4, NVSWITCH_A100, "gpu"))
    assert [lv.size for lv in machine_levels(m)] == [g.size for g in m.grids]
    assert default_links(Machine(Grid(4))) == (SHARED_MEMORY,)
    assert default_links(Machine(Grid(4, kind="gpu"))) == (NVSWITCH_A100,)
    assert default_links(Machine(Grid(2), Grid(2), Grid(2))) == (NIC, SHARED_MEMORY, SHARED_MEMORY)
    assert machine_levels(Machine(Grid(3)), [NIC]) == (Level("l0", 3, NIC, "cpu"),)
    with pytest.raises(MachineError, match="expected concrete grid sizes"):
        import distal as dt

        machine_levels(Machine(Grid(dt.Param("gx"))))


def test_where_a_node_ends() -> None:
    assert node_size(Machine(Grid(2, 2), Grid(4, kind="gpu"))) == 4
    assert node_size(Machine(Grid(2), Grid(2), Grid(2, 3))) == 12
    assert node_size(Machine(Grid(4))) is None
    with pytest.raises(MachineError, match="expected a distal Machine"):
        node_size("m")  # type: ignore[arg-type]


def test_a_malformed_link_is_a_machine_error() -> None:
    from distal.errors import ReductionError
    from distal.machine import LinkError

    with pytest.raises(MachineError) as info:
        Link("nic", 0, 1e-6)
    assert isinstance(info.value, LinkError) and isinstance(info.value, ReductionError)
    assert info.value.message == "expected a positive bandwidth for interconnect nic, but found 0"
