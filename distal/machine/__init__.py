"""The one machine description: levels (name, shape, processor kind, link), grids of processors with named
dimensions, processor kinds, and links."""

from distal.machine.grid import KINDS, MEMORY_KINDS, PROCESSOR_KINDS, Grid, Machine, ProcessorKind, processor_kind
from distal.machine.level import Level, default_links, machine_levels, node_size
from distal.machine.links import (
    EDR_LASSEN,
    HDR_DGX_A100,
    LINKS,
    NIC,
    NVLINK2_LASSEN,
    NVLINK_V100,
    NVSWITCH_A100,
    PCIE,
    SHARED_MEMORY,
    XBUS_POWER9,
    Link,
    LinkError,
)
from distal.machine.ranks import RANK_LINK, local_ranks, rank_machine, run_processors, running_ranks

__all__ = ["EDR_LASSEN", "HDR_DGX_A100", "KINDS", "LINKS", "MEMORY_KINDS", "NIC", "NVLINK2_LASSEN", "NVLINK_V100",
           "NVSWITCH_A100", "PCIE", "PROCESSOR_KINDS", "RANK_LINK", "SHARED_MEMORY", "XBUS_POWER9", "Grid", "Level",
           "Link", "LinkError", "Machine", "ProcessorKind", "default_links", "local_ranks", "machine_levels",
           "node_size", "processor_kind", "rank_machine", "run_processors", "running_ranks"]
