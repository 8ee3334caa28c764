"""Plans reading and writing placed tensors in place: launch tiles that lie in a format's device blocks.

A tensor with a format lives in the blocks of a `FormatStore`
(`_tensor_storage`): one padded block per holding device, for flat and
hierarchical formats alike (a hierarchical format's blocks are those of its
leaf level, one coordinate per machine dimension of every level). Where every
tile a plan gives such a tensor lies inside one device's block (the block
itself, or a sub-block of it), the plan's launches take the block store
itself, one block per point: `block_projection` finds, per machine
dimension, the affine map from launch point to block coordinate (fitted over
the launch's points), `PlacedOperand` makes the launch arguments, and the
group's kernel sees the point's tile as a view of the flat, padded block at
the tile's offset in it (`BlockTiles`). A tile that spans several blocks
forming a box of the block store (a node's leaf blocks, a run of row blocks)
is taken as that box of blocks per point; the kernel gets the tile assembled
from them (`_pieces`) and a written tile is put back after it. Only where the
block coordinates are not affine in the launch point, a tile's blocks are
not a box, or two points would write one block, does the runtime gather the
tensor into one store (`gathered`). `replicate` fills the copies of an
output along its format's broadcast dimensions.

The decision itself (`block_projection`, `gathered`) is plain plan and
layout data in `distal.lower.in_place`, which `explain()` prints too; the
finished plan carries it (`distal.lower.executable.Executable.views`) and
this module launches from it (its `Proj` projections as `Affine`).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from distal.lower.executable import InPlaceViews
from distal.lower.task_graph import Box, Group, Launch, Operand, PlanBase, Proj

from ._holders import bound_cpus, holder_index
from ._launch import Affine, Arg, Privilege, point_launch
from ._make import copy_kernel
from ._store import Store, tile_of
from ._tensor_storage import FormatStore

if TYPE_CHECKING:
    from distal.format.layout import Layout
    from distal.lower.in_place import BlockView

__all__ = ["BlockTiles", "PlacedOperand", "block_tiles", "placed_operand", "replicate"]


@functools.lru_cache(maxsize=4096)
def _affines(projection: tuple[Proj, ...]) -> tuple[Affine, ...]:
    """A block projection (`distal.lower.task_graph.Proj` components) as the runtime's `Affine` maps."""
    return tuple(Affine(p.dim, p.coeff, p.offset) for p in projection)


@dataclass(eq=False)
class PlacedOperand:
    """A plan's operand read or written in place in a tensor's device blocks.

    ``views`` gives, per operand of every launch, the projection onto the
    block store and each point's box in its block (`Executable.views`). A
    written block is read and written (the kernel writes the point's box;
    the rest of the block, padding included, keeps what it holds).
    """

    held: FormatStore
    views: InPlaceViews  # of the executable (`InPlaceViews.of(launch, operand)`)

    @property
    def block(self) -> tuple[int, ...]:
        blocks = self.held.blocks
        return (*([1] * (blocks.ndim - 1)), blocks.shape[-1])

    def arg(self, launch: Launch, op: Operand, privilege: Privilege) -> Arg:
        """The launch argument: the block store, one block per point."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE  # the kernel writes the box, the rest of the block stays
        view = self.views.of(launch, op)
        return Arg(self.held.blocks, privilege, self._tile(view), _affines(view.projection))

    def _tile(self, view: BlockView) -> tuple[int, ...]:
        """The tile of the block store one point takes: one block, or the blocks its tile spans."""
        return self.block if view.span is None else (*view.span, self.held.blocks.shape[-1])

    def pinned(self, launch: Launch, op: Operand, point: tuple[int, ...],
               privilege: Privilege) -> tuple[Store, Privilege]:
        """The block of one launch point, as a store of its own (pinned launches)."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE
        view = self.views.of(launch, op)
        color = tuple(a.at(point) for a in view.projection)
        return tile_of(self.held.blocks, self._tile(view), color), privilege

    def spans(self, launch: Launch, op: Operand) -> bool:
        """Whether ``op``'s tiles in ``launch`` span several blocks (the kernel assembles them)."""
        return self.views.of(launch, op).span is not None

    def local(self, launch: Launch, op: Operand, point: tuple[int, ...]) -> Box:
        """The box of ``point``'s tile in its block."""
        return self.views.of(launch, op).local(point)


