"""`dt.einsum` with no schedule written, against the best a NumPy user gets and cuPyNumeric (issue 26's targets).

Statements (`STATEMENTS`, 15 of distinct shapes): the 4-index contraction
`abij,cdij->abcd`, batched matmul, a matrix chain of three, TTM and MTTKRP
on their middle mode, the triangle `abc,cde,efa->bdf`, an outer product,
row and column sums, element-wise with broadcast, the complex Frobenius norm
(squared, `ij,ij->` of X and conj(X), complex128), an inner product, and
matmul, TTV and a bilinear form. Each runs at the size where the fastest
NumPy method takes about `--target` seconds (0.2) with 2 BLAS threads: a
NumPy child times every method at a small size, the size is scaled by the
statement's work exponent and measured again until it is there (at most 3
steps), lowered where a child would not fit in the machine's available
memory (`child_memory`; the record says so).

Systems, each in its own child process (one per statement, system and
round; the order of the systems rotated each round; `--rounds` rounds, 5):

* numpy (no Legate, OPENBLAS_NUM_THREADS=2): `numpy.einsum(optimize=True)`,
  `opt_einsum.contract` and the statement's direct NumPy expression(s)
  (`A @ B`, `X.sum(axis=1)`, `np.multiply.outer`, `np.dot`, ...), each
  timed; "best numpy" is the fastest median. A method that took more than
  `SLOW` times the fastest at the calibration size is not run at the
  measured size (NumPy's einsum runs the triangle as one six-deep loop); the
  record names it. `numpy_avx512` is the same child with OpenBLAS told to
  run the AVX-512 kernels distal's tiles run, where they differ (recorded,
  not part of the target).
* distal (LEGATE_CONFIG --cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem
  sized for it): `dt.einsum(spec, *tensors)` with the operands `dt.Tensor`s
  placed on Legate before timing, then `distal.runtime.fence()`; the same
  with NumPy operands (their copy onto Legate counted); the statement's
  one-processor plan (`R.schedule().compile()`, no distribution) on the
  placed tensors; and last `R.schedule().auto()` (formats given by auto,
  the tensors placed in them before timing). The record keeps which
  schedule auto chose (its "auto: chose" note) and explain()'s leaf lines.
* cupynumeric (the same Legate configuration): `cupynumeric.einsum` on
  cuPyNumeric arrays made before timing, then Legate's blocking execution
  fence.

Each child makes its operands (the same seeded values in every child),
runs each method once to warm up and times one run; figures are medians
over the rounds. Ratios are theirs over distal's (above 1: distal faster):
`vs_best_numpy` (target 0.9), `vs_cupynumeric` (target 1.0).

Two more sections, each in one Legate child per statement with its methods
in interleaved rounds (`_common.interleaved_rounds`, a warm-up round
first): `library`, the library algorithms on their own statements
(`dt.kernels.build(name, ...)`, every matmul algorithm, TTV, innerprod,
TTM, MTTKRP) against `R.schedule().auto()` on the same operand values
(target: auto within 10 % of the best); `contract4_40`, the 4-index
contraction at all extents 40 by `dt.einsum` and by the statement's default
one-task plan (the issue measured 3.8-4.3 s before this work; target 5x),
with `numpy.einsum(optimize=False)`, the call the generic leaf made before,
timed once for reference.

`--drop-in [NAME ...]` runs only issue 33's table (`DROP_IN`: `ijab,jb->ia`,
the 1500-class matmul, `abcd,cdij->abij`, attention `bhqd,bhkd->bhqk` in
float32, `ab,bcd,de->ace`, `pqrs,pi,qj,rk,sl->ijkl`) at three sizes each
(NumPy at about 5 ms, 50 ms and 0.5 s), one Legate child per statement with
`numpy.einsum(optimize=True)`, `opt_einsum.contract`, `dt.einsum` on the
NumPy operands and on placed `dt.Tensor`s interleaved, every result read
back (`drop_in_child`; target 0.9x the best NumPy median); it writes
`einsum_drop_in.json`.

Run: `python bench/einsum.py` (or `distal bench einsum`); `--statements`
picks some, `--no-library`, `--no-contract40` leave sections out,
`--quick` is a smoke run (tiny sizes, 1 round, every statement of a system
in one child). Writes `einsum.json` (`einsum_quick.json`) in the day's
record folder (`_common.record`), rewritten after each statement with
`"complete": false` until the end; a child that fails is kept in its
`failures` and the run goes on (one that hangs past `--timeout` stops it).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # the harness, bench/_common, also when loaded by path

from _common import (  # noqa: E402
    NUMPY_AVX512,
    NUMPY_RUNTIME_MIB,
    RUNTIME_MIB,
    SYSMEM_CAP,
    ChildHung,
    Progress,
    alternating_rounds,
    available_mib,
    blas_kernels,
    check_host_memory,
    child,
    fingerprint,
    fingerprint_error,
    interleaved_rounds,
    legate_env,
    numpy_env,
    record,
    round_order,
)
from _common.workloads import higher_systems  # noqa: E402

SCRIPT = HERE / "einsum.py"
TARGET_NUMPY_S = 0.2
SLOW = 20.0  # a NumPy method this many times slower than the fastest at calibration is not run at full size
CALIBRATION_STEPS = 3
SYSTEMS = ("numpy", "distal", "cupynumeric")
DISTAL_RUNS = ("distal", "distal_from_numpy", "one_processor")  # rotated in the child; schedule_auto runs last
CHILD_TIMEOUT = 1200.0
ISSUE_BEFORE_S = (3.8, 4.3)  # the 4-index contraction at extents 40, default schedule, before issue 26


# -- the statements ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Statement:
    """One einsum of the suite: its subscripts, operand shapes at size n, how its work grows with n, sizes."""

    spec: str
    shapes: Callable[[int], list[tuple[int, ...]]]
    exponent: int  # NumPy's work grows as n ** exponent
    base: int  # calibration size
    quick: int  # --quick size
    step: int  # sizes are multiples of this
    direct: dict[str, Callable[..., Any]] = field(default_factory=dict)  # NumPy's own expressions
    complex_conj: bool = False  # complex128 operands, the second the conjugate of the first
    reference: dict[str, Callable[..., Any]] = field(default_factory=dict)  # timed, not part of "best numpy"

    @property
    def output(self) -> str:
        return self.spec.split("->")[1]

    def out_shape(self, n: int) -> tuple[int, ...]:
        ext = {c: k for term, s in zip(self.spec.split("->")[0].split(","), self.shapes(n)) for c, k in zip(term, s)}
        return tuple(ext[c] for c in self.output)

    @property
    def itemsize(self) -> int:
        return 16 if self.complex_conj else 8


BATCH = 32  # batched matmul's batch
RANK = 64  # MTTKRP's rank

STATEMENTS: dict[str, Statement] = {
    "contract4": Statement("abij,cdij->abcd", lambda n: [(n,) * 4, (n,) * 4], 6, 28, 6, 2),
    "batched_matmul": Statement("bik,bkj->bij", lambda n: [(BATCH, n, n), (BATCH, n, n)], 3, 256, 8, 16,
                                {"A @ B": lambda a, b: a @ b}),
    "chain3": Statement("ij,jk,kl->il", lambda n: [(n, n)] * 3, 3, 640, 16, 64,
                        {"A @ B @ C": lambda a, b, c: a @ b @ c}),
    "ttm_mid": Statement("ijk,jl->ilk", lambda n: [(n, n, n), (n, n)], 4, 144, 8, 8,
                         {"M.T @ X": lambda x, m: m.T @ x}),
    "mttkrp_mid": Statement("ijk,ir,kr->jr", lambda n: [(n, n, n), (n, RANK), (n, RANK)], 3, 200, 8, 10),
    "triangle": Statement("abc,cde,efa->bdf", lambda n: [(n, n, n)] * 3, 5, 24, 6, 2),
    "outer": Statement("i,j->ij", lambda n: [(n,), (n,)], 2, 2048, 64, 256,
                       {"np.multiply.outer": np.multiply.outer}),
    "row_sums": Statement("ij->i", lambda n: [(n, n)], 2, 3072, 64, 256, {"X.sum(axis=1)": lambda x: x.sum(axis=1)}),
    "col_sums": Statement("ij->j", lambda n: [(n, n)], 2, 3072, 64, 256, {"X.sum(axis=0)": lambda x: x.sum(axis=0)}),
    "broadcast": Statement("ij,j->ij", lambda n: [(n, n), (n,)], 2, 2048, 64, 256, {"X * y": lambda x, y: x * y}),
    "frobenius": Statement("ij,ij->", lambda n: [(n, n), (n, n)], 2, 1536, 64, 256,
                           {"np.dot(X.ravel(), Y.ravel())": lambda x, y: np.dot(x.ravel(), y.ravel()),
                            "(X * Y).sum()": lambda x, y: (x * y).sum()},
                           complex_conj=True,
                           # ||X||^2 from X alone reads half the data: a different computation, kept for reference
                           reference={"np.vdot(X, X)": lambda x, y: np.vdot(x, x)}),
    "inner": Statement("i,i->", lambda n: [(n,), (n,)], 1, 1 << 23, 1024, 1 << 16,
                       {"np.dot": np.dot, "np.vdot": np.vdot}),
    "matmul": Statement("ik,kj->ij", lambda n: [(n, n), (n, n)], 3, 768, 32, 64, {"A @ B": lambda a, b: a @ b}),
    "ttv": Statement("ijk,k->ij", lambda n: [(n, n, n), (n,)], 3, 200, 10, 10, {"X @ v": lambda x, v: x @ v}),
    "bilinear": Statement("i,ij,j->", lambda n: [(n,), (n, n), (n,)], 2, 3072, 64, 256,
                          {"x @ A @ y": lambda x, a, y: x @ a @ y}),
}


def operands(stmt: Statement, n: int, seed: int = 0) -> list[np.ndarray]:
    """The statement's operands at size n: the same values in every child (one seeded stream per operand)."""
    shapes = stmt.shapes(n)
    if stmt.complex_conj:
        rng = np.random.default_rng([seed, 0])
        x = rng.random(shapes[0]) + 1j * rng.random(shapes[0])
        return [x, np.conj(x)]
    return [np.random.default_rng([seed, k]).random(s) for k, s in enumerate(shapes)]


