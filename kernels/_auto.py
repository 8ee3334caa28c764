"""`build("auto", ...)`: choose algorithm, grid and chunk sizes by predicted time.

Every library algorithm whose statement fits the operands is compiled (on
shadow tensors with the same shapes and no data) for a few variants: the
library's machine for the processor count (over-decomposed where the
algorithm needs it, so no processor is idle), the given machine when it has
the right dimensionality (hierarchical machines for the 2-D algorithms), and
chunk sizes for SUMMA and step counts for COSMA. Each plan is timed by
`distal.model.predict` on a machine model (`model=`; default: this machine,
calibrated, for CPU machines, and the Lassen GPU node for GPU machines) with
the given machine's processor count, nodes being its inner grid on a
hierarchical machine. The fastest plan whose peak memory fits the bound
(`memory=` bytes per processor, else the model's processor memory) wins; a
plan that leaves processors idle wins only if it is predicted faster than
every plan that uses them all. The winner is built on the real operands, and
its notes (shown by explain()) list every candidate with its predicted time,
bytes and peak memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from distal._text import seconds_text as _fmt
from distal.errors import DistalError, MachineError
from distal.machine.grid import Grid, Machine, processor_kind
from distal.notation.tensor import Tensor
from distal.schedule import Schedule

from ._algorithms import ALGORITHMS, Algorithm

__all__ = ["Candidate", "build_auto", "candidates", "default_model", "machine_auto"]


@dataclass(frozen=True)
class Candidate:
    """One variant considered, with its plan's numbers."""

    algorithm: str
    machine: Machine
    params: tuple[tuple[str, Any], ...]
    seconds: float  # predicted time
    comm_bytes: int  # most bytes received + reduced by one processor
    peak_bytes: int  # most memory held by one real processor
    fits: bool
    idle: int  # real processors that run nothing

    def describe(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.params)
        fit = "" if self.fits else " (over the memory bound)"
        idle = f", {self.idle} processor(s) idle" if self.idle else ""
        return (f"{self.algorithm} on {self.machine!r}{extra}: predicted {_fmt(self.seconds)}, comm "
                f"{self.comm_bytes} B/proc, peak {self.peak_bytes} B/proc{idle}{fit}")




def _fits(alg: Algorithm, operands: tuple[Tensor, ...]) -> bool:
    return alg.arity == len(operands) and all(t.order == len(ix) for t, ix in zip(operands, alg.indices))


def default_model(machine: Machine) -> Any:
    """The model auto times plans with when none is given: this machine for CPUs, a Lassen node for GPUs."""
    from distal import model

    if processor_kind(machine.kind).device_arrays:
        return model.lassen_gpu()
    return model.this_machine()


