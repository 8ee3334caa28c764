"""The auto search: a schedule for any statement, chosen by distal's time model (`Schedule.auto`, `dt.einsum`).

Candidates, each compiled on shadow tensors (same names, shapes, dtypes and
formats, no data) and timed as `Plan.predict()` and explain() time the plan
(`distal.model.explain.predicted`): on this machine's model on the processors
the run will have (Legate's configured processors, `timing_processors`), on a
model of another machine on `machine.size` processors:

* one task on one processor (the statement's default schedule);
* the index variables distributed onto 1-, 2- and 3-D grids of the
  processors (every grid shape whose sides multiply to the processor count,
  a 1-D grid over-decomposed twice as fine), free variables and summed ones
  alike (a summed variable distributed is a reduction across processors,
  as COSMA and Johnson do), the variables with the largest extents first;
  tensors without a format get the one that puts each tile where the
  launch point computing it runs (partitioned along distributed variables,
  replicated along the others, an output of a distributed sum held by the
  first processor of that dimension);
* on a machine of two levels (nodes, then each node's processors; with
  several Legate ranks the default machine is the ranks, then each rank's
  processors: `distal.machine.ranks.rank_machine`) instead of flat grids:
  variables over the nodes' grid and over each node's grid, an inner
  dimension taking a node's part of an outer variable or another variable,
  formats one distribution per level; a node being a rank, the time model
  prices what crosses between them at the link between ranks, so a plan
  keeping its traffic inside each rank wins where one process's model would
  tie it with plans that do not;
* a split of the largest summed variable into sequential steps whose tiles
  are fetched step by step (`communicate`), where the whole tiles would not
  fit the memory bound;
* the algorithm library's schedules where the statement is one of its
  algorithms' up to renaming: the library (`distal.kernels`, which imports
  this module, never the other way) hands itself in as a `Library`
  (`distal.kernels.options`, `auto_schedule` and `realise` do; this
  module's own functions without one consider the schedules above only);
* for `dt.einsum` (`eager=True`), running the statement eagerly in the
  calling process with NumPy, no Legate tasks: predicted as the one-task
  plan's leaf work without the runtime's fixed costs, plus reading back
  operands that live on Legate; the Legate candidates then pay for copying
  host operands onto Legate. `DISTAL_EAGER=0` in the environment leaves
  this candidate out (every einsum then runs on Legate).

The fastest candidate whose peak memory per processor fits the bound
(`memory=` bytes, else the model's processor memory) wins; a plan leaving
processors idle wins only when predicted faster than every plan using them
all. The winner is built on the real tensors: an ordinary Schedule (its
trace replays it) whose notes, shown by explain(), list every candidate with
its predicted time (its plan's `Plan.predict()`; for dt.einsum the copy of
host operands onto Legate, which the ranking adds, is given apart), bytes
moved (the most one processor of its plan receives and reduces, as the plan's
analysis counts them: `stats()`'s `received_bytes` plus `reduced_bytes`,
`moved_bytes`) and peak memory, and is of the class of the
schedule it was given (commands applied to it: a user's `dt.Schedule` stays
one). Shadows and candidates are `TensorBase` and `ScheduleBase` objects,
compiled by `distal.lower.compile_schedule` and timed by `distal.model.predict`.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import distal.model as time_model
import distal.runtime as rt
from distal._text import bytes_text as _bytes
from distal._text import seconds_text as _fmt
from distal.errors import DistalError, MachineError, ScheduleError, ShapeError
from distal.format.format import Format
from distal.host import config_flag, configured_processors
from distal.lower import compile_schedule
from distal.lower.executable import analysis_of
from distal.machine.grid import Grid, Machine, processor_kind
from distal.machine.ranks import rank_machine, run_processors, running_ranks
from distal.model.explain import predicted
from distal.notation.ast import Access, Assignment, Expr, IndexVar
from distal.notation.tensor_base import TensorBase
from distal.notation.variable import Bindings, TensorVar
from distal.notation.visit import ExprRewriter
from distal.schedule.commands import ScheduleBase
from distal.search.host_moves import (
    SPIN_SECONDS,
    copy_in_seconds,
    eager_prediction,
    eager_threads,
    shared_cores_seconds,
)

__all__ = ["Library", "Option", "auto_schedule", "default_machine", "default_model", "moved_bytes", "options",
           "realise", "resolve_machine", "timing_processors"]

S = TypeVar("S", bound=ScheduleBase)

_TOP_VARS = 4  # variables (largest extents) tried on grids of two and three dimensions
_STEPS = (2, 4, 8, 16, 32)  # sequential steps tried for a summed variable when tiles do not fit


@dataclass(frozen=True)
class Option:
    """One schedule auto considers, with its plan's predicted numbers, and how to build it."""

    kind: str  # "one task", "distributed", "library", "eager"
    what: str  # in words
    seconds: float  # the plan's predicted time (`Plan.predict()`'s and explain()'s, `distal.model.explain.predicted`)
    comm_bytes: int  # most bytes one processor receives and reduces, as the plan's analysis counts them
    peak_bytes: int  # most memory one processor holds
    fits: bool
    idle: int  # processors that run nothing
    vars: tuple[IndexVar, ...] = ()
    grid: tuple[int, ...] = ()
    split: tuple[IndexVar, int] | None = None  # a summed variable in this many sequential steps
    algorithm: str = ""
    order: tuple[int, ...] = ()  # the statement's inputs in the algorithm's operand order
    machine: Machine | None = None
    params: tuple[tuple[str, Any], ...] = ()
    copy_seconds: float = 0.0  # dt.einsum: copying host operands onto Legate and the result back
    # dt.einsum: running beside NumPy's BLAS workers, which spin after the user's NumPy call (host_moves)
    shared_seconds: float = 0.0
    # on a machine of two levels (nodes, with several Legate ranks the ranks; then their processors): the
    # variables over the inner level's dimensions, `vars` and `grid` being the outer level's; a variable of
    # `vars` here stands for its part inside one node (split further), another variable for itself
    inner: tuple[IndexVar, ...] = ()

    @property
    def total_seconds(self) -> float:
        """What auto ranks by: the plan's predicted time, the copy of host operands onto Legate and the cores
        shared with NumPy's spinning BLAS workers."""
        return self.seconds + self.copy_seconds + self.shared_seconds

    def describe(self) -> str:
        idle = f", {self.idle} processor(s) idle" if self.idle else ""
        fit = "" if self.fits else " (over the memory bound)"
        copy = (f" plus {_fmt(self.copy_seconds)} copying host operands onto Legate and the result back"
                if self.copy_seconds else "")
        if self.shared_seconds:
            copy += (f" plus {_fmt(self.shared_seconds)} sharing the cores with NumPy's BLAS threads (they spin "
                     f"{_fmt(SPIN_SECONDS)} after a NumPy call)")
        return (f"{self.what}: predicted {_fmt(self.seconds)}{copy}, moves {_bytes(self.comm_bytes)} per processor, "
                f"peak {_bytes(self.peak_bytes)} per processor{idle}{fit}")


