"""The BLAS that matrix products on NumPy tiles run on: the CPU's own kernels where NumPy's do not use them.

NumPy's wheels bundle OpenBLAS built for many CPUs (DYNAMIC_ARCH), which
picks its kernels from the CPU's family and model. On a CPU it does not know
(measured here: AMD family 26, "AMD EPYC" in a virtual machine, with
AVX-512) it falls back to its Haswell kernels, which use 256-bit AVX2: one
core ran a 4096x4096x2048 float64 GEMM at 61 GFLOP/s with them and at 102
GFLOP/s with OpenBLAS's SkylakeX (AVX-512) kernels, same library, same
thread count (ctypes lets go of the interpreter lock for the call, as NumPy
does, so Legate's processor threads run their products at the same time).
OpenBLAS reads its choice (`OPENBLAS_CORETYPE`) once, when
the library is loaded, which for NumPy happens before distal is imported.

So where the CPU has AVX-512 and NumPy's OpenBLAS runs kernels without it,
distal loads its own instance of OpenBLAS (the `scipy-openblas64` package,
a dependency: the same library NumPy bundles, under another name, so it is
a second instance) with `OPENBLAS_CORETYPE=SkylakeX`, and the leaves' matrix
products of float32/float64 NumPy tiles call its `cblas_?gemm`
(`matmul`); everything else (other dtypes, strided tiles BLAS cannot take,
small products, overlapping output) runs `numpy.matmul` as before.
Innerprod's dot of long float vectors runs its `cblas_?dot` too (`dot`: the
AVX-512 one streams about 5 % faster); TTV's matrix-vector product stays on
NumPy (the Haswell `dgemv` streamed 22.6-24.0 GB/s per process, two at
once, the SkylakeX one 20.9-22.0).

`DISTAL_TILE_BLAS` chooses: `auto` (the default, as above), `numpy` (always
NumPy's BLAS), or an OpenBLAS core type (e.g. `SkylakeX`, `Haswell`) to load
distal's instance with, whatever the CPU says. The choice is made once per
process (`library()`); `describe()` says it in words, and plans' explain()
prints it. Legate's task threads limit this instance's threads as they do
NumPy's (`runtime/_blas.py` finds it through threadpoolctl).

>>> import numpy as np
>>> matmul(np.ones((64, 64)), np.ones((64, 64)))[0, 0]
np.float64(64.0)
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from distal.errors import DistalError

__all__ = ["TileBlas", "choice", "describe", "dot", "gemm", "library", "matmul", "short"]

# OpenBLAS core types whose kernels use AVX-512 (names as openblas_get_corename prints them, lower case)
_AVX512_CORES = frozenset({"skylakex", "cooperlake", "sapphirerapids", "zen4", "zen5"})
# what a CPU must report for OpenBLAS's SkylakeX kernels (its own check asks for these)
_AVX512_FLAGS = frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})
_AUTO_CORE = "SkylakeX"
# products smaller than this (m * n * k) go to numpy.matmul: a ctypes call costs a few microseconds
_MIN_WORK = 1 << 15
_MIN_DOT = 1 << 16  # elements; shorter dots go to NumPy
MIN_WORK, MIN_DOT = _MIN_WORK, _MIN_DOT  # public: where `gemm` and `dot` start running (explain names the routine)

_ROW, _NO_TRANS, _TRANS = 101, 111, 112
_I64, _PTR = ctypes.c_int64, ctypes.c_void_p


@dataclass(frozen=True)
class TileBlas:
    """distal's own OpenBLAS instance: its file, the core type it runs, its GEMM and dot entry points by dtype."""

    path: str
    core: str
    gemm: dict[Any, Any]
    dot: dict[Any, Any]
    set_threads: Any

    def __str__(self) -> str:
        return f"OpenBLAS {self.core} kernels ({Path(self.path).name}, distal's own instance)"


_lock = threading.Lock()
_loaded: list[TileBlas | None] = []  # [] until chosen; then [the instance or None]
_why: list[str] = []
_instances: dict[str, TileBlas] = {}  # by file: what this process loaded (it stays loaded)


