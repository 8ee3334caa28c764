"""Lowering: scheduled concrete index notation to a task graph of Legate launches (plain data).

`lower(schedule, bindings)` (what `compile_schedule`, and so `Schedule.compile()`, calls) is a list of
passes, each in its own module; with `DISTAL_DEBUG=1` the IR after each pass
is logged to stderr (logger `distal.lower`):

1. bind      -- integer extents of every index variable, tensor shapes, machines (`dt.Param` bound)
2. nest      -- launch dimensions, sequential steps, machine (`distal.lower.nest`)
3. tiling    -- bounds analysis per launch point, tilings, projections, privileges
                (`distal.lower.bounds`, `distal.lower.tiling`)
4. task body -- the body run by every task (`distal.lower.task_body`), with how each
                parallel loop runs in it (`distal.lower.parallel`)
5. reduction -- how a distributed reduction into the output runs: Legate's
                reduction, or a synthesized program of collectives on a
                hierarchical machine (`distal.lower.reductions`)

>>> import distal as dt
>>> i, j, k = dt.index_vars("i j k")
>>> A, B, C = (dt.Tensor(n, (4, 4)) for n in "ABC")
>>> A[i, j] = B[i, k] * C[k, j]
>>> plan = A.schedule().compile()
>>> plan.launch_count()
1
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from distal import tile_blas
from distal.cin.relations import Communicate, Substitute
from distal.errors import DistalError
from distal.lower.bounds import Bounds, accesses
from distal.lower.describe import describe
from distal.lower.lints import plan_lints, warn
from distal.lower.nest import Nest, find_nest, root_chain
from distal.lower.parallel import plan_parallel, warn_fallbacks
from distal.lower.reductions import STRATEGIES, choose_reduction
from distal.lower.task_body import TaskBody
from distal.lower.task_graph import Group, Launch, Operand, PlanBase, Privilege, Proj, Reduction, TensorInfo
from distal.lower.tiling import ROTATIONS, build_launches
from distal.sizes import resolve

if TYPE_CHECKING:
    from distal.notation.variable import TensorVar
    from distal.schedule.commands import ScheduleBase

__all__ = ["Group", "Launch", "Operand", "PlanBase", "Privilege", "Proj", "Reduction", "TensorInfo", "compile_schedule",
           "lower"]

log = logging.getLogger("distal.lower")


def _debug() -> bool:
    if os.environ.get("DISTAL_DEBUG", "") not in ("", "0"):
        if not log.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[distal.lower] %(message)s"))
            log.addHandler(handler)
        log.setLevel(logging.DEBUG)
        return True
    return False


def _log(name: str, ir: object) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("after %s:\n%s", name, ir)


def lower(sched: ScheduleBase, bindings: Mapping[str, int] | None = None, *, rotation: str | None = None,
          reduction: str | None = None, stacklevel: int = 2) -> PlanBase:
    """Lower a schedule to a `PlanBase` (the data of the user's `dt.Plan`); `bindings` bind `dt.Param` sizes.

    `rotation` chooses how launches whose projections are not affine (rotate)
    run: "boxes" (the default: launches over sub-domains where the offset is
    affine, each on its bound processor) or "points" (one pinned launch per
    point). Measured on Cannon (matmul.json in bench/results/history.json, "rotation"): equal
    within noise for large tiles, boxes up to 10% faster for small ones, and
    boxes issue fewer launches (at most 2g per step on a g x g grid instead
    of g*g). The environment variable DISTAL_ROTATION sets the default.

    `reduction` chooses how a distributed reduction into the output runs
    (`distal.lower.reductions`): "auto" (the default: on a hierarchical
    machine the simulated-best synthesized program of collectives, unless
    that is the single AllReduce; on a flat machine Legate's one
    reduction), "synthesized" (the synthesized program on any machine) or
    "legate". The environment variable DISTAL_REDUCTION sets the default.

    A parallel loop that cannot run as asked is a `DistalFallbackWarning`
    from the `stacklevel`-th caller of `lower` (1: its caller; by default its
    caller's caller, as when `compile_schedule` calls it).
    """
    _debug()
    binds: dict[str, Any] = dict(bindings or {})
    how = rotation or os.environ.get("DISTAL_ROTATION", "boxes")
    if how not in ROTATIONS:
        raise DistalError(f"expected a rotation strategy in {ROTATIONS}, but found {how!r}")
    reduce_how = reduction or os.environ.get("DISTAL_REDUCTION", "auto")
    if reduce_how not in STRATEGIES:
        raise DistalError(f"expected a reduction strategy in {STRATEGIES}, but found {reduce_how!r}")
    if any(r.leaf.tile_products for r in sched.relations_of(Substitute)):
        tile_blas.library()  # chosen (DISTAL_TILE_BLAS checked) before anything runs, not in a task
    _log("schedule", sched)

    # 1. bind
    ext = sched.provenance.extents(binds)
    symbolic = _symbolic(sched, ext)
    infos = tuple(
        TensorInfo(t.name, tuple(resolve(s, binds) for s in t.shape), np.dtype(t.dtype),
                   t == sched.output_var, t)
        for t in sched.source.tensors()
    )
    _log("bind", "\n".join(
        [", ".join(f"{v}={n}" for v, n in ext.items())]
        + [f"{v} = {e} = {n}" for v, e, n in symbolic]
        + [f"{i.name}{list(i.shape)} {i.dtype}{' (output)' if i.output else ''}" for i in infos]
    ))

    # 2. nest
    nest = find_nest(sched.stmt, sched.relations, ext, sched.tensors(), binds)
    _log("nest", nest)

    # 3. tiling
    bounds = Bounds.of(sched.stmt, sched.provenance, ext)
    accs = accesses(sched.stmt)
    launch_vars = nest.dist + nest.steps

    fixed_by = _communicated_at(sched, nest, infos)

    def box_of(point: tuple[int, ...]) -> tuple[Any, ...]:
        values = dict(zip(launch_vars, point))
        ivs = {n: bounds.intervals({v: values[v] for v in launch_vars[:n]}) for n in set(fixed_by)}
        return tuple(bounds.box(i.tensor, i.shape, accs, ivs[n]) for i, n in zip(infos, fixed_by))

    if any(i.size == 0 for i in infos):
        launches: list[Launch] = []
        origins: dict[tuple[int, ...], tuple[tuple[int, ...], ...]] = {}
        tile_notes = ["a tensor is empty: nothing to compute"]
    else:
        launches, origins, _, tile_notes = build_launches(
            infos, tuple(ext[v] for v in nest.dist), tuple(ext[v] for v in nest.steps), box_of, how
        )
    _log("tiling", "\n".join(_launch_text(infos, launch) for launch in launches) or "(no launches)")

    # 4. task body
    leaves = tuple((frozenset(r.vars), r.leaf) for r in sched.relations_of(Substitute))
    parallel = plan_parallel(sched.stmt, sched.relations, launch_vars,
                             nest.machine.kind if nest.machine is not None else "cpu")
    warn_fallbacks(parallel, stacklevel=stacklevel + 2)
    tile_notes = [*tile_notes, *(str(p) for p in parallel)]
    body = TaskBody(sched.stmt, sched.provenance, ext, launch_vars, tuple(i.tensor for i in infos),
                    tuple(i.shape for i in infos), leaves, origins,
                    name=f"distal_{sched.output_var.name}", parallel=parallel)
    _log("task_body", f"{body.name}: launch vars ({', '.join(map(str, launch_vars))}), "
                   f"leaves {[str(leaf) for _, leaf in leaves]}")

    group = Group(launch_vars, len(nest.dist), body, tuple(launches), tuple(tile_notes),
                  tuple(ext[v] for v in nest.dist))
    plan = PlanBase(str(sched), infos, (group,), not sched.source.accumulate, nest.machine,
                nest.slots, nest.notes, symbolic, source=sched.source,
                bindings=sched.bindings)

    # 5. reduction
    out_index = next(n for n, info in enumerate(infos) if info.output)
    strategy = choose_reduction(plan, reduce_how, fixed_by[out_index])
    if strategy is not None:
        plan = replace(plan, reduction=strategy)
        _log("reduction", f"{infos[strategy.tensor].name}: {strategy.summary()}"
                          + (f"\n{strategy.description}" if strategy.description else ""))
    if log.isEnabledFor(logging.DEBUG):
        _log("plan", describe(plan))
    return plan


def compile_schedule(sched: ScheduleBase, *, rotation: str | None = None, reduction: str | None = None,
                     **bindings: int) -> PlanBase:
    """`Schedule.compile()`'s work, on any schedule: the bindings checked, the schedule lowered with its
    tensors' current formats bound (`lower`), its performance traps (`distal.lower.lints`, a
    `DistalPerformanceWarning` each, from the caller of the caller: the user's `compile`), and the schedule's
    notes and eager choice carried into the plan."""
    sched.check_bindings(bindings)
    bound = sched.refreshed().formats_bound(bindings)
    plan = lower(bound, bindings, rotation=rotation, reduction=reduction, stacklevel=3)
    lints = plan_lints(bound, plan)
    if lints:  # performance traps: kept for explain(), and a DistalPerformanceWarning each
        plan = replace(plan, lints=lints)
        warn(lints, stacklevel=4)
    if sched.notes:
        # what happened before scheduling (operands placed or redistributed,
        # the auto choice) is part of what explain() reports
        plan = replace(plan, notes=(*sched.notes, *plan.notes))
    if sched.eager:
        plan = replace(plan, eager=sched.eager)
    return plan


def _communicated_at(sched: ScheduleBase, nest: Nest, infos: tuple[TensorInfo, ...]) -> tuple[int, ...]:
    """Per tensor, how many launch variables (distributed loops, then steps) fix its tile.

    A tensor's tile is the data it needs under one iteration of its own
    `communicate` loop (paper 3.3, 6.2): the distributed loops and the steps
    down to that loop are fixed, deeper steps range over their whole extent,
    so the tile is aggregated at that loop and launches of deeper steps share
    it. A tensor communicated inside the tasks, or not communicated, gets the
    tile of one launch (every launch variable fixed): the finest partition
    the launches give (see docs/reference.md, communicate).
    """
    chain = root_chain(sched.stmt)
    at: dict[TensorVar, int] = {}
    for r in sched.relations_of(Communicate):
        for t in r.tensors:
            if r.var not in chain:
                continue
            depth = chain.index(r.var)
            n = len(nest.dist) + sum(1 for s in nest.steps if chain.index(s) <= depth)
            at[t] = max(at.get(t, 0), n)
    full = len(nest.dist) + len(nest.steps)
    return tuple(at.get(i.tensor, full) for i in infos)


def _symbolic(sched: ScheduleBase, ext: Mapping[Any, int]) -> tuple[tuple[str, str, int], ...]:
    """The sympy extent of every loop variable that depends on a `dt.Param`, with its bound value."""
    out = []
    for v in sched.loop_vars():
        expr = sched.provenance.extent_expr(v)
        if getattr(expr, "free_symbols", None):
            out.append((str(v), str(expr), ext[v]))
    return tuple(out)


def _launch_text(infos: tuple[TensorInfo, ...], launch: Launch) -> str:
    parts = []
    for op in launch.operands:
        name = infos[op.tensor].name
        if op.tile is None:
            parts.append(f"{name}:{op.privilege.value} whole")
        else:
            proj = ", ".join(map(str, op.projection or ()))
            parts.append(f"{name}:{op.privilege.value} tile {op.tile} at ({proj})")
    pin = " pinned" if launch.pinned else ""
    return f"[{launch.lower}, {launch.upper}){pin}: " + "; ".join(parts)