_DEFAULT: dict[tuple[Any, ...], Machine] = {}  # default_machine's answer, by kind, Legate started, configuration


def default_machine(kind: str | None = None) -> Machine:
    """Every processor the running Legate has (GPUs where it has any, else CPUs): one grid of them, or with several
    Legate ranks the ranks and then each rank's processors (`distal.machine.ranks.rank_machine`:
    `Machine(Grid(ranks), Grid(per rank))`, the ranks being the machine's nodes); before Legate starts, the
    processors its configuration (LEGATE_CONFIG) asks for on the ranks the launcher started."""
    key = (kind, rt.is_started(), os.environ.get("LEGATE_CONFIG", ""), running_ranks())
    found = _DEFAULT.get(key)
    if found is None:
        found = _DEFAULT[key] = _default_machine(kind)
    return found


def _default_machine(kind: str | None) -> Machine:
    if rt.is_started():
        ranks = rt.rank_count()
        gpus = rt.processor_count("gpu") if kind in (None, "gpu") else 0
        kind_, total = ("gpu", gpus) if gpus else ("cpu", max(rt.processor_count("cpu"), 1))
        if ranks > 1 and total % ranks == 0:
            return rank_machine(ranks, total // ranks, kind_)
        return Machine(Grid(total, kind=kind_))
    ranks = running_ranks()
    flag = config_flag("--gpus")
    gpus = int(flag) if flag is not None and flag.isdigit() else 0
    if gpus and kind in (None, "gpu"):
        return rank_machine(ranks, gpus, "gpu")
    return rank_machine(ranks, configured_processors("cpu"))


def resolve_machine(machine: Machine | Grid | None) -> Machine:
    """The machine auto chooses over: `machine` (a Grid as a one-level Machine), or every processor (None)."""
    if machine is None:
        return default_machine()
    if isinstance(machine, Grid):
        machine = Machine(machine)
    if not isinstance(machine, Machine):
        raise MachineError(f"expected a Machine, a Grid or None (every processor) for auto, but found {machine!r}")
    if machine.params:
        raise MachineError(f"expected a machine of concrete sizes for auto, but found {machine!r} (bind its "
                           f"parameters first)")
    return machine


def default_model(machine: Machine) -> Any:
    """The model auto times plans with when none is given: this machine for CPUs, a Lassen node for GPUs."""
    if processor_kind(machine.kind).device_arrays:
        return time_model.lassen_gpu()
    return time_model.this_machine()


def timing_processors(machine: Machine, mm: Any) -> int:
    """The real processors auto times candidates on: on this machine's model the processors the run will have
    (Legate's configured processors of the machine's kind on every rank, `distal.machine.ranks.run_processors`),
    on a model of another machine the processors of `machine`."""
    if getattr(mm, "name", "") == "this-machine":
        return run_processors(machine.kind)
    return machine.size


def moved_bytes(plan: Any) -> int:
    """The most bytes one processor of `plan` receives and reduces, as its analysis counts them
    (`stats()`'s `received_bytes` plus `reduced_bytes`, `distal.lower.executable.analysis_of`)."""
    data = analysis_of(plan)
    return max((data.received.get(q, 0) + data.reduced.get(q, 0) for q in {*data.received, *data.reduced}),
               default=0)


def _predicted(sched: ScheduleBase, mm: Any, processors: int) -> tuple[Any, int]:
    """The prediction for `sched`'s plan on `processors` processors of model `mm` (the one `Plan.predict()` and
    explain() give, `distal.model.explain.predicted`), and the most bytes one of its processors moves."""
    plan = compile_schedule(sched)
    return predicted(plan, mm, processors), moved_bytes(plan)


class Library(Protocol):
    """Candidates from outside the search: the algorithm library (`distal.kernels`) hands itself in."""

    def options(self, schedule: ScheduleBase, machine: Machine, memory: int | None, model: Any) -> list[Option]:
        """Its candidates for `schedule`'s statement on `machine` (kind "library"), each with its prediction."""
        ...

    def realise(self, option: Option, schedule: S) -> S:
        """The schedule of one of its `options` built on the real tensors of `schedule`."""
        ...


# -- shadows: the statement over tensors without data --------------------------------------------------------


class _Rename(ExprRewriter):
    def __init__(self, vars_: dict[int, TensorVar]) -> None:
        self.vars = vars_

    def visit_access(self, e: Access) -> Expr:
        return Access(self.vars[e.tensor.uid], e.indices)


def _shadow(source: Assignment, formats: dict[int, Format]) -> ScheduleBase:
    """The default schedule of `source` over new tensors with the same names, shapes and dtypes (no data):
    each keeps its tensor's format, or takes the one in `formats` (by uid)."""
    tensors = {}
    for v in source.tensors():
        fmt = v.format if v.format is not None else formats.get(v.uid)
        tensors[v.uid] = TensorBase(v.name, v.shape, fmt, dtype=v.dtype, casting=v.casting)
    rename = _Rename({uid: t.var for uid, t in tensors.items()})
    stmt = Assignment(rename(source.lhs), rename(source.rhs), source.accumulate)  # type: ignore[arg-type]
    return ScheduleBase.of(stmt, Bindings(tensors.values()))


def _extents(source: Assignment) -> dict[IndexVar, int]:
    out: dict[IndexVar, int] = {}
    for acc in (source.lhs, *source.rhs.accesses()):
        shape = acc.tensor.concrete_shape()
        for v, n in zip(acc.indices, shape):
            out.setdefault(v, n)
    return out


def _names(source: Assignment) -> set[str]:
    return {v.name for v in source.index_vars()}


def _fresh(v: IndexVar, suffix: str, used: set[str]) -> IndexVar:
    name = f"{v.name}{suffix}"
    n = 2
    while name in used:
        name, n = f"{v.name}{suffix}{n}", n + 1
    used.add(name)
    return IndexVar(name)


def _formats(source: Assignment, vars_: Sequence[IndexVar], machine: Machine,
             split: IndexVar | None = None, inner: Sequence[IndexVar] = ()) -> dict[int, Format]:
    """A format per tensor without one: each tile where the launch point computing it runs. With a summed
    variable `split` fetched in steps, a tensor that no distributed variable cuts is cut along `split`
    instead on the first machine dimension (each processor holds a share; the steps fetch the rest). On a
    machine of two levels, `inner` are the variables over the inner level (`Option.inner`): one distribution
    per level."""
    out: dict[int, Format] = {}
    seen: set[int] = set()
    for acc in (source.lhs, *source.rhs.accesses()):
        t = acc.tensor
        if t.uid in seen or t.format is not None or t.order == 0:
            seen.add(t.uid)
            continue
        seen.add(t.uid)
        names = "abcdefghijklmnopqrstuvwxyz"[:t.order]
        dims = _level_dims(source, acc, vars_, names)
        if split is not None and all(d == "*" for d in dims) and split in acc.indices:
            dims[0] = names[acc.indices.index(split)]
        if machine.levels == 1:
            out[t.uid] = Format(f"{names} -> {''.join(dims)}", machine)
        else:
            levels = [f"{names} -> {''.join(dims)}", f"{names} -> {''.join(_level_dims(source, acc, inner, names))}"]
            out[t.uid] = Format(levels, machine)
    return out


def _level_dims(source: Assignment, acc: Access, vars_: Sequence[IndexVar], names: str) -> list[str]:
    """One machine level's distribution of `acc`'s tensor: per dimension of the level, the tensor dimension its
    variable indexes, `0` for the output of a sum distributed there (the dimension's first processor holds it),
    else `*` (replicated)."""
    dims = []
    for v in vars_:
        at = next((d for d, x in enumerate(acc.indices) if x == v), None)
        if at is not None:
            dims.append(names[at])
        elif acc is source.lhs and v in source.reduction_vars:
            dims.append("0")
        else:
            dims.append("*")
    return dims


def _distributed(sched: S, vars_: Sequence[IndexVar], grid: Grid, split: tuple[IndexVar, int] | None,
                 machine: Machine | None = None, inner: Sequence[IndexVar] = ()) -> S:
    """`sched` with `vars_` distributed over `grid` (compound form), a summed variable split into steps. On a
    two-level `machine`, `vars_` go over its outer level and `inner` over its inner one (a variable of `vars_`
    there: its part inside a node)."""
    used = _names(sched.source)
    outer = [_fresh(v, "o", used) for v in vars_]
    within = [_fresh(v, "i", used) for v in vars_]
    if machine is not None and machine.levels == 2:
        out = sched.distribute(list(vars_), outer, within, machine)
        targets = [within[vars_.index(v)] if v in vars_ else v for v in inner]
        return out.distribute(targets, [_fresh(v, "o", used) for v in targets],
                              [_fresh(v, "i", used) for v in targets], machine, level=1)
    out = sched.distribute(list(vars_), outer, within, Machine(grid))
    if split is not None:
        k, steps = split
        extent = _extents(sched.source)[k]
        ko, ki = _fresh(k, "o", used), _fresh(k, "i", used)
        out = out.split(k, ko, ki, math.ceil(extent / steps))
        loops = [v for v in out.loop_vars() if v not in outer]
        out = out.reorder([ko, *[v for v in loops if v != ko]])
        inputs = [t for t in out.source.rhs.accesses() if k in t.indices]
        names = list(dict.fromkeys(a.tensor.uid for a in inputs))
        tensors = [next(a.tensor for a in inputs if a.tensor.uid == u) for u in names]
        out = out.communicate(tensors, ko)
    return out


def _grids(p: int, kind: str) -> list[tuple[int, ...]]:
    """Grid shapes over p processors: 1-D (and twice over-decomposed), 2-D and 3-D with every side >= 2."""
    out: list[tuple[int, ...]] = [(p,)] if p > 1 else []
    if p > 1:
        out.append((2 * p,))
    for a in range(2, p):
        if p % a == 0 and p // a >= 2:
            out.append((a, p // a))
    for a in range(2, p):
        for b in range(2, p):
            if p % (a * b) == 0 and p // (a * b) >= 2:
                out.append((a, b, p // (a * b)))
    return out


def _assignments(extents: dict[IndexVar, int], grid: tuple[int, ...]) -> list[tuple[IndexVar, ...]]:
    """Variables to put on the grid's dimensions: distinct, each cut into as many non-empty blocks as its
    dimension has processors (blocks of ceil(n / g): 9 on 8 would leave three processors without one)."""
    ranked = sorted(extents, key=lambda v: -extents[v])
    pool = ranked if len(grid) == 1 else ranked[:_TOP_VARS]
    return [vs for vs in itertools.permutations(pool, len(grid))
            if all(math.ceil(extents[v] / math.ceil(extents[v] / g)) == g for v, g in zip(vs, grid))]


def _inner_assignments(extents: dict[IndexVar, int], outer: Sequence[IndexVar], grid: Sequence[int],
                       outer_grid: Sequence[int]) -> list[tuple[IndexVar, ...]]:
    """Variables for the inner level's dimensions under `outer` on the outer level's: distinct, each a variable
    of `outer` (its part inside one node: ceil(n / g) elements, fewer in the last node) or another one, each cut
    into as many non-empty blocks as its dimension has processors in every node."""
    part = {v: math.ceil(extents[v] / g) for v, g in zip(outer, outer_grid)}
    last = {v: extents[v] - (g - 1) * part[v] for v, g in zip(outer, outer_grid)}  # the last node's share
    ranked = [*outer, *(v for v in sorted(extents, key=lambda v: -extents[v]) if v not in part)]
    pool = ranked[:len(outer) + _TOP_VARS]
    size = {v: part.get(v, extents[v]) for v in pool}

    def cut(v: IndexVar, g: int) -> bool:
        block = math.ceil(size[v] / g)  # the inner level's blocks, the same in every node
        return math.ceil(size[v] / block) == g and math.ceil(last.get(v, size[v]) / block) == g

    return [vs for vs in itertools.permutations(pool, len(grid)) if all(g == 1 or cut(v, g) for v, g in zip(vs, grid))]


def _level_text(vs: Sequence[IndexVar], inner: Sequence[IndexVar], m: Machine) -> str:
    """A two-level candidate in words: 'b over the nodes Grid(2), i inside each node over Grid(2)'."""
    within = ", ".join(f"{v}'s part" if v in vs else str(v) for v in inner)
    return (f"{', '.join(map(str, vs))} distributed over the nodes {m.grids[0]!r}, {within} over each node's "
            f"{m.grids[1]!r}")


def options(schedule: ScheduleBase, machine: Machine | Grid | None = None, *, memory: int | None = None,
            model: Any = None, eager: bool = False, formats: bool = True, library: Library | None = None
            ) -> list[Option]:
    """Every schedule `auto` considers for `schedule`'s statement on `machine`, each with its prediction
    (`library`'s candidates included). Without `formats`, tensors without a format keep none (one store
    each, tiles read from it)."""
    m = resolve_machine(machine)
    mm = model if model is not None else default_model(m)
    if not isinstance(mm, time_model.MachineModel):
        raise DistalError(f"expected a distal.model.MachineModel as model=, but found {mm!r}")
    p = m.size
    bound = memory if memory is not None else mm.processor.memory
    source = schedule.source
    extents = {v: n for v, n in _extents(source).items() if n >= 2}
    copy_in = copy_in_seconds(schedule, mm) if eager else 0.0

    def shared(seconds: float) -> float:
        return shared_cores_seconds(seconds) if eager else 0.0

    real = timing_processors(m, mm)

    def timed(sched: ScheduleBase, kind_: str, what: str, **fields: Any) -> Option:
        with warnings.catch_warnings():  # a candidate's traps and fallbacks are its predicted time, not warnings
            warnings.simplefilter("ignore", UserWarning)
            pred, comm = _predicted(sched, mm, real)
        return Option(kind_, what, pred.seconds, comm, pred.peak_bytes, pred.peak_bytes <= bound,
                      pred.idle, copy_seconds=copy_in, shared_seconds=shared(pred.seconds), **fields)

    one = timed(_shadow(source, {}), "one task", "one task on one processor")
    found = [one]
    if eager and os.environ.get("DISTAL_EAGER", "1") != "0":
        seconds, peak, beside = eager_prediction(schedule, _shadow(source, {}), mm)
        found.append(Option("eager", "eagerly in this process with NumPy (no Legate tasks)", seconds, 0, peak,
                            peak <= bound, max(p - eager_threads(), 0),  # its GEMMs use these threads
                            shared_seconds=beside))
    if m.levels == 2:  # the machine's nodes (with several Legate ranks, the ranks), then each node's processors
        outer_shape, inner_shape = m.grids[0].dims, m.grids[1].dims
        for vs in _assignments(extents, outer_shape):
            for inner in _inner_assignments(extents, vs, inner_shape, outer_shape):
                try:
                    given = _formats(source, vs, m, None, inner) if formats else {}
                    sched = _distributed(_shadow(source, given), vs, m.grids[0], None, m, inner)
                    found.append(timed(sched, "distributed", _level_text(vs, inner, m), vars=vs,
                                       grid=outer_shape, inner=inner))
                except (ScheduleError, ShapeError):
                    continue
    for shape in _grids(p, m.kind) if m.levels != 2 else ():
        grid = Grid(*shape, kind=m.kind)
        for vs in _assignments(extents, shape):
            gm = Machine(grid)
            what = f"{', '.join(map(str, vs))} distributed over {grid!r}"
            try:
                sched = _distributed(_shadow(source, _formats(source, vs, gm) if formats else {}), vs, grid, None)
                found.append(timed(sched, "distributed", what, vars=vs, grid=shape))
            except (ScheduleError, ShapeError):
                continue
    if not any(o.fits for o in found):  # tiles too large: fetch them in steps of a summed variable
        summed = [v for v in source.reduction_vars if extents.get(v, 0) >= 2]
        best = sorted((o for o in found if o.kind == "distributed"), key=lambda o: o.peak_bytes)[:3]
        for o in best:
            for k in summed[:1] if summed else []:
                if k in o.vars:
                    continue
                for steps in _STEPS:
                    if steps > extents[k]:
                        break
                    grid = Grid(*o.grid, kind=m.kind)
                    what = f"{o.what}, {k} in {steps} steps"
                    try:
                        given = _formats(source, o.vars, Machine(grid), k) if formats else {}
                        sched = _distributed(_shadow(source, given), o.vars, grid, (k, steps))
                        found.append(timed(sched, "distributed", what, vars=o.vars, grid=o.grid,
                                           split=(k, steps)))
                    except (ScheduleError, ShapeError):
                        continue
    for o in library.options(schedule, m, memory, mm) if library is not None else ():
        found.append(replace(o, copy_seconds=copy_in, shared_seconds=shared(o.seconds)))
    return found


def _best(found: list[Option]) -> Option:
    """The fastest option that fits (any, when none fits); on a tie, the one leaving fewer processors idle."""
    ok = [o for o in found if o.fits] or found
    return min(ok, key=lambda o: (o.total_seconds, o.idle, o.peak_bytes))


def auto_schedule(schedule: S, machine: Machine | Grid | None = None, *, memory: int | None = None,
                  model: Any = None, eager: bool = False, formats: bool = True, library: Library | None = None) -> S:
    """The schedule of `schedule`'s statement predicted fastest on `machine` (see the module docstring).

    `schedule` must be the statement's default schedule (auto chooses every command). With `eager`
    (dt.einsum), running the statement eagerly in the calling process is a candidate too; without
    `formats` (dt.einsum), tensors without a format are left without one.
    """
    if schedule.trace:
        commands = ", ".join(c.name for c in schedule.trace)
        raise ScheduleError(
            f"auto: expected the statement's default schedule ({schedule.source.lhs.tensor.name}.schedule()), but "
            f"found one with commands ({commands}); auto chooses every command: call it on the default schedule",
            str(schedule.source))
    try:
        for v in schedule.tensors():
            v.concrete_shape()
    except ShapeError as exc:
        raise ScheduleError(f"auto: expected tensors of concrete shapes, but {exc.message}",
                            str(schedule.source)) from None
    m = resolve_machine(machine)
    mm = model if model is not None else default_model(m)
    found = options(schedule, m, memory=memory, model=mm, eager=eager, formats=formats, library=library)
    best = _best(found)
    ok = [o for o in found if o.fits]
    why = "least predicted time" if len(ok) > 1 else "the only candidate that fits" if ok else \
        "least predicted time; no candidate fits the memory bound"
    real = timing_processors(m, mm)
    if best.idle and best.kind != "eager":
        why += f"; {best.idle} of {real} processors idle: the work is too small to pay for spreading it"
    where = f"on {m.size} {m.kind} processor(s)"
    if real != m.size:
        where = f"on {m!r}'s {m.size} {m.kind} processor(s), timed on the {real} Legate is configured with"
    notes = [f"auto: chose {best.describe()} ({why}), {where}"]
    ranked = sorted(found, key=lambda o: o.total_seconds)
    notes += [f"auto: considered {o.describe()}" for o in ranked[:24]]
    if len(ranked) > 24:
        notes.append(f"auto: and {len(ranked) - 24} more candidates, slower")
    return realise(best, schedule, m, formats=formats, library=library).with_notes(*notes)


def realise(best: Option, schedule: S, machine: Machine | Grid | None = None, *, formats: bool = True,
            library: Library | None = None) -> S:
    """The schedule of `options(...)`'s `best` built on the real tensors of `schedule` (the statement's
    default schedule; the result is of its class), tensors without a format given the option's (with
    `formats`); a library option is built by `library`."""
    machine = resolve_machine(machine)
    source = schedule.source
    if best.kind == "library":
        if library is None:
            raise DistalError(f"expected the algorithm library to build {best.what} (distal.kernels.realise), "
                              f"but found none given")
        return library.realise(best, schedule)
    base = type(schedule).of(source, schedule.bindings)
    if best.kind == "eager":
        return replace(base, eager=f"auto predicted {_fmt(best.seconds)} in this process, faster than any plan "
                                   f"of Legate tasks")
    if best.kind == "one task":
        return base
    grid = Grid(*best.grid, kind=machine.kind)
    split = best.split[0] if best.split is not None else None
    on = machine if best.inner else Machine(grid)
    for uid, fmt in (_formats(base.source, best.vars, on, split, best.inner) if formats else {}).items():
        t = schedule.bindings[uid]
        if t.format is None:
            t.set_format(fmt)
    return _distributed(type(schedule).of(source, schedule.bindings), best.vars, grid, best.split,
                        machine if best.inner else None, best.inner)
