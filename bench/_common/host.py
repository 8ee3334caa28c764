"""The machine a benchmark runs on: CPU, vector extensions, BLAS kernels, memory, NumPy's BLAS threads.

`machine()` is the description every record keeps. `cpu()` and `cpu_kind()` say which CPUs are alike
enough to compare ratios between (the same vendor and family and the same vector extensions, so that every
library picks the same kernels). `meminfo_kib` is the benchmarks' one reader of /proc/meminfo (distal's
public `runtime.host_info()` gives MemAvailable only, not MemTotal).
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# CPU flags (as Linux names them) that decide which kernels BLAS and NumPy pick
VECTOR_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl",
                "avx512ifma", "avx512vbmi", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
                "amx_int8", "asimd", "sve", "sve2")
# NumPy with its OpenBLAS told to run the AVX-512 kernels distal's tiles run (distal.tile_blas): measured
# too where distal chooses them, so that what the kernels give and what distal gives are told apart
NUMPY_AVX512 = "numpy_avx512"


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


def meminfo_kib(field: str) -> int | None:
    """A field of /proc/meminfo in KiB (`MemTotal`, `MemAvailable`, ...); None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_mib() -> float | None:
    """MemAvailable of this machine in MiB (None where /proc/meminfo is missing)."""
    found = meminfo_kib("MemAvailable")
    return None if found is None else found / 1024


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
    total = meminfo_kib("MemTotal")
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
        "memory_gib": None if total is None else round(total / 2**20, 1),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": versions,
        "legate_config": os.environ.get("LEGATE_CONFIG"),
    }


def numpy_avx512_applies() -> bool:
    """Whether distal's tiles run AVX-512 kernels NumPy's OpenBLAS does not pick by itself (then the
    higher-order benchmarks measure NUMPY_AVX512 too)."""
    from distal import tile_blas

    return tile_blas.choice()[0] is not None


def _numpy_openblas_paths() -> list[str]:
    """NumPy's OpenBLAS libraries in this process (under numpy's folder, or scipy_openblas); cuPyNumeric
    loads one of its own, which is left alone."""
    paths: list[str] = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1] if "/" in line else ""
        if "openblas" in path.lower() and ("numpy" in path or "scipy_openblas" in path) and path not in paths:
            paths.append(path)
    return paths


def openblas_threads(threads: int | None = None) -> int | None:
    """Set (when given) and return the thread count of NumPy's OpenBLAS (None where none is loaded).

    It reads /proc/self/maps on every call: around a timed call, use `numpy_threads()` instead.
    """
    found: int | None = None
    for path in sorted(_numpy_openblas_paths()):
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas", "openblas"):
            for suffix in ("64_", ""):
                setter = getattr(lib, f"{name}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{name}_get_num_threads{suffix}", None)
                if getter is None:
                    continue
                if threads is not None and setter is not None:
                    setter(ctypes.c_int(threads))
                if found is None:
                    found = int(getter())
                break
            else:
                continue
            break
    return found


def numpy_threads() -> Callable[[int], None]:
    """A setter of NumPy's OpenBLAS thread count, looked up once (`openblas_threads` reads /proc/self/maps on
    every call, which would count against NumPy in a small run). Sets 1 thread to begin with."""
    openblas_threads(1)
    calls = []
    for path in _numpy_openblas_paths():
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, name, None)
            if fn is not None:
                calls.append(fn)
                break

    def set_threads(n: int) -> None:
        for fn in calls:
            fn(ctypes.c_int(n))

    return set_threads
