"""Lowering a program over the synthesis hierarchy to physical device groups.

Each step becomes a `LoweredStep`: the collective, the groups of physical
devices (root first) that run it at the same time, and the data chunks each
participating device holds after it. The data on each device is cut into `k`
chunks (k = devices of the synthesis hierarchy, `numpy.array_split` along the
first axis); a ReduceScatter leaves device i of a group with the i-th block of
the chunks the group held. A backend turns a step into copies and reductions:
per group, sum the held chunks of all members and leave the result where
`chunks_after` says.
"""

from __future__ import annotations

from dataclasses import dataclass

from distal.errors import ReductionError
from distal.reduction.language import CollectiveKind, ReductionProgram
from distal.reduction.parallelism import DeviceLayout
from distal.reduction.semantics import DeviceState, apply_step, final_state, groups, initial_state

__all__ = ["LoweredProgram", "LoweredStep", "lower_to_devices"]


@dataclass(frozen=True, slots=True)
class LoweredStep:
    """One collective over disjoint groups of physical devices.

    `chunks_before` / `chunks_after` pair each participating device with the
    chunk indices it holds before / after the step (an empty tuple: it holds
    nothing, as non-roots after a Reduce).
    """

    collective: CollectiveKind
    groups: tuple[tuple[int, ...], ...]
    chunks_before: tuple[tuple[int, tuple[int, ...]], ...]
    chunks_after: tuple[tuple[int, tuple[int, ...]], ...]

    def __str__(self) -> str:
        return f"{self.collective} over {[list(g) for g in self.groups]}"


@dataclass(frozen=True, slots=True)
class LoweredProgram:
    """The lowered steps of a program, the chunk count and the layout."""

    program: ReductionProgram
    layout: DeviceLayout
    chunks: int
    steps: tuple[LoweredStep, ...]

    def __repr__(self) -> str:
        steps = len(self.steps)
        devices = len(self.layout.devices)
        return (f"<LoweredProgram {self.program.shape or 'of no steps'}: {steps} step{'' if steps == 1 else 's'} "
                f"over {devices} device{'' if devices == 1 else 's'}, "
                f"{self.chunks} chunk{'' if self.chunks == 1 else 's'} per device>")

    def explain(self) -> str:
        """One line per step: collective and physical groups."""
        lines = [f"{self.program}", f"  on {self.layout.system}, {self.chunks} chunks per device"]
        for n, s in enumerate(self.steps, 1):
            lines.append(f"  {n}. {s}")
        return "\n".join(lines)


def _rows(s: DeviceState) -> tuple[int, ...]:
    return tuple(r for r, cols in enumerate(s) if cols)


def lower_to_devices(program: ReductionProgram, layout: DeviceLayout) -> LoweredProgram:
    """Lower `program` through `layout`; refuses invalid or incomplete programs.

    >>> from distal.reduction.parallelism import layout_from_groups
    >>> from distal.reduction.language import parse_program
    >>> from distal.reduction.system import a100_system
    >>> lay = layout_from_groups(a100_system(2), [[0, 1, 16, 17]])
    >>> prog = parse_program("(node, InsideGroup, Reduce) ; (node, Master(root), AllReduce)"
    ...                      " ; (node, InsideGroup, Broadcast)")
    >>> for step in lower_to_devices(prog, lay).steps: print(step)
    Reduce over [[0, 1], [16, 17]]
    AllReduce over [[0, 16]]
    Broadcast over [[0, 1], [16, 17]]
    """
    hier = layout.hierarchy
    k = hier.size
    state = initial_state(k)
    out = []
    rows: dict[DeviceState, tuple[int, ...]] = {}

    def held(s: DeviceState) -> tuple[int, ...]:
        got = rows.get(s)
        if got is None:
            got = rows[s] = _rows(s)
        return got

    for n, step in enumerate(program.steps):
        dgroups = groups(hier, step)
        nxt = apply_step(state, dgroups, step.collective)
        if isinstance(nxt, str):
            raise ReductionError(
                f"expected step {n + 1} {step} to be semantically valid on {hier}, but found {nxt}",
                program,
            )
        members = [d for g in dgroups for d in g]
        before, after, pgroups = [], [], []
        for rep in layout.replicas:
            for g in dgroups:
                pgroups.append(tuple(rep[d] for d in g))
            for d in members:
                before.append((rep[d], held(state[d])))
                after.append((rep[d], held(nxt[d])))
        out.append(LoweredStep(step.collective, tuple(pgroups), tuple(before), tuple(after)))
        state = nxt
    if state != final_state(k):
        raise ReductionError(
            f"expected the program to end with every chunk summed over all {k} devices "
            f"of {hier}, but found a partial reduction",
            program,
        )
    return LoweredProgram(program, layout, k, tuple(out))
