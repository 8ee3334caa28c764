"""The task graph: a lowered schedule as plain data (`PlanBase`).

`distal.lower.lower` returns a `PlanBase`: the statement's tensors
(`TensorInfo`) and a list of launch groups (`Group`). A group is one task
body and the index variables its launch points range over (the distributed
loops, then the sequential loops hoisted out of the tasks because they carry
communication). Its `launches` run in order; each is a box of launch points
plus, per operand, a tiling, a projection from launch point to tile color,
and a privilege. Sequential steps are launch dimensions of extent one whose
lower bound is the step's value, so a task body learns every fixed loop value
from its launch point.

This module is data and pure queries only. What reads a plan is a function
of the module that answers it (`distal.lower.describe`, `distal.lower.analysis`,
`distal.model.predict`, `distal.model.explain`, the executors); the user's
`dt.Plan` (`distal.api.plan.Plan`, what `Schedule.compile()` returns) adds
the methods that call them.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from distal._text import short_seconds_text
from distal.errors import DistalError
from distal.notation.ast import Assignment, IndexVar
from distal.notation.variable import Bindings

if TYPE_CHECKING:

    from distal.lower.lints import Lint
    from distal.lower.task_body import TaskBody
    from distal.machine.grid import Machine
    from distal.notation.tensor_base import TensorBase
    from distal.notation.variable import TensorVar
    from distal.reduction.ranking import ReductionPlan

__all__ = ["Group", "Launch", "Operand", "PlanBase", "Privilege", "Proj", "Reduction", "TensorInfo"]

Box = tuple[tuple[int, int], ...]  # per dimension [lo, hi)


class Privilege(enum.Enum):
    """How a launch uses an operand: a plan's operands and the runtime's launches (`distal.runtime.Privilege`)."""

    READ = "read"
    WRITE = "write"  # every covered tile is overwritten in full by the kernel
    READ_WRITE = "read_write"
    REDUCE_ADD = "reduce_add"  # the kernel adds into a tile that starts at zero


@dataclass(frozen=True, slots=True)
class Proj:
    """One component of a projection: `coeff * point[dim] + offset` (`dim=None`: the constant); the
    runtime's launches take the same class (`distal.runtime.Affine`)."""

    dim: int | None
    coeff: int = 1
    offset: int = 0

    def __post_init__(self) -> None:
        if self.dim is not None and self.dim < 0:
            raise DistalError(f"expected a launch dimension >= 0, but found {self.dim}")

    def at(self, point: Sequence[int]) -> int:
        """The color component at a launch point."""
        return self.offset if self.dim is None else self.coeff * point[self.dim] + self.offset

    def __str__(self) -> str:
        if self.dim is None:
            return str(self.offset)
        text = {1: f"p{self.dim}", -1: f"-p{self.dim}"}.get(self.coeff, f"{self.coeff}*p{self.dim}")
        if self.offset:
            text += f"{'+' if self.offset > 0 else '-'}{abs(self.offset)}"
        return text


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """A tensor of the plan: its shape with parameters bound, and its role.

    `tensor` is the statement's `TensorVar` (name, shape, dtype, format as
    scheduled); its data is the plan's `bindings.tensor(info.tensor)`.
    """

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    output: bool
    tensor: TensorVar = field(compare=False, repr=False)

    @property
    def itemsize(self) -> int:
        return int(self.dtype.itemsize)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class Operand:
    """One operand of a launch: which tensor, with what privilege, cut how.

    `tile=None` hands the whole tensor to every point. Otherwise the tensor
    is cut into blocks of `tile` (`colors` blocks per dimension, edge blocks
    smaller or empty) and point p gets the block `tuple(c.at(p) for c in projection)`.
    """

    tensor: int
    privilege: Privilege
    tile: tuple[int, ...] | None
    projection: tuple[Proj, ...] | None
    colors: tuple[int, ...] | None

    def color(self, point: Sequence[int]) -> tuple[int, ...] | None:
        if self.projection is None:
            return None
        return tuple(c.at(point) for c in self.projection)

    def box(self, point: Sequence[int], shape: Sequence[int]) -> Box:
        """The part of the tensor point `point` receives."""
        color = self.color(point)
        if self.tile is None or color is None:
            return tuple((0, n) for n in shape)
        out = []
        for c, t, n in zip(color, self.tile, shape):
            lo = min(c * t, n)
            out.append((lo, min(lo + t, n)))
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Launch:
    """One launch: the points of the box [lower, upper) run the group's kernel.

    A `pinned` launch (of one point) runs on the real processor bound to
    the abstract processor of its point (`Machine.bind`).
    """

    lower: tuple[int, ...]
    upper: tuple[int, ...]
    operands: tuple[Operand, ...]
    pinned: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(hi - lo for lo, hi in zip(self.lower, self.upper))

    def points(self) -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(lo, hi) for lo, hi in zip(self.lower, self.upper)))

    @property
    def volume(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True, slots=True)