def _cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux reports them (/proc/cpuinfo), empty where there is none."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def _numpy_blas_info() -> dict[str, Any]:
    """threadpoolctl's record of NumPy's BLAS (internal_api, architecture, num_threads, ...); {} when unknown."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        return {}
    package = Path(np.__file__).resolve().parent
    bundled = (str(package), str(package.parent / "numpy.libs"))  # a wheel's own copy
    mine = {str(Path(p).resolve()) for p in _instances}
    others = [info for info in threadpool_info()
              if info.get("user_api") == "blas" and str(Path(str(info.get("filepath", ""))).resolve()) not in mine]
    for info in others:
        if str(info.get("filepath", "")).startswith(bundled):
            return dict(info)
    return dict(others[0]) if others else {}  # NumPy linked against a BLAS of the system


def _numpy_blas() -> tuple[str, str]:
    """NumPy's BLAS: (internal API, core type), e.g. ("openblas", "Haswell"); ("", "") when unknown."""
    info = _numpy_blas_info()
    return str(info.get("internal_api", "")), str(info.get("architecture", ""))


def choice(setting: str | None = None, flags: frozenset[str] | None = None,
           numpy_blas: tuple[str, str] | None = None) -> tuple[str | None, str]:
    """The OpenBLAS core type distal's own instance should run (None: use NumPy's BLAS), and why.

    `setting` is `DISTAL_TILE_BLAS` (default `auto`); `flags` the CPU's
    feature flags; `numpy_blas` NumPy's (internal API, core type).

    >>> choice("auto", frozenset({"avx2"}), ("openblas", "Haswell"))[0] is None
    True
    >>> choice("auto", _AVX512_FLAGS | {"avx2"}, ("openblas", "Haswell"))[0]
    'SkylakeX'
    """
    setting = (os.environ.get("DISTAL_TILE_BLAS", "auto") if setting is None else setting).strip()
    if setting.lower() == "numpy":
        return None, "NumPy's BLAS (DISTAL_TILE_BLAS=numpy)"
    if setting.lower() != "auto":
        if not setting.isidentifier():
            raise DistalError(f"expected DISTAL_TILE_BLAS to be auto, numpy or an OpenBLAS core type such as "
                              f"SkylakeX, but found {setting!r}")
        return setting, f"DISTAL_TILE_BLAS={setting}"
    api, core = _numpy_blas() if numpy_blas is None else numpy_blas
    flags = _cpu_flags() if flags is None else flags
    if not _AVX512_FLAGS <= flags:
        return None, "NumPy's BLAS (the CPU has no AVX-512)"
    if api != "openblas":
        return None, f"NumPy's BLAS ({api or 'unknown'}, not OpenBLAS: its own kernel choice is kept)"
    if core.lower() in _AVX512_CORES:
        return None, f"NumPy's BLAS (its OpenBLAS already runs {core} kernels)"
    return _AUTO_CORE, f"the CPU has AVX-512 and NumPy's OpenBLAS runs {core or 'unknown'} kernels"


def _library_file() -> str | None:
    """The path of scipy-openblas64's shared library, found without importing the package (importing loads it)."""
    spec = importlib.util.find_spec("scipy_openblas64")
    if spec is None or spec.origin is None:
        return None
    lib_dir = Path(spec.origin).parent / "lib"
    files = sorted(lib_dir.glob("libscipy_openblas64_*.so*")) if lib_dir.is_dir() else []
    return str(files[0]) if files else None