def work(stmt: Statement, method: str, n: int) -> float:
    """How much work `method` does at size n, in its own terms: the FLOP count of the contraction order NumPy's
    einsum (`numpy.einsum_path`, optimize=True) or opt_einsum chooses, n ** exponent for a direct expression."""
    import re

    import opt_einsum

    shapes = stmt.shapes(n)
    if method == "numpy.einsum":
        views = [np.lib.stride_tricks.as_strided(np.zeros(1), s, [0] * len(s)) for s in shapes]  # no memory
        _, text = np.einsum_path(stmt.spec, *views, optimize=True)
        found = re.search(r"Optimized FLOP count:\s*([0-9.eE+-]+)", text)
        assert found is not None, text
        return float(found.group(1))
    if method == "opt_einsum":
        return float(opt_einsum.contract_path(stmt.spec, *shapes, shapes=True)[1].opt_cost)
    return float(n) ** stmt.exponent


def numpy_methods(stmt: Statement) -> dict[str, Callable[..., Any]]:
    """Every way a NumPy user computes the statement: einsum (optimised), opt_einsum, the direct expressions."""
    import opt_einsum

    spec = stmt.spec
    return {"numpy.einsum": lambda *a: np.einsum(spec, *a, optimize=True),
            "opt_einsum": lambda *a: opt_einsum.contract(spec, *a), **stmt.direct}


# -- memory and sizes ------------------------------------------------------------------------------------


def _mib(shape: tuple[int, ...], itemsize: int) -> float:
    return float(math.prod(shape)) * itemsize / 2**20


def footprint(stmt: Statement, n: int) -> dict[str, float]:
    """MiB of the operands (all, the largest), the output and opt_einsum's largest intermediate at n."""
    import opt_einsum

    shapes = stmt.shapes(n)
    sizes = [_mib(s, stmt.itemsize) for s in shapes]
    _, info = opt_einsum.contract_path(stmt.spec, *shapes, shapes=True)
    inter = float(info.largest_intermediate) * stmt.itemsize / 2**20
    return {"operands": sum(sizes), "largest": max(sizes), "output": _mib(stmt.out_shape(n), stmt.itemsize),
            "intermediate": inter}


def child_memory(stmt: Statement, n: int, system: str) -> tuple[int, float]:
    """(Legate --sysmem in MB, 0 for NumPy; resident host MiB) one child of `system` needs at size n.

    numpy holds its operands, two outputs and two temporaries (an intermediate, or an operand-sized product
    such as (X * Y)); distal its host operands, their placed copies twice (copies of the NumPy operands while
    dt.einsum runs on them, and auto's formats place them again) and the largest once more, three outputs
    (the einsum, one-processor and auto results) and a leaf's temporaries; cuPyNumeric its
    operands, two outputs and two intermediates in its pool, with the host arrays while it copies them.
    """
    f = footprint(stmt, n)
    ops, big, out, temp = f["operands"], f["largest"], f["output"], max(f["intermediate"], f["largest"])
    if system in ("numpy", NUMPY_AVX512):
        return 0, 1.1 * (ops + 2 * out + 2 * temp) + NUMPY_RUNTIME_MIB
    if system == "distal":
        # measured at contract4 n = 44: 400 MiB of live stores when auto's plan ran (its formats replicate
        # an operand on both processors, earlier runs' outputs are kept for reuse) and 142 MiB for the plan:
        # the pool is sized for that, with room for Legate's fragmentation
        pool = int(1.5 * (3 * ops + 2 * big + 5 * out))
        resident = ops + big + 2 * out + 2 * temp
    elif system == "cupynumeric":
        pool = ops + 2 * out + 2 * f["intermediate"]
        resident = ops
    else:
        raise ValueError(f"expected a system in {(*SYSTEMS, NUMPY_AVX512)}, but found {system!r}")
    sysmem = min(SYSMEM_CAP, int(pool * 1.1) + 256)
    return sysmem, 1.05 * resident + sysmem + RUNTIME_MIB


def fits(stmt: Statement, n: int, budget_mib: float, systems: tuple[str, ...] = SYSTEMS) -> bool:
    return all(child_memory(stmt, n, s)[1] <= budget_mib for s in systems)


def choose_n(stmt: Statement, n: int, seconds: float, target: float, budget_mib: float) -> tuple[int, bool]:
    """The size whose NumPy time is about `target` from a time `seconds` at `n` (work as n ** exponent),
    rounded up to a multiple of the statement's step, never below its base; then lowered by steps until
    every system's child fits `budget_mib`. Returns (size, capped by memory)."""
    scale = (target / max(seconds, 1e-9)) ** (1.0 / stmt.exponent)
    wanted = max(stmt.base, math.ceil(n * scale / stmt.step) * stmt.step)
    size = wanted
    while size > stmt.step and not fits(stmt, size, budget_mib):
        size -= stmt.step
    return size, size < wanted


