"""Device groups of a step (Table 2) and the state-matrix semantics of Figure 8.

Devices of a synthesis hierarchy are numbered row-major over its levels. A
device's state is a k × k boolean matrix (k devices, data cut in k chunks),
stored as k column bitmasks: `state[r]` has bit j set when device j's original
chunk r has been summed into this device's chunk r; a zero row is a chunk the
device does not hold.

`groups(hierarchy, step)` derives the device groups of `(slice, form)`:
the slice cuts devices into slice-groups (the devices under one instance of
the slice level); `InsideGroup` reduces inside each; `Parallel(e)` reduces the
p-th devices of the slice-groups under one instance of `e`, for every p;
`Master(e)` does so only for p = 0. The first device of a group is its root.
"""

from __future__ import annotations

from collections.abc import Sequence

from distal.errors import ReductionError
from distal.reduction.language import CollectiveKind, ReductionProgram, ReductionStep
from distal.reduction.parallelism import SynthesisHierarchy

__all__ = [
    "DeviceState",
    "State",
    "apply_collective",
    "check_program",
    "final_state",
    "groups",
    "initial_state",
    "run_program",
]

DeviceState = tuple[int, ...]
State = tuple[DeviceState, ...]
Groups = tuple[tuple[int, ...], ...]


def _digits(index: int, sizes: Sequence[int]) -> tuple[int, ...]:
    out = []
    for s in reversed(sizes):
        out.append(index % s)
        index //= s
    return tuple(reversed(out))


def groups(hierarchy: SynthesisHierarchy, step: ReductionStep) -> Groups:
    """The disjoint device groups that `(slice, form)` derives.

    >>> from distal.reduction.language import Form
    >>> h = SynthesisHierarchy(("node", "gpu"), (2, 2), (0, 1))
    >>> groups(h, ReductionStep("node", Form("Parallel", "root"), CollectiveKind.ALL_REDUCE))
    ((0, 2), (1, 3))
    >>> groups(h, ReductionStep("node", Form("Master", "root"), CollectiveKind.ALL_REDUCE))
    ((0, 2),)
    """
    names = hierarchy.all_names
    if step.slice not in names:
        raise ReductionError(
            f"expected a slice level of {list(names)}, but found {step.slice!r}", step
        )
    s = names.index(step.slice)
    e = s
    if step.form.level is not None:
        if step.form.level not in names:
            raise ReductionError(
                f"expected a form level of {list(names)}, but found {step.form.level!r}", step
            )
        e = names.index(step.form.level)
        if e >= s:
            raise ReductionError(
                f"expected the form level to be an ancestor of slice {step.slice}, "
                f"but found {step.form.level}",
                step,
            )
    sizes = hierarchy.sizes
    table: dict[tuple[int, ...], list[int]] = {}
    for dev in range(hierarchy.size):
        dg = _digits(dev, sizes)
        if step.form.kind == "InsideGroup":
            key = dg[:s]
        else:
            position = dg[s:]
            if step.form.kind == "Master" and any(position):
                continue
            key = dg[:e] + position
        table.setdefault(key, []).append(dev)
    return tuple(tuple(v) for _, v in sorted(table.items()))


def initial_state(k: int) -> State:
    """Device i holds only its own data: column i set in every row."""
    full_rows = (1,) * k
    return tuple(tuple(m << i for m in full_rows) for i in range(k))


def final_state(k: int) -> State:
    """Every device holds every chunk summed over all k devices."""
    full = (1 << k) - 1
    return tuple((full,) * k for _ in range(k))


def _rowmask(s: DeviceState) -> int:
    m = 0
    for r, cols in enumerate(s):
        if cols:
            m |= 1 << r
    return m


def _sum_disjoint(states: Sequence[DeviceState]) -> DeviceState | str:
    """Rows must match and columns of a row must be disjoint (R-ALLREDUCE)."""
    rows = _rowmask(states[0])
    for s in states[1:]:
        if _rowmask(s) != rows:
            return "devices hold different chunks"
    if rows == 0:
        return "devices hold no data"
    out = list(states[0])
    for s in states[1:]:
        for r, cols in enumerate(s):
            if out[r] & cols:
                return "a chunk would be summed twice"
            out[r] |= cols
    return tuple(out)


