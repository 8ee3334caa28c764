"""A finished redistribution: the plain data the runtime interprets to move a tensor's blocks.

The synthesizer's objects (`FormatProgram`, `CollectiveProgram`, meshes,
distributed types, device frames) stay in `distal.redist`;
`distal.redist.finish.finish` works out, once, everything a run needs from
them: the factor grid, and per step the device groups, the slices and
gathers of each block, the blocks each pinned launch reads and writes, the
padded positions local steps move elements between. What is here is
frozen data over ints and tuples, plus the two layouts of
`distal.format.layout` the data starts and ends in, so the runtime
(`runtime/_redistribute.py`) imports this module and nothing else of
redistribution. It imports nothing above `distal.format`.

Coordinates of blocks are *factor coordinates*: one per prime factor of the
machine's dimensions (`FactorGrid`), the grid the programs run on.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from distal.format.layout import DimLayout, Layout

__all__ = ["Exchange", "FactorGrid", "Moves", "Permute", "Pinned", "ProgramMoves", "Reframe", "Reposition"]

#: Per leading dimension of the blocks read: the launch dimension it follows, or (None, c): the constant c.
Lead = tuple[tuple[int | None, int], ...]


@dataclass(frozen=True, slots=True)
class FactorGrid:
    """The grid redistribution runs on: one dimension per prime factor of the machine's dimensions.

    ``axes`` are the machine's axes (all levels, `Layout.axes`) with their
    sizes; ``factors`` one (machine axis, prime size, stride) per factor, the
    factors of an axis major first (the coordinate along the axis is
    ``sum(c_f * stride_f)``).

    >>> g = FactorGrid((("x", 4), ("y", 3)), (("x", 2, 2), ("x", 2, 1), ("y", 3, 1)))
    >>> g.shape(), g.shape({"y"}), g.coords((3, 2)), g.composite
    ((2, 2, 3), (2, 2, 1), (1, 1, 2), True)
    """

    axes: tuple[tuple[str, int], ...]
    factors: tuple[tuple[str, int, int], ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The machine axes' names."""
        return tuple(n for n, _ in self.axes)

    @property
    def size(self) -> int:
        """The number of devices."""
        return math.prod(s for _, s in self.axes)

    @property
    def composite(self) -> bool:
        """Whether some machine axis has more than one factor (its blocks are copied to change grids)."""
        axes = [a for a, _, _ in self.factors]
        return len(set(axes)) != len(axes)

    def shape(self, fixed: Collection[str] = ()) -> tuple[int, ...]:
        """The leading dimensions of a store of blocks: one per factor, 1 along the ``fixed`` machine axes.

        A machine of one device has the grid ``(1,)``.
        """
        return tuple(1 if a in fixed else s for a, s, _ in self.factors) or (1,)

    def coords(self, device: Sequence[int]) -> tuple[int, ...]:
        """The factor coordinates of ``device`` (a machine coordinate)."""
        pos = {n: k for k, n in enumerate(self.names)}
        return tuple((device[pos[a]] // stride) % size for a, size, stride in self.factors)


@dataclass(frozen=True, slots=True)
class Pinned:
    """One launch pinned to a point: it reads the blocks at ``reads`` and writes the block at ``write``.

    All are factor coordinates; ``slot`` numbers the launch among the
    step's (the runtime runs launch ``slot`` on CPU ``slot * cpus // devices``).
    """

    point: tuple[int, ...]
    reads: tuple[tuple[int, ...], ...]
    write: tuple[int, ...]
    slot: int


@dataclass(frozen=True, slots=True)
class Exchange:
    """An allgather, dynslice or alltoall: every device assembles its new block from its group's blocks.

    The group of a device is the devices that differ from it only along
    the factors ``group``; ``members`` lists their values along them.
    A member's block (of local shape ``before``) is cut along ``slices``
    (dimension, run of factors, minor first: the device keeps its part) and
    written into the new block (of shape ``after``) along ``gathers``
    (dimension, run of factors: the member's place). ``pinned`` is None when
    the devices play their own points (one index launch, each member's block
    an affine map of the launch point); otherwise one pinned launch per
    point, reading its members' blocks in the order of ``members``.
    """

    label: str
    group: tuple[int, ...]
    members: tuple[tuple[int, ...], ...]
    gathers: tuple[tuple[int, tuple[int, ...]], ...]
    slices: tuple[tuple[int, tuple[int, ...]], ...]
    before: tuple[int, ...]
    after: tuple[int, ...]
    pinned: tuple[Pinned, ...] | None

    @property
    def block(self) -> int:
        """Elements of one new block."""
        return math.prod(self.after)


@dataclass(frozen=True, slots=True)
class Permute:
    """An allpermute: every device receives a whole block of ``size`` elements from one holder.

    ``lead`` is set when the holder is an affine function of the device (one
    index launch: leading dimension k of the block read follows launch
    dimension ``lead[k]``); otherwise ``pinned`` has one launch per device.
    """

    label: str
    size: int
    block: int
    lead: tuple[int, ...] | None
    pinned: tuple[Pinned, ...]


@dataclass(frozen=True, slots=True)
class Reframe:
    """A relabel: no data moves, nothing is launched; later steps read the blocks through a new device map."""

    label: str
    block: int


@dataclass(frozen=True, slots=True)
class Reposition:
    """A local step: each device reads one block and moves its elements to new padded positions.

    The block read (of shape ``before``) is at ``lead`` of the launch point
    (over the grid ``grid``, the blocks written); along each dimension of
    ``moves`` (dimension, old layout, new layout of that dimension) the
    elements at their old padded positions (`DimLayout.positions`) go to
    their new ones, zeros elsewhere; the result has shape
    ``after``. Entering the programs (``expand`` from a fixed face, ``pad``),
    re-padding between two programs (``repad``) and leaving them
    (``restrict`` to a fixed face, ``crop``) are all such steps.
    """

    label: str
    before: tuple[int, ...]
    after: tuple[int, ...]
    moves: tuple[tuple[int, DimLayout, DimLayout], ...]
    lead: Lead
    grid: tuple[int, ...]

    @property
    def block(self) -> int:
        """Elements of one new block."""
        return math.prod(self.after)


#: A step of a program of collectives, finished.
CollectiveMove = Exchange | Permute | Reframe


@dataclass(frozen=True, slots=True)
class ProgramMoves:
    """One program of collectives, finished: its steps in order, on the factor grid ``factors``."""

    factors: FactorGrid
    steps: tuple[CollectiveMove, ...]


@dataclass(frozen=True, slots=True)
class Moves:
    """A finished redistribution of a tensor from the layout ``source`` to the layout ``target``.

    ``enter`` turns the source format's blocks into blocks of the first
    program's type (None when they already are), ``stages`` are the programs
    and the local re-padding between them, ``exit`` keeps the target
    format's blocks (None when the last type's blocks are them). ``height``
    bounds the elements of any block along the way (the runtime checks it).
    """

    source: Layout
    target: Layout
    factors: FactorGrid
    enter: Reposition | None
    stages: tuple[ProgramMoves | Reposition, ...]
    exit: Reposition | None
    height: int
