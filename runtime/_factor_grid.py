"""The factor grid that redistribution programs run on, and moving a format's blocks to and from it.

A `FormatStore`'s blocks have one leading dimension per machine dimension
(`_holders.block_grid`); the redistribution programs (`_redistribute`) run
on one leading dimension per prime factor of the machine's dimensions
(`distal.redist.moves.FactorGrid`, which a finished redistribution carries).
`as_factor_grid` and `from_factor_grid` convert between the
two: the blocks themselves where both grids agree, otherwise a copy on
Legate (one launch where every machine dimension is prime or 1, one pinned
copy per holding device where one has a composite size).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from distal.format.layout import Layout
from distal.redist.moves import FactorGrid

from ._holders import block_grid, bound_cpus, holder_index
from ._launch import Affine, Arg, Privilege, index_launch, point_launch
from ._make import copy_kernel, zeros
from ._start import legate_runtime
from ._store import Store, legate_type, tile_of, wrap

if TYPE_CHECKING:
    from ._tensor_storage import FormatStore

__all__ = ["as_factor_grid", "factor_index", "from_factor_grid"]


def _fixed(lay: Layout) -> set[str]:
    return {a for a, _ in lay.fixed}


def factor_index(lay: Layout, grid: FactorGrid, device: tuple[int, ...]) -> tuple[int, ...]:
    """The index of ``device``'s block in a store of the factor grid ``grid``, as redistribution keeps it."""
    if not grid.factors:
        return (0,)
    fixed = _fixed(lay)
    coords = grid.coords(device)
    return tuple(0 if a in fixed else c for (a, _, _), c in zip(grid.factors, coords, strict=True))


def as_factor_grid(held: FormatStore, grid: FactorGrid) -> Store:
    """``held``'s blocks in the factor grid ``grid`` the redistribution programs run on.

    The blocks themselves where both grids agree (every machine dimension
    of prime size, none of size 1); otherwise a local copy: one launch where
    every machine dimension is prime or 1, one pinned copy per holding
    device (on its bound CPU) where one has a composite size.
    """
    return _regrid(held.blocks, held.layout, grid, to_factors=True)


def from_factor_grid(store: Store, lay: Layout, grid: FactorGrid) -> Store:
    """Blocks in the factor grid ``grid`` (a redistribution's result) as the blocks of a `FormatStore` laid out
    by ``lay``."""
    return _regrid(store, lay, grid, to_factors=False)


def _regrid(store: Store, lay: Layout, grid: FactorGrid, to_factors: bool) -> Store:
    fixed = _fixed(lay)
    factors, machine = grid.shape(fixed), block_grid(lay)
    if factors == machine:
        return store
    size = store.shape[-1]
    out_grid = factors if to_factors else machine
    if grid.composite:
        out = zeros((*out_grid, size), store.dtype, tile=(*([1] * len(out_grid)), size))

        def by_factor(lay: Layout, device: tuple[int, ...]) -> tuple[int, ...]:
            return factor_index(lay, grid, device)

        if to_factors:
            _copy_blocks(lay, store, holder_index, out, by_factor)
        else:
            _copy_blocks(lay, store, by_factor, out, holder_index)
        return out
    # every machine dimension is prime or 1: factor k is machine dimension axis_of[k]
    names = grid.names
    by_axis = {names.index(a): k for k, (a, _, _) in enumerate(grid.factors)}
    onto_machine = [Affine(None, 0, 0) if name in fixed or k not in by_axis else Affine(by_axis[k])
                    for k, name in enumerate(names)]
    onto_factors = [Affine(k) for k in range(len(factors))]
    out = wrap(legate_runtime().create_store(legate_type(store.dtype), (*out_grid, size)), store.dtype)
    src_map, out_map = (onto_machine, onto_factors) if to_factors else (onto_factors, onto_machine)
    if not grid.factors:
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
