"""Low-level collectives on device assignments (paper, Fig. 10 and Definitions 6.1, 6.2).

A device assignment ``<phi, beta>`` pairs a device map ``phi`` (a bijection
from the points of the prime-factor mesh H to the physical devices, here the
mesh's device coordinates) with the base offset map ``beta`` of a type over H.
Device ``phi(h)`` holds the tile that starts at ``beta(h)``.

The low-level allgather and alltoall may act on an axis ``x`` anywhere in a
dimension's list: the list is first rewritten with ``x`` minor-most and the
device map re-chosen so that no data moves (``beta' . phi'^-1 = beta . phi^-1``),
then the rule of Fig. 8 applies. The re-chosen map generally groups devices
that do not lie along one mesh axis. `synthesize` writes such a re-choice as a
step of its own (`Relabel`, with the maps in `CollectiveProgram.frames`) and uses this
module as the reference semantics.

>>> m = Mesh(a=8)
>>> a = DeviceAssignment.of(m, DistType.parse("[1{a}8, 8]"))
>>> a.equivalent(a.relabel_only(0, (0,)))   # relabelling moves no data
True
>>> a.alltoall(0, 1, (0,)).type_str()       # a's major factor, not the minor-most one
'[2{a:(2)4}8, 4{a:(1)2}8]'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from distal.errors import TypeNotationError
from distal.redist.mesh import Mesh
from distal.redist.types import DistType

__all__ = ["DeviceAssignment"]

Device = tuple[int, ...]
Lists = tuple[tuple[int, ...], ...]


def _points(mesh: Mesh) -> list[tuple[int, ...]]:
    """Every point of the prime-factor mesh, as factor coordinates."""
    out: list[tuple[int, ...]] = [()]
    for f in mesh.factors:
        out = [(*c, v) for c in out for v in range(f.size)]
    return out


def _index(run: Sequence[int], point: Sequence[int], mesh: Mesh) -> int:
    idx, stride = 0, 1
    for f in run:
        idx += point[f] * stride
        stride *= mesh.factors[f].size
    return idx


def _decode(run: Sequence[int], value: int, point: list[int], mesh: Mesh) -> None:
    for f in run:
        point[f] = value % mesh.factors[f].size
        value //= mesh.factors[f].size


@dataclass(frozen=True, slots=True)
class DeviceAssignment:
    """``<phi, beta>``: ``phi`` maps each point of H (factor coordinates) to a device."""

    mesh: Mesh
    lists: Lists
    global_type: tuple[int, ...]
    phi: tuple[tuple[tuple[int, ...], Device], ...]

    @staticmethod
    def of(mesh: Mesh, t: DistType) -> DeviceAssignment:
        """The assignment of type ``t`` under the identity device map."""
        pos = {n: k for k, n in enumerate(mesh.names)}
        phi = []
        for h in _points(mesh):
            dev = [0] * len(mesh.names)
            for f, v in zip(mesh.factors, h):
                dev[pos[f.axis]] += v * f.stride
            phi.append((h, tuple(dev)))
        return DeviceAssignment(mesh, t.factor_lists(mesh), t.global_type, tuple(phi))

    def type_str(self) -> str:
        return str(DistType.from_factor_lists(self.mesh, self.lists, self.global_type))

    def local(self, dim: int) -> int:
        return self.global_type[dim] // math.prod(self.mesh.factors[f].size for f in self.lists[dim])

    def beta(self, h: Sequence[int]) -> tuple[int, ...]:
        """The base offset map T[[type]] at point ``h`` (Fig. 7a)."""
        return tuple(self.local(i) * _index(lst, h, self.mesh) for i, lst in enumerate(self.lists))

    def tiles(self) -> dict[Device, tuple[int, ...]]:
        """``beta . phi^-1``: the offset of the tile each device holds."""
        return {d: self.beta(h) for h, d in self.phi}

    def equivalent(self, other: DeviceAssignment) -> bool:
        """Definition 6.2: both put the same tile on every device."""
        return self.tiles() == other.tiles() and self.local_type() == other.local_type()

    def local_type(self) -> tuple[int, ...]:
        return tuple(self.local(i) for i in range(len(self.lists)))

    def relabel_only(self, dim: int, run: tuple[int, ...]) -> DeviceAssignment:
        """Move ``run`` (contiguous in dimension ``dim``) to the minor end and re-choose
        the device map so that no data moves."""
        lst = self.lists[dim]
        k = next((k for k in range(len(lst)) if lst[k : k + len(run)] == run), None)
        if k is None or not run:
            raise TypeNotationError(
                f"expected axes {run} next to each other in dimension {dim}, but found {self.type_str()}"
            )
        new = run + lst[:k] + lst[k + len(run) :]
        lists = (*self.lists[:dim], new, *self.lists[dim + 1 :])
        phi = []
        for h, d in self.phi:
            # the point h' of the new labelling whose offset along dim equals h's
            p = list(h)
            _decode(new, _index(lst, h, self.mesh), p, self.mesh)
            phi.append((tuple(p), d))
        return DeviceAssignment(self.mesh, lists, self.global_type, tuple(sorted(phi)))

    def allgather(self, dim: int, run: tuple[int, ...]) -> DeviceAssignment:
        """Fig. 10 allgather of the factor axes ``run`` of dimension ``dim``."""
        moved = self.relabel_only(dim, run)
        lists = list(moved.lists)
        lists[dim] = lists[dim][len(run) :]
        return DeviceAssignment(self.mesh, tuple(lists), self.global_type, moved.phi)

    def alltoall(self, src: int, dst: int, run: tuple[int, ...]) -> DeviceAssignment:
        """Fig. 10 alltoall of the factor axes ``run`` from ``src`` to the minor end of ``dst``."""
        moved = self.relabel_only(src, run)
        n = math.prod(self.mesh.factors[f].size for f in run)
        if self.local(dst) % n:
            raise TypeNotationError(
                f"expected the local size of dimension {dst} divisible by {n}, but found {self.type_str()}"
            )
        lists = list(moved.lists)
        lists[src] = lists[src][len(run) :]
        lists[dst] = run + lists[dst]
        return DeviceAssignment(self.mesh, tuple(lists), self.global_type, moved.phi)

    def dynslice(self, dim: int, run: tuple[int, ...]) -> DeviceAssignment:
        """Fig. 10 dynslice: new minor-most axes, device map unchanged."""
        used = {f for lst in self.lists for f in lst}
        n = math.prod(self.mesh.factors[f].size for f in run)
        if used & set(run) or self.local(dim) % n:
            raise TypeNotationError(f"expected free axes dividing dimension {dim}, but found {self.type_str()}")
        lists = (*self.lists[:dim], run + self.lists[dim], *self.lists[dim + 1 :])
        return DeviceAssignment(self.mesh, lists, self.global_type, self.phi)

    def allpermute(self, target: DistType) -> DeviceAssignment:
        """Fig. 10 allpermute to ``target`` under the identity device map (data moves)."""
        t = DeviceAssignment.of(self.mesh, target)
        if t.local_type() != self.local_type() or t.global_type != self.global_type:
            raise TypeNotationError(
                f"expected allpermute between equal local types, but found {self.type_str()} and {target}"
            )
        return t

    def groups(self, run: tuple[int, ...]) -> list[list[Device]]:
        """The device groups of a collective over ``run`` under this device map."""
        by_rest: dict[tuple[int, ...], list[tuple[int, Device]]] = {}
        for h, d in self.phi:
            rest = tuple(v if f not in run else -1 for f, v in enumerate(h))
            by_rest.setdefault(rest, []).append((_index(run, h, self.mesh), d))
        return [[d for _, d in sorted(g)] for g in by_rest.values()]
