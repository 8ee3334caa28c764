"""distal's checks on one rank with GPU processors: every result equal to NumPy, each check on its own.

Run on a machine with a GPU and CuPy (`pip install 'distal[gpu]'`):

    legate --gpus 1 bench/gpu_checks.py --out gpu_checks        # or LEGATE_CONFIG="--gpus 1" python ...

The checks are the single-rank part of the multi-rank suite's list (issue 32), on machines of
kind "gpu" so that every leaf runs on the GPU: the library's algorithms, the paper's SUMMA,
Cannon and Johnson written as schedules over placed formats, `dt.einsum` with `auto` on random
statements (NumPy and dt.Tensor operands), redistributions between formats, a hierarchical
reduction, from_array / to_numpy, an out-of-memory refusal and a user error. Each check records
pass/fail, the largest relative error and its wall time; one failing check does not stop the
others. Writes a JSON record (bench/results/<date>_<commit>/<out>.json) with the machine.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import write  # bench/ is on sys.path when run as a script

import distal as dt
from distal import kernels

i, j, k, l, io, jo, ko, ii, ji, ki = dt.index_vars("i j k l io jo ko ii ji ki")
RNG = np.random.default_rng(7)


def _gpu(*shape: int) -> dt.Machine:
    return dt.Machine(dt.Grid(*shape, kind="gpu"))


def _error(got: np.ndarray, expected: np.ndarray) -> float:
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    return float(np.abs(np.asarray(got) - expected).max(initial=0.0) / scale)


def _matmul_operands(m: int, n: int, kk: int, fmt: Any = None) -> tuple[dt.Tensor, dt.Tensor, dt.Tensor]:
    b, c = RNG.standard_normal((m, kk)), RNG.standard_normal((kk, n))
    return (dt.Tensor("A", (m, n), fmt), dt.Tensor.from_array("B", b, fmt), dt.Tensor.from_array("C", c, fmt))


def library(name: str, grid: tuple[int, ...]) -> float:
    m = _gpu(*grid)
    if name in ("summa", "cannon", "pumma", "johnson", "solomonik", "cosma"):
        A, B, C = _matmul_operands(37, 29, 31)
        kernels.build(name, m, A, B, C).evaluate()
        return _error(A.to_numpy(), B.to_numpy() @ C.to_numpy())
    b = RNG.standard_normal((9, 7, 6))
    B = dt.Tensor.from_array("B", b)
    if name == "ttv":
        A, c = dt.Tensor("A", (9, 7)), RNG.standard_normal(6)
        kernels.build(name, m, A, B, dt.Tensor.from_array("c", c)).evaluate()
        return _error(A.to_numpy(), np.einsum("ijk,k->ij", b, c))
    if name == "innerprod":
        a, c = dt.Tensor("a", ()), RNG.standard_normal((9, 7, 6))
        kernels.build(name, m, a, B, dt.Tensor.from_array("C", c)).evaluate()
        return _error(a.to_numpy(), np.sum(b * c))
    if name == "ttm":
        A, mm = dt.Tensor("A", (9, 7, 5)), RNG.standard_normal((6, 5))
        kernels.build(name, m, A, B, dt.Tensor.from_array("M", mm)).evaluate()
        return _error(A.to_numpy(), np.einsum("ijk,kl->ijl", b, mm))
    A, c, d = dt.Tensor("A", (9, 5)), RNG.standard_normal((7, 5)), RNG.standard_normal((6, 5))
    kernels.build(name, m, A, B, dt.Tensor.from_array("Cm", c), dt.Tensor.from_array("D", d)).evaluate()
    return _error(A.to_numpy(), np.einsum("ijk,jl,kl->il", b, c, d))


def paper_schedule(name: str) -> float:
    """SUMMA, Cannon (paper Figure 9/10) on a 2x2 GPU grid and Johnson on 2x2x2, formats placed."""
    n = 96
    if name == "johnson":
        m = _gpu(2, 2, 2)
        A = dt.Tensor("A", (n, n), dt.Format("xy -> xy0", m))
        B = dt.Tensor.from_array("B", RNG.standard_normal((n, n)), dt.Format("xz -> x0z", m))
        C = dt.Tensor.from_array("C", RNG.standard_normal((n, n)), dt.Format("zy -> 0yz", m))
        A[i, j] = B[i, k] * C[k, j]
        sched = A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m) \
            .communicate(A, ko).communicate([B, C], ko).substitute([ii, ji, ki], dt.leaf.GEMM)
    else:
        m = _gpu(2, 2)
        fmt = dt.Format("xy -> xy", m)
        A, B, C = _matmul_operands(n, n, n, fmt)
        A[i, j] = B[i, k] * C[k, j]
        sched = A.schedule().distribute([i, j], [io, jo], [ii, ji], m).split(k, ko, ki, n // 2) \
            .reorder([ko, ii, ji, ki])
        if name == "cannon":
            sched = sched.rotate(ko, [io, jo], kos := dt.index_vars("kos")[0])
            sched = sched.communicate(A, jo).communicate([B, C], kos)
        else:
            sched = sched.communicate(A, jo).communicate([B, C], ko)
        sched = sched.substitute([ii, ji, ki], dt.leaf.GEMM)
    sched.evaluate()
    return _error(A.to_numpy(), B.to_numpy() @ C.to_numpy())


LETTERS = "abcdefg"


def random_einsum(seed: int, wrap: bool) -> float:
    rng = np.random.default_rng(seed)
    letters = list(LETTERS[: rng.integers(2, 6)])
    extents = {c: int(rng.integers(2, 23 if seed % 2 else 60)) for c in letters}
    subs = []
    for _ in range(int(rng.integers(1, 4))):
        size = int(rng.integers(1, min(4, len(letters)) + 1))
        subs.append("".join(rng.choice(letters, size=size, replace=False)))
    used = sorted(set("".join(subs)))
    out = "".join(c for c in used if rng.random() < 0.5)
    spec = ",".join(subs) + "->" + out
    arrays = [rng.standard_normal(tuple(extents[c] for c in s)) for s in subs]
    operands = [dt.Tensor.from_array(f"U{seed}_{n}", a) if wrap else a for n, a in enumerate(arrays)]
    got = dt.einsum(spec, *operands, machine=_gpu(2))
    return _error(np.asarray(got.to_numpy()), np.einsum(spec, *arrays))


def redistribution(source: str, target: str) -> float:
    m = _gpu(2, 2)
    b = RNG.standard_normal((10, 13))
    B = dt.Tensor.from_array("B", b, dt.Format(source, m))
    B.redistribute(dt.Format(target, m))
    return _error(B.to_numpy(), b)


def hierarchical_reduction() -> float:
    """innerprod on a two-level machine: reduced within the node, then across (the synthesizer's program)."""
    m = dt.Machine(dt.Grid(2), dt.Grid(2, kind="gpu"))
    b, c = RNG.standard_normal((40, 8, 6)), RNG.standard_normal((40, 8, 6))
    a = dt.Tensor("a", ())
    kernels.build("innerprod", m, a, dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)).evaluate()
    return _error(a.to_numpy(), np.sum(b * c))


