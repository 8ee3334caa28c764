"""Distributed array types in the notation of the redistribution paper.

``[32{x,y}512, 128]`` is a 512x128 array whose first dimension is split over
the mesh axes ``x`` and ``y`` into tiles of 32; the axes in braces are listed
minor-to-major (``x`` changes fastest), so the device with coordinates
``(i_x, i_y)`` holds rows ``32*i_x + 128*i_y`` onwards (Fig. 7a). A sub-axis,
one or more prime factors of an axis, is written as in Shardy: ``x:(1)2`` is
the major factor 2 of an axis ``x`` of size 4.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from distal._text import split_top_level
from distal.errors import TypeNotationError
from distal.redist.mesh import Mesh

__all__ = ["Dim", "DistType", "factors_to_refs", "ref_factors"]

_REF = re.compile(r'\s*"?([A-Za-z_][A-Za-z_0-9]*)"?(?::\((\d+)\)(\d+))?\s*')
_DIM = re.compile(r"\s*(\d+)\s*(?:\{([^{}]*)\}\s*(\d+)\s*)?")


def _check_ref(ref: str) -> str:
    if _REF.fullmatch(ref) is None:
        raise TypeNotationError(f"expected an axis like x or x:(1)2, but found {ref!r}")
    return ref


@dataclass(frozen=True, slots=True)
class Dim:
    """One dimension ``local{axes}global``; axes minor-to-major.

    >>> str(Dim(32, ("x", "y"), 512)), str(Dim(128, (), 128))
    ('32{x,y}512', '128')
    """

    local: int
    axes: tuple[str, ...]
    global_: int

    def __post_init__(self) -> None:
        for v in (self.local, self.global_):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise TypeNotationError(f"expected a positive integer size, but found {v!r}")
        object.__setattr__(self, "axes", tuple(_check_ref(a) for a in self.axes))

    def __str__(self) -> str:
        if not self.axes and self.local == self.global_:
            return str(self.global_)
        return f"{self.local}{{{','.join(self.axes)}}}{self.global_}"


@dataclass(frozen=True, slots=True)
class DistType:
    """A distributed array type, one `Dim` per array dimension.

    >>> t = DistType.parse("[32{x,y}512, 128]")
    >>> str(t), t.global_type, t.local_type, t.local_size
    ('[32{x,y}512, 128]', (512, 128), (32, 128), 4096)
    >>> DistType.parse(str(t)) == t
    True
    >>> t.to_shardy()
    '[{"y", "x"}, {}]'
    """

    dims: tuple[Dim, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dims", tuple(self.dims))
        for d in self.dims:
            if not isinstance(d, Dim):
                raise TypeNotationError(f"expected a Dim, but found {d!r}")

    @staticmethod
    def parse(text: str) -> DistType:
        """Parse the paper's notation; axis names may be quoted (``{"x","y"}``)."""
        body = text.strip()
        if not (body.startswith("[") and body.endswith("]")):
            raise TypeNotationError(
                f"expected a distributed type in brackets like [32{{x}}128, 64], but found {text.strip()!r}"
            )
        inner = body[1:-1]
        dims: list[Dim] = []
        if inner.strip():
            for part in split_top_level(inner, "{", "}"):
                m = _DIM.fullmatch(part)
                if m is None:
                    raise TypeNotationError(
                        f"expected a dimension like 128 or 32{{x,y}}512, but found {part.strip()!r}",
                        text,
                    )
                local = int(m.group(1))
                if m.group(2) is None:
                    dims.append(_dim(local, (), local, text))
                    continue
                refs: list[str] = []
                for r in m.group(2).split(",") if m.group(2).strip() else []:
                    rm = _REF.fullmatch(r)
                    if rm is None:
                        raise TypeNotationError(f"expected an axis like x or x:(1)2, but found {r.strip()!r}", text)
                    name = rm.group(1)
                    refs.append(name if rm.group(2) is None else f"{name}:({rm.group(2)}){rm.group(3)}")
                dims.append(_dim(local, tuple(refs), int(m.group(3)), text))
        return DistType(tuple(dims))

    def __str__(self) -> str:
        return "[" + ", ".join(str(d) for d in self.dims) + "]"

    def __repr__(self) -> str:
        """The expression that makes it: `DistType.parse('[32{x,y}512, 128]')`."""
        return f"DistType.parse({str(self)!r})"

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def global_type(self) -> tuple[int, ...]:
        return tuple(d.global_ for d in self.dims)

    @property
    def local_type(self) -> tuple[int, ...]:
        return tuple(d.local for d in self.dims)

    @property
    def global_size(self) -> int:
        return math.prod(self.global_type)

    @property
    def local_size(self) -> int:
        return math.prod(self.local_type)

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(a for d in self.dims for a in d.axes)

    def check(self, mesh: Mesh) -> None:
        """Well-formedness on ``mesh`` (Fig. 7b); raises `TypeNotationError`.

        >>> DistType.parse("[32{x,x}512]").check(Mesh(x=4))
        Traceback (most recent call last):
        ...
        distal.errors.TypeNotationError: expected every axis at most once, but found x twice in [32{x,x}512]
        """
        self.factor_lists(mesh)

    def factor_lists(self, mesh: Mesh) -> tuple[tuple[int, ...], ...]:
        """Each dimension's factor axes (indices into ``mesh.factors``), minor-to-major."""
        owner: dict[int, str] = {}
        out: list[tuple[int, ...]] = []
        for i, d in enumerate(self.dims):
            facs: list[int] = []
            for ref in d.axes:
                for f in ref_factors(mesh, ref, self):
                    if f in owner:
                        found = f"{ref} twice" if owner[f] == ref else f"{ref} overlapping {owner[f]}"
                        raise TypeNotationError(f"expected every axis at most once, but found {found} in {self}")
                    owner[f] = ref
                    facs.append(f)
            parts = math.prod(mesh.factors[f].size for f in facs)
            if d.local * parts != d.global_:
                raise TypeNotationError(
                    f"expected dimension {i} to have global size {d.local}*{parts} = "
                    f"{d.local * parts} (local size times the size of its axes), "
                    f"but found {d.global_} in {self}"
                )
            out.append(tuple(facs))
        return tuple(out)

    @staticmethod
    def from_factor_lists(mesh: Mesh, lists: Sequence[Sequence[int]], global_type: Sequence[int]) -> DistType:
        """Build the type with the given factor axes per dimension (minor-to-major)."""
        dims = []
        for facs, g in zip(lists, global_type, strict=True):
            parts = math.prod(mesh.factors[f].size for f in facs)
            assert g % parts == 0, (g, parts)
            dims.append(Dim(g // parts, factors_to_refs(mesh, facs), g))
        return DistType(tuple(dims))

    def to_shardy(self) -> str:
        """Shardy dimension shardings: axes major-to-minor, quoted.

        >>> DistType.parse("[3{x:(2)2,y}24, 4]").to_shardy()
        '[{"y", "x":(2)2}, {}]'
        """
        parts = []
        for d in self.dims:
            refs = []
            for ref in reversed(d.axes):
                name, _, sub = ref.partition(":")
                refs.append(f'"{name}"' + (f":{sub}" if sub else ""))
            parts.append("{" + ", ".join(refs) + "}")
        return "[" + ", ".join(parts) + "]"


def _dim(local: int, axes: tuple[str, ...], global_: int, text: str) -> Dim:
    try:
        return Dim(local, axes, global_)
    except TypeNotationError as e:
        raise TypeNotationError(e.message, text) from None


def ref_factors(mesh: Mesh, ref: str, where: object = None) -> tuple[int, ...]:
    """The factor axes an axis reference stands for, minor-to-major.

    >>> ref_factors(Mesh(x=4), "x"), ref_factors(Mesh(x=4), "x:(2)2")
    ((1, 0), (1,))
    """
    m = _REF.fullmatch(ref)
    assert m is not None
    name = m.group(1)
    if name not in mesh.names:
        raise TypeNotationError(f"expected an axis of mesh {mesh}, but found {name!r}", where)
    facs = mesh.factors_of(name)
    if m.group(2) is None:
        return tuple(f.index for f in reversed(facs))
    pre, size = int(m.group(2)), int(m.group(3))
    chosen = [f for f in facs if f.pre >= pre and f.pre * f.size <= pre * size]
    if not chosen or chosen[0].pre != pre or math.prod(f.size for f in chosen) != size:
        primes = "*".join(str(f.size) for f in facs) or "1"
        raise TypeNotationError(
            f"expected a sub-axis made of the prime factors {primes} of axis {name}, but found {ref}",
            where,
        )
    return tuple(f.index for f in reversed(chosen))


def factors_to_refs(mesh: Mesh, facs: Sequence[int]) -> tuple[str, ...]:
    """Axis references for factor axes (minor-to-major), merging runs of one axis."""
    runs: list[list[int]] = []
    for f in facs:
        if runs:
            last = mesh.factors[runs[-1][-1]]
            cur = mesh.factors[f]
            if cur.axis == last.axis and f == last.index - 1:
                runs[-1].append(f)
                continue
        runs.append([f])
    refs = []
    for run in runs:
        major = mesh.factors[run[-1]]
        size = math.prod(mesh.factors[f].size for f in run)
        if size == mesh.axis_size(major.axis):
            refs.append(major.axis)
        else:
            refs.append(f"{major.axis}:({major.pre}){size}")
    return tuple(refs)
