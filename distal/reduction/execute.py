"""A NumPy executor of reduction programs on per-device arrays.

`execute(program, placement, device_values)` cuts each device's array into the
program's k chunks along the first axis, runs every lowered step (sums for
AllReduce, ReduceScatter and Reduce; copies for AllGather and Broadcast) and
returns each device's array at the end. For any valid program the result
equals the plain sum over each reduction group, exactly for integer data.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from distal.errors import ReductionError
from distal.reduction.language import CollectiveKind, ReductionProgram
from distal.reduction.lowering import LoweredProgram, lower_to_devices
from distal.reduction.parallelism import DeviceLayout, Placement

__all__ = ["execute", "execute_lowered"]

Array = npt.NDArray[np.generic]

_SUMS = (CollectiveKind.ALL_REDUCE, CollectiveKind.REDUCE_SCATTER, CollectiveKind.REDUCE)


def execute(
    program: ReductionProgram, placement: Placement | DeviceLayout, device_values: Mapping[int, npt.ArrayLike]
) -> dict[int, Array]:
    """Run `program` on the arrays of the devices of `placement`.

    >>> from distal.reduction.parallelism import layout_from_groups
    >>> from distal.reduction.language import parse_program
    >>> from distal.reduction.system import a100_system
    >>> lay = layout_from_groups(a100_system(2), [[0, 16]])
    >>> prog = parse_program("(root, InsideGroup, ReduceScatter) ; (root, InsideGroup, AllGather)")
    >>> out = execute(prog, lay, {0: np.arange(4), 16: np.ones(4, dtype=int)})
    >>> out[16].tolist()
    [1, 2, 3, 4]
    """
    layout = placement.layout() if isinstance(placement, Placement) else placement
    if not isinstance(layout, DeviceLayout):
        raise ReductionError(f"expected a Placement or a DeviceLayout, but found {placement!r}")
    return execute_lowered(lower_to_devices(program, layout), device_values)


def execute_lowered(lowered: LoweredProgram, device_values: Mapping[int, npt.ArrayLike]) -> dict[int, Array]:
    """Run an already lowered program; devices outside the layout pass through."""
    devices = lowered.layout.devices
    missing = [d for d in devices if d not in device_values]
    if missing:
        raise ReductionError(
            f"expected values for every device of the reduction, but found none for {missing}"
        )
    arrays = {d: np.asarray(v) for d, v in device_values.items()}
    shapes = {arrays[d].shape for d in devices}
    if len(shapes) != 1:
        raise ReductionError(
            f"expected one array shape on all devices, but found {sorted(shapes)}"
        )
    if arrays[devices[0]].ndim == 0:
        raise ReductionError("expected arrays with at least one dimension, but found scalars")
    k = lowered.chunks
    held: dict[int, dict[int, Array]] = {
        d: dict(enumerate(np.array_split(arrays[d], k))) for d in devices
    }
    for step in lowered.steps:
        after = dict(step.chunks_after)
        new: dict[int, dict[int, Array]] = {}
        for g in step.groups:
            if step.collective in _SUMS:
                total = {r: np.sum([held[m][r] for m in g], axis=0) for r in held[g[0]]}
            elif step.collective is CollectiveKind.BROADCAST:
                total = dict(held[g[0]])
            else:
                total = {r: x for m in g for r, x in held[m].items()}
            for m in g:
                new[m] = {r: np.array(total[r], copy=True) for r in after[m]}
        held.update(new)
    out = dict(arrays)
    for d in devices:
        parts = [held[d][r] for r in range(k)]
        out[d] = np.concatenate(parts).astype(arrays[d].dtype, copy=False)
    return out