def apply_collective(
    collective: CollectiveKind, states: Sequence[DeviceState], strict_broadcast: bool = False
) -> tuple[DeviceState, ...] | str:
    """The post-states of one group under `collective`, or why it is invalid.

    Broadcast follows Figure 8 (some receiver must gain); with
    `strict_broadcast` every receiver must gain.

    >>> s = initial_state(2)
    >>> apply_collective(CollectiveKind.REDUCE_SCATTER, s)
    ((3, 0), (0, 3))
    >>> apply_collective(CollectiveKind.ALL_REDUCE, ((3, 0), (0, 3)))
    'devices hold different chunks'
    """
    p = len(states)
    if collective in (CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE, CollectiveKind.REDUCE_SCATTER):
        total = _sum_disjoint(states)
        if isinstance(total, str):
            return total
        if collective is CollectiveKind.ALL_REDUCE:
            return (total,) * p
        if collective is CollectiveKind.REDUCE:
            empty = (0,) * len(total)
            return (total,) + (empty,) * (p - 1)
        rows = [r for r, cols in enumerate(total) if cols]
        if len(rows) % p:
            return f"{len(rows)} chunks do not scatter over {p} devices"
        per = len(rows) // p
        out = []
        for i in range(p):
            mine = set(rows[i * per : (i + 1) * per])
            out.append(tuple(c if r in mine else 0 for r, c in enumerate(total)))
        return tuple(out)
    if collective is CollectiveKind.ALL_GATHER:
        masks = [_rowmask(s) for s in states]
        acc = 0
        for m in masks:
            if acc & m:
                return "devices hold overlapping chunks"
            acc |= m
        if len({bin(m).count("1") for m in masks}) != 1:
            return "devices hold different numbers of chunks"
        if acc == 0:
            return "devices hold no data"
        merged = tuple(
            next((s[r] for s in states if s[r]), 0) for r in range(len(states[0]))
        )
        return (merged,) * p
    assert collective is CollectiveKind.BROADCAST
    root = states[0]
    strict = False
    for s in states[1:]:
        for a, b in zip(s, root):
            if a & ~b:
                return "the root holds less than another device"
        if s != root:
            strict = True
        elif strict_broadcast:
            return "a receiver already holds the broadcast data"
    if not strict:
        return "the broadcast adds no information"
    return (root,) * p


def apply_step(
    state: State, grps: Groups, collective: CollectiveKind, strict_broadcast: bool = False
) -> State | str:
    """Apply `collective` to every group; devices outside the groups keep their state."""
    new = list(state)
    for g in grps:
        out = apply_collective(collective, [state[d] for d in g], strict_broadcast)
        if isinstance(out, str):
            return f"{out} in group {list(g)}"
        for d, s in zip(g, out):
            new[d] = s
    return tuple(new)


def run_program(hierarchy: SynthesisHierarchy, program: ReductionProgram) -> State:
    """The state after `program`, starting from `initial_state`; refuses invalid steps."""
    state = initial_state(hierarchy.size)
    for n, step in enumerate(program.steps):
        grps = groups(hierarchy, step)
        out = apply_step(state, grps, step.collective)
        if isinstance(out, str):
            raise ReductionError(
                f"expected step {n + 1} {step} to be semantically valid on {hierarchy}, "
                f"but found {out}",
                program,
            )
        state = out
    return state


def check_program(hierarchy: SynthesisHierarchy, program: ReductionProgram) -> None:
    """Refuse a program that is invalid or does not end in the reduced state.

    >>> from distal.reduction.language import parse_program
    >>> h = SynthesisHierarchy(("node", "gpu"), (2, 2), (0, 1))
    >>> check_program(h, parse_program("(root, InsideGroup, AllReduce)"))
    >>> check_program(h, parse_program("(node, InsideGroup, AllReduce)"))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    distal.errors.ReductionError: expected the program to end with every chunk summed ...
    """
    state = run_program(hierarchy, program)
    if state != final_state(hierarchy.size):
        raise ReductionError(
            f"expected the program to end with every chunk summed over all "
            f"{hierarchy.size} devices, but found a partial reduction",
            program,
        )
