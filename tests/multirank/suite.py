"""distal's checks on several Legate ranks, each on every rank and equal to NumPy.

    mpirun -n 2 python tests/multirank/suite.py [GROUP ...]        (after `source "$(tools/multirank_env.sh)"`)

Groups (default: all): library (the ten library algorithms), paper (SUMMA, Cannon and Johnson written
as schedules over placed formats), einsum (dt.einsum with auto on 20 random statements, NumPy and
dt.Tensor operands; einsum=N for N), redist (redistributions between formats), reduce (hierarchical and distributed
reductions), io (from_array / to_numpy, out-of-memory refusals, a user error), threads (a call from a
second thread refused), placement (which rank Legate ran the tasks reading each tile on), ranks (auto
on the default machine, the ranks as its nodes, keeps a batched product's traffic inside each rank).
DISTAL_RANKS_ONLY=TEXT runs only the checks whose name contains TEXT. Every rank writes its record
(_rank.py); the pytest driver (test_multirank.py) compares them. The data of every check comes from seeded generators, the same on
every rank, as control replication requires.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from _rank import Rank, main_guard, relative_error

import distal as dt
from distal import kernels

i, j, k, io, jo, ko, ii, ji, ki, kos = dt.index_vars("i j k io jo ko ii ji ki kos")
GROUPS = ("library", "paper", "einsum", "redist", "reduce", "io", "threads", "placement", "ranks")


def _rng(tag: str) -> np.random.Generator:
    return np.random.default_rng(list(tag.encode()))


def _machine(*shape: int) -> dt.Machine:
    return dt.Machine(dt.Grid(*shape))


# -- the library's algorithms ----------------------------------------------------------------------

LIBRARY_GRIDS = {"summa": (2, 2), "cannon": (2, 2), "pumma": (2, 2), "johnson": (2, 2, 2), "solomonik": (2, 2, 2),
                 "cosma": (2, 2, 2), "ttv": (2, 2), "innerprod": (4,), "ttm": (4,), "mttkrp": (2, 2, 2)}


def library(name: str, grid: tuple[int, ...]) -> float:
    m = _machine(*grid)
    rng = _rng(name)
    if name in ("summa", "cannon", "pumma", "johnson", "solomonik", "cosma"):
        b, c = rng.standard_normal((37, 31)), rng.standard_normal((31, 29))
        A = dt.Tensor(f"A_{name}", (37, 29))
        B, C = dt.Tensor.from_array(f"B_{name}", b), dt.Tensor.from_array(f"C_{name}", c)
        kernels.build(name, m, A, B, C).evaluate()
        return relative_error(A.to_numpy(), b @ c)
    b = rng.standard_normal((9, 7, 6))
    B = dt.Tensor.from_array(f"B_{name}", b)
    if name == "ttv":
        A, c = dt.Tensor("A_ttv", (9, 7)), rng.standard_normal(6)
        kernels.build(name, m, A, B, dt.Tensor.from_array("c_ttv", c)).evaluate()
        return relative_error(A.to_numpy(), np.einsum("ijk,k->ij", b, c))
    if name == "innerprod":
        a, c = dt.Tensor("a_inner", ()), rng.standard_normal((9, 7, 6))
        kernels.build(name, m, a, B, dt.Tensor.from_array("C_inner", c)).evaluate()
        return relative_error(a.to_numpy(), np.sum(b * c))
    if name == "ttm":
        A, mm = dt.Tensor("A_ttm", (9, 7, 5)), rng.standard_normal((6, 5))
        kernels.build(name, m, A, B, dt.Tensor.from_array("M_ttm", mm)).evaluate()
        return relative_error(A.to_numpy(), np.einsum("ijk,kl->ijl", b, mm))
    A, c, d = dt.Tensor("A_mttkrp", (9, 5)), rng.standard_normal((7, 5)), rng.standard_normal((6, 5))
    kernels.build(name, m, A, B, dt.Tensor.from_array("C_mttkrp", c), dt.Tensor.from_array("D_mttkrp", d)).evaluate()
    return relative_error(A.to_numpy(), np.einsum("ijk,jl,kl->il", b, c, d))


# -- the paper's schedules, formats placed -----------------------------------------------------------

def paper_schedule(name: str, ranks: int) -> float:
    """SUMMA and Cannon (paper Figures 9 and 10) on a ranks x ranks grid, Johnson on 2x2x2, formats placed."""
    n = 48
    rng = _rng(name)
    b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    if name == "johnson":
        m = _machine(2, 2, 2)
        A = dt.Tensor("A_pj", (n, n), dt.Format("xy -> xy0", m))
        B = dt.Tensor.from_array("B_pj", b, dt.Format("xz -> x0z", m))
        C = dt.Tensor.from_array("C_pj", c, dt.Format("zy -> 0yz", m))
        A[i, j] = B[i, k] * C[k, j]
        sched = A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m) \
            .communicate(A, ko).communicate([B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM)
    else:
        m = _machine(ranks, ranks)
        fmt = dt.Format("xy -> xy", m)
        A = dt.Tensor(f"A_p{name}", (n, n), fmt)
        B = dt.Tensor.from_array(f"B_p{name}", b, fmt)
        C = dt.Tensor.from_array(f"C_p{name}", c, fmt)
        A[i, j] = B[i, k] * C[k, j]
        sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, n // ranks) \
            .reorder([ko, ii, ji, ki])
        if name == "cannon":
            sched = sched.rotate(ko, [io, jo], kos).communicate(A, jo).communicate([B, C], kos)
        else:
            sched = sched.communicate(A, jo).communicate([B, C], ko)
        sched = sched.substitute([ii, ji, ki], dt.leaf.GEMM)
    sched.evaluate()
    return relative_error(A.to_numpy(), b @ c)


# -- dt.einsum with auto ---------------------------------------------------------------------------

LETTERS = "abcdefg"


def random_einsum(seed: int, wrap: bool, eager: bool) -> float:
    """A random statement; `eager=False` leaves auto's in-process NumPy candidate out (DISTAL_EAGER=0), so that
    the plan auto picks runs as Legate tasks across the ranks."""
    before = os.environ.get("DISTAL_EAGER")
    os.environ["DISTAL_EAGER"] = "1" if eager else "0"
    try:
        return _random_einsum(seed, wrap)
    finally:
        if before is None:
            del os.environ["DISTAL_EAGER"]
        else:
            os.environ["DISTAL_EAGER"] = before


def _random_einsum(seed: int, wrap: bool) -> float:
    rng = np.random.default_rng(seed)
    letters = list(LETTERS[: rng.integers(2, 6)])
    extents = {c: int(rng.integers(2, 23 if seed % 2 else 40)) for c in letters}
    subs = []
    for _ in range(int(rng.integers(1, 4))):
        size = int(rng.integers(1, min(4, len(letters)) + 1))
        subs.append("".join(rng.choice(letters, size=size, replace=False)))
    used = sorted(set("".join(subs)))
    out = "".join(c for c in used if rng.random() < 0.5)
    spec = ",".join(subs) + "->" + out
    arrays = [rng.standard_normal(tuple(extents[c] for c in s)) for s in subs]
    operands = [dt.Tensor.from_array(f"U{seed}_{n}", a) if wrap else a for n, a in enumerate(arrays)]
    got = dt.einsum(spec, *operands)
    return relative_error(np.asarray(got.to_numpy()), np.einsum(spec, *arrays))


# -- redistributions and reductions ------------------------------------------------------------------

REDISTRIBUTIONS = (("xy -> xy", "xy -> yx"), ("xy -> xy", "xy -> x*"), ("xy -> x*", "xy -> *y"),
                   ("xy -> yx", "xy -> xy"), ("xy -> x0", "xy -> 0y"))


def redistribution(source: str, target: str, ranks: int) -> float:
    m = _machine(ranks, 2)
    b = _rng(source + target).standard_normal((10, 13))
    B = dt.Tensor.from_array("B_redist", b, dt.Format(source, m))
    B.redistribute(dt.Format(target, m))
    return relative_error(B.to_numpy(), b)


def hierarchical_reduction(ranks: int) -> float:
    """innerprod on a two-level machine whose outer level is the ranks: reduced inside, then across."""
    m = dt.Machine(dt.Grid(ranks), dt.Grid(2))
    rng = _rng("hier")
    b, c = rng.standard_normal((40, 8, 6)), rng.standard_normal((40, 8, 6))
    a = dt.Tensor("a_hier", ())
    kernels.build("innerprod", m, a, dt.Tensor.from_array("B_hier", b), dt.Tensor.from_array("C_hier", c)).evaluate()
    return relative_error(a.to_numpy(), np.sum(b * c))


def k_split_product(ranks: int) -> float:
    """A product whose k is split over the ranks: each rank's partial reduced across ranks."""
    m = _machine(ranks)
    rng = _rng("ksplit")
    b, c = rng.standard_normal((12, 30)), rng.standard_normal((30, 11))
    A = dt.Tensor("A_ks", (12, 11))
    B, C = dt.Tensor.from_array("B_ks", b), dt.Tensor.from_array("C_ks", c)
    A[i, j] = B[i, k] * C[k, j]
    A.schedule().distribute([k], [ko], [ki], m).reorder([ko, i, j, ki]).communicate([A, B, C], ko) \
        .substitute([i, j, ki], dt.leaf.GEMM).evaluate()
    return relative_error(A.to_numpy(), b @ c)


