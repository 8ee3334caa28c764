"""The memory a plan's peak is compared against on this machine: Legate's system memory, as configured.

Legate's CPU processors of one process share its system memory, `--sysmem`
MiB in `LEGATE_CONFIG`. When the user gives none, distal's runtime starts
Legate with half the memory the operating system reports available (at least
256 MiB, at most 64 GiB, `distal.host.default_sysmem_mb`) and one CPU processor per
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

from distal.host import available_mb as host_available_mb
from distal.host import config_flag, configured_processors, default_sysmem_mb

__all__ = ["ConfiguredMemory", "configured_memory"]

_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class ConfiguredMemory:
    """Legate's system memory (bytes), the CPU processors sharing it, and where the figure comes from."""

    total: int
    processors: int
    source: str

    @property
    def per_processor(self) -> int:
        return self.total // max(self.processors, 1)


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
    cpus = configured_processors("cpu", env, host_cores=cores)
    sysmem = config_flag("--sysmem", env)
    if sysmem is not None and sysmem.isdigit() and int(sysmem) > 0:
        return ConfiguredMemory(int(sysmem) * _MIB, cpus, f"Legate's --sysmem {int(sysmem)} MiB (LEGATE_CONFIG)")
    if "LEGATE_CONFIG" in env:  # the user's configuration without --sysmem: Legate's own default, not known here
        return None
    avail = available_mb if available_mb is not None else host_available_mb()
    if avail is None:
        return None
    mb = default_sysmem_mb(avail)
    return ConfiguredMemory(mb * _MIB, cpus, f"distal's default --sysmem {mb} MiB (half the available memory)")
