"""`build("auto", ...)`: choose algorithm, grid and chunk sizes by a cost model.

Every library algorithm whose statement fits the operands is compiled (on
shadow tensors with the same shapes and no data) for a few variants: the
library's machine for the processor count, the given machine when it has the
right dimensionality, and chunk sizes for SUMMA and step counts for COSMA.
Each plan's own accounting gives the cost: the most bytes any processor
receives or reduces, with peak memory per processor as a bound
(`memory=` bytes) and as the tie-break. The winner is built on the real
operands, and its notes (shown by explain()) list every candidate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from distal.errors import DistalError
from distal.format.machine import Machine
from distal.notation.tensor import Tensor
from distal.schedule import Schedule

from ._algorithms import ALGORITHMS, Algorithm

__all__ = ["Candidate", "build_auto", "candidates"]


@dataclass(frozen=True)
class Candidate:
    """One variant considered, with its plan's numbers."""

    algorithm: str
    machine: Machine
    params: tuple[tuple[str, Any], ...]
    comm_bytes: int  # most bytes received + reduced by one processor
    peak_bytes: int  # most memory held by one processor
    fits: bool

    def describe(self) -> str:
        extra = "".join(f", {k}={v}" for k, v in self.params)
        fit = "" if self.fits else " (over the memory bound)"
        return (f"{self.algorithm} on {self.machine!r}{extra}: comm {self.comm_bytes} B/proc, "
                f"peak {self.peak_bytes} B/proc{fit}")


def _fits(alg: Algorithm, operands: tuple[Tensor, ...]) -> bool:
    return alg.arity == len(operands) and all(t.order == len(ix) for t, ix in zip(operands, alg.indices))


def _variants(
    alg: Algorithm, p: int, shape: tuple[int, ...] | None, given: Machine
) -> list[tuple[Machine, dict[str, Any]]]:
    machines = [alg.machine(p, shape, {})]
    if given.ndim == machines[0].ndim and given not in machines:
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


def candidates(machine: Machine, *operands: Tensor, memory: int | None = None) -> list[Candidate]:
    """Every variant the cost model considers, scored by its compiled plan."""
    from . import build

    ops = tuple(operands)
    fitting = [a for a in ALGORITHMS.values() if _fits(a, ops)]
    if not fitting:
        orders = ", ".join(str(t.order) for t in ops)
        raise DistalError(f"expected operands matching a library algorithm, but found orders ({orders})")
    shape: tuple[int, ...] | None = None
    if fitting[0].matmul:
        m_, n_ = ops[0].concrete_shape()
        shape = (m_, n_, ops[1].concrete_shape()[1])
    out = []
    for alg in fitting:
        for m, params in _variants(alg, machine.size, shape, machine):
            shadows = [Tensor(t.name, t.shape, dtype=t.dtype) for t in ops]
            stats = build(alg.name, m, *shadows, **params).compile().stats()
            procs = set(stats["received_bytes"]) | set(stats["reduced_bytes"]) | set(stats["peak_bytes"])
            comm = max((stats["received_bytes"].get(q, 0) + stats["reduced_bytes"].get(q, 0) for q in procs),
                       default=0)
            peak = max(stats["peak_bytes"].values(), default=0)
            fits = memory is None or peak <= memory
            out.append(Candidate(alg.name, m, tuple(sorted(params.items())), int(comm), int(peak), fits))
    return out


def _best(cands: list[Candidate]) -> Candidate:
    ok = [c for c in cands if c.fits] or cands
    return min(ok, key=lambda c: (c.comm_bytes, c.peak_bytes))


def build_auto(machine: Machine, *operands: Tensor, memory: int | None = None, **params: Any) -> Schedule:
    """The cheapest library schedule for the operands on `machine.size` processors."""
    from . import build

    if not isinstance(machine, Machine):
        raise DistalError(f"expected a Machine for auto, but found {machine!r}")
    cands = candidates(machine, *operands, memory=memory)
    ok = [c for c in cands if c.fits] or cands
    best = _best(cands)
    why = ("least communication per processor" if len(ok) > 1 else "the only candidate")
    if not any(c.fits for c in cands):
        why += "; no candidate fits the memory bound"
    notes = [f"auto: chose {best.describe()} ({why})"]
    notes += [f"auto: considered {c.describe()}" for c in cands]
    sched = build(best.algorithm, best.machine, *operands, **dict(best.params), **params)
    return sched.with_notes(*notes)


def machine_auto(p: int, shape: Any = None, memory: int | None = None, **params: Any) -> Machine:
    """The machine `build("auto", ...)` chooses on p processors for a matmul of `shape` (m, n, k)."""
    from distal.errors import MachineError

    if shape is None or len(shape) != 3:
        raise MachineError(f"expected shape=(m, n, k) of a matrix product for machine('auto', ...), "
                           f"but found {shape!r}")
    m_, n_, k_ = (int(x) for x in shape)
    ops = (Tensor("A", (m_, n_)), Tensor("B", (m_, k_)), Tensor("C", (k_, n_)))
    cands = candidates(Machine(_flat(p)), *ops, memory=memory)
    return _best(cands).machine


def _flat(p: int) -> Any:
    from distal.format.machine import Grid

    return Grid(p)