def _variants(
    alg: Algorithm, p: int, shape: tuple[int, ...] | None, given: Machine
) -> list[tuple[Machine, dict[str, Any]]]:
    machines = [alg.machine(p, shape, {})]
    if given.levels > 1:
        if alg.hierarchical and given.levels == 2 and all(g.ndim == 2 for g in given.grids):
            machines.append(given)
    elif given.ndim == machines[0].ndim and given not in machines:
        machines.append(given)
    out: list[tuple[Machine, dict[str, Any]]] = []
    for m in machines:
        if alg.name == "summa" and shape is not None:
            base = max(1, math.ceil(shape[2] / max(m.shape)))
            for chunk in sorted({base, max(1, base // 2), max(1, base // 4)}, reverse=True):
                out.append((m, {"chunk": chunk}))
        elif alg.name == "cosma":
            for steps in (1, 2, 4):
                out.append((m, {"steps": steps}))
        else:
            out.append((m, {}))
    return out


def candidates(machine: Machine, *operands: Tensor, memory: int | None = None, model: Any = None) -> list[Candidate]:
    """Every variant auto considers, each timed by the model on `machine.size` processors."""
    from distal.model import MachineModel

    from . import build

    ops = tuple(operands)
    fitting = [a for a in ALGORITHMS.values() if _fits(a, ops)]
    if not fitting:
        orders = ", ".join(str(t.order) for t in ops)
        raise DistalError(f"expected operands matching a library algorithm, but found orders ({orders})")
    mm = model if model is not None else default_model(machine)
    if not isinstance(mm, MachineModel):
        raise DistalError(f"expected a distal.model.MachineModel as model=, but found {mm!r}")
    if machine.levels > 1:
        mm = mm.with_(per_node=machine.grids[-1].size)  # a node is the inner grid
    bound = memory if memory is not None else mm.processor.memory
    shape: tuple[int, ...] | None = None
    if fitting[0].matmul:
        m_, n_ = ops[0].concrete_shape()
        shape = (m_, n_, ops[1].concrete_shape()[1])
    p = machine.size
    out = []
    for alg in fitting:
        for m, params in _variants(alg, p, shape, machine):
            shadows = [Tensor(t.name, t.shape, dtype=t.dtype) for t in ops]
            plan = build(alg.name, m, *shadows, **params).compile()
            pred = plan.predict(mm, p)
            comm = max((r["intra_bytes"] + r["inter_bytes"] + r["reduced_bytes"] for r in pred.per_processor),
                       default=0)
            out.append(Candidate(alg.name, m, tuple(sorted(params.items())), pred.seconds, int(comm),
                                 pred.peak_bytes, pred.peak_bytes <= bound, pred.idle))
    return out


def _best(cands: list[Candidate]) -> Candidate:
    ok = [c for c in cands if c.fits] or cands
    return min(ok, key=lambda c: (c.seconds, c.idle, c.peak_bytes))


def build_auto(machine: Machine, *operands: Tensor, memory: int | None = None, model: Any = None,
               **params: Any) -> Schedule:
    """The library schedule predicted fastest for the operands on `machine.size` processors.

    Where the output's statement is none of the library's algorithms (or the operands fit none), the
    schedule `Schedule.auto` chooses for that statement (`distal.kernels.search`).
    """
    from . import _same_up_to_renaming, build
    from ._search import auto_schedule

    if not isinstance(machine, Machine):
        raise DistalError(f"expected a Machine for auto, but found {machine!r}")
    ops = tuple(operands)
    stmt = ops[0].assignment if ops and isinstance(ops[0], Tensor) else None
    library = [a for a in ALGORITHMS.values() if _fits(a, ops)]
    if stmt is not None and not any(_same_up_to_renaming(a, ops, stmt) for a in library):
        return auto_schedule(ops[0].schedule(), machine, memory=memory, model=model)
    if not library:
        orders = ", ".join(str(t.order) for t in ops if isinstance(t, Tensor))
        out = ops[0].name if ops and isinstance(ops[0], Tensor) else "R"
        raise DistalError(
            f"expected operands matching a library algorithm ({', '.join(ALGORITHMS)}), but found orders "
            f"({orders}); for any other statement, write it first (e.g. {out}[i, j] = ...) and call "
            f"build('auto', machine, {out}, ...) or {out}.schedule().auto(machine), or use dt.einsum")
    cands = candidates(machine, *operands, memory=memory, model=model)
    ok = [c for c in cands if c.fits] or cands
    best = _best(cands)
    why = "least predicted time" if len(ok) > 1 else "the only candidate"
    if not any(c.fits for c in cands):
        why += "; no candidate fits the memory bound"
    notes = [f"auto: chose {best.describe()} ({why})"]
    notes += [f"auto: considered {c.describe()}" for c in sorted(cands, key=lambda c: c.seconds)]
    extra = dict(params)
    if memory is not None and best.algorithm == "cosma":
        extra["memory"] = memory
    sched = build(best.algorithm, best.machine, *operands, **dict(best.params), **extra)
    return sched.with_notes(*notes)


def machine_auto(p: int, shape: Any = None, memory: int | None = None, model: Any = None,
                 kind: str = "cpu") -> Machine:
    """The machine `build("auto", ...)` chooses on p processors for a matmul of `shape` (m, n, k)."""
    if shape is None or len(shape) != 3:
        raise MachineError(f"expected shape=(m, n, k) of a matrix product for machine('auto', ...), "
                           f"but found {shape!r}")
    m_, n_, k_ = (int(x) for x in shape)
    ops = (Tensor("A", (m_, n_)), Tensor("B", (m_, k_)), Tensor("C", (k_, n_)))
    cands = candidates(Machine(Grid(p, kind=kind)), *ops, memory=memory, model=model)
    return _best(cands).machine
