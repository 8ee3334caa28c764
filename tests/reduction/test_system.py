"""Systems, levels, interconnects and their errors."""

from __future__ import annotations

import pytest

from distal.errors import ReductionError
from distal.machine.grid import Grid, Machine
from distal.machine.level import machine_levels
from distal.reduction import (
    NIC,
    NVLINK_V100,
    NVSWITCH_A100,
    SHARED_MEMORY,
    Level,
    Link,
    System,
    a100_system,
    named_system,
    parse_levels,
    system_from_machine,
    v100_system,
)


def test_paper_systems() -> None:
    assert a100_system(4).cardinalities == (4, 16)
    assert v100_system(2).cardinalities == (2, 8)
    assert a100_system(2).levels[1].link is NVSWITCH_A100
    assert v100_system(2).levels[1].link is NVLINK_V100
    assert NIC.bandwidth == 8e9 and NVLINK_V100.bandwidth == 135e9
    assert named_system("A100x4") == a100_system(4)


def test_coords_round_trip() -> None:
    s = System((Level("rack", 1, NIC), Level("server", 2, NIC), Level("cpu", 2, NIC),
                Level("gpu", 4, NVSWITCH_A100)))
    assert s.size == 16
    for d in range(16):
        assert s.device(s.coords(d)) == d
    assert s.coords(13) == (0, 1, 1, 1)


def test_parse_levels_defaults() -> None:
    s = parse_levels("node=2,gpu=16")
    assert s == a100_system(2)
    s = parse_levels("node=4, socket=2, core=8")
    assert [lv.link for lv in s.levels] == [NIC, SHARED_MEMORY, SHARED_MEMORY]


def test_system_from_machine() -> None:
    s = system_from_machine(Machine(Grid(2, 2), Grid(4)))
    assert s.cardinalities == (4, 4)
    assert [lv.link for lv in s.levels] == [NIC, NVSWITCH_A100]
    cpu = system_from_machine(Machine(Grid(2), Grid(8)), gpus=False)
    assert cpu.levels[1].link is SHARED_MEMORY
    one = system_from_machine(Machine(Grid(4)))
    assert one.cardinalities == (4,) and one.levels[0].link is NVSWITCH_A100
    custom = system_from_machine(Machine(Grid(2), Grid(8)), interconnects=[NIC, NVLINK_V100])
    assert custom == System((Level("l0", 2, NIC, "cpu"), Level("l1", 8, NVLINK_V100, "cpu")))
    # the machine's levels, as distal.machine describes them: its grids' shapes and processor kinds
    grid = system_from_machine(Machine(Grid(2, 2), Grid(4, kind="gpu")))
    assert [(lv.name, lv.shape, lv.kind) for lv in grid.levels] == [("l0", (2, 2), "cpu"), ("l1", (4,), "gpu")]
    assert grid.levels == machine_levels(Machine(Grid(2, 2), Grid(4, kind="gpu")), [NIC, NVSWITCH_A100])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: Link("nic", 0, 1e-6),
            "expected a positive bandwidth for interconnect nic, but found 0",
        ),
        (
            lambda: Link("nic", 1e9, -1),
            "expected a non-negative latency for interconnect nic, but found -1",
        ),
        (lambda: Link("a b", 1e9, 0), "expected an identifier as interconnect name, but found 'a b'"),
        (
            lambda: System((Level("root", 2, NIC),)),
            "expected an identifier other than 'root' as level name, but found 'root'",
        ),
        (lambda: System(()), "expected a non-empty tuple of levels, but found ()"),
        (
            lambda: System((Level("a", 2, NIC), Level("a", 2, NIC))),
            "expected distinct level names, but found ['a', 'a']",
        ),
        (lambda: a100_system(2).coords(32), "expected a device id in [0, 32), but found 32"),
        (lambda: named_system("h100x2"), "expected a system name like a100x2 or v100x4, but found 'h100x2'"),
        (lambda: parse_levels(""), "expected levels like node=2,gpu=16, but found ''"),
        (
            lambda: parse_levels("node:2"),
            "expected a level like gpu=16 or gpu=16:nvswitch, but found 'node:2'",
        ),
        (
            lambda: parse_levels("node=2:infiniband"),
            "expected an interconnect of ['nic', 'nvlink', 'nvswitch', 'pcie', 'shm'], but found "
            "'infiniband'",
        ),
        (
            lambda: system_from_machine("m"),  # type: ignore[arg-type]
            "expected a distal Machine, but found 'm'",
        ),
        (
            lambda: system_from_machine(Machine(Grid(2), Grid(2)), interconnects=[NIC]),
            "expected 2 interconnects (one per machine level), but found 1",
        ),
    ],
)
def test_errors(build: object, message: str) -> None:
    with pytest.raises(ReductionError) as info:
        build()  # type: ignore[operator]
    assert info.value.message == message


def test_the_simulator_and_the_time_model_share_one_link_description() -> None:
    from distal.machine import links

    assert NIC is links.NIC and NVSWITCH_A100 is links.NVSWITCH_A100
    assert parse_levels("node=2,gpu=4:nvlink").levels[1].link is links.NVLINK_V100


def test_a_system_is_a_tuple_of_the_machines_levels() -> None:
    from distal.machine.level import Level as MachineLevel

    assert Level is MachineLevel
    assert a100_system(2).levels == (MachineLevel("node", 2, NIC), MachineLevel("gpu", (16,), NVSWITCH_A100))
    assert repr(a100_system(2)) == "System((Level('node', 2, NIC), Level('gpu', 16, NVSWITCH_A100)))"
    assert a100_system(2).describe() == "node 2 nic(8 GB/s, 10 us)\ngpu 16 nvswitch(270 GB/s, 2 us)"
    assert str(system_from_machine(Machine(Grid(2, 2), Grid(4)))) == "[(l0, 4), (l1, 4)]"
    with pytest.raises(ReductionError, match=r"expected distal\.machine levels, but found"):
        System((("gpu", 2, NIC),))  # type: ignore[arg-type]
