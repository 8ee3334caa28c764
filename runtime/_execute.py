"""Running a lowered plan (`distal.lower.Plan`) on Legate.

Every launch of the plan becomes a `index_launch` of the group's kernel over
the launch's box, or, for pinned launches (rotations), a `point_launch` on
the real processor bound to the point's abstract processor
(`Machine.bind`). Everything goes through this package's launch and store
functions, so their guards against Legate's wrong-data behaviours apply:
stores are made written in full (`from_numpy`, `zeros`), outputs are
read-write or reductions, results are copied out last (`to_numpy`).

Tensor data lives on `tensor.storage` as a `TensorStore`: an input gets one
from its NumPy data on first use and keeps it; the output gets the store the
plan wrote, so `tensor.to_numpy()` reads the result. A 0-d tensor is a store
of shape (1,).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from distal.lower.plan import Group, Launch, Operand, Plan, Privilege, TensorInfo

from ._launch import Affine, Arg, index_launch, point_launch
from ._launch import Privilege as RtPrivilege
from ._make import from_numpy, zeros
from ._registry import register_kernel
from ._start import ensure_started, legate_runtime, processor_count
from ._store import Store, fence, tile_of, to_numpy

__all__ = ["TensorStore", "run_plan", "store_of"]

_PRIVILEGES = {
    Privilege.READ: RtPrivilege.READ,
    Privilege.WRITE: RtPrivilege.WRITE,
    Privilege.READ_WRITE: RtPrivilege.READ_WRITE,
    Privilege.REDUCE_ADD: RtPrivilege.REDUCE_ADD,
}
_lock = threading.Lock()
_keys: dict[int, int] = {}


@dataclass(eq=False)
class TensorStore:
    """A tensor's data on Legate: the store and the tensor's shape (a 0-d tensor uses shape (1,))."""

    store: Store
    shape: tuple[int, ...]

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data (waits for the launches that write it)."""
        return to_numpy(self.store).reshape(self.shape)


def _store_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    return shape if shape else (1,)


def store_of(info: TensorInfo) -> Store:
    """The Legate store holding `info.tensor`'s data, made from its NumPy data if needed."""
    t = info.tensor
    held = t.storage
    if isinstance(held, TensorStore) and held.shape == info.shape and held.store.dtype == info.dtype:
        return held.store
    data = np.asarray(t.to_numpy(), dtype=info.dtype).reshape(_store_shape(info.shape))
    store = from_numpy(data)
    t.storage = TensorStore(store, info.shape)
    return store


def _output_store(plan: Plan, info: TensorInfo) -> Store:
    if not plan.zero_output:
        return store_of(info)
    tile = None
    n = plan.tensors.index(info)
    for _, launch in plan.launches():
        op = launch.operands[n]
        if op.tile is not None and not launch.pinned:
            tile = op.tile
        break
    return zeros(_store_shape(info.shape), info.dtype, tile=tile)


def _key(plan: Plan, group_index: int) -> int:
    kernel = plan.groups[group_index].kernel
    with _lock:
        key = _keys.get(id(kernel))
        if key is None:
            key = register_kernel(kernel, kernel.name)
            _keys[id(kernel)] = key
        return key


def _arg(store: Store, op: Operand) -> Arg:
    privilege = _PRIVILEGES[op.privilege]
    if op.tile is None or op.projection is None:
        return Arg(store, privilege)
    projection = tuple(Affine(p.dim, p.coeff, p.offset) if p.dim is not None else Affine(None, 0, p.offset)
                       for p in op.projection)
    return Arg(store, privilege, op.tile, projection, op.colors)


def _pinned_arg(store: Store, op: Operand, point: tuple[int, ...]) -> tuple[Store, RtPrivilege]:
    privilege = _PRIVILEGES[op.privilege]
    color = op.color(point)
    if op.tile is None or color is None:
        return store, privilege
    # A point whose box is empty may have a color past the last tile (it touches
    # nothing there); any tile will do, so take the last one.
    last = tuple(max(-(-n // t) - 1, 0) for n, t in zip(store.shape, op.tile))
    return tile_of(store, op.tile, tuple(min(c, m) for c, m in zip(color, last))), privilege


def run_plan(plan: Plan, *, wait: bool = False) -> None:
    """Run every launch of `plan` on Legate; the output tensor's storage then holds the result.

    Launches are asynchronous; reading the output (`tensor.to_numpy()`)
    waits for them, as does `wait=True`.
    """
    ensure_started()
    stores = []
    for info in plan.tensors:
        stores.append(_output_store(plan, info) if info.output else store_of(info))
    binding: dict[tuple[int, ...], int] | None = None
    for g, group in enumerate(plan.groups):
        if not group.launches:
            continue
        key = _key(plan, g)
        for launch in group.launches:
            if launch.pinned:
                if binding is None:
                    binding = _binding(plan)
                _run_pinned(plan, group, key, launch, stores, binding)
            elif group.covers_domain(launch) or plan.machine is None:
                # Legate maps the points of a launch over the whole domain block-wise in
                # row-major order, as Machine.bind does (measured), so no pinning is needed.
                index_launch(key, launch.shape, [_arg(stores[op.tensor], op) for op in launch.operands],
                             lower=launch.lower)
            else:
                if binding is None:
                    binding = _binding(plan)
                _run_part(plan, group, key, launch, stores, binding)
    out = plan.output
    out.tensor.storage = TensorStore(stores[plan.tensors.index(out)], out.shape)
    if wait:
        fence()


def _run_part(plan: Plan, group: Group, key: int, launch: Launch, stores: list[Store],
              binding: dict[tuple[int, ...], int]) -> None:
    """A launch over part of the domain: one launch per real processor, pinned to it.

    Legate would spread the points of a partial launch over all processors;
    each point must run where `Machine.bind` puts its abstract processor.
    """
    from legate.core import TaskTarget

    by_proc: dict[int, list[tuple[int, ...]]] = {}
    for p in launch.points():
        by_proc.setdefault(binding.get(plan.processor_of(group, p), 0), []).append(p)
    args = [_arg(stores[op.tensor], op) for op in launch.operands]
    machine = legate_runtime().machine.only(TaskTarget.CPU)
    for proc, points in by_proc.items():
        lower = tuple(min(p[d] for p in points) for d in range(len(launch.lower)))
        upper = tuple(max(p[d] for p in points) + 1 for d in range(len(launch.lower)))
        if math.prod(hi - lo for lo, hi in zip(lower, upper)) == len(points):
            with machine.slice(slice(proc, proc + 1)):
                index_launch(key, tuple(hi - lo for lo, hi in zip(lower, upper)), args, lower=lower)
        else:
            for p in points:
                point_launch(key, [_pinned_arg(stores[op.tensor], op, p) for op in launch.operands], p, proc)


def _binding(plan: Plan) -> dict[tuple[int, ...], int]:
    if plan.machine is None:
        return {}
    return plan.machine.bind(processor_count("cpu"))


def _run_pinned(plan: Plan, group: Group, key: int, launch: Launch, stores: list[Store],
                binding: dict[tuple[int, ...], int]) -> None:
    point = launch.lower
    proc = binding.get(plan.processor_of(group, point), 0)
    args = [_pinned_arg(stores[op.tensor], op, point) for op in launch.operands]
    point_launch(key, args, point, proc)