def placed_operand(views: InPlaceViews, held: Callable[[], FormatStore]) -> PlacedOperand:
    """A tensor read and written in its device blocks as the executable's ``views`` say (`Executable.views`);
    ``held()`` gives the blocks."""
    return PlacedOperand(held(), views)


@dataclass(eq=False)
class BlockTiles:
    """A group's kernel whose placed operands arrive as device blocks: each is viewed as the point's tile.

    ``tiles[position]`` is the padded block shape of the operand at that
    argument position; ``boxes[point][position]`` the box of the point's
    tile in that block. An operand whose tiles span several blocks
    (``spanned[position]``: its layout and whether the kernel writes it)
    has instead the tile's box in the tensor: the kernel gets the tile
    assembled from the blocks, and a written tile is put back into them.
    """

    kernel: Any
    tiles: dict[int, tuple[int, ...]]
    boxes: dict[tuple[int, ...], dict[int, Box]]
    spanned: dict[int, tuple[Layout, bool]]

    def __post_init__(self) -> None:
        # per point, worked out once: (argument position, block shape, the tile's slices in the block, or
        # for a spanning tile its shape and pieces and whether it is written back)
        self._views: dict[tuple[int, ...], tuple[_View, ...]] = {}
        for p, box in self.boxes.items():
            views: list[_View] = []
            for pos, tile in self.tiles.items():
                if pos in self.spanned:
                    lay, written = self.spanned[pos]
                    shape = tuple(hi - lo for lo, hi in box[pos])
                    views.append((pos, tile, None, (shape, _pieces(lay, box[pos]), written)))
                else:
                    views.append((pos, tile, tuple(slice(lo, hi) for lo, hi in box[pos]), None))
            self._views[p] = tuple(views)

    def __call__(self, point: tuple[int, ...], *arrays: Any) -> None:
        self._run(point, arrays, None)

    def run_fresh(self, point: tuple[int, ...], position: int, *arrays: Any) -> None:
        """As a call, with the argument at ``position`` (an output) holding no data yet: its tile goes to the
        kernel's ``run_fresh`` (it zero-fills the tile only where needed) when the tile is the whole block
        or the argument is not placed; a block the tile fills only in part (padding) is zero-filled first."""
        view = next((v for v in self._views[tuple(point)] if v[0] == position), None)
        if view is not None and (view[3] is not None or view[2] is None
                                 or tuple(s.stop - s.start for s in view[2]) != view[1]):
            self.kernel.zero_fill(arrays[position])  # the task body's zero fill (`TaskBody.zero_fill`)
            self._run(point, arrays, None)
            return
        self._run(point, arrays, position)

    def zero_fill(self, tile: Any) -> None:
        """Zero a fresh output tile as the wrapped task body does (`TaskBody.zero_fill`)."""
        zero = getattr(self.kernel, "zero_fill", None)
        if zero is None:
            tile[...] = 0
        else:
            zero(tile)

    def _run(self, point: tuple[int, ...], arrays: tuple[Any, ...], fresh: int | None) -> None:
        args = list(arrays)
        back: list[tuple[int, Any, list[_Piece]]] = []
        for pos, tile, index, spans in self._views[tuple(point)]:
            if spans is None:
                assert index is not None
                args[pos] = args[pos].reshape(tile)[index]
                continue
            shape, pieces, written = spans
            blocks = args[pos].reshape((*args[pos].shape[:-1], *tile))
            assembled = _empty_like(blocks, shape)
            for lead, in_block, in_tile in pieces:
                assembled[in_tile] = blocks[lead][in_block]
            args[pos] = assembled
            if written:
                back.append((pos, blocks, pieces))
        if fresh is None:
            self.kernel(point, *args)
        elif hasattr(self.kernel, "run_fresh"):
            self.kernel.run_fresh(point, fresh, *args)
        else:
            self.zero_fill(args[fresh])
            self.kernel(point, *args)
        for pos, blocks, pieces in back:
            for lead, in_block, in_tile in pieces:
                blocks[lead][in_block] = args[pos][in_tile]


