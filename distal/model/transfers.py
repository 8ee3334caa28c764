"""The copies a launch makes between real processors, and when they arrive, on a machine model's links.

A tile read by several processors reaches them as copies (`deliver`); the
contributions of several processors to one tile reach its holder as copies
too (`collect`). Which processor sends each copy, and in which round, is the
runtime's delivery scheme (`MachineModel.broadcast`, `MachineModel.fold`):

- `owner`: every reader copies from its nearest holder, all in round 0;
- `nearest`: each valid instance serves one waiting reader per round, the
  nearest to it (a processor of its own node first; otherwise the first
  reader of a node that holds no instance yet), and the readers it served
  are valid instances in the next round: the copies double, and a tile
  crosses the network once per reading node;
- `tree`: a tree of radix `r` across nodes (each node that has the tile sends
  it to up to r - 1 new nodes per round) and the `nearest` doubling inside
  each node;
- reductions, `fold`: every contributor sends its part to the holder in
  round 0 (the holder's port receives them one after the other); `tree`:
  contributions are first combined inside each node by pairs (log2 rounds),
  then across nodes in a tree of radix `r`.

`arrivals` times the copies of one launch together: a copy goes over the
link of the innermost level holding both ends (`MachineModel.distance`),
through the sender's and the receiver's port of that level
(`MachineModel.port`); copies of one round that share a port share its
bandwidth, so a copy takes max over its two ports of (bytes through the port
in that round / bandwidth + messages * latency). A copy starts when its
sender has the tile (a holder at time 0, a reader when its own copy
arrived) and both its ports are done with the earlier rounds; a
processor's data has arrived when its last copy has.

>>> from distal.model import lassen_gpu
>>> m = lassen_gpu()  # 4 V100 per node, two per socket
>>> [(c.src, c.dst, c.round) for c in deliver(m, [0], {4: 8.0, 5: 8.0, 8: 8.0, 12: 8.0})]
[(0, 4, 0), (4, 5, 1), (0, 8, 1), (0, 12, 2)]
>>> [(c.src, c.dst, c.round) for c in deliver(m.with_(broadcast="owner"), [0], {4: 8.0, 8: 8.0})]
[(0, 4, 0), (0, 8, 0)]
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from distal.model.hardware import MachineModel

__all__ = ["Copy", "arrivals", "collect", "deliver"]


@dataclass(frozen=True, slots=True)
class Copy:
    """`nbytes` from real processor `src` to `dst` in round `round` of a tile's delivery."""

    src: int
    dst: int
    nbytes: float
    round: int


def _nearest(model: MachineModel, sources: Iterable[int], r: int) -> int:
    return min(sources, key=lambda s: (model.distance(s, r), s))