# -- data in and out, refusals -----------------------------------------------------------------------

def round_trip(ranks: int) -> float:
    b = _rng("round").standard_normal((33, 17))
    B = dt.Tensor.from_array("B_round", b, dt.Format("xy -> xy", _machine(ranks, 2)))
    return relative_error(B.to_numpy(), b)


def out_of_memory(ranks: int) -> float:
    """dt.einsum of a 32 TiB result: refused by distal (auto's candidates included) before anything runs."""
    v = np.ones(1 << 21)
    try:
        dt.einsum("i,j->ij", v, v, machine=_machine(ranks))
    except dt.OutOfMemory:
        return 0.0
    raise AssertionError("a 32 TiB result was accepted")


def plan_out_of_memory() -> float:
    """SUMMA on 2 TiB matrices: the runtime's memory check (per rank's --sysmem) refuses it before launching."""
    n = 1 << 19
    A, B, C = (dt.Tensor(f"{x}_oom", (n, n)) for x in "ABC")
    try:
        kernels.build("summa", _machine(2, 2), A, B, C).evaluate()
    except dt.OutOfMemory as exc:
        if "--sysmem 512" not in str(exc):
            raise AssertionError(f"the refusal does not name this rank's memory: {exc}") from exc
        return 0.0
    raise AssertionError("6 TiB of matrices were accepted")


