"""What every benchmark shares: the machine description, timing, results, progress.

Results are records named by the date and the commit they were measured at: `record(name, data)` writes
`<results>/<YYYY-MM-DD>_<commit>/<name>.json` (`record_path` for plots beside it), with the machine: its CPU
(vendor, family, model, the vector extensions its kernels can use: `cpu`) and the BLAS libraries loaded in
the recording process with the kernels each runs (`blas_kernels`; children of a benchmark record their own).
`find(name, kind=...)` gives the newest record of a benchmark, from the dated folders and from
`history.json` (the records kept from before this naming, each with the machine it was measured on), and
`cpu_kind` says which CPUs are alike enough to compare ratios between: the same vendor and family and the
same vector extensions, so that every library picks the same kernels.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# `distal bench --results DIR` sets DISTAL_BENCH_RESULTS; scripts run by hand record in bench/results/.
RESULTS = Path(os.environ.get("DISTAL_BENCH_RESULTS") or Path(__file__).resolve().parent / "results")
HISTORY = "history.json"  # the records from before results were named by date and commit
# CPU flags (as Linux names them) that decide which kernels BLAS and NumPy pick
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
                "avx512ifma", "avx512vbmi", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
                "amx_int8", "asimd", "sve", "sve2")


def cpu(cpuinfo: str | None = None) -> dict[str, Any]:
    """This CPU (or the one `cpuinfo`, text of /proc/cpuinfo, describes): vendor, family, model number, model
    name and the vector extensions of VECTOR_FLAGS it has."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key and key not in fields:
            fields[key] = value.strip()
        if not line.strip() and fields:
            break  # the first processor's block says it for all
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {"vendor": fields.get("vendor_id") or fields.get("CPU implementer") or platform.machine(),
            "family": fields.get("cpu family") or fields.get("CPU architecture"),
            "model": fields.get("model") or fields.get("CPU part"),
            "model_name": fields.get("model name") or platform.processor() or platform.machine(),
            "vector_extensions": [f for f in VECTOR_FLAGS if f in flags]}


def cpu_kind(machine: dict[str, Any] | None) -> str | None:
    """What a record's machine must share with another for their ratios to be compared: the CPU's vendor,
    family and vector extensions, as text; None for a record that does not say (`machine` is a record's
    "machine" section, or a `cpu()`)."""
    if not machine:
        return None
    found = machine.get("cpu", machine)
    if not isinstance(found, dict):
        return None
    if isinstance(found.get("kind"), str):  # a kind stated for an older record (history.json)
        return str(found["kind"])
    if found.get("vendor") is None or "vector_extensions" not in found:
        return None
    return f"{found['vendor']} family {found.get('family')}: {' '.join(found['vector_extensions']) or 'none'}"


def blas_kernels() -> dict[str, str]:
    """The BLAS libraries loaded in this process and the kernels each runs, by what loaded them: `numpy`
    (NumPy's bundled OpenBLAS), `cupynumeric` (the one cuPyNumeric's tasks call), `distal` (what distal's
    tile products run on, `distal.tile_blas`), and any other by its file name."""
    out: dict[str, str] = {}
    try:
        from threadpoolctl import threadpool_info

        infos = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    except ImportError:  # pragma: no cover - threadpoolctl comes with distal
        infos = []
    for info in infos:
        path = str(info.get("filepath", ""))
        who = ("numpy" if "numpy" in path else "cupynumeric" if "cupynumeric" in path
               else "distal_tiles" if "scipy_openblas64" in path and "numpy" not in path else Path(path).name)
        out[who] = (f"{info.get('internal_api')} {info.get('version')}, {info.get('architecture')} kernels "
                    f"({Path(path).name})")
    if "distal" in sys.modules:
        from distal import tile_blas

        out["distal"] = tile_blas.describe()
    return out


def commit() -> str:
    """The short commit of the checkout the benchmarks run from ("unknown" outside a git checkout)."""
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


def _dirty() -> bool:
    """Whether the checkout has changes not committed (the record then holds more than its commit)."""
    try:
        done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                              cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(done.stdout.strip())


