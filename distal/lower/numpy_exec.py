"""The NumPy executor of a plan: every launch, point by point, in this process.

It follows the plan's data exactly as Legate would: each point gets views of
its tiles (`Operand.box`), a REDUCE_ADD operand gets a zero buffer that is
added into the tensor after the point ran, and launches run in order. It
tests the lowering without Legate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distal.errors import RuntimeFailure
from distal.lower.plan import Plan, Privilege

__all__ = ["run_numpy"]


def initial_data(plan: Plan) -> list[np.ndarray]:
    """The tensors' starting values: inputs' data, the output's (or zeros for `=`)."""
    arrays = []
    for info in plan.tensors:
        t = info.tensor
        if info.output and plan.zero_output:
            arrays.append(np.zeros(info.shape, dtype=info.dtype))
            continue
        data = t.to_numpy()
        if data.shape != info.shape:
            raise RuntimeFailure(
                f"expected data of shape {info.shape} for {info.name}, but found {data.shape}")
        arrays.append(np.array(data, dtype=info.dtype, copy=True))
    return arrays


def run_numpy(plan: Plan) -> None:
    """Run `plan` with NumPy; the output tensor receives the result."""
    arrays = initial_data(plan)
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
                    folds.append((view, buffer))
                    tiles.append(buffer)
                elif op.privilege is Privilege.READ:
                    tiles.append(view.copy())  # a task must not change what it only reads
                else:
                    tiles.append(view)
            group.kernel(point, *tiles)
            for view, buffer in folds:
                view += buffer
    out = plan.output
    out.tensor.set_array(arrays[plan.tensors.index(out)])
