"""Child processes: one per Legate configuration, sized memory, refused when the machine cannot hold them.

Legate starts once per process, so a benchmark runs what needs its own configuration (processor count,
`--sysmem`) in a child: the script itself, run again with arguments that make it a child, whose last line of
output is its answer as JSON (`child`). `legate_env` sizes its pool; `check_host_memory` refuses a child
whose memory need exceeds what the machine has available (it would hang or be killed) before it starts.
Children compare their results by `fingerprint`, not by copying them back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from . import host

RUNTIME_MIB = 768.0  # a Legate child's own resident memory (runtime, Python, libraries: about 0.5 GB), with room
NUMPY_RUNTIME_MIB = 400.0  # a NumPy-only child's own resident memory
SYSMEM_CAP = 20000  # MB of Legate pool; more than this project's machines can give a child


class ChildHung(RuntimeError):
    """A benchmark child process gave no result within its time limit."""


def numpy_env() -> dict[str, str]:
    """A NumPy child: no Legate, 2 BLAS threads."""
    return {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}


def legate_config(sysmem: int, cpus: int = 2) -> str:
    """LEGATE_CONFIG of a child on `cpus` CPU processors (no GPU, no OpenMP) with a pool of `sysmem` MB."""
    return f"--cpus {cpus} --gpus 0 --omps 0 --utility 1 --sysmem {sysmem}"


def legate_env(sysmem: int, cpus: int = 2) -> dict[str, str]:
    """A Legate child's environment (`legate_config`)."""
    return {"LEGATE_CONFIG": legate_config(sysmem, cpus)}


def check_host_memory(what: str, need: float) -> None:
    """Refuse a child that would not fit in this machine's available memory (it would hang or be killed)."""
    have = host.available_mib()
    if have is not None and need > have:
        raise MemoryError(f"expected at least {need:.0f} MiB of available host memory for {what}, but found "
                          f"{have:.0f} MiB (MemAvailable); run on a quieter machine or with smaller sizes")


def child(script: Path, args: list[str], env_extra: dict[str, str], timeout: float | None = None) -> dict[str, Any]:
    """Run `script` with `args` in a child process (LEGATE_CONFIG only as `env_extra` gives it); its last line
    of output is JSON.

    A child that gives no result within `timeout` seconds is killed and reported
    as a hang (a Legate process that waits forever shows no error of its own).
    """
    env = dict(os.environ)
    env.pop("LEGATE_CONFIG", None)
    env.update(env_extra)
    command = [sys.executable, str(script), *args]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=script.parent.parent,
                              check=False, timeout=timeout)
    except subprocess.TimeoutExpired as hung:
        tail = hung.stdout if isinstance(hung.stdout, str) else (hung.stdout or b"").decode(errors="replace")
        err = hung.stderr if isinstance(hung.stderr, str) else (hung.stderr or b"").decode(errors="replace")
        raise ChildHung(f"child {' '.join(args)} (LEGATE_CONFIG={env.get('LEGATE_CONFIG')!r}) gave no result "
                        f"within {timeout:.0f} s and was killed: a hang (e.g. an allocation waiting for memory "
                        f"that never frees, or a blocking fence); its last output:\n{tail[-2000:]}\n"
                        f"{err[-2000:]}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def validation_child(script: Path, procs: int, quick: bool, repeats: int, sysmem: int) -> list[dict[str, Any]]:
    """Run a model validation script's child (`script --child P`) on P CPU processors of a Legate with
    `sysmem` MiB; its rows (the last line it prints, JSON). Its other output goes to this process's."""
    env = dict(os.environ)
    env["LEGATE_CONFIG"] = legate_config(sysmem, procs)
    args = [sys.executable, str(script), "--child", str(procs), "--repeats", str(repeats)]
    if quick:
        args.append("--quick")
    proc = subprocess.run(args, stdout=subprocess.PIPE, text=True, env=env, cwd=script.parent.parent)
    if proc.returncode != 0:
        raise SystemExit(f"child with {procs} cpus failed ({proc.returncode})")
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def fingerprint(out: Any) -> list[float]:
    """A result's sum and 8 of its elements evenly spaced in memory order (real and imaginary parts of
    complex ones), to compare systems across processes."""
    a = np.asarray(out).reshape(-1)
    picks = np.linspace(0, max(a.size - 1, 0), num=min(8, a.size)).astype(np.int64)
    values = [a.sum(), *(a[i] for i in picks)]
    if np.iscomplexobj(a):
        return [float(x) for v in values for x in (v.real, v.imag)]
    return [float(v) for v in values]


def fingerprint_error(ours: list[float], reference: list[float]) -> float:
    """Largest difference of two fingerprints relative to the reference's largest magnitude (at least 1)."""
    scale = max(1.0, *(abs(x) for x in reference))
    return max((abs(a - b) for a, b in zip(ours, reference, strict=True)), default=0.0) / scale


def multirank_environment() -> tuple[str | None, dict[str, str]]:
    """The several-rank environment (legate 26.1, built once by tools/multirank_env.sh): the file to source before
    `mpirun`, and this process's environment without what would point the ranks at this one's Python or Legate
    configuration (the checkout's pinned machine model by default); (None, {}) where it cannot be built (said on
    stderr)."""
    root = Path(__file__).resolve().parents[2]
    built = subprocess.run(["bash", str(root / "tools" / "multirank_env.sh")], capture_output=True, text=True,
                           check=False)
    if built.returncode != 0:
        print(built.stderr, file=sys.stderr)
        return None, {}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "LEGATE_CONFIG")}
    env.setdefault("DISTAL_MACHINE_MODEL", str(root / "tests" / "_data" / "machine-model.json"))
    return built.stdout.strip().splitlines()[-1], env
