"""The algorithms of paper Figure 9 and section 7.2, as machines, formats and schedules.

Each algorithm names its statement (an einsum pattern over operands, output
first), the machine it targets for a processor count, the format of every
operand on that machine, and its schedule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import distal.leaf as leaves
from distal.errors import MachineError
from distal.format.format import Format
from distal.machine.grid import Grid, Machine
from distal.notation.ast import Access, Accumulate, Expr, IndexVar, index_vars
from distal.notation.tensor_base import TensorBase
from distal.schedule.commands import ScheduleBase

from ._machines import cosma_grid, cosma_steps, factor2, factor3, johnson_side, solomonik_grid, summa_steps

__all__ = ["ALGORITHMS", "Algorithm"]

# index variables shared by every algorithm's statement and schedule
i, j, k, l = index_vars("i j k l")
io, jo, ko, ii, ji, ki = index_vars("io jo ko ii ji ki")
kos, kio, kii, kios = index_vars("kos kio kii kios")
iio, jio, iii, jii = index_vars("iio jio iii jii")

MachineFn = Callable[[int, Sequence[int] | None, dict[str, Any]], Machine]
ScheduleFn = Callable[[ScheduleBase, Machine, tuple[TensorBase, ...], dict[str, Any]], ScheduleBase]


@dataclass(frozen=True)
class Algorithm:
    """One library algorithm."""

    name: str
    summary: str
    # operand index variables, output first, e.g. ((i, j), (i, k), (k, j)) for matmul
    indices: tuple[tuple[IndexVar, ...], ...]
    machine: MachineFn
    # one distribution per operand (None: not distributed), the same at every level, or one per level (a tuple)
    formats: tuple[str | tuple[str, ...] | None, ...]
    schedule: ScheduleFn
    matmul: bool = False
    hierarchical: bool = False  # also runs on two-level machines (a grid of nodes of processor grids)

    @property
    def arity(self) -> int:
        return len(self.indices)

    def statement(self, operands: Sequence[TensorBase], accumulate: bool = False) -> None:
        """Set the output's statement: out(...) = product of the inputs (`+=` with `accumulate`)."""
        out, *ins = operands
        rhs: Expr = Access(ins[0].var, self.indices[1])
        for t, idx in zip(ins[1:], self.indices[2:]):
            rhs = rhs * Access(t.var, idx)
        if accumulate:
            out[self.indices[0]] = Accumulate(Access(out.var, self.indices[0]), rhs)
        else:
            out[self.indices[0]] = rhs

    def format_of(self, n: int, machine: Machine) -> Format | None:
        """Operand n's format on `machine`: the same distribution at every level, or the one of each level."""
        spec = self.formats[n]
        if spec is None:
            return None
        if isinstance(spec, tuple):
            return Format(spec[0] if machine.levels == 1 else list(spec[:machine.levels]), machine)
        return Format(spec if machine.levels == 1 else [spec] * machine.levels, machine)


def _grid2(p: int, shape: Sequence[int] | None, params: dict[str, Any]) -> Machine:
    return Machine(Grid(*factor2(p)))


def _matmul_2d(s: ScheduleBase, m: Machine) -> tuple[ScheduleBase, IndexVar, IndexVar, IndexVar]:
    """i and j tiled over the grid (and, on a two-level machine, over each node's processors).

    Returns the schedule, the local i and j loops, and the innermost distributed j loop.
    """
    s = s.distribute([i, j], [io, jo], [ii, ji], m)
    if m.levels == 1:
        return s, ii, ji, jo
    return s.distribute([ii, ji], [iio, jio], [iii, jii], m, level=1), iii, jii, jio


def _summa(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    A, B, C = ops
    mdim, kdim = B.concrete_shape()
    steps = summa_steps(m.shape, (mdim, C.concrete_shape()[1], kdim))
    chunk = params.get("chunk") or max(1, math.ceil(kdim / steps))
    s, li, lj, dj = _matmul_2d(s, m)
    return (
        s.split(k, ko, ki, chunk)
        .reorder([ko, li, lj, ki])
        .communicate(A, dj)
        .communicate([B, C], ko)
        .substitute([li, lj, ki], leaves.GEMM)
    )


def _systolic(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], by: list[IndexVar]) -> ScheduleBase:
    """k in as many steps as the grid has rows, rotated by `by`: Cannon (io, jo), PUMMA (io).

    On a two-level machine the rotation is between nodes; inside a node the
    node's tiles are spread over its processors.
    """
    A, B, C = ops
    s, li, lj, dj = _matmul_2d(s, m)
    return (
        s.divide(k, ko, ki, m.x)
        .reorder([ko, li, lj, ki])
        .rotate(ko, by, kos)
        .communicate(A, dj)
        .communicate([B, C], kos)
        .substitute([li, lj, ki], leaves.GEMM)
    )


