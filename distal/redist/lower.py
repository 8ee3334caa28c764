"""Lowering a weak path to concrete collectives with at most one allpermute.

Each dimension's axis list behaves like a stack whose top is the minor-most
axis: dynslice and the target of an alltoall push, allgather and the source
of an alltoall pop. A weak step says only how many parts move; lowering picks
the axes. Popping is forced (the top axes), pushing a dynslice is a choice.

The lowering runs the weak path forwards from the source type and backwards
from the target type (undoing a step pushes the gathered axes, which is the
backward choice), each pass biased towards the other (paper, section 7.3).
Where the two passes agree on the type at some point, the program needs no
permutation; otherwise one allpermute joins them where the tiles are
smallest, which is never after the final allgathers. Meshes mixing primes in
one dimension can make a pop impossible in both passes; then an allpermute
reorders that dimension first (the only case with more than one).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from distal.redist.mesh import Mesh
from distal.redist.weak_paths import WeakOp

__all__ = ["ConcreteOp", "FTypes", "lower_relabelled", "lower_weak_path"]

FType = tuple[tuple[int, ...], ...]
FTypes = list[FType]
# ("slice" | "gather", ((dim, run), ...)), ("a2a", ((src, dst, run), ...)), ("permute",)
ConcreteOp = tuple[Any, ...]


class _Stuck(Exception):
    """A pop whose top axes do not multiply to the wanted number of parts."""


def _split_top(lst: tuple[int, ...], n: int, sizes: Sequence[int]) -> int:
    """How many top axes of ``lst`` multiply to ``n``; raises `_Stuck` if none."""
    prod, k = 1, 0
    while prod < n and k < len(lst):
        prod *= sizes[lst[k]]
        k += 1
    if prod != n:
        raise _Stuck
    return k


class _Lowering:
    def __init__(self, mesh: Mesh, src: FType, dst: FType, ops: Sequence[WeakOp]) -> None:
        self.sizes = [f.size for f in mesh.factors]
        self.nf = len(self.sizes)
        # factor axes axis by axis, each axis minor factor first (so runs merge to whole axes)
        names = list(mesh.names)
        self.order = sorted(range(self.nf), key=lambda f: (names.index(mesh.factors[f].axis), -f))
        self.push_order = sorted(range(self.nf), key=lambda f: (names.index(mesh.factors[f].axis), f))
        self.src, self.dst, self.ops = src, dst, list(ops)

    # --- choices -------------------------------------------------------------------------
    def _pick(self, t: FType, dim: int, primes: list[int], hint: FType | None, goal: FType) -> tuple[int, ...]:
        """A run of free factor axes with the given primes to push on ``dim``."""
        used = {f for lst in t for f in lst}
        want = sorted(primes)
        # 1. what the other pass has on top of this dimension
        if hint is not None:
            run = self._top_with(hint[dim], want)
            if run is not None and not used & set(run):
                return run
        # 2. the goal's axes just below what is already there
        cur, g = t[dim], goal[dim]
        if len(cur) <= len(g) and g[len(g) - len(cur) :] == cur:
            below = g[: len(g) - len(cur)]
            run = self._top_with(below[::-1], want)
            if run is not None:
                run = run[::-1]
                if not used & set(run):
                    return run
        # 3. free axes the goal does not use, then any free axis
        in_goal = {f for lst in goal for f in lst}
        # one push at a time builds an axis major factor first; a run lists it minor first
        order = self.order if len(want) > 1 else self.push_order
        pool = [f for f in order if f not in used and f not in in_goal]
        pool += [f for f in order if f not in used and f in in_goal]
        run_l: list[int] = []
        for p in want:
            f = next(f for f in pool if self.sizes[f] == p and f not in run_l)
            run_l.append(f)
        return tuple(run_l)

    def _top_with(self, lst: Sequence[int], want: list[int]) -> tuple[int, ...] | None:
        k = len(want)
        run = tuple(lst[:k])
        if len(run) == k and sorted(self.sizes[f] for f in run) == want:
            return run
        return None

    def _primes(self, n: int) -> list[int]:
        out = []
        for p in sorted(set(self.sizes)):
            while n % p == 0:
                out.append(p)
                n //= p
        assert n == 1
        return out

    # --- one step forwards / backwards ------------------------------------------------
    def forward(self, t: FType, op: WeakOp, hint: FType | None) -> tuple[FType, ConcreteOp]:
        lists = list(t)
        kind = op[0]
        if kind == "slice":
            groups = []
            for i, n in op[1]:
                run = self._pick(tuple(lists), i, self._primes(n), hint, self.dst)
                lists[i] = run + lists[i]
                groups.append((i, run))
            return tuple(lists), ("slice", tuple(groups))
        if kind == "gather":
            groups = []
            for i, n in op[1]:
                k = _split_top(lists[i], n, self.sizes)
                groups.append((i, lists[i][:k]))
                lists[i] = lists[i][k:]
            return tuple(lists), ("gather", tuple(groups))
        assert kind == "a2a"
        moves = []
        for i, j, n in op[1]:
            k = _split_top(lists[i], n, self.sizes)
            moves.append((i, j, lists[i][:k]))
            lists[i] = lists[i][k:]
        for _, j, run in moves:
            lists[j] = run + lists[j]
        return tuple(lists), ("a2a", tuple(moves))

    def backward(self, t: FType, op: WeakOp, hint: FType | None) -> FType:
        lists = list(t)
        kind = op[0]
        if kind == "slice":
            for i, n in op[1]:
                lists[i] = lists[i][_split_top(lists[i], n, self.sizes) :]
            return tuple(lists)
        if kind == "gather":
            for i, n in op[1]:
                run = self._pick(tuple(lists), i, self._primes(n), hint, self.src)
                lists[i] = run + lists[i]
            return tuple(lists)
        assert kind == "a2a"
        moves = []
        for i, j, n in op[1]:
            k = _split_top(lists[j], n, self.sizes)
            moves.append((i, lists[j][:k]))
            lists[j] = lists[j][k:]
        for i, run in moves:
            lists[i] = run + lists[i]
        return tuple(lists)

    # --- passes -------------------------------------------------------------------------
    def forward_pass(self, hints: list[FType | None]) -> tuple[FTypes, list[ConcreteOp]]:
        types, cops = [self.src], []
        for k, op in enumerate(self.ops):
            try:
                t, c = self.forward(types[-1], op, hints[k + 1])
            except _Stuck:
                break
            types.append(t)
            cops.append(c)
        return types, cops

    def backward_pass(self, hints: list[FType | None]) -> list[FType | None]:
        out: list[FType | None] = [None] * (len(self.ops) + 1)
        out[-1] = self.dst
        for k in range(len(self.ops) - 1, -1, -1):
            after = out[k + 1]
            assert after is not None
            try:
                out[k] = self.backward(after, self.ops[k], hints[k])
            except _Stuck:
                break
        return out


def _reorder_for(lowering: _Lowering, t: FType, op: WeakOp) -> FType:
    """``t`` with the axes the pops of ``op`` need moved to the top of their dimensions."""
    lists = list(t)
    pops = op[1] if op[0] in ("gather", "a2a") else ()
    for g in pops:
        i, n = g[0], g[-1]
        want = lowering._primes(n)
        top: list[int] = []
        rest = list(lists[i])
        for p in want:
            f = next(f for f in rest if lowering.sizes[f] == p)
            rest.remove(f)
            top.append(f)
        lists[i] = tuple(top + rest)
    return tuple(lists)


def lower_weak_path(
    mesh: Mesh, src: FType, dst: FType, ops: Sequence[WeakOp], rounds: int = 2
) -> tuple[FTypes, list[ConcreteOp]]:
    """Concrete types (one more than ops) and concrete ops for a weak path."""
    ops = _slice_blocks(ops)
    low = _Lowering(mesh, src, dst, ops)
    m = len(ops)
    fwd_types: FTypes = []
    fwd_ops: list[ConcreteOp] = []
    back: list[FType | None] = low.backward_pass([None] * (m + 1))
    for _ in range(rounds):
        fwd_types, fwd_ops = low.forward_pass(back)
        hints: list[FType | None] = list(fwd_types) + [None] * (m + 1 - len(fwd_types))
        back = low.backward_pass(hints)
    # a point where both passes agree: no permutation
    for k in range(len(fwd_types) - 1, -1, -1):
        if back[k] == fwd_types[k]:
            return _join(low, fwd_types[: k + 1], fwd_ops[:k], back, k)
    # one permutation where tiles are smallest (latest among equals)
    candidates = [k for k in range(len(fwd_types)) if back[k] is not None]
    if candidates:

        def parts(t: FType) -> int:
            return math.prod(low.sizes[f] for lst in t for f in lst)

        best = max(candidates, key=lambda k: (parts(fwd_types[k]), k))
        types = fwd_types[: best + 1]
        cops = [*fwd_ops[:best], ("permute",)]
        bt = back[best]
        assert bt is not None
        types.append(bt)
        return _join(low, types, cops, back, best)
    # rare (mixed primes in one dimension): reorder where the forward pass got stuck
    k = len(fwd_types) - 1
    fixed = _reorder_for(low, fwd_types[k], ops[k])
    rest_types, rest_ops = lower_weak_path(mesh, fixed, dst, ops[k:], rounds)
    return fwd_types + rest_types, [*fwd_ops, ("permute",), *rest_ops]


def _slice_blocks(ops: Sequence[WeakOp]) -> list[WeakOp]:
    """Merge runs of one-factor dynslices into one multi-dimension dynslice.

    Dynslices commute, so lowering may push a block's factors in any order;
    this lets it build the target's axis lists even when they mix primes.
    """
    out: list[WeakOp] = []
    for op in ops:
        if op[0] != "slice":
            out.append(op)
            continue
        parts: dict[int, int] = dict(out.pop()[1]) if out and out[-1][0] == "slice" else {}
        block = op[1] if len(op) == 2 else ((op[1], op[2]),)
        for i, n in block:
            parts[i] = parts.get(i, 1) * n
        out.append(("slice", tuple(sorted(parts.items()))))
    return out


def _join(
    low: _Lowering, types: FTypes, cops: list[ConcreteOp], back: list[FType | None], k: int
) -> tuple[FTypes, list[ConcreteOp]]:
    """Continue from ``back[k]`` with the backward pass's types to the end."""
    for step in range(k, len(low.ops)):
        before, after = back[step], back[step + 1]
        assert before is not None and after is not None
        t, c = low.forward(before, low.ops[step], after)
        assert t == after, (t, after)
        types.append(t)
        cops.append(c)
    return types, cops


