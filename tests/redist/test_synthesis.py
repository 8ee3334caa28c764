"""The paper's worked examples, the naive baseline and refused requests."""

from __future__ import annotations

import numpy as np
import pytest

from distal.errors import RuntimeFailure, SynthesisError, TypeNotationError
from distal.redist import (
    AllGather,
    AllPermute,
    AllToAll,
    CollectiveProgram,
    DistType,
    DynSlice,
    Mesh,
    synthesize,
)

M44 = Mesh(x=4, y=4)


def kinds(p: CollectiveProgram) -> list[str]:
    return [str(s).split("(")[0] for s in p.steps]


def check_simulation(p: CollectiveProgram) -> None:
    shape = p.source.global_type
    a = np.arange(int(np.prod(shape))).reshape(shape)
    tiles = p.simulate(a)
    assert len(tiles) == p.mesh.size


# (name, source, target, mesh, cost, step kinds); the cost is the cheapest of
# the paper's programs for the problem, the kinds those of distal's program.
EXAMPLES = [
    ("Fig. 5 row 1", "[32{x,y}512, 128]", "[128{x}512, 32{y}128]", M44, 8192, ["alltoall", "allpermute"]),
    (
        "Fig. 5 row 2",
        "[32{x}128, 512, 32{y}128]",
        "[128, 32{y,x}512, 128]",
        M44,
        1048576,
        ["alltoall", "alltoall"],
    ),
    (
        "Fig. 5 row 3",
        "[32{x}128, 512, 32{y}128]",
        "[128, 128{y}512, 128]",
        M44,
        2621440,
        ["alltoall", "allgather"],
    ),
    ("Example 4.9/7.1", "[1{a}8, 8]", "[8, 1{a}8]", Mesh(a=8), 8, ["alltoall"]),
    ("Fig. 3 within", "[64{y,x}1024, 128]", "[64{x,y}1024, 128]", M44, 8192, ["allpermute"]),
    ("Fig. 3 across", "[32{x}128, 16{y}64]", "[32{y}128, 16{x}64]", M44, 512, ["allpermute"]),
    ("Fig. 3 replicated", "[32{x}128]", "[32{y}128]", M44, 32, ["allpermute"]),
    ("Section 7.3", "[16]", "[4{x}16]", M44, 0, ["dynslice"]),
    ("Listing 3", "[32, 64{devs}2048]", "[1{devs}32, 2048]", Mesh(devs=32), 2048, ["alltoall"]),
    ("Fig. 4 right", "[32{x,y}512, 512]", "[128{y}512, 512]", M44, 65536, ["allgather"]),
    ("identity", "[32{x,y}512, 128]", "[32{x,y}512, 128]", M44, 0, []),
]


