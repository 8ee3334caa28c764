"""The memory a plan's peak is compared against on this machine: Legate's system memory, as configured.

Legate's CPU processors of one process share its system memory, `--sysmem`
MiB in `LEGATE_CONFIG`. When the user gives none, distal's runtime starts
Legate with half the memory the operating system reports available (at least
256 MiB, at most 64 GiB, `runtime/_config.py`) and one CPU processor per
core. This module works that figure out without importing Legate, so that
`explain()` compares a plan with the memory its run will really have, and
says where the figure comes from.

>>> configured_memory({"LEGATE_CONFIG": "--cpus 2 --sysmem 3000 --utility 1"}, cores=8)
ConfiguredMemory(total=3145728000, processors=2, source="Legate's --sysmem 3000 MiB (LEGATE_CONFIG)")
>>> configured_memory({}, cores=2, available_mb=8000).source
"distal's default --sysmem 4000 MiB (half the available memory)"
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ConfiguredMemory", "configured_memory"]

_MIB = 1 << 20
# as runtime/_config.py: half the available memory, within bounds
_SHARE, _MIN_MB, _MAX_MB = 0.5, 256, 64 * 1024


@dataclass(frozen=True, slots=True)
class ConfiguredMemory:
    """Legate's system memory (bytes), the CPU processors sharing it, and where the figure comes from."""

    total: int
    processors: int
    source: str

    @property
    def per_processor(self) -> int:
        return self.total // max(self.processors, 1)


def _flag(tokens: list[str], name: str) -> str | None:
    for n, tok in enumerate(tokens):
        if tok == name and n + 1 < len(tokens):
            return tokens[n + 1]
        if tok.startswith(name + "="):
            return tok.split("=", 1)[1]
    return None


def _available_mb() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def configured_memory(env: Mapping[str, str] | None = None, cores: int | None = None,
                      available_mb: int | None = None) -> ConfiguredMemory | None:
    """Legate's system memory as `env` (default: `os.environ`) configures it; None when it cannot be told.

    `--sysmem` in `LEGATE_CONFIG` wins; without `LEGATE_CONFIG`, distal's
    default (half the available memory, 256 MiB to 64 GiB); a `LEGATE_CONFIG`
    without `--sysmem` leaves Legate's own default, which is not known before
    Legate starts (None). The processors sharing it are
    `--cpus` of `LEGATE_CONFIG`, else one per core.
    """
    env = os.environ if env is None else env
    tokens = env.get("LEGATE_CONFIG", "").split()
    ncores = cores if cores is not None else _cores()
    cpus_text = _flag(tokens, "--cpus")
    cpus = int(cpus_text) if cpus_text is not None and cpus_text.isdigit() and int(cpus_text) > 0 else max(ncores, 1)
    sysmem = _flag(tokens, "--sysmem")
    if sysmem is not None and sysmem.isdigit() and int(sysmem) > 0:
        return ConfiguredMemory(int(sysmem) * _MIB, cpus, f"Legate's --sysmem {int(sysmem)} MiB (LEGATE_CONFIG)")
    if "LEGATE_CONFIG" in env:  # the user's configuration without --sysmem: Legate's own default, not known here
        return None
    avail = available_mb if available_mb is not None else _available_mb()
    if avail is None:
        return None
    mb = max(_MIN_MB, min(_MAX_MB, int(avail * _SHARE)))
    return ConfiguredMemory(mb * _MIB, cpus, f"distal's default --sysmem {mb} MiB (half the available memory)")
