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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from distal.lower.plan import Box, Group, Launch, Operand, Plan
from distal.lower.plan import Privilege as PlanPrivilege
from distal.redist.formats import Layout

from ._launch import Affine, Arg, Privilege, point_launch
from ._store import Store, tile_of
from ._tensor_storage import FormatStore, bound_cpus, copy_kernel, holder_index

__all__ = ["BlockTiles", "PlacedOperand", "block_projection", "block_tiles", "gathered", "placed_operand",
           "replicate"]

def _split(lay: Layout, d: int, index: int) -> tuple[dict[str, int], int]:
    """Element ``index`` of tensor dimension ``d``: its block coordinate per partitioning machine
    dimension (outermost level first) and its position inside the block."""
    coords: dict[str, int] = {}
    rest = index
    for axis, _, tile in lay.dims[d].parts:
        color = rest // tile
        rest -= color * tile
        coords[axis] = color
    return coords, rest


def _fit(values: list[tuple[int, int | None]], ld: int | None) -> Affine | None:
    """An affine map of launch dimension ``ld`` (or a constant) giving every known value at its coordinate."""
    known = [(x, v) for x, v in values if v is not None]
    if not known:
        return Affine(None, 0, 0)
    x0, v0 = known[0]
    if all(v == v0 for _, v in known):
        return Affine(None, 0, v0)
    if ld is None:
        return None
    x1, v1 = next((x, v) for x, v in known if x != x0)
    coeff, rem = divmod(v1 - v0, x1 - x0)
    offset = v0 - coeff * x0
    if rem or any(v != coeff * x + offset for x, v in known):
        return None
    return Affine(ld, coeff, offset)


# Per tensor dimension: the launch dimension its tile follows (None: the same box at every point)
# and, per coordinate along it, the tile's interval in its block.
_Local = tuple[tuple[int | None, dict[int, tuple[int, int]]], ...]


@dataclass(frozen=True)
class BlockView:
    """How a launch reads one operand in the device blocks: the block per point, and the tile's box in it."""

    projection: tuple[Affine, ...]  # launch point -> block coordinates in the block store
    intervals: _Local  # one block: the tile's box in it; several (`span`): the tile's box in the tensor
    span: tuple[int, ...] | None = None  # blocks per machine dimension of a tile spanning several

    def local(self, point: tuple[int, ...]) -> Box:
        """The box of ``point``'s tile in its block."""
        return tuple(by[0 if ld is None else point[ld]] for ld, by in self.intervals)


