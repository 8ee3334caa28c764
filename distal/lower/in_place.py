"""Which operands of a plan are read and written in place in their format's device blocks, and which are gathered.

A tensor with a format lives in one padded block per holding device (the
leaf level's blocks of a hierarchical format; `distal.redist.formats.Layout`
says where every element is). A plan reads such a tensor in place where
every launch point's tile lies in one block (the block itself or a
sub-block of it) or spans a box of blocks, the block coordinates along every
machine dimension are affine in the launch point, and no two points write
one block (`block_projection`). Otherwise running the plan gathers the
tensor into one store first (`gathered`), and a formatted output is laid
out again by its format after the launches.

This is the decision only, on plan and layout data: the runtime
(`distal.runtime._placed`) launches from it, and `explain()` prints it, so
what is printed is what runs. Projections are `distal.lower.task_graph.Proj`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distal.format.layout import Layout, layout
from distal.lower.reductions import partials_reduction
from distal.lower.task_graph import Box, Group, Launch, Operand, PlanBase, Privilege, Proj, TensorInfo

__all__ = ["BlockView", "block_projection", "element_block", "gathered", "gathered_tensors", "launch_views",
           "placement_layout"]


def element_block(lay: Layout, d: int, index: int) -> tuple[dict[str, int], int]:
    """Element ``index`` of tensor dimension ``d``: its block coordinate per partitioning machine
    dimension (outermost level first) and its position inside the block."""
    coords: dict[str, int] = {}
    rest = index
    for axis, _, tile in lay.dims[d].parts:
        color = rest // tile
        rest -= color * tile
        coords[axis] = color
    return coords, rest


def _fit(values: list[tuple[int, int | None]], ld: int | None) -> Proj | None:
    """An affine map of launch dimension ``ld`` (or a constant) giving every known value at its coordinate."""
    known = [(x, v) for x, v in values if v is not None]
    if not known:
        return Proj(None, 0, 0)
    x0, v0 = known[0]
    if all(v == v0 for _, v in known):
        return Proj(None, 0, v0)
    if ld is None:
        return None
    x1, v1 = next((x, v) for x, v in known if x != x0)
    coeff, rem = divmod(v1 - v0, x1 - x0)
    offset = v0 - coeff * x0
    if rem or any(v != coeff * x + offset for x, v in known):
        return None
    return Proj(ld, coeff, offset)


# Per tensor dimension: the launch dimension its tile follows (None: the same box at every point)
# and, per coordinate along it, the tile's interval in its block.
_Local = tuple[tuple[int | None, dict[int, tuple[int, int]]], ...]


@dataclass(frozen=True)
class BlockView:
    """How a launch reads one operand in the device blocks: the block per point, and the tile's box in it."""

    projection: tuple[Proj, ...]  # launch point -> block coordinates in the block store
    intervals: _Local  # one block: the tile's box in it; several (`span`): the tile's box in the tensor
    span: tuple[int, ...] | None = None  # blocks per machine dimension of a tile spanning several

    def local(self, point: tuple[int, ...]) -> Box:
        """The box of ``point``'s tile in its block."""
        return tuple(by[0 if ld is None else point[ld]] for ld, by in self.intervals)


def block_projection(plan: PlanBase, group: Group, launch: Launch, op: Operand, lay: Layout) -> BlockView | None:
    """How ``op`` of ``launch`` is read in the device blocks of a tensor placed by ``lay``, or None.

    There is a way when every point's tile lies inside one device's block
    (its own, or a sub-block of it; every level of a hierarchical format
    counted) or spans a box of blocks, the block coordinate along every
    machine dimension is an affine function of the launch point, and no two
    points write one block. Along a broadcast machine dimension a read takes
    the copy of the launch point's own processor when a distributed launch
    dimension runs along it (else copy 0); a fixed dimension has only its
    face. Each tensor dimension's tile follows one launch dimension (its
    projection), so the work is per dimension, not per point.
    """
    shape = lay.shape
    if not shape or 0 in shape or launch.volume == 0 or any(d.spread for d in lay.dims):
        return None
    fixed = {a for a, _ in lay.fixed}
    fitted: dict[str, Proj] = {}
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
            first, at = element_block(lay, d, lo)
            last, _ = element_block(lay, d, hi - 1)
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
    projection: list[Proj] = []
    for k, (name, size) in enumerate(lay.axes):
        e = extent.get(name, 1)
        block.append(e)
        if name in fixed or size == 1:
            projection.append(Proj(None, 0, 0))
        elif name in fitted:
            affine = fitted[name]
            ends = ([affine.offset] if affine.dim is None else
                    [affine.at(launch.lower), affine.coeff * (launch.upper[affine.dim] - 1) + affine.offset])
            if min(ends) < 0 or (max(ends) + 1) * e > size:
                return None
            projection.append(affine)
        else:
            projection.append(_own_copy(plan, group, launch, op, lay, k, size))
    if op.privilege in (Privilege.WRITE, Privilege.READ_WRITE):
        # each color component follows one launch dimension: points get distinct blocks iff every launch
        # dimension of more than one point moves some component
        moved = {a.dim for a in projection if a.dim is not None and a.coeff != 0}
        if any(hi - lo > 1 and ld not in moved for ld, (lo, hi) in enumerate(zip(launch.lower, launch.upper))):
            return None  # two points would write one block
    if all(e == 1 for e in block):
        return BlockView((*projection, Proj(None, 0, 0)), tuple(intervals))
    return BlockView((*projection, Proj(None, 0, 0)), tuple(spans), tuple(block))