def lower_relabelled(mesh: Mesh, src: FType, dst: FType, ops: Sequence[WeakOp]) -> tuple[FTypes, list[ConcreteOp]]:
    """The paper's lowering (Theorem 6.4, eq. (8), section 7.3): never stuck, one final allpermute.

    The path runs forwards from the source, biased towards the target like
    `lower`. Where a pop finds a factor of another prime on top, a
    ``("relabel",)`` step re-chooses the device map so that the factors to pop
    are on top (Fig. 10: no data moves). Before the path's final allgathers
    (found backwards from the target) one allpermute returns to the mesh's own
    device map and the target's axes, unless the forward pass is already
    there without a relabel. The program therefore costs the weak path's cost
    plus at most ``localsize`` of the type before the final allgathers, which is
    at most ``localsize(dst)`` (Theorem 6.7).
    """
    ops = _slice_blocks(ops)
    low = _Lowering(mesh, src, dst, ops)
    m = len(ops)
    t = m
    while t > 0 and ops[t - 1][0] == "gather":
        t -= 1
    # backwards from the target over the final allgathers (pushes never get stuck)
    tail: list[FType] = [dst]
    for k in range(m - 1, t - 1, -1):
        tail.append(low.backward(tail[-1], ops[k], None))
    tail.reverse()  # tail[k - t] is the type before ops[k]
    hints = low.backward_pass([None] * (m + 1))
    for k in range(t, m + 1):
        hints[k] = tail[k - t]
    types: FTypes = [src]
    cops: list[ConcreteOp] = []
    relabelled = False
    for k in range(t):
        try:
            nxt, c = low.forward(types[-1], ops[k], hints[k + 1])
        except _Stuck:
            fixed = _reorder_for(low, types[-1], ops[k])
            types.append(fixed)
            cops.append(("relabel",))
            relabelled = True
            nxt, c = low.forward(fixed, ops[k], hints[k + 1])
        types.append(nxt)
        cops.append(c)
    if relabelled or types[-1] != tail[0]:
        types.append(tail[0])
        cops.append(("permute",))
    for k in range(t, m):
        nxt, c = low.forward(types[-1], ops[k], tail[k - t + 1])
        assert nxt == tail[k - t + 1], (nxt, tail[k - t + 1])
        types.append(nxt)
        cops.append(c)
    return types, cops
