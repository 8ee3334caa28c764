"""Starting Legate lazily, once per process, with defaults sized to the machine.

Under plain `python` (no LEGATE_CONFIG) distal writes its own configuration:
every core a CPU processor, half the available memory as system memory, one
utility thread, and as many GPUs as a real driver reports. Under the `legate`
launcher (which sets LEGATE_CONFIG) the user's settings win. Either way the
driver stand-in is loaded first where no real driver exists, and then Realm's
GPU logger is silenced (it would print the stand-in's "no device" on stdout).

What distal changes in the process, and for how long:

- the driver stand-in, LEGATE_AUTO_CONFIG=0 and LEGATE_CONFIG (distal's
  defaults, or the user's with `gpu=none` logging) on machines without an
  NVIDIA driver, from `import distal` on, so that Legate started by
  cuPyNumeric works too (`prepare_process`);
- REALM_BACKTRACE=0 unless the user set it, before Legate starts, so that a
  Ctrl-C raises KeyboardInterrupt instead of killing the process in Realm's
  backtrace handler (`prepare_process`);
- from distal's first task launch until the next blocking fence (`fence()`,
  or `to_numpy`), Python's automatic garbage collection is paused (a
  collection inside a Legate task thread that frees Legate objects crashes
  the process) and BLAS runs one thread per processor; then the user's
  settings are back (`work_queued`, `work_done`, `_blas.py`).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import random
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from distal.errors import DistalError, RuntimeFailure
from distal.host import available_bytes, share_rank0_available

from . import _blas, _versions
from ._config import default_config, host_info, quiet_gpu_logging
from ._shim import driver_listed, load_driver

__all__ = [
    "MachineInfo",
    "ensure_started",
    "is_started",
    "legate_runtime",
    "prepare_process",
    "processor_count",
    "rank_count",
    "work_done",
    "work_pending",
    "work_queued",
]


@dataclass(frozen=True, slots=True)
class MachineInfo:
    """The processors and memory Legate was started with, and where it runs.

    Processors are counted over all ranks (Legate processes); `sysmem_mb` is
    one rank's system memory (with several ranks, rank 0's: every rank
    checks against the same figure); `rank` is this process's rank of `ranks`.
    """

    cpus: int
    gpus: int
    omps: int
    sysmem_mb: int
    cores: int
    cpu_model: str
    driver: str
    legate_version: str
    config: str
    user_config: bool
    ranks: int = 1
    rank: int = 0

    def processors(self) -> dict[str, int]:
        """Processor counts by kind: {'cpu': n, 'gpu': n, 'omp': n}."""
        return {"cpu": self.cpus, "gpu": self.gpus, "omp": self.omps}

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready description (for benchmark records)."""
        return {
            "processors": self.processors(),
            "sysmem_mb": self.sysmem_mb,
            "cores": self.cores,
            "cpu_model": self.cpu_model,
            "driver": self.driver,
            "legate_version": self.legate_version,
            "legate_config": self.config,
            "user_config": self.user_config,
            "ranks": self.ranks,
        }


_lock = threading.Lock()
_machine: MachineInfo | None = None


def is_started() -> bool:
    """Whether this process has started Legate through distal."""
    return _machine is not None


_written: str | None = None  # the LEGATE_CONFIG distal wrote (its defaults), if it wrote one


def prepare_process() -> tuple[str, bool, str]:
    """Load the driver (or its stand-in), set Legate's configuration and REALM_BACKTRACE=0 (unless set); cheap
    to repeat.

    Returns (LEGATE_CONFIG, whether the user set it, 'real' or 'shim'). A
    configuration the user set (also after `import distal` wrote distal's
    defaults) is kept, with Realm's GPU logger silenced under the stand-in.
    """
    global _written
    # Realm's backtrace handler takes SIGINT: a Ctrl-C printed a backtrace and killed the process (exit 130).
    # Without it Python's own handler raises KeyboardInterrupt and distal stays usable. The user's setting wins.
    os.environ.setdefault("REALM_BACKTRACE", "0")
    driver = load_driver()
    if not driver.real:
        # Legate's automatic configuration probes the GPUs and fails on the shim.
        os.environ["LEGATE_AUTO_CONFIG"] = "0"
    current = os.environ.get("LEGATE_CONFIG")
    user_config = current is not None and current != _written
    if current is None:
        _written = default_config(host_info(), gpus=driver.devices, shim=not driver.real)
        os.environ["LEGATE_CONFIG"] = _written
        os.environ.setdefault("LEGATE_AUTO_CONFIG", "0")
    elif user_config and not driver.real:
        os.environ["LEGATE_CONFIG"] = quiet_gpu_logging(current)
    return os.environ["LEGATE_CONFIG"], user_config, "real" if driver.real else "shim"


