"""Snapshot what distal reports about a fixed set of plans, to show a refactor changed none of it.

`python tools/report_snapshot.py OUT.json` compiles 30 plans (the library's
ten algorithms, the paper's SUMMA, Cannon and Johnson written as schedules,
hierarchical machines, sequential steps, precompute, rotate, reductions,
auto's choices and dt.einsum's plans) through the public API only, and writes
for each one `str(plan)`, `plan.explain()`, `plan.stats()` and
`plan.predict()` (on this machine's model and on one Lassen-like preset).
Nothing runs on Legate (the script fails if Legate was imported).
`python tools/report_snapshot.py --compare OLD.json NEW.json` prints every
difference and exits 1 when there is one.

The time model is pinned to tests/_data/machine-model.json (the suite's
frozen calibration) and Legate's configuration to two CPUs, so that two
checkouts report from the same inputs. Run it in two checkouts of the same
machine, e.g. for the refactor of issue 31:

    git worktree add /tmp/before <old commit>
    (cd /tmp/before && PYTHONPATH=/tmp/before python /path/to/tools/report_snapshot.py /tmp/before.json)
    python tools/report_snapshot.py /tmp/after.json
    python tools/report_snapshot.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("DISTAL_MACHINE_MODEL", str(ROOT / "tests" / "_data" / "machine-model.json"))
os.environ["LEGATE_CONFIG"] = "--cpus 2 --sysmem 4000"
os.environ.setdefault("DISTAL_EAGER", "1")

import numpy as np  # noqa: E402

import distal as dt  # noqa: E402


def _matmul(n: int = 64) -> tuple[Any, Any, Any]:
    return dt.Tensor("A", (n, n)), dt.Tensor("B", (n, n)), dt.Tensor("C", (n, n))


def _library(name: str, nprocs: int) -> Any:
    shapes = {"ttv": (("A", (32, 32)), ("B", (32, 32, 32)), ("c", (32,))),
              "innerprod": (("a", ()), ("B", (32, 32, 32)), ("C", (32, 32, 32))),
              "ttm": (("A", (32, 32, 24)), ("B", (32, 32, 16)), ("C", (16, 24))),
              "mttkrp": (("A", (32, 8)), ("B", (32, 32, 32)), ("C", (32, 8)), ("D", (32, 8)))}
    ops = [dt.Tensor(n, s) for n, s in shapes[name]] if name in shapes else list(_matmul())
    return dt.kernels.build(name, dt.kernels.machine(name, nprocs), *ops).compile()


def _summa(hierarchical: bool = False) -> Any:
    i, j, k, io, jo, ii, ji, ko, ki = dt.index_vars("i j k io jo ii ji ko ki")
    A, B, C = _matmul()
    m = dt.Machine(dt.Grid(2, 2), dt.Grid(2)) if hierarchical else dt.Machine(dt.Grid(2, 2))
    fmt = dt.Format(["xy -> xy", "xy -> x"], m) if hierarchical else dt.Format("xy -> xy", m)
    for t in (A, B, C):
        t.set_format(fmt)
    A[i, j] = B[i, k] * C[k, j]
    grid = dt.Machine(dt.Grid(2, 2))
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], grid)
            .split(k, ko, ki, 16).reorder([ko, ii, ji, ki])
            .communicate(A, jo).communicate([B, C], ko)
            .substitute([ii, ji, ki], dt.leaf.GEMM).compile())


def _cannon() -> Any:
    i, j, k, io, jo, ii, ji, ko, ki, kos = dt.index_vars("i j k io jo ii ji ko ki kos")
    A, B, C = _matmul()
    m = dt.Machine(dt.Grid(2, 2))
    for t in (A, B, C):
        t.set_format(dt.Format("xy -> xy", m))
    A[i, j] = B[i, k] * C[k, j]
    return (A.schedule().distribute([i, j], [io, jo], [ii, ji], m)
            .divide(k, ko, ki, m.x).reorder([ko, ii, ji, ki])
            .rotate(ko, [io, jo], kos)
            .communicate(A, jo).communicate([B, C], kos)
            .substitute([ii, ji, ki], dt.leaf.GEMM).compile())


def _johnson(steps: bool) -> Any:
    i, j, k, io, jo, ko, ii, ji, ki, kio, kii = dt.index_vars("i j k io jo ko ii ji ki kio kii")
    A, B, C = _matmul(16)
    m = dt.Machine(dt.Grid(2, 2, 2))
    A.set_format(dt.Format("xy -> xy0", m))
    B.set_format(dt.Format("xz -> x0z", m))
    C.set_format(dt.Format("zy -> 0yz", m))
    A[i, j] = B[i, k] * C[k, j]
    s = A.schedule().distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
    if steps:
        s = (s.split(ki, kio, kii, 4).reorder([kio, ii, ji, kii]).communicate(A, ko)
             .communicate([B, C], kio))
    else:
        s = s.communicate([A, B, C], ko)
    return s.compile()


def _precompute() -> Any:
    i, j, k, l, lw = dt.index_vars("i j k l lw")
    A, B, C, D = dt.Tensor("A", (8, 6)), dt.Tensor("B", (8, 5, 7)), dt.Tensor("C", (5, 6)), dt.Tensor("D", (7, 6))
    A[i, l] = B[i, j, k] * C[j, l] * D[k, l]
    return A.schedule().reorder([i, j, k, l]).precompute(B[i, j, k] * C[j, l], [l], [lw]).compile()


def _distributed_sum() -> Any:
    i, io, ii = dt.index_vars("i io ii")
    a, b, c = dt.Tensor("a", ()), dt.Tensor("b", (37,)), dt.Tensor("c", (37,))
    m = dt.Machine(dt.Grid(3))
    b.set_format(dt.Format("x -> x", m))
    c.set_format(dt.Format("x -> x", m))
    a[()] = b[i] * c[i]
    return a.schedule().distribute([i], [io], [ii], m).communicate([a, b, c], io).compile()


def _auto(text: str, shapes: dict[str, tuple[int, ...]], grid: tuple[int, ...]) -> Any:
    tensors = {name: dt.Tensor(name, shape) for name, shape in shapes.items()}
    stmt = dt.parse(text, **tensors)
    out = tensors[stmt.lhs.tensor.name]
    return out.schedule().auto(dt.Machine(dt.Grid(*grid))).compile()


def _einsum(subscripts: str, *shapes: tuple[int, ...]) -> Any:
    rng = np.random.default_rng(0)
    return dt.einsum_plan(subscripts, *(rng.standard_normal(s) for s in shapes))


PLANS: dict[str, Callable[[], Any]] = {
    **{f"library {name} on {p}": (lambda name=name, p=p: _library(name, p))
       for name in ("summa", "cannon", "pumma", "johnson", "solomonik", "cosma", "ttv", "innerprod", "ttm", "mttkrp")
       for p in ((8,) if name in ("johnson", "solomonik", "cosma") else (4,))},
    "library summa on 6": lambda: _library("summa", 6),
    "library cosma on 4": lambda: _library("cosma", 4),
    "paper summa, flat": _summa,
    "paper summa, two levels": lambda: _summa(True),
    "paper cannon": _cannon,
    "paper johnson": lambda: _johnson(False),
    "johnson, reduced output and two steps": lambda: _johnson(True),
    "precompute": _precompute,
    "distributed inner product, prime size": _distributed_sum,
    "auto matvec": lambda: _auto("a(i) = B(i,j) * c(j)", {"a": (512,), "B": (512, 512), "c": (512,)}, (2,)),
    "auto ttm": lambda: _auto("A(i,j,l) = B(i,j,k) * C(k,l)", {"A": (40, 30, 20), "B": (40, 30, 24),
                                                                  "C": (24, 20)}, (2, 2)),
    "auto matmul 3d": lambda: _auto("A(i,j) = B(i,k) * C(k,j)", {"A": (96, 96), "B": (96, 96), "C": (96, 96)},
                                    (2, 2, 2)),
    "einsum abij,cdij->abcd": lambda: _einsum("abij,cdij->abcd", (12, 12, 12, 12), (12, 12, 12, 12)),
    "einsum matmul large": lambda: _einsum("ij,jk->ik", (600, 600), (600, 600)),
    "einsum matmul tiny": lambda: _einsum("ij,jk->ik", (3, 4), (4, 2)),
    "einsum chain": lambda: _einsum("ab,bcd,de->ace", (30, 40), (40, 20, 30), (30, 10)),
    "einsum batched": lambda: _einsum("bhqd,bhkd->bhqk", (2, 4, 64, 16), (2, 4, 64, 16)),
    "einsum trace": lambda: _einsum("ii->", (500, 500)),
}


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, indent=1)


def snapshot() -> dict[str, dict[str, str]]:
    from distal.model import preset

    out: dict[str, dict[str, str]] = {}
    for name, make in PLANS.items():
        plan = make()
        out[name] = {
            "str": str(plan),
            "repr": repr(plan),
            "explain": plan.explain(),
            "stats": _text(plan.stats()),
            "predict": str(plan.predict()),
            "predict on lassen-gpu": str(plan.predict(preset("lassen-gpu"))),
        }
    if "legate" in sys.modules:
        raise SystemExit("report_snapshot: Legate was imported; the snapshot must not run anything")
    return out


def compare(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> list[str]:
    """Every difference between two snapshots, as unified diffs."""
    found = [f"only in the old snapshot: {name}" for name in old if name not in new]
    found += [f"only in the new snapshot: {name}" for name in new if name not in old]
    for name in old:
        for field, text in old[name].items():
            other = new.get(name, {}).get(field)
            if other is not None and other != text:
                diff = difflib.unified_diff(text.splitlines(), other.splitlines(), f"old {name}: {field}",
                                            f"new {name}: {field}", lineterm="")
                found.append("\n".join(diff))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="where to write the snapshot (JSON)")
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"), help="compare two snapshots")
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (json.loads(Path(p).read_text()) for p in args.compare)
        found = compare(old, new)
        print("\n\n".join(found) if found else f"identical: {len(old)} plans, {sum(map(len, old.values()))} reports")
        return 1 if found else 0
    if not args.out:
        parser.error("give OUT.json or --compare OLD NEW")
    data = snapshot()
    Path(args.out).write_text(json.dumps(data, indent=1, sort_keys=True))
    print(f"{len(data)} plans, {sum(map(len, data.values()))} reports -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
