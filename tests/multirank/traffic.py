"""Bytes between ranks: what explain() counts between nodes, next to what Legate moved (issue 32 item 4).

    LEGATE_CONFIG="$LEGATE_CONFIG --profile --logdir DIR" mpirun -n 2 python tests/multirank/traffic.py OUT.json [N [TEXT]]

(after `source "$(tools/multirank_env.sh)"`; DIR must exist: Legion aborts when it cannot open its file.)
Every rank runs the same plans (ten), each on a machine whose outer level is the ranks, so that explain()'s
"between nodes" means between ranks: SUMMA and Cannon on Machine(Grid(R, 1), Grid(1, 2)), Johnson on
Grid(1, 1, R) (k over the ranks: A reduced across them), a redistribution written as a plan (y = x from
rows over the ranks to columns over them) and the synthesizer's redistribution of the same formats, a
product whose k is split over Grid(R) with the result's rows on the ranks (a distributed reduction), and
innerprod on Grid(R) x Grid(2) (reduced inside each rank, then across). Johnson and the k-split product run
twice: with Legate's reduction (`compile(reduction="legate")`: REDUCE_ADD) and with the default strategy
(with several ranks Legate's too on these flat machines). COSMA on Grid(1, 1, R) with k in two sequential
steps holds each processor's partial result across the steps and adds it into the output once, by a launch
of its own (`distal.lower.reductions.HeldReduction`). Matrices are N x N (default 64);
with TEXT, only the cases whose name contains it run.

Every input and the output is placed by its format before the measured part (`from_array` with the
format), so that the measured part is the plan alone. The measured part runs inside Legate's
`Scope(provenance="distal-traffic:<case>")`: every operation issued in it carries that name in Legion's
profile, and every copy Realm makes names the operation it was made for (tools/legion_prof.py reads them).
Legion applies a reduction's contributions when the reduced data is next read, not when the reducing
task ends, so the measured part ends by reading each block of the output on the processor its format
places it on (`settle`: one pinned launch per block holder, a read that by itself moves nothing between
ranks); the contributions crossing ranks are then copies of the measured part. distal's failure
exchange at a fence (runtime/_ranks.py: a 4096-byte row per rank that every rank reads) gets its own
provenance here ("distal: failure exchange"), so that it is told apart from the plan's bytes.

Rank 0 writes OUT.json: per case, explain()'s bytes between nodes, inside nodes and to or from global
stores, by kind (read, reduce, return), its transfers between nodes, and the result's error against
NumPy (every rank checks; the record keeps the largest). tests/multirank/test_traffic.py and
bench/rank_traffic.py compare them with the profile.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import distal as dt
from distal import kernels

PREFIX = "distal-traffic:"
EXCHANGE = "distal: failure exchange"
i, j, k, io, jo, ko, ii, ji, ki = dt.index_vars("i j k io jo ko ii ji ki")


@dataclass
class Case:
    """A plan ready to run on placed tensors: its output, the expected result, and how to run it."""

    plan: Any
    out: Any
    expected: np.ndarray
    run: Callable[[], Any] | None = None  # default: plan.run()
    prediction: dict[str, Any] | None = None  # default: the plan's explain() traffic


def _placed(name: str, array: np.ndarray, fmt: Any) -> Any:
    return dt.Tensor.from_array(name, array, fmt)


def library(name: str, machine: dt.Machine, arrays: list[np.ndarray], expected: np.ndarray,
            reduction: str | None = None, tag: str = "", **params: Any) -> Case:
    """A library algorithm on tensors placed, before the plan, by the formats the library gives them."""
    names = [f"{x}_{name}{tag}" for x in "ABCD"[: len(arrays)]]
    probes = [dt.Tensor(f"{n}_probe", a.shape) for n, a in zip(names, arrays)]
    kernels.build(name, machine, *probes, **params)
    tensors = [_placed(n, a, p.format) for n, a, p in zip(names, arrays, probes)]
    plan = kernels.build(name, machine, *tensors, **params).compile(reduction=reduction)
    return Case(plan, tensors[0], expected)


def cases(ranks: int, n: int) -> dict[str, Callable[[], Case]]:
    rng = np.random.default_rng(32)
    b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    zero = np.zeros((n, n))
    two_level = dt.Machine(dt.Grid(ranks, 1), dt.Grid(1, 2))

    def redistribution_plan() -> Case:
        m = dt.Machine(dt.Grid(ranks, 1))
        x = _placed("x_redist", b, dt.Format("xy -> xy", m))
        y = _placed("y_redist", zero, dt.Format("xy -> yx", m))
        y[i, j] = x[i, j]
        return Case(y.schedule().distribute([i, j], [io, jo], [ii, ji], m).compile(), y, b)

    def redistribution_synthesized() -> Case:
        m = dt.Machine(dt.Grid(ranks, 1))
        x = _placed("x_synth", b, dt.Format("xy -> xy", m))
        from distal.redist.formats import plan_redistribution

        program = plan_redistribution(x.format, dt.Format("xy -> yx", m), (n, n))
        # the synthesizer's own count: elements each device receives (padding included), times devices and bytes
        predicted = program.cost * m.size * b.itemsize
        return Case(None, x, b, run=lambda: x.redistribute(dt.Format("xy -> yx", m)),
                    prediction={"between": predicted, "inside": 0, "store": 0, "kinds": {},
                                "transfers": [str(s) for s in program.steps], "model": "synthesizer cost"})

    def k_split(reduction: str | None, tag: str) -> Case:
        m = dt.Machine(dt.Grid(ranks))
        A = _placed(f"A_ksplit{tag}", zero, dt.Format("xy -> x", m))
        B = _placed(f"B_ksplit{tag}", b, dt.Format("xy -> y", m))
        C = _placed(f"C_ksplit{tag}", c, dt.Format("xy -> x", m))
        A[i, j] = B[i, k] * C[k, j]
        sched = A.schedule().distribute([k], [ko], [ki], m).reorder([ko, i, j, ki]).communicate([A, B, C], ko) \
            .substitute([i, j, ki], dt.leaf.GEMM)
        return Case(sched.compile(reduction=reduction), A, b @ c)

    def innerprod() -> Case:
        x, y = rng.standard_normal((40, 8, 6)), rng.standard_normal((40, 8, 6))
        return library("innerprod", dt.Machine(dt.Grid(ranks), dt.Grid(2)), [np.zeros(()), x, y], np.asarray(np.sum(x * y)))

    johnson = dt.Machine(dt.Grid(1, 1, ranks))
    return {
        f"summa on Machine(Grid({ranks}, 1), Grid(1, 2))": lambda: library("summa", two_level, [zero, b, c], b @ c),
        f"cannon on Machine(Grid({ranks}, 1), Grid(1, 2))": lambda: library("cannon", two_level, [zero, b, c], b @ c),
        f"johnson on Grid(1, 1, {ranks}), Legate's reduction": lambda: library("johnson", johnson, [zero, b, c],
                                                                               b @ c, "legate", "_legate"),
        f"redistribution as a plan, xy -> xy to xy -> yx on Grid({ranks}, 1)": redistribution_plan,
        f"redistribution synthesized, xy -> xy to xy -> yx on Grid({ranks}, 1)": redistribution_synthesized,
        f"k split over Grid({ranks}), rows of the result on the ranks, Legate's reduction":
            lambda: k_split("legate", "_legate"),
        f"innerprod on Machine(Grid({ranks}), Grid(2))": innerprod,
        # the default strategy: with several ranks Legate's reduction on a flat machine (e49b17e)
        f"johnson on Grid(1, 1, {ranks}), default reduction": lambda: library("johnson", johnson, [zero, b, c],
                                                                              b @ c, None, "_auto"),
        f"k split over Grid({ranks}), rows of the result on the ranks, default reduction":
            lambda: k_split(None, "_auto"),
        # k in two sequential steps under A's communicate: the partials are held and folded once (HeldReduction)
        f"cosma on Grid(1, 1, {ranks}), two k steps, partials held": lambda: library(
            "cosma", johnson, [zero, b, c], b @ c, None, "_held", steps=2),
    }


def explained(plan: Any) -> dict[str, Any]:
    """explain()'s traffic of `plan`: bytes by where they travel, by kind, and the transfers between nodes."""
    traffic = plan.stats()["traffic"]
    split = traffic.split()
    red = plan.reduction
    return {"reduction": None if red is None else type(red).__name__,
            "between": split.between_nodes, "inside": split.inside_node, "store": split.store,
            "kinds": {kind: traffic.split(kind).between_nodes for kind in ("read", "reduce", "return")},
            "transfers": [str(t) for t in traffic.transfers if t.between_nodes], "model": "explain()"}


