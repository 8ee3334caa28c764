"""Embedded Legate defaults sized to the machine distal runs on.

Pure functions of what the host reports (`distal.host` reads it), so they can
be tested without starting Legate. `_start.py` applies them to `os.environ`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from distal.host import SYSMEM_MIN_MB, available_mb, cores, cpu_model, default_sysmem_mb

__all__ = ["HostInfo", "default_config", "host_info", "local_ranks", "quiet_gpu_logging"]

# What launchers tell each process about the ranks on its host: Open MPI, MPICH/Hydra, Slurm ("2(x3)" per node).
_LOCAL_RANKS = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE")


@dataclass(frozen=True, slots=True)
class HostInfo:
    """The host as distal sees it before Legate starts."""

    cores: int
    available_mb: int
    cpu_model: str
    local_ranks: int = 1  # processes of this program on this host (a launcher's several ranks)
    machine_cores: int = 0  # cores of the host (0: as many as `cores`)


def local_ranks(env: Mapping[str, str] | None = None) -> int:
    """How many ranks of this program run on this host, as the launcher says (`mpirun`, `srun`); 1 otherwise.

    >>> local_ranks({"OMPI_COMM_WORLD_LOCAL_SIZE": "2"}), local_ranks({"SLURM_NTASKS_PER_NODE": "4(x2)"})
    (2, 4)
    """
    values = os.environ if env is None else env
    for name in _LOCAL_RANKS:
        found = re.match(r"\s*(\d+)", values.get(name, ""))
        if found and int(found.group(1)) > 0:
            return int(found.group(1))
    return 1


def host_info() -> HostInfo:
    """Cores this process may run on, available memory in MiB, the CPU model, and the ranks on this host."""
    available = available_mb()
    return HostInfo(cores=cores(), available_mb=available if available is not None else 2 * SYSMEM_MIN_MB,
                    cpu_model=cpu_model(), local_ranks=local_ranks(), machine_cores=os.cpu_count() or 0)


def default_config(host: HostInfo, gpus: int, shim: bool = False) -> str:
    """The LEGATE_CONFIG distal uses when the user gave none.

    Every core becomes a CPU processor, one utility thread serves the
    runtime, half the available memory (at least 256 MiB, at most 64 GiB)
    is Legate's system memory, and `gpus` GPUs are used. With several ranks
    on the host (`HostInfo.local_ranks`) each takes its share of the memory,
    and of the cores unless the launcher bound it to fewer than all of them. Realm's warning
    that the CPU and utility threads outnumber the cores is silenced, and
    with the driver stand-in (`shim`) so is its report that no GPU exists.

    >>> default_config(HostInfo(cores=4, available_mb=8000, cpu_model="x"), gpus=0)
    '--cpus 4 --gpus 0 --omps 0 --utility 1 --sysmem 4000 --logging threads=error'
    """
    share = max(host.local_ranks, 1)
    sysmem = default_sysmem_mb(host.available_mb // share)
    bound = 0 < host.cores < host.machine_cores  # the launcher gave this rank its own cores
    cpus = max(1, host.cores if bound else host.cores // share)
    logging = "gpu=none,threads=error" if shim else "threads=error"
    return f"--cpus {cpus} --gpus {gpus} --omps 0 --utility 1 --sysmem {sysmem} --logging {logging}"


def quiet_gpu_logging(config: str) -> str:
    """`config` with Realm's GPU logger silenced (for the driver stand-in), the user's other settings kept.

    The stand-in reports "no device", which Realm's GPU module prints as a
    warning and an error on stdout. An existing `--logging` value gains
    `gpu=none` unless it sets the `gpu` logger itself; otherwise the flag is added.

    >>> quiet_gpu_logging("--cpus 2 --logging legate=info")
    '--cpus 2 --logging legate=info,gpu=none'
    >>> quiet_gpu_logging("--cpus 2")
    '--cpus 2 --logging gpu=none'
    """
    import shlex

    words = shlex.split(config)
    for n, word in enumerate(words):
        value: str | None = None
        if word == "--logging" and n + 1 < len(words):
            value, at, prefix = words[n + 1], n + 1, ""
        elif word.startswith("--logging="):
            value, at, prefix = word.split("=", 1)[1], n, "--logging="
        if value is None:
            continue
        if any(part.split("=", 1)[0].strip() == "gpu" for part in value.split(",")):
            return config
        words[at] = f"{prefix}{value},gpu=none" if value else f"{prefix}gpu=none"
        return shlex.join(words)
    return f"{config} --logging gpu=none".strip()
