"""The model of this machine: leaf rates and memory bandwidth measured once, then cached.

`python -m distal.model.calibrate` measures again and caches the result.
`calibrate()` times each leaf kind as distal runs it: a one-processor plan of
the library algorithm that uses it, run point by point in this process on
one BLAS thread (a Legate CPU processor runs its leaves on one core:
`runtime/_blas.py`), a tiny plan for the cost of a task, and a large copy
for the memory bandwidth, in about a second. `this_machine()` reads the
result from the user's cache directory (`$DISTAL_CACHE_DIR`, else
`$XDG_CACHE_HOME/distal`, else `~/.cache/distal`), keyed by host name, core
count and NumPy version, and measures only when nothing is cached.

Legate's own cost per launch is not measured here: it comes from
bench/launch_overhead.py's record on this kind of machine (about 200 us per
index launch of three stores), and copies between CPU processors of one
process run at the measured copy bandwidth after about 50 us of Legion work.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from distal.model.links import Link
from distal.model.machine import LEAF_KINDS, MachineModel, ProcessorModel

__all__ = ["cache_path", "calibrate", "this_machine"]

_VERSION = 3


def cache_path() -> Path:
    """Where this machine's calibration is cached."""
    base = os.environ.get("DISTAL_CACHE_DIR")
    if base:
        return Path(base) / "machine-model.json"
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg) if xdg else Path.home() / ".cache"
    return root / "distal" / "machine-model.json"


def _key() -> str:
    return f"{socket.gethostname()}|{os.cpu_count()}|{np.__version__}|v{_VERSION}"


def _best_of(fn: Callable[[], Any], repeats: int = 5) -> float:
    """The median of `repeats` timed calls after one warm-up (the median, as the benchmarks report)."""
    import statistics

    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return max(statistics.median(times), 1e-9)


def _leaf_cases() -> dict[str, tuple[str, list[tuple[int, ...]]]]:
    """Per leaf kind: a library algorithm whose leaf it is, and its operand shapes (output first)."""
    return {
        "GEMM": ("summa", [(256, 256), (256, 256), (256, 256)]),
        "TTV": ("ttv", [(96, 96), (96, 96, 96), (96,)]),
        "INNERPROD": ("innerprod", [(), (96, 96, 96), (96, 96, 96)]),
        "TTM": ("ttm", [(64, 64, 64), (64, 64, 64), (64, 64)]),
        "MTTKRP": ("mttkrp", [(64, 16), (64, 64, 64), (64, 16), (64, 16)]),
    }


def calibrate() -> dict[str, Any]:
    """Measure this machine: leaf rates as distal runs them, task overhead, copy bandwidth.

    Each leaf kind runs inside a one-processor plan of the library algorithm
    that uses it, point by point in this process (`plan.run(backend="numpy")`:
    the task body a Legate CPU processor runs, on one BLAS thread); a tiny plan
    gives the cost of a task. FLOPs are counted as `distal.model.predict`
    counts them, so the rates and the predictions agree.
    """
    import distal as dt
    from distal import kernels
    from distal.model.predict import predict

    try:
        from threadpoolctl import threadpool_limits

        limit: Any = threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl ships with the test extra
        limit = None
    rng = np.random.default_rng(0)
    probe = MachineModel("probe", ProcessorModel("cpu", dict.fromkeys(LEAF_KINDS, 1e30), 1e30, 1 << 40), 1,
                         Link("probe", 1e30, 0.0), Link("probe", 1e30, 0.0), 0.0, 0.0, 0.0)

    def plan_of(name: str, shapes: list[tuple[int, ...]]) -> Any:
        ops = [dt.Tensor("O", shapes[0])]
        ops += [dt.Tensor.from_array(f"I{n}", rng.random(s)) for n, s in enumerate(shapes[1:])]
        return kernels.build(name, kernels.machine(name, 1), *ops).compile()

    try:
        tiny = plan_of("ttv", [(2, 2), (2, 2, 2), (2,)])
        task = _best_of(lambda: tiny.run(backend="numpy"))
        flops: dict[str, float] = {}
        for kind, (name, shapes) in _leaf_cases().items():
            plan = plan_of(name, shapes)
            seconds = _best_of(functools.partial(plan.run, backend="numpy"), repeats=3)
            flops[kind] = predict(plan, probe).flops / max(seconds - task, seconds / 10)
        a, b = rng.random((256, 256)), rng.random((256, 256))
        flops["GENERIC"] = 2 * a.size / _best_of(lambda: a * 2.0 + b)
        big = np.ones(4 << 20)
        bandwidth = 2 * big.nbytes / _best_of(lambda: big.copy(), repeats=3)
    finally:
        if limit is not None:
            limit.unregister()
    assert set(flops) == set(LEAF_KINDS)
    return {"key": _key(), "flops": flops, "bandwidth": bandwidth, "task_seconds": task,
            "cores": os.cpu_count() or 1, "memory": _memory_bytes(), "measured": time.strftime("%Y-%m-%d %H:%M:%S")}


def _memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def _load() -> dict[str, Any] | None:
    path = cache_path()
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if data.get("key") == _key() else None


def this_machine(recalibrate: bool = False) -> MachineModel:
    """The model of this machine: cached calibration (measured now when there is none or `recalibrate`)."""
    data = None if recalibrate else _load()
    if data is None:
        data = calibrate()
        path = cache_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(data, indent=2))
        except OSError:
            pass  # a read-only home: the model still works, it is measured again next time
    cores = int(data["cores"])
    proc = ProcessorModel("cpu", data["flops"], float(data["bandwidth"]), int(data["memory"]) // max(cores, 1))
    copy = Link("copy", float(data["bandwidth"]) / 2, 50e-6)
    task = float(data.get("task_seconds", 150e-6))
    return MachineModel("this-machine", proc, 1 << 16, copy, copy, launch_seconds=200e-6, task_seconds=task,
                        overlap=0.3, cores=cores, notes=(f"calibrated {data.get('measured', '?')}",))


def legate_launch_seconds(repeats: int = 7) -> float:
    """Legate's cost of one launch on this machine, measured now: a one-point plan of tiny tiles, run and read.

    Needs Legate started (`distal.runtime.ensure_started()`); the median of
    `repeats` runs of a 2x2x2 TTV (its leaf time is negligible).
    """
    import statistics

    import distal as dt
    from distal import kernels

    rng = np.random.default_rng(0)
    out = dt.Tensor("O", (2, 2))
    ops = [out, dt.Tensor.from_array("I0", rng.random((2, 2, 2))), dt.Tensor.from_array("I1", rng.random(2))]
    plan = kernels.build("ttv", kernels.machine("ttv", 1), *ops).compile()
    times = []
    for k in range(repeats + 1):
        t0 = time.perf_counter()
        plan.run()
        out.to_numpy()
        if k:
            times.append(time.perf_counter() - t0)
    return float(statistics.median(times))


def main() -> int:
    """`python -m distal.model.calibrate`: measure this machine again, cache it, print the model."""
    model = this_machine(recalibrate=True)
    print(model.describe())
    print(f"cached in {cache_path()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