_NOOP: list[int] = []


def settle(tensor: Any) -> int:
    """Read each block of `tensor` on the processor its format places the block on (one pinned launch per
    holder): Legion then applies the contributions of reductions to it. Returns the number of launches."""
    from distal.runtime._holders import bound_cpus, holder_index
    from distal.runtime._launch import Privilege, point_launch
    from distal.runtime._registry import register_kernel
    from distal.runtime._store import tile_of
    from distal.runtime._tensor_storage import FormatStore

    held = tensor.storage
    if not isinstance(held, FormatStore):
        return 0  # one store (a 0-d result): Legate reduced it into that store
    if not _NOOP:
        _NOOP.append(register_kernel(lambda point, block: None, "read a block where it lives"))
    lay = held.layout
    binding = bound_cpus(lay)
    block = (*([1] * (held.blocks.ndim - 1)), held.blocks.shape[-1])
    launched = 0
    for device in lay.holders():
        point_launch(_NOOP[0], [(tile_of(held.blocks, block, (*holder_index(lay, device), 0)), Privilege.READ)],
                     device or (0,), binding.get(device, 0))
        launched += 1
    return launched


@contextmanager
def provenance(name: str) -> Iterator[None]:
    from legate.core import Scope

    with Scope(provenance=name):
        yield


