"""Shortest-path search over weak types (paper, sections 5 and 7.2).

With the mesh decomposed into prime factors and the global type fixed, a weak
type is identified by its local type, here kept as the number of parts ``q``
each dimension is split into (global / local). Two types with equal ``q`` are
related by a permutation of devices, so the search never tracks axis names.
Edges are the weak collectives with multi-axis variants:

* ``("slice", i, p)``: dynslice dimension ``i`` by one free factor ``p`` (cost 0);
* ``("gather", ((i, n), ...))``: allgather ``n`` parts of each listed dimension
  (cost: local size after); one dimension at a time, plus a single step that
  gathers everything left in one go when that reaches the target;
* ``("a2a", ((i, j, n), ...))``: alltoall moving ``n`` parts from ``i`` to
  ``j`` (cost: local size); besides single moves, steps that combine moves on
  disjoint dimensions, each taking factors a dimension has too many of (with
  respect to the target) to one that lacks them.

Nodes are bounded by the height bound ``max(localsize(src), localsize(dst))``.
The search is A* with the admissible, consistent estimate "0 if only
dynslices are left, otherwise localsize(target)": every path that needs a
collective other than dynslice pays at least the target's local size for the
last such collective.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = ["WeakOp", "WeakProblem", "paths_below", "shortest_path", "shortest_paths"]

WeakOp = tuple[Any, ...]


@cache
def _valuation(n: int, p: int) -> int:
    v = 0
    while n % p == 0:
        n //= p
        v += 1
    return v


@cache
def _divisors(n: int) -> tuple[int, ...]:
    """Divisors of ``n`` above 1, ascending."""
    return tuple(d for d in range(2, n + 1) if n % d == 0)


@dataclass(frozen=True, slots=True)
class WeakProblem:
    """A redistribution problem in weak form: parts per dimension, mesh primes."""

    global_type: tuple[int, ...]
    src: tuple[int, ...]
    dst: tuple[int, ...]
    primes: tuple[tuple[int, int], ...]  # (prime, how many factor axes of that prime)

    @property
    def bound(self) -> int:
        return max(self.local_size(self.src), self.local_size(self.dst))

    def local_size(self, q: Sequence[int]) -> int:
        return math.prod(self.global_type) // math.prod(q)

    def free(self, q: Sequence[int]) -> dict[int, int]:
        return {p: m - sum(_valuation(x, p) for x in q) for p, m in self.primes}


def _neighbours(pb: WeakProblem, q: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], int, WeakOp]]:
    g = pb.global_type
    rank = len(q)
    ls = pb.local_size(q)
    bound = pb.bound
    local = [g[i] // q[i] for i in range(rank)]
    w = list(q)  # scratch copy, restored after each yield
    # dynslice, one factor at a time (free, so merging them changes nothing)
    for p, c in pb.free(q).items():
        if c <= 0:
            continue
        for i in range(rank):
            if local[i] % p == 0:
                w[i] = q[i] * p
                yield tuple(w), 0, ("slice", i, p)
                w[i] = q[i]
    # allgather one dimension, and everything that reaches the target at once
    for i in range(rank):
        for n in _divisors(q[i]):
            if ls * n > bound:
                break
            w[i] = q[i] // n
            yield tuple(w), ls * n, ("gather", ((i, n),))
            w[i] = q[i]
    if q != pb.dst and all(a % b == 0 for a, b in zip(q, pb.dst)):
        groups = tuple((i, q[i] // pb.dst[i]) for i in range(rank) if q[i] != pb.dst[i])
        if len(groups) > 1:
            yield pb.dst, pb.local_size(pb.dst), ("gather", groups)
    # alltoall, single moves
    for i in range(rank):
        if q[i] == 1:
            continue
        for n in _divisors(q[i]):
            w[i] = q[i] // n
            for j in range(rank):
                if j != i and local[j] % n == 0:
                    w[j] = q[j] * n
                    yield tuple(w), ls, ("a2a", ((i, j, n),))
                    w[j] = q[j]
            w[i] = q[i]
    # alltoall, several directed moves on disjoint dimensions at once
    moves = []
    for i in range(rank):
        over = math.gcd(q[i], q[i] // math.gcd(q[i], pb.dst[i]))
        if over == 1:
            continue
        for j in range(rank):
            if j == i:
                continue
            lack = pb.dst[j] // math.gcd(q[j], pb.dst[j])
            n = math.gcd(math.gcd(over, lack), local[j])
            if n > 1:
                moves.append((i, j, n))
    if len(moves) > 1:
        for combo in _disjoint(moves, 0, 0):
            for i, j, n in combo:
                w[i] //= n
                w[j] *= n
            yield tuple(w), ls, ("a2a", combo)
            w[:] = q


def _disjoint(moves: list[tuple[int, int, int]], start: int, used: int) -> Iterator[tuple[tuple[int, int, int], ...]]:
    """Sets of at least two moves (from ``start`` on) whose dimensions are distinct."""
    for k in range(start, len(moves)):
        i, j, _ = moves[k]
        mask = (1 << i) | (1 << j)
        if used & mask:
            continue
        for rest in _disjoint(moves, k + 1, used | mask):
            yield (moves[k], *rest)
        if used:
            yield (moves[k],)


def _estimate(pb: WeakProblem, q: tuple[int, ...]) -> int:
    if all(b % a == 0 for a, b in zip(q, pb.dst)):
        return 0
    return pb.local_size(pb.dst)


def shortest_paths(pb: WeakProblem, limit: int = 16) -> tuple[int, list[list[WeakOp]]]:
    """The cost of a cheapest path from ``pb.src`` to ``pb.dst`` and up to ``limit`` such paths.

    Lowering tells apart paths of equal weak cost (one may need a final
    permutation, another not), so the search keeps every optimal parent.
    Runs of dynslices are enumerated in one order only.

    >>> pb = WeakProblem((8, 8), (8, 1), (1, 8), ((2, 3),))
    >>> shortest_paths(pb)
    (8, [[('a2a', ((0, 1, 8),))]])
    """
    start, goal = pb.src, pb.dst
    dist = {start: 0}
    parents: dict[tuple[int, ...], list[tuple[tuple[int, ...], WeakOp]]] = {start: []}
    tie = itertools.count()
    heap = [(_estimate(pb, start), 0, next(tie), start)]
    done: set[tuple[int, ...]] = set()
    best: int | None = None
    while heap:
        f, d, _, q = heapq.heappop(heap)
        if best is not None and f > best:
            break
        if q in done or d > dist[q]:
            continue
        done.add(q)
        if q == goal:
            best = d
            continue
        for q2, c, op in _neighbours(pb, q):
            nd = d + c
            old = dist.get(q2)
            if old is None or nd < old:
                dist[q2] = nd
                parents[q2] = [(q, op)]
                heapq.heappush(heap, (nd + _estimate(pb, q2), nd, next(tie), q2))
            elif nd == old:
                parents[q2].append((q, op))
    assert best is not None, "a memory-bounded path always exists (Theorem 4.8)"
    paths: list[list[WeakOp]] = []

    def walk(q: tuple[int, ...], suffix: list[WeakOp]) -> None:
        if len(paths) >= limit:
            return
        if q == start:
            paths.append(suffix[::-1])
            return
        for prev, op in parents[q]:
            # consecutive dynslices commute: keep them in ascending (dim, prime) order
            if op[0] == "slice" and suffix and suffix[-1][0] == "slice" and op > suffix[-1]:
                continue
            suffix.append(op)
            walk(prev, suffix)
            suffix.pop()

    walk(goal, [])
    return best, paths


def shortest_path(pb: WeakProblem) -> tuple[int, list[WeakOp]]:
    """A cheapest sequence of weak collectives from ``pb.src`` to ``pb.dst``.

    >>> pb = WeakProblem((8, 8), (8, 1), (1, 8), ((2, 3),))
    >>> shortest_path(pb)
    (8, [('a2a', ((0, 1, 8),))])
    """
    cost, paths = shortest_paths(pb, 1)
    return cost, paths[0]


def paths_below(
    pb: WeakProblem, cap: int, limit: int = 64, max_pops: int = 8000, max_nodes: int = 500
) -> Iterator[tuple[int, list[WeakOp]]]:
    """Paths from ``pb.src`` to ``pb.dst`` costing less than ``cap``, cheapest first.

    Used when lowering the cheapest path needs a permutation: a slightly
    dearer path may need none and cost less in all. The search expands every
    node whose estimate is below ``cap``, computes exact remaining costs on
    that subgraph backwards from the target, and then enumerates paths
    best-first with those exact estimates (at most ``limit`` of them). The
    time is bounded by expanding at most ``max_nodes`` nodes (the most
    promising first; beyond that the paths found are a subset) and looking at
    most at ``max_pops`` partial paths.

    >>> pb = WeakProblem((8, 8), (8, 1), (1, 8), ((2, 3),))
    >>> [c for c, _ in paths_below(pb, 9)]
    [8]
    """
    start, goal = pb.src, pb.dst
    edges: dict[tuple[int, ...], list[tuple[tuple[int, ...], int, WeakOp]]] = {}
    dist = {start: 0}
    tie = itertools.count()
    heap = [(_estimate(pb, start), 0, next(tie), start)]
    while heap and len(edges) < max_nodes:
        f, d, _, q = heapq.heappop(heap)
        if f >= cap:
            break
        if q in edges or d > dist[q]:
            continue
        out = edges[q] = []
        if q == goal:
            continue
        for q2, c, op in _neighbours(pb, q):
            out.append((q2, c, op))
            nd = d + c
            if nd < dist.get(q2, nd + 1):
                dist[q2] = nd
                heapq.heappush(heap, (nd + _estimate(pb, q2), nd, next(tie), q2))
    # exact cost to the goal inside the expanded subgraph
    back: dict[tuple[int, ...], list[tuple[tuple[int, ...], int]]] = {}
    for q, out in edges.items():
        for q2, c, _ in out:
            back.setdefault(q2, []).append((q, c))
    togo = {goal: 0}
    heap2 = [(0, next(tie), goal)]
    while heap2:
        d, _, q = heapq.heappop(heap2)
        if d > togo[q]:
            continue
        for q0, c in back.get(q, ()):
            if d + c < togo.get(q0, d + c + 1):
                togo[q0] = d + c
                heapq.heappush(heap2, (d + c, next(tie), q0))
    if start not in togo:
        return
    # best-first over partial paths with exact estimates: complete paths come cheapest first;
    # a partial path is a node of a tree of (parent, op) records
    parent: list[int] = [-1]
    last: list[WeakOp] = [("start",)]
    frontier: list[tuple[int, int, int, tuple[int, ...]]] = [(togo[start], 0, 0, start)]
    found = pops = 0
    while frontier and found < limit and pops < max_pops:
        pops += 1
        f, d, rec, q = heapq.heappop(frontier)
        if f >= cap:
            return
        if q == goal:
            found += 1
            ops: list[WeakOp] = []
            while rec > 0:
                ops.append(last[rec])
                rec = parent[rec]
            yield d, ops[::-1]
            continue
        prev = last[rec]
        for q2, c, op in edges.get(q, ()):
            t = togo.get(q2)
            if t is None or d + c + t >= cap:
                continue
            if op[0] == "slice" and prev[0] == "slice" and op < prev:
                continue
            parent.append(rec)
            last.append(op)
            heapq.heappush(frontier, (d + c + t, d + c, len(last) - 1, q2))