# -- children ------------------------------------------------------------------------------------------------


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """(seconds, result) of one call fn(*args)."""
    start = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - start, out


def calibrate_child(names: list[str], target: float, budget_mib: float, quick: bool) -> dict[str, Any]:
    """Every NumPy method of each statement at its base size; then (not --quick) the fastest at sizes scaled
    towards `target`, at most CALIBRATION_STEPS times."""
    out: dict[str, Any] = {}
    for name in names:
        stmt = STATEMENTS[name]
        n0 = stmt.quick if quick else stmt.base
        arrays = operands(stmt, n0)
        times: dict[str, float] = {}
        for method, fn in numpy_methods(stmt).items():
            first, _ = _timed(fn, *arrays)
            times[method] = first if first > 0.05 else min(_timed(fn, *arrays)[0] for _ in range(3))
        best = min(times, key=lambda m: times[m])
        steps = [{"n": n0, "seconds": times[best]}]
        n, capped = n0, False
        if not quick:
            for _ in range(CALIBRATION_STEPS):
                t = steps[-1]["seconds"]
                if 0.85 * target <= t <= 1.5 * target:
                    break
                n_new, capped = choose_n(stmt, n, t, target, budget_mib)
                if n_new == n:
                    break
                n = n_new
                arrays = operands(stmt, n)
                fn = numpy_methods(stmt)[best]
                fn(*arrays)
                steps.append({"n": n, "seconds": _timed(fn, *arrays)[0]})
                if capped:
                    break
        # each method's time at n: its calibrated time scaled by its own work (NumPy's einsum runs the triangle
        # as one loop over all six indices); one predicted SLOW times slower than the fastest is not run at n
        predicted = {m: t * work(stmt, m, n) / work(stmt, m, n0) for m, t in times.items()}
        fastest = steps[-1]["seconds"]
        out[name] = {"n": n, "calibration_n": n0, "calibration_seconds": times, "fastest": best, "steps": steps,
                     "predicted_numpy_s": fastest, "capped_by_memory": capped, "predicted_seconds_at_n": predicted,
                     "skipped_methods": {m: f"predicted {t:.3g} s at n = {n}, {t / fastest:.0f}x the fastest; not "
                                            "run" for m, t in predicted.items() if t > SLOW * fastest}}
        del arrays
        gc.collect()
    return out


def numpy_child(names: list[str], sizes: list[int], round_: int, skipped: dict[str, list[str]]) -> dict[str, Any]:
    """Each method of each statement once to warm up, then once timed (methods rotated by round)."""
    out: dict[str, Any] = {}
    for name, n in zip(names, sizes):
        stmt = STATEMENTS[name]
        start = time.perf_counter()
        arrays = operands(stmt, n)
        setup = time.perf_counter() - start
        methods = {m: f for m, f in {**numpy_methods(stmt), **stmt.reference}.items() if m not in skipped.get(name, [])}
        order = list(methods)
        order = order[round_ % len(order):] + order[: round_ % len(order)]
        seconds: dict[str, float] = {}
        prints: dict[str, list[float]] = {}
        for method in order:
            methods[method](*arrays)
            seconds[method], result = _timed(methods[method], *arrays)
            prints[method] = fingerprint(result)
            result = None
        out[name] = {"seconds": seconds, "fingerprints": prints, "setup_s": setup}
        del arrays
        gc.collect()
    return {"statements": out, "peak_rss_mib": _peak_rss(), "blas": blas_kernels()}


def _peak_rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _write_statement(spec: str, tensors: list[Any], out: Any) -> None:
    """`out(...) = T0(...) * T1(...) * ...` in index notation, for the einsum `spec` over `tensors`."""
    import distal as dt

    lhs, result = spec.split("->")
    terms = lhs.split(",")
    letters = list(dict.fromkeys(lhs.replace(",", "") + result))
    vars_ = dict(zip(letters, dt.index_vars(" ".join(letters))))
    rhs = tensors[0][tuple(vars_[c] for c in terms[0])]
    for t, term in zip(tensors[1:], terms[1:]):
        rhs = rhs * t[tuple(vars_[c] for c in term)]
    out[tuple(vars_[c] for c in result)] = rhs


def _choice(plan: Any) -> dict[str, Any]:
    """What auto chose for a plan and what its leaves run, as explain() words it."""
    import re

    text = plan.explain()
    chose = next((n for n in plan.notes if n.startswith("auto: chose")), None)
    idle = re.search(r"(\d+) processor\(s\) idle", chose or "")  # Option.describe's words
    return {"auto": chose, "processors_idle": int(idle.group(1)) if idle else 0,
            "leaf": [line.strip() for line in text.splitlines() if line.strip().startswith("leaf:")],
            "eager": plan.eager, "plan": repr(plan), "explain_head": text.splitlines()[:3]}


def distal_child(names: list[str], sizes: list[int], round_: int) -> dict[str, Any]:
    """dt.einsum on placed tensors and on NumPy arrays, the one-processor plan, then Schedule.auto's plan;
    each warmed up once, then timed once (run and fence)."""
    import distal as dt
    from distal import runtime as rt

    rt.ensure_started()
    out: dict[str, Any] = {}
    for name, n in zip(names, sizes):
        stmt = STATEMENTS[name]
        start = time.perf_counter()
        arrays = operands(stmt, n)
        tensors = [dt.Tensor.from_array(f"T{k}", a).place() for k, a in enumerate(arrays)]
        rt.fence()
        dtype = np.result_type(*arrays)
        one = dt.Tensor("R", stmt.out_shape(n), dtype=dtype)
        _write_statement(stmt.spec, tensors, one)
        one_plan = one.schedule().compile()
        setup = time.perf_counter() - start

        def einsum_placed(tensors: list[Any] = tensors, spec: str = stmt.spec) -> Any:
            r = dt.einsum(spec, *tensors)
            rt.fence()
            return r

        def einsum_numpy(arrays: list[np.ndarray] = arrays, spec: str = stmt.spec) -> Any:
            r = dt.einsum(spec, *arrays)
            rt.fence()
            return r

        def one_processor(plan: Any = one_plan) -> Any:
            r = plan.run()
            rt.fence()
            return r

        runs: dict[str, Callable[[], Any]] = {"distal": einsum_placed, "distal_from_numpy": einsum_numpy,
                                              "one_processor": one_processor}
        order = round_order(list(DISTAL_RUNS), round_)
        for k in order:
            runs[k]()
        seconds: dict[str, float] = {}
        prints: dict[str, list[float]] = {}
        for k in order:
            seconds[k], result = _timed(runs[k])
            prints[k] = fingerprint(result.to_numpy())
            result = None
        choices = {"distal": _choice(dt.einsum_plan(stmt.spec, *tensors)),
                   "distal_from_numpy": _choice(dt.einsum_plan(stmt.spec, *arrays)),
                   "one_processor": {"plan": repr(one_plan)}}
        # Schedule.auto gives the operands formats: placed in them before timing, after the runs above
        auto_out = dt.Tensor("R", stmt.out_shape(n), dtype=dtype)
        _write_statement(stmt.spec, tensors, auto_out)
        auto_plan = auto_out.schedule().auto().compile()
        for t in tensors:
            t.place()
        rt.fence()
        one_processor(auto_plan)
        seconds["schedule_auto"], result = _timed(one_processor, auto_plan)
        prints["schedule_auto"] = fingerprint(result.to_numpy())
        choices["schedule_auto"] = _choice(auto_plan)
        result = None
        out[name] = {"seconds": seconds, "fingerprints": prints, "choices": choices, "setup_s": setup}
        del runs, tensors, arrays, one, one_plan, auto_out, auto_plan, einsum_placed, einsum_numpy
        rt.fence()
        gc.collect()
        rt.fence()
    return {"statements": out, "legate_config": os.environ.get("LEGATE_CONFIG"), "peak_rss_mib": _peak_rss(),
            "blas": blas_kernels()}


