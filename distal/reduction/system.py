"""Hierarchical systems: the reduction synthesizer's reading of a machine's levels.

A `System` is the hardware hierarchy of section 2 of
papers/hierarchical-reduction-synthesis.txt: a tuple of `distal.machine`
levels (`distal.machine.level.Level`: a name, a shape, a processor kind, a
link) from the outermost (nodes) to the innermost (devices). The synthesizer
reads a level's name, its size (the paper's cardinality: the units of a
level, flattened row-major) and its link (the paper's interconnect). The
link of level j joins the children of one level-(j-1) instance: the link of
the `node` level is the data-center network reached through each node's NIC,
the link of the `gpu` level is the NVSwitch or NVLink ring inside a node.
Every child has one port of the link's bandwidth in each direction (a
switched network). Bandwidths are in bytes per second, latencies in seconds.

Devices are numbered row-major over the levels (the outermost level varies
slowest), so device `d` of a `System([node 2, gpu 16])` sits on node `d // 16`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from distal.errors import ReductionError
from distal.machine.grid import Machine
from distal.machine.level import Level, machine_levels
from distal.machine.links import NIC, NVLINK_V100, NVSWITCH_A100, PCIE, SHARED_MEMORY, Link

__all__ = [
    "NIC",
    "NVLINK_V100",
    "NVSWITCH_A100",
    "PCIE",
    "SHARED_MEMORY",
    "System",
    "a100_system",
    "named_system",
    "parse_levels",
    "system_from_machine",
    "v100_system",
]


@dataclass(frozen=True, slots=True)
class System:
    """A hardware hierarchy, outermost level first.

    >>> s = a100_system(2)
    >>> s.cardinalities, s.size
    ((2, 16), 32)
    >>> s.coords(17)
    (1, 1)
    >>> print(s)
    [(node, 2), (gpu, 16)]
    """

    levels: tuple[Level, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.levels, tuple) or not self.levels:
            raise ReductionError(f"expected a non-empty tuple of levels, but found {self.levels!r}")
        for lv in self.levels:
            if not isinstance(lv, Level):
                raise ReductionError(f"expected distal.machine levels, but found {lv!r}")
            if lv.name == "root":
                raise ReductionError(
                    f"expected an identifier other than 'root' as level name, but found {lv.name!r}"
                )
        names = [lv.name for lv in self.levels]
        if len(set(names)) != len(names):
            raise ReductionError(f"expected distinct level names, but found {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(lv.name for lv in self.levels)

    @property
    def cardinalities(self) -> tuple[int, ...]:
        """Each level's size (its units flattened row-major)."""
        return tuple(lv.size for lv in self.levels)

    @property
    def size(self) -> int:
        return math.prod(self.cardinalities)

    def coords(self, device: int) -> tuple[int, ...]:
        """The coordinates (one per level) of a device id."""
        if not 0 <= device < self.size:
            raise ReductionError(
                f"expected a device id in [0, {self.size}), but found {device!r}", self
            )
        out = []
        for c in reversed(self.cardinalities):
            out.append(device % c)
            device //= c
        return tuple(reversed(out))

    def device(self, coords: tuple[int, ...]) -> int:
        """The device id of per-level coordinates (inverse of `coords`)."""
        d = 0
        for c, x in zip(self.cardinalities, coords, strict=True):
            d = d * c + x
        return d

    def level_texts(self) -> tuple[str, ...]:
        """Each level as the synthesizer reads it: name, size and link (`gpu 16 nvswitch(270 GB/s, 2 us)`)."""
        return tuple(f"{lv.name} {lv.size} {lv.link}" for lv in self.levels)

    def describe(self) -> str:
        """One line per level with its link."""
        return "\n".join(self.level_texts())

    def __str__(self) -> str:
        return "[" + ", ".join(f"({lv.name}, {lv.size})" for lv in self.levels) + "]"

    def __repr__(self) -> str:
        """The expression that makes it: `System((Level('node', 2, NIC), Level('gpu', 16, NVSWITCH_A100)))`."""
        inner = ", ".join(repr(lv) for lv in self.levels)
        return f"System(({inner}{',' if len(self.levels) == 1 else ''}))"


def a100_system(nodes: int) -> System:
    """The paper's A100 system (Figure 9a): nodes of 16 GPUs on one NVSwitch, one NIC each."""
    return System((Level("node", nodes, NIC), Level("gpu", 16, NVSWITCH_A100)))


