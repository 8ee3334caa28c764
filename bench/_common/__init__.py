"""The benchmarks' harness: what every script in bench/ shares, and the only module they import from bench/.

- `host`: the machine description every record keeps (CPU, vector extensions, BLAS kernels, memory), which
  CPUs are alike enough to compare ratios between (`cpu_kind`), NumPy's BLAS threads;
- `timing`: medians, interleaved rounds (each round runs every method once; children of several systems in
  a rotated order), progress lines;
- `children`: child processes (one per Legate configuration) with sized memory (`legate_env`), refused
  before they start where the machine cannot hold them, killed and reported when they hang;
- `results`: result files, dated folders `<results>/<YYYY-MM-DD>_<commit>/<name>.json` and history.json;
- `workloads`: the higher-order kernels (TTV, innerprod, TTM, MTTKRP) that several scripts measure.

Scripts never import one another: what two of them share lives here, and a script that needs another's
measurement runs that script as a child. They reach distal only through its public API (`distal`, the
names in `distal.runtime.__all__`, a plan's methods). Register every script in `BENCHES` of distal/cli.py
(`distal bench NAME`).
"""

from __future__ import annotations

from .children import (
    NUMPY_RUNTIME_MIB,
    RUNTIME_MIB,
    SYSMEM_CAP,
    ChildHung,
    check_host_memory,
    child,
    fingerprint,
    fingerprint_error,
    legate_config,
    legate_env,
    multirank_environment,
    numpy_env,
    validation_child,
)
from .host import (
    NUMPY_AVX512,
    VECTOR_FLAGS,
    available_mib,
    blas_kernels,
    cpu,
    cpu_kind,
    machine,
    meminfo_kib,
    numpy_avx512_applies,
    numpy_threads,
    openblas_threads,
)
from .results import HISTORY, RESULTS, commit, find, labels, record, record_path, records, run_folder, write
from .timing import Progress, alternating_rounds, interleaved_rounds, median_seconds, model_error, round_order

__all__ = [
    "HISTORY",
    "NUMPY_AVX512",
    "NUMPY_RUNTIME_MIB",
    "RESULTS",
    "RUNTIME_MIB",
    "SYSMEM_CAP",
    "VECTOR_FLAGS",
    "ChildHung",
    "Progress",
    "alternating_rounds",
    "available_mib",
    "blas_kernels",
    "check_host_memory",
    "child",
    "commit",
    "cpu",
    "cpu_kind",
    "find",
    "fingerprint",
    "fingerprint_error",
    "interleaved_rounds",
    "labels",
    "legate_config",
    "legate_env",
    "machine",
    "median_seconds",
    "meminfo_kib",
    "model_error",
    "multirank_environment",
    "numpy_avx512_applies",
    "numpy_env",
    "numpy_threads",
    "openblas_threads",
    "record",
    "record_path",
    "records",
    "round_order",
    "run_folder",
    "validation_child",
    "write",
]