def run_folder() -> Path:
    """The folder of today's records at this commit: `<results>/<YYYY-MM-DD>_<commit>`."""
    return RESULTS / f"{time.strftime('%Y-%m-%d')}_{commit()}"


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
        "cpu": cpu(),
        "blas": blas_kernels(),
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
    """Write results/<name>.json with the machine description (the flat layout some benchmarks still use;
    `record` names a result by date and commit)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"machine": machine(), "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def record_path(name: str) -> Path:
    """Where a file `name` (with its suffix, e.g. a plot) of today's records at this commit goes."""
    folder = run_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def record(name: str, data: dict[str, Any]) -> Path:
    """Write `<results>/<YYYY-MM-DD>_<commit>/<name>.json`: `data` with the machine, the time, the commit and
    whether the checkout had changes not committed. A second record of `name` the same day at the same commit
    replaces the first."""
    path = record_path(f"{name}.json")
    payload = {"machine": machine(), "recorded": time.strftime("%Y-%m-%d %H:%M:%S"), "commit": commit(),
               "uncommitted_changes": _dirty(), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    return path


def labels(name: str) -> dict[str, Any]:
    """The labelled figures already in today's record `name` at this commit (a run adds its label to them)."""
    path = run_folder() / f"{name}.json"
    try:
        found = json.loads(path.read_text()).get("labels", {})
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def records(name: str, folder: Path | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every record of benchmark `name`, newest first: (where it is, its data). The dated folders of
    `folder` (default: the results folder), by date then by the time recorded, then `history.json`'s."""
    base = RESULTS if folder is None else folder
    dated: list[tuple[str, str, Path]] = []
    if base.is_dir():
        for sub in base.iterdir():
            path = sub / f"{name}.json"
            if sub.is_dir() and path.is_file():
                try:
                    when = str(json.loads(path.read_text()).get("recorded", ""))
                except ValueError:
                    continue
                dated.append((sub.name[:10], when, path))
    for _, _, path in sorted(dated, reverse=True):
        yield str(path), json.loads(path.read_text())
    history = base / HISTORY
    if history.is_file():
        kept = json.loads(history.read_text()).get("records", [])
        old = [r for r in kept if r.get("name") == name]
        for r in sorted(old, key=lambda r: str(r["data"].get("recorded", "")), reverse=True):
            yield f"{history}:{r['file']}", r["data"]


def find(name: str, kind: str | None = None, folder: Path | None = None,
         accept: Callable[[dict[str, Any]], bool] | None = None) -> tuple[str, dict[str, Any]] | None:
    """The newest record of `name` (from a CPU of `kind`, when given; `accept`ed, when given), or None."""
    for where, data in records(name, folder):
        if kind is not None and cpu_kind(data.get("machine")) != kind:
            continue
        if accept is not None and not accept(data):
            continue
        return where, data
    return None


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


def validation_child(script: Path, procs: int, quick: bool, repeats: int, sysmem: int) -> list[dict[str, Any]]:
    """Run a model validation script's child (`script --child P`) on P CPU processors of a Legate with
    `sysmem` MiB; its rows (the last line it prints, JSON)."""
    env = dict(os.environ)
    env["LEGATE_CONFIG"] = f"--cpus {procs} --gpus 0 --omps 0 --utility 1 --sysmem {sysmem}"
    args = [sys.executable, str(script), "--child", str(procs), "--repeats", str(repeats)]
    if quick:
        args.append("--quick")
    proc = subprocess.run(args, stdout=subprocess.PIPE, text=True, env=env, cwd=script.parent.parent)
    if proc.returncode != 0:
        raise SystemExit(f"child with {procs} cpus failed ({proc.returncode})")
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def model_error(ratio: float) -> float:
    """A prediction's error from its predicted/measured ratio: max(r, 1/r) - 1 (2x off either way is 1.0)."""
    return ratio - 1.0 if ratio >= 1 else 1.0 / ratio - 1.0