def prepare_at_import() -> None:
    """At `import distal`: where no NVIDIA driver is installed, prepare the process now, so that
    `import cupynumeric` (which starts Legate) works before distal starts anything.
    Where a driver is listed nothing happens here; never raises (ensure_started reports)."""
    if driver_listed():
        return
    try:
        prepare_process()
    except DistalError:
        pass


# -- while distal's work is queued ------------------------------------------------------------

_queued = False
_gc_was_enabled = True


def work_queued() -> None:
    """Before distal launches a task (main thread): hold the settings its tasks need until
    the next blocking fence (`work_done`); cheap when they already hold.

    - Automatic garbage collection is paused. Python's cyclic collector runs in
      whatever thread allocates when it triggers, including Legate's task
      threads, and freeing Legate objects there crashed the process (seen in a
      Python task's stack).
    - BLAS runs `_blas.task_threads()` threads (one per processor).
    """
    global _queued, _gc_was_enabled
    if not _queued:
        _gc_was_enabled = gc.isenabled()
        gc.disable()
        _blas.limit()
        _queued = True


def work_done() -> None:
    """At a blocking fence (nothing of distal's queued): the user's collector and BLAS settings are back."""
    global _queued
    if _queued:
        _queued = False
        _blas.restore()
        if _gc_was_enabled:
            gc.enable()


def work_pending() -> bool:
    """Whether distal launched work since the last blocking fence."""
    return _queued


def _import_legate() -> Any:
    # legate.core reseeds NumPy's and Python's global generators on import
    # and wraps their `seed` functions to warn about multi-rank runs. Keep
    # the user's streams and functions as they were (the warning fires in
    # every library that seeds, Hypothesis among them); with several ranks,
    # `ensure_started` then gives every rank rank 0's streams (`_agree_with_rank0`).
    np_state = np.random.get_state()
    py_state = random.getstate()
    np_seed, py_seed = np.random.seed, random.seed
    try:
        import legate
        import legate.core as core
    except (ImportError, OSError, ValueError, RuntimeError) as error:
        config = os.environ.get("LEGATE_CONFIG", "")
        raise RuntimeFailure(
            f"Legate could not start (LEGATE_CONFIG={config!r}): {error}"
        ) from error
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)
        np.random.seed, random.seed = np_seed, py_seed
    return legate, core


def ensure_started() -> MachineInfo:
    """Start Legate if it is not running yet and describe the machine; idempotent.

    >>> info = ensure_started()          # doctest: +SKIP
    >>> info.processors()["cpu"] >= 1    # doctest: +SKIP
    True
    """
    global _machine
    if _machine is not None:
        return _machine
    with _lock:
        if _machine is not None:
            return _machine
        config, user_config, driver = prepare_process()
        legate, core = _import_legate()
        _blas.prepare()
        machine = core.get_legate_runtime().machine
        target = core.TaskTarget
        host = host_info()
        runtime = core.get_legate_runtime()
        _machine = MachineInfo(
            cpus=machine.count(target.CPU),
            gpus=machine.count(target.GPU),
            omps=machine.count(target.OMP),
            sysmem_mb=_versions.sysmem_bytes(runtime) // (1024 * 1024),
            cores=host.cores,
            cpu_model=host.cpu_model,
            driver=driver,
            legate_version=str(legate.__version__),
            config=config,
            user_config=user_config,
            ranks=_versions.rank_count(runtime),
            rank=int(getattr(runtime, "node_id", 0)),
        )
        from ._thread_context import capture_context

        capture_context()  # this thread holds Legate's top-level context: other threads may take it later
        if _machine.ranks > 1:
            sysmem_mb, available = _agree_with_rank0(_machine.sysmem_mb, available_bytes())
            _machine = dataclasses.replace(_machine, sysmem_mb=sysmem_mb)
            share_rank0_available(rank0_available, available)  # host-memory checks: rank 0's figures on every rank
        return _machine


# -- several ranks agree at start-up ------------------------------------------------------------

_RANDOM_WORDS = 624 + 4 + 2 + 625  # NumPy's MT19937 keys, 4 counters and flags, 2 cached Gaussians, Python's words
_copier: list[Any] = []  # the Legate task that copies one store into another, once registered


