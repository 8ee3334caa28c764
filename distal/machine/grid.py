"""Abstract machines: (hierarchical) grids of processors with named dimensions.

A `Machine` is one `Grid` per level (nodes, then processors in a node). Each
grid's dimensions are named x, y, z, w, ... unless names are given, and each
grid says what kind of processor its points are (`cpu`, `gpu`, `omp`) and
which memory holds their data (`sysmem`, `fbmem`, `zcmem`). `m.x` is a
`MachineDim` usable wherever a size is.

Grid sizes may be symbolic (`Grid(Param("gx"), Param("gy"))`, paper Figure
2): such a machine prints, formats and schedules with the parameter names,
and its `m.x` is a symbolic size; `bound({"gx": 2, ...})` gives the concrete
machine, which compiling a schedule does with its bindings. What needs
concrete sizes (a processor count, coordinates, `bind`) refuses a symbolic
machine with a `MachineError` asking for the binding.

An abstract machine is separate from the real processors it runs on:
`Machine.bind(n_real)` assigns each abstract processor a real one, block-wise.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from distal.errors import MachineError
from distal.sizes import MachineDim, Param, resolve

__all__ = [
    "DEFAULT_NAMES",
    "KINDS",
    "MEMORY_KINDS",
    "PROCESSOR_KINDS",
    "Coord",
    "Grid",
    "Machine",
    "MachineAxisError",
    "ProcessorKind",
    "processor_kind",
]

DEFAULT_NAMES = ("x", "y", "z", "w", "v", "u", "t", "s")

#: Memory kinds: system memory, GPU framebuffer, zero-copy (pinned host memory seen by GPUs).
MEMORY_KINDS = ("sysmem", "fbmem", "zcmem")


@dataclass(frozen=True)
class ProcessorKind:
    """What distal needs to know of one kind of processor: the one table every layer reads.

    `name` is Legate's TaskTarget name in lower case; `memory` the memory its
    tiles live in unless a grid says otherwise, `addressable` the memories it
    reads directly; `device_arrays` whether its tiles are device arrays (CuPy)
    rather than NumPy arrays; `threads` whether `parallelize(v, "cpu_thread")`
    runs v's iterations on a thread pool inside each task (OpenMP processors).
    """

    name: str
    memory: str
    addressable: tuple[str, ...]
    device_arrays: bool = False
    threads: bool = False


#: Processor kinds by name, as Legate names them (TaskTarget.CPU, GPU, OMP). Adding a kind: see CONTRIBUTING.md.
KINDS: dict[str, ProcessorKind] = {k.name: k for k in (
    ProcessorKind("cpu", "sysmem", ("sysmem", "zcmem")),
    ProcessorKind("gpu", "fbmem", ("fbmem", "zcmem"), device_arrays=True),
    ProcessorKind("omp", "sysmem", ("sysmem", "zcmem"), threads=True),
)}

#: Processor kind names.
PROCESSOR_KINDS = tuple(KINDS)

#: The memory a processor kind uses unless told otherwise.
DEFAULT_MEMORY = {name: k.memory for name, k in KINDS.items()}


def processor_kind(name: str) -> ProcessorKind:
    """The kind called `name`.

    >>> processor_kind("omp").threads, processor_kind("gpu").device_arrays
    (True, True)
    """
    kind = KINDS.get(name)
    if kind is None:
        raise MachineError(f"expected a processor kind ({', '.join(KINDS)}), but found {name!r}")
    return kind


#: A processor coordinate: one index per grid dimension (levels concatenated).
Coord = tuple[int, ...]

#: A grid size: a positive integer or a symbolic parameter bound at compile time.
GridSize = int | Param


def _unbound(what: str, names: tuple[str, ...]) -> MachineError:
    binding = ", ".join(f"{n}=..." for n in names)
    mapping = ", ".join(f"{n!r}: ..." for n in names)
    return MachineError(
        f"expected concrete grid sizes for {what}, but found parameter(s) {', '.join(names)}; "
        f"bind them first (sched.compile({binding}) or machine.bound({{{mapping}}}))"
    )


def _article(text: str) -> str:
    """'a' or 'an' before `text` as it is read aloud: an 8x8 grid, an 11x2 grid, a 2x2 grid."""
    digits = ""
    for ch in text:
        if not ch.isdigit():
            break
        digits += ch
    if not digits:
        return "an" if text[:1] in ("a", "e", "i", "o", "u") else "a"
    eleven_or_eighteen = len(digits) % 3 == 2 and digits[:2] in ("11", "18")
    return "an" if digits.startswith("8") or eleven_or_eighteen else "a"


def _count(n: int, what: str) -> str:
    return f"{n} {what} processor" + ("" if n == 1 else "s")


def _kind(value: object) -> str:
    if not isinstance(value, str):
        raise MachineError(f"expected a processor kind ({', '.join(KINDS)}), but found {value!r}")
    return processor_kind(value.lower()).name


def _memory(value: object, kind: str) -> str:
    if value is None:
        return KINDS[kind].memory
    if not isinstance(value, str) or value.lower() not in MEMORY_KINDS:
        raise MachineError(f"expected a memory kind ({', '.join(MEMORY_KINDS)}), but found {value!r}")
    memory = value.lower()
    if memory not in KINDS[kind].addressable:
        raise MachineError(
            f"expected a memory a {kind} can address ({', '.join(KINDS[kind].addressable)}), but found {memory!r}"
        )
    return memory


@dataclass(frozen=True, slots=True, init=False)
class Grid:
    """An n-dimensional grid of abstract processors of one kind.

    `kind` is the processor kind (`"cpu"`, `"gpu"` or `"omp"`) and `memory`
    the memory their data lives in (`"sysmem"`, `"fbmem"` for a GPU's
    framebuffer, `"zcmem"` for zero-copy memory); the memory defaults to the
    kind's own (framebuffer for GPUs, system memory otherwise).

    >>> Grid(2, 2)
    Grid(2, 2)
    >>> Grid(2, 2).names
    ('x', 'y')
    >>> Grid(4, kind="gpu").memory
    'fbmem'
    >>> Grid(3, names="i", kind="gpu", memory="zcmem")
    Grid(3, names=('i',), kind='gpu', memory='zcmem')
    """

    sizes: tuple[GridSize, ...]
    names: tuple[str, ...]
    kind: str
    memory: str

    def __init__(
        self,
        *dims: GridSize,
        names: tuple[str, ...] | list[str] | str | None = None,
        kind: str = "cpu",
        memory: str | None = None,
    ) -> None:
        if not dims:
            raise MachineError("expected at least one grid dimension, but found none")
        for d in dims:
            if isinstance(d, Param):
                continue
            if isinstance(d, bool) or not isinstance(d, int) or d < 1:
                raise MachineError(f"expected positive integer grid sizes or dt.Param, but found {d!r}", dims)
        if names is None:
            if len(dims) > len(DEFAULT_NAMES):
                raise MachineError(f"grids have at most {len(DEFAULT_NAMES)} unnamed dimensions")
            names = DEFAULT_NAMES[: len(dims)]
        if isinstance(names, str):
            names = tuple(names)
        names = tuple(names)
        if len(names) != len(dims):
            raise MachineError(f"expected {len(dims)} dimension names, but found {len(names)}", names)
        if len(set(names)) != len(names):
            raise MachineError(f"expected distinct dimension names, but found {names}")
        for n in names:
            if not isinstance(n, str) or not n.isidentifier():
                raise MachineError(f"expected identifiers as dimension names, but found {n!r}")
        k = _kind(kind)
        object.__setattr__(self, "sizes", tuple(dims))
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "kind", k)
        object.__setattr__(self, "memory", _memory(memory, k))

    @property
    def params(self) -> tuple[str, ...]:
        """The names of the parameters among the sizes, in order (empty for a concrete grid)."""
        return tuple(dict.fromkeys(d.name for d in self.sizes if isinstance(d, Param)))

    @property
    def dims(self) -> tuple[int, ...]:
        """The sizes as integers; refused (asking for the binding) while a size is a parameter."""
        if self.params:
            raise _unbound(repr(self), self.params)
        return tuple(d for d in self.sizes if isinstance(d, int))

    @property
    def size(self) -> int:
        """The number of processors in the grid."""
        return math.prod(self.dims)

    @property
    def ndim(self) -> int:
        return len(self.sizes)

    def coords(self) -> Iterator[Coord]:
        """Every processor coordinate, row-major (the last dimension varies fastest)."""
        return itertools.product(*(range(d) for d in self.dims))

    def bound(self, bindings: Mapping[str, int]) -> Grid:
        """The grid with its parameters replaced by their values in `bindings`.

        >>> Grid(Param("gx"), 2).bound({"gx": 3})
        Grid(3, 2)
        """
        if not self.params:
            return self
        for name in self.params:
            if name not in bindings:
                raise _unbound(repr(self), tuple(n for n in self.params if n not in bindings))
        dims = tuple(resolve(d, bindings) for d in self.sizes)
        return Grid(*dims, names=self.names, kind=self.kind, memory=self.memory)

    def __repr__(self) -> str:
        args = ", ".join(str(d) for d in self.sizes)
        if self.names != DEFAULT_NAMES[: len(self.sizes)]:
            args += f", names={self.names!r}"
        if self.kind != "cpu":
            args += f", kind={self.kind!r}"
        if self.memory != KINDS[self.kind].memory:
            args += f", memory={self.memory!r}"
        return f"Grid({args})"


class MachineAxisError(MachineError, AttributeError):
    """`m.z` on a machine without an axis z: a `MachineError`, and an `AttributeError` so that
    `hasattr(m, "z")` and `getattr(m, "z", default)` keep working.

    >>> Machine(Grid(2, 2)).z
    Traceback (most recent call last):
    ...
    distal.machine.grid.MachineAxisError: expected one of the axes x, y of Machine(Grid(2, 2)), but found 'z'
    """

    def __init__(self, machine: Machine, axis: str) -> None:
        names = machine.grids[0].names
        which = f"the axis {names[0]}" if len(names) == 1 else f"one of the axes {', '.join(names)}"
        message = f"expected {which} of {machine!r}, but found {axis!r}"
        inner = [level for level, g in enumerate(machine.grids) if level > 0 and axis in g.names]
        if inner:
            message += f"; {axis} is an axis of level {inner[0]}: write m.dim({axis!r}, {inner[0]})"
        super().__init__(message)
        self.name = axis
        self.obj = machine


@dataclass(frozen=True, slots=True, init=False)
class Machine:
    """A machine: one grid per level of its hierarchy (nodes first, then processors in a node).

    A processor of a hierarchical machine is named by its coordinates at every
    level, concatenated: in `Machine(Grid(2, 2), Grid(4))` processor
    `(1, 0, 3)` is processor 3 of node (1, 0).

    >>> m = Machine(Grid(2, 2))
    >>> m.x
    MachineDim(name='x', size=2, level=0)
    >>> mh = Machine(Grid(2, 2), Grid(4, kind="gpu"))
    >>> mh.size, mh.levels, mh.kind
    (16, 2, 'gpu')
    >>> gx, gy = Param("gx"), Param("gy")
    >>> ms = Machine(Grid(gx, gy))
    >>> ms, ms.x, ms.params
    (Machine(Grid(gx, gy)), MachineDim(name='x', size=Param(name='gx'), level=0), ('gx', 'gy'))
    >>> ms.bound({"gx": 2, "gy": 3})
    Machine(Grid(2, 3))
    """

    grids: tuple[Grid, ...]

    def __init__(self, *grids: Grid) -> None:
        if not grids:
            raise MachineError("expected at least one grid, but found none")
        for g in grids:
            if not isinstance(g, Grid):
                raise MachineError(f"expected a Grid per machine level, but found {g!r}")
        object.__setattr__(self, "grids", tuple(grids))

    @property
    def levels(self) -> int:
        """The number of levels of the hierarchy (1 for a flat machine)."""
        return len(self.grids)

    @property
    def grid(self) -> Grid:
        """The top-level grid."""
        return self.grids[0]

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the top-level grid (refused while it is symbolic: see `bound`)."""
        return self.grids[0].dims

    @property
    def params(self) -> tuple[str, ...]:
        """The names of the parameters among the grid sizes of every level (empty when concrete)."""
        return tuple(dict.fromkeys(n for g in self.grids for n in g.params))

    def bound(self, bindings: Mapping[str, int]) -> Machine:
        """The machine with its parameters replaced by their values in `bindings`."""
        if not self.params:
            return self
        missing = tuple(n for n in self.params if n not in bindings)
        if missing:
            raise _unbound(repr(self), missing)
        return Machine(*(g.bound(bindings) for g in self.grids))

    def _concrete(self, what: str) -> None:
        if self.params:
            raise _unbound(f"{what} of {self!r}", self.params)

    @property
    def ndim(self) -> int:
        """The number of dimensions of the top-level grid."""
        return self.grids[0].ndim

    @property
    def size(self) -> int:
        """The number of processors at the leaves (the product over all levels)."""
        self._concrete("the processor count")
        return math.prod(g.size for g in self.grids)

    @property
    def kind(self) -> str:
        """The processor kind of the leaf level: the processors that run tasks."""
        return self.grids[-1].kind

    @property
    def memory(self) -> str:
        """The memory kind of the leaf level: where tiles are placed."""
        return self.grids[-1].memory

    @property
    def full_shape(self) -> tuple[int, ...]:
        """The grid shapes of all levels, concatenated (the shape of a processor coordinate)."""
        self._concrete("the processor coordinates")
        return tuple(d for g in self.grids for d in g.dims)

    def dim(self, name: str, level: int = 0) -> MachineDim:
        """The dimension called `name` of the grid at `level`.

        >>> Machine(Grid(2, 2), Grid(4)).dim("x", 1)
        MachineDim(name='x', size=4, level=1)
        """
        if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level < self.levels:
            raise MachineError(f"expected a level in [0, {self.levels}), but found {level!r}", self)
        grid = self.grids[level]
        if name not in grid.names:
            raise MachineError(f"expected a dimension of {grid.names} at level {level}, but found {name!r}")
        return MachineDim(name, grid.sizes[grid.names.index(name)], level)

    def dims(self, level: int = 0) -> tuple[MachineDim, ...]:
        """Every dimension of the grid at `level`."""
        return tuple(self.dim(n, level) for n in self.grids[level].names)

    def coords(self) -> Iterator[Coord]:
        """Every processor coordinate (levels concatenated), row-major with level 0 outermost."""
        return itertools.product(*(range(d) for d in self.full_shape))

    def bind(self, n_real: int) -> dict[Coord, int]:
        """The real processor (an index in [0, n_real)) that runs each abstract processor.

        Abstract processors are numbered row-major over all levels (level 0
        outermost, so the processors of one node are consecutive) and split
        into `n_real` contiguous blocks whose sizes differ by at most one:
        abstract processor k runs on real processor `k * n_real // size`.
        When the machine has no more processors than there are real ones,
        abstract processor k runs on real processor k and the rest stay idle.

        >>> Machine(Grid(2, 2)).bind(2)
        {(0, 0): 0, (0, 1): 0, (1, 0): 1, (1, 1): 1}
        >>> Machine(Grid(3)).bind(4)
        {(0,): 0, (1,): 1, (2,): 2}
        """
        if isinstance(n_real, bool) or not isinstance(n_real, int) or n_real < 1:
            raise MachineError(f"expected a positive number of real processors, but found {n_real!r}", self)
        self._concrete("binding to real processors")
        size = self.size
        if size <= n_real:
            return {c: k for k, c in enumerate(self.coords())}
        return {c: k * n_real // size for k, c in enumerate(self.coords())}

    def describe(self) -> str:
        """The machine in words, as reprs and pictures of plans say where they run.

        >>> Machine(Grid(4)).describe(), Machine(Grid(2, 2)).describe()
        ('a line of 4 cpu processors', 'a 2x2 grid of cpu processors')
        >>> Machine(Grid(2, 2), Grid(4, kind="gpu")).describe()
        '2x2 nodes of 4 gpu processors'
        >>> Machine(Grid(Param("gx"), 2)).describe(), Machine(Grid(1)).describe()
        ('a gx x 2 grid of cpu processors', 'one cpu processor')
        >>> Machine(Grid(8, 8)).describe(), Machine(Grid(11, 2)).describe()
        ('an 8x8 grid of cpu processors', 'an 11x2 grid of cpu processors')
        """
        def sizes(g: Grid) -> str:
            return ("x" if not g.params else " x ").join(str(d) for d in g.sizes)

        def count(g: Grid, noun: str) -> str:
            if g.ndim > 1:
                return f"{sizes(g)} {noun}s"
            return f"one {noun}" if g.sizes[0] == 1 else f"{g.sizes[0]} {noun}s"

        leaf = self.grids[-1]
        noun = f"{leaf.kind} processor"
        if self.levels == 1:
            if leaf.ndim > 1:
                text = f"{_article(sizes(leaf))} {sizes(leaf)} grid of {noun}s"
            elif leaf.sizes[0] == 1:
                text = f"one {noun}"
            else:
                text = f"a line of {leaf.sizes[0]} {noun}s"
        else:
            parts = [count(self.grids[0], "node")]
            parts += [count(g, "group") for g in self.grids[1:-1]]
            parts.append(count(leaf, noun))
            text = " of ".join(parts)
        if leaf.memory != KINDS[leaf.kind].memory:
            text += f" (data in {leaf.memory})"
        return text

    def describe_binding(self, n_real: int) -> str:
        """The binding of `bind(n_real)` as text: one line per real processor.

        >>> print(Machine(Grid(2, 2)).describe_binding(2))
        Machine(Grid(2, 2)): 4 abstract cpu processors on 2 real cpu processors, block-wise
          cpu 0: (0, 0) (0, 1)
          cpu 1: (1, 0) (1, 1)
        """
        binding = self.bind(n_real)
        used: dict[int, list[Coord]] = {}
        for coord, real in binding.items():
            used.setdefault(real, []).append(coord)
        how = "block-wise" if self.size > n_real else "one to one"
        lines = [
            f"{self!r}: {_count(self.size, 'abstract ' + self.kind)} on "
            f"{_count(n_real, 'real ' + self.kind)}, {how}"
        ]
        for real in range(n_real):
            coords = used.get(real)
            text = " ".join(str(c) if len(c) > 1 else f"({c[0]},)" for c in coords) if coords else "idle"
            lines.append(f"  {self.kind} {real}: {text}")
        return "\n".join(lines)

    def __getattr__(self, name: str) -> MachineDim:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            grids = object.__getattribute__(self, "grids")
        except AttributeError:
            raise AttributeError(name) from None
        if name in grids[0].names:
            return self.dim(name)
        raise MachineAxisError(self, name)

    def __repr__(self) -> str:
        return f"Machine({', '.join(repr(g) for g in self.grids)})"
