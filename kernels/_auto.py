"""`build("auto", ...)`: choose algorithm, grid and chunk sizes by predicted time.

Every library algorithm whose statement fits the operands is compiled (on
shadow tensors with the same shapes and no data) for a few variants: the
library's machine for the processor count (over-decomposed where the
algorithm needs it, so no processor is idle), the given machine when it has
the right dimensionality (hierarchical machines for the 2-D algorithms), and
chunk sizes for SUMMA and step counts for COSMA. Each plan is timed as
`Plan.predict()` and explain() time it (`distal.model.explain.predicted`) on a
machine model (`model=`; default: this machine, calibrated, for CPU machines,
and the Lassen GPU node for GPU machines): on this machine's model on the
processors the run will have (Legate's configured ones), on another model on
the given machine's processor count, nodes being a hierarchical plan
machine's inner grids. Its bytes ("comm N B/proc") are the most one processor
of the plan receives and reduces, as its analysis counts them. The fastest plan whose peak memory fits the bound
(`memory=` bytes per processor, else the model's processor memory) wins; a
plan that leaves processors idle wins only if it is predicted faster than
every plan that uses them all. The winner is built on the real operands, and
its notes (shown by explain()) list every candidate with its predicted time,
bytes and peak memory.

The library also hands itself to the auto search (`distal.search`, which it
imports; the search never imports the library) as a `Library` (`LIBRARY`):
`options`, `auto_schedule` and `realise` here are the search's, with the
library's candidates among the others.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import distal.model as time_model
import distal.search as search
from distal._text import seconds_text as _fmt
from distal.errors import DistalError, MachineError
from distal.lower import compile_schedule
from distal.machine.grid import Grid, Machine
from distal.model.explain import predicted
from distal.notation.ast import Access
from distal.notation.tensor_base import TensorBase
from distal.notation.visit import product_factors
from distal.schedule.commands import ScheduleBase
from distal.search import Option, default_model

from ._algorithms import ALGORITHMS, Algorithm
from ._library import build_named, default_schedule, same_up_to_renaming

__all__ = ["LIBRARY", "Candidate", "auto_schedule", "build_auto", "candidates", "machine_auto", "options", "realise"]

S = TypeVar("S", bound=ScheduleBase)


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




def _fits(alg: Algorithm, operands: tuple[TensorBase, ...]) -> bool:
    return alg.arity == len(operands) and all(t.order == len(ix) for t, ix in zip(operands, alg.indices))


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


def candidates(machine: Machine, *operands: TensorBase, memory: int | None = None,
               model: Any = None, processors: int | None = None) -> list[Candidate]:
    """Every variant auto considers, each timed by the model on `processors` real processors (default: on this
    machine's model the Legate processors configured, the run's; on another model `machine.size`), as
    `Plan.predict()` and explain() time its plan (`distal.model.explain.predicted`), with the bytes its plan's
    analysis counts (`distal.search.moved_bytes`)."""
    ops = tuple(operands)
    fitting = [a for a in ALGORITHMS.values() if _fits(a, ops)]
    if not fitting:
        orders = ", ".join(str(t.order) for t in ops)
        raise DistalError(f"expected operands matching a library algorithm, but found orders ({orders})")
    mm = model if model is not None else default_model(machine)
    if not isinstance(mm, time_model.MachineModel):
        raise DistalError(f"expected a distal.model.MachineModel as model=, but found {mm!r}")
    bound = memory if memory is not None else mm.processor.memory
    shape: tuple[int, ...] | None = None
    if fitting[0].matmul:
        m_, n_ = ops[0].concrete_shape()
        shape = (m_, n_, ops[1].concrete_shape()[1])
    p = machine.size
    real = processors if processors is not None else search.timing_processors(machine, mm)
    out = []
    for alg in fitting:
        for m, params in _variants(alg, p, shape, machine):
            shadows = [TensorBase(t.name, t.shape, dtype=t.dtype) for t in ops]
            plan = compile_schedule(build_named(alg.name, m, *shadows, **params))
            pred = predicted(plan, mm, real)  # a hierarchical machine's outer level is the model's nodes
            comm = search.moved_bytes(plan)
            out.append(Candidate(alg.name, m, tuple(sorted(params.items())), pred.seconds, comm,
                                 pred.peak_bytes, pred.peak_bytes <= bound, pred.idle))
    return out


def _best(cands: list[Candidate]) -> Candidate:
    ok = [c for c in cands if c.fits] or cands
    return min(ok, key=lambda c: (c.seconds, c.idle, c.peak_bytes))


def build_auto(machine: Machine, *operands: TensorBase, memory: int | None = None, model: Any = None,
               **params: Any) -> ScheduleBase:
    """The library schedule predicted fastest for the operands on `machine.size` processors.

    Where the output's statement is none of the library's algorithms (or the operands fit none), the
    schedule `Schedule.auto` chooses for that statement (`auto_schedule`).
    """
    if not isinstance(machine, Machine):
        raise DistalError(f"expected a Machine for auto, but found {machine!r}")
    ops = tuple(operands)
    stmt = ops[0].assignment if ops and isinstance(ops[0], TensorBase) else None
    library = [a for a in ALGORITHMS.values() if _fits(a, ops)]
    if stmt is not None and not any(same_up_to_renaming(a, ops, stmt) for a in library):
        return auto_schedule(default_schedule(ops[0]), machine, memory=memory, model=model)
    if not library:
        orders = ", ".join(str(t.order) for t in ops if isinstance(t, TensorBase))
        out = ops[0].name if ops and isinstance(ops[0], TensorBase) else "R"
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
    sched = build_named(best.algorithm, best.machine, *operands, **dict(best.params), **extra)
    return sched.with_notes(*notes)


def machine_auto(p: int, shape: Any = None, memory: int | None = None, model: Any = None,
                 kind: str = "cpu") -> Machine:
    """The machine `build("auto", ...)` chooses on p processors for a matmul of `shape` (m, n, k)."""
    if shape is None or len(shape) != 3:
        raise MachineError(f"expected shape=(m, n, k) of a matrix product for machine('auto', ...), "
                           f"but found {shape!r}")
    m_, n_, k_ = (int(x) for x in shape)
    ops = (TensorBase("A", (m_, n_)), TensorBase("B", (m_, k_)), TensorBase("C", (k_, n_)))
    cands = candidates(Machine(Grid(p, kind=kind)), *ops, memory=memory, model=model, processors=p)
    return _best(cands).machine


# -- the library in the auto search ------------------------------------------------------------------------


class _Library:
    """The algorithm library as the auto search's `Library`: its candidates, and building one of them."""

    def options(self, schedule: ScheduleBase, machine: Machine, memory: int | None, model: Any) -> list[Option]:
        """The library's candidates where the statement is one of its algorithms' (inputs in some order)."""
        source = schedule.source
        factors = product_factors(source.rhs)
        if not all(isinstance(f, Access) for f in factors) or len(factors) > 3 or machine.levels > 1:
            return []
        out: list[Option] = []
        outv = schedule.output
        inputs = [schedule.bindings.tensor(f.tensor) for f in factors if isinstance(f, Access)]
        if len({t.var.uid for t in inputs}) != len(inputs) or outv.var.uid in {t.var.uid for t in inputs}:
            return []
        for order in itertools.permutations(range(len(inputs))):
            ops = (outv, *(inputs[n] for n in order))
            names = [a.name for a in ALGORITHMS.values()
                     if a.arity == len(ops) and same_up_to_renaming(a, ops, source)]
            if not names:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    found = candidates(machine, *ops, memory=memory, model=model)
            except DistalError:
                continue
            for c in found:
                if c.algorithm in names:
                    extra = "".join(f", {k}={v}" for k, v in c.params)
                    out.append(Option("library", f"library {c.algorithm} on {c.machine!r}{extra}", c.seconds,
                                      c.comm_bytes, c.peak_bytes, c.fits, c.idle, algorithm=c.algorithm,
                                      order=tuple(order), machine=c.machine, params=c.params))
        return out

    def realise(self, option: Option, schedule: S) -> S:
        """The library option built on the real tensors of `schedule` (of its class: the output's own schedule)."""
        factors = [f for f in product_factors(schedule.source.rhs) if isinstance(f, Access)]
        inputs = [schedule.bindings.tensor(factors[n].tensor) for n in option.order]
        assert option.machine is not None
        built = build_named(option.algorithm, option.machine, schedule.output, *inputs, **dict(option.params))
        return cast(S, built)


