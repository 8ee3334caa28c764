"""Freeing tensors after pinned single-point launches (issue 11, reproducer 4).

Pinned launches used to read and write their blocks through sub-stores (`tile_of`); freeing the
store afterwards crashed Legion with SIGSEGV (`DiscardOp::trigger_ready ->
EqKDNode::find_to_get_previous`) in about one run of three of the loop below. They now take
their blocks through a tiling partition of the whole store (`_launch._pinned_args`).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import numpy as np
import pytest

from distal import runtime as rt
from distal.runtime import _launch

pytestmark = pytest.mark.legate  # in this process, or in a child process

Runner = Callable[..., subprocess.CompletedProcess[str]]
CONFIG = {"LEGATE_CONFIG": "--cpus 2 --sysmem 3000 --utility 1"}

# new tensors, a rotation compiled to pinned points, run, read back, tensors dropped
LOOP = """
import gc, sys
import numpy as np
import distal as dt
from distal.runtime import _store
seed, rounds = {seed}, {rounds}
rng = np.random.default_rng(seed)
i, j, k = dt.index_vars("i j k")
v0, v1, v2, v3, v4 = dt.index_vars("v0 v1 v2 v3 v4")
m = dt.Machine(dt.Grid(5))
start = None
for r in range(rounds):
    shape = tuple(int(x) for x in rng.integers(1, 9, 3))
    b = rng.random((shape[0], shape[2], shape[1]))
    A = dt.Tensor("A", shape)
    B = dt.Tensor.from_array("B", b)
    A[i, j, k] = B[i, k, j]
    plan = (A.schedule().distribute([j], [v0], [v1], m).split(v1, v2, v3, 5)
            .communicate([B, A], k).rotate(v3, [v0], v4).compile(rotation="points"))
    plan.run()
    assert np.allclose(A.to_numpy(), np.einsum("ikj->ijk", b)), r
    del A, B, plan
    gc.collect()
    _store.fence()
    if start is None:
        start = (_store.live_bytes(), len(_store._LIVE))
end = (_store.live_bytes(), len(_store._LIVE))
print("live", start, end)
"""


def test_freeing_tensors_after_pinned_point_launches_does_not_crash(run_python: Runner) -> None:
    for seed in (2, 5, 1, 3, 4):
        result = run_python(LOOP.format(seed=seed, rounds=20), env=CONFIG, timeout=300)
        assert result.returncode == 0, (seed, result.returncode, result.stderr[-2000:])
        assert "live" in result.stdout


def test_memory_does_not_grow_over_fifty_runs(run_python: Runner) -> None:
    result = run_python(LOOP.format(seed=7, rounds=50), env=CONFIG, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    line = next(x for x in result.stdout.splitlines() if x.startswith("live"))
    start, end = line.removeprefix("live ").split(") (")
    assert start + ")" == "(" + end, line


def test_pinned_blocks_are_tiles_of_the_whole_store(machine: rt.MachineInfo) -> None:
    store = rt.from_numpy(np.arange(35.0).reshape(7, 5))
    block = rt.tile_of(store, (3, 2), (2, 1))
    args = _launch._pinned_args([(block, rt.Privilege.READ_WRITE)])
    assert args is not None
    (arg,) = args
    assert arg.store is store and arg.tile == (3, 2)
    # point 0 gets color (2, 1), point 1 the empty color (3, 1) past the store's end
    assert [tuple(a.at((p,)) for a in arg.maps(1)) for p in (0, 1)] == [(2, 1), (3, 1)]


def _negate(point: tuple[int, ...], tile: np.ndarray) -> None:
    tile *= -1.0


NEGATE = rt.register_kernel(_negate)


def test_pinned_launch_on_a_block_changes_that_block_only(machine: rt.MachineInfo) -> None:
    data = np.arange(35.0).reshape(7, 5)
    store = rt.from_numpy(data)
    rt.point_launch(NEGATE, [(rt.tile_of(store, (3, 2), (2, 1)), rt.Privilege.READ_WRITE)], (0,), 0)
    expected = data.copy()
    expected[6:7, 2:4] *= -1.0
    np.testing.assert_array_equal(rt.to_numpy(store), expected)