class Group:
    """Launches of one task body over the same launch variables.

    `vars[:distributed]` are distributed loops (launch dimensions that run in
    parallel); the rest are sequential steps (extent one in each launch).
    `body` is what each launch point runs on its tiles (`TaskBody`).
    """

    vars: tuple[IndexVar, ...]
    distributed: int
    body: TaskBody = field(repr=False)
    launches: tuple[Launch, ...]
    notes: tuple[str, ...] = ()
    extents: tuple[int, ...] = ()  # of the distributed dimensions

    def covers_domain(self, launch: Launch) -> bool:
        """Whether `launch` spans every distributed dimension whole."""
        n = self.distributed
        return launch.lower[:n] == (0,) * n and launch.upper[:n] == self.extents[:n]

    @property
    def steps(self) -> tuple[IndexVar, ...]:
        return self.vars[self.distributed:]


@dataclass(frozen=True, slots=True)
class Reduction:
    """How the launches that reduce into the output (REDUCE_ADD) are carried out.

    `strategy` is "legate" (Legate folds every point's buffer into the output
    tile: one reduction) or "synthesized": every launch point adds its
    contribution into the partial result of its processor, a `row`-shaped
    block (stored flat: `math.prod(row)` elements, so the program's chunks
    cut the flat values) of a per-processor store (device id: the processor's
    row-major index in `machine.coords()`); once every launch ran, the chosen program of
    collectives (`plan`, from `distal.reduction.machines.machine_plan`) sums
    the partials of each of `groups` (the processors whose points reduce into
    the same output tiles, within box `boxes[g]`), and the first device of each group adds
    its sum, cropped to the box, into the output. `reason` says why the
    strategy was chosen. With `whole`, a partial is the whole output and a
    processor's contributions sit at their global place (its points reduce
    into several tiles); otherwise a partial is one tile, its contribution at
    offset 0, and a group's box is that tile. The program fields are filled whenever a program was
    planned, for `explain()`; `seconds` and `allreduce_seconds` are the
    simulated times of the chosen program and of a single AllReduce.
    """

    tensor: int  # the output's index in `PlanBase.tensors`
    strategy: str  # "legate" or "synthesized"
    reason: str
    row: tuple[int, ...] = ()  # one processor's partial: the output tile (whole shape untiled, (1,) if 0-d)
    whole: bool = False  # the partial is the whole output (processors reduce into several tiles)
    groups: tuple[tuple[int, ...], ...] = ()  # device ids per output tile, ascending
    boxes: tuple[Box, ...] = ()  # the output box each group sums into
    nbytes: float = 0.0  # bytes of one partial (what programs were ranked for)
    program: str = ""  # the chosen program, as `distal.reduction` prints it
    shape: str = ""  # its collectives joined by "-"
    steps: tuple[str, ...] = ()  # its lowered steps (collective over device groups)
    seconds: float = 0.0
    allreduce_seconds: float = 0.0
    description: str = ""  # `distal.reduction.describe_plan` of the plan
    plan: ReductionPlan | None = field(default=None, compare=False, repr=False)

    @property
    def synthesized(self) -> bool:
        return self.strategy == "synthesized"

    def local(self, box: Box) -> Box:
        """Where `box` of the output sits in a processor's partial (a box of `row`)."""
        if not box:
            return ((0, 1),)  # a 0-d output: its partial has shape (1,)
        if self.whole:
            return box
        return tuple((0, max(hi - lo, 0)) for lo, hi in box)

    def summary(self) -> str:
        """One line: strategy, program and predicted times."""
        if not self.program:
            return f"{self.strategy}: {self.reason}"
        times = (f"predicted {short_seconds_text(self.seconds)}, "
                 f"single AllReduce {short_seconds_text(self.allreduce_seconds)}")
        return f"{self.strategy}: {self.reason}; program {self.shape} in {len(self.steps)} step(s) ({times})"


