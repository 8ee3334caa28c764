"""The differences between the Legate releases distal runs on, 26.1 and 26.6, each named once.

distal is written against legate 26.6 (its pip wheels run one process: they
have no networking) and runs on legate 26.1 too (the newest pip wheels with
networking, for several ranks). Every place in distal that depends on which
release, or how many ranks, runs asks this module; nothing else looks at
Legate's version. The differences met so far:

- `Runtime.realm_config()` (26.6 only) reports Legate's system memory per
  rank. 26.1 has no such method: the memory is read from LEGATE_CONFIG's
  `--sysmem`, which Legate itself reads (`sysmem_bytes`).
- On 26.1 with more than one rank, `Runtime.issue_copy` of a partitioned
  store aborts the process in Legate's mapper ("Could not find ProcessorKind
  0 in default store targets", base_mapper.cc:76); a copy written as a task
  works. distal copies store to store by a task whenever Legate runs several
  ranks, on either release (`copies_by_task`).
- 26.1 aborts the process when a 0-d buffer is attached
  (`create_store_from_buffer` with shape (): "assertion failed: ndim > 0"
  in `generate_legion_dims`, mapping.cc:122); 26.6 attaches it. distal
  attaches none on either release: a 0-d store is one element and a 0-d
  view of it (`_make.from_numpy`), read back through a 1-d view of it
  (`_store.read_back`).
- `ManualTask.add_input/add_output/add_reduction` gained an optional
  `is_key_partition` in 26.6; distal does not pass it.
- The 26.1 wheels are built for CUDA 12, the 26.6 wheels for CUDA 13 (the
  `gpu` extra's CuPy is for 26.6); cuPyNumeric 26.1 needs numpy < 2.4.
"""

from __future__ import annotations

from typing import Any

from distal.host import config_flag

__all__ = ["LEGATE_DEFAULT_SYSMEM_MB", "copies_by_task", "has_realm_config", "rank_count", "sysmem_bytes"]

LEGATE_DEFAULT_SYSMEM_MB = 256
"""The system memory (MiB) Legate gives each rank when LEGATE_CONFIG sets no `--sysmem` and automatic
configuration is off (26.6's `realm_config().sysmem` reports 256 MiB then)."""

_MIB = 1 << 20


def has_realm_config(runtime: Any) -> bool:
    """Whether this Legate reports its Realm configuration (`Runtime.realm_config()`, 26.6 on)."""
    return callable(getattr(runtime, "realm_config", None))


def sysmem_bytes(runtime: Any, env: dict[str, str] | None = None) -> int:
    """Legate's system memory per rank, in bytes.

    Where the runtime reports it (26.6), its report. Otherwise (26.1) the
    `--sysmem` (MiB) of LEGATE_CONFIG in `env` (default `os.environ`), which is
    what Legate was started with; without that flag, Legate's own default
    (`LEGATE_DEFAULT_SYSMEM_MB`). Legate's automatic configuration (on only
    where a real driver runs and the user asked for it) may choose more: the
    checks then err on the safe side.

    >>> class Legate261:  # a runtime without realm_config
    ...     pass
    >>> sysmem_bytes(Legate261(), {"LEGATE_CONFIG": "--cpus 1 --sysmem 512"}) >> 20
    512
    >>> sysmem_bytes(Legate261(), {}) >> 20
    256
    """
    if has_realm_config(runtime):
        reported = runtime.realm_config().sysmem
        if reported is not None and int(reported) > 0:
            return int(reported)
    value = config_flag("--sysmem", env)
    if value is not None:
        try:
            mb = int(float(value))
        except ValueError:
            mb = 0
        if mb > 0:
            return mb * _MIB
    return LEGATE_DEFAULT_SYSMEM_MB * _MIB


def rank_count(runtime: Any) -> int:
    """How many ranks (Legate processes, `node_count`) run this program; 1 where the runtime does not say."""
    count = getattr(runtime, "node_count", 1)
    try:
        return max(int(count), 1)
    except (TypeError, ValueError):
        return 1


def copies_by_task(runtime: Any) -> bool:
    """Whether distal copies store to store with its copy task rather than `Runtime.issue_copy`.

    With several ranks: 26.1's `issue_copy` of a partitioned store aborts the process there (see
    the module's docstring), and no 26.6 with networking was tried. One rank keeps Legate's copy.
    """
    return rank_count(runtime) > 1
