"""The NumPy executor of a plan: every launch, point by point, in this process.

It follows the plan's data exactly as Legate would: each point gets views of
its tiles (`Operand.box`), a REDUCE_ADD operand gets a zero buffer that is
added into the tensor after the point ran, and launches run in order. It
tests the lowering without Legate.

With a synthesized reduction (`Plan.reduction`), the buffer of a point is
added into its processor's partial result instead; after the last launch
the plan's program sums the partials (`distal.reduction.execute_lowered`,
the collectives step by step) and the first device of each group adds its
sum into the group's output box, as on Legate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from distal.errors import RuntimeFailure
from distal.lower.plan import Box, Plan, Privilege, Reduction

__all__ = ["run_numpy"]


def initial_data(plan: Plan) -> list[np.ndarray]:
    """The tensors' starting values: inputs' data, the output's (or zeros for `=`)."""
    arrays = []
    for info in plan.tensors:
        t = plan.tensor(info)  # the data side of the var
        if info.output and plan.zero_output:
            arrays.append(np.zeros(info.shape, dtype=info.dtype))
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


def _finish(plan: Plan, red: Reduction, partials: np.ndarray, output: np.ndarray) -> None:
    """Run the reduction program on the partials; add each group's sum into its output box."""
    from distal.reduction.execute import execute_lowered

    assert red.plan is not None
    values = execute_lowered(red.plan.best.lowered, dict(enumerate(partials)))
    for devices, box in zip(red.groups, red.boxes):
        index: tuple[Any, ...] = (*(slice(lo, hi) for lo, hi in box), Ellipsis)
        output[index] += partial_view(red, values[devices[0]], box)


def run_numpy(plan: Plan, device: Callable[[np.ndarray], Any] | None = None) -> None:
    """Run `plan` with NumPy; the output tensor receives the result.

    `device` (if given) turns each tile into what the kernel receives, as a
    GPU task hands it CuPy views of its tiles: tests pass
    `distal.lower.device_standin.to_device` to run the kernels' GPU path.
    """
    arrays = initial_data(plan)
    red = plan.reduction if plan.reduction is not None and plan.reduction.synthesized else None
    partials = None
    if red is not None:
        assert plan.machine is not None
        partials = np.zeros((plan.machine.size, math.prod(red.row)), dtype=plan.tensors[red.tensor].dtype)
    for group, launch in plan.launches():
        for point in launch.points():
            tiles: list[Any] = []
            folds = []
            for op in launch.operands:
                info = plan.tensors[op.tensor]
                box = op.box(point, info.shape)
                index: tuple[Any, ...] = (*(slice(lo, hi) for lo, hi in box), Ellipsis)
                view = arrays[op.tensor][index]
                if op.privilege is Privilege.REDUCE_ADD:
                    buffer = np.zeros_like(view)
                    if red is not None and partials is not None and op.tensor == red.tensor:
                        view = partial_view(red, partials[plan.device_of(group, point)], box)
                    folds.append((view, buffer))
                    tiles.append(buffer)
                elif op.privilege is Privilege.READ:
                    tiles.append(view.copy())  # a task must not change what it only reads
                else:
                    tiles.append(view)
            group.kernel(point, *(tiles if device is None else [device(t) for t in tiles]))
            for view, buffer in folds:
                view += buffer
    if red is not None and partials is not None:
        _finish(plan, red, partials, arrays[red.tensor])
    out = plan.output
    plan.tensor(out).set_array(arrays[plan.tensors.index(out)])