def cupynumeric_child(names: list[str], sizes: list[int]) -> dict[str, Any]:
    """cupynumeric.einsum on cuPyNumeric arrays made before timing, then a blocking execution fence."""
    from distal import runtime as rt

    rt.ensure_started()  # the driver stand-in where there is no GPU driver, then Legate
    import cupynumeric as cn
    from legate.core import get_legate_runtime

    legate = get_legate_runtime()
    out: dict[str, Any] = {}
    for name, n in zip(names, sizes):
        stmt = STATEMENTS[name]
        start = time.perf_counter()
        cargs = []
        for a in operands(stmt, n):
            cargs.append(cn.array(a))  # a copy on Legate; the host array goes
            del a
        legate.issue_execution_fence(block=True)
        setup = time.perf_counter() - start

        def run(cargs: list[Any] = cargs, spec: str = stmt.spec) -> Any:
            r = cn.einsum(spec, *cargs)
            legate.issue_execution_fence(block=True)
            return r

        run()
        seconds, result = _timed(run)
        out[name] = {"seconds": {"cupynumeric": seconds}, "fingerprints": {"cupynumeric": fingerprint(result)},
                     "setup_s": setup}
        del cargs, result, run
        legate.issue_execution_fence(block=True)
        gc.collect()
    return {"statements": out, "legate_config": os.environ.get("LEGATE_CONFIG"), "peak_rss_mib": _peak_rss(),
            "blas": blas_kernels()}


# -- the library's algorithms against auto ------------------------------------------------------------------

@dataclass(frozen=True)
class LibraryStatement:
    """A statement of the algorithm library: its algorithms, input shapes at n, the n measured and --quick's."""

    spec: str
    algorithms: tuple[str, ...]
    shapes: Callable[[int], list[tuple[int, ...]]]
    n: int
    quick: int

    def out_shape(self, n: int) -> tuple[int, ...]:
        lhs, out = self.spec.split("->")
        ext = {c: k for term, s in zip(lhs.split(","), self.shapes(n)) for c, k in zip(term, s)}
        return tuple(ext[c] for c in out)


LIBRARY: dict[str, LibraryStatement] = {
    "matmul": LibraryStatement("ik,kj->ij", ("summa", "cannon", "pumma", "johnson", "solomonik", "cosma"),
               lambda n: [(n, n), (n, n)], 2048, 64),
    "ttv": LibraryStatement("ijk,k->ij", ("ttv",), lambda n: [(n, n, n), (n,)], 450, 12),
    "innerprod": LibraryStatement("ijk,ijk->", ("innerprod",), lambda n: [(n, n, n), (n, n, n)], 400, 12),
    "ttm": LibraryStatement("ijk,kl->ijl", ("ttm",), lambda n: [(n, n, n), (n, 600)], 250, 12),
    "mttkrp": LibraryStatement("ijk,jl,kl->il", ("mttkrp",), lambda n: [(n, n, n), (n, 128), (n, 128)], 300, 12),
}


def library_memory(name: str, n: int) -> tuple[int, float]:
    """(--sysmem MB, resident MiB) of a library child: a copy of the operands and output per algorithm and auto,
    each placed once more while placing, and the host operands."""
    lib = LIBRARY[name]
    ins = [_mib(s, 8) for s in lib.shapes(n)]
    out = _mib(lib.out_shape(n), 8)
    copies = len(lib.algorithms) + 1
    sysmem = min(SYSMEM_CAP, int(1.2 * (copies * (sum(ins) + 2 * out) + max(ins))) + 512)
    return sysmem, sysmem + 2 * sum(ins) + RUNTIME_MIB


def library_child(names: list[str], sizes: list[int], rounds: int) -> dict[str, Any]:
    """Per statement, every library algorithm built on its own tensors and Schedule.auto's plan, interleaved."""
    import distal as dt
    from distal import kernels
    from distal import runtime as rt

    rt.ensure_started()
    out: dict[str, Any] = {}
    for name, n in zip(names, sizes):
        lib = LIBRARY[name]
        spec, algs, shapes, out_shape = lib.spec, lib.algorithms, lib.shapes, lib.out_shape(n)
        arrays = [np.random.default_rng([1, k]).random(s) for k, s in enumerate(shapes(n))]
        runs: dict[str, Callable[[], Any]] = {}
        outputs: dict[str, Any] = {}
        notes: dict[str, Any] = {}
        for alg in (*algs, "auto"):
            ins = [dt.Tensor.from_array(f"T{k}", a) for k, a in enumerate(arrays)]
            result = dt.Tensor("R", out_shape)
            if alg == "auto":
                _write_statement(spec, ins, result)
                sched = result.schedule().auto()
                notes[alg] = next((x for x in sched.notes if x.startswith("auto: chose")), None)
            else:
                m = kernels.machine(alg, 2, (n, n, n) if name == "matmul" else None)
                sched = kernels.build(alg, m, result, *ins)
                notes[alg] = repr(m)
            plan = sched.compile()
            for t in ins:
                t.place()
            rt.fence()
            outputs[alg] = result

            def run(plan: Any = plan) -> None:
                plan.run()
                rt.fence()

            runs[alg] = run
        samples = interleaved_rounds(runs, rounds)
        expected = np.einsum(spec, *arrays, optimize=True)
        errors = {k: fingerprint_error(fingerprint(t.to_numpy()), fingerprint(expected)) for k, t in outputs.items()}
        secs = {k: statistics.median(v) for k, v in samples.items()}
        best = min(algs, key=lambda a: secs[a])
        out[name] = {"spec": spec, "n": n, "shapes": [list(s) for s in shapes(n)], "seconds": secs, "all": samples,
                     "best_library": best, "auto_over_best_library": secs["auto"] / secs[best],
                     "auto_within_10_percent": secs["auto"] <= 1.1 * secs[best], "machines_or_choice": notes,
                     "max_rel_error": errors}
        del runs, outputs, run, arrays
        rt.fence()
        gc.collect()
        rt.fence()
    return {"statements": out, "legate_config": os.environ.get("LEGATE_CONFIG"), "peak_rss_mib": _peak_rss(),
            "blas": blas_kernels()}


def contract40_child(n: int, rounds: int, quick: bool) -> dict[str, Any]:
    """abij,cdij->abcd at extents n: dt.einsum, the default one-task plan and Schedule.auto's, interleaved;
    then numpy.einsum(optimize=False), the call the generic leaf made before issue 26, once."""
    import distal as dt
    from distal import runtime as rt

    rt.ensure_started()
    spec = STATEMENTS["contract4"].spec
    arrays = operands(STATEMENTS["contract4"], n)
    placed = [dt.Tensor.from_array(f"T{k}", a).place() for k, a in enumerate(arrays)]
    default = dt.Tensor("R", (n,) * 4)
    _write_statement(spec, placed, default)
    default_plan = default.schedule().compile()
    own = [dt.Tensor.from_array(f"T{k}", a) for k, a in enumerate(arrays)]
    auto_out = dt.Tensor("R", (n,) * 4)
    _write_statement(spec, own, auto_out)
    auto_plan = auto_out.schedule().auto().compile()
    for t in own:
        t.place()
    rt.fence()

    def einsum() -> None:
        dt.einsum(spec, *placed)
        rt.fence()

    def run(plan: Any) -> None:
        plan.run()
        rt.fence()

    samples = interleaved_rounds({"einsum": einsum, "default_one_task": lambda: run(default_plan),
                                  "schedule_auto": lambda: run(auto_plan)}, rounds)
    secs = {k: statistics.median(v) for k, v in samples.items()}
    before = None if quick else _timed(lambda: np.einsum(spec, *arrays, optimize=False))[0]
    return {"n": n, "seconds": secs, "all": samples,
            "einsum_speedup_vs_default_one_task": secs["default_one_task"] / secs["einsum"],
            "einsum_speedup_vs_issue_before": [s / secs["einsum"] for s in ISSUE_BEFORE_S],
            "issue_before_s": list(ISSUE_BEFORE_S), "numpy_einsum_unoptimised_s": before,
            "choices": {"einsum": _choice(dt.einsum_plan(spec, *placed)), "schedule_auto": _choice(auto_plan),
                        "default_one_task": {"plan": repr(default_plan)}},
            "legate_config": os.environ.get("LEGATE_CONFIG"), "peak_rss_mib": _peak_rss(), "blas": blas_kernels()}