def _own_copy(plan: PlanBase, group: Group, launch: Launch, op: Operand, lay: Layout, k: int, size: int) -> Proj:
    """Which copy along broadcast machine dimension ``k`` a launch reads: its processor's, where it can."""
    if op.privilege is not Privilege.READ or plan.machine is None or plan.machine != lay.format.machine:
        return Proj(None, 0, 0)
    for ld, slot in enumerate(plan.processor_slots[: group.distributed]):
        if slot == k and 0 <= launch.lower[ld] and launch.upper[ld] <= size:
            return Proj(ld)
    return Proj(None, 0, 0)


ViewKey = tuple[Operand, tuple[int, ...], tuple[int, ...]]


def view_key(launch: Launch, op: Operand) -> ViewKey:
    """An operand of a launch, by value (the runtime rebuilds some launches, e.g. for partial sums)."""
    return (op, launch.lower, launch.upper)


# block_projection's answers by layout and plan machine, then by (distributed launch dims, operand, launch
# box): a plan run again (or a like plan) does not work them out again. Plain data, no tensors held.
_MEMO: dict[tuple[Any, ...], dict[tuple[Any, ...], BlockView | None]] = {}
_MEMO_LIMIT = 1 << 14


def launch_views(plan: PlanBase, n: int, lay: Layout) -> dict[ViewKey, BlockView] | None:
    """Per launch operand of tensor ``n`` (by `view_key`), how it is read in the blocks of ``lay``; None
    where some launch cannot read it in place (`block_projection`), or where some of its tiles span
    several blocks and others not (a group's kernel sees one kind per operand)."""
    views: dict[ViewKey, BlockView] = {}
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
            if views.setdefault(view_key(launch, op), view) != view:
                return None  # two launches alike but for their group: not worth telling apart
    if len({v.span is None for v in views.values()}) > 1:
        return None
    return views


def gathered(plan: PlanBase, n: int, lay: Layout) -> bool:
    """Whether running ``plan`` gathers tensor ``n``, placed by ``lay``, into one store (some launch's
    tile of it is not whole blocks or a box of blocks, or its blocks are not an affine function of the
    launch point): what `run_plan` does where `launch_views` gives None."""
    return launch_views(plan, n, lay) is None


def placement_layout(info: TensorInfo) -> Layout | None:
    """The layout a tensor of a plan is placed in on Legate: its format's, at the plan's shape; None
    without a format, or with one the runtime cannot place (another order, a symbolic machine)."""
    fmt = info.tensor.format
    if fmt is None or fmt.order != len(info.shape) or fmt.params:
        return None
    return layout(fmt, info.shape)


def gathered_tensors(plan: PlanBase) -> tuple[int, ...]:
    """The tensors (indices into ``plan.tensors``) with a format that running ``plan`` gathers into one
    store instead of reading and writing them in their device blocks. The output of a synthesized or held
    reduction is not among them (its launches write per-processor partials, reduced into it afterwards)."""
    red = partials_reduction(plan)
    out: list[int] = []
    for n, info in enumerate(plan.tensors):
        if red is not None and n == red.tensor:
            continue
        lay = placement_layout(info)
        if lay is not None and not launch_views(plan, n, lay):  # no views at all: the runtime gathers it too
            out.append(n)
    return tuple(out)
