"""A plan's operands as launch arguments: an `Arg` of an index launch, or a (store, privilege) of a pinned one.

A tensor used in place (`_placed.PlacedOperand`) gives its blocks; any other
gives its store, cut into the operand's tiles by its projection.
"""

from __future__ import annotations

from distal.lower.task_graph import Launch, Operand

from ._launch import Affine, Arg, Privilege
from ._placed import PlacedOperand
from ._store import Store, tile_of

__all__ = ["launch_arg", "pinned_arg"]


def launch_arg(stores: list[Store], placed: dict[int, PlacedOperand], launch: Launch, op: Operand) -> Arg:
    """``op`` of ``launch`` as an index launch's argument (``stores``: the plan's tensors' stores, by index)."""
    privilege = op.privilege
    if op.tensor in placed:
        return placed[op.tensor].arg(launch, op, privilege)
    store = stores[op.tensor]
    if op.tile is None or op.projection is None:
        return Arg(store, privilege)
    projection = tuple(p if p.dim is not None else Affine(None, 0, p.offset) for p in op.projection)
    return Arg(store, privilege, op.tile, projection, op.colors)


def pinned_arg(stores: list[Store], placed: dict[int, PlacedOperand], launch: Launch, op: Operand,
               point: tuple[int, ...]) -> tuple[Store, Privilege]:
    """``op`` of ``launch`` at ``point`` as a pinned launch's argument: the point's tile of its store."""
    privilege = op.privilege
    if op.tensor in placed:
        return placed[op.tensor].pinned(launch, op, point, privilege)
    store = stores[op.tensor]
    color = op.color(point)
    if op.tile is None or color is None:
        return store, privilege
    # A point whose box is empty may have a color past the last tile (it touches
    # nothing there); any tile will do, so take the last one.
    last = tuple(max(-(-n // t) - 1, 0) for n, t in zip(store.shape, op.tile))
    return tile_of(store, op.tile, tuple(min(c, m) for c, m in zip(color, last))), privilege