# -- issue 33's drop-in table: dt.einsum against the NumPy call it replaces ----------------------------------

@dataclass(frozen=True)
class DropIn:
    """A statement of issue 33's table: operand shapes at size n, its dtype and the three sizes measured (NumPy
    at about 5 ms, 50 ms and 0.5 s on this machine at 2 BLAS threads, from the fastest rounds of a run at load
    2.3-4.4, bench/results/2026-11-28_f442d64; a size below that where the operands would not fit in memory,
    said in `capped`)."""

    spec: str
    shapes: Callable[[int], list[tuple[int, ...]]]
    sizes: tuple[int, int, int]
    quick: int
    dtype: str = "float64"
    capped: str = ""


DROP_IN: dict[str, DropIn] = {
    "ijab_jb": DropIn("ijab,jb->ia", lambda n: [(n,) * 4, (n, n)], (64, 112, 128), 8,
                      capped="NumPy streams the 4-index operand once: 0.5 s would take 13 GB of it; the third size "
                             "is the largest whose operand (2.1 GB) fits beside the other children"),
    "matmul": DropIn("ij,jk->ik", lambda n: [(n, n), (n, n)], (640, 1400, 3000), 32),
    "contract4": DropIn("abcd,cdij->abij", lambda n: [(n,) * 4, (n,) * 4], (26, 38, 54), 6),
    "attention": DropIn("bhqd,bhkd->bhqk", lambda n: [(8, 8, n, 64), (8, 8, n, 64)], (320, 960, 2304), 16,
                        dtype="float32",
                        capped="the third size's result is 1.4 GB (NumPy about 0.3 s); 0.5 s would need results "
                               "of 2.4 GB, several at once in the distal child"),
    "chain": DropIn("ab,bcd,de->ace", lambda n: [(n, n), (n, n, n), (n, n)], (80, 176, 320), 8),
    "tucker": DropIn("pqrs,pi,qj,rk,sl->ijkl", lambda n: [(n,) * 4] + [(n, n)] * 4, (28, 44, 76), 6),
}
DROP_IN_RUNS = ("numpy.einsum", "opt_einsum", "distal_numpy", "distal_tensor")


def drop_in_memory(name: str, sizes: Sequence[int]) -> tuple[int, float]:
    """(--sysmem MB, resident MiB) of a drop-in child at its largest size: operands placed once, three results
    on Legate (the distal runs' and a spare), the host operands, NumPy's results and an intermediate."""
    d = DROP_IN[name]
    item = np.dtype(d.dtype).itemsize
    n = max(sizes)
    ins = sum(_mib(s, item) for s in d.shapes(n))
    lhs, res = d.spec.split("->")
    ext = {c: k for term, s in zip(lhs.split(","), d.shapes(n)) for c, k in zip(term, s)}
    out = _mib(tuple(ext[c] for c in res), item)
    sysmem = min(SYSMEM_CAP, int(1.3 * (2 * ins + 3 * out)) + 512)
    return sysmem, sysmem + 2 * ins + 4 * out + RUNTIME_MIB


def drop_in_child(names: list[str], sizes: list[int], rounds: int) -> dict[str, Any]:
    """Per statement and size, in one Legate process, interleaved rounds (a warm-up round first; every
    other round in the reverse order) of numpy.einsum(optimize=True), opt_einsum.contract, dt.einsum on the
    NumPy operands and dt.einsum on dt.Tensors placed on Legate before timing; every run returns its result
    in host memory (distal's read back with to_numpy(), so each copy of the NumPy operands onto Legate and of
    the result back is counted)."""
    import opt_einsum

    import distal as dt
    from distal import runtime as rt

    rt.ensure_started()
    out: dict[str, Any] = {}
    for name, n in zip(names, sizes):
        d = DROP_IN[name]
        arrays = [np.random.default_rng([2, k]).random(s).astype(d.dtype) for k, s in enumerate(d.shapes(n))]
        tensors = [dt.Tensor.from_array(f"T{k}", a).place() for k, a in enumerate(arrays)]
        rt.fence()
        spec = d.spec
        runs: dict[str, Callable[[], Any]] = {
            "numpy.einsum": lambda spec=spec, arrays=arrays: np.einsum(spec, *arrays, optimize=True),
            "opt_einsum": lambda spec=spec, arrays=arrays: opt_einsum.contract(spec, *arrays),
            "distal_numpy": lambda spec=spec, arrays=arrays: dt.einsum(spec, *arrays).to_numpy(),
            "distal_tensor": lambda spec=spec, tensors=tensors: dt.einsum(spec, *tensors).to_numpy()}
        load_before = os.getloadavg()
        # more rounds where a call takes milliseconds: their medians moved by 5% between two quiet runs of 5 rounds
        scale = 4 if n == d.sizes[0] and n != d.sizes[-1] else 2 if n == d.sizes[1] else 1
        # every other round reversed: the call right after opt_einsum's ran up to 1 ms (15%) slower at the 5 ms sizes
        # whichever it was (tucker at 28: distal's 7.1-7.2 ms there against 6.0-6.3 ms one place later, and its
        # other operand kind the other way round when the two were swapped), so no call keeps one place
        samples = alternating_rounds(runs, rounds * scale)
        load_after = os.getloadavg()
        secs = {k: statistics.median(v) for k, v in samples.items()}
        best = min(secs["numpy.einsum"], secs["opt_einsum"])
        prints = {k: fingerprint(f()) for k, f in runs.items()}
        out[f"{name}@{n}"] = {
            "spec": spec, "n": n, "dtype": d.dtype, "shapes": [list(s) for s in d.shapes(n)], "seconds": secs,
            "best_of": {k: min(v) for k, v in samples.items()}, "all": samples, "best_numpy_s": best,
            "ratio_numpy_operands": best / secs["distal_numpy"], "ratio_tensor_operands": best / secs["distal_tensor"],
            "meets_0_9x": best / secs["distal_numpy"] >= 0.9 and best / secs["distal_tensor"] >= 0.9,
            # the issue's own figure: best of the rounds (under load from other programs the fastest round is the
            # one least disturbed)
            "ratio_best_of_numpy_operands": min(min(samples["numpy.einsum"]), min(samples["opt_einsum"]))
            / min(samples["distal_numpy"]),
            "ratio_best_of_tensor_operands": min(min(samples["numpy.einsum"]), min(samples["opt_einsum"]))
            / min(samples["distal_tensor"]),
            "choices": {"distal_numpy": _choice(dt.einsum_plan(spec, *arrays)),
                        "distal_tensor": _choice(dt.einsum_plan(spec, *tensors))},
            "max_rel_error_vs_opt_einsum": {k: fingerprint_error(p, prints["opt_einsum"]) for k, p in prints.items()},
            "loadavg_before": list(load_before), "loadavg_after": list(load_after), "capped": d.capped,
            "rounds": rounds * scale}
        del runs, tensors, arrays
        rt.fence()
        gc.collect()
        rt.fence()
    return {"statements": out, "legate_config": os.environ.get("LEGATE_CONFIG"), "peak_rss_mib": _peak_rss(),
            "blas": blas_kernels()}


