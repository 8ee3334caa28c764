"""Keep BLAS single-threaded inside Legate tasks.

With one rank, Legate runs Python tasks on its CPU processor threads inside
this very process, so every processor calling a multi-threaded BLAS would
oversubscribe the cores. `OPENBLAS_NUM_THREADS` only takes effect when an
OpenBLAS is loaded; NumPy's usually is already, so its thread count is also
set through the library's own entry point.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

__all__ = ["limit_blas_threads"]

_SETTERS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def _loaded_openblas() -> list[str]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    found: list[str] = []
    for line in maps.splitlines():
        path = line.split()[-1] if line.split() else ""
        if "openblas" in path.lower() and path.startswith("/") and path not in found:
            found.append(path)
    return found


def limit_blas_threads(threads: int = 1) -> bool:
    """Default BLAS to `threads` threads unless the user set OPENBLAS_NUM_THREADS.

    Sets the environment variable for libraries loaded later and calls the
    setter of every OpenBLAS already loaded. Returns False (and changes
    nothing) when the user chose a value.
    """
    if "OPENBLAS_NUM_THREADS" in os.environ:
        return False
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    for path in _loaded_openblas():
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(library, name, None)
            if setter is not None:
                setter(ctypes.c_int(threads))
                break
    return True
