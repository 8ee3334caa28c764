"""What every benchmark shares: the machine description, timing, results, progress."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# `distal bench --results DIR` sets DISTAL_BENCH_RESULTS; scripts run by hand record in bench/results/.
RESULTS = Path(os.environ.get("DISTAL_BENCH_RESULTS") or Path(__file__).resolve().parent / "results")


def machine() -> dict[str, Any]:
    """Cores, CPU model, memory, Python and package versions of this machine."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    versions: dict[str, str | None] = {}
    for pkg in ("numpy", "legate", "cupynumeric"):
        try:
            from importlib.metadata import version

            versions[pkg] = version(pkg if pkg != "cupynumeric" else "nvidia-cupynumeric")
        except Exception:
            versions[pkg] = None
    return {
        "cores": os.cpu_count(),
        "cpu_model": model,
        "memory_gib": mem_gib,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": versions,
        "legate_config": os.environ.get("LEGATE_CONFIG"),
    }


def median_seconds(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> tuple[float, list[float]]:
    """Median wall time of `fn()` over `repeats` runs after `warmup` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def interleaved_rounds(runs: dict[str, Callable[[], Any]], repeats: int,
                       report: Callable[[int, dict[str, list[float]]], None] | None = None
                       ) -> dict[str, list[float]]:
    """Wall times of every run in `repeats` rounds, each round running each once, after a warm-up round.

    Interleaving makes load from elsewhere on the machine affect every method
    alike. `report(round, samples)` (if given) is called after each round.
    """
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for round_ in range(repeats + 1):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            if round_:
                samples[name].append(time.perf_counter() - start)
        if report is not None:
            report(round_, samples)
    return samples


def write(name: str, data: dict[str, Any]) -> Path:
    """Write results/<name>.json with the machine description."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"machine": machine(), "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def labels(name: str) -> dict[str, Any]:
    """The labelled figures already in results/<name>.json (a benchmark run adds its label to them)."""
    path = RESULTS / f"{name}.json"
    try:
        found = json.loads(path.read_text()).get("labels", {})
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


class Progress:
    """A one-line-per-step progress display: `[3/12] summa n=2048 p=2 ... 1.52 s`."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.start = time.perf_counter()

    def step(self, what: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        print(f"[{self.done}/{self.total}] {what}  (elapsed {elapsed:.0f} s)", flush=True)
