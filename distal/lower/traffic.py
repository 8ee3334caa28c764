"""Who sends what to whom: the transfers of a plan's analysis, as a typed value (issue 27 item 1).

`plan.analysis().traffic` (and `plan.stats()["traffic"]`) is a `Traffic`: one
`Transfer` per launch, kind, tensor, sender and receiver, with the bytes that
move and the machine level they cross. Senders follow the cost model of
`distal.lower.analysis`:

- data never written by the plan comes from the processor its format places
  it on (of several holders of a replicated tile, the nearest to the
  receiver: the same node first, then the closest coordinate), or from the
  tensor's global store (`sender=None`) without a format on the plan's machine;
- data written earlier in the plan comes from the processor that wrote it
  (reduced data from the tensor's holders, as above);
- a reduction's contribution (`kind="reduce"`) goes from the reducing
  processor to the holder of the tile (or the global store), after its launch;
- values written away from their holders (`kind="return"`) go to every
  holder once the plan ends (`launch=None`).

Inside a node or between nodes is read from the plan's own `Machine`: a
processor coordinate concatenates the coordinates of every level, and a
transfer crosses the outermost level at which sender and receiver differ
(`level`). Level 0 is the grid of nodes (paper 3.1: a flat machine's grid is a
grid of nodes, so all its transfers are between nodes); on
`Machine(Grid(2), Grid(2))` processors (0, 0) and (0, 1) share node 0
(`level=1`, inside a node) and (0, 0) and (1, 0) do not (`level=0`). With
several Legate ranks the default machine is the ranks, then each rank's
processors (`distal.machine.ranks.rank_machine`), and Legate runs the points of
outer coordinate r on rank r: there, between nodes is between ranks.

>>> import distal as dt
>>> i, io, ii = dt.index_vars("i io ii")
>>> m = dt.Machine(dt.Grid(2))
>>> x = dt.Tensor("x", (8,), dt.Format("x -> 0", m))  # all of x on processor 0
>>> y = dt.Tensor("y", (8,), dt.Format("x -> x", m))
>>> y[i] = x[i]
>>> traffic = y.schedule().distribute([i], [io], [ii], m).compile().stats()["traffic"]
>>> [str(t) for t in traffic.transfers]
['(0) -> (1): x 32 B (read, between nodes)']
>>> traffic.received((1,))
Split(inside_node=0, between_nodes=32, store=0)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from distal._text import bytes_text as _bytes

__all__ = ["KINDS", "Split", "Traffic", "Transfer", "crossing_level"]

KINDS = ("read", "reduce", "return")

Proc = tuple[int, ...]


def crossing_level(a: Proc | None, b: Proc | None, level_dims: Sequence[int]) -> int | None:
    """The outermost machine level at which coordinates `a` and `b` differ (None: one is the global store,
    or they are equal); `level_dims[lv]` is the number of coordinate entries of level `lv`."""
    if a is None or b is None:
        return None
    start = 0
    for lv, n in enumerate(level_dims):
        if a[start:start + n] != b[start:start + n]:
            return lv
        start += n
    return None


@dataclass(frozen=True, slots=True)
class Transfer:
    """Bytes of one tensor moved from `sender` to `receiver` for launch `launch`.

    `sender`/`receiver` are abstract processor coordinates (all machine
    levels concatenated) or None for the tensor's global store; `level` is
    the outermost machine level they differ at (None with the global store).
    `launch` is the launch's index in `plan.launches()` order (None: once the
    plan ends, for `kind="return"`).
    """

    launch: int | None
    kind: str  # one of KINDS
    tensor: str
    sender: Proc | None
    receiver: Proc | None
    nbytes: int
    level: int | None

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind
        assert self.nbytes > 0

    @property
    def inside_node(self) -> bool:
        """Whether sender and receiver are processors of one node (they differ only below level 0)."""
        return self.level is not None and self.level > 0

    @property
    def between_nodes(self) -> bool:
        return self.level == 0

    @property
    def store(self) -> bool:
        """Whether one end is the tensor's global store (no processor of the plan holds it)."""
        return self.sender is None or self.receiver is None

    def where(self) -> str:
        """'inside a node', 'between nodes' or 'global store'."""
        if self.store:
            return "global store"
        return "inside a node" if self.inside_node else "between nodes"

    def __str__(self) -> str:
        return (f"{_proc(self.sender)} -> {_proc(self.receiver)}: {self.tensor} {_bytes(self.nbytes)} "
                f"({self.kind}, {self.where()})")


