"""How the model moves data: delivery schemes, reductions, ports per level, and memory per processor.

Every machine here is a frozen description (fixed bandwidths, no latency unless said): the tests check
the arithmetic of `distal.model.transfers` and `predict` against a hand computation, never a timing.
"""

from __future__ import annotations

import math

import pytest

import distal as dt
from distal import kernels, model
from distal.machine import Level
from distal.model import LEAF_KINDS, Link, MachineModel, ModelError, ProcessorModel
from distal.model.transfers import arrivals, collect, deliver

S = 1e9  # bytes of the tile every test moves
BW = 1e10  # bytes per second of every link below: one copy of S takes 0.1 s
FAST = Link("fast", BW, 0.0)
FREE = ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e30), 1e30, 1 << 40)


def _flat(per_node: int, **kw: object) -> MachineModel:
    """Nodes of `per_node` processors, every link `BW`, no latency, no runtime cost."""
    fields: dict[str, object] = {"launch_seconds": 0.0, "task_seconds": 0.0, "overlap": 0.0}
    fields.update(kw)
    return MachineModel("frozen", FREE, per_node, FAST, FAST, **fields)  # type: ignore[arg-type]


def _last(m: MachineModel, copies: list) -> float:  # type: ignore[type-arg]
    done, _ = arrivals(m, [copies])
    return max(done.values())


@pytest.mark.parametrize("p", [2, 3, 4, 8, 16, 33])
def test_broadcast_on_one_level_costs_what_its_scheme_says(p: int) -> None:
    """A holder and p - 1 readers inside one node: all from the holder, doubling, or a tree (doubling in a node)."""
    m = _flat(64)
    needs = {r: S for r in range(1, p)}
    owner = deliver(m, [0], needs, "owner")
    assert len(owner) == p - 1 and {c.src for c in owner} == {0}
    assert _last(m, owner) == pytest.approx((p - 1) * S / BW)  # the holder's port sends them one after the other
    for scheme in ("nearest", "tree"):
        copies = deliver(m, [0], needs, scheme)
        assert sorted(c.dst for c in copies) == list(range(1, p))  # every reader gets the tile once
        assert _last(m, copies) == pytest.approx(math.ceil(math.log2(p)) * S / BW)  # holders double each round


@pytest.mark.parametrize(("nodes", "rounds", "fanout"), [(8, 1, 7), (64, 2, 7), (9, 2, 7), (3, 1, 2)])
def test_collective_tree_across_nodes(nodes: int, rounds: int, fanout: int) -> None:
    """One processor per node, radix 8: each round a node with the tile sends it to up to 7 more nodes."""
    m = _flat(1, radix=8)
    copies = deliver(m, [0], {r: S for r in range(1, nodes)}, "tree")
    assert max(c.round for c in copies) + 1 == rounds
    assert max(sum(1 for c in copies if c.src == 0 and c.round == k) for k in range(rounds)) == fanout
    nearest = deliver(m, [0], {r: S for r in range(1, nodes)}, "nearest")
    assert max(c.round for c in nearest) + 1 == math.ceil(math.log2(nodes))


def test_nearest_crosses_the_network_once_per_node() -> None:
    """Four nodes of four: the tile enters each node once, its other readers copy it inside the node."""
    m = _flat(4)
    copies = deliver(m, [0], {r: S for r in range(1, 16)}, "nearest")
    across = [c for c in copies if m.node_of(c.src) != m.node_of(c.dst)]
    assert sorted(m.node_of(c.dst) for c in across) == [1, 2, 3]
    owner = deliver(m, [0], {r: S for r in range(1, 16)}, "owner")
    assert sum(1 for c in owner if m.node_of(c.dst) != 0) == 12


def test_readers_that_hold_part_of_a_tile_exchange_the_rest() -> None:
    """Two processors each hold half of what both read: each receives the other half from the other."""
    m = _flat(2)
    copies = deliver(m, [0, 1], {0: S / 2, 1: S / 2})
    assert sorted((c.src, c.dst) for c in copies) == [(0, 1), (1, 0)]
    assert _last(m, copies) == pytest.approx(S / 2 / BW)  # full duplex: both directions at once


@pytest.mark.parametrize("p", [2, 4, 5, 8])
def test_reductions_fold_into_the_holder_or_combine_in_a_tree(p: int) -> None:
    m = _flat(64)
    parts = {r: S for r in range(p)}
    fold = collect(m, 0, parts, "fold")
    assert {c.dst for c in fold} == {0} and _last(m, fold) == pytest.approx((p - 1) * S / BW)
    tree = collect(m, 0, parts, "tree")
    assert len(tree) == p - 1 and _last(m, tree) == pytest.approx(math.ceil(math.log2(p)) * S / BW)


