"""The NumPy reference executor: runs any scheduled statement in one process.

It follows the scheduled loop structure: outer loops run one iteration at a
time in the scheduled order (rotations included), and each innermost block of
loops (a substituted leaf, or the innermost loops up to a size limit) is
computed at once with NumPy. Loop values are mapped back to the original index
variables through the provenance graph, and the guards of divide and split
drop the iterations past an extent that does not divide.

A substituted leaf's block is a box of each tensor (its loops are original
variables or inner variables of divide and split), so it runs as the leaf's
own NumPy kernel (`distal.leaf.Leaf.compute`: GEMM is one `matmul`) on
slices of the arrays. Other blocks, and leaf blocks whose loops do not map
to boxes, enumerate their points as index arrays (`distal.cin.blocks`).
The executor shares no code with the task bodies of the lowering
(`distal.lower.task_body`), so it stays an independent oracle for them.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from distal.cin.blocks import operand, run_index_block, store
from distal.cin.relations import Substitute
from distal.cin.statements import Assign
from distal.cin.walk import Walker
from distal.errors import RuntimeFailure
from distal.leaf import GENERIC, Leaf, einsum_pattern
from distal.notation.ast import Access, IndexVar
from distal.notation.check import compute_dtype
from distal.notation.variable import TensorVar
from distal.sizes import resolve

if TYPE_CHECKING:
    from distal.schedule.commands import ScheduleBase

__all__ = ["BLOCK_LIMIT", "run_reference"]

BLOCK_LIMIT = 1 << 20  # points computed at once in one vectorized block
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def run_reference(sched: ScheduleBase, bindings: Mapping[str, int] | None = None) -> None:
    """Run `sched` with NumPy; the output tensor receives the result."""
    ex = _Executor(sched, dict(bindings or {}))
    ex.stmt(sched.stmt, {})
    sched.output.set_array(ex.arrays[sched.output_var])


class _Executor(Walker):
    def __init__(self, sched: ScheduleBase, bindings: dict[str, int]) -> None:
        self.sched = sched
        self.prov = sched.provenance
        self.ext = self.prov.extents(bindings)
        self.arrays: dict[TensorVar, np.ndarray] = {}
        for t in sched.source.tensors():
            shape = tuple(resolve(s, bindings) for s in t.shape)
            held = sched.bindings.tensor(t)  # the data side: the user's tensor of this var
            if t == sched.output_var and not sched.source.accumulate:
                self.arrays[t] = np.zeros(shape, dtype=t.dtype)
            elif held.storage is None:
                self.arrays[t] = np.zeros(shape, dtype=t.dtype)
            else:
                data = held.to_numpy()
                if data.shape != shape:
                    raise RuntimeFailure(f"expected data of shape {shape} for {t.name}, but found {data.shape}")
                self.arrays[t] = data
        for w in sched.workspaces():
            self.arrays[w] = np.zeros(w.concrete_shape(), dtype=w.dtype)
        self.leaves = [(frozenset(r.vars), r.leaf) for r in sched.relations_of(Substitute)]

    # -- statements ------------------------------------------------------------

    def workspace(self, w: TensorVar) -> None:
        self.arrays[w][...] = 0

    def nest(self, chain: list[IndexVar], body: Assign, env: dict[IndexVar, int]) -> None:
        """A perfect nest above an assignment: outer loops one by one, a block at once."""
        split, leaf = self.block_start(chain)
        outer, inner = chain[:split], chain[split:]
        for values in itertools.product(*(range(self.ext[v]) for v in outer)):
            local = dict(env)
            local.update(zip(outer, values))
            if leaf is None or not self.leaf_block(body, local, inner, leaf):
                self.block(body, local, inner)

    def block_start(self, chain: list[IndexVar]) -> tuple[int, Leaf | None]:
        """Where the block of innermost loops starts, and the leaf substituted for it (if any)."""
        for vs, leaf in self.leaves:
            n = len(vs)
            if n <= len(chain) and frozenset(chain[-n:]) == vs:
                return len(chain) - n, leaf
        start, points = len(chain), 1
        while start > 0 and points * self.ext[chain[start - 1]] <= BLOCK_LIMIT:
            start -= 1
            points *= self.ext[chain[start]]
        return start, None

    # -- one vectorized block -------------------------------------------------

    def block(self, a: Assign, env: dict[IndexVar, int], block_vars: list[IndexVar]) -> None:
        found = self.prov.block_points(env, block_vars, self.ext)
        if found is not None:
            run_index_block(a, *found, self.lookup, self.ext)

    def leaf_block(self, a: Assign, env: dict[IndexVar, int], block: list[IndexVar], leaf: Leaf) -> bool:
        """Run the block with the leaf's kernel on boxes of the arrays; False when it is no box."""
        if einsum_pattern(a.lhs, a.rhs) is None:
            return False
        accesses = (a.lhs, *a.rhs.accesses())
        box = self.leaf_box(env, block, {v for acc in accesses for v in acc.indices})
        if box is None:
            return False
        ints, ranges = box
        if not ranges:
            return True  # every point past an extent
        letters: dict[IndexVar, str] = {}
        for acc in accesses:  # the block's own pattern: variables fixed outside it drop out
            for v in acc.indices:
                if v in ranges and v not in letters:
                    letters[v] = _LETTERS[len(letters)]

        def view(acc: Access) -> tuple[np.ndarray, str]:
            idx = [slice(*ranges[v]) if v in ranges else ints[v] for v in acc.indices]
            axes = "".join(letters[v] for v in acc.indices if v in ranges)
            return self.arrays[acc.tensor][(*idx, Ellipsis)], axes  # Ellipsis: a view even when all are ints

        dtype = compute_dtype(a.lhs, a.rhs)  # NumPy's einsum with out=: operands converted first
        factors = [view(f) for f in a.rhs.accesses()]
        out, out_axes = view(a.lhs)
        present = "".join(ax for _, ax in factors)
        keep = "".join(c for c in out_axes if c in present)
        spec = ",".join(ax for _, ax in factors) + "->" + keep
        kernel = leaf if leaf.pattern == spec else GENERIC  # a block of another shape than the leaf's
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            value = kernel.compute(*(operand(arr, dtype) for arr, _ in factors),
                                   pattern=None if kernel.pattern else spec)
        value = np.reshape(value, [n if c in keep else 1 for n, c in zip(out.shape, out_axes)])
        store(out, value, a.accumulate)  # broadcast along output loops no operand has
        return True

    def leaf_box(self, env: dict[IndexVar, int], block: list[IndexVar], used: set[IndexVar]
                 ) -> tuple[dict[IndexVar, int], dict[IndexVar, tuple[int, int]]] | None:
        """The values of the variables in `used` over the block: integers, and ranges [lo, hi).

        Each block variable must reach one used variable through inner
        variables of divide and split and workspace variables only (an offset
        plus the block variable); None when the block is no box, no ranges
        when the guards leave no point.
        """
        base, guards = self.prov.recover({**env, **{b: 0 for b in block}}, self.ext)
        if not all(bool(g) for g in guards):
            return {}, {}
        ranges: dict[IndexVar, tuple[int, int]] = {}
        for b in block:
            chain, cur, length = [b], b, self.ext[b]
            while True:
                d = self.prov.producer(cur)
                if d is None:
                    break
                step = d.offset_parent(cur)
                if step is None or (step[1] and not _known(base, step[0])):
                    return None  # fused, rotated or an outer variable: not a box
                cur, clipped = step
                if clipped:
                    length = min(length, self.ext[cur] - int(base[cur]))
                chain.append(cur)
            hits = [v for v in chain if v in used]
            if len(hits) != 1 or hits[0] in ranges:
                return None
            if length <= 0:
                return {}, {}
            lo = int(base[hits[0]])
            ranges[hits[0]] = (lo, lo + length)
        ints: dict[IndexVar, int] = {}
        for v in used - ranges.keys():
            x = base.get(v)
            if not isinstance(x, int | np.integer):
                return None
            ints[v] = int(x)
        return ints, ranges

    def lookup(self, t: TensorVar) -> tuple[np.ndarray, tuple[int, ...]]:
        arr = self.arrays[t]
        return arr, (0,) * arr.ndim


def _known(values: Mapping[IndexVar, object], v: IndexVar) -> bool:
    """Whether the provenance graph recovered an integer value of `v`."""
    return isinstance(values.get(v), int | np.integer)