def run_drop_in(args: argparse.Namespace, rounds: int) -> int:
    """Issue 33's table at three sizes each: one Legate child per statement (`drop_in_child`); writes
    `einsum_drop_in.json` (`einsum_drop_in_quick.json`)."""
    names = args.drop_in or list(DROP_IN)
    name_ = "einsum_drop_in_quick" if args.quick else "einsum_drop_in"
    start = time.perf_counter()
    progress = Progress(len(names))
    results: dict[str, Any] = {"method": DROP_IN_METHOD.format(rounds=rounds), "rounds": rounds, "quick": args.quick,
                               "statements": {}, "blas": {}, "children": [], "complete": False}
    for name in names:
        d = DROP_IN[name]
        sizes = [d.quick] if args.quick else list(d.sizes)
        sysmem, need = drop_in_memory(name, sizes)
        check_host_memory(f"drop-in {name}", need)
        part = _attempt(results, f"drop-in {name}", ["--child", "drop_in", "--rounds", str(rounds), "--names",
                                                     *[name] * len(sizes), "--sizes", *map(str, sizes)],
                        legate_env(sysmem), args.timeout, progress)
        if part is None:
            continue
        results["statements"].update(part["statements"])
        results["blas"] = part["blas"]
        results["children"].append({"statement": name, "sizes": sizes, "sysmem": sysmem,
                                    "peak_rss_mib": part["peak_rss_mib"], "legate_config": part["legate_config"]})
        progress.step(f"{d.spec}: " + "; ".join(
            f"n={v['n']} numpy {v['best_numpy_s'] * 1e3:.1f} ms, ratio numpy operands {v['ratio_numpy_operands']:.2f},"
            f" tensors {v['ratio_tensor_operands']:.2f} (best of rounds {v['ratio_best_of_numpy_operands']:.2f},"
            f" {v['ratio_best_of_tensor_operands']:.2f})" for v in part["statements"].values()))
        record(name_, results)
    results["seconds_total"] = time.perf_counter() - start
    results["complete"] = True
    path = record(name_, results)
    print(f"wrote {path} in {results['seconds_total']:.0f} s")
    return 0


DROP_IN_METHOD = (
    "Issue 33's table: per statement one Legate child (LEGATE_CONFIG --cpus 2 --gpus 0 --omps 0 --utility 1 "
    "--sysmem sized for it); at each size, {rounds} interleaved rounds (4x as many at the smallest size, 2x at the "
    "middle one; every other round in the reverse order, since 8511300) after a warm-up round of "
    "numpy.einsum(optimize=True), opt_einsum.contract, dt.einsum on the NumPy operands and dt.einsum on dt.Tensors "
    "placed before timing, every result returned in host memory (distal's read back with to_numpy()). NumPy's "
    "BLAS runs its default threads (2 here) in the same process. Figures are medians; ratios are the best NumPy "
    "median over distal's (target 0.9); loadavg before and after each size is recorded."
)


# -- what moving host operands costs (auto's figures in distal/search/host_moves.py) ---------------------------

HOST_MOVES_ELEMENTS = (1 << 10, 1 << 15, 1 << 18, 1 << 20, 1 << 22, 1 << 24)  # float64: 8 KiB to 128 MiB
HOST_MOVES_GEMMS = (256, 640, 1400)  # eager GEMMs timed on one BLAS thread and on NumPy's threads


def _fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least squares seconds = a + bytes / b over (bytes, seconds): (a, b)."""
    xs, ys = np.array([p[0] for p in points]), np.array([p[1] for p in points])
    slope, a = np.polyfit(xs, ys, 1)
    return float(a), float(1.0 / slope) if slope > 0 else math.inf


def host_moves_child(rounds: int, quick: bool) -> dict[str, Any]:
    """dt.einsum's moves between host and Legate, timed on `i,i->i` over float64 vectors on Legate (eager runs
    refused, DISTAL_EAGER=0), in interleaved rounds per size: on placed dt.Tensors then a fence, the same on
    the NumPy arrays (their two copies onto Legate), and the placed run with its result read back
    (`to_numpy()`); then the eager GEMMs of `ij,jk->ik` on one BLAS thread and on NumPy's threads."""
    from threadpoolctl import threadpool_limits

    import distal as dt
    import distal.contract as contract
    from distal import runtime as rt

    rt.ensure_started()
    os.environ["DISTAL_EAGER"] = "0"
    sizes: dict[str, Any] = {}
    for n in HOST_MOVES_ELEMENTS[:3] if quick else HOST_MOVES_ELEMENTS:
        arrays = [np.random.default_rng([3, k]).random(n) for k in range(2)]
        tensors = [dt.Tensor.from_array(f"V{k}", a).place() for k, a in enumerate(arrays)]
        rt.fence()
        runs: dict[str, Callable[[], Any]] = {
            "tensors": lambda tensors=tensors: (dt.einsum("i,i->i", *tensors), rt.fence()),
            "numpy": lambda arrays=arrays: (dt.einsum("i,i->i", *arrays), rt.fence()),
            "tensors_read": lambda tensors=tensors: dt.einsum("i,i->i", *tensors).to_numpy()}
        load = os.getloadavg()
        samples = interleaved_rounds(runs, rounds)
        med = {k: statistics.median(v) for k, v in samples.items()}
        sizes[str(n * 8)] = {"bytes": n * 8, "seconds": med, "all": samples, "loadavg_before": list(load),
                             "copy_in_per_operand_s": (med["numpy"] - med["tensors"]) / 2,
                             "read_back_s": med["tensors_read"] - med["tensors"]}
        del runs, tensors, arrays
        rt.fence()
    del os.environ["DISTAL_EAGER"]
    copy_in = _fit([(v["bytes"], v["copy_in_per_operand_s"]) for v in sizes.values()])
    read_back = _fit([(v["bytes"], v["read_back_s"]) for v in sizes.values()])
    gemms: dict[str, Any] = {}
    for n in HOST_MOVES_GEMMS[:1] if quick else HOST_MOVES_GEMMS:
        arrays = [np.random.default_rng([4, k]).random((n, n)) for k in range(2)]
        plan = contract.contraction("ij,jk->ik", arrays)
        threads = contract.blas_threads()

        def eager(plan: Any = plan, arrays: list[np.ndarray] = arrays, n: int = n) -> None:
            plan.run(arrays, np, out=np.empty((n, n)))

        def one_thread(eager: Callable[[], None] = eager) -> None:
            with threadpool_limits(1, user_api="blas"):
                eager()

        load = os.getloadavg()
        samples = interleaved_rounds({"one_thread": one_thread, "threads": eager}, rounds)
        med = {k: statistics.median(v) for k, v in samples.items()}
        gemms[str(n)] = {"n": n, "threads": threads, "seconds": med, "all": samples, "loadavg_before": list(load),
                         "speedup": med["one_thread"] / med["threads"], "describe": plan.describe()}
    return {"sizes": sizes, "copy_in_fit": {"seconds": copy_in[0], "bytes_per_second": copy_in[1]},
            "read_back_fit": {"seconds": read_back[0], "bytes_per_second": read_back[1]}, "eager_gemm": gemms,
            "legate_config": os.environ.get("LEGATE_CONFIG"), "blas": blas_kernels(), "loadavg_after":
            list(os.getloadavg())}


