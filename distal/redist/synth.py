"""`synthesize`: the collective synthesizer of the redistribution paper.

1. Check both types on the mesh and that they describe the same global array.
2. Decompose the mesh into prime factors and search the weak types for a
   cheapest path within the height bound (`distal.redist.weak_paths`).
3. Lower the path to concrete collectives biased towards the target's axes
   (`distal.redist.lower`), both with the mesh's own device map throughout
   and, unless ``relabel=False``, as the paper does: relabelling the device
   map where a pop would otherwise need data moved, and one allpermute at the
   end (Theorem 6.7), so the program never costs more than the weak optimum
   plus ``localsize(dst)``.
4. Merge neighbouring collectives of one kind (dynslices; allgathers;
   alltoalls on disjoint dimensions), which never costs more.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

from distal.errors import SynthesisError, TypeNotationError
from distal.redist.collectives import AllGather, AllPermute, AllToAll, Collective, DynSlice, Relabel
from distal.redist.lower import ConcreteOp, FTypes, lower_relabelled, lower_weak_path
from distal.redist.mesh import Mesh
from distal.redist.program import CollectiveProgram
from distal.redist.types import DistType, factors_to_refs
from distal.redist.weak_paths import WeakOp, WeakProblem, paths_below, shortest_paths

__all__ = ["METHODS", "synthesize"]

METHODS = ("search", "naive")
PATHS = 16  # equally cheap weak paths tried when lowering needs a permutation
PATHS_BELOW = 256  # dearer weak paths tried when the permutation makes the cheapest ones dearer


def _as_type(t: DistType | str) -> DistType:
    return DistType.parse(t) if isinstance(t, str) else t


def synthesize(
    src: DistType | str, dst: DistType | str, mesh: Mesh | str, method: str = "search", relabel: bool = True
) -> CollectiveProgram:
    """A program of collectives redistributing ``src`` to ``dst`` on ``mesh``.

    ``method="search"`` (default) finds a cheapest memory-bounded program;
    ``method="naive"`` gathers everything, then slices. With ``relabel=False``
    every step acts along mesh (sub-)axes of the mesh's own device map (no
    `Relabel` steps); such programs may need
    an allpermute in the middle and then exceed the paper's bound.

    >>> m = Mesh(x=4, y=4)
    >>> p = synthesize("[32{x,y}512, 128]", "[128{x}512, 32{y}128]", m)
    >>> [str(s) for s in p.steps], p.cost, p.height
    (['alltoall(0->1{x})', 'allpermute'], 8192, 4096)
    >>> synthesize("[32{x,y}512, 128]", "[128{x}512, 32{y}128]", m, method="naive").cost
    65536
    """
    s, d = _as_type(src), _as_type(dst)
    mh = Mesh.parse(mesh) if isinstance(mesh, str) else mesh
    if method not in METHODS:
        raise SynthesisError(f"expected a method among {', '.join(METHODS)}, but found {method!r}")
    return _synthesize(s, d, mh, method, bool(relabel))


@lru_cache(maxsize=4096)
def _synthesize(src: DistType, dst: DistType, mesh: Mesh, method: str, relabel: bool = True) -> CollectiveProgram:
    for t in (src, dst):
        t.check(mesh)
    if src.global_type != dst.global_type:
        raise SynthesisError(
            f"expected a target with the global type {list(src.global_type)} of the source "
            f"{src}, but found {dst} with global type {list(dst.global_type)}"
        )
    s_lists, d_lists = src.factor_lists(mesh), dst.factor_lists(mesh)
    if method == "naive":
        return _naive(mesh, src, dst, s_lists, d_lists)
    primes = Counter(f.size for f in mesh.factors)
    pb = WeakProblem(
        src.global_type,
        tuple(s.global_ // s.local for s in src.dims),
        tuple(t.global_ // t.local for t in dst.dims),
        tuple(sorted(primes.items())),
    )
    _, paths = shortest_paths(pb, PATHS)
    # programs compare by cost, then whether they need more than one allpermute,
    # then whether they relabel the device map, then number of steps, then
    # messages per device (latency: an allpermute sends one, a collective over
    # n devices n-1), then number of allpermutes
    Key = tuple[int, bool, bool, int, int, int]
    best: tuple[Key, FTypes, list[ConcreteOp]] | None = None

    def consider(path: list[WeakOp]) -> Key:
        nonlocal best
        lowered = [_merge(*lower_weak_path(mesh, s_lists, d_lists, path))]
        if relabel:
            lowered.append(_merge(*lower_relabelled(mesh, s_lists, d_lists, path)))
        keys = []
        for types, ops in lowered:
            perms = sum(o[0] == "permute" for o in ops)
            relabels = any(o[0] == "relabel" for o in ops)
            cost = _cost(types, ops, mesh, src.global_type)
            key = (cost, perms > 1, relabels, len(ops), _messages(ops, mesh), perms)
            keys.append(key)
            if best is None or key < best[0]:
                best = (key, types, ops)
        return min(keys)

    for path in paths:
        if consider(path)[5] == 0:
            break
    assert best is not None
    if best[0][5]:
        # the permutation made it dearer: try weak paths up to the best total
        # (one without permutation may cost as much or less)
        for cost, path in paths_below(pb, best[0][0] + 1, PATHS_BELOW, 8 * PATHS_BELOW):
            if cost > best[0][0] or (best[0][5] == 0 and cost == best[0][0]):
                break
            consider(path)
    return _program(mesh, src, dst, best[1], best[2])


def _messages(ops: list[ConcreteOp], mesh: Mesh) -> int:
    total = 0
    for op in ops:
        if op[0] == "permute":
            total += 1
        elif op[0] not in ("slice", "relabel"):
            total += math.prod(mesh.factors[f].size for g in op[1] for f in g[-1]) - 1
    return total


def _cost(types: FTypes, ops: list[ConcreteOp], mesh: Mesh, global_type: tuple[int, ...]) -> int:
    total = math.prod(global_type)

    def local(t: tuple[tuple[int, ...], ...]) -> int:
        return total // math.prod(mesh.factors[f].size for lst in t for f in lst)

    cost = 0
    for op, before, after in zip(ops, types, types[1:]):
        if op[0] == "gather":
            cost += local(after)
        elif op[0] not in ("slice", "relabel"):
            cost += local(before)
    return cost


def _naive(
    mesh: Mesh,
    src: DistType,
    dst: DistType,
    s_lists: tuple[tuple[int, ...], ...],
    d_lists: tuple[tuple[int, ...], ...],
) -> CollectiveProgram:
    types: FTypes = [s_lists]
    ops: list[ConcreteOp] = []
    gathers = tuple((i, run) for i, run in enumerate(s_lists) if run)
    if gathers:
        types.append(tuple(() for _ in s_lists))
        ops.append(("gather", gathers))
    slices = tuple((i, run) for i, run in enumerate(d_lists) if run)
    if slices:
        types.append(d_lists)
        ops.append(("slice", slices))
    return _program(mesh, src, dst, types, ops)


def _merge(types: FTypes, ops: list[ConcreteOp]) -> tuple[FTypes, list[ConcreteOp]]:
    out_t: FTypes = [types[0]]
    out_o: list[ConcreteOp] = []
    for op, t in zip(ops, types[1:]):
        if out_o and _mergeable(out_o[-1], op):
            out_o[-1] = _combine(out_o[-1], op)
            out_t[-1] = t
            continue
        out_o.append(op)
        out_t.append(t)
    return out_t, out_o


def _dims(op: ConcreteOp) -> set[int]:
    if op[0] == "a2a":
        return {d for i, j, _ in op[1] for d in (i, j)}
    return {i for i, _ in op[1]}


def _mergeable(a: ConcreteOp, b: ConcreteOp) -> bool:
    if a[0] != b[0] or a[0] in ("permute", "relabel"):
        return False
    return a[0] != "a2a" or not _dims(a) & _dims(b)


def _combine(a: ConcreteOp, b: ConcreteOp) -> ConcreteOp:
    if a[0] == "a2a":
        return ("a2a", tuple(sorted(a[1] + b[1])))
    runs: dict[int, tuple[int, ...]] = dict(a[1])
    for i, run in b[1]:
        old = runs.get(i, ())
        # slices push on top of earlier slices; gathers pop below earlier gathers
        runs[i] = run + old if a[0] == "slice" else old + run
    return (a[0], tuple(sorted(runs.items())))


def _program(mesh: Mesh, src: DistType, dst: DistType, types: FTypes, ops: list[ConcreteOp]) -> CollectiveProgram:
    dts = [DistType.from_factor_lists(mesh, t, src.global_type) for t in types]
    # the ends as the user wrote them (they may name axes of size 1, which have no factors)
    dts[0] = src
    if ops:
        dts[-1] = dst
    steps: list[Collective] = []
    for op in ops:
        kind = op[0]
        if kind == "permute":
            steps.append(AllPermute())
        elif kind == "relabel":
            steps.append(Relabel())
        elif kind == "a2a":
            steps.append(AllToAll(tuple((i, j, factors_to_refs(mesh, r)) for i, j, r in op[1])))
        else:
            axes = tuple((i, factors_to_refs(mesh, r)) for i, r in op[1])
            steps.append(AllGather(axes) if kind == "gather" else DynSlice(axes))
    try:
        return CollectiveProgram(mesh, tuple(dts), tuple(steps))
    except TypeNotationError as e:  # pragma: no cover - an internal invariant
        raise AssertionError(f"synthesized an ill-typed program: {e}") from e