def user_error() -> float:
    try:
        dt.einsum("ij,jk->ik", np.ones((3, 4)), np.ones((5, 6)))
    except dt.DistalError as exc:
        if "4" not in str(exc) or "5" not in str(exc):
            raise AssertionError(f"the message does not name the extents: {exc}") from exc
        return 0.0
    raise AssertionError("mismatched extents were accepted")


def second_thread(ranks: int) -> float:
    """With several ranks a call from a second thread is refused (each rank would order the threads' launches
    its own way), before anything is queued; the main thread goes on."""
    a = _rng("thread").standard_normal((12, 12))
    m = _machine(ranks)
    first = dt.einsum("ij,jk->ik", a, a, machine=m).to_numpy()
    refused: dict[str, str] = {}

    def work() -> None:
        try:
            dt.einsum("ij,jk->ik", a, a, machine=m)
        except dt.DistalError as exc:
            refused["error"] = str(exc)

    worker = threading.Thread(target=work)
    worker.start()
    worker.join(timeout=120)
    if worker.is_alive() or "ranks" not in refused.get("error", ""):
        raise AssertionError(f"the second thread's call was not refused naming the ranks: {refused}")
    again = dt.einsum("ij,jk->ik", a, a, machine=m).to_numpy()
    return max(relative_error(first, a @ a), relative_error(again, a @ a))


# -- placement ---------------------------------------------------------------------------------------

BASE = 1e9