def _load(core: str) -> TileBlas | str:
    """Load distal's OpenBLAS instance running `core`'s kernels; a reason string where it cannot."""
    path = _library_file()
    if path is None:
        return "NumPy's BLAS (the scipy-openblas64 package is not installed)"
    if path in _instances:  # loaded by an earlier choice (OpenBLAS picks its kernels once per load)
        mine = _instances[path]
        return mine if mine.core.lower() == core.lower() else \
            f"NumPy's BLAS (distal's OpenBLAS was loaded with {mine.core} kernels, not {core})"
    for loaded in _loaded_paths():
        if Path(loaded).resolve() == Path(path).resolve():
            return "NumPy's BLAS (scipy-openblas64's library was already loaded by another package)"
    saved = os.environ.get("OPENBLAS_CORETYPE")
    os.environ["OPENBLAS_CORETYPE"] = core  # read by OpenBLAS once, as the library loads
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        return f"NumPy's BLAS (loading {path} failed: {e})"
    finally:
        if saved is None:
            del os.environ["OPENBLAS_CORETYPE"]
        else:
            os.environ["OPENBLAS_CORETYPE"] = saved
    corename = lib.scipy_openblas_get_corename64_
    corename.restype = ctypes.c_char_p
    got = corename().decode()
    if got.lower() != core.lower():
        return f"NumPy's BLAS (OpenBLAS ran {got} kernels where {core} was asked for)"
    gemm = {}
    for dtype, name, scalar in ((np.dtype(np.float64), "dgemm", ctypes.c_double),
                                (np.dtype(np.float32), "sgemm", ctypes.c_float)):
        fn = getattr(lib, f"scipy_cblas_{name}64_")
        fn.restype = None
        fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, _I64, _I64, _I64, scalar, _PTR, _I64, _PTR, _I64,
                       scalar, _PTR, _I64]
        gemm[dtype] = fn
    dot = {}
    for dtype, name, scalar in ((np.dtype(np.float64), "ddot", ctypes.c_double),
                                (np.dtype(np.float32), "sdot", ctypes.c_float)):
        fn = getattr(lib, f"scipy_cblas_{name}64_")
        fn.restype = scalar
        fn.argtypes = [_I64, _PTR, _I64, _PTR, _I64]
        dot[dtype] = fn
    set_threads = lib.scipy_openblas_set_num_threads64_
    set_threads.argtypes = [ctypes.c_int]
    threads = _numpy_blas_info().get("num_threads")
    if isinstance(threads, int) and threads >= 1:
        set_threads(threads)  # as many threads as NumPy's BLAS runs now (1 where a limit holds)
    _instances[path] = TileBlas(path, got, gemm, dot, set_threads)
    return _instances[path]


def _loaded_paths() -> list[str]:
    """The shared libraries loaded in this process (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="ascii", errors="replace") as f:
            return sorted({line.split()[-1] for line in f if "libscipy_openblas64_" in line and "/" in line})
    except OSError:
        return []


def library() -> TileBlas | None:
    """distal's own OpenBLAS instance, loaded on the first call where `choice()` asks for one; None: NumPy's BLAS."""
    if _loaded:
        return _loaded[0]
    unmet = None
    with _lock:
        if not _loaded:
            core, why = choice()
            found = _load(core) if core is not None else why
            if isinstance(found, TileBlas):
                _why.append(why)
                _loaded.append(found)
            else:
                if core is not None and why.startswith("DISTAL_TILE_BLAS="):  # asked for by name, not honoured
                    unmet = f"{why} was not honoured: {found}"
                _why.append(found)
                _loaded.append(None)
    if unmet is not None:
        warnings.warn(unmet, RuntimeWarning, stacklevel=2)
    return _loaded[0]


def describe() -> str:
    """What matrix products of NumPy tiles run on, and why, in words (explain() prints it)."""
    lib = library()
    if lib is None:
        return _why[0]
    return f"{lib} ({_why[0]})"


def short(routine: str = "gemm") -> str:
    """What `gemm` (matrix products) or `dot` of NumPy tiles run on, in a few words, with the size below
    which NumPy runs them, e.g. "OpenBLAS SkylakeX kernels (distal's) for float32/float64 from 32768
    multiply-adds, NumPy's BLAS otherwise", or "NumPy's BLAS"."""
    lib = library()
    if lib is None:
        return "NumPy's BLAS"
    least = f"{_MIN_WORK} multiply-adds" if routine == "gemm" else f"{_MIN_DOT} elements"
    return f"OpenBLAS {lib.core} kernels (distal's) for float32/float64 from {least}, NumPy's BLAS otherwise"


