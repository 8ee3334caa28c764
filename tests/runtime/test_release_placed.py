"""Freeing placed tensors after plans that read and wrote sub-blocks of their device blocks (issue 11, item 1).

Plans now take tiles that lie inside one device block (Solomonik's k-slabs, a hierarchical format's
leaf blocks) or span a box of them (hierarchical Cannon's k chunks) from the block store itself, pinned points through a tiling partition of that store
(`_launch._pinned_args`). Freeing a store after launches on its sub-stores once crashed Legion
(SIGSEGV in `DiscardOp`): this loop makes new placed tensors, runs such plans (pinned points and
index launches), reads back, drops the tensors, and must neither crash nor keep growing live stores.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest

pytestmark = pytest.mark.legate  # in a child process

Runner = Callable[..., subprocess.CompletedProcess[str]]
CONFIG = {"LEGATE_CONFIG": "--cpus 2 --sysmem 3000 --utility 1"}

LOOP = """
import gc
import numpy as np
import distal as dt
from distal.kernels._algorithms import ALGORITHMS
from distal.runtime import _execute, _store
seed, rounds = {seed}, {rounds}
rng = np.random.default_rng(seed)
mh = dt.Machine(dt.Grid(2, 2), dt.Grid(2, 2))
cases = [("solomonik", dt.kernels.machine("solomonik", 8), None), ("summa", mh, 4), ("cannon", mh, 0)]
gathers = []
real = _execute.gather
_execute.gather = lambda held: gathers.append(1) or real(held)
start = None
for r in range(rounds):
    name, m, quarter = cases[r % 3]
    n = 4 * int(rng.integers(1, 4)) if quarter is not None else int(rng.integers(2, 11))
    alg = ALGORITHMS[name]
    b, c = rng.random((n, n)), rng.random((n, n))
    A = dt.Tensor("A", (n, n), alg.format_of(0, m))
    B = dt.Tensor.from_array("B", b, alg.format_of(1, m))
    C = dt.Tensor.from_array("C", c, alg.format_of(2, m))
    params = dict(chunk=n // 4) if quarter else dict()  # cannon: k in a node's tile, spanning leaf blocks
    plan = dt.kernels.build(name, m, A, B, C, **params).compile(rotation="points" if r % 4 < 2 else None)
    plan.run()
    assert np.allclose(A.to_numpy(), b @ c), (r, name, n)
    del A, B, C, plan
    gc.collect()
    _store.fence()
    if start is None:
        start = (_store.live_bytes(), len(_store._LIVE))
end = (_store.live_bytes(), len(_store._LIVE))
assert end <= start, (start, end)
print("live", start, end, "gathers", len(gathers))
"""


def test_freeing_placed_tensors_after_in_place_sub_block_plans_does_not_crash(run_python: Runner) -> None:
    for seed in (1, 2, 3):
        result = run_python(LOOP.format(seed=seed, rounds=24), env=CONFIG, timeout=300)
        assert result.returncode == 0, (seed, result.returncode, result.stderr[-2000:])
        assert "live" in result.stdout and result.stdout.strip().endswith("gathers 0"), result.stdout