#: The algorithm library as the auto search's `Library`
LIBRARY = _Library()


def options(schedule: ScheduleBase, machine: Machine | Grid | None = None, *, memory: int | None = None,
            model: Any = None, eager: bool = False, formats: bool = True) -> list[Option]:
    """Every schedule `auto` considers for `schedule`'s statement on `machine`, the library's algorithms
    included, each with its prediction (`distal.search.options`)."""
    return search.options(schedule, machine, memory=memory, model=model, eager=eager, formats=formats,
                          library=LIBRARY)


def auto_schedule(schedule: S, machine: Machine | Grid | None = None, *, memory: int | None = None,
                  model: Any = None, eager: bool = False, formats: bool = True) -> S:
    """The schedule of `schedule`'s statement predicted fastest on `machine`, the library's algorithms
    among the candidates (`distal.search.auto_schedule`); of the class of `schedule`."""
    return search.auto_schedule(schedule, machine, memory=memory, model=model, eager=eager, formats=formats,
                                library=LIBRARY)


def realise(best: Option, schedule: S, machine: Machine | Grid | None = None, *, formats: bool = True) -> S:
    """The schedule of `options(...)`'s `best` built on the real tensors of `schedule`
    (`distal.search.realise`, library options included)."""
    return search.realise(best, schedule, machine, formats=formats, library=LIBRARY)