def round_trip() -> float:
    b = RNG.standard_normal((33, 17))
    B = dt.Tensor.from_array("B", b, dt.Format("xy -> xy", _gpu(2, 2)))
    return _error(B.to_numpy(), b)


def out_of_memory() -> float:
    v = np.ones(1 << 21)
    try:
        dt.einsum("i,j->ij", v, v, machine=_gpu(2))  # a 32 TiB result
    except dt.OutOfMemory:
        return 0.0
    except dt.DistalError as exc:  # another refusal before anything ran is still not a crash
        raise AssertionError(f"expected OutOfMemory, got {type(exc).__name__}: {exc}") from exc
    raise AssertionError("a 32 TiB result was accepted")


def user_error() -> float:
    try:
        dt.einsum("ij,jk->ik", np.ones((3, 4)), np.ones((5, 6)), machine=_gpu(2))
    except dt.DistalError:
        return 0.0
    raise AssertionError("mismatched extents were accepted")


def checks() -> list[tuple[str, Callable[[], float]]]:
    found: list[tuple[str, Callable[[], float]]] = []
    grids = {"summa": (2, 2), "cannon": (2, 2), "pumma": (2, 2), "johnson": (2, 2, 2), "solomonik": (2, 2, 2),
             "cosma": (2, 2, 2), "ttv": (2, 2), "innerprod": (4,), "ttm": (4,), "mttkrp": (2, 2, 2)}
    for name in kernels.names():
        found.append((f"library {name} on gpu{grids.get(name, (2,))}",
                      lambda name=name: library(name, grids.get(name, (2,)))))
    for name in ("summa", "cannon", "johnson"):
        found.append((f"paper schedule {name}", lambda name=name: paper_schedule(name)))
    for seed in range(24):
        found.append((f"einsum auto #{seed} ({'dt.Tensor' if seed % 3 == 2 else 'NumPy'} operands)",
                      lambda seed=seed: random_einsum(seed, seed % 3 == 2)))
    for source, target in (("xy -> xy", "xy -> yx"), ("xy -> xy", "xy -> x*"), ("xy -> x*", "xy -> *y"),
                           ("xy -> yx", "xy -> xy")):
        found.append((f"redistribute {source} to {target}",
                      lambda s=source, t=target: redistribution(s, t)))
    found += [("hierarchical reduction (innerprod, 2 nodes x 2 gpus)", hierarchical_reduction),
              ("from_array / to_numpy", round_trip), ("out-of-memory refusal", out_of_memory),
              ("user error", user_error)]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu_checks")
    parser.add_argument("--on-cpus", action="store_true", help="run where Legate has no GPU (the same script, "
                        "its machines fall back to the CPUs): a dry run of the checks themselves")
    parser.add_argument("--only", default="", help="run the checks whose name contains this")
    options = parser.parse_args()
    from distal import runtime as rt

    info = rt.ensure_started()
    print(f"legate: {info.as_dict()}", flush=True)
    if info.gpus == 0 and not options.on_cpus:
        print("gpu_checks: Legate runs no GPU processors; nothing recorded.", file=sys.stderr)
        return 2
    results = []
    for name, check in checks():
        if options.only not in name:
            continue
        start = time.perf_counter()
        try:
            error = check()
            ok, detail = error < 1e-9, f"max relative error {error:.1e}"
        except Exception as exc:  # one failing check must not hide the others
            ok, detail = False, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=6)}"
        seconds = time.perf_counter() - start
        results.append({"check": name, "ok": ok, "detail": detail, "seconds": round(seconds, 3)})
        print(f"{'PASS' if ok else 'FAIL'} {name} ({seconds:.2f} s): {detail.splitlines()[0]}", flush=True)
    passed = sum(r["ok"] for r in results)
    print(f"gpu_checks: {passed} of {len(results)} passed", flush=True)
    path = write(options.out, {"legate": info.as_dict(), "passed": passed, "total": len(results),
                               "results": results})
    print(f"wrote {path}")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