def name_the_failure_exchange() -> None:
    """Run distal's failure exchange (at every fence after a launch) under its own provenance (test code)."""
    from distal.runtime import _store

    exchange = _store._check_failures

    def named(ran: bool) -> None:
        with provenance(EXCHANGE):
            exchange(ran)

    _store._check_failures = named


def main(argv: list[str]) -> int:
    from distal import runtime

    rt: Any = runtime
    out = Path(argv[0])
    n = int(argv[1]) if len(argv) > 1 else 64
    only = argv[2] if len(argv) > 2 else ""
    rt.ensure_started()
    legate = rt.legate_runtime()
    rank, ranks = int(legate.node_id), int(legate.node_count)
    name_the_failure_exchange()
    record: dict[str, Any] = {"ranks": ranks, "n": n, "prefix": PREFIX, "exchange": EXCHANGE, "cases": {}}
    for name, make in cases(ranks, n).items():
        if only not in name:
            continue
        entry: dict[str, Any] = {}
        try:
            case = make()
            entry.update(case.prediction or explained(case.plan))
            rt.fence()
            with provenance(PREFIX + name):
                case.run() if case.run is not None else case.plan.run()
                entry["settle_launches"] = settle(case.out)
            rt.fence()
            with provenance("check: " + name):
                got = np.asarray(case.out.to_numpy())
            scale = max(1.0, float(np.abs(case.expected).max(initial=0.0)))
            entry["error"] = float(np.abs(got - case.expected).max(initial=0.0)) / scale
        except Exception as exc:  # one failing case must not hide the others
            entry["failed"] = f"{type(exc).__name__}: {exc}"
        record["cases"][name] = entry
        print(f"[rank {rank}/{ranks}] {name}: {entry}", flush=True)
    if rank == 0:
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1))
        tmp.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