def v100_system(nodes: int) -> System:
    """The paper's V100 system (Figure 9b): nodes of 8 GPUs on an NVLink ring, one NIC each.

    As in the paper the 8 GPUs of a node form one level (the NVLink ring is far
    faster than the PCIe bridges, so the two CPU domains are not a level).
    """
    return System((Level("node", nodes, NIC), Level("gpu", 8, NVLINK_V100)))


_NAMED = re.compile(r"^(a100|v100)x(\d+)$")


def named_system(name: str) -> System:
    """`a100x2`, `a100x4`, `v100x2`, ...: the paper's systems with that many nodes.

    >>> named_system("v100x4").cardinalities
    (4, 8)
    """
    m = _NAMED.match(name.strip().lower())
    if m is None or int(m.group(2)) < 1:
        raise ReductionError(
            f"expected a system name like a100x2 or v100x4, but found {name!r}"
        )
    nodes = int(m.group(2))
    return a100_system(nodes) if m.group(1) == "a100" else v100_system(nodes)


_PARSED_LINKS = {ln.name: ln for ln in (NIC, PCIE, NVLINK_V100, NVSWITCH_A100, SHARED_MEMORY)}


def parse_levels(text: str) -> System:
    """A system from `name=card[:interconnect],...`, e.g. `node=2,gpu=16`.

    Without an interconnect the outermost level gets `nic`, inner levels named
    like `gpu` get `nvswitch`, other inner levels `shm`. Link names are
    nic, pcie, nvlink, nvswitch, shm.

    >>> print(parse_levels("node=2,gpu=8:nvlink").describe())
    node 2 nic(8 GB/s, 10 us)
    gpu 8 nvlink(135 GB/s, 2 us)
    """
    levels = []
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ReductionError(f"expected levels like node=2,gpu=16, but found {text!r}")
    for idx, part in enumerate(parts):
        m = re.match(r"^([A-Za-z_]\w*)=(\d+)(?::(\w+))?$", part)
        if m is None:
            raise ReductionError(f"expected a level like gpu=16 or gpu=16:nvswitch, but found {part!r}")
        name, card, ic_name = m.group(1), int(m.group(2)), m.group(3)
        if ic_name is None:
            ic = _default_link(idx, name)
        elif ic_name in _PARSED_LINKS:
            ic = _PARSED_LINKS[ic_name]
        else:
            raise ReductionError(
                f"expected an interconnect of {sorted(_PARSED_LINKS)}, but found {ic_name!r}"
            )
        levels.append(Level(name, card, ic))
    return System(tuple(levels))


def _default_link(index: int, name: str) -> Link:
    if index == 0:
        return NIC
    if "gpu" in name.lower():
        return NVSWITCH_A100
    return SHARED_MEMORY


def system_from_machine(
    machine: Machine,
    interconnects: tuple[Link, ...] | list[Link] | None = None,
    gpus: bool = True,
) -> System:
    """The system of a distal hierarchical `Machine`: its levels (`distal.machine.level.machine_levels`).

    Machine level i becomes level `l{i}` with the grid's shape (its size is
    the cardinality) and processor kind. Default links: level 0 is the NIC
    between nodes; inner levels are the A100 NVSwitch when `gpus` (processors
    are GPUs), shared memory otherwise. A one-level machine is a single node
    (its level gets NVSwitch or shared memory).

    >>> from distal.machine.grid import Grid, Machine
    >>> print(system_from_machine(Machine(Grid(2, 2), Grid(4))).describe())
    l0 4 nic(8 GB/s, 10 us)
    l1 4 nvswitch(270 GB/s, 2 us)
    """
    if not isinstance(machine, Machine):
        raise ReductionError(f"expected a distal Machine, but found {machine!r}")
    n = machine.levels
    if interconnects is None:
        inner = NVSWITCH_A100 if gpus else SHARED_MEMORY
        links: tuple[Link, ...] = (inner,) if n == 1 else (NIC,) + (inner,) * (n - 1)
    else:
        links = tuple(interconnects)
        if len(links) != n:
            raise ReductionError(
                f"expected {n} interconnects (one per machine level), but found {len(links)}", machine
            )
    return System(machine_levels(machine, links))
