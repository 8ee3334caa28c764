"""The host distal runs on, and Legate's configuration of it, read without starting Legate.

One place for what several layers ask before (or without) Legate: the cores
this process may run on, /proc/meminfo's figures, the CPU's model, a flag of
`LEGATE_CONFIG`, how many processors of a kind Legate is configured to run,
and the system memory distal gives Legate when the user sets none (half the
available memory, 256 MiB to 64 GiB).

`check_host_allocation` refuses, with `OutOfMemory`, an array that cannot
fit in the memory the operating system reports available (`MemAvailable`):
a copy of a user's data (`Tensor.from_array`), an input without data made
as zeros, or an eager run's output. It reads nothing of plans or of Legate,
so the notation's `Tensor` calls it from a low layer. Legate's own memory is
checked by `distal.lower.memory`. With several Legate ranks every rank must
decide alike (a rank that refuses alone leaves the others waiting for its
launches forever), and each reads its own, different figure: the runtime
then hands this module rank 0's figures (`share_rank0_available`), and every
rank checks against those.

>>> config_flag("--sysmem", {"LEGATE_CONFIG": "--cpus 2 --sysmem=3000"})
'3000'
>>> configured_processors("cpu", {"LEGATE_CONFIG": "--cpus 3 --gpus 1"}), configured_processors("gpu", {})
(3, 1)
>>> default_sysmem_mb(8000), default_sysmem_mb(100)
(4000, 256)
>>> check_host_allocation("a small array", (4, 4), "float64", available=1 << 20)
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from distal._text import bytes_text
from distal.errors import DistalError, OutOfMemory

__all__ = ["RANK0_ASKED_FROM", "SYSMEM_MAX_MB", "SYSMEM_MIN_MB", "SYSMEM_SHARE", "available_bytes", "available_mb",
           "check_host_allocation", "config_flag", "configured_processors", "cores", "cpu_model", "default_sysmem_mb",
           "meminfo_kib", "meminfo_mb", "private_dir", "share_rank0_available", "trusted_file"]

# Legate's pool of system memory when the user sets none: half of what is available, within bounds.
SYSMEM_SHARE = 0.5
SYSMEM_MIN_MB = 256
SYSMEM_MAX_MB = 64 * 1024


def cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def meminfo_kib(field: str) -> int | None:
    """A field of /proc/meminfo (e.g. "MemAvailable") in KiB, as Linux writes it; None where there is none."""
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            try:
                return int(line.split()[1])
            except (IndexError, ValueError):
                return None
    return None


def meminfo_mb(field: str) -> int | None:
    """A field of /proc/meminfo in MiB; None where there is none."""
    found = meminfo_kib(field)
    return None if found is None else found // 1024


def available_bytes() -> int | None:
    """The memory the operating system reports available (MemAvailable; None where /proc/meminfo says nothing)."""
    found = meminfo_kib("MemAvailable")
    return None if found is None else found * 1024


def available_mb() -> int | None:
    """The memory the operating system reports available, in MiB (MemAvailable, else the free pages)."""
    found = meminfo_mb("MemAvailable")
    if found is not None:
        return found
    try:  # no /proc/meminfo: the free pages
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) // (1 << 20)
    except (ValueError, OSError, AttributeError):
        return None


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), or "unknown"."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def config_flag(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The value of flag `name` (e.g. "--cpus") in `LEGATE_CONFIG` of `env` (default `os.environ`), written
    `--cpus 2` or `--cpus=2`; None where it is not set."""
    tokens = (os.environ if env is None else env).get("LEGATE_CONFIG", "").split()
    for n, token in enumerate(tokens):
        if token == name and n + 1 < len(tokens):
            return tokens[n + 1]
        if token.startswith(name + "="):
            return token.split("=", 1)[1]
    return None


def configured_processors(kind: str = "cpu", env: Mapping[str, str] | None = None, host_cores: int | None = None
                          ) -> int:
    """How many processors of `kind` Legate is configured to run (`--cpus`/`--gpus`/`--omps` of
    `LEGATE_CONFIG`); without a positive count, distal's default: one CPU per core (`host_cores`, default
    this process's), one processor of another kind."""
    value = config_flag(f"--{kind}s", env)
    if value is not None and value.isdigit() and int(value) > 0:
        return int(value)
    if kind != "cpu":
        return 1
    return max(host_cores, 1) if host_cores is not None else cores()