def _layout(x: np.ndarray) -> tuple[int, int] | None:
    """How BLAS reads the 2-D array `x`: (transpose flag, leading dimension), or None where it cannot."""
    rows, cols = x.shape
    s0, s1 = x.strides
    size = x.itemsize
    if (s1 == size or cols == 1) and s0 > 0 and s0 % size == 0:
        ld = s0 // size if rows > 1 else cols
        if ld >= cols:
            return _NO_TRANS, ld
    if (s0 == size or rows == 1) and s1 > 0 and s1 % size == 0:
        ld = s1 // size if cols > 1 else rows
        if ld >= rows:
            return _TRANS, ld
    return None


def gemm(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None, accumulate: bool = False) -> np.ndarray | None:
    """`a @ b` of two NumPy matrices on distal's own OpenBLAS: into `out` (`=`), added to it, or as a new array.

    Runs where it can: `library()` is loaded, operands and output are
    float32/float64 of one dtype in layouts BLAS reads, the product has at
    least `_MIN_WORK` multiply-adds, and `out` overlaps neither operand;
    `out += a @ b` is then one GEMM with beta = 1. Returns the result, or
    None where it did not run (the caller runs NumPy).
    """
    lib = library()
    if lib is None or a.ndim != 2 or b.ndim != 2:
        return None
    m, k = a.shape
    n = b.shape[1]
    if m * n * k < _MIN_WORK or a.dtype != b.dtype or a.dtype not in lib.gemm or b.shape[0] != k:
        return None
    if out is None:
        out, accumulate = np.empty((m, n), dtype=a.dtype), False
    elif out.dtype != a.dtype or out.shape != (m, n) or np.may_share_memory(out, a) or np.may_share_memory(out, b):
        return None
    la, lb, lo = _layout(a), _layout(b), _layout(out)
    if la is None or lb is None or lo is None or lo[0] != _NO_TRANS:
        return None
    lib.gemm[a.dtype](_ROW, la[0], lb[0], m, n, k, 1.0, a.ctypes.data, la[1], b.ctypes.data, lb[1],
                      1.0 if accumulate else 0.0, out.ctypes.data, lo[1])
    return out


def dot(x: Any, y: Any, xp: Any = np) -> Any:
    """`xp.dot(x, y)` of two vectors, on distal's own OpenBLAS (`?dot`) where it can: float32/float64 NumPy
    vectors of one dtype with positive strides BLAS reads, at least `_MIN_DOT` elements. Its AVX-512 dot
    streams about 5 % faster than the Haswell one (two processes at once: 24.5-26.3 GB/s each vs 22.7-25.1).

    >>> dot(np.ones(1 << 17), np.ones(1 << 17))
    np.float64(131072.0)
    """
    lib = library()
    if (lib is not None and xp is np and isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.ndim == 1
            and y.ndim == 1 and x.size == y.size and x.size >= _MIN_DOT and x.dtype == y.dtype and x.dtype in lib.dot):
        sx, sy = x.strides[0], y.strides[0]
        if sx > 0 and sy > 0 and sx % x.itemsize == 0 and sy % y.itemsize == 0:
            return x.dtype.type(lib.dot[x.dtype](x.size, x.ctypes.data, sx // x.itemsize, y.ctypes.data,
                                                 sy // y.itemsize))
    return xp.dot(x, y)


def matmul(a: Any, b: Any, xp: Any = np) -> Any:
    """`xp.matmul(a, b)` of two matrices, on distal's own OpenBLAS where `gemm` runs it.

    >>> matmul(np.ones((64, 64)), np.ones((64, 64)))[0, 0]
    np.float64(64.0)
    """
    if xp is np and isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        done = gemm(a, b)
        if done is not None:
            return done
    return xp.matmul(a, b)