@dataclass(frozen=True, slots=True)
class Split:
    """Bytes by where they travel: inside a node, between nodes, to or from a global store."""

    inside_node: int = 0
    between_nodes: int = 0
    store: int = 0

    @property
    def total(self) -> int:
        return self.inside_node + self.between_nodes + self.store

    @classmethod
    def of(cls, transfers: Iterable[Transfer]) -> Split:
        inside = between = store = 0
        for t in transfers:
            if t.store:
                store += t.nbytes
            elif t.inside_node:
                inside += t.nbytes
            else:
                between += t.nbytes
        return cls(inside, between, store)

    def __str__(self) -> str:
        parts = [f"{_bytes(b)} {what}" for b, what in ((self.between_nodes, "between nodes"),
                                                      (self.inside_node, "inside nodes"),
                                                      (self.store, "to or from global stores")) if b]
        return ", ".join(parts) or "nothing"


@dataclass(frozen=True, slots=True)
class Traffic:
    """Every transfer of a plan under explain()'s cost model, in launch order (see the module docstring).

    `levels` is the number of levels of the plan's machine (1 without one).
    The time model reads the split per receiver and launch:
    `traffic.received(proc, launch)` (a `Split`), or the transfers themselves.
    """

    transfers: tuple[Transfer, ...]
    levels: int = 1

    def of_launch(self, launch: int | None) -> tuple[Transfer, ...]:
        return tuple(t for t in self.transfers if t.launch == launch)

    def received(self, proc: Proc, launch: int | None = None, kind: str = "read") -> Split:
        """What `proc` receives (of `kind`; in `launch`, or over the whole plan with None), by where it comes from."""
        return Split.of(t for t in self.transfers
                        if t.receiver == proc and t.kind == kind and (launch is None or t.launch == launch))

    def sent(self, proc: Proc | None, kind: str | None = None) -> Split:
        """What `proc` (None: the global stores) sends over the whole plan."""
        return Split.of(t for t in self.transfers if t.sender == proc and (kind is None or t.kind == kind))

    def split(self, kind: str | None = None) -> Split:
        """Every transfer (of `kind`), by where it travels."""
        return Split.of(t for t in self.transfers if kind is None or t.kind == kind)

    def table(self, launch: int | None, limit: int = 8) -> list[str]:
        """The transfers of one launch as aligned rows (at most `limit`, largest first, then a count of the rest)."""
        rows = sorted(self.of_launch(launch), key=lambda t: (-t.nbytes, t.kind, t.tensor, _key(t.sender),
                                                              _key(t.receiver)))
        if not rows:
            return []
        shown = rows[:limit]
        width = max(len(_proc(t.sender)) for t in shown)
        out = [f"{_proc(t.sender):>{width}} -> {_proc(t.receiver)}  {t.tensor} {_bytes(t.nbytes)}, "
               f"{t.kind}, {t.where()}" for t in shown]
        if len(rows) > limit:
            out.append(f"... and {len(rows) - limit} more ({_bytes(sum(t.nbytes for t in rows[limit:]))})")
        return out


class Recorder:
    """Collects transfers while a plan's analysis runs, adding up repeats of one (launch, kind, tensor, ends)."""

    def __init__(self, level_dims: Sequence[int]) -> None:
        self.level_dims = tuple(level_dims)
        self.bytes: dict[tuple[int | None, str, str, Proc | None, Proc | None], int] = defaultdict(int)

    def add(self, launch: int | None, kind: str, tensor: str, sender: Proc | None, receiver: Proc | None,
            nbytes: int) -> None:
        if nbytes > 0 and sender != receiver:
            self.bytes[(launch, kind, tensor, sender, receiver)] += nbytes

    def traffic(self) -> Traffic:
        items = sorted(self.bytes.items(), key=lambda kv: (_order(kv[0][0]), KINDS.index(kv[0][1]), kv[0][2],
                                                           _key(kv[0][4]), _key(kv[0][3])))
        return Traffic(tuple(Transfer(launch, kind, tensor, sender, receiver, n,
                                      crossing_level(sender, receiver, self.level_dims))
                             for (launch, kind, tensor, sender, receiver), n in items),
                       max(len(self.level_dims), 1))


def _order(launch: int | None) -> int:
    return 1 << 62 if launch is None else launch


def _key(p: Proc | None) -> tuple[int, ...]:
    return (-1,) if p is None else p


def _proc(p: Proc | None) -> str:
    return "store" if p is None else "(" + ",".join(str(x) for x in p) + ")"


