"""Collective operations, their typing rules (Fig. 8, multi-axis as in 7.1) and costs (Fig. 11).

Every collective acts on the minor-most axes of a dimension: `AllGather`
removes them, `DynSlice` adds new ones, `AllToAll` moves them from a source
dimension to the minor end of a target dimension, `AllPermute` reassigns
whole tiles between devices. A collective may touch several dimensions at
once (Shardy's list forms); each dimension at most once. Costs count array
elements per device: allgather ``localsize(out)``, alltoall and allpermute
``localsize(in)``, dynslice 0.

>>> from distal.redist.mesh import Mesh
>>> m = Mesh(x=4, y=4)
>>> t = DistType.parse("[32{x,y}512, 128]")
>>> str(AllToAll(((0, 1, ("x",)),)).infer(t, m))
'[128{y}512, 32{x}128]'
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from distal.errors import TypeNotationError
from distal.redist.mesh import Mesh
from distal.redist.types import DistType, ref_factors

__all__ = ["AllGather", "AllPermute", "AllToAll", "Collective", "DynSlice", "FactorLists", "Relabel"]

FactorLists = tuple[tuple[int, ...], ...]


def _axes_str(axes: tuple[str, ...]) -> str:
    return "{" + ",".join(axes) + "}"


def _run(mesh: Mesh, axes: tuple[str, ...], where: object) -> tuple[int, ...]:
    out: list[int] = []
    for a in axes:
        out.extend(ref_factors(mesh, a, where))
    return tuple(out)


def _check_dims(dims: list[int], rank: int, op: object) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise TypeNotationError(f"expected a dimension below {rank}, but found {d} in {op}")
    if len(set(dims)) != len(dims):
        raise TypeNotationError(f"expected each dimension at most once, but found {op}")


def _pop(lists: list[tuple[int, ...]], dim: int, run: tuple[int, ...], op: object, t: object) -> None:
    if lists[dim][: len(run)] != run or not run:
        raise TypeNotationError(f"expected dimension {dim} to have the minor-most axes of {op}, but found {t}")
    lists[dim] = lists[dim][len(run) :]


_GROUP = re.compile(r"\s*(\d+)\s*(?:->\s*(\d+)\s*)?\{([^{}]*)\}\s*")


class Collective:
    """Base of the four collectives."""

    __slots__ = ()

    @staticmethod
    def parse(text: str) -> Collective:
        """Parse a step as printed: ``alltoall(0->1{x}, 2->3{y})``, ``allpermute``, ...

        >>> Collective.parse("allgather(0{x,y}, 2{z})")
        AllGather(axes=((0, ('x', 'y')), (2, ('z',))))
        """
        body = text.strip()
        if body == "allpermute":
            return AllPermute()
        if body == "relabel":
            return Relabel()
        m = re.fullmatch(r"(allgather|dynslice|alltoall)\((.*)\)", body)
        if m is None:
            raise TypeNotationError(
                "expected a collective like allgather(0{x}), dynslice(0{x}), "
                f"alltoall(0->1{{x}}), allpermute or relabel, but found {body!r}"
            )
        kind, groups = m.group(1), []
        for part in re.split(r",(?![^{]*\})", m.group(2)):
            g = _GROUP.fullmatch(part)
            if g is None or (g.group(2) is None) == (kind == "alltoall"):
                raise TypeNotationError(f"expected a group like 0{{x}} or 0->1{{x}}, but found {part.strip()!r}", body)
            refs = tuple(r.strip().strip('"') for r in g.group(3).split(",") if r.strip())
            groups.append((int(g.group(1)), None if g.group(2) is None else int(g.group(2)), refs))
        if kind == "alltoall":
            return AllToAll(tuple((i, j, refs) for i, j, refs in groups if j is not None))
        axes = tuple((i, refs) for i, _, refs in groups)
        return AllGather(axes) if kind == "allgather" else DynSlice(axes)

    def infer(self, src: DistType, mesh: Mesh) -> DistType:
        """The type after this collective (not defined for `AllPermute`)."""
        lists = list(src.factor_lists(mesh))
        self._apply(lists, src, mesh)
        return DistType.from_factor_lists(mesh, lists, src.global_type)

    def _apply(self, lists: list[tuple[int, ...]], src: DistType, mesh: Mesh) -> None:
        raise NotImplementedError(type(self).__name__)

    def check(self, src: DistType, dst: DistType, mesh: Mesh) -> None:
        """Typing rule: ``mesh |- self : src -> dst``; raises `TypeNotationError`."""
        got = self.infer(src, mesh)
        if got.factor_lists(mesh) != dst.factor_lists(mesh):
            raise TypeNotationError(f"expected {self} to give {got}, but found {dst}")

    def cost(self, src: DistType, dst: DistType) -> int:
        """Elements communicated per device (Fig. 11)."""
        raise NotImplementedError(type(self).__name__)


@dataclass(frozen=True, slots=True)
class AllGather(Collective):
    """Gather the minor-most axes of each listed dimension: ``allgather(0{x}, 2{y,z})``.

    >>> m = Mesh(x=4, y=4)
    >>> str(AllGather(((0, ("x",)),)).infer(DistType.parse("[32{x,y}512, 512]"), m))
    '[128{y}512, 512]'
    """

    axes: tuple[tuple[int, tuple[str, ...]], ...]

    def __str__(self) -> str:
        return "allgather(" + ", ".join(f"{d}{_axes_str(a)}" for d, a in self.axes) + ")"

    def _apply(self, lists: list[tuple[int, ...]], src: DistType, mesh: Mesh) -> None:
        _check_dims([d for d, _ in self.axes], len(lists), self)
        for d, axes in self.axes:
            _pop(lists, d, _run(mesh, axes, self), self, src)

    def cost(self, src: DistType, dst: DistType) -> int:
        return dst.local_size


@dataclass(frozen=True, slots=True)
class DynSlice(Collective):
    """Slice each listed dimension along new minor-most axes: ``dynslice(3{z})``.

    >>> str(DynSlice(((0, ("x",)),)).infer(DistType.parse("[16]"), Mesh(x=4)))
    '[4{x}16]'
    """

    axes: tuple[tuple[int, tuple[str, ...]], ...]

    def __str__(self) -> str:
        return "dynslice(" + ", ".join(f"{d}{_axes_str(a)}" for d, a in self.axes) + ")"

    def _apply(self, lists: list[tuple[int, ...]], src: DistType, mesh: Mesh) -> None:
        _check_dims([d for d, _ in self.axes], len(lists), self)
        used = {f for lst in lists for f in lst}
        for d, axes in self.axes:
            run = _run(mesh, axes, self)
            if used & set(run) or len(set(run)) != len(run):
                raise TypeNotationError(f"expected axes unused by {src}, but found {self}")
            used.update(run)
            lists[d] = run + lists[d]
            parts = math.prod(mesh.factors[f].size for f in lists[d])
            if src.dims[d].global_ % parts:
                raise TypeNotationError(
                    f"expected the local size of dimension {d} to be divisible by the axes of {self}, but found {src}"
                )

    def cost(self, src: DistType, dst: DistType) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class AllToAll(Collective):
    """Move minor-most axes between dimensions: ``alltoall(0->1{x}, 2->3{y})``.

    >>> step = AllToAll(((0, 1, ("a",)),))
    >>> t = DistType.parse("[1{a}8, 8]")
    >>> str(step.infer(t, Mesh(a=8))), step.cost(t, DistType.parse("[8, 1{a}8]"))
    ('[8, 1{a}8]', 8)
    """

    moves: tuple[tuple[int, int, tuple[str, ...]], ...]

    def __str__(self) -> str:
        return "alltoall(" + ", ".join(f"{i}->{j}{_axes_str(a)}" for i, j, a in self.moves) + ")"

    def _apply(self, lists: list[tuple[int, ...]], src: DistType, mesh: Mesh) -> None:
        _check_dims([d for i, j, _ in self.moves for d in (i, j)], len(lists), self)
        runs = []
        for i, _, axes in self.moves:
            run = _run(mesh, axes, self)
            _pop(lists, i, run, self, src)
            runs.append(run)
        for (_, j, _), run in zip(self.moves, runs):
            lists[j] = run + lists[j]
            parts = math.prod(mesh.factors[f].size for f in lists[j])
            if src.dims[j].global_ % parts:
                raise TypeNotationError(
                    f"expected the local size of dimension {j} to be divisible by the axes of {self}, but found {src}"
                )

    def cost(self, src: DistType, dst: DistType) -> int:
        return src.local_size


@dataclass(frozen=True, slots=True)
class AllPermute(Collective):
    """Reassign tiles between devices; any two types with equal local types.

    >>> a, b = DistType.parse("[32{x}128]"), DistType.parse("[32{y}128]")
    >>> AllPermute().check(a, b, Mesh(x=4, y=4)); AllPermute().cost(a, b)
    32
    """

    def __str__(self) -> str:
        return "allpermute"

    def infer(self, src: DistType, mesh: Mesh) -> DistType:
        raise TypeNotationError("expected a target type for allpermute, but found none")

    def check(self, src: DistType, dst: DistType, mesh: Mesh) -> None:
        src.check(mesh)
        dst.check(mesh)
        if src.local_type != dst.local_type or src.global_type != dst.global_type:
            raise TypeNotationError(f"expected allpermute between equal local types, but found {src} and {dst}")

    def cost(self, src: DistType, dst: DistType) -> int:
        return src.local_size


@dataclass(frozen=True, slots=True)
class Relabel(Collective):
    """Re-choose the device map so that the tiles read as another type; no data moves.

    The device-map relabelling of the paper's low-level semantics (Fig. 10:
    ``beta' . phi'^-1 = beta . phi^-1``), made a step of its own: any two types
    with equal local types put the same set of tiles on the devices, so the
    new map sends each device to a point of the prime-factor mesh where the
    new type has the tile the device already holds. The steps after it act
    on that map (`CollectiveProgram.frames`) until an `AllPermute` returns to the
    mesh's own map. Costs nothing.

    >>> a, b = DistType.parse("[1{z,x}6, 12]"), DistType.parse("[1{x,z}6, 12]")
    >>> Relabel().check(a, b, Mesh(x=3, z=2)); Relabel().cost(a, b)
    0
    """

    def __str__(self) -> str:
        return "relabel"

    def infer(self, src: DistType, mesh: Mesh) -> DistType:
        raise TypeNotationError("expected a target type for relabel, but found none")

    def check(self, src: DistType, dst: DistType, mesh: Mesh) -> None:
        src.check(mesh)
        dst.check(mesh)
        if src.local_type != dst.local_type or src.global_type != dst.global_type:
            raise TypeNotationError(f"expected relabel between equal local types, but found {src} and {dst}")

    def cost(self, src: DistType, dst: DistType) -> int:
        return 0
