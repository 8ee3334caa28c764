"""Executing a `CollectiveProgram` on simulated devices with NumPy.

The devices of the mesh each hold one tile. A step is carried out from the
tiles alone, as a real collective would be: a device's new tile is built from
blocks of the tiles of its group (the devices that differ from it only along
the axes the step gathers or moves). After every step each tile is compared
with what the step's type prescribes (the base offset map of Fig. 7a) in the
step's device map (`CollectiveProgram.frames`): after a relabel, device ``phi(h)`` holds
the tile of point ``h`` and groups are formed over points, not devices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from distal.errors import RuntimeFailure, ShapeError
from distal.redist.collectives import AllGather, AllPermute, AllToAll, DynSlice, Relabel
from distal.redist.frames import Frame, offsets_at, point_coords, point_index
from distal.redist.mesh import Mesh
from distal.redist.types import DistType, ref_factors

if TYPE_CHECKING:
    from distal.redist.program import CollectiveProgram

__all__ = ["offsets", "simulate"]

Device = tuple[int, ...]


def _index(run: Sequence[int], coords: Sequence[int], mesh: Mesh) -> int:
    """Mixed-radix index of a device along a run of factor axes (minor first)."""
    idx, stride = 0, 1
    for f in run:
        idx += coords[f] * stride
        stride *= mesh.factors[f].size
    return idx


def offsets(t: DistType, mesh: Mesh, device: Device) -> tuple[int, ...]:
    """The base offset of ``device``'s tile under ``t`` (Fig. 7a)."""
    coords = mesh.factor_coords(device)
    return tuple(d.local * _index(lst, coords, mesh) for d, lst in zip(t.dims, t.factor_lists(mesh), strict=True))


def _tile(a: np.ndarray, t: DistType, mesh: Mesh, device: Device) -> np.ndarray:
    return _block(a, t, offsets(t, mesh, device))


def _block(a: np.ndarray, t: DistType, off: Sequence[int]) -> np.ndarray:
    return a[tuple(slice(o, o + n) for o, n in zip(off, t.local_type))]


def _refs(mesh: Mesh, axes: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(f for a in axes for f in ref_factors(mesh, a))


def _exchange(
    mesh: Mesh,
    tiles: dict[Device, np.ndarray],
    src: DistType,
    dst: DistType,
    gathers: list[tuple[int, tuple[int, ...]]],
    slices: list[tuple[int, tuple[int, ...]]],
    frame: Frame,
) -> dict[Device, np.ndarray]:
    """Each device assembles blocks: from every group member ``m``, ``m``'s tile cut
    along ``slices`` at this device's index, placed along ``gathers`` at ``m``'s index
    (indices and groups by the devices' points in ``frame``)."""
    devices = list(tiles)
    order = mesh.devices()
    pts = point_coords(mesh)
    coords = {order[dev]: pts[h] for h, dev in enumerate(frame)}

    def member(c: tuple[int, ...]) -> Device:
        return order[frame[point_index(mesh, c)]]
    group_facs = sorted({f for _, run in gathers for f in run})
    out: dict[Device, np.ndarray] = {}
    for d in devices:
        c = coords[d]
        new = np.empty(dst.local_type, dtype=tiles[d].dtype)
        for values in itertools.product(*(range(mesh.factors[f].size) for f in group_facs)):
            mc = list(c)
            for f, v in zip(group_facs, values):
                mc[f] = v
            piece = tiles[member(tuple(mc))]
            for dim, run in slices:
                n = src.dims[dim].local // math.prod(mesh.factors[f].size for f in run)
                k = _index(run, c, mesh)
                piece = np.take(piece, range(k * n, (k + 1) * n), axis=dim)
            where = [slice(None)] * dst.rank
            for dim, run in gathers:
                size = piece.shape[dim]
                k = _index(run, mc, mesh)
                where[dim] = slice(k * size, (k + 1) * size)
            new[tuple(where)] = piece
        out[d] = new
    return out


def _permute(
    mesh: Mesh, tiles: dict[Device, np.ndarray], src: DistType, dst: DistType, frame: Frame
) -> dict[Device, np.ndarray]:
    """Each device receives a whole tile from one holder (in ``frame``) of the tile it
    needs (in the identity frame)."""
    order = mesh.devices()
    before = offsets_at(src, mesh)
    holders: dict[tuple[int, ...], list[Device]] = {}
    for h, dev in enumerate(frame):
        holders.setdefault(before[h], []).append(order[dev])
    out = {}
    for d in tiles:
        want = offsets(dst, mesh, d)
        pool = holders[want]
        out[d] = tiles[d if d in pool else pool[0]].copy()
    return out


def simulate(prog: CollectiveProgram, global_array: np.ndarray) -> dict[Device, np.ndarray]:
    """Every device's tile after running ``prog`` on ``global_array``."""
    mesh = prog.mesh
    a = np.asarray(global_array)
    if a.shape != prog.source.global_type:
        raise ShapeError(
            f"expected an array of shape {prog.source.global_type} for {prog.source}, but found shape {a.shape}"
        )
    tiles = {d: _tile(a, prog.source, mesh, d).copy() for d in mesh.devices()}
    frames = prog.frames
    order = mesh.devices()
    for k, (step, src, dst) in enumerate(zip(prog.steps, prog.types, prog.types[1:]), 1):
        frame = frames[k - 1]
        if isinstance(step, AllPermute):
            tiles = _permute(mesh, tiles, src, dst, frame)
        elif isinstance(step, Relabel):
            tiles = {d: t.copy() for d, t in tiles.items()}  # no data moves
        elif isinstance(step, AllGather):
            tiles = _exchange(mesh, tiles, src, dst, [(i, _refs(mesh, r)) for i, r in step.axes], [], frame)
        elif isinstance(step, DynSlice):
            tiles = _exchange(mesh, tiles, src, dst, [], [(i, _refs(mesh, r)) for i, r in step.axes], frame)
        else:
            assert isinstance(step, AllToAll)
            runs = [(i, j, _refs(mesh, r)) for i, j, r in step.moves]
            gathers, slices = [(i, r) for i, _, r in runs], [(j, r) for _, j, r in runs]
            tiles = _exchange(mesh, tiles, src, dst, gathers, slices, frame)
        # the tile each device must hold: that of the point it plays in this step's map
        offs = offsets_at(dst, mesh)
        point = {order[dev]: h for h, dev in enumerate(frames[k])}
        for d, tile in tiles.items():
            if not np.array_equal(tile, _block(a, dst, offs[point[d]])):
                raise RuntimeFailure(
                    f"expected device {d} to hold its tile of {dst} after step {k} ({step}), but found different data",
                    str(prog),
                )
    return tiles