def block_projection(plan: Plan, group: Group, launch: Launch, op: Operand, lay: Layout) -> BlockView | None:
    """How ``op`` of ``launch`` is read in the device blocks of a tensor placed by ``lay``, or None.

    There is a way when every point's tile lies inside one device's block
    (its own, or a sub-block of it; every level of a hierarchical format
    counted), the block coordinate along every machine dimension is an
    affine function of the launch point, and no two points write one
    block. Along a broadcast machine dimension a read takes the copy of
    the launch point's own processor when a distributed launch dimension
    runs along it (else copy 0); a fixed dimension has only its face.
    Each tensor dimension's tile follows one launch dimension (its
    projection), so the work is per dimension, not per point.
    """
    shape = lay.shape
    if not shape or 0 in shape or launch.volume == 0 or any(d.spread for d in lay.dims):
        return None
    mesh = lay.mesh
    fixed = {a for a, _ in lay.fixed}
    fitted: dict[str, Affine] = {}
    intervals: list[tuple[int | None, dict[int, tuple[int, int]]]] = []
    spans: list[tuple[int | None, dict[int, tuple[int, int]]]] = []
    extent: dict[str, int] = {}  # blocks a tile spans along each machine dimension (1: a sub-block of one)
    for d, n in enumerate(shape):
        proj = op.projection[d] if op.tile is not None and op.projection is not None else None
        ld = proj.dim if proj is not None else None
        xs = range(launch.lower[ld], launch.upper[ld]) if ld is not None else range(1)
        parts = lay.dims[d].parts
        values: dict[str, list[tuple[int, int | None]]] = {axis: [] for axis, _, _ in parts}
        by: dict[int, tuple[int, int]] = {}
        span: dict[int, tuple[int, int]] = {}
        for x in xs:
            if proj is None:
                lo, hi = 0, n
            else:
                assert op.tile is not None
                lo = min((proj.offset if ld is None else proj.coeff * x + proj.offset) * op.tile[d], n)
                hi = min(lo + op.tile[d], n)
            span[x] = (lo, hi)
            if hi <= lo:
                for axis in values:
                    values[axis].append((x, None))  # an empty tile: any block will do
                by[x] = (0, 0)
                continue
            first, at = _split(lay, d, lo)
            last, _ = _split(lay, d, hi - 1)
            spread = False  # an outer machine dimension spans several blocks: the inner ones must be whole
            for axis, g, _ in parts:
                e = last[axis] - first[axis] + 1
                if spread and (first[axis] != 0 or last[axis] != g - 1):
                    return None  # the tile's blocks are not a box of the block store
                if extent.setdefault(axis, e) != e or first[axis] % e:
                    return None  # tiles of different block counts, or not aligned to them
                spread = spread or e > 1
                values[axis].append((x, first[axis] // e))
            by[x] = (at, at + hi - lo)
        for axis, seen in values.items():
            affine = _fit(seen, ld)
            if affine is None:
                return None
            fitted[axis] = affine
        intervals.append((ld, by))
        spans.append((ld, span))
    block: list[int] = []
    projection: list[Affine] = []
    for k, (name, size) in enumerate(mesh.axes):
        e = extent.get(name, 1)
        block.append(e)
        if name in fixed or size == 1:
            projection.append(Affine(None, 0, 0))
        elif name in fitted:
            affine = fitted[name]
            ends = ([affine.offset] if affine.launch_dim is None else
                    [affine.at(launch.lower), affine.coefficient * (launch.upper[affine.launch_dim] - 1)
                     + affine.offset])
            if min(ends) < 0 or (max(ends) + 1) * e > size:
                return None
            projection.append(affine)
        else:
            projection.append(_own_copy(plan, group, launch, op, lay, k, size))
    if op.privilege in (PlanPrivilege.WRITE, PlanPrivilege.READ_WRITE):
        # each color component follows one launch dimension: points get distinct blocks iff every launch
        # dimension of more than one point moves some component
        moved = {a.launch_dim for a in projection if a.launch_dim is not None and a.coefficient != 0}
        if any(hi - lo > 1 and ld not in moved for ld, (lo, hi) in enumerate(zip(launch.lower, launch.upper))):
            return None  # two points would write one block
    if all(e == 1 for e in block):
        return BlockView((*projection, Affine(None, 0, 0)), tuple(intervals))
    return BlockView((*projection, Affine(None, 0, 0)), tuple(spans), tuple(block))


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

    ``views`` gives, per operand of every launch, the projection onto the
    block store and each point's box in its block (`block_projection`). A
    written block is read and written (the kernel writes the point's box;
    the rest of the block, padding included, keeps what it holds).
    """

    held: FormatStore
    views: dict[_Key, BlockView]  # by `_key(launch, operand)`

    @property
    def block(self) -> tuple[int, ...]:
        blocks = self.held.blocks
        return (*([1] * (blocks.ndim - 1)), blocks.shape[-1])

    def arg(self, launch: Launch, op: Operand, privilege: Privilege) -> Arg:
        """The launch argument: the block store, one block per point."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE  # the kernel writes the box, the rest of the block stays
        view = self.views[_key(launch, op)]
        return Arg(self.held.blocks, privilege, self._tile(view), view.projection)

    def _tile(self, view: BlockView) -> tuple[int, ...]:
        """The tile of the block store one point takes: one block, or the blocks its tile spans."""
        return self.block if view.span is None else (*view.span, self.held.blocks.shape[-1])

    def pinned(self, launch: Launch, op: Operand, point: tuple[int, ...],
               privilege: Privilege) -> tuple[Store, Privilege]:
        """The block of one launch point, as a store of its own (pinned launches)."""
        if privilege is Privilege.WRITE:
            privilege = Privilege.READ_WRITE
        view = self.views[_key(launch, op)]
        color = tuple(a.at(point) for a in view.projection)
        return tile_of(self.held.blocks, self._tile(view), color), privilege

    def spans(self, launch: Launch, op: Operand) -> bool:
        """Whether ``op``'s tiles in ``launch`` span several blocks (the kernel assembles them)."""
        return self.views[_key(launch, op)].span is not None

    def local(self, launch: Launch, op: Operand, point: tuple[int, ...]) -> Box:
        """The box of ``point``'s tile in its block."""
        return self.views[_key(launch, op)].local(point)


# block_projection's answers by layout and plan machine, then by (distributed launch dims, operand, launch
# box): a plan run again (or a like plan) does not work them out again. Plain data, no tensors held.
_MEMO: dict[tuple[Any, ...], dict[tuple[Any, ...], BlockView | None]] = {}
_MEMO_LIMIT = 1 << 14


def _views(plan: Plan, n: int, lay: Layout) -> dict[_Key, BlockView] | None:
    views: dict[_Key, BlockView] = {}
    outer = (lay, plan.machine, plan.processor_slots)
    memo = _MEMO.get(outer)
    if memo is None:
        if len(_MEMO) >= 64:
            _MEMO.clear()
        memo = _MEMO[outer] = {}
    for group, launch in plan.launches():
        for op in launch.operands:
            if op.tensor != n:
                continue
            inner = (group.distributed, op, launch.lower, launch.upper)
            if inner in memo:
                view = memo[inner]
            else:
                view = block_projection(plan, group, launch, op, lay)
                if len(memo) >= _MEMO_LIMIT:
                    memo.clear()
                memo[inner] = view
            if view is None:
                return None
            if views.setdefault(_key(launch, op), view) != view:
                return None  # two launches alike but for their group: not worth telling apart
    if len({v.span is None for v in views.values()}) > 1:
        return None  # some tiles span several blocks, others not: a group's kernel sees one kind per operand
    return views


def placed_operand(plan: Plan, n: int, lay: Layout, held: Callable[[], FormatStore]) -> PlacedOperand | None:
    """Tensor ``n`` of ``plan``, laid out by ``lay``, as an operand read in its device blocks.

    None where some launch's tile does not lie in one block (`block_projection`);
    otherwise ``held()`` gives the blocks.
    """
    views = _views(plan, n, lay)
    return PlacedOperand(held(), views) if views else None


def gathered(plan: Plan, n: int, lay: Layout) -> bool:
    """Whether running ``plan`` gathers tensor ``n``, placed by ``lay``, into one store (some launch's
    tile of it spans several device blocks, or its blocks are not an affine function of the launch
    point): what `run_plan` does where `placed_operand` gives None."""
    return _views(plan, n, lay) is None


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
    import itertools

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
        lead = tuple(block.get(name, 0) for name, _ in lay.mesh.axes)
        out.append((lead, tuple(c[1] for c in combo), tuple(c[2] for c in combo)))
    return out


def block_tiles(plan: Plan, group: Group, kernel: Any, placed: dict[int, PlacedOperand]) -> Any:
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
                spanned[pos] = (held.held.layout, op.privilege is not PlanPrivilege.READ)
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
    mesh = lay.mesh
    fixed = {a for a, _ in lay.fixed}
    parted = {axis for d in lay.dims for axis, _, _ in d.parts}
    spread = [k for k, (name, size) in enumerate(mesh.axes)
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
