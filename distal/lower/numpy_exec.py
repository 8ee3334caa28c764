"""The NumPy executor of a plan: every launch, point by point, in this process.

It follows the plan's data exactly as Legate would: each point gets views of
its tiles (`Operand.box`), a REDUCE_ADD operand gets a zero buffer that is
added into the tensor after the point ran, and launches run in order. An
`=` output whose first launch writes distinct tiles covering it starts
unwritten (`unwritten`) and that launch's points run `run_fresh`, which
zero-fills a tile only where its first step does not write it whole, as
Legate's first launch does (`runtime._fresh_output.first_launch_writes`). It
tests the lowering without Legate.

With a synthesized reduction (`PlanBase.reduction`), the buffer of a point is
added into its processor's partial result instead; after the last launch
the plan's program sums the partials (`distal.reduction.execute_lowered`,
the collectives step by step) and the first device of each group adds its
sum into the group's output box, as on Legate. With a held reduction
(`distal.lower.reductions.HeldReduction`) the partials are added into the
output after the last launch of each stage, each processor's once, and
start at zero again, as on Legate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from distal.errors import RuntimeFailure
from distal.lower.reductions import HeldReduction, held_folds, partials_reduction
from distal.lower.task_graph import Box, PlanBase, Privilege, Reduction

__all__ = ["run_numpy"]


def unwritten(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray:
    """A new output array nothing has written (its first launch writes every element; tests fill it with NaN)."""
    return np.empty(shape, dtype=dtype)


def first_launch_fresh(plan: PlanBase) -> bool:
    """Whether the plan's first launch writes its new `=` output whole: one writing operand of the output
    whose points' boxes are distinct and cover it, in a launch whose task bodies have `run_fresh`."""
    if not plan.zero_output:
        return False
    found = next(iter(plan.launches()), None)
    if found is None:
        return False
    group, first = found
    n = plan.tensors.index(plan.output)
    ops = [op for op in first.operands if op.tensor == n]
    if len(ops) != 1 or ops[0].privilege not in (Privilege.WRITE, Privilege.READ_WRITE):
        return False
    if getattr(group.body, "run_fresh", None) is None:
        return False
    shape = plan.output.shape
    boxes = [ops[0].box(p, shape) for p in first.points()]
    covered = sum(math.prod(hi - lo for lo, hi in b) for b in boxes)
    return len(set(boxes)) == len(boxes) and covered == math.prod(shape)


def initial_data(plan: PlanBase, fresh: bool = False) -> list[np.ndarray]:
    """The tensors' starting values: inputs' data, the output's (zeros for `=`; unwritten when `fresh`)."""
    arrays = []
    for info in plan.tensors:
        t = plan.tensor(info)  # the data side of the var
        if info.output and plan.zero_output:
            arrays.append(unwritten(info.shape, info.dtype) if fresh else np.zeros(info.shape, dtype=info.dtype))
            continue
        data = t.to_numpy()
        if data.shape != info.shape:
            raise RuntimeFailure(
                f"expected data of shape {info.shape} for {info.name}, but found {data.shape}")
        arrays.append(np.array(data, dtype=info.dtype, copy=True))
    return arrays


def partial_view(red: Reduction, flat: np.ndarray, box: Box) -> np.ndarray:
    """The part of a processor's partial result (`flat`: `red.row` stored flat) that holds output `box`."""
    view = flat.reshape(red.row)[tuple(slice(lo, hi) for lo, hi in red.local(box))]
    return view.reshape(()) if not box else view


def _finish(plan: PlanBase, red: Reduction, partials: np.ndarray, output: np.ndarray) -> None:
    """Run the reduction program on the partials; add each group's sum into its output box."""
    from distal.reduction.execute import execute_lowered

    assert red.plan is not None
    values = execute_lowered(red.plan.best.lowered, dict(enumerate(partials)))
    for devices, box in zip(red.groups, red.boxes):
        index: tuple[Any, ...] = (*(slice(lo, hi) for lo, hi in box), Ellipsis)
        output[index] += partial_view(red, values[devices[0]], box)


def run_numpy(plan: PlanBase, device: Callable[[np.ndarray], Any] | None = None) -> None:
    """Run `plan` with NumPy; the output tensor receives the result.

    `device` (if given) turns each tile into what the kernel receives, as a
    GPU task hands it CuPy views of its tiles: tests pass
    `distal.lower.device_standin.to_device` to run the kernels' GPU path.
    """
    fresh = first_launch_fresh(plan)
    arrays = initial_data(plan, fresh)
    out = plan.tensors.index(plan.output)
    red = partials_reduction(plan)  # synthesized or held: points add into their processor's partial
    partials = None
    if red is not None:
        assert plan.machine is not None
        partials = np.zeros((plan.machine.size, math.prod(red.row)), dtype=plan.tensors[red.tensor].dtype)
    folds = dict(held_folds(plan, red)) if isinstance(red, HeldReduction) else {}
    for number, (group, launch) in enumerate(plan.launches()):
        for point in launch.points():
            tiles: list[Any] = []
            adds = []
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                box = op.box(point, info.shape)
                index: tuple[Any, ...] = (*(slice(lo, hi) for lo, hi in box), Ellipsis)
                view = arrays[op.tensor][index]
                if op.privilege is Privilege.REDUCE_ADD or (red is not None and op.tensor == red.tensor):
                    buffer = np.zeros_like(view)
                    if red is not None and partials is not None and op.tensor == red.tensor:
                        view = partial_view(red, partials[plan.device_of(group, point)], box)
                    adds.append((view, buffer))
                    tiles.append(buffer)
                elif op.privilege is Privilege.READ:
                    tiles.append(view.copy())  # a task must not change what it only reads
                else:
                    tiles.append(view)
            args = tiles if device is None else [device(t) for t in tiles]
            if fresh and number == 0:  # the output's tile holds no data yet (`first_launch_fresh`)
                position = next(p for p, op in enumerate(launch.operands) if op.tensor == out)
                group.body.run_fresh(point, position, *args)
            else:
                group.body(point, *args)
            for view, buffer in adds:
                view += buffer
        if number in folds and partials is not None:  # a held reduction's stage ends: each partial once
            assert red is not None
            for holder, box in folds[number]:
                index = (*(slice(lo, hi) for lo, hi in box), Ellipsis)
                arrays[red.tensor][index] += partial_view(red, partials[holder], box)
            partials[...] = 0
    if red is not None and red.synthesized and partials is not None:
        _finish(plan, red, partials, arrays[red.tensor])
    plan.tensor(plan.output).set_array(arrays[out])
