"""Placing host data next to stores dropped since the last fence: no Legate abort (out of memory).

`Tensor.from_array` without a format, then `kernels.build` giving every operand
the algorithm's format: the run places each input from its host data (a
staging store, then the format's blocks). The first input's staging store was
dropped but still held by Legate until the next fence; distal stopped counting
it, so the second input's copy onto Legate overran --sysmem and the mapper
aborted the process ("LEGATE ERROR ... Out of memory", signal 6). Dropped
stores now count until the fence that frees them, and a check that fails
fences once first.
"""

from __future__ import annotations

import gc
import subprocess
from collections.abc import Callable

import numpy as np
import pytest

from distal import runtime as rt
from distal.runtime import _store
from tests._strategies.plans import STILL_USABLE

pytestmark = pytest.mark.legate  # in this process, or in a child process

Runner = Callable[..., subprocess.CompletedProcess[str]]

# innerprod of two 200^3 float64 tensors (64 MB each) on 2 processors, then a small plan
SCRIPT = """
import numpy as np
import distal as dt
from distal import kernels
rng = np.random.default_rng(0)
n = 200
b, c = rng.random((n, n, n)), rng.random((n, n, n))
B, C = dt.Tensor.from_array("B", b), dt.Tensor.from_array("C", c)
a = dt.Tensor("a", ())
try:
    kernels.build("innerprod", kernels.machine("innerprod", 2), a, B, C).compile().run()
    print("ran", abs(float(a.to_numpy()) - float(np.einsum("ijk,ijk->", b, c))) < 1e-6 * n ** 3)
except dt.OutOfMemory as exc:
    print("refused:", exc)
"""
SCRIPT += STILL_USABLE


def _run(run_python: Runner, sysmem: int) -> str:
    done = run_python(SCRIPT, env={"LEGATE_CONFIG": f"--cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem {sysmem}"},
                      timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert "usable True" in done.stdout, done.stdout
    return done.stdout


def test_the_second_input_is_placed_after_the_first_one_s_staging_store_is_freed(run_python: Runner) -> None:
    # Legate needs B's blocks, C's attached host data and C's store (3 x 61.0 MiB) while C is copied in;
    # B's dropped staging store on top of that (4 x 61.0 MiB) did not fit in 230 MiB: the process aborted
    out = _run(run_python, 230)
    assert "ran True" in out, out


def test_what_cannot_fit_is_refused_and_the_process_goes_on(run_python: Runner) -> None:
    out = _run(run_python, 200)
    refused = next(line for line in out.splitlines() if line.startswith("refused:"))
    assert "expected the plan to fit in Legate's system memory of 200.0 MiB (--sysmem 200" in refused
    assert "B[200, 200, 200] float64 (its format's tiles) 61.0 MiB" in refused
    assert "C[200, 200, 200] float64 (its format's tiles) 61.0 MiB" in refused
    assert "plus 61.0 MiB while the largest input is copied onto Legate from host memory" in refused


def test_a_dropped_store_counts_until_the_next_fence(machine: rt.MachineInfo) -> None:
    gc.collect()
    _store.fence()  # earlier tests' garbage freed: only this test's store changes the count
    before = _store.live_bytes()
    store = rt.from_numpy(np.arange(1000.0))
    assert _store.live_bytes() == before + 8000
    del store
    gc.collect()
    assert _store.live_bytes() == before + 8000  # Legate frees it at the next fence, not before
    assert _store.dropped_bytes() >= 8000
    _store.fence()
    assert _store.live_bytes() == before


def test_a_store_s_views_do_not_count_again(machine: rt.MachineInfo) -> None:
    store = rt.from_numpy(np.arange(1000.0).reshape(10, 100))
    held = _store.live_bytes()
    first_rows = _store.wrap(store.handle.slice(0, slice(0, 5)), store.dtype)  # a view at offset 0
    whole = _store.wrap(store.handle.slice(0, slice(0, 10)), store.dtype)  # Legate hands back the store
    assert _store.live_bytes() == held
    assert _store.live_bytes([whole]) == held - 8000
    del first_rows, whole
    gc.collect()
    assert _store.live_bytes() == held  # the store itself is still referenced
    del store
