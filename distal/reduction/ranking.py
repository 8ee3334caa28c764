"""Ranking synthesized programs by simulated time, and planning one reduction.

`rank(layout)` synthesizes every program of the layout's synthesis hierarchy,
lowers each and simulates it. `plan_reduction(levels, devices)` is the entry
point for distal's lowering: given a hierarchical machine (levels with
interconnects, a `System`, or a distal `Machine`) and the devices holding
partial results, it returns the simulated-best program, its lowered steps and
the predicted times of that program and of a single AllReduce.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from distal._text import short_seconds_text
from distal.errors import ReductionError
from distal.machine.grid import Machine
from distal.machine.level import Level
from distal.machine.links import Link
from distal.reduction.language import CollectiveKind, Form, ReductionProgram, ReductionStep
from distal.reduction.lowering import LoweredProgram, lower_to_devices
from distal.reduction.parallelism import DeviceLayout, Placement, SynthesisHierarchy, layout_from_groups
from distal.reduction.synthesis import Synthesis, synthesize_programs
from distal.reduction.system import System, system_from_machine
from distal.reduction.timing import simulated_seconds

__all__ = [
    "DEFAULT_BYTES",
    "Ranked",
    "ReductionPlan",
    "allreduce_program",
    "best_program",
    "plan_reduction",
    "rank",
]

# The paper reduces 2**29 float32 values per GPU and node; we default to 2**29
# float32 values (2 GiB) per device.
DEFAULT_BYTES = float(2**31)


@dataclass(frozen=True, slots=True)
class Ranked:
    """A program with its lowering and predicted seconds."""

    program: ReductionProgram
    lowered: LoweredProgram
    seconds: float

    def __repr__(self) -> str:
        return f"<Ranked {_shape(self.program)}: predicted {short_seconds_text(self.seconds)}>"


def _shape(program: ReductionProgram) -> str:
    return program.shape or "no steps"


def allreduce_program(hierarchy: SynthesisHierarchy) -> ReductionProgram:
    """The single-step `(root, InsideGroup, AllReduce)` (empty when nothing is reduced)."""
    if hierarchy.size == 1:
        return ReductionProgram(())
    return ReductionProgram((ReductionStep("root", Form("InsideGroup"), CollectiveKind.ALL_REDUCE),))


@functools.lru_cache(maxsize=64)
def _synthesize_cached(hierarchy: SynthesisHierarchy, max_size: int) -> Synthesis:
    return synthesize_programs(hierarchy, max_size)


def _as_layout(target: Placement | DeviceLayout) -> DeviceLayout:
    if isinstance(target, Placement):
        return target.layout()
    if isinstance(target, DeviceLayout):
        return target
    raise ReductionError(f"expected a Placement or a DeviceLayout, but found {target!r}")


def rank(
    target: Placement | DeviceLayout,
    nbytes: float = DEFAULT_BYTES,
    algorithm: str = "ring",
    max_size: int = 5,
) -> tuple[Ranked, ...]:
    """Every synthesized program of `target`, fastest first (ties: shorter first).

    >>> from distal.reduction.parallelism import enumerate_placements
    >>> from distal.reduction.system import a100_system
    >>> p = enumerate_placements(a100_system(2), [32], [0])[0]
    >>> rank(p)[0].program.shape
    'ReduceScatter-AllReduce-AllGather'
    """
    layout = _as_layout(target)
    synth = _synthesize_cached(layout.hierarchy, max_size)
    out = []
    for prog in synth.programs:
        low = lower_to_devices(prog, layout)
        out.append(Ranked(prog, low, simulated_seconds(low, nbytes, algorithm)))
    # Times equal to the nanosecond are ties: the shorter program wins.
    out.sort(key=lambda r: (round(r.seconds, 9), len(r.program)))
    return tuple(out)


@functools.lru_cache(maxsize=128)
def _rank_cached(layout: DeviceLayout, nbytes: float, algorithm: str, max_size: int) -> tuple[Ranked, ...]:
    return rank(layout, nbytes, algorithm, max_size)


def best_program(
    target: Placement | DeviceLayout,
    nbytes: float = DEFAULT_BYTES,
    algorithm: str = "ring",
    max_size: int = 5,
) -> Ranked:
    """The simulated-fastest program for a placement or layout.

    >>> from distal.reduction.parallelism import enumerate_placements
    >>> from distal.reduction.system import v100_system
    >>> across, inside = enumerate_placements(v100_system(2), [2, 8], [1])
    >>> str(best_program(inside).program)
    '(root, InsideGroup, AllReduce)'
    >>> best_program(across).program.shape
    'ReduceScatter-AllReduce-AllGather'
    >>> str(across.hierarchy())
    '[(root, 1), (node, 2), (gpu, 4)]'
    """
    return _rank_cached(_as_layout(target), float(nbytes), algorithm, max_size)[0]


@dataclass(frozen=True, slots=True)
class ReductionPlan:
    """What `plan_reduction` chose: the best program, its steps, and both predictions."""

    best: Ranked
    allreduce: Ranked
    layout: DeviceLayout

    @property
    def program(self) -> ReductionProgram:
        return self.best.program

    @property
    def steps(self) -> tuple[tuple[CollectiveKind, tuple[tuple[int, ...], ...]], ...]:
        """Each step as (collective, device groups), roots first."""
        return tuple((s.collective, s.groups) for s in self.best.lowered.steps)

    @property
    def seconds(self) -> float:
        return self.best.seconds

    @property
    def allreduce_seconds(self) -> float:
        return self.allreduce.seconds

    @property
    def speedup(self) -> float:
        return self.allreduce.seconds / self.best.seconds if self.best.seconds > 0 else 1.0

    def __repr__(self) -> str:
        """One line: the program chosen, over how many devices, and both predictions."""
        devices = len(self.layout.devices)
        return (f"<ReductionPlan {_shape(self.program)} over {devices} device{'' if devices == 1 else 's'}: "
                f"predicted {short_seconds_text(self.seconds)}, a single AllReduce "
                f"{short_seconds_text(self.allreduce_seconds)}>")


LevelSpec = tuple[str, int, Link]


def _as_system(levels: System | Machine | Sequence[LevelSpec | Level]) -> System:
    if isinstance(levels, System):
        return levels
    if isinstance(levels, Machine):
        return system_from_machine(levels)
    out = []
    for lv in levels:
        if isinstance(lv, Level):
            out.append(lv)
        elif isinstance(lv, tuple) and len(lv) == 3:
            out.append(Level(lv[0], lv[1], lv[2]))
        else:
            raise ReductionError(
                f"expected levels as (name, cardinality, Link), but found {lv!r}"
            )
    return System(tuple(out))


def plan_reduction(
    levels: System | Machine | Sequence[LevelSpec | Level],
    devices: Sequence[int] | Sequence[Sequence[int]],
    nbytes: float = DEFAULT_BYTES,
    algorithm: str = "ring",
    max_size: int = 5,
) -> ReductionPlan:
    """Plan summing the partial results held by `devices` of a hierarchical machine.

    `devices` is one group of device ids (row-major over the levels) or a list
    of disjoint groups of one size, each summed separately (all at once).

    >>> from distal.reduction.system import NIC, NVSWITCH_A100
    >>> plan = plan_reduction([("node", 2, NIC), ("gpu", 4, NVSWITCH_A100)], range(8))
    >>> plan.program.shape
    'ReduceScatter-AllReduce-AllGather'
    >>> [(str(c), g) for c, g in plan.steps][1]
    ('AllReduce', ((0, 4), (1, 5), (2, 6), (3, 7)))
    >>> plan.speedup > 1.5
    True
    """
    system = _as_system(levels)
    grps: list[list[int]] = []
    flat: list[int] = []
    for d in devices:
        if isinstance(d, numbers.Integral):
            flat.append(int(d))
        elif isinstance(d, Iterable):
            grps.append([int(x) for x in d])
        else:
            raise ReductionError(f"expected device ids or groups of them, but found {d!r}")
    if flat and grps:
        raise ReductionError(
            f"expected one group of device ids or a list of groups, but found {list(devices)!r}"
        )
    if flat:
        grps = [flat]
    layout = layout_from_groups(system, grps)
    ranked = _rank_cached(layout, float(nbytes), algorithm, max_size)
    single = allreduce_program(layout.hierarchy)
    ar = next(r for r in ranked if r.program == single)
    return ReductionPlan(ranked[0], ar, layout)
