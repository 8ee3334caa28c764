"""Levels: the one description of a machine's hierarchy (name, shape, processor kind, link).

A machine is a hierarchy of levels, outermost first. A `Level` is `shape`
units called `name` inside one unit of the level above (the outermost level:
the whole machine), joined by `link`; `kind` is the kind of processor the
units are or hold (`None` where nothing says). The outermost level of a
machine of several nodes is its nodes: with several Legate ranks, its ranks.

The readers of this description:

- a format's machine, `dt.Machine`: one `Grid` per level (its shape, names
  and processor kind); `machine_levels(machine)` gives its levels, with the
  links `default_links` chooses unless told;
- the reduction synthesizer: a `distal.reduction.System` is a tuple of levels
  (`Level("node", 2, NIC)`, `Level("gpu", 16, NVSWITCH_A100)`);
- the time model: `distal.model.hardware.MachineModel.levels` are a node's
  levels, outermost first, and `MachineModel.hierarchy(nodes)` puts the node
  level above them.

Where a node of a format's machine ends is answered here once:
`node_size(machine)`. Devices (the leaves) are numbered row-major over the
levels, the outermost level varying slowest.

>>> from distal.machine.grid import Grid, Machine
>>> Level("gpu", 16, NVSWITCH_A100, "gpu")
Level('gpu', 16, NVSWITCH_A100, kind='gpu')
>>> str(Level("l0", (2, 2), NIC))
'l0 2x2 nic(8 GB/s, 10 us)'
>>> [str(lv) for lv in machine_levels(Machine(Grid(2), Grid(4, kind="gpu")))]
['l0 2 nic(8 GB/s, 10 us)', 'l1 4 nvswitch(270 GB/s, 2 us)']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import distal.machine.links as _links
from distal.errors import MachineError
from distal.machine.grid import KINDS, Machine
from distal.machine.links import NIC, NVSWITCH_A100, SHARED_MEMORY, Link

__all__ = ["Level", "default_links", "link_expression", "machine_levels", "node_size"]

#: The module's link constants by value, so that a level's repr names them (`NIC`, not `Link('nic', ...)`).
_LINK_NAMES = {value: name for name in _links.__all__ if isinstance(value := getattr(_links, name), Link)}


def link_expression(link: Link) -> str:
    """A known link by its constant's name (`NIC`), any other as the expression `Link(...)` that makes it.

    >>> link_expression(NIC), link_expression(Link("ring", 5e10, 1e-6))
    ('NIC', "Link('ring', 50000000000.0, 1e-06)")
    """
    known = _LINK_NAMES.get(link)
    return known if known is not None else f"Link({link.name!r}, {link.bandwidth!r}, {link.latency!r})"


@dataclass(frozen=True, slots=True, init=False)
class Level:
    """`shape` units called `name` inside one unit of the level above, joined by `link`; `kind`: their processors.

    A single size is a one-dimensional shape: `Level("gpu", 16, link)` has `shape == (16,)`.

    >>> lv = Level("socket", 2, NIC)
    >>> lv.shape, lv.size, lv.kind
    ((2,), 2, None)
    """

    name: str
    shape: tuple[int, ...]
    link: Link
    kind: str | None

    def __init__(self, name: str, shape: int | Sequence[int], link: Link, kind: str | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise MachineError(f"expected an identifier as the name of a level, but found {name!r}")
        dims = (shape,) if isinstance(shape, int) else tuple(shape) if isinstance(shape, Sequence) else ()
        if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
            raise MachineError(f"expected a positive size or shape for level {name}, but found {shape!r}")
        if not isinstance(link, Link):
            raise MachineError(f"expected a Link joining the units of level {name}, but found {link!r}")
        if kind is not None and kind not in KINDS:
            raise MachineError(f"expected a processor kind ({', '.join(KINDS)}) for level {name}, "
                               f"but found {kind!r}")
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "shape", dims)
        object.__setattr__(self, "link", link)
        object.__setattr__(self, "kind", kind)

    @property
    def size(self) -> int:
        """The number of units in one unit of the level above."""
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"{self.name} {'x'.join(map(str, self.shape))} {self.link}"

    def __repr__(self) -> str:
        """The expression that makes it, naming a known link: `Level('gpu', 16, NVSWITCH_A100)`."""
        shape = str(self.shape[0]) if self.ndim == 1 else repr(self.shape)
        kind = "" if self.kind is None else f", kind={self.kind!r}"
        return f"Level({self.name!r}, {shape}, {link_expression(self.link)}{kind})"


def default_links(machine: Machine) -> tuple[Link, ...]:
    """The links a machine's levels are taken to have when nothing says: the NIC between the nodes of a machine
    of several levels, inside a node the A100's NVSwitch for GPU processors and shared memory otherwise.

    A one-level machine is one node.

    >>> from distal.machine.grid import Grid
    >>> [ln.name for ln in default_links(Machine(Grid(2, 2), Grid(4)))]
    ['nic', 'shm']
    """
    inner = NVSWITCH_A100 if machine.kind == "gpu" else SHARED_MEMORY
    return (inner,) if machine.levels == 1 else (NIC,) + (inner,) * (machine.levels - 1)


def machine_levels(machine: Machine, links: Sequence[Link] | None = None) -> tuple[Level, ...]:
    """The levels of a (concrete) `Machine`: level i is called `l{i}`, with grid i's shape and processor kind, and
    `links[i]` (`default_links` when not given).

    >>> from distal.machine.grid import Grid
    >>> machine_levels(Machine(Grid(2, 2), Grid(4)))
    (Level('l0', (2, 2), NIC, kind='cpu'), Level('l1', 4, SHARED_MEMORY, kind='cpu'))
    """
    if not isinstance(machine, Machine):
        raise MachineError(f"expected a distal Machine, but found {machine!r}")
    chosen = default_links(machine) if links is None else tuple(links)
    if len(chosen) != machine.levels:
        raise MachineError(f"expected {machine.levels} links (one per machine level), but found {len(chosen)}",
                           machine)
    return tuple(Level(f"l{i}", g.dims, link, g.kind) for i, (g, link) in enumerate(zip(machine.grids, chosen)))


def node_size(machine: Machine) -> int | None:
    """The processors of one node of a (concrete) machine of several levels: a point of its outermost level is a
    node (with several Legate ranks, a rank) holding the processors of its inner grids. `None` for a one-level
    machine: its grid does not say where nodes end (the time model's `per_node` does).

    >>> from distal.machine.grid import Grid
    >>> node_size(Machine(Grid(2, 2), Grid(4))), node_size(Machine(Grid(2), Grid(2), Grid(3)))
    (4, 6)
    >>> node_size(Machine(Grid(8))) is None
    True
    """
    if not isinstance(machine, Machine):
        raise MachineError(f"expected a distal Machine, but found {machine!r}")
    return math.prod(g.size for g in machine.grids[1:]) if machine.levels > 1 else None
