"""Predicting a lowered program's time from per-interconnect bandwidth and latency.

Model (section 5 of the paper gives the bandwidths; the rest is ours):

* A collective is a set of point-to-point transfers. Ring algorithms pass
  `(p-1)/p · n` bytes (ReduceScatter, AllGather; n = the larger of a device's
  input and output) or `2(p-1)/p · n` bytes (AllReduce) along each edge of a
  ring over the group's devices in hierarchy order; Reduce and Broadcast
  pipeline n bytes along a chain. Tree algorithms (NCCL's, used for AllReduce,
  Reduce, Broadcast; ReduceScatter and AllGather stay rings) chain the devices
  of an innermost instance and join the instances' leaders, level by level,
  by two binary trees carrying n/2 bytes each (the double binary tree).
* A transfer between two devices crosses the interconnect of the outermost
  level where their coordinates differ, through the sender's and the
  receiver's ports (the NIC of each node, the NVSwitch port of each GPU). All
  groups of a step (every replica too) run at once and share ports: a step
  takes the largest port load over its bandwidth, plus its latency term
  (ring: 2(p-1) or p-1 hops; chain: p-1; tree: depth or twice the depth)
  times the largest latency of the interconnects the group crosses.
* Steps run one after another; a program's time is the sum.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence

from distal.errors import ReductionError
from distal.reduction.language import CollectiveKind
from distal.reduction.lowering import LoweredProgram, LoweredStep
from distal.reduction.system import System

__all__ = ["ALGORITHMS", "simulated_seconds", "step_time"]

ALGORITHMS = ("ring", "tree")

Transfer = tuple[int, int, float]


@functools.lru_cache(maxsize=32)
def _coords(system: System) -> tuple[tuple[int, ...], ...]:
    return tuple(system.coords(d) for d in range(system.size))


def _ring(group: Sequence[int], nbytes: float) -> list[Transfer]:
    p = len(group)
    return [(group[i], group[(i + 1) % p], nbytes) for i in range(p)]


def _chain_up(group: Sequence[int], nbytes: float) -> list[Transfer]:
    return [(group[i + 1], group[i], nbytes) for i in range(len(group) - 1)]


def _tree_up(system: System, group: Sequence[int], nbytes: float) -> tuple[list[Transfer], int]:
    """Child-to-parent transfers of a hierarchical (double binary) tree, and its depth."""
    coords = _coords(system)
    out: list[Transfer] = []

    def build(members: list[int], level: int) -> int:
        if len(members) == 1:
            return 0
        while len({coords[d][level] for d in members}) == 1:
            level += 1
        parts: dict[int, list[int]] = {}
        for d in members:
            parts.setdefault(coords[d][level], []).append(d)
        subs = [parts[key] for key in sorted(parts)]
        depth = max(build(s, level + 1) for s in subs)
        leaders = [s[0] for s in subs]
        if level == len(system.levels) - 1:
            out.extend(_chain_up(leaders, nbytes))
            return depth + len(leaders) - 1
        q = len(leaders)
        for order in (leaders, [leaders[0], *leaders[:0:-1]]):
            for i in range(1, q):
                out.append((order[i], order[(i - 1) // 2], nbytes / 2))
        return depth + math.ceil(math.log2(q + 1))

    depth = build(list(group), 0)
    return out, depth


def _lca(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    for j, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return j
    raise AssertionError("a transfer between a device and itself")


def step_time(system: System, step: LoweredStep, chunk_bytes: float, algorithm: str = "ring") -> float:
    """Predicted seconds of one lowered step (all its groups at once)."""
    if algorithm not in ALGORITHMS:
        raise ReductionError(f"expected an algorithm of {list(ALGORITHMS)}, but found {algorithm!r}")
    before = dict(step.chunks_before)
    after = dict(step.chunks_after)
    coll = step.collective
    coords = _coords(system)
    load: dict[tuple[str, int, tuple[int, ...]], float] = defaultdict(float)
    latency = 0.0
    for g in step.groups:
        p = len(g)
        if p == 1:
            continue
        n = chunk_bytes * max(len(before[g[0]]), len(after[g[0]]))
        tree = algorithm == "tree" and coll not in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALL_GATHER)
        if tree:
            up, depth = _tree_up(system, g, n)
            down = [(b, a, x) for a, b, x in up]
            transfers = {CollectiveKind.ALL_REDUCE: up + down, CollectiveKind.REDUCE: up}.get(coll, down)
            hops = 2 * depth if coll is CollectiveKind.ALL_REDUCE else depth
        elif coll is CollectiveKind.ALL_REDUCE:
            transfers, hops = _ring(g, 2 * (p - 1) / p * n), 2 * (p - 1)
        elif coll in (CollectiveKind.REDUCE_SCATTER, CollectiveKind.ALL_GATHER):
            transfers, hops = _ring(g, (p - 1) / p * n), p - 1
        elif coll is CollectiveKind.REDUCE:
            transfers, hops = _chain_up(g, n), p - 1
        else:
            transfers, hops = [(b, a, x) for a, b, x in _chain_up(g, n)], p - 1
        worst = 0.0
        for a, b, x in transfers:
            ca, cb = coords[a], coords[b]
            j = _lca(ca, cb)
            load[("out", j, ca[: j + 1])] += x
            load[("in", j, cb[: j + 1])] += x
            worst = max(worst, system.levels[j].link.latency)
        latency = max(latency, hops * worst)
    bw = max((x / system.levels[key[1]].link.bandwidth for key, x in load.items()), default=0.0)
    return bw + latency


def simulated_seconds(lowered: LoweredProgram, nbytes: float, algorithm: str = "ring") -> float:
    """Predicted seconds of a lowered program reducing `nbytes` per device.

    >>> from distal.reduction.parallelism import layout_from_groups
    >>> from distal.reduction.language import parse_program
    >>> from distal.reduction.lowering import lower_to_devices
    >>> from distal.reduction.system import a100_system
    >>> lay = layout_from_groups(a100_system(2), [list(range(32))])
    >>> flat = lower_to_devices(parse_program("(root, InsideGroup, AllReduce)"), lay)
    >>> hier = lower_to_devices(parse_program("(node, InsideGroup, ReduceScatter) ; "
    ...     "(node, Parallel(root), AllReduce) ; (node, InsideGroup, AllGather)"), lay)
    >>> simulated_seconds(flat, 2**31) > 1.5 * simulated_seconds(hier, 2**31)
    True
    """
    if not nbytes > 0:
        raise ReductionError(f"expected a positive number of bytes per device, but found {nbytes!r}")
    chunk = nbytes / lowered.chunks
    return sum(step_time(lowered.layout.system, s, chunk, algorithm) for s in lowered.steps)
