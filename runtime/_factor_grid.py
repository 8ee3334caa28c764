"""The factor grid that redistribution programs run on, and moving a format's blocks to and from it.

A `FormatStore`'s blocks have one leading dimension per machine dimension
(`_holders.block_grid`); the redistribution programs (`_redistribute`) run
on one leading dimension per prime factor of the machine's dimensions
(`device_grid`). `as_factor_grid` and `from_factor_grid` convert between the
two: the blocks themselves where both grids agree, otherwise a copy on
Legate (one launch where every machine dimension is prime or 1, one pinned
copy per holding device where one has a composite size).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from distal.redist.formats import Layout
from distal.redist.mesh import Mesh

from ._holders import block_grid, bound_cpus, holder_index
from ._launch import Affine, Arg, Privilege, index_launch, point_launch
from ._make import copy_kernel, zeros
from ._start import legate_runtime
from ._store import Store, legate_type, tile_of, wrap

if TYPE_CHECKING:
    from ._tensor_storage import FormatStore

__all__ = ["as_factor_grid", "device_grid", "factor_index", "from_factor_grid"]


def device_grid(mesh: Mesh, lay: Layout | None = None) -> tuple[int, ...]:
    """The leading store dimensions: one per factor axis of ``mesh`` (extent 1 on fixed faces).

    A mesh of one device has the grid ``(1,)``.
    """
    fixed = {a for a, _ in lay.fixed} if lay is not None else set()
    grid = tuple(1 if f.axis in fixed else f.size for f in mesh.factors)
    return grid or (1,)


def factor_index(lay: Layout, device: tuple[int, ...]) -> tuple[int, ...]:
    """The index of ``device``'s block in a store of the factor grid (`device_grid`), as redistribution keeps it."""
    mesh = lay.mesh
    if not mesh.factors:
        return (0,)
    fixed = {a for a, _ in lay.fixed}
    coords = mesh.factor_coords(device)
    return tuple(0 if f.axis in fixed else c for f, c in zip(mesh.factors, coords, strict=True))


def _composite(mesh: Mesh) -> bool:
    return any(len(mesh.factors_of(n)) > 1 for n in mesh.names)


def as_factor_grid(held: FormatStore) -> Store:
    """``held``'s blocks in the factor grid the redistribution programs run on (`device_grid`).

    The blocks themselves where both grids agree (every machine dimension
    of prime size, none of size 1); otherwise a local copy: one launch where
    every machine dimension is prime or 1, one pinned copy per holding
    device (on its bound CPU) where one has a composite size.
    """
    return _regrid(held.blocks, held.layout, to_factors=True)


def from_factor_grid(store: Store, lay: Layout) -> Store:
    """Blocks in the factor grid of ``lay``'s mesh (a redistribution's result) as a `FormatStore`'s blocks."""
    return _regrid(store, lay, to_factors=False)


def _regrid(store: Store, lay: Layout, to_factors: bool) -> Store:
    mesh = lay.mesh
    factors, machine = device_grid(mesh, lay), block_grid(lay)
    if factors == machine:
        return store
    size = store.shape[-1]
    out_grid = factors if to_factors else machine
    if _composite(mesh):
        out = zeros((*out_grid, size), store.dtype, tile=(*([1] * len(out_grid)), size))
        if to_factors:
            _copy_blocks(lay, store, holder_index, out, factor_index)
        else:
            _copy_blocks(lay, store, factor_index, out, holder_index)
        return out
    # every machine dimension is prime or 1: factor k is machine dimension axis_of[k]
    fixed = {a for a, _ in lay.fixed}
    by_axis = {mesh.names.index(f.axis): k for k, f in enumerate(mesh.factors)}
    onto_machine = [Affine(None, 0, 0) if name in fixed or k not in by_axis else Affine(by_axis[k])
                    for k, name in enumerate(mesh.names)]
    onto_factors = [Affine(k) for k in range(len(factors))]
    out = wrap(legate_runtime().create_store(legate_type(store.dtype), (*out_grid, size)), store.dtype)
    src_map, out_map = (onto_machine, onto_factors) if to_factors else (onto_factors, onto_machine)
    if not mesh.factors:
        src_map, out_map = ([Affine(None, 0, 0)] * (store.ndim - 1)), [Affine(None, 0, 0)] * len(out_grid)
    index_launch(copy_kernel(), factors,
                 [Arg(store, Privilege.READ, (*([1] * (store.ndim - 1)), size), (*src_map, Affine(None, 0, 0))),
                  Arg(out, Privilege.WRITE, (*([1] * len(out_grid)), size), (*out_map, Affine(None, 0, 0)))])
    return out


def _copy_blocks(lay: Layout, source: Store, source_index: Callable[[Layout, tuple[int, ...]], tuple[int, ...]],
                 out: Store, out_index: Callable[[Layout, tuple[int, ...]], tuple[int, ...]]) -> None:
    key = copy_kernel()
    binding = bound_cpus(lay)
    src_block = (*([1] * (source.ndim - 1)), source.shape[-1])
    out_block = (*([1] * (out.ndim - 1)), out.shape[-1])
    for device in lay.holders():
        point_launch(key, [(tile_of(source, src_block, (*source_index(lay, device), 0)), Privilege.READ),
                           (tile_of(out, out_block, (*out_index(lay, device), 0)), Privilege.WRITE)],
                     device, binding.get(device, 0))