def run_host_moves(args: argparse.Namespace, rounds: int) -> int:
    """`host_moves_child` in one Legate child; writes `einsum_host_moves.json` (`_quick`)."""
    name_ = "einsum_host_moves_quick" if args.quick else "einsum_host_moves"
    part = _run(["--child", "host_moves", "--rounds", str(rounds), *(["--quick"] if args.quick else [])],
                legate_env(1200), args.timeout)
    part["method"] = HOST_MOVES_METHOD.format(rounds=rounds)
    path = record(name_, part)
    for key in ("copy_in_fit", "read_back_fit"):
        fit = part[key]
        print(f"{key}: {fit['seconds'] * 1e3:.3f} ms + bytes / {fit['bytes_per_second'] / 1e9:.2f} GB/s")
    for v in part["eager_gemm"].values():
        print(f"eager GEMM n={v['n']}: {v['seconds']['one_thread'] * 1e3:.2f} ms on one BLAS thread, "
              f"{v['seconds']['threads'] * 1e3:.2f} ms on {v['threads']} ({v['speedup']:.2f}x)")
    print(f"wrote {path}")
    return 0


HOST_MOVES_METHOD = (
    "One Legate child (LEGATE_CONFIG --cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem 1200), DISTAL_EAGER=0: per "
    "vector size, {rounds} interleaved rounds after a warm-up round of dt.einsum('i,i->i') on two placed "
    "dt.Tensors then distal.runtime.fence(), the same on the two NumPy arrays (each copied onto Legate), and the "
    "placed run read back with to_numpy(). Copy-in per operand = (numpy - tensors) / 2, read-back = "
    "tensors_read - tensors (medians); each fitted as a + bytes / b by least squares. Then the eager GEMM of "
    "ij,jk->ik (distal.contract) on one BLAS thread (threadpoolctl) and on NumPy's threads, interleaved."
)


# -- the runner ---------------------------------------------------------------------------------------------


def _systems() -> tuple[str, ...]:
    return tuple(s for s in higher_systems() if s in (*SYSTEMS, NUMPY_AVX512))


def _env(system: str, sysmem: int) -> dict[str, str]:
    env: dict[str, str] = numpy_env() if system in ("numpy", NUMPY_AVX512) else legate_env(sysmem)
    return {**env, "OPENBLAS_CORETYPE": "SkylakeX"} if system == NUMPY_AVX512 else env


def summarise(name: str, n: int, samples: dict[str, list[float]], prints: dict[str, list[float]],
              choices: dict[str, Any], sizing: dict[str, Any]) -> dict[str, Any]:
    """Medians, the best NumPy method, ratios (theirs over distal's) and result checks of one statement."""
    stmt = STATEMENTS[name]
    secs = {k: statistics.median(v) for k, v in samples.items() if v}
    numpy_ms = [k for k in secs if k.startswith("numpy:") and k.split(":", 1)[1] not in stmt.reference]
    best = min(numpy_ms, key=lambda k: secs[k]) if numpy_ms else None
    row: dict[str, Any] = {"spec": stmt.spec, "n": n, "shapes": [list(s) for s in stmt.shapes(n)],
                           "dtype": "complex128" if stmt.complex_conj else "float64", "seconds": secs, "all": samples,
                           "choices": choices, "sizing": sizing}
    d = secs.get("distal")
    if best is not None and d:
        row["best_numpy"] = best.split(":", 1)[1]
        row["best_numpy_s"] = secs[best]
        row["vs_best_numpy"] = secs[best] / d
        row["meets_0_9x_numpy"] = secs[best] / d >= 0.9
        avx = [k for k in secs if k.startswith(f"{NUMPY_AVX512}:") and k.split(":", 1)[1] not in stmt.reference]
        if avx:
            row["vs_best_numpy_avx512"] = min(secs[k] for k in avx) / d
        if secs.get("distal_from_numpy"):
            row["from_numpy_vs_best_numpy"] = secs[best] / secs["distal_from_numpy"]
    if d and secs.get("cupynumeric"):
        row["vs_cupynumeric"] = secs["cupynumeric"] / d
        row["meets_1_0x_cupynumeric"] = secs["cupynumeric"] / d >= 1.0
    if d and secs.get("one_processor"):
        row["one_processor_over_distal"] = secs["one_processor"] / d
        if secs.get("schedule_auto"):
            row["one_processor_over_schedule_auto"] = secs["one_processor"] / secs["schedule_auto"]
    reference = prints.get("numpy:opt_einsum") or next(iter(prints.values()), None)
    if reference is not None:
        row["max_rel_error_vs_opt_einsum"] = {k: fingerprint_error(p, reference) for k, p in prints.items()}
    return row


def _run(args: list[str], env: dict[str, str], timeout: float) -> dict[str, Any]:
    return child(SCRIPT, args, env, timeout=timeout)


