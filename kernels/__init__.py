"""The algorithm library: SUMMA, Cannon, PUMMA, Johnson, Solomonik 2.5D, COSMA, TTV,
inner product, TTM and MTTKRP as formats plus schedules (paper Figure 9, section 7.2).

>>> import distal as dt
>>> dt.kernels.names()[:3]
['summa', 'cannon', 'pumma']
>>> dt.kernels.machine("johnson", 8)
Machine(Grid(2, 2, 2))
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from distal.errors import DistalError, MachineError, NotationError
from distal.format import Format
from distal.machine.grid import Machine
from distal.notation.ast import Access, Assignment, IndexVar
from distal.notation.tensor import Tensor
from distal.notation.visit import product_factors
from distal.schedule import Schedule

from ._algorithms import ALGORITHMS, Algorithm
from ._auto import Candidate, candidates
from ._einsum import cache_info, clear_cache, einsum, einsum_plan
from ._search import Option, auto_schedule, options, realise

__all__ = ["ALGORITHMS", "Algorithm", "Candidate", "Option", "auto_schedule", "build", "cache_info", "candidates",
           "clear_cache", "describe", "einsum", "einsum_plan", "machine", "names", "options", "realise"]


def names() -> list[str]:
    """The algorithms of the library."""
    return list(ALGORITHMS)


def _lookup(name: str) -> Algorithm:
    alg = ALGORITHMS.get(name.lower()) if isinstance(name, str) else None
    if alg is None:
        raise DistalError(f"expected an algorithm name ({', '.join(names())}, or 'auto'), but found {name!r}")
    return alg


def describe(name: str) -> str:
    """One line on the algorithm, its machine and its formats."""
    alg = _lookup(name)
    return f"{alg.name}: {alg.summary}; formats {', '.join(str(f) for f in alg.formats)}"


def machine(name: str, nprocs: int, shape: Sequence[int] | None = None, **params: Any) -> Machine:
    """A machine suited to the algorithm on `nprocs` processors; every processor gets work.

    What it picks, and why:

    - SUMMA, Cannon, PUMMA, TTV: the most square 2-D grid gx x gy = nprocs
      (gx >= gy; a prime count gives nprocs x 1).
    - Johnson: a c x c x c cube, c the smallest side with c**3 >= nprocs
      (`johnson_side`; `side=` overrides). On a non-cube count the cube is
      over-decomposed as in paper 7.1.2: its points are bound block-wise to the
      real processors (`Machine.bind`), one or two each, so none is idle, where
      the largest cube that fits would leave processors idle (1x1x1 on 2 to 7).
    - Solomonik 2.5D: q x q x c with q*q*c == nprocs, c <= q, most layers
      (`c=` sets the layers); otherwise over-decomposed to the fewest points
      q*q*c >= nprocs, bound block-wise.
    - COSMA: gx*gy*gz == nprocs minimising the words each processor moves for
      `shape` (m, n, k); its sequential steps over k come from
      `build("cosma", ..., memory=bytes per processor)` (the fewest that fit).
    - innerprod, TTM: a 1-D grid of nprocs (i distributed). MTTKRP: the most
      cubic gx*gy*gz == nprocs.
    - "auto": the machine of the algorithm `build("auto", ...)` would choose
      for `shape` (matmul (m, n, k)) on nprocs processors, by predicted time
      (`distal.model`; `model=` picks the machine model).

    A machine with more points than processors is what `bind(nprocs)` maps
    block-wise at run time; `plan.predict(model, processors=nprocs)` times it so.
    """
    if isinstance(name, str) and name.lower() == "auto":
        if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
            raise MachineError(f"expected a positive processor count, but found {nprocs!r}")
        from ._auto import machine_auto

        return machine_auto(nprocs, shape, **params)
    alg = _lookup(name)
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise MachineError(f"expected a positive processor count, but found {nprocs!r}")
    return alg.machine(nprocs, shape, params)


def _place(t: Tensor, fmt: Format) -> str | None:
    """Give `t` the algorithm's format; returns a note when data had to move."""
    if t.format == fmt:
        return None
    before = t.format
    if before is None:
        t.set_format(fmt)
        return f"{t.name} placed as {fmt}"
    if before.machine == fmt.machine and t.has_data:
        program = t.redistribute(fmt)
        if program is None:
            return f"{t.name} takes {fmt} (no data yet)"
        steps = ", ".join(str(x) for x in program.steps) or "no collective"
        return (f"{t.name} redistributed from {before} to {fmt} by synthesized collectives [{steps}], "
                f"cost {program.cost}, height {program.height} (bound {program.bound}) elements per processor")
    if t.on_legate:
        # Another machine: the synthesizer needs one mesh, so the data is
        # gathered and placed again (a plain copy).
        t.set_array(t.to_numpy())
    t.set_format(fmt)
    return f"{t.name} moved from {before} on {before.machine!r} to {fmt} on {fmt.machine!r} by a plain copy"


def _algorithm_text(alg: Algorithm, operands: Sequence[Tensor]) -> str:
    out, *ins = operands
    rhs = " * ".join(str(Access(t.var, ix)) for t, ix in zip(ins, alg.indices[1:]))
    return f"{Access(out.var, alg.indices[0])} = {rhs}"


