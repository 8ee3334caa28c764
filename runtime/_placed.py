"""Plans reading and writing placed tensors in place: launch tiles that are a format's device blocks.

A tensor with a format lives in the blocks of a `FormatStore`
(`_tensor_storage`). Where every tile a plan gives such a tensor is one
device's block, the plan's launches take the block store itself,
partitioned one block per point (`block_projection` maps the plan's
projection onto the block coordinates, `PlacedOperand` makes the launch
arguments), and the group's kernel sees each flat, padded block as the tile
it expects (`BlockTiles`). `replicate` fills the copies of an output along
its format's broadcast dimensions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distal.lower.plan import Group, Launch, Operand, Plan, Proj
from distal.lower.plan import Privilege as PlanPrivilege
from distal.redist.formats import Layout

from ._launch import Affine, Arg, Privilege, point_launch
from ._store import Store, tile_of
from ._tensor_storage import FormatStore, bound_cpus, copy_kernel, holder_index, native

__all__ = ["BlockTiles", "PlacedOperand", "block_projection", "block_tiles", "placed_operand", "replicate"]


def _ends(p: Proj, lower: tuple[int, ...], upper: tuple[int, ...]) -> tuple[int, int]:
    if p.dim is None:
        return p.offset, p.offset
    a, b = p.coeff * lower[p.dim] + p.offset, p.coeff * (upper[p.dim] - 1) + p.offset
    return min(a, b), max(a, b)


def _affine(p: Proj) -> Affine:
    return Affine(None, 0, p.offset) if p.dim is None else Affine(p.dim, p.coeff, p.offset)


def block_projection(plan: Plan, group: Group, launch: Launch, op: Operand, lay: Layout) -> tuple[Affine, ...] | None:
    """The projection of ``op``'s tiles onto the device blocks of a tensor placed by ``lay``, or None.

    There is one when the launch's tile of the tensor *is* a device's block:
    the format is `native`, every dimension a machine dimension partitions is
    cut into the format's tiles with colors within the machine dimension,
    and every other dimension is taken whole. Along a broadcast machine
    dimension a read takes the copy of the launch point's own processor
    when a distributed launch dimension runs along it (else copy 0); a
    fixed dimension has only its face.
    """
    if not native(lay) or launch.volume == 0:
        return None
    dist = lay.format.levels[0]
    mesh = lay.mesh
    order = len(lay.shape)
    tile = op.tile if op.tile is not None else lay.shape
    projs = op.projection if op.projection is not None else tuple(Proj(None, 0, 0) for _ in range(order))
    by_dim: dict[int, Proj] = {}
    for d in range(order):
        k = dist.machine_dim_of(d)
        parts = mesh.shape[k] if k is not None else 1
        lo, hi = _ends(projs[d], launch.lower, launch.upper)
        if parts > 1:
            if tile[d] != lay.tile[d] or lo < 0 or hi >= parts:
                return None
            by_dim[d] = projs[d]
        elif tile[d] < lay.shape[d] or lo != 0 or hi != 0:
            return None
    fixed = {a for a, _ in lay.fixed}
    lead: list[Affine] = []
    for axis, (name, size) in enumerate(mesh.axes):
        dim = dist.tensor_dim_of(axis)
        if name in fixed or size == 1:
            lead.append(Affine(None, 0, 0))
        elif dim is not None:
            lead.append(_affine(by_dim[dim]))
        else:
            lead.append(_own_copy(plan, group, launch, op, lay, axis, size))
    return (*lead, Affine(None, 0, 0))


def _own_copy(plan: Plan, group: Group, launch: Launch, op: Operand, lay: Layout, k: int, size: int) -> Affine:
    """Which copy along broadcast machine dimension ``k`` a launch reads: its processor's, where it can."""
    if op.privilege is not PlanPrivilege.READ or plan.machine is None or plan.machine != lay.format.machine:
        return Affine(None, 0, 0)
    for ld, slot in enumerate(plan.processor_slots[: group.distributed]):
        if slot == k and 0 <= launch.lower[ld] and launch.upper[ld] <= size:
            return Affine(ld)
    return Affine(None, 0, 0)


_Key = tuple[Operand, tuple[int, ...], tuple[int, ...]]


def _key(launch: Launch, op: Operand) -> _Key:
    """An operand of a launch, by value (the runtime rebuilds some launches, e.g. for partial sums)."""
    return (op, launch.lower, launch.upper)


