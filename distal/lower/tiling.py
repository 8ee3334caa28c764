"""Pass: from per-point boxes to tilings, projections, privileges and launches.

Every launch point has, for each tensor, the box of data it touches (bounds
analysis). A tensor dimension is tiled when, over all points, the boxes are
aligned blocks of one size `t` (edge blocks clipped); otherwise the task
gets the whole extent of that dimension (correct, and reported). The color
of a point is then `box.lo // t`, and a launch needs it to be affine in one
launch dimension per tensor dimension (Legate projections have no sums and no
`mod`). Where it is not (rotations), a launch is either split into single
points pinned to their processors (`rotation="points"`), or covered by
sub-boxes on which it is affine (`rotation="boxes"`).

The output is read-write when each launch gives each of its tiles to one
point, and a sum reduction (REDUCE_ADD) when several points share a tile
(reductions over distributed loops).

A point with no work is not launched (issue 27): one where some tensor's box
is empty, because a divide or split past the extent left an empty block of
a variable every access of that tensor uses (n = 9 on `Grid(4, 4)`: blocks
of 3, the fourth empty; `divide(k, ko, ki, 9)` at n = 8: the ninth chunk
empty), so every statement it would run iterates over nothing. A step with
no such point is not launched at all; a step with some is launched over
boxes of its busy points only. Such a point used to be handed the tile its
projection wrapped to (another processor's), and counted as reading it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from distal.lower.task_graph import Box, Launch, Operand, Privilege, Proj, TensorInfo

__all__ = ["ROTATIONS", "TileChoice", "build_launches", "busy", "busy_boxes", "choose_tiles"]

ROTATIONS = ("points", "boxes")

Point = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TileChoice:
    """Per tensor dimension, the tile extent, or None for the whole dimension."""

    tile: tuple[int | None, ...]

    def whole(self) -> bool:
        return all(t is None for t in self.tile)

    def __str__(self) -> str:
        return "(" + ", ".join("*" if t is None else str(t) for t in self.tile) + ")"


def choose_tiles(info: TensorInfo, boxes: Sequence[Box]) -> TileChoice:
    """The tiling that gives each point exactly its box, dimension by dimension."""
    out: list[int | None] = []
    for d, n in enumerate(info.shape):
        spans = [b[d] for b in boxes if all(lo < hi for lo, hi in b)]
        t = max((hi - lo for lo, hi in spans), default=0)
        ok = 0 < t < n and all(lo % t == 0 and hi == min(lo + t, n) for lo, hi in spans)
        out.append(t if ok else None)
    return TileChoice(tuple(out))


def _colors(choice: TileChoice, box: Box) -> tuple[int, ...] | None:
    """The color of a box under a tiling; None for an empty box (any color will do)."""
    if not all(lo < hi for lo, hi in box):
        return None
    return tuple(0 if t is None else lo // t for t, (lo, _) in zip(choice.tile, box))


def _fit(values: dict[Point, int], lower: Point, upper: Point) -> Proj | None:
    """An affine map `coeff * p[k] + offset` through the given (point, value) pairs, if one exists."""
    if not values:
        return Proj(None, 0, 0)
    first = next(iter(values.values()))
    if all(v == first for v in values.values()):
        return Proj(None, 0, first)
    for k in range(len(lower)):
        if upper[k] - lower[k] < 2:
            continue
        ks = {p[k] for p in values}
        if len(ks) < 2:
            continue
        # same k-coordinate must mean same value
        by_k: dict[int, int] = {}
        if any(by_k.setdefault(p[k], v) != v for p, v in values.items()):
            continue
        (k0, v0), (k1, v1) = sorted(by_k.items())[:2]
        if (v1 - v0) % (k1 - k0):
            continue
        coeff = (v1 - v0) // (k1 - k0)
        offset = v0 - coeff * k0
        if all(coeff * kk + offset == v for kk, v in by_k.items()) and all(
            coeff * x + offset >= 0 for x in range(lower[k], upper[k])
        ):
            return Proj(k, coeff, offset)
    return None


def _points(lower: Point, upper: Point) -> list[Point]:
    return list(itertools.product(*(range(lo, hi) for lo, hi in zip(lower, upper))))


def busy(infos: Sequence[TensorInfo], boxes: Sequence[Box]) -> bool:
    """Whether a launch point with these boxes (one per tensor) has work: no tensor's box is empty.

    A tensor's box is empty only where every access of it iterates over an
    empty block of some variable (a divide or split past the extent), and
    then so does every statement reading or writing it. A 0-d tensor's box
    is never empty.
    """
    return all(not info.shape or all(lo < hi for lo, hi in box) for info, box in zip(infos, boxes))


def busy_boxes(lower: Point, upper: Point, live: Callable[[Point], bool]) -> list[tuple[Point, Point]]:
    """Boxes inside [lower, upper) holding exactly its busy points (`live`), few and large.

    The bounding box of the busy points when they fill it (the usual case:
    the empty blocks are the last ones of each dimension), otherwise the same
    for each slice along the first dimension wider than one.
    """
    pts = [p for p in _points(lower, upper) if live(p)]
    if not pts:
        return []
    lo = tuple(min(p[d] for p in pts) for d in range(len(lower)))
    hi = tuple(max(p[d] for p in pts) + 1 for d in range(len(lower)))
    if len(pts) == _volume(lo, hi):
        return [(lo, hi)]
    wide = [d for d in range(len(lo)) if hi[d] - lo[d] > 1]
    d = wide[0]
    out: list[tuple[Point, Point]] = []
    for x in range(lo[d], hi[d]):
        out.extend(busy_boxes((*lo[:d], x, *lo[d + 1:]), (*hi[:d], x + 1, *hi[d + 1:]), live))
    return out


def _volume(lower: Point, upper: Point) -> int:
    n = 1
    for lo, hi in zip(lower, upper):
        n *= max(hi - lo, 0)
    return n


@dataclass(frozen=True, slots=True)
class _Ctx:
    infos: tuple[TensorInfo, ...]
    choices: tuple[TileChoice, ...]
    colors: dict[Point, tuple[tuple[int, ...] | None, ...]]
    counts: tuple[tuple[int, ...], ...]


def _operands(ctx: _Ctx, lower: Point, upper: Point) -> tuple[Operand, ...] | None:
    """Operands of a launch over [lower, upper), or None when a projection is not affine."""
    pts = _points(lower, upper)
    out = []
    for n, (info, choice) in enumerate(zip(ctx.infos, ctx.choices)):
        whole = choice.whole()
        privilege = Privilege.READ
        if not whole:
            projection = []
            for d in range(len(info.shape)):
                vals = {p: c[d] for p in pts if (c := ctx.colors[p][n]) is not None}
                proj = _fit(vals, lower, upper)
                if proj is None:
                    return None
                projection.append(proj)
            counts = tuple(max(c, max((pr.at(p) + 1 for p in pts), default=1))
                           for c, pr in zip(ctx.counts[n], projection))
            tile = tuple(info.shape[d] if t is None else t for d, t in enumerate(choice.tile))
            if info.output:
                seen = {tuple(pr.at(p) for pr in projection) for p in pts}
                privilege = Privilege.READ_WRITE if len(seen) == len(pts) else Privilege.REDUCE_ADD
            out.append(Operand(n, privilege, tile, tuple(projection), counts))
        else:
            if info.output:
                privilege = Privilege.READ_WRITE if len(pts) == 1 else Privilege.REDUCE_ADD
            out.append(Operand(n, privilege, None, None, None))
    return tuple(out)


def _cover(ctx: _Ctx, lower: Point, upper: Point) -> list[tuple[Point, Point, tuple[Operand, ...]]]:
    """Sub-boxes of [lower, upper) on which every projection is affine."""
    ops = _operands(ctx, lower, upper)
    if ops is not None:
        return [(lower, upper, ops)]
    wide = [d for d in range(len(lower)) if upper[d] - lower[d] > 1]
    assert wide, "a single point always has affine projections"
    d = wide[0]
    out = []
    if len(wide) > 1:
        for x in range(lower[d], upper[d]):
            lo = (*lower[:d], x, *lower[d + 1:])
            hi = (*upper[:d], x + 1, *upper[d + 1:])
            out.extend(_cover(ctx, lo, hi))
        return out
    start = lower[d]
    while start < upper[d]:
        end = start + 1
        best = None
        while end <= upper[d]:
            lo, hi = (*lower[:d], start, *lower[d + 1:]), (*upper[:d], end, *upper[d + 1:])
            got = _operands(ctx, lo, hi)
            if got is None:
                break
            best = (lo, hi, got)
            end += 1
        assert best is not None
        out.append(best)
        start = best[1][d]
    return out


def build_launches(
    infos: tuple[TensorInfo, ...],
    dist_ext: tuple[int, ...],
    step_ext: tuple[int, ...],
    box_of: Callable[[Point], tuple[Box, ...]],
    rotation: str = "boxes",
) -> tuple[list[Launch], dict[Point, tuple[tuple[int, ...], ...]], tuple[TileChoice, ...], list[str]]:
    """The launches of one group, the tile origin of each operand per point, and notes.

    Launch points are the distributed dimensions followed by the step
    dimensions; a group without launch variables is one point `(0,)`.
    """
    dims = len(dist_ext) + len(step_ext)
    if dims == 0:
        every: list[Point] = [()]
    else:
        every = _points((0,) * dims, dist_ext + step_ext)
    boxes = {p: box_of(p) for p in every}
    choices = tuple(choose_tiles(info, [boxes[p][n] for p in every]) for n, info in enumerate(infos))
    notes = []
    for info, choice in zip(infos, choices):
        if info.shape and any(t is None for t in choice.tile) and not choice.whole():
            notes.append(f"{info.name}: dimensions marked * are not tiled "
                         "(every task gets their whole extent)")
        elif info.shape and choice.whole() and len(every) > 1 and info.size > 0:
            notes.append(f"{info.name}: not tiled, every task gets the whole tensor")
    colors = {p: tuple(_colors(c, boxes[p][n]) for n, c in enumerate(choices)) for p in every}
    counts = tuple(
        tuple(1 if t is None else max(-(-n // t), 1) for t, n in zip(c.tile, info.shape))
        for c, info in zip(choices, infos)
    )
    ctx = _Ctx(infos, choices, colors, counts)
    live = {p: busy(infos, boxes[p]) for p in every}
    launches: list[Launch] = []
    for step in itertools.product(*(range(n) for n in step_ext)):
        lower = (0,) * len(dist_ext) + step
        upper = dist_ext + tuple(s + 1 for s in step)
        parts: list[tuple[Point, Point]]
        if dims == 0:
            parts = [((), ())]
        else:  # empty points are not launched (a step without busy points: no launch at all)
            parts = busy_boxes(lower, upper, live.__getitem__)
        for lower, upper in parts:
            ops = _operands(ctx, lower, upper)
            if ops is not None:
                launches.append(Launch(lower or (0,), upper or (1,), ops))
            elif rotation == "points":
                for p in _points(lower, upper):
                    got = _operands(ctx, p, tuple(x + 1 for x in p))
                    assert got is not None
                    launches.append(Launch(p, tuple(x + 1 for x in p), got, pinned=True))
            else:
                for lo, hi, got in _cover(ctx, lower, upper):
                    launches.append(Launch(lo, hi, got))
    idle = sum(1 for p in every if not live[p])
    if idle:
        notes.append(f"{idle} of {len(every)} launch point(s) have no work (an empty block of a divide or "
                     "split past the extent) and are not launched")
    origins: dict[Point, tuple[tuple[int, ...], ...]] = {}
    for launch in launches:
        for p in launch.points():
            key = p if dims else ()
            origins[p] = tuple(
                tuple(lo for lo, _ in op.box(p, info.shape)) if op.tile is not None
                else (0,) * len(info.shape)
                for op, info in zip(launch.operands, infos)
            )
            if key != p:
                origins[key] = origins[p]
    return launches, origins, choices, notes