def deliver(model: MachineModel, holders: Sequence[int], needs: Mapping[int, float],
            scheme: str | None = None) -> list[Copy]:
    """The copies that bring one tile from its `holders` to the readers of `needs` (real processor -> bytes)."""
    how = scheme or model.broadcast
    waiting = sorted(r for r, b in needs.items() if b > 0)  # the bytes a reader lacks, net of what it holds
    have = sorted(set(holders) - set(waiting))  # holders of the whole of what the readers lack
    if not waiting or not holders:
        return []
    if not have:  # every holder reads the others' parts: each gets them from its nearest other holder
        return [Copy(_nearest(model, others, r), r, needs[r], 0)
                for r in waiting if (others := [h for h in holders if h != r])]
    if how == "owner":
        return [Copy(_nearest(model, have, r), r, needs[r], 0) for r in waiting]
    pending: dict[int, list[int]] = defaultdict(list)  # node -> readers still waiting there
    for r in waiting:
        pending[model.node_of(r)].append(r)
    valid = list(have)
    reached = {model.node_of(v) for v in valid}
    copies: list[Copy] = []
    rnd = 0

    def take(node: int, r: int) -> None:
        pending[node].remove(r)
        if not pending[node]:
            del pending[node]

    while pending:
        served: list[tuple[int, int]] = []
        far = [x for x in sorted(pending) if x not in reached]  # nodes no instance has reached yet
        local_busy: set[int] = set()
        for v in valid:  # inside a node: each instance serves the nearest reader of its node still waiting
            node = model.node_of(v)
            local = pending.get(node)
            if local:
                r = min(local, key=lambda q: (model.distance(v, q), q))
                take(node, r)
                served.append((v, r))
                local_busy.add(v)
        if how == "tree":  # one instance per node sends to up to radix - 1 nodes
            first: dict[int, int] = {}
            for v in valid:
                first.setdefault(model.node_of(v), v)
            for node in sorted(first):
                for _ in range(model.radix - 1):
                    if not far:
                        break
                    target = far.pop(0)
                    r = pending[target][0]
                    take(target, r)
                    reached.add(target)
                    served.append((first[node], r))
        else:  # each instance with nothing to do at home serves a node not reached yet
            for v in valid:
                if not far:
                    break
                if v in local_busy:
                    continue
                target = far.pop(0)
                r = pending[target][0]
                take(target, r)
                reached.add(target)
                served.append((v, r))
        if not served:  # unreachable: some instance can always serve a waiting reader
            raise AssertionError("a delivery round served no reader")
        copies.extend(Copy(v, r, needs[r], rnd) for v, r in served)
        valid.extend(r for _, r in served)
        rnd += 1
    return copies


def collect(model: MachineModel, holder: int, parts: Mapping[int, float], scheme: str | None = None) -> list[Copy]:
    """The copies that bring the contributions `parts` (real processor -> bytes) to one tile's `holder`."""
    how = scheme or model.fold
    givers = sorted(r for r, b in parts.items() if b > 0 and r != holder)
    if not givers:
        return []
    if how == "fold":
        return [Copy(r, holder, parts[r], 0) for r in givers]
    size = max(parts.values())  # a combined partial is as large as the largest contribution
    by_node: dict[int, list[int]] = defaultdict(list)
    for r in givers:
        by_node[model.node_of(r)].append(r)
    home = model.node_of(holder)
    by_node[home] = [holder, *by_node.get(home, [])]
    copies: list[Copy] = []
    depth = 0
    heads: dict[int, int] = {}
    for node, members in sorted(by_node.items()):  # inside a node: pairs combine into its head, log2 rounds
        rest = list(members)
        rnd = 0
        while len(rest) > 1:
            half = (len(rest) + 1) // 2
            copies.extend(Copy(rest[k], rest[k - half], size, rnd) for k in range(half, len(rest)))
            rest = rest[:half]
            rnd += 1
        heads[node] = rest[0]
        depth = max(depth, rnd)
    nodes = [home, *sorted(x for x in heads if x != home)]
    rnd = depth
    while len(nodes) > 1:  # across nodes: a tree of radix `radix` into the holder's node
        keep = nodes[:math.ceil(len(nodes) / model.radix)]
        copies.extend(Copy(heads[nodes[k]], heads[keep[k % len(keep)]], size, rnd)
                      for k in range(len(keep), len(nodes)))
        nodes = keep
        rnd += 1
    return copies