def _attempt(results: dict[str, Any], label: str, args: list[str], env: dict[str, str], timeout: float,
             progress: Progress) -> dict[str, Any] | None:
    """A child's answer, or None where it failed: the failure is kept in the record and the run goes on (a
    child that hangs still stops it, `ChildHung`)."""
    try:
        return _run(args, env, timeout)
    except RuntimeError as e:
        if isinstance(e, ChildHung):
            raise
        results.setdefault("failures", []).append({"child": label, "error": str(e)[-4000:]})
        progress.step(f"{label}: FAILED (kept in the record's failures)")
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 round, one child per system")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 5; 1 with --quick)")
    parser.add_argument("--target", type=float, default=TARGET_NUMPY_S,
                        help=f"seconds the fastest NumPy method should take (default {TARGET_NUMPY_S})")
    parser.add_argument("--statements", nargs="*", default=None, choices=list(STATEMENTS), metavar="NAME",
                        help=f"statements to run (default all: {', '.join(STATEMENTS)})")
    parser.add_argument("--no-library", action="store_true", help="leave out the library-against-auto section")
    parser.add_argument("--no-contract40", action="store_true", help="leave out the 4-index contraction at 40")
    parser.add_argument("--drop-in", nargs="*", default=None, choices=list(DROP_IN), metavar="NAME",
                        help="only issue 33's drop-in table (all of it, or these statements: "
                             f"{', '.join(DROP_IN)}), at three sizes each")
    parser.add_argument("--host-moves", action="store_true",
                        help="only the costs auto prices dt.einsum's host operands with (einsum_host_moves.json)")
    parser.add_argument("--timeout", type=float, default=CHILD_TIMEOUT, help="seconds a child may run")
    parser.add_argument("--child", choices=(*SYSTEMS, NUMPY_AVX512, "calibrate", "library", "contract40", "drop_in",
                                        "host_moves"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--names", nargs="*", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="*", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, default=16000.0, help=argparse.SUPPRESS)
    parser.add_argument("--skip", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 5)
    if args.child is not None:
        print(json.dumps(_child_main(args, rounds)))
        return 0
    try:
        if args.drop_in is not None:
            return run_drop_in(args, rounds)
        if args.host_moves:
            return run_host_moves(args, rounds)
        return run(args, rounds)
    except (ChildHung, MemoryError) as e:
        print(f"bench/einsum.py: {e}", file=sys.stderr)
        return 2


def _child_main(args: argparse.Namespace, rounds: int) -> dict[str, Any]:
    if args.child == "calibrate":
        return calibrate_child(args.names, args.target, args.budget, args.quick)
    if args.child in ("numpy", NUMPY_AVX512):
        return numpy_child(args.names, args.sizes, args.round, json.loads(args.skip))
    if args.child == "distal":
        return distal_child(args.names, args.sizes, args.round)
    if args.child == "cupynumeric":
        return cupynumeric_child(args.names, args.sizes)
    if args.child == "library":
        return library_child(args.names, args.sizes, rounds)
    if args.child == "drop_in":
        return drop_in_child(args.names, args.sizes, rounds)
    if args.child == "host_moves":
        return host_moves_child(rounds, args.quick)
    return contract40_child(args.sizes[0], rounds, args.quick)


def run(args: argparse.Namespace, rounds: int) -> int:
    names = args.statements or list(STATEMENTS)
    quick = ["--quick"] if args.quick else []
    name_ = "einsum_quick" if args.quick else "einsum"
    start = time.perf_counter()
    have = available_mib()
    budget = 0.9 * have if have is not None else 16000.0
    systems = _systems()
    sizing = _run(["--child", "calibrate", *quick, "--names", *names, "--target", str(args.target),
                   "--budget", str(budget)], numpy_env(), args.timeout)
    groups = [names] if args.quick else [[x] for x in names]  # statements per child
    library = [] if args.no_library else list(LIBRARY)
    lib_groups = [library] if args.quick and library else [[x] for x in library]
    progress = Progress(1 + len(groups) * rounds * len(systems) + len(lib_groups) + (not args.no_contract40))
    progress.step("calibration: " + ", ".join(f"{k} n={v['n']}" + (" (memory)" if v["capped_by_memory"] else "")
                                              for k, v in sizing.items()))
    results: dict[str, Any] = {
        "method": METHOD.format(rounds=rounds, target=args.target, slow=SLOW), "quick": args.quick,
        "rounds": rounds, "target_numpy_s": args.target, "systems": list(systems), "budget_mib": budget,
        "sizing": sizing, "statements": {}, "children": [], "blas": {}, "complete": False}
    for group in groups:
        sizes = [int(sizing[x]["n"]) for x in group]
        skip = {x: list(sizing[x]["skipped_methods"]) for x in group}
        samples: dict[str, dict[str, list[float]]] = {x: {} for x in group}
        prints: dict[str, dict[str, list[float]]] = {x: {} for x in group}
        choices: dict[str, dict[str, Any]] = {x: {} for x in group}
        for r in range(rounds):
            for system in round_order(systems, r):
                need = [child_memory(STATEMENTS[x], n, system) for x, n in zip(group, sizes)]
                sysmem = max(s for s, _ in need)
                label = f"{', '.join(group)} round {r + 1}/{rounds} {system}"
                check_host_memory(label, max(m for _, m in need))
                began = time.perf_counter()
                part = _attempt(results, label, ["--child", system, *quick, "--names", *group, "--sizes",
                                                 *map(str, sizes), "--round", str(r), "--skip", json.dumps(skip)],
                                _env(system, sysmem), args.timeout, progress)
                wall = time.perf_counter() - began
                if part is None:
                    continue
                for x, got in part["statements"].items():
                    for method, secs in got["seconds"].items():
                        key = method if system not in ("numpy", NUMPY_AVX512) else f"{system}:{method}"
                        samples[x].setdefault(key, []).append(secs)
                    for method, fp in got["fingerprints"].items():
                        key = method if system not in ("numpy", NUMPY_AVX512) else f"{system}:{method}"
                        prints[x][key] = fp
                    choices[x].update(got.get("choices", {}))
                results["blas"][system] = part["blas"]
                results["children"].append({"statements": group, "sizes": sizes, "round": r, "system": system,
                                            "sysmem": sysmem, "need_mib": max(m for _, m in need), "wall_s": wall,
                                            "peak_rss_mib": part["peak_rss_mib"],
                                            "setup_s": {x: g["setup_s"] for x, g in part["statements"].items()}})
                progress.step(f"{label}: " + "; ".join(
                    f"{x} " + ", ".join(f"{k} {v:.3f} s" for k, v in g["seconds"].items())
                    for x, g in part["statements"].items()) + f" (child {wall:.0f} s)")
        for x, n in zip(group, sizes):
            results["statements"][x] = summarise(x, n, samples[x], prints[x], choices[x], sizing[x])
        record(name_, results)
    if lib_groups:
        results["library"] = {}
        for group in lib_groups:
            sizes = [LIBRARY[x].quick if args.quick else LIBRARY[x].n for x in group]
            need = [library_memory(x, n) for x, n in zip(group, sizes)]
            check_host_memory(f"library {', '.join(group)}", max(m for _, m in need))
            part = _attempt(results, f"library {', '.join(group)}", ["--child", "library", *quick, "--rounds",
                                                                     str(rounds), "--names", *group, "--sizes",
                                                                     *map(str, sizes)],
                            legate_env(max(s for s, _ in need)), args.timeout, progress)
            if part is None:
                continue
            results["library"].update(part["statements"])
            results["blas"]["distal_library"] = part["blas"]
            progress.step(f"library {', '.join(group)}: " + "; ".join(
                f"{x} auto/best {v['auto_over_best_library']:.2f} ({v['best_library']})"
                for x, v in part["statements"].items()))
            record(name_, results)
    if not args.no_contract40:
        n = 8 if args.quick else 40
        part = _attempt(results, f"abij,cdij->abcd at {n}", ["--child", "contract40", *quick, "--rounds",
                                                              str(rounds), "--sizes", str(n)],
                        legate_env(2000), args.timeout, progress)
        if part is not None:
            results["contract4_40"] = part
            progress.step(f"abij,cdij->abcd at {n}: einsum {part['seconds']['einsum']:.3f} s, default one-task "
                          f"plan {part['seconds']['default_one_task']:.3f} s")
    results["seconds_total"] = time.perf_counter() - start
    results["loadavg_after"] = list(os.getloadavg())
    results["complete"] = True
    path = record(name_, results)
    print(json.dumps({x: {k: r.get(k) for k in ("best_numpy", "vs_best_numpy", "vs_cupynumeric",
                                                "one_processor_over_distal")}
                      for x, r in results["statements"].items()}, indent=2))
    print(f"wrote {path} in {results['seconds_total']:.0f} s")
    return 0


METHOD = (
    "One child process per statement, system and round ({rounds} rounds, the systems' order rotated each round; "
    "with --quick one child per system for every statement): numpy (no Legate, OPENBLAS_NUM_THREADS=2; "
    "numpy_avx512 the same with OPENBLAS_CORETYPE=SkylakeX, where distal's tiles run those kernels) times "
    "numpy.einsum(optimize=True), opt_einsum.contract and the direct expressions, methods {slow}x slower than the "
    "fastest at the calibration size left out; distal and cupynumeric each under LEGATE_CONFIG --cpus 2 --gpus 0 "
    "--omps 0 --utility 1 --sysmem sized for the child. Each child makes its operands (the same seeded values), "
    "runs each method once to warm up and times one run. Timed: NumPy's call (result in host memory); distal: "
    "dt.einsum on dt.Tensors placed on Legate before timing, dt.einsum on the NumPy arrays (copy onto Legate "
    "counted), the one-processor plan and Schedule.auto's plan, each followed by distal.runtime.fence(); "
    "cupynumeric.einsum on cuPyNumeric arrays followed by a blocking execution fence. Medians over the rounds; "
    "ratios are the other's median over distal's. Sizes: the fastest NumPy method at about {target} s "
    "(sizing), lowered where a child would not fit in 90 % of the available memory."
)


if __name__ == "__main__":
    raise SystemExit(main())
