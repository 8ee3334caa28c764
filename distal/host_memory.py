"""The host's memory, as the operating system reports it: checks before an array is made outside Legate.

`check_host_allocation` refuses, with `OutOfMemory`, an array that cannot
fit in the memory the operating system reports available (`MemAvailable` of
/proc/meminfo): a copy of a user's data (`Tensor.from_array`), or an input
without data made as zeros. It reads nothing of plans or of Legate, so the
notation's `Tensor` calls it from a low layer. Legate's own memory is checked
by `distal.lower.memory`.

>>> check_host_allocation("a small array", (4, 4), "float64", available=1 << 20)
>>> gib_text(3 << 29), gib_text(5 << 20)
('1.5 GiB', '5.0 MiB')
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from distal.errors import OutOfMemory

__all__ = ["available_bytes", "check_host_allocation", "gib_text"]

_MIB = 1 << 20


def gib_text(n: float) -> str:
    """Bytes in GiB from 1 GiB up, else in MiB, as the memory checks word them."""
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    return f"{n / _MIB:.1f} MiB"


def available_bytes() -> int | None:
    """The memory the operating system reports available (None where /proc/meminfo says nothing)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_host_allocation(what: str, shape: Any, dtype: Any, available: int | None = None) -> None:
    """Raise `OutOfMemory` when an array of `shape` and `dtype` cannot fit in the host's available memory.

    `what` names the allocation (e.g. "a copy of B's data"); `available`
    defaults to what the operating system reports (MemAvailable).
    """
    try:
        need = math.prod(int(n) for n in shape) * np.dtype(dtype).itemsize
    except (TypeError, ValueError):
        return
    limit = available_bytes() if available is None else available
    if limit is None or need <= limit:
        return
    raise OutOfMemory(
        f"expected {what} ({list(shape)} {np.dtype(dtype)}) to fit in the host's available memory "
        f"of {gib_text(limit)}, but it needs {gib_text(need)}; nothing was allocated"
    )