def arrivals(model: MachineModel, tiles: Sequence[Sequence[Copy]]) -> tuple[dict[int, float], list[float]]:
    """When each processor has received all its copies, and when each tile's last copy arrived.

    The copies of all `tiles` (one list per tile) share the ports of their round.
    """
    load: dict[tuple[tuple[int, int], str, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for copies in tiles:
        for c in copies:
            d = model.distance(c.src, c.dst)
            if d == 0:
                continue
            out = load[(model.port(c.src, d), "out", c.round)]
            out[0] += c.nbytes
            out[1] += 1
            into = load[(model.port(c.dst, d), "in", c.round)]
            into[0] += c.nbytes
            into[1] += 1
    done: dict[int, float] = defaultdict(float)
    ends = [0.0] * len(tiles)
    ready: list[dict[int, float]] = [defaultdict(float) for _ in tiles]  # per tile: when a processor has it
    free: dict[tuple[tuple[int, int], str], float] = defaultdict(float)  # when a port's earlier rounds are done
    last = max((c.round for copies in tiles for c in copies), default=-1)
    for rnd in range(last + 1):
        finished: dict[tuple[tuple[int, int], str], float] = {}
        before = [dict(r) for r in ready]  # a copy received in this round is forwarded in a later one
        for k, copies in enumerate(tiles):
            for c in copies:
                d = model.distance(c.src, c.dst)
                if c.round != rnd or d == 0:
                    continue
                link = model.link_at(d)
                sender, receiver = (model.port(c.src, d), "out"), (model.port(c.dst, d), "in")
                busy = max(_port_seconds(load[(*sender, rnd)], link.bandwidth, link.latency),
                           _port_seconds(load[(*receiver, rnd)], link.bandwidth, link.latency))
                t = max(before[k].get(c.src, 0.0), free[sender], free[receiver]) + busy
                ready[k][c.dst] = max(ready[k][c.dst], t)
                done[c.dst] = max(done[c.dst], t)
                ends[k] = max(ends[k], t)
                for port in (sender, receiver):
                    finished[port] = max(finished.get(port, 0.0), t)
        free.update(finished)
    return dict(done), ends


def _port_seconds(use: list[float], bandwidth: float, latency: float) -> float:
    return use[0] / bandwidth + use[1] * latency


class BoxIndex:
    """Which real processors hold boxes meeting a query box, for boxes on a grid (tiled formats).

    >>> ix = BoxIndex({((0, 4), (0, 4)): {0}, ((0, 4), (4, 8)): {1}, ((4, 8), (0, 8)): {2, 3}})
    >>> sorted(ix.holders(((2, 6), (5, 6))))
    [1, 2, 3]
    """

    def __init__(self, boxes: Mapping[tuple[tuple[int, int], ...], set[int]]) -> None:
        self.boxes = {b: frozenset(v) for b, v in boxes.items()}
        ndim = len(next(iter(self.boxes))) if self.boxes else 0
        self.axes: list[list[tuple[int, int]]] = [sorted({b[d] for b in self.boxes}) for d in range(ndim)]
        self.grid = all(_disjoint(axis) for axis in self.axes)

    def covering(self, box: tuple[tuple[int, int], ...]) -> set[int]:
        """The processors holding one box that contains all of `box`."""
        if box in self.boxes:
            return set(self.boxes[box])
        out: set[int] = set()
        for b in self._meeting(box):
            if all(bl <= lo and hi <= bh for (lo, hi), (bl, bh) in zip(box, b)):
                out |= self.boxes[b]
        return out

    def _meeting(self, box: tuple[tuple[int, int], ...]) -> list[tuple[tuple[int, int], ...]]:
        if not self.grid:
            return [b for b in self.boxes if all(min(h, bh) > max(lo, bl) for (lo, h), (bl, bh) in zip(box, b))]
        per_dim: list[list[tuple[int, int]]] = []
        for (lo, hi), axis in zip(box, self.axes):
            k = max(bisect.bisect_right(axis, (lo, math.inf)) - 1, 0)
            hits = []
            while k < len(axis) and axis[k][0] < hi:
                if axis[k][1] > lo:
                    hits.append(axis[k])
                k += 1
            per_dim.append(hits)
        return [combo for combo in _product(per_dim) if combo in self.boxes]

    def holders(self, box: tuple[tuple[int, int], ...]) -> set[int]:
        """The processors holding a box that meets `box`."""
        if box in self.boxes:
            return set(self.boxes[box])
        out: set[int] = set()
        for b in self._meeting(box):
            out |= self.boxes[b]
        return out


def _disjoint(axis: list[tuple[int, int]]) -> bool:
    return all(a[1] <= b[0] for a, b in itertools.pairwise(axis))


def _product(lists: list[list[tuple[int, int]]]) -> Iterable[tuple[tuple[int, int], ...]]:
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for rest in _product(lists[1:]):
            yield (head, *rest)