_Piece = tuple[tuple[Any, ...], tuple[slice, ...], tuple[slice, ...]]
_View = tuple[int, tuple[int, ...], tuple[slice, ...] | None, tuple[tuple[int, ...], list[_Piece], bool] | None]


def _empty_like(blocks: Any, shape: tuple[int, ...]) -> Any:
    """An uninitialised array of ``shape`` in the blocks' array library and dtype (every element is then set)."""
    import numpy as np

    if isinstance(blocks, np.ndarray):
        return np.empty(shape, dtype=blocks.dtype)
    import cupy

    return cupy.empty(shape, dtype=blocks.dtype)


def _pieces(lay: Layout, box: Box) -> list[_Piece]:
    """The tensor's ``box`` cut by the blocks it spans, seen as (*blocks, *tile): per piece, the block
    (relative to the box's first block along every machine dimension; 0 along one that partitions
    nothing), the piece's slices in the block and in the tile. Within a block a dimension's elements
    are consecutive, so each piece is one box."""
    per_dim: list[list[tuple[dict[str, int], slice, slice]]] = []
    for d, (lo, hi) in enumerate(box):
        runs: list[tuple[dict[str, int], slice, slice]] = []
        first: dict[str, int] | None = None
        i = lo
        while i < hi:
            # element i's block and place in it, and how many elements on stay in that block: up to the
            # next boundary of a tile at any level
            coords: dict[str, int] = {}
            rest, length = i, hi - i
            for axis, _, t in lay.dims[d].parts:
                color = rest // t
                rest -= color * t
                coords[axis] = color
                length = min(length, t - rest)
            if first is None:
                first = coords
            rel = {a: c - first[a] for a, c in coords.items()}
            runs.append((rel, slice(rest, rest + length), slice(i - lo, i - lo + length)))
            i += length
        per_dim.append(runs or [({}, slice(0, 0), slice(0, 0))])
    out = []
    for combo in itertools.product(*per_dim):
        block: dict[str, int] = {}
        for r, _, _ in combo:
            block.update(r)
        lead = tuple(block.get(name, 0) for name, _ in lay.axes)
        out.append((lead, tuple(c[1] for c in combo), tuple(c[2] for c in combo)))
    return out


def block_tiles(plan: PlanBase, group: Group, kernel: Any, placed: dict[int, PlacedOperand]) -> Any:
    """``kernel`` wrapped as `BlockTiles` for the placed operands of ``group`` (``kernel`` itself if none)."""
    tiles: dict[int, tuple[int, ...]] = {}
    boxes: dict[tuple[int, ...], dict[int, Box]] = {}
    spanned: dict[int, tuple[Layout, bool]] = {}
    for launch in group.launches:
        for pos, op in enumerate(launch.operands):
            if op.tensor not in placed:
                continue
            held = placed[op.tensor]
            tiles[pos] = held.held.layout.tile
            if held.spans(launch, op):
                spanned[pos] = (held.held.layout, op.privilege is not Privilege.READ)
            for p in launch.points():
                boxes.setdefault(p, {})[pos] = held.local(launch, op, p)
    if not tiles:
        return kernel
    return BlockTiles(kernel, tiles, boxes, spanned)


def replicate(held: FormatStore) -> None:
    """Copy every block at coordinate 0 of the broadcast machine dimensions to the other copies, in place.

    A plan writes one copy of a tensor whose format broadcasts; this makes
    the rest (one pinned launch per other copy, on the CPU bound to it).
    The broadcast machine dimensions are those of every level that
    partition no tensor dimension and are not fixed.
    """
    lay = held.layout
    fixed = {a for a, _ in lay.fixed}
    parted = {axis for d in lay.dims for axis, _, _ in d.parts}
    spread = [k for k, (name, size) in enumerate(lay.axes)
              if name not in fixed and size > 1 and name not in parted]
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
