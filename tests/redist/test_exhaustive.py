"""Differential test: synthesized cost against exhaustive search over concrete types.

The oracle runs Dijkstra over every syntactic type of small problems (mesh
2x2x2, rank up to 3), with the typing rules of Fig. 8 in their multi-axis,
multi-dimension forms and an allpermute allowed between any two types with
equal local types, all within the height bound. distal's weak search plus
lowering must never cost more than this optimum (it may cost less only
where the oracle lacks a move, which it does not for these problems).
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections.abc import Iterator

import pytest

from distal.redist import DistType, Mesh, synthesize
from distal.redist.testing import random_problem

State = tuple[tuple[int, ...], ...]


def optimum(src: DistType, dst: DistType, mesh: Mesh) -> int:
    sizes = [f.size for f in mesh.factors]
    g = src.global_type
    total = math.prod(g)
    start, goal = src.factor_lists(mesh), dst.factor_lists(mesh)

    def parts(lst: tuple[int, ...]) -> int:
        return math.prod(sizes[f] for f in lst)

    def local(t: State) -> int:
        return total // math.prod(parts(lst) for lst in t)

    def fits(t: State) -> bool:
        return all(n % parts(lst) == 0 for n, lst in zip(g, t))

    bound = max(local(start), local(goal))
    by_local: dict[tuple[int, ...], list[State]] = {}

    def place(f: int, cur: list[list[int]]) -> None:
        if f == len(sizes):
            t = tuple(tuple(x) for x in cur)
            if fits(t):
                by_local.setdefault(tuple(n // parts(x) for n, x in zip(g, t)), []).append(t)
            return
        place(f + 1, cur)
        for i in range(len(cur)):
            for pos in range(len(cur[i]) + 1):
                nxt = [list(x) for x in cur]
                nxt[i].insert(pos, f)
                place(f + 1, nxt)

    place(0, [[] for _ in g])

    def moves(t: State) -> Iterator[tuple[State, int]]:
        used = {f for lst in t for f in lst}
        for f in set(range(len(sizes))) - used:  # dynslice
            for i in range(len(t)):
                t2 = (*t[:i], (f, *t[i]), *t[i + 1 :])
                if fits(t2):
                    yield t2, 0
        for ks in itertools.product(*(range(len(lst) + 1) for lst in t)):  # allgather
            t2 = tuple(lst[k:] for lst, k in zip(t, ks))
            if any(ks) and local(t2) <= bound:
                yield t2, local(t2)
        singles = [(i, j, k) for i in range(len(t)) for j in range(len(t)) for k in range(1, len(t[i]) + 1) if i != j]
        for r in range(1, len(t) // 2 + 1):  # alltoall, moves on disjoint dimensions
            for combo in itertools.combinations(singles, r):
                dims = [d for i, j, _ in combo for d in (i, j)]
                if len(set(dims)) != len(dims):
                    continue
                lists = list(t)
                for i, j, k in combo:
                    lists[j] = t[i][:k] + lists[j]
                    lists[i] = lists[i][k:]
                t2 = tuple(lists)
                if fits(t2):
                    yield t2, local(t)
        lt = tuple(n // parts(x) for n, x in zip(g, t))
        for t2 in by_local.get(lt, ()):  # allpermute
            yield t2, local(t)

    dist = {start: 0}
    heap = [(0, start)]
    while heap:
        d, t = heapq.heappop(heap)
        if t == goal:
            return d
        if d > dist[t]:
            continue
        for t2, c in moves(t):
            if d + c < dist.get(t2, d + c + 1):
                dist[t2] = d + c
                heapq.heappush(heap, (d + c, t2))
    raise AssertionError("no path")


def small_problems(seed: int, count: int) -> list[tuple[Mesh, DistType, DistType]]:
    rng = random.Random(seed)
    return [random_problem(rng, sizes=(2,), max_rank=3, elements=(64, 512)) for _ in range(count)]


@pytest.mark.parametrize("problem", small_problems(7, 60), ids=lambda p: f"{p[1]}->{p[2]}")
def test_cost_matches_exhaustive_optimum(problem: tuple[Mesh, DistType, DistType]) -> None:
    mesh, src, dst = problem
    assert synthesize(src, dst, mesh).cost <= optimum(src, dst, mesh)


def test_oracle_finds_the_paper_costs() -> None:
    m = Mesh(x=2, y=2)
    assert optimum(DistType.parse("[2{x}4, 4]"), DistType.parse("[4, 2{x}4]"), m) == 8
    assert optimum(DistType.parse("[2{x}4]"), DistType.parse("[2{y}4]"), m) == 2
