"""Device maps along a program (paper, section 6: ``<phi, beta>`` device assignments).

A frame is the device map ``phi`` of one point of a program: for every point
of the prime-factor mesh H (numbered row-major over `Mesh.factors`, which is
also the row-major order of the mesh's devices), the index in
`Mesh.devices` of the device that plays that point. The identity frame is
``phi`` itself: point ``k`` is device ``k``. A type is read in the frame of
its point of the program: device ``phi(h)`` holds the tile at ``beta(h)``,
and a collective groups the devices whose points differ only along its axes.

Only `Relabel` changes the frame (it re-chooses the map so that the tiles
every device holds read as the new type, Fig. 10); `AllPermute` goes back to
the identity frame, moving data; every other step keeps the frame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

from distal.redist.mesh import Mesh
from distal.redist.types import DistType

__all__ = ["Frame", "identity", "offsets_at", "point_coords", "point_index", "relabel", "shardy_device_ids"]

Frame = tuple[int, ...]


def identity(mesh: Mesh) -> Frame:
    return tuple(range(mesh.size))


@lru_cache(maxsize=256)
def point_coords(mesh: Mesh) -> tuple[tuple[int, ...], ...]:
    """The factor coordinates of every point of H, row-major (equal to each device's)."""
    return tuple(mesh.factor_coords(d) for d in mesh.devices())


def point_index(mesh: Mesh, coords: Sequence[int]) -> int:
    """The row-major number of the point of H with these factor coordinates."""
    k = 0
    for f, c in zip(mesh.factors, coords, strict=True):
        k = k * f.size + c
    return k


@lru_cache(maxsize=1024)
def offsets_at(t: DistType, mesh: Mesh) -> tuple[tuple[int, ...], ...]:
    """``beta(h)`` for every point ``h`` of H: the base offset of its tile under ``t``."""
    lists = t.factor_lists(mesh)
    out = []
    for c in point_coords(mesh):
        off = []
        for d, lst in zip(t.dims, lists):
            idx, stride = 0, 1
            for f in lst:
                idx += c[f] * stride
                stride *= mesh.factors[f].size
            off.append(d.local * idx)
        out.append(tuple(off))
    return tuple(out)


def relabel(mesh: Mesh, frame: Frame, src: DistType, dst: DistType) -> Frame:
    """The frame in which ``dst`` describes the tiles that ``src`` describes in ``frame``.

    Both types have equal local types, so they hold the same tiles, each on
    the same number of devices; the devices holding one tile are matched with
    the points where ``dst`` has it, both in ascending order (for a reordering
    of one dimension's axes this keeps every other coordinate, as the
    paper's relabelling does).
    """
    before, after = offsets_at(src, mesh), offsets_at(dst, mesh)
    holders: dict[tuple[int, ...], list[int]] = {}
    for h, dev in enumerate(frame):  # ascending points
        holders.setdefault(before[h], []).append(dev)
    points: dict[tuple[int, ...], list[int]] = {}
    for h, off in enumerate(after):
        points.setdefault(off, []).append(h)
    new = [0] * len(frame)
    for off, devs in holders.items():
        for h, dev in zip(points[off], devs, strict=True):
            new[h] = dev
    return tuple(new)


def shardy_device_ids(mesh: Mesh, frame: Frame) -> tuple[int, ...]:
    """Shardy's ``device_ids`` of a mesh whose coordinates follow ``frame``.

    Shardy lists the device of every mesh coordinate in row-major order; a
    mesh coordinate is a point of H read axis by axis, so entry ``k`` is the
    device (numbered row-major, like Shardy's iota) that plays point ``k``.
    """
    assert len(frame) == math.prod(mesh.shape)
    return tuple(frame)
