"""The time model's machines are distal.machine levels: a node's levels, the hierarchy of nodes, and the reduction
synthesizer reading the same hierarchy."""

from __future__ import annotations

import pytest

from distal.machine import EDR_LASSEN, NVLINK2_LASSEN, NVSWITCH_A100, XBUS_POWER9, Level, Link
from distal.model import calibrate, hardware
from distal.model.hardware import EDR_FROM_FRAMEBUFFER, MachineModel, ModelError
from distal.reduction import System, plan_reduction

FAST = Link("fast", 1e10, 0.0)


def test_a_nodes_levels_are_the_machines_levels() -> None:
    gpu = hardware.lassen_gpu()
    assert gpu.levels == (Level("socket", 2, XBUS_POWER9, "gpu"), Level("gpu", 2, NVLINK2_LASSEN, "gpu"))
    assert gpu.node_levels == gpu.levels and gpu.levels[0].link == gpu.intra
    assert hardware.lassen_cpu().node_levels == (Level("cpu", 2, XBUS_POWER9, "cpu"),)
    assert hardware.dgx_a100().node_levels == (Level("gpu", 8, NVSWITCH_A100, "gpu"),)
    assert gpu.hierarchy(4) == (Level("node", 4, EDR_FROM_FRAMEBUFFER, "gpu"), *gpu.levels)
    assert hardware.lassen_cpu().hierarchy(2)[0] == Level("node", 2, EDR_LASSEN, "cpu")


def test_the_reduction_synthesizer_reads_the_time_models_machine() -> None:
    machine = hardware.lassen_gpu().hierarchy(2)
    system = System(machine)
    assert system.levels == machine and system.cardinalities == (2, 2, 2)
    assert system.describe() == ("node 2 edr_fb(18 GB/s, 1.5 us)\nsocket 2 xbus(64 GB/s, 1 us)\n"
                                 "gpu 2 nvlink2(75 GB/s, 2 us)")
    plan = plan_reduction(system, range(8))
    assert plan.layout.system == system and plan.speedup >= 1.0


def test_copies_cross_the_link_of_the_innermost_level_holding_both_ends() -> None:
    m = hardware.lassen_gpu()
    assert [m.distance(0, q) for q in range(6)] == [0, 1, 2, 2, 3, 3]
    assert [m.level_name(d) for d in range(4)] == ["none", "socket", "node", "network"]
    assert [m.link_at(d) for d in (1, 2, 3)] == [NVLINK2_LASSEN, XBUS_POWER9, EDR_FROM_FRAMEBUFFER]
    flat = hardware.dgx_a100()
    assert [flat.distance(0, q) for q in (0, 7, 8)] == [0, 1, 2] and flat.level_name(1) == "node"


def test_a_new_node_size_rescales_the_outermost_level_or_drops_the_levels() -> None:
    m = hardware.lassen_gpu()
    assert [lv.shape for lv in m.with_(per_node=8).levels] == [(4,), (2,)]
    assert [lv.shape for lv in m.with_(per_node=2).levels] == [(1,), (2,)]
    assert m.with_(per_node=3).levels == () and m.with_(per_node=1).levels == ()
    assert m.with_(intra=FAST).levels[0].link == FAST
    assert m.with_(per_node=8).describe() == m.describe().replace("4 gpu per node", "8 gpu per node")


@pytest.mark.parametrize(
    ("levels", "message"),
    [
        ((Level("socket", 4, FAST),), "expected node levels whose sizes multiply to the 6 processors of a node, "
                                      "the outermost joined by fast(10 GB/s, 0 us), but found socket 4 fast"),
        ((Level("socket", 3, XBUS_POWER9), Level("gpu", 2, FAST)), "the outermost joined by fast(10 GB/s, 0 us), "
                                                                   "but found socket 3 xbus"),
        ((Level("socket", 3, FAST, "cpu"), Level("gpu", 2, FAST)),
         "expected node levels of gpu processors, but found cpu in socket 3 fast"),
        (("socket",), "expected distal.machine levels inside a node, but found ('socket',)"),
    ],
)
def test_node_level_errors(levels: tuple[Level, ...], message: str) -> None:
    gpu = hardware.lassen_gpu().processor
    with pytest.raises(ModelError) as info:
        MachineModel("bad", gpu, 6, FAST, FAST, levels=levels)
    assert message in info.value.message


def test_presets_by_name_and_this_machine() -> None:
    assert calibrate.preset("Lassen-GPU") == hardware.lassen_gpu()
    assert calibrate.preset("dgx_a100") == hardware.dgx_a100()
    pinned = calibrate.pinned_model("tests/_data/machine-model.json")
    assert pinned.node_levels == (Level("cpu", 1 << 16, pinned.intra, "cpu"),)
    with pytest.raises(ModelError, match="expected a machine model"):
        calibrate.preset("summit")