@dataclass(eq=False)
class PlacedOperand:
    """A plan's operand read or written in place in a tensor's device blocks.

    ``projections`` gives, per operand of every launch, the projection onto
    the block store (`block_projection`). A written block is read and
    written (the kernel writes the point's box; the padding keeps its zeros).
    """

    held: FormatStore
    projections: dict[_Key, tuple[Affine, ...]]  # by `_key(launch, operand)`

    @property
    def block(self) -> tuple[int, ...]:
        blocks = self.held.blocks
        return (*([1] * (blocks.ndim - 1)), blocks.shape[-1])

    def arg(self, launch: Launch, op: Operand, privilege: Privilege) -> Arg:
        """The launch argument: the block store, one block per point."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE  # the kernel writes the box, the padding keeps its zeros
        return Arg(self.held.blocks, privilege, self.block, self.projections[_key(launch, op)])

    def pinned(self, launch: Launch, op: Operand, point: tuple[int, ...],
               privilege: Privilege) -> tuple[Store, Privilege]:
        """The block of one launch point, as a store of its own (pinned launches)."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE
        color = tuple(a.at(point) for a in self.projections[_key(launch, op)])
        return tile_of(self.held.blocks, self.block, color), privilege


def placed_operand(plan: Plan, n: int, lay: Layout, held: Callable[[], FormatStore]) -> PlacedOperand | None:
    """Tensor ``n`` of ``plan``, laid out by ``lay``, as an operand read in its device blocks.

    None where some launch's tile is not a block (`block_projection`);
    otherwise ``held()`` gives the blocks.
    """
    projections: dict[_Key, tuple[Affine, ...]] = {}
    for group, launch in plan.launches():
        for op in launch.operands:
            if op.tensor != n:
                continue
            proj = block_projection(plan, group, launch, op, lay)
            if proj is None:
                return None
            if projections.setdefault(_key(launch, op), proj) != proj:
                return None  # two launches alike but for their group: not worth telling apart
    return PlacedOperand(held(), projections) if projections else None


@dataclass(eq=False)
class BlockTiles:
    """A group's kernel whose placed operands arrive as device blocks: each is viewed as the point's tile.

    ``tiles[position]`` is the padded tile of the operand at that argument
    position; ``boxes[point][position]`` the extents of the point's tile.
    """

    kernel: Any
    tiles: dict[int, tuple[int, ...]]
    boxes: dict[tuple[int, ...], dict[int, tuple[int, ...]]]

    def __call__(self, point: tuple[int, ...], *arrays: Any) -> None:
        args = list(arrays)
        sizes = self.boxes[tuple(int(x) for x in point)]
        for pos, tile in self.tiles.items():
            view = args[pos].reshape(tile)
            args[pos] = view[tuple(slice(0, n) for n in sizes[pos])]
        self.kernel(point, *args)


def block_tiles(plan: Plan, group: Group, kernel: Any, placed: dict[int, PlacedOperand]) -> Any:
    """``kernel`` wrapped as `BlockTiles` for the placed operands of ``group`` (``kernel`` itself if none)."""
    tiles: dict[int, tuple[int, ...]] = {}
    boxes: dict[tuple[int, ...], dict[int, tuple[int, ...]]] = {}
    for launch in group.launches:
        for pos, op in enumerate(launch.operands):
            if op.tensor not in placed:
                continue
            info = plan.tensors[op.tensor]
            tiles[pos] = placed[op.tensor].held.layout.tile
            for p in launch.points():
                box = op.box(p, info.shape)
                boxes.setdefault(p, {})[pos] = tuple(hi - lo for lo, hi in box)
    if not tiles:
        return kernel
    return BlockTiles(kernel, tiles, boxes)


def replicate(held: FormatStore) -> None:
    """Copy every block at coordinate 0 of the broadcast machine dimensions to the other copies, in place.

    A plan writes one copy of a tensor whose format broadcasts; this makes
    the rest (one pinned launch per other copy, on the CPU bound to it).
    """
    lay = held.layout
    mesh = lay.mesh
    dist = lay.format.levels[0] if len(lay.format.levels) == 1 else None
    if dist is None:
        return
    fixed = {a for a, _ in lay.fixed}
    spread = [k for k, (name, size) in enumerate(mesh.axes)
              if name not in fixed and size > 1 and dist.tensor_dim_of(k) is None]
    if not spread:
        return
    key = copy_kernel()
    binding = bound_cpus(lay)
    block = (*([1] * (held.blocks.ndim - 1)), held.blocks.shape[-1])
    for device in lay.holders():
        here = holder_index(lay, device)
        there = tuple(0 if k in spread else c for k, c in enumerate(here))
        if here == there:
            continue
        point_launch(key, [(tile_of(held.blocks, block, (*there, 0)), Privilege.READ),
                           (tile_of(held.blocks, block, (*here, 0)), Privilege.WRITE)],
                     device or (0,), binding.get(device, 0))
