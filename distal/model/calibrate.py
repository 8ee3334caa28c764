"""The model of this machine: leaf rates and memory bandwidth measured once, then cached.

`calibrate()` times each leaf kind with NumPy on one thread (a Legate CPU
processor runs its leaves on one core: `runtime/_blas.py`), and a large copy
for the memory bandwidth, in well under a second. `this_machine()` reads the
result from the user's cache directory (`$DISTAL_CACHE_DIR`, else
`$XDG_CACHE_HOME/distal`, else `~/.cache/distal`), keyed by host name, core
count and NumPy version, and measures only when nothing is cached.

The runtime's costs are not measured here: per launch and per task they
come from bench/launch_overhead.py's record on this kind of machine (about
200 us per index launch of three stores, most of it Legate's; a Python task
body adds about 150 us), and copies between CPU processors of one process
run at the measured copy bandwidth after about 50 us of Legion work.
"""

from __future__ import annotations

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

_VERSION = 1


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
    fn()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


def calibrate() -> dict[str, Any]:
    """Measure this machine's leaf rates (FLOP/s, as `distal.model.predict` counts FLOPs) and copy bandwidth."""
    try:
        from threadpoolctl import threadpool_limits

        limit: Any = threadpool_limits(1)
    except ImportError:  # pragma: no cover - threadpoolctl ships with the test extra
        limit = None
    rng = np.random.default_rng(0)
    try:
        n = 384
        a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
        flops: dict[str, float] = {"GEMM": 2 * n**3 / _best_of(lambda: a @ b)}
        t3, m2 = rng.standard_normal((48, 48, 96)), rng.standard_normal((96, 48))
        flops["TTM"] = 2 * 48 * 48 * 96 * 48 / _best_of(lambda: np.matmul(t3, m2))
        v = rng.standard_normal(96)
        flops["TTV"] = 2 * 48 * 48 * 96 / _best_of(lambda: np.matmul(t3, v))
        c3 = rng.standard_normal((48, 48, 96))
        flops["INNERPROD"] = 2 * 48 * 48 * 96 / _best_of(lambda: np.einsum("abc,abc->", t3, c3))
        x3, cj, dk = rng.standard_normal((40, 40, 40)), rng.standard_normal((40, 16)), rng.standard_normal((40, 16))
        flops["MTTKRP"] = 3 * 40 * 40 * 40 * 16 / _best_of(
            lambda: np.einsum("acd,cb,db->ab", x3, cj, dk, optimize=True))
        flops["GENERIC"] = 2 * 48 * 48 * 96 / _best_of(lambda: t3 * 2.0 + c3)
        big = np.ones(4 << 20)
        bandwidth = 2 * big.nbytes / _best_of(lambda: big.copy(), repeats=3)
    finally:
        if limit is not None:
            limit.unregister()
    assert set(flops) == set(LEAF_KINDS)
    return {"key": _key(), "flops": flops, "bandwidth": bandwidth, "cores": os.cpu_count() or 1,
            "memory": _memory_bytes(), "measured": time.strftime("%Y-%m-%d %H:%M:%S")}


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
    return MachineModel("this-machine", proc, 1 << 16, copy, copy, launch_seconds=200e-6, task_seconds=150e-6,
                        overlap=0.3, cores=cores, notes=(f"calibrated {data.get('measured', '?')}",))