def placement(rank: Rank) -> float:
    """SUMMA on Grid(ranks, 1): B's rows are in blocks, one per processor (r, 0), one processor per rank
    (the machine's outer level is the ranks). B's values encode their row (1e9 + row; C's values in [2, 3)
    keep every partial product of A above 2e9, so no other tile holds such a value), so the tiles the
    tasks running on this rank read, as Legate placed them, say which rows are here. Every row read here
    must be in the box the format gives processor (rank, 0), and every row of that box must be read here."""
    ranks, me = rank.ranks, rank.rank
    n = 6 * ranks + 1  # rows that do not divide evenly: the last block is short
    m = _machine(ranks, 1)
    fmt = dt.Format("xy -> xy", m)
    b = BASE + np.repeat(np.arange(n, dtype=np.float64)[:, None], n, axis=1)
    c = 2.0 + _rng("place").random((n, n))
    A = dt.Tensor("A_place", (n, n), fmt)
    B = dt.Tensor.from_array("B_place", b, fmt)
    C = dt.Tensor.from_array("C_place", c, fmt)
    A[i, j] = B[i, k] * C[k, j]
    sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, 4) \
        .reorder([ko, ii, ji, ki]).communicate(A, jo).communicate([B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM)
    with rank.watch_tiles() as seen:
        sched.evaluate()
    rows_here = sorted({int(v - BASE) for tile in seen for v in tile if BASE <= v < BASE + n})
    boxes = fmt.boxes((n, n))
    wanted = sorted({r for box in boxes[(me, 0)] for r in range(box[0][0], box[0][1])})
    rank.record["placement"] = {"rows_read_here": rows_here, "rows_format_names": wanted,
                                "tasks_inputs_seen": len(seen)}
    if rows_here != wanted:
        raise AssertionError(f"rank {me} read rows {rows_here} of B; the format names rows {wanted} for "
                             f"processor ({me}, 0)")
    return relative_error(A.to_numpy(), (b @ c))


# -- auto sees the ranks as nodes --------------------------------------------------------------------

def auto_inside_ranks(rank: Rank) -> float:
    """A batched product whose operands a user placed with the batch over the ranks: on the default machine
    (the ranks, then each rank's processors) auto distributes the batch over the ranks, so that its plan moves
    nothing between ranks, where distributing i over the ranks (one process's model ties the two) would move
    B's tiles between them. Both through Schedule.auto and dt.einsum, equal to NumPy."""
    from distal.search import default_machine

    ranks = rank.ranks
    m = default_machine()
    if m.levels != 2 or m.grids[0].dims != (ranks,):
        raise AssertionError(f"the default machine on {ranks} ranks is {m!r}, expected the ranks as its outer level")
    per = m.grids[1].size
    rng = _rng("inside")
    b_, c_ = rng.standard_normal((6, 128, 96)), rng.standard_normal((6, 96, 80))
    batch = "b" if per == 1 else "i"
    B = dt.Tensor.from_array("B_inside", b_, dt.Format(["bij -> b", f"bij -> {batch}"], m))
    C = dt.Tensor.from_array("C_inside", c_, dt.Format(["bjk -> b", "bjk -> *"], m))
    A = dt.Tensor("A_inside", (6, 128, 80))
    b, i2, j2, k2 = dt.index_vars("b i2 j2 k2")
    A[b, i2, k2] = B[b, i2, j2] * C[b, j2, k2]
    sched = A.schedule().auto()
    chose = next(n for n in sched.notes if n.startswith("auto: chose"))
    plan = sched.compile()
    between = plan.stats()["traffic"].split().between_nodes
    others = [n for n in sched.notes if n.startswith("auto: considered i2 distributed over the nodes")]
    model = dt.model.this_machine()  # the model auto chose by: a node per rank, the link between ranks
    rank.record["auto_inside_ranks"] = {"machine": repr(m), "chose": chose, "between_nodes": between,
                                        "i_over_ranks": others[:1], "model_per_node": model.per_node,
                                        "model_between_nodes": model.inter.name}
    if not chose.startswith("auto: chose b distributed over the nodes") or between:
        raise AssertionError(f"auto on {m!r}: {chose}; its plan moves {between} B between ranks")
    plan.run()
    error = relative_error(A.to_numpy(), np.einsum("bij,bjk->bik", b_, c_))
    before = os.environ.get("DISTAL_EAGER")
    os.environ["DISTAL_EAGER"] = "0"  # the einsum runs as Legate tasks across the ranks
    try:
        got = dt.einsum("bij,bjk->bik", B, C)
    finally:
        if before is None:
            del os.environ["DISTAL_EAGER"]
        else:
            os.environ["DISTAL_EAGER"] = before
    return max(error, relative_error(np.asarray(got.to_numpy()), np.einsum("bij,bjk->bik", b_, c_)))


# -- the program -------------------------------------------------------------------------------------

def checks(rank: Rank, groups: tuple[str, ...], statements: int = 20) -> list[tuple[str, Callable[[], float]]]:
    r = rank.ranks
    found: list[tuple[str, Callable[[], float]]] = []
    if "library" in groups:
        for name in kernels.names():
            grid = LIBRARY_GRIDS.get(name, (2,))
            found.append((f"library {name} on Grid{grid}", partial(library, name, grid)))
    if "paper" in groups:
        for name in ("summa", "cannon", "johnson"):
            found.append((f"paper schedule {name}", partial(paper_schedule, name, r)))
    if "einsum" in groups:
        for seed in range(statements):
            kind = "dt.Tensor" if seed % 3 == 2 else "NumPy"
            eager = "" if seed % 2 else ", DISTAL_EAGER=0"
            found.append((f"einsum auto #{seed} ({kind} operands{eager})",
                          partial(random_einsum, seed, seed % 3 == 2, bool(seed % 2))))
    if "redist" in groups:
        for source, target in REDISTRIBUTIONS:
            found.append((f"redistribute {source} to {target} on Grid({r}, 2)",
                          partial(redistribution, source, target, r)))
    if "reduce" in groups:
        found.append((f"hierarchical reduction (innerprod on Grid({r}) x Grid(2))", lambda: hierarchical_reduction(r)))
        found.append((f"product with k split over Grid({r})", lambda: k_split_product(r)))
    if "io" in groups:
        found += [("from_array / to_numpy", partial(round_trip, r)),
                  ("out-of-memory refusal (einsum)", partial(out_of_memory, r)),
                  ("out-of-memory refusal (library summa)", plan_out_of_memory), ("user error", user_error)]
    if "threads" in groups:
        found.append(("a call from a second thread refused", lambda: second_thread(r)))
    if "placement" in groups:
        found.append((f"placement: B's row blocks on the ranks of Grid({r}, 1)", lambda: placement(rank)))
    if "ranks" in groups:
        found.append(("auto keeps a batched product's traffic inside each rank", lambda: auto_inside_ranks(rank)))
    return found


def run(rank: Rank) -> None:
    given = [g.partition("=") for g in sys.argv[1:]]  # "einsum=6": six random statements (default 20)
    groups = tuple(name for name, _, _ in given) or GROUPS
    statements = int(next((n for name, _, n in given if name == "einsum" and n), 20))
    unknown = set(groups) - set(GROUPS)
    if unknown:
        raise SystemExit(f"unknown groups {sorted(unknown)}; expected some of {GROUPS}")
    rank.record["groups"] = list(groups)
    # what every rank draws from the global generators after start-up (compared across ranks)
    rank.record["random"] = {"numpy": np.random.random(3).tolist(), "python": random.random()}
    rank.record["processors"] = _processors()
    only = os.environ.get("DISTAL_RANKS_ONLY", "")  # run only the checks whose name contains it
    for name, check in checks(rank, groups, statements):
        if only in name:
            rank.run(name, check)


def _processors() -> dict[str, Any]:
    from distal import runtime as rt

    return {"processor_count_cpu": rt.processor_count("cpu"), "sysmem_mb": rank_sysmem()}


def rank_sysmem() -> int:
    from distal import runtime as rt

    return int(rt.ensure_started().sysmem_mb)


if __name__ == "__main__":
    raise SystemExit(main_guard(run, "suite"))