def _same_up_to_renaming(alg: Algorithm, operands: Sequence[Tensor], stmt: Assignment) -> bool:
    """Whether `stmt` is the algorithm's statement over `operands` with index variables renamed."""
    accesses = [stmt.lhs, *product_factors(stmt.rhs)]
    if len(accesses) != len(operands) or not all(isinstance(a, Access) for a in accesses):
        return False
    ren: dict[IndexVar, IndexVar] = {}
    back: dict[IndexVar, IndexVar] = {}
    for acc, t, want in zip(accesses, operands, alg.indices):
        assert isinstance(acc, Access)
        if acc.tensor.uid != t.var.uid or len(acc.indices) != len(want):
            return False
        for u, w in zip(acc.indices, want):
            if ren.setdefault(u, w) != w or back.setdefault(w, u) != u:
                return False
    return True


def _check_statement(alg: Algorithm, operands: Sequence[Tensor]) -> bool:
    """Refuse an output whose statement is not the algorithm's; returns whether it is `+=`."""
    stmt = operands[0].assignment
    if stmt is None:
        return False
    if not _same_up_to_renaming(alg, operands, stmt):
        raise NotationError(
            f"expected {operands[0].name}'s statement to be {alg.name}'s {_algorithm_text(alg, operands)} "
            f"(up to renaming index variables), but found {stmt.lhs} {stmt.op} {stmt.rhs}",
            stmt,
        )
    return stmt.accumulate


def _has_data(t: Tensor) -> bool:
    return t.has_data


def _check_operands(alg: Algorithm, operands: Sequence[Tensor]) -> None:
    """Operands against the algorithm's statement: extents by index variable, and roles.

    An index variable of the statement must have one extent over every operand
    it indexes. An output holding data while an input has neither data nor a
    statement computing it, or an input whose statement reads the output, means
    the operands are not in the order output first: refused, naming the operand.
    """
    extent: dict[IndexVar, tuple[int, Tensor]] = {}
    for t, idx in zip(operands, alg.indices):
        try:
            shape = t.concrete_shape()
        except DistalError:
            continue  # symbolic extents: checked when the plan is compiled
        for v, n in zip(idx, shape):
            seen = extent.setdefault(v, (n, t))
            if seen[0] != n:
                raise NotationError(
                    f"expected one extent along {v} in {_algorithm_text(alg, operands)} ({seen[0]}, as "
                    f"{seen[1].name} has), but found {n} in operand {t.name}"
                )
    out, *ins = operands
    for t in ins:
        if t is out:
            raise NotationError(f"expected the output {out.name} of {_algorithm_text(alg, operands)} "
                                f"not to be an input too, but found it as an input")
        stmt = t.assignment
        if stmt is not None and any(a.tensor.uid == out.var.uid for a in stmt.rhs.accesses()):
            raise NotationError(
                f"expected {out.name} as the output of {alg.name} (operands go output first: "
                f"{_algorithm_text(alg, operands)}), but found input {t.name} computed from it by "
                f"{stmt.lhs} {stmt.op} {stmt.rhs}"
            )
        if _has_data(out) and not _has_data(t) and stmt is None:
            raise NotationError(
                f"expected input {t.name} of {alg.name} to hold data or be computed by a statement "
                f"(operands go output first: {_algorithm_text(alg, operands)}), but found neither while "
                f"the output {out.name} holds data"
            )


def build(name: str, machine: Machine, *operands: Tensor, **params: Any) -> Schedule:
    """The algorithm's schedule of its statement over `operands` (output first).

    Sets the output's statement (e.g. A(i,j) = B(i,k) * C(k,j) for the
    matmul algorithms), gives every operand the algorithm's format on
    `machine` (operands in another format are redistributed first; the
    schedule's notes and explain() say so), and returns the schedule.
    """
    if isinstance(name, str) and name.lower() == "auto":
        from ._auto import build_auto

        auto: Schedule = build_auto(machine, *operands, **params)
        return auto
    alg = _lookup(name)
    if not isinstance(machine, Machine):
        raise MachineError(f"expected a Machine for {alg.name}, but found {machine!r}")
    want = alg.machine(max(machine.size, 1), None, params).ndim
    if machine.levels > 1:
        hier = [a.name for a in ALGORITHMS.values() if a.hierarchical]
        if not alg.hierarchical or machine.levels > 2:
            raise MachineError(
                f"expected a one-level machine for {alg.name} (two-level variants: {', '.join(hier)}), "
                f"but found {machine!r}"
            )
    if any(g.ndim != want for g in machine.grids):
        raise MachineError(f"expected a {want}-dimensional machine for {alg.name}, but found {machine!r}")
    if len(operands) != alg.arity:
        raise NotationError(f"expected {alg.arity} operands (output first) for {alg.name}, but found {len(operands)}")
    for t, idx in zip(operands, alg.indices):
        if not isinstance(t, Tensor):
            raise NotationError(f"expected Tensors as operands of {alg.name}, but found {t!r}")
        if t.order != len(idx):
            raise NotationError(f"expected {alg.name}'s operand {t.name} of order {len(idx)}, but found {t.order}")
    _check_operands(alg, operands)
    accumulate = _check_statement(alg, operands)
    alg.statement(operands, accumulate=accumulate)
    notes = []
    for n, t in enumerate(operands):
        fmt = alg.format_of(n, machine)
        if fmt is not None:
            note = _place(t, fmt)
            if note:
                notes.append(note)
    out = operands[0]
    sched = alg.schedule(out.schedule(), machine, tuple(operands), params)
    return sched.with_notes(*notes)