def pack_random_state() -> np.ndarray:
    """NumPy's and Python's global random states as one uint64 array (`unpack_random_state` sets them)."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)  # type: ignore[misc]
    assert kind == "MT19937", kind
    version, words, gauss_next = random.getstate()
    float_bits = np.array([float(gauss), float(gauss_next or 0.0)]).view(np.uint64)
    packed = np.concatenate([
        np.asarray(keys, dtype=np.uint64),
        np.array([pos, has_gauss, version, gauss_next is not None], dtype=np.uint64),
        float_bits,
        np.asarray(words, dtype=np.uint64),
    ])
    assert packed.size == _RANDOM_WORDS, packed.size
    return packed


def unpack_random_state(packed: np.ndarray) -> None:
    """Set NumPy's and Python's global random states from `pack_random_state`'s array."""
    keys = packed[:624].astype(np.uint32)
    pos, has_gauss, version, has_next = (int(x) for x in packed[624:628])
    gauss, gauss_next = (float(x) for x in packed[628:630].view(np.float64))
    words = tuple(int(x) for x in packed[630:_RANDOM_WORDS])
    np.random.set_state(("MT19937", keys, pos, has_gauss, gauss))
    random.setstate((version, words, gauss_next if has_next else None))


def _rank0_copy(values: np.ndarray) -> np.ndarray:
    """`values` as rank 0 holds them, on every rank: each rank attaches its own array, Legate reads an
    attached buffer from one rank (rank 0's, seen with two and three ranks), and a task copies it into a
    store every rank then reads. Called on every rank at the same point."""
    from legate.core import align, get_legate_runtime, types
    from legate.core.task import InputStore, OutputStore, task

    if not _copier:
        def distal_rank0_copy(source: Any, target: Any) -> None:
            np.asarray(target)[...] = np.asarray(source)

        # Legate reads the stores' roles from the annotations, as objects (this module's are strings)
        distal_rank0_copy.__annotations__ = {"source": InputStore, "target": OutputStore, "return": None}
        _copier.append(task(constraints=(align("source", "target"),))(distal_rank0_copy))
    runtime = get_legate_runtime()
    collecting = gc.isenabled()
    gc.disable()  # a collection in the task's thread that freed Legate objects would crash the process
    try:
        source = runtime.create_store_from_buffer(types.uint64, values.shape, values, True)
        target = runtime.create_store(types.uint64, values.shape)
        _copier[0](source, target)
        source.detach()
        return np.array(np.asarray(target.get_physical_store().get_inline_allocation()))
    finally:
        if collecting:
            gc.enable()


def _agree_with_rank0(sysmem_mb: int, available: int | None) -> tuple[int, int | None]:
    """With several ranks, at start-up: every rank takes rank 0's NumPy and Python random streams, and rank 0's
    system memory figure and available host memory (bytes; None: not known), returned, for its memory checks.

    A program draws its data from the global streams before handing it to
    distal; unseeded, they differ between ranks (legate.core seeds them when
    imported, but `_import_legate` gives the user's back). A seeded program
    continues its own stream. Each rank sized its default memory from what
    was free when it started (5405 and 5407 MiB were seen): a check near the
    limit could refuse on one rank only, and the others would wait for it
    forever. Rank 0's figure, on every rank, makes every check agree.
    """
    packed = np.concatenate([pack_random_state(),
                             np.array([sysmem_mb, _UNKNOWN if available is None else available], dtype=np.uint64)])
    shared = _rank0_copy(packed)
    unpack_random_state(shared[:_RANDOM_WORDS])
    rank0_sysmem, rank0_available = (int(x) for x in shared[_RANDOM_WORDS:_RANDOM_WORDS + 2])
    return rank0_sysmem, None if rank0_available == _UNKNOWN else rank0_available


_UNKNOWN = int(np.iinfo(np.uint64).max)  # rank 0 could not read its available memory


def rank0_available() -> int | None:
    """Rank 0's available host memory now (bytes; None where it cannot tell), on every rank.

    With several ranks the host-memory checks (`distal.host.check_host_allocation`)
    use it: each rank reads a different figure (each host, or the same host at
    different moments), and a rank that refused alone would leave the others
    waiting for it forever. One small task and two waits per call, which
    every rank issues at the same point (the checks are made by the program
    every rank runs): 0.7-1.5 s each at a load of 16 on this project's two
    cores (two ranks), so only a large array asks (`distal.host`).
    """
    found = available_bytes()
    shared = int(_rank0_copy(np.array([_UNKNOWN if found is None else found], dtype=np.uint64))[0])
    return None if shared == _UNKNOWN else shared


def processor_count(kind: str = "cpu") -> int:
    """How many processors of `kind` ('cpu', 'gpu' or 'omp') Legate runs on."""
    counts = ensure_started().processors()
    if kind not in counts:
        raise DistalError(f"expected a processor kind in {sorted(counts)}, but found {kind!r}")
    return counts[kind]


def rank_count() -> int:
    """How many ranks (Legate processes) run this program, starting Legate if needed; 1 in a plain run.

    With several ranks every rank must issue the same launches in the same
    order: callers refuse what would make ranks differ (concurrent calls from
    several threads, for one).
    """
    return ensure_started().ranks


def legate_runtime() -> Any:
    """The started Legate runtime object (starting it if needed)."""
    ensure_started()
    from legate.core import get_legate_runtime

    return get_legate_runtime()
