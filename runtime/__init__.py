"""distal's Legate backend: start-up, stores, and launches of Python kernels.

Only this package imports legate. Nothing here starts Legate at import
time; the first call that needs it does (`ensure_started`).

A lowering layer drives it with plain data::

    from distal import runtime as rt
    a = rt.from_numpy(a_np)                  # a store holding a copy
    c = rt.zeros((n, m), tile=(tn, tm))      # written by a task, never store.fill
    key = rt.register_kernel(gemm)           # gemm(point, a_tile, b_tile, c_tile)
    rt.index_launch(key, (gx, gy), [
        rt.Arg(a, rt.Privilege.READ, (tn, tk), (rt.Affine(0), rt.Affine(None, 0, k))),
        rt.Arg(b, rt.Privilege.READ, (tk, tm), (rt.Affine(None, 0, k), rt.Affine(1))),
        rt.Arg(c, rt.Privilege.READ_WRITE, (tn, tm)),
    ])
    result = rt.to_numpy(c)                  # a copy; read results last

A user's `dt.Tensor` reaches its data on Legate through one object,
`tensor_data` (`TensorData`: copying arrays in, placing, redistributing,
handing out; reading back is its storage's `to_numpy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._blas import blas_info, blas_user_threads, set_task_threads, task_threads
    from ._config import HostInfo, default_config, host_info
    from ._execute import run_plan
    from ._interop import legate_input
    from ._launch import Affine, Arg, Privilege, index_launch, point_launch, tile_colors
    from ._make import from_numpy, full, zeros
    from ._observe import Wrapper, observed
    from ._redistribute import StepRecord, run_plan_steps, run_program
    from ._reduce import ReduceRecord, reduce_arrays, reduce_on_machine, reduce_partials
    from ._registry import Kernel, KernelFailure, check_failures, register_kernel
    from ._shim import DriverInfo, build_shim, load_driver
    from ._start import (
        MachineInfo,
        ensure_started,
        is_started,
        legate_runtime,
        prepare_at_import,
        processor_count,
        rank_count,
    )
    from ._store import Store, fence, tile_of, to_numpy, wrap
    from ._tasks import generic_task
    from ._tensor_data import LegateCopy, TensorData, data_interface, tensor_data
    from ._tensor_storage import FormatStore, TensorStore, adopt, as_storage, from_store, native, place, storage_of
    from ._thread_context import (
        adopt_context,
        bind_context_quietly,
        capture_context,
        context_known,
        legate_loaded,
        legate_ranks,
    )

# Every name loads its module on first use: `import distal.runtime` stays cheap
# (`import distal` prepares the driver through it), and the storage,
# redistribution and reduction modules import the compiler's synthesizers.
_LAZY = {
    **dict.fromkeys(("blas_info", "blas_user_threads", "set_task_threads", "task_threads"), "_blas"),
    **dict.fromkeys(("HostInfo", "default_config", "host_info"), "_config"),
    **dict.fromkeys(("run_plan",), "_execute"),
    **dict.fromkeys(("Affine", "Arg", "Privilege", "index_launch", "point_launch", "tile_colors"), "_launch"),
    **dict.fromkeys(("from_numpy", "full", "zeros"), "_make"),
    **dict.fromkeys(("Wrapper", "observed"), "_observe"),
    **dict.fromkeys(("generic_task",), "_tasks"),
    **dict.fromkeys(("StepRecord", "run_plan_steps", "run_program"), "_redistribute"),
    **dict.fromkeys(("ReduceRecord", "reduce_arrays", "reduce_on_machine", "reduce_partials"), "_reduce"),
    **dict.fromkeys(("Kernel", "KernelFailure", "check_failures", "register_kernel"), "_registry"),
    **dict.fromkeys(("DriverInfo", "build_shim", "load_driver"), "_shim"),
    **dict.fromkeys(
        ("MachineInfo", "ensure_started", "is_started", "legate_runtime", "prepare_at_import", "processor_count",
         "rank_count"),
        "_start",
    ),
    **dict.fromkeys(("Store", "fence", "tile_of", "to_numpy", "wrap"), "_store"),
    **dict.fromkeys(("legate_input",), "_interop"),
    **dict.fromkeys(
        ("adopt_context", "bind_context_quietly", "capture_context", "context_known", "legate_loaded",
         "legate_ranks"),
        "_thread_context",
    ),
    **dict.fromkeys(("LegateCopy", "TensorData", "data_interface", "tensor_data"), "_tensor_data"),
    **dict.fromkeys(
        ("FormatStore", "TensorStore", "adopt", "as_storage", "from_store", "native", "place", "storage_of"),
        "_tensor_storage",
    ),
}

__all__ = [
    "Affine",
    "Arg",
    "DriverInfo",
    "FormatStore",
    "HostInfo",
    "Kernel",
    "KernelFailure",
    "LegateCopy",
    "MachineInfo",
    "Privilege",
    "ReduceRecord",
    "StepRecord",
    "Store",
    "TensorData",
    "TensorStore",
    "Wrapper",
    "adopt",
    "adopt_context",
    "as_storage",
    "bind_context_quietly",
    "blas_info",
    "blas_user_threads",
    "build_shim",
    "capture_context",
    "check_failures",
    "context_known",
    "data_interface",
    "default_config",
    "ensure_started",
    "fence",
    "from_numpy",
    "from_store",
    "full",
    "generic_task",
    "host_info",
    "index_launch",
    "is_started",
    "legate_input",
    "legate_loaded",
    "legate_ranks",
    "legate_runtime",
    "load_driver",
    "native",
    "observed",
    "place",
    "point_launch",
    "prepare_at_import",
    "processor_count",
    "rank_count",
    "reduce_arrays",
    "reduce_on_machine",
    "reduce_partials",
    "register_kernel",
    "run_plan",
    "run_plan_steps",
    "run_program",
    "set_task_threads",
    "storage_of",
    "task_threads",
    "tensor_data",
    "tile_colors",
    "tile_of",
    "to_numpy",
    "wrap",
    "zeros",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'distal.runtime' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
