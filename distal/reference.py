"""The NumPy reference executor: runs any scheduled statement in one process.

It follows the scheduled loop structure: outer loops run one iteration at a
time in the scheduled order (rotations included), and each innermost block of
loops (a substituted leaf, or the innermost loops up to a size limit) is
computed at once with NumPy. Loop values are mapped back to the original index
variables through the provenance graph, and the guards of divide and split
drop the iterations past an extent that does not divide.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from distal.cin.ast import Assign
from distal.cin.blocks import run_index_block
from distal.cin.relations import Substitute
from distal.cin.walk import Walker
from distal.errors import RuntimeFailure
from distal.notation.ast import IndexVar
from distal.notation.tensor import Tensor
from distal.sizes import resolve

if TYPE_CHECKING:
    from distal.schedule.schedule import Schedule

__all__ = ["BLOCK_LIMIT", "run_reference"]

BLOCK_LIMIT = 1 << 20  # points computed at once in one vectorized block


def run_reference(sched: Schedule, bindings: Mapping[str, int] | None = None) -> None:
    """Run `sched` with NumPy; the output tensor receives the result."""
    ex = _Executor(sched, dict(bindings or {}))
    ex.stmt(sched.stmt, {})
    out = sched.output
    out.set_array(ex.arrays[out])


class _Executor(Walker):
    def __init__(self, sched: Schedule, bindings: dict[str, int]) -> None:
        self.sched = sched
        self.prov = sched.provenance
        self.ext = self.prov.extents(bindings)
        self.arrays: dict[Tensor, np.ndarray] = {}
        for t in sched.source.tensors():
            shape = tuple(resolve(s, bindings) for s in t.shape)
            if t is sched.output and not sched.source.accumulate:
                self.arrays[t] = np.zeros(shape, dtype=t.dtype)
            elif t._array is None and t.storage is None:
                self.arrays[t] = np.zeros(shape, dtype=t.dtype)
            else:
                data = t.to_numpy()
                if data.shape != shape:
                    raise RuntimeFailure(f"expected data of shape {shape} for {t.name}, but found {data.shape}")
                self.arrays[t] = data
        for w in sched.workspaces():
            self.arrays[w] = np.zeros(w.concrete_shape(), dtype=w.dtype)
        self.leaf_vars = [frozenset(r.vars) for r in sched.relations_of(Substitute)]

    # -- statements ------------------------------------------------------------

    def workspace(self, w: Tensor) -> None:
        self.arrays[w][...] = 0

    def nest(self, chain: list[IndexVar], body: Assign, env: dict[IndexVar, int]) -> None:
        """A perfect nest above an assignment: outer loops one by one, a block at once."""
        split = self.block_start(chain)
        outer, inner = chain[:split], chain[split:]
        for values in itertools.product(*(range(self.ext[v]) for v in outer)):
            local = dict(env)
            local.update(zip(outer, values))
            self.block(body, local, inner)

    def block_start(self, chain: list[IndexVar]) -> int:
        for leaf in self.leaf_vars:
            n = len(leaf)
            if n <= len(chain) and frozenset(chain[-n:]) == leaf:
                return len(chain) - n
        start, points = len(chain), 1
        while start > 0 and points * self.ext[chain[start - 1]] <= BLOCK_LIMIT:
            start -= 1
            points *= self.ext[chain[start]]
        return start

    # -- one vectorized block -------------------------------------------------

    def block(self, a: Assign, env: dict[IndexVar, int], block_vars: list[IndexVar]) -> None:
        found = self.prov.block_points(env, block_vars, self.ext)
        if found is not None:
            run_index_block(a, *found, self.lookup, self.ext)

    def lookup(self, t: Tensor) -> tuple[np.ndarray, tuple[int, ...]]:
        arr = self.arrays[t]
        return arr, (0,) * arr.ndim