def _cannon(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    return _systolic(s, m, ops, [io, jo])


def _pumma(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    return _systolic(s, m, ops, [io])


def _johnson_machine(p: int, shape: Sequence[int] | None, params: dict[str, Any]) -> Machine:
    c = int(params.get("side") or johnson_side(p))
    return Machine(Grid(c, c, c))


def _matmul_3d(s: ScheduleBase, m: Machine) -> ScheduleBase:
    return s.distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)


def _johnson(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    return _matmul_3d(s, m).communicate(list(ops), ko).substitute([ii, ji, ki], leaves.GEMM)


def _memory(params: dict[str, Any]) -> int | None:
    """`memory=`, bytes per processor: Solomonik's c and COSMA's grid fit it (with the shape), COSMA's k steps too."""
    memory = params.get("memory")
    if memory is None:
        return None
    if isinstance(memory, bool) or not isinstance(memory, (int, float)) or not memory > 0:
        raise MachineError(f"expected memory= as a positive number of bytes per processor, but found {memory!r}")
    return int(memory)


def _itemsize(params: dict[str, Any]) -> int:
    return int(params.get("itemsize") or 8)


def _solomonik_machine(p: int, shape: Sequence[int] | None, params: dict[str, Any]) -> Machine:
    memory = _memory(params)  # c fits `memory` when the shape (m, n, k) is given too
    return Machine(Grid(*solomonik_grid(p, params.get("c"), shape, memory, _itemsize(params))))


def _solomonik(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    A, B, C = ops
    return (
        _matmul_3d(s, m)
        .divide(ki, kio, kii, m.x)
        .reorder([kio, ii, ji, kii])
        .rotate(kio, [io, jo], kios)
        .communicate(A, ko)
        .communicate([B, C], kios)
        .substitute([ii, ji, kii], leaves.GEMM)
    )


def _cosma_machine(p: int, shape: Sequence[int] | None, params: dict[str, Any]) -> Machine:
    memory = _memory(params)  # the grid fits `memory` when the shape (m, n, k) is given too
    return Machine(Grid(*cosma_grid(p, shape, memory if shape is not None else None, _itemsize(params))))


def _cosma(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    A, B, C = ops
    kdim = B.concrete_shape()[1]
    mdim, ndim_ = A.concrete_shape()
    steps = int(params.get("steps") or cosma_steps(m.shape, (mdim, ndim_, kdim), params.get("memory"),
                                                   A.dtype.itemsize))
    chunk = max(1, math.ceil(math.ceil(kdim / m.shape[2]) / steps))
    return (
        _matmul_3d(s, m)
        .split(ki, kio, kii, chunk)
        .reorder([kio, ii, ji, kii])
        .communicate(A, ko)
        .communicate([B, C], kio)
        .substitute([ii, ji, kii], leaves.GEMM)
    )


def _ttv(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    return (
        s.distribute([i, j], [io, jo], [ii, ji], m)
        .communicate(list(ops), jo)
        .substitute([ii, ji, k], leaves.TTV)
    )


def _grid1(p: int, shape: Sequence[int] | None, params: dict[str, Any]) -> Machine:
    return Machine(Grid(p))


def _innerprod_machine(p: int, shape: Sequence[int] | None, params: dict[str, Any]) -> Machine:
    """Grid(p), or with `nodes=` a grid of nodes of processor grids (p / nodes each): paper 7.2.2's node-level
    then global reduction needs the machine to say where its nodes are."""
    nodes = params.get("nodes")
    if nodes is None or nodes == 1:
        return Machine(Grid(p))
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1 or p % nodes:
        raise MachineError(f"expected nodes= a positive divisor of the {p} processors, but found {nodes!r}")
    return Machine(Grid(nodes), Grid(p // nodes))


def _innerprod(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    """i over the processors; on a two-level machine i over the nodes and j over each node's processors (one
    launch: a tile's colour is one launch dimension per tensor dimension). Every point's partial sum is reduced
    into the scalar: on a two-level machine by the reduction synthesizer's program, within the node first, then
    between nodes (`PlanBase.reduction`; paper 7.2.2: "a node-level reduction followed by a global reduction")."""
    s = s.distribute([i], [io], [ii], m)
    if m.levels == 1:
        return s.communicate(list(ops), io).substitute([ii, j, k], leaves.INNERPROD)
    return (
        s.distribute([j], [jo], [ji], m, level=1)
        .communicate(list(ops), jo)
        .substitute([ii, ji, k], leaves.INNERPROD)
    )


def _ttm(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    # Paper 7.2.2: distribute i only; each processor runs matrix products on its
    # slab of B with the replicated C, so nothing moves between processors.
    return (
        s.distribute([i], [io], [ii], m)
        .communicate(list(ops), io)
        .substitute([ii, j, l, k], leaves.TTM)
    )


def _mttkrp_machine(p: int, shape: Sequence[int] | None, params: dict[str, Any]) -> Machine:
    return Machine(Grid(*factor3(p)))


def _mttkrp(s: ScheduleBase, m: Machine, ops: tuple[TensorBase, ...], params: dict[str, Any]) -> ScheduleBase:
    return (
        s.distribute([i, j, k], [io, jo, ko], [ii, ji, ki], m)
        .reorder([io, jo, ko, ii, ji, ki, l])
        .communicate(list(ops), ko)
        .substitute([ii, ji, ki, l], leaves.MTTKRP)
    )


_MM = ((i, j), (i, k), (k, j))

ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("summa", "SUMMA (1995): 2D, broadcasts chunks of B and C along rows and columns",
                  _MM, _grid2, ("xy -> xy", "xy -> xy", "xy -> xy"), _summa, matmul=True, hierarchical=True),
        Algorithm("cannon", "Cannon (1969): 2D, systolic shifts of B and C",
                  _MM, _grid2, ("xy -> xy", "xy -> xy", "xy -> xy"), _cannon, matmul=True, hierarchical=True),
        Algorithm("pumma", "PUMMA (1994): 2D, broadcasts one matrix and shifts the other",
                  _MM, _grid2, ("xy -> xy", "xy -> xy", "xy -> xy"), _pumma, matmul=True, hierarchical=True),
        Algorithm("johnson", "Johnson (1995): 3D, inputs on faces of a processor cube, reduces A",
                  _MM, _johnson_machine, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"), _johnson, matmul=True),
        Algorithm("solomonik", "Solomonik 2.5D (2011): c layers each running Cannon on a slab of k",
                  _MM, _solomonik_machine, ("xy -> xy0", "xy -> xy0", "xy -> xy0"), _solomonik, matmul=True),
        Algorithm("cosma", "COSMA (2019): grid and k steps chosen from the shape and processor count",
                  _MM, _cosma_machine, ("xy -> xy0", "xz -> x0z", "zy -> 0yz"), _cosma, matmul=True),
        Algorithm("ttv", "TTV: A(i,j) = B(i,j,k) c(k), c replicated, no communication",
                  ((i, j), (i, j, k), (k,)), _grid2, ("xy -> xy", "xyz -> xy", "z -> **"), _ttv),
        Algorithm("innerprod", "inner product: local reductions, then one global reduction",
                  ((), (i, j, k), (i, j, k)), _innerprod_machine,
                  (None, ("xyz -> x", "xyz -> y"), ("xyz -> x", "xyz -> y")), _innerprod, hierarchical=True),
        Algorithm("ttm", "TTM: A(i,j,l) = B(i,j,k) C(k,l), i distributed, C replicated, no communication",
                  ((i, j, l), (i, j, k), (k, l)), _grid1, ("xyl -> x", "xyz -> x", "zl -> *"), _ttm),
        Algorithm("mttkrp", "MTTKRP (Ballard et al.): B in place on a 3D grid, A, C, D on faces",
                  ((i, l), (i, j, k), (j, l), (k, l)), _mttkrp_machine,
                  ("xl -> x00", "xyz -> xyz", "yl -> 0y0", "zl -> 00z"), _mttkrp),
    )
}
