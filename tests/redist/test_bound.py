"""The paper's bound (Theorem 6.7 / eq. (8)) on meshes mixing primes, and valid Shardy.

Every synthesized program costs at most the weak-type optimum plus
``localsize(dst)``, has at most one allpermute, stays within the height bound
and, simulated, ends with the target's tiles; its Shardy form passes the
dialect's rules (tests/redist/shardy_check.py). Checked on the problems of
issue 15; by Hypothesis on meshes of axes of 2, 3, 4, 5 and 6 where a
dimension mixes primes (the class that breaks the bound with the mesh's own
device map), and on meshes of axes of 1, 2, 3, 4, 5, 6, 10, 12 and 15 with an
extra axis of size 1 named in both types; and exhaustively (rank 2) on the issue's mesh {x: 3, y: 4, z: 2} and on
{x: 2, y: 3, z: 5}; all of these fail with the fixed-device-map lowering.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from distal.errors import TypeNotationError
from distal.redist import AllPermute, CollectiveProgram, Dim, DistType, Mesh, synthesize
from distal.redist.collectives import AllToAll, DynSlice, Relabel
from distal.redist.mesh import prime_factors
from distal.redist.simulate import offsets
from distal.redist.weak_paths import WeakProblem, shortest_paths
from tests.redist.shardy_check import ShardyError, check

AXES = ("x", "y", "z")


def weak_optimum(src: DistType, dst: DistType, mesh: Mesh) -> int:
    primes = Counter(f.size for f in mesh.factors)
    pb = WeakProblem(
        src.global_type,
        tuple(d.global_ // d.local for d in src.dims),
        tuple(d.global_ // d.local for d in dst.dims),
        tuple(sorted(primes.items())),
    )
    return shortest_paths(pb, 1)[0]


def assert_within_bound(prog: CollectiveProgram, src: DistType, dst: DistType, mesh: Mesh, simulate: bool = True) -> None:
    bound = weak_optimum(src, dst, mesh) + dst.local_size
    perms = sum(isinstance(s, AllPermute) for s in prog.steps)
    assert prog.cost <= bound, f"cost {prog.cost} > bound {bound}:\n{prog}"
    assert perms <= 1, f"{perms} allpermutes:\n{prog}"
    assert prog.height <= prog.bound
    assert prog.source == src
    # (an empty program, where the types differ only in axes of size 1, ends at the source)
    assert prog.target == dst if prog.steps else prog.target.factor_lists(mesh) == dst.factor_lists(mesh)
    if prog.relabels:
        # the paper's form: relabellings, then one allpermute back to the mesh's device map
        last = max(k for k, s in enumerate(prog.steps) if isinstance(s, Relabel))
        assert any(isinstance(s, AllPermute) for s in prog.steps[last:])
    if simulate:
        a = np.arange(src.global_size).reshape(src.global_type)
        tiles = prog.simulate(a)
        for device, tile in tiles.items():
            off = offsets(dst, mesh, device)
            np.testing.assert_array_equal(tile, a[tuple(slice(o, o + n) for o, n in zip(off, dst.local_type))])


def assert_valid_shardy(prog: CollectiveProgram) -> None:
    ops = check(prog.to_shardy())
    relabels = [k for k, s in enumerate(prog.steps) if isinstance(s, Relabel)]
    for k in relabels:
        assert ops[k] == "collective_permute (moves no data)", (k, ops)
    assert len(ops) in (len(prog.steps), len(prog.steps) + 1)


# --- the cases of issue 15 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "dst", "mesh", "cost"),
    [
        ("[6, 1{y,x}12]", "[1{z,x}6, 3{y}12]", "x=3,y=4,z=2", 6),
        ("[2{x}6, 12{y}48]", "[3{z}6, 4{y,x}48]", "x=3,y=4,z=2", 24),
    ],
)
def test_issue_cases_keep_the_bound_with_one_final_allpermute(src: str, dst: str, mesh: str, cost: int) -> None:
    m, s, d = Mesh.parse(mesh), DistType.parse(src), DistType.parse(dst)
    prog = synthesize(s, d, m)
    assert prog.cost == cost == weak_optimum(s, d, m) + d.local_size
    assert_within_bound(prog, s, d, m)
    # dynslice, relabel (moves no data), alltoall, allpermute back to the mesh's device map
    assert [type(st) for st in prog.steps] == [DynSlice, Relabel, AllToAll, AllPermute]
    assert CollectiveProgram.parse(str(prog)) == prog
    assert_valid_shardy(prog)


def test_fixed_device_maps_on_request_exceed_it() -> None:
    """``relabel=False`` is the fixed-map lowering (the mesh's own device map throughout)."""
    m = Mesh.parse("x=3,y=4,z=2")
    prog = synthesize("[6, 1{y,x}12]", "[1{z,x}6, 3{y}12]", m, relabel=False)
    assert prog.relabels == 0 and prog.cost == 9
    assert sum(isinstance(s, AllPermute) for s in prog.steps) == 2


def test_a_program_must_leave_the_relabelled_map() -> None:
    m = Mesh.parse("x=3,z=2")
    a, b = DistType.parse("[1{z,x}6]"), DistType.parse("[1{x,z}6]")
    with pytest.raises(TypeNotationError, match="expected an allpermute after the last relabel"):
        CollectiveProgram(m, (a, b), (Relabel(),))
    prog = CollectiveProgram(m, (a, b, a), (Relabel(), AllPermute()))
    assert prog.cost == 1 and prog.frames[1] != prog.frames[0] == prog.frames[2]
    x = np.arange(6)
    tiles = prog.simulate(x)
    assert all(np.array_equal(tiles[d], x[list(offsets(a, m, d))]) for d in m.devices())


# --- Hypothesis: meshes mixing 2, 3 and 5, with axes of size 1 -------------------------

SIZES = (1, 2, 3, 4, 5, 6, 10, 12, 15)


@st.composite
def mixed_problems(
    draw: Any,
    sizes_from: Sequence[int] = SIZES,
    mixed_dimension: bool = False,
    max_rank: int = 3,
    max_elements: int = 4096,
) -> tuple[Mesh, DistType, DistType]:
    """Problems of the paper's distribution on meshes of three axes of ``sizes_from``.

    With ``mixed_dimension``, one dimension of the source or the target is split
    over axes of different primes: the class where lowering with the mesh's own
    device map can get stuck (about one problem in 30 of it breaks the bound
    that way, against one in 100 without the filter).
    """
    sizes: list[int] = []
    for _ in AXES:  # at most 120 devices, so every program can be simulated quickly
        sizes.append(draw(st.sampled_from([s for s in sizes_from if math.prod(sizes) * s <= 120] or [1])))
    mesh = Mesh(tuple(zip(AXES, sizes, strict=True)))
    rank = draw(st.integers(1, max_rank))
    placements = []
    for _ in range(2):
        per: list[list[str]] = [[] for _ in range(rank)]
        for name in AXES:
            where = draw(st.sampled_from([None, *range(rank)]))
            if where is not None:
                per[where].append(name)
        placements.append([list(draw(st.permutations(p))) for p in per])
    if mixed_dimension:
        assume(
            any(
                len({q for a in dim for q in prime_factors(mesh.axis_size(a))}) > 1
                for placement in placements
                for dim in placement
            )
        )
    ext = [math.lcm(*(math.prod(mesh.axis_size(a) for a in p[i]) for p in placements)) for i in range(rank)]
    for k in range(rank):
        f = draw(st.sampled_from((1, 1, 2, 3)))
        if math.prod(ext) * f <= max_elements:
            ext[k] *= f
    src, dst = (
        DistType(tuple(Dim(g // math.prod(mesh.axis_size(a) for a in ax), tuple(ax), g) for ax, g in zip(p, ext)))
        for p in placements
    )
    return mesh, src, dst


@settings(max_examples=300, deadline=None, derandomize=True)
@given(mixed_problems(sizes_from=(2, 3, 4, 5, 6), mixed_dimension=True))
def test_mixed_prime_meshes_keep_the_bound(problem: tuple[Mesh, DistType, DistType]) -> None:
    mesh, src, dst = problem
    prog = synthesize(src, dst, mesh)
    assert_within_bound(prog, src, dst, mesh, simulate=src.global_size <= 4096)
    assert CollectiveProgram.parse(str(prog)) == prog
    assert_valid_shardy(prog)


# --- exhaustive on small meshes -----------------------------------------------------------


def placements(names: Sequence[str], rank: int) -> list[tuple[tuple[str, ...], ...]]:
    """Every way to put each axis on one dimension (or none), in every order."""
    out: list[tuple[tuple[str, ...], ...]] = []
    for assign in itertools.product([None, *range(rank)], repeat=len(names)):
        per = [[n for n, a in zip(names, assign) if a == i] for i in range(rank)]
        out.extend(itertools.product(*(itertools.permutations(p) for p in per)))
    return out


def all_problems(mesh: Mesh, rank: int) -> Iterator[tuple[DistType, DistType]]:
    pls = placements(mesh.names, rank)
    for ps, pd in itertools.product(pls, pls):
        ext = [math.lcm(*(math.prod(mesh.axis_size(a) for a in p[i]) for p in (ps, pd))) for i in range(rank)]
        yield tuple(  # type: ignore[misc]
            DistType(tuple(Dim(g // math.prod(mesh.axis_size(a) for a in ax), ax, g) for ax, g in zip(p, ext)))
            for p in (ps, pd)
        )


@pytest.mark.parametrize("mesh", ["x=2,y=3,z=5", "x=3,y=4,z=2"])
def test_every_rank_2_problem_of_a_small_mesh_keeps_the_bound(mesh: str) -> None:
    m = Mesh.parse(mesh)
    relabelled = 0
    for src, dst in all_problems(m, 2):
        prog = synthesize(src, dst, m)
        # simulate the programs that relabel (the paper's lowering) and a sample of the others
        relabelled += prog.relabels > 0
        assert_within_bound(prog, src, dst, m, simulate=prog.relabels > 0 or hash(str(src)) % 16 == 0)
    assert relabelled > 0


# --- to_shardy with axes of size 1 ----------------------------------------------------------


def test_issue_case_with_a_size_1_axis_is_valid_shardy() -> None:
    prog = synthesize("[4{x}16, 8{u}8]", "[16, 2{x}8]", Mesh.parse("x=4,u=1"))
    text = prog.to_shardy()
    assert 'sdy.all_to_all [{"x"}: 0->1] %arg0 out_sharding=<@mesh, [{}, {"u", "x"}]>' in text
    # a permute that moves no data names the target's sharding, which drops u
    assert check(text) == ["all_to_all", "collective_permute (moves no data)"]


def test_the_checker_rejects_what_shardy_rejects() -> None:
    bad = "\n".join(
        [
            'sdy.mesh @mesh = <["x"=4, "u"=1]>',
            'func.func @redistribute(%arg0: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"u"}]>})',
            '    -> (tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) {',
            '  %0 = sdy.all_to_all [{"x"}: 0->1] %arg0 out_sharding=<@mesh, [{}, {"x"}]> : tensor<16x8xf32>',
            "  return %0 : tensor<16x8xf32>",
            "}",
        ]
    )
    with pytest.raises(ShardyError, match="doesn't match expected sharding"):
        check(bad)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(mixed_problems(max_rank=4), st.sampled_from(["search", "naive"]))
def test_shardy_is_valid_on_meshes_with_size_1_axes(problem: tuple[Mesh, DistType, DistType], method: str) -> None:
    mesh, src, dst = problem
    # an extra axis of size 1 named in both types wherever a dimension has room for it
    mesh = Mesh((*mesh.axes, ("u", 1)))
    src = DistType((Dim(src.dims[0].local, (*src.dims[0].axes, "u"), src.dims[0].global_), *src.dims[1:]))
    k = dst.rank - 1
    dst = DistType((*dst.dims[:k], Dim(dst.dims[k].local, ("u", *dst.dims[k].axes), dst.dims[k].global_)))
    prog = synthesize(src, dst, mesh, method=method)
    assert_valid_shardy(prog)
    if method == "search":
        assert_within_bound(prog, src, dst, mesh, simulate=src.global_size <= 4096)
