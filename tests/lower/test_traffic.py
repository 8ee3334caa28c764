"""Who sends what to whom (issue 27 item 1): `stats()["traffic"]`, a typed value, and explain()'s table.

Each transfer names its launch, tensor, sender, receiver, bytes and the
outermost level of the plan's own `Machine` at which sender and receiver
differ (level 0: between nodes; deeper: inside a node). Counts are by hand.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import distal as dt
from distal.lower.traffic import Split, Traffic, Transfer, crossing_level

i, j, k = dt.index_vars("i j k")
io, jo, ko, ii, ji, ki, kos = dt.index_vars("io jo ko ii ji ki kos")
iio, jio, iii, jii = dt.index_vars("iio jio iii jii")
F64 = 8


def _matmul(n: int, m: dt.Machine | None, specs: tuple[object, object, object] | None) -> tuple[dt.Tensor, ...]:
    rng = np.random.default_rng(0)
    fmts = [None] * 3 if specs is None or m is None else [dt.Format(s, m) for s in specs]  # type: ignore[arg-type]
    A = dt.Tensor("A", (n, n), fmts[0])
    B = dt.Tensor.from_array("B", rng.random((n, n)), fmts[1])
    C = dt.Tensor.from_array("C", rng.random((n, n)), fmts[2])
    A[i, j] = B[i, k] * C[k, j]
    return A, B, C


def _cannon(A: dt.Tensor, B: dt.Tensor, C: dt.Tensor, m: dt.Machine) -> dt.Schedule:
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], m).divide(k, ko, ki, m.x)
            .reorder([ko, ii, ji, ki]).rotate(ko, [io, jo], kos)
            .communicate(A, jo).communicate([B, C], kos).substitute([ii, ji, ki], dt.leaf.GEMM))


def test_cannon_shifts_are_named_sender_by_sender() -> None:
    # 2x2, n = 8: at step s, processor (x,y) reads B(x, (x+y+s) % 2) from the processor that holds it,
    # (x, (x+y+s) % 2), and C((x+y+s) % 2, y) from ((x+y+s) % 2, y): 16 elements each when not its own
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = _matmul(8, m, ("xy -> xy",) * 3)
    data = _cannon(A, B, C, m).compile().stats()
    traffic = data["traffic"]
    assert isinstance(traffic, Traffic)
    step = [item["step"]["kos"] for item in data["launches"]]  # a step runs as a few launches (rotation)
    got = {(step[t.launch or 0], t.tensor, t.sender, t.receiver, t.nbytes) for t in traffic.transfers}
    want = set()
    for s in range(2):
        for x in range(2):
            for y in range(2):
                kk = (x + y + s) % 2
                if kk != y:
                    want.add((s, "B", (x, kk), (x, y), 16 * F64))
                if kk != x:
                    want.add((s, "C", (kk, y), (x, y), 16 * F64))
    assert got == want
    assert all(t.kind == "read" and t.between_nodes and not t.inside_node for t in traffic.transfers)
    # the table and the per-processor totals agree
    for p, b in data["received_bytes"].items():
        proc = tuple(int(c) for c in p.strip("()").split(","))
        assert traffic.received(proc).total == b


def _hierarchical_summa(n: int) -> tuple[dt.Schedule, dt.Machine]:
    m = dt.Machine(dt.Grid(2, 2), dt.Grid(2, 2))
    A, B, C = _matmul(n, m, (["xy -> xy"] * 2,) * 3)
    s = (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
         .distribute([ii, ji], [iio, jio], [iii, jii], m, level=1)
         .split(k, ko, ki, n // 2).reorder([ko, iii, jii, ki])
         .communicate(A, jio).communicate([B, C], ko)
         .substitute([iii, jii, ki], dt.leaf.GEMM))
    return s, m


def test_hierarchical_summa_splits_inside_and_between_nodes_by_the_machines_levels() -> None:
    # 2x2 nodes of 2x2 processors, n = 8: node (X,Y) holds 4x4 blocks, its processor (x,y) 2x2 blocks.
    # At chunk ko (4 wide), processor (X,Y,x,y) reads B[4X+2x : +2, 4ko : +4]: two 2x2 pieces held by node
    # (X,ko)'s processors (x,0), (x,1). When ko == Y one is its own and the other comes from inside its
    # node (4 elements), else both come from another node (8 elements). C alike. Per processor: 8 elements
    # inside its node, 16 between nodes.
    s, _ = _hierarchical_summa(8)
    data = s.compile().stats()
    traffic = data["traffic"]
    assert traffic.levels == 2
    for p in [(a, b, c, d) for a in range(2) for b in range(2) for c in range(2) for d in range(2)]:
        assert traffic.received(p) == Split(inside_node=8 * F64, between_nodes=16 * F64, store=0)
    assert traffic.split("read") == Split(16 * 8 * F64, 16 * 16 * F64, 0)
    inside = [t for t in traffic.transfers if t.inside_node]
    assert inside and all(t.sender[:2] == t.receiver[:2] for t in inside)  # type: ignore[index]
    assert all(t.sender[:2] != t.receiver[:2] for t in traffic.transfers if t.between_nodes)  # type: ignore[index]


def test_tensors_without_a_format_come_from_their_global_store() -> None:
    m = dt.Machine(dt.Grid(2, 2))
    A, _, _ = _matmul(4, None, None)
    data = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile().stats()
    traffic = data["traffic"]
    # each processor reads a 2x4 block of B and a 4x2 block of C from their stores
    assert {t.sender for t in traffic.transfers} == {None}
    assert all(t.store and t.where() == "global store" for t in traffic.transfers)
    assert traffic.split("read") == Split(0, 0, 4 * 16 * F64)


def test_johnson_reductions_go_to_the_face_that_holds_the_output() -> None:
    # Grid(2,2,2), n = 4: (x,y,1) sends its 2x2 part of A(x,y) to (x,y,0), which holds it (xy -> xy0)
    m = dt.Machine(dt.Grid(2, 2, 2))
    A, B, C = _matmul(4, m, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"))
    plan = (A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
            .communicate([A, B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM)).compile()
    reduce = {(t.sender, t.receiver, t.nbytes) for t in plan.stats()["traffic"].transfers if t.kind == "reduce"}
    assert reduce == {((x, y, 1), (x, y, 0), 4 * F64) for x in range(2) for y in range(2)}


def test_explain_prints_the_table_per_launch() -> None:
    m = dt.Machine(dt.Grid(2, 2))
    A, B, C = _matmul(8, m, ("xy -> xy",) * 3)
    text = _cannon(A, B, C, m).compile().explain()
    assert "sender -> receiver" in text
    assert "(0,1) -> (0,0)  B 128 B, read, between nodes" in text
    assert "(1,0) -> (0,0)  C 128 B, read, between nodes" in text
    assert "moves 384 B between nodes:" in text


def test_crossing_levels_and_the_typed_value() -> None:
    assert crossing_level((0, 1, 0), (0, 1, 1), (2, 1)) == 1
    assert crossing_level((0, 1, 0), (1, 1, 0), (2, 1)) == 0
    assert crossing_level((0, 1, 0), None, (2, 1)) is None
    t = Transfer(0, "read", "B", (0, 1, 0), (0, 1, 1), 8, 1)
    assert t.inside_node and not t.between_nodes and str(t) == "(0,1,0) -> (0,1,1): B 8 B (read, inside a node)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.nbytes = 9  # type: ignore[misc]
