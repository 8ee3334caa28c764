"""`distal bench check`: a regression guard for the recorded performance ratios (not a timed test).

Reruns a short version of the ratios the issue tracks and compares them with
the last recorded ones:

* TTV, innerprod, TTM and MTTKRP on 2 CPU processors: distal's library
  kernel against `numpy.einsum` (2 BLAS threads) and `cupynumeric.einsum`,
  at check's own sizes (`CHECK_SIZES`, which fit one process; ratios: the
  other's time over distal's);
* SUMMA 2x2 against `numpy.matmul` (2 BLAS threads) at the n bench/matmul.py
  records (4096 unless told otherwise).

Everything runs in one Legate process (`--cpus 2` and a pool sized by
`check_sysmem` unless LEGATE_CONFIG says otherwise), one kernel at a time,
in interleaved rounds (each round runs every method once, so load from
elsewhere affects all alike), and each figure is the median. A run whose
memory need exceeds the machine's available memory is refused (exit 2).
Timed: distal's `plan.run()` and a fence, cuPyNumeric's call and a fence
(each result ready on Legate), NumPy's call.

A run is compared only with a baseline measured on the same kind of CPU
(`_common.cpu_kind`: vendor, family and vector extensions, which decide the
kernels NumPy's, cuPyNumeric's and distal's BLAS run): the higher-order
ratios of the newest `python bench/suite.py --interleaved` record from such
a CPU (its `check` section, measured by this script's method at the same
sizes) and SUMMA's of the newest `bench/matmul.py` record from one, found
among the dated records of the results folder and its history.json
(`--against DIR` for another folder). With no such record it prints the
ratios, says which kinds of CPU have baselines, and compares nothing. A
ratio that fell by more than `--tolerance` (default 15 %) of its recorded
value is printed, and the exit status is 1.

Run it before merging a change that may affect performance (kernels,
leaves, lowering, the runtime), on a quiet machine: `distal bench check` or
`python bench/check.py [--rounds N] [--tolerance F]`. `--quick` is a smoke
run at small sizes: it prints the ratios and compares nothing (ratios depend
on the size). Records check.json (the new ratios, the recorded ones and
where they come from, what fell, the CPU kind and the BLAS kernels each
library ran) in the results folder's record of the day and commit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))  # the harness, bench/_common, also when loaded by path
import _common  # noqa: E402
from _common.workloads import (  # noqa: E402
    SPECS,
    child_memory,
    distal_names,
    inputs,
    operand_shapes,
    out_shape,
    ratios,
)

RECORDED = HERE / "results"
KERNELS = ("ttv", "innerprod", "ttm", "mttkrp")
AGAINST = ("numpy", "cupynumeric")
TOLERANCE = 0.15
# (n, l) per kernel: fits one Legate process with NumPy's, distal's and cuPyNumeric's copies
CHECK_SIZES = {"ttv": (450, 0), "innerprod": (400, 0), "ttm": (250, 600), "mttkrp": (300, 128)}


@dataclass(frozen=True)
class Fall:
    """A ratio that fell: its name, the recorded and the new value."""

    name: str
    recorded: float
    new: float

    @property
    def change(self) -> float:
        return self.new / self.recorded - 1.0

    def __str__(self) -> str:
        return f"{self.name}: {self.new:.2f}x, recorded {self.recorded:.2f}x ({self.change:+.0%})"


@dataclass(frozen=True)
class Baseline:
    """What a run is compared with: the recorded ratios (higher is better for distal) by name, e.g.
    `ttm_vs_numpy`, `summa_vs_numpy`, the sizes they were measured at, and the records they come from."""

    ratios: dict[str, float]
    higher: dict[str, tuple[int, int]]
    matmul_n: int
    sources: tuple[str, ...]


def _has_check(data: dict[str, Any]) -> bool:
    found = data.get("check")
    return isinstance(found, dict) and bool(found.get("ratios")) and not found.get("quick")


def _has_summa(data: dict[str, Any]) -> bool:
    return bool(data.get("distal", {}).get("summa_2x2_chunk4096", {}).get("seconds")
                and data.get("numpy", {}).get("seconds"))


def recorded(kind: str | None, folder: Path = RECORDED) -> Baseline:
    """The newest baseline measured on a CPU of `kind` (`_common.cpu_kind`): the higher-order ratios of the
    `check` section of the newest full `suite_interleaved` record (measured by this script's method at its
    sizes, in the suite's run), SUMMA's from the newest `matmul` record (bench/matmul.py). A kind no record
    has gives no ratios (check's own sizes, nothing to compare with)."""
    ratios: dict[str, float] = {}
    higher = check_sizes()
    n = 4096
    sources: list[str] = []
    found = _common.find("suite_interleaved", kind, folder, _has_check)
    if found is not None:
        where, data = found
        for name, value in data["check"]["ratios"].items():
            if name.split("_vs_")[0] in KERNELS:
                ratios[name] = float(value)
        for name, size in data["check"].get("sizes", {}).items():
            if name in higher:
                higher[name] = (int(size[0]), int(size[1]))
        sources.append(where)
    found = _common.find("matmul", kind, folder, _has_summa)
    if found is not None:
        where, data = found
        summa = float(data["distal"]["summa_2x2_chunk4096"]["seconds"])
        ratios["summa_vs_numpy"] = float(data["numpy"]["seconds"]) / summa
        n = int(data.get("n", n))
        sources.append(where)
    return Baseline(ratios, higher, n, tuple(sources))


def recorded_kinds(folder: Path = RECORDED) -> list[str]:
    """The CPU kinds of the suite's records that hold a baseline, newest first."""
    kinds: list[str] = []
    for _, data in _common.records("suite_interleaved", folder):
        kind = _common.cpu_kind(data.get("machine"))
        if _has_check(data) and kind is not None and kind not in kinds:
            kinds.append(kind)
    return kinds


def check_sizes(quick: bool = False) -> dict[str, tuple[int, int]]:
    """The sizes this script measures at: one Legate process holds all three systems' copies of them.

    NumPy takes about 0.01-0.3 s at these on this machine: under the suite's
    0.1 s condition for TTV and innerprod, so check's ratios are compared with
    the baseline the suite records at the same sizes, not with the suite's.
    """
    if quick:
        return {k: (max(8, n // 10), max(1, l // 10)) for k, (n, l) in CHECK_SIZES.items()}
    return dict(CHECK_SIZES)


def compare(recorded: Mapping[str, float], new: Mapping[str, float], tolerance: float = TOLERANCE) -> list[Fall]:
    """The ratios of `new` that fell below `(1 - tolerance)` times their recorded value (names in both)."""
    if not 0 <= tolerance < 1:
        raise ValueError(f"expected a tolerance in [0, 1), but found {tolerance}")
    return [Fall(name, recorded[name], new[name]) for name in sorted(recorded)
            if name in new and new[name] < recorded[name] * (1.0 - tolerance)]


# -- measuring (in a Legate process) ----------------------------------------------------------------


def _runs(higher: Mapping[str, tuple[int, int]], n: int) -> dict[str, Callable[[], Any]]:
    import numpy as np

    import distal as dt
    from distal import kernels
    from distal import runtime as rt

    rt.ensure_started()
    import cupynumeric as cn
    from legate.core import get_legate_runtime

    legate = get_legate_runtime()

    set_threads = _common.numpy_threads()

    def with_numpy_threads(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> None:
            set_threads(2)  # NumPy with 2 BLAS threads; Legate's tasks use 1 each
            try:
                fn()
            finally:
                set_threads(1)
        return run

    runs: dict[str, Callable[[], Any]] = {}
    for name, (size, l) in higher.items():
        arrays = inputs(name, size, l)
        spec = SPECS[name][0]
        cargs = [cn.array(a) for a in arrays]  # copies on Legate: attached host arrays slow later launches
        names = distal_names(name)
        ins = [dt.Tensor.from_array(x, a) for x, a in zip(names[1:], arrays)]
        out = dt.Tensor(names[0], out_shape(name, size, l))
        plan = kernels.build(name, kernels.machine(name, 2), out, *ins).compile()

        def distal_run(plan: Any = plan) -> None:
            plan.run()
            rt.fence()  # the result ready in its Legate store (no host copy, as for cuPyNumeric)

        def cupy_run(spec: str = spec, cargs: list[Any] = cargs) -> None:
            cn.einsum(spec, *cargs)
            legate.issue_execution_fence(block=True)  # waits for the result

        runs[f"{name}:distal"] = distal_run
        def numpy_run(spec: str = spec, arrays: list[Any] = arrays) -> None:
            np.einsum(spec, *arrays, optimize=True)

        runs[f"{name}:numpy"] = with_numpy_threads(numpy_run)
        runs[f"{name}:cupynumeric"] = cupy_run
    if n:
        rng = np.random.default_rng(0)
        b, c = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        machine = dt.Machine(dt.Grid(2, 2))
        A = dt.Tensor("A", (n, n))
        plan = kernels.build("summa", machine, A, dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)).compile()

        def summa_run(plan: Any = plan) -> None:
            plan.run()
            rt.fence()

        runs["summa:distal"] = summa_run
        runs["summa:numpy"] = with_numpy_threads(lambda: np.matmul(b, c))
    return runs


def measure(higher: Mapping[str, tuple[int, int]], n: int, rounds: int,
            report: Callable[[int, dict[str, list[float]]], None] | None = None) -> dict[str, list[float]]:
    """Interleaved samples (`<kernel>:<method>`) of the kernels at `higher` and SUMMA at `n` (0: none).

    One kernel at a time: its methods' runs are made, interleaved for
    `rounds` rounds after a warm-up round, and dropped (a fence frees their
    stores) before the next kernel's operands are made, so the process holds
    one kernel's operands at a time (`check_sysmem`).
    """
    import gc

    from distal import runtime as rt

    samples: dict[str, list[float]] = {}
    parts: list[tuple[dict[str, tuple[int, int]], int]] = [({k: v}, 0) for k, v in higher.items()]
    if n:
        parts.append(({}, n))
    for part, size in parts:
        runs = _runs(part, size)
        samples.update(_common.interleaved_rounds(runs, rounds, report))
        del runs
        gc.collect()
        rt.fence()
    return samples


def check_sysmem(higher: Mapping[str, tuple[int, int]], n: int) -> int:
    """Legate system memory (MB) for `measure`: twice the largest of one kernel's distal and cuPyNumeric pools
    (`_common.workloads.child_memory`) and SUMMA's A, B, C and their tiles (6 n^2 doubles) with 512 MB, at least 1000.

    Twice: in one process the two systems' instances and their tiles' copies
    coexist (with once, innerprod 400^3 ran out of its 3197 MB pool and
    Legate aborted). The old fixed 12000 MB pool, with every kernel's
    operands live at once, made this process 14.5 GB resident.
    """
    pools = [2 * (child_memory(k, "distal", *v)[0] + child_memory(k, "cupynumeric", *v)[0]) for k, v in higher.items()]
    return max([1000, *pools, int(6 * n * n * 8 / 2**20) + 512])


def check_need_mib(higher: Mapping[str, tuple[int, int]], n: int) -> float:
    """Host memory `measure` needs: its pool, the largest kernel's NumPy operands and output, 768 MiB of runtime."""
    host = [sum(math.prod(x) for x in [*operand_shapes(k, *v)[0], operand_shapes(k, *v)[1]]) * 8 / 2**20
            for k, v in higher.items()]
    return check_sysmem(higher, n) + max([3 * n * n * 8 / 2**20, *host]) + 768


def baseline(rounds: int, quick: bool) -> dict[str, Any]:
    """This script's measurement at its sizes, without SUMMA: the baseline `python bench/suite.py --interleaved`
    records in its run (its `check` section), by running this script as a child (`--baseline-child`)."""
    import numpy as np

    higher = check_sizes(quick)
    samples = measure(higher, 0, rounds)
    return {"sizes": {k: list(v) for k, v in higher.items()}, "rounds": rounds, "ratios": ratios(samples),
            "seconds": {k: float(np.median(v)) for k, v in samples.items() if v}, "quick": quick,
            "blas": _common.blas_kernels()}


def _baseline_child(rounds: int, quick: bool) -> int:
    higher = check_sizes(quick)
    os.environ.setdefault("LEGATE_CONFIG", _common.legate_config(check_sysmem(higher, 0)))
    try:
        _common.check_host_memory("check's baseline", check_need_mib(higher, 0))
    except MemoryError as e:
        print(f"bench/check.py: {e}", file=sys.stderr)
        return 2
    print(json.dumps(baseline(rounds, quick)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds after a warm-up (default 5)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE,
                        help="fraction a ratio may fall below its recorded value (default 0.15)")
    parser.add_argument("--against", type=Path, default=RECORDED, help="folder of the recorded results")
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 round, no comparison (a smoke run)")
    parser.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_child:
        return _baseline_child(args.rounds, args.quick)
    kind = _common.cpu_kind({"cpu": _common.cpu()})
    base = recorded(kind, args.against)
    higher, n = base.higher, base.matmul_n
    rounds = args.rounds
    if args.quick:
        higher, n, rounds = check_sizes(quick=True), 256, 1
    os.environ.setdefault("LEGATE_CONFIG", _common.legate_config(check_sysmem(higher, n)))
    try:
        _common.check_host_memory("distal bench check", check_need_mib(higher, n))
    except MemoryError as e:
        print(f"bench/check.py: {e}", file=sys.stderr)
        return 2
    start = time.perf_counter()

    def report(r: int, s: dict[str, list[float]]) -> None:
        kernel = next(iter(s)).split(":")[0]
        print(f"{kernel} round {r}/{rounds}" + (" (warm-up)" if r == 0 else "")
              + f"  (elapsed {time.perf_counter() - start:.0f} s)", flush=True)

    samples = measure(higher, n, rounds, report)
    new = ratios(samples)
    falls = [] if args.quick else compare(base.ratios, new, args.tolerance)
    for name in sorted(new):
        was = base.ratios.get(name)
        print(f"{name:28s} {new[name]:6.2f}x" + (f"   recorded {was:.2f}x" if was is not None else ""))
    path = _common.record("check", {
        "quick": args.quick, "rounds": rounds, "tolerance": args.tolerance, "sizes": {"higher": higher, "matmul_n": n},
        "cpu_kind": kind, "blas": _common.blas_kernels(), "baseline": list(base.sources),
        "ratios": new, "recorded": base.ratios, "fell": [str(f) for f in falls],
        "seconds": {k: statistics.median(v) for k, v in samples.items() if v},
        "loadavg": list(os.getloadavg()),
    })
    if args.quick:
        print("smoke run at small sizes: nothing compared")
    elif not base.ratios:
        others = recorded_kinds(args.against)
        print(f"no baseline from this kind of CPU ({kind}): nothing compared; the recorded baselines are from "
              + ("; ".join(others) if others else "no CPU") + "; record one here with "
              "`python bench/suite.py --interleaved` on a quiet machine")
    elif falls:
        print(f"fell by more than {args.tolerance:.0%}:")
        for f in falls:
            print(f"  {f}")
    else:
        print(f"no ratio fell by more than {args.tolerance:.0%} of its recorded value")
    print(f"wrote {path}")
    return 1 if falls else 0


if __name__ == "__main__":
    raise SystemExit(main())