def _counted(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass(frozen=True, slots=True, weakref_slot=True)
class PlanBase:
    """A lowered schedule as data: tensors, launch groups, and how the output starts.

    What `distal.lower.lower` returns; the user's `dt.Plan` (`distal.api.plan.Plan`) is this data with
    the methods that run, analyse, predict, explain and draw it.

    `zero_output` is true for `=` statements (the output starts at zero) and
    false for `+=` (it keeps its values). `machine` is the abstract machine
    the distributed loops map onto (None without distributed loops);
    `processor_slots[d]` is the position, in an abstract processor
    coordinate, of distributed launch dimension d (-1: none). `reduction`
    says how a distributed reduction into the output runs.
    """

    statement: str
    tensors: tuple[TensorInfo, ...]
    groups: tuple[Group, ...]
    zero_output: bool
    machine: Machine | None
    processor_slots: tuple[int, ...]  # per distributed launch dim: its index in a processor coordinate
    notes: tuple[str, ...] = ()
    symbolic: tuple[tuple[str, str, int], ...] = ()  # (variable, sympy extent, bound value) with dt.Param
    reduction: Reduction | None = None  # how REDUCE_ADD launches into the output run (None: there are none)
    lints: tuple[Lint, ...] = ()  # performance traps of its schedule (distal.lower.lints), warned at compile
    source: Assignment | None = field(default=None, compare=False, repr=False)  # the statement scheduled
    # the data side: the user tensor of each var (strong references, so a plan runs after its tensors' names are gone)
    bindings: Bindings = field(default_factory=Bindings, compare=False, repr=False)
    # why the plan runs in the calling process with NumPy, no Legate tasks (`Schedule.auto`'s choice for a
    # problem too small to pay for them: `distal.lower.eager`); empty: `run()` runs it on Legate
    eager: str = ""

    def tensor(self, info: TensorInfo) -> TensorBase:
        """The user's tensor holding the data of `info` (the executors read and write data only here)."""
        return self.bindings.tensor(info.tensor)

    @property
    def output(self) -> TensorInfo:
        return next(t for t in self.tensors if t.output)

    def launches(self) -> Iterator[tuple[Group, Launch]]:
        for g in self.groups:
            for launch in g.launches:
                yield g, launch

    def launch_count(self) -> int:
        return sum(len(g.launches) for g in self.groups)

    def device_of(self, group: Group, point: Sequence[int]) -> int:
        """The row-major index of a launch point's abstract processor in `machine.coords()`."""
        coord = self.processor_of(group, point)
        if self.machine is None:
            return 0
        index = 0
        for c, n in zip(coord, self.machine.full_shape):
            index = index * n + c
        return index

    def processor_of(self, group: Group, point: Sequence[int]) -> tuple[int, ...]:
        """The abstract processor coordinate of a launch point (all levels concatenated)."""
        if self.machine is None:
            return (0,)
        coord = [0] * len(self.machine.full_shape)
        for d, slot in enumerate(self.processor_slots[: group.distributed]):
            if 0 <= slot < len(coord):
                coord[slot] = point[d]
        return tuple(coord)

    def __repr__(self) -> str:
        """Short: the statement, the launch count and where they run (str() describes every launch).

        `<Plan A(i,j) = B(i,k) * C(k,j): 2 launches in 1 group on a 2x2 grid of cpu processors, output A
        (8x8 float64)>`; a plan without distributed loops runs "on one processor".
        """
        out = self.output
        source = self.source
        statement = str(source) if source is not None else self.statement.splitlines()[0]
        where = f"on {self.machine.describe()}" if self.machine is not None else "on one processor"
        shape = "x".join(str(n) for n in out.shape) + " " if out.shape else "scalar "
        return (f"<Plan {statement}: {_counted(self.launch_count(), 'launch', 'launches')} in "
                f"{_counted(len(self.groups), 'group', 'groups')} {where}, output {out.name} ({shape}{out.dtype})>")
