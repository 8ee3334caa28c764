"""Redistribution and reading data back within Legate's memory: refused with OutOfMemory, never an abort.

A redistribution's stores (one per collective, plus the local expand/pad/crop
steps) are all held until the next fence, next to the tensor's blocks; reading
a store back copies it through an instance of Legate's own memory. Both were
unchecked: the mapper aborted the process ("Out of memory", signal 6) where
they did not fit. A replicated format's placement read the whole staging store
as one more instance (the copy onto Legate had split it in two).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import numpy as np
import pytest

import distal as dt
from distal import runtime as rt
from distal.redist.finish import finish
from distal.redist.formats import plan_redistribution
from distal.runtime import _redistribute, _store
from tests._strategies.plans import STILL_USABLE

pytestmark = pytest.mark.legate  # in this process, or in a child process

Runner = Callable[..., subprocess.CompletedProcess[str]]

# B is 200^3 float64 (64 MB, 61.0 MiB) on 2 processors, placed by SOURCE and redistributed to TARGET
SCRIPT = """
import numpy as np
import distal as dt
m = dt.Machine(dt.Grid(2))
b = np.random.default_rng(0).random((200, 200, 200))
B = dt.Tensor.from_array("B", b, dt.Format({source!r}, m))
try:
    B.redistribute(dt.Format({target!r}, m))
except dt.OutOfMemory as exc:
    print("refused:", exc)
print("format", B.format)
try:
    print("data", np.array_equal(B.to_numpy(), b))
except dt.OutOfMemory as exc:
    print("refused read:", exc)
"""
SCRIPT += STILL_USABLE  # no braces: SCRIPT.format leaves it as it is


def _run(run_python: Runner, source: str, target: str, sysmem: int) -> str:
    done = run_python(SCRIPT.format(source=source, target=target),
                      env={"LEGATE_CONFIG": f"--cpus 2 --gpus 0 --omps 0 --utility 1 --sysmem {sysmem}"}, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert "usable True" in done.stdout, done.stdout
    return done.stdout


def test_a_replicated_tensor_is_placed_and_redistributed_where_it_fits(run_python: Runner) -> None:
    # placing by xyz -> * (blocks 122.1 MiB) then dynslicing to xyz -> x (61.0 MiB more): the process aborted
    # under 220 MiB, in the placement (the whole staging store made again) or in the dynslice
    out = _run(run_python, "xyz -> *", "xyz -> x", 220)
    assert "format xyz -> x" in out and "data True" in out, out


def test_a_redistribution_that_cannot_fit_is_refused_and_leaves_the_tensor_as_it_was(run_python: Runner) -> None:
    out = _run(run_python, "xyz -> x", "xyz -> *", 190)
    refused = next(line for line in out.splitlines() if line.startswith("refused:"))
    assert ("expected redistributing B[200, 200, 200] float64 from xyz -> x to xyz -> * (its new stores 122.1 MiB: "
            "allgather(0{x}) 122.1 MiB) to fit in Legate's system memory of 190.0 MiB (--sysmem 190), of which live "
            "tensors' stores hold 61.0 MiB, leaving 129.0 MiB, but it needs 150.3 MiB") in refused
    assert "format xyz -> x" in out and "data True" in out, out


@pytest.mark.parametrize(("source", "target", "shape"), [
    ("xy -> x", "xy -> y", (7, 5)),
    ("xy -> x", "xy -> *", (6, 4)),
    ("xy -> *", "xy -> y", (5, 9)),
    ("xy -> 0", "xy -> x", (4, 4)),
])
def test_made_bytes_are_the_stores_a_redistribution_makes(machine: rt.MachineInfo, source: str, target: str,
                                                          shape: tuple[int, int]) -> None:
    m = dt.Machine(dt.Grid(3))
    data = np.arange(float(np.prod(shape))).reshape(shape)
    B = dt.Tensor.from_array("B", data, dt.Format(source, m))
    held = B.storage
    assert isinstance(held, rt.FormatStore)
    moves = finish(plan_redistribution(held.format, dt.Format(target, m), shape))
    _store.fence()
    before = _store.live_bytes()
    moved = _redistribute.run_plan_steps(moves, held)
    assert _store.live_bytes() - before == sum(b for _, b in _redistribute.made_bytes(moves, held))
    np.testing.assert_array_equal(moved.to_numpy(), data)