def test_copies_between_sockets_share_the_sockets_port() -> None:
    """Lassen-like: GPUs 0, 1 on one socket (NVLink between them), 2, 3 on the other (X-bus between sockets)."""
    nv, xbus = Link("nv", 4 * BW, 0.0), Link("xb", BW, 0.0)
    m = MachineModel("sockets", FREE, 4, xbus, FAST, levels=(Level("socket", 2, xbus), Level("cpu", 2, nv)),
                     launch_seconds=0.0, task_seconds=0.0)
    assert [m.distance(0, q) for q in range(4)] == [0, 1, 2, 2]
    same_socket = deliver(m, [0], {1: S}, "owner")
    assert _last(m, same_socket) == pytest.approx(S / (4 * BW))
    # two copies leave socket 0 at once: its one X-bus port carries both
    done, _ = arrivals(m, [deliver(m, [0], {2: S}, "owner"), deliver(m, [1], {3: S}, "owner")])
    assert done[2] == pytest.approx(2 * S / BW) and done[3] == pytest.approx(2 * S / BW)


def test_node_levels_must_divide_the_node() -> None:
    with pytest.raises(ModelError, match="sizes multiply to the 6 processors of a node"):
        MachineModel("bad", FREE, 6, FAST, FAST, levels=(Level("socket", 4, FAST),))
    with pytest.raises(ModelError, match="broadcast delivery among nearest, tree, owner"):
        _flat(4, broadcast="magic")
    # a new node size the levels no longer divide drops them (auto's nodes of its inner grid)
    assert model.lassen_gpu().with_(per_node=3).levels == ()
    assert [lv.shape for lv in model.lassen_gpu().with_(per_node=8).levels] == [(4,), (2,)]


def _broadcast_plan(p: int, n: int) -> tuple[object, float]:
    """A(i,j) = b(j) over Grid(p), b held whole by processor 0: every other processor reads all of b."""
    i, j, io, ii = dt.index_vars("i j io ii")
    m = dt.Machine(dt.Grid(p))
    A = dt.Tensor("A", (p, n), format=dt.Format("xy -> x", m))
    b = dt.Tensor("b", (n,), format=dt.Format("x -> 0", m))
    A[i, j] = b[j]
    plan = A.schedule().distribute([i], [io], [ii], m).communicate(A, io).compile()
    return plan, 8.0 * n


@pytest.mark.parametrize("p", [2, 4, 8])
def test_a_plans_broadcast_costs_its_scheme_through_predict(p: int) -> None:
    plan, size = _broadcast_plan(p, 1 << 20)
    for scheme, copies in (("owner", p - 1), ("nearest", math.ceil(math.log2(p)))):
        got = plan.predict(_flat(64, broadcast=scheme))  # type: ignore[attr-defined]
        assert got.comm_seconds == pytest.approx(copies * size / BW, rel=1e-6), scheme
        assert sum(r["intra_bytes"] for r in got.per_processor) == pytest.approx((p - 1) * size)


def test_a_plan_over_a_gpus_memory_is_flagged() -> None:
    """Johnson's cube at the paper's 32 GPU nodes (128 V100s, n = 20000 * sqrt(32)): over 15 GiB per GPU."""
    n = 256 * round(20000 * math.sqrt(32) / 256)
    ops = [dt.Tensor(x, (n, n)) for x in "ABC"]
    plan = kernels.build("johnson", kernels.machine("johnson", 128), *ops).compile()
    v100 = model.lassen_gpu()
    got = model.predict(plan, v100, 128, exact=False)
    assert not got.fits and got.peak_bytes > v100.processor.memory and "DOES NOT FIT" in got.summary()
    bigger = v100.with_(processor=ProcessorModel("gpu", v100.processor.flops, v100.processor.bandwidth, 31 << 30))
    assert model.predict(plan, bigger, 128, exact=False).fits


def test_one_shared_memory_reads_whole_instances_in_place_and_copies_assembled_tiles() -> None:
    """Legate's CPUs of one process share its memory: b held whole by processor 0 is read in place; a row tile of
    a column-distributed B spans two instances and is assembled, whole, into a new one."""
    shared = _flat(64, shared_memory=True)
    plan, _size = _broadcast_plan(4, 1 << 20)
    assert plan.predict(shared).comm_seconds == 0.0  # type: ignore[attr-defined]
    i, j, io, ii = dt.index_vars("i j io ii")
    m = dt.Machine(dt.Grid(2))
    n = 1024
    A = dt.Tensor("A", (n, n), format=dt.Format("xy -> x", m))
    B = dt.Tensor("B", (n, n), format=dt.Format("yx -> x", m))
    A[i, j] = B[i, j]
    rows_from_cols = A.schedule().distribute([i], [io], [ii], m).communicate(A, io).compile()
    tile = 8.0 * n * n / 2
    got = rows_from_cols.predict(shared)
    assert got.comm_seconds == pytest.approx(tile / BW)  # the whole tile, not the half held elsewhere
    assert rows_from_cols.predict(_flat(64)).comm_seconds == pytest.approx(tile / 2 / BW)
