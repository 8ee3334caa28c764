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
"""

from __future__ import annotations

from ._config import HostInfo, default_config, host_info
from ._launch import Affine, Arg, Privilege, index_launch, point_launch, tile_colors
from ._make import from_numpy, full, zeros
from ._registry import Kernel, KernelFailure, check_failures, register_kernel
from ._shim import DriverInfo, build_shim, load_driver
from ._start import MachineInfo, ensure_started, is_started, legate_runtime, processor_count
from ._store import Store, fence, tile_of, to_numpy, wrap

# Storage, redistribution and reduction entry points import the compiler's
# redistribution and reduction packages: they load on first use.
_LAZY = {
    "FormatStore": "_tensor_storage",
    "adopt": "_tensor_storage",
    "device_grid": "_tensor_storage",
    "from_store": "_tensor_storage",
    "native": "_tensor_storage",
    "place": "_tensor_storage",
    "StepRecord": "_redistribute",
    "redistribute": "_redistribute",
    "run_plan_steps": "_redistribute",
    "run_program": "_redistribute",
    "ReduceRecord": "_reduce",
    "reduce_arrays": "_reduce",
    "reduce_on_machine": "_reduce",
    "reduce_partials": "_reduce",
}

__all__ = [
    "Affine",
    "Arg",
    "DriverInfo",
    "FormatStore",
    "HostInfo",
    "Kernel",
    "KernelFailure",
    "MachineInfo",
    "Privilege",
    "ReduceRecord",
    "StepRecord",
    "Store",
    "adopt",
    "build_shim",
    "check_failures",
    "default_config",
    "device_grid",
    "ensure_started",
    "fence",
    "from_numpy",
    "from_store",
    "full",
    "host_info",
    "index_launch",
    "is_started",
    "legate_runtime",
    "load_driver",
    "native",
    "place",
    "point_launch",
    "processor_count",
    "redistribute",
    "reduce_arrays",
    "reduce_on_machine",
    "reduce_partials",
    "register_kernel",
    "run_plan_steps",
    "run_program",
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

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