def default_sysmem_mb(available: int) -> int:
    """The system memory (MiB) distal gives Legate when the user sets none, of `available` MiB."""
    return max(SYSMEM_MIN_MB, min(SYSMEM_MAX_MB, int(available * SYSMEM_SHARE)))


RANK0_ASKED_FROM = 0.25
"""With several ranks, only an array of at least this share of rank 0's available memory at start-up asks rank 0
for its figure now (a Legate task and two waits between the ranks); a smaller one passes on every rank."""

# With several Legate ranks: a function giving rank 0's available memory now (bytes; None: not known) on every
# rank, and rank 0's figure at start-up. Set by the runtime once Legate runs several ranks; the function runs a
# task that every rank issues, so it is called at the same point of the program on every rank, as
# `check_host_allocation`'s callers are (every rank runs the program).
_rank0_available: Callable[[], int | None] | None = None
_rank0_at_start: int | None = None


def share_rank0_available(reader: Callable[[], int | None] | None, at_start: int | None = None) -> None:
    """From now on, `check_host_allocation` decides by rank 0's figures, the same on every rank, instead of this
    process's: arrays under `RANK0_ASKED_FROM` of `at_start` (rank 0's available memory when Legate started;
    None: not known, nothing is checked) pass, larger ones are checked against `reader()` (rank 0's available
    memory now). None goes back to this process's figure. The runtime calls it when Legate starts with several
    ranks."""
    global _rank0_available, _rank0_at_start
    _rank0_available, _rank0_at_start = reader, at_start


def check_host_allocation(what: str, shape: Any, dtype: Any, available: int | None = None) -> None:
    """Raise `OutOfMemory` when an array of `shape` and `dtype` cannot fit in the host's available memory.

    `what` names the allocation (e.g. "a copy of B's data"); `available`
    defaults to what the operating system reports (MemAvailable): this
    process's figure, or with several Legate ranks rank 0's
    (`share_rank0_available`), so that every rank refuses or none does
    (arrays under `RANK0_ASKED_FROM` of rank 0's figure at start-up are then
    not checked).
    """
    try:
        need = math.prod(int(n) for n in shape) * np.dtype(dtype).itemsize
    except (TypeError, ValueError):
        return
    if available is not None:
        limit: int | None = available
    elif _rank0_available is None:
        limit = available_bytes()
    elif _rank0_at_start is None or need < RANK0_ASKED_FROM * _rank0_at_start:
        return
    else:
        limit = _rank0_available()
    if limit is None or need <= limit:
        return
    shared = " (rank 0's figure, which every rank checks against)" if available is None and _rank0_available else ""
    raise OutOfMemory(
        f"expected {what} ({list(shape)} {np.dtype(dtype)}) to fit in the host's available memory "
        f"of {bytes_text(limit)}{shared}, but it needs {bytes_text(need)}; nothing was allocated"
    )


def private_dir(path: Path, what: str, why: str, remedy: str, error: type[DistalError] = DistalError) -> Path:
    """`path` as a directory that only this user can write; made (0700) where missing. Returns `path`.

    Raises `error` where it is not a directory or another user owns it (the
    checks follow a symbolic link: its target is what is used); the message
    names `what` the directory is, `why` distal will not use another user's,
    and the `remedy`. A directory of the user's own that group or others may
    write is closed to them (its other permission bits are kept). OSError
    where it cannot be made (a read-only home). Every cache distal loads code
    or trusts figures from (the driver stand-in, the machine model) goes
    through this and `trusted_file` (issue 32: a directory planted by another
    user in a shared $TMPDIR).
    """
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    found = path.stat()
    uid = os.getuid()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != uid:
        kind = "a directory" if stat.S_ISDIR(found.st_mode) else "something other than a directory"
        raise error(f"expected {what} {path} to be a directory of your own (uid {uid}), but found {kind} owned by "
                    f"uid {found.st_uid}; {why}. Remove it, or set {remedy} to a directory of your own")
    if found.st_mode & 0o022:
        os.chmod(path, stat.S_IMODE(found.st_mode) & ~0o022)
    return path


def trusted_file(path: Path) -> bool:
    """Whether `path` is a regular file (not a link) of this user's that group and others cannot write."""
    try:
        found = path.lstat()
    except OSError:
        return False
    return stat.S_ISREG(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o022
