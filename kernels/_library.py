"""The algorithm library's own work: look an algorithm up, check its operands, give them its formats and
write its schedule (`build_named`, what `distal.kernels.build` does for a library algorithm's name).

The library works on the `TensorBase` objects it is given and applies the algorithm's commands to the
tensor's default schedule: the user's `dt.Tensor` gives its own (`tensor.schedule()`, a `dt.Schedule`, so
`build` returns one), a data-less shadow (`TensorBase`) a `ScheduleBase`. A user's tensor holding data in
another format on the same machine is moved by its own `redistribute`; both are method calls on the object
handed in (`UserTensor`), not imports of the api above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from distal.errors import DistalError, MachineError, NotationError
from distal.format.format import Format
from distal.machine.grid import Machine
from distal.notation.ast import Access, Assignment, IndexVar
from distal.notation.tensor_base import TensorBase
from distal.notation.variable import Bindings
from distal.notation.visit import product_factors
from distal.schedule.commands import ScheduleBase

from ._algorithms import ALGORITHMS, Algorithm

__all__ = ["UserTensor", "build_named", "default_schedule", "describe", "lookup", "machine_named", "names",
           "same_up_to_renaming"]


@runtime_checkable
class UserTensor(Protocol):
    """What the library calls on a user's tensor (`dt.Tensor`) it is given: its schedule, moving its data."""

    def schedule(self) -> ScheduleBase: ...

    def redistribute(self, format: Any, method: str = "search") -> Any: ...


def default_schedule(t: TensorBase) -> ScheduleBase:
    """The default schedule of `t`'s statement: the user's `dt.Schedule` for a user's tensor
    (`t.schedule()`), a `ScheduleBase` for a shadow."""
    if isinstance(t, UserTensor):
        return t.schedule()
    if t.assignment is None:
        raise NotationError(f"expected a statement computing {t.name} (e.g. {t.name}[i] = ...), but found none")
    return ScheduleBase.of(t.assignment, Bindings(t.operands))


def names() -> list[str]:
    """The algorithms of the library."""
    return list(ALGORITHMS)


def lookup(name: str) -> Algorithm:
    alg = ALGORITHMS.get(name.lower()) if isinstance(name, str) else None
    if alg is None:
        raise DistalError(f"expected an algorithm name ({', '.join(names())}, or 'auto'), but found {name!r}")
    return alg


def describe(name: str) -> str:
    """One line on the algorithm, its machine and its formats."""
    alg = lookup(name)
    formats = (" / ".join(f) if isinstance(f, tuple) else str(f) for f in alg.formats)  # one per level: a / b
    return f"{alg.name}: {alg.summary}; formats {', '.join(formats)}"


def machine_named(name: str, nprocs: int, shape: Sequence[int] | None = None, **params: Any) -> Machine:
    """The machine of the library algorithm `name` (not "auto") on `nprocs` processors: see
    `distal.kernels.machine`."""
    alg = lookup(name)
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise MachineError(f"expected a positive processor count, but found {nprocs!r}")
    return alg.machine(nprocs, shape, params)


def _place(t: TensorBase, fmt: Format) -> str | None:
    """Give `t` the algorithm's format; returns a note when data had to move."""
    if t.format == fmt:
        return None
    before = t.format
    if before is None:
        t.set_format(fmt)
        return f"{t.name} placed as {fmt}"
    if before.machine == fmt.machine and t.has_data and isinstance(t, UserTensor):
        program = t.redistribute(fmt)
        if program is None:
            return f"{t.name} takes {fmt} (no data yet)"
        steps = ", ".join(str(x) for x in program.steps) or "no collective"
        return (f"{t.name} redistributed from {before} to {fmt} by synthesized collectives [{steps}], "
                f"cost {program.cost}, height {program.height} (bound {program.bound}) elements per processor")
    if t.on_legate:
        # Another machine: the synthesizer needs one mesh, so the data is
        # gathered and placed again (a plain copy).
        assert t.storage is not None
        t.set_array(t.storage.to_numpy())
    t.set_format(fmt)
    return f"{t.name} moved from {before} on {before.machine!r} to {fmt} on {fmt.machine!r} by a plain copy"


def _algorithm_text(alg: Algorithm, operands: Sequence[TensorBase]) -> str:
    out, *ins = operands
    rhs = " * ".join(str(Access(t.var, ix)) for t, ix in zip(ins, alg.indices[1:]))
    return f"{Access(out.var, alg.indices[0])} = {rhs}"


def same_up_to_renaming(alg: Algorithm, operands: Sequence[TensorBase], stmt: Assignment) -> bool:
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


def _check_statement(alg: Algorithm, operands: Sequence[TensorBase]) -> bool:
    """Refuse an output whose statement is not the algorithm's; returns whether it is `+=`."""
    stmt = operands[0].assignment
    if stmt is None:
        return False
    if not same_up_to_renaming(alg, operands, stmt):
        raise NotationError(
            f"expected {operands[0].name}'s statement to be {alg.name}'s {_algorithm_text(alg, operands)} "
            f"(up to renaming index variables), but found {stmt.lhs} {stmt.op} {stmt.rhs}",
            stmt,
        )
    return stmt.accumulate


def _has_data(t: TensorBase) -> bool:
    return t.has_data


def _check_operands(alg: Algorithm, operands: Sequence[TensorBase]) -> None:
    """Operands against the algorithm's statement: extents by index variable, and roles.

    An index variable of the statement must have one extent over every operand
    it indexes. An output holding data while an input has neither data nor a
    statement computing it, or an input whose statement reads the output, means
    the operands are not in the order output first: refused, naming the operand.
    """
    extent: dict[IndexVar, tuple[int, TensorBase]] = {}
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


def build_named(name: str, machine: Machine, *operands: TensorBase, **params: Any) -> ScheduleBase:
    """The schedule of the library algorithm `name` (not "auto") over `operands`: see `distal.kernels.build`."""
    alg = lookup(name)
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
        if not isinstance(t, TensorBase):
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
    sched = alg.schedule(default_schedule(operands[0]), machine, tuple(operands), params)
    return sched.with_notes(*notes)
