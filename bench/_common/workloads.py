"""The higher-order kernels bench/suite.py, bench/check.py and bench/profile_higher.py measure.

TTV, innerprod, TTM and MTTKRP as einsum subscripts with their operand shapes at (n, l) (B's extent per
mode, the extra mode's extent), the same seeded operands in every process, the systems they are measured
on, the memory a child of each system needs for them, and the ratios of interleaved samples.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping

import numpy as np

from .children import NUMPY_RUNTIME_MIB, RUNTIME_MIB, SYSMEM_CAP
from .host import NUMPY_AVX512, numpy_avx512_applies

# the suite's sizes: (B's extent per mode, the extra mode's extent)
HIGHER = {"ttv": (600, 0), "innerprod": (520, 0), "ttm": (300, 900), "mttkrp": (400, 128)}
SPECS: dict[str, tuple[str, Callable[[int, int], list[tuple[int, ...]]]]] = {
    "ttv": ("ijk,k->ij", lambda n, l: [(n, n, n), (n,)]),
    "innerprod": ("ijk,ijk->", lambda n, l: [(n, n, n), (n, n, n)]),
    "ttm": ("ijk,kl->ijl", lambda n, l: [(n, n, n), (n, l)]),
    "mttkrp": ("ijk,jl,kl->il", lambda n, l: [(n, n, n), (n, l), (n, l)]),
}
SYSTEMS = ("numpy", "distal", "cupynumeric")


def higher_systems() -> tuple[str, ...]:
    """The systems of the higher-order measurement on this machine: SYSTEMS, and NUMPY_AVX512 where
    distal's tiles run AVX-512 kernels NumPy's OpenBLAS does not pick by itself."""
    return (*SYSTEMS, NUMPY_AVX512) if numpy_avx512_applies() else SYSTEMS


def out_shape(name: str, n: int, l: int) -> tuple[int, ...]:
    """The output shape of one higher-order kernel at (n, l)."""
    return {"ttv": (n, n), "innerprod": (), "ttm": (n, n, l), "mttkrp": (n, l)}[name]


def operand_shapes(name: str, n: int, l: int) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
    """The input shapes and the output shape of one higher-order kernel at (n, l)."""
    return [tuple(s) for s in SPECS[name][1](n, l)], out_shape(name, n, l)


def inputs(name: str, n: int, l: int, seed: int = 0) -> list[np.ndarray]:
    """The operands of a kernel at (n, l) from one seeded stream (the suite's one-process measurements)."""
    rng = np.random.default_rng(seed)
    return [rng.random(s) for s in SPECS[name][1](n, l)]


def operand(name: str, n: int, l: int, index: int, seed: int = 0) -> np.ndarray:
    """Operand `index` of a kernel at (n, l): the same values in every child (one seeded stream per operand)."""
    shape = operand_shapes(name, n, l)[0][index]
    return np.random.default_rng([seed, index]).random(shape)


def _mib(shape: tuple[int, ...]) -> float:
    return float(np.prod(shape, dtype=np.float64)) * 8 / 2**20


def child_memory(name: str, system: str, n: int, l: int) -> tuple[int, float]:
    """(Legate --sysmem in MB, 0 for NumPy; resident host memory in MiB) one child of `system` needs at (n, l).

    The pool (--sysmem) holds what the system keeps on Legate at once, with
    10 % and 256 MB of headroom: cuPyNumeric its operands (`cupynumeric.array`
    copies, the host arrays dropped), twice the output and MTTKRP's n*n*l
    intermediate; distal its placed operands plus the largest once more
    (placing one holds its attached copy and the placed store) or twice the
    output while a run writes a fresh one.

    The resident need is fitted to the peak RSS of children measured on
    this machine (TTV 500^3 and 600^3, innerprod 400^3, TTM (300, 900),
    MTTKRP (400, 128); docs/benchmarks.md), with 5 % and 768 MiB of runtime
    (Legate's is about 0.3-0.7 GB; 400 MiB for NumPy) on top: numpy holds its operands, twice
    the output and twice MTTKRP's intermediate; cupynumeric twice its
    operands (a host array and its copy while it is made), twice the output
    and intermediate; distal, whose placement from host memory peaks at
    about 4 times the operand it places (the host array, the store it is
    copied into, the placed blocks, the views the placing launches read),
    its operands plus 3 times the largest, and twice the output.
    """
    ins, out = operand_shapes(name, n, l)
    sizes = [_mib(s) for s in ins]
    out_mib = _mib(out)
    temp = _mib((n, n, l)) if name == "mttkrp" else 0.0
    if system == "numpy":
        return 0, 1.05 * (sum(sizes) + 2 * out_mib + 2 * temp) + NUMPY_RUNTIME_MIB
    if system == NUMPY_AVX512:
        return child_memory(name, "numpy", n, l)
    if system == "cupynumeric":
        pool = sum(sizes) + 2 * out_mib + temp
        resident = 2 * sum(sizes) + 2 * out_mib + 2 * temp
    elif system == "distal":
        pool = max(sum(sizes) + max(sizes), sum(sizes) + 2 * out_mib)
        resident = sum(sizes) + 3 * max(sizes) + 2 * out_mib
    else:
        raise ValueError(f"expected a system in {SYSTEMS}, but found {system!r}")
    sysmem = min(SYSMEM_CAP, int(pool * 1.1) + 256)
    return sysmem, max(1.05 * resident, sysmem) + RUNTIME_MIB


def ratios(samples: Mapping[str, list[float]]) -> dict[str, float]:
    """Ratios from interleaved samples keyed `<kernel>:<method>` (methods distal, numpy, cupynumeric, ...):
    `<kernel>_vs_<method>` is the method's median over distal's."""
    medians = {key: statistics.median(v) for key, v in samples.items() if v}
    out: dict[str, float] = {}
    for key, seconds in medians.items():
        kernel, method = key.split(":")
        ours = medians.get(f"{kernel}:distal")
        if method != "distal" and ours:
            out[f"{kernel}_vs_{method}"] = seconds / ours
    return out


def distal_names(name: str) -> str:
    """The tensor names of a kernel's distal statement, output first (innerprod's output is a scalar, `a`)."""
    return "aBCD" if name == "innerprod" else "ABCD"


