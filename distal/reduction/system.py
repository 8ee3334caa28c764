"""Hierarchical systems: named levels with cardinalities, one interconnect per level.

A `System` is the hardware hierarchy of section 2 of
papers/hierarchical-reduction-synthesis.txt: a list of `Level`s from the
outermost (nodes) to the innermost (devices). The interconnect of level j joins
the children of one level-(j-1) instance: the interconnect of the `node` level
is the data-center network reached through each node's NIC, the interconnect
of the `gpu` level is the NVSwitch or NVLink ring inside a node. Every child has
one port of the interconnect's bandwidth in each direction (a switched
network). Bandwidths are in bytes per second, latencies in seconds.

Devices are numbered row-major over the levels (the outermost level varies
slowest), so device `d` of a `System([node 2, gpu 16])` sits on node `d // 16`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from distal.errors import ReductionError
from distal.machine.grid import Machine
from distal.machine.links import NIC, NVLINK_V100, NVSWITCH_A100, PCIE, SHARED_MEMORY, Link

__all__ = [
    "NIC",
    "NVLINK_V100",
    "NVSWITCH_A100",
    "PCIE",
    "SHARED_MEMORY",
    "Interconnect",
    "Level",
    "System",
    "a100_system",
    "named_system",
    "parse_levels",
    "system_from_machine",
    "v100_system",
]

# One description of links for the reduction simulator and the time model
# (distal.machine.links, where the figures are cited). `Interconnect` is its name here.
Interconnect = Link


def _link_expr(link: Interconnect) -> str:
    """A known interconnect by its name in this module (`NIC`), any other as `Interconnect(...)`."""
    for name, known in (("NIC", NIC), ("NVLINK_V100", NVLINK_V100), ("NVSWITCH_A100", NVSWITCH_A100),
                        ("PCIE", PCIE), ("SHARED_MEMORY", SHARED_MEMORY)):
        if link == known:
            return name
    return f"Interconnect({link.name!r}, {link.bandwidth!r}, {link.latency!r})"


@dataclass(frozen=True, slots=True)
class Level:
    """One level of a system hierarchy: a name, a cardinality and the interconnect
    joining the `cardinality` instances inside one instance of the level above.

    >>> str(Level("gpu", 16, NVSWITCH_A100))
    'gpu 16 nvswitch(270 GB/s, 2 us)'
    """

    name: str
    cardinality: int
    interconnect: Interconnect

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name == "root":
            raise ReductionError(
                f"expected an identifier other than 'root' as level name, but found {self.name!r}"
            )
        c = self.cardinality
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ReductionError(
                f"expected a positive integer cardinality for level {self.name}, but found {c!r}"
            )

    def __str__(self) -> str:
        return f"{self.name} {self.cardinality} {self.interconnect}"

    def __repr__(self) -> str:
        """The expression that makes it, naming a known interconnect: `Level('gpu', 16, NVSWITCH_A100)`."""
        return f"Level({self.name!r}, {self.cardinality!r}, {_link_expr(self.interconnect)})"


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
        names = [lv.name for lv in self.levels]
        if len(set(names)) != len(names):
            raise ReductionError(f"expected distinct level names, but found {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(lv.name for lv in self.levels)

    @property
    def cardinalities(self) -> tuple[int, ...]:
        return tuple(lv.cardinality for lv in self.levels)

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

    def describe(self) -> str:
        """One line per level with its interconnect."""
        return "\n".join(str(lv) for lv in self.levels)

    def __str__(self) -> str:
        return "[" + ", ".join(f"({lv.name}, {lv.cardinality})" for lv in self.levels) + "]"

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


_INTERCONNECTS = {ic.name: ic for ic in (NIC, PCIE, NVLINK_V100, NVSWITCH_A100, SHARED_MEMORY)}


def parse_levels(text: str) -> System:
    """A system from `name=card[:interconnect],...`, e.g. `node=2,gpu=16`.

    Without an interconnect the outermost level gets `nic`, inner levels named
    like `gpu` get `nvswitch`, other inner levels `shm`. Interconnect names are
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
            ic = _default_interconnect(idx, name)
        elif ic_name in _INTERCONNECTS:
            ic = _INTERCONNECTS[ic_name]
        else:
            raise ReductionError(
                f"expected an interconnect of {sorted(_INTERCONNECTS)}, but found {ic_name!r}"
            )
        levels.append(Level(name, card, ic))
    return System(tuple(levels))


def _default_interconnect(index: int, name: str) -> Interconnect:
    if index == 0:
        return NIC
    if "gpu" in name.lower():
        return NVSWITCH_A100
    return SHARED_MEMORY


def system_from_machine(
    machine: Machine,
    interconnects: tuple[Interconnect, ...] | list[Interconnect] | None = None,
    gpus: bool = True,
) -> System:
    """The system of a distal hierarchical `Machine`: one level per machine level.

    Machine level i (a `Grid`, flattened row-major) becomes level `l{i}` with
    cardinality `grid.size`. Default interconnects: level 0 is the NIC between
    nodes; inner levels are the A100 NVSwitch when `gpus` (processors are GPUs),
    shared memory otherwise. A one-level machine is a single node (its level
    gets NVSwitch or shared memory).

    >>> from distal.machine.grid import Grid, Machine
    >>> print(system_from_machine(Machine(Grid(2, 2), Grid(4))).describe())
    l0 4 nic(8 GB/s, 10 us)
    l1 4 nvswitch(270 GB/s, 2 us)
    """
    if not isinstance(machine, Machine):
        raise ReductionError(f"expected a distal Machine, but found {machine!r}")
    n = machine.levels
    if interconnects is None:
        if n == 1:
            ics: tuple[Interconnect, ...] = (NVSWITCH_A100 if gpus else SHARED_MEMORY,)
        else:
            inner = NVSWITCH_A100 if gpus else SHARED_MEMORY
            ics = (NIC,) + (inner,) * (n - 1)
    else:
        ics = tuple(interconnects)
        if len(ics) != n:
            raise ReductionError(
                f"expected {n} interconnects (one per machine level), but found {len(ics)}", machine
            )
    return System(tuple(Level(f"l{i}", g.size, ic) for i, (g, ic) in enumerate(zip(machine.grids, ics))))