@pytest.mark.parametrize(("name", "src", "dst", "mesh", "cost", "steps"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_paper_examples(name: str, src: str, dst: str, mesh: Mesh, cost: int, steps: list[str]) -> None:
    p = synthesize(DistType.parse(src), DistType.parse(dst), mesh)
    assert p.source == DistType.parse(src) and p.target == DistType.parse(dst)
    assert p.cost == cost, str(p)
    assert kinds(p) == steps, str(p)
    assert p.height <= p.bound
    check_simulation(p)


# Fig. 13: the problems where the paper's programs were slowest against XLA
FIG13 = [
    ("P1", "[360, 184{c}368, 320]", "[90{c,a}360, 368, 160{b}320]", ["dynslice", "alltoall"]),
    ("P2", "[80, 40{c}80, 72, 64]", "[40{b}80, 80, 36{c}72, 64]", ["dynslice", "alltoall"]),
    ("P3", "[296, 360, 156{c}312]", "[74{b,c}296, 180{a}360, 312]", ["dynslice", "alltoall"]),
    ("P4", "[8{c}16, 16, 16, 8{a}16, 16, 8{b}16]", "[16, 16, 16, 16, 16, 8{a}16]", ["allpermute", "allgather"]),
]


@pytest.mark.parametrize(("name", "src", "dst", "steps"), FIG13, ids=[f[0] for f in FIG13])
def test_figure_13_problems(name: str, src: str, dst: str, steps: list[str]) -> None:
    m = Mesh(a=2, b=2, c=2)
    p = synthesize(src, dst, m)
    s, d = DistType.parse(src), DistType.parse(dst)
    assert kinds(p) == steps, str(p)
    if steps[-1] == "alltoall":
        # slice for free, then one alltoall at the smallest tile the target allows
        assert p.cost == p.types[1].local_size == min(t.local_size for t in p.types)
    else:
        # XLA's program for P4: one allpermute, one allgather (multi-dimension here)
        assert p.cost == s.local_size + d.local_size
    assert p.cost < synthesize(src, dst, m, method="naive").cost


def test_example_3_1_never_gathers_the_whole_array() -> None:
    m = Mesh(x=4, y=6)
    src, dst = DistType.parse("[3{x}12, 2{y}12]"), DistType.parse("[2{y}12, 3{x}12]")
    p = synthesize(src, dst, m)
    naive = synthesize(src, dst, m, method="naive")
    assert max(t.local_size for t in p.types) == 6 < 144 == naive.height
    assert all(any(d.axes for d in t.dims) for t in p.types)
    assert "allgather" not in kinds(p)
    assert p.cost <= 3 * 6 < naive.cost == 144
    check_simulation(p)


def test_figure_12_over_partitioning_beats_the_plain_program() -> None:
    src, dst = DistType.parse("[1{y,x}8, 8, 8, 4]"), DistType.parse("[8, 4{y}8, 2{x}8, 4]")
    plain = synthesize(src, dst, Mesh(x=4, y=2))
    over = synthesize(src, dst, Mesh(x=4, y=2, z=4))
    assert plain.cost == 512 and kinds(plain) == ["alltoall", "alltoall"]
    assert over.cost == 384 < plain.cost
    # over-partitioned with the replicated axis z, gathered at the end
    assert kinds(over)[0] == "dynslice" and kinds(over)[-1] == "allgather"
    assert "z" in str(over.steps[0]) and "z" in str(over.steps[-1])
    assert kinds(over).count("allpermute") <= 1
    check_simulation(over)
    # the paper's own over-partitioned program typechecks and costs 384 too
    m = Mesh(x=4, y=2, z=4)
    paper = CollectiveProgram(
        m,
        tuple(
            DistType.parse(t)
            for t in [
                "[1{y,x}8, 8, 8, 4]",
                "[1{y,x}8, 8, 8, 1{z}4]",
                "[2{x}8, 4{y}8, 8, 1{z}4]",
                "[8, 4{y}8, 2{x}8, 1{z}4]",
                "[8, 4{y}8, 2{x}8, 4]",
            ]
        ),
        (
            DynSlice(((3, ("z",)),)),
            AllToAll(((0, 1, ("y",)),)),
            AllToAll(((0, 2, ("x",)),)),
            AllGather(((3, ("z",)),)),
        ),
    )
    assert paper.step_costs == (0, 64, 64, 256) and paper.cost == 384
    check_simulation(paper)


def test_shardy_all_to_all_takes_several_moves_at_once() -> None:
    m = Mesh(a=2, b=2, c=2, d=2)
    src = DistType.parse("[2{b,a}8, 4{c}8, 4, 4, 32]")
    dst = DistType.parse("[4{a}8, 8, 2{b}4, 2{c}4, 32]")
    p = synthesize(src, dst, m)
    assert [str(s) for s in p.steps] == ["alltoall(0->2{b}, 1->3{c})"]
    assert p.cost == src.local_size
    assert '%0 = sdy.all_to_all [{"b"}: 0->2, {"c"}: 1->3] %arg0' in p.to_shardy()
    check_simulation(p)


def test_axes_of_size_one_are_kept_at_the_ends() -> None:
    m = Mesh(x=1, y=4)
    p = synthesize("[4{x}4, 4{y}16]", "[1{y}4, 16{x}16]", m)
    assert (str(p.source), str(p.target)) == ("[4{x}4, 4{y}16]", "[1{y}4, 16{x}16]")
    assert [str(s) for s in p.steps] == ["alltoall(1->0{y})"]
    check_simulation(p)


def test_naive_gathers_everything_then_slices() -> None:
    p = synthesize("[32{x,y}512, 128]", "[128{x}512, 32{y}128]", M44, method="naive")
    assert [str(s) for s in p.steps] == ["allgather(0{x,y})", "dynslice(0{x}, 1{y})"]
    assert (p.cost, p.height) == (65536, 65536)
    check_simulation(p)


def test_program_text_and_shardy() -> None:
    p = synthesize("[32{x,y}512, 128]", "[128{x}512, 32{y}128]", M44)
    assert str(p).splitlines() == [
        "mesh {x: 4, y: 4}",
        "[32{x,y}512, 128]",
        "  alltoall(0->1{x})  cost 4096",
        "[128{y}512, 32{x}128]",
        "  allpermute         cost 4096",
        "[128{x}512, 32{y}128]",
        "cost 8192, height 4096 (bound 4096)",
    ]
    assert p.to_shardy().splitlines() == [
        'sdy.mesh @mesh = <["x"=4, "y"=4]>',
        'func.func @redistribute(%arg0: tensor<512x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y", "x"}, {}]>})',
        '    -> (tensor<512x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {',
        '  %0 = sdy.all_to_all [{"x"}: 0->1] %arg0 out_sharding=<@mesh, [{"y"}, {"x"}]> : tensor<512x128xf32>',
        '  %1 = sdy.collective_permute %0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<512x128xf32>',
        "  return %1 : tensor<512x128xf32>",
        "}",
    ]
    assert [type(s) for s in p.steps] == [AllToAll, AllPermute]


def test_simulate_returns_every_device_tile() -> None:
    p = synthesize("[2{x}4, 4]", "[4, 2{y}4]", Mesh(x=2, y=2))
    a = np.arange(16).reshape(4, 4)
    tiles = p.simulate(a)
    assert sorted(tiles) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    np.testing.assert_array_equal(tiles[(1, 0)], a[:, 0:2])
    np.testing.assert_array_equal(tiles[(0, 1)], a[:, 2:4])


def test_simulate_checks_every_step_against_its_type() -> None:
    m = Mesh(x=2, y=2)
    good = CollectiveProgram(m, (DistType.parse("[2{x}4, 4]"), DistType.parse("[4, 2{x}4]")), (AllToAll(((0, 1, ("x",)),)),))
    a = np.arange(16).reshape(4, 4)
    good.simulate(a)
    # a program whose recorded type (same local shape) the data does not match
    bad = CollectiveProgram.__new__(CollectiveProgram)
    for name, value in (("mesh", m), ("steps", good.steps)):
        object.__setattr__(bad, name, value)
    object.__setattr__(bad, "types", (good.types[0], DistType.parse("[4, 2{y}4]")))
    with pytest.raises(RuntimeFailure) as e:
        bad.simulate(a)
    assert "expected device (0, 1) to hold its tile of [4, 2{y}4] after step 1 (alltoall(0->1{x}))" in str(e.value)


def test_simulate_refuses_a_wrong_shape() -> None:
    p = synthesize("[2{x}4]", "[4]", Mesh(x=2))
    with pytest.raises(Exception) as e:
        p.simulate(np.zeros(5))
    assert "expected an array of shape (4,) for [2{x}4], but found shape (5,)" in str(e.value)


@pytest.mark.parametrize(
    ("src", "dst", "mesh", "error", "message"),
    [
        (
            "[512, 32{x}1024]",
            "[1024, 32{x}1024]",
            "x=32",
            SynthesisError,
            "expected a target with the global type [512, 1024] of the source [512, 32{x}1024], "
            "but found [1024, 32{x}1024] with global type [1024, 1024]",
        ),
        (
            "[32{x}128, 32{y}256]",
            "[32{x,y}1024, 32]",
            "x=4,y=8",
            SynthesisError,
            "expected a target with the global type [128, 256] of the source [32{x}128, 32{y}256], "
            "but found [32{x,y}1024, 32] with global type [1024, 32]",
        ),
        (
            "[32{x}128]",
            "[32{z}128]",
            "x=4",
            TypeNotationError,
            "expected an axis of mesh {x: 4}, but found 'z'",
        ),
        (
            "[32{x}128]",
            "[32{x}128]",
            "x=4",
            SynthesisError,
            "expected a method among search, naive, but found 'fast'",
        ),
    ],
)
def test_impossible_requests_are_refused(src: str, dst: str, mesh: str, error: type, message: str) -> None:
    method = "fast" if "method" in message else "search"
    with pytest.raises(error) as e:
        synthesize(src, dst, Mesh.parse(mesh), method=method)
    assert message in str(e.value)


def test_program_text_round_trips() -> None:
    for _, src, dst, mesh, _, _ in EXAMPLES:
        p = synthesize(src, dst, mesh)
        assert CollectiveProgram.parse(str(p)) == p


def test_program_parse_refuses_text_without_mesh() -> None:
    with pytest.raises(TypeNotationError) as e:
        CollectiveProgram.parse("[32{x}128]")
    assert "expected a program starting with 'mesh {...}', but found none" in str(e.value)


def test_program_refuses_ill_typed_steps() -> None:
    with pytest.raises(TypeNotationError) as e:
        CollectiveProgram(M44, (DistType.parse("[32{x}128]"), DistType.parse("[128]")), ())
    assert "expected 1 types for 0 steps, but found 2" in str(e.value)
